/* Internals shared by the two files of convolve2d's host driver: convolve2d.c (gpuws_convolve2d) and
 * convolve2d_separable.c (gpuws_convolve2d_separable). Not installed. */
#ifndef GPUWS_CONVOLVE2D_DRIVER_H
#define GPUWS_CONVOLVE2D_DRIVER_H

#include "../common/driver.h"
#include "convolve2d_ref.h"

/* What gpuws_convolve2d and gpuws_convolve2d_separable check alike, in this order: the image's context, the
 * stream (claimed for the call into *claim), the dtype, the geometry (sizes, mode, boundary), and the image's and
 * output's element counts. `fn` names the caller in the messages. */
gpuws_status gpuws__conv2d_arguments(const char *fn, gpuws_stream **s, gpuws__stream_claim *claim, gpuws_dtype dt,
                                     const gpuws_buffer *image, size_t height, size_t width, size_t row_stride,
                                     size_t kh, size_t kw, const gpuws_convolve2d_options *options, gpuws_context **ctx,
                                     gpuws__conv2d_geometry *g, size_t *image_elems, size_t *out_elems);

/* One convolution's launch after its arguments were checked: the geometry g's output from the image and kernel
 * buffers, planned (tile shape, kernel blocks, kernel family) as for the geometry gp. gpuws_convolve2d passes g for
 * both; gpuws_convolve2d_host passes the whole image's geometry as gp and a band's as g, so every band sums each
 * output's products in the order the whole image's launch would (bit-identical results). gp and g differ only in
 * h, oh and om. */
gpuws_status gpuws__convolve2d_launch(gpuws_stream *s, gpuws_dtype dtype, const gpuws__conv2d_geometry *gp,
                                      const gpuws__conv2d_geometry *g, const gpuws_buffer *image,
                                      const gpuws_buffer *kernel, gpuws_buffer *out);

/* gpuws_convolve2d_separable's work after its arguments were checked: the geometry g's output from the image and
 * the factors col (kh values) and row (kw), on the CPU backend by the reference. No choice it makes depends on the
 * image's height (the kernel family follows the factors' lengths and the device), and each output is the same row
 * sums and column sum wherever its rows lie, so a band's geometry gives the whole image's values
 * (gpuws_convolve2d_separable_host). The two-pass kernels (factors longer than SEP_FTAPS, OpenCL CPU devices, the
 * tuning's choice) keep the row sums on the stream: (g->oh + kh - 1) x g->ow elements. */
gpuws_status gpuws__convolve2d_separable_launch(gpuws_stream *s, gpuws_dtype dtype, const gpuws__conv2d_geometry *g,
                                                const gpuws_buffer *image, const gpuws_buffer *col,
                                                const gpuws_buffer *row, gpuws_buffer *out);

#endif
