/* l2_norm: out[r] = ‖row r‖₂ on every backend, with both kernels, over the whole floating-point range.
 *
 * Oracle: the norm in long double (gpuws_l2_norm_oracle_*), scaled, relative error below (cols + 2)·ε_ld.
 * Bound: the device sums cols scaled squares y² (each y exact: scaling is by a power of two) in any order, so
 * the sum is within γ_cols of the exact one (γ_n = n·u/(1 − n·u), Higham eq. 3.5; all terms are positive, so the
 * bound is relative), the square root halves that and adds u, and the final scaling is exact; hence
 * |got − exact| ≤ (γ_cols/2 + 2u)·exact, u = 2^-24 (f32) or 2^-53 (f64), the extra u paying for the squares of
 * elements so much smaller than the row's maximum that they underflow after scaling (each below 2^-148 of the
 * maximum's square, so all of them together below cols·2^-148·exact ≪ u·exact). Results in the subnormal range
 * are rounded to the subnormal grid: half its spacing (2^-150, 2^-1075) is allowed on top, and so is the oracle's
 * own error. No slack factor: the bound is rigorous.
 * NaN (bad input) gives NaN for its row only; Inf gives +Inf; checked exactly. */
#include "support.h"
#include "l2_norm/l2_norm_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KERNEL_AUTO = 0, KERNEL_GROUP, KERNEL_ROWS } l2_kernel;
static const char *const kernel_knob[] = { NULL, "group", "rows" }; /* the knob l2_norm_kernel */

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    l2_kernel kernel;
    size_t rows, cols;
    bool fresh_seed;
} l2_case;

/* One element, short rows (thread per row on GPUs), one warp's worth, rows a warp holds in registers (1024 f32),
 * rows needing 64..256 lanes (4099, 5000), rows longer than 256 lanes hold (8192 f32, 4096 f64), read twice,
 * columns, and rows whose length is not a multiple of the 16-byte vector. */
static const size_t shapes[][2] = { { 1, 1 },    { 7, 3 },      { 1000, 31 }, { 100, 32 }, { 64, 1024 }, { 65, 1025 },
                                    { 3, 5000 }, { 257, 4099 }, { 2, 20003 }, { 2000, 1 }, { 513, 333 } };
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static void open_for(const l2_case *c, gpuws_context **ctx)
{
    *ctx = test_open(c->backend);
    if (kernel_knob[c->kernel]) test_tune(*ctx, "l2_norm_kernel", kernel_knob[c->kernel]);
    test_require_dtype(*ctx, c->dtype);
}

/* Each row uniform in [-1, 1) times 2^E, E uniform in [-120, 120] (f32) or [-1000, 1000] (f64): most rows' squares
 * leave the dtype's range unless scaled. */
static void *make_rows(gpuws_dtype dt, size_t rows, size_t cols, uint64_t seed)
{
    const size_t es = gpuws_dtype_size(dt);
    void *x = malloc(rows * cols * es + 8);
    cr_assert_not_null(x);
    const int span = dt == GPUWS_F32 ? 120 : 1000;
    for (size_t r = 0; r < rows; r++) {
        const int e = (int)(test_rand_u64(&seed) % (2 * span + 1)) - span;
        for (size_t j = 0; j < cols; j++) {
            const double v = ldexp(test_rand_uniform(&seed) * 2 - 1, e);
            if (dt == GPUWS_F32) ((float *)x)[r * cols + j] = (float)v;
            else ((double *)x)[r * cols + j] = v;
        }
    }
    return x;
}

static long double gamma_n(size_t n, long double u) { return (long double)n * u / (1 - (long double)n * u); }

/* got for a row of `cols` elements against `exact` (known to relative `exact_err`); NaN and Inf exactly. */
static void check_norm(gpuws_dtype dt, long double got, long double exact, long double exact_err, size_t cols,
                       const char *what, size_t row)
{
    if (isnan(exact)) {
        cr_assert(isnan(got), "%s row %zu: got %.17Lg, want NaN", what, row);
        return;
    }
    const bool f32 = dt == GPUWS_F32;
    const long double big = f32 ? FLT_MAX : DBL_MAX;
    if (isinf(exact) || exact > big * (1 + (f32 ? 0x1p-24L : 0x1p-53L))) { /* rounds to Inf in the dtype */
        cr_assert(isinf(got) && got > 0, "%s row %zu: got %.17Lg, want +Inf (exact %.17Lg)", what, row, got, exact);
        return;
    }
    const long double u = f32 ? 0x1p-24L : 0x1p-53L, half_sub = f32 ? 0x1p-150L : 0x1p-1075L;
    const long double bound = (gamma_n(cols, u) / 2 + 2 * u + exact_err) * exact + half_sub;
    cr_assert(fabsl(got - exact) <= bound && !signbit(got),
              "%s row %zu of %zu elements: got %.17Lg, exact %.17Lg, allowed %.3Lg", what, row, cols, got, exact,
              bound);
}

#define ORACLE_ERR(cols) (((cols) + 2) * LDBL_EPSILON)
static long double oracle(gpuws_dtype dt, const void *x, size_t cols, size_t r)
{
    return dt == GPUWS_F32 ? gpuws_l2_norm_oracle_f32((const float *)x + r * cols, cols)
                           : gpuws_l2_norm_oracle_f64((const double *)x + r * cols, cols);
}

/* Runs l2_norm on the case's backend (context already open) and returns out on the host; checks the guard. */
static void *run(gpuws_context *ctx, gpuws_dtype dt, size_t rows, size_t cols, const void *x)
{
    const size_t es = gpuws_dtype_size(dt);
    gpuws_buffer *in = test_buffer_from(ctx, x, rows * cols * es), *out = test_buffer(ctx, rows * es);
    TEST_OK(gpuws_l2_norm(NULL, dt, rows, cols, in, out));
    void *got = test_download(out, rows * es);
    test_check_guard(out, rows * es, "out");
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
    return got;
}

static long double element(gpuws_dtype dt, const void *v, size_t i)
{
    return dt == GPUWS_F32 ? ((const float *)v)[i] : ((const double *)v)[i];
}

/* ---- the reference against independent truth ---------------------------------------------------------------- */

Test(l2_norm, reference_gives_known_answers)
{
    const float x[] = { 3, 4, 0, 0, /**/ 1, 1, 1, 1, /**/ 0, -0.0f, 0, 0, /**/ -2, 0, 0, 0 };
    float out[4];
    gpuws_l2_norm_ref_f32(x, out, 4, 4);
    cr_assert(out[0] == 5 && out[1] == 2 && out[2] == 0 && !signbit(out[2]) && out[3] == 2, "%g %g %g %g",
              (double)out[0], (double)out[1], (double)out[2], (double)out[3]);
    /* squares that overflow or underflow float: the scaled sum still gets them (√2·FLT_MAX/2, 2·1e-30) */
    const float big[] = { FLT_MAX / 2, FLT_MAX / 2, 1e-30f, 1e-30f, 1e-30f, 1e-30f, INFINITY, 1, NAN, INFINITY };
    float b[5];
    gpuws_l2_norm_ref_f32(big, b, 5, 2);
    cr_assert(fabs((double)b[0] / (FLT_MAX / M_SQRT2) - 1) < 1e-6, "%g", (double)b[0]);
    cr_assert(fabs((double)b[1] / (M_SQRT2 * 1e-30) - 1) < 1e-6 && fabs((double)b[2] / (M_SQRT2 * 1e-30) - 1) < 1e-6);
    cr_assert(isinf(b[3]) && b[3] > 0 && isnan(b[4]), "Inf row %g, NaN row %g", (double)b[3], (double)b[4]);
    const double d[] = { DBL_MAX, DBL_MAX, 0x1p-1070, 0x1p-1070 };
    double o[2];
    gpuws_l2_norm_ref_f64(d, o, 2, 2); /* √2·DBL_MAX overflows (correctly); √2·2^-1070 is subnormal */
    cr_assert(isinf(o[0]) && fabs(o[1] / (M_SQRT2 * 0x1p-1070) - 1) < 1e-3, "%g %g", o[0], o[1]);
}

/* np.linalg.norm(x.astype(f64), axis=1) of a float32 matrix whose rows span 1e-35..1e35 and the edges of float32
 * (tests/data/make_matmul_l2_golden.py), for the reference and on every backend and kernel, to the bound above
 * with NumPy's own error (its double result is within (cols + 1)·2^-53 relative) in place of the oracle's. */
BACKEND_TEST(l2_norm, matches_numpy_golden_file)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    cr_assert(dir, "GPUWS_TEST_DATA is not set (ctest sets it)");
    char path[1024];
    snprintf(path, sizeof path, "%s/l2_norm_golden.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char tag[16];
    size_t rows, cols, r2, one;
    int ch;
    while ((ch = fgetc(f)) == '#')
        while ((ch = fgetc(f)) != '\n' && ch != EOF) {
        }
    ungetc(ch, f);
    cr_assert(fscanf(f, "%15s %zu %zu", tag, &rows, &cols) == 3 && !strcmp(tag, "X"), "golden file: no X block");
    float *x = malloc(rows * cols * sizeof *x);
    double *norms = malloc(rows * sizeof *norms);
    cr_assert(x && norms);
    for (size_t i = 0; i < rows * cols; i++) {
        double v;
        cr_assert_eq(fscanf(f, "%lf", &v), 1, "golden file: X is short");
        x[i] = (float)v; /* exact: the file holds float32 values */
    }
    cr_assert(fscanf(f, "%15s %zu %zu", tag, &r2, &one) == 3 && !strcmp(tag, "NORM") && r2 == rows, "no NORM block");
    for (size_t i = 0; i < rows; i++) cr_assert_eq(fscanf(f, "%lf", &norms[i]), 1, "golden file: NORM is short");
    fclose(f);

    const long double numpy_err = (cols + 1) * 0x1p-53L;
    float *ref = malloc(rows * sizeof *ref);
    cr_assert_not_null(ref);
    gpuws_l2_norm_ref_f32(x, ref, rows, cols);
    for (size_t r = 0; r < rows; r++) check_norm(GPUWS_F32, ref[r], norms[r], numpy_err, cols, "reference", r);
    for (int k = 0; k < 3; k++) {
        if (k && *kind != GPUWS_BACKEND_OPENCL) break; /* forcing a kernel only means something on OpenCL */
        const l2_case c = { *kind, GPUWS_F32, (l2_kernel)k, rows, cols, false };
        gpuws_context *ctx;
        open_for(&c, &ctx);
        float *got = run(ctx, GPUWS_F32, rows, cols, x);
        for (size_t r = 0; r < rows; r++)
            check_norm(GPUWS_F32, got[r], norms[r], numpy_err, cols, test_backend_name(*kind), r);
        cr_assert(isinf(got[0]) && isfinite(got[1]), "row 0 (norm 1.8e39) must be Inf, row 1 (2.3e38) finite");
        free(got);
        gpuws_context_destroy(ctx);
    }
    free(ref);
    free(x);
    free(norms);
}

/* ---- every backend against the oracle --------------------------------------------------------------------- */

ParameterizedTestParameters(l2_norm, every_row_within_the_error_bound)
{
    static l2_case cases[TEST_BACKENDS * 2 * (NSHAPES + 1) + 2 * 2 * NSHAPES];
    size_t q = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int d = 0; d < 2; d++) {
            for (size_t s = 0; s < NSHAPES; s++)
                cases[q++] = (l2_case){ test_backends[b], d ? GPUWS_F64 : GPUWS_F32,
                                        KERNEL_AUTO,      shapes[s][0],
                                        shapes[s][1],     false };
            cases[q++] = (l2_case){ test_backends[b], d ? GPUWS_F64 : GPUWS_F32, KERNEL_AUTO, 123, 777, true };
        }
    /* PoCL picks one work-item per row: make it run the GPUs' group kernel (and the short-row kernel) too */
    for (int k = KERNEL_GROUP; k <= KERNEL_ROWS; k++)
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < NSHAPES; s++)
                cases[q++] = (l2_case){ GPUWS_BACKEND_OPENCL, d ? GPUWS_F64 : GPUWS_F32,
                                        (l2_kernel)k,         shapes[s][0],
                                        shapes[s][1],         false };
    return cr_make_param_array(l2_case, cases, q);
}

ParameterizedTest(l2_case *c, l2_norm, every_row_within_the_error_bound)
{
    gpuws_context *ctx;
    open_for(c, &ctx);
    void *x = make_rows(c->dtype, c->rows, c->cols, test_seed(c->fresh_seed));
    void *got = run(ctx, c->dtype, c->rows, c->cols, x);
    char what[64];
    snprintf(what, sizeof what, "%s %s kernel=%s", test_backend_name(c->backend), gpuws_dtype_name(c->dtype),
             kernel_knob[c->kernel] ? kernel_knob[c->kernel] : "auto");
    for (size_t r = 0; r < c->rows; r++)
        check_norm(c->dtype, element(c->dtype, got, r), oracle(c->dtype, x, c->cols, r), ORACLE_ERR(c->cols), c->cols,
                   what, r);
    free(got);
    free(x);
    gpuws_context_destroy(ctx);
}

/* ---- special values: NaN is reported in its row, the range is used to its ends -------------------------- */

ParameterizedTestParameters(l2_norm, special_values_and_range_ends)
{
    /* vector loads, scalar ones, and rows long enough that their ends are read in the second loop of the kernels */
    static const size_t widths[] = { 40, 41, 20003 };
    static l2_case cases[TEST_BACKENDS * 2 * 3 + 2 * 2 * 3];
    size_t q = 0;
    for (int b = 0; b < TEST_BACKENDS; b++)
        for (int d = 0; d < 2; d++)
            for (size_t w = 0; w < 3; w++)
                cases[q++] =
                    (l2_case){ test_backends[b], d ? GPUWS_F64 : GPUWS_F32, KERNEL_AUTO, 12, widths[w], false };
    for (int k = KERNEL_GROUP; k <= KERNEL_ROWS; k++)
        for (int d = 0; d < 2; d++)
            for (size_t w = 0; w < 3; w++)
                cases[q++] =
                    (l2_case){ GPUWS_BACKEND_OPENCL, d ? GPUWS_F64 : GPUWS_F32, (l2_kernel)k, 12, widths[w], false };
    return cr_make_param_array(l2_case, cases, q);
}

ParameterizedTest(l2_case *c, l2_norm, special_values_and_range_ends)
{
    const bool f32 = c->dtype == GPUWS_F32;
    const double big = f32 ? FLT_MAX : DBL_MAX, tiny = f32 ? 1e-30 : 1e-300, sub = f32 ? 1e-40 : 1e-310;
    enum { ROWS = 12 };
    const size_t cols = c->cols;
    double *v = calloc(ROWS * cols, sizeof *v);
    cr_assert_not_null(v);
    /* The decisive elements sit at the ends of the rows (read last) and the row's maximum is needed for them. */
    const size_t e = cols - 1;
    v[0 * cols + 0] = 3, v[0 * cols + e] = 4; /* 5 */
    for (size_t j = 0; j < cols; j++) v[1 * cols + j] = 1;
    v[1 * cols + e - 2] = NAN;                              /* NaN: bad input, reported as NaN in its row */
    v[2 * cols + 3] = 1, v[2 * cols + e - 1] = INFINITY;    /* +Inf */
    v[3 * cols + 5] = -INFINITY, v[3 * cols + e - 9] = NAN; /* NaN wins over Inf, as NumPy */
    /* row 4: zeros → 0; row 5: negative zeros → +0 */
    for (size_t j = 0; j < cols; j++) v[5 * cols + j] = -0.0;
    v[6 * cols + 1] = 1, v[6 * cols + e - 1] = big / 2, v[6 * cols + e] = big / 2; /* big/√2: finite only when scaled */
    v[7 * cols + 0] = big, v[7 * cols + e] = -big;                                 /* √2·big: Inf */
    for (size_t j = 0; j < 4; j++) v[8 * cols + e - 13 + j] = tiny; /* 2·tiny: squares underflow unless scaled */
    for (size_t j = 0; j < 4; j++) v[9 * cols + e - 23 + j] = sub;  /* 2·sub, a subnormal result */
    v[10 * cols + 1] = 1e-20, v[10 * cols + e] = 1;                 /* 1: the tiny square vanishes */
    v[11 * cols + cols / 2] = -7;                                   /* 7 */
    const size_t es = gpuws_dtype_size(c->dtype);
    unsigned char *x = malloc(ROWS * cols * es);
    cr_assert_not_null(x);
    for (size_t i = 0; i < ROWS * cols; i++) {
        if (f32) {
            float t = (float)v[i];
            memcpy(x + i * es, &t, es);
        } else memcpy(x + i * es, &v[i], es);
    }
    gpuws_context *ctx;
    open_for(c, &ctx);
    void *got = run(ctx, c->dtype, ROWS, cols, x);
    char what[64];
    snprintf(what, sizeof what, "%s %s cols=%zu kernel=%s", test_backend_name(c->backend), gpuws_dtype_name(c->dtype),
             cols, kernel_knob[c->kernel] ? kernel_knob[c->kernel] : "auto");
    for (size_t r = 0; r < ROWS; r++)
        check_norm(c->dtype, element(c->dtype, got, r), oracle(c->dtype, x, cols, r), ORACLE_ERR(cols), cols, what, r);
    /* and the answers that need no oracle */
    cr_assert_eq(element(c->dtype, got, 0), 5.0L, "%s: ‖(3, 4)‖", what);
    cr_assert(isnan(element(c->dtype, got, 1)) && isnan(element(c->dtype, got, 3)), "%s: NaN rows", what);
    cr_assert(isinf(element(c->dtype, got, 2)) && isinf(element(c->dtype, got, 7)), "%s: Inf rows", what);
    cr_assert(element(c->dtype, got, 4) == 0 && element(c->dtype, got, 5) == 0, "%s: zero rows", what);
    cr_assert(isfinite(element(c->dtype, got, 6)) && element(c->dtype, got, 8) > 0, "%s: range ends", what);
    cr_assert_eq(element(c->dtype, got, 11), 7.0L, "%s: ‖(-7)‖", what);
    free(got);
    free(x);
    free(v);
    gpuws_context_destroy(ctx);
}

/* ---- shapes and bad input --------------------------------------------------------------------------------- */

BACKEND_TEST(l2_norm, empty_rows_give_zero_and_no_rows_write_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *in = test_buffer(ctx, 64), *out = test_buffer(ctx, 64);
    TEST_OK(gpuws_l2_norm(NULL, GPUWS_F32, 0, 5, in, out));
    TEST_OK(gpuws_l2_norm(NULL, GPUWS_F32, 0, 0, in, in));
    test_check_guard(out, 0, "out");
    TEST_OK(gpuws_l2_norm(NULL, GPUWS_F32, 7, 0, in, out)); /* the norm of an empty vector is 0 */
    float z[7];
    TEST_OK(gpuws_buffer_read(out, 0, z, sizeof z));
    for (int i = 0; i < 7; i++) cr_assert(z[i] == 0.0f && !signbit(z[i]), "out[%d] = %g", i, (double)z[i]);
    test_check_guard(out, sizeof z, "out");
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(l2_norm, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *in = test_buffer(ctx, 400), *out = test_buffer(ctx, 400);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_l2_norm(NULL, GPUWS_F32, 10, 10, NULL, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_l2_norm(NULL, GPUWS_F32, 10, 10, in, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_l2_norm(NULL, GPUWS_I32, 10, 10, in, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_l2_norm(NULL, GPUWS_F32, 10, 10, in, in));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_l2_norm(NULL, GPUWS_F32, SIZE_MAX / 2, 3, in, out));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_l2_norm(NULL, GPUWS_F64, 4, SIZE_MAX / 16, in, out));
    cr_assert(strstr(gpuws_last_error(), "overflow"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_l2_norm(NULL, GPUWS_F32, 11, 11, in, out)); /* in: 484 > 400 + guard */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_l2_norm(NULL, GPUWS_F32, 200, 0, in, out)); /* out: 800 > 464 */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_l2_norm(NULL, GPUWS_F32, 0, (size_t)1 << 31, in, out)); /* 2^31 cols */
    TEST_OK(gpuws_l2_norm(NULL, GPUWS_F32, 0, ((size_t)1 << 31) - 1, in, out));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 400);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_l2_norm(NULL, GPUWS_F32, 10, 10, in, foreign));
    test_check_guard(out, 0, "out");
    test_check_guard(foreign, 0, "foreign");
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}
