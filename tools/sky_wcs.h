/* World coordinates of a FITS image's pixels, through wcslib (optional: without it every image is in pixel
 * coordinates and sky_wcs_create says so). For `gpuws sources`: ra/dec (or glon/glat, elon/elat) of every object,
 * DS9 regions in sky coordinates, and the input's WCS carried into the 2-D maps the command writes. */
#ifndef GPUWS_SKY_WCS_H
#define GPUWS_SKY_WCS_H

#include "fits_io.h"

#include <stddef.h>

typedef struct sky_wcs sky_wcs;

/* The primary WCS of img's header (fits_read_image_at with want_header), for the plane that was read. NULL with a
 * one-line reason in why when there is none with celestial axes, wcslib rejects it, or gpuws was built without
 * wcslib: the caller works in pixel coordinates and warns. */
sky_wcs *sky_wcs_create(const fits_image *img, char *why, size_t n);
void sky_wcs_destroy(sky_wcs *w);

/* The sky position of 0-based pixel (x = column, y = row) in degrees: 0, or -1 (NaN returned) where the projection
 * has no sky position. */
int sky_wcs_world(const sky_wcs *w, double x, double y, double *lng, double *lat);
/* Column names of the two coordinates: "ra"/"dec", "glon"/"glat", "elon"/"elat", else the CTYPE's lower-cased. */
const char *sky_wcs_lng_name(const sky_wcs *w);
const char *sky_wcs_lat_name(const sky_wcs *w);
/* DS9's name of the frame ("icrs", "fk5", "fk4", "galactic", "ecliptic"), or NULL when DS9 has none for it. */
const char *sky_wcs_ds9_frame(const sky_wcs *w);
/* The WCS of the image's first two axes as header cards (80 characters each, wcslib's wcshdo), for the maps
 * written from this image: 0 with *cards malloc'd (free it), or -1 when those axes cannot stand alone (coupled to
 * a third one). */
int sky_wcs_header_2d(const sky_wcs *w, char **cards, int *ncards);

int sky_wcs_available(void);

#endif
