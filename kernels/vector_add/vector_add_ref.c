/* Scalar references: the oracle for the tests and the CPU backend's implementation. */
#include "vector_add_ref.h"

void gpuws_vector_add_ref_f32(const float *a, const float *b, float *c, size_t n)
{
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

void gpuws_vector_add_ref_f64(const double *a, const double *b, double *c, size_t n)
{
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
