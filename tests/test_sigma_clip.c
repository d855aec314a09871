/* sigma_clip: κ-σ clipping on every backend.
 *
 * Truth: NumPy's loop run on float64 copies of the non-NaN values (tests/data/make_clip_measure_golden.py),
 * then the reference (kernels/sigma_clip/sigma_clip_ref.c) as the oracle for every backend on more data.
 *
 * What must hold exactly: count, iterations, converged, and the median (an order statistic, or the mean of two
 * of them in f64: the same value on every backend, bit for bit). Mean and std are sums in f64 whose order
 * differs between NumPy (pairwise), the reference (Neumaier-compensated, ~exact) and the GPUs (per-work-item
 * shifted sums combined with Chan's formulas). Higham's bound for f64 sums in any order, (n-1)*2^-53*sum|x_i|,
 * gives (the shifts and the combination steps at most double the terms, hence the factor 4):
 *   |mean - mean_ref| <= 4 n u max|x|               (u = 2^-53, max over the finite input values)
 *   |std - std_ref|   <= 4 n u max|x - mean|^2 / std  (from |Δvar| <= 4 n u max|x - mean|^2, Δstd = Δvar / 2std)
 * and std == 0 exactly when the reference's is 0 (a constant set: every shifted term is exactly 0).
 * For the 2^20-value sky below these are ~1e-10 of max|x|, far under what one lost or double-counted value moves
 * the mean (~std / n ≈ 1e-9): the bounds catch real errors.
 * Count equality needs the kept sets to agree, i.e. no f32 value within an f64 rounding (~1e-16 relative) of a
 * bound m ± κs: for the smooth data here the chance is ~1e-11 per bound; the degenerate sets (few distinct
 * values) have exact sums, so their bounds are exact too. */
#include "support.h"
#include "sigma_clip_sky.h"
#include "sigma_clip/sigma_clip_host.h"
#include "sigma_clip/sigma_clip_ref.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

/* ---- data ---- */

static float *read_f32(const char *name, size_t n)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    cr_assert(dir, "GPUWS_TEST_DATA is not set (ctest sets it; by hand: GPUWS_TEST_DATA=tests/data)");
    char path[1024];
    snprintf(path, sizeof path, "%s/sigma_clip_%s.f32", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s: %s", path, strerror(errno));
    float *x = malloc(n * sizeof *x + 4);
    cr_assert(x);
    cr_assert_eq(fread(x, sizeof *x, n, f), n, "%s is shorter than %zu values", path, n);
    fclose(f);
    return x;
}

/* ---- comparison ---- */

static void bounds_for(const float *x, size_t n, double mean, double *mean_tol, double *dev2)
{
    double mx = 0, md = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            mx = fmax(mx, fabs((double)x[i]));
            if (isfinite(mean)) md = fmax(md, fabs((double)x[i] - mean));
        }
    *mean_tol = 4.0 * (double)n * U * mx;
    *dev2 = md * md;
}

static bool same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* got vs want, which describes the same kept set. */
static void check_result(const char *what, const float *x, size_t n, const gpuws_sigma_clip_result *got,
                         const gpuws_sigma_clip_result *want)
{
    cr_assert_eq(got->count, want->count, "%s: count %zu, expected %zu", what, got->count, want->count);
    cr_assert_eq(got->iterations, want->iterations, "%s: %d iterations, expected %d", what, got->iterations,
                 want->iterations);
    cr_assert_eq(got->converged, want->converged, "%s: converged %d, expected %d", what, got->converged,
                 want->converged);
    cr_assert(same_value(got->median, want->median), "%s: median %.17g, expected %.17g", what, got->median,
              want->median);
    double mean_tol, dev2;
    bounds_for(x, n, want->mean, &mean_tol, &dev2);
    if (isnan(want->mean)) {
        cr_assert(isnan(got->mean) && isnan(got->std), "%s: mean %g std %g, expected NaN", what, got->mean, got->std);
        return;
    }
    cr_assert(fabs(got->mean - want->mean) <= mean_tol, "%s: mean %.17g, expected %.17g (allowed %.3g)", what,
              got->mean, want->mean, mean_tol);
    if (want->std == 0) {
        cr_assert(got->std == 0, "%s: std %.17g of a constant set, expected 0", what, got->std);
    } else {
        double std_tol = 4.0 * (double)n * U * dev2 / want->std;
        cr_assert(fabs(got->std - want->std) <= std_tol, "%s: std %.17g, expected %.17g (allowed %.3g)", what, got->std,
                  want->std, std_tol);
    }
}

static gpuws_sigma_clip_result run_on(gpuws_context *ctx, const float *x, size_t n, double kappa, int max_it)
{
    gpuws_buffer *d = test_buffer_from(ctx, x, n * sizeof *x);
    gpuws_sigma_clip_options o = { .kappa = kappa, .max_iterations = max_it };
    gpuws_sigma_clip_result r;
    memset(&r, 0xAB, sizeof r);
    TEST_OK(gpuws_sigma_clip(NULL, n, d, &o, &r));
    /* the data buffer is input only */
    float *back = test_download(d, n * sizeof *x);
    cr_assert(memcmp(back, x, n * sizeof *x) == 0, "sigma_clip modified its input");
    test_check_guard(d, n * sizeof *x, "data");
    free(back);
    gpuws_buffer_destroy(d);
    return r;
}

static gpuws_sigma_clip_result reference(const float *x, size_t n, double kappa, int max_it)
{
    gpuws_sigma_clip_result r;
    TEST_OK(gpuws_sigma_clip_ref(x, n, kappa, max_it, &r));
    return r;
}

/* ---- golden cases ---- */

typedef struct {
    char name[48], input[48];
    size_t n;
    double kappa;
    int max_it;
    gpuws_sigma_clip_result want;
} golden;

static size_t read_golden(golden *g, size_t max)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    cr_assert(dir, "GPUWS_TEST_DATA is not set");
    char path[1024];
    snprintf(path, sizeof path, "%s/sigma_clip_golden.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    size_t k = 0;
    char med[64], mean[64], std[64];
    while (k < max &&
           fscanf(f, "%47s %47s %zu %lf %d %zu %63s %63s %63s %d %d", g[k].name, g[k].input, &g[k].n, &g[k].kappa,
                  &g[k].max_it, &g[k].want.count, med, mean, std, &g[k].want.iterations, &g[k].want.converged) == 11) {
        g[k].want.median = strtod(med, NULL); /* strtod reads "nan" */
        g[k].want.mean = strtod(mean, NULL);
        g[k].want.std = strtod(std, NULL);
        k++;
    }
    fclose(f);
    cr_assert_geq(k, 15, "%s: only %zu cases read", path, k);
    return k;
}

Test(sigma_clip, reference_matches_numpy_loop)
{
    golden g[64];
    size_t m = read_golden(g, 64);
    for (size_t i = 0; i < m; i++) {
        float *x = read_f32(g[i].input, g[i].n);
        gpuws_sigma_clip_result r = reference(x, g[i].n, g[i].kappa, g[i].max_it);
        check_result(g[i].name, x, g[i].n, &r, &g[i].want);
        free(x);
    }
}

BACKEND_TEST(sigma_clip, matches_numpy_loop)
{
    gpuws_context *ctx = test_open(*kind);
    golden g[64];
    size_t m = read_golden(g, 64);
    for (size_t i = 0; i < m; i++) {
        float *x = read_f32(g[i].input, g[i].n);
        char what[96];
        snprintf(what, sizeof what, "%s: %s", test_backend_name(*kind), g[i].name);
        gpuws_sigma_clip_result r = run_on(ctx, x, g[i].n, g[i].kappa, g[i].max_it);
        check_result(what, x, g[i].n, &r, &g[i].want);
        free(x);
    }
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference ---- */

typedef struct {
    gpuws_backend_kind backend;
    size_t n;
    double offset;
    size_t sources, nan_every;
    double kappa;
    int max_it;
    bool fresh;
} sky_case;

ParameterizedTestParameters(sigma_clip, agrees_with_reference)
{
    static const sky_case shapes[] = {
        { 0, 1, 0.0, 0, 0, 3.0, 100, false },
        { 0, 2, 0.0, 0, 0, 3.0, 100, false },
        { 0, 3, 1.0, 0, 0, 3.0, 100, false },
        { 0, 1000, 0.0, 5, 0, 3.0, 100, false },          /* even count */
        { 0, 1001, 0.0, 5, 0, 3.0, 100, false },          /* odd count */
        { 0, 65521, 0.0, 40, 7, 3.0, 100, false },        /* prime, NaNs sprinkled */
        { 0, 65521, 1000.0, 40, 0, 3.0, 100, false },     /* offset: every value in a few level-1 bins */
        { 0, 100003, -3.5, 100, 0, 2.0, 100, false },     /* κ = 2 */
        { 0, 100003, 0.0, 300, 11, 3.0, 2, false },       /* stops at max_iterations */
        { 0, 1u << 20, 0.0, 400, 1021, 3.0, 100, false }, /* a 1024^2 sky */
        { 0, 262147, 0.0, 200, 13, 3.0, 100, true },
        { 0, 4099, 2.0, 20, 0, 1.5, 100, true },
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(sky_case *c, sigma_clip, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    float *x = make_sky(c->n, test_seed(c->fresh), c->offset, c->sources, c->nan_every);
    gpuws_sigma_clip_result want = reference(x, c->n, c->kappa, c->max_it);
    gpuws_sigma_clip_result got = run_on(ctx, x, c->n, c->kappa, c->max_it);
    char what[96];
    snprintf(what, sizeof what, "%s n=%zu offset=%g", test_backend_name(c->backend), c->n, c->offset);
    check_result(what, x, c->n, &got, &want);
    free(x);
    gpuws_context_destroy(ctx);
}

/* Few distinct values: ties at the median, bounds landing between the two values, sets that vanish. */
BACKEND_TEST(sigma_clip, two_value_images_agree_with_reference)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 5000 };
    static float x[N];
    static const size_t firsts[] = { 1, 100, 499, 2500, 2501, 4000, 4999 };
    for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
        uint64_t seed = test_seed(false) + f;
        for (size_t i = 0; i < N; i++) x[i] = i < firsts[f] ? -2.5f : 7.0f;
        for (size_t i = N - 1; i > 0; i--) { /* shuffle: position must not matter */
            size_t j = test_rand_u64(&seed) % (i + 1);
            float t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
        gpuws_sigma_clip_result want = reference(x, N, 3.0, 100), got = run_on(ctx, x, N, 3.0, 100);
        char what[64];
        snprintf(what, sizeof what, "%s: %zu of %d low", test_backend_name(*kind), firsts[f], N);
        check_result(what, x, N, &got, &want);
    }
    gpuws_context_destroy(ctx);
}

/* Known answers that need no reference: with std = 0 the strict bounds m - 0 < x < m + 0 keep nothing, so a
 * constant image (n = 1 included) clips to the empty set in the first pass and the second pass converges on it;
 * NumPy's loop does exactly that on float64 data. Signed zeros and infinities behave like NumPy's too. */
BACKEND_TEST(sigma_clip, constant_images_clip_to_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[4097];
    const float values[] = { 0.1f, -3.0f, 0.0f, 1e30f };
    const size_t sizes[] = { 1, 2, 4097 };
    for (size_t v = 0; v < 4; v++)
        for (size_t s = 0; s < 3; s++) {
            for (size_t i = 0; i < sizes[s]; i++) x[i] = (i & 1) && values[v] == 0.0f ? -0.0f : values[v];
            gpuws_sigma_clip_result r = run_on(ctx, x, sizes[s], 3.0, 100);
            cr_assert(r.count == 0 && r.iterations == 2 && r.converged == 1 && isnan(r.median) && isnan(r.mean) &&
                          isnan(r.std),
                      "%s: %zu x %g -> count %zu, %d iterations, median %g", test_backend_name(*kind), sizes[s],
                      (double)values[v], r.count, r.iterations, r.median);
            /* one pass allowed: not converged, and the final (empty) set is described */
            r = run_on(ctx, x, sizes[s], 3.0, 1);
            cr_assert(r.count == 0 && r.iterations == 1 && r.converged == 0 && isnan(r.median));
        }
    /* one infinity makes NumPy's std NaN, so the bounds are NaN and every value goes */
    float inf_case[5] = { 1, 2, INFINITY, 3, NAN };
    gpuws_sigma_clip_result r = run_on(ctx, inf_case, 5, 3.0, 100);
    cr_assert(r.count == 0 && r.iterations == 2, "%s: with +inf: count %zu, %d iterations", test_backend_name(*kind),
              r.count, r.iterations);
    inf_case[0] = -INFINITY;
    r = run_on(ctx, inf_case, 5, 3.0, 100);
    cr_assert(r.count == 0 && r.iterations == 2);
    /* a NaN is ignored, not a value: {NaN, 4, NaN} is {4} */
    float one[3] = { NAN, 4.0f, NAN };
    r = run_on(ctx, one, 3, 3.0, 100);
    cr_assert(r.count == 0 && r.iterations == 2);
    /* {1, 2}: median 1.5, std 0.5, bounds (0, 3) keep both */
    float two[2] = { 2.0f, 1.0f };
    r = run_on(ctx, two, 2, 3.0, 100);
    cr_assert(r.count == 2 && r.median == 1.5 && r.mean == 1.5 && r.std == 0.5 && r.iterations == 1 && r.converged == 1,
              "%s: {2, 1}: count %zu median %g mean %g std %g", test_backend_name(*kind), r.count, r.median, r.mean,
              r.std);
    gpuws_context_destroy(ctx);
}

/* Bad input: a clear status, nothing written to *result. */
BACKEND_TEST(sigma_clip, bad_input_is_refused_and_leaves_result_untouched)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 1000 };
    static float x[N];
    for (size_t i = 0; i < N; i++) x[i] = NAN;
    gpuws_buffer *d = test_buffer_from(ctx, x, sizeof x);
    gpuws_sigma_clip_result r, poison;
    memset(&poison, 0x5A, sizeof poison);
    r = poison;
    gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
#define EXPECT_REFUSED(st, call)                                                                                       \
    do {                                                                                                               \
        TEST_FAILS(st, call);                                                                                          \
        cr_assert(memcmp(&r, &poison, sizeof r) == 0, "%s wrote *result on error", #call);                             \
        cr_assert_neq(gpuws_last_error()[0], 0, "no detail message");                                                  \
    } while (0)
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, NULL, &r)); /* all NaN */
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, 1, d, NULL, &r));
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, 0, d, NULL, &r)); /* zero size */
    x[500] = 1.0f;
    TEST_OK(gpuws_buffer_write(d, 0, x, sizeof x));
    o.kappa = 0;
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, &o, &r));
    o.kappa = NAN;
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, &o, &r));
    o.kappa = INFINITY;
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, &o, &r));
    o.kappa = 3;
    o.max_iterations = 0;
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, &o, &r));
    o.max_iterations = 10;
    EXPECT_REFUSED(GPUWS_ERR_OUT_OF_RANGE, gpuws_sigma_clip(NULL, N + TEST_GUARD_BYTES, d, &o, &r));
    EXPECT_REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, NULL, &o, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip(NULL, N, d, &o, NULL));
    /* the one non-NaN value: a valid call after all the refusals */
    TEST_OK(gpuws_sigma_clip(NULL, N, d, &o, &r));
    cr_assert(r.count == 0 && r.iterations == 2, "{1.0 among NaNs}: count %zu, %d iterations", r.count, r.iterations);
    gpuws_buffer_destroy(d);
    gpuws_context_destroy(ctx);
}

/* The device state is reset per call: alternating sizes and data on one stream give each call's own answer. */
BACKEND_TEST(sigma_clip, consecutive_calls_are_independent)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t sizes[] = { 70001, 5, 300007, 70001 };
    for (size_t i = 0; i < 4; i++) {
        float *x = make_sky(sizes[i], test_seed(false) + i, (double)i, 10, 0);
        gpuws_sigma_clip_result want = reference(x, sizes[i], 3.0, 100), got = run_on(ctx, x, sizes[i], 3.0, 100);
        check_result(test_backend_name(*kind), x, sizes[i], &got, &want);
        free(x);
    }
    gpuws_context_destroy(ctx);
}

/* Even counts: the upper middle value can be the same value, in the next level-3 bin, or past the level-2 bucket
 * (found by the "smallest key above" fallback); κ = 100 keeps everything, so the median is the whole set's. */
BACKEND_TEST(sigma_clip, even_counts_average_the_two_middle_values)
{
    gpuws_context *ctx = test_open(*kind);
    const float one = 1.0f, u = nextafterf(1.0f, 2.0f) - 1.0f; /* 1 ulp at 1 */
    const struct {
        float x[6];
        size_t n;
        double median;
    } sets[] = {
        { { one, one + u, one + 2 * u, one + 3 * u },
          4,
          ((double)(one + u) + (double)(one + 2 * u)) / 2 },                                 /* next L3 bin */
        { { 1, 5, 5, 9 }, 4, 5.0 },                                                          /* equal middles */
        { { one + 1024 * u, one, 3, -1 }, 4, ((double)one + (double)(one + 1024 * u)) / 2 }, /* next L2 bucket */
        { { -1e-30f, 1e-30f }, 2, 0.0 },                                                     /* other L1 bins */
        { { -0.0f, 0.0f, 0.0f, -0.0f, 7, -7 }, 6, 0.0 },                                     /* signed zeros */
        { { 2, 3, 2, 3, 2, 3 }, 6, 2.5 },
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        gpuws_sigma_clip_result r = run_on(ctx, sets[i].x, sets[i].n, 100.0, 100);
        cr_assert(r.count == sets[i].n && r.iterations == 1 && r.median == sets[i].median,
                  "%s: set %zu: count %zu, %d iterations, median %.17g, expected %.17g", test_backend_name(*kind), i,
                  r.count, r.iterations, r.median, sets[i].median);
        gpuws_sigma_clip_result want = reference(sets[i].x, sets[i].n, 100.0, 100);
        check_result(test_backend_name(*kind), sets[i].x, sets[i].n, &r, &want);
    }
    gpuws_context_destroy(ctx);
}

/* A CPU OpenCL device gets a few work-groups; a GPU gets hundreds, so its last group combines several partials
 * per work-item. Forcing 300 groups runs that path here too. */
Test(sigma_clip, many_work_groups_on_opencl)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_OPENCL);
    test_tune(ctx, "sigma_clip_groups", "300");
    const size_t sizes[] = { 262147, 1000, 1 };
    for (size_t i = 0; i < 3; i++) {
        float *x = make_sky(sizes[i], test_seed(false) + 17, 0.0, 50, sizes[i] > 5 ? 5 : 0);
        gpuws_sigma_clip_result want = reference(x, sizes[i], 3.0, 100), got = run_on(ctx, x, sizes[i], 3.0, 100);
        check_result("opencl, 300 groups", x, sizes[i], &got, &want);
        free(x);
    }
    gpuws_context_destroy(ctx);
}

/* ---- more values than 32-bit counters hold ---- */

/* The NumPy loop on a multiset: k distinct values v (ascending) with their counts c. Independent of the library:
 * the middle values by walking the counts, mean and population variance in long double from the exact counts. */
static gpuws_sigma_clip_result clip_multiset(const float *v, const uint64_t *c, size_t k, double kappa, int max_it)
{
    gpuws_sigma_clip_result r = { 0 };
    size_t a = 0, b = k; /* the kept set: v[a..b) with their counts */
    int it = 0, converged = 0;
    for (;;) {
        uint64_t n = 0;
        for (size_t i = a; i < b; i++) n += c[i];
        double med = NAN, mean = NAN, std = NAN;
        if (n) {
            double mid[2];
            const uint64_t rank[2] = { (n - 1) / 2, n / 2 };
            for (int m = 0; m < 2; m++) {
                uint64_t below = 0;
                size_t i = a;
                while (below + c[i] <= rank[m]) below += c[i++];
                mid[m] = (double)v[i];
            }
            med = (mid[0] + mid[1]) / 2.0;
            long double s = 0, q = 0;
            for (size_t i = a; i < b; i++) s += (long double)c[i] * v[i];
            const long double mu = s / (long double)n;
            for (size_t i = a; i < b; i++) q += (long double)c[i] * ((long double)v[i] - mu) * ((long double)v[i] - mu);
            mean = (double)mu;
            std = (double)sqrtl(q / (long double)n);
        }
        r.count = (size_t)n, r.median = med, r.mean = mean, r.std = std;
        if (it == max_it || converged) break;
        it++;
        const double t = kappa * std, lo = med - t, hi = med + t;
        size_t na = a, nb = b;
        while (na < nb && !((double)v[na] > lo)) na++;
        while (nb > na && !((double)v[nb - 1] < hi)) nb--;
        converged = na == a && nb == b;
        a = na, b = nb;
    }
    r.iterations = it, r.converged = converged;
    return r;
}

/* 2^32 + 3 values: more than any 32-bit count holds. All but three lie in one level-1 and one level-2 bin of the
 * kernels' radix select (1 + j 2^-23, j = 0..3, repeated: keys that differ in bits 1..0 only), so those bins hold
 * more than 2^32 values; the three outliers (-1000, 1000, 3e6) go in the first pass, the second keeps the rest.
 * Filled on the device: a 16-byte pattern, then the outliers. The shifted sums of every work-item are exact here
 * (multiples of 2^-23 and 2^-46), so only the items' means and the combination steps round: the mean within 2^-44
 * (64 ulps of 1) and the std within 1e-12 relative; count, median and passes exactly. Needs 16 GiB in one buffer
 * on a GPU with 2 GiB to spare; skipped elsewhere. */
BACKEND_TEST(sigma_clip, more_values_than_32_bit_counts_hold)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip_test("cpu: runs on a GPU only (2^32 values, 16 GiB)");
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    const size_t ramp = (size_t)1 << 32, n = ramp + 3, bytes = n * sizeof(float), spare = (size_t)2 << 30;
    if (d.type != GPUWS_DEVICE_GPU || d.global_mem_bytes < bytes + spare || d.max_alloc_bytes < bytes) {
        char why[320];
        snprintf(why, sizeof why,
                 "%s: %s: needs a GPU with %zu bytes in one buffer and %zu more (it has %llu, at most %llu in one)",
                 test_backend_name(*kind), d.name, bytes, spare, (unsigned long long)d.global_mem_bytes,
                 (unsigned long long)d.max_alloc_bytes);
        gpuws_context_destroy(ctx);
        cr_skip_test("%s", why);
    }
    const float u = 0x1p-23f, v[7] = { -1000.0f, 1.0f, 1.0f + u, 1.0f + 2 * u, 1.0f + 3 * u, 1000.0f, 3e6f };
    const uint64_t c[7] = { 1, ramp / 4, ramp / 4, ramp / 4, ramp / 4, 1, 1 };
    const float pattern[4] = { v[1], v[2], v[3], v[4] }, outliers[3] = { v[6], v[0], v[5] };
    gpuws_buffer *buf;
    TEST_OK(gpuws_buffer_create(ctx, bytes, &buf));
    TEST_OK(gpuws_buffer_fill(buf, 0, pattern, sizeof pattern, ramp * sizeof(float)));
    TEST_OK(gpuws_buffer_write(buf, ramp * sizeof(float), outliers, sizeof outliers));
    const gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    gpuws_sigma_clip_result got;
    memset(&got, TEST_POISON_BYTE, sizeof got);
    TEST_OK(gpuws_sigma_clip(NULL, n, buf, &o, &got));
    const gpuws_sigma_clip_result want = clip_multiset(v, c, 7, o.kappa, o.max_iterations);
    cr_assert(want.count == ramp && want.iterations == 2 && want.converged == 1,
              "the expectation: count %zu, %d passes", want.count, want.iterations);
    cr_assert(got.count == want.count && got.iterations == want.iterations && got.converged == want.converged &&
                  got.median == want.median,
              "%s: count %zu median %.17g after %d passes (converged %d); expected %zu %.17g after %d",
              test_backend_name(*kind), got.count, got.median, got.iterations, got.converged, want.count, want.median,
              want.iterations);
    cr_assert(fabs(got.mean - want.mean) <= 0x1p-44 && fabs(got.std - want.std) <= 1e-12 * want.std,
              "%s: mean %.17g std %.17g; expected %.17g %.17g", test_backend_name(*kind), got.mean, got.std, want.mean,
              want.std);
    gpuws_buffer_destroy(buf);
    gpuws_context_destroy(ctx);
}

/* ---- host values of any number: gpuws_sigma_clip_host ---- */

/* On nparts parts; asserts result untouched on error is not needed here: every call below succeeds. */
static gpuws_sigma_clip_result host_on(const float *x, size_t n, double kappa, int max_it, size_t nparts)
{
    gpuws_sigma_clip_options o = { .struct_size = sizeof o, .kappa = kappa, .max_iterations = max_it };
    gpuws_sigma_clip_result r;
    memset(&r, 0xAB, sizeof r);
    TEST_OK(gpuws__sigma_clip_host_split(x, n, &o, nparts, NULL, NULL, &r));
    return r;
}

/* The same bits for any split of the values (exact sums, histograms), and the reference's kept set, median,
 * iterations; mean and std within the reference's bounds. */
static void host_agrees(const char *what, const float *x, size_t n, double kappa, int max_it)
{
    const gpuws_sigma_clip_result want = reference(x, n, kappa, max_it), one = host_on(x, n, kappa, max_it, 1);
    check_result(what, x, n, &one, &want);
    static const size_t splits[] = { 2, 3, 7, 64 };
    for (size_t s = 0; s < sizeof splits / sizeof *splits; s++) {
        if (splits[s] > n) break;
        const gpuws_sigma_clip_result r = host_on(x, n, kappa, max_it, splits[s]);
        cr_assert(memcmp(&r, &one, sizeof r) == 0,
                  "%s: %zu parts give count %zu median %.17g mean %.17g std %.17g; one part %zu %.17g %.17g %.17g",
                  what, splits[s], r.count, r.median, r.mean, r.std, one.count, one.median, one.mean, one.std);
    }
}

Test(sigma_clip, host_matches_numpy_loop)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    golden g[64];
    size_t m = read_golden(g, 64);
    for (size_t i = 0; i < m; i++) {
        float *x = read_f32(g[i].input, g[i].n);
        gpuws_sigma_clip_options o = { .struct_size = sizeof o, .kappa = g[i].kappa, .max_iterations = g[i].max_it };
        gpuws_sigma_clip_result r;
        TEST_OK(gpuws_sigma_clip_host(ctx, x, g[i].n, &o, &r));
        check_result(g[i].name, x, g[i].n, &r, &g[i].want);
        host_agrees(g[i].name, x, g[i].n, g[i].kappa, g[i].max_it);
        free(x);
    }
    gpuws_context_destroy(ctx);
}

Test(sigma_clip, host_agrees_with_reference_for_any_split)
{
    static const struct {
        size_t n;
        double offset;
        size_t sources, nan_every;
        double kappa;
        int max_it;
    } skies[] = {
        { 1, 0.0, 0, 0, 3.0, 100 },           { 2, 0.0, 0, 0, 3.0, 100 },       { 1000, 0.0, 5, 0, 3.0, 100 },
        { 1001, 0.0, 5, 0, 3.0, 100 },        { 65521, 0.0, 40, 7, 3.0, 100 },  { 65521, 1000.0, 40, 0, 3.0, 100 },
        { 100003, -3.5, 100, 0, 2.0, 100 },   { 100003, 0.0, 300, 11, 3.0, 2 }, { 1u << 20, 0.0, 400, 1021, 3.0, 100 },
        { 262147, 1e-30, 200, 13, 3.0, 100 }, /* tiny values: the exact sums' low exponents */
    };
    for (size_t i = 0; i < sizeof skies / sizeof *skies; i++) {
        float *x = make_sky(skies[i].n, 0x5c1 + i, skies[i].offset, skies[i].sources, skies[i].nan_every);
        char what[96];
        snprintf(what, sizeof what, "host n=%zu offset=%g", skies[i].n, skies[i].offset);
        host_agrees(what, x, skies[i].n, skies[i].kappa, skies[i].max_it);
        free(x);
    }
    /* two values, ties at the median; a constant set; infinities; denormals and huge values */
    float two[1000], konst[777], inf[101], wide[64];
    for (size_t i = 0; i < 1000; i++) two[i] = i % 3 ? 1.0f : 2.0f;
    for (size_t i = 0; i < 777; i++) konst[i] = 0.25f;
    for (size_t i = 0; i < 101; i++) inf[i] = i == 50 ? INFINITY : (float)i;
    for (size_t i = 0; i < 64; i++) wide[i] = i % 2 ? 1e-44f * (float)(i + 1) : 3e37f / (float)(i + 1);
    host_agrees("two values", two, 1000, 3.0, 100);
    host_agrees("constant", konst, 777, 3.0, 100);
    host_agrees("an infinity", inf, 101, 3.0, 100);
    host_agrees("denormals and huge values", wide, 64, 1.0, 100);
}

Test(sigma_clip, host_refuses_bad_input_and_leaves_result_untouched)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    float x[4] = { 1, 2, 3, 4 }, nan4[4] = { NAN, NAN, NAN, NAN };
    gpuws_sigma_clip_result r, poison;
    memset(&poison, 0xAB, sizeof poison);
    r = poison;
    gpuws_sigma_clip_options bad_kappa = GPUWS_SIGMA_CLIP_OPTIONS_INIT, bad_it = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    bad_kappa.kappa = 0, bad_it.max_iterations = 0;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(NULL, x, 4, NULL, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, NULL, 4, NULL, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, x, 4, NULL, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, x, 0, NULL, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, nan4, 4, NULL, &r));
    cr_assert(strstr(gpuws_last_error(), "all 4 values are NaN"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, x, 4, &bad_kappa, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_sigma_clip_host(ctx, x, 4, &bad_it, &r));
    cr_assert(memcmp(&r, &poison, sizeof r) == 0, "a refused call wrote its result");
    gpuws_context_destroy(ctx);
}

/* ---- values spread between callers: gpuws_sigma_clip_host_reduce ---- */

/* Callers on threads of one process (test_sum_group): what MPI ranks do, without MPI. */
typedef struct {
    test_sum_group *g;
    const float *x;
    size_t n;
    gpuws_sigma_clip_options o;
    gpuws_context *ctx;
    gpuws_status st;
    gpuws_sigma_clip_result r;
} caller;

static void *caller_main(void *arg)
{
    caller *c = arg;
    memset(&c->r, 0xAB, sizeof c->r);
    c->st = gpuws_sigma_clip_host_reduce(c->ctx, c->x, c->n, &c->o, test_sum_group_reduce, c->g, &c->r);
    return NULL;
}

#define CALLERS_MAX 20

/* k callers holding uneven shares of x (the first none); returns each one's status and result. */
static void run_callers(gpuws_context *ctx, const float *x, size_t n, size_t k, const gpuws_sigma_clip_options *o,
                        caller *cs)
{
    test_sum_group *g = test_sum_group_new((unsigned)k, 1 << 18);
    pthread_t t[CALLERS_MAX];
    cr_assert(k <= CALLERS_MAX);
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        const size_t share = i == 0 ? 0 : i + 1 == k ? n - at : (n - at) / 3;
        cs[i] = (caller){ .g = g, .x = x + at, .n = share, .o = o[i], .ctx = ctx };
        at += share;
        pthread_create(&t[i], NULL, caller_main, &cs[i]);
    }
    for (size_t i = 0; i < k; i++) pthread_join(t[i], NULL);
    test_sum_group_free(g);
}

/* Twenty callers (as twenty MPI ranks) agree on their options: the check sums the options' pieces and their squares
 * over the callers, which must not overflow however many they are. */
Test(sigma_clip, twenty_callers_agree_and_get_the_bits_of_one_call)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    const size_t n = 20011;
    float *x = make_sky(n, 0x20c, 0.5, 20, 0);
    gpuws_sigma_clip_options o[CALLERS_MAX];
    for (int i = 0; i < CALLERS_MAX; i++) o[i] = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    gpuws_sigma_clip_result want;
    TEST_OK(gpuws_sigma_clip_host(ctx, x, n, &o[0], &want));
    caller cs[CALLERS_MAX];
    run_callers(ctx, x, n, CALLERS_MAX, o, cs);
    for (size_t i = 0; i < CALLERS_MAX; i++) {
        cr_assert_eq(cs[i].st, GPUWS_OK, "caller %zu of %d: status %d", i, CALLERS_MAX, cs[i].st);
        cr_assert(memcmp(&cs[i].r, &want, sizeof want) == 0, "caller %zu of %d: not the bits of one call", i,
                  CALLERS_MAX);
    }
    free(x);
    gpuws_context_destroy(ctx);
}

Test(sigma_clip, values_spread_between_callers_give_the_bits_of_one_call)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    const size_t n = 300007;
    gpuws_sigma_clip_options o[4];
    for (int i = 0; i < 4; i++) o[i] = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    /* a sky with an offset: the middle ranks lie in a few wide buckets (pass A takes their histograms); a sky around
     * zero: in many narrow ones, whose keys one call takes in pass A and callers with a reducer find in pass B */
    static const double offsets[2] = { 0.5, 0.0 };
    float *x = NULL;
    for (int s = 0; s < 2; s++) {
        free(x);
        x = make_sky(n, 0xca11, offsets[s], 150, 17);
        gpuws_sigma_clip_result want;
        TEST_OK(gpuws_sigma_clip_host(ctx, x, n, &o[0], &want));
        for (size_t k = 2; k <= 4; k++) {
            caller cs[4];
            run_callers(ctx, x, n, k, o, cs);
            for (size_t i = 0; i < k; i++) {
                cr_assert_eq(cs[i].st, GPUWS_OK, "offset %g, %zu callers: caller %zu failed", offsets[s], k, i);
                cr_assert(memcmp(&cs[i].r, &want, sizeof want) == 0,
                          "offset %g, %zu callers: caller %zu has count %zu median %.17g mean %.17g std %.17g; one "
                          "call %zu %.17g %.17g %.17g",
                          offsets[s], k, i, cs[i].r.count, cs[i].r.median, cs[i].r.mean, cs[i].r.std, want.count,
                          want.median, want.mean, want.std);
            }
        }
    }
    /* options that differ, or one caller's invalid: every caller fails, none hangs, no result written */
    o[2].kappa = 2.5;
    caller cs[4];
    run_callers(ctx, x, n, 3, o, cs);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(cs[i].st, GPUWS_ERR_INVALID_ARGUMENT, "caller %zu of callers with different kappas: status %d", i,
                     cs[i].st);
        cr_assert_eq(cs[i].r.iterations, (int)0xABABABAB, "caller %zu wrote a result", i);
    }
    o[2].kappa = 3.0, o[1].max_iterations = 0;
    run_callers(ctx, x, n, 3, o, cs);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(cs[i].st, GPUWS_ERR_INVALID_ARGUMENT, "caller %zu: status %d", i, cs[i].st);
    free(x);
    gpuws_context_destroy(ctx);
}
