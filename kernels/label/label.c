/* Host driver for label: validation, then the reference on the CPU backend or five launches on GPU backends.
 *
 * GPU plan (kernels in label.cu / label.cl; docs/algorithms/label.md says why):
 *   label_local_{4,8}   per 32x32 tile, union-find in shared memory: L = 1 + index of the tile-local root
 *   label_merge_{4,8}   per tile-border pixel: global union-find (atomicMin) with neighbours in other tiles
 *   label_flatten       per chunk of 2048 pixels: L -> root, ranks of the roots inside the chunk, chunk counts
 *   label_scan          one block: exclusive prefix sum of the chunk counts; the total (N) after them
 *   label_relabel       per pixel: L = offset of the root's chunk + rank of the root
 * N (4 bytes) is read back while relabel runs. Roots are each component's smallest raster index, so the numbering
 * is SciPy's.
 *
 * The kernels index a labelling's pixels in 32 bits (L = 1 + index in an int32), so an image of more pixels than
 * that is labelled in slabs of whole rows (label_slabs below): each slab as an image of its own at an offset into the
 * buffers, then one more pass maps every slab's labels to their final numbers, joined across the slabs' borders as
 * label_numbering.h says. */
#include "../common/driver.h"
#include "label_driver.h"
#include "label_layout.h"
#include "label_numbering.h"
#include "label_ref.h"
#include "../../core/threads.h"

#include <limits.h>
#include <string.h>
#include <time.h>

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_counts = { "label.counts" };
static const gpuws__stream_key key_node_label = { "label.node_label" };
static const gpuws__stream_key key_node_final = { "label.node_final" };
static const gpuws__stream_key key_node_nh = { "label.node_nh" };
static const gpuws__stream_key key_remap_table = { "label.remap_table" };

/* The passes up to the scan over the width x height pixels from pixel `slab` on: on return, the chunk counts and N
 * (after them) are on their way in *counts_out. */
static gpuws_status label_gpu_count(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                                    gpuws_buffer *labels, uint64_t slab, gpuws_buffer **counts_out)
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
    gpuws_arg a_local[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels),         gpuws_arg_u32(w32),
                            gpuws_arg_u32(h32),  gpuws_arg_u32((uint32_t)tiles_x), gpuws_arg_u64(slab) };
    if ((st = gpuws__launch_named(s, conn == 8 ? "label_local_8" : "label_local_4", NULL, &c_local, a_local,
                                  GPUWS__NARGS(a_local))))
        return st;

    /* one item per thread where the grid allows it; the kernel strides over the rest */
    uint64_t max_blocks = ctx->info.max_grid_dims[0] < UINT32_MAX ? ctx->info.max_grid_dims[0] : UINT32_MAX;
    gpuws_launch_config c_merge = gpuws__config_1d(items, 256, (uint32_t)max_blocks);
    gpuws_arg a_merge[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels),         gpuws_arg_u32(w32),
                            gpuws_arg_u32(h32),  gpuws_arg_u32((uint32_t)tiles_x), gpuws_arg_u64(items),
                            gpuws_arg_u64(slab) };
    if ((st = gpuws__launch_named(s, conn == 8 ? "label_merge_8" : "label_merge_4", NULL, &c_merge, a_merge,
                                  GPUWS__NARGS(a_merge))))
        return st;

    gpuws_launch_config c_flat = { { (uint32_t)nchunks, 1, 1 }, { LABEL_CHUNK_THREADS, 1, 1 } };
    gpuws_arg a_flat[] = { gpuws_arg_buffer(m), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts), gpuws_arg_u32(n32),
                           gpuws_arg_u64(slab) };
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
                                      uint64_t slab, gpuws_buffer *counts)
{
    const size_t threads = (n + LABEL_PER_THREAD - 1) / LABEL_PER_THREAD;
    gpuws_launch_config c_rel = gpuws__config_1d(threads, 256, UINT32_MAX);
    gpuws_arg a_rel[] = { gpuws_arg_buffer((gpuws_buffer *)mask), gpuws_arg_buffer(labels), gpuws_arg_buffer(counts),
                          gpuws_arg_u32((uint32_t)n), gpuws_arg_u64(slab) };
    return gpuws__launch_named(s, "label_relabel", NULL, &c_rel, a_rel, GPUWS__NARGS(a_rel));
}

static gpuws_status label_gpu(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                              gpuws_buffer *labels, size_t *num_labels)
{
    const size_t n = width * height, nchunks = (n + LABEL_CHUNK - 1) / LABEL_CHUNK;
    gpuws_buffer *counts;
    gpuws_status st = label_gpu_count(s, width, height, mask, conn, labels, 0, &counts);
    if (st) return st;
    /* N is read before relabel is enqueued, and the host waits for that read alone: the call returns once N is
     * known while relabel runs (the labels are complete in stream order). */
    gpuws__pending_read rd;
    if ((st = gpuws__buffer_read_start(s, counts, nchunks * sizeof(int32_t), sizeof(int32_t), &rd))) return st;
    st = label_gpu_relabel(s, n, mask, labels, 0, counts);
    int32_t total = 0;
    const gpuws_status wst = gpuws__buffer_read_finish(s, &rd, &total);
    if (st || (st = wst)) return st;
    *num_labels = (size_t)total;
    return GPUWS_OK;
}

/* ---- slabs: images of more pixels than a labelling's int32 indices reach ---------------------------------------- */

/* The most pixels one labelling takes: 2^31 - 1, or fewer for tests (knob label_slab_pixels). */
static size_t slab_pixels(const gpuws_context *ctx)
{
    const int64_t k = ctx->tuning.label_slab_pixels;
    return k > 0 ? (size_t)k : (size_t)INT32_MAX;
}

/* A slab's labels l (1..N_b, band b of the numbering) to their final numbers on the host: the node's final number
 * where l is one of the slab's border labels, else offset_b + l less the non-root nodes before it. nh[k]: the nodes
 * before node k that are not roots. What label_remap does on a device. */
static void remap_host(int32_t *L, size_t n, const gpuws__label_numbering *nb, size_t b, const uint64_t *nh)
{
    const size_t j0 = nb->node_base[b], j1 = nb->node_base[b + 1];
    int32_t last = 0, last_final = 0; /* a run of one component's pixels along a row searches once */
    for (size_t i = 0; i < n; i++) {
        const int32_t l = L[i];
        if (l <= 0) continue;
        if (l == last) {
            L[i] = last_final;
            continue;
        }
        size_t lo = j0, hi = j1;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (nb->node_label[mid] < l) lo = mid + 1;
            else hi = mid;
        }
        last = l;
        last_final =
            lo < j1 && nb->node_label[lo] == l ? nb->final[lo] : (int32_t)(nb->offset[b] + (uint64_t)l - nh[lo]);
        L[i] = last_final;
    }
}

gpuws_status gpuws__label_remap_launch(gpuws_stream *s, gpuws_buffer *labels, uint64_t first, size_t px,
                                       gpuws_buffer *const nodes[3], uint64_t j0, uint64_t j1, uint64_t offset)
{
    const gpuws_launch_config cfg = gpuws__config_1d(px, 256, gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_arg a[] = { gpuws_arg_buffer(labels),   gpuws_arg_u64(first),       gpuws_arg_u32((uint32_t)px),
                            gpuws_arg_buffer(nodes[0]), gpuws_arg_buffer(nodes[1]), gpuws_arg_buffer(nodes[2]),
                            gpuws_arg_u64(j0),          gpuws_arg_u64(j1),          gpuws_arg_u64(offset) };
    return gpuws__launch_named(s, "label_remap", NULL, &cfg, a, GPUWS__NARGS(a));
}

/* Enqueues label_remap_table: table[l - 1] for the count labels of a band, as gpuws__label_remap_launch maps them. */
static gpuws_status remap_table_launch(gpuws_stream *s, gpuws_buffer *table, size_t count, gpuws_buffer *const nodes[3],
                                       uint64_t j0, uint64_t j1, uint64_t offset)
{
    const gpuws_launch_config cfg = gpuws__config_1d(count, 256, gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_arg a[] = { gpuws_arg_buffer(table),    gpuws_arg_u32((uint32_t)count), gpuws_arg_buffer(nodes[0]),
                            gpuws_arg_buffer(nodes[1]), gpuws_arg_buffer(nodes[2]),     gpuws_arg_u64(j0),
                            gpuws_arg_u64(j1),          gpuws_arg_u64(offset) };
    return gpuws__launch_named(s, "label_remap_table", NULL, &cfg, a, GPUWS__NARGS(a));
}

/* ---- the CPU backend: bands of rows on the host's cores ---------------------------------------------------------- */

typedef struct {
    const uint8_t *mask;
    int32_t *labels;
    size_t w, h, rows;
    int conn;
    gpuws__label_numbering *nb;
    const uint64_t *nh; /* NULL: label the bands; else their labels to the final numbers */
} cpu_bands;

static void cpu_band(void *arg, size_t part, size_t b0, size_t b1)
{
    (void)part;
    const cpu_bands *j = arg;
    for (size_t b = b0; b < b1; b++) {
        const size_t rb = b + 1 < j->nb->bands ? j->rows : j->h - b * j->rows, first = b * j->rows * j->w;
        if (!j->nh) j->nb->count[b] = gpuws_label_ref(j->mask + first, j->w, rb, j->conn, j->labels + first);
        else remap_host(j->labels + first, rb * j->w, j->nb, b, j->nh);
    }
}

/* The bands of `rows` rows (fewer than h), labelled on threads, then joined and numbered. */
static gpuws_status label_cpu_bands(const uint8_t *mask, size_t w, size_t h, size_t rows, int conn, int32_t *labels,
                                    const char *name, size_t *num_labels)
{
    const size_t bands = (h + rows - 1) / rows, max_nodes = 2 * w * bands, cpus = gpuws__cpu_count(),
                 parts = bands < cpus ? bands : cpus; /* each thread a run of bands */
    gpuws__label_numbering nb;
    uint64_t *nh = NULL;
    /* everything had before the first band is labelled: on error the labels are untouched */
    gpuws_status st = gpuws__numbering_make(&nb, name, w, bands);
    if (!st) st = gpuws__numbering_reserve(&nb, (rows * w + 1) / 2, max_nodes);
    if (!st && !(nh = gpuws__malloc((max_nodes + 1) * sizeof *nh)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the bands' borders (%zu bytes)", name,
                          (max_nodes + 1) * sizeof *nh);
    if (!st) {
        cpu_bands j = { mask, labels, w, h, rows, conn, &nb, NULL };
        gpuws__run_ranges(bands, parts, cpu_band, &j);
        for (size_t b = 0; b < bands && !st; b++) {
            const size_t rb = b + 1 < bands ? rows : h - b * rows;
            const int32_t *L = labels + b * rows * w;
            st = gpuws__numbering_harvest(&nb, conn, b, L, L + (rb - 1) * w);
        }
        if (!st) st = gpuws__numbering_number(&nb);
        if (!st) {
            gpuws__numbering_non_roots(&nb, nh);
            j.nh = nh;
            gpuws__run_ranges(bands, parts, cpu_band, &j);
            *num_labels = nb.total;
        }
    }
    gpuws__free(nh);
    gpuws__numbering_free(&nb);
    return st;
}

/* Milliseconds on the monotonic clock, for the debug log's times. */
static double clock_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- parts: rows held by several streams (devices), in order ----------------------------------------------------- */

typedef struct {
    size_t part;    /* whose rows */
    uint64_t first; /* pixel index of the band's first pixel in the part's buffers */
    size_t rows;
} band_place;

typedef struct {
    const band_place *bands;
    const gpuws__label_part *parts;
    const gpuws__label_numbering *nb;
    const uint64_t *nh;
    size_t b, b0; /* the band, and the caller's first band among every caller's (label_parts) */
} cpu_remap_job;

static void cpu_remap_range(void *arg, size_t part, size_t i0, size_t i1)
{
    (void)part;
    const cpu_remap_job *j = arg;
    const band_place *bp = &j->bands[j->b];
    int32_t *L = (int32_t *)gpuws__cpu_ptr(j->parts[bp->part].labels) + bp->first;
    remap_host(L + i0, i1 - i0, j->nb, j->b0 + j->b, j->nh);
}

/* A band's count and first and last rows as the words of the callers' exchange: the count, then the labels two to a
 * word (non-negative int32s). */
static void gather_band(uint64_t *g, size_t w, size_t count, const int32_t *row0, const int32_t *row1)
{
    g[0] = count;
    for (size_t x = 0; x < w; x++) g[1 + x] = (uint64_t)(uint32_t)row0[x] << 32 | (uint32_t)row1[x];
}

/* Enqueues band b's labelling on its part's stream (the count and border rows to be read before the next). */
static gpuws_status parts_enqueue_band(gpuws__label_part *parts, const band_place *bp, size_t b, size_t w, int conn,
                                       gpuws_buffer **counts)
{
    gpuws__label_part *p = &parts[bp[b].part];
    gpuws_status st =
        label_gpu_count(p->stream, w, bp[b].rows, p->mask, conn, p->labels, bp[b].first, &counts[bp[b].part]);
    return st ? st : label_gpu_relabel(p->stream, bp[b].rows * w, p->mask, p->labels, bp[b].first, counts[bp[b].part]);
}

/* Every band's labels and border rows: on a GPU each part's next band is enqueued once the host has read its last
 * one's, so every part's first band runs at once; the host reads them in band order. On CPU-type OpenCL devices one
 * band after another: they share the host's cores, and PoCL can fail an assertion when two command queues run one
 * kernel at the same time (sigma_clip_parts.c). */
static gpuws_status parts_label_bands(gpuws__label_part *parts, const band_place *bp, size_t bands, size_t w, int conn,
                                      const char *name, gpuws__label_numbering *nb, gpuws_buffer **counts,
                                      int32_t *border, double seen[4], uint64_t *gather)
{
    gpuws_context *ctx = parts[bp[0].part].stream->ctx;
    const bool cpu = ctx->backend->kind == GPUWS_BACKEND_CPU, serial = gpuws__is_cpu_device(ctx);
    gpuws_status st = GPUWS_OK;
    for (size_t b = 0; b < bands && !st && !cpu && !serial; b++)
        if (b == 0 || bp[b].part != bp[b - 1].part) st = parts_enqueue_band(parts, bp, b, w, conn, counts);
    for (size_t b = 0; b < bands && !st; b++) {
        gpuws__label_part *p = &parts[bp[b].part];
        const size_t px = bp[b].rows * w;
        const int32_t *row0, *row1;
        size_t count = 0; /* the band's components */
        if (cpu) {
            const int32_t *L = (const int32_t *)gpuws__cpu_ptr(p->labels) + bp[b].first;
            st = gpuws__label_cpu((const uint8_t *)gpuws__cpu_ptr(p->mask) + bp[b].first, w, bp[b].rows, conn,
                                  (int32_t *)L, gpuws__cpu_count(), name, &count);
            row0 = L, row1 = L + px - w;
        } else {
            int32_t total = 0;
            if (serial && (st = parts_enqueue_band(parts, bp, b, w, conn, counts))) break;
            if (b < 2) seen[2 * b] = clock_ms();
            gpuws_buffer *c = counts[bp[b].part];
            const size_t nchunks = (px + LABEL_CHUNK - 1) / LABEL_CHUNK;
            if ((st = gpuws__buffer_read_sync(p->stream, c, nchunks * sizeof(int32_t), &total, sizeof total)) ||
                (st = gpuws__buffer_read_sync(p->stream, p->labels, bp[b].first * sizeof(int32_t), border,
                                              w * sizeof(int32_t))) ||
                (st = gpuws__buffer_read_sync(p->stream, p->labels, (bp[b].first + px - w) * sizeof(int32_t),
                                              border + w, w * sizeof(int32_t))))
                break;
            count = (size_t)total;
            row0 = border, row1 = border + w;
            if (!serial && b + 1 < bands && bp[b + 1].part == bp[b].part)
                st = parts_enqueue_band(parts, bp, b + 1, w, conn, counts);
        }
        if (b < 2) seen[2 * b + 1] = clock_ms();
        if (st) break;
        if (gather) { /* several callers: the band's count and border rows for the exchange (label_parts) */
            gather_band(gather + b * (1 + w), w, count, row0, row1);
        } else {
            nb->count[b] = count;
            st = gpuws__numbering_harvest(nb, conn, b, row0, row1);
        }
    }
    return st;
}

/* Rows a band of the part holds: slab_rows, or as many as one labelling's int32 indices take (one at least). */
static size_t band_rows(const gpuws__label_part *p, size_t w, size_t slab_rows)
{
    const size_t r = slab_pixels(p->stream->ctx) / w;
    return slab_rows ? slab_rows : r ? r : 1;
}

/* Several callers (label_parts with an exchange): the first reduction, where they agree on the width and the
 * connectivity and learn each other's band counts (this caller's first band among all: *b0, their sum: *all). */
static gpuws_status agree_bands(const gpuws__label_exchange *x, const char *name, size_t w, int conn, size_t bands,
                                bool failed, size_t *b0, size_t *all, uint64_t *each)
{
    enum { WORDS = 1 + GPUWS__AGREE_WORDS(2) }; /* a failure count, the width and connectivity (gpuws__agree_words) */
    const size_t P = x->callers;
    const uint64_t values[2] = { w, (uint64_t)(uint32_t)conn };
    uint64_t v[WORDS], mine = bands, before, total;
    v[0] = failed;
    gpuws__agree_words(values, 2, v + 1);
    *b0 = *all = 0;
    gpuws_status st = x->reduce(x->user, v, WORDS);
    if (st) return gpuws__error_prefix(st, "%s: the reducer failed", name);
    if (v[0])
        return failed ? GPUWS_OK
                      : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %llu of %zu callers failed", name,
                                     (unsigned long long)v[0], P);
    if (gpuws__agree_check(v + 1, 2, P) < 2)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the %zu callers' width or connectivity differ", name, P);
    if ((st = gpuws__reduce_slots(x->reduce, x->user, x->caller, P, &mine, 1, &before, &total, each)))
        return gpuws__error_prefix(st, "%s: the reducer failed", name);
    *b0 = (size_t)before, *all = (size_t)total;
    return GPUWS_OK;
}

/* The parts' rows as one image: bands of at most slab_rows rows (0: as many as one labelling's int32 indices take)
 * labelled on their parts' devices, joined and numbered as label_numbering.h says, then mapped to their final
 * numbers in place. x (several callers, each with its own parts; NULL: one): the callers exchange their bands'
 * counts and border rows (1 + W words a band), and each joins and numbers every caller's bands. */
static gpuws_status label_parts(gpuws__label_part *parts, size_t np, size_t w, int conn, size_t slab_rows,
                                bool untouched, const gpuws__label_exchange *x, const char *name, size_t *num_labels)
{
    size_t bands = 0, max_px = 0;
    for (size_t p = 0; p < np; p++) {
        if (parts[p].rows)
            bands += (parts[p].rows + band_rows(&parts[p], w, slab_rows) - 1) / band_rows(&parts[p], w, slab_rows);
    }
    *num_labels = 0;
    for (size_t p = 0; p < np; p++) {
        parts[p].lo = parts[p].first = 1, parts[p].hi = 0;
        parts[p].remap = (gpuws__label_remap){ NULL };
    }
    if (bands == 0 && !x) return GPUWS_OK;
    const size_t slots = bands ? bands : 1;
    band_place *bp = gpuws__malloc(slots * sizeof *bp);
    gpuws_buffer **counts = gpuws__calloc(np ? np : 1, sizeof *counts);
    gpuws_buffer **dev = gpuws__calloc(3 * (np ? np : 1), sizeof *dev);
    int32_t *border = gpuws__malloc(2 * w * sizeof *border);
    uint64_t *nh = NULL, *gather = NULL, *each = NULL; /* each: every caller's bands (then its words: `words`) */
    gpuws__label_numbering nb;
    memset(&nb, 0, sizeof nb);
    gpuws_status st = GPUWS_OK;
    if (!bp || !counts || !dev || !border)
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu bands (%zu bytes)", name, bands,
                          slots * sizeof *bp + np * 4 * sizeof(gpuws_buffer *) + 2 * w * sizeof(int32_t));
    for (size_t p = 0, b = 0; p < np && !st; p++) {
        const size_t r = band_rows(&parts[p], w, slab_rows);
        for (size_t y = 0; y < parts[p].rows; y += r, b++) {
            bp[b] = (band_place){ p, (uint64_t)y * w, parts[p].rows - y < r ? parts[p].rows - y : r };
            if (bp[b].rows * w > max_px) max_px = bp[b].rows * w;
        }
    }
    /* b0: this caller's first band among every caller's; all: every caller's bands */
    size_t b0 = 0, all = bands;
    bool agreed = false; /* several callers, past their first reduction: they all make the next ones */
    if (x && !st && !(each = gpuws__calloc(x->callers, sizeof *each + sizeof(size_t))))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu callers' band counts (%zu bytes)", name,
                          x->callers, x->callers * (sizeof *each + sizeof(size_t)));
    if (x) {
        const gpuws_status ast = agree_bands(x, name, w, conn, bands, st != GPUWS_OK || x->failed, &b0, &all, each);
        if (!st) st = ast;
        if (x->failed && !st) st = GPUWS_ERR_INVALID_ARGUMENT; /* the caller's own error stays its message */
        agreed = !st;
    }
    const size_t max_nodes = 2 * w * all;
    const bool cpu = np && parts[0].stream->ctx->backend->kind == GPUWS_BACKEND_CPU; /* one backend */
    if (!st) st = gpuws__numbering_make(&nb, name, w, all);
    /* the table by band label: for the caller's own labels (`untouched`: left as they were when host memory runs
     * out) as large as a band's components could need, ceil(pixels / 2) (a checkerboard with connectivity 4), before
     * any band is labelled; else it grows to the bands' counts as they are joined, since for bands of 2^31 pixels that
     * reservation is gigabytes, whose fresh pages each call would fault in and unmap again */
    if (!st) st = gpuws__numbering_reserve(&nb, untouched ? (max_px + 1) / 2 : 0, max_nodes);
    if (!st && !(nh = gpuws__malloc((max_nodes + 1) * sizeof *nh)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the bands' borders (%zu bytes)", name,
                          (max_nodes + 1) * sizeof *nh);
    if (!st && x && !(gather = gpuws__calloc(x->callers + all * (1 + w), sizeof *gather)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the callers' borders (%zu bytes)", name,
                          (x->callers + all * (1 + w)) * sizeof *gather);
    for (size_t p = 0; p < np && !st && !cpu; p++) {
        gpuws_stream *s = parts[p].stream;
        gpuws_kernel *k;
        if (!parts[p].rows) continue;
        if (!(st = gpuws__kernel_get_ex(s->ctx, "label_remap", NULL, &k)) &&
            !(st = gpuws__stream_scratch(s, &key_node_label, max_nodes * sizeof(int32_t), &dev[3 * p])) &&
            !(st = gpuws__stream_scratch(s, &key_node_final, max_nodes * sizeof(int32_t), &dev[3 * p + 1])))
            st = gpuws__stream_scratch(s, &key_node_nh, (max_nodes + 1) * sizeof(uint64_t), &dev[3 * p + 2]);
    }
    if (x && agreed) { /* whether every caller could allocate: else none waits in the exchange below */
        uint64_t bad = st != GPUWS_OK;
        const gpuws_status rst = x->reduce(x->user, &bad, 1);
        if (!st && rst) st = gpuws__error_prefix(rst, "%s: the reducer failed", name);
        else if (!st && bad)
            st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %llu of %zu callers failed", name,
                              (unsigned long long)bad, x->callers);
        agreed = !st;
    }
    const double t0 = clock_ms();
    double seen[4] = { t0, t0, t0, t0 }; /* GPUWS_LOG=debug: when the first two bands' reads began and ended */
    if (!st && bands)
        st = parts_label_bands(parts, bp, bands, w, conn, name, &nb, counts, border, seen,
                               gather ? gather + x->caller + 1 + b0 * (1 + w) : NULL);
    if (x && agreed) {
        /* every caller's block: whether it failed (a failure while labelling is still exchanged, so that no caller
         * waits for it), then its bands; gathered, or summed among zeros. Band g of caller c at c + 1 + g (1 + w) */
        gather[x->caller + b0 * (1 + w)] = st != GPUWS_OK;
        size_t *words = (size_t *)(each + x->callers);
        for (size_t c = 0; c < x->callers; c++) words[c] = 1 + (size_t)each[c] * (1 + w);
        const gpuws_status rst = x->gather ? x->gather(x->user, gather, words, x->caller, x->callers, GPUWS_ALL_CALLERS)
                                           : x->reduce(x->user, gather, x->callers + all * (1 + w));
        uint64_t failed = 0;
        for (size_t c = 0, at = 0; c < x->callers; at += words[c++]) failed += gather[at];
        if (!st && rst) st = gpuws__error_prefix(rst, "%s: the %s failed", name, x->gather ? "gatherer" : "reducer");
        else if (!st && failed)
            st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %llu of %zu callers failed", name,
                              (unsigned long long)failed, x->callers);
        for (size_t c = 0, b = 0, at = 0; c < x->callers && !st; at += words[c++]) {
            for (size_t k = 0; k + 1 < words[c] && !st; k += 1 + w, b++) {
                const uint64_t *gb = gather + at + 1 + k;
                nb.count[b] = (size_t)gb[0];
                for (size_t i = 0; i < w; i++)
                    border[i] = (int32_t)(gb[1 + i] >> 32), border[w + i] = (int32_t)gb[1 + i];
                st = gpuws__numbering_harvest(&nb, conn, b, border, border + w);
            }
        }
    }
    const double t1 = clock_ms();
    if (!st) st = gpuws__numbering_number(&nb);
    if (!st) gpuws__numbering_non_roots(&nb, nh);
    for (size_t p = 0; p < np && !st && !cpu; p++) {
        gpuws_stream *s = parts[p].stream;
        if (!parts[p].rows) continue;
        if (nb.nodes && ((st = gpuws__write(s, dev[3 * p], 0, nb.node_label, nb.nodes * sizeof(int32_t), 1)) ||
                         (st = gpuws__write(s, dev[3 * p + 1], 0, nb.final, nb.nodes * sizeof(int32_t), 1))))
            break;
        st = gpuws__write(s, dev[3 * p + 2], 0, nh, (nb.nodes + 1) * sizeof(uint64_t), 1);
    }
    for (size_t b = 0; b < bands && !st; b++) {
        gpuws__label_part *p = &parts[bp[b].part];
        const size_t px = bp[b].rows * w, g = b0 + b;
        /* a band whose numbers are its own (no label before it, no border label of it or before it merged into
         * another) is final already: one band alone, or the first of several, often */
        if (nb.offset[g] == 0 && nb.nh_before[g + 1] == 0) continue;
        const bool alone = (b == 0 || bp[b - 1].part != bp[b].part) && (b + 1 == bands || bp[b + 1].part != bp[b].part);
        if (p->defer && alone && !cpu) { /* the caller's next pass maps them, through a table */
            if (nb.count[g] && !(st = gpuws__stream_scratch(p->stream, &key_remap_table, nb.count[g] * sizeof(int32_t),
                                                            &p->remap.table)))
                st = remap_table_launch(p->stream, p->remap.table, nb.count[g], &dev[3 * bp[b].part], nb.node_base[g],
                                        nb.node_base[g + 1], nb.offset[g]);
        } else if (cpu) {
            cpu_remap_job j = { bp, parts, &nb, nh, b, b0 };
            gpuws__run_ranges(px, gpuws__work_parts(gpuws__cpu_count(), (double)px, 262144.0, px), cpu_remap_range, &j);
        } else {
            st = gpuws__label_remap_launch(p->stream, p->labels, bp[b].first, px, &dev[3 * bp[b].part], nb.node_base[g],
                                           nb.node_base[g + 1], nb.offset[g]);
        }
        /* CPU-type OpenCL devices one launch after another: PoCL can fail an assertion when two command queues run
         * one kernel at once (sigma_clip_parts.c) */
        if (!st && !cpu && gpuws__is_cpu_device(p->stream->ctx)) st = gpuws_stream_synchronize(p->stream);
    }
    if (!st) {
        /* the labels a part's rows hold: the components that begin there (the numbers after those of the bands
         * before), and those that reach it from above, which are nodes of its first row */
        for (size_t p = 0, b = 0; p < np; p++) {
            const size_t first = b;
            while (b < bands && bp[b].part == p) b++;
            const size_t g0 = b0 + first, g1 = b0 + b;
            const uint64_t before = nb.offset[g0] - nb.nh_before[g0], upto = nb.offset[g1] - nb.nh_before[g1];
            parts[p].lo = parts[p].first = (size_t)before + 1, parts[p].hi = (size_t)upto;
            for (size_t j = nb.node_base[g0]; j < nb.node_base[g1]; j++)
                if ((size_t)nb.final[j] < parts[p].lo) parts[p].lo = (size_t)nb.final[j];
        }
        *num_labels = nb.total;
    }
    const double t2 = clock_ms(), nodes = (double)nb.nodes;
    gpuws__free(gather);
    gpuws__free(each);
    gpuws__free(nh);
    gpuws__free(border);
    gpuws__free(dev);
    gpuws__free(counts);
    gpuws__free(bp);
    gpuws__numbering_free(&nb);
    if (!st)
        gpuws__log(
            GPUWS__LOG_DEBUG,
            "%s: %zu bands over %zu parts: labelled and borders read in %.2f ms (band 0's read from %.2f to "
            "%.2f ms, band 1's from %.2f to %.2f), numbered and mapped in %.2f ms, freed in %.2f ms (%.0f border "
            "labels, %zu components)",
            name, bands, np, t1 - t0, seen[0] - t0, seen[1] - t0, seen[2] - t0, seen[3] - t0, t2 - t1, clock_ms() - t2,
            nodes, *num_labels);
    return st;
}

gpuws_status gpuws__label_parts(gpuws__label_part *parts, size_t num_parts, size_t width, int connectivity,
                                const char *name, size_t *num_labels)
{
    return label_parts(parts, num_parts, width, connectivity, 0, false, NULL, name, num_labels);
}

gpuws_status gpuws__label_parts_reduce(gpuws__label_part *parts, size_t num_parts, size_t width, int connectivity,
                                       const gpuws__label_exchange *x, const char *name, size_t *num_labels)
{
    return label_parts(parts, num_parts, width, connectivity, 0, false, x, name, num_labels);
}

/* gpuws_label of slabs of `rows` rows (on the CPU backend, its bands of that many rows, labelled on threads). */
static gpuws_status label_slabs(gpuws_stream *s, size_t w, size_t h, size_t rows, const gpuws_buffer *mask, int conn,
                                gpuws_buffer *labels, size_t *num_labels)
{
    if (s->ctx->backend->kind == GPUWS_BACKEND_CPU)
        return label_cpu_bands(gpuws__cpu_ptr(mask), w, h, rows, conn, gpuws__cpu_ptr(labels), "label", num_labels);
    gpuws__label_part part = { .stream = s, .mask = mask, .labels = labels, .rows = h };
    return label_parts(&part, 1, w, conn, rows, true, NULL, "label", num_labels);
}

gpuws_status gpuws__label_cpu(const uint8_t *mask, size_t w, size_t h, int conn, int32_t *labels, size_t threads,
                              const char *name, size_t *num_labels)
{
    const size_t parts = gpuws__work_parts(threads, (double)w * (double)h, 262144.0, h); /* 2^18 pixels a band */
    if (parts <= 1) {
        *num_labels = gpuws_label_ref(mask, w, h, conn, labels);
        return GPUWS_OK;
    }
    return label_cpu_bands(mask, w, h, (h + parts - 1) / parts, conn, labels, name, num_labels);
}

gpuws_status gpuws__label_enqueue(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                                  gpuws_buffer *labels, gpuws__label_count *count)
{
    *count = (gpuws__label_count){ NULL, 0, 0 };
    if (s->ctx->backend->kind == GPUWS_BACKEND_CPU)
        return gpuws__label_cpu(gpuws__cpu_ptr(mask), width, height, conn, gpuws__cpu_ptr(labels), gpuws__cpu_count(),
                                "label", &count->value);
    gpuws_buffer *counts;
    const size_t n = width * height;
    gpuws_status st = label_gpu_count(s, width, height, mask, conn, labels, 0, &counts);
    if (st || (st = label_gpu_relabel(s, n, mask, labels, 0, counts))) return st;
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
    if (width > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "label: rows of %zu pixels; a labelling's pixel indices are int32, so a row has at most "
                            "2^31 - 1 pixels",
                            width);
    if ((st = gpuws__check_array(ctx, mask, "mask", n, 1)) || (st = gpuws__check_array(ctx, labels, "labels", n, 4)))
        return st;
    if (labels == mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label: 'labels' and 'mask' are the same buffer");
    if (n == 0) {
        *num_labels = 0;
        return GPUWS_OK;
    }
    const size_t slab = slab_pixels(ctx);
    if (n > slab) {
        const size_t rows = slab / width ? slab / width : 1;
        if (rows < height) return label_slabs(s, width, height, rows, mask, connectivity, labels, num_labels);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU)
        return gpuws__label_cpu(gpuws__cpu_ptr(mask), width, height, connectivity, gpuws__cpu_ptr(labels),
                                gpuws__cpu_count(), "label", num_labels);
    return label_gpu(s, width, height, mask, connectivity, labels, num_labels);
}
