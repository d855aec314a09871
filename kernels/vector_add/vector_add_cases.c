/* vector_add's cases (kernels/common/cases.h): c = a + b in f32 on uniform [-1, 1) inputs, bit-exact against the
 * scalar reference. */
#include "common/cases.h"
#include "vector_add/vector_add_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t n;
    float *ha, *hb;
    gpuws_buffer *a, *b, *c;
} va_state;

static void fill_uniform(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(bench_uniform(&seed) * 2.0 - 1.0);
}

static void va_teardown(void *p)
{
    va_state *s = p;
    free(s->ha);
    free(s->hb);
    gpuws_buffer_destroy(s->a);
    gpuws_buffer_destroy(s->b);
    gpuws_buffer_destroy(s->c);
    free(s);
}

static gpuws_status va_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    va_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = gpuws__case_pick(size, 5000, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28);
    size_t bytes = s->n * sizeof(float);
    s->ha = malloc(bytes);
    s->hb = malloc(bytes);
    if (!s->ha || !s->hb) return GPUWS_ERR_OUT_OF_MEMORY;
    fill_uniform(s->ha, s->n, 1);
    fill_uniform(s->hb, s->n, 2);
    gpuws_status st;
    if ((st = gpuws__case_upload(ctx, s->ha, bytes, &s->a)) || (st = gpuws__case_upload(ctx, s->hb, bytes, &s->b)) ||
        (st = gpuws_buffer_create(ctx, bytes, &s->c)))
        return st;
    c->bytes = 3.0 * (double)bytes;
    c->flops = (double)s->n;
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, "f32");
    return GPUWS_OK;
}

static gpuws_status va_run(void *p, gpuws_stream *st)
{
    va_state *s = p;
    return gpuws_vector_add(st, GPUWS_F32, s->n, s->a, s->b, s->c);
}

static bool va_check(void *p, char *msg, size_t n)
{
    va_state *s = p;
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

static size_t va_outputs(void *p, bench_output *out)
{
    va_state *s = p;
    out[0] = (bench_output){ s->c, NULL, s->n * sizeof(float) };
    return 1;
}

static const gpuws__case w_vector_add = { { "vector_add", "f32", false, va_setup, va_run, va_check, va_teardown },
                                          va_outputs,
                                          false };
GPUWS_CASE(w_vector_add)
