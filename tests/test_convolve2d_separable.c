/* convolve2d_separable: scipy.signal.convolve2d(image, numpy.outer(col, row)) from the kernel's two factors, on every
 * backend.
 *
 * Truth: the library's scalar 2-D reference, run through the CPU backend (gpuws_convolve2d on a CPU context) with the
 * kernel outer(col, row) formed on the host in double from the dtype-rounded factors, then rounded to dtype. That
 * reference is itself checked against SciPy's golden files by test_convolve2d. Every output must agree with it within
 *     |got - want| <= 2 (kh + kw + 2 + R) u S,   S = sum_{j < kh, k < kw} |col[j] row[k] X(m + om - j, n + on - k)|
 * with u = 2^-24 for f32 and 2^-53 for f64. Why: the separable sum groups the products differently from the 2-D sum
 * (kw products into a row sum, then kh row sums into the output), which the API bounds by (kh + kw) u S (Higham's
 * gamma_n for any summation order); one rounding more for keeping the row sums in dtype, one for rounding outer(col,
 * row) to dtype for the reference, and the reference's own error R u S: R = kh kw for f64 (a sum of kh kw products),
 * R = 1 for f32 (accumulated in double, rounded once). Doubled for second-order terms. A wrong, missing or extra tap
 * moves an output by about S / (kh kw) (15 x 15: 4e-3 S), far above the bound (15 x 15: 4e-6 S in f32, 6e-14 S in
 * f64). S is computed on the host in double, separably (every term >= 0, so its own rounding does not matter).
 * NaN where and only where the reference has NaN; an infinite reference value must be matched exactly.
 *
 * Unwritten outputs: out is filled with 12345 before every call (and its guard bytes checked after), so an output
 * the call never wrote fails the comparison; a refused call must leave every element 12345. Padding between rows
 * (row_stride > width) is NaN, so reading it poisons an output. Targets: those of test_convolve.h, the CPU backend
 * and on OpenCL and CUDA both pairs of passes, the tiled one (what GPUs run) and the direct one (what CPU devices
 * run), forced with the knob convolve_path as for gpuws_convolve2d. */
#include "test_convolve.h"
#include "convolve2d/convolve2d_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what every output holds before a call */
#define POISON 12345.0

/* ---- problems, buffers, the oracle -------------------------------------------------------------------------- */

static void describe(char *buf, size_t n, const char *who, gpuws_dtype dt, const problem *p)
{
    snprintf(buf, n, "%s %s: image %zu x %zu (row stride %zu), kh %zu, kw %zu, %s/%s fill %g", who,
             gpuws_dtype_name(dt), p->h, p->w, p->stride ? p->stride : p->w, p->kh, p->kw, mode_name(p->opt.mode),
             boundary_name(p->opt.boundary), p->opt.fill_value);
}

/* The oracle's context. Not test_open: GPUWS_TEST_BACKENDS may leave the CPU backend out of the targets, never out
 * of the oracle. */
static gpuws_context *open_cpu(void)
{
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "cpu";
    gpuws_context *ctx = NULL;
    TEST_OK(gpuws_context_create(&ctx, &o));
    return ctx;
}

/* n doubles rounded to dtype, as doubles (malloc'd) */
static double *rounded(const double *x, size_t n, gpuws_dtype dt)
{
    void *p = to_dtype(x, n, dt);
    double *r = to_double(p, n, dt);
    free(p);
    return r;
}

/* A random image of p's shape whose row padding (columns width .. stride-1) is NaN. */
static double *random_image(const problem *p, uint64_t seed)
{
    double *x = random_values(image_elems(p), seed);
    const size_t stride = p->stride ? p->stride : p->w;
    for (size_t r = 0; r + 1 < p->h; r++)
        for (size_t c = p->w; c < stride; c++) x[r * stride + c] = NAN;
    return x;
}

static gpuws_buffer *upload(gpuws_context *ctx, const double *x, size_t n, gpuws_dtype dt)
{
    void *h = to_dtype(x, n, dt);
    gpuws_buffer *b = test_buffer_from(ctx, h, n * gpuws_dtype_size(dt));
    free(h);
    return b;
}

/* An output buffer of n elements, each POISON, then guard bytes (test_buffer's poison pattern). */
static gpuws_buffer *poisoned_out(gpuws_context *ctx, gpuws_dtype dt, size_t n)
{
    double *v = malloc(n * sizeof *v + 8);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) v[i] = POISON;
    gpuws_buffer *b = upload(ctx, v, n, dt);
    free(v);
    return b;
}

/* The n outputs as doubles (malloc'd), after checking that nothing was written past them. */
static double *download(gpuws_buffer *b, size_t n, gpuws_dtype dt)
{
    const size_t bytes = n * gpuws_dtype_size(dt);
    void *raw = test_download(b, bytes);
    test_check_guard(b, bytes, "out");
    double *x = to_double(raw, n, dt);
    free(raw);
    return x;
}

/* Asserts all n elements of b are still POISON. */
static void assert_untouched(gpuws_buffer *b, size_t n, gpuws_dtype dt, const char *what)
{
    double *x = download(b, n, dt);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(x[i], POISON, "%s: out[%zu] = %g was written by a refused call", what, i, x[i]);
    free(x);
}

/* One separable call's device buffers: uploaded, then called (possibly on a stream, without waiting), then read. */
typedef struct {
    gpuws_buffer *image, *col, *row, *out;
    size_t oh, ow;
} sep_call;

static void sep_upload(gpuws_context *ctx, gpuws_dtype dt, const problem *p, const double *image, const double *col,
                       const double *row, sep_call *c)
{
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, &c->oh, &c->ow));
    c->image = upload(ctx, image, image_elems(p), dt);
    c->col = upload(ctx, col, p->kh, dt);
    c->row = upload(ctx, row, p->kw, dt);
    c->out = poisoned_out(ctx, dt, c->oh * c->ow);
}

static gpuws_status sep_enqueue(gpuws_stream *s, gpuws_dtype dt, const problem *p, const sep_call *c,
                                bool default_options)
{
    return gpuws_convolve2d_separable(s, dt, c->image, p->h, p->w, p->stride, c->col, p->kh, c->row, p->kw,
                                      default_options ? NULL : &p->opt, c->out);
}

/* The outputs as doubles (malloc'd); frees the buffers. */
static double *sep_finish(sep_call *c, gpuws_dtype dt)
{
    double *got = download(c->out, c->oh * c->ow, dt);
    gpuws_buffer_destroy(c->image);
    gpuws_buffer_destroy(c->col);
    gpuws_buffer_destroy(c->row);
    gpuws_buffer_destroy(c->out);
    return got;
}

/* gpuws_convolve2d_separable on ctx's default stream; the outputs as doubles (malloc'd). */
static double *run_separable(gpuws_context *ctx, gpuws_dtype dt, const problem *p, const double *image,
                             const double *col, const double *row)
{
    sep_call c;
    sep_upload(ctx, dt, p, image, col, row, &c);
    TEST_OK(sep_enqueue(NULL, dt, p, &c, false));
    return sep_finish(&c, dt);
}

/* outer(col, row) of the dtype-rounded factors, in double (malloc'd): the 2-D kernel the factors stand for. */
static double *outer(gpuws_dtype dt, const problem *p, const double *col, const double *row)
{
    double *c = rounded(col, p->kh, dt), *r = rounded(row, p->kw, dt), *k = malloc(p->kh * p->kw * sizeof *k + 8);
    cr_assert_not_null(k);
    for (size_t j = 0; j < p->kh; j++)
        for (size_t i = 0; i < p->kw; i++) k[j * p->kw + i] = c[j] * r[i];
    free(c);
    free(r);
    return k;
}

/* gpuws_convolve2d with the kh x kw kernel (doubles, rounded to dtype) on ctx; the outputs as doubles (malloc'd). */
static double *run_2d(gpuws_context *ctx, gpuws_dtype dt, const problem *p, const double *image, const double *kernel)
{
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, &oh, &ow));
    gpuws_buffer *bi = upload(ctx, image, image_elems(p), dt), *bk = upload(ctx, kernel, p->kh * p->kw, dt);
    gpuws_buffer *bo = poisoned_out(ctx, dt, oh * ow);
    TEST_OK(gpuws_convolve2d(NULL, dt, bi, p->h, p->w, p->stride, bk, p->kh, p->kw, &p->opt, bo));
    double *out = download(bo, oh * ow, dt);
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    gpuws_buffer_destroy(bo);
    return out;
}

/* The oracle: the 2-D convolution with outer(col, row) on the CPU backend. */
static double *oracle(gpuws_context *cpu, gpuws_dtype dt, const problem *p, const double *image, const double *col,
                      const double *row)
{
    double *k = outer(dt, p, col, row), *want = run_2d(cpu, dt, p, image, k);
    free(k);
    return want;
}

/* S per output: sum over the footprint of |col[j] row[k] X|, on the dtype-rounded inputs and |fill| (NaN where the
 * footprint holds NaN), in double, row sums first. */
static double *magnitudes(gpuws_dtype dt, const problem *p, const double *image, const double *col, const double *row)
{
    gpuws__conv2d_geometry g;
    TEST_OK(gpuws__conv2d_geometry_init(p->h, p->w, p->stride, p->kh, p->kw, &p->opt, &g));
    double *x = rounded(image, image_elems(p), dt), *c = rounded(col, p->kh, dt), *r = rounded(row, p->kw, dt);
    const double fill = fabs(dt == GPUWS_F32 ? (double)(float)g.fill : g.fill);
    const size_t rows = g.oh + g.kh - 1, cols = g.ow + g.kw - 1;
    /* row sum t is extended row t + om - (kh - 1); column t of the extended image is t + on - (kw - 1) */
    long long *ci = malloc(cols * sizeof *ci);
    double *rs = malloc(rows * g.ow * sizeof *rs + 8), *s = malloc(g.oh * g.ow * sizeof *s + 8);
    cr_assert(ci && rs && s);
    for (size_t t = 0; t < cols; t++)
        ci[t] = gpuws__conv_extend((long long)t + (long long)g.on - (long long)(g.kw - 1), (long long)g.w, g.boundary);
    for (size_t t = 0; t < rows; t++) {
        const long long ri =
            gpuws__conv_extend((long long)t + (long long)g.om - (long long)(g.kh - 1), (long long)g.h, g.boundary);
        for (size_t n = 0; n < g.ow; n++) {
            double acc = 0;
            for (size_t k = 0; k < g.kw; k++) {
                const long long cc = ci[n + g.kw - 1 - k];
                acc += fabs(r[k]) * (ri < 0 || cc < 0 ? fill : fabs(x[(size_t)ri * g.stride + (size_t)cc]));
            }
            rs[t * g.ow + n] = acc;
        }
    }
    for (size_t m = 0; m < g.oh; m++)
        for (size_t n = 0; n < g.ow; n++) {
            double acc = 0;
            for (size_t j = 0; j < g.kh; j++) acc += fabs(c[j]) * rs[(m + g.kh - 1 - j) * g.ow + n];
            s[m * g.ow + n] = acc;
        }
    free(ci), free(rs), free(x), free(c), free(r);
    return s;
}

/* Asserts got == want within the bound of the header comment, NaN exactly where want is NaN, infinities equal;
 * only the output rows m with rows[m] set if rows is not NULL. Returns how many outputs were compared. */
static size_t check(const char *what, gpuws_dtype dt, const problem *p, const double *got, const double *want,
                    const double *mag, size_t oh, size_t ow, const bool *rows)
{
    const double u = dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53, ref = dt == GPUWS_F32 ? 1.0 : (double)(p->kh * p->kw);
    const double scale = 2 * ((double)(p->kh + p->kw) + 2 + ref) * u;
    size_t compared = 0;
    for (size_t i = 0; i < oh * ow; i++) {
        if (rows && !rows[i / ow]) continue;
        compared++;
        const double bound = scale * mag[i], err = fabs(got[i] - want[i]);
        const bool ok = isnan(want[i]) ? isnan(got[i]) : isinf(want[i]) ? got[i] == want[i] : err <= bound;
        if (!ok)
            cr_assert_fail(
                "%s: output (%zu, %zu) = %.17g, 2-D convolution of outer(col, row) %.17g, error %.3g > bound "
                "%.3g (S = %.6g)",
                what, i / ow, i % ow, got[i], want[i], err, bound, mag[i]);
    }
    return compared;
}

/* The whole comparison for one problem on ctx: separable on ctx against the oracle on cpu. */
static void check_problem(gpuws_context *ctx, gpuws_context *cpu, const char *who, gpuws_dtype dt, const problem *p,
                          const double *image, const double *col, const double *row)
{
    char what[192];
    describe(what, sizeof what, who, dt, p);
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, &oh, &ow));
    double *got = run_separable(ctx, dt, p, image, col, row), *want = oracle(cpu, dt, p, image, col, row);
    double *mag = magnitudes(dt, p, image, col, row);
    size_t nonzero = 0;
    for (size_t i = 0; i < oh * ow; i++) nonzero += want[i] != 0;
    cr_assert_gt(nonzero, 0, "%s: the oracle is all zero: the case proves nothing", what);
    check(what, dt, p, got, want, mag, oh, ow, NULL);
    free(got), free(want), free(mag);
}

/* ---- 1. every mode x boundary x dtype, against the 2-D convolution of outer(col, row) ------------------------- */

typedef struct {
    size_t h, w, extra_stride, kh, kw;
} shape;

/* 1 x 1 factors; odd, even and non-square ones; padded rows (stride 64 > width 53); the workshop's 15 x 15; factors
 * longer than the image in both dimensions (VALID swaps the inputs); longer in one dimension only (VALID is SciPy's
 * ValueError); a 1 x 1 image; a row filter alone (kh = 1) and a column filter alone (kw = 1) on long rows / columns.
 * None of the sizes is a multiple of 32 or 64. */
static const shape shapes[] = {
    { 37, 53, 0, 1, 1 },   { 37, 53, 0, 3, 5 },  { 37, 53, 0, 4, 2 },  { 37, 53, 11, 7, 7 },
    { 37, 53, 0, 15, 15 }, { 5, 4, 0, 9, 11 },   { 29, 17, 3, 4, 20 }, { 1, 1, 0, 1, 1 },
    { 1, 1, 0, 3, 2 },     { 9, 300, 2, 1, 17 }, { 70, 6, 0, 17, 1 },
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct {
    target t;
    gpuws_dtype dtype;
    shape s;
    bool fresh_seed;
} shape_case;

ParameterizedTestParameters(separable, matches_2d_convolution_of_outer_product)
{
    static shape_case cases[NTARGETS * 2 * (NSHAPES + 1)];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++) {
            const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
            for (size_t s = 0; s < NSHAPES; s++) cases[k++] = (shape_case){ targets[t], dt, shapes[s], false };
            cases[k++] = (shape_case){ targets[t], dt, { 23, 41, 0, 6, 5 }, true };
        }
    return cr_make_param_array(shape_case, cases, k);
}

/* Every mode and boundary with fill value 0.75 (ignored by wrap, symm and every VALID output); where SciPy refuses
 * VALID, the separable call refuses it too and leaves out untouched. */
ParameterizedTest(shape_case *c, separable, matches_2d_convolution_of_outer_product)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    gpuws_context *cpu = open_cpu();
    const uint64_t seed = test_seed(c->fresh_seed);
    problem p = { c->s.h,  c->s.w,  c->s.extra_stride ? c->s.w + c->s.extra_stride : 0,
                  c->s.kh, c->s.kw, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    double *image = random_image(&p, seed), *col = random_values(p.kh, seed + 1), *row = random_values(p.kw, seed + 2);
    size_t refused = 0;
    for (int m = 0; m < 3; m++)
        for (int b = 0; b < 3; b++) {
            p.opt = (gpuws_convolve2d_options){ 0, (gpuws_convolve_mode)m, (gpuws_convolve_boundary)b, 0.75 };
            size_t oh, ow;
            if (gpuws_convolve2d_output_shape(p.h, p.w, p.kh, p.kw, p.opt.mode, &oh, &ow) != GPUWS_OK) {
                char what[192];
                describe(what, sizeof what, target_name(&c->t), c->dtype, &p);
                sep_call sc;
                p.opt.mode = GPUWS_CONVOLVE_FULL; /* buffers sized for the full output */
                sep_upload(ctx, c->dtype, &p, image, col, row, &sc);
                p.opt.mode = (gpuws_convolve_mode)m;
                gpuws_status st = sep_enqueue(NULL, c->dtype, &p, &sc, false);
                cr_assert_eq(st, GPUWS_ERR_INVALID_ARGUMENT, "%s: SciPy raises ValueError, gpuws said %s", what,
                             gpuws_status_name(st));
                assert_untouched(sc.out, sc.oh * sc.ow, c->dtype, what);
                free(sep_finish(&sc, c->dtype));
                refused++;
                continue;
            }
            check_problem(ctx, cpu, target_name(&c->t), c->dtype, &p, image, col, row);
        }
    const bool valid_refused = !(p.h >= p.kh && p.w >= p.kw) && !(p.kh >= p.h && p.kw >= p.w);
    cr_assert_eq(refused, valid_refused ? 3u : 0u, "%zu refused calls", refused);
    free(image), free(col), free(row);
    gpuws_context_destroy(cpu);
    gpuws_context_destroy(ctx);
}

/* ---- 2. factors longer than a block of taps ----------------------------------------------------------------- */

typedef struct {
    target t;
    gpuws_dtype dtype;
    gpuws_convolve_boundary boundary;
} long_case;

ParameterizedTestParameters(separable, factors_longer_than_a_block_of_taps_match)
{
    static long_case cases[NTARGETS * 4];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++) {
            cases[k++] = (long_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32, GPUWS_BOUNDARY_SYMM };
            cases[k++] = (long_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32, GPUWS_BOUNDARY_FILL };
        }
    return cr_make_param_array(long_case, cases, k);
}

/* kw = 300 and kh = 270 taps on a 40 x 600 image, mode same: the taps are staged in blocks of 256, so both passes
 * take a whole block and a partial one; kh is also longer than the image (symm reflects it several times). The 2-D
 * reference costs 81000 products per output, so it runs on the output rows at both edges and the middle (every
 * column of each): the CPU backend's own function (gpuws_convolve2d_ref_*, what gpuws_convolve2d runs there) on a
 * range of rows. */
ParameterizedTest(long_case *c, separable, factors_longer_than_a_block_of_taps_match)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    const problem p = { 40, 600, 0, 270, 300, { 0, GPUWS_CONVOLVE_SAME, c->boundary, 0.75 } };
    const uint64_t seed = test_seed(false);
    double *image = random_image(&p, seed), *col = random_values(p.kh, seed + 3), *row = random_values(p.kw, seed + 4);
    char what[192];
    describe(what, sizeof what, target_name(&c->t), c->dtype, &p);
    gpuws__conv2d_geometry g;
    TEST_OK(gpuws__conv2d_geometry_init(p.h, p.w, p.stride, p.kh, p.kw, &p.opt, &g));
    double *got = run_separable(ctx, c->dtype, &p, image, col, row);

    static const size_t ranges[][2] = { { 0, 3 }, { 19, 21 }, { 37, 40 } };
    bool rows[40] = { false };
    double *kernel = outer(c->dtype, &p, col, row), *want = malloc(g.oh * g.ow * sizeof *want + 8);
    cr_assert_not_null(want);
    void *hi = to_dtype(image, image_elems(&p), c->dtype), *hk = to_dtype(kernel, p.kh * p.kw, c->dtype);
    void *ho = malloc(g.oh * g.ow * gpuws_dtype_size(c->dtype) + 8);
    cr_assert_not_null(ho);
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        if (c->dtype == GPUWS_F32) gpuws_convolve2d_ref_f32(&g, hi, hk, ho, ranges[r][0], ranges[r][1]);
        else gpuws_convolve2d_ref_f64(&g, hi, hk, ho, ranges[r][0], ranges[r][1]);
        for (size_t m = ranges[r][0]; m < ranges[r][1]; m++) {
            rows[m] = true;
            for (size_t n = 0; n < g.ow; n++)
                want[m * g.ow + n] =
                    c->dtype == GPUWS_F32 ? (double)((float *)ho)[m * g.ow + n] : ((double *)ho)[m * g.ow + n];
        }
    }
    double *mag = magnitudes(c->dtype, &p, image, col, row);
    cr_assert_eq(check(what, c->dtype, &p, got, want, mag, g.oh, g.ow, rows), 8u * 600u);
    /* every output was written (the rows not compared too) and is finite */
    for (size_t i = 0; i < g.oh * g.ow; i++)
        cr_assert(isfinite(got[i]) && got[i] != POISON, "%s: output (%zu, %zu) = %g", what, i / g.ow, i % g.ow, got[i]);
    free(hi), free(hk), free(ho), free(kernel), free(want), free(mag), free(got);
    free(image), free(col), free(row);
    gpuws_context_destroy(ctx);
}

typedef struct {
    target t;
    gpuws_dtype dtype;
} dtype_case;

static size_t dtype_cases(dtype_case *cases)
{
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++) cases[k++] = (dtype_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32 };
    return k;
}

ParameterizedTestParameters(separable, images_taller_than_one_grid_of_row_groups_match)
{
    static dtype_case cases[NTARGETS * 2];
    return cr_make_param_array(dtype_case, cases, dtype_cases(cases));
}

/* A grid has at most 65535 groups down its rows (the GPU backends' limit; the row pass's groups take 8 rows each,
 * then loop over the rest): 530000 rows of 3 columns, mode same with kh = 3, kw = 2 (530002 row sums, more than
 * 65535 x 8), symm; every output checked. */
ParameterizedTest(dtype_case *c, separable, images_taller_than_one_grid_of_row_groups_match)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    gpuws_context *cpu = open_cpu();
    const problem p = { 530000, 3, 0, 3, 2, { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0 } };
    const uint64_t seed = test_seed(false);
    double *image = random_image(&p, seed), *col = random_values(p.kh, seed + 9), *row = random_values(p.kw, seed + 10);
    check_problem(ctx, cpu, target_name(&c->t), c->dtype, &p, image, col, row);
    free(image), free(col), free(row);
    gpuws_context_destroy(cpu);
    gpuws_context_destroy(ctx);
}

/* ---- 3. NaN and Inf ------------------------------------------------------------------------------------------ */

/* One problem of the NaN / Inf tests: the outputs that are NaN (inf: that are +-Inf, with no NaN in the 2-D result)
 * are exactly the 2-D convolution's, the others agree within the bound. Returns how many there are; `what` gets
 * the problem's description. */
static size_t special_outputs_match(gpuws_context *ctx, gpuws_context *cpu, const dtype_case *c, const problem *p,
                                    const double *image, const double *col, const double *row, bool inf, char *what,
                                    size_t len)
{
    describe(what, len, target_name(&c->t), c->dtype, p);
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, &oh, &ow));
    double *got = run_separable(ctx, c->dtype, p, image, col, row), *want = oracle(cpu, c->dtype, p, image, col, row);
    double *mag = magnitudes(c->dtype, p, image, col, row);
    size_t count = 0;
    for (size_t i = 0; i < oh * ow; i++) {
        if (inf) {
            cr_assert(!isnan(want[i]), "%s: the 2-D convolution has NaN at (%zu, %zu)", what, i / ow, i % ow);
            count += isinf(want[i]) != 0;
            cr_assert_eq(isinf(got[i]) ? got[i] : 0.0, isinf(want[i]) ? want[i] : 0.0,
                         "%s: output (%zu, %zu) = %g, 2-D convolution %g", what, i / ow, i % ow, got[i], want[i]);
        } else {
            count += isnan(want[i]) != 0;
            cr_assert_eq(isnan(got[i]) != 0, isnan(want[i]) != 0, "%s: output (%zu, %zu) = %g, 2-D convolution %g",
                         what, i / ow, i % ow, got[i], want[i]);
        }
    }
    check(what, c->dtype, p, got, want, mag, oh, ow, NULL);
    free(got), free(want), free(mag);
    return count;
}

ParameterizedTestParameters(separable, nan_reaches_exactly_the_outputs_of_the_2d_convolution)
{
    static dtype_case cases[NTARGETS * 2];
    return cr_make_param_array(dtype_case, cases, dtype_cases(cases));
}

/* NaN pixels at a corner, inside, and on the last column, so wrap and symm carry them across the edges; and a NaN
 * fill value. Each factor has a zero tap: 0 * NaN is NaN in the 2-D sum (SciPy multiplies every tap), so the
 * separable passes must multiply zero taps too. The set of NaN outputs equals the 2-D result's exactly; the others
 * agree within the bound. */
ParameterizedTest(dtype_case *c, separable, nan_reaches_exactly_the_outputs_of_the_2d_convolution)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    gpuws_context *cpu = open_cpu();
    problem p = { 30, 41, 0, 5, 4, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    const uint64_t seed = test_seed(false);
    double *image = random_image(&p, seed), *col = random_values(p.kh, seed + 5), *row = random_values(p.kw, seed + 6);
    image[0] = NAN;
    image[12 * p.w + 20] = NAN;
    image[7 * p.w + 40] = NAN;
    col[1] = 0.0;
    row[3] = 0.0;
    for (int m = 0; m < 3; m++)
        for (int b = 0; b < 4; b++) { /* b = 3: boundary fill with a NaN fill value (ignored in VALID) */
            p.opt = (gpuws_convolve2d_options){ 0, (gpuws_convolve_mode)m,
                                                b < 3 ? (gpuws_convolve_boundary)b : GPUWS_BOUNDARY_FILL,
                                                b < 3 ? 0.75 : NAN };
            char what[192];
            const size_t nans = special_outputs_match(ctx, cpu, c, &p, image, col, row, false, what, sizeof what);
            /* three disjoint footprints of 5 x 4 in FULL; the inner one whole in every mode */
            cr_assert_geq(nans, m == GPUWS_CONVOLVE_FULL ? 3u * 20u : 20u, "%s: only %zu NaN outputs", what, nans);
        }
    free(image), free(col), free(row);
    gpuws_context_destroy(cpu);
    gpuws_context_destroy(ctx);
}

ParameterizedTestParameters(separable, inf_reaches_exactly_the_outputs_of_the_2d_convolution)
{
    static dtype_case cases[NTARGETS * 2];
    return cr_make_param_array(dtype_case, cases, dtype_cases(cases));
}

/* One +Inf pixel on the left edge and factors all positive: the outputs whose footprint holds it are +Inf, exactly
 * those of the 2-D convolution, in every mode and boundary; the rest agree within the bound. */
ParameterizedTest(dtype_case *c, separable, inf_reaches_exactly_the_outputs_of_the_2d_convolution)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    gpuws_context *cpu = open_cpu();
    problem p = { 30, 41, 0, 5, 4, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    const uint64_t seed = test_seed(false);
    double *image = random_image(&p, seed), *col = random_values(p.kh, seed + 7), *row = random_values(p.kw, seed + 8);
    for (size_t j = 0; j < p.kh; j++) col[j] = fabs(col[j]) + 0.125;
    for (size_t k = 0; k < p.kw; k++) row[k] = fabs(row[k]) + 0.125;
    image[15 * p.w] = INFINITY;
    for (int m = 0; m < 3; m++)
        for (int b = 0; b < 3; b++) {
            p.opt = (gpuws_convolve2d_options){ 0, (gpuws_convolve_mode)m, (gpuws_convolve_boundary)b, 0.75 };
            char what[192];
            const size_t infs = special_outputs_match(ctx, cpu, c, &p, image, col, row, true, what, sizeof what);
            cr_assert_geq(infs, m == GPUWS_CONVOLVE_FULL ? 20u : 1u, "%s: only %zu Inf outputs", what, infs);
        }
    free(image), free(col), free(row);
    gpuws_context_destroy(cpu);
    gpuws_context_destroy(ctx);
}

/* ---- 4. the workshop's case ---------------------------------------------------------------------------------- */

ParameterizedTestParameters(separable, workshop_deltas_with_the_separable_gaussian_match_the_2d_gaussian)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

/* The workshop's exercise at 1/8 scale: deltas at [8::16, 8::16] of 256 x 256, the 15 x 15 Gaussian exp(-(x^2 + y^2)
 * / 2) on x, y = linspace(-2, 2, 15) given as its factors col = row = g = exp(-x^2 / 2) (one buffer passed as both),
 * mode full. Equal within the bound to gpuws_convolve2d with outer(g, g) on the same target (the same kernel path)
 * and on the CPU backend. */
ParameterizedTest(const target *t, separable, workshop_deltas_with_the_separable_gaussian_match_the_2d_gaussian)
{
    gpuws_context *ctx = open_target(t);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    gpuws_context *cpu = open_cpu();
    enum { N = 256, K = 15, O = N + K - 1 };
    const problem p = { N, N, 0, K, K, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    double *image = calloc(N * N, sizeof *image), g[K];
    cr_assert_not_null(image);
    for (size_t r = 8; r < N; r += 16)
        for (size_t c = 8; c < N; c += 16) image[r * N + c] = 1.0;
    for (int k = 0; k < K; k++) {
        const double x = -2.0 + 4.0 * k / (K - 1);
        g[k] = exp(-x * x / 2);
    }
    for (int d = 0; d < (info.fp64 ? 2 : 1); d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        char what[192];
        describe(what, sizeof what, target_name(t), dt, &p);
        gpuws_buffer *bi = upload(ctx, image, N * N, dt), *bg = upload(ctx, g, K, dt),
                     *bo = poisoned_out(ctx, dt, O * O);
        TEST_OK(gpuws_convolve2d_separable(NULL, dt, bi, N, N, 0, bg, K, bg, K, NULL, bo));
        double *got = download(bo, O * O, dt);
        double *gauss = outer(dt, &p, g, g), *same = run_2d(ctx, dt, &p, image, gauss);
        double *cpu_2d = run_2d(cpu, dt, &p, image, gauss);
        double *mag = magnitudes(dt, &p, image, g, g);
        char who[240];
        snprintf(who, sizeof who, "%s, against gpuws_convolve2d on the same target", what);
        check(who, dt, &p, got, same, mag, O, O, NULL);
        snprintf(who, sizeof who, "%s, against gpuws_convolve2d on the CPU backend", what);
        check(who, dt, &p, got, cpu_2d, mag, O, O, NULL);
        /* the Gaussian's peak, 1, at each delta (7 rows and columns into its copy) */
        cr_assert_eq(got[(8 + 7) * O + (8 + 7)], 1.0, "%s: peak %.17g", what, got[(8 + 7) * O + (8 + 7)]);
        free(got), free(gauss), free(same), free(cpu_2d), free(mag);
        gpuws_buffer_destroy(bi);
        gpuws_buffer_destroy(bg);
        gpuws_buffer_destroy(bo);
    }
    free(image);
    gpuws_context_destroy(cpu);
    if (!info.fp64) test_require_dtype(ctx, GPUWS_F64); /* f32 passed; skips (or fails, if required) with the reason */
    gpuws_context_destroy(ctx);
}

/* ---- the stream's row-sum memory ----------------------------------------------------------------------------- */

/* GPU backends keep the row sums of factors longer than 16 taps (the two-pass path; most calls below) in memory of
 * the stream, kept for its next call; shorter ones run the fused kernel. Calls of growing, shrinking and
 * growing sizes, f32 then f64 of one shape (twice the bytes), kh-heavy and kw-heavy, all queued on two streams
 * interleaved without waiting, then checked: memory kept too small, freed while a call still uses it, or shared
 * between streams gives wrong outputs. The last call uses options NULL (full, fill 0). */
ParameterizedTestParameters(separable, row_sum_memory_of_a_stream_follows_every_call)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, separable, row_sum_memory_of_a_stream_follows_every_call)
{
    gpuws_context *ctx = open_target(t);
    test_require_dtype(ctx, GPUWS_F64); /* the calls mix f32 and f64 */
    gpuws_context *cpu = open_cpu();
    struct {
        gpuws_dtype dt;
        problem p;
    } calls[] = {
        { GPUWS_F32, { 12, 10, 0, 3, 5, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.75 } } },
        { GPUWS_F32, { 120, 150, 0, 21, 17, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_SYMM, 0.0 } } },
        { GPUWS_F32, { 12, 10, 0, 3, 5, { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0 } } },
        { GPUWS_F64, { 120, 150, 0, 21, 17, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_SYMM, 0.0 } } },
        { GPUWS_F64, { 31, 20, 0, 60, 3, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, -0.5 } } },
        { GPUWS_F32, { 20, 31, 0, 3, 60, { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0 } } },
        { GPUWS_F64, { 130, 140, 145, 25, 25, { 0, GPUWS_CONVOLVE_VALID, GPUWS_BOUNDARY_FILL, 0.75 } } },
        { GPUWS_F32, { 130, 140, 145, 25, 25, GPUWS_CONVOLVE2D_OPTIONS_INIT } },
    };
    enum { NCALLS = sizeof calls / sizeof calls[0] };
    gpuws_stream *st[2];
    for (int s = 0; s < 2; s++) TEST_OK(gpuws_stream_create(ctx, &st[s]));
    double *image[NCALLS], *col[NCALLS], *row[NCALLS];
    sep_call sc[2][NCALLS];
    for (size_t i = 0; i < NCALLS; i++) {
        const problem *p = &calls[i].p;
        image[i] = random_image(p, test_seed(false) + 10 * i);
        col[i] = random_values(p->kh, test_seed(false) + 10 * i + 1);
        row[i] = random_values(p->kw, test_seed(false) + 10 * i + 2);
        for (int s = 0; s < 2; s++) sep_upload(ctx, calls[i].dt, p, image[i], col[i], row[i], &sc[s][i]);
    }
    for (size_t i = 0; i < NCALLS; i++)
        for (int s = 0; s < 2; s++) TEST_OK(sep_enqueue(st[s], calls[i].dt, &calls[i].p, &sc[s][i], i + 1 == NCALLS));
    for (int s = 0; s < 2; s++) TEST_OK(gpuws_stream_synchronize(st[s]));
    for (size_t i = 0; i < NCALLS; i++) {
        const problem *p = &calls[i].p;
        const gpuws_dtype dt = calls[i].dt;
        double *want = oracle(cpu, dt, p, image[i], col[i], row[i]), *mag = magnitudes(dt, p, image[i], col[i], row[i]);
        for (int s = 0; s < 2; s++) {
            char who[64], what[192];
            snprintf(who, sizeof who, "%s stream %d call %zu", target_name(t), s, i);
            describe(what, sizeof what, who, dt, p);
            const size_t oh = sc[s][i].oh, ow = sc[s][i].ow;
            double *got = sep_finish(&sc[s][i], dt);
            check(what, dt, p, got, want, mag, oh, ow, NULL);
            free(got);
        }
        free(want), free(mag), free(image[i]), free(col[i]), free(row[i]);
    }
    for (int s = 0; s < 2; s++) gpuws_stream_destroy(st[s]);
    gpuws_context_destroy(cpu);
    gpuws_context_destroy(ctx);
}

/* ---- 5. bad input -------------------------------------------------------------------------------------------- */

/* Asserts the call fails with exactly `want` and that gpuws_last_error() contains `text`. */
#define FAILS_SAYING(want, text, call)                                                                                 \
    do {                                                                                                               \
        TEST_FAILS(want, call);                                                                                        \
        cr_assert(strstr(gpuws_last_error(), (text)) != NULL, "%s: message '%s' lacks '%s'", #call,                    \
                  gpuws_last_error(), (text));                                                                         \
    } while (0)

/* Each refusal with the documented status and a message that names the function (errors of the separable call's own
 * checks: "convolve2d_separable"; those of the shape rules it shares with gpuws_convolve2d: at least "convolve2d") or
 * the argument at fault; out untouched by all of them; then a good call works. Sizes of test_convolve2d's bad_input
 * test, and its overflow and size-limit cases, mirrored. */
BACKEND_TEST(separable, bad_input_is_refused_and_leaves_out_untouched)
{
    gpuws_context *ctx = test_open(*kind);
    enum { H = 6, W = 7, KH = 3, KW = 4, OH = H + KH - 1, OW = W + KW - 1 };
    const gpuws_dtype F = GPUWS_F32;
    double image[H * W], col[KH], row[KW];
    test_fill_uniform_f64(image, H * W, 1, -1, 1);
    test_fill_uniform_f64(col, KH, 2, -1, 1);
    test_fill_uniform_f64(row, KW, 3, -1, 1);
    /* exact sizes (gpuws_buffer_create, no guard bytes): one element less is too small */
    gpuws_buffer *bi, *bc, *br, *short_col, *short_row, *small;
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * H * W, &bi));
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * KH, &bc));
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * KW, &br));
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * (KH - 1), &short_col));
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * (KW - 1), &short_row));
    TEST_OK(gpuws_buffer_create(ctx, sizeof(float) * (OH * OW - 1), &small));
    float fi[H * W], fc[KH], fr[KW];
    for (size_t i = 0; i < H * W; i++) fi[i] = (float)image[i];
    for (size_t i = 0; i < KH; i++) fc[i] = (float)col[i];
    for (size_t i = 0; i < KW; i++) fr[i] = (float)row[i];
    TEST_OK(gpuws_buffer_write(bi, 0, fi, sizeof fi));
    TEST_OK(gpuws_buffer_write(bc, 0, fc, sizeof fc));
    TEST_OK(gpuws_buffer_write(br, 0, fr, sizeof fr));
    TEST_OK(gpuws_buffer_write(short_col, 0, fc, sizeof(float) * (KH - 1)));
    TEST_OK(gpuws_buffer_write(short_row, 0, fr, sizeof(float) * (KW - 1)));
    gpuws_buffer *bo = poisoned_out(ctx, F, OH * OW);
    const gpuws_convolve2d_options def = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    gpuws_convolve2d_options o = def;
    const gpuws_status I = GPUWS_ERR_INVALID_ARGUMENT, R = GPUWS_ERR_OUT_OF_RANGE;
    const char *const fn = "convolve2d_separable", *const shared = "convolve2d";

    /* NULL buffers */
    FAILS_SAYING(I, "'image'", gpuws_convolve2d_separable(NULL, F, NULL, H, W, 0, bc, KH, br, KW, &o, bo));
    FAILS_SAYING(I, "'col'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, NULL, KH, br, KW, &o, bo));
    FAILS_SAYING(I, "'row'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, NULL, KW, &o, bo));
    FAILS_SAYING(I, "'out'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, NULL));
    /* zero sizes */
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, 0, br, KW, &o, bo));
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, 0, &o, bo));
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, 0, W, 0, bc, KH, br, KW, &o, bo));
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, 0, 0, bc, KH, br, KW, &o, bo));
    /* factors shorter than kh, kw; image and out smaller than their shapes; f64 on buffers of f32 sizes */
    FAILS_SAYING(R, "'col'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, short_col, KH, br, KW, &o, bo));
    FAILS_SAYING(R, "'row'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, short_row, KW, &o, bo));
    FAILS_SAYING(R, "'out'", gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, small));
    FAILS_SAYING(R, "'image'", gpuws_convolve2d_separable(NULL, F, bi, H, W, W + 1, bc, KH, br, KW, &o, bo));
    FAILS_SAYING(R, "argument '", gpuws_convolve2d_separable(NULL, GPUWS_F64, bi, H, W, 0, bc, KH, br, KW, &o, bo));
    /* out aliasing an input */
    FAILS_SAYING(I, fn, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, bi));
    FAILS_SAYING(I, fn, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, bc));
    FAILS_SAYING(I, fn, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, br));
    /* dtype, mode, boundary, stride */
    FAILS_SAYING(I, fn, gpuws_convolve2d_separable(NULL, GPUWS_I32, bi, H, W, 0, bc, KH, br, KW, &o, bo));
    FAILS_SAYING(I, fn, gpuws_convolve2d_separable(NULL, GPUWS_U8, bi, H, W, 0, bc, KH, br, KW, &o, bo));
    o.mode = (gpuws_convolve_mode)7;
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, bo));
    o = def, o.boundary = (gpuws_convolve_boundary)-1;
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, bo));
    o = def;
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, W - 1, bc, KH, br, KW, &o, bo));
    /* VALID with a 6 x 7 image and 3 x 8 factors: neither input is the larger (SciPy's ValueError) */
    o.mode = GPUWS_CONVOLVE_VALID;
    FAILS_SAYING(I, shared, gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, 8, &o, bo));
    o = def;
    /* as gpuws_convolve2d: height x row_stride x 8 bytes past size_t (each dimension alone legal) overflows; a side
     * of 2^31 is past the size limit */
    FAILS_SAYING(
        GPUWS_ERR_OVERFLOW, "overflow",
        gpuws_convolve2d_separable(NULL, GPUWS_F64, bi, (size_t)1 << 29, 2, (size_t)1 << 62, bc, KH, br, KW, &o, bo));
    FAILS_SAYING(GPUWS_ERR_UNSUPPORTED, shared,
                 gpuws_convolve2d_separable(NULL, F, bi, (size_t)1 << 31, 1, 0, bc, KH, br, KW, &o, bo));
    /* buffers of another context */
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, OH * OW * sizeof(float));
    FAILS_SAYING(GPUWS_ERR_WRONG_CONTEXT, "'out'",
                 gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, &o, foreign));
    FAILS_SAYING(GPUWS_ERR_WRONG_CONTEXT, "'col'",
                 gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, foreign, KH, br, KW, &o, bo));
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);

    assert_untouched(bo, OH * OW, F, "bad input");
    /* and a good call after all that works, the same buffer as both factors included */
    TEST_OK(gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, br, KW, NULL, bo));
    TEST_OK(gpuws_convolve2d_separable(NULL, F, bi, H, W, 0, bc, KH, bc, KH, NULL, bo));
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bc);
    gpuws_buffer_destroy(br);
    gpuws_buffer_destroy(short_col);
    gpuws_buffer_destroy(short_row);
    gpuws_buffer_destroy(small);
    gpuws_buffer_destroy(bo);
    gpuws_context_destroy(ctx);
}
