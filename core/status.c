/* Status names and strings (generated from GPUWS_STATUS_MAP), the thread-local detail message, logging. */
#include "alloc.h"
#include "errors.h"
#include "util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

const char *gpuws_status_name(gpuws_status s)
{
    switch (s) {
#define XX(name, value, text)                                                                                          \
    case GPUWS_##name: return "GPUWS_" #name;
        GPUWS_STATUS_MAP(XX)
#undef XX
    }
    return "GPUWS_UNKNOWN_STATUS";
}

const char *gpuws_status_string(gpuws_status s)
{
    switch (s) {
#define XX(name, value, text)                                                                                          \
    case GPUWS_##name: return text;
        GPUWS_STATUS_MAP(XX)
#undef XX
    }
    return "unknown status";
}

/* Large enough for an OpenCL build log of a few screens; longer logs are truncated with a marker. */
#define GPUWS__ERRBUF 8192
static _Thread_local char gpuws__errbuf[GPUWS__ERRBUF];

const char *gpuws_last_error(void) { return gpuws__errbuf; }

static void gpuws__vset(const char *old, const char *fmt, va_list ap)
{
    char tmp[GPUWS__ERRBUF];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (n >= (int)sizeof tmp) memcpy(tmp + sizeof tmp - 16, " [truncated]", 13);
    if (old) { /* "<new prefix>: <old message>"; a long message is cut, which is fine */
        /* "find_sources: sigma_clip" before "sigma_clip: ..." says the step once, not twice */
        char *last = strrchr(tmp, ':');
        const char *step = last && last[1] == ' ' ? last + 2 : tmp;
        size_t len = strlen(step);
        if (len && strncmp(old, step, len) == 0 && old[len] == ':') {
            if (step == tmp) {
                memmove(gpuws__errbuf, old, strlen(old) + 1);
                return;
            }
            *last = 0;
        }
        if (snprintf(gpuws__errbuf, sizeof gpuws__errbuf, "%s: %s", tmp, old) >= (int)sizeof gpuws__errbuf)
            gpuws__errbuf[sizeof gpuws__errbuf - 1] = 0;
    } else memcpy(gpuws__errbuf, tmp, sizeof tmp);
}

gpuws_status gpuws__error(gpuws_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpuws__vset(NULL, fmt, ap);
    va_end(ap);
    gpuws__log(GPUWS__LOG_DEBUG, "%s: %s", gpuws_status_name(s), gpuws__errbuf);
    return s;
}

gpuws_status gpuws__error_prefix(gpuws_status s, const char *fmt, ...)
{
    char old[GPUWS__ERRBUF];
    memcpy(old, gpuws__errbuf, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    gpuws__vset(old, fmt, ap);
    va_end(ap);
    return s;
}

static int gpuws__log_level_from_env(void)
{
    const char *v = gpuws__getenv("GPUWS_LOG");
    if (!v) return GPUWS__LOG_WARN;
    static const char *names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++)
        if (gpuws__strcasecmp(v, names[i]) == 0) return i;
    /* A typo would otherwise hide itself: the level it meant to raise stays silent. Two threads may both get here
     * (the level is computed without a lock); the flag keeps the warning to one line. */
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&warned))
        fprintf(stderr, "gpuws warn: GPUWS_LOG='%s' is not a log level (error, warn, info, debug); using warn\n", v);
    return GPUWS__LOG_WARN;
}

void gpuws__log(gpuws__log_level level, const char *fmt, ...)
{
    static atomic_int threshold = -1; /* every thread computes the same value */
    int t = atomic_load(&threshold);
    if (t < 0) atomic_store(&threshold, t = gpuws__log_level_from_env());
    if ((int)level > t) return;
    static const char *tags[] = { "error", "warn", "info", "debug" };
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpuws %s: %s\n", tags[level], line);
}

/* ---- utilities ---- */

int gpuws__strcasecmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = tolower((unsigned char)*a), cb = tolower((unsigned char)*b);
        if (ca != cb || ca == 0) return ca - cb;
    }
}

bool gpuws__icontains(const char *haystack, const char *needle)
{
    if (!needle || !*needle) return true;
    if (!haystack) return false;
    size_t nl = strlen(needle);
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == nl) return true;
    }
    return false;
}

void gpuws__strlcpy(char *dst, const char *src, size_t size)
{
    if (!size) return;
    size_t n = src ? strlen(src) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

uint64_t gpuws__fnv1a(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

const char *gpuws__getenv(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

/* ---- host memory with fault injection ---- */

/* gpuws__ allocations not yet freed: the sum of the shards. Each thread counts in a shard of its own line (threads
 * share one only past LIVE_SHARDS), so that the host steps' threads, which allocate and free hundreds of thousands
 * of small blocks, do not all write one cache line (which also holds the countdown that every allocation reads). */
#define LIVE_SHARDS 64
static struct {
    _Alignas(64) atomic_long n;
} alloc_live[LIVE_SHARDS];
static atomic_uint live_next;
static _Thread_local unsigned live_shard = LIVE_SHARDS; /* LIVE_SHARDS: not yet given */

static atomic_long *live_count(void)
{
    if (live_shard == LIVE_SHARDS) live_shard = atomic_fetch_add(&live_next, 1) % LIVE_SHARDS;
    return &alloc_live[live_shard].n;
}

static atomic_long fault_countdown; /* > 0: the allocation that brings it to 0 fails */
static atomic_bool fault_fired;
static atomic_bool fault_from_env;
static pthread_once_t fault_env_once = PTHREAD_ONCE_INIT;

static void fault_env_init(void)
{
    const char *v = gpuws__getenv("GPUWS_FAULT_ALLOC");
    if (!v) return;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n <= 0) return;
    atomic_store(&fault_from_env, true);
    atomic_store(&fault_countdown, n);
}

/* True when this step brings *countdown from 1 to 0 (the one it picked); then *fired is set. */
static bool countdown_hits(atomic_long *countdown, atomic_bool *fired)
{
    long c = atomic_load(countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(countdown, &c, c - 1)) {
            if (c != 1) return false;
            atomic_store(fired, true);
            return true;
        }
    }
    return false;
}

/* True when this allocation is the one the countdown picked. */
static bool fault_now(size_t bytes)
{
    pthread_once(&fault_env_once, fault_env_init);
    if (!countdown_hits(&fault_countdown, &fault_fired)) return false;
    if (atomic_load(&fault_from_env))
        gpuws__log(GPUWS__LOG_WARN, "fault injection (GPUWS_FAULT_ALLOC): failing an allocation of %zu bytes", bytes);
    return true;
}

/* Calls that took a path needing less device memory where the device refused a buffer. */
static atomic_ulong device_fallbacks;

void gpuws__device_fallback(void) { atomic_fetch_add(&device_fallbacks, 1); }

unsigned long gpuws__device_fallbacks(void) { return atomic_load(&device_fallbacks); }

/* The device's allocations (buffers a backend creates), counted down apart from the host's. */
static atomic_long device_countdown;
static atomic_bool device_fired;

bool gpuws__fault_device_now(void) { return countdown_hits(&device_countdown, &device_fired); }

bool gpuws__fault_device_countdown(long n)
{
    bool fired = atomic_exchange(&device_fired, false);
    atomic_store(&device_countdown, n > 0 ? n : 0);
    return fired;
}

/* This thread's host allocations that failed (gpuws__host_alloc_failures). */
static _Thread_local unsigned long host_failures;

static void *failed(void)
{
    host_failures++;
    return NULL;
}

static void *counted(void *p)
{
    if (p) atomic_fetch_add_explicit(live_count(), 1, memory_order_relaxed);
    else host_failures++;
    return p;
}

unsigned long gpuws__host_alloc_failures(void) { return host_failures; }

/* Large blocks (the extraction's records and lists, hundreds of MB at 8192^2, and each thread's lists of a few MB)
 * are asked for in transparent huge pages where the host gives them only on request (Linux's "madvise" mode):
 * mapping fresh memory 4 KiB at a time, and unmapping it again, costs more than the host steps' work on it. Only the
 * block's whole 2 MiB pages, which nothing has touched yet when the block is new, are affected: from 4 MiB every
 * block holds one. */
#define HUGE_PAGE ((uintptr_t)2 << 20)
#define HUGE_FROM ((size_t)4 << 20)

static void *large_pages(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && bytes >= HUGE_FROM) {
        const uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1),
                        e = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
        if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* advice: a refusal changes nothing */
    }
#else
    (void)bytes;
#endif
    return p;
}

void *gpuws__malloc(size_t bytes)
{
    return fault_now(bytes) ? failed() : counted(large_pages(malloc(bytes ? bytes : 1), bytes));
}

void *gpuws__calloc(size_t count, size_t size)
{
    size_t bytes;
    if (gpuws__mul_overflows(count, size, &bytes)) return failed();
    return fault_now(bytes) ? failed() : counted(large_pages(calloc(count ? count : 1, size ? size : 1), bytes));
}

void *gpuws__aligned_alloc(size_t alignment, size_t bytes)
{
    size_t rounded = (bytes + alignment - 1) & ~(alignment - 1);
    if (rounded < bytes || rounded == 0) return failed();
    return fault_now(bytes) ? failed() : counted(large_pages(aligned_alloc(alignment, rounded), rounded));
}

void *gpuws__realloc(void *p, size_t bytes)
{
    if (!p) return gpuws__malloc(bytes);
    if (fault_now(bytes)) return failed(); /* like realloc: p stays valid and allocated */
    void *q = realloc(p, bytes ? bytes : 1);
    return q ? large_pages(q, bytes) : failed();
}

char *gpuws__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = gpuws__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void gpuws__free(void *p)
{
    if (!p) return;
    atomic_fetch_sub_explicit(live_count(), 1, memory_order_relaxed);
    free(p);
}

bool gpuws__fault_alloc_countdown(long n)
{
    pthread_once(&fault_env_once, fault_env_init);
    bool fired = atomic_exchange(&fault_fired, false);
    atomic_store(&fault_countdown, n > 0 ? n : 0);
    return fired;
}

long gpuws__alloc_live(void)
{
    long n = 0;
    for (unsigned i = 0; i < LIVE_SHARDS; i++) n += atomic_load(&alloc_live[i].n);
    return n;
}
