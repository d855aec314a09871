/* Host driver for κ-σ clipping: the reference on the CPU backend; on GPUs an init kernel, then rounds of three
 * kernels (stats / refine / finish, see sigma_clip.cl) that keep all state on the device. The host enqueues
 * rounds in batches and reads the 256-byte state after each batch; the data never leaves the device. */
#include "../common/driver.h"
#include "../../core/options.h"
#include "sigma_clip_parts.h"
#include "sigma_clip_ref.h"
#include "sigma_clip_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rounds enqueued before the first look at the done flag, then per later look. Sky images converge in 5-10
 * passes (NumPy on the workshop-like 2048^2 sky: 7), so most calls need one look; kernels of a round after
 * convergence return at once (a few microseconds each). */
#define FIRST_BATCH 8
#define LATER_BATCH 4

static const char *const kernel_names[4] = { "sigma_clip_init", "sigma_clip_stats", "sigma_clip_refine",
                                             "sigma_clip_finish" };

static double word_f64(uint64_t w)
{
    double d;
    memcpy(&d, &w, 8);
    return d;
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_state = { "sigma_clip.state" };
static const gpuws__stream_key key_counters = { "sigma_clip.counters" };

/* Values one work-group may see: its local histograms and per-item counts are 32-bit (the hot path's shared-memory
 * atomics), the global ones 64-bit. Grid-stride over float4s, a group of B items in a grid of G groups sees at most
 * B * (4 * ceil(n / (4 * G * B)) + 1) <= n / G + 5 * B values (one tail value per item at most), so
 * G >= n / GROUP_VALUES keeps every per-group count below 2^31 + 5 * 256 < 2^32. */
#define GROUP_VALUES ((size_t)1 << 31)

/* The kernels, from one program. OpenCL compilers that support cl_khr_int64_base_atomics define a macro of that
 * name (the global histograms' flushes need it); for one that reports the extension but not the macro, the program
 * is built again with the atomics forced on, and a device without them fails that build. */
gpuws_status gpuws__sigma_clip_kernels(gpuws_context *ctx, const char *const *names, int count, gpuws_kernel **k,
                                       const char *what)
{
    const char *options = NULL;
    gpuws_status st = gpuws__kernel_get_ex(ctx, names[0], NULL, &k[0]);
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND && ctx->backend->kind == GPUWS_BACKEND_OPENCL) {
        options = "-DGPUWS_SIGMA_CLIP_INT64_ATOMICS=1";
        st = gpuws__kernel_get_ex(ctx, names[0], options, &k[0]);
    }
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND || st == GPUWS_ERR_BUILD)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "%s needs double precision and 64-bit atomics (cl_khr_int64_base_atomics), which %s lacks",
                            what, ctx->info.name);
    for (int i = 1; i < count && !st; i++) st = gpuws__kernel_get_ex(ctx, names[i], options, &k[i]);
    return st;
}

static gpuws_status clip_gpu(gpuws_stream *s, size_t n, const gpuws_buffer *data, double kappa, int max_iterations,
                             gpuws_sigma_clip_result *result)
{
    gpuws_context *ctx = s->ctx;
    gpuws_kernel *k[4];
    uint32_t block = gpuws__is_cpu_device(ctx) ? 64 : SC_MAXB;
    gpuws_status st = gpuws__sigma_clip_kernels(ctx, kernel_names, 4, k, "sigma_clip");
    if (st) return st;
    for (int i = 0; i < 4; i++) {
        gpuws_kernel_info ki;
        if ((st = gpuws_kernel_get_info(k[i], &ki))) return st;
        while (block > ki.max_block_size || block > ctx->info.max_block_size) block /= 2;
    }
    if (block < 16) return gpuws__error(GPUWS_ERR_UNSUPPORTED, "sigma_clip: work-groups of %u are too small", block);
    /* a few groups per compute unit: enough loads in flight, few partials for the last group to combine */
    uint32_t groups = gpuws__saturating_blocks(ctx, 4);
    size_t need = (n + (size_t)block * 4 - 1) / ((size_t)block * 4);
    if (need < groups) groups = (uint32_t)(need ? need : 1);
    /* testing knob: more work-groups than a CPU device would get, so the tests run the GPU's many-partials path */
    if (ctx->tuning.sigma_clip_groups > 0) groups = (uint32_t)ctx->tuning.sigma_clip_groups;
    const size_t min_groups = (n - 1) / GROUP_VALUES + 1;
    if (min_groups > ctx->info.max_grid_dims[0] || min_groups > UINT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "sigma_clip: %zu values need %zu work-groups (2^31 values each at most); %s launches %llu",
                            n, min_groups, ctx->info.name, (unsigned long long)ctx->info.max_grid_dims[0]);
    if (groups < min_groups) groups = (uint32_t)min_groups;

    gpuws_buffer *stb, *ctr;
    if ((st = gpuws__stream_scratch(s, &key_state, (SC_STATE_WORDS + (size_t)groups * SC_PART_WORDS) * 8, &stb)) ||
        (st = gpuws__stream_scratch(s, &key_counters, SC_CTR_WORDS * 8, &ctr)))
        return st;

    const gpuws_launch_config one = { { 1, 1, 1 }, { block, 1, 1 } }, grid = { { groups, 1, 1 }, { block, 1, 1 } };
    const gpuws_arg init_args[] = { gpuws_arg_buffer(stb), gpuws_arg_buffer(ctr) };
    const gpuws_arg pass_args[] = { gpuws_arg_buffer((gpuws_buffer *)data),
                                    gpuws_arg_u64(n),
                                    gpuws_arg_buffer(stb),
                                    gpuws_arg_buffer(ctr),
                                    gpuws_arg_f64(kappa),
                                    gpuws_arg_u32((uint32_t)max_iterations) };
    if ((st = gpuws_launch(s, k[0], &one, init_args, 2))) return st;

    /* max_iterations clipping passes, plus one measurement of the final set when they do not converge */
    const long max_rounds = (long)max_iterations + 1;
    long enqueued = 0;
    uint64_t w[SC_STATE_WORDS];
    for (long batch = FIRST_BATCH;; batch = LATER_BATCH) {
        for (long r = 0; r < batch && enqueued < max_rounds; r++, enqueued++)
            if ((st = gpuws_launch(s, k[1], &grid, pass_args, 4)) ||
                (st = gpuws_launch(s, k[2], &grid, pass_args, 4)) || (st = gpuws_launch(s, k[3], &grid, pass_args, 6)))
                return st;
        if ((st = gpuws__buffer_read_sync(s, stb, 0, w, sizeof w))) return st;
        if (w[SC_DONE]) break;
        if (enqueued >= max_rounds)
            return gpuws__error(GPUWS_ERR_INTERNAL, "sigma_clip: no result after %ld rounds (max_iterations %d)",
                                enqueued, max_iterations);
    }
    if (w[SC_N0] == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: all %zu values are NaN: no statistics exist", n);
    result->count = (size_t)w[SC_RES_N];
    result->median = word_f64(w[SC_RES_MEDIAN]);
    result->mean = word_f64(w[SC_RES_MEAN]);
    result->std = word_f64(w[SC_RES_STD]);
    result->iterations = (int)w[SC_RES_ITER];
    result->converged = (int)w[SC_RES_CONV];
    return GPUWS_OK;
}

gpuws_status gpuws_sigma_clip(gpuws_stream *s, size_t n, const gpuws_buffer *data,
                              const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(data, "data", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "sigma_clip"))) return st;
    gpuws_sigma_clip_options read = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &read, sizeof read, GPUWS__SIGMA_CLIP_OPTIONS_BASE, "sigma_clip: options")))
        return st;
    options = &read;
    if (!result) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: argument 'result' is NULL");
    if (!(options->kappa > 0) || !isfinite(options->kappa))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: kappa %g is not a finite number > 0",
                            options->kappa);
    if (options->max_iterations < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: max_iterations %d is not >= 1",
                            options->max_iterations);
    if ((st = gpuws__check_array(ctx, data, "data", n, sizeof(float)))) return st;
    if (n == 0) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: no values (n == 0): no statistics exist");

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        st = gpuws_sigma_clip_ref(gpuws__cpu_ptr(data), n, options->kappa, options->max_iterations, result);
        if (st == GPUWS_ERR_INVALID_ARGUMENT)
            return gpuws__error(st, "sigma_clip: all %zu values are NaN: no statistics exist", n);
        if (st)
            return gpuws__error(st, "sigma_clip: no memory for a sorted copy of %zu values (2 x %zu bytes)", n,
                                n * sizeof(float));
        return GPUWS_OK;
    }
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "sigma_clip accumulates in double precision, which %s lacks",
                            ctx->info.name);
    gpuws_sigma_clip_result r;
    if ((st = clip_gpu(s, n, data, options->kappa, options->max_iterations, &r))) return st;
    *result = r;
    return GPUWS_OK;
}
