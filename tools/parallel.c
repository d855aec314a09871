#include "parallel.h"

#include "core/threads.h"

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

double tool_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
