/* `gpuws sources` on FITS input (see cli_sources.h): a truncated file, a text file and a missing one are refused, so
 * are a cube without --plane, a plane past the last, an HDU that is a table or past the last and a zero-length
 * axis; a plane of a cube is read when asked for; 32-bit float pixels come back bit for bit. */
#include "cli_sources.h"

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

BACKEND_TEST(cli_sources, zero_size_image_is_refused)
{
    long naxes[2] = { 0, 5 };
    raw_image_is_refused(*kind, "empty.fits", 2, naxes, "zero-length axis");
}
#endif
