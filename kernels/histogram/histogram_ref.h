#ifndef GPUWS_HISTOGRAM_REF_H
#define GPUWS_HISTOGRAM_REF_H
#include <stddef.h>
#include <stdint.h>
/* The bin edges of gpuws_histogram, as the values compared with the input: for f32 input the smallest float >= each
 * double edge, for i32 input the smallest integer >= it (clamped to [INT32_MIN, 2^31]); either way x >= edge in
 * the input's type exactly when x >= the double edge. edges holds bins + 1 entries. */
void gpuws_histogram_edges_f32(double lo, double hi, uint32_t bins, float *edges);
void gpuws_histogram_edges_i32(double lo, double hi, uint32_t bins, int64_t *edges);
/* counts[b] = #{i : edges[b] <= x[i] < edges[b + 1]} (binary search; NaN and out-of-range values skipped). */
void gpuws_histogram_ref_f32(const float *x, size_t n, const float *edges, uint32_t bins, uint64_t *counts);
void gpuws_histogram_ref_i32(const int32_t *x, size_t n, const int64_t *edges, uint32_t bins, uint64_t *counts);
#endif
