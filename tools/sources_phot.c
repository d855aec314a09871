#include "sources_phot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int phot_parse(tool_args *t, const char *option, const char *v, phot_apertures *ap)
{
    if (!v || !*v)
        return tool_usage_error(t, "%s needs diameters in pixels, D[,D...] as SExtractor's PHOT_APERTURES", option);
    size_t items = 1;
    for (const char *s = v; *s; s++) items += *s == ',';
    if (items > PHOT_MAX_APERTURES)
        return tool_usage_error(t, "%s: %zu diameters, at most %d (SExtractor's limit)", option, items,
                                PHOT_MAX_APERTURES);
    phot_apertures got = { 0, { 0 } };
    char text[PHOT_MAX_APERTURES][64], spelt[PHOT_MAX_APERTURES][PHOT_NAME_MAX];
    for (const char *s = v;; s++) {
        const size_t len = strcspn(s, ",");
        char *item = text[got.n];
        double d;
        snprintf(item, sizeof text[0], "%.*s", (int)(len < sizeof text[0] ? len : sizeof text[0] - 1), s);
        if (!len) return tool_usage_error(t, "%s: diameter %zu is empty in '%s'", option, got.n + 1, v);
        if (len >= sizeof text[0] || tool_parse_real(item, &d))
            return tool_usage_error(t, "%s: diameter %zu, '%.*s', is not a number", option, got.n + 1, (int)len, s);
        if (!(d > 0))
            return tool_usage_error(t, "%s: diameter %zu is %s: a diameter must be > 0 pixels", option, got.n + 1,
                                    item);
        phot_spell(d, spelt[got.n]);
        for (size_t j = 0; j < got.n; j++) /* one name would stand for two columns */
            if (!strcmp(spelt[j], spelt[got.n]))
                return tool_usage_error(t,
                                        "%s: diameters %zu and %zu (%s, %s) both give the columns flux_aper_%s, "
                                        "fluxerr_aper_%s, flag_aper_%s: they agree in 9 significant digits",
                                        option, j + 1, got.n + 1, text[j], item, spelt[j], spelt[j], spelt[j]);
        got.diameter[got.n++] = d;
        s += len;
        if (!*s) break;
    }
    *ap = got;
    return 0;
}

void phot_spell(double d, char *out)
{
    char g[PHOT_NAME_MAX];
    snprintf(g, sizeof g, "%.9g", d);
    size_t n = 0;
    for (const char *c = g; *c; c++)
        if (*c != '+') out[n++] = *c == '.' ? 'p' : *c == '-' ? 'm' : *c;
    out[n] = 0;
}

/* d as a FITS real value (a decimal point or exponent in it). */
static void fits_real(double d, char *out, size_t n)
{
    snprintf(out, n, "%.9G", d);
    if (!strpbrk(out, ".E")) strncat(out, ".0", n - strlen(out) - 1);
}

/* Appends one 80-character card (text blank-padded) to t->cards. */
static void add_card(phot_table *t, const char *text)
{
    char *c = t->cards + 80 * (size_t)t->ncards++;
    const size_t len = strlen(text) < 80 ? strlen(text) : 80;
    memset(c, ' ', 80);
    memcpy(c, text, len);
}

/* The names and the FITS cards for the diameters in t. */
static void describe(phot_table *t)
{
    add_card(t, "COMMENT --phot-apertures: flux_aper_D is the sum in the circle of diameter D");
    add_card(t, "COMMENT pixels (PHOTAPk) at (x, y) on the image less background, exact overlap");
    for (size_t j = 0; j < t->nap; j++) {
        char d[PHOT_NAME_MAX], key[16], val[32], card[96];
        phot_spell(t->diameter[j], d);
        snprintf(t->names[3 * j], sizeof t->names[0], "flux_aper_%s", d);
        snprintf(t->names[3 * j + 1], sizeof t->names[0], "fluxerr_aper_%s", d);
        snprintf(t->names[3 * j + 2], sizeof t->names[0], "flag_aper_%s", d);
        snprintf(key, sizeof key, "PHOTAP%zu", j + 1);
        fits_real(t->diameter[j], val, sizeof val);
        snprintf(card, sizeof card, "%-8s= %20s / [pix] diameter of %s", key, val, t->names[3 * j]);
        add_card(t, card);
    }
}

/* Where phot_measure's pixels are: device buffers (stream, image, ...) or host arrays (ctx, himage, ...) of the
 * image's rows row0 .. row0 + rows - 1 (rows 0: all of them). */
typedef struct {
    gpuws_stream *stream;
    const gpuws_buffer *image, *back, *rms, *mask;
    gpuws_context *ctx;
    const float *himage, *hback, *hrms;
    const unsigned char *hmask;
    uint64_t max_device_bytes;
    size_t row0, rows;
} phot_pixels;

gpuws_status phot_table_init(const phot_apertures *ap, size_t nobj, phot_table *out)
{
    memset(out, 0, sizeof *out);
    const size_t n = nobj * ap->n;
    if (n && n > SIZE_MAX / (3 * sizeof *out->v)) return GPUWS_ERR_OUT_OF_MEMORY;
    if (!(out->v = malloc((n ? n : 1) * 3 * sizeof *out->v))) return GPUWS_ERR_OUT_OF_MEMORY;
    out->nap = ap->n, out->nobj = nobj;
    memcpy(out->diameter, ap->diameter, ap->n * sizeof *ap->diameter);
    describe(out);
    return GPUWS_OK;
}

/* The objects' positions: cat's, or nobj at (ox[k], oy[k]) when cat is NULL. */
static gpuws_status measure(const phot_apertures *ap, const phot_pixels *px, size_t w, size_t h,
                            const gpuws_extract_catalog *cat, size_t nobj, const double *ox, const double *oy,
                            phot_table *out)
{
    memset(out, 0, sizeof *out);
    if (cat) nobj = cat->num_objects;
    const size_t nap = ap->n, n = nobj * nap;
    /* per aperture (object k, diameter j at k nap + j): x, y, r, sum, sumerr, flag */
    phot_table t;
    gpuws_status st = phot_table_init(ap, nobj, &t);
    if (st) return st;
    double *x = malloc((n ? n : 1) * 5 * sizeof *x), *v = t.v;
    int *flag = malloc((n ? n : 1) * sizeof *flag);
    if (!x || !flag) {
        free(x), free(flag), phot_free(&t);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    double *y = x + n, *r = y + n, *sum = r + n, *err = sum + n;
    for (size_t k = 0; k < nobj; k++)
        for (size_t j = 0; j < nap; j++) {
            x[k * nap + j] = cat ? cat->objects[k].x : ox[k];
            y[k * nap + j] = cat ? cat->objects[k].y : oy[k];
            r[k * nap + j] = 0.5 * ap->diameter[j];
        }
    if (px->himage) {
        gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
        o.back = px->hback, o.rms = px->hrms, o.mask = px->hmask, o.max_device_bytes = px->max_device_bytes;
        o.row0 = px->row0, o.rows = px->rows;
        st = gpuws_sum_circle_host(px->ctx, w, h, px->himage, n, x, y, r, &o, sum, err, NULL, flag);
    } else {
        gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
        o.back = px->back, o.rms = px->rms, o.mask = px->mask; /* subpix 0: the exact overlap */
        st = gpuws_sum_circle(px->stream, w, h, px->image, n, x, y, r, &o, sum, err, NULL, flag);
    }
    for (size_t i = 0; !st && i < n; i++) v[3 * i] = sum[i], v[3 * i + 1] = err[i], v[3 * i + 2] = flag[i];
    free(x), free(flag);
    if (st) return phot_free(&t), st;
    *out = t;
    return GPUWS_OK;
}

gpuws_status phot_measure(const phot_apertures *ap, gpuws_stream *stream, size_t w, size_t h, const gpuws_buffer *image,
                          const gpuws_buffer *back, const gpuws_buffer *rms, const gpuws_buffer *mask,
                          const gpuws_extract_catalog *cat, phot_table *out)
{
    const phot_pixels px = { stream, image, back, rms, mask, NULL, NULL, NULL, NULL, NULL, 0, 0, 0 };
    return measure(ap, &px, w, h, cat, 0, NULL, NULL, out);
}

gpuws_status phot_measure_host(const phot_apertures *ap, gpuws_context *ctx, size_t w, size_t h, const float *image,
                               const float *back, const float *rms, const unsigned char *mask,
                               uint64_t max_device_bytes, const gpuws_extract_catalog *cat, phot_table *out)
{
    const phot_pixels px = { NULL, NULL, NULL, NULL, NULL, ctx, image, back, rms, mask, max_device_bytes, 0, 0 };
    return measure(ap, &px, w, h, cat, 0, NULL, NULL, out);
}

gpuws_status phot_measure_rows(const phot_apertures *ap, gpuws_context *ctx, size_t w, size_t h, size_t row0,
                               size_t rows, const float *image, const float *back, const float *rms,
                               const unsigned char *mask, uint64_t max_device_bytes, size_t nobj, const double *x,
                               const double *y, phot_table *out)
{
    const phot_pixels px = { NULL, NULL, NULL, NULL, NULL, ctx, image, back, rms, mask, max_device_bytes, row0, rows };
    return measure(ap, &px, w, h, NULL, nobj, x, y, out);
}

size_t phot_halo_rows(const phot_apertures *ap)
{
    double d = 0.0;
    for (size_t j = 0; j < ap->n; j++)
        if (ap->diameter[j] > d) d = ap->diameter[j];
    return (size_t)ceil(0.5 * d) + 3;
}

void phot_free(phot_table *t)
{
    free(t->v);
    t->v = NULL;
}

size_t phot_ncolumns(const phot_table *t) { return 3 * t->nap; }

catalog_column phot_column(const phot_table *t, size_t c, const char *flux_unit)
{
    return (catalog_column){ t->names[c], c % 3 == 2 ? "" : flux_unit, c % 3 == 2 ? 0 : -1 };
}

const double *phot_row(const phot_table *t, size_t k) { return t->v + 3 * t->nap * k; }

void phot_print(const phot_table *t, FILE *out)
{
    fprintf(out, "aperture photometry: %zu object%s x %zu diameter%s (", t->nobj, t->nobj == 1 ? "" : "s", t->nap,
            t->nap == 1 ? "" : "s");
    for (size_t j = 0; j < t->nap; j++) fprintf(out, "%s%.9g", j ? ", " : "", t->diameter[j]);
    fprintf(out, " pixels) on the image less its background\n");
}
