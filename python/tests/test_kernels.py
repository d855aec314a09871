"""User kernels: RawKernel called like CuPy's, the elementwise and reduction generators, and their errors."""

import numpy as np
import pytest

import gpuws

AXPY = """
GW_KERNEL void axpy(gw_u64 n, gw_f32 a, GW_GLOBAL const gw_f32 *x, GW_GLOBAL gw_f32 *y) {
    gw_u64 i = gw_global_idx(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

BLOCK_SUM = """
GW_KERNEL void block_sum(GW_GLOBAL const gw_i32 *x, GW_GLOBAL gw_i32 *out, GW_LOCAL gw_i32 *tmp) {
    gw_u64 t = gw_thread_idx(0);
    tmp[t] = x[gw_global_idx(0)];
    gw_barrier();
    if (t == 0) {
        gw_i32 s = 0;
        for (gw_u64 j = 0; j < gw_block_dim(0); j++) s += tmp[j];
        out[gw_block_idx(0)] = s;
    }
}
"""


def fma_close(got, want):
    """a * x + y in f32, rounded once (a fused multiply-add) or twice: within 1 ulp."""
    np.testing.assert_allclose(got, want, rtol=2 ** -23)


def test_raw_kernel_runs_with_python_numbers_and_arrays(ctx, rng):
    k = gpuws.RawKernel(AXPY, "axpy")
    assert k.compile(ctx) == "Lfbb"
    x, y = rng.random(1000).astype(np.float32), rng.random(1000).astype(np.float32)
    dx, dy = ctx.asarray(x), ctx.asarray(y)
    k((4,), (256,), (1000, 2, dx, dy))  # a Python int for the gw_f32 parameter is converted
    fma_close(dy.get(), np.float32(2) * x + y)
    host = y.copy()
    k(4, 256, (np.uint64(1000), np.float32(0.5), x, host), ctx=ctx)  # NumPy arrays: copied in and out
    fma_close(host, np.float32(0.5) * x + y)


def test_raw_kernel_shared_mem_feeds_the_gw_local_parameter(ctx):
    k = gpuws.RawKernel(BLOCK_SUM, "block_sum")
    assert k.compile(ctx) == "bbs"
    x = np.arange(512, dtype=np.int32)
    out = ctx.zeros(8, np.int32)
    k((8,), (64,), (ctx.asarray(x), out), shared_mem=64 * 4)
    np.testing.assert_array_equal(out.get(), x.reshape(8, 64).sum(1))
    out.fill(0)
    k((8,), (64,), (ctx.asarray(x), out, 64 * 4))  # or its size among the arguments
    np.testing.assert_array_equal(out.get(), x.reshape(8, 64).sum(1))


def test_raw_kernel_argument_errors_name_the_argument(ctx):
    k = gpuws.RawKernel(AXPY, "axpy")
    y = ctx.zeros(10)
    cases = [((10, np.float64(2), y, y), "argument 1: the kernel takes float32, the NumPy scalar is float64"),
             ((10.5, 2.0, y, y), "argument 0: the kernel takes uint64, not a float"),
             ((-1, 2.0, y, y), "-1 does not fit the kernel's uint64"),
             ((10, 2.0, 3, y), "argument 2 is a buffer"),
             ((10, 2.0, y), "takes 4 arguments")]
    for args, msg in cases:
        with pytest.raises(gpuws.ArgumentsError, match=msg):
            k(1, 16, args, ctx=ctx)
    with pytest.raises(gpuws.ArgumentsError, match="no GW_LOCAL parameter"):
        k(1, 16, (10, 2.0, y, y), shared_mem=128)
    with pytest.raises(gpuws.LaunchConfigError) as e:
        k((1,), (1 << 20,), (10, 2.0, y, y))
    assert e.value.name == "GPUWS_ERR_LAUNCH_CONFIG" and "block" in e.value.detail
    with pytest.raises(gpuws.InvalidArgumentError, match="grid"):
        k((0,), (16,), (10, 2.0, y, y))


def test_a_compile_error_raises_with_the_compiler_log(ctx):
    k = gpuws.RawKernel("GW_KERNEL void f(GW_GLOBAL gw_f32 *x) {\n    x[0] = undeclared_b;\n}\n", "f",
                        file_name="broken.gw")
    with pytest.raises(gpuws.BuildError) as e:
        k.compile(ctx)
    assert e.value.name == "GPUWS_ERR_BUILD"
    assert "broken.gw:2" in e.value.detail and "undeclared_b" in e.value.log
    with pytest.raises(gpuws.KernelNotFoundError, match="axpy"):
        gpuws.RawKernel(AXPY, "nope").compile(ctx)


def test_defines_reach_the_kernel(ctx):
    src = "GW_KERNEL void f(GW_GLOBAL gw_i32 *x) { x[0] = VALUE; }\n"
    out = ctx.zeros(1, np.int32)
    gpuws.RawKernel(src, "f", options=("-DVALUE=42",))(1, 1, (out,))
    assert out.get()[0] == 42
    with pytest.raises(gpuws.InvalidArgumentError, match="-DNAME"):
        gpuws.RawKernel(src, "f", options=("-O3",))


def test_elementwise_kernel_is_gpuws_elementwise_create(ctx, rng):
    axpy = gpuws.ElementwiseKernel("const gw_f32 *x, const gw_f32 *y, gw_f32 *z, gw_f32 a", "z[i] = a * x[i] + y[i]")
    x, y = rng.random(3001).astype(np.float32), rng.random(3001).astype(np.float32)
    z = ctx.empty(3001)
    axpy(ctx.asarray(x), ctx.asarray(y), z, 3.0)
    fma_close(z.get(), np.float32(3) * x + y)
    host = np.zeros(3001, np.float32)
    axpy(x, y, host, 2.0, ctx=ctx)
    fma_close(host, np.float32(2) * x + y)
    with pytest.raises(gpuws.BuildError, match="operation"):
        gpuws.ElementwiseKernel("gw_f32 *z", "z[i] = q")(z, ctx=ctx)


def test_reduction_kernel_is_gpuws_reduction_create(ctx, rng):
    x = rng.random(10001).astype(np.float32)
    sumsq = gpuws.ReductionKernel("gw_f64", "0", "(gw_f64)x[i] * x[i]", "a + b", "const gw_f32 *x")
    assert sumsq(ctx.asarray(x)) == pytest.approx((x.astype(np.float64) ** 2).sum(), rel=1e-12)
    biggest = gpuws.ReductionKernel("gw_f32", "-INFINITY", "x[i] * s", "gw_max(a, b)", "const gw_f32 *x, gw_f32 s")
    assert biggest(x, np.float32(2), ctx=ctx) == 2 * x.max()
    with pytest.raises(gpuws.ArgumentsError, match="NumPy scalar"):
        biggest(x, 2.0, ctx=ctx)
