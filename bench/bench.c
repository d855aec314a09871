/* The benchmark engine: registry, targets, ceilings, one checked-then-timed run, derived columns. */
#include "bench.h"
#include "core/errors.h" /* gpuws__error: the peak check's message */
#include "peak/peak.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WORKLOADS 128
static const bench_workload *workloads[MAX_WORKLOADS + 1];
static int nworkloads;

void bench_register(const bench_workload *w)
{
    if (nworkloads == MAX_WORKLOADS) {
        fprintf(stderr, "gpuws bench: too many workloads (raise MAX_WORKLOADS)\n");
        abort();
    }
    int i = nworkloads++;
    while (i > 0) {
        int c = strcmp(workloads[i - 1]->algorithm, w->algorithm);
        if (c < 0 || (c == 0 && strcmp(workloads[i - 1]->variant, w->variant) <= 0)) break;
        workloads[i] = workloads[i - 1];
        i--;
    }
    workloads[i] = w;
}

const bench_workload *const *bench_workloads(void) { return workloads; }

const char *bench_size_name(bench_size s)
{
    return s == BENCH_TINY ? "tiny" : s == BENCH_SMALL ? "small" : s == BENCH_LARGE ? "large" : "default";
}

const char *bench_workload_name(const bench_workload *w, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s", w->algorithm, w->variant);
    return buf;
}

int bench_flop_index(const bench_workload *w, const bench_counts *c)
{
    if (c->flop_type == BENCH_FLOPS_F64) return 1;
    if (c->flop_type == BENCH_FLOPS_F32) return 0;
    return strstr(w->variant, "f64") ? 1 : 0;
}

/* "Portable Computing Language" is PoCL everywhere people talk about it; other platforms keep their first word. */
static void short_platform(const char *platform, char *out, size_t n)
{
    if (strstr(platform, "Portable Computing Language")) {
        snprintf(out, n, "PoCL");
        return;
    }
    size_t l = strcspn(platform, " ");
    snprintf(out, n, "%.*s", (int)(l < 24 ? l : 24), platform);
}

static bool icontains(const char *hay, const char *needle)
{
    if (!needle || !*needle) return true;
    for (size_t nl = strlen(needle); *hay; hay++)
        if (strncasecmp(hay, needle, nl) == 0) return true;
    return false;
}

size_t bench_targets(unsigned mask, const char *platform, bench_target *out, size_t max)
{
    static const gpuws_backend_kind order[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };
    size_t k = 0;
    for (int i = 0; i < 3; i++) {
        if (!(mask & (1u << order[i]))) continue;
        gpuws_backend_info bi;
        if (gpuws_backend_get_info(order[i], &bi) || !bi.available) continue;
        size_t n = 0;
        gpuws_device_count(order[i], NULL, &n);
        for (size_t d = 0; d < n && k < max; d++) {
            bench_target *t = &out[k];
            memset(t, 0, sizeof *t);
            if (gpuws_device_get_info(order[i], NULL, d, &t->info)) continue;
            if (order[i] == GPUWS_BACKEND_OPENCL && !icontains(t->info.platform, platform)) continue;
            t->backend = order[i];
            t->device = d;
            if (order[i] == GPUWS_BACKEND_OPENCL) {
                char p[32];
                short_platform(t->info.platform, p, sizeof p);
                snprintf(t->label, sizeof t->label, "%s | %s | %s", bi.name, t->info.platform, t->info.name);
                snprintf(t->short_label, sizeof t->short_label, "%s/%s %s", bi.name, p, t->info.name);
            } else {
                snprintf(t->label, sizeof t->label, "%s | %s", bi.name, t->info.name);
                snprintf(t->short_label, sizeof t->short_label, "%s %s", bi.name, t->info.name);
            }
            k++;
        }
    }
    return k;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Times `runs` executions of fn(arg, s) bracketed by events on s, after one warm-up; the median in ms. */
static gpuws_status time_median(gpuws_context *ctx, gpuws_status (*fn)(void *, gpuws_stream *), void *arg, int runs,
                                double *ms_out)
{
    gpuws_event *e0 = NULL, *e1 = NULL;
    gpuws_stream *s = NULL;
    double times[15];
    if (runs > 15) runs = 15;
    gpuws_status st;
    if ((st = gpuws_event_create(ctx, &e0)) || (st = gpuws_event_create(ctx, &e1)) ||
        (st = gpuws_context_get_default_stream(ctx, &s)))
        goto done;
    bool retried = false;
    for (int i = -1; i < runs; i++) { /* i = -1: warm-up */
        double ms;
        if ((st = gpuws_event_record(e0, s)) || (st = fn(arg, s)) || (st = gpuws_event_record(e1, s)) ||
            (st = gpuws_event_synchronize(e1)) || (st = gpuws_event_elapsed_ms(e0, e1, &ms))) {
            /* an OpenCL platform whose markers carry no times answers the first pair so, and records the next ones
             * with marker kernels: the warm-up is then taken once more */
            if (st == GPUWS_ERR_NOT_READY && i < 0 && !retried) {
                retried = true, i--;
                continue;
            }
            goto done;
        }
        if (i >= 0) times[i] = ms;
    }
    *ms_out = median_of(times, runs);
done:
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    return st;
}

typedef struct {
    gpuws_buffer *a, *b;
    size_t bytes;
} copy_job;

static gpuws_status copy_once(void *p, gpuws_stream *s)
{
    copy_job *j = p;
    return gpuws_buffer_copy_async(s, j->b, 0, j->a, 0, j->bytes);
}

gpuws_status bench_copy_bandwidth_sized(gpuws_context *ctx, bench_size size, double *gbs)
{
    gpuws_device_info d;
    gpuws_status st = gpuws_context_get_device_info(ctx, &d);
    if (st) return st;
    /* Far past any cache: 1 GiB each way on GPUs, 512 MiB on CPUs (a big L3 is a few hundred MiB at most);
     * 32 MiB for small runs (tests), less where memory is short. */
    size_t bytes = size == BENCH_SMALL          ? (size_t)32 << 20
                   : d.type == GPUWS_DEVICE_CPU ? (size_t)512 << 20
                                                : (size_t)1 << 30;
    while (bytes > ((size_t)1 << 20) && (bytes * 3 > d.global_mem_bytes || bytes > d.max_alloc_bytes)) bytes /= 2;
    copy_job j = { NULL, NULL, bytes };
    const unsigned char fill = 0x5a;
    double ms = 0;
    if (!(st = gpuws_buffer_create(ctx, bytes, &j.a)) && !(st = gpuws_buffer_create(ctx, bytes, &j.b)) &&
        !(st = gpuws_buffer_fill(j.a, 0, &fill, 1, bytes)) && !(st = time_median(ctx, copy_once, &j, 7, &ms)))
        *gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
    gpuws_buffer_destroy(j.a);
    gpuws_buffer_destroy(j.b);
    return st;
}

gpuws_status bench_copy_bandwidth(gpuws_context *ctx, double *gbs)
{
    return bench_copy_bandwidth_sized(ctx, BENCH_DEFAULT, gbs);
}

/* a = 1 - 2^-10 and b = 2^-10 are exact in both formats: the chains fall from about 3 towards L = 1, and after the
 * default 8192 steps a^n is 3e-4, so a kernel that skipped half of its steps would be off by far more than the
 * bound. */
#define PEAK_A (1.0 - 0x1p-10)
#define PEAK_B 0x1p-10

typedef struct {
    gpuws_dtype dt;
    size_t threads;
    uint32_t block, iters, lanes;
    gpuws_buffer *out;
} peak_job;

static gpuws_status peak_once(void *p, gpuws_stream *s)
{
    peak_job *j = p;
    return gpuws__peak_fma(s, j->dt, j->threads, j->block, j->iters, j->lanes, PEAK_A, PEAK_B, j->out);
}

static gpuws_status peak_check(const peak_job *j)
{
    const size_t es = gpuws_dtype_size(j->dt);
    void *h = malloc(j->threads * es);
    if (!h) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_status st = gpuws_buffer_read(j->out, 0, h, j->threads * es);
    const double u = j->dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53;
    const double bound = gpuws__peak_error_bound(u, PEAK_A, PEAK_B, j->lanes);
    for (size_t t = 0; !st && t < j->threads; t++) {
        double got = j->dt == GPUWS_F32 ? (double)((float *)h)[t] : ((double *)h)[t];
        double want = gpuws__peak_expected(t, j->iters, PEAK_A, PEAK_B, j->lanes);
        if (!(fabs(got - want) <= bound))
            st = gpuws__error(GPUWS_ERR_INTERNAL,
                              "the %s FMA kernel gave %.17g for thread %zu; the closed form says %.17g "
                              "(allowed error %.3g)",
                              gpuws_dtype_name(j->dt), got, t, want, bound);
    }
    free(h);
    return st;
}

gpuws_status bench_fma_peak(gpuws_context *ctx, gpuws_dtype dt, bench_size size, double *gflops)
{
    gpuws_device_info d;
    gpuws_backend_kind kind;
    gpuws_status st;
    if ((st = gpuws_context_get_device_info(ctx, &d)) || (st = gpuws_context_get_backend(ctx, &kind))) return st;
    peak_job j = { dt, 0, 256, size == BENCH_SMALL ? 1024 : 8192, 1, NULL };
    const size_t cus = d.compute_units ? d.compute_units : 1;
    if (kind == GPUWS_BACKEND_CPU) { /* the scalar reference on one core */
        j.threads = 64, j.block = 64;
    } else if (d.type == GPUWS_DEVICE_CPU) {
        /* CPU OpenCL (PoCL): explicit vectors as wide as the device prefers, 64 bytes at most (one AVX-512
         * register), a few groups of 16 work-items per core */
        j.lanes = d.warp_size / (dt == GPUWS_F64 ? 2 : 1);
        j.lanes = j.lanes >= 16 ? 16 : j.lanes >= 8 ? 8 : j.lanes >= 4 ? 4 : j.lanes >= 2 ? 2 : 1;
        if (dt == GPUWS_F64 && j.lanes > 8) j.lanes = 8;
        j.block = 16, j.threads = cus * 16 * 8;
    } else { /* GPUs: 8 blocks of 256 fill an SM's 2048 threads; 4 waves even out the tail */
        while (j.block > d.max_block_size) j.block /= 2;
        j.threads = cus * (2048 / j.block) * j.block * 4;
    }
    if ((st = gpuws_buffer_create(ctx, j.threads * gpuws_dtype_size(dt), &j.out))) return st;
    double ms = 0;
    gpuws_stream *s = NULL;
    if ((st = gpuws_context_get_default_stream(ctx, &s)) || (st = peak_once(&j, s)) ||
        (st = gpuws_stream_synchronize(s)) || (st = peak_check(&j)) || (st = time_median(ctx, peak_once, &j, 5, &ms)))
        goto done;
    *gflops = 2.0 * GPUWS_PEAK_CHAINS * j.lanes * (double)j.iters * (double)j.threads / (ms * 1e-3) / 1e9;
done:
    gpuws_buffer_destroy(j.out);
    return st;
}

static void note_error(bench_target *t, const char *what, gpuws_status st)
{
    size_t l = strlen(t->ceiling_error);
    snprintf(t->ceiling_error + l, sizeof t->ceiling_error - l, "%s%s: %s: %s", l ? "; " : "", what,
             gpuws_status_name(st), gpuws_last_error());
}

static gpuws_status no_work(void *arg, gpuws_stream *s)
{
    (void)arg, (void)s;
    return GPUWS_OK;
}

/* The timer's floor, in us: two events recorded back to back, nothing between them. NVIDIA's OpenCL events have a
 * floor several times CUDA's (mostly the host: each command reaches an idle device some microseconds after the one
 * before it), so the same few-microsecond kernel reads several microseconds slower on OpenCL. Reported next to the
 * ceilings so that short rows can be read with it; never subtracted. */
static gpuws_status timer_floor(gpuws_context *ctx, double *us)
{
    double ms = 0;
    gpuws_status st = time_median(ctx, no_work, NULL, 15, &ms);
    if (!st) *us = ms * 1e3;
    return st;
}

void bench_measure_ceilings(bench_target *t, gpuws_context *ctx, bench_size size)
{
    gpuws_status st;
    if ((st = timer_floor(ctx, &t->timer_floor_us))) note_error(t, "timer floor", st);
    if ((st = bench_copy_bandwidth_sized(ctx, size, &t->copy_gbs))) note_error(t, "copy bandwidth", st);
    if ((st = bench_fma_peak(ctx, GPUWS_F32, size, &t->fma_gflops[0]))) note_error(t, "FMA f32", st);
    if (t->info.fp64 && (st = bench_fma_peak(ctx, GPUWS_F64, size, &t->fma_gflops[1]))) note_error(t, "FMA f64", st);
}

void bench_run(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
               bench_result *r)
{
    bench_run_budget(w, t, ctx, size, repeat, INFINITY, 0, r);
}

void bench_run_budget(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
                      double budget_s, int batch_calls, bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->w = w;
    r->t = t;
    r->size = size;
    r->ceiling_gbs = t ? t->copy_gbs : 0;
    void *state = NULL;
    gpuws_stream *s = NULL;
    gpuws_event *e0 = NULL, *e1 = NULL;
    double *times = NULL, first_ms = 0;
    gpuws_status st;
    if ((st = gpuws_context_get_default_stream(ctx, &s)) || (st = gpuws_event_create(ctx, &e0)) ||
        (st = gpuws_event_create(ctx, &e1)) || (st = w->setup(ctx, size, &state, &r->counts)))
        goto error;
    /* correct first: one run, checked against the reference, before anything is timed */
    if ((st = gpuws_stream_synchronize(s)) || (st = gpuws_event_record(e0, s)) || (st = w->run(state, s)) ||
        (st = gpuws_event_record(e1, s)) || (st = gpuws_event_synchronize(e1)) || (st = gpuws_stream_synchronize(s)) ||
        (st = gpuws_event_elapsed_ms(e0, e1, &first_ms)))
        goto error;
    if (!w->check(state, r->error, sizeof r->error)) {
        if (!r->error[0]) snprintf(r->error, sizeof r->error, "result differs from the scalar reference");
        goto done;
    }
    /* warm-up, timed: the checked run may include one-time work (an OpenCL program built on its first launch, which
     * on NVIDIA's OpenCL can take over a second), so the repeats that fit the budget are counted from the warm run.
     * Skipped only after a checked run of over 10 s (with a lower threshold, rows whose first run built a big
     * program would get a single timed run) */
    double warm_ms = first_ms;
    if (first_ms < 10000 && ((st = gpuws_event_record(e0, s)) || (st = w->run(state, s)) ||
                             (st = gpuws_event_record(e1, s)) || (st = gpuws_event_synchronize(e1)) ||
                             (st = gpuws_stream_synchronize(s)) || (st = gpuws_event_elapsed_ms(e0, e1, &warm_ms))))
        goto error;
    if (repeat < 1) repeat = 1;
    if (warm_ms * 1e-3 * repeat > budget_s) {
        repeat = (int)(budget_s / (warm_ms * 1e-3));
        if (repeat < 1) repeat = 1;
    }
    times = malloc((size_t)repeat * sizeof *times);
    if (!times) {
        snprintf(r->error, sizeof r->error, "out of host memory");
        goto done;
    }
    for (int i = 0; i < repeat; i++) {
        double ms;
        if ((st = gpuws_event_record(e0, s)) || (st = w->run(state, s)) || (st = gpuws_event_record(e1, s)) ||
            (st = gpuws_event_synchronize(e1)) || (st = gpuws_event_elapsed_ms(e0, e1, &ms)))
            goto error;
        times[i] = ms;
    }
    r->median_ms = median_of(times, repeat);
    r->min_ms = times[0];
    r->repeats = repeat;
    /* back to back: the same calls with no event between them; the samples that fit the budget again, at least 3 */
    int samples = repeat;
    if (batch_calls >= 2 && r->median_ms * 1e-3 * batch_calls * samples > budget_s)
        samples = (int)(budget_s / (r->median_ms * 1e-3 * batch_calls));
    if (t && t->backend != GPUWS_BACKEND_CPU && batch_calls >= 2 && samples >= 3) {
        for (int i = 0; i < samples; i++) {
            double ms;
            if ((st = gpuws_event_record(e0, s))) goto error;
            for (int c = 0; c < batch_calls; c++)
                if ((st = w->run(state, s))) goto error;
            if ((st = gpuws_event_record(e1, s)) || (st = gpuws_event_synchronize(e1)) ||
                (st = gpuws_event_elapsed_ms(e0, e1, &ms)))
                goto error;
            times[i] = ms / batch_calls;
        }
        r->batch_ms = median_of(times, samples);
        r->batch_calls = batch_calls;
        r->batch_samples = samples;
    }
    r->ok = true;
    goto done;
error:
    snprintf(r->error, sizeof r->error, "%s: %s", gpuws_status_name(st), gpuws_last_error());
done:
    free(times);
    if (s) gpuws_stream_synchronize(s); /* nothing of a failed run may still use the state */
    if (state) w->teardown(state);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
}

/* The CPU backend runs the scalar reference; transfers have no reference to be faster than. */
static bool has_reference(const bench_workload *w) { return strcmp(w->algorithm, "transfer") != 0; }

static bool same_workload(const bench_result *a, const bench_result *b)
{
    return !strcmp(a->w->algorithm, b->w->algorithm) && !strcmp(a->w->variant, b->w->variant) && a->size == b->size &&
           !strcmp(a->counts.size_label, b->counts.size_label);
}

static void derive_rates(bench_result *r)
{
    const double sec = r->median_ms * 1e-3;
    r->gbs = r->counts.bytes / sec / 1e9;
    r->gflops = r->counts.flops / sec / 1e9;
    if (r->w->end_to_end) {
        r->bound = "host link"; /* the device's ceilings do not bound a transfer over PCIe / NVLink-C2C */
        return;
    }
    if (!r->t) return;
    const double bw = r->t->copy_gbs, fma = r->t->fma_gflops[bench_flop_index(r->w, &r->counts)];
    if (bw > 0 && r->counts.bytes > 0) r->frac_bw = r->gbs / bw;
    if (fma > 0 && r->counts.flops > 0) r->frac_fma = r->gflops / fma;
    /* the larger of the two = performance over the roofline's attainable rate min(FMA peak, intensity x bandwidth):
     * the binding side is the one whose fraction is larger (intensity below the ridge point: memory) */
    if (r->frac_bw > 0 || r->frac_fma > 0) {
        r->bound = r->frac_fma > r->frac_bw ? "compute" : "memory";
        r->fraction = r->frac_fma > r->frac_bw ? r->frac_fma : r->frac_bw;
    }
}

void bench_derive(bench_result *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bench_result *r = &rows[i];
        r->gbs = r->gflops = r->frac_bw = r->frac_fma = r->fraction = r->speedup = r->ocl_cuda = r->ocl_cuda_batch = 0;
        r->bound = NULL;
        if (r->ok && r->median_ms > 0) derive_rates(r);
    }
    for (size_t i = 0; i < n; i++) {
        bench_result *r = &rows[i];
        if (!r->ok || !r->t || !(r->median_ms > 0)) continue;
        if (r->t->backend == GPUWS_BACKEND_CPU && has_reference(r->w)) r->speedup = 1;
        for (size_t k = 0; k < n; k++) {
            const bench_result *o = &rows[k];
            if (k == i || !o->ok || !o->t || !(o->median_ms > 0) || !same_workload(r, o)) continue;
            if (o->t->backend == GPUWS_BACKEND_CPU && has_reference(r->w)) r->speedup = o->median_ms / r->median_ms;
            if (r->t->backend == GPUWS_BACKEND_OPENCL && o->t->backend == GPUWS_BACKEND_CUDA &&
                !strcmp(r->t->info.name, o->t->info.name)) {
                r->ocl_cuda = o->median_ms / r->median_ms;
                if (r->batch_ms > 0 && o->batch_ms > 0) r->ocl_cuda_batch = o->batch_ms / r->batch_ms;
            }
        }
    }
}
