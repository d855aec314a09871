/* gpuws_find_sources_host's measurement on the host's cores: gpuws_measure_ref's records, from sums whose order
 * depends on the image alone, never on the thread count (sources_internal.h says what is the same and what not).
 *
 * The image is cut into blocks of a fixed number of rows (block_rows: from the width alone), and every label's
 * record is set empty first. Labels number the components in raster order of their first pixels. A label in block
 * b that began in an earlier block is connected to its first pixel, so it crosses the border above block b: it is
 * one of the labels of the row just above the block ("old" labels). A label that begins in block b begins after
 * every old one, so it is larger than all of them, and no other block begins it. So block b adds the pixels of
 * labels larger than the largest label of the row above straight into their records (no two blocks share one: no
 * locks), and those of the labels of the row above into partial records of its own, one per distinct label of
 * that row. Two labels are never side by side in a row (they would be one component), so a row holds at most
 * ceil(width / 2) of them. After every wave of blocks the partial records are added into the labels' records in
 * block order: a label's sums are its first block's, then each later block's partial, in block order, for any
 * thread count.
 *
 * Host memory beside the records (num_labels of them): per block of a wave, the distinct labels of the row above it
 * and their partial records, at most ceil(width / 2) x 60 bytes; WAVE_BLOCKS_PER_THREAD x threads blocks in a wave,
 * whose partials are freed at its end, so at most 240 bytes a column per thread whatever the image's height. */
#include "sources_internal.h"

#include "../../core/threads.h"
#include "../measure/measure_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    BLOCK_MIN_ROWS = 64,        /* rows of a block, more when the image is narrow ... */
    BLOCK_MIN_PIXELS = 1 << 14, /* ... so that a block has at least this many pixels */
    WAVE_BLOCKS_PER_THREAD = 8  /* blocks in flight per thread between two merges (memory, not results) */
};

enum { FAILED_MEMORY = 1, FAILED_ORDER = 2 };

const gpuws_source_measure gpuws__measure_empty = { 0.0, 0.0, 0.0, NAN, 0, -1, -1 };

size_t gpuws__measure_host_block_rows(size_t width)
{
    const size_t rows = (BLOCK_MIN_PIXELS + width - 1) / width;
    return rows > BLOCK_MIN_ROWS ? rows : BLOCK_MIN_ROWS;
}

void gpuws__measure_merge(gpuws_source_measure *m, const gpuws_source_measure *p)
{
    if (!p->npix) return;
    if (m->npix == 0 || (!isnan(m->peak) && (isnan(p->peak) || p->peak > m->peak))) {
        m->peak = p->peak;
        m->peak_row = p->peak_row;
        m->peak_col = p->peak_col;
    }
    m->sum += p->sum;
    m->row += p->row;
    m->col += p->col;
    m->npix += p->npix;
}

typedef struct {
    int32_t *old;               /* the block's old labels, ascending */
    gpuws_source_measure *part; /* their partial records */
    size_t nold;
    int failed; /* FAILED_MEMORY or FAILED_ORDER; 0 done */
} block_partial;

typedef struct {
    const float *data;
    const int32_t *labels;
    size_t width, height, rows, blocks, num_labels;
    gpuws_source_measure *out;
    unsigned threads;
    size_t wave0, wave_blocks; /* the wave: blocks wave0 .. wave0 + wave_blocks - 1 */
    block_partial *partial;    /* wave_blocks of them */
} measure_job;

int gpuws__cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Not inlined: the background is most of a sky, and within measure_block's loop the compiler keeps c on the stack
 * (measured: 2.5 times slower). */
__attribute__((noinline)) size_t gpuws__measure_skip_background(const int32_t *lr, size_t c, size_t w, size_t nl)
{
    const uint32_t n = nl < INT32_MAX ? (uint32_t)nl : INT32_MAX; /* l in 1..n: (uint32_t)l - 1 < n */
    for (; c + 16 <= w; c += 16) {                                /* 16 at a time, vectorized */
        unsigned any = 0;
        for (int k = 0; k < 16; k++) any |= (uint32_t)lr[c + k] - 1u < n;
        if (any) break;
    }
    while (c < w && !((uint32_t)lr[c] - 1u < n)) c++;
    return c;
}

int gpuws__measure_row_labels(const int32_t *row, size_t w, size_t num_labels, int32_t **labels,
                              gpuws_source_measure **records, size_t *count)
{
    *labels = NULL, *records = NULL, *count = 0;
    size_t runs = 0;
    for (size_t c = 0; c < w; c++) /* a run of one label counts once: at most ceil(w / 2) runs */
        runs += row[c] >= 1 && (size_t)row[c] <= num_labels && (c == 0 || row[c - 1] != row[c]);
    if (!runs) return 0;
    int32_t *l = gpuws__malloc(runs * sizeof *l);
    gpuws_source_measure *m = gpuws__malloc(runs * sizeof *m);
    if (!l || !m) {
        gpuws__free(l);
        gpuws__free(m);
        return -1;
    }
    size_t n = 0, u = 0;
    for (size_t c = 0; c < w; c++)
        if (row[c] >= 1 && (size_t)row[c] <= num_labels && (c == 0 || row[c - 1] != row[c])) l[n++] = row[c];
    qsort(l, n, sizeof *l, gpuws__cmp_i32);
    for (size_t k = 0; k < n; k++)
        if (!u || l[u - 1] != l[k]) l[u++] = l[k];
    for (size_t k = 0; k < u; k++) m[k] = gpuws__measure_empty;
    *labels = l, *records = m, *count = u;
    return 0;
}

/* Block b: the labels larger than those of the row above into out, the others into p. */
static void measure_block(measure_job *j, size_t b, block_partial *p)
{
    const size_t w = j->width, r0 = b * j->rows, r1 = r0 + j->rows < j->height ? r0 + j->rows : j->height;
    const int32_t *above = b ? j->labels + (r0 - 1) * w : NULL;
    memset(p, 0, sizeof *p);
    int32_t before = 0; /* the largest label of the row above */
    if (above && gpuws__measure_row_labels(above, w, j->num_labels, &p->old, &p->part, &p->nold)) {
        p->failed = FAILED_MEMORY;
        return;
    }
    if (p->nold) before = p->old[p->nold - 1];
    /* locals: the compiler cannot tell that the records' stores leave j's fields alone */
    const int32_t *labels = j->labels, *old = p->old;
    const float *data = j->data;
    gpuws_source_measure *out = j->out, *part = p->part;
    const size_t nl = j->num_labels, nold = p->nold;
    int32_t last = 0;
    gpuws_source_measure *lastm = NULL;
    for (size_t r = r0; r < r1; r++) {
        const int32_t *lr = labels + r * w;
        const float *dr = data + r * w;
        for (size_t c = 0;; c++) {
            if ((c = gpuws__measure_skip_background(lr, c, w, nl)) == w) break;
            const int32_t l = lr[c];
            gpuws_source_measure *m;
            if (l > before) {
                m = &out[l - 1];
            } else if (l == last) {
                m = lastm;
            } else {
                const int32_t *at = bsearch(&l, old, nold, sizeof *old, gpuws__cmp_i32);
                if (!at) { /* not a component in raster order (gpuws_label's labels always are) */
                    p->failed = FAILED_ORDER;
                    return;
                }
                m = lastm = &part[at - old];
                last = l;
            }
            gpuws_measure_ref_add(m, (double)dr[c], r, c);
        }
    }
}

/* Share i's blocks of the wave. */
static void wave_share(void *arg, unsigned i)
{
    measure_job *j = arg;
    for (size_t k = i; k < j->wave_blocks; k += j->threads) measure_block(j, j->wave0 + k, &j->partial[k]);
}

static void empty_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    gpuws_source_measure *out = arg;
    for (size_t k = lo; k < hi; k++) out[k] = gpuws__measure_empty;
}

static void finish_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    gpuws_source_measure *out = arg;
    for (size_t k = lo; k < hi; k++) gpuws_measure_ref_centre(&out[k]);
}

/* gpuws__run_threads' one failure, which it leaves without a message */
static gpuws_status threads_error(unsigned threads)
{
    return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host: the table of %u threads", threads);
}

gpuws_status gpuws__measure_host(const float *data, const int32_t *labels, size_t width, size_t height,
                                 size_t num_labels, unsigned threads, gpuws_source_measure *out)
{
    measure_job j = { .data = data,
                      .labels = labels,
                      .width = width,
                      .height = height,
                      .num_labels = num_labels,
                      .out = out,
                      .threads = threads ? threads : 1 };
    j.rows = gpuws__measure_host_block_rows(width);
    j.blocks = (height + j.rows - 1) / j.rows;
    const size_t wave = (size_t)j.threads * WAVE_BLOCKS_PER_THREAD;
    j.partial = gpuws__malloc((wave < j.blocks ? wave : j.blocks) * sizeof *j.partial);
    if (!j.partial)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host: the measurement's table of %zu blocks",
                            wave < j.blocks ? wave : j.blocks);
    const size_t parts = num_labels / ((size_t)1 << 16) + 1, record_threads = parts < j.threads ? parts : j.threads;
    gpuws__run_ranges(num_labels, record_threads, empty_range, out);
    gpuws_status st = GPUWS_OK;
    for (j.wave0 = 0; j.wave0 < j.blocks && !st; j.wave0 += j.wave_blocks) {
        j.wave_blocks = j.blocks - j.wave0 < wave ? j.blocks - j.wave0 : wave;
        memset(j.partial, 0, j.wave_blocks * sizeof *j.partial);
        if (gpuws__run_threads(j.threads, wave_share, &j)) {
            st = threads_error(j.threads);
            break;
        }
        for (size_t k = 0; k < j.wave_blocks; k++) { /* in block order: the sums' order */
            block_partial *p = &j.partial[k];
            if (p->failed == FAILED_ORDER && !st)
                st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                  "find_sources_host: the labels are not components numbered in raster order");
            if (p->failed == FAILED_MEMORY && !st)
                st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                  "find_sources_host: the measurement's partial sums of block %zu", j.wave0 + k);
            for (size_t q = 0; q < p->nold && !st; q++) gpuws__measure_merge(&out[p->old[q] - 1], &p->part[q]);
            gpuws__free(p->old);
            gpuws__free(p->part);
        }
    }
    gpuws__free(j.partial);
    if (st) return st;
    gpuws__run_ranges(num_labels, record_threads, finish_range, out);
    return GPUWS_OK;
}
