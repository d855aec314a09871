#ifndef GPUWS_VECTOR_ADD_REF_H
#define GPUWS_VECTOR_ADD_REF_H
#include <stddef.h>
void gpuws_vector_add_ref_f32(const float *a, const float *b, float *c, size_t n);
void gpuws_vector_add_ref_f64(const double *a, const double *b, double *c, size_t n);
#endif
