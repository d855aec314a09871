#ifndef GPUWS_UFUNC_REF_H
#define GPUWS_UFUNC_REF_H
#include <stdint.h>
/* Each formula of gpuws/algorithms/ufunc.h evaluated in double on the (f32) inputs: the tests' oracle, and, rounded
 * once to f32, the CPU backend's result. make_pulses uses the real 0.3 (the f32 kernels use 0.3f); hypot is the C
 * library's (within an ulp of double) with the same special values as the f32 kernels. */
double gpuws_ufunc_ref_gaussian_pdf(double x, double mean, double sigma);
double gpuws_ufunc_ref_polar_distance(double rho1, double theta1, double rho2, double theta2);
double gpuws_ufunc_ref_make_pulses(double i, double period, double amplitude);
double gpuws_ufunc_ref_hypot(double x, double y);
double gpuws_ufunc_ref_hidden_layer(double greyscale, double weight);
/* Exact: w < threshold compared without rounding the threshold. */
float gpuws_ufunc_ref_zero_suppress_f32(float w, double threshold);
int16_t gpuws_ufunc_ref_zero_suppress_i16(int16_t w, double threshold);
#endif
