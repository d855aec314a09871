/* The benchmark engine behind `gpuws bench`: workloads × targets (backend/device), each result checked against
 * the scalar reference before it is timed, timed with device events after warm-up, median of N; the device's
 * ceilings (copy bandwidth, FMA rate) measured in the same run; reports as a table, JSON, CSV and SVG.
 * Benchmarks never assert a time; tests never measure one. docs/benchmarks.md describes the method and columns. */
#ifndef GPUWS_BENCH_H
#define GPUWS_BENCH_H

#include "common/cases.h" /* bench_size, bench_counts, bench_workload: a workload is an algorithm's case */
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every registered workload (the algorithms' cases and bench/workloads_*.c) sorted by algorithm then variant;
 * NULL-terminated. */
const bench_workload *const *bench_workloads(void);

/* One backend/device to run on. Every OpenCL device is its own target (NVIDIA, PoCL, other vendors). */
typedef struct {
    gpuws_backend_kind backend;
    size_t device; /* index within the backend, no platform filter */
    gpuws_device_info info;
    char label[200]; /* "cuda | NVIDIA H100 80GB HBM3" */
    /* fields added later: zero is the default */
    char short_label[72]; /* "cuda NVIDIA H100 80GB HBM3", "opencl/PoCL cpu-haswell" (tables, legends) */
    double copy_gbs;      /* ceilings measured in this run; 0 = not measured (see ceiling_error) */
    double fma_gflops[2]; /* [0] f32, [1] f64 */
    char ceiling_error[256];
    double timer_floor_us; /* the event timer's own floor: median time between two events recorded back to back
                               * with nothing between them (every row's median includes it); 0 = not measured */
} bench_target;

/* Fills up to max targets of the listed backends (bit i = gpuws_backend_kind i) whose OpenCL platform name
 * contains platform (case-insensitive; NULL = any). Returns how many. */
size_t bench_targets(unsigned backend_mask, const char *platform, bench_target *out, size_t max);

typedef struct {
    const bench_workload *w;
    const bench_target *t;
    bench_counts counts;
    bool ok; /* false: FAILED (wrong result or error); not timed */
    char error[256];
    double median_ms, min_ms;
    int repeats;
    double ceiling_gbs; /* device-to-device copy bandwidth measured on this target in this run */
    /* fields added later; filled by bench_derive, zero when they do not apply */
    bench_size size;
    double gbs, gflops;       /* counts over the median time */
    double frac_bw, frac_fma; /* of the target's copy bandwidth / FMA peak for the workload's dtype */
    double fraction;          /* the larger of the two: the roofline's binding side */
    const char *bound;        /* "memory", "compute", "host link" (end-to-end rows: no device ceiling); NULL */
    double speedup;           /* t(cpu backend, same workload and size) / t(this row) */
    double ocl_cuda;          /* OpenCL rows: t(cuda on the same device) / t(this row); 0 = no CUDA row */
    /* back to back (nvbench's "batch" measurement): batch_calls calls between two events, batch_samples times; the
     * median interval over batch_calls. The timer's floor and the host's time per call overlap the device's work
     * here, as in a stream that is kept busy; 0 = not measured (CPU backend, --back-to-back 0, or a row too long) */
    double batch_ms;
    int batch_calls, batch_samples;
    double ocl_cuda_batch; /* the same ratio as ocl_cuda, of the back-to-back times; 0 = not both measured */
} bench_result;

/* Measures the copy bandwidth (bytes read + written per second) of a large device-to-device copy on ctx. */
gpuws_status bench_copy_bandwidth(gpuws_context *ctx, double *gbs);
/* The same with the copy size chosen for the size class (small: 32 MiB, for tests). */
gpuws_status bench_copy_bandwidth_sized(gpuws_context *ctx, bench_size size, double *gbs);
/* Measures the fused multiply-add rate (GFLOP/s, 2 FLOP per FMA) with the peak kernel (kernels/peak), after
 * checking its result against the closed form. dtype GPUWS_F32 or GPUWS_F64. */
gpuws_status bench_fma_peak(gpuws_context *ctx, gpuws_dtype dtype, bench_size size, double *gflops);
/* Fills t's ceilings (copy bandwidth, FMA f32 and, where the device has it, f64) and its timer floor; problems go to
 * ceiling_error. */
void bench_measure_ceilings(bench_target *t, gpuws_context *ctx, bench_size size);

/* Runs one workload on one target: setup, one checked run, warm-up, `repeat` timed runs. */
void bench_run(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
               bench_result *r);
/* The same, taking fewer timed runs when they would pass budget_s seconds (at least one); the warm-up is left out
 * when the checked run alone took more than a second (slow references on the CPU backend). Then, on GPU targets and
 * for batch_calls >= 2, the back-to-back time (batch_ms): up to `repeat` samples of batch_calls calls between two
 * events, as many as fit budget_s again (at least 3, else none). */
void bench_run_budget(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
                      double budget_s, int batch_calls, bench_result *r);

/* Fills the derived fields of every row: rates, ceiling fractions and the binding side, the speed-up over the CPU
 * backend's row of the same workload and size (the scalar reference) and, for OpenCL rows, t_cuda / t_opencl on
 * the same device (matched by device name), per call and back to back. */
void bench_derive(bench_result *rows, size_t n);

const char *bench_size_name(bench_size s);
/* "convolve2d f32" style workload name into buf. */
const char *bench_workload_name(const bench_workload *w, char *buf, size_t n);
/* The FMA peak a row is measured against: 0 = f32, 1 = f64. */
int bench_flop_index(const bench_workload *w, const bench_counts *c);

/* ---- peers (bench/peers/run_peers.py writes the same rows with backend "cupy", "numpy", "scipy") ---------- */

typedef struct {
    char algorithm[48], variant[48], size[64], size_class[16], backend[24], device[128], error[160];
    bool ok;
    double median_ms;
} bench_peer;

/* One gpuws row against one peer row of the same (algorithm, variant, size class): the best gpuws row per device. */
typedef struct {
    const bench_peer *peer;
    const bench_result *row;
    double ratio;      /* peer time / gpuws time: > 1 means gpuws is faster */
    bool size_differs; /* the size labels describe different sizes (bench_sizes_match) */
} bench_comparison;

/* ---- one whole run, and its reports ---------------------------------------------------------------------- */

typedef struct {
    char date[32]; /* ISO 8601, UTC */
    char host[128];
    char version[16];
    int argc;
    char **argv;
    bench_size size;
    int repeat, cpu_repeat;
    bench_target *targets;
    size_t ntargets;
    bench_result *rows;
    size_t nrows;
    bench_peer *peers;
    size_t npeers;
    bench_comparison *cmp;
    size_t ncmp;
    int batch_calls; /* --back-to-back: calls per back-to-back sample; 0 = not measured */
    bool full;       /* --full (the measurement) rather than the quick default */
    double budget_s; /* --budget: seconds of timed runs per row at most */
} bench_report;

/* The comparisons of rows with peers (see bench_comparison); *out is malloc'd. */
size_t bench_compare(const bench_result *rows, size_t nrows, const bench_peer *peers, size_t npeers,
                     bench_comparison **out);
/* Whether two size labels describe the same size though written differently ("2048x2048 * 15x15" and
 * "2048^2*15x15", "4194304 * 15" and "4M*15", "1000000" and "N = 1e+06"): the same number of elements in their
 * leading dimension expression, and the same label count where both give one. */
bool bench_sizes_match(const char *a, const char *b);
/* Reads a peers file (the rows of a gpuws bench JSON document). 0 on success; else -1 with why in err. */
int bench_read_peers(const char *path, bench_peer **peers, size_t *n, char *err, size_t errn);

/* Table for people: ceilings per target, then one line per row grouped by workload, then the comparisons. */
void bench_print_table(const bench_report *r, FILE *f);
void bench_write_json(const bench_report *r, FILE *f);
void bench_write_csv(const bench_report *r, FILE *f);
/* Grouped horizontal bars per workload, one colour per target (and per peer), log-scale time axis. */
void bench_write_svg(const bench_report *r, FILE *f);
/* Creates the file path, which must not exist, with a report; on failure the file is removed. `gpuws bench` passes
 * a staging path and puts the reports in place all or none (tools/output_files.h). 0 on success; -1 with the
 * reason in err. */
int bench_write_file(const char *path, void (*writer)(const bench_report *, FILE *), const bench_report *r, char *err,
                     size_t errn);

/* The vendor comparison of a merged report (bench/merge.c): one line per workload and size class, one column per
 * target with its median time, and the fastest target with its lead over the next. */
void bench_print_comparison(const bench_report *r, FILE *f);
/* `gpuws bench merge RUN.json ... [--svg FILE] [--json FILE]` (argv[0] is "merge"): reads the JSON reports of runs
 * made on different machines, prints the comparison on out, writes the merged chart and JSON. Returns the exit code:
 * 0, 1 (a run cannot be read or is not a gpuws bench report; a report cannot be written), 2 (usage). */
int bench_merge_main(int argc, char **argv, FILE *out, FILE *err);

/* The `gpuws bench` command with its output streams given (tools/cmd_bench.c passes stdout and stderr):
 * the table goes to out, progress and errors to err. Returns the exit code: 0, 1 (a row FAILED or a run error),
 * 2 (usage: unknown option, backend or algorithm). */
int bench_main(int argc, char **argv, FILE *out, FILE *err);

#endif
