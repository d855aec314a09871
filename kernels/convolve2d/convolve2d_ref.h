/* convolve2d: the shape rules every caller shares, and the scalar reference (the tests' oracle and the CPU
 * backend's implementation). */
#ifndef GPUWS_CONVOLVE2D_REF_H
#define GPUWS_CONVOLVE2D_REF_H

#include "gpuws/algorithms.h"

#include <stddef.h>

/* One convolution, reduced to: out[m][n] = sum_{j<kh, k<kw} kernel[j][k] * X(m + om - j, n + on - k), m < oh,
 * n < ow, where X(r, c) is the image pixel (r, c) for 0 <= r < h and 0 <= c < w and otherwise follows boundary
 * (VALID mode is reduced to FILL with 0: its outputs never read outside the image, or, when SciPy swaps the
 * inputs, read the zero padding of the kernel-as-image). */
typedef struct {
    size_t h, w, stride; /* image rows, columns, elements between row starts */
    size_t kh, kw;       /* kernel */
    size_t oh, ow;       /* output */
    size_t om, on;       /* output (0, 0) is full-convolution position (om, on) */
    gpuws_convolve_boundary boundary;
    double fill;
} gpuws__conv2d_geometry;

/* Checks sizes, mode and boundary the way SciPy does (plus gpuws's size limits) and fills g. Statuses as
 * documented for gpuws_convolve2d, with a message. options NULL = defaults; row_stride 0 = width. */
gpuws_status gpuws__conv2d_geometry_init(size_t h, size_t w, size_t row_stride, size_t kh, size_t kw,
                                         const gpuws_convolve2d_options *options, gpuws__conv2d_geometry *g);

/* X's row/column index for a position of the extended image: the source index, or -1 for the fill value.
 * i may be any integer (a kernel larger than the image reaches several periods away). */
long long gpuws__conv_extend(long long i, long long n, gpuws_convolve_boundary boundary);

/* Output rows [row_begin, row_end) of the convolution g (row_end <= g->oh), from the unflipped kernel in SciPy's
 * summation order; f32 accumulates in double and rounds once. */
void gpuws_convolve2d_ref_f32(const gpuws__conv2d_geometry *g, const float *image, const float *kernel, float *out,
                              size_t row_begin, size_t row_end);
void gpuws_convolve2d_ref_f64(const gpuws__conv2d_geometry *g, const double *image, const double *kernel, double *out,
                              size_t row_begin, size_t row_end);

/* gpuws_convolve2d_separable's reference: the convolution g with the kernel outer(col, row) (col: g->kh values,
 * row: g->kw), as row sums of the extended image, then column sums of those (f32 in double, rounded once).
 * Allocates (oh + kh - 1) x ow accumulators: GPUWS_ERR_OUT_OF_MEMORY / GPUWS_ERR_OVERFLOW with a message when
 * that fails, out untouched. */
gpuws_status gpuws_convolve2d_separable_ref_f32(const gpuws__conv2d_geometry *g, const float *image, const float *col,
                                                const float *row, float *out);
gpuws_status gpuws_convolve2d_separable_ref_f64(const gpuws__conv2d_geometry *g, const double *image, const double *col,
                                                const double *row, double *out);
/* The same into the caller's row sums, tmp: gpuws__convolve2d_separable_tmp_bytes of them (GPUWS_ERR_OVERFLOW with a
 * message when that overflows size_t). The CPU backend keeps them on the stream, so that the bands of
 * gpuws_convolve2d_separable_host allocate nothing once the first has run. */
gpuws_status gpuws__convolve2d_separable_tmp_bytes(const gpuws__conv2d_geometry *g, size_t *bytes);
void gpuws_convolve2d_separable_ref_f32_into(const gpuws__conv2d_geometry *g, const float *image, const float *col,
                                             const float *row, float *out, double *tmp);
void gpuws_convolve2d_separable_ref_f64_into(const gpuws__conv2d_geometry *g, const double *image, const double *col,
                                             const double *row, double *out, double *tmp);

#endif
