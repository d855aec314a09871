/* The workshop pipeline over an image whose rows several devices hold (gpuws_find_sources_parts), and
 * gpuws_find_sources over several devices from host memory (options->more_contexts).
 *
 * Every device works on its own rows at once; the host joins them between the steps with a few small reads:
 *   κσ clipping   gpuws__sigma_clip_parts: each device's chunk statistics and key histograms, combined on the host
 *   threshold     each device its rows' mask
 *   labelling     gpuws__label_parts: each device labels its rows, the host joins the border rows and numbers,
 *                 each device maps its labels to the whole image's numbers (without a label image to return, a
 *                 table that the measurement reads them through: one pass over them less)
 *   measurement   each device its rows' records (sums, not centres: gpuws__measure_sums) of the labels its rows
 *                 hold, read back and added on the host in part order (the parts are in raster order). */
#include "sources_internal.h"

#include "../../core/threads.h"
#include "../common/band_stream.h"
#include "../label/label_driver.h"
#include "../measure/measure_driver.h"
#include "../measure/measure_ref.h"
#include "../sigma_clip/sigma_clip_parts.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* What this file keeps on each part's stream. */
static const gpuws__stream_key key_mask = { "find_sources_parts.mask" };
static const gpuws__stream_key key_labels = { "find_sources_parts.labels" };
static const gpuws__stream_key key_records = { "find_sources_parts.records" };
static const gpuws__stream_key key_image = { "find_sources_parts.image" };
static const gpuws__stream_key key_calls = { "find_sources_parts.calls" };

#define MAX_PARTS GPUWS__BAND_DEVICES

typedef struct {
    gpuws_stream *s;
    const gpuws_buffer *image;
    size_t rows, r0; /* rows and first row in the whole image */
    gpuws_buffer *mask, *labels, *records;
    gpuws_source_measure *rec; /* the records of its labels lo .. hi, read back */
    size_t kept;               /* rec's bytes when it is its context's kept pinned memory, else 0 */
    gpuws__label_part lp;
} part_state;

/* Waits for every part's stream; the first error, else st. */
static gpuws_status sync_parts(part_state *ps, size_t np, gpuws_status st)
{
    for (size_t p = 0; p < np; p++)
        if (ps[p].rows) {
            const gpuws_status sst = gpuws_stream_synchronize(ps[p].s);
            if (!st) st = sst;
        }
    return st;
}

/* The clipping kept no pixel: why, from the parts' pixels read back. */
static gpuws_status no_pixel_kept_parts(part_state *ps, size_t np, size_t width, size_t n, double kappa)
{
    float *px = gpuws__malloc(n * sizeof *px);
    if (!px)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes to say why the clipping kept no pixel",
                            n * sizeof *px);
    gpuws_status st = GPUWS_OK;
    for (size_t p = 0; p < np && !st; p++)
        if (ps[p].rows) st = gpuws_buffer_read(ps[p].image, 0, px + ps[p].r0 * width, ps[p].rows * width * 4);
    if (!st) st = gpuws__sources_no_pixel_kept(px, NULL, n, kappa);
    gpuws__free(px);
    return st;
}

/* Host memory for the records of part q's labels lo .. hi: pageable on the stream's first call, then pinned memory
 * kept with the context (gpuws__staging_take), which the device fills several times faster and whose pages are
 * mapped already: fresh pages fault in on every call, which costs more than the read itself (the extraction's
 * records do the same: extract.c). */
static gpuws_status records_host(part_state *q)
{
    const size_t bytes = (q->lp.hi - q->lp.lo + 1) * sizeof(gpuws_source_measure);
    gpuws_context *ctx = q->s->ctx;
    q->kept = 0;
    if (ctx->info.type == GPUWS_DEVICE_GPU && !ctx->info.unified_memory) {
        unsigned *calls;
        gpuws_status st = gpuws__stream_memo(q->s, &key_calls, sizeof *calls, (void **)&calls);
        if (st) return st;
        if ((*calls)++ && !gpuws__staging_take(ctx, bytes, (void **)&q->rec, &q->kept)) return GPUWS_OK;
    }
    if (!(q->rec = gpuws__malloc(bytes)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for the records", bytes);
    gpuws__prefault(q->rec, bytes);
    return GPUWS_OK;
}

static void records_release(part_state *q, bool failed)
{
    if (q->kept && !failed) gpuws__staging_give(q->s->ctx, q->rec, q->kept);
    else if (q->kept) gpuws_host_free(q->s->ctx, q->rec); /* a device may still write into it */
    else gpuws__free(q->rec);
    q->rec = NULL, q->kept = 0;
}

/* Records a host thread finishes at least: a quarter of this left two ranks' measurement no faster on a 32-core
 * host (the threads' wakes cost what they save). */
#define RECORDS_LEAST 16384.0

typedef struct {
    part_state *ps;
    size_t np;
    gpuws_source *out; /* out[k - first]: label k's source */
    size_t first;
} records_job;

/* A part's record made the whole image's: its first row r0 added to the rows (Σ d·(r + r0) = Σ d·r + r0·Σ d). */
static void to_image_rows(gpuws_source_measure *m, int64_t r0)
{
    m->row += (double)r0 * m->sum;
    m->peak_row += r0;
}

/* Labels first + k0 .. first + k1 - 1 into the catalogue: each label's record in the part where it begins made the
 * whole image's (unless merge_into_owner did, which it marks by a negative npix: a label's own part has at least one
 * of its pixels), its centre taken. */
static void records_out(void *arg, size_t part, size_t k0, size_t k1)
{
    (void)part;
    const records_job *j = arg;
    const size_t last = j->first + k1 - 1;
    for (size_t p = 0, k = j->first + k0; p < j->np && k <= last; p++) {
        const gpuws__label_part *l = &j->ps[p].lp;
        const int64_t r0 = (int64_t)j->ps[p].r0;
        for (k = k > l->first ? k : l->first; k <= l->hi && k <= last; k++) {
            gpuws_source_measure *m = &j->ps[p].rec[k - l->lo];
            if (m->npix < 0) m->npix = -m->npix;
            else if (r0) to_image_rows(m, r0);
            gpuws_measure_ref_centre(m);
            j->out[k - j->first] = gpuws__source_of(m, k);
        }
    }
}

/* A record m of label k from a part below the one where k begins (first row r0), made the whole image's and added to
 * the record of k in the one of parts ps[0 .. np - 1] where k begins, which is made the whole image's first and
 * marked so by a negative npix. Parts after parts, in raster order: the order in which one process adds them. false:
 * k begins in none of them. */
static bool merge_into_owner(part_state *ps, size_t np, size_t k, gpuws_source_measure m, int64_t r0)
{
    size_t o = np;
    while (o > 0 && (ps[o - 1].lp.first > k || k > ps[o - 1].lp.hi)) o--;
    if (o == 0) return false;
    gpuws_source_measure *t = &ps[o - 1].rec[k - ps[o - 1].lp.lo];
    to_image_rows(&m, r0);
    if (t->npix < 0) t->npix = -t->npix;
    else if (ps[o - 1].r0) to_image_rows(t, (int64_t)ps[o - 1].r0);
    gpuws__measure_merge(t, &m);
    t->npix = -t->npix;
    return true;
}

/* The parts' records made the whole image's and into the catalogue. The records of the labels that reach a part from
 * above (lo .. first - 1) are added to those of the part where the label begins, part after part (raster order),
 * each side made the whole image's first (the part where it begins marks it so); then, on threads, every other
 * label's record made the whole image's, and every label's centre (records_out). */
static void add_records(part_state *ps, size_t np, gpuws_source *out, size_t nl)
{
    for (size_t p = 1; p < np; p++) {
        const gpuws__label_part *l = &ps[p].lp;
        const gpuws_source_measure *rec = ps[p].rec;            /* rec[k - lo]: label k */
        for (size_t k = l->lo; k < l->first && k <= l->hi; k++) /* k begins in an earlier part */
            if (rec[k - l->lo].npix) merge_into_owner(ps, p, k, rec[k - l->lo], (int64_t)ps[p].r0);
    }
    records_job j = { ps, np, out, 1 };
    gpuws__run_ranges(nl, gpuws__work_parts(gpuws__cpu_count(), (double)nl, RECORDS_LEAST, nl), records_out, &j);
}

/* Several callers: each finishes the sources that begin in its rows. A label's pixels may lie in later parts, of
 * this caller or of later ones (a part's labels lo .. first - 1 reach it from above): those records, the crossing
 * records (the labels that cross the parts' borders: few), travel to every caller, and each adds those of its own
 * labels to their records in part order, as one process does. Then each finishes its own sources, and they are
 * gathered into root (or every caller): callers' own labels are consecutive, in caller order, so every caller's
 * sources go straight to their place in the catalogue.
 *
 * The crossing exchange: every caller's block in caller order, each a failure count, four words a part (lo, first,
 * hi, first row), then the crossing records of its parts in order. With a gatherer each caller puts its own block at
 * its place; without one it puts it among zeros, so that the sum is the gather. */
typedef struct {
    uint64_t *g; /* every caller's block */
    size_t words;
    uint64_t *each;    /* every caller's parts and crossing records (two words a caller) */
    size_t *counts;    /* every caller's words in g, then every caller's words of sources */
    size_t parts;      /* every caller's */
    size_t first_part; /* this caller's first among them */
    size_t at;         /* this caller's block's first word */
    size_t own0, own;  /* this caller's sources: labels own0 + 1 .. own0 + own */
    double ms[3];      /* GPUWS_LOG=debug: the first half, the crossing exchange, the sources' gather */
} records_gather;

#define RECORD_WORDS (sizeof(gpuws_source_measure) / sizeof(uint64_t))
#define SOURCE_WORDS (sizeof(gpuws_source) / sizeof(uint64_t))
_Static_assert(sizeof(gpuws_source) == 8 * sizeof(uint64_t), "a source travels as 8 words");

static void gather_release(records_gather *r)
{
    gpuws__free(r->g);
    gpuws__free(r->each);
    *r = (records_gather){ NULL };
}

/* Part q's crossing records: its labels lo .. first - 1 (none above hi). */
static size_t crossing(const gpuws__label_part *l)
{
    if (l->lo > l->hi) return 0;
    return (l->first < l->hi + 1 ? l->first : l->hi + 1) - l->lo;
}

/* The sources that begin in a part's rows: first .. hi. */
static size_t own_sources(size_t first, size_t hi) { return first <= hi ? hi - first + 1 : 0; }

/* Whether this caller gets the whole catalogue (it is root, or every caller is). */
static bool receives(const gpuws__label_exchange *x) { return x->root == GPUWS_ALL_CALLERS || x->root == x->caller; }

/* Whether this caller's catalogue holds every source's place: the whole catalogue's, or the sum's (its own sources
 * among zeros). */
static bool every_place(const gpuws__label_exchange *x) { return receives(x) || !x->gather; }

/* The first half, while the devices measure: one reduction of every caller's part and crossing-record counts, one of
 * whether every caller has the memory for the exchange's words. st: this caller's status so far (exchanged: any
 * failure fails every caller, and no further exchange follows). */
static gpuws_status gather_begin(part_state *ps, size_t np, const gpuws__label_exchange *x, gpuws_status st,
                                 records_gather *r)
{
    const size_t P = x->callers;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t mine = 0;
    r->own0 = SIZE_MAX;
    for (size_t p = 0; p < np; p++) {
        mine += crossing(&ps[p].lp);
        const size_t o = own_sources(ps[p].lp.first, ps[p].lp.hi);
        if (o && r->own0 == SIZE_MAX) r->own0 = ps[p].lp.first - 1;
        r->own += o;
    }
    if (r->own0 == SIZE_MAX) r->own0 = 0;
    /* every caller's counts: memory had before the first reduction, whose failure it then is */
    if (!st && !(r->each = gpuws__calloc(P, 2 * sizeof *r->each + sizeof *r->counts)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for %zu callers' counts",
                          P * (2 * sizeof *r->each + sizeof *r->counts), P);
    uint64_t failed = st != GPUWS_OK, counts[2] = { np, mine }, before[2], total[2];
    gpuws_status rst = x->reduce(x->user, &failed, 1);
    if (!rst && !failed) rst = gpuws__reduce_slots(x->reduce, x->user, x->caller, P, counts, 2, before, total, r->each);
    if (!st && rst) st = gpuws__error_prefix(rst, "find_sources: the reducer failed");
    if (st || rst) return st;
    if (failed)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources: %llu of %zu callers failed",
                            (unsigned long long)failed, P);
    r->counts = (size_t *)(r->each + 2 * P);
    for (size_t c = 0; c < P; c++) r->counts[c] = 1 + 4 * (size_t)r->each[2 * c] + RECORD_WORDS * r->each[2 * c + 1];
    r->parts = (size_t)total[0], r->first_part = (size_t)before[0];
    r->words = P + 4 * r->parts + RECORD_WORDS * (size_t)total[1];
    r->at = x->caller + 4 * (size_t)before[0] + RECORD_WORDS * (size_t)before[1];
    if (!(r->g = gpuws__calloc(r->words, sizeof *r->g)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for every caller's crossing records",
                          r->words * sizeof *r->g);
    uint64_t bad = st != GPUWS_OK;
    rst = x->reduce(x->user, &bad, 1);
    if (!st && rst) st = gpuws__error_prefix(rst, "find_sources: the reducer failed");
    else if (!st && bad)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources: %llu of %zu callers failed",
                          (unsigned long long)bad, P);
    r->ms[0] = gpuws__sources_ms_since(&t0);
    return st;
}

/* The second half, once the devices are done: the crossing records exchanged (with this caller's failure count: any
 * failure fails every caller), those of this caller's labels added to their records, its own sources finished into
 * cat->sources, and every caller's gathered there. */
static gpuws_status gather_end(part_state *ps, size_t np, const gpuws__label_exchange *x, size_t nl, gpuws_status st,
                               records_gather *r, gpuws_source *out)
{
    uint64_t *b = r->g + r->at;
    b[0] = st != GPUWS_OK;
    for (size_t p = 0, k = 1 + 4 * np; p < np && !st; p++) {
        const gpuws__label_part *l = &ps[p].lp;
        uint64_t *d = b + 1 + 4 * p;
        d[0] = l->lo, d[1] = l->first, d[2] = l->hi, d[3] = ps[p].r0;
        const size_t c = crossing(l);
        if (c) memcpy(b + k, ps[p].rec, c * sizeof *ps[p].rec);
        k += RECORD_WORDS * c;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gpuws_status rst = x->gather ? x->gather(x->user, r->g, r->counts, x->caller, x->callers, GPUWS_ALL_CALLERS)
                                 : x->reduce(x->user, r->g, r->words);
    r->ms[1] = gpuws__sources_ms_since(&t0);
    if (rst)
        return st ? st : gpuws__error_prefix(rst, "find_sources: the %s failed", x->gather ? "gatherer" : "reducer");
    uint64_t failed = 0;
    for (size_t c = 0, at = 0; c < x->callers; at += r->counts[c++]) failed += r->g[at];
    if (!st && failed)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources: %llu of %zu callers failed",
                          (unsigned long long)failed, x->callers);
    if (st) return st;
    /* the crossing records of the parts after this caller's first added to this caller's own labels' records, in
     * part order; every caller's sources counted. No allocation and no failure that would leave this caller out of
     * the sources' gather, in which every other caller then waits */
    size_t p = 0; /* every caller's parts, in order */
    for (size_t c = 0, at = 0; c < x->callers; c++) {
        const uint64_t *cb = r->g + at, *cr = cb + 1 + 4 * r->each[2 * c];
        at += r->counts[c]; /* before counts[c] becomes its sources' words */
        size_t n = 0;
        for (size_t q = 0; q < r->each[2 * c]; q++, p++) {
            const uint64_t *d = cb + 1 + 4 * q;
            const gpuws__label_part l = { .lo = d[0], .first = d[1], .hi = d[2] };
            n += own_sources(l.first, l.hi);
            for (size_t k = l.lo; p > r->first_part && k < l.first && k <= l.hi && !st; k++) {
                gpuws_source_measure m;
                memcpy(&m, cr + RECORD_WORDS * (k - l.lo), sizeof m);
                if (m.npix && k > r->own0 && k <= r->own0 + r->own && !merge_into_owner(ps, np, k, m, (int64_t)d[3]))
                    st = gpuws__error(GPUWS_ERR_INTERNAL, "find_sources: label %zu begins in no part", k);
            }
            cr += RECORD_WORDS * crossing(&l);
        }
        r->counts[c] = SOURCE_WORDS * n;
    }
    records_job j = { ps, np, every_place(x) ? out + r->own0 : out, r->own0 + 1 };
    if (r->own && !st)
        gpuws__run_ranges(r->own, gpuws__work_parts(gpuws__cpu_count(), (double)r->own, RECORDS_LEAST, r->own),
                          records_out, &j);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t *w = (uint64_t *)out;
    if (x->gather && nl) {
        rst = x->gather(x->user, w, r->counts, x->caller, x->callers, x->root);
    } else if (nl) { /* the sum is the gather: this caller's sources among zeros */
        memset(w, 0, SOURCE_WORDS * r->own0 * sizeof *w);
        memset(w + SOURCE_WORDS * (r->own0 + r->own), 0, SOURCE_WORDS * (nl - r->own0 - r->own) * sizeof *w);
        rst = x->reduce(x->user, w, SOURCE_WORDS * nl);
    }
    r->ms[2] = gpuws__sources_ms_since(&t0);
    if (st) return st;
    if (rst) return gpuws__error_prefix(rst, "find_sources: the %s failed", x->gather ? "gatherer" : "reducer");
    if (!receives(x) && every_place(x) && r->own0) memmove(out, out + r->own0, r->own * sizeof *out);
    return GPUWS_OK;
}

/* The clipping's chunks: whole rows that divide a measurement block (so that parts of whole blocks hold whole chunks,
 * and the statistics are the same bits for any such split), at least 2^18 values where the block allows: a chunk
 * is a work-group's, and a device needs thousands of them to read at its full rate. */
static size_t clip_chunk(size_t width)
{
    size_t rows = gpuws_find_sources_host_block_rows(width);
    while (rows % 2 == 0 && rows / 2 * width >= ((size_t)1 << 18)) rows /= 2;
    return rows * width;
}

static gpuws_status pipeline(part_state *ps, size_t np, size_t width, size_t height, const gpuws_sources_options *o,
                             const gpuws__label_exchange *x, records_gather *r, gpuws_catalog *cat)
{
    const size_t n = width * height;
    const size_t chunk = clip_chunk(width);
    /* CPU-type OpenCL devices one part after another (they share the host's cores; PoCL can fail an assertion when
     * two command queues run one kernel at once: sigma_clip_parts.c) */
    const bool serial = np && gpuws__is_cpu_device(ps[0].s->ctx);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gpuws_status st = GPUWS_OK;
    gpuws__clip_part cp[MAX_PARTS];
    for (size_t p = 0; p < np; p++) cp[p] = (gpuws__clip_part){ ps[p].s, ps[p].image, ps[p].rows * width };
    if (x) {
        const gpuws__clip_exchange cx = { x->reduce, x->user, x->caller, x->callers, false, x->gather };
        st = gpuws__sigma_clip_parts_reduce(cp, np, chunk, o->clip, &cx, &cat->clip);
    } else {
        st = gpuws__sigma_clip_parts(cp, np, chunk, o->clip, &cat->clip);
    }
    if (st) return gpuws__error_prefix(st, "find_sources: sigma_clip");
    cat->ms_clip = gpuws__sources_ms_since(&t0);
    if (isnan(o->threshold_abs) && cat->clip.count == 0)
        return x ? gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "find_sources: the clipping kept no pixel of any caller (kappa %g)", o->clip->kappa)
                 : no_pixel_kept_parts(ps, np, width, n, o->clip->kappa);
    if ((st = gpuws__sources_threshold_value("find_sources", o, cat))) return st;

    for (size_t p = 0; p < np && !st; p++) {
        if (!ps[p].rows) continue;
        const size_t px = ps[p].rows * width;
        if (!(st = gpuws__stream_scratch(ps[p].s, &key_mask, px, &ps[p].mask)) &&
            !(st = gpuws__stream_scratch(ps[p].s, &key_labels, px * sizeof(int32_t), &ps[p].labels)) &&
            (st = gpuws_threshold(ps[p].s, px, ps[p].image, (float)cat->threshold, ps[p].mask)))
            st = gpuws__error_prefix(st, "find_sources: threshold");
        if (!st && serial) st = gpuws_stream_synchronize(ps[p].s);
    }
    st = sync_parts(ps, np, st);
    if (st && !x) return st;
    cat->ms_threshold = gpuws__sources_ms_since(&t0);

    gpuws__label_part lp[MAX_PARTS];
    for (size_t p = 0; p < np; p++)
        lp[p] = (gpuws__label_part){
            .stream = ps[p].s, .mask = ps[p].mask, .labels = ps[p].labels, .rows = ps[p].rows, .defer = !o->want_labels
        };
    size_t nl = 0;
    if (x) { /* a caller whose threshold failed still takes part, and every caller fails */
        const gpuws__label_exchange lx = { x->reduce, x->user, x->caller, x->callers, st != GPUWS_OK, x->gather, 0 };
        const gpuws_status lst =
            gpuws__label_parts_reduce(lp, np, width, o->connectivity, &lx, "find_sources: label", &nl);
        if (st || (st = lst)) return st;
    } else if ((st = gpuws__label_parts(lp, np, width, o->connectivity, "find_sources: label", &nl))) {
        return st;
    }
    for (size_t p = 0; p < np; p++) ps[p].lp = lp[p];
    cat->ms_label = gpuws__sources_ms_since(&t0);

    const size_t rec = sizeof(gpuws_source_measure);
    double tm[4]; /* GPUWS_LOG=debug: the measurement's enqueue, host memory, wait, records */
    for (size_t p = 0; p < np && !st && nl; p++) {
        part_state *q = &ps[p];
        if (q->lp.lo > q->lp.hi) continue;
        if (!(st = gpuws__stream_scratch(q->s, &key_records, nl * rec, &q->records)) &&
            (st = gpuws__measure_sums(q->s, width, q->rows, q->image, q->labels, nl, &q->lp.remap, q->records)))
            st = gpuws__error_prefix(st, "find_sources: measure");
        if (!st && serial) st = gpuws_stream_synchronize(q->s);
    }
    tm[0] = gpuws__sources_ms_since(&t0);
    /* several callers: the crossing records' counts exchanged while the devices measure (a failure so far too, so
     * that no caller waits for it; if any failed, every caller fails here) */
    if (x && (st = gather_begin(ps, np, x, st, r))) return st;
    /* while the devices measure, the host has the memory they are read into, and the catalogue's: every source's
     * place, or (several callers, this one not root) this caller's own sources' (the sum needs every place) */
    const size_t places = !x || every_place(x) ? nl : r->own;
    if (!st && places && !(cat->sources = gpuws__malloc(places * sizeof *cat->sources)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu sources (%zu bytes)", places,
                          places * sizeof *cat->sources);
    if (!st && places) gpuws__prefault(cat->sources, places * sizeof *cat->sources);
    for (size_t p = 0; p < np && !st && nl; p++)
        if (ps[p].lp.lo <= ps[p].lp.hi) st = records_host(&ps[p]);
    tm[1] = gpuws__sources_ms_since(&t0);
    /* read back once every device measures: a read into pageable memory holds the host until it is done */
    for (size_t p = 0; p < np && !st && nl; p++) {
        const part_state *q = &ps[p];
        if (q->lp.lo <= q->lp.hi)
            st = gpuws_buffer_read_async(q->s, q->records, (q->lp.lo - 1) * rec, q->rec,
                                         (q->lp.hi - q->lp.lo + 1) * rec);
    }
    /* the label image: the whole image's, or (several callers) this caller's rows */
    const size_t lr0 = x && np ? ps[0].r0 : 0, ln = x ? (np ? ps[np - 1].r0 + ps[np - 1].rows - lr0 : 0) * width : n;
    if (o->want_labels && !st && ln) {
        if (!(cat->labels = gpuws__malloc(ln * sizeof(int32_t))))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for the label image",
                              ln * sizeof(int32_t));
        for (size_t p = 0; p < np && !st; p++)
            if (ps[p].rows)
                st = gpuws_buffer_read_async(ps[p].s, ps[p].labels, 0, cat->labels + (ps[p].r0 - lr0) * width,
                                             ps[p].rows * width * sizeof(int32_t));
    }
    double done[2] = { 0.0, 0.0 }; /* GPUWS_LOG=debug: when the first two parts' work was seen done */
    struct timespec tw = t0;
    for (size_t p = 0; p < np; p++)
        if (ps[p].rows) {
            const gpuws_status sst = gpuws_stream_synchronize(ps[p].s);
            if (!st) st = sst;
            if (p < 2) done[p] = gpuws__sources_ms_since(&tw) + (p ? done[0] : 0.0);
        }
    if (st && !x) return st;
    tm[2] = gpuws__sources_ms_since(&t0);
    /* several callers: a failure here is still exchanged, so that no caller waits for it */
    if (x) st = gather_end(ps, np, x, nl, st, r, cat->sources);
    else if (nl) add_records(ps, np, cat->sources, nl);
    if (st) return st;
    cat->num_sources = !x || receives(x) ? nl : r->own;
    tm[3] = gpuws__sources_ms_since(&t0);
    cat->ms_measure = tm[0] + tm[1] + tm[2] + tm[3];
    gpuws__log(GPUWS__LOG_DEBUG,
               "find_sources over %zu parts: measure %.2f ms (enqueue %.2f, host memory %.2f, wait for the devices "
               "%.2f: parts 0 and 1 seen done at %.2f and %.2f; records %.2f; %zu sources)",
               np, cat->ms_measure, tm[0], tm[1], tm[2], done[0], done[1], tm[3], nl);
    if (x)
        gpuws__log(
            GPUWS__LOG_DEBUG,
            "find_sources: caller %zu of %zu: counts and memory %.2f ms (in host memory above); crossing records "
            "of %zu parts, %zu bytes %s in %.2f ms, and %zu sources of its own, %s into %s in %.2f ms (in "
            "records above)",
            x->caller, x->callers, r->ms[0], r->parts, r->words * 8, x->gather ? "gathered" : "reduced", r->ms[1],
            r->own, x->gather ? "gathered" : "reduced", x->root == GPUWS_ALL_CALLERS ? "every caller" : "root",
            r->ms[2]);
    cat->ms_total = cat->ms_clip + cat->ms_threshold + cat->ms_label + cat->ms_measure;
    return st;
}

/* Runs the pipeline into a new catalogue; on error none, and every stream idle. */
static gpuws_status run(part_state *ps, size_t np, size_t width, size_t height, const gpuws_sources_options *o,
                        const gpuws__label_exchange *x, double ms_upload, gpuws_catalog **catalog)
{
    gpuws_catalog *cat = gpuws__calloc(1, sizeof *cat);
    if (!cat) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: the catalogue (%zu bytes)", sizeof *cat);
    records_gather r = { NULL };
    gpuws_status st = pipeline(ps, np, width, height, o, x, &r, cat);
    if (st) {
        sync_parts(ps, np, st); /* a stream may still write into the host arrays */
        gpuws_catalog_free(cat);
        cat = NULL;
    } else {
        cat->ms_upload = ms_upload;
        cat->ms_total += ms_upload;
    }
    for (size_t p = 0; p < np; p++) records_release(&ps[p], st != GPUWS_OK);
    gather_release(&r);
    *catalog = cat;
    return st;
}

/* The parts checked into ps (their rows from 0 on: r0) and the sum of their rows; name: the call's, in messages. */
static gpuws_status check_parts(const gpuws_image_part *parts, size_t num_parts, size_t width, part_state *ps,
                                size_t *rows, const char *name)
{
    size_t height = 0;
    gpuws_status st = GPUWS_OK;
    for (size_t p = 0; p < num_parts && !st; p++) {
        char what[64];
        snprintf(what, sizeof what, "parts[%zu].stream", p);
        const gpuws_image_part *q = &parts[p];
        size_t px;
        if (!q->stream) st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is NULL", name, what);
        else if ((st = gpuws__check_stream(q->stream, what))) st = gpuws__error_prefix(st, "%s", name);
        else if (q->stream->ctx->backend->kind != parts[0].stream->ctx->backend->kind)
            st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is on %s, parts[0]'s on %s", name, what,
                              q->stream->ctx->backend->name, parts[0].stream->ctx->backend->name);
        for (size_t j = 0; j < p && !st; j++)
            if (parts[j].stream == q->stream)
                st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is parts[%zu].stream again", name, what, j);
        if (!st && gpuws__mul_overflows(width, q->rows, &px))
            st = gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", name, width, q->rows);
        if (!st && q->rows) {
            snprintf(what, sizeof what, "parts[%zu].image", p);
            st = gpuws__check_array(q->stream->ctx, q->image, what, px, sizeof(float));
            if (st) st = gpuws__error_prefix(st, "%s", name);
        }
        ps[p] = (part_state){ .s = q->stream, .image = q->image, .rows = q->rows, .r0 = height };
        height += q->rows;
    }
    *rows = height;
    return st;
}

gpuws_status gpuws_find_sources_parts(const gpuws_image_part *parts, size_t num_parts, size_t width,
                                      const gpuws_sources_options *options, gpuws_catalog **catalog)
{
    if (!catalog) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts: argument 'catalog' is NULL");
    *catalog = NULL;
    if (!parts || num_parts == 0 || num_parts > MAX_PARTS)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts: %zu parts%s; 1 to %d parts", num_parts,
                            parts ? "" : " (parts is NULL)", MAX_PARTS);
    part_state ps[MAX_PARTS];
    memset(ps, 0, sizeof ps);
    size_t height = 0, n;
    gpuws_status st = check_parts(parts, num_parts, width, ps, &height, "find_sources_parts");
    if (st) return st;
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts: the image is %zu x %zu: no pixels", width,
                            height);
    if (gpuws__mul_overflows(width, height, &n) || n > SIZE_MAX / sizeof(int32_t))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "find_sources_parts: %zu x %zu pixels overflow size_t", width, height);
    sources_options so;
    if ((st = gpuws__sources_read_options("find_sources_parts", options, &so))) return st;
    gpuws__stream_claim claims[MAX_PARTS] = { { NULL } };
    for (size_t p = 0; p < num_parts && !st; p++) st = gpuws__claim(&claims[p], ps[p].s, "find_sources_parts");
    if (!st) st = run(ps, num_parts, width, height, &so.o, NULL, 0.0, catalog);
    for (size_t p = 0; p < num_parts; p++) gpuws__unclaim(&claims[p]);
    return st;
}

/* Several callers: the first reduction, where they agree on the width and the options and learn each other's rows
 * (this caller's first row among all: *r0, their sum: *height). failed: this caller failed before (every caller then
 * fails; its own error is the caller's to return). */
static gpuws_status agree_sources(const gpuws__label_exchange *x, size_t width, const gpuws_sources_options *o,
                                  size_t rows, bool failed, size_t *r0, size_t *height)
{
    enum { VALUES = 6, WORDS = 1 + GPUWS__AGREE_WORDS(VALUES) }; /* a failure count, then gpuws__agree_words' */
    const size_t P = x->callers;
    uint64_t w[WORDS],
        v[VALUES] = { width, (uint64_t)(uint32_t)o->connectivity, 0, 0, (uint64_t)(o->want_labels != 0), x->root };
    memcpy(&v[2], &o->threshold_sigma, 8);
    memcpy(&v[3], &o->threshold_abs, 8);
    static const char *const what[VALUES] = { "width",         "connectivity", "threshold_sigma",
                                              "threshold_abs", "want_labels",  "root" };
    w[0] = failed;
    gpuws__agree_words(v, VALUES, w + 1);
    *r0 = *height = 0;
    gpuws_status st = x->reduce(x->user, w, WORDS);
    if (st) return gpuws__error_prefix(st, "find_sources_parts: the reducer failed");
    if (w[0])
        return failed ? GPUWS_OK
                      : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts: %llu of %zu callers failed",
                                     (unsigned long long)w[0], P);
    const size_t bad = gpuws__agree_check(w + 1, VALUES, P);
    if (bad < VALUES)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "find_sources_parts: the %zu callers disagree on %s: each must pass the same", P,
                            what[bad]);
    uint64_t mine = rows, before, total;
    if ((st = gpuws__reduce_slots(x->reduce, x->user, x->caller, P, &mine, 1, &before, &total, NULL)))
        return gpuws__error_prefix(st, "find_sources_parts: the reducer failed");
    *r0 = (size_t)before, *height = (size_t)total;
    if (*height == 0) /* every caller sees the same sum */
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts: the image is %zu x 0: no pixels", width);
    return GPUWS_OK;
}

gpuws_status gpuws_find_sources_parts_reduce(const gpuws_image_part *parts, size_t num_parts, size_t width,
                                             const gpuws_sources_options *options, size_t caller, size_t callers,
                                             size_t root, gpuws_sum_reducer reduce, gpuws_gatherer gather,
                                             void *reduce_user, gpuws_catalog **catalog)
{
    if (!catalog || !reduce || caller >= callers)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources_parts_reduce: %s",
                            !catalog  ? "argument 'catalog' is NULL"
                            : !reduce ? "argument 'reduce' is NULL"
                                      : "the caller's index is not below the callers' count");
    *catalog = NULL;
    const char *name = "find_sources_parts_reduce";
    part_state ps[MAX_PARTS];
    memset(ps, 0, sizeof ps);
    size_t rows = 0, r0 = 0, height = 0, n;
    gpuws_status st = GPUWS_OK;
    if ((num_parts && !parts) || num_parts > MAX_PARTS)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %zu parts%s; 0 to %d parts", name, num_parts,
                          parts ? "" : " (parts is NULL)", MAX_PARTS);
    if (!st) st = check_parts(parts, num_parts, width, ps, &rows, name);
    if (!st && width == 0) st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is 0 pixels wide", name);
    if (!st && root >= callers && root != GPUWS_ALL_CALLERS)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: root %zu of %zu callers (GPUWS_ALL_CALLERS: every caller)",
                          name, root, callers);
    sources_options so;
    const gpuws_sources_options defaults = GPUWS_SOURCES_OPTIONS_INIT;
    if (!st) st = gpuws__sources_read_options(name, options, &so);
    gpuws__stream_claim claims[MAX_PARTS] = { { NULL } };
    for (size_t p = 0; p < num_parts && !st; p++) st = gpuws__claim(&claims[p], ps[p].s, name);
    /* a caller that failed so far still takes part in the first reduction, so that no other waits for it */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", st ? gpuws_last_error() : "");
    gpuws__label_exchange x = { reduce, reduce_user, caller, callers, st != GPUWS_OK, gather, root };
    const gpuws_status ast = agree_sources(&x, width, st ? &defaults : &so.o, rows, st != GPUWS_OK, &r0, &height);
    if (st) st = gpuws__error(st, "%s", msg);
    else st = ast;
    if (!st && (gpuws__mul_overflows(width, height, &n) || n > SIZE_MAX / sizeof(int32_t)))
        st = gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", name, width, height);
    for (size_t p = 0; p < num_parts && !st; p++) ps[p].r0 += r0;
    if (!st) st = run(ps, num_parts, width, height, &so.o, &x, 0.0, catalog);
    for (size_t p = 0; p < num_parts; p++) gpuws__unclaim(&claims[p]);
    return st;
}

/* ---- from host memory -------------------------------------------------------------------------------------- */

typedef struct {
    part_state *ps;
    const float *image;
    size_t width;
    gpuws_status st[MAX_PARTS];
    char msg[MAX_PARTS][256];
} upload_job;

/* One thread a device: a pageable copy's driver time is the calling thread's, so the devices load at once. */
static void upload_part(void *arg, unsigned i)
{
    upload_job *j = arg;
    part_state *q = &j->ps[i];
    if (!q->rows) return;
    j->st[i] = gpuws__write(q->s, (gpuws_buffer *)q->image, 0, j->image + q->r0 * j->width,
                            q->rows * j->width * sizeof(float), 1);
    if (j->st[i]) snprintf(j->msg[i], sizeof j->msg[i], "%s", gpuws_last_error());
}

gpuws_status gpuws__find_sources_devices(gpuws_stream *const *streams, unsigned nd, const float *image, size_t width,
                                         size_t height, const gpuws_sources_options *o, gpuws_catalog **catalog)
{
    /* whole blocks of the measurement's rows a part, so the clip's chunks are the same for any device count */
    const size_t block_rows = gpuws_find_sources_host_block_rows(width),
                 blocks = (height + block_rows - 1) / block_rows;
    part_state ps[MAX_PARTS];
    memset(ps, 0, sizeof ps);
    gpuws_status st = GPUWS_OK;
    for (unsigned d = 0; d < nd; d++) {
        const size_t b0 = blocks * d / nd, b1 = blocks * (d + 1) / nd, r0 = b0 * block_rows,
                     r1 = b1 * block_rows < height ? b1 * block_rows : height;
        ps[d] = (part_state){ .s = streams[d], .rows = r1 - r0, .r0 = r0 };
        gpuws_buffer *img = NULL;
        if (ps[d].rows && !st) st = gpuws__stream_scratch(streams[d], &key_image, ps[d].rows * width * 4, &img);
        ps[d].image = img;
    }
    if (st) return st;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    upload_job *j = gpuws__calloc(1, sizeof *j);
    if (!j) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes", sizeof *j);
    j->ps = ps, j->image = image, j->width = width;
    st = gpuws__run_threads(nd, upload_part, j);
    for (unsigned d = 0; d < nd && !st; d++)
        if (j->st[d]) st = gpuws__error(j->st[d], "find_sources: upload to device %u: %s", d, j->msg[d]);
    gpuws__free(j);
    if (st) return st;
    return run(ps, nd, width, height, o, NULL, gpuws__sources_ms_since(&t0), catalog);
}
