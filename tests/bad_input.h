/* The bad-input harness shared by tests/test_bad_input.c (the harness; core API, vector_add, reduce, CLI and FITS
 * rows) and tests/bad_input/<file>.c (further API rows: every other algorithm call). All of them are compiled into
 * the one test_bad_input executable; each BAD_CASE row registers itself by constructor and the harness sorts the
 * rows by name, so a row's place in a file does not matter. How to add a row: docs/reliability.md. */
#ifndef GPUWS_TEST_BAD_INPUT_H
#define GPUWS_TEST_BAD_INPUT_H

#include "support.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BAD_CPU    (1u << GPUWS_BACKEND_CPU)
#define BAD_OPENCL (1u << GPUWS_BACKEND_OPENCL)
#define BAD_CUDA   (1u << GPUWS_BACKEND_CUDA)
#define BAD_GPU    (BAD_OPENCL | BAD_CUDA) /* backends that launch kernels */
#define BAD_ALL    (BAD_CPU | BAD_GPU)

/* Image sides of the 2-D buffers: BAD_W x BAD_H pixels. */
#define BAD_W    16
#define BAD_H    8
#define BAD_N    (BAD_W * BAD_H)
#define BAD_HOST 4096

/* A fresh one per row and backend. Every buffer from test_buffer has TEST_GUARD_BYTES of poison after its payload,
 * and its size includes them: f->small holds 4 + 64 bytes, f->in 4 * BAD_N + 64. */
typedef struct bad_fixture {
    gpuws_backend_kind kind;
    gpuws_device_info info;
    gpuws_context *ctx;
    gpuws_context *other;         /* a second context on the same backend */
    gpuws_context *dead_ctx;      /* destroyed */
    gpuws_stream *stream;         /* a live stream of ctx */
    gpuws_stream *dead_stream;    /* destroyed stream of ctx */
    gpuws_stream *foreign_stream; /* live stream of `other` */
    gpuws_event *event;           /* recorded once on ctx's default stream */
    gpuws_event *unrecorded;      /* never recorded */
    gpuws_event *dead_event;      /* destroyed */
    gpuws_event *foreign_event;   /* recorded, of `other` */
    gpuws_buffer *in;             /* BAD_N f32: 1, 2, 3, ... (a BAD_W x BAD_H image) */
    gpuws_buffer *in64;           /* BAD_N f64: 1, 2, 3, ... */
    gpuws_buffer *out;            /* BAD_N * 8 bytes, poisoned: room for any output of BAD_N elements */
    gpuws_buffer *small;          /* 4 bytes, poisoned */
    gpuws_buffer *foreign;        /* BAD_N * 8 bytes of `other` */
    gpuws_buffer *dead;           /* destroyed */
    gpuws_buffer *nan_img;        /* BAD_N f32, every pixel NaN */
    gpuws_buffer *inf_img;        /* BAD_N f32, +Inf and -Inf alternating */
    gpuws_buffer *one_px;         /* one f32 pixel: 7.5 */
    gpuws_kernel *kernel;         /* vector_add_f32 on GPU backends (4 params: b b b L); NULL on the CPU backend */
    double result;                /* host outputs, poisoned */
    _Alignas(8) unsigned char host[BAD_HOST];
} bad_fixture;

/* f->host as an output of type T (size_t, a result struct, ...): the harness checks it is untouched by a failure. */
#define BAD_HOST_OUT(T) ((T *)(void *)f->host)

typedef struct bad_case {
    const char *name;
    unsigned backends;
    gpuws_status want;
    const char *message;
    gpuws_status (*call)(bad_fixture *f);
} bad_case;

void bad_register(const bad_case *c);

#define BAD_CASE(Name, Backends, Want, Message)                                                                        \
    static gpuws_status bad_call_##Name(bad_fixture *f);                                                               \
    __attribute__((constructor)) static void bad_register_##Name(void)                                                 \
    {                                                                                                                  \
        static const bad_case c = { #Name, (Backends), (Want), (Message), bad_call_##Name };                           \
        bad_register(&c);                                                                                              \
    }                                                                                                                  \
    static gpuws_status bad_call_##Name(__attribute__((unused)) bad_fixture *f)

/* The rows every call in row bands over several devices owes (options->more_contexts must name live contexts, each
 * once, ctx not among them): Prefix##_more_contexts_{null_with_a_count,null_entry,names_ctx,destroyed}, each calling
 * With(f, more, n), which makes the call with options naming more[0..n) and a budget of several bands. */
#define BAD_MORE_CONTEXTS_CASES(Prefix, With)                                                                          \
    BAD_CASE(Prefix##_more_contexts_null_with_a_count, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,                            \
             "options->more_contexts is NULL but num_more_contexts is 2")                                              \
    {                                                                                                                  \
        return With(f, NULL, 2);                                                                                       \
    }                                                                                                                  \
    BAD_CASE(Prefix##_more_contexts_null_entry, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,                                   \
             "options->more_contexts[0] is NULL")                                                                      \
    {                                                                                                                  \
        gpuws_context *more[1] = { NULL };                                                                             \
        return With(f, more, 1);                                                                                       \
    }                                                                                                                  \
    BAD_CASE(Prefix##_more_contexts_names_ctx, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,                                    \
             "options->more_contexts[0] is ctx again: each device once")                                               \
    {                                                                                                                  \
        gpuws_context *more[1] = { f->ctx };                                                                           \
        return With(f, more, 1);                                                                                       \
    }                                                                                                                  \
    BAD_CASE(Prefix##_more_contexts_destroyed, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")              \
    {                                                                                                                  \
        gpuws_context *more[1] = { f->dead_ctx };                                                                      \
        return With(f, more, 1);                                                                                       \
    }

/* For rows about create calls: the out-handle must be NULL after a failure. */
#define BAD_EXPECT_NULL(p) cr_assert_null((p), "a failed create left its out-handle set")

/* For rows expecting GPUWS_OK: waits for f->ctx's streams, then asserts bytes [from, to) of b are still the poison
 * (what a call must not have written). */
void bad_expect_poison(bad_fixture *f, gpuws_buffer *b, size_t from, size_t to, const char *name);

#endif
