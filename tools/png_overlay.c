#include "png_overlay.h"
#include "parallel.h"

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

/* The q-quantiles of the finite pixels (NaN for those not asked: q < 0), from one evenly strided sample of at most
 * 2^20 of them, sorted once; NaN if none. */
static void quantiles(const float *img, size_t n, const double q[2], double r[2])
{
    const size_t stride = n > (1u << 20) ? n / (1u << 20) : 1;
    float *s = malloc((n / stride + 1) * sizeof *s);
    size_t m = 0;
    for (size_t i = 0; s && i < n; i += stride)
        if (isfinite(img[i])) s[m++] = img[i];
    if (m) qsort(s, m, sizeof *s, cmp_float);
    for (int k = 0; k < 2; k++) r[k] = m && q[k] >= 0 ? s[(size_t)(q[k] * (double)(m - 1) + 0.5)] : NAN;
    free(s);
}

typedef struct {
    unsigned char *rgb;
    size_t w, h;
} canvas;

/* Paints a t x t square centred on image point (x, y); the picture is flipped vertically. */
static void dot(const canvas *c, double x, double y, int t, const unsigned char color[3])
{
    const long x0 = lround(x) - (t - 1) / 2, y0 = lround(y) - (t - 1) / 2;
    for (long py = y0; py < y0 + t; py++)
        for (long px = x0; px < x0 + t; px++) {
            if (px < 0 || py < 0 || px >= (long)c->w || py >= (long)c->h) continue;
            memcpy(c->rgb + 3 * ((c->h - 1 - (size_t)py) * c->w + (size_t)px), color, 3);
        }
}

/* The ellipse's outline, sampled at most half a pixel apart. */
static void ellipse(const canvas *c, const catalog_shape *e, int t, const unsigned char color[3])
{
    const double a = e->a < 3 ? 3 : e->a, b = e->b < 3 ? 3 : e->b, ct = cos(e->theta), st = sin(e->theta);
    if (!isfinite(e->x) || !isfinite(e->y) || !isfinite(a) || !isfinite(b) || a > 1e5 || b > 1e5) return;
    const int steps = 8 + (int)ceil(4 * M_PI * (a > b ? a : b));
    for (int k = 0; k < steps; k++) {
        const double p = 2 * M_PI * k / steps, u = a * cos(p), v = b * sin(p);
        dot(c, e->x + u * ct - v * st, e->y + u * st + v * ct, t, color);
    }
}

/* A 5 x 7 font: the characters the legend uses, each row's 5 bits from the left. */
static const struct {
    char c;
    unsigned char rows[7];
} font[] = {
    { '0', { 14, 17, 19, 21, 25, 17, 14 } }, { '1', { 4, 12, 4, 4, 4, 4, 14 } },
    { '2', { 14, 17, 1, 2, 4, 8, 31 } },     { '3', { 31, 2, 4, 2, 1, 17, 14 } },
    { '4', { 2, 6, 10, 18, 31, 2, 2 } },     { '5', { 31, 16, 30, 1, 1, 17, 14 } },
    { '6', { 6, 8, 16, 30, 17, 17, 14 } },   { '7', { 31, 1, 2, 4, 8, 8, 8 } },
    { '8', { 14, 17, 17, 14, 17, 17, 14 } }, { '9', { 14, 17, 17, 15, 1, 2, 12 } },
    { 'A', { 14, 17, 17, 31, 17, 17, 17 } }, { 'B', { 30, 17, 17, 30, 17, 17, 30 } },
    { 'C', { 14, 17, 16, 16, 16, 17, 14 } }, { 'D', { 28, 18, 17, 17, 17, 18, 28 } },
    { 'E', { 31, 16, 16, 30, 16, 16, 31 } }, { 'F', { 31, 16, 16, 30, 16, 16, 16 } },
    { 'G', { 14, 17, 16, 23, 17, 17, 15 } }, { 'H', { 17, 17, 17, 31, 17, 17, 17 } },
    { 'I', { 14, 4, 4, 4, 4, 4, 14 } },      { 'J', { 7, 2, 2, 2, 2, 18, 12 } },
    { 'K', { 17, 18, 20, 24, 20, 18, 17 } }, { 'L', { 16, 16, 16, 16, 16, 16, 31 } },
    { 'M', { 17, 27, 21, 21, 17, 17, 17 } }, { 'N', { 17, 17, 25, 21, 19, 17, 17 } },
    { 'O', { 14, 17, 17, 17, 17, 17, 14 } }, { 'P', { 30, 17, 17, 30, 16, 16, 16 } },
    { 'R', { 30, 17, 17, 30, 20, 18, 17 } }, { 'S', { 15, 16, 16, 14, 1, 1, 30 } },
    { 'T', { 31, 4, 4, 4, 4, 4, 4 } },       { 'U', { 17, 17, 17, 17, 17, 17, 14 } },
    { 'V', { 17, 17, 17, 17, 17, 10, 4 } },  { 'W', { 17, 17, 17, 21, 21, 21, 10 } },
    { 'X', { 17, 17, 10, 4, 10, 17, 17 } },  { 'Y', { 17, 17, 17, 10, 4, 4, 4 } },
    { ':', { 0, 12, 12, 0, 12, 12, 0 } },    { '%', { 24, 25, 2, 4, 8, 19, 3 } },
    { '(', { 2, 4, 8, 8, 8, 4, 2 } },        { ')', { 8, 4, 2, 2, 2, 4, 8 } },
    { ',', { 0, 0, 0, 0, 12, 4, 8 } },       { '-', { 0, 0, 0, 31, 0, 0, 0 } },
    { '.', { 0, 0, 0, 0, 0, 12, 12 } },
};

/* Writes text at picture position (px, py) from the top left, each font pixel s x s. */
static void text(const canvas *c, long px, long py, int s, const char *str, const unsigned char color[3])
{
    for (; *str; str++, px += 6 * s) {
        size_t g = 0;
        while (g < sizeof font / sizeof font[0] && font[g].c != *str) g++;
        if (g == sizeof font / sizeof font[0]) continue; /* a space, or a character the font lacks */
        for (int r = 0; r < 7; r++)
            for (int col = 0; col < 5; col++) {
                if (!(font[g].rows[r] >> (4 - col) & 1)) continue;
                for (int dy = 0; dy < s; dy++)
                    for (int dx = 0; dx < s; dx++) {
                        const long x = px + col * s + dx, y = py + r * s + dy;
                        if (x >= 0 && y >= 0 && x < (long)c->w && y < (long)c->h)
                            memcpy(c->rgb + 3 * ((size_t)y * c->w + (size_t)x), color, 3);
                    }
            }
    }
}

/* Darkens a box of the picture (from the top left) so that the legend reads on any image. */
static void shade(const canvas *c, long x0, long y0, long x1, long y1)
{
    for (long y = y0 < 0 ? 0 : y0; y < y1 && y < (long)c->h; y++)
        for (long x = x0 < 0 ? 0 : x0; x < x1 && x < (long)c->w; x++) {
            unsigned char *p = c->rgb + 3 * ((size_t)y * c->w + (size_t)x);
            p[0] /= 4, p[1] /= 4, p[2] /= 4;
        }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The ellipses by strength tier (0 thin, 1 medium, 2 thick), then the legend. */
static void draw_objects(const canvas *c, const catalog_shape *s, const double *strength, size_t n)
{
    static const unsigned char colors[3][3] = { { 0, 200, 255 }, { 255, 170, 0 }, { 255, 48, 48 } };
    static const int widths[3] = { 1, 2, 3 };
    double *sorted = malloc((n ? n : 1) * sizeof *sorted);
    double median = INFINITY, top = INFINITY;
    if (sorted && n) {
        for (size_t k = 0; k < n; k++) sorted[k] = isnan(strength[k]) ? -INFINITY : strength[k];
        qsort(sorted, n, sizeof *sorted, cmp_double);
        median = sorted[n / 2], top = sorted[n - 1 - n / 10];
    }
    free(sorted);
    size_t counts[3] = { 0, 0, 0 };
    for (int tier = 0; tier < 3; tier++) /* faint first: the bright ones are drawn over them */
        for (size_t k = 0; k < n; k++) {
            const double v = isnan(strength[k]) ? -INFINITY : strength[k];
            if ((v >= top ? 2 : v >= median ? 1 : 0) != tier) continue;
            counts[tier]++;
            ellipse(c, &s[k], widths[tier], colors[tier]);
        }
    if (c->w < 160 || c->h < 64) return; /* no room for a legend that would not hide the image */
    const int sc = c->w >= 1024 && c->h >= 512 ? 2 : 1, line = 10 * sc;
    char buf[4][96];
    snprintf(buf[0], sizeof buf[0], "%zu OBJECTS", n);
    snprintf(buf[1], sizeof buf[1], "%zu BRIGHTEST TENTH BY FLUX", counts[2]);
    snprintf(buf[2], sizeof buf[2], "%zu DOWN TO THE MEDIAN", counts[1]);
    snprintf(buf[3], sizeof buf[3], "%zu FAINTER HALF", counts[0]);
    size_t longest = 0;
    for (int k = 0; k < 4; k++) longest = strlen(buf[k]) > longest ? strlen(buf[k]) : longest;
    shade(c, 0, 0, (long)(6 * sc * longest) + 24 * sc, 4 * line + 6 * sc);
    static const unsigned char white[3] = { 255, 255, 255 };
    text(c, 4 * sc, 3 * sc, sc, buf[0], white);
    for (int k = 1; k < 4; k++) {
        const int tier = 3 - k;
        for (int x = 4 * sc; x < 16 * sc; x++) /* a stroke of the tier's width and colour */
            dot(c, x, (double)c->h - 1 - (3 * sc + k * line + 3 * sc), widths[tier], colors[tier]);
        text(c, 20 * sc, 3 * sc + k * line, sc, buf[k], colors[tier]);
    }
}

#ifndef GPUWS_HAVE_ZLIB
int png_write_rgb(const char *path, const unsigned char *rgb, size_t w, size_t h, char *err, size_t errlen)
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
#else
#include <zlib.h>

/* pigz's way: the rows cut into strips of STRIP_ROWS, each filtered (PNG's "sub": a byte less the one a pixel to its
 * left) and compressed on a core as a raw deflate stream that ends on a byte boundary (a sync flush; the last strip
 * finishes the stream), with its Adler-32; the strips one after the other, between zlib's header and the combined
 * checksum, make one zlib stream. Strips do not depend on the cores: the same bytes on any machine. */
#define STRIP_ROWS 128

typedef struct {
    const unsigned char *rgb;
    size_t w, h;
    unsigned char **out; /* per strip: its compressed bytes, their length, its rows' Adler-32 */
    size_t *len;
    uLong *adler;
    int *failed;
} png_strips;

static void strip_range(void *user, size_t part, size_t lo, size_t hi)
{
    png_strips *j = user;
    const size_t stride = 3 * j->w, rowlen = stride + 1, nstrips = (j->h + STRIP_ROWS - 1) / STRIP_ROWS;
    unsigned char *row = malloc(rowlen);
    (void)part;
    for (size_t s = lo; s < hi; s++) {
        const size_t y0 = s * STRIP_ROWS, y1 = y0 + STRIP_ROWS < j->h ? y0 + STRIP_ROWS : j->h;
        z_stream z;
        memset(&z, 0, sizeof z);
        if (!row || deflateInit2(&z, 3, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            j->failed[s] = 1;
            continue;
        }
        const size_t bound = deflateBound(&z, (uLong)((y1 - y0) * rowlen)) + 64; /* and the sync flush's bytes */
        unsigned char *o = malloc(bound);
        uLong ad = adler32(0L, Z_NULL, 0);
        int ok = o != NULL;
        z.next_out = o, z.avail_out = (uInt)bound;
        for (size_t y = y0; ok && y < y1; y++) {
            const unsigned char *p = j->rgb + y * stride;
            row[0] = 1; /* "sub" */
            for (size_t i = 0; i < stride; i++) row[1 + i] = (unsigned char)(p[i] - (i >= 3 ? p[i - 3] : 0));
            ad = adler32(ad, row, (uInt)rowlen);
            z.next_in = row, z.avail_in = (uInt)rowlen;
            const int flush = y + 1 < y1 ? Z_NO_FLUSH : s + 1 < nstrips ? Z_SYNC_FLUSH : Z_FINISH;
            const int rc = deflate(&z, flush);
            ok = z.avail_in == 0 && (flush == Z_FINISH ? rc == Z_STREAM_END : rc == Z_OK);
        }
        j->out[s] = o, j->len[s] = bound - z.avail_out, j->adler[s] = ad, j->failed[s] = !ok;
        deflateEnd(&z);
    }
    free(row);
}

/* A chunk: its length, type, data (the pieces one after the other) and CRC. */
static int put_chunk(FILE *f, const char *type, const unsigned char *const *piece, const size_t *len, size_t npieces)
{
    size_t n = 0;
    for (size_t k = 0; k < npieces; k++) n += len[k];
    const unsigned char head[8] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                                    (unsigned char)n,         (unsigned char)type[0],   (unsigned char)type[1],
                                    (unsigned char)type[2],   (unsigned char)type[3] };
    uLong crc = crc32(0L, head + 4, 4);
    int ok = n <= 0x7fffffffu && fwrite(head, 1, 8, f) == 8;
    for (size_t k = 0; ok && k < npieces; k++) {
        crc = crc32(crc, piece[k], (uInt)len[k]);
        ok = fwrite(piece[k], 1, len[k], f) == len[k];
    }
    const unsigned char tail[4] = { (unsigned char)(crc >> 24), (unsigned char)(crc >> 16), (unsigned char)(crc >> 8),
                                    (unsigned char)crc };
    return ok && fwrite(tail, 1, 4, f) == 4;
}

int png_write_rgb(const char *path, const unsigned char *rgb, size_t w, size_t h, char *err, size_t errlen)
{
    const size_t nstrips = (h + STRIP_ROWS - 1) / STRIP_ROWS;
    png_strips j = { rgb,
                     w,
                     h,
                     calloc(nstrips, sizeof *j.out),
                     calloc(nstrips, sizeof *j.len),
                     calloc(nstrips, sizeof *j.adler),
                     calloc(nstrips, sizeof *j.failed) };
    int ok = j.out && j.len && j.adler && j.failed && w <= 0x7fffffff && h <= 0x7fffffff;
    if (ok) tool_parallel(nstrips, tool_parts(nstrips, 1), strip_range, &j);
    uLong adler = adler32(0L, Z_NULL, 0);
    for (size_t s = 0; ok && s < nstrips; s++) {
        ok = !j.failed[s];
        const size_t rows = s + 1 < nstrips ? STRIP_ROWS : h - s * STRIP_ROWS;
        adler = adler32_combine(adler, j.adler[s], (z_off_t)(rows * (3 * w + 1)));
    }
    FILE *f = ok ? fopen(path, "wbx") : NULL; /* a new file only: the unlink below removes nothing else */
    if (ok && !f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    } else if (ok) {
        static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
        const unsigned char ihdr[13] = { (unsigned char)(w >> 24),
                                         (unsigned char)(w >> 16),
                                         (unsigned char)(w >> 8),
                                         (unsigned char)w,
                                         (unsigned char)(h >> 24),
                                         (unsigned char)(h >> 16),
                                         (unsigned char)(h >> 8),
                                         (unsigned char)h,
                                         8,
                                         2,
                                         0,
                                         0,
                                         0 };
        static const unsigned char zhead[2] = { 0x78, 0x5e }; /* deflate, 32 KiB window, "fast" level; checked */
        const unsigned char ztail[4] = { (unsigned char)(adler >> 24), (unsigned char)(adler >> 16),
                                         (unsigned char)(adler >> 8), (unsigned char)adler };
        const unsigned char *p = ihdr;
        size_t n = sizeof ihdr;
        int wrote = fwrite(sig, 1, 8, f) == 8 && put_chunk(f, "IHDR", &p, &n, 1);
        for (size_t s = 0; wrote && s < nstrips; s++) { /* an IDAT a strip, zlib's header and checksum around */
            const unsigned char *piece[3] = { zhead, j.out[s], ztail };
            const size_t len[3] = { s ? 0 : 2, j.len[s], s + 1 < nstrips ? 0 : 4 };
            wrote = put_chunk(f, "IDAT", piece, len, 3);
        }
        wrote = wrote && put_chunk(f, "IEND", NULL, NULL, 0);
        if (fclose(f) != 0 || !wrote) {
            snprintf(err, errlen, "%s: writing failed: %s", path, strerror(errno));
            unlink(path);
        } else {
            ok = 2; /* written */
        }
    } else {
        snprintf(err, errlen, "%s: out of memory compressing a %zu x %zu picture", path, w, h);
    }
    for (size_t s = 0; j.out && s < nstrips; s++) free(j.out[s]);
    free(j.out), free(j.len), free(j.adler), free(j.failed);
    return ok == 2 ? 0 : -1;
}
#endif

/* Rows [lo, hi) of the image, grey on ds9's log scale between its black and white levels, NaN dark blue. */
typedef struct {
    const float *img;
    unsigned char *rgb;
    size_t w, h;
    double lo, hi;
} tone_job;

static void tone_rows(void *user, size_t part, size_t y0, size_t y1)
{
    const tone_job *j = user;
    const double a = 1000.0, norm = 1.0 / log10(1.0 + a);
    (void)part;
    for (size_t y = y0; y < y1; y++) {
        unsigned char *row = j->rgb + 3 * (j->h - 1 - y) * j->w;
        for (size_t x = 0; x < j->w; x++) {
            const float v = j->img[y * j->w + x];
            unsigned char *p = row + 3 * x;
            if (isnan(v)) {
                p[0] = 0, p[1] = 0, p[2] = 96;
                continue;
            }
            double t = ((double)v - j->lo) / (j->hi - j->lo);
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            const unsigned char g = (unsigned char)lround(255.0 * log10(1.0 + a * t) * norm);
            p[0] = p[1] = p[2] = g;
        }
    }
}

int png_overlay_write(const char *path, const float *img, size_t w, size_t h, double lo, const catalog_shape *shapes,
                      const double *strength, size_t n, char *err, size_t errlen)
{
    if (!w || !h || w > MAX_PIXELS / h || w > 0x7fffffff || h > 0x7fffffff) {
        snprintf(err, errlen, "%s: a %zu x %zu overlay is not supported (at most 2^28 pixels)", path, w, h);
        return -1;
    }
    const size_t npx = w * h;
    double q[2];
    quantiles(img, npx, (const double[2]){ isnan(lo) ? 0.5 : -1.0, 0.9999 }, q);
    if (isnan(lo)) lo = q[0];
    double hi = q[1];
    if (isnan(lo) || isnan(hi)) lo = 0, hi = 1; /* no finite pixel: all drawn as blanks anyway */
    if (!(hi > lo)) hi = lo + 1;
    unsigned char *rgb = malloc(3 * npx);
    if (!rgb) {
        snprintf(err, errlen, "%s: out of memory for a %zu x %zu picture", path, w, h);
        return -1;
    }
    tone_job tj = { img, rgb, w, h, lo, hi };
    tool_parallel(h, tool_parts(h, 64), tone_rows, &tj);
    const canvas c = { rgb, w, h };
    draw_objects(&c, shapes, strength, n);
    int rc = png_write_rgb(path, rgb, w, h, err, errlen);
    free(rgb);
    return rc;
}

#else

int png_overlay_available(void) { return 0; }

int png_write_rgb(const char *path, const unsigned char *rgb, size_t w, size_t h, char *err, size_t errlen)
{
    (void)rgb, (void)w, (void)h;
    snprintf(err, errlen, "%s: gpuws was built without libpng (install libpng-dev and reconfigure)", path);
    return -1;
}

int png_overlay_write(const char *path, const float *img, size_t w, size_t h, double lo, const catalog_shape *shapes,
                      const double *strength, size_t n, char *err, size_t errlen)
{
    (void)img, (void)w, (void)h, (void)lo, (void)shapes, (void)strength, (void)n;
    snprintf(err, errlen, "%s: gpuws was built without libpng (install libpng-dev and reconfigure)", path);
    return -1;
}

#endif
