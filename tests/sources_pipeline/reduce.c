/* Rows of the find_sources suite: gpuws_find_sources_host_reduce and gpuws_find_sources_parts_reduce, the pipelines
 * over rows held by several callers (on their devices for the second), on threads that sum through shared memory
 * (test_sum_group: what MPI ranks do, without MPI; the mpirun test is tests/mpi/mpi_sources.c). Oracles:
 * gpuws_find_sources_host on the whole image; gpuws_find_sources_parts in one process on the same parts. */
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
    bool devices;  /* the rows on the device (gpuws_find_sources_parts_reduce), else the host pipeline */
    bool gathered; /* on the device, what travels gathered (test_sum_group_gather), else summed */
    size_t root;   /* on the device, the caller that gets the whole catalogue (or GPUWS_ALL_CALLERS) */
    gpuws_status st;
    gpuws_catalog *cat;
    char message[256];
} sources_caller;

/* The rows [first, first + rows) of img as an image part on a new stream of ctx (the stream NULL on failure). */
static gpuws_image_part device_part(gpuws_context *ctx, const float *img, size_t first, size_t rows)
{
    gpuws_image_part part = { NULL, NULL, rows };
    gpuws_buffer *b = NULL;
    const size_t bytes = rows * SPLIT_W * sizeof *img;
    if (gpuws_stream_create(ctx, &part.stream) == GPUWS_OK && rows && gpuws_buffer_create(ctx, bytes, &b) == GPUWS_OK)
        gpuws_buffer_write(b, 0, img + first * SPLIT_W, bytes);
    part.image = b;
    return part;
}

static void drop_part(gpuws_image_part *part)
{
    gpuws_buffer_destroy((gpuws_buffer *)part->image);
    gpuws_stream_destroy(part->stream);
}

static void *sources_caller_main(void *arg)
{
    sources_caller *c = arg;
    if (c->devices) { /* a part that failed to be made fails the call, which every caller then learns */
        gpuws_image_part part = device_part(c->ctx, c->image, c->first, c->rows);
        c->st =
            gpuws_find_sources_parts_reduce(&part, 1, SPLIT_W, &c->o, c->part, c->parts, c->root, test_sum_group_reduce,
                                            c->gathered ? test_sum_group_gather : NULL, c->g, &c->cat);
        drop_part(&part);
    } else {
        c->st = gpuws_find_sources_host_reduce(c->ctx, c->rows ? c->image + c->first * SPLIT_W : NULL, SPLIT_W, c->rows,
                                               &c->o, NULL, c->part, c->parts, test_sum_group_reduce, c->g, &c->cat);
    }
    snprintf(c->message, sizeof c->message, "%s", gpuws_last_error());
    return NULL;
}

/* parts callers with split_share's rows, all with options o but the last with `last`; devices: the pipeline on
 * their devices (gathered: with the gatherer), root getting the whole catalogue (the last caller saying last_root) */
static void find_in_parts(gpuws_context *ctx, const float *img, int aligned, size_t parts,
                          const gpuws_sources_options *o, const gpuws_sources_options *last, bool devices,
                          bool gathered, size_t root, size_t last_root, sources_caller *cs)
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
                                  .o = p + 1 == parts ? *last : *o,
                                  .devices = devices,
                                  .gathered = gathered,
                                  .root = p + 1 == parts ? last_root : root };
        pthread_create(&t[p], NULL, sources_caller_main, &cs[p]);
    }
    for (size_t p = 0; p < parts; p++) pthread_join(t[p], NULL);
    test_sum_group_free(g);
}

/* got against want's sources from0 .. from0 + count - 1 (same image): the same clip, threshold and sources, the ids,
 * npix and peaks exact; the fluxes and centres the same bits when `exact`, else within the summation bound of npix
 * positive pixels added in another order (a GPU's atomic sums have none). */
static void expect_sources(const gpuws_catalog *got, const gpuws_catalog *want, size_t from0, size_t count, bool exact,
                           const char *what)
{
    cr_assert(memcmp(&got->clip, &want->clip, sizeof got->clip) == 0 && got->threshold == want->threshold,
              "%s: the clip or threshold differs", what);
    cr_assert_eq(got->num_sources, count, "%s: %zu sources, wanted %zu", what, got->num_sources, count);
    for (size_t k = 0; k < count; k++) {
        const gpuws_source *g = &got->sources[k], *w = &want->sources[from0 + k];
        const double bound = 2.0 * (double)w->npix * DBL_EPSILON;
        cr_assert(g->id == w->id && g->npix == w->npix && g->peak == w->peak && g->peak_x == w->peak_x &&
                      g->peak_y == w->peak_y,
                  "%s, source %zu: id, npix or peak differ", what, k);
        if (exact) cr_assert(memcmp(g, w, sizeof *g) == 0, "%s, source %zu: not the bits", what, k);
        else
            cr_assert(fabs(g->flux - w->flux) <= bound * w->flux && fabs(g->x - w->x) <= 2 * bound * SPLIT_W &&
                          fabs(g->y - w->y) <= 2 * bound * SPLIT_H,
                      "%s, source %zu: flux %.17g (%.17g), x %.17g (%.17g), y %.17g (%.17g)", what, k, g->flux, w->flux,
                      g->x, w->x, g->y, w->y);
    }
}

/* got against the whole of want. */
static void expect_catalog(const gpuws_catalog *got, const gpuws_catalog *want, bool exact, const char *what)
{
    expect_sources(got, want, 0, want->num_sources, exact, what);
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
            find_in_parts(ctx, img, aligned, parts, &o, &o, false, false, 0, 0, cs);
            for (size_t p = 0; p < parts; p++) {
                const gpuws_catalog *got = cs[p].cat;
                char what[64];
                snprintf(what, sizeof what, "%zu parts, caller %zu", parts, p);
                cr_assert_eq(cs[p].st, GPUWS_OK, "%s: %s", what, cs[p].message);
                expect_catalog(got, want, aligned, what);
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
 * another: the test would hang), in the host pipeline and on the devices; on the devices too a root that differs,
 * or one that is no caller. */
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
    for (int devices = 0; devices < 2; devices++)
        for (int which = 0; which < (devices ? 4 : 2); which++) {
            sources_caller cs[3];
            const size_t last_root = which == 2 ? 1 : which == 3 ? 3 : GPUWS_ALL_CALLERS;
            find_in_parts(ctx, img, 0, 3, &o,
                          which == 1   ? &invalid
                          : which == 0 ? &other
                                       : &o,
                          devices, devices, GPUWS_ALL_CALLERS, last_root, cs);
            for (size_t p = 0; p < 3; p++) {
                const char *says = which == 1   ? (p == 2 ? "connectivity 6" : "1 of 3 callers failed")
                                   : which == 3 ? (p == 2 ? "root 3 of 3 callers" : "1 of 3 callers failed")
                                                : "disagree";
                cr_assert(cs[p].st == GPUWS_ERR_INVALID_ARGUMENT && !cs[p].cat && strstr(cs[p].message, says),
                          "%s pipeline, case %d, caller %zu: status %d, '%s' (want '%s')", devices ? "device" : "host",
                          which, p, cs[p].st, cs[p].message, says);
            }
        }
    free(img);
    gpuws_context_destroy(ctx);
}

/* 1 .. 3 callers on their devices (the first with no rows when there are more), shares on measurement blocks and not,
 * in three forms: the label image and every caller's catalogue gathered; no label image, the catalogue gathered into
 * the last caller; the label image, everything summed, the catalogue for the first caller. The callers that get the
 * whole catalogue get gpuws_find_sources_parts' in one process on the same parts (its bits on the CPU backend, whose
 * sums have one order), each other caller the sources that begin in its rows, and each its own rows of the labels
 * (the options that fail them: the test above). PoCL runs one caller (its kernel cache can fail an assertion when
 * threads' queues run one kernel at once). */
BACKEND_TEST(find_sources_parts, callers_on_threads_get_one_process_catalog)
{
    gpuws_context *ctx = test_open(*kind);
    float *img = malloc((size_t)SPLIT_W * SPLIT_H * sizeof *img);
    cr_assert(img);
    split_image(img);
    gpuws_device_info di;
    TEST_OK(gpuws_context_get_device_info(ctx, &di));
    const size_t most = *kind == GPUWS_BACKEND_OPENCL && di.type == GPUWS_DEVICE_CPU ? 1 : 3;
    for (size_t n = 1; n <= most; n++)
        for (int form = 0; form < 3; form++)
            for (int aligned = 0; aligned <= 1; aligned++) {
                const bool want = form != 1, gathered = form != 2;
                const size_t root = form == 0 ? GPUWS_ALL_CALLERS : form == 1 ? n - 1 : 0;
                gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
                o.want_labels = 1, o.threshold_abs = 1.5;
                gpuws_image_part all[3];
                for (size_t c = 0; c < n; c++) {
                    size_t first;
                    const size_t rows = split_share(aligned, n, c, &first);
                    all[c] = device_part(ctx, img, first, rows);
                }
                gpuws_catalog *one = NULL;
                TEST_OK(gpuws_find_sources_parts(all, n, SPLIT_W, &o, &one));
                for (size_t c = 0; c < n; c++) drop_part(&all[c]);
                o.want_labels = want;
                sources_caller cs[3];
                find_in_parts(ctx, img, aligned, n, &o, &o, true, gathered, root, root, cs);
                size_t sum = 0, others = 0; /* every caller's own sources; those of the callers other than root */
                for (size_t c = 0; c < n; c++) {
                    const gpuws_catalog *got = cs[c].cat;
                    char what[128];
                    snprintf(what, sizeof what, "caller %zu of %zu (aligned %d, form %d)", c, n, aligned, form);
                    cr_assert_eq(cs[c].st, GPUWS_OK, "%s: %s", what, cs[c].message);
                    size_t own0 = 0, own = split_own_sources(one->labels, SPLIT_W, cs[c].first, cs[c].rows, &own0);
                    sum += own;
                    if (root == GPUWS_ALL_CALLERS || root == c) own0 = 0, own = one->num_sources;
                    else others += own;
                    expect_sources(got, one, own0, own, *kind == GPUWS_BACKEND_CPU, what);
                    if (want && cs[c].rows)
                        cr_assert(memcmp(got->labels, one->labels + cs[c].first * SPLIT_W,
                                         cs[c].rows * SPLIT_W * sizeof *got->labels) == 0,
                                  "%s: its rows of labels differ", what);
                    else cr_assert_null(got->labels, "%s: labels it does not hold or want", what);
                    gpuws_catalog_free(cs[c].cat);
                }
                cr_assert_eq(sum, one->num_sources, "form %d, %zu callers: own sources %zu of %zu", form, n, sum,
                             one->num_sources);
                if (n == 3 && root != GPUWS_ALL_CALLERS)
                    cr_assert(others > 0, "form %d: the callers other than root found no source", form);
                gpuws_catalog_free(one);
            }
    free(img);
    gpuws_context_destroy(ctx);
}
