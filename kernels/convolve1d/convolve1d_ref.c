/* numpy.convolve's shape rules and scalar reference: each output sums a[j] * v[pos - j] over ascending j. */
#include "convolve1d_ref.h"

#include "../common/driver.h"

gpuws_status gpuws__conv1d_geometry_init(size_t n, size_t m, gpuws_convolve_mode mode, gpuws__conv1d_geometry *g)
{
    if ((unsigned)mode > GPUWS_CONVOLVE_VALID)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d: mode %d is not full, same or valid", (int)mode);
    if (n == 0 || m == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d: %s cannot be empty (n = %zu, m = %zu)",
                            n ? "v" : "a", n, m);
    if (n >= ((size_t)1 << 62) || m >= ((size_t)1 << 62)) /* n + m and every index fit in a signed 64-bit int */
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "convolve1d: lengths %zu and %zu: each must stay below 2^62", n, m);
    const size_t lo = n < m ? n : m, hi = n < m ? m : n;
    g->n = n, g->m = m;
    switch (mode) {
    case GPUWS_CONVOLVE_FULL: g->out_n = n + m - 1, g->start = 0; break;
    case GPUWS_CONVOLVE_SAME: g->out_n = hi, g->start = (lo - 1) / 2; break;
    default: g->out_n = hi - lo + 1, g->start = lo - 1; break;
    }
    return GPUWS_OK;
}

gpuws_status gpuws_convolve1d_output_length(size_t n, size_t m, gpuws_convolve_mode mode, size_t *out_n)
{
    if (!out_n) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d_output_length: NULL result pointer");
    gpuws__conv1d_geometry g = { 0 };
    gpuws_status st = gpuws__conv1d_geometry_init(n, m, mode, &g);
    if (st) return st;
    *out_n = g.out_n;
    return GPUWS_OK;
}

#define DEFINE_REF(NAME, T)                                                                                            \
    void NAME(const gpuws__conv1d_geometry *g, const T *a, const T *v, T *out, size_t t_begin, size_t t_end)           \
    {                                                                                                                  \
        for (size_t t = t_begin; t < t_end; t++) {                                                                     \
            const size_t pos = t + g->start; /* a[j] pairs with v[pos - j]: need j <= pos, pos - j < m */              \
            const size_t j_lo = pos >= g->m ? pos - g->m + 1 : 0, j_hi = pos < g->n - 1 ? pos : g->n - 1;              \
            double acc = 0;                                                                                            \
            for (size_t j = j_lo; j <= j_hi; j++) acc += (double)a[j] * (double)v[pos - j];                            \
            out[t] = (T)acc;                                                                                           \
        }                                                                                                              \
    }

DEFINE_REF(gpuws_convolve1d_ref_f32, float)
DEFINE_REF(gpuws_convolve1d_ref_f64, double)
