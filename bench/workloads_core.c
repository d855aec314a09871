/* Built-in benchmark workloads: vector_add and reduce (inputs made on the host from a fixed seed, uploaded once),
 * and the host<->device transfers (pageable and pinned host memory, both directions). */
#include "bench.h"
#include "reduce/reduce_ref.h"
#include "vector_add/vector_add_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void fill_uniform(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(bench_uniform(&seed) * 2.0 - 1.0);
}

static size_t pick(bench_size s, int small_log2, int default_log2, int large_log2)
{
    return (size_t)1 << (s == BENCH_SMALL ? small_log2 : s == BENCH_LARGE ? large_log2 : default_log2);
}

static int log2_of(size_t n)
{
    int k = 0;
    while (((size_t)1 << k) < n) k++;
    return k;
}

/* ---- vector_add f32 ---- */

typedef struct {
    size_t n;
    float *ha, *hb;
    gpuws_buffer *a, *b, *c;
} va_state;

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
    s->n = pick(size, 20, 26, 28);
    size_t bytes = s->n * sizeof(float);
    s->ha = malloc(bytes);
    s->hb = malloc(bytes);
    if (!s->ha || !s->hb) return GPUWS_ERR_OUT_OF_MEMORY;
    fill_uniform(s->ha, s->n, 1);
    fill_uniform(s->hb, s->n, 2);
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, bytes, &s->a)) || (st = gpuws_buffer_create(ctx, bytes, &s->b)) ||
        (st = gpuws_buffer_create(ctx, bytes, &s->c)) || (st = gpuws_buffer_write(s->a, 0, s->ha, bytes)) ||
        (st = gpuws_buffer_write(s->b, 0, s->hb, bytes)))
        return st;
    c->bytes = 3.0 * (double)bytes;
    c->flops = (double)s->n;
    snprintf(c->size_label, sizeof c->size_label, "2^%d f32", log2_of(s->n));
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
    float *got = malloc(s->n * sizeof(float)), *want = malloc(s->n * sizeof(float));
    bool ok = got && want && gpuws_buffer_read(s->c, 0, got, s->n * sizeof(float)) == GPUWS_OK;
    if (ok) {
        gpuws_vector_add_ref_f32(s->ha, s->hb, want, s->n);
        ok = memcmp(got, want, s->n * sizeof(float)) == 0;
        if (!ok) snprintf(msg, n, "result differs from the scalar reference");
    } else {
        snprintf(msg, n, "could not read the result back");
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_vector_add = {"vector_add", "f32", false, va_setup, va_run, va_check, va_teardown};
BENCH_WORKLOAD(w_vector_add)

/* ---- reduce sum f32 ---- */

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
    s->n = pick(size, 20, 28, 29);
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    while (s->n * sizeof(float) > d.max_alloc_bytes && s->n > (1u << 20)) s->n /= 2;
    size_t bytes = s->n * sizeof(float);
    s->hx = malloc(bytes);
    if (!s->hx) return GPUWS_ERR_OUT_OF_MEMORY;
    fill_uniform(s->hx, s->n, 3);
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, bytes, &s->x)) || (st = gpuws_buffer_create(ctx, 8, &s->out)) ||
        (st = gpuws_buffer_write(s->x, 0, s->hx, bytes)))
        return st;
    c->bytes = (double)bytes;
    c->flops = (double)s->n;
    snprintf(c->size_label, sizeof c->size_label, "2^%d f32", log2_of(s->n));
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

static const bench_workload w_reduce_sum = {"reduce", "sum_f32", false, red_setup, red_run, red_check, red_teardown};
BENCH_WORKLOAD(w_reduce_sum)

/* ---- transfers: host <-> device over the host link, pageable (malloc) and pinned (gpuws_host_alloc) ---- */

typedef struct {
    gpuws_context *ctx;
    size_t bytes;
    bool to_device, pinned;
    unsigned char *host, *expect;
    gpuws_buffer *dev;
} xfer_state;

static void xfer_teardown(void *p)
{
    xfer_state *s = p;
    if (s->pinned) gpuws_host_free(s->ctx, s->host);
    else free(s->host);
    free(s->expect);
    gpuws_buffer_destroy(s->dev);
    free(s);
}

static void fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = bench_splitmix(&seed);
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++) p[i] = (unsigned char)bench_splitmix(&seed);
}

static gpuws_status xfer_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, bool to_device,
                               bool pinned)
{
    xfer_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->ctx = ctx, s->to_device = to_device, s->pinned = pinned;
    s->bytes = pick(size, 24, 28, 30); /* 16 MiB, 256 MiB, 1 GiB */
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    while (s->bytes > d.max_alloc_bytes && s->bytes > (1u << 20)) s->bytes /= 2;
    gpuws_status st;
    if (pinned) {
        if ((st = gpuws_host_alloc(ctx, s->bytes, (void **)&s->host))) return st;
    } else if (!(s->host = malloc(s->bytes))) {
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    if (!(s->expect = malloc(s->bytes))) return GPUWS_ERR_OUT_OF_MEMORY;
    fill_bytes(s->expect, s->bytes, 7);
    if ((st = gpuws_buffer_create(ctx, s->bytes, &s->dev))) return st;
    if (to_device) { /* the host holds the data; the device starts with something else */
        memcpy(s->host, s->expect, s->bytes);
        const unsigned char z = 0;
        st = gpuws_buffer_fill(s->dev, 0, &z, 1, s->bytes);
    } else {
        memset(s->host, 0, s->bytes);
        st = gpuws_buffer_write(s->dev, 0, s->expect, s->bytes);
    }
    c->bytes = (double)s->bytes;
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zu MiB", s->bytes >> 20);
    return st;
}

static gpuws_status xfer_run(void *p, gpuws_stream *st)
{
    xfer_state *s = p;
    return s->to_device ? gpuws_buffer_write_async(st, s->dev, 0, s->host, s->bytes)
                        : gpuws_buffer_read_async(st, s->dev, 0, s->host, s->bytes);
}

static bool xfer_check(void *p, char *msg, size_t n)
{
    xfer_state *s = p;
    unsigned char *got = s->host, *tmp = NULL;
    if (s->to_device) {
        if (!(tmp = malloc(s->bytes)) || gpuws_buffer_read(s->dev, 0, tmp, s->bytes)) {
            snprintf(msg, n, "could not read the device buffer back");
            free(tmp);
            return false;
        }
        got = tmp;
    }
    bool ok = memcmp(got, s->expect, s->bytes) == 0;
    if (!ok) snprintf(msg, n, "the %s copy differs from the data sent", s->to_device ? "host-to-device" : "device-to-host");
    free(tmp);
    return ok;
}

#define XFER_WORKLOAD(NAME, TO_DEVICE, PINNED)                                                                  \
    static gpuws_status NAME##_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)        \
    {                                                                                                           \
        return xfer_setup(ctx, size, state, c, TO_DEVICE, PINNED);                                              \
    }                                                                                                           \
    static const bench_workload w_##NAME = {"transfer", #NAME, true, NAME##_setup, xfer_run, xfer_check, xfer_teardown}; \
    BENCH_WORKLOAD(w_##NAME)

XFER_WORKLOAD(h2d_pageable, true, false)
XFER_WORKLOAD(h2d_pinned, true, true)
XFER_WORKLOAD(d2h_pageable, false, false)
XFER_WORKLOAD(d2h_pinned, false, true)
