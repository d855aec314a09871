/* Convolution, the workshop's first exercise: scipy.signal.convolve2d and numpy.convolve, exactly.
 *
 * Both are true convolutions (the kernel is flipped), in f32 or f64, with SciPy's / NumPy's output shapes,
 * centring and boundary rules, and their errors turned into gpuws statuses. See docs/algorithms/convolve.md. */
#ifndef GPUWS_ALG_CONVOLVE_H
#define GPUWS_ALG_CONVOLVE_H
#ifdef __cplusplus
extern "C" {
#endif

/* Output size, as SciPy and NumPy name it:
 *   FULL  every position where image and kernel overlap: (H + kh - 1) x (W + kw - 1)
 *   SAME  the size of the image (for convolve1d: of the longer input), centred like SciPy / NumPy: output row m
 *         is full row m + (kh - 1) / 2 (integer division; so an even kernel's extra tap falls on the leading side)
 *   VALID only positions where one input lies wholly inside the other: (H - kh + 1) x (W - kw + 1), or, when the
 *         kernel is at least as large as the image in every dimension, (kh - H + 1) x (kw - W + 1) (SciPy swaps
 *         the inputs). When neither is at least as large as the other in every dimension SciPy raises ValueError:
 *         here GPUWS_ERR_INVALID_ARGUMENT. */
typedef enum gpuws_convolve_mode {
    GPUWS_CONVOLVE_FULL = 0,
    GPUWS_CONVOLVE_SAME = 1,
    GPUWS_CONVOLVE_VALID = 2
} gpuws_convolve_mode;

/* What lies outside the image (scipy.signal.convolve2d's `boundary`):
 *   FILL  the value options.fill_value (SciPy's fillvalue; default 0)
 *   WRAP  the image repeated periodically (pixel i is pixel i mod H)
 *   SYMM  the image mirrored about its edges, edge pixel included (... 1 0 | 0 1 2 ... H-1 | H-1 H-2 ...),
 *         repeated with period 2H: exactly what SciPy computes, also when the kernel is larger than the image.
 * In VALID mode no output reads outside the image, so the boundary does not matter. */
typedef enum gpuws_convolve_boundary {
    GPUWS_BOUNDARY_FILL = 0,
    GPUWS_BOUNDARY_WRAP = 1,
    GPUWS_BOUNDARY_SYMM = 2
} gpuws_convolve_boundary;

typedef struct gpuws_convolve2d_options {
    size_t struct_size;               /* sizeof(gpuws_convolve2d_options); 0 = gpuws 0.2's (gpuws.h: options grow) */
    gpuws_convolve_mode mode;         /* default GPUWS_CONVOLVE_FULL (SciPy's default) */
    gpuws_convolve_boundary boundary; /* default GPUWS_BOUNDARY_FILL */
    double fill_value;                /* default 0; rounded to f32 for f32 convolutions; any value, NaN included */
} gpuws_convolve2d_options;
#define GPUWS_CONVOLVE2D_OPTIONS_INIT                                                                                  \
    {                                                                                                                  \
        sizeof(gpuws_convolve2d_options), GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0                                \
    }

/* The output shape scipy.signal.convolve2d gives for an H x W image and a kh x kw kernel in `mode`.
 * Zero sizes (SciPy returns odd empty shapes for them; gpuws has nothing to compute) and VALID shapes where
 * neither input is at least as large as the other in every dimension are GPUWS_ERR_INVALID_ARGUMENT; an
 * unknown mode too. Returns a host value; touches no device. */
GPUWS_API gpuws_status gpuws_convolve2d_output_shape(size_t height, size_t width, size_t kh, size_t kw,
                                                     gpuws_convolve_mode mode, size_t *out_height, size_t *out_width);

/* out = scipy.signal.convolve2d(image, kernel, mode, boundary, fillvalue):
 *   out[m][n] = sum over j < kh, k < kw of kernel[j][k] * X(m + om - j, n + on - k)
 * where X is the image extended by the boundary rule, om = 0 (FULL), (kh - 1) / 2 (SAME), and in VALID mode the
 * smaller of (kh, H) minus 1 (likewise on for columns).
 *
 * dtype: GPUWS_F32 or GPUWS_F64 (all three buffers hold that type).
 * image: height rows of width elements, row r starting at element r * row_stride (row_stride >= width;
 *   0 means width), so the buffer needs (height - 1) * row_stride + width elements. Row-major, row 0 first.
 * kernel: kh x kw, contiguous row-major.
 * out: out_height x out_width (gpuws_convolve2d_output_shape), contiguous row-major. It must not be the image
 *   or kernel buffer. options NULL = GPUWS_CONVOLVE2D_OPTIONS_INIT.
 * Sizes: every dimension >= 1 and (dimension + kernel dimension) < 2^30; larger is GPUWS_ERR_UNSUPPORTED.
 *
 * Accuracy: each output is a sum of kh*kw products accumulated in dtype (f32 on GPUs; the CPU backend's scalar
 * reference accumulates f32 in double), in an order that differs from SciPy's, so it is within
 * kh*kw * u * sum|kernel[j][k] * X(...)| of the exact sum (u = 2^-24 for f32, 2^-53 for f64; Higham's bound for
 * any summation order). With integer-valued data whose sums stay below 2^24 (f32) every backend is exact.
 * NaN and Inf propagate exactly as in SciPy: only the taps SciPy multiplies are ever multiplied.
 *
 * GPU backends tile the image through shared/local memory, each thread computing 8 x 5 (f32) or 8 x 3 (f64)
 * outputs from registers, with the flipped kernel in shared memory; kernels larger than a tile's budget are
 * processed in blocks, so there is no size limit. Errors: NULL or dead buffers, a bad dtype, mode or boundary,
 * zero sizes, row_stride < width, aliasing of out with an input → GPUWS_ERR_INVALID_ARGUMENT; size products that
 * overflow size_t → GPUWS_ERR_OVERFLOW; a buffer smaller than its shape → GPUWS_ERR_OUT_OF_RANGE; f64 on a device
 * without double precision → GPUWS_ERR_UNSUPPORTED. On error nothing is enqueued and out is untouched. */
GPUWS_API gpuws_status gpuws_convolve2d(gpuws_stream *stream, gpuws_dtype dtype, const gpuws_buffer *image,
                                        size_t height, size_t width, size_t row_stride, const gpuws_buffer *kernel,
                                        size_t kh, size_t kw, const gpuws_convolve2d_options *options,
                                        gpuws_buffer *out);

/* out = scipy.signal.convolve2d(image, numpy.outer(col, row), mode, boundary, fillvalue), for a kernel given as
 * its two factors: col (kh values, the kernel's column profile) and row (kw values, its row profile). A Gaussian
 * is one: exp(-(x^2 + y^2) / 2) = outer(g, g) with g = exp(-x^2 / 2). Computed as two 1-D passes, each output
 * sum_{j<kh} col[j] * (sum_{k<kw} row[k] * X(m + om - j, n + on - k)), so kh + kw products per output instead of
 * kh * kw; X, om, on, modes, boundaries and shapes exactly as for gpuws_convolve2d with a kh x kw kernel.
 *
 * Accuracy: the products are grouped differently from the 2-D sum (row[k] * X first, then col[j] times that row
 * sum), so each output is within about (kh + kw) * u * sum_j |col[j]| sum_k |row[k] * X(...)| of the exact value
 * (u as for gpuws_convolve2d; f32 on GPUs, the CPU backend accumulates f32 in double and rounds once). NaN
 * propagates exactly as in the 2-D convolution (every tap of the footprint is multiplied, zero taps included), and
 * so does Inf, except where a finite row sum overflows to Inf that the 2-D sum would not have reached.
 *
 * GPU backends: factors of up to 16 taps each in one kernel (a tile's row sums in shared/local memory, then its
 * column sums); longer factors in two launches through temporary device memory owned by the stream
 * ((out_height + kh - 1) x out_width elements, kept for the stream's next call); no limit on kh or kw. Errors as
 * for gpuws_convolve2d (col and row must hold kh and kw elements, NULL or aliased
 * with out is GPUWS_ERR_INVALID_ARGUMENT); GPUWS_ERR_OUT_OF_MEMORY if the temporary memory cannot be had. On
 * error out is untouched. */
GPUWS_API gpuws_status gpuws_convolve2d_separable(gpuws_stream *stream, gpuws_dtype dtype, const gpuws_buffer *image,
                                                  size_t height, size_t width, size_t row_stride,
                                                  const gpuws_buffer *col, size_t kh, const gpuws_buffer *row,
                                                  size_t kw, const gpuws_convolve2d_options *options,
                                                  gpuws_buffer *out);

/* Progress of gpuws_convolve2d_host: called once band `band` (0-based, in order) of `bands` is complete in out,
 * with rows_done of the out_rows output rows written so far; on the calling thread with one device, on one of the
 * call's threads (one call at a time, still in order) with more_contexts. */
typedef void (*gpuws_convolve2d_progress)(void *user, size_t band, size_t bands, size_t rows_done, size_t out_rows);

typedef struct gpuws_convolve2d_host_options {
    size_t struct_size;                 /* sizeof(gpuws_convolve2d_host_options) */
    gpuws_convolve_mode mode;           /* as gpuws_convolve2d_options: default GPUWS_CONVOLVE_FULL */
    gpuws_convolve_boundary boundary;   /* default GPUWS_BOUNDARY_FILL */
    double fill_value;                  /* default 0 */
    uint64_t max_device_bytes;          /* device memory the call may use; 0 = what the device has free */
    gpuws_convolve2d_progress progress; /* NULL = none */
    void *progress_user;                /* progress's first argument */
    /* Several devices: contexts of further devices of ctx's backend that share the bands with ctx (band b runs on
     * device b % (1 + num_more_contexts); gpuws_contexts_create makes them from GPUWS_DEVICE). NULL = ctx alone. */
    gpuws_context *const *more_contexts;
    size_t num_more_contexts;
} gpuws_convolve2d_host_options;
#define GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT                                                                             \
    {                                                                                                                  \
        sizeof(gpuws_convolve2d_host_options), GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0, 0, NULL, NULL, NULL, 0   \
    }

/* How gpuws_convolve2d_host would split this convolution: *band_rows output rows per band (the last band may have
 * fewer) in *bands bands; 1 band when the whole image, output and kernel fit the budget (in-core). Errors as for
 * gpuws_convolve2d_host (no image is read; a NULL result pointer is GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_convolve2d_host_bands(gpuws_context *ctx, gpuws_dtype dtype, size_t height, size_t width,
                                                   size_t kh, size_t kw, const gpuws_convolve2d_host_options *options,
                                                   size_t *band_rows, size_t *bands);

/* gpuws_convolve2d from host memory to host memory, for images of any size (out-of-core; docs/scale.md). Blocks
 * until out is complete. image: height rows of width elements of dtype (GPUWS_F32 or GPUWS_F64), row r at element
 * r * row_stride (0 = width); kernel: kh x kw contiguous; out: the output shape of gpuws_convolve2d_output_shape,
 * contiguous. Any host memory (pinned or not): rows are staged through pinned buffers of the call's own.
 *
 * When the image, the output and the kernel fit options->max_device_bytes (0: fifteen sixteenths of the device's free
 * memory, as the CUDA driver counts it; of three quarters of the device's memory where the driver has no count:
 * OpenCL, CPU), the call is
 * one in-core gpuws_convolve2d (on ctx alone). Otherwise the output is computed in bands of whole output rows: each band's input
 * rows (its own rows plus kh - 1 halo rows, fewer at the image's edges with boundary FILL; wrapped or mirrored rows
 * copied in for WRAP and SYMM) go through one of three slots (pinned staging, device input, device output, pinned
 * staging) on three streams, so that the upload of one band, the convolution of the previous one and the download
 * of the one before overlap. Every band is planned as the whole image's launch would be, so out is bit-identical
 * to gpuws_convolve2d's for any banding, on every backend. A kernel taller than a band is handled (the halo is
 * always kh - 1 rows). The CPU backend goes through the same bands (its "device" memory is host memory). The host's
 * copies into and out of staging use up to four threads (the calling thread and threads started for the copy) for
 * bands of a MiB or more.
 *
 * Several devices (options->more_contexts): the budget holds on each device (0: the least free memory among them)
 * and the bands go round-robin over ctx and the more contexts, each device with its own slots and streams, driven
 * by a thread of its own (ctx's by the calling thread). out is the same bytes as on ctx alone when the devices
 * are the same model (each band is planned on its device as the whole image's launch would be there).
 *
 * Errors (nothing read, out untouched): NULL ctx, image, kernel or out; bad dtype, mode, boundary; zero sizes;
 * row_stride < width; out overlapping image or kernel; a more_contexts entry that is NULL, not live, of another
 * backend, or ctx or an entry again; a budget smaller than one band of one output row with its
 * halo rows in one slot, plus the kernel → GPUWS_ERR_INVALID_ARGUMENT (the message gives the minimum in bytes).
 * Element counts overflowing size_t → GPUWS_ERR_OVERFLOW; sizes past gpuws_convolve2d's limits and f64 on a device
 * without it → GPUWS_ERR_UNSUPPORTED. A device error once bands run returns its status after every stream has
 * stopped; out then holds the bands completed before it and the rest of out is unspecified. */
GPUWS_API gpuws_status gpuws_convolve2d_host(gpuws_context *ctx, gpuws_dtype dtype, const void *image, size_t height,
                                             size_t width, size_t row_stride, const void *kernel, size_t kh, size_t kw,
                                             const gpuws_convolve2d_host_options *options, void *out);

/* gpuws_convolve2d_separable from host memory to host memory: gpuws_convolve2d_host's bands, slots, streams,
 * devices, budget, progress and errors (col, row for kernel: kh and kw elements of dtype, contiguous), for a kernel
 * given as its two factors. Each output's row sums and column sum are the same wherever its band starts, so out is
 * gpuws_convolve2d_separable's on the same backend, bit for bit, for any banding. A band's budget holds the factors
 * and, beside its slots, the row sums of one band ((band rows + kh - 1) x out_width elements), which the two-pass
 * kernels keep on the device. */
GPUWS_API gpuws_status gpuws_convolve2d_separable_host(gpuws_context *ctx, gpuws_dtype dtype, const void *image,
                                                       size_t height, size_t width, size_t row_stride, const void *col,
                                                       size_t kh, const void *row, size_t kw,
                                                       const gpuws_convolve2d_host_options *options, void *out);
/* How gpuws_convolve2d_separable_host would split this convolution, as gpuws_convolve2d_host_bands says it for the
 * 2-D form. */
GPUWS_API gpuws_status gpuws_convolve2d_separable_host_bands(gpuws_context *ctx, gpuws_dtype dtype, size_t height,
                                                             size_t width, size_t kh, size_t kw,
                                                             const gpuws_convolve2d_host_options *options,
                                                             size_t *band_rows, size_t *bands);

/* The length numpy.convolve gives for inputs of n and m elements: FULL n + m - 1, SAME max(n, m),
 * VALID max(n, m) - min(n, m) + 1. n == 0 or m == 0 (NumPy: ValueError) and an unknown mode are
 * GPUWS_ERR_INVALID_ARGUMENT. Returns a host value. */
GPUWS_API gpuws_status gpuws_convolve1d_output_length(size_t n, size_t m, gpuws_convolve_mode mode, size_t *out_n);

/* out = numpy.convolve(a, v, mode): out[t] = sum over j of a[j] * v[t + start - j] over the indices where both
 * exist (zero outside), start = 0 (FULL), (min(n, m) - 1) / 2 (SAME), min(n, m) - 1 (VALID). Like NumPy, the
 * longer input plays the signal and the shorter the filter, so the result does not depend on their order.
 * dtype GPUWS_F32 or GPUWS_F64; a: n elements, v: m elements, out: gpuws_convolve1d_output_length elements, not
 * a or v. Accuracy as for gpuws_convolve2d with min(n, m) products per output. Errors as for gpuws_convolve2d;
 * lengths of 2^62 or more are GPUWS_ERR_UNSUPPORTED.
 * GPU backends stage signal segments and up to 2048 flipped taps at a time in shared memory and compute 4 (f32) or
 * 2 (f64) outputs per thread from registers, one 16-byte store each. */
GPUWS_API gpuws_status gpuws_convolve1d(gpuws_stream *stream, gpuws_dtype dtype, const gpuws_buffer *a, size_t n,
                                        const gpuws_buffer *v, size_t m, gpuws_convolve_mode mode, gpuws_buffer *out);

/* ---- 1-D from host memory ----------------------------------------------------------------------------------------
 * gpuws_convolve1d from host memory to host memory, for signals of any length (out-of-core; docs/scale.md): a, v
 * and out host arrays of dtype (out gpuws_convolve1d_output_length elements). When the signal, the filter and out
 * fit the budget of one device the call is one in-core gpuws_convolve1d. Otherwise the shorter input (the filter)
 * is uploaded once to each device and the outputs go in segments of whole 4096-output blocks, each segment's input
 * samples (its outputs' and min(n, m) - 1 more) through one of three slots on three streams (pinned staging, or
 * the caller's memory where it is pinned for the device), so that uploads, kernels and downloads of successive
 * segments overlap. A segment starts on a multiple of 4096 outputs and its samples on a multiple of 16, so every
 * kernel tiles and aligns it as the whole signal's launch would: out is gpuws_convolve1d's bits for any
 * segmenting, on every backend, and over several devices of one model (three segments a device at least). The CPU
 * backend computes on the caller's arrays. Blocking. */
typedef struct gpuws_convolve1d_host_options {
    size_t struct_size;        /* sizeof(gpuws_convolve1d_host_options) */
    uint64_t max_device_bytes; /* device memory the call may use on each device; 0 = fifteen sixteenths of the free */
    /* several devices: contexts of further devices of ctx's backend that share the segments with ctx (segment s
     * on device s % (1 + num_more_contexts)); NULL = ctx alone */
    gpuws_context *const *more_contexts;
    size_t num_more_contexts;
} gpuws_convolve1d_host_options;
#define GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT                                                                             \
    {                                                                                                                  \
        sizeof(gpuws_convolve1d_host_options), 0, NULL, 0                                                              \
    }

/* How gpuws_convolve1d_host would split this convolution: *segment outputs a segment (the last may have fewer) in
 * *segments segments. Errors as gpuws_convolve1d_host's (no array is read; a NULL result pointer is
 * GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_convolve1d_host_segments(gpuws_context *ctx, gpuws_dtype dtype, size_t n, size_t m,
                                                      gpuws_convolve_mode mode,
                                                      const gpuws_convolve1d_host_options *options, size_t *segment,
                                                      size_t *segments);

/* Errors (nothing read, out untouched): NULL ctx, a, v or out, out overlapping a or v, a more_contexts entry that
 * is NULL, not live, of another backend, or ctx or an entry again, and a budget that cannot hold the filter and
 * three slots of one segment of 4096 outputs and its samples (GPUWS_ERR_INVALID_ARGUMENT: the message gives the
 * bytes needed), on every backend; then gpuws_convolve1d's. A device error once segments run returns its status
 * after every stream has stopped; out then holds the segments completed before it and the rest of out is
 * unspecified. */
GPUWS_API gpuws_status gpuws_convolve1d_host(gpuws_context *ctx, gpuws_dtype dtype, const void *a, size_t n,
                                             const void *v, size_t m, gpuws_convolve_mode mode,
                                             const gpuws_convolve1d_host_options *options, void *out);

#ifdef __cplusplus
}
#endif
#endif
