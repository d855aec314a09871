/* Host driver for label: validation, then the reference on the CPU backend or five launches on GPU backends.
 *
 * GPU plan (kernels in label.cu / label.cl; docs/algorithms/label.md says why):
 *   label_local_{4,8}   per 32x32 tile, union-find in shared memory: L = 1 + index of the tile-local root
 *   label_merge_{4,8}   per tile-border pixel: global union-find (atomicMin) with neighbours in other tiles
 *   label_flatten       per chunk of 2048 pixels: L -> root, ranks of the roots inside the chunk, chunk counts
 *   label_scan          one block: exclusive prefix sum of the chunk counts; the total (N) after them
 *   label_relabel       per pixel: L = offset of the root's chunk + rank of the root
 * N (4 bytes) is read back while relabel runs. Roots are each component's smallest raster index, so the numbering
 * is SciPy's. */
#include "../common/driver.h"
#include "label_driver.h"
#include "label_layout.h"
#include "label_ref.h"

#include <limits.h>

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_counts = { "label.counts" };

/* The passes up to the scan: on return, the chunk counts and N (after them) are on their way in *counts_out. */
static gpuws_status label_gpu_count(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                                    gpuws_buffer *labels, gpuws_buffer **counts_out)
{
    gpuws_context *ctx = s->ctx;
    const size_t n = width * height;
    const size_t tiles_x = (width + LABEL_TILE_W - 1) / LABEL_TILE_W,
                 tiles_y = (height + LABEL_TILE_H - 1) / LABEL_TILE_H;
    const size_t ntiles = tiles_x * tiles_y, nchunks = (n + LABEL_CHUNK - 1) / LABEL_CHUNK;
    const uint64_t items =
        (uint64_t)ntiles * (conn == 8 ? LABEL_TILE_W + 2 * LABEL_TILE_H : LABEL_TILE_W + LABEL_TILE_H);
    /* Every kernel is looked up (which may fail) before the first launch writes into labels: on error labels
     * must stay untouched. The launches below find them in the context. */
    const char *const names[] = { conn == 8 ? "label_local_8" : "label_local_4",
                                  conn == 8 ? "label_merge_8" : "label_merge_4", "label_flatten", "label_scan",
                                  "label_relabel" };
    gpuws_kernel *k;
    gpuws_status st = GPUWS_OK;
    for (size_t i = 0; i < GPUWS__NARGS(names) && !st; i++) st = gpuws__kernel_get_ex(ctx, names[i], NULL, &k);
    gpuws_buffer *counts;
    if (st || (st = gpuws__stream_scratch(s, &key_counts, (nchunks + 1) * sizeof(int32_t), &counts))) return st;
    *counts_out = counts;
    gpuws_buffer *m = (gpuws_buffer *)mask;
    const uint32_t w32 = (uint32_t)width, h32 = (uint32_t)height, n32 = (uint32_t)n;

    gpuws_launch_config c_local = { { (uint32_t)ntiles, 1, 1 }, { LABEL_TILE_W, LABEL_TILE_ROWS, 1 } };
    gpuws_arg a_local[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels), gpuws_arg_u32(w32), gpuws_arg_u32(h32),
                            gpuws_arg_u32((uint32_t)tiles_x) };
    if ((st = gpuws__launch_named(s, conn == 8 ? "label_local_8" : "label_local_4", NULL, &c_local, a_local,
                                  GPUWS__NARGS(a_local))))
        return st;

    /* one item per thread where the grid allows it; the kernel strides over the rest */
    uint64_t max_blocks = ctx->info.max_grid_dims[0] < UINT32_MAX ? ctx->info.max_grid_dims[0] : UINT32_MAX;
    gpuws_launch_config c_merge = gpuws__config_1d(items, 256, (uint32_t)max_blocks);
    gpuws_arg a_merge[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels),         gpuws_arg_u32(w32),
                            gpuws_arg_u32(h32),  gpuws_arg_u32((uint32_t)tiles_x), gpuws_arg_u64(items) };
    if ((st = gpuws__launch_named(s, conn == 8 ? "label_merge_8" : "label_merge_4", NULL, &c_merge, a_merge,
                                  GPUWS__NARGS(a_merge))))
        return st;

    gpuws_launch_config c_flat = { { (uint32_t)nchunks, 1, 1 }, { LABEL_CHUNK_THREADS, 1, 1 } };
    gpuws_arg a_flat[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts),
                           gpuws_arg_u32(n32) };
    if ((st = gpuws__launch_named(s, "label_flatten", NULL, &c_flat, a_flat, GPUWS__NARGS(a_flat)))) return st;

    gpuws_kernel *kscan;
    uint32_t sblock;
    if ((st = gpuws__kernel_block(ctx, "label_scan", NULL, gpuws__is_cpu_device(ctx) ? 256 : 1024, &kscan, &sblock)))
        return st;
    gpuws_launch_config c_scan = { { 1, 1, 1 }, { sblock, 1, 1 } };
    gpuws_arg a_scan[] = { gpuws_arg_buffer(counts), gpuws_arg_u32((uint32_t)nchunks) };
    return gpuws_launch(s, kscan, &c_scan, a_scan, GPUWS__NARGS(a_scan));
}

/* The last pass: every pixel from its root to its number. */
static gpuws_status label_gpu_relabel(gpuws_stream *s, size_t n, const gpuws_buffer *mask, gpuws_buffer *labels,
                                      gpuws_buffer *counts)
{
    const size_t threads = (n + LABEL_PER_THREAD - 1) / LABEL_PER_THREAD;
    gpuws_launch_config c_rel = gpuws__config_1d(threads, 256, UINT32_MAX);
    gpuws_arg a_rel[] = { gpuws_arg_buffer((gpuws_buffer *)mask), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts),
                          gpuws_arg_u32((uint32_t)n) };
    return gpuws__launch_named(s, "label_relabel", NULL, &c_rel, a_rel, GPUWS__NARGS(a_rel));
}

static gpuws_status label_gpu(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                              gpuws_buffer *labels, size_t *num_labels)
{
    const size_t n = width * height, nchunks = (n + LABEL_CHUNK - 1) / LABEL_CHUNK;
    gpuws_buffer *counts;
    gpuws_status st = label_gpu_count(s, width, height, mask, conn, labels, &counts);
    if (st) return st;
    /* N is read before relabel is enqueued, and the host waits for that read alone: the call returns once N is
     * known while relabel runs (the labels are complete in stream order). */
    gpuws__pending_read rd;
    if ((st = gpuws__buffer_read_start(s, counts, nchunks * sizeof(int32_t), sizeof(int32_t), &rd))) return st;
    st = label_gpu_relabel(s, n, mask, labels, counts);
    int32_t total = 0;
    const gpuws_status wst = gpuws__buffer_read_finish(s, &rd, &total);
    if (st || (st = wst)) return st;
    *num_labels = (size_t)total;
    return GPUWS_OK;
}

gpuws_status gpuws__label_enqueue(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                                  gpuws_buffer *labels, gpuws__label_count *count)
{
    *count = (gpuws__label_count){ NULL, 0, 0 };
    if (s->ctx->backend->kind == GPUWS_BACKEND_CPU) {
        count->value = gpuws_label_ref(gpuws__cpu_ptr(mask), width, height, conn, gpuws__cpu_ptr(labels));
        return GPUWS_OK;
    }
    gpuws_buffer *counts;
    const size_t n = width * height;
    gpuws_status st = label_gpu_count(s, width, height, mask, conn, labels, &counts);
    if (st || (st = label_gpu_relabel(s, n, mask, labels, counts))) return st;
    count->buffer = counts;
    count->offset = (n + LABEL_CHUNK - 1) / LABEL_CHUNK * sizeof(int32_t);
    return GPUWS_OK;
}

gpuws_status gpuws_label(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int connectivity,
                         gpuws_buffer *labels, size_t *num_labels)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(mask, "mask", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "label"))) return st;
    if (connectivity != 4 && connectivity != 8)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: connectivity %d is not 4 or 8", connectivity);
    if (!num_labels) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: argument 'num_labels' is NULL");
    size_t n;
    if (gpuws__mul_overflows(width, height, &n))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "label: %zu x %zu pixels overflow size_t", width, height);
    if (n > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "label: %zu x %zu = %zu pixels; labels and pixel indices are int32, so "
                            "at most 2^31 - 1 pixels",
                            width, height, n);
    if ((st = gpuws__check_array(ctx, mask, "mask", n, 1)) || (st = gpuws__check_array(ctx, labels, "labels", n, 4)))
        return st;
    if (labels == mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: 'labels' and 'mask' are the same buffer");
    if (n == 0) {
        *num_labels = 0;
        return GPUWS_OK;
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        *num_labels = gpuws_label_ref(gpuws__cpu_ptr(mask), width, height, connectivity, gpuws__cpu_ptr(labels));
        return GPUWS_OK;
    }
    return label_gpu(s, width, height, mask, connectivity, labels, num_labels);
}
