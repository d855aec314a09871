/* `gpuws sources --method workshop --max-device-memory SIZE` (see cli_sources.h): the pipeline from host memory
 * (gpuws_find_sources_host), its labelling in bands of rows through the device, over two contexts of one device with
 * GPUWS_DEVICE=0,0, gives the outputs of the in-core run; so does the in-core run over GPUWS_DEVICE=0,0,0 (the image's
 * rows split between three contexts).
 *
 * What is compared: the labels FITS file byte for byte (the same labels, the same header); the CSV catalogue byte for
 * byte, which prints id, npix (the same integers), x and y with 6 decimals and flux and peak with 9 significant
 * digits: the host sums the same pixels in another order (a few ulps of a double apart) and its κσ's mean and std
 * may differ from the device's in the last ulps, neither of which reaches the printed digits (nor the float
 * threshold the mask is cut at) short of a value within 1e-16 of a rounding boundary; the DS9 regions byte for byte
 * (the same circles and title). The clipping line on stdout prints the mean and std with 6 digits: the same too. */
#include "cli_sources.h"

#ifdef HAVE_FITSIO_H
/* stdout's line that starts with `prefix` (a copy, malloc'd), or NULL. */
static char *line_of(const char *text, const char *prefix)
{
    const char *s = strstr(text, prefix);
    if (!s) return NULL;
    const size_t n = strcspn(s, "\n");
    char *l = malloc(n + 1);
    cr_assert(l);
    memcpy(l, s, n);
    l[n] = 0;
    return l;
}

static void expect_same_files(cli_run *r, const char *other, size_t files);

/* The in-core run's files, then the host pipeline's with budget (and env set while it runs), compared as above;
 * stderr must say the labelling went in bands through `devices` devices. input: 6 arguments, NULL after the last. */
static void expect_host_run_is_in_core_run(cli_run *r, gpuws_backend_kind kind, const char *budget, const char *env,
                                           const char *devices, const char *const *input)
{
    run_cli(r, kind, "--catalog", "core.csv", "--labels", "core.labels.fits", "--regions", "core.reg", input[0],
            input[1], input[2], input[3], input[4], input[5], NULL);
    cr_assert_eq(r->status, 0, "in-core: exit %d; stderr: %s", r->status, r->stderr_text);
    cr_assert(strstr(r->stdout_text, "times (ms, device events)"), "%s", r->stdout_text);
    char *clip = line_of(r->stdout_text, "sigma clipping"), *sources = line_of(r->stdout_text, "sources: ");
    cr_assert(clip && sources, "%s", r->stdout_text);
    if (env) putenv((char *)env);
    run_cli(r, kind, "--catalog", "host.csv", "--labels", "host.labels.fits", "--regions", "host.reg",
            "--max-device-memory", budget, input[0], input[1], input[2], input[3], input[4], input[5], NULL);
    if (env) unsetenv("GPUWS_DEVICE");
    cr_assert_eq(r->status, 0, "host: exit %d; stderr: %s", r->status, r->stderr_text);
    cr_assert(strstr(r->stdout_text, "times (ms, host clock)"), "%s", r->stdout_text);
    char want[64];
    snprintf(want, sizeof want, "labelling through %s", devices);
    cr_assert(strstr(r->stderr_text, want) && strstr(r->stderr_text, " bands of up to "),
              "stderr does not say '%s ... bands': %s", want, r->stderr_text);
    char *clip2 = line_of(r->stdout_text, "sigma clipping"), *sources2 = line_of(r->stdout_text, "sources: ");
    cr_assert(clip2 && sources2 && !strcmp(clip, clip2) && !strcmp(sources, sources2), "in-core:\n%s\n%s\nhost:\n%s",
              clip, sources, r->stdout_text);
    expect_same_files(r, "host", 3);
    free(clip), free(sources), free(clip2), free(sources2);
}

/* The in-core run's catalogue, labels and regions (core.*), and with files 5 its background and rms maps, against
 * those of the run named `other` (other.csv, ...), byte for byte. */
static void expect_same_files(cli_run *r, const char *other, size_t files)
{
    static const char *const ext[5] = { "csv", "labels.fits", "reg", "back.fits", "rms.fits" };
    for (size_t k = 0; k < files; k++) {
        char a[600], b[600], fa[64], fb[64];
        snprintf(fa, sizeof fa, "core.%s", ext[k]);
        snprintf(fb, sizeof fb, "%s.%s", other, ext[k]);
        path_in(r, fa, a, sizeof a);
        path_in(r, fb, b, sizeof b);
        if (k == 1) {
            char *x = NULL, *y = NULL;
            size_t nx = 0, ny = 0;
            FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
            cr_assert(f && g);
            x = malloc(1 << 22), y = malloc(1 << 22);
            cr_assert(x && y);
            nx = fread(x, 1, 1 << 22, f), ny = fread(y, 1, 1 << 22, g);
            fclose(f), fclose(g);
            cr_assert(nx > 2880 && nx == ny && !memcmp(x, y, nx), "%s and %s differ", a, b);
            free(x), free(y);
        } else {
            assert_same_file(a, b);
        }
    }
}

/* A sky of 160 x 640 pixels, 16 sources: the labels (5 bytes a pixel, 512 KB) in bands of a few dozen rows. */
BACKEND_TEST(cli_sources_host, out_of_core_workshop_gives_the_in_core_outputs)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 77, 16);
    const char *const input[6] = { "sky.fits", "--method", "workshop", "--timings" };
    expect_host_run_is_in_core_run(&r, *kind, "96K", NULL, "1 device", input);
    teardown(&r);
}

/* The same with the bands shared between two contexts of one device. */
BACKEND_TEST(cli_sources_host, two_contexts_give_the_in_core_outputs)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 78, 16);
    const char *const input[6] = { "sky.fits", "--method", "workshop", "--connectivity", "8" };
    expect_host_run_is_in_core_run(&r, *kind, "96K", "GPUWS_DEVICE=0,0", "2 devices", input);
    teardown(&r);
}

/* In core over three contexts of one device (GPUWS_DEVICE=0,0,0: the image's rows split between them,
 * gpuws_find_sources with more_contexts): the one device's clipping and sources lines and files. */
BACKEND_TEST(cli_sources_host, in_core_over_three_contexts_gives_the_outputs_of_one)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 79, 16);
    run_cli(&r, *kind, "--catalog", "core.csv", "--labels", "core.labels.fits", "--regions", "core.reg", "sky.fits",
            "--method", "workshop", NULL);
    cr_assert_eq(r.status, 0, "one device: exit %d; stderr: %s", r.status, r.stderr_text);
    char *clip = line_of(r.stdout_text, "sigma clipping"), *sources = line_of(r.stdout_text, "sources: ");
    cr_assert(clip && sources, "%s", r.stdout_text);
    putenv("GPUWS_DEVICE=0,0,0");
    run_cli(&r, *kind, "--catalog", "three.csv", "--labels", "three.labels.fits", "--regions", "three.reg", "sky.fits",
            "--method", "workshop", NULL);
    unsetenv("GPUWS_DEVICE");
    cr_assert_eq(r.status, 0, "three contexts: exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "times (ms, host clock, the devices at once)"), "%s", r.stdout_text);
    char *clip3 = line_of(r.stdout_text, "sigma clipping"), *sources3 = line_of(r.stdout_text, "sources: ");
    cr_assert(clip3 && sources3 && !strcmp(clip, clip3) && !strcmp(sources, sources3),
              "one device:\n%s\n%s\nthree:\n%s", clip, sources, r.stdout_text);
    expect_same_files(&r, "three", 3);
    free(clip), free(sources), free(clip3), free(sources3);
    teardown(&r);
}

/* --demo reads its sky back from the device for the host pipeline. */
BACKEND_TEST(cli_sources_host, demo_out_of_core_gives_the_in_core_outputs)
{
    cli_run r;
    setup(&r, *kind);
    const char *const input[6] = { "--demo", "--size", "384", "--seed", "5" };
    expect_host_run_is_in_core_run(&r, *kind, "160K", NULL, "1 device", input);
    teardown(&r);
}
#endif

/* Usage errors (exit 2, a message naming the problem): a size that is not one, or none. */
BACKEND_TEST(cli_sources_host, bad_budget_is_a_usage_error)
{
    cli_run r;
    setup(&r, *kind);
    run_cli(&r, *kind, "--demo", "--max-device-memory", "12Q", NULL);
    cr_assert_eq(r.status, 2, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stderr_text, "--max-device-memory needs a size in bytes (512M, 2G, 1048576), not '12Q'"), "%s",
              r.stderr_text);
    run_cli(&r, *kind, "--demo", "--max-device-memory", NULL);
    cr_assert_eq(r.status, 2, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert_eq(count_files_except(&r, NULL), 0, "files were left behind");
    teardown(&r);
}

#ifdef HAVE_FITSIO_H
/* `--method extract --max-device-memory`: gpuws_extract_host making the background, the extraction in bands of
 * rows (stderr says how many), give the in-core run's catalogue, labels, regions, background and rms maps byte
 * for byte, on one device and over two contexts of one (GPUWS_DEVICE=0,0: 17 bands each). 53 bytes a pixel of a
 * band with its two rows of halo (45, the background and the rms; no mask, as the sky has no NaN) beside the
 * background's plan of 19200 bytes (5 x 20 meshes): 200K holds 21 rows of 160 pixels, so bands of 19; on OpenCL and
 * CUDA 12 bytes a pixel more for a second band's inputs (the image and both maps, uploaded while the device works on
 * the band before): 17 rows, so bands of 15. */
BACKEND_TEST(cli_sources_host, out_of_core_extraction_gives_the_in_core_outputs)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 81, 16);
    run_cli(&r, *kind, "--catalog", "core.csv", "--labels", "core.labels.fits", "--regions", "core.reg", "--background",
            "core.back.fits", "--rms", "core.rms.fits", "sky.fits", "--back-size", "32", NULL);
    cr_assert_eq(r.status, 0, "in-core: exit %d; stderr: %s", r.status, r.stderr_text);
    char *objects = line_of(r.stdout_text, "objects: ");
    cr_assert(objects, "%s", r.stdout_text);
    run_cli(&r, *kind, "--catalog", "host.csv", "--labels", "host.labels.fits", "--regions", "host.reg", "--background",
            "host.back.fits", "--rms", "host.rms.fits", "sky.fits", "--back-size", "32", "--max-device-memory", "200K",
            NULL);
    cr_assert_eq(r.status, 0, "host: exit %d; stderr: %s", r.status, r.stderr_text);
    char *objects2 = line_of(r.stdout_text, "objects: ");
    cr_assert(objects2 && !strcmp(objects, objects2), "in-core: %s\nhost:\n%s", objects, r.stdout_text);
    const char *bands =
        *kind == GPUWS_BACKEND_CPU ? "34 bands of up to 19 of 640 rows" : "43 bands of up to 15 of 640 rows";
    char want[120];
    snprintf(want, sizeof want, "the extraction from host memory, in %s\n", bands);
    cr_assert(strstr(r.stderr_text, want), "%s", r.stderr_text);
    expect_same_files(&r, "host", 5);
    free(objects2);
    putenv("GPUWS_DEVICE=0,0");
    run_cli(&r, *kind, "--catalog", "two.csv", "--labels", "two.labels.fits", "--regions", "two.reg", "--background",
            "two.back.fits", "--rms", "two.rms.fits", "sky.fits", "--back-size", "32", "--max-device-memory", "200K",
            NULL);
    unsetenv("GPUWS_DEVICE");
    cr_assert_eq(r.status, 0, "two devices: exit %d; stderr: %s", r.status, r.stderr_text);
    objects2 = line_of(r.stdout_text, "objects: ");
    cr_assert(objects2 && !strcmp(objects, objects2), "in-core: %s\ntwo devices:\n%s", objects, r.stdout_text);
    snprintf(want, sizeof want, "in %s over 2 devices", bands);
    cr_assert(strstr(r.stderr_text, want), "%s", r.stderr_text);
    expect_same_files(&r, "two", 5);
    free(objects), free(objects2);
    teardown(&r);
}

/* `--phot-apertures` with the extraction from host memory: the apertures summed on the host's image and maps
 * (gpuws_sum_circle_host, in windows of rows within the budget) give the in-core run's columns byte for byte. */
BACKEND_TEST(cli_sources_host, out_of_core_apertures_give_the_in_core_columns)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 83, 16);
    run_cli(&r, *kind, "--catalog", "core.csv", "sky.fits", "--back-size", "32", "--phot-apertures", "3,7.5", NULL);
    cr_assert_eq(r.status, 0, "in-core: exit %d; stderr: %s", r.status, r.stderr_text);
    char *phot = line_of(r.stdout_text, "aperture photometry: ");
    cr_assert(phot && strstr(phot, "x 2 diameters (3, 7.5 pixels)"), "%s", r.stdout_text);
    run_cli(&r, *kind, "--catalog", "host.csv", "sky.fits", "--back-size", "32", "--phot-apertures", "3,7.5",
            "--max-device-memory", "200K", NULL);
    cr_assert_eq(r.status, 0, "host: exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stderr_text, *kind == GPUWS_BACKEND_CPU ? "the extraction from host memory, in 34 bands"
                                                               : "the extraction from host memory, in 43 bands"),
              "%s", r.stderr_text);
    char *phot2 = line_of(r.stdout_text, "aperture photometry: ");
    cr_assert(phot2 && !strcmp(phot, phot2), "in-core: %s\nhost:\n%s", phot, r.stdout_text);
    char path[600];
    path_in(&r, "core.csv", path, sizeof path);
    FILE *f = fopen(path, "r");
    char header[4096] = "";
    cr_assert(f && fgets(header, sizeof header, f), "%s", path);
    fclose(f);
    cr_assert(strstr(header, "flux_aper_3") && strstr(header, "fluxerr_aper_7p5") && strstr(header, "flag_aper_7p5"),
              "%s", header);
    expect_same_files(&r, "host", 1);
    free(phot), free(phot2);
    teardown(&r);
}

/* The extraction's budget below one band: exit 1 before any output, the minimum named, nothing written. */
BACKEND_TEST(cli_sources_host, extraction_budget_below_one_band_is_refused)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 82, 4);
    run_cli(&r, *kind, "sky.fits", "--catalog", "cat.csv", "--labels", "labels.fits", "--max-device-memory", "20K",
            NULL);
    assert_refused(&r, "sky.fits", "is less than one band needs");
    teardown(&r);
}

/* A budget below one band of one row: exit 1 before any work, the minimum named, nothing written. */
BACKEND_TEST(cli_sources_host, budget_below_one_row_is_refused)
{
    cli_run r;
    setup(&r, *kind);
    write_sky(&r, "sky.fits", 160, 640, 79, 4);
    run_cli(&r, *kind, "sky.fits", "--method", "workshop", "--catalog", "cat.csv", "--max-device-memory", "100", NULL);
    assert_refused(&r, "sky.fits", "too small: one band of one row");
    teardown(&r);
}
#endif
