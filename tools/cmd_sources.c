/* gpuws sources: the workshop's source finding (κ-σ clip → threshold → label → measure) on a FITS image, or on a
 * synthetic sky made on the device (--demo). The outputs are planned before any work and written all or none
 * (tools/output_files.h). */
#include "catalog_csv.h"
#include "commands.h"
#include "fits_io.h"
#include "output_files.h"
#include "png_overlay.h"
#include "sources/sources_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "sources"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: gpuws sources IMAGE.fits [options]\n"
        "       gpuws sources --demo [--size N] [--seed S] [--sources N] [options]\n"
        "  Finds sources the workshop's way: k-sigma clipping of all pixels, a threshold, connected components,\n"
        "  then each component's pixel count, flux (sum), centre of mass and peak.\n"
        "options:\n"
        "  --kappa K              clipping at K clipped stds from the median (default 3)\n"
        "  --threshold S          detect pixels above S x the clipped std (default 5; no median added)\n"
        "  --threshold-abs T      detect pixels above the value T instead (as SExtractor's ABSOLUTE)\n"
        "  --connectivity 4|8     4: edges only, SciPy's default; 8: corners too (default 4)\n"
        "  --catalog OUT.csv      id,x,y,flux,npix,peak sorted by flux (x = column, y = row, 0-based)\n"
        "  --labels OUT.fits      the label image (int32; 0 = background, 1..N in raster order)\n"
        "  --overlay OUT.png      log-scaled image with a circle on every source%s\n"
        "  --demo                 no IMAGE: a synthetic sky made on the device (noise sigma 1e-3, Gaussian beams\n"
        "                         of sigma 1.7 px, peaks log-uniform in 5e-3..1e-1), scored against what was injected\n"
        "  --size N               demo image N x N, N from 16 to 46340 (default 2048); --seed S from 0 to\n"
        "                         2^64 - 1 (default 1); --sources N from 0 to 1000000 (default 300 per 2048^2);\n"
        "                         these three apply to --demo only\n"
        "Numbers are decimal (whole numbers also 1e6 or 10^6), without spaces; each option may be given once.\n"
        "The outputs are written all or none: a regular file (or a symlink's target) is replaced, keeping its\n"
        "permissions; a device or FIFO is written into; a directory, the image, or one file named twice is\n"
        "refused before any work. The device comes from GPUWS_BACKEND / GPUWS_DEVICE (gpuws info lists them).\n"
        "Exit status: 0 done, 1 error (nothing written), 2 bad usage (also: an output is the image or another).\n",
        png_overlay_available() ? "" : " (unavailable: built without libpng)");
}

typedef struct {
    const char *image, *catalog, *labels, *overlay;
    int demo;
    size_t size, nsources;
    int have_nsources;
    uint64_t seed;
    gpuws_sources_options o;
    gpuws_sigma_clip_options clip; /* o.clip points here */
    output_files *outputs;         /* catalog, labels, overlay: planned before any work */
} args;

/* 0: parsed; 1: --help printed; 2: bad usage (message printed). */
static int parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    a->clip = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    a->o.clip = &a->clip;
    a->size = 2048;
    a->seed = 1;
    int have_sigma = 0, have_abs = 0;
    tool_args t = TOOL_ARGS_INIT(CMD);
    const char *demo_only = NULL; /* the first option given that only --demo takes */
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **name = !strcmp(o, "--catalog")   ? &a->catalog
                            : !strcmp(o, "--labels")  ? &a->labels
                            : !strcmp(o, "--overlay") ? &a->overlay
                                                      : NULL;
        uint64_t u;
        double d;
        if (o[0] == '-' && o[1] && !tool_is_signed_number(o) && tool_once(&t, o)) return 2;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "--demo")) {
            a->demo = 1;
        } else if (!strcmp(o, "--kappa")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return fprintf(stderr, "gpuws sources: --kappa must be > 0\n"), 2;
            a->clip.kappa = d, i++;
        } else if (!strcmp(o, "--threshold")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return fprintf(stderr, "gpuws sources: --threshold must be > 0 (stds)\n"), 2;
            a->o.threshold_sigma = d, have_sigma = 1, i++;
        } else if (!strcmp(o, "--threshold-abs")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            a->o.threshold_abs = d, have_abs = 1, i++;
        } else if (!strcmp(o, "--connectivity")) {
            if (!v || (strcmp(v, "4") && strcmp(v, "8")))
                return fprintf(stderr, "gpuws sources: --connectivity is 4 or 8\n"), 2;
            a->o.connectivity = v[0] - '0', i++;
        } else if (name) {
            if (tool_name(&t, o, v, "a file name")) return 2;
            *name = v, i++;
        } else if (!strcmp(o, "--size")) {
            if (tool_count(&t, o, v, 16, 46340, NULL, &u)) return 2; /* 46340^2 < 2^31: labels are int32 */
            a->size = (size_t)u, i++, demo_only = demo_only ? demo_only : o;
        } else if (!strcmp(o, "--seed")) {
            if (tool_count(&t, o, v, 0, UINT64_MAX, NULL, &u)) return 2;
            a->seed = u, i++, demo_only = demo_only ? demo_only : o;
        } else if (!strcmp(o, "--sources")) {
            if (tool_count(&t, o, v, 0, 1000000, NULL, &u)) return 2;
            a->nsources = (size_t)u, a->have_nsources = 1, i++, demo_only = demo_only ? demo_only : o;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "gpuws sources: unknown or incomplete option '%s'\n", o);
            usage(stderr);
            return 2;
        } else if (a->image) {
            fprintf(stderr, "gpuws sources: one image at a time ('%s' and '%s')\n", a->image, o);
            return 2;
        } else if (!*o) {
            fprintf(stderr, "gpuws sources: the IMAGE file name is empty ('')\n");
            return 2;
        } else {
            a->image = o;
        }
    }
    if (have_sigma && have_abs)
        return fprintf(stderr, "gpuws sources: --threshold and --threshold-abs exclude each other\n"), 2;
    if (a->demo == !!a->image) {
        fprintf(stderr, "gpuws sources: %s\n", a->demo ? "--demo takes no IMAGE" : "no IMAGE (or --demo) given");
        usage(stderr);
        return 2;
    }
    if (demo_only && !a->demo) return fprintf(stderr, "gpuws sources: %s applies to --demo only\n", demo_only), 2;
    a->o.want_labels = a->labels != NULL;
    return 0;
}

static void print_result(const gpuws_catalog *cat, const args *a)
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

/* Writes every requested output into its staging file, then puts them all in place; on any failure none. */
static int write_outputs(const args *a, const gpuws_catalog *cat, const float *image, size_t w, size_t h)
{
    const char *finals[3] = { a->catalog, a->labels, a->overlay };
    char err[4400] = "";
    int rc = 0;
    for (size_t k = 0; k < 3 && !rc; k++) {
        if (!finals[k]) continue;
        const char *path = output_files_stage(a->outputs, k, err, sizeof err);
        if (path && w * h >= ((size_t)1 << 24)) /* seconds */
            fprintf(stderr, "gpuws sources: writing %s...\n", finals[k]);
        if (!path) rc = -1;
        else if (k == 0) rc = catalog_csv_write(path, cat->sources, cat->num_sources, err, sizeof err);
        else if (k == 1) rc = fits_write_image(path, FITS_I32, cat->labels, w, h, err, sizeof err);
        else
            rc =
                png_overlay_write(path, image, w, h, cat->clip.median, cat->sources, cat->num_sources, err, sizeof err);
        if (rc) output_files_reword(a->outputs, k, err, sizeof err); /* the user's name, not the staged one */
    }
    if (!rc) rc = output_files_commit(a->outputs, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpuws sources: %s\n", err);
        return 1;
    }
    for (int k = 0; k < 3; k++)
        if (finals[k]) printf("wrote %s\n", finals[k]);
    return 0;
}

static int run_image(const args *a)
{
    fits_image img;
    char err[4400];
    struct stat sb;
    if (stat(a->image, &sb) == 0 && sb.st_size >= (1 << 26))
        fprintf(stderr, "gpuws sources: reading %s...\n", a->image);
    if (fits_read_image(a->image, 0, &img, err, sizeof err)) return fprintf(stderr, "gpuws sources: %s\n", err), 1;
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
    gpuws_context *ctx;
    if (tool_context(CMD, &ctx)) {
        fits_image_free(&img);
        return 1;
    }
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    printf("%s: HDU %d, %zu x %zu pixels (BITPIX %d), %zu blank or NaN, %zu infinite\n", a->image, img.hdu, img.width,
           img.height, img.bitpix, blanks, infinite);
    printf("device: %s: %s\n", k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu", d.name);
    gpuws_catalog *cat;
    gpuws_status st = gpuws_find_sources(ctx, px, img.width, img.height, &a->o, &cat);
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_result(cat, a);
        print_brightest(cat);
        rc = write_outputs(a, cat, px, img.width, img.height);
    }
    gpuws_catalog_free(cat);
    gpuws_context_destroy(ctx);
    fits_image_free(&img);
    return rc;
}

static int run_demo(const args *a)
{
    gpuws_sky_params p = gpuws_sky_defaults(a->size, a->size, a->seed);
    if (a->have_nsources) p.num_sources = a->nsources;
    gpuws_sky_source *src = malloc((p.num_sources + 1) * sizeof *src);
    if (!src) return fprintf(stderr, "gpuws sources: out of memory\n"), 1;
    gpuws_sky_sources(&p, src);
    gpuws_context *ctx;
    if (tool_context(CMD, &ctx)) return free(src), 1;
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    printf("synthetic sky %zu x %zu (seed %llu): %zu point sources, peaks %g..%g Jy/beam log-uniform, noise sigma %g, "
           "beam sigma %g px\n",
           p.width, p.height, (unsigned long long)p.seed, p.num_sources, p.peak_min, p.peak_max, p.noise_sigma,
           p.beam_sigma);
    printf("device: %s: %s\n", k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu", d.name);
    const size_t n = p.width * p.height;
    gpuws_buffer *img = NULL;
    gpuws_catalog *cat = NULL;
    float *host = NULL;
    gpuws_status st = gpuws_buffer_create(ctx, n * sizeof(float), &img);
    if (!st) st = gpuws__sky_generate(NULL, &p, src, img);
    if (!st) st = gpuws__find_sources_device(NULL, p.width, p.height, img, &a->o, &cat);
    if (!st && a->overlay) { /* only the preview needs the pixels on the host */
        if (!(host = malloc(n * sizeof *host))) st = GPUWS_ERR_OUT_OF_MEMORY;
        else st = gpuws_buffer_read(img, 0, host, n * sizeof *host);
    }
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_result(cat, a);
        gpuws_sky_match m;
        const double radius = 2.0, blend = 4 * p.beam_sigma;
        if (gpuws_sky_match_catalog(src, p.num_sources, cat->sources, cat->num_sources, radius, cat->threshold, blend,
                                    &m)) {
            rc = tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
        } else {
            printf("recovered %zu of %zu injected sources within %g px (position error rms %.3f px, max %.3f px)\n",
                   m.recovered, m.injected, radius, m.rms_error, m.max_error);
            printf(
                "missed: %zu with a peak below the threshold, %zu within %.1f px of another source (merged islands), "
                "%zu others (faint ones the noise pulled under the threshold)\n",
                m.missed_faint, m.missed_blended, blend, m.missed_other);
            printf(
                "other detections: %zu fragments near injected sources (islands of faint sources broken by the noise), "
                "%zu spurious (noise above the threshold)\n",
                m.fragments, m.spurious);
            rc = write_outputs(a, cat, host, p.width, p.height);
        }
    }
    free(host);
    gpuws_catalog_free(cat);
    gpuws_buffer_destroy(img);
    gpuws_context_destroy(ctx);
    free(src);
    return rc;
}

static int cmd_sources(int argc, char **argv)
{
    args a;
    int r = parse(argc, argv, &a);
    if (r == 1) return 0;
    if (r) return r;
    if (a.overlay && !png_overlay_available()) {
        fprintf(stderr, "gpuws sources: --overlay is unavailable: gpuws was built without libpng\n");
        return 1;
    }
    /* the outputs first: a destination that cannot be written, or that is the image, fails before any work */
    const char *outs[3] = { a.catalog, a.labels, a.overlay }, *opts[3] = { "--catalog", "--labels", "--overlay" };
    char err[4400];
    a.outputs = output_files_prepare(&a.image, 1, outs, opts, 3, &r, err, sizeof err);
    if (!a.outputs) return fprintf(stderr, "gpuws sources: %s\n", err), r;
    r = a.demo ? run_demo(&a) : run_image(&a);
    output_files_destroy(a.outputs);
    return r;
}

GPUWS_COMMAND("sources", "find sources in a FITS image, or in a synthetic sky (--demo)", cmd_sources)
