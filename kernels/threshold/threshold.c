/* Host driver for threshold (segmentation): one elementwise kernel on GPUs, the reference on the CPU backend. */
#include "../common/driver.h"
#include "threshold_ref.h"

gpuws_status gpuws_threshold(gpuws_stream *s, size_t n, const gpuws_buffer *data, float threshold, gpuws_buffer *mask)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(data, "data", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "threshold"))) return st;
    if ((st = gpuws__check_array(ctx, data, "data", n, sizeof(float))) ||
        (st = gpuws__check_array(ctx, mask, "mask", n, 1)))
        return st;
    if (n == 0) return GPUWS_OK;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        gpuws_threshold_ref(gpuws__cpu_ptr(data), n, threshold, gpuws__cpu_ptr(mask));
        return GPUWS_OK;
    }
    /* GPUs: a grid-stride loop over a few blocks per compute unit, 4 values per thread and step; CPU OpenCL
     * devices (PoCL) one work-item per 4 values instead. */
    const bool cpu = gpuws__is_cpu_device(ctx);
    gpuws_launch_config cfg =
        gpuws__config_1d((n + 3) / 4, cpu ? 64 : 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 16));
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)data), gpuws_arg_buffer(mask), gpuws_arg_u64(n),
                         gpuws_arg_f32(threshold) };
    return gpuws__launch_named(s, "threshold_f32", NULL, &cfg, args, GPUWS__NARGS(args));
}
