/* aperture: SEP's aperture photometry (sum_circle, sum_ellipse, kron_radius, flux_auto) on every backend.
 *
 * Truth: SEP itself (ctest aperture_sep: tests/sep/compare_aperture.py), against which every backend agrees within
 * 1e-6 relative; here the reference (kernels/aperture/aperture_ref.c) is the oracle for every backend, and the
 * geometry is checked against areas known in closed form. What must hold (docs/algorithms/aperture.md):
 *  - every backend computes the reference's per-pixel weights and sums them in another order: sums within
 *    1e-10 x area x max|pixel|, areas within 1e-12 (area + 1), Kron radii within 1e-12 relative, flags equal;
 *  - the exact overlap is exact: on a constant image a circle wholly inside sums to π r² and an ellipse to
 *    π a b r² (1e-12 relative), however it falls on the pixel grid;
 *  - the options do what SEP does: err and gain, an rms map, the mask's correction, subpix sampling, the flags;
 *  - a background map in the options is subtracted from every pixel: the results are those of the image minus the
 *    map (f32) given without one, to the bit, on every backend. */
#include "support.h"
#include "aperture/aperture_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

typedef struct {
    gpuws_context *ctx;
    size_t w, h;
    float *img;
    gpuws_buffer *dimg;
} image;

static image image_new(gpuws_backend_kind kind, size_t w, size_t h, const float *px)
{
    image m = { test_open(kind), w, h, malloc(w * h * sizeof(float)), NULL };
    cr_assert(m.img);
    memcpy(m.img, px, w * h * sizeof(float));
    m.dimg = test_buffer_from(m.ctx, px, w * h * sizeof(float));
    return m;
}

static void image_free(image *m)
{
    gpuws_buffer_destroy(m->dimg);
    gpuws_context_destroy(m->ctx);
    free(m->img);
}

static float *constant(size_t w, size_t h, float v)
{
    float *x = malloc(w * h * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < w * h; i++) x[i] = v;
    return x;
}

/* Level 100, noise σ = 5, a bright source every ~400 pixels. */
static float *sky(size_t w, size_t h, uint64_t seed)
{
    float *x = malloc(w * h * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < w * h; i++) {
        const double u1 = test_rand_uniform(&seed), u2 = test_rand_uniform(&seed);
        x[i] = (float)(100.0 + 5.0 * sqrt(-2.0 * log(1.0 - u1)) * cos(2 * PI * u2));
        if (test_rand_uniform(&seed) < 0.0025) x[i] += (float)(2000.0 * test_rand_uniform(&seed));
    }
    return x;
}

typedef struct {
    double *kr, *sum, *err, *area;
    int *flag;
} results;

static results results_new(size_t n)
{
    results r = { malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 4 + 4) };
    cr_assert(r.kr && r.sum && r.err && r.area && r.flag);
    return r;
}

static void results_free(results *r)
{
    free(r->kr);
    free(r->sum);
    free(r->err);
    free(r->area);
    free(r->flag);
}

/* ---- agreement with the reference ---- */

typedef enum { CIRCLE, ELLIPSE, KRON, AUTO } call;

typedef struct {
    gpuws_backend_kind backend;
    call what;
    double err, gain;
    bool rms, mask;
    int subpix;
    bool back; /* a background map in the options (Kron and AUTO: the sky level in it, not taken off the image) */
} ref_case;

ParameterizedTestParameters(aperture, agrees_with_reference)
{
    static const ref_case shapes[] = {
        { 0, CIRCLE, 0.0, 0.0, false, false, 0, false }, { 0, CIRCLE, 5.0, 2.0, false, true, 0, false },
        { 0, CIRCLE, 0.0, 1.0, true, true, 3, false },   { 0, ELLIPSE, 3.0, 0.0, false, false, 0, false },
        { 0, ELLIPSE, 0.0, 4.0, true, true, 0, false },  { 0, ELLIPSE, 1.0, 0.0, false, true, 5, false },
        { 0, KRON, 0.0, 0.0, false, false, 0, false },   { 0, KRON, 0.0, 0.0, false, true, 0, false },
        { 0, AUTO, 2.0, 0.0, false, false, 1, false },   { 0, AUTO, 0.0, 0.0, true, true, 0, false },
        { 0, CIRCLE, 0.0, 0.0, true, true, 0, true },    { 0, ELLIPSE, 2.0, 3.0, false, false, 0, true },
        { 0, KRON, 0.0, 0.0, false, true, 0, true },     { 0, AUTO, 0.0, 0.0, true, false, 0, true },
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(ref_case *c, aperture, agrees_with_reference)
{
    enum { W = 211, H = 157, N = 700 };
    float *px = sky(W, H, test_seed(false) + (uint64_t)c->what);
    float *back = malloc(W * H * sizeof *back);
    cr_assert(back);
    /* Kron radii are measured on the sky-subtracted image: the level 100 taken off the pixels, or left in them and
     * put into the background map; other sums see a sloping map */
    for (size_t i = 0; i < W * H; i++) {
        const double sx = (double)(i % W) / W, sy = (double)(i / W) / H;
        const bool sky_only = c->what == KRON || c->what == AUTO;
        back[i] = (float)((sky_only ? 100.0 : 40.0 + 30.0 * sx) + 3.0 * sin(7.0 * sy) * (sky_only ? 0.1 : 1.0));
        if (sky_only && !c->back) px[i] -= 100.0f;
    }
    image m = image_new(c->backend, W, H, px);
    uint64_t seed = 99;
    float *rms = malloc(W * H * sizeof *rms);
    uint8_t *mask = malloc(W * H);
    double *col = malloc(6 * N * sizeof *col);
    cr_assert(rms && mask && col);
    for (size_t i = 0; i < W * H; i++) {
        rms[i] = (float)(3.0 + test_rand_uniform(&seed));
        mask[i] = test_rand_uniform(&seed) < 0.03 || (i / W > 60 && i / W < 80 && i % W > 100 && i % W < 130);
    }
    double *x = col, *y = col + N, *a = col + 2 * N, *b = col + 3 * N, *th = col + 4 * N, *r = col + 5 * N;
    for (size_t i = 0; i < N; i++) {
        x[i] = -8.0 + (W + 16.0) * test_rand_uniform(&seed);
        y[i] = -8.0 + (H + 16.0) * test_rand_uniform(&seed);
        b[i] = 0.5 + 3.0 * test_rand_uniform(&seed);
        a[i] = b[i] * (1.0 + 2.0 * test_rand_uniform(&seed));
        th[i] = (test_rand_uniform(&seed) - 0.5) * PI;
        r[i] = c->what == CIRCLE ? 25.0 * test_rand_uniform(&seed) : 6.0 * test_rand_uniform(&seed);
        if (i % 10 == 0) x[i] = round(x[i]), y[i] = round(y[i]) + (i % 20 ? 0.5 : 0.0); /* on the grid */
        if (i % 50 == 1) r[i] = 0.0;
        if (i % 50 == 2) x[i] = 115.0, y[i] = 70.0, r[i] = 1.5; /* inside the masked block */
    }
    gpuws_buffer *drms = test_buffer_from(m.ctx, rms, W * H * sizeof(float)),
                 *dmask = test_buffer_from(m.ctx, mask, W * H), *dback = test_buffer_from(m.ctx, back, W * H * 4);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    gpuws__aperture_host ho = { NULL, c->err, c->gain, NULL, c->subpix, NULL };
    o.err = c->err;
    o.gain = c->gain;
    o.subpix = c->subpix;
    if (c->rms) o.rms = drms, ho.rms = rms;
    if (c->mask) o.mask = dmask, ho.mask = mask;
    if (c->back) o.back = dback, ho.back = back;
    results got = results_new(N), want = results_new(N);
    memset(want.kr, 0, N * 8);
    memset(got.kr, 0, N * 8);
    switch (c->what) {
    case CIRCLE:
        TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, &o, got.sum, got.err, got.area, got.flag));
        gpuws_aperture_sum_ref(px, W, H, &ho, N, x, y, NULL, NULL, NULL, r, want.sum, want.err, want.area, want.flag);
        break;
    case ELLIPSE:
        TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, got.sum, got.err, got.area, got.flag));
        gpuws_aperture_sum_ref(px, W, H, &ho, N, x, y, a, b, th, r, want.sum, want.err, want.area, want.flag);
        break;
    case KRON:
        TEST_OK(gpuws_kron_radius(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, got.kr, got.flag));
        gpuws_kron_radius_ref(px, W, H, &ho, N, x, y, a, b, th, r, want.kr, want.flag);
        break;
    case AUTO:
        TEST_OK(
            gpuws_flux_auto(NULL, W, H, m.dimg, N, x, y, a, b, th, &o, got.kr, got.sum, got.err, got.area, got.flag));
        gpuws_flux_auto_ref(px, W, H, &ho, 6.0, 2.5, 1.75, N, x, y, a, b, th, want.kr, want.sum, want.err, want.area,
                            want.flag);
        break;
    }
    double maxabs = 0; /* of the pixels summed */
    for (size_t i = 0; i < W * H; i++) maxabs = fmax(maxabs, fabs(c->back ? px[i] - back[i] : px[i]));
    size_t flagged = 0, nans = 0;
    for (size_t i = 0; i < N; i++) {
        flagged += want.flag[i] != 0;
        cr_assert_eq(got.flag[i], want.flag[i], "aperture %zu: flag %#x, reference %#x", i, got.flag[i], want.flag[i]);
        if (c->what == KRON || c->what == AUTO)
            cr_assert(fabs(got.kr[i] - want.kr[i]) <= 1e-12 * fabs(want.kr[i]),
                      "aperture %zu: kronrad %.17g, "
                      "reference %.17g",
                      i, got.kr[i], want.kr[i]);
        if (c->what == KRON) continue;
        const double tol = 1e-10 * want.area[i] * maxabs;
        if (isnan(want.sum[i])) {
            nans++;
            cr_assert(isnan(got.sum[i]), "aperture %zu: sum %g, reference NaN", i, got.sum[i]);
            continue;
        }
        cr_assert(fabs(got.sum[i] - want.sum[i]) <= tol, "aperture %zu: sum %.17g, reference %.17g", i, got.sum[i],
                  want.sum[i]);
        cr_assert(fabs(got.err[i] - want.err[i]) <= 1e-10 * want.err[i] + tol,
                  "aperture %zu: sumerr %.17g, "
                  "reference %.17g",
                  i, got.err[i], want.err[i]);
        cr_assert(fabs(got.area[i] - want.area[i]) <= 1e-12 * (want.area[i] + 1),
                  "aperture %zu: area %.17g, "
                  "reference %.17g",
                  i, got.area[i], want.area[i]);
    }
    cr_assert_gt(flagged, 0, "no aperture is flagged: the edges and the mask are not exercised");
    if (c->mask && c->what != KRON) cr_assert_gt(nans, 0, "no aperture is wholly masked");
    results_free(&got);
    results_free(&want);
    gpuws_buffer_destroy(drms);
    gpuws_buffer_destroy(dmask);
    gpuws_buffer_destroy(dback);
    free(rms);
    free(mask);
    free(back);
    free(col);
    free(px);
    image_free(&m);
}

/* ---- the geometry ---- */

/* On an image of ones, a circle wholly inside sums to its area π r², wherever it falls on the grid. */
BACKEND_TEST(aperture, circle_on_ones_sums_to_pi_r_squared)
{
    enum { W = 64, H = 64, N = 400 };
    float *px = constant(W, H, 1.0f);
    image m = image_new(*kind, W, H, px);
    double x[N], y[N], r[N];
    uint64_t seed = 5;
    for (size_t i = 0; i < N; i++) {
        r[i] = i < 4 ? (double)i * 0.25 : 0.05 + 20.0 * test_rand_uniform(&seed);
        x[i] = 31.5 + (i % 3 == 0 ? 0.0 : i % 3 == 1 ? 0.5 : test_rand_uniform(&seed));
        y[i] = 31.5 + (i % 5 == 0 ? 0.0 : test_rand_uniform(&seed));
    }
    results got = results_new(N);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, NULL, got.sum, got.err, got.area, got.flag));
    for (size_t i = 0; i < N; i++) {
        const double want = PI * r[i] * r[i];
        if (r[i] == 0) continue; /* SEP's r = 0: the pixel whose centre is the position counts whole */
        cr_assert(fabs(got.sum[i] - want) <= 1e-12 * want && fabs(got.area[i] - want) <= 1e-12 * want,
                  "r %.17g at (%.17g, %.17g): sum %.17g area %.17g, π r² = %.17g", r[i], x[i], y[i], got.sum[i],
                  got.area[i], want);
        cr_assert(got.flag[i] == 0 && got.err[i] == 0.0, "flag %d sumerr %g", got.flag[i], got.err[i]);
    }
    results_free(&got);
    free(px);
    image_free(&m);
}

/* ... and an ellipse to π a b r², at any angle. */
BACKEND_TEST(aperture, ellipse_on_ones_sums_to_pi_a_b_r_squared)
{
    enum { W = 80, H = 80, N = 300 };
    float *px = constant(W, H, 1.0f);
    image m = image_new(*kind, W, H, px);
    double x[N], y[N], a[N], b[N], th[N], r[N];
    uint64_t seed = 6;
    for (size_t i = 0; i < N; i++) {
        b[i] = 0.1 + 4.0 * test_rand_uniform(&seed);
        a[i] = b[i] * (1.0 + 3.0 * test_rand_uniform(&seed));
        th[i] = i % 7 == 0 ? PI / 2 * (double)(i % 3) / 2 : (test_rand_uniform(&seed) - 0.5) * PI;
        r[i] = 0.2 + (30.0 / a[i]) * test_rand_uniform(&seed);
        x[i] = 39.5 + test_rand_uniform(&seed);
        y[i] = 39.5 + (i % 4 == 0 ? 0.0 : test_rand_uniform(&seed));
    }
    results got = results_new(N);
    TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, NULL, got.sum, NULL, got.area, got.flag));
    for (size_t i = 0; i < N; i++) {
        const double want = PI * a[i] * b[i] * r[i] * r[i];
        cr_assert(fabs(got.sum[i] - want) <= 1e-12 * want && got.area[i] == got.sum[i] && got.flag[i] == 0,
                  "a %g b %g theta %g r %g: sum %.17g area %.17g flag %d, π a b r² = %.17g", a[i], b[i], th[i], r[i],
                  got.sum[i], got.area[i], got.flag[i], want);
    }
    results_free(&got);
    free(px);
    image_free(&m);
}

/* A circle of radius 1/2 centred on a pixel corner covers a quarter of it in each of the four pixels. */
BACKEND_TEST(aperture, circle_on_a_corner_splits_into_four_quarters)
{
    float px[16] = { 0 };
    px[5] = 1.0f; /* pixel (1, 1) */
    image m = image_new(*kind, 4, 4, px);
    const double x[4] = { 1.5, 0.5, 1.5, 0.5 }, y[4] = { 1.5, 1.5, 0.5, 0.5 }, r[4] = { 0.5, 0.5, 0.5, 0.5 };
    results got = results_new(4);
    TEST_OK(gpuws_sum_circle(NULL, 4, 4, m.dimg, 4, x, y, r, NULL, got.sum, NULL, got.area, got.flag));
    for (int i = 0; i < 4; i++)
        cr_assert(fabs(got.sum[i] - PI / 16) <= 1e-15 && fabs(got.area[i] - PI / 4) <= 1e-15,
                  "corner %d: sum %.17g area %.17g", i, got.sum[i], got.area[i]);
    results_free(&got);
    image_free(&m);
}

/* A pixel's overlap with an ellipse mirrored about the pixel is the same: four centres mirrored about one lit pixel
 * sum to the same value, also for axes along the grid and centres on pixel edges, where SEP 1.2.1's exact overlap
 * breaks (an ellipse a 3, b 2, r 0.5 at (6, 5.5): SEP gives pixel (7, 5) 0.4978 and its mirror image (5, 5)
 * 0.6875), and it agrees with 64 x 64 samples. */
BACKEND_TEST(aperture, ellipse_overlap_is_mirror_symmetric)
{
    enum { W = 21, H = 21, K = 5, N = 4 * K };
    float px[W * H] = { 0 };
    px[10 * W + 10] = 1.0f;
    image m = image_new(*kind, W, H, px);
    static const double shape[K][6] = { /* dx, dy, a, b, theta, r */
                                        { 1.0, 0.5, 3.0, 2.0, 0.0, 0.5 },
                                        { 1.0, 0.5, 3.0, 2.0, PI / 2, 0.5 },
                                        { 0.5, 0.5, 2.0, 1.0, 0.0, 1.0 },
                                        { 2.0, 1.0, 4.0, 4.0, 0.0, 0.5 },
                                        { 0.5, 1.5, 3.0, 1.0, -PI / 2, 1.0 }
    };
    double x[N], y[N], a[N], b[N], th[N], r[N];
    for (int k = 0; k < K; k++)
        for (int q = 0; q < 4; q++) {
            const int i = 4 * k + q;
            x[i] = 10.0 + (q & 1 ? -shape[k][0] : shape[k][0]);
            y[i] = 10.0 + (q & 2 ? -shape[k][1] : shape[k][1]);
            a[i] = shape[k][2], b[i] = shape[k][3], th[i] = shape[k][4], r[i] = shape[k][5];
        }
    results g = results_new(N), s = results_new(N);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, g.sum, NULL, NULL, g.flag));
    o.subpix = 64;
    TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, s.sum, NULL, NULL, s.flag));
    for (int k = 0; k < K; k++) {
        cr_assert(g.sum[4 * k] > 0.1, "shape %d: the lit pixel is not in the ellipse (%g)", k, g.sum[4 * k]);
        for (int q = 1; q < 4; q++)
            cr_assert(fabs(g.sum[4 * k + q] - g.sum[4 * k]) <= 1e-14, "shape %d, mirror %d: %.17g, unmirrored %.17g", k,
                      q, g.sum[4 * k + q], g.sum[4 * k]);
        cr_assert(fabs(g.sum[4 * k] - s.sum[4 * k]) <= 2e-3, "shape %d: exact %.17g, 64 x 64 samples %.17g", k,
                  g.sum[4 * k], s.sum[4 * k]);
    }
    results_free(&g);
    results_free(&s);
    image_free(&m);
}

/* subpix k: each pixel counts 1/k² per sample centre inside; with k = 1, whole pixels by their centres. */
BACKEND_TEST(aperture, subpix_one_counts_pixel_centres)
{
    enum { W = 40, H = 40 };
    float *px = constant(W, H, 1.0f);
    image m = image_new(*kind, W, H, px);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.subpix = 1;
    const double x = 19.3, y = 20.1, r = 7.7;
    double want = 0;
    for (int iy = 0; iy < H; iy++)
        for (int ix = 0; ix < W; ix++) want += (ix - x) * (ix - x) + (iy - y) * (iy - y) < r * r;
    results got = results_new(1);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, &o, got.sum, NULL, got.area, got.flag));
    cr_assert(got.sum[0] == want && got.area[0] == want, "sum %g area %g, %g pixel centres", got.sum[0], got.area[0],
              want);
    results_free(&got);
    free(px);
    image_free(&m);
}

/* ---- options and flags ---- */

/* err σ: sumerr = σ sqrt(area); gain g adds sum / g; an rms map of σ everywhere is the same as err σ. */
BACKEND_TEST(aperture, errors_are_seps)
{
    enum { W = 50, H = 50 };
    float *px = constant(W, H, 10.0f), *rms = constant(W, H, 3.0f);
    image m = image_new(*kind, W, H, px);
    gpuws_buffer *drms = test_buffer_from(m.ctx, rms, sizeof(float) * W * H);
    const double x = 24.2, y = 25.9, r = 6.3;
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.err = 3.0;
    o.gain = 4.0;
    results a = results_new(1), b = results_new(1);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, &o, a.sum, a.err, a.area, a.flag));
    const double area = PI * r * r;
    cr_assert(fabs(a.area[0] - area) <= 1e-12 * area && fabs(a.sum[0] - 10 * area) <= 1e-11 * area);
    const double want = sqrt(9.0 * area + a.sum[0] / 4.0);
    cr_assert(fabs(a.err[0] - want) <= 1e-12 * want, "sumerr %.17g, sqrt(σ² area + sum / gain) = %.17g", a.err[0],
              want);
    o.err = 0.0;
    o.rms = drms;
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, &o, b.sum, b.err, b.area, b.flag));
    cr_assert(fabs(b.err[0] - a.err[0]) <= 1e-13 * a.err[0], "rms map %.17g, err %.17g", b.err[0], a.err[0]);
    results_free(&a);
    results_free(&b);
    gpuws_buffer_destroy(drms);
    free(px);
    free(rms);
    image_free(&m);
}

/* A background map in the options: every call gives, to the bit, what it gives on the image minus the map (computed
 * here in f32, as NumPy's data - bkg) without one; sums with the map differ from sums without it. A NaN in the map
 * makes the sums over it NaN, as a NaN pixel does. */
static bool same(double a, double b) { return a == b || (isnan(a) && isnan(b)); } /* NaN payloads may differ */

BACKEND_TEST(aperture, back_is_subtracted_from_every_pixel)
{
    enum { W = 97, H = 83, N = 300 };
    float *px = sky(W, H, 11), *bk = malloc(W * H * sizeof *bk), *diff = malloc(W * H * sizeof *diff);
    cr_assert(bk && diff);
    uint64_t seed = 12;
    for (size_t i = 0; i < W * H; i++) {
        bk[i] = (float)(95.0 + 0.1 * (double)(i % W) - 0.05 * (double)(i / W) + test_rand_uniform(&seed));
        diff[i] = px[i] - bk[i];
    }
    bk[40 * W + 50] = NAN;
    diff[40 * W + 50] = NAN;
    image m = image_new(*kind, W, H, px), d = image_new(*kind, W, H, diff);
    gpuws_buffer *dbk = test_buffer_from(m.ctx, bk, W * H * sizeof(float));
    uint8_t mask[W * H];
    for (size_t i = 0; i < W * H; i++) mask[i] = test_rand_uniform(&seed) < 0.02;
    mask[40 * W + 50] = 0;
    gpuws_buffer *mm = test_buffer_from(m.ctx, mask, sizeof mask), *dm = test_buffer_from(d.ctx, mask, sizeof mask);
    double col[6][N];
    for (size_t i = 0; i < N; i++) {
        col[0][i] = -3.0 + (W + 6.0) * test_rand_uniform(&seed);
        col[1][i] = -3.0 + (H + 6.0) * test_rand_uniform(&seed);
        col[3][i] = 0.8 + 2.0 * test_rand_uniform(&seed);
        col[2][i] = col[3][i] * (1.0 + test_rand_uniform(&seed));
        col[4][i] = (test_rand_uniform(&seed) - 0.5) * PI;
        col[5][i] = 0.5 + 4.0 * test_rand_uniform(&seed);
    }
    col[0][0] = 50.0, col[1][0] = 40.0; /* over the NaN of the map */
    const double *x = col[0], *y = col[1], *a = col[2], *b = col[3], *th = col[4], *r = col[5];
    gpuws_aperture_options wo = GPUWS_APERTURE_OPTIONS_INIT, no = GPUWS_APERTURE_OPTIONS_INIT;
    wo.err = no.err = 2.0;
    wo.gain = no.gain = 3.0;
    wo.mask = mm, no.mask = dm;
    gpuws_aperture_options ro = wo; /* the image itself */
    wo.back = dbk;
    for (call c = CIRCLE; c <= AUTO; c++) {
        results g = results_new(N), w = results_new(N), raw = results_new(N);
        memset(g.kr, 0, N * 8), memset(w.kr, 0, N * 8), memset(raw.kr, 0, N * 8);
        if (c == CIRCLE) {
            TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, &wo, g.sum, g.err, g.area, g.flag));
            TEST_OK(gpuws_sum_circle(NULL, W, H, d.dimg, N, x, y, r, &no, w.sum, w.err, w.area, w.flag));
            TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, &ro, raw.sum, raw.err, raw.area, raw.flag));
        } else if (c == ELLIPSE) {
            TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &wo, g.sum, g.err, g.area, g.flag));
            TEST_OK(gpuws_sum_ellipse(NULL, W, H, d.dimg, N, x, y, a, b, th, r, &no, w.sum, w.err, w.area, w.flag));
            TEST_OK(
                gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &ro, raw.sum, raw.err, raw.area, raw.flag));
        } else if (c == KRON) {
            TEST_OK(gpuws_kron_radius(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &wo, g.kr, g.flag));
            TEST_OK(gpuws_kron_radius(NULL, W, H, d.dimg, N, x, y, a, b, th, r, &no, w.kr, w.flag));
            TEST_OK(gpuws_kron_radius(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &ro, raw.kr, raw.flag));
        } else {
            TEST_OK(gpuws_flux_auto(NULL, W, H, m.dimg, N, x, y, a, b, th, &wo, g.kr, g.sum, g.err, g.area, g.flag));
            TEST_OK(gpuws_flux_auto(NULL, W, H, d.dimg, N, x, y, a, b, th, &no, w.kr, w.sum, w.err, w.area, w.flag));
            TEST_OK(gpuws_flux_auto(NULL, W, H, m.dimg, N, x, y, a, b, th, &ro, raw.kr, raw.sum, raw.err, raw.area,
                                    raw.flag));
        }
        size_t changed = 0;
        for (size_t i = 0; i < N; i++) {
            const bool kr_same = c == CIRCLE || c == ELLIPSE || same(g.kr[i], w.kr[i]);
            const bool sums_same =
                c == KRON || (same(g.sum[i], w.sum[i]) && same(g.err[i], w.err[i]) && same(g.area[i], w.area[i]));
            cr_assert(kr_same && sums_same && g.flag[i] == w.flag[i],
                      "call %d, aperture %zu: with the map kronrad %.17g sum %.17g sumerr %.17g area %.17g flag %#x; "
                      "on image - map %.17g %.17g %.17g %.17g %#x",
                      (int)c, i, g.kr[i], g.sum[i], g.err[i], g.area[i], g.flag[i], w.kr[i], w.sum[i], w.err[i],
                      w.area[i], w.flag[i]);
            changed += c == KRON ? g.kr[i] != raw.kr[i] : g.sum[i] != raw.sum[i];
        }
        cr_assert_gt(changed, N / 2, "call %d: the map changed only %zu of %d results", (int)c, changed, (int)N);
        if (c == CIRCLE || c == ELLIPSE)
            cr_assert(isnan(g.sum[0]) && !isnan(raw.sum[0]), "call %d: the map's NaN: sum %g, without the map %g",
                      (int)c, g.sum[0], raw.sum[0]);
        results_free(&g);
        results_free(&w);
        results_free(&raw);
    }
    gpuws_buffer_destroy(dbk);
    gpuws_buffer_destroy(mm);
    gpuws_buffer_destroy(dm);
    free(px);
    free(bk);
    free(diff);
    image_free(&m);
    image_free(&d);
}

/* SEP's mask correction scales the unmasked sum to the whole aperture: on a constant image the sum is unchanged by
 * a partial mask (HASMASKED); wholly masked, the sum is NaN (ALLMASKED). */
BACKEND_TEST(aperture, mask_scales_to_the_whole_aperture)
{
    enum { W = 40, H = 30 };
    float *px = constant(W, H, 2.0f);
    uint8_t mask[W * H] = { 0 };
    for (int iy = 10; iy < 20; iy++)
        for (int ix = 5; ix < 15; ix++) mask[iy * W + ix] = (uint8_t)(1 + ix);
    image m = image_new(*kind, W, H, px);
    gpuws_buffer *dmask = test_buffer_from(m.ctx, mask, sizeof mask);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.mask = dmask;
    o.err = 1.0;
    const double x[3] = { 14.5, 9.5, 30.0 }, y[3] = { 15.0, 14.5, 15.0 }, r[3] = { 4.0, 3.0, 4.0 };
    results g = results_new(3);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 3, x, y, r, &o, g.sum, g.err, g.area, g.flag));
    cr_assert(g.flag[0] == GPUWS_APER_HASMASKED && fabs(g.sum[0] - 2 * PI * 16) <= 1e-11,
              "half masked: flag %#x sum %.17g", g.flag[0], g.sum[0]);
    cr_assert(fabs(g.err[0] - sqrt(PI * 16)) <= 1e-12, "half masked: sumerr %.17g", g.err[0]);
    cr_assert(g.flag[1] == (GPUWS_APER_HASMASKED | GPUWS_APER_ALLMASKED) && isnan(g.sum[1]),
              "wholly masked: flag %#x sum %g", g.flag[1], g.sum[1]);
    cr_assert(g.flag[2] == 0 && fabs(g.sum[2] - 2 * PI * 16) <= 1e-11, "unmasked: flag %#x sum %.17g", g.flag[2],
              g.sum[2]);
    results_free(&g);
    gpuws_buffer_destroy(dmask);
    free(px);
    image_free(&m);
}

/* TRUNC where SEP's box leaves the image; an aperture wholly outside sums to 0. SEP's box starts at column
 * (int)(x - r + 0.5), a conversion toward zero: on the low sides an aperture reaching less than a pixel past the
 * edge is cut without the flag, and gpuws keeps SEP's flags. */
BACKEND_TEST(aperture, apertures_across_the_edge_are_truncated)
{
    enum { W = 30, H = 20, N = 6 };
    float *px = constant(W, H, 1.0f);
    image m = image_new(*kind, W, H, px);
    const double x[N] = { 2.0, 0.5, 1.0, 15.0, -50.0, 15.0 }, y[N] = { 10.0, 10.0, 10.0, 10.0, 10.0, 10.0 };
    const double r[N] = { 2.4, 2.4, 2.4, 3.0, 5.0, 12.0 }, full = PI * 2.4 * 2.4;
    results g = results_new(N);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, NULL, g.sum, g.err, g.area, g.flag));
    cr_assert(g.flag[0] == 0 && fabs(g.sum[0] - full) <= 1e-12 * full,
              "x - r = -0.4, inside the image's edge at "
              "-0.5: flag %#x sum %.17g",
              g.flag[0], g.sum[0]);
    cr_assert(g.flag[1] == GPUWS_APER_TRUNC && g.sum[1] < full - 1, "x - r = -1.9: flag %#x sum %.17g", g.flag[1],
              g.sum[1]);
    cr_assert(g.flag[2] == 0 && g.sum[2] < full - 0.1, "x - r = -1.4 (SEP: not flagged): flag %#x sum %.17g", g.flag[2],
              g.sum[2]);
    cr_assert(g.flag[3] == 0, "inside: flag %#x", g.flag[3]);
    cr_assert(g.flag[4] == GPUWS_APER_TRUNC && g.sum[4] == 0.0 && g.area[4] == 0.0, "outside: flag %#x sum %g",
              g.flag[4], g.sum[4]);
    cr_assert(g.flag[5] == GPUWS_APER_TRUNC && g.area[5] < PI * 144, "larger than the image: flag %#x", g.flag[5]);
    results_free(&g);
    free(px);
    image_free(&m);
}

/* Kron radius: Σ d × pixel / Σ pixel; a source at the centre alone is 0 (NONPOSITIVE); an annulus of ones at
 * distance 3 gives 3; everything masked is ALLMASKED. */
BACKEND_TEST(aperture, kron_radius_is_the_first_moment_of_distance)
{
    enum { W = 21, H = 21 };
    float px[W * H] = { 0 };
    px[10 * W + 13] = px[10 * W + 7] = px[13 * W + 10] = px[7 * W + 10] = 1.0f; /* at distance 3 from (10, 10) */
    px[0] = -1e31f;                                                             /* below -1e30: masked */
    image m = image_new(*kind, W, H, px);
    const double x[3] = { 10.0, 10.0, 0.0 }, y[3] = { 10.0, 10.0, 0.0 }, a[3] = { 1, 1, 1 }, b[3] = { 1, 1, 1 };
    const double th[3] = { 0, 0, 0 }, r[3] = { 6.0, 2.0, 0.5 };
    results g = results_new(3);
    TEST_OK(gpuws_kron_radius(NULL, W, H, m.dimg, 3, x, y, a, b, th, r, NULL, g.kr, g.flag));
    cr_assert(g.kr[0] == 3.0 && g.flag[0] == 0, "annulus: kronrad %.17g flag %#x", g.kr[0], g.flag[0]);
    cr_assert(g.kr[1] == 0.0 && g.flag[1] == GPUWS_APER_NONPOSITIVE, "empty: kronrad %g flag %#x", g.kr[1], g.flag[1]);
    cr_assert(g.kr[2] == 0.0 && g.flag[2] == (GPUWS_APER_HASMASKED | GPUWS_APER_ALLMASKED),
              "masked pixel alone: kronrad %g flag %#x", g.kr[2], g.flag[2]);
    results_free(&g);
    image_free(&m);
}

/* flux_auto: the ellipse of 2.5 Kron radii, or the circle of 1.75 pixels for a compact object; options' 0 fields
 * are the defaults. */
BACKEND_TEST(aperture, flux_auto_falls_back_to_the_circle)
{
    enum { W = 41, H = 41 };
    float *px = constant(W, H, 0.0f);
    for (int iy = 0; iy < H; iy++)
        for (int ix = 0; ix < W; ix++) {
            const double d2 = (ix - 20) * (ix - 20) + (iy - 20) * (iy - 20);
            px[iy * W + ix] = (float)(100.0 * exp(-d2 / 18.0));
        }
    px[5 * W + 5] = 50.0f; /* a one-pixel object: Kron radius 0, the circle */
    image m = image_new(*kind, W, H, px);
    const double x[2] = { 20.0, 5.0 }, y[2] = { 20.0, 5.0 }, a[2] = { 3.0, 1.0 }, b[2] = { 3.0, 1.0 };
    const double th[2] = { 0.0, 0.0 };
    gpuws_aperture_options z;
    memset(&z, 0, sizeof z);
    results g = results_new(2), w = results_new(2);
    TEST_OK(gpuws_flux_auto(NULL, W, H, m.dimg, 2, x, y, a, b, th, &z, g.kr, g.sum, g.err, g.area, g.flag));
    const gpuws__aperture_host ho = { NULL, 0.0, 0.0, NULL, 0, NULL };
    gpuws_flux_auto_ref(px, W, H, &ho, 6.0, 2.5, 1.75, 2, x, y, a, b, th, w.kr, w.sum, w.err, w.area, w.flag);
    const double r = 2.5 * g.kr[0] * 3.0;
    cr_assert(g.kr[0] > 1.0 && fabs(g.area[0] - PI * r * r) <= 1e-9 * r * r,
              "object: kronrad %g area %.17g, want "
              "π (2.5 kronrad a)² = %.17g",
              g.kr[0], g.area[0], PI * r * r);
    cr_assert(fabs(g.area[1] - PI * 1.75 * 1.75) <= 1e-12 && g.flag[1] == 0 && fabs(g.sum[1] - 50.0) <= 1e-6,
              "one pixel: area %.17g sum %.17g flag %#x", g.area[1], g.sum[1], g.flag[1]);
    for (int i = 0; i < 2; i++)
        cr_assert(g.flag[i] == w.flag[i] && fabs(g.sum[i] - w.sum[i]) <= 1e-10 * fabs(w.sum[i]) &&
                      fabs(g.kr[i] - w.kr[i]) <= 1e-12 * w.kr[i],
                  "object %d: against the reference", i);
    results_free(&g);
    results_free(&w);
    free(px);
    image_free(&m);
}

/* A NaN pixel in the Kron ellipse makes the Kron radius NaN, and flux_auto's sum and error NaN with area 0 (SEP's
 * sum_ellipse would refuse the NaN radius); the other objects are unaffected. */
BACKEND_TEST(aperture, flux_auto_of_a_nan_kron_radius_is_nan)
{
    enum { W = 40, H = 30 };
    float *px = constant(W, H, 1.0f);
    px[10 * W + 11] = NAN;
    image m = image_new(*kind, W, H, px);
    const double x[2] = { 10.0, 30.0 }, y[2] = { 10.0, 15.0 }, a[2] = { 2.0, 2.0 }, b[2] = { 1.0, 1.0 };
    const double th[2] = { 0.5, 0.5 };
    results g = results_new(2);
    TEST_OK(gpuws_flux_auto(NULL, W, H, m.dimg, 2, x, y, a, b, th, NULL, g.kr, g.sum, g.err, g.area, g.flag));
    cr_assert(isnan(g.kr[0]) && isnan(g.sum[0]) && isnan(g.err[0]) && g.area[0] == 0.0 && g.flag[0] == 0,
              "NaN pixel: kronrad %g sum %g sumerr %g area %g flag %#x", g.kr[0], g.sum[0], g.err[0], g.area[0],
              g.flag[0]);
    cr_assert(g.kr[1] > 0 && fabs(g.sum[1] - g.area[1]) <= 1e-12 * g.area[1], "the other object: kronrad %g sum %g",
              g.kr[1], g.sum[1]);
    results_free(&g);
    free(px);
    image_free(&m);
}

/* NULL options, a zeroed struct and GPUWS_APERTURE_OPTIONS_INIT are the same; n = 0 writes nothing. */
BACKEND_TEST(aperture, default_options_and_no_apertures)
{
    enum { W = 30, H = 30 };
    float *px = sky(W, H, 3);
    image m = image_new(*kind, W, H, px);
    const double x = 14.3, y = 15.8, r = 5.5;
    gpuws_aperture_options d = GPUWS_APERTURE_OPTIONS_INIT, z;
    memset(&z, 0, sizeof z);
    results a = results_new(1), b = results_new(1), c = results_new(1);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, NULL, a.sum, a.err, a.area, a.flag));
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, &d, b.sum, b.err, b.area, b.flag));
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 1, &x, &y, &r, &z, c.sum, c.err, c.area, c.flag));
    cr_assert(a.sum[0] == b.sum[0] && a.sum[0] == c.sum[0] && a.area[0] == c.area[0] && a.err[0] == 0.0);
    double poison = 12345.0;
    int fpoison = 77;
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 0, NULL, NULL, NULL, NULL, &poison, NULL, NULL, &fpoison));
    cr_assert(poison == 12345.0 && fpoison == 77, "n = 0 wrote an output");
    results_free(&a);
    results_free(&b);
    results_free(&c);
    free(px);
    image_free(&m);
}

/* ---- from host memory ---- */

/* The _host calls with a budget of 96 rows (the apertures of a 400-row image in five windows or more, boxes on the
 * windows' edges and across the image's, some wholly outside, on whole and half rows) give the device calls' results
 * bit for bit: sums, errors, areas, Kron radii and flags, of all four calls, with a scalar error and with the maps
 * (background, rms, mask), exact and sampled. */
BACKEND_TEST(aperture, host_calls_give_the_device_calls_bits)
{
    enum { W = 97, H = 400, N = 500, ROWS = 96 };
    float *px = sky(W, H, 11), *back = malloc(W * H * sizeof *back), *rms = malloc(W * H * sizeof *rms);
    uint8_t *mask = malloc(W * H);
    double *x = malloc(6 * N * sizeof *x), *y = x + N, *a = y + N, *b = a + N, *th = b + N, *r = th + N;
    cr_assert(back && rms && mask && x);
    uint64_t seed = 0x4057;
    for (size_t i = 0; i < (size_t)W * H; i++) {
        back[i] = (float)(99.0 + 2.0 * test_rand_uniform(&seed));
        rms[i] = (float)(4.0 + test_rand_uniform(&seed));
        mask[i] = test_rand_uniform(&seed) < 0.01;
    }
    for (size_t i = 0; i < N; i++) {
        x[i] = -6.0 + (W + 12.0) * test_rand_uniform(&seed);
        y[i] = i % 5 == 0   ? (double)(i * 7 % H)
               : i % 5 == 1 ? (double)(i * 11 % H) + 0.5
                            : -6.0 + (H + 12.0) * test_rand_uniform(&seed);
        b[i] = 0.8 + 0.7 * test_rand_uniform(&seed);
        a[i] = b[i] * (1.0 + 0.9 * test_rand_uniform(&seed));
        th[i] = (test_rand_uniform(&seed) - 0.5) * PI;
        r[i] = 9.0 * test_rand_uniform(&seed);
    }
    x[0] = -40.0, x[1] = W + 40.0, y[2] = -40.0, y[3] = H + 40.0; /* wholly outside */
    for (size_t i = 4; i < N; i++) /* a source at each aperture: Kron radii of a few pixels, not of the noise */
        for (int dy = -3; dy <= 3; dy++)
            for (int dx = -3; dx <= 3; dx++) {
                const long ix = lround(x[i]) + dx, iy = lround(y[i]) + dy;
                if (ix >= 0 && ix < W && iy >= 0 && iy < H)
                    px[iy * W + ix] += (float)(500.0 * exp(-0.5 * (dx * dx + dy * dy)));
            }
    image m = image_new(*kind, W, H, px);
    gpuws_buffer *dback = test_buffer_from(m.ctx, back, W * H * sizeof *back),
                 *drms = test_buffer_from(m.ctx, rms, W * H * sizeof *rms),
                 *dmask = test_buffer_from(m.ctx, mask, W * H);
    for (int variant = 0; variant < 3; variant++) {
        gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT, ho = o;
        gpuws_aperture_host_options h = GPUWS_APERTURE_HOST_OPTIONS_INIT;
        h.aperture = &ho;
        h.max_device_bytes = (uint64_t)N * 168 + (uint64_t)ROWS * W * 13;
        if (variant == 0) {
            o.err = ho.err = 2.0, o.gain = ho.gain = 1.5;
        } else {
            o.back = dback, o.rms = drms, o.mask = dmask;
            h.back = back, h.rms = rms, h.mask = mask;
            o.subpix = ho.subpix = variant == 2 ? 5 : 0;
        }
        for (call c = CIRCLE; c <= AUTO; c++) {
            results d = results_new(N), g = results_new(N);
            gpuws_status sd, sg;
            if (c == CIRCLE) {
                sd = gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, &o, d.sum, d.err, d.area, d.flag);
                sg = gpuws_sum_circle_host(m.ctx, W, H, px, N, x, y, r, &h, g.sum, g.err, g.area, g.flag);
            } else if (c == ELLIPSE) {
                sd = gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, d.sum, d.err, d.area, d.flag);
                sg = gpuws_sum_ellipse_host(m.ctx, W, H, px, N, x, y, a, b, th, r, &h, g.sum, g.err, g.area, g.flag);
            } else if (c == KRON) {
                sd = gpuws_kron_radius(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, d.kr, d.flag);
                sg = gpuws_kron_radius_host(m.ctx, W, H, px, N, x, y, a, b, th, r, &h, g.kr, g.flag);
            } else {
                sd = gpuws_flux_auto(NULL, W, H, m.dimg, N, x, y, a, b, th, &o, d.kr, d.sum, d.err, d.area, d.flag);
                sg = gpuws_flux_auto_host(m.ctx, W, H, px, N, x, y, a, b, th, &h, g.kr, g.sum, g.err, g.area, g.flag);
            }
            TEST_OK(sd);
            TEST_OK(sg);
            for (size_t i = 0; i < N; i++) {
                const bool kr = c == KRON || c == AUTO, sums = c != KRON;
                cr_assert(
                    g.flag[i] == d.flag[i] && (!kr || same(g.kr[i], d.kr[i])) &&
                        (!sums || (same(g.sum[i], d.sum[i]) && same(g.err[i], d.err[i]) && same(g.area[i], d.area[i]))),
                    "variant %d, call %d, aperture %zu at (%.17g, %.17g): host kr %.17g sum %.17g err %.17g "
                    "area %.17g flag %#x; device %.17g %.17g %.17g %.17g %#x",
                    variant, (int)c, i, x[i], y[i], kr ? g.kr[i] : 0.0, sums ? g.sum[i] : 0.0, sums ? g.err[i] : 0.0,
                    sums ? g.area[i] : 0.0, g.flag[i], kr ? d.kr[i] : 0.0, sums ? d.sum[i] : 0.0, sums ? d.err[i] : 0.0,
                    sums ? d.area[i] : 0.0, d.flag[i]);
            }
            results_free(&d);
            results_free(&g);
        }
    }
    gpuws_buffer_destroy(dback);
    gpuws_buffer_destroy(drms);
    gpuws_buffer_destroy(dmask);
    image_free(&m);
    free(px), free(back), free(rms), free(mask), free(x);
}

/* A budget that holds the tallest box's rows and no more than that still sums every aperture (a window each, at
 * worst); one row fewer is refused with the rows and bytes it needs, and nothing is written. */
BACKEND_TEST(aperture, host_budget_must_hold_the_tallest_box)
{
    enum { W = 50, H = 120 };
    float *px = sky(W, H, 5);
    image m = image_new(*kind, W, H, px);
    const double x[3] = { 10.0, 30.0, 25.0 }, y[3] = { 20.0, 100.0, 60.0 }, r[3] = { 4.0, 3.0, 14.6 };
    /* the third box: rows (int)(60 - 14.6 + 0.5) = 45 to (int)(60 + 14.6 + 1.4999999) = 76, 31 rows */
    results d = results_new(3), g = results_new(3);
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, 3, x, y, r, NULL, d.sum, d.err, d.area, d.flag));
    gpuws_aperture_host_options h = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    h.max_device_bytes = 3 * 168 + 31 * W * 4;
    TEST_OK(gpuws_sum_circle_host(m.ctx, W, H, px, 3, x, y, r, &h, g.sum, g.err, g.area, g.flag));
    for (int i = 0; i < 3; i++) cr_assert(same(g.sum[i], d.sum[i]) && g.flag[i] == d.flag[i], "aperture %d", i);
    h.max_device_bytes -= W * 4; /* refused on the CPU backend too, which reads the caller's arrays */
    g.sum[0] = 12345.0;
    cr_assert_eq(gpuws_sum_circle_host(m.ctx, W, H, px, 3, x, y, r, &h, g.sum, g.err, g.area, g.flag),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(gpuws_last_error(), "aperture 2's box spans 31 rows") &&
                  strstr(gpuws_last_error(), "need 6704 bytes"),
              "%s", gpuws_last_error());
    cr_assert(g.sum[0] == 12345.0, "a refused call wrote its output");
    results_free(&d);
    results_free(&g);
    free(px);
    image_free(&m);
}

/* The _host calls given some rows of the image (options' row0 and rows: an MPI rank's rows and a halo), in arrays
 * of their own, give the whole image's results bit for bit for the apertures whose boxes lie in those rows: the
 * image's top and bottom rows (boxes clipped there keep their TRUNC flag) and rows inside it, in windows of 30 rows
 * on a GPU. An aperture whose box leaves the rows, and rows outside the image, are refused; nothing is written. */
BACKEND_TEST(aperture, host_calls_on_some_rows_give_the_whole_images_bits)
{
    enum { W = 61, H = 150, N = 90, PARTS = 3 };
    static const size_t part[PARTS][2] = { { 0, 40 }, { 40, 70 }, { 110, 40 } }; /* row0, rows */
    float *px = sky(W, H, 23), *back = malloc(W * H * sizeof *back), *rms = malloc(W * H * sizeof *rms);
    uint8_t *mask = malloc(W * H);
    double *x = malloc(6 * N * sizeof *x), *y = x + N, *a = y + N, *b = a + N, *th = b + N, *r = th + N;
    cr_assert(back && rms && mask && x);
    uint64_t seed = 0x7033;
    for (size_t i = 0; i < (size_t)W * H; i++) {
        back[i] = (float)(99.0 + 2.0 * test_rand_uniform(&seed));
        rms[i] = (float)(4.0 + test_rand_uniform(&seed));
        mask[i] = test_rand_uniform(&seed) < 0.01;
    }
    /* a third of them a part each: 14 rows or more from its edges inside the image, across the image's own edges */
    for (size_t i = 0; i < N; i++) {
        const size_t *p = part[i % PARTS];
        const double lo = p[0] ? p[0] + 14.0 : -4.0, hi = p[0] + p[1] < H ? p[0] + p[1] - 14.0 : H + 4.0;
        x[i] = -4.0 + (W + 8.0) * test_rand_uniform(&seed);
        y[i] = lo + (hi - lo) * test_rand_uniform(&seed);
        b[i] = 0.8 + 0.7 * test_rand_uniform(&seed);
        a[i] = b[i] * (1.0 + 0.9 * test_rand_uniform(&seed));
        th[i] = (test_rand_uniform(&seed) - 0.5) * PI;
        r[i] = 4.0 * test_rand_uniform(&seed);
    }
    image m = image_new(*kind, W, H, px);
    gpuws_buffer *dback = test_buffer_from(m.ctx, back, W * H * sizeof *back),
                 *drms = test_buffer_from(m.ctx, rms, W * H * sizeof *rms),
                 *dmask = test_buffer_from(m.ctx, mask, W * H);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.back = dback, o.rms = drms, o.mask = dmask;
    results d[3] = { results_new(N), results_new(N), results_new(N) };
    TEST_OK(gpuws_sum_circle(NULL, W, H, m.dimg, N, x, y, r, &o, d[0].sum, d[0].err, d[0].area, d[0].flag));
    TEST_OK(gpuws_sum_ellipse(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, d[1].sum, d[1].err, d[1].area, d[1].flag));
    TEST_OK(gpuws_kron_radius(NULL, W, H, m.dimg, N, x, y, a, b, th, r, &o, d[2].kr, d[2].flag));
    for (int k = 0; k < PARTS; k++) {
        const size_t row0 = part[k][0], rows = part[k][1], n = rows * W;
        float *pp = malloc(n * sizeof *pp), *pb = malloc(n * sizeof *pb), *pr = malloc(n * sizeof *pr);
        uint8_t *pm = malloc(n);
        double *q = malloc(6 * N * sizeof *q);
        size_t *at = malloc(N * sizeof *at), c = 0;
        cr_assert(pp && pb && pr && pm && q && at);
        memcpy(pp, px + row0 * W, n * sizeof *pp), memcpy(pb, back + row0 * W, n * sizeof *pb);
        memcpy(pr, rms + row0 * W, n * sizeof *pr), memcpy(pm, mask + row0 * W, n);
        for (size_t i = k; i < N; i += PARTS, c++)
            for (int v = 0; v < 6; v++) q[v * N + c] = x[v * N + i], at[c] = i;
        gpuws_aperture_host_options h = GPUWS_APERTURE_HOST_OPTIONS_INIT;
        h.back = pb, h.rms = pr, h.mask = pm, h.row0 = row0, h.rows = rows;
        h.max_device_bytes = (uint64_t)N * 168 + (uint64_t)30 * W * 13;
        const double *qx = q, *qy = q + N, *qa = qy + N, *qb = qa + N, *qt = qb + N, *qr = qt + N;
        results g[3] = { results_new(N), results_new(N), results_new(N) };
        TEST_OK(gpuws_sum_circle_host(m.ctx, W, H, pp, c, qx, qy, qr, &h, g[0].sum, g[0].err, g[0].area, g[0].flag));
        TEST_OK(gpuws_sum_ellipse_host(m.ctx, W, H, pp, c, qx, qy, qa, qb, qt, qr, &h, g[1].sum, g[1].err, g[1].area,
                                       g[1].flag));
        TEST_OK(gpuws_kron_radius_host(m.ctx, W, H, pp, c, qx, qy, qa, qb, qt, qr, &h, g[2].kr, g[2].flag));
        int trunc = 0;
        for (size_t j = 0; j < c; j++)
            for (int cl = 0; cl < 3; cl++) {
                const results *e = &d[cl], *f = &g[cl];
                const size_t i = at[j];
                trunc += (f->flag[j] & GPUWS_APER_TRUNC) != 0;
                cr_assert(f->flag[j] == e->flag[i] &&
                              (cl == 2 ? same(f->kr[j], e->kr[i])
                                       : same(f->sum[j], e->sum[i]) && same(f->err[j], e->err[i]) &&
                                             same(f->area[j], e->area[i])),
                          "rows %zu to %zu, call %d, aperture %zu at (%.17g, %.17g): flag %#x against %#x", row0,
                          row0 + rows - 1, cl, i, x[i], y[i], f->flag[j], e->flag[i]);
            }
        cr_assert(trunc > 0, "rows %zu to %zu: no aperture crosses the image's edge", row0, row0 + rows - 1);
        if (k == 1) { /* one aperture whose box leaves the rows, then rows the image lacks */
            const double yo = row0 + 2.0, ro = 3.0;
            g[0].sum[0] = 12345.0;
            cr_assert_eq(gpuws_sum_circle_host(m.ctx, W, H, pp, 1, qx, &yo, &ro, &h, g[0].sum, NULL, NULL, g[0].flag),
                         GPUWS_ERR_INVALID_ARGUMENT);
            cr_assert(strstr(gpuws_last_error(), "aperture 0's box spans rows 39 to 45") &&
                          strstr(gpuws_last_error(), "hold rows 40 to 109"),
                      "%s", gpuws_last_error());
            cr_assert(g[0].sum[0] == 12345.0, "a refused call wrote its output");
            h.row0 = H - 10;
            cr_assert_eq(gpuws_sum_circle_host(m.ctx, W, H, pp, c, qx, qy, qr, &h, g[0].sum, NULL, NULL, g[0].flag),
                         GPUWS_ERR_INVALID_ARGUMENT);
            cr_assert(strstr(gpuws_last_error(), "row0 140 and rows 70 are not rows of the image's 150"), "%s",
                      gpuws_last_error());
            h.row0 = 5, h.rows = 0;
            cr_assert_eq(gpuws_sum_circle_host(m.ctx, W, H, pp, c, qx, qy, qr, &h, g[0].sum, NULL, NULL, g[0].flag),
                         GPUWS_ERR_INVALID_ARGUMENT);
            cr_assert(g[0].sum[0] == 12345.0, "a refused call wrote its output");
            /* flux_auto: aperture 0's Kron ellipse holds a NaN (no second sum), 1's AUTO ellipse is tiny, 2's, ten
             * Kron radii wide, leaves the rows: named as the caller's aperture 2, not as the second of the sums */
            const double fx[3] = { 10.0, 30.0, 50.0 }, fy[3] = { 75.0, 75.0, 98.0 };
            const double fa[3] = { 1.5, 0.05, 1.5 }, fth[3] = { 0.0, 0.0, 0.0 };
            gpuws_aperture_options ao = GPUWS_APERTURE_OPTIONS_INIT;
            ao.kron_factor = 10.0, ao.kron_rmin = 1e-6;
            h.row0 = row0, h.rows = rows, h.aperture = &ao, h.mask = NULL;
            const float keep = pp[(75 - row0) * W + 10];
            pp[(75 - row0) * W + 10] = NAN;
            cr_assert_eq(gpuws_flux_auto_host(m.ctx, W, H, pp, 3, fx, fy, fa, fa, fth, &h, NULL, g[0].sum, NULL, NULL,
                                              g[0].flag),
                         GPUWS_ERR_INVALID_ARGUMENT);
            cr_assert(strstr(gpuws_last_error(), "aperture 2's box spans rows"), "%s", gpuws_last_error());
            cr_assert(g[0].sum[0] == 12345.0, "a refused call wrote its output");
            pp[(75 - row0) * W + 10] = keep;
        }
        for (int cl = 0; cl < 3; cl++) results_free(&g[cl]);
        free(pp), free(pb), free(pr), free(pm), free(q), free(at);
    }
    for (int cl = 0; cl < 3; cl++) results_free(&d[cl]);
    gpuws_buffer_destroy(dback);
    gpuws_buffer_destroy(drms);
    gpuws_buffer_destroy(dmask);
    image_free(&m);
    free(px), free(back), free(rms), free(mask), free(x);
}
