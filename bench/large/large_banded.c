/* The streamed host-to-host calls against in-core (docs/scale.md, "What is left"; issue: streamed with a 1 GiB
 * budget, the convolution and the labelling at >= 0.8x their in-core throughput):
 *
 *   gpuws-large-banded BACKEND [SIDE [REPS [BUDGET_MIB [conv|label|both|extract]]]] (defaults: cuda 32768 5 1024 both)
 *
 * For a SIDE x SIDE image, once from pinned host memory to pinned host memory (gpuws_host_alloc) and once from
 * malloc'd to malloc'd: gpuws_convolve2d_host (f32, a 15 x 15 Gaussian, SAME) and gpuws_label_host (a random mask of
 * density 0.6, 4-connectivity), each in-core (budget 0: one band, the upload, the call and the download) and streamed
 * (budget BUDGET_MIB MiB), wall clock of REPS calls after a first one, median and minimum; the device-resident call
 * alone (buffers already on the device) for scale. The streamed output is checked byte for byte against in-core.
 * Needs about 14 bytes of host memory and 10 of device memory a pixel (15 GiB and 10 GiB at 32768). `extract`: the
 * same for gpuws_extract_host (SEP's defaults with a noise sigma of 1: a sky of that noise and a Gaussian source
 * every 40 pixels each way) against gpuws_extract on the device-resident image, the catalogues compared column by
 * column; GPUWS_LOG=debug prints the bands' parts. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define LARGE_PROGRAM   "gpuws-large-banded"
#include "gpuws.h"
#include "gpuws/algorithms.h"
#include "large_support.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Host memory: pinned through the context, or malloc'd. */
static void *host_alloc(gpuws_context *ctx, bool pinned, size_t bytes)
{
    void *p = NULL;
    if (pinned) check(gpuws_host_alloc(ctx, bytes, &p), "gpuws_host_alloc");
    else p = must_alloc(bytes);
    return p;
}

static void host_free(gpuws_context *ctx, bool pinned, void *p)
{
    if (pinned) gpuws_host_free(ctx, p);
    else free(p);
}

typedef struct {
    double med, min;
} timing;

/* A call's wall clock: one untimed call, then reps timed ones. */
typedef void (*call_fn)(void *arg);
static timing time_calls(call_fn f, void *arg, int reps)
{
    double t[64];
    f(arg);
    for (int r = 0; r < reps; r++) {
        const double a = now();
        f(arg);
        t[r] = (now() - a) * 1e3;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return (timing){ t[reps / 2], t[0] };
}

typedef struct {
    gpuws_context *ctx;
    size_t side;
    const void *in;
    void *out;
    const float *kern;
    uint64_t budget;
    size_t bands, band_rows, num; /* label: the count */
} job;

static void conv_call(void *arg)
{
    job *j = arg;
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.mode = GPUWS_CONVOLVE_SAME, o.max_device_bytes = j->budget;
    check(gpuws_convolve2d_host(j->ctx, GPUWS_F32, j->in, j->side, j->side, 0, j->kern, 15, 15, &o, j->out),
          "gpuws_convolve2d_host");
    check(gpuws_convolve2d_host_bands(j->ctx, GPUWS_F32, j->side, j->side, 15, 15, &o, &j->band_rows, &j->bands),
          "gpuws_convolve2d_host_bands");
}

static void label_call(void *arg)
{
    job *j = arg;
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = j->budget;
    check(gpuws_label_host(j->ctx, j->side, j->side, j->in, 0, 4, &o, j->out, &j->num), "gpuws_label_host");
    check(gpuws_label_host_bands(j->ctx, j->side, j->side, &o, &j->band_rows, &j->bands), "gpuws_label_host_bands");
}

/* The device-resident call: the input already uploaded, the output left on the device. */
typedef struct {
    gpuws_context *ctx;
    size_t side;
    gpuws_buffer *in, *out, *kern;
    bool conv;
} resident;

static void resident_call(void *arg)
{
    resident *r = arg;
    size_t n;
    if (r->conv) {
        gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
        o.mode = GPUWS_CONVOLVE_SAME;
        check(gpuws_convolve2d(NULL, GPUWS_F32, r->in, r->side, r->side, 0, r->kern, 15, 15, &o, r->out),
              "gpuws_convolve2d");
    } else {
        check(gpuws_label(NULL, r->side, r->side, r->in, 4, r->out, &n), "gpuws_label");
    }
    check(gpuws_context_synchronize(r->ctx), "synchronize");
}

static void run(gpuws_context *ctx, bool conv, size_t side, int reps, uint64_t budget, const float *kern)
{
    const size_t n = side * side, in_bytes = conv ? n * sizeof(float) : n, out_bytes = n * sizeof(float);
    const char *what = conv ? "convolve2d_host 15x15 SAME" : "label_host 4-conn, density 0.6";
    /* the device-resident call, for scale */
    resident r = { ctx, side, NULL, NULL, NULL, conv };
    check(gpuws_buffer_create(ctx, in_bytes, &r.in), "input buffer");
    check(gpuws_buffer_create(ctx, out_bytes, &r.out), "output buffer");
    check(gpuws_buffer_create(ctx, 225 * sizeof(float), &r.kern), "kernel buffer");
    check(gpuws_buffer_write(r.kern, 0, kern, 225 * sizeof(float)), "kernel upload");
    void *tmp = must_alloc(in_bytes);
    uint64_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        if (conv) ((float *)tmp)[i] = (float)((s >> 40) & 0xffff) / 65536.0f;
        else ((uint8_t *)tmp)[i] = (double)(s >> 11) * 0x1p-53 < 0.6;
    }
    check(gpuws_buffer_write(r.in, 0, tmp, in_bytes), "input upload");
    const timing t = time_calls(resident_call, &r, reps);
    printf("%s %zu^2: device-resident %.1f ms median, %.1f min\n", what, side, t.med, t.min);
    gpuws_buffer_destroy(r.in), gpuws_buffer_destroy(r.out), gpuws_buffer_destroy(r.kern);
    for (int pinned = 1; pinned >= 0; pinned--) {
        void *in = host_alloc(ctx, pinned, in_bytes), *a = host_alloc(ctx, pinned, out_bytes),
             *b = host_alloc(ctx, pinned, out_bytes);
        memcpy(in, tmp, in_bytes);
        job ji = { ctx, side, in, a, kern, 0, 0, 0, 0 }, jb = { ctx, side, in, b, kern, budget << 20, 0, 0, 0 };
        const timing ti = time_calls(conv ? conv_call : label_call, &ji, reps);
        const timing tb = time_calls(conv ? conv_call : label_call, &jb, reps);
        const bool same = !memcmp(a, b, out_bytes) && ji.num == jb.num;
        printf("  %s: in-core (%zu band) %.1f ms median, %.1f min | %llu MiB: %zu bands of %zu rows %.1f ms median, "
               "%.1f min | throughput streamed / in-core %.2f (medians) | output %s\n",
               pinned ? "pinned" : "malloc'd", ji.bands, ti.med, ti.min, (unsigned long long)budget, jb.bands,
               jb.band_rows, tb.med, tb.min, ti.med / tb.med, same ? "identical" : "DIFFERS");
        fflush(stdout);
        host_free(ctx, pinned, in), host_free(ctx, pinned, a), host_free(ctx, pinned, b);
        if (!same) exit(1);
    }
    free(tmp);
}

typedef struct {
    gpuws_context *ctx;
    size_t side;
    const float *in;
    gpuws_buffer *dev;
    uint64_t budget;
    size_t bands, band_rows;
    gpuws_extract_catalog *cat; /* the last call's */
} extract_job;

static void extract_options(gpuws_extract_options *o)
{
    *o = (gpuws_extract_options)GPUWS_EXTRACT_OPTIONS_INIT;
    o->err = 1.0; /* thresh 1.5 sigma, SEP's filter, deblending and cleaning: the defaults */
}

static void extract_call(void *arg)
{
    extract_job *j = arg;
    gpuws_extract_options eo;
    extract_options(&eo);
    gpuws_extract_catalog_free(j->cat);
    j->cat = NULL;
    if (j->dev) {
        check(gpuws_extract(NULL, j->side, j->side, j->dev, &eo, &j->cat), "gpuws_extract");
        return;
    }
    gpuws_extract_host_options o = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    o.extract = &eo, o.max_device_bytes = j->budget;
    check(gpuws_extract_host(j->ctx, j->side, j->side, j->in, &o, &j->cat), "gpuws_extract_host");
    check(gpuws_extract_host_bands(j->ctx, j->side, j->side, &o, &j->band_rows, &j->bands), "gpuws_extract_host_bands");
}

/* Whether two catalogues hold the same objects, column by column. */
static bool same_catalog(const gpuws_extract_catalog *a, const gpuws_extract_catalog *b)
{
    if (a->num_objects != b->num_objects) return false;
    for (size_t i = 0; i < a->num_objects; i++) {
        const gpuws_object *p = &a->objects[i], *q = &b->objects[i];
        if (p->npix != q->npix || p->xmin != q->xmin || p->ymin != q->ymin || p->flag != q->flag || p->x != q->x ||
            p->y != q->y || p->x2 != q->x2 || p->flux != q->flux || p->cflux != q->cflux || p->a != q->a ||
            p->theta != q->theta)
            return false;
    }
    return true;
}

static void run_extract(gpuws_context *ctx, size_t side, int reps, uint64_t budget)
{
    const size_t n = side * side;
    float *sky = must_alloc(n * sizeof *sky);
    for (size_t i = 0; i < n; i++) { /* noise of sigma 1: the sum of four uniforms, scaled */
        const uint64_t r = mix(i);
        const double u =
            (double)(r & 0xffff) + (double)((r >> 16) & 0xffff) + (double)((r >> 32) & 0xffff) + (double)(r >> 48);
        sky[i] = (float)((u / 65536.0 - 2.0) * sqrt(3.0));
    }
    for (size_t cy = 20; cy + 8 < side; cy += 40)
        for (size_t cx = 20; cx + 8 < side; cx += 40) {
            const double amp = 3.0 + (double)(mix(cy * side + cx) % 1000) * 0.05;
            for (int dy = -7; dy <= 7; dy++)
                for (int dx = -7; dx <= 7; dx++)
                    sky[(cy + (size_t)dy) * side + cx + (size_t)dx] += (float)(amp * exp(-(dx * dx + dy * dy) / 4.5));
        }
    extract_job r = { ctx, side, NULL, NULL, 0, 0, 0, NULL };
    check(gpuws_buffer_create(ctx, n * sizeof *sky, &r.dev), "image buffer");
    check(gpuws_buffer_write(r.dev, 0, sky, n * sizeof *sky), "image upload");
    const timing t = time_calls(extract_call, &r, reps);
    printf("extract %zu^2, SEP's defaults, %zu objects: device-resident %.1f ms median, %.1f min\n", side,
           r.cat->num_objects, t.med, t.min);
    gpuws_buffer_destroy(r.dev);
    for (int pinned = 1; pinned >= 0; pinned--) {
        float *in = host_alloc(ctx, pinned, n * sizeof *in);
        memcpy(in, sky, n * sizeof *in);
        extract_job ji = { ctx, side, in, NULL, 0, 0, 0, NULL }, jb = { ctx, side, in, NULL, budget << 20, 0, 0, NULL };
        const timing ti = time_calls(extract_call, &ji, reps);
        const timing tb = time_calls(extract_call, &jb, reps);
        const bool same = same_catalog(ji.cat, r.cat) && same_catalog(jb.cat, r.cat);
        printf("  %s: in-core (%zu band) %.1f ms median, %.1f min | %llu MiB: %zu bands of %zu rows %.1f ms median, "
               "%.1f min | streamed / in-core %.2f, streamed / device-resident %.2f (medians) | catalogues %s\n",
               pinned ? "pinned" : "malloc'd", ji.bands, ti.med, ti.min, (unsigned long long)budget, jb.bands,
               jb.band_rows, tb.med, tb.min, ti.med / tb.med, t.med / tb.med, same ? "identical" : "DIFFER");
        fflush(stdout);
        gpuws_extract_catalog_free(ji.cat), gpuws_extract_catalog_free(jb.cat);
        host_free(ctx, pinned, in);
        if (!same) exit(1);
    }
    gpuws_extract_catalog_free(r.cat);
    free(sky);
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cuda";
    const size_t side = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 32768;
    const int reps = argc > 3 ? atoi(argv[3]) : 5;
    const uint64_t budget = argc > 4 ? strtoull(argv[4], NULL, 10) : 1024;
    const char *what = argc > 5 ? argv[5] : "both";
    if (side < 64 || reps < 1 || reps > 64 || budget < 1 ||
        (strcmp(what, "conv") && strcmp(what, "label") && strcmp(what, "both") && strcmp(what, "extract"))) {
        fprintf(stderr, "usage: gpuws-large-banded BACKEND [SIDE >= 64 [REPS 1..64 [BUDGET_MIB >= 1 "
                        "[conv|label|both|extract]]]]\n");
        return 2;
    }
    gpuws_context *ctx = open_backend(backend);
    float kern[225];
    for (int i = 0; i < 15; i++)
        for (int j = 0; j < 15; j++) {
            const double x = -2 + 4.0 * j / 14, y = -2 + 4.0 * i / 14;
            kern[i * 15 + j] = (float)exp(-(x * x + y * y) / 2);
        }
    if (!strcmp(what, "extract")) run_extract(ctx, side, reps, budget);
    else if (strcmp(what, "label")) run(ctx, true, side, reps, budget, kern);
    if (strcmp(what, "conv") && strcmp(what, "extract")) run(ctx, false, side, reps, budget, kern);
    gpuws_context_destroy(ctx);
    return 0;
}
