"""Backends, devices, contexts and errors: the C API's rules seen from Python."""

import ctypes
import gc
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import gpuws
from gpuws import _lib
from conftest import open_context


def test_backends_lists_all_three_with_a_reason_when_unavailable():
    bs = gpuws.backends()
    assert [b.name for b in bs] == ["cpu", "opencl", "cuda"]
    cpu = bs[0]
    assert cpu.built_in and cpu.available and cpu.reason == ""
    for b in bs:
        assert b.available or b.reason, b


def test_devices_of_each_available_backend():
    devs = gpuws.devices()
    assert {d.backend for d in devs} == {b.name for b in gpuws.backends() if b.available}
    cpu = gpuws.devices("cpu")
    assert len(cpu) == 1 and cpu[0].index == 0 and cpu[0].compute_units >= 1


def test_context_honours_GPUWS_BACKEND_when_backend_is_None(monkeypatch):
    monkeypatch.setenv("GPUWS_BACKEND", "cpu")
    with gpuws.Context() as ctx:
        assert ctx.backend == "cpu"
    monkeypatch.setenv("GPUWS_BACKEND", "nonsense")
    with pytest.raises(gpuws.UnknownBackendError) as e:
        gpuws.Context()
    assert e.value.name == "GPUWS_ERR_UNKNOWN_BACKEND" and "cpu" in e.value.detail
    # an explicit backend wins over the environment
    with gpuws.Context("cpu") as ctx:
        assert ctx.backend == "cpu"


def test_context_honours_GPUWS_DEVICE_when_device_is_None(monkeypatch):
    monkeypatch.setenv("GPUWS_DEVICE", "7")
    with pytest.raises(gpuws.NoDeviceError) as e:
        gpuws.Context("cpu")
    assert e.value.status == -8 and "7" in e.value.detail
    with gpuws.Context("cpu", device=0) as ctx:  # an explicit index wins
        assert ctx.backend == "cpu"


def test_unknown_and_bad_arguments_raise_with_the_c_detail():
    with pytest.raises(gpuws.UnknownBackendError) as e:
        gpuws.Context("vulkan")
    assert "vulkan" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(gpuws.NoDeviceError):
        gpuws.Context("cpu", device=99)
    with pytest.raises(gpuws.InvalidArgumentError):
        gpuws.Context("cpu", device=-1)


def test_a_list_tries_backends_in_order():
    with gpuws.Context("cuda,cpu") as ctx:
        want = "cuda" if gpuws.backends()[2].available else "cpu"
        assert ctx.backend == want


def test_every_status_has_its_error_class():
    status = -1
    while True:
        name = _lib.lib.gpuws_status_name(status).decode()
        if name == "GPUWS_UNKNOWN_STATUS":
            break
        cls = gpuws._core.ERRORS[status]
        assert issubclass(cls, gpuws.Error)
        assert cls("x").name == name
        status -= 1
    assert len(gpuws._core.ERRORS) == -status - 1


def test_close_is_idempotent_and_everything_after_it_raises():
    ctx = gpuws.Context("cpu")
    a = ctx.asarray(np.arange(4, dtype=np.float32))
    s = ctx.stream()
    ctx.close()
    ctx.close()
    assert ctx.closed
    for f in (lambda: a.get(), lambda: ctx.empty(3), lambda: s.synchronize(), lambda: gpuws.vector_add(a, a),
              lambda: ctx.synchronize(), lambda: gpuws.convolve2d(a.reshape(2, 2), np.ones((1, 1), np.float32))):
        with pytest.raises(gpuws.InvalidArgumentError, match="closed"):
            f()
    assert "closed" in repr(a) and "closed" in repr(ctx)


def test_objects_released_by_python_are_destroyed_and_the_context_survives(ctx):
    for _ in range(50):
        ctx.asarray(np.ones(1000, np.float32))
        ctx.stream()
        ctx.event()
    assert len(ctx._owned) == 0
    assert ctx.asarray([1.0, 2.0]).get().tolist() == [1.0, 2.0]


def test_streams_and_events_order_and_time_work(ctx, rng):
    s = ctx.stream()
    x = rng.random(10000).astype(np.float32)
    a = ctx.empty(x.shape)
    a.set(x, stream=s)
    start, end = s.record(), ctx.event()
    b = gpuws.vector_add(a, a, stream=s)
    end.record(s)
    end.synchronize()
    assert start.elapsed_ms(end) >= 0
    np.testing.assert_array_equal(b.get(stream=s), x + x)
    s.synchronize()
    other = gpuws.Context("cpu")
    with pytest.raises(gpuws.WrongContextError):
        gpuws.vector_add(a, a, stream=other.stream())
    other.close()


STRUCTS = {  # ctypes mirror -> the C struct it mirrors
    _lib.BackendInfo: "gpuws_backend_info", _lib.DeviceInfo: "gpuws_device_info",
    _lib.ContextOptions: "gpuws_context_options", _lib.KernelInfo: "gpuws_kernel_info", _lib.Arg: "gpuws_arg",
    _lib.LaunchConfig: "gpuws_launch_config", _lib.ProgramHeader: "gpuws_program_header",
    _lib.ProgramOptions: "gpuws_program_options", _lib.Convolve2dOptions: "gpuws_convolve2d_options",
    _lib.SigmaClipOptions: "gpuws_sigma_clip_options", _lib.SigmaClipResult: "gpuws_sigma_clip_result",
    _lib.SourceMeasure: "gpuws_source_measure", _lib.SourcesOptions: "gpuws_sources_options",
    _lib.Source: "gpuws_source", _lib.Catalog: "gpuws_catalog", _lib.Operand: "gpuws_operand",
    _lib.PipelineOptions: "gpuws_pipeline_options", _lib.Convolve2dHostOptions: "gpuws_convolve2d_host_options",
    _lib.LabelHostOptions: "gpuws_label_host_options", _lib.Convolve1dHostOptions: "gpuws_convolve1d_host_options",
}


def test_ctypes_structs_have_the_headers_layout(tmp_path):
    """Every field's offset and every struct's size as the C compiler lays out include/gpuws (the ABI)."""
    include = os.path.join(os.path.dirname(__file__), "..", "..", "include")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not os.path.isdir(include):
        pytest.skip("needs a C compiler and the repository's include/")
    lines = ["#include <gpuws.h>", "#include <gpuws/algorithms.h>", "#include <stddef.h>", "#include <stdio.h>",
             "int main(void) {"]
    want = []
    for py, c in STRUCTS.items():
        lines.append('printf("%%zu\\n", sizeof(%s));' % c)
        want.append(ctypes.sizeof(py))
        for f in py._fields_:
            lines.append('printf("%%zu\\n", offsetof(%s, %s));' % (c, f[0]))
            want.append(getattr(py, f[0]).offset)
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    subprocess.run([cc, "-I", include, str(src), "-o", str(tmp_path / "layout")], check=True)
    got = [int(x) for x in subprocess.run([str(tmp_path / "layout")], check=True, capture_output=True,
                                          text=True).stdout.split()]
    assert got == want


def test_every_c_function_the_package_calls_has_its_prototype_declared():
    """An undeclared ctypes function takes ints as C ints: a 64-bit handle would be cut to 32 bits."""
    pkg = os.path.join(os.path.dirname(gpuws.__file__))
    called = set()
    for name in os.listdir(pkg):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name)) as f:
                called |= set(re.findall(r"\blib\.(gpuws_\w+)", f.read()))
    assert called and called <= set(_lib._FUNCTIONS), sorted(called - set(_lib._FUNCTIONS))


def test_calls_leave_no_device_memory_behind(ctx, rng):
    img = rng.random((64, 64)).astype(np.float32)
    k = gpuws.RawKernel("GW_KERNEL void f(GW_GLOBAL gw_f32 *x) { x[gw_global_idx(0)] *= 2; }", "f")
    k.compile(ctx)
    gc.collect()
    before = len(ctx._owned)
    for _ in range(20):
        gpuws.convolve2d(img, img[:5, :5], ctx=ctx)
        gpuws.label(img > 0.5, ctx=ctx)
        gpuws.sigma_clip(img, ctx=ctx)
        gpuws.find_sources(img, ctx=ctx)
        gpuws.hypot(img, 1.0, ctx=ctx)
        gpuws.histogram(img, 8, range=(0, 1), ctx=ctx)
        k(64, 64, (img.ravel().copy(),), ctx=ctx)
        np.from_dlpack(ctx.asarray(img)) if ctx.backend == "cpu" else None
    gc.collect()
    assert len(ctx._owned) == before


def test_contexts_follow_a_gpuws_device_list(ctx, monkeypatch):
    monkeypatch.delenv("GPUWS_DEVICE", raising=False)
    one = gpuws.contexts(ctx.backend, device=ctx.device_index)
    assert len(one) == 1 and one[0].backend == ctx.backend and one[0].device.name == ctx.device.name
    monkeypatch.setenv("GPUWS_DEVICE", "0,0,0")  # one device three times: three contexts
    three = gpuws.contexts(ctx.backend)
    assert len(three) == 3 and len({c.handle for c in three}) == 3
    given = gpuws.contexts(ctx.backend, device=0)  # a device given wins over the list: one context
    assert len(given) == 1
    given[0].close()
    assert {c.backend for c in three} == {ctx.backend} and len({c.device.name for c in three}) == 1
    a = three[1].asarray(np.arange(5, dtype=np.float32))
    assert gpuws.sum(a) == 10
    for c in one + three:
        c.close()
        assert c.closed
    with pytest.raises(gpuws.InvalidArgumentError, match="the context is closed"):
        a.get()
    monkeypatch.setenv("GPUWS_DEVICE", "0,x")
    with pytest.raises(gpuws.InvalidArgumentError, match="GPUWS_DEVICE='0,x' is not a device index"):
        gpuws.contexts(ctx.backend)
    monkeypatch.setenv("GPUWS_DEVICE", "0,4096")
    with pytest.raises(gpuws.NoDeviceError, match="GPUWS_DEVICE='0,4096': device 4096"):
        gpuws.contexts(ctx.backend)
