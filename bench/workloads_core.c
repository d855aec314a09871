/* Built-in benchmark workloads that are no algorithm: the host<->device transfers (pageable and pinned host memory,
 * both directions). The algorithms' workloads are their cases (kernels/<algo>/<algo>_cases.c). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t pick(bench_size s, int small_log2, int default_log2, int large_log2)
{
    return (size_t)1 << (s == BENCH_SMALL || s == BENCH_TINY ? small_log2
                         : s == BENCH_LARGE                  ? large_log2
                                                             : default_log2);
}

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
    if (!ok)
        snprintf(msg, n, "the %s copy differs from the data sent", s->to_device ? "host-to-device" : "device-to-host");
    free(tmp);
    return ok;
}

#define XFER_WORKLOAD(NAME, TO_DEVICE, PINNED)                                                                         \
    static gpuws_status NAME##_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)               \
    {                                                                                                                  \
        return xfer_setup(ctx, size, state, c, TO_DEVICE, PINNED);                                                     \
    }                                                                                                                  \
    static const bench_workload w_##NAME = {                                                                           \
        "transfer", #NAME, true, NAME##_setup, xfer_run, xfer_check, xfer_teardown                                     \
    };                                                                                                                 \
    BENCH_WORKLOAD(w_##NAME)

XFER_WORKLOAD(h2d_pageable, true, false)
XFER_WORKLOAD(h2d_pinned, true, true)
XFER_WORKLOAD(d2h_pageable, false, false)
XFER_WORKLOAD(d2h_pinned, false, true)
