/* Scalar references for matmul: the CPU backend's implementation and the tests' oracle. */
#include "matmul_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Blocks: a panel of LB rows × JB columns of B (256 KiB of f32) stays in cache while every row of A passes over
 * it; four rows of C at a time reuse each loaded row of B. Every c_ij still sums l = 0, 1, ..., k-1 in order. */
enum { LB = 128, JB = 512 };

#define MATMUL_REF(T, a, b, c, m, n, k)                                                                                \
    do {                                                                                                               \
        memset(c, 0, m *n * sizeof(T));                                                                                \
        for (size_t l0 = 0; l0 < k; l0 += LB) {                                                                        \
            const size_t l1 = l0 + LB < k ? l0 + LB : k;                                                               \
            for (size_t j0 = 0; j0 < n; j0 += JB) {                                                                    \
                const size_t jn = (j0 + JB < n ? j0 + JB : n) - j0;                                                    \
                size_t i = 0;                                                                                          \
                for (; i + 4 <= m; i += 4) {                                                                           \
                    T *c0 = c + i * n + j0, *c1 = c0 + n, *c2 = c1 + n, *c3 = c2 + n;                                  \
                    for (size_t l = l0; l < l1; l++) {                                                                 \
                        const T *bl = b + l * n + j0;                                                                  \
                        const T a0 = a[i * k + l], a1 = a[(i + 1) * k + l], a2 = a[(i + 2) * k + l],                   \
                                a3 = a[(i + 3) * k + l];                                                               \
                        for (size_t j = 0; j < jn; j++) {                                                              \
                            const T bj = bl[j];                                                                        \
                            c0[j] += a0 * bj;                                                                          \
                            c1[j] += a1 * bj;                                                                          \
                            c2[j] += a2 * bj;                                                                          \
                            c3[j] += a3 * bj;                                                                          \
                        }                                                                                              \
                    }                                                                                                  \
                }                                                                                                      \
                for (; i < m; i++) {                                                                                   \
                    T *ci = c + i * n + j0;                                                                            \
                    for (size_t l = l0; l < l1; l++) {                                                                 \
                        const T *bl = b + l * n + j0;                                                                  \
                        const T ai = a[i * k + l];                                                                     \
                        for (size_t j = 0; j < jn; j++) ci[j] += ai * bl[j];                                           \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

void gpuws_matmul_ref_f32(const float *a, const float *b, float *c, size_t m, size_t n, size_t k)
{
    MATMUL_REF(float, a, b, c, m, n, k);
}

void gpuws_matmul_ref_f64(const double *a, const double *b, double *c, size_t m, size_t n, size_t k)
{
    MATMUL_REF(double, a, b, c, m, n, k);
}

double gpuws_matmul_oracle_f32(const float *a, const float *b, size_t n, size_t k, size_t i, size_t j, double *abs_sum)
{
    double s = 0, t = 0;
    for (size_t l = 0; l < k; l++) {
        const double p = (double)a[i * k + l] * (double)b[l * n + j]; /* exact: 24 + 24 bits */
        s += p;
        t += p < 0 ? -p : p;
    }
    *abs_sum = t;
    return s;
}

long double gpuws_matmul_oracle_f64(const double *a, const double *b, size_t n, size_t k, size_t i, size_t j,
                                    long double *abs_sum)
{
    long double s = 0, t = 0;
    for (size_t l = 0; l < k; l++) {
        const long double p = (long double)a[i * k + l] * (long double)b[l * n + j];
        s += p;
        t += p < 0 ? -p : p;
    }
    *abs_sum = t;
    return s;
}

static long double gamma_k(size_t k, long double u) { return (long double)k * u / (1 - (long double)k * u); }

long double gpuws_matmul_error_bound(int is_f64, size_t k, long double abs_sum)
{
    const long double u = is_f64 ? 0x1p-53L : 0x1p-24L;
    const long double u_oracle = is_f64 ? LDBL_EPSILON / 2 : 0x1p-53L;
    return (gamma_k(k, u) + gamma_k(k, u_oracle)) * abs_sum;
}

size_t gpuws_matmul_check_sampled(int is_f64, const void *a, const void *b, const void *c, size_t m, size_t n, size_t k,
                                  size_t samples, uint64_t seed, double *worst, char *msg, size_t msg_size)
{
    size_t bad = 0;
    *worst = 0;
    if (m == 0 || n == 0) return 0;
    for (size_t q = 0; q < samples + m + n; q++) {
        size_t i, j;
        if (q < samples) { /* splitmix64 */
            uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            i = (size_t)(z % m), j = (size_t)((z >> 32) % n);
        } else if (q < samples + n) {
            i = m - 1, j = q - samples;
        } else {
            i = q - samples - n, j = n - 1;
        }
        long double want, abs_sum, got;
        if (is_f64) {
            want = gpuws_matmul_oracle_f64(a, b, n, k, i, j, &abs_sum);
            got = ((const double *)c)[i * n + j];
        } else {
            double t;
            want = gpuws_matmul_oracle_f32(a, b, n, k, i, j, &t);
            abs_sum = t;
            got = ((const float *)c)[i * n + j];
        }
        const long double bound = gpuws_matmul_error_bound(is_f64, k, abs_sum) * 1.05L, err = fabsl(got - want);
        if (bound > 0 && err / bound > *worst) *worst = (double)(err / bound);
        if (!(err <= bound) && bad++ == 0 && msg)
            snprintf(msg, msg_size, "C[%zu][%zu] = %.17Lg, exact %.17Lg, allowed error %.3Lg", i, j, got, want, bound);
    }
    return bad;
}
