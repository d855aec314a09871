/* Fork-join on host threads (threads.h): one place for the create and join loops. */
#define _GNU_SOURCE /* sched_getaffinity and CPU_COUNT */
#include "threads.h"

#include "alloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
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
    long n = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef __linux__
    /* fewer where the process may not run on all of them: taskset, a container's CPUs, an MPI launcher's binding
     * (more threads than those would take turns on them) */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int allowed = CPU_COUNT(&set);
        if (allowed >= 1 && (n < 1 || allowed < n)) n = allowed;
    }
#endif
    return n < 1 ? 1u : n > GPUWS__THREADS_MAX ? GPUWS__THREADS_MAX : (unsigned)n;
}

size_t gpuws__copy_threads(size_t bytes)
{
    const size_t cap = 16, cpus = gpuws__cpu_count(), t = bytes >> 20;
    return t < 1 ? 1 : t > cap ? (cap < cpus ? cap : cpus) : t > cpus ? cpus : t;
}

typedef struct {
    char *dst;
    const char *src; /* NULL: fill with byte */
    unsigned char byte;
} copy_job;

static void copy_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const copy_job *j = arg;
    if (j->src) memcpy(j->dst + lo, j->src + lo, hi - lo);
    else memset(j->dst + lo, j->byte, hi - lo);
}

void gpuws__copy_bytes(void *dst, const void *src, unsigned char byte, size_t n)
{
    copy_job j = { dst, src, byte };
    gpuws__run_ranges(n, gpuws__copy_threads(n), copy_range, &j);
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

size_t gpuws__work_parts(size_t threads, double work, double least, size_t items)
{
    size_t parts = threads;
    if ((double)parts * least > work) parts = (size_t)(work / least);
    parts = parts < items ? parts : items;
    return parts ? parts : 1;
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

static int64_t ns_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

bool gpuws__spin(bool (*ready)(const void *arg), const void *arg)
{
    const int64_t end = ns_now() + GPUWS__SPIN_NS;
    for (unsigned i = 0;; i++) {
        if (ready(arg)) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
        if ((i & 63) == 63 && ns_now() > end) return false;
    }
}

/* ---- the kept threads ----
 * A call of up to ON_STACK shares runs them on threads kept from earlier calls (thread k runs share k), which a call
 * wakes instead of starting and joining new ones: a large image's host steps make a few dozen fork-joins, and a
 * small image's are short enough for the starts to count (20 images of 2048^2 through gpuws sources on the H200
 * host: 1.25-1.39 s with kept threads, 1.42-1.52 s without, builds alternated). The threads are kept in KEPT_SETS
 * sets, one call holding a set at a time: calls at the same moment (another thread's, or a share's own) take the
 * other sets, and only a call that finds every set held starts threads of its own. With one set, a call made inside
 * a share (the extraction from host memory copies each device's bands through staging threads, inside the split
 * over its devices) started a dozen threads for every staging block: 2,000 starts a device on a 4 GiB image. A
 * child process of fork has none of them: it starts afresh. The kept threads wait for work until the process ends.
 * They sleep as soon as their share is done, unlike the CPU backend's kernel pool (gpuws__spin): watching for the
 * next round made gpuws sources' many-files pipeline slower, its other threads then competing with 15 watching
 * ones, and gained no clear time on one image's host steps. */
#define KEPT_SETS 4

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    bool busy;           /* a call holds the set */
    unsigned threads;    /* its threads, shares 1 .. threads */
    unsigned long round; /* the calls so far: a thread waits for the next */
    void (*fn)(void *arg, unsigned i);
    void *arg;
    unsigned shares; /* the round's shares on the set's threads: 1 .. shares */
    unsigned left;   /* of those, not yet done */
} kept_set;

static kept_set kept[KEPT_SETS];
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void kept_reset(void)
{
    for (unsigned s = 0; s < KEPT_SETS; s++) {
        kept_set *k = &kept[s];
        pthread_mutex_init(&k->lock, NULL);
        pthread_cond_init(&k->wake, NULL);
        pthread_cond_init(&k->idle, NULL);
        k->busy = false;
        k->threads = 0;
        k->round = 0;
    }
}

static void kept_init(void)
{
    kept_reset();
    pthread_atfork(NULL, NULL, kept_reset); /* in a child of fork: the kept threads are the parent's */
}

/* A kept thread's set and share number, in its start argument. */
#define KEPT_ARG(set, k) ((void *)(uintptr_t)((uintptr_t)(set) << 16 | (k)))

static void *kept_main(void *p)
{
    kept_set *ks = &kept[(uintptr_t)p >> 16];
    const unsigned k = (unsigned)((uintptr_t)p & 0xffff);
    pthread_mutex_lock(&ks->lock);
    unsigned long seen = ks->round - 1; /* started for the round under way */
    for (;;) {
        while (ks->round == seen) pthread_cond_wait(&ks->wake, &ks->lock);
        seen = ks->round;
        if (k > ks->shares) continue;
        void (*fn)(void *, unsigned) = ks->fn;
        void *arg = ks->arg;
        pthread_mutex_unlock(&ks->lock);
        fn(arg, k);
        pthread_mutex_lock(&ks->lock);
        if (--ks->left == 0) pthread_cond_signal(&ks->idle);
    }
    return NULL;
}

/* Runs the n shares on a set of kept threads (starting those missing); false, running nothing, when other calls hold
 * every set. */
static bool run_kept(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    pthread_once(&kept_once, kept_init);
    kept_set *ks = NULL;
    unsigned set = 0;
    for (; set < KEPT_SETS && !ks; set++) {
        pthread_mutex_lock(&kept[set].lock);
        if (!kept[set].busy) ks = &kept[set]; /* taken, its lock held */
        else pthread_mutex_unlock(&kept[set].lock);
    }
    if (!ks) return false;
    set--;
    ks->busy = true;
    ks->round++;
    ks->fn = fn, ks->arg = arg;
    pthread_attr_t attr;
    const bool attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (attr_ok && ks->threads < n - 1) { /* a new thread takes part in this round (kept_main) */
        pthread_t t;
        if (pthread_create(&t, &attr, kept_main, KEPT_ARG(set, ks->threads + 1)) != 0) break;
        ks->threads++;
    }
    if (attr_ok) pthread_attr_destroy(&attr);
    const unsigned on_kept = ks->threads < n - 1 ? ks->threads : n - 1;
    ks->shares = on_kept, ks->left = on_kept;
    pthread_cond_broadcast(&ks->wake);
    pthread_mutex_unlock(&ks->lock);
    fn(arg, 0);
    for (unsigned i = on_kept + 1; i < n; i++) fn(arg, i); /* no thread for them: here, after share 0 */
    pthread_mutex_lock(&ks->lock);
    while (ks->left) pthread_cond_wait(&ks->idle, &ks->lock);
    ks->busy = false;
    pthread_mutex_unlock(&ks->lock);
    return true;
}

gpuws_status gpuws__run_threads(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    if (n > GPUWS__THREADS_MAX) n = GPUWS__THREADS_MAX;
    if (n <= 1) {
        if (n) fn(arg, 0);
        return GPUWS_OK;
    }
    if (n <= ON_STACK && run_kept(n, fn, arg)) return GPUWS_OK;
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
