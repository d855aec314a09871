/* Host driver for aperture photometry: validation, each aperture's parameters and box on the host
 * (aperture_ref.c), the per-pixel sums on the device (aperture_sum: one work-group per aperture over its box) or, on
 * the CPU backend, by the reference, then SEP's final corrections on the host from the AP_RAW doubles per aperture
 * read back. Blocking: the positions come from and the results go to host arrays. */
#include "../common/driver.h"
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
    if ((st = gpuws__options_read(options, o, sizeof *o, GPUWS__APERTURE_OPTIONS_BASE, what))) return st;
    size_t npix;
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x %zu: no pixels", fn, width, height);
    if (gpuws__mul_overflows(width, height, &npix) || width > ((size_t)1 << 52) || height > ((size_t)1 << 52))
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

/* The AP_RAW sums of the n apertures of params into raw. */
static gpuws_status aperture_raw(gpuws_stream *s, size_t width, const gpuws_buffer *image,
                                 const gpuws_aperture_options *o, bool kron, size_t n, const double *params,
                                 double *raw)
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

typedef enum { AP_CIRCLE, AP_ELLIPSE, AP_KRON, AP_AUTO } ap_call;

/* The Kron radii of the n ellipses (scaled by r[i], or by r0 when r is NULL) into kr and kf. */
static gpuws_status kron(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                         const gpuws_aperture_options *o, size_t n, const double *x, const double *y, const double *a,
                         const double *b, const double *theta, const double *r, double r0, double *params, double *raw,
                         int *box, double *kr, int *kf)
{
    for (size_t i = 0; i < n; i++)
        box[i] = gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r ? r[i] : r0, width, height,
                                         params + AP_PARAMS * i);
    gpuws_status st = aperture_raw(s, width, image, o, true, n, params, raw);
    if (!st)
        for (size_t i = 0; i < n; i++) gpuws__aperture_finish_kron(raw + AP_RAW * i, box[i], &kr[i], &kf[i]);
    return st;
}

/* After the Kron radii: each object's aperture (SEP's flux_auto recipe), summed, into su/se/ar/f2 (kf: the Kron
 * flags, which the ellipses keep). */
static gpuws_status flux_auto(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                              const gpuws_aperture_options *o, size_t n, const double *x, const double *y,
                              const double *a, const double *b, const double *theta, const double *kr, const int *kf,
                              double *params, double *raw, int *box, size_t *which, double *su, double *se, double *ar,
                              int *f2)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool circle = false;
        const int f = gpuws__flux_auto_aperture(x[i], y[i], a[i], b[i], theta[i], kr[i], o->kron_factor, o->kron_rmin,
                                                width, height, params + AP_PARAMS * m, &circle);
        which[i] = f < 0 ? SIZE_MAX : m;
        f2[i] = circle ? 0 : kf[i];
        if (f >= 0) box[m++] = f;
    }
    gpuws_status st = m ? aperture_raw(s, width, image, o, false, m, params, raw) : GPUWS_OK;
    for (size_t i = 0; !st && i < n; i++) {
        const size_t j = which[i];
        if (j == SIZE_MAX) { /* a NaN pixel in the Kron ellipse */
            su[i] = se[i] = NAN;
            ar[i] = 0.0;
            f2[i] = kf[i];
            continue;
        }
        const int keep = f2[i];
        gpuws__aperture_finish_sum(raw + AP_RAW * j, o->mask != NULL, o->gain, box[j], &su[i], &se[i], &ar[i], &f2[i]);
        f2[i] |= keep;
    }
    return st;
}

/* Every public call: validation, then the apertures' parameters, the device's sums and SEP's corrections into
 * host temporaries, copied to the outputs only when all of it succeeded. */
static gpuws_status photometry(const char *fn, ap_call call, gpuws_stream *s, size_t width, size_t height,
                               const gpuws_buffer *image, size_t n, const double *x, const double *y, const double *a,
                               const double *b, const double *theta, const double *r,
                               const gpuws_aperture_options *options, double *kronrad, double *sum, double *sumerr,
                               double *area, int *flag)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_aperture_options o;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, fn)) ||
        (st = check_image(fn, ctx, width, height, image, options, &o)))
        return st;
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
        st = kron(s, width, height, image, &o, n, x, y, a, b, theta, call == AP_KRON ? r : NULL, o.kron_r, params, raw,
                  box, kr, kf);
        if (!st && call == AP_KRON) memcpy(f2, kf, n * sizeof *f2);
        if (!st && call == AP_AUTO)
            st = flux_auto(s, width, height, image, &o, n, x, y, a, b, theta, kr, kf, params, raw, box, which, su, se,
                           ar, f2);
    } else {
        for (size_t i = 0; i < n; i++)
            box[i] = ell ? gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r[i], width, height,
                                                   params + AP_PARAMS * i)
                         : gpuws__aperture_circle(x[i], y[i], r[i], width, height, params + AP_PARAMS * i);
        if (!(st = aperture_raw(s, width, image, &o, false, n, params, raw)))
            for (size_t i = 0; i < n; i++)
                gpuws__aperture_finish_sum(raw + AP_RAW * i, o.mask != NULL, o.gain, box[i], &su[i], &se[i], &ar[i],
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

gpuws_status gpuws_sum_circle(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                              const double *x, const double *y, const double *r, const gpuws_aperture_options *options,
                              double *sum, double *sumerr, double *area, int *flag)
{
    return photometry("sum_circle", AP_CIRCLE, s, width, height, image, n, x, y, NULL, NULL, NULL, r, options, NULL,
                      sum, sumerr, area, flag);
}

gpuws_status gpuws_sum_ellipse(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                               const double *x, const double *y, const double *a, const double *b, const double *theta,
                               const double *r, const gpuws_aperture_options *options, double *sum, double *sumerr,
                               double *area, int *flag)
{
    return photometry("sum_ellipse", AP_ELLIPSE, s, width, height, image, n, x, y, a, b, theta, r, options, NULL, sum,
                      sumerr, area, flag);
}

gpuws_status gpuws_kron_radius(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                               const double *x, const double *y, const double *a, const double *b, const double *theta,
                               const double *r, const gpuws_aperture_options *options, double *kronrad, int *flag)
{
    return photometry("kron_radius", AP_KRON, s, width, height, image, n, x, y, a, b, theta, r, options, kronrad, NULL,
                      NULL, NULL, flag);
}

gpuws_status gpuws_flux_auto(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image, size_t n,
                             const double *x, const double *y, const double *a, const double *b, const double *theta,
                             const gpuws_aperture_options *options, double *kronrad, double *sum, double *sumerr,
                             double *area, int *flag)
{
    return photometry("flux_auto", AP_AUTO, s, width, height, image, n, x, y, a, b, theta, NULL, options, kronrad, sum,
                      sumerr, area, flag);
}
