/* measure's cases (kernels/common/cases.h): sum and centre of mass of labelled discs around the sources of a
 * synthetic radio sky where they stand above 5σ; within the bounds of tests/test_measure.c. */
#include "common/cases.h"
#include "measure/measure_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

typedef struct {
    gpuws__case_sky_input in;
    size_t nlab;
    int32_t *hlab;
    gpuws_source_measure *want_meas;
    gpuws_buffer *labels, *out;
} sky_state;

static void sky_teardown(void *p)
{
    sky_state *s = p;
    gpuws__case_sky_input_free(&s->in);
    free(s->hlab);
    free(s->want_meas);
    gpuws_buffer_destroy(s->labels);
    gpuws_buffer_destroy(s->out);
    free(s);
}

static gpuws_status sky_setup(gpuws_context *ctx, bench_size size, void **state, gpuws__case_source *src)
{
    sky_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    return gpuws__case_sky_input_make(ctx, size, &s->in, src);
}

static gpuws_status meas_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    gpuws__case_source src[GPUWS__CASE_SKY_SOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    s->nlab = s->in.nsrc;
    s->hlab = calloc(s->in.n, sizeof *s->hlab);
    s->want_meas = malloc(s->nlab * sizeof *s->want_meas);
    if (!s->hlab || !s->want_meas) return GPUWS_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; k < s->in.nsrc; k++) {
        /* radius where amp * exp(-d^2 / (2 * 1.5^2)) falls to 5e-3 */
        const double rad = 1.5 * sqrt(2.0 * log(src[k].amp / 5e-3 + 1.0));
        const size_t ir = (size_t)rad + 1;
        for (size_t r = src[k].r >= ir ? src[k].r - ir : 0; r <= src[k].r + ir && r < s->in.side; r++)
            for (size_t q = src[k].c >= ir ? src[k].c - ir : 0; q <= src[k].c + ir && q < s->in.side; q++) {
                const double dr = (double)r - (double)src[k].r, dc = (double)q - (double)src[k].c;
                if (dr * dr + dc * dc <= rad * rad) s->hlab[r * s->in.side + q] = (int32_t)(k + 1);
            }
    }
    gpuws_measure_ref(s->in.hx, s->hlab, s->in.side, s->in.side, s->nlab, s->want_meas);
    if ((st = gpuws_buffer_create(ctx, s->in.n * sizeof(int32_t), &s->labels)) ||
        (st = gpuws_buffer_write(s->labels, 0, s->hlab, s->in.n * sizeof(int32_t))) ||
        (st = gpuws_buffer_create(ctx, s->nlab * sizeof(gpuws_source_measure), &s->out)))
        return st;
    size_t labelled = 0;
    for (size_t i = 0; i < s->in.n; i++) labelled += s->hlab[i] != 0;
    /* both images read once, the records written once; 6 f64 operations per labelled pixel */
    c->bytes = (double)s->in.n * (sizeof(float) + sizeof(int32_t)) + (double)s->nlab * sizeof(gpuws_source_measure);
    c->flops = 6.0 * (double)labelled;
    char what[48];
    snprintf(what, sizeof what, "%zu labels, %zu px", s->nlab, labelled);
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu %s", s->in.side, s->in.side, what);
    return GPUWS_OK;
}

static gpuws_status meas_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    return gpuws_measure(st, s->in.side, s->in.side, s->in.x, s->labels, s->nlab, s->out);
}

/* The test suite's bounds: npix and peaks exact, sums within 2 m u Σ|d|, centres within the propagated bound. */
static bool meas_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    gpuws_source_measure *got = malloc(s->nlab * sizeof *got);
    double *abs_sum = calloc(s->nlab, sizeof *abs_sum);
    bool ok = got && abs_sum && gpuws_buffer_read(s->out, 0, got, s->nlab * sizeof *got) == GPUWS_OK;
    if (!ok) snprintf(msg, n, "could not read the records back");
    for (size_t i = 0; ok && i < s->in.n; i++)
        if (s->hlab[i]) abs_sum[s->hlab[i] - 1] += fabs((double)s->in.hx[i]);
    for (size_t k = 0; ok && k < s->nlab; k++) {
        const gpuws_source_measure *g = &got[k], *w = &s->want_meas[k];
        const double m = (double)w->npix, tol = 2 * m * U * abs_sum[k], ext = (double)s->in.side;
        const double rtol = 1.01 * (tol * (ext + fabs(w->row)) / fabs(w->sum) + 2 * U * fabs(w->row));
        const double ctol = 1.01 * (tol * (ext + fabs(w->col)) / fabs(w->sum) + 2 * U * fabs(w->col));
        const bool same_peak = (g->peak == w->peak || (isnan(g->peak) && isnan(w->peak))) &&
                               g->peak_row == w->peak_row && g->peak_col == w->peak_col;
        const bool com_ok = w->npix == 0 ? isnan(g->row) && isnan(g->col)
                                         : fabs(g->row - w->row) <= rtol && fabs(g->col - w->col) <= ctol;
        if (g->npix != w->npix || !same_peak || !(fabs(g->sum - w->sum) <= tol) || !com_ok) {
            snprintf(
                msg, n,
                "label %zu: npix %lld sum %.17g centre (%.17g, %.17g) peak %g; reference %lld %.17g (%.17g, %.17g) %g",
                k + 1, (long long)g->npix, g->sum, g->row, g->col, g->peak, (long long)w->npix, w->sum, w->row, w->col,
                w->peak);
            ok = false;
        }
    }
    free(got);
    free(abs_sum);
    return ok;
}

static size_t meas_outputs(void *p, bench_output *out)
{
    sky_state *s = p;
    out[0] = (bench_output){ s->out, NULL, s->nlab * sizeof(gpuws_source_measure) };
    return 1;
}

static const gpuws__case w_measure = { { "measure", "sum+com", false, meas_setup, meas_run, meas_check, sky_teardown },
                                       meas_outputs,
                                       false };
GPUWS_CASE(w_measure)
