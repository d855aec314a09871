/* Host driver for monte_carlo_pi: partial counts per work-group + one final work-group on GPU backends, the
 * reference on the CPU. */
#include "../common/driver.h"
#include "monte_carlo_pi_ref.h"

#include <string.h>

static gpuws_status check_range(uint64_t first, uint64_t n)
{
    if (n && first > UINT64_MAX - (n - 1))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "monte_carlo_pi: samples [%llu, %llu + %llu) run past 2^64",
                            (unsigned long long)first, (unsigned long long)first, (unsigned long long)n);
    return GPUWS_OK;
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_partials = { "monte_carlo_pi.partials" };
static const gpuws__stream_key key_hits = { "monte_carlo_pi.hits" };

static gpuws_status enqueue(gpuws_stream *s, uint64_t first, uint64_t n, uint64_t seed, gpuws_buffer *hits)
{
    gpuws_context *ctx = s->ctx;
    if (n == 0) {
        const uint64_t zero = 0;
        return gpuws_buffer_fill_async(s, hits, 0, &zero, sizeof zero, sizeof zero);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        const uint64_t h = gpuws_monte_carlo_pi_ref(first, n, seed);
        memcpy(gpuws__cpu_ptr(hits), &h, sizeof h);
        return GPUWS_OK;
    }
    const bool cpu = gpuws__is_cpu_device(ctx);
    gpuws_kernel *kp, *kf;
    uint32_t block, fblock;
    gpuws_status st;
    if ((st = gpuws__kernel_block(ctx, "monte_carlo_pi_partial", NULL, cpu ? 64 : 256, &kp, &block)) ||
        (st = gpuws__kernel_block(ctx, "monte_carlo_pi_final", NULL, cpu ? 64 : 1024, &kf, &fblock)))
        return st;
    /* Enough threads to fill the device; each runs a grid-stride loop of Philox calls. (PoCL is no faster with one
     * call per work-item: it does not vectorise this kernel either way.) GPUs: 6 blocks of 256 per SM, one wave at
     * the CUDA kernel's 40 registers, so that every thread makes the same number of calls at once (other block
     * counts per SM run at the same speed). */
    const uint64_t last = first + (n - 1), jf = first / 2, jl = last / 2;
    const uint64_t calls = jl - jf + 1, need = (calls + block - 1) / block;
    uint32_t g = gpuws__saturating_blocks(ctx, cpu ? 4 : 6);
    if (need < g) g = (uint32_t)need;
    if (g > 1024) g = 1024; /* the final pass adds at most a few partials per thread */
    gpuws_buffer *partials;
    if ((st = gpuws__stream_scratch(s, &key_partials, (size_t)g * 8, &partials))) return st;
    gpuws_launch_config c1 = { { g, 1, 1 }, { block, 1, 1 } };
    const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    gpuws_arg a1[] = { gpuws_arg_buffer(partials), gpuws_arg_u64(jf), gpuws_arg_u64(jl),
                       gpuws_arg_u32(k0),          gpuws_arg_u32(k1), gpuws_arg_local((size_t)block * 8) };
    if ((st = gpuws_launch(s, kp, &c1, a1, GPUWS__NARGS(a1)))) return st;
    /* the final pass also takes off the end calls' samples outside [first, last] (the partials count both) */
    gpuws_launch_config c2 = { { 1, 1, 1 }, { fblock, 1, 1 } };
    gpuws_arg a2[] = { gpuws_arg_buffer(partials), gpuws_arg_buffer(hits),
                       gpuws_arg_u32(g),           gpuws_arg_u64(first),
                       gpuws_arg_u64(last),        gpuws_arg_u32(k0),
                       gpuws_arg_u32(k1),          gpuws_arg_local((size_t)fblock * 8) };
    return gpuws_launch(s, kf, &c2, a2, GPUWS__NARGS(a2));
}

gpuws_status gpuws_monte_carlo_pi(gpuws_stream *s, uint64_t first, uint64_t n, uint64_t seed, gpuws_buffer *hits)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(hits, "hits", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "monte_carlo_pi")) ||
        (st = gpuws__check_array(ctx, hits, "hits", 1, sizeof(uint64_t))) || (st = check_range(first, n)))
        return st;
    return enqueue(s, first, n, seed, hits);
}

gpuws_status gpuws_monte_carlo_pi_value(gpuws_context *ctx, gpuws_stream *s, uint64_t first, uint64_t n, uint64_t seed,
                                        uint64_t *hits, double *pi)
{
    GPUWS__CLAIM(claim);
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "monte_carlo_pi")) || (st = check_range(first, n))) return st;
    if (n == 0) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "monte_carlo_pi: n = 0 samples give no estimate");
    uint64_t h;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        h = gpuws_monte_carlo_pi_ref(first, n, seed);
    } else {
        gpuws_buffer *out;
        if ((st = gpuws__stream_scratch(s, &key_hits, sizeof h, &out)) || (st = enqueue(s, first, n, seed, out)) ||
            (st = gpuws__buffer_read_sync(s, out, 0, &h, sizeof h)))
            return st;
    }
    if (hits) *hits = h;
    if (pi) *pi = 4.0 * (double)h / (double)n;
    return GPUWS_OK;
}
