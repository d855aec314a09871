/* Bad input for gpuws_extract_host and gpuws_background_host (include/gpuws/algorithms/extract.h). Their outputs
 * are f->host (the harness checks it is untouched after a failure): extract_host's segmentation map its first
 * BAD_N int32; background_host's back and rms its first 2 x BAD_N floats and the result at its byte 2048. The image
 * is BAD_H x BAD_W floats on the host. */
#include "../bad_input.h"

static const float image[BAD_N] = { 0, 5, 5, 0, [BAD_W] = 5, [BAD_W + 1] = 5, [5 * BAD_W + 9] = 9 };
#define SEGMAP BAD_HOST_OUT(int32_t)
#define BACK   BAD_HOST_OUT(float)
#define RMS    (BAD_HOST_OUT(float) + BAD_N)
#define RESULT ((gpuws_background_result *)(void *)(f->host + 2048))

/* extract_host's smallest budget for BAD_W pixels a row, without maps: one row and a row of halo either side, 45
 * bytes a pixel. */
#define EX_MIN_BUDGET (45 * BAD_W * 3)

/* eo NULL: no filter, minarea 1, the absolute threshold 1.5: two objects, the four 5s and the 9. */
static gpuws_status extract_with(bad_fixture *f, const gpuws_extract_options *eo, uint64_t budget, int32_t *segmap)
{
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_extract_options plain = GPUWS_EXTRACT_OPTIONS_INIT;
    plain.filter_type = GPUWS_FILTER_NONE, plain.minarea = 1;
    o.extract = eo ? eo : &plain, o.max_device_bytes = budget, o.segmap = segmap;
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract_host(f->ctx, BAD_W, BAD_H, image, &o, &cat);
    if (st) BAD_EXPECT_NULL(cat);
    else cr_assert(cat && cat->num_objects == 2 && cat->objects[0].npix + cat->objects[1].npix == 5, "two objects");
    gpuws_extract_catalog_free(cat);
    return st;
}

BAD_CASE(extract_host_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "extract_host: argument 'image' is NULL")
{
    gpuws_extract_catalog *cat = NULL;
    return gpuws_extract_host(f->ctx, BAD_W, BAD_H, NULL, NULL, &cat);
}

BAD_CASE(extract_host_null_catalog, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "extract_host: argument 'catalog' is NULL")
{
    return gpuws_extract_host(f->ctx, BAD_W, BAD_H, image, NULL, NULL);
}

BAD_CASE(extract_host_device_buffer_in_options, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "options->extract->rms is a device buffer; give the host array in options")
{
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    eo.rms = f->in;
    return extract_with(f, &eo, 0, SEGMAP);
}

BAD_CASE(extract_host_thresh_not_finite, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: thresh nan is not a finite number")
{
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    eo.thresh = NAN;
    return extract_with(f, &eo, 0, SEGMAP);
}

BAD_CASE(extract_host_segmap_overlaps_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: 'segmap' overlaps the image, back, rms, mask or another output")
{
    return extract_with(f, NULL, 0, (int32_t *)(uintptr_t)(image + 3));
}

/* With the background made by the call: its outputs in f->host after the segmentation map. */
static gpuws_status with_background(bad_fixture *f, const float *back, float *back_out, float *rms_out,
                                    const gpuws_buffer *mask)
{
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = bo.bh = 4, bo.mask = mask;
    o.background = &bo, o.back = back, o.back_out = back_out, o.rms_out = rms_out, o.segmap = SEGMAP;
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract_host(f->ctx, BAD_W, BAD_H, image, &o, &cat);
    BAD_EXPECT_NULL(cat);
    return st;
}

BAD_CASE(extract_host_back_with_background, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: options->back is given with options->background, which makes the background")
{
    return with_background(f, image, NULL, NULL, NULL);
}

BAD_CASE(extract_host_device_mask_in_background, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: options->background->mask is a device buffer; options->mask serves both")
{
    return with_background(f, NULL, NULL, NULL, f->in);
}

BAD_CASE(extract_host_back_out_overlaps_rms_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: 'back_out' overlaps the image, back, rms, mask or another output")
{
    float *out = BAD_HOST_OUT(float) + BAD_N; /* after the segmentation map */
    return with_background(f, NULL, out, out + BAD_N / 2, NULL);
}

BAD_CASE(extract_host_budget_below_one_band, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host: max_device_bytes 2159 is less than one band needs: 2160 bytes (a row and 1 rows of halo "
         "either side, 45 bytes a pixel)")
{
    return extract_with(f, NULL, EX_MIN_BUDGET - 1, SEGMAP);
}

BAD_CASE(extract_host_budget_of_exactly_one_band_runs, BAD_ALL, GPUWS_OK, "")
{
    const gpuws_status st = extract_with(f, NULL, EX_MIN_BUDGET, SEGMAP);
    cr_assert(st || (SEGMAP[1] > 0 && SEGMAP[BAD_W] == SEGMAP[1] && SEGMAP[0] == 0 && SEGMAP[5 * BAD_W + 9] > 0 &&
                     SEGMAP[5 * BAD_W + 9] != SEGMAP[1]),
              "the segmentation map of bands of one row");
    return st;
}

BAD_CASE(extract_host_bands_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host_bands: argument 'bands' is NULL")
{
    return gpuws_extract_host_bands(f->ctx, BAD_W, BAD_H, NULL, BAD_HOST_OUT(size_t), NULL);
}

BAD_CASE(extract_host_bands_for_a_budget_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "is less than one band needs: 2160 bytes")
{
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    o.max_device_bytes = EX_MIN_BUDGET - 1;
    return gpuws_extract_host_bands(f->ctx, BAD_W, BAD_H, &o, BAD_HOST_OUT(size_t), BAD_HOST_OUT(size_t) + 1);
}

/* Images of 2^31 pixels or more are legal (test_extract_host's large case), but a band of rows and halo is not. */
BAD_CASE(extract_host_band_of_2_to_the_31_pixels_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "extract_host: rows of 715827883 pixels; a band, a row with 1 of halo either side, holds at most 2^31 - 1 "
         "pixels")
{
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract_host(f->ctx, 715827883, 4, image, NULL, &cat); /* image is never read */
    BAD_EXPECT_NULL(cat);
    return st;
}

BAD_CASE(extract_host_of_2_to_the_32_rows_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "extract_host: 4294967296 rows; at most 2^32 - 1 are supported")
{
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract_host(f->ctx, 1, (size_t)1 << 32, image, NULL, &cat); /* never read */
    BAD_EXPECT_NULL(cat);
    return st;
}

/* Several devices (BAD_MORE_CONTEXTS_CASES): bands of one row spread over f->ctx and more[0..n). */
static gpuws_status with_more(bad_fixture *f, gpuws_context *const *more, size_t n)
{
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_extract_options plain = GPUWS_EXTRACT_OPTIONS_INIT;
    plain.filter_type = GPUWS_FILTER_NONE, plain.minarea = 1;
    o.extract = &plain, o.max_device_bytes = EX_MIN_BUDGET, o.segmap = SEGMAP;
    o.more_contexts = more, o.num_more_contexts = n;
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract_host(f->ctx, BAD_W, BAD_H, image, &o, &cat);
    gpuws_extract_catalog_free(cat);
    return st;
}

BAD_MORE_CONTEXTS_CASES(extract_host, with_more)

/* A caller's bands always hold their halo rows (the other callers' rows are not the caller's): the same minimum as
 * extract_host's in bands, even where the budget would hold the caller's rows as one band without it. */
BAD_CASE(extract_host_reduce_budget_below_one_band, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "extract_host_reduce: max_device_bytes 2159 is less than one band needs: 2160 bytes (a row and 1 rows of "
         "halo either side, 45 bytes a pixel)")
{
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_extract_options plain = GPUWS_EXTRACT_OPTIONS_INIT;
    plain.filter_type = GPUWS_FILTER_NONE, plain.minarea = 1;
    o.extract = &plain, o.max_device_bytes = EX_MIN_BUDGET - 1, o.segmap = SEGMAP;
    gpuws_extract_catalog *cat = NULL;
    test_sum_group *g = test_sum_group_new(1, 4096); /* one caller */
    const gpuws_status st = gpuws_extract_host_reduce(f->ctx, BAD_W, 2, image, &o, 0, 1, 0, test_sum_group_reduce,
                                                      test_sum_group_gather, g, &cat);
    test_sum_group_free(g);
    BAD_EXPECT_NULL(cat);
    return st;
}

/* background_host with meshes of 4 x 4 pixels: a grid of 4 x 2 meshes, a plan of 8 x 8 + 5 x (16 + 8) words. Its
 * smallest budget: pass 2's row of back and rms beside the plan, 2 x 16 x 4 + 736 bytes. */
#define BG_MIN_BUDGET 864

static gpuws_status background_with(bad_fixture *f, const gpuws_background_options *bo, uint64_t budget, float *back,
                                    float *rms)
{
    gpuws_background_host_options o = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    gpuws_background_options mesh4 = GPUWS_BACKGROUND_OPTIONS_INIT;
    mesh4.bw = mesh4.bh = 4;
    o.background = bo ? bo : &mesh4, o.max_device_bytes = budget;
    return gpuws_background_host(f->ctx, BAD_W, BAD_H, image, &o, back, rms, RESULT);
}

BAD_CASE(background_host_null_back, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "background_host: argument 'back' is NULL")
{
    return background_with(f, NULL, 0, NULL, RMS);
}

BAD_CASE(background_host_back_is_rms, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "background_host: 'back' and 'rms' must not overlap each other, the image or the mask")
{
    return background_with(f, NULL, 0, BACK, BACK);
}

BAD_CASE(background_host_device_mask_in_options, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "options->background->mask is a device buffer; give the host mask as options->mask")
{
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    bo.bw = bo.bh = 4, bo.mask = f->in;
    return background_with(f, &bo, 0, BACK, RMS);
}

BAD_CASE(background_host_mesh_larger_than_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "background_host: mesh 64 x 64 is larger than the 16 x 8 image")
{
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    return background_with(f, &bo, 0, BACK, RMS);
}

BAD_CASE(background_host_budget_below_one_band, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "background_host: max_device_bytes 863 is less than one band needs: 864 bytes")
{
    return background_with(f, NULL, BG_MIN_BUDGET - 1, BACK, RMS);
}

BAD_CASE(background_host_budget_of_exactly_one_band_runs, BAD_ALL, GPUWS_OK, "")
{
    const gpuws_status st = background_with(f, NULL, BG_MIN_BUDGET, BACK, RMS);
    cr_assert(st || (RESULT->nx == 4 && RESULT->ny == 2 && isfinite(BACK[0]) && isfinite(RMS[BAD_N - 1])),
              "a grid of 4 x 2 meshes, finite maps");
    return st;
}
