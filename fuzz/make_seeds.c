/* Writes the committed seed corpora: fuzz/corpus/fuzz_fits/ (small FITS files made with cfitsio, and truncations of
 * some) and fuzz/corpus/fuzz_api/ (short call programs from a fixed seed).
 *   ./build-fuzz/fuzz/fuzz_make_seeds fuzz/corpus */
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];

static fitsfile *create(const char *name)
{
    char path[700];
    snprintf(path, sizeof path, "%s/fuzz_fits/%s", dir, name);
    unlink(path);
    fitsfile *f;
    int st = 0;
    if (fits_create_diskfile(&f, path, &st)) {
        fits_report_error(stderr, st);
        exit(1);
    }
    return f;
}

static void done(fitsfile *f, int st)
{
    fits_close_file(f, &st);
    if (st) {
        fits_report_error(stderr, st);
        exit(1);
    }
}

static void image(const char *name, int bitpix, int naxis, long *naxes, int dtype, const void *px, long n)
{
    fitsfile *f = create(name);
    int st = 0;
    fits_create_img(f, bitpix, naxis, naxes, &st);
    if (n) fits_write_img(f, dtype, 1, n, (void *)px, &st);
    done(f, st);
}

static void truncated(const char *from, const char *to, long keep)
{
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/fuzz_fits/%s", dir, from);
    snprintf(b, sizeof b, "%s/fuzz_fits/%s", dir, to);
    FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
    if (!in || !out) exit(1);
    for (long i = 0; i < keep; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(c, out);
    }
    fclose(in);
    fclose(out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/fuzz_fits", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/fuzz_api", dir);
    mkdir(sub, 0755);

    float f12[12];
    for (int i = 0; i < 12; i++) f12[i] = (float)i * 0.5f - 2.0f;
    long n43[2] = { 4, 3 };
    image("f32_4x3.fits", FLOAT_IMG, 2, n43, TFLOAT, f12, 12);
    double d4[4] = { 1.0, -2.5, NAN, INFINITY };
    long n22[3] = { 2, 2, 1 };
    image("f64_2x2.fits", DOUBLE_IMG, 2, n22, TDOUBLE, d4, 4);
    image("f64_2x2x1.fits", DOUBLE_IMG, 3, n22, TDOUBLE, d4, 4);
    long cube[3] = { 2, 2, 2 };
    double d8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    image("cube_2x2x2.fits", DOUBLE_IMG, 3, cube, TDOUBLE, d8, 8);
    long one[2] = { 1, 1 };
    float px = 42.0f;
    image("one_pixel.fits", FLOAT_IMG, 2, one, TFLOAT, &px, 1);
    long line[1] = { 5 };
    image("one_d.fits", FLOAT_IMG, 1, line, TFLOAT, f12, 5);

    /* 16-bit integers with BSCALE, BZERO and BLANK */
    {
        fitsfile *f = create("i16_scaled_blank.fits");
        int st = 0;
        short s[12];
        for (int i = 0; i < 12; i++) s[i] = (short)(i * 100 - 300);
        s[5] = -32768;
        fits_create_img(f, SHORT_IMG, 2, n43, &st);
        double bscale = 0.5, bzero = 10.0;
        long blank = -32768;
        fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
        fits_write_key(f, TDOUBLE, "BZERO", &bzero, NULL, &st);
        fits_write_key(f, TLONG, "BLANK", &blank, NULL, &st);
        fits_set_bscale(f, 1.0, 0.0, &st);
        fits_write_img(f, TSHORT, 1, 12, s, &st);
        done(f, st);
    }
    /* the image in an extension after an empty primary, and a table-only file */
    {
        fitsfile *f = create("ext_image.fits");
        int st = 0;
        fits_create_img(f, 8, 0, NULL, &st);
        fits_create_img(f, FLOAT_IMG, 2, n43, &st);
        fits_write_img(f, TFLOAT, 1, 12, f12, &st);
        done(f, st);
    }
    {
        fitsfile *f = create("bintable.fits");
        int st = 0;
        char *ttype[] = { "X" }, *tform[] = { "1E" }, *tunit[] = { "" };
        fits_create_img(f, 8, 0, NULL, &st);
        fits_create_tbl(f, BINARY_TBL, 3, 1, ttype, tform, tunit, "T", &st);
        fits_write_col(f, TFLOAT, 1, 1, 1, 3, f12, &st);
        done(f, st);
    }
    /* a tile-compressed image (RICE), which cfitsio decompresses on read */
    {
        fitsfile *f = create("rice_compressed.fits");
        int st = 0;
        int iv[64];
        for (int i = 0; i < 64; i++) iv[i] = (i * 37) % 101;
        long n8[2] = { 8, 8 };
        fits_set_compression_type(f, RICE_1, &st);
        fits_create_img(f, LONG_IMG, 2, n8, &st);
        fits_write_img(f, TINT, 1, 64, iv, &st);
        done(f, st);
    }
    truncated("f32_4x3.fits", "f32_4x3_trunc_header.fits", 1000);
    truncated("f32_4x3.fits", "f32_4x3_trunc_data.fits", 2880 + 20);
    truncated("rice_compressed.fits", "rice_trunc.fits", 2880 * 3);

    /* call programs: a fixed pseudo-random stream (the target reads any bytes) */
    uint64_t s = 0x5eed;
    for (int k = 0; k < 8; k++) {
        char path[700];
        snprintf(path, sizeof path, "%s/fuzz_api/seed_%d", dir, k);
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        int len = 64 + k * 48;
        for (int i = 0; i < len; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            fputc((int)(s >> 56), f);
        }
        fclose(f);
    }
    return 0;
}
