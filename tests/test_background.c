/* background: SExtractor's / SEP's mesh background on every backend.
 *
 * Truth: SEP itself (sep.Background, ctest background_sep: tests/sep/compare_background.py), against which the
 * reference (kernels/background/background_ref.c) agrees within 1e-6 relative; here the reference is the oracle for
 * every backend. What must hold (docs/algorithms/background.md): every backend gives the reference's back and rms
 * maps, globalback, globalrms and bad-mesh count bit for bit. Every step adds in the same order everywhere (a mesh's
 * pixel sums in 256 lanes, then the lanes pairwise) and no compiler fuses a multiply-add, so nothing is left to
 * differ; a bright flat sky, whose f64 sums lose bits in every mesh, shows any other order of addition.
 * Then the edge cases the header defines: constant images, one mesh, bad meshes, masks as NaNs, default options,
 * f64 images. */
#include "support.h"
#include "background/background_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data ---- */

static double gauss(uint64_t *s)
{
    const double u1 = test_rand_uniform(s), u2 = test_rand_uniform(s);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

/* A level with a gradient, Gaussian noise, Gaussian sources; NaN in the first nan_cols columns. */
static float *make_sky_at(size_t w, size_t h, uint64_t seed, size_t nan_cols, double level, double noise)
{
    float *x = malloc(w * h * sizeof *x);
    cr_assert(x);
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++)
            x[r * w + c] = (float)(level + 0.01 * (double)c + 0.02 * (double)r + noise * gauss(&seed));
    for (size_t k = 0; k < w * h / 2000 + 1; k++) {
        const size_t sr = test_rand_u64(&seed) % h, sc = test_rand_u64(&seed) % w;
        const double amp = 20.0 + 500.0 * test_rand_uniform(&seed);
        for (size_t r = sr >= 8 ? sr - 8 : 0; r <= sr + 8 && r < h; r++)
            for (size_t c = sc >= 8 ? sc - 8 : 0; c <= sc + 8 && c < w; c++) {
                const double dr = (double)r - (double)sr, dc = (double)c - (double)sc;
                x[r * w + c] += (float)(amp * exp(-(dr * dr + dc * dc) / 8.0));
            }
    }
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < nan_cols && c < w; c++) x[r * w + c] = NAN;
    return x;
}

/* Level 100, noise σ = 5. */
static float *make_sky(size_t w, size_t h, uint64_t seed, size_t nan_cols)
{
    return make_sky_at(w, h, seed, nan_cols, 100.0, 5.0);
}

typedef struct {
    float *back, *rms;
    gpuws_background_result r;
} maps;

static void maps_free(maps *m)
{
    free(m->back);
    free(m->rms);
}

/* gpuws_background on ctx of w*h pixels of dtype at x; mask NULL or w*h bytes; o NULL for the defaults. */
static maps run_dtype(gpuws_context *ctx, gpuws_dtype dtype, const void *x, const uint8_t *mask, size_t w, size_t h,
                      gpuws_background_options *o)
{
    const size_t n = w * h;
    gpuws_buffer *img = test_buffer_from(ctx, x, n * (dtype == GPUWS_F64 ? 8 : 4)), *m = NULL;
    gpuws_buffer *back = test_buffer(ctx, n * sizeof(float)), *rms = test_buffer(ctx, n * sizeof(float));
    if (mask) {
        cr_assert(o, "a mask goes in the options");
        m = test_buffer_from(ctx, mask, n);
        o->mask = m;
    }
    maps out;
    memset(&out.r, TEST_POISON_BYTE, sizeof out.r);
    TEST_OK(gpuws_background(NULL, dtype, w, h, img, o, back, rms, &out.r));
    test_check_guard(back, n * sizeof(float), "back");
    test_check_guard(rms, n * sizeof(float), "rms");
    out.back = test_download(back, n * sizeof(float));
    out.rms = test_download(rms, n * sizeof(float));
    if (o) o->mask = NULL;
    gpuws_buffer_destroy(img);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(back);
    gpuws_buffer_destroy(rms);
    return out;
}

static maps run_on(gpuws_context *ctx, const float *x, const uint8_t *mask, size_t w, size_t h,
                   gpuws_background_options *o)
{
    return run_dtype(ctx, GPUWS_F32, x, mask, w, h, o);
}

static maps reference(const float *x, const uint8_t *mask, size_t w, size_t h, const gpuws_background_options *o)
{
    const gpuws_background_options d = GPUWS_BACKGROUND_OPTIONS_INIT;
    maps out;
    memset(&out, 0, sizeof out);
    out.back = malloc(w * h * sizeof(float));
    out.rms = malloc(w * h * sizeof(float));
    cr_assert(out.back && out.rms);
    cr_assert_eq(gpuws_background_ref(x, mask, w, h, o ? o : &d, out.back, out.rms, &out.r), GPUWS_OK);
    return out;
}

static void expect_same(const char *what, const maps *got, const maps *want, size_t n)
{
    cr_assert(got->r.globalback == want->r.globalback && got->r.globalrms == want->r.globalrms,
              "%s: globalback %.9g globalrms %.9g, reference %.9g %.9g", what, got->r.globalback, got->r.globalrms,
              want->r.globalback, want->r.globalrms);
    cr_assert(got->r.nx == want->r.nx && got->r.ny == want->r.ny && got->r.bad_meshes == want->r.bad_meshes,
              "%s: grid %zu x %zu with %zu bad meshes, reference %zu x %zu with %zu", what, got->r.nx, got->r.ny,
              got->r.bad_meshes, want->r.nx, want->r.ny, want->r.bad_meshes);
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got->back[i], &want->back[i], sizeof(float)) || memcmp(&got->rms[i], &want->rms[i], sizeof(float)))
            if (differ++ == 0) first = i;
    cr_assert(differ == 0,
              "%s: %zu of %zu pixels differ from the reference, the first %zu: back %.9g rms %.9g, reference %.9g %.9g",
              what, differ, n, first, got->back[first], got->rms[first], want->back[first], want->rms[first]);
}

/* ---- agreement with the reference ---- */

typedef struct {
    gpuws_backend_kind backend;
    size_t w, h;
    int bw, bh, fw, fh;
    double fthresh;
    size_t nan_cols;
    bool masked;
    bool bright; /* level 10^4, noise σ = 1: a mesh's f64 sums lose bits, so their order decides float bits */
} sky_case;

ParameterizedTestParameters(background, agrees_with_reference)
{
    static const sky_case shapes[] = {
        { 0, 300, 200, 64, 64, 3, 3, 0.0, 3, false, false },  /* sides no multiple of the mesh, NaN border */
        { 0, 300, 200, 50, 40, 5, 3, 0.0, 0, true, false },   /* a mask */
        { 0, 257, 190, 33, 17, 4, 2, 2.0, 40, false, false }, /* odd mesh, even filter, fthresh, bad meshes */
        { 0, 200, 60, 64, 60, 3, 3, 0.0, 0, false, false },   /* one row of meshes: linear along x */
        { 0, 60, 200, 60, 64, 3, 3, 0.0, 0, false, false },   /* one column of meshes */
        { 0, 128, 96, 1, 1, 1, 1, 0.0, 0, false, false },     /* one-pixel meshes, no filter */
        { 0, 640, 480, 16, 16, 7, 7, 0.5, 5, false, false },  /* many meshes */
        { 0, 300, 260, 32, 32, 3, 3, 0.0, 0, false, true },   /* bright: any other order of the sums shows */
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(sky_case *c, background, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    float *x =
        make_sky_at(c->w, c->h, test_seed(false) + c->w, c->nan_cols, c->bright ? 1e4 : 100.0, c->bright ? 1.0 : 5.0);
    uint8_t *mask = NULL;
    if (c->masked) {
        mask = calloc(c->w * c->h, 1);
        cr_assert(mask);
        uint64_t s = 7;
        for (size_t i = 0; i < c->w * c->h; i++) mask[i] = test_rand_uniform(&s) < 0.05 ? 1 + (uint8_t)(i % 200) : 0;
        for (size_t r = 50; r < 130; r++)
            for (size_t q = 100; q < 200; q++) mask[r * c->w + q] = 1; /* whole meshes: filled from neighbours */
    }
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = c->bw;
    o.bh = c->bh;
    o.fw = c->fw;
    o.fh = c->fh;
    o.fthresh = c->fthresh;
    maps want = reference(x, mask, c->w, c->h, &o);
    maps got = run_on(ctx, x, mask, c->w, c->h, &o);
    char what[128];
    snprintf(what, sizeof what, "%s %zux%zu mesh %dx%d filter %dx%d", test_backend_name(c->backend), c->w, c->h, c->bw,
             c->bh, c->fw, c->fh);
    expect_same(what, &got, &want, c->w * c->h);
    if (c->nan_cols >= 40) cr_assert_gt(want.r.bad_meshes, 0, "%s: the NaN band makes no bad mesh", what);
    maps_free(&want);
    maps_free(&got);
    free(x);
    free(mask);
    gpuws_context_destroy(ctx);
}

/* ---- edge cases ---- */

/* A constant image: every mesh's mode is the constant and its rms 0; globalrms, with no positive rms, is 1 (SEP). */
BACKEND_TEST(background, constant_image_is_its_value_with_rms_zero)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 100, H = 90 };
    static float x[W * H];
    for (size_t i = 0; i < W * H; i++) x[i] = 7.25f;
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = o.bh = 32;
    maps got = run_on(ctx, x, NULL, W, H, &o);
    for (size_t i = 0; i < W * H; i++)
        cr_assert(got.back[i] == 7.25f && got.rms[i] == 0.0f, "pixel %zu: back %.9g rms %.9g", i, got.back[i],
                  got.rms[i]);
    cr_assert(got.r.globalback == 7.25f && got.r.globalrms == 1.0f && got.r.nx == 4 && got.r.ny == 3 &&
                  got.r.bad_meshes == 0,
              "globalback %g globalrms %g grid %zu x %zu bad %zu", got.r.globalback, got.r.globalrms, got.r.nx,
              got.r.ny, got.r.bad_meshes);
    maps_free(&got);
    gpuws_context_destroy(ctx);
}

/* A mesh as large as the image: one mesh, whose background and rms fill both maps. */
BACKEND_TEST(background, one_mesh_fills_the_maps)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 70, H = 50 };
    float *x = make_sky(W, H, 11, 0);
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = W;
    o.bh = H;
    maps got = run_on(ctx, x, NULL, W, H, &o), want = reference(x, NULL, W, H, &o);
    cr_assert(got.r.nx == 1 && got.r.ny == 1);
    for (size_t i = 0; i < W * H; i++)
        cr_assert(got.back[i] == got.r.globalback && got.rms[i] == got.r.globalrms, "pixel %zu", i);
    cr_assert(got.r.globalback == want.r.globalback && fabs(got.r.globalback - 100.0f) < 5.0f, "globalback %g",
              got.r.globalback);
    maps_free(&got);
    maps_free(&want);
    free(x);
    gpuws_context_destroy(ctx);
}

/* Masking a pixel is the same as making it NaN. */
BACKEND_TEST(background, masked_pixels_count_as_nan)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 200, H = 150 };
    float *x = make_sky(W, H, 12, 0), *y = malloc(W * H * sizeof *y);
    uint8_t *mask = calloc(W * H, 1);
    cr_assert(y && mask);
    memcpy(y, x, W * H * sizeof *y);
    for (size_t i = 0; i < W * H; i++)
        if (i % 7 == 3 || (i / W > 40 && i / W < 100 && i % W < 90)) {
            mask[i] = (uint8_t)(1 + i % 255);
            y[i] = NAN;
        }
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = o.bh = 32;
    maps a = run_on(ctx, x, mask, W, H, &o), b = run_on(ctx, y, NULL, W, H, &o);
    cr_assert_gt(a.r.bad_meshes, 0);
    cr_assert(a.r.globalback == b.r.globalback && a.r.globalrms == b.r.globalrms && a.r.bad_meshes == b.r.bad_meshes);
    cr_assert(memcmp(a.back, b.back, W * H * sizeof(float)) == 0 && memcmp(a.rms, b.rms, W * H * sizeof(float)) == 0,
              "a mask and NaNs give different maps");
    maps_free(&a);
    maps_free(&b);
    free(x);
    free(y);
    free(mask);
    gpuws_context_destroy(ctx);
}

/* NULL options, a zero-initialised struct (struct_size 0) and GPUWS_BACKGROUND_OPTIONS_INIT's defaults agree. */
BACKEND_TEST(background, null_options_are_the_defaults)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 260, H = 140 };
    float *x = make_sky(W, H, 13, 2);
    gpuws_background_options d = GPUWS_BACKGROUND_OPTIONS_INIT, z;
    memset(&z, 0, sizeof z);
    z.bw = z.bh = 64;
    z.fw = z.fh = 3;
    maps a = run_on(ctx, x, NULL, W, H, NULL), b = run_on(ctx, x, NULL, W, H, &d), c = run_on(ctx, x, NULL, W, H, &z);
    cr_assert(a.r.nx == 5 && a.r.ny == 3, "grid %zu x %zu", a.r.nx, a.r.ny);
    cr_assert(memcmp(a.back, b.back, W * H * 4) == 0 && memcmp(a.back, c.back, W * H * 4) == 0);
    cr_assert(memcmp(a.rms, b.rms, W * H * 4) == 0 && memcmp(a.rms, c.rms, W * H * 4) == 0);
    maps_free(&a);
    maps_free(&b);
    maps_free(&c);
    free(x);
    gpuws_context_destroy(ctx);
}

/* The interpolation's groups of rows stride down the image where the device caps the grid's height (65535 groups of
 * 32 rows on NVIDIA's devices): with the cap lowered to 1 and to 3 groups (knob background_interp_groups) instead of
 * 22, the maps are the reference's. */
GPU_BACKEND_TEST(background, interpolation_strides_past_the_grid_height)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 150, H = 700 };
    float *x = make_sky(W, H, 15, 3);
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = o.bh = 50;
    maps want = reference(x, NULL, W, H, &o);
    static const char *const caps[] = { "1", "3" };
    for (int i = 0; i < 2; i++) {
        test_tune(ctx, "background_interp_groups", caps[i]);
        maps got = run_on(ctx, x, NULL, W, H, &o);
        char what[80];
        snprintf(what, sizeof what, "%s, %s groups down the grid", test_backend_name(*kind), caps[i]);
        expect_same(what, &got, &want, (size_t)W * H);
        maps_free(&got);
    }
    maps_free(&want);
    free(x);
    gpuws_context_destroy(ctx);
}

/* An f64 image is its f32 rounding (SEP converts to float): the same maps and globals, bit for bit. */
BACKEND_TEST(background, f64_image_is_its_f32_rounding)
{
    gpuws_context *ctx = test_open(*kind);
    test_require_dtype(ctx, GPUWS_F64);
    enum { W = 230, H = 170 };
    float *x = make_sky(W, H, 14, 4);
    double *x64 = malloc(W * H * sizeof *x64);
    cr_assert(x64);
    for (size_t i = 0; i < W * H; i++) {
        x64[i] = (double)x[i] + 3e-6 * (double)(i % 5); /* below float resolution at 100: the conversion rounds */
        x[i] = (float)x64[i];
    }
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = o.bh = 40;
    maps a = run_dtype(ctx, GPUWS_F64, x64, NULL, W, H, &o), b = run_on(ctx, x, NULL, W, H, &o);
    cr_assert(a.r.globalback == b.r.globalback && a.r.globalrms == b.r.globalrms && a.r.bad_meshes == b.r.bad_meshes);
    cr_assert(memcmp(a.back, b.back, W * H * sizeof(float)) == 0 && memcmp(a.rms, b.rms, W * H * sizeof(float)) == 0,
              "an f64 image and its f32 rounding give different maps");
    maps_free(&a);
    maps_free(&b);
    free(x);
    free(x64);
    gpuws_context_destroy(ctx);
}
