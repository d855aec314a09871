#include "reduce_ref.h"

#include <math.h>

#define NEUMAIER(T)                                                                                                    \
    double s = 0.0, c = 0.0;                                                                                           \
    for (size_t i = 0; i < n; i++) {                                                                                   \
        const double v = (double)x[i], t = s + v;                                                                      \
        c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;                                                           \
        s = t;                                                                                                         \
    }                                                                                                                  \
    return s + c;

double gpuws_reduce_ref_sum_f32(const float *x, size_t n) { NEUMAIER(float) }
double gpuws_reduce_ref_sum_f64(const double *x, size_t n) { NEUMAIER(double) }

#define PICK(T, better)                                                                                                \
    T m = x[0];                                                                                                        \
    for (size_t i = 1; i < n && !isnan(m); i++) {                                                                      \
        const T b = x[i];                                                                                              \
        if (isnan(b) || (better)) m = b;                                                                               \
    }                                                                                                                  \
    return m;

float gpuws_reduce_ref_min_f32(const float *x, size_t n) { PICK(float, b < m || (b == m && signbit(b))) }
float gpuws_reduce_ref_max_f32(const float *x, size_t n) { PICK(float, b > m || (b == m && !signbit(b))) }
double gpuws_reduce_ref_min_f64(const double *x, size_t n) { PICK(double, b < m || (b == m && signbit(b))) }
double gpuws_reduce_ref_max_f64(const double *x, size_t n) { PICK(double, b > m || (b == m && !signbit(b))) }
