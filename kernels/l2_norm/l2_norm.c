/* Host driver for l2_norm: one code path for CUDA and OpenCL, the reference on the CPU backend. */
#include "../common/driver.h"
#include "l2_norm_layout.h"
#include "l2_norm_ref.h"

enum {
    BLOCK = 256,                   /* threads per block of either kernel on GPUs */
    CPU_BLOCK = 64,                /* work-items per group on CPU OpenCL devices */
    MIN_LANES = 32,                /* rows shorter than this get one thread each; longer ones at least a warp */
    CACHED = L2_NORM_VECTORS * 16, /* bytes of a row each lane of the group kernel keeps in registers */
};

/* Lanes per row for the group kernel: enough that each lane's registers hold its share of the row (so the row
 * is read once), at least a warp, at most the block. */
static uint32_t group_lanes(size_t cols, size_t es, uint32_t block)
{
    const size_t per_lane = CACHED / es;
    uint32_t lanes = MIN_LANES;
    while (lanes < block && (size_t)lanes * per_lane < cols) lanes *= 2;
    return lanes;
}

gpuws_status gpuws_l2_norm(gpuws_stream *s, gpuws_dtype dt, size_t rows, size_t cols, const gpuws_buffer *in,
                           gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(in, "in", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "l2_norm"))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "l2_norm: dtype %s is not f32 or f64", gpuws_dtype_name(dt));
    const size_t es = gpuws_dtype_size(dt);
    size_t n;
    if (gpuws__mul_overflows(rows, cols, &n))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "l2_norm: rows = %zu × cols = %zu overflows size_t", rows, cols);
    if ((st = gpuws__check_array(ctx, in, "in", n, es)) || (st = gpuws__check_array(ctx, out, "out", rows, es)) ||
        (st = gpuws__check_dtype(ctx, dt, "l2_norm")))
        return st;
    if (rows > INT32_MAX || cols > INT32_MAX) /* the kernels index in 32 bits, with room for a tile past the end */
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE, "l2_norm: rows = %zu, cols = %zu: each must be below 2^31", rows,
                            cols);
    if (rows && in == out)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "l2_norm: out must not be the same buffer as in");
    if (rows == 0) return GPUWS_OK;
    if (cols == 0) { /* the norm of an empty vector is 0 */
        const double zero = 0.0;
        return gpuws_buffer_fill_async(s, out, 0, &zero, es, rows * es);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dt == GPUWS_F32) gpuws_l2_norm_ref_f32(gpuws__cpu_ptr(in), gpuws__cpu_ptr(out), rows, cols);
        else gpuws_l2_norm_ref_f64(gpuws__cpu_ptr(in), gpuws__cpu_ptr(out), rows, cols);
        return GPUWS_OK;
    }

    const char *options = dt == GPUWS_F64 ? "-DL2_F64=1" : NULL; /* l2_norm.cl is built per dtype */
    /* CPU devices vectorise across work-items: one per row. GPUs: one thread per short row, a group per long one.
     * The knob l2_norm_kernel=rows|group (for tests) forces either, so PoCL runs the GPUs' kernel too. */
    const bool force_rows = ctx->tuning.l2_norm_kernel == GPUWS__L2_ROWS;
    const bool force_group = ctx->tuning.l2_norm_kernel == GPUWS__L2_GROUP;
    const bool cpu = gpuws__is_cpu_device(ctx) && !force_group;
    uint32_t block = cpu ? CPU_BLOCK : BLOCK;
    while (block > ctx->info.max_block_size && block > MIN_LANES) block /= 2;
    if (force_rows || block < MIN_LANES || (!force_group && (cpu || cols < MIN_LANES))) {
        gpuws_launch_config cfg = gpuws__config_1d(
            rows, block, (uint32_t)(ctx->info.max_grid_dims[0] < UINT32_MAX ? ctx->info.max_grid_dims[0] : UINT32_MAX));
        gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)in), gpuws_arg_buffer(out), gpuws_arg_u32((uint32_t)rows),
                             gpuws_arg_u32((uint32_t)cols) };
        return gpuws__launch_named(s, dt == GPUWS_F32 ? "l2_norm_rows_f32" : "l2_norm_rows_f64", options, &cfg, args,
                                   GPUWS__NARGS(args));
    }
    const uint32_t lanes = group_lanes(cols, es, block), per_block = block / lanes;
    uint64_t groups = ((uint64_t)rows + per_block - 1) / per_block;
    if (groups > ctx->info.max_grid_dims[0]) groups = ctx->info.max_grid_dims[0]; /* the kernel loops over the rest */
    gpuws_launch_config cfg = { { (uint32_t)groups, 1, 1 }, { block, 1, 1 } };
    gpuws_arg args[] = {
        gpuws_arg_buffer((gpuws_buffer *)in), gpuws_arg_buffer(out), gpuws_arg_u32((uint32_t)rows),
        gpuws_arg_u32((uint32_t)cols),        gpuws_arg_u32(lanes),  gpuws_arg_local((size_t)block * es)
    };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "l2_norm_group_f32" : "l2_norm_group_f64", options, &cfg, args,
                               GPUWS__NARGS(args));
}
