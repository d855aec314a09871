#ifndef GPUWS_UFUNC_REF_H
#define GPUWS_UFUNC_REF_H
#include <stdbool.h>
#include <stdint.h>
/* Each formula of gpuws/algorithms/ufunc.h evaluated in double on the (f32) inputs: the oracle of the tests and the
 * benchmark checks, and, rounded once to f32, the CPU backend's result. make_pulses uses the real 0.3 (the f32
 * kernels use 0.3f); hypot is the C library's (within an ulp of double) with the same special values. */
double gpuws_ufunc_ref_gaussian_pdf(double x, double mean, double sigma);
double gpuws_ufunc_ref_polar_distance(double rho1, double theta1, double rho2, double theta2);
double gpuws_ufunc_ref_make_pulses(double i, double period, double amplitude);
double gpuws_ufunc_ref_hypot(double x, double y);
double gpuws_ufunc_ref_hidden_layer(double greyscale, double weight);
/* Exact: w < threshold compared without rounding the threshold. */
float gpuws_ufunc_ref_zero_suppress_f32(float w, double threshold);
int16_t gpuws_ufunc_ref_zero_suppress_i16(int16_t w, double threshold);

/* The same formulas by number, with their inputs in a[] (operand order of the public functions). */
typedef enum {
    GPUWS_UFUNC_GAUSSIAN_PDF,
    GPUWS_UFUNC_POLAR_DISTANCE,
    GPUWS_UFUNC_MAKE_PULSES,
    GPUWS_UFUNC_HYPOT,
    GPUWS_UFUNC_HIDDEN_LAYER,
    GPUWS_UFUNC_COUNT
} gpuws_ufunc_id;
extern const char *const gpuws_ufunc_names[GPUWS_UFUNC_COUNT];
extern const int gpuws_ufunc_arity[GPUWS_UFUNC_COUNT];
double gpuws_ufunc_ref_eval(gpuws_ufunc_id f, const double *a);
/* The error bound stated in gpuws/algorithms/ufunc.h for an f32 result of f on inputs a whose exact value is ref:
 * the largest |result - ref| allowed on any backend (docs/algorithms/ufunc.md derives each one). */
double gpuws_ufunc_ref_bound(gpuws_ufunc_id f, const double *a, double ref);
/* got is acceptable for ref: NaN exactly where ref is NaN; the same infinity where ref overflows f32; otherwise
 * within the bound. err and allowed (may be NULL) receive |got - ref| and the bound. */
bool gpuws_ufunc_ref_within(gpuws_ufunc_id f, const double *a, double ref, float got, double *err, double *allowed);
#endif
