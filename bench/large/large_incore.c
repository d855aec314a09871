/* In-core calls on images of more than 2^31 pixels (docs/scale.md, "More than 2^31 pixels in device memory"):
 *
 *   gpuws-large-incore BACKEND [WIDTH [REPS [label|sources|both|devices [HEIGHT]]]]
 *   (defaults: cuda 65536 3 both WIDTH)
 *
 * A WIDTH x HEIGHT sky (noise of sigma 1 from a hash of the pixel index, a Gaussian source every 96 pixels on a jittered
 * grid, peaks 10..1000) made on the host's cores. label: its 3-sigma mask labelled by gpuws_label on device buffers
 * (4- and 8-connectivity, wall clock to the stream's end, median and minimum of REPS), checked byte for byte against
 * gpuws_label_host, and three bands of 512 rows checked against the CPU backend (every pixel's component one of
 * ours, no two interior components of the CPU's one of ours). sources: gpuws_find_sources from pinned and from
 * malloc'd memory (REPS calls after a first one; device-event times), checked against gpuws_find_sources_host.
 * devices: the pipeline over the devices GPUWS_DEVICE names (run_devices).
 * Needs about 52 GiB of host memory and 36 GiB of device memory at 65536. */
#define LARGE_PROGRAM "gpuws-large-incore"
#include "gpuws.h"
#include "gpuws/algorithms.h"
#include "large_support.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void make_sky(float *img, size_t w, size_t h)
{
#pragma omp parallel for schedule(static)
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            const uint64_t r = mix(y * w + x);
            double u = 0;
            for (int k = 0; k < 4; k++) u += (double)((r >> (16 * k)) & 0xffff) / 65536.0;
            img[y * w + x] = (float)((u - 2.0) * 1.7320508); /* Irwin-Hall of 4, scaled to sigma 1 */
        }
#pragma omp parallel for schedule(dynamic)
    for (size_t gy = 0; gy < h / 96; gy++)
        for (size_t gx = 0; gx < w / 96; gx++) {
            const uint64_t r = mix(~(gy * 100003 + gx));
            const double cx = (double)(gx * 96 + 10 + r % 76), cy = (double)(gy * 96 + 10 + (r >> 8) % 76);
            const double peak = 10.0 * pow(100.0, (double)((r >> 16) & 0xffff) / 65536.0);
            for (int dy = -6; dy <= 6; dy++)
                for (int dx = -6; dx <= 6; dx++) {
                    const double ex = dx, ey = dy;
                    img[(size_t)(cy + dy) * w + (size_t)(cx + dx)] +=
                        (float)(peak * exp(-(ex * ex + ey * ey) / (2 * 1.5 * 1.5)));
                }
        }
}

/* Rows r0 .. r0 + k - 1 of the mask labelled alone on the CPU backend against our labels there. */
static void spot_check(const uint8_t *mask, const int32_t *got, size_t w, size_t r0, size_t k, int conn, size_t n)
{
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = "cpu";
    gpuws_context *cpu;
    check(gpuws_context_create(&cpu, &co), "the CPU backend");
    int32_t *cl = must_alloc(w * k * sizeof *cl);
    size_t nc;
    check(gpuws_label_host(cpu, w, k, mask + r0 * w, 0, conn, NULL, cl, &nc), "label_host on the CPU backend");
    int32_t *c2g = calloc(nc + 1, sizeof *c2g), *seen = calloc(n + 1, sizeof *seen);
    uint8_t *edge = calloc(nc + 1, 1);
    if (!c2g || !seen || !edge) check(GPUWS_ERR_OUT_OF_MEMORY, "spot check");
    size_t bad = 0, merged = 0;
    for (size_t i = 0; i < w * k; i++) {
        const int32_t c = cl[i], g = got[r0 * w + i];
        if ((c == 0) != (g == 0)) bad++;
        else if (c && !c2g[c]) c2g[c] = g;
        else if (c && c2g[c] != g) bad++;
    }
    for (size_t x = 0; x < w; x++) edge[cl[x]] = edge[cl[(k - 1) * w + x]] = 1;
    for (size_t c = 1; c <= nc; c++) {
        if (edge[c] || !c2g[c]) continue;
        merged += seen[c2g[c]] != 0;
        seen[c2g[c]] = (int32_t)c;
    }
    printf("  rows %zu..%zu on the CPU backend: %zu components, %zu pixels disagree, %zu interior components merged\n",
           r0, r0 + k - 1, nc, bad, merged);
    free(cl), free(c2g), free(seen), free(edge);
    gpuws_context_destroy(cpu);
}

static void run_label(gpuws_context *ctx, const float *img, size_t w, size_t h, int reps)
{
    const size_t n = w * h;
    gpuws_stream *ds;
    check(gpuws_context_get_default_stream(ctx, &ds), "default stream");
    uint8_t *mask = must_alloc(n);
    int32_t *got = must_alloc(n * sizeof *got), *want = must_alloc(n * sizeof *want);
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) mask[i] = img[i] > 3.0f;
    double t[64];
    for (int conn = 4; conn <= 8; conn += 4) {
        gpuws_buffer *dm, *dl;
        check(gpuws_buffer_create(ctx, n, &dm), "mask buffer");
        check(gpuws_buffer_create(ctx, n * sizeof(int32_t), &dl), "labels buffer");
        check(gpuws_buffer_write(dm, 0, mask, n), "mask upload");
        size_t N = 0, Nh = 0;
        for (int r = 0; r < reps; r++) {
            const double a = now();
            check(gpuws_label(NULL, w, h, dm, conn, dl, &N), "gpuws_label");
            check(gpuws_stream_synchronize(ds), "synchronize");
            t[r] = (now() - a) * 1e3;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        check(gpuws_buffer_read(dl, 0, got, n * sizeof(int32_t)), "labels download");
        const double b = now();
        check(gpuws_label_host(ctx, w, h, mask, 0, conn, NULL, want, &Nh), "gpuws_label_host");
        const double th = (now() - b) * 1e3;
        size_t diff = 0;
#pragma omp parallel for reduction(+ : diff)
        for (size_t i = 0; i < n; i++) diff += got[i] != want[i];
        printf("label, connectivity %d: N %zu (label_host %zu); gpuws_label median %.1f ms, min %.1f ms of %d (%.1f G "
               "pixels/s); label_host %.1f ms; %zu labels differ\n",
               conn, N, Nh, t[reps / 2], t[0], reps, (double)n / t[reps / 2] / 1e6, th, diff);
        const size_t k = 512, starts[3] = { 0, h / 2 - k / 2, h - k };
        for (int q = 0; q < 3 && h >= k; q++) spot_check(mask, got, w, starts[q], k, conn, N);
        gpuws_buffer_destroy(dm);
        gpuws_buffer_destroy(dl);
        fflush(stdout);
    }
    free(mask), free(got), free(want);
}

static void run_sources(gpuws_context *ctx, const float *img, size_t w, size_t h, int reps)
{
    const size_t n = w * h;
    float *pin;
    const double p0 = now();
    check(gpuws_host_alloc(ctx, n * sizeof *pin, (void **)&pin), "pinned image");
    printf("pinning %zu bytes: %.1f s\n", n * sizeof *pin, now() - p0);
    memcpy(pin, img, n * sizeof *pin);
    gpuws_catalog *cat = NULL, *ref = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r <= reps; r++) {
            gpuws_catalog_free(cat);
            const double a = now();
            check(gpuws_find_sources(ctx, pass ? img : pin, w, h, NULL, &cat), "gpuws_find_sources");
            const double ms = (now() - a) * 1e3;
            printf("find_sources from %s memory, call %d: %.1f ms; device events: upload %.1f clip %.1f threshold %.1f "
                   "label %.1f measure %.1f total %.1f; %zu sources\n",
                   pass ? "malloc'd" : "pinned", r, ms, cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label,
                   cat->ms_measure, cat->ms_total, cat->num_sources);
        }
        fflush(stdout);
    }
    gpuws_host_free(ctx, pin);
    const double b = now();
    check(gpuws_find_sources_host(ctx, img, w, h, NULL, NULL, &ref), "gpuws_find_sources_host");
    printf("find_sources_host: %.1f ms (clip %.1f, threshold %.1f, label %.1f, measure %.1f; %d iterations); %zu "
           "sources\n",
           (now() - b) * 1e3, ref->ms_clip, ref->ms_threshold, ref->ms_label, ref->ms_measure, ref->clip.iterations,
           ref->num_sources);
    const int same = cat->num_sources == ref->num_sources;
    size_t npix = 0, peak = 0;
    double dflux = 0, dpos = 0;
    for (size_t i = 0; same && i < cat->num_sources; i++) {
        const gpuws_source *a = &cat->sources[i], *c = &ref->sources[i];
        npix += a->npix != c->npix;
        peak += a->peak != c->peak || a->peak_x != c->peak_x || a->peak_y != c->peak_y;
        dflux = fmax(dflux, fabs(a->flux - c->flux) / fmax(fabs(c->flux), 1e-30));
        dpos = fmax(dpos, fmax(fabs(a->x - c->x), fabs(a->y - c->y)));
    }
    printf("in core against the host pipeline: same count %d, npix differ %zu, peaks differ %zu, flux %.3g relative, "
           "centres %.3g px; clipped count %s, median %s, std %.3g relative\n",
           same, npix, peak, dflux, dpos, cat->clip.count == ref->clip.count ? "equal" : "DIFFER",
           cat->clip.median == ref->clip.median ? "equal" : "DIFFER",
           fabs(cat->clip.std - ref->clip.std) / ref->clip.std);
    gpuws_catalog_free(cat), gpuws_catalog_free(ref);
}

/* The source pipeline over the devices of GPUWS_DEVICE (gpuws_contexts_create): the image's rows in parts of whole
 * measurement blocks, each part in its device's memory, gpuws_find_sources_parts on the first d devices for d = 1
 * and all of them (wall clock, median of REPS calls after a first one; the device-resident part of the pipeline),
 * then gpuws_find_sources from pinned memory over one device and over all (options.more_contexts). The catalogues
 * are compared with the one-device gpuws_find_sources'. */
static void run_devices(const char *backend, const float *img, size_t w, size_t h, int reps)
{
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = backend;
    gpuws_context *ctxs[8];
    size_t nd = 0;
    check(gpuws_contexts_create(&co, 8, ctxs, &nd), "contexts (GPUWS_DEVICE)");
    printf("%zu devices\n", nd);
    const size_t n = w * h, br = gpuws_find_sources_host_block_rows(w), blocks = (h + br - 1) / br;
    gpuws_catalog *one = NULL;
    for (int r = 0; r < 3; r++) { /* the last of three: the buffers kept, the device warm */
        gpuws_catalog_free(one);
        check(gpuws_find_sources(ctxs[0], img, w, h, NULL, &one), "gpuws_find_sources");
        printf("gpuws_find_sources on one device, call %d, device events: clip %.1f threshold %.1f label %.1f measure "
               "%.1f download %.1f: %.1f ms without the upload\n",
               r, one->ms_clip, one->ms_threshold, one->ms_label, one->ms_measure, one->ms_download,
               one->ms_total - one->ms_upload);
    }
    double *ms = must_alloc((size_t)reps * sizeof *ms);
    const size_t counts[2] = { 1, nd };
    for (int k = 0; k < (nd > 1 ? 2 : 1); k++) {
        const size_t d = counts[k];
        gpuws_image_part parts[8];
        gpuws_buffer *bufs[8];
        for (size_t p = 0; p < d; p++) {
            const size_t r0 = blocks * p / d * br, r1 = blocks * (p + 1) / d * br < h ? blocks * (p + 1) / d * br : h;
            check(gpuws_stream_create(ctxs[p], &parts[p].stream), "stream");
            check(gpuws_buffer_create(ctxs[p], (r1 - r0) * w * sizeof(float), &bufs[p]), "part's buffer");
            check(gpuws_buffer_write(bufs[p], 0, img + r0 * w, (r1 - r0) * w * sizeof(float)), "part's upload");
            parts[p].image = bufs[p], parts[p].rows = r1 - r0;
        }
        gpuws_catalog *cat = NULL;
        for (int r = -1; r < reps; r++) {
            gpuws_catalog_free(cat);
            const double a = now();
            check(gpuws_find_sources_parts(parts, d, w, NULL, &cat), "gpuws_find_sources_parts");
            if (r >= 0) ms[r] = (now() - a) * 1e3;
            printf("find_sources_parts on %zu device(s), call %d: %.1f ms (clip %.1f, threshold %.1f, label %.1f, "
                   "measure %.1f); %zu sources\n",
                   d, r + 1, (now() - a) * 1e3, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure,
                   cat->num_sources);
        }
        qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
        size_t npix = 0;
        double dflux = 0;
        for (size_t i = 0; cat->num_sources == one->num_sources && i < cat->num_sources; i++) {
            npix += cat->sources[i].npix != one->sources[i].npix || cat->sources[i].peak != one->sources[i].peak;
            dflux = fmax(dflux, fabs(cat->sources[i].flux - one->sources[i].flux) / fabs(one->sources[i].flux));
        }
        printf("find_sources_parts on %zu device(s): median %.1f ms, min %.1f; against gpuws_find_sources: %zu and "
               "%zu sources, %zu differ in npix or peak, flux within %.3g relative, clipped count %s, std %.3g "
               "relative\n",
               d, ms[reps / 2], ms[0], cat->num_sources, one->num_sources, npix, dflux,
               cat->clip.count == one->clip.count ? "equal" : "DIFFERS", fabs(cat->clip.std / one->clip.std - 1));
        gpuws_catalog_free(cat);
        for (size_t p = 0; p < d; p++) gpuws_buffer_destroy(bufs[p]), gpuws_stream_destroy(parts[p].stream);
        fflush(stdout);
    }
    float *pin;
    check(gpuws_host_alloc(ctxs[0], n * sizeof *pin, (void **)&pin), "pinned image");
    memcpy(pin, img, n * sizeof *pin);
    for (int k = 0; k < (nd > 1 ? 2 : 1); k++) {
        gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
        o.more_contexts = ctxs + 1, o.num_more_contexts = counts[k] - 1;
        gpuws_catalog *cat = NULL;
        for (int r = -1; r < reps; r++) {
            gpuws_catalog_free(cat);
            const double a = now();
            check(gpuws_find_sources(ctxs[0], pin, w, h, &o, &cat), "gpuws_find_sources");
            if (r >= 0) ms[r] = (now() - a) * 1e3;
        }
        qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
        printf("find_sources from pinned memory on %zu device(s): median %.1f ms, min %.1f (upload %.1f ms); %zu "
               "sources\n",
               counts[k], ms[reps / 2], ms[0], cat->ms_upload, cat->num_sources);
        gpuws_catalog_free(cat);
    }
    gpuws_host_free(ctxs[0], pin);
    free(ms);
    gpuws_catalog_free(one);
    gpuws_contexts_destroy(ctxs, nd);
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cuda";
    const size_t side = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 65536;
    const size_t height = argc > 5 ? (size_t)strtoull(argv[5], NULL, 10) : side;
    const int reps = argc > 3 ? atoi(argv[3]) : 3;
    const char *what = argc > 4 ? argv[4] : "both";
    if (side < 512 || height < 512 || reps < 1 || reps > 64 ||
        (strcmp(what, "label") && strcmp(what, "sources") && strcmp(what, "both") && strcmp(what, "devices"))) {
        fprintf(stderr, "usage: gpuws-large-incore BACKEND [WIDTH >= 512 [REPS 1..64 [label|sources|both|devices "
                        "[HEIGHT >= 512]]]]\n");
        return 2;
    }
    gpuws_context *ctx = open_backend(backend);
    const size_t n = side * height;
    const double t0 = now();
    float *img = must_alloc(n * sizeof *img);
    make_sky(img, side, height);
    printf("%s, %zu x %zu (%zu pixels): sky made in %.1f s\n", backend, side, height, n, now() - t0);
    fflush(stdout);
    if (!strcmp(what, "devices")) run_devices(backend, img, side, height, reps);
    else if (strcmp(what, "sources")) run_label(ctx, img, side, height, reps);
    if (!strcmp(what, "sources") || !strcmp(what, "both")) run_sources(ctx, img, side, height, reps);
    free(img);
    gpuws_context_destroy(ctx);
    return 0;
}
