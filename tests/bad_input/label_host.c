/* Bad input for gpuws_label_host and gpuws_label_host_bands (include/gpuws/algorithms/sources.h). The labels are
 * f->host's first BAD_N int32 (the harness checks f->host is untouched after a failure) and N lands at its byte
 * 3072; the mask is BAD_H x BAD_W bytes on the host. */
#include "../bad_input.h"

static const uint8_t mask[BAD_N] = { 1, 1, 0, 1, [BAD_W] = 1, [2 * BAD_W + 5] = 1, [BAD_N - 1] = 1 };
#define LABELS BAD_HOST_OUT(int32_t)
#define COUNT  (BAD_HOST_OUT(size_t) + 384)

/* The smallest budget for BAD_W pixels a row: one slot of one row (16 mask bytes, 16 int32 labels) and
 * gpuws_label's counts of one chunk and N (8 bytes). */
#define MIN_BUDGET 88

static gpuws_status with_budget(bad_fixture *f, uint64_t bytes)
{
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = bytes;
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 4, &o, LABELS, COUNT);
}

BAD_CASE(label_host_budget_below_one_band_of_one_row, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "a device budget of 87 bytes is too small: one band of one row of 16 pixels (its mask, its labels and "
         "gpuws_label's counts) needs at least 88 bytes")
{
    return with_budget(f, MIN_BUDGET - 1);
}

BAD_CASE(label_host_budget_of_exactly_one_band_runs, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = with_budget(f, MIN_BUDGET);
    cr_assert(st || (*COUNT == 4 && LABELS[0] == 1 && LABELS[3] == 2 && LABELS[BAD_N - 1] == 4), "N = %zu", *COUNT);
    return st;
}

BAD_CASE(label_host_bands_for_a_budget_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "needs at least 88 bytes")
{
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = 1;
    return gpuws_label_host_bands(f->ctx, BAD_W, BAD_H, &o, BAD_HOST_OUT(size_t), BAD_HOST_OUT(size_t) + 1);
}

BAD_CASE(label_host_bands_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'band_rows' is NULL")
{
    return gpuws_label_host_bands(f->ctx, BAD_W, BAD_H, NULL, NULL, BAD_HOST_OUT(size_t));
}

BAD_CASE(label_host_null_mask, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'mask' is NULL")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, NULL, 0, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_null_labels, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'labels' is NULL")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 4, NULL, NULL, COUNT);
}

BAD_CASE(label_host_null_num_labels, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'num_labels' is NULL")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 8, NULL, LABELS, NULL);
}

BAD_CASE(label_host_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return gpuws_label_host(f->dead_ctx, BAD_W, BAD_H, mask, 0, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_connectivity_6, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "connectivity 6 is not 4 or 8")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 6, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_zero_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "zero size (0 x 8 pixels)")
{
    return gpuws_label_host(f->ctx, 0, BAD_H, mask, 0, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_zero_height, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "zero size (16 x 0 pixels)")
{
    return gpuws_label_host(f->ctx, BAD_W, 0, mask, 0, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_mask_stride_below_width, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "mask_stride 15 is less than the width 16")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, BAD_W - 1, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_options_struct_size_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "label_host: options: struct_size 8 is less than")
{
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.struct_size = 8;
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 4, &o, LABELS, COUNT);
}

BAD_CASE(label_host_labels_overlapping_the_mask, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "labels overlaps the mask")
{
    /* the mask is 64 bytes of f->host's second half; the labels start inside it */
    uint8_t *m = f->host + BAD_HOST / 2;
    return gpuws_label_host(f->ctx, 8, 8, m, 0, 4, NULL, (int32_t *)(void *)(m + 32), COUNT);
}

BAD_CASE(label_host_mask_stride_overflows_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "byte counts overflow size_t")
{
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, SIZE_MAX / 2, 4, NULL, LABELS, COUNT);
}

BAD_CASE(label_host_row_of_2_to_the_31_pixels_is_unsupported, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "rows of 2147483648 pixels")
{
    return gpuws_label_host(f->ctx, (size_t)1 << 31, 1, mask, 0, 4, NULL, LABELS, COUNT);
}

/* Several devices (BAD_MORE_CONTEXTS_CASES): the call with options naming more[0..n) and a budget of bands. */
static gpuws_status with_more(bad_fixture *f, gpuws_context *const *more, size_t n)
{
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = 4 * MIN_BUDGET;
    o.more_contexts = more, o.num_more_contexts = n;
    return gpuws_label_host(f->ctx, BAD_W, BAD_H, mask, 0, 4, &o, LABELS, COUNT);
}

BAD_MORE_CONTEXTS_CASES(label_host, with_more)
