/* Helpers shared by the algorithm host drivers (kernels/<algo>/<algo>.c). */
#ifndef GPUWS_DRIVER_H
#define GPUWS_DRIVER_H

#include "../../core/driver_support.h"
#include "gpuws/algorithms.h"

#include <stdio.h>

/* The stream an algorithm call runs on: resolves *s (NULL = ctx's default stream; else it must be a live stream of
 * ctx) and claims it for the call (gpuws__claim; declare `claim` with GPUWS__CLAIM). */
gpuws_status gpuws__driver_stream(gpuws_context *ctx, gpuws_stream **s, gpuws__stream_claim *claim, const char *fn);
/* Resolves the stream (NULL = default of the first buffer's context) and checks `buf` is live, belongs to that
 * context and holds at least n elements of elem_size bytes. `name` is the argument's name for messages. */
gpuws_status gpuws__check_array(gpuws_context *ctx, const gpuws_buffer *buf, const char *name, size_t n,
                                size_t elem_size);
/* Live buffer check that also yields its context (the first buffer argument decides the context). */
gpuws_status gpuws__buffer_context(const gpuws_buffer *buf, const char *name, gpuws_context **ctx);
/* GPUWS_ERR_UNSUPPORTED unless the context can run dtype kernels (fp64 on OpenCL devices without it). */
gpuws_status gpuws__check_dtype(gpuws_context *ctx, gpuws_dtype dtype, const char *algo);
/* Kernel lookup + launch in one call. */
gpuws_status gpuws__launch_named(gpuws_stream *s, const char *name, const char *options, const gpuws_launch_config *cfg,
                                 const gpuws_arg *args, size_t nargs);
/* Looks the kernel up and returns the largest power-of-two block <= want that the kernel and device allow
 * (drivers must not assume a device's max block holds for every kernel: NVIDIA's OpenCL reports 256 for some). */
gpuws_status gpuws__kernel_block(gpuws_context *ctx, const char *name, const char *options, uint32_t want,
                                 gpuws_kernel **kernel, uint32_t *block);
/* A 1-D launch config of `block` threads covering n items, capped at `max_blocks` blocks (grid-stride kernels). */
gpuws_launch_config gpuws__config_1d(size_t n, uint32_t block, uint32_t max_blocks);
/* Blocks that keep every compute unit busy for grid-stride loops: compute_units * per_cu, at least 1. */
uint32_t gpuws__saturating_blocks(const gpuws_context *ctx, uint32_t per_cu);
/* True for CPU-type OpenCL devices (PoCL): drivers pick smaller work-groups there. */
bool gpuws__is_cpu_device(const gpuws_context *ctx);
/* True for NVIDIA's OpenCL platform (vendor build options there: register caps, inline PTX). */
bool gpuws__is_nvidia_opencl(const gpuws_context *ctx);

#define GPUWS__NARGS(a) (sizeof(a) / sizeof((a)[0]))

/* The collective calls' check that every caller passes the same values: each value as its four 16-bit pieces v and
 * their squares, summed over the callers by one reduction; the callers agree when (Σv)² = P Σv² for every piece
 * (pieces of 16 bits, so that no sum can overflow whatever the number of callers). gpuws__agree_words writes the
 * GPUWS__AGREE_WORDS(n) words of n values; after the reduction, gpuws__agree_check gives the first value whose pieces
 * disagree, or n when all agree. */
#define GPUWS__AGREE_WORDS(n) (8 * (n))
void gpuws__agree_words(const uint64_t *v, size_t n, uint64_t *w);
size_t gpuws__agree_check(const uint64_t *w, size_t n, uint64_t callers);
/* The collective calls (gpuws_sum_reducer): each of `callers` callers passes its own `per` values (1 to 10); every
 * caller gets, for each, the sum over the callers before it (before) and over all of them (total), and where each is
 * not NULL every caller's values (callers * per, caller after caller). The callers' slots go in reductions of at most
 * 64 callers at a time from memory on the stack, so that no allocation can fail between two reductions and leave the
 * other callers waiting. */
gpuws_status gpuws__reduce_slots(gpuws_sum_reducer reduce, void *user, size_t caller, size_t callers,
                                 const uint64_t *mine, size_t per, uint64_t *before, uint64_t *total, uint64_t *each);
#endif
