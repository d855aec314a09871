/* What core offers the algorithm host drivers (kernels/<algo>/<algo>.c) beyond the public API: stream claims,
 * memory the stream keeps between calls, small reads, launch checks. Drivers include kernels/common/driver.h,
 * which includes this. Never installed. */
#ifndef GPUWS_CORE_DRIVER_SUPPORT_H
#define GPUWS_CORE_DRIVER_SUPPORT_H

#include "alloc.h"
#include "backend.h"
#include "errors.h"
#include "objects.h"
#include "util.h"

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
#define GPUWS__CLAIM(name) __attribute__((cleanup(gpuws__unclaim))) gpuws__stream_claim name = { NULL }

/* Who owns a piece of memory the stream keeps (gpuws__stream_scratch, gpuws__stream_memo): each use declares its own
 * key at file scope and passes its address, e.g.
 *     static const gpuws__stream_key key_partials = {"reduce.partials"};
 * The stream tells owners apart by the key's address, so two uses never share memory unless they share a key: a call
 * nested in another on the same stream (find_sources runs sigma_clip, label, measure) cannot overwrite its caller's
 * memory. One owner may hold several keys. The name ("<algorithm>.<use>", unique in the library) is for messages and
 * debugging, and keeps keys' contents distinct so that no toolchain may merge two of them into one object. */
typedef struct gpuws__stream_key {
    const char *name;
} gpuws__stream_key;

/* Temporary device memory owned by the stream, one buffer per key, valid until the next request for the same key on
 * the same stream (work already enqueued on the stream may still use it: the stream is in order). Grows as needed
 * (waiting for the stream first); freed with the stream. A request finds its key by a short scan of the stream's
 * keys and allocates nothing once the buffer is large enough. */
gpuws_status gpuws__stream_scratch(gpuws_stream *s, const gpuws__stream_key *key, size_t bytes, gpuws_buffer **out);
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
/* Host memory a driver keeps on the stream between calls (a plan for the next call of the same shape), one block per
 * key: `bytes` zeroed on first use; every request of a key must ask for the same size (else GPUWS_ERR_INTERNAL).
 * Freed with the stream. A stream is used by one thread at a time, so it needs no lock. */
gpuws_status gpuws__stream_memo(gpuws_stream *s, const gpuws__stream_key *key, size_t bytes, void **out);
/* Makes work enqueued on s after this call wait for the event e (recorded, same context) without blocking the host:
 * how pipelines order uploads, kernels and downloads on separate streams. Backends without a device-side wait block
 * the host on the event instead (same order, no overlap). */
gpuws_status gpuws__stream_wait_event(gpuws_stream *s, gpuws_event *e);
/* Pinned host memory for the staging of the _host calls, kept with the context between calls: pinning costs far more
 * than the transfers it serves (about 1.5 GB/s, and one process pins one buffer at a time). _take hands out a kept
 * block of at least `bytes` (at most twice as large) or pins a new one (gpuws_host_alloc); _give keeps the block for
 * the next take while the context keeps no more than the staging_keep_mib knob (auto: 512 MiB, but nothing where
 * device memory is host memory: the CPU backend, PoCL), else frees it. Kept blocks are freed with the context.
 * Thread-safe. */
gpuws_status gpuws__staging_take(gpuws_context *ctx, size_t bytes, void **p, size_t *got);
/* The transfers behind gpuws_buffer_write / _read (and _async): the backend's copy, or for a large one from or into
 * pageable memory on a GPU, a copy through pinned staging blocks that several host threads fill or empty while the
 * device copies the block before (core/staged.c; knob staged_copy_mib). A staged transfer returns once done, which
 * an _async call may. Arguments checked. */
gpuws_status gpuws__write(gpuws_stream *s, gpuws_buffer *dst, size_t off, const void *src, size_t n, int blocking);
gpuws_status gpuws__read(gpuws_stream *s, const gpuws_buffer *src, size_t off, void *dst, size_t n, int blocking);
/* A blocking read into pageable memory staged through blocks that the context keeps already (three of them; none
 * is pinned for it) from 8 MiB on, where gpuws__read would leave a transfer below its threshold to the driver's
 * copy; else gpuws__read's. For reads of a few tens of MB each that follow staged transfers (a band's records). */
gpuws_status gpuws__read_kept(gpuws_stream *s, const gpuws_buffer *src, size_t off, void *dst, size_t n);
void gpuws__staging_give(gpuws_context *ctx, void *p, size_t bytes);
/* Whether [p, p + n) is host memory pinned for ctx (its host_alloc's; on CUDA any page-locked memory), which its
 * transfers may use as it is. */
bool gpuws__host_pinned(gpuws_context *ctx, const void *p, size_t n);
void gpuws__staging_release(gpuws_context *ctx); /* frees every kept block (gpuws_context_destroy) */
/* Device memory free now in bytes: the driver's own count where it has one (CUDA), else three quarters of the
 * device's global memory (OpenCL has no query; the CPU backend's memory is the host's). */
uint64_t gpuws__device_free_bytes(gpuws_context *ctx);
/* Reads n bytes into host memory once all the work enqueued on s before it has finished: what
 * gpuws_buffer_read_async followed by gpuws_stream_synchronize does, as one blocking read (on NVIDIA's OpenCL a
 * blocking read returns sooner than a non-blocking read + clFinish). Reads of up to
 * GPUWS__STAGING_BYTES go through the stream's pinned staging memory. n > 0. */
gpuws_status gpuws__buffer_read_sync(gpuws_stream *s, const gpuws_buffer *src, size_t offset, void *dst, size_t n);
/* A small read the host waits for while the device goes on: _start enqueues the read of n <= GPUWS__STAGING_BYTES
 * bytes into the stream's pinned staging memory; the caller may enqueue more work on s; _finish waits for the read
 * alone (not for that later work) and copies the bytes to dst. Every successful _start needs its _finish (also on
 * an error path: it releases the read), and a stream has one read in flight at a time. Pinned memory and waiting
 * for the read alone return a kernel's few bytes sooner than a blocking read into pageable memory, on CUDA and
 * NVIDIA's OpenCL alike. */
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

#endif
