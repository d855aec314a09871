/* reduce's cases (kernels/common/cases.h): the sum of uniform [-1, 1) f32 values, within the error bound the test
 * suite states (tests/test_reduce.c). */
#include "common/cases.h"
#include "reduce/reduce_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n;
    float *hx;
    gpuws_buffer *x, *out;
} red_state;

static void red_teardown(void *p)
{
    red_state *s = p;
    free(s->hx);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->out);
    free(s);
}

static gpuws_status red_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    red_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = gpuws__case_pick(size, 5000, (size_t)1 << 20, (size_t)1 << 28, (size_t)1 << 29);
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    while (s->n * sizeof(float) > d.max_alloc_bytes && s->n > (1u << 20)) s->n /= 2;
    size_t bytes = s->n * sizeof(float);
    s->hx = malloc(bytes);
    if (!s->hx) return GPUWS_ERR_OUT_OF_MEMORY;
    uint64_t seed = 3;
    for (size_t i = 0; i < s->n; i++) s->hx[i] = (float)(bench_uniform(&seed) * 2.0 - 1.0);
    gpuws_status st;
    if ((st = gpuws__case_upload(ctx, s->hx, bytes, &s->x)) || (st = gpuws_buffer_create(ctx, 8, &s->out))) return st;
    c->bytes = (double)bytes;
    c->flops = (double)s->n;
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, "f32");
    return GPUWS_OK;
}

static gpuws_status red_run(void *p, gpuws_stream *st)
{
    red_state *s = p;
    return gpuws_reduce(st, GPUWS_REDUCE_SUM, GPUWS_F32, s->n, s->x, s->out);
}

static bool red_check(void *p, char *msg, size_t n)
{
    red_state *s = p;
    float got;
    if (gpuws_buffer_read(s->out, 0, &got, sizeof got)) {
        snprintf(msg, n, "could not read the result back");
        return false;
    }
    double want = gpuws_reduce_ref_sum_f32(s->hx, s->n), sum_abs = 0;
    for (size_t i = 0; i < s->n; i++) sum_abs += fabs((double)s->hx[i]);
    /* the bound the test suite states (tests/test_reduce.c), with float accumulation's for devices without fp64 */
    double bound = (2 + 2 * ceil(log2((double)s->n))) * 0x1p-24 * sum_abs;
    if (fabs((double)got - want) > bound) {
        snprintf(msg, n, "sum %.9g, reference %.9g (allowed error %.3g)", (double)got, want, bound);
        return false;
    }
    return true;
}

static size_t red_outputs(void *p, bench_output *out)
{
    red_state *s = p;
    out[0] = (bench_output){ s->out, NULL, sizeof(float) };
    return 1;
}

static const gpuws__case w_reduce_sum = { { "reduce", "sum_f32", false, red_setup, red_run, red_check, red_teardown },
                                          red_outputs,
                                          false };
GPUWS_CASE(w_reduce_sum)
