/* Fibers for the CPU backend's user kernels: one per work-item of a block that calls gw_barrier, all on one OS
 * thread, switched by hand at each barrier. A switch saves only what the C calling convention asks a callee to
 * keep, so it costs a few nanoseconds (x86-64; elsewhere ucontext, which also saves the signal mask). */
#ifndef GPUWS_CPU_FIBER_H
#define GPUWS_CPU_FIBER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cpu_fiber cpu_fiber;
typedef void (*cpu_fiber_fn)(void *arg);

/* A set of fibers with their stacks (each `stack_bytes`, with a guard page below it), reused from block to block.
 * Grows on demand; freed with cpu_fibers_free. */
typedef struct cpu_fibers {
    cpu_fiber *f;
    size_t n, cap;
    void *stacks; /* one mapping: cap × (guard + stack) */
    size_t stack_bytes;
    void *sched; /* the scheduler's saved context */
    size_t cur;
} cpu_fibers;

/* Runs fn(args[i]) for i in [0, n) as fibers: each runs until it calls cpu_fibers_yield (the barrier) or returns;
 * when every live fiber has yielded or returned, the live ones resume in order. Returns when all have returned.
 * false (nothing run) when stacks for n fibers cannot be had. */
bool cpu_fibers_run(cpu_fibers *fs, size_t n, cpu_fiber_fn fn, void *const *args);
/* From inside a fiber of fs: back to the scheduler until the other fibers arrive. */
void cpu_fibers_yield(cpu_fibers *fs);
void cpu_fibers_free(cpu_fibers *fs);

#endif
