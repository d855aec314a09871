/* Internals shared by the two files of convolve2d's host driver: convolve2d.c (gpuws_convolve2d) and
 * convolve2d_separable.c (gpuws_convolve2d_separable). Not installed. */
#ifndef GPUWS_CONVOLVE2D_DRIVER_H
#define GPUWS_CONVOLVE2D_DRIVER_H

#include "../common/driver.h"
#include "convolve2d_ref.h"

/* The tuning and testing knobs (environment; convolve2d.c's header and docs/algorithms/convolve.md), read in one
 * pass over the environment per call: 13 getenv calls per call were ~4.9K host instructions (callgrind on PoCL,
 * 2026-11-22). NULL: unset or empty, as gpuws__getenv. Tests set them between calls, so they are read every call. */
typedef struct {
    const char *path, *kernel, *warps, *kernel_block, *split, *stage, *persist, *grid, *no_unroll, *sep;
} gpuws__conv_knobs;
void gpuws__conv2d_read_knobs(gpuws__conv_knobs *k);

/* What gpuws_convolve2d and gpuws_convolve2d_separable check alike, in this order: the image's context, the
 * stream (claimed for the call into *claim), the dtype, the geometry (sizes, mode, boundary), and the image's and
 * output's element counts. `fn` names the caller in the messages. */
gpuws_status gpuws__conv2d_arguments(const char *fn, gpuws_stream **s, gpuws__stream_claim *claim, gpuws_dtype dt,
                                     const gpuws_buffer *image, size_t height, size_t width, size_t row_stride,
                                     size_t kh, size_t kw,
                                     const gpuws_convolve2d_options *options, gpuws_context **ctx,
                                     gpuws__conv2d_geometry *g, size_t *image_elems, size_t *out_elems);

#endif
