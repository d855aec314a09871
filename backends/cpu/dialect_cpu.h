/* The gpuws kernel dialect on the CPU backend (C11, compiled by the system C compiler into a shared object).
 * Put in front of every user program by core/program.c; backends/cpu/cpu_program.c adds the entry points after
 * the source and runs them (docs/kernels.md, "CPU backend").
 *
 * A work-item's indices live in gw__it, one per OS thread: a block runs on one thread at a time, either as a
 * loop over its work-items (kernels without gw_barrier, which the compiler can vectorise) or as one fiber per
 * work-item that switches at each barrier. GW_SHARED arrays are thread-local statics, so all work-items of the
 * block being run on a thread see the same array. */
#define GW_CPU          1
#define GW_HAS_F64      1
#define GW_HAS_ATOMIC64 1
#define GW_HAS_PRINTF   1

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tgmath.h>

#define GW_KERNEL static inline __attribute__((always_inline))
#define GW_DEVICE static inline
#define GW_GLOBAL
#define GW_LOCAL
#define GW_SHARED   static _Thread_local __attribute__((aligned(64)))
#define GW_RESTRICT restrict

typedef int8_t gw_i8;
typedef uint8_t gw_u8;
typedef int16_t gw_i16;
typedef uint16_t gw_u16;
typedef int32_t gw_i32;
typedef uint32_t gw_u32;
typedef int64_t gw_i64;
typedef uint64_t gw_u64;
typedef float gw_f32;
typedef double gw_f64;

/* What the library hands an entry point (keep in step with backends/cpu/cpu_program.c). */
typedef struct gw__block {
    gw_u64 grid[3], block[3], bid[3];
    void *const *args; /* buffers and GW_LOCAL memory: the address; scalars: the address of the value */
} gw__block;
typedef struct gw__runtime {
    void (*barrier)(void); /* switches to the block's next work-item; returns when all have arrived */
} gw__runtime;

typedef struct gw__item {
    gw_u64 tid[3], bid[3], bdim[3], gdim[3];
} gw__item;
static _Thread_local gw__item gw__it;
static const gw__runtime *gw__rt;

#define GW__EXPORT __attribute__((visibility("default")))
GW__EXPORT void gw__init(const gw__runtime *rt);
GW__EXPORT void gw__init(const gw__runtime *rt) { gw__rt = rt; }

#define gw_thread_idx(d)  (gw__it.tid[d])
#define gw_block_idx(d)   (gw__it.bid[d])
#define gw_block_dim(d)   (gw__it.bdim[d])
#define gw_grid_dim(d)    (gw__it.gdim[d])
#define gw_global_idx(d)  (gw__it.bid[d] * gw__it.bdim[d] + gw__it.tid[d])
#define gw_global_size(d) (gw__it.gdim[d] * gw__it.bdim[d])
/* A work-item's thread index is saved on its own stack across the switch (the rest is the block's). The other
 * work-items of the block run on this thread, so no memory fence is needed: the call is one for the compiler. */
#define gw_barrier()                                                                                                   \
    do {                                                                                                               \
        const gw_u64 gw__t0 = gw__it.tid[0], gw__t1 = gw__it.tid[1], gw__t2 = gw__it.tid[2];                           \
        gw__rt->barrier();                                                                                             \
        gw__it.tid[0] = gw__t0, gw__it.tid[1] = gw__t1, gw__it.tid[2] = gw__t2;                                        \
    } while (0)

#define gw_min(a, b) ((a) < (b) ? (a) : (b))
#define gw_max(a, b) ((a) > (b) ? (a) : (b))
#define gw_printf    printf

/* Atomics return the value before the operation. Blocks run in parallel on all cores, so these are real atomics
 * (relaxed, as on GPUs). */
#define gw_atomic_add_i32(p, v)  __atomic_fetch_add((gw_i32 *)(p), (gw_i32)(v), __ATOMIC_RELAXED)
#define gw_atomic_add_u32(p, v)  __atomic_fetch_add((gw_u32 *)(p), (gw_u32)(v), __ATOMIC_RELAXED)
#define gw_atomic_add_i64(p, v)  __atomic_fetch_add((gw_i64 *)(p), (gw_i64)(v), __ATOMIC_RELAXED)
#define gw_atomic_add_u64(p, v)  __atomic_fetch_add((gw_u64 *)(p), (gw_u64)(v), __ATOMIC_RELAXED)
#define gw_atomic_xchg_u32(p, v) __atomic_exchange_n((gw_u32 *)(p), (gw_u32)(v), __ATOMIC_RELAXED)
#define gw_atomic_xchg_u64(p, v) __atomic_exchange_n((gw_u64 *)(p), (gw_u64)(v), __ATOMIC_RELAXED)
static inline __attribute__((unused)) gw_u32 gw_atomic_cas_u32(gw_u32 *p, gw_u32 cmp, gw_u32 v)
{
    __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
static inline __attribute__((unused)) gw_u64 gw_atomic_cas_u64(gw_u64 *p, gw_u64 cmp, gw_u64 v)
{
    __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
#define GW__ATOMIC_MINMAX(NAME, T, OP)                                                                                 \
    static inline __attribute__((unused)) T NAME(T *p, T v)                                                            \
    {                                                                                                                  \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                                  \
        while (!(v OP old) ? 0 : !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))      \
            ;                                                                                                          \
        return old;                                                                                                    \
    }
GW__ATOMIC_MINMAX(gw_atomic_min_i32, gw_i32, <)
GW__ATOMIC_MINMAX(gw_atomic_min_u32, gw_u32, <)
GW__ATOMIC_MINMAX(gw_atomic_max_i32, gw_i32, >)
GW__ATOMIC_MINMAX(gw_atomic_max_u32, gw_u32, >)
static inline __attribute__((unused)) gw_f32 gw_atomic_add_f32(gw_f32 *p, gw_f32 v)
{
    gw_u32 old = __atomic_load_n((gw_u32 *)p, __ATOMIC_RELAXED), upd;
    gw_f32 f;
    do {
        memcpy(&f, &old, 4);
        f += v;
        memcpy(&upd, &f, 4);
    } while (!__atomic_compare_exchange_n((gw_u32 *)p, &old, upd, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    memcpy(&f, &old, 4);
    return f;
}
