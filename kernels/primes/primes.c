/* Host driver for primes: the sieve or the workshop's trial division on GPU backends, the references on the CPU. */
#include "../common/driver.h"
#include "primes_ref.h"

#include <string.h>

static gpuws_status count_final(gpuws_stream *s, gpuws_buffer *partials, uint32_t nparts, gpuws_buffer *count)
{
    /* work-group sizes: powers of two (the reductions need it), at most what the kernel and device allow */
    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st =
        gpuws__kernel_block(s->ctx, "primes_count_final", NULL, gpuws__is_cpu_device(s->ctx) ? 64 : 1024, &k, &block);
    if (st) return st;
    gpuws_launch_config cfg = { { 1, 1, 1 }, { block, 1, 1 } };
    gpuws_arg a[] = { gpuws_arg_buffer(partials), gpuws_arg_buffer(count), gpuws_arg_u32(nparts),
                      gpuws_arg_local((size_t)block * 8) };
    return gpuws_launch(s, k, &cfg, a, GPUWS__NARGS(a));
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_partials = { "primes.partials" };
static const gpuws__stream_key key_base = { "primes.base" };

static gpuws_status trial_gpu(gpuws_stream *s, uint32_t n, gpuws_buffer *out, gpuws_buffer *count)
{
    /* one thread per number, as the workshop launched it; PoCL prefers small groups */
    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st =
        gpuws__kernel_block(s->ctx, "primes_trial", NULL, gpuws__is_cpu_device(s->ctx) ? 64 : 256, &k, &block);
    if (st) return st;
    uint32_t blocks = (uint32_t)(((uint64_t)n + block - 1) / block);
    gpuws_buffer *partials;
    if ((st = gpuws__stream_scratch(s, &key_partials, (size_t)blocks * 4, &partials))) return st;
    gpuws_launch_config cfg = { { blocks, 1, 1 }, { block, 1, 1 } };
    gpuws_arg a[] = { gpuws_arg_buffer(out ? out : partials), gpuws_arg_buffer(partials), gpuws_arg_u32(n),
                      gpuws_arg_u32(out != NULL), gpuws_arg_local((size_t)block * 4) };
    if ((st = gpuws_launch(s, k, &cfg, a, GPUWS__NARGS(a)))) return st;
    return count ? count_final(s, partials, blocks, count) : GPUWS_OK;
}

/* Odd numbers per segment (bytes of shared memory per work-group): the largest power of two from 1 Ki to 16 Ki
 * that still gives every compute unit a few segments, so small n is spread over the whole GPU. */
static uint32_t segment_odd(const gpuws_context *ctx, uint32_t n)
{
    const uint64_t want_segments = (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1) * 4;
    uint32_t seg = 16384;
    while (seg > 1024 && ((uint64_t)n + 2 * seg - 1) / (2 * seg) < want_segments) seg /= 2;
    while (seg > 64 && seg + 4096 > ctx->info.shared_mem_bytes) seg /= 2;
    return seg;
}

static gpuws_status sieve_gpu(gpuws_stream *s, uint32_t n, gpuws_buffer *out, gpuws_buffer *count)
{
    gpuws_context *ctx = s->ctx;
    const bool cpu = gpuws__is_cpu_device(ctx);
    const uint32_t limit = (uint32_t)gpuws_primes_isqrt(n ? n - 1 : 0); /* odd base primes p with p*p < n */
    const uint32_t seg_odd = segment_odd(ctx, n);
    /* Primes below this many have enough multiples per segment to share among the work-group; the cost of the
     * two loops balances near sqrt(seg_odd * ln(seg_odd)) (see docs/algorithms/primes.md). */
    const uint32_t threshold = (uint32_t)gpuws_primes_isqrt((uint64_t)seg_odd * 8);
    const uint32_t nseg = (uint32_t)(((uint64_t)n + 2ull * seg_odd - 1) / (2ull * seg_odd));
    gpuws_kernel *ksieve, *kbase;
    uint32_t block, base_block;
    gpuws_status st;
    if ((st = gpuws__kernel_block(ctx, "primes_sieve", NULL, cpu ? 64 : 256, &ksieve, &block)) ||
        (st = gpuws__kernel_block(ctx, "primes_base", NULL, cpu ? 64 : 1024, &kbase, &base_block)))
        return st;
    /* primes <= 46340 (sqrt(2^31)): 4791 odd ones, so the list plus its two counters fits 4800 words */
    const size_t base_words = 2 + (size_t)limit / 2 + 1;
    gpuws_buffer *base, *partials;
    if ((st = gpuws__stream_scratch(s, &key_partials, (size_t)nseg * 4, &partials)) ||
        (st = gpuws__stream_scratch(s, &key_base, base_words * 4, &base)))
        return st;

    gpuws_launch_config c1 = { { 1, 1, 1 }, { base_block, 1, 1 } };
    gpuws_arg a1[] = { gpuws_arg_buffer(base), gpuws_arg_u32(limit), gpuws_arg_u32(threshold),
                       gpuws_arg_local((size_t)limit / 2 + 1),
                       gpuws_arg_local((size_t)(base_block < 64 ? 64 : base_block) * 4) };
    if ((st = gpuws_launch(s, kbase, &c1, a1, GPUWS__NARGS(a1)))) return st;

    gpuws_launch_config c2 = { { nseg, 1, 1 }, { block, 1, 1 } };
    gpuws_arg a2[] = { gpuws_arg_buffer(out ? out : partials),
                       gpuws_arg_buffer(partials),
                       gpuws_arg_buffer(base),
                       gpuws_arg_u32(n),
                       gpuws_arg_u32(seg_odd),
                       gpuws_arg_u32(out != NULL),
                       gpuws_arg_local(seg_odd),
                       gpuws_arg_local((size_t)block * 4) };
    if ((st = gpuws_launch(s, ksieve, &c2, a2, GPUWS__NARGS(a2)))) return st;
    return count ? count_final(s, partials, nseg, count) : GPUWS_OK;
}

gpuws_status gpuws_primes(gpuws_stream *s, gpuws_primes_variant variant, size_t n, gpuws_buffer *out,
                          gpuws_buffer *count)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st;
    if (!out && !count)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "primes: arguments 'out' and 'count' are both NULL (nothing to compute)");
    if ((st = gpuws__buffer_context(out ? out : count, out ? "out" : "count", &ctx)) ||
        (st = gpuws__driver_stream(ctx, &s, &claim, "primes")))
        return st;
    if (variant != GPUWS_PRIMES_FAST && variant != GPUWS_PRIMES_TRIAL)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "primes: variant %d is not a gpuws_primes_variant",
                            (int)variant);
    if (n > GPUWS_PRIMES_MAX_N)
        return gpuws__error(GPUWS_ERR_OVERFLOW,
                            "primes: n = %zu exceeds 2^31: numbers from 2^31 on do not fit the int32 output", n);
    if ((out && (st = gpuws__check_array(ctx, out, "out", n, sizeof(int32_t)))) ||
        (count && (st = gpuws__check_array(ctx, count, "count", 1, sizeof(uint64_t)))))
        return st;
    if (n == 0) {
        const uint64_t zero = 0;
        return count ? gpuws_buffer_fill_async(s, count, 0, &zero, sizeof zero, sizeof zero) : GPUWS_OK;
    }

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        uint64_t c;
        int32_t *o = out ? gpuws__cpu_ptr(out) : NULL;
        if (variant == GPUWS_PRIMES_TRIAL) gpuws_primes_ref_trial(o, n, &c);
        else if (gpuws_primes_ref_sieve(o, n, &c))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "primes: the sieve's table of %zu bytes could not be allocated", n / 2 + 1);
        if (count) memcpy(gpuws__cpu_ptr(count), &c, sizeof c);
        return GPUWS_OK;
    }
    /* The count's kernel is looked up (which may fail) before either variant launches anything into out: on error
     * out must stay untouched. count_final then finds it in the context. */
    gpuws_kernel *kcount;
    if (count && (st = gpuws__kernel_get_ex(ctx, "primes_count_final", NULL, &kcount))) return st;
    return variant == GPUWS_PRIMES_TRIAL ? trial_gpu(s, (uint32_t)n, out, count)
                                         : sieve_gpu(s, (uint32_t)n, out, count);
}
