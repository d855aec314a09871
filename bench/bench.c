#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t bench_targets(unsigned mask, const char *platform, bench_target *out, size_t max)
{
    static const gpuws_backend_kind order[] = {GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU};
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
            if (order[i] == GPUWS_BACKEND_OPENCL && platform && *platform && !strstr(t->info.platform, platform)) continue;
            t->backend = order[i];
            t->device = d;
            if (order[i] == GPUWS_BACKEND_OPENCL)
                snprintf(t->label, sizeof t->label, "%s | %s | %s", bi.name, t->info.platform, t->info.name);
            else
                snprintf(t->label, sizeof t->label, "%s | %s", bi.name, t->info.name);
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

gpuws_status bench_copy_bandwidth(gpuws_context *ctx, double *gbs)
{
    gpuws_device_info d;
    gpuws_status st = gpuws_context_get_device_info(ctx, &d);
    if (st) return st;
    /* 1 GiB each way on GPUs (far past any cache), less where memory is short */
    size_t bytes = (size_t)1 << 30;
    while (bytes > ((size_t)1 << 20) && (bytes * 3 > d.global_mem_bytes || bytes > d.max_alloc_bytes)) bytes /= 2;
    gpuws_buffer *a = NULL, *b = NULL;
    gpuws_event *e0 = NULL, *e1 = NULL;
    gpuws_stream *s = NULL;
    const unsigned char fill = 0x5a;
    double times[7];
    if ((st = gpuws_buffer_create(ctx, bytes, &a)) || (st = gpuws_buffer_create(ctx, bytes, &b)) ||
        (st = gpuws_event_create(ctx, &e0)) || (st = gpuws_event_create(ctx, &e1)) ||
        (st = gpuws_context_get_default_stream(ctx, &s)) || (st = gpuws_buffer_fill(a, 0, &fill, 1, bytes)))
        goto done;
    for (int i = -1; i < 7; i++) { /* i = -1: warm-up */
        if ((st = gpuws_event_record(e0, s)) || (st = gpuws_buffer_copy_async(s, b, 0, a, 0, bytes)) ||
            (st = gpuws_event_record(e1, s)) || (st = gpuws_event_synchronize(e1)))
            goto done;
        double ms;
        if ((st = gpuws_event_elapsed_ms(e0, e1, &ms))) goto done;
        if (i >= 0) times[i] = ms;
    }
    qsort(times, 7, sizeof times[0], cmp_double);
    *gbs = 2.0 * (double)bytes / (times[3] * 1e-3) / 1e9;
done:
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    return st;
}

void bench_run(const bench_workload *w, const bench_target *t, gpuws_context *ctx, bench_size size, int repeat,
               bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->w = w;
    r->t = t;
    void *state = NULL;
    gpuws_stream *s = NULL;
    gpuws_event *e0 = NULL, *e1 = NULL;
    double *times = NULL;
    gpuws_status st;
    if ((st = gpuws_context_get_default_stream(ctx, &s)) || (st = gpuws_event_create(ctx, &e0)) ||
        (st = gpuws_event_create(ctx, &e1)) || (st = w->setup(ctx, size, &state, &r->counts)))
        goto error;
    /* correct first: one run, checked against the reference, before anything is timed */
    if ((st = w->run(state, s)) || (st = gpuws_stream_synchronize(s))) goto error;
    if (!w->check(state, r->error, sizeof r->error)) goto done;
    if ((st = w->run(state, s)) || (st = gpuws_stream_synchronize(s))) goto error; /* warm-up */
    if (repeat < 1) repeat = 1;
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
    qsort(times, (size_t)repeat, sizeof *times, cmp_double);
    r->median_ms = repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
    r->min_ms = times[0];
    r->repeats = repeat;
    r->ok = true;
    goto done;
error:
    snprintf(r->error, sizeof r->error, "%s: %s", gpuws_status_name(st), gpuws_last_error());
done:
    free(times);
    if (state) w->teardown(state);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
}
