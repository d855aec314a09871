"""Fixtures: one context per available backend. As for the C suites: a backend that is not available is skipped with
its reason, unless GPUWS_REQUIRE names it (CI requires cpu and opencl), which turns the skip into a failure;
GPUWS_TEST_BACKENDS (a comma list) leaves the others out."""

import os
import zlib

import numpy as np
import pytest

import gpuws

BACKENDS = ("cpu", "opencl", "cuda")


def _listed(variable):
    return {b.strip().lower() for b in os.environ.get(variable, "").split(",") if b.strip()}


def open_context(name):
    only = _listed("GPUWS_TEST_BACKENDS")
    if only and name not in only:
        if name in _listed("GPUWS_REQUIRE"):
            pytest.fail("%s is required but GPUWS_TEST_BACKENDS leaves it out" % name)
        pytest.skip("%s left out by GPUWS_TEST_BACKENDS" % name)
    info = {b.name: b for b in gpuws.backends()}[name]
    if not info.available:
        if name in _listed("GPUWS_REQUIRE"):
            pytest.fail("GPUWS_REQUIRE names %s but it is not available: %s" % (name, info.reason))
        pytest.skip("%s not available: %s" % (name, info.reason))
    return gpuws.Context(name)


@pytest.fixture(params=BACKENDS)
def ctx(request):
    c = open_context(request.param)
    yield c
    c.close()


@pytest.fixture
def rng(request):
    # a fixed seed per test, so a failure repeats
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
