/* Host work of the commands split over the machine's cores: a loop over [0, n) cut into consecutive ranges, one per
 * thread or taken by the threads as they come, and a wall clock for the step times the commands print. */
#ifndef GPUWS_TOOLS_PARALLEL_H
#define GPUWS_TOOLS_PARALLEL_H

#include <stddef.h>

/* How many ranges to cut n items into: one per online core (at most 64), fewer so that each range has at least
 * min_per_part items; at least 1. */
size_t tool_parts(size_t n, size_t min_per_part);

/* Calls fn(user, part, lo, hi) for part = 0 .. parts - 1, the ranges [lo, hi) covering [0, n) in order, each on a
 * thread of its own (the calling thread runs part 0, and any part whose thread cannot be started); returns when
 * all are done. */
void tool_parallel(size_t n, size_t parts, void (*fn)(void *user, size_t part, size_t lo, size_t hi), void *user);

/* Calls fn(user, chunk, lo, hi) for chunk = 0 .. chunks - 1, the ranges [lo, hi) covering [0, n) in order, the
 * chunks taken one at a time by the cores' threads as each finishes the one before: for work whose cost differs from
 * range to range, or threads that do not run at the same speed, which one range per thread leaves waiting for the
 * slowest. Returns when all are done. */
void tool_parallel_chunks(size_t n, size_t chunks, void (*fn)(void *user, size_t chunk, size_t lo, size_t hi),
                          void *user);

/* Milliseconds on the monotonic clock. */
double tool_now_ms(void);

#endif
