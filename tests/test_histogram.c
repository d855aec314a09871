/* histogram: counts over equal bins of [lo, hi), bit-exact on every backend.
 *
 * Truth: NumPy's np.histogram on golden data (tests/data/histogram_golden.txt, made by
 * tests/data/make_elementwise_golden.py: values on, beside and between edges, lo, hi, NaN, infinities), which
 * defines bins exactly as gpuws does except
 * that NumPy counts hi in the last bin (the generator removes it). Then every backend against the reference on
 * random data, both dtypes, privatised (few bins) and global-atomic (many bins) variants, several chunks. */
#include "support.h"
#include "histogram/histogram_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_dtype dtype;
    size_t n;
    double lo, hi;
    uint32_t bins;
    void *x;          /* n float or int32 values */
    uint64_t *counts; /* NumPy's */
} golden_case;

#define MAX_GOLDEN 8

/* Reads every case of the golden file (format in tests/data/make_elementwise_golden.py). */
static size_t read_golden(golden_case *cases)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/histogram_golden.txt", dir ? dir : "tests/data");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (GPUWS_TEST_DATA is set by ctest)", path);
    char line[256], type[8];
    size_t k = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        golden_case *c = &cases[k];
        char lo[64], hi[64];
        cr_assert_eq(sscanf(line, "histogram %7s %zu %63s %63s %u", type, &c->n, lo, hi, &c->bins), 5, "bad line: %s",
                     line);
        cr_assert(k < MAX_GOLDEN);
        c->dtype = strcmp(type, "f32") == 0 ? GPUWS_F32 : GPUWS_I32;
        c->lo = strtod(lo, NULL);
        c->hi = strtod(hi, NULL);
        c->x = malloc(c->n * 4);
        c->counts = malloc(c->bins * sizeof *c->counts);
        cr_assert(c->x && c->counts);
        for (size_t i = 0; i < c->n; i++) {
            cr_assert_not_null(fgets(line, sizeof line, f));
            if (c->dtype == GPUWS_F32) ((float *)c->x)[i] = (float)strtod(line, NULL); /* exact: written from floats */
            else ((int32_t *)c->x)[i] = (int32_t)strtoll(line, NULL, 10);
        }
        cr_assert_eq(fscanf(f, " counts"), 0);
        for (uint32_t b = 0; b < c->bins; b++) cr_assert_eq(fscanf(f, "%llu", (unsigned long long *)&c->counts[b]), 1);
        cr_assert_not_null(fgets(line, sizeof line, f)); /* rest of the counts line */
        k++;
    }
    fclose(f);
    cr_assert(k >= 4, "only %zu cases in %s", k, path);
    return k;
}

static void free_golden(golden_case *cases, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        free(cases[i].x);
        free(cases[i].counts);
    }
}

static void reference(const golden_case *c, uint64_t *counts)
{
    if (c->dtype == GPUWS_F32) {
        float *e = malloc((c->bins + 1) * sizeof *e);
        cr_assert(e);
        gpuws_histogram_edges_f32(c->lo, c->hi, c->bins, e);
        gpuws_histogram_ref_f32(c->x, c->n, e, c->bins, counts);
        free(e);
    } else {
        int64_t *e = malloc((c->bins + 1) * sizeof *e);
        cr_assert(e);
        gpuws_histogram_edges_i32(c->lo, c->hi, c->bins, e);
        gpuws_histogram_ref_i32(c->x, c->n, e, c->bins, counts);
        free(e);
    }
}

static void assert_counts(const uint64_t *got, const uint64_t *want, uint32_t bins, const char *what)
{
    for (uint32_t b = 0; b < bins; b++)
        cr_assert_eq(got[b], want[b], "%s: bin %u holds %llu, want %llu", what, b, (unsigned long long)got[b],
                     (unsigned long long)want[b]);
}

Test(histogram, reference_matches_numpy_golden_counts)
{
    golden_case cases[MAX_GOLDEN];
    const size_t k = read_golden(cases);
    for (size_t i = 0; i < k; i++) {
        uint64_t *got = malloc(cases[i].bins * sizeof *got);
        cr_assert(got);
        reference(&cases[i], got);
        char what[64];
        snprintf(what, sizeof what, "golden case %zu (%s)", i, gpuws_dtype_name(cases[i].dtype));
        assert_counts(got, cases[i].counts, cases[i].bins, what);
        free(got);
    }
    free_golden(cases, k);
}

/* Runs gpuws_histogram on host data; returns the downloaded counts (malloc'd). */
static uint64_t *run(gpuws_context *ctx, gpuws_dtype dt, const void *x, size_t n, double lo, double hi, uint32_t bins)
{
    const size_t cbytes = (size_t)bins * 8;
    gpuws_buffer *dx = test_buffer_from(ctx, x, n * 4), *dc = test_buffer(ctx, cbytes);
    TEST_OK(gpuws_histogram(NULL, dt, n, dx, lo, hi, bins, dc));
    uint64_t *got = test_download(dc, cbytes);
    test_check_guard(dc, cbytes, "counts");
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dc);
    return got;
}

BACKEND_TEST(histogram, every_backend_matches_numpy_golden_counts)
{
    gpuws_context *ctx = test_open(*kind);
    golden_case cases[MAX_GOLDEN];
    const size_t k = read_golden(cases);
    for (size_t i = 0; i < k; i++) {
        const golden_case *c = &cases[i];
        uint64_t *got = run(ctx, c->dtype, c->x, c->n, c->lo, c->hi, c->bins);
        char what[64];
        snprintf(what, sizeof what, "%s golden case %zu", test_backend_name(*kind), i);
        assert_counts(got, c->counts, c->bins, what);
        free(got);
    }
    free_golden(cases, k);
    gpuws_context_destroy(ctx);
}

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    size_t n;
    uint32_t bins;
    bool fresh_seed;
} h_case;

/* 7 and 256 bins: privatised in local memory; 5000 and 70000: too large for it, global atomics. */
static const size_t sizes[] = { 1, 3, 4, 5, 1000, (1u << 20) + 3 };
static const uint32_t bin_counts[] = { 1, 7, 256, 5000, 70000 };

ParameterizedTestParameters(histogram, matches_reference_bit_for_bit)
{
    enum { NS = sizeof sizes / sizeof sizes[0], NB = sizeof bin_counts / sizeof bin_counts[0] };
    static h_case cases[2 * (NS + NB + 1)];
    size_t k = 0;
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_I32 : GPUWS_F32;
        for (size_t s = 0; s < NS; s++) cases[k++] = (h_case){ 0, dt, sizes[s], 256, false };
        for (size_t s = 0; s < NB; s++) cases[k++] = (h_case){ 0, dt, 100003, bin_counts[s], false };
        cases[k++] = (h_case){ 0, dt, 300007, 100, true };
    }
    return TEST_BACKEND_PARAMS(cases, k);
}

/* Data spread a little beyond [lo, hi) with a share of exact edge values, NaN (f32) and repeats of one value (so
 * work-items contend for one bin). */
static void *make_data(gpuws_dtype dt, size_t n, double lo, double hi, uint32_t bins, uint64_t seed)
{
    void *x = malloc(n * 4 + 4);
    cr_assert(x);
    const double width = hi - lo, step = width / bins;
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = test_rand_u64(&seed);
        double v = lo - 0.05 * width + 1.1 * width * test_rand_uniform(&seed);
        if (r % 16 == 0) v = lo + (double)((r >> 8) % (bins + 1)) * step; /* on an edge (or hi) */
        if (r % 16 == 1) v = lo + 0.5 * step;                             /* all in bin 0 */
        if (dt == GPUWS_F32) ((float *)x)[i] = r % 97 == 2 ? NAN : (float)v;
        else ((int32_t *)x)[i] = (int32_t)floor(v);
    }
    return x;
}

ParameterizedTest(h_case *c, histogram, matches_reference_bit_for_bit)
{
    gpuws_context *ctx = test_open(c->backend);
    const uint64_t seed = test_seed(c->fresh_seed);
    /* i32: a range with fractional ends, so the integer edges are rounded up; f32: a non-dyadic range */
    const double lo = c->dtype == GPUWS_F32 ? -1.7 : -1000.5, hi = c->dtype == GPUWS_F32 ? 2.9 : 77777.25;
    void *x = make_data(c->dtype, c->n, lo, hi, c->bins, seed);
    golden_case ref = { c->dtype, c->n, lo, hi, c->bins, x, malloc(c->bins * 8) };
    cr_assert(ref.counts);
    reference(&ref, ref.counts);
    uint64_t total = 0;
    for (uint32_t b = 0; b < c->bins; b++) total += ref.counts[b];
    cr_assert(c->n < 100 || total > c->n / 2, "test data should mostly fall in range (%llu of %zu)",
              (unsigned long long)total, c->n);
    uint64_t *got = run(ctx, c->dtype, x, c->n, lo, hi, c->bins);
    char what[96];
    snprintf(what, sizeof what, "%s %s n=%zu bins=%u", test_backend_name(c->backend), gpuws_dtype_name(c->dtype), c->n,
             c->bins);
    assert_counts(got, ref.counts, c->bins, what);
    free(got);
    free(ref.counts);
    free(x);
    gpuws_context_destroy(ctx);
}

/* Several counting launches accumulate into the same counts; and the host-made edge table used on devices
 * without fp64 gives the same counts as the device-made one. */
BACKEND_TEST(histogram, chunked_counting_and_host_edges_agree)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "histogram_chunk", "4092");
    for (int host_edges = 0; host_edges < 2; host_edges++) {
        test_tune(ctx, "histogram_host_edges", host_edges ? "1" : "0");
        for (int d = 0; d < 2; d++) {
            const gpuws_dtype dt = d ? GPUWS_I32 : GPUWS_F32;
            const size_t n = 50001;
            const uint32_t bins = d ? 9000 : 61; /* i32: the global-atomic variant */
            const double lo = -3.25, hi = 1e4 + 0.5;
            void *x = make_data(dt, n, lo, hi, bins, 77 + (uint64_t)d);
            golden_case ref = { dt, n, lo, hi, bins, x, malloc(bins * 8) };
            cr_assert(ref.counts);
            reference(&ref, ref.counts);
            uint64_t *got = run(ctx, dt, x, n, lo, hi, bins);
            assert_counts(got, ref.counts, bins,
                          host_edges ? "host edges, chunks of 4092" : "device edges, chunks of 4092");
            free(got);
            free(ref.counts);
            free(x);
        }
    }
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(histogram, extreme_ranges_and_values)
{
    gpuws_context *ctx = test_open(*kind);
    /* f32 data against a range far wider than float: the double edges -1e300, -3.3e299, 3.3e299, 1e300 hold every
     * finite float in the middle bin (the outer bins contain no float at all); infinities and NaN are outside */
    float xf[] = { -INFINITY, -3e38f, -1.0f, 0.0f, 1e30f, 3.4e38f, INFINITY, NAN };
    const size_t nf = sizeof xf / sizeof xf[0];
    uint64_t *got = run(ctx, GPUWS_F32, xf, nf, -1e300, 1e300, 3);
    cr_assert(got[0] == 0 && got[1] == 5 && got[2] == 0, "counts %llu %llu %llu", (unsigned long long)got[0],
              (unsigned long long)got[1], (unsigned long long)got[2]);
    free(got);
    /* the extreme int32 values, a range beyond int32 on both sides, one bin */
    int32_t xi[] = { INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX };
    got = run(ctx, GPUWS_I32, xi, 7, -1e10, 1e10, 1);
    cr_assert_eq(got[0], 7);
    free(got);
    /* hi itself is not counted; lo is */
    float edge[] = { 1.0f, 2.0f, 3.0f };
    got = run(ctx, GPUWS_F32, edge, 3, 1.0, 3.0, 2);
    cr_assert(got[0] == 1 && got[1] == 1, "[1,3) in 2 bins: %llu %llu", (unsigned long long)got[0],
              (unsigned long long)got[1]);
    free(got);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(histogram, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *x = test_buffer(ctx, 400), *counts = test_buffer(ctx, 80);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 0, 1, 0, counts));
    cr_assert(strstr(gpuws_last_error(), "bins = 0"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 1, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 2, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, NAN, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_I32, 10, x, 0, INFINITY, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, -1e308, 1e308, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 0, 0x1p-1074, 8, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_I16, 10, x, 0, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, NULL, 0, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 0, 1, 4, NULL));
    /* 80 bytes + guard hold 18 counts, not 19; 400 bytes + guard hold 116 values, not 117 */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_histogram(NULL, GPUWS_F32, 10, x, 0, 1, 19, counts));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_histogram(NULL, GPUWS_I32, 117, x, 0, 1, 4, counts));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_histogram(NULL, GPUWS_F32, SIZE_MAX / 2, x, 0, 1, 4, counts));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 80);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_histogram(NULL, GPUWS_F32, 10, x, 0, 1, 4, foreign));
    test_check_guard(counts, 0, "counts");
    /* n = 0: all counts zero */
    TEST_OK(gpuws_histogram(NULL, GPUWS_F32, 0, x, 0, 1, 10, counts));
    uint64_t c[10];
    TEST_OK(gpuws_buffer_read(counts, 0, c, sizeof c));
    for (int i = 0; i < 10; i++) cr_assert_eq(c[i], 0);
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(x);
    gpuws_buffer_destroy(counts);
    gpuws_context_destroy(ctx);
}
