#ifndef GPUWS_ALG_MATMUL_H
#define GPUWS_ALG_MATMUL_H
#ifdef __cplusplus
extern "C" {
#endif

/* Which kernel computes the product. All give results within the same error bound (below). */
typedef enum gpuws_matmul_variant {
    /* Shared-memory tiles with register blocking (the default; the fast one). */
    GPUWS_MATMUL_TILED = 0,
    /* One thread per element of C reading A and B straight from device memory: the workshop's first version,
     * kept as the "before" of the benchmarks. */
    GPUWS_MATMUL_NAIVE = 1,
    /* 16×16 tiles of A and B staged in shared memory, one thread per element of C, a block barrier per tile: the
     * workshop's second version (and examples/kernels/matmul_tiled.c written in the kernel dialect). */
    GPUWS_MATMUL_SHARED = 2
} gpuws_matmul_variant;

/* C = A · B, row-major: A is m×k, B is k×n, C is m×n (NumPy's `C = A @ B` on C-contiguous arrays), dtype
 * GPUWS_F32 or GPUWS_F64 for all three. Any m, n, k, not only multiples of the kernels' tiles.
 *
 * Shapes: m == 0 or n == 0 is a valid empty product and does nothing; k == 0 sets C to zeros (NumPy's result).
 * Each dimension must be below 2^31 (GPUWS_ERR_OUT_OF_RANGE otherwise); m·k, k·n, m·n or their byte sizes that
 * overflow size_t are GPUWS_ERR_OVERFLOW; buffers smaller than their matrix are GPUWS_ERR_OUT_OF_RANGE. C must
 * not be A or B (GPUWS_ERR_INVALID_ARGUMENT): the kernels read A and B while C is written.
 *
 * Accuracy: every element is a dot product of length k computed in the dtype, in an order (and with fused
 * multiply-adds) that depends on the device, so c_ij may differ between backends and variants, but always
 * |c_ij − (A·B)_ij| ≤ γ_k Σ_l |a_il||b_lj| with γ_k = k·u/(1 − k·u), u = 2^-24 (f32) or 2^-53 (f64)
 * (Higham, Accuracy and Stability of Numerical Algorithms, eq. 3.5). Inputs whose products and partial sums
 * are all exactly representable (small integers) give exact, identical results everywhere. NaN and Inf
 * propagate as in IEEE arithmetic. */
GPUWS_API gpuws_status gpuws_matmul(gpuws_stream *stream, gpuws_dtype dtype, size_t m, size_t n, size_t k,
                                    const gpuws_buffer *a, const gpuws_buffer *b, gpuws_buffer *c);

/* The same with the kernel chosen (the CPU backend runs its one reference for all). A variant outside the
 * enum is GPUWS_ERR_INVALID_ARGUMENT. */
GPUWS_API gpuws_status gpuws_matmul_ex(gpuws_stream *stream, gpuws_matmul_variant variant, gpuws_dtype dtype, size_t m,
                                       size_t n, size_t k, const gpuws_buffer *a, const gpuws_buffer *b,
                                       gpuws_buffer *c);

#ifdef __cplusplus
}
#endif
#endif
