/* Streaming row bands of a host image through one or several devices (the out-of-core _host calls:
 * convolve2d_host, label_host; docs/scale.md). Never installed.
 *
 * A call is a sequence of steps (a band each, or a band of a pass). Each device has up to GPUWS__BAND_SLOTS slots
 * (pinned input staging, device input, device output, pinned output staging) and three streams of its own:
 * uploads, compute, downloads. Step t runs on device t % n, in slot (its k-th step) % slots. Per step, in order:
 *  1. the host waits for the slot's previous upload, then `stage` fills the slot's input staging;
 *  2. upload stream: waits for the slot's previous compute (it read the device input), uploads, records `uploaded`;
 *  3. compute stream: waits for `uploaded` and the slot's previous download (it read the device output), `compute`,
 *     records `computed`;
 *  4. the host waits for the slot's previous download and `complete`s that step (copies it out of staging);
 *  5. download stream: waits for `computed`, `download`, records `downloaded`.
 * While one step uploads, the previous computes and the one before downloads. Each device runs its steps on a
 * thread of its own (device 0 on the calling thread), so several devices work at once; `done` then sees the steps
 * in order. Every stream is synchronised before the buffers go, also after an error.
 *
 * A step whose input `source` finds in the caller's memory, pinned for the device, uploads straight from it (no
 * `stage`, no host wait in 1); a step whose output `target` places in the caller's pinned memory downloads straight
 * into it (`complete` then gets NULL). No host copy touches the caller's memory then, so no transfer on it races one.
 * A device takes the slots' input or output staging only when one of its steps needs it. */
#ifndef GPUWS_BAND_STREAM_H
#define GPUWS_BAND_STREAM_H

#include "driver.h"

#define GPUWS__BAND_SLOTS   3
#define GPUWS__BAND_DEVICES 64 /* the most devices one call spreads its steps over */
/* The most bytes of one staging buffer: bands are no taller than this allows, whatever the budget. Pinning host
 * memory costs far more per byte than moving it (and several devices pin at once), while transfers of this size
 * already run at full speed. */
#define GPUWS__BAND_STAGING_BYTES ((size_t)64 << 20)

typedef struct gpuws__band_ops {
    size_t steps;               /* steps 0 .. steps - 1 */
    size_t barrier;             /* 0, or: steps from `barrier` on complete, and download into `target`, only once
                                   every earlier step is done (label_host's second pass needs the numbering its
                                   first pass ends with) */
    bool ready_first;           /* no step completes or downloads into `target` before every device has made its
                                   state (label_host's one pass writes the caller's output from its first step) */
    bool barrier_downloads;     /* steps from `barrier` on download into staging only past the barrier too (their
                                   download enqueues device work that needs what the steps before end with:
                                   label_host's remap of a band to its final numbers) */
    int slots;                  /* slots a device, 1 .. GPUWS__BAND_SLOTS */
    size_t in_bytes, out_bytes; /* a slot's input and output, device and staging alike (at least 1) */
    void *user;                 /* every callback's first argument */
    const char *what;           /* the call's name, for messages */
    /* Optional: device d's own state, made on the thread that runs d's steps before its first step (convolve2d's
     * kernel on that device); `run` is d's compute stream. device_free is called for every device_make that
     * succeeded, after d's streams have stopped. */
    gpuws_status (*device_make)(void *user, unsigned d, gpuws_context *ctx, gpuws_stream *run, void **state);
    void (*device_free)(void *user, unsigned d, gpuws_context *ctx, void *state);
    /* host: step t's input into the pinned `in` (in_bytes at most); *bytes = what to upload */
    gpuws_status (*stage)(void *user, size_t t, void *in, size_t *bytes);
    /* Optional: step t's input in the caller's memory on ctx, uploaded from there as it is: *bytes (in_bytes at
     * most) from the returned address, pinned memory for ctx that nothing writes during the call; NULL: `stage` it.
     * Asked before the steps (to size the staging) and again at each step, with the same answer. */
    const void *(*source)(void *user, gpuws_context *ctx, size_t t, size_t *bytes);
    /* Optional: where in the caller's memory step t's results go on ctx, memory that nothing else reads or writes
     * during the call (pinned for ctx, or a transfer from pageable memory is the driver's slower one): `download`
     * writes there; NULL: into staging. Asked as `source` is. */
    void *(*target)(void *user, gpuws_context *ctx, size_t t);
    /* enqueue on `run` step t's device work from din (uploaded) into dout */
    gpuws_status (*compute)(void *user, void *state, size_t t, gpuws_stream *run, gpuws_buffer *din,
                            gpuws_buffer *dout);
    /* enqueue on `down` step t's results from dout into the pinned `out` (staging, or `target`'s) */
    gpuws_status (*download)(void *user, size_t t, gpuws_stream *down, gpuws_buffer *dout, void *out);
    /* host: step t's results are in `out`; use them before returning (the slot is reused). NULL when they went
     * to `target` */
    gpuws_status (*complete)(void *user, void *state, size_t t, const void *out);
    /* Optional: once every step before t is done too, in step order, one call at a time (on the thread that
     * completed the last of them; the calling thread when there is one device). Progress goes here. */
    gpuws_status (*done)(void *user, size_t t);
} gpuws__band_ops;

/* Runs ops->steps over the n contexts (1 .. GPUWS__BAND_DEVICES, distinct, one backend) and returns when every
 * step is done or, after the first error, when every device has stopped; that error's status and message are
 * returned on the calling thread. */
gpuws_status gpuws__band_stream_run(gpuws_context *const *ctxs, unsigned n, const gpuws__band_ops *ops);

/* The contexts a _host call runs on: ctx, then `more` (num_more of them), checked: live, not NULL, distinct, the
 * backend of ctx. On success ctxs[0 .. *n) holds them. what: the call's name, for messages. */
gpuws_status gpuws__band_contexts(gpuws_context *ctx, gpuws_context *const *more, size_t num_more, const char *what,
                                  gpuws_context **ctxs, unsigned *n);

/* The device bytes a _host call may use on each of the n devices: max_device_bytes when it is not 0, else fifteen
 * sixteenths of the least free memory among them (the rest for the driver and the streams' scratch); and the
 * smallest of their largest buffers (0 when none says). */
void gpuws__band_budget(gpuws_context *const *ctxs, unsigned n, uint64_t max_device_bytes, uint64_t *budget,
                        uint64_t *max_alloc);

/* Whether host ranges [a, a + na) and [b, b + nb) share a byte: an output that a _host call writes while it reads
 * an input must not. */
static inline bool gpuws__overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

#endif
