/* Benchmark workloads of the source finding:
 *   label/4conn       gpuws_label on the mask of the default synthetic sky (5 noise sigmas), the N read back
 *   sources/pipeline  gpuws_find_sources end to end: upload (from pinned memory), four steps, download
 * Sizes: small 512^2, default 2048^2 (the workshop's), large 4096^2. The sky is made on the host with the reference
 * from seed 1, so every device sees the same pixels. */
#include "bench.h"
#include "label/label_ref.h"
#include "sources/sources_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t side(bench_size s) { return s == BENCH_SMALL ? 512 : s == BENCH_LARGE ? 4096 : 2048; }

/* The default sky of side x side pixels, into img (n floats). */
static int make_sky(size_t side_px, float *img)
{
    gpuws_sky_params p = gpuws_sky_defaults(side_px, side_px, 1);
    gpuws_sky_source *src = malloc(p.num_sources * sizeof *src);
    gpuws_sky_bins b;
    if (!src) return -1;
    gpuws_sky_sources(&p, src);
    if (gpuws_sky_bin(&p, src, &b)) {
        free(src);
        return -1;
    }
    gpuws_sky_ref(&p, &b, img, NULL);
    gpuws_sky_bins_free(&b);
    free(src);
    return 0;
}

/* ---- label/4conn ---------------------------------------------------------------------------------------------- */

typedef struct {
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

static gpuws_status label_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    label_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->w = s->h = side(size);
    s->n = s->w * s->h;
    float *img = malloc(s->n * sizeof *img);
    s->mask = malloc(s->n);
    if (!img || !s->mask || make_sky(s->w, img)) {
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

static gpuws_status label_run(void *p, gpuws_stream *st)
{
    label_state *s = p;
    size_t n;
    return gpuws_label(st, s->w, s->h, s->dmask, 4, s->dlabels, &n);
}

static bool label_check(void *p, char *msg, size_t len)
{
    label_state *s = p;
    int32_t *got = malloc(s->n * 4), *want = malloc(s->n * 4);
    bool ok = got && want && gpuws_buffer_read(s->dlabels, 0, got, s->n * 4) == GPUWS_OK;
    if (!ok) {
        snprintf(msg, len, "could not read the labels back");
    } else {
        gpuws_label_ref(s->mask, s->w, s->h, 4, want);
        ok = memcmp(got, want, s->n * 4) == 0; /* integers: exact, as the tests */
        if (!ok) snprintf(msg, len, "labels differ from the reference");
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_label = {"label", "4conn", false, label_setup, label_run, label_check, label_teardown};
BENCH_WORKLOAD(w_label)

/* ---- sources/pipeline ------------------------------------------------------------------------------------------ */

typedef struct {
    gpuws_context *ctx;
    size_t w, h;
    float *img; /* pinned (gpuws_host_alloc), as a program that cares about transfer speed would hold it */
    gpuws_catalog *cat;
} pipe_state;

static void pipe_teardown(void *p)
{
    pipe_state *s = p;
    gpuws_catalog_free(s->cat);
    gpuws_host_free(s->ctx, s->img);
    free(s);
}

static gpuws_status pipe_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    pipe_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->ctx = ctx;
    s->w = s->h = side(size);
    const size_t n = s->w * s->h;
    gpuws_status st = gpuws_host_alloc(ctx, n * sizeof(float), (void **)&s->img);
    if (st) return st;
    if (make_sky(s->w, s->img)) return GPUWS_ERR_OUT_OF_MEMORY;
    /* The floor of an end-to-end run is the image crossing the host link once (4n bytes); the device-memory
     * traffic (clip passes, threshold, label, measure: ~25n bytes at the least) is far cheaper on a GPU. */
    c->bytes = 4.0 * (double)n;
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu f32", s->w, s->h);
    return GPUWS_OK;
}

static gpuws_status pipe_run(void *p, gpuws_stream *st)
{
    (void)st; /* gpuws_find_sources uses the context's default stream, which is the one timed */
    pipe_state *s = p;
    gpuws_catalog_free(s->cat);
    s->cat = NULL;
    return gpuws_find_sources(s->ctx, s->img, s->w, s->h, NULL, &s->cat);
}

/* Against the same pipeline on the CPU backend (the scalar references). Bounds as tests/test_sources_pipeline.c:
 * the same components (npix, peak exact); flux within 2 npix 2^-53 of itself, the centre within 4 npix 2^-53. */
static bool pipe_check(void *p, char *msg, size_t len)
{
    pipe_state *s = p;
    gpuws_context *cpu = NULL;
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "cpu";
    gpuws_catalog *ref = NULL;
    gpuws_status st = gpuws_context_create(&cpu, &o);
    if (!st) st = gpuws_find_sources(cpu, s->img, s->w, s->h, NULL, &ref);
    bool ok = !st && s->cat;
    if (!ok) snprintf(msg, len, "the CPU reference pipeline failed: %s: %s", gpuws_status_name(st), gpuws_last_error());
    if (ok && s->cat->num_sources != ref->num_sources) {
        snprintf(msg, len, "%zu sources, the reference has %zu", s->cat->num_sources, ref->num_sources);
        ok = false;
    }
    for (size_t k = 0; ok && k < ref->num_sources; k++) {
        const gpuws_source *a = &s->cat->sources[k], *b = &ref->sources[k];
        const double e = (double)b->npix * 0x1p-53;
        ok = a->npix == b->npix && a->peak == b->peak && fabs(a->flux - b->flux) <= 2 * e * fabs(b->flux) &&
             fabs(a->x - b->x) <= 4 * e * (fabs(b->x) + 1) && fabs(a->y - b->y) <= 4 * e * (fabs(b->y) + 1);
        if (!ok) snprintf(msg, len, "source %zu differs from the reference", k + 1);
    }
    gpuws_catalog_free(ref);
    gpuws_context_destroy(cpu);
    return ok;
}

static const bench_workload w_pipeline = {"sources", "pipeline", true, pipe_setup, pipe_run, pipe_check, pipe_teardown};
BENCH_WORKLOAD(w_pipeline)
