/* convolve2d's cases (kernels/common/cases.h): the workshop's exercise (deltas at [8::16, 8::16] of a side x side
 * image ⊛ the 15 x 15 Gaussian exp(-(x^2 + y^2) / 2), mode full; side 48 (tiny), 256 (small), the workshop's 2048
 * (default), 4096 (large)), within the bound of the test suites.
 *   f32, f64                 inputs on the device: at 2048², 2062 x 2062 outputs x 225 taps = 1.91 GFLOP
 *   f32+transfers            the same, uploading the image and downloading the result (pinned host memory): the
 *                            workshop's "fairer comparison"
 *   f32-random               the same sizes on uniform random data, in case the mostly-zero deltas run differently
 *   f32-separable, f64-separable  the same case through gpuws_convolve2d_separable: the Gaussian is outer(g, g),
 *                            g = exp(-x^2 / 2); 15 + 15 taps per output in two passes. FLOPs counted are the ones
 *                            it does (at 2048²: 2076 x 2062 row sums + 2062^2 column sums, 15 taps each: 0.25 GFLOP),
 *                            bytes the image read and the output written once (the row sums' round trip through
 *                            memory is not in the minimum)
 *   f32-banded               the f32 case from pinned host memory to pinned host memory through gpuws_convolve2d_host
 *                            with a device budget of a quarter of the in-core size, so the image streams in row bands
 *                            (about 12, each with 14 halo rows) on three streams; bytes counted are the image up and
 *                            the output down once
 *   f32-separable-banded     the same through gpuws_convolve2d_separable_host with the factors of f32-separable, in
 *                            bands of an eighth of the output rows (8 at least: bands of one row would cost Oclgrind's
 *                            selftest minutes) */
#include "common/cases.h"
#include "convolve2d/convolve2d_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAPS 15

typedef struct {
    gpuws_dtype dt;
    bool transfers, random, separable, banded;
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
    s->side = gpuws__case_workshop_side(size), s->out_side = s->side + TAPS - 1;
    const size_t es = gpuws_dtype_size(dt), n = s->side * s->side, no = s->out_side * s->out_side;
    gpuws_status st = gpuws__conv2d_geometry_init(s->side, s->side, 0, TAPS, TAPS, NULL, &s->g);
    if (st) return st;
    double *img = malloc(n * sizeof *img), gauss[TAPS * TAPS];
    if (!img) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws__case_workshop_image(img, s->side, random);
    gpuws__case_workshop_gaussian(gauss, TAPS);
    void *hi = gpuws__case_convert(img, n, dt);
    s->h_kernel = gpuws__case_convert(gauss, TAPS * TAPS, dt);
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
    if ((st = gpuws_buffer_create(ctx, n * es, &s->image)) ||
        (st = gpuws_buffer_create(ctx, TAPS * TAPS * es, &s->kernel)) ||
        (st = gpuws_buffer_create(ctx, no * es, &s->out)) ||
        (st = gpuws_buffer_write(s->image, 0, s->h_image, n * es)) ||
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
        if (!(s->h_g1d = gpuws__case_convert(g1d, TAPS, dt))) return GPUWS_ERR_OUT_OF_MEMORY;
        if ((st = gpuws_buffer_create(ctx, TAPS * es, &s->g1d)) ||
            (st = gpuws_buffer_write(s->g1d, 0, s->h_g1d, TAPS * es)))
            return st;
        c->bytes = (double)(n + 2 * TAPS + no) * (double)es;
        c->flops = 2.0 * TAPS * ((double)(s->out_side + TAPS - 1) * (double)s->out_side + (double)no);
        snprintf(c->size_label, sizeof c->size_label, "%zu^2*(%d+%d)", s->side, TAPS, TAPS);
    }
    return GPUWS_OK;
}

static gpuws_status c2_setup_f32_banded(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    gpuws_status st = c2_setup_common(c, z, s, k, GPUWS_F32, true, false, false);
    ((c2_state *)*s)->banded = true;
    return st;
}

static gpuws_status c2_setup_f32_sep_banded(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    gpuws_status st = c2_setup_common(c, z, s, k, GPUWS_F32, true, false, true);
    ((c2_state *)*s)->banded = true;
    return st;
}

static gpuws_status c2_setup_f32(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F32, false, false, false);
}
static gpuws_status c2_setup_f64(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F64, false, false, false);
}
static gpuws_status c2_setup_f32_transfers(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F32, true, false, false);
}
static gpuws_status c2_setup_f32_random(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F32, false, true, false);
}
static gpuws_status c2_setup_f32_sep(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F32, false, false, true);
}
static gpuws_status c2_setup_f64_sep(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c2_setup_common(c, z, s, k, GPUWS_F64, false, false, true);
}

static gpuws_status c2_run(void *p, gpuws_stream *st)
{
    c2_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt);
    gpuws_status e;
    if (s->banded) { /* blocks until h_out is complete; the pipeline runs on streams of its own */
        gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
        o.max_device_bytes = ((uint64_t)s->side * s->side + (uint64_t)s->out_side * s->out_side) * sizeof(float) / 4;
        (void)st;
        if (s->separable) { /* bands of an eighth of the output rows (8 at least): three slots and a band's row sums */
            const uint64_t r = s->out_side / 8 > 8 ? s->out_side / 8 : 8, in = r + TAPS - 1;
            o.max_device_bytes = (3 * (in * s->side + r * s->out_side) + 2 * TAPS + in * s->out_side) * sizeof(float);
            return gpuws_convolve2d_separable_host(s->ctx, GPUWS_F32, s->h_image, s->side, s->side, 0, s->h_g1d, TAPS,
                                                   s->h_g1d, TAPS, &o, s->h_out);
        }
        return gpuws_convolve2d_host(s->ctx, GPUWS_F32, s->h_image, s->side, s->side, 0, s->h_kernel, TAPS, TAPS, &o,
                                     s->h_out);
    }
    if (s->transfers && (e = gpuws_buffer_write_async(st, s->image, 0, s->h_image, s->side * s->side * es))) return e;
    if (s->separable)
        return gpuws_convolve2d_separable(st, s->dt, s->image, s->side, s->side, 0, s->g1d, TAPS, s->g1d, TAPS, NULL,
                                          s->out);
    if ((e = gpuws_convolve2d(st, s->dt, s->image, s->side, s->side, 0, s->kernel, TAPS, TAPS, NULL, s->out))) return e;
    return s->transfers ? gpuws_buffer_read_async(st, s->out, 0, s->h_out, s->out_side * s->out_side * es) : GPUWS_OK;
}

static bool c2_check(void *p, char *msg, size_t n)
{
    c2_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt), no = s->out_side * s->out_side;
    void *got = malloc(no * es), *want = malloc(no * es);
    bool ok =
        got && want &&
        (s->banded ? (memcpy(got, s->h_out, no * es), true) : gpuws_buffer_read(s->out, 0, got, no * es) == GPUWS_OK);
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else if (s->separable) { /* its own reference: the same factors, rows then columns, in double */
        const gpuws_status st = s->dt == GPUWS_F32
                                    ? gpuws_convolve2d_separable_ref_f32(&s->g, s->h_image, s->h_g1d, s->h_g1d, want)
                                    : gpuws_convolve2d_separable_ref_f64(&s->g, s->h_image, s->h_g1d, s->h_g1d, want);
        ok = st == GPUWS_OK ? gpuws__case_within_conv_bound(got, want, no, s->dt, 2 * TAPS, msg, n) : false;
        if (st) snprintf(msg, n, "the separable reference failed: %s", gpuws_last_error());
    } else {
        if (s->dt == GPUWS_F32) gpuws_convolve2d_ref_f32(&s->g, s->h_image, s->h_kernel, want, 0, s->g.oh);
        else gpuws_convolve2d_ref_f64(&s->g, s->h_image, s->h_kernel, want, 0, s->g.oh);
        ok = gpuws__case_within_conv_bound(got, want, no, s->dt, TAPS * TAPS, msg, n);
    }
    free(got);
    free(want);
    return ok;
}

static size_t c2_outputs(void *p, bench_output *out)
{
    c2_state *s = p;
    const size_t bytes = s->out_side * s->out_side * gpuws_dtype_size(s->dt);
    if (s->banded) {
        out[0] = (bench_output){ NULL, s->h_out, bytes };
        return 1;
    }
    out[0] = (bench_output){ s->out, NULL, bytes };
    if (!s->transfers) return 1;
    out[1] = (bench_output){ NULL, s->h_out, bytes };
    return 2;
}

static const gpuws__case w_c2_f32 = { { "convolve2d", "f32", false, c2_setup_f32, c2_run, c2_check, c2_teardown },
                                      c2_outputs,
                                      false };
static const gpuws__case w_c2_f64 = { { "convolve2d", "f64", false, c2_setup_f64, c2_run, c2_check, c2_teardown },
                                      c2_outputs,
                                      false };
static const gpuws__case w_c2_f32_transfers = {
    { "convolve2d", "f32+transfers", true, c2_setup_f32_transfers, c2_run, c2_check, c2_teardown }, c2_outputs, false
};
static const gpuws__case w_c2_f32_random = {
    { "convolve2d", "f32-random", false, c2_setup_f32_random, c2_run, c2_check, c2_teardown }, c2_outputs, false
};
static const gpuws__case w_c2_f32_sep = {
    { "convolve2d", "f32-separable", false, c2_setup_f32_sep, c2_run, c2_check, c2_teardown }, c2_outputs, false
};
static const gpuws__case w_c2_f64_sep = {
    { "convolve2d", "f64-separable", false, c2_setup_f64_sep, c2_run, c2_check, c2_teardown }, c2_outputs, false
};
static const gpuws__case w_c2_f32_banded = {
    { "convolve2d", "f32-banded", true, c2_setup_f32_banded, c2_run, c2_check, c2_teardown }, c2_outputs, true
};
static const gpuws__case w_c2_f32_sep_banded = { { "convolve2d", "f32-separable-banded", true, c2_setup_f32_sep_banded,
                                                   c2_run, c2_check, c2_teardown },
                                                 c2_outputs,
                                                 true };
GPUWS_CASE(w_c2_f32)
GPUWS_CASE(w_c2_f32_banded)
GPUWS_CASE(w_c2_f32_sep_banded)
GPUWS_CASE(w_c2_f64)
GPUWS_CASE(w_c2_f32_transfers)
GPUWS_CASE(w_c2_f32_random)
GPUWS_CASE(w_c2_f32_sep)
GPUWS_CASE(w_c2_f64_sep)
