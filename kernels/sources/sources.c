/* The source-finding pipeline (gpuws_find_sources) and the synthetic sky generator behind `gpuws sources --demo`.
 *
 * The pipeline is one host driver over the four public steps, on one stream of one device:
 *   upload image (f32) → gpuws_sigma_clip → gpuws_threshold (uint8 mask) → gpuws_label (int32) → gpuws_measure
 *   → download the measurements (and the label image when asked)
 * sigma_clip and label return host values (the statistics, N) and so wait for the device; nothing else does until
 * the final download. Device events between the steps give the catalogue's ms_* times. */
#include "sources_internal.h"

#include "../../core/threads.h"
#include "../common/band_stream.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(gpuws_sky_source) == 3 * sizeof(float), "sky sources are uploaded as float triples");

enum { EV_START, EV_UPLOAD, EV_CLIP, EV_THRESHOLD, EV_LABEL, EV_MEASURE, EV_END, NEV };

gpuws_status gpuws__sources_read_options(const char *name, const gpuws_sources_options *in, sources_options *r)
{
    r->o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    r->clip = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    char what[64];
    snprintf(what, sizeof what, "%s: options", name);
    gpuws_status st = gpuws__options_read(in, &r->o, sizeof r->o, GPUWS__SOURCES_OPTIONS_BASE, what);
    snprintf(what, sizeof what, "%s: options.clip", name);
    if (!st) st = gpuws__options_read(r->o.clip, &r->clip, sizeof r->clip, GPUWS__SIGMA_CLIP_OPTIONS_BASE, what);
    r->o.clip = &r->clip;
    const gpuws_sources_options *o = &r->o;
    if (st) return st;
    if (!(o->clip->kappa > 0) || !isfinite(o->clip->kappa))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: clip.kappa = %g; it must be finite and > 0", name,
                            o->clip->kappa);
    if (o->clip->max_iterations < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: clip.max_iterations = %d; it must be >= 1", name,
                            o->clip->max_iterations);
    if (o->connectivity != 4 && o->connectivity != 8)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: connectivity %d is not 4 or 8", name, o->connectivity);
    if (isinf(o->threshold_abs))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: threshold_abs is infinite (NaN selects threshold_sigma)",
                            name);
    if (isnan(o->threshold_abs) && (!(o->threshold_sigma > 0) || !isfinite(o->threshold_sigma)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: threshold_sigma = %g; it must be finite and > 0", name,
                            o->threshold_sigma);
    return GPUWS_OK;
}

/* width * height pixels of `per_pixel` bytes within size_t (the device steps take any number: label in slabs past
 * 2^31 - 1 pixels, sigma_clip's 64-bit counts, measure's wide path past 2^32). */
static gpuws_status check_size(const char *name, size_t width, size_t height, size_t per_pixel, size_t *n)
{
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x %zu: no pixels", name, width, height);
    if (gpuws__mul_overflows(width, height, n) || *n > SIZE_MAX / per_pixel)
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", name, width, height);
    return GPUWS_OK;
}

/* What gpuws_find_sources and gpuws_find_sources_host check, in this order, before any work: the catalogue pointer
 * (then set NULL), the context, the image, its size (in_core: 4 bytes a pixel, the image; else 8 bytes a pixel, of
 * the image, mask and labels, within size_t), the options (into *so). */
static gpuws_status check_call(const char *name, gpuws_context *ctx, const float *image, size_t width, size_t height,
                               bool in_core, const gpuws_sources_options *options, sources_options *so,
                               gpuws_catalog **catalog, size_t *n)
{
    if (!catalog) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument 'catalog' is NULL", name);
    *catalog = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!image) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument 'image' is NULL", name);
    if ((st = check_size(name, width, height, in_core ? sizeof(float) : 8, n))) return st;
    return gpuws__sources_read_options(name, options, so);
}

void gpuws_catalog_free(gpuws_catalog *c)
{
    if (!c) return;
    gpuws__free(c->sources);
    gpuws__free(c->labels);
    gpuws__free(c);
}

/* The image (when uploaded here), the mask and the labels are the stream's scratch under keys of their own (so the
 * steps' drivers, on the same stream, cannot touch them): kept for the next call, so a program that finds sources
 * in image after image allocates them once, as CuPy's memory pool would. Fresh buffers for every call would cost
 * cudaMalloc/cudaFree time on CUDA, and on NVIDIA's OpenCL, which maps a new buffer's pages when a kernel first
 * touches them, tens of microseconds inside the threshold and label steps. */
static const gpuws__stream_key key_image = { "find_sources.image" };
static const gpuws__stream_key key_mask = { "find_sources.mask" };
static const gpuws__stream_key key_labels = { "find_sources.labels" };

typedef struct {
    gpuws_event *ev[NEV];
    gpuws_buffer *image, *mask, *labels; /* the stream's scratch, not owned; image only when uploaded here */
    gpuws_buffer *out;                   /* only when the measurements do not fit the mask */
    gpuws_source_measure *meas;
} run_state;

static void release(run_state *r)
{
    for (int i = 0; i < NEV; i++) gpuws_event_destroy(r->ev[i]);
    gpuws_buffer_destroy(r->out);
    gpuws__free(r->meas);
}

static gpuws_status record(run_state *r, int which, gpuws_stream *s) { return gpuws_event_record(r->ev[which], s); }

/* The error for a clipping that kept no pixel, which leaves threshold_sigma x std without a value. It says which of
 * the three ways it happened: +-inf among the pixels (every std is NaN), a constant image (std 0, one pixel
 * included), or neither: then kappa is too small for the data. The pixels are host's, or read back from dev. */
gpuws_status gpuws__sources_no_pixel_kept(const float *host, const gpuws_buffer *dev, size_t n, double kappa)
{
    float *px = (float *)host;
    if (!host && !(px = gpuws__malloc(n * sizeof *px)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes to say why the clipping kept no pixel",
                            n * sizeof *px);
    gpuws_status st = host ? GPUWS_OK : gpuws_buffer_read(dev, 0, px, n * sizeof *px);
    size_t infinite = 0, numbers = 0;
    float first = NAN;
    bool constant = true;
    for (size_t i = 0; i < n && !st; i++) {
        if (isnan(px[i])) continue;
        infinite += isinf(px[i]) != 0, numbers++;
        if (isnan(first)) first = px[i];
        else constant &= px[i] == first;
    }
    if (!host) gpuws__free(px);
    if (st) return st;
    const char *tail = "so threshold_sigma x clipped std has no value; give threshold_abs instead";
    if (infinite)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "find_sources: the clipping kept no pixel (%zu of the %zu non-NaN pixels %s +-inf, which "
                            "makes the std NaN), %s",
                            infinite, numbers, infinite == 1 ? "is" : "are", tail);
    if (constant)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "find_sources: the clipping kept no pixel (a constant image: every non-NaN pixel is %g, so "
                            "the std is 0), %s",
                            (double)first, tail);
    return gpuws__error(
        GPUWS_ERR_INVALID_ARGUMENT,
        "find_sources: the clipping kept no pixel (kappa = %g is too small for these data: no pixel lay "
        "strictly within kappa x std of the median), %s, or a larger kappa",
        kappa, tail);
}

gpuws_status gpuws__sources_fill(gpuws_catalog *cat, const gpuws_source_measure *meas, size_t nl)
{
    if (nl && !(cat->sources = gpuws__malloc(nl * sizeof *cat->sources)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu sources (%zu bytes)", nl,
                            nl * sizeof *cat->sources);
    for (size_t k = 0; k < nl; k++) {
        const gpuws_source_measure *m = &meas[k];
        cat->sources[k] = gpuws__source_of(m, k + 1);
    }
    cat->num_sources = nl;
    return GPUWS_OK;
}

/* Everything after validation. host != NULL: upload it into a new buffer; else the image is already in `dev`. */
static gpuws_status pipeline(gpuws_stream *s, const float *host, const gpuws_buffer *dev, size_t width, size_t height,
                             const gpuws_sources_options *o, gpuws_catalog *cat, run_state *r)
{
    gpuws_context *ctx = s->ctx;
    const size_t n = width * height;
    gpuws_status st = GPUWS_OK;
    for (int i = 0; i < NEV && !st; i++) st = gpuws_event_create(ctx, &r->ev[i]);
    if (st || (st = gpuws__stream_scratch(s, &key_mask, n, &r->mask)) ||
        (st = gpuws__stream_scratch(s, &key_labels, n * sizeof(int32_t), &r->labels)))
        return st;
    if (host && (st = gpuws__stream_scratch(s, &key_image, n * sizeof(float), &r->image))) return st;
    const gpuws_buffer *img = host ? r->image : dev;

    if ((st = record(r, EV_START, s))) return st;
    if (host && (st = gpuws_buffer_write_async(s, r->image, 0, host, n * sizeof(float)))) return st;
    if ((st = record(r, EV_UPLOAD, s))) return st;

    if ((st = gpuws_sigma_clip(s, n, img, o->clip, &cat->clip)))
        return gpuws__error_prefix(st, "find_sources: sigma_clip");
    if ((st = record(r, EV_CLIP, s))) return st;

    /* a constant image (one pixel included), one with +-inf, or a kappa too small for the data keeps nothing: the
     * clipped std is NaN (docs/algorithms/sigma_clip.md) */
    if (isnan(o->threshold_abs) && cat->clip.count == 0)
        return gpuws__sources_no_pixel_kept(host, dev, n, o->clip->kappa);
    cat->threshold = isnan(o->threshold_abs) ? o->threshold_sigma * cat->clip.std : o->threshold_abs;
    if (!isfinite(cat->threshold) || fabs(cat->threshold) > FLT_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "find_sources: the threshold %g (%g x clipped std %g) is not a finite "
                            "float",
                            cat->threshold, o->threshold_sigma, cat->clip.std);
    if ((st = gpuws_threshold(s, n, img, (float)cat->threshold, r->mask)))
        return gpuws__error_prefix(st, "find_sources: threshold");
    if ((st = record(r, EV_THRESHOLD, s))) return st;

    size_t nl = 0;
    if ((st = gpuws_label(s, width, height, r->mask, o->connectivity, r->labels, &nl)))
        return gpuws__error_prefix(st, "find_sources: label");
    if ((st = record(r, EV_LABEL, s))) return st;

    /* the mask is dead once labelled: it holds the measurements when they fit (a few hundred sources do) */
    const size_t mbytes = nl * sizeof(gpuws_source_measure);
    gpuws_buffer *out = r->mask;
    if (mbytes > n && (st = gpuws_buffer_create(ctx, mbytes, &r->out))) return st;
    if (r->out) out = r->out;
    if (nl && (st = gpuws_measure(s, width, height, img, r->labels, nl, out)))
        return gpuws__error_prefix(st, "find_sources: measure");
    if ((st = record(r, EV_MEASURE, s))) return st;

    if (nl && !(r->meas = gpuws__malloc(mbytes)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for %zu measurements", mbytes, nl);
    if (nl && (st = gpuws_buffer_read_async(s, out, 0, r->meas, mbytes))) return st;
    if (o->want_labels) {
        if (!(cat->labels = gpuws__malloc(n * sizeof(int32_t))))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: %zu bytes for the label image",
                                n * sizeof(int32_t));
        if ((st = gpuws_buffer_read_async(s, r->labels, 0, cat->labels, n * sizeof(int32_t)))) return st;
    }
    if ((st = record(r, EV_END, s)) || (st = gpuws_stream_synchronize(s))) return st;

    double *ms[NEV - 1] = { &cat->ms_upload, &cat->ms_clip,    &cat->ms_threshold,
                            &cat->ms_label,  &cat->ms_measure, &cat->ms_download };
    for (int i = 0; i < NEV - 1 && !st; i++) st = gpuws_event_elapsed_ms(r->ev[i], r->ev[i + 1], ms[i]);
    if (st || (st = gpuws_event_elapsed_ms(r->ev[EV_START], r->ev[EV_END], &cat->ms_total))) return st;

    return gpuws__sources_fill(cat, r->meas, nl);
}

static gpuws_status run(gpuws_stream *s, const float *host, const gpuws_buffer *dev, size_t width, size_t height,
                        const gpuws_sources_options *options, gpuws_catalog **catalog)
{
    gpuws_catalog *cat = gpuws__calloc(1, sizeof *cat);
    if (!cat) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources: the catalogue (%zu bytes)", sizeof *cat);
    run_state r;
    memset(&r, 0, sizeof r);
    gpuws_status st = pipeline(s, host, dev, width, height, options, cat, &r);
    if (st) {
        /* the stream may still be reading or writing our buffers and host arrays (an error after an enqueue) */
        gpuws_stream_synchronize(s);
        gpuws_catalog_free(cat);
        cat = NULL;
    }
    release(&r);
    *catalog = cat;
    return st;
}

/* The image's rows over ctx and options->more_contexts, each context's default stream claimed for the call. */
static gpuws_status find_sources_devices(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                         const gpuws_sources_options *o, gpuws_catalog **catalog)
{
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    gpuws_stream *streams[GPUWS__BAND_DEVICES];
    gpuws__stream_claim claims[GPUWS__BAND_DEVICES] = { { NULL } };
    unsigned nd = 0;
    gpuws_status st = gpuws__band_contexts(ctx, o->more_contexts, o->num_more_contexts, "find_sources", ctxs, &nd);
    for (unsigned d = 0; d < nd && !st; d++) {
        streams[d] = NULL;
        st = gpuws__driver_stream(ctxs[d], &streams[d], &claims[d], "find_sources");
    }
    if (!st) st = gpuws__find_sources_devices(streams, nd, image, width, height, o, catalog);
    for (unsigned d = 0; d < nd; d++) gpuws__unclaim(&claims[d]);
    return st;
}

gpuws_status gpuws_find_sources(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                const gpuws_sources_options *options, gpuws_catalog **catalog)
{
    GPUWS__CLAIM(claim);
    sources_options so;
    size_t n = 0;
    gpuws_stream *s = NULL; /* the default stream */
    gpuws_status st = check_call("find_sources", ctx, image, width, height, true, options, &so, catalog, &n);
    if (st) return st;
    if (so.o.num_more_contexts) return find_sources_devices(ctx, image, width, height, &so.o, catalog);
    if ((st = gpuws__driver_stream(ctx, &s, &claim, "find_sources"))) return st;
    return run(s, image, NULL, width, height, &so.o, catalog);
}

gpuws_status gpuws__find_sources_device(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                                        const gpuws_sources_options *options, gpuws_catalog **catalog)
{
    GPUWS__CLAIM(claim);
    if (!catalog) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "find_sources: argument 'catalog' is NULL");
    *catalog = NULL;
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "find_sources"))) return st;
    sources_options so;
    const gpuws_sources_options *o = &so.o;
    size_t n = 0;
    if ((st = check_size("find_sources", width, height, sizeof(float), &n)) ||
        (st = gpuws__sources_read_options("find_sources", options, &so)) ||
        (st = gpuws__check_array(ctx, image, "image", n, sizeof(float))))
        return st;
    return run(s, NULL, image, width, height, o, catalog);
}

/* ---- the pipeline from host memory, for images of any size ---------------------------------------------------- */

typedef struct {
    const float *image;
    uint8_t *mask;
    float threshold;
} threshold_job;

static void threshold_range(void *arg, size_t part, size_t i0, size_t i1)
{
    (void)part;
    const threshold_job *j = arg;
    for (size_t i = i0; i < i1; i++) j->mask[i] = j->image[i] > j->threshold; /* NaN: 0 */
}

void gpuws__sources_mask_host(const float *image, size_t n, float threshold, unsigned threads, uint8_t *mask)
{
    threshold_job tj = { .image = image, .mask = mask, .threshold = threshold };
    const size_t parts = n / ((size_t)1 << 22) + 1;
    gpuws__run_ranges(n, parts < threads ? parts : threads, threshold_range, &tj);
}

gpuws_status gpuws__sources_threshold_value(const char *name, const gpuws_sources_options *o, gpuws_catalog *cat)
{
    cat->threshold = isnan(o->threshold_abs) ? o->threshold_sigma * cat->clip.std : o->threshold_abs;
    if (!isfinite(cat->threshold) || fabs(cat->threshold) > FLT_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: the threshold %g (%g x clipped std %g) is not a finite float", name, cat->threshold,
                            o->threshold_sigma, cat->clip.std);
    return GPUWS_OK;
}

double gpuws__sources_ms_since(struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    const double ms = (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
    *t0 = t;
    return ms;
}

static gpuws_status pipeline_host(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                  const gpuws_sources_options *o, const gpuws_label_host_options *lo,
                                  gpuws_catalog *cat)
{
    const size_t n = width * height;
    struct timespec t0, start;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start = t0;
    gpuws_status st = gpuws_sigma_clip_host(ctx, image, n, o->clip, &cat->clip);
    if (st) return gpuws__error_prefix(st, "find_sources_host: sigma_clip_host");
    cat->ms_clip = gpuws__sources_ms_since(&t0);
    if (isnan(o->threshold_abs) && cat->clip.count == 0)
        return gpuws__sources_no_pixel_kept(image, NULL, n, o->clip->kappa);
    if ((st = gpuws__sources_threshold_value("find_sources_host", o, cat))) return st;
    uint8_t *mask = gpuws__malloc(n);
    int32_t *labels = gpuws__malloc(n * sizeof *labels);
    if (!mask || !labels) {
        gpuws__free(mask);
        gpuws__free(labels);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "find_sources_host: no host memory for the mask and the labels "
                            "(%zu bytes)",
                            5 * n);
    }
    const unsigned threads = gpuws__threads_from_knob(ctx->tuning.find_sources_host_threads);
    gpuws__sources_mask_host(image, n, (float)cat->threshold, threads, mask);
    cat->ms_threshold = gpuws__sources_ms_since(&t0);
    size_t nl = 0;
    st = gpuws_label_host(ctx, width, height, mask, 0, o->connectivity, lo, labels, &nl);
    gpuws__free(mask);
    if (st) {
        gpuws__free(labels);
        return gpuws__error_prefix(st, "find_sources_host: label_host");
    }
    cat->ms_label = gpuws__sources_ms_since(&t0);
    gpuws_source_measure *meas = nl ? gpuws__malloc(nl * sizeof *meas) : NULL;
    if (nl && !meas) {
        gpuws__free(labels);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host: %zu bytes for %zu measurements",
                            nl * sizeof *meas, nl);
    }
    if (nl && (st = gpuws__measure_host(image, labels, width, height, nl, threads, meas))) {
        gpuws__free(meas);
        gpuws__free(labels);
        return st;
    }
    cat->ms_measure = gpuws__sources_ms_since(&t0);
    st = gpuws__sources_fill(cat, meas, nl);
    gpuws__free(meas);
    if (o->want_labels && !st) cat->labels = labels;
    else gpuws__free(labels);
    cat->ms_total = gpuws__sources_ms_since(&start);
    return st;
}

gpuws_status gpuws_find_sources_host(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                     const gpuws_sources_options *options,
                                     const gpuws_label_host_options *label_options, gpuws_catalog **catalog)
{
    sources_options so;
    const gpuws_sources_options *o = &so.o;
    size_t n = 0;
    gpuws_status st = check_call("find_sources_host", ctx, image, width, height, false, options, &so, catalog, &n);
    if (st) return st;
    gpuws_catalog *cat = gpuws__calloc(1, sizeof *cat);
    if (!cat) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "find_sources_host: the catalogue (%zu bytes)", sizeof *cat);
    if ((st = pipeline_host(ctx, image, width, height, o, label_options, cat))) {
        gpuws_catalog_free(cat);
        return st;
    }
    *catalog = cat;
    return GPUWS_OK;
}

/* ---- the synthetic sky ------------------------------------------------------------------------------------- */

gpuws_status gpuws__sky_generate(gpuws_stream *s, const gpuws_sky_params *p, const gpuws_sky_source *sources,
                                 gpuws_buffer *image)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "sky"))) return st;
    if (!p || (!sources && p->num_sources))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sky: the parameters or the source list is NULL");
    size_t n = 0;
    if (p->width == 0 || p->height == 0 || p->width > UINT32_MAX || p->height > UINT32_MAX ||
        gpuws__mul_overflows(p->width, p->height, &n) || p->num_sources > UINT32_MAX / 3)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sky: %zu x %zu pixels with %zu sources is not a sky this can make", p->width, p->height,
                            p->num_sources);
    if (!(p->noise_sigma >= 0) || !(p->beam_sigma > 0) || !(p->cutoff_sigmas > 0))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sky: noise %g, beam %g, cutoff %g sigmas", p->noise_sigma,
                            p->beam_sigma, p->cutoff_sigmas);
    if ((st = gpuws__check_array(ctx, image, "image", n, sizeof(float)))) return st;
    gpuws_sky_bins bins;
    if (gpuws_sky_bin(p, sources, &bins)) return gpuws__error_prefix(GPUWS_ERR_OUT_OF_MEMORY, "sky");
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        gpuws_sky_ref(p, &bins, gpuws__cpu_ptr(image), NULL);
        gpuws_sky_bins_free(&bins);
        return GPUWS_OK;
    }
    const size_t ncells = (size_t)bins.cells_x * bins.cells_y;
    const size_t src_bytes = (p->num_sources ? p->num_sources : 1) * sizeof(gpuws_sky_source);
    gpuws_buffer *src = NULL, *starts = NULL;
    if (!(st = gpuws_buffer_create(ctx, src_bytes, &src)) &&
        !(st = gpuws_buffer_create(ctx, (ncells + 1) * sizeof(uint32_t), &starts)) &&
        !(st = gpuws_buffer_write_async(s, src, 0, bins.sorted, p->num_sources * sizeof(gpuws_sky_source))) &&
        !(st = gpuws_buffer_write_async(s, starts, 0, bins.cell_start, (ncells + 1) * sizeof(uint32_t)))) {
        gpuws_launch_config cfg = { { (uint32_t)((p->width + 15) / 16), (uint32_t)((p->height + 15) / 16), 1 },
                                    { 16, 16, 1 } };
        gpuws_arg args[] = { gpuws_arg_buffer(image),
                             gpuws_arg_buffer(src),
                             gpuws_arg_buffer(starts),
                             gpuws_arg_u32((uint32_t)p->width),
                             gpuws_arg_u32((uint32_t)p->height),
                             gpuws_arg_u32(bins.cell),
                             gpuws_arg_u32(bins.cells_x),
                             gpuws_arg_u32(bins.cells_y),
                             gpuws_arg_u64(p->seed),
                             gpuws_arg_f32((float)p->noise_sigma),
                             gpuws_arg_f32(bins.r2max),
                             gpuws_arg_f32(bins.inv_two_s2) };
        st = gpuws__launch_named(s, "sources_sky_f32", NULL, &cfg, args, GPUWS__NARGS(args));
    }
    gpuws_status sync = gpuws_stream_synchronize(s); /* the uploads read `bins` */
    if (!st) st = sync;
    gpuws_buffer_destroy(src);
    gpuws_buffer_destroy(starts);
    gpuws_sky_bins_free(&bins);
    return st;
}
