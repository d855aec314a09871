/* gpuws_background on one backend for tests/sep/compare_background.py, which runs SEP on the same input:
 *   background_sep BACKEND IMAGE.f32 WIDTH HEIGHT BW BH FW FH FTHRESH MASK.u8|- OUT
 * reads the raw native-endian f32 image (f64 when its name ends in .f64) and uint8 mask, writes OUT.back.f32 and OUT.rms.f32 and prints
 * "globalback globalrms" (%.9g). Exit 0 on success, 77 when the backend is not available here, 1 on an error (the
 * message on stderr). */
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *read_all(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "rb");
    void *p = f ? malloc(bytes) : NULL;
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "background_sep: cannot read %zu bytes from %s\n", bytes, path);
        exit(1);
    }
    fclose(f);
    return p;
}

static void write_all(const char *prefix, const char *suffix, const void *p, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", prefix, suffix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) {
        fprintf(stderr, "background_sep: cannot write %s\n", path);
        exit(1);
    }
}

static void check(gpuws_status st, const char *what)
{
    if (st) {
        fprintf(stderr, "background_sep: %s: %s: %s\n", what, gpuws_status_name(st), gpuws_last_error());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 12) {
        fprintf(stderr, "usage: background_sep BACKEND IMAGE.f32 WIDTH HEIGHT BW BH FW FH FTHRESH MASK.u8|- OUT\n");
        return 2;
    }
    const size_t w = strtoull(argv[3], NULL, 10), h = strtoull(argv[4], NULL, 10), n = w * h;
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    o.bw = atoi(argv[5]);
    o.bh = atoi(argv[6]);
    o.fw = atoi(argv[7]);
    o.fh = atoi(argv[8]);
    o.fthresh = atof(argv[9]);
    /* the context first: an unavailable backend leaves nothing allocated (the sanitizer pass counts leaks) */
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = argv[1];
    gpuws_context *ctx;
    if (gpuws_context_create(&ctx, &co)) {
        fprintf(stderr, "background_sep: %s is not available: %s\n", argv[1], gpuws_last_error());
        return 77;
    }
    const size_t len = strlen(argv[2]);
    const bool f64 = len > 4 && strcmp(argv[2] + len - 4, ".f64") == 0;
    const size_t es = f64 ? sizeof(double) : sizeof(float);
    float *img = read_all(argv[2], n * es);
    unsigned char *mask = strcmp(argv[10], "-") ? read_all(argv[10], n) : NULL;

    gpuws_buffer *x, *m = NULL, *back, *rms;
    check(gpuws_buffer_create(ctx, n * es, &x), "image buffer");
    check(gpuws_buffer_write(x, 0, img, n * es), "upload");
    if (mask) {
        check(gpuws_buffer_create(ctx, n, &m), "mask buffer");
        check(gpuws_buffer_write(m, 0, mask, n), "mask upload");
        o.mask = m;
    }
    check(gpuws_buffer_create(ctx, n * sizeof(float), &back), "back buffer");
    check(gpuws_buffer_create(ctx, n * sizeof(float), &rms), "rms buffer");
    gpuws_background_result r;
    check(gpuws_background(NULL, f64 ? GPUWS_F64 : GPUWS_F32, w, h, x, &o, back, rms, &r), "gpuws_background");
    check(gpuws_buffer_read(back, 0, img, n * sizeof(float)), "download");
    write_all(argv[11], ".back.f32", img, n * sizeof(float));
    check(gpuws_buffer_read(rms, 0, img, n * sizeof(float)), "download");
    write_all(argv[11], ".rms.f32", img, n * sizeof(float));
    printf("%.9g %.9g\n", r.globalback, r.globalrms);
    gpuws_buffer_destroy(x);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(back);
    gpuws_buffer_destroy(rms);
    gpuws_context_destroy(ctx);
    free(img);
    free(mask);
    return 0;
}
