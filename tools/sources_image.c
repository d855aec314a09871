/* gpuws sources on one image: the file read, checked, then the extraction or the workshop's pipeline, and the
 * outputs. */
#include "sources.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sources_print_workshop(const gpuws_catalog *cat, const sources_args *a)
{
    const gpuws_sigma_clip_result *c = &cat->clip;
    printf("sigma clipping (kappa %g): median %.6g, mean %.6g, std %.6g of %zu pixels after %d iteration%s%s\n",
           a->clip.kappa, c->median, c->mean, c->std, c->count, c->iterations, c->iterations == 1 ? "" : "s",
           c->converged ? " (converged)" : " (NOT converged: max_iterations reached)");
    if (isnan(a->o.threshold_abs))
        printf("threshold: %.6g (%g x clipped std; no median added, as in the workshop)\n", cat->threshold,
               a->o.threshold_sigma);
    else printf("threshold: %.6g (absolute)\n", cat->threshold);
    printf("sources: %zu (%d-connectivity)\n", cat->num_sources, a->o.connectivity);
    printf(
        "times (ms, device events): upload %.3f  clip %.3f  threshold %.3f  label %.3f  measure %.3f  download %.3f  "
        "total %.3f\n",
        cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure, cat->ms_download,
        cat->ms_total);
}

static void print_brightest(const gpuws_catalog *cat)
{
    size_t *order = catalog_order_by_flux(cat->sources, cat->num_sources);
    if (!order || !cat->num_sources) {
        free(order);
        return;
    }
    const size_t show = cat->num_sources < 5 ? cat->num_sources : 5;
    printf("brightest %zu:\n  %6s %10s %10s %12s %6s %12s\n", show, "id", "x", "y", "flux", "npix", "peak");
    for (size_t k = 0; k < show; k++) {
        const gpuws_source *s = &cat->sources[order[k]];
        printf("  %6lld %10.3f %10.3f %12.6g %6lld %12.6g\n", (long long)s->id, s->x, s->y, s->flux, (long long)s->npix,
               s->peak);
    }
    free(order);
}

static int run_workshop(const sources_args *a, const fits_image *img, gpuws_context *ctx)
{
    char why[300] = "", bunit[72];
    sky_wcs *wcs;
    products p;
    products_from_image(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
    p.image = img->data;
    gpuws_catalog *cat;
    gpuws_status st = gpuws_find_sources(ctx, img->data, img->width, img->height, &a->o, &cat);
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        sources_print_workshop(cat, a);
        print_brightest(cat);
        workshop_title(&p, a, cat->num_sources);
        rc = workshop_products(&p, cat, bunit) ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : sources_write_outputs(a, &p);
    }
    gpuws_catalog_free(cat);
    products_free(&p);
    sky_wcs_destroy(wcs);
    return rc;
}

static int run_extract(const sources_args *a, const fits_image *img, gpuws_context *ctx);

/* The background mesh for a w x h image: --back-size, or the default cut to the image (one mesh, as SEP makes). */
static void mesh_for(const sources_args *a, size_t w, size_t h, int *bw, int *bh)
{
    *bw = a->x.back_w, *bh = a->x.back_h;
    if (!a->back_size_given && (size_t)*bw > w) *bw = (int)w;
    if (!a->back_size_given && (size_t)*bh > h) *bh = (int)h;
}

int sources_run_image(const sources_args *a, gpuws_context *shared)
{
    fits_image img;
    char err[4400];
    struct stat sb;
    if (stat(a->image, &sb) == 0 && sb.st_size >= (1 << 26))
        fprintf(stderr, "gpuws sources: reading %s...\n", a->image);
    const fits_read_request req = { a->hdu, a->plane, 1 };
    if (fits_read_image_at(a->image, 0, &req, &img, err, sizeof err))
        return fprintf(stderr, "gpuws sources: %s\n", err), 1;
    const float *px = img.data;
    const size_t n = img.width * img.height;
    size_t blanks = 0, infinite = 0;
    for (size_t i = 0; i < n; i++) /* != 0: glibc's isinf(-inf) is -1 */
        blanks += isnan(px[i]) != 0, infinite += isinf(px[i]) != 0;
    if (blanks + infinite == n) { /* no statistics exist: say which kind of pixel filled the image */
        fprintf(stderr, "gpuws sources: %s: every pixel of the %zu x %zu image (HDU %d) is ", a->image, img.width,
                img.height, img.hdu);
        if (!infinite) fprintf(stderr, "blank or NaN\n");
        else if (!blanks) fprintf(stderr, "infinite (+inf or -inf)\n");
        else fprintf(stderr, "blank, NaN or infinite: %zu blank or NaN, %zu infinite\n", blanks, infinite);
        fits_image_free(&img);
        return 1;
    }
    if (a->method == METHOD_EXTRACT && ((size_t)a->x.back_w > img.width || (size_t)a->x.back_h > img.height) &&
        a->back_size_given) {
        fprintf(stderr,
                "gpuws sources: %s: the background mesh (--back-size %d,%d) is larger than the %zu x %zu image\n",
                a->image, a->x.back_w, a->x.back_h, img.width, img.height);
        fits_image_free(&img);
        return 1;
    }
    gpuws_context *ctx = shared;
    if (!ctx && tool_context(CMD, &ctx)) {
        fits_image_free(&img);
        return 1;
    }
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    char plane[64] = "";
    if (img.nplanes > 1) snprintf(plane, sizeof plane, " plane %lld of %lld,", img.plane, img.nplanes);
    printf("%s: HDU %d,%s %zu x %zu pixels (BITPIX %d), %zu blank or NaN, %zu infinite\n", a->image, img.hdu, plane,
           img.width, img.height, img.bitpix, blanks, infinite);
    printf("device: %s: %s\n", k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu", d.name);
    const int rc = a->method == METHOD_EXTRACT ? run_extract(a, &img, ctx) : run_workshop(a, &img, ctx);
    if (!shared) gpuws_context_destroy(ctx);
    fits_image_free(&img);
    return rc;
}

static void print_extract(const sources_args *a, size_t w, size_t h, const gpuws_background_result *br,
                          const gpuws_extract_catalog *cat)
{
    const extract_args *x = &a->x;
    int bw, bh;
    mesh_for(a, w, h, &bw, &bh);
    printf("background: global %.6g, rms %.6g (%zu x %zu meshes of %d x %d pixels, filter %d x %d; %zu meshes filled "
           "from their neighbours)\n",
           br->globalback, br->globalrms, br->nx, br->ny, bw, bh, x->back_fw, x->back_fh, br->bad_meshes);
    char filter[64];
    if (x->filter_none) snprintf(filter, sizeof filter, "none");
    else if (!x->filter) snprintf(filter, sizeof filter, "SEP's default 3 x 3");
    else snprintf(filter, sizeof filter, "%d x %d kernel", x->filter_w, x->filter_h);
    printf("objects: %zu (detect-thresh %g sigma, minarea %d, filter %s, deblend %d levels, mincont %g, ",
           cat->num_objects, x->detect_thresh, x->minarea, filter, x->deblend_nthresh, x->deblend_mincont);
    if (x->clean) printf("clean-param %g, ", x->clean_param);
    else printf("no cleaning, ");
    printf("%d-connectivity)\n", a->connectivity);
    printf("times (ms): extraction on the device %.3f, on the host %.3f\n", cat->ms_device, cat->ms_host);
    const size_t show = cat->num_objects < 5 ? cat->num_objects : 5;
    if (!show) return;
    printf("first %zu:\n  %6s %10s %10s %12s %12s %8s %8s %6s\n", show, "id", "x", "y", "flux", "fluxerr", "a", "b",
           "flag");
    for (size_t k = 0; k < show; k++) {
        const gpuws_object *o = &cat->objects[k];
        printf("  %6zu %10.3f %10.3f %12.6g %12.6g %8.3f %8.3f %6d\n", k + 1, o->x, o->y, o->flux, o->fluxerr, o->a,
               o->b, o->flag);
    }
}

/* gpuws_background, then gpuws_extract on the image minus the background, in units of its rms; NaN and infinite
 * pixels are masked in both. */
static int run_extract(const sources_args *a, const fits_image *img, gpuws_context *ctx)
{
    const size_t w = img->width, h = img->height, n = w * h;
    const float *px = img->data;
    const extract_args *x = &a->x;
    char why[300] = "", bunit[72];
    sky_wcs *wcs;
    products p;
    products_from_image(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
    p.image = px;
    size_t masked = 0;
    for (size_t i = 0; i < n; i++) masked += !isfinite(px[i]);
    gpuws_buffer *image = NULL, *mask = NULL, *back = NULL, *rms = NULL, *seg = NULL;
    unsigned char *hmask = masked ? malloc(n) : NULL;
    float *hback = a->out[OUT_BACKGROUND] ? malloc(n * sizeof *hback) : NULL;
    float *hrms = a->out[OUT_RMS] ? malloc(n * sizeof *hrms) : NULL;
    int32_t *hseg = a->out[OUT_LABELS] ? malloc(n * sizeof *hseg) : NULL;
    gpuws_extract_catalog *cat = NULL;
    gpuws_background_result br;
    gpuws_status st = (masked && !hmask) || (a->out[OUT_BACKGROUND] && !hback) || (a->out[OUT_RMS] && !hrms) ||
                              (a->out[OUT_LABELS] && !hseg)
                          ? GPUWS_ERR_OUT_OF_MEMORY
                          : GPUWS_OK;
    for (size_t i = 0; hmask && i < n; i++) hmask[i] = !isfinite(px[i]);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &image);
    if (!st) st = gpuws_buffer_write(image, 0, px, n * sizeof(float));
    if (!st && hmask) st = gpuws_buffer_create(ctx, n, &mask);
    if (!st && hmask) st = gpuws_buffer_write(mask, 0, hmask, n);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &back);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &rms);
    if (!st && hseg) st = gpuws_buffer_create(ctx, n * sizeof(int32_t), &seg);
    if (!st) {
        gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
        mesh_for(a, w, h, &bo.bw, &bo.bh);
        bo.fw = x->back_fw, bo.fh = x->back_fh, bo.mask = mask;
        st = gpuws_background(NULL, GPUWS_F32, w, h, image, &bo, back, rms, &br);
    }
    if (!st) {
        gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
        eo.thresh = x->detect_thresh, eo.back = back, eo.rms = rms, eo.mask = mask, eo.minarea = x->minarea;
        eo.filter_type = x->filter_none ? GPUWS_FILTER_NONE : GPUWS_FILTER_MATCHED;
        eo.filter = x->filter, eo.filter_w = x->filter_w, eo.filter_h = x->filter_h;
        eo.connectivity = a->connectivity, eo.deblend_nthresh = x->deblend_nthresh;
        eo.deblend_cont = x->deblend_mincont, eo.clean = x->clean, eo.clean_param = x->clean_param, eo.segmap = seg;
        st = gpuws_extract(NULL, w, h, image, &eo, &cat);
    }
    if (!st && hback) st = gpuws_buffer_read(back, 0, hback, n * sizeof *hback);
    if (!st && hrms) st = gpuws_buffer_read(rms, 0, hrms, n * sizeof *hrms);
    if (!st && hseg) st = gpuws_buffer_read(seg, 0, hseg, n * sizeof *hseg);
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_extract(a, w, h, &br, cat);
        p.back = hback, p.rms = hrms, p.labels = hseg, p.lo = br.globalback;
        snprintf(p.title, sizeof p.title,
                 "gpuws sources --method extract: %zu object%s in %s; ellipses at 3 a x 3 b, SEP's isophotal semi-axes "
                 "times 3",
                 cat->num_objects, cat->num_objects == 1 ? "" : "s", a->image);
        rc = extract_products(&p, cat, bunit) ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : sources_write_outputs(a, &p);
    }
    gpuws_extract_catalog_free(cat);
    gpuws_buffer_destroy(image), gpuws_buffer_destroy(mask), gpuws_buffer_destroy(back), gpuws_buffer_destroy(rms);
    gpuws_buffer_destroy(seg);
    free(hmask), free(hback), free(hrms), free(hseg);
    products_free(&p);
    sky_wcs_destroy(wcs);
    return rc;
}
