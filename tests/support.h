/* Shared by every test suite: which backends to run, skipping vs. requiring them, seeded data, poisoning,
 * and float comparison with stated bounds. */
#ifndef GPUWS_TEST_SUPPORT_H
#define GPUWS_TEST_SUPPORT_H

#include "common/cases.h"
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The backend axis of every matrix, in a fixed order so parameter indices are stable. */
#define TEST_BACKENDS 3
extern gpuws_backend_kind test_backends[TEST_BACKENDS];

/* Every row of `rows` (n rows of `size` bytes) on every backend of test_backends, backend-major: all the rows on
 * the first backend, then all on the next. Each copy is the row with its gpuws_backend_kind at byte `backend` set to
 * its backend; the test opens that with test_open (which skips or fails an absent backend). cr_malloc'd; Criterion
 * frees it. Call it through TEST_BACKEND_PARAMS. */
struct criterion_test_params test_backend_params(const void *rows, size_t n, size_t size, size_t backend);
/* test_backend_params of the first N rows of the array Rows, whose element has a member `gpuws_backend_kind
 * backend` (its value in Rows is ignored). */
#define TEST_BACKEND_PARAMS(Rows, N)                                                                                   \
    test_backend_params((Rows), (N), sizeof *(Rows),                                                                   \
                        _Generic((Rows)->backend, gpuws_backend_kind                                                   \
                                 : (size_t)((const char *)&(Rows)->backend - (const char *)(Rows))))

/* A test run once per backend: BACKEND_TEST(suite, name) { ... *kind ... } */
#define BACKEND_TEST(Suite, Name)                                                                                      \
    ParameterizedTestParameters(Suite, Name)                                                                           \
    {                                                                                                                  \
        return cr_make_param_array(gpuws_backend_kind, test_backends, TEST_BACKENDS);                                  \
    }                                                                                                                  \
    ParameterizedTest(gpuws_backend_kind *kind, Suite, Name)

/* The same on the GPU backends only (OpenCL and CUDA): tests of kernels and launches the CPU backend lacks. */
#define GPU_BACKEND_TEST(Suite, Name)                                                                                  \
    ParameterizedTestParameters(Suite, Name)                                                                           \
    {                                                                                                                  \
        static const gpuws_backend_kind gpu_backends[] = { GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CUDA };                 \
        return cr_make_param_array(gpuws_backend_kind, gpu_backends, 2);                                               \
    }                                                                                                                  \
    ParameterizedTest(gpuws_backend_kind *kind, Suite, Name)

/* Opens a context on `kind`. If the backend is unavailable (or GPUWS_TEST_BACKENDS leaves it out) the test is
 * skipped with the reason, unless the backend is named in GPUWS_REQUIRE, in which case the test fails.
 * The OpenCL device honours GPUWS_OPENCL_PLATFORM / GPUWS_DEVICE. Never returns NULL. */
gpuws_context *test_open(gpuws_backend_kind kind);
/* Sets a tuning knob of ctx (core/tuning.h, docs/tuning.md; value NULL: its default), asserting it was accepted. */
void test_tune(gpuws_context *ctx, const char *knob, const char *value);
/* Skip (or fail, if required) when the context cannot run dtype (fp64 on OpenCL devices without it). */
void test_require_dtype(gpuws_context *ctx, gpuws_dtype dtype);
bool test_is_required(const char *backend_name);
const char *test_backend_name(gpuws_backend_kind kind);

/* A fixed seed (reproducible) or, for fresh = true, one from the clock, printed so a failure can be replayed
 * with GPUWS_TEST_SEED=<n>. */
uint64_t test_seed(bool fresh);
/* splitmix64 stream. */
uint64_t test_rand_u64(uint64_t *state);
double test_rand_uniform(uint64_t *state); /* [0, 1) */
void test_fill_uniform_f32(float *x, size_t n, uint64_t seed, double lo, double hi);
void test_fill_uniform_f64(double *x, size_t n, uint64_t seed, double lo, double hi);

/* Callers on threads of one process that sum word arrays through shared memory between barriers: the reducer of
 * the collective calls (gpuws_sum_reducer; user = the group), what MPI ranks do with MPI_Allreduce, without MPI.
 * Every one of `callers` threads must make the same reductions, each of at most max_words words. */
typedef struct test_sum_group test_sum_group;
test_sum_group *test_sum_group_new(unsigned callers, size_t max_words);
void test_sum_group_free(test_sum_group *g);
gpuws_status test_sum_group_reduce(void *group, uint64_t *words, size_t count);
/* The group's gatherer (gpuws_gatherer): each caller's counts[caller] words copied to root or to every caller, at
 * most max_words in all. */
gpuws_status test_sum_group_gather(void *group, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                                   size_t root);

/* 0xAB in every byte: an unwritten output element shows up as this pattern (a NaN-free, odd value). */
#define TEST_POISON_BYTE 0xAB
/* Allocates a device buffer of `bytes` + guard bytes, filled with the poison; returns it. */
gpuws_buffer *test_buffer(gpuws_context *ctx, size_t bytes);
gpuws_buffer *test_buffer_from(gpuws_context *ctx, const void *host, size_t bytes);
/* Guard bytes past the payload of buffers from test_buffer. */
#define TEST_GUARD_BYTES 64
/* Asserts the guard bytes after `bytes` are still poison (no overrun). */
void test_check_guard(gpuws_buffer *b, size_t bytes, const char *name);
/* Host copy of a buffer's first `bytes` (malloc'd). */
void *test_download(gpuws_buffer *b, size_t bytes);
/* The whole of a file (what a tool wrote) as a NUL-terminated string (malloc'd); asserts it can be read. */
char *test_read_file(const char *path);
/* The process's stderr goes to a temporary file from test_capture_stderr until test_captured_stderr, which returns
 * what was written to it (the first 64 KiB, NUL-terminated, in static storage until the next capture ends). */
void test_capture_stderr(void);
const char *test_captured_stderr(void);
/* How many times needle occurs in text (gpuws's debug lines, say, in what test_captured_stderr returns). */
int test_count(const char *text, const char *needle);
/* n bytes of host memory, each 0xA5: pinned for ctx (gpuws_host_alloc) or malloc'd; test_host_bytes_free frees it. */
void *test_host_bytes(gpuws_context *ctx, bool pinned, size_t n);
void test_host_bytes_free(gpuws_context *ctx, bool pinned, void *p);

/* A new empty directory for the on-disk program cache, private to the user (0700), set as GPUWS_CACHE_DIR for the
 * rest of the process; test_cache_dir() is its path. test_cache_dir_remove removes it with everything in it
 * (whatever modes a test gave it); it also runs at the process's exit. Suites that build programs use the pair as
 * .init and .fini, so no test sees another's entries. */
void test_cache_dir_fresh(void);
const char *test_cache_dir(void);
void test_cache_dir_remove(void);
/* A fresh directory $TMPDIR/gpuws-<what>-XXXXXX (/tmp without TMPDIR) written into dir (size bytes), and its removal
 * with everything in it (also what a test left unreadable), asserted. */
void test_dir_make(const char *what, char *dir, size_t size);
void test_dir_remove(const char *dir);

/* ---- the algorithms' cases (kernels/common/cases.h), run by the generic harnesses ---- */

/* One case on one backend: the index into gpuws__cases(). */
typedef struct {
    int index;
    gpuws_backend_kind kind;
} test_case_param;
/* Every case × every backend of test_backends (cr_malloc'd; Criterion frees it); with_stream: only the cases whose
 * run takes the stream it is given. */
struct criterion_test_params test_case_params(bool with_stream);
/* "matmul f32_tiled on opencl" into buf. */
const char *test_case_name(const test_case_param *p, char *buf, size_t n);
/* Fills every output the case lists with TEST_POISON_BYTE; returns how many (out: BENCH_MAX_OUTPUTS). */
size_t test_case_poison(const gpuws__case *c, void *state, bench_output *out);
/* Whether output k is all poison still (the caller has waited for the work on it). */
bool test_output_poisoned(const bench_output *o);

/* Units in the last place between two floats (0 if bit-identical; NaN vs NaN counts as equal). */
uint64_t test_ulp_diff_f32(float a, float b);
uint64_t test_ulp_diff_f64(double a, double b);

/* Asserts a == 0 with the last gpuws error in the message. */
#define TEST_OK(call)                                                                                                  \
    do {                                                                                                               \
        gpuws_status st_ = (call);                                                                                     \
        cr_assert_eq(st_, GPUWS_OK, "%s -> %s: %s", #call, gpuws_status_name(st_), gpuws_last_error());                \
    } while (0)

/* Asserts the call fails with exactly `want`. */
#define TEST_FAILS(want, call)                                                                                         \
    do {                                                                                                               \
        gpuws_status st_ = (call);                                                                                     \
        cr_assert_eq(st_, (want), "%s -> %s (wanted %s): %s", #call, gpuws_status_name(st_), gpuws_status_name(want),  \
                     gpuws_last_error());                                                                              \
    } while (0)

#endif
