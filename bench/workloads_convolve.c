/* Convolution workloads: the workshop's exercise.
 *   convolve2d f32, f64      deltas (ones at [8::16, 8::16]) of 2048 x 2048 ⊛ the 15 x 15 Gaussian, mode full,
 *                            inputs on the device: 2062 x 2062 outputs x 225 taps = 1.91 GFLOP
 *   convolve2d f32+transfers the same, uploading the image and downloading the result (pinned host memory): the
 *                            workshop's "fairer comparison"
 *   convolve2d f32-random    the same sizes on uniform random data, in case the mostly-zero deltas run differently
 *   convolve2d f32-separable, f64-separable  the same case through gpuws_convolve2d_separable: the Gaussian is
 *                            outer(g, g), g = exp(-x^2 / 2); 15 + 15 taps per output in two passes. FLOPs counted
 *                            are the ones it does (2076 x 2062 row sums + 2062^2 column sums, 15 taps each:
 *                            0.25 GFLOP), bytes the image read and the output written once (the row sums' round
 *                            trip through memory is not in the minimum)
 *   convolve1d f64, f32      np.convolve(deltas.ravel(), gauss.diagonal()): 4M samples ⊛ 15 taps, mode full
 * Sizes: small = 256 x 256, default = the workshop's 2048 x 2048, large = 4096 x 4096. */
#include "bench.h"
#include "convolve1d/convolve1d_ref.h"
#include "convolve2d/convolve2d_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAPS 15

static size_t side_for(bench_size size) { return size == BENCH_SMALL ? 256 : size == BENCH_LARGE ? 4096 : 2048; }

/* The workshop's inputs: deltas at [8::16, 8::16] (or uniform [0, 1) values from a fixed seed) and
 * exp(-(x^2 + y^2) / 2) on meshgrid(linspace(-2, 2, 15)). */
static void workshop_image(double *img, size_t side, bool random)
{
    uint64_t s = 0x5eed2026ULL;
    for (size_t i = 0; i < side * side; i++) {
        if (random) {
            s += 0x9e3779b97f4a7c15ULL;
            uint64_t z = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            img[i] = (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
        } else {
            const size_t r = i / side, c = i % side;
            img[i] = (r % 16 == 8 && c % 16 == 8) ? 1.0 : 0.0;
        }
    }
}

static void workshop_gaussian(double *g)
{
    for (int j = 0; j < TAPS; j++)
        for (int k = 0; k < TAPS; k++) {
            const double y = -2.0 + 4.0 * j / (TAPS - 1), x = -2.0 + 4.0 * k / (TAPS - 1);
            g[j * TAPS + k] = exp(-(x * x + y * y) / 2);
        }
}

/* Host arrays of n doubles in dtype (malloc'd; NULL on failure). */
static void *convert(const double *x, size_t n, gpuws_dtype dt)
{
    void *p = malloc(n * gpuws_dtype_size(dt));
    if (p)
        for (size_t i = 0; i < n; i++) {
            if (dt == GPUWS_F32) ((float *)p)[i] = (float)x[i];
            else ((double *)p)[i] = x[i];
        }
    return p;
}

/* Every input here is >= 0, so sum |kernel * X| is the result itself and the tests' bound
 * 2 (K + 1) u sum |kernel * X| becomes 2 (K + 1) u |want|. */
static bool within_bound(const void *got, const void *want, size_t n, gpuws_dtype dt, double taps, char *msg, size_t len)
{
    const double u = dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53;
    for (size_t i = 0; i < n; i++) {
        const double g = dt == GPUWS_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
        const double w = dt == GPUWS_F32 ? ((const float *)want)[i] : ((const double *)want)[i];
        if (!(fabs(g - w) <= 2 * (taps + 1) * u * fabs(w))) {
            snprintf(msg, len, "output %zu = %.17g, scalar reference %.17g", i, g, w);
            return false;
        }
    }
    return true;
}

/* ---- convolve2d ---- */

typedef struct {
    gpuws_dtype dt;
    bool transfers, random, separable;
    size_t side, out_side;
    gpuws__conv2d_geometry g;
    void *h_image, *h_kernel, *h_out; /* h_image and h_out pinned (gpuws_host_alloc) */
    void *h_g1d;                      /* separable: the 1-D Gaussian, both factors */
    gpuws_context *ctx;
    gpuws_buffer *image, *kernel, *out, *g1d;
} c2_state;

static void c2_teardown(void *p)
{
    c2_state *s = p;
    gpuws_host_free(s->ctx, s->h_image);
    gpuws_host_free(s->ctx, s->h_out);
    free(s->h_kernel);
    free(s->h_g1d);
    gpuws_buffer_destroy(s->image);
    gpuws_buffer_destroy(s->kernel);
    gpuws_buffer_destroy(s->out);
    gpuws_buffer_destroy(s->g1d);
    free(s);
}

static gpuws_status c2_setup_common(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt,
                                    bool transfers, bool random, bool separable)
{
    c2_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dt = dt, s->transfers = transfers, s->random = random, s->separable = separable, s->ctx = ctx;
    s->side = side_for(size), s->out_side = s->side + TAPS - 1;
    const size_t es = gpuws_dtype_size(dt), n = s->side * s->side, no = s->out_side * s->out_side;
    gpuws_status st = gpuws__conv2d_geometry_init(s->side, s->side, 0, TAPS, TAPS, NULL, &s->g);
    if (st) return st;
    double *img = malloc(n * sizeof *img), gauss[TAPS * TAPS];
    if (!img) return GPUWS_ERR_OUT_OF_MEMORY;
    workshop_image(img, s->side, random);
    workshop_gaussian(gauss);
    void *hi = convert(img, n, dt);
    s->h_kernel = convert(gauss, TAPS * TAPS, dt);
    free(img);
    if (!hi || !s->h_kernel) {
        free(hi);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    if ((st = gpuws_host_alloc(ctx, n * es, &s->h_image)) || (st = gpuws_host_alloc(ctx, no * es, &s->h_out))) {
        free(hi);
        return st;
    }
    memcpy(s->h_image, hi, n * es);
    free(hi);
    if ((st = gpuws_buffer_create(ctx, n * es, &s->image)) || (st = gpuws_buffer_create(ctx, TAPS * TAPS * es, &s->kernel)) ||
        (st = gpuws_buffer_create(ctx, no * es, &s->out)) || (st = gpuws_buffer_write(s->image, 0, s->h_image, n * es)) ||
        (st = gpuws_buffer_write(s->kernel, 0, s->h_kernel, TAPS * TAPS * es)))
        return st;
    c->bytes = (double)(n + TAPS * TAPS + no) * (double)es;
    c->flops = 2.0 * (double)no * TAPS * TAPS;
    snprintf(c->size_label, sizeof c->size_label, "%zu^2*%dx%d", s->side, TAPS, TAPS);
    if (separable) {
        double g1d[TAPS];
        for (int k = 0; k < TAPS; k++) {
            const double x = -2.0 + 4.0 * k / (TAPS - 1);
            g1d[k] = exp(-x * x / 2);
        }
        if (!(s->h_g1d = convert(g1d, TAPS, dt))) return GPUWS_ERR_OUT_OF_MEMORY;
        if ((st = gpuws_buffer_create(ctx, TAPS * es, &s->g1d)) || (st = gpuws_buffer_write(s->g1d, 0, s->h_g1d, TAPS * es)))
            return st;
        c->bytes = (double)(n + 2 * TAPS + no) * (double)es;
        c->flops = 2.0 * TAPS * ((double)(s->out_side + TAPS - 1) * (double)s->out_side + (double)no);
        snprintf(c->size_label, sizeof c->size_label, "%zu^2*(%d+%d)", s->side, TAPS, TAPS);
    }
    return GPUWS_OK;
}

static gpuws_status c2_setup_f32(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F32, false, false, false); }
static gpuws_status c2_setup_f64(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F64, false, false, false); }
static gpuws_status c2_setup_f32_transfers(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F32, true, false, false); }
static gpuws_status c2_setup_f32_random(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F32, false, true, false); }
static gpuws_status c2_setup_f32_sep(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F32, false, false, true); }
static gpuws_status c2_setup_f64_sep(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c2_setup_common(c, z, s, k, GPUWS_F64, false, false, true); }

static gpuws_status c2_run(void *p, gpuws_stream *st)
{
    c2_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt);
    gpuws_status e;
    if (s->transfers && (e = gpuws_buffer_write_async(st, s->image, 0, s->h_image, s->side * s->side * es))) return e;
    if (s->separable)
        return gpuws_convolve2d_separable(st, s->dt, s->image, s->side, s->side, 0, s->g1d, TAPS, s->g1d, TAPS, NULL, s->out);
    if ((e = gpuws_convolve2d(st, s->dt, s->image, s->side, s->side, 0, s->kernel, TAPS, TAPS, NULL, s->out))) return e;
    return s->transfers ? gpuws_buffer_read_async(st, s->out, 0, s->h_out, s->out_side * s->out_side * es) : GPUWS_OK;
}

static bool c2_check(void *p, char *msg, size_t n)
{
    c2_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt), no = s->out_side * s->out_side;
    void *got = malloc(no * es), *want = malloc(no * es);
    bool ok = got && want && gpuws_buffer_read(s->out, 0, got, no * es) == GPUWS_OK;
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else if (s->separable) { /* its own reference: the same factors, rows then columns, in double */
        const gpuws_status st = s->dt == GPUWS_F32
                                    ? gpuws_convolve2d_separable_ref_f32(&s->g, s->h_image, s->h_g1d, s->h_g1d, want)
                                    : gpuws_convolve2d_separable_ref_f64(&s->g, s->h_image, s->h_g1d, s->h_g1d, want);
        ok = st == GPUWS_OK ? within_bound(got, want, no, s->dt, 2 * TAPS, msg, n) : false;
        if (st) snprintf(msg, n, "the separable reference failed: %s", gpuws_last_error());
    } else {
        if (s->dt == GPUWS_F32) gpuws_convolve2d_ref_f32(&s->g, s->h_image, s->h_kernel, want, 0, s->g.oh);
        else gpuws_convolve2d_ref_f64(&s->g, s->h_image, s->h_kernel, want, 0, s->g.oh);
        ok = within_bound(got, want, no, s->dt, TAPS * TAPS, msg, n);
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_c2_f32 = {"convolve2d", "f32", false, c2_setup_f32, c2_run, c2_check, c2_teardown};
static const bench_workload w_c2_f64 = {"convolve2d", "f64", false, c2_setup_f64, c2_run, c2_check, c2_teardown};
static const bench_workload w_c2_f32_transfers = {"convolve2d", "f32+transfers", true, c2_setup_f32_transfers, c2_run,
                                                  c2_check, c2_teardown};
static const bench_workload w_c2_f32_random = {"convolve2d", "f32-random", false, c2_setup_f32_random, c2_run, c2_check,
                                               c2_teardown};
BENCH_WORKLOAD(w_c2_f32)
BENCH_WORKLOAD(w_c2_f64)
BENCH_WORKLOAD(w_c2_f32_transfers)
BENCH_WORKLOAD(w_c2_f32_random)
static const bench_workload w_c2_f32_sep = {"convolve2d", "f32-separable", false, c2_setup_f32_sep, c2_run, c2_check,
                                            c2_teardown};
static const bench_workload w_c2_f64_sep = {"convolve2d", "f64-separable", false, c2_setup_f64_sep, c2_run, c2_check,
                                            c2_teardown};
BENCH_WORKLOAD(w_c2_f32_sep)
BENCH_WORKLOAD(w_c2_f64_sep)

/* ---- convolve1d ---- */

typedef struct {
    gpuws_dtype dt;
    size_t n;
    gpuws__conv1d_geometry g;
    void *h_a, *h_v;
    gpuws_buffer *a, *v, *out;
} c1_state;

static void c1_teardown(void *p)
{
    c1_state *s = p;
    free(s->h_a);
    free(s->h_v);
    gpuws_buffer_destroy(s->a);
    gpuws_buffer_destroy(s->v);
    gpuws_buffer_destroy(s->out);
    free(s);
}

static gpuws_status c1_setup_common(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt)
{
    c1_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dt = dt;
    const size_t side = side_for(size), es = gpuws_dtype_size(dt);
    s->n = side * side;
    gpuws_status st = gpuws__conv1d_geometry_init(s->n, TAPS, GPUWS_CONVOLVE_FULL, &s->g);
    if (st) return st;
    double *img = malloc(s->n * sizeof *img), gauss[TAPS * TAPS], diag[TAPS];
    if (!img) return GPUWS_ERR_OUT_OF_MEMORY;
    workshop_image(img, side, false);
    workshop_gaussian(gauss);
    for (int j = 0; j < TAPS; j++) diag[j] = gauss[j * TAPS + j];
    s->h_a = convert(img, s->n, dt);
    s->h_v = convert(diag, TAPS, dt);
    free(img);
    if (!s->h_a || !s->h_v) return GPUWS_ERR_OUT_OF_MEMORY;
    if ((st = gpuws_buffer_create(ctx, s->n * es, &s->a)) || (st = gpuws_buffer_create(ctx, TAPS * es, &s->v)) ||
        (st = gpuws_buffer_create(ctx, s->g.out_n * es, &s->out)) || (st = gpuws_buffer_write(s->a, 0, s->h_a, s->n * es)) ||
        (st = gpuws_buffer_write(s->v, 0, s->h_v, TAPS * es)))
        return st;
    c->bytes = (double)(s->n + TAPS + s->g.out_n) * (double)es;
    c->flops = 2.0 * (double)s->n * TAPS; /* full mode: every (sample, tap) pair once */
    snprintf(c->size_label, sizeof c->size_label, "%zu%s*%d", s->n >= (1u << 20) ? s->n >> 20 : s->n >> 10,
             s->n >= (1u << 20) ? "M" : "K", TAPS);
    return GPUWS_OK;
}

static gpuws_status c1_setup_f64(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c1_setup_common(c, z, s, k, GPUWS_F64); }
static gpuws_status c1_setup_f32(gpuws_context *c, bench_size z, void **s, bench_counts *k) { return c1_setup_common(c, z, s, k, GPUWS_F32); }

static gpuws_status c1_run(void *p, gpuws_stream *st)
{
    c1_state *s = p;
    return gpuws_convolve1d(st, s->dt, s->a, s->n, s->v, TAPS, GPUWS_CONVOLVE_FULL, s->out);
}

static bool c1_check(void *p, char *msg, size_t n)
{
    c1_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt), no = s->g.out_n;
    void *got = malloc(no * es), *want = malloc(no * es);
    bool ok = got && want && gpuws_buffer_read(s->out, 0, got, no * es) == GPUWS_OK;
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else {
        if (s->dt == GPUWS_F32) gpuws_convolve1d_ref_f32(&s->g, s->h_a, s->h_v, want, 0, no);
        else gpuws_convolve1d_ref_f64(&s->g, s->h_a, s->h_v, want, 0, no);
        ok = within_bound(got, want, no, s->dt, TAPS, msg, n);
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_c1_f64 = {"convolve1d", "f64", false, c1_setup_f64, c1_run, c1_check, c1_teardown};
static const bench_workload w_c1_f32 = {"convolve1d", "f32", false, c1_setup_f32, c1_run, c1_check, c1_teardown};
BENCH_WORKLOAD(w_c1_f64)
BENCH_WORKLOAD(w_c1_f32)
