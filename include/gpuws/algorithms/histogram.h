/* Histogram with equal bins over [lo, hi): the same counts on every backend. */
#ifndef GPUWS_ALG_HISTOGRAM_H
#define GPUWS_ALG_HISTOGRAM_H
#ifdef __cplusplus
extern "C" {
#endif

/* counts[b] (uint64, `bins` elements) = the number of i < n with edge[b] <= x[i] < edge[b + 1], where
 *   step = (hi - lo) / bins,  edge[k] = k * step + lo  (each operation rounded in double),  edge[bins] = hi,
 * exactly NumPy's np.linspace(lo, hi, bins + 1). x (dtype GPUWS_F32 or GPUWS_I32, n elements) is compared with
 * these double edges exactly, so a value's bin is defined without rounding and is the same on every backend.
 * Like np.histogram(x.astype(np.float64), bins, range=(lo, hi)) except that hi itself is NOT counted (NumPy puts
 * x == hi in the last bin; gpuws bins are half-open). Values outside [lo, hi) and NaN are not counted.
 *
 * GPU backends keep one privatised histogram per work-group in shared/local memory (atomic increments there),
 * written once per work-group and summed by a second pass, so no global atomics race on the counts; with too
 * many bins for local memory they use global atomics on 32-bit counts. Devices with fp64 compute the edges on the
 * device; OpenCL devices without fp64 get them from the host, and then the call blocks until the work queued on
 * the stream before it has finished (the host table must outlive the upload).
 *
 * Errors (GPUWS_ERR_INVALID_ARGUMENT): dtype other than f32/i32, bins == 0, lo or hi not finite, lo >= hi,
 * hi - lo overflowing double, or a step of zero (range too narrow for the bins). n == 0 writes zero counts. */
GPUWS_API gpuws_status gpuws_histogram(gpuws_stream *stream, gpuws_dtype dtype, size_t n, const gpuws_buffer *x,
                                       double lo, double hi, uint32_t bins, gpuws_buffer *counts);

#ifdef __cplusplus
}
#endif
#endif
