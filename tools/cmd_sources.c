/* gpuws sources: the workshop's source finding (κ-σ clip → threshold → label → measure) or SExtractor's extraction
 * on a FITS image, on many, or on a synthetic sky made on the device (--demo). The outputs are planned before any
 * work and written all or none (tools/output_files.h). The parts: tools/sources.h. */
#include "parallel.h"
#include "png_overlay.h"
#include "sources.h"

#include <stdlib.h>
#include <string.h>

static int run_demo(const sources_args *a)
{
    gpuws_sky_params p = gpuws_sky_defaults(a->size, a->size, a->seed);
    if (a->have_nsources) p.num_sources = a->nsources;
    gpuws_sky_source *src = malloc((p.num_sources + 1) * sizeof *src);
    if (!src) return fprintf(stderr, "gpuws sources: out of memory\n"), 1;
    gpuws_sky_sources(&p, src);
    sources_contexts c = { { NULL }, 0 };
    gpuws_status st = gpuws_contexts_create(NULL, sizeof c.ctx / sizeof *c.ctx, c.ctx, &c.n);
    if (st) return free(src), tool_fail(CMD, st);
    gpuws_context *ctx = c.ctx[0];
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
    const int on_host = sources_use_host(a, ctx, p.width, p.height);
    st = gpuws_buffer_create(ctx, n * sizeof(float), &img);
    if (!st) st = gpuws__sky_generate(NULL, &p, src, img);
    if (!st && !on_host) st = gpuws__find_sources_device(NULL, p.width, p.height, img, &a->o, &cat);
    if (!st && (on_host || a->out[OUT_OVERLAY])) { /* the host pipeline and the preview need the pixels there */
        if (!(host = malloc(n * sizeof *host))) st = GPUWS_ERR_OUT_OF_MEMORY;
        else st = gpuws_buffer_read(img, 0, host, n * sizeof *host);
    }
    if (!st && on_host) {
        gpuws_buffer_destroy(img), img = NULL; /* the labelling's device memory is the budget's alone */
        st = sources_find_host(a, &c, host, p.width, p.height, &cat);
    }
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        sources_print_workshop(cat, a, on_host);
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
            products out;
            memset(&out, 0, sizeof out);
            out.w = p.width, out.h = p.height, out.image = host, out.no_wcs = "a synthetic sky";
            workshop_title(&out, a, cat->num_sources);
            rc = workshop_products(&out, cat, "") ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY)
                                                  : sources_write_outputs(a, &out, NULL);
            products_free(&out);
        }
    }
    free(host);
    gpuws_catalog_free(cat);
    gpuws_buffer_destroy(img);
    gpuws_contexts_destroy(c.ctx, c.n);
    free(src);
    return rc;
}

static int cmd_sources(int argc, char **argv)
{
    const double start = tool_now_ms();
    if (sources_mpi_size() > 1) return sources_run_mpi(argc, argv, start); /* one rank of several */
    sources_args a;
    int r = sources_parse(argc, argv, &a);
    if (r) {
        sources_args_free(&a);
        return r == 1 ? 0 : r;
    }
    if ((a.out[OUT_OVERLAY] || a.write[OUT_OVERLAY]) && !png_overlay_available()) {
        sources_args_free(&a);
        fprintf(stderr, "gpuws sources: --overlay is unavailable: gpuws was built without libpng\n");
        return 1;
    }
    if (a.outdir) {
        r = sources_run_many(&a, start, NULL);
        sources_args_free(&a);
        return r;
    }
    /* the outputs first: a destination that cannot be written, or that is the image, fails before any work */
    char err[4400];
    const char *inputs[2] = { a.image, a.filter_file };
    a.outputs = output_files_prepare(inputs, 2, a.out, sources_out_options, OUT_COUNT, &r, err, sizeof err);
    if (!a.outputs) {
        sources_args_free(&a);
        return fprintf(stderr, "gpuws sources: %s\n", err), r;
    }
    r = a.demo ? run_demo(&a) : sources_run_image(&a, start);
    output_files_destroy(a.outputs);
    sources_args_free(&a);
    return r;
}

GPUWS_COMMAND("sources", "find sources in a FITS image, or in a synthetic sky (--demo)", cmd_sources)
