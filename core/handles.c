/* Live-handle registry and the argument checks every public call starts with.
 *
 * A handle is checked against the registry before it is dereferenced, so a NULL, destroyed or made-up handle is
 * reported as GPUWS_ERR_INVALID_ARGUMENT instead of crashing. (A destroyed handle whose memory was reused for a
 * new object of the same kind cannot be told apart; that is documented.) */
#include "alloc.h"
#include "errors.h"
#include "objects.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *p;
    int kind;
} gpuws__slot; /* kind 0 = empty, -1 = tombstone */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static gpuws__slot *reg_slots;
static size_t reg_cap, reg_used; /* used counts live + tombstones */

static size_t reg_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* Rehashes into a table of at least four slots per live handle, and room for `extra` more registrations before the
 * next rehash: tombstones are dropped, so a program that creates and destroys handles forever keeps a table sized by
 * what is live, not by what ever existed. False when its allocation fails. */
static bool reg_grow(size_t extra)
{
    size_t live = 0;
    for (size_t i = 0; i < reg_cap; i++) live += reg_slots[i].kind > 0;
    size_t ncap = 256;
    while (ncap < (live + 1) * 4 || ncap < (live + extra + 1) * 2) ncap *= 2;
    gpuws__slot *ns = gpuws__calloc(ncap, sizeof *ns);
    if (!ns) return false;
    for (size_t i = 0; i < reg_cap; i++) {
        if (reg_slots[i].kind > 0) {
            size_t j = reg_hash(reg_slots[i].p) & (ncap - 1);
            while (ns[j].kind) j = (j + 1) & (ncap - 1);
            ns[j] = reg_slots[i];
        }
    }
    gpuws__free(reg_slots);
    reg_slots = ns;
    reg_cap = ncap;
    reg_used = live;
    return true;
}

gpuws_status gpuws__handle_add(const void *p, gpuws__handle_kind kind)
{
    pthread_mutex_lock(&reg_lock);
    /* a failed rehash is absorbed: insert probes the old table while it still has room */
    if ((reg_used + 1) * 2 > reg_cap) reg_grow(0);
    bool ok = reg_cap && reg_used + 1 < reg_cap;
    if (ok) {
        size_t j = reg_hash(p) & (reg_cap - 1);
        while (reg_slots[j].kind > 0) j = (j + 1) & (reg_cap - 1);
        if (reg_slots[j].kind == 0) reg_used++;
        reg_slots[j].p = p;
        reg_slots[j].kind = (int)kind;
    }
    size_t cap = reg_cap;
    pthread_mutex_unlock(&reg_lock);
    if (!ok)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "growing the live-handle registry past %zu slots (%zu bytes) failed", cap,
                            (cap ? cap * 2 : 256) * sizeof(gpuws__slot));
    return GPUWS_OK;
}

gpuws_status gpuws__handle_reserve(size_t n)
{
    pthread_mutex_lock(&reg_lock);
    const bool ok = (reg_used + n + 1) * 2 <= reg_cap || reg_grow(n);
    pthread_mutex_unlock(&reg_lock);
    if (!ok)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "making room for %zu more handles in the live-handle registry failed", n);
    return GPUWS_OK;
}

static long reg_find(const void *p)
{
    if (!reg_cap) return -1;
    size_t j = reg_hash(p) & (reg_cap - 1);
    for (size_t n = 0; n < reg_cap && reg_slots[j].kind != 0; n++, j = (j + 1) & (reg_cap - 1))
        if (reg_slots[j].kind > 0 && reg_slots[j].p == p) return (long)j;
    return -1;
}

void gpuws__handle_remove(const void *p)
{
    pthread_mutex_lock(&reg_lock);
    long j = reg_find(p);
    if (j >= 0) reg_slots[j].kind = -1;
    pthread_mutex_unlock(&reg_lock);
}

bool gpuws__handle_live(const void *p, gpuws__handle_kind kind)
{
    if (!p) return false;
    pthread_mutex_lock(&reg_lock);
    long j = reg_find(p);
    bool ok = j >= 0 && reg_slots[j].kind == (int)kind;
    pthread_mutex_unlock(&reg_lock);
    return ok;
}

static gpuws_status check(const void *p, gpuws__handle_kind kind, const char *type, const char *what)
{
    if (!p) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, type);
    if (!gpuws__handle_live(p, kind))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %p is not a live %s (destroyed, or never created)", what,
                            p, type);
    return GPUWS_OK;
}

gpuws_status gpuws__check_context(const gpuws_context *c, const char *w)
{
    return check(c, GPUWS__H_CONTEXT, "context", w);
}
gpuws_status gpuws__check_stream(const gpuws_stream *s, const char *w)
{
    return check(s, GPUWS__H_STREAM, "stream", w);
}
gpuws_status gpuws__check_buffer(const gpuws_buffer *b, const char *w)
{
    return check(b, GPUWS__H_BUFFER, "buffer", w);
}
gpuws_status gpuws__check_event(const gpuws_event *e, const char *w) { return check(e, GPUWS__H_EVENT, "event", w); }

gpuws_status gpuws__resolve_stream(gpuws_context *ctx, gpuws_stream **s, const char *what)
{
    if (!*s) {
        *s = ctx->default_stream;
        return GPUWS_OK;
    }
    gpuws_status st = gpuws__check_stream(*s, what);
    if (st) return st;
    if ((*s)->ctx != ctx)
        return gpuws__error(GPUWS_ERR_WRONG_CONTEXT, "%s: the stream belongs to another context", what);
    return GPUWS_OK;
}

gpuws_status gpuws__check_same_context(const gpuws_context *ctx, const gpuws_buffer *b, const char *what)
{
    if (b->ctx != ctx) return gpuws__error(GPUWS_ERR_WRONG_CONTEXT, "%s: the buffer belongs to another context", what);
    return GPUWS_OK;
}

gpuws_status gpuws__check_range(const gpuws_buffer *b, size_t offset, size_t bytes, const char *what)
{
    size_t end;
    if (gpuws__add_overflows(offset, bytes, &end))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: offset %zu + %zu bytes overflows size_t", what, offset, bytes);
    if (end > b->size)
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE, "%s: range [%zu, %zu) is past the end of a buffer of %zu bytes",
                            what, offset, end, b->size);
    return GPUWS_OK;
}
