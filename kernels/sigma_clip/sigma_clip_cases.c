/* sigma_clip's cases (kernels/common/cases.h): a synthetic radio sky (Gaussian noise plus point sources), clipped
 * at 3σ; the result within the bounds of tests/test_sigma_clip.c. The CuPy peer script uses the same
 * algorithm/variant names. */
#include "common/cases.h"
#include "sigma_clip/sigma_clip_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U 0x1p-53

typedef struct {
    gpuws__case_sky_input in;
    gpuws_sigma_clip_result want, got;
} sky_state;

static void sky_teardown(void *p)
{
    sky_state *s = p;
    gpuws__case_sky_input_free(&s->in);
    free(s);
}

static gpuws_status sky_setup(gpuws_context *ctx, bench_size size, void **state, gpuws__case_source *src)
{
    sky_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    return gpuws__case_sky_input_make(ctx, size, &s->in, src);
}

static gpuws_status clip_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    gpuws__case_source src[GPUWS__CASE_SKY_SOURCES];
    gpuws_status st = sky_setup(ctx, size, state, src);
    if (st) return st;
    sky_state *s = *state;
    if ((st = gpuws_sigma_clip_ref(s->in.hx, s->in.n, 3.0, 100, &s->want))) return st;
    /* the floor of any method that looks at every value once per pass: one read per pass; per value and pass a
     * comparison, a subtraction, an add and an FMA */
    c->bytes = (double)s->want.iterations * (double)s->in.n * sizeof(float);
    c->flops = (double)s->want.iterations * (double)s->in.n * 4.0;
    char what[40];
    snprintf(what, sizeof what, "f32, %d passes", s->want.iterations);
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu %s", s->in.side, s->in.side, what);
    return GPUWS_OK;
}

static gpuws_status clip_run(void *p, gpuws_stream *st)
{
    sky_state *s = p;
    const gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    return gpuws_sigma_clip(st, s->in.n, s->in.x, &o, &s->got);
}

static bool clip_check(void *p, char *msg, size_t n)
{
    const sky_state *s = p;
    const gpuws_sigma_clip_result *g = &s->got, *w = &s->want;
    double mx = 0, md = 0;
    for (size_t i = 0; i < s->in.n; i++) {
        mx = fmax(mx, fabs((double)s->in.hx[i]));
        md = fmax(md, fabs((double)s->in.hx[i] - w->mean));
    }
    const double mean_tol = 4.0 * (double)s->in.n * U * mx, std_tol = 4.0 * (double)s->in.n * U * md * md / w->std;
    if (g->count != w->count || g->iterations != w->iterations || g->converged != w->converged ||
        g->median != w->median || !(fabs(g->mean - w->mean) <= mean_tol) || !(fabs(g->std - w->std) <= std_tol)) {
        snprintf(
            msg, n, "count %zu median %.9g mean %.9g std %.9g after %d passes; reference %zu %.9g %.9g %.9g after %d",
            g->count, g->median, g->mean, g->std, g->iterations, w->count, w->median, w->mean, w->std, w->iterations);
        return false;
    }
    return true;
}

static size_t clip_outputs(void *p, bench_output *out)
{
    sky_state *s = p;
    out[0] = (bench_output){ NULL, &s->got, sizeof s->got };
    return 1;
}

static const gpuws__case w_sigma_clip = {
    { "sigma_clip", "f32", false, clip_setup, clip_run, clip_check, sky_teardown }, clip_outputs, false
};
GPUWS_CASE(w_sigma_clip)
