"""DLPack and the CUDA array interface: memory shared without a copy where the backend has addresses."""

import gc

import numpy as np
import pytest

import gpuws
from conftest import open_context


def test_numpy_sees_a_cpu_array_without_a_copy():
    with gpuws.Context("cpu") as ctx:
        a = ctx.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
        assert a.__dlpack_device__() == (1, 0)
        view = np.from_dlpack(a)
        assert view.shape == (3, 4) and view.dtype == np.float32 and not view.flags.owndata
        a.fill(5)
        assert (view == 5).all(), "the same memory"
        del view
        gc.collect()
        assert not gpuws._dlpack.exported_buffers(ctx)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8, np.int64])
def test_from_dlpack_wraps_numpy_memory_on_the_cpu_backend(dtype):
    with gpuws.Context("cpu") as ctx:
        x = np.arange(16, dtype=dtype).reshape(4, 4)
        a = gpuws.from_dlpack(x, ctx)
        assert a.shape == (4, 4) and a.dtype == dtype
        a.fill(3)
        assert (x == 3).all(), "the Array is x's memory"
        np.testing.assert_array_equal(a.get(), x)


def test_from_dlpack_copies_what_it_cannot_wrap(ctx):
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    strided = x[:, ::2]
    a = gpuws.from_dlpack(strided, ctx)
    np.testing.assert_array_equal(a.get(), strided)
    a.fill(0)
    assert x[0, 2] == 2, "a copy: x is untouched"
    if ctx.backend != "cpu":  # host memory goes to any device by copy
        b = ctx.from_dlpack(x)
        np.testing.assert_array_equal(b.get(), x)


def test_an_opencl_array_has_no_address_to_share():
    ctx = open_context("opencl")
    with ctx:
        a = ctx.asarray(np.ones(4, np.float32))
        with pytest.raises(BufferError, match="no address"):
            np.from_dlpack(a)
        assert not hasattr(a, "__cuda_array_interface__")
        np.testing.assert_array_equal(np.asarray(a), np.ones(4))


def test_closing_a_context_waits_for_the_consumers_of_its_memory():
    ctx = gpuws.Context("cpu")
    a = ctx.asarray(np.arange(1000, dtype=np.float64))
    view = np.from_dlpack(a)
    ctx.close()
    assert ctx.closed
    with pytest.raises(gpuws.InvalidArgumentError, match="closed"):
        a.get()
    assert view[999] == 999, "the memory lives while NumPy holds it"
    assert ctx._pending_destroy is not None
    del view
    gc.collect()
    assert ctx._pending_destroy is None, "the C context went with the last consumer"


def test_an_unconsumed_capsule_frees_its_tensor():
    with gpuws.Context("cpu") as ctx:
        a = ctx.asarray(np.ones(8))
        cap = a.__dlpack__()
        assert len(gpuws._dlpack.exported_buffers(ctx)) == 1
        del cap
        gc.collect()
        assert not gpuws._dlpack.exported_buffers(ctx)
        with pytest.raises(BufferError, match="stream"):
            a.__dlpack__(stream=1)


def test_cuda_arrays_share_device_memory():
    ctx = open_context("cuda")
    with ctx:
        a = ctx.asarray(np.arange(64, dtype=np.float32).reshape(8, 8))
        cai = a.__cuda_array_interface__
        assert cai["shape"] == (8, 8) and cai["typestr"] == "<f4" and cai["data"][0] and cai["version"] == 3
        assert a.__dlpack_device__()[0] == 2
        b = gpuws.from_dlpack(a, gpuws.Context("cuda"))  # another context on the same device: no copy
        assert b.__cuda_array_interface__["data"][0] == cai["data"][0]
        np.testing.assert_array_equal(b.get(), a.get())


def test_cupy_and_gpuws_share_device_memory_both_ways():
    cp = pytest.importorskip("cupy")
    ctx = open_context("cuda")
    with ctx:
        x = cp.arange(1024, dtype=cp.float32)
        a = gpuws.from_dlpack(x, ctx)
        assert a.__cuda_array_interface__["data"][0] == x.data.ptr, "no copy in"
        gpuws.vector_add(a, a, out=a)
        ctx.synchronize()
        assert bool((x == 2 * cp.arange(1024, dtype=cp.float32)).all()), "gpuws wrote CuPy's memory"
        b = ctx.asarray(np.arange(10, dtype=np.float64))
        y = cp.asarray(b)  # through __cuda_array_interface__
        assert y.data.ptr == b.__cuda_array_interface__["data"][0], "no copy out"
        assert cp.from_dlpack(b).data.ptr == y.data.ptr
        np.testing.assert_array_equal(cp.asnumpy(y), np.arange(10))


def test_pytorch_and_gpuws_share_device_memory_both_ways():
    torch = pytest.importorskip("torch")
    ctx = open_context("cuda")
    with ctx:
        t = torch.arange(16, dtype=torch.float32, device="cuda")
        a = gpuws.from_dlpack(t, ctx)
        assert a.__cuda_array_interface__["data"][0] == t.data_ptr()
        assert torch.from_dlpack(a).data_ptr() == t.data_ptr()


def test_streams_give_their_native_queue(ctx):
    a, b = ctx.default_stream.native, ctx.stream().native
    if ctx.backend == "cpu":
        assert a is None and b is None, "the CPU backend runs work as it is submitted"
    else:
        assert a and b and a != b, "a cudaStream_t / cl_command_queue each"
