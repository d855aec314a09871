/* Per-label measurements, scalar reference: the tests' oracle and the CPU backend's implementation. */
#ifndef GPUWS_MEASURE_REF_H
#define GPUWS_MEASURE_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <math.h>
#include <stdbool.h>

/* One pass in raster order with f64 sums (the order scipy.ndimage's bincount uses). Labels outside 1..num_labels
 * are ignored. Peak: the largest value, the first in raster order among equal ones (+0.0 and -0.0 are equal), a
 * NaN beats every number (like numpy.max / argmax). Centre of mass NaN when the sum is 0; a label with no pixel
 * gets npix 0, sum 0, row/col/peak NaN and peak_row/peak_col -1. */
void gpuws_measure_ref(const float *data, const int32_t *labels, size_t width, size_t height, size_t num_labels,
                       gpuws_source_measure *out);

/* gpuws_measure_ref with the sums Σ data·r and Σ data·c left in row and col (no centre taken). */
void gpuws_measure_ref_sums(const float *data, const int32_t *labels, size_t width, size_t height, size_t num_labels,
                            gpuws_source_measure *out);

/* gpuws_measure_ref's step for pixel (r, c) of value d into its label's record m (shared with the host pipeline's
 * measurement on threads, kernels/sources/measure_host.c). */
static inline void gpuws_measure_ref_add(gpuws_source_measure *m, double d, size_t r, size_t c)
{
    m->sum += d;
    m->row += d * (double)r;
    m->col += d * (double)c;
    const bool better = m->npix == 0 || (!isnan(m->peak) && (isnan(d) || d > m->peak));
    if (better) {
        m->peak = d;
        m->peak_row = (int64_t)r;
        m->peak_col = (int64_t)c;
    }
    m->npix++;
}

/* The record's sums to its centre of mass: NaN when the sum is 0. */
static inline void gpuws_measure_ref_centre(gpuws_source_measure *m)
{
    if (m->sum != 0.0) {
        m->row /= m->sum;
        m->col /= m->sum;
    } else {
        m->row = m->col = NAN;
    }
}

#endif
