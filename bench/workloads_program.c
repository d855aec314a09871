/* Benchmark workloads for user programs (include/gpuws/program.h): kernels written in the kernel dialect, each the
 * twin of a built-in kernel written natively (vector_add f32; matmul f32_shared, the workshop's shared-memory
 * tiles), launched the same way with the same data, so a row's time against its twin's is what the dialect costs.
 * On the CPU backend (which runs the built-ins as scalar references) these rows are the compiled dialect on all
 * cores, to set beside PoCL's rows of the same kernels. The program is built in setup, outside the timing.
 * launch_4096 is the vector add of 4096 floats at every size: its work is nothing, so its row is what a launch of a
 * user's kernel costs (on the CPU backend the whole launch; on a GPU the device's time, and the back-to-back column
 * the host's time per launch). */
#include "bench.h"
#include "matmul/matmul_ref.h"
#include "vector_add/vector_add_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vector_add_src =
    "GW_KERNEL void vector_add_f32(GW_GLOBAL const gw_f32 *a, GW_GLOBAL const gw_f32 *b, GW_GLOBAL gw_f32 *c, gw_u64 "
    "n)\n"
    "{\n"
    "    for (gw_u64 i = gw_global_idx(0); i < n; i += gw_global_size(0)) c[i] = a[i] + b[i];\n"
    "}\n";

/* The same kernel as matmul_shared_f32 in kernels/matmul/matmul.cu and .cl. */
static const char *const matmul_src =
    "#define TS 16\n"
    "GW_KERNEL void matmul_shared_f32(GW_GLOBAL const gw_f32 *A, GW_GLOBAL const gw_f32 *B, GW_GLOBAL gw_f32 *C,\n"
    "                                 gw_u32 M, gw_u32 N, gw_u32 K)\n"
    "{\n"
    "    GW_SHARED gw_f32 As[TS][TS];\n"
    "    GW_SHARED gw_f32 Bs[TS][TS];\n"
    "    const gw_u32 tx = (gw_u32)gw_thread_idx(0), ty = (gw_u32)gw_thread_idx(1);\n"
    "    const gw_u32 col = (gw_u32)gw_block_idx(0) * TS + tx;\n"
    "    for (gw_u32 r0 = (gw_u32)gw_block_idx(1) * TS; r0 < M; r0 += (gw_u32)gw_grid_dim(1) * TS) {\n"
    "        const gw_u32 row = r0 + ty;\n"
    "        gw_f32 acc = 0;\n"
    "        for (gw_u32 t = 0; t < K; t += TS) {\n"
    "            As[ty][tx] = row < M && t + tx < K ? A[(gw_u64)row * K + t + tx] : 0.0f;\n"
    "            Bs[ty][tx] = t + ty < K && col < N ? B[(gw_u64)(t + ty) * N + col] : 0.0f;\n"
    "            gw_barrier();\n"
    "            for (gw_u32 l = 0; l < TS; l++) acc += As[ty][l] * Bs[l][tx];\n"
    "            gw_barrier();\n"
    "        }\n"
    "        if (row < M && col < N) C[(gw_u64)row * N + col] = acc;\n"
    "    }\n"
    "}\n";

static bool cpu_device(gpuws_context *ctx)
{
    gpuws_device_info d;
    return gpuws_context_get_device_info(ctx, &d) == GPUWS_OK && d.type == GPUWS_DEVICE_CPU;
}

typedef struct {
    gpuws_program *program;
    gpuws_kernel *kernel;
    gpuws_launch_config cfg;
    gpuws_arg args[6];
    size_t nargs;
    size_t n;
    float *ha, *hb;
    gpuws_buffer *a, *b, *c;
} prog_state;

static void prog_teardown(void *p)
{
    prog_state *s = p;
    free(s->ha);
    free(s->hb);
    gpuws_buffer_destroy(s->a);
    gpuws_buffer_destroy(s->b);
    gpuws_buffer_destroy(s->c);
    gpuws_program_destroy(s->program);
    free(s);
}

static gpuws_status build(gpuws_context *ctx, const char *src, const char *name, prog_state *s)
{
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = name;
    gpuws_status st = gpuws_program_create(ctx, src, &o, &s->program);
    if (!st) st = gpuws_program_get_kernel(s->program, name, &s->kernel);
    return st;
}

static gpuws_status upload(gpuws_context *ctx, size_t bytes, const float *host, gpuws_buffer **b)
{
    gpuws_status st = gpuws_buffer_create(ctx, bytes, b);
    if (!st && host) st = gpuws_buffer_write(*b, 0, host, bytes);
    return st;
}

static float *uniform_floats(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    if (x)
        for (size_t i = 0; i < n; i++) x[i] = (float)(bench_uniform(&seed) * 2.0 - 1.0);
    return x;
}

/* ---- vector add, as gpuws_vector_add launches its kernel -------------------------------------------------- */

static gpuws_status va_setup_n(gpuws_context *ctx, size_t n, void **state, bench_counts *c)
{
    prog_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = n;
    const size_t bytes = s->n * sizeof(float);
    if (!(s->ha = uniform_floats(s->n, 1)) || !(s->hb = uniform_floats(s->n, 2))) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_status st;
    if ((st = build(ctx, vector_add_src, "vector_add_f32", s)) || (st = upload(ctx, bytes, s->ha, &s->a)) ||
        (st = upload(ctx, bytes, s->hb, &s->b)) || (st = upload(ctx, bytes, NULL, &s->c)))
        return st;
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    /* kernels/vector_add/vector_add.c: 256 per block; GPUs a grid of 16 blocks per compute unit looping over the
     * array, CPU devices one work-item per element */
    uint64_t blocks = (s->n + 255) / 256, cap = (uint64_t)d.compute_units * 16;
    if (!cpu_device(ctx) && blocks > cap) blocks = cap;
    s->cfg = (gpuws_launch_config){ { (uint32_t)blocks, 1, 1 }, { 256, 1, 1 } };
    s->args[0] = gpuws_arg_buffer(s->a);
    s->args[1] = gpuws_arg_buffer(s->b);
    s->args[2] = gpuws_arg_buffer(s->c);
    s->args[3] = gpuws_arg_u64(s->n);
    s->nargs = 4;
    c->bytes = 3.0 * (double)bytes;
    c->flops = (double)s->n;
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, "f32");
    return GPUWS_OK;
}

static gpuws_status va_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    /* as vector_add's cases */
    return va_setup_n(ctx, gpuws__case_pick(size, 5000, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28), state, c);
}

static gpuws_status launch_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    (void)size;
    return va_setup_n(ctx, 4096, state, c);
}

static gpuws_status prog_run(void *p, gpuws_stream *st)
{
    prog_state *s = p;
    return gpuws_launch(st, s->kernel, &s->cfg, s->args, s->nargs);
}

static bool va_check(void *p, char *msg, size_t n)
{
    prog_state *s = p;
    const size_t bytes = s->n * sizeof(float);
    float *got = NULL, *want = malloc(bytes);
    bool ok = gpuws__case_read(s->c, (void **)&got, bytes, msg, n);
    if (ok && !want) {
        snprintf(msg, n, "out of host memory for the reference");
        ok = false;
    }
    if (ok) {
        gpuws_vector_add_ref_f32(s->ha, s->hb, want, s->n);
        ok = memcmp(got, want, bytes) == 0;
        if (!ok) snprintf(msg, n, "result differs from the scalar reference");
    }
    free(got);
    free(want);
    return ok;
}

/* ---- matmul, as gpuws_matmul_ex(GPUWS_MATMUL_SHARED) launches its kernel --------------------------------- */

static gpuws_status mm_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    prog_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = gpuws__case_pick(size, 80, 1024, 4096, 8192); /* as kernels/matmul/matmul_cases.c */
    if (cpu_device(ctx) && size != BENCH_TINY) s->n /= 4;
    const size_t n = s->n, bytes = n * n * sizeof(float);
    if (!(s->ha = uniform_floats(n * n, 7)) || !(s->hb = uniform_floats(n * n, 8))) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_status st;
    if ((st = build(ctx, matmul_src, "matmul_shared_f32", s)) || (st = upload(ctx, bytes, s->ha, &s->a)) ||
        (st = upload(ctx, bytes, s->hb, &s->b)) || (st = upload(ctx, bytes, NULL, &s->c)))
        return st;
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    uint64_t gy = (n + 15) / 16;
    if (gy > d.max_grid_dims[1]) gy = d.max_grid_dims[1];
    s->cfg = (gpuws_launch_config){ { (uint32_t)((n + 15) / 16), (uint32_t)gy, 1 }, { 16, 16, 1 } };
    s->args[0] = gpuws_arg_buffer(s->a);
    s->args[1] = gpuws_arg_buffer(s->b);
    s->args[2] = gpuws_arg_buffer(s->c);
    s->args[3] = s->args[4] = s->args[5] = gpuws_arg_u32((uint32_t)n);
    s->nargs = 6;
    c->bytes = 3.0 * (double)bytes;
    c->flops = 2.0 * (double)n * (double)n * (double)n;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu f32", n, n);
    return GPUWS_OK;
}

static bool mm_check(void *p, char *msg, size_t len)
{
    prog_state *s = p;
    const size_t bytes = s->n * s->n * sizeof(float);
    float *got = malloc(bytes);
    bool ok = got && gpuws_buffer_read(s->c, 0, got, bytes) == GPUWS_OK;
    double worst;
    if (!ok) snprintf(msg, len, "could not read the result back");
    else ok = gpuws_matmul_check_sampled(false, s->ha, s->hb, got, s->n, s->n, s->n, 1024, 99, &worst, msg, len) == 0;
    free(got);
    return ok;
}

static const bench_workload w_program_vector_add = { "program", "vector_add_f32", false,        va_setup,
                                                     prog_run,  va_check,         prog_teardown };
static const bench_workload w_program_matmul = { "program", "matmul_shared_f32", false, mm_setup, prog_run,
                                                 mm_check,  prog_teardown };
static const bench_workload w_program_launch = { "program", "launch_4096", false,        launch_setup,
                                                 prog_run,  va_check,      prog_teardown };
BENCH_WORKLOAD(w_program_vector_add)
BENCH_WORKLOAD(w_program_launch)
BENCH_WORKLOAD(w_program_matmul)
