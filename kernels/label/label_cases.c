/* label's cases (kernels/common/cases.h): gpuws_label (4- and 8-connectivity) on the mask of the source finder's default
 * synthetic sky (5 noise sigmas), the labels exact against the reference. Sizes: tiny 64², small 512², default
 * 2048² (the workshop's), large 4096².
 *   4conn, 8conn      mask and labels on the device
 *   4conn+transfers   from pinned host memory to pinned host memory in-core: the upload of the mask, gpuws_label and
 *                     the download of the labels on the stream
 *   4conn-banded      the same through gpuws_label_host with a device budget of a quarter of the in-core size, so
 *                     the mask streams in row bands (about 12) twice (docs/scale.md) on the call's own streams;
 *                     bytes counted are the mask up and the labels down once, as for 4conn+transfers
 *   8conn-slabs       mask and labels on the device, labelled in slabs of a fifth of the rows (the knob
 *                     label_slab_pixels) joined at their borders: the path of images of 2^31 pixels and more */
#include "../core/tuning.h"
#include "common/cases.h"
#include "label/label_layout.h"
#include "label/label_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { LABEL_DEVICE, LABEL_TRANSFERS, LABEL_BANDED, LABEL_SLABS } label_mode;

typedef struct {
    int conn;
    label_mode mode;
    size_t w, h, n;
    uint8_t *mask;
    gpuws_context *ctx;
    uint8_t *h_mask;   /* pinned: LABEL_TRANSFERS, LABEL_BANDED */
    int32_t *h_labels; /* pinned: LABEL_TRANSFERS, LABEL_BANDED */
    gpuws_buffer *dmask, *dlabels;
} label_state;

static void label_teardown(void *p)
{
    label_state *s = p;
    if (s->mode == LABEL_SLABS) gpuws__tuning_set(s->ctx, "label_slab_pixels", NULL);
    free(s->mask);
    gpuws_host_free(s->ctx, s->h_mask);
    gpuws_host_free(s->ctx, s->h_labels);
    gpuws_buffer_destroy(s->dmask);
    gpuws_buffer_destroy(s->dlabels);
    free(s);
}

static gpuws_status label_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, int conn,
                                label_mode mode)
{
    label_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->conn = conn, s->mode = mode, s->ctx = ctx;
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
    if (mode == LABEL_SLABS) {
        char px[32];
        snprintf(px, sizeof px, "%zu", (s->h / 5) * s->w);
        if ((st = gpuws__tuning_set(ctx, "label_slab_pixels", px))) return st;
    }
    if (mode != LABEL_DEVICE && mode != LABEL_SLABS) {
        if ((st = gpuws_host_alloc(ctx, s->n, (void **)&s->h_mask)) ||
            (st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->h_labels)))
            return st;
        memcpy(s->h_mask, s->mask, s->n);
    }
    if (mode != LABEL_BANDED &&
        ((st = gpuws_buffer_create(ctx, s->n, &s->dmask)) || (st = gpuws_buffer_create(ctx, s->n * 4, &s->dlabels)) ||
         (st = gpuws_buffer_write(s->dmask, 0, s->mask, s->n))))
        return st;
    c->bytes = 5.0 * (double)s->n; /* the mask read once, the labels written once */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu u8", s->w, s->h);
    return GPUWS_OK;
}

static gpuws_status label_setup_4(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 4, LABEL_DEVICE);
}

static gpuws_status label_setup_8(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 8, LABEL_DEVICE);
}

static gpuws_status label_setup_8_slabs(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 8, LABEL_SLABS);
}

static gpuws_status label_setup_4_transfers(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 4, LABEL_TRANSFERS);
}

static gpuws_status label_setup_4_banded(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return label_setup(ctx, size, state, c, 4, LABEL_BANDED);
}

static gpuws_status label_run(void *p, gpuws_stream *st)
{
    label_state *s = p;
    size_t n;
    gpuws_status e;
    if (s->mode == LABEL_BANDED) { /* blocks until h_labels is complete; the bands run on streams of the call's own */
        gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
        /* in-core: the mask, the labels and gpuws_label's chunk counts */
        o.max_device_bytes = (5 * (uint64_t)s->n + 4 * (((uint64_t)s->n + LABEL_CHUNK - 1) / LABEL_CHUNK + 1)) / 4;
        return gpuws_label_host(s->ctx, s->w, s->h, s->h_mask, 0, s->conn, &o, s->h_labels, &n);
    }
    if (s->mode == LABEL_TRANSFERS && (e = gpuws_buffer_write_async(st, s->dmask, 0, s->h_mask, s->n))) return e;
    if ((e = gpuws_label(st, s->w, s->h, s->dmask, s->conn, s->dlabels, &n))) return e;
    return s->mode == LABEL_TRANSFERS ? gpuws_buffer_read_async(st, s->dlabels, 0, s->h_labels, s->n * 4) : GPUWS_OK;
}

static bool label_check(void *p, char *msg, size_t len)
{
    label_state *s = p;
    int32_t *got = malloc(s->n * 4), *want = malloc(s->n * 4);
    bool ok = got && want &&
              (s->mode != LABEL_DEVICE && s->mode != LABEL_SLABS
                   ? (memcpy(got, s->h_labels, s->n * 4), true)
                   : gpuws_buffer_read(s->dlabels, 0, got, s->n * 4) == GPUWS_OK);
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
    if (s->mode == LABEL_BANDED) {
        out[0] = (bench_output){ NULL, s->h_labels, s->n * 4 };
        return 1;
    }
    out[0] = (bench_output){ s->dlabels, NULL, s->n * 4 };
    if (s->mode == LABEL_DEVICE || s->mode == LABEL_SLABS) return 1;
    out[1] = (bench_output){ NULL, s->h_labels, s->n * 4 };
    return 2;
}

static const gpuws__case w_label = { { "label", "4conn", false, label_setup_4, label_run, label_check, label_teardown },
                                     label_outputs,
                                     false };
static const gpuws__case w_label8 = {
    { "label", "8conn", false, label_setup_8, label_run, label_check, label_teardown }, label_outputs, false
};
static const gpuws__case w_label_transfers = { { "label", "4conn+transfers", true, label_setup_4_transfers, label_run,
                                                 label_check, label_teardown },
                                               label_outputs,
                                               false };
static const gpuws__case w_label_banded = {
    { "label", "4conn-banded", true, label_setup_4_banded, label_run, label_check, label_teardown }, label_outputs, true
};
static const gpuws__case w_label8_slabs = {
    { "label", "8conn-slabs", false, label_setup_8_slabs, label_run, label_check, label_teardown }, label_outputs, false
};
GPUWS_CASE(w_label)
GPUWS_CASE(w_label8)
GPUWS_CASE(w_label8_slabs)
GPUWS_CASE(w_label_transfers)
GPUWS_CASE(w_label_banded)
