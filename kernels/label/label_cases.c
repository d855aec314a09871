/* label's cases (kernels/common/cases.h): gpuws_label (4- and 8-connectivity) on the mask of the source finder's default
 * synthetic sky (5 noise sigmas), the labels exact against the reference. Sizes: tiny 64², small 512², default
 * 2048² (the workshop's), large 4096². */
#include "common/cases.h"
#include "label/label_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int conn;
    size_t w, h, n;
    uint8_t *mask;
    gpuws_buffer *dmask, *dlabels;
} label_state;

static void label_teardown(void *p)
{
    label_state *s = p;
    free(s->mask);
    gpuws_buffer_destroy(s->dmask);
    gpuws_buffer_destroy(s->dlabels);
    free(s);
}

static gpuws_status label_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, int conn)
{
    label_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->conn = conn;
    s->w = s->h = gpuws__case_sources_side(size);
    s->n = s->w * s->h;
    float *img = malloc(s->n * sizeof *img);
    s->mask = malloc(s->n);
    if (!img || !s->mask || gpuws__case_sources_sky(s->w, img)) {
        free(img);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < s->n; i++) s->mask[i] = img[i] > 5e-3f; /* 5 noise sigmas */
    free(img);
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n, &s->dmask)) || (st = gpuws_buffer_create(ctx, s->n * 4, &s->dlabels)) ||
        (st = gpuws_buffer_write(s->dmask, 0, s->mask, s->n)))
        return st;
    c->bytes = 5.0 * (double)s->n; /* the mask read once, the labels written once */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu u8", s->w, s->h);
    return GPUWS_OK;
}

static gpuws_status label_setup_4(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 4);
}

static gpuws_status label_setup_8(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 8);
}

static gpuws_status label_run(void *p, gpuws_stream *st)
{
    label_state *s = p;
    size_t n;
    return gpuws_label(st, s->w, s->h, s->dmask, s->conn, s->dlabels, &n);
}

static bool label_check(void *p, char *msg, size_t len)
{
    label_state *s = p;
    int32_t *got = malloc(s->n * 4), *want = malloc(s->n * 4);
    bool ok = got && want && gpuws_buffer_read(s->dlabels, 0, got, s->n * 4) == GPUWS_OK;
    if (!ok) {
        snprintf(msg, len, "could not read the labels back");
    } else {
        gpuws_label_ref(s->mask, s->w, s->h, s->conn, want);
        ok = memcmp(got, want, s->n * 4) == 0; /* integers: exact, as the tests */
        if (!ok) snprintf(msg, len, "labels differ from the reference");
    }
    free(got);
    free(want);
    return ok;
}

static size_t label_outputs(void *p, bench_output *out)
{
    label_state *s = p;
    out[0] = (bench_output){ s->dlabels, NULL, s->n * 4 };
    return 1;
}

static const gpuws__case w_label = { { "label", "4conn", false, label_setup_4, label_run, label_check, label_teardown },
                                     label_outputs,
                                     false };
static const gpuws__case w_label8 = {
    { "label", "8conn", false, label_setup_8, label_run, label_check, label_teardown }, label_outputs, false
};
GPUWS_CASE(w_label)
GPUWS_CASE(w_label8)
