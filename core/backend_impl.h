/* The contract between core/ and backends/. Never installed.
 *
 * Core validates every argument (live handles, same context, ranges, launch limits, argument kinds) before it
 * calls a backend, so backend functions may assume valid input and only translate native errors. Each backend
 * is one `gpuws__backend` descriptor: a function pointer per operation. Those marked (optional) may be NULL;
 * core then answers GPUWS_ERR_UNSUPPORTED. */
#ifndef GPUWS_BACKEND_IMPL_H
#define GPUWS_BACKEND_IMPL_H

#include "gpuws.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

/* ---- objects (the handles' real types) ------------------------------------------------------------------- */

struct gpuws_context {
    const struct gpuws__backend *backend;
    gpuws_device_info info;
    void *impl;                      /* backend's context */
    gpuws_stream *default_stream;
    pthread_mutex_t lock;            /* guards kernels and the backend's caches */
    struct gpuws_kernel *kernels;    /* looked-up kernels, owned by the context */
    struct gpuws_program *programs;  /* user programs (include/gpuws/program.h), generators' included */
    struct gpuws__generated *generated; /* generator kernels and reductions, by their texts (core/generators.c) */
    gpuws_stream *streams;           /* user-created streams, for gpuws_context_synchronize */
    struct gpuws_buffer *buffers;    /* live buffers and events, under lock: a context destroyed with some left */
    struct gpuws_event *events;      /* warns and releases them, so a late destroy of one finds it not live */
    long live_buffers, live_events;  /* under lock; a warning names leftovers at destroy */
};

#define GPUWS__MEMO_SLOTS 1 /* 0: convolve2d's last plan */
#define GPUWS__STAGING_BYTES 64
#define GPUWS__SCRATCH_SLOTS 7 /* 0-3: the algorithms' drivers; 4-6: find_sources (kernels/sources/sources.c) */
struct gpuws_stream {
    gpuws_context *ctx;
    void *impl;
    bool is_default;
    gpuws_buffer *scratch[GPUWS__SCRATCH_SLOTS]; /* per-stream temporary memory (see gpuws__stream_scratch) */
    gpuws_buffer *tickets;           /* a ticket counter for persistent kernels (see gpuws__stream_tickets) */
    uint32_t tickets_base;           /* the value tickets holds when the next kernel on the stream starts */
    bool tickets_unknown;            /* a launch that draws tickets failed: zero it again before the next one */
    gpuws_buffer *zeroed;            /* device memory the kernels leave zero (see gpuws__stream_zeroed) */
    size_t zeroed_clean;             /* its leading bytes known to be zero where the next command starts */
    void *memo[GPUWS__MEMO_SLOTS];   /* host memory drivers keep between calls (see gpuws__stream_memo) */
    void *staging;                   /* GPUWS__STAGING_BYTES of pinned host memory (see gpuws__buffer_read_start) */
    void *read_marker;               /* the backend's reusable marker for read_start (freed by stream_destroy) */
    _Atomic uintptr_t owner;         /* the thread inside an algorithm call on the stream, 0 if none (gpuws__claim) */
    unsigned claims;                 /* that thread's nested claims; only the owner touches it */
    gpuws_stream *next;              /* in ctx->streams */
};

struct gpuws_event {
    gpuws_context *ctx;
    void *impl;
    bool recorded;
    struct gpuws_event *prev, *next; /* in ctx->events */
};

struct gpuws_buffer {
    gpuws_context *ctx;
    void *impl;                      /* CPU: the host pointer; CUDA: device pointer; OpenCL: cl_mem */
    size_t size;
    uint64_t serial;                 /* unique in the process, never reused (a handle's address may be) */
    struct gpuws_buffer *prev, *next; /* in ctx->buffers */
};

#define GPUWS__SIG_MAX 32
struct gpuws_kernel {
    gpuws_context *ctx;
    void *impl;
    char *name;
    char *options;                   /* build options it was made with ("" if none) */
    char sig[GPUWS__SIG_MAX + 1];    /* one gpuws_arg_kind letter per parameter; '?' = kind unknown */
    gpuws_kernel_info info;
    struct gpuws_program *program;   /* the user program it belongs to; NULL for a built-in kernel */
    struct gpuws_kernel *next;
};

/* ---- user programs (include/gpuws/program.h; core/program.c) -------------------------------------------- */

/* One parameter of a GW_KERNEL, as written. */
typedef struct gpuws__param {
    char kind;  /* gpuws_arg_kind letter: 'b' GW_GLOBAL pointer, 's' GW_LOCAL pointer, else the scalar's kind */
    char *type; /* the declared type with its qualifiers, macros unexpanded ("GW_GLOBAL const gw_f32 *") */
    char *name;
} gpuws__param;

/* One GW_KERNEL of a program's source. */
typedef struct gpuws__kernel_decl {
    char *name;
    size_t nparams;
    gpuws__param *params;
    char sig[GPUWS__SIG_MAX + 1];
    bool barrier; /* its body, a GW_DEVICE function or a macro of the program (or of its defines) names gw_barrier */
    unsigned line; /* of its name in the user's file */
} gpuws__kernel_decl;

struct gpuws_program {
    gpuws_context *ctx;
    void *impl;               /* the backend's module (NULL while unbuilt or failed) */
    char *file_name;
    unsigned flags;           /* GPUWS_PROGRAM_* */
    char *source;             /* the generated text the backend compiles */
    size_t source_len;
    char *log;                /* compiler output ("" when none) */
    bool failed;              /* a failed program: only log, source and destroy */
    char generator;           /* 'e' elementwise, 'r' reduction (core/generators.c), 0 a user's program */
    size_t ndecls;
    gpuws__kernel_decl *decls;
    gpuws_kernel **kernels;   /* per decl, made on first request */
    struct gpuws_program *next; /* in ctx->programs */
};

/* A growable NUL-terminated string (host memory through gpuws__malloc). Appends never fail visibly: an
 * allocation failure sets oom and later appends do nothing; check oom once at the end. */
typedef struct gpuws__strbuf {
    char *s;
    size_t len, cap;
    bool oom;
} gpuws__strbuf;
void gpuws__sb_add(gpuws__strbuf *b, const char *s, size_t n);
void gpuws__sb_puts(gpuws__strbuf *b, const char *s);
void gpuws__sb_printf(gpuws__strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the text over (caller frees with gpuws__free); the buffer is empty afterwards. NULL after oom. */
char *gpuws__sb_take(gpuws__strbuf *b);
void gpuws__sb_free(gpuws__strbuf *b);

/* Where the generated text of a program is assembled (gpuws__backend.program_text). */
typedef enum { GPUWS__TEXT_BEFORE = 0, GPUWS__TEXT_AFTER = 1 } gpuws__text_place;

/* The first error of a compiler log (else its first diagnostic) that names one of the files the generated source
 * names in its #line directives (the user's file, a header, a generator's part), as "file:line: message"; or the
 * log's first line; into out. */
void gpuws__first_diagnostic(const char *log, const char *source, char *out, size_t n);

/* ---- on-disk cache of compiled programs (core/cache.c) -------------------------------------------------- */

/* Entries are "<dir>/<fnv64 of key><ext>" holding magic, the full key, the binary and a checksum: a stale,
 * corrupt, truncated, foreign or non-regular entry is a miss (and is rebuilt); entries and the directory must
 * belong to the user and not be writable by group or others, else they are not used (warned once). Writes go to
 * a temporary file renamed into place, so concurrent processes never see half an entry. The key must name
 * everything the binary depends on: backend, device, toolchain versions, options and the whole source. */
typedef struct gpuws__cache {
    bool enabled;
    char dir[1024];
} gpuws__cache;
/* From GPUWS_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/gpuws, else $HOME/.cache/gpuws. */
void gpuws__cache_init(gpuws__cache *c);
/* A valid entry for key: GPUWS_OK and a gpuws__malloc'd binary in *bin; no usable entry: GPUWS_OK and *bin NULL.
 * GPUWS_ERR_OUT_OF_MEMORY (message set) when memory for reading it cannot be had. */
gpuws_status gpuws__cache_load(const gpuws__cache *c, const char *key, const char *ext, unsigned char **bin, size_t *len);
/* Best effort: failures (read-only directory, full disk) are logged at debug level and ignored. */
void gpuws__cache_store(const gpuws__cache *c, const char *key, const char *ext, const void *bin, size_t len);
/* The path of key's entry (tests, statistics). */
void gpuws__cache_path(const gpuws__cache *c, const char *key, const char *ext, char *out, size_t n);

/* ---- the backend descriptor ------------------------------------------------------------------------------ */

typedef struct gpuws__backend {
    gpuws_backend_kind kind;
    const char *name;

    /* Loads the driver (once) and says whether the backend can be used; fills reason when it cannot. */
    gpuws_status (*probe)(char *reason, size_t reason_size);
    gpuws_status (*device_count)(const char *platform_filter, size_t *count);
    gpuws_status (*device_info)(const char *platform_filter, size_t index, gpuws_device_info *info);

    /* Fills ctx->impl and ctx->info. index has been checked against device_count. */
    gpuws_status (*context_create)(gpuws_context *ctx, const char *platform_filter, size_t index);
    void (*context_destroy)(gpuws_context *ctx);

    gpuws_status (*stream_create)(gpuws_stream *s);
    void (*stream_destroy)(gpuws_stream *s);
    gpuws_status (*stream_synchronize)(gpuws_stream *s);

    gpuws_status (*buffer_create)(gpuws_buffer *b);      /* b->size > 0 */
    void (*buffer_destroy)(gpuws_buffer *b);
    /* Transfers on stream s; blocking != 0 returns only when the host memory may be reused. */
    gpuws_status (*buffer_write)(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *src, size_t n, int blocking);
    gpuws_status (*buffer_read)(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n, int blocking);
    /* (optional) Starts reading n bytes at off of b into dst (pinned memory from host_alloc) and returns in *token
     * what read_wait waits on: the read only, so commands enqueued on s after it may still be running when the
     * wait returns. read_wait releases the token, also when it fails. Without them core reads blocking. */
    gpuws_status (*read_start)(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n, void **token);
    gpuws_status (*read_wait)(gpuws_stream *s, void *token);
    gpuws_status (*buffer_copy)(gpuws_stream *s, gpuws_buffer *dst, size_t doff, const gpuws_buffer *src, size_t soff,
                                size_t n);
    gpuws_status (*buffer_fill)(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *pattern, size_t psize,
                                size_t n);

    gpuws_status (*host_alloc)(gpuws_context *ctx, size_t n, void **p);
    void (*host_free)(gpuws_context *ctx, void *p);

    gpuws_status (*event_create)(gpuws_event *e);
    void (*event_destroy)(gpuws_event *e);
    gpuws_status (*event_record)(gpuws_event *e, gpuws_stream *s);
    gpuws_status (*event_synchronize)(gpuws_event *e);
    gpuws_status (*event_elapsed_ms)(gpuws_event *start, gpuws_event *end, double *ms);

    /* (optional) Finds/builds kernel k->name with k->options; fills k->impl, k->sig, k->info.
     * Returns GPUWS_ERR_KERNEL_NOT_FOUND when no built-in kernel has that name. */
    gpuws_status (*kernel_create)(gpuws_kernel *k);
    void (*kernel_destroy)(gpuws_kernel *k);
    /* (optional) args already checked against k->sig and limits. */
    gpuws_status (*launch)(gpuws_stream *s, gpuws_kernel *k, const gpuws_launch_config *cfg, const gpuws_arg *args,
                           size_t nargs);

    /* ---- user programs (optional as a group: program_build NULL = GPUWS_ERR_UNSUPPORTED) ----
     * Core parses the GW_KERNEL declarations into p->decls and assembles p->source as: `dialect`, then
     * `#define`s of the options, then program_text(BEFORE), then `#line 1 "file"` and the user's source (headers
     * expanded in place, with #line), then program_text(AFTER). */
    const char *dialect;            /* the dialect's definitions for this backend */
    /* (optional) Appends backend text before or after the user's source (entry-point wrappers from p->decls). */
    gpuws_status (*program_text)(const gpuws_program *p, gpuws__text_place where, gpuws__strbuf *out);
    /* Compiles p->source for the context's device, or loads it from the cache (unless GPUWS_PROGRAM_NO_CACHE);
     * sets p->log (gpuws__malloc'd; NULL = "") and, on success, p->impl. A compile error returns GPUWS_ERR_BUILD
     * with the log in p->log; core then composes the message. A missing compiler is GPUWS_ERR_BACKEND_UNAVAILABLE
     * with the reason. */
    gpuws_status (*program_build)(gpuws_program *p);
    void (*program_destroy)(gpuws_program *p);
    /* Makes the kernel of p->decls[index]: fills k->impl (what launch and kernel_destroy take), k->info's
     * max_block_size and static_shared_bytes. k->sig, k->name, k->program are set by core. A kernel the compiled
     * program lacks (declared under an #if) is GPUWS_ERR_KERNEL_NOT_FOUND. */
    gpuws_status (*program_kernel)(gpuws_program *p, size_t index, gpuws_kernel *k);
} gpuws__backend;

/* The registry: NULL for a backend not compiled in. */
const gpuws__backend *gpuws__backend_get(gpuws_backend_kind kind);
extern const gpuws__backend gpuws__backend_cpu;
#ifdef GPUWS_HAVE_OPENCL
extern const gpuws__backend gpuws__backend_opencl;
#endif
#ifdef GPUWS_HAVE_CUDA
extern const gpuws__backend gpuws__backend_cuda;
#endif

/* ---- errors and logging ---------------------------------------------------------------------------------- */

/* Sets the thread's detail message and returns s, so `return gpuws__error(...)` reads naturally. */
gpuws_status gpuws__error(gpuws_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current detail message: "<prefix>: <old message>". */
gpuws_status gpuws__error_prefix(gpuws_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum { GPUWS__LOG_ERROR = 0, GPUWS__LOG_WARN = 1, GPUWS__LOG_INFO = 2, GPUWS__LOG_DEBUG = 3 } gpuws__log_level;
/* Messages at or under GPUWS_LOG (error|warn|info|debug; default warn) go to stderr. Another value of GPUWS_LOG
 * means warn, and a warning that says so once, at the first message of the process (shown or not). */
void gpuws__log(gpuws__log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- handles --------------------------------------------------------------------------------------------- */

typedef enum { GPUWS__H_CONTEXT = 1, GPUWS__H_STREAM, GPUWS__H_EVENT, GPUWS__H_BUFFER, GPUWS__H_KERNEL,
               GPUWS__H_PROGRAM, GPUWS__H_REDUCTION } gpuws__handle_kind;
/* Live-handle registry: a destroyed or never-created handle is reported, not dereferenced. handle_add fails
 * (GPUWS_ERR_OUT_OF_MEMORY, message set) only when the registry cannot grow; the caller then undoes the create. */
gpuws_status gpuws__handle_add(const void *p, gpuws__handle_kind kind);
void gpuws__handle_remove(const void *p);
bool gpuws__handle_live(const void *p, gpuws__handle_kind kind);

/* Each returns OK or INVALID_ARGUMENT naming `what` (e.g. "argument 'src'"). */
gpuws_status gpuws__check_context(const gpuws_context *ctx, const char *what);
gpuws_status gpuws__check_stream(const gpuws_stream *s, const char *what);
gpuws_status gpuws__check_buffer(const gpuws_buffer *b, const char *what);
gpuws_status gpuws__check_event(const gpuws_event *e, const char *what);
/* Takes b out of its context's list of live buffers; under ctx->lock. */
void gpuws__buffer_unlink(gpuws_buffer *b);
/* Resolves NULL to the context's default stream and checks it belongs to ctx. */
gpuws_status gpuws__resolve_stream(gpuws_context *ctx, gpuws_stream **s, const char *what);
/* OK when b belongs to ctx, else GPUWS_ERR_WRONG_CONTEXT naming `what`. */
gpuws_status gpuws__check_same_context(const gpuws_context *ctx, const gpuws_buffer *b, const char *what);
/* OK when [offset, offset + bytes) lies inside the buffer. */
gpuws_status gpuws__check_range(const gpuws_buffer *b, size_t offset, size_t bytes, const char *what);

/* ---- helpers for algorithm host drivers (kernels/<algo>/<algo>.c) --------------------------------------- */

/* Every algorithm call claims its stream for the whole call: the stream's scratch, memo, tickets, zeroed memory and
 * staging below are not thread-safe, and a stream is used by one thread at a time (docs/threads.md). A claim while
 * another thread holds one fails at once with GPUWS_ERR_INVALID_ARGUMENT ("<fn>: stream ... is in use by another
 * thread") and changes nothing; the thread that holds it may claim it again (find_sources runs sigma_clip, label,
 * ...). It costs one uncontended compare-and-swap. Declare the claim with GPUWS__CLAIM(name) and take it with
 * gpuws__claim(&name, s, fn) once s is resolved and before the first use of the stream's state: it is released when
 * the variable goes out of scope, on every return path. */
typedef struct gpuws__stream_claim {
    gpuws_stream *s; /* NULL until taken */
} gpuws__stream_claim;
gpuws_status gpuws__claim(gpuws__stream_claim *c, gpuws_stream *s, const char *fn);
void gpuws__unclaim(gpuws__stream_claim *c);
#define GPUWS__CLAIM(name) __attribute__((cleanup(gpuws__unclaim))) gpuws__stream_claim name = {NULL}

/* Temporary device memory owned by the stream: slot 0..GPUWS__SCRATCH_SLOTS-1, each a separate buffer, valid
 * until the next request for the same slot on the same stream (work already enqueued on the stream may still use
 * it: the stream is in order). Grows as needed; freed with the stream. */
gpuws_status gpuws__stream_scratch(gpuws_stream *s, int slot, size_t bytes, gpuws_buffer **out);
/* A ticket counter for kernels whose blocks take work from an atomic counter (persistent blocks), with no fill
 * command and no reset inside the kernel: one 32-bit word of device memory owned by the stream, zero-filled (on the
 * stream) when first made, and *base, the value it holds when the next kernel on the stream starts. The kernel
 * draws tickets with an atomic add and uses ticket - base (unsigned arithmetic, so the word may wrap around 2^32).
 * After the launch the caller reports how many tickets the kernel draws in all, which must be exact: for blocks
 * that each stop at their first ticket past the last work item, items + blocks; or, if the launch failed, that the
 * count is unknown (ok = false), and the next call zero-fills the word again. Freed with the stream. */
gpuws_status gpuws__stream_tickets(gpuws_stream *s, gpuws_buffer **counter, uint32_t *base);
void gpuws__stream_tickets_drawn(gpuws_stream *s, bool ok, uint32_t n);
/* Accumulators that need no fill command per call: device memory owned by the stream whose first `bytes` are zero
 * where the next command on the stream starts. The caller's kernels must leave those bytes zero again when they
 * finish (the last kernel reads the totals and clears them); the helper fills only what is not known to be zero:
 * new or grown memory, or everything after gpuws__stream_zeroed_dirty (call it when an enqueue of such kernels
 * fails, since an earlier one may have run and left totals behind). One buffer per stream (measure's records). */
gpuws_status gpuws__stream_zeroed(gpuws_stream *s, size_t bytes, gpuws_buffer **out);
void gpuws__stream_zeroed_dirty(gpuws_stream *s);
/* Host memory a driver keeps on the stream between calls (a plan for the next call of the same shape): slot
 * 0..GPUWS__MEMO_SLOTS-1, `bytes` zeroed on first use (every call of a slot must ask for the same size), freed with
 * the stream. A stream is used by one thread at a time, so it needs no lock. */
gpuws_status gpuws__stream_memo(gpuws_stream *s, int slot, size_t bytes, void **out);
/* Reads n bytes into host memory once all the work enqueued on s before it has finished: what
 * gpuws_buffer_read_async followed by gpuws_stream_synchronize does, as one blocking read (on NVIDIA's OpenCL a
 * blocking read of a kernel's 4 bytes took 30 us against 38.5 us as a non-blocking read + clFinish). Reads of up to
 * GPUWS__STAGING_BYTES go through the stream's pinned staging memory. n > 0. */
gpuws_status gpuws__buffer_read_sync(gpuws_stream *s, const gpuws_buffer *src, size_t offset, void *dst, size_t n);
/* A small read the host waits for while the device goes on: _start enqueues the read of n <= GPUWS__STAGING_BYTES
 * bytes into the stream's pinned staging memory; the caller may enqueue more work on s; _finish waits for the read
 * alone (not for that later work) and copies the bytes to dst. Every successful _start needs its _finish (also on
 * an error path: it releases the read), and a stream has one read in flight at a time. Pinned memory and waiting
 * for the read alone make a kernel + a few bytes back faster than a blocking read into pageable memory, on CUDA and
 * on NVIDIA's OpenCL. */
typedef struct gpuws__pending_read {
    void *token; /* the backend's; NULL when the bytes are already there */
    size_t n;
} gpuws__pending_read;
gpuws_status gpuws__buffer_read_start(gpuws_stream *s, const gpuws_buffer *src, size_t offset, size_t n,
                                      gpuws__pending_read *rd);
gpuws_status gpuws__buffer_read_finish(gpuws_stream *s, gpuws__pending_read *rd, void *dst);
/* gpuws_launch's argument checks alone: number, kinds, buffers' context, local memory (its total in *local_total,
 * each region rounded up to 16 bytes). */
gpuws_status gpuws__check_launch_args(const gpuws_kernel *k, const gpuws_arg *args, size_t nargs, size_t *local_total);
/* Kernel by name built with extra build options (OpenCL -D tunables; ignored by CUDA). */
gpuws_status gpuws__kernel_get_ex(gpuws_context *ctx, const char *name, const char *options, gpuws_kernel **k);
/* Host address of a CPU-backend buffer (NULL for other backends). */
void *gpuws__cpu_ptr(const gpuws_buffer *b);

/* OpenCL program cache events in this process: loaded from disk, no entry, entry rejected (corrupt, truncated,
 * foreign, or refused by the driver), built from source. Zeros when OpenCL is not built in. */
void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected, unsigned long *builds);

/* ---- host memory ------------------------------------------------------------------------------------------
 * Every host allocation of core, the CPU backend and the algorithm drivers goes through these (never plain
 * malloc/free), so tests can make the n-th one fail and can count what is still live. Pair them: memory from
 * gpuws__malloc/calloc/aligned_alloc/strdup is released with gpuws__free. */
void *gpuws__malloc(size_t bytes);
void *gpuws__calloc(size_t count, size_t size);
/* realloc semantics: NULL p allocates; on failure NULL is returned and p is untouched. */
void *gpuws__realloc(void *p, size_t bytes);
void *gpuws__aligned_alloc(size_t alignment, size_t bytes); /* alignment a power of two */
char *gpuws__strdup(const char *s);
void gpuws__free(void *p);
/* Fault injection (tests; docs/reliability.md): the n-th allocation from now on fails (n >= 1); n <= 0 disarms.
 * GPUWS_FAULT_ALLOC=n in the environment arms it at the first allocation of the process and logs a warning when
 * it fires. Returns whether the previous countdown fired. */
bool gpuws__fault_alloc_countdown(long n);
/* Allocations made through the functions above and not yet freed (process-wide). */
long gpuws__alloc_live(void);

/* ---- small utilities ------------------------------------------------------------------------------------- */

static inline bool gpuws__mul_overflows(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline bool gpuws__add_overflows(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }
int gpuws__strcasecmp(const char *a, const char *b);
/* Case-insensitive substring test; an empty or NULL needle matches everything. */
bool gpuws__icontains(const char *haystack, const char *needle);
void gpuws__strlcpy(char *dst, const char *src, size_t size);
/* 64-bit FNV-1a. */
uint64_t gpuws__fnv1a(const void *data, size_t n, uint64_t seed);
#define GPUWS__FNV_SEED 0xcbf29ce484222325ULL
/* getenv that treats an empty value as unset. */
const char *gpuws__getenv(const char *name);

#endif
