#ifndef GPUWS_PEAK_REF_H
#define GPUWS_PEAK_REF_H
#include <stddef.h>
#include <stdint.h>
/* The scalar references of the peak kernels (see peak.h): out[t] for t < threads. */
void gpuws_peak_ref_f32(float *out, size_t threads, uint32_t iters, float a, float b);
void gpuws_peak_ref_f64(double *out, size_t threads, uint32_t iters, double a, double b);
#endif
