/* κ-σ clipping of values spread over several parts (devices' buffers), with a result whose bits depend only on the
 * values and the chunk boundaries: sigma_clip_parts.c. Never installed. */
#ifndef GPUWS_SIGMA_CLIP_PARTS_H
#define GPUWS_SIGMA_CLIP_PARTS_H

#include "../common/driver.h"

#include <stdbool.h>

typedef struct {
    gpuws_stream *stream;     /* the part's stream (its context: stream->ctx); parts may share a context */
    const gpuws_buffer *data; /* n f32 values on that context (NULL when n == 0) */
    size_t n;
} gpuws__clip_part;

/* gpuws_sigma_clip's loop and result on the values of every part taken together (in part order). The values of each
 * part are cut into chunks of `chunk` values from the part's start (the last may be shorter); each round's mean and
 * std come from per-chunk (count, mean, M2) computed in one fixed order (256 lanes, lane t taking the chunk's values
 * t, t + 256, ... in order with shifted sums, then Chan's pairwise tree h = 128, ..., 1), combined by the host in
 * (part, chunk) order; count and median are exact. So the result is the same bits for any split into parts whose
 * sizes (all but the last) are multiples of `chunk`, and on every backend (docs/algorithms/sigma_clip.md, "Values on
 * several devices").
 * options already read/validated by the caller (kappa finite > 0, max_iterations >= 1); every part's context of one
 * backend. chunk: 1 .. 2^31. Blocks until the result is known. Errors: no values or all NaN, a NULL argument, a part
 * whose buffer or stream is not live or too short, contexts of different backends, chunk out of range →
 * GPUWS_ERR_INVALID_ARGUMENT (or the buffer check's status); OpenCL devices without fp64 or 64-bit atomics, or whose
 * work-groups cannot hold 256 work-items → GPUWS_ERR_UNSUPPORTED; *result is written on success only. */
gpuws_status gpuws__sigma_clip_parts(const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                                     const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result);

/* Several callers (MPI ranks), each with its own parts, as one gpuws__sigma_clip_parts over every caller's parts in
 * the order (caller, part): caller `caller` of `callers`, reduce sums words over all of them (gpuws_sum_reducer).
 * The callers agree first on their number, chunk, kappa and max_iterations (a caller whose options are not valid, or
 * which failed before, passes `failed`, and every caller then fails), then exchange each step's results: every
 * caller gets the same result, that of gpuws__sigma_clip_parts over all the parts. A caller may hold no values (no
 * parts, or parts of n == 0). Errors after the first reduction are every caller's: a caller's own failure its own
 * status, the others GPUWS_ERR_INVALID_ARGUMENT saying how many failed. */
typedef struct {
    gpuws_sum_reducer reduce;
    void *user;
    size_t caller, callers;
    bool failed;
    gpuws_gatherer gather; /* the chunks' records each round; NULL: summed among zeros through reduce */
} gpuws__clip_exchange;
gpuws_status gpuws__sigma_clip_parts_reduce(const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                                            const gpuws_sigma_clip_options *options, const gpuws__clip_exchange *x,
                                            gpuws_sigma_clip_result *result);

/* The named kernels (count of them) of sigma_clip's program on ctx, into k (sigma_clip.c): on OpenCL built again with
 * the 64-bit atomics forced on where the compiler reports cl_khr_int64_base_atomics without its macro; a device
 * without them, or a failed build, is GPUWS_ERR_UNSUPPORTED naming `what`. */
gpuws_status gpuws__sigma_clip_kernels(gpuws_context *ctx, const char *const *names, int count, gpuws_kernel **k,
                                       const char *what);

#endif
