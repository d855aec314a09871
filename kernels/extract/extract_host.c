/* gpuws_extract_host: the extraction of a host image of any size (docs/scale.md, "Source extraction from host
 * memory"). In one band it is gpuws_extract between uploads and a download. In bands, each band of whole rows goes
 * to the device with max(filter_h / 2, 1) rows of halo on either side, which is every row that its own rows' filtered
 * values, blank flags and lower-right σ read: so the device makes the records of the band's own rows exactly as it
 * makes them in one image (the filter leaves out only rows outside the image, and a band's edge is the image's only
 * where the image ends). Only a band's own rows are detected, so its labels are gpuws_label's on them. The host
 * keeps the records of the bands' own rows, which are then the whole image's in raster order, joins the labels that
 * touch across the borders between bands and numbers the components as gpuws_label numbers the whole image, and
 * makes the catalogue with gpuws_extract's host steps: the same catalogue and segmentation map, bit for bit. */
#include "../common/band_stream.h"
#include "../common/driver.h"
#include "../../core/options.h"
#include "../../core/threads.h"
#include "../background/background_ref.h"
#include "extract_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract_pixel.h" /* after <math.h>: it includes nothing */

/* Device bytes a pixel of a band: the image, the prepared maps (d, σ, filtered), det, labels, and records of six
 * words where every pixel is detected; the maps given take 4 bytes each and the mask 1 more. */
#define EX_HOST_BYTES 45u
/* What the in-core call adds a pixel, every pixel a record at worst: the device's grouping of the records (16 bytes a
 * record), their chaining (about 44) and the segmentation map (4). */
#define EX_IN_CORE_BYTES 64u

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The records of the bands' own rows, growing as the bands come, and their components: label holds each record's
 * band label, made global (the labels of the bands before added), until components_join numbers them. */
typedef struct {
    uint32_t *idx;
    float *value, *cd, *sig, *sig_lr;
    int32_t *label;
    size_t n, cap;
    size_t labels; /* the bands' labels so far */
} ex_kept;

static void kept_free(ex_kept *k)
{
    gpuws__free(k->idx), gpuws__free(k->value), gpuws__free(k->cd), gpuws__free(k->sig), gpuws__free(k->sig_lr);
    gpuws__free(k->label);
    memset(k, 0, sizeof *k);
}

/* Room for `more` records: the first time as asked, later by doubling, or exactly when `exact`. */
static bool kept_grow(ex_kept *k, size_t more, bool exact)
{
    if (k->n + more <= k->cap) return true;
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < k->n + more) cap = k->cap && !exact ? cap * 2 : k->n + more;
    void *p[6] = { k->idx, k->value, k->cd, k->sig, k->sig_lr, k->label };
    for (int a = 0; a < 6; a++) {
        void *q = gpuws__realloc(p[a], cap * sizeof(uint32_t));
        if (!q) return false;
        p[a] = q;
        k->idx = p[0], k->value = p[1], k->cd = p[2], k->sig = p[3], k->sig_lr = p[4], k->label = p[5];
        /* the fresh pages mapped on threads, not one at a time in the copies into them */
        gpuws__prefault((char *)q + k->cap * sizeof(uint32_t), (cap - k->cap) * sizeof(uint32_t));
    }
    k->cap = cap;
    return true;
}

/* A band's records (its own rows alone are detected), their indices moved by `offset` to the image's and their
 * labels by the labels of the bands before. After the first of `bands` bands, room for as many records a band
 * again and a quarter more: the arrays then grow once or twice, not at every doubling. */
static bool kept_add(ex_kept *k, const gpuws__extract_pixels *b, size_t offset, size_t bands)
{
    if (!b->n) return true; /* a band without records may have no arrays */
    const size_t guess = k->n ? 0 : b->n + b->n * (bands - 1) / 4 * 5;
    if (!kept_grow(k, b->n > guess ? b->n : guess, false)) return false;
    int32_t most = 0;
    for (size_t r = 0; r < b->n; r++) {
        const size_t j = k->n + r;
        k->idx[j] = (uint32_t)((b->idx[r] & ~EX_BLANK_BIT) + offset) | (b->idx[r] & EX_BLANK_BIT);
        k->label[j] = b->label[r] + (int32_t)k->labels;
        most = b->label[r] > most ? b->label[r] : most;
    }
    gpuws__copy_bytes(k->value + k->n, b->value, 0, b->n * sizeof(float));
    gpuws__copy_bytes(k->cd + k->n, b->cd, 0, b->n * sizeof(float));
    gpuws__copy_bytes(k->sig + k->n, b->sig, 0, b->n * sizeof(float));
    gpuws__copy_bytes(k->sig_lr + k->n, b->sig_lr, 0, b->n * sizeof(float));
    k->n += b->n;
    k->labels += (size_t)most; /* a band's labels are 1 .. most, each of some record */
    return true;
}

typedef struct {
    int32_t *to;
    const int32_t *from;
    int32_t add;
} ex_shift;

static void shift_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_shift *j = arg;
    for (size_t r = lo; r < hi; r++) j->to[r] = j->from[r] + j->add;
}

/* The records another device kept for the bands after k's (m's labels follow k's), copied into k: into the room
 * that k's first band made for every band where it suffices (a realloc of memory given huge pages may copy it). */
static bool kept_append(ex_kept *k, const ex_kept *m)
{
    if (m->n && !kept_grow(k, m->n, true)) return false;
    ex_shift j = { k->label + k->n, m->label, (int32_t)k->labels };
    gpuws__run_ranges(m->n, gpuws__copy_threads(m->n * sizeof(int32_t)), shift_range, &j);
    gpuws__copy_bytes(k->idx + k->n, m->idx, 0, m->n * sizeof(uint32_t));
    gpuws__copy_bytes(k->value + k->n, m->value, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->cd + k->n, m->cd, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->sig + k->n, m->sig, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->sig_lr + k->n, m->sig_lr, 0, m->n * sizeof(float));
    k->n += m->n, k->labels += m->labels;
    return true;
}

static uint32_t root_of(uint32_t *parent, uint32_t l)
{
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
}

/* The first record at raster index i or after. */
static size_t record_at(const ex_kept *k, size_t i)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        const size_t m = lo + (hi - lo) / 2;
        if ((k->idx[m] & ~EX_BLANK_BIT) < i) lo = m + 1;
        else hi = m;
    }
    return lo;
}

/* The components of the whole image from those of its bands of `rows` rows of width w (each band's labels are
 * gpuws_label's on its own rows: numbered in raster order of their first pixels): the labels that touch across each
 * border between bands (row y - 1 of one band, row y = rows, 2 rows, ... of the next; within a column with
 * connectivity 8, the same column with 4) are joined under the smaller one, which is the earlier first pixel; then
 * the roots, in order, are numbered 1, 2, ... and every record takes its root's number: gpuws_label's numbering of
 * the whole image. *nl the components. */
static bool components_join(ex_kept *k, size_t w, size_t h, size_t rows, int connectivity, size_t *nl)
{
    uint32_t *parent = gpuws__malloc((k->labels + 1) * sizeof *parent);
    if (!parent) return false;
    for (size_t l = 0; l <= k->labels; l++) parent[l] = (uint32_t)l;
    const size_t d = connectivity == 8;
    for (size_t y = rows; y < h; y += rows) {
        const size_t up0 = record_at(k, (y - 1) * w), up1 = record_at(k, y * w);
        const size_t down1 = record_at(k, (y + 1) * w);
        size_t above = up0;
        for (size_t r = up1; r < down1; r++) {
            const size_t x = (k->idx[r] & ~EX_BLANK_BIT) - y * w;
            const size_t lo = (y - 1) * w + (x >= d ? x - d : 0), hi = (y - 1) * w + (x + d < w ? x + d : x);
            while (above < up1 && (k->idx[above] & ~EX_BLANK_BIT) < lo) above++;
            for (size_t q = above; q < up1 && (k->idx[q] & ~EX_BLANK_BIT) <= hi; q++) {
                const uint32_t a = root_of(parent, (uint32_t)k->label[q]), c = root_of(parent, (uint32_t)k->label[r]);
                if (a < c) parent[c] = a;
                else parent[a] = c;
            }
        }
    }
    for (size_t l = 1; l <= k->labels; l++) parent[l] = root_of(parent, (uint32_t)l); /* each to its root */
    size_t count = 0;
    for (size_t l = 1; l <= k->labels; l++) /* a root lies below its members: its number is made first */
        parent[l] = parent[l] == l ? (uint32_t)++count : parent[parent[l]];
    for (size_t r = 0; r < k->n; r++) k->label[r] = (int32_t)parent[k->label[r]];
    gpuws__free(parent);
    *nl = count;
    return true;
}

typedef struct {
    gpuws_context *const *ctxs; /* the devices: ctxs[d] runs the d-th of nctx consecutive ranges of bands */
    unsigned nctx;
    const gpuws__extract_params *p;
    const gpuws_extract_host_options *ho; /* with back and rms the made background's where the CPU backend made it */
    const float *image;
    size_t halo, rows, bands; /* rows: a band's own rows (the last may have fewer) */
    const void *plan;         /* the background's plan, which the device makes each band's maps from; NULL: none */
    const gpuws__background_plan *bp;
    int passes; /* the bands are the last of them in progress: 2 after the background's */
} ex_bands;

/* The last own row of band `band` and one past it. */
static size_t band_end(const ex_bands *b, size_t band)
{
    const size_t y1 = (band + 1) * b->rows;
    return y1 < b->p->h ? y1 : b->p->h;
}

/* The records of the own rows of bands [lo, hi) into k, on ctx: on the CPU backend by the reference on the caller's
 * arrays, else through the device, a band at a time on a stream of the call's own (which holds the device steps'
 * memory); progress after each band when `report`. k's first band makes room for as many as `room` bands hold.
 * ms adds up the times of the bands' uploads (and maps), their device steps and the records' keeping. */
static gpuws_status records_in_bands(const ex_bands *b, gpuws_context *ctx, size_t lo, size_t hi, size_t room,
                                     bool report, ex_kept *k, double ms[3])
{
    const size_t w = b->p->w, h = b->p->h, rows_in = b->rows + 2 * b->halo;
    const gpuws_extract_host_options *ho = b->ho;
    const bool on_cpu = ctx->backend->kind == GPUWS_BACKEND_CPU;
    gpuws_stream *s = NULL;
    gpuws_buffer *dimg = NULL, *dback = NULL, *drms = NULL, *dmask = NULL;
    gpuws_status st = GPUWS_OK;
    gpuws_buffer *dplan = NULL;
    if (!on_cpu && lo < hi && (!(st = gpuws_stream_create(ctx, &s)))) {
        const size_t bytes = rows_in * w * sizeof(float);
        if (!(st = gpuws_buffer_create(ctx, bytes, &dimg)) && (ho->back || b->plan))
            st = gpuws_buffer_create(ctx, bytes, &dback);
        if (!st && (ho->rms || b->plan)) st = gpuws_buffer_create(ctx, bytes, &drms);
        if (!st && ho->mask) st = gpuws_buffer_create(ctx, rows_in * w, &dmask);
        if (!st && b->plan && !(st = gpuws_buffer_create(ctx, b->bp->words * 4, &dplan)))
            st = gpuws_buffer_write_async(s, dplan, 0, b->plan, b->bp->words * 4);
    }
    for (size_t band = lo; band < hi && !st; band++) {
        const size_t y0 = band * b->rows, y1 = band_end(b, band);
        const size_t a0 = y0 > b->halo ? y0 - b->halo : 0, a1 = y1 + b->halo < h ? y1 + b->halo : h;
        const size_t at = a0 * w, n = (a1 - a0) * w;
        gpuws__extract_params pb = *b->p;
        pb.h = a1 - a0, pb.row0 = a0, pb.own0 = y0 - a0, pb.own1 = y1 - a0;
        double t0 = now_ms();
        gpuws__extract_pixels px;
        memset(&px, 0, sizeof px);
        if (on_cpu) {
            st = gpuws_extract_ref_pixels(&pb, b->image + at, ho->back ? ho->back + at : NULL,
                                          ho->rms ? ho->rms + at : NULL, ho->mask ? ho->mask + at : NULL, &px);
            if (st)
                st = gpuws__error(st, "extract_host: no host memory for a band of %zu x %zu pixels (%zu bytes)", w,
                                  a1 - a0, n * (4 * sizeof(float) + 1 + sizeof(int32_t)));
        } else {
            gpuws_extract_options ob = GPUWS_EXTRACT_OPTIONS_INIT;
            ob.back = dback, ob.rms = drms, ob.mask = dmask;
            const size_t own = (y1 - y0) * w * sizeof(float), from = (y0 - a0) * w * sizeof(float);
            if (!(st = gpuws_buffer_write_async(s, dimg, 0, b->image + at, n * sizeof(float))) &&
                !(ho->back && (st = gpuws_buffer_write_async(s, dback, 0, ho->back + at, n * sizeof(float)))) &&
                !(ho->rms && (st = gpuws_buffer_write_async(s, drms, 0, ho->rms + at, n * sizeof(float)))) &&
                !(ho->mask && (st = gpuws_buffer_write_async(s, dmask, 0, ho->mask + at, n))) &&
                !(b->plan && (st = gpuws__background_rows(s, dplan, b->bp, w, a0, a1, dback, drms))) &&
                !(b->plan && ho->back_out &&
                  (st = gpuws_buffer_read_async(s, dback, from, ho->back_out + y0 * w, own))) &&
                !(b->plan && ho->rms_out && (st = gpuws_buffer_read_async(s, drms, from, ho->rms_out + y0 * w, own))))
                st = gpuws_stream_synchronize(s);
            ms[0] += now_ms() - t0, t0 = now_ms();
            if (!st) st = gpuws__extract_band_records(s, &pb, dimg, &ob, &px);
        }
        ms[1] += now_ms() - t0, t0 = now_ms();
        if (!st && !kept_add(k, &px, at, room))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu pixel records (%zu bytes)",
                              k->n + px.n, (k->n + px.n) * 6 * sizeof(uint32_t));
        if (on_cpu) gpuws__extract_pixels_free(&px);
        else if (px.idx) gpuws__extract_band_release(ctx, &px);
        ms[2] += now_ms() - t0;
        if (!st && report && ho->progress) ho->progress(ho->progress_user, b->passes, b->passes, band, b->bands, y1, h);
    }
    if (s) {
        gpuws_stream_synchronize(s); /* no upload reads the caller's memory after an error */
        gpuws_stream_destroy(s);
    }
    gpuws_buffer_destroy(dimg);
    gpuws_buffer_destroy(dback);
    gpuws_buffer_destroy(drms);
    gpuws_buffer_destroy(dmask);
    gpuws_buffer_destroy(dplan);
    return st;
}

/* One device's share of the bands: its records, times and outcome (with its message: the error text is each
 * thread's own). */
typedef struct {
    ex_kept kept;
    double ms[3], wall; /* its bands' parts, and its whole share from the thread's start */
    size_t bands, records;
    gpuws_status st;
    char why[512];
} ex_share;

typedef struct {
    const ex_bands *b;
    ex_share *share;
} ex_shares;

static void share_run(void *arg, size_t part, size_t lo, size_t hi)
{
    const ex_shares *x = arg;
    ex_share *d = &x->share[part];
    const double t0 = now_ms();
    /* device 0's records make room for every band's: the others' then join them without a realloc */
    const size_t room = part ? hi - lo : x->b->bands;
    d->st = records_in_bands(x->b, x->b->ctxs[part], lo, hi, room, part == 0, &d->kept, d->ms);
    if (d->st) snprintf(d->why, sizeof d->why, "%s", gpuws_last_error());
    d->wall = now_ms() - t0, d->bands = hi - lo, d->records = d->kept.n;
}

/* The records of every band into k, the bands cut into one consecutive range a device, each device on a thread of
 * its own (ctxs[0] on the calling thread, whose progress comes as its bands do; the others' once every device is
 * done, in band order): device d's records follow device d - 1's, so k holds them in raster order, and device d's
 * labels follow d - 1's as a band's follow the band's before it. ms as records_in_bands', over every device. */
static gpuws_status records_on_devices(const ex_bands *b, ex_kept *k, double ms[3])
{
    if (b->nctx == 1) return records_in_bands(b, b->ctxs[0], 0, b->bands, b->bands, true, k, ms);
    ex_share *share = gpuws__malloc(b->nctx * sizeof *share);
    if (!share)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %u devices' records (%zu bytes)",
                            b->nctx, b->nctx * sizeof *share);
    memset(share, 0, b->nctx * sizeof *share);
    ex_shares x = { b, share };
    gpuws__run_ranges(b->bands, b->nctx, share_run, &x);
    gpuws_status st = GPUWS_OK;
    for (unsigned d = 0; d < b->nctx && !st; d++)
        if (share[d].st) st = gpuws__error(share[d].st, "%s", share[d].why);
    *k = share[0].kept, share[0].kept = (ex_kept){ 0 };
    const double t0 = now_ms();
    for (unsigned d = 1; d < b->nctx && !st; d++)
        if (!kept_append(k, &share[d].kept))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu pixel records (%zu bytes)",
                              k->n + share[d].kept.n, (k->n + share[d].kept.n) * 6 * sizeof(uint32_t));
    const double t1 = now_ms();
    for (unsigned d = 0; d < b->nctx; d++) {
        const ex_share *e = &share[d];
        if (!st)
            gpuws__log(GPUWS__LOG_DEBUG,
                       "extract_host: device %u: %zu band%s in %.1f ms (uploads and maps %.1f, device steps %.1f, "
                       "records kept %.1f), %zu records",
                       d, e->bands, e->bands == 1 ? "" : "s", e->wall, e->ms[0], e->ms[1], e->ms[2], e->records);
        for (int i = 0; i < 3; i++) ms[i] += e->ms[i];
        kept_free(&share[d].kept);
    }
    if (!st) gpuws__log(GPUWS__LOG_DEBUG, "extract_host: the devices' records appended in %.1f ms", t1 - t0);
    gpuws__free(share);
    const gpuws_extract_host_options *ho = b->ho;
    for (size_t band = b->bands / b->nctx; band < b->bands && !st && ho->progress; band++) /* device 0's: reported */
        ho->progress(ho->progress_user, b->passes, b->passes, band, b->bands, band_end(b, band), b->p->h);
    return st;
}

/* One band: gpuws_extract on device copies of the caller's arrays (with bo, after gpuws_background on the device),
 * the segmentation map and the background's maps read back. */
static gpuws_status extract_in_core(gpuws_context *ctx, size_t w, size_t h, const float *image,
                                    const gpuws_extract_options *eo, const gpuws_extract_host_options *ho,
                                    const gpuws_background_options *bo, gpuws_extract_catalog **catalog)
{
    const size_t n = w * h;
    gpuws_stream *s;
    gpuws_status st = gpuws_stream_create(ctx, &s);
    if (st) return st;
    gpuws_buffer *b[5] = { NULL, NULL, NULL, NULL, NULL }; /* image, back, rms, mask, segmap */
    const void *from[4] = { image, ho->back, ho->rms, ho->mask };
    const bool made[5] = { false, bo != NULL, bo != NULL, false, false }; /* made on the device */
    const size_t bytes[5] = { n * sizeof(float), n * sizeof(float), n * sizeof(float), n, n * sizeof(int32_t) };
    for (int i = 0; i < 5 && !st; i++) {
        if ((i < 4 && !from[i] && !made[i]) || (i == 4 && !ho->segmap)) continue;
        if (!(st = gpuws_buffer_create(ctx, bytes[i], &b[i])) && i < 4 && !made[i])
            st = gpuws_buffer_write_async(s, b[i], 0, from[i], bytes[i]);
    }
    gpuws_background_result r;
    if (!st && bo) {
        gpuws_background_options o = *bo;
        o.mask = b[3];
        if (!(st = gpuws_background(s, GPUWS_F32, w, h, b[0], &o, b[1], b[2], &r)) && ho->progress)
            ho->progress(ho->progress_user, 1, 2, 0, 1, h, h);
    }
    gpuws_extract_options o = *eo;
    o.back = b[1], o.rms = b[2], o.mask = b[3], o.segmap = b[4];
    gpuws_extract_catalog *cat = NULL;
    if (!st) st = gpuws_extract(s, w, h, b[0], &o, &cat);
    if (!st && ho->segmap) st = gpuws__buffer_read_sync(s, b[4], 0, ho->segmap, bytes[4]);
    if (!st && bo && ho->back_out) st = gpuws__buffer_read_sync(s, b[1], 0, ho->back_out, bytes[1]);
    if (!st && bo && ho->rms_out) st = gpuws__buffer_read_sync(s, b[2], 0, ho->rms_out, bytes[2]);
    const gpuws_status sync = gpuws_stream_synchronize(s);
    if (!st) st = sync;
    for (int i = 0; i < 5; i++) gpuws_buffer_destroy(b[i]);
    gpuws_stream_destroy(s);
    if (st) {
        gpuws_extract_catalog_free(cat);
        return st;
    }
    if (bo && ho->background_result) *ho->background_result = r;
    if (ho->progress) ho->progress(ho->progress_user, bo ? 2 : 1, bo ? 2 : 1, 0, 1, h, h);
    *catalog = cat;
    return GPUWS_OK;
}

/* The catalogue of the records kept from bands of `rows` rows: their components, the host steps, the segmentation
 * map. */
static gpuws_status extract_records(const gpuws__extract_params *p, ex_kept *k, size_t rows, int32_t *segmap,
                                    gpuws_extract_catalog **catalog, double ms[3])
{
    gpuws__extract_pixels px;
    memset(&px, 0, sizeof px);
    px.n = k->n, px.idx = k->idx, px.value = k->value, px.cd = k->cd, px.sig = k->sig, px.sig_lr = k->sig_lr;
    int32_t *obj_of = segmap ? gpuws__malloc((k->n ? k->n : 1) * sizeof *obj_of) : NULL;
    size_t nl;
    const double t0 = now_ms();
    if ((segmap && !obj_of) || !components_join(k, p->w, p->h, rows, p->connectivity, &nl)) {
        gpuws__free(obj_of);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "extract_host: no host memory for the components of %zu records (%zu bytes)", k->n,
                            (k->labels + 1 + (segmap ? k->n : 0)) * sizeof(uint32_t));
    }
    px.label = k->label;
    const double t1 = now_ms();
    gpuws_status st = gpuws__extract_objects(p, &px, catalog, obj_of);
    const double t2 = now_ms();
    if (!st && segmap) {
        gpuws__copy_bytes(segmap, NULL, 0, p->w * p->h * sizeof *segmap); /* fresh pages fault in on threads */
        for (size_t r = 0; r < k->n; r++) segmap[k->idx[r] & ~EX_BLANK_BIT] = obj_of[r];
    }
    ms[0] = t1 - t0, ms[1] = t2 - t1, ms[2] = now_ms() - t2;
    gpuws__free(obj_of);
    return st;
}

/* The bands on the n devices ctxs: as many rows as the budget holds on each with their halo (*rows own rows a band,
 * *bands of them), or the whole image in one band; *in_core when that band is the in-core call's on ctxs[0] (which
 * holds more a pixel than a band does). Bands on several devices are at least one a device. */
static gpuws_status plan_bands(gpuws_context *const *ctxs, unsigned n, size_t width, size_t height,
                               const gpuws_extract_host_options *ho, const gpuws_extract_options *eo,
                               uint64_t plan_bytes, size_t *rows, size_t *bands, size_t *halo, bool *in_core)
{
    const int kh = eo->filter_type == GPUWS_FILTER_NONE ? 0 : eo->filter ? eo->filter_h : 3;
    const bool bg = ho->background != NULL;
    *halo = kh / 2 > 1 ? (size_t)(kh / 2) : 1;
    const uint64_t per_px =
        EX_HOST_BYTES + (ho->back || bg ? 4u : 0u) + (ho->rms || bg ? 4u : 0u) + (ho->mask ? 1u : 0u);
    uint64_t budget, max_alloc;
    gpuws__band_budget(ctxs, n, ho->max_device_bytes, &budget, &max_alloc);
    uint64_t rows_in = budget > plan_bytes ? (budget - plan_bytes) / (per_px * width) : 0; /* the plan beside them */
    if (max_alloc && rows_in > max_alloc / (6 * sizeof(float) * width)) /* the records are the largest buffer */
        rows_in = max_alloc / (6 * sizeof(float) * width);
    /* in-core when the whole image fits what gpuws_extract holds on the device, not only what a band does */
    const bool one = rows_in >= height && (budget - plan_bytes) / ((per_px + EX_IN_CORE_BYTES) * width) >= height;
    if (rows_in < height && rows_in < 1 + 2 * (uint64_t)*halo)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: max_device_bytes %llu is less than one band needs: %llu bytes (a row and "
                            "%zu rows of halo either side, %llu bytes a pixel%s)",
                            (unsigned long long)budget,
                            (unsigned long long)(per_px * width * (1 + 2 * (uint64_t)*halo) + plan_bytes), *halo,
                            (unsigned long long)per_px, bg ? ", beside the background's plan" : "");
    *in_core = one;
    *rows = rows_in >= height ? height : (size_t)rows_in - 2 * *halo; /* a band of the whole image needs no halo */
    if (!one && n > 1 && *rows > (height + n - 1) / n) *rows = (height + n - 1) / n; /* every device works */
    *bands = (height + *rows - 1) / *rows;
    return GPUWS_OK;
}

/* The call's options read and checked (fn names the call in messages): *ho, *eo and, with ho->background, *bo;
 * *plan_bytes the background's plan's (0 without), *npix the pixels, ctxs[0 .. *nctx) the devices. */
static gpuws_status read_options(gpuws_context *ctx, size_t width, size_t height,
                                 const gpuws_extract_host_options *options, const char *fn,
                                 gpuws_extract_host_options *ho, gpuws_extract_options *eo,
                                 gpuws_background_options *bo, uint64_t *plan_bytes, size_t *npix, gpuws_context **ctxs,
                                 unsigned *nctx)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    char what[96];
    *ho = (gpuws_extract_host_options)GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    *eo = (gpuws_extract_options)GPUWS_EXTRACT_OPTIONS_INIT;
    *bo = (gpuws_background_options)GPUWS_BACKGROUND_OPTIONS_INIT;
    snprintf(what, sizeof what, "%s: options", fn);
    if ((st = gpuws__options_read(options, ho, sizeof *ho, GPUWS__EXTRACT_HOST_OPTIONS_BASE, what))) return st;
    snprintf(what, sizeof what, "%s: options->extract", fn);
    if (ho->extract && (st = gpuws__options_read(ho->extract, eo, sizeof *eo, GPUWS__EXTRACT_OPTIONS_BASE, what)))
        return st;
    snprintf(what, sizeof what, "%s: options->background", fn);
    if (ho->background &&
        (st = gpuws__options_read(ho->background, bo, sizeof *bo, GPUWS__BACKGROUND_OPTIONS_BASE, what)))
        return st;
    if (eo->back || eo->rms || eo->mask || eo->segmap)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->extract->%s is a device buffer; give the host array in options", fn,
                            eo->back   ? "back"
                            : eo->rms  ? "rms"
                            : eo->mask ? "mask"
                                       : "segmap");
    if (ho->background && bo->mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->background->mask is a device buffer; options->mask serves both", fn);
    if (ho->background && (ho->back || ho->rms))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->%s is given with options->background, which makes the background", fn,
                            ho->back ? "back" : "rms");
    if ((st = gpuws__band_contexts(ctx, ho->more_contexts, ho->num_more_contexts, fn, ctxs, nctx))) return st;
    if ((st = gpuws__extract_check(eo, width, height, ho->rms || ho->background, fn, npix))) return st;
    *plan_bytes = 0;
    gpuws__background_plan bp;
    if (ho->background && bo->bw >= 1 && bo->bh >= 1 && gpuws__background_layout(width, height, bo->bw, bo->bh, &bp))
        *plan_bytes = (uint64_t)bp.words * 4;
    return GPUWS_OK;
}

gpuws_status gpuws_extract_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                      const gpuws_extract_host_options *options, size_t *band_rows, size_t *bands)
{
    gpuws_extract_host_options ho;
    gpuws_extract_options eo;
    gpuws_background_options bo;
    uint64_t plan_bytes = 0;
    size_t npix, halo;
    bool in_core;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned nctx;
    gpuws_status st =
        read_options(ctx, width, height, options, "extract_host_bands", &ho, &eo, &bo, &plan_bytes, &npix, ctxs, &nctx);
    if (st) return st;
    if (!band_rows || !bands)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host_bands: argument '%s' is NULL",
                            !band_rows ? "band_rows" : "bands");
    return plan_bands(ctxs, nctx, width, height, &ho, &eo, plan_bytes, band_rows, bands, &halo, &in_core);
}

/* Whether an output of `bytes` bytes at out overlaps an input or another output. */
static bool output_overlaps(const void *out, size_t bytes, const float *image, const gpuws_extract_host_options *ho,
                            size_t npix)
{
    const size_t fb = npix * sizeof(float), sb = npix * sizeof(int32_t);
    const void *other[6] = { image, ho->back, ho->rms, ho->segmap, ho->back_out, ho->rms_out };
    const size_t size[6] = { fb, fb, fb, sb, fb, fb };
    for (int i = 0; i < 6; i++)
        if (other[i] && other[i] != out && gpuws__overlaps(out, bytes, other[i], size[i])) return true;
    return ho->mask && gpuws__overlaps(out, bytes, ho->mask, npix);
}

/* The background made on the CPU backend, whose device memory is the host's: gpuws_background_host's maps, into
 * back_out and rms_out where given, else into memory of the call's own (*tb, *tr, to free); *r its globals. */
static gpuws_status background_on_cpu(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                      gpuws_extract_host_options *ho, const gpuws_background_options *bo, float **tb,
                                      float **tr, gpuws_background_result *r)
{
    const size_t bytes = width * height * sizeof(float);
    *tb = ho->back_out ? NULL : gpuws__malloc(bytes);
    *tr = ho->rms_out ? NULL : gpuws__malloc(bytes);
    if ((!ho->back_out && !*tb) || (!ho->rms_out && !*tr))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "extract_host: no host memory for the background's maps (%zu bytes)", 2 * bytes);
    gpuws_background_host_options o = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    o.background = bo, o.mask = ho->mask;
    float *back = ho->back_out ? ho->back_out : *tb, *rms = ho->rms_out ? ho->rms_out : *tr;
    const gpuws_status st = gpuws_background_host(ctx, width, height, image, &o, back, rms, r);
    if (st) return st;
    if (ho->progress) ho->progress(ho->progress_user, 1, 2, 0, 1, height, height);
    ho->back = back, ho->rms = rms;
    return GPUWS_OK;
}

gpuws_status gpuws_extract_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                const gpuws_extract_host_options *options, gpuws_extract_catalog **catalog)
{
    if (catalog) *catalog = NULL;
    gpuws_extract_host_options ho;
    gpuws_extract_options eo;
    gpuws_background_options bo;
    uint64_t plan_bytes = 0;
    size_t npix;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned nctx;
    gpuws_status st =
        read_options(ctx, width, height, options, "extract_host", &ho, &eo, &bo, &plan_bytes, &npix, ctxs, &nctx);
    if (st) return st;
    if (!image || !catalog)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host: argument '%s' is NULL",
                            !image ? "image" : "catalog");
    const size_t fb = npix * sizeof(float), sb = npix * sizeof(int32_t);
    if ((ho.segmap && output_overlaps(ho.segmap, sb, image, &ho, npix)) ||
        (ho.back_out && output_overlaps(ho.back_out, fb, image, &ho, npix)) ||
        (ho.rms_out && output_overlaps(ho.rms_out, fb, image, &ho, npix)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: '%s' overlaps the image, back, rms, mask or another output (they are read "
                            "while it is written)",
                            ho.segmap && output_overlaps(ho.segmap, sb, image, &ho, npix)       ? "segmap"
                            : ho.back_out && output_overlaps(ho.back_out, fb, image, &ho, npix) ? "back_out"
                                                                                                : "rms_out");
    if (npix > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract_host: %zu x %zu pixels; at most 2^31 - 1 are supported",
                            width, height);
    const bool on_cpu = ctx->backend->kind == GPUWS_BACKEND_CPU;
    for (unsigned d = 0; d < nctx && !on_cpu; d++)
        if (!ctxs[d]->info.fp64)
            return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks",
                                ctxs[d]->info.name);
    const gpuws_background_options *bg = ho.background ? &bo : NULL;
    size_t rows, bands, halo;
    bool in_core;
    if ((st = plan_bands(ctxs, nctx, width, height, &ho, &eo, plan_bytes, &rows, &bands, &halo, &in_core))) return st;
    if (in_core && !on_cpu) return extract_in_core(ctx, width, height, image, &eo, &ho, bg, catalog);

    gpuws__extract_params p;
    if ((st = gpuws__extract_resolve(&eo, width, height, ho.rms || bg, "extract_host", &p))) return st;
    p.threads = gpuws__threads_from_knob(ctx->tuning.extract_threads);
    ex_bands b = { ctxs, nctx, &p, &ho, image, halo, rows, bands, NULL, NULL, bg ? 2 : 1 };
    float *tb = NULL, *tr = NULL;
    void *plan = NULL;
    gpuws__background_plan bp;
    gpuws_background_result r;
    const double t0 = now_ms();
    if (bg && on_cpu) {
        st = background_on_cpu(ctx, width, height, image, &ho, &bo, &tb, &tr, &r);
    } else if (bg && !(st = gpuws__background_host_plan(ctx, width, height, image, ho.mask, &bo, ho.max_device_bytes,
                                                        ho.progress, ho.progress_user, "extract_host: background",
                                                        &plan, &bp, &r))) {
        b.plan = plan, b.bp = &bp;
        /* the bands' maps are read into them a band at a time, by the driver on one thread: their fresh pages are
         * mapped first, on threads */
        if (ho.back_out) gpuws__prefault(ho.back_out, fb);
        if (ho.rms_out) gpuws__prefault(ho.rms_out, fb);
    }
    const double tb0 = now_ms();
    ex_kept k;
    memset(&k, 0, sizeof k);
    double band_ms[3] = { 0, 0, 0 };
    if (!st) st = records_on_devices(&b, &k, band_ms);
    const double t1 = now_ms();
    gpuws_extract_catalog *cat = NULL;
    double ms[3] = { 0, 0, 0 }; /* the components, the host steps, the segmentation map */
    if (!st) st = extract_records(&p, &k, b.rows, ho.segmap, &cat, ms);
    const size_t records = k.n;
    kept_free(&k);
    gpuws__extract_params_free(&p);
    gpuws__free(plan);
    gpuws__free(tb);
    gpuws__free(tr);
    if (st) return st;
    if (bg && ho.background_result) *ho.background_result = r;
    cat->ms_device = t1 - t0;
    cat->ms_host = now_ms() - t1;
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract_host: background's pass %.1f ms, %zu band%s of %zu rows (halo %zu) on %u device%s %.1f ms "
               "(summed over the devices: uploads and maps %.1f, device steps %.1f, records kept %.1f); %zu records' "
               "components %.1f ms, host steps %.1f, segmentation map %.1f",
               tb0 - t0, b.bands, b.bands == 1 ? "" : "s", b.rows, b.halo, nctx, nctx == 1 ? "" : "s", t1 - tb0,
               band_ms[0], band_ms[1], band_ms[2], records, ms[0], ms[1], ms[2]);
    *catalog = cat;
    return GPUWS_OK;
}
