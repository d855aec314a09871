/* What `gpuws sources` writes (see cli_sources.h): world coordinates from the image's WCS (or pixel coordinates and
 * a warning that says why), the FITS catalogue's units, the CSV catalogue byte for byte as printf writes it, and
 * --timings on stderr. */
#include "cli_sources.h"
#include "catalog_csv.h"

#ifdef HAVE_FITSIO_H
/* An image of write_wcs_image (cli_sources.h) with these CTYPEs and what the workshop method writes for it. */
typedef struct {
    const char *ctype1, *ctype2; /* NULL: no WCS */
    const char *csv_header;      /* the workshop catalogue's header row */
    const char *frame;           /* the regions file's coordinate system line */
    const char *region;          /* its first shape, up to the radius */
    const char *warning;         /* on stderr, or NULL for none */
} wcs_case;

#ifdef GPUWS_TEST_HAVE_WCSLIB
static const wcs_case wcs_cases[] = {
    { "RA---TAN", "DEC--TAN", "id,x,y,flux,npix,peak,ra,dec\n", "\nicrs\n", "circle(150.25000000,-2.50000000,", NULL },
    { "GLON-SIN", "GLAT-SIN", "id,x,y,flux,npix,peak,glon,glat\n", "\ngalactic\n", "circle(150.25000000,-2.50000000,",
      NULL },
    /* DS9's image pixels are 1-based: pixel (20, 15) of the catalogue is (21, 16) there */
    { NULL, NULL, "id,x,y,flux,npix,peak\n", "\nimage\n", "circle(21.0000,16.0000,",
      "no world coordinates (the header has no WCS keywords): the outputs are in pixel coordinates" },
    { "RA---XYZ", "DEC--XYZ", "id,x,y,flux,npix,peak\n", "\nimage\n", "circle(21.0000,16.0000,",
      "no world coordinates (wcslib rejects the WCS" },
};
#endif

static void check_wcs_case(gpuws_backend_kind kind, const wcs_case *c)
{
    cli_run r;
    setup(&r, kind);
    char path[600];
    path_in(&r, "sky.fits", path, sizeof path);
    write_wcs_image(path, c->ctype1, c->ctype2);
    run_cli(&r, kind, "sky.fits", "--method", "workshop", "--threshold-abs", "1", "--catalog", "cat.csv", "--regions",
            "sky.reg", "--labels", "labels.fits", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    if (c->warning) cr_assert(strstr(r.stderr_text, c->warning), "stderr lacks '%s': %s", c->warning, r.stderr_text);
    else cr_assert_str_empty(r.stderr_text);
    path_in(&r, "cat.csv", path, sizeof path);
    char *csv = test_read_file(path);
    cr_assert(!strncmp(csv, c->csv_header, strlen(c->csv_header)), "CSV header: %.60s", csv);
    double x, y, lng = NAN, lat = NAN;
    cr_assert(sscanf(strchr(csv, '\n') + 1, "1,%lf,%lf,%*f,%*d,%*f,%lf,%lf", &x, &y, &lng, &lat) >= 2, "%s", csv);
    cr_assert(fabs(x - 20) < 1e-9 && fabs(y - 15) < 1e-9, "centre (%g, %g)", x, y);
    if (c->ctype1 && !c->warning)
        cr_assert(fabs(lng - 150.25) < 1e-8 && fabs(lat + 2.5) < 1e-8, "world (%.10g, %.10g) for CRVAL", lng, lat);
    free(csv);
    path_in(&r, "sky.reg", path, sizeof path);
    char *reg = test_read_file(path);
    cr_assert(strstr(reg, c->frame) && strstr(reg, c->region), "regions file:\n%s", reg);
    cr_assert(!strncmp(reg, "# Region file format: DS9 version 4.1\n", 38), "%s", reg);
    free(reg);
    /* the labels keep the input's WCS */
    fitsfile *f;
    int status = 0;
    char ctype[FLEN_VALUE] = "";
    path_in(&r, "labels.fits", path, sizeof path);
    fits_open_diskfile(&f, path, READONLY, &status);
    cr_assert_eq(status, 0);
    fits_read_key(f, TSTRING, "CTYPE1", ctype, NULL, &status);
    int s2 = 0;
    fits_close_file(f, &s2);
    if (c->ctype1 && !c->warning) cr_assert(status == 0 && !strcmp(ctype, c->ctype1), "labels' CTYPE1 '%s'", ctype);
    else cr_assert_eq(status, KEY_NO_EXIST, "the labels have CTYPE1 = '%s' from no usable WCS", ctype);
    teardown(&r);
}

#ifdef GPUWS_TEST_HAVE_WCSLIB
BACKEND_TEST(cli_sources, world_coordinates_from_the_wcs_or_a_warning)
{
    for (size_t k = 0; k < sizeof wcs_cases / sizeof wcs_cases[0]; k++) check_wcs_case(*kind, &wcs_cases[k]);
}
#else
/* Built without wcslib: a header with a WCS gives pixel coordinates and a warning that says why. */
BACKEND_TEST(cli_sources, without_wcslib_a_wcs_gives_pixels_and_a_warning)
{
    const wcs_case c = { "RA---TAN",
                         "DEC--TAN",
                         "id,x,y,flux,npix,peak\n",
                         "\nimage\n",
                         "circle(21.0000,16.0000,",
                         "gpuws was built without wcslib" };
    check_wcs_case(*kind, &c);
}
#endif

/* --fits-catalog: a binary table with the CSV's columns and their units (ra in degrees: needs wcslib). */
BACKEND_TEST(cli_sources, fits_catalog_has_units)
{
#ifndef GPUWS_TEST_HAVE_WCSLIB
    cr_skip_test("gpuws was built without wcslib: the catalogue has no ra column to check");
#endif
    cli_run r;
    setup(&r, *kind);
    char path[600];
    path_in(&r, "sky.fits", path, sizeof path);
    write_wcs_image(path, "RA---TAN", "DEC--TAN");
    run_cli(&r, *kind, "sky.fits", "--method", "workshop", "--threshold-abs", "1", "--fits-catalog", "cat.fits", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    fitsfile *f;
    int status = 0, ncols = 0;
    long nrows = 0;
    char ttype[FLEN_VALUE], tunit[FLEN_VALUE], extname[FLEN_VALUE];
    double ra = 0;
    path_in(&r, "cat.fits", path, sizeof path);
    fits_open_diskfile(&f, path, READONLY, &status);
    fits_movabs_hdu(f, 2, NULL, &status);
    fits_get_num_rows(f, &nrows, &status);
    fits_get_num_cols(f, &ncols, &status);
    fits_read_key(f, TSTRING, "EXTNAME", extname, NULL, &status);
    fits_read_key(f, TSTRING, "TTYPE7", ttype, NULL, &status);
    fits_read_key(f, TSTRING, "TUNIT7", tunit, NULL, &status);
    fits_read_col(f, TDOUBLE, 7, 1, 1, 1, NULL, &ra, NULL, &status);
    cr_assert_eq(status, 0, "cfitsio status %d", status);
    fits_read_key(f, TSTRING, "TUNIT2", tunit + 8, NULL, &status);
    fits_close_file(f, &status);
    cr_assert(nrows == 1 && ncols == 8 && !strcmp(extname, "OBJECTS"), "%ld rows, %d columns, %s", nrows, ncols,
              extname);
    cr_assert(!strcmp(ttype, "ra") && !strcmp(tunit, "deg") && !strcmp(tunit + 8, "pix"), "%s [%s]", ttype, tunit);
    cr_assert(fabs(ra - 150.25) < 1e-8, "ra %.10g", ra);
    teardown(&r);
}
#endif

/* --timings: each step's wall time on stderr, one line a step; the outputs are the same as without it. */
BACKEND_TEST(cli_sources, timings_give_every_step_on_stderr)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 240, 160, 7, 10);
    run_cli(&r, *kind, "sky.fits", "--catalog", "timed.csv", "--labels", "labels.fits", "--timings", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    static const char *const steps[] = { "gpuws sources: timings of sky.fits (ms, wall clock):\n",
                                         "\n  read ",
                                         "\n  device start ",
                                         "\n  pixel scan ",
                                         "\n  mask + upload ",
                                         "\n  background ",
                                         "\n  extraction ",
                                         " (device ",
                                         "\n  catalogue table ",
                                         "\n  --catalog ",
                                         "\n  --labels ",
                                         "\n  outputs put in place ",
                                         "\n  memory released ",
                                         " (the device's context ",
                                         "\n  total " };
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        cr_assert(strstr(r.stderr_text, steps[k]), "no '%s' in stderr: %s", steps[k], r.stderr_text);
    cr_assert(!strstr(r.stdout_text, "timings"), "timings on stdout: %s", r.stdout_text);
    run_cli(&r, *kind, "sky.fits", "--catalog", "plain.csv", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(!strstr(r.stderr_text, "timings"), "timings without --timings: %s", r.stderr_text);
    char a[600], b[600];
    path_in(&r, "timed.csv", a, sizeof a);
    path_in(&r, "plain.csv", b, sizeof b);
    assert_same_file(a, b);
    run_cli(&r, *kind, "sky.fits", "--method", "workshop", "--timings", NULL);
    cr_assert(r.status == 0 && strstr(r.stderr_text, "\n  find sources "), "exit %d; stderr: %s", r.status,
              r.stderr_text);
    run_cli(&r, *kind, "--demo", "--timings", NULL);
    cr_assert(r.status == 2 && strstr(r.stderr_text, "--timings applies to an IMAGE only"), "exit %d; stderr: %s",
              r.status, r.stderr_text);
    teardown(&r);
}

/* The catalogue's rows are formatted on several threads: the file is what one loop of printf writes, byte for byte
 * (integers as %lld, fixed decimals as %.*f, the rest as %.9g, NaN as nan). */
Test(cli_sources, catalogue_csv_is_what_printf_writes)
{
    enum { ROWS = 20011, COLS = 4 };
    const catalog_column cols[COLS] = {
        { "id", "", 0 }, { "x", "pix", 6 }, { "flux", "count", -1 }, { "flag", "", 0 }
    };
    double *v = malloc(ROWS * COLS * sizeof *v);
    cr_assert(v);
    uint64_t seed = test_seed(false);
    for (size_t k = 0; k < ROWS; k++) {
        const double u = test_rand_uniform(&seed);
        v[k * COLS] = (double)(k + 1);
        v[k * COLS + 1] = k % 97 ? u * 8192 - 0.5 : NAN;
        v[k * COLS + 2] = k % 89 ? (u - 0.3) * pow(10, (double)(k % 41) - 20) : NAN;
        v[k * COLS + 3] = (double)(k % 7);
    }
    char dir[256], path[300], *want = NULL;
    snprintf(dir, sizeof dir, "%s/gpuws-csv-XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cat.csv", dir);
    const catalog_table t = { COLS, ROWS, cols, v };
    char err[600];
    cr_assert_eq(catalog_table_csv(path, &t, 1, err, sizeof err), 0, "%s", err);
    size_t len = 0;
    FILE *f = open_memstream(&want, &len);
    cr_assert(f);
    fprintf(f, "id,x[pix],flux[count],flag\n");
    for (size_t k = 0; k < ROWS; k++) {
        const double *row = v + k * COLS;
        for (size_t c = 0; c < COLS; c++) {
            if (c) fputc(',', f);
            if (isnan(row[c])) fputs("nan", f);
            else if (cols[c].decimals == 0) fprintf(f, "%lld", (long long)row[c]);
            else if (cols[c].decimals < 0) fprintf(f, "%.9g", row[c]);
            else fprintf(f, "%.*f", cols[c].decimals, row[c]);
        }
        fputc('\n', f);
    }
    fclose(f);
    char *got = test_read_file(path);
    cr_assert(got && strlen(got) == len, "%zu bytes, printf's loop writes %zu", got ? strlen(got) : 0, len);
    size_t i = 0;
    while (i < len && got[i] == want[i]) i++;
    cr_assert(i == len, "byte %zu differs: ...%.40s... against printf's ...%.40s...", i, got + (i > 20 ? i - 20 : 0),
              want + (i > 20 ? i - 20 : 0));
    free(got), free(want), free(v);
    unlink(path);
    rmdir(dir);
}
