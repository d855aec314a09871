/* Thread safety (docs/threads.md): several threads on separate streams of one context, several threads on separate
 * contexts, and the first lookup of kernels from several threads at once (the OpenCL program build happens once,
 * under the context's lock). Every thread checks every result; the main thread fails the test on any mismatch. */
#include "support.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected, unsigned long *builds);

#define THREADS 4
#define ROUNDS 40
#define N 4099 /* prime: no block size divides it */

typedef struct {
    int id;
    gpuws_backend_kind kind;
    gpuws_context *ctx;  /* shared, or NULL: the thread opens its own */
    pthread_barrier_t *start;
    char error[512];     /* first failure, empty when every check passed */
    int checked;         /* results verified */
} worker;

static void failf(worker *w, const char *fmt, ...)
{
    if (w->error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
}

#define CHECK(w, call)                                                                                          \
    do {                                                                                                        \
        gpuws_status st_ = (call);                                                                              \
        if (st_) {                                                                                              \
            failf((w), "thread %d: %s -> %s: %s", (w)->id, #call, gpuws_status_name(st_), gpuws_last_error());   \
            goto out;                                                                                           \
        }                                                                                                       \
    } while (0)

/* ROUNDS times on the worker's own stream: fresh buffers, vector_add, reduce (sum, max), an event; every result
 * compared with the exact answer (the inputs are small integers, so f32 sums are exact). */
static void *run_matrix(void *arg)
{
    worker *w = arg;
    gpuws_context *ctx = w->ctx;
    gpuws_stream *s = NULL;
    gpuws_event *e = NULL;
    gpuws_buffer *a = NULL, *b = NULL, *c = NULL;
    float *ha = malloc(N * sizeof *ha), *hb = malloc(N * sizeof *hb), *hc = malloc(N * sizeof *hc);
    pthread_barrier_wait(w->start);
    if (!ctx) {
        gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
        o.backend = test_backend_name(w->kind);
        CHECK(w, gpuws_context_create(&ctx, &o));
    }
    CHECK(w, gpuws_stream_create(ctx, &s));
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(w, gpuws_buffer_create(ctx, N * sizeof(float), &a));
        CHECK(w, gpuws_buffer_create(ctx, N * sizeof(float), &b));
        CHECK(w, gpuws_buffer_create(ctx, N * sizeof(float), &c));
        CHECK(w, gpuws_event_create(ctx, &e));
        double sum = 0, max = -1;
        for (int i = 0; i < N; i++) {
            ha[i] = (float)((i * 7 + w->id * 13 + r) % 101);
            hb[i] = (float)(w->id + 1);
            sum += ha[i] + hb[i];
            if (ha[i] + hb[i] > max) max = ha[i] + hb[i];
        }
        CHECK(w, gpuws_buffer_write_async(s, a, 0, ha, N * sizeof(float)));
        CHECK(w, gpuws_buffer_write_async(s, b, 0, hb, N * sizeof(float)));
        CHECK(w, gpuws_vector_add(s, GPUWS_F32, N, a, b, c));
        double got_sum = 0, got_max = 0;
        CHECK(w, gpuws_reduce_value(s, GPUWS_REDUCE_SUM, GPUWS_F32, N, c, &got_sum));
        CHECK(w, gpuws_reduce_value(s, GPUWS_REDUCE_MAX, GPUWS_F32, N, c, &got_max));
        CHECK(w, gpuws_buffer_read_async(s, c, 0, hc, N * sizeof(float)));
        CHECK(w, gpuws_event_record(e, s));
        CHECK(w, gpuws_event_synchronize(e));
        for (int i = 0; i < N; i++)
            if (hc[i] != ha[i] + hb[i]) {
                failf(w, "thread %d round %d: c[%d] = %g, expected %g", w->id, r, i, hc[i], ha[i] + hb[i]);
                goto out;
            }
        if (got_sum != sum || got_max != max) {
            failf(w, "thread %d round %d: sum %.17g max %g, expected %.17g and %g", w->id, r, got_sum, got_max, sum, max);
            goto out;
        }
        w->checked += N + 2;
        gpuws_buffer_destroy(a);
        gpuws_buffer_destroy(b);
        gpuws_buffer_destroy(c);
        gpuws_event_destroy(e);
        a = b = c = NULL;
        e = NULL;
    }
out:
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_buffer_destroy(c);
    gpuws_event_destroy(e);
    gpuws_stream_destroy(s);
    if (!w->ctx) gpuws_context_destroy(ctx);
    free(ha);
    free(hb);
    free(hc);
    return NULL;
}

static void run_threads(gpuws_backend_kind kind, gpuws_context *shared, void *(*fn)(void *), worker *ws)
{
    pthread_t t[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        memset(&ws[i], 0, sizeof ws[i]);
        ws[i].id = i;
        ws[i].kind = kind;
        ws[i].ctx = shared;
        ws[i].start = &start;
        cr_assert_eq(pthread_create(&t[i], NULL, fn, &ws[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) cr_assert(ws[i].error[0] == 0, "%s", ws[i].error);
}

BACKEND_TEST(threads, separate_streams_of_one_context)
{
    gpuws_context *ctx = test_open(*kind);
    worker ws[THREADS];
    run_threads(*kind, ctx, run_matrix, ws);
    for (int i = 0; i < THREADS; i++) cr_assert_eq(ws[i].checked, ROUNDS * (N + 2), "thread %d checked %d results", i, ws[i].checked);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(threads, separate_contexts)
{
    gpuws_context *probe = test_open(*kind); /* skips or fails here, on the main thread, if the backend is missing */
    gpuws_context_destroy(probe);
    worker ws[THREADS];
    run_threads(*kind, NULL, run_matrix, ws);
    for (int i = 0; i < THREADS; i++) cr_assert_eq(ws[i].checked, ROUNDS * (N + 2), "thread %d checked %d results", i, ws[i].checked);
}

/* ---- first kernel lookups at the same moment ---- */

static const char *const kernel_names[THREADS] = {"vector_add_f32", "reduce_sum_f32_partial", "vector_add_f32",
                                                  "reduce_sum_f32_partial"};
static gpuws_kernel *found[THREADS];

static void *lookup_and_run(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    gpuws_stream *s = NULL;
    CHECK(w, gpuws_kernel_get(w->ctx, kernel_names[w->id], &found[w->id]));
    /* and use them right away, each on its own stream */
    CHECK(w, gpuws_stream_create(w->ctx, &s));
    {
        float h[N], back[N];
        for (int i = 0; i < N; i++) h[i] = (float)(i % 17 + w->id);
        gpuws_buffer *a = NULL, *c = NULL;
        CHECK(w, gpuws_buffer_create(w->ctx, sizeof h, &a));
        CHECK(w, gpuws_buffer_create(w->ctx, sizeof h, &c));
        CHECK(w, gpuws_buffer_write_async(s, a, 0, h, sizeof h));
        CHECK(w, gpuws_vector_add(s, GPUWS_F32, N, a, a, c));
        double sum = 0, want = 0;
        CHECK(w, gpuws_reduce_value(s, GPUWS_REDUCE_SUM, GPUWS_F32, N, a, &sum));
        CHECK(w, gpuws_buffer_read_async(s, c, 0, back, sizeof back));
        CHECK(w, gpuws_stream_synchronize(s));
        for (int i = 0; i < N; i++) {
            want += h[i];
            if (back[i] != 2 * h[i]) {
                failf(w, "thread %d: c[%d] = %g, expected %g", w->id, i, back[i], 2 * h[i]);
                break;
            }
        }
        if (sum != want) failf(w, "thread %d: sum %.17g, expected %.17g", w->id, sum, want);
        w->checked = N + 1;
        gpuws_buffer_destroy(a);
        gpuws_buffer_destroy(c);
    }
out:
    gpuws_stream_destroy(s);
    return NULL;
}

Test(threads, first_kernel_lookups_from_several_threads_build_each_program_once)
{
    /* no disk caches (ours, PoCL's): each program is compiled from source, slow enough for the threads to collide */
    setenv("GPUWS_CACHE_DIR", "off", 1);
    setenv("POCL_KERNEL_CACHE", "0", 1);
    gpuws_context *ctx = test_open(GPUWS_BACKEND_OPENCL);
    unsigned long h0, m0, r0, b0, h1, m1, r1, b1;
    gpuws__opencl_cache_stats(&h0, &m0, &r0, &b0);
    worker ws[THREADS];
    run_threads(GPUWS_BACKEND_OPENCL, ctx, lookup_and_run, ws);
    gpuws__opencl_cache_stats(&h1, &m1, &r1, &b1);
    cr_assert_eq(found[0], found[2], "two threads looking up vector_add_f32 got different kernels");
    cr_assert_eq(found[1], found[3], "two threads looking up reduce_sum_f32_partial got different kernels");
    cr_assert_neq(found[0], found[1]);
    /* vector_add.cl and reduce.cl, once each (reduce_value's other kernels come from the same program) */
    cr_assert_eq(b1 - b0, 2, "%lu programs built from source, expected 2", b1 - b0);
    for (int i = 0; i < THREADS; i++) cr_assert_eq(ws[i].checked, N + 1);
    gpuws_context_destroy(ctx);
}
