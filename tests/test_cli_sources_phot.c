/* `gpuws sources --phot-apertures` (see cli_sources.h): the aperture sums, their errors and flags in both
 * catalogues and in the many-files mode, the columns named by their diameters. */
#include "cli_sources.h"
#include "sources_phot.h"

#ifdef HAVE_FITSIO_H
/* Column `name` of the open table f as nrows doubles (malloc'd). */
static double *table_column(fitsfile *f, const char *name, long nrows, int *status)
{
    int col = 0;
    double *v = calloc((size_t)nrows + 1, sizeof *v);
    cr_assert(v);
    fits_get_colnum(f, CASESEN, (char *)name, &col, status);
    fits_read_col(f, TDOUBLE, col, 1, 1, nrows, NULL, v, NULL, status);
    cr_assert_eq(*status, 0, "column %s: cfitsio status %d", name, *status);
    return v;
}

/* --phot-apertures 3,6: for every object, in the CSV and the FITS catalogue, the sums in circles of diameters 3 and
 * 6 at its (x, y) on the image less the background map, with errors from the rms map and SEP's flags (the NaN
 * pixel masked as in the extraction): what gpuws_sum_circle gives on the image minus the --background map computed
 * here, with the --rms map; the same columns in the many-files mode. */
BACKEND_TEST(cli_sources, phot_apertures_are_sums_on_the_image_less_its_background)
{
    cli_run r;
    setup(&r, *kind);
    enum { W = 240, H = 180, NS = 10 };
    gpuws_sky_params p = gpuws_sky_defaults(W, H, 7);
    p.num_sources = NS;
    gpuws_sky_source src[NS];
    gpuws_sky_sources(&p, src);
    gpuws_sky_bins b;
    cr_assert_eq(gpuws_sky_bin(&p, src, &b), 0);
    float *img = malloc(W * H * sizeof *img), *diff = malloc(W * H * sizeof *diff);
    uint8_t *mask = malloc(W * H);
    cr_assert(img && diff && mask);
    gpuws_sky_ref(&p, &b, img, NULL);
    gpuws_sky_bins_free(&b);
    for (int i = 0; i < W * H; i++) img[i] += 0.25f + 2e-4f * (float)(i % W); /* a sloping background */
    int bright = -1; /* the brightest source away from the edges: the pixel next to it NaN, masked */
    for (int k = 0; k < NS; k++)
        if (src[k].x > 10 && src[k].x < W - 10 && src[k].y > 10 && src[k].y < H - 10 &&
            (bright < 0 || src[k].peak > src[bright].peak))
            bright = k;
    cr_assert(bright >= 0);
    img[(int)(src[bright].y + 0.5f) * W + (int)(src[bright].x + 0.5f) + 1] = NAN;
    char path[600], err[600];
    path_in(&r, "sky.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, W, H, err, sizeof err), 0, "%s", err);
    run_cli(&r, *kind, "sky.fits", "--detect-thresh", "5", "--back-size", "40", "--phot-apertures", "3,6", "--catalog",
            "cat.csv", "--fits-catalog", "cat.fits", "--background", "back.fits", "--rms", "rms.fits", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    const char *line = strstr(r.stdout_text, "aperture photometry: ");
    cr_assert(line && strstr(line, " x 2 diameters (3, 6 pixels) on the image less its background"), "%s",
              r.stdout_text);
    const long n = strtol(line + 21, NULL, 10);
    cr_assert(n >= NS - 2 && n <= NS + 2, "%ld objects of %d injected", n, (int)NS);

    /* the FITS catalogue: x, y and the aperture columns as doubles, the diameters in the header */
    fitsfile *f;
    int status = 0, ncols = 0;
    long nrows = 0;
    double d1 = 0, d2 = 0;
    char tunit[FLEN_VALUE] = "", tunit_flag[FLEN_VALUE] = "?";
    path_in(&r, "cat.fits", path, sizeof path);
    fits_open_diskfile(&f, path, READONLY, &status);
    fits_movabs_hdu(f, 2, NULL, &status);
    fits_get_num_rows(f, &nrows, &status);
    fits_get_num_cols(f, &ncols, &status);
    fits_read_key(f, TDOUBLE, "PHOTAP1", &d1, NULL, &status);
    fits_read_key(f, TDOUBLE, "PHOTAP2", &d2, NULL, &status);
    char key[16];
    snprintf(key, sizeof key, "TUNIT%d", ncols - 5);
    fits_read_key(f, TSTRING, key, tunit, NULL, &status);
    cr_assert_eq(status, 0, "cfitsio status %d", status);
    snprintf(key, sizeof key, "TUNIT%d", ncols);
    fits_read_key(f, TSTRING, key, tunit_flag, NULL, &status);
    cr_assert(status == KEY_NO_EXIST, "flag_aper_6 has a unit: %s", tunit_flag);
    status = 0;
    cr_assert(nrows == n && d1 == 3.0 && d2 == 6.0 && !strcmp(tunit, "count"),
              "%ld rows for %ld objects, PHOTAP1 %g PHOTAP2 %g, TUNIT of flux_aper_3 '%s'", nrows, n, d1, d2, tunit);
    double *x = table_column(f, "x", nrows, &status), *y = table_column(f, "y", nrows, &status);
    static const char *const names[6] = { "flux_aper_3", "fluxerr_aper_3", "flag_aper_3",
                                          "flux_aper_6", "fluxerr_aper_6", "flag_aper_6" };
    double *cols[6];
    for (int c = 0; c < 6; c++) cols[c] = table_column(f, names[c], nrows, &status);
    fits_close_file(f, &status);

    /* the same sums on the image minus the maps the command wrote, without a map in the options */
    fits_image back, rms;
    path_in(&r, "back.fits", path, sizeof path);
    cr_assert_eq(fits_read_image(path, 0, &back, err, sizeof err), 0, "%s", err);
    path_in(&r, "rms.fits", path, sizeof path);
    cr_assert_eq(fits_read_image(path, 0, &rms, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < W * H; i++) {
        mask[i] = !isfinite(img[i]);
        diff[i] = mask[i] ? 0.0f : img[i] - ((float *)back.data)[i];
    }
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *ddiff = test_buffer_from(ctx, diff, W * H * sizeof(float)),
                 *drms = test_buffer_from(ctx, rms.data, W * H * sizeof(float)),
                 *dmask = test_buffer_from(ctx, mask, W * H);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.rms = drms, o.mask = dmask;
    double *rad = malloc((size_t)nrows * sizeof *rad + 8), *sum = malloc((size_t)nrows * sizeof *sum + 8),
           *se = malloc((size_t)nrows * sizeof *se + 8);
    int *flag = malloc((size_t)nrows * sizeof *flag + 8);
    cr_assert(rad && sum && se && flag);
    long masked = 0;
    for (int j = 0; j < 2; j++) {
        for (long k = 0; k < nrows; k++) rad[k] = j ? 3.0 : 1.5;
        TEST_OK(gpuws_sum_circle(NULL, W, H, ddiff, (size_t)nrows, x, y, rad, &o, sum, se, NULL, flag));
        for (long k = 0; k < nrows; k++) {
            const double *g = &cols[3 * j][k], *ge = &cols[3 * j + 1][k], *gf = &cols[3 * j + 2][k];
            cr_assert(fabs(*g - sum[k]) <= 1e-12 * fabs(sum[k]) && fabs(*ge - se[k]) <= 1e-12 * se[k] && *gf == flag[k],
                      "object %ld, diameter %d: flux %.17g fluxerr %.17g flag %g; gpuws_sum_circle on image - back: "
                      "%.17g %.17g %d",
                      k + 1, j ? 6 : 3, *g, *ge, *gf, sum[k], se[k], flag[k]);
            cr_assert(se[k] > 0, "object %ld: no error from the rms map", k + 1);
            masked += (flag[k] & GPUWS_APER_HASMASKED) != 0;
        }
    }
    cr_assert_gt(masked, 0, "no aperture covers the NaN pixel");

    /* the CSV: the header first, the columns after SEP's with units, the FITS table's values */
    path_in(&r, "cat.csv", path, sizeof path);
    char *csv = test_read_file(path);
    cr_assert(!strncmp(csv, "id,x[pix],", 10), "%.400s", csv);
    static const char tail[] = ",flag,flux_aper_3[count],fluxerr_aper_3[count],flag_aper_3,flux_aper_6[count],"
                               "fluxerr_aper_6[count],flag_aper_6\n";
    char *head = csv, *body = strchr(head, '\n') + 1;
    cr_assert(!strncmp(body - strlen(tail), tail, strlen(tail)), "CSV header: %.*s", (int)(body - head), head);
    long row = 0;
    for (char *s = body; *s; s = strchr(s, '\n') + 1, row++) {
        char *end = strchr(s, '\n'), *field = end;
        for (int c = 5; c >= 0; c--) {
            while (field[-1] != ',') field--;
            const double v = strtod(field, NULL), want = cols[c][row];
            cr_assert(fabs(v - want) <= 5e-9 * fabs(want), "row %ld, %s: %.17g in the CSV, %.17g in the FITS table",
                      row + 1, names[c], v, want);
            field--;
        }
    }
    cr_assert_eq(row, nrows);

    /* many files: the same catalogue */
    char dir[600], out[700];
    path_in(&r, "out", dir, sizeof dir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    run_cli(&r, *kind, "sky.fits", "--outdir", "out", "--detect-thresh", "5", "--back-size", "40", "--phot-apertures",
            "3,6", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    snprintf(out, sizeof out, "%s/sky.csv", dir);
    char *many = test_read_file(out);
    cr_assert(!strcmp(many, csv), "--outdir's catalogue differs from --catalog's:\n%.600s", many);
    unlink(out);
    rmdir(dir);

    free(many);
    free(csv);
    free(rad), free(sum), free(se), free(flag), free(x), free(y);
    for (int c = 0; c < 6; c++) free(cols[c]);
    gpuws_buffer_destroy(ddiff), gpuws_buffer_destroy(drms), gpuws_buffer_destroy(dmask);
    gpuws_context_destroy(ctx);
    fits_image_free(&back), fits_image_free(&rms);
    free(img), free(diff), free(mask);
    teardown(&r);
}

/* Each --phot-apertures column names its diameter, an integer as it is, a decimal point as 'p' and an exponent's
 * minus as 'm' (3, 2.5, 0.00001: flux_aper_3, flux_aper_2p5, flux_aper_1em05), the same in the CSV's header row
 * (units in brackets, as the other columns) and in the FITS table's TTYPEs, whose header keeps PHOTAPk. The CSV
 * has no comment line: its first line is the header, and every line has as many fields as the header. */
BACKEND_TEST(cli_sources, phot_columns_are_named_by_their_diameters)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 240, 180, 7, 10);
    run_cli(&r, *kind, "sky.fits", "--detect-thresh", "5", "--back-size", "40", "--phot-apertures", "3,2.5,0.00001",
            "--catalog", "cat.csv", "--fits-catalog", "cat.fits", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    static const char *const names[9] = { "flux_aper_3",     "fluxerr_aper_3",     "flag_aper_3",
                                          "flux_aper_2p5",   "fluxerr_aper_2p5",   "flag_aper_2p5",
                                          "flux_aper_1em05", "fluxerr_aper_1em05", "flag_aper_1em05" };
    static const double diameters[3] = { 3, 2.5, 1e-5 };

    char path[600];
    path_in(&r, "cat.csv", path, sizeof path);
    char *csv = test_read_file(path);
    static const char first[] = "id,x[pix],y[pix],flux[count],";
    static const char tail[] = ",flag,flux_aper_3[count],fluxerr_aper_3[count],flag_aper_3,"
                               "flux_aper_2p5[count],fluxerr_aper_2p5[count],flag_aper_2p5,"
                               "flux_aper_1em05[count],fluxerr_aper_1em05[count],flag_aper_1em05\n";
    const char *body = strchr(csv, '\n') + 1;
    cr_assert(!strncmp(csv, first, strlen(first)) && !strncmp(body - strlen(tail), tail, strlen(tail)),
              "the first line is not the header: %.*s", (int)(body - csv), csv);
    size_t fields = 1, rows = 0;
    for (const char *c = csv; *c != '\n'; c++) fields += *c == ',';
    for (const char *s = body; *s; s = strchr(s, '\n') + 1, rows++) {
        size_t n = 1;
        for (const char *c = s; *c != '\n'; c++) n += *c == ',';
        cr_assert(*s != '#' && n == fields, "row %zu has %zu fields, the header %zu: %.80s", rows + 1, n, fields, s);
    }
    cr_assert_gt(rows, 0, "no objects");
    free(csv);

    fitsfile *f;
    int status = 0, ncols = 0;
    path_in(&r, "cat.fits", path, sizeof path);
    fits_open_diskfile(&f, path, READONLY, &status);
    fits_movabs_hdu(f, 2, NULL, &status);
    fits_get_num_cols(f, &ncols, &status);
    cr_assert_eq(status, 0, "cfitsio status %d", status);
    for (int c = 0; c < 9; c++) {
        char key[16], ttype[FLEN_VALUE] = "";
        snprintf(key, sizeof key, "TTYPE%d", ncols - 8 + c);
        fits_read_key(f, TSTRING, key, ttype, NULL, &status);
        cr_assert(!status && !strcmp(ttype, names[c]), "%s is '%s', wanted %s (cfitsio status %d)", key, ttype,
                  names[c], status);
    }
    for (int j = 0; j < 3; j++) {
        char key[16];
        double d = 0;
        snprintf(key, sizeof key, "PHOTAP%d", j + 1);
        fits_read_key(f, TDOUBLE, key, &d, NULL, &status);
        cr_assert(!status && d == diameters[j], "%s is %.17g, wanted %g (cfitsio status %d)", key, d, diameters[j],
                  status);
    }
    fits_close_file(f, &status);
    teardown(&r);
}
#endif

/* The diameters' spelling in the --phot-apertures columns' names: %.9g's digits, the decimal point as 'p', an
 * exponent's minus as 'm' and its plus left out, so that a name holds letters, digits and underscores only, and
 * diameters that differ in 9 significant digits get different names. */
Test(cli_sources, phot_diameters_are_spelt_as_identifiers)
{
    static const struct {
        double d;
        const char *spelt;
    } cases[] = {
        { 3, "3" },
        { 2.5, "2p5" },
        { 0.75, "0p75" },
        { 12.125, "12p125" },
        { 1e-5, "1em05" },
        { 2.5e-7, "2p5em07" },
        { 1e10, "1e10" },
        { 123456789, "123456789" },
        { 1234567891, "1p23456789e09" },
        { 2.5000000001, "2p5" },
        { 1.7976931348623157e308, "1p79769313e308" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char got[PHOT_NAME_MAX];
        phot_spell(cases[k].d, got);
        cr_assert(!strcmp(got, cases[k].spelt), "%.17g is spelt '%s', wanted '%s'", cases[k].d, got, cases[k].spelt);
    }
}
