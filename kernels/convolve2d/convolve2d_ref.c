/* convolve2d's shape rules and scalar references. The 2-D reference follows scipy.signal.convolve2d's loop
 * (sigtools' _convolve2d): kernel rows then columns in order, unflipped, each tap reading the extended image. The
 * separable one computes the row sums of every extended-image row an output needs, then the column sums. */
#include "convolve2d_ref.h"

#include "../common/driver.h"
#include "../../core/options.h"

#include <stdint.h>

/* Each dimension plus the kernel's stays below this, so device index arithmetic fits in 32-bit ints. */
#define DIM_LIMIT ((size_t)1 << 30)

gpuws_status gpuws__conv2d_geometry_init(size_t h, size_t w, size_t row_stride, size_t kh, size_t kw,
                                         const gpuws_convolve2d_options *options, gpuws__conv2d_geometry *g)
{
    gpuws_convolve2d_options read = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    gpuws_status st =
        gpuws__options_read(options, &read, sizeof read, GPUWS__CONVOLVE2D_OPTIONS_BASE, "convolve2d: options");
    if (st) return st;
    const gpuws_convolve2d_options *o = &read;
    if ((unsigned)o->mode > GPUWS_CONVOLVE_VALID)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve2d: mode %d is not full, same or valid", (int)o->mode);
    if ((unsigned)o->boundary > GPUWS_BOUNDARY_SYMM)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve2d: boundary %d is not fill, wrap or symm",
                            (int)o->boundary);
    if (h == 0 || w == 0 || kh == 0 || kw == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve2d: zero size (image %zu x %zu, kernel %zu x %zu)", h,
                            w, kh, kw);
    if (row_stride == 0) row_stride = w;
    if (row_stride < w)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve2d: row_stride %zu is less than the width %zu",
                            row_stride, w);
    if (h >= DIM_LIMIT - kh || w >= DIM_LIMIT - kw || kh >= DIM_LIMIT || kw >= DIM_LIMIT)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "convolve2d: image %zu x %zu with kernel %zu x %zu: each dimension plus "
                            "the kernel's must stay below 2^30",
                            h, w, kh, kw);
    g->h = h, g->w = w, g->stride = row_stride, g->kh = kh, g->kw = kw;
    g->boundary = o->boundary;
    g->fill = o->fill_value;
    switch (o->mode) {
    case GPUWS_CONVOLVE_FULL: g->oh = h + kh - 1, g->ow = w + kw - 1, g->om = 0, g->on = 0; break;
    case GPUWS_CONVOLVE_SAME: g->oh = h, g->ow = w, g->om = (kh - 1) / 2, g->on = (kw - 1) / 2; break;
    default: { /* GPUWS_CONVOLVE_VALID (checked above) */
        const int image_larger = h >= kh && w >= kw, kernel_larger = kh >= h && kw >= w;
        if (!image_larger && !kernel_larger)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "convolve2d: for 'valid' mode, one must be at least as large as "
                                "the other in every dimension (image %zu x %zu, kernel %zu x %zu)",
                                h, w, kh, kw);
        /* SciPy swaps the inputs when the kernel is the larger; convolution commutes, so only the window moves */
        g->oh = image_larger ? h - kh + 1 : kh - h + 1;
        g->ow = image_larger ? w - kw + 1 : kw - w + 1;
        g->om = (image_larger ? kh : h) - 1;
        g->on = (image_larger ? kw : w) - 1;
        g->boundary = GPUWS_BOUNDARY_FILL;
        g->fill = 0.0;
        break;
    }
    }
    return GPUWS_OK;
}

long long gpuws__conv_extend(long long i, long long n, gpuws_convolve_boundary boundary)
{
    if (i >= 0 && i < n) return i;
    if (boundary == GPUWS_BOUNDARY_WRAP) {
        long long r = i % n;
        return r < 0 ? r + n : r;
    }
    if (boundary == GPUWS_BOUNDARY_SYMM) {
        long long p = i % (2 * n);
        if (p < 0) p += 2 * n;
        return p < n ? p : 2 * n - 1 - p;
    }
    return -1;
}

gpuws_status gpuws_convolve2d_output_shape(size_t height, size_t width, size_t kh, size_t kw, gpuws_convolve_mode mode,
                                           size_t *out_height, size_t *out_width)
{
    if (!out_height || !out_width)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve2d_output_shape: NULL result pointer");
    gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    o.mode = mode;
    gpuws__conv2d_geometry g = { 0 };
    gpuws_status st = gpuws__conv2d_geometry_init(height, width, width, kh, kw, &o, &g);
    if (st) return st;
    *out_height = g.oh;
    *out_width = g.ow;
    return GPUWS_OK;
}

/* The same loop for both types; ACC is the accumulator type. */
#define DEFINE_REF(NAME, T, ACC)                                                                                       \
    void NAME(const gpuws__conv2d_geometry *g, const T *image, const T *kernel, T *out, size_t row_begin,              \
              size_t row_end)                                                                                          \
    {                                                                                                                  \
        const long long h = (long long)g->h, w = (long long)g->w, kh = (long long)g->kh, kw = (long long)g->kw;        \
        const T fill = (T)g->fill;                                                                                     \
        for (long long m = (long long)row_begin; m < (long long)row_end; m++) {                                        \
            for (long long n = 0; n < (long long)g->ow; n++) {                                                         \
                const long long c_hi = n + (long long)g->on; /* column of tap k = 0; tap k reads c_hi - k */           \
                const int interior_cols = c_hi - (kw - 1) >= 0 && c_hi < w;                                            \
                ACC acc = 0;                                                                                           \
                for (long long j = 0; j < kh; j++) {                                                                   \
                    const long long r = gpuws__conv_extend(m + (long long)g->om - j, h, g->boundary);                  \
                    const T *hrow = kernel + j * kw;                                                                   \
                    if (r < 0) {                                                                                       \
                        for (long long k = 0; k < kw; k++) acc += (ACC)hrow[k] * (ACC)fill;                            \
                        continue;                                                                                      \
                    }                                                                                                  \
                    const T *irow = image + (size_t)r * g->stride;                                                     \
                    if (interior_cols) {                                                                               \
                        for (long long k = 0; k < kw; k++) acc += (ACC)hrow[k] * (ACC)irow[c_hi - k];                  \
                    } else {                                                                                           \
                        for (long long k = 0; k < kw; k++) {                                                           \
                            const long long c = gpuws__conv_extend(c_hi - k, w, g->boundary);                          \
                            acc += (ACC)hrow[k] * (ACC)(c < 0 ? fill : irow[c]);                                       \
                        }                                                                                              \
                    }                                                                                                  \
                }                                                                                                      \
                out[(size_t)m * g->ow + (size_t)n] = (T)acc;                                                           \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_REF(gpuws_convolve2d_ref_f32, float, double)
DEFINE_REF(gpuws_convolve2d_ref_f64, double, double)

gpuws_status gpuws__convolve2d_separable_tmp_bytes(const gpuws__conv2d_geometry *g, size_t *bytes)
{
    const size_t rows = g->oh + g->kh - 1;
    size_t cells;
    if (gpuws__mul_overflows(rows, g->ow, &cells) || gpuws__mul_overflows(cells, sizeof(double), bytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "convolve2d_separable: %zu x %zu row sums overflow size_t", rows,
                            g->ow);
    return GPUWS_OK;
}

/* Row sums first: tmp[t][n] = sum_k row[k] * X(t + om - (kh - 1), n + on - k) for the oh + kh - 1 rows t the
 * outputs need (rows outside the image follow the boundary rule, all fill under FILL), then
 * out[m][n] = sum_j col[j] * tmp[m + kh - 1 - j][n]. Both in ACC, rounded to T once. */
#define DEFINE_SEPARABLE_REF(NAME, T, ACC)                                                                             \
    void NAME##_into(const gpuws__conv2d_geometry *g, const T *image, const T *col, const T *row, T *out, ACC *tmp)    \
    {                                                                                                                  \
        const long long h = (long long)g->h, w = (long long)g->w, kh = (long long)g->kh, kw = (long long)g->kw;        \
        const size_t rows = g->oh + g->kh - 1, ow = g->ow;                                                             \
        const T fill = (T)g->fill;                                                                                     \
        for (size_t t = 0; t < rows; t++) {                                                                            \
            const long long r = gpuws__conv_extend((long long)t + (long long)g->om - (kh - 1), h, g->boundary);        \
            const T *irow = r < 0 ? NULL : image + (size_t)r * g->stride;                                              \
            for (size_t n = 0; n < ow; n++) {                                                                          \
                const long long c_hi = (long long)n + (long long)g->on; /* tap k reads column c_hi - k */              \
                ACC acc = 0;                                                                                           \
                for (long long k = 0; k < kw; k++) {                                                                   \
                    const long long c = irow ? gpuws__conv_extend(c_hi - k, w, g->boundary) : -1;                      \
                    acc += (ACC)row[k] * (ACC)(c < 0 ? fill : irow[c]);                                                \
                }                                                                                                      \
                tmp[t * ow + n] = acc;                                                                                 \
            }                                                                                                          \
        }                                                                                                              \
        for (size_t m = 0; m < g->oh; m++)                                                                             \
            for (size_t n = 0; n < ow; n++) {                                                                          \
                ACC acc = 0;                                                                                           \
                for (long long j = 0; j < kh; j++) acc += (ACC)col[j] * tmp[(m + (size_t)(kh - 1 - j)) * ow + n];      \
                out[m * ow + n] = (T)acc;                                                                              \
            }                                                                                                          \
    }                                                                                                                  \
    gpuws_status NAME(const gpuws__conv2d_geometry *g, const T *image, const T *col, const T *row, T *out)             \
    {                                                                                                                  \
        size_t bytes = 0;                                                                                              \
        if (gpuws__convolve2d_separable_tmp_bytes(g, &bytes)) return GPUWS_ERR_OVERFLOW;                               \
        ACC *tmp = gpuws__malloc(bytes);                                                                               \
        if (!tmp) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "convolve2d_separable: %zu bytes of row sums", bytes);  \
        NAME##_into(g, image, col, row, out, tmp);                                                                     \
        gpuws__free(tmp);                                                                                              \
        return GPUWS_OK;                                                                                               \
    }

DEFINE_SEPARABLE_REF(gpuws_convolve2d_separable_ref_f32, float, double)
DEFINE_SEPARABLE_REF(gpuws_convolve2d_separable_ref_f64, double, double)
