/* gpuws convolve: the command-line tool (the built binary, GPUWS_CLI) on FITS files and its demo.
 * What it writes must be what the library computes (the reference, within the bound test_convolve2d.c states);
 * bad input exits 2 (usage) or 1 (error) and leaves no output file. */
#include "support.h"
#include "convolve2d/convolve2d_ref.h"
#include "fits_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *cli(void)
{
    const char *p = getenv("GPUWS_CLI");
    if (!p || !*p) cr_skip_test("GPUWS_CLI does not name the gpuws binary (ctest sets it)");
    return p;
}

/* Runs `GPUWS_BACKEND=<backend> gpuws convolve <args>` and returns its exit code; stdout goes to out_path. */
static int run_cli(const char *backend, const char *args, const char *out_path)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "GPUWS_BACKEND=%s '%s' convolve %s >'%s' 2>'%s.err'", backend, cli(), args, out_path, out_path);
    const int r = system(cmd);
    cr_assert(r != -1 && WIFEXITED(r), "could not run: %s", cmd);
    return WEXITSTATUS(r);
}

/* Files in a fresh folder per test process; remove_tmp() deletes it when a test passed. */
static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[16][512];
    static int k;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/gpuws-cli-convolve-XXXXXX");
        cr_assert_not_null(mkdtemp(tmpdir));
    }
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void remove_tmp(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (tmpdir[0] && system(cmd) == 0) tmpdir[0] = 0;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Writes image and kernel FITS files of random values, runs the tool, and checks OUT against the reference. */
static void files_match_reference(gpuws_backend_kind kind, bool f64)
{
    gpuws_context_destroy(test_open(kind)); /* skips, or fails under GPUWS_REQUIRE, when the backend is missing */
    enum { H = 23, W = 31, KH = 5, KW = 4 };
    double image[H * W], kernel[KH * KW];
    test_fill_uniform_f64(image, H * W, test_seed(false), -1, 1);
    test_fill_uniform_f64(kernel, KH * KW, 7, -1, 1);
    float image32[H * W], kernel32[KH * KW];
    for (int i = 0; i < H * W; i++) image32[i] = (float)image[i], image[i] = f64 ? image[i] : image32[i];
    for (int i = 0; i < KH * KW; i++) kernel32[i] = (float)kernel[i], kernel[i] = f64 ? kernel[i] : kernel32[i];
    char err[512];
    const char *in = tmp_path("in.fits"), *ker = tmp_path("kernel.fits"), *out = tmp_path("out.fits");
    cr_assert_eq(fits_write_image(in, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)image : (void *)image32, W, H, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_write_image(ker, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)kernel : (void *)kernel32, KW, KH, err, sizeof err), 0, "%s", err);
    char args[2048];
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm", in, ker, out);
    cr_assert_eq(run_cli(test_backend_name(kind), args, tmp_path("stdout.txt")), 0, "gpuws convolve %s failed", args);
    fits_image got;
    cr_assert_eq(fits_read_image(out, -1, &got, err, sizeof err), 0, "%s", err);
    cr_assert(got.width == W && got.height == H, "same mode keeps the image's %d x %d, got %zu x %zu", W, H, got.width, got.height);
    cr_assert_eq(got.bitpix, f64 ? -64 : -32, "output BITPIX %d", got.bitpix);
    gpuws_convolve2d_options o = {GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0};
    gpuws__conv2d_geometry g;
    TEST_OK(gpuws__conv2d_geometry_init(H, W, 0, KH, KW, &o, &g));
    double want[H * W], mag[H * W], aimage[H * W], akernel[KH * KW];
    gpuws_convolve2d_ref_f64(&g, image, kernel, want, 0, H);
    for (int i = 0; i < H * W; i++) aimage[i] = fabs(image[i]);
    for (int i = 0; i < KH * KW; i++) akernel[i] = fabs(kernel[i]);
    gpuws_convolve2d_ref_f64(&g, aimage, akernel, mag, 0, H);
    const double u = f64 ? 0x1p-53 : 0x1p-24; /* the bound of test_convolve2d.c */
    for (int i = 0; i < H * W; i++) {
        const double v = f64 ? ((double *)got.data)[i] : ((float *)got.data)[i];
        cr_assert(fabs(v - want[i]) <= 2 * (KH * KW + 1) * u * mag[i] + (f64 ? 0 : 0x1p-24 * fabs(want[i])),
                  "%s: pixel %d = %.17g, reference %.17g", test_backend_name(kind), i, v, want[i]);
    }
    fits_image_free(&got);
    remove_tmp();
}

BACKEND_TEST(cli_convolve, writes_what_the_reference_computes_in_f32) { files_match_reference(*kind, false); }

BACKEND_TEST(cli_convolve, writes_what_the_reference_computes_in_f64) { files_match_reference(*kind, true); }

Test(cli_convolve, bad_input_exits_nonzero_and_writes_nothing)
{
    char err[512];
    const double one = 1.0;
    const char *k = tmp_path("k.fits"), *out = tmp_path("never.fits"), *log = tmp_path("log.txt");
    cr_assert_eq(fits_write_image(k, FITS_F64, &one, 1, 1, err, sizeof err), 0, "%s", err);
    char args[2048];
    snprintf(args, sizeof args, "'%s' '%s' -o '%s'", tmp_path("missing.fits"), k, out);
    cr_assert_eq(run_cli("cpu", args, log), 1, "a missing input is an error (exit 1)");
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode diagonal", k, k, out);
    cr_assert_eq(run_cli("cpu", args, log), 2, "an unknown mode is a usage error (exit 2)");
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --frobnicate", k, k, out);
    cr_assert_eq(run_cli("cpu", args, log), 2, "an unknown option is a usage error (exit 2)");
    snprintf(args, sizeof args, "'%s' -o '%s'", k, out);
    cr_assert_eq(run_cli("cpu", args, log), 2, "a missing kernel file is a usage error (exit 2)");
    /* 'valid' with a 1 x 3 image and a 3 x 1 kernel: SciPy's ValueError */
    const double row[3] = {1, 2, 3};
    const char *wide = tmp_path("wide.fits"), *tall = tmp_path("tall.fits");
    cr_assert_eq(fits_write_image(wide, FITS_F64, row, 3, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_write_image(tall, FITS_F64, row, 1, 3, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode valid", wide, tall, out);
    cr_assert_eq(run_cli("cpu", args, log), 1, "SciPy's 'valid' shape error is an error (exit 1)");
    cr_assert(!exists(out), "a failed run left %s behind", out);
    cr_assert_eq(run_cli("cpu", "--help", log), 0);
    remove_tmp();
}

Test(cli_convolve, demo_times_the_workshop_case_against_the_reference)
{
    const char *log = tmp_path("demo.txt");
    cr_assert_eq(run_cli("cpu", "--demo --size 64 --repeat 3 --dtype f32", log), 0, "the demo failed (see %s.err)", log);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    char text[8192] = "";
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cr_assert(strstr(text, "scalar reference") && strstr(text, "speed-up") && strstr(text, "convolve1d"),
              "the demo prints both times and the speed-up:\n%s", text);
    cr_assert(strstr(text, "max |device - reference| / max |reference| = 0"),
              "deltas 16 apart and a 15-tap kernel make every output exact:\n%s", text);
    remove_tmp();
}
