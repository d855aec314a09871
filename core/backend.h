/* The contract between core/ and backends/: the backend descriptor and the registry. Never installed.
 *
 * Core validates every argument (live handles, same context, ranges, launch limits, argument kinds) before it
 * calls a backend, so backend functions may assume valid input and only translate native errors. Each backend
 * is one `gpuws__backend` descriptor: a function pointer per operation. Those marked (optional) may be NULL;
 * core then answers GPUWS_ERR_UNSUPPORTED. */
#ifndef GPUWS_CORE_BACKEND_H
#define GPUWS_CORE_BACKEND_H

#include "objects.h"
#include "text.h"

/* Where the generated text of a program is assembled (gpuws__backend.program_text). */
typedef enum { GPUWS__TEXT_BEFORE = 0, GPUWS__TEXT_AFTER = 1 } gpuws__text_place;

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

    gpuws_status (*buffer_create)(gpuws_buffer *b); /* b->size > 0 */
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
    /* (optional) Whether [p, p + n) is pinned host memory the device copies at full speed (host_alloc's, or the
     * driver's own registered memory), so a large transfer need not be staged (core/staged.c). */
    bool (*host_pinned)(gpuws_context *ctx, const void *p, size_t n);

    gpuws_status (*event_create)(gpuws_event *e);
    void (*event_destroy)(gpuws_event *e);
    gpuws_status (*event_record)(gpuws_event *e, gpuws_stream *s);
    gpuws_status (*event_synchronize)(gpuws_event *e);
    gpuws_status (*event_elapsed_ms)(gpuws_event *start, gpuws_event *end, double *ms);
    /* (optional) Work enqueued on s after this call waits until the event's last recorded point has been reached;
     * the host does not wait. NULL: core waits for the event on the host instead (the CPU backend, whose streams run
     * work as it is submitted). */
    gpuws_status (*stream_wait_event)(gpuws_stream *s, gpuws_event *e);
    /* (optional) Bytes of device memory free now. NULL: not known (core then assumes three quarters of
     * info.global_mem_bytes). */
    gpuws_status (*mem_free)(gpuws_context *ctx, uint64_t *bytes);

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
    const char *dialect; /* the dialect's definitions for this backend */
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

/* OpenCL program cache events in this process: loaded from disk, no entry, entry rejected (corrupt, truncated,
 * foreign, or refused by the driver), built from source. Zeros when OpenCL is not built in. */
void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds);

#endif
