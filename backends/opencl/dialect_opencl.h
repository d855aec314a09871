/* The gpuws kernel dialect on OpenCL C 1.2. Put in front of every user program by core/program.c. The dialect is
 * OpenCL's own model, so this is mostly names: GW_KERNEL is __kernel, GW_LOCAL pointers are __local. */
#define GW_OPENCL 1
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GW_HAS_F64 1
#endif
#if defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define GW_HAS_ATOMIC64 1
#endif
#if __OPENCL_C_VERSION__ >= 120
#define GW_HAS_PRINTF 1
#endif

#define GW_KERNEL   __kernel
#define GW_DEVICE   static inline
#define GW_GLOBAL   __global
#define GW_LOCAL    __local
#define GW_SHARED   __local
#define GW_RESTRICT restrict

typedef char gw_i8;
typedef uchar gw_u8;
typedef short gw_i16;
typedef ushort gw_u16;
typedef int gw_i32;
typedef uint gw_u32;
typedef long gw_i64;
typedef ulong gw_u64;
typedef float gw_f32;
#ifdef GW_HAS_F64
typedef double gw_f64;
#endif

#define gw_thread_idx(d)  ((gw_u64)get_local_id(d))
#define gw_block_idx(d)   ((gw_u64)get_group_id(d))
#define gw_block_dim(d)   ((gw_u64)get_local_size(d))
#define gw_grid_dim(d)    ((gw_u64)get_num_groups(d))
#define gw_global_idx(d)  ((gw_u64)get_global_id(d))
#define gw_global_size(d) ((gw_u64)get_global_size(d))
#define gw_barrier()      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

#define gw_min(a, b) ((a) < (b) ? (a) : (b))
#define gw_max(a, b) ((a) > (b) ? (a) : (b))
#define gw_printf    printf

/* Atomics return the value before the operation; OpenCL's built-ins take global and local pointers alike. */
#define gw_atomic_add_i32(p, v)      atomic_add((p), (int)(v))
#define gw_atomic_add_u32(p, v)      atomic_add((p), (uint)(v))
#define gw_atomic_min_i32(p, v)      atomic_min((p), (int)(v))
#define gw_atomic_min_u32(p, v)      atomic_min((p), (uint)(v))
#define gw_atomic_max_i32(p, v)      atomic_max((p), (int)(v))
#define gw_atomic_max_u32(p, v)      atomic_max((p), (uint)(v))
#define gw_atomic_cas_u32(p, cmp, v) atomic_cmpxchg((p), (uint)(cmp), (uint)(v))
#define gw_atomic_xchg_u32(p, v)     atomic_xchg((p), (uint)(v))
/* OpenCL 1.2 has no float atomic add: a compare-and-swap loop, one function per address space. */
static inline float __attribute__((overloadable)) gw_atomic_add_f32(volatile __global float *p, float v)
{
    union {
        uint u;
        float f;
    } old, upd;
    do {
        old.f = *p;
        upd.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, old.u, upd.u) != old.u);
    return old.f;
}
static inline float __attribute__((overloadable)) gw_atomic_add_f32(volatile __local float *p, float v)
{
    union {
        uint u;
        float f;
    } old, upd;
    do {
        old.f = *p;
        upd.f = old.f + v;
    } while (atomic_cmpxchg((volatile __local uint *)p, old.u, upd.u) != old.u);
    return old.f;
}
#ifdef GW_HAS_ATOMIC64
#define gw_atomic_add_u64(p, v)      atom_add((p), (ulong)(v))
#define gw_atomic_add_i64(p, v)      atom_add((p), (long)(v))
#define gw_atomic_cas_u64(p, cmp, v) atom_cmpxchg((p), (ulong)(cmp), (ulong)(v))
#define gw_atomic_xchg_u64(p, v)     atom_xchg((p), (ulong)(v))
#endif
