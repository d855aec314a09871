/* matmul: C = A·B on every backend, with both kernels, at shapes that are and are not multiples of the tiles.
 *
 * Oracle: each element's dot product in higher precision (gpuws_matmul_oracle_*: double for f32 inputs, whose
 * products are then exact; long double for f64) together with Σ_l |a_il||b_lj|.
 * Bound: a dot product of length k computed in the dtype in ANY order, with or without fused multiply-adds, lies
 * within γ_k Σ|a_il||b_lj| of the exact value, γ_k = k·u/(1 − k·u), u = 2^-24 (f32) or 2^-53 (f64) (Higham,
 * Accuracy and Stability of Numerical Algorithms, eq. 3.5); the oracle's own rounding adds γ_k(u_oracle)·Σ
 * (gpuws_matmul_error_bound). Every element must lie within that bound × 1.05: the 5% is slack for the rounding
 * of the bound's own computation, not for the device. No knowledge of the kernels' summation order is needed.
 * That bound grows like k·u while real errors grow like √k·u, so a dropped or doubled term could hide in it at
 * large k: small-integer inputs, whose products and partial sums are all exact, catch those, because there every
 * backend and kernel must reproduce the reference bit for bit. */
#include "support.h"
#include "matmul/matmul_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define SAFETY 1.05L

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    gpuws_matmul_variant variant;
    size_t m, n, k;
    bool large_tile; /* the knob matmul_tile=large: the GPUs' tile shape (else the driver's choice) */
    bool fresh_seed;
} mm_case;

/* 1×1×1, a row times a column, a column times a row, shapes below, at and across tile sizes (32 PoCL, 64 f64
 * GPU, 128 f32 GPU), primes, k not a multiple of the k step (8 GPU, 16 PoCL), and a long k. */
static const size_t shapes[][3] = { { 1, 1, 1 },       { 1, 300, 1 },    { 300, 1, 77 }, { 33, 17, 5 },
                                    { 127, 129, 131 }, { 128, 128, 16 }, { 64, 64, 8 },  { 2, 3, 1000 },
                                    { 257, 255, 130 }, { 131, 67, 1 } };
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static const char *variant_name(gpuws_matmul_variant v)
{
    return v == GPUWS_MATMUL_TILED ? "tiled" : v == GPUWS_MATMUL_SHARED ? "shared" : "naive";
}

/* Uniform in [-1, 1) (never all zero), or small integers in [-8, 8] when `integers`. */
static void *make_matrix(gpuws_dtype dt, size_t count, uint64_t seed, bool integers)
{
    const size_t es = gpuws_dtype_size(dt);
    void *x = malloc(count * es + 8);
    cr_assert_not_null(x);
    for (size_t i = 0; i < count; i++) {
        double v = integers ? (double)(int)(test_rand_u64(&seed) % 17) - 8.0 : test_rand_uniform(&seed) * 2 - 1;
        if (dt == GPUWS_F32) ((float *)x)[i] = (float)v;
        else ((double *)x)[i] = v;
    }
    return x;
}

/* Runs the case on its backend and returns C on the host; checks the guard and that every element was written. */
static void *run_case(const mm_case *c, const void *a, const void *b)
{
    gpuws_context *ctx = test_open(c->backend);
    if (c->large_tile) test_tune(ctx, "matmul_tile", "large");
    test_require_dtype(ctx, c->dtype);
    const size_t es = gpuws_dtype_size(c->dtype), cbytes = c->m * c->n * es;
    gpuws_buffer *da = test_buffer_from(ctx, a, c->m * c->k * es), *db = test_buffer_from(ctx, b, c->k * c->n * es);
    gpuws_buffer *dc = test_buffer(ctx, cbytes);
    TEST_OK(gpuws_matmul_ex(NULL, c->variant, c->dtype, c->m, c->n, c->k, da, db, dc));
    unsigned char *got = test_download(dc, cbytes); /* a blocking read: ordered after the product */
    test_check_guard(dc, cbytes, "c");
    for (size_t i = 0; i < cbytes; i += es) {
        size_t poison = 0;
        for (size_t j = 0; j < es; j++) poison += got[i + j] == TEST_POISON_BYTE;
        cr_assert(poison < es, "element %zu of C was never written", i / es);
    }
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
    return got;
}

/* Every element against the oracle within the bound (see the top of the file). */
static void check_against_oracle(const mm_case *c, const void *a, const void *b, const void *got, const char *what)
{
    size_t bad = 0, bi = 0, bj = 0;
    long double worst = 0, bad_got = 0, bad_want = 0, bad_bound = 0;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            long double want, abs_sum, g;
            if (c->dtype == GPUWS_F32) {
                double s;
                want = gpuws_matmul_oracle_f32(a, b, c->n, c->k, i, j, &s);
                abs_sum = s;
                g = ((const float *)got)[i * c->n + j];
            } else {
                want = gpuws_matmul_oracle_f64(a, b, c->n, c->k, i, j, &abs_sum);
                g = ((const double *)got)[i * c->n + j];
            }
            const long double bound = gpuws_matmul_error_bound(c->dtype == GPUWS_F64, c->k, abs_sum) * SAFETY;
            const long double err = fabsl(g - want);
            if (!(err <= bound) && bad++ == 0) bi = i, bj = j, bad_got = g, bad_want = want, bad_bound = bound;
            if (bound > 0 && err / bound > worst) worst = err / bound;
        }
    cr_assert_eq(
        bad, 0,
        "%s %s %s %zux%zux%zu: %zu elements outside the bound; first C[%zu][%zu] = %.17Lg, exact %.17Lg, allowed %.3Lg",
        what, gpuws_dtype_name(c->dtype), variant_name(c->variant), c->m, c->n, c->k, bad, bi, bj, bad_got, bad_want,
        bad_bound);
    cr_log_info("%s %s %s %zux%zux%zu: largest error %.3Lg of the bound", what, gpuws_dtype_name(c->dtype),
                variant_name(c->variant), c->m, c->n, c->k, worst);
}

static void *reference(const mm_case *c, const void *a, const void *b)
{
    const size_t es = gpuws_dtype_size(c->dtype);
    void *want = malloc(c->m * c->n * es + 8);
    cr_assert_not_null(want);
    if (c->dtype == GPUWS_F32) gpuws_matmul_ref_f32(a, b, want, c->m, c->n, c->k);
    else gpuws_matmul_ref_f64(a, b, want, c->m, c->n, c->k);
    return want;
}

/* ---- the reference against independent truth ---------------------------------------------------------------- */

Test(matmul, reference_gives_known_answers)
{
    const float a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 }, want[4] = { 19, 22, 43, 50 };
    float c[4];
    gpuws_matmul_ref_f32(a, b, c, 2, 2, 2);
    cr_assert_arr_eq(c, want, sizeof c);
    /* A·I = A exactly, for a non-square A (3×5) */
    double x[15], eye[25] = { 0 }, y[15];
    for (int i = 0; i < 15; i++) x[i] = 0.1 * (i + 1);
    for (int i = 0; i < 5; i++) eye[i * 5 + i] = 1;
    gpuws_matmul_ref_f64(x, eye, y, 3, 5, 5);
    cr_assert_arr_eq(y, x, sizeof y);
    /* a column times a row is the outer product */
    const double col[3] = { 1, 2, 3 }, row[2] = { 10, -1 }, outer[6] = { 10, -1, 20, -2, 30, -3 };
    double o[6];
    gpuws_matmul_ref_f64(col, row, o, 3, 2, 1);
    cr_assert_arr_eq(o, outer, sizeof o);
}

/* Reads the block `name rows cols` + values that follows in a golden file (format: tests/data/make_*.py). */
static double *read_golden(FILE *f, const char *name, size_t *rows, size_t *cols)
{
    char tag[16];
    int ch;
    while ((ch = fgetc(f)) == '#')
        while ((ch = fgetc(f)) != '\n' && ch != EOF) {
        }
    ungetc(ch, f);
    cr_assert_eq(fscanf(f, "%15s %zu %zu", tag, rows, cols), 3, "golden file: no block header for %s", name);
    cr_assert_str_eq(tag, name, "golden file: block %s where %s was expected", tag, name);
    double *v = malloc(*rows * *cols * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < *rows * *cols; i++)
        cr_assert_eq(fscanf(f, "%lf", &v[i]), 1, "golden file: %s is short", name);
    return v;
}

/* NumPy's float64 product of float32 inputs (tests/data/make_matmul_l2_golden.py) against the oracle (to its
 * own bound: they are two double computations of the same sums) and against the f32 reference (to the f32 bound). */
Test(matmul, reference_matches_numpy_golden_file)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    cr_assert(dir, "GPUWS_TEST_DATA is not set (ctest sets it)");
    char path[1024];
    snprintf(path, sizeof path, "%s/matmul_golden.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t m, k, k2, n, m2, n2;
    double *ad = read_golden(f, "A", &m, &k), *bd = read_golden(f, "B", &k2, &n), *cd = read_golden(f, "C", &m2, &n2);
    fclose(f);
    cr_assert(k2 == k && m2 == m && n2 == n, "golden file: inconsistent shapes");
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *c = malloc(m * n * sizeof *c);
    cr_assert(a && b && c);
    for (size_t i = 0; i < m * k; i++) a[i] = (float)ad[i]; /* exact: the file holds float32 values */
    for (size_t i = 0; i < k * n; i++) b[i] = (float)bd[i];
    gpuws_matmul_ref_f32(a, b, c, m, n, k);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double abs_sum;
            const double exact = gpuws_matmul_oracle_f32(a, b, n, k, i, j, &abs_sum);
            const double numpy = cd[i * n + j];
            cr_assert(fabs(exact - numpy) <= 2 * k * 0x1p-53 * abs_sum, "oracle C[%zu][%zu] = %.17g, NumPy %.17g", i, j,
                      exact, numpy);
            cr_assert((long double)fabs(c[i * n + j] - numpy) <= gpuws_matmul_error_bound(0, k, abs_sum) * SAFETY,
                      "reference C[%zu][%zu] = %.9g, NumPy %.17g", i, j, (double)c[i * n + j], numpy);
        }
    free(a);
    free(b);
    free(c);
    free(ad);
    free(bd);
    free(cd);
}

/* ---- every backend against the oracle: random data -------------------------------------------------------- */

ParameterizedTestParameters(matmul, every_element_within_the_error_bound)
{
    static mm_case cases[TEST_BACKENDS * 2 * 3 * (NSHAPES + 1) + 2 * NSHAPES];
    size_t q = 0;
    for (int be = 0; be < TEST_BACKENDS; be++)
        for (int d = 0; d < 2; d++)
            for (int v = 0; v < 3; v++) {
                const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
                const gpuws_matmul_variant var = (gpuws_matmul_variant)v;
                for (size_t s = 0; s < NSHAPES; s++)
                    cases[q++] =
                        (mm_case){ test_backends[be], dt, var, shapes[s][0], shapes[s][1], shapes[s][2], false, false };
                cases[q++] = (mm_case){ test_backends[be], dt, var, 127, 129, 131, false, true };
            }
    /* PoCL also runs the tiled kernels in the GPUs' shape (256 work-items, 128×128 / 64×64 tiles) */
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < NSHAPES; s++)
            cases[q++] = (mm_case){ GPUWS_BACKEND_OPENCL,
                                    d ? GPUWS_F64 : GPUWS_F32,
                                    GPUWS_MATMUL_TILED,
                                    shapes[s][0],
                                    shapes[s][1],
                                    shapes[s][2],
                                    true,
                                    false };
    return cr_make_param_array(mm_case, cases, q);
}

ParameterizedTest(mm_case *c, matmul, every_element_within_the_error_bound)
{
    const uint64_t seed = test_seed(c->fresh_seed);
    void *a = make_matrix(c->dtype, c->m * c->k, seed, false), *b = make_matrix(c->dtype, c->k * c->n, seed + 1, false);
    void *got = run_case(c, a, b);
    check_against_oracle(c, a, b, got, test_backend_name(c->backend));
    free(got);
    free(a);
    free(b);
}

/* ---- every backend against the reference: exact data ------------------------------------------------------ */

ParameterizedTestParameters(matmul, small_integers_give_the_exact_product_everywhere)
{
    /* |a|, |b| ≤ 8 and k ≤ 1000: every partial sum is an integer below 2^16, exact in f32 */
    static const size_t ishapes[][3] = {
        { 1, 1, 1 }, { 127, 129, 131 }, { 65, 33, 1000 }, { 300, 1, 77 }, { 128, 256, 24 }
    };
    enum { NI = sizeof ishapes / sizeof ishapes[0] };
    static mm_case cases[TEST_BACKENDS * 2 * 3 * NI + 2 * NI];
    size_t q = 0;
    for (int be = 0; be < TEST_BACKENDS; be++)
        for (int d = 0; d < 2; d++)
            for (int v = 0; v < 3; v++)
                for (size_t s = 0; s < NI; s++)
                    cases[q++] = (mm_case){ test_backends[be],
                                            d ? GPUWS_F64 : GPUWS_F32,
                                            (gpuws_matmul_variant)v,
                                            ishapes[s][0],
                                            ishapes[s][1],
                                            ishapes[s][2],
                                            false,
                                            false };
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < NI; s++)
            cases[q++] = (mm_case){ GPUWS_BACKEND_OPENCL,
                                    d ? GPUWS_F64 : GPUWS_F32,
                                    GPUWS_MATMUL_TILED,
                                    ishapes[s][0],
                                    ishapes[s][1],
                                    ishapes[s][2],
                                    true,
                                    false };
    return cr_make_param_array(mm_case, cases, q);
}

ParameterizedTest(mm_case *c, matmul, small_integers_give_the_exact_product_everywhere)
{
    void *a = make_matrix(c->dtype, c->m * c->k, 11, true), *b = make_matrix(c->dtype, c->k * c->n, 12, true);
    void *got = run_case(c, a, b), *want = reference(c, a, b);
    const size_t es = gpuws_dtype_size(c->dtype);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < c->m * c->n; i++)
        if (memcmp((char *)got + i * es, (char *)want + i * es, es) != 0 && bad++ == 0) first = i;
    cr_assert_eq(bad, 0, "%s %s %s %zux%zux%zu: %zu elements differ from the exact product (first C[%zu][%zu])",
                 test_backend_name(c->backend), gpuws_dtype_name(c->dtype), variant_name(c->variant), c->m, c->n, c->k,
                 bad, first / c->n, first % c->n);
    free(got);
    free(want);
    free(a);
    free(b);
}

/* ---- shapes, special values, streams ---------------------------------------------------------------------- */

/* The result does not depend on the launch: the kernels agree within twice the bound (each is within it), at
 * odd shapes (the last needs more than 65535 blocks of 16 rows: the naive kernel's grid loops in y on GPUs);
 * m = 0 or n = 0 is an empty product that writes nothing; k = 0 gives zeros. */
BACKEND_TEST(matmul, result_does_not_depend_on_the_kernel)
{
    static const size_t odd[][3] = {
        { 1, 1, 1 }, { 1, 1000, 1 }, { 127, 129, 131 }, { 5, 3, 4096 }, { (1u << 20) + 17, 3, 2 }
    };
    for (size_t s = 0; s < sizeof odd / sizeof odd[0]; s++) {
        mm_case c = { *kind, GPUWS_F32, GPUWS_MATMUL_TILED, odd[s][0], odd[s][1], odd[s][2], false, false };
        float *a = make_matrix(c.dtype, c.m * c.k, 21 + s, false), *b = make_matrix(c.dtype, c.k * c.n, 31 + s, false);
        float *tiled = run_case(&c, a, b);
        c.variant = GPUWS_MATMUL_NAIVE;
        float *naive = run_case(&c, a, b);
        c.variant = GPUWS_MATMUL_SHARED;
        float *shared = run_case(&c, a, b);
        for (size_t i = 0; i < c.m; i++)
            for (size_t j = 0; j < c.n; j++) {
                double abs_sum;
                gpuws_matmul_oracle_f32(a, b, c.n, c.k, i, j, &abs_sum);
                const long double bound = 2 * gpuws_matmul_error_bound(0, c.k, abs_sum) * SAFETY;
                cr_assert(fabsl((long double)tiled[i * c.n + j] - naive[i * c.n + j]) <= bound &&
                              fabsl((long double)shared[i * c.n + j] - naive[i * c.n + j]) <= bound,
                          "%zux%zux%zu C[%zu][%zu]: tiled %.9g, shared %.9g, naive %.9g", c.m, c.n, c.k, i, j,
                          (double)tiled[i * c.n + j], (double)shared[i * c.n + j], (double)naive[i * c.n + j]);
            }
        free(shared);
        free(tiled);
        free(naive);
        free(a);
        free(b);
    }

    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *a = test_buffer(ctx, 64), *b = test_buffer(ctx, 64), *c = test_buffer(ctx, 64);
    float one = 1.0f;
    TEST_OK(gpuws_buffer_fill(a, 0, &one, 4, 64));
    TEST_OK(gpuws_buffer_fill(b, 0, &one, 4, 64));
    for (int v = 0; v < 3; v++) {
        TEST_OK(gpuws_matmul_ex(NULL, (gpuws_matmul_variant)v, GPUWS_F32, 0, 4, 4, a, b, c));
        TEST_OK(gpuws_matmul_ex(NULL, (gpuws_matmul_variant)v, GPUWS_F32, 4, 0, 4, a, b, c));
        TEST_OK(gpuws_matmul_ex(NULL, (gpuws_matmul_variant)v, GPUWS_F32, 0, 0, 0, a, b, c));
        test_check_guard(c, 0, "c"); /* empty products write nothing */
    }
    TEST_OK(gpuws_matmul(NULL, GPUWS_F32, 3, 5, 0, a, b, c)); /* k = 0: the empty sum */
    float z[16];
    TEST_OK(gpuws_buffer_read(c, 0, z, sizeof z));
    for (int i = 0; i < 15; i++) cr_assert(z[i] == 0.0f && !signbit(z[i]), "k = 0: C[%d] = %g", i, (double)z[i]);
    test_check_guard(c, 15 * 4, "c");
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_buffer_destroy(c);
    gpuws_context_destroy(ctx);
}

/* IEEE semantics: a NaN in row 2 of A makes row 2 of C NaN and nothing else; an Inf in column 1 of B makes the
 * rest of column 1 +Inf (all entries are positive, so no Inf - Inf). Both kernels, f32 and f64. */
BACKEND_TEST(matmul, nan_and_inf_propagate_to_their_row_and_column_only)
{
    enum { M = 37, N = 41, K = 19 };
    gpuws_context *ctx = test_open(*kind);
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        gpuws_device_info info;
        TEST_OK(gpuws_context_get_device_info(ctx, &info));
        if (dt == GPUWS_F64 && !info.fp64) continue;
        const size_t es = gpuws_dtype_size(dt);
        double *a = make_matrix(GPUWS_F64, M * K, 41, false), *b = make_matrix(GPUWS_F64, K * N, 42, false);
        for (size_t i = 0; i < M * K; i++) a[i] = 0.5 + fabs(a[i]); /* positive: no Inf - Inf */
        for (size_t i = 0; i < K * N; i++) b[i] = 0.5 + fabs(b[i]);
        a[2 * K + 7] = NAN;
        b[5 * N + 1] = INFINITY;
        unsigned char *ha = malloc(M * K * es), *hb = malloc(K * N * es);
        cr_assert(ha && hb);
        for (size_t i = 0; i < M * K; i++) {
            if (d) memcpy(ha + i * es, &a[i], es);
            else {
                float f = (float)a[i];
                memcpy(ha + i * es, &f, es);
            }
        }
        for (size_t i = 0; i < K * N; i++) {
            if (d) memcpy(hb + i * es, &b[i], es);
            else {
                float f = (float)b[i];
                memcpy(hb + i * es, &f, es);
            }
        }
        gpuws_buffer *da = test_buffer_from(ctx, ha, M * K * es), *db = test_buffer_from(ctx, hb, K * N * es);
        gpuws_buffer *dc = test_buffer(ctx, M * N * es);
        for (int v = 0; v < 3; v++) {
            TEST_OK(gpuws_matmul_ex(NULL, (gpuws_matmul_variant)v, dt, M, N, K, da, db, dc));
            unsigned char *got = test_download(dc, M * N * es);
            for (size_t i = 0; i < M; i++)
                for (size_t j = 0; j < N; j++) {
                    const double g = d ? ((double *)got)[i * N + j] : ((float *)got)[i * N + j];
                    if (i == 2) cr_assert(isnan(g), "%s C[2][%zu] = %g, want NaN", variant_name(v), j, g);
                    else if (j == 1)
                        cr_assert(isinf(g) && g > 0, "%s C[%zu][1] = %g, want +Inf", variant_name(v), i, g);
                    else cr_assert(isfinite(g) && g > 0, "%s C[%zu][%zu] = %g, want finite", variant_name(v), i, j, g);
                }
            free(got);
        }
        gpuws_buffer_destroy(da);
        gpuws_buffer_destroy(db);
        gpuws_buffer_destroy(dc);
        free(ha);
        free(hb);
        free(a);
        free(b);
    }
    gpuws_context_destroy(ctx);
}

/* On a stream of its own, two products queued back to back (the second reads the first's output) without a
 * synchronisation in between, then read back: C2 = (A·B)·B for 48×48 integer matrices, exact. */
BACKEND_TEST(matmul, queues_on_a_user_stream)
{
    enum { S = 48 };
    gpuws_context *ctx = test_open(*kind);
    gpuws_stream *st;
    TEST_OK(gpuws_stream_create(ctx, &st));
    float *a = make_matrix(GPUWS_F32, S * S, 51, true), *b = make_matrix(GPUWS_F32, S * S, 52, true);
    float *ab = malloc(S * S * 4), *want = malloc(S * S * 4), got[S * S];
    cr_assert(ab && want);
    gpuws_matmul_ref_f32(a, b, ab, S, S, S); /* |ab| ≤ 48·64; |ab·b| ≤ 48·8·3072 < 2^24: exact */
    gpuws_matmul_ref_f32(ab, b, want, S, S, S);
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof got), *db = test_buffer_from(ctx, b, sizeof got);
    gpuws_buffer *d1 = test_buffer(ctx, sizeof got), *d2 = test_buffer(ctx, sizeof got);
    TEST_OK(gpuws_matmul(st, GPUWS_F32, S, S, S, da, db, d1));
    TEST_OK(gpuws_matmul(st, GPUWS_F32, S, S, S, d1, db, d2));
    TEST_OK(gpuws_buffer_read_async(st, d2, 0, got, sizeof got));
    TEST_OK(gpuws_stream_synchronize(st));
    cr_assert_arr_eq(got, want, sizeof got);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(d1);
    gpuws_buffer_destroy(d2);
    gpuws_stream_destroy(st);
    free(a);
    free(b);
    free(ab);
    free(want);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(matmul, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *a = test_buffer(ctx, 400), *b = test_buffer(ctx, 400), *c = test_buffer(ctx, 400);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 4, NULL, b, c));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 4, a, NULL, c));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 4, a, b, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_I32, 5, 5, 4, a, b, c));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul_ex(NULL, (gpuws_matmul_variant)3, GPUWS_F32, 5, 5, 4, a, b, c));
    /* the output may not be an input (the kernels read A and B while C is written) */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 5, a, b, a));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 5, a, b, b));
    /* N overflow: m·n elements (and k·n) overflow size_t */
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_matmul(NULL, GPUWS_F32, 4, SIZE_MAX / 2, 1, a, b, c));
    cr_assert(strstr(gpuws_last_error(), "overflow"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_matmul(NULL, GPUWS_F64, 1, SIZE_MAX / 4, 1, a, b, c)); /* bytes overflow */
    /* 11·11 floats need 484 bytes; the buffers hold 400 + the guard */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_matmul(NULL, GPUWS_F32, 11, 11, 1, a, b, c));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_matmul(NULL, GPUWS_F32, 1, 1, 200, a, b, c));
    /* a dimension of 2^31 or more, even in an empty product; 2^31 - 1 is fine */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_matmul(NULL, GPUWS_F32, (size_t)1 << 31, 0, 0, a, b, c));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_matmul(NULL, GPUWS_F32, 0, 0, (size_t)1 << 31, a, b, c));
    TEST_OK(gpuws_matmul(NULL, GPUWS_F32, ((size_t)1 << 31) - 1, 0, 0, a, b, c));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 400);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 4, a, foreign, c));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_matmul(NULL, GPUWS_F32, 5, 5, 4, a, b, foreign));
    test_check_guard(c, 0, "c"); /* nothing written: every byte still poison */
    test_check_guard(foreign, 0, "foreign");
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_buffer_destroy(c);
    gpuws_context_destroy(ctx);
}

/* The CLI (`gpuws matmul M N K`): prints the result's corners, the check and the rate; bad usage exits 2. */
Test(matmul, cli_prints_result_check_time_and_rate)
{
    const char *cli = getenv("GPUWS_CLI");
    cr_assert(cli, "GPUWS_CLI is not set (ctest sets it)");
    char cmd[1200], out[4096] = "";
    snprintf(cmd, sizeof cmd, "GPUWS_BACKEND=cpu '%s' matmul 37 41 43 --dtype f64 --repeat 3 2>/dev/null", cli);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    cr_assert_eq(pclose(p), 0, "%s exited non-zero:\n%s", cmd, out);
    cr_assert(strstr(out, "matmul 37 x 41 x 43 f64 tiled on cpu"), "%s", out);
    cr_assert(strstr(out, "C[36][40] = ") && strstr(out, "check: sampled elements") && !strstr(out, "WRONG"), "%s",
              out);
    cr_assert(strstr(out, "median of 3") && strstr(out, "GFLOP/s"), "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' matmul 3 5 >/dev/null 2>&1", cli);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2, "missing K must be a usage error");
    snprintf(cmd, sizeof cmd, "'%s' matmul 3 5 7 --dtype i8 >/dev/null 2>&1", cli);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2, "an unknown dtype must be a usage error");
}
