/* Scalar references for l2_norm: the CPU backend's implementation and the tests' oracle. */
#include "l2_norm_ref.h"

#include <float.h>
#include <math.h>

/* The largest |x| (and whether a NaN is there), the power-of-two scales clamped to normal numbers, the sum of
 * scaled squares in four interleaved partial sums (independent chains the CPU can overlap), and the special
 * values; T the type, SUFFIX the libm suffix (f, "", l), EMAX the clamp. */
#define L2_ROW(T, SUFFIX, EMAX, x, n)                                                                                  \
    do {                                                                                                               \
        T m = 0;                                                                                                       \
        int nan = 0;                                                                                                   \
        for (size_t j = 0; j < n; j++) {                                                                               \
            const T a = fabs##SUFFIX(x[j]);                                                                            \
            nan |= a != a;                                                                                             \
            m = a > m ? a : m;                                                                                         \
        }                                                                                                              \
        if (nan) return (T)NAN;                                                                                        \
        if (m == 0 || isinf(m)) return m;                                                                              \
        int e = ilogb##SUFFIX(m);                                                                                      \
        e = e < -(EMAX) ? -(EMAX) : e > (EMAX) ? (EMAX) : e;                                                           \
        const T down = ldexp##SUFFIX(1, -e);                                                                           \
        T s[4] = { 0, 0, 0, 0 };                                                                                       \
        size_t j = 0;                                                                                                  \
        for (; j + 4 <= n; j += 4)                                                                                     \
            for (int q = 0; q < 4; q++) {                                                                              \
                const T y = x[j + q] * down;                                                                           \
                s[q] += y * y;                                                                                         \
            }                                                                                                          \
        for (; j < n; j++) {                                                                                           \
            const T y = x[j] * down;                                                                                   \
            s[0] += y * y;                                                                                             \
        }                                                                                                              \
        return ldexp##SUFFIX(sqrt##SUFFIX((s[0] + s[1]) + (s[2] + s[3])), e);                                          \
    } while (0)

static float row_f32(const float *x, size_t n) { L2_ROW(float, f, 126, x, n); }
static double row_f64(const double *x, size_t n) { L2_ROW(double, , 1022, x, n); }

void gpuws_l2_norm_ref_f32(const float *in, float *out, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) out[r] = row_f32(in + r * cols, cols);
}

void gpuws_l2_norm_ref_f64(const double *in, double *out, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) out[r] = row_f64(in + r * cols, cols);
}

/* Clamped to long double's own normal range (x87: 2^±16382; where long double is double: 2^±1022). */
#define LD_EMAX (LDBL_MAX_EXP - 2)
long double gpuws_l2_norm_oracle_f32(const float *x, size_t n) { L2_ROW(long double, l, LD_EMAX, x, n); }
long double gpuws_l2_norm_oracle_f64(const double *x, size_t n) { L2_ROW(long double, l, LD_EMAX, x, n); }
