/* Host driver for vector_add: one code path for CUDA and OpenCL, the reference on the CPU backend. */
#include "../common/driver.h"
#include "vector_add_ref.h"

gpuws_status gpuws_vector_add(gpuws_stream *s, gpuws_dtype dtype, size_t n, const gpuws_buffer *a,
                              const gpuws_buffer *b, gpuws_buffer *c)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(a, "a", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "vector_add"))) return st;
    if (dtype != GPUWS_F32 && dtype != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "vector_add: dtype %s is not f32 or f64",
                            gpuws_dtype_name(dtype));
    size_t es = gpuws_dtype_size(dtype);
    if ((st = gpuws__check_array(ctx, a, "a", n, es)) || (st = gpuws__check_array(ctx, b, "b", n, es)) ||
        (st = gpuws__check_array(ctx, c, "c", n, es)) || (st = gpuws__check_dtype(ctx, dtype, "vector_add")))
        return st;
    if (n == 0) return GPUWS_OK;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dtype == GPUWS_F32) gpuws_vector_add_ref_f32(gpuws__cpu_ptr(a), gpuws__cpu_ptr(b), gpuws__cpu_ptr(c), n);
        else gpuws_vector_add_ref_f64(gpuws__cpu_ptr(a), gpuws__cpu_ptr(b), gpuws__cpu_ptr(c), n);
        return GPUWS_OK;
    }
    /* GPUs: a grid-stride loop over a few blocks per compute unit. CPU OpenCL devices (PoCL) vectorise across the
     * work-items of a group, so they get one work-item per element instead. */
    const bool cpu = gpuws__is_cpu_device(ctx);
    gpuws_kernel *k;
    uint32_t block;
    if ((st =
             gpuws__kernel_block(ctx, dtype == GPUWS_F32 ? "vector_add_f32" : "vector_add_f64", NULL, 256, &k, &block)))
        return st;
    gpuws_launch_config cfg = gpuws__config_1d(n, block, cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 16));
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)a), gpuws_arg_buffer((gpuws_buffer *)b), gpuws_arg_buffer(c),
                         gpuws_arg_u64(n) };
    return gpuws_launch(s, k, &cfg, args, GPUWS__NARGS(args));
}
