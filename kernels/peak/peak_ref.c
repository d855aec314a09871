/* Scalar references of the FMA-rate kernel: the CPU backend's implementation and the closed form the bench
 * checks every backend's result against. */
#include "peak.h"
#include "peak_ref.h"

#include <math.h>

double gpuws__peak_start(uint64_t t, int j, int lane)
{
    return 2.0 + (double)(t & 7) * 0.25 + (double)j * 0.125 + (double)lane / 64.0;
}

double gpuws__peak_expected(uint64_t t, uint32_t iters, double a, double b, uint32_t lanes)
{
    const double L = b / (1.0 - a), an = pow(a, (double)iters);
    double s = 0;
    for (int j = 0; j < GPUWS_PEAK_CHAINS; j++)
        for (uint32_t l = 0; l < lanes; l++) s += L + an * (gpuws__peak_start(t, j, (int)l) - L);
    return s;
}

/* Each step x' = a x + b adds at most 2u|x'| (two roundings if not fused); a < 1 damps earlier errors, so one
 * chain's error is at most 2u max|x| / (1 − a). Values stay between L and the largest start value. Summing the
 * k = CHAINS × lanes values adds at most (k − 1) u of their total (at most k max|x|). */
double gpuws__peak_error_bound(double u, double a, double b, uint32_t lanes)
{
    const double L = b / (1.0 - a), k = (double)GPUWS_PEAK_CHAINS * lanes;
    double xmax = gpuws__peak_start(7, GPUWS_PEAK_CHAINS - 1, 15);
    if (L > xmax) xmax = L;
    return k * (2.0 * u * xmax / (1.0 - a)) + (k - 1) * u * k * xmax;
}

/* One function body per type, the chains named (not an array) as in the kernels. */
#define PEAK_REF(T, out, threads, iters, a, b)                                                                         \
    for (size_t t = 0; t < (threads); t++) {                                                                           \
        T x0 = (T)gpuws__peak_start(t, 0, 0), x1 = (T)gpuws__peak_start(t, 1, 0), x2 = (T)gpuws__peak_start(t, 2, 0),  \
          x3 = (T)gpuws__peak_start(t, 3, 0), x4 = (T)gpuws__peak_start(t, 4, 0), x5 = (T)gpuws__peak_start(t, 5, 0),  \
          x6 = (T)gpuws__peak_start(t, 6, 0), x7 = (T)gpuws__peak_start(t, 7, 0);                                      \
        for (uint32_t i = 0; i < (iters); i++) {                                                                       \
            x0 = x0 * (a) + (b);                                                                                       \
            x1 = x1 * (a) + (b);                                                                                       \
            x2 = x2 * (a) + (b);                                                                                       \
            x3 = x3 * (a) + (b);                                                                                       \
            x4 = x4 * (a) + (b);                                                                                       \
            x5 = x5 * (a) + (b);                                                                                       \
            x6 = x6 * (a) + (b);                                                                                       \
            x7 = x7 * (a) + (b);                                                                                       \
        }                                                                                                              \
        (out)[t] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));                                                  \
    }

void gpuws_peak_ref_f32(float *out, size_t threads, uint32_t iters, float a, float b)
{
    PEAK_REF(float, out, threads, iters, a, b)
}

void gpuws_peak_ref_f64(double *out, size_t threads, uint32_t iters, double a, double b)
{
    PEAK_REF(double, out, threads, iters, a, b)
}
