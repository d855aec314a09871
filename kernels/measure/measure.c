/* Host driver for measure: the reference on the CPU backend; on GPUs accumulate with atomics into the stream's
 * zeroed memory, then finalize into the output, clearing the totals (see measure.cl). Asynchronous. */
#include "../common/driver.h"
#include "measure_driver.h"
#include "measure_layout.h"
#include "measure_ref.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

_Static_assert(sizeof(gpuws_source_measure) == MEASURE_RECORD_WORDS * 8,
               "the kernels write gpuws_source_measure as MEASURE_RECORD_WORDS 64-bit words");

/* NVIDIA's OpenCL compiler accepts inline PTX: there the flushes use PTX reductions (red.global.add.f64, as CUDA's
 * atomicAdd) instead of compare-and-swap loops, see measure.cl. Should a driver reject it, the build without it
 * is used, and no later call tries again. */
static _Atomic int measure_nv_ptx_failed;

static bool measure_nv_ptx(const gpuws_context *ctx)
{
    return gpuws__is_nvidia_opencl(ctx) && ctx->info.type == GPUWS_DEVICE_GPU && !atomic_load(&measure_nv_ptx_failed);
}

/* The kernels from one program. OpenCL compilers that support cl_khr_int64_base_atomics define a macro of that
 * name; for one that reports the extension but not the macro, the program is built again with the atomics forced
 * on, and a device without them fails that build: then measure is unsupported there. wide: the path for more
 * than 2^32 pixels (on OpenCL a second build of the program, GPUWS_MEASURE_WIDE) and its second pass, *peak. */
static gpuws_status measure_kernels(gpuws_context *ctx, bool wide, gpuws_kernel **acc, gpuws_kernel **peak,
                                    gpuws_kernel **fin)
{
    const char *const acc_name = wide ? "measure_accumulate_wide" : "measure_accumulate";
    const char *options = NULL;
    gpuws_status st = GPUWS_ERR_BUILD;
    if (measure_nv_ptx(ctx)) {
        options = wide ? "-DGPUWS_NV_PTX=1 -DGPUWS_MEASURE_WIDE=1" : "-DGPUWS_NV_PTX=1";
        st = gpuws__kernel_get_ex(ctx, acc_name, options, acc);
        if (st == GPUWS_ERR_BUILD || st == GPUWS_ERR_KERNEL_NOT_FOUND) atomic_store(&measure_nv_ptx_failed, 1);
    }
    if (st == GPUWS_ERR_BUILD || st == GPUWS_ERR_KERNEL_NOT_FOUND) {
        options = wide ? "-DGPUWS_MEASURE_WIDE=1" : NULL;
        st = gpuws__kernel_get_ex(ctx, acc_name, options, acc);
    }
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND && ctx->backend->kind == GPUWS_BACKEND_OPENCL) {
        options = wide ? "-DGPUWS_MEASURE_INT64_ATOMICS=1 -DGPUWS_MEASURE_WIDE=1" : "-DGPUWS_MEASURE_INT64_ATOMICS=1";
        st = gpuws__kernel_get_ex(ctx, acc_name, options, acc);
    }
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND || st == GPUWS_ERR_BUILD)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "measure needs 64-bit atomics (cl_khr_int64_base_atomics), which %s lacks", ctx->info.name);
    if (st || (wide && (st = gpuws__kernel_get_ex(ctx, "measure_first_peak", options, peak)))) return st;
    return gpuws__kernel_get_ex(ctx, wide ? "measure_finalize_wide" : "measure_finalize", options, fin);
}

static gpuws_status measure_gpu(gpuws_stream *s, size_t width, size_t npix, const gpuws_buffer *data,
                                const gpuws_buffer *labels, size_t num_labels, const gpuws__label_remap *remap,
                                gpuws_buffer *out, bool raw)
{
    gpuws_context *ctx = s->ctx;
    /* The peak's key holds a 32-bit pixel index (and the kernels 32-bit rows and columns) up to 2^32 pixels; past
     * that the wide path finds each label's first peak in a second pass (the knob forces it for the tests). */
    const bool wide = npix > (size_t)1 << 32 || width > UINT32_MAX || ctx->tuning.measure_wide_peak;
    gpuws_kernel *acc, *peak = NULL, *fin;
    gpuws_status st = measure_kernels(ctx, wide, &acc, &peak, &fin);
    if (st) return st;
    gpuws_kernel_info ai;
    if ((st = gpuws_kernel_get_info(acc, &ai))) return st;
    const bool cpu = gpuws__is_cpu_device(ctx);
    uint32_t block = cpu ? 64 : MEASURE_MAX_BLOCK;
    while (block > ai.max_block_size || block > ctx->info.max_block_size) block /= 2;
    /* GPUs: three blocks per compute unit walk the tiles (the CUDA kernel is built for three resident blocks of
     * 256: __launch_bounds__(256, 3), so none waits for a second wave); PoCL: one work-group per tile */
    const size_t tiles = (npix + (size_t)block * MEASURE_PIXELS - 1) / ((size_t)block * MEASURE_PIXELS);
    uint32_t groups = cpu ? (uint32_t)(tiles < ctx->info.max_grid_dims[0] ? tiles : ctx->info.max_grid_dims[0])
                          : gpuws__saturating_blocks(ctx, 3);
    if (tiles < groups) groups = (uint32_t)tiles;
    /* testing knob: fewer work-groups than tiles on a CPU device, so the tests run the GPU's tile loop */
    const int64_t force = ctx->tuning.measure_groups;
    if (force > 0 && force < groups) groups = (uint32_t)force;

    /* The totals accumulate in the stream's zeroed memory, which finalize clears again: no fill command per call
     * (on NVIDIA's OpenCL a fill of a few KB costs more device time than finalize). */
    gpuws_buffer *totals;
    if ((st = gpuws__stream_zeroed(s, num_labels * sizeof(gpuws_source_measure), &totals))) return st;
    const gpuws_launch_config c1 = { { groups, 1, 1 }, { block, 1, 1 } };
    const gpuws_arg w = wide ? gpuws_arg_u64(width) : gpuws_arg_u32((uint32_t)width);
    /* without a remap the table is never read: any buffer stands in for it */
    const bool rm = remap && remap->table;
    gpuws_buffer *const lb = (gpuws_buffer *)labels;
    const gpuws_arg a1[] = { gpuws_arg_buffer((gpuws_buffer *)data),
                             gpuws_arg_buffer(lb),
                             gpuws_arg_u64(npix),
                             w,
                             gpuws_arg_u32((uint32_t)num_labels),
                             gpuws_arg_buffer(totals),
                             gpuws_arg_buffer(rm ? remap->table : lb),
                             gpuws_arg_u32(rm) };
    const gpuws_launch_config cp =
        gpuws__config_1d(npix, cpu ? 64 : 256, cpu ? 4096 : gpuws__saturating_blocks(ctx, 8));
    const gpuws_arg ap[] = { gpuws_arg_buffer((gpuws_buffer *)data),
                             gpuws_arg_buffer(lb),
                             gpuws_arg_u64(npix),
                             gpuws_arg_u32((uint32_t)num_labels),
                             gpuws_arg_buffer(totals),
                             a1[6],
                             a1[7] };
    const gpuws_launch_config c2 =
        gpuws__config_1d(num_labels, cpu ? 64 : 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 8));
    const gpuws_arg a2[] = { gpuws_arg_buffer((gpuws_buffer *)data),
                             gpuws_arg_buffer(totals),
                             gpuws_arg_buffer(out),
                             gpuws_arg_u32((uint32_t)num_labels),
                             w,
                             gpuws_arg_u32(raw) };
    if ((st = gpuws_launch(s, acc, &c1, a1, GPUWS__NARGS(a1))) ||
        (wide && (st = gpuws_launch(s, peak, &cp, ap, GPUWS__NARGS(ap)))) ||
        (st = gpuws_launch(s, fin, &c2, a2, GPUWS__NARGS(a2))))
        gpuws__stream_zeroed_dirty(s); /* accumulate may have run: its totals are left behind */
    return st;
}

gpuws_status gpuws_measure(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *data,
                           const gpuws_buffer *labels, size_t num_labels, gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(data, "data", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "measure"))) return st;
    size_t npix;
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "measure: the image is %zu x %zu: no pixels", width, height);
    if (gpuws__mul_overflows(width, height, &npix))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "measure: %zu x %zu pixels overflow size_t", width, height);
    if ((st = gpuws__check_array(ctx, data, "data", npix, sizeof(float))) ||
        (st = gpuws__check_array(ctx, labels, "labels", npix, sizeof(int32_t))))
        return st;
    if (num_labels > INT32_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "measure: num_labels %zu is more than an int32 label can name",
                            num_labels);
    if (num_labels == 0 && !out) return GPUWS_OK; /* nothing to measure, nowhere to write: fine */
    if ((st = gpuws__check_array(ctx, out, "out", num_labels, sizeof(gpuws_source_measure)))) return st;
    if (out == data || out == labels)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "measure: 'out' must not be the data or labels buffer");
    if (num_labels == 0) return GPUWS_OK;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        gpuws_measure_ref(gpuws__cpu_ptr(data), gpuws__cpu_ptr(labels), width, height, num_labels, gpuws__cpu_ptr(out));
        return GPUWS_OK;
    }
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "measure accumulates in double precision, which %s lacks",
                            ctx->info.name);
    return measure_gpu(s, width, npix, data, labels, num_labels, NULL, out, false);
}

gpuws_status gpuws__measure_sums(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *data,
                                 const gpuws_buffer *labels, size_t num_labels, const gpuws__label_remap *remap,
                                 gpuws_buffer *out)
{
    if (s->ctx->backend->kind == GPUWS_BACKEND_CPU) {
        gpuws_measure_ref_sums(gpuws__cpu_ptr(data), gpuws__cpu_ptr(labels), width, height, num_labels,
                               gpuws__cpu_ptr(out));
        return GPUWS_OK;
    }
    if (!s->ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "measure accumulates in double precision, which %s lacks",
                            s->ctx->info.name);
    return measure_gpu(s, width, width * height, data, labels, num_labels, remap, out, true);
}
