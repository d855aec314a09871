/* extract_host and background_host: SEP's background and extraction of host images through the device in row bands
 * (out-of-core), on every backend.
 *
 * Truth: the in-core calls on the same backend (gpuws_background, gpuws_extract on device buffers), bit for bit:
 * the catalogue (count, order, every column's bits), the segmentation map, back, rms and the globals. The bands'
 * count each budget gives is part of the specification: extract_host holds EX_BYTES bytes a pixel (45, 4 more for
 * each map given, 1 for a mask) of a band's own rows and max(filter_h / 2, 1) rows of halo on either side, and on
 * OpenCL and CUDA a second band's inputs beside them where the budget holds a band so (band_budget);
 * background_host's pass 1 holds whole mesh rows of image (and mask) beside their meshes' statistics, pass 2 rows of
 * back and rms beside the plan. The table: filters of 1, 3 and 5 rows (halos of 1 and 2), every noise mode, a mask
 * and NaN columns, 4- and 8-connectivity, deblending, cleaning, SEP 1.2's thresholds (the σ of the pixel after an
 * object, which may lie in the next band), bands of one row, band counts that do not divide the height, an image one
 * row taller than a band's budget, a budget that holds it as one band but not in-core, and bars that cross three
 * bands and more; on OpenCL and CUDA each case again with the bands grouped on the device, which finishes there the
 * components on none of their borders (the CPU OpenCL device of CI groups on the host unless told). Then the bands
 * over several devices (more_contexts) and the rows over several callers (gpuws_extract_host_reduce, callers on
 * threads), against the same in-core and whole-image outputs. */
#include "extract_support.h"           /* run, expect_same */
#include "common/cases.h"              /* gpuws__case_extract_sky */
#include "background/background_ref.h" /* the reference's grid and maps */
#include "extract/extract_ref.h"       /* what the last host steps had */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

enum { EX_BYTES = 45 };
/* A 5 x 5 filter kernel (binomial): a halo of 2 rows. */
static const float k5[25] = { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1 };
#define WHOLE SIZE_MAX

/* A second band's inputs, bytes a pixel, beside a band of per_px (EX_BYTES, the maps' and the mask's): on OpenCL and
 * CUDA the image's 4 bytes a pixel, the maps' and the mask's, which the next band is uploaded into while the device
 * works on one; none on the CPU backend. */
static uint64_t slot_px(gpuws_backend_kind kind, uint64_t per_px)
{
    return kind == GPUWS_BACKEND_CPU ? 0 : 4 + per_px - EX_BYTES;
}

/* The budget of bands of rows_in rows, halo included, with the second band's inputs. */
static uint64_t band_budget(gpuws_backend_kind kind, uint64_t per_px, size_t w, size_t rows_in)
{
    return (per_px + slot_px(kind, per_px)) * w * rows_in;
}

/* The rows with their halo that per_px * w * rows_in bytes give a band where a second band's inputs are counted
 * too (a budget that cannot hold the whole image in one band): the rule of band_budget the other way. */
static size_t two_slot_rows(gpuws_backend_kind kind, uint64_t per_px, size_t rows_in)
{
    return (size_t)(per_px * rows_in / (per_px + slot_px(kind, per_px)));
}

typedef struct {
    size_t calls, bands, last_rows;
    bool in_order;
} progress_log;

/* One pass: band k at call k, rows_done growing to the height. */
static void on_band(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done, size_t rows)
{
    progress_log *l = user;
    if (pass != 1 || passes != 1 || band != l->calls || rows_done > rows || rows_done <= l->last_rows)
        l->in_order = false;
    l->calls++, l->bands = bands, l->last_rows = rows_done;
}

/* Each pass (pass 1 into log[0], pass 2 into log[1]): its bands in order, rows_done growing. */
static void on_pass(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done, size_t rows)
{
    progress_log *l = (progress_log *)user + (pass == 2);
    if (pass < 1 || pass > passes || band != l->calls || rows_done > rows || rows_done <= l->last_rows)
        l->in_order = false;
    l->calls++, l->bands = bands, l->last_rows = rows_done;
}

typedef struct {
    gpuws_backend_kind backend;
    int noise;        /* 0 none (absolute threshold), 1 one σ, 2 a σ map */
    int filter_type;  /* GPUWS_FILTER_* */
    int filter_h;     /* 3 (SEP's default), 5, or 1 (a 5 x 1 kernel: halo 1 from the filter's rows 0) */
    int connectivity; /* 4 or 8 */
    int masked;       /* a mask, and NaN columns */
    double deblend_cont;
    int clean, sep_version;
    size_t w, h;
    size_t band_rows; /* the bands' own rows that the budget gives; 0 = one slot's budget for the image less one row
                         (on OpenCL and CUDA two slots' bands then, two_slot_rows); WHOLE = a band's budget for the
                         whole image, less than the in-core call holds */
} band_case;

ParameterizedTestParameters(extract_host, bands_give_the_in_core_catalogue)
{
    static const band_case rows[] = {
        { 0, 2, GPUWS_FILTER_MATCHED, 3, 8, 1, 0.005, 1, GPUWS_SEP_1_4, 257, 190, 7 },     /* SEP's defaults, mask */
        { 0, 2, GPUWS_FILTER_MATCHED, 3, 8, 0, 0.005, 1, GPUWS_SEP_1_2, 257, 190, 1 },     /* SEP 1.2, bands of a row */
        { 0, 1, GPUWS_FILTER_CONV, 5, 4, 1, 0.001, 0, GPUWS_SEP_1_4, 200, 151, 3 },        /* halo 2, 4-connectivity */
        { 0, 0, GPUWS_FILTER_NONE, 3, 8, 0, 1.0, 0, GPUWS_SEP_1_4, 200, 150, 13 },         /* no filter: halo 1 */
        { 0, 2, GPUWS_FILTER_CONV, 1, 8, 1, 0.005, 1, GPUWS_SEP_1_4, 190, 120, 2 },        /* a kernel of one row */
        { 0, 2, GPUWS_FILTER_MATCHED, 3, 8, 0, 0.005, 1, GPUWS_SEP_1_4, 257, 190, 0 },     /* one row over a band */
        { 0, 2, GPUWS_FILTER_MATCHED, 3, 8, 1, 0.005, 1, GPUWS_SEP_1_4, 257, 190, WHOLE }, /* one band, not in-core */
    };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

/* The bands' sky: extract's case sky (NaN columns where masked), an rms map that grows along rows, bars through
 * many bands (a vertical one, a diagonal one and a U whose arms meet only at the bottom) and, where masked, a mask
 * of scattered pixels and a block (*mask NULL else). */
static void band_sky(size_t w, size_t h, bool masked, float **x, float **back, float **rms, uint8_t **mask)
{
    const size_t n = w * h;
    *x = malloc(n * sizeof **x), *back = malloc(n * sizeof **back), *rms = malloc(n * sizeof **rms);
    cr_assert(*x && *back && *rms);
    float *v = *x;
    gpuws__case_extract_sky(w, h, test_seed(false) + w, masked ? 3 : 0, v, *back, *rms);
    for (size_t i = 0; i < n; i++) (*rms)[i] += (float)(0.002 * (double)(i % w));
    for (size_t y = 5; y + 5 < h; y++) {
        v[y * w + w / 3] += 400.0f;
        v[y * w + (y * 7 / 5) % w] += 300.0f;
    }
    for (size_t y = h / 4; y < h - 8; y++) v[y * w + w - 30] += 350.0f, v[y * w + w - 12] += 350.0f;
    for (size_t q = w - 30; q <= w - 12; q++) v[(h - 8) * w + q] += 350.0f;
    *mask = NULL;
    if (masked) {
        uint8_t *m = *mask = calloc(n, 1);
        cr_assert(m);
        uint64_t s = 11;
        for (size_t i = 0; i < n; i++) m[i] = test_rand_uniform(&s) < 0.01;
        for (size_t r = h / 2; r < h / 2 + 9; r++)
            for (size_t q = 40; q < 90; q++) m[r * w + q] = 1;
    }
}

static void band_sky_free(float *x, float *back, float *rms, uint8_t *mask)
{
    free(x), free(back), free(rms), free(mask);
}

ParameterizedTest(band_case *c, extract_host, bands_give_the_in_core_catalogue)
{
    gpuws_context *ctx = test_open(c->backend);
    const size_t w = c->w, h = c->h, n = w * h;
    float *x, *back, *rms;
    uint8_t *mask;
    band_sky(w, h, c->masked, &x, &back, &rms, &mask);
    static const float k1[5] = { 1, 3, 4, 3, 1 };
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = c->noise == 0 ? 12.0 : 1.5;
    o.err = c->noise == 1 ? 5.0 : 0.0;
    o.filter_type = c->filter_type;
    if (c->filter_h == 5) o.filter = k5, o.filter_w = o.filter_h = 5;
    if (c->filter_h == 1) o.filter = k1, o.filter_w = 5, o.filter_h = 1;
    o.connectivity = c->connectivity;
    o.deblend_cont = c->deblend_cont;
    o.clean = c->clean;
    o.sep_version = c->sep_version;
    const float *r = c->noise == 2 ? rms : NULL;
    result want = run(ctx, x, back, r, mask, w, h, &o);

    const size_t halo = c->filter_type != GPUWS_FILTER_NONE && c->filter_h / 2 > 1 ? (size_t)c->filter_h / 2 : 1;
    const uint64_t per_px = EX_BYTES + 4 + (r ? 4 : 0) + (mask ? 1 : 0);
    const size_t rows = c->band_rows == WHOLE ? h
                        : c->band_rows        ? c->band_rows
                                              : two_slot_rows(c->backend, per_px, h - 1) - 2 * halo;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    progress_log log = { 0, 0, 0, true };
    ho.extract = &o, ho.back = back, ho.rms = r, ho.mask = mask;
    /* bands of one row: the smallest budget, which holds one band's inputs and not two: one slot */
    ho.max_device_bytes = c->band_rows == WHOLE ? per_px * w * h
                          : c->band_rows == 1   ? per_px * w * (rows + 2 * halo)
                          : c->band_rows        ? band_budget(c->backend, per_px, w, rows + 2 * halo)
                                                : per_px * w * (h - 1);
    ho.progress = on_band, ho.progress_user = &log;
    result got = { NULL, malloc(n * sizeof(int32_t)) }, plain = { NULL, NULL };
    cr_assert(got.seg);
    ho.segmap = got.seg;
    TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &got.cat));
    char what[200];
    snprintf(what, sizeof what, "%s %zux%zu noise %d filter %d/%d conn %d mask %d sep %d, bands of %zu rows",
             test_backend_name(c->backend), w, h, c->noise, c->filter_type, c->filter_h, c->connectivity, c->masked,
             c->sep_version, rows);
    cr_assert_gt(want.cat->num_objects, 10, "%s: the sky has only %zu objects", what, want.cat->num_objects);
    cr_assert_eq(log.bands, (h + rows - 1) / rows, "%s: %zu bands, want %zu", what, log.bands, (h + rows - 1) / rows);
    cr_assert_eq(log.calls, log.bands, "%s: %zu progress calls for %zu bands", what, log.calls, log.bands);
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_extract_host_bands(ctx, w, h, &ho, &band_rows, &bands));
    cr_assert(band_rows == rows && bands == log.bands, "%s: extract_host_bands says %zu bands of %zu rows", what, bands,
              band_rows);
    cr_assert(log.in_order && log.last_rows == h, "%s: progress out of order or short (%zu rows)", what, log.last_rows);
    expect_same(what, &got, &want, n);
    ho.segmap = NULL, ho.progress = NULL; /* without the segmentation map: the same catalogue */
    TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &plain.cat));
    expect_same(what, &plain, &want, 0);
    result_free(&plain);
    if (c->backend != GPUWS_BACKEND_CPU) {
        /* the bands grouped, chained and measured on the device (as a GPU does by default): the same catalogue, the
         * components that touch no band border measured there and their records never read; with the segmentation
         * map too, the same map (its measured components' pixels found by the bands' labels) */
        test_tune(ctx, "extract_group", "device");
        TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &plain.cat));
        size_t all = 0;
        const size_t read = gpuws__extract_compact_last(&all), measured = gpuws__extract_measured_last();
        char grouped[240];
        snprintf(grouped, sizeof grouped, "%s, grouped on the device", what);
        expect_same(grouped, &plain, &want, 0);
        if (rows >= 7)
            cr_assert(measured > 0 && read < all, "%s: %zu objects measured on the device, %zu of %zu records read",
                      grouped, measured, read, all);
        result_free(&plain);
        plain.seg = malloc(n * sizeof(int32_t));
        cr_assert(plain.seg);
        ho.segmap = plain.seg;
        TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &plain.cat));
        expect_same(grouped, &plain, &want, n);
        const size_t read_map = gpuws__extract_compact_last(&all), measured_map = gpuws__extract_measured_last();
        if (rows >= 7)
            cr_assert(measured_map == measured && read_map == read,
                      "%s, with the map: %zu objects measured on the device, %zu of %zu records read (without: %zu, "
                      "%zu)",
                      grouped, measured_map, read_map, all, measured, read);
        result_free(&plain);
    }
    result_free(&got);
    result_free(&want);
    band_sky_free(x, back, rms, mask);
    gpuws_context_destroy(ctx);
}

/* gpuws_extract on device buffers of more pixels than a slab (knob extract_slab_pixels; 2^31 - 1 by default, the
 * records' indices): the image and its maps go through the device in bands of whole rows copied from the caller's
 * buffers there, a band at most a slab with its halo (no less than a row and its halo): the in-core catalogue and
 * segmentation map, bit for bit, in ceil(h / (slab / w - 2 halo)) bands. On OpenCL and CUDA again with the bands
 * grouped on the device. */
typedef struct {
    gpuws_backend_kind backend;
    int noise, filter_h, connectivity, masked;
    size_t slab_rows; /* the slab: this many rows of the image; 0: every pixel but one */
} slab_case;

ParameterizedTestParameters(extract_host, slabs_of_device_buffers_give_the_in_core_catalogue)
{
    static const slab_case rows[] = {
        { 0, 2, 3, 8, 1, 13 }, /* back, rms and a mask, SEP's filter: halo 1 */
        { 0, 1, 5, 4, 0, 1 },  /* one σ, a 5 x 5 filter: a band of a row and its halo of 2 either side */
        { 0, 0, 0, 8, 0, 0 },  /* no filter, no maps: two bands */
    };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

ParameterizedTest(slab_case *c, extract_host, slabs_of_device_buffers_give_the_in_core_catalogue)
{
    enum { W = 257, H = 190 };
    gpuws_context *ctx = test_open(c->backend);
    float *x, *back, *rms;
    uint8_t *mask;
    band_sky(W, H, c->masked, &x, &back, &rms, &mask);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = c->noise == 0 ? 12.0 : 1.5;
    o.err = c->noise == 1 ? 5.0 : 0.0;
    o.filter_type = c->filter_h ? GPUWS_FILTER_CONV : GPUWS_FILTER_NONE;
    if (c->filter_h == 5) o.filter = k5, o.filter_w = o.filter_h = 5;
    o.connectivity = c->connectivity;
    /* without noise, the background is subtracted here: no map at all */
    for (size_t i = 0; c->noise == 0 && i < (size_t)W * H; i++) x[i] -= back[i];
    const float *b = c->noise == 0 ? NULL : back, *r = c->noise == 2 ? rms : NULL;
    result want = run(ctx, x, b, r, mask, W, H, &o);
    cr_assert_gt(want.cat->num_objects, 10, "the sky has only %zu objects", want.cat->num_objects);

    const size_t halo = c->filter_h == 5 ? 2 : 1, slab = c->slab_rows ? c->slab_rows * W : (size_t)W * H - 1;
    const size_t rows_in = slab / W > 1 + 2 * halo ? slab / W : 1 + 2 * halo,
                 bands = (H + rows_in - 2 * halo - 1) / (rows_in - 2 * halo);
    char knob[32], what[160];
    snprintf(knob, sizeof knob, "%zu", slab);
    test_tune(ctx, "extract_slab_pixels", knob);
    for (int grouped = 0; grouped < (c->backend == GPUWS_BACKEND_CPU ? 1 : 2); grouped++) {
        if (grouped) test_tune(ctx, "extract_group", "device");
        snprintf(what, sizeof what, "%s noise %d filter %d conn %d mask %d, slabs of %zu pixels%s",
                 test_backend_name(c->backend), c->noise, c->filter_h, c->connectivity, c->masked, slab,
                 grouped ? ", grouped on the device" : "");
        result got = run(ctx, x, b, r, mask, W, H, &o);
        cr_assert_eq(gpuws__extract_bands_last(), bands, "%s: %zu bands, want %zu", what, gpuws__extract_bands_last(),
                     bands);
        expect_same(what, &got, &want, (size_t)W * H);
        result_free(&got);
    }
    result_free(&want);
    band_sky_free(x, back, rms, mask);
    gpuws_context_destroy(ctx);
}

/* Bands whose every component the device finishes (round blobs, each inside one band of 16 rows, nothing else
 * detected): no record reaches the host, and the catalogue is in-core's; with the segmentation map too, which then
 * comes from the bands' labels alone (each band's last label a measured blob, the label before the next band's
 * first: a pixel outside every blob must not take it). */
GPU_BACKEND_TEST(extract_host, bands_whose_components_the_device_all_measures_send_no_record)
{
    enum { BW = 256, BH = 64, ROWS = 16 };
    static float x[BW * BH];
    for (int y = 0; y < BH; y++)
        for (int c = 0; c < BW; c++) {
            const int cx = 32 * (c / 32) + 16, cy = ROWS * (y / ROWS) + ROWS / 2;
            const double d = (c - cx) * (c - cx) + (y - cy) * (y - cy);
            x[y * BW + c] = (float)((60.0 + c / 8 + y / 4) * exp(-d / 6.0));
        }
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "extract_group", "device");
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 20.0, o.filter_type = GPUWS_FILTER_NONE;
    result want = run(ctx, x, NULL, NULL, NULL, BW, BH, &o), got = { NULL, NULL };
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    ho.extract = &o, ho.max_device_bytes = band_budget(*kind, EX_BYTES, BW, ROWS + 2);
    TEST_OK(gpuws_extract_host(ctx, BW, BH, x, &ho, &got.cat));
    size_t all = 0;
    const size_t read = gpuws__extract_compact_last(&all);
    cr_assert_eq(want.cat->num_objects, 32, "%zu objects, not the 32 blobs", want.cat->num_objects);
    cr_assert(read == 0 && all > 0 && gpuws__extract_measured_last() == 32,
              "%zu of %zu records read, %zu of the 32 blobs measured on the device", read, all,
              gpuws__extract_measured_last());
    expect_same("blobs inside bands", &got, &want, 0);
    result_free(&got);
    got.seg = malloc(sizeof x / sizeof x[0] * sizeof(int32_t));
    cr_assert(got.seg);
    ho.segmap = got.seg;
    TEST_OK(gpuws_extract_host(ctx, BW, BH, x, &ho, &got.cat));
    cr_assert(gpuws__extract_compact_last(&all) == 0 && gpuws__extract_measured_last() == 32,
              "with the map: records read, or blobs not measured on the device");
    expect_same("blobs inside bands, with the map", &got, &want, (size_t)BW * BH);
    result_free(&got);
    result_free(&want);
    gpuws_context_destroy(ctx);
}

/* A tile of 65536 x 1024 pixels: zero sky with Gaussian sources (single, and pairs that deblend; a masked pixel in
 * some: *mask) whose footprints above 1 lie in rows 28 .. 995, so that copies of it stacked on one another never
 * touch. */
static float *big_tile(size_t w, size_t th, uint8_t **mask)
{
    float *t = calloc(w * th, sizeof *t);
    *mask = calloc(w * th, 1);
    cr_assert(t && *mask);
    uint64_t s = test_seed(false) + 0x31;
    for (int i = 0; i < 9000; i++) {
        const double cx = 20 + test_rand_uniform(&s) * (double)(w - 40), cy = 40 + test_rand_uniform(&s) * 940;
        const double sig = 1.2 + 1.8 * test_rand_uniform(&s), amp = 5 + 195 * test_rand_uniform(&s);
        const int pair = i % 3 == 0; /* a fainter neighbour 4 to 7 pixels away */
        for (int q = 0; q <= pair; q++) {
            const double px = cx + q * (4 + 3 * test_rand_uniform(&s)), py = cy + q * 2, a = q ? amp / 3 : amp;
            for (long y = (long)py - 12; y <= (long)py + 12; y++)
                for (long x = (long)px - 12; x <= (long)px + 12; x++) {
                    if (x < 0 || x >= (long)w) continue;
                    const double d2 = (x - px) * (x - px) + (y - py) * (y - py);
                    t[(size_t)y * w + (size_t)x] += (float)(a * exp(-d2 / (2 * sig * sig)));
                }
        }
        if (i % 50 == 7) (*mask)[(size_t)(cy + 1) * w + (size_t)cx] = 1;
    }
    return t;
}

/* A context on kind for the large cases, which skip without a GPU of 16 GiB and 96 GiB of host memory; *lock their
 * lock file, held until the process ends, so that one backend's run goes at a time (each takes about 60 GiB). */
/* Whether ctx's device holds the in-core calls on the large images (64 GiB): else they are left out. */
static bool large_device(gpuws_context *ctx)
{
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    if (info.global_mem_bytes >= 64 * ((uint64_t)1 << 30)) return true;
    cr_log_warn("%s: the in-core call on device buffers left out (64 GiB of device memory needed)", info.name);
    return false;
}

static gpuws_context *large_open(gpuws_backend_kind kind, int *lock)
{
    gpuws_context *ctx = test_open(kind);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    const double host_bytes = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (info.type == GPUWS_DEVICE_CPU || info.global_mem_bytes < 16 * ((uint64_t)1 << 30) ||
        host_bytes < 96.0 * (1 << 30)) {
        gpuws_context_destroy(ctx);
        cr_skip_test("%s: %s: needs a GPU with 16 GiB and 96 GiB of host memory", test_backend_name(kind), info.name);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/gpuws-test-large-%ld.lock", P_tmpdir, (long)getuid());
    *lock = open(path, O_CREAT | O_RDWR, 0600);
    cr_assert(*lock >= 0 && flock(*lock, LOCK_EX) == 0, "%s: no lock", path);
    return ctx;
}

/* Object a of the image against object b of the tile whose copy starts dy rows down: the same integer columns and
 * the others within 1e-9 relative (y, moved, by its rounding alone: the moments are taken from the box's corner).
 * Deblended objects (merged) keep only their flag: SEP's deblending gives a pixel to the object whose profile, from
 * its barycentre in the image's coordinates, is the highest there, and the rounding moves with the coordinates.
 * Returns whether a merged object's pixels differ from the tile's. */
static bool expect_copy(const char *what, size_t i, const gpuws_object *a, const gpuws_object *b, int64_t dy)
{
    cr_assert(a->flag == b->flag, "%s: object %zu: flag %d; the tile's %d", what, i, a->flag, b->flag);
    if (a->flag & GPUWS_OBJ_MERGED) return a->npix != b->npix || a->flux != b->flux;
    cr_assert(a->npix == b->npix && a->tnpix == b->tnpix && a->xmin == b->xmin && a->xmax == b->xmax &&
                  a->ymin == b->ymin + dy && a->ymax == b->ymax + dy && a->xpeak == b->xpeak &&
                  a->ypeak == b->ypeak + dy && a->xcpeak == b->xcpeak && a->ycpeak == b->ycpeak + dy,
              "%s: object %zu: npix %lld at (%lld, %lld); the tile's %lld at (%lld, %lld + %lld)", what, i,
              (long long)a->npix, (long long)a->xmin, (long long)a->ymin, (long long)b->npix, (long long)b->xmin,
              (long long)b->ymin, (long long)dy);
    const double ga[] = { a->thresh, a->x,    a->y - (double)dy, a->x2,  a->y2,  a->xy,  a->errx2, a->erry2, a->errxy,
                          a->a,      a->b,    a->theta,          a->cxx, a->cyy, a->cxy, a->flux,  a->cflux, a->fluxerr,
                          a->peak,   a->cpeak };
    const double wa[] = {
        b->thresh, b->x,     b->y,   b->x2,  b->y2,  b->xy,   b->errx2, b->erry2,   b->errxy, b->a,
        b->b,      b->theta, b->cxx, b->cyy, b->cxy, b->flux, b->cflux, b->fluxerr, b->peak,  b->cpeak
    };
    for (size_t k = 0; k < sizeof ga / sizeof ga[0]; k++)
        cr_assert(fabs(ga[k] - wa[k]) <= 1e-9 * (fabs(wa[k]) > 1 ? fabs(wa[k]) : 1),
                  "%s: object %zu, column %zu: %.17g, the tile's %.17g", what, i, k, ga[k], wa[k]);
    return false;
}

/* Images of 2^31 pixels and more, whose indices are 64-bit on the host: on a GPU with the memory for it, 65536 x 66561
 * pixels (more than 2^32), 65 copies of big_tile (and of its mask) and its first row. In bands of 1000 rows, which cut
 * through sources (above 2^31 and 2^32 pixels too), and in the bands the device's memory gives (below 2^31 pixels
 * with the halo: three or more), the same catalogue bit for bit; each copy's objects are the tile's in-core ones
 * (expect_copy), its rows moved by its first row. The segmentation map holds the tile's footprints in every copy,
 * the objects that are not deblended numbered as the tile's after the copies' before them. It needs 60 GiB of host
 * memory (the backends' runs take turns: a lock file) and 16 GiB of device memory, and skips elsewhere (CPU devices
 * run the same 64-bit code on the small images above). Where the device has 64 GiB, gpuws_extract on device buffers
 * of the image and mask (in slabs of 2^31 - 1 pixels, the default) gives the same catalogue and map too (80 GiB of
 * host memory then). */
GPU_BACKEND_TEST(extract_host, images_of_more_than_2_to_the_31_pixels)
{
    int lock;
    gpuws_context *ctx = large_open(*kind, &lock);
    const size_t w = 65536, th = 1024, copies = 65, h = copies * th + 1, n = w * h;
    uint8_t *tile_mask;
    float *tile = big_tile(w, th, &tile_mask);
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    o.thresh = 1.0, o.err = 0.0; /* absolute: the zero sky is never detected */
    o.clean = 0;                 /* cleaning would reach from one copy's objects into the next copy's */
    result want = run(ctx, tile, NULL, NULL, tile_mask, w, th, &o);
    const size_t nt = want.cat->num_objects;
    size_t merged = 0, blank = 0;
    for (size_t i = 0; i < nt; i++) {
        merged += (want.cat->objects[i].flag & GPUWS_OBJ_MERGED) != 0;
        blank += (want.cat->objects[i].flag & GPUWS_OBJ_BLANK) != 0;
        cr_assert(want.cat->objects[i].ymin > 0 && want.cat->objects[i].ymax + 1 < (int64_t)th,
                  "tile object %zu touches the tile's edge rows", i);
    }
    cr_assert(nt > 9000 && merged > 1000 && blank > 50, "the tile has %zu objects, %zu merged, %zu blank", nt, merged,
              blank);
    float *x = malloc(n * sizeof *x);
    uint8_t *mask = malloc(n);
    cr_assert(x && mask);
    for (size_t c = 0; c <= copies; c++) {
        const size_t rows = c < copies ? th : 1;
        memcpy(x + c * th * w, tile, rows * w * sizeof *x);
        memcpy(mask + c * th * w, tile_mask, rows * w);
    }
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    ho.extract = &o, ho.mask = mask, ho.max_device_bytes = band_budget(*kind, EX_BYTES + 1, w, 1002);
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_extract_host_bands(ctx, w, h, &ho, &band_rows, &bands));
    cr_assert(band_rows == 1000 && bands == 67, "%zu bands of %zu rows, want 67 of 1000", bands, band_rows);
    result got = { NULL, NULL }, wide = { NULL, malloc(n * sizeof(int32_t)) };
    cr_assert(wide.seg);
    TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &got.cat));
    ho.max_device_bytes = 0, ho.segmap = wide.seg;
    TEST_OK(gpuws_extract_host_bands(ctx, w, h, &ho, &band_rows, &bands));
    cr_assert(bands >= 3 && bands < 67 && (band_rows + 2) * w <= INT32_MAX, "%zu bands of %zu rows", bands, band_rows);
    TEST_OK(gpuws_extract_host(ctx, w, h, x, &ho, &wide.cat));
    expect_same("bands of 32767 rows against bands of 1000", &wide, &got, 0);
    if (large_device(ctx)) {
        result slabs = run(ctx, x, NULL, NULL, mask, w, h, &o);
        cr_assert(gpuws__extract_bands_last() >= 3, "gpuws_extract in %zu slabs", gpuws__extract_bands_last());
        expect_same("gpuws_extract on device buffers against gpuws_extract_host", &slabs, &wide, n);
        result_free(&slabs);
    }
    cr_assert_eq(got.cat->num_objects, copies * nt, "%zu objects, want %zu copies of %zu", got.cat->num_objects, copies,
                 nt);
    size_t moved = 0;
    for (size_t i = 0; i < got.cat->num_objects; i++)
        moved += expect_copy("bands of 1000 rows", i, &got.cat->objects[i], &want.cat->objects[i % nt],
                             (int64_t)(i / nt * th));
    cr_log_info("%s: %zu objects, as the tile's; %zu merged ones of %zu with other pixels", test_backend_name(*kind),
                got.cat->num_objects, moved, merged * copies);
    for (size_t c = 0; c <= copies; c++)
        for (size_t i = 0; i < (c < copies ? th : 1) * w; i++) {
            const int32_t t = want.seg[i], g = wide.seg[c * th * w + i];
            const bool plain = t && !(want.cat->objects[t - 1].flag & GPUWS_OBJ_MERGED);
            if ((g != 0) != (t != 0) || (plain && g != t + (int32_t)(c * nt)))
                cr_assert_fail("segmap of copy %zu at (%zu, %zu): %d; the tile's %d", c, i % w, i / w, g, t);
        }
    result_free(&got);
    result_free(&wide);
    free(mask);
    free(x);
    free(tile_mask);
    free(tile);
    result_free(&want);
    gpuws_context_destroy(ctx);
    close(lock);
}

/* gpuws_background_host of more than 2^32 pixels: on a GPU with 16 GiB and a host with 96 GiB, 65536 x 65600 pixels
 * (64 copies of a 1024-row tile of extract's sky, then its first 64 rows) in bands of a 4 GiB budget give the
 * reference's globals, and its maps bit for bit on rows across the image (the first, those at 2^31 and 2^32 pixels,
 * the last); the reference makes its grid from the whole image on the host's cores. It needs 52 GiB of host memory.
 * Where the device has 64 GiB, gpuws_background on device buffers of the image gives the same. */
GPU_BACKEND_TEST(background_host, images_of_more_than_2_to_the_32_pixels)
{
    int lock;
    gpuws_context *ctx = large_open(*kind, &lock);
    const size_t w = 65536, th = 1024, h = 65600, n = w * h;
    float *x = malloc(n * sizeof *x), *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    cr_assert(x && back && rms);
    gpuws__case_extract_sky(w, th, test_seed(false) + 0x32, 0, x, back, rms); /* the maps: room for the tile's */
    for (size_t y = th; y < h; y += th) memcpy(x + y * w, x, (h - y < th ? h - y : th) * w * sizeof *x);
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    gpuws_background_host_options ho = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    ho.background = &bo, ho.max_device_bytes = (uint64_t)4 << 30;
    gpuws_background_result got, want;
    TEST_OK(gpuws_background_host(ctx, w, h, x, &ho, back, rms, &got));
    gpuws__background_plan p;
    cr_assert(gpuws__background_layout(w, h, bo.bw, bo.bh, &p));
    float *mesh = malloc(2 * p.n * sizeof *mesh), *rb = malloc(w * sizeof *rb), *rr = malloc(w * sizeof *rr);
    void *plan = malloc(p.words * 4);
    cr_assert(mesh && rb && rr && plan);
    gpuws_background_mesh_ref(x, NULL, w, h, bo.bw, bo.bh, mesh);
    cr_assert_eq(gpuws__background_grid(&p, w, h, bo.bw, bo.bh, bo.fw, bo.fh, bo.fthresh, mesh, plan, &want), GPUWS_OK);
    cr_assert(memcmp(&got.globalback, &want.globalback, sizeof got.globalback) == 0 &&
                  memcmp(&got.globalrms, &want.globalrms, sizeof got.globalrms) == 0 && got.nx == want.nx &&
                  got.ny == want.ny && got.bad_meshes == want.bad_meshes,
              "globals %.9g %.9g (%zu x %zu meshes, %zu bad); the reference's %.9g %.9g (%zu x %zu, %zu)",
              got.globalback, got.globalrms, got.nx, got.ny, got.bad_meshes, want.globalback, want.globalrms, want.nx,
              want.ny, want.bad_meshes);
    const size_t rows[] = { 0, 1, 32767, 32768, 32769, 65535, 65536, 65537, h - 2, h - 1 };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        gpuws_background_interp_ref(&p, plan, w, rows[k], rows[k] + 1, rb, rr);
        cr_assert(memcmp(back + rows[k] * w, rb, w * sizeof *rb) == 0 &&
                      memcmp(rms + rows[k] * w, rr, w * sizeof *rr) == 0,
                  "row %zu of back or rms differs from the reference's", rows[k]);
    }
    if (large_device(ctx)) {
        gpuws_buffer *dx = test_buffer_from(ctx, x, n * sizeof *x), *db = test_buffer(ctx, n * sizeof *back),
                     *dr = test_buffer(ctx, n * sizeof *rms);
        gpuws_background_result in_core;
        TEST_OK(gpuws_background(NULL, GPUWS_F32, w, h, dx, &bo, db, dr, &in_core));
        cr_assert(memcmp(&in_core.globalback, &want.globalback, sizeof want.globalback) == 0 &&
                      memcmp(&in_core.globalrms, &want.globalrms, sizeof want.globalrms) == 0,
                  "gpuws_background's globals %.9g %.9g; the reference's %.9g %.9g", in_core.globalback,
                  in_core.globalrms, want.globalback, want.globalrms);
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            TEST_OK(gpuws_buffer_read(db, rows[k] * w * sizeof *back, back, w * sizeof *back));
            TEST_OK(gpuws_buffer_read(dr, rows[k] * w * sizeof *rms, rms, w * sizeof *rms));
            gpuws_background_interp_ref(&p, plan, w, rows[k], rows[k] + 1, rb, rr);
            cr_assert(memcmp(back, rb, w * sizeof *rb) == 0 && memcmp(rms, rr, w * sizeof *rr) == 0,
                      "gpuws_background: row %zu of back or rms differs from the reference's", rows[k]);
        }
        gpuws_buffer_destroy(dx), gpuws_buffer_destroy(db), gpuws_buffer_destroy(dr);
    }
    free(plan), free(mesh), free(rb), free(rr);
    free(x), free(back), free(rms);
    gpuws_context_destroy(ctx);
    close(lock);
}

typedef struct {
    gpuws_backend_kind backend;
    size_t w, h;
    int bw, bh, fw, fh;
    int masked;
    size_t mesh_rows, map_rows; /* pass 1's mesh rows and pass 2's rows a band that the budget gives */
} background_case;

ParameterizedTestParameters(background_host, bands_give_the_in_core_maps)
{
    static const background_case rows[] = {
        { 0, 300, 200, 32, 32, 3, 3, 1, 1, 1 },   /* a mesh row a band, a row of maps a band */
        { 0, 257, 190, 24, 20, 5, 3, 0, 2, 37 },  /* partial meshes at the edges; counts that do not divide */
        { 0, 200, 150, 64, 64, 1, 1, 1, 1, 150 }, /* no filter; pass 2 in one band */
    };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

ParameterizedTest(background_case *c, background_host, bands_give_the_in_core_maps)
{
    gpuws_context *ctx = test_open(c->backend);
    gpuws_backend_kind kind;
    TEST_OK(gpuws_context_get_backend(ctx, &kind));
    const size_t w = c->w, h = c->h, n = w * h;
    float *x = malloc(n * sizeof *x), *lvl = malloc(n * sizeof *lvl), *sig = malloc(n * sizeof *sig);
    cr_assert(x && lvl && sig);
    gpuws__case_extract_sky(w, h, test_seed(false) + h, c->masked ? 5 : 0, x, lvl, sig);
    uint8_t *mask = NULL;
    if (c->masked) {
        mask = calloc(n, 1);
        cr_assert(mask);
        for (size_t r = 30; r < 70; r++)
            for (size_t q = 60; q < 140; q++) mask[r * w + q] = 1;
    }
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = c->bw, bo.bh = c->bh, bo.fw = c->fw, bo.fh = c->fh;
    gpuws_buffer *img = test_buffer_from(ctx, x, n * sizeof(float));
    gpuws_buffer *m = mask ? test_buffer_from(ctx, mask, n) : NULL;
    gpuws_buffer *db = test_buffer(ctx, n * sizeof(float)), *dr = test_buffer(ctx, n * sizeof(float));
    bo.mask = m;
    gpuws_background_result want, got;
    TEST_OK(gpuws_background(NULL, GPUWS_F32, w, h, img, &bo, db, dr, &want));
    float *want_back = test_download(db, n * sizeof(float)), *want_rms = test_download(dr, n * sizeof(float));
    bo.mask = NULL;

    const size_t nx = (w + (size_t)c->bw - 1) / (size_t)c->bw, ny = (h + (size_t)c->bh - 1) / (size_t)c->bh;
    /* the budget that gives the case's bands: pass 1 holds mesh_rows rows of meshes, image (and mask) and their
     * statistics; pass 2 map_rows rows of back and rms beside the plan (8 floats a mesh, 5 words a row and a
     * column) */
    const uint64_t row1 = (uint64_t)c->bh * w * (4 + (mask ? 1 : 0)) + 2 * nx * 4;
    const uint64_t plan = 4 * (8 * (uint64_t)nx * ny + 5 * (uint64_t)(w + h));
    uint64_t budget = row1 * c->mesh_rows;
    if (plan + 8 * w * c->map_rows > budget) budget = plan + 8 * w * c->map_rows;
    const size_t mesh_rows = budget / row1 < ny ? (size_t)(budget / row1) : ny;
    const size_t map_rows = (budget - plan) / (8 * w) < h ? (size_t)((budget - plan) / (8 * w)) : h;
    const size_t bands1 = kind == GPUWS_BACKEND_CPU ? 1 : (ny + mesh_rows - 1) / mesh_rows;
    const size_t bands2 = kind == GPUWS_BACKEND_CPU ? 0 : (h + map_rows - 1) / map_rows;
    gpuws_background_host_options ho = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    progress_log log[2] = { { 0, 0, 0, true }, { 0, 0, 0, true } };
    ho.background = &bo, ho.mask = mask, ho.max_device_bytes = budget;
    ho.progress = on_pass, ho.progress_user = log;
    float *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    cr_assert(back && rms);
    TEST_OK(gpuws_background_host(ctx, w, h, x, &ho, back, rms, &got));
    const char *name = test_backend_name(c->backend);
    /* the CPU backend's device memory is the host's: one pass, no bands */
    cr_assert(log[0].in_order && log[1].in_order, "%s: progress out of order", name);
    cr_assert_eq(log[0].calls, bands1, "%s %zux%zu: %zu bands in pass 1, want %zu", name, w, h, log[0].calls, bands1);
    cr_assert_eq(log[1].calls, bands2, "%s %zux%zu: %zu bands in pass 2, want %zu", name, w, h, log[1].calls, bands2);
    cr_assert(!memcmp(&got, &want, sizeof got), "%s %zux%zu: globalback %.9g rms %.9g, in-core %.9g %.9g", name, w, h,
              got.globalback, got.globalrms, want.globalback, want.globalrms);
    for (size_t i = 0; i < n; i++) {
        cr_assert(!memcmp(&back[i], &want_back[i], sizeof(float)),
                  "%s %zux%zu mesh %dx%d: back at (%zu, %zu) %.9g, "
                  "in-core %.9g",
                  name, w, h, c->bw, c->bh, i % w, i / w, back[i], want_back[i]);
        cr_assert(!memcmp(&rms[i], &want_rms[i], sizeof(float)),
                  "%s %zux%zu mesh %dx%d: rms at (%zu, %zu) %.9g, "
                  "in-core %.9g",
                  name, w, h, c->bw, c->bh, i % w, i / w, rms[i], want_rms[i]);
    }
    gpuws_buffer_destroy(img);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dr);
    free(want_back);
    free(want_rms);
    free(back);
    free(rms);
    free(mask);
    free(x);
    free(lvl);
    free(sig);
    gpuws_context_destroy(ctx);
}

typedef struct {
    gpuws_backend_kind backend;
    int filter_h; /* 3 (SEP's default) or 5 */
    int masked;
    size_t band_rows; /* 0: the in-core budget less one row */
} made_case;

ParameterizedTestParameters(extract_host, the_background_it_makes_gives_the_in_core_outputs)
{
    static const made_case rows[] = { { 0, 3, 1, 7 }, { 0, 5, 0, 1 }, { 0, 3, 1, 0 } };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

/* options->background: the background made by the call, as `gpuws sources` makes it, against gpuws_background and
 * gpuws_extract in-core with the same mask: the catalogue, the segmentation map, back, rms and the globals. */
ParameterizedTest(made_case *c, extract_host, the_background_it_makes_gives_the_in_core_outputs)
{
    gpuws_context *ctx = test_open(c->backend);
    enum { W = 257, H = 190 };
    const size_t n = (size_t)W * H;
    float *x = malloc(n * sizeof *x), *lvl = malloc(n * sizeof *lvl), *sig = malloc(n * sizeof *sig);
    cr_assert(x && lvl && sig);
    gpuws__case_extract_sky(W, H, test_seed(false) + 3, c->masked ? 3 : 0, x, lvl, sig);
    uint8_t *mask = NULL;
    if (c->masked) {
        mask = calloc(n, 1);
        cr_assert(mask);
        for (size_t i = 0; i < n; i++) mask[i] = x[i] != x[i];
    }
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    if (c->filter_h == 5) o.filter = k5, o.filter_w = o.filter_h = 5;
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = bo.bh = 32;

    gpuws_buffer *img = test_buffer_from(ctx, x, n * sizeof(float));
    gpuws_buffer *m = mask ? test_buffer_from(ctx, mask, n) : NULL;
    gpuws_buffer *db = test_buffer(ctx, n * sizeof(float)), *dr = test_buffer(ctx, n * sizeof(float));
    gpuws_background_result want_r, got_r;
    bo.mask = m;
    TEST_OK(gpuws_background(NULL, GPUWS_F32, W, H, img, &bo, db, dr, &want_r));
    bo.mask = NULL;
    float *want_back = test_download(db, n * sizeof(float)), *want_rms = test_download(dr, n * sizeof(float));
    result want = run(ctx, x, want_back, want_rms, mask, W, H, &o);

    const size_t halo = c->filter_h / 2 > 1 ? (size_t)c->filter_h / 2 : 1, rows = c->band_rows;
    const uint64_t per_px = EX_BYTES + 8 + (mask ? 1 : 0);
    const uint64_t plan = 4 * (8 * (uint64_t)((W + 31) / 32) * ((H + 31) / 32) + 5 * (uint64_t)(W + H));
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    ho.extract = &o, ho.mask = mask, ho.background = &bo, ho.background_result = &got_r;
    ho.max_device_bytes = plan + (rows ? band_budget(c->backend, per_px, W, rows + 2 * halo) : per_px * W * (H - 1));
    float *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    result got = { NULL, malloc(n * sizeof(int32_t)) };
    cr_assert(back && rms && got.seg);
    ho.back_out = back, ho.rms_out = rms, ho.segmap = got.seg;
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_extract_host_bands(ctx, W, H, &ho, &band_rows, &bands));
    cr_assert(bands > 1 && (!rows || band_rows == rows), "%zu bands of %zu rows", bands, band_rows);
    TEST_OK(gpuws_extract_host(ctx, W, H, x, &ho, &got.cat));
    char what[120];
    snprintf(what, sizeof what, "%s filter %d mask %d, %zu bands of %zu rows", test_backend_name(c->backend),
             c->filter_h, c->masked, bands, band_rows);
    cr_assert_gt(want.cat->num_objects, 10, "%s: the sky has only %zu objects", what, want.cat->num_objects);
    expect_same(what, &got, &want, n);
    cr_assert(!memcmp(&got_r, &want_r, sizeof got_r), "%s: the background's globals differ", what);
    for (size_t i = 0; i < n; i++)
        cr_assert(!memcmp(&back[i], &want_back[i], sizeof(float)) && !memcmp(&rms[i], &want_rms[i], sizeof(float)),
                  "%s: back %.9g rms %.9g at (%zu, %zu), in-core %.9g %.9g", what, back[i], rms[i], i % W, i / W,
                  want_back[i], want_rms[i]);
    result_free(&got);
    result_free(&want);
    gpuws_buffer_destroy(img);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dr);
    free(want_back), free(want_rms), free(back), free(rms);
    free(mask), free(x), free(lvl), free(sig);
    gpuws_context_destroy(ctx);
}

typedef struct {
    gpuws_backend_kind backend;
    int made;         /* the background made by the call, as `gpuws sources` makes it; else back and rms given */
    size_t band_rows; /* a budget of bands of this many own rows on each device; WHOLE: the whole image, not in-core */
    size_t devices;   /* ctx and devices - 1 more contexts (here of one device, which the call cannot tell apart) */
    size_t want_rows; /* the bands' own rows: WHOLE's image is cut so that every device gets a band */
} devices_case;

ParameterizedTestParameters(extract_host, several_devices_give_the_in_core_outputs)
{
    static const devices_case rows[] = {
        { 0, 1, 7, 3, 7 }, { 0, 0, 1, 2, 1 }, { 0, 1, WHOLE, 3, 64 }, { 0, 0, WHOLE, 2, 95 }
    };
    return TEST_BACKEND_PARAMS(rows, sizeof rows / sizeof rows[0]);
}

/* options->more_contexts: the bands cut into one range a device, each device's records and labels following the
 * device's before; the catalogue, the segmentation map and (made) back, rms and the globals are the in-core ones,
 * the progress comes in band order, and an extraction that fits in-core stays one band on ctx. */
ParameterizedTest(devices_case *c, extract_host, several_devices_give_the_in_core_outputs)
{
    gpuws_context *ctx = test_open(c->backend), *more[2] = { test_open(c->backend), test_open(c->backend) };
    enum { W = 257, H = 190 };
    const size_t n = (size_t)W * H;
    float *x = malloc(n * sizeof *x), *lvl = malloc(n * sizeof *lvl), *sig = malloc(n * sizeof *sig);
    uint8_t *mask = malloc(n);
    cr_assert(x && lvl && sig && mask);
    gpuws__case_extract_sky(W, H, test_seed(false) + 5, 3, x, lvl, sig);
    for (size_t i = 0; i < n; i++) mask[i] = x[i] != x[i];
    for (size_t y = 4; y + 4 < H; y++) x[y * W + W / 2] += 400.0f; /* one object across every band */
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = bo.bh = 32;
    gpuws_background_result want_r, got_r;
    float *want_back = lvl, *want_rms = sig;
    if (c->made) {
        gpuws_buffer *img = test_buffer_from(ctx, x, n * sizeof(float)), *m = test_buffer_from(ctx, mask, n);
        gpuws_buffer *db = test_buffer(ctx, n * sizeof(float)), *dr = test_buffer(ctx, n * sizeof(float));
        bo.mask = m;
        TEST_OK(gpuws_background(NULL, GPUWS_F32, W, H, img, &bo, db, dr, &want_r));
        bo.mask = NULL;
        want_back = test_download(db, n * sizeof(float)), want_rms = test_download(dr, n * sizeof(float));
        gpuws_buffer_destroy(img), gpuws_buffer_destroy(m), gpuws_buffer_destroy(db), gpuws_buffer_destroy(dr);
    }
    result want = run(ctx, x, want_back, want_rms, mask, W, H, &o);

    const uint64_t per_px = EX_BYTES + 8 + 1;
    const uint64_t plan = c->made ? 4 * (8 * (uint64_t)((W + 31) / 32) * ((H + 31) / 32) + 5 * (uint64_t)(W + H)) : 0;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    progress_log log[2] = { { 0, 0, 0, true }, { 0, 0, 0, true } };
    ho.extract = &o, ho.mask = mask, ho.more_contexts = more, ho.num_more_contexts = c->devices - 1;
    ho.progress = on_pass, ho.progress_user = log;
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_extract_host_bands(ctx, W, H, &ho, &band_rows, &bands));
    cr_assert(bands == 1 && band_rows == H, "in-core on ctx: %zu bands of %zu rows", bands, band_rows);
    float *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    result got = { NULL, malloc(n * sizeof(int32_t)) };
    cr_assert(back && rms && got.seg);
    if (c->made) ho.background = &bo, ho.background_result = &got_r, ho.back_out = back, ho.rms_out = rms;
    else ho.back = lvl, ho.rms = sig;
    ho.segmap = got.seg;
    ho.max_device_bytes = plan + (c->band_rows == WHOLE ? per_px * W * H
                                  : c->band_rows == 1   ? per_px * W * 3 /* one slot: the smallest budget */
                                                        : band_budget(c->backend, per_px, W, c->band_rows + 2));
    TEST_OK(gpuws_extract_host_bands(ctx, W, H, &ho, &band_rows, &bands));
    char what[160];
    snprintf(what, sizeof what, "%s, %s, %zu devices, %zu bands of %zu rows", test_backend_name(c->backend),
             c->made ? "background made" : "maps given", c->devices, bands, band_rows);
    cr_assert(band_rows == c->want_rows && bands == (H + band_rows - 1) / band_rows, "%s: want bands of %zu rows", what,
              c->want_rows);
    TEST_OK(gpuws_extract_host(ctx, W, H, x, &ho, &got.cat));
    cr_assert_gt(want.cat->num_objects, 10, "%s: the sky has only %zu objects", what, want.cat->num_objects);
    expect_same(what, &got, &want, n);
    const progress_log *l = &log[c->made];
    cr_assert(l->in_order && l->calls == bands && l->last_rows == H,
              "%s: %zu progress calls (in order: %d), to row %zu", what, l->calls, l->in_order, l->last_rows);
    if (c->made) {
        cr_assert(!memcmp(&got_r, &want_r, sizeof got_r), "%s: the background's globals differ", what);
        cr_assert(!memcmp(back, want_back, n * sizeof(float)) && !memcmp(rms, want_rms, n * sizeof(float)),
                  "%s: back or rms differs from in-core", what);
    }
    if (c->backend != GPUWS_BACKEND_CPU && bands > 1) {
        /* grouped on every device (as GPUs do): each device's bands finish their inner components, whose pixels
         * the map finds through the bands' labels, numbered after the devices' before */
        gpuws_context *all[3] = { ctx, more[0], more[1] };
        for (size_t d = 0; d < c->devices; d++) test_tune(all[d], "extract_group", "device");
        result grouped = { NULL, malloc(n * sizeof(int32_t)) };
        cr_assert(grouped.seg);
        ho.segmap = grouped.seg;
        TEST_OK(gpuws_extract_host(ctx, W, H, x, &ho, &grouped.cat));
        char g[200];
        snprintf(g, sizeof g, "%s, grouped on the devices", what);
        expect_same(g, &grouped, &want, n);
        if (band_rows >= 7) cr_assert(gpuws__extract_measured_last() > 0, "%s: nothing measured on the devices", g);
        result_free(&grouped);
    }
    if (c->made) free(want_back), free(want_rms);
    result_free(&got);
    result_free(&want);
    free(back), free(rms), free(mask), free(x), free(lvl), free(sig);
    gpuws_context_destroy(more[1]);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* ---- rows held by several callers: gpuws_extract_host_reduce --------------------------------------------------- */

typedef struct {
    test_sum_group *g;
    gpuws_context *ctx;
    const float *image;
    gpuws_extract_host_options ho;
    size_t rows, part, parts;
    gpuws_extract_catalog *cat;
    gpuws_status st;
} extract_caller;

static void *extract_caller_main(void *arg)
{
    extract_caller *c = arg;
    c->st = gpuws_extract_host_reduce(c->ctx, 257, c->rows, c->image, &c->ho, c->part, c->parts, c->parts - 1,
                                      test_sum_group_reduce, test_sum_group_gather, c->g, &c->cat);
    return NULL;
}

enum { W = 257, H = 190, MESH = 32 };

/* The sky's rows x over `parts` callers on threads (the first none, the others uneven whole rows of MESH-pixel meshes,
 * bands of 7 rows within each), each with ho but its own rows of the mask and of back and rms (into got_back and
 * got_rms), root (the last) the segmentation map seg (NULL: none); each caller's globals into rs; root's catalogue. */
static gpuws_extract_catalog *run_callers(gpuws_context *ctx, const float *x, const uint8_t *mask,
                                          const gpuws_extract_host_options *ho, size_t parts, uint64_t budget,
                                          int32_t *seg, float *got_back, float *got_rms, gpuws_background_result *rs,
                                          const char *what)
{
    const size_t n = (size_t)W * H;
    test_sum_group *g = test_sum_group_new((unsigned)parts, 3 * n + 4096);
    extract_caller cs[4];
    pthread_t t[4];
    size_t at = 0; /* in meshes */
    const size_t meshes = (H + MESH - 1) / MESH;
    for (size_t p = 0; p < parts; p++) {
        const size_t m = p == 0 ? 0 : p + 1 == parts ? meshes - at : (meshes - at) / 3 + 1;
        const size_t first = at * MESH, rows = (at + m) * MESH < H ? m * MESH : H - first;
        cs[p] = (extract_caller){ .g = g, .ctx = ctx, .image = x + first * W, .rows = rows, .part = p, .parts = parts };
        cs[p].ho = *ho;
        cs[p].ho.mask = mask + first * W, cs[p].ho.segmap = p + 1 == parts ? seg : NULL;
        cs[p].ho.back_out = got_back + first * W, cs[p].ho.rms_out = got_rms + first * W;
        cs[p].ho.background_result = &rs[p];
        cs[p].ho.max_device_bytes = budget;
        at += m;
        cr_assert(pthread_create(&t[p], NULL, extract_caller_main, &cs[p]) == 0);
    }
    for (size_t p = 0; p < parts; p++) pthread_join(t[p], NULL);
    test_sum_group_free(g);
    for (size_t p = 0; p < parts; p++) {
        cr_assert_eq(cs[p].st, GPUWS_OK, "%s: part %zu failed", what, p);
        cr_assert(p + 1 == parts ? cs[p].cat != NULL : cs[p].cat == NULL, "%s: part %zu's catalogue", what, p);
    }
    return cs[parts - 1].cat;
}

/* The sky's rows spread over 2, 3 and 4 callers on threads (as MPI ranks hold them: run_callers), the background made
 * by them: the last caller (root) gets the whole image's catalogue and segmentation map bit for bit, every caller its
 * rows of back and rms and the globals; and without the map, with the bands grouped on the device where it can
 * (chained and measured there, and their border components' parts joined on root), the same catalogue. */
BACKEND_TEST(extract_host, rows_held_by_several_callers_give_the_whole_image_outputs)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t n = (size_t)W * H;
    float *x = malloc(n * sizeof *x), *lvl = malloc(n * sizeof *lvl), *sig = malloc(n * sizeof *sig);
    float *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    float *got_back = malloc(n * sizeof *back), *got_rms = malloc(n * sizeof *rms);
    uint8_t *mask = malloc(n);
    result want = { NULL, malloc(n * sizeof(int32_t)) };
    int32_t *got_seg = malloc(n * sizeof *got_seg);
    cr_assert(x && lvl && sig && back && rms && got_back && got_rms && mask && want.seg && got_seg);
    gpuws__case_extract_sky(W, H, test_seed(false) + 9, 3, x, lvl, sig);
    for (size_t i = 0; i < n; i++) mask[i] = x[i] != x[i];
    for (size_t y = 4; y + 4 < H; y++) x[y * W + W / 2] += 400.0f; /* one object through every caller */
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = bo.bh = MESH;
    gpuws_background_result want_r;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    ho.extract = &o, ho.background = &bo, ho.mask = mask, ho.segmap = want.seg;
    ho.back_out = back, ho.rms_out = rms, ho.background_result = &want_r;
    TEST_OK(gpuws_extract_host(ctx, W, H, x, &ho, &want.cat));
    const uint64_t plan = 4 * (8 * (uint64_t)((W + MESH - 1) / MESH) * ((H + MESH - 1) / MESH) + 5 * (uint64_t)(W + H));
    const uint64_t budget = plan + (uint64_t)(EX_BYTES + 9) * W * (7 + 2);
    for (size_t parts = 2; parts <= 4; parts++) {
        gpuws_background_result rs[4];
        memset(got_seg, 0xA5, n * sizeof *got_seg);
        char what[120];
        snprintf(what, sizeof what, "%s in %zu parts", test_backend_name(*kind), parts);
        result got = { run_callers(ctx, x, mask, &ho, parts, budget, got_seg, got_back, got_rms, rs, what), got_seg };
        for (size_t p = 0; p < parts; p++)
            cr_assert(!memcmp(&rs[p], &want_r, sizeof want_r), "%s: part %zu's globals differ", what, p);
        expect_same(what, &got, &want, n);
        cr_assert(!memcmp(got_back, back, n * sizeof *back) && !memcmp(got_rms, rms, n * sizeof *rms),
                  "%s: the parts' rows of back or rms differ from the whole image's", what);
        gpuws_extract_catalog_free(got.cat);
    }
    if (*kind != GPUWS_BACKEND_CPU) test_tune(ctx, "extract_group", "device");
    for (size_t parts = 2; parts <= 4; parts++) {
        gpuws_background_result rs[4];
        char what[120];
        snprintf(what, sizeof what, "%s in %zu parts without the map, grouped on the device", test_backend_name(*kind),
                 parts);
        result got = { run_callers(ctx, x, mask, &ho, parts, budget, NULL, got_back, got_rms, rs, what), NULL };
        expect_same(what, &got, &want, 0);
        gpuws_extract_catalog_free(got.cat);
    }
    result_free(&want);
    free(got_seg), free(x), free(lvl), free(sig), free(back), free(rms), free(got_back), free(got_rms), free(mask);
    gpuws_context_destroy(ctx);
}
