/* sigma_clip_parts: κ-σ clipping of values spread over several parts (buffers of one or several contexts), whose
 * result's bits depend only on the values and the chunk boundaries.
 *
 * The oracle below is independent of the library: NumPy's loop on a sorted copy of the non-NaN values (the kept set
 * an index range of it; the median the middle values; the next set by the comparisons (double)x > m - κs and
 * (double)x < m + κs), with mean and std from the chunk definition written out plainly: per chunk of `chunk` values,
 * 256 lanes, lane t summing the chunk's kept values t, t + 256, ... in order with shifts, the lanes combined by Chan's
 * formulas in the tree h = 128, ..., 1, the chunks combined in order. Every split of the values into parts at
 * multiples of the chunk, on every backend, must give the oracle's bits for count, median, mean, std, iterations and
 * converged. Against gpuws_sigma_clip on the same backend: count, median, iterations and converged equal, mean and std
 * within the bounds test_sigma_clip.c states (Higham's bound for f64 sums in any order). */
#include "support.h"
#include "sigma_clip_sky.h"
#include "core/alloc.h"
#include "sigma_clip/sigma_clip_parts.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

/* ---- the oracle ---- */

static uint32_t key_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static int by_key(const void *a, const void *b)
{
    const uint32_t x = key_of(*(const float *)a), y = key_of(*(const float *)b);
    return (x > y) - (x < y);
}

typedef struct {
    uint64_t n;
    double mean, m2;
} tri;

/* Chan's update, each operation rounded on its own. */
static void o_chan(tri *a, tri b)
{
    if (b.n == 0) return;
    if (a->n == 0) {
        *a = b;
        return;
    }
    const uint64_t n = a->n + b.n;
    const double d = b.mean - a->mean;
    const double f = (double)b.n / (double)n;
    const double df = d * f;
    a->mean = a->mean + df;
    double p = d * d;
    p = p * (double)a->n;
    p = p * f;
    const double q = b.m2 + p;
    a->m2 = a->m2 + q;
    a->n = n;
}

static bool oracle_fused = true; /* false: d * d rounded before the add (to show that a test can tell) */

/* (count, mean, M2) of the kept values (keys in [klo, khi]) of x[0..n) by the chunk definition. */
static tri o_sums(const float *x, size_t n, size_t chunk, uint32_t klo, uint32_t khi)
{
    tri all = { 0, 0.0, 0.0 };
    for (size_t c0 = 0; c0 < n; c0 += chunk) {
        const size_t len = n - c0 < chunk ? n - c0 : chunk;
        tri lane[256];
        for (size_t t = 0; t < 256; t++) {
            uint64_t cnt = 0;
            double K = 0, s1 = 0, s2 = 0;
            for (size_t i = t; i < len; i += 256) {
                const uint32_t k = key_of(x[c0 + i]);
                if (k < klo || k > khi) continue;
                const double v = (double)x[c0 + i];
                if (cnt == 0) K = v;
                const double d = v - K;
                cnt++;
                s1 = s1 + d;
                if (oracle_fused) s2 = fma(d, d, s2);
                else s2 = s2 + d * d;
            }
            lane[t] = (tri){ cnt, 0.0, 0.0 };
            if (cnt) {
                const double c = (double)cnt;
                lane[t].mean = K + s1 / c;
                double q = s1 * s1;
                q = q / c;
                lane[t].m2 = fmax(s2 - q, 0.0);
            }
        }
        for (size_t h = 128; h > 0; h /= 2)
            for (size_t t = 0; t < h; t++) o_chan(&lane[t], lane[t + h]);
        o_chan(&all, lane[0]);
    }
    return all;
}

static gpuws_sigma_clip_result oracle(const float *x, size_t n, size_t chunk, double kappa, int max_it)
{
    float *s = malloc(n * sizeof *s + 4);
    cr_assert(s);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) s[m++] = x[i];
    cr_assert(m > 0, "the oracle needs a non-NaN value");
    qsort(s, m, sizeof *s, by_key);
    size_t a = 0, b = m; /* the kept set: s[a..b) */
    int it = 0, converged = 0;
    gpuws_sigma_clip_result r;
    for (;;) {
        const size_t k = b - a;
        double med = NAN, mean = NAN, std = NAN;
        if (k) {
            const double sum = (double)s[a + (k - 1) / 2] + (double)s[a + k / 2];
            med = sum * 0.5;
            const tri t = o_sums(x, n, chunk, key_of(s[a]), key_of(s[b - 1]));
            cr_assert_eq(t.n, k, "oracle: the chunks count %llu kept values, the sorted range %zu",
                         (unsigned long long)t.n, k);
            mean = t.mean;
            std = sqrt(t.m2 / (double)t.n);
            if (isinf(s[a]) || isinf(s[b - 1])) mean = std = NAN; /* as gpuws_sigma_clip: an infinity, NaN */
        }
        r = (gpuws_sigma_clip_result){ k, med, mean, std, 0, 0 };
        if (it == max_it || converged) break;
        it++;
        const double t = kappa * std;
        const double lo = med - t;
        const double hi = med + t;
        size_t na = a, nb = b;
        while (na < nb && !((double)s[na] > lo)) na++;
        while (nb > na && !((double)s[nb - 1] < hi)) nb--;
        converged = na == a && nb == b;
        a = na, b = nb;
    }
    r.iterations = it, r.converged = converged;
    free(s);
    return r;
}

/* ---- data ---- */

/* 513 values, NaN but for three of lane 0 (indices 0, 256, 512) and, with `two_lanes`, two of lane 1 (1, 257), each
 * ±10^u for u uniform in [-6, 3). With a chunk of 513 values or more these lanes' sums (and their one combination)
 * alone make the mean and std, so the rounding of a single step shows in the result's bits, where in a sky the other
 * lanes' sums hide it: one lane tells a fused s2 = fma(d, d, s2) from d * d rounded first, two lanes tell Chan's
 * steps rounded one by one from fused ones. */
#define SPARSE_N 513
static void make_sparse(float *x, uint64_t seed, bool two_lanes)
{
    static const size_t at[5] = { 0, 256, 512, 1, 257 };
    for (size_t i = 0; i < SPARSE_N; i++) x[i] = NAN;
    for (size_t i = 0; i < (two_lanes ? 5u : 3u); i++) {
        const double m = pow(10.0, 9.0 * test_rand_uniform(&seed) - 6.0);
        x[at[i]] = (float)(test_rand_u64(&seed) & 1 ? m : -m);
    }
}

/* ---- running the call ---- */

#define MAX_PARTS 4

/* A split: part i holds sizes[i] values (the values in order) on context ctx_of[i] (of the test's three), on that
 * context's default stream, or on a stream of its own when own_stream[i]. */
typedef struct {
    const char *name;
    size_t np;
    size_t sizes[MAX_PARTS];
    int ctx_of[MAX_PARTS];
    bool own_stream[MAX_PARTS];
} split;

/* The splits of n values into chunks of `chunk`: one part; two; three with an empty part in the middle; three where
 * the first and the last share a stream. Part boundaries at multiples of the chunk. */
static size_t splits_for(size_t n, size_t chunk, split *sp)
{
    const size_t nch = (n + chunk - 1) / chunk, c1 = nch / 3 * chunk, c2 = (nch - nch / 3) / 2 * chunk;
    const size_t h = nch / 2 * chunk;
    sp[0] = (split){ "1 part", 1, { n }, { 0 }, { false } };
    sp[1] = (split){ "2 parts", 2, { h, n - h }, { 0, 1 }, { false, true } };
    sp[2] = (split){ "3 parts and an empty one", 4, { c1, 0, c2, n - c1 - c2 }, { 0, 1, 1, 2 }, { false } };
    sp[3] = (split){ "3 parts, two on one stream", 3, { c1, c2, n - c1 - c2 }, { 0, 1, 0 }, { true, false, true } };
    return 4;
}

static gpuws_status run_split(gpuws_context *const ctxs[3], const split *sp, const float *x, size_t chunk, double kappa,
                              int max_it, gpuws_sigma_clip_result *r)
{
    gpuws__clip_part parts[MAX_PARTS];
    gpuws_buffer *bufs[MAX_PARTS] = { NULL };
    gpuws_stream *own[3] = { NULL };
    size_t at = 0;
    for (size_t i = 0; i < sp->np; i++) {
        gpuws_context *ctx = ctxs[sp->ctx_of[i]];
        gpuws_stream *s;
        if (sp->own_stream[i]) {
            if (!own[sp->ctx_of[i]]) TEST_OK(gpuws_stream_create(ctx, &own[sp->ctx_of[i]]));
            s = own[sp->ctx_of[i]];
        } else {
            TEST_OK(gpuws_context_get_default_stream(ctx, &s));
        }
        if (sp->sizes[i]) bufs[i] = test_buffer_from(ctx, x + at, sp->sizes[i] * sizeof *x);
        parts[i] = (gpuws__clip_part){ s, bufs[i], sp->sizes[i] };
        at += sp->sizes[i];
    }
    const gpuws_sigma_clip_options o = { sizeof o, kappa, max_it };
    const gpuws_status st = gpuws__sigma_clip_parts(parts, sp->np, chunk, &o, r);
    at = 0;
    for (size_t i = 0; i < sp->np; i++) {
        if (bufs[i]) { /* input only */
            float *back = test_download(bufs[i], sp->sizes[i] * sizeof *x);
            cr_assert(memcmp(back, x + at, sp->sizes[i] * sizeof *x) == 0, "%s: part %zu's values were modified",
                      sp->name, i);
            test_check_guard(bufs[i], sp->sizes[i] * sizeof *x, "data");
            free(back);
            gpuws_buffer_destroy(bufs[i]);
        }
        at += sp->sizes[i];
    }
    for (size_t c = 0; c < 3; c++)
        if (own[c]) gpuws_stream_destroy(own[c]);
    return st;
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

static void assert_oracle_bits(const char *what, const gpuws_sigma_clip_result *got,
                               const gpuws_sigma_clip_result *want)
{
    cr_assert(got->count == want->count && same_bits(got->median, want->median) && same_bits(got->mean, want->mean) &&
                  same_bits(got->std, want->std) && got->iterations == want->iterations &&
                  got->converged == want->converged,
              "%s: count %zu median %a mean %a std %a, %d iterations (converged %d); the oracle: %zu %a %a %a, %d (%d)",
              what, got->count, got->median, got->mean, got->std, got->iterations, got->converged, want->count,
              want->median, want->mean, want->std, want->iterations, want->converged);
}

/* got vs gpuws_sigma_clip's `want` on the same values: the kept set, median and passes exactly; mean and std within
 * test_sigma_clip.c's bounds. */
static void assert_near_one_call(const char *what, const float *x, size_t n, const gpuws_sigma_clip_result *got,
                                 const gpuws_sigma_clip_result *want)
{
    cr_assert(got->count == want->count && same_bits(got->median, want->median) &&
                  got->iterations == want->iterations && got->converged == want->converged,
              "%s: count %zu median %.17g, %d iterations (converged %d); gpuws_sigma_clip: %zu %.17g, %d (%d)", what,
              got->count, got->median, got->iterations, got->converged, want->count, want->median, want->iterations,
              want->converged);
    if (isnan(want->mean)) {
        cr_assert(isnan(got->mean) && isnan(got->std), "%s: mean %g std %g, expected NaN", what, got->mean, got->std);
        return;
    }
    double mx = 0, md = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            mx = fmax(mx, fabs((double)x[i]));
            md = fmax(md, fabs((double)x[i] - want->mean));
        }
    const double mean_tol = 4.0 * (double)n * U * mx;
    cr_assert(fabs(got->mean - want->mean) <= mean_tol, "%s: mean %.17g, gpuws_sigma_clip %.17g (allowed %.3g)", what,
              got->mean, want->mean, mean_tol);
    if (want->std == 0) {
        cr_assert(got->std == 0, "%s: std %.17g, gpuws_sigma_clip 0", what, got->std);
    } else {
        const double std_tol = 4.0 * (double)n * U * md * md / want->std;
        cr_assert(fabs(got->std - want->std) <= std_tol, "%s: std %.17g, gpuws_sigma_clip %.17g (allowed %.3g)", what,
                  got->std, want->std, std_tol);
    }
}

static gpuws_sigma_clip_result one_call(gpuws_context *ctx, const float *x, size_t n, double kappa, int max_it)
{
    gpuws_buffer *d = test_buffer_from(ctx, x, n * sizeof *x);
    const gpuws_sigma_clip_options o = { sizeof o, kappa, max_it };
    gpuws_sigma_clip_result r;
    TEST_OK(gpuws_sigma_clip(NULL, n, d, &o, &r));
    gpuws_buffer_destroy(d);
    return r;
}

/* Split `which` of splits_for(n, chunk) of x on the backend of ctxs, kappa 3 and 100 iterations: its result. */
static gpuws_sigma_clip_result clip_split(gpuws_context *const ctxs[3], const float *x, size_t n, size_t chunk,
                                          size_t which)
{
    gpuws_sigma_clip_result r;
    split sp[4];
    splits_for(n, chunk, sp);
    TEST_OK(run_split(ctxs, &sp[which], x, chunk, 3.0, 100, &r));
    return r;
}

/* Every split of x on the backend of ctxs: the oracle's bits, and gpuws_sigma_clip's answer. */
static void check_all_splits(gpuws_context *const ctxs[3], const char *name, const float *x, size_t n, size_t chunk,
                             double kappa, int max_it)
{
    const gpuws_sigma_clip_result want = oracle(x, n, chunk, kappa, max_it);
    const gpuws_sigma_clip_result single = one_call(ctxs[0], x, n, kappa, max_it);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctxs[0], &d));
    split sp[4];
    const size_t ns = splits_for(n, chunk, sp);
    for (size_t i = 0; i < ns; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s: %s (n %zu, chunk %zu, kappa %g, max_iterations %d), %s",
                 test_backend_name(d.backend), name, n, chunk, kappa, max_it, sp[i].name);
        gpuws_sigma_clip_result got;
        memset(&got, TEST_POISON_BYTE, sizeof got);
        const gpuws_status st = run_split(ctxs, &sp[i], x, chunk, kappa, max_it, &got);
        cr_assert_eq(st, GPUWS_OK, "%s: %s: %s", what, gpuws_status_name(st), gpuws_last_error());
        assert_oracle_bits(what, &got, &want);
        assert_near_one_call(what, x, n, &got, &single);
    }
}

static void open3(gpuws_backend_kind kind, gpuws_context *ctxs[3])
{
    for (int i = 0; i < 3; i++) ctxs[i] = test_open(kind);
}

static void close3(gpuws_context *ctxs[3])
{
    for (int i = 0; i < 3; i++) gpuws_context_destroy(ctxs[i]);
}

/* ---- the tests ---- */

typedef struct {
    gpuws_backend_kind backend;
    char name[40]; /* an array: the parameters are copied to the test's process */
    size_t n, chunk;
    double offset;
    size_t sources, nan_every;
    double kappa;
    int max_it;
} sky_case;

ParameterizedTestParameters(sigma_clip_parts, skies_give_the_oracle_bits_for_any_split)
{
    static const sky_case rows[] = {
        { 0, "sky at an offset, NaNs", 300007, 65536, 1000.0, 100, 7, 3.0, 100 }, /* chunk does not divide n */
        { 0, "sky around zero", 262144, 16384, 0.0, 200, 1021, 3.0, 100 },
        { 0, "many small chunks", 100003, 1000, -3.5, 100, 0, 2.0, 100 },
        { 0, "max_iterations 1", 100003, 4096, 0.0, 300, 11, 3.0, 1 },
        { 0, "max_iterations 2", 100003, 4096, 0.0, 300, 11, 3.0, 2 },
        { 0, "one chunk, partial lanes", 1000, 5000, 0.5, 5, 0, 3.0, 100 },
        { 0, "chunks shorter than the lanes", 3001, 100, 2.0, 20, 0, 1.5, 100 },
    };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

ParameterizedTest(sky_case *c, sigma_clip_parts, skies_give_the_oracle_bits_for_any_split)
{
    gpuws_context *ctxs[3];
    open3(c->backend, ctxs);
    float *x = make_sky(c->n, test_seed(false) + c->n, c->offset, c->sources, c->nan_every);
    check_all_splits(ctxs, c->name, x, c->n, c->chunk, c->kappa, c->max_it);
    free(x);
    close3(ctxs);
}

/* The oracle's own sanity: a sky's passes remove values (so the max_iterations rows stop early) and the result is
 * not converged after one pass; the mean depends on the chunk boundaries only in its last bits; and the sparse sets
 * of one lane have stds that a multiply-add fused or not changes, so the backends' bits test it. */
Test(sigma_clip_parts, the_oracle_clips_and_its_sums_are_close_for_any_chunk)
{
    float *x = make_sky(100003, test_seed(false) + 100003, 0.0, 300, 11);
    const gpuws_sigma_clip_result one = oracle(x, 100003, 4096, 3.0, 1), all = oracle(x, 100003, 4096, 3.0, 100);
    cr_assert(one.converged == 0 && one.iterations == 1 && all.converged == 1 && all.iterations > 2 &&
                  all.count < one.count,
              "1 pass: count %zu (converged %d); to convergence: %zu after %d", one.count, one.converged, all.count,
              all.iterations);
    const gpuws_sigma_clip_result other = oracle(x, 100003, 777, 3.0, 100);
    cr_assert(other.count == all.count && other.median == all.median && fabs(other.mean - all.mean) < 1e-15 &&
              fabs(other.std - all.std) < 1e-12 * all.std);
    free(x);
    /* the sparse sets of one lane tell a fused s2 from an unfused one */
    float y[SPARSE_N];
    int differ = 0;
    for (uint64_t i = 0; i < 64; i += 2) {
        make_sparse(y, 0x5a11 + i, false);
        const gpuws_sigma_clip_result fused = oracle(y, SPARSE_N, 1000, 100.0, 100);
        oracle_fused = false;
        const gpuws_sigma_clip_result unfused = oracle(y, SPARSE_N, 1000, 100.0, 100);
        oracle_fused = true;
        cr_assert(fused.count == 3 && unfused.count == 3 && fused.mean == unfused.mean);
        differ += fused.std != unfused.std;
    }
    cr_assert(differ > 0, "no sparse set's std depends on the fused multiply-add");
}

/* Few distinct values, constant images, infinities, tiny sets. */
BACKEND_TEST(sigma_clip_parts, special_sets_give_the_oracle_bits)
{
    gpuws_context *ctxs[3];
    open3(*kind, ctxs);
    enum { N = 5000 };
    static float x[N];
    /* two values, shuffled: ties at the median */
    uint64_t seed = test_seed(false);
    for (size_t i = 0; i < N; i++) x[i] = i < 2400 ? -2.5f : 7.0f;
    for (size_t i = N - 1; i > 0; i--) {
        const size_t j = test_rand_u64(&seed) % (i + 1);
        const float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    check_all_splits(ctxs, "two values", x, N, 512, 3.0, 100);
    /* a constant image: std 0 keeps nothing; the second pass converges on the empty set */
    for (size_t i = 0; i < 4097; i++) x[i] = 0.1f;
    check_all_splits(ctxs, "constant", x, 4097, 1000, 3.0, 100);
    check_all_splits(ctxs, "constant, 1 pass", x, 4097, 1000, 3.0, 1);
    {
        const gpuws_sigma_clip_result r = clip_split(ctxs, x, 4097, 1000, 2);
        cr_assert(r.count == 0 && r.iterations == 2 && r.converged == 1 && isnan(r.median) && isnan(r.mean) &&
                      isnan(r.std),
                  "constant: count %zu, %d iterations (converged %d), median %g", r.count, r.iterations, r.converged,
                  r.median);
    }
    /* infinities: NumPy's std is NaN, so the pass that sees one removes everything */
    float *sky = make_sky(N, test_seed(false) + 3, 5.0, 20, 0);
    sky[1234] = INFINITY;
    check_all_splits(ctxs, "+inf in a sky", sky, N, 1000, 3.0, 100);
    sky[1234] = 1.0f, sky[4321] = -INFINITY;
    check_all_splits(ctxs, "-inf in a sky", sky, N, 1000, 3.0, 100);
    free(sky);
    /* values over nine decades: a lane's differences x - K need more than 26 bits, so d * d rounds and the fused
     * s2 = fma(d, d, s2) must be fused on every backend */
    float *wide = malloc(300000 * sizeof *wide);
    cr_assert(wide);
    for (size_t i = 0; i < 300000; i++) {
        const double m = pow(10.0, 9.0 * test_rand_uniform(&seed) - 6.0);
        wide[i] = (float)(test_rand_u64(&seed) & 1 ? m : -m);
    }
    check_all_splits(ctxs, "nine decades", wide, 300000, 8192, 3.0, 100);
    free(wide);
    /* one lane's and two lanes' values, where the rounding of each step shows in the bits */
    for (uint64_t i = 0; i < 64; i++) {
        make_sparse(x, 0x5a11 + i, i % 2 == 1);
        check_all_splits(ctxs, i % 2 ? "five values in lanes 0 and 1" : "three values in lane 0", x, SPARSE_N, 1000,
                         100.0, 100);
    }
    /* tiny sets: one value, two, and NaNs around them */
    const float one[3] = { NAN, 4.0f, NAN }, two[2] = { 2.0f, 1.0f }, three[3] = { 1.0f, 1.0f, 3e38f };
    check_all_splits(ctxs, "{NaN, 4, NaN}", one, 3, 1, 3.0, 100);
    check_all_splits(ctxs, "{2, 1}", two, 2, 1, 3.0, 100);
    check_all_splits(ctxs, "{1, 1, 3e38}", three, 3, 2, 1.0, 100);
    {
        const gpuws_sigma_clip_result r = clip_split(ctxs, two, 2, 1, 1);
        cr_assert(r.count == 2 && r.median == 1.5 && r.mean == 1.5 && r.std == 0.5 && r.iterations == 1 &&
                      r.converged == 1,
                  "{2, 1}: count %zu median %g mean %g std %g", r.count, r.median, r.mean, r.std);
    }
    close3(ctxs);
}

/* All NaN, no values, bad arguments: GPUWS_ERR_INVALID_ARGUMENT with a message, *result untouched. */
BACKEND_TEST(sigma_clip_parts, bad_input_is_refused_and_leaves_result_untouched)
{
    gpuws_context *ctxs[3];
    open3(*kind, ctxs);
    enum { N = 3000 };
    static float x[N];
    for (size_t i = 0; i < N; i++) x[i] = NAN;
    gpuws_sigma_clip_result r, poison;
    memset(&poison, 0x5A, sizeof poison);
    r = poison;
    const gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    split sp[4];
    splits_for(N, 1000, sp);
    for (size_t i = 0; i < 4; i++) {
        TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, run_split(ctxs, &sp[i], x, 1000, 3.0, 100, &r));
        cr_assert(strstr(gpuws_last_error(), "all 3000 values are NaN"), "%s: %s", sp[i].name, gpuws_last_error());
    }
    gpuws_buffer *d = test_buffer_from(ctxs[0], x, sizeof x);
    gpuws_buffer *small = test_buffer_from(ctxs[1], x, 16);
    gpuws__clip_part p[2] = { { NULL, NULL, 0 }, { NULL, d, N } };
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 1, 1000, &o, &r)); /* no values */
    cr_assert(strstr(gpuws_last_error(), "no values"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 0, 1000, &o, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(NULL, 2, 1000, &o, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 2, 0, &o, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 2, ((size_t)1 << 31) + 1, &o, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 2, 1000, NULL, &r));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 2, 1000, &o, NULL));
    p[0] = (gpuws__clip_part){ NULL, NULL, 5 }; /* values but no buffer */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__sigma_clip_parts(p, 2, 1000, &o, &r));
    p[0] = (gpuws__clip_part){ NULL, small, 100 }; /* a buffer too short */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws__sigma_clip_parts(p, 2, 1000, &o, &r));
    gpuws_stream *other;
    TEST_OK(gpuws_context_get_default_stream(ctxs[2], &other));
    p[0] = (gpuws__clip_part){ other, small, 4 }; /* a stream of another context */
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws__sigma_clip_parts(p, 2, 1000, &o, &r));
    cr_assert(memcmp(&r, &poison, sizeof r) == 0, "a refused call wrote its result");
    /* one value among the NaNs: a valid call after the refusals */
    x[2999] = 1.0f;
    TEST_OK(gpuws_buffer_write(d, 0, x, sizeof x));
    TEST_OK(gpuws__sigma_clip_parts(p + 1, 1, 1000, &o, &r));
    cr_assert(r.count == 0 && r.iterations == 2 && r.converged == 1, "{1.0 among NaNs}: count %zu, %d iterations",
              r.count, r.iterations);
    gpuws_buffer_destroy(small);
    gpuws_buffer_destroy(d);
    close3(ctxs);
}

/* Every host allocation of the call made to fail in turn: GPUWS_ERR_OUT_OF_MEMORY, nothing written, nothing leaked;
 * then the call works. */
BACKEND_TEST(sigma_clip_parts, failed_allocations_leak_nothing)
{
    gpuws_context *ctxs[3];
    open3(*kind, ctxs);
    float *x = make_sky(20000, test_seed(false) + 9, 1.0, 10, 0);
    split sp[4];
    splits_for(20000, 2048, sp);
    gpuws__clip_part parts[3];
    gpuws_buffer *bufs[3];
    size_t at = 0;
    for (size_t i = 0; i < 3; i++) {
        bufs[i] = test_buffer_from(ctxs[sp[3].ctx_of[i]], x + at, sp[3].sizes[i] * sizeof *x);
        parts[i] = (gpuws__clip_part){ NULL, bufs[i], sp[3].sizes[i] };
        at += sp[3].sizes[i];
    }
    const gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    const gpuws_sigma_clip_result want = oracle(x, 20000, 2048, 3.0, 100);
    gpuws_sigma_clip_result r, poison;
    TEST_OK(gpuws__sigma_clip_parts(parts, 3, 2048, &o, &r)); /* kernels and scratch made once */
    assert_oracle_bits("warm-up", &r, &want);
    memset(&poison, 0x5A, sizeof poison);
    for (long k = 1;; k++) {
        cr_assert(k < 1000, "still failing after 1000 allocations");
        const long live = gpuws__alloc_live();
        r = poison;
        gpuws__fault_alloc_countdown(k);
        const gpuws_status st = gpuws__sigma_clip_parts(parts, 3, 2048, &o, &r);
        const bool fired = gpuws__fault_alloc_countdown(0);
        cr_assert_eq(gpuws__alloc_live(), live, "allocation %ld failed: %ld allocations leaked", k,
                     gpuws__alloc_live() - live);
        if (!fired) {
            cr_assert_eq(st, GPUWS_OK, "no allocation failed, yet %s: %s", gpuws_status_name(st), gpuws_last_error());
            assert_oracle_bits("after the failures", &r, &want);
            break;
        }
        cr_assert_eq(st, GPUWS_ERR_OUT_OF_MEMORY, "allocation %ld failed: %s: %s", k, gpuws_status_name(st),
                     gpuws_last_error());
        cr_assert(memcmp(&r, &poison, sizeof r) == 0, "allocation %ld failed, yet the result was written", k);
    }
    for (size_t i = 0; i < 3; i++) gpuws_buffer_destroy(bufs[i]);
    free(x);
    close3(ctxs);
}

/* ---- several callers: gpuws_sigma_clip_reduce, the callers on threads ---- */

typedef struct {
    test_sum_group *sum;
    gpuws_context *ctx;
    const float *x;
    size_t n, part, parts;
    double kappa;
    gpuws_status st;
    char msg[256];
    gpuws_sigma_clip_result r;
} caller;

static void *call(void *arg)
{
    caller *c = arg;
    gpuws_buffer *b = NULL;
    if (c->n && gpuws_buffer_create(c->ctx, c->n * sizeof *c->x, &b) == GPUWS_OK)
        gpuws_buffer_write(b, 0, c->x, c->n * sizeof *c->x);
    gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    o.kappa = c->kappa;
    memset(&c->r, TEST_POISON_BYTE, sizeof c->r);
    c->st = gpuws_sigma_clip_reduce(NULL, b, c->n, &o, c->part, c->parts, test_sum_group_reduce, c->sum, &c->r);
    snprintf(c->msg, sizeof c->msg, "%s", gpuws_last_error());
    gpuws_buffer_destroy(b);
    return NULL;
}

/* The callers' shares: none for the first, then whole chunks of 2^18 values, the last the rest. Runs them. */
static void run_callers(gpuws_context *const ctxs[3], const float *x, size_t n, const double kappa[3], caller c[3])
{
    test_sum_group *sum = test_sum_group_new(3, 1 << 16);
    const size_t chunk = (size_t)1 << 18, cut = chunk * 1;
    const size_t at[3] = { 0, 0, cut }, len[3] = { 0, cut, n - cut };
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (caller){
            .sum = sum, .ctx = ctxs[i], .x = x + at[i], .n = len[i], .part = (size_t)i, .parts = 3, .kappa = kappa[i]
        };
        cr_assert_eq(pthread_create(&th[i], NULL, call, &c[i]), 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    test_sum_group_free(sum);
}

/* Three callers on three contexts (one with no values) get the oracle's bits for chunks of 2^18 values, the same on
 * every caller; options that differ fail every caller; an invalid kappa fails its caller with its reason and the
 * others with "1 of 3 callers failed". CPU-type OpenCL devices run one caller, alone: PoCL can fail an assertion
 * when command queues of several threads run one kernel at once (sigma_clip_parts.c). */
BACKEND_TEST(sigma_clip_parts, callers_on_threads_get_the_oracle_bits)
{
    gpuws_context *ctxs[3];
    open3(*kind, ctxs);
    const size_t n = 2 * ((size_t)1 << 18) + 4321;
    float *x = make_sky(n, test_seed(false) + n, 0.25, 500, 997);
    const gpuws_sigma_clip_result want = oracle(x, n, (size_t)1 << 18, 3.0, 100);
    gpuws_device_info di;
    TEST_OK(gpuws_context_get_device_info(ctxs[0], &di));
    if (*kind == GPUWS_BACKEND_OPENCL && di.type == GPUWS_DEVICE_CPU) {
        gpuws_buffer *b = test_buffer_from(ctxs[0], x, n * sizeof *x);
        gpuws_sigma_clip_result got;
        test_sum_group *one = test_sum_group_new(1, 1 << 16);
        TEST_OK(gpuws_sigma_clip_reduce(NULL, b, n, NULL, 0, 1, test_sum_group_reduce, one, &got));
        assert_oracle_bits("one caller", &got, &want);
        test_sum_group_free(one);
        gpuws_buffer_destroy(b);
    } else {
        caller c[3];
        run_callers(ctxs, x, n, (const double[3]){ 3.0, 3.0, 3.0 }, c);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(c[i].st, GPUWS_OK, "caller %d: %s: %s", i, gpuws_status_name(c[i].st), c[i].msg);
            assert_oracle_bits("three callers", &c[i].r, &want);
        }
        run_callers(ctxs, x, n, (const double[3]){ 3.0, 2.5, 3.0 }, c);
        for (int i = 0; i < 3; i++)
            cr_assert(c[i].st == GPUWS_ERR_INVALID_ARGUMENT && strstr(c[i].msg, "differ"),
                      "caller %d with kappas that differ: %s: %s", i, gpuws_status_name(c[i].st), c[i].msg);
        run_callers(ctxs, x, n, (const double[3]){ 3.0, NAN, 3.0 }, c);
        for (int i = 0; i < 3; i++)
            cr_assert(c[i].st == GPUWS_ERR_INVALID_ARGUMENT && strstr(c[i].msg, i == 1 ? "kappa" : "1 of 3"),
                      "caller %d, caller 1's kappa NaN: %s: %s", i, gpuws_status_name(c[i].st), c[i].msg);
    }
    free(x);
    close3(ctxs);
}
