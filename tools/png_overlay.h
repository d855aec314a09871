/* PNG previews of an image with its sources marked, for `gpuws sources --overlay`. */
#ifndef GPUWS_PNG_OVERLAY_H
#define GPUWS_PNG_OVERLAY_H

#include "catalog_csv.h"

#include <stddef.h>

/* Creates `path`, which must not exist: an 8-bit RGB PNG of the image, log-scaled between `lo` (black; NaN = the
 * median of the finite pixels) and the 99.99th percentile of the finite pixels (white: inside the brightest sources,
 * so the noise stays grey), as ds9's "log" scale (exponent 1000), NaN pixels dark blue, and each object's ellipse
 * (semi-axes at least 3 pixels) drawn by its `strength` (its flux): the brightest tenth thick and red, down to the
 * median medium and orange, the fainter half thin and cyan, so that crowded faint objects do not hide the image;
 * a legend in the top left corner gives the count of each. Image row 0 is drawn at the bottom, as FITS viewers show
 * it. The commands pass a staging path (tools/output_files.h). 0 on success; -1 with a one-line reason in err, and
 * no file left behind, on failure (also when gpuws was built without libpng, or the image is over 2^28 pixels). */
int png_overlay_write(const char *path, const float *image, size_t width, size_t height, double lo,
                      const catalog_shape *shapes, const double *strength, size_t n, char *err, size_t errlen);

/* True when gpuws was built with libpng. */
int png_overlay_available(void);

/* Creates `path`, which must not exist: an 8-bit RGB PNG of the picture rgb (width x height, 3 bytes a pixel, the top
 * row first). Where zlib is linked, strips of rows are compressed on every core and joined into one stream, the same
 * bytes whatever the cores; else libpng writes it on one. 0, or -1 with the reason in err and no file left. */
int png_write_rgb(const char *path, const unsigned char *rgb, size_t width, size_t height, char *err, size_t errlen);

#endif
