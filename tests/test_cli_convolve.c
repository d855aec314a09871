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
    snprintf(cmd, sizeof cmd, "GPUWS_BACKEND=%s '%s' convolve %s >'%s' 2>'%s.err'", backend, cli(), args, out_path,
             out_path);
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
    cr_assert_eq(
        fits_write_image(in, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)image : (void *)image32, W, H, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(fits_write_image(ker, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)kernel : (void *)kernel32, KW, KH, err,
                                  sizeof err),
                 0, "%s", err);
    char args[2048];
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm", in, ker, out);
    cr_assert_eq(run_cli(test_backend_name(kind), args, tmp_path("stdout.txt")), 0, "gpuws convolve %s failed", args);
    fits_image got;
    cr_assert_eq(fits_read_image(out, -1, &got, err, sizeof err), 0, "%s", err);
    cr_assert(got.width == W && got.height == H, "same mode keeps the image's %d x %d, got %zu x %zu", W, H, got.width,
              got.height);
    cr_assert_eq(got.bitpix, f64 ? -64 : -32, "output BITPIX %d", got.bitpix);
    gpuws_convolve2d_options o = { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0 };
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

/* --separable on a kernel that is outer(col, row) (rounded to the file's type): the tool factors it on the host and
 * writes what the 2-D path writes, within the two paths' bounds added (test_convolve2d.c's for the 2-D sum,
 * (kh + kw) products for the separable one, and a few u for the factors' roundings), for each mode and boundary. */
static void separable_matches_2d(gpuws_backend_kind kind, bool f64)
{
    gpuws_context_destroy(test_open(kind));
    enum { H = 23, W = 31, KH = 5, KW = 4 };
    double image[H * W], col[KH], row[KW], kernel[KH * KW];
    test_fill_uniform_f64(image, H * W, test_seed(false), -1, 1);
    test_fill_uniform_f64(col, KH, 11, -1, 1);
    test_fill_uniform_f64(row, KW, 12, -1, 1);
    float image32[H * W], kernel32[KH * KW];
    for (int j = 0; j < KH; j++)
        for (int k = 0; k < KW; k++) kernel[j * KW + k] = col[j] * row[k];
    for (int i = 0; i < H * W; i++) image32[i] = (float)image[i], image[i] = f64 ? image[i] : image32[i];
    for (int i = 0; i < KH * KW; i++) kernel32[i] = (float)kernel[i], kernel[i] = f64 ? kernel[i] : kernel32[i];
    char err[512], in[512], ker[512]; /* copies: tmp_path's buffers are reused after 16 calls */
    snprintf(in, sizeof in, "%s", tmp_path("in.fits"));
    snprintf(ker, sizeof ker, "%s", tmp_path("kernel.fits"));
    cr_assert_eq(
        fits_write_image(in, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)image : (void *)image32, W, H, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(fits_write_image(ker, f64 ? FITS_F64 : FITS_F32, f64 ? (void *)kernel : (void *)kernel32, KW, KH, err,
                                  sizeof err),
                 0, "%s", err);
    static const struct {
        const char *args;
        gpuws_convolve2d_options opt;
    } cases[] = {
        { "--mode same --boundary symm", { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0 } },
        { "--mode full --boundary fill --fill 0.25", { 0, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.25 } },
        { "--mode valid", { 0, GPUWS_CONVOLVE_VALID, GPUWS_BOUNDARY_FILL, 0.0 } },
        { "--mode same --boundary wrap", { 0, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0 } },
    };
    const double u = f64 ? 0x1p-53 : 0x1p-24;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *out2 = tmp_path("out2d.fits"), *outs = tmp_path("outsep.fits");
        char args[2048];
        snprintf(args, sizeof args, "'%s' '%s' -o '%s' %s", in, ker, out2, cases[c].args);
        cr_assert_eq(run_cli(test_backend_name(kind), args, tmp_path("stdout.txt")), 0, "gpuws convolve %s failed",
                     args);
        snprintf(args, sizeof args, "'%s' '%s' -o '%s' %s --separable", in, ker, outs, cases[c].args);
        cr_assert_eq(run_cli(test_backend_name(kind), args, tmp_path("stdout.txt")), 0, "gpuws convolve %s failed",
                     args);
        gpuws__conv2d_geometry g;
        TEST_OK(gpuws__conv2d_geometry_init(H, W, 0, KH, KW, &cases[c].opt, &g));
        fits_image a2, as;
        cr_assert_eq(fits_read_image(out2, -1, &a2, err, sizeof err), 0, "%s", err);
        cr_assert_eq(fits_read_image(outs, -1, &as, err, sizeof err), 0, "%s", err);
        cr_assert(as.width == g.ow && as.height == g.oh && a2.width == g.ow && a2.height == g.oh,
                  "%s: %zu x %zu (separable) and %zu x %zu (2-D), want %zu x %zu", cases[c].args, as.height, as.width,
                  a2.height, a2.width, g.oh, g.ow);
        cr_assert_eq(as.bitpix, f64 ? -64 : -32, "output BITPIX %d", as.bitpix);
        const size_t n = g.oh * g.ow;
        double *want = malloc(n * sizeof *want), *mag = malloc(n * sizeof *mag);
        double aimage[H * W], akernel[KH * KW];
        cr_assert(want && mag);
        gpuws_convolve2d_ref_f64(&g, image, kernel, want, 0, g.oh);
        for (int i = 0; i < H * W; i++) aimage[i] = fabs(image[i]);
        for (int i = 0; i < KH * KW; i++) akernel[i] = fabs(kernel[i]);
        gpuws_convolve2d_options aopt = cases[c].opt;
        aopt.fill_value = fabs(aopt.fill_value);
        gpuws__conv2d_geometry ga;
        TEST_OK(gpuws__conv2d_geometry_init(H, W, 0, KH, KW, &aopt, &ga));
        gpuws_convolve2d_ref_f64(&ga, aimage, akernel, mag, 0, g.oh);
        for (size_t i = 0; i < n; i++) {
            const double vs = f64 ? ((double *)as.data)[i] : ((float *)as.data)[i];
            const double v2 = f64 ? ((double *)a2.data)[i] : ((float *)a2.data)[i];
            const double last = f64 ? 0 : 0x1p-24 * fabs(want[i]); /* the f32 file's rounding */
            const double sep_bound = 2 * (KH + KW + 4) * u * mag[i] + last;
            const double bound_2d = 2 * (KH * KW + 1) * u * mag[i] + last;
            cr_assert(fabs(vs - want[i]) <= sep_bound, "%s, %s: separable pixel %zu = %.17g, reference %.17g",
                      test_backend_name(kind), cases[c].args, i, vs, want[i]);
            cr_assert(fabs(vs - v2) <= sep_bound + bound_2d, "%s, %s: separable pixel %zu = %.17g, 2-D %.17g",
                      test_backend_name(kind), cases[c].args, i, vs, v2);
        }
        free(want);
        free(mag);
        fits_image_free(&a2);
        fits_image_free(&as);
    }
    remove_tmp();
}

BACKEND_TEST(cli_convolve, separable_writes_what_the_2d_path_writes_in_f32) { separable_matches_2d(*kind, false); }

BACKEND_TEST(cli_convolve, separable_writes_what_the_2d_path_writes_in_f64) { separable_matches_2d(*kind, true); }

/* --separable on a kernel that is not outer(col, row) (beyond 1e-6 of max |K|), or that holds NaN: exit 1, the
 * reason on stderr, no output file. Within the tolerance, and for an all-zero kernel, it writes the result. */
Test(cli_convolve, separable_refuses_a_kernel_that_does_not_factor)
{
    enum { H = 9, W = 8, KH = 5, KW = 4 };
    char err[512], args[2048], *text;
    double image[H * W], kernel[KH * KW], col[KH], row[KW];
    test_fill_uniform_f64(image, H * W, 3, -1, 1);
    test_fill_uniform_f64(col, KH, 11, 0.5, 1);
    test_fill_uniform_f64(row, KW, 12, 0.5, 1);
    const char *in = tmp_path("in.fits"), *ker = tmp_path("kernel.fits"), *out = tmp_path("never.fits");
    const char *log = tmp_path("log.txt");
    char log_err[600];
    snprintf(log_err, sizeof log_err, "%s.err", log);
    cr_assert_eq(fits_write_image(in, FITS_F64, image, W, H, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --separable", in, ker, out);

    /* random values: far from any outer product */
    test_fill_uniform_f64(kernel, KH * KW, 7, -1, 1);
    cr_assert_eq(fits_write_image(ker, FITS_F64, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_cli("cpu", args, log), 1, "a kernel that does not factor is an error (exit 1)");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "the kernel is not separable: largest deviation from outer(col, row) is ") &&
                  strstr(text, "drop --separable"),
              "the message says why and what to do:\n%s", text);
    free(text);
    cr_assert(!exists(out), "a refused kernel left %s behind", out);

    /* an outer product with one entry off by 1e-5 of max |K|: beyond the tolerance */
    double kmax = 0;
    for (int j = 0; j < KH; j++)
        for (int k = 0; k < KW; k++) {
            kernel[j * KW + k] = col[j] * row[k];
            if (fabs(kernel[j * KW + k]) > kmax) kmax = fabs(kernel[j * KW + k]);
        }
    kernel[2 * KW + 1] += 1e-5 * kmax;
    remove(ker); /* fits_write_image creates new files only */
    cr_assert_eq(fits_write_image(ker, FITS_F64, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_cli("cpu", args, log), 1, "a deviation of 1e-5 max |K| is beyond the tolerance");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "the kernel is not separable"), "%s", text);
    free(text);
    cr_assert(!exists(out), "a refused kernel left %s behind", out);

    /* NaN: refused with its own message */
    kernel[2 * KW + 1] = NAN;
    remove(ker); /* fits_write_image creates new files only */
    cr_assert_eq(fits_write_image(ker, FITS_F64, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_cli("cpu", args, log), 1, "a kernel holding NaN cannot be factored (exit 1)");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "NaN or Inf") && strstr(text, "row 2, column 1") && strstr(text, "drop --separable"), "%s",
              text);
    free(text);
    cr_assert(!exists(out), "a refused kernel left %s behind", out);

    /* 1e-8 of max |K| off: within the tolerance, so it runs */
    kernel[2 * KW + 1] = col[2] * row[1] + 1e-8 * kmax;
    remove(ker); /* fits_write_image creates new files only */
    cr_assert_eq(fits_write_image(ker, FITS_F64, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_cli("cpu", args, log), 0, "a deviation of 1e-8 max |K| is within the tolerance");
    cr_assert(exists(out), "no output written");
    remove(out);

    /* all zero: col = row = 0, an all-zero result */
    for (int i = 0; i < KH * KW; i++) kernel[i] = 0;
    remove(ker); /* fits_write_image creates new files only */
    cr_assert_eq(fits_write_image(ker, FITS_F64, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_cli("cpu", args, log), 0, "an all-zero kernel is separable");
    fits_image got;
    cr_assert_eq(fits_read_image(out, -1, &got, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < got.width * got.height; i++)
        cr_assert_eq(((double *)got.data)[i], 0.0, "pixel %zu of an all-zero kernel's result is %g", i,
                     ((double *)got.data)[i]);
    fits_image_free(&got);

    cr_assert_eq(run_cli("cpu", "--demo --separable", log), 2, "--separable with --demo is a usage error (exit 2)");
    remove_tmp();
}

/* --max-device-memory: a budget too small for the 23 x 31 image streams it in bands (8 of 3 output rows at 4K, f32,
 * mode same, 5 x 4 kernel: three slots of 3 + 4 input and 3 output rows of 31, plus the kernel, fit 4096 bytes), and
 * OUT.fits is byte for byte what the in-core run writes; so does --separable with a kernel that is outer(col, row)
 * (12 bands of 2 rows: three slots of 2 + 4 input and 2 output rows, the 9 factors' values and a band's 6 rows of
 * row sums fit 4096 bytes). A budget below one band exits 1 and writes nothing; a size that is not one is a usage
 * error. */
static void max_device_memory_streams(gpuws_backend_kind kind)
{
    gpuws_context_destroy(test_open(kind));
    enum { H = 23, W = 31, KH = 5, KW = 4 };
    float image[H * W], kernel[KH * KW];
    double d[H * W];
    test_fill_uniform_f64(d, H * W, test_seed(false), -1, 1);
    for (int i = 0; i < H * W; i++) image[i] = (float)d[i];
    for (int i = 0; i < KH * KW; i++) kernel[i] = (float)d[i * 3];
    image[5 * W + 7] = NAN;
    char err[512], in[512], ker[512], whole[512], banded[512], args[2048];
    snprintf(in, sizeof in, "%s", tmp_path("in.fits"));
    snprintf(ker, sizeof ker, "%s", tmp_path("kernel.fits"));
    snprintf(whole, sizeof whole, "%s", tmp_path("whole.fits"));
    snprintf(banded, sizeof banded, "%s", tmp_path("banded.fits"));
    const char *log = tmp_path("log.txt"), *log_err = tmp_path("log.txt.err");
    cr_assert_eq(fits_write_image(in, FITS_F32, image, W, H, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_write_image(ker, FITS_F32, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    const char *backend = test_backend_name(kind);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm", in, ker, whole);
    cr_assert_eq(run_cli(backend, args, log), 0, "the in-core run failed");
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm --max-device-memory 4K", in, ker,
             banded);
    cr_assert_eq(run_cli(backend, args, log), 0, "the streamed run failed");
    char *text = test_read_file(log_err);
    cr_assert(strstr(text, "streaming through the device in 8 bands of up to 3 of 23 output rows"), "%s", text);
    free(text);
    fits_image a, b;
    cr_assert_eq(fits_read_image(whole, -1, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_read_image(banded, -1, &b, err, sizeof err), 0, "%s", err);
    cr_assert(a.width == b.width && a.height == b.height && a.bitpix == b.bitpix);
    cr_assert(memcmp(a.data, b.data, a.width * a.height * sizeof(float)) == 0,
              "%s: the streamed output differs from the in-core one", backend);
    fits_image_free(&b);
    /* a GPUWS_DEVICE list: the same bands over two contexts of the device, the same bytes */
    setenv("GPUWS_DEVICE", "0,0", 1);
    cr_assert_eq(run_cli(backend, args, log), 0, "the streamed run on two devices failed");
    unsetenv("GPUWS_DEVICE");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "streaming through 2 devices in 8 bands of up to 3 of 23 output rows"), "%s", text);
    free(text);
    cr_assert_eq(fits_read_image(banded, -1, &b, err, sizeof err), 0, "%s", err);
    cr_assert(memcmp(a.data, b.data, a.width * a.height * sizeof(float)) == 0,
              "%s: the output streamed over two devices differs from the in-core one", backend);
    fits_image_free(&a);
    fits_image_free(&b);

    const char *never = tmp_path("never.fits");
    setenv("GPUWS_DEVICE", "0,x", 1);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --max-device-memory 4K", in, ker, never);
    cr_assert_eq(run_cli(backend, args, log), 1, "a bad GPUWS_DEVICE is an error (exit 1)");
    unsetenv("GPUWS_DEVICE");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "GPUWS_DEVICE='0,x' is not a device index (0, 1, ...), a list of them"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --max-device-memory 100", in, ker, never);
    cr_assert_eq(run_cli(backend, args, log), 1, "a budget below one band is an error (exit 1)");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "a device budget of 100 bytes is too small") && strstr(text, "need at least"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --max-device-memory 12Q", in, ker, never);
    cr_assert_eq(run_cli(backend, args, log), 2, "a size that is not one is a usage error (exit 2)");
    cr_assert(!exists(never), "a refused run left %s behind", never);

    /* --separable: a kernel that is outer(col, row) in f32, in-core and streamed */
    for (int j = 0; j < KH; j++)
        for (int k = 0; k < KW; k++) kernel[j * KW + k] = (float)(d[j + 40] * d[k + 50]);
    snprintf(ker, sizeof ker, "%s", tmp_path("separable.fits"));
    cr_assert_eq(fits_write_image(ker, FITS_F32, kernel, KW, KH, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm --separable", in, ker, whole);
    cr_assert_eq(run_cli(backend, args, log), 0, "the separable in-core run failed");
    snprintf(args, sizeof args, "'%s' '%s' -o '%s' --mode same --boundary symm --separable --max-device-memory 4K", in,
             ker, banded);
    cr_assert_eq(run_cli(backend, args, log), 0, "the separable streamed run failed");
    text = test_read_file(log_err);
    cr_assert(strstr(text, "streaming through the device in 12 bands of up to 2 of 23 output rows"), "%s", text);
    free(text);
    cr_assert_eq(fits_read_image(whole, -1, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_read_image(banded, -1, &b, err, sizeof err), 0, "%s", err);
    cr_assert(a.width == b.width && a.height == b.height && a.bitpix == b.bitpix);
    cr_assert(memcmp(a.data, b.data, a.width * a.height * sizeof(float)) == 0,
              "%s: the separable streamed output differs from the in-core one", backend);
    fits_image_free(&a);
    fits_image_free(&b);
    remove_tmp();
}

BACKEND_TEST(cli_convolve, max_device_memory_streams_and_writes_the_in_core_result)
{
    max_device_memory_streams(*kind);
}

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
    const double row[3] = { 1, 2, 3 };
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
    cr_assert_eq(run_cli("cpu", "--demo --size 64 --repeat 3 --dtype f32", log), 0, "the demo failed (see %s.err)",
                 log);
    char *text = test_read_file(log);
    cr_assert(strstr(text, "scalar reference") && strstr(text, "speed-up") && strstr(text, "convolve1d"),
              "the demo prints both times and the speed-up:\n%s", text);
    cr_assert(strstr(text, "max |device - reference| / max |reference| = 0"),
              "deltas 16 apart and a 15-tap kernel make every output exact:\n%s", text);
    /* the separable path, timed the same way, and its distance from the 2-D path's output: each output is one
     * product, so the two differ only by the roundings of the Gaussian and of outer(g, g), a few f32 ulps */
    const char *sep = strstr(text, "separable (col x row, 30 products per output): ");
    cr_assert(sep && strstr(sep, " ms, ") && strstr(sep, "than the 2-D path, max rel. diff "),
              "the demo prints the separable path's line:\n%s", text);
    double diff = -1;
    cr_assert(sscanf(strstr(sep, "max rel. diff ") + strlen("max rel. diff "), "%lf", &diff) == 1 && diff >= 0 &&
                  diff <= 8 * 0x1p-24,
              "the separable path's output is within a few f32 ulps of the 2-D path's:\n%s", text);
    free(text);
    remove_tmp();
}
