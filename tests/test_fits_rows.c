/* fits_read_rows (tools/fits_io.h), the read of one MPI rank's rows in `mpirun gpuws sources`: any range of rows of
 * any image gives the bytes of the same rows of the whole read, whatever the path the pixels take (raw big-endian
 * floats, cfitsio's scaling of integers with BSCALE, BZERO and BLANK, a plane of a cube, a tile-compressed image);
 * no rows is an image with its size and no pixel; a range past the image fails like any bad read. The writes: the
 * raw pixels and the rows written in place, against cfitsio's whole write. */
#include "support.h"
#include "fits_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<fitsio.h>)
#include <fitsio.h>
#define ROWS_HAVE_FITSIO 1
#endif
#endif

#ifdef ROWS_HAVE_FITSIO
enum { W = 37, H = 23, PLANES = 3 };

static char dir[256];

static void rows_setup(void)
{
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    test_dir_make("fits-rows", dir, sizeof dir);
}

static void rows_teardown(void) { test_dir_remove(dir); }

/* Writes the kind of image asked for: 0 raw floats (with a NaN and an infinity), 1 scaled int16 with BLANK pixels,
 * 2 a cube of PLANES float planes, 3 a Rice-compressed int16 image with BZERO, 4 floats with BSCALE. */
static void write_image(const char *path, int kind)
{
    fitsfile *f;
    int st = 0;
    cr_assert_eq(fits_create_diskfile(&f, path, &st), 0, "creating %s: status %d", path, st);
    long naxes[3] = { W, H, PLANES };
    const long n = (long)W * H * (kind == 2 ? PLANES : 1);
    if (kind == 1 || kind == 3) {
        short *raw = malloc((size_t)n * sizeof *raw);
        for (long i = 0; i < n; i++) raw[i] = (short)((i * 7919) % 60000 - 30000);
        raw[5] = raw[W * 11 + 3] = -32768;
        double bscale = 0.25, bzero = 1000.5;
        long blank = -32768;
        if (kind == 3) fits_set_compression_type(f, RICE_1, &st);
        fits_create_img(f, SHORT_IMG, 2, naxes, &st);
        if (kind == 1) fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
        fits_write_key(f, TDOUBLE, "BZERO", &bzero, NULL, &st);
        if (kind == 1) fits_write_key(f, TLONG, "BLANK", &blank, NULL, &st);
        fits_set_bscale(f, 1.0, 0.0, &st); /* the raw integers */
        fits_write_img(f, TSHORT, 1, n, raw, &st);
        free(raw);
    } else {
        float *px = malloc((size_t)n * sizeof *px);
        for (long i = 0; i < n; i++) px[i] = (float)sin((double)i * 0.37) * 1000.0f + (float)i;
        px[7] = NAN, px[W * 5 + 2] = INFINITY;
        fits_create_img(f, FLOAT_IMG, kind == 2 ? 3 : 2, naxes, &st);
        if (kind == 4) {
            double bscale = 2.0;
            fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
            fits_set_bscale(f, 1.0, 0.0, &st);
        }
        fits_write_img(f, TFLOAT, 1, n, px, &st);
        free(px);
    }
    fits_close_file(f, &st);
    cr_assert_eq(st, 0, "cfitsio status %d writing kind %d", st, kind);
}

static void pick(void *user, size_t width, size_t height, size_t *row0, size_t *rows)
{
    const size_t *want = user;
    cr_assert(width == W && height == H, "the chooser is given the whole image's size, got %zu x %zu", width, height);
    *row0 = want[0], *rows = want[1];
}

ParameterizedTestParameters(fits_rows, same_bytes_as_the_whole_read)
{
    static int kinds[] = { 0, 1, 2, 3, 4 };
    return cr_make_param_array(int, kinds, 5);
}

ParameterizedTest(int *kind, fits_rows, same_bytes_as_the_whole_read, .init = rows_setup, .fini = rows_teardown)
{
    char path[300], err[512];
    snprintf(path, sizeof path, "%s/in.fits", dir);
    write_image(path, *kind);
    for (int want_double = 0; want_double < 2; want_double++) {
        fits_read_request req = FITS_READ_REQUEST_INIT;
        req.plane = *kind == 2 ? 1 : -1;
        fits_image whole;
        cr_assert_eq(fits_read_image_at(path, want_double, &req, &whole, err, sizeof err), 0, "%s", err);
        const size_t es = whole.is_double ? sizeof(double) : sizeof(float);
        static const size_t ranges[][2] = {
            { 0, H }, { 0, 1 }, { 5, 7 }, { 11, 12 }, { H - 1, 1 }, { 9, 0 }, { H, 0 }
        };
        for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
            fits_image part;
            memset(&part, 0x5a, sizeof part);
            cr_assert_eq(fits_read_rows(path, want_double, &req, pick, (void *)ranges[k], &part, err, sizeof err), 0,
                         "kind %d rows %zu+%zu: %s", *kind, ranges[k][0], ranges[k][1], err);
            cr_assert(part.width == W && part.height == H && part.row0 == ranges[k][0] && part.rows == ranges[k][1],
                      "kind %d: %zu x %zu, rows %zu+%zu", *kind, part.width, part.height, part.row0, part.rows);
            cr_assert(part.data, "kind %d: no pixels even for no rows", *kind);
            cr_assert(part.is_double == whole.is_double && part.hdu == whole.hdu && part.bitpix == whole.bitpix &&
                          part.plane == whole.plane && part.nplanes == whole.nplanes,
                      "kind %d: the image's description differs from the whole read's", *kind);
            cr_assert(!memcmp(part.data, (char *)whole.data + ranges[k][0] * W * es, ranges[k][1] * W * es),
                      "kind %d (double %d): rows %zu+%zu differ from the whole read's", *kind, want_double,
                      ranges[k][0], ranges[k][1]);
            fits_image_free(&part);
        }
        fits_image_free(&whole);
    }
}

Test(fits_rows, a_range_past_the_image_fails, .init = rows_setup, .fini = rows_teardown)
{
    char path[300], err[512] = "";
    snprintf(path, sizeof path, "%s/in.fits", dir);
    write_image(path, 0);
    const size_t past[2] = { H - 2, 3 };
    fits_image part;
    cr_assert_eq(fits_read_rows(path, 0, NULL, pick, (void *)past, &part, err, sizeof err), -1);
    cr_assert(strstr(err, "rows 21 to 24 asked of an image of 23 rows") && strstr(err, path), "%s", err);
    cr_assert(part.data == NULL && part.width == 0, "a failed read left an image");
}

Test(fits_rows, a_missing_file_fails_as_the_whole_read, .init = rows_setup, .fini = rows_teardown)
{
    char path[300], err[512] = "", whole_err[512] = "";
    snprintf(path, sizeof path, "%s/missing.fits", dir);
    const size_t all[2] = { 0, H };
    fits_image img;
    cr_assert_eq(fits_read_rows(path, 0, NULL, pick, (void *)all, &img, err, sizeof err), -1);
    cr_assert_eq(fits_read_image(path, 0, &img, whole_err, sizeof whole_err), -1);
    cr_assert_str_eq(err, whole_err);
}
/* One process reads the files of a run one after the other (fits_read_start): a read started while it works on
 * another gets a child of its own, a read abandoned ends it, and the reads after each give the bytes the read in
 * this process gives. */
static void assert_read_as_here(fits_reading *r, const char *path)
{
    char err[512];
    fits_image got, here;
    const size_t all[2] = { 0, H };
    const fits_read_request req = { 0, -1, 1 };
    cr_assert_eq(fits_read_finish(r, &got, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_read_rows(path, 0, &req, pick, (void *)all, &here, err, sizeof err), 0, "%s", err);
    cr_assert(got.width == W && got.height == H && got.bitpix == here.bitpix, "%s: %zu x %zu", path, got.width,
              got.height);
    cr_assert(!memcmp(got.data, here.data, (size_t)W * H * sizeof(float)), "%s: the pixels differ", path);
    cr_assert(got.header && here.header && !strcmp(got.header, here.header), "%s: the headers differ", path);
    fits_image_free(&got);
    fits_image_free(&here);
}

Test(fits_rows, reads_overlapping_abandoned_and_after_give_the_bytes_read_here, .init = rows_setup,
     .fini = rows_teardown)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.fits", dir);
    snprintf(b, sizeof b, "%s/b.fits", dir);
    write_image(a, 0);
    write_image(b, 1);
    const fits_read_request req = { 0, -1, 1 }; /* with the header */
    fits_reading ra, rb;
    for (int round = 0; round < 2; round++) {
        fits_read_start(&ra, a, 0, &req);
        fits_read_start(&rb, b, 0, &req); /* while a is out */
        assert_read_as_here(&rb, b);
        assert_read_as_here(&ra, a);
    }
    fits_read_start(&ra, a, 0, &req);
    fits_read_abandon(&ra);
    fits_read_start(&rb, b, 0, &req);
    assert_read_as_here(&rb, b);
    fits_read_start(&ra, a, 0, &req);
    assert_read_as_here(&ra, a);
}

/* A file size limit of `bytes` with its signal ignored (a write past it fails with EFBIG), or back to *keep and *was
 * (bytes 0). */
static void size_limit(size_t bytes, struct rlimit *keep, void (**was)(int))
{
    if (!bytes) {
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, keep), 0);
        signal(SIGXFSZ, *was);
        return;
    }
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, keep), 0);
    struct rlimit lim = *keep;
    lim.rlim_cur = bytes;
    *was = signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
}

/* fits_write_image_cards of an image large enough (fits_write_raw_from) writes its pixels itself after cfitsio's
 * header: the file is the same bytes as cfitsio's whole write, for each pixel type, with cards and a width and
 * height whose data do not fill the last 2880-byte block; and cfitsio reads the pixels back. */
Test(fits_write, raw_pixels_give_the_bytes_of_cfitsio, .init = rows_setup, .fini = rows_teardown)
{
    enum { WW = 301, HH = 77 };
    static double px[WW * HH];
    for (int i = 0; i < WW * HH; i++) px[i] = (double)(i % 1013) * 1.5 - 700.25;
    static float pf[WW * HH];
    static int32_t pi[WW * HH];
    for (int i = 0; i < WW * HH; i++) pf[i] = (float)px[i], pi[i] = (int32_t)(i * 7919) - 400000;
    pf[5] = NAN;
    char cards[2 * 80 + 1];
    snprintf(cards, sizeof cards, "%-80s%-80s", "CTYPE1  = 'RA---TAN'", "CRVAL1  =                 12.5");
    const fits_pixel_type types[] = { FITS_F32, FITS_F64, FITS_I32 };
    const void *data[] = { pf, px, pi };
    for (int t = 0; t < 3; t++) {
        char a[300], b[300], err[512];
        snprintf(a, sizeof a, "%s/cfitsio%d.fits", dir, t);
        snprintf(b, sizeof b, "%s/raw%d.fits", dir, t);
        const size_t was = fits_write_raw_from((size_t)-1);
        cr_assert_eq(fits_write_image_cards(a, types[t], data[t], WW, HH, cards, 2, err, sizeof err), 0, "%s", err);
        fits_write_raw_from(1);
        cr_assert_eq(fits_write_image_cards(b, types[t], data[t], WW, HH, cards, 2, err, sizeof err), 0, "%s", err);
        fits_write_raw_from(was);
        struct stat sa, sb;
        cr_assert(stat(a, &sa) == 0 && stat(b, &sb) == 0, "type %d: the files", t);
        const size_t na = (size_t)sa.st_size, nb = (size_t)sb.st_size;
        char *x = test_read_file(a), *y = test_read_file(b);
        cr_assert(x && y && na == nb && na % 2880 == 0, "type %d: %zu bytes against cfitsio's %zu", t, nb, na);
        cr_assert(memcmp(x, y, na) == 0, "type %d: the raw write differs from cfitsio's", t);
        free(x);
        free(y);
        fits_image img;
        cr_assert_eq(fits_read_image(b, t == 1, &img, err, sizeof err), 0, "%s", err);
        cr_assert(img.width == WW && img.height == HH, "read back %zu x %zu", img.width, img.height);
        fits_image_free(&img);
    }
    /* cut short by the system (a file size limit, its signal ignored): a failure that says so, the file removed */
    char c[300], err[512];
    snprintf(c, sizeof c, "%s/short.fits", dir);
    struct rlimit keep;
    void (*was)(int);
    const size_t from = fits_write_raw_from(1);
    size_limit(2880 + WW * HH * sizeof(float) / 2, &keep, &was);
    const int rc = fits_write_image_cards(c, FITS_F32, pf, WW, HH, cards, 2, err, sizeof err);
    size_limit(0, &keep, &was);
    fits_write_raw_from(from);
    cr_assert(rc != 0 && strstr(err, "writing failed: cut short at"), "rc %d: %s", rc, err);
    struct stat sc;
    cr_assert(stat(c, &sc) != 0, "the file cut short was left behind");
}

/* Rows written in place by several writers (the MPI ranks' maps): the shell with its rows written in any order, in
 * pieces of any height, is the same bytes as the whole write of the image; a path that is not the shell (missing,
 * another size, a directory) is -2, "not the file here", and rows past the image -1, neither touching the file; a
 * shell cut short by the system fails and is removed. */
Test(fits_write, rows_into_a_shell_give_the_bytes_of_the_whole_write, .init = rows_setup, .fini = rows_teardown)
{
    enum { WW = 301, HH = 77 };
    static float pf[WW * HH];
    static double px[WW * HH];
    static int32_t pi[WW * HH];
    for (int i = 0; i < WW * HH; i++)
        px[i] = (double)(i % 1013) * 1.5 - 700.25, pf[i] = (float)px[i], pi[i] = (int32_t)(i * 7919) - 400000;
    char cards[80 + 1];
    snprintf(cards, sizeof cards, "%-80s", "CTYPE1  = 'RA---TAN'");
    const fits_pixel_type types[] = { FITS_F32, FITS_F64, FITS_I32 };
    const void *data[] = { pf, px, pi };
    const size_t bytes[] = { 4, 8, 4 };
    const size_t cut[][2] = { { 40, 37 }, { 0, 1 }, { 76, 1 }, { 1, 39 } }; /* row0, rows: every row once */
    for (int t = 0; t < 3; t++) {
        char a[300], b[300], err[512];
        snprintf(a, sizeof a, "%s/whole%d.fits", dir, t);
        snprintf(b, sizeof b, "%s/shell%d.fits", dir, t);
        cr_assert_eq(fits_write_image_cards(a, types[t], data[t], WW, HH, cards, 1, err, sizeof err), 0, "%s", err);
        uint64_t at = 0;
        cr_assert_eq(fits_write_image_shell(b, types[t], WW, HH, cards, 1, &at, err, sizeof err), 0, "%s", err);
        cr_assert(at > 0 && at % 2880 == 0, "type %d: the data unit at byte %llu", t, (unsigned long long)at);
        for (int k = 0; k < 4; k++) {
            const char *rows = (const char *)data[t] + cut[k][0] * WW * bytes[t];
            cr_assert_eq(fits_write_rows(b, at, types[t], rows, WW, HH, cut[k][0], cut[k][1], err, sizeof err), 0,
                         "type %d, rows %zu + %zu: %s", t, cut[k][0], cut[k][1], err);
        }
        cr_assert_eq(fits_write_rows(b, at, types[t], pf, WW, HH, 0, 0, err, sizeof err), 0, "no rows: %s", err);
        cr_assert_eq(fits_write_rows(b, at, types[t], pf, WW, HH, 70, 8, err, sizeof err), -1, "rows past the end");
        cr_assert_eq(fits_write_rows(b, at, types[t], pf, WW, HH + 10, 0, 1, err, sizeof err), -2, "another size: %s",
                     err);
        cr_assert(strstr(err, "not the file made for the rows here"), "%s", err);
        struct stat sa, sb;
        cr_assert(stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_size == sb.st_size, "type %d: the sizes", t);
        char *x = test_read_file(a), *y = test_read_file(b);
        cr_assert(x && y && memcmp(x, y, (size_t)sa.st_size) == 0, "type %d: the shell's rows differ", t);
        free(x);
        free(y);
    }
    char c[300], err[512];
    snprintf(c, sizeof c, "%s/missing.fits", dir);
    cr_assert_eq(fits_write_rows(c, 2880, FITS_F32, pf, WW, HH, 0, 1, err, sizeof err), -2, "missing: %s", err);
    cr_assert(strstr(err, "not found here"), "%s", err);
    cr_assert_eq(fits_write_rows(dir, 2880, FITS_F32, pf, WW, HH, 0, 1, err, sizeof err), -1, "a directory");
    uint64_t at;
    snprintf(c, sizeof c, "%s/whole0.fits", dir);
    cr_assert_eq(fits_write_image_shell(c, FITS_F32, WW, HH, NULL, 0, &at, err, sizeof err), -1, "over a file");
    cr_assert(strstr(err, "it exists"), "%s", err);
    /* cut short by the system: the shell fails and is removed */
    snprintf(c, sizeof c, "%s/short.fits", dir);
    struct rlimit keep;
    void (*was)(int);
    size_limit(2880 + WW * HH * sizeof(float) / 2, &keep, &was);
    const int rc = fits_write_image_shell(c, FITS_F32, WW, HH, NULL, 0, &at, err, sizeof err);
    size_limit(0, &keep, &was);
    cr_assert(rc != 0 && strstr(err, "writing failed"), "rc %d: %s", rc, err);
    struct stat sc;
    cr_assert(stat(c, &sc) != 0, "the shell cut short was left behind");
}
#else
Test(fits_rows, needs_cfitsio) { cr_skip_test("fitsio.h not found"); }
#endif
