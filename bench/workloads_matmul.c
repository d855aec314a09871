/* Benchmark workloads for matmul (f32_tiled, f64_tiled, f32_shared, f32_naive), transpose (f32) and l2_norm (f32).
 * Inputs are made on the host from fixed seeds and uploaded once; each run is one call, data stays on the device.
 * Checks use the bounds the test suites state (tests/test_matmul.c, tests/test_l2_norm.c; transpose is exact). */
#include "bench.h"
#include "l2_norm/l2_norm_ref.h"
#include "matmul/matmul_ref.h"
#include "transpose/transpose_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double uniform(uint64_t *s) { return bench_uniform(s) * 2.0 - 1.0; } /* [-1, 1) */

static bool cpu_device(gpuws_context *ctx)
{
    gpuws_device_info d;
    return gpuws_context_get_device_info(ctx, &d) == GPUWS_OK && d.type == GPUWS_DEVICE_CPU;
}

/* A device buffer holding `bytes` of host data (NULL: uninitialised). */
static gpuws_status upload(gpuws_context *ctx, const void *host, size_t bytes, gpuws_buffer **b)
{
    gpuws_status st = gpuws_buffer_create(ctx, bytes, b);
    if (!st && host) st = gpuws_buffer_write(*b, 0, host, bytes);
    return st;
}

static bool read_back(gpuws_buffer *b, void **host, size_t bytes, char *msg, size_t n)
{
    *host = malloc(bytes);
    if (*host && gpuws_buffer_read(b, 0, *host, bytes) == GPUWS_OK) return true;
    snprintf(msg, n, "could not read the result back");
    return false;
}

/* ---- matmul: C = A·B, square, n = 4096 (default), 1024 (small), 8192 (large); a quarter on CPU devices ---- */

typedef struct {
    gpuws_dtype dtype;
    gpuws_matmul_variant variant;
    size_t n;
    void *ha, *hb;
    gpuws_buffer *a, *b, *c;
} mm_state;

static void mm_teardown(void *p)
{
    mm_state *s = p;
    free(s->ha);
    free(s->hb);
    gpuws_buffer_destroy(s->a);
    gpuws_buffer_destroy(s->b);
    gpuws_buffer_destroy(s->c);
    free(s);
}

static gpuws_status mm_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt,
                             gpuws_matmul_variant v)
{
    mm_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dtype = dt;
    s->variant = v;
    s->n = size == BENCH_SMALL ? 1024 : size == BENCH_LARGE ? 8192 : 4096;
    const bool cpu = cpu_device(ctx); /* n³ work: a CPU would take minutes per run at the GPU sizes */
    if (cpu) s->n /= 4;
    const size_t n = s->n, es = gpuws_dtype_size(dt), bytes = n * n * es;
    s->ha = malloc(bytes);
    s->hb = malloc(bytes);
    if (!s->ha || !s->hb) return GPUWS_ERR_OUT_OF_MEMORY;
    uint64_t seed = 7;
    for (size_t i = 0; i < 2 * n * n; i++) {
        void *m = i < n * n ? s->ha : s->hb;
        const size_t j = i < n * n ? i : i - n * n;
        const double x = uniform(&seed);
        if (dt == GPUWS_F32) ((float *)m)[j] = (float)x;
        else ((double *)m)[j] = x;
    }
    gpuws_status st;
    if ((st = upload(ctx, s->ha, bytes, &s->a)) || (st = upload(ctx, s->hb, bytes, &s->b)) ||
        (st = upload(ctx, NULL, bytes, &s->c)))
        return st;
    c->bytes = 3.0 * (double)bytes; /* A and B read once, C written once */
    c->flops = 2.0 * (double)n * (double)n * (double)n;
    snprintf(c->size_label, sizeof c->size_label, "%zu^3 %s%s", n, gpuws_dtype_name(dt), cpu ? " (cpu: n/4)" : "");
    return GPUWS_OK;
}

static gpuws_status mm_setup_f32_tiled(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return mm_setup(ctx, size, state, c, GPUWS_F32, GPUWS_MATMUL_TILED);
}
static gpuws_status mm_setup_f64_tiled(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return mm_setup(ctx, size, state, c, GPUWS_F64, GPUWS_MATMUL_TILED);
}
static gpuws_status mm_setup_f32_shared(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return mm_setup(ctx, size, state, c, GPUWS_F32, GPUWS_MATMUL_SHARED);
}
static gpuws_status mm_setup_f32_naive(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return mm_setup(ctx, size, state, c, GPUWS_F32, GPUWS_MATMUL_NAIVE);
}

static gpuws_status mm_run(void *p, gpuws_stream *st)
{
    mm_state *s = p;
    return gpuws_matmul_ex(st, s->variant, s->dtype, s->n, s->n, s->n, s->a, s->b, s->c);
}

/* Samples (an n³ reference would take longer than the benchmark): 1024 random elements, the last row and the
 * last column, against the oracle within the test suite's bound. */
static bool mm_check(void *p, char *msg, size_t len)
{
    mm_state *s = p;
    void *got;
    bool ok = read_back(s->c, &got, s->n * s->n * gpuws_dtype_size(s->dtype), msg, len);
    double worst;
    if (ok) ok = gpuws_matmul_check_sampled(s->dtype == GPUWS_F64, s->ha, s->hb, got, s->n, s->n, s->n, 1024, 99, &worst,
                                            msg, len) == 0;
    free(got);
    return ok;
}

static const bench_workload w_matmul_f32_tiled = {"matmul", "f32_tiled", false, mm_setup_f32_tiled, mm_run, mm_check, mm_teardown};
static const bench_workload w_matmul_f64_tiled = {"matmul", "f64_tiled", false, mm_setup_f64_tiled, mm_run, mm_check, mm_teardown};
static const bench_workload w_matmul_f32_shared = {"matmul", "f32_shared", false, mm_setup_f32_shared, mm_run, mm_check, mm_teardown};
static const bench_workload w_matmul_f32_naive = {"matmul", "f32_naive", false, mm_setup_f32_naive, mm_run, mm_check, mm_teardown};
BENCH_WORKLOAD(w_matmul_f32_tiled)
BENCH_WORKLOAD(w_matmul_f64_tiled)
BENCH_WORKLOAD(w_matmul_f32_shared)
BENCH_WORKLOAD(w_matmul_f32_naive)

/* ---- transpose f32: 8192² (default), 2048² (small), 16384² (large) --------------------------------------- */

/* transpose and l2_norm: one input matrix kept on the host for the check, one output. */
typedef struct {
    size_t rows, cols;
    float *hx;
    gpuws_buffer *x, *out;
} io_state;

static void io_teardown(void *p)
{
    io_state *s = p;
    free(s->hx);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->out);
    free(s);
}

/* rows × cols floats uniform in [-1, 1) from the seed, uploaded, and an output of out_elems floats. */
static gpuws_status io_setup(gpuws_context *ctx, void **state, size_t rows, size_t cols, size_t out_elems, uint64_t seed)
{
    io_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->rows = rows, s->cols = cols;
    if (!(s->hx = malloc(rows * cols * 4))) return GPUWS_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < rows * cols; i++) s->hx[i] = (float)uniform(&seed);
    gpuws_status st = upload(ctx, s->hx, rows * cols * 4, &s->x);
    return st ? st : upload(ctx, NULL, out_elems * 4, &s->out);
}

static gpuws_status tr_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    const size_t n = size == BENCH_SMALL ? 2048 : size == BENCH_LARGE ? 16384 : 8192;
    c->bytes = 2.0 * (double)n * (double)n * 4; /* read once, written once */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu f32", n, n);
    return io_setup(ctx, state, n, n, n * n, 8);
}

static gpuws_status tr_run(void *p, gpuws_stream *st)
{
    io_state *s = p;
    return gpuws_transpose(st, GPUWS_F32, s->rows, s->cols, s->x, s->out);
}

static bool tr_check(void *p, char *msg, size_t len)
{
    io_state *s = p;
    const size_t bytes = s->rows * s->cols * 4;
    void *got, *want = malloc(bytes);
    bool ok = read_back(s->out, &got, bytes, msg, len) && want;
    if (ok) {
        gpuws_transpose_ref_b32((const uint32_t *)s->hx, want, s->rows, s->cols);
        ok = memcmp(got, want, bytes) == 0;
        if (!ok) snprintf(msg, len, "result differs from the scalar reference");
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_transpose_f32 = {"transpose", "f32", false, tr_setup, tr_run, tr_check, io_teardown};
BENCH_WORKLOAD(w_transpose_f32)

/* ---- l2_norm f32: rows × 1024, rows = 2^16 (default), 2^12 (small), 2^18 (large) ---------------------------- */

static gpuws_status l2_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    const int log_rows = size == BENCH_SMALL ? 12 : size == BENCH_LARGE ? 18 : 16;
    const size_t rows = (size_t)1 << log_rows, cols = 1024;
    c->bytes = (double)(rows * cols + rows) * 4; /* the matrix read once, one norm per row written */
    c->flops = 2.0 * (double)(rows * cols);     /* a square and an add per element (the scaling multiply not counted) */
    snprintf(c->size_label, sizeof c->size_label, "2^%d x %zu f32", log_rows, cols);
    return io_setup(ctx, state, rows, cols, rows, 9);
}

static gpuws_status l2_run(void *p, gpuws_stream *st)
{
    io_state *s = p;
    return gpuws_l2_norm(st, GPUWS_F32, s->rows, s->cols, s->x, s->out);
}

/* Every row against the long-double oracle: relative error within γ_cols/2 + 2u (tests/test_l2_norm.c). */
static bool l2_check(void *p, char *msg, size_t len)
{
    io_state *s = p;
    void *got;
    bool ok = read_back(s->out, &got, s->rows * 4, msg, len);
    const long double u = 0x1p-24L, nu = s->cols * u, rel = nu / (1 - nu) / 2 + 2 * u + 1e-15L;
    for (size_t r = 0; ok && r < s->rows; r++) {
        const long double want = gpuws_l2_norm_oracle_f32(s->hx + r * s->cols, s->cols), g = ((float *)got)[r];
        if (!(fabsl(g - want) <= rel * want)) {
            snprintf(msg, len, "row %zu: %.9Lg, exact %.9Lg (allowed relative error %.3Lg)", r, g, want, rel);
            ok = false;
        }
    }
    free(got);
    return ok;
}

static const bench_workload w_l2_norm_f32 = {"l2_norm", "f32", false, l2_setup, l2_run, l2_check, io_teardown};
BENCH_WORKLOAD(w_l2_norm_f32)
