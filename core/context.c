/* Context selection (GPUWS_BACKEND, GPUWS_DEVICE, GPUWS_OPENCL_PLATFORM), streams and events. */
#include "alloc.h"
#include "backend.h"
#include "driver_support.h"
#include "errors.h"
#include "objects.h"
#include "options.h"
#include "program_internal.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 8

static void destroy_scratch(gpuws_stream *s);
static void event_unlink(gpuws_event *e);

typedef struct {
    gpuws_backend_kind kinds[MAX_LIST];
    size_t n;
} backend_list;

static gpuws_status parse_backend_list(const char *spec, const char *source, backend_list *out)
{
    out->n = 0;
    const char *p = spec;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        char name[32];
        size_t len = (size_t)(t - p);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, p, len);
        name[len] = 0;
        gpuws_backend_kind k;
        if (gpuws_backend_from_name(name, &k) != GPUWS_OK)
            return gpuws__error(GPUWS_ERR_UNKNOWN_BACKEND,
                                "unknown backend '%s' in %s='%s'; valid names: cuda, opencl, cpu", name, source, spec);
        if (out->n == MAX_LIST)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s='%s' lists more than %d backends", source, spec,
                                MAX_LIST);
        out->kinds[out->n++] = k;
        p = e;
    }
    if (out->n == 0)
        return gpuws__error(GPUWS_ERR_UNKNOWN_BACKEND, "%s='%s' names no backend; valid names: cuda, opencl, cpu",
                            source, spec);
    return GPUWS_OK;
}

/* GPUWS_DEVICE: "all", or device indices "0" or "0,1,...". Stores the first max indices in idx and counts them all
 * in *n (so a caller can say how many too many); *all for "all". */
static gpuws_status parse_devices(const char *v, long *idx, size_t max, size_t *n, bool *all)
{
    *n = 0, *all = false;
    if (!strcmp(v, "all")) {
        *all = true;
        return GPUWS_OK;
    }
    for (const char *p = v;;) {
        char *end;
        errno = 0;
        const long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > 1 << 20 || (*end && *end != ','))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "GPUWS_DEVICE='%s' is not a device index (0, 1, ...), a list of them (0,1,...) nor all",
                                v);
        if (*n < max) idx[*n] = x;
        (*n)++;
        if (!*end) return GPUWS_OK;
        p = end + 1;
    }
}

/* The one device gpuws_context_create opens: options.device, else GPUWS_DEVICE's first index (0 for "all"), else
 * -1 (the first device). */
static gpuws_status parse_device_index(int opt, long *index)
{
    *index = -1;
    if (opt < -1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "options.device = %d is not a device index (0, 1, ...) nor -1 (GPUWS_DEVICE, else 0)", opt);
    if (opt >= 0) {
        *index = opt;
        return GPUWS_OK;
    }
    const char *v = gpuws__getenv("GPUWS_DEVICE");
    if (!v || !*v) return GPUWS_OK;
    size_t n;
    bool all;
    gpuws_status st = parse_devices(v, index, 1, &n, &all);
    if (!st && all) *index = 0;
    return st;
}

static gpuws_status context_open(const gpuws__backend *b, const char *filter, size_t index, gpuws_context **out)
{
    gpuws_context *ctx = gpuws__calloc(1, sizeof *ctx);
    if (!ctx) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a context (%zu bytes)", sizeof *ctx);
    ctx->backend = b;
    ctx->device_index = index;
    gpuws__tuning_from_env(&ctx->tuning); /* before the backend's context: it reads knobs too (opencl_events) */
    pthread_mutex_init(&ctx->lock, NULL);
    gpuws_status st = b->context_create(ctx, filter, index);
    if (st) {
        pthread_mutex_destroy(&ctx->lock);
        gpuws__free(ctx);
        return st;
    }
    ctx->info.backend = b->kind;
    gpuws_stream *s = gpuws__calloc(1, sizeof *s);
    if (!s) {
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating the default stream (%zu bytes)", sizeof *s);
        goto fail;
    }
    s->ctx = ctx;
    s->is_default = true;
    if ((st = b->stream_create(s))) {
        gpuws__free(s);
        goto fail;
    }
    if ((st = gpuws__handle_add(ctx, GPUWS__H_CONTEXT))) goto fail_stream;
    if ((st = gpuws__handle_add(s, GPUWS__H_STREAM))) {
        gpuws__handle_remove(ctx);
        goto fail_stream;
    }
    ctx->default_stream = s;
    *out = ctx;
    return GPUWS_OK;
fail_stream:
    b->stream_destroy(s);
    gpuws__free(s);
fail:
    b->context_destroy(ctx);
    pthread_mutex_destroy(&ctx->lock);
    gpuws__free(ctx);
    return st;
}

gpuws_status gpuws_context_create(gpuws_context **out, const gpuws_context_options *opt)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ctx' is NULL");
    *out = NULL;
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    gpuws_status st = gpuws__options_read(opt, &o, sizeof o, GPUWS__CONTEXT_OPTIONS_BASE, "context_create: options");
    if (st) return st;

    const char *spec = o.backend, *source = "options.backend";
    if (!spec && (spec = gpuws__getenv("GPUWS_BACKEND"))) source = "GPUWS_BACKEND";
    const char *filter = o.opencl_platform ? o.opencl_platform : gpuws__getenv("GPUWS_OPENCL_PLATFORM");
    long index;
    st = parse_device_index(o.device, &index);
    if (st) return st;

    backend_list list;
    if (spec) {
        if ((st = parse_backend_list(spec, source, &list))) return st;
    } else {
        list.kinds[0] = GPUWS_BACKEND_CUDA;
        list.kinds[1] = GPUWS_BACKEND_OPENCL;
        list.kinds[2] = GPUWS_BACKEND_CPU;
        list.n = 3;
    }

    char why[2048] = "";
    size_t wl = 0;
    gpuws_status last = GPUWS_ERR_BACKEND_UNAVAILABLE;
    int all_no_device = 1, saw_oom = 0;
    for (size_t i = 0; i < list.n; i++) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(list.kinds[i], &bi);
        const char *f = list.kinds[i] == GPUWS_BACKEND_OPENCL ? filter : NULL;
        char one[600];
        if (!bi.available) {
            snprintf(one, sizeof one, "%s not available: %s", bi.name, bi.reason);
            last = GPUWS_ERR_BACKEND_UNAVAILABLE;
            all_no_device = 0;
        } else {
            const gpuws__backend *b = gpuws__backend_get(list.kinds[i]);
            size_t n = 0;
            st = b->device_count(f, &n);
            size_t want = index < 0 ? 0 : (size_t)index;
            if (st == GPUWS_OK && want < n && (st = context_open(b, f, want, out)) == GPUWS_OK) {
                gpuws__log(GPUWS__LOG_INFO, "selected %s device %zu: %s", bi.name, want, (*out)->info.name);
                return GPUWS_OK;
            }
            if (st == GPUWS_OK) {
                snprintf(one, sizeof one,
                         "%s not available: it has %zu device(s)%s%s%s and device index %zu was asked for", bi.name, n,
                         f ? " on platforms matching '" : "", f ? f : "", f ? "'" : "", want);
                last = GPUWS_ERR_NO_DEVICE;
            } else {
                snprintf(one, sizeof one, "%s not available: %s", bi.name, gpuws_last_error());
                last = st;
                saw_oom |= st == GPUWS_ERR_OUT_OF_MEMORY;
                all_no_device = 0;
            }
        }
        int k = snprintf(why + wl, sizeof why - wl, "%s%s", wl ? "; " : "", one);
        if (k > 0) wl = wl + (size_t)k < sizeof why ? wl + (size_t)k : sizeof why - 1;
    }
    /* several names: "unavailable" sums them up, unless one ran out of memory, which is worth knowing first */
    if (list.n > 1 && !all_no_device && !saw_oom) last = GPUWS_ERR_BACKEND_UNAVAILABLE;
    if (saw_oom) last = GPUWS_ERR_OUT_OF_MEMORY;
    return gpuws__error(last, "%s", why);
}

/* ---- several devices: GPUWS_DEVICE lists ------------------------------------------------------------------ */

void gpuws_contexts_destroy(gpuws_context **ctxs, size_t n)
{
    for (size_t i = 0; ctxs && i < n; i++) gpuws_context_destroy(ctxs[n - 1 - i]);
}

gpuws_status gpuws_contexts_create(const gpuws_context_options *opt, size_t max, gpuws_context **ctxs, size_t *count)
{
    if (!ctxs || !count)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "contexts_create: argument '%s' is NULL",
                            !ctxs ? "ctxs" : "count");
    *count = 0;
    if (max == 0) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "contexts_create: max is 0");
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    gpuws_status st = gpuws__options_read(opt, &o, sizeof o, GPUWS__CONTEXT_OPTIONS_BASE, "contexts_create: options");
    if (st) return st;
    const char *v = o.device >= 0 ? NULL : gpuws__getenv("GPUWS_DEVICE"); /* options.device: that one device */
    if (!v || !*v) {
        if ((st = gpuws_context_create(&ctxs[0], &o))) return st;
        *count = 1;
        return GPUWS_OK;
    }
    long *idx = gpuws__malloc(max * sizeof *idx);
    if (!idx)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "contexts_create: no host memory for %zu indices (%zu bytes)", max,
                            max * sizeof *idx);
    size_t n = 0;
    bool all;
    if ((st = parse_devices(v, idx, max, &n, &all))) goto out;
    if (n > max) {
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "GPUWS_DEVICE='%s' names %zu devices, more than %zu", v, n, max);
        goto out;
    }
    /* the first context decides the backend ("all" starts from device 0) */
    gpuws_context_options first = o;
    first.device = all ? 0 : (int)idx[0];
    if ((st = gpuws_context_create(&ctxs[0], &first))) {
        st = gpuws__error_prefix(st, "GPUWS_DEVICE='%s': device %d", v, first.device);
        goto out;
    }
    *count = 1;
    const gpuws__backend *b = ctxs[0]->backend;
    const char *filter = b->kind != GPUWS_BACKEND_OPENCL ? NULL
                         : o.opencl_platform             ? o.opencl_platform
                                                         : gpuws__getenv("GPUWS_OPENCL_PLATFORM");
    if (all) { /* every other device of the first one's type (and platform) */
        size_t devices = 0;
        if ((st = b->device_count(filter, &devices))) goto out;
        for (size_t i = 1; i < devices; i++) {
            gpuws_device_info d;
            if ((st = b->device_info(filter, i, &d))) goto out;
            if (d.type != ctxs[0]->info.type || strcmp(d.platform, ctxs[0]->info.platform)) continue;
            if (n == max) {
                st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "GPUWS_DEVICE=all: more than %zu devices", max);
                goto out;
            }
            idx[n++] = (long)i;
        }
    }
    for (size_t k = all ? 0 : 1; k < n; k++) { /* a list's first device is open already */
        gpuws_context_options more = o;
        more.backend = b->name;
        more.device = (int)idx[k];
        if ((st = gpuws_context_create(&ctxs[*count], &more))) {
            st = gpuws__error_prefix(st, "GPUWS_DEVICE='%s': device %ld", v, idx[k]);
            goto out;
        }
        (*count)++;
    }
out:
    gpuws__free(idx);
    if (st) {
        gpuws_contexts_destroy(ctxs, *count);
        *count = 0;
    }
    return st;
}

void gpuws_context_destroy(gpuws_context *ctx)
{
    if (!ctx || !gpuws__handle_live(ctx, GPUWS__H_CONTEXT)) return;
    gpuws_context_synchronize(ctx);
    gpuws__staging_release(ctx);
    pthread_mutex_lock(&ctx->lock);
    while (ctx->streams) {
        gpuws_stream *s = ctx->streams;
        gpuws__log(GPUWS__LOG_WARN, "context destroyed with a live stream %p; destroying it", (void *)s);
        pthread_mutex_unlock(&ctx->lock);
        gpuws_stream_destroy(s);
        pthread_mutex_lock(&ctx->lock);
    }
    pthread_mutex_unlock(&ctx->lock);
    gpuws__context_release_programs(ctx);
    destroy_scratch(ctx->default_stream);
    pthread_mutex_lock(&ctx->lock);
    /* The caller's leftovers are released with the context and leave the live-handle registry, so destroying one
     * later is a no-op and any other use of it GPUWS_ERR_INVALID_ARGUMENT, never a use of freed memory. */
    if (ctx->live_buffers || ctx->live_events)
        gpuws__log(GPUWS__LOG_WARN,
                   "context destroyed with %ld live buffer(s) and %ld live event(s): leaked; released "
                   "with the context",
                   ctx->live_buffers, ctx->live_events);
    while (ctx->events) {
        gpuws_event *e = ctx->events;
        event_unlink(e);
        gpuws__handle_remove(e);
        ctx->backend->event_destroy(e);
        gpuws__free(e);
    }
    while (ctx->buffers) {
        gpuws_buffer *b = ctx->buffers;
        gpuws__buffer_unlink(b);
        gpuws__handle_remove(b);
        if (!b->wrapped) ctx->backend->buffer_destroy(b);
        gpuws__free(b);
    }
    while (ctx->kernels) {
        gpuws_kernel *k = ctx->kernels;
        ctx->kernels = k->next;
        gpuws__handle_remove(k);
        if (ctx->backend->kernel_destroy) ctx->backend->kernel_destroy(k);
        gpuws__free(k->name);
        gpuws__free(k->options);
        gpuws__free(k);
    }
    pthread_mutex_unlock(&ctx->lock);
    gpuws_stream *s = ctx->default_stream;
    ctx->backend->stream_destroy(s);
    gpuws__handle_remove(s);
    gpuws__free(s);
    gpuws__handle_remove(ctx);
    ctx->backend->context_destroy(ctx);
    pthread_mutex_destroy(&ctx->lock);
    gpuws__free(ctx);
}

gpuws_status gpuws_context_get_device_info(const gpuws_context *ctx, gpuws_device_info *info)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!info) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'info' is NULL");
    *info = ctx->info;
    return GPUWS_OK;
}

gpuws_status gpuws_context_get_backend(const gpuws_context *ctx, gpuws_backend_kind *kind)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!kind) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kind' is NULL");
    *kind = ctx->backend->kind;
    return GPUWS_OK;
}

gpuws_status gpuws_context_get_device_index(const gpuws_context *ctx, size_t *index)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!index) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'index' is NULL");
    *index = ctx->device_index;
    return GPUWS_OK;
}

gpuws_status gpuws_context_get_default_stream(gpuws_context *ctx, gpuws_stream **stream)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!stream) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'stream' is NULL");
    *stream = ctx->default_stream;
    return GPUWS_OK;
}

gpuws_status gpuws_context_synchronize(gpuws_context *ctx)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if ((st = ctx->backend->stream_synchronize(ctx->default_stream))) return st;
    pthread_mutex_lock(&ctx->lock);
    for (gpuws_stream *s = ctx->streams; s && !st; s = s->next) st = ctx->backend->stream_synchronize(s);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* ---- streams ---- */

gpuws_status gpuws_stream_create(gpuws_context *ctx, gpuws_stream **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'stream' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_stream *s = gpuws__calloc(1, sizeof *s);
    if (!s) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a stream (%zu bytes)", sizeof *s);
    s->ctx = ctx;
    if ((st = ctx->backend->stream_create(s))) {
        gpuws__free(s);
        return st;
    }
    if ((st = gpuws__handle_add(s, GPUWS__H_STREAM))) {
        ctx->backend->stream_destroy(s);
        gpuws__free(s);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    s->next = ctx->streams;
    ctx->streams = s;
    pthread_mutex_unlock(&ctx->lock);
    *out = s;
    return GPUWS_OK;
}

void gpuws_stream_destroy(gpuws_stream *s)
{
    if (!s || !gpuws__handle_live(s, GPUWS__H_STREAM) || s->is_default) return;
    gpuws_context *ctx = s->ctx;
    ctx->backend->stream_synchronize(s);
    gpuws__handle_remove(s);
    pthread_mutex_lock(&ctx->lock);
    for (gpuws_stream **pp = &ctx->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
    destroy_scratch(s);
    ctx->backend->stream_destroy(s);
    gpuws__free(s);
}

gpuws_status gpuws_stream_synchronize(gpuws_stream *s)
{
    gpuws_status st = gpuws__check_stream(s, "argument 'stream'");
    if (st) return st;
    return s->ctx->backend->stream_synchronize(s);
}

gpuws_status gpuws_stream_get_native(gpuws_stream *s, void **native)
{
    if (!native) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'native' is NULL");
    *native = NULL;
    gpuws_status st = gpuws__check_stream(s, "argument 'stream'");
    if (st) return st;
    /* The GPU backends keep their native queue as the stream's impl (backends/cuda, backends/opencl: stream_create);
     * the CPU backend's impl is its own bookkeeping, which no other library could use. */
    if (s->ctx->backend->kind != GPUWS_BACKEND_CPU) *native = s->impl;
    return GPUWS_OK;
}

/* A thread's identity for claims: the address of a thread-local byte, distinct for every live thread. */
static _Thread_local char claim_token;

gpuws_status gpuws__claim(gpuws__stream_claim *c, gpuws_stream *s, const char *fn)
{
    const uintptr_t me = (uintptr_t)&claim_token;
    uintptr_t owner = 0;
    if (atomic_compare_exchange_strong_explicit(&s->owner, &owner, me, memory_order_acquire, memory_order_relaxed))
        s->claims = 1;
    else if (owner == me) s->claims++;
    else
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: stream %p%s is in use by another thread (a stream is used by one thread at a time: "
                            "give each thread its own, docs/threads.md)",
                            fn, (void *)s, s->is_default ? " (the context's default stream)" : "");
    c->s = s;
    return GPUWS_OK;
}

void gpuws__unclaim(gpuws__stream_claim *c)
{
    gpuws_stream *s = c->s;
    if (!s) return;
    c->s = NULL;
    if (--s->claims == 0) atomic_store_explicit(&s->owner, 0, memory_order_release);
}

/* The stream's entry for key, or NULL. Streams hold a handful of keys, so a scan beats any index. */
static gpuws__stream_entry *entry_find(const gpuws__stream_entries *l, const gpuws__stream_key *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].key == key) return &l->v[i];
    return NULL;
}

/* A new, empty entry for key at the end of l. */
static gpuws_status entry_add(gpuws__stream_entries *l, const gpuws__stream_key *key, gpuws__stream_entry **out)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        gpuws__stream_entry *v = gpuws__realloc(l->v, cap * sizeof *v);
        if (!v)
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "a stream's list of kept memory (%zu entries, %zu bytes)", cap,
                                cap * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = (gpuws__stream_entry){ key, NULL, 0 };
    *out = &l->v[l->n++];
    return GPUWS_OK;
}

gpuws_status gpuws__stream_scratch(gpuws_stream *s, const gpuws__stream_key *key, size_t bytes, gpuws_buffer **out)
{
    gpuws__stream_entry *e = entry_find(&s->scratch, key);
    gpuws_status st;
    if (!e && (st = entry_add(&s->scratch, key, &e))) return st;
    gpuws_buffer **b = (gpuws_buffer **)&e->p;
    if (bytes == 0) bytes = 1;
    if (*b && (*b)->size >= bytes) {
        *out = *b;
        return GPUWS_OK;
    }
    if (*b) {
        /* earlier work may still read the old scratch */
        if ((st = s->ctx->backend->stream_synchronize(s))) return st;
        gpuws_buffer_destroy(*b);
        *b = NULL;
    }
    size_t want = bytes < 4096 ? 4096 : bytes;
    if ((st = gpuws_buffer_create(s->ctx, want, b))) return st;
    *out = *b;
    return GPUWS_OK;
}

gpuws_status gpuws__stream_tickets(gpuws_stream *s, gpuws_buffer **counter, uint32_t *base)
{
    const uint32_t zero = 0;
    gpuws_status st;
    if (!s->tickets) {
        gpuws_buffer *b;
        if ((st = gpuws_buffer_create(s->ctx, sizeof zero, &b))) return st;
        s->tickets = b;
        s->tickets_unknown = true;
    }
    if (s->tickets_unknown) {
        if ((st = gpuws_buffer_fill_async(s, s->tickets, 0, &zero, sizeof zero, sizeof zero))) return st;
        s->tickets_base = 0;
        s->tickets_unknown = false;
    }
    *counter = s->tickets;
    *base = s->tickets_base;
    return GPUWS_OK;
}

void gpuws__stream_tickets_drawn(gpuws_stream *s, bool ok, uint32_t n)
{
    if (ok) s->tickets_base += n; /* wraps around 2^32 as the device word does */
    else s->tickets_unknown = true;
}

gpuws_status gpuws__stream_zeroed(gpuws_stream *s, size_t bytes, gpuws_buffer **out)
{
    gpuws_status st;
    if (bytes == 0) bytes = 1;
    if (s->zeroed && s->zeroed->size < bytes) {
        /* earlier work may still use the old memory */
        if ((st = s->ctx->backend->stream_synchronize(s))) return st;
        gpuws_buffer_destroy(s->zeroed);
        s->zeroed = NULL;
    }
    if (!s->zeroed) {
        if ((st = gpuws_buffer_create(s->ctx, bytes < 4096 ? 4096 : bytes, &s->zeroed))) return st;
        s->zeroed_clean = 0;
    }
    if (s->zeroed_clean < bytes) {
        const unsigned char zero = 0; /* the whole buffer: rare (new, grown, or after a failure) */
        if ((st = gpuws_buffer_fill_async(s, s->zeroed, 0, &zero, 1, s->zeroed->size))) return st;
        s->zeroed_clean = s->zeroed->size;
    }
    *out = s->zeroed;
    return GPUWS_OK;
}

void gpuws__stream_zeroed_dirty(gpuws_stream *s) { s->zeroed_clean = 0; }

gpuws_status gpuws__stream_memo(gpuws_stream *s, const gpuws__stream_key *key, size_t bytes, void **out)
{
    gpuws__stream_entry *e = entry_find(&s->memo, key);
    if (e) {
        if (e->bytes != bytes)
            return gpuws__error(GPUWS_ERR_INTERNAL, "stream memo '%s' asked for %zu bytes, made with %zu", key->name,
                                bytes, e->bytes);
        *out = e->p;
        return GPUWS_OK;
    }
    void *p = gpuws__calloc(1, bytes);
    if (!p) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "a stream's plan memory (%zu bytes)", bytes);
    gpuws_status st = entry_add(&s->memo, key, &e);
    if (st) {
        gpuws__free(p);
        return st;
    }
    e->p = p;
    e->bytes = bytes;
    *out = p;
    return GPUWS_OK;
}

static void destroy_scratch(gpuws_stream *s)
{
    if (s->staging) s->ctx->backend->host_free(s->ctx, s->staging);
    s->staging = NULL;
    gpuws_buffer_destroy(s->tickets);
    s->tickets = NULL;
    gpuws_buffer_destroy(s->zeroed);
    s->zeroed = NULL;
    for (size_t i = 0; i < s->memo.n; i++) gpuws__free(s->memo.v[i].p);
    gpuws__free(s->memo.v);
    s->memo = (gpuws__stream_entries){ 0 };
    for (size_t i = 0; i < s->scratch.n; i++) gpuws_buffer_destroy(s->scratch.v[i].p);
    gpuws__free(s->scratch.v);
    s->scratch = (gpuws__stream_entries){ 0 };
}

/* ---- events ---- */

gpuws_status gpuws_event_create(gpuws_context *ctx, gpuws_event **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'event' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_event *e = gpuws__calloc(1, sizeof *e);
    if (!e) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating an event (%zu bytes)", sizeof *e);
    e->ctx = ctx;
    if ((st = ctx->backend->event_create(e))) {
        gpuws__free(e);
        return st;
    }
    if ((st = gpuws__handle_add(e, GPUWS__H_EVENT))) {
        ctx->backend->event_destroy(e);
        gpuws__free(e);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    ctx->live_events++;
    e->next = ctx->events;
    if (e->next) e->next->prev = e;
    ctx->events = e;
    pthread_mutex_unlock(&ctx->lock);
    *out = e;
    return GPUWS_OK;
}

/* Under ctx->lock. */
static void event_unlink(gpuws_event *e)
{
    gpuws_context *ctx = e->ctx;
    if (e->prev) e->prev->next = e->next;
    else ctx->events = e->next;
    if (e->next) e->next->prev = e->prev;
    ctx->live_events--;
}

void gpuws_event_destroy(gpuws_event *e)
{
    if (!e || !gpuws__handle_live(e, GPUWS__H_EVENT)) return;
    gpuws__handle_remove(e);
    gpuws_context *ctx = e->ctx;
    ctx->backend->event_destroy(e);
    pthread_mutex_lock(&ctx->lock);
    event_unlink(e);
    pthread_mutex_unlock(&ctx->lock);
    gpuws__free(e);
}

gpuws_status gpuws_event_record(gpuws_event *e, gpuws_stream *s)
{
    gpuws_status st = gpuws__check_event(e, "argument 'event'");
    if (st || (st = gpuws__resolve_stream(e->ctx, &s, "argument 'stream'"))) return st;
    if ((st = e->ctx->backend->event_record(e, s))) return st;
    e->recorded = true;
    return GPUWS_OK;
}

gpuws_status gpuws_event_synchronize(gpuws_event *e)
{
    gpuws_status st = gpuws__check_event(e, "argument 'event'");
    if (st) return st;
    if (!e->recorded) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "the event was never recorded");
    return e->ctx->backend->event_synchronize(e);
}

gpuws_status gpuws__stream_wait_event(gpuws_stream *s, gpuws_event *e)
{
    if (!e->recorded) return gpuws__error(GPUWS_ERR_INTERNAL, "waiting for an event that was never recorded");
    const gpuws__backend *b = e->ctx->backend;
    return b->stream_wait_event ? b->stream_wait_event(s, e) : b->event_synchronize(e);
}

uint64_t gpuws__device_free_bytes(gpuws_context *ctx)
{
    uint64_t bytes = 0;
    if (ctx->backend->mem_free && ctx->backend->mem_free(ctx, &bytes) == GPUWS_OK) return bytes;
    return ctx->info.global_mem_bytes / 4 * 3;
}

gpuws_status gpuws_event_elapsed_ms(gpuws_event *a, gpuws_event *b, double *ms)
{
    gpuws_status st;
    if ((st = gpuws__check_event(a, "argument 'start'")) || (st = gpuws__check_event(b, "argument 'end'"))) return st;
    if (!ms) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ms' is NULL");
    if (a->ctx != b->ctx) return gpuws__error(GPUWS_ERR_WRONG_CONTEXT, "the two events belong to different contexts");
    if (!a->recorded || !b->recorded)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "event '%s' was never recorded", a->recorded ? "end" : "start");
    return a->ctx->backend->event_elapsed_ms(a, b, ms);
}
