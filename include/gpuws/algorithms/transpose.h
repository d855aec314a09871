#ifndef GPUWS_ALG_TRANSPOSE_H
#define GPUWS_ALG_TRANSPOSE_H
#ifdef __cplusplus
extern "C" {
#endif

/* out = inᵀ: `in` is a rows×cols row-major matrix, `out` becomes the cols×rows matrix with
 * out[j·rows + i] = in[i·cols + j] (NumPy's `np.ascontiguousarray(a.T)`). Elements are moved, never converted,
 * so the result is bit-exact: dtype is any 4-byte type (GPUWS_F32, GPUWS_I32, GPUWS_U32) or 8-byte type
 * (GPUWS_F64, GPUWS_I64); other dtypes are GPUWS_ERR_INVALID_ARGUMENT.
 *
 * rows == 0 or cols == 0 does nothing. Each dimension must be below 2^31 (GPUWS_ERR_OUT_OF_RANGE); rows·cols
 * (or its byte size) overflowing size_t is GPUWS_ERR_OVERFLOW. In-place transposition is not supported: `out`
 * must not be `in` (GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_transpose(gpuws_stream *stream, gpuws_dtype dtype, size_t rows, size_t cols,
                                       const gpuws_buffer *in, gpuws_buffer *out);

#ifdef __cplusplus
}
#endif
#endif
