/* Buffers and host memory: validation here, native work in the backend. */
#include "alloc.h"
#include "backend.h"
#include "driver_support.h"
#include "errors.h"
#include "objects.h"
#include "util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static gpuws_status buffer_new(gpuws_context *ctx, size_t bytes, void *wrapped, gpuws_buffer **out);

gpuws_status gpuws_buffer_create(gpuws_context *ctx, size_t bytes, gpuws_buffer **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'buffer' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (bytes == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'bytes' is 0; a buffer needs at least one byte");
    if (ctx->info.global_mem_bytes && bytes > ctx->info.global_mem_bytes)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "requested %zu bytes but %s has %llu bytes of memory", bytes,
                            ctx->info.name, (unsigned long long)ctx->info.global_mem_bytes);
    if (ctx->info.max_alloc_bytes && bytes > ctx->info.max_alloc_bytes)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "requested %zu bytes but the largest buffer %s allows is %llu bytes", bytes, ctx->info.name,
                            (unsigned long long)ctx->info.max_alloc_bytes);
    return buffer_new(ctx, bytes, NULL, out);
}

/* A live buffer of ctx: the backend's new memory, or (wrapped != NULL) the caller's. */
static gpuws_status buffer_new(gpuws_context *ctx, size_t bytes, void *wrapped, gpuws_buffer **out)
{
    gpuws_status st;
    gpuws_buffer *b = gpuws__calloc(1, sizeof *b);
    if (!b)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a buffer handle (%zu bytes) for %zu bytes", sizeof *b,
                            bytes);
    static _Atomic uint64_t serials;
    b->ctx = ctx;
    b->size = bytes;
    b->serial = atomic_fetch_add(&serials, 1) + 1;
    b->wrapped = wrapped != NULL;
    if (wrapped) b->impl = wrapped;
    else if (gpuws__fault_device_now()) {
        gpuws__free(b);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "fault injection: the device refused a buffer of %zu bytes",
                            bytes);
    } else if ((st = ctx->backend->buffer_create(b))) {
        gpuws__free(b);
        return st;
    }
    if ((st = gpuws__handle_add(b, GPUWS__H_BUFFER))) {
        if (!b->wrapped) ctx->backend->buffer_destroy(b);
        gpuws__free(b);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    ctx->live_buffers++;
    b->next = ctx->buffers;
    if (b->next) b->next->prev = b;
    ctx->buffers = b;
    pthread_mutex_unlock(&ctx->lock);
    *out = b;
    return GPUWS_OK;
}

void gpuws__buffer_unlink(gpuws_buffer *b)
{
    gpuws_context *ctx = b->ctx;
    if (b->prev) b->prev->next = b->next;
    else ctx->buffers = b->next;
    if (b->next) b->next->prev = b->prev;
    ctx->live_buffers--;
}

void gpuws_buffer_destroy(gpuws_buffer *b)
{
    if (!b || !gpuws__handle_live(b, GPUWS__H_BUFFER)) return;
    gpuws__handle_remove(b);
    gpuws_context *ctx = b->ctx;
    if (!b->wrapped) ctx->backend->buffer_destroy(b);
    pthread_mutex_lock(&ctx->lock);
    gpuws__buffer_unlink(b);
    pthread_mutex_unlock(&ctx->lock);
    gpuws__free(b);
}

/* The backends whose buffers are memory at an address: the CPU backend's host memory, CUDA's device memory. An
 * OpenCL buffer is a cl_mem, with no address the host may hand on. */
static gpuws_status check_addressable(const gpuws_context *ctx, const char *what)
{
    if (ctx->backend->kind == GPUWS_BACKEND_CPU || ctx->backend->kind == GPUWS_BACKEND_CUDA) return GPUWS_OK;
    return gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: %s buffers have no address (an OpenCL buffer is a cl_mem)", what,
                        ctx->backend->name);
}

gpuws_status gpuws_buffer_get_pointer(const gpuws_buffer *b, void **ptr)
{
    if (!ptr) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ptr' is NULL");
    *ptr = NULL;
    if (!b || !gpuws__handle_live(b, GPUWS__H_BUFFER))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'buffer' is not a live buffer");
    gpuws_status st = check_addressable(b->ctx, "gpuws_buffer_get_pointer");
    if (st) return st;
    *ptr = b->impl;
    return GPUWS_OK;
}

gpuws_status gpuws_buffer_wrap(gpuws_context *ctx, void *ptr, size_t bytes, gpuws_buffer **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'buffer' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if ((st = check_addressable(ctx, "gpuws_buffer_wrap"))) return st;
    if (!ptr) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ptr' is NULL");
    if ((uintptr_t)ptr % GPUWS_BUFFER_WRAP_ALIGNMENT)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ptr' (%p) is not aligned to %d bytes", ptr,
                            GPUWS_BUFFER_WRAP_ALIGNMENT);
    if (bytes == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'bytes' is 0; a buffer needs at least one byte");
    return buffer_new(ctx, bytes, ptr, out);
}

gpuws_status gpuws_buffer_get_size(const gpuws_buffer *b, size_t *bytes)
{
    gpuws_status st = gpuws__check_buffer(b, "argument 'buffer'");
    if (st) return st;
    if (!bytes) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'bytes' is NULL");
    *bytes = b->size;
    return GPUWS_OK;
}

gpuws_status gpuws_buffer_get_context(const gpuws_buffer *b, gpuws_context **ctx)
{
    gpuws_status st = gpuws__check_buffer(b, "argument 'buffer'");
    if (st) return st;
    if (!ctx) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ctx' is NULL");
    *ctx = b->ctx;
    return GPUWS_OK;
}

void *gpuws__cpu_ptr(const gpuws_buffer *b) { return b->ctx->backend->kind == GPUWS_BACKEND_CPU ? b->impl : NULL; }

/* One checker for the four transfer kinds: stream, buffer(s), host pointer, range. */
static gpuws_status check_xfer(gpuws_stream **s, const gpuws_buffer *b, size_t off, const void *host, size_t n,
                               const char *bname, const char *hname)
{
    gpuws_status st = gpuws__check_buffer(b, bname);
    if (st || (st = gpuws__resolve_stream(b->ctx, s, "argument 'stream'"))) return st;
    if (n && !host && hname) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument '%s' is NULL", hname);
    return gpuws__check_range(b, off, n, bname);
}

static gpuws_status do_write(gpuws_stream *s, gpuws_buffer *dst, size_t off, const void *src, size_t n, int blocking)
{
    gpuws_status st = check_xfer(&s, dst, off, src, n, "argument 'dst'", "src");
    if (st || n == 0) return st;
    return gpuws__write(s, dst, off, src, n, blocking);
}

static gpuws_status do_read(gpuws_stream *s, const gpuws_buffer *src, size_t off, void *dst, size_t n, int blocking)
{
    gpuws_status st = check_xfer(&s, src, off, dst, n, "argument 'src'", "dst");
    if (st || n == 0) return st;
    return gpuws__read(s, src, off, dst, n, blocking);
}

static gpuws_status do_copy(gpuws_stream *s, gpuws_buffer *dst, size_t doff, const gpuws_buffer *src, size_t soff,
                            size_t n)
{
    gpuws_status st = check_xfer(&s, dst, doff, NULL, n, "argument 'dst'", NULL);
    if (st || (st = gpuws__check_buffer(src, "argument 'src'"))) return st;
    if ((st = gpuws__check_same_context(dst->ctx, src, "argument 'src'"))) return st;
    if ((st = gpuws__check_range(src, soff, n, "argument 'src'"))) return st;
    if (n == 0) return GPUWS_OK;
    if (src == dst && soff < doff + n && doff < soff + n)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "source [%zu, %zu) and destination [%zu, %zu) overlap in one buffer", soff, soff + n, doff,
                            doff + n);
    return dst->ctx->backend->buffer_copy(s, dst, doff, src, soff, n);
}

static gpuws_status do_fill(gpuws_stream *s, gpuws_buffer *dst, size_t off, const void *pat, size_t psize, size_t n)
{
    gpuws_status st = check_xfer(&s, dst, off, pat, psize, "argument 'dst'", "pattern");
    if (st) return st;
    if (!(psize == 1 || psize == 2 || psize == 4 || psize == 8 || psize == 16))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "pattern_size %zu is not 1, 2, 4, 8 or 16", psize);
    if (off % psize || n % psize)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "offset %zu and bytes %zu must be multiples of pattern_size %zu", off, n, psize);
    if ((st = gpuws__check_range(dst, off, n, "argument 'dst'")) || n == 0) return st;
    return dst->ctx->backend->buffer_fill(s, dst, off, pat, psize, n);
}

gpuws_status gpuws_buffer_write(gpuws_buffer *d, size_t o, const void *s, size_t n)
{
    return do_write(NULL, d, o, s, n, 1);
}
gpuws_status gpuws_buffer_read(const gpuws_buffer *s, size_t o, void *d, size_t n)
{
    return do_read(NULL, s, o, d, n, 1);
}

gpuws_status gpuws_buffer_copy(gpuws_buffer *dst, size_t doff, const gpuws_buffer *src, size_t soff, size_t n)
{
    gpuws_status st = do_copy(NULL, dst, doff, src, soff, n);
    if (st || n == 0) return st;
    return dst->ctx->backend->stream_synchronize(dst->ctx->default_stream);
}

gpuws_status gpuws_buffer_fill(gpuws_buffer *dst, size_t off, const void *pat, size_t psize, size_t n)
{
    gpuws_status st = do_fill(NULL, dst, off, pat, psize, n);
    if (st || n == 0) return st;
    return dst->ctx->backend->stream_synchronize(dst->ctx->default_stream);
}

gpuws_status gpuws_buffer_write_async(gpuws_stream *s, gpuws_buffer *d, size_t o, const void *src, size_t n)
{
    return do_write(s, d, o, src, n, 0);
}

gpuws_status gpuws_buffer_read_async(gpuws_stream *s, const gpuws_buffer *src, size_t o, void *d, size_t n)
{
    return do_read(s, src, o, d, n, 0);
}

/* The stream's pinned staging memory, made on first use. */
static gpuws_status stream_staging(gpuws_stream *s)
{
    if (s->staging) return GPUWS_OK;
    gpuws_status st = s->ctx->backend->host_alloc(s->ctx, GPUWS__STAGING_BYTES, &s->staging);
    if (st) s->staging = NULL;
    return st;
}

/* Enqueues a read of n <= GPUWS__STAGING_BYTES bytes into the stream's staging memory: with the backend's read_start
 * when `alone` (the caller waits for the read alone, in _finish), else as one blocking read. */
static gpuws_status staged_read(gpuws_stream *s, const gpuws_buffer *src, size_t o, size_t n, bool alone,
                                gpuws__pending_read *rd)
{
    rd->token = NULL;
    rd->n = 0;
    gpuws_status st = check_xfer(&s, src, o, "", n, "argument 'src'", "dst");
    if (st) return st;
    if (n == 0 || n > GPUWS__STAGING_BYTES)
        return gpuws__error(GPUWS_ERR_INTERNAL, "a staged read of %zu bytes (1 to %d)", n, GPUWS__STAGING_BYTES);
    if ((st = stream_staging(s))) return st;
    const gpuws__backend *b = src->ctx->backend;
    if (alone && b->read_start) st = b->read_start(s, src, o, s->staging, n, &rd->token);
    else st = b->buffer_read(s, src, o, s->staging, n, 1);
    if (!st) rd->n = n;
    return st;
}

gpuws_status gpuws__buffer_read_sync(gpuws_stream *s, const gpuws_buffer *src, size_t o, void *d, size_t n)
{
    if (n == 0) return gpuws__error(GPUWS_ERR_INTERNAL, "a synchronous read of 0 bytes would not wait for the stream");
    if (n > GPUWS__STAGING_BYTES) return do_read(s, src, o, d, n, 1);
    /* A blocking read, not read_start + read_wait: on NVIDIA's OpenCL, clWaitForEvents on a read that is the last
     * command returns microseconds later than a blocking read would. */
    gpuws__pending_read rd;
    gpuws_status st = staged_read(s, src, o, n, false, &rd);
    return st ? st : gpuws__buffer_read_finish(s, &rd, d);
}

gpuws_status gpuws__buffer_read_start(gpuws_stream *s, const gpuws_buffer *src, size_t o, size_t n,
                                      gpuws__pending_read *rd)
{
    return staged_read(s, src, o, n, true, rd);
}

gpuws_status gpuws__buffer_read_finish(gpuws_stream *s, gpuws__pending_read *rd, void *dst)
{
    gpuws_status st = GPUWS_OK;
    if (rd->token) st = s->ctx->backend->read_wait(s, rd->token);
    rd->token = NULL;
    if (!st && rd->n) memcpy(dst, s->staging, rd->n);
    rd->n = 0;
    return st;
}

gpuws_status gpuws_buffer_copy_async(gpuws_stream *s, gpuws_buffer *d, size_t doff, const gpuws_buffer *src,
                                     size_t soff, size_t n)
{
    return do_copy(s, d, doff, src, soff, n);
}

gpuws_status gpuws_buffer_fill_async(gpuws_stream *s, gpuws_buffer *d, size_t o, const void *p, size_t ps, size_t n)
{
    return do_fill(s, d, o, p, ps, n);
}

gpuws_status gpuws_host_alloc(gpuws_context *ctx, size_t bytes, void **ptr)
{
    if (!ptr) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'ptr' is NULL");
    *ptr = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (bytes == 0) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'bytes' is 0");
    return ctx->backend->host_alloc(ctx, bytes, ptr);
}

void gpuws_host_free(gpuws_context *ctx, void *ptr)
{
    if (!ptr || !ctx || !gpuws__handle_live(ctx, GPUWS__H_CONTEXT)) return;
    ctx->backend->host_free(ctx, ptr);
}

gpuws_status gpuws__staging_take(gpuws_context *ctx, size_t bytes, void **p, size_t *got)
{
    pthread_mutex_lock(&ctx->lock);
    int best = -1;
    for (unsigned i = 0; i < ctx->nkept; i++)
        if (ctx->kept[i].bytes >= bytes && ctx->kept[i].bytes / 2 <= bytes &&
            (best < 0 || ctx->kept[i].bytes < ctx->kept[best].bytes))
            best = (int)i;
    if (best >= 0) {
        *p = ctx->kept[best].p, *got = ctx->kept[best].bytes;
        ctx->kept_bytes -= *got;
        ctx->kept[best] = ctx->kept[--ctx->nkept];
        pthread_mutex_unlock(&ctx->lock);
        return GPUWS_OK;
    }
    pthread_mutex_unlock(&ctx->lock);
    *got = bytes;
    return gpuws_host_alloc(ctx, bytes, p);
}

void gpuws__staging_give(gpuws_context *ctx, void *p, size_t bytes)
{
    if (!p) return;
    const int64_t knob = ctx->tuning.staging_keep_mib;
    /* auto: where device memory is host memory (CPU, PoCL) nothing is pinned, so keeping would only hold memory */
    const size_t keep = knob >= 0 ? (size_t)knob << 20 : ctx->info.unified_memory ? 0 : (size_t)512 << 20;
    pthread_mutex_lock(&ctx->lock);
    const bool kept = ctx->nkept < GPUWS__KEPT_MAX && ctx->kept_bytes + bytes <= keep;
    if (kept) {
        ctx->kept[ctx->nkept].p = p, ctx->kept[ctx->nkept].bytes = bytes;
        ctx->nkept++, ctx->kept_bytes += bytes;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!kept) gpuws_host_free(ctx, p);
}

void gpuws__staging_release(gpuws_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    const unsigned n = ctx->nkept;
    ctx->nkept = 0, ctx->kept_bytes = 0;
    pthread_mutex_unlock(&ctx->lock);
    for (unsigned i = 0; i < n; i++) ctx->backend->host_free(ctx, ctx->kept[i].p);
}
