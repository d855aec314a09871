/* gpuws_label_host: connected-component labelling from host memory to host memory, in row bands when the mask and
 * the labels do not fit the device budget (docs/scale.md).
 *
 * Every band is labelled by gpuws_label (1..N_b in raster order within the band) and the bands' labels are
 * numbered as label_numbering.h says: provisional labels, the labels on a band's first or last row joined across
 * the borders (one row of halo) in a union-find, SciPy's numbering whatever the banding. A component may leave a
 * band and come back through bands below (a U, a spiral), so no band's numbers are known until every band has been
 * seen: pass 1 labels every band and reads back only N_b and the band's first and last rows; pass 2 labels every
 * band again, numbers its labels on the device (label_remap over the band's nodes: the labels on its first and last
 * rows, at most 2 w, written on the download stream, so no table of N_b entries goes to the device) and downloads
 * them: through pinned staging, copied out, or straight into the caller's pinned labels. The CPU backend, which has
 * no kernels, maps them through a table of the band's final numbers while copying them out of staging. Labelling
 * twice costs one more upload of the mask (a byte a pixel) and the labelling kernels; keeping pass 1's labels
 * instead would mean four bytes a pixel written to the host and read again.
 *
 * An image that fits as one band is one pass with no staging (run_in_core). Otherwise the two passes are the steps
 * of kernels/common/band_stream.h (step t: band t % bands of pass t / bands + 1), through three slots a device,
 * each a pinned mask staging buffer, a device mask, device labels and a pinned labels staging buffer, on three
 * streams, on one device or round-robin over several. Pass 1's border rows are joined in band order as the steps
 * are done (a band's rows wait in host memory while an earlier band on another device is not yet done); pass 2
 * completes only once pass 1 is done and numbered (the helper's barrier).
 *
 * The host's copies are skipped where the caller's memory is pinned for the device (gpuws_host_alloc on its
 * context; with CUDA any page-locked memory), each device deciding for itself: a packed mask's band rows upload
 * straight from the mask in both passes, and pass 2 downloads a band straight into the caller's pinned labels.
 * Every download of pass 2 waits for the numbering (the barrier, with barrier_downloads for those into staging).
 * Pass 1's border rows always come back through staging. */
#include "../../core/options.h"
#include "../../core/threads.h"
#include "../common/band_stream.h"
#include "label_driver.h"
#include "label_layout.h"
#include "label_numbering.h"

#include <string.h>

#define SLOTS GPUWS__BAND_SLOTS

typedef struct {
    size_t w, h, stride; /* stride: the caller's mask row stride */
    size_t rows, bands;  /* rows per band */
    int slots;
    gpuws_label_host_options o;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES]; /* ctx, then o.more_contexts */
    unsigned devices;
} band_plan;

/* Device bytes of `slots` slots of r rows: a mask byte and an int32 label a pixel each, and the chunk counts
 * gpuws_label keeps on the labelling stream (an int32 a LABEL_CHUNK pixels, and N). Double, as the budget tests. */
static double slots_bytes(size_t w, int slots, size_t r)
{
    const double px = (double)r * (double)w;
    return 5.0 * px * slots + ((double)((r * w + LABEL_CHUNK - 1) / LABEL_CHUNK) + 1.0) * 4.0;
}

/* Whether a band of r rows may exist: gpuws_label's int32 pixel indices, and the device's largest buffer. */
static bool band_fits_device(size_t w, size_t r, uint64_t max_alloc)
{
    const double px = (double)r * (double)w;
    return px <= (double)INT32_MAX && (!max_alloc || 4.0 * px <= (double)max_alloc);
}

/* The most rows per band whose slots fit the budget, or 0. */
static size_t fit_rows(size_t w, size_t h, int slots, uint64_t budget, uint64_t max_alloc)
{
    size_t lo = 0, hi = h;
    while (lo < hi) {
        const size_t mid = hi - (hi - lo) / 2;
        if (slots_bytes(w, slots, mid) <= (double)budget && band_fits_device(w, mid, max_alloc)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static gpuws_status plan_bands(gpuws_context *ctx, size_t width, size_t height, size_t stride,
                               const gpuws_label_host_options *options, band_plan *bp)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    bp->o = (gpuws_label_host_options)GPUWS_LABEL_HOST_OPTIONS_INIT;
    if ((st =
             gpuws__options_read(options, &bp->o, sizeof bp->o, GPUWS__LABEL_HOST_OPTIONS_BASE, "label_host: options")))
        return st;
    if ((st = gpuws__band_contexts(ctx, bp->o.more_contexts, bp->o.num_more_contexts, "label_host", bp->ctxs,
                                   &bp->devices)))
        return st;
    if (!width || !height)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host: zero size (%zu x %zu pixels)", width, height);
    if (stride == 0) stride = width;
    if (stride < width)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host: mask_stride %zu is less than the width %zu",
                            stride, width);
    size_t bytes;
    if (gpuws__mul_overflows(height - 1, stride, &bytes) || gpuws__add_overflows(bytes, width, &bytes) ||
        gpuws__mul_overflows(width, height, &bytes) || gpuws__mul_overflows(bytes, 5, &bytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW,
                            "label_host: %zu x %zu pixels (mask row stride %zu): byte counts overflow size_t", width,
                            height, stride);
    if (width > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "label_host: rows of %zu pixels; a band holds whole rows and at most 2^31 - 1 pixels",
                            width);
    bp->w = width, bp->h = height, bp->stride = stride;
    uint64_t budget, max_alloc;
    gpuws__band_budget(bp->ctxs, bp->devices, bp->o.max_device_bytes, &budget, &max_alloc);
    if (slots_bytes(width, 1, height) <= (double)budget && band_fits_device(width, height, max_alloc)) {
        bp->rows = height, bp->bands = 1, bp->slots = 1;
        return GPUWS_OK;
    }
    for (int slots = SLOTS; slots >= 1; slots--) {
        size_t rows = fit_rows(width, height, slots, budget, max_alloc);
        if (rows == 0) continue;
        /* staging buffers of GPUWS__BAND_STAGING_BYTES at most (one row at least) */
        const size_t staged = GPUWS__BAND_STAGING_BYTES / (width * sizeof(int32_t));
        if (rows > staged) rows = staged ? staged : 1;
        bp->rows = rows, bp->bands = (height + rows - 1) / rows, bp->slots = slots; /* two passes: 2 bands or more */
        return GPUWS_OK;
    }
    if (!band_fits_device(width, 1, max_alloc))
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "label_host: the labels of one row of %zu pixels exceed the device's largest buffer "
                            "(%llu bytes)",
                            width, (unsigned long long)max_alloc);
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                        "label_host: a device budget of %llu bytes is too small: one band of one row of %zu pixels "
                        "(its mask, its labels and gpuws_label's counts) needs at least %llu bytes",
                        (unsigned long long)budget, width, (unsigned long long)slots_bytes(width, 1, 1));
}

gpuws_status gpuws_label_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                    const gpuws_label_host_options *options, size_t *band_rows, size_t *bands)
{
    if (!band_rows || !bands)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host_bands: argument '%s' is NULL",
                            !band_rows ? "band_rows" : "bands");
    band_plan bp = { 0 };
    gpuws_status st = plan_bands(ctx, width, height, 0, options, &bp);
    if (st) return st;
    *band_rows = bp.rows;
    *bands = bp.bands;
    return GPUWS_OK;
}

/* ---- the host's copies: into staging, out of staging (through a band's table of final numbers) ---------------
 * Rows of a band split over gpuws__copy_threads threads (gpuws__run_ranges: the calling thread and threads started
 * for the copy), no more than the rows: one core's memcpy, or one core's table look-up, is slower than a pinned
 * PCIe transfer. */

typedef struct copy_part copy_part;
struct copy_part {
    void (*run)(const copy_part *c, size_t r0, size_t r1); /* rows [r0, r1) */
    const void *src;
    void *dst;
    size_t w, src_stride; /* pixels a row; the source's row stride in pixels */
    const int32_t *table; /* map: the band's final numbers by band label */
};

static void stage_mask(const copy_part *c, size_t r0, size_t r1)
{
    const uint8_t *src = c->src;
    uint8_t *dst = c->dst;
    if (c->src_stride == c->w) memcpy(dst + r0 * c->w, src + r0 * c->w, (r1 - r0) * c->w);
    else
        for (size_t r = r0; r < r1; r++) memcpy(dst + r * c->w, src + r * c->src_stride, c->w);
}

static void copy_labels(const copy_part *c, size_t r0, size_t r1)
{
    memcpy((int32_t *)c->dst + r0 * c->w, (const int32_t *)c->src + r0 * c->w, (r1 - r0) * c->w * sizeof(int32_t));
}

static void map_labels(const copy_part *c, size_t r0, size_t r1)
{
    const int32_t *src = c->src, *t = c->table;
    int32_t *dst = c->dst;
    for (size_t i = r0 * c->w, e = r1 * c->w; i < e; i++) dst[i] = t[src[i]];
}

static void copy_range(void *arg, size_t part, size_t r0, size_t r1)
{
    (void)part;
    const copy_part *c = arg;
    c->run(c, r0, r1);
}

static void copy_rows(copy_part *c, size_t rows, size_t bytes)
{
    size_t n = gpuws__copy_threads(bytes);
    if (n > rows) n = rows;
    gpuws__run_ranges(rows, n, copy_range, c);
}

/* ---- the steps of band_stream.h: step t is band t % bands of pass t / bands + 1 -------------------------------- */

typedef struct {
    int32_t *hcount; /* pinned, [bands]: pass 1's N of each band this device labels, read on its labelling stream */
    int32_t *table;  /* pass 2 without remap (the CPU backend): the band's table of final numbers */
    /* Pass 2 with remap: a band's nodes (band_nodes: the labels on its first and last rows)
     * for label_remap, written on the download stream before the band's remap, so one set serves every slot; they
     * are copied into pinned memory first (a slot's part each, NODE_BYTES), since an upload from pageable memory
     * may wait for the stream. */
    gpuws_buffer *node_label, *node_final, *node_nh;
    void *nodes_host;
    size_t nodes_host_bytes; /* as taken (gpuws__staging_take) */
} device_state;

typedef struct {
    const band_plan *bp;
    int conn;
    const uint8_t *mask;
    int32_t *labels;
    gpuws__label_numbering nb;
    /* [bands]: pass 1's first and last rows of a band, from its completion until it is done */
    int32_t **border;
    bool once;    /* one pass: each band's labels go into `labels` as they are, mapped in place once numbered */
    bool remap;   /* pass 2 numbers its bands on the devices (label_remap): two passes, not the CPU backend */
    uint64_t *nh; /* remap, after numbering, [nodes + 1]: the non-root nodes before each */
    device_state *dev[GPUWS__BAND_DEVICES]; /* each device's, from its device_make on */
} run_state;

static size_t band_height(const band_plan *bp, size_t b)
{
    const size_t r0 = b * bp->rows;
    return r0 + bp->rows < bp->h ? bp->rows : bp->h - r0;
}

/* Band b's mask in the caller's memory, when it is packed and pinned for ctx (both passes); else NULL: staged. */
static const void *source(void *user, gpuws_context *ctx, size_t t, size_t *bytes)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t b = t % bp->bands, n = band_height(bp, b) * bp->w;
    const uint8_t *p = rs->mask + b * bp->rows * bp->w;
    if (bp->stride != bp->w || !gpuws__host_pinned(ctx, p, n)) return NULL;
    *bytes = n;
    return p;
}

/* Pass 2: band b's rows of the caller's labels, when they are pinned for ctx; else NULL: through staging. Pass 1's
 * first and last rows always come back through staging. With one pass every band goes straight into its rows of
 * the caller's labels: on the CPU devices that make one pass by default a copy into any host memory, on a GPU
 * (knob label_host_passes=one) the driver's pageable path where the memory is not pinned. */
static void *target(void *user, gpuws_context *ctx, size_t t)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    if (rs->once) return t < bp->bands ? rs->labels + t * bp->rows * bp->w : NULL;
    if (t < bp->bands) return NULL;
    const size_t b = t - bp->bands;
    int32_t *p = rs->labels + b * bp->rows * bp->w;
    return gpuws__host_pinned(ctx, p, band_height(bp, b) * bp->w * sizeof(int32_t)) ? p : NULL;
}

/* The most nodes of a band: the labels on its first and last rows (2 w), no more than its labels (ceil(pixels / 2),
 * a checkerboard with connectivity 4). */
static size_t band_nodes(const band_plan *bp)
{
    const size_t half = (bp->rows * bp->w + 1) / 2;
    return 2 * bp->w < half ? 2 * bp->w : half;
}

/* A slot's part of device_state.nodes_host: a band's nodes' non-root counts (m + 1), band labels and final numbers
 * (m each). */
#define NODE_BYTES(m) (((m) + 1) * sizeof(uint64_t) + 2 * (m) * sizeof(int32_t))

/* The remap's device state where pass 2 numbers its bands on the devices: label_remap found and the node buffers made
 * before any output is written. */
static gpuws_status remap_make(run_state *rs, gpuws_context *ctx, device_state *ds)
{
    const band_plan *bp = rs->bp;
    if (!rs->remap) return GPUWS_OK;
    gpuws_kernel *k;
    const size_t nodes = band_nodes(bp);
    gpuws_status st;
    if ((st = gpuws__kernel_get_ex(ctx, "label_remap", NULL, &k)) ||
        (st = gpuws_buffer_create(ctx, nodes * sizeof(int32_t), &ds->node_label)) ||
        (st = gpuws_buffer_create(ctx, nodes * sizeof(int32_t), &ds->node_final)) ||
        (st = gpuws_buffer_create(ctx, (nodes + 1) * sizeof(uint64_t), &ds->node_nh)))
        return st;
    return gpuws__staging_take(ctx, (size_t)bp->slots * NODE_BYTES(nodes), &ds->nodes_host, &ds->nodes_host_bytes);
}

static void device_state_free(gpuws_context *ctx, device_state *ds)
{
    gpuws_host_free(ctx, ds->hcount);
    gpuws_buffer_destroy(ds->node_label);
    gpuws_buffer_destroy(ds->node_final);
    gpuws_buffer_destroy(ds->node_nh);
    gpuws__staging_give(ctx, ds->nodes_host, ds->nodes_host_bytes);
    gpuws__free(ds->table);
    gpuws__free(ds);
}

static gpuws_status device_make(void *user, unsigned d, gpuws_context *ctx, gpuws_stream *run, void **state)
{
    (void)run;
    run_state *rs = user;
    device_state *ds = gpuws__calloc(1, sizeof *ds);
    if (!ds)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "label_host: no host memory for a device's state (%zu bytes)",
                            sizeof *ds);
    /* pass 2's table where the host maps pass 2 (two passes on the CPU backend), made now so that no allocation fails
     * once labels are being written: a band has at most ceil(pixels / 2) components (a checkerboard with
     * connectivity 4) */
    const size_t cap = !rs->once && !rs->remap ? (rs->bp->rows * rs->bp->w + 1) / 2 + 1 : 0;
    if (cap && !(ds->table = gpuws__malloc(cap * sizeof *ds->table))) {
        gpuws__free(ds);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "label_host: no host memory for a band's table of final numbers (%zu bytes)",
                            cap * sizeof(int32_t));
    }
    gpuws_status st = gpuws_host_alloc(ctx, rs->bp->bands * sizeof(int32_t), (void **)&ds->hcount);
    if (!st) st = remap_make(rs, ctx, ds);
    if (st) {
        device_state_free(ctx, ds);
    } else {
        *state = ds;
        rs->dev[d] = ds;
    }
    return st;
}

static void device_free(void *user, unsigned d, gpuws_context *ctx, void *state)
{
    run_state *rs = user;
    rs->dev[d] = NULL;
    device_state_free(ctx, state);
}

static gpuws_status stage(void *user, size_t t, void *in, size_t *bytes)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t b = t % bp->bands, r = band_height(bp, b), w = bp->w;
    copy_part c = {
        .run = stage_mask, .src = rs->mask + b * bp->rows * bp->stride, .dst = in, .w = w, .src_stride = bp->stride
    };
    copy_rows(&c, r, r * w);
    *bytes = r * w;
    return GPUWS_OK;
}

static gpuws_status compute(void *user, void *state, size_t t, gpuws_stream *run, gpuws_buffer *din, gpuws_buffer *dout)
{
    run_state *rs = user;
    const band_plan *bp = rs->bp;
    device_state *ds = state;
    const size_t b = t % bp->bands;
    gpuws__label_count n;
    gpuws_status st = gpuws__label_enqueue(run, bp->w, band_height(bp, b), din, rs->conn, dout, &n);
    if (st || t >= bp->bands) return st;
    /* pass 1 needs N; on the labelling stream, before the next band's labelling reuses its memory */
    rs->nb.count[b] = n.buffer ? SIZE_MAX : n.value;
    return n.buffer ? gpuws_buffer_read_async(run, n.buffer, n.offset, ds->hcount + b, sizeof(int32_t)) : GPUWS_OK;
}

/* Pass 2: band b's labels to their final numbers on the device (label_remap over the band's nodes, after the
 * numbering: band_stream downloads past the barrier only, barrier_downloads). The nodes go up from pinned part
 * k % slots of the device's (its k-th step, k = t / devices): before it downloads step k, band_stream has waited for
 * the download of the device's step k - slots, which follows on this stream every earlier upload from that part. */
static gpuws_status remap_band(const run_state *rs, size_t t, size_t b, gpuws_stream *down, gpuws_buffer *dout)
{
    const band_plan *bp = rs->bp;
    const gpuws__label_numbering *nb = &rs->nb;
    const device_state *ds = rs->dev[t % bp->devices];
    const size_t j0 = nb->node_base[b], m = nb->node_base[b + 1] - j0, px = band_height(bp, b) * bp->w,
                 cap = band_nodes(bp);
    char *part = (char *)ds->nodes_host + (t / bp->devices) % (size_t)bp->slots * NODE_BYTES(cap);
    uint64_t *nh = (uint64_t *)(void *)part;
    int32_t *label = (int32_t *)(void *)(nh + cap + 1), *final = label + cap;
    memcpy(nh, rs->nh + j0, (m + 1) * sizeof *nh);
    if (m) {
        memcpy(label, nb->node_label + j0, m * sizeof *label);
        memcpy(final, nb->final + j0, m * sizeof *final);
    }
    gpuws_status st = GPUWS_OK;
    if (m && ((st = gpuws_buffer_write_async(down, ds->node_label, 0, label, m * sizeof *label)) ||
              (st = gpuws_buffer_write_async(down, ds->node_final, 0, final, m * sizeof *final))))
        return st;
    if ((st = gpuws_buffer_write_async(down, ds->node_nh, 0, nh, (m + 1) * sizeof *nh))) return st;
    gpuws_buffer *const nodes[3] = { ds->node_label, ds->node_final, ds->node_nh };
    return gpuws__label_remap_launch(down, dout, 0, px, nodes, 0, m, nb->offset[b]);
}

/* Pass 1: the band's first and last rows (one pass: the whole band); pass 2: the whole band (into the caller's
 * labels: final numbers). */
static gpuws_status download(void *user, size_t t, gpuws_stream *down, gpuws_buffer *dout, void *out)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t b = t % bp->bands, r = band_height(bp, b), w = bp->w, row = w * sizeof(int32_t);
    if (rs->once) return gpuws_buffer_read_async(down, dout, 0, out, r * row);
    if (t >= bp->bands) {
        const gpuws_status st = rs->remap ? remap_band(rs, t, b, down, dout) : GPUWS_OK;
        return st ? st : gpuws_buffer_read_async(down, dout, 0, out, r * row);
    }
    gpuws_status st = gpuws_buffer_read_async(down, dout, 0, out, row);
    if (!st && r > 1) st = gpuws_buffer_read_async(down, dout, (r - 1) * row, (char *)out + row, row);
    return st;
}

/* Pass 1 keeps the band's N and border rows for `done`; pass 2 writes its final labels. */
static gpuws_status complete(void *user, void *state, size_t t, const void *staged)
{
    run_state *rs = user;
    const band_plan *bp = rs->bp;
    device_state *ds = state;
    gpuws__label_numbering *nb = &rs->nb;
    const size_t b = t % bp->bands, r = band_height(bp, b), w = bp->w;
    const int32_t *hl = staged;
    if (t < bp->bands) {
        if (nb->count[b] == SIZE_MAX) nb->count[b] = (size_t)ds->hcount[b];
        if (rs->once) return GPUWS_OK; /* its border rows are in labels */
        if (!(rs->border[b] = gpuws__malloc(2 * w * sizeof(int32_t))))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "label_host: no host memory for a band's border rows (%zu bytes)",
                                2 * w * sizeof(int32_t));
        memcpy(rs->border[b], hl, w * sizeof(int32_t));
        memcpy(rs->border[b] + w, r > 1 ? hl + w : hl, w * sizeof(int32_t));
        return GPUWS_OK;
    }
    if (!hl) return GPUWS_OK; /* in the caller's labels, numbered on the device */
    if (!rs->remap) gpuws__numbering_band_table(nb, b, ds->table);
    copy_part c = { .run = rs->remap ? copy_labels : map_labels,
                    .src = hl,
                    .dst = rs->labels + b * bp->rows * w,
                    .w = w,
                    .table = ds->table };
    copy_rows(&c, r, r * w * sizeof(int32_t));
    return GPUWS_OK;
}

/* For label_remap: nh[j], the nodes before node j that are not roots (j up to the number of nodes). */
static gpuws_status count_non_roots(run_state *rs)
{
    const gpuws__label_numbering *nb = &rs->nb;
    if (!(rs->nh = gpuws__malloc((nb->nodes + 1) * sizeof *rs->nh)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "label_host: no host memory for %zu border labels (%zu bytes)",
                            nb->nodes, (nb->nodes + 1) * sizeof *rs->nh);
    gpuws__numbering_non_roots(nb, rs->nh);
    return GPUWS_OK;
}

/* In step order: pass 1 joins the band's border to the previous band's and, after the last band, numbers the
 * components; then progress. */
static gpuws_status done(void *user, size_t t)
{
    run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t b = t % bp->bands, w = bp->w;
    const int pass = t < bp->bands ? 1 : 2;
    if (pass == 1) {
        /* one pass: the band's first and last rows in labels; two: the copies complete made */
        const int32_t *first = rs->once ? rs->labels + b * bp->rows * w : rs->border[b];
        const int32_t *last = rs->once ? first + (band_height(bp, b) - 1) * w : first + w;
        gpuws_status st = gpuws__numbering_harvest(&rs->nb, rs->conn, b, first, last);
        gpuws__free(rs->border[b]);
        rs->border[b] = NULL;
        if (!st && b + 1 == bp->bands) st = gpuws__numbering_number(&rs->nb);
        if (!st && b + 1 == bp->bands && rs->remap) st = count_non_roots(rs);
        if (st) return st;
    }
    if (bp->o.progress)
        bp->o.progress(bp->o.progress_user, pass, rs->once ? 1 : 2, b, bp->bands, b * bp->rows + band_height(bp, b),
                       bp->h);
    return GPUWS_OK;
}

/* rows x w labels in place through table, on threads (one pass's bands; a caller's part of label_host_reduce). */
static void map_in_place(int32_t *labels, size_t w, size_t rows, const int32_t *table)
{
    copy_part c = { .run = map_labels, .src = labels, .dst = labels, .w = w, .table = table };
    copy_rows(&c, rows, rows * w * sizeof(int32_t));
}

/* One pass: every band's labels in place to their final numbers, through the band's table (table_cap entries). */
static void map_bands(run_state *rs, int32_t *table)
{
    const band_plan *bp = rs->bp;
    for (size_t b = 0; b < bp->bands; b++) {
        gpuws__numbering_band_table(&rs->nb, b, table);
        map_in_place(rs->labels + b * bp->rows * bp->w, bp->w, band_height(bp, b), table);
    }
}

/* One pass or two: one where the knob says so, or by default where every device is a CPU (its labelling is the
 * cost, and its memory the host's, so the band's labels come down as fast as its border rows). */
static bool one_pass(const band_plan *bp)
{
    const int knob = bp->ctxs[0]->tuning.label_host_passes;
    if (knob != GPUWS__PASSES_AUTO) return knob == GPUWS__PASSES_ONE;
    for (unsigned d = 0; d < bp->devices; d++)
        if (bp->ctxs[d]->info.type != GPUWS_DEVICE_CPU) return false;
    return true;
}

static gpuws_status run_bands(run_state *rs)
{
    const band_plan *bp = rs->bp;
    gpuws_status st = gpuws__numbering_make(&rs->nb, "label_host", bp->w, bp->bands);
    if (!st && !(rs->border = gpuws__calloc(bp->bands, sizeof *rs->border)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "label_host: no host memory for the state of %zu bands (%zu bytes)",
                          bp->bands, bp->bands * sizeof *rs->border);
    /* one pass: a band's table for the map after it, made before labels are written */
    const size_t table_cap = (bp->rows * bp->w + 1) / 2 + 1;
    int32_t *table = NULL;
    if (!st && rs->once && !(table = gpuws__malloc(table_cap * sizeof *table)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                          "label_host: no host memory for a band's table of final numbers (%zu bytes)",
                          table_cap * sizeof *table);
    /* one pass writes labels from its first band: the numbering's room for the most labels a band and nodes an image
     * can have is taken before (harvesting then allocates nothing; pages no label reaches are never touched), and
     * no band completes before every device has made its state */
    if (!st && rs->once) st = gpuws__numbering_reserve(&rs->nb, table_cap - 1, bp->bands * band_nodes(bp));
    /* pass 2 numbers each band on its device (the CPU backend has no kernels: its host maps them), into staging as
     * into the caller's memory */
    rs->remap = !rs->once && bp->ctxs[0]->backend->kind != GPUWS_BACKEND_CPU;
    const gpuws__band_ops ops = { .steps = rs->once ? bp->bands : 2 * bp->bands,
                                  .barrier = rs->once ? 0 : bp->bands,
                                  .ready_first = rs->once,
                                  .barrier_downloads = rs->remap,
                                  .slots = bp->slots,
                                  .in_bytes = bp->rows * bp->w,
                                  .out_bytes = bp->rows * bp->w * sizeof(int32_t),
                                  .user = rs,
                                  .what = "label_host",
                                  .device_make = device_make,
                                  .device_free = device_free,
                                  .stage = stage,
                                  .source = source,
                                  .target = target,
                                  .compute = compute,
                                  .download = download,
                                  .complete = complete,
                                  .done = done };
    if (!st) st = gpuws__band_stream_run(bp->ctxs, bp->devices, &ops);
    if (!st && rs->once) map_bands(rs, table);
    gpuws__free(table);
    for (size_t b = 0; rs->border && b < bp->bands; b++) gpuws__free(rs->border[b]);
    gpuws__free(rs->border);
    gpuws__free(rs->nh);
    return st;
}

/* One band: the image is one gpuws_label between an upload straight from the caller's mask and a download straight
 * into the caller's labels, whose numbers are final. No pinned staging: pinning an image's worth of host memory
 * for every call costs far more than the transfers (the caller's memory moves as fast as it is pinned or not).
 * A mask with padding between its rows is packed first, on several threads, into plain host memory. */
static gpuws_status run_in_core(gpuws_context *ctx, const band_plan *bp, int conn, const uint8_t *mask, int32_t *labels,
                                size_t *num_labels)
{
    const size_t w = bp->w, h = bp->h, px = w * h;
    gpuws_stream *s = NULL;
    gpuws_buffer *dmask = NULL, *dlabels = NULL;
    uint8_t *packed = NULL;
    int32_t count = 0;
    gpuws__label_count n = { 0 };
    gpuws_status st;
    if (bp->stride != w) {
        if (!(packed = gpuws__malloc(px)))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "label_host: no host memory to pack a mask of row stride %zu (%zu bytes)", bp->stride,
                                px);
        copy_part c = { .run = stage_mask, .src = mask, .dst = packed, .w = w, .src_stride = bp->stride };
        copy_rows(&c, h, px);
    }
    if (!(st = gpuws_stream_create(ctx, &s)) && !(st = gpuws_buffer_create(ctx, px, &dmask)) &&
        !(st = gpuws_buffer_create(ctx, px * sizeof(int32_t), &dlabels)) &&
        !(st = gpuws_buffer_write_async(s, dmask, 0, packed ? packed : mask, px)) &&
        !(st = gpuws__label_enqueue(s, w, h, dmask, conn, dlabels, &n)) &&
        !(st = n.buffer ? gpuws_buffer_read_async(s, n.buffer, n.offset, &count, sizeof count) : GPUWS_OK))
        st = gpuws_buffer_read_async(s, dlabels, 0, labels, px * sizeof(int32_t));
    if (s) { /* the stream stops before the buffers and the packed mask go, also after an error */
        const gpuws_status sync = gpuws_stream_synchronize(s);
        if (!st) st = sync;
    }
    gpuws_stream_destroy(s);
    gpuws_buffer_destroy(dmask);
    gpuws_buffer_destroy(dlabels);
    gpuws__free(packed);
    if (st) return st;
    *num_labels = n.buffer ? (size_t)count : n.value;
    if (bp->o.progress) bp->o.progress(bp->o.progress_user, 1, 1, 0, 1, h, h);
    return GPUWS_OK;
}

gpuws_status gpuws_label_host(gpuws_context *ctx, size_t width, size_t height, const void *mask, size_t mask_stride,
                              int connectivity, const gpuws_label_host_options *options, int32_t *labels,
                              size_t *num_labels)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!mask || !labels || !num_labels)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host: argument '%s' is NULL",
                            !mask     ? "mask"
                            : !labels ? "labels"
                                      : "num_labels");
    if (connectivity != 4 && connectivity != 8)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host: connectivity %d is not 4 or 8", connectivity);
    band_plan bp = { 0 };
    if ((st = plan_bands(ctx, width, height, mask_stride, options, &bp))) return st;
    if (gpuws__overlaps(labels, bp.w * bp.h * sizeof(int32_t), mask, (bp.h - 1) * bp.stride + bp.w))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "label_host: labels overlaps the mask (it is read while labels is written)");
    gpuws__log(GPUWS__LOG_DEBUG, "label_host: %zu x %zu, connectivity %d: %zu bands of %zu rows, %d slots, %u devices",
               bp.w, bp.h, connectivity, bp.bands, bp.rows, bp.slots, bp.devices);
    if (bp.bands == 1) return run_in_core(ctx, &bp, connectivity, mask, labels, num_labels);
    run_state rs = { .bp = &bp, .conn = connectivity, .mask = mask, .labels = labels, .once = one_pass(&bp) };
    st = run_bands(&rs);
    if (!st) *num_labels = rs.nb.total;
    gpuws__numbering_free(&rs.nb);
    return st;
}

/* ---- parts held by several callers (MPI ranks): gpuws_label_host_reduce ---------------------------------------
 * Each caller labels its rows alone (gpuws_label_host), then one reduction gathers every part's count and first and
 * last rows (each caller writes its own slot, zeros elsewhere: a sum is a gather); every caller then joins the
 * borders and numbers the components exactly as pass 1 of the bands does, the parts being the bands, and maps its
 * own labels through its part's table. */

enum { RW_CALLERS, RW_FAILED, RW_WIDTH, RW_WIDTH2, RW_CONN, RW_CONN2, RW_PARTS, RW_PARTS2, RW_HEAD };

gpuws_status gpuws_label_host_reduce(gpuws_context *ctx, size_t width, size_t rows, const void *mask,
                                     size_t mask_stride, int connectivity, const gpuws_label_host_options *options,
                                     size_t part, size_t parts, gpuws_sum_reducer reduce, void *reduce_user,
                                     int32_t *labels, size_t *num_labels)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!reduce || !num_labels || (rows && (!mask || !labels)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host_reduce: argument '%s' is NULL",
                            !reduce       ? "reduce"
                            : !num_labels ? "num_labels"
                            : !mask       ? "mask"
                                          : "labels");
    if (!parts || part >= parts || !width)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host_reduce: part %zu of %zu, width %zu", part, parts,
                            width);
    size_t slot, words; /* a part's slot: has rows, N, first row, last row */
    if (gpuws__mul_overflows(width, 2, &slot) || gpuws__add_overflows(slot, 2, &slot) ||
        gpuws__mul_overflows(slot, parts, &words) || gpuws__add_overflows(words, RW_HEAD + parts, &words) ||
        words > SIZE_MAX / sizeof(uint64_t))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "label_host_reduce: %zu parts of rows of %zu pixels", parts, width);
    uint64_t *w = gpuws__calloc(words, sizeof *w);
    if (!w)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "label_host_reduce: no host memory for %zu parts' borders (%zu bytes)", parts,
                            words * sizeof *w);
    /* first the callers agree (before anything is written): each part once, the same width, connectivity, parts */
    w[RW_CALLERS] = 1;
    w[RW_WIDTH] = width, w[RW_WIDTH2] = (uint64_t)width * width;
    w[RW_CONN] = (uint64_t)connectivity, w[RW_CONN2] = (uint64_t)connectivity * (uint64_t)connectivity;
    w[RW_PARTS] = parts, w[RW_PARTS2] = (uint64_t)parts * parts;
    w[RW_HEAD + part] = 1;
    if ((st = reduce(reduce_user, w, RW_HEAD + parts))) {
        gpuws__free(w);
        return gpuws__error_prefix(st, "label_host_reduce: the reducer failed");
    }
    const uint64_t callers = w[RW_CALLERS];
    bool agree = callers == parts;
    for (size_t p = 0; agree && p < parts; p++) agree = w[RW_HEAD + p] == 1;
    for (int v = RW_WIDTH; agree && v < RW_HEAD; v += 2)
        agree = (unsigned __int128)w[v] * w[v] == (unsigned __int128)callers * w[v + 1];
    if (!agree) {
        gpuws__free(w);
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "label_host_reduce: the %llu callers disagree: each of parts 0..%zu once, with the same "
                            "width, connectivity and part count",
                            (unsigned long long)callers, parts - 1);
    }
    /* this part alone; a failure here is every caller's (below), so none waits for it */
    memset(w, 0, words * sizeof *w);
    size_t n = 0;
    const gpuws_status local =
        rows ? gpuws_label_host(ctx, width, rows, mask, mask_stride, connectivity, options, labels, &n) : GPUWS_OK;
    char message[512] = "";
    if (local) snprintf(message, sizeof message, "%s", gpuws_last_error());
    w[RW_FAILED] = local != GPUWS_OK;
    uint64_t *mine = w + RW_HEAD + parts + part * slot;
    if (!local && rows) {
        mine[0] = 1, mine[1] = n;
        for (size_t x = 0; x < width; x++) {
            mine[2 + x] = (uint32_t)labels[x];
            mine[2 + width + x] = (uint32_t)labels[(rows - 1) * width + x];
        }
    }
    if ((st = reduce(reduce_user, w, words))) {
        gpuws__free(w);
        return gpuws__error_prefix(st, "label_host_reduce: the reducer failed");
    }
    if (w[RW_FAILED]) {
        st = local ? gpuws__error(local, "label_host_reduce: %s", message)
                   : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "label_host_reduce: %llu of %llu callers failed",
                                  (unsigned long long)w[RW_FAILED], (unsigned long long)callers);
        gpuws__free(w);
        return st;
    }
    /* the parts that have rows are the bands, in order; their borders as int32 rows */
    band_plan bp = { .w = width };
    size_t mine_band = SIZE_MAX;
    for (size_t p = 0; p < parts; p++) {
        if (p == part && rows) mine_band = bp.bands;
        bp.bands += w[RW_HEAD + parts + p * slot] != 0;
    }
    gpuws__label_numbering nb = { 0 };
    int32_t *border = gpuws__malloc(2 * width * sizeof *border), *table = NULL;
    if (!border)
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "label_host_reduce: no host memory for a border (%zu bytes)",
                          2 * width * sizeof *border);
    if (!st) st = gpuws__numbering_make(&nb, "label_host_reduce", width, bp.bands);
    for (size_t p = 0, b = 0; !st && p < parts; p++) {
        const uint64_t *sl = w + RW_HEAD + parts + p * slot;
        if (!sl[0]) continue;
        nb.count[b] = (size_t)sl[1];
        for (size_t x = 0; x < 2 * width; x++) border[x] = (int32_t)(uint32_t)sl[2 + x];
        st = gpuws__numbering_harvest(&nb, connectivity, b, border, border + width);
        b++;
    }
    if (!st && bp.bands) st = gpuws__numbering_number(&nb);
    if (!st && mine_band != SIZE_MAX) {
        if (!(table = gpuws__malloc((nb.count[mine_band] + 1) * sizeof *table)))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                              "label_host_reduce: no host memory for a table of %zu labels (%zu bytes)",
                              nb.count[mine_band] + 1, (nb.count[mine_band] + 1) * sizeof *table);
        else {
            gpuws__numbering_band_table(&nb, mine_band, table);
            map_in_place(labels, width, rows, table);
        }
    }
    if (!st) *num_labels = nb.total;
    gpuws__free(table);
    gpuws__free(border);
    gpuws__numbering_free(&nb);
    gpuws__free(w);
    return st;
}
