/* Source catalogues as CSV, for `gpuws sources`. */
#ifndef GPUWS_CATALOG_CSV_H
#define GPUWS_CATALOG_CSV_H

#include "gpuws/algorithms.h"

#include <stddef.h>

/* Creates `path`, which must not exist: the header `id,x,y,flux,npix,peak`, then one row per source sorted by
 * flux, brightest first (equal fluxes by id). x = column, y = row, 0-based, of the centre of mass; flux = sum of the
 * pixels; peak = the largest pixel. The commands pass a staging path (tools/output_files.h). 0 on success; -1 with
 * a one-line reason in err, and no file left behind, on failure. */
int catalog_csv_write(const char *path, const gpuws_source *sources, size_t n, char *err, size_t errlen);

/* Indices 0..n-1 of `sources` in the CSV's order (malloc'd; NULL when out of memory). */
size_t *catalog_order_by_flux(const gpuws_source *sources, size_t n);

#endif
