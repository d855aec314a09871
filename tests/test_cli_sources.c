/* `gpuws sources`: the built command (GPUWS_CLI, set by ctest) run on FITS files this test writes, once per backend
 * (GPUWS_BACKEND). What must hold: exit 0 with every output on a good image; exit 1 with a one-line reason and no
 * file written (not even a temporary one) on bad input; exit 2 with usage on bad options. */
#include "support.h"
#include "catalog_csv.h"
#include "fits_io.h"
#include "sources/sources_ref.h"
#include "sources_phot.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<fitsio.h>)
#include <fitsio.h>
#define HAVE_FITSIO_H 1
#endif
#endif

typedef struct {
    char dir[256];
    char out[256], err[256]; /* captured stdout / stderr, outside dir */
    char *stdout_text, *stderr_text;
    int status;
} cli_run;

/* A fresh directory for one test's files; skips (or fails when required) like test_open for the backend. */
static void setup(cli_run *r, gpuws_backend_kind kind)
{
    gpuws_context *ctx = test_open(kind); /* skip or fail exactly as the library tests do */
    gpuws_context_destroy(ctx);
    cr_assert(getenv("GPUWS_CLI") && *getenv("GPUWS_CLI"), "GPUWS_CLI is not set (ctest sets it to the built gpuws)");
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    memset(r, 0, sizeof *r);
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/gpuws-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(r->dir), "mkdtemp failed");
    snprintf(r->out, sizeof r->out, "%s.stdout", r->dir);
    snprintf(r->err, sizeof r->err, "%s.stderr", r->dir);
}

static void teardown(cli_run *r)
{
    DIR *d = opendir(r->dir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", r->dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(r->dir);
    unlink(r->out);
    unlink(r->err);
    free(r->stdout_text);
    free(r->stderr_text);
}

/* Runs `gpuws sources <args...>` (NULL-terminated) in r->dir with GPUWS_BACKEND set. */
static void run_cli(cli_run *r, gpuws_backend_kind kind, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = getenv("GPUWS_CLI");
    argv[argc++] = "sources";
    va_list ap;
    va_start(ap, kind);
    for (char *a; (a = va_arg(ap, char *)) && argc < 31;) argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        int o = open(r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || chdir(r->dir) != 0) _exit(127);
        setenv("GPUWS_BACKEND", test_backend_name(kind), 1);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    cr_assert(waitpid(pid, &st, 0) == pid);
    cr_assert(WIFEXITED(st), "gpuws sources died (signal %d)", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    r->status = WEXITSTATUS(st);
    free(r->stdout_text);
    free(r->stderr_text);
    r->stdout_text = test_read_file(r->out);
    r->stderr_text = test_read_file(r->err);
}

/* Files in r->dir other than `keep`. */
static int count_files_except(cli_run *r, const char *keep)
{
    DIR *d = opendir(r->dir);
    cr_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (!keep || strcmp(e->d_name, keep))) {
            cr_log_error("left behind: %s", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static void path_in(cli_run *r, const char *name, char *out, size_t n) { snprintf(out, n, "%s/%s", r->dir, name); }

static void assert_refused(cli_run *r, const char *input, const char *why)
{
    cr_assert_eq(r->status, 1, "exit %d, wanted 1; stderr: %s", r->status, r->stderr_text);
    cr_assert(strstr(r->stderr_text, why), "stderr does not say '%s': %s", why, r->stderr_text);
    cr_assert(strchr(r->stderr_text, '\n') == r->stderr_text + strlen(r->stderr_text) - 1, "more than one line: %s",
              r->stderr_text);
    cr_assert_eq(count_files_except(r, input), 0, "files were left behind");
}

#define OUTPUT_ARGS "--catalog", "cat.csv", "--labels", "labels.fits", "--overlay", "preview.png"

/* A synthetic sky of w x h with n sources (at most 16) from the seed (malloc'd). */
static float *sky_image(size_t w, size_t h, uint64_t seed, size_t n)
{
    gpuws_sky_params p = gpuws_sky_defaults(w, h, seed);
    p.num_sources = n;
    gpuws_sky_source src[16];
    cr_assert(n <= 16);
    gpuws_sky_sources(&p, src);
    gpuws_sky_bins b;
    cr_assert_eq(gpuws_sky_bin(&p, src, &b), 0);
    float *img = malloc(w * h * sizeof *img);
    cr_assert(img);
    gpuws_sky_ref(&p, &b, img, NULL);
    gpuws_sky_bins_free(&b);
    return img;
}

/* The same as a FITS file in r->dir. */
static void write_sky(cli_run *r, const char *name, size_t w, size_t h, uint64_t seed, size_t n)
{
    float *img = sky_image(w, h, seed, n);
    char path[600], err[600];
    path_in(r, name, path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, w, h, err, sizeof err), 0, "%s", err);
    free(img);
}

/* The two files' bytes are the same. */
static void assert_same_file(const char *a, const char *b)
{
    char *x = test_read_file(a), *y = test_read_file(b);
    cr_assert(x && y, "cannot read %s or %s", a, b);
    cr_assert(!strcmp(x, y), "%s and %s differ", a, b);
    free(x);
    free(y);
}

/* ---- good input ------------------------------------------------------------------------------------------------- */

BACKEND_TEST(cli_sources, workshop_writes_catalog_labels_and_overlay)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 300, 200, 5, 12);
    char path[600], err[600];
    run_cli(&r, *kind, "sky.fits", "--method", "workshop", OUTPUT_ARGS, NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    const char *line = strstr(r.stdout_text, "sources: ");
    cr_assert(line, "no 'sources: N' line: %s", r.stdout_text);
    const long n = strtol(line + 9, NULL, 10);
    cr_assert(n >= 10, "%ld sources of 12 injected", n);
    cr_assert(strstr(r.stdout_text, "sigma clipping") && strstr(r.stdout_text, "times (ms"), "%s", r.stdout_text);

    path_in(&r, "cat.csv", path, sizeof path);
    char *csv = test_read_file(path);
    cr_assert(!strncmp(csv, "id,x,y,flux,npix,peak\n", 22), "CSV header: %.40s", csv);
    long rows = 0;
    double last = INFINITY;
    for (char *s = strchr(csv, '\n') + 1; *s; s = strchr(s, '\n') + 1, rows++) {
        long long id, npix;
        double x, y, flux, peak;
        cr_assert_eq(sscanf(s, "%lld,%lf,%lf,%lf,%lld,%lf", &id, &x, &y, &flux, &npix, &peak), 6, "row %ld", rows);
        cr_assert(flux <= last, "row %ld: flux %g after %g: not sorted by flux", rows, flux, last);
        cr_assert(id >= 1 && id <= n && npix >= 1 && peak > 0 && x >= 0 && x < 300 && y >= 0 && y < 200);
        last = flux;
    }
    cr_assert_eq(rows, n, "%ld rows for %ld sources", rows, n);
    free(csv);

    fits_image lab;
    path_in(&r, "labels.fits", path, sizeof path);
    cr_assert_eq(fits_read_image(path, 0, &lab, err, sizeof err), 0, "%s", err);
    cr_assert(lab.width == 300 && lab.height == 200 && lab.bitpix == 32);
    float maxl = 0;
    for (size_t i = 0; i < 300 * 200; i++) maxl = fmaxf(maxl, ((float *)lab.data)[i]);
    cr_assert_eq((long)maxl, n, "largest label %g, %ld sources", (double)maxl, n);
    fits_image_free(&lab);

    path_in(&r, "preview.png", path, sizeof path);
    FILE *f = fopen(path, "rb");
    unsigned char sig[8] = { 0 };
    cr_assert(f && fread(sig, 1, 8, f) == 8);
    fclose(f);
    cr_assert(!memcmp(sig, "\x89PNG\r\n\x1a\n", 8), "not a PNG");
    teardown(&r);
}

/* The default method is the extraction: every output of it, consistent with each other. */
BACKEND_TEST(cli_sources, extract_is_the_default_and_writes_every_output)
{
    cli_run r;
    setup(&r, *kind);
    enum { W = 300, H = 200 };
    float *img = sky_image(W, H, 5, 12);
    for (int i = 0; i < W * H; i++) img[i] += 0.25f; /* a background for the extraction to take off */
    img[7 * W + 9] = NAN;                            /* masked, not a failure */
    char path[600], err[600];
    path_in(&r, "sky.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, W, H, err, sizeof err), 0, "%s", err);
    free(img);
    run_cli(&r, *kind, "sky.fits", "--detect-thresh", "5", "--back-size", "50", OUTPUT_ARGS, "--fits-catalog",
            "cat.fits", "--regions", "sky.reg", "--background", "back.fits", "--rms", "rms.fits", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    const char *line = strstr(r.stdout_text, "objects: ");
    cr_assert(line && strstr(r.stdout_text, "background: global "), "%s", r.stdout_text);
    const long n = strtol(line + 9, NULL, 10);
    cr_assert(n >= 10 && n <= 14, "%ld objects of 12 injected", n);

    path_in(&r, "cat.csv", path, sizeof path);
    char *csv = test_read_file(path);
    static const char head[] = "id,x[pix],y[pix],flux[count],fluxerr[count],cflux[count],peak[count],cpeak[count],"
                               "npix[pix],tnpix[pix],a[pix],b[pix],theta[rad],";
    cr_assert(!strncmp(csv, head, strlen(head)), "CSV header: %.200s", csv);
    long rows = 0;
    for (char *s = strchr(csv, '\n') + 1; *s; s = strchr(s, '\n') + 1, rows++) {
        long id;
        double x, y, flux;
        cr_assert_eq(sscanf(s, "%ld,%lf,%lf,%lf", &id, &x, &y, &flux), 4, "row %ld", rows);
        cr_assert(id == rows + 1 && flux > 0 && x >= 0 && x < W && y >= 0 && y < H, "row %ld: %.80s", rows, s);
    }
    cr_assert_eq(rows, n, "%ld rows for %ld objects", rows, n);
    free(csv);

    fits_image m;
    static const char *const maps[] = { "back.fits", "rms.fits", "labels.fits" };
    for (int k = 0; k < 3; k++) {
        path_in(&r, maps[k], path, sizeof path);
        cr_assert_eq(fits_read_image(path, 0, &m, err, sizeof err), 0, "%s", err);
        cr_assert(m.width == W && m.height == H && m.bitpix == (k == 2 ? 32 : -32), "%s", maps[k]);
        float lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < W * H; i++) lo = fminf(lo, ((float *)m.data)[i]), hi = fmaxf(hi, ((float *)m.data)[i]);
        if (k == 0) cr_assert(lo > 0.2f && hi < 0.3f, "background from %g to %g, 0.25 added", (double)lo, (double)hi);
        if (k == 1) cr_assert(lo > 0 && hi < 0.01f, "rms from %g to %g (noise sigma 1e-3)", (double)lo, (double)hi);
        if (k == 2)
            cr_assert(lo == 0 && (long)hi == n, "labels from %g to %g for %ld objects", (double)lo, (double)hi, n);
        fits_image_free(&m);
    }
    path_in(&r, "sky.reg", path, sizeof path);
    char *reg = test_read_file(path);
    cr_assert(strstr(reg, "\nimage\nellipse("), "%s", reg);
    free(reg);
    teardown(&r);
}

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

BACKEND_TEST(cli_sources, demo_recovers_the_injected_sources)
{
    cli_run r;
    setup(&r, *kind);
    run_cli(&r, *kind, "--demo", "--size", "512", "--seed", "3", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    const char *line = strstr(r.stdout_text, "recovered ");
    cr_assert(line, "%s", r.stdout_text);
    long got = 0, of = 0;
    cr_assert_eq(sscanf(line, "recovered %ld of %ld", &got, &of), 2, "%s", line);
    /* 19 sources at the default density; all but the faintest one or two (near 5 sigma) are found */
    cr_assert(of == 19 && got >= 16, "recovered %ld of %ld", got, of);
    cr_assert_eq(count_files_except(&r, NULL), 0, "the demo wrote files it was not asked for");
    teardown(&r);
}

/* ---- bad input: exit 1, one line, nothing written ---------------------------------------------------------------- */

BACKEND_TEST(cli_sources, all_nan_image_is_refused)
{
    cli_run r;
    setup(&r, *kind);
    float img[40 * 30];
    for (int i = 0; i < 40 * 30; i++) img[i] = NAN;
    char path[600], err[600];
    path_in(&r, "blank.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 40, 30, err, sizeof err), 0, "%s", err);
    run_cli(&r, *kind, "blank.fits", OUTPUT_ARGS, NULL);
    assert_refused(&r, "blank.fits", "blank or NaN");
    teardown(&r);
}

/* No pixel has a value: the message says which kind of pixel filled the image, NaN or infinite or both. */
static void image_without_a_value_is_refused(gpuws_backend_kind kind, float a, float b, const char *why)
{
    cli_run r;
    setup(&r, kind);
    float img[40 * 30];
    for (int i = 0; i < 40 * 30; i++) img[i] = i % 2 ? a : b;
    char path[600], err[600];
    path_in(&r, "novalue.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 40, 30, err, sizeof err), 0, "%s", err);
    run_cli(&r, kind, "novalue.fits", OUTPUT_ARGS, NULL);
    assert_refused(&r, "novalue.fits", why);
    teardown(&r);
}

BACKEND_TEST(cli_sources, all_inf_image_is_refused_as_infinite)
{
    image_without_a_value_is_refused(*kind, INFINITY, -INFINITY,
                                     "every pixel of the 40 x 30 image (HDU 1) is infinite (");
}

BACKEND_TEST(cli_sources, nan_and_inf_image_is_refused_with_the_counts)
{
    image_without_a_value_is_refused(*kind, NAN, INFINITY, "is blank, NaN or infinite: 600 blank or NaN, 600 infinite");
}

/* Noise (one pixel +inf when asked), run with --kappa when given: refused with why, naming what happened. */
static void noise_is_refused(gpuws_backend_kind kind, bool one_inf, const char *kappa, const char *why)
{
    cli_run r;
    setup(&r, kind);
    float img[64 * 48];
    test_fill_uniform_f32(img, 64 * 48, test_seed(false), -1e-3, 1e-3);
    if (one_inf) img[100] = INFINITY;
    char path[600], err[600];
    path_in(&r, "noise.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 64, 48, err, sizeof err), 0, "%s", err);
    if (kappa) run_cli(&r, kind, "noise.fits", "--method", "workshop", "--kappa", kappa, OUTPUT_ARGS, NULL);
    else run_cli(&r, kind, "noise.fits", "--method", "workshop", OUTPUT_ARGS, NULL);
    assert_refused(&r, "noise.fits", why);
    cr_assert(!strstr(r.stderr_text, "constant"), "%s", r.stderr_text);
    teardown(&r);
}

/* --kappa 1e-300 on noise: the clipping keeps no pixel because kappa is too small, and the message says that (not
 * "a constant image, or +-inf"). */
BACKEND_TEST(cli_sources, kappa_too_small_for_the_data_is_named)
{
    noise_is_refused(*kind, false, "1e-300", "kappa = 1e-300 is too small for these data");
}

BACKEND_TEST(cli_sources, one_infinite_pixel_is_named)
{
    noise_is_refused(*kind, true, NULL, "1 of the 3072 non-NaN pixels is +-inf");
}

BACKEND_TEST(cli_sources, truncated_file_is_refused)
{
    cli_run r;
    setup(&r, *kind);
    float img[64 * 64];
    test_fill_uniform_f32(img, 64 * 64, test_seed(false), -1, 1);
    char path[600], err[600];
    path_in(&r, "cut.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 64, 64, err, sizeof err), 0, "%s", err);
    cr_assert_eq(truncate(path, 2880 + 4000), 0); /* the header block and part of the 16 KiB of pixels */
    run_cli(&r, *kind, "cut.fits", OUTPUT_ARGS, NULL);
    assert_refused(&r, "cut.fits", "cut.fits");
    teardown(&r);
}

BACKEND_TEST(cli_sources, text_file_and_missing_file_are_refused)
{
    cli_run r;
    setup(&r, *kind);
    char path[600];
    path_in(&r, "notes.fits", path, sizeof path);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("not a FITS file\n", f);
    fclose(f);
    run_cli(&r, *kind, "notes.fits", OUTPUT_ARGS, NULL);
    assert_refused(&r, "notes.fits", "notes.fits");
    run_cli(&r, *kind, "absent.fits", OUTPUT_ARGS, NULL);
    assert_refused(&r, "notes.fits", "absent.fits");
    teardown(&r);
}

#ifdef HAVE_FITSIO_H
/* A file with one image of `naxis` axes of the given lengths, written with cfitsio directly (fits_io.h writes only
 * 2-D images). */
static void write_raw_image(const char *path, int naxis, long *naxes)
{
    fitsfile *f;
    int status = 0;
    unlink(path);
    fits_create_diskfile(&f, path, &status);
    fits_create_img(f, FLOAT_IMG, naxis, naxes, &status);
    long n = 1;
    for (int i = 0; i < naxis; i++) n *= naxes[i];
    if (n > 0) {
        float *v = calloc((size_t)n, sizeof *v);
        for (long i = 0; i < n; i++) v[i] = (float)(i % 17);
        fits_write_img(f, TFLOAT, 1, n, v, &status);
        free(v);
    }
    fits_close_file(f, &status);
    cr_assert_eq(status, 0, "cfitsio status %d writing %s", status, path);
}

static void raw_image_is_refused(gpuws_backend_kind kind, const char *name, int naxis, long *naxes, const char *why)
{
    cli_run r;
    setup(&r, kind);
    char path[600];
    path_in(&r, name, path, sizeof path);
    write_raw_image(path, naxis, naxes);
    run_cli(&r, kind, name, OUTPUT_ARGS, NULL);
    assert_refused(&r, name, why);
    teardown(&r);
}

BACKEND_TEST(cli_sources, cube_is_refused)
{
    long naxes[3] = { 16, 12, 3 };
    raw_image_is_refused(*kind, "cube.fits", 3, naxes, "3-D");
}

/* A plane of a cube is read when asked for, and one past the last is refused. */
BACKEND_TEST(cli_sources, plane_of_a_cube_is_read_when_asked_for)
{
    cli_run r;
    setup(&r, *kind);
    char path[600];
    path_in(&r, "cube.fits", path, sizeof path);
    long naxes[4] = { 16, 12, 3, 1 };
    write_raw_image(path, 4, naxes);
    run_cli(&r, *kind, "cube.fits", "--method", "workshop", "--plane", "2", "--catalog", "cat.csv", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "cube.fits: HDU 1, plane 2 of 3, 16 x 12 pixels"), "%s", r.stdout_text);
    path_in(&r, "cat.csv", path, sizeof path);
    cr_assert_eq(unlink(path), 0, "no catalogue written");
    run_cli(&r, *kind, "cube.fits", "--method", "workshop", "--plane", "3", OUTPUT_ARGS, NULL);
    assert_refused(&r, "cube.fits", "HDU 1 has 3 planes (0 to 2): there is no plane 3");
    teardown(&r);
}

/* A FITS file written byte by byte: the cards (each padded to 80 characters, END added), then the 32-bit pixels
 * given in this machine's order, big-endian in the file. */
static void write_float_file(const char *path, const char *const *cards, const uint32_t *px, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    size_t bytes = 0;
    for (const char *const *c = cards;; c++) {
        fprintf(f, "%-80s", *c ? *c : "END");
        bytes += 80;
        if (!*c) break;
    }
    for (; bytes % 2880; bytes++) fputc(' ', f);
    for (size_t i = 0; i < n; i++) {
        const unsigned char b[4] = { (unsigned char)(px[i] >> 24), (unsigned char)(px[i] >> 16),
                                     (unsigned char)(px[i] >> 8), (unsigned char)px[i] };
        fwrite(b, 1, 4, f);
    }
    for (bytes = n * 4; bytes % 2880; bytes++) fputc(0, f);
    cr_assert_eq(fclose(f), 0);
}

/* 32-bit float pixels come back bit for bit, whatever the bits (NaNs with payloads, -0, infinities, subnormals),
 * from any plane of a cube and from planes larger than one reading thread's share; with BZERO they are scaled. */
Test(cli_sources, float_pixels_are_read_bit_for_bit)
{
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    enum { W = 2048, H = 1100, PLANES = 2 };
    const size_t n = (size_t)W * H;
    uint32_t *px = malloc(PLANES * n * sizeof *px);
    cr_assert(px);
    uint64_t seed = test_seed(false);
    for (size_t i = 0; i < PLANES * n; i++) px[i] = (uint32_t)test_rand_u64(&seed);
    px[0] = 0x7fc00001u, px[1] = 0xff800000u, px[2] = 0x80000000u, px[3] = 0x00000001u, px[n - 1] = 0x7f800000u;
    char dir[256], path[300], err[600];
    snprintf(dir, sizeof dir, "%s/gpuws-floats-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cube.fits", dir);
    static const char *const cube[] = { "SIMPLE  =                    T",
                                        "BITPIX  =                  -32",
                                        "NAXIS   =                    3",
                                        "NAXIS1  =                 2048",
                                        "NAXIS2  =                 1100",
                                        "NAXIS3  =                    2",
                                        NULL };
    write_float_file(path, cube, px, PLANES * n);
    for (long long plane = 0; plane < PLANES; plane++) {
        const fits_read_request req = { 0, plane, 0 };
        fits_image img;
        cr_assert_eq(fits_read_image_at(path, 0, &req, &img, err, sizeof err), 0, "%s", err);
        cr_assert(img.width == W && img.height == H && !img.is_double);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(((const uint32_t *)img.data)[i], px[plane * n + i], "plane %lld, pixel %zu: %08x for %08x",
                         plane, i, ((const uint32_t *)img.data)[i], px[plane * n + i]);
        fits_image_free(&img);
    }
    static const char *const scaled[] = { "SIMPLE  =                    T",
                                          "BITPIX  =                  -32",
                                          "NAXIS   =                    2",
                                          "NAXIS1  =                    4",
                                          "NAXIS2  =                    1",
                                          "BZERO   =                  0.5",
                                          NULL };
    const float v[4] = { 1.0f, 2.25f, -3.5f, 0.0f };
    uint32_t vb[4];
    memcpy(vb, v, sizeof v);
    snprintf(path, sizeof path, "%s/scaled.fits", dir);
    write_float_file(path, scaled, vb, 4);
    fits_image img;
    cr_assert_eq(fits_read_image(path, 0, &img, err, sizeof err), 0, "%s", err);
    const float *got = img.data;
    cr_assert(got[0] == 1.5f && got[1] == 2.75f && got[2] == -3.0f && got[3] == 0.5f, "%g %g %g %g", got[0], got[1],
              got[2], got[3]);
    fits_image_free(&img);
    unlink(path);
    snprintf(path, sizeof path, "%s/cube.fits", dir);
    unlink(path);
    rmdir(dir);
    free(px);
}

/* --hdu naming a table, or past the last HDU: refused, nothing written. */
BACKEND_TEST(cli_sources, hdu_that_is_not_an_image_is_refused)
{
    cli_run r;
    setup(&r, *kind);
    char path[600];
    path_in(&r, "tab.fits", path, sizeof path);
    fitsfile *f;
    int status = 0;
    char *ttype[] = { "FLUX" }, *tform[] = { "1E" }, *tunit[] = { "Jy" };
    fits_create_diskfile(&f, path, &status);
    fits_create_img(f, FLOAT_IMG, 0, NULL, &status);
    fits_create_tbl(f, BINARY_TBL, 0, 1, ttype, tform, tunit, "T", &status);
    fits_close_file(f, &status);
    cr_assert_eq(status, 0);
    run_cli(&r, *kind, "tab.fits", "--hdu", "2", OUTPUT_ARGS, NULL);
    assert_refused(&r, "tab.fits", "HDU 2 is a binary table, not an image");
    run_cli(&r, *kind, "tab.fits", "--hdu", "3", OUTPUT_ARGS, NULL);
    assert_refused(&r, "tab.fits", "there is no HDU 3: the file has 2");
    teardown(&r);
}

/* ---- world coordinates ------------------------------------------------------------------------------------------ */

/* An image of zeros with one symmetric source centred on pixel (20, 15) (0-based), its WCS's reference pixel (FITS
 * 1-based CRPIX 21, 16): the source's world position is CRVAL. ctype1 NULL: no WCS keywords. */
static void write_wcs_image(const char *path, const char *ctype1, const char *ctype2)
{
    enum { W = 48, H = 36 };
    float img[W * H];
    for (int i = 0; i < W * H; i++) img[i] = 0;
    img[15 * W + 20] = 10;
    img[15 * W + 19] = img[15 * W + 21] = img[14 * W + 20] = img[16 * W + 20] = 5;
    img[14 * W + 19] = img[14 * W + 21] = img[16 * W + 19] = img[16 * W + 21] = 2;
    fitsfile *f;
    int status = 0;
    long naxes[2] = { W, H };
    unlink(path);
    fits_create_diskfile(&f, path, &status);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &status);
    fits_write_img(f, TFLOAT, 1, W * H, img, &status);
    if (ctype1) {
        double crpix1 = 21, crpix2 = 16, crval1 = 150.25, crval2 = -2.5, cdelt1 = -1.0 / 3600, cdelt2 = 1.0 / 3600;
        fits_write_key(f, TSTRING, "CTYPE1", (void *)ctype1, NULL, &status);
        fits_write_key(f, TSTRING, "CTYPE2", (void *)ctype2, NULL, &status);
        fits_write_key(f, TDOUBLE, "CRPIX1", &crpix1, NULL, &status);
        fits_write_key(f, TDOUBLE, "CRPIX2", &crpix2, NULL, &status);
        fits_write_key(f, TDOUBLE, "CRVAL1", &crval1, NULL, &status);
        fits_write_key(f, TDOUBLE, "CRVAL2", &crval2, NULL, &status);
        fits_write_key(f, TDOUBLE, "CDELT1", &cdelt1, NULL, &status);
        fits_write_key(f, TDOUBLE, "CDELT2", &cdelt2, NULL, &status);
    }
    fits_close_file(f, &status);
    cr_assert_eq(status, 0, "cfitsio status %d writing %s", status, path);
}

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

/* ---- many images ------------------------------------------------------------------------------------------------ */

/* Two good images (one named in a list) and a missing one: each good one's outputs under --outdir, nothing for the
 * missing one, a progress line per image, exit 1 at the end. */
BACKEND_TEST(cli_sources, many_images_each_written_and_a_failure_reported)
{
    cli_run r;
    setup(&r, *kind);
    char path[600], out[600];
    path_in(&r, "good1.fits", path, sizeof path);
    write_wcs_image(path, "RA---TAN", "DEC--TAN");
    path_in(&r, "good2.fits", path, sizeof path);
    write_wcs_image(path, NULL, NULL);
    path_in(&r, "list.txt", path, sizeof path);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("# the list\nabsent.fits\n\ngood2.fits\n", f);
    fclose(f);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    run_cli(&r, *kind, "good1.fits", "@list.txt", "--outdir", "out", "--write", "catalog,labels", "--method",
            "workshop", "--threshold-abs", "1", NULL);
    cr_assert_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "[1/3] good1.fits\n") && strstr(r.stdout_text, "[2/3] absent.fits\n") &&
                  strstr(r.stdout_text, "[3/3] good2.fits\n") && strstr(r.stdout_text, "3 images: 2 done, 1 failed"),
              "%s", r.stdout_text);
    cr_assert(strstr(r.stderr_text, "[2/3] absent.fits failed: nothing written for it"), "%s", r.stderr_text);
    static const char *const want[] = { "good1.csv", "good1.labels.fits", "good2.csv", "good2.labels.fits" };
    DIR *d = opendir(out);
    cr_assert(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int known = 0;
        for (size_t k = 0; k < 4; k++) known |= !strcmp(e->d_name, want[k]);
        cr_assert(known, "unexpected %s in the output directory", e->d_name);
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        unlink(path);
        n++;
    }
    closedir(d);
    rmdir(out);
    cr_assert_eq(n, 4, "%d outputs, wanted 4", n);
    teardown(&r);
}

/* A Rice-compressed image whose ZTILE2 is 0: cfitsio divides by zero reading its header (SIGFPE), in the reading
 * child. */
static void write_crashing_fits(const char *path)
{
    fitsfile *f;
    int st = 0, px[64];
    for (int i = 0; i < 64; i++) px[i] = (i * 37) % 101;
    long naxes[2] = { 8, 8 };
    fits_create_diskfile(&f, path, &st);
    fits_set_compression_type(f, RICE_1, &st);
    fits_create_img(f, LONG_IMG, 2, naxes, &st);
    fits_write_img(f, TINT, 1, 64, px, &st);
    fits_close_file(f, &st);
    cr_assert_eq(st, 0, "cfitsio status %d", st);
    FILE *fp = fopen(path, "r+b");
    cr_assert(fp);
    char card[80];
    long pos = 0;
    while (fread(card, 1, 80, fp) == 80 && strncmp(card, "ZTILE2  =", 9)) pos += 80;
    cr_assert(!strncmp(card, "ZTILE2  =", 9), "no ZTILE2 card");
    fseek(fp, pos + 10, SEEK_SET);
    fprintf(fp, "%20d", 0);
    fclose(fp);
}

/* Each image is read (by its own child process) while the one before it is processed: one that crashes cfitsio in
 * the middle fails alone, and the images around it get the catalogues they get on their own, byte for byte. */
BACKEND_TEST(cli_sources, many_images_read_ahead_past_one_that_crashes_the_reader)
{
    cli_run r;
    setup(&r, *kind);
    char path[600], out[600], single[600];
    write_sky(&r, "a.fits", 200, 150, 11, 8);
    write_sky(&r, "c.fits", 180, 170, 12, 9);
    path_in(&r, "b.fits", path, sizeof path);
    write_crashing_fits(path);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    run_cli(&r, *kind, "a.fits", "b.fits", "c.fits", "--outdir", "out", NULL);
    cr_assert_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "[1/3] a.fits\n") && strstr(r.stdout_text, "[2/3] b.fits\n") &&
                  strstr(r.stdout_text, "[3/3] c.fits\n") && strstr(r.stdout_text, "3 images: 2 done, 1 failed"),
              "%s", r.stdout_text);
    cr_assert(strstr(r.stderr_text, "b.fits: cfitsio crashed reading it (signal 8): corrupt file\n") &&
                  strstr(r.stderr_text, "[2/3] b.fits failed: nothing written for it"),
              "%s", r.stderr_text);
    static const char *const names[] = { "a", "c" };
    for (size_t k = 0; k < 2; k++) {
        char image[32], csv[32];
        snprintf(image, sizeof image, "%s.fits", names[k]);
        snprintf(csv, sizeof csv, "%s1.csv", names[k]);
        run_cli(&r, *kind, image, "--catalog", csv, NULL);
        cr_assert_eq(r.status, 0, "%s alone: exit %d; stderr: %s", image, r.status, r.stderr_text);
        snprintf(path, sizeof path, "%s/%s.csv", out, names[k]);
        path_in(&r, csv, single, sizeof single);
        assert_same_file(path, single);
        cr_assert_eq(unlink(path), 0);
    }
    cr_assert_eq(rmdir(out), 0, "more than a.csv and c.csv in the output directory");
    teardown(&r);
}

BACKEND_TEST(cli_sources, zero_size_image_is_refused)
{
    long naxes[2] = { 0, 5 };
    raw_image_is_refused(*kind, "empty.fits", 2, naxes, "zero-length axis");
}
#endif

/* An output that cannot be written (its directory is missing): refused before any work, no other output written. */
BACKEND_TEST(cli_sources, one_failed_output_leaves_no_output)
{
    cli_run r;
    setup(&r, *kind);
    float img[64 * 48];
    test_fill_uniform_f32(img, 64 * 48, test_seed(false), -1e-3, 1e-3);
    img[20 * 64 + 30] = img[20 * 64 + 31] = 1.0f; /* one source */
    char path[600], err[600];
    path_in(&r, "small.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 64, 48, err, sizeof err), 0, "%s", err);
    run_cli(&r, *kind, "small.fits", "--catalog", "cat.csv", "--labels", "no/such/dir/labels.fits", NULL);
    assert_refused(&r, "small.fits", "no/such/dir/labels.fits");
    teardown(&r);
}

/* ---- --filter FILE: SExtractor's .conv format ------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *text;   /* the file's content */
    int status;         /* the exit status */
    const char *output; /* in stdout (status 0) or stderr */
} conv_case;

static const conv_case conv_cases[] = {
    { "sextractor_default", "CONV NORM\n# 3x3 all-ground\n1 2 1\n2 4 2\n1 2 1\n", 0, "filter 3 x 3 kernel" },
    { "nonorm_5x3", "CONV NONORM\n0 1 2 1 0\n1 2 4 2 1\n0 1 2 1 0\n", 0, "filter 5 x 3 kernel" },
    { "no_conv_line", "1 2 1\n2 4 2\n1 2 1\n", 2, "the first line is not CONV NORM or CONV NONORM" },
    { "even_width", "CONV NORM\n1 1\n1 1\n", 2, "2 x 2: sides must be odd" },
    { "ragged_rows", "CONV NORM\n1 2 1\n2 4\n1 2 1\n", 2, "row 2 has 2 values, row 1 3" },
    { "zero_sum", "CONV NONORM\n-1 2 -1\n", 2, "the values do not have a positive sum" },
    { "a_word", "CONV NORM\n1 x 1\n", 2, "'x' is not a number" },
    { "only_the_conv_line", "CONV NORM\n", 2, "no rows of numbers after CONV" },
    { "empty", "", 2, "is not a SExtractor convolution kernel: empty" },
};

BACKEND_TEST(cli_sources, filter_files_are_read_or_refused)
{
    cli_run r;
    setup(&r, *kind);
    float img[96 * 80];
    test_fill_uniform_f32(img, 96 * 80, test_seed(false), -1e-3, 1e-3);
    img[40 * 96 + 50] = 1, img[40 * 96 + 51] = img[41 * 96 + 50] = 0.5f;
    char path[600], err[600];
    path_in(&r, "img.fits", path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 96, 80, err, sizeof err), 0, "%s", err);
    for (size_t k = 0; k < sizeof conv_cases / sizeof conv_cases[0]; k++) {
        const conv_case *c = &conv_cases[k];
        path_in(&r, "k.conv", path, sizeof path);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(c->text, f);
        fclose(f);
        run_cli(&r, *kind, "img.fits", "--filter", "k.conv", "--catalog", "cat.csv", NULL);
        cr_assert_eq(r.status, c->status, "%s: exit %d; stderr: %s", c->name, r.status, r.stderr_text);
        cr_assert(strstr(c->status ? r.stderr_text : r.stdout_text, c->output), "%s: no '%s' in %s%s", c->name,
                  c->output, r.stdout_text, r.stderr_text);
        path_in(&r, "cat.csv", path, sizeof path);
        cr_assert_eq(unlink(path) == 0, c->status == 0, "%s: a catalogue %s", c->name,
                     c->status ? "was written" : "is missing");
    }
    teardown(&r);
}

/* ---- usage: exit 2 ------------------------------------------------------------------------------------------------ */

Test(cli_sources, bad_options_exit_2_with_usage)
{
    cli_run r;
    setup(&r, GPUWS_BACKEND_CPU);
    static const char *const cases[][4] = {
        { "--bogus", NULL },
        { "img.fits", "--threshold", "3", "--threshold-abs" }, /* incomplete, and both thresholds */
        { "img.fits", "--connectivity", "6", NULL },
        { "img.fits", "--kappa", "zero", NULL },
        { "img.fits", "--threshold", "-1", NULL },
        { "--demo", "img.fits", NULL },
        { NULL },
        { "a.fits", "b.fits", NULL },
        { "--demo", "--size", "3", NULL },
        { "img.fits", "--catalog", "img.fits", NULL },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_cli(&r, GPUWS_BACKEND_CPU, cases[k][0], cases[k][1], cases[k][2], cases[k][3], NULL);
        cr_assert_eq(r.status, 2, "case %zu (%s ...): exit %d; stderr: %s", k, cases[k][0] ? cases[k][0] : "", r.status,
                     r.stderr_text);
        cr_assert(*r.stderr_text, "case %zu: nothing on stderr", k);
    }
    run_cli(&r, GPUWS_BACKEND_CPU, "img.fits", "--threshold", "3", "--threshold-abs", "0.1", NULL);
    cr_assert(r.status == 2 && strstr(r.stderr_text, "exclude"), "%s", r.stderr_text);
    run_cli(&r, GPUWS_BACKEND_CPU, "--help", NULL);
    cr_assert(r.status == 0 && strstr(r.stdout_text, "usage: gpuws sources"), "--help: exit %d", r.status);
    cr_assert_eq(count_files_except(&r, NULL), 0);
    teardown(&r);
}
