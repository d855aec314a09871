/* matmul's cases (kernels/common/cases.h): C = A·B, square, n = 80 (tiny), 1024 (small), 4096 (default), 8192
 * (large), a quarter of that on CPU devices; f32 in every variant and f64 tiled, on uniform [-1, 1) inputs. The check
 * samples the result against the oracle within the bound of tests/test_matmul.c. */
#include "common/cases.h"
#include "matmul/matmul_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    s->n = gpuws__case_pick(size, 80, 1024, 4096, 8192);
    gpuws_device_info d;
    /* n³ work: a CPU would take minutes per run at the GPU sizes */
    const bool cpu =
        size != BENCH_TINY && gpuws_context_get_device_info(ctx, &d) == GPUWS_OK && d.type == GPUWS_DEVICE_CPU;
    if (cpu) s->n /= 4;
    const size_t n = s->n, es = gpuws_dtype_size(dt), bytes = n * n * es;
    s->ha = malloc(bytes);
    s->hb = malloc(bytes);
    if (!s->ha || !s->hb) return GPUWS_ERR_OUT_OF_MEMORY;
    uint64_t seed = 7;
    for (size_t i = 0; i < 2 * n * n; i++) {
        void *m = i < n * n ? s->ha : s->hb;
        const size_t j = i < n * n ? i : i - n * n;
        const double x = bench_uniform(&seed) * 2.0 - 1.0;
        if (dt == GPUWS_F32) ((float *)m)[j] = (float)x;
        else ((double *)m)[j] = x;
    }
    gpuws_status st;
    if ((st = gpuws__case_upload(ctx, s->ha, bytes, &s->a)) || (st = gpuws__case_upload(ctx, s->hb, bytes, &s->b)) ||
        (st = gpuws__case_upload(ctx, NULL, bytes, &s->c)))
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
    bool ok = gpuws__case_read(s->c, &got, s->n * s->n * gpuws_dtype_size(s->dtype), msg, len);
    double worst;
    if (ok)
        ok = gpuws_matmul_check_sampled(s->dtype == GPUWS_F64, s->ha, s->hb, got, s->n, s->n, s->n, 1024, 99, &worst,
                                        msg, len) == 0;
    free(got);
    return ok;
}

static size_t mm_outputs(void *p, bench_output *out)
{
    mm_state *s = p;
    out[0] = (bench_output){ s->c, NULL, s->n * s->n * gpuws_dtype_size(s->dtype) };
    return 1;
}

static const gpuws__case w_matmul_f32_tiled = {
    { "matmul", "f32_tiled", false, mm_setup_f32_tiled, mm_run, mm_check, mm_teardown }, mm_outputs, false
};
static const gpuws__case w_matmul_f64_tiled = {
    { "matmul", "f64_tiled", false, mm_setup_f64_tiled, mm_run, mm_check, mm_teardown }, mm_outputs, false
};
static const gpuws__case w_matmul_f32_shared = {
    { "matmul", "f32_shared", false, mm_setup_f32_shared, mm_run, mm_check, mm_teardown }, mm_outputs, false
};
static const gpuws__case w_matmul_f32_naive = {
    { "matmul", "f32_naive", false, mm_setup_f32_naive, mm_run, mm_check, mm_teardown }, mm_outputs, false
};
GPUWS_CASE(w_matmul_f32_tiled)
GPUWS_CASE(w_matmul_f64_tiled)
GPUWS_CASE(w_matmul_f32_shared)
GPUWS_CASE(w_matmul_f32_naive)
