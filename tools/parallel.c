#include "parallel.h"

#include "core/threads.h"

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

enum { MAX_PARTS = 64 };

size_t tool_parts(size_t n, size_t min_per_part)
{
    const unsigned cores = gpuws__cpu_count();
    size_t parts = cores > MAX_PARTS ? MAX_PARTS : cores;
    const size_t most = n / (min_per_part ? min_per_part : 1);
    if (parts > most) parts = most;
    return parts ? parts : 1;
}

void tool_parallel(size_t n, size_t parts, void (*fn)(void *user, size_t part, size_t lo, size_t hi), void *user)
{
    gpuws__run_ranges(n, parts < 1 ? 1 : parts > MAX_PARTS ? MAX_PARTS : parts, fn, user);
}

typedef struct {
    size_t n, chunks;
    void (*fn)(void *user, size_t chunk, size_t lo, size_t hi);
    void *user;
    atomic_size_t next;
} chunk_job;

/* c * n / chunks without the product's overflow */
static size_t chunk_start(const chunk_job *j, size_t c)
{
    return j->n / j->chunks * c + j->n % j->chunks * c / j->chunks;
}

static void chunk_share(void *arg, unsigned thread)
{
    chunk_job *j = arg;
    (void)thread;
    for (size_t c; (c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->chunks;)
        j->fn(j->user, c, chunk_start(j, c), chunk_start(j, c + 1));
}

void tool_parallel_chunks(size_t n, size_t chunks, void (*fn)(void *user, size_t chunk, size_t lo, size_t hi),
                          void *user)
{
    if (!chunks) return;
    chunk_job j = { n, chunks, fn, user, 0 };
    const size_t cores = tool_parts(chunks, 1);
    if (gpuws__run_threads((unsigned)cores, chunk_share, &j) != GPUWS_OK) chunk_share(&j, 0); /* on this thread */
}

double tool_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
