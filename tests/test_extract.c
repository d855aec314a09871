/* extract: SEP's source extraction (sep.extract) on every backend.
 *
 * Truth: SEP itself (ctest extract_sep: tests/sep/compare_extract.py, with the installed SEP), whose catalogue the
 * CPU backend's reference reproduces, and here SEP 1.4.1's and 1.2.1's catalogues of a small sky (tests/data), where
 * the two differ (sep_version); then the reference (the CPU backend) is the oracle for every backend. What must hold
 * (docs/algorithms/extract.md): every backend thresholds the same pixels (the per-pixel arithmetic is one text,
 * extract_pixel.h, with SEP's float roundings spelled out, and no fused operations) and makes the catalogue with
 * the same host code from the same records in raster order, so the catalogues are the same bit for bit: count,
 * order, every column; and so are the segmentation maps, for any number of host threads (knob extract_threads).
 * Then the definitions on small images whose answer is known: connectivity, minarea, SEP's order of objects, the
 * flags, the segmentation map, an empty sky. */
#include "extract_support.h"
#include "common/cases.h"        /* gpuws__case_extract_sky */
#include "extract/extract_ref.h" /* the host steps alone, on records made here */

#include <math.h>
#include <pthread.h>

#include "extract/extract_pixel.h" /* after <math.h>: it includes nothing */
#include "extract/extract_clean.h" /* cleaning's pair test, which the device shares */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- agreement with the reference ---- */

enum { NOISE_MAP, NOISE_CONST, NOISE_NONE };

typedef struct {
    gpuws_backend_kind backend;
    size_t w, h;
    int noise, filter_type, filter5, masked, connectivity, minarea;
    double thresh, deblend_cont;
    int clean;
    double gain;
    int sep_version; /* GPUWS_SEP_1_4 (0) or GPUWS_SEP_1_2 */
} sky_case;

ParameterizedTestParameters(extract, agrees_with_reference)
{
    static const sky_case shapes[] = {
        { 0, 300, 200, NOISE_MAP, GPUWS_FILTER_MATCHED, 0, 0, 8, 5, 1.5, 1.0, 0, 0.0, 0 },   /* matched, no deblend */
        { 0, 300, 200, NOISE_MAP, GPUWS_FILTER_CONV, 0, 1, 8, 5, 1.5, 1.0, 0, 2.0, 0 },      /* mask, gain */
        { 0, 257, 190, NOISE_MAP, GPUWS_FILTER_NONE, 0, 0, 4, 3, 2.0, 1.0, 0, 0.0, 0 },      /* 4-connectivity */
        { 0, 257, 190, NOISE_CONST, GPUWS_FILTER_MATCHED, 1, 0, 8, 5, 2.5, 1.0, 0, 0.0, 0 }, /* one σ: conv, 5x5 */
        { 0, 200, 150, NOISE_NONE, GPUWS_FILTER_CONV, 0, 0, 8, 8, 12.0, 1.0, 0, 0.0, 0 },    /* absolute threshold */
        { 0, 300, 200, NOISE_MAP, GPUWS_FILTER_MATCHED, 0, 0, 8, 5, 1.5, 1.0, 1, 0.0, 0 },   /* cleaning */
        { 0, 300, 200, NOISE_MAP, GPUWS_FILTER_MATCHED, 0, 0, 8, 5, 1.5, 0.005, 1, 0.0, 0 }, /* SEP's defaults */
        { 0, 257, 190, NOISE_CONST, GPUWS_FILTER_CONV, 0, 1, 8, 3, 1.2, 0.001, 0, 1.5, 0 },  /* deblending, mask */
        { 0, 300, 200, NOISE_MAP, GPUWS_FILTER_MATCHED, 0, 1, 8, 5, 1.5, 0.005, 1, 0.0, GPUWS_SEP_1_2 }, /* SEP 1.2 */
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(sky_case *c, extract, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    gpuws_context *ref = test_open(GPUWS_BACKEND_CPU);
    const size_t n = c->w * c->h;
    float *x = malloc(n * sizeof *x), *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    uint8_t *mask = NULL;
    cr_assert(x && back && rms);
    gpuws__case_extract_sky(c->w, c->h, test_seed(false) + c->w, 3, x, back, rms);
    for (size_t i = 0; i < n; i++) rms[i] += (float)(0.002 * (double)(i % c->w)); /* a noise map that varies */
    if (c->masked) {
        mask = calloc(n, 1);
        cr_assert(mask);
        uint64_t s = 7;
        for (size_t i = 0; i < n; i++) mask[i] = test_rand_uniform(&s) < 0.02;
        for (size_t r = 50; r < 90; r++)
            for (size_t q = 100; q < 170; q++) mask[r * c->w + q] = 1;
    }
    static const float k5[25] = { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1 };
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = c->thresh;
    o.err = c->noise == NOISE_CONST ? 5.0 : 0.0;
    o.filter_type = c->filter_type;
    if (c->filter5) {
        o.filter = k5;
        o.filter_w = o.filter_h = 5;
    }
    o.connectivity = c->connectivity;
    o.minarea = c->minarea;
    o.deblend_cont = c->deblend_cont;
    o.clean = c->clean;
    o.gain = c->gain;
    o.sep_version = c->sep_version;
    const float *r = c->noise == NOISE_MAP ? rms : NULL;
    result want = run(ref, x, back, r, mask, c->w, c->h, &o);
    result got = run(ctx, x, back, r, mask, c->w, c->h, &o);
    char what[160];
    snprintf(what, sizeof what, "%s %zux%zu noise %d filter %d conn %d deblend_cont %g clean %d sep_version %d",
             test_backend_name(c->backend), c->w, c->h, c->noise, c->filter_type, c->connectivity, c->deblend_cont,
             c->clean, c->sep_version);
    cr_assert_gt(want.cat->num_objects, 10, "%s: the sky has only %zu objects", what, want.cat->num_objects);
    expect_same(what, &got, &want, n);
    result_free(&want);
    result_free(&got);
    free(x);
    free(back);
    free(rms);
    free(mask);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

/* extract's sky (gpuws__case_extract_sky) of TW x TH pixels from seed, NaN in the first nan_cols columns: the image,
 * its level and its σ map, for the tests of the host steps on threads. */
enum { TW = 1024, TH = 768 };
typedef struct {
    float *x, *back, *rms;
} sky;

static sky sky_make(uint64_t seed, size_t nan_cols)
{
    const size_t n = (size_t)TW * TH;
    sky k = { malloc(n * sizeof(float)), malloc(n * sizeof(float)), malloc(n * sizeof(float)) };
    cr_assert(k.x && k.back && k.rms);
    gpuws__case_extract_sky(TW, TH, seed, nan_cols, k.x, k.back, k.rms);
    return k;
}

static void sky_free(sky *k)
{
    free(k->x);
    free(k->back);
    free(k->rms);
}

/* The sky crowded with blended pairs that deblending splits (and whose faint pixels gatherup draws for): a pair
 * every 36 pixels, its stars 3 to 7 pixels apart, one of them fainter, from *s. */
static void add_blended_pairs(float *x, uint64_t *s)
{
    for (int py = 20; py < TH - 20; py += 36)
        for (int pc = 20; pc < TW - 20; pc += 36) {
            const double d = 3.0 + 4.0 * test_rand_uniform(s), a1 = 100.0 + 400.0 * test_rand_uniform(s),
                         a2 = a1 * (0.2 + 0.8 * test_rand_uniform(s));
            for (int r = py - 12; r <= py + 12; r++)
                for (int c = pc - 12; c <= pc + 12; c++) {
                    const double d1 = (c - pc) * (c - pc) + (r - py) * (r - py),
                                 d2 = (c - pc - d) * (c - pc - d) + (r - py) * (r - py);
                    x[(size_t)r * TW + c] += (float)(a1 * exp(-d1 / 8.0) + a2 * exp(-d2 / 8.0));
                }
        }
}

/* The host steps on threads (knob extract_threads, which on the CPU backend divides the pixel steps' rows too): the
 * catalogue and the map with 4 threads are those of one thread, bit for bit. What could differ: the objects' order
 * (components and objects are made in any order on threads) and deblending's random numbers, which SEP draws from
 * one seed in component order (a component finished on a thread must start from the seed that the draws of every
 * component before it leave), and the components' thresholds, the means of their pixels' (a σ map, SEP 1.4), which
 * threads work out for the components of their share of the pixels; on the CPU backend, the records that each
 * part of the rows writes from the place the parts before it leave. So the sky is crowded with blended pairs that
 * deblending splits and whose faint pixels gatherup draws for, beside the case's sky, and its σ map varies, so that
 * each component's mean is its own. */
BACKEND_TEST(extract, threads_give_the_catalogue_of_one_thread)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_context *ref = test_open(GPUWS_BACKEND_CPU);
    test_tune(ref, "extract_threads", "1");
    test_tune(ctx, "extract_threads", "4");
    const size_t n = (size_t)TW * TH;
    uint64_t s = test_seed(false);
    sky k = sky_make(s, 3);
    float *x = k.x, *back = k.back, *rms = k.rms;
    for (size_t i = 0; i < n; i++) rms[i] += (float)(0.002 * (double)(i % TW) + 0.001 * (double)(i / TW));
    add_blended_pairs(x, &s);
    const gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT; /* SEP's defaults: deblending and cleaning */
    result want = run(ref, x, back, rms, NULL, TW, TH, &o);
    result got = run(ctx, x, back, rms, NULL, TW, TH, &o);
    size_t merged = 0;
    for (size_t i = 0; i < want.cat->num_objects; i++) merged += (want.cat->objects[i].flag & GPUWS_OBJ_MERGED) != 0;
    cr_assert_gt(merged, 300, "only %zu of %zu objects come from deblending", merged, want.cat->num_objects);
    char what[96];
    snprintf(what, sizeof what, "%s, 4 threads against 1", test_backend_name(*kind));
    expect_same(what, &got, &want, n);
    result_free(&want);
    result_free(&got);
    sky_free(&k);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

/* Two threads extract at once on one context, each on a stream of its own (docs/threads.md allows it): the device
 * steps share the context, the host steps run side by side (one call on the library's kept threads, the other on
 * threads of its own). Each catalogue and map are those of the same sky extracted alone, bit for bit, round after
 * round. */
typedef struct {
    gpuws_context *ctx;
    gpuws_buffer *img, *back, *rms, *seg;
    int rounds;
    result got[3];
    gpuws_status st;
} side_by_side;

static void *extract_rounds(void *arg)
{
    side_by_side *j = arg;
    gpuws_stream *s = NULL;
    j->st = gpuws_stream_create(j->ctx, &s);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.back = j->back, o.rms = j->rms, o.segmap = j->seg;
    for (int r = 0; r < j->rounds && !j->st; r++) {
        result *g = &j->got[r];
        if ((j->st = gpuws_extract(s, TW, TH, j->img, &o, &g->cat))) break;
        if (!(g->seg = malloc((size_t)TW * TH * sizeof *g->seg))) {
            j->st = GPUWS_ERR_OUT_OF_MEMORY;
            break;
        }
        if (!(j->st = gpuws_buffer_read_async(s, j->seg, 0, g->seg, (size_t)TW * TH * sizeof *g->seg)))
            j->st = gpuws_stream_synchronize(s);
    }
    gpuws_stream_destroy(s);
    return NULL;
}

BACKEND_TEST(extract, extractions_on_two_threads_at_once_give_each_its_catalogue)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t n = (size_t)TW * TH;
    sky k[2] = { sky_make(test_seed(false), 3), sky_make(test_seed(false) + 1, 0) };
    side_by_side j[2];
    result want[2];
    const gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT; /* SEP's defaults: deblending and cleaning */
    for (int t = 0; t < 2; t++) {
        want[t] = run(ctx, k[t].x, k[t].back, k[t].rms, NULL, TW, TH, &o);
        memset(&j[t], 0, sizeof j[t]);
        j[t].ctx = ctx, j[t].rounds = 3;
        j[t].img = test_buffer_from(ctx, k[t].x, n * sizeof(float));
        j[t].back = test_buffer_from(ctx, k[t].back, n * sizeof(float));
        j[t].rms = test_buffer_from(ctx, k[t].rms, n * sizeof(float));
        j[t].seg = test_buffer(ctx, n * sizeof(int32_t));
    }
    cr_assert_neq(want[0].cat->num_objects, want[1].cat->num_objects, "two skies of one catalogue size");
    pthread_t other;
    cr_assert_eq(pthread_create(&other, NULL, extract_rounds, &j[1]), 0);
    extract_rounds(&j[0]);
    pthread_join(other, NULL);
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(j[t].st, GPUWS_OK, "thread %d: %s", t, gpuws_status_string(j[t].st));
        for (int r = 0; r < j[t].rounds; r++) {
            char what[96];
            snprintf(what, sizeof what, "%s, thread %d, round %d, beside the other thread", test_backend_name(*kind), t,
                     r);
            expect_same(what, &j[t].got[r], &want[t], n);
            result_free(&j[t].got[r]);
        }
        result_free(&want[t]);
        gpuws_buffer_destroy(j[t].img);
        gpuws_buffer_destroy(j[t].back);
        gpuws_buffer_destroy(j[t].rms);
        gpuws_buffer_destroy(j[t].seg);
        sky_free(&k[t]);
    }
    gpuws_context_destroy(ctx);
}

/* The records grouped by component on the device (knob extract_group: auto groups there on GPUs, on the host's
 * threads on CPU OpenCL devices) give the catalogue and the map of the host's grouping, bit for bit: a radix sort of
 * (label, record) pairs that keeps raster order within each label, four bits a pass. Uniform noise above 0.4 in
 * 4-connectivity makes more than 2^16 components (five passes), cut anywhere by the sort's tiles of 2048 records;
 * then the case's sky, whose components deblending splits. */
BACKEND_TEST(extract, records_grouped_on_the_device_give_the_host_grouping)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    gpuws_context *ctx = test_open(*kind), *ref = test_open(*kind);
    test_tune(ctx, "extract_group", "device");
    test_tune(ref, "extract_group", "host");
    const size_t w = 1100, h = 700, n = w * h;
    float *x = malloc(n * sizeof *x);
    uint8_t *mask = malloc(n);
    cr_assert(x && mask);
    uint64_t s = test_seed(false);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(2.0 * test_rand_uniform(&s) - 1.0);
        mask[i] = x[i] > 0.4f;
    }
    gpuws_buffer *dm = test_buffer_from(ref, mask, n), *dl = test_buffer(ref, n * sizeof(int32_t));
    size_t nl = 0;
    cr_assert_eq(gpuws_label(NULL, w, h, dm, 4, dl, &nl), GPUWS_OK, "%s", gpuws_last_error());
    cr_assert_gt(nl, (size_t)1 << 16, "only %zu components: fewer than five passes", nl);
    gpuws_buffer_destroy(dm);
    gpuws_buffer_destroy(dl);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 0.4, o.filter_type = GPUWS_FILTER_NONE, o.connectivity = 4, o.minarea = 1;
    result want = run(ref, x, NULL, NULL, NULL, w, h, &o);
    result got = run(ctx, x, NULL, NULL, NULL, w, h, &o);
    char what[96];
    snprintf(what, sizeof what, "%s, noise: the device's grouping against the host's", test_backend_name(*kind));
    expect_same(what, &got, &want, n);
    result_free(&want);
    result_free(&got);
    free(x);
    free(mask);
    sky k = sky_make(test_seed(false), 3);
    const gpuws_extract_options d = GPUWS_EXTRACT_OPTIONS_INIT;
    want = run(ref, k.x, k.back, k.rms, NULL, TW, TH, &d);
    got = run(ctx, k.x, k.back, k.rms, NULL, TW, TH, &d);
    snprintf(what, sizeof what, "%s, sky: the device's grouping against the host's", test_backend_name(*kind));
    expect_same(what, &got, &want, (size_t)TW * TH);
    result_free(&want);
    result_free(&got);
    sky_free(&k);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

/* The components that deblending cannot split, found and put in SEP's scan order on the device (knob
 * extract_chain, where the device groups the records: extract_chain.h), give the catalogue and the map of the host's
 * deblending of every component, bit for bit: the device counts the local maxima above a first level a little
 * lower than the host's, and gives each chained component its threshold, the mean of its pixels' with a σ map, as
 * the host makes it. The crowded sky of blended pairs makes components that split and many that do not, under each
 * threshold rule (a σ map as SEP 1.4 and 1.2, one σ, an absolute threshold), both connectivities and a tree of one
 * level (nothing splits), and a knob that leaves the components of more than 16 pixels to the host. Every case must
 * chain some components, and the sky's blends must leave some to the host. Besides the catalogue (which a pixel
 * order rarely changes), the host deblends each chained component too (knob extract_chain_check): one object, the
 * component, its pixels in the device's order. The device measures every chained object as well (its analysis,
 * mthresh and flux variance, which the catalogue and the check compare; a gain brings in the Poisson terms, and a
 * mask of scattered pixels flags objects that touch one). */
/* The chain tests' contexts: *ctx chains components on the device and has the host check each chain and its
 * measures (knob extract_chain_check); *ref groups the records on the device too and chains none. */
static void chain_contexts(gpuws_backend_kind kind, gpuws_context **ctx, gpuws_context **ref)
{
    *ctx = test_open(kind), *ref = test_open(kind);
    test_tune(*ctx, "extract_group", "device");
    test_tune(*ctx, "extract_chain_check", "1");
    test_tune(*ref, "extract_group", "device");
    test_tune(*ref, "extract_chain", "0");
}

/* The chained run's catalogue and map (got, from chain_contexts' ctx) those of the host's (want, from its ref), bit
 * for bit, for the image described by `image`; then the results and the contexts freed. */
static void chained_like_the_host(gpuws_backend_kind kind, const char *image, result *got, result *want, size_t n,
                                  gpuws_context *ctx, gpuws_context *ref)
{
    char what[128];
    snprintf(what, sizeof what, "%s, %s: chained against the host's", test_backend_name(kind), image);
    expect_same(what, got, want, n);
    result_free(want);
    result_free(got);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

typedef struct {
    gpuws_backend_kind backend;
    int noise, sep_version, connectivity, nthresh;
    int most;    /* the knob extract_chain: the largest component chained (0: auto) */
    double gain; /* 0: none */
    int masked;  /* 0.2% of the pixels masked */
} chain_case;

ParameterizedTestParameters(extract, components_chained_on_the_device_give_the_host_catalogue)
{
    static const chain_case shapes[] = {
        { 0, NOISE_MAP, GPUWS_SEP_1_4, 8, 32, 0, 0.0, 0 },   { 0, NOISE_MAP, GPUWS_SEP_1_2, 8, 32, 0, 0.0, 0 },
        { 0, NOISE_CONST, GPUWS_SEP_1_4, 4, 32, 0, 0.0, 0 }, { 0, NOISE_NONE, GPUWS_SEP_1_4, 8, 16, 0, 0.0, 0 },
        { 0, NOISE_MAP, GPUWS_SEP_1_4, 8, 1, 0, 0.0, 0 },    { 0, NOISE_MAP, GPUWS_SEP_1_4, 8, 32, 16, 0.0, 0 },
        { 0, NOISE_MAP, GPUWS_SEP_1_4, 8, 32, 0, 2.0, 1 },   { 0, NOISE_CONST, GPUWS_SEP_1_4, 4, 32, 0, 1.5, 1 },
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(chain_case *c, extract, components_chained_on_the_device_give_the_host_catalogue)
{
    if (c->backend == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    gpuws_context *ctx, *ref;
    chain_contexts(c->backend, &ctx, &ref);
    char most[24];
    snprintf(most, sizeof most, "%d", c->most);
    if (c->most) test_tune(ctx, "extract_chain", most);
    uint64_t s = test_seed(false);
    sky k = sky_make(s, 3);
    for (size_t i = 0; i < (size_t)TW * TH; i++) k.rms[i] += (float)(0.002 * (double)(i % TW));
    add_blended_pairs(k.x, &s);
    uint8_t *mask = c->masked ? calloc((size_t)TW * TH, 1) : NULL;
    for (size_t i = 0; mask && i < (size_t)TW * TH; i++) mask[i] = test_rand_uniform(&s) < 0.002;
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT; /* SEP's defaults: deblending and cleaning */
    o.sep_version = c->sep_version, o.connectivity = c->connectivity, o.deblend_nthresh = c->nthresh;
    o.gain = c->gain;
    const float *rms = c->noise == NOISE_MAP ? k.rms : NULL;
    if (c->noise == NOISE_CONST) o.err = 5.0;
    if (c->noise == NOISE_NONE) o.thresh = 25.0;
    result want = run(ref, k.x, k.back, rms, mask, TW, TH, &o);
    cr_assert_eq(gpuws__extract_chained_last(), 0, "extract_chain 0 chained %zu components",
                 gpuws__extract_chained_last());
    result got = run(ctx, k.x, k.back, rms, mask, TW, TH, &o);
    const size_t chained = gpuws__extract_chained_last(), n = want.cat->num_objects;
    cr_assert_eq(gpuws__extract_measured_last(), chained, "%zu of the %zu chained objects measured on the device",
                 gpuws__extract_measured_last(), chained);
    cr_assert_eq(gpuws__extract_chain_mismatches_last(), 0,
                 "%zu of the %zu components chained on the device are not what the host's deblending makes of them",
                 gpuws__extract_chain_mismatches_last(), chained);
    size_t merged = 0;
    for (size_t i = 0; i < n; i++) merged += (want.cat->objects[i].flag & GPUWS_OBJ_MERGED) != 0;
    cr_assert_gt(chained, 100, "only %zu components chained on the device", chained);
    if (c->most) { /* the components larger than the knob's are left to the host: fewer chained than by default */
        gpuws_context *all = test_open(c->backend);
        test_tune(all, "extract_group", "device");
        result more = run(all, k.x, k.back, rms, mask, TW, TH, &o);
        cr_assert_lt(chained, gpuws__extract_chained_last(), "%zu components chained up to %d pixels, %zu by default",
                     chained, c->most, gpuws__extract_chained_last());
        result_free(&more);
        gpuws_context_destroy(all);
    }
    /* without the check the host reads only the records of the components it works on, which gives the same */
    gpuws_context *fast = test_open(c->backend);
    test_tune(fast, "extract_group", "device");
    if (c->most) test_tune(fast, "extract_chain", most);
    result quick = run(fast, k.x, k.back, rms, mask, TW, TH, &o);
    size_t all = 0;
    const size_t read = gpuws__extract_compact_last(&all);
    cr_assert_eq(gpuws__extract_chained_last(), chained, "%zu components chained without the check, %zu with it",
                 gpuws__extract_chained_last(), chained);
    cr_assert_lt(read, all, "the host read %zu of the %zu records with %zu components chained", read, all, chained);
    if (c->nthresh > 1) cr_assert_gt(merged, 50, "only %zu of %zu objects come from deblending", merged, n);
    size_t blank = 0;
    for (size_t i = 0; i < n; i++) blank += (want.cat->objects[i].flag & GPUWS_OBJ_BLANK) != 0;
    if (c->masked) cr_assert_gt(blank, 50, "only %zu of %zu objects touch a masked pixel", blank, n);
    char what[128];
    snprintf(what, sizeof what,
             "%s, noise %d, SEP %d, %d-connectivity, %d levels, chained up to %d, gain %g: against the host's",
             test_backend_name(c->backend), c->noise, c->sep_version, c->connectivity, c->nthresh, c->most, c->gain);
    expect_same(what, &got, &want, (size_t)TW * TH);
    snprintf(what, sizeof what, "%s, noise %d, SEP %d, %d-connectivity, %d levels, chained up to %d, gain %g, compact",
             test_backend_name(c->backend), c->noise, c->sep_version, c->connectivity, c->nthresh, c->most, c->gain);
    expect_same(what, &quick, &want, (size_t)TW * TH);
    result_free(&quick);
    result_free(&want);
    result_free(&got);
    sky_free(&k);
    free(mask);
    gpuws_context_destroy(fast);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

/* Isolated round blobs, each one local maximum: the device chains and measures every component, so the host reads
 * none of their records (only the labels' starts and words); the catalogue and the map are still the host's. Then a
 * bar with two peaks across two of the blobs, one component that deblending splits (into 4 objects): its records
 * alone are read. */
BACKEND_TEST(extract, components_all_measured_on_the_device_leave_no_record_to_read)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    enum { W = 96, H = 64 };
    static float x[W * H];
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 1.0, o.filter_type = GPUWS_FILTER_NONE;
    gpuws_context *ctx, *ref;
    chain_contexts(*kind, &ctx, &ref);
    test_tune(ctx, "extract_chain_check", "0");
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < W * H; i++) x[i] = 0.0f;
        for (int by = 8; by < H; by += 16)
            for (int bx = 8; bx < W; bx += 16)
                for (int dy = -3; dy <= 3; dy++)
                    for (int dx = -3; dx <= 3; dx++)
                        x[(by + dy) * W + bx + dx] = 20.0f * expf(-(float)(dx * dx + dy * dy) / 4.0f) + 0.01f * bx;
        if (pass) /* a pair of peaks 6 pixels apart on a plateau, over the blobs at (40, 40) and (56, 40) */
            for (int dy = -2; dy <= 2; dy++)
                for (int dx = -6; dx <= 6; dx++)
                    x[(40 + dy) * W + 48 + dx] = 5.0f + 30.0f * expf(-(float)((abs(dx) - 3) * (abs(dx) - 3) + dy * dy));
        result want = run(ref, x, NULL, NULL, NULL, W, H, &o);
        result got = run(ctx, x, NULL, NULL, NULL, W, H, &o);
        size_t all = 0;
        const size_t read = gpuws__extract_compact_last(&all);
        cr_assert_gt(want.cat->num_objects, 20, "only %zu objects", want.cat->num_objects);
        if (pass == 0) cr_assert(read == 0 && all > 500, "the host read %zu of %zu records", read, all);
        else cr_assert(read > 0 && read < all / 4, "the host read %zu of %zu records", read, all);
        expect_same(pass ? "all measured but a split pair" : "all measured", &got, &want, (size_t)W * H);
        result_free(&want);
        result_free(&got);
    }
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}

/* The shapes that the chains' two ways and the first level's margin must get right, each a small component of its
 * own (absolute threshold 1, no filter): a U, whose two arms Lutz's scan holds as two partial objects until the
 * bottom row joins them; a ring, whose top row's object runs down two legs that the bottom row joins again (the
 * scan's 's' markers); values rising along each shape's path, so that each has one local maximum and is chained;
 * and a bright core with a faint bump of 3 pixels just above the first level, joined by one pixel below it, which
 * the tree splits (deblend_cont 0) and so must not be chained. The host deblends every chained component again
 * (knob extract_chain_check). */
BACKEND_TEST(extract, chains_of_rings_and_arms_and_the_first_level_agree_with_the_host)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    enum { CW = 256, CH = 72 };
    static float x[CW * CH];
    memset(x, 0, sizeof x);
    int shapes = 0;
    for (int oy = 2; oy + 8 < CH; oy += 10)
        for (int ox = 2; ox + 8 < CW; ox += 10, shapes++) {
            const int kind_of = shapes % 3;
            if (kind_of == 0) { /* a U: down the left arm, along the bottom, up the right arm */
                int v = 0;
                for (int y = 0; y < 4; y++) x[(oy + y) * CW + ox] = 10.0f + (float)v++;
                for (int c = 1; c < 4; c++) x[(oy + 3) * CW + ox + c] = 10.0f + (float)v++;
                for (int y = 2; y >= 0; y--) x[(oy + y) * CW + ox + 3] = 10.0f + (float)v++;
            } else if (kind_of == 1) { /* a ring 5 x 5: right along the top, down, left along the bottom, up */
                int v = 0;
                for (int c = 0; c < 5; c++) x[oy * CW + ox + c] = 10.0f + (float)v++;
                for (int y = 1; y < 5; y++) x[(oy + y) * CW + ox + 4] = 10.0f + (float)v++;
                for (int c = 3; c >= 0; c--) x[(oy + 4) * CW + ox + c] = 10.0f + (float)v++;
                for (int y = 3; y >= 1; y--) x[(oy + y) * CW + ox] = 10.0f + (float)v++;
            } else { /* a core 3 x 3 (peak 100), a bridge pixel at 1.05, a bump of 3 at 1.4 */
                for (int y = 0; y < 3; y++)
                    for (int c = 0; c < 3; c++) x[(oy + y) * CW + ox + c] = y == 1 && c == 1 ? 100.0f : 50.0f;
                x[(oy + 1) * CW + ox + 3] = 1.05f;
                for (int y = 0; y < 3; y++) x[(oy + y) * CW + ox + 4] = 1.4f;
            }
        }
    gpuws_context *ctx, *ref;
    chain_contexts(*kind, &ctx, &ref);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 1.0, o.filter_type = GPUWS_FILTER_NONE, o.minarea = 3, o.deblend_cont = 0.0, o.clean = 0;
    result want = run(ref, x, NULL, NULL, NULL, CW, CH, &o);
    result got = run(ctx, x, NULL, NULL, NULL, CW, CH, &o);
    const size_t chained = gpuws__extract_chained_last(), bumps = (size_t)shapes / 3;
    size_t merged = 0;
    for (size_t i = 0; i < want.cat->num_objects; i++) merged += (want.cat->objects[i].flag & GPUWS_OBJ_MERGED) != 0;
    cr_assert_eq(merged, 2 * bumps, "the host's tree split %zu objects out of the %zu bumped cores, not 2 each", merged,
                 bumps);
    cr_assert_eq(chained, (size_t)shapes - bumps, "%zu components chained; the %d rings and arms, not the cores",
                 chained, shapes - (int)bumps);
    cr_assert_eq(gpuws__extract_chain_mismatches_last(), 0,
                 "%zu of the %zu chained components are not what the host's deblending makes of them",
                 gpuws__extract_chain_mismatches_last(), chained);
    chained_like_the_host(*kind, "rings, arms, bumped cores", &got, &want, (size_t)CW * CH, ctx, ref);
}

/* Where minarea is larger than the device's array for mthresh (EX_MOM_HEAP, 64), the device still chains the
 * components and the host measures their objects itself: round blobs of 110 to 180 pixels with minarea 90, each one
 * run of pixels a row, all chained, none measured on the device, the catalogue and map the host's. */
BACKEND_TEST(extract, chained_objects_past_the_devices_minarea_are_measured_on_the_host)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    enum { BW = 256, BH = 48 };
    static float x[BW * BH];
    for (int y = 0; y < BH; y++)
        for (int c = 0; c < BW; c++) {
            const int b = c / 32, cx = 32 * b + 16, cy = 24;
            const double d = (c - cx) * (c - cx) + (y - cy) * (y - cy);
            x[y * BW + c] = (float)((100.0 + 10.0 * b) * exp(-d / 40.0));
        }
    gpuws_context *ctx, *ref;
    chain_contexts(*kind, &ctx, &ref);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 40.0, o.filter_type = GPUWS_FILTER_NONE, o.minarea = 90;
    result want = run(ref, x, NULL, NULL, NULL, BW, BH, &o);
    result got = run(ctx, x, NULL, NULL, NULL, BW, BH, &o);
    cr_assert_eq(want.cat->num_objects, 8, "%zu objects, not the 8 blobs", want.cat->num_objects);
    cr_assert_eq(gpuws__extract_chained_last(), 8, "%zu of the 8 blobs chained", gpuws__extract_chained_last());
    cr_assert_eq(gpuws__extract_measured_last(), 0, "%zu measured on the device", gpuws__extract_measured_last());
    cr_assert_eq(gpuws__extract_chain_mismatches_last(), 0, "%zu chained blobs differ from the host's",
                 gpuws__extract_chain_mismatches_last());
    chained_like_the_host(*kind, "minarea 90", &got, &want, (size_t)BW * BH, ctx, ref);
}

/* Every shape the scan can meet: uniform noise thresholded near 8-connected percolation makes components of every
 * form (holes, rings, combs, spirals), and with a tree of one level nothing splits, so every component of up to
 * 256 pixels (knob extract_chain auto) is chained, whatever its maxima and its shape. The host scans each again
 * (knob extract_chain_check): the same pixels in the same order, on both connectivities. */
BACKEND_TEST(extract, chains_of_random_components_are_the_host_scans)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend groups the records on the host only");
    const size_t w = 700, h = 500, n = w * h;
    float *x = malloc(n * sizeof *x);
    cr_assert(x);
    uint64_t s = test_seed(false);
    for (size_t i = 0; i < n; i++) x[i] = (float)test_rand_uniform(&s);
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "extract_group", "device");
    test_tune(ctx, "extract_chain_check", "1");
    for (int conn = 4; conn <= 8; conn += 4) {
        gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
        o.thresh = conn == 8 ? 0.62 : 0.45, o.filter_type = GPUWS_FILTER_NONE, o.minarea = 1;
        o.deblend_nthresh = 1, o.clean = 0, o.connectivity = conn;
        result got = run(ctx, x, NULL, NULL, NULL, w, h, &o);
        const size_t chained = gpuws__extract_chained_last();
        size_t small = 0;
        for (size_t i = 0; i < got.cat->num_objects; i++) small += got.cat->objects[i].npix <= 256;
        cr_assert_gt(chained, 5000, "%d-connectivity: only %zu components chained", conn, chained);
        cr_assert_eq(chained, small, "%d-connectivity: %zu components chained of the %zu of up to 256 pixels", conn,
                     chained, small);
        cr_assert_eq(gpuws__extract_chain_mismatches_last(), 0,
                     "%d-connectivity: %zu of the %zu chained components are not the host's scan of them", conn,
                     gpuws__extract_chain_mismatches_last(), chained);
        result_free(&got);
    }
    gpuws_context_destroy(ctx);
    free(x);
}

/* Cleaning on threads (knob extract_threads): each object's fate depends on the objects before it, in catalogue
 * order, so the pairs worked out on threads must take effect in that order; the catalogue and the map on 2, 3 and 7
 * threads are those of one, bit for bit. The sky is crowded with bright stars whose wings hold many faint objects
 * that cleaning removes, all over the catalogue. */
static void add_stars_with_wings(float *x, uint64_t *s)
{
    for (int py = 30; py < TH - 30; py += 60) /* a bright star every 60 pixels, faint ones around it */
        for (int pc = 30; pc < TW - 30; pc += 60) {
            const double a1 = 2000.0 + 8000.0 * test_rand_uniform(s);
            for (int r = py - 30; r < py + 30; r++)
                for (int c = pc - 30; c < pc + 30; c++) {
                    const double d = (c - pc) * (c - pc) + (r - py) * (r - py);
                    x[(size_t)r * TW + c] += (float)(a1 * exp(-d / 18.0));
                }
            for (int f = 0; f < 8; f++) {
                const int fr = py - 14 + (int)(28.0 * test_rand_uniform(s)),
                          fc = pc - 14 + (int)(28.0 * test_rand_uniform(s));
                for (int r = fr - 3; r <= fr + 3; r++)
                    for (int c = fc - 3; c <= fc + 3; c++) {
                        const double d = (c - fc) * (c - fc) + (r - fr) * (r - fr);
                        x[(size_t)r * TW + c] += (float)(40.0 * exp(-d / 2.0));
                    }
            }
        }
}

Test(extract, cleaning_gives_the_catalogue_of_one_thread_on_any_number_of_threads)
{
    const size_t n = (size_t)TW * TH;
    uint64_t s = test_seed(false);
    sky k = sky_make(s, 0);
    float *x = k.x;
    add_stars_with_wings(x, &s);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT; /* SEP's defaults: deblending and cleaning */
    gpuws_context *ref = test_open(GPUWS_BACKEND_CPU);
    test_tune(ref, "extract_threads", "1");
    o.clean = 0;
    result unclean = run(ref, x, k.back, k.rms, NULL, TW, TH, &o);
    o.clean = 1;
    result want = run(ref, x, k.back, k.rms, NULL, TW, TH, &o);
    const size_t before = unclean.cat->num_objects, after = want.cat->num_objects;
    cr_assert(before > 2000 && after > 500 && before - after > 1000,
              "the sky has %zu objects before cleaning and %zu after: too few to clean across many threads' work",
              before, after);
    static const char *threads[] = { "2", "3", "7" };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
        test_tune(ctx, "extract_threads", threads[t]);
        result got = run(ctx, x, k.back, k.rms, NULL, TW, TH, &o);
        char what[96];
        snprintf(what, sizeof what, "cleaning on %s threads against 1", threads[t]);
        expect_same(what, &got, &want, n);
        result_free(&got);
        gpuws_context_destroy(ctx);
    }
    result_free(&unclean);
    result_free(&want);
    sky_free(&k);
    gpuws_context_destroy(ref);
}

/* Cleaning's pairs on the device (knob extract_clean; extract_clean.h): a thread an object finds the later objects
 * within its zone on the host's grid and tests each pair in SEP's arithmetic, leaving to the host the pairs whose
 * test its pow (not the host's libm) could decide and the objects with more than 64 pairs; the host then takes the
 * turns in catalogue order. The catalogue and the map are the host's, bit for bit, on two skies: the bright stars
 * with faint objects in their wings, and a broad bright galaxy whose zone holds a ring of faint ones (more than 64
 * pairs: the host searches again); each also with every power left to the host (extract_clean=unsure), so that the
 * host's tests of the pairs the device leaves open decide, and with at most one pair an object from the device, so
 * that the host's searches decide for hundreds. */
BACKEND_TEST(extract, cleaning_on_the_device_gives_the_host_catalogue)
{
    if (*kind == GPUWS_BACKEND_CPU) cr_skip("the CPU backend cleans on the host only");
    const size_t n = (size_t)TW * TH;
    gpuws_context *ref = test_open(GPUWS_BACKEND_CPU);
    test_tune(ref, "extract_threads", "1");
    const gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT; /* SEP's defaults: deblending and cleaning */
    gpuws_extract_options unclean = o;
    unclean.clean = 0;
    for (int galaxy = 0; galaxy < 2; galaxy++) {
        uint64_t s = test_seed(false);
        sky k = sky_make(s, 0);
        float *x = k.x;
        if (!galaxy) add_stars_with_wings(x, &s);
        for (int r = 0; galaxy && r < TH; r++)
            for (int c = 0; c < TW; c++) {
                const double d = (c - TW / 2) * (c - TW / 2) + (r - TH / 2) * (r - TH / 2);
                x[(size_t)r * TW + c] += (float)(20000.0 * exp(-d / 800.0));
            }
        for (int f = 0; galaxy && f < 160; f++) { /* the ring */
            const double phi = 6.283185307179586 * test_rand_uniform(&s), rho = 90.0 + 90.0 * test_rand_uniform(&s);
            const int fr = TH / 2 + (int)(rho * sin(phi)), fc = TW / 2 + (int)(rho * cos(phi));
            for (int r = fr - 3; r <= fr + 3; r++)
                for (int c = fc - 3; c <= fc + 3; c++) {
                    const double d = (c - fc) * (c - fc) + (r - fr) * (r - fr);
                    x[(size_t)r * TW + c] += (float)(40.0 * exp(-d / 2.0));
                }
        }
        result all = run(ref, x, k.back, k.rms, NULL, TW, TH, &unclean);
        result want = run(ref, x, k.back, k.rms, NULL, TW, TH, &o);
        const size_t before = all.cat->num_objects, after = want.cat->num_objects;
        cr_assert_gt(before - after, galaxy ? 100 : 1000, "sky %d: cleaning removes only %zu of %zu objects", galaxy,
                     before - after, before);
        static const char *modes[] = { "device", "unsure", "device" };
        for (size_t m = 0; m < 3; m++) {
            gpuws_context *ctx = test_open(*kind);
            test_tune(ctx, "extract_clean", modes[m]);
            if (m == 2) test_tune(ctx, "extract_clean_most", "1");
            result got = run(ctx, x, k.back, k.rms, NULL, TW, TH, &o);
            size_t unsure = 0, searched = 0;
            const size_t on_device = gpuws__extract_clean_last(&unsure, &searched);
            char what[96];
            snprintf(what, sizeof what, "%s, %s, extract_clean=%s%s", test_backend_name(*kind),
                     galaxy ? "the galaxy" : "the stars", modes[m], m == 2 ? ", extract_clean_most=1" : "");
            cr_assert_eq(on_device, before, "%s: the device worked out the pairs of %zu objects, not all %zu", what,
                         on_device, before);
            if (galaxy || m == 2)
                cr_assert_gt(searched, m == 2 ? 300 : 0, "%s: %zu objects searched again", what, searched);
            if (m == 1) cr_assert_gt(unsure, 1000, "%s: only %zu pairs left to the host", what, unsure);
            expect_same(what, &got, &want, n);
            result_free(&got);
            gpuws_context_destroy(ctx);
        }
        result_free(&all);
        result_free(&want);
        sky_free(&k);
    }
    gpuws_context_destroy(ref);
}

/* The device decides a pair of cleaning only where the last bits of its power cannot: ex_clean_sure holds only where
 * x lies further than the margin from the float m, and then any x' within 2^-30 of x (a device's pow is within a few
 * units of the last of 53 bits) gives (float)x' on the same side of m. Random m over many decades, x from just
 * beside m to far away. */
Test(extract, the_device_leaves_cleanings_close_calls_to_the_host)
{
    uint64_t s = test_seed(false);
    size_t sure = 0, open = 0;
    for (int t = 0; t < 200000; t++) {
        const float m = (float)(ldexp(1.0 + test_rand_uniform(&s), (int)(test_rand_u64(&s) % 120) - 60) *
                                (test_rand_uniform(&s) < 0.1 ? -1.0 : 1.0));
        const double rel = ldexp(test_rand_uniform(&s) - 0.5, -(int)(test_rand_u64(&s) % 40));
        const double x = (double)m * (1.0 + rel);
        if (!ex_clean_sure(x, m, EX_CL_MARGIN)) {
            cr_assert(fabs(rel) <= EX_CL_MARGIN * 1.0000001, "x = %.17g left open for m = %.9g, %g apart", x, (double)m,
                      rel);
            open++;
            continue;
        }
        sure++;
        for (int k = -1; k <= 1; k += 2) {
            const double xk = x * (1.0 + k * ldexp(1.0, -30));
            cr_assert_eq((float)xk > m, (float)x > m, "x = %.17g decided for m = %.9g, but %.17g falls the other way",
                         x, (double)m, xk);
        }
    }
    cr_assert(sure > 1000 && open > 1000, "%zu sure and %zu open: the draws miss a side", sure, open);
    cr_assert(!ex_clean_sure(NAN, 1.0f, EX_CL_MARGIN) && !ex_clean_sure(INFINITY, 1.0f, EX_CL_MARGIN) &&
                  !ex_clean_sure(1.0, 0.0f, EX_CL_MARGIN) && !ex_clean_sure(1.0, 1e-40f, EX_CL_MARGIN),
              "a NaN, an infinite x, a zero or subnormal m must be left open");
}

/* The host steps group the records by component on threads, each a share of the records: a component whose records
 * lie in several shares (a river across every row) is put together from all of them, in raster order, and none of
 * this depends on how the components are numbered (gpuws_label numbers them in raster order of their first pixel,
 * which keeps such components few; the records here get the numbers in a shuffled order too). The catalogue and the
 * object of every record on 7 threads are those of one thread, bit for bit. */
Test(extract, components_across_the_threads_shares_whatever_their_numbers)
{
    uint64_t s = test_seed(false);
    sky k = sky_make(s, 0);
    for (int r = 0; r < TH; r++) /* the river: 9 pixels wide, winding from the first row to the last */
        for (int d = -4; d <= 4; d++) {
            const int c = TW / 2 + (int)(300.0 * sin(r / 40.0)) + d;
            k.x[(size_t)r * TW + c] += 400.0f + 200.0f * (float)sin(r / 5.0);
        }
    for (int r = 100; r < 400; r++) /* and a bright field, so that the records fill many shares */
        for (int c = 20; c < 300; c++) k.x[(size_t)r * TW + c] += 60.0f + 30.0f * (float)cos(c / 7.0 + r / 11.0);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    gpuws__extract_params p;
    gpuws__extract_pixels px;
    memset(&px, 0, sizeof px);
    TEST_OK(gpuws__extract_resolve(&o, TW, TH, true, "extract", &p)); /* with a σ map */
    TEST_OK(gpuws_extract_ref_pixels(&p, k.x, k.back, k.rms, NULL, &px));
    int32_t nl = 0;
    for (size_t r = 0; r < px.n; r++) nl = px.label[r] > nl ? px.label[r] : nl;
    cr_assert(px.n > 8 * 16384, "%zu records: too few for 7 threads' shares", px.n);
    int32_t *obj_want = malloc(px.n * sizeof *obj_want), *obj_got = malloc(px.n * sizeof *obj_got);
    int32_t *shuffle = malloc(((size_t)nl + 1) * sizeof *shuffle), *labels = malloc(px.n * sizeof *labels);
    cr_assert(obj_want && obj_got && shuffle && labels);
    for (int32_t l = 0; l <= nl; l++) shuffle[l] = l;
    for (int32_t l = nl; l > 1; l--) { /* labels 1 .. nl in a random order */
        const int32_t m = 1 + (int32_t)(test_rand_u64(&s) % (uint64_t)l), t = shuffle[l];
        shuffle[l] = shuffle[m], shuffle[m] = t;
    }
    int32_t river = 0; /* the river's label: its pixel in the middle of the first row */
    for (size_t r = 0; r < px.n; r++)
        if ((px.idx[r] & 0x7fffffffu) == TW / 2) river = px.label[r];
    bool in_row[TH] = { false };
    size_t rows_of_river = 0;
    for (size_t r = 0; r < px.n; r++)
        if (px.label[r] == river && river) in_row[(px.idx[r] & 0x7fffffffu) / TW] = true;
    for (int r = 0; r < TH; r++) rows_of_river += in_row[r];
    cr_assert(rows_of_river == TH, "the river is one component in %zu of the %d rows", rows_of_river, (int)TH);
    gpuws_extract_catalog *want = NULL, *got = NULL;
    p.threads = 1;
    TEST_OK(gpuws__extract_objects(&p, &px, &want, obj_want));
    for (int round = 0; round < 2; round++) {
        int32_t *keep = px.label;
        if (round == 1) { /* the same components, numbered in another order */
            for (size_t r = 0; r < px.n; r++) labels[r] = shuffle[px.label[r]];
            px.label = labels;
        }
        p.threads = 7;
        TEST_OK(gpuws__extract_objects(&p, &px, &got, obj_got));
        px.label = keep;
        cr_assert_eq(got->num_objects, want->num_objects, "round %d: %zu objects on 7 threads, %zu on one", round,
                     got->num_objects, want->num_objects);
        cr_assert(memcmp(got->objects, want->objects, want->num_objects * sizeof *want->objects) == 0,
                  "round %d: the catalogue on 7 threads is not one thread's, bit for bit", round);
        for (size_t r = 0; r < px.n; r++)
            cr_assert_eq(obj_got[r], obj_want[r], "round %d: record %zu is in object %d on 7 threads, %d on one", round,
                         r, obj_got[r], obj_want[r]);
        gpuws_extract_catalog_free(got);
    }
    gpuws_extract_catalog_free(want);
    free(obj_want), free(obj_got), free(shuffle), free(labels);
    gpuws__extract_params_free(&p);
    gpuws__extract_pixels_free(&px);
    sky_free(&k);
}

/* ---- definitions on small images ---- */

enum { W = 24, H = 16 };

/* Absolute threshold 0.5 on the pixels themselves (no filter, no deblending, no cleaning): an object is a component
 * of pixels > 0.5. */
static gpuws_extract_options plain(void)
{
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 0.5;
    o.filter_type = GPUWS_FILTER_NONE;
    o.minarea = 1;
    o.deblend_cont = 1.0;
    o.clean = 0;
    return o;
}

static void box(float *x, long x0, long y0, long x1, long y1, float v)
{
    for (long y = y0; y <= y1; y++)
        for (long c = x0; c <= x1; c++) x[y * W + c] = v;
}

/* Two 3x3 squares that touch at one corner: one object with 8-connectivity, two with 4. */
BACKEND_TEST(extract, corner_contact_is_one_object_in_8_connectivity_two_in_4)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    memset(x, 0, sizeof x);
    box(x, 2, 2, 4, 4, 1.0f);
    box(x, 5, 5, 7, 7, 3.0f);
    gpuws_extract_options o = plain();
    result r8 = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(r8.cat->num_objects, 1);
    const gpuws_object *q = &r8.cat->objects[0];
    cr_assert_eq(q->npix, 18);
    cr_assert_eq(q->flux, 36.0);
    cr_assert_float_eq(q->x, (9 * 3.0 + 27 * 6.0) / 36.0, 1e-12, "barycentre weighted by the values");
    cr_assert_eq(q->peak, 3.0);
    cr_assert(q->xpeak == 5 && q->ypeak == 5, "the first largest pixel in raster order: (%lld, %lld)",
              (long long)q->xpeak, (long long)q->ypeak);
    o.connectivity = 4;
    result r4 = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(r4.cat->num_objects, 2);
    cr_assert(r4.cat->objects[0].npix == 9 && r4.cat->objects[0].flux == 9.0 && r4.cat->objects[1].flux == 27.0);
    result_free(&r8);
    result_free(&r4);
    gpuws_context_destroy(ctx);
}

/* SEP's order: objects in the order its scan completes them, by the last pixel of their last row; minarea drops the
 * small ones before that. */
BACKEND_TEST(extract, objects_come_in_the_order_their_last_row_ends_minarea_drops_small_ones)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    memset(x, 0, sizeof x);
    box(x, 2, 1, 3, 12, 1.0f);    /* A: starts first, ends on row 12 */
    box(x, 10, 3, 12, 5, 2.0f);   /* B: ends on row 5 */
    box(x, 18, 5, 19, 5, 4.0f);   /* C: 2 pixels, ends on row 5 right of B */
    box(x, 15, 10, 15, 10, 8.0f); /* D: 1 pixel */
    gpuws_extract_options o = plain();
    o.minarea = 2;
    result r = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(r.cat->num_objects, 3, "D has fewer than minarea pixels");
    cr_assert(r.cat->objects[0].flux == 18.0 && r.cat->objects[1].flux == 8.0 && r.cat->objects[2].flux == 24.0,
              "order B, C, A: fluxes %g %g %g", r.cat->objects[0].flux, r.cat->objects[1].flux, r.cat->objects[2].flux);
    /* the segmentation map: object k's pixels hold k + 1, the rest 0 (D too) */
    for (long y = 0; y < H; y++)
        for (long c = 0; c < W; c++) {
            const float v = x[y * W + c];
            const int want = v == 2.0f ? 1 : v == 4.0f ? 2 : v == 1.0f ? 3 : 0;
            cr_assert_eq(r.seg[y * W + c], want, "segmap at (%ld, %ld)", c, y);
        }
    result_free(&r);
    gpuws_context_destroy(ctx);
}

/* Flags: touching the edge (TRUNC), next to a NaN or masked pixel (BLANK), a one-pixel-wide line (SINGU: x and y
 * fully correlated, the moments made regular). */
BACKEND_TEST(extract, flags_mark_edges_blank_neighbours_and_singular_moments)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    static uint8_t mask[W * H];
    memset(x, 0, sizeof x);
    memset(mask, 0, sizeof mask);
    box(x, 0, 2, 2, 4, 1.0f);  /* touches the left edge */
    box(x, 8, 2, 10, 4, 1.0f); /* NaN next to it */
    x[3 * W + 11] = NAN;
    box(x, 14, 2, 16, 4, 1.0f); /* a masked pixel next to it */
    mask[3 * W + 17] = 1;
    for (int i = 0; i < 5; i++) x[(9 + i) * W + 5 + i] = 2.0f; /* a diagonal line */
    gpuws_extract_options o = plain();
    result r = run(ctx, x, NULL, NULL, mask, W, H, &o);
    cr_assert_eq(r.cat->num_objects, 4);
    cr_assert_eq(r.cat->objects[0].flag, GPUWS_OBJ_TRUNC);
    cr_assert_eq(r.cat->objects[1].flag, GPUWS_OBJ_BLANK);
    cr_assert_eq(r.cat->objects[2].flag, GPUWS_OBJ_BLANK);
    const gpuws_object *line = &r.cat->objects[3];
    cr_assert_eq(line->flag, GPUWS_OBJ_SINGU);
    cr_assert_float_eq(line->x2, 2.0 + 0.0833333, 1e-12, "variance 2 plus SExtractor's 1/12");
    cr_assert_float_eq(line->theta, 3.14159265358979 / 4, 1e-9);
    result_free(&r);
    gpuws_context_destroy(ctx);
}

/* An image with nothing above the threshold: an empty catalogue (not NULL) and a segmentation map of zeros. */
BACKEND_TEST(extract, an_empty_sky_gives_an_empty_catalogue)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    for (size_t i = 0; i < W * H; i++) x[i] = 0.25f;
    gpuws_extract_options o = plain();
    result r = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(r.cat->num_objects, 0);
    for (size_t i = 0; i < W * H; i++) cr_assert_eq(r.seg[i], 0);
    result_free(&r);
    gpuws_context_destroy(ctx);
}

/* An object on the image's first pixel is measured from column 0: the host steps find a record's column by counting
 * along runs of consecutive pixels, and the first record must start its own (pixel 0 once took the column after an
 * imagined pixel -1, and the whole run with it, in the CPU reference too). With the host's grouping and the
 * device's. */
BACKEND_TEST(extract, an_object_on_the_first_pixel_is_measured_from_column_0)
{
    static float x[W * H];
    memset(x, 0, sizeof x);
    box(x, 0, 0, 2, 2, 10.0f); /* pixels (0, 0) to (2, 2), the first the brightest: the barycentre is (0.9, 0.9) */
    x[0] = 20.0f;
    for (int grouped = 0; grouped < 2; grouped++) {
        if (grouped && *kind == GPUWS_BACKEND_CPU) continue; /* the CPU backend groups on the host only */
        gpuws_context *ctx = test_open(*kind);
        test_tune(ctx, "extract_group", grouped ? "device" : "host");
        gpuws_extract_options o = plain();
        result r = run(ctx, x, NULL, NULL, NULL, W, H, &o);
        cr_assert_eq(r.cat->num_objects, 1, "%zu objects", r.cat->num_objects);
        const gpuws_object *b = &r.cat->objects[0];
        cr_assert(b->npix == 9 && b->xmin == 0 && b->xmax == 2 && b->ymin == 0 && b->ymax == 2,
                  "%s, grouped on the %s: npix %lld, x %lld .. %lld, y %lld .. %lld", test_backend_name(*kind),
                  grouped ? "device" : "host", (long long)b->npix, (long long)b->xmin, (long long)b->xmax,
                  (long long)b->ymin, (long long)b->ymax);
        cr_assert(fabs(b->x - 0.9) < 1e-12 && fabs(b->y - 0.9) < 1e-12 && b->xpeak == 0 && b->ypeak == 0,
                  "barycentre (%.15g, %.15g), peak at (%lld, %lld)", b->x, b->y, (long long)b->xpeak,
                  (long long)b->ypeak);
        result_free(&r);
        gpuws_context_destroy(ctx);
    }
}

/* Deblending: two overlapping round profiles form one component; SExtractor's tree splits it into two objects
 * (flagged MERGED) that share all its pixels, the faint ones given by gatherup; with deblend_cont = 1 it stays one. */
BACKEND_TEST(extract, deblending_splits_two_blended_profiles)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    for (long y = 0; y < H; y++)
        for (long c = 0; c < W; c++) {
            const double d1 = (c - 8.0) * (c - 8.0) + (y - 8.0) * (y - 8.0),
                         d2 = (c - 15.0) * (c - 15.0) + (y - 8.0) * (y - 8.0);
            x[y * W + c] = (float)(100.0 * exp(-d1 / 8.0) + 60.0 * exp(-d2 / 8.0));
        }
    gpuws_extract_options o = plain();
    o.thresh = 2.0;
    result one = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(one.cat->num_objects, 1, "deblend_cont 1: one object");
    o.deblend_cont = 0.005;
    result two = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(two.cat->num_objects, 2);
    const gpuws_object *a = &two.cat->objects[0], *b = &two.cat->objects[1];
    cr_assert(a->flag & GPUWS_OBJ_MERGED && b->flag & GPUWS_OBJ_MERGED);
    cr_assert_eq(a->npix + b->npix, one.cat->objects[0].npix, "gatherup hands out every pixel of the component");
    const gpuws_object *left = a->x < b->x ? a : b, *right = a->x < b->x ? b : a;
    cr_assert(fabs(left->x - 8.0) < 0.5 && fabs(right->x - 15.0) < 0.5 && left->xpeak == 8 && right->xpeak == 15,
              "objects at x %g and %g", left->x, right->x);
    for (size_t i = 0; i < W * H; i++) cr_assert((two.seg[i] != 0) == (one.seg[i] != 0), "segmap pixel %zu", i);
    result_free(&one);
    result_free(&two);
    gpuws_context_destroy(ctx);
}

/* Cleaning's order (SEP's clean): objects take their turns in catalogue order; an object gone before its turn
 * neither removes nor explains anything, and an object removed in its own turn (a brighter later one explains it)
 * still removes, in that turn, the fainter ones it explains. Three flat objects on a 64 x 40 image (absolute
 * threshold 0.5, cleaning with clean_param 1): A, 9 x 9 pixels of 100, explains B, 7 x 7 of 0.55, 15 pixels away;
 * B explains C, a column of 25 pixels of 0.51, 30 pixels further; A, over 40 pixels from C, does not. C's a is the
 * largest, so that in B's turn A, which removes B, comes before C both in catalogue order and by size. The
 * catalogue order follows the rows where the objects end. */
enum { CW = 64, CH = 40 };

/* (2 hx + 1) x (2 hy + 1) pixels of v around xy (NULL: none). */
static void rect(float *x, const long *xy, long hx, long hy, float v)
{
    if (!xy) return;
    for (long y = xy[1] - hy; y <= xy[1] + hy; y++)
        for (long c = xy[0] - hx; c <= xy[0] + hx; c++) x[y * CW + c] = v;
}

/* The objects that cleaning keeps of A, B and C about centres a, b and c (NULL: left out), in catalogue order, as
 * a string. */
static void cleaned(gpuws_context *ctx, const long *a, const long *b, const long *c, char *kept)
{
    static float x[CW * CH];
    memset(x, 0, sizeof x);
    rect(x, a, 4, 4, 100.0f);
    rect(x, b, 3, 3, 0.55f);
    rect(x, c, 0, 12, 0.51f);
    gpuws_extract_options o = plain();
    o.clean = 1;
    o.clean_param = 1.0;
    result r = run(ctx, x, NULL, NULL, NULL, CW, CH, &o);
    size_t k = 0;
    for (size_t i = 0; i < r.cat->num_objects; i++) {
        const int64_t np = r.cat->objects[i].npix;
        kept[k++] = np == 81 ? 'A' : np == 49 ? 'B' : np == 25 ? 'C' : '?';
    }
    kept[k] = 0;
    result_free(&r);
}

BACKEND_TEST(extract, cleaning_goes_in_catalogue_order_and_a_removed_object_explains_nothing_later)
{
    gpuws_context *ctx = test_open(*kind);
    char kept[8];
    /* order A, B, C: A removes B in its turn; B, gone, then spares C; without A, B removes C */
    static const long a1[] = { 8, 8 }, b1[] = { 22, 14 }, c1[] = { 49, 26 };
    cleaned(ctx, a1, b1, c1, kept);
    cr_assert_str_eq(kept, "AC", "A, B, C in that order: kept %s", kept);
    cleaned(ctx, NULL, b1, c1, kept);
    cr_assert_str_eq(kept, "B", "B, C: kept %s", kept);
    /* order B, A, C: in B's turn A explains B, and B removes C all the same; without B, C stays */
    static const long a2[] = { 8, 11 }, b2[] = { 22, 5 }, c2[] = { 49, 17 };
    cleaned(ctx, a2, b2, c2, kept);
    cr_assert_str_eq(kept, "A", "B, A, C in that order: kept %s", kept);
    cleaned(ctx, a2, NULL, c2, kept);
    cr_assert_str_eq(kept, "AC", "A, C: kept %s", kept);
    gpuws_context_destroy(ctx);
}

/* The relative threshold: thresh × rms, and the object's threshold column is SEP's (the constant one with err). */
BACKEND_TEST(extract, a_relative_threshold_scales_with_the_noise)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[W * H];
    memset(x, 0, sizeof x);
    box(x, 2, 2, 4, 4, 10.0f);
    box(x, 12, 2, 14, 4, 30.0f);
    gpuws_extract_options o = plain();
    o.thresh = 2.0;
    o.err = 8.0; /* threshold 16: only the second box */
    result r = run(ctx, x, NULL, NULL, NULL, W, H, &o);
    cr_assert_eq(r.cat->num_objects, 1);
    cr_assert_eq(r.cat->objects[0].thresh, 16.0);
    cr_assert_eq(r.cat->objects[0].flux, 270.0);
    cr_assert_float_eq(r.cat->objects[0].fluxerr, sqrt(9 * 64.0), 1e-9, "the pixels' variances summed");
    result_free(&r);
    gpuws_context_destroy(ctx);
}

/* options NULL are the defaults (GPUWS_EXTRACT_OPTIONS_INIT: SEP's), and the catalogue says how long each half took. */
BACKEND_TEST(extract, null_options_are_seps_defaults)
{
    gpuws_context *ctx = test_open(*kind);
    enum { SW = 120, SH = 90 };
    static float x[SW * SH], back[SW * SH], rms[SW * SH];
    gpuws__case_extract_sky(SW, SH, 11, 0, x, back, rms);
    for (size_t i = 0; i < SW * SH; i++) x[i] -= back[i]; /* absolute threshold 1.5 on the sky minus its level */
    gpuws_buffer *img = test_buffer_from(ctx, x, sizeof x);
    gpuws_extract_catalog *a = NULL, *b = NULL;
    const gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    TEST_OK(gpuws_extract(NULL, SW, SH, img, NULL, &a));
    TEST_OK(gpuws_extract(NULL, SW, SH, img, &o, &b));
    cr_assert_gt(a->num_objects, 0);
    cr_assert_eq(a->num_objects, b->num_objects);
    cr_assert(memcmp(a->objects, b->objects, a->num_objects * sizeof *a->objects) == 0);
    cr_assert(a->ms_device >= 0.0 && a->ms_host >= 0.0);
    gpuws_extract_catalog_free(a);
    gpuws_extract_catalog_free(b);
    gpuws_buffer_destroy(img);
    gpuws_context_destroy(ctx);
}

/* ---- SEP's own catalogues: tests/data/make_extract_golden.py ---- */

/* A 48 x 48 crowded sky with an rms map, where SEP's versions give different catalogues (GPUWS_SEP_1_4): SEP 1.4.1's
 * and SEP 1.2.1's, each case as "case NAME THRESH GAIN CLEAN NOBJ" and NOBJ lines of SEP's 30 columns. */
enum { GW = 48, GH = 48, GCOLS = 30 };
enum { C_ERRX2 = 12, C_ERRY2 = 13, C_ERRXY = 14, C_THETA = 17, C_FLUX = 22 };

/* The columns SEP keeps in float (sep_catalog): the file holds the shortest text of the float. */
static bool sep_float_column(int k) { return k == 0 || (k >= 15 && k <= 24); }

static void object_columns(const gpuws_object *q, double v[GCOLS])
{
    const int64_t box[6] = { q->npix, q->tnpix, q->xmin, q->xmax, q->ymin, q->ymax };
    const double shape[18] = { q->x, q->y,     q->x2,  q->y2,  q->xy,  q->errx2, q->erry2, q->errxy, q->a,
                               q->b, q->theta, q->cxx, q->cyy, q->cxy, q->cflux, q->flux,  q->cpeak, q->peak };
    const int64_t peaks[5] = { q->xcpeak, q->ycpeak, q->xpeak, q->ypeak, q->flag };
    v[0] = q->thresh;
    for (int k = 0; k < 6; k++) v[1 + k] = (double)box[k];
    memcpy(v + 7, shape, sizeof shape);
    for (int k = 0; k < 5; k++) v[25 + k] = (double)peaks[k];
}

/* Every column exactly SEP's, but those SEP rounds to float from a double or sums in float where gpuws keeps
 * double (flux, theta, the moments' errors): within 1e-4 (relative; errxy of sqrt(errx2 erry2); theta in radians
 * modulo π), as tests/sep/compare_extract.py. */
static bool column_agrees(int k, double got, const double *want)
{
    const double w = want[k];
    if (got == w) return true;
    if (k == C_FLUX || k == C_ERRX2 || k == C_ERRY2) return fabs(got - w) <= 1e-4 * fabs(w);
    if (k == C_ERRXY) return fabs(got - w) <= 1e-4 * sqrt(fabs(want[C_ERRX2] * want[C_ERRY2]));
    if (k == C_THETA) {
        const double pi = 3.141592653589793, d = fmod(fabs(got - w), pi);
        return fmin(d, pi - d) <= 1e-4;
    }
    return false;
}

/* The golden sky's image and rms map (rms = 4 + column / 64 + row / 128, exact in float). */
static void golden_sky(float *x, float *rms)
{
    char path[1024];
    cr_assert(getenv("GPUWS_TEST_DATA"), "GPUWS_TEST_DATA is not set (ctest sets it)");
    snprintf(path, sizeof path, "%s/extract_sky.i16", getenv("GPUWS_TEST_DATA"));
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    unsigned char b[GW * GH * 2];
    cr_assert_eq(fread(b, 1, sizeof b, f), sizeof b, "%s is shorter than %zu bytes", path, sizeof b);
    fclose(f);
    for (size_t i = 0; i < GW * GH; i++) {
        x[i] = (float)(int16_t)(uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
        rms[i] = (float)(4.0 + (double)(i % GW) / 64.0 + (double)(i / GW) / 128.0);
    }
}

/* gpuws_extract with sep_version on kind against SEP's catalogues in extract_golden_sep<file_version>.txt: the same
 * objects in the same order when the versions are the same; another catalogue when they are not (the sky tells
 * the versions apart). */
static void against_sep(gpuws_backend_kind kind, const char *file_version, int sep_version, bool same)
{
    gpuws_context *ctx = test_open(kind);
    static float x[GW * GH], rms[GW * GH];
    golden_sky(x, rms);
    char path[1024];
    snprintf(path, sizeof path, "%s/extract_golden_sep%s.txt", getenv("GPUWS_TEST_DATA"), file_version);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    char name[64];
    double thresh, gain;
    int clean, cases = 0;
    size_t nobj;
    while (fscanf(f, " case %63s %lf %lf %d %zu", name, &thresh, &gain, &clean, &nobj) == 5) {
        gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
        o.thresh = thresh;
        o.gain = gain;
        o.clean = clean;
        if (sep_version >= 0) { /* with struct_size 0, as a zero-initialised struct: sep_version is in gpuws 0.2's */
            o.sep_version = sep_version;
            o.struct_size = 0;
        }
        result r = run(ctx, x, NULL, rms, NULL, GW, GH, &o);
        bool all = r.cat->num_objects == nobj;
        cr_assert(!same || all, "%s, SEP %s: %zu objects, SEP %zu", name, file_version, r.cat->num_objects, nobj);
        for (size_t i = 0; i < nobj; i++) {
            double want[GCOLS], got[GCOLS];
            for (int k = 0; k < GCOLS; k++) {
                char s[64];
                cr_assert_eq(fscanf(f, "%63s", s), 1, "%s: case %s, object %zu", path, name, i);
                want[k] = sep_float_column(k) ? (double)strtof(s, NULL) : strtod(s, NULL);
            }
            if (i >= r.cat->num_objects) continue;
            object_columns(&r.cat->objects[i], got);
            for (int k = 0; k < GCOLS; k++) {
                all &= column_agrees(k, got[k], want);
                cr_assert(!same || column_agrees(k, got[k], want),
                          "%s, SEP %s: object %zu, column %d: %.17g, SEP %.17g", name, file_version, i, k, got[k],
                          want[k]);
            }
        }
        cr_assert(same || !all, "%s: the catalogue of SEP %s, which this sky should tell apart", name, file_version);
        result_free(&r);
        cases++;
    }
    cr_assert_eq(cases, 2, "%s: %d cases", path, cases);
    fclose(f);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(extract, by_default_the_catalogue_is_sep_1_4s)
{
    against_sep(*kind, "1.4", -1, true);
    against_sep(*kind, "1.2", -1, false);
}

BACKEND_TEST(extract, sep_version_1_2_gives_sep_1_2s_catalogue)
{
    against_sep(*kind, "1.2", GPUWS_SEP_1_2, true);
    against_sep(*kind, "1.4", GPUWS_SEP_1_2, false);
}

/* ---- records in raster order ----
 * The host steps take the records in raster order, which a GPU writes chunk by chunk (2048 raster-consecutive
 * pixels, extract_pixel.h's EX_CHUNK), each chunk from the offset that a scan of the chunks' counts gives it. What
 * shows the order in the catalogue is each component's last record: the object's place in SEP's order and, with a
 * noise map and SEP 1.2's rule (GPUWS_SEP_1_2; SEP 1.4's mean over the pixels does not depend on their order),
 * its threshold column (thresh × σ of the last pixel's lower-right neighbour; σ differs from pixel to pixel here). Skies of uniform noise in [0, 1) whose pixels pass the threshold at random: many components of
 * every size, small ones kept (minarea 1), that cross rows and chunk boundaries; on images whose rows the chunks
 * split, whose size is not a multiple of a chunk or of 8, a single row, a single column, every pixel detected, and
 * none. Every backend against the reference, catalogue and segmentation map. */

typedef struct {
    gpuws_backend_kind backend;
    size_t w, h;
    double thresh; /* × σ (σ in [1, 1.25)); absolute without a noise map */
    int noise_map, connectivity, filter, masked;
    size_t min_objects; /* what the sky has at least */
} raster_case;

ParameterizedTestParameters(extract, records_in_raster_order_across_chunks)
{
    static const raster_case shapes[] = {
        { 0, 1000, 300, 0.5, 1, 8, 0, 0, 1000 }, /* rows split by chunks, 300000 pixels: not a multiple of a chunk */
        { 0, 2049, 37, 0.55, 1, 4, 0, 1, 1000 }, /* a row a little longer than a chunk, a mask (blank records) */
        { 0, 777, 333, 0.5, 1, 8, 1, 1, 100 },   /* SEP's 3x3 filter (a convolution) and a mask */
        { 0, 2048, 2, 0.45, 1, 8, 0, 0, 100 },   /* one row a chunk */
        { 0, 5001, 1, 0.45, 1, 8, 0, 0, 1000 },  /* a single row over three chunks, 5001 pixels: not a multiple of 8 */
        { 0, 1, 5001, 0.45, 1, 4, 0, 0, 1000 },  /* a single column */
        { 0, 61, 67, -1.0, 0, 8, 0, 0, 1 },      /* every pixel detected (absolute threshold): one component */
        { 0, 3000, 3, 2.0, 1, 8, 0, 0, 0 },      /* nothing detected over five chunks */
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(raster_case *c, extract, records_in_raster_order_across_chunks)
{
    gpuws_context *ctx = test_open(c->backend);
    gpuws_context *ref = test_open(GPUWS_BACKEND_CPU);
    const size_t n = c->w * c->h;
    float *x = malloc(n * sizeof *x), *rms = malloc(n * sizeof *rms);
    uint8_t *mask = c->masked ? malloc(n) : NULL;
    cr_assert(x && rms && (mask || !c->masked));
    uint64_t s = test_seed(false) + n;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)test_rand_uniform(&s);
        rms[i] = (float)(1.0 + 0.25 * test_rand_uniform(&s));
    }
    for (size_t i = 0; mask && i < n; i++) mask[i] = test_rand_uniform(&s) < 0.02;
    gpuws_extract_options o = plain();
    o.thresh = c->thresh;
    o.connectivity = c->connectivity;
    o.sep_version = GPUWS_SEP_1_2;
    if (c->filter) o.filter_type = GPUWS_FILTER_CONV;
    const float *r = c->noise_map ? rms : NULL;
    result want = run(ref, x, NULL, r, mask, c->w, c->h, &o);
    result got = run(ctx, x, NULL, r, mask, c->w, c->h, &o);
    char what[120];
    snprintf(what, sizeof what, "%s %zux%zu thresh %g conn %d filter %d mask %d", test_backend_name(c->backend), c->w,
             c->h, c->thresh, c->connectivity, c->filter, c->masked);
    cr_assert_geq(want.cat->num_objects, c->min_objects, "%s: the sky has only %zu objects", what,
                  want.cat->num_objects);
    if (!c->min_objects) cr_assert_eq(want.cat->num_objects, 0, "%s: objects where none is above", what);
    expect_same(what, &got, &want, n);
    result_free(&want);
    result_free(&got);
    free(x);
    free(rms);
    free(mask);
    gpuws_context_destroy(ref);
    gpuws_context_destroy(ctx);
}
