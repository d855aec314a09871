#ifndef GPUWS_REDUCE_REF_H
#define GPUWS_REDUCE_REF_H
#include <stddef.h>
/* Sums: Neumaier-compensated in double, so the result is within a few ulps of the exact sum (the oracle). */
double gpuws_reduce_ref_sum_f32(const float *x, size_t n);
double gpuws_reduce_ref_sum_f64(const double *x, size_t n);
/* min/max with NumPy's NaN propagation and -0.0 < +0.0; n >= 1. */
float gpuws_reduce_ref_min_f32(const float *x, size_t n);
float gpuws_reduce_ref_max_f32(const float *x, size_t n);
double gpuws_reduce_ref_min_f64(const double *x, size_t n);
double gpuws_reduce_ref_max_f64(const double *x, size_t n);
#endif
