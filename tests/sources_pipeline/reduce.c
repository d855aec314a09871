/* Rows of the find_sources suite: gpuws_find_sources_host_reduce, the pipeline over rows held by several callers, on
 * threads that sum through shared memory (test_sum_group: what MPI ranks do, without MPI; the mpirun test is
 * tests/mpi/mpi_sources.c). Oracle: gpuws_find_sources_host on the whole image. */
#include "../support.h"
#include "../sources_split.h"

#include <float.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    test_sum_group *g;
    gpuws_context *ctx;
    const float *image;
    size_t rows, first, part, parts;
    gpuws_sources_options o;
    gpuws_status st;
    gpuws_catalog *cat;
    char message[256];
} sources_caller;

static void *sources_caller_main(void *arg)
{
    sources_caller *c = arg;
    c->st = gpuws_find_sources_host_reduce(c->ctx, c->rows ? c->image + c->first * SPLIT_W : NULL, SPLIT_W, c->rows,
                                           &c->o, NULL, c->part, c->parts, test_sum_group_reduce, c->g, &c->cat);
    snprintf(c->message, sizeof c->message, "%s", gpuws_last_error());
    return NULL;
}

/* parts callers with split_share's rows, all with options o but the last with `last` */
static void find_in_parts(gpuws_context *ctx, const float *img, int aligned, size_t parts,
                          const gpuws_sources_options *o, const gpuws_sources_options *last, sources_caller *cs)
{
    test_sum_group *g = test_sum_group_new((unsigned)parts, 1 << 18);
    pthread_t t[4];
    for (size_t p = 0; p < parts; p++) {
        size_t first;
        const size_t rows = split_share(aligned, parts, p, &first);
        cs[p] = (sources_caller){ .g = g,
                                  .ctx = ctx,
                                  .image = img,
                                  .rows = rows,
                                  .first = first,
                                  .part = p,
                                  .parts = parts,
                                  .o = p + 1 == parts ? *last : *o };
        pthread_create(&t[p], NULL, sources_caller_main, &cs[p]);
    }
    for (size_t p = 0; p < parts; p++) pthread_join(t[p], NULL);
    test_sum_group_free(g);
}

/* 1 .. 4 callers (the first with no rows when there are more), each beginning on a block of the measurement or not
 * (then a block split between three callers): every caller gets the whole image's catalogue, the clip, threshold,
 * count, npix and peaks of one gpuws_find_sources_host; the fluxes and centres its bits when the callers begin on
 * blocks, else within the summation bound of npix positive pixels added in another grouping; and its own rows of
 * the whole image's labels. */
BACKEND_TEST(find_sources, host_pipeline_in_parts_gets_the_whole_images_catalog)
{
    gpuws_context *ctx = test_open(*kind);
    float *img = malloc((size_t)SPLIT_W * SPLIT_H * sizeof *img);
    cr_assert(img);
    split_image(img);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.want_labels = 1;
    gpuws_catalog *want = NULL;
    TEST_OK(gpuws_find_sources_host(ctx, img, SPLIT_W, SPLIT_H, &o, NULL, &want));
    cr_assert(want->num_sources >= 11, "%zu sources: the case tests little", want->num_sources);
    cr_assert_eq(gpuws_find_sources_host_block_rows(SPLIT_W), 81, "the shares assume blocks of 81 rows");
    for (size_t parts = 1; parts <= 4; parts++)
        for (int aligned = 0; aligned <= 1; aligned++) {
            sources_caller cs[4];
            find_in_parts(ctx, img, aligned, parts, &o, &o, cs);
            for (size_t p = 0; p < parts; p++) {
                const gpuws_catalog *got = cs[p].cat;
                cr_assert_eq(cs[p].st, GPUWS_OK, "%zu parts, caller %zu: %s", parts, p, cs[p].message);
                cr_assert(memcmp(&got->clip, &want->clip, sizeof got->clip) == 0 && got->threshold == want->threshold,
                          "%zu parts, caller %zu: the clip or threshold differs", parts, p);
                cr_assert_eq(got->num_sources, want->num_sources, "%zu parts, caller %zu: %zu sources, one call %zu",
                             parts, p, got->num_sources, want->num_sources);
                for (size_t k = 0; k < want->num_sources; k++) {
                    const gpuws_source *g = &got->sources[k], *w = &want->sources[k];
                    const double bound = 2.0 * (double)w->npix * DBL_EPSILON;
                    cr_assert(g->id == w->id && g->npix == w->npix && g->peak == w->peak && g->peak_x == w->peak_x &&
                                  g->peak_y == w->peak_y,
                              "%zu parts, caller %zu, source %zu: id, npix or peak differ", parts, p, k);
                    if (aligned)
                        cr_assert(memcmp(g, w, sizeof *g) == 0, "%zu parts, caller %zu, source %zu: not the bits",
                                  parts, p, k);
                    else
                        cr_assert(fabs(g->flux - w->flux) <= bound * w->flux &&
                                      fabs(g->x - w->x) <= 2 * bound * SPLIT_W &&
                                      fabs(g->y - w->y) <= 2 * bound * SPLIT_H,
                                  "%zu parts, caller %zu, source %zu: flux %.17g (%.17g), x %.17g (%.17g), y %.17g "
                                  "(%.17g)",
                                  parts, p, k, g->flux, w->flux, g->x, w->x, g->y, w->y);
                }
                if (cs[p].rows)
                    cr_assert(memcmp(got->labels, want->labels + cs[p].first * SPLIT_W,
                                     cs[p].rows * SPLIT_W * sizeof *got->labels) == 0,
                              "%zu parts, caller %zu: its rows of labels differ", parts, p);
                else cr_assert_null(got->labels);
                gpuws_catalog_free(cs[p].cat);
            }
        }
    gpuws_catalog_free(want);
    free(img);
    gpuws_context_destroy(ctx);
}

/* Callers whose options differ, or one whose options are invalid, all fail with no catalogue (none waits for
 * another: the test would hang). */
Test(find_sources, host_pipeline_in_parts_fails_every_caller_on_one_callers_options)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    float *img = malloc((size_t)SPLIT_W * SPLIT_H * sizeof *img);
    cr_assert(img);
    split_image(img);
    const gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_sources_options other = o, invalid = o;
    other.threshold_abs = 4;
    invalid.connectivity = 6;
    for (int which = 0; which < 2; which++) {
        sources_caller cs[3];
        find_in_parts(ctx, img, 0, 3, &o, which ? &invalid : &other, cs);
        for (size_t p = 0; p < 3; p++) {
            const char *says = which ? (p == 2 ? "connectivity 6" : "1 of 3 callers failed") : "disagree";
            cr_assert(cs[p].st == GPUWS_ERR_INVALID_ARGUMENT && !cs[p].cat && strstr(cs[p].message, says),
                      "caller %zu: status %d, '%s' (want '%s')", p, cs[p].st, cs[p].message, says);
        }
    }
    free(img);
    gpuws_context_destroy(ctx);
}
