/* reduce: sum / min / max on every backend.
 *
 * Oracle: the reference (Neumaier-compensated double sum: within a few ulps of the exact sum; exact min/max).
 * min/max must be bit-identical on every backend (there is nothing to round).
 * Sums are allowed the error of summing in double in any order, which Higham bounds by (n-1)*2^-53*sum|x|
 * (Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.4 — it holds for every evaluation order, so it
 * needs no knowledge of the device's tree), plus, for f32 results, one ulp of the final rounding to float.
 * For n = 2^24 that is 2^-29 * sum|x|, a hundred times smaller than dropping one average element: the bound
 * catches lost or double-counted elements. */
#include "support.h"
#include "reduce/reduce_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_backend_kind backend;
    gpuws_reduce_op op;
    gpuws_dtype dtype;
    size_t n;
    bool fresh_seed;
} red_case;

static const char *op_name(gpuws_reduce_op op)
{
    return op == GPUWS_REDUCE_SUM ? "sum" : op == GPUWS_REDUCE_MIN ? "min" : "max";
}

static const size_t sizes[] = { 0, 1, 31, 1000, (1u << 20) + 7, 1u << 24 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

ParameterizedTestParameters(reduce, agrees_with_reference)
{
    static red_case cases[3 * 2 * (NSIZES + 1)];
    size_t k = 0;
    for (int op = 0; op < 3; op++)
        for (int d = 0; d < 2; d++) {
            gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
            for (size_t s = 0; s < NSIZES; s++) {
                if (sizes[s] == 0 && op != GPUWS_REDUCE_SUM) continue; /* no value: tested below */
                cases[k++] = (red_case){ 0, (gpuws_reduce_op)op, dt, sizes[s], false };
            }
            cases[k++] = (red_case){ 0, (gpuws_reduce_op)op, dt, 123457, true };
        }
    return TEST_BACKEND_PARAMS(cases, k);
}

/* Values with mixed signs and magnitudes, so sums cancel and min/max are not at the ends. */
static void fill(void *x, gpuws_dtype dt, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        double u = test_rand_uniform(&seed) * 2 - 1;
        double v = u * pow(10.0, (double)(test_rand_u64(&seed) % 7) - 3);
        if (dt == GPUWS_F32) ((float *)x)[i] = (float)v;
        else ((double *)x)[i] = v;
    }
}

static void run(gpuws_context *ctx, const red_case *c, const void *host, unsigned char *out_bytes)
{
    const size_t es = gpuws_dtype_size(c->dtype);
    gpuws_buffer *in = test_buffer_from(ctx, host, c->n * es), *out = test_buffer(ctx, es);
    TEST_OK(gpuws_reduce(NULL, c->op, c->dtype, c->n, in, out));
    TEST_OK(gpuws_buffer_read(out, 0, out_bytes, es));
    test_check_guard(out, es, "out");
    double via_value;
    TEST_OK(gpuws_reduce_value(NULL, c->op, c->dtype, c->n, in, &via_value));
    double direct = c->dtype == GPUWS_F32 ? (double)*(float *)out_bytes : *(double *)out_bytes;
    cr_assert(memcmp(&via_value, &direct, 8) == 0 || (isnan(via_value) && isnan(direct)),
              "gpuws_reduce_value %.17g differs from gpuws_reduce %.17g", via_value, direct);
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
}

static void check_result(const red_case *c, const void *x, const unsigned char *got_bytes)
{
    const char *what = test_backend_name(c->backend);
    if (c->op == GPUWS_REDUCE_SUM) {
        double sum_abs = 0, want;
        for (size_t i = 0; i < c->n; i++)
            sum_abs += c->dtype == GPUWS_F32 ? fabs((double)((const float *)x)[i]) : fabs(((const double *)x)[i]);
        double bound = (c->n ? (double)(c->n - 1) : 0) * 0x1p-53 * sum_abs * 1.01;
        if (c->dtype == GPUWS_F32) {
            want = gpuws_reduce_ref_sum_f32(x, c->n);
            float got, wantf = (float)want;
            memcpy(&got, got_bytes, 4);
            double ulp = nextafterf(fabsf(wantf), INFINITY) - fabsf(wantf);
            cr_assert(fabs((double)got - want) <= bound + ulp,
                      "%s sum_f32 n=%zu: got %.9g, reference %.9g, allowed %.3g", what, c->n, (double)got, want,
                      bound + ulp);
        } else {
            want = gpuws_reduce_ref_sum_f64(x, c->n);
            double got;
            memcpy(&got, got_bytes, 8);
            double ulp = nextafter(fabs(want), INFINITY) - fabs(want);
            cr_assert(fabs(got - want) <= bound + ulp, "%s sum_f64 n=%zu: got %.17g, reference %.17g, allowed %.3g",
                      what, c->n, got, want, bound + ulp);
        }
        return;
    }
    unsigned char want[8];
    if (c->dtype == GPUWS_F32) {
        float w = c->op == GPUWS_REDUCE_MIN ? gpuws_reduce_ref_min_f32(x, c->n) : gpuws_reduce_ref_max_f32(x, c->n);
        memcpy(want, &w, 4);
    } else {
        double w = c->op == GPUWS_REDUCE_MIN ? gpuws_reduce_ref_min_f64(x, c->n) : gpuws_reduce_ref_max_f64(x, c->n);
        memcpy(want, &w, 8);
    }
    size_t es = gpuws_dtype_size(c->dtype);
    bool nan_both = c->dtype == GPUWS_F32 ? isnan(*(const float *)want) && isnan(*(const float *)got_bytes)
                                          : isnan(*(const double *)want) && isnan(*(const double *)got_bytes);
    cr_assert(nan_both || memcmp(want, got_bytes, es) == 0, "%s %s_%s n=%zu: result differs from the reference", what,
              op_name(c->op), gpuws_dtype_name(c->dtype), c->n);
}

ParameterizedTest(red_case *c, reduce, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    test_require_dtype(ctx, c->dtype);
    const size_t es = gpuws_dtype_size(c->dtype);
    void *x = malloc(c->n * es + 8);
    cr_assert(x);
    fill(x, c->dtype, c->n, test_seed(c->fresh_seed));
    unsigned char got[8];
    run(ctx, c, x, got);
    check_result(c, x, got);
    free(x);
    gpuws_context_destroy(ctx);
}

/* Known answers that do not depend on the reference. */
BACKEND_TEST(reduce, edge_values)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 10003 }; /* the sum stays below 2^24, so it is exact in float too */
    float *x = malloc(N * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < N; i++) x[i] = (float)(i % 1000); /* sum is exact in double */
    gpuws_buffer *in = test_buffer_from(ctx, x, N * sizeof *x);
    double r;
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, N, in, &r));
    /* 10 full cycles of 0..999 (sum 499500 each) and 0, 1, 2 */
    cr_assert_eq(r, 10.0 * 499500.0 + 3.0, "sum = %.17g", r);
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, N, in, &r));
    cr_assert_eq(r, 999.0);
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, N, in, &r));
    cr_assert_eq(r, 0.0);
    /* one NaN anywhere makes min and max NaN, like NumPy */
    float nan = NAN;
    TEST_OK(gpuws_buffer_write(in, 7777 * sizeof(float), &nan, sizeof nan));
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, N, in, &r));
    cr_assert(isnan(r), "min with a NaN = %g", r);
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, N, in, &r));
    cr_assert(isnan(r), "max with a NaN = %g", r);
    /* -0.0 is the min and +0.0 the max of {+0, -0}, in either order */
    float zeros[4] = { 0.0f, -0.0f, -0.0f, 0.0f };
    TEST_OK(gpuws_buffer_write(in, 0, zeros, sizeof zeros));
    float out;
    gpuws_buffer *o = test_buffer(ctx, 4);
    TEST_OK(gpuws_reduce(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, 4, in, o));
    TEST_OK(gpuws_buffer_read(o, 0, &out, 4));
    cr_assert(out == 0.0f && signbit(out), "min(+0,-0) = %g", (double)out);
    TEST_OK(gpuws_reduce(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, 4, in, o));
    TEST_OK(gpuws_buffer_read(o, 0, &out, 4));
    cr_assert(out == 0.0f && !signbit(out), "max(+0,-0) = %g", (double)out);
    /* the empty sum is 0; the empty min/max has no value and leaves out untouched */
    out = 5.0f;
    TEST_OK(gpuws_buffer_write(o, 0, &out, 4));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_reduce(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, 0, in, o));
    TEST_OK(gpuws_buffer_read(o, 0, &out, 4));
    cr_assert_eq(out, 5.0f);
    TEST_OK(gpuws_reduce(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, 0, in, o));
    TEST_OK(gpuws_buffer_read(o, 0, &out, 4));
    cr_assert_eq(out, 0.0f);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_reduce(NULL, (gpuws_reduce_op)7, GPUWS_F32, 4, in, o));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_reduce(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, N * 2, in, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, 4, in, NULL));
    free(x);
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}

/* The compensated float accumulation used on OpenCL devices without fp64, forced on (the knob reduce_f32_acc=float).
 * Bound: Kahan per work-item (2u|s| each) and a pairwise tree of depth <= 2*log2(1024)+... over the partials:
 * (2 + 2*ceil(log2 n)) * 2^-24 * sum|x|. */
Test(reduce, float_accumulation_path_on_opencl)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_OPENCL);
    test_tune(ctx, "reduce_f32_acc", "float");
    const size_t n = (1u << 22) + 3;
    float *x = malloc(n * sizeof *x);
    cr_assert(x);
    fill(x, GPUWS_F32, n, test_seed(false));
    gpuws_buffer *in = test_buffer_from(ctx, x, n * 4);
    double r, sum_abs = 0;
    TEST_OK(gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, n, in, &r));
    for (size_t i = 0; i < n; i++) sum_abs += fabs((double)x[i]);
    double want = gpuws_reduce_ref_sum_f32(x, n), bound = (2 + 2 * ceil(log2((double)n))) * 0x1p-24 * sum_abs;
    cr_assert(fabs(r - want) <= bound, "float-accumulated sum %.9g, reference %.9g, allowed %.3g", r, want, bound);
    free(x);
    gpuws_buffer_destroy(in);
    gpuws_context_destroy(ctx);
}
