/* The gpuws kernel dialect on CUDA (NVRTC, C++). Put in front of every user program by core/program.c; the
 * backend adds an extern "C" __global__ entry per GW_KERNEL after the source (cuda_program.c), so a kernel's
 * own function is an inlined __device__ function and GW_LOCAL kernel parameters come from extern __shared__. */
#define GW_CUDA         1
#define GW_HAS_F64      1
#define GW_HAS_ATOMIC64 1
#define GW_HAS_PRINTF   1

#define GW_KERNEL static __device__ __forceinline__
#define GW_DEVICE static __device__ __forceinline__
#define GW_GLOBAL
#define GW_LOCAL
#define GW_SHARED   __shared__
#define GW_RESTRICT __restrict__

typedef signed char gw_i8;
typedef unsigned char gw_u8;
typedef short gw_i16;
typedef unsigned short gw_u16;
typedef int gw_i32;
typedef unsigned int gw_u32;
typedef long long gw_i64;
typedef unsigned long long gw_u64;
typedef float gw_f32;
typedef double gw_f64;

#define gw__dim(v, d)     ((gw_u64)((d) == 0 ? (v).x : (d) == 1 ? (v).y : (v).z))
#define gw_thread_idx(d)  gw__dim(threadIdx, d)
#define gw_block_idx(d)   gw__dim(blockIdx, d)
#define gw_block_dim(d)   gw__dim(blockDim, d)
#define gw_grid_dim(d)    gw__dim(gridDim, d)
#define gw_global_idx(d)  (gw_block_idx(d) * gw_block_dim(d) + gw_thread_idx(d))
#define gw_global_size(d) (gw_grid_dim(d) * gw_block_dim(d))
#define gw_barrier()      __syncthreads()

/* C's INFINITY and NAN, which OpenCL C and the CPU backend have and NVRTC (no <math.h>) lacks. */
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

#define gw_min(a, b) ((a) < (b) ? (a) : (b))
#define gw_max(a, b) ((a) > (b) ? (a) : (b))
#define gw_printf    printf

/* Atomics return the value before the operation; p points into global or shared memory. */
#define gw_atomic_add_i32(p, v)      atomicAdd((int *)(p), (int)(v))
#define gw_atomic_add_u32(p, v)      atomicAdd((unsigned *)(p), (unsigned)(v))
#define gw_atomic_add_f32(p, v)      atomicAdd((float *)(p), (float)(v))
#define gw_atomic_min_i32(p, v)      atomicMin((int *)(p), (int)(v))
#define gw_atomic_min_u32(p, v)      atomicMin((unsigned *)(p), (unsigned)(v))
#define gw_atomic_max_i32(p, v)      atomicMax((int *)(p), (int)(v))
#define gw_atomic_max_u32(p, v)      atomicMax((unsigned *)(p), (unsigned)(v))
#define gw_atomic_cas_u32(p, cmp, v) atomicCAS((unsigned *)(p), (unsigned)(cmp), (unsigned)(v))
#define gw_atomic_xchg_u32(p, v)     atomicExch((unsigned *)(p), (unsigned)(v))
#define gw_atomic_add_u64(p, v)      atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define gw_atomic_add_i64(p, v)      ((gw_i64)atomicAdd((unsigned long long *)(p), (unsigned long long)(gw_i64)(v)))
#define gw_atomic_cas_u64(p, cmp, v)                                                                                   \
    atomicCAS((unsigned long long *)(p), (unsigned long long)(cmp), (unsigned long long)(v))
#define gw_atomic_xchg_u64(p, v) atomicExch((unsigned long long *)(p), (unsigned long long)(v))

/* Math: CUDA's device library has OpenCL's names (sqrt, exp, log, sin, cos, tanh, pow, hypot, fabs, fmin, fmax,
 * floor, ceil, fma) for float and double alike. */
