/* Aperture photometry on one backend for tests/sep/compare_aperture.py, which runs SEP on the same input:
 *   aperture_sep BACKEND IMAGE.f32 WIDTH HEIGHT KIND APERTURES.f64 N RMS.f32|- ERR GAIN MASK.u8|- SUBPIX OUT
 *                [BACK.f32]
 * KIND circle (APERTURES: x y r per aperture), ellipse (x y a b theta r), kron (x y a b theta r) or auto (x y a b
 * theta; the flux_auto defaults). BACK: a background map for the options' back (SEP is given IMAGE - BACK).
 * Writes OUT: per aperture 5 native-endian f64, kronrad sum sumerr area flag (0 for what the call does not give).
 * Exit 0 on success, 77 when the backend is not available here, 1 on an error (the message on stderr). */
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *read_all(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "rb");
    void *p = f ? malloc(bytes ? bytes : 1) : NULL;
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "aperture_sep: cannot read %zu bytes from %s\n", bytes, path);
        exit(1);
    }
    fclose(f);
    return p;
}

static void check(gpuws_status st, const char *what)
{
    if (st) {
        fprintf(stderr, "aperture_sep: %s: %s: %s\n", what, gpuws_status_name(st), gpuws_last_error());
        exit(1);
    }
}

static gpuws_buffer *upload(gpuws_context *ctx, const void *p, size_t bytes)
{
    gpuws_buffer *b;
    check(gpuws_buffer_create(ctx, bytes, &b), "buffer");
    check(gpuws_buffer_write(b, 0, p, bytes), "upload");
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 14 && argc != 15) {
        fprintf(stderr, "usage: aperture_sep BACKEND IMAGE.f32 WIDTH HEIGHT KIND APERTURES.f64 N RMS.f32|- ERR GAIN "
                        "MASK.u8|- SUBPIX OUT [BACK.f32]\n");
        return 2;
    }
    const size_t w = strtoull(argv[3], NULL, 10), h = strtoull(argv[4], NULL, 10), npix = w * h;
    const char *kind = argv[5];
    const size_t n = strtoull(argv[7], NULL, 10);
    const int cols = !strcmp(kind, "circle") ? 3 : !strcmp(kind, "auto") ? 5 : 6;
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = argv[1];
    gpuws_context *ctx;
    if (gpuws_context_create(&ctx, &co)) {
        fprintf(stderr, "aperture_sep: %s is not available: %s\n", argv[1], gpuws_last_error());
        return 77;
    }
    float *img = read_all(argv[2], npix * sizeof(float));
    double *ap = read_all(argv[6], n * cols * sizeof(double));
    double *col[6];
    for (int c = 0; c < cols; c++) {
        col[c] = malloc(n * sizeof(double) + 1);
        for (size_t i = 0; i < n; i++) col[c][i] = ap[i * cols + c];
    }
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    gpuws_buffer *x = upload(ctx, img, npix * sizeof(float)), *rms = NULL, *mask = NULL, *back = NULL;
    if (argc == 15) {
        float *b = read_all(argv[14], npix * sizeof(float));
        o.back = back = upload(ctx, b, npix * sizeof(float));
        free(b);
    }
    if (strcmp(argv[8], "-")) {
        float *e = read_all(argv[8], npix * sizeof(float));
        o.rms = rms = upload(ctx, e, npix * sizeof(float));
        free(e);
    }
    o.err = atof(argv[9]);
    o.gain = atof(argv[10]);
    if (strcmp(argv[11], "-")) {
        unsigned char *m = read_all(argv[11], npix);
        o.mask = mask = upload(ctx, m, npix);
        free(m);
    }
    o.subpix = atoi(argv[12]);
    double *kr = calloc(n + 1, sizeof *kr), *sum = calloc(n + 1, sizeof *sum), *err = calloc(n + 1, sizeof *err),
           *area = calloc(n + 1, sizeof *area);
    int *flag = calloc(n + 1, sizeof *flag);
    if (!strcmp(kind, "circle"))
        check(gpuws_sum_circle(NULL, w, h, x, n, col[0], col[1], col[2], &o, sum, err, area, flag), "sum_circle");
    else if (!strcmp(kind, "ellipse"))
        check(gpuws_sum_ellipse(NULL, w, h, x, n, col[0], col[1], col[2], col[3], col[4], col[5], &o, sum, err, area,
                                flag),
              "sum_ellipse");
    else if (!strcmp(kind, "kron"))
        check(gpuws_kron_radius(NULL, w, h, x, n, col[0], col[1], col[2], col[3], col[4], col[5], &o, kr, flag),
              "kron_radius");
    else
        check(gpuws_flux_auto(NULL, w, h, x, n, col[0], col[1], col[2], col[3], col[4], &o, kr, sum, err, area, flag),
              "flux_auto");
    FILE *f = fopen(argv[13], "wb");
    for (size_t i = 0; f && i < n; i++) {
        const double row[5] = { kr[i], sum[i], err[i], area[i], (double)flag[i] };
        fwrite(row, sizeof row, 1, f);
    }
    if (!f || fclose(f)) {
        fprintf(stderr, "aperture_sep: cannot write %s\n", argv[13]);
        return 1;
    }
    gpuws_buffer_destroy(x);
    gpuws_buffer_destroy(rms);
    gpuws_buffer_destroy(mask);
    gpuws_buffer_destroy(back);
    gpuws_context_destroy(ctx);
    for (int c = 0; c < cols; c++) free(col[c]);
    free(img);
    free(ap);
    free(kr);
    free(sum);
    free(err);
    free(area);
    free(flag);
    return 0;
}
