"""gpuws.Array: round trips of every dtype, NumPy layouts, and the errors of wrong dtypes, shapes and contexts."""

import numpy as np
import pytest

import gpuws

DTYPES = [np.float32, np.float64, np.int32, np.uint32, np.int16, np.uint8, np.int64, np.uint64, np.int8, np.uint16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_bit_exactly(ctx, rng, dtype):
    dt = np.dtype(dtype)
    host = np.frombuffer(rng.bytes(7 * 13 * dt.itemsize), dtype=dt).reshape(7, 13)
    a = ctx.asarray(host)
    assert (a.shape, a.dtype, a.size, a.nbytes, a.ndim) == ((7, 13), dt, 91, host.nbytes, 2)
    back = a.get()
    assert back.dtype == dt and back.tobytes() == host.tobytes()
    assert np.asarray(a).tobytes() == host.tobytes()


def test_empty_zeros_full_fill_copy_reshape(ctx):
    z = ctx.zeros((3, 4), np.int32)
    assert z.get().tolist() == [[0] * 4] * 3
    f = ctx.full(5, 2.5, np.float64)
    assert f.get().tolist() == [2.5] * 5
    e = ctx.empty((2, 2), np.float32).fill(7)
    assert e.get().tolist() == [[7, 7], [7, 7]]
    c = e.copy()
    e.fill(1)
    assert c.get().tolist() == [[7, 7], [7, 7]]
    r = z.reshape(2, 6)
    r.fill(3)
    assert z.get().tolist() == [[3] * 4] * 3, "reshape shares the buffer"
    assert z.reshape(-1).shape == (12,) and z.ravel().shape == (12,)
    with pytest.raises(gpuws.InvalidArgumentError, match="cannot have shape"):
        z.reshape(5, 5)
    empty = ctx.zeros((0, 3))
    assert empty.get().shape == (0, 3) and gpuws.sum(empty.ravel()) == 0


def test_fortran_and_non_contiguous_inputs_are_copied_in_c_order(ctx, rng):
    base = rng.random((6, 8)).astype(np.float32)
    fortran = np.asfortranarray(base)
    strided = base[::2, 1::3]
    assert ctx.asarray(fortran).get().tolist() == base.tolist()
    assert ctx.asarray(strided).get().tolist() == strided.tolist()
    k = np.ones((3, 3), np.float32)
    np.testing.assert_allclose(gpuws.convolve2d(fortran, k, ctx=ctx), gpuws.convolve2d(base, k, ctx=ctx))
    np.testing.assert_allclose(gpuws.convolve2d(strided, k, ctx=ctx),
                               gpuws.convolve2d(np.ascontiguousarray(strided), k, ctx=ctx))


def test_wrong_dtypes_are_refused_with_the_names(ctx):
    with pytest.raises(gpuws.InvalidArgumentError, match="complex"):
        ctx.empty(3, np.complex64)
    with pytest.raises(gpuws.InvalidArgumentError, match="object"):
        ctx.empty(3, object)
    ints = ctx.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(gpuws.InvalidArgumentError, match="int32 Array"):
        gpuws.convolve2d(ints, np.ones((1, 1)))
    f64 = ctx.asarray(np.ones(4))
    with pytest.raises(gpuws.InvalidArgumentError, match="float64 Array; this call needs float32"):
        gpuws.sigma_clip(f64)
    with pytest.raises(gpuws.InvalidArgumentError, match="is float64, not float32"):
        ctx.asarray(f64, dtype=np.float32)
    with pytest.raises(gpuws.InvalidArgumentError):
        gpuws.vector_add(f64, ctx.asarray(np.ones(4, np.float32)))


def test_wrong_shapes_are_refused(ctx):
    a = ctx.asarray(np.ones((4, 4), np.float32))
    with pytest.raises(gpuws.InvalidArgumentError, match="2-D"):
        gpuws.convolve2d(a.ravel(), np.ones((2, 2), np.float32))
    with pytest.raises(gpuws.InvalidArgumentError, match="do not chain"):
        gpuws.matmul(a, np.ones((3, 2), np.float32))
    with pytest.raises(gpuws.InvalidArgumentError, match="differ"):
        gpuws.vector_add(a, np.ones((4, 3), np.float32))
    with pytest.raises(gpuws.InvalidArgumentError, match="shape"):
        a.set(np.ones((3, 3)))
    with pytest.raises(gpuws.InvalidArgumentError, match="out must be a float32 Array of shape"):
        gpuws.vector_add(a, a, out=ctx.empty((16,)))
    # a C-side shape rule: SciPy's valid mode needs one input to contain the other
    with pytest.raises(gpuws.InvalidArgumentError) as e:
        gpuws.convolve2d(np.ones((5, 2), np.float32), np.ones((2, 5), np.float32), mode="valid", ctx=ctx)
    assert e.value.name == "GPUWS_ERR_INVALID_ARGUMENT" and e.value.detail


def test_arrays_of_another_context_are_refused(ctx):
    with gpuws.Context("cpu") as other:
        a = ctx.asarray(np.ones(8, np.float32))
        b = other.asarray(np.ones(8, np.float32))
        with pytest.raises(gpuws.WrongContextError):
            gpuws.vector_add(a, b)
        with pytest.raises(gpuws.WrongContextError):
            other.asarray(a)
        with pytest.raises(gpuws.WrongContextError):
            gpuws.vector_add(a, a, out=other.empty(8))
        with pytest.raises(gpuws.WrongContextError):
            gpuws.sum(a, ctx=other)


def test_numpy_in_gives_numpy_out_and_array_in_gives_array_out(ctx):
    x = np.arange(5, dtype=np.float32)
    r = gpuws.vector_add(x, x, ctx=ctx)
    assert isinstance(r, np.ndarray) and r.tolist() == [0, 2, 4, 6, 8]
    r = gpuws.vector_add(ctx.asarray(x), x)
    assert isinstance(r, gpuws.Array) and r.get().tolist() == [0, 2, 4, 6, 8]
    out = ctx.empty(5)
    assert gpuws.vector_add(x, x, out=out, ctx=ctx) is out and out.get().tolist() == [0, 2, 4, 6, 8]
