/* convolve1d: numpy.convolve on every backend and kernel path.
 *
 * Truth: golden files made by NumPy (tests/data/make_convolve_golden.py) for every mode, both orders of the inputs
 * (NumPy swaps them when v is the longer) and even/odd lengths; integer data, so every result is exact and every
 * backend must match bit for bit. Then every backend against the reference on random data within the bound the
 * API states: |got - ref| <= 2 (K + 1) u sum |a * v| over the K = min(n, m) products of an output (Higham's bound
 * for any summation order, doubled for the reference's own rounding), u = 2^-24 (f32) or 2^-53 (f64).
 * Targets: see test_convolve.h. */
#include "test_convolve.h"
#include "convolve1d/convolve1d_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs on ctx, checks the guard bytes, returns the output as doubles. */
static double *run(gpuws_context *ctx, gpuws_dtype dt, const double *a, size_t n, const double *v, size_t m,
                   gpuws_convolve_mode mode, size_t *out_n)
{
    TEST_OK(gpuws_convolve1d_output_length(n, m, mode, out_n));
    const size_t es = gpuws_dtype_size(dt);
    void *ha = to_dtype(a, n, dt), *hv = to_dtype(v, m, dt);
    gpuws_buffer *ba = test_buffer_from(ctx, ha, n * es), *bv = test_buffer_from(ctx, hv, m * es),
                 *bo = test_buffer(ctx, *out_n * es);
    TEST_OK(gpuws_convolve1d(NULL, dt, ba, n, bv, m, mode, bo));
    void *got = test_download(bo, *out_n * es);
    test_check_guard(bo, *out_n * es, "out");
    double *out = to_double(got, *out_n, dt);
    free(got);
    free(ha);
    free(hv);
    gpuws_buffer_destroy(ba);
    gpuws_buffer_destroy(bv);
    gpuws_buffer_destroy(bo);
    return out;
}

/* The reference in dtype on the dtype-rounded inputs (abs_values: on |a| and |v| in f64, i.e. sum |a * v|). */
static double *reference(gpuws_dtype dt, const double *a, size_t n, const double *v, size_t m, gpuws_convolve_mode mode,
                         bool abs_values)
{
    gpuws__conv1d_geometry g;
    TEST_OK(gpuws__conv1d_geometry_init(n, m, mode, &g));
    void *ha = to_dtype(a, n, dt), *hv = to_dtype(v, m, dt);
    void *o = malloc(g.out_n * gpuws_dtype_size(dt) + 8);
    cr_assert_not_null(o);
    double *out;
    if (abs_values) {
        double *xa = to_double(ha, n, dt), *xv = to_double(hv, m, dt);
        for (size_t i = 0; i < n; i++) xa[i] = fabs(xa[i]);
        for (size_t i = 0; i < m; i++) xv[i] = fabs(xv[i]);
        out = malloc(g.out_n * sizeof *out + 8);
        cr_assert_not_null(out);
        gpuws_convolve1d_ref_f64(&g, xa, xv, out, 0, g.out_n);
        free(xa);
        free(xv);
    } else {
        if (dt == GPUWS_F32) gpuws_convolve1d_ref_f32(&g, ha, hv, o, 0, g.out_n);
        else gpuws_convolve1d_ref_f64(&g, ha, hv, o, 0, g.out_n);
        out = to_double(o, g.out_n, dt);
    }
    free(o);
    free(ha);
    free(hv);
    return out;
}

/* ---- golden files ---------------------------------------------------------------------------------------------- */

typedef struct {
    size_t n, m, out_n;
    gpuws_convolve_mode mode;
    double *a, *v, *want; /* a and v shared by the results of one case */
} golden;

static double *read_values(FILE *f, size_t n)
{
    double *x = malloc(n * sizeof *x + 8);
    cr_assert_not_null(x);
    for (size_t i = 0; i < n; i++) cr_assert_eq(fscanf(f, "%lf", &x[i]), 1, "golden file: truncated");
    return x;
}

static golden *load_golden(size_t *count)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/convolve1d_golden.txt", dir ? dir : "tests/data");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (GPUWS_TEST_DATA names the folder)", path);
    int version;
    size_t ncases, k = 0;
    cr_assert_eq(fscanf(f, "convolve1d-golden %d %zu", &version, &ncases), 2, "%s: bad header", path);
    golden *all = calloc(ncases * 3, sizeof *all);
    cr_assert_not_null(all);
    for (size_t c = 0; c < ncases; c++) {
        size_t n, m, nres;
        cr_assert_eq(fscanf(f, " case %zu %zu", &n, &m), 2, "%s: bad case %zu", path, c);
        double *a = read_values(f, n), *v = read_values(f, m);
        cr_assert(fscanf(f, "%zu", &nres) == 1 && nres == 3);
        for (size_t r = 0; r < nres; r++) {
            golden *g = &all[k++];
            char mode[16];
            cr_assert_eq(fscanf(f, "%15s %zu", mode, &g->out_n), 2);
            g->mode = !strcmp(mode, "full")   ? GPUWS_CONVOLVE_FULL
                      : !strcmp(mode, "same") ? GPUWS_CONVOLVE_SAME
                                              : GPUWS_CONVOLVE_VALID;
            g->n = n, g->m = m, g->a = a, g->v = v;
            g->want = read_values(f, g->out_n);
        }
    }
    fclose(f);
    *count = k;
    return all;
}

static void free_golden(golden *all, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(all[i].want);
        if (i % 3 == 2) {
            free(all[i].a);
            free(all[i].v);
        }
    }
    free(all);
}

Test(convolve1d, reference_matches_numpy_golden_files)
{
    size_t n;
    golden *all = load_golden(&n);
    cr_assert_gt(n, 20);
    for (size_t i = 0; i < n; i++) {
        const golden *g = &all[i];
        size_t len;
        TEST_OK(gpuws_convolve1d_output_length(g->n, g->m, g->mode, &len));
        cr_assert_eq(len, g->out_n, "n=%zu m=%zu %s: length %zu, NumPy %zu", g->n, g->m, mode_name(g->mode), len,
                     g->out_n);
        for (int d = 0; d < 2; d++) {
            double *got = reference(d ? GPUWS_F64 : GPUWS_F32, g->a, g->n, g->v, g->m, g->mode, false);
            for (size_t t = 0; t < len; t++)
                cr_assert_eq(got[t], g->want[t], "n=%zu m=%zu %s %s: out[%zu] = %g, NumPy %g", g->n, g->m,
                             mode_name(g->mode), d ? "f64" : "f32", t, got[t], g->want[t]);
            free(got);
        }
    }
    free_golden(all, n);
}

ParameterizedTestParameters(convolve1d, matches_numpy_golden_files)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve1d, matches_numpy_golden_files)
{
    gpuws_context *ctx = open_target(t);
    size_t n;
    golden *all = load_golden(&n);
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        for (size_t i = 0; i < n; i++) {
            const golden *g = &all[i];
            size_t len;
            double *got = run(ctx, dt, g->a, g->n, g->v, g->m, g->mode, &len);
            for (size_t e = 0; e < len; e++)
                cr_assert_eq(got[e], g->want[e], "%s n=%zu m=%zu %s %s: out[%zu] = %g, NumPy %g", target_name(t), g->n,
                             g->m, mode_name(g->mode), gpuws_dtype_name(dt), e, got[e], g->want[e]);
            free(got);
        }
    }
    free_golden(all, n);
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference on random data ------------------------------------------------------- */

typedef struct {
    target t;
    gpuws_dtype dtype;
    size_t n, m;
    bool fresh_seed;
} random_case;

/* Lengths: single samples; either input the longer; the workshop's 15 taps (a full chunk of 8 and a partial one of
 * 7) over a signal that is no multiple of any tile; the longest filters of the stream kernel (120 taps f64, 248
 * f32: its halo full), longer ones (the tiled kernel); a filter longer than one block of 2048 staged taps. Full,
 * same and valid with 3 and 15 taps put the signal at every offset within a 16-byte vector. */
static const size_t lengths[][2] = {
    { 1, 1 },      { 7, 3 },      { 3, 7 },      { 1000, 15 },   { 15, 1000 },          { 4099, 1 },
    { 2000, 120 }, { 2000, 248 }, { 5000, 300 }, { 2500, 2100 }, { (1u << 20) + 3, 15 }
};
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

ParameterizedTestParameters(convolve1d, agrees_with_reference_in_every_mode)
{
    static random_case cases[NTARGETS * 2 * (NLENGTHS + 1)];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++) {
            const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
            for (size_t i = 0; i < NLENGTHS; i++)
                cases[k++] = (random_case){ targets[t], dt, lengths[i][0], lengths[i][1], false };
            cases[k++] = (random_case){ targets[t], dt, 3001, 77, true };
        }
    return cr_make_param_array(random_case, cases, k);
}

/* Random inputs in [-1, 1) against the reference in every mode, within the bound stated at the top. */
static void check_every_mode(gpuws_context *ctx, const char *label, gpuws_dtype dt, size_t n, size_t m, uint64_t seed)
{
    double *a = malloc(n * sizeof *a), *v = malloc(m * sizeof *v);
    cr_assert(a && v);
    test_fill_uniform_f64(a, n, seed, -1, 1);
    test_fill_uniform_f64(v, m, seed + 1, -1, 1);
    const double u = dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53, k = (double)(n < m ? n : m);
    for (int md = 0; md < 3; md++) {
        const gpuws_convolve_mode mode = (gpuws_convolve_mode)md;
        size_t len;
        double *got = run(ctx, dt, a, n, v, m, mode, &len);
        double *want = reference(dt, a, n, v, m, mode, false);
        double *mag = reference(dt, a, n, v, m, mode, true);
        for (size_t i = 0; i < len; i++) {
            const double bound = 2 * (k + 1) * u * mag[i];
            if (!(fabs(got[i] - want[i]) <= bound))
                cr_assert_fail("%s %s n=%zu m=%zu %s: out[%zu] = %.17g, reference %.17g, error %.3g > bound %.3g",
                               label, gpuws_dtype_name(dt), n, m, mode_name(mode), i, got[i], want[i],
                               fabs(got[i] - want[i]), bound);
        }
        free(got);
        free(want);
        free(mag);
    }
    free(a);
    free(v);
}

ParameterizedTest(random_case *c, convolve1d, agrees_with_reference_in_every_mode)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    check_every_mode(ctx, target_name(&c->t), c->dtype, c->n, c->m, test_seed(c->fresh_seed));
    gpuws_context_destroy(ctx);
}

/* The stream kernel's grid (the knob convolve1d_blocks_per_cu, docs/tuning.md) changes how its blocks walk the
 * tiles: one block per compute unit makes each block walk many tiles through both of its buffers (on a GPU the
 * default grid gives most blocks one or two tiles of these sizes), and must still give the reference's results. */
typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
} knob_case;

ParameterizedTestParameters(convolve1d, gpu_kernel_knobs_keep_the_results)
{
    static knob_case cases[2 * 2];
    size_t k = 0;
    for (int b = 0; b < 2; b++)
        for (int d = 0; d < 2; d++)
            cases[k++] = (knob_case){ b ? GPUWS_BACKEND_CUDA : GPUWS_BACKEND_OPENCL, d ? GPUWS_F64 : GPUWS_F32 };
    return cr_make_param_array(knob_case, cases, k);
}

ParameterizedTest(knob_case *c, convolve1d, gpu_kernel_knobs_keep_the_results)
{
    const target t = { c->backend, PATH_TILED };
    gpuws_context *ctx = open_target(&t);
    test_tune(ctx, "convolve1d_blocks_per_cu", "1");
    test_require_dtype(ctx, c->dtype);
    check_every_mode(ctx, "1 block per CU", c->dtype, 3u << 18, 15, 41);
    gpuws_context_destroy(ctx);
}

/* ---- known answers ---------------------------------------------------------------------------------------------- */

ParameterizedTestParameters(convolve1d, workshop_deltas_give_the_gaussian_diagonal_exactly)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

/* np.convolve(deltas.ravel(), gauss.diagonal()) at 1/8 scale: deltas 16 apart along each row, a filter of 15 taps,
 * so each output has at most one non-zero product: out[d + j] = diag[j] for every delta d, 0 elsewhere, exactly. */
ParameterizedTest(const target *t, convolve1d, workshop_deltas_give_the_gaussian_diagonal_exactly)
{
    gpuws_context *ctx = open_target(t);
    enum { SIDE = 256, N = SIDE * SIDE, K = 15 };
    double *a = calloc(N, sizeof *a), diag[K];
    cr_assert_not_null(a);
    for (size_t r = 8; r < SIDE; r += 16)
        for (size_t c = 8; c < SIDE; c += 16) a[r * SIDE + c] = 1.0;
    for (int j = 0; j < K; j++) {
        const double x = -2.0 + 4.0 * j / (K - 1);
        diag[j] = exp(-(x * x + x * x) / 2);
    }
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        size_t len;
        double *got = run(ctx, dt, a, N, diag, K, GPUWS_CONVOLVE_FULL, &len);
        cr_assert_eq(len, N + K - 1);
        for (size_t p = 0; p < len; p++) {
            double want = 0;
            for (size_t j = 0; j < K && j <= p; j++)
                if (p - j < N && a[p - j] != 0) want = dt == GPUWS_F32 ? (double)(float)diag[j] : diag[j];
            cr_assert_eq(got[p], want, "%s %s: out[%zu] = %.17g, want %.17g", target_name(t), gpuws_dtype_name(dt), p,
                         got[p], want);
        }
        free(got);
    }
    free(a);
    gpuws_context_destroy(ctx);
}

ParameterizedTestParameters(convolve1d, nan_and_inf_reach_exactly_the_outputs_numpy_gives)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

/* A filter of 15 taps (the tiled kernel's last chunk has 7): padded taps must not widen a footprint. */
ParameterizedTest(const target *t, convolve1d, nan_and_inf_reach_exactly_the_outputs_numpy_gives)
{
    gpuws_context *ctx = open_target(t);
    enum { N = 3000, K = 15 };
    double *a = malloc(N * sizeof *a), v[K];
    cr_assert_not_null(a);
    test_fill_uniform_f64(a, N, 11, -1, 1);
    test_fill_uniform_f64(v, K, 12, -1, 1);
    a[100] = NAN, a[1500] = INFINITY, a[2990] = -INFINITY;
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        size_t len, nonfinite = 0;
        double *got = run(ctx, dt, a, N, v, K, GPUWS_CONVOLVE_FULL, &len);
        double *want = reference(dt, a, N, v, K, GPUWS_CONVOLVE_FULL, false);
        for (size_t i = 0; i < len; i++) {
            nonfinite += !isfinite(want[i]);
            cr_assert(isnan(want[i])   ? isnan(got[i])
                      : isinf(want[i]) ? got[i] == want[i]
                                       : isfinite(got[i]),
                      "%s %s: out[%zu] = %g, reference %g", target_name(t), gpuws_dtype_name(dt), i, got[i], want[i]);
        }
        cr_assert_eq(nonfinite, 3 * K, "three disjoint footprints of 15 outputs, got %zu non-finite", nonfinite);
        free(got);
        free(want);
    }
    free(a);
    gpuws_context_destroy(ctx);
}

/* ---- lengths and bad input -------------------------------------------------------------------------------------- */

Test(convolve1d, output_lengths_are_numpys)
{
    size_t len;
    TEST_OK(gpuws_convolve1d_output_length(2048 * 2048, 15, GPUWS_CONVOLVE_FULL, &len));
    cr_assert_eq(len, 2048 * 2048 + 14);
    TEST_OK(gpuws_convolve1d_output_length(5, 8, GPUWS_CONVOLVE_SAME, &len));
    cr_assert_eq(len, 8);
    TEST_OK(gpuws_convolve1d_output_length(5, 8, GPUWS_CONVOLVE_VALID, &len));
    cr_assert_eq(len, 4);
    TEST_OK(gpuws_convolve1d_output_length(1, 1, GPUWS_CONVOLVE_VALID, &len));
    cr_assert_eq(len, 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve1d_output_length(0, 3, GPUWS_CONVOLVE_FULL, &len));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve1d_output_length(3, 0, GPUWS_CONVOLVE_FULL, &len));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve1d_output_length(3, 3, (gpuws_convolve_mode)-1, &len));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve1d_output_length(3, 3, GPUWS_CONVOLVE_FULL, NULL));
}

BACKEND_TEST(convolve1d, bad_input_is_refused_and_leaves_out_untouched)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 50, M = 7, L = N + M - 1 };
    float a[N], v[M];
    test_fill_uniform_f32(a, N, 1, -1, 1);
    test_fill_uniform_f32(v, M, 2, -1, 1);
    gpuws_buffer *ba, *bv, *small, *bo = test_buffer(ctx, L * sizeof(float));
    TEST_OK(gpuws_buffer_create(ctx, sizeof a, &ba));
    TEST_OK(gpuws_buffer_create(ctx, sizeof v, &bv));
    TEST_OK(gpuws_buffer_create(ctx, L * sizeof(float) - 4, &small));
    TEST_OK(gpuws_buffer_write(ba, 0, a, sizeof a));
    TEST_OK(gpuws_buffer_write(bv, 0, v, sizeof v));
    const gpuws_status I = GPUWS_ERR_INVALID_ARGUMENT;
    const gpuws_convolve_mode F = GPUWS_CONVOLVE_FULL;
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, NULL, N, bv, M, F, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, NULL, M, F, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, F, NULL));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, 0, bv, M, F, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, 0, F, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_U8, ba, N, bv, M, F, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, (gpuws_convolve_mode)3, bo));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, F, ba));
    TEST_FAILS(I, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, F, bv));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, F, small));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve1d(NULL, GPUWS_F32, ba, N + 1, bv, M, F, bo));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M + 1, F, bo));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve1d(NULL, GPUWS_F64, ba, N, bv, M, F, bo));
    TEST_FAILS(GPUWS_ERR_OVERFLOW,
               gpuws_convolve1d(NULL, GPUWS_F64, ba, (size_t)1 << 61, bv, M, F, bo)); /* 2^64 bytes */
    TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_convolve1d(NULL, GPUWS_F64, ba, (size_t)1 << 62, bv, M, F, bo));
    unsigned char *after = test_download(bo, L * sizeof(float));
    for (size_t i = 0; i < L * sizeof(float); i++)
        cr_assert_eq(after[i], TEST_POISON_BYTE, "out byte %zu was written by a refused call", i);
    free(after);
    TEST_OK(gpuws_convolve1d(NULL, GPUWS_F32, ba, N, bv, M, F, bo));
    gpuws_buffer_destroy(ba);
    gpuws_buffer_destroy(bv);
    gpuws_buffer_destroy(bo);
    gpuws_buffer_destroy(small);
    gpuws_context_destroy(ctx);
}

/* ---- from host memory ---------------------------------------------------------------------------------------- */

/* gpuws_convolve1d_host on every target gives gpuws_convolve1d's bytes for any segmenting: budgets of segments of
 * one and two 4096-output blocks, in-core, and three devices (contexts) sharing segments, in every mode, f32 and
 * f64, with the workshop's 15 taps, the stream kernel's longest f32 filter (248), a tiled one (300) and one past a
 * block of 2048 staged taps, the filter given first or second (NumPy's swap), on a signal that is no multiple of a
 * segment. */
ParameterizedTestParameters(convolve1d, host_bit_identical_to_device_for_any_segmenting)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve1d, host_bit_identical_to_device_for_any_segmenting)
{
    static const size_t taps[] = { 15, 248, 300, 2100 };
    enum { N = 8 * 4096 + 1234 };
    gpuws_context *ctx = open_target(t), *more[2] = { open_target(t), open_target(t) };
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        const size_t es = gpuws_dtype_size(dt);
        if (d) test_require_dtype(ctx, dt);
        for (size_t k = 0; k < sizeof taps / sizeof *taps; k++) {
            const size_t ms = taps[k];
            double *x = malloc((N + ms) * sizeof *x);
            cr_assert(x);
            test_fill_uniform_f64(x, N + ms, 0x1d + k, -1, 1);
            void *sig = to_dtype(x, N, dt), *filt = to_dtype(x + N, ms, dt);
            for (int order = 0; order < 2; order++) {
                const void *a = order ? filt : sig, *v = order ? sig : filt;
                const size_t n = order ? ms : N, m = order ? N : ms;
                gpuws_buffer *ba = test_buffer_from(ctx, a, n * es), *bv = test_buffer_from(ctx, v, m * es);
                for (int md = 0; md < 3; md++) {
                    const gpuws_convolve_mode mode = (gpuws_convolve_mode)md;
                    size_t len;
                    TEST_OK(gpuws_convolve1d_output_length(n, m, mode, &len));
                    gpuws_buffer *bo = test_buffer(ctx, len * es);
                    TEST_OK(gpuws_convolve1d(NULL, dt, ba, n, bv, m, mode, bo));
                    void *want = test_download(bo, len * es), *got = malloc(len * es);
                    cr_assert(got);
                    for (int run = 0; run < 4; run++) { /* 4096, 8192 outputs a segment; in-core; 3 devices */
                        gpuws_convolve1d_host_options o = GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT;
                        const size_t per = run < 2 ? (run + 1) * 4096 : 0;
                        if (run < 2) o.max_device_bytes = (ms + 3 * (ms + 16) + 6 * per) * es;
                        if (run == 3) o.more_contexts = more, o.num_more_contexts = 2;
                        size_t seg, count;
                        TEST_OK(gpuws_convolve1d_host_segments(ctx, dt, n, m, mode, &o, &seg, &count));
                        cr_assert(run < 2    ? seg == per && count == (len + per - 1) / per
                                  : run == 2 ? count == 1
                                             : count >= 3 && count <= 9,
                                  "run %d: %zu segments of %zu outputs", run, count, seg);
                        memset(got, 0xa5, len * es);
                        TEST_OK(gpuws_convolve1d_host(ctx, dt, a, n, v, m, mode, &o, got));
                        for (size_t i = 0; i < len; i++)
                            if (memcmp((char *)got + i * es, (char *)want + i * es, es))
                                cr_assert_fail("%s %s n=%zu m=%zu %s, run %d, %zu segments of %zu: out[%zu] differs",
                                               target_name(t), gpuws_dtype_name(dt), n, m, mode_name(mode), run, count,
                                               seg, i);
                    }
                    free(want), free(got);
                    gpuws_buffer_destroy(bo);
                }
                gpuws_buffer_destroy(ba);
                gpuws_buffer_destroy(bv);
            }
            free(sig), free(filt), free(x);
        }
    }
    gpuws_context_destroy(more[1]);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* A budget one byte short of the filter and one segment is refused with the bytes it needs, on every backend, and
 * nothing is written; so are NULL arrays and an out that overlaps an input. */
BACKEND_TEST(convolve1d, host_refuses_what_it_cannot_hold)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 20000, M = 31 }; /* more than the budget holds in-core */
    float *a = calloc(N + M, sizeof *a), *out = malloc((N + M) * sizeof *out);
    cr_assert(a && out);
    gpuws_convolve1d_host_options o = GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT;
    o.max_device_bytes = (M + 3 * (M + 16) + 6 * 4096) * 4;
    TEST_OK(gpuws_convolve1d_host(ctx, GPUWS_F32, a, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, out));
    o.max_device_bytes--;
    out[0] = 12345.0f;
    cr_assert_eq(gpuws_convolve1d_host(ctx, GPUWS_F32, a, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, out),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(gpuws_last_error(), "the 31-tap filter and 3 slots of one segment of 4096 outputs with its "
                                         "samples need 98992 bytes"),
              "%s", gpuws_last_error());
    o.max_device_bytes = 0;
    cr_assert_eq(gpuws_convolve1d_host(ctx, GPUWS_F32, NULL, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, out),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(gpuws_convolve1d_host(ctx, GPUWS_F32, a, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, NULL),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert_eq(gpuws_convolve1d_host(ctx, GPUWS_F32, a, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, a + 10),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(gpuws_last_error(), "out overlaps a"), "%s", gpuws_last_error());
    cr_assert_eq(gpuws_convolve1d_host(ctx, GPUWS_I32, a, N, a + N, M, GPUWS_CONVOLVE_FULL, &o, out),
                 GPUWS_ERR_INVALID_ARGUMENT);
    cr_assert(out[0] == 12345.0f, "a refused call wrote its output");
    free(a), free(out);
    gpuws_context_destroy(ctx);
}
