/* The benchmark engine behind `gpuws bench`: workloads × targets (backend/device), each result checked against
 * the scalar reference before it is timed, timed with device events after warm-up, median of N.
 * Benchmarks never assert a time; tests never measure one. */
#ifndef GPUWS_BENCH_H
#define GPUWS_BENCH_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum { BENCH_SMALL = 0, BENCH_DEFAULT = 1, BENCH_LARGE = 2 } bench_size;

/* What one run of a workload does: the fewest bytes it must move through device memory (each input read once,
 * each output written once) and the arithmetic it must do. */
typedef struct {
    double bytes;
    double flops;
    char size_label[48]; /* "2^28 f32", "2048x2048 * 15x15" */
} bench_counts;

typedef struct bench_workload {
    const char *algorithm; /* "reduce" */
    const char *variant;   /* "sum_f32" */
    /* true: run() includes the host<->device transfers (upload, compute, download), the workshop's "fairer
     * comparison"; false: inputs stay on the device and only the computation is timed. */
    bool end_to_end;
    /* Allocates and uploads inputs on ctx for the size class; fills counts. state is the workload's. */
    gpuws_status (*setup)(gpuws_context *ctx, bench_size size, void **state, bench_counts *counts);
    /* Enqueues one run on s (no synchronisation inside). */
    gpuws_status (*run)(void *state, gpuws_stream *s);
    /* After one run has finished: compares the output with the scalar reference (computed once, on the host).
     * Returns true when correct; otherwise writes why to msg. */
    bool (*check)(void *state, char *msg, size_t n);
    void (*teardown)(void *state);
} bench_workload;

/* Workloads register themselves: BENCH_WORKLOAD(w) in any bench/workloads_<algo>.c. */
void bench_register(const bench_workload *w);
/* Every registered workload sorted by algorithm then variant; NULL-terminated. */
const bench_workload *const *bench_workloads(void);
#define BENCH_WORKLOAD(W)                                                                                       \
    __attribute__((constructor)) static void bench_register_##W(void) { bench_register(&W); }

/* One backend/device to run on. Every OpenCL device is its own target (NVIDIA, PoCL, other vendors). */
typedef struct {
    gpuws_backend_kind backend;
    size_t device;            /* index within the backend, no platform filter */
    gpuws_device_info info;
    char label[200];          /* "cuda | NVIDIA H100 80GB HBM3" */
} bench_target;

/* Fills up to max targets of the listed backends (bit i = gpuws_backend_kind i) whose OpenCL platform name
 * contains platform (NULL = any). Returns how many. */
size_t bench_targets(unsigned backend_mask, const char *platform, bench_target *out, size_t max);

typedef struct {
    const bench_workload *w;
    const bench_target *t;
    bench_counts counts;
    bool ok;                  /* false: FAILED (wrong result or error); not timed */
    char error[256];
    double median_ms, min_ms;
    int repeats;
    double ceiling_gbs;       /* device-to-device copy bandwidth measured on this target in this run */
} bench_result;

/* Measures the copy bandwidth (bytes read + written per second) of a large device-to-device copy on ctx. */
gpuws_status bench_copy_bandwidth(gpuws_context *ctx, double *gbs);
/* Runs one workload on one target: setup, one checked run, warm-up, `repeat` timed runs. */
void bench_run(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
               bench_result *r);

#endif
