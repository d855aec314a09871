/* gpuws_extract on one backend for tests/sep/compare_extract.py, which runs SEP on the same input:
 *   extract_sep BACKEND IMAGE.f32 WIDTH HEIGHT OUT [key=value ...]
 * keys: back=FILE.f32 rms=FILE.f32 mask=FILE.u8 err= thresh= minarea= filter=none kernel=FILE ("W H values...")
 * filter_type=conv|matched nthresh= cont= clean=0|1 clean_param= conn=4|8 gain= sep=1.2|1.4 (sep_version).
 * Writes OUT.cat (one object a line: SEP's columns, %.17g) and OUT.seg.i32 (the segmentation map). Exit 0 on
 * success, 77 when the backend is not available here, 1 on an error (the message on stderr). */
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *read_all(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "rb");
    void *p = f ? malloc(bytes) : NULL;
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "extract_sep: cannot read %zu bytes from %s\n", bytes, path);
        exit(1);
    }
    fclose(f);
    return p;
}

static void check(gpuws_status st, const char *what)
{
    if (st) {
        fprintf(stderr, "extract_sep: %s: %s: %s\n", what, gpuws_status_name(st), gpuws_last_error());
        exit(1);
    }
}

static gpuws_buffer *upload(gpuws_context *ctx, const char *path, size_t bytes, void **keep)
{
    void *p = read_all(path, bytes);
    gpuws_buffer *b;
    check(gpuws_buffer_create(ctx, bytes, &b), "buffer");
    check(gpuws_buffer_write(b, 0, p, bytes), "upload");
    *keep = p;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: extract_sep BACKEND IMAGE.f32 WIDTH HEIGHT OUT [key=value ...]\n");
        return 2;
    }
    const size_t w = strtoull(argv[3], NULL, 10), h = strtoull(argv[4], NULL, 10), n = w * h;
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = argv[1];
    gpuws_context *ctx;
    if (gpuws_context_create(&ctx, &co)) {
        fprintf(stderr, "extract_sep: %s is not available: %s\n", argv[1], gpuws_last_error());
        return 77;
    }
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    void *host[4] = { NULL, NULL, NULL, NULL };
    gpuws_buffer *bufs[4] = { NULL, NULL, NULL, NULL };
    bufs[0] = upload(ctx, argv[2], n * sizeof(float), &host[0]);
    for (int i = 6; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "extract_sep: %s is not key=value\n", argv[i]);
            return 2;
        }
        *eq = 0;
        const char *k = argv[i], *v = eq + 1;
        if (!strcmp(k, "back")) o.back = bufs[1] = upload(ctx, v, n * sizeof(float), &host[1]);
        else if (!strcmp(k, "rms")) o.rms = bufs[2] = upload(ctx, v, n * sizeof(float), &host[2]);
        else if (!strcmp(k, "mask")) o.mask = bufs[3] = upload(ctx, v, n, &host[3]);
        else if (!strcmp(k, "err")) o.err = atof(v);
        else if (!strcmp(k, "thresh")) o.thresh = atof(v);
        else if (!strcmp(k, "minarea")) o.minarea = atoi(v);
        else if (!strcmp(k, "filter")) o.filter_type = strcmp(v, "none") ? o.filter_type : GPUWS_FILTER_NONE;
        else if (!strcmp(k, "kernel")) {
            FILE *f = fopen(v, "r");
            int kw = 0, kh = 0;
            if (!f || fscanf(f, "%d %d", &kw, &kh) != 2 || kw < 1 || kh < 1) {
                fprintf(stderr, "extract_sep: cannot read the kernel %s\n", v);
                return 1;
            }
            float *kv = malloc((size_t)kw * (size_t)kh * sizeof *kv);
            for (int j = 0; j < kw * kh; j++)
                if (fscanf(f, "%f", &kv[j]) != 1) {
                    fprintf(stderr, "extract_sep: cannot read the kernel %s\n", v);
                    return 1;
                }
            fclose(f);
            o.filter = kv;
            o.filter_w = kw;
            o.filter_h = kh;
        } else if (!strcmp(k, "filter_type"))
            o.filter_type = !strcmp(v, "conv") ? GPUWS_FILTER_CONV : GPUWS_FILTER_MATCHED;
        else if (!strcmp(k, "nthresh")) o.deblend_nthresh = atoi(v);
        else if (!strcmp(k, "cont")) o.deblend_cont = atof(v);
        else if (!strcmp(k, "clean")) o.clean = atoi(v);
        else if (!strcmp(k, "clean_param")) o.clean_param = atof(v);
        else if (!strcmp(k, "conn")) o.connectivity = atoi(v);
        else if (!strcmp(k, "gain")) o.gain = atof(v);
        else if (!strcmp(k, "sep")) o.sep_version = !strcmp(v, "1.2") ? GPUWS_SEP_1_2 : GPUWS_SEP_1_4;
        else {
            fprintf(stderr, "extract_sep: unknown key %s\n", k);
            return 2;
        }
    }
    gpuws_buffer *seg;
    check(gpuws_buffer_create(ctx, n * sizeof(int32_t), &seg), "segmap buffer");
    o.segmap = seg;
    gpuws_extract_catalog *cat;
    check(gpuws_extract(NULL, w, h, bufs[0], &o, &cat), "gpuws_extract");
    char path[4096];
    snprintf(path, sizeof path, "%s.cat", argv[5]);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "extract_sep: cannot write %s\n", path);
        return 1;
    }
    for (size_t i = 0; i < cat->num_objects; i++) {
        const gpuws_object *q = &cat->objects[i];
        fprintf(f,
                "%.17g %lld %lld %lld %lld %lld %lld %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g "
                "%.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %lld %lld %lld %lld %d\n",
                q->thresh, (long long)q->npix, (long long)q->tnpix, (long long)q->xmin, (long long)q->xmax,
                (long long)q->ymin, (long long)q->ymax, q->x, q->y, q->x2, q->y2, q->xy, q->errx2, q->erry2, q->errxy,
                q->a, q->b, q->theta, q->cxx, q->cyy, q->cxy, q->cflux, q->flux, q->cpeak, q->peak, q->fluxerr,
                (long long)q->xcpeak, (long long)q->ycpeak, (long long)q->xpeak, (long long)q->ypeak, q->flag);
    }
    fclose(f);
    int32_t *s = malloc(n * sizeof *s);
    check(gpuws_buffer_read(seg, 0, s, n * sizeof *s), "segmap download");
    snprintf(path, sizeof path, "%s.seg.i32", argv[5]);
    f = fopen(path, "wb");
    if (!f || fwrite(s, sizeof *s, n, f) != n || fclose(f)) {
        fprintf(stderr, "extract_sep: cannot write %s\n", path);
        return 1;
    }
    printf("%zu\n", cat->num_objects);
    gpuws_extract_catalog_free(cat);
    free((void *)o.filter);
    free(s);
    gpuws_buffer_destroy(seg);
    for (int i = 0; i < 4; i++) {
        gpuws_buffer_destroy(bufs[i]);
        free(host[i]);
    }
    gpuws_context_destroy(ctx);
    return 0;
}
