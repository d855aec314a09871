/* Errors, logging, the live-handle registry and the argument checks built on it (core/status.c, core/handles.c).
 * Never installed. */
#ifndef GPUWS_CORE_ERRORS_H
#define GPUWS_CORE_ERRORS_H

#include "gpuws.h"

#include <stdbool.h>

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

typedef enum {
    GPUWS__H_CONTEXT = 1,
    GPUWS__H_STREAM,
    GPUWS__H_EVENT,
    GPUWS__H_BUFFER,
    GPUWS__H_KERNEL,
    GPUWS__H_PROGRAM,
    GPUWS__H_REDUCTION
} gpuws__handle_kind;
/* Live-handle registry: a destroyed or never-created handle is reported, not dereferenced. handle_add fails
 * (GPUWS_ERR_OUT_OF_MEMORY, message set) only when the registry cannot grow; the caller then undoes the create. */
gpuws_status gpuws__handle_add(const void *p, gpuws__handle_kind kind);
void gpuws__handle_remove(const void *p);
bool gpuws__handle_live(const void *p, gpuws__handle_kind kind);
/* Tests that fail allocations: room for n more registrations before the registry's next rehash, whose failure
 * handle_add absorbs (it probes the old table while that has room), so that none falls inside a measured call. */
gpuws_status gpuws__handle_reserve(size_t n);

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

#endif
