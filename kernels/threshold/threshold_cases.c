/* threshold's cases (kernels/common/cases.h): a synthetic radio sky thresholded at 5σ of its noise; the mask exact
 * against the reference. */
#include "common/cases.h"
#include "threshold/threshold_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws__case_sky_input in;
    uint8_t *want_mask;
    gpuws_buffer *mask;
} sky_state;

static void sky_teardown(void *p)
{
    sky_state *s = p;
    gpuws__case_sky_input_free(&s->in);
    free(s->want_mask);
    gpuws_buffer_destroy(s->mask);
    free(s);
}

static gpuws_status sky_setup(gpuws_context *ctx, bench_size size, void **state, gpuws__case_source *src)
{
    sky_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    return gpuws__case_sky_input_make(ctx, size, &s->in, src);
}

#define THRESHOLD 5e-3f

static gpuws_status thr_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    gpuws__case_source src[GPUWS__CASE_SKY_SOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    if (!(s->want_mask = malloc(s->in.n))) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_threshold_ref(s->in.hx, s->in.n, THRESHOLD, s->want_mask);
    if ((st = gpuws_buffer_create(ctx, s->in.n, &s->mask))) return st;
    c->bytes = (double)s->in.n * (sizeof(float) + 1);
    c->flops = (double)s->in.n;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu %s", s->in.side, s->in.side, "f32 -> u8");
    return GPUWS_OK;
}

static gpuws_status thr_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    return gpuws_threshold(st, s->in.n, s->in.x, THRESHOLD, s->mask);
}

static bool thr_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    uint8_t *got = malloc(s->in.n);
    bool ok = got && gpuws_buffer_read(s->mask, 0, got, s->in.n) == GPUWS_OK && memcmp(got, s->want_mask, s->in.n) == 0;
    if (!ok) snprintf(msg, n, "mask differs from the scalar reference (or could not be read)");
    free(got);
    return ok;
}

static size_t thr_outputs(void *p, bench_output *out)
{
    sky_state *s = p;
    out[0] = (bench_output){ s->mask, NULL, s->in.n };
    return 1;
}

static const gpuws__case w_threshold = { { "threshold", "f32", false, thr_setup, thr_run, thr_check, sky_teardown },
                                         thr_outputs,
                                         false };
GPUWS_CASE(w_threshold)
