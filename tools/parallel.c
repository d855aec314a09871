#include "parallel.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

enum { MAX_PARTS = 64 };

size_t tool_parts(size_t n, size_t min_per_part)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t parts = cores < 1 ? 1 : cores > MAX_PARTS ? MAX_PARTS : (size_t)cores;
    const size_t most = n / (min_per_part ? min_per_part : 1);
    if (parts > most) parts = most;
    return parts ? parts : 1;
}

typedef struct {
    void (*fn)(void *user, size_t part, size_t lo, size_t hi);
    void *user;
    size_t part, lo, hi;
} range;

static void *run_range(void *p)
{
    const range *r = p;
    r->fn(r->user, r->part, r->lo, r->hi);
    return NULL;
}

void tool_parallel(size_t n, size_t parts, void (*fn)(void *user, size_t part, size_t lo, size_t hi), void *user)
{
    if (parts < 1) parts = 1;
    if (parts > MAX_PARTS) parts = MAX_PARTS;
    range r[MAX_PARTS];
    pthread_t t[MAX_PARTS];
    int started[MAX_PARTS] = { 0 };
    for (size_t k = 0; k < parts; k++) {
        /* k * n / parts, without overflowing */
        r[k] = (range){ fn, user, k, n / parts * k + n % parts * k / parts, 0 };
        if (k) r[k - 1].hi = r[k].lo;
    }
    r[parts - 1].hi = n;
    for (size_t k = 1; k < parts; k++) started[k] = pthread_create(&t[k], NULL, run_range, &r[k]) == 0;
    run_range(&r[0]);
    for (size_t k = 1; k < parts; k++) {
        if (started[k]) pthread_join(t[k], NULL);
        else run_range(&r[k]);
    }
}

double tool_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
