/* measure: per-label count, sum, centre of mass and peak on every backend.
 *
 * Truth: scipy.ndimage (sum_labels, center_of_mass, maximum, maximum_position) on fixed images
 * (tests/data/make_clip_measure_golden.py), then the reference (kernels/measure/measure_ref.c) as the oracle.
 * Exact: npix, the peak value and its position (the first in raster order among equal values; SciPy picks an
 * arbitrary one among ties, so against SciPy positions are compared only for unique peaks).
 * Within a bound: the f64 sums, whose order differs (the GPUs add with atomics in any order). Higham's bound
 * for f64 sums of m terms in any order is (m-1)*2^-53*Σ|term|, so two such sums differ by at most
 *   |Δsum| <= 2 m u S,   S = Σ|d| over the label,                       u = 2^-53
 *   |ΔΣd·r| <= 2 m u S R, R = the largest row (col) index in the label (products d·r are exact in f64)
 * and the centre of mass row = Σd·r / Σd moves by at most (|ΔΣd·r| + |row| |Δsum|) / |sum| plus two roundings.
 * Labels whose sum is 0 have row = col = NaN (SciPy: NaN or ±inf with a warning). */
#include "support.h"
#include "measure/measure_ref.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

typedef struct {
    size_t w, h, n;
    float *data;
    int32_t *labels;
} image;

static void image_free(image *im)
{
    free(im->data);
    free(im->labels);
}

/* ---- comparison ---- */

typedef struct {
    double abs_sum, max_row, max_col;
} label_extent;

static label_extent *extents(const image *im)
{
    label_extent *e = calloc(im->n + 1, sizeof *e);
    cr_assert(e);
    for (size_t i = 0; i < im->w * im->h; i++) {
        int32_t l = im->labels[i];
        if (l < 1 || (size_t)l > im->n) continue;
        e[l - 1].abs_sum += fabs((double)im->data[i]);
        e[l - 1].max_row = fmax(e[l - 1].max_row, (double)(i / im->w));
        e[l - 1].max_col = fmax(e[l - 1].max_col, (double)(i % im->w));
    }
    return e;
}

static bool same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static void check_com(const char *what, size_t k, const char *axis, double got, double want, double sum, double m,
                      double abs_sum, double extent)
{
    if (isnan(want) || !isfinite(want)) { /* sum 0 (or a NaN pixel): gpuws defines NaN */
        cr_assert(isnan(got), "%s label %zu: %s %.17g, expected NaN", what, k + 1, axis, got);
        return;
    }
    double tol = 1.01 * (2 * m * U * abs_sum * (extent + fabs(want)) / fabs(sum) + 2 * U * fabs(want));
    cr_assert(fabs(got - want) <= tol, "%s label %zu: %s %.17g, expected %.17g (allowed %.3g)", what, k + 1, axis, got,
              want, tol);
}

/* got vs want for every label; positions only where pos_ok[k] (NULL: all). */
static void check_measures(const char *what, const image *im, const gpuws_source_measure *got,
                           const gpuws_source_measure *want, const bool *pos_ok)
{
    label_extent *e = extents(im);
    for (size_t k = 0; k < im->n; k++) {
        const gpuws_source_measure *g = &got[k], *w = &want[k];
        cr_assert_eq(g->npix, w->npix, "%s label %zu: npix %lld, expected %lld", what, k + 1, (long long)g->npix,
                     (long long)w->npix);
        const double m = (double)w->npix;
        double tol = 2 * m * U * e[k].abs_sum;
        cr_assert(same(g->sum, w->sum) || fabs(g->sum - w->sum) <= tol,
                  "%s label %zu: sum %.17g, expected %.17g (allowed %.3g)", what, k + 1, g->sum, w->sum, tol);
        if (w->sum == 0 || isnan(w->sum)) {
            cr_assert(isnan(g->row) && isnan(g->col), "%s label %zu: sum %g, centre (%g, %g), expected NaN", what,
                      k + 1, g->sum, g->row, g->col);
        } else {
            check_com(what, k, "row", g->row, w->row, w->sum, m, e[k].abs_sum, e[k].max_row);
            check_com(what, k, "col", g->col, w->col, w->sum, m, e[k].abs_sum, e[k].max_col);
        }
        cr_assert(same(g->peak, w->peak), "%s label %zu: peak %.9g, expected %.9g", what, k + 1, g->peak, w->peak);
        if (!pos_ok || pos_ok[k])
            cr_assert(g->peak_row == w->peak_row && g->peak_col == w->peak_col,
                      "%s label %zu: peak at (%lld, %lld), expected (%lld, %lld)", what, k + 1, (long long)g->peak_row,
                      (long long)g->peak_col, (long long)w->peak_row, (long long)w->peak_col);
    }
    free(e);
}

static gpuws_source_measure *run_on(gpuws_context *ctx, const image *im)
{
    const size_t np = im->w * im->h, bytes = im->n * sizeof(gpuws_source_measure);
    gpuws_buffer *d = test_buffer_from(ctx, im->data, np * 4), *l = test_buffer_from(ctx, im->labels, np * 4);
    gpuws_buffer *o = test_buffer(ctx, bytes);
    TEST_OK(gpuws_measure(NULL, im->w, im->h, d, l, im->n, o));
    gpuws_source_measure *got = test_download(o, bytes);
    test_check_guard(o, bytes, "out");
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(l);
    gpuws_buffer_destroy(o);
    return got;
}

static gpuws_source_measure *reference(const image *im)
{
    gpuws_source_measure *r = malloc(im->n * sizeof *r + 1);
    cr_assert(r);
    gpuws_measure_ref(im->data, im->labels, im->w, im->h, im->n, r);
    return r;
}

/* ---- golden cases ---- */

static void *read_file(const char *name, size_t bytes)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", getenv("GPUWS_TEST_DATA"), name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s: %s", path, strerror(errno));
    void *p = malloc(bytes + 4);
    cr_assert(p);
    cr_assert_eq(fread(p, 1, bytes, f), bytes, "%s is shorter than %zu bytes", path, bytes);
    fclose(f);
    return p;
}

/* The image, SciPy's answers and which positions are comparable (unique peaks). */
static image read_golden(const char *name, gpuws_source_measure **want, bool **pos_ok)
{
    cr_assert(getenv("GPUWS_TEST_DATA"), "GPUWS_TEST_DATA is not set (ctest sets it)");
    char path[1024], file[128];
    snprintf(path, sizeof path, "%s/measure_%s_golden.txt", getenv("GPUWS_TEST_DATA"), name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    image im;
    cr_assert_eq(fscanf(f, "%zu %zu %zu", &im.w, &im.h, &im.n), 3);
    *want = calloc(im.n + 1, sizeof **want);
    *pos_ok = calloc(im.n + 1, sizeof **pos_ok);
    cr_assert(*want && *pos_ok);
    for (size_t k = 0; k < im.n; k++) {
        size_t label;
        long long npix, pr, pc;
        int unique;
        char s[4][64];
        cr_assert_eq(fscanf(f, "%zu %lld %63s %63s %63s %63s %lld %lld %d", &label, &npix, s[0], s[1], s[2], s[3], &pr,
                            &pc, &unique),
                     9, "%s: line %zu", path, k + 2);
        gpuws_source_measure *w = &(*want)[k];
        *w = (gpuws_source_measure){
            strtod(s[0], NULL), strtod(s[1], NULL), strtod(s[2], NULL), strtod(s[3], NULL), npix, pr, pc
        };
        if (npix == 0) { /* SciPy: maximum 0 at (0, 0) for an absent label; gpuws: NaN at (-1, -1) */
            w->peak = NAN;
            w->peak_row = w->peak_col = -1;
        }
        (*pos_ok)[k] = unique || npix == 0;
    }
    fclose(f);
    snprintf(file, sizeof file, "measure_%s_data.f32", name);
    im.data = read_file(file, im.w * im.h * 4);
    snprintf(file, sizeof file, "measure_%s_labels.i32", name);
    im.labels = read_file(file, im.w * im.h * 4);
    return im;
}

static const char *const golden_names[] = { "random", "sky", "one" };

Test(measure, reference_matches_scipy)
{
    for (size_t g = 0; g < 3; g++) {
        gpuws_source_measure *want;
        bool *pos_ok;
        image im = read_golden(golden_names[g], &want, &pos_ok);
        gpuws_source_measure *got = reference(&im);
        check_measures(golden_names[g], &im, got, want, pos_ok);
        free(got);
        free(want);
        free(pos_ok);
        image_free(&im);
    }
}

BACKEND_TEST(measure, matches_scipy)
{
    gpuws_context *ctx = test_open(*kind);
    for (size_t g = 0; g < 3; g++) {
        gpuws_source_measure *want;
        bool *pos_ok;
        image im = read_golden(golden_names[g], &want, &pos_ok);
        gpuws_source_measure *got = run_on(ctx, &im);
        char what[64];
        snprintf(what, sizeof what, "%s: %s", test_backend_name(*kind), golden_names[g]);
        check_measures(what, &im, got, want, pos_ok);
        /* the first among equal peaks, which SciPy does not promise */
        gpuws_source_measure *ref = reference(&im);
        check_measures(what, &im, got, ref, NULL);
        free(ref);
        free(got);
        free(want);
        free(pos_ok);
        image_free(&im);
    }
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference on generated label images ---- */

typedef enum { L_RANDOM, L_DISCS, L_BLOCKS, L_WHOLE, L_STRIPES } label_kind;

typedef struct {
    gpuws_backend_kind backend;
    label_kind kind;
    size_t w, h, n;
    bool fresh;
} meas_case;

static const char *kind_name(label_kind k)
{
    static const char *const names[] = { "random", "discs", "blocks", "whole", "stripes" };
    return names[k];
}

/* Labels: random per pixel (runs of 1-2), discs (sparse sources), large rectangles (the scan path), the whole
 * image one label, or horizontal stripes spanning many tiles. Some values outside 1..n (ignored) are mixed in. */
static image make_image(const meas_case *c, uint64_t seed)
{
    image im = { c->w, c->h, c->n, NULL, NULL };
    const size_t np = c->w * c->h;
    im.data = malloc(np * 4 + 4);
    im.labels = calloc(np + 1, 4);
    cr_assert(im.data && im.labels);
    for (size_t i = 0; i < np; i++) im.data[i] = (float)(test_rand_uniform(&seed) * 3.0 - 1.0);
    switch (c->kind) {
    case L_RANDOM:
        for (size_t i = 0; i < np; i++) {
            uint64_t r = test_rand_u64(&seed) % (c->n + 3);
            im.labels[i] = r == c->n + 1 ? -7 : r == c->n + 2 ? (int32_t)c->n + 5 : (int32_t)r;
        }
        for (size_t j = 0; j < 3 && np > 100; j++) im.data[test_rand_u64(&seed) % np] = NAN; /* blanked pixels */
        break;
    case L_DISCS:
        for (size_t k = 1; k <= c->n; k++) {
            size_t cr = test_rand_u64(&seed) % c->h, cc = test_rand_u64(&seed) % c->w,
                   rad = 1 + test_rand_u64(&seed) % 6;
            for (size_t r = cr >= rad ? cr - rad : 0; r <= cr + rad && r < c->h; r++)
                for (size_t q = cc >= rad ? cc - rad : 0; q <= cc + rad && q < c->w; q++)
                    if ((r - cr) * (r - cr) + (q - cc) * (q - cc) <= rad * rad) im.labels[r * c->w + q] = (int32_t)k;
        }
        break;
    case L_BLOCKS:
        for (size_t k = 1; k <= c->n; k++) {
            size_t r0 = test_rand_u64(&seed) % c->h, c0 = test_rand_u64(&seed) % c->w;
            size_t r1 = r0 + test_rand_u64(&seed) % (c->h / 2 + 1), c1 = c0 + test_rand_u64(&seed) % c->w;
            for (size_t r = r0; r < r1 && r < c->h; r++)
                for (size_t q = c0; q < c1 && q < c->w; q++) im.labels[r * c->w + q] = (int32_t)k;
        }
        break;
    case L_WHOLE:
        for (size_t i = 0; i < np; i++) im.labels[i] = 1;
        break;
    case L_STRIPES:
        for (size_t i = 0; i < np; i++) im.labels[i] = (int32_t)(1 + (i / c->w / 3) % c->n);
        break;
    }
    /* equal peaks: a constant value repeated in several places of the image */
    for (size_t j = 0; j < 16 && np; j++) im.data[test_rand_u64(&seed) % np] = 2.0f;
    return im;
}

static const meas_case measure_shapes[] = {
    { 0, L_RANDOM, 1, 1, 1, false },
    { 0, L_RANDOM, 13, 7, 5, false },
    { 0, L_RANDOM, 1, 1001, 40, false },    /* one column */
    { 0, L_RANDOM, 1001, 1, 40, false },    /* one row */
    { 0, L_RANDOM, 333, 251, 3000, false }, /* labels mostly single pixels, many absent */
    { 0, L_DISCS, 1024, 1024, 300, false }, /* the workshop's case: sparse sources */
    { 0, L_DISCS, 517, 389, 60, true },
    { 0, L_BLOCKS, 640, 480, 12, false }, /* large sources: many joins per tile */
    { 0, L_BLOCKS, 301, 299, 3, true },
    { 0, L_WHOLE, 1000, 1003, 1, false }, /* N = 1, every pixel: heavy contention */
    { 0, L_STRIPES, 2053, 97, 7, false },
};

ParameterizedTestParameters(measure, agrees_with_reference)
{
    return TEST_BACKEND_PARAMS(measure_shapes, sizeof measure_shapes / sizeof measure_shapes[0]);
}

ParameterizedTest(meas_case *c, measure, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    image im = make_image(c, test_seed(c->fresh));
    gpuws_source_measure *want = reference(&im), *got = run_on(ctx, &im);
    char what[96];
    snprintf(what, sizeof what, "%s %s %zux%zu N=%zu", test_backend_name(c->backend), kind_name(c->kind), c->w, c->h,
             c->n);
    check_measures(what, &im, got, want, NULL);
    free(want);
    free(got);
    image_free(&im);
    gpuws_context_destroy(ctx);
}

/* The path for more than 2^32 pixels (the peak's value in the accumulation, its first pixel in a second pass),
 * forced by the measure_wide_peak knob on every shape above: the reference's records, equal peaks resolved to the
 * first in raster order (make_image repeats the largest value, 2, in several tiles), NaN peaks, labels out of
 * range. Then with 3 work-groups on OpenCL (the GPUs' tile loop), and one call after another on one stream (the
 * second pass's word of the zeroed totals is cleared too). The CPU backend runs the reference at any size. */
BACKEND_TEST(measure, wide_path_agrees_with_reference)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "measure_wide_peak", "1");
    for (int loop = 0; loop < 2; loop++) {
        if (loop == 1 && *kind == GPUWS_BACKEND_OPENCL) test_tune(ctx, "measure_groups", "3");
        for (size_t s = 0; s < sizeof measure_shapes / sizeof measure_shapes[0]; s++) {
            image im = make_image(&measure_shapes[s], test_seed(false) + s);
            gpuws_source_measure *want = reference(&im), *got = run_on(ctx, &im);
            char what[96];
            snprintf(what, sizeof what, "wide %s %s %zux%zu N=%zu%s", test_backend_name(*kind),
                     kind_name(measure_shapes[s].kind), measure_shapes[s].w, measure_shapes[s].h, measure_shapes[s].n,
                     loop ? " 3 groups" : "");
            check_measures(what, &im, got, want, NULL);
            free(want);
            free(got);
            image_free(&im);
        }
    }
    gpuws_context_destroy(ctx);
}

/* Where the sums are exact (small integers, no NaN), the wide path's records are byte for byte those of the
 * path for at most 2^32 pixels, and flat images (every pixel the peak) give the first pixel of each label. */
BACKEND_TEST(measure, wide_path_is_bitwise_the_narrow_path_on_exact_sums)
{
    gpuws_context *narrow = test_open(*kind), *wide = test_open(*kind);
    test_tune(wide, "measure_wide_peak", "1");
    for (size_t s = 0; s < sizeof measure_shapes / sizeof measure_shapes[0]; s++) {
        image im = make_image(&measure_shapes[s], test_seed(false) + s);
        const size_t np = im.w * im.h;
        for (size_t i = 0; i < np; i++) /* -3..8 (NaN to 8), or all 1 every other shape */
            im.data[i] = s % 2 ? 1.0f : isnan(im.data[i]) ? 8.0f : floorf(im.data[i] * 4.0f) - (i % 3 == 0 ? 0 : 1);
        gpuws_source_measure *a = run_on(narrow, &im), *b = run_on(wide, &im), *want = reference(&im);
        for (size_t k = 0; k < im.n; k++)
            cr_assert(memcmp(&a[k], &b[k], sizeof a[k]) == 0,
                      "%s %zux%zu label %zu: wide npix %lld sum %.17g peak %g at (%lld, %lld); narrow %lld %.17g %g "
                      "at (%lld, %lld)",
                      kind_name(measure_shapes[s].kind), im.w, im.h, k + 1, (long long)b[k].npix, b[k].sum, b[k].peak,
                      (long long)b[k].peak_row, (long long)b[k].peak_col, (long long)a[k].npix, a[k].sum, a[k].peak,
                      (long long)a[k].peak_row, (long long)a[k].peak_col);
        check_measures(kind_name(measure_shapes[s].kind), &im, b, want, NULL);
        free(a);
        free(b);
        free(want);
        image_free(&im);
    }
    gpuws_context_destroy(narrow);
    gpuws_context_destroy(wide);
}

/* The totals accumulate in memory the stream keeps zeroed between calls (finalize clears what it read): calls one
 * after another on one stream, with more labels than before and with fewer, each count only their own pixels. */
BACKEND_TEST(measure, consecutive_calls_count_only_their_own_pixels)
{
    gpuws_context *ctx = test_open(*kind);
    const meas_case calls[] = { { *kind, L_DISCS, 517, 389, 60, false },
                                { *kind, L_RANDOM, 333, 251, 3000, false },
                                { *kind, L_BLOCKS, 301, 299, 3, false },
                                { *kind, L_DISCS, 517, 389, 60, false } };
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        image im = make_image(&calls[k], test_seed(false) + k);
        gpuws_source_measure *want = reference(&im), *got = run_on(ctx, &im);
        char what[64];
        snprintf(what, sizeof what, "call %zu (%s, N=%zu)", k, kind_name(calls[k].kind), calls[k].n);
        check_measures(what, &im, got, want, NULL);
        free(want);
        free(got);
        image_free(&im);
    }
    gpuws_context_destroy(ctx);
}

/* Known answers on a 3 x 4 image, by hand. */
BACKEND_TEST(measure, small_image_known_answers)
{
    gpuws_context *ctx = test_open(*kind);
    const float data[12] = { 1,   3, 0,  -1,                           /* row 0 */
                             3,   2, 3,  1,                            /* row 1 */
                             NAN, 5, -2, 2 };                          /* row 2 */
    const int32_t labels[12] = { 1, 1, 2, 3, 1, 2, 2, 3, 4, 0, 5, 9 }; /* 9 > N: ignored; label 6 has no pixel */
    image im = { 4, 3, 6, (float *)data, (int32_t *)labels };
    gpuws_source_measure *got = run_on(ctx, &im);
    /* label 1: (0,0)=1 (0,1)=3 (1,0)=3: sum 7, row (0+0+3)/7, col (0+3+0)/7, peak 3 first at (0,1) */
    cr_assert(got[0].npix == 3 && got[0].sum == 7 && got[0].peak == 3 && got[0].peak_row == 0 && got[0].peak_col == 1);
    cr_assert(fabs(got[0].row - 3.0 / 7) <= 1e-15 && fabs(got[0].col - 3.0 / 7) <= 1e-15, "label 1 at (%.17g, %.17g)",
              got[0].row, got[0].col);
    /* label 2: (0,2)=0 (1,1)=2 (1,2)=3: sum 5, row 5/5, col (2+6)/5, peak 3 at (1,2) */
    cr_assert(got[1].npix == 3 && got[1].sum == 5 && got[1].row == 1 && got[1].col == 1.6 && got[1].peak == 3 &&
              got[1].peak_row == 1 && got[1].peak_col == 2);
    /* label 3: -1 and 1: sum 0, centre NaN, peak 1 at (1,3) */
    cr_assert(got[2].npix == 2 && got[2].sum == 0 && isnan(got[2].row) && isnan(got[2].col) && got[2].peak == 1 &&
              got[2].peak_row == 1 && got[2].peak_col == 3);
    /* label 4: one NaN pixel: NaN sum and centre, the NaN is its peak */
    cr_assert(got[3].npix == 1 && isnan(got[3].sum) && isnan(got[3].row) && isnan(got[3].peak) &&
              got[3].peak_row == 2 && got[3].peak_col == 0);
    /* label 5: one pixel -2 at (2,2) */
    cr_assert(got[4].npix == 1 && got[4].sum == -2 && got[4].row == 2 && got[4].col == 2 && got[4].peak == -2);
    /* label 6: absent */
    cr_assert(got[5].npix == 0 && got[5].sum == 0 && isnan(got[5].row) && isnan(got[5].peak) && got[5].peak_row == -1 &&
              got[5].peak_col == -1);
    free(got);
    /* a NaN beats every number and the first NaN is the peak (numpy.max / argmax) */
    const float nan_data[4] = { 2, NAN, 5, NAN };
    const int32_t one_label[4] = { 1, 1, 1, 1 };
    image im2 = { 2, 2, 1, (float *)nan_data, (int32_t *)one_label };
    got = run_on(ctx, &im2);
    cr_assert(got[0].npix == 4 && isnan(got[0].sum) && isnan(got[0].row) && isnan(got[0].peak) &&
                  got[0].peak_row == 0 && got[0].peak_col == 1,
              "%s: {2, NaN, 5, NaN}: peak %g at (%lld, %lld)", test_backend_name(*kind), got[0].peak,
              (long long)got[0].peak_row, (long long)got[0].peak_col);
    free(got);
    gpuws_context_destroy(ctx);
}

/* Bad input: a clear status, the output untouched. */
BACKEND_TEST(measure, bad_input_is_refused_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 8, H = 4, N = 3 };
    float data[W * H];
    int32_t labels[W * H];
    test_fill_uniform_f32(data, W * H, 5, 0, 1);
    for (int i = 0; i < W * H; i++) labels[i] = i % 4;
    gpuws_buffer *d = test_buffer_from(ctx, data, sizeof data), *l = test_buffer_from(ctx, labels, sizeof labels);
    const size_t rec = sizeof(gpuws_source_measure);
    gpuws_buffer *o = test_buffer(ctx, N * rec);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, 0, H, d, l, N, o)); /* zero size */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, 0, d, l, N, o));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_measure(NULL, SIZE_MAX / 2, 3, d, l, N, o));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_measure(NULL, W, H + 3, d, l, N, o)); /* images larger than the buffers */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_measure(NULL, W, H, d, l, N + 2, o)); /* out too small */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, H, d, l, (size_t)INT32_MAX + 1, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, H, d, NULL, N, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, H, NULL, l, N, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, H, d, l, N, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_measure(NULL, W, H, d, l, 1, d)); /* out aliases the input */
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *o2 = test_buffer(other, N * rec);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_measure(NULL, W, H, d, l, N, o2));
    unsigned char *bytes = test_download(o, N * rec + TEST_GUARD_BYTES);
    for (size_t i = 0; i < N * rec + TEST_GUARD_BYTES; i++)
        cr_assert_eq(bytes[i], TEST_POISON_BYTE, "out byte %zu written by a refused call", i);
    free(bytes);
    /* nothing to measure is not an error, with or without an output buffer */
    TEST_OK(gpuws_measure(NULL, W, H, d, l, 0, NULL));
    TEST_OK(gpuws_measure(NULL, W, H, d, l, 0, o));
    gpuws_buffer_destroy(o2);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(l);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}

/* A CPU OpenCL device gets one work-group per tile; a GPU gets a few per compute unit that loop over many tiles.
 * Forcing 3 groups runs that loop (state reset between tiles) here too. */
Test(measure, tile_loop_on_opencl)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_OPENCL);
    test_tune(ctx, "measure_groups", "3");
    const meas_case shapes[] = {
        { GPUWS_BACKEND_OPENCL, L_BLOCKS, 640, 480, 12, false },
        { GPUWS_BACKEND_OPENCL, L_DISCS, 517, 389, 60, false },
        { GPUWS_BACKEND_OPENCL, L_WHOLE, 300, 301, 1, false },
        { GPUWS_BACKEND_OPENCL, L_RANDOM, 333, 251, 3000, false },
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        image im = make_image(&shapes[s], test_seed(false) + s);
        gpuws_source_measure *want = reference(&im), *got = run_on(ctx, &im);
        check_measures(kind_name(shapes[s].kind), &im, got, want, NULL);
        free(want);
        free(got);
        image_free(&im);
    }
    gpuws_context_destroy(ctx);
}

/* On a GPU with the memory for it, device buffers of 65536 x 65537 pixels (2^32 + 2^16: labels and data of 16 GiB
 * each, filled on the device, a few labelled pixels written in): npix, sum, centre and the peak's position of
 * labels whose equal peaks lie past pixel 2^32 (the first of them wins), whose first peak lies before 2^32 and a
 * later equal one past it at a smaller index modulo 2^32 (a 32-bit index would pick the later one), and whose
 * peaks are NaNs past 2^32. It skips on CPU devices (the wide path runs on small images above, forced). */
GPU_BACKEND_TEST(measure, device_buffers_of_more_than_2_to_the_32_pixels)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    const size_t w = 65536, h = 65537, n = w * h;
    if (info.type == GPUWS_DEVICE_CPU || !info.fp64 || info.global_mem_bytes < 34 * ((uint64_t)1 << 30) ||
        info.max_alloc_bytes < 4 * (uint64_t)n) {
        gpuws_context_destroy(ctx);
        cr_skip_test("%s: %s: needs a GPU with fp64 and 34 GiB (two buffers of %zu bytes)", test_backend_name(*kind),
                     info.name, 4 * n);
    }
    gpuws_buffer *d = NULL, *l = NULL, *o = NULL;
    TEST_OK(gpuws_buffer_create(ctx, 4 * n, &d));
    TEST_OK(gpuws_buffer_create(ctx, 4 * n, &l));
    TEST_OK(gpuws_buffer_create(ctx, 3 * sizeof(gpuws_source_measure), &o));
    const float one = 1.0f;
    const int32_t zero = 0;
    TEST_OK(gpuws_buffer_fill(d, 0, &one, sizeof one, 4 * n));
    TEST_OK(gpuws_buffer_fill(l, 0, &zero, sizeof zero, 4 * n));
    /* label 1: columns 100..199 of rows 65535 and 65536, 7 at (65536, 150) and (65536, 160) */
    /* label 2: columns 0..3 of rows 0 and 1 and columns 0..9 of row 65536, 5 at (1, 0) and (65536, 5) */
    /* label 3: columns 0..9 of row 65535 and 10..19 of row 65536, NaN at (65536, 17) and (65536, 19) */
    typedef struct {
        size_t row, c0, c1;
        int32_t label;
    } run;
    const run runs[] = { { 65535, 100, 200, 1 }, { 65536, 100, 200, 1 }, { 0, 0, 4, 2 },      { 1, 0, 4, 2 },
                         { 65536, 0, 10, 2 },    { 65535, 0, 10, 3 },    { 65536, 10, 20, 3 } };
    const struct {
        size_t row, col;
        float v;
    } values[] = { { 65536, 150, 7 }, { 65536, 160, 7 },  { 1, 0, 5 },
                   { 65536, 5, 5 },   { 65536, 17, NAN }, { 65536, 19, NAN } };
    int32_t lab[100];
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        for (size_t c = runs[r].c0; c < runs[r].c1; c++) lab[c - runs[r].c0] = runs[r].label;
        TEST_OK(gpuws_buffer_write(l, 4 * (runs[r].row * w + runs[r].c0), lab, 4 * (runs[r].c1 - runs[r].c0)));
    }
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++)
        TEST_OK(gpuws_buffer_write(d, 4 * (values[v].row * w + values[v].col), &values[v].v, sizeof(float)));
    /* the records by hand: every sum is of small integers, so exact in any order */
    gpuws_source_measure want[3];
    for (int k = 0; k < 3; k++) want[k] = (gpuws_source_measure){ 0.0, 0.0, 0.0, NAN, 0, -1, -1 };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (size_t c = runs[r].c0; c < runs[r].c1; c++) {
            double v = 1.0;
            for (size_t q = 0; q < sizeof values / sizeof values[0]; q++)
                if (values[q].row == runs[r].row && values[q].col == c) v = values[q].v;
            gpuws_measure_ref_add(&want[runs[r].label - 1], v, runs[r].row, c);
        }
    for (int k = 0; k < 3; k++) gpuws_measure_ref_centre(&want[k]);
    cr_assert(want[0].peak_row == 65536 && want[0].peak_col == 150 && want[1].peak_row == 1 && want[1].peak_col == 0 &&
              want[2].peak_row == 65536 && want[2].peak_col == 17);
    TEST_OK(gpuws_measure(NULL, w, h, d, l, 3, o));
    gpuws_source_measure got[3];
    TEST_OK(gpuws_buffer_read(o, 0, got, sizeof got));
    for (int k = 0; k < 3; k++)
        cr_assert(got[k].npix == want[k].npix && same(got[k].sum, want[k].sum) && same(got[k].row, want[k].row) &&
                      same(got[k].col, want[k].col) && same(got[k].peak, want[k].peak) &&
                      got[k].peak_row == want[k].peak_row && got[k].peak_col == want[k].peak_col,
                  "label %d: npix %lld sum %.17g centre (%.17g, %.17g) peak %g at (%lld, %lld); expected %lld %.17g "
                  "(%.17g, %.17g) %g at (%lld, %lld)",
                  k + 1, (long long)got[k].npix, got[k].sum, got[k].row, got[k].col, got[k].peak,
                  (long long)got[k].peak_row, (long long)got[k].peak_col, (long long)want[k].npix, want[k].sum,
                  want[k].row, want[k].col, want[k].peak, (long long)want[k].peak_row, (long long)want[k].peak_col);
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(l);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}
