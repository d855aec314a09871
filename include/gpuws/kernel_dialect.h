/* The gpuws kernel dialect as plain C declarations, for editors and language servers (clangd, ccls, an IDE's C
 * parser) only. A kernel file that starts with
 *
 *     #include <gpuws/kernel_dialect.h>
 *
 * gets completion, signatures and diagnostics for GW_KERNEL, gw_u64, gw_global_idx, gw_barrier, the atomics and
 * the math functions when the editor parses it as C (docs/kernels.md, "Editors"). It changes nothing that a
 * backend compiles: gpuws_program_create drops this #include (the backend's own dialect is already in front of
 * the source), and were it compiled after the dialect all of it is skipped, because GW_KERNEL is then defined.
 *
 * What the editor sees is the portable dialect: GW_CUDA, GW_OPENCL and GW_CPU are not defined, GW_HAS_F64,
 * GW_HAS_ATOMIC64 and GW_HAS_PRINTF are. Qualifiers are empty (GW_SHARED is `static`), the index functions and
 * atomics are function declarations with the types the backends accept. Nothing here can be linked or run. */
#ifndef GW_KERNEL
#ifndef GPUWS_KERNEL_DIALECT_H
#define GPUWS_KERNEL_DIALECT_H

#include <stdint.h>
#include <stdio.h>
#include <tgmath.h> /* sqrt(float) is a float, as in OpenCL C, CUDA and the CPU backend */

#define GW_HAS_F64      1
#define GW_HAS_ATOMIC64 1
#define GW_HAS_PRINTF   1

/* ---- qualifiers ------------------------------------------------------------------------------------------ */
#define GW_KERNEL                 /* an entry point: GW_KERNEL void name(parameters) { ... } */
#define GW_DEVICE   static inline /* a helper function called by kernels */
#define GW_GLOBAL                 /* pointer into a buffer (a GPUWS_ARG_BUFFER argument) */
#define GW_LOCAL                  /* pointer parameter to dynamic shared memory (a gpuws_arg_local argument) */
#define GW_SHARED   static        /* an array in the block's shared memory, declared in a kernel's body */
#define GW_RESTRICT restrict

/* ---- types ----------------------------------------------------------------------------------------------- */
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

/* ---- indices (d = 0, 1 or 2) ----------------------------------------------------------------------------- */
gw_u64 gw_thread_idx(int d);  /* the work-item's index within its block */
gw_u64 gw_block_idx(int d);   /* the block's index within the grid */
gw_u64 gw_block_dim(int d);   /* work-items per block */
gw_u64 gw_grid_dim(int d);    /* blocks in the grid */
gw_u64 gw_global_idx(int d);  /* gw_block_idx(d) * gw_block_dim(d) + gw_thread_idx(d) */
gw_u64 gw_global_size(int d); /* gw_grid_dim(d) * gw_block_dim(d) */
void gw_barrier(void);        /* every work-item of the block waits here; shared and global memory fenced */

/* Macros in every backend: each argument may be evaluated twice. */
#define gw_min(a, b) ((a) < (b) ? (a) : (b))
#define gw_max(a, b) ((a) > (b) ? (a) : (b))
#define gw_printf    printf

/* ---- atomics on global or shared memory: each returns the value before the operation --------------------- */
gw_i32 gw_atomic_add_i32(volatile gw_i32 *p, gw_i32 v);
gw_u32 gw_atomic_add_u32(volatile gw_u32 *p, gw_u32 v);
gw_f32 gw_atomic_add_f32(volatile gw_f32 *p, gw_f32 v);
gw_i32 gw_atomic_min_i32(volatile gw_i32 *p, gw_i32 v);
gw_u32 gw_atomic_min_u32(volatile gw_u32 *p, gw_u32 v);
gw_i32 gw_atomic_max_i32(volatile gw_i32 *p, gw_i32 v);
gw_u32 gw_atomic_max_u32(volatile gw_u32 *p, gw_u32 v);
gw_u32 gw_atomic_cas_u32(volatile gw_u32 *p, gw_u32 cmp, gw_u32 v); /* stores v where *p == cmp */
gw_u32 gw_atomic_xchg_u32(volatile gw_u32 *p, gw_u32 v);
/* where GW_HAS_ATOMIC64 is defined */
gw_i64 gw_atomic_add_i64(volatile gw_i64 *p, gw_i64 v);
gw_u64 gw_atomic_add_u64(volatile gw_u64 *p, gw_u64 v);
gw_u64 gw_atomic_cas_u64(volatile gw_u64 *p, gw_u64 cmp, gw_u64 v);
gw_u64 gw_atomic_xchg_u64(volatile gw_u64 *p, gw_u64 v);

#endif
#endif
