/* gpuws_find_sources_host_reduce: gpuws_find_sources_host over an image whose rows several callers (MPI ranks) hold.
 *
 * Each caller clips, thresholds, labels and measures its own rows; the steps' collective forms make the clipping and
 * the labels the whole image's, and a gather of partial records makes the catalogue. A caller's rows are cut at the
 * borders of gpuws__measure_host's blocks (fixed in the whole image's rows: the width alone sets them) into
 * fragments; each fragment gives one partial record per label it holds, its pixels added in raster order, exactly as
 * a block of gpuws__measure_host does. Every caller writes its partials into its own slot of a zeroed array of
 * uint64 words, and one sum (a gather: zeros elsewhere) gives every caller every partial, in the callers' order, so
 * in fragment order: a label's record is its partials merged in that order, as gpuws__measure_host merges its
 * blocks. When no block is split between callers, the fragments are the blocks and the catalogue is
 * gpuws_find_sources_host's, the same bits; a split block adds its parts' sums, not one running sum, which moves the
 * floats within the summation bound only.
 *
 * The reductions, the same on every caller, in this order (words of 8 bytes; P parts, T partial records in all):
 *   agree:    1 + 8P    every part's row count and options (a part's slot: zeros elsewhere), and local failures;
 *   clip:     gpuws_sigma_clip_host_reduce's (a few per pass, at most 1 MiB each);
 *   label:    gpuws_label_host_reduce's (P + 9, then 9 + P (2 width + 3));
 *   counts:   1 + P     every part's partial count, and local failures;
 *   ready:    1         a failure to allocate the gather;
 *   gather:   8T        every partial: label, sum, row, col, peak (as their bits), npix, peak_row, peak_col. */
#include "sources_internal.h"

#include "../../core/threads.h"
#include "../measure/measure_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RECORD_WORDS = 8 };

/* a part's slot in the agreement; A_ROWS is not compared */
enum { A_PRESENT, A_ROWS, A_WIDTH, A_CONN, A_SIGMA, A_ABS, A_KAPPA, A_ITER, A_SLOT };

static uint64_t bits(double d)
{
    uint64_t u;
    if (isnan(d)) d = NAN; /* any NaN selects threshold_sigma: one pattern for all */
    memcpy(&u, &d, sizeof u);
    return u;
}

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- the measurement of a caller's rows, in fragments --------------------------------------------------------- */

typedef struct {
    size_t r0, r1;   /* the caller's rows r0 .. r1 - 1 */
    uint64_t *words; /* its partial records, RECORD_WORDS each (gpuws__malloc'd) */
    size_t count;
    bool failed; /* out of memory, or labels not in raster order */
} fragment;

typedef struct {
    const float *image;
    const int32_t *labels;
    size_t width, first_row, num_labels;
    fragment *frag;
} fragment_job;

static void put_record(uint64_t *w, int32_t label, const gpuws_source_measure *m)
{
    w[0] = (uint64_t)label, w[1] = bits(m->sum), w[2] = bits(m->row), w[3] = bits(m->col), w[4] = bits(m->peak);
    w[5] = (uint64_t)m->npix, w[6] = (uint64_t)m->peak_row, w[7] = (uint64_t)m->peak_col;
}

static gpuws_source_measure get_record(const uint64_t *w)
{
    return (gpuws_source_measure){ from_bits(w[1]), from_bits(w[2]), from_bits(w[3]), from_bits(w[4]),
                                   (int64_t)w[5],   (int64_t)w[6],   (int64_t)w[7] };
}

/* One fragment: the labels of its first row (begun there or above) through a sorted table, the labels that begin
 * below its first row (larger than all of those, and consecutive: components numbered in raster order) densely. */
static bool measure_fragment(const fragment_job *j, fragment *f)
{
    const size_t w = j->width, nl = j->num_labels;
    int32_t *old = NULL;
    gpuws_source_measure *part = NULL, *dense = NULL;
    size_t nold = 0;
    if (gpuws__measure_row_labels(j->labels + f->r0 * w, w, nl, &old, &part, &nold)) return false;
    const int32_t before = nold ? old[nold - 1] : 0;
    int32_t lo = INT32_MAX, hi = 0;
    for (size_t i = f->r0 * w; i < f->r1 * w; i++) {
        const int32_t l = j->labels[i];
        if (l > before && (size_t)l <= nl) lo = l < lo ? l : lo, hi = l > hi ? l : hi;
    }
    const size_t ndense = hi ? (size_t)(hi - lo) + 1 : 0;
    bool ok = ndense <= (f->r1 - f->r0) * w;
    if (ok && ndense && !(dense = gpuws__malloc(ndense * sizeof *dense))) ok = false;
    for (size_t k = 0; ok && k < ndense; k++) dense[k] = gpuws__measure_empty;
    int32_t last = 0;
    gpuws_source_measure *lastm = NULL;
    for (size_t r = f->r0; ok && r < f->r1; r++) {
        const int32_t *lr = j->labels + r * w;
        const float *dr = j->image + r * w;
        for (size_t c = 0; ok; c++) {
            if ((c = gpuws__measure_skip_background(lr, c, w, nl)) == w) break;
            const int32_t l = lr[c];
            gpuws_source_measure *m = lastm;
            if (l > before) m = &dense[l - lo];
            else if (l != last) {
                const int32_t *at = bsearch(&l, old, nold, sizeof *old, gpuws__cmp_i32);
                if (!at) ok = false; /* not components in raster order (label_host_reduce's always are) */
                else m = lastm = &part[at - old], last = l;
            }
            if (ok) gpuws_measure_ref_add(m, (double)dr[c], j->first_row + r, c);
        }
    }
    size_t count = nold;
    for (size_t k = 0; ok && k < ndense; k++) count += dense[k].npix != 0;
    if (ok && count && !(f->words = gpuws__malloc(count * RECORD_WORDS * sizeof *f->words))) ok = false;
    if (ok) {
        for (size_t k = 0; k < nold; k++) put_record(f->words + RECORD_WORDS * f->count++, old[k], &part[k]);
        for (size_t k = 0; k < ndense; k++)
            if (dense[k].npix) put_record(f->words + RECORD_WORDS * f->count++, lo + (int32_t)k, &dense[k]);
    }
    gpuws__free(old);
    gpuws__free(part);
    gpuws__free(dense);
    return ok;
}

static void fragment_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    fragment_job *j = arg;
    for (size_t k = lo; k < hi; k++) j->frag[k].failed = !measure_fragment(j, &j->frag[k]);
}

static void fragments_free(fragment *f, size_t n)
{
    for (size_t k = 0; f && k < n; k++) gpuws__free(f[k].words);
    gpuws__free(f);
}

/* The caller's rows cut at the blocks' borders into *nfrag fragments, measured on `threads` threads. */
static gpuws_status measure_rows(const fragment_job *in, size_t rows, unsigned threads, fragment **frags, size_t *nfrag)
{
    fragment_job j = *in;
    const size_t block = gpuws__measure_host_block_rows(j.width);
    size_t n = 0;
    for (size_t r = 0; r < rows; n++) r += block - (j.first_row + r) % block;
    *frags = NULL, *nfrag = 0;
    if (!n) return GPUWS_OK;
    if (!(j.frag = gpuws__calloc(n, sizeof *j.frag)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host_reduce: a table of %zu fragments", n);
    for (size_t k = 0, r = 0; k < n; k++) {
        j.frag[k].r0 = r;
        r += block - (j.first_row + r) % block;
        j.frag[k].r1 = r < rows ? r : rows;
        r = j.frag[k].r1;
    }
    gpuws__run_ranges(n, n < threads ? n : threads, fragment_range, &j);
    *frags = j.frag, *nfrag = n;
    for (size_t k = 0; k < n; k++)
        if (j.frag[k].failed)
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "find_sources_host_reduce: the partial records of rows %zu .. %zu (out of memory, or "
                                "labels not in raster order)",
                                j.first_row + j.frag[k].r0, j.first_row + j.frag[k].r1 - 1);
    return GPUWS_OK;
}

/* ---- the call ---------------------------------------------------------------------------------------------------- */

typedef struct {
    gpuws_sum_reducer reduce;
    void *user;
    uint64_t callers;
} group;

/* One reduction of words[0 .. count - 1], whose word 0 counts the callers that failed. */
static gpuws_status reduce_flagged(const group *g, uint64_t *words, size_t count, gpuws_status local)
{
    words[0] = local != GPUWS_OK;
    const gpuws_status st = g->reduce(g->user, words, count);
    return st ? gpuws__error_prefix(st, "find_sources_host_reduce: the reducer failed") : GPUWS_OK;
}

/* After reduce_flagged: the collective error when any caller failed (this caller's own when it is one of them:
 * `local`, its message already set). */
static gpuws_status any_failed(const group *g, const uint64_t *words, gpuws_status local)
{
    if (local) return local;
    if (words[0])
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_host_reduce: %llu of %llu callers failed",
                            (unsigned long long)words[0], (unsigned long long)g->callers);
    return GPUWS_OK;
}

static gpuws_status reduce_checked(const group *g, uint64_t *words, size_t count, gpuws_status local)
{
    const gpuws_status st = reduce_flagged(g, words, count, local);
    return st ? st : any_failed(g, words, local);
}

/* The first reduction, in w (1 + A_SLOT parts words, zeros): every part's rows and options; *first_row: the rows
 * of the parts before this one. */
static gpuws_status agree(group *g, uint64_t *w, size_t width, size_t rows, const sources_options *so,
                          gpuws_status local, size_t part, size_t parts, size_t *first_row)
{
    const size_t count = 1 + A_SLOT * parts;
    uint64_t *mine = w + 1 + A_SLOT * part;
    const gpuws_sources_options *o = &so->o;
    mine[A_PRESENT] = 1, mine[A_ROWS] = rows, mine[A_WIDTH] = width, mine[A_CONN] = (uint64_t)o->connectivity;
    mine[A_SIGMA] = bits(o->threshold_sigma), mine[A_ABS] = bits(o->threshold_abs);
    mine[A_KAPPA] = bits(o->clip->kappa), mine[A_ITER] = (uint64_t)o->clip->max_iterations;
    gpuws_status st = reduce_flagged(g, w, count, local);
    bool same = true;
    g->callers = 0, *first_row = 0;
    for (size_t p = 0; p < parts; p++) {
        const uint64_t *s = w + 1 + A_SLOT * p;
        g->callers += s[A_PRESENT];
        same &= s[A_PRESENT] == 1 && !memcmp(s + A_WIDTH, mine + A_WIDTH, (A_SLOT - A_WIDTH) * sizeof *s);
        if (p < part) *first_row += s[A_ROWS];
    }
    if (!st) st = any_failed(g, w, local);
    if (!st && !same)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                          "find_sources_host_reduce: the %llu callers disagree: each of parts 0..%zu once, with the "
                          "same width, connectivity, threshold and clipping options",
                          (unsigned long long)g->callers, parts - 1);
    return st;
}

/* Every caller's partial records gathered, merged in order into nl records; w: 1 + parts words for the counts. */
static gpuws_status gather(group *g, uint64_t *w, fragment *frags, size_t nfrag, gpuws_status local, size_t part,
                           size_t parts, size_t nl, gpuws_source_measure **meas)
{
    size_t mine = 0;
    for (size_t k = 0; k < nfrag; k++) mine += frags[k].count;
    memset(w, 0, (1 + parts) * sizeof *w);
    w[1 + part] = mine;
    gpuws_status st = reduce_checked(g, w, 1 + parts, local);
    size_t total = 0, at = 0;
    for (size_t p = 0; p < parts; p++) total += w[1 + p], at += p < part ? w[1 + p] : 0;
    if (st) return st;
    uint64_t ready = 0, *all = NULL;
    if (total > SIZE_MAX / (RECORD_WORDS * sizeof *all) ||
        !(all = gpuws__calloc(total ? total * RECORD_WORDS : 1, sizeof *all)))
        local = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                             "find_sources_host_reduce: no host memory for %zu partial "
                             "records (%zu bytes each)",
                             total, RECORD_WORDS * sizeof *all);
    if ((st = reduce_checked(g, &ready, 1, local))) {
        gpuws__free(all);
        return st;
    }
    for (size_t k = 0; k < nfrag; k++) { /* this caller's slot, its fragments in order */
        if (frags[k].count)
            memcpy(all + at * RECORD_WORDS, frags[k].words, frags[k].count * RECORD_WORDS * sizeof *all);
        at += frags[k].count;
    }
    if (total && (st = g->reduce(g->user, all, total * RECORD_WORDS))) {
        gpuws__free(all);
        return gpuws__error_prefix(st, "find_sources_host_reduce: the reducer failed");
    }
    /* after the last reduction: a failure here is this caller's alone, and no other waits for it */
    gpuws_source_measure *m = nl ? gpuws__malloc(nl * sizeof *m) : NULL;
    if (nl && !m) st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host_reduce: %zu measurements", nl);
    for (size_t k = 0; !st && k < nl; k++) m[k] = gpuws__measure_empty;
    for (size_t k = 0; !st && k < total; k++) {
        const uint64_t *r = all + k * RECORD_WORDS;
        if (r[0] < 1 || r[0] > nl)
            st = gpuws__error(GPUWS_ERR_INTERNAL, "find_sources_host_reduce: a partial record of label %llu of %zu",
                              (unsigned long long)r[0], nl);
        else {
            const gpuws_source_measure p = get_record(r);
            gpuws__measure_merge(&m[r[0] - 1], &p);
        }
    }
    for (size_t k = 0; !st && k < nl; k++) gpuws_measure_ref_centre(&m[k]);
    gpuws__free(all);
    if (st) gpuws__free(m);
    else *meas = m;
    return st;
}

gpuws_status gpuws_find_sources_host_reduce(gpuws_context *ctx, const float *image, size_t width, size_t rows,
                                            const gpuws_sources_options *options,
                                            const gpuws_label_host_options *label_options, size_t part, size_t parts,
                                            gpuws_sum_reducer reduce, void *reduce_user, gpuws_catalog **catalog)
{
    /* a caller's own mistakes that leave it unable to take part fail it alone, before any reduction */
    if (!catalog)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_host_reduce: argument 'catalog' is NULL");
    *catalog = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!reduce || (rows && !image))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_host_reduce: argument '%s' is NULL",
                            !reduce ? "reduce" : "image");
    if (!parts || part >= parts || parts > SIZE_MAX / (A_SLOT * sizeof(uint64_t)) - 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_host_reduce: part %zu of %zu", part, parts);
    /* the first reductions' words: their allocation is the last failure of this caller alone */
    uint64_t *head = gpuws__calloc(1 + A_SLOT * parts, sizeof *head);
    if (!head)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host_reduce: %zu words for %zu parts",
                            1 + A_SLOT * parts, parts);
    struct timespec t0, start;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start = t0;
    /* everything else is collective: a failure is reported in the next reduction, so no caller waits */
    sources_options so;
    gpuws_status local = gpuws__sources_read_options("find_sources_host_reduce", options, &so);
    const gpuws_sources_options *o = &so.o;
    size_t n = 0;
    if (!local && !width)
        local = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_host_reduce: width 0: no pixels");
    if (!local && (gpuws__mul_overflows(width, rows, &n) || n > SIZE_MAX / 8))
        local =
            gpuws__error(GPUWS_ERR_OVERFLOW, "find_sources_host_reduce: %zu x %zu pixels overflow size_t", width, rows);
    gpuws_catalog *cat = NULL;
    uint8_t *mask = NULL;
    int32_t *labels = NULL;
    if (!local && (!(cat = gpuws__calloc(1, sizeof *cat)) || (n && !(mask = gpuws__malloc(n))) ||
                   (n && !(labels = gpuws__malloc(n * sizeof *labels)))))
        local = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                             "find_sources_host_reduce: no host memory for the catalogue, the mask and the labels "
                             "(%zu bytes)",
                             sizeof *cat + 5 * n);
    group g = { .reduce = reduce, .user = reduce_user };
    size_t first_row = 0, nl = 0, nfrag = 0;
    fragment *frags = NULL;
    gpuws_source_measure *meas = NULL;
    st = agree(&g, head, width, rows, &so, local, part, parts, &first_row);
    if (!st && (st = gpuws_sigma_clip_host_reduce(ctx, n ? image : NULL, n, o->clip, reduce, reduce_user, &cat->clip)))
        st = gpuws__error_prefix(st, "find_sources_host_reduce: sigma_clip_host_reduce");
    if (!st) cat->ms_clip = gpuws__sources_ms_since(&t0);
    /* the same clipping and options on every caller: these fail all or none */
    if (!st && isnan(o->threshold_abs) && cat->clip.count == 0)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                          "find_sources_host_reduce: the clipping kept no pixel, so "
                          "threshold_sigma x clipped std has no value; give threshold_abs instead");
    if (!st) st = gpuws__sources_threshold_value("find_sources_host_reduce", o, cat);
    const unsigned threads = gpuws__threads_from_knob(ctx->tuning.find_sources_host_threads);
    if (!st && n) gpuws__sources_mask_host(image, n, (float)cat->threshold, threads, mask);
    if (!st) cat->ms_threshold = gpuws__sources_ms_since(&t0);
    if (!st && (st = gpuws_label_host_reduce(ctx, width, rows, mask, 0, o->connectivity, label_options, part, parts,
                                             reduce, reduce_user, labels, &nl)))
        st = gpuws__error_prefix(st, "find_sources_host_reduce: label_host_reduce");
    gpuws__free(mask);
    if (!st) cat->ms_label = gpuws__sources_ms_since(&t0);
    if (!st) {
        const fragment_job j = {
            .image = image, .labels = labels, .width = width, .first_row = first_row, .num_labels = nl
        };
        local = measure_rows(&j, rows, threads, &frags, &nfrag);
        st = gather(&g, head, frags, nfrag, local, part, parts, nl, &meas);
    }
    fragments_free(frags, nfrag);
    gpuws__free(head);
    if (!st) cat->ms_measure = gpuws__sources_ms_since(&t0);
    if (!st) st = gpuws__sources_fill(cat, meas, nl);
    gpuws__free(meas);
    if (!st && o->want_labels) cat->labels = labels;
    else gpuws__free(labels);
    if (st) {
        gpuws_catalog_free(cat);
        return st;
    }
    cat->ms_total = gpuws__sources_ms_since(&start);
    *catalog = cat;
    return GPUWS_OK;
}

size_t gpuws_find_sources_host_block_rows(size_t width) { return gpuws__measure_host_block_rows(width ? width : 1); }
