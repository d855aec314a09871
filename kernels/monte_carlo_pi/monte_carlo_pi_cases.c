/* monte_carlo_pi's cases (kernels/common/cases.h): the hit count of N Philox samples, exact against the
 * reference. */
#include "common/cases.h"
#include "monte_carlo_pi/monte_carlo_pi_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t n;
    gpuws_buffer *hits;
} mc_state;

#define MC_SEED 2026

static void mc_teardown(void *p)
{
    mc_state *s = p;
    gpuws_buffer_destroy(s->hits);
    free(s);
}

static gpuws_status mc_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    mc_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = gpuws__case_pick(size, 65536, 1000000, 100000000, 10000000000ULL);
    c->bytes = 8; /* no sample array: only the count is written */
    c->flops = 0; /* integer work: one Philox4x32-10 call (10 rounds of 2 wide multiplies) per 2 samples */
    snprintf(c->size_label, sizeof c->size_label, "%.0e samples", (double)s->n);
    return gpuws_buffer_create(ctx, 8, &s->hits);
}

static gpuws_status mc_run(void *p, gpuws_stream *st)
{
    mc_state *s = p;
    return gpuws_monte_carlo_pi(st, 0, s->n, MC_SEED, s->hits);
}

static bool mc_check(void *p, char *msg, size_t n)
{
    mc_state *s = p;
    uint64_t got;
    if (gpuws_buffer_read(s->hits, 0, &got, 8)) {
        snprintf(msg, n, "could not read the result back");
        return false;
    }
    const uint64_t want = gpuws_monte_carlo_pi_ref(0, s->n, MC_SEED);
    if (got != want) snprintf(msg, n, "%llu hits, reference %llu", (unsigned long long)got, (unsigned long long)want);
    return got == want;
}

static size_t mc_outputs(void *p, bench_output *out)
{
    mc_state *s = p;
    out[0] = (bench_output){ s->hits, NULL, 8 };
    return 1;
}

static const gpuws__case w_pi = { { "monte_carlo_pi", "philox", false, mc_setup, mc_run, mc_check, mc_teardown },
                                  mc_outputs,
                                  false };
GPUWS_CASE(w_pi)
