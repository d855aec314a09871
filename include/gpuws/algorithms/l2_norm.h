#ifndef GPUWS_ALG_L2_NORM_H
#define GPUWS_ALG_L2_NORM_H
#ifdef __cplusplus
extern "C" {
#endif

/* out[r] = sqrt(Σ_j in[r·cols + j]²) for each of the `rows` rows of a row-major rows×cols matrix: the workshop's
 * gufunc l2_norm with signature (i)->(), i.e. NumPy's `np.linalg.norm(a, axis=1)`. dtype GPUWS_F32 or
 * GPUWS_F64 for both `in` and `out` (`out` holds `rows` elements).
 *
 * Overflow-safe: each row is scaled by a power of two near its largest |value| before squaring (two passes over
 * the row, like LAPACK's xNRM2), so rows of values near the largest finite float, or of values whose squares
 * would underflow, give the correctly scaled result; the result is Inf only when the true norm exceeds the
 * dtype's range. Accuracy: for results in the dtype's normal range the relative error is at most γ_cols/2 + 2u,
 * γ_n = n·u/(1 − n·u) ≈ n·u, u = 2^-24 for f32, 2^-53 for f64 (so about (cols/2 + 2)·u), whatever order the
 * device sums in; f32 sums are accumulated in f32 on every device (no fp64 needed).
 *
 * Special values, as NumPy: a row containing a NaN gives NaN (this is how bad input is reported: the call cannot
 * fail on data without a host round trip, and only the rows holding NaNs are marked); otherwise a row holding
 * ±Inf gives +Inf. A row of zeros gives 0, and cols == 0 gives 0 for every row (the norm of an empty vector).
 *
 * rows == 0 does nothing. rows and cols must each be below 2^31 (GPUWS_ERR_OUT_OF_RANGE); rows·cols overflowing
 * size_t is GPUWS_ERR_OVERFLOW; `out` must not be `in` (GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_l2_norm(gpuws_stream *stream, gpuws_dtype dtype, size_t rows, size_t cols,
                                     const gpuws_buffer *in, gpuws_buffer *out);

#ifdef __cplusplus
}
#endif
#endif
