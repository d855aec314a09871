/* Host driver of the FMA-rate kernel (see peak.h). */
#include "peak.h"
#include "../common/driver.h"
#include "peak_ref.h"

gpuws_status gpuws__peak_fma(gpuws_stream *s, gpuws_dtype dtype, size_t threads, uint32_t block, uint32_t iters,
                             uint32_t lanes, double a, double b, gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(out, "out", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "peak"))) return st;
    if (dtype != GPUWS_F32 && dtype != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "peak: dtype %s is not f32 or f64", gpuws_dtype_name(dtype));
    if (iters == 0 || iters % GPUWS_PEAK_UNROLL)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "peak: iters %u is not a positive multiple of %d", iters,
                            GPUWS_PEAK_UNROLL);
    if (!(a > 0 && a < 1 && b > 0))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "peak: needs 0 < a < 1 and b > 0 (a = %g, b = %g)", a, b);
    if (threads == 0 || block == 0 || threads % block || threads / block > UINT32_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "peak: %zu threads are not a positive multiple of the block %u "
                            "(or need more than 2^32 blocks)",
                            threads, block);
    if (lanes != 1 &&
        (ctx->backend->kind != GPUWS_BACKEND_OPENCL || (lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "peak: %u lanes (1 everywhere; 2, 4, 8 or 16 on OpenCL only)",
                            lanes);
    if ((st = gpuws__check_array(ctx, out, "out", threads, gpuws_dtype_size(dtype))) ||
        (st = gpuws__check_dtype(ctx, dtype, "peak")))
        return st;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dtype == GPUWS_F32) gpuws_peak_ref_f32(gpuws__cpu_ptr(out), threads, iters, (float)a, (float)b);
        else gpuws_peak_ref_f64(gpuws__cpu_ptr(out), threads, iters, a, b);
        return GPUWS_OK;
    }
    gpuws_launch_config cfg = { { (uint32_t)(threads / block), 1, 1 }, { block, 1, 1 } };
    gpuws_arg args[] = { gpuws_arg_buffer(out), dtype == GPUWS_F32 ? gpuws_arg_f32((float)a) : gpuws_arg_f64(a),
                         dtype == GPUWS_F32 ? gpuws_arg_f32((float)b) : gpuws_arg_f64(b), gpuws_arg_u32(iters),
                         gpuws_arg_u64(threads) };
    char name[32], options[32];
    snprintf(name, sizeof name, "peak_fma%s_%s", lanes > 1 ? "_vec" : "", gpuws_dtype_name(dtype));
    snprintf(options, sizeof options, "-DPEAK_VW=%u", lanes);
    return gpuws__launch_named(s, name, lanes > 1 ? options : NULL, &cfg, args, GPUWS__NARGS(args));
}
