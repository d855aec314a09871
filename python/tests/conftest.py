"""Fixtures: one context per available backend. A backend that is not available is skipped with its reason, unless
GPUWS_REQUIRE names it (as for the C suites: CI requires cpu and opencl), which turns the skip into a failure."""

import os
import zlib

import numpy as np
import pytest

import gpuws

BACKENDS = ("cpu", "opencl", "cuda")


def _required():
    return {b.strip().lower() for b in os.environ.get("GPUWS_REQUIRE", "").split(",") if b.strip()}


def open_context(name):
    info = {b.name: b for b in gpuws.backends()}[name]
    if not info.available:
        if name in _required():
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
