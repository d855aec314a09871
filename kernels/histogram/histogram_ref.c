/* Scalar references: the tests' oracle and the CPU backend's implementation. */
#include "histogram_ref.h"

#include <math.h>
#include <string.h>

/* edge[k] = k * step + lo with step = (hi - lo) / bins, each operation rounded once (np.linspace). Separate
 * statements: C only contracts a*b+c into an fma within one expression, and the build uses ISO C (no
 * -ffp-contract=fast), so the host rounds exactly like the device kernels, which forbid contraction too. */
static double edge_at(double lo, double hi, uint32_t bins, uint32_t k)
{
    if (k == bins) return hi;
    const double step = (hi - lo) / (double)bins;
    double e = (double)k * step;
    e = e + lo;
    return e;
}

/* The smallest float >= e (round toward +infinity). */
static float round_up_f32(double e)
{
    float f = (float)e;
    if ((double)f < e) f = nextafterf(f, INFINITY);
    return f;
}

void gpuws_histogram_edges_f32(double lo, double hi, uint32_t bins, float *edges)
{
    for (uint32_t k = 0; k <= bins; k++) edges[k] = round_up_f32(edge_at(lo, hi, bins, k));
}

void gpuws_histogram_edges_i32(double lo, double hi, uint32_t bins, int64_t *edges)
{
    for (uint32_t k = 0; k <= bins; k++) {
        const double c = ceil(edge_at(lo, hi, bins, k));
        edges[k] = c < -2147483648.0 ? INT64_C(-2147483648) : c > 2147483648.0 ? INT64_C(2147483648) : (int64_t)c;
    }
}

/* counts[b] = #{i : edges[b] <= x[i] < edges[b + 1]}: the largest b with edges[b] <= v by binary search, given
 * edges[0] <= v < edges[bins]. */
#define DEFINE_REF(NAME, T, E)                                                                                         \
    void NAME(const T *x, size_t n, const E *edges, uint32_t bins, uint64_t *counts)                                   \
    {                                                                                                                  \
        memset(counts, 0, bins * sizeof *counts);                                                                      \
        for (size_t i = 0; i < n; i++) {                                                                               \
            const T v = x[i];                                                                                          \
            if (!(v >= edges[0] && v < edges[bins])) continue; /* also NaN */                                          \
            uint32_t lo = 0, hi = bins;                                                                                \
            while (hi - lo > 1) {                                                                                      \
                const uint32_t mid = lo + (hi - lo) / 2;                                                               \
                if (v >= edges[mid]) lo = mid;                                                                         \
                else hi = mid;                                                                                         \
            }                                                                                                          \
            counts[lo]++;                                                                                              \
        }                                                                                                              \
    }

DEFINE_REF(gpuws_histogram_ref_f32, float, float)
DEFINE_REF(gpuws_histogram_ref_i32, int32_t, int64_t)
