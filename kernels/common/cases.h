/* Cases: one table per algorithm, in kernels/<algo>/<algo>_cases.c. A case is one call of the algorithm on seeded
 * inputs at a size class, checked against the scalar reference with the tolerance the tests state. The same table
 * drives the bench workload (`gpuws bench`, `gpuws selftest`) and the generic test harnesses, which run every
 * registered case on every backend at the TINY size:
 *   tests/test_cases.c      setup, run, synchronise, check;
 *   tests/test_faults.c     every host allocation of the run made to fail in turn (nothing leaks, outputs untouched);
 *   tests/test_bad_input.c  the call on a stream of another context must fail and leave the outputs untouched.
 * (The model: ggml's test-backend-ops.) The case files are compiled into the gpuws tool and the tests, not into the
 * shared library; each registers its cases from a constructor (GPUWS_CASE). How to add an algorithm:
 * CONTRIBUTING.md. */
#ifndef GPUWS_CASES_H
#define GPUWS_CASES_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The seeded inputs: splitmix64, and uniform doubles in [0, 1) from it. */
static inline uint64_t bench_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline double bench_uniform(uint64_t *s) { return (double)(bench_splitmix(s) >> 11) * 0x1.0p-53; }

/* TINY is the tests' size: small enough for a simulator (Oclgrind) to run a case in seconds, yet several
 * work-groups wide. Its value comes last so the other classes keep theirs (JSON reports, array indices). */
typedef enum { BENCH_SMALL = 0, BENCH_DEFAULT = 1, BENCH_LARGE = 2, BENCH_TINY = 3 } bench_size;

/* Which FMA peak a workload's FLOPs are measured against. */
typedef enum {
    BENCH_FLOPS_AUTO = 0, /* f64 when the variant's name contains "f64", else f32 */
    BENCH_FLOPS_F32 = 1,
    BENCH_FLOPS_F64 = 2,
} bench_flop_type;

/* What one run of a workload does: the fewest bytes it must move through device memory (each input read once,
 * each output written once) and the arithmetic it must do. */
typedef struct {
    double bytes;
    double flops;
    char size_label[48]; /* "2^28 f32", "2048x2048 * 15x15" */
    /* fields added later: zero is the default */
    bench_flop_type flop_type;
} bench_counts;

/* One output a case's run writes: a device buffer, or host memory (end-to-end cases, results returned in a host
 * struct). A harness poisons it before a call that must fail and checks it is untouched afterwards. */
typedef struct {
    gpuws_buffer *buffer; /* NULL: host memory at host */
    void *host;
    size_t bytes;
} bench_output;

#define BENCH_MAX_OUTPUTS 4

typedef struct bench_workload {
    const char *algorithm; /* "reduce" */
    const char *variant;   /* "sum_f32" */
    /* true: run() includes the host<->device transfers (upload, compute, download), the workshop's "fairer
     * comparison"; false: inputs stay on the device and only the computation is timed. */
    bool end_to_end;
    /* Allocates and uploads inputs on ctx for the size class; fills counts. state is the workload's; on failure it
     * may be partly made, and teardown releases it. */
    gpuws_status (*setup)(gpuws_context *ctx, bench_size size, void **state, bench_counts *counts);
    /* Enqueues one run on s (no synchronisation inside). */
    gpuws_status (*run)(void *state, gpuws_stream *s);
    /* After one run has finished: compares the output with the scalar reference (computed once, on the host).
     * Returns true when correct; otherwise writes why to msg. */
    bool (*check)(void *state, char *msg, size_t n);
    void (*teardown)(void *state);
} bench_workload;

/* A case: the workload, and what the generic test harnesses need besides. */
typedef struct gpuws__case {
    bench_workload w;
    /* Fills out[0..BENCH_MAX_OUTPUTS) with what run() writes; returns how many (0: an output the call allocates,
     * nothing to poison beforehand). */
    size_t (*outputs)(void *state, bench_output *out);
    /* run() takes the context's own streams, not s (a host-to-host pipeline): no row about the stream applies. */
    bool ignores_stream;
} gpuws__case;

/* Workloads register themselves: BENCH_WORKLOAD(w) for a bench-only workload (bench/workloads_*.c: copies, user
 * programs), GPUWS_CASE(c) for an algorithm's case (registered with the bench too). */
void bench_register(const bench_workload *w);
#define BENCH_WORKLOAD(W)                                                                                              \
    __attribute__((constructor)) static void bench_register_##W(void) { bench_register(&W); }

void gpuws__case_register(const gpuws__case *c);
/* Every case registered with GPUWS_CASE, sorted by algorithm then variant; NULL-terminated. */
const gpuws__case *const *gpuws__cases(void);
#define GPUWS_CASE(C)                                                                                                  \
    __attribute__((constructor)) static void gpuws__case_register_##C(void) { gpuws__case_register(&C); }

/* ---- helpers the case tables share ---- */

/* The value for the size class. */
size_t gpuws__case_pick(bench_size s, size_t tiny, size_t small, size_t dflt, size_t large);
/* "2^26 what" for powers of two, "1e+08 what" otherwise. */
void gpuws__case_label_count(char *out, size_t n, size_t count, const char *what);
/* Shrinks a device-resident size until `arrays` buffers of n elements of es bytes fit comfortably (never below
 * 2^16, nor below n itself when smaller). */
size_t gpuws__case_fit(gpuws_context *ctx, size_t n, size_t es, int arrays);
/* Creates a buffer of the host bytes (uploaded); NULL host: uninitialised. */
gpuws_status gpuws__case_upload(gpuws_context *ctx, const void *host, size_t bytes, gpuws_buffer **out);

/* Reads bytes of b into *host (malloc'd; the caller frees it, also on failure). False with a message when it
 * cannot. */
bool gpuws__case_read(gpuws_buffer *b, void **host, size_t bytes, char *msg, size_t n);

/* One f32 input matrix kept on the host for the check, and one f32 output (transpose, l2_norm). */
typedef struct {
    size_t rows, cols, out_elems;
    float *hx;
    gpuws_buffer *x, *out;
} gpuws__case_matrix;
/* rows × cols floats uniform in [-1, 1) from the seed, uploaded, and an output of out_elems floats; *state is a
 * gpuws__case_matrix. The teardown and the outputs hook go with it. */
gpuws_status gpuws__case_matrix_setup(gpuws_context *ctx, void **state, size_t rows, size_t cols, size_t out_elems,
                                      uint64_t seed);
void gpuws__case_matrix_teardown(void *state);
size_t gpuws__case_matrix_outputs(void *state, bench_output *out);

/* A synthetic radio sky (sigma_clip, threshold, measure): Gaussian noise (σ = 1e-3) plus nsrc Gaussian point
 * sources (PSF σ = 1.5 px); where the sources are goes to src. side x side floats, malloc'd; NULL on failure. */
typedef struct {
    size_t r, c;
    double amp;
} gpuws__case_source;
float *gpuws__case_sky(size_t side, uint64_t seed, gpuws__case_source *src, size_t nsrc);
/* The sky on the host and on the device: side 64 (tiny, with 12 sources), 256 (small), 2048 (default), 4096
 * (large), with GPUWS__CASE_SKY_SOURCES sources, where they are into src. */
#define GPUWS__CASE_SKY_SOURCES 300
typedef struct {
    size_t side, n, nsrc;
    float *hx;
    gpuws_buffer *x;
} gpuws__case_sky_input;
gpuws_status gpuws__case_sky_input_make(gpuws_context *ctx, bench_size size, gpuws__case_sky_input *in,
                                        gpuws__case_source src[GPUWS__CASE_SKY_SOURCES]);
void gpuws__case_sky_input_free(gpuws__case_sky_input *in);

/* The source finder's default sky (label, sources) of side x side pixels, made with its reference from seed 1 so
 * every device sees the same pixels, into img (side² floats). 0, or -1 when memory runs out. Its side for the size
 * class: tiny 64, small 512, default the workshop's 2048, large 4096. */
int gpuws__case_sources_sky(size_t side, float *img);
size_t gpuws__case_sources_side(bench_size size);
/* extract's sky (kernels/extract/extract_cases.c; tests/test_extract.c uses it too): level 100 with a gradient
 * (into back), Gaussian noise σ = 5 (rms: 5), round and elliptical Gaussian sources from seed, NaN in the first
 * nan_cols columns; x, back and rms hold w * h floats. */
void gpuws__case_extract_sky(size_t w, size_t h, uint64_t seed, size_t nan_cols, float *x, float *back, float *rms);

/* The workshop's convolution inputs (convolve1d, convolve2d): deltas at [8::16, 8::16] (or uniform [0, 1) values
 * from a fixed seed) and exp(-(x^2 + y^2) / 2) on meshgrid(linspace(-2, 2, taps)). */
void gpuws__case_workshop_image(double *img, size_t side, bool random);
void gpuws__case_workshop_gaussian(double *g, int taps);
/* The image's side for the size class: tiny 48, small 256, default the workshop's 2048, large 4096. */
size_t gpuws__case_workshop_side(bench_size size);
/* Host array of n doubles converted to dtype (malloc'd; NULL on failure). */
void *gpuws__case_convert(const double *x, size_t n, gpuws_dtype dt);
/* Every convolution input here is >= 0, so sum |kernel * X| is the result itself and the tests' bound
 * 2 (K + 1) u sum |kernel * X| becomes 2 (K + 1) u |want|. */
bool gpuws__case_within_conv_bound(const void *got, const void *want, size_t n, gpuws_dtype dt, double taps, char *msg,
                                   size_t len);

#endif
