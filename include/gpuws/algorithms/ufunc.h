/* The workshop's elementwise functions (Numba ufuncs) over f32 arrays, each argument an array or a scalar.
 *
 * Every function computes out[i] = f(a[i], b[i], ...) for i < n, where an operand is either an array of n f32
 * values (gpuws_operand_array) or one value used for every i (gpuws_operand_scalar; the double is rounded to f32
 * first, as NumPy rounds a Python scalar combined with a float32 array). out (n f32 values) may be any of the input
 * arrays. Values are not checked (sigma = 0 gives inf/NaN as the formula does) except where a function says so.
 * n == 0 does nothing. Asynchronous unless stated otherwise.
 *
 * Accuracy: no fast-math; each function is evaluated in f32 by the formula shown, with the device's own exp, sin,
 * cos, tanh, sqrt and division, whose error bounds (CUDA Programming Guide, mathematical-functions appendix;
 * OpenCL 1.2 §7.4) give the bounds stated per function against the exact value of the formula for the same f32
 * inputs (u = 2^-24; the looser OpenCL bounds are stated, CUDA is tighter; results below FLT_MIN may be flushed to
 * zero on OpenCL devices without single-precision denormals). The CPU backend evaluates the formula in double and
 * rounds once (error <= u relative). docs/algorithms/ufunc.md derives each bound. */
#ifndef GPUWS_ALG_UFUNC_H
#define GPUWS_ALG_UFUNC_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuws_operand {
    const gpuws_buffer *array; /* n f32 values, or NULL for a scalar */
    double scalar;             /* the value when array is NULL */
} gpuws_operand;

static inline gpuws_operand gpuws_operand_array(const gpuws_buffer *b)
{
    gpuws_operand o;
    o.array = b;
    o.scalar = 0.0;
    return o;
}
static inline gpuws_operand gpuws_operand_scalar(double v)
{
    gpuws_operand o;
    o.array = NULL;
    o.scalar = v;
    return o;
}

/* exp(-0.5 * ((x - mean) / sigma)^2) / (sigma * sqrt(2 pi)).
 * Relative error <= (13 + 13|q|) u with q = -0.5 ((x - mean) / sigma)^2 (the argument of exp amplifies the rounding
 * of (x - mean) / sigma by |q|: far tails are less accurate, as in any f32 evaluation). */
GPUWS_API gpuws_status gpuws_gaussian_pdf(gpuws_stream *stream, size_t n, gpuws_operand x, gpuws_operand mean,
                                          gpuws_operand sigma, gpuws_buffer *out);

/* The distance between (rho1 cos theta1, rho1 sin theta1) and (rho2 cos theta2, rho2 sin theta2):
 * sqrt(dx^2 + dy^2). Absolute error <= 16 u (|rho1| + |rho2|) + 10 u * distance (the points are rounded before
 * they are subtracted, so close points have a larger relative error). dx^2 overflows past about 1.8e19. */
GPUWS_API gpuws_status gpuws_polar_distance(gpuws_stream *stream, size_t n, gpuws_operand rho1, gpuws_operand theta1,
                                            gpuws_operand rho2, gpuws_operand theta2, gpuws_buffer *out);

/* out[i] = w[i] < threshold ? 0 : w[i], dtype GPUWS_F32 or GPUWS_I16 for both w and out (w is always an array).
 * The comparison is exact (threshold is not rounded to the array's type; 15.5 suppresses int16 values up to 15),
 * so every backend gives identical results. NaN w is kept (NaN < t is false). threshold NaN →
 * GPUWS_ERR_INVALID_ARGUMENT. */
GPUWS_API gpuws_status gpuws_zero_suppress(gpuws_stream *stream, gpuws_dtype dtype, size_t n, const gpuws_buffer *w,
                                           double threshold, gpuws_buffer *out);

/* max(sin(i / period) - 0.3, 0) * amplitude, with 0.3 as the f32 constant 0.3f.
 * Absolute error <= |amplitude| (5 |i / period| + 12) u. */
GPUWS_API gpuws_status gpuws_make_pulses(gpuws_stream *stream, size_t n, gpuws_operand i, gpuws_operand period,
                                         gpuws_operand amplitude, gpuws_buffer *out);

/* sqrt(x^2 + y^2) without overflow, the workshop's formula: a = max(|x|, |y|), t = min(|x|, |y|) / a,
 * a * sqrt(1 + t^2). Where that formula divides 0 by 0 or inf by inf, the C99/NumPy values are returned instead:
 * hypot(0, 0) = 0 and hypot(±inf, anything, NaN included) = +inf; otherwise a NaN argument gives NaN (NumPy's
 * behaviour; use gpuws_hypot_checked to have NaN rejected). Relative error <= 12 u. */
GPUWS_API gpuws_status gpuws_hypot(gpuws_stream *stream, size_t n, gpuws_operand x, gpuws_operand y, gpuws_buffer *out);

/* gpuws_hypot for input that must not hold NaN: blocks, scans x and y on the device first, and if any is NaN
 * returns GPUWS_ERR_INVALID_ARGUMENT naming the argument and the first such index, with out untouched; otherwise
 * computes out and waits for it. Costs one extra read of the arrays. */
GPUWS_API gpuws_status gpuws_hypot_checked(gpuws_stream *stream, size_t n, gpuws_operand x, gpuws_operand y,
                                           gpuws_buffer *out);

/* The assessment's hidden layer, fused in one pass: out[i] = tanh(greyscales[i] / 255 * weights[i]) (all f32
 * arrays). Relative error <= 16 u (tanh has condition number <= 1). */
GPUWS_API gpuws_status gpuws_hidden_layer(gpuws_stream *stream, size_t n, const gpuws_buffer *greyscales,
                                          const gpuws_buffer *weights, gpuws_buffer *out);

typedef struct gpuws_pipeline_options {
    size_t struct_size; /* sizeof(gpuws_pipeline_options); 0 = gpuws 0.2's (gpuws.h: options grow) */
    size_t chunk;       /* elements per chunk, rounded up to a multiple of 1024; 0 = 2^21 (8 MiB per array) */
    int streams;        /* streams the chunks rotate over, 1..8; 0 = 3 (upload, compute and download all overlap) */
} gpuws_pipeline_options;
#define GPUWS_PIPELINE_OPTIONS_INIT                                                                                    \
    {                                                                                                                  \
        sizeof(gpuws_pipeline_options), 0, 0                                                                           \
    }

/* The hidden layer from host memory to host memory, as the assessment asks: blocks until out (n f32 values on the
 * host) is complete. The arrays go through the device in chunks rotating over several streams, so the upload of
 * one chunk, the kernel of the previous one and the download of the one before overlap. The copies overlap only
 * when the host arrays are page-locked (allocate them with gpuws_host_alloc): with ordinary memory the result is
 * the same, only slower. Device memory used: 2 * streams * chunk f32 values (stream-owned scratch, reused by later
 * calls). options NULL = defaults. The CPU backend computes directly in host memory.
 * Errors (nothing read, out untouched): NULL ctx or a NULL array with n > 0, options out of range →
 * GPUWS_ERR_INVALID_ARGUMENT; n * 4 bytes wrapping size_t → GPUWS_ERR_OVERFLOW. */
GPUWS_API gpuws_status gpuws_hidden_layer_host(gpuws_context *ctx, size_t n, const float *greyscales,
                                               const float *weights, float *out, const gpuws_pipeline_options *options);

#ifdef __cplusplus
}
#endif
#endif
