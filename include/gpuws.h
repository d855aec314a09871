/* gpuws — portable GPU compute in C11.
 *
 * One API over three backends: CUDA (NVIDIA), OpenCL (any vendor, PoCL on CPUs) and a plain CPU backend that
 * runs scalar C references. Objects are opaque handles. Every call returns a gpuws_status (0 = OK, negative =
 * error) and, on error, leaves a human-readable detail in gpuws_last_error() (thread-local).
 *
 * Lifetimes: a context outlives every stream, event, buffer, program and kernel made from it; destroy those first.
 * Every destroy function accepts NULL. Built-in kernels (gpuws_kernel_get) belong to their context and need no
 * destroy; a kernel of a user program (gpuws/program.h) belongs to its program and dies with it.
 *
 * Threads: see docs/threads.md. In short: distinct contexts are independent; one context may be used from
 * several threads as long as each stream (and each event) is used by one thread at a time. An algorithm call
 * (gpuws/algorithms.h) on a stream that another thread's algorithm call is using fails at once with
 * GPUWS_ERR_INVALID_ARGUMENT ("... is in use by another thread") and changes nothing.
 */
#ifndef GPUWS_H
#define GPUWS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GPUWS_API
#else
#define GPUWS_API __attribute__((visibility("default")))
#endif

#define GPUWS_VERSION_MAJOR 0
#define GPUWS_VERSION_MINOR 2
#define GPUWS_VERSION_PATCH 0

/* ---- status codes ---------------------------------------------------------------------------------------- */

/* XX(name, value, description). The one list every status table is generated from. */
#define GPUWS_STATUS_MAP(XX)                                                                                           \
    XX(OK, 0, "success")                                                                                               \
    XX(ERR_INVALID_ARGUMENT, -1, "invalid argument")                                                                   \
    XX(ERR_OUT_OF_RANGE, -2, "offset or size out of range")                                                            \
    XX(ERR_OVERFLOW, -3, "size computation overflows")                                                                 \
    XX(ERR_OUT_OF_MEMORY, -4, "out of memory")                                                                         \
    XX(ERR_UNSUPPORTED, -5, "operation not supported by this backend or device")                                       \
    XX(ERR_BACKEND_UNAVAILABLE, -6, "backend not available")                                                           \
    XX(ERR_UNKNOWN_BACKEND, -7, "unknown backend name")                                                                \
    XX(ERR_NO_DEVICE, -8, "no such device")                                                                            \
    XX(ERR_WRONG_CONTEXT, -9, "object belongs to another context")                                                     \
    XX(ERR_KERNEL_NOT_FOUND, -10, "no kernel of that name")                                                            \
    XX(ERR_BUILD, -11, "kernel build failed")                                                                          \
    XX(ERR_LAUNCH_CONFIG, -12, "launch configuration exceeds the device's limits")                                     \
    XX(ERR_ARGUMENTS, -13, "kernel arguments do not match the kernel's parameters")                                    \
    XX(ERR_DEVICE, -14, "device or driver error")                                                                      \
    XX(ERR_NOT_READY, -15, "work not finished")                                                                        \
    XX(ERR_IO, -16, "input/output error")                                                                              \
    XX(ERR_FORMAT, -17, "malformed input file")                                                                        \
    XX(ERR_NOT_CONVERGED, -18, "iteration did not converge")                                                           \
    XX(ERR_INTERNAL, -19, "internal error (a gpuws bug)")

typedef enum gpuws_status {
#define GPUWS__STATUS_ENUM(name, value, text) GPUWS_##name = value,
    GPUWS_STATUS_MAP(GPUWS__STATUS_ENUM)
#undef GPUWS__STATUS_ENUM
} gpuws_status;

/* "GPUWS_ERR_OUT_OF_RANGE" for GPUWS_ERR_OUT_OF_RANGE; "GPUWS_UNKNOWN_STATUS" for a value not in the list. */
GPUWS_API const char *gpuws_status_name(gpuws_status s);
/* "offset or size out of range"; "unknown status" for a value not in the list. */
GPUWS_API const char *gpuws_status_string(gpuws_status s);
/* Detail of the last error on this thread: which argument, which sizes, which native error and code, the
 * OpenCL build log. Empty string if no call on this thread has failed. Valid until the next gpuws call. */
GPUWS_API const char *gpuws_last_error(void);

/* ---- backends and devices -------------------------------------------------------------------------------- */

typedef enum gpuws_backend_kind {
    GPUWS_BACKEND_CPU = 0,
    GPUWS_BACKEND_OPENCL = 1,
    GPUWS_BACKEND_CUDA = 2
} gpuws_backend_kind;
#define GPUWS_BACKEND_COUNT 3

typedef struct gpuws_backend_info {
    gpuws_backend_kind kind;
    const char *name; /* "cpu", "opencl", "cuda" */
    int built_in;     /* compiled into this library */
    int available;    /* built in, loads, and has at least one device */
    char reason[256]; /* why not available ("" when available) */
} gpuws_backend_info;

/* Probes one backend (loads its driver on first use). kind outside the enum → GPUWS_ERR_INVALID_ARGUMENT. */
GPUWS_API gpuws_status gpuws_backend_get_info(gpuws_backend_kind kind, gpuws_backend_info *info);
/* Case-insensitive name → kind; an unknown name gives GPUWS_ERR_UNKNOWN_BACKEND listing the valid names. */
GPUWS_API gpuws_status gpuws_backend_from_name(const char *name, gpuws_backend_kind *kind);

typedef enum gpuws_device_type { GPUWS_DEVICE_CPU = 0, GPUWS_DEVICE_GPU = 1, GPUWS_DEVICE_OTHER = 2 } gpuws_device_type;

typedef struct gpuws_device_info {
    gpuws_backend_kind backend;
    gpuws_device_type type;
    char name[128];
    char vendor[128];
    char platform[128]; /* OpenCL platform name; "CUDA x.y" or "host" elsewhere */
    char driver_version[64];
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes; /* largest single buffer */
    uint32_t compute_units;   /* SMs, OpenCL compute units, CPU cores */
    uint32_t max_block_size;  /* threads per block / work-items per work-group */
    uint32_t max_block_dims[3];
    uint64_t max_grid_dims[3];    /* blocks per grid dimension */
    uint64_t max_grid_blocks;     /* blocks per launch, all dimensions together: 2^32 - 1 on OpenCL devices (a device
                                    iterates over them, as PoCL does, so a larger grid would never end) and the CPU
                                    backend; CUDA: the product of max_grid_dims */
    uint64_t shared_mem_bytes;    /* shared/local memory one block may use */
    uint64_t shared_mem_per_unit; /* shared/local memory of one compute unit, all its resident blocks together
                                     (0 = not known: OpenCL reports it per work-group only; NVIDIA's OpenCL devices
                                     get it from their compute capability) */
    uint32_t warp_size;           /* warp / preferred sub-group or SIMD width; 1 on the CPU backend */
    int fp64;                     /* double precision kernels available */
    int unified_memory;           /* device memory is host memory (CPU, PoCL) */
} gpuws_device_info;

/* Devices of a backend, in index order: the index GPUWS_DEVICE and gpuws_context_options.device refer to.
 * For OpenCL: devices of all platforms, GPUs and accelerators first, then CPUs, each group in platform order;
 * platform_filter (a case-insensitive substring of the platform name, NULL = all) narrows the list. */
GPUWS_API gpuws_status gpuws_device_count(gpuws_backend_kind backend, const char *platform_filter, size_t *count);
GPUWS_API gpuws_status gpuws_device_get_info(gpuws_backend_kind backend, const char *platform_filter, size_t index,
                                             gpuws_device_info *info);

/* ---- contexts -------------------------------------------------------------------------------------------- */

typedef struct gpuws_context gpuws_context;
typedef struct gpuws_stream gpuws_stream;
typedef struct gpuws_event gpuws_event;
typedef struct gpuws_buffer gpuws_buffer;
typedef struct gpuws_kernel gpuws_kernel;

/* Options structs grow (every gpuws_*_options): the first member, struct_size, says how large the caller's struct is,
 * so a program built against this header keeps working with a later gpuws whose struct has more fields, and a
 * later program is told clearly when it asks an older gpuws for something it does not have:
 *  - Initialise with the struct's _OPTIONS_INIT macro (it sets struct_size = sizeof the struct and every default),
 *    then set the fields you need. A struct zero-initialised instead ({0}, or designated initialisers without the
 *    macro) has struct_size 0, which the library reads as the struct of gpuws 0.2, the first with struct_size.
 *  - The library reads the caller's first struct_size bytes and takes the defaults for fields beyond them.
 *  - Fields are only ever added at the end, with zero as their default. A struct_size larger than the library's
 *    own (a program built against a newer header, run with an older library) is accepted when the bytes the
 *    library does not know are all zero (the _OPTIONS_INIT macros and zero-initialisation leave them so), and is
 *    otherwise GPUWS_ERR_UNSUPPORTED ("this gpuws knows only the first N bytes"): a newer option is never silently
 *    ignored. A struct_size smaller than gpuws 0.2's struct is GPUWS_ERR_INVALID_ARGUMENT.
 * An options struct never holds another by value (that would fix the inner one's size): it points to it. */
typedef struct gpuws_context_options {
    size_t struct_size;  /* sizeof(gpuws_context_options); 0 = gpuws 0.2's struct (see above) */
    const char *backend; /* comma list tried in order ("opencl,cpu"); NULL: GPUWS_BACKEND, else cuda→opencl→cpu */
    int device;          /* index within the chosen backend; -1: GPUWS_DEVICE (a list's first), else 0; < -1: error */
    const char *opencl_platform; /* platform name substring; NULL: GPUWS_OPENCL_PLATFORM, else any */
} gpuws_context_options;
#define GPUWS_CONTEXT_OPTIONS_INIT                                                                                     \
    {                                                                                                                  \
        sizeof(gpuws_context_options), NULL, -1, NULL                                                                  \
    }

/* Creates a context on one device. options NULL = all fields from the environment (see above).
 * Rules: every name in the list must be a known backend (else GPUWS_ERR_UNKNOWN_BACKEND listing the valid
 * names); names are tried in order and the first available one with the requested device wins; if none is,
 * the error says "<name> not available: <reason>" for each. There is never a silent fallback to a backend
 * that was not named. On error *ctx is set to NULL. The context's tuning knobs come from GPUWS_TUNING, read
 * here once (docs/tuning.md). */
GPUWS_API gpuws_status gpuws_context_create(gpuws_context **ctx, const gpuws_context_options *options);
/* Contexts on several devices, for the calls that share work between devices (the _host calls' more_contexts).
 * options->device, when >= 0, is one context on that device. Otherwise GPUWS_DEVICE says which, within the backend
 * gpuws_context_create(options) chooses:
 *   unset, empty or one index: one context, gpuws_context_create's;
 *   "all": device 0 first, then every other device of that backend of the same type (GPU, CPU) and, on OpenCL, of
 *          the same platform, in index order (so PoCL's CPU device never joins NVIDIA's GPUs);
 *   "0,1,...": those device indices of the chosen backend, in that order; an index may repeat: two contexts on one
 *          device, which share its time (tests use this). gpuws_context_create takes a list's first index.
 * Fills ctxs[0 .. *count) (ctxs holds max entries); destroy them with gpuws_contexts_destroy. On error nothing is
 * left open and *count is 0: GPUWS_DEVICE not an index, a list of them nor "all", more devices than max →
 * GPUWS_ERR_INVALID_ARGUMENT; an index past the backend's devices → GPUWS_ERR_NO_DEVICE; gpuws_context_create's
 * errors. */
GPUWS_API gpuws_status gpuws_contexts_create(const gpuws_context_options *options, size_t max, gpuws_context **ctxs,
                                             size_t *count);
/* gpuws_context_destroy on each of the n contexts. */
GPUWS_API void gpuws_contexts_destroy(gpuws_context **ctxs, size_t n);
/* Waits for the context's work and releases it. Streams, buffers and events still live are released with it (a
 * warning names the buffers and events, which the caller leaked): afterwards destroying one of them is a no-op and
 * any other call given one is GPUWS_ERR_INVALID_ARGUMENT ("not a live ..."), as for the context's kernels. */
GPUWS_API void gpuws_context_destroy(gpuws_context *ctx);
GPUWS_API gpuws_status gpuws_context_get_device_info(const gpuws_context *ctx, gpuws_device_info *info);
GPUWS_API gpuws_status gpuws_context_get_backend(const gpuws_context *ctx, gpuws_backend_kind *kind);
/* The index of the context's device within its backend: the number options.device or GPUWS_DEVICE gives it,
 * counted as gpuws_device_get_info counts with the platform filter the context was created with
 * (GPUWS_OPENCL_PLATFORM or options.opencl_platform). Tells apart the contexts of gpuws_contexts_create on devices
 * whose gpuws_device_info is the same. */
GPUWS_API gpuws_status gpuws_context_get_device_index(const gpuws_context *ctx, size_t *index);
/* The stream used when a call is given a NULL stream. Owned by the context. */
GPUWS_API gpuws_status gpuws_context_get_default_stream(gpuws_context *ctx, gpuws_stream **stream);
/* Blocks until all work on all streams of the context has finished. */
GPUWS_API gpuws_status gpuws_context_synchronize(gpuws_context *ctx);

/* ---- streams and events ---------------------------------------------------------------------------------- */

/* An in-order queue: work on one stream runs in submission order; work on different streams may overlap. */
GPUWS_API gpuws_status gpuws_stream_create(gpuws_context *ctx, gpuws_stream **stream);
/* Waits for the stream's work, then releases it. The default stream cannot be destroyed (call is a no-op). */
GPUWS_API void gpuws_stream_destroy(gpuws_stream *stream);
GPUWS_API gpuws_status gpuws_stream_synchronize(gpuws_stream *stream);
/* The backend's own queue behind a stream, for ordering work with other libraries (DLPack's stream=, the CUDA array
 * interface): the cudaStream_t on CUDA (created non-blocking: it does not wait for the legacy default stream), the
 * cl_command_queue on OpenCL, and NULL with GPUWS_OK on the CPU backend, which runs work as it is submitted. Owned by
 * gpuws and valid while the stream lives. stream NULL is GPUWS_ERR_INVALID_ARGUMENT: the context's default stream
 * comes from gpuws_context_get_default_stream. */
GPUWS_API gpuws_status gpuws_stream_get_native(gpuws_stream *stream, void **native);

GPUWS_API gpuws_status gpuws_event_create(gpuws_context *ctx, gpuws_event **event);
GPUWS_API void gpuws_event_destroy(gpuws_event *event);
/* Marks the point in the stream after all work submitted so far. stream NULL = default stream. */
GPUWS_API gpuws_status gpuws_event_record(gpuws_event *event, gpuws_stream *stream);
GPUWS_API gpuws_status gpuws_event_synchronize(gpuws_event *event);
/* Milliseconds between two recorded events (waits for both). Events never recorded → GPUWS_ERR_INVALID_ARGUMENT. */
GPUWS_API gpuws_status gpuws_event_elapsed_ms(gpuws_event *start, gpuws_event *end, double *ms);

/* ---- buffers --------------------------------------------------------------------------------------------- */

/* Device memory of `bytes` bytes (bytes > 0). Contents are undefined until written. */
GPUWS_API gpuws_status gpuws_buffer_create(gpuws_context *ctx, size_t bytes, gpuws_buffer **buffer);
GPUWS_API void gpuws_buffer_destroy(gpuws_buffer *buffer);
GPUWS_API gpuws_status gpuws_buffer_get_size(const gpuws_buffer *buffer, size_t *bytes);
GPUWS_API gpuws_status gpuws_buffer_get_context(const gpuws_buffer *buffer, gpuws_context **ctx);

/* Sharing memory with other libraries without a copy (DLPack, CuPy, PyTorch): the CPU backend's buffers are host
 * memory and CUDA's are device memory of the context's device, each at an address; an OpenCL buffer has none (a
 * cl_mem), so on OpenCL both calls are GPUWS_ERR_UNSUPPORTED.
 * gpuws_buffer_get_pointer: the buffer's address, valid until it is destroyed. Work queued on the buffer may still
 * be running: synchronize its stream before another library reads or writes the memory. */
GPUWS_API gpuws_status gpuws_buffer_get_pointer(const gpuws_buffer *buffer, void **ptr);
/* A buffer over `bytes` bytes the caller owns at ptr: host memory on the CPU backend, device memory of the context's
 * device on CUDA (memory of another kind there is the caller's error and fails in the kernels that touch it). ptr
 * must be aligned to GPUWS_BUFFER_WRAP_ALIGNMENT bytes (the kernels' widest access) and bytes > 0
 * (GPUWS_ERR_INVALID_ARGUMENT). gpuws never frees the memory: it must outlive the buffer, whose destroy (or the
 * context's) releases only the handle. */
#define GPUWS_BUFFER_WRAP_ALIGNMENT 16
GPUWS_API gpuws_status gpuws_buffer_wrap(gpuws_context *ctx, void *ptr, size_t bytes, gpuws_buffer **buffer);

/* Blocking transfers, ordered after earlier work on the default stream. Every range is bounds-checked:
 * offset + bytes past the end is GPUWS_ERR_OUT_OF_RANGE and nothing is transferred. bytes == 0 is a no-op. */
GPUWS_API gpuws_status gpuws_buffer_write(gpuws_buffer *dst, size_t offset, const void *src, size_t bytes);
GPUWS_API gpuws_status gpuws_buffer_read(const gpuws_buffer *src, size_t offset, void *dst, size_t bytes);
/* Copies between buffers of one context, or between two ranges of one buffer that do not overlap: overlapping
 * ranges of one buffer are GPUWS_ERR_INVALID_ARGUMENT and nothing is copied (no backend's copy is a memmove). */
GPUWS_API gpuws_status gpuws_buffer_copy(gpuws_buffer *dst, size_t dst_offset, const gpuws_buffer *src,
                                         size_t src_offset, size_t bytes);
/* Repeats a pattern of 1, 2, 4, 8 or 16 bytes; offset and bytes must be multiples of pattern_size. */
GPUWS_API gpuws_status gpuws_buffer_fill(gpuws_buffer *dst, size_t offset, const void *pattern, size_t pattern_size,
                                         size_t bytes);

/* Asynchronous forms on a stream (NULL = default stream), checked as the blocking ones are. The host memory must
 * stay valid and unmodified until the stream is synchronized; they overlap with other work only when it was
 * allocated with gpuws_host_alloc. */
GPUWS_API gpuws_status gpuws_buffer_write_async(gpuws_stream *stream, gpuws_buffer *dst, size_t offset, const void *src,
                                                size_t bytes);
GPUWS_API gpuws_status gpuws_buffer_read_async(gpuws_stream *stream, const gpuws_buffer *src, size_t offset, void *dst,
                                               size_t bytes);
GPUWS_API gpuws_status gpuws_buffer_copy_async(gpuws_stream *stream, gpuws_buffer *dst, size_t dst_offset,
                                               const gpuws_buffer *src, size_t src_offset, size_t bytes);
GPUWS_API gpuws_status gpuws_buffer_fill_async(gpuws_stream *stream, gpuws_buffer *dst, size_t offset,
                                               const void *pattern, size_t pattern_size, size_t bytes);

/* Page-locked ("pinned") host memory for fast, overlappable transfers. Free with gpuws_host_free on the same
 * context; on backends without pinning it is ordinary aligned memory. */
GPUWS_API gpuws_status gpuws_host_alloc(gpuws_context *ctx, size_t bytes, void **ptr);
GPUWS_API void gpuws_host_free(gpuws_context *ctx, void *ptr);

/* ---- kernels --------------------------------------------------------------------------------------------- */

/* Looks a built-in kernel up by name ("vector_add_f32"). Kernels are named <algorithm>_<variant>; the OpenCL
 * backend builds the algorithm's program on first use (and caches it, see GPUWS_CACHE_DIR). The CPU backend has
 * no kernels: GPUWS_ERR_UNSUPPORTED. */
GPUWS_API gpuws_status gpuws_kernel_get(gpuws_context *ctx, const char *name, gpuws_kernel **kernel);

typedef struct gpuws_kernel_info {
    const char *name;
    uint32_t max_block_size; /* for this kernel on this device (register pressure may lower it) */
    uint64_t static_shared_bytes;
    uint32_t num_params; /* parameters as seen by gpuws_launch (local-memory arguments included) */
} gpuws_kernel_info;
GPUWS_API gpuws_status gpuws_kernel_get_info(const gpuws_kernel *kernel, gpuws_kernel_info *info);
/* The kernel's parameters as gpuws_arg_kind letters, in order, NUL-terminated ("Lfbb": a uint64, a float, two
 * buffers): what gpuws_launch checks the arguments against, so a binding can convert values to the right kinds.
 * '?' marks a parameter whose kind the library does not know. NULL for a NULL or dead kernel; valid while the
 * kernel lives. */
GPUWS_API const char *gpuws_kernel_signature(const gpuws_kernel *kernel);

typedef enum gpuws_arg_kind {
    GPUWS_ARG_BUFFER = 'b',
    GPUWS_ARG_I32 = 'i',
    GPUWS_ARG_U32 = 'u',
    GPUWS_ARG_I64 = 'l',
    GPUWS_ARG_U64 = 'L',
    GPUWS_ARG_F32 = 'f',
    GPUWS_ARG_F64 = 'd',
    /* Dynamic shared (CUDA) / local (OpenCL) memory of `local_bytes`. On OpenCL it binds the kernel's __local
     * pointer parameter at this position. On CUDA it is not a parameter: the regions are laid out in order,
     * each aligned to 16 bytes, in the kernel's extern __shared__ array, and their total is the launch's
     * dynamic shared memory. */
    GPUWS_ARG_LOCAL = 's'
} gpuws_arg_kind;

typedef struct gpuws_arg {
    gpuws_arg_kind kind;
    union {
        gpuws_buffer *buffer;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
        size_t local_bytes;
    } v;
} gpuws_arg;

static inline gpuws_arg gpuws_arg_buffer(gpuws_buffer *b)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_BUFFER;
    a.v.buffer = b;
    return a;
}
static inline gpuws_arg gpuws_arg_i32(int32_t x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_I32;
    a.v.i32 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_u32(uint32_t x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_U32;
    a.v.u32 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_i64(int64_t x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_I64;
    a.v.i64 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_u64(uint64_t x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_U64;
    a.v.u64 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_f32(float x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_F32;
    a.v.f32 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_f64(double x)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_F64;
    a.v.f64 = x;
    return a;
}
static inline gpuws_arg gpuws_arg_local(size_t bytes)
{
    gpuws_arg a;
    a.kind = GPUWS_ARG_LOCAL;
    a.v.local_bytes = bytes;
    return a;
}

typedef struct gpuws_launch_config {
    uint32_t grid[3];  /* blocks (work-groups) per dimension, each >= 1 */
    uint32_t block[3]; /* threads (work-items) per block per dimension, each >= 1 */
} gpuws_launch_config;

/* Enqueues the kernel on the stream (NULL = default). Checked before anything is enqueued: the block against the
 * device's and the kernel's limits, each grid dimension against max_grid_dims and the grid's blocks in all against
 * max_grid_blocks, each dimension's threads (grid x block) against what the host's size_t and the device address,
 * shared/local memory against the device's, and the arguments' number and kinds against the kernel's parameters.
 * A grid past a limit is GPUWS_ERR_LAUNCH_CONFIG with the sizes and totals in the message. */
GPUWS_API gpuws_status gpuws_launch(gpuws_stream *stream, gpuws_kernel *kernel, const gpuws_launch_config *config,
                                    const gpuws_arg *args, size_t nargs);

#ifdef __cplusplus
}
#endif

#include "gpuws/program.h" /* your own kernels, compiled at run time */

#endif /* GPUWS_H */
