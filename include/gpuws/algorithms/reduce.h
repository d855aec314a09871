#ifndef GPUWS_ALG_REDUCE_H
#define GPUWS_ALG_REDUCE_H
#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpuws_reduce_op { GPUWS_REDUCE_SUM = 0, GPUWS_REDUCE_MIN = 1, GPUWS_REDUCE_MAX = 2 } gpuws_reduce_op;

/* out[0] = sum / min / max of in[0..n) (dtype GPUWS_F32 or GPUWS_F64; out holds one element of dtype).
 *
 * Sums accumulate in double (f32 input included) on every device with fp64, so an f32 sum is the exact sum
 * correctly rounded to within one ulp plus (n-1)*2^-53*sum|x|; on OpenCL devices without fp64 an f32 sum
 * accumulates in float with compensated (Kahan) per-thread sums. min/max are exact; like NumPy they return NaN
 * if any element is NaN; -0.0 counts as smaller than +0.0. The sum of n == 0 elements is 0; min/max of n == 0
 * is GPUWS_ERR_INVALID_ARGUMENT (no value to return).
 *
 * GPU backends run one pass over the data (a few partial results per multiprocessor) and a second one-block
 * pass over the partials, both on the stream, with no host round trip. */
GPUWS_API gpuws_status gpuws_reduce(gpuws_stream *stream, gpuws_reduce_op op, gpuws_dtype dtype, size_t n,
                                    const gpuws_buffer *in, gpuws_buffer *out);

/* The same, waiting for the result and returning it on the host (as double). */
GPUWS_API gpuws_status gpuws_reduce_value(gpuws_stream *stream, gpuws_reduce_op op, gpuws_dtype dtype, size_t n,
                                          const gpuws_buffer *in, double *result);

#ifdef __cplusplus
}
#endif
#endif
