#ifndef GPUWS_ALG_VECTOR_ADD_H
#define GPUWS_ALG_VECTOR_ADD_H
#ifdef __cplusplus
extern "C" {
#endif

/* c[i] = a[i] + b[i] for i < n (the workshop's exercise 2). dtype GPUWS_F32 or GPUWS_F64. c may be a or b.
 * n == 0 does nothing. */
GPUWS_API gpuws_status gpuws_vector_add(gpuws_stream *stream, gpuws_dtype dtype, size_t n, const gpuws_buffer *a,
                                        const gpuws_buffer *b, gpuws_buffer *c);

#ifdef __cplusplus
}
#endif
#endif
