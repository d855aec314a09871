/* What the suites of `gpuws sources` share: the built command (GPUWS_CLI, set by ctest) run on FITS files the test
 * writes, in a fresh directory per test, once per backend (GPUWS_BACKEND), with its exit status, stdout, stderr and
 * the files it left. What must hold: exit 0 with every output on a good image; exit 1 with a one-line reason and no
 * file written (not even a temporary one) on bad input; exit 2 with usage on bad options. The suites, all of them
 * the Criterion suite cli_sources: test_cli_sources.c (the command, its methods, refused images, --filter files,
 * usage), test_cli_sources_fits.c (FITS input), test_cli_sources_outputs.c (world coordinates, the catalogues'
 * formats, --timings), test_cli_sources_many.c (many images) and test_cli_sources_phot.c (--phot-apertures); and the
 * suite cli_sources_host, test_cli_sources_host.c (--max-device-memory: the pipeline from host memory). */
#ifndef GPUWS_TEST_CLI_SOURCES_H
#define GPUWS_TEST_CLI_SOURCES_H

#include "support.h"
#include "fits_io.h"
#include "sources/sources_ref.h"

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

#ifdef HAVE_FITSIO_H
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
#endif

#endif
