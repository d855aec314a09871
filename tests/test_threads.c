/* Thread safety (docs/threads.md): several threads on separate streams of one context, several threads on separate
 * contexts, the first lookup of kernels from several threads at once (the OpenCL program build happens once, under
 * the context's lock), and algorithm calls on one stream from several threads, which is misuse that must fail
 * loudly. Every thread checks every result; the main thread fails the test on any mismatch. Also the library's own
 * fork-join helpers (core/threads.h): every share and every item runs exactly once, also without memory. */
#define _GNU_SOURCE /* sched_setaffinity and the CPU_* macros */
#include "support.h"
#include "../core/alloc.h"   /* fault injection */
#include "../core/threads.h" /* the library's own fork-join */

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds);

#define THREADS 4
#define ROUNDS  40
#define N       4099 /* prime: no block size divides it */

typedef struct {
    int id;
    gpuws_backend_kind kind;
    gpuws_context *ctx; /* shared, or NULL: the thread opens its own */
    pthread_barrier_t *start;
    char error[512]; /* first failure, empty when every check passed */
    int checked;     /* results verified */
} worker;

static void failf(worker *w, const char *fmt, ...)
{
    if (w->error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
}

#define CHECK(w, call)                                                                                                 \
    do {                                                                                                               \
        gpuws_status st_ = (call);                                                                                     \
        if (st_) {                                                                                                     \
            failf((w), "thread %d: %s -> %s: %s", (w)->id, #call, gpuws_status_name(st_), gpuws_last_error());         \
            goto out;                                                                                                  \
        }                                                                                                              \
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
            failf(w, "thread %d round %d: sum %.17g max %g, expected %.17g and %g", w->id, r, got_sum, got_max, sum,
                  max);
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
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(ws[i].checked, ROUNDS * (N + 2), "thread %d checked %d results", i, ws[i].checked);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(threads, separate_contexts)
{
    gpuws_context *probe = test_open(*kind); /* skips or fails here, on the main thread, if the backend is missing */
    gpuws_context_destroy(probe);
    worker ws[THREADS];
    run_threads(*kind, NULL, run_matrix, ws);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(ws[i].checked, ROUNDS * (N + 2), "thread %d checked %d results", i, ws[i].checked);
}

/* ---- first kernel lookups at the same moment ---- */

static const char *const kernel_names[THREADS] = { "vector_add_f32", "reduce_sum_f32_partial", "vector_add_f32",
                                                   "reduce_sum_f32_partial" };
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

/* ---- one stream, several threads: misuse detected ---- */

/* gpuws_find_sources runs on the context's default stream, whose scratch memory, staging memory and plans are not
 * thread-safe, and a stream is used by one thread at a time. Several threads calling it on one context anyway must
 * each get either the right catalogue (the call ran alone on the stream) or, at once, GPUWS_ERR_INVALID_ARGUMENT
 * saying the stream is in use by another thread; nothing may leak. A refused thread tries again until it has had
 * SOURCE_RUNS calls run, so the stream passes from thread to thread. Before the stream was claimed by each algorithm
 * call, such calls failed with bogus messages ("all 4096 values are NaN", "clipping kept no pixel"), gave wrong
 * catalogues, crashed, leaked a scratch buffer, and hung under ASan. */
#define SKY            256
#define BLOBS          5
#define SOURCE_THREADS 6
#define SOURCE_RUNS    16
#define SOURCE_TRIES   1000000 /* a thread that never gets the stream fails the test instead of hanging it */

static float sky[SKY * SKY];
static gpuws_catalog *expected;

typedef struct {
    worker w;
    int ok, busy;
} source_worker;

/* Uniform noise in [-1, 1) and BLOBS separate 3x3 sources of peak 50: clipping's 5 sigma (about 2.9) keeps only
 * the sources. */
static void make_sky(void)
{
    test_fill_uniform_f32(sky, SKY * SKY, 1234, -1.0, 1.0);
    for (int k = 0; k < BLOBS; k++) {
        const int r = 20 + 45 * k, c = 200 - 40 * k;
        for (int dr = -1; dr <= 1; dr++)
            for (int dc = -1; dc <= 1; dc++) sky[(r + dr) * SKY + c + dc] += dr || dc ? 10.0f : 50.0f;
    }
}

static bool close_to(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) || (isnan(a) && isnan(b)); }

static bool same_catalog(const gpuws_catalog *a, const gpuws_catalog *b, char *why, size_t n)
{
    if (a->num_sources != b->num_sources || a->clip.count != b->clip.count || !close_to(a->threshold, b->threshold)) {
        snprintf(why, n, "%zu sources (clip kept %zu, threshold %g), expected %zu (%zu, %g)", a->num_sources,
                 a->clip.count, a->threshold, b->num_sources, b->clip.count, b->threshold);
        return false;
    }
    for (size_t i = 0; i < a->num_sources; i++) {
        const gpuws_source *x = &a->sources[i], *y = &b->sources[i];
        if (x->id != y->id || x->npix != y->npix || x->peak != y->peak || x->peak_x != y->peak_x ||
            x->peak_y != y->peak_y || !close_to(x->flux, y->flux) || !close_to(x->x, y->x) || !close_to(x->y, y->y)) {
            snprintf(why, n, "source %zu: id %lld npix %lld flux %.17g, expected %lld %lld %.17g", i, (long long)x->id,
                     (long long)x->npix, x->flux, (long long)y->id, (long long)y->npix, y->flux);
            return false;
        }
    }
    return true;
}

static void *find_sources_in_turn(void *arg)
{
    source_worker *sw = arg;
    worker *w = &sw->w;
    pthread_barrier_wait(w->start);
    for (int r = 0; sw->ok < SOURCE_RUNS && r < SOURCE_TRIES && !w->error[0]; r++) {
        gpuws_catalog *cat = (gpuws_catalog *)&cat;
        gpuws_status st = gpuws_find_sources(w->ctx, sky, SKY, SKY, NULL, &cat);
        if (st == GPUWS_ERR_INVALID_ARGUMENT && strstr(gpuws_last_error(), "is in use by another thread")) {
            if (cat) failf(w, "thread %d call %d: the refused call left *catalog set", w->id, r);
            sw->busy++;
            sched_yield();
            continue;
        }
        if (st) {
            failf(w, "thread %d call %d: %s: %s", w->id, r, gpuws_status_name(st), gpuws_last_error());
            continue;
        }
        char why[256];
        if (!same_catalog(cat, expected, why, sizeof why)) failf(w, "thread %d call %d: %s", w->id, r, why);
        gpuws_catalog_free(cat);
        sw->ok++;
    }
    if (sw->ok < SOURCE_RUNS)
        failf(w, "thread %d: %d of %d calls ran in %d tries", w->id, sw->ok, SOURCE_RUNS, SOURCE_TRIES);
    return NULL;
}

BACKEND_TEST(threads, find_sources_on_one_stream_from_several_threads_fails_loudly_or_is_right)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_context_destroy(ctx); /* the registry and the backend's state exist before the count below */
    const long live0 = gpuws__alloc_live();
    ctx = test_open(*kind);
    make_sky();
    TEST_OK(gpuws_find_sources(ctx, sky, SKY, SKY, NULL, &expected));
    cr_assert_eq(expected->num_sources, BLOBS, "the sky has %d sources, %zu found", BLOBS, expected->num_sources);
    source_worker ws[SOURCE_THREADS];
    pthread_t t[SOURCE_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, SOURCE_THREADS);
    for (int i = 0; i < SOURCE_THREADS; i++) {
        memset(&ws[i], 0, sizeof ws[i]);
        ws[i].w.id = i;
        ws[i].w.kind = *kind;
        ws[i].w.ctx = ctx;
        ws[i].w.start = &start;
        cr_assert_eq(pthread_create(&t[i], NULL, find_sources_in_turn, &ws[i]), 0);
    }
    int ok = 0, busy = 0;
    for (int i = 0; i < SOURCE_THREADS; i++) {
        pthread_join(t[i], NULL);
        ok += ws[i].ok;
        busy += ws[i].busy;
    }
    pthread_barrier_destroy(&start);
    cr_log_info("%s: %d calls ran, %d were refused as the stream was busy", test_backend_name(*kind), ok, busy);
    for (int i = 0; i < SOURCE_THREADS; i++) cr_assert(ws[i].w.error[0] == 0, "%s", ws[i].w.error);
    cr_assert_eq(ok, SOURCE_THREADS * SOURCE_RUNS);
    /* and the stream is fine afterwards */
    gpuws_catalog *again;
    TEST_OK(gpuws_find_sources(ctx, sky, SKY, SKY, NULL, &again));
    char why[256];
    cr_assert(same_catalog(again, expected, why, sizeof why), "after the threads: %s", why);
    gpuws_catalog_free(again);
    gpuws_catalog_free(expected);
    gpuws_context_destroy(ctx);
    cr_assert_eq(gpuws__alloc_live(), live0, "%ld library allocation(s) leaked", gpuws__alloc_live() - live0);
}

/* ---- the library's fork-join helpers (core/threads.h) ---- */

#define MOST_SHARES 65 /* one past the table gpuws__run_threads keeps on the stack */

static const unsigned share_counts[] = { 0, 1, 7, 64, MOST_SHARES };

static atomic_int share_runs[MOST_SHARES];

static void count_share(void *arg, unsigned i)
{
    (void)arg;
    if (i < MOST_SHARES) atomic_fetch_add(&share_runs[i], 1);
}

/* The host threads follow the CPUs the process may run on (taskset, a container, an MPI launcher's binding), not
 * the online ones: bound to one CPU, the library counts one (so auto thread counts take one thread, not a turn each
 * on one core), and all of them again once the binding is lifted. */
Test(fork_join, cpu_count_is_the_cpus_the_process_may_run_on)
{
    cpu_set_t all, one;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0, "sched_getaffinity");
    cr_assert_eq(gpuws__cpu_count(), (unsigned)CPU_COUNT(&all), "the CPUs of the process's affinity");
    int first = 0;
    while (!CPU_ISSET(first, &all)) first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0, "sched_setaffinity");
    const unsigned bound = gpuws__cpu_count();
    cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0, "sched_setaffinity back");
    cr_assert_eq(bound, 1u, "bound to one CPU, the library counts %u", bound);
    cr_assert_eq(gpuws__cpu_count(), (unsigned)CPU_COUNT(&all), "the CPUs again once unbound");
}

Test(fork_join, run_threads_runs_every_share_exactly_once)
{
    for (size_t c = 0; c < sizeof share_counts / sizeof *share_counts; c++) {
        const unsigned n = share_counts[c];
        for (unsigned i = 0; i < MOST_SHARES; i++) atomic_store(&share_runs[i], 0);
        TEST_OK(gpuws__run_threads(n, count_share, NULL));
        for (unsigned i = 0; i < MOST_SHARES; i++)
            cr_assert_eq(atomic_load(&share_runs[i]), i < n, "%u shares: share %u ran %d times", n, i,
                         atomic_load(&share_runs[i]));
    }
}

typedef struct {
    atomic_int runs;
    size_t lo, hi;
} range_seen;

typedef struct {
    range_seen part[MOST_SHARES];
    atomic_int item[MOST_SHARES];
    atomic_int bad_part;
} ranges_seen;

static void note_range(void *arg, size_t part, size_t lo, size_t hi)
{
    ranges_seen *s = arg;
    if (part >= MOST_SHARES || lo > hi || hi > MOST_SHARES) {
        atomic_fetch_add(&s->bad_part, 1);
        return;
    }
    atomic_fetch_add(&s->part[part].runs, 1);
    s->part[part].lo = lo;
    s->part[part].hi = hi;
    for (size_t i = lo; i < hi; i++) atomic_fetch_add(&s->item[i], 1);
}

/* Every part runs once; the ranges start at 0, each where the one before ends, the last at n, and their sizes differ
 * by at most one; every item lies in exactly one of them. */
static void check_ranges(const ranges_seen *s, size_t n, size_t parts)
{
    cr_assert_eq(atomic_load(&s->bad_part), 0, "n %zu, %zu parts: a part out of range or a range past n", n, parts);
    size_t at = 0, least = SIZE_MAX, most = 0;
    for (size_t k = 0; k < MOST_SHARES; k++) {
        const int runs = atomic_load(&s->part[k].runs);
        cr_assert_eq(runs, k < parts, "n %zu, %zu parts: part %zu ran %d times", n, parts, k, runs);
        if (k >= parts) continue;
        cr_assert_eq(s->part[k].lo, at, "n %zu, %zu parts: part %zu starts at %zu, expected %zu", n, parts, k,
                     s->part[k].lo, at);
        const size_t size = s->part[k].hi - s->part[k].lo;
        least = size < least ? size : least;
        most = size > most ? size : most;
        at = s->part[k].hi;
    }
    if (parts) {
        cr_assert_eq(at, n, "n %zu, %zu parts: the last range ends at %zu", n, parts, at);
        cr_assert_leq(most - least, 1, "n %zu, %zu parts: ranges of %zu to %zu items", n, parts, least, most);
    }
    for (size_t i = 0; i < MOST_SHARES; i++)
        cr_assert_eq(atomic_load(&s->item[i]), parts && i < n, "n %zu, %zu parts: item %zu in %d ranges", n, parts, i,
                     atomic_load(&s->item[i]));
}

Test(fork_join, run_ranges_cover_the_items_in_order_once_each)
{
    for (size_t c = 0; c < sizeof share_counts / sizeof *share_counts; c++)
        for (size_t p = 0; p < sizeof share_counts / sizeof *share_counts; p++) {
            const size_t n = share_counts[c], parts = share_counts[p];
            static ranges_seen s;
            memset(&s, 0, sizeof s);
            gpuws__run_ranges(n, parts, note_range, &s);
            check_ranges(&s, n, parts);
        }
}

/* The parts that the CPU backend's references divide their rows into: no more than the threads, each at least the
 * least work, no more than the rows, and never none. */
Test(fork_join, work_parts_give_each_part_its_least_work_and_never_none)
{
    cr_assert_eq(gpuws__work_parts(16, 100.0 * 1024, 1024, 1000), 16, "enough work: one part a thread");
    cr_assert_eq(gpuws__work_parts(16, 5.0 * 1024 + 1, 1024, 1000), 5, "five parts' worth of work");
    cr_assert_eq(gpuws__work_parts(16, 100.0 * 1024, 1024, 3), 3, "no more parts than rows");
    cr_assert_eq(gpuws__work_parts(16, 10, 1024, 1000), 1, "too little work: one part");
    cr_assert_eq(gpuws__work_parts(0, 1e9, 1024, 1000), 1, "no threads: one part");
    cr_assert_eq(gpuws__work_parts(16, 1e9, 1024, 0), 1, "no rows: one part");
}

/* Past the stack table gpuws__run_threads needs an allocation; when it fails, run_threads runs nothing and says so,
 * and run_ranges still runs every range, on the calling thread. */
Test(fork_join, run_ranges_without_memory_for_the_threads_still_runs_every_range)
{
    for (unsigned i = 0; i < MOST_SHARES; i++) atomic_store(&share_runs[i], 0);
    gpuws__fault_alloc_countdown(1);
    TEST_FAILS(GPUWS_ERR_OUT_OF_MEMORY, gpuws__run_threads(MOST_SHARES, count_share, NULL));
    cr_assert(gpuws__fault_alloc_countdown(0), "gpuws__run_threads of %d shares allocated nothing", MOST_SHARES);
    for (unsigned i = 0; i < MOST_SHARES; i++) cr_assert_eq(atomic_load(&share_runs[i]), 0);

    static ranges_seen s;
    gpuws__fault_alloc_countdown(1);
    gpuws__run_ranges(MOST_SHARES, MOST_SHARES, note_range, &s);
    cr_assert(gpuws__fault_alloc_countdown(0), "gpuws__run_ranges of %d parts allocated nothing", MOST_SHARES);
    check_ranges(&s, MOST_SHARES, MOST_SHARES);
}

/* ---- the kept threads: a call holds a set; calls meanwhile (other threads', shares') take the other sets, or start
 * threads of their own when every set is held (three callers with six nested calls each hold more than four) ---- */

#define NEST 6 /* shares of each call below */

typedef struct {
    atomic_int outer[NEST], inner[NEST][NEST];
} nest_seen;

typedef struct {
    nest_seen *seen;
    unsigned outer;
} inner_arg;

static void inner_share(void *arg, unsigned i)
{
    const inner_arg *a = arg;
    if (i < NEST) atomic_fetch_add(&a->seen->inner[a->outer][i], 1);
}

static void outer_share(void *arg, unsigned i)
{
    nest_seen *s = arg;
    if (i >= NEST) return;
    atomic_fetch_add(&s->outer[i], 1);
    inner_arg a = { s, i };
    gpuws__run_threads(NEST, inner_share, &a); /* while the outer call holds a set of the kept threads */
}

static void *nested_calls(void *arg)
{
    nest_seen *s = arg;
    for (int r = 0; r < 50; r++) gpuws__run_threads(NEST, outer_share, s);
    return NULL;
}

Test(fork_join, calls_from_inside_shares_and_from_several_threads_run_every_share)
{
    static nest_seen seen[3];
    memset(seen, 0, sizeof seen);
    pthread_t t[2];
    for (int k = 0; k < 2; k++) cr_assert_eq(pthread_create(&t[k], NULL, nested_calls, &seen[k + 1]), 0);
    nested_calls(&seen[0]);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 3; k++)
        for (unsigned i = 0; i < NEST; i++) {
            cr_assert_eq(atomic_load(&seen[k].outer[i]), 50, "caller %d: outer share %u ran %d times", k, i,
                         atomic_load(&seen[k].outer[i]));
            for (unsigned j = 0; j < NEST; j++)
                cr_assert_eq(atomic_load(&seen[k].inner[i][j]), 50, "caller %d: inner share %u of %u ran %d times", k,
                             j, i, atomic_load(&seen[k].inner[i][j]));
        }
}

/* A child of fork has none of its parent's kept threads: its calls start threads of its own and return. */
Test(fork_join, a_child_of_fork_runs_every_share)
{
    for (unsigned i = 0; i < MOST_SHARES; i++) atomic_store(&share_runs[i], 0);
    TEST_OK(gpuws__run_threads(8, count_share, NULL)); /* the parent keeps threads */
    const pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork failed");
    if (pid == 0) {
        alarm(20); /* a call waiting for the parent's threads would hang: end the child instead */
        for (unsigned i = 0; i < MOST_SHARES; i++) atomic_store(&share_runs[i], 0);
        for (int r = 0; r < 3; r++) gpuws__run_threads(8, count_share, NULL);
        int ok = 1;
        for (unsigned i = 0; i < 8; i++) ok &= atomic_load(&share_runs[i]) == 3;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child did not exit (signal %d: a hang ended by its alarm?)",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    cr_assert_eq(WEXITSTATUS(status), 0, "the child's shares did not all run three times");
}
