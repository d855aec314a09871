/* Host driver for label: validation, then the reference on the CPU backend or three launches on GPU backends.
 *
 * GPU plan (kernels in label.cu / label.cl; docs/algorithms/label.md says why):
 *   label_tiles_{4,8}   the first ntiles blocks (by ticket) one 32x32 tile each: union-find in shared memory,
 *                       L = 1 + index of the tile-local root, then the tile's flag; the later blocks one thread per
 *                       tile-border pixel: once both tiles' flags are up, the global union-find (compare-and-swap)
 *   label_flatten       per chunk of 2048 pixels: L -> root, ranks of the roots inside the chunk, chunk counts; the
 *                       last block to finish scans the counts (exclusive prefix sums, the total N after them)
 *   label_relabel       per pixel: L = offset of the root's chunk + rank of the root
 * N (4 bytes) is read back before relabel runs: the call returns once N is known, and relabel completes on the
 * stream. Roots are each component's smallest raster index, so the numbering is SciPy's.
 * The tiles' flags live in the stream's zeroed memory (gpuws__stream_zeroed), which label_flatten clears again;
 * both fused kernels draw from the stream's ticket counter. */
#include "../common/driver.h"
#include "label_layout.h"
#include "label_ref.h"

#include <limits.h>

typedef struct {
    size_t width, height, n, tiles_x, ntiles, nchunks;
} label_geom;

static label_geom label_geometry(size_t width, size_t height)
{
    label_geom g = {width, height, width * height, (width + LABEL_TILE_W - 1) / LABEL_TILE_W, 0, 0};
    g.ntiles = g.tiles_x * ((height + LABEL_TILE_H - 1) / LABEL_TILE_H);
    g.nchunks = (g.n + LABEL_CHUNK - 1) / LABEL_CHUNK;
    return g;
}

/* The two launches that write L and the chunk counts (each draws from the stream's ticket counter). */
static gpuws_status label_enqueue(gpuws_stream *s, const label_geom *g, const gpuws_buffer *mask, int conn,
                                  gpuws_buffer *labels, gpuws_buffer *counts, gpuws_buffer *flags)
{
    const char *opt = gpuws__nv_ptx_options(s->ctx);
    const size_t tiles_x = g->tiles_x, ntiles = g->ntiles, nchunks = g->nchunks;
    gpuws_buffer *m = (gpuws_buffer *)mask, *tickets;
    const uint32_t w32 = (uint32_t)g->width, h32 = (uint32_t)g->height, n32 = (uint32_t)g->n;
    uint32_t base;
    gpuws_status st = gpuws__stream_tickets(s, &tickets, &base);
    if (st) return st;
    /* merge items: one thread each where the grid allows (tiles + merge blocks within the grid's limit) */
    const uint64_t items = (uint64_t)ntiles * (conn == 8 ? LABEL_TILE_W + 2 * LABEL_TILE_H : LABEL_TILE_W + LABEL_TILE_H);
    const uint64_t block = LABEL_TILE_W * LABEL_TILE_ROWS;
    uint64_t limit = s->ctx->info.max_grid_dims[0] < UINT32_MAX ? s->ctx->info.max_grid_dims[0] : UINT32_MAX;
    if (ntiles >= limit)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "label: %zu tiles leave no room for merge blocks in a grid of %llu",
                            ntiles, (unsigned long long)limit);
    uint64_t merge_blocks = (items + block - 1) / block;
    if (merge_blocks > limit - ntiles) merge_blocks = limit - ntiles;
    const uint64_t grid = ntiles + merge_blocks;
    gpuws_launch_config c_tiles = {{(uint32_t)grid, 1, 1}, {LABEL_TILE_W, LABEL_TILE_ROWS, 1}};
    gpuws_arg a_tiles[] = {gpuws_arg_buffer(m), gpuws_arg_buffer(labels), gpuws_arg_u32(w32), gpuws_arg_u32(h32),
                           gpuws_arg_u32((uint32_t)tiles_x), gpuws_arg_u32((uint32_t)ntiles), gpuws_arg_u64(items),
                           gpuws_arg_buffer(tickets), gpuws_arg_u32(base), gpuws_arg_buffer(flags)};
    st = gpuws__launch_named(s, conn == 8 ? "label_tiles_8" : "label_tiles_4", opt, &c_tiles, a_tiles,
                             GPUWS__NARGS(a_tiles));
    gpuws__stream_tickets_drawn(s, st == GPUWS_OK, (uint32_t)grid);
    if (st || (st = gpuws__stream_tickets(s, &tickets, &base))) return st;

    gpuws_launch_config c_flat = {{(uint32_t)nchunks, 1, 1}, {LABEL_CHUNK_THREADS, 1, 1}};
    gpuws_arg a_flat[] = {gpuws_arg_buffer(m), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts), gpuws_arg_u32(n32),
                          gpuws_arg_u32((uint32_t)nchunks), gpuws_arg_buffer(tickets), gpuws_arg_u32(base),
                          gpuws_arg_buffer(flags), gpuws_arg_u32((uint32_t)ntiles)};
    st = gpuws__launch_named(s, "label_flatten", opt, &c_flat, a_flat, GPUWS__NARGS(a_flat));
    gpuws__stream_tickets_drawn(s, st == GPUWS_OK, (uint32_t)nchunks);
    return st;
}

static gpuws_status label_gpu(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                              gpuws_buffer *labels, size_t *num_labels)
{
    gpuws_context *ctx = s->ctx;
    const label_geom g = label_geometry(width, height);
    const size_t n = g.n, ntiles = g.ntiles, nchunks = g.nchunks;
    /* Every kernel is looked up (which may fail) before the first launch writes into labels: on error labels
     * must stay untouched. The launches below find them in the context. */
    const char *const names[] = {conn == 8 ? "label_tiles_8" : "label_tiles_4", "label_flatten", "label_relabel"};
    gpuws_kernel *k;
    gpuws_status st = GPUWS_OK;
    const char *opt = gpuws__nv_ptx_options(ctx);
    for (size_t i = 0; i < GPUWS__NARGS(names) && !st; i++) st = gpuws__kernel_get_ex(ctx, names[i], opt, &k);
    gpuws_buffer *counts, *flags;
    if (st || (st = gpuws__stream_scratch(s, 2, (nchunks + 1) * sizeof(int32_t), &counts)) ||
        (st = gpuws__stream_zeroed(s, ntiles * sizeof(uint32_t), &flags)))
        return st;
    if ((st = label_enqueue(s, &g, mask, conn, labels, counts, flags))) {
        gpuws__stream_zeroed_dirty(s); /* a launch that ran may have left flags set */
        return st;
    }
    gpuws__pending_read rd;
    if ((st = gpuws__buffer_read_start(s, counts, nchunks * sizeof(int32_t), sizeof(int32_t), &rd))) return st;
    const size_t threads = (n + LABEL_PER_THREAD - 1) / LABEL_PER_THREAD;
    gpuws_launch_config c_rel = gpuws__config_1d(threads, 256, UINT32_MAX);
    gpuws_arg a_rel[] = {gpuws_arg_buffer((gpuws_buffer *)mask), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts),
                         gpuws_arg_u32((uint32_t)n)};
    st = gpuws__launch_named(s, "label_relabel", opt, &c_rel, a_rel, GPUWS__NARGS(a_rel));
    int32_t total = 0;
    const gpuws_status wst = gpuws__buffer_read_finish(s, &rd, &total);
    if (st || (st = wst)) return st;
    *num_labels = (size_t)total;
    return GPUWS_OK;
}

gpuws_status gpuws_label(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int connectivity,
                         gpuws_buffer *labels, size_t *num_labels)
{
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(mask, "mask", &ctx);
    if (st || (st = gpuws__resolve_stream(ctx, &s, "argument 'stream'"))) return st;
    if (connectivity != 4 && connectivity != 8)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: connectivity %d is not 4 or 8", connectivity);
    if (!num_labels) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: argument 'num_labels' is NULL");
    size_t n;
    if (gpuws__mul_overflows(width, height, &n))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "label: %zu x %zu pixels overflow size_t", width, height);
    if (n > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "label: %zu x %zu = %zu pixels; labels and pixel indices are int32, so "
                            "at most 2^31 - 1 pixels", width, height, n);
    if ((st = gpuws__check_array(ctx, mask, "mask", n, 1)) || (st = gpuws__check_array(ctx, labels, "labels", n, 4)))
        return st;
    if (labels == mask) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: 'labels' and 'mask' are the same buffer");
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
