/* libFuzzer target: argument validation of the public API.
 *
 * The input is a little program: each step picks an API call and its arguments (sizes, offsets, handles: live,
 * NULL, destroyed, from another context) from the next bytes. Every call must return a status from the list with a
 * message when it fails; a failed call must change nothing (a shadow copy of every buffer is kept and compared on
 * each read, and host outputs are poisoned and compared); successful transfers must move exactly the bytes asked
 * for; at the end everything is destroyed and the library's live-allocation count must be back where it started.
 *
 * Runs on the CPU backend; GPUWS_FUZZ_OPENCL=1 adds an OpenCL context (slow, and PoCL's own allocations make
 * libFuzzer's per-input leak check noisy: use -detect_leaks=0 then). */
#include "core/alloc.h"
#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF      6
#define NSTREAM   3
#define NEVENT    3
#define MAX_BYTES 65536 /* buffers that really get memory stay under this, and so does every host array */

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t take(input *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static uint64_t take64(input *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | take(in);
    return v;
}

/* Sizes and offsets biased towards the edges: 0, 1, small, the buffer sizes, and values that overflow. */
static size_t take_size(input *in)
{
    switch (take(in) % 10) {
    case 0: return 0;
    case 1: return 1;
    case 2: return take(in);
    case 3: return (size_t)take(in) << 8 | take(in);
    case 4: return SIZE_MAX;
    case 5: return SIZE_MAX - take(in);
    case 6: return SIZE_MAX / 2 + 1;
    case 7: return (size_t)1 << (take(in) % 64);
    case 8: return ((size_t)1 << (take(in) % 64)) - 1;
    default: return (size_t)take64(in);
    }
}

typedef struct {
    gpuws_buffer *b; /* NULL: empty slot */
    bool dead;       /* destroyed: b is a dangling handle the API must reject */
    size_t size;
    uint8_t *shadow; /* expected contents */
    uint8_t *known;  /* 1 where shadow is defined (written since creation) */
} slot;

typedef struct {
    gpuws_context *ctx, *other;
    gpuws_buffer *foreign; /* a live buffer of `other` */
    gpuws_stream *foreign_stream;
    slot buf[NBUF];
    gpuws_stream *st[NSTREAM];
    bool st_dead[NSTREAM];
    gpuws_event *ev[NEVENT];
    bool ev_dead[NEVENT];
    void *pinned;
    uint8_t host[MAX_BYTES + 64], poison[MAX_BYTES + 64];
} world;

static void fail(const char *what, gpuws_status st)
{
    fprintf(stderr, "fuzz_api: %s (%s: %s)\n", what, gpuws_status_name(st), gpuws_last_error());
    abort();
}

/* Every status is from the list, and a failure says why. */
static gpuws_status checked(gpuws_status st, const char *call)
{
    if (strcmp(gpuws_status_name(st), "GPUWS_UNKNOWN_STATUS") == 0) fail(call, st);
    if (st != GPUWS_OK && !gpuws_last_error()[0]) fail(call, st);
    if (st == GPUWS_ERR_INTERNAL) fail(call, st);
    return st;
}
#define CALL(expr) checked((expr), #expr)

static gpuws_buffer *pick_buffer(world *w, input *in, slot **s)
{
    uint8_t c = take(in) % (NBUF + 2);
    *s = NULL;
    if (c == NBUF) return NULL;
    if (c == NBUF + 1) return w->foreign;
    *s = &w->buf[c];
    return w->buf[c].b;
}

static gpuws_stream *pick_stream(world *w, input *in)
{
    uint8_t c = take(in) % (NSTREAM + 3);
    if (c < NSTREAM) return w->st[c];
    if (c == NSTREAM) return NULL;
    if (c == NSTREAM + 1) return w->foreign_stream;
    gpuws_stream *d;
    gpuws_context_get_default_stream(w->ctx, &d);
    return d;
}

static bool usable(const slot *s) { return s && s->b && !s->dead; }

static void shadow_set(slot *s, size_t off, const uint8_t *src, size_t n)
{
    memmove(s->shadow + off, src, n);
    memset(s->known + off, 1, n);
}

/* Reads the whole buffer back and compares it with the shadow where it is known. */
static void verify(world *w, slot *s)
{
    if (!usable(s)) return;
    if (CALL(gpuws_buffer_read(s->b, 0, w->host, s->size))) fail("reading back a live buffer", GPUWS_OK);
    for (size_t i = 0; i < s->size; i++)
        if (s->known[i] && w->host[i] != s->shadow[i]) {
            fprintf(stderr, "fuzz_api: buffer byte %zu of %zu is 0x%02x, expected 0x%02x\n", i, s->size, w->host[i],
                    s->shadow[i]);
            abort();
        }
}

static void slot_free(slot *s)
{
    if (s->b && !s->dead) gpuws_buffer_destroy(s->b);
    free(s->shadow);
    free(s->known);
    memset(s, 0, sizeof *s);
}

static void op_create(world *w, input *in)
{
    slot *s = &w->buf[take(in) % NBUF];
    size_t n = take_size(in);
    gpuws_device_info d;
    gpuws_context_get_device_info(w->ctx, &d);
    if (n > MAX_BYTES && n <= d.global_mem_bytes) n = n % MAX_BYTES + 1; /* real memory stays small */
    gpuws_buffer *b = (gpuws_buffer *)(uintptr_t)1;
    gpuws_status st = CALL(gpuws_buffer_create(w->ctx, n, &b));
    if (st) {
        if (b) fail("failed buffer_create left *buffer set", st);
        return;
    }
    slot_free(s);
    s->b = b;
    s->size = n;
    s->shadow = calloc(n, 1);
    s->known = calloc(n, 1);
    if (!s->shadow || !s->known) abort();
}

static void op_destroy(world *w, input *in)
{
    slot *s = &w->buf[take(in) % NBUF];
    if (!s->b || s->dead) return;
    gpuws_buffer_destroy(s->b);
    s->dead = true; /* the handle stays in the slot: later calls must reject it */
}

static void op_write(world *w, input *in, bool async)
{
    slot *s;
    gpuws_buffer *b = pick_buffer(w, in, &s);
    size_t off = take_size(in), n = take_size(in);
    gpuws_stream *st = async ? pick_stream(w, in) : NULL;
    uint8_t seed = take(in);
    for (size_t i = 0; i < sizeof w->host; i++) w->host[i] = (uint8_t)(i * 31 + seed);
    const void *src = take(in) % 8 ? w->host : NULL;
    gpuws_status r =
        async ? CALL(gpuws_buffer_write_async(st, b, off, src, n)) : CALL(gpuws_buffer_write(b, off, src, n));
    if (r == GPUWS_OK && usable(s) && n) {
        if (n > MAX_BYTES) fail("write of more than the buffer succeeded", r);
        if (async) gpuws_context_synchronize(w->ctx);
        shadow_set(s, off, w->host, n);
    }
    verify(w, s);
}

static void op_read(world *w, input *in, bool async)
{
    slot *s;
    gpuws_buffer *b = pick_buffer(w, in, &s);
    size_t off = take_size(in), n = take_size(in);
    gpuws_stream *st = async ? pick_stream(w, in) : NULL;
    memset(w->host, 0xA5, sizeof w->host);
    void *dst = take(in) % 8 ? w->host : NULL;
    gpuws_status r =
        async ? CALL(gpuws_buffer_read_async(st, b, off, dst, n)) : CALL(gpuws_buffer_read(b, off, dst, n));
    if (r == GPUWS_OK && async) gpuws_context_synchronize(w->ctx);
    if (r == GPUWS_OK && usable(s) && n) {
        if (n > MAX_BYTES) fail("read of more than the buffer succeeded", r);
        for (size_t i = 0; i < n; i++)
            if (s->known[off + i] && w->host[i] != s->shadow[off + i]) fail("read returned other bytes", r);
    } else if (r != GPUWS_OK) {
        for (size_t i = 0; i < sizeof w->host; i++)
            if (w->host[i] != 0xA5) fail("a failed read wrote host memory", r);
    }
}

static void op_copy(world *w, input *in, bool async)
{
    slot *sd, *ss;
    gpuws_buffer *d = pick_buffer(w, in, &sd), *src = pick_buffer(w, in, &ss);
    size_t doff = take_size(in), soff = take_size(in), n = take_size(in);
    gpuws_stream *st = async ? pick_stream(w, in) : NULL;
    gpuws_status r = async ? CALL(gpuws_buffer_copy_async(st, d, doff, src, soff, n))
                           : CALL(gpuws_buffer_copy(d, doff, src, soff, n));
    if (r == GPUWS_OK && usable(sd) && usable(ss) && n) {
        if (async) gpuws_context_synchronize(w->ctx);
        memmove(sd->shadow + doff, ss->shadow + soff, n);
        memmove(sd->known + doff, ss->known + soff, n);
    }
    verify(w, sd);
}

static void op_fill(world *w, input *in, bool async)
{
    slot *s;
    gpuws_buffer *b = pick_buffer(w, in, &s);
    size_t off = take_size(in), n = take_size(in), ps = take(in) % 18;
    uint8_t pat[32];
    for (int i = 0; i < 32; i++) pat[i] = take(in);
    gpuws_stream *st = async ? pick_stream(w, in) : NULL;
    const void *p = take(in) % 8 ? pat : NULL;
    gpuws_status r =
        async ? CALL(gpuws_buffer_fill_async(st, b, off, p, ps, n)) : CALL(gpuws_buffer_fill(b, off, p, ps, n));
    if (r == GPUWS_OK && usable(s) && n) {
        if (async) gpuws_context_synchronize(w->ctx);
        for (size_t i = 0; i < n; i += ps) shadow_set(s, off + i, pat, ps);
    }
    verify(w, s);
}

static void op_streams(world *w, input *in)
{
    int i = take(in) % NSTREAM;
    switch (take(in) % 3) {
    case 0:
        if (!w->st[i] || w->st_dead[i]) {
            w->st[i] = NULL;
            w->st_dead[i] = false;
            CALL(gpuws_stream_create(w->ctx, take(in) % 8 ? &w->st[i] : NULL));
        }
        break;
    case 1:
        if (w->st[i] && !w->st_dead[i]) {
            gpuws_stream_destroy(w->st[i]);
            w->st_dead[i] = true;
        }
        break;
    default: CALL(gpuws_stream_synchronize(w->st[i])); break;
    }
}

static void op_events(world *w, input *in)
{
    int i = take(in) % NEVENT, j = take(in) % NEVENT;
    double ms = -1;
    switch (take(in) % 5) {
    case 0:
        if (!w->ev[i] || w->ev_dead[i]) {
            w->ev[i] = NULL;
            w->ev_dead[i] = false;
            CALL(gpuws_event_create(w->ctx, &w->ev[i]));
        }
        break;
    case 1:
        if (w->ev[i] && !w->ev_dead[i]) {
            gpuws_event_destroy(w->ev[i]);
            w->ev_dead[i] = true;
        }
        break;
    case 2: CALL(gpuws_event_record(w->ev[i], pick_stream(w, in))); break;
    case 3: CALL(gpuws_event_synchronize(w->ev[i])); break;
    default:
        if (CALL(gpuws_event_elapsed_ms(w->ev[i], w->ev[j], take(in) % 8 ? &ms : NULL)) == GPUWS_OK && !isfinite(ms))
            fail("elapsed time is not a number", GPUWS_OK);
        break;
    }
}

static gpuws_dtype take_dtype(input *in)
{
    uint8_t c = take(in);
    return c < 200 ? (gpuws_dtype)(c % 2) : (gpuws_dtype)(c % 9 - 1); /* mostly f32/f64, sometimes anything */
}

static void op_vector_add(world *w, input *in)
{
    slot *sa, *sb, *sc;
    gpuws_buffer *a = pick_buffer(w, in, &sa), *b = pick_buffer(w, in, &sb), *c = pick_buffer(w, in, &sc);
    gpuws_dtype dt = take_dtype(in);
    size_t n = take(in) % 4 ? take(in) % 64 : take_size(in);
    gpuws_status r = CALL(gpuws_vector_add(pick_stream(w, in), dt, n, a, b, c));
    if (r == GPUWS_OK && usable(sc)) {
        gpuws_context_synchronize(w->ctx);
        size_t es = gpuws_dtype_size(dt), bytes = n * es;
        /* defined where both inputs were; the same C expression the reference evaluates */
        if (usable(sa) && usable(sb)) {
            uint8_t *ra = malloc(bytes + 1), *rb = malloc(bytes + 1);
            if (!ra || !rb) abort();
            memcpy(ra, sa->shadow, bytes);
            memcpy(rb, sb->shadow, bytes);
            for (size_t i = 0; i < n; i++) {
                bool k = memchr(sa->known + i * es, 0, es) == NULL && memchr(sb->known + i * es, 0, es) == NULL;
                if (dt == GPUWS_F32) {
                    float x, y, z;
                    memcpy(&x, ra + i * 4, 4), memcpy(&y, rb + i * 4, 4);
                    z = x + y;
                    memcpy(sc->shadow + i * 4, &z, 4);
                } else {
                    double x, y, z;
                    memcpy(&x, ra + i * 8, 8), memcpy(&y, rb + i * 8, 8);
                    z = x + y;
                    memcpy(sc->shadow + i * 8, &z, 8);
                }
                memset(sc->known + i * es, k, es);
            }
            free(ra);
            free(rb);
        } else {
            memset(sc->known, 0, bytes);
        }
    }
    verify(w, sc);
}

static void op_reduce(world *w, input *in)
{
    slot *si, *so;
    gpuws_buffer *b = pick_buffer(w, in, &si), *o = pick_buffer(w, in, &so);
    gpuws_dtype dt = take_dtype(in);
    gpuws_reduce_op op = (gpuws_reduce_op)(take(in) % 5);
    size_t n = take(in) % 4 ? take(in) % 64 : take_size(in);
    if (take(in) % 2) {
        double v = 12345.0;
        gpuws_status r = CALL(gpuws_reduce_value(pick_stream(w, in), op, dt, n, b, take(in) % 8 ? &v : NULL));
        if (r != GPUWS_OK && v != 12345.0) fail("a failed reduce_value wrote its result", r);
    } else {
        gpuws_status r = CALL(gpuws_reduce(pick_stream(w, in), op, dt, n, b, o));
        if (r == GPUWS_OK && usable(so)) {
            gpuws_context_synchronize(w->ctx);
            memset(so->known, 0, gpuws_dtype_size(dt));
        }
        verify(w, so);
    }
}

static void op_misc(world *w, input *in)
{
    slot *s;
    gpuws_buffer *b = pick_buffer(w, in, &s);
    size_t sz = 7;
    gpuws_context *c = NULL;
    gpuws_device_info d;
    gpuws_kernel *k = NULL;
    char name[24];
    switch (take(in) % 7) {
    case 0:
        if (CALL(gpuws_buffer_get_size(b, take(in) % 8 ? &sz : NULL)) == GPUWS_OK && usable(s) && sz != s->size)
            fail("buffer_get_size", GPUWS_OK);
        break;
    case 1:
        if (CALL(gpuws_buffer_get_context(b, take(in) % 8 ? &c : NULL)) == GPUWS_OK && usable(s) && c != w->ctx)
            fail("buffer_get_context", GPUWS_OK);
        break;
    case 2: CALL(gpuws_context_get_device_info(take(in) % 8 ? w->ctx : NULL, take(in) % 8 ? &d : NULL)); break;
    case 3:
        for (int i = 0; i < (int)sizeof name; i++) name[i] = (char)take(in);
        name[sizeof name - 1] = 0;
        CALL(gpuws_kernel_get(w->ctx, take(in) % 8 ? name : NULL, &k));
        break;
    case 4:
        if (w->pinned) {
            gpuws_host_free(w->ctx, w->pinned);
            w->pinned = NULL;
        } else {
            size_t n = take_size(in);
            if (n > MAX_BYTES) n = n % MAX_BYTES + 1;
            if (CALL(gpuws_host_alloc(w->ctx, n, &w->pinned)) == GPUWS_OK) memset(w->pinned, 0x11, n);
        }
        break;
    case 5: {
        gpuws_backend_kind kind;
        for (int i = 0; i < (int)sizeof name; i++) name[i] = (char)take(in);
        name[sizeof name - 1] = 0;
        CALL(gpuws_backend_from_name(name, &kind));
        gpuws_backend_info bi;
        CALL(gpuws_backend_get_info((gpuws_backend_kind)(take(in) % 5) - 1, &bi));
        break;
    }
    default: {
        /* context creation with arbitrary options */
        for (int i = 0; i < (int)sizeof name; i++) name[i] = (char)take(in);
        name[sizeof name - 1] = 0;
        gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
        o.backend = take(in) % 4 ? name : "cpu";
        o.device = (int)(int8_t)take(in);
        gpuws_context *x = (gpuws_context *)(uintptr_t)1;
        if (CALL(gpuws_context_create(&x, &o)) == GPUWS_OK) gpuws_context_destroy(x);
        else if (x) fail("failed context_create left *ctx set", GPUWS_OK);
        break;
    }
    }
}

static long baseline;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (!getenv("GPUWS_FUZZ_OPENCL")) setenv("GPUWS_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
    setenv("GPUWS_LOG", "error", 1); /* leftover warnings at context destroy are expected here */
    gpuws_context *c;
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "cpu";
    if (gpuws_context_create(&c, &o)) abort(); /* sizes the handle registry before the baseline */
    gpuws_context_destroy(c);
    baseline = gpuws__alloc_live();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static world w;
    memset(&w, 0, sizeof w);
    input in = { data, size };
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = getenv("GPUWS_FUZZ_OPENCL") && take(&in) % 2 ? "opencl" : "cpu";
    if (gpuws_context_create(&w.ctx, &o) || gpuws_context_create(&w.other, &o)) abort();
    if (gpuws_buffer_create(w.other, 64, &w.foreign) || gpuws_stream_create(w.other, &w.foreign_stream)) abort();
    for (int steps = 0; in.n && steps < 64; steps++) {
        switch (take(&in) % 16) {
        case 0:
        case 1: op_create(&w, &in); break;
        case 2: op_destroy(&w, &in); break;
        case 3: op_write(&w, &in, false); break;
        case 4: op_write(&w, &in, true); break;
        case 5: op_read(&w, &in, false); break;
        case 6: op_read(&w, &in, true); break;
        case 7: op_copy(&w, &in, take(&in) % 2); break;
        case 8: op_fill(&w, &in, take(&in) % 2); break;
        case 9: op_streams(&w, &in); break;
        case 10: op_events(&w, &in); break;
        case 11:
        case 12: op_vector_add(&w, &in); break;
        case 13: op_reduce(&w, &in); break;
        default: op_misc(&w, &in); break;
        }
    }
    if (gpuws_context_synchronize(w.ctx)) fail("context_synchronize", GPUWS_ERR_INTERNAL);
    for (int i = 0; i < NBUF; i++) {
        verify(&w, &w.buf[i]);
        slot_free(&w.buf[i]);
    }
    for (int i = 0; i < NSTREAM; i++)
        if (!w.st_dead[i]) gpuws_stream_destroy(w.st[i]);
    for (int i = 0; i < NEVENT; i++)
        if (!w.ev_dead[i]) gpuws_event_destroy(w.ev[i]);
    gpuws_host_free(w.ctx, w.pinned);
    gpuws_buffer_destroy(w.foreign);
    gpuws_stream_destroy(w.foreign_stream);
    gpuws_context_destroy(w.ctx);
    gpuws_context_destroy(w.other);
    long live = gpuws__alloc_live();
    if (live != baseline) {
        fprintf(stderr, "fuzz_api: %ld library allocations leaked by this input\n", live - baseline);
        abort();
    }
    return 0;
}
