/* Bad input for every public algorithm call other than vector_add and reduce (those are in test_bad_input.c):
 * convolution, histogram, l2_norm, matmul, monte_carlo_pi, primes, transpose, the source-finding steps and
 * pipeline, and the ufuncs. One row or more per call; the harness (test_bad_input.c, bad_input.h) checks the exact
 * status, the message piece, that a failed call wrote no fixture buffer and no host output, and that nothing
 * leaked. Rows expecting GPUWS_OK are the edge cases the headers define (zero sizes, NaN images, one pixel) and
 * check their own results.
 *
 * Sizes to remember: every fixture buffer holds TEST_GUARD_BYTES (64) more than its payload, so f->small and
 * f->one_px hold 68 bytes, f->in and the images 576 (144 f32), f->out and f->in64 1088; an output "too small" for
 * f->small needs more than 68 bytes. Host outputs of a failing call go to f->host / f->result (checked unchanged). */
#include "../bad_input.h"
#include "sources/sources_internal.h"

#include <float.h>

/* Waits for f->ctx's streams and returns a copy of the first `bytes` of b. */
static void *download(bad_fixture *f, gpuws_buffer *b, size_t bytes)
{
    TEST_OK(gpuws_context_synchronize(f->ctx));
    return test_download(b, bytes);
}

/* Asserts the first n f32 values of f->out all equal `want` (NaN matches NaN) and the rest of f->out is poison. */
static void expect_out_f32(bad_fixture *f, size_t n, float want)
{
    float *o = download(f, f->out, n * sizeof *o);
    for (size_t i = 0; i < n; i++)
        cr_assert(o[i] == want || (isnan(o[i]) && isnan(want)), "out[%zu] = %g, wanted %g", i, o[i], want);
    free(o);
    bad_expect_poison(f, f->out, n * sizeof *o, BAD_N * 8, "out");
}

/* The same for n uint64 values (counts). */
static void expect_out_u64(bad_fixture *f, size_t n, uint64_t want)
{
    uint64_t *o = download(f, f->out, n * sizeof *o);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(o[i], want, "out[%zu] = %llu, wanted %llu", i, (unsigned long long)o[i], (unsigned long long)want);
    free(o);
    bad_expect_poison(f, f->out, n * sizeof *o, BAD_N * 8, "out");
}

/* Rows that make buffers of their own (the two helpers below) must not use f->dead: a new buffer can take the
 * destroyed one's address and be mistaken for it (docs/reliability.md). */

/* A buffer of exactly `bytes` (no guard): for outputs one element too small where even f->small is big enough. */
static gpuws_buffer *exact_buffer(bad_fixture *f, size_t bytes)
{
    gpuws_buffer *b;
    TEST_OK(gpuws_buffer_create(f->ctx, bytes, &b));
    return b;
}

/* BAD_N f32 values 1, 2, 3, ... with NaN at the given indices (-1 for none), in a new buffer of f->ctx. */
static gpuws_buffer *with_nans(bad_fixture *f, int nan_at, int nan_at2)
{
    float px[BAD_N];
    for (int i = 0; i < BAD_N; i++) px[i] = i == nan_at || i == nan_at2 ? NAN : (float)(i + 1);
    return test_buffer_from(f->ctx, px, sizeof px);
}

/* Element counts whose byte size wraps size_t: this many 4-byte (8-byte) elements need more than SIZE_MAX bytes. */
#define WRAPS_F32 (SIZE_MAX / 4 + 2)
#define WRAPS_F64 (SIZE_MAX / 8 + 2)

/* ================================================================================================================
 * convolve2d_output_shape, convolve2d
 * ================================================================================================================ */

BAD_CASE(convolve2d_output_shape_null_result, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT, "NULL result pointer")
{
    return gpuws_convolve2d_output_shape(BAD_H, BAD_W, 3, 3, GPUWS_CONVOLVE_FULL, NULL, BAD_HOST_OUT(size_t));
}

BAD_CASE(convolve2d_output_shape_mode_outside_the_enum, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT,
         "mode 3 is not full, same or valid")
{
    return gpuws_convolve2d_output_shape(BAD_H, BAD_W, 3, 3, (gpuws_convolve_mode)3, BAD_HOST_OUT(size_t),
                                         &BAD_HOST_OUT(size_t)[1]);
}

BAD_CASE(convolve2d_output_shape_zero_height, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT,
         "zero size (image 0 x 16, kernel 3 x 3)")
{
    return gpuws_convolve2d_output_shape(0, BAD_W, 3, 3, GPUWS_CONVOLVE_SAME, BAD_HOST_OUT(size_t),
                                         &BAD_HOST_OUT(size_t)[1]);
}

BAD_CASE(convolve2d_output_shape_valid_when_neither_input_contains_the_other, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT,
         "one must be at least as large as the other in every dimension")
{
    return gpuws_convolve2d_output_shape(BAD_H, BAD_W, 9, 3, GPUWS_CONVOLVE_VALID, BAD_HOST_OUT(size_t),
                                         &BAD_HOST_OUT(size_t)[1]);
}

BAD_CASE(convolve2d_output_shape_side_of_2_to_the_30_is_unsupported, BAD_CPU, GPUWS_ERR_UNSUPPORTED,
         "must stay below 2^30")
{
    return gpuws_convolve2d_output_shape((size_t)1 << 30, BAD_W, 3, 3, GPUWS_CONVOLVE_FULL, BAD_HOST_OUT(size_t),
                                         &BAD_HOST_OUT(size_t)[1]);
}

BAD_CASE(convolve2d_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image': buffer is NULL")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, NULL, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_null_kernel, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel': buffer is NULL")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, NULL, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_destroyed_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out'")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->dead);
}

BAD_CASE(convolve2d_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT,
         "argument 'out': the buffer belongs to another context")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->foreign);
}

BAD_CASE(convolve2d_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_convolve2d(f->foreign_stream, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_convolve2d(f->dead_stream, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i32 is not f32 or f64")
{
    return gpuws_convolve2d(NULL, GPUWS_I32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_mode_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "mode 3 is not full, same or valid")
{
    gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    o.mode = (gpuws_convolve_mode)3;
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, &o, f->out);
}

BAD_CASE(convolve2d_boundary_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "boundary -1 is not fill, wrap or symm")
{
    gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    o.boundary = (gpuws_convolve_boundary)-1;
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, &o, f->out);
}

BAD_CASE(convolve2d_zero_kernel_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "zero size (image 8 x 16, kernel 3 x 0)")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 0, NULL, f->out);
}

BAD_CASE(convolve2d_row_stride_below_the_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "row_stride 8 is less than the width 16")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 8, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_valid_when_neither_input_contains_the_other, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "for 'valid' mode")
{
    gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    o.mode = GPUWS_CONVOLVE_VALID;
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 9, 3, &o, f->out);
}

BAD_CASE(convolve2d_image_bytes_with_a_huge_row_stride_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'image': 8070450532247928841 elements of 4 bytes overflow size_t")
{
    /* (height - 1) * row_stride + width elements fit size_t; times 4 bytes they do not */
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, SIZE_MAX / 16, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_image_smaller_than_its_strided_shape, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'image': 716 elements")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 100, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_output_too_small_for_the_full_shape, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'out': 180 elements")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->in, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->small);
}

BAD_CASE(convolve2d_output_is_the_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "out must not be the image buffer")
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->out, BAD_H, BAD_W, 0, f->in, 3, 3, NULL, f->out);
}

BAD_CASE(convolve2d_of_one_pixel_by_one_pixel, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_convolve2d(f->stream, GPUWS_F32, f->one_px, 1, 1, 0, f->one_px, 1, 1, NULL, f->out);
    if (!st) expect_out_f32(f, 1, 56.25f);
    return st;
}

/* ================================================================================================================
 * convolve1d_output_length, convolve1d
 * ================================================================================================================ */

BAD_CASE(convolve1d_output_length_null_result, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT, "NULL result pointer")
{
    return gpuws_convolve1d_output_length(BAD_N, 3, GPUWS_CONVOLVE_FULL, NULL);
}

BAD_CASE(convolve1d_output_length_of_an_empty_input, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT,
         "a cannot be empty (n = 0, m = 3)")
{
    return gpuws_convolve1d_output_length(0, 3, GPUWS_CONVOLVE_SAME, BAD_HOST_OUT(size_t));
}

BAD_CASE(convolve1d_output_length_mode_outside_the_enum, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT,
         "mode 5 is not full, same or valid")
{
    return gpuws_convolve1d_output_length(BAD_N, 3, (gpuws_convolve_mode)5, BAD_HOST_OUT(size_t));
}

BAD_CASE(convolve1d_output_length_of_2_to_the_62_is_unsupported, BAD_CPU, GPUWS_ERR_UNSUPPORTED,
         "each must stay below 2^62")
{
    return gpuws_convolve1d_output_length((size_t)1 << 62, 3, GPUWS_CONVOLVE_FULL, BAD_HOST_OUT(size_t));
}

BAD_CASE(convolve1d_null_signal, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'a': buffer is NULL")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, NULL, BAD_N, f->in, 3, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_null_filter, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'v': buffer is NULL")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, NULL, 3, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_empty_filter, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "v cannot be empty (n = 128, m = 0)")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, f->in, 0, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_mode_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "mode 3 is not full, same or valid")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, f->in, 3, (gpuws_convolve_mode)3, f->out);
}

BAD_CASE(convolve1d_dtype_u8, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype u8 is not f32 or f64")
{
    return gpuws_convolve1d(NULL, GPUWS_U8, f->in, BAD_N, f->in, 3, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_signal_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'a': 2305843009213693953 elements of 8 bytes overflow size_t")
{
    return gpuws_convolve1d(NULL, GPUWS_F64, f->in64, WRAPS_F64, f->in64, 3, GPUWS_CONVOLVE_VALID, f->out);
}

BAD_CASE(convolve1d_output_too_small_for_the_full_length, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'out': 130 elements")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, f->in, 3, GPUWS_CONVOLVE_FULL, f->small);
}

BAD_CASE(convolve1d_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'out'")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, f->in, 3, GPUWS_CONVOLVE_FULL, f->foreign);
}

BAD_CASE(convolve1d_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_convolve1d(f->dead_stream, GPUWS_F32, f->in, BAD_N, f->in, 3, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_output_is_the_filter, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "out must not be the v buffer")
{
    return gpuws_convolve1d(NULL, GPUWS_F32, f->in, BAD_N, f->out, 3, GPUWS_CONVOLVE_FULL, f->out);
}

BAD_CASE(convolve1d_of_one_element_by_one_element, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_convolve1d(f->stream, GPUWS_F32, f->one_px, 1, f->one_px, 1, GPUWS_CONVOLVE_VALID, f->out);
    if (!st) expect_out_f32(f, 1, 56.25f);
    return st;
}

/* ================================================================================================================
 * histogram
 * ================================================================================================================ */

BAD_CASE(histogram_zero_bins, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "bins = 0 (need at least one bin)")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 0, 128, 0, f->out);
}

BAD_CASE(histogram_lo_equal_to_hi, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "lo = 5 is not below hi = 5")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 5, 5, 4, f->out);
}

BAD_CASE(histogram_lo_above_hi, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "lo = 128 is not below hi = 0")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 128, 0, 4, f->out);
}

BAD_CASE(histogram_nan_bound, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "is not finite")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, NAN, 128, 4, f->out);
}

BAD_CASE(histogram_range_wider_than_double, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "overflows double")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, -DBL_MAX, DBL_MAX, 4, f->out);
}

BAD_CASE(histogram_range_too_narrow_for_the_bins, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "too narrow for 3 bins (step 0)")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 0, 4.9406564584124654e-324, 3, f->out);
}

BAD_CASE(histogram_f64_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype f64 is not f32 or i32")
{
    return gpuws_histogram(NULL, GPUWS_F64, BAD_N, f->in64, 0, 128, 4, f->out);
}

BAD_CASE(histogram_null_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'x': buffer is NULL")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, NULL, 0, 128, 4, f->out);
}

BAD_CASE(histogram_more_values_than_the_input_holds, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'x': 145 elements")
{
    return gpuws_histogram(NULL, GPUWS_F32, 145, f->in, 0, 128, 4, f->out);
}

BAD_CASE(histogram_counts_too_small_for_the_bins, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'counts': 9 elements of 8 bytes")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 0, 128, 9, f->small);
}

BAD_CASE(histogram_counts_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'counts'")
{
    return gpuws_histogram(NULL, GPUWS_F32, BAD_N, f->in, 0, 128, 4, f->foreign);
}

BAD_CASE(histogram_of_zero_values_writes_zero_counts, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_histogram(f->stream, GPUWS_I32, 0, f->in, 0, 128, 4, f->out);
    if (!st) expect_out_u64(f, 4, 0);
    return st;
}

BAD_CASE(histogram_does_not_count_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_histogram(f->stream, GPUWS_F32, BAD_N, f->nan_img, -1e30, 1e30, 4, f->out);
    if (!st) expect_out_u64(f, 4, 0);
    return st;
}

/* ================================================================================================================
 * l2_norm
 * ================================================================================================================ */

BAD_CASE(l2_norm_rows_times_cols_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "overflows size_t")
{
    return gpuws_l2_norm(NULL, GPUWS_F32, SIZE_MAX / 2, 4, f->in, f->out);
}

BAD_CASE(l2_norm_input_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'in': 2305843009213693953 elements of 8 bytes")
{
    return gpuws_l2_norm(NULL, GPUWS_F64, 1, WRAPS_F64, f->in64, f->out);
}

BAD_CASE(l2_norm_output_too_small_for_the_rows, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 32 elements")
{
    return gpuws_l2_norm(NULL, GPUWS_F32, 32, 4, f->in, f->small);
}

BAD_CASE(l2_norm_in_place, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "out must not be the same buffer as in")
{
    return gpuws_l2_norm(NULL, GPUWS_F32, BAD_H, BAD_W, f->out, f->out);
}

BAD_CASE(l2_norm_cols_of_2_to_the_31, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "each must be below 2^31")
{
    return gpuws_l2_norm(NULL, GPUWS_F32, 0, (size_t)1 << 31, f->in, f->out);
}

BAD_CASE(l2_norm_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i32 is not f32 or f64")
{
    return gpuws_l2_norm(NULL, GPUWS_I32, BAD_H, BAD_W, f->in, f->out);
}

BAD_CASE(l2_norm_destroyed_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'in'")
{
    return gpuws_l2_norm(NULL, GPUWS_F32, BAD_H, BAD_W, f->dead, f->out);
}

BAD_CASE(l2_norm_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_l2_norm(f->foreign_stream, GPUWS_F32, BAD_H, BAD_W, f->in, f->out);
}

BAD_CASE(l2_norm_of_rows_holding_nan_is_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_l2_norm(f->stream, GPUWS_F32, BAD_H, BAD_W, f->nan_img, f->out);
    if (!st) expect_out_f32(f, BAD_H, NAN);
    return st;
}

BAD_CASE(l2_norm_of_rows_holding_infinities_is_infinity, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_l2_norm(f->stream, GPUWS_F32, BAD_H, BAD_W, f->inf_img, f->out);
    if (!st) expect_out_f32(f, BAD_H, INFINITY);
    return st;
}

BAD_CASE(l2_norm_of_zero_rows_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_l2_norm(f->stream, GPUWS_F32, 0, BAD_W, f->in, f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

BAD_CASE(l2_norm_of_empty_rows_is_zero, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_l2_norm(f->stream, GPUWS_F32, 3, 0, f->in, f->out);
    if (!st) expect_out_f32(f, 3, 0.0f);
    return st;
}

/* ================================================================================================================
 * matmul, matmul_ex
 * ================================================================================================================ */

BAD_CASE(matmul_m_times_k_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "a matrix's element count overflows size_t")
{
    return gpuws_matmul(NULL, GPUWS_F32, SIZE_MAX / 2, 1, 4, f->in, f->in, f->out);
}

BAD_CASE(matmul_a_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'a': 2305843009213693953 elements of 8 bytes")
{
    return gpuws_matmul(NULL, GPUWS_F64, 1, 1, WRAPS_F64, f->in64, f->in64, f->out);
}

BAD_CASE(matmul_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'c': 64 elements")
{
    return gpuws_matmul(NULL, GPUWS_F32, 8, 8, 16, f->in, f->in, f->small);
}

BAD_CASE(matmul_b_shorter_than_k_by_n, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'b': 160 elements")
{
    return gpuws_matmul(NULL, GPUWS_F32, 1, 10, 16, f->in, f->in, f->out);
}

BAD_CASE(matmul_output_is_an_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "c must not be the same buffer as a")
{
    return gpuws_matmul(NULL, GPUWS_F32, 4, 4, 4, f->out, f->in, f->out);
}

BAD_CASE(matmul_dimension_of_2_to_the_31, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "each dimension must be below 2^31")
{
    return gpuws_matmul(NULL, GPUWS_F32, (size_t)1 << 31, 0, 0, f->in, f->in, f->out);
}

BAD_CASE(matmul_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i64 is not f32 or f64")
{
    return gpuws_matmul(NULL, GPUWS_I64, 4, 4, 4, f->in64, f->in64, f->out);
}

BAD_CASE(matmul_null_b, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'b': buffer is NULL")
{
    return gpuws_matmul(NULL, GPUWS_F32, 4, 4, 4, f->in, NULL, f->out);
}

BAD_CASE(matmul_b_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'b'")
{
    return gpuws_matmul(NULL, GPUWS_F32, 4, 4, 4, f->in, f->foreign, f->out);
}

BAD_CASE(matmul_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_matmul(f->dead_stream, GPUWS_F32, 4, 4, 4, f->in, f->in, f->out);
}

BAD_CASE(matmul_with_k_zero_is_zeros, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_matmul(f->stream, GPUWS_F32, 2, 3, 0, f->in, f->in, f->out);
    if (!st) expect_out_f32(f, 6, 0.0f);
    return st;
}

BAD_CASE(matmul_with_m_zero_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_matmul(f->stream, GPUWS_F32, 0, 3, 4, f->in, f->in, f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

BAD_CASE(matmul_ex_variant_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "variant 3 is not a gpuws_matmul_variant")
{
    return gpuws_matmul_ex(NULL, (gpuws_matmul_variant)3, GPUWS_F32, 4, 4, 4, f->in, f->in, f->out);
}

BAD_CASE(matmul_ex_negative_variant, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "variant -1 is not a gpuws_matmul_variant")
{
    return gpuws_matmul_ex(NULL, (gpuws_matmul_variant)-1, GPUWS_F32, 4, 4, 4, f->in, f->in, f->out);
}

BAD_CASE(matmul_ex_naive_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'c'")
{
    return gpuws_matmul_ex(NULL, GPUWS_MATMUL_NAIVE, GPUWS_F32, 4, 4, 4, f->in, f->in, f->foreign);
}

/* ================================================================================================================
 * monte_carlo_pi, monte_carlo_pi_value
 * ================================================================================================================ */

BAD_CASE(monte_carlo_pi_samples_past_2_to_the_64, BAD_ALL, GPUWS_ERR_OVERFLOW, "run past 2^64")
{
    return gpuws_monte_carlo_pi(NULL, UINT64_MAX, 2, 1, f->out);
}

BAD_CASE(monte_carlo_pi_last_sample_2_to_the_64_minus_1_is_fine, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_monte_carlo_pi(f->stream, UINT64_MAX - 2, 3, 1, f->out);
    if (st) return st;
    uint64_t *h = download(f, f->out, 8);
    cr_assert_leq(h[0], 3, "hits %llu of 3 samples", (unsigned long long)h[0]);
    free(h);
    bad_expect_poison(f, f->out, 8, BAD_N * 8, "out");
    return st;
}

BAD_CASE(monte_carlo_pi_hits_buffer_of_4_bytes, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'hits': 1 elements of 8 bytes need 8 bytes")
{
    gpuws_buffer *b = exact_buffer(f, 4);
    gpuws_status st = gpuws_monte_carlo_pi(NULL, 0, 1000, 1, b);
    gpuws_buffer_destroy(b);
    return st;
}

BAD_CASE(monte_carlo_pi_null_hits, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'hits': buffer is NULL")
{
    return gpuws_monte_carlo_pi(NULL, 0, 1000, 1, NULL);
}

BAD_CASE(monte_carlo_pi_destroyed_hits, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'hits'")
{
    return gpuws_monte_carlo_pi(NULL, 0, 1000, 1, f->dead);
}

BAD_CASE(monte_carlo_pi_hits_of_another_context_on_this_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT,
         "stream belongs to another context")
{
    return gpuws_monte_carlo_pi(f->stream, 0, 1000, 1, f->foreign);
}

BAD_CASE(monte_carlo_pi_of_zero_samples_is_zero_hits, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_monte_carlo_pi(f->stream, 5, 0, 1, f->out);
    if (!st) expect_out_u64(f, 1, 0);
    return st;
}

BAD_CASE(monte_carlo_pi_value_of_zero_samples_has_no_estimate, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "n = 0 samples give no estimate")
{
    return gpuws_monte_carlo_pi_value(f->ctx, NULL, 0, 0, 1, BAD_HOST_OUT(uint64_t), &f->result);
}

BAD_CASE(monte_carlo_pi_value_samples_past_2_to_the_64, BAD_ALL, GPUWS_ERR_OVERFLOW, "run past 2^64")
{
    return gpuws_monte_carlo_pi_value(f->ctx, NULL, (uint64_t)1 << 63, (uint64_t)1 << 63 | 1, 1, BAD_HOST_OUT(uint64_t),
                                      &f->result);
}

BAD_CASE(monte_carlo_pi_value_null_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'ctx': context is NULL")
{
    return gpuws_monte_carlo_pi_value(NULL, NULL, 0, 1000, 1, BAD_HOST_OUT(uint64_t), &f->result);
}

BAD_CASE(monte_carlo_pi_value_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return gpuws_monte_carlo_pi_value(f->dead_ctx, NULL, 0, 1000, 1, BAD_HOST_OUT(uint64_t), &f->result);
}

BAD_CASE(monte_carlo_pi_value_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT,
         "stream belongs to another context")
{
    return gpuws_monte_carlo_pi_value(f->ctx, f->foreign_stream, 0, 1000, 1, BAD_HOST_OUT(uint64_t), &f->result);
}

BAD_CASE(monte_carlo_pi_value_writes_only_the_outputs_asked_for, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_monte_carlo_pi_value(f->ctx, f->stream, 0, 1000, 1, NULL, &f->result);
    if (st) return st;
    cr_assert(f->result > 2.5 && f->result < 3.8, "pi = %g from 1000 samples", f->result);
    return gpuws_monte_carlo_pi_value(f->ctx, NULL, 0, 1000, 1, NULL, NULL);
}

/* ================================================================================================================
 * primes
 * ================================================================================================================ */

BAD_CASE(primes_n_past_2_to_the_31_does_not_fit_int32, BAD_ALL, GPUWS_ERR_OVERFLOW, "do not fit the int32 output")
{
    return gpuws_primes(NULL, GPUWS_PRIMES_FAST, GPUWS_PRIMES_MAX_N + 1, f->out, NULL);
}

BAD_CASE(primes_out_and_count_both_null, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'out' and 'count' are both NULL")
{
    return gpuws_primes(NULL, GPUWS_PRIMES_FAST, 100, NULL, NULL);
}

BAD_CASE(primes_variant_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "variant 2 is not a gpuws_primes_variant")
{
    return gpuws_primes(NULL, (gpuws_primes_variant)2, 100, f->out, NULL);
}

BAD_CASE(primes_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 100 elements of 4 bytes")
{
    return gpuws_primes(NULL, GPUWS_PRIMES_TRIAL, 100, f->small, NULL);
}

BAD_CASE(primes_count_buffer_of_4_bytes, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'count': 1 elements of 8 bytes")
{
    gpuws_buffer *b = exact_buffer(f, 4);
    gpuws_status st = gpuws_primes(NULL, GPUWS_PRIMES_FAST, 100, f->out, b);
    gpuws_buffer_destroy(b);
    return st;
}

BAD_CASE(primes_count_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'count'")
{
    return gpuws_primes(NULL, GPUWS_PRIMES_FAST, 100, f->out, f->foreign);
}

BAD_CASE(primes_destroyed_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out'")
{
    return gpuws_primes(NULL, GPUWS_PRIMES_FAST, 100, f->dead, NULL);
}

BAD_CASE(primes_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_primes(f->foreign_stream, GPUWS_PRIMES_FAST, 100, NULL, f->out);
}

BAD_CASE(primes_of_n_0_writes_only_a_zero_count, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_primes(f->stream, GPUWS_PRIMES_FAST, 0, f->small, f->out);
    if (st) return st;
    expect_out_u64(f, 1, 0);
    bad_expect_poison(f, f->small, 0, 4 + TEST_GUARD_BYTES, "small");
    return st;
}

BAD_CASE(primes_below_two_are_none, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_primes(f->stream, GPUWS_PRIMES_TRIAL, 2, f->out, NULL);
    if (st) return st;
    int32_t *o = download(f, f->out, 8);
    cr_assert(o[0] == 0 && o[1] == 0, "out = {%d, %d}", o[0], o[1]);
    free(o);
    bad_expect_poison(f, f->out, 8, BAD_N * 8, "out");
    return st;
}

/* ================================================================================================================
 * transpose
 * ================================================================================================================ */

BAD_CASE(transpose_rows_times_cols_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "overflows size_t")
{
    return gpuws_transpose(NULL, GPUWS_F32, SIZE_MAX / 4, 8, f->in, f->out);
}

BAD_CASE(transpose_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'in': 2305843009213693953 elements of 8 bytes")
{
    return gpuws_transpose(NULL, GPUWS_I64, 1, WRAPS_F64, f->in64, f->out);
}

BAD_CASE(transpose_two_byte_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i16 is not a 4- or 8-byte type")
{
    return gpuws_transpose(NULL, GPUWS_I16, BAD_H, BAD_W, f->in, f->out);
}

BAD_CASE(transpose_in_place, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "no in-place transpose")
{
    return gpuws_transpose(NULL, GPUWS_F32, BAD_H, BAD_W, f->out, f->out);
}

BAD_CASE(transpose_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements")
{
    return gpuws_transpose(NULL, GPUWS_F32, BAD_H, BAD_W, f->in, f->small);
}

BAD_CASE(transpose_rows_of_2_to_the_31, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "each must be below 2^31")
{
    return gpuws_transpose(NULL, GPUWS_F32, (size_t)1 << 31, 0, f->in, f->out);
}

BAD_CASE(transpose_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'out'")
{
    return gpuws_transpose(NULL, GPUWS_F32, BAD_H, BAD_W, f->in, f->foreign);
}

BAD_CASE(transpose_of_zero_rows_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_transpose(f->stream, GPUWS_F32, 0, BAD_W, f->in, f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

BAD_CASE(transpose_of_one_pixel_is_that_pixel, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_transpose(f->stream, GPUWS_F32, 1, 1, f->one_px, f->out);
    if (!st) expect_out_f32(f, 1, 7.5f);
    return st;
}

/* ================================================================================================================
 * sigma_clip (host result in f->host)
 * ================================================================================================================ */

#define CLIP_RESULT BAD_HOST_OUT(gpuws_sigma_clip_result)

BAD_CASE(sigma_clip_of_an_all_nan_image_has_no_statistics, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "all 128 values are NaN: no statistics exist")
{
    return gpuws_sigma_clip(f->stream, BAD_N, f->nan_img, NULL, CLIP_RESULT);
}

BAD_CASE(sigma_clip_of_zero_values_has_no_statistics, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "no values (n == 0)")
{
    return gpuws_sigma_clip(NULL, 0, f->in, NULL, CLIP_RESULT);
}

static gpuws_status clip_with(bad_fixture *f, double kappa, int max_iterations)
{
    gpuws_sigma_clip_options o = { .kappa = kappa, .max_iterations = max_iterations };
    return gpuws_sigma_clip(NULL, BAD_N, f->in, &o, CLIP_RESULT);
}

BAD_CASE(sigma_clip_kappa_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "kappa 0 is not a finite number > 0")
{
    return clip_with(f, 0.0, 10);
}

BAD_CASE(sigma_clip_kappa_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "kappa -3 is not a finite number > 0")
{
    return clip_with(f, -3.0, 10);
}

BAD_CASE(sigma_clip_kappa_nan, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "is not a finite number > 0")
{
    return clip_with(f, NAN, 10);
}

BAD_CASE(sigma_clip_kappa_infinite, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "kappa inf is not a finite number > 0")
{
    return clip_with(f, INFINITY, 10);
}

BAD_CASE(sigma_clip_max_iterations_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "max_iterations 0 is not >= 1")
{
    return clip_with(f, 3.0, 0);
}

BAD_CASE(sigma_clip_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'result' is NULL")
{
    return gpuws_sigma_clip(NULL, BAD_N, f->in, NULL, NULL);
}

BAD_CASE(sigma_clip_null_data, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'data': buffer is NULL")
{
    return gpuws_sigma_clip(NULL, BAD_N, NULL, NULL, CLIP_RESULT);
}

BAD_CASE(sigma_clip_more_values_than_the_data_holds, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'data': 145 elements")
{
    return gpuws_sigma_clip(NULL, 145, f->in, NULL, CLIP_RESULT);
}

BAD_CASE(sigma_clip_value_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'data': 4611686018427387905 elements of 4 bytes")
{
    return gpuws_sigma_clip(NULL, WRAPS_F32, f->in, NULL, CLIP_RESULT);
}

BAD_CASE(sigma_clip_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_sigma_clip(f->foreign_stream, BAD_N, f->in, NULL, CLIP_RESULT);
}

BAD_CASE(sigma_clip_of_one_pixel_keeps_nothing, BAD_ALL, GPUWS_OK, "")
{
    /* docs/algorithms/sigma_clip.md: a constant image (n = 1 included) has std 0, so the first pass keeps nothing
     * and the second, on the empty set, removes nothing */
    gpuws_sigma_clip_result r;
    gpuws_status st = gpuws_sigma_clip(f->stream, 1, f->one_px, NULL, &r);
    if (st) return st;
    cr_assert(r.count == 0 && isnan(r.median) && isnan(r.mean) && isnan(r.std), "count %zu median %g mean %g std %g",
              r.count, r.median, r.mean, r.std);
    cr_assert(r.iterations == 2 && r.converged == 1, "iterations %d converged %d", r.iterations, r.converged);
    return st;
}

BAD_CASE(sigma_clip_of_infinities_removes_everything, BAD_ALL, GPUWS_OK, "")
{
    /* docs/algorithms/sigma_clip.md: with +-inf among the values the std is NaN and the pass removes everything */
    gpuws_sigma_clip_result r;
    gpuws_status st = gpuws_sigma_clip(NULL, BAD_N, f->inf_img, NULL, &r);
    if (st) return st;
    cr_assert(r.count == 0 && r.converged == 1, "count %zu converged %d", r.count, r.converged);
    return st;
}

/* ================================================================================================================
 * threshold
 * ================================================================================================================ */

BAD_CASE(threshold_mask_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'mask': 128 elements of 1 bytes")
{
    return gpuws_threshold(NULL, BAD_N, f->in, 10.0f, f->small);
}

BAD_CASE(threshold_null_data, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'data': buffer is NULL")
{
    return gpuws_threshold(NULL, BAD_N, NULL, 10.0f, f->out);
}

BAD_CASE(threshold_null_mask, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'mask': buffer is NULL")
{
    return gpuws_threshold(NULL, BAD_N, f->in, 10.0f, NULL);
}

BAD_CASE(threshold_mask_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'mask'")
{
    return gpuws_threshold(NULL, BAD_N, f->in, 10.0f, f->foreign);
}

BAD_CASE(threshold_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_threshold(f->dead_stream, BAD_N, f->in, 10.0f, f->out);
}

BAD_CASE(threshold_value_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'data': 4611686018427387905 elements of 4 bytes")
{
    return gpuws_threshold(NULL, WRAPS_F32, f->in, 10.0f, f->out);
}

/* Asserts mask bytes [0, n) are all `want` and the rest of f->out is poison. */
static void expect_mask(bad_fixture *f, size_t n, unsigned char want)
{
    unsigned char *m = download(f, f->out, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(m[i], want, "mask[%zu] = %u", i, m[i]);
    free(m);
    bad_expect_poison(f, f->out, n, BAD_N * 8, "out");
}

BAD_CASE(threshold_of_a_nan_image_selects_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_threshold(f->stream, BAD_N, f->nan_img, -1e30f, f->out);
    if (!st) expect_mask(f, BAD_N, 0);
    return st;
}

BAD_CASE(threshold_nan_threshold_selects_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_threshold(f->stream, BAD_N, f->in, NAN, f->out);
    if (!st) expect_mask(f, BAD_N, 0);
    return st;
}

BAD_CASE(threshold_of_zero_values_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_threshold(f->stream, 0, f->in, 10.0f, f->out);
    if (!st) expect_mask(f, 0, 0);
    return st;
}

/* ================================================================================================================
 * label (N in f->host)
 * ================================================================================================================ */

#define NUM_LABELS BAD_HOST_OUT(size_t)

BAD_CASE(label_connectivity_5, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "connectivity 5 is not 4 or 8")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->in, 5, f->out, NUM_LABELS);
}

BAD_CASE(label_null_num_labels, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'num_labels' is NULL")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->in, 4, f->out, NULL);
}

BAD_CASE(label_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    return gpuws_label(NULL, SIZE_MAX / 4, 8, f->in, 4, f->out, NUM_LABELS);
}

BAD_CASE(label_row_of_2_to_the_31_pixels_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "a row has at most 2^31 - 1 pixels")
{
    return gpuws_label(NULL, (size_t)1 << 31, 1, f->in, 8, f->out, NUM_LABELS);
}

BAD_CASE(label_labels_are_the_mask, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'labels' and 'mask' are the same buffer")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->out, 4, f->out, NUM_LABELS);
}

BAD_CASE(label_labels_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'labels': 128 elements of 4 bytes")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->in, 4, f->small, NUM_LABELS);
}

BAD_CASE(label_mask_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'mask': 128 elements of 1 bytes")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->small, 4, f->out, NUM_LABELS);
}

BAD_CASE(label_null_mask, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'mask': buffer is NULL")
{
    return gpuws_label(NULL, BAD_W, BAD_H, NULL, 4, f->out, NUM_LABELS);
}

BAD_CASE(label_labels_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'labels'")
{
    return gpuws_label(NULL, BAD_W, BAD_H, f->in, 8, f->foreign, NUM_LABELS);
}

BAD_CASE(label_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_label(f->dead_stream, BAD_W, BAD_H, f->in, 4, f->out, NUM_LABELS);
}

/* One pixel: the mask (f->out) is f->one_px (7.5) > t, labelled into f->small (one int32). */
static gpuws_status label_one_pixel(bad_fixture *f, float t, size_t *n)
{
    gpuws_status st = gpuws_threshold(f->stream, 1, f->one_px, t, f->out);
    return st ? st : gpuws_label(f->stream, 1, 1, f->out, 8, f->small, n);
}

BAD_CASE(label_of_one_set_pixel_is_label_1, BAD_ALL, GPUWS_OK, "")
{
    size_t n = 99;
    gpuws_status st = label_one_pixel(f, 0.0f, &n);
    if (st) return st;
    int32_t *l = download(f, f->small, 4);
    cr_assert(n == 1 && l[0] == 1, "N = %zu, label %d", n, l[0]);
    free(l);
    bad_expect_poison(f, f->small, 4, 4 + TEST_GUARD_BYTES, "small");
    return st;
}

BAD_CASE(label_of_one_clear_pixel_is_no_label, BAD_ALL, GPUWS_OK, "")
{
    size_t n = 99;
    gpuws_status st = label_one_pixel(f, 10.0f, &n);
    if (st) return st;
    int32_t *l = download(f, f->small, 4);
    cr_assert(n == 0 && l[0] == 0, "N = %zu, label %d", n, l[0]);
    free(l);
    return st;
}

BAD_CASE(label_of_zero_pixels_is_no_label_and_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    size_t n = 99;
    gpuws_status st = gpuws_label(f->stream, 0, BAD_H, f->in, 4, f->out, &n);
    if (st) return st;
    cr_assert_eq(n, 0);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

/* ================================================================================================================
 * measure
 * ================================================================================================================ */

BAD_CASE(measure_zero_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "the image is 0 x 8: no pixels")
{
    return gpuws_measure(NULL, 0, BAD_H, f->in, f->in, 1, f->out);
}

BAD_CASE(measure_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    return gpuws_measure(NULL, SIZE_MAX / 4, 8, f->in, f->in, 1, f->out);
}

BAD_CASE(measure_more_labels_than_int32_can_name, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "more than an int32 label can name")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, f->in, (size_t)INT32_MAX + 1, f->out);
}

BAD_CASE(measure_output_too_small_for_the_records, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'out': 2 elements of 56 bytes")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, f->in, 2, f->small);
}

BAD_CASE(measure_output_is_the_labels, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "'out' must not be the data or labels buffer")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, f->out, 1, f->out);
}

BAD_CASE(measure_labels_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'labels': 128 elements of 4 bytes")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, f->small, 1, f->out);
}

BAD_CASE(measure_null_labels, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'labels': buffer is NULL")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, NULL, 1, f->out);
}

BAD_CASE(measure_labels_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'labels'")
{
    return gpuws_measure(NULL, BAD_W, BAD_H, f->in, f->foreign, 1, f->out);
}

BAD_CASE(measure_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_measure(f->foreign_stream, BAD_W, BAD_H, f->in, f->in, 1, f->out);
}

BAD_CASE(measure_of_no_labels_needs_no_output, BAD_ALL, GPUWS_OK, "")
{
    return gpuws_measure(f->stream, BAD_W, BAD_H, f->in, f->in, 0, NULL);
}

BAD_CASE(measure_ignores_labels_outside_1_to_n, BAD_ALL, GPUWS_OK, "")
{
    /* f->in read as int32 labels: the bits of 1.0f, 2.0f, ... are all above 10^9, so label 1 has no pixel */
    gpuws_status st = gpuws_measure(f->stream, BAD_W, BAD_H, f->in, f->in, 1, f->out);
    if (st) return st;
    gpuws_source_measure *m = download(f, f->out, sizeof *m);
    cr_assert(m->npix == 0 && m->sum == 0 && isnan(m->row) && isnan(m->col) && isnan(m->peak) && m->peak_row == -1 &&
                  m->peak_col == -1,
              "npix %lld sum %g row %g col %g peak %g at (%lld, %lld)", (long long)m->npix, m->sum, m->row, m->col,
              m->peak, (long long)m->peak_row, (long long)m->peak_col);
    free(m);
    bad_expect_poison(f, f->out, sizeof *m, BAD_N * 8, "out");
    return st;
}

/* ================================================================================================================
 * find_sources, catalog_free (host image; the catalogue pointer must be NULL after a failure)
 * ================================================================================================================ */

/* Runs find_sources on the host image px (w x h) and checks *catalog is NULL after a failure. */
static gpuws_status find(bad_fixture *f, gpuws_context *ctx, const float *px, size_t w, size_t h,
                         const gpuws_sources_options *o, gpuws_catalog **keep)
{
    gpuws_catalog *cat = (gpuws_catalog *)(void *)f; /* anything but NULL */
    gpuws_status st = gpuws_find_sources(ctx, px, w, h, o, &cat);
    if (st) BAD_EXPECT_NULL(cat);
    else if (keep) *keep = cat;
    else gpuws_catalog_free(cat);
    return st;
}

static float image_px[BAD_N];

static const float *image(float value)
{
    for (int i = 0; i < BAD_N; i++) image_px[i] = value;
    return image_px;
}

BAD_CASE(find_sources_null_catalog, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'catalog' is NULL")
{
    return gpuws_find_sources(f->ctx, image(1), BAD_W, BAD_H, NULL, NULL);
}

BAD_CASE(find_sources_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image' is NULL")
{
    return find(f, f->ctx, NULL, BAD_W, BAD_H, NULL, NULL);
}

BAD_CASE(find_sources_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return find(f, f->dead_ctx, image(1), BAD_W, BAD_H, NULL, NULL);
}

BAD_CASE(find_sources_zero_height, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "the image is 16 x 0: no pixels")
{
    return find(f, f->ctx, image(1), BAD_W, 0, NULL, NULL);
}

BAD_CASE(find_sources_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    return find(f, f->ctx, image(1), SIZE_MAX / 2, 3, NULL, NULL);
}

BAD_CASE(find_sources_pixel_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "pixels overflow size_t")
{
    return find(f, f->ctx, image(1), SIZE_MAX / 8, 3, NULL, NULL);
}

/* In core any size is taken (gpuws_measure has a path for more than 2^32 pixels): a device image of 65536 x 65537
 * pixels is checked against its buffer, which here is smaller. */
BAD_CASE(find_sources_on_the_device_of_more_pixels_than_its_buffer, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "argument 'image': 4295032832 elements of 4 bytes need")
{
    gpuws_catalog *cat = (gpuws_catalog *)(void *)f;
    gpuws_status st = gpuws__find_sources_device(NULL, (size_t)1 << 16, ((size_t)1 << 16) + 1, f->in, NULL, &cat);
    BAD_EXPECT_NULL(cat);
    return st;
}

BAD_CASE(find_sources_kappa_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "clip.kappa = 0; it must be finite and > 0")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_sigma_clip_options clip = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    clip.kappa = 0.0;
    o.clip = &clip;
    return find(f, f->ctx, image(1), BAD_W, BAD_H, &o, NULL);
}

BAD_CASE(find_sources_max_iterations_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "clip.max_iterations = 0; it must be >= 1")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_sigma_clip_options clip = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    clip.max_iterations = 0;
    o.clip = &clip;
    return find(f, f->ctx, image(1), BAD_W, BAD_H, &o, NULL);
}

BAD_CASE(find_sources_connectivity_5, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "connectivity 5 is not 4 or 8")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.connectivity = 5;
    return find(f, f->ctx, image(1), BAD_W, BAD_H, &o, NULL);
}

BAD_CASE(find_sources_infinite_absolute_threshold, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "threshold_abs is infinite")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_abs = -INFINITY;
    return find(f, f->ctx, image(1), BAD_W, BAD_H, &o, NULL);
}

BAD_CASE(find_sources_threshold_sigma_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "threshold_sigma = 0; it must be finite and > 0")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_sigma = 0.0;
    return find(f, f->ctx, image(1), BAD_W, BAD_H, &o, NULL);
}

BAD_CASE(find_sources_of_an_all_nan_image_has_no_statistics, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "all 128 values are NaN: no statistics exist")
{
    return find(f, f->ctx, image(NAN), BAD_W, BAD_H, NULL, NULL);
}

BAD_CASE(find_sources_of_one_pixel_has_no_std_to_set_the_threshold, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "the clipping kept no pixel")
{
    /* sigma_clip keeps nothing of a constant image (docs/algorithms/sigma_clip.md), so threshold_sigma x std has no
     * value: the call must say so, and say that threshold_abs is the way out */
    gpuws_status st = find(f, f->ctx, image(7.5f), 1, 1, NULL, NULL);
    cr_assert(strstr(gpuws_last_error(), "give threshold_abs"), "%s", gpuws_last_error());
    return st;
}

/* When the clipping keeps nothing, the message says which of the three ways it happened (kernels/sources/sources.c). */
BAD_CASE(find_sources_of_a_constant_image_says_it_is_constant, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "the clipping kept no pixel (a constant image: every non-NaN pixel is 7.5, so the std is 0)")
{
    return find(f, f->ctx, image(7.5f), BAD_W, BAD_H, NULL, NULL);
}

BAD_CASE(find_sources_with_one_infinite_pixel_says_so, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "the clipping kept no pixel (1 of the 127 non-NaN pixels is +-inf, which makes the std NaN)")
{
    float *px = (float *)image(0);
    for (int i = 0; i < BAD_N; i++) px[i] = (float)i;
    px[3] = NAN, px[77] = -INFINITY;
    return find(f, f->ctx, px, BAD_W, BAD_H, NULL, NULL);
}

/* 1, 2, ..., 128: the median 64.5 is no pixel, and no pixel lies within 1e-300 std of it. */
BAD_CASE(find_sources_with_a_kappa_too_small_for_the_data_says_so, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "the clipping kept no pixel (kappa = 1e-300 is too small for these data: no pixel lay strictly within kappa x "
         "std of the median)")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_sigma_clip_options clip = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    clip.kappa = 1e-300;
    o.clip = &clip;
    float *px = (float *)image(0);
    for (int i = 0; i < BAD_N; i++) px[i] = (float)(i + 1);
    gpuws_status st = find(f, f->ctx, px, BAD_W, BAD_H, &o, NULL);
    cr_assert(strstr(gpuws_last_error(), "give threshold_abs instead, or a larger kappa") &&
                  !strstr(gpuws_last_error(), "constant"),
              "%s", gpuws_last_error());
    return st;
}

/* The same on an image already on the device (the demo's path): the pixels are read back to say why. */
BAD_CASE(find_sources_on_the_device_with_a_kappa_too_small_says_so, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "kappa = 1e-300 is too small for these data")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_sigma_clip_options clip = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    clip.kappa = 1e-300;
    o.clip = &clip;
    gpuws_catalog *cat = (gpuws_catalog *)(void *)f;
    gpuws_status st = gpuws__find_sources_device(NULL, BAD_W, BAD_H, f->in, &o, &cat);
    BAD_EXPECT_NULL(cat);
    return st;
}

BAD_CASE(find_sources_of_one_pixel_above_an_absolute_threshold_is_one_source, BAD_ALL, GPUWS_OK, "")
{
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_abs = 1.0;
    o.want_labels = 1;
    gpuws_catalog *cat = NULL;
    gpuws_status st = find(f, f->ctx, image(7.5f), 1, 1, &o, &cat);
    if (st) return st;
    cr_assert_eq(cat->num_sources, 1);
    const gpuws_source *s = &cat->sources[0];
    cr_assert(s->id == 1 && s->x == 0 && s->y == 0 && s->flux == 7.5 && s->npix == 1 && s->peak == 7.5 &&
                  s->peak_x == 0 && s->peak_y == 0,
              "source %lld at (%g, %g) flux %g npix %lld peak %g at (%lld, %lld)", (long long)s->id, s->x, s->y,
              s->flux, (long long)s->npix, s->peak, (long long)s->peak_x, (long long)s->peak_y);
    cr_assert(cat->labels && cat->labels[0] == 1 && cat->threshold == 1.0);
    gpuws_catalog_free(cat);
    return st;
}

BAD_CASE(catalog_free_of_null_is_harmless, BAD_CPU, GPUWS_OK, "")
{
    gpuws_catalog_free(NULL);
    return GPUWS_OK;
}

/* ================================================================================================================
 * the ufuncs: gaussian_pdf, polar_distance, zero_suppress, make_pulses, hypot, hypot_checked, hidden_layer(_host)
 * ================================================================================================================ */

#define A(b) gpuws_operand_array(b)
#define S(v) gpuws_operand_scalar(v)

BAD_CASE(gaussian_pdf_null_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out': buffer is NULL")
{
    return gpuws_gaussian_pdf(NULL, BAD_N, A(f->in), S(0), S(1), NULL);
}

BAD_CASE(gaussian_pdf_operand_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'sigma'")
{
    return gpuws_gaussian_pdf(NULL, BAD_N, A(f->in), S(0), A(f->foreign), f->out);
}

BAD_CASE(gaussian_pdf_destroyed_operand, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'mean'")
{
    return gpuws_gaussian_pdf(NULL, BAD_N, A(f->in), A(f->dead), S(1), f->out);
}

BAD_CASE(gaussian_pdf_operand_shorter_than_n, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'x': 145 elements")
{
    return gpuws_gaussian_pdf(NULL, 145, A(f->in), S(0), S(1), f->out);
}

BAD_CASE(gaussian_pdf_count_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'out': 4611686018427387905 elements of 4 bytes")
{
    return gpuws_gaussian_pdf(NULL, WRAPS_F32, A(f->in), S(0), S(1), f->out);
}

BAD_CASE(gaussian_pdf_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_gaussian_pdf(f->foreign_stream, BAD_N, A(f->in), S(0), S(1), f->out);
}

BAD_CASE(gaussian_pdf_of_zero_elements_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_gaussian_pdf(f->stream, 0, A(f->in), S(0), S(1), f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

BAD_CASE(gaussian_pdf_with_sigma_zero_is_nan_not_an_error, BAD_ALL, GPUWS_OK, "")
{
    /* ufunc.h: values are not checked; sigma = 0 gives what the formula gives: 0/0 or exp(-inf)/0 = NaN */
    gpuws_status st = gpuws_gaussian_pdf(f->stream, BAD_N, A(f->in), S(3), S(0), f->out);
    if (!st) expect_out_f32(f, BAD_N, NAN);
    return st;
}

BAD_CASE(polar_distance_destroyed_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out'")
{
    return gpuws_polar_distance(NULL, BAD_N, A(f->in), S(0), S(1), S(0), f->dead);
}

BAD_CASE(polar_distance_operand_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'theta2'")
{
    return gpuws_polar_distance(NULL, BAD_N, A(f->in), S(0), S(1), A(f->foreign), f->out);
}

BAD_CASE(polar_distance_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements")
{
    return gpuws_polar_distance(NULL, BAD_N, A(f->in), S(0), S(1), S(0), f->small);
}

BAD_CASE(polar_distance_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_polar_distance(f->dead_stream, BAD_N, A(f->in), S(0), S(1), S(0), f->out);
}

BAD_CASE(zero_suppress_nan_threshold, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "threshold is NaN")
{
    return gpuws_zero_suppress(NULL, GPUWS_F32, BAD_N, f->in, NAN, f->out);
}

BAD_CASE(zero_suppress_f64_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype f64 is not f32 or i16")
{
    return gpuws_zero_suppress(NULL, GPUWS_F64, BAD_N, f->in64, 10, f->out);
}

BAD_CASE(zero_suppress_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements of 4 bytes")
{
    return gpuws_zero_suppress(NULL, GPUWS_F32, BAD_N, f->in, 10, f->small);
}

BAD_CASE(zero_suppress_null_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'w': buffer is NULL")
{
    return gpuws_zero_suppress(NULL, GPUWS_I16, BAD_N, NULL, 10, f->out);
}

BAD_CASE(zero_suppress_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'out'")
{
    return gpuws_zero_suppress(NULL, GPUWS_F32, BAD_N, f->in, 10, f->foreign);
}

BAD_CASE(zero_suppress_i16_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'w': 9223372036854775809 elements of 2 bytes")
{
    return gpuws_zero_suppress(NULL, GPUWS_I16, SIZE_MAX / 2 + 2, f->in, 10, f->out);
}

BAD_CASE(zero_suppress_keeps_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_zero_suppress(f->stream, GPUWS_F32, BAD_N, f->nan_img, 10, f->out);
    if (!st) expect_out_f32(f, BAD_N, NAN);
    return st;
}

BAD_CASE(make_pulses_null_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out': buffer is NULL")
{
    return gpuws_make_pulses(NULL, BAD_N, A(f->in), S(10), S(1), NULL);
}

BAD_CASE(make_pulses_operand_shorter_than_n, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'amplitude': 145 elements")
{
    return gpuws_make_pulses(NULL, 145, S(1), S(10), A(f->in), f->out);
}

BAD_CASE(make_pulses_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_make_pulses(f->dead_stream, BAD_N, A(f->in), S(10), S(1), f->out);
}

BAD_CASE(hypot_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements")
{
    return gpuws_hypot(NULL, BAD_N, A(f->in), A(f->in), f->small);
}

BAD_CASE(hypot_destroyed_operand, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'y'")
{
    return gpuws_hypot(NULL, BAD_N, A(f->in), A(f->dead), f->out);
}

BAD_CASE(hypot_of_infinity_and_nan_is_infinity, BAD_ALL, GPUWS_OK, "")
{
    /* ufunc.h: hypot(+-inf, anything, NaN included) = +inf, as C99 and NumPy */
    gpuws_status st = gpuws_hypot(f->stream, BAD_N, A(f->inf_img), A(f->nan_img), f->out);
    if (!st) expect_out_f32(f, BAD_N, INFINITY);
    return st;
}

BAD_CASE(hypot_of_a_finite_value_and_nan_is_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_hypot(f->stream, BAD_N, A(f->in), A(f->nan_img), f->out);
    if (!st) expect_out_f32(f, BAD_N, NAN);
    return st;
}

BAD_CASE(hypot_checked_nan_in_x_names_x_and_index_0, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "argument 'x' is NaN at index 0 (of 128)")
{
    return gpuws_hypot_checked(f->stream, BAD_N, A(f->nan_img), A(f->in), f->out);
}

BAD_CASE(hypot_checked_nan_in_y_names_y, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'y' is NaN at index 0 (of 128)")
{
    return gpuws_hypot_checked(NULL, BAD_N, A(f->in), A(f->nan_img), f->out);
}

BAD_CASE(hypot_checked_names_the_first_nan_of_either_array, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "argument 'y' is NaN at index 37 (of 128)")
{
    gpuws_buffer *x = with_nans(f, 90, 101), *y = with_nans(f, 37, 120);
    gpuws_status st = gpuws_hypot_checked(f->stream, BAD_N, A(x), A(y), f->out);
    gpuws_buffer_destroy(x);
    gpuws_buffer_destroy(y);
    return st;
}

BAD_CASE(hypot_checked_looks_at_no_element_past_n, BAD_ALL, GPUWS_OK, "")
{
    gpuws_buffer *x = with_nans(f, 37, -1);
    gpuws_status st = gpuws_hypot_checked(f->stream, 37, A(x), S(0), f->out);
    gpuws_buffer_destroy(x);
    if (st) return st;
    float *o = download(f, f->out, 37 * 4);
    for (int i = 0; i < 37; i++) cr_assert_eq(o[i], (float)(i + 1), "out[%d] = %g", i, o[i]);
    free(o);
    bad_expect_poison(f, f->out, 37 * 4, BAD_N * 8, "out");
    return st;
}

BAD_CASE(hypot_checked_nan_scalar, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "scalar argument 'y' is NaN")
{
    return gpuws_hypot_checked(NULL, BAD_N, A(f->in), S(NAN), f->out);
}

BAD_CASE(hypot_checked_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements")
{
    return gpuws_hypot_checked(NULL, BAD_N, A(f->nan_img), A(f->in), f->small);
}

BAD_CASE(hypot_checked_operand_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'x'")
{
    return gpuws_hypot_checked(NULL, BAD_N, A(f->foreign), S(1), f->out);
}

BAD_CASE(hidden_layer_null_greyscales, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'greyscales': buffer is NULL")
{
    return gpuws_hidden_layer(NULL, BAD_N, NULL, f->in, f->out);
}

BAD_CASE(hidden_layer_weights_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'weights'")
{
    return gpuws_hidden_layer(NULL, BAD_N, f->in, f->foreign, f->out);
}

BAD_CASE(hidden_layer_output_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out': 128 elements")
{
    return gpuws_hidden_layer(NULL, BAD_N, f->in, f->in, f->small);
}

BAD_CASE(hidden_layer_count_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "argument 'greyscales': 4611686018427387905 elements")
{
    return gpuws_hidden_layer(NULL, WRAPS_F32, f->in, f->in, f->out);
}

BAD_CASE(hidden_layer_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_hidden_layer(f->foreign_stream, BAD_N, f->in, f->in, f->out);
}

BAD_CASE(hidden_layer_of_zero_elements_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_hidden_layer(f->stream, 0, f->in, f->in, f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

/* hidden_layer_host writes its host output into f->host (checked unchanged after a failure). */
static const float host_in[BAD_N];
#define HOST_OUT BAD_HOST_OUT(float)

BAD_CASE(hidden_layer_host_null_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'out' is NULL")
{
    return gpuws_hidden_layer_host(f->ctx, BAD_N, host_in, host_in, NULL, NULL);
}

BAD_CASE(hidden_layer_host_null_weights, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'weights' is NULL")
{
    return gpuws_hidden_layer_host(f->ctx, BAD_N, host_in, NULL, HOST_OUT, NULL);
}

BAD_CASE(hidden_layer_host_nine_streams, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "streams = 9 (allowed 1..8)")
{
    gpuws_pipeline_options o = GPUWS_PIPELINE_OPTIONS_INIT;
    o.streams = 9;
    return gpuws_hidden_layer_host(f->ctx, BAD_N, host_in, host_in, HOST_OUT, &o);
}

BAD_CASE(hidden_layer_host_negative_streams, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "streams = -1 (allowed 1..8)")
{
    gpuws_pipeline_options o = GPUWS_PIPELINE_OPTIONS_INIT;
    o.streams = -1;
    return gpuws_hidden_layer_host(f->ctx, BAD_N, host_in, host_in, HOST_OUT, &o);
}

BAD_CASE(hidden_layer_host_absurd_chunk, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "is absurd")
{
    gpuws_pipeline_options o = GPUWS_PIPELINE_OPTIONS_INIT;
    o.chunk = SIZE_MAX;
    return gpuws_hidden_layer_host(f->ctx, BAD_N, host_in, host_in, HOST_OUT, &o);
}

BAD_CASE(hidden_layer_host_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return gpuws_hidden_layer_host(f->dead_ctx, BAD_N, host_in, host_in, HOST_OUT, NULL);
}

BAD_CASE(hidden_layer_host_count_bytes_wrap_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW,
         "4611686018427387905 elements of 4 bytes overflow size_t")
{
    /* no host array can hold them: refused before anything is read (else the read would run past the arrays) */
    return gpuws_hidden_layer_host(f->ctx, WRAPS_F32, host_in, host_in, HOST_OUT, NULL);
}

BAD_CASE(hidden_layer_host_of_zero_elements_needs_no_arrays, BAD_ALL, GPUWS_OK, "")
{
    return gpuws_hidden_layer_host(f->ctx, 0, NULL, NULL, NULL, NULL);
}
