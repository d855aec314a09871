/* gpuws sources --phot-apertures D[,D...]: SExtractor's PHOT_APERTURES (diameters in pixels) for the objects of the
 * extraction, as sep.sum_circle(data - back, x, y, D / 2, err=rms, mask=, subpix=0) computes them (exact overlap),
 * measured on the device on the extraction's own buffers: gpuws_sum_circle with the background map in its options
 * (gpuws_sum_circle_host on the host's arrays where the extraction runs from host memory).
 * The command parses the option here, measures a catalogue, then asks for the columns, each row's values and the
 * FITS header cards that give the diameters. The columns carry the diameter in their names (flux_aper_3 for
 * D = 3), so that a plain CSV says which diameter each column measures without a comment line. */
#ifndef GPUWS_SOURCES_PHOT_H
#define GPUWS_SOURCES_PHOT_H

#include "catalog_csv.h"
#include "commands.h"
#include "gpuws/algorithms.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    PHOT_MAX_APERTURES = 32,                   /* SExtractor's MAXNAPER */
    PHOT_MAX_COLUMNS = 3 * PHOT_MAX_APERTURES, /* flux_aper_D, fluxerr_aper_D, flag_aper_D */
    PHOT_NAME_MAX = 32                         /* a column name's bytes with its NUL ("fluxerr_aper_" + spelling) */
};

typedef struct {
    size_t n; /* 0: no aperture photometry */
    double diameter[PHOT_MAX_APERTURES];
} phot_apertures;

/* --phot-apertures' value v (NULL when none followed): diameters in pixels, comma-separated, each a finite number
 * > 0, at most PHOT_MAX_APERTURES, no two with the same spelling (phot_spell). 0, or -1 after a one-line usage
 * message (tool_usage_error). */
int phot_parse(tool_args *t, const char *option, const char *v, phot_apertures *ap);

/* Diameter d as the columns' names spell it: its 9 significant digits as "%.9g" writes them, with the decimal
 * point written 'p' and an exponent's sign 'm' for minus and nothing for plus (3 -> "3", 2.5 -> "2p5",
 * 0.00001 -> "1em05"), so that a name holds letters, digits and underscores only. Two diameters share a spelling
 * exactly when they agree in 9 significant digits. out has PHOT_NAME_MAX bytes. */
void phot_spell(double d, char *out);

/* The photometry of one catalogue (zero-initialise, free with phot_free). */
typedef struct {
    size_t nap, nobj;
    double diameter[PHOT_MAX_APERTURES];
    double *v;                                   /* nobj rows of 3 nap values in phot_columns' order */
    char names[PHOT_MAX_COLUMNS][PHOT_NAME_MAX]; /* the columns' names */
    char cards[80 * (PHOT_MAX_APERTURES + 2)];   /* FITS header cards giving the diameters */
    int ncards;
} phot_table;

/* For each object of cat and each diameter of ap: the sum in the circle of that diameter at the object's (x, y) on
 * image - back (f32 maps of the image's context, w x h), its error from the rms map, SEP's flags; mask (or NULL)
 * masks pixels as in the extraction (SEP's correction to the whole aperture, HASMASKED). One gpuws_sum_circle for
 * all, on stream (NULL: the default stream). On error *out holds nothing to free. */
gpuws_status phot_measure(const phot_apertures *ap, gpuws_stream *stream, size_t w, size_t h, const gpuws_buffer *image,
                          const gpuws_buffer *back, const gpuws_buffer *rms, const gpuws_buffer *mask,
                          const gpuws_extract_catalog *cat, phot_table *out);
/* The same from host memory (the extraction from host memory: gpuws sources --max-device-memory, or an image the
 * device cannot hold): gpuws_sum_circle_host on ctx with w x h host arrays, within max_device_bytes (0: the
 * device's free memory). The same values as phot_measure's on the same backend. */
gpuws_status phot_measure_host(const phot_apertures *ap, gpuws_context *ctx, size_t w, size_t h, const float *image,
                               const float *back, const float *rms, const unsigned char *mask,
                               uint64_t max_device_bytes, const gpuws_extract_catalog *cat, phot_table *out);
/* The same for the nobj objects at (x[k], y[k]) from the image's rows row0 .. row0 + rows - 1 alone (the arrays
 * hold w x rows values; an MPI rank's rows and their halo), which must hold every circle's pixel box:
 * phot_halo_rows rows each side of an object's row do. */
gpuws_status phot_measure_rows(const phot_apertures *ap, gpuws_context *ctx, size_t w, size_t h, size_t row0,
                               size_t rows, const float *image, const float *back, const float *rms,
                               const unsigned char *mask, uint64_t max_device_bytes, size_t nobj, const double *x,
                               const double *y, phot_table *out);
/* Rows each side of the row floor(y) of an object at y that hold its circles' boxes (SEP's box: the rows
 * (int)(y - r + 0.5) to (int)(y + r + 1.5) - 1): ceil of the largest radius, and 3. */
size_t phot_halo_rows(const phot_apertures *ap);
/* A table for nobj objects and ap's diameters, its names and cards made, its values for the caller to set (v);
 * GPUWS_ERR_OUT_OF_MEMORY, *out holding nothing, without the memory. */
gpuws_status phot_table_init(const phot_apertures *ap, size_t nobj, phot_table *out);
void phot_free(phot_table *t);

/* The columns (3 per diameter D, in the order given: flux_aper_D and fluxerr_aper_D in flux_unit, flag_aper_D an
 * integer; D spelt by phot_spell) and object k's values for them. */
size_t phot_ncolumns(const phot_table *t);
catalog_column phot_column(const phot_table *t, size_t c, const char *flux_unit);
const double *phot_row(const phot_table *t, size_t k);

/* One line on out: what was measured. */
void phot_print(const phot_table *t, FILE *out);

#endif
