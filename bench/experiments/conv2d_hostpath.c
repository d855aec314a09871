/* Experiment (not part of the library; issue 3): what a convolve2d row of `gpuws bench` holds besides the kernel.
 * On the workshop case (2048^2 deltas (*) 15x15 Gaussian, full, fill 0), for each backend named on the command line
 * (GPUWS_OPENCL_PLATFORM picks the platform) and each dtype:
 *   host     the host's wall time per library call, 200 calls back to back without waiting (validation, plan,
 *            kernel lookup, arguments, the launch itself)
 *   row      the bench's measure: an event before and after one call, waited for; median of 60
 *   batch10  events around 10 calls back to back, divided by 10: the device's time per call once the host runs
 *            ahead (kernel time plus whatever gap remains between kernels); median of 20
 *   floor    two events with nothing between them; median of 60
 * row - batch10 is what one call costs beyond its device work when the device waits for it.
 * usage: conv2d_hostpath BACKEND...   (link with libgpuws; bench/gpu_explore.sh step `hostpath`) */
#define _POSIX_C_SOURCE 199309L
#include "gpuws.h"
#include "gpuws/algorithms.h"
#include "host_timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 2048, K = 15 };

#define OK(x)                                                                                                   \
    do {                                                                                                        \
        if ((x) != GPUWS_OK) {                                                                                  \
            fprintf(stderr, "%s: %s: %s\n", name, #x, gpuws_last_error());                                    \
            return 1;                                                                                           \
        }                                                                                                       \
    } while (0)

static int run(const char *name, gpuws_dtype dt)
{
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = name;
    gpuws_context *ctx;
    OK(gpuws_context_create(&ctx, &co));
    const size_t es = dt == GPUWS_F32 ? 4 : 8, oh = N + K - 1;
    double *img = calloc((size_t)N * N, sizeof(double)), *ker = malloc(K * K * sizeof(double));
    if (!img || !ker) return 1;
    for (int y = 8; y < N; y += 16)
        for (int x = 8; x < N; x += 16) img[(size_t)y * N + x] = 1.0;
    for (int j = 0; j < K; j++)
        for (int i = 0; i < K; i++) {
            const double x = -2.0 + 4.0 * i / (K - 1), y = -2.0 + 4.0 * j / (K - 1);
            ker[j * K + i] = exp(-(x * x + y * y) / 2);
        }
    if (dt == GPUWS_F32) { /* narrow in place */
        float *f = (float *)img, *g = (float *)ker;
        for (size_t i = 0; i < (size_t)N * N; i++) f[i] = (float)img[i];
        for (int i = 0; i < K * K; i++) g[i] = (float)ker[i];
    }
    gpuws_buffer *bi, *bk, *bo;
    gpuws_stream *s;
    gpuws_event *e0, *e1;
    OK(gpuws_buffer_create(ctx, (size_t)N * N * es, &bi));
    OK(gpuws_buffer_create(ctx, K * K * es, &bk));
    OK(gpuws_buffer_create(ctx, oh * oh * es, &bo));
    OK(gpuws_buffer_write(bi, 0, img, (size_t)N * N * es));
    OK(gpuws_buffer_write(bk, 0, ker, K * K * es));
    OK(gpuws_context_get_default_stream(ctx, &s));
    OK(gpuws_event_create(ctx, &e0));
    OK(gpuws_event_create(ctx, &e1));
#define CALL() OK(gpuws_convolve2d(s, dt, bi, N, N, 0, bk, K, K, NULL, bo))
    for (int i = 0; i < 5; i++) CALL();
    OK(gpuws_stream_synchronize(s));
    double host[5], row[60], batch[20], fl[60];
    for (int r = 0; r < 5; r++) {
        const double t0 = now_us();
        for (int i = 0; i < 200; i++) CALL();
        host[r] = (now_us() - t0) / 200;
        OK(gpuws_stream_synchronize(s));
    }
    for (int r = 0; r < 60; r++) {
        OK(gpuws_event_record(e0, s));
        CALL();
        OK(gpuws_event_record(e1, s));
        OK(gpuws_stream_synchronize(s));
        double ms;
        OK(gpuws_event_elapsed_ms(e0, e1, &ms));
        row[r] = ms * 1e3;
        OK(gpuws_event_record(e0, s));
        OK(gpuws_event_record(e1, s));
        OK(gpuws_stream_synchronize(s));
        OK(gpuws_event_elapsed_ms(e0, e1, &ms));
        fl[r] = ms * 1e3;
    }
    for (int r = 0; r < 20; r++) {
        OK(gpuws_event_record(e0, s));
        for (int i = 0; i < 10; i++) CALL();
        OK(gpuws_event_record(e1, s));
        OK(gpuws_stream_synchronize(s));
        double ms;
        OK(gpuws_event_elapsed_ms(e0, e1, &ms));
        batch[r] = ms * 1e3 / 10;
    }
    /* for scale: the host time of a small library call (threshold of 1024 values: 4 kernel arguments) and of an
     * event record, 200 back to back */
    double thr[5], rec[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now_us();
        for (int i = 0; i < 200; i++) OK(gpuws_threshold(s, 1024, bi, 0.5f, bo));
        thr[r] = (now_us() - t0) / 200;
        OK(gpuws_stream_synchronize(s));
        t0 = now_us();
        for (int i = 0; i < 200; i++) OK(gpuws_event_record(e0, s));
        rec[r] = (now_us() - t0) / 200;
        OK(gpuws_stream_synchronize(s));
    }
    gpuws_device_info di;
    gpuws_context_get_device_info(ctx, &di);
    printf("%-7s     threshold(1024) host %5.2f us/call, event record host %5.2f us\n", name, median(thr, 5), median(rec, 5));
    printf("%-7s %s %-30.30s host %6.2f us/call  row %6.2f us  batch10 %6.2f us/call  floor %5.2f us\n", name,
           dt == GPUWS_F32 ? "f32" : "f64", di.name, median(host, 5), median(row, 60), median(batch, 20), median(fl, 60));
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    gpuws_buffer_destroy(bo);
    gpuws_context_destroy(ctx);
    free(img);
    free(ker);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: %s BACKEND...\n", argv[0]), 2;
    int rc = 0;
    for (int round = 0; round < 2; round++)
        for (int b = 1; b < argc; b++) rc |= run(argv[b], GPUWS_F32) | run(argv[b], GPUWS_F64);
    return rc;
}
