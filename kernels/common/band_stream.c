/* Streaming row bands through one or several devices: band_stream.h says what a step does. */
#include "band_stream.h"

#include "../../core/threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- the steps' order: `done` in step order, the first error ------------------------------------------------ */

typedef struct {
    const gpuws__band_ops *ops;
    gpuws_context *const *ctxs;
    unsigned n;
    pthread_mutex_t lock;
    pthread_cond_t advanced; /* next moved on, or a device failed */
    unsigned char *complete; /* [steps]: step t is complete */
    size_t next;             /* the first step not yet done */
    unsigned ready, active;  /* devices whose state is made; devices with steps */
    atomic_int failed;       /* 1 once a device failed: the others stop at their next step */
    gpuws_status status;     /* the first error and its message */
    char message[512];
} run;

static void fail(run *r, gpuws_status st)
{
    pthread_mutex_lock(&r->lock);
    if (!r->status) {
        r->status = st;
        snprintf(r->message, sizeof r->message, "%s", gpuws_last_error());
    }
    atomic_store(&r->failed, 1);
    pthread_cond_broadcast(&r->advanced);
    pthread_mutex_unlock(&r->lock);
}

/* Step t is complete: every step now complete in order is done. */
static gpuws_status mark_complete(run *r, size_t t)
{
    gpuws_status st = GPUWS_OK;
    pthread_mutex_lock(&r->lock);
    r->complete[t] = 1;
    while (!st && r->next < r->ops->steps && r->complete[r->next]) {
        if (r->ops->done) st = r->ops->done(r->ops->user, r->next);
        r->next++;
    }
    pthread_cond_broadcast(&r->advanced);
    pthread_mutex_unlock(&r->lock);
    return st;
}

/* Whether step t may complete: past the barrier (or with ready_first, any step) only once every step before the
 * barrier is done and every device has made its state (so no allocation can fail once a step has written output);
 * false when a device failed meanwhile. */
static bool wait_barrier(run *r, size_t t)
{
    const bool past = r->ops->barrier && t >= r->ops->barrier;
    if (!past && !r->ops->ready_first) return true;
    pthread_mutex_lock(&r->lock);
    while (((past && r->next < r->ops->barrier) || r->ready < r->active) && !atomic_load(&r->failed))
        pthread_cond_wait(&r->advanced, &r->lock);
    pthread_mutex_unlock(&r->lock);
    return !atomic_load(&r->failed);
}

/* ---- one device's pipeline ------------------------------------------------------------------------------------ */

typedef struct {
    gpuws_stream *up, *comp, *down;
    gpuws_buffer *din[GPUWS__BAND_SLOTS], *dout[GPUWS__BAND_SLOTS];
    void *hin[GPUWS__BAND_SLOTS], *hout[GPUWS__BAND_SLOTS];
    size_t hin_bytes[GPUWS__BAND_SLOTS], hout_bytes[GPUWS__BAND_SLOTS]; /* as taken (gpuws__staging_take) */
    gpuws_event *uploaded[GPUWS__BAND_SLOTS], *computed[GPUWS__BAND_SLOTS], *downloaded[GPUWS__BAND_SLOTS];
    bool out_direct[GPUWS__BAND_SLOTS]; /* the slot's latest step downloaded into `target` */
} pipeline;

static void pipeline_free(gpuws_context *ctx, pipeline *p)
{
    gpuws_stream_destroy(p->up);
    gpuws_stream_destroy(p->comp);
    gpuws_stream_destroy(p->down);
    for (int k = 0; k < GPUWS__BAND_SLOTS; k++) {
        gpuws_buffer_destroy(p->din[k]);
        gpuws_buffer_destroy(p->dout[k]);
        gpuws__staging_give(ctx, p->hin[k], p->hin_bytes[k]);
        gpuws__staging_give(ctx, p->hout[k], p->hout_bytes[k]);
        gpuws_event_destroy(p->uploaded[k]);
        gpuws_event_destroy(p->computed[k]);
        gpuws_event_destroy(p->downloaded[k]);
    }
}

/* stage_in, stage_out: whether some step of the device stages its input, its output (takes that staging). */
static gpuws_status pipeline_make(gpuws_context *ctx, const gpuws__band_ops *ops, int slots, bool stage_in,
                                  bool stage_out, pipeline *p)
{
    gpuws_status st;
    if ((st = gpuws_stream_create(ctx, &p->up)) || (st = gpuws_stream_create(ctx, &p->comp)) ||
        (st = gpuws_stream_create(ctx, &p->down)))
        return st;
    for (int k = 0; k < slots; k++)
        if ((st = gpuws_buffer_create(ctx, ops->in_bytes, &p->din[k])) ||
            (st = gpuws_buffer_create(ctx, ops->out_bytes, &p->dout[k])) ||
            (stage_in && (st = gpuws__staging_take(ctx, ops->in_bytes, &p->hin[k], &p->hin_bytes[k]))) ||
            (stage_out && (st = gpuws__staging_take(ctx, ops->out_bytes, &p->hout[k], &p->hout_bytes[k]))) ||
            (st = gpuws_event_create(ctx, &p->uploaded[k])) || (st = gpuws_event_create(ctx, &p->computed[k])) ||
            (st = gpuws_event_create(ctx, &p->downloaded[k])))
            return st;
    return GPUWS_OK;
}

/* Device d's k-th step, once its download is in slot k % slots: complete it (not when another device failed). */
static gpuws_status complete_step(run *r, pipeline *p, void *state, int slots, unsigned d, size_t k)
{
    const int s = (int)(k % (size_t)slots);
    const size_t t = d + k * r->n;
    gpuws_status st = gpuws_event_synchronize(p->downloaded[s]);
    if (!st && !wait_barrier(r, t)) return GPUWS_OK;
    if (!st) st = r->ops->complete(r->ops->user, state, t, p->out_direct[s] ? NULL : p->hout[s]);
    if (!st) st = mark_complete(r, t);
    return st;
}

/* How many of device d's `count` steps upload from the caller's memory (*in) and download into it (*out). */
static void direct_steps(const run *r, unsigned d, size_t count, size_t *in, size_t *out)
{
    const gpuws__band_ops *ops = r->ops;
    *in = *out = 0;
    for (size_t k = 0; k < count; k++) {
        const size_t t = d + k * r->n;
        size_t bytes;
        if (ops->source && ops->source(ops->user, r->ctxs[d], t, &bytes)) (*in)++;
        if (ops->target && ops->target(ops->user, r->ctxs[d], t)) (*out)++;
    }
}

static gpuws_status no_staging(const run *r, size_t t, const char *side)
{
    return gpuws__error(GPUWS_ERR_INTERNAL, "%s: step %zu stages its %s, which its device took no staging for",
                        r->ops->what, t, side);
}

/* Device d's steps: d, d + n, d + 2n, ... */
static gpuws_status device_steps(run *r, unsigned d)
{
    const gpuws__band_ops *ops = r->ops;
    gpuws_context *ctx = r->ctxs[d];
    const size_t count = d < ops->steps ? (ops->steps - d + r->n - 1) / r->n : 0;
    if (!count) return GPUWS_OK;
    const int slots = (size_t)ops->slots < count ? ops->slots : (int)count;
    pipeline p = { 0 };
    void *state = NULL;
    bool made = false;
    size_t in_direct, out_direct;
    direct_steps(r, d, count, &in_direct, &out_direct);
    if (ops->source || ops->target)
        gpuws__log(GPUWS__LOG_DEBUG, "%s: device %u: input direct for %zu of %zu steps, output direct for %zu",
                   ops->what, d, in_direct, count, out_direct);
    gpuws_status st = pipeline_make(ctx, ops, slots, in_direct < count, out_direct < count, &p);
    if (!st && ops->device_make && !(st = ops->device_make(ops->user, d, ctx, p.comp, &state))) made = true;
    if (!st) {
        pthread_mutex_lock(&r->lock);
        r->ready++;
        pthread_cond_broadcast(&r->advanced);
        pthread_mutex_unlock(&r->lock);
    }
    size_t completed = 0;
    for (size_t k = 0; !st && k < count; k++) {
        if (atomic_load(&r->failed)) break;
        const int s = (int)(k % (size_t)slots);
        const bool reuse = k >= (size_t)slots; /* the slot held step k - slots */
        const size_t t = d + k * r->n;
        size_t bytes = 0;
        const void *src = ops->source ? ops->source(ops->user, ctx, t, &bytes) : NULL;
        if (!src) {
            if (!(src = p.hin[s])) {
                st = no_staging(r, t, "input");
                break;
            }
            /* stage once the slot's previous upload has left the staging buffer */
            if ((reuse && (st = gpuws_event_synchronize(p.uploaded[s]))) ||
                (st = ops->stage(ops->user, t, p.hin[s], &bytes)))
                break;
        }
        if ((reuse && (st = gpuws__stream_wait_event(p.up, p.computed[s]))) ||
            (bytes && (st = gpuws_buffer_write_async(p.up, p.din[s], 0, src, bytes))) ||
            (st = gpuws_event_record(p.uploaded[s], p.up)) || (st = gpuws__stream_wait_event(p.comp, p.uploaded[s])) ||
            (reuse && (st = gpuws__stream_wait_event(p.comp, p.downloaded[s]))) ||
            (st = ops->compute(ops->user, state, t, p.comp, p.din[s], p.dout[s])) ||
            (st = gpuws_event_record(p.computed[s], p.comp)))
            break;
        /* the slot's output staging still holds step k - slots until it is complete */
        while (!st && reuse && completed <= k - (size_t)slots) st = complete_step(r, &p, state, slots, d, completed++);
        if (st) break;
        void *dst = ops->target ? ops->target(ops->user, ctx, t) : NULL;
        /* A download into `target` writes the caller's output, as `complete` does: past the barrier it waits for the
         * barrier too (so does one into staging with barrier_downloads), once the device's own steps before the
         * barrier are complete (the barrier waits for them). */
        if ((dst && ops->ready_first) || ((dst || ops->barrier_downloads) && ops->barrier && t >= ops->barrier)) {
            while (!st && completed < k && d + completed * r->n < ops->barrier)
                st = complete_step(r, &p, state, slots, d, completed++);
            if (st || !wait_barrier(r, t)) break;
        }
        p.out_direct[s] = dst != NULL;
        if (!dst && !(dst = p.hout[s])) {
            st = no_staging(r, t, "output");
            break;
        }
        if ((st = gpuws__stream_wait_event(p.down, p.computed[s])) ||
            (st = ops->download(ops->user, t, p.down, p.dout[s], dst)) ||
            (st = gpuws_event_record(p.downloaded[s], p.down)))
            break;
    }
    for (size_t k = completed; !st && k < count && !atomic_load(&r->failed); k++)
        st = complete_step(r, &p, state, slots, d, k);
    gpuws_stream *streams[] = { p.up, p.comp, p.down };
    for (int i = 0; i < 3; i++) {
        if (!streams[i]) continue;
        const gpuws_status sync = gpuws_stream_synchronize(streams[i]);
        if (!st) st = sync;
    }
    if (made && ops->device_free) ops->device_free(ops->user, d, ctx, state);
    pipeline_free(ctx, &p);
    return st;
}

static void device_main(void *arg, unsigned d)
{
    run *r = arg;
    const gpuws_status st = device_steps(r, d);
    if (st) fail(r, st);
}

gpuws_status gpuws__band_stream_run(gpuws_context *const *ctxs, unsigned n, const gpuws__band_ops *ops)
{
    if (n < 1 || n > GPUWS__BAND_DEVICES || ops->slots < 1 || ops->slots > GPUWS__BAND_SLOTS)
        return gpuws__error(GPUWS_ERR_INTERNAL, "%s: %u devices, %d slots", ops->what, n, ops->slots);
    if (!ops->steps) return GPUWS_OK;
    run r = { .ops = ops, .ctxs = ctxs, .n = n, .active = (size_t)n < ops->steps ? n : (unsigned)ops->steps };
    if (!(r.complete = gpuws__calloc(ops->steps, 1)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the state of %zu bands (%zu bytes)",
                            ops->what, ops->steps, ops->steps);
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.advanced, NULL);
    atomic_init(&r.failed, 0);
    gpuws_status st = n == 1 ? (device_main(&r, 0), GPUWS_OK) : gpuws__run_threads(n, device_main, &r);
    if (st) st = gpuws__error(st, "%s: no host memory to start %u device threads", ops->what, n);
    else if (r.status) st = gpuws__error(r.status, "%s", r.message);
    pthread_cond_destroy(&r.advanced);
    pthread_mutex_destroy(&r.lock);
    gpuws__free(r.complete);
    return st;
}

/* ---- the devices of a call ------------------------------------------------------------------------------------ */

gpuws_status gpuws__band_contexts(gpuws_context *ctx, gpuws_context *const *more, size_t num_more, const char *what,
                                  gpuws_context **ctxs, unsigned *n)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (num_more && !more)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->more_contexts is NULL but num_more_contexts is %zu", what, num_more);
    if (num_more >= GPUWS__BAND_DEVICES)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %zu more contexts; at most %d devices in all", what,
                            num_more, GPUWS__BAND_DEVICES);
    ctxs[0] = ctx;
    for (size_t i = 0; i < num_more; i++) {
        char name[64];
        snprintf(name, sizeof name, "options->more_contexts[%zu]", i);
        if (!more[i]) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
        if ((st = gpuws__check_context(more[i], name))) return gpuws__error_prefix(st, "%s", what);
        if (more[i]->backend->kind != ctx->backend->kind)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is a %s context; ctx is %s: one backend only", what,
                                name, more[i]->backend->name, ctx->backend->name);
        for (size_t j = 0; j <= i; j++)
            if (ctxs[j] == more[i])
                return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is %s again: each device once", what, name,
                                    j ? "an earlier more_contexts entry" : "ctx");
        ctxs[i + 1] = more[i];
    }
    *n = (unsigned)num_more + 1;
    return GPUWS_OK;
}

void gpuws__band_budget(gpuws_context *const *ctxs, unsigned n, uint64_t max_device_bytes, uint64_t *budget,
                        uint64_t *max_alloc)
{
    uint64_t least_free = UINT64_MAX, alloc = 0;
    for (unsigned d = 0; d < n; d++) {
        if (!max_device_bytes) {
            const uint64_t f = gpuws__device_free_bytes(ctxs[d]);
            if (f < least_free) least_free = f;
        }
        const uint64_t a = ctxs[d]->info.max_alloc_bytes;
        if (a && (!alloc || a < alloc)) alloc = a;
    }
    *budget = max_device_bytes ? max_device_bytes : least_free - least_free / 16;
    *max_alloc = alloc;
}
