/* Fork-join on host threads (threads.h): one place for the create and join loops. */
#include "threads.h"

#include "alloc.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#define ON_STACK 64 /* shares whose table lives on the caller's stack (1.5 KiB) */

typedef struct {
    void (*fn)(void *arg, unsigned i);
    void *arg;
    unsigned i;
    bool started;
    pthread_t thread;
} share;

unsigned gpuws__cpu_count(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > GPUWS__THREADS_MAX ? GPUWS__THREADS_MAX : (unsigned)n;
}

size_t gpuws__copy_threads(size_t bytes)
{
    const size_t cap = 16, cpus = gpuws__cpu_count(), t = bytes >> 20;
    return t < 1 ? 1 : t > cap ? (cap < cpus ? cap : cpus) : t > cpus ? cpus : t;
}

#define PAGE ((size_t)4096) /* the smallest page size of the hosts served; larger pages are touched more than once */

static void touch_pages(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    volatile char *p = arg;
    for (size_t i = lo; i < hi; i++) p[i * PAGE] = 0;
}

void gpuws__prefault(void *p, size_t bytes)
{
    if (!bytes) return;
    char *c = p;
    c[0] = 0, c[bytes - 1] = 0; /* the ends, which the pages below may miss */
    gpuws__run_ranges(bytes / PAGE, gpuws__copy_threads(bytes), touch_pages, p);
}

unsigned gpuws__threads_from_knob(int64_t knob)
{
    if (knob < 1) return gpuws__cpu_count(); /* auto */
    return knob > GPUWS__THREADS_MAX ? GPUWS__THREADS_MAX : (unsigned)knob;
}

static void *share_main(void *p)
{
    share *s = p;
    s->fn(s->arg, s->i);
    return NULL;
}

gpuws_status gpuws__run_threads(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    if (n > GPUWS__THREADS_MAX) n = GPUWS__THREADS_MAX;
    if (n <= 1) {
        if (n) fn(arg, 0);
        return GPUWS_OK;
    }
    share local[ON_STACK], *s = n <= ON_STACK ? local : gpuws__malloc(n * sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    for (unsigned i = 1; i < n; i++) {
        s[i].fn = fn;
        s[i].arg = arg;
        s[i].i = i;
        s[i].started = pthread_create(&s[i].thread, NULL, share_main, &s[i]) == 0;
    }
    fn(arg, 0);
    for (unsigned i = 1; i < n; i++) {
        if (s[i].started) pthread_join(s[i].thread, NULL);
        else fn(arg, i);
    }
    if (s != local) gpuws__free(s);
    return GPUWS_OK;
}

typedef struct {
    size_t n, parts;
    void (*fn)(void *arg, size_t part, size_t lo, size_t hi);
    void *arg;
} ranges;

/* k * n / parts, without overflowing */
static size_t range_start(const ranges *r, size_t k) { return r->n / r->parts * k + r->n % r->parts * k / r->parts; }

static void range_share(void *p, unsigned i)
{
    const ranges *r = p;
    r->fn(r->arg, i, range_start(r, i), range_start(r, (size_t)i + 1));
}

void gpuws__run_ranges(size_t n, size_t parts, void (*fn)(void *arg, size_t part, size_t lo, size_t hi), void *arg)
{
    ranges r = { n, parts > GPUWS__THREADS_MAX ? GPUWS__THREADS_MAX : parts, fn, arg };
    if (gpuws__run_threads((unsigned)r.parts, range_share, &r) == GPUWS_OK) return;
    for (unsigned i = 0; i < r.parts; i++) range_share(&r, i); /* no table for the threads: all on this one */
}
