/* ufunc: the workshop's elementwise functions on every backend, arrays and scalars mixed.
 *
 * Truth: SciPy/NumPy float64 values of each formula (tests/data/ufunc_golden.txt, made by
 * make_elementwise_golden.py) for the double-precision references. Every backend is then compared element by
 * element with the reference evaluated in double on the same f32 inputs, within the bound stated per function in gpuws/algorithms/ufunc.h and derived in
 * docs/algorithms/ufunc.md from the CUDA and OpenCL 1.2 ULP tables (u = 2^-24):
 *   gaussian_pdf    |err| <= (13 + 13|q|) u |ref|,  q = -0.5 ((x - mean)/sigma)^2
 *   polar_distance  |err| <= 16 u (|rho1| + |rho2|) + 10 u ref
 *   make_pulses     |err| <= |amplitude| (5 |i/period| + 12) u
 *   hypot           |err| <= 12 u ref
 *   hidden_layer    |err| <= 16 u |ref|
 * each plus an absolute FLT_MIN-sized term for results that an OpenCL device without single-precision denormals
 * may flush to zero (gpuws_ufunc_ref_bound, shared with the benchmark checks). zero_suppress only compares and
 * copies: bit-exact. */
#include "support.h"
#include "ufunc/ufunc_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-24

enum {
    GAUSS = GPUWS_UFUNC_GAUSSIAN_PDF,
    POLAR = GPUWS_UFUNC_POLAR_DISTANCE,
    PULSES = GPUWS_UFUNC_MAKE_PULSES,
    HYPOT = GPUWS_UFUNC_HYPOT,
    HIDDEN = GPUWS_UFUNC_HIDDEN_LAYER,
    NFUNC = GPUWS_UFUNC_COUNT
};

/* Random inputs per function: uniform in [lo, hi) per operand. */
static const struct {
    double lo[4], hi[4];
} ranges[NFUNC] = {
    { { -10, -3, 0.2 }, { 10, 3, 4 } },
    { { 0, -10, 0, -10 }, { 100, 10, 100, 10 } },
    { { 0, 1e3, -100 }, { 1e6, 1e5, 100 } },
    { { -1e3, -1e3 }, { 1e3, 1e3 } },
    { { 0, 0.1 }, { 256, 0.9 } },
};

static double reference(int f, const double *a) { return gpuws_ufunc_ref_eval((gpuws_ufunc_id)f, a); }

static bool within(int f, const double *a, double ref, float got, double *err, double *allowed)
{
    return gpuws_ufunc_ref_within((gpuws_ufunc_id)f, a, ref, got, err, allowed);
}

static gpuws_status call(int f, gpuws_stream *s, size_t n, const gpuws_operand *op, gpuws_buffer *out)
{
    switch (f) {
    case GAUSS: return gpuws_gaussian_pdf(s, n, op[0], op[1], op[2], out);
    case POLAR: return gpuws_polar_distance(s, n, op[0], op[1], op[2], op[3], out);
    case PULSES: return gpuws_make_pulses(s, n, op[0], op[1], op[2], out);
    case HYPOT: return gpuws_hypot(s, n, op[0], op[1], out);
    default: return gpuws_hidden_layer(s, n, op[0].array, op[1].array, out);
    }
}

/* ---- the references against SciPy / NumPy ---------------------------------------------------------------- */

typedef struct {
    int f;
    double in[4], want;
} golden_row;

static size_t read_golden(golden_row **rows)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/ufunc_golden.txt", dir ? dir : "tests/data");
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s (GPUWS_TEST_DATA is set by ctest)", path);
    size_t n = 0, cap = 256;
    *rows = malloc(cap * sizeof **rows);
    cr_assert(*rows);
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        char *p = line, *end;
        const size_t len = strcspn(p, " ");
        golden_row r = { -1, { 0 }, 0 };
        for (int f = 0; f < NFUNC; f++)
            if (strlen(gpuws_ufunc_names[f]) == len && strncmp(p, gpuws_ufunc_names[f], len) == 0) r.f = f;
        cr_assert(r.f >= 0, "unknown function in %s: %s", path, line);
        p += len;
        for (int k = 0; k < gpuws_ufunc_arity[r.f]; k++, p = end) r.in[k] = strtod(p, &end);
        r.want = strtod(p, &end);
        cr_assert(end != p, "bad line: %s", line);
        if (n == cap) cr_assert((*rows = realloc(*rows, (cap *= 2) * sizeof **rows)));
        (*rows)[n++] = r;
    }
    fclose(fp);
    cr_assert(n >= 5 * NFUNC, "only %zu rows in %s", n, path);
    return n;
}

Test(ufunc, references_match_scipy_and_numpy)
{
    golden_row *rows;
    const size_t n = read_golden(&rows);
    for (size_t i = 0; i < n; i++) {
        const golden_row *r = &rows[i];
        const double got = reference(r->f, r->in);
        /* two float64 evaluations of one formula by different libraries: a few 1e-16 relative, more where the
         * formula itself amplifies (exp of a large argument; the points' coordinates before the subtraction) */
        double tol = 1e-13 * fabs(r->want) + 1e-300;
        if (r->f == POLAR) tol += 1e-14 * (fabs(r->in[0]) + fabs(r->in[2]));
        if (r->f == PULSES) tol += 1e-14 * fabs(r->in[2]);
        const bool same_special = (isnan(got) && isnan(r->want)) || (isinf(got) && got == r->want);
        cr_assert(same_special || fabs(got - r->want) <= tol, "%s(%a, %a, ...): reference %.17g, golden %.17g",
                  gpuws_ufunc_names[r->f], r->in[0], r->in[1], got, r->want);
    }
    free(rows);
}

/* The golden inputs are float32 values: every backend must land within the stated bound of NumPy's value. */
BACKEND_TEST(ufunc, every_backend_matches_golden_values_within_bounds)
{
    gpuws_context *ctx = test_open(*kind);
    golden_row *rows;
    const size_t n = read_golden(&rows);
    for (size_t i = 0; i < n; i++) {
        const golden_row *r = &rows[i];
        gpuws_operand op[4];
        gpuws_buffer *bufs[4] = { NULL };
        for (int k = 0; k < gpuws_ufunc_arity[r->f]; k++) {
            const float v = (float)r->in[k];
            bufs[k] = test_buffer_from(ctx, &v, sizeof v);
            op[k] = gpuws_operand_array(bufs[k]);
        }
        gpuws_buffer *out = test_buffer(ctx, 4);
        TEST_OK(call(r->f, NULL, 1, op, out));
        float got;
        TEST_OK(gpuws_buffer_read(out, 0, &got, 4));
        double err, allowed;
        cr_assert(within(r->f, r->in, r->want, got, &err, &allowed),
                  "%s %s(%a, %a, ...) = %.9g, NumPy %.17g (error %.3g > %.3g)", test_backend_name(*kind),
                  gpuws_ufunc_names[r->f], r->in[0], r->in[1], (double)got, r->want, err, allowed);
        for (int k = 0; k < 4; k++) gpuws_buffer_destroy(bufs[k]);
        gpuws_buffer_destroy(out);
    }
    free(rows);
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference ------------------------------------------------------------------ */

typedef struct {
    gpuws_backend_kind backend;
    int f;
    size_t n;
    uint32_t arrays; /* bit k: operand k is an array, else a scalar */
    bool fresh_seed;
} uf_case;

static const size_t sizes[] = { 1, 3, 4, 5, 7, 8, 9, 1000, (1u << 18) + 3 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

ParameterizedTestParameters(ufunc, matches_reference_within_stated_bounds)
{
    static uf_case cases[NFUNC * (NSIZES + 3)];
    size_t k = 0;
    for (int f = 0; f < NFUNC; f++) {
        const uint32_t all = (1u << gpuws_ufunc_arity[f]) - 1;
        for (size_t s = 0; s < NSIZES; s++) cases[k++] = (uf_case){ 0, f, sizes[s], all, false };
        if (f != HIDDEN) {                                           /* the hidden layer takes arrays only */
            cases[k++] = (uf_case){ 0, f, 4099, 1u, false };         /* the workshop's calls */
            cases[k++] = (uf_case){ 0, f, 4099, all & 0xAu, false }; /* first operand scalar */
        }
        cases[k++] = (uf_case){ 0, f, 300001, all, true };
    }
    return TEST_BACKEND_PARAMS(cases, k);
}

ParameterizedTest(uf_case *c, ufunc, matches_reference_within_stated_bounds)
{
    gpuws_context *ctx = test_open(c->backend);
    const char *name = gpuws_ufunc_names[c->f];
    const int nin = gpuws_ufunc_arity[c->f];
    uint64_t seed = test_seed(c->fresh_seed);
    float *host[4] = { NULL }, scalar[4];
    gpuws_buffer *bufs[4] = { NULL };
    gpuws_operand op[4];
    for (int k = 0; k < nin; k++) {
        if (c->arrays >> k & 1) {
            host[k] = malloc(c->n * sizeof(float));
            cr_assert(host[k]);
            test_fill_uniform_f32(host[k], c->n, seed + (uint64_t)k, ranges[c->f].lo[k], ranges[c->f].hi[k]);
            if (c->f == HIDDEN && k == 0)
                for (size_t i = 0; i < c->n; i++) host[k][i] = floorf(host[k][i] * (255.0f / 256.0f)); /* greyscales */
            if (c->f == HYPOT) /* some huge and tiny magnitudes: the naive formula would overflow or underflow */
                for (size_t i = k; i < c->n; i += 7) host[k][i] *= i % 2 ? 1e35f : 1e-35f;
            bufs[k] = test_buffer_from(ctx, host[k], c->n * sizeof(float));
            op[k] = gpuws_operand_array(bufs[k]);
        } else {
            uint64_t s = seed + 100 + (uint64_t)k;
            scalar[k] = (float)(ranges[c->f].lo[k] + (ranges[c->f].hi[k] - ranges[c->f].lo[k]) * test_rand_uniform(&s));
            op[k] = gpuws_operand_scalar(scalar[k]);
        }
    }
    gpuws_buffer *out = test_buffer(ctx, c->n * sizeof(float));
    TEST_OK(call(c->f, NULL, c->n, op, out));
    float *got = test_download(out, c->n * sizeof(float));
    size_t bad = 0, worst_i = 0;
    double worst = 0;
    for (size_t i = 0; i < c->n; i++) {
        double a[4], err, allowed;
        for (int k = 0; k < nin; k++) a[k] = host[k] ? host[k][i] : scalar[k];
        const double ref = reference(c->f, a);
        if (!within(c->f, a, ref, got[i], &err, &allowed)) {
            if (bad++ == 0) worst_i = i;
        } else if (allowed > 0 && err / allowed > worst) {
            worst = err / allowed;
        }
    }
    cr_assert_eq(bad, 0, "%s %s n=%zu arrays=%x: %zu elements outside the bound; first at %zu: got %.9g",
                 test_backend_name(c->backend), name, c->n, c->arrays, bad, worst_i, (double)got[worst_i]);
    if (c->fresh_seed)
        cr_log_info("%s %s: the largest error is %.2f of the stated bound", test_backend_name(c->backend), name, worst);
    test_check_guard(out, c->n * sizeof(float), "out");
    free(got);
    for (int k = 0; k < 4; k++) {
        free(host[k]);
        gpuws_buffer_destroy(bufs[k]);
    }
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(ufunc, output_may_alias_an_input)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 4099 };
    static float x[N], want[N], got[N];
    test_fill_uniform_f32(x, N, 5, -4, 4);
    gpuws_buffer *dx = test_buffer_from(ctx, x, sizeof x);
    TEST_OK(
        gpuws_gaussian_pdf(NULL, N, gpuws_operand_array(dx), gpuws_operand_scalar(0.5), gpuws_operand_scalar(1.5), dx));
    gpuws_buffer *fresh = test_buffer_from(ctx, x, sizeof x), *o = test_buffer(ctx, sizeof x);
    TEST_OK(gpuws_gaussian_pdf(NULL, N, gpuws_operand_array(fresh), gpuws_operand_scalar(0.5),
                               gpuws_operand_scalar(1.5), o));
    TEST_OK(gpuws_buffer_read(dx, 0, got, sizeof got));
    TEST_OK(gpuws_buffer_read(o, 0, want, sizeof want));
    cr_assert_arr_eq(got, want, sizeof got, "in place differs from out of place");
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(fresh);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}

/* ---- hypot: the overflow-safe formula, special values, NaN rejected on request ---------------------------- */

BACKEND_TEST(ufunc, hypot_special_values)
{
    gpuws_context *ctx = test_open(*kind);
    const float x[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, NAN, 2e38f, 3e38f, 1e-30f, 3.0f };
    const float y[] = { 0.0f, 0.0f, NAN, 2.0f, 1.0f, INFINITY, 1e38f, 3e38f, 1e-30f, -4.0f };
    enum { N = sizeof x / sizeof x[0] };
    gpuws_buffer *dx = test_buffer_from(ctx, x, sizeof x), *dy = test_buffer_from(ctx, y, sizeof y),
                 *o = test_buffer(ctx, sizeof x);
    TEST_OK(gpuws_hypot(NULL, N, gpuws_operand_array(dx), gpuws_operand_array(dy), o));
    float got[N];
    TEST_OK(gpuws_buffer_read(o, 0, got, sizeof got));
    cr_assert(got[0] == 0.0f && !signbit(got[0]) && got[1] == 0.0f, "hypot(±0, 0) = %g, %g", (double)got[0],
              (double)got[1]);
    cr_assert(got[2] == INFINITY && got[3] == INFINITY && got[5] == INFINITY, "inf wins over NaN: %g %g %g",
              (double)got[2], (double)got[3], (double)got[5]);
    cr_assert(isnan(got[4]), "hypot(NaN, 1) = %g", (double)got[4]);
    /* 2.236e38 fits in float although 2e38^2 does not; 4.24e38 does not fit: inf */
    cr_assert(fabs(got[6] - 2.2360679e38) <= 12 * U * 2.2360679e38, "hypot(2e38, 1e38) = %g", (double)got[6]);
    cr_assert(got[7] == INFINITY, "hypot(3e38, 3e38) = %g", (double)got[7]);
    cr_assert(fabs(got[8] - 1.41421356e-30) <= 12 * U * 1.4142e-30, "hypot(1e-30, 1e-30) = %g (must not underflow)",
              (double)got[8]);
    cr_assert(fabs(got[9] - 5.0) <= 12 * U * 5.0, "hypot(3, -4) = %.9g", (double)got[9]);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(ufunc, hypot_checked_rejects_nan_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 100003 };
    float *x = malloc(N * 4), *y = malloc(N * 4), *got = malloc(N * 4), *want = malloc(N * 4);
    cr_assert(x && y && got && want);
    test_fill_uniform_f32(x, N, 1, -50, 50);
    test_fill_uniform_f32(y, N, 2, -50, 50);
    x[0] = INFINITY; /* infinity is valid input */
    gpuws_buffer *dx = test_buffer_from(ctx, x, N * 4), *dy = test_buffer_from(ctx, y, N * 4),
                 *o = test_buffer(ctx, N * 4);
    gpuws_buffer *plain = test_buffer(ctx, N * 4);
    /* clean input: the same bits as gpuws_hypot */
    TEST_OK(gpuws_hypot_checked(NULL, N, gpuws_operand_array(dx), gpuws_operand_array(dy), o));
    TEST_OK(gpuws_hypot(NULL, N, gpuws_operand_array(dx), gpuws_operand_array(dy), plain));
    TEST_OK(gpuws_buffer_read(o, 0, got, N * 4));
    TEST_OK(gpuws_buffer_read(plain, 0, want, N * 4));
    cr_assert_arr_eq(got, want, N * 4);
    /* NaN in y at 70001 and in x at 90000: the first one is reported, nothing is written */
    const unsigned char poison = TEST_POISON_BYTE;
    TEST_OK(gpuws_buffer_fill(o, 0, &poison, 1, N * 4 + TEST_GUARD_BYTES));
    const float nan = NAN;
    TEST_OK(gpuws_buffer_write(dy, 70001 * 4, &nan, 4));
    TEST_OK(gpuws_buffer_write(dx, 90000 * 4, &nan, 4));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws_hypot_checked(NULL, N, gpuws_operand_array(dx), gpuws_operand_array(dy), o));
    cr_assert(strstr(gpuws_last_error(), "'y' is NaN at index 70001"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws_hypot_checked(NULL, N, gpuws_operand_array(dx), gpuws_operand_scalar(1), o));
    cr_assert(strstr(gpuws_last_error(), "'x' is NaN at index 90000"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws_hypot_checked(NULL, N, gpuws_operand_scalar(NAN), gpuws_operand_array(dy), o));
    test_check_guard(o, 0, "out");
    /* the unchecked form propagates the NaN, like NumPy */
    TEST_OK(gpuws_hypot(NULL, N, gpuws_operand_array(dx), gpuws_operand_array(dy), plain));
    TEST_OK(gpuws_buffer_read(plain, 0, got, N * 4));
    cr_assert(isnan(got[70001]) && isnan(got[90000]) && !isnan(got[70000]));
    free(x);
    free(y);
    free(got);
    free(want);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_buffer_destroy(o);
    gpuws_buffer_destroy(plain);
    gpuws_context_destroy(ctx);
}

/* ---- zero_suppress: exact -------------------------------------------------------------------------------- */

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    size_t n;
    double threshold;
} zs_case;

ParameterizedTestParameters(ufunc, zero_suppress_is_exact)
{
    static const size_t zs_sizes[] = { 1, 7, 8, 9, 17, 100003 };
    static const double thresholds[] = { 15.0, 15.5, 0.1, -INFINITY, INFINITY, -32768.5 };
    enum { NZ = sizeof zs_sizes / sizeof zs_sizes[0], NT = sizeof thresholds / sizeof thresholds[0] };
    static zs_case cases[2 * (NZ + NT)];
    size_t k = 0;
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_I16 : GPUWS_F32;
        for (size_t s = 0; s < NZ; s++) cases[k++] = (zs_case){ 0, dt, zs_sizes[s], 15.0 };
        for (size_t t = 0; t < NT; t++) cases[k++] = (zs_case){ 0, dt, 1031, thresholds[t] };
    }
    return TEST_BACKEND_PARAMS(cases, k);
}

ParameterizedTest(zs_case *c, ufunc, zero_suppress_is_exact)
{
    gpuws_context *ctx = test_open(c->backend);
    const size_t es = gpuws_dtype_size(c->dtype), bytes = c->n * es;
    void *w = malloc(bytes), *want = malloc(bytes);
    cr_assert(w && want);
    uint64_t seed = test_seed(false);
    for (size_t i = 0; i < c->n; i++) {
        const double v = -40 + 80 * test_rand_uniform(&seed);
        if (c->dtype == GPUWS_F32) {
            float f = (float)v;
            if (i % 5 == 0) f = (float)c->threshold; /* on the threshold, rounded both ways */
            if (i % 5 == 1) f = nextafterf((float)c->threshold, -INFINITY);
            if (i % 97 == 3) f = NAN;
            ((float *)w)[i] = f;
            ((float *)want)[i] = gpuws_ufunc_ref_zero_suppress_f32(f, c->threshold);
        } else {
            int16_t h = (int16_t)floor(v);
            if (i % 5 == 0) h = (int16_t)fmax(-32768, fmin(32767, floor(c->threshold)));
            if (i % 11 == 1) h = i % 2 ? INT16_MIN : INT16_MAX;
            ((int16_t *)w)[i] = h;
            ((int16_t *)want)[i] = gpuws_ufunc_ref_zero_suppress_i16(h, c->threshold);
        }
    }
    gpuws_buffer *dw = test_buffer_from(ctx, w, bytes), *o = test_buffer(ctx, bytes);
    TEST_OK(gpuws_zero_suppress(NULL, c->dtype, c->n, dw, c->threshold, o));
    unsigned char *got = test_download(o, bytes);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(got + i * es, (unsigned char *)want + i * es, es) != 0 && bad++ == 0) first = i;
    cr_assert_eq(bad, 0, "%s %s threshold %g: %zu of %zu differ (first at %zu)", test_backend_name(c->backend),
                 gpuws_dtype_name(c->dtype), c->threshold, bad, c->n, first);
    test_check_guard(o, bytes, "out");
    free(got);
    free(w);
    free(want);
    gpuws_buffer_destroy(dw);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}

Test(ufunc, zero_suppress_reference_compares_exactly)
{
    /* 0.1f is a little above 0.1, so it is not suppressed; 15 is below 15.5 in int16 */
    cr_assert_eq(gpuws_ufunc_ref_zero_suppress_f32(0.1f, 0.1), 0.1f);
    cr_assert_eq(gpuws_ufunc_ref_zero_suppress_f32(nextafterf(0.1f, 0), 0.1), 0.0f);
    cr_assert_eq(gpuws_ufunc_ref_zero_suppress_i16(15, 15.5), 0);
    cr_assert_eq(gpuws_ufunc_ref_zero_suppress_i16(16, 15.5), 16);
    cr_assert(isnan(gpuws_ufunc_ref_zero_suppress_f32(NAN, 1.0)));
}

/* ---- the hidden layer, host to host ----------------------------------------------------------------------- */

BACKEND_TEST(ufunc, hidden_layer_host_pipeline_matches_the_device_kernel)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t n = 100003;
    float *g, *w, *out;
    /* page-locked host arrays, as the fast path wants them */
    TEST_OK(gpuws_host_alloc(ctx, n * 4, (void **)&g));
    TEST_OK(gpuws_host_alloc(ctx, n * 4, (void **)&w));
    TEST_OK(gpuws_host_alloc(ctx, n * 4, (void **)&out));
    uint64_t seed = test_seed(false);
    for (size_t i = 0; i < n; i++) {
        g[i] = floorf((float)(255 * test_rand_uniform(&seed)));
        w[i] =
            (float)(0.5 +
                    0.1 * (test_rand_uniform(&seed) + test_rand_uniform(&seed) + test_rand_uniform(&seed) - 1.5) * 2);
    }
    gpuws_buffer *dg = test_buffer_from(ctx, g, n * 4), *dw = test_buffer_from(ctx, w, n * 4),
                 *dout = test_buffer(ctx, n * 4);
    TEST_OK(gpuws_hidden_layer(NULL, n, dg, dw, dout));
    float *want = test_download(dout, n * 4);
    static const gpuws_pipeline_options opts[] = { { .chunk = 0, .streams = 0 },
                                                   { .chunk = 1000, .streams = 2 },
                                                   { .chunk = 4096, .streams = 1 },
                                                   { .chunk = 3000, .streams = 8 } };
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        memset(out, 0xAB, n * 4);
        TEST_OK(gpuws_hidden_layer_host(ctx, n, g, w, out, &opts[o]));
        cr_assert_arr_eq(out, want, n * 4, "chunk %zu, %d streams: differs from the device kernel", opts[o].chunk,
                         opts[o].streams);
    }
    for (size_t i = 0; i < n; i++) {
        const double a[2] = { g[i], w[i] }, ref = reference(HIDDEN, a);
        double err, allowed;
        cr_assert(within(HIDDEN, a, ref, out[i], &err, &allowed), "tanh(%g / 255 * %g) = %.9g, reference %.17g",
                  (double)g[i], (double)w[i], (double)out[i], ref);
    }
    /* ordinary (pageable) memory gives the same result; tiny inputs; n = 0 */
    float *pg = malloc(7 * 4), *pw = malloc(7 * 4), *po = malloc(7 * 4);
    cr_assert(pg && pw && po);
    memcpy(pg, g, 28);
    memcpy(pw, w, 28);
    TEST_OK(gpuws_hidden_layer_host(ctx, 7, pg, pw, po, NULL));
    cr_assert_arr_eq(po, want, 28);
    TEST_OK(gpuws_hidden_layer_host(ctx, 0, NULL, NULL, NULL, NULL));
    gpuws_pipeline_options bad = { .streams = 9 };
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_hidden_layer_host(ctx, 7, pg, pw, po, &bad));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_hidden_layer_host(ctx, 7, pg, NULL, po, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_hidden_layer_host(NULL, 7, pg, pw, po, NULL));
    free(pg);
    free(pw);
    free(po);
    free(want);
    gpuws_host_free(ctx, g);
    gpuws_host_free(ctx, w);
    gpuws_host_free(ctx, out);
    gpuws_buffer_destroy(dg);
    gpuws_buffer_destroy(dw);
    gpuws_buffer_destroy(dout);
    gpuws_context_destroy(ctx);
}

/* ---- bad input ---------------------------------------------------------------------------------------------- */

BACKEND_TEST(ufunc, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *a = test_buffer(ctx, 400), *o = test_buffer(ctx, 400);
    const gpuws_operand A = gpuws_operand_array(a), S = gpuws_operand_scalar(1.0);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_gaussian_pdf(NULL, 10, A, S, S, NULL));
    /* 400 bytes + guard hold 116 floats, not 117; in an operand or in out */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_gaussian_pdf(NULL, 117, A, S, S, o));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_polar_distance(NULL, 117, S, S, S, A, o));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_make_pulses(NULL, SIZE_MAX / 2, A, S, S, o));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_hidden_layer(NULL, 117, a, a, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_hidden_layer(NULL, 10, a, NULL, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_zero_suppress(NULL, GPUWS_I32, 10, a, 1.0, o));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_zero_suppress(NULL, GPUWS_F32, 10, a, NAN, o));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_zero_suppress(NULL, GPUWS_I16, 233, a, 1.0, o));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 400);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_hypot(NULL, 10, A, gpuws_operand_array(foreign), o));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_hypot_checked(NULL, 10, gpuws_operand_array(foreign), S, o));
    test_check_guard(o, 0, "out");
    TEST_OK(gpuws_hypot(NULL, 0, A, A, o)); /* n = 0: nothing to do */
    test_check_guard(o, 0, "out");
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(o);
    gpuws_context_destroy(ctx);
}
