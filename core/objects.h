/* The handles' real types: what a gpuws_context, gpuws_stream, gpuws_event, gpuws_buffer, gpuws_kernel and
 * gpuws_program point to (the public headers declare them opaque). Each holds its context and the backend's own
 * object in `impl`. Never installed. */
#ifndef GPUWS_CORE_OBJECTS_H
#define GPUWS_CORE_OBJECTS_H

#include "gpuws.h"
#include "tuning.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPUWS__KEPT_MAX 32 /* staging blocks a context keeps at most */
struct gpuws_context {
    const struct gpuws__backend *backend;
    gpuws_device_info info;
    void *impl; /* backend's context */
    gpuws_stream *default_stream;
    pthread_mutex_t lock;               /* guards kernels and the backend's caches */
    struct gpuws_kernel *kernels;       /* looked-up kernels, owned by the context */
    struct gpuws_program *programs;     /* user programs (include/gpuws/program.h), generators' included */
    struct gpuws__generated *generated; /* generator kernels and reductions, by their texts (core/generators.c) */
    gpuws_stream *streams;              /* user-created streams, for gpuws_context_synchronize */
    struct gpuws_buffer *buffers;       /* live buffers and events, under lock: a context destroyed with some left */
    struct gpuws_event *events;         /* warns and releases them, so a late destroy of one finds it not live */
    long live_buffers, live_events;     /* under lock; a warning names leftovers at destroy */
    gpuws__tuning tuning;               /* the knobs (core/tuning.h), read from GPUWS_TUNING when it is created */
    struct { /* pinned staging kept for the next _host call (gpuws__staging_take), under lock */
        void *p;
        size_t bytes;
    } kept[GPUWS__KEPT_MAX];
    unsigned nkept;
    size_t kept_bytes;
    size_t device_index; /* within the backend's devices under the platform filter it was opened with */
};

#define GPUWS__STAGING_BYTES 64
/* Memory a stream keeps for one owner (see gpuws__stream_scratch, gpuws__stream_memo in core/driver_support.h). */
typedef struct gpuws__stream_entry {
    const struct gpuws__stream_key *key; /* the owner's key, compared by address */
    void *p;                             /* scratch: a gpuws_buffer *; memo: host memory */
    size_t bytes;                        /* memo: the size every request of the key asks for */
} gpuws__stream_entry;
typedef struct gpuws__stream_entries {
    gpuws__stream_entry *v;
    size_t n, cap;
} gpuws__stream_entries;
struct gpuws_stream {
    gpuws_context *ctx;
    void *impl;
    bool is_default;
    gpuws__stream_entries scratch; /* temporary device memory, by owner (see gpuws__stream_scratch) */
    gpuws_buffer *tickets;         /* a ticket counter for persistent kernels (see gpuws__stream_tickets) */
    uint32_t tickets_base;         /* the value tickets holds when the next kernel on the stream starts */
    bool tickets_unknown;          /* a launch that draws tickets failed: zero it again before the next one */
    gpuws_buffer *zeroed;          /* device memory the kernels leave zero (see gpuws__stream_zeroed) */
    size_t zeroed_clean;           /* its leading bytes known to be zero where the next command starts */
    gpuws__stream_entries memo;    /* host memory drivers keep between calls, by owner (see gpuws__stream_memo) */
    void *staging;                 /* GPUWS__STAGING_BYTES of pinned host memory (see gpuws__buffer_read_start) */
    void *read_marker;             /* the backend's reusable marker for read_start (freed by stream_destroy) */
    _Atomic uintptr_t owner;       /* the thread inside an algorithm call on the stream, 0 if none (gpuws__claim) */
    unsigned claims;               /* that thread's nested claims; only the owner touches it */
    gpuws_stream *next;            /* in ctx->streams */
};

struct gpuws_event {
    gpuws_context *ctx;
    void *impl;
    bool recorded;
    struct gpuws_event *prev, *next; /* in ctx->events */
};

struct gpuws_buffer {
    gpuws_context *ctx;
    void *impl; /* CPU: the host pointer; CUDA: device pointer; OpenCL: cl_mem */
    size_t size;
    uint64_t serial;                  /* unique in the process, never reused (a handle's address may be) */
    struct gpuws_buffer *prev, *next; /* in ctx->buffers */
    bool wrapped;                     /* impl is the caller's memory (gpuws_buffer_wrap): never freed here */
};

#define GPUWS__SIG_MAX 32
struct gpuws_kernel {
    gpuws_context *ctx;
    void *impl;
    char *name;
    char *options;                /* build options it was made with ("" if none) */
    char sig[GPUWS__SIG_MAX + 1]; /* one gpuws_arg_kind letter per parameter; '?' = kind unknown */
    gpuws_kernel_info info;
    struct gpuws_program *program; /* the user program it belongs to; NULL for a built-in kernel */
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
    bool barrier;  /* its body, a GW_DEVICE function or a macro of the program (or of its defines) names gw_barrier */
    unsigned line; /* of its name in the user's file */
} gpuws__kernel_decl;

struct gpuws_program {
    gpuws_context *ctx;
    void *impl; /* the backend's module (NULL while unbuilt or failed) */
    char *file_name;
    unsigned flags; /* GPUWS_PROGRAM_* */
    char *source;   /* the generated text the backend compiles */
    size_t source_len;
    char *log;      /* compiler output ("" when none) */
    bool failed;    /* a failed program: only log, source and destroy */
    char generator; /* 'e' elementwise, 'r' reduction (core/generators.c), 0 a user's program */
    size_t ndecls;
    gpuws__kernel_decl *decls;
    gpuws_kernel **kernels;     /* per decl, made on first request */
    struct gpuws_program *next; /* in ctx->programs */
};

#endif
