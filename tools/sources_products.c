/* gpuws sources: a catalogue made into the outputs' table, shapes and maps, and the output files written all or
 * none (tools/output_files.h). */
#include "parallel.h"
#include "png_overlay.h"
#include "sources.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void products_free(products *p)
{
    free(p->cards);
    free(p->v);
    free(p->shapes);
    free(p->strength);
}

static int add_col(products *p, const char *name, const char *unit, int decimals)
{
    if (p->ncols == sizeof p->cols / sizeof p->cols[0]) return -1;
    p->cols[p->ncols++] = (catalog_column){ name, unit, decimals };
    return 0;
}

/* Room for the rows; the caller fills p->v. */
static int alloc_rows(products *p, size_t nrows)
{
    const size_t m = nrows ? nrows : 1;
    p->nrows = nrows;
    p->v = malloc(m * p->ncols * sizeof *p->v);
    p->shapes = malloc(m * sizeof *p->shapes);
    p->strength = malloc(m * sizeof *p->strength);
    return p->v && p->shapes && p->strength ? 0 : -1;
}

static int world_of(const void *w, double x, double y, double *lng, double *lat)
{
    return sky_wcs_world(w, x, y, lng, lat);
}

/* A string keyword's value from a header of 80-character cards ("" when absent). */
static void header_string(const char *hdr, const char *key, char *out, size_t n)
{
    out[0] = 0;
    for (const char *c = hdr; c && strlen(c) >= 80; c += 80) {
        if (strncmp(c, key, strlen(key)) || c[8] != '=') continue;
        const char *q = memchr(c + 10, '\'', 70), *e = q ? memchr(q + 1, '\'', (size_t)(c + 80 - q - 1)) : NULL;
        if (!q || !e) return;
        size_t len = (size_t)(e - q - 1);
        while (len && q[len] == ' ') len--; /* trailing blanks are not significant */
        snprintf(out, n, "%.*s", (int)len, q + 1);
        return;
    }
}

int sources_write_outputs(const sources_args *a, const products *p, sources_times *t)
{
    const char *const *finals = a->out;
    char err[4400] = "";
    int rc = 0;
    if (!p->wcs && (finals[OUT_CATALOG] || finals[OUT_FITS_CATALOG] || finals[OUT_REGIONS]) && a->image)
        fprintf(stderr, "gpuws sources: warning: %s: no world coordinates (%s): the outputs are in pixel coordinates\n",
                a->image, p->no_wcs ? p->no_wcs : "none");
    const char *names[sizeof p->cols / sizeof p->cols[0]], *units[sizeof p->cols / sizeof p->cols[0]];
    int integer[sizeof p->cols / sizeof p->cols[0]];
    for (size_t c = 0; c < p->ncols; c++)
        names[c] = p->cols[c].name, units[c] = p->cols[c].unit, integer[c] = p->cols[c].decimals == 0;
    const catalog_table table = { p->ncols, p->nrows, p->cols, p->v };
    const char *frame = p->wcs ? sky_wcs_ds9_frame(p->wcs) : NULL;
    for (size_t k = 0; k < OUT_COUNT && !rc; k++) {
        if (!finals[k] || (p->staged & (1u << k))) continue;
        const double t0 = tool_now_ms();
        const char *path = output_files_stage(a->outputs, k, err, sizeof err);
        if (path && p->w * p->h >= ((size_t)1 << 24)) /* seconds */
            fprintf(stderr, "gpuws sources: writing %s...\n", finals[k]);
        if (!path) rc = -1;
        else if (k == OUT_CATALOG) rc = catalog_table_csv(path, &table, p->units, err, sizeof err);
        else if (k == OUT_FITS_CATALOG)
            rc = fits_write_table(path, "OBJECTS", p->ncols, names, units, integer, p->nrows, p->v, p->table_cards,
                                  p->table_ncards, err, sizeof err);
        else if (k == OUT_REGIONS)
            rc = catalog_regions_write(path, p->shapes, p->nrows, frame ? world_of : NULL, p->wcs, frame, p->title, err,
                                       sizeof err);
        else if (k == OUT_BACKGROUND || k == OUT_RMS)
            rc = fits_write_image_cards(path, FITS_F32, k == OUT_RMS ? p->rms : p->back, p->w, p->h, p->cards,
                                        p->ncards, err, sizeof err);
        else if (k == OUT_LABELS)
            rc = fits_write_image_cards(path, FITS_I32, p->labels, p->w, p->h, p->cards, p->ncards, err, sizeof err);
        else
            rc =
                png_overlay_write(path, p->image, p->w, p->h, p->lo, p->shapes, p->strength, p->nrows, err, sizeof err);
        if (rc) output_files_reword(a->outputs, k, err, sizeof err); /* the user's name, not the staged one */
        if (t) t->out[k] = tool_now_ms() - t0;
    }
    const double t0 = tool_now_ms();
    if (!rc) rc = output_files_commit(a->outputs, err, sizeof err);
    if (t && !rc) t->commit = tool_now_ms() - t0, t->written = tool_now_ms();
    if (rc) {
        fprintf(stderr, "gpuws sources: %s\n", err);
        return 1;
    }
    for (int k = 0; k < OUT_COUNT; k++)
        if (finals[k]) fprintf(sources_report(a), "wrote %s\n", finals[k]);
    return 0;
}

/* The WCS, the flux unit and the maps' header cards of the image just read. */
void products_from_image(products *p, const fits_image *img, sky_wcs **wcs, char *why, size_t n, char *bunit, size_t nb)
{
    memset(p, 0, sizeof *p);
    p->w = img->width, p->h = img->height, p->lo = NAN;
    *wcs = sky_wcs_create(img, why, n);
    p->wcs = *wcs, p->no_wcs = why;
    if (*wcs && sky_wcs_header_2d(*wcs, &p->cards, &p->ncards)) p->cards = NULL, p->ncards = 0;
    header_string(img->header, "BUNIT", bunit, nb);
    for (char *c = bunit; *c; c++) /* a unit in the CSV's header row: no separator, quote or bracket in it */
        if (*c == ',' || *c == '"' || *c == '[' || *c == ']') *c = ' ';
}

/* The workshop's catalogue: today's columns (id,x,y,flux,npix,peak sorted by flux; CSV without units), then the
 * world coordinates when there are any; a circle of the source's area (plus 2 pixels) for regions and overlays. */
int workshop_products(products *p, const gpuws_catalog *cat, const char *bunit)
{
    const char *flux = *bunit ? bunit : "count";
    add_col(p, "id", "", 0), add_col(p, "x", "pix", 6), add_col(p, "y", "pix", 6), add_col(p, "flux", flux, -1);
    add_col(p, "npix", "pix", 0), add_col(p, "peak", flux, -1);
    if (p->wcs) add_col(p, sky_wcs_lng_name(p->wcs), "deg", 8), add_col(p, sky_wcs_lat_name(p->wcs), "deg", 8);
    size_t *order = catalog_order_by_flux(cat->sources, cat->num_sources);
    if (!order || alloc_rows(p, cat->num_sources)) return free(order), -1;
    for (size_t r = 0; r < cat->num_sources; r++) {
        const gpuws_source *s = &cat->sources[order[r]];
        double *row = p->v + r * p->ncols;
        row[0] = (double)s->id, row[1] = s->x, row[2] = s->y, row[3] = s->flux, row[4] = (double)s->npix;
        row[5] = s->peak;
        if (p->wcs) sky_wcs_world(p->wcs, s->x, s->y, &row[6], &row[7]);
        const double rad = 2.0 + sqrt((double)s->npix / M_PI);
        p->shapes[r] = (catalog_shape){ s->x, s->y, rad, rad, 0 };
        p->strength[r] = s->flux;
    }
    free(order);
    p->labels = cat->labels;
    p->lo = cat->clip.median;
    return 0;
}

void workshop_title(products *p, const sources_args *a, size_t n)
{
    snprintf(p->title, sizeof p->title,
             "gpuws sources --method workshop: %zu source%s in %s; circles of each source's area plus 2 pixels", n,
             n == 1 ? "" : "s", a->image ? a->image : "the demo sky");
}

/* The extraction's catalogue: SEP's columns in SEP's order, id = the object's label (k + 1), world coordinates
 * after x and y when there are any, the aperture photometry's columns last, units in the CSV's header row; ellipses
 * at 3 a x 3 b (as SEP's documentation draws them) for regions and overlays. */
int extract_products(products *p, const gpuws_extract_catalog *cat, const phot_table *ph, const char *bunit)
{
    const char *flux = *bunit ? bunit : "count";
    add_col(p, "id", "", 0), add_col(p, "x", "pix", 6), add_col(p, "y", "pix", 6);
    if (p->wcs) add_col(p, sky_wcs_lng_name(p->wcs), "deg", 8), add_col(p, sky_wcs_lat_name(p->wcs), "deg", 8);
    const size_t first = p->ncols;
    static const struct {
        const char *name, *unit; /* unit "F": the image's flux unit */
        int decimals;
    } rest[] = {
        { "flux", "F", -1 },     { "fluxerr", "F", -1 },  { "cflux", "F", -1 },    { "peak", "F", -1 },
        { "cpeak", "F", -1 },    { "npix", "pix", 0 },    { "tnpix", "pix", 0 },   { "a", "pix", -1 },
        { "b", "pix", -1 },      { "theta", "rad", -1 },  { "cxx", "pix-2", -1 },  { "cyy", "pix-2", -1 },
        { "cxy", "pix-2", -1 },  { "x2", "pix2", -1 },    { "y2", "pix2", -1 },    { "xy", "pix2", -1 },
        { "errx2", "pix2", -1 }, { "erry2", "pix2", -1 }, { "errxy", "pix2", -1 }, { "xmin", "pix", 0 },
        { "xmax", "pix", 0 },    { "ymin", "pix", 0 },    { "ymax", "pix", 0 },    { "xpeak", "pix", 0 },
        { "ypeak", "pix", 0 },   { "xcpeak", "pix", 0 },  { "ycpeak", "pix", 0 },  { "thresh", "F", -1 },
        { "flag", "", 0 },
    };
    for (size_t c = 0; c < sizeof rest / sizeof rest[0]; c++)
        if (add_col(p, rest[c].name, strcmp(rest[c].unit, "F") ? rest[c].unit : flux, rest[c].decimals)) return -1;
    const size_t aper = p->ncols;
    for (size_t c = 0; c < phot_ncolumns(ph); c++) {
        const catalog_column col = phot_column(ph, c, flux);
        if (add_col(p, col.name, col.unit, col.decimals)) return -1;
    }
    if (ph->nap) p->table_cards = ph->cards, p->table_ncards = ph->ncards;
    if (alloc_rows(p, cat->num_objects)) return -1;
    for (size_t k = 0; k < cat->num_objects; k++) {
        const gpuws_object *o = &cat->objects[k];
        double *row = p->v + k * p->ncols;
        row[0] = (double)(k + 1), row[1] = o->x, row[2] = o->y;
        if (p->wcs) sky_wcs_world(p->wcs, o->x, o->y, &row[3], &row[4]);
        const double v[] = { o->flux,
                             o->fluxerr,
                             o->cflux,
                             o->peak,
                             o->cpeak,
                             (double)o->npix,
                             (double)o->tnpix,
                             o->a,
                             o->b,
                             o->theta,
                             o->cxx,
                             o->cyy,
                             o->cxy,
                             o->x2,
                             o->y2,
                             o->xy,
                             o->errx2,
                             o->erry2,
                             o->errxy,
                             (double)o->xmin,
                             (double)o->xmax,
                             (double)o->ymin,
                             (double)o->ymax,
                             (double)o->xpeak,
                             (double)o->ypeak,
                             (double)o->xcpeak,
                             (double)o->ycpeak,
                             o->thresh,
                             (double)o->flag };
        memcpy(row + first, v, sizeof v);
        if (ph->nap) memcpy(row + aper, phot_row(ph, k), phot_ncolumns(ph) * sizeof *row);
        p->shapes[k] = (catalog_shape){ o->x, o->y, 3 * o->a, 3 * o->b, o->theta };
        p->strength[k] = o->flux;
    }
    p->units = 1;
    return 0;
}
