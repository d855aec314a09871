/* gpuws label: the command-line tool (the built binary, GPUWS_CLI) on FITS files. What it writes must be
 * scipy.ndimage.label's labels of the image's foreground (SciPy's golden files, tests/data/label_*.bin, and the
 * reference labelling), as an int32 image; streamed in bands and over two devices, the same bytes as in-core; bad
 * usage exits 2, errors exit 1, and neither leaves a file behind. */
#include "label_support.h"
#include "label/label_ref.h"
#include "fits_io.h"
#include "run_cli.h"
#include "sky_wcs.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a directory per test, the command run in it ---------------------------------------------------------------- */

static char dir[256];

/* A fresh directory; skips (or fails when required) like test_open for the backend. */
static void setup(gpuws_backend_kind kind)
{
    gpuws_context_destroy(test_open(kind));
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    test_dir_make("cli-label", dir, sizeof dir);
}

/* Removes the directory (after a passing test only: a failure leaves the files to look at). */
static void teardown(void) { test_dir_remove(dir); }

static const char *at(const char *name)
{
    static char buf[8][600];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* `GPUWS_BACKEND=<backend> [env] gpuws label <argv>` in the directory: its exit code; *log its stdout and stderr. */
static int label(gpuws_backend_kind kind, const char *env, const char *const *argv, char **log)
{
    char backend[64];
    snprintf(backend, sizeof backend, "GPUWS_BACKEND=%s", test_backend_name(kind));
    const char *envs[3] = { backend, env, NULL };
    const char *args[16] = { "label" };
    for (int i = 0; argv[i]; i++) {
        cr_assert_lt(i, 14);
        args[i + 1] = argv[i];
    }
    return test_run_cli_in(dir, 120, args, envs, log);
}

/* The names in the directory besides those given (NULL-terminated): "" when there are none. */
static const char *others(const char *const *keep)
{
    static char list[1024];
    list[0] = 0;
    DIR *d = opendir(dir);
    cr_assert(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        bool kept = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        for (int i = 0; keep[i] && !kept; i++) kept = !strcmp(e->d_name, keep[i]);
        if (!kept) snprintf(list + strlen(list), sizeof list - strlen(list), "%s ", e->d_name);
    }
    closedir(d);
    return list;
}

/* LABELS.fits read back: an int32 image of w x h (asserted); the labels (malloc'd). */
static int32_t *read_labels(const char *name, size_t w, size_t h)
{
    char err[512];
    fits_image img;
    cr_assert_eq(fits_read_image(at(name), 1, &img, err, sizeof err), 0, "%s", err);
    cr_assert(img.width == w && img.height == h, "%s is %zu x %zu, not %zu x %zu", name, img.height, img.width, h, w);
    cr_assert_eq(img.bitpix, 32, "%s has BITPIX %d, not 32 (int32 labels)", name, img.bitpix);
    int32_t *l = malloc(w * h * sizeof *l);
    cr_assert(l);
    for (size_t i = 0; i < w * h; i++) l[i] = (int32_t)((const double *)img.data)[i];
    fits_image_free(&img);
    return l;
}

/* The whole file (malloc'd) and its size. */
static unsigned char *file_bytes(const char *name, size_t *n)
{
    FILE *f = fopen(at(name), "rb");
    cr_assert(f, "cannot open %s", name);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    cr_assert(b && fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

static void assert_same_file(const char *a, const char *b, const char *what)
{
    size_t na, nb;
    unsigned char *x = file_bytes(a, &na), *y = file_bytes(b, &nb);
    cr_assert(na == nb && memcmp(x, y, na) == 0, "%s: %s (%zu bytes) differs from %s (%zu bytes)", what, b, nb, a, na);
    free(x);
    free(y);
}

/* A golden mask as an int32 FITS image whose foreground holds values other than 1 (negative ones too): any
 * non-zero pixel is foreground. */
static void write_golden_mask(const golden *g, const char *name)
{
    const size_t n = g->width * g->height;
    int32_t *m = malloc(n * sizeof *m);
    cr_assert(m);
    for (size_t i = 0; i < n; i++) m[i] = g->mask[i] ? (int32_t)(i % 7) - 3 + (i % 7 == 3 ? 5 : 0) : 0;
    char err[512];
    cr_assert_eq(fits_write_image(at(name), FITS_I32, m, g->width, g->height, err, sizeof err), 0, "%s", err);
    free(m);
}

/* ---- labels ------------------------------------------------------------------------------------------------ */

/* A mask FITS as it is: the labels are SciPy's (4- and 8-connectivity), and the summary gives N and the size. */
BACKEND_TEST(cli_label, writes_scipy_labels_of_a_mask)
{
    setup(*kind);
    static const char *const cases[] = { "random_97x131_d55", "spiral_97x97", "diagonals_40x50",
                                         "blobs_120x100",     "zeros_30x30",  "one_1x1" };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        golden g;
        golden_load(cases[c], &g);
        write_golden_mask(&g, "mask.fits");
        for (int conn = 4; conn <= 8; conn += 4) {
            char *log, what[128], summary[160];
            const char *argv[] = { "mask.fits", "-o", "labels.fits", conn == 8 ? "--connectivity" : NULL, "8", NULL };
            cr_assert_eq(label(*kind, NULL, argv, &log), 0, "%s, connectivity %d:\n%s", cases[c], conn, log);
            const size_t n = conn == 4 ? g.n4 : g.n8;
            snprintf(summary, sizeof summary, "gpuws label: %zu component%s of ", n, n == 1 ? "" : "s");
            cr_assert(strstr(log, summary), "the summary gives %zu components:\n%s", n, log);
            snprintf(summary, sizeof summary, " foreground pixels in %zu x %zu, 1 band on ", g.height, g.width);
            cr_assert(strstr(log, summary), "the summary gives the size, one band and the device:\n%s", log);
            free(log);
            int32_t *got = read_labels("labels.fits", g.width, g.height);
            snprintf(what, sizeof what, "%s %s, connectivity %d", test_backend_name(*kind), cases[c], conn);
            assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, g.width * g.height, what);
            free(got);
        }
        remove(at("mask.fits"));
        golden_free(&g);
    }
    teardown();
}

/* --max-device-memory small enough for several bands: the bands line, SciPy's labels, and the very bytes of the
 * in-core run; over two contexts of the device (GPUWS_DEVICE=0,0) the same bytes again. */
BACKEND_TEST(cli_label, streamed_in_bands_and_over_two_devices_writes_the_in_core_bytes)
{
    setup(*kind);
    golden g;
    golden_load("random_97x131_d55", &g);
    write_golden_mask(&g, "mask.fits");
    gpuws_context *ctx = test_open(*kind);
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = 16384;
    size_t rows, bands;
    TEST_OK(gpuws_label_host_bands(ctx, g.width, g.height, &o, &rows, &bands));
    gpuws_context_destroy(ctx);
    cr_assert_geq(bands, 3, "16K splits the 97 x 131 mask into %zu bands", bands);
    for (int conn = 4; conn <= 8; conn += 4) {
        const char *c = conn == 4 ? "4" : "8";
        char *log, line[200];
        const char *whole[] = { "mask.fits", "-o", "whole.fits", "--connectivity", c, NULL };
        cr_assert_eq(label(*kind, NULL, whole, &log), 0, "the in-core run failed:\n%s", log);
        cr_assert(!strstr(log, "streaming"), "the in-core run streams:\n%s", log);
        free(log);
        const char *banded[] = { "mask.fits",           "-o",  "banded.fits", "--connectivity", c,
                                 "--max-device-memory", "16K", NULL };
        cr_assert_eq(label(*kind, NULL, banded, &log), 0, "the streamed run failed:\n%s", log);
        snprintf(line, sizeof line, "streaming through the device in %zu bands of up to %zu of %zu rows", bands, rows,
                 g.height);
        cr_assert(strstr(log, line), "no '%s':\n%s", line, log);
        snprintf(line, sizeof line, " foreground pixels in %zu x %zu, %zu bands on ", g.height, g.width, bands);
        cr_assert(strstr(log, line), "no '%s':\n%s", line, log);
        free(log);
        int32_t *got = read_labels("banded.fits", g.width, g.height);
        assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, g.width * g.height, "streamed");
        free(got);
        assert_same_file("whole.fits", "banded.fits", "streamed in bands");
        cr_assert_eq(label(*kind, "GPUWS_DEVICE=0,0", banded, &log), 0, "the run on two devices failed:\n%s", log);
        snprintf(line, sizeof line, "streaming through 2 devices in %zu bands of up to %zu of %zu rows", bands, rows,
                 g.height);
        cr_assert(strstr(log, line), "no '%s':\n%s", line, log);
        cr_assert(strstr(log, " bands on 2 devices ("), "the summary names two devices:\n%s", log);
        free(log);
        assert_same_file("whole.fits", "banded.fits", "streamed over two devices");
    }
    golden_free(&g);
    teardown();
}

/* The foreground: pixels != 0 by default, pixels > T with --threshold T (a negative T too), NaN never, in f32 and
 * f64 images; the labels are the reference labelling's of that mask. */
static void threshold_case(gpuws_backend_kind kind, bool f64)
{
    setup(kind);
    enum { H = 45, W = 61 };
    double d[H * W];
    test_fill_uniform_f64(d, H * W, test_seed(false), -1, 1);
    for (int i = 0; i < H * W; i++) {
        if (i % 5 == 0) d[i] = 0; /* background by default */
        if (i % 11 == 0) d[i] = NAN;
    }
    float f[H * W];
    for (int i = 0; i < H * W; i++) f[i] = (float)d[i], d[i] = f64 ? d[i] : f[i];
    char err[512];
    cr_assert_eq(
        fits_write_image(at("img.fits"), f64 ? FITS_F64 : FITS_F32, f64 ? (void *)d : (void *)f, W, H, err, sizeof err),
        0, "%s", err);
    static const struct {
        const char *threshold; /* NULL: the default */
        double t;
        const char *connectivity;
    } cases[] = {
        { NULL, 0, "4" }, { NULL, 0, "8" }, { "0.25", 0.25, "4" }, { "-0.5", -0.5, "4" }, { "1e-1", 0.1, "8" }
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint8_t mask[H * W];
        int32_t want[H * W];
        for (int i = 0; i < H * W; i++) mask[i] = cases[c].threshold ? d[i] > cases[c].t : d[i] != 0 && !isnan(d[i]);
        const int conn = atoi(cases[c].connectivity);
        const size_t n = gpuws_label_ref(mask, W, H, conn, want);
        cr_assert_gt(n, 0, "the case has components to label");
        const char *argv[] = { "img.fits",
                               "-o",
                               "labels.fits",
                               "--connectivity",
                               cases[c].connectivity,
                               cases[c].threshold ? "--threshold" : NULL,
                               cases[c].threshold,
                               NULL };
        char *log, what[160], summary[64];
        cr_assert_eq(label(kind, NULL, argv, &log), 0, "%s:\n%s", cases[c].threshold, log);
        snprintf(what, sizeof what, "foreground: pixels %s %s, connectivity %s",
                 cases[c].threshold ? ">" : "!=", cases[c].threshold ? cases[c].threshold : "0", cases[c].connectivity);
        cr_assert(strstr(log, what), "no '%s':\n%s", what, log);
        snprintf(summary, sizeof summary, "gpuws label: %zu component%s of ", n, n == 1 ? "" : "s");
        cr_assert(strstr(log, summary), "no '%s':\n%s", summary, log);
        free(log);
        int32_t *got = read_labels("labels.fits", W, H);
        assert_same_labels(got, want, W, H * W, what);
        free(got);
    }
    teardown();
}

BACKEND_TEST(cli_label, foreground_is_nonzero_or_above_the_threshold_in_f32) { threshold_case(*kind, false); }

BACKEND_TEST(cli_label, foreground_is_nonzero_or_above_the_threshold_in_f64) { threshold_case(*kind, true); }

/* An int32 image is compared as its integers, not rounded to float: 16777217 > 16777216 (the same float). */
Test(cli_label, an_int32_image_is_compared_exactly)
{
    setup(GPUWS_BACKEND_CPU);
    const int32_t px[6] = { 16777217, 16777216, 16777217, 0, -16777217, 16777217 };
    char err[512], *log;
    cr_assert_eq(fits_write_image(at("big.fits"), FITS_I32, px, 3, 2, err, sizeof err), 0, "%s", err);
    const char *argv[] = { "big.fits", "-o", "labels.fits", "--threshold", "16777216", NULL };
    cr_assert_eq(label(GPUWS_BACKEND_CPU, NULL, argv, &log), 0, "%s", log);
    free(log);
    int32_t *got = read_labels("labels.fits", 3, 2);
    const int32_t want[6] = { 1, 0, 2, 0, 0, 2 };
    assert_same_labels(got, want, 3, 6, "BITPIX 32 against 16777216");
    free(got);
    teardown();
}

/* The input's celestial WCS goes into LABELS.fits (where gpuws has wcslib). */
Test(cli_label, keeps_the_input_wcs)
{
    setup(GPUWS_BACKEND_CPU);
    if (!sky_wcs_available()) cr_skip_test("gpuws was built without wcslib: LABELS.fits has no WCS");
    static const char *const keys[] = { "CTYPE1  = 'RA---TAN'", "CTYPE2  = 'DEC--TAN'", "CRPIX1  = 4.5",
                                        "CRPIX2  = 2.5",        "CRVAL1  = 150.25",     "CRVAL2  = 2.125",
                                        "CDELT1  = -0.001",     "CDELT2  = 0.001" };
    enum { NK = sizeof keys / sizeof *keys };
    char cards[NK * 80 + 1], err[512], *log;
    for (int k = 0; k < NK; k++) snprintf(cards + 80 * k, 81, "%-80s", keys[k]);
    const float px[8 * 4] = { 1, 1, 0, 0, 2, 0, 0, 3 };
    cr_assert_eq(fits_write_image_cards(at("sky.fits"), FITS_F32, px, 8, 4, cards, NK, err, sizeof err), 0, "%s", err);
    const char *argv[] = { "sky.fits", "-o", "labels.fits", NULL };
    cr_assert_eq(label(GPUWS_BACKEND_CPU, NULL, argv, &log), 0, "%s", log);
    free(log);
    fits_read_request req = FITS_READ_REQUEST_INIT;
    req.want_header = 1;
    fits_image img;
    cr_assert_eq(fits_read_image_at(at("labels.fits"), 1, &req, &img, err, sizeof err), 0, "%s", err);
    char why[300];
    sky_wcs *w = sky_wcs_create(&img, why, sizeof why);
    cr_assert(w, "LABELS.fits has no WCS: %s", why);
    double ra, dec;
    cr_assert_eq(sky_wcs_world(w, 3.5, 1.5, &ra, &dec), 0);
    cr_assert(fabs(ra - 150.25) < 1e-9 && fabs(dec - 2.125) < 1e-9, "CRPIX maps to (%.12g, %.12g)", ra, dec);
    sky_wcs_destroy(w);
    fits_image_free(&img);
    teardown();
}

/* ---- refusals ---------------------------------------------------------------------------------------------- */

/* Bad usage exits 2 before any work, errors exit 1; neither leaves anything in the directory but the inputs. */
Test(cli_label, bad_usage_and_bad_input_exit_nonzero_and_write_nothing)
{
    setup(GPUWS_BACKEND_CPU);
    char err[512];
    const float px[12] = { 1, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1 };
    cr_assert_eq(fits_write_image(at("img.fits"), FITS_F32, px, 4, 3, err, sizeof err), 0, "%s", err);
    const char *names[] = { "a", "b" };
    const char *units[] = { "", "" };
    const int integer[] = { 1, 0 };
    const double values[] = { 1, 2.5 };
    cr_assert_eq(
        fits_write_table(at("table.fits"), "OBJECTS", 2, names, units, integer, 1, values, NULL, 0, err, sizeof err), 0,
        "%s", err);
    static const struct {
        const char *argv[10];
        int exit_code;
        const char *message;
    } rows[] = {
        { { "img.fits", NULL }, 2, "needs IN.fits and -o LABELS.fits" },
        { { "-o", "out.fits", NULL }, 2, "needs IN.fits and -o LABELS.fits" },
        { { "img.fits", "-o", "out.fits", "--connectivity", "6", NULL }, 2, "--connectivity must be 4 or 8" },
        { { "img.fits", "-o", "out.fits", "--connectivity", NULL }, 2, "--connectivity needs a value: 4 or 8" },
        { { "img.fits", "-o", "out.fits", "--max-device-memory", "12Q", NULL }, 2, "needs a size in bytes" },
        { { "img.fits", "-o", "out.fits", "--max-device-memory", "-1", NULL }, 2, "needs a size in bytes" },
        { { "img.fits", "-o", "out.fits", "--threshold", "nan", NULL }, 2, "--threshold needs a number, not 'nan'" },
        { { "img.fits", "-o", "out.fits", "--threshold", "1", "--threshold", "2", NULL }, 2, "given twice" },
        { { "img.fits", "-o", "out.fits", "--frobnicate", NULL }, 2, "unknown option '--frobnicate'" },
        { { "img.fits", "img.fits", "-o", "out.fits", NULL }, 2, "unexpected argument 'img.fits'" },
        { { "img.fits", "-o", "./img.fits", NULL }, 2, "is the input" },
        { { "img.fits", "-o", "out.fits", "--max-device-memory", "20", NULL },
          1,
          "a device budget of 20 bytes is too small" },
        { { "table.fits", "-o", "out.fits", NULL }, 1, "table.fits" },
        { { "missing.fits", "-o", "out.fits", NULL }, 1, "missing.fits" },
        { { "img.fits", "-o", "out.fits", "--plane", "1", NULL }, 1, "there is no plane 1" },
    };
    const char *keep[] = { "img.fits", "table.fits", NULL };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        char *log;
        const int code = label(GPUWS_BACKEND_CPU, NULL, rows[r].argv, &log);
        cr_assert_eq(code, rows[r].exit_code, "row %zu (%s ...): exit %d, not %d:\n%s", r, rows[r].argv[0], code,
                     rows[r].exit_code, log);
        cr_assert(strstr(log, rows[r].message), "row %zu: no '%s':\n%s", r, rows[r].message, log);
        if (code == 2 && !strstr(log, "is the input")) /* a usage error, but of the files: no usage printed */
            cr_assert(strstr(log, "usage: gpuws label"), "row %zu: no usage:\n%s", r, log);
        cr_assert(!strstr(log, " image, foreground"), "row %zu began its work:\n%s", r, log);
        free(log);
        cr_assert_str_empty(others(keep), "row %zu left %s", r, others(keep));
    }
    char *log;
    const char *help[] = { "--help", NULL };
    cr_assert_eq(label(GPUWS_BACKEND_CPU, NULL, help, &log), 0);
    cr_assert(strstr(log, "usage: gpuws label IN.fits -o LABELS.fits"), "%s", log);
    free(log);
    teardown();
}

/* The command is listed with the others. */
Test(cli_label, is_a_gpuws_command)
{
    char *log;
    const char *argv[] = { "--help", NULL };
    cr_assert_eq(test_run_cli(argv, NULL, &log), 0);
    cr_assert(strstr(log, "  label      connected components of a FITS image"), "%s", log);
    free(log);
}
