/* aperture's cases (kernels/common/cases.h): a sky (level 100, noise σ = 5, Gaussian sources) with apertures at
 * random positions, some across the edges; "circle" with a scalar error and a gain, "ellipse" with an rms map, a
 * mask and a background map; "ellipse-banded" the same from host memory (gpuws_sum_ellipse_host) with a device
 * budget of an eighth of the image's rows (or the tallest box's), so that the apertures go in windows. Checked
 * against the reference within docs/algorithms/aperture.md's cross-backend bound (the sums in another order):
 * |got - ref| <= 1e-10 area max|pixel| for sums, 1e-12 (area + 1) for areas, flags equal. */
#include "common/cases.h"
#include "aperture/aperture_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aperture/aperture_geom.h" /* after <math.h>: it includes nothing */

typedef struct {
    bool ellipse, banded;
    gpuws_context *ctx;
    uint64_t budget;
    size_t w, h, n;
    float *img, *rms, *back;
    uint8_t *mask;
    double *x, *y, *a, *b, *theta, *r;
    double *want, *got; /* sum, sumerr, area: 3n each */
    int *want_flag, *got_flag;
    double maxabs;
    gpuws_buffer *dimg, *drms, *dmask, *dback;
    gpuws_aperture_options o;
} ap_state;

static void ap_teardown(void *p)
{
    ap_state *s = p;
    free(s->img);
    free(s->rms);
    free(s->back);
    free(s->mask);
    free(s->x);
    free(s->want);
    free(s->got);
    free(s->want_flag);
    free(s->got_flag);
    gpuws_buffer_destroy(s->dimg);
    gpuws_buffer_destroy(s->drms);
    gpuws_buffer_destroy(s->dmask);
    gpuws_buffer_destroy(s->dback);
    free(s);
}

static gpuws_status ap_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, bool ellipse,
                             bool banded)
{
    ap_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->ellipse = ellipse;
    s->banded = banded;
    s->ctx = ctx;
    s->w = gpuws__case_pick(size, 150, 1000, 2048, 8192);
    s->h = gpuws__case_pick(size, 97, 700, 2048, 8192);
    s->n = gpuws__case_pick(size, 60, 2000, 20000, 200000);
    const size_t np = s->w * s->h, n = s->n;
    s->img = malloc(np * sizeof *s->img);
    s->rms = malloc(np * sizeof *s->rms);
    s->back = malloc(np * sizeof *s->back);
    s->mask = malloc(np);
    s->x = malloc(6 * n * sizeof *s->x);
    s->want = malloc(3 * n * sizeof *s->want);
    s->got = malloc(3 * n * sizeof *s->got);
    s->want_flag = malloc(n * sizeof *s->want_flag);
    s->got_flag = malloc(n * sizeof *s->got_flag);
    if (!s->img || !s->rms || !s->back || !s->mask || !s->x || !s->want || !s->got || !s->want_flag || !s->got_flag)
        return GPUWS_ERR_OUT_OF_MEMORY;
    s->y = s->x + n;
    s->a = s->x + 2 * n;
    s->b = s->x + 3 * n;
    s->theta = s->x + 4 * n;
    s->r = s->x + 5 * n;
    uint64_t seed = 20261126;
    for (size_t i = 0; i < np; i++) {
        const double u1 = bench_uniform(&seed), u2 = bench_uniform(&seed);
        s->img[i] = (float)(100.0 + 5.0 * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
        s->rms[i] = (float)(4.0 + bench_uniform(&seed));
        s->back[i] = (float)(99.0 + 2.0 * bench_uniform(&seed));
        s->mask[i] = bench_uniform(&seed) < 0.01;
    }
    for (size_t i = 0; i < n; i++) {
        s->x[i] = -5.0 + (double)(s->w + 10) * bench_uniform(&seed);
        s->y[i] = -5.0 + (double)(s->h + 10) * bench_uniform(&seed);
        s->b[i] = 1.0 + 2.0 * bench_uniform(&seed);
        s->a[i] = s->b[i] * (1.0 + 2.0 * bench_uniform(&seed));
        s->theta[i] = (bench_uniform(&seed) - 0.5) * 3.14159265358979;
        s->r[i] = ellipse ? 1.0 + 3.0 * bench_uniform(&seed) : 2.0 + 10.0 * bench_uniform(&seed);
        const size_t px = (size_t)fmin(fmax(s->x[i], 0), (double)s->w - 1),
                     py = (size_t)fmin(fmax(s->y[i], 0), (double)s->h - 1);
        s->img[py * s->w + px] += (float)(1000.0 * bench_uniform(&seed));
    }
    for (size_t i = 0; i < np; i++) s->maxabs = fmax(s->maxabs, fabs(s->img[i] - (ellipse ? s->back[i] : 0.0f)));
    if (banded) { /* the windows' rows and the parameters and sums of every aperture (168 bytes each) */
        size_t rows = s->h / 8;
        for (size_t i = 0; i < n; i++) {
            double p[AP_PARAMS];
            gpuws__aperture_ellipse(s->x[i], s->y[i], s->a[i], s->b[i], s->theta[i], s->r[i], s->w, s->h, p);
            if (p[AP_YMAX] - p[AP_YMIN] > (double)rows) rows = (size_t)(p[AP_YMAX] - p[AP_YMIN]);
        }
        s->budget = (uint64_t)n * 168 + (uint64_t)rows * s->w * 13;
    }
    gpuws_status st; /* the banded case reads the host arrays */
    if (!banded && ((st = gpuws__case_upload(ctx, s->img, np * sizeof(float), &s->dimg)) ||
                    (ellipse && (st = gpuws__case_upload(ctx, s->rms, np * sizeof(float), &s->drms))) ||
                    (ellipse && (st = gpuws__case_upload(ctx, s->mask, np, &s->dmask))) ||
                    (ellipse && (st = gpuws__case_upload(ctx, s->back, np * sizeof(float), &s->dback)))))
        return st;
    const gpuws_aperture_options d = GPUWS_APERTURE_OPTIONS_INIT;
    s->o = d;
    gpuws__aperture_host h = { NULL, 0.0, 0.0, NULL, 0, NULL };
    if (ellipse) {
        s->o.rms = s->drms;
        s->o.mask = s->dmask;
        s->o.back = s->dback;
        h.rms = s->rms;
        h.mask = s->mask;
        h.back = s->back;
    } else {
        s->o.err = h.err = 5.0;
        s->o.gain = h.gain = 2.0;
    }
    gpuws_aperture_sum_ref(s->img, s->w, s->h, &h, n, s->x, s->y, ellipse ? s->a : NULL, s->b, s->theta, s->r, s->want,
                           s->want + n, s->want + 2 * n, s->want_flag);
    /* the pixels of every aperture's box read once (f32; the ellipse's rms, back and mask too), 48 bytes per aperture;
     * the exact overlap (~150 flops) on the boundary pixels, ~10 flops on the others */
    double px = 0, edge = 0;
    for (size_t i = 0; i < n; i++) {
        const double ra = ellipse ? s->a[i] * s->r[i] : s->r[i], rb = ellipse ? s->b[i] * s->r[i] : s->r[i];
        px += 3.14159265358979 * ra * rb;
        edge += 2 * 3.14159265358979 * sqrt(0.5 * (ra * ra + rb * rb)) * 1.5;
    }
    c->bytes = px * (ellipse ? 13.0 : 4.0) + 48.0 * (double)n;
    c->flops = 10.0 * px + 150.0 * edge;
    c->flop_type = BENCH_FLOPS_F64;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu, %zu apertures", s->w, s->h, n);
    return GPUWS_OK;
}

static gpuws_status ap_setup_banded(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return ap_setup(ctx, size, state, c, true, true);
}

static gpuws_status ap_setup_circle(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return ap_setup(ctx, size, state, c, false, false);
}

static gpuws_status ap_setup_ellipse(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return ap_setup(ctx, size, state, c, true, false);
}

static gpuws_status ap_run(void *p, gpuws_stream *st)
{
    ap_state *s = p;
    const size_t n = s->n;
    if (s->banded) {
        gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
        o.back = s->back, o.rms = s->rms, o.mask = s->mask, o.max_device_bytes = s->budget;
        (void)st; /* a host-to-host call: it runs on its context's default stream */
        return gpuws_sum_ellipse_host(s->ctx, s->w, s->h, s->img, n, s->x, s->y, s->a, s->b, s->theta, s->r, &o, s->got,
                                      s->got + n, s->got + 2 * n, s->got_flag);
    }
    if (s->ellipse)
        return gpuws_sum_ellipse(st, s->w, s->h, s->dimg, n, s->x, s->y, s->a, s->b, s->theta, s->r, &s->o, s->got,
                                 s->got + n, s->got + 2 * n, s->got_flag);
    return gpuws_sum_circle(st, s->w, s->h, s->dimg, n, s->x, s->y, s->r, &s->o, s->got, s->got + n, s->got + 2 * n,
                            s->got_flag);
}

/* docs/algorithms/aperture.md: the reference's sums to the rounding of another summation order. */
static bool ap_check(void *p, char *msg, size_t len)
{
    const ap_state *s = p;
    const size_t n = s->n;
    for (size_t i = 0; i < n; i++) {
        const double area = s->want[2 * n + i];
        const double ts = 1e-10 * area * s->maxabs, te = 1e-10 * (s->want[n + i] + 1e-300), ta = 1e-12 * (area + 1);
        const bool same_nan = isnan(s->got[i]) && isnan(s->want[i]);
        if (s->got_flag[i] != s->want_flag[i] || (!same_nan && !(fabs(s->got[i] - s->want[i]) <= ts)) ||
            (!same_nan && !(fabs(s->got[n + i] - s->want[n + i]) <= te + ts)) ||
            !(fabs(s->got[2 * n + i] - area) <= ta)) {
            snprintf(msg, len,
                     "aperture %zu (x %.6g, y %.6g): sum %.17g sumerr %.17g area %.17g flag %d; reference "
                     "%.17g %.17g %.17g %d",
                     i, s->x[i], s->y[i], s->got[i], s->got[n + i], s->got[2 * n + i], s->got_flag[i], s->want[i],
                     s->want[n + i], area, s->want_flag[i]);
            return false;
        }
    }
    return true;
}

static size_t ap_outputs(void *p, bench_output *out)
{
    ap_state *s = p;
    const size_t n = s->n;
    out[0] = (bench_output){ NULL, s->got, n * sizeof(double) };
    out[1] = (bench_output){ NULL, s->got + n, n * sizeof(double) };
    out[2] = (bench_output){ NULL, s->got + 2 * n, n * sizeof(double) };
    out[3] = (bench_output){ NULL, s->got_flag, n * sizeof(int) };
    return 4;
}

static const gpuws__case w_aperture_circle = {
    { "aperture", "circle", false, ap_setup_circle, ap_run, ap_check, ap_teardown }, ap_outputs, false
};
static const gpuws__case w_aperture_ellipse = {
    { "aperture", "ellipse", false, ap_setup_ellipse, ap_run, ap_check, ap_teardown }, ap_outputs, false
};
static const gpuws__case w_aperture_ellipse_banded = {
    { "aperture", "ellipse-banded", true, ap_setup_banded, ap_run, ap_check, ap_teardown }, ap_outputs, true
};
GPUWS_CASE(w_aperture_circle)
GPUWS_CASE(w_aperture_ellipse)
GPUWS_CASE(w_aperture_ellipse_banded)
