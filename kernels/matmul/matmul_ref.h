#ifndef GPUWS_MATMUL_REF_H
#define GPUWS_MATMUL_REF_H
#include <stddef.h>
#include <stdint.h>

/* C = A·B (row-major, A m×k, B k×n, C m×n) in the dtype: the CPU backend's implementation. Each element is the
 * sequential sum over l of a_il·b_lj (cache-blocked over rows, columns and l, but never reordered in l). */
void gpuws_matmul_ref_f32(const float *a, const float *b, float *c, size_t m, size_t n, size_t k);
void gpuws_matmul_ref_f64(const double *a, const double *b, double *c, size_t m, size_t n, size_t k);

/* The tests' truth for one element (i, j): the dot product in higher precision (double for f32 inputs, whose
 * products are then exact; long double for f64 inputs), and Σ_l |a_il||b_lj| for the error bound. */
double gpuws_matmul_oracle_f32(const float *a, const float *b, size_t n, size_t k, size_t i, size_t j, double *abs_sum);
long double gpuws_matmul_oracle_f64(const double *a, const double *b, size_t n, size_t k, size_t i, size_t j,
                                    long double *abs_sum);

/* How far a dot product of length k computed in the dtype (f64 when is_f64, else f32), in any order, with or
 * without fused multiply-adds, may lie from the oracle: (γ_k(u) + γ_k(u_oracle))·abs_sum, γ_k(u) = k·u/(1 − k·u)
 * (Higham, eq. 3.5, applied to the device's sum and to the oracle's own). */
long double gpuws_matmul_error_bound(int is_f64, size_t k, long double abs_sum);

/* For results too large to check whole (benchmarks, the CLI): compares `samples` pseudo-random elements of C
 * (seeded), its last row and its last column (the edge tiles) with the oracle, each within
 * gpuws_matmul_error_bound × 1.05 (the slack of tests/test_matmul.c). Returns the number of elements outside;
 * *worst gets the largest error / bound seen, and msg (when not NULL) describes the first failure. */
size_t gpuws_matmul_check_sampled(int is_f64, const void *a, const void *b, const void *c, size_t m, size_t n, size_t k,
                                  size_t samples, uint64_t seed, double *worst, char *msg, size_t msg_size);

#endif
