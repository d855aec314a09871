/* Source catalogues for `gpuws sources`: CSV tables and DS9 region files. */
#ifndef GPUWS_CATALOG_CSV_H
#define GPUWS_CATALOG_CSV_H

#include "gpuws/algorithms.h"

#include <stddef.h>

/* Indices 0..n-1 of `sources` sorted by flux, brightest first, equal fluxes by id (the workshop catalogue's order;
 * malloc'd; NULL when out of memory). */
size_t *catalog_order_by_flux(const gpuws_source *sources, size_t n);

/* A catalogue as a table of numbers, for the CSV and FITS writers: ncols columns, nrows rows, v row-major. */
typedef struct {
    const char *name; /* the column's name */
    const char *unit; /* its unit (FITS TUNIT; "" for none) */
    int decimals;     /* CSV: -1 for 9 significant digits, 0 for a whole number (also FITS: 64-bit integers), else
                         that many decimals */
} catalog_column;
typedef struct {
    size_t ncols, nrows;
    const catalog_column *cols;
    const double *v;
} catalog_table;

/* Creates `path` (which must not exist; the commands pass a staging path, tools/output_files.h): a header row of the
 * names, each followed by its unit in brackets when `units` ("x[pix]"), then one line per row (NaN written as
 * "nan"). No comment line comes before the header: plain CSV readers take the first line for it. 0 on success; -1
 * with a one-line reason in err, and no file left behind, on failure. */
int catalog_table_csv(const char *path, const catalog_table *t, int units, char *err, size_t errlen);

/* One object's ellipse for regions and overlays: centre (0-based), semi-axes in pixels, angle from +x towards +y
 * in radians; a == b draws a circle. */
typedef struct {
    double x, y, a, b, theta;
} catalog_shape;

/* A world coordinate function for regions (sky_wcs_world's shape): 0 and the position in degrees, or -1. */
typedef int (*catalog_world_fn)(const void *wcs, double x, double y, double *lng, double *lat);

/* Creates `path` (which must not exist): a DS9 region file with one ellipse (or circle) per shape. With world and
 * frame (DS9's name: "fk5", "icrs", "galactic", ...): centres in degrees, axes in arcseconds, angles from the
 * frame's longitude axis as DS9 measures them; else image coordinates, 1-based as DS9's (the catalogue's 0-based
 * x, y plus 1), which the file's header says. `title` goes into the header comment. */
int catalog_regions_write(const char *path, const catalog_shape *s, size_t n, catalog_world_fn world, const void *wcs,
                          const char *frame, const char *title, char *err, size_t errlen);

#endif
