/* Aperture photometry, scalar reference (aperture_ref.h). SEP's definitions, rewritten: the pixel box and its
 * truncation flag, which pixels are visited, the mask correction and the Poisson term; the exact overlap is our own
 * geometry (aperture_geom.h), which agrees with SEP's to rounding. */
#include "aperture_ref.h"

#include <math.h>
#include <string.h>

#include "aperture_geom.h" /* after <math.h>: it includes nothing */

/* C's conversion to an integer (toward zero), which SEP's box uses, on a value clamped so that it is defined. */
static int64_t to_int(double v)
{
    if (v < -0x1p62) return -((int64_t)1 << 62);
    if (v > 0x1p62) return (int64_t)1 << 62;
    return (int64_t)v;
}

/* SEP's box around (x, y) of half-extent rx, ry: columns [(int)(x - rx + 0.5), (int)(x + rx + 1.4999999)), clipped to
 * the image, and the truncation flag when a side was clipped. */
static int box(double x, double y, double rx, double ry, size_t width, size_t height, double *p)
{
    int flag = 0;
    int64_t x0 = to_int(x - rx + 0.5), x1 = to_int(x + rx + 1.4999999);
    int64_t y0 = to_int(y - ry + 0.5), y1 = to_int(y + ry + 1.4999999);
    const int64_t w = (int64_t)width, h = (int64_t)height;
    if (x0 < 0) x0 = 0, flag |= GPUWS_APER_TRUNC;
    if (x1 > w) x1 = w, flag |= GPUWS_APER_TRUNC;
    if (y0 < 0) y0 = 0, flag |= GPUWS_APER_TRUNC;
    if (y1 > h) y1 = h, flag |= GPUWS_APER_TRUNC;
    p[AP_XMIN] = (double)x0;
    p[AP_XMAX] = (double)(x1 > x0 ? x1 : x0);
    p[AP_YMIN] = (double)y0;
    p[AP_YMAX] = (double)(y1 > y0 ? y1 : y0);
    return flag;
}

int gpuws__aperture_circle(double x, double y, double r, size_t width, size_t height, double *p)
{
    const double in = r - AP_EDGE, out = r + AP_EDGE;
    p[AP_X] = x;
    p[AP_Y] = y;
    p[AP_CXX] = p[AP_CYY] = 1.0;
    p[AP_CXY] = 0.0;
    p[AP_R2] = r * r;
    p[AP_RIN2] = in > 0.0 ? in * in : 0.0;
    p[AP_ROUT2] = out * out;
    p[AP_A] = p[AP_B] = r;
    p[AP_COS] = 1.0;
    p[AP_SIN] = 0.0;
    return box(x, y, r, r, width, height, p);
}

int gpuws__aperture_ellipse(double x, double y, double a, double b, double theta, double r, size_t width, size_t height,
                            double *p)
{
    /* the quadratic form of the ellipse of axes a, b at angle theta; its margins are 0.7072 pixels, which the
     * metric stretches by at most 1 / b */
    const double c = cos(theta), s = sin(theta), ia2 = 1.0 / (a * a), ib2 = 1.0 / (b * b);
    const double cxx = c * c * ia2 + s * s * ib2, cyy = s * s * ia2 + c * c * ib2, cxy = 2.0 * c * s * (ia2 - ib2);
    const double in = r - AP_EDGE / b, out = r + AP_EDGE / b;
    p[AP_X] = x;
    p[AP_Y] = y;
    p[AP_CXX] = cxx;
    p[AP_CYY] = cyy;
    p[AP_CXY] = cxy;
    p[AP_R2] = r * r;
    p[AP_RIN2] = in > 0.0 ? in * in : 0.0;
    p[AP_ROUT2] = out * out;
    p[AP_A] = a * r;
    p[AP_B] = b * r;
    p[AP_COS] = cos(-theta);
    p[AP_SIN] = sin(-theta);
    /* the ellipse's half-extents along x and y */
    double dx = cxx - cxy * cxy / (4.0 * cyy), dy = cyy - cxy * cxy / (4.0 * cxx);
    dx = dx > 0.0 ? r / sqrt(dx) : 0.0;
    dy = dy > 0.0 ? r / sqrt(dy) : 0.0;
    return box(x, y, dx, dy, width, height, p);
}

void gpuws__aperture_raw_ref(const float *image, size_t width, const gpuws__aperture_host *o, bool kron,
                             const double *p, double *raw)
{
    const float var0 = o->rms ? 0.0f : (float)(o->err * o->err); /* SEP holds a pixel's variance in a float */
    const size_t x0 = (size_t)p[AP_XMIN], x1 = (size_t)p[AP_XMAX], y0 = (size_t)p[AP_YMIN], y1 = (size_t)p[AP_YMAX];
    for (int k = 0; k < AP_RAW; k++) raw[k] = 0.0;
    for (size_t iy = y0; iy < y1; iy++)
        for (size_t ix = x0; ix < x1; ix++)
            ap_add_pixel(p, image, o->back, o->rms, o->mask, o->back != NULL, o->rms != NULL, o->mask != NULL, var0,
                         kron, o->subpix, ix, iy, iy * width + ix, raw);
}

void gpuws__aperture_finish_sum(const double *raw, bool has_mask, double gain, int flag, double *sum, double *sumerr,
                                double *area, int *out_flag)
{
    double tv = raw[0], var = raw[1];
    const double total = raw[2], masked = raw[3];
    if (raw[4] > 0.0) flag |= GPUWS_APER_HASMASKED;
    if (has_mask) {
        /* SEP scales to the whole aperture, as if the masked pixels held the unmasked mean: with no unmasked area
         * left, 0 / 0 (NaN), which ALLMASKED explains */
        const double k = total / (total - masked);
        tv *= k;
        var *= k;
        if (raw[4] > 0.0 && total - masked == 0.0) flag |= GPUWS_APER_ALLMASKED;
    }
    if (gain > 0.0 && tv > 0.0) var += tv / gain;
    *sum = tv;
    if (sumerr) *sumerr = sqrt(var);
    if (area) *area = total;
    *out_flag = flag;
}

void gpuws__aperture_finish_kron(const double *raw, int flag, double *kronrad, int *out_flag)
{
    if (raw[3] > 0.0) flag |= GPUWS_APER_HASMASKED;
    if (raw[2] == 0.0) {
        flag |= GPUWS_APER_ALLMASKED;
        *kronrad = 0.0;
    } else if (raw[0] <= 0.0 || raw[1] <= 0.0) {
        flag |= GPUWS_APER_NONPOSITIVE;
        *kronrad = 0.0;
    } else {
        *kronrad = raw[0] / raw[1];
    }
    *out_flag = flag;
}

void gpuws_aperture_sum_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, size_t n,
                            const double *x, const double *y, const double *a, const double *b, const double *theta,
                            const double *r, double *sum, double *sumerr, double *area, int *flag)
{
    for (size_t i = 0; i < n; i++) {
        double p[AP_PARAMS], raw[AP_RAW];
        const int f = a ? gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r[i], width, height, p)
                        : gpuws__aperture_circle(x[i], y[i], r[i], width, height, p);
        gpuws__aperture_raw_ref(image, width, o, false, p, raw);
        gpuws__aperture_finish_sum(raw, o->mask != NULL, o->gain, f, &sum[i], sumerr ? &sumerr[i] : NULL,
                                   area ? &area[i] : NULL, &flag[i]);
    }
}

void gpuws_kron_radius_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, size_t n,
                           const double *x, const double *y, const double *a, const double *b, const double *theta,
                           const double *r, double *kronrad, int *flag)
{
    for (size_t i = 0; i < n; i++) {
        double p[AP_PARAMS], raw[AP_RAW];
        const int f = gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], r[i], width, height, p);
        gpuws__aperture_raw_ref(image, width, o, true, p, raw);
        gpuws__aperture_finish_kron(raw, f, &kronrad[i], &flag[i]);
    }
}

int gpuws__flux_auto_aperture(double x, double y, double a, double b, double theta, double kronrad, double factor,
                              double rmin, size_t width, size_t height, double *p, bool *circle)
{
    if (isnan(kronrad)) return -1;
    *circle = kronrad * sqrt(a * b) < rmin;
    return *circle ? gpuws__aperture_circle(x, y, rmin, width, height, p)
                   : gpuws__aperture_ellipse(x, y, a, b, theta, factor * kronrad, width, height, p);
}

void gpuws_flux_auto_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, double kron_r,
                         double factor, double rmin, size_t n, const double *x, const double *y, const double *a,
                         const double *b, const double *theta, double *kronrad, double *sum, double *sumerr,
                         double *area, int *flag)
{
    for (size_t i = 0; i < n; i++) {
        double p[AP_PARAMS], raw[AP_RAW], kr;
        int kf;
        bool circle;
        const int bf = gpuws__aperture_ellipse(x[i], y[i], a[i], b[i], theta[i], kron_r, width, height, p);
        gpuws__aperture_raw_ref(image, width, o, true, p, raw);
        gpuws__aperture_finish_kron(raw, bf, &kr, &kf);
        const int f =
            gpuws__flux_auto_aperture(x[i], y[i], a[i], b[i], theta[i], kr, factor, rmin, width, height, p, &circle);
        if (kronrad) kronrad[i] = kr;
        if (f < 0) { /* a NaN pixel in the Kron ellipse */
            sum[i] = NAN;
            if (sumerr) sumerr[i] = NAN;
            if (area) area[i] = 0.0;
            flag[i] = kf;
            continue;
        }
        gpuws__aperture_raw_ref(image, width, o, false, p, raw);
        gpuws__aperture_finish_sum(raw, o->mask != NULL, o->gain, f, &sum[i], sumerr ? &sumerr[i] : NULL,
                                   area ? &area[i] : NULL, &flag[i]);
        if (!circle) flag[i] |= kf; /* SEP's recipe keeps the Kron flags with the ellipse, not with the circle */
    }
}
