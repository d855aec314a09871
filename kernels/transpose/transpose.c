/* Host driver for transpose: one code path for CUDA and OpenCL, the reference on the CPU backend. */
#include "../common/driver.h"
#include "transpose_layout.h"
#include "transpose_ref.h"

enum { TILE = TRANSPOSE_TILE, ROWS = TRANSPOSE_ROWS }; /* the kernels' tile and block height */

gpuws_status gpuws_transpose(gpuws_stream *s, gpuws_dtype dt, size_t rows, size_t cols, const gpuws_buffer *in,
                             gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(in, "in", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "transpose"))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_I32 && dt != GPUWS_U32 && dt != GPUWS_F64 && dt != GPUWS_I64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "transpose: dtype %s is not a 4- or 8-byte type (f32, i32, u32, f64, i64)",
                            gpuws_dtype_name(dt));
    const size_t es = gpuws_dtype_size(dt);
    size_t n;
    if (gpuws__mul_overflows(rows, cols, &n))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "transpose: rows = %zu × cols = %zu overflows size_t", rows, cols);
    if ((st = gpuws__check_array(ctx, in, "in", n, es)) || (st = gpuws__check_array(ctx, out, "out", n, es)) ||
        (st = gpuws__check_dtype(ctx, dt, "transpose")))
        return st;
    if (rows > INT32_MAX || cols > INT32_MAX) /* the kernels index in 32 bits, with room for a tile past the end */
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE, "transpose: rows = %zu, cols = %zu: each must be below 2^31", rows,
                            cols);
    if (n && in == out)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "transpose: out must not be the same buffer as in (no in-place transpose)");
    if (n == 0) return GPUWS_OK;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (es == 4) gpuws_transpose_ref_b32(gpuws__cpu_ptr(in), gpuws__cpu_ptr(out), rows, cols);
        else gpuws_transpose_ref_b64(gpuws__cpu_ptr(in), gpuws__cpu_ptr(out), rows, cols);
        return GPUWS_OK;
    }
    uint64_t gy = ((uint64_t)rows + TILE - 1) / TILE;
    if (gy > ctx->info.max_grid_dims[1]) gy = ctx->info.max_grid_dims[1]; /* the kernel loops over the rest */
    gpuws_launch_config cfg = { { (uint32_t)(((uint64_t)cols + TILE - 1) / TILE), (uint32_t)gy, 1 },
                                { TILE, ROWS, 1 } };
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)in), gpuws_arg_buffer(out), gpuws_arg_u32((uint32_t)rows),
                         gpuws_arg_u32((uint32_t)cols) };
    return gpuws__launch_named(s, es == 4 ? "transpose_b32" : "transpose_b64", NULL, &cfg, args, GPUWS__NARGS(args));
}
