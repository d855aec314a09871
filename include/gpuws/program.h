/* Your own kernels: one source in the gpuws kernel dialect, compiled at run time on every backend.
 *
 *   GW_KERNEL void axpy(gw_u64 n, gw_f32 a, GW_GLOBAL const gw_f32 *x, GW_GLOBAL gw_f32 *y) {
 *       gw_u64 i = gw_global_idx(0);
 *       if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *
 * gpuws_program_create compiles such a source for the context's device: with NVRTC on CUDA, clBuildProgram on
 * OpenCL, and the system C compiler on the CPU backend (blocks run in parallel on all cores; barriers and shared
 * memory work). gpuws_program_get_kernel then gives a gpuws_kernel that gpuws_launch runs with the usual grid,
 * block, dynamic shared memory and argument checks. Builds are cached on disk (GPUWS_CACHE_DIR). The dialect is
 * described in docs/kernels.md; gpuws/kernel_dialect.h declares it for editors.
 *
 * Lifetimes: a program belongs to its context (destroy it before the context; the context destroys leftovers);
 * its kernels belong to the program and die with it. Launching a kernel of a destroyed program is
 * GPUWS_ERR_INVALID_ARGUMENT, never a crash. Kernels from the generators below belong to the context. */
#ifndef GPUWS_PROGRAM_H
#define GPUWS_PROGRAM_H

#include "../gpuws.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuws_program gpuws_program;

/* An in-memory file the source may #include "name" (or <name>). #include <gpuws/kernel_dialect.h> needs none:
 * that header is for editors and the library drops the line. */
typedef struct gpuws_program_header {
    const char *name;
    const char *source;
} gpuws_program_header;

enum {
    GPUWS_PROGRAM_NO_CACHE = 1u << 0,  /* neither read nor write the on-disk cache */
    GPUWS_PROGRAM_DEBUG = 1u << 1,     /* device debug information, no optimisation (-G, -g -O0) */
    GPUWS_PROGRAM_FAST_MATH = 1u << 2, /* let the compiler trade IEEE accuracy for speed */
};

typedef struct gpuws_program_options {
    size_t struct_size;         /* sizeof(gpuws_program_options); 0 = gpuws 0.2's (gpuws.h: options grow) */
    const char *file_name;      /* named in diagnostics (default "kernel.gw") */
    const char *const *defines; /* "NAME" or "NAME=VALUE" */
    size_t num_defines;
    const gpuws_program_header *headers; /* files #include can name */
    size_t num_headers;
    unsigned flags; /* GPUWS_PROGRAM_* */
} gpuws_program_options;
#define GPUWS_PROGRAM_OPTIONS_INIT                                                                                     \
    {                                                                                                                  \
        sizeof(gpuws_program_options), NULL, NULL, 0, NULL, 0, 0u                                                      \
    }

/* Compiles source (NUL-terminated) for ctx's device. options NULL = defaults.
 * On success *program is a built program. On a compile error the status is GPUWS_ERR_BUILD and, unlike every
 * other failing call, *program is set: a failed program whose only uses are gpuws_program_log,
 * gpuws_program_source and gpuws_program_destroy. gpuws_last_error() then starts with the first diagnostic as
 * "file_name:line: message", with the line numbers of your source. On any other error *program is NULL.
 * A backend that cannot compile (no NVRTC, no C compiler) gives GPUWS_ERR_BACKEND_UNAVAILABLE with the reason. */
GPUWS_API gpuws_status gpuws_program_create(gpuws_context *ctx, const char *source,
                                            const gpuws_program_options *options, gpuws_program **program);
/* The compiler's whole output, warnings included; "" when it printed nothing, and for a program loaded from the
 * on-disk cache (no compiler ran). NULL for a NULL or dead program. */
GPUWS_API const char *gpuws_program_log(const gpuws_program *program);
/* The exact text given to the backend's compiler (the dialect's definitions, then your source). */
GPUWS_API const char *gpuws_program_source(const gpuws_program *program);
/* A GW_KERNEL of the program by name. An unknown name is GPUWS_ERR_KERNEL_NOT_FOUND listing the program's
 * kernels. The same name gives the same kernel each time. */
GPUWS_API gpuws_status gpuws_program_get_kernel(gpuws_program *program, const char *name, gpuws_kernel **kernel);
/* Waits for nothing: destroy a program only when no launch of its kernels is still running or queued. */
GPUWS_API void gpuws_program_destroy(gpuws_program *program);

/* ---- generators (CuPy's ElementwiseKernel and ReductionKernel) ------------------------------------------- */

/* A kernel that runs `operation` (a statement on element i, e.g. "z[i] = a * x[i] + y[i]") for i in [0, n).
 * params is a C parameter list in the dialect's types ("const gw_f32 *x, const gw_f32 *y, gw_f32 *z, gw_f32 a");
 * pointers are buffers. preamble (may be NULL) is code placed before the kernel (GW_DEVICE helpers). The kernel
 * belongs to the context; the same texts give the same kernel. Launch it with gpuws_elementwise_launch. */
GPUWS_API gpuws_status gpuws_elementwise_create(gpuws_context *ctx, const char *params, const char *operation,
                                                const char *preamble, gpuws_kernel **kernel);
/* Runs an elementwise kernel over n elements (n >= 0; 0 is a no-op); args match params, in order. The library
 * chooses grid and block. */
GPUWS_API gpuws_status gpuws_elementwise_launch(gpuws_stream *stream, gpuws_kernel *kernel, uint64_t n,
                                                const gpuws_arg *args, size_t nargs);

typedef struct gpuws_reduction gpuws_reduction;
/* A reduction over i in [0, n): out = reduce(...reduce(neutral, map(0)), ..., map(n-1)) in a fixed tree order.
 * out_type: gw_i32, gw_u32, gw_i64, gw_u64, gw_f32 or gw_f64; neutral: an expression of that type (the identity
 * of reduce_expr); map_expr: an expression of element i and the params ("x[i] * x[i]"); reduce_expr: an
 * expression of a and b ("a + b", "gw_max(a, b)"); params and preamble as for gpuws_elementwise_create. The
 * result is deterministic for a given device and n. Belongs to the context; the same texts give the same
 * reduction. */
GPUWS_API gpuws_status gpuws_reduction_create(gpuws_context *ctx, const char *out_type, const char *neutral,
                                              const char *map_expr, const char *reduce_expr, const char *params,
                                              const char *preamble, gpuws_reduction **reduction);
/* Enqueues the reduction of n elements (n = 0 gives neutral); writes one out_type value at byte 0 of out. */
GPUWS_API gpuws_status gpuws_reduction_launch(gpuws_stream *stream, gpuws_reduction *reduction, uint64_t n,
                                              const gpuws_arg *args, size_t nargs, gpuws_buffer *out);

#ifdef __cplusplus
}
#endif
#endif
