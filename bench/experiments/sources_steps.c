/* Experiment (not part of the library; issue 4): where gpuws_find_sources spends its time on each API, to split the
 * pipeline row's OpenCL/CUDA gap into steps. For each backend named on the command line (a gpuws backend list such as
 * "cuda" or "opencl"; GPUWS_OPENCL_PLATFORM picks the platform) it runs the pipeline N times on one synthetic 2048^2
 * sky from pinned memory (noise sigma 1e-3 and 300 Gaussian point sources: the shape of the bench's sky, not the
 * same pixels) and prints the medians of the catalogue's device-event step times and of the host's wall time per
 * call (the bench's row is an event pair around the call, between these two).
 * usage: sources_steps N SIDE BACKEND...   (link with libgpuws; see bench/gpu_explore.sh, step `steps`) */
#define _POSIX_C_SOURCE 199309L
#include "gpuws.h"
#include "gpuws/algorithms.h"
#include "host_timing.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

int main(int argc, char **argv)
{
    if (argc < 4) return fprintf(stderr, "usage: %s N SIDE BACKEND...\n", argv[0]), 2;
    const int reps = atoi(argv[1]);
    const size_t side = (size_t)atol(argv[2]), n = side * side;
    if (reps < 1 || reps > 10000 || side < 64) return fprintf(stderr, "bad N or SIDE\n"), 2;
    for (int b = 3; b < argc; b++) {
        gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
        co.backend = argv[b];
        gpuws_context *ctx = NULL;
        float *img = NULL;
        if (gpuws_context_create(&ctx, &co) || gpuws_host_alloc(ctx, n * sizeof(float), (void **)&img)) {
            fprintf(stderr, "%s: %s\n", argv[b], gpuws_last_error());
            gpuws_context_destroy(ctx);
            continue;
        }
        rng = 88172645463325252ull;
        for (size_t i = 0; i < n; i += 2) { /* Box-Muller pairs */
            const double r = sqrt(-2.0 * log(uniform())), a = 6.283185307179586 * uniform();
            img[i] = (float)(1e-3 * r * cos(a));
            if (i + 1 < n) img[i + 1] = (float)(1e-3 * r * sin(a));
        }
        for (int k = 0; k < 300; k++) { /* log-uniform peaks 10..1000 sigma, beam sigma 1.5 px */
            const double x = 8 + uniform() * (side - 16), y = 8 + uniform() * (side - 16), f = 1e-2 * pow(100.0, uniform());
            for (int dy = -6; dy <= 6; dy++)
                for (int dx = -6; dx <= 6; dx++) {
                    const long px = (long)x + dx, py = (long)y + dy;
                    const double ddx = px - x, ddy = py - y;
                    img[(size_t)py * side + (size_t)px] += (float)(f * exp(-(ddx * ddx + ddy * ddy) / (2 * 1.5 * 1.5)));
                }
        }
        gpuws_device_info di;
        gpuws_context_get_device_info(ctx, &di);
        double *t[8];
        for (int i = 0; i < 8; i++) t[i] = calloc((size_t)reps, sizeof(double));
        size_t nsrc = 0;
        int ok = 1;
        for (int r = -2; r < reps && ok; r++) { /* two warm-up calls */
            gpuws_catalog *cat = NULL;
            const double h0 = now_us() * 1e-3;
            if (gpuws_find_sources(ctx, img, side, side, NULL, &cat)) {
                fprintf(stderr, "%s: %s\n", argv[b], gpuws_last_error());
                ok = 0;
                break;
            }
            const double h1 = now_us() * 1e-3;
            if (r >= 0) {
                const double v[8] = {cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure,
                                     cat->ms_download, cat->ms_total, h1 - h0};
                for (int i = 0; i < 8; i++) t[i][r] = v[i];
            }
            nsrc = cat->num_sources;
            gpuws_catalog_free(cat);
        }
        if (ok) {
            static const char *names[8] = {"upload", "clip", "threshold", "label", "measure", "download", "total", "host"};
            printf("%-8s %-40.40s %zu sources, medians of %d (ms):", argv[b], di.name, nsrc, reps);
            for (int i = 0; i < 8; i++) printf(" %s %.4f", names[i], median(t[i], reps));
            printf("\n");
        }
        for (int i = 0; i < 8; i++) free(t[i]);
        gpuws_host_free(ctx, img);
        gpuws_context_destroy(ctx);
    }
    return 0;
}
