/* Host driver for aperture photometry: validation, each aperture's parameters and box on the host
 * (aperture_ref.c), the per-pixel sums on the device (aperture_sum: one work-group per aperture over its box) or, on
 * the CPU backend, by the reference, then SEP's final corrections on the host from the AP_RAW doubles per aperture
 * read back. Blocking: the positions come from and the results go to host arrays. The _host calls take the pixels
 * from host arrays, uploaded in windows of whole rows (raw_windows). */
#include "../common/band_stream.h"
#include "../../core/options.h"
#include "aperture_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aperture_geom.h" /* after <math.h>: it includes nothing */

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_params = { "aperture.params" };
static const gpuws__stream_key key_raw = { "aperture.raw" };

#define AP_MAX_SUBPIX 64
#define AP_HALF_PI    1.57079632679489661923

/* Where the pixels are: device buffers on a stream (the public calls: image and o's maps), or host arrays (the
 * _host calls: h*, on the context's default stream) that raw_windows uploads. */
typedef struct {
    gpuws_stream *s;
    size_t width, height;
    const gpuws_buffer *image;
    gpuws_aperture_options o; /* the options read; the _host calls' hold no maps */
    const float *himage, *hback, *hrms;
    const uint8_t *hmask;
    size_t row0, rows;          /* the _host calls' rows in the host arrays: row0 .. row0 + rows - 1 of the image */
    uint64_t budget, max_alloc; /* the _host calls' device bytes, the largest buffer (0: none said) */
} ap_src;

/* The options' values checked (its maps are the caller's), the image's pixel count into *npix; the defaults where
 * o holds 0 for the Kron parameters. */
static gpuws_status check_values(const char *fn, size_t width, size_t height, gpuws_aperture_options *o, size_t *npix)
{
    const gpuws_aperture_options d = GPUWS_APERTURE_OPTIONS_INIT;
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x %zu: no pixels", fn, width, height);
    if (gpuws__mul_overflows(width, height, npix) || width > ((size_t)1 << 52) || height > ((size_t)1 << 52))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow the pixel index", fn, width, height);
    if (!(o->err >= 0) || !isfinite(o->err))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: err %g is not a finite number >= 0", fn, o->err);
    if (o->err > 0 && o->rms)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: err %g and an rms map: give one of them", fn, o->err);
    if (!(o->gain >= 0) || !isfinite(o->gain))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: gain %g is not a finite number >= 0", fn, o->gain);
    if (o->subpix < 0 || o->subpix > AP_MAX_SUBPIX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: subpix %d is not in 0..%d", fn, o->subpix, AP_MAX_SUBPIX);
    const double k[3] = { o->kron_r, o->kron_factor, o->kron_rmin };
    const char *kn[3] = { "kron_r", "kron_factor", "kron_rmin" };
    for (int i = 0; i < 3; i++)
        if (!(k[i] >= 0) || !isfinite(k[i]))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s %g is not a finite number >= 0", fn, kn[i], k[i]);
    if (o->kron_r == 0) o->kron_r = d.kron_r;
    if (o->kron_factor == 0) o->kron_factor = d.kron_factor;
    if (o->kron_rmin == 0) o->kron_rmin = d.kron_rmin;
    return GPUWS_OK;
}

/* The options read and checked, the image's context and pixel count. */
static gpuws_status check_image(const char *fn, gpuws_context *ctx, size_t width, size_t height,
                                const gpuws_buffer *image, const gpuws_aperture_options *options,
                                gpuws_aperture_options *o)
{
    gpuws_aperture_options d = GPUWS_APERTURE_OPTIONS_INIT;
    *o = d;
    gpuws_status st;
    char what[64];
    snprintf(what, sizeof what, "%s: options", fn);
    size_t npix;
    if ((st = gpuws__options_read(options, o, sizeof *o, GPUWS__APERTURE_OPTIONS_BASE, what)) ||
        (st = check_values(fn, width, height, o, &npix)))
        return st;
    if ((st = gpuws__check_array(ctx, image, "image", npix, sizeof(float))) ||
        (o->rms && (st = gpuws__check_array(ctx, o->rms, "rms", npix, sizeof(float)))) ||
        (o->mask && (st = gpuws__check_array(ctx, o->mask, "mask", npix, 1))) ||
        (o->back && (st = gpuws__check_array(ctx, o->back, "back", npix, sizeof(float)))))
        return st;
    return GPUWS_OK;
}

static gpuws_status need(const char *fn, const void *p, const char *name)
{
    return p ? GPUWS_OK : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", fn, name);
}

/* Positions finite; with a: the ellipses valid (r NULL: kron's r checked by the caller the same way). */
static gpuws_status check_apertures(const char *fn, size_t n, const double *x, const double *y, const double *a,
                                    const double *b, const double *theta, const double *r)
{
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: position %zu (x %g, y %g) is not finite", fn, i, x[i],
                                y[i]);
        if (r && (!(r[i] >= 0) || !isfinite(r[i])))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: r[%zu] = %g is not a finite number >= 0", fn, i, r[i]);
        if (!a) continue;
        if (!(b[i] > 0) || !(a[i] >= b[i]) || !isfinite(a[i]))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "%s: ellipse %zu has a = %g, b = %g: the axes must be finite with a >= b > 0", fn, i,
                                a[i], b[i]);
        if (!(fabs(theta[i]) <= AP_HALF_PI))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: theta[%zu] = %g is not in [-pi/2, pi/2]", fn, i,
                                theta[i]);
    }
    return GPUWS_OK;
}

/* The AP_RAW sums of the n apertures of params into raw, image and o's maps on the device. */
static gpuws_status device_raw(gpuws_stream *s, size_t width, const gpuws_buffer *image,
                               const gpuws_aperture_options *o, bool kron, size_t n, const double *params, double *raw)
{
    gpuws_context *ctx = s->ctx;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        const gpuws__aperture_host h = {
            o->rms ? gpuws__cpu_ptr(o->rms) : NULL,   o->err,    o->gain,
            o->mask ? gpuws__cpu_ptr(o->mask) : NULL, o->subpix, o->back ? gpuws__cpu_ptr(o->back) : NULL
        };
        for (size_t i = 0; i < n; i++)
            gpuws__aperture_raw_ref(gpuws__cpu_ptr(image), width, &h, kron, params + AP_PARAMS * i, raw + AP_RAW * i);
        return GPUWS_OK;
    }
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "aperture photometry accumulates in double precision, which %s lacks", ctx->info.name);
    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st =
        gpuws__kernel_block(ctx, "aperture_sum", NULL, gpuws__is_cpu_device(ctx) ? 64 : AP_BLOCK, &k, &block);
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "aperture photometry accumulates in double precision, which %s lacks", ctx->info.name);
    gpuws_buffer *dparams, *draw;
    if (st || (st = gpuws__stream_scratch(s, &key_params, n * AP_PARAMS * sizeof(double), &dparams)) ||
        (st = gpuws__stream_scratch(s, &key_raw, n * AP_RAW * sizeof(double), &draw)))
        return st;
    uint64_t groups = n < 65536 ? n : 65536; /* the kernel strides over the rest */
    if (groups > ctx->info.max_grid_dims[0]) groups = ctx->info.max_grid_dims[0];
    const gpuws_launch_config cfg = { { (uint32_t)groups, 1, 1 }, { block, 1, 1 } };
    const float var0 = (float)(o->err * o->err); /* SEP holds a pixel's variance in a float */
    const gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                               gpuws_arg_buffer((gpuws_buffer *)(o->back ? o->back : image)), /* unread stand-ins */
                               gpuws_arg_buffer((gpuws_buffer *)(o->rms ? o->rms : image)),
                               gpuws_arg_buffer((gpuws_buffer *)(o->mask ? o->mask : image)),
                               gpuws_arg_u32(o->back != NULL),
                               gpuws_arg_u32(o->rms != NULL),
                               gpuws_arg_u32(o->mask != NULL),
                               gpuws_arg_f32(var0),
                               gpuws_arg_u64(width),
                               gpuws_arg_u64(n),
                               gpuws_arg_i32(o->subpix),
                               gpuws_arg_u32(kron),
                               gpuws_arg_buffer(dparams),
                               gpuws_arg_buffer(draw),
                               gpuws_arg_local(AP_RAW * (size_t)block * sizeof(double)) };
    if (!(st = gpuws_buffer_write_async(s, dparams, 0, params, n * AP_PARAMS * sizeof(double))) &&
        !(st = gpuws_launch(s, k, &cfg, args, GPUWS__NARGS(args))))
        return gpuws__buffer_read_sync(s, draw, 0, raw, n * AP_RAW * sizeof(double));
    gpuws_stream_synchronize(s); /* the params' host copy is freed by the caller */
    return st;
}

/* Apertures summed by one kernel at most in raw_windows: their parameters and sums, 168 bytes each, are device
 * memory beside the window's rows. */
#define AP_WINDOW_BATCH ((size_t)1 << 18)

static size_t box_rows(const double *p) { return (size_t)(p[AP_YMAX] - p[AP_YMIN]); }
static bool box_empty(const double *p) { return !(p[AP_XMAX] > p[AP_XMIN]) || !(p[AP_YMAX] > p[AP_YMIN]); }

/* The window's apertures sel[0 .. k) (places in the call's params and raw): their parameters moved up by the
 * window's first row lo, summed on the window's device maps (w), the sums put back. The move is exact: lo is a whole
 * number no larger than about y + 0.5 (SEP's box), so y - lo is representable (Sterbenz's lemma where lo > y), and
 * every difference the kernel forms, a row minus the centre, is the same real number as in the whole image. */
static gpuws_status window_sum(const ap_src *src, const gpuws_buffer *image, const gpuws_aperture_options *w, bool kron,
                               size_t lo, const size_t *sel, size_t k, const double *params, double *raw,
                               double *wparams, double *wraw)
{
    for (size_t j = 0; j < k; j++) {
        double *q = wparams + AP_PARAMS * j;
        memcpy(q, params + AP_PARAMS * sel[j], AP_PARAMS * sizeof *q);
        q[AP_Y] -= (double)lo;
        q[AP_YMIN] -= (double)lo;
        q[AP_YMAX] -= (double)lo;
    }
    const gpuws_status st = device_raw(src->s, src->width, image, w, kron, k, wparams, wraw);
    for (size_t j = 0; !st && j < k; j++) memcpy(raw + AP_RAW * sel[j], wraw + AP_RAW * j, AP_RAW * sizeof *raw);
    return st;
}

/* The _host calls' windows: *m boxes with pixels among the n of params, summed *batch at most by a kernel, in
 * windows of *rows rows, as many as the budget holds beside a batch's parameters and sums (168 bytes an aperture).
 * A budget below the tallest box's rows is refused on every backend, the CPU's too (which needs no window), so that
 * a budget behaves alike everywhere. */
static gpuws_status window_rows(const ap_src *src, const char *fn, size_t n, const double *params, size_t *rows,
                                size_t *m, size_t *batch)
{
    const size_t w = src->width, h = src->rows;
    const size_t per_row =
        w * (sizeof(float) * (1 + (src->hback != NULL) + (src->hrms != NULL)) + (src->hmask != NULL));
    size_t tallest = SIZE_MAX;
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        const double *p = params + AP_PARAMS * i;
        if (box_empty(p)) continue;
        ++*m;
        if (tallest == SIZE_MAX || box_rows(p) > box_rows(params + AP_PARAMS * tallest)) tallest = i;
    }
    *batch = *m < AP_WINDOW_BATCH ? *m : AP_WINDOW_BATCH;
    *rows = 0;
    if (*m == 0) return GPUWS_OK;
    const uint64_t batch_bytes = (uint64_t)*batch * (AP_PARAMS + AP_RAW) * sizeof(double);
    size_t r = src->budget > batch_bytes ? (size_t)((src->budget - batch_bytes) / per_row) : 0;
    if (src->max_alloc && r > src->max_alloc / (w * sizeof(float))) r = (size_t)(src->max_alloc / (w * sizeof(float)));
    if (r > h) r = h;
    const size_t need_rows = box_rows(params + AP_PARAMS * tallest);
    if (r < need_rows)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: a device budget of %llu bytes is too small: aperture %zu's box spans %zu rows of %zu "
                            "pixels, which with the parameters and sums of %zu apertures need %llu bytes",
                            fn, (unsigned long long)src->budget, tallest, need_rows, w, *batch,
                            (unsigned long long)(batch_bytes + (uint64_t)need_rows * per_row));
    *rows = r;
    return GPUWS_OK;
}

/* The _host calls' sums on a GPU. The apertures, by the first row of their boxes (a counting sort), go in windows:
 * a window starts at the first row of the first box not yet summed and holds as many rows as the budget allows
 * (beside a batch of parameters and sums); every box wholly inside it is summed there. Each window sums at least
 * its first box, and rows that no box reaches are never uploaded. Boxes without pixels sum to zero on the host.
 * The host arrays hold the image's rows row0 .. row0 + h - 1, which hold every box (aperture_raw). */
static gpuws_status raw_windows(const ap_src *src, const char *fn, bool kron, size_t n, const double *params,
                                double *raw)
{
    const size_t w = src->width, h = src->rows, row0 = src->row0;
    size_t rows, m, batch, at = 0;
    gpuws_status st = window_rows(src, fn, n, params, &rows, &m, &batch);
    if (st) return st;
    for (size_t i = 0; i < n; i++)
        if (box_empty(params + AP_PARAMS * i)) memset(raw + AP_RAW * i, 0, AP_RAW * sizeof *raw);
    if (m == 0) return GPUWS_OK;
    /* host: the order (m places), each place's done flag, the batch's places, parameters and sums; one row count a
     * row for the sort */
    const size_t host_bytes = m * (sizeof(size_t) + 1) +
                              batch * (sizeof(size_t) + (AP_PARAMS + AP_RAW) * sizeof(double)) +
                              (h + 1) * sizeof(size_t);
    size_t *order = gpuws__malloc(host_bytes);
    if (!order)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the windows of %zu apertures (%zu bytes)",
                            fn, m, host_bytes);
    size_t *sel = order + m, *first = sel + batch;
    double *wparams = (double *)(void *)(first + h + 1), *wraw = wparams + AP_PARAMS * batch;
    uint8_t *done = (uint8_t *)(wraw + AP_RAW * batch);
    memset(first, 0, (h + 1) * sizeof *first);
    memset(done, 0, m);
    for (size_t i = 0; i < n; i++)
        if (!box_empty(params + AP_PARAMS * i)) first[(size_t)params[AP_PARAMS * i + AP_YMIN] - row0 + 1]++;
    for (size_t y = 0; y < h; y++) first[y + 1] += first[y];
    for (size_t i = 0; i < n; i++)
        if (!box_empty(params + AP_PARAMS * i)) order[first[(size_t)params[AP_PARAMS * i + AP_YMIN] - row0]++] = i;
    gpuws_context *ctx = src->s->ctx;
    gpuws_buffer *dm[4] = { NULL, NULL, NULL, NULL }; /* image, back, rms, mask */
    const void *hm[4] = { src->himage, src->hback, src->hrms, src->hmask };
    const size_t es[4] = { sizeof(float), sizeof(float), sizeof(float), 1 };
    const char *names[4] = { "image", "background map", "rms map", "mask" };
    for (int k = 0; k < 4 && !st; k++)
        if (hm[k] && (st = gpuws_buffer_create(ctx, rows * w * es[k], &dm[k])))
            st = gpuws__error(st, "%s: no device memory for a window of %zu rows of the %s (%zu bytes)", fn, rows,
                              names[k], rows * w * es[k]);
    gpuws_aperture_options wo = src->o;
    wo.back = dm[1], wo.rms = dm[2], wo.mask = dm[3];
    while (!st && at < m) {
        const size_t lo = (size_t)params[AP_PARAMS * order[at] + AP_YMIN];
        const size_t hi = lo + rows < row0 + h ? lo + rows : row0 + h;
        for (int k = 0; k < 4 && !st; k++)
            if (hm[k])
                st = gpuws__write(src->s, dm[k], 0, (const char *)hm[k] + (lo - row0) * w * es[k],
                                  (hi - lo) * w * es[k], 1);
        size_t k = 0;
        for (size_t i = at; !st && i < m && params[AP_PARAMS * order[i] + AP_YMIN] < (double)hi; i++) {
            if (done[i] || params[AP_PARAMS * order[i] + AP_YMAX] > (double)hi) continue;
            done[i] = 1;
            sel[k++] = order[i];
            if (k == batch) {
                st = window_sum(src, dm[0], &wo, kron, lo, sel, k, params, raw, wparams, wraw);
                k = 0;
            }
        }
        if (!st && k) st = window_sum(src, dm[0], &wo, kron, lo, sel, k, params, raw, wparams, wraw);
        while (at < m && done[at]) at++;
    }
    gpuws_stream_synchronize(src->s); /* the windows' buffers go */
    for (int k = 0; k < 4; k++) gpuws_buffer_destroy(dm[k]);
    gpuws__free(order);
    return st;
}

/* A _host call's aperture i (the caller's index) with parameters p: its box must lie in the rows the host arrays
 * hold. */
static gpuws_status box_in_rows(const ap_src *src, const char *fn, const double *p, size_t i)
{
    if (!src->himage || box_empty(p) ||
        (p[AP_YMIN] >= (double)src->row0 && p[AP_YMAX] <= (double)(src->row0 + src->rows)))
        return GPUWS_OK;
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                        "%s: aperture %zu's box spans rows %.0f to %.0f of the image, and the host arrays hold rows "
                        "%zu to %zu (options' row0 and rows)",
                        fn, i, p[AP_YMIN], p[AP_YMAX] - 1, src->row0, src->row0 + src->rows - 1);
}

/* The AP_RAW sums of the n apertures of params into raw, wherever the pixels are. The _host calls' boxes must lie
 * in the rows the host arrays hold (box_in_rows: params' index is the caller's, but for flux_auto's second sums,
 * which it checks itself); on the CPU backend each aperture moves up by their first row as a window's do
 * (window_sum), which changes no rounding. */
static gpuws_status aperture_raw(const ap_src *src, const char *fn, bool kron, size_t n, const double *params,
                                 double *raw)
{
    if (!src->himage) return device_raw(src->s, src->width, src->image, &src->o, kron, n, params, raw);
    for (size_t i = 0; i < n; i++) {
        const gpuws_status st = box_in_rows(src, fn, params + AP_PARAMS * i, i);
        if (st) return st;
    }
    if (src->s->ctx->backend->kind == GPUWS_BACKEND_CPU) { /* the caller's arrays are the device's memory */
        size_t rows, m, batch;
        const gpuws_status st = window_rows(src, fn, n, params, &rows, &m, &batch);
        if (st) return st;
        const gpuws__aperture_host h = { src->hrms, src->o.err, src->o.gain, src->hmask, src->o.subpix, src->hback };
        for (size_t i = 0; i < n; i++) {
            double q[AP_PARAMS];
            memcpy(q, params + AP_PARAMS * i, sizeof q);
            if (!box_empty(q)) {
                q[AP_Y] -= (double)src->row0;
                q[AP_YMIN] -= (double)src->row0;
                q[AP_YMAX] -= (double)src->row0;
            }
            gpuws__aperture_raw_ref(src->himage, src->width, &h, kron, q, raw + AP_RAW * i);
        }
        return GPUWS_OK;
    }
    return raw_windows(src, fn, kron, n, params, raw);
}

static bool has_mask(const ap_src *src) { return src->himage ? src->hmask != NULL : src->o.mask != NULL; }

typedef enum { AP_CIRCLE, AP_ELLIPSE, AP_KRON, AP_AUTO } ap_call;

/* The Kron radii of the n ellipses (scaled by r[i], or by r0 when r is NULL) into kr and kf. */
static gpuws_status kron(const ap_src *src, const char *fn, size_t n, const double *x, const double *y, const double *a,
                         const double *b, const double *theta, const double *r, double r0, double *params, double *raw,
                         int *box, double *kr, int *kf)
{
    for (size_t i = 0; i < n; i++)
        box[i] = gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r ? r[i] : r0, src->width, src->height,
                                         params + AP_PARAMS * i);
    gpuws_status st = aperture_raw(src, fn, true, n, params, raw);
    if (!st)
        for (size_t i = 0; i < n; i++) gpuws__aperture_finish_kron(raw + AP_RAW * i, box[i], &kr[i], &kf[i]);
    return st;
}

/* After the Kron radii: each object's aperture (SEP's flux_auto recipe), summed, into su/se/ar/f2 (kf: the Kron
 * flags, which the ellipses keep). */
static gpuws_status flux_auto(const ap_src *src, const char *fn, size_t n, const double *x, const double *y,
                              const double *a, const double *b, const double *theta, const double *kr, const int *kf,
                              double *params, double *raw, int *box, size_t *which, double *su, double *se, double *ar,
                              int *f2)
{
    const gpuws_aperture_options *o = &src->o;
    const size_t width = src->width, height = src->height;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool circle = false;
        const int f = gpuws__flux_auto_aperture(x[i], y[i], a[i], b[i], theta[i], kr[i], o->kron_factor, o->kron_rmin,
                                                width, height, params + AP_PARAMS * m, &circle);
        which[i] = f < 0 ? SIZE_MAX : m;
        f2[i] = circle ? 0 : kf[i];
        if (f >= 0) box[m++] = f;
    }
    gpuws_status st = GPUWS_OK;
    for (size_t i = 0; i < n && !st; i++) /* named by the caller's index */
        if (which[i] != SIZE_MAX) st = box_in_rows(src, fn, params + AP_PARAMS * which[i], i);
    if (!st && m) st = aperture_raw(src, fn, false, m, params, raw);
    for (size_t i = 0; !st && i < n; i++) {
        const size_t j = which[i];
        if (j == SIZE_MAX) { /* a NaN pixel in the Kron ellipse */
            su[i] = se[i] = NAN;
            ar[i] = 0.0;
            f2[i] = kf[i];
            continue;
        }
        const int keep = f2[i];
        gpuws__aperture_finish_sum(raw + AP_RAW * j, has_mask(src), o->gain, box[j], &su[i], &se[i], &ar[i], &f2[i]);
        f2[i] |= keep;
    }
    return st;
}

/* Every public call once its pixels are checked (src): the apertures checked, then their parameters, the device's
 * sums and SEP's corrections into host temporaries, copied to the outputs only when all of it succeeded. */
static gpuws_status photometry(const char *fn, ap_call call, const ap_src *src, size_t n, const double *x,
                               const double *y, const double *a, const double *b, const double *theta, const double *r,
                               double *kronrad, double *sum, double *sumerr, double *area, int *flag)
{
    const size_t width = src->width, height = src->height;
    gpuws_status st;
    if (n == 0) return GPUWS_OK;
    const bool ell = call != AP_CIRCLE;
    if ((st = need(fn, x, "x")) || (st = need(fn, y, "y")) || (ell && (st = need(fn, a, "a"))) ||
        (ell && (st = need(fn, b, "b"))) || (ell && (st = need(fn, theta, "theta"))) ||
        (call != AP_AUTO && (st = need(fn, r, "r"))) || (call == AP_KRON && (st = need(fn, kronrad, "kronrad"))) ||
        (call != AP_KRON && (st = need(fn, sum, "sum"))) || (st = need(fn, flag, "flag")) ||
        (st = check_apertures(fn, n, x, y, ell ? a : NULL, b, theta, call == AP_AUTO ? NULL : r)))
        return st;
    const size_t per = (AP_PARAMS + AP_RAW + 4) * sizeof(double) + 3 * sizeof(int) + sizeof(size_t);
    if (n > SIZE_MAX / per) return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu apertures overflow size_t", fn, n);
    double *params = gpuws__malloc(n * per);
    if (!params)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu apertures (%zu bytes)", fn, n,
                            n * per);
    /* per aperture: its parameters, raw sums, then the results (kronrad, sum, sumerr, area), (flux_auto) the index
     * of its aperture among those summed, the box flag, the Kron flag and the result's flag */
    double *raw = params + AP_PARAMS * n, *kr = raw + AP_RAW * n, *su = kr + n, *se = su + n, *ar = se + n;
    size_t *which = (size_t *)(void *)(ar + n); /* 8-byte aligned, as the doubles */
    int *box = (int *)(void *)(which + n), *kf = box + n, *f2 = kf + n;
    if (call == AP_KRON || call == AP_AUTO) {
        st = kron(src, fn, n, x, y, a, b, theta, call == AP_KRON ? r : NULL, src->o.kron_r, params, raw, box, kr, kf);
        if (!st && call == AP_KRON) memcpy(f2, kf, n * sizeof *f2);
        if (!st && call == AP_AUTO)
            st = flux_auto(src, fn, n, x, y, a, b, theta, kr, kf, params, raw, box, which, su, se, ar, f2);
    } else {
        for (size_t i = 0; i < n; i++)
            box[i] = ell ? gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r[i], width, height,
                                                   params + AP_PARAMS * i)
                         : gpuws__aperture_circle(x[i], y[i], r[i], width, height, params + AP_PARAMS * i);
        if (!(st = aperture_raw(src, fn, false, n, params, raw)))
            for (size_t i = 0; i < n; i++)
                gpuws__aperture_finish_sum(raw + AP_RAW * i, has_mask(src), src->o.gain, box[i], &su[i], &se[i], &ar[i],
                                           &f2[i]);
    }
    if (!st)
        for (size_t i = 0; i < n; i++) {
            if (kronrad && (call == AP_KRON || call == AP_AUTO)) kronrad[i] = kr[i];
            if (call != AP_KRON) {
                sum[i] = su[i];
                if (sumerr) sumerr[i] = se[i];
                if (area) area[i] = ar[i];
            }
            flag[i] = f2[i];
        }
    gpuws__free(params);
    return st;
}

/* The device-buffer calls' pixels: the stream claimed for the call, the image and the options' maps checked. */
static gpuws_status device_src(const char *fn, gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                               const gpuws_aperture_options *options, gpuws__stream_claim *claim, ap_src *src)
{
    memset(src, 0, sizeof *src);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, claim, fn)) ||
        (st = check_image(fn, ctx, width, height, image, options, &src->o)))
        return st;
    src->s = s, src->width = width, src->height = height, src->image = image;
    return GPUWS_OK;
}

/* The _host calls' pixels: ctx's default stream claimed, the options read and checked, the budget. */
static gpuws_status host_src(const char *fn, gpuws_context *ctx, size_t width, size_t height, const float *image,
                             const gpuws_aperture_host_options *options, gpuws__stream_claim *claim, ap_src *src)
{
    memset(src, 0, sizeof *src);
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_aperture_host_options ho = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    src->o = (gpuws_aperture_options)GPUWS_APERTURE_OPTIONS_INIT;
    char what[64];
    snprintf(what, sizeof what, "%s: options", fn);
    if ((st = gpuws__options_read(options, &ho, sizeof ho, GPUWS__APERTURE_HOST_OPTIONS_BASE, what))) return st;
    snprintf(what, sizeof what, "%s: options->aperture", fn);
    if (ho.aperture &&
        (st = gpuws__options_read(ho.aperture, &src->o, sizeof src->o, GPUWS__APERTURE_OPTIONS_BASE, what)))
        return st;
    const gpuws_aperture_options *o = &src->o;
    if (o->back || o->rms || o->mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->aperture->%s is a device buffer; give the host array in options", fn,
                            o->back  ? "back"
                            : o->rms ? "rms"
                                     : "mask");
    if (o->err > 0 && ho.rms)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: err %g and an rms map: give one of them", fn, o->err);
    size_t npix;
    if ((st = check_values(fn, width, height, &src->o, &npix)) || (st = need(fn, image, "image"))) return st;
    if (ho.rows ? ho.row0 > height || ho.rows > height - ho.row0 : ho.row0 != 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options' row0 %zu and rows %zu are not rows of the image's %zu (rows 0: all of them, "
                            "from row0 0)",
                            fn, ho.row0, ho.rows, height);
    gpuws_stream *s = NULL;
    if ((st = gpuws__driver_stream(ctx, &s, claim, fn))) return st;
    src->s = s, src->width = width, src->height = height;
    src->himage = image, src->hback = ho.back, src->hrms = ho.rms, src->hmask = ho.mask;
    src->row0 = ho.row0, src->rows = ho.rows ? ho.rows : height;
    gpuws__band_budget(&ctx, 1, ho.max_device_bytes, &src->budget, &src->max_alloc);
    return GPUWS_OK;
}

/* One call, whole: the stream claimed, the pixels checked (host: a _host call's ctx, himage and hoptions), the
 * photometry. */
static gpuws_status run_call(const char *fn, ap_call call, bool host, gpuws_stream *s, const gpuws_buffer *image,
                             const gpuws_aperture_options *options, gpuws_context *ctx, const float *himage,
                             const gpuws_aperture_host_options *hoptions, size_t width, size_t height, size_t n,
                             const double *x, const double *y, const double *a, const double *b, const double *theta,
                             const double *r, double *kronrad, double *sum, double *sumerr, double *area, int *flag)
{
    GPUWS__CLAIM(claim);
    ap_src src;
    const gpuws_status st = host ? host_src(fn, ctx, width, height, himage, hoptions, &claim, &src)
                                 : device_src(fn, s, width, height, image, options, &claim, &src);
    return st ? st : photometry(fn, call, &src, n, x, y, a, b, theta, r, kronrad, sum, sumerr, area, flag);
}

gpuws_status gpuws_sum_circle(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                              const double *x, const double *y, const double *r, const gpuws_aperture_options *options,
                              double *sum, double *sumerr, double *area, int *flag)
{
    return run_call("sum_circle", AP_CIRCLE, false, s, image, options, NULL, NULL, NULL, width, height, n, x, y, NULL,
                    NULL, NULL, r, NULL, sum, sumerr, area, flag);
}

gpuws_status gpuws_sum_ellipse(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                               const double *x, const double *y, const double *a, const double *b, const double *theta,
                               const double *r, const gpuws_aperture_options *options, double *sum, double *sumerr,
                               double *area, int *flag)
{
    return run_call("sum_ellipse", AP_ELLIPSE, false, s, image, options, NULL, NULL, NULL, width, height, n, x, y, a, b,
                    theta, r, NULL, sum, sumerr, area, flag);
}

gpuws_status gpuws_kron_radius(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                               const double *x, const double *y, const double *a, const double *b, const double *theta,
                               const double *r, const gpuws_aperture_options *options, double *kronrad, int *flag)
{
    return run_call("kron_radius", AP_KRON, false, s, image, options, NULL, NULL, NULL, width, height, n, x, y, a, b,
                    theta, r, kronrad, NULL, NULL, NULL, flag);
}

gpuws_status gpuws_flux_auto(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                             const double *x, const double *y, const double *a, const double *b, const double *theta,
                             const gpuws_aperture_options *options, double *kronrad, double *sum, double *sumerr,
                             double *area, int *flag)
{
    return run_call("flux_auto", AP_AUTO, false, s, image, options, NULL, NULL, NULL, width, height, n, x, y, a, b,
                    theta, NULL, kronrad, sum, sumerr, area, flag);
}

gpuws_status gpuws_sum_circle_host(gpuws_context *ctx, size_t width, size_t height, const float *image, size_t n,
                                   const double *x, const double *y, const double *r,
                                   const gpuws_aperture_host_options *options, double *sum, double *sumerr,
                                   double *area, int *flag)
{
    return run_call("sum_circle_host", AP_CIRCLE, true, NULL, NULL, NULL, ctx, image, options, width, height, n, x, y,
                    NULL, NULL, NULL, r, NULL, sum, sumerr, area, flag);
}

gpuws_status gpuws_sum_ellipse_host(gpuws_context *ctx, size_t width, size_t height, const float *image, size_t n,
                                    const double *x, const double *y, const double *a, const double *b,
                                    const double *theta, const double *r, const gpuws_aperture_host_options *options,
                                    double *sum, double *sumerr, double *area, int *flag)
{
    return run_call("sum_ellipse_host", AP_ELLIPSE, true, NULL, NULL, NULL, ctx, image, options, width, height, n, x, y,
                    a, b, theta, r, NULL, sum, sumerr, area, flag);
}

gpuws_status gpuws_kron_radius_host(gpuws_context *ctx, size_t width, size_t height, const float *image, size_t n,
                                    const double *x, const double *y, const double *a, const double *b,
                                    const double *theta, const double *r, const gpuws_aperture_host_options *options,
                                    double *kronrad, int *flag)
{
    return run_call("kron_radius_host", AP_KRON, true, NULL, NULL, NULL, ctx, image, options, width, height, n, x, y, a,
                    b, theta, r, kronrad, NULL, NULL, NULL, flag);
}

gpuws_status gpuws_flux_auto_host(gpuws_context *ctx, size_t width, size_t height, const float *image, size_t n,
                                  const double *x, const double *y, const double *a, const double *b,
                                  const double *theta, const gpuws_aperture_host_options *options, double *kronrad,
                                  double *sum, double *sumerr, double *area, int *flag)
{
    return run_call("flux_auto_host", AP_AUTO, true, NULL, NULL, NULL, ctx, image, options, width, height, n, x, y, a,
                    b, theta, NULL, kronrad, sum, sumerr, area, flag);
}
