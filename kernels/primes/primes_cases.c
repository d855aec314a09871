/* primes' cases (kernels/common/cases.h): flags and count of the primes below N, both variants, bit-exact against
 * the sieve. */
#include "common/cases.h"
#include "primes/primes_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_primes_variant variant;
    size_t n;
    gpuws_buffer *out, *count;
} primes_state;

static void primes_teardown(void *p)
{
    primes_state *s = p;
    gpuws_buffer_destroy(s->out);
    gpuws_buffer_destroy(s->count);
    free(s);
}

static gpuws_status primes_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c,
                                 gpuws_primes_variant v)
{
    primes_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->variant = v;
    s->n = gpuws__case_pick(size, 5000, 100000, 1000000, 10000000); /* the workshop's 10^5 and the 10^6 */
    /* The workshop's kernel does O(N^2 / log N) divisions: 10^6 takes minutes on a CPU (PoCL or the scalar
     * backend) and 10^7 hours even on a GPU, so it stays at 10^5 on CPUs and at 10^6 for the large size (the tiny size is
     * tiny everywhere). */
    gpuws_device_info d;
    if (v == GPUWS_PRIMES_TRIAL && size != BENCH_TINY && !gpuws_context_get_device_info(ctx, &d) &&
        (d.type == GPUWS_DEVICE_CPU || size == BENCH_LARGE))
        s->n = d.type == GPUWS_DEVICE_CPU ? 100000 : 1000000;
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * 4, &s->out)) || (st = gpuws_buffer_create(ctx, 8, &s->count))) return st;
    c->bytes = 4.0 * (double)s->n + 8; /* the int32 output; the work is integer arithmetic, not counted as FLOPs */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "N = %.0e", (double)s->n);
    return GPUWS_OK;
}

static gpuws_status primes_setup_trial(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return primes_setup(ctx, size, state, c, GPUWS_PRIMES_TRIAL);
}

static gpuws_status primes_setup_fast(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return primes_setup(ctx, size, state, c, GPUWS_PRIMES_FAST);
}

static gpuws_status primes_run(void *p, gpuws_stream *st)
{
    primes_state *s = p;
    return gpuws_primes(st, s->variant, s->n, s->out, s->count);
}

static bool primes_check(void *p, char *msg, size_t n)
{
    primes_state *s = p;
    int32_t *got = malloc(s->n * 4), *want = malloc(s->n * 4);
    uint64_t count = 0, want_count = 0;
    bool ok = got && want && !gpuws_buffer_read(s->out, 0, got, s->n * 4) && !gpuws_buffer_read(s->count, 0, &count, 8);
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else if (gpuws_primes_ref_sieve(want, s->n, &want_count) != 0) {
        ok = false;
        snprintf(msg, n, "GPUWS_ERR_OUT_OF_MEMORY: the reference sieve's table of %zu bytes", s->n / 2);
    } else if (count != want_count) {
        ok = false;
        snprintf(msg, n, "%llu primes, want %llu", (unsigned long long)count, (unsigned long long)want_count);
    } else if (memcmp(got, want, s->n * 4) != 0) {
        ok = false;
        snprintf(msg, n, "the flagged numbers differ from the sieve");
    }
    free(got);
    free(want);
    return ok;
}

static size_t primes_outputs(void *p, bench_output *out)
{
    primes_state *s = p;
    out[0] = (bench_output){ s->out, NULL, s->n * 4 };
    out[1] = (bench_output){ s->count, NULL, 8 };
    return 2;
}

static const gpuws__case w_primes_trial = {
    { "primes", "trial", false, primes_setup_trial, primes_run, primes_check, primes_teardown }, primes_outputs, false
};
static const gpuws__case w_primes_fast = {
    { "primes", "fast", false, primes_setup_fast, primes_run, primes_check, primes_teardown }, primes_outputs, false
};
GPUWS_CASE(w_primes_trial)
GPUWS_CASE(w_primes_fast)
