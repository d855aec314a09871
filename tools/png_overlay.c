#include "png_overlay.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PIXELS ((size_t)1 << 28) /* 768 MiB of RGB: beyond that a preview is not the tool */

#ifdef GPUWS_HAVE_LIBPNG
#include <png.h>

int png_overlay_available(void) { return 1; }

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of the finite pixels, from an evenly strided sample of at most 2^20 of them; NaN if none. */
static double quantile(const float *img, size_t n, double q)
{
    const size_t stride = n > (1u << 20) ? n / (1u << 20) : 1;
    float *s = malloc((n / stride + 1) * sizeof *s);
    if (!s) return NAN;
    size_t m = 0;
    for (size_t i = 0; i < n; i += stride)
        if (isfinite(img[i])) s[m++] = img[i];
    double r = NAN;
    if (m) {
        qsort(s, m, sizeof *s, cmp_float);
        r = s[(size_t)(q * (double)(m - 1) + 0.5)];
    }
    free(s);
    return r;
}

/* Marks a ring of radius r around (x, y) in image coordinates; the picture is flipped vertically. */
static void ring(unsigned char *rgb, size_t w, size_t h, double x, double y, double r)
{
    const long x0 = (long)floor(x - r - 1), x1 = (long)ceil(x + r + 1), y0 = (long)floor(y - r - 1),
               y1 = (long)ceil(y + r + 1);
    for (long py = y0 < 0 ? 0 : y0; py <= y1 && py < (long)h; py++)
        for (long px = x0 < 0 ? 0 : x0; px <= x1 && px < (long)w; px++) {
            const double d = hypot((double)px - x, (double)py - y);
            if (fabs(d - r) > 0.6) continue;
            unsigned char *p = rgb + 3 * ((h - 1 - (size_t)py) * w + (size_t)px);
            p[0] = 255, p[1] = 48, p[2] = 48;
        }
}

static int write_png(const char *path, const unsigned char *rgb, size_t w, size_t h, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wbx"); /* a new file only: the unlinks below remove nothing else */
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        unlink(path);
        snprintf(err, errlen, "%s: libpng failed to write the image", path);
        return -1;
    }
    png_init_io(png, f);
    png_set_compression_level(png, 3); /* a preview: speed over the last few percent of size */
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (size_t y = 0; y < h; y++) png_write_row(png, rgb + 3 * y * w);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) == 0) return 0;
    snprintf(err, errlen, "%s: writing failed: %s", path, strerror(errno));
    unlink(path);
    return -1;
}

int png_overlay_write(const char *path, const float *img, size_t w, size_t h, double lo, const gpuws_source *src,
                      size_t n, char *err, size_t errlen)
{
    if (!w || !h || w > MAX_PIXELS / h || w > 0x7fffffff || h > 0x7fffffff) {
        snprintf(err, errlen, "%s: a %zu x %zu overlay is not supported (at most 2^28 pixels)", path, w, h);
        return -1;
    }
    const size_t npx = w * h;
    if (isnan(lo)) lo = quantile(img, npx, 0.5);
    double hi = quantile(img, npx, 0.9999);
    if (isnan(lo) || isnan(hi)) lo = 0, hi = 1; /* no finite pixel: all drawn as blanks anyway */
    if (!(hi > lo)) hi = lo + 1;
    unsigned char *rgb = malloc(3 * npx);
    if (!rgb) {
        snprintf(err, errlen, "%s: out of memory for a %zu x %zu picture", path, w, h);
        return -1;
    }
    const double a = 1000.0, norm = 1.0 / log10(1.0 + a);
    for (size_t y = 0; y < h; y++) {
        unsigned char *row = rgb + 3 * (h - 1 - y) * w;
        for (size_t x = 0; x < w; x++) {
            const float v = img[y * w + x];
            unsigned char *p = row + 3 * x;
            if (isnan(v)) {
                p[0] = 0, p[1] = 0, p[2] = 96;
                continue;
            }
            double t = ((double)v - lo) / (hi - lo);
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            const unsigned char g = (unsigned char)lround(255.0 * log10(1.0 + a * t) * norm);
            p[0] = p[1] = p[2] = g;
        }
    }
    for (size_t k = 0; k < n; k++) {
        const double r = 2.0 + sqrt((double)src[k].npix / 3.14159265358979);
        if (isfinite(src[k].x) && isfinite(src[k].y)) ring(rgb, w, h, src[k].x, src[k].y, r < 4 ? 4 : r);
    }
    int rc = write_png(path, rgb, w, h, err, errlen);
    free(rgb);
    return rc;
}

#else

int png_overlay_available(void) { return 0; }

int png_overlay_write(const char *path, const float *img, size_t w, size_t h, double lo, const gpuws_source *src,
                      size_t n, char *err, size_t errlen)
{
    (void)img, (void)w, (void)h, (void)lo, (void)src, (void)n;
    snprintf(err, errlen, "%s: gpuws was built without libpng (install libpng-dev and reconfigure)", path);
    return -1;
}

#endif
