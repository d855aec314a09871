/* histogram's cases (kernels/common/cases.h): 256 bins over roughly normal f32 and i32 data, a little of it outside
 * the range, and f32 into 8192 bins (more than local memory holds: the global-atomics kernel); bit-exact bin counts
 * against the reference. */
#include "common/cases.h"
#include "histogram/histogram_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_BINS      256
#define HIST_MANY_BINS 8192
#define HIST_LO        (-4.0)
#define HIST_HI        4.0

typedef struct {
    gpuws_dtype dtype;
    uint32_t bins;
    size_t n;
    void *host;
    gpuws_buffer *x, *counts;
} hist_state;

static void hist_teardown(void *p)
{
    hist_state *s = p;
    free(s->host);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->counts);
    free(s);
}

static gpuws_status hist_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt,
                               uint32_t bins)
{
    hist_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dtype = dt;
    s->bins = bins;
    s->n = gpuws__case_fit(ctx, gpuws__case_pick(size, 5000, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28), 4, 1);
    s->host = malloc(s->n * 4);
    if (!s->host) return GPUWS_ERR_OUT_OF_MEMORY;
    uint64_t seed = 41;
    for (size_t i = 0; i < s->n; i++) {
        /* roughly normal (sum of 4 uniforms): realistic, uneven bin loads, a little outside the range */
        const double v =
            (bench_uniform(&seed) + bench_uniform(&seed) + bench_uniform(&seed) + bench_uniform(&seed) - 2.0) * 4.4;
        if (dt == GPUWS_F32) ((float *)s->host)[i] = (float)v;
        else ((int32_t *)s->host)[i] = (int32_t)floor(v * 1e6); /* i32: the same shape, in micro-units */
    }
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * 4, &s->x)) ||
        (st = gpuws_buffer_create(ctx, (size_t)bins * 8, &s->counts)) ||
        (st = gpuws_buffer_write(s->x, 0, s->host, s->n * 4)))
        return st;
    c->bytes = 4.0 * (double)s->n + (double)bins * 8.0;
    c->flops = 0;
    char what[32];
    snprintf(what, sizeof what, "%s, %u bins", dt == GPUWS_F32 ? "f32" : "i32", bins);
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, what);
    return GPUWS_OK;
}

static double hist_scale(const hist_state *s) { return s->dtype == GPUWS_F32 ? 1.0 : 1e6; }

static gpuws_status hist_setup_f32(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return hist_setup(ctx, size, state, c, GPUWS_F32, HIST_BINS);
}

static gpuws_status hist_setup_f32_many(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return hist_setup(ctx, size, state, c, GPUWS_F32, HIST_MANY_BINS);
}

static gpuws_status hist_setup_i32(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return hist_setup(ctx, size, state, c, GPUWS_I32, HIST_BINS);
}

static gpuws_status hist_run(void *p, gpuws_stream *st)
{
    hist_state *s = p;
    return gpuws_histogram(st, s->dtype, s->n, s->x, HIST_LO * hist_scale(s), HIST_HI * hist_scale(s), s->bins,
                           s->counts);
}

static bool hist_check(void *p, char *msg, size_t n)
{
    hist_state *s = p;
    const uint32_t bins = s->bins;
    uint64_t *got = malloc((size_t)bins * 8), *want = malloc((size_t)bins * 8);
    void *e = malloc(((size_t)bins + 1) * 8);
    bool ok = got && want && e;
    if (!ok) snprintf(msg, n, "out of host memory for the reference");
    else if (gpuws_buffer_read(s->counts, 0, got, (size_t)bins * 8)) {
        snprintf(msg, n, "could not read the result back");
        ok = false;
    }
    const double lo = HIST_LO * hist_scale(s), hi = HIST_HI * hist_scale(s);
    if (ok && s->dtype == GPUWS_F32) {
        gpuws_histogram_edges_f32(lo, hi, bins, e);
        gpuws_histogram_ref_f32(s->host, s->n, e, bins, want);
    } else if (ok) {
        gpuws_histogram_edges_i32(lo, hi, bins, e);
        gpuws_histogram_ref_i32(s->host, s->n, e, bins, want);
    }
    for (uint32_t b = 0; ok && b < bins; b++)
        if (got[b] != want[b]) {
            snprintf(msg, n, "bin %u holds %llu, reference %llu", b, (unsigned long long)got[b],
                     (unsigned long long)want[b]);
            ok = false;
        }
    free(got);
    free(want);
    free(e);
    return ok;
}

static size_t hist_outputs(void *p, bench_output *out)
{
    hist_state *s = p;
    out[0] = (bench_output){ s->counts, NULL, (size_t)s->bins * 8 };
    return 1;
}

static const gpuws__case w_hist_f32 = {
    { "histogram", "f32", false, hist_setup_f32, hist_run, hist_check, hist_teardown }, hist_outputs, false
};
static const gpuws__case w_hist_i32 = {
    { "histogram", "i32", false, hist_setup_i32, hist_run, hist_check, hist_teardown }, hist_outputs, false
};
static const gpuws__case w_hist_f32_many = { { "histogram", "f32_many_bins", false, hist_setup_f32_many, hist_run,
                                               hist_check, hist_teardown },
                                             hist_outputs,
                                             false };
GPUWS_CASE(w_hist_f32)
GPUWS_CASE(w_hist_i32)
GPUWS_CASE(w_hist_f32_many)
