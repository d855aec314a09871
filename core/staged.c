/* Large copies between pageable host memory and a GPU, through pinned staging blocks filled or emptied by several
 * host threads while the device copies the block before (gpuws_buffer_write / _read and their _async forms).
 *
 * Why: a driver copies pageable memory through its own small pinned buffers on one thread, at a fraction of the
 * bus (CUDA on the H200 host: 8.5 GB/s up, against about 55 GB/s from pinned memory), while one thread's memcpy
 * moves 10 GB/s and several move 30-60 GB/s. Pinning costs too (about 0.65 ms a MiB on that host), so the blocks
 * are the context's kept staging (gpuws__staging_take / _give, shared with the _host calls) and a transfer is
 * staged only when it repays them: from STAGED_FROM bytes, through blocks of BLOCK bytes once the context keeps
 * them or for a transfer of STAGED_LARGE bytes and more, else through SMALL_BLOCK ones: three of 8 MiB pin in about
 * 16 ms at that rate, about what staging saves on a first transfer of 128 MiB, and are kept for the next one (on the
 * H200 a 268 MB upload from a fresh context took 36-42 ms through them, 43-54 ms straight). Once the context keeps
 * blocks, transfers from STAGED_KEPT bytes take them too: the bands of the _host calls, tens of MiB each from pageable
 * memory, would otherwise go at the driver's rate, a band after another. The knob
 * staged_copy_mib N stages from N MiB through blocks of min(N, 64) MiB on any device (tests use it to cut small
 * transfers into many blocks on PoCL); 0 never stages. Where pinned memory cannot be had the copy goes straight. */
#include "alloc.h"
#include "backend.h"
#include "driver_support.h"
#include "errors.h"
#include "objects.h"
#include "threads.h"

#include <string.h>

#define BLOCK        ((size_t)64 << 20) /* the _host calls' staging size, so the kept blocks serve both */
#define SMALL_BLOCK  ((size_t)8 << 20)
#define SLOTS        3
#define STAGED_FROM  (2 * BLOCK)
#define STAGED_KEPT  (2 * SMALL_BLOCK) /* from here where the context keeps blocks: nothing to pin */
#define STAGED_LARGE ((size_t)1 << 30)

/* Blocks of `block` bytes the context keeps now (a take would find them without pinning). */
static unsigned kept_of(gpuws_context *ctx, size_t block)
{
    unsigned k = 0;
    pthread_mutex_lock(&ctx->lock);
    for (unsigned i = 0; i < ctx->nkept; i++) k += ctx->kept[i].bytes >= block && ctx->kept[i].bytes / 2 <= block;
    pthread_mutex_unlock(&ctx->lock);
    return k;
}

static unsigned kept_blocks(gpuws_context *ctx) { return kept_of(ctx, BLOCK); }

bool gpuws__host_pinned(gpuws_context *ctx, const void *p, size_t n)
{
    return ctx->backend->host_pinned && ctx->backend->host_pinned(ctx, p, n);
}

/* The block size a transfer of n bytes is staged through, 0 for a straight copy. */
static size_t staged_block(gpuws_context *ctx, const void *host, size_t n)
{
    const int64_t knob = ctx->tuning.staged_copy_mib;
    size_t from, block = BLOCK;
    if (knob == 0) return 0;
    if (knob > 0) {
        from = (size_t)knob << 20;
        block = from < BLOCK ? from : BLOCK;
    } else {
        if (ctx->info.type != GPUWS_DEVICE_GPU || ctx->info.unified_memory) return 0;
        const unsigned big = kept_blocks(ctx);
        from = big >= SLOTS || kept_of(ctx, SMALL_BLOCK) >= SLOTS ? STAGED_KEPT : STAGED_FROM;
        if (n < STAGED_LARGE && big < SLOTS) block = SMALL_BLOCK;
    }
    if (n < from || gpuws__host_pinned(ctx, host, n)) return 0;
    return block;
}

typedef struct {
    size_t block;
    void *host[SLOTS];
    size_t bytes[SLOTS];
    gpuws_event *done[SLOTS];
    int used;
} slots;

static gpuws_status slots_make(gpuws_context *ctx, size_t n, size_t block, slots *sl)
{
    memset(sl, 0, sizeof *sl);
    const size_t need = (n + block - 1) / block;
    sl->block = block;
    sl->used = need < SLOTS ? (int)need : SLOTS;
    gpuws_status st = GPUWS_OK;
    for (int k = 0; k < sl->used && !st; k++)
        if (!(st = gpuws__staging_take(ctx, block, &sl->host[k], &sl->bytes[k])))
            st = gpuws_event_create(ctx, &sl->done[k]);
    return st;
}

/* Waits for every slot's last copy (the blocks may be taken by another call once given back), then gives back. */
static gpuws_status slots_free(gpuws_context *ctx, slots *sl, gpuws_status st)
{
    for (int k = 0; k < sl->used; k++) {
        if (sl->done[k] && sl->done[k]->recorded) {
            gpuws_status w = gpuws_event_synchronize(sl->done[k]);
            if (!st) st = w;
        }
        gpuws_event_destroy(sl->done[k]);
    }
    /* a block whose copy failed may still be read by the device: never hand it to another call */
    for (int k = 0; k < sl->used; k++)
        if (st) gpuws_host_free(ctx, sl->host[k]);
        else gpuws__staging_give(ctx, sl->host[k], sl->bytes[k]);
    return st;
}

static gpuws_status staged_write(gpuws_stream *s, gpuws_buffer *dst, size_t off, const char *src, size_t n, slots *sl)
{
    const size_t block = sl->block;
    gpuws_status st = GPUWS_OK;
    for (size_t at = 0, i = 0; at < n && !st; at += block, i++) {
        const int k = (int)(i % SLOTS);
        const size_t len = n - at < block ? n - at : block;
        if (sl->done[k]->recorded && (st = gpuws_event_synchronize(sl->done[k]))) break; /* its copy up is done */
        gpuws__copy_bytes(sl->host[k], src + at, 0, len); /* while the device copies the block before */
        if (!(st = dst->ctx->backend->buffer_write(s, dst, off + at, sl->host[k], len, 0)))
            st = gpuws_event_record(sl->done[k], s);
    }
    return st;
}

static gpuws_status staged_read(gpuws_stream *s, const gpuws_buffer *src, size_t off, char *dst, size_t n, slots *sl)
{
    const size_t block = sl->block, blocks = (n + block - 1) / block;
    gpuws_status st = GPUWS_OK;
    /* the device reads up to SLOTS blocks ahead of the host's copies out */
    for (size_t i = 0; i < blocks + SLOTS && !st; i++) {
        if (i >= SLOTS) { /* copy block b out of its slot, then read block i into it */
            const size_t b = i - SLOTS, at = b * block, len = n - at < block ? n - at : block;
            const int k = (int)(b % SLOTS);
            if ((st = gpuws_event_synchronize(sl->done[k]))) break;
            gpuws__copy_bytes(dst + at, sl->host[k], 0, len);
        }
        if (i < blocks) {
            const size_t at = i * block, len = n - at < block ? n - at : block;
            const int k = (int)(i % SLOTS);
            if (!(st = src->ctx->backend->buffer_read(s, src, off + at, sl->host[k], len, 0)))
                st = gpuws_event_record(sl->done[k], s);
        }
    }
    return st;
}

gpuws_status gpuws__write(gpuws_stream *s, gpuws_buffer *dst, size_t off, const void *src, size_t n, int blocking)
{
    gpuws_context *ctx = dst->ctx;
    const size_t block = staged_block(ctx, src, n);
    slots sl;
    if (block && !slots_make(ctx, n, block, &sl)) return slots_free(ctx, &sl, staged_write(s, dst, off, src, n, &sl));
    if (block) slots_free(ctx, &sl, GPUWS_OK); /* no pinned memory: straight */
    return ctx->backend->buffer_write(s, dst, off, src, n, blocking);
}

gpuws_status gpuws__read_kept(gpuws_stream *s, const gpuws_buffer *src, size_t off, void *dst, size_t n)
{
    gpuws_context *ctx = src->ctx;
    size_t block = 0;
    if (ctx->info.type == GPUWS_DEVICE_GPU && !ctx->info.unified_memory && ctx->tuning.staged_copy_mib != 0 &&
        n >= SMALL_BLOCK && !gpuws__host_pinned(ctx, dst, n))
        block = kept_of(ctx, BLOCK) >= SLOTS ? BLOCK : kept_of(ctx, SMALL_BLOCK) >= SLOTS ? SMALL_BLOCK : 0;
    slots sl;
    if (block && !slots_make(ctx, n, block, &sl)) return slots_free(ctx, &sl, staged_read(s, src, off, dst, n, &sl));
    if (block) slots_free(ctx, &sl, GPUWS_OK);
    return gpuws__read(s, src, off, dst, n, 1);
}

gpuws_status gpuws__read(gpuws_stream *s, const gpuws_buffer *src, size_t off, void *dst, size_t n, int blocking)
{
    gpuws_context *ctx = src->ctx;
    const size_t block = staged_block(ctx, dst, n);
    slots sl;
    if (block && !slots_make(ctx, n, block, &sl)) return slots_free(ctx, &sl, staged_read(s, src, off, dst, n, &sl));
    if (block) slots_free(ctx, &sl, GPUWS_OK);
    return ctx->backend->buffer_read(s, src, off, dst, n, blocking);
}
