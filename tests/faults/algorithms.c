/* Fault-injection rows: one per public algorithm call (the headers in include/gpuws/algorithms/), plus the paths a
 * call takes only under some inputs or knobs. The harness (tests/test_faults.c) fails each library host allocation
 * of the row in turn; see docs/reliability.md.
 *
 * Each row runs its call on the fixture's small inputs (FAULT_N = 1000 elements, or the same seen as a 40 x 25
 * image) on the fixture's fresh stream, with device outputs in f->out / f->out2 (the harness checks they stay
 * poison after a failure). Then it calls fault_ok: on success it checks the result against the scalar reference
 * or a known answer, so a call that silently did nothing cannot pass; on failure it checks that its host outputs
 * were not written. */
#include "../faults.h"

#include "convolve1d/convolve1d_ref.h"
#include "convolve2d/convolve2d_ref.h"
#include "l2_norm/l2_norm_ref.h"
#include "label/label_ref.h"
#include "measure/measure_ref.h"
#include "monte_carlo_pi/monte_carlo_pi_ref.h"
#include "ufunc/ufunc_ref.h"
#include "core/tuning.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* The fixture's inputs on the host. */
static void host_inputs(float *f32, double *f64)
{
    for (int i = 0; i < FAULT_N; i++) {
        if (f32) f32[i] = (float)(i + 1);
        if (f64) f64[i] = i + 1;
    }
}

static void *download(gpuws_buffer *b, size_t bytes) { return test_download(b, bytes); }

/* Device bytes equal to the expected host bytes, element by element (elem bytes each). */
static void expect_bytes(gpuws_buffer *b, const void *want, size_t n, size_t elem, const char *what)
{
    unsigned char *got = download(b, n * elem);
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(got + i * elem, (const unsigned char *)want + i * elem, elem) == 0, "%s: element %zu differs",
                  what, i);
    free(got);
}

static bool all_poison(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (((const unsigned char *)p)[i] != TEST_POISON_BYTE) return false;
    return true;
}

/* ---- vector_add, reduce ---- */

FAULT_CASE(vector_add_f32, FAULT_ALL)
{
    gpuws_status st = gpuws_vector_add(f->stream, GPUWS_F32, FAULT_N, f->in, f->in, f->out);
    if (fault_ok(f, st)) {
        float want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = 2.0f * (float)(i + 1);
        expect_bytes(f->out, want, FAULT_N, sizeof want[0], "vector_add f32");
    }
    return st;
}

FAULT_CASE(vector_add_f64, FAULT_ALL)
{
    gpuws_status st = gpuws_vector_add(f->stream, GPUWS_F64, FAULT_N, f->in64, f->in64, f->out);
    if (fault_ok(f, st)) {
        double want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = 2.0 * (i + 1);
        expect_bytes(f->out, want, FAULT_N, sizeof want[0], "vector_add f64");
    }
    return st;
}

/* Sums and extremes of 1..1000 are exact in f32 and f64. */
static gpuws_status reduce_row(fault_fixture *f, gpuws_reduce_op op, gpuws_dtype dt, double want)
{
    gpuws_status st = gpuws_reduce(f->stream, op, dt, FAULT_N, dt == GPUWS_F32 ? f->in : f->in64, f->out);
    if (fault_ok(f, st)) {
        void *h = download(f->out, 8);
        double got = dt == GPUWS_F32 ? *(float *)h : *(double *)h;
        free(h);
        cr_assert_eq(got, want, "reduce: %g, wanted %g", got, want);
    }
    return st;
}

FAULT_CASE(reduce_sum_f32, FAULT_ALL)
{
    return reduce_row(f, GPUWS_REDUCE_SUM, GPUWS_F32, FAULT_N * (FAULT_N + 1) / 2.0);
}
FAULT_CASE(reduce_min_f64, FAULT_ALL) { return reduce_row(f, GPUWS_REDUCE_MIN, GPUWS_F64, 1); }
FAULT_CASE(reduce_max_f32, FAULT_ALL) { return reduce_row(f, GPUWS_REDUCE_MAX, GPUWS_F32, FAULT_N); }

FAULT_CASE(reduce_value_sum_f64, FAULT_ALL)
{
    double r = -1;
    gpuws_status st = gpuws_reduce_value(f->stream, GPUWS_REDUCE_SUM, GPUWS_F64, FAULT_N, f->in64, &r);
    if (fault_ok(f, st)) cr_assert_eq(r, FAULT_N * (FAULT_N + 1) / 2.0);
    else cr_assert_eq(r, -1, "reduce_value failed but wrote its result");
    return st;
}

/* ---- convolution ---- */

/* The 40 x 25 image 1..1000 convolved with the kside x kside kernel 1, 2, 3, ... (the same buffer). Every product
 * and partial sum is an integer below 2^24 (kside <= 9), so every backend is exact: compared bit for bit. */
static gpuws_status convolve2d_row(fault_fixture *f, gpuws_dtype dt, size_t kside, const gpuws_convolve2d_options *o)
{
    gpuws_buffer *img = dt == GPUWS_F32 ? f->in : f->in64;
    gpuws_status st = gpuws_convolve2d(f->stream, dt, img, FAULT_H, FAULT_W, 0, img, kside, kside, o, f->out);
    if (fault_ok(f, st)) {
        gpuws__conv2d_geometry g;
        TEST_OK(gpuws__conv2d_geometry_init(FAULT_H, FAULT_W, 0, kside, kside, o, &g));
        cr_assert_leq(g.oh * g.ow * gpuws_dtype_size(dt), FAULT_OUT_BYTES);
        float a[FAULT_N];
        double d[FAULT_N];
        host_inputs(a, d);
        void *want = malloc(g.oh * g.ow * 8);
        if (dt == GPUWS_F32) gpuws_convolve2d_ref_f32(&g, a, a, want, 0, g.oh);
        else gpuws_convolve2d_ref_f64(&g, d, d, want, 0, g.oh);
        expect_bytes(f->out, want, g.oh * g.ow, gpuws_dtype_size(dt), "convolve2d");
        free(want);
    }
    return st;
}

FAULT_CASE(convolve2d_f32, FAULT_ALL) { return convolve2d_row(f, GPUWS_F32, 3, NULL); }
FAULT_CASE(convolve2d_f64, FAULT_ALL) { return convolve2d_row(f, GPUWS_F64, 3, NULL); }

/* GPU backends: the tiled kernel (OpenCL's default is the direct one) with the kernel processed in blocks of 4 x 8
 * (the knob convolve2d_kernel_block), in SAME mode with the symmetric boundary. */
FAULT_CASE(convolve2d_tiled_in_kernel_blocks_f32, FAULT_GPU)
{
    test_tune(f->ctx, "convolve_path", "tiled");
    test_tune(f->ctx, "convolve2d_kernel_block", "4x8");
    const gpuws_convolve2d_options o = { .mode = GPUWS_CONVOLVE_SAME, .boundary = GPUWS_BOUNDARY_SYMM };
    gpuws_status st = convolve2d_row(f, GPUWS_F32, 9, &o);
    test_tune(f->ctx, NULL, NULL);
    return st;
}

/* The shape helpers return host values and allocate nothing: a row each says so. */
FAULT_CASE(convolve2d_output_shape, FAULT_ALL)
{
    size_t oh = 0, ow = 0;
    gpuws_status st = gpuws_convolve2d_output_shape(FAULT_H, FAULT_W, 3, 5, GPUWS_CONVOLVE_VALID, &oh, &ow);
    if (fault_ok(f, st)) cr_assert(oh == FAULT_H - 2 && ow == FAULT_W - 4, "VALID shape %zu x %zu", oh, ow);
    else cr_assert(oh == 0 && ow == 0, "convolve2d_output_shape failed but wrote the shape");
    return st;
}

FAULT_CASE(convolve1d_output_length, FAULT_ALL)
{
    size_t n = 0;
    gpuws_status st = gpuws_convolve1d_output_length(FAULT_N, 9, GPUWS_CONVOLVE_FULL, &n);
    if (fault_ok(f, st)) cr_assert_eq(n, FAULT_N + 8);
    else cr_assert_eq(n, 0, "convolve1d_output_length failed but wrote the length");
    return st;
}

FAULT_CASE(convolve1d_f32, FAULT_ALL)
{
    const size_t m = 9; /* 1..1000 with 1..9: integer sums below 2^24, exact everywhere */
    gpuws_status st = gpuws_convolve1d(f->stream, GPUWS_F32, f->in, FAULT_N, f->in, m, GPUWS_CONVOLVE_FULL, f->out);
    if (fault_ok(f, st)) {
        gpuws__conv1d_geometry g;
        TEST_OK(gpuws__conv1d_geometry_init(FAULT_N, m, GPUWS_CONVOLVE_FULL, &g));
        float a[FAULT_N], want[FAULT_N + 8];
        host_inputs(a, NULL);
        gpuws_convolve1d_ref_f32(&g, a, a, want, 0, g.out_n);
        expect_bytes(f->out, want, g.out_n, sizeof(float), "convolve1d");
    }
    return st;
}

/* ---- histogram, l2_norm, matmul, transpose ---- */

/* 1..1000 in 10 bins over [0, 1000): 1..99, then 100 per bin (1000 itself is outside the half-open range). */
static gpuws_status histogram_row(fault_fixture *f, gpuws_dtype dt)
{
    gpuws_status st = gpuws_histogram(f->stream, dt, FAULT_N, dt == GPUWS_F32 ? f->in : f->in32, 0, 1000, 10, f->out);
    if (fault_ok(f, st)) {
        const uint64_t want[10] = { 99, 100, 100, 100, 100, 100, 100, 100, 100, 100 };
        expect_bytes(f->out, want, 10, sizeof want[0], "histogram");
    }
    return st;
}

FAULT_CASE(histogram_f32, FAULT_ALL) { return histogram_row(f, GPUWS_F32); }
FAULT_CASE(histogram_i32, FAULT_ALL) { return histogram_row(f, GPUWS_I32); }

/* GPU backends: the edge table made on the host and uploaded (devices without fp64; forced here). */
FAULT_CASE(histogram_f32_host_edges, FAULT_GPU)
{
    test_tune(f->ctx, "histogram_host_edges", "1");
    gpuws_status st = histogram_row(f, GPUWS_F32);
    test_tune(f->ctx, NULL, NULL);
    return st;
}

FAULT_CASE(l2_norm_f32, FAULT_ALL)
{
    const size_t rows = 10, cols = 100;
    gpuws_status st = gpuws_l2_norm(f->stream, GPUWS_F32, rows, cols, f->in, f->out);
    if (fault_ok(f, st)) {
        float a[FAULT_N], *got = download(f->out, rows * sizeof(float));
        host_inputs(a, NULL);
        for (size_t r = 0; r < rows; r++) {
            const double want = (double)gpuws_l2_norm_oracle_f32(a + r * cols, cols);
            /* the documented bound: relative error <= (cols / 2 + 2) u, u = 2^-24 */
            cr_assert_leq(fabs(got[r] - want), (cols / 2.0 + 2) * 0x1p-24 * want, "l2_norm row %zu: %.9g, wanted %.9g",
                          r, got[r], want);
        }
        free(got);
    }
    return st;
}

/* A (17 x 13) and B (13 x 9) are the first elements of 1, 2, 3, ...: every dot product is an integer below 2^24,
 * so every backend and variant is exact. The tiled variant through gpuws_matmul (its default), the naive one
 * through gpuws_matmul_ex. */
static gpuws_status matmul_row(fault_fixture *f, gpuws_matmul_variant v, gpuws_dtype dt)
{
    enum { M = 17, N = 9, K = 13 };
    gpuws_buffer *in = dt == GPUWS_F32 ? f->in : f->in64;
    gpuws_status st = v == GPUWS_MATMUL_TILED ? gpuws_matmul(f->stream, dt, M, N, K, in, in, f->out)
                                              : gpuws_matmul_ex(f->stream, v, dt, M, N, K, in, in, f->out);
    if (fault_ok(f, st)) {
        double c[M * N];
        float c32[M * N];
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int l = 0; l < K; l++) s += (double)(i * K + l + 1) * (double)(l * N + j + 1);
                c[i * N + j] = s, c32[i * N + j] = (float)s;
            }
        if (dt == GPUWS_F32) expect_bytes(f->out, c32, M * N, sizeof(float), "matmul f32");
        else expect_bytes(f->out, c, M * N, sizeof(double), "matmul f64");
    }
    return st;
}

FAULT_CASE(matmul_tiled_f32, FAULT_ALL) { return matmul_row(f, GPUWS_MATMUL_TILED, GPUWS_F32); }
FAULT_CASE(matmul_naive_f64, FAULT_ALL) { return matmul_row(f, GPUWS_MATMUL_NAIVE, GPUWS_F64); }

FAULT_CASE(transpose_f32, FAULT_ALL)
{
    gpuws_status st = gpuws_transpose(f->stream, GPUWS_F32, FAULT_H, FAULT_W, f->in, f->out);
    if (fault_ok(f, st)) {
        float want[FAULT_N];
        for (int i = 0; i < FAULT_H; i++)
            for (int j = 0; j < FAULT_W; j++) want[j * FAULT_H + i] = (float)(i * FAULT_W + j + 1);
        expect_bytes(f->out, want, FAULT_N, sizeof(float), "transpose");
    }
    return st;
}

/* ---- monte_carlo_pi, primes ---- */

FAULT_CASE(monte_carlo_pi, FAULT_ALL)
{
    gpuws_status st = gpuws_monte_carlo_pi(f->stream, 0, 10000, 1, f->out2);
    if (fault_ok(f, st)) {
        const uint64_t want = gpuws_monte_carlo_pi_ref(0, 10000, 1);
        cr_assert(want > 7500 && want < 8200, "the reference is implausible: %llu", (unsigned long long)want);
        expect_bytes(f->out2, &want, 1, sizeof want, "monte_carlo_pi hits");
    }
    return st;
}

FAULT_CASE(monte_carlo_pi_value, FAULT_ALL)
{
    uint64_t hits = 12345;
    double pi = -1;
    gpuws_status st = gpuws_monte_carlo_pi_value(f->ctx, f->stream, 0, 10000, 1, &hits, &pi);
    if (fault_ok(f, st)) {
        cr_assert_eq(hits, gpuws_monte_carlo_pi_ref(0, 10000, 1));
        cr_assert_eq(pi, 4.0 * (double)hits / 10000);
    } else {
        cr_assert(hits == 12345 && pi == -1, "monte_carlo_pi_value failed but wrote its results");
    }
    return st;
}

static bool is_prime(int x)
{
    if (x < 2) return false;
    for (int d = 2; d * d <= x; d++)
        if (x % d == 0) return false;
    return true;
}

/* Primes below 1000 (there are 168) into f->out, their count into f->out2. */
static gpuws_status primes_row(fault_fixture *f, gpuws_primes_variant v)
{
    gpuws_status st = gpuws_primes(f->stream, v, FAULT_N, f->out, f->out2);
    if (fault_ok(f, st)) {
        int32_t want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = is_prime(i) ? i : 0;
        expect_bytes(f->out, want, FAULT_N, sizeof want[0], "primes");
        const uint64_t count = 168;
        expect_bytes(f->out2, &count, 1, sizeof count, "primes count");
    }
    return st;
}

FAULT_CASE(primes_fast, FAULT_ALL) { return primes_row(f, GPUWS_PRIMES_FAST); }
FAULT_CASE(primes_trial, FAULT_ALL) { return primes_row(f, GPUWS_PRIMES_TRIAL); }

/* ---- source finding: sigma_clip, threshold, label, measure, find_sources ---- */

FAULT_CASE(sigma_clip, FAULT_ALL)
{
    gpuws_sigma_clip_result r;
    memset(&r, TEST_POISON_BYTE, sizeof r);
    gpuws_status st = gpuws_sigma_clip(f->stream, FAULT_N, f->in, NULL, &r);
    if (fault_ok(f, st)) {
        /* 1..1000: median = mean = 500.5, population std sqrt((1000^2 - 1) / 12); 3 stds hold every value */
        cr_assert(r.count == FAULT_N && r.median == 500.5 && r.converged == 1, "count %zu, median %g, converged %d",
                  r.count, r.median, r.converged);
        cr_assert_leq(fabs(r.mean - 500.5), 1e-12 * 500.5);
        cr_assert_leq(fabs(r.std - sqrt((1000.0 * 1000.0 - 1) / 12)), 1e-9 * r.std, "std %.17g", r.std);
    } else {
        cr_assert(all_poison(&r, sizeof r), "sigma_clip failed but wrote its result");
    }
    return st;
}

/* One caller of the collective form (its reducer: the sum over one caller is its own words). */
static gpuws_status one_caller(void *user, uint64_t *words, size_t count)
{
    (void)user, (void)words, (void)count;
    return GPUWS_OK;
}

FAULT_CASE(sigma_clip_reduce, FAULT_ALL)
{
    gpuws_sigma_clip_result r;
    memset(&r, TEST_POISON_BYTE, sizeof r);
    gpuws_status st = gpuws_sigma_clip_reduce(f->stream, f->in, FAULT_N, NULL, 0, 1, one_caller, NULL, &r);
    if (fault_ok(f, st)) {
        cr_assert(r.count == FAULT_N && r.median == 500.5 && r.converged == 1, "count %zu, median %g, converged %d",
                  r.count, r.median, r.converged);
        cr_assert_leq(fabs(r.std - sqrt((1000.0 * 1000.0 - 1) / 12)), 1e-9 * r.std, "std %.17g", r.std);
    } else {
        cr_assert(all_poison(&r, sizeof r), "sigma_clip_reduce failed but wrote its result");
    }
    return st;
}

FAULT_CASE(threshold, FAULT_ALL)
{
    gpuws_status st = gpuws_threshold(f->stream, FAULT_N, f->in, 500.5f, f->out);
    if (fault_ok(f, st)) {
        uint8_t want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = i + 1 > 500;
        expect_bytes(f->out, want, FAULT_N, 1, "threshold");
    }
    return st;
}

/* f->mask has 40 components with connectivity 8 and 80 with connectivity 4 (tests/faults.h). */
static gpuws_status label_row(fault_fixture *f, int connectivity, size_t components)
{
    size_t num = 12345;
    gpuws_status st = gpuws_label(f->stream, FAULT_W, FAULT_H, f->mask, connectivity, f->out, &num);
    if (fault_ok(f, st)) {
        uint8_t mask[FAULT_W * FAULT_H];
        int32_t want[FAULT_W * FAULT_H];
        for (int r = 0; r < FAULT_H; r++)
            for (int c = 0; c < FAULT_W; c++) mask[r * FAULT_W + c] = fault_mask_pixel(r, c);
        cr_assert_eq(gpuws_label_ref(mask, FAULT_W, FAULT_H, connectivity, want), components);
        cr_assert_eq(num, components, "label %d: %zu components, wanted %zu", connectivity, num, components);
        expect_bytes(f->out, want, FAULT_W * FAULT_H, sizeof want[0], "label");
    } else {
        cr_assert_eq(num, 12345, "label failed but wrote num_labels");
    }
    return st;
}

FAULT_CASE(label_4, FAULT_ALL) { return label_row(f, 4, 80); }
FAULT_CASE(label_8, FAULT_ALL) { return label_row(f, 8, 40); }

FAULT_CASE(measure, FAULT_ALL)
{
    gpuws_status st = gpuws_measure(f->stream, FAULT_W, FAULT_H, f->in, f->labels, FAULT_NUM_LABELS, f->out);
    if (fault_ok(f, st)) {
        float data[FAULT_N];
        int32_t labels[FAULT_N];
        host_inputs(data, NULL);
        for (int r = 0; r < FAULT_H; r++)
            for (int c = 0; c < FAULT_W; c++) labels[r * FAULT_W + c] = fault_label_pixel(r, c);
        gpuws_source_measure want[FAULT_NUM_LABELS], *got = download(f->out, sizeof want);
        gpuws_measure_ref(data, labels, FAULT_W, FAULT_H, FAULT_NUM_LABELS, want);
        for (int k = 0; k < FAULT_NUM_LABELS; k++) {
            /* integer data: sums exact in double; centres of mass within a few roundings */
            cr_assert(want[k].npix > 0 && got[k].npix == want[k].npix && got[k].sum == want[k].sum &&
                          got[k].peak == want[k].peak && got[k].peak_row == want[k].peak_row &&
                          got[k].peak_col == want[k].peak_col,
                      "measure: label %d differs", k + 1);
            cr_assert(fabs(got[k].row - want[k].row) <= 1e-12 * FAULT_H &&
                          fabs(got[k].col - want[k].col) <= 1e-12 * FAULT_W,
                      "measure: label %d centre (%.17g, %.17g), wanted (%.17g, %.17g)", k + 1, got[k].row, got[k].col,
                      want[k].row, want[k].col);
        }
        free(got);
    }
    return st;
}

/* The sources' top-left pixels (row, column) in sources_sky. */
static const int at[2][2] = { { 5, 5 }, { 15, 30 } };

/* A 40 x 25 sky: background -5..5 (a fixed pattern, std about 3.2) and two 3 x 3 sources of 500 (at `at`), far
 * above 5 clipped stds. */
static void sources_sky(float *img)
{
    for (int i = 0; i < FAULT_W * FAULT_H; i++) img[i] = (float)((i * 37) % 11 - 5);
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) img[(at[s][0] + r) * FAULT_W + at[s][1] + c] = 500;
}

/* cat holds sources_sky's two sources (what: the call, in messages). */
static void expect_sky_sources(const gpuws_catalog *cat, const char *what)
{
    cr_assert_eq(cat->num_sources, 2, "%s: %zu sources, wanted 2", what, cat->num_sources);
    for (int s = 0; s < 2; s++) {
        const gpuws_source *src = &cat->sources[s];
        cr_assert(src->npix == 9 && src->flux == 9 * 500.0 && src->peak == 500 && src->x == at[s][1] + 1 &&
                      src->y == at[s][0] + 1,
                  "%s: source %d: %lld pixels, flux %g at (%g, %g)", what, s + 1, (long long)src->npix, src->flux,
                  src->x, src->y);
    }
}

/* sources_sky's two sources and their labels. */
FAULT_CASE(find_sources, FAULT_ALL)
{
    float img[FAULT_W * FAULT_H];
    sources_sky(img);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.want_labels = 1;
    gpuws_catalog *cat = (gpuws_catalog *)&cat;
    gpuws_status st = gpuws_find_sources(f->ctx, img, FAULT_W, FAULT_H, &o, &cat);
    if (fault_ok(f, st)) {
        expect_sky_sources(cat, "find_sources");
        for (int i = 0; i < FAULT_W * FAULT_H; i++)
            cr_assert_eq(cat->labels[i], img[i] == 500 ? 1 + (i / FAULT_W >= 15) : 0, "find_sources: label of pixel %d",
                         i);
        gpuws_catalog_free(cat);
    } else {
        cr_assert_null(cat, "find_sources failed and left *catalog set");
    }
    return st;
}

/* The same sky's rows in two parts, on f->stream and a second stream of f->ctx (gpuws_find_sources_parts): 13 and
 * 12 rows, so that the lower source (rows 15 .. 17) is all in the second part. */
static gpuws_status sources_in_two_parts(fault_fixture *f, bool collective)
{
    float img[FAULT_W * FAULT_H];
    sources_sky(img);
    gpuws_stream *second = NULL;
    gpuws_buffer *b[2] = { NULL, NULL };
    const size_t rows[2] = { 13, FAULT_H - 13 };
    gpuws_status st = gpuws_stream_create(f->ctx, &second);
    for (int p = 0; p < 2 && !st; p++)
        if (!(st = gpuws_buffer_create(f->ctx, rows[p] * FAULT_W * sizeof(float), &b[p])))
            st = gpuws_buffer_write(b[p], 0, img + (p ? rows[0] * FAULT_W : 0), rows[p] * FAULT_W * sizeof(float));
    gpuws_catalog *cat = (gpuws_catalog *)&cat;
    if (!st) {
        const gpuws_image_part parts[2] = { { f->stream, b[0], rows[0] }, { second, b[1], rows[1] } };
        st = collective
                 ? gpuws_find_sources_parts_reduce(parts, 2, FAULT_W, NULL, 0, 1, 0, one_caller, NULL, NULL, &cat)
                 : gpuws_find_sources_parts(parts, 2, FAULT_W, NULL, &cat);
        if (fault_ok(f, st)) {
            expect_sky_sources(cat, collective ? "find_sources_parts_reduce" : "find_sources_parts");
            gpuws_catalog_free(cat);
        } else {
            cr_assert_null(cat, "find_sources_parts failed and left *catalog set");
        }
    }
    gpuws_buffer_destroy(b[0]);
    gpuws_buffer_destroy(b[1]);
    gpuws_stream_destroy(second);
    return st;
}

FAULT_CASE(find_sources_parts, FAULT_ALL) { return sources_in_two_parts(f, false); }

/* The same as one caller of the collective form (gpuws_find_sources_parts_reduce). */
FAULT_CASE(find_sources_parts_reduce, FAULT_ALL) { return sources_in_two_parts(f, true); }

/* ---- the workshop's ufuncs ---- */

/* An operand: NAN stands for the array f->in (1, 2, 3, ...), anything else for that scalar. */
static gpuws_operand operand(fault_fixture *f, double v)
{
    return isnan(v) ? gpuws_operand_array(f->in) : gpuws_operand_scalar(v);
}

/* out (f32) against the reference within its documented bound, operands as `operand` reads them. */
static void expect_ufunc(fault_fixture *f, gpuws_ufunc_id id, const double *spec)
{
    float *got = download(f->out, FAULT_N * sizeof(float));
    for (int i = 0; i < FAULT_N; i++) {
        double a[4];
        for (int k = 0; k < gpuws_ufunc_arity[id]; k++)
            a[k] = isnan(spec[k]) ? (double)(float)(i + 1) : (double)(float)spec[k];
        const double ref = gpuws_ufunc_ref_eval(id, a);
        double err, allowed;
        cr_assert(gpuws_ufunc_ref_within(id, a, ref, got[i], &err, &allowed),
                  "%s element %d: %.9g, wanted %.9g (error %g > %g)", gpuws_ufunc_names[id], i, got[i], ref, err,
                  allowed);
    }
    free(got);
}

/* The row's status, after checking out when the call succeeded. */
static gpuws_status ufunc_checked(fault_fixture *f, gpuws_ufunc_id id, const double *spec, gpuws_status st)
{
    if (fault_ok(f, st)) expect_ufunc(f, id, spec);
    return st;
}

FAULT_CASE(gaussian_pdf, FAULT_ALL)
{
    const double s[] = { NAN, 500, 200 };
    return ufunc_checked(
        f, GPUWS_UFUNC_GAUSSIAN_PDF, s,
        gpuws_gaussian_pdf(f->stream, FAULT_N, operand(f, s[0]), operand(f, s[1]), operand(f, s[2]), f->out));
}

FAULT_CASE(polar_distance, FAULT_ALL)
{
    const double s[] = { NAN, 0.5, 3, NAN };
    return ufunc_checked(f, GPUWS_UFUNC_POLAR_DISTANCE, s,
                         gpuws_polar_distance(f->stream, FAULT_N, operand(f, s[0]), operand(f, s[1]), operand(f, s[2]),
                                              operand(f, s[3]), f->out));
}

FAULT_CASE(make_pulses, FAULT_ALL)
{
    const double s[] = { NAN, 10, 2 };
    return ufunc_checked(
        f, GPUWS_UFUNC_MAKE_PULSES, s,
        gpuws_make_pulses(f->stream, FAULT_N, operand(f, s[0]), operand(f, s[1]), operand(f, s[2]), f->out));
}

FAULT_CASE(hypot, FAULT_ALL)
{
    const double s[] = { NAN, 3 };
    return ufunc_checked(f, GPUWS_UFUNC_HYPOT, s,
                         gpuws_hypot(f->stream, FAULT_N, operand(f, s[0]), operand(f, s[1]), f->out));
}

FAULT_CASE(hypot_checked, FAULT_ALL)
{
    const double s[] = { NAN, NAN };
    return ufunc_checked(f, GPUWS_UFUNC_HYPOT, s,
                         gpuws_hypot_checked(f->stream, FAULT_N, operand(f, s[0]), operand(f, s[1]), f->out));
}

FAULT_CASE(hidden_layer, FAULT_ALL)
{
    const double s[] = { NAN, NAN };
    return ufunc_checked(f, GPUWS_UFUNC_HIDDEN_LAYER, s, gpuws_hidden_layer(f->stream, FAULT_N, f->in, f->in, f->out));
}

/* Host to host in three chunks of 1024 over three streams (on GPU backends: two streams created by the call). */
FAULT_CASE(hidden_layer_host, FAULT_ALL)
{
    enum { N = 3000 };
    static float g[N], w[N], out[N];
    for (int i = 0; i < N; i++) g[i] = (float)(i % 256), w[i] = (float)(i % 7 - 3) * 0.5f;
    memset(out, TEST_POISON_BYTE, sizeof out);
    const gpuws_pipeline_options o = { .chunk = 1024, .streams = 3 };
    gpuws_status st = gpuws_hidden_layer_host(f->ctx, N, g, w, out, &o);
    if (fault_ok(f, st)) {
        for (int i = 0; i < N; i++) {
            const double a[2] = { g[i], w[i] }, ref = gpuws_ufunc_ref_eval(GPUWS_UFUNC_HIDDEN_LAYER, a);
            cr_assert(gpuws_ufunc_ref_within(GPUWS_UFUNC_HIDDEN_LAYER, a, ref, out[i], NULL, NULL),
                      "hidden_layer_host element %d: %.9g, wanted %.9g", i, out[i], ref);
        }
    } else {
        cr_assert(all_poison(out, sizeof out), "hidden_layer_host failed but wrote into out");
    }
    return st;
}

/* Host to host in bands of 3 rows on the CPU backend (extract_host's 45 bytes a pixel of 5 rows with their halo),
 * of 2 on OpenCL and CUDA, where the budget holds 4 rows with a second band's image (49 bytes a pixel) and the next
 * band is uploaded on a thread of the call's own: three blobs, one of them across two bands or more (the first too
 * in bands of 2), no filter, minarea 1. */
FAULT_CASE(extract_host_in_bands, FAULT_ALL)
{
    enum { W = 40, H = 25 };
    static float img[W * H];
    static int32_t seg[W * H];
    memset(img, 0, sizeof img);
    for (int y = 1; y < 3; y++) img[y * W + 3] = img[y * W + 4] = 5.0f; /* rows 1-2 */
    for (int y = 2; y < 5; y++) img[y * W + 20] = 6.0f;                 /* rows 2-4 */
    img[20 * W + 30] = 9.0f;                                            /* row 20 */
    memset(seg, TEST_POISON_BYTE, sizeof seg);
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    eo.filter_type = GPUWS_FILTER_NONE, eo.minarea = 1;
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    o.extract = &eo, o.segmap = seg, o.max_device_bytes = 45 * W * 5;
    gpuws_extract_catalog *cat = NULL;
    gpuws_status st = gpuws_extract_host(f->ctx, W, H, img, &o, &cat);
    if (fault_ok(f, st)) {
        cr_assert(cat && cat->num_objects == 3, "extract_host: %zu objects, wanted 3", cat ? cat->num_objects : 0);
        size_t px = 0;
        for (size_t k = 0; k < cat->num_objects; k++) px += (size_t)cat->objects[k].npix;
        cr_assert_eq(px, 8, "extract_host: %zu pixels in objects, wanted 8", px);
        cr_assert(seg[2 * W + 20] > 0 && seg[4 * W + 20] == seg[2 * W + 20] && seg[0] == 0,
                  "extract_host: the blob across two bands is not one object in the segmentation map");
    } else {
        cr_assert(!cat, "extract_host failed but left a catalogue");
        cr_assert(all_poison(seg, sizeof seg), "extract_host failed but wrote into segmap");
    }
    gpuws_extract_catalog_free(cat);
    return st;
}

/* The same bands grouped on the device (as GPUs do): the segmentation map then comes through the bands' labels, kept
 * on the host until the catalogue is made (in bands this short every blob touches a border: the host measures it).
 * Where the device refuses the chain's scratch the host deblends every component instead (as the next row). */
FAULT_CASE(extract_host_in_bands_grouped, FAULT_GPU)
{
    test_tune(f->ctx, "extract_group", "device");
    const gpuws_status st = fault_op_extract_host_in_bands(f);
    test_tune(f->ctx, NULL, NULL);
    return st;
}

/* The mesh background from host memory, meshes of 8 x 5 pixels in bands of one mesh row (its smallest budget is pass
 * 2's row of maps beside the plan: 2 x 40 x 4 + 4 x (8 x 25 + 5 x 65) bytes). */
FAULT_CASE(background_host_in_bands, FAULT_ALL)
{
    enum { W = 40, H = 25 };
    static float img[W * H], back[W * H], rms[W * H];
    for (int i = 0; i < W * H; i++) img[i] = 10.0f + (float)((i * 7919) % 13) * 0.25f;
    memset(back, TEST_POISON_BYTE, sizeof back);
    memset(rms, TEST_POISON_BYTE, sizeof rms);
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = 8, bo.bh = 5;
    gpuws_background_host_options o = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    o.background = &bo, o.max_device_bytes = 2 * W * 4 + 4 * (8 * 25 + 5 * (W + H));
    gpuws_background_result r;
    gpuws_status st = gpuws_background_host(f->ctx, W, H, img, &o, back, rms, &r);
    if (fault_ok(f, st)) {
        cr_assert(r.nx == 5 && r.ny == 5, "background_host: a grid of %zu x %zu meshes", r.nx, r.ny);
        for (int i = 0; i < W * H; i++)
            cr_assert(back[i] > 9.0f && back[i] < 14.0f && rms[i] > 0.0f && rms[i] < 5.0f,
                      "background_host: back %g rms %g at %d", back[i], rms[i], i);
    } else {
        cr_assert(all_poison(back, sizeof back) && all_poison(rms, sizeof rms),
                  "background_host failed but wrote into back or rms");
    }
    return st;
}

/* The collective extraction of one caller (a test_sum_group of one) making the background, meshes of 8 x 5 pixels,
 * bands of 5 rows: every host allocation of its steps fails in turn. */
FAULT_CASE(extract_host_reduce_of_one_caller, FAULT_ALL)
{
    enum { W = 40, H = 25 };
    static float img[W * H];
    static int32_t seg[W * H];
    for (int i = 0; i < W * H; i++) img[i] = 10.0f + (float)((i * 7919) % 13) * 0.25f;
    for (int y = 8; y < 20; y++) img[y * W + 12] = img[y * W + 13] = 80.0f; /* across bands */
    memset(seg, TEST_POISON_BYTE, sizeof seg);
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = 8, bo.bh = 5;
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    o.extract = &eo, o.background = &bo, o.segmap = seg;
    o.max_device_bytes = 4 * (8 * 25 + 5 * (W + H)) + 53 * W * 7;
    gpuws_extract_catalog *cat = NULL;
    test_sum_group *g = test_sum_group_new(1, 3 * W * H + 4096); /* one caller: its own records */
    gpuws_status st = gpuws_extract_host_reduce(f->ctx, W, H, img, &o, 0, 1, 0, test_sum_group_reduce,
                                                test_sum_group_gather, g, &cat);
    test_sum_group_free(g);
    if (fault_ok(f, st)) {
        cr_assert(cat && cat->num_objects == 1 && cat->objects[0].npix >= 24, "extract_host_reduce: %zu objects",
                  cat ? cat->num_objects : 0); /* the bar, and where the filter spreads it */
        cr_assert(seg[8 * W + 12] == 1 && seg[19 * W + 13] == 1 && seg[0] == 0, "extract_host_reduce: the map");
    } else {
        cr_assert(!cat, "extract_host_reduce failed but left a catalogue");
        cr_assert(all_poison(seg, sizeof seg), "extract_host_reduce failed but wrote into segmap");
    }
    gpuws_extract_catalog_free(cat);
    return st;
}

/* gpuws_extract with the components grouped and chained on the device (the extract_group knob: PoCL, a CPU device,
 * groups on the host by default), blobs that deblending cannot split and a bar with a peak at each end that it can:
 * where the device lacks memory for the chain's scratch (or the copy of the records the host reads) the host
 * deblends every component, but a host allocation that fails there (a buffer's handle) fails the call. */
FAULT_CASE(extract_grouped_and_chained_on_the_device, FAULT_GPU)
{
    enum { W = 40, H = 25 };
    static float img[W * H];
    for (int i = 0; i < W * H; i++) img[i] = (float)((i * 7919) % 13) * 0.01f;
    for (int b = 0; b < 4; b++)
        for (int y = 3; y < 7; y++)
            for (int x = 3 + 9 * b; x < 7 + 9 * b; x++) img[(y + 4 * (b % 2)) * W + x] = 5.0f + (float)b;
    for (int y = 15; y < 19; y++)
        for (int x = 5; x < 17; x++) img[y * W + x] = x == 6 || x == 15 ? 9.0f : 5.0f;
    gpuws_status st = gpuws__tuning_set(f->ctx, "extract_group", "device");
    gpuws_buffer *in = NULL, *seg = NULL;
    if (!st && !(st = gpuws_buffer_create(f->ctx, sizeof img, &in))) st = gpuws_buffer_write(in, 0, img, sizeof img);
    if (!st) st = gpuws_buffer_create(f->ctx, W * H * sizeof(int32_t), &seg);
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    eo.thresh = 1.0, eo.filter_type = GPUWS_FILTER_NONE, eo.minarea = 4, eo.segmap = seg;
    gpuws_extract_catalog *cat = NULL;
    if (!st) st = gpuws_extract(f->stream, W, H, in, &eo, &cat);
    if (fault_ok(f, st)) {
        cr_assert(cat && cat->num_objects >= 5 && cat->objects[0].npix == 16, "extract: %zu objects",
                  cat ? cat->num_objects : 0);
        static int32_t map[W * H];
        cr_assert_eq(gpuws_buffer_read(seg, 0, map, sizeof map), GPUWS_OK);
        cr_assert(map[0] == 0 && map[3 * W + 3] > 0 && map[16 * W + 10] > 0 && map[16 * W + 10] != map[3 * W + 3],
                  "extract: the map %d at a blob, %d on the bar, %d off them", map[3 * W + 3], map[16 * W + 10],
                  map[0]);
    } else {
        cr_assert(!cat, "extract failed but left a catalogue");
    }
    gpuws_extract_catalog_free(cat);
    gpuws_buffer_destroy(seg);
    gpuws_buffer_destroy(in);
    return st;
}

FAULT_CASE(zero_suppress_f32, FAULT_ALL)
{
    gpuws_status st = gpuws_zero_suppress(f->stream, GPUWS_F32, FAULT_N, f->in, 500.5, f->out);
    if (fault_ok(f, st)) {
        float want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = i + 1 < 500.5 ? 0.0f : (float)(i + 1);
        expect_bytes(f->out, want, FAULT_N, sizeof want[0], "zero_suppress f32");
    }
    return st;
}

FAULT_CASE(zero_suppress_i16, FAULT_ALL)
{
    gpuws_status st = gpuws_zero_suppress(f->stream, GPUWS_I16, FAULT_N, f->in16, 500.5, f->out);
    if (fault_ok(f, st)) {
        int16_t want[FAULT_N];
        for (int i = 0; i < FAULT_N; i++) want[i] = (int16_t)(i + 1 < 500.5 ? 0 : i + 1);
        expect_bytes(f->out, want, FAULT_N, sizeof want[0], "zero_suppress i16");
    }
    return st;
}
