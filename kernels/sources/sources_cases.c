/* sources' cases (kernels/common/cases.h): gpuws_find_sources end to end on the default synthetic sky (upload from
 * pinned memory, four steps, download), against the same pipeline on the CPU backend. Sizes: tiny 64², small 512²,
 * default 2048² (the workshop's), large 4096². */
#include "common/cases.h"
#include "sources/sources_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    s->w = s->h = gpuws__case_sources_side(size);
    const size_t n = s->w * s->h;
    gpuws_status st = gpuws_host_alloc(ctx, n * sizeof(float), (void **)&s->img);
    if (st) return st;
    if (gpuws__case_sources_sky(s->w, s->img)) return GPUWS_ERR_OUT_OF_MEMORY;
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

/* Its output is a catalog the call allocates: nothing exists beforehand to poison. */
static size_t pipe_outputs(void *p, bench_output *out)
{
    (void)p, (void)out;
    return 0;
}

static const gpuws__case w_pipeline = {
    { "sources", "pipeline", true, pipe_setup, pipe_run, pipe_check, pipe_teardown }, pipe_outputs, true
};
GPUWS_CASE(w_pipeline)
