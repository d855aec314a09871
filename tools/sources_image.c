/* gpuws sources on one image: the file read in a child process while the device starts on a thread, the pixels
 * scanned once (NaN and infinite ones counted, the extraction's mask made), then the extraction or the workshop's
 * pipeline, and the outputs. */
#include "parallel.h"
#include "sources.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sources_times_init(sources_times *t, double start)
{
    t->mpi = t->read = t->device = t->device_wait = t->scan = t->upload = t->background = t->extract = -1;
    t->extract_device = t->extract_host = t->phot = t->find = t->download = t->table = t->commit = -1;
    t->written = t->release = -1;
    t->release_device = -1;
    t->read_ahead = 0;
    for (int k = 0; k < OUT_COUNT; k++) t->out[k] = -1;
    t->start = start;
}

void sources_times_print(const sources_times *t, const char *image)
{
    fprintf(stderr, "gpuws sources: timings of %s (ms, wall clock):\n", image);
    static const char *const step = "  %-22s %10.1f%s\n";
    char note[120];
    if (t->mpi >= 0) fprintf(stderr, step, "MPI start", t->mpi, "");
    if (t->read >= 0)
        fprintf(stderr, step, "read", t->read,
                t->read_ahead        ? " (waited for: read while the image before was processed)"
                : t->device_wait < 0 ? ""
                                     : " (the device starting meanwhile)");
    if (t->device >= 0) {
        note[0] = 0;
        if (t->device_wait >= 0)
            snprintf(note, sizeof note, " (on a thread during the read; %.1f waited for after it)", t->device_wait);
        fprintf(stderr, step, "device start", t->device, note);
    }
    note[0] = 0;
    if (t->extract_device >= 0)
        snprintf(note, sizeof note, " (device %.1f, host %.1f)", t->extract_device, t->extract_host);
    const struct {
        const char *name;
        double ms;
        const char *note;
    } steps[] = { { "pixel scan", t->scan, "" },           { "mask + upload", t->upload, "" },
                  { "background", t->background, "" },     { "extraction", t->extract, note },
                  { "aperture photometry", t->phot, "" },  { "find sources", t->find, "" },
                  { "maps to the host", t->download, "" }, { "catalogue table", t->table, "" } };
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        if (steps[k].ms >= 0) fprintf(stderr, step, steps[k].name, steps[k].ms, steps[k].note);
    for (int k = 0; k < OUT_COUNT; k++)
        if (t->out[k] >= 0) fprintf(stderr, step, sources_out_options[k], t->out[k], "");
    if (t->commit >= 0) fprintf(stderr, step, "outputs put in place", t->commit, "");
    if (t->release >= 0) {
        note[0] = 0;
        if (t->release_device >= 0) snprintf(note, sizeof note, " (the device's context %.1f)", t->release_device);
        fprintf(stderr, step, "memory released", t->release, note);
    }
    fprintf(stderr, step, "total", tool_now_ms() - t->start, "");
}

/* ---- the device, started on a thread while the file is read ---------------------------------------------------- */

static void *make_context(void *p)
{
    sources_device *d = p;
    const double t0 = tool_now_ms();
    /* PoCL's LLVM installs an alternate signal stack of its own on the thread that creates the context, and
     * AddressSanitizer, which unmaps its own one when the thread ends, aborts finding LLVM's there: the thread's own
     * is put back */
    stack_t ss;
    const int saved = sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_ONSTACK);
    if (d->make) {
        d->st = d->make(d->user, &d->c);
    } else { /* both methods take a GPUWS_DEVICE list: the extraction from host memory spreads its bands over it */
        d->st = gpuws_contexts_create(NULL, sizeof d->c.ctx / sizeof *d->c.ctx, d->c.ctx, &d->c.n);
    }
    if (saved) sigaltstack(&ss, NULL);
    if (d->st) snprintf(d->why, sizeof d->why, "%s", gpuws_last_error());
    d->ms = tool_now_ms() - t0;
    return NULL;
}

void sources_device_begin(sources_device *d)
{
    memset(d, 0, sizeof *d);
    d->started = pthread_create(&d->thread, NULL, make_context, d) == 0;
}

void sources_device_begin_with(sources_device *d, sources_device_maker make, void *user)
{
    memset(d, 0, sizeof *d);
    d->make = make, d->user = user;
    d->started = pthread_create(&d->thread, NULL, make_context, d) == 0;
}

void sources_device_wait(sources_device *d, sources_times *t)
{
    const double t0 = tool_now_ms();
    if (d->started) pthread_join(d->thread, NULL);
    else make_context(d);
    d->started = 0;
    t->device = d->ms, t->device_wait = tool_now_ms() - t0;
}

int sources_device_end(sources_device *d, sources_contexts *c, sources_times *t)
{
    sources_device_wait(d, t);
    if (d->st) return fprintf(stderr, "gpuws %s: %s: %s\n", CMD, gpuws_status_name(d->st), d->why), 1;
    *c = d->c;
    return 0;
}

void sources_device_abandon(sources_device *d)
{
    if (!d->started) return;
    pthread_join(d->thread, NULL);
    gpuws_contexts_destroy(d->c.ctx, d->c.n);
}

/* ---- the pixels ------------------------------------------------------------------------------------------------- */

typedef struct {
    size_t blanks, infinite; /* NaN and +-inf pixels */
    unsigned char *mask;     /* the extraction's mask (nonzero: not finite), when there is such a pixel; or NULL */
    int kept;                /* the mask is a sources_reuse's: not freed with the scan */
} pixel_scan;

void sources_reuse_free(sources_reuse *r)
{
    free(r->mask);
    for (size_t k = 0; k < sizeof r->dev / sizeof r->dev[0]; k++) gpuws_buffer_destroy(r->dev[k]);
    memset(r, 0, sizeof *r);
}

/* keep, emptied unless it holds what a w x h image needs. */
static void reuse_fit(sources_reuse *keep, size_t w, size_t h)
{
    if (keep->w == w && keep->h == h) return;
    sources_reuse_free(keep);
    keep->w = w, keep->h = h;
}

typedef struct {
    const float *px;
    unsigned char *mask; /* or NULL */
    int zeroed;          /* the mask is zero: only its ones are written */
    size_t blanks[64], infinite[64];
} scan_job;

static void scan_range(void *user, size_t part, size_t lo, size_t hi)
{
    scan_job *j = user;
    size_t blanks = 0, infinite = 0;
    for (size_t i = lo; i < hi; i++) { /* != 0: glibc's isinf(-inf) is -1 */
        const float v = j->px[i];
        blanks += isnan(v) != 0, infinite += isinf(v) != 0;
    }
    /* the mask in a loop of its own, where it has something to write: the counts' loop alone runs twice as fast */
    if (j->mask && (!j->zeroed || blanks + infinite))
        for (size_t i = lo; i < hi; i++)
            if (!j->zeroed || !isfinite(j->px[i])) j->mask[i] = !isfinite(j->px[i]);
    j->blanks[part] = blanks, j->infinite[part] = infinite;
}

/* Counts the NaN and infinite pixels and, for the extraction, makes the mask (in keep's, when keep is not NULL). A
 * mask of its own is calloc'd and only its ones written: an image without such pixels (most) touches none of its
 * pages, which at 65536^2 were 4.3 GB of writes. */
static int scan_pixels(const sources_args *a, const fits_image *img, pixel_scan *s, sources_reuse *keep)
{
    const size_t n = img->width * img->height, parts = tool_parts(n, (size_t)1 << 18);
    scan_job j = { img->data, NULL, 0, { 0 }, { 0 } };
    memset(s, 0, sizeof *s);
    if (keep) reuse_fit(keep, img->width, img->height);
    if (a->method == METHOD_EXTRACT) {
        j.zeroed = !(keep && keep->mask);
        j.mask = j.zeroed ? calloc(n, 1) : keep->mask;
        if (!j.mask) return tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
        if (keep) keep->mask = j.mask;
    }
    tool_parallel(n, parts, scan_range, &j);
    for (size_t k = 0; k < parts; k++) s->blanks += j.blanks[k], s->infinite += j.infinite[k];
    s->kept = keep != NULL;
    if (s->blanks + s->infinite) s->mask = j.mask;
    else if (!keep) free(j.mask);
    return 0;
}

/* An image the method cannot work on: 1 with the reason on stderr. */
static int refuse_image(const sources_args *a, const fits_image *img, const pixel_scan *s)
{
    const size_t blanks = s->blanks, infinite = s->infinite;
    if (blanks + infinite == img->width * img->height) { /* no statistics exist: say which kind filled the image */
        fprintf(stderr, "gpuws sources: %s: every pixel of the %zu x %zu image (HDU %d) is ", a->image, img->width,
                img->height, img->hdu);
        if (!infinite) fprintf(stderr, "blank or NaN\n");
        else if (!blanks) fprintf(stderr, "infinite (+inf or -inf)\n");
        else fprintf(stderr, "blank, NaN or infinite: %zu blank or NaN, %zu infinite\n", blanks, infinite);
        return 1;
    }
    if (a->method == METHOD_EXTRACT && ((size_t)a->x.back_w > img->width || (size_t)a->x.back_h > img->height) &&
        a->back_size_given) {
        fprintf(stderr,
                "gpuws sources: %s: the background mesh (--back-size %d,%d) is larger than the %zu x %zu image\n",
                a->image, a->x.back_w, a->x.back_h, img->width, img->height);
        return 1;
    }
    return 0;
}

/* ---- the workshop's pipeline ------------------------------------------------------------------------------------ */

void sources_print_workshop(const gpuws_catalog *cat, const sources_args *a, int host)
{
    const gpuws_sigma_clip_result *c = &cat->clip;
    FILE *out = sources_report(a);
    fprintf(out, "sigma clipping (kappa %g): median %.6g, mean %.6g, std %.6g of %zu pixels after %d iteration%s%s\n",
            a->clip.kappa, c->median, c->mean, c->std, c->count, c->iterations, c->iterations == 1 ? "" : "s",
            c->converged ? " (converged)" : " (NOT converged: max_iterations reached)");
    if (isnan(a->o.threshold_abs))
        fprintf(out, "threshold: %.6g (%g x clipped std; no median added, as in the workshop)\n", cat->threshold,
                a->o.threshold_sigma);
    else fprintf(out, "threshold: %.6g (absolute)\n", cat->threshold);
    fprintf(out, "sources: %zu (%d-connectivity)\n", cat->num_sources, a->o.connectivity);
    if (host == 2)
        fprintf(out,
                "times (ms, host clock, the devices at once): upload %.3f  clip %.3f  threshold %.3f  label %.3f  "
                "measure %.3f  total %.3f\n",
                cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure, cat->ms_total);
    else if (host)
        fprintf(out, "times (ms, host clock): clip %.3f  threshold %.3f  label %.3f  measure %.3f  total %.3f\n",
                cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure, cat->ms_total);
    else
        fprintf(out,
                "times (ms, device events): upload %.3f  clip %.3f  threshold %.3f  label %.3f  measure %.3f  "
                "download %.3f  total %.3f\n",
                cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure, cat->ms_download,
                cat->ms_total);
}

int sources_use_host(const sources_args *a, gpuws_context *ctx, size_t w, size_t h)
{
    gpuws_device_info d;
    if (a->max_device_given || gpuws_context_get_device_info(ctx, &d)) return 1;
    return 9.0 * (double)w * (double)h > 0.75 * (double)d.global_mem_bytes;
}

gpuws_status sources_find_host(const sources_args *a, const sources_contexts *c, const float *px, size_t w, size_t h,
                               gpuws_catalog **cat)
{
    *cat = NULL;
    gpuws_label_host_options lo = GPUWS_LABEL_HOST_OPTIONS_INIT;
    lo.max_device_bytes = a->max_device_bytes;
    lo.more_contexts = c->ctx + 1, lo.num_more_contexts = c->n - 1;
    tool_band_progress progress = tool_band_progress_start("gpuws sources");
    lo.progress = tool_label_band, lo.progress_user = &progress;
    size_t rows = 0, bands = 0;
    gpuws_status st = gpuws_label_host_bands(c->ctx[0], w, h, &lo, &rows, &bands); /* a budget below one band */
    if (st) return st;
    if (bands > 1)
        fprintf(stderr, "gpuws sources: labelling through %zu device%s in %zu bands of up to %zu of %zu rows\n", c->n,
                c->n == 1 ? "" : "s", bands, rows, h);
    return gpuws_find_sources_host(c->ctx[0], px, w, h, &a->o, &lo, cat);
}

void sources_print_brightest(const gpuws_catalog *cat, FILE *out)
{
    size_t *order = catalog_order_by_flux(cat->sources, cat->num_sources);
    if (!order || !cat->num_sources) {
        free(order);
        return;
    }
    const size_t show = cat->num_sources < 5 ? cat->num_sources : 5;
    fprintf(out, "brightest %zu:\n  %6s %10s %10s %12s %6s %12s\n", show, "id", "x", "y", "flux", "npix", "peak");
    for (size_t k = 0; k < show; k++) {
        const gpuws_source *s = &cat->sources[order[k]];
        fprintf(out, "  %6lld %10.3f %10.3f %12.6g %6lld %12.6g\n", (long long)s->id, s->x, s->y, s->flux,
                (long long)s->npix, s->peak);
    }
    free(order);
}

/* products_from_image, and its time (the WCS's, counted with the catalogue table's). */
static double timed_products(products *p, const fits_image *img, sky_wcs **wcs, char *why, size_t n, char *bunit,
                             size_t nb)
{
    const double t0 = tool_now_ms();
    products_from_image(p, img, wcs, why, n, bunit, nb);
    return tool_now_ms() - t0;
}

static int run_workshop(const sources_args *a, const fits_image *img, const sources_contexts *c, sources_times *t)
{
    char why[300] = "", bunit[72];
    sky_wcs *wcs;
    products p;
    const double ms_wcs = timed_products(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
    double t0;
    p.image = img->data;
    gpuws_catalog *cat;
    t0 = tool_now_ms();
    const int host = sources_use_host(a, c->ctx[0], img->width, img->height);
    gpuws_sources_options o = a->o; /* in-core over the devices of a GPUWS_DEVICE list */
    o.more_contexts = c->ctx + 1, o.num_more_contexts = c->n - 1;
    gpuws_status st = host ? sources_find_host(a, c, img->data, img->width, img->height, &cat)
                           : gpuws_find_sources(c->ctx[0], img->data, img->width, img->height, &o, &cat);
    t->find = tool_now_ms() - t0;
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        sources_print_workshop(cat, a, host ? 1 : c->n > 1 ? 2 : 0);
        sources_print_brightest(cat, sources_report(a));
        workshop_title(&p, a, cat->num_sources);
        t0 = tool_now_ms();
        rc = workshop_products(&p, cat, bunit);
        t->table = ms_wcs + tool_now_ms() - t0;
        rc = rc ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : sources_write_outputs(a, &p, t);
    }
    gpuws_catalog_free(cat);
    products_free(&p);
    sky_wcs_destroy(wcs);
    return rc;
}

/* ---- the extraction --------------------------------------------------------------------------------------------- */

/* The background mesh for a w x h image: --back-size, or the default cut to the image (one mesh, as SEP makes). */
static void mesh_for(const sources_args *a, size_t w, size_t h, int *bw, int *bh)
{
    *bw = a->x.back_w, *bh = a->x.back_h;
    if (!a->back_size_given && (size_t)*bw > w) *bw = (int)w;
    if (!a->back_size_given && (size_t)*bh > h) *bh = (int)h;
}

static void print_extract(const sources_args *a, size_t w, size_t h, const gpuws_background_result *br,
                          const gpuws_extract_catalog *cat)
{
    const extract_args *x = &a->x;
    FILE *out = sources_report(a);
    int bw, bh;
    mesh_for(a, w, h, &bw, &bh);
    fprintf(out,
            "background: global %.6g, rms %.6g (%zu x %zu meshes of %d x %d pixels, filter %d x %d; %zu meshes filled "
            "from their neighbours)\n",
            br->globalback, br->globalrms, br->nx, br->ny, bw, bh, x->back_fw, x->back_fh, br->bad_meshes);
    char filter[64];
    if (x->filter_none) snprintf(filter, sizeof filter, "none");
    else if (!x->filter) snprintf(filter, sizeof filter, "SEP's default 3 x 3");
    else snprintf(filter, sizeof filter, "%d x %d kernel", x->filter_w, x->filter_h);
    fprintf(out, "objects: %zu (detect-thresh %g sigma, minarea %d, filter %s, deblend %d levels, mincont %g, ",
            cat->num_objects, x->detect_thresh, x->minarea, filter, x->deblend_nthresh, x->deblend_mincont);
    if (x->clean) fprintf(out, "clean-param %g, ", x->clean_param);
    else fprintf(out, "no cleaning, ");
    fprintf(out, "%d-connectivity)\n", a->connectivity);
    fprintf(out, "times (ms): extraction on the device %.3f, on the host %.3f\n", cat->ms_device, cat->ms_host);
    const size_t show = cat->num_objects < 5 ? cat->num_objects : 5;
    if (!show) return;
    fprintf(out, "first %zu:\n  %6s %10s %10s %12s %12s %8s %8s %6s\n", show, "id", "x", "y", "flux", "fluxerr", "a",
            "b", "flag");
    for (size_t k = 0; k < show; k++) {
        const gpuws_object *o = &cat->objects[k];
        fprintf(out, "  %6zu %10.3f %10.3f %12.6g %12.6g %8.3f %8.3f %6d\n", k + 1, o->x, o->y, o->flux, o->fluxerr,
                o->a, o->b, o->flag);
    }
}

/* One image's host pixels and mask released on a thread once they are on the device and nothing else reads them (the
 * extraction without --overlay): unmapping a large image's pages takes tens of milliseconds, which then pass while
 * the device and the host steps work. */
typedef struct {
    fits_image *img;
    unsigned char **mask; /* the scan's (freed: NULL) */
    pthread_t thread;
    int started;
} early_release;

static void *release_pixels(void *p)
{
    early_release *e = p;
    fits_image_free_pixels(e->img);
    free(*e->mask);
    *e->mask = NULL;
    return NULL;
}

/* The thread joined, if one started. */
static void early_release_end(early_release *e)
{
    if (e->started) pthread_join(e->thread, NULL);
    e->started = 0;
}

/* The extraction's device buffers (image, mask, background, rms, segmentation; the mask and segmentation only where
 * wanted): keep's, made once for images of its size, or made here (NULL keep: the caller destroys them). */
static gpuws_status extract_buffers(gpuws_context *ctx, size_t w, size_t h, int want_mask, int want_seg,
                                    sources_reuse *keep, gpuws_buffer *b[5])
{
    const size_t n = w * h, bytes[5] = { n * sizeof(float), n, n * sizeof(float), n * sizeof(float), n * 4 };
    const int want[5] = { 1, want_mask, 1, 1, want_seg };
    for (int k = 0; k < 5; k++) b[k] = NULL;
    for (int k = 0; k < 5; k++) {
        if (!want[k]) continue;
        if (keep && keep->dev[k]) {
            b[k] = keep->dev[k];
            continue;
        }
        const gpuws_status st = gpuws_buffer_create(ctx, bytes[k], &b[k]);
        if (st) return st;
        if (keep) keep->dev[k] = b[k];
    }
    return GPUWS_OK;
}

/* An extraction between its steps: begun (its image on the device, its background made), then found and reported
 * (what its outputs are made from). */
struct sources_pending {
    char why[300], bunit[72]; /* the products point into them */
    sky_wcs *wcs;
    products p;
    float *hback, *hrms;
    int32_t *hseg;
    gpuws_extract_catalog *cat;
    phot_table ph;
    /* until it is found: */
    gpuws_stream *stream;
    gpuws_buffer *b[5];  /* image, mask (or NULL), background, rms, segmentation (or NULL) */
    sources_reuse *keep; /* whose buffers they are (NULL: destroyed after the extraction) */
    gpuws_background_result br;
    double ms_wcs;
};

static void pending_free(sources_pending *q)
{
    if (!q) return;
    for (int k = 0; !q->keep && k < 5; k++) gpuws_buffer_destroy(q->b[k]);
    gpuws_extract_catalog_free(q->cat);
    phot_free(&q->ph);
    free(q->hback), free(q->hrms), free(q->hseg);
    products_free(&q->p);
    sky_wcs_destroy(q->wcs);
    free(q);
}

int sources_pending_write(sources_pending *q, const sources_args *a, sources_times *t)
{
    const int rc = sources_write_outputs(a, &q->p, t);
    pending_free(q);
    return rc;
}

/* The extraction's first steps: the image and its mask on the device, the background. 0 with *out, or 1 with the
 * reason on stderr. */
static int extract_begin(const sources_args *a, const fits_image *img, const pixel_scan *scan, gpuws_context *ctx,
                         gpuws_stream *stream, sources_times *t, sources_reuse *keep, early_release *early,
                         sources_pending **out)
{
    const size_t w = img->width, h = img->height, n = w * h;
    const extract_args *x = &a->x;
    *out = NULL;
    gpuws_status st = stream ? GPUWS_OK : gpuws_context_get_default_stream(ctx, &stream);
    if (st) return tool_fail(CMD, st);
    sources_pending *q = calloc(1, sizeof *q);
    if (!q) return tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
    q->stream = stream, q->keep = keep;
    products *p = &q->p;
    q->ms_wcs = timed_products(p, img, &q->wcs, q->why, sizeof q->why, q->bunit, sizeof q->bunit);
    p->image = img->data;
    const unsigned char *hmask = scan->mask;
    q->hback = a->out[OUT_BACKGROUND] ? malloc(n * sizeof *q->hback) : NULL;
    q->hrms = a->out[OUT_RMS] ? malloc(n * sizeof *q->hrms) : NULL;
    q->hseg = a->out[OUT_LABELS] ? malloc(n * sizeof *q->hseg) : NULL;
    st = (a->out[OUT_BACKGROUND] && !q->hback) || (a->out[OUT_RMS] && !q->hrms) || (a->out[OUT_LABELS] && !q->hseg)
             ? GPUWS_ERR_OUT_OF_MEMORY
             : GPUWS_OK;
    double t0 = tool_now_ms();
    if (!st) st = extract_buffers(ctx, w, h, hmask != NULL, q->hseg != NULL, keep, q->b);
    if (!st) st = gpuws_buffer_write_async(stream, q->b[0], 0, img->data, n * sizeof(float));
    if (!st && hmask) st = gpuws_buffer_write_async(stream, q->b[1], 0, hmask, n);
    const gpuws_status sync = gpuws_stream_synchronize(stream); /* the host memory is read until then */
    if (!st) st = sync;
    t->upload = tool_now_ms() - t0;
    if (!st && early && !a->out[OUT_OVERLAY]) /* the pixels are on the device, and only the overlay reads them here */
        early->started = pthread_create(&early->thread, NULL, release_pixels, early) == 0;
    if (!st) {
        gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
        mesh_for(a, w, h, &bo.bw, &bo.bh);
        bo.fw = x->back_fw, bo.fh = x->back_fh, bo.mask = q->b[1];
        t0 = tool_now_ms();
        st = gpuws_background(stream, GPUWS_F32, w, h, q->b[0], &bo, q->b[2], q->b[3], &q->br);
        t->background = tool_now_ms() - t0;
    }
    if (st) {
        pending_free(q);
        return tool_fail(CMD, st);
    }
    *out = q;
    return 0;
}

/* gpuws_extract's options from the command line, without its buffers. */
static gpuws_extract_options extract_options(const sources_args *a)
{
    const extract_args *x = &a->x;
    gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
    eo.thresh = x->detect_thresh, eo.minarea = x->minarea;
    eo.filter_type = x->filter_none ? GPUWS_FILTER_NONE : GPUWS_FILTER_MATCHED;
    eo.filter = x->filter, eo.filter_w = x->filter_w, eo.filter_h = x->filter_h;
    eo.connectivity = a->connectivity, eo.deblend_nthresh = x->deblend_nthresh;
    eo.deblend_cont = x->deblend_mincont, eo.clean = x->clean, eo.clean_param = x->clean_param;
    return eo;
}

/* An extraction's report and its catalogue's table, once its steps ended with st: 0, or 1 with the reason on stderr
 * and q freed. */
static int extract_report(sources_pending *q, const sources_args *a, size_t w, size_t h, gpuws_status st,
                          sources_times *t)
{
    products *p = &q->p;
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        const gpuws_extract_catalog *cat = q->cat;
        print_extract(a, w, h, &q->br, cat);
        if (q->ph.nap) phot_print(&q->ph, sources_report(a));
        p->back = q->hback, p->rms = q->hrms, p->labels = q->hseg, p->lo = q->br.globalback;
        snprintf(p->title, sizeof p->title,
                 "gpuws sources --method extract: %zu object%s in %s; ellipses at 3 a x 3 b, SEP's isophotal semi-axes "
                 "times 3",
                 cat->num_objects, cat->num_objects == 1 ? "" : "s", a->image);
        const double t0 = tool_now_ms();
        rc = extract_products(p, cat, &q->ph, q->bunit);
        t->table = q->ms_wcs + tool_now_ms() - t0;
        if (rc) rc = tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
    }
    if (rc) pending_free(q);
    return rc;
}

/* The extraction's other steps on what extract_begin made: the objects, the apertures, the maps to the host, the
 * report, the catalogue's table. */
int sources_pending_extract(sources_pending *q, const sources_args *a, const fits_image *img, sources_times *t)
{
    const size_t w = img->width, h = img->height, n = w * h;
    const extract_args *x = &a->x;
    gpuws_buffer *image = q->b[0], *mask = q->b[1], *back = q->b[2], *rms = q->b[3], *seg = q->b[4];
    gpuws_extract_options eo = extract_options(a);
    eo.back = back, eo.rms = rms, eo.mask = mask, eo.segmap = seg;
    double t0 = tool_now_ms();
    gpuws_status st = gpuws_extract(q->stream, w, h, image, &eo, &q->cat);
    t->extract = tool_now_ms() - t0;
    if (!st) t->extract_device = q->cat->ms_device, t->extract_host = q->cat->ms_host;
    if (!st && x->phot.n) {
        t0 = tool_now_ms();
        st = phot_measure(&x->phot, q->stream, w, h, image, back, rms, mask, q->cat, &q->ph);
        t->phot = tool_now_ms() - t0;
    }
    t0 = tool_now_ms();
    if (!st && q->hback) st = gpuws_buffer_read_async(q->stream, back, 0, q->hback, n * sizeof *q->hback);
    if (!st && q->hrms) st = gpuws_buffer_read_async(q->stream, rms, 0, q->hrms, n * sizeof *q->hrms);
    if (!st && q->hseg) st = gpuws_buffer_read_async(q->stream, seg, 0, q->hseg, n * sizeof *q->hseg);
    const gpuws_status sync = gpuws_stream_synchronize(q->stream);
    if (!st) st = sync;
    if (q->hback || q->hrms || q->hseg) t->download = tool_now_ms() - t0;
    for (int k = 0; !q->keep && k < 5; k++) gpuws_buffer_destroy(q->b[k]), q->b[k] = NULL;
    return extract_report(q, a, w, h, st, t);
}

/* Whether the extraction runs from host memory: --max-device-memory, an image of 2^31 pixels or more (more than
 * gpuws_extract takes), or one whose in-core extraction (about 40 bytes a pixel on the device: the image, mask, maps
 * and segmentation, and the extraction's own maps, labels and records) would take more than three quarters of the
 * device's memory. */
static int extract_from_host(const sources_args *a, gpuws_context *ctx, size_t w, size_t h)
{
    gpuws_device_info d;
    if (a->max_device_given || (double)w * (double)h > INT32_MAX) return 1;
    if (gpuws_context_get_device_info(ctx, &d)) return 0;
    return 40.0 * (double)w * (double)h > 0.75 * (double)d.global_mem_bytes;
}

/* The extraction from host memory (extract_from_host): gpuws_extract_host on the image as it was read, making the
 * background itself (its maps reach the host only for --background, --rms and --phot-apertures), the segmentation
 * map made in host memory, the bands spread over every device of c; the apertures on the host's arrays; then the
 * report and the outputs. */
static int run_extract_host(const sources_args *a, const fits_image *img, const pixel_scan *scan,
                            const sources_contexts *c, sources_times *t)
{
    gpuws_context *ctx = c->ctx[0];
    const size_t w = img->width, h = img->height, n = w * h;
    const extract_args *x = &a->x;
    sources_pending *q = calloc(1, sizeof *q);
    if (!q) return tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
    q->ms_wcs = timed_products(&q->p, img, &q->wcs, q->why, sizeof q->why, q->bunit, sizeof q->bunit);
    q->p.image = img->data;
    q->hback = a->out[OUT_BACKGROUND] ? malloc(n * sizeof *q->hback) : NULL;
    q->hrms = a->out[OUT_RMS] ? malloc(n * sizeof *q->hrms) : NULL;
    q->hseg = a->out[OUT_LABELS] ? malloc(n * sizeof *q->hseg) : NULL;
    /* the apertures' maps where no output keeps them */
    float *pback = x->phot.n && !q->hback ? malloc(n * sizeof *pback) : NULL;
    float *prms = x->phot.n && !q->hrms ? malloc(n * sizeof *prms) : NULL;
    float *back = q->hback ? q->hback : pback, *rms = q->hrms ? q->hrms : prms;
    gpuws_status st = (a->out[OUT_BACKGROUND] && !q->hback) || (a->out[OUT_RMS] && !q->hrms) ||
                              (a->out[OUT_LABELS] && !q->hseg) || (x->phot.n && (!back || !rms))
                          ? GPUWS_ERR_OUT_OF_MEMORY
                          : GPUWS_OK;
    tool_band_progress progress = tool_band_progress_start("gpuws sources");
    progress.step = "extraction";
    gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
    mesh_for(a, w, h, &bo.bw, &bo.bh);
    bo.fw = x->back_fw, bo.fh = x->back_fh;
    gpuws_extract_options eo = extract_options(a);
    gpuws_extract_host_options eho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    eho.extract = &eo, eho.mask = scan->mask, eho.segmap = q->hseg, eho.max_device_bytes = a->max_device_bytes;
    eho.progress = tool_label_band, eho.progress_user = &progress;
    eho.background = &bo, eho.back_out = back, eho.rms_out = rms, eho.background_result = &q->br;
    eho.more_contexts = c->ctx + 1, eho.num_more_contexts = c->n - 1;
    size_t rows = 0, bands = 0;
    if (!st && !(st = gpuws_extract_host_bands(ctx, w, h, &eho, &rows, &bands))) { /* a budget below one band */
        char devices[48] = "";
        if (c->n > 1 && bands > 1) snprintf(devices, sizeof devices, " over %zu devices", c->n);
        fprintf(stderr, "gpuws sources: the extraction from host memory, in %zu band%s of up to %zu of %zu rows%s\n",
                bands, bands == 1 ? "" : "s", rows, h, devices);
    }
    const double t0 = tool_now_ms();
    if (!st) st = gpuws_extract_host(ctx, w, h, img->data, &eho, &q->cat);
    t->extract = tool_now_ms() - t0; /* the background's pass included */
    if (!st) t->extract_device = q->cat->ms_device, t->extract_host = q->cat->ms_host;
    if (!st && x->phot.n) {
        const double t1 = tool_now_ms();
        st = phot_measure_host(&x->phot, ctx, w, h, img->data, back, rms, scan->mask, a->max_device_bytes, q->cat,
                               &q->ph);
        t->phot = tool_now_ms() - t1;
    }
    free(pback), free(prms);
    return extract_report(q, a, w, h, st, t) || sources_pending_write(q, a, t);
}

void sources_extract_options(const sources_args *a, size_t w, size_t h, gpuws_extract_options *eo,
                             gpuws_background_options *bo)
{
    *eo = extract_options(a);
    *bo = (gpuws_background_options)GPUWS_BACKGROUND_OPTIONS_INIT;
    mesh_for(a, w, h, &bo->bw, &bo->bh);
    bo->fw = a->x.back_fw, bo->fh = a->x.back_fh;
}

int sources_extract_write(const sources_args *a, const fits_image *img, const float *pixels, gpuws_extract_catalog *cat,
                          int32_t *seg, unsigned staged, phot_table *ph, const gpuws_background_result *br,
                          sources_times *t)
{
    sources_pending *q = calloc(1, sizeof *q);
    if (!q) {
        gpuws_extract_catalog_free(cat), free(seg);
        if (ph) phot_free(ph);
        return tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
    }
    if (ph) q->ph = *ph, memset(ph, 0, sizeof *ph);
    q->ms_wcs = timed_products(&q->p, img, &q->wcs, q->why, sizeof q->why, q->bunit, sizeof q->bunit);
    q->p.image = pixels, q->p.staged = staged;
    q->cat = cat, q->hseg = seg, q->br = *br;
    t->extract_device = cat->ms_device, t->extract_host = cat->ms_host;
    return extract_report(q, a, img->width, img->height, GPUWS_OK, t) || sources_pending_write(q, a, t);
}

/* gpuws_background, then gpuws_extract on the image minus the background, in units of its rms; NaN and infinite
 * pixels are masked in both. later NULL: every step and the outputs here; else *later gets the extraction begun, for
 * sources_pending_extract and sources_pending_write (NULL on failure). */
static int run_extract(const sources_args *a, const fits_image *img, const pixel_scan *scan, const sources_contexts *c,
                       gpuws_stream *stream, sources_times *t, sources_reuse *keep, early_release *early,
                       sources_pending **later)
{
    gpuws_context *ctx = c->ctx[0];
    sources_pending *q;
    if (later) *later = NULL;
    if (extract_from_host(a, ctx, img->width, img->height)) return run_extract_host(a, img, scan, c, t);
    if (extract_begin(a, img, scan, ctx, stream, t, keep, early, &q)) return 1;
    if (later) return *later = q, 0;
    if (sources_pending_extract(q, a, img, t)) return 1;
    return sources_pending_write(q, a, t);
}

/* ---- one image, from its file to its outputs -------------------------------------------------------------------- */

fits_read_request sources_read_request(const sources_args *a) { return (fits_read_request){ a->hdu, a->plane, 1 }; }

/* The pixels scanned and the image checked; 0, or 1 with the reason on stderr. */
static int check_image(const sources_args *a, const fits_image *img, pixel_scan *scan, sources_times *t,
                       sources_reuse *keep)
{
    const double t0 = tool_now_ms();
    if (scan_pixels(a, img, scan, keep)) return 1;
    t->scan = tool_now_ms() - t0;
    return refuse_image(a, img, scan);
}

/* The image's report and its method on the device. */
static int find(const sources_args *a, const fits_image *img, const pixel_scan *scan, const sources_contexts *c,
                gpuws_stream *stream, sources_times *t, sources_reuse *keep, early_release *early,
                sources_pending **later)
{
    gpuws_context *ctx = c->ctx[0];
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    char plane[64] = "";
    if (img->nplanes > 1) snprintf(plane, sizeof plane, " plane %lld of %lld,", img->plane, img->nplanes);
    fprintf(sources_report(a), "%s: HDU %d,%s %zu x %zu pixels (BITPIX %d), %zu blank or NaN, %zu infinite\n", a->image,
            img->hdu, plane, img->width, img->height, img->bitpix, scan->blanks, scan->infinite);
    fprintf(sources_report(a), "device: %s: %s\n",
            k == GPUWS_BACKEND_CUDA     ? "cuda"
            : k == GPUWS_BACKEND_OPENCL ? "opencl"
                                        : "cpu",
            d.name);
    return a->method == METHOD_EXTRACT ? run_extract(a, img, scan, c, stream, t, keep, early, later)
                                       : run_workshop(a, img, c, t);
}

int sources_run_image(const sources_args *a, double start)
{
    sources_times t;
    sources_times_init(&t, start);
    struct stat sb;
    const int regular = stat(a->image, &sb) == 0 && S_ISREG(sb.st_mode);
    if (regular && sb.st_size >= (1 << 26)) fprintf(stderr, "gpuws sources: reading %s...\n", a->image);
    const fits_read_request req = sources_read_request(a);
    fits_reading reading;
    double t0 = tool_now_ms();
    fits_read_start(&reading, a->image, 0, &req);
    sources_device dev; /* not for a file that cannot be read (a missing one, a directory): it would go unused */
    if (regular) sources_device_begin(&dev);
    else memset(&dev, 0, sizeof dev);
    fits_image img;
    char err[4400];
    if (fits_read_finish(&reading, &img, err, sizeof err)) {
        sources_device_abandon(&dev);
        return fprintf(stderr, "gpuws sources: %s\n", err), 1;
    }
    t.read = tool_now_ms() - t0;
    pixel_scan scan = { 0, 0, NULL, 0 };
    sources_contexts c = { { NULL }, 0 };
    int rc = check_image(a, &img, &scan, &t, NULL);
    if (rc) sources_device_abandon(&dev);
    else rc = sources_device_end(&dev, &c, &t);
    early_release early = { &img, &scan.mask, 0, 0 };
    if (!rc) rc = find(a, &img, &scan, &c, NULL, &t, NULL, &early, NULL);
    early_release_end(&early);
    const double t1 = tool_now_ms();
    gpuws_contexts_destroy(c.ctx, c.n);
    t.release_device = tool_now_ms() - t1;
    free(scan.mask);
    fits_image_free(&img);
    if (t.written >= 0) t.release = tool_now_ms() - t.written;
    if (!rc && a->timings) sources_times_print(&t, a->image);
    return rc;
}

int sources_run_read(const sources_args *a, const fits_image *img, const sources_contexts *c, gpuws_stream *stream,
                     sources_times *t, sources_reuse *keep, sources_pending **pending)
{
    pixel_scan scan = { 0, 0, NULL, 0 };
    if (pending) *pending = NULL;
    int rc = check_image(a, img, &scan, t, keep);
    if (!rc) rc = find(a, img, &scan, c, stream, t, keep, NULL, pending);
    if (!scan.kept) free(scan.mask);
    if (pending && *pending) return rc; /* the rest when its outputs are written */
    if (t->written >= 0) t->release = tool_now_ms() - t->written;
    if (!rc && a->timings) sources_times_print(t, a->image);
    return rc;
}
