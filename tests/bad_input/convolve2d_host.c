/* Bad input for gpuws_convolve2d_host, gpuws_convolve2d_host_bands and gpuws_convolve2d_separable_host
 * (include/gpuws/algorithms/convolve.h). The output is f->host (the harness checks it is untouched after a failure);
 * the image is BAD_H x BAD_W f32 on the host and the kernel 3 x 3, so a full convolution is 10 x 18 outputs (720
 * bytes). */
#include "../bad_input.h"

static const float img[BAD_N];
static const float k3[9];
#define OUT BAD_HOST_OUT(float)

/* The smallest budget for that convolution: one slot of one output row (3 input rows of 16, 18 outputs) and the
 * kernel, in f32: (3 * 16 + 18 + 9) * 4 bytes. */
#define MIN_BUDGET 300

static gpuws_status with_budget(bad_fixture *f, uint64_t bytes)
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.max_device_bytes = bytes;
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, &o, OUT);
}

BAD_CASE(convolve2d_host_budget_below_one_band_with_its_halo, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "a device budget of 299 bytes is too small: one band of one output row with its 2 halo rows, and the 3 x 3 "
         "kernel, need at least 300 bytes")
{
    return with_budget(f, MIN_BUDGET - 1);
}

BAD_CASE(convolve2d_host_budget_of_exactly_one_band_runs, BAD_ALL, GPUWS_OK, "") { return with_budget(f, MIN_BUDGET); }

BAD_CASE(convolve2d_host_bands_for_a_budget_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "need at least 300 bytes")
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.max_device_bytes = 1;
    return gpuws_convolve2d_host_bands(f->ctx, GPUWS_F32, BAD_H, BAD_W, 3, 3, &o, BAD_HOST_OUT(size_t),
                                       BAD_HOST_OUT(size_t) + 1);
}

BAD_CASE(convolve2d_host_bands_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'bands' is NULL")
{
    return gpuws_convolve2d_host_bands(f->ctx, GPUWS_F32, BAD_H, BAD_W, 3, 3, NULL, BAD_HOST_OUT(size_t), NULL);
}

BAD_CASE(convolve2d_host_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image' is NULL")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, NULL, BAD_H, BAD_W, 0, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_null_kernel, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is NULL")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, NULL, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_null_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out' is NULL")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, NULL, NULL);
}

BAD_CASE(convolve2d_host_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return gpuws_convolve2d_host(f->dead_ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_zero_height, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "zero size (image 0 x 16, kernel 3 x 3)")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, 0, BAD_W, 0, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_zero_kernel_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "zero size (image 8 x 16, kernel 3 x 0)")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 0, NULL, OUT);
}

BAD_CASE(convolve2d_host_row_stride_below_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "row_stride 15 is less than the width 16")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, BAD_W - 1, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i32 is not f32 or f64")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_I32, img, BAD_H, BAD_W, 0, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_mode_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "mode 3 is not full, same or valid")
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.mode = (gpuws_convolve_mode)3;
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, &o, OUT);
}

BAD_CASE(convolve2d_host_options_struct_size_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "convolve2d_host: options: struct_size 8 is less than")
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.struct_size = 8;
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, &o, OUT);
}

BAD_CASE(convolve2d_host_output_overlapping_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "out overlaps the image")
{
    /* the image is the first BAD_N floats of f->host's second half; out starts inside it */
    float *image = OUT + BAD_HOST / 8;
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, image, 4, 4, 0, k3, 3, 3, NULL, image + 8);
}

BAD_CASE(convolve2d_host_row_stride_overflows_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "element counts overflow size_t")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, SIZE_MAX / 2, k3, 3, 3, NULL, OUT);
}

BAD_CASE(convolve2d_host_side_of_2_to_the_30_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "each dimension plus the kernel's must stay below 2^30")
{
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, (size_t)1 << 30, BAD_W, 0, k3, 3, 3, NULL, OUT);
}

/* Several devices (BAD_MORE_CONTEXTS_CASES): the call with options naming more[0..n) and a budget of bands. */
static gpuws_status with_more(bad_fixture *f, gpuws_context *const *more, size_t n)
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.max_device_bytes = 4 * MIN_BUDGET;
    o.more_contexts = more, o.num_more_contexts = n;
    return gpuws_convolve2d_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, k3, 3, 3, &o, OUT);
}

BAD_MORE_CONTEXTS_CASES(convolve2d_host, with_more)

/* ---- gpuws_convolve2d_separable_host: the same convolution from the factors col and row (3 taps each) ---------- */

/* Its smallest budget: one slot of one output row (3 input rows of 16, 18 outputs), the factors (6), and the row sums
 * of a band of one row (3 rows of 18), in f32: (3 * 16 + 18 + 6 + 3 * 18) * 4 bytes. */
#define SEP_MIN_BUDGET 504

static gpuws_status separable_with(bad_fixture *f, uint64_t bytes, const float *col, const float *row, float *out)
{
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.max_device_bytes = bytes;
    return gpuws_convolve2d_separable_host(f->ctx, GPUWS_F32, img, BAD_H, BAD_W, 0, col, 3, row, 3, &o, out);
}

BAD_CASE(convolve2d_separable_host_budget_below_one_band, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "convolve2d_separable_host: a device budget of 503 bytes is too small: one band of one output row with its "
         "2 halo rows, and the factors of 3 and 3 taps, need at least 504 bytes")
{
    return separable_with(f, SEP_MIN_BUDGET - 1, k3, k3 + 3, OUT);
}

BAD_CASE(convolve2d_separable_host_budget_of_exactly_one_band_runs, BAD_ALL, GPUWS_OK, "")
{
    return separable_with(f, SEP_MIN_BUDGET, k3, k3 + 3, OUT);
}

BAD_CASE(convolve2d_separable_host_null_col, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "convolve2d_separable_host: argument 'col' is NULL")
{
    return separable_with(f, 0, NULL, k3, OUT);
}

BAD_CASE(convolve2d_separable_host_null_row, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "convolve2d_separable_host: argument 'row' is NULL")
{
    return separable_with(f, 0, k3, NULL, OUT);
}

BAD_CASE(convolve2d_separable_host_output_overlapping_a_factor, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "convolve2d_separable_host: out overlaps the row")
{
    return separable_with(f, 0, k3, OUT + 4, OUT);
}
