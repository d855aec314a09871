/* Bad input for gpuws_extract (include/gpuws/algorithms/extract.h). The segmentation map is f->out (the harness checks
 * it stays poison on failure); the catalogue pointer must come back NULL. */
#include "../bad_input.h"

#include <math.h>
#include <string.h>

/* The call on the BAD_W x BAD_H image with segmap = f->out; a failed call must leave the catalogue NULL. */
static gpuws_status call(bad_fixture *f, gpuws_stream *s, size_t w, size_t h, const gpuws_buffer *image,
                         gpuws_extract_options *o)
{
    gpuws_extract_catalog *cat = (gpuws_extract_catalog *)f; /* not NULL: the call must clear it */
    o->segmap = f->out;
    const gpuws_status st = gpuws_extract(s, w, h, image, o, &cat);
    if (st) cr_assert_null(cat, "a failed gpuws_extract left *catalog set");
    gpuws_extract_catalog_free(st ? NULL : cat);
    return st;
}

static gpuws_status with(bad_fixture *f, gpuws_extract_options o) { return call(f, NULL, BAD_W, BAD_H, f->in, &o); }

static gpuws_extract_options opts(void)
{
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    return o;
}

BAD_CASE(extract_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image': buffer is NULL")
{
    gpuws_extract_options o = opts();
    return call(f, NULL, BAD_W, BAD_H, NULL, &o);
}

BAD_CASE(extract_null_catalog, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'catalog' is NULL")
{
    gpuws_extract_options o = opts();
    o.segmap = f->out;
    return gpuws_extract(NULL, BAD_W, BAD_H, f->in, &o, NULL);
}

BAD_CASE(extract_zero_height, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "the image is 16 x 0: no pixels")
{
    gpuws_extract_options o = opts();
    return call(f, NULL, BAD_W, 0, f->in, &o);
}

BAD_CASE(extract_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    gpuws_extract_options o = opts();
    return call(f, NULL, SIZE_MAX / 4, 8, f->in, &o);
}

BAD_CASE(extract_image_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'image'")
{
    gpuws_extract_options o = opts();
    return call(f, NULL, BAD_W, BAD_H, f->small, &o);
}

BAD_CASE(extract_thresh_nan, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "thresh nan is not a finite number")
{
    gpuws_extract_options o = opts();
    o.thresh = NAN;
    return with(f, o);
}

BAD_CASE(extract_relative_thresh_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "(> 0 when relative to the noise)")
{
    gpuws_extract_options o = opts();
    o.thresh = 0.0;
    o.err = 2.0;
    return with(f, o);
}

BAD_CASE(extract_err_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "err -1 is not a finite number >= 0")
{
    gpuws_extract_options o = opts();
    o.err = -1.0;
    return with(f, o);
}

BAD_CASE(extract_minarea_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "minarea 0 is not at least 1")
{
    gpuws_extract_options o = opts();
    o.minarea = 0;
    return with(f, o);
}

BAD_CASE(extract_filter_type_unknown, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "filter_type 7 is not GPUWS_FILTER_NONE")
{
    gpuws_extract_options o = opts();
    o.filter_type = 7;
    return with(f, o);
}

BAD_CASE(extract_filter_of_even_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "filter size 2 x 3 is not odd")
{
    static const float k[6] = { 1, 1, 1, 1, 1, 1 };
    gpuws_extract_options o = opts();
    o.filter = k;
    o.filter_w = 2;
    o.filter_h = 3;
    return with(f, o);
}

BAD_CASE(extract_filter_of_zero_size, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "filter size 0 x 0 is not odd")
{
    static const float k[1] = { 1 };
    gpuws_extract_options o = opts();
    o.filter = k;
    return with(f, o);
}

BAD_CASE(extract_filter_of_zeros, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "absolute values sum to 0")
{
    static const float k[9] = { 0 };
    gpuws_extract_options o = opts();
    o.filter = k;
    o.filter_w = o.filter_h = 3;
    return with(f, o);
}

BAD_CASE(extract_filter_with_nan, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "absolute values sum to nan")
{
    static const float k[3] = { 1, NAN, 1 };
    gpuws_extract_options o = opts();
    o.filter = k;
    o.filter_w = 3;
    o.filter_h = 1;
    return with(f, o);
}

BAD_CASE(extract_connectivity_6, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "connectivity 6 is not 4 or 8")
{
    gpuws_extract_options o = opts();
    o.connectivity = 6;
    return with(f, o);
}

BAD_CASE(extract_deblend_nthresh_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "deblend_nthresh 0 is not at least 1")
{
    gpuws_extract_options o = opts();
    o.deblend_nthresh = 0;
    return with(f, o);
}

BAD_CASE(extract_deblend_cont_above_one, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "deblend_cont 1.5 is not in [0, 1]")
{
    gpuws_extract_options o = opts();
    o.deblend_cont = 1.5;
    return with(f, o);
}

BAD_CASE(extract_clean_param_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "clean_param 0 is not a finite number > 0")
{
    gpuws_extract_options o = opts();
    o.clean_param = 0.0;
    return with(f, o);
}

BAD_CASE(extract_gain_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "gain -2 is not a finite number >= 0")
{
    gpuws_extract_options o = opts();
    o.gain = -2.0;
    return with(f, o);
}

BAD_CASE(extract_sep_version_unknown, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "sep_version 2 is not GPUWS_SEP_1_4 or GPUWS_SEP_1_2")
{
    gpuws_extract_options o = opts();
    o.sep_version = 2;
    return with(f, o);
}

BAD_CASE(extract_back_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'back'")
{
    gpuws_extract_options o = opts();
    o.back = f->small;
    return with(f, o);
}

BAD_CASE(extract_rms_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'rms'")
{
    gpuws_extract_options o = opts();
    o.rms = f->foreign;
    return with(f, o);
}

BAD_CASE(extract_mask_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'mask'")
{
    gpuws_extract_options o = opts();
    o.mask = f->small;
    return with(f, o);
}

BAD_CASE(extract_segmap_is_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'segmap' must be a buffer of its own")
{
    gpuws_extract_options o = opts();
    gpuws_extract_catalog *cat = NULL;
    o.segmap = f->out;
    return gpuws_extract(NULL, BAD_W, BAD_H, f->out, &o, &cat);
}

BAD_CASE(extract_options_struct_size_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "struct_size 8 is less than")
{
    gpuws_extract_options o = opts();
    o.struct_size = 8;
    return with(f, o);
}

BAD_CASE(extract_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    gpuws_extract_options o = opts();
    return call(f, f->foreign_stream, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(extract_of_an_all_nan_image_finds_nothing, BAD_ALL, GPUWS_OK, "")
{
    /* NaN pixels are never above the threshold: an empty catalogue and a segmentation map of zeros */
    gpuws_extract_options o = opts();
    o.segmap = f->out;
    gpuws_extract_catalog *cat = NULL;
    const gpuws_status st = gpuws_extract(NULL, BAD_W, BAD_H, f->nan_img, &o, &cat);
    cr_assert_eq(st, GPUWS_OK, "%s", gpuws_last_error());
    cr_assert(cat && cat->num_objects == 0);
    int32_t *s = test_download(f->out, BAD_N * sizeof(int32_t));
    for (int i = 0; i < BAD_N; i++) cr_assert_eq(s[i], 0, "segmap[%d]", i);
    bad_expect_poison(f, f->out, BAD_N * sizeof(int32_t), BAD_N * 8, "out");
    free(s);
    gpuws_extract_catalog_free(cat);
    return st;
}
