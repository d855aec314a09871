/* convolve2d: scipy.signal.convolve2d on every backend and kernel path.
 *
 * Truth: golden files made by SciPy (tests/data/make_convolve_golden.py) over every mode x boundary and odd, even,
 * non-square kernels, 1x1 images, kernels larger than the image; their data are small integers, so every output
 * is exact in f32 and f64 whatever the order of summation, and the reference and every backend must match them
 * exactly. Then every backend against the reference on random data, within the bound the API states:
 *   |got - ref| <= 2 (K + 1) u sum_taps |kernel * X|    (K = kh * kw taps, u = 2^-24 for f32, 2^-53 for f64)
 * which is Higham's bound for a sum of K products in any order (eq. 3.5, gamma_K ~ K u), doubled because the
 * reference has its own rounding (f32: accumulated in double, far smaller). sum |kernel * X| is computed by the
 * f64 reference on |image|, |kernel| and |fill|. Targets: see test_convolve.h. */
#include "test_convolve.h"
#include "convolve2d/convolve2d_ref.h"
#include "../core/driver_support.h" /* gpuws__stream_tickets: the wrap-around test */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ParameterizedTestParameters(convolve2d, matches_scipy_golden_files)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

/* ---- running one convolution from host doubles -------------------------------------------------------------- */

/* Runs on ctx; returns the output as doubles (malloc'd), after checking the guard bytes behind it. */
static double *run(gpuws_context *ctx, gpuws_dtype dt, const problem *p, const double *image, const double *kernel,
                   size_t *oh, size_t *ow)
{
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, oh, ow));
    const size_t es = gpuws_dtype_size(dt), ni = image_elems(p), nk = p->kh * p->kw, no = *oh * *ow;
    void *hi = to_dtype(image, ni, dt), *hk = to_dtype(kernel, nk, dt);
    gpuws_buffer *bi = test_buffer_from(ctx, hi, ni * es), *bk = test_buffer_from(ctx, hk, nk * es);
    gpuws_buffer *bo = test_buffer(ctx, no * es);
    TEST_OK(gpuws_convolve2d(NULL, dt, bi, p->h, p->w, p->stride, bk, p->kh, p->kw, &p->opt, bo));
    unsigned char *got = test_download(bo, no * es);
    test_check_guard(bo, no * es, "out");
    double *out = to_double(got, no, dt);
    free(got);
    free(hi);
    free(hk);
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    gpuws_buffer_destroy(bo);
    return out;
}

/* The reference in dtype on the same (rounded) inputs, as doubles. */
static double *reference(gpuws_dtype dt, const problem *p, const double *image, const double *kernel)
{
    gpuws__conv2d_geometry g;
    TEST_OK(gpuws__conv2d_geometry_init(p->h, p->w, p->stride, p->kh, p->kw, &p->opt, &g));
    const size_t no = g.oh * g.ow;
    double *out = malloc(no * sizeof *out + 8);
    cr_assert_not_null(out);
    void *hi = to_dtype(image, image_elems(p), dt), *hk = to_dtype(kernel, p->kh * p->kw, dt);
    if (dt == GPUWS_F32) {
        float *o = malloc(no * sizeof *o + 4);
        cr_assert_not_null(o);
        gpuws_convolve2d_ref_f32(&g, hi, hk, o, 0, g.oh);
        for (size_t i = 0; i < no; i++) out[i] = o[i];
        free(o);
    } else {
        gpuws_convolve2d_ref_f64(&g, hi, hk, out, 0, g.oh);
    }
    free(hi);
    free(hk);
    return out;
}

/* sum |kernel * X| per output: the reference on absolute values (of the dtype-rounded inputs). */
static double *magnitudes(gpuws_dtype dt, const problem *p, const double *image, const double *kernel)
{
    const size_t ni = image_elems(p), nk = p->kh * p->kw;
    double *ai = malloc(ni * sizeof *ai + 8), *ak = malloc(nk * sizeof *ak + 8);
    cr_assert(ai && ak);
    for (size_t i = 0; i < ni; i++) ai[i] = fabs(dt == GPUWS_F32 ? (double)(float)image[i] : image[i]);
    for (size_t i = 0; i < nk; i++) ak[i] = fabs(dt == GPUWS_F32 ? (double)(float)kernel[i] : kernel[i]);
    problem q = *p;
    q.opt.fill_value = fabs(dt == GPUWS_F32 ? (double)(float)p->opt.fill_value : p->opt.fill_value);
    double *s = reference(GPUWS_F64, &q, ai, ak);
    free(ai);
    free(ak);
    return s;
}

/* Asserts got agrees with the reference within the stated bound; NaN where and only where the reference has it. */
static void check_bound(const char *what, gpuws_dtype dt, const problem *p, const double *image, const double *kernel,
                        const double *got)
{
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(p->h, p->w, p->kh, p->kw, p->opt.mode, &oh, &ow));
    double *want = reference(dt, p, image, kernel), *mag = magnitudes(dt, p, image, kernel);
    const double u = dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53, k = (double)(p->kh * p->kw);
    for (size_t i = 0; i < oh * ow; i++) {
        const double bound = 2 * (k + 1) * u * mag[i], err = fabs(got[i] - want[i]);
        const bool ok = isnan(want[i]) ? isnan(got[i]) : isinf(want[i]) ? got[i] == want[i] : err <= bound;
        if (!ok)
            cr_assert_fail(
                "%s %s %zux%zu (stride %zu) * %zux%zu %s/%s fill %g: output (%zu, %zu) = %.17g, reference %.17g, "
                "error %.3g > bound %.3g",
                what, gpuws_dtype_name(dt), p->h, p->w, p->stride, p->kh, p->kw, mode_name(p->opt.mode),
                boundary_name(p->opt.boundary), p->opt.fill_value, i / ow, i % ow, got[i], want[i], err, bound);
    }
    free(want);
    free(mag);
}

/* run() in f32 and in f64 (where the device has it), each checked with check_bound. */
static void check_both_dtypes(gpuws_context *ctx, const problem *p, const double *image, const double *kernel,
                              const char *what)
{
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        size_t oh, ow;
        double *got = run(ctx, dt, p, image, kernel, &oh, &ow);
        check_bound(what, dt, p, image, kernel, got);
        free(got);
    }
}

/* ---- golden files ---------------------------------------------------------------------------------------------- */

typedef struct {
    problem p;
    bool error; /* SciPy raised ValueError */
    size_t oh, ow;
    double *image, *kernel, *want;
} golden;

static gpuws_convolve_mode parse_mode(const char *s)
{
    return !strcmp(s, "full") ? GPUWS_CONVOLVE_FULL : !strcmp(s, "same") ? GPUWS_CONVOLVE_SAME : GPUWS_CONVOLVE_VALID;
}

static double *read_values(FILE *f, size_t n)
{
    double *v = malloc(n * sizeof *v + 8);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) cr_assert_eq(fscanf(f, "%lf", &v[i]), 1, "golden file: truncated");
    return v;
}

/* Every (case, result) of tests/data/convolve2d_golden.txt; the image and kernel pointers are shared per case. */
static golden *load_golden(size_t *count)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/convolve2d_golden.txt", dir ? dir : "tests/data");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (GPUWS_TEST_DATA names the folder)", path);
    int version = 0;
    size_t ncases = 0, k = 0, cap = 0;
    cr_assert_eq(fscanf(f, "convolve2d-golden %d %zu", &version, &ncases), 2, "%s: bad header", path);
    golden *all = NULL;
    for (size_t c = 0; c < ncases; c++) {
        size_t h, w, kh, kw, nres;
        cr_assert_eq(fscanf(f, " case %zu %zu %zu %zu", &h, &w, &kh, &kw), 4, "%s: bad case %zu", path, c);
        double *image = read_values(f, h * w), *kernel = read_values(f, kh * kw);
        cr_assert_eq(fscanf(f, "%zu", &nres), 1);
        for (size_t r = 0; r < nres; r++) {
            if (k == cap) {
                cap = cap ? 2 * cap : 64;
                all = realloc(all, cap * sizeof *all);
                cr_assert_not_null(all);
            }
            golden *g = &all[k++];
            memset(g, 0, sizeof *g);
            char mode[16], boundary[16], shape[16];
            cr_assert_eq(fscanf(f, "%15s %15s %lf %15s", mode, boundary, &g->p.opt.fill_value, shape), 4);
            g->p.h = h, g->p.w = w, g->p.kh = kh, g->p.kw = kw;
            g->p.opt.mode = parse_mode(mode);
            g->p.opt.boundary = !strcmp(boundary, "fill")   ? GPUWS_BOUNDARY_FILL
                                : !strcmp(boundary, "wrap") ? GPUWS_BOUNDARY_WRAP
                                                            : GPUWS_BOUNDARY_SYMM;
            g->image = image, g->kernel = kernel;
            g->error = !strcmp(shape, "error");
            if (g->error) continue;
            g->oh = strtoull(shape, NULL, 10);
            cr_assert_eq(fscanf(f, "%zu", &g->ow), 1);
            g->want = read_values(f, g->oh * g->ow);
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
        if (i + 1 == n || all[i + 1].image != all[i].image) {
            free(all[i].image);
            free(all[i].kernel);
        }
    }
    free(all);
}

static void describe(char *buf, size_t n, const golden *g)
{
    snprintf(buf, n, "%zux%zu * %zux%zu %s/%s fill %g", g->p.h, g->p.w, g->p.kh, g->p.kw, mode_name(g->p.opt.mode),
             boundary_name(g->p.opt.boundary), g->p.opt.fill_value);
}

Test(convolve2d, reference_matches_scipy_golden_files)
{
    size_t n;
    golden *all = load_golden(&n);
    cr_assert_gt(n, 100, "golden file has only %zu results", n);
    size_t errors = 0;
    for (size_t i = 0; i < n; i++) {
        const golden *g = &all[i];
        char what[128];
        describe(what, sizeof what, g);
        gpuws__conv2d_geometry geo;
        gpuws_status st = gpuws__conv2d_geometry_init(g->p.h, g->p.w, 0, g->p.kh, g->p.kw, &g->p.opt, &geo);
        if (g->error) {
            cr_assert_eq(st, GPUWS_ERR_INVALID_ARGUMENT, "%s: SciPy raised ValueError, gpuws said %s", what,
                         gpuws_status_name(st));
            errors++;
            continue;
        }
        TEST_OK(st);
        cr_assert(geo.oh == g->oh && geo.ow == g->ow, "%s: shape %zux%zu, SciPy %zux%zu", what, geo.oh, geo.ow, g->oh,
                  g->ow);
        for (int d = 0; d < 2; d++) {
            double *got = reference(d ? GPUWS_F64 : GPUWS_F32, &g->p, g->image, g->kernel);
            for (size_t e = 0; e < g->oh * g->ow; e++)
                cr_assert_eq(got[e], g->want[e], "%s %s: output (%zu, %zu) = %g, SciPy %g", what, d ? "f64" : "f32",
                             e / g->ow, e % g->ow, got[e], g->want[e]);
            free(got);
        }
    }
    cr_assert_gt(errors, 0, "the golden file should hold SciPy's 'valid' errors too");
    free_golden(all, n);
}

ParameterizedTest(const target *t, convolve2d, matches_scipy_golden_files)
{
    gpuws_context *ctx = open_target(t);
    size_t n;
    golden *all = load_golden(&n);
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (dt == GPUWS_F64) test_require_dtype(ctx, dt);
        for (size_t i = 0; i < n; i++) {
            const golden *g = &all[i];
            char what[128];
            describe(what, sizeof what, g);
            if (g->error) {
                size_t oh, ow;
                TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
                           gpuws_convolve2d_output_shape(g->p.h, g->p.w, g->p.kh, g->p.kw, g->p.opt.mode, &oh, &ow));
                continue;
            }
            size_t oh, ow;
            double *got = run(ctx, dt, &g->p, g->image, g->kernel, &oh, &ow);
            for (size_t e = 0; e < oh * ow; e++)
                cr_assert_eq(got[e], g->want[e], "%s %s %s: output (%zu, %zu) = %g, SciPy %g", target_name(t), what,
                             gpuws_dtype_name(dt), e / ow, e % ow, got[e], g->want[e]);
            free(got);
        }
    }
    free_golden(all, n);
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference on random data ------------------------------------------------------- */

typedef struct {
    size_t h, w, extra_stride, kh, kw;
} shape;

/* Odd, even and non-square kernels; a kernel larger than the image; a 1x1 image; sizes that are not multiples of
 * any tile (the tiled kernel's tiles are 32..256 wide and 40..240 tall); a padded row stride; a kernel of 15 columns,
 * whose second chunk of 8 is partial, as in the workshop; rows wide enough for the direct kernel's vector paths
 * (64 f32 / 32 f64 outputs per work-item, all inside the image or only some), with rows outside it; a kernel wider
 * than the direct kernel's edge segments of 32 columns. */
static const shape shapes[] = {
    { 37, 53, 0, 3, 3 },    { 20, 31, 0, 4, 6 },  { 29, 17, 3, 7, 2 }, { 5, 6, 0, 9, 13 },   { 1, 1, 0, 3, 3 },
    { 131, 77, 5, 15, 15 }, { 2, 300, 0, 1, 17 }, { 9, 400, 2, 5, 7 }, { 12, 90, 0, 3, 40 },
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct {
    target t;
    gpuws_dtype dtype;
    shape s;
    bool fresh_seed;
} random_case;

ParameterizedTestParameters(convolve2d, agrees_with_reference_in_every_mode_and_boundary)
{
    static random_case cases[NTARGETS * 2 * (NSHAPES + 1)];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++) {
            for (size_t s = 0; s < NSHAPES; s++)
                cases[k++] = (random_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32, shapes[s], false };
            cases[k++] = (random_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32, { 23, 41, 0, 6, 5 }, true };
        }
    return cr_make_param_array(random_case, cases, k);
}

ParameterizedTest(random_case *c, convolve2d, agrees_with_reference_in_every_mode_and_boundary)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dtype);
    const uint64_t seed = test_seed(c->fresh_seed);
    problem p = { c->s.h,  c->s.w,  c->s.extra_stride ? c->s.w + c->s.extra_stride : 0,
                  c->s.kh, c->s.kw, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    double *image = random_values(image_elems(&p), seed), *kernel = random_values(p.kh * p.kw, seed + 1);
    for (int m = 0; m < 3; m++)
        for (int b = 0; b < 3; b++) {
            p.opt.mode = (gpuws_convolve_mode)m;
            p.opt.boundary = (gpuws_convolve_boundary)b;
            p.opt.fill_value = b == GPUWS_BOUNDARY_FILL ? 0.375 : 0.0;
            size_t oh, ow;
            if (gpuws_convolve2d_output_shape(p.h, p.w, p.kh, p.kw, p.opt.mode, &oh, &ow) != GPUWS_OK) continue;
            double *got = run(ctx, c->dtype, &p, image, kernel, &oh, &ow);
            check_bound(target_name(&c->t), c->dtype, &p, image, kernel, got);
            free(got);
        }
    free(image);
    free(kernel);
    gpuws_context_destroy(ctx);
}

/* ---- known answers ------------------------------------------------------------------------------------------ */

/* The workshop's exercise at 1/8 scale: deltas at [8::16, 8::16] convolved with the 15x15 Gaussian. The deltas are
 * 16 apart and the kernel 15 wide, so each output has at most one non-zero product: the full output is a copy of
 * the Gaussian at every delta and 0 elsewhere, exactly, in every dtype and on every backend. */
ParameterizedTestParameters(convolve2d, workshop_deltas_give_the_gaussian_exactly)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d, workshop_deltas_give_the_gaussian_exactly)
{
    gpuws_context *ctx = open_target(t);
    enum { N = 256, K = 15, O = N + K - 1 };
    double *image = calloc(N * N, sizeof *image), gauss[K * K];
    cr_assert_not_null(image);
    for (size_t r = 8; r < N; r += 16)
        for (size_t c = 8; c < N; c += 16) image[r * N + c] = 1.0;
    for (int j = 0; j < K; j++)
        for (int k = 0; k < K; k++) {
            const double y = -2.0 + 4.0 * j / (K - 1), x = -2.0 + 4.0 * k / (K - 1);
            gauss[j * K + k] = exp(-(x * x + y * y) / 2);
        }
    problem p = { N, N, 0, K, K, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        size_t oh, ow;
        double *got = run(ctx, dt, &p, image, gauss, &oh, &ow);
        cr_assert(oh == O && ow == O);
        for (size_t r = 0; r < O; r++)
            for (size_t c = 0; c < O; c++) {
                /* output (r, c) = gauss[r - dr][c - dc] for the delta (dr, dc) with 0 <= r - dr < K, if any */
                const size_t j = (r + 8) % 16, k = (c + 8) % 16;
                const bool hit = r >= 8 && c >= 8 && r - j < N && c - k < N && j < K && k < K;
                const double want = hit ? (dt == GPUWS_F32 ? (double)(float)gauss[j * K + k] : gauss[j * K + k]) : 0.0;
                cr_assert_eq(got[r * O + c], want, "%s %s: output (%zu, %zu) = %.17g, want %.17g", target_name(t),
                             gpuws_dtype_name(dt), r, c, got[r * O + c], want);
            }
        free(got);
    }
    free(image);
    gpuws_context_destroy(ctx);
}

/* NaN and Inf reach exactly the outputs whose footprint holds them (SciPy multiplies every tap, so Inf * 0 is NaN
 * there too): the tiled kernel's padded taps (15 columns = 8 + 7) must not widen a footprint. */
ParameterizedTestParameters(convolve2d, nan_and_inf_reach_exactly_the_outputs_scipy_gives)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d, nan_and_inf_reach_exactly_the_outputs_scipy_gives)
{
    gpuws_context *ctx = open_target(t);
    problem p = { 40, 70, 0, 15, 15, GPUWS_CONVOLVE2D_OPTIONS_INIT };
    double *image = random_values(p.h * p.w, test_seed(false)), *kernel = random_values(p.kh * p.kw, 3);
    image[10 * p.w + 30] = NAN;
    image[25 * p.w + 5] = INFINITY;
    image[33 * p.w + 60] = -INFINITY;
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        for (int m = 0; m < 3; m++) {
            p.opt.mode = (gpuws_convolve_mode)m;
            size_t oh, ow;
            double *got = run(ctx, dt, &p, image, kernel, &oh, &ow);
            double *want = reference(dt, &p, image, kernel);
            size_t nonfinite = 0;
            for (size_t i = 0; i < oh * ow; i++) {
                nonfinite += !isfinite(want[i]);
                cr_assert(isnan(want[i])   ? isnan(got[i])
                          : isinf(want[i]) ? got[i] == want[i]
                                           : isfinite(got[i]),
                          "%s %s %s: output (%zu, %zu) = %g, reference %g", target_name(t), gpuws_dtype_name(dt),
                          mode_name(p.opt.mode), i / ow, i % ow, got[i], want[i]);
            }
            if (p.opt.mode == GPUWS_CONVOLVE_FULL) /* three disjoint 15 x 15 footprints */
                cr_assert_eq(nonfinite, 3 * 15 * 15, "%zu non-finite outputs", nonfinite);
            else cr_assert_gt(nonfinite, 15 * 15, "%zu non-finite outputs", nonfinite);
            free(got);
            free(want);
        }
    }
    free(image);
    free(kernel);
    gpuws_context_destroy(ctx);
}

/* ---- the tiled kernel's configurations ------------------------------------------------------------------------- */

/* The tiled kernels on ctx (a context of `kind`) with the knob `knob` (docs/tuning.md) set to each of `values` in
 * turn, against the reference; the knob keeps the last value. */
static void tiled_with_each(gpuws_backend_kind kind, gpuws_context *ctx, const problem *p, const char *knob,
                            const char *const *values, size_t n)
{
    test_tune(ctx, "convolve_path", "tiled");
    double *image = random_values(p->h * p->w, test_seed(false)), *kernel = random_values(p->kh * p->kw, 5);
    for (size_t i = 0; i < n; i++) {
        test_tune(ctx, knob, values[i]);
        char what[96];
        snprintf(what, sizeof what, "%s tiled, %s=%s", test_backend_name(kind), knob, values[i]);
        check_both_dtypes(ctx, p, image, kernel, what);
    }
    free(image);
    free(kernel);
}

/* Kernels larger than a tile's shared-memory budget are processed in blocks (rows x columns, columns a multiple
 * of 8); cap the blocks so that a 15 x 19 kernel is cut in several ways, down to single rows of 8 columns. */
GPU_BACKEND_TEST(convolve2d, kernel_blocks_add_up_to_the_whole_kernel)
{
    problem p = { 45, 83, 0, 15, 19, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_SYMM, 0.0 } };
    static const char *const caps[] = { "15x8", "4x16", "7x24", "1x8" };
    gpuws_context *ctx = test_open(*kind);
    tiled_with_each(*kind, ctx, &p, "convolve2d_kernel_block", caps, 4);
    gpuws_context_destroy(ctx);
}

/* The driver picks the block shape from a cost model; every shape it may pick must compute the same thing. */
GPU_BACKEND_TEST(convolve2d, every_block_shape_agrees_with_the_reference)
{
    problem p = { 250, 141, 0, 5, 11, { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0 } };
    static const char *const warps[] = { "2x1", "1x2", "4x1", "2x2", "1x4", "8x1", "4x2", "2x4" };
    gpuws_context *ctx = test_open(*kind);
    tiled_with_each(*kind, ctx, &p, "convolve2d_warps", warps, sizeof warps / sizeof warps[0]);
    gpuws_context_destroy(ctx);
}

/* The driver keeps the last call's plan on the stream for the next call of the same shape: calls that change the
 * image, the kernel, the mode or the boundary in turn on one stream (small after large: a plan kept too long would
 * leave outputs unwritten; large after small: too few tiles) each agree with the reference. */
GPU_BACKEND_TEST(convolve2d, a_stream_replans_for_each_new_shape)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve_path", "tiled");
    const problem calls[] = {
        { 37, 41, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0 } },
        { 300, 290, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0 } },
        { 37, 41, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0 } },
        { 300, 290, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0 } },
        { 300, 290, 0, 15, 15, { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0 } },
        { 300, 290, 0, 7, 9, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_SYMM, 0.0 } },
        { 300, 290, 0, 15, 15, { 0, GPUWS_CONVOLVE_VALID, GPUWS_BOUNDARY_FILL, 0.0 } },
        { 300, 290, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 2.5 } },
    };
    for (int d = 0; d < 2; d++) { /* one dtype at a time: the plan is kept per dtype too */
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
            const problem *p = &calls[i];
            double *image = random_values(p->h * p->w, test_seed(false) + i),
                   *kernel = random_values(p->kh * p->kw, 7 + i);
            char what[64];
            snprintf(what, sizeof what, "%s tiled, call %zu", test_backend_name(*kind), i);
            size_t oh, ow;
            double *got = run(ctx, dt, p, image, kernel, &oh, &ow);
            check_bound(what, dt, p, image, kernel, got);
            free(got);
            free(image);
            free(kernel);
        }
    }
    gpuws_context_destroy(ctx);
}

/* ---- shapes and bad input ------------------------------------------------------------------------------------- */

Test(convolve2d, output_shapes_are_scipys)
{
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(2048, 2048, 15, 15, GPUWS_CONVOLVE_FULL, &oh, &ow));
    cr_assert(oh == 2062 && ow == 2062, "the workshop's full output is 2062 x 2062, got %zu x %zu", oh, ow);
    TEST_OK(gpuws_convolve2d_output_shape(2048, 1000, 15, 4, GPUWS_CONVOLVE_SAME, &oh, &ow));
    cr_assert(oh == 2048 && ow == 1000);
    TEST_OK(gpuws_convolve2d_output_shape(20, 10, 15, 4, GPUWS_CONVOLVE_VALID, &oh, &ow));
    cr_assert(oh == 6 && ow == 7);
    TEST_OK(gpuws_convolve2d_output_shape(3, 4, 5, 7, GPUWS_CONVOLVE_VALID, &oh, &ow)); /* SciPy swaps the inputs */
    cr_assert(oh == 3 && ow == 4);
    TEST_OK(gpuws_convolve2d_output_shape(1, 1, 1, 1, GPUWS_CONVOLVE_VALID, &oh, &ow));
    cr_assert(oh == 1 && ow == 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve2d_output_shape(3, 8, 5, 2, GPUWS_CONVOLVE_VALID, &oh, &ow));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve2d_output_shape(0, 8, 5, 2, GPUWS_CONVOLVE_FULL, &oh, &ow));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve2d_output_shape(8, 8, 3, 3, (gpuws_convolve_mode)3, &oh, &ow));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_convolve2d_output_shape(8, 8, 3, 3, GPUWS_CONVOLVE_FULL, NULL, &ow));
    TEST_FAILS(GPUWS_ERR_UNSUPPORTED,
               gpuws_convolve2d_output_shape((size_t)1 << 30, 8, 3, 3, GPUWS_CONVOLVE_FULL, &oh, &ow));
}

BACKEND_TEST(convolve2d, bad_input_is_refused_and_leaves_out_untouched)
{
    gpuws_context *ctx = test_open(*kind);
    enum { H = 6, W = 7, KH = 3, KW = 3, OH = H + KH - 1, OW = W + KW - 1 };
    float image[H * W], kernel[KH * KW];
    test_fill_uniform_f32(image, H * W, 1, -1, 1);
    test_fill_uniform_f32(kernel, KH * KW, 2, -1, 1);
    /* exact sizes (test_buffer adds guard bytes): one element less is too small */
    gpuws_buffer *bi, *bk, *small, *bo = test_buffer(ctx, OH * OW * sizeof(float));
    TEST_OK(gpuws_buffer_create(ctx, sizeof image, &bi));
    TEST_OK(gpuws_buffer_create(ctx, sizeof kernel, &bk));
    TEST_OK(gpuws_buffer_create(ctx, OH * OW * sizeof(float) - 4, &small));
    TEST_OK(gpuws_buffer_write(bi, 0, image, sizeof image));
    TEST_OK(gpuws_buffer_write(bk, 0, kernel, sizeof kernel));
    const gpuws_convolve2d_options def = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    gpuws_convolve2d_options o = def;
    const gpuws_status I = GPUWS_ERR_INVALID_ARGUMENT;
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, NULL, H, W, 0, bk, KH, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, NULL, KH, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, NULL));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, 0, W, 0, bk, KH, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, 0, 0, bk, KH, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, 0, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, 0, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_I32, bi, H, W, 0, bk, KH, KW, &o, bo));
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, W - 1, bk, KH, KW, &o, bo)); /* stride < width */
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, bi));     /* out is the image */
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, bk));     /* out is the kernel */
    o.mode = (gpuws_convolve_mode)7;
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, bo));
    o = def, o.boundary = (gpuws_convolve_boundary)-1;
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, bo));
    o = def, o.mode = GPUWS_CONVOLVE_VALID; /* a 6 x 7 image and a 3 x 8 kernel: neither is the larger */
    TEST_FAILS(I, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, 3, 8, &o, bo));
    o = def;
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, small));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, W + 1, bk, KH, KW, &o, bo));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH + 1, KW, &o, bo));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_convolve2d(NULL, GPUWS_F64, bi, H, W, 0, bk, KH, KW, &o, bo));
    /* height x row_stride x 8 bytes past size_t (each dimension alone is legal) */
    TEST_FAILS(GPUWS_ERR_OVERFLOW,
               gpuws_convolve2d(NULL, GPUWS_F64, bi, ((size_t)1 << 29), 2, (size_t)1 << 62, bk, KH, KW, &o, bo));
    TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_convolve2d(NULL, GPUWS_F32, bi, (size_t)1 << 31, 1, 0, bk, KH, KW, &o, bo));
    /* a buffer of another context */
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, OH * OW * sizeof(float));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, &o, foreign));
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);

    unsigned char *after = test_download(bo, OH * OW * sizeof(float));
    for (size_t i = 0; i < OH * OW * sizeof(float); i++)
        cr_assert_eq(after[i], TEST_POISON_BYTE, "out byte %zu was written by a refused call", i);
    free(after);
    /* and a good call after all that works */
    TEST_OK(gpuws_convolve2d(NULL, GPUWS_F32, bi, H, W, 0, bk, KH, KW, NULL, bo));
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    gpuws_buffer_destroy(bo);
    gpuws_buffer_destroy(small);
    gpuws_context_destroy(ctx);
}

/* The tiled kernel is the one compiled for the kernel's width where it applies (1..16 columns), the generic one past
 * that: the workshop's 15 x 15, and 15 x 17, on every block shape. */
GPU_BACKEND_TEST(convolve2d, generic_and_fixed_width_kernels_agree_with_the_reference)
{
    problem p = { 61, 150, 0, 15, 15, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.5 } };
    static const char *const warps[] = { "auto", "2x1", "2x2", "4x2" };
    gpuws_context *ctx = test_open(*kind);
    tiled_with_each(*kind, ctx, &p, "convolve2d_warps", warps, sizeof warps / sizeof warps[0]);
    p.kw = 17;
    tiled_with_each(*kind, ctx, &p, "convolve2d_warps", warps, sizeof warps / sizeof warps[0]);
    gpuws_context_destroy(ctx);
}

/* The fixed kernel computes the first output rows in whole tiles (5 rows per thread) and the rest in thin ones (1
 * row per thread), so that the grid's last blocks spread over the whole device (plan_split in convolve2d.c).
 * The knob convolve2d_split forces whole tiles only, thin ones only, or a number of whole tile rows. Mode full of a
 * 150 x 90 image with a 9 x 13 kernel gives 158 output rows, 4 tile rows of 40 at 2 x 1 warps: splits after 1, 2
 * and 3 of them leave 118, 78 and 38 rows of 8-row thin tiles, the last one partly past the edge. */
GPU_BACKEND_TEST(convolve2d, whole_and_thin_tiles_agree_with_the_reference)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve2d_warps", "2x1");
    problem p = { 150, 90, 0, 9, 13, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_WRAP, 0.0 } };
    static const char *const splits[] = { "off", "all", "1", "2", "3", "99" };
    tiled_with_each(*kind, ctx, &p, "convolve2d_split", splits, sizeof splits / sizeof splits[0]);
    gpuws_context_destroy(ctx);
}

/* Every tiling of the fixed kernel gives the same bits: each output sums its kernel rows in ascending order whatever
 * its row within a thread's rows, whole tile (5 rows per thread) or thin (1), so block shapes and splits change no
 * output. gpuws_convolve2d_host relies on it: its bands tile their rows from each band's first row, whole tiles only,
 * and must give the in-core bits (docs/scale.md); a kernel of 5 rows or more is where an order that depends on the
 * row would show (CUDA's fixed kernel once summed the middle kernel rows first). 150 x 90 in mode full with a 9 x 13
 * kernel: 158 output rows, in whole tiles only, thin ones only, and splits after 1 and 2 tile rows, on 2 x 1, 2 x 2
 * (CUDA's persistent kernel for f32) and 1 x 1 warps. */
GPU_BACKEND_TEST(convolve2d, every_tiling_of_the_fixed_kernel_gives_the_same_bits)
{
    static const char *const tilings[][2] = { { "auto", "auto" }, { "2x1", "off" }, { "2x1", "all" },
                                              { "2x1", "1" },     { "2x2", "off" }, { "2x2", "all" },
                                              { "2x2", "1" },     { "1x1", "off" }, { "1x1", "all" } };
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve_path", "tiled");
    const problem p = { 150, 90, 0, 9, 13, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.5 } };
    double *image = random_values(p.h * p.w, test_seed(false)), *kernel = random_values(p.kh * p.kw, 7);
    for (int d = 0; d < 2; d++) {
        const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
        if (d) test_require_dtype(ctx, dt);
        double *first = NULL;
        for (size_t i = 0; i < sizeof tilings / sizeof tilings[0]; i++) {
            test_tune(ctx, "convolve2d_warps", tilings[i][0]);
            test_tune(ctx, "convolve2d_split", tilings[i][1]);
            size_t oh, ow;
            double *got = run(ctx, dt, &p, image, kernel, &oh, &ow);
            if (!first) {
                check_bound("tiled, default tiling", dt, &p, image, kernel, got);
                first = got;
                continue;
            }
            for (size_t k = 0; k < oh * ow; k++)
                if (memcmp(&got[k], &first[k], sizeof got[k]))
                    cr_assert_fail("%s %s: warps %s, split %s: output (%zu, %zu) = %.17g, default tiling %.17g",
                                   test_backend_name(*kind), gpuws_dtype_name(dt), tilings[i][0], tilings[i][1], k / ow,
                                   k % ow, got[k], first[k]);
            free(got);
        }
        free(first);
    }
    free(image);
    free(kernel);
    gpuws_context_destroy(ctx);
}

/* On CUDA, f32 plans of 2 x 2 warps run as persistent blocks that take the fixed kernel's tiles from a ticket counter
 * in the stream's memory until none are left; the driver keeps the counter's value at the start of the next call
 * (OpenCL, and f64, run a block per tile and ignore the knobs). Mode full of 150 x 90 with 9 x 13 gives 158 x
 * 102 outputs: tiles of 80 x 64, split after 1 tile row, then 16-row thin tiles, 12 tiles in all. With 1, 2, 3 and
 * 7 blocks (each taking many tiles), a block per tile, more blocks than tiles, and the fixed kernel itself, call
 * after call on one stream: a miscounted ticket base would skip tiles in the next call. Then boundaries wrap and
 * symm, which CUDA runs with another kernel than fill's. */
GPU_BACKEND_TEST(convolve2d, persistent_blocks_cover_every_tile_call_after_call)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve2d_warps", "2x2");
    test_tune(ctx, "convolve2d_split", "1");
    problem p = { 150, 90, 0, 9, 13, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.5 } };
    static const char *const grids[] = { "1", "2", "3", "7", "tiles", "1000000", "1", "tiles" };
    tiled_with_each(*kind, ctx, &p, "convolve2d_grid", grids, sizeof grids / sizeof grids[0]);
    static const char *const persist[] = { "0", "1", "0", "1" };
    tiled_with_each(*kind, ctx, &p, "convolve2d_persist", persist, sizeof persist / sizeof persist[0]);
    /* CUDA has a kernel for boundary fill (the rule a constant) and one for any rule: the other one too */
    static const char *const some[] = { "1", "3", "tiles" };
    p.opt.boundary = GPUWS_BOUNDARY_WRAP;
    tiled_with_each(*kind, ctx, &p, "convolve2d_grid", some, sizeof some / sizeof some[0]);
    p.opt.boundary = GPUWS_BOUNDARY_SYMM;
    tiled_with_each(*kind, ctx, &p, "convolve2d_grid", some, sizeof some / sizeof some[0]);
    gpuws_context_destroy(ctx);
}

/* The fixed kernel's plan of 2 x 2 warps (CUDA's persistent kernel) on ctx, on `grid` blocks. */
static void fixed_2x2_on_blocks(gpuws_context *ctx, const char *grid)
{
    test_tune(ctx, "convolve_path", "tiled");
    test_tune(ctx, "convolve2d_warps", "2x2");
    test_tune(ctx, "convolve2d_grid", grid);
}

/* Calls on two streams of one context, interleaved without waiting, 3 persistent blocks each (on CUDA): each stream
 * has its own tile counter, so neither call takes the other's tiles. */
GPU_BACKEND_TEST(convolve2d, two_streams_keep_their_own_tile_counters)
{
    gpuws_context *ctx = test_open(*kind);
    fixed_2x2_on_blocks(ctx, "3");
    const problem p = { 200, 140, 0, 7, 5, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0 } };
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(p.h, p.w, p.kh, p.kw, p.opt.mode, &oh, &ow));
    double *image = random_values(p.h * p.w, test_seed(false)), *kernel = random_values(p.kh * p.kw, 9);
    void *hi = to_dtype(image, p.h * p.w, GPUWS_F32), *hk = to_dtype(kernel, p.kh * p.kw, GPUWS_F32);
    gpuws_buffer *bi = test_buffer_from(ctx, hi, p.h * p.w * 4), *bk = test_buffer_from(ctx, hk, p.kh * p.kw * 4);
    gpuws_stream *st[2];
    gpuws_buffer *bo[2];
    for (int j = 0; j < 2; j++) {
        TEST_OK(gpuws_stream_create(ctx, &st[j]));
        bo[j] = test_buffer(ctx, oh * ow * 4);
    }
    for (int round = 0; round < 5; round++)
        for (int j = 0; j < 2; j++)
            TEST_OK(gpuws_convolve2d(st[j], GPUWS_F32, bi, p.h, p.w, 0, bk, p.kh, p.kw, &p.opt, bo[j]));
    for (int j = 0; j < 2; j++) {
        TEST_OK(gpuws_stream_synchronize(st[j]));
        unsigned char *raw = test_download(bo[j], oh * ow * 4);
        test_check_guard(bo[j], oh * ow * 4, "out");
        double *got = to_double(raw, oh * ow, GPUWS_F32);
        check_bound(j ? "second stream" : "first stream", GPUWS_F32, &p, image, kernel, got);
        free(got);
        free(raw);
        gpuws_buffer_destroy(bo[j]);
        gpuws_stream_destroy(st[j]);
    }
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    free(hi), free(hk), free(image), free(kernel);
    gpuws_context_destroy(ctx);
}

ParameterizedTestParameters(convolve2d, tile_tickets_wrap_around_2_to_the_32)
{
    static const gpuws_backend_kind b[] = { GPUWS_BACKEND_CUDA };
    return cr_make_param_array(gpuws_backend_kind, b, 1);
}

/* The persistent kernel's ticket counter is a 32-bit word that only grows; the driver keeps the value it will hold
 * when the next call starts, and each call draws exactly one ticket per tile plus one per block. White box: the
 * word and the driver's base are moved to 2^32 - 20 (gpuws__stream_tickets), then five calls of 12 tiles on 3
 * blocks (15 tickets each) go across the wrap. Every output must be right, and afterwards the word must equal the
 * driver's base: a miscount would make a later call skip tiles or compute some twice. */
ParameterizedTest(gpuws_backend_kind *kind, convolve2d, tile_tickets_wrap_around_2_to_the_32)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve2d_split", "1");
    fixed_2x2_on_blocks(ctx, "3");
    gpuws_stream *s;
    gpuws_buffer *tickets;
    uint32_t base, word;
    TEST_OK(gpuws_context_get_default_stream(ctx, &s));
    TEST_OK(gpuws__stream_tickets(s, &tickets, &base));
    const uint32_t start = 0xffffffffu - 19u;
    TEST_OK(gpuws_buffer_write(tickets, 0, &start, sizeof start));
    gpuws__stream_tickets_drawn(s, true, start - base);
    const problem p = { 150, 90, 0, 9, 13, { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.5 } };
    double *image = random_values(p.h * p.w, test_seed(false)), *kernel = random_values(p.kh * p.kw, 3);
    for (int call = 0; call < 5; call++) {
        size_t oh, ow;
        double *got = run(ctx, GPUWS_F32, &p, image, kernel, &oh, &ow);
        char what[48];
        snprintf(what, sizeof what, "call %d across the wrap", call);
        check_bound(what, GPUWS_F32, &p, image, kernel, got);
        free(got);
    }
    TEST_OK(gpuws__stream_tickets(s, &tickets, &base));
    TEST_OK(gpuws_buffer_read(tickets, 0, &word, sizeof word));
    cr_expect_eq(base, start + 5u * 15u, "driver's base %u, want %u", (unsigned)base, (unsigned)(start + 5u * 15u));
    cr_expect_eq(word, base, "ticket word %u, driver's base %u", (unsigned)word, (unsigned)base);
    free(image);
    free(kernel);
    gpuws_context_destroy(ctx);
}

/* The fixed kernel is a separate instantiation (CUDA) or build (OpenCL) per width 1..16: each once, with kernel
 * heights 1..5 (below, at and above the 5 rows a thread computes), every mode and boundary in turn. */
GPU_BACKEND_TEST(convolve2d, every_fixed_width_agrees_with_the_reference)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve_path", "tiled");
    for (size_t kw = 1; kw <= 16; kw++) {
        problem p = {
            23, 70, 0, kw % 5 + 1, kw, { 0, (gpuws_convolve_mode)(kw % 3), (gpuws_convolve_boundary)(kw / 3 % 3), 0.25 }
        };
        double *image = random_values(p.h * p.w, test_seed(false) + kw), *kernel = random_values(p.kh * p.kw, kw);
        char what[64];
        snprintf(what, sizeof what, "%s fixed kw %zu", test_backend_name(*kind), kw);
        check_both_dtypes(ctx, &p, image, kernel, what);
        free(image);
        free(kernel);
    }
    gpuws_context_destroy(ctx);
}

/* Tiles that lie inside the image are staged with vector copies as wide as the row starts' alignment allows (16
 * bytes, 8, or element by element: base column on - (kw - 1) and the row stride decide); the rest, and every tile
 * with the knob convolve2d_stage=general, go through the boundary rule. A 130 x 300 image has interior tiles for a
 * 15 x 15 kernel; full / same / valid give base columns -14 / -7 / 0, the strides 300 / 302 / 301 alignments of 4, 2
 * and 1 elements, so every copy width and the fallback run for f32 and f64. */
GPU_BACKEND_TEST(convolve2d, fixed_kernel_interior_tiles_agree_for_every_copy_width)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "convolve_path", "tiled");
    static const char *const stage[] = { "auto", "general" };
    static const size_t strides[] = { 300, 302, 301 };
    for (size_t si = 0; si < 2; si++) {
        test_tune(ctx, "convolve2d_stage", stage[si]);
        for (size_t k = 0; k < 3; k++) {
            problem p = { 130, 300, strides[k], 15, 15, { 0, (gpuws_convolve_mode)k, GPUWS_BOUNDARY_SYMM, 0.0 } };
            double *image = random_values(image_elems(&p), test_seed(false) + k),
                   *kernel = random_values(p.kh * p.kw, 7);
            char what[96];
            snprintf(what, sizeof what, "%s fixed, stage %s, stride %zu, mode %zu", test_backend_name(*kind), stage[si],
                     strides[k], k);
            check_both_dtypes(ctx, &p, image, kernel, what);
            free(image);
            free(kernel);
        }
    }
    gpuws_context_destroy(ctx);
}
