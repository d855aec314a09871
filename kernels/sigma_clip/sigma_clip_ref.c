/* κ-σ clipping reference: sort the non-NaN values once, then the kept set is always a contiguous range of the
 * sorted array, so each pass is the NumPy loop's filter applied to that range. Simple enough to be the oracle. */
#include "sigma_clip_ref.h"

#include "../../core/alloc.h" /* gpuws__malloc: allocations the fault tests can fail */

#include <math.h>
#include <stdlib.h>

/* LSD radix sort of uint32 keys, 4 passes of 8 bits (stable, O(n)). */
static void radix_sort_u32(uint32_t *k, uint32_t *tmp, size_t n)
{
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < n; i++) count[((k[i] >> shift) & 0xffu) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) tmp[count[(k[i] >> shift) & 0xffu]++] = k[i];
        uint32_t *t = k;
        k = tmp;
        tmp = t;
    }
    /* four passes: the sorted keys are back in the caller's array */
}

/* Neumaier-compensated sum: within a few ulps of the exact sum whatever the data. */
typedef struct {
    double s, c;
} ksum;

static void ksum_add(ksum *a, double x)
{
    double t = a->s + x;
    a->c += fabs(a->s) >= fabs(x) ? (a->s - t) + x : (x - t) + a->s;
    a->s = t;
}

void gpuws_sigma_clip_ref_stats(const float *v, size_t m, double *median, double *mean, double *std)
{
    if (m == 0) {
        *median = *mean = *std = NAN;
        return;
    }
    *median = (m & 1) ? (double)v[m / 2] : ((double)v[m / 2 - 1] + (double)v[m / 2]) / 2.0;
    ksum s = { 0, 0 };
    for (size_t i = 0; i < m; i++) ksum_add(&s, (double)v[i]);
    const double mu = (s.s + s.c) / (double)m;
    ksum q = { 0, 0 };
    for (size_t i = 0; i < m; i++) {
        const double d = (double)v[i] - mu;
        ksum_add(&q, d * d);
    }
    *mean = mu;
    *std = sqrt((q.s + q.c) / (double)m);
}

gpuws_status gpuws_sigma_clip_ref(const float *x, size_t n, double kappa, int max_iterations,
                                  gpuws_sigma_clip_result *r)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += !isnan(x[i]);
    if (m == 0) return GPUWS_ERR_INVALID_ARGUMENT;
    uint32_t *keys = gpuws__malloc(m * sizeof *keys), *tmp = gpuws__malloc(m * sizeof *tmp);
    if (!keys || !tmp) {
        gpuws__free(keys);
        gpuws__free(tmp);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    for (size_t i = 0, j = 0; i < n; i++)
        if (!isnan(x[i])) keys[j++] = gpuws_sigma_clip_key(x[i]);
    radix_sort_u32(keys, tmp, m);
    float *v = (float *)tmp; /* the sorted values, decoded */
    for (size_t i = 0; i < m; i++) v[i] = gpuws_sigma_clip_unkey(keys[i]);
    gpuws__free(keys);

    size_t a = 0, b = m; /* the kept set is v[a..b) */
    int it = 0, converged = 0;
    double med, mean, std;
    while (it < max_iterations) {
        it++;
        const size_t cnt = b - a;
        if (cnt == 0) { /* NumPy: the median of nothing is NaN, nothing can be removed */
            converged = 1;
            break;
        }
        gpuws_sigma_clip_ref_stats(v + a, cnt, &med, &mean, &std);
        const double t = kappa * std, lo = med - t, hi = med + t;
        size_t na = a, nb = b;
        while (na < nb && !((double)v[na] > lo)) na++; /* NaN bounds keep nothing, like NumPy */
        while (nb > na && !((double)v[nb - 1] < hi)) nb--;
        if (nb - na == cnt) {
            converged = 1;
            break;
        }
        a = na;
        b = nb;
    }
    gpuws_sigma_clip_ref_stats(v + a, b - a, &med, &mean, &std);
    gpuws__free(tmp);
    r->count = b - a;
    r->median = med;
    r->mean = mean;
    r->std = std;
    r->iterations = it;
    r->converged = converged;
    return GPUWS_OK;
}
