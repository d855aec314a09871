/* Benchmark workloads for the source-finding steps sigma_clip, threshold and measure (issue 4), on a synthetic
 * radio sky: Gaussian noise (σ = 1e-3) plus a few hundred Gaussian point sources (PSF σ = 1.5 px). Inputs are made
 * on the host from a fixed seed and uploaded once; each check uses the bounds of the test suites
 * (tests/test_sigma_clip.c, tests/test_measure.c). The CuPy peer script uses the same algorithm/variant names. */
#include "bench.h"
#include "measure/measure_ref.h"
#include "sigma_clip/sigma_clip_ref.h"
#include "threshold/threshold_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53



static size_t side_for(bench_size size) { return size == BENCH_SMALL ? 256 : size == BENCH_LARGE ? 4096 : 2048; }

typedef struct {
    size_t r, c;
    double amp;
} source;

/* The sky, and where its sources are (for the label image). */
static float *make_sky(size_t side, uint64_t seed, source *src, size_t nsrc)
{
    const size_t n = side * side;
    float *x = malloc(n * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i + 1 < n; i += 2) { /* Box-Muller, both outputs */
        const double r = 1e-3 * sqrt(-2.0 * log(1.0 - bench_uniform(&seed))), a = 6.283185307179586 * bench_uniform(&seed);
        x[i] = (float)(r * cos(a));
        x[i + 1] = (float)(r * sin(a));
    }
    if (n & 1) x[n - 1] = 0.0f;
    for (size_t k = 0; k < nsrc; k++) {
        src[k] = (source){bench_splitmix(&seed) % side, bench_splitmix(&seed) % side, 0.005 + 0.2 * bench_uniform(&seed)};
        for (size_t r = src[k].r >= 6 ? src[k].r - 6 : 0; r <= src[k].r + 6 && r < side; r++)
            for (size_t c = src[k].c >= 6 ? src[k].c - 6 : 0; c <= src[k].c + 6 && c < side; c++) {
                const double dr = (double)r - (double)src[k].r, dc = (double)c - (double)src[k].c;
                x[r * side + c] += (float)(src[k].amp * exp(-(dr * dr + dc * dc) / (2 * 1.5 * 1.5)));
            }
    }
    return x;
}

#define NSOURCES 300

typedef struct {
    size_t side, n, nlab;
    float *hx;
    int32_t *hlab;
    gpuws_buffer *x, *mask, *labels, *out;
    gpuws_sigma_clip_result want, got;
    uint8_t *want_mask;
    gpuws_source_measure *want_meas;
} sky_state;

static void sky_teardown(void *p)
{
    sky_state *s = p;
    free(s->hx);
    free(s->hlab);
    free(s->want_mask);
    free(s->want_meas);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->mask);
    gpuws_buffer_destroy(s->labels);
    gpuws_buffer_destroy(s->out);
    free(s);
}

static gpuws_status sky_setup(gpuws_context *ctx, bench_size size, void **state, source *src)
{
    sky_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->side = side_for(size);
    s->n = s->side * s->side;
    if (!(s->hx = make_sky(s->side, 20261121, src, NSOURCES))) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * sizeof(float), &s->x)) ||
        (st = gpuws_buffer_write(s->x, 0, s->hx, s->n * sizeof(float))))
        return st;
    return GPUWS_OK;
}

static void label_size(char *label, size_t n, const sky_state *s, const char *what)
{
    snprintf(label, n, "%zux%zu %s", s->side, s->side, what);
}

/* ---- sigma_clip f32 ---- */

static gpuws_status clip_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    source src[NSOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    if ((st = gpuws_sigma_clip_ref(s->hx, s->n, 3.0, 100, &s->want))) return st;
    /* the floor of any method that looks at every value once per pass: one read per pass; per value and pass a
     * comparison, a subtraction, an add and an FMA */
    c->bytes = (double)s->want.iterations * (double)s->n * sizeof(float);
    c->flops = (double)s->want.iterations * (double)s->n * 4.0;
    char what[40];
    snprintf(what, sizeof what, "f32, %d passes", s->want.iterations);
    label_size(c->size_label, sizeof c->size_label, s, what);
    return GPUWS_OK;
}

static gpuws_status clip_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    const gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    return gpuws_sigma_clip(st, s->n, s->x, &o, &s->got);
}

static bool clip_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    const gpuws_sigma_clip_result *g = &s->got, *w = &s->want;
    double mx = 0, md = 0;
    for (size_t i = 0; i < s->n; i++) {
        mx = fmax(mx, fabs((double)s->hx[i]));
        md = fmax(md, fabs((double)s->hx[i] - w->mean));
    }
    const double mean_tol = 4.0 * (double)s->n * U * mx, std_tol = 4.0 * (double)s->n * U * md * md / w->std;
    if (g->count != w->count || g->iterations != w->iterations || g->converged != w->converged || g->median != w->median ||
        !(fabs(g->mean - w->mean) <= mean_tol) || !(fabs(g->std - w->std) <= std_tol)) {
        snprintf(msg, n, "count %zu median %.9g mean %.9g std %.9g after %d passes; reference %zu %.9g %.9g %.9g after %d",
                 g->count, g->median, g->mean, g->std, g->iterations, w->count, w->median, w->mean, w->std, w->iterations);
        return false;
    }
    return true;
}

static const bench_workload w_sigma_clip = {"sigma_clip", "f32", false, clip_setup, clip_run, clip_check, sky_teardown};
BENCH_WORKLOAD(w_sigma_clip)

/* ---- threshold f32 (t = 5σ of the noise) ---- */

#define THRESHOLD 5e-3f

static gpuws_status thr_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    source src[NSOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    if (!(s->want_mask = malloc(s->n))) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_threshold_ref(s->hx, s->n, THRESHOLD, s->want_mask);
    if ((st = gpuws_buffer_create(ctx, s->n, &s->mask))) return st;
    c->bytes = (double)s->n * (sizeof(float) + 1);
    c->flops = (double)s->n;
    label_size(c->size_label, sizeof c->size_label, s, "f32 -> u8");
    return GPUWS_OK;
}

static gpuws_status thr_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    return gpuws_threshold(st, s->n, s->x, THRESHOLD, s->mask);
}

static bool thr_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    uint8_t *got = malloc(s->n);
    bool ok = got && gpuws_buffer_read(s->mask, 0, got, s->n) == GPUWS_OK && memcmp(got, s->want_mask, s->n) == 0;
    if (!ok) snprintf(msg, n, "mask differs from the scalar reference (or could not be read)");
    free(got);
    return ok;
}

static const bench_workload w_threshold = {"threshold", "f32", false, thr_setup, thr_run, thr_check, sky_teardown};
BENCH_WORKLOAD(w_threshold)

/* ---- measure sum+com: labels are discs around the sources where they stand above 5σ ---- */

static gpuws_status meas_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    source src[NSOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    s->nlab = NSOURCES;
    s->hlab = calloc(s->n, sizeof *s->hlab);
    s->want_meas = malloc(s->nlab * sizeof *s->want_meas);
    if (!s->hlab || !s->want_meas) return GPUWS_ERR_OUT_OF_MEMORY;
    for (size_t k = 0; k < NSOURCES; k++) {
        /* radius where amp * exp(-d^2 / (2 * 1.5^2)) falls to 5e-3 */
        const double rad = 1.5 * sqrt(2.0 * log(src[k].amp / 5e-3 + 1.0));
        const size_t ir = (size_t)rad + 1;
        for (size_t r = src[k].r >= ir ? src[k].r - ir : 0; r <= src[k].r + ir && r < s->side; r++)
            for (size_t q = src[k].c >= ir ? src[k].c - ir : 0; q <= src[k].c + ir && q < s->side; q++) {
                const double dr = (double)r - (double)src[k].r, dc = (double)q - (double)src[k].c;
                if (dr * dr + dc * dc <= rad * rad) s->hlab[r * s->side + q] = (int32_t)(k + 1);
            }
    }
    gpuws_measure_ref(s->hx, s->hlab, s->side, s->side, s->nlab, s->want_meas);
    if ((st = gpuws_buffer_create(ctx, s->n * sizeof(int32_t), &s->labels)) ||
        (st = gpuws_buffer_write(s->labels, 0, s->hlab, s->n * sizeof(int32_t))) ||
        (st = gpuws_buffer_create(ctx, s->nlab * sizeof(gpuws_source_measure), &s->out)))
        return st;
    size_t labelled = 0;
    for (size_t i = 0; i < s->n; i++) labelled += s->hlab[i] != 0;
    /* both images read once, the records written once; 6 f64 operations per labelled pixel */
    c->bytes = (double)s->n * (sizeof(float) + sizeof(int32_t)) + (double)s->nlab * sizeof(gpuws_source_measure);
    c->flops = 6.0 * (double)labelled;
    char what[48];
    snprintf(what, sizeof what, "%zu labels, %zu px", s->nlab, labelled);
    label_size(c->size_label, sizeof c->size_label, s, what);
    return GPUWS_OK;
}

static gpuws_status meas_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    return gpuws_measure(st, s->side, s->side, s->x, s->labels, s->nlab, s->out);
}

/* The test suite's bounds: npix and peaks exact, sums within 2 m u Σ|d|, centres within the propagated bound. */
static bool meas_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    gpuws_source_measure *got = malloc(s->nlab * sizeof *got);
    double *abs_sum = calloc(s->nlab, sizeof *abs_sum);
    bool ok = got && abs_sum && gpuws_buffer_read(s->out, 0, got, s->nlab * sizeof *got) == GPUWS_OK;
    if (!ok) snprintf(msg, n, "could not read the records back");
    for (size_t i = 0; ok && i < s->n; i++)
        if (s->hlab[i]) abs_sum[s->hlab[i] - 1] += fabs((double)s->hx[i]);
    for (size_t k = 0; ok && k < s->nlab; k++) {
        const gpuws_source_measure *g = &got[k], *w = &s->want_meas[k];
        const double m = (double)w->npix, tol = 2 * m * U * abs_sum[k], ext = (double)s->side;
        const double rtol = 1.01 * (tol * (ext + fabs(w->row)) / fabs(w->sum) + 2 * U * fabs(w->row));
        const double ctol = 1.01 * (tol * (ext + fabs(w->col)) / fabs(w->sum) + 2 * U * fabs(w->col));
        const bool same_peak = (g->peak == w->peak || (isnan(g->peak) && isnan(w->peak))) && g->peak_row == w->peak_row &&
                               g->peak_col == w->peak_col;
        const bool com_ok = w->npix == 0 ? isnan(g->row) && isnan(g->col)
                                         : fabs(g->row - w->row) <= rtol && fabs(g->col - w->col) <= ctol;
        if (g->npix != w->npix || !same_peak || !(fabs(g->sum - w->sum) <= tol) || !com_ok) {
            snprintf(msg, n, "label %zu: npix %lld sum %.17g centre (%.17g, %.17g) peak %g; reference %lld %.17g (%.17g, %.17g) %g",
                     k + 1, (long long)g->npix, g->sum, g->row, g->col, g->peak, (long long)w->npix, w->sum, w->row, w->col,
                     w->peak);
            ok = false;
        }
    }
    free(got);
    free(abs_sum);
    return ok;
}

static const bench_workload w_measure = {"measure", "sum+com", false, meas_setup, meas_run, meas_check, sky_teardown};
BENCH_WORKLOAD(w_measure)
