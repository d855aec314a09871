/* convolve1d: numpy.convolve's shape rules and the scalar reference (the tests' oracle and the CPU backend). */
#ifndef GPUWS_CONVOLVE1D_REF_H
#define GPUWS_CONVOLVE1D_REF_H

#include "gpuws/algorithms.h"

#include <stddef.h>

/* out[t] = sum_j a[j] * v[t + start - j] over the j where both exist, t < out_n. */
typedef struct {
    size_t n, m; /* lengths of a and v */
    size_t out_n;
    size_t start; /* output t is full-convolution position t + start */
} gpuws__conv1d_geometry;

/* Checks sizes and mode as NumPy does; statuses as documented for gpuws_convolve1d. */
gpuws_status gpuws__conv1d_geometry_init(size_t n, size_t m, gpuws_convolve_mode mode, gpuws__conv1d_geometry *g);

/* Outputs [t_begin, t_end); f32 accumulates in double and rounds once. */
void gpuws_convolve1d_ref_f32(const gpuws__conv1d_geometry *g, const float *a, const float *v, float *out,
                              size_t t_begin, size_t t_end);
void gpuws_convolve1d_ref_f64(const gpuws__conv1d_geometry *g, const double *a, const double *v, double *out,
                              size_t t_begin, size_t t_end);

#endif
