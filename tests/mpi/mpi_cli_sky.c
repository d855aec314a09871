/* Writes a synthetic sky as a FITS file for the mpi_cli_sources tests: mpi_cli_sky OUT.fits WIDTH HEIGHT SEED N.
 * The header holds a tangent-plane WCS, which the catalogues and the label image carry. */
#include "fits_io.h"
#include "sources/sources_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ncards header cards of 80 characters: key = value */
static char *wcs_cards(size_t w, size_t h, int *ncards)
{
    char keys[9][2][24] = { { "CTYPE1", "'RA---TAN'" }, { "CTYPE2", "'DEC--TAN'" }, { "CUNIT1", "'deg'" },
                            { "CUNIT2", "'deg'" },      { "CRVAL1", "150.0" },      { "CRVAL2", "2.0" },
                            { "CDELT1", "-0.0001" },    { "CDELT2", "0.0001" },     { "CRPIX1", "" } };
    snprintf(keys[8][1], sizeof keys[8][1], "%.1f", (double)w / 2);
    char *cards = malloc(10 * 80 + 1);
    if (!cards) return NULL;
    for (int k = 0; k < 9; k++) snprintf(cards + 80 * k, 81, "%-8s= %20s%-50s", keys[k][0], keys[k][1], "");
    snprintf(cards + 80 * 9, 81, "%-8s= %20.1f%-50s", "CRPIX2", (double)h / 2, "");
    *ncards = 10;
    return cards;
}

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
    int ncards = 0;
    char *cards = wcs_cards(w, h, &ncards);
    int rc = !src || !img || !cards;
    if (!rc) gpuws_sky_sources(&p, src);
    if (!rc && !(rc = gpuws_sky_bin(&p, src, &b) != 0)) {
        gpuws_sky_ref(&p, &b, img, NULL);
        gpuws_sky_bins_free(&b);
        rc = fits_write_image_cards(argv[1], FITS_F32, img, w, h, cards, ncards, err, sizeof err) != 0;
        if (rc) fprintf(stderr, "%s\n", err);
    }
    free(src);
    free(img);
    free(cards);
    return rc;
}
