/* Writes a synthetic sky as a FITS file for the mpi_cli_sources tests: mpi_cli_sky OUT.fits WIDTH HEIGHT SEED N. */
#include "fits_io.h"
#include "sources/sources_ref.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 6) return fprintf(stderr, "usage: mpi_cli_sky OUT.fits WIDTH HEIGHT SEED N\n"), 2;
    const size_t w = strtoul(argv[2], NULL, 10), h = strtoul(argv[3], NULL, 10);
    gpuws_sky_params p = gpuws_sky_defaults(w, h, strtoull(argv[4], NULL, 10));
    p.num_sources = strtoul(argv[5], NULL, 10);
    gpuws_sky_source *src = malloc((p.num_sources + 1) * sizeof *src);
    float *img = malloc(w * h * sizeof *img);
    gpuws_sky_bins b;
    char err[600];
    int rc = !src || !img;
    if (!rc) gpuws_sky_sources(&p, src);
    if (!rc && !(rc = gpuws_sky_bin(&p, src, &b) != 0)) {
        gpuws_sky_ref(&p, &b, img, NULL);
        gpuws_sky_bins_free(&b);
        if ((rc = fits_write_image(argv[1], FITS_F32, img, w, h, err, sizeof err) != 0)) fprintf(stderr, "%s\n", err);
    }
    free(src);
    free(img);
    return rc;
}
