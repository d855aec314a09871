/* Per-label measurements, scalar reference: the tests' oracle and the CPU backend's implementation. */
#ifndef GPUWS_MEASURE_REF_H
#define GPUWS_MEASURE_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

/* One pass in raster order with f64 sums (the order scipy.ndimage's bincount uses). Labels outside 1..num_labels
 * are ignored. Peak: the largest value, the first in raster order among equal ones (+0.0 and -0.0 are equal), a
 * NaN beats every number (like numpy.max / argmax). Centre of mass NaN when the sum is 0; a label with no pixel
 * gets npix 0, sum 0, row/col/peak NaN and peak_row/peak_col -1. */
void gpuws_measure_ref(const float *data, const int32_t *labels, size_t width, size_t height, size_t num_labels,
                       gpuws_source_measure *out);

#endif
