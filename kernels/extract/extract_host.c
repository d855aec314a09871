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
#include "extract_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract_pixel.h" /* after <math.h>: it includes nothing */

/* Device bytes a pixel of a band: the image, the prepared maps (d, σ, filtered), det, labels, and records of six
 * words where every pixel is detected; the maps given take 4 bytes each and the mask 1 more. */
#define EX_HOST_BYTES 45u

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

static bool kept_grow(ex_kept *k, size_t more)
{
    if (k->n + more <= k->cap) return true;
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < k->n + more) cap *= 2;
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
 * labels by the labels of the bands before. */
static bool kept_add(ex_kept *k, const gpuws__extract_pixels *b, size_t offset)
{
    if (!kept_grow(k, b->n)) return false;
    int32_t most = 0;
    for (size_t r = 0; r < b->n; r++) {
        const size_t j = k->n + r;
        k->idx[j] = (uint32_t)((b->idx[r] & ~EX_BLANK_BIT) + offset) | (b->idx[r] & EX_BLANK_BIT);
        k->label[j] = b->label[r] + (int32_t)k->labels;
        most = b->label[r] > most ? b->label[r] : most;
    }
    memcpy(k->value + k->n, b->value, b->n * sizeof(float));
    memcpy(k->cd + k->n, b->cd, b->n * sizeof(float));
    memcpy(k->sig + k->n, b->sig, b->n * sizeof(float));
    memcpy(k->sig_lr + k->n, b->sig_lr, b->n * sizeof(float));
    k->n += b->n;
    k->labels += (size_t)most; /* a band's labels are 1 .. most, each of some record */
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

/* The components of the whole image from the bands' (each band's labels are gpuws_label's on its own rows: numbered
 * in raster order of their first pixels): the labels that touch across each border between bands (row y - 1 of
 * one band, row y of the next; within a column with connectivity 8, the same column with 4) are joined under the
 * smaller one, which is the earlier first pixel; then the roots, in order, are numbered 1, 2, ... and every record
 * takes its root's number: gpuws_label's numbering of the whole image. *nl the components. */
static bool components_join(ex_kept *k, size_t w, const size_t *borders, size_t nborders, int connectivity, size_t *nl)
{
    uint32_t *parent = gpuws__malloc((k->labels + 1) * sizeof *parent);
    if (!parent) return false;
    for (size_t l = 0; l <= k->labels; l++) parent[l] = (uint32_t)l;
    const size_t d = connectivity == 8;
    for (size_t b = 0; b < nborders; b++) {
        const size_t y = borders[b], up0 = record_at(k, (y - 1) * w), up1 = record_at(k, y * w);
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
    gpuws_context *ctx;
    const gpuws__extract_params *p;
    const gpuws_extract_host_options *ho;
    const float *image;
    size_t halo, rows, bands; /* rows: a band's own rows (the last may have fewer) */
} ex_bands;

/* The records of every band's own rows into k: on the CPU backend by the reference on the caller's arrays, else
 * through the device, a band at a time on a stream of the call's own (which holds the device steps' memory). */
static gpuws_status records_in_bands(const ex_bands *b, ex_kept *k)
{
    const size_t w = b->p->w, h = b->p->h, rows_in = b->rows + 2 * b->halo;
    const gpuws_extract_host_options *ho = b->ho;
    const bool on_cpu = b->ctx->backend->kind == GPUWS_BACKEND_CPU;
    gpuws_stream *s = NULL;
    gpuws_buffer *dimg = NULL, *dback = NULL, *drms = NULL, *dmask = NULL;
    gpuws_status st = GPUWS_OK;
    if (!on_cpu && (!(st = gpuws_stream_create(b->ctx, &s)))) {
        const size_t bytes = rows_in * w * sizeof(float);
        if (!(st = gpuws_buffer_create(b->ctx, bytes, &dimg)) && ho->back)
            st = gpuws_buffer_create(b->ctx, bytes, &dback);
        if (!st && ho->rms) st = gpuws_buffer_create(b->ctx, bytes, &drms);
        if (!st && ho->mask) st = gpuws_buffer_create(b->ctx, rows_in * w, &dmask);
    }
    for (size_t band = 0; band < b->bands && !st; band++) {
        const size_t y0 = band * b->rows, y1 = y0 + b->rows < h ? y0 + b->rows : h;
        const size_t a0 = y0 > b->halo ? y0 - b->halo : 0, a1 = y1 + b->halo < h ? y1 + b->halo : h;
        const size_t at = a0 * w, n = (a1 - a0) * w;
        gpuws__extract_params pb = *b->p;
        pb.h = a1 - a0, pb.row0 = a0, pb.own0 = y0 - a0, pb.own1 = y1 - a0;
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
            if (!(st = gpuws_buffer_write_async(s, dimg, 0, b->image + at, n * sizeof(float))) &&
                !(ho->back && (st = gpuws_buffer_write_async(s, dback, 0, ho->back + at, n * sizeof(float)))) &&
                !(ho->rms && (st = gpuws_buffer_write_async(s, drms, 0, ho->rms + at, n * sizeof(float)))) &&
                !(ho->mask && (st = gpuws_buffer_write_async(s, dmask, 0, ho->mask + at, n))))
                st = gpuws__extract_band_records(s, &pb, dimg, &ob, &px);
        }
        if (!st && !kept_add(k, &px, at))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu pixel records (%zu bytes)",
                              k->n + px.n, (k->n + px.n) * 6 * sizeof(uint32_t));
        if (on_cpu) gpuws__extract_pixels_free(&px);
        else if (px.idx) gpuws__extract_band_release(b->ctx, &px);
        if (!st && ho->progress) ho->progress(ho->progress_user, 1, 1, band, b->bands, y1, h);
    }
    if (s) {
        gpuws_stream_synchronize(s); /* no upload reads the caller's memory after an error */
        gpuws_stream_destroy(s);
    }
    gpuws_buffer_destroy(dimg);
    gpuws_buffer_destroy(dback);
    gpuws_buffer_destroy(drms);
    gpuws_buffer_destroy(dmask);
    return st;
}

/* One band: gpuws_extract on device copies of the caller's arrays, the segmentation map read back. */
static gpuws_status extract_in_core(gpuws_context *ctx, size_t w, size_t h, const float *image,
                                    const gpuws_extract_options *eo, const gpuws_extract_host_options *ho,
                                    gpuws_extract_catalog **catalog)
{
    const size_t n = w * h;
    gpuws_stream *s;
    gpuws_status st = gpuws_stream_create(ctx, &s);
    if (st) return st;
    gpuws_buffer *b[5] = { NULL, NULL, NULL, NULL, NULL }; /* image, back, rms, mask, segmap */
    const void *from[4] = { image, ho->back, ho->rms, ho->mask };
    const size_t bytes[5] = { n * sizeof(float), n * sizeof(float), n * sizeof(float), n, n * sizeof(int32_t) };
    for (int i = 0; i < 5 && !st; i++) {
        if ((i < 4 && !from[i]) || (i == 4 && !ho->segmap)) continue;
        if (!(st = gpuws_buffer_create(ctx, bytes[i], &b[i])) && i < 4)
            st = gpuws_buffer_write_async(s, b[i], 0, from[i], bytes[i]);
    }
    gpuws_extract_options o = *eo;
    o.back = b[1], o.rms = b[2], o.mask = b[3], o.segmap = b[4];
    gpuws_extract_catalog *cat = NULL;
    if (!st) st = gpuws_extract(s, w, h, b[0], &o, &cat);
    if (!st && ho->segmap) st = gpuws__buffer_read_sync(s, b[4], 0, ho->segmap, bytes[4]);
    const gpuws_status sync = gpuws_stream_synchronize(s);
    if (!st) st = sync;
    for (int i = 0; i < 5; i++) gpuws_buffer_destroy(b[i]);
    gpuws_stream_destroy(s);
    if (st) {
        gpuws_extract_catalog_free(cat);
        return st;
    }
    if (ho->progress) ho->progress(ho->progress_user, 1, 1, 0, 1, h, h);
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
    const size_t nborders = (p->h - 1) / rows; /* between bands, at rows, 2 rows, ... */
    size_t *borders = gpuws__malloc((nborders ? nborders : 1) * sizeof *borders);
    int32_t *obj_of = segmap ? gpuws__malloc((k->n ? k->n : 1) * sizeof *obj_of) : NULL;
    for (size_t b = 0; borders && b < nborders; b++) borders[b] = (b + 1) * rows;
    size_t nl;
    const double t0 = now_ms();
    if (!borders || (segmap && !obj_of) || !components_join(k, p->w, borders, nborders, p->connectivity, &nl)) {
        gpuws__free(borders);
        gpuws__free(obj_of);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "extract_host: no host memory for the components of %zu records (%zu bytes)", k->n,
                            (k->labels + 1 + (segmap ? k->n : 0)) * sizeof(uint32_t) + nborders * sizeof(size_t));
    }
    gpuws__free(borders);
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

/* The bands: as many rows as the budget holds with their halo (*rows own rows a band, *bands of them), or the whole
 * image in one band. */
static gpuws_status plan_bands(gpuws_context *ctx, size_t width, size_t height, const gpuws_extract_host_options *ho,
                               const gpuws_extract_options *eo, size_t *rows, size_t *bands, size_t *halo)
{
    const int kh = eo->filter_type == GPUWS_FILTER_NONE ? 0 : eo->filter ? eo->filter_h : 3;
    *halo = kh / 2 > 1 ? (size_t)(kh / 2) : 1;
    const uint64_t per_px = EX_HOST_BYTES + (ho->back ? 4u : 0u) + (ho->rms ? 4u : 0u) + (ho->mask ? 1u : 0u);
    uint64_t budget, max_alloc;
    gpuws__band_budget(&ctx, 1, ho->max_device_bytes, &budget, &max_alloc);
    uint64_t rows_in = budget / (per_px * width);
    if (max_alloc && rows_in > max_alloc / (6 * sizeof(float) * width)) /* the records are the largest buffer */
        rows_in = max_alloc / (6 * sizeof(float) * width);
    const bool one = rows_in >= height;
    if (!one && rows_in < 1 + 2 * (uint64_t)*halo)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: max_device_bytes %llu is less than one band needs: %llu bytes (a row and "
                            "%zu rows of halo either side, %llu bytes a pixel)",
                            (unsigned long long)budget,
                            (unsigned long long)(per_px * width * (1 + 2 * (uint64_t)*halo)), *halo,
                            (unsigned long long)per_px);
    *rows = one ? height : (size_t)rows_in - 2 * *halo;
    *bands = (height + *rows - 1) / *rows;
    return GPUWS_OK;
}

gpuws_status gpuws_extract_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                      const gpuws_extract_host_options *options, size_t *band_rows, size_t *bands)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &ho, sizeof ho, GPUWS__EXTRACT_HOST_OPTIONS_BASE,
                                  "extract_host_bands: options")) ||
        (ho.extract && (st = gpuws__options_read(ho.extract, &eo, sizeof eo, GPUWS__EXTRACT_OPTIONS_BASE,
                                                 "extract_host_bands: options->extract"))))
        return st;
    if (!band_rows || !bands)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host_bands: argument '%s' is NULL",
                            !band_rows ? "band_rows" : "bands");
    size_t npix, halo;
    if ((st = gpuws__extract_check(&eo, width, height, ho.rms != NULL, "extract_host_bands", &npix))) return st;
    return plan_bands(ctx, width, height, &ho, &eo, band_rows, bands, &halo);
}

gpuws_status gpuws_extract_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                const gpuws_extract_host_options *options, gpuws_extract_catalog **catalog)
{
    if (catalog) *catalog = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    if ((st =
             gpuws__options_read(options, &ho, sizeof ho, GPUWS__EXTRACT_HOST_OPTIONS_BASE, "extract_host: options")) ||
        (ho.extract && (st = gpuws__options_read(ho.extract, &eo, sizeof eo, GPUWS__EXTRACT_OPTIONS_BASE,
                                                 "extract_host: options->extract"))))
        return st;
    if (!image || !catalog)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host: argument '%s' is NULL",
                            !image ? "image" : "catalog");
    if (eo.back || eo.rms || eo.mask || eo.segmap)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: options->extract->%s is a device buffer; give the host array in options",
                            eo.back   ? "back"
                            : eo.rms  ? "rms"
                            : eo.mask ? "mask"
                                      : "segmap");
    size_t npix;
    if ((st = gpuws__extract_check(&eo, width, height, ho.rms != NULL, "extract_host", &npix))) return st;
    const size_t fb = npix * sizeof(float), sb = npix * sizeof(int32_t);
    if (ho.segmap &&
        (gpuws__overlaps(ho.segmap, sb, image, fb) || (ho.back && gpuws__overlaps(ho.segmap, sb, ho.back, fb)) ||
         (ho.rms && gpuws__overlaps(ho.segmap, sb, ho.rms, fb)) ||
         (ho.mask && gpuws__overlaps(ho.segmap, sb, ho.mask, npix))))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: 'segmap' overlaps the image, back, rms or mask (they are read while it is "
                            "written)");
    if (npix > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract_host: %zu x %zu pixels; at most 2^31 - 1 are supported",
                            width, height);
    if (ctx->backend->kind != GPUWS_BACKEND_CPU && !ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks",
                            ctx->info.name);

    /* The options as the pixels see them: resolve reads only whether a σ map is given, which a stand-in says. */
    static const char stand_in;
    gpuws_extract_options ro = eo;
    ro.rms = ho.rms ? (const gpuws_buffer *)(const void *)&stand_in : NULL;
    gpuws__extract_params p;
    float fsum;
    if ((st = gpuws__extract_resolve(&ro, width, height, &p, &fsum))) {
        if (st == GPUWS_ERR_INVALID_ARGUMENT)
            return gpuws__error(st, "extract_host: the filter's absolute values sum to %g: not a finite number > 0",
                                (double)fsum);
        return gpuws__error(st, "extract_host: no host memory for the filter (%zu bytes)",
                            (size_t)eo.filter_w * (size_t)eo.filter_h * sizeof(float) + 9 * sizeof(float));
    }
    p.threads = gpuws__threads_from_knob(ctx->tuning.extract_threads);

    ex_bands b = { ctx, &p, &ho, image, 0, 0, 0 };
    if ((st = plan_bands(ctx, width, height, &ho, &eo, &b.rows, &b.bands, &b.halo))) {
        gpuws__extract_params_free(&p);
        return st;
    }
    if (b.bands == 1 && ctx->backend->kind != GPUWS_BACKEND_CPU) {
        gpuws__extract_params_free(&p);
        return extract_in_core(ctx, width, height, image, &eo, &ho, catalog);
    }
    ex_kept k;
    memset(&k, 0, sizeof k);
    const double t0 = now_ms();
    st = records_in_bands(&b, &k);
    const double t1 = now_ms();
    gpuws_extract_catalog *cat = NULL;
    double ms[3] = { 0, 0, 0 }; /* the components, the host steps, the segmentation map */
    if (!st) st = extract_records(&p, &k, b.rows, ho.segmap, &cat, ms);
    const size_t records = k.n;
    kept_free(&k);
    gpuws__extract_params_free(&p);
    if (st) return st;
    cat->ms_device = t1 - t0;
    cat->ms_host = now_ms() - t1;
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract_host: %zu band%s of %zu rows (halo %zu), %.1f ms; %zu records' components %.1f ms, host steps "
               "%.1f, segmentation map %.1f",
               b.bands, b.bands == 1 ? "" : "s", b.rows, b.halo, cat->ms_device, records, ms[0], ms[1], ms[2]);
    *catalog = cat;
    return GPUWS_OK;
}
