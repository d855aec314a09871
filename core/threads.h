/* Fork-join on host threads, for the host steps of the drivers (gpuws_extract's catalogue). Never installed. */
#ifndef GPUWS_CORE_THREADS_H
#define GPUWS_CORE_THREADS_H

#include "gpuws.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPUWS__THREADS_MAX 1024 /* the most shares of one gpuws__run_threads */

/* The CPUs this process may run on (the online ones less those its affinity leaves out), at least 1. */
unsigned gpuws__cpu_count(void);

/* Threads for a host copy of `bytes` (memcpy, or a copy through a table): one per MiB, at most 16 and never more
 * than gpuws__cpu_count, at least 1. One core's memcpy is slower than a pinned PCIe transfer (on a 32-core H200 host
 * 10 GB/s on one thread, 33 on four, 60 on sixteen), so the copies into and out of pinned staging use several. */
size_t gpuws__copy_threads(size_t bytes);

/* memcpy(dst, src, n), or memset(dst, byte, n) when src is NULL, on gpuws__copy_threads(n) threads. */
void gpuws__copy_bytes(void *dst, const void *src, unsigned char byte, size_t n);

/* Writes a byte of every page of [p, p + bytes) on gpuws__copy_threads(bytes) threads, so that the kernel maps the
 * pages of fresh memory there rather than, one page at a time, inside the next single-threaded copy into it (a
 * driver's read of device memory into pageable memory). */
void gpuws__prefault(void *p, size_t bytes);

/* Parts for `work` units of independent work (pixels, multiply-adds) on up to `threads` threads: as many as give each
 * part at least `least` units, which pays for a thread's wake, and no more than `items` (the rows or meshes divided);
 * at least 1. */
size_t gpuws__work_parts(size_t threads, double work, double least, size_t items);

/* A NUMBER knob of threads (auto|1..N): the online CPUs for auto, else its value, in 1..GPUWS__THREADS_MAX. */
unsigned gpuws__threads_from_knob(int64_t knob);

/* Waking a thread asleep on a condition variable costs tens of microseconds (a futex and the scheduler), as much as
 * a small step's work: a thread that expects its next work soon watches for it this long before it sleeps. */
#define GPUWS__SPIN_NS 100000

/* Whether ready(arg) holds within GPUWS__SPIN_NS of asking it again and again (a pause between asks). */
bool gpuws__spin(bool (*ready)(const void *arg), const void *arg);

/* Runs fn(arg, i) for i = 0 .. n - 1 at once and returns when every share has returned: share 0 on the calling
 * thread, each other on a thread of its own (kept for the next call when n <= 64 and no other call holds them). A
 * share whose thread cannot be created runs on the calling thread after share 0, so the shares must never wait for
 * one another (they may divide work through atomics, as a queue that any of them drains alone); a host that refuses
 * threads then runs them all, one after another. n is capped at GPUWS__THREADS_MAX; n 0 runs nothing.
 * GPUWS_ERR_OUT_OF_MEMORY (no message, nothing run) when the table of more than a few dozen threads cannot be
 * allocated. */
gpuws_status gpuws__run_threads(unsigned n, void (*fn)(void *arg, unsigned i), void *arg);

/* Cuts n items into `parts` consecutive ranges and runs fn(arg, part, lo, hi) for part = 0 .. parts - 1 through
 * gpuws__run_threads: the ranges [lo, hi) cover [0, n) in order, part k from k * n / parts, so their sizes differ by
 * at most one (some are empty when parts > n). parts is capped at GPUWS__THREADS_MAX; parts 0 runs nothing. Never
 * fails: when the threads' table cannot be allocated the ranges run one after another on the calling thread. */
void gpuws__run_ranges(size_t n, size_t parts, void (*fn)(void *arg, size_t part, size_t lo, size_t hi), void *arg);

#endif
