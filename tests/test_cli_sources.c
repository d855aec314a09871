/* `gpuws sources` (see cli_sources.h): both methods' outputs, consistent with each other and the injected sky, and
 * the demo; images without a value, noise the clipping cannot use and an output that cannot be written refused with
 * nothing written; --filter files read or refused; bad options. */
#include "cli_sources.h"

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
