#ifndef GPUWS_L2_NORM_REF_H
#define GPUWS_L2_NORM_REF_H
#include <stddef.h>

/* out[r] = ‖in[r·cols .. r·cols + cols)‖₂ in the dtype, with the kernels' method (max |v|, then the sum of squares
 * of v·2^-e, sqrt, ·2^e) and special values (NaN row → NaN, else Inf → Inf, zeros → 0): the CPU backend's
 * implementation. */
void gpuws_l2_norm_ref_f32(const float *in, float *out, size_t rows, size_t cols);
void gpuws_l2_norm_ref_f64(const double *in, double *out, size_t rows, size_t cols);

/* The tests' truth for one row: the norm in long double, scaled the same way (so no range limits on any
 * platform); relative error below (n + 2)·LDBL_EPSILON. */
long double gpuws_l2_norm_oracle_f32(const float *x, size_t n);
long double gpuws_l2_norm_oracle_f64(const double *x, size_t n);

#endif
