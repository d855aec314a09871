/* convolve1d's cases (kernels/common/cases.h): np.convolve(deltas.ravel(), gauss.diagonal()) on the workshop's
 * image (convolve2d_cases.c) seen as one signal: 4M samples ⊛ 15 taps at the default size, mode full; within the
 * bound of the test suites.
 *   f32, f64         inputs on the device
 *   f32-segmented    f32 from pinned host memory to pinned host memory through gpuws_convolve1d_host, in segments
 *                    of an eighth of the outputs (4096 at least: the tiny size's signal is the image repeated to
 *                    six segments and more, so that the fault rows and Oclgrind run the segments too) */
#include "common/cases.h"
#include "convolve1d/convolve1d_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAPS 15

typedef struct {
    gpuws_dtype dt;
    size_t n;
    gpuws__conv1d_geometry g;
    void *h_a, *h_v;
    gpuws_buffer *a, *v, *out;
    gpuws_context *ctx;
    void *h_pa, *h_out; /* segmented: the signal and the output in pinned memory (gpuws_host_alloc) */
    uint64_t budget;
} c1_state;

static void c1_teardown(void *p)
{
    c1_state *s = p;
    gpuws_host_free(s->ctx, s->h_pa);
    gpuws_host_free(s->ctx, s->h_out);
    free(s->h_a);
    free(s->h_v);
    gpuws_buffer_destroy(s->a);
    gpuws_buffer_destroy(s->v);
    gpuws_buffer_destroy(s->out);
    free(s);
}

/* min_n: the signal's least length (the image repeated) */
static gpuws_status c1_setup_common(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt,
                                    size_t min_n)
{
    c1_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dt = dt, s->ctx = ctx;
    const size_t side = gpuws__case_workshop_side(size), es = gpuws_dtype_size(dt);
    s->n = side * side < min_n ? min_n : side * side;
    gpuws_status st = gpuws__conv1d_geometry_init(s->n, TAPS, GPUWS_CONVOLVE_FULL, &s->g);
    if (st) return st;
    double *img = malloc(s->n * sizeof *img), gauss[TAPS * TAPS], diag[TAPS];
    if (!img) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws__case_workshop_image(img, side, false);
    for (size_t i = side * side; i < s->n; i++) img[i] = img[i % (side * side)];
    gpuws__case_workshop_gaussian(gauss, TAPS);
    for (int j = 0; j < TAPS; j++) diag[j] = gauss[j * TAPS + j];
    s->h_a = gpuws__case_convert(img, s->n, dt);
    s->h_v = gpuws__case_convert(diag, TAPS, dt);
    free(img);
    if (!s->h_a || !s->h_v) return GPUWS_ERR_OUT_OF_MEMORY;
    if ((st = gpuws_buffer_create(ctx, s->n * es, &s->a)) || (st = gpuws_buffer_create(ctx, TAPS * es, &s->v)) ||
        (st = gpuws_buffer_create(ctx, s->g.out_n * es, &s->out)) ||
        (st = gpuws_buffer_write(s->a, 0, s->h_a, s->n * es)) || (st = gpuws_buffer_write(s->v, 0, s->h_v, TAPS * es)))
        return st;
    c->bytes = (double)(s->n + TAPS + s->g.out_n) * (double)es;
    c->flops = 2.0 * (double)s->n * TAPS; /* full mode: every (sample, tap) pair once */
    snprintf(c->size_label, sizeof c->size_label, "%zu%s*%d", s->n >= (1u << 20) ? s->n >> 20 : s->n >> 10,
             s->n >= (1u << 20) ? "M" : "K", TAPS);
    return GPUWS_OK;
}

static gpuws_status c1_setup_f64(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c1_setup_common(c, z, s, k, GPUWS_F64, 0);
}
static gpuws_status c1_setup_f32(gpuws_context *c, bench_size z, void **s, bench_counts *k)
{
    return c1_setup_common(c, z, s, k, GPUWS_F32, 0);
}

/* The f32 case's inputs, and the pinned signal and output of the segmented one; its budget gives segments of an
 * eighth of the outputs, whole blocks of 4096. */
static gpuws_status c1_setup_f32_segmented(gpuws_context *ctx, bench_size z, void **state, bench_counts *k)
{
    gpuws_status st = c1_setup_common(ctx, z, state, k, GPUWS_F32, 6 * 4096 + 77);
    if (st) return st;
    c1_state *s = *state;
    const size_t es = sizeof(float), seg = (s->g.out_n / 8 + 4095) / 4096 * 4096;
    if ((st = gpuws_host_alloc(ctx, s->n * es, &s->h_pa)) || (st = gpuws_host_alloc(ctx, s->g.out_n * es, &s->h_out)))
        return st;
    memcpy(s->h_pa, s->h_a, s->n * es);
    s->budget = (TAPS + 3 * (TAPS + 16) + 6 * seg) * es; /* the filter, three slots of a segment */
    return GPUWS_OK;
}

static gpuws_status c1_run(void *p, gpuws_stream *st)
{
    c1_state *s = p;
    if (s->h_out) { /* blocks until h_out is complete, on the context's default stream */
        gpuws_convolve1d_host_options o = GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT;
        o.max_device_bytes = s->budget;
        return gpuws_convolve1d_host(s->ctx, s->dt, s->h_pa, s->n, s->h_v, TAPS, GPUWS_CONVOLVE_FULL, &o, s->h_out);
    }
    return gpuws_convolve1d(st, s->dt, s->a, s->n, s->v, TAPS, GPUWS_CONVOLVE_FULL, s->out);
}

static bool c1_check(void *p, char *msg, size_t n)
{
    c1_state *s = p;
    const size_t es = gpuws_dtype_size(s->dt), no = s->g.out_n;
    void *got = malloc(no * es), *want = malloc(no * es);
    bool ok =
        got && want &&
        (s->h_out ? (memcpy(got, s->h_out, no * es), true) : gpuws_buffer_read(s->out, 0, got, no * es) == GPUWS_OK);
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else {
        if (s->dt == GPUWS_F32) gpuws_convolve1d_ref_f32(&s->g, s->h_a, s->h_v, want, 0, no);
        else gpuws_convolve1d_ref_f64(&s->g, s->h_a, s->h_v, want, 0, no);
        ok = gpuws__case_within_conv_bound(got, want, no, s->dt, TAPS, msg, n);
    }
    free(got);
    free(want);
    return ok;
}

static size_t c1_outputs(void *p, bench_output *out)
{
    c1_state *s = p;
    out[0] = (bench_output){ s->h_out ? NULL : s->out, s->h_out, s->g.out_n * gpuws_dtype_size(s->dt) };
    return 1;
}

static const gpuws__case w_c1_f64 = { { "convolve1d", "f64", false, c1_setup_f64, c1_run, c1_check, c1_teardown },
                                      c1_outputs,
                                      false };
static const gpuws__case w_c1_f32 = { { "convolve1d", "f32", false, c1_setup_f32, c1_run, c1_check, c1_teardown },
                                      c1_outputs,
                                      false };
static const gpuws__case w_c1_f32_seg = {
    { "convolve1d", "f32-segmented", true, c1_setup_f32_segmented, c1_run, c1_check, c1_teardown }, c1_outputs, true
};
GPUWS_CASE(w_c1_f64)
GPUWS_CASE(w_c1_f32)
GPUWS_CASE(w_c1_f32_seg)
