/* Bad input for gpuws_background (include/gpuws/algorithms/extract.h). back is f->out, rms a poisoned buffer each row
 * makes (f->out has room for one map only) and checks itself; the harness checks f->out and the host result. */
#include "../bad_input.h"

#include <math.h>
#include <string.h>

#define BG_RESULT BAD_HOST_OUT(gpuws_background_result)

/* Mesh 4 x 4 over the BAD_W x BAD_H image: 4 x 2 meshes. */
static gpuws_background_options opts(void)
{
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = o.bh = 4;
    return o;
}

/* The call with back = f->out and a fresh rms; a failed call must leave rms all poison. */
static gpuws_status call(bad_fixture *f, gpuws_stream *s, size_t w, size_t h, const gpuws_buffer *image,
                         const gpuws_background_options *o)
{
    gpuws_buffer *rms = test_buffer(f->ctx, BAD_N * sizeof(float));
    const gpuws_status st = gpuws_background(s, GPUWS_F32, w, h, image, o, f->out, rms, BG_RESULT);
    if (st) bad_expect_poison(f, rms, 0, BAD_N * sizeof(float) + TEST_GUARD_BYTES, "rms");
    gpuws_buffer_destroy(rms);
    return st;
}

static gpuws_status with(bad_fixture *f, int bw, int bh, int fw, int fh, double fthresh)
{
    gpuws_background_options o = opts();
    o.bw = bw;
    o.bh = bh;
    o.fw = fw;
    o.fh = fh;
    o.fthresh = fthresh;
    return call(f, NULL, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(background_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image': buffer is NULL")
{
    return gpuws_background(NULL, GPUWS_F32, BAD_W, BAD_H, NULL, NULL, f->out, f->out, BG_RESULT);
}

BAD_CASE(background_zero_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "the image is 0 x 8: no pixels")
{
    gpuws_background_options o = opts();
    return call(f, NULL, 0, BAD_H, f->in, &o);
}

BAD_CASE(background_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    gpuws_background_options o = opts();
    return call(f, NULL, SIZE_MAX / 4, 8, f->in, &o);
}

BAD_CASE(background_mesh_wider_than_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "mesh 32 x 4 is larger than the 16 x 8 image")
{
    return with(f, 32, 4, 3, 3, 0.0);
}

BAD_CASE(background_mesh_taller_than_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "mesh 64 x 64 is larger than the 16 x 8 image")
{
    return call(f, NULL, BAD_W, BAD_H, f->in, NULL); /* the default mesh */
}

/* Images of any size are legal (test_extract_host's large case), but a mesh of 2^32 pixels or more is not. */
BAD_CASE(background_mesh_of_2_to_the_32_pixels_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "background: meshes of 65536 x 65536 pixels; at most 2^32 - 1 pixels a mesh")
{
    gpuws_background_options o = opts();
    o.bw = o.bh = 65536;
    return call(f, NULL, 65536, 65536, f->in, &o); /* the sizes are checked before the buffers */
}

BAD_CASE(background_mesh_width_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "mesh size 0 x 4 is not at least 1 x 1")
{
    return with(f, 0, 4, 3, 3, 0.0);
}

BAD_CASE(background_mesh_height_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "mesh size 4 x -3 is not at least 1 x 1")
{
    return with(f, 4, -3, 3, 3, 0.0);
}

BAD_CASE(background_filter_width_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "filter size 0 x 3 is not at least 1 x 1")
{
    return with(f, 4, 4, 0, 3, 0.0);
}

BAD_CASE(background_filter_height_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "filter size 3 x -1 is not at least 1 x 1")
{
    return with(f, 4, 4, 3, -1, 0.0);
}

BAD_CASE(background_fthresh_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "fthresh -1 is not a finite number >= 0")
{
    return with(f, 4, 4, 3, 3, -1.0);
}

BAD_CASE(background_fthresh_nan, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "is not a finite number >= 0")
{
    return with(f, 4, 4, 3, 3, NAN);
}

BAD_CASE(background_fthresh_infinite, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "fthresh inf is not a finite number >= 0")
{
    return with(f, 4, 4, 3, 3, INFINITY);
}

BAD_CASE(background_options_struct_size_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "struct_size 8 is less than")
{
    gpuws_background_options o = opts();
    o.struct_size = 8;
    return call(f, NULL, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(background_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'result' is NULL")
{
    gpuws_background_options o = opts();
    return gpuws_background(NULL, GPUWS_F32, BAD_W, BAD_H, f->in, &o, f->out, f->out, NULL);
}

BAD_CASE(background_back_is_rms, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'back' and 'rms' must be two buffers")
{
    gpuws_background_options o = opts();
    return gpuws_background(NULL, GPUWS_F32, BAD_W, BAD_H, f->in, &o, f->out, f->out, BG_RESULT);
}

/* The call with dtype, image and back of the row's choosing and a fresh rms, which must stay all poison. */
static gpuws_status call_back(bad_fixture *f, gpuws_dtype dtype, const gpuws_buffer *image, gpuws_buffer *back)
{
    gpuws_background_options o = opts();
    gpuws_buffer *rms = test_buffer(f->ctx, BAD_N * sizeof(float));
    const gpuws_status st = gpuws_background(NULL, dtype, BAD_W, BAD_H, image, &o, back, rms, BG_RESULT);
    bad_expect_poison(f, rms, 0, BAD_N * sizeof(float) + TEST_GUARD_BYTES, "rms");
    gpuws_buffer_destroy(rms);
    return st;
}

BAD_CASE(background_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i32 is not f32 or f64")
{
    return call_back(f, GPUWS_I32, f->in, f->out);
}

BAD_CASE(background_f64_image_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'image'")
{
    return call_back(f, GPUWS_F64, f->in, f->out); /* f->in holds BAD_N f32 values: half the bytes of BAD_N f64 */
}

BAD_CASE(background_back_is_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "neither the image nor the mask")
{
    return call_back(f, GPUWS_F32, f->out, f->out);
}

BAD_CASE(background_back_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'back'")
{
    return call_back(f, GPUWS_F32, f->in, f->small);
}

BAD_CASE(background_mask_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'mask'")
{
    gpuws_background_options o = opts();
    o.mask = f->small;
    return call(f, NULL, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(background_mask_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'mask'")
{
    gpuws_background_options o = opts();
    o.mask = f->foreign;
    return call(f, NULL, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(background_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    gpuws_background_options o = opts();
    return call(f, f->foreign_stream, BAD_W, BAD_H, f->in, &o);
}

BAD_CASE(background_of_an_all_nan_image_has_no_usable_mesh, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "no mesh of 4 x 4 pixels has half of them usable")
{
    gpuws_background_options o = opts();
    return call(f, f->stream, BAD_W, BAD_H, f->nan_img, &o);
}

BAD_CASE(background_of_a_masked_image_has_no_usable_mesh, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "no mesh of 4 x 4 pixels has half of them usable")
{
    unsigned char m[BAD_N];
    memset(m, 1, sizeof m);
    for (int i = 0; i < BAD_N; i += 3) m[i] = 0; /* a third usable: too few in every mesh */
    gpuws_buffer *mask = test_buffer_from(f->ctx, m, sizeof m);
    gpuws_background_options o = opts();
    o.mask = mask;
    const gpuws_status st = call(f, NULL, BAD_W, BAD_H, f->in, &o);
    gpuws_buffer_destroy(mask);
    return st;
}

BAD_CASE(background_of_a_constant_image, BAD_ALL, GPUWS_OK, "")
{
    /* extract.h: a constant image is its value with rms 0, and globalrms 1 (no positive rms, as SEP) */
    float px[BAD_N];
    for (int i = 0; i < BAD_N; i++) px[i] = 3.5f;
    gpuws_buffer *img = test_buffer_from(f->ctx, px, sizeof px), *rms = test_buffer(f->ctx, BAD_N * sizeof(float));
    gpuws_background_options o = opts();
    gpuws_background_result r;
    const gpuws_status st = gpuws_background(NULL, GPUWS_F32, BAD_W, BAD_H, img, &o, f->out, rms, &r);
    cr_assert_eq(st, GPUWS_OK, "%s", gpuws_last_error());
    float *b = test_download(f->out, BAD_N * sizeof(float)), *s = test_download(rms, BAD_N * sizeof(float));
    for (int i = 0; i < BAD_N; i++) cr_assert(b[i] == 3.5f && s[i] == 0.0f, "pixel %d: %g %g", i, b[i], s[i]);
    cr_assert(r.globalback == 3.5f && r.globalrms == 1.0f && r.nx == 4 && r.ny == 2 && r.bad_meshes == 0);
    bad_expect_poison(f, f->out, BAD_N * sizeof(float), BAD_N * 8, "out");
    free(b);
    free(s);
    gpuws_buffer_destroy(img);
    gpuws_buffer_destroy(rms);
    return st;
}
