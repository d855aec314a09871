/* extract's cases (kernels/common/cases.h): gpuws_extract with SEP's defaults on an optical sky (level 100 with a
 * gradient, Gaussian noise σ = 5, round and elliptical Gaussian sources, NaN columns on the left edge), its
 * background and rms maps given (the level and σ), and the segmentation map;
 * checked against the reference: the same catalogue bit for bit and the same map (docs/algorithms/extract.md says
 * why every backend gives exactly the reference's). Sizes: tiny 96x64 (the fault
 * suite fails each of its host allocations in turn), small 1000x700, default 2048², large 8192². */
#include "common/cases.h"
#include "extract/extract_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t w, h, n;
    gpuws_extract_options o;
    gpuws_extract_catalog *want, *got;
    int32_t *want_seg;
    gpuws_buffer *x, *back, *rms, *seg;
} ex_state;

void gpuws__case_extract_sky(size_t w, size_t h, uint64_t seed, size_t nan_cols, float *x, float *back, float *rms)
{
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++) {
            const double u1 = bench_uniform(&seed), u2 = bench_uniform(&seed);
            const double g = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
            back[r * w + c] = (float)(100.0 + 0.01 * (double)c + 0.02 * (double)r);
            rms[r * w + c] = 5.0f;
            x[r * w + c] = back[r * w + c] + (float)(5.0 * g);
        }
    const size_t nsrc = w * h / 1500 + 1;
    for (size_t k = 0; k < nsrc; k++) {
        const double sr = bench_uniform(&seed) * (double)h, sc = bench_uniform(&seed) * (double)w;
        const double amp = 15.0 + 800.0 * bench_uniform(&seed) * bench_uniform(&seed);
        const double sa = 1.0 + 3.0 * bench_uniform(&seed), sb = sa * (0.3 + 0.7 * bench_uniform(&seed));
        const double t = 3.14159 * bench_uniform(&seed), ct = cos(t), st = sin(t);
        for (long r = (long)sr - 15; r <= (long)sr + 15; r++)
            for (long c = (long)sc - 15; c <= (long)sc + 15; c++) {
                if (r < 0 || c < 0 || r >= (long)h || c >= (long)w) continue;
                const double dy = (double)r - sr, dx = (double)c - sc, u = dx * ct + dy * st, v = -dx * st + dy * ct;
                x[r * w + c] += (float)(amp * exp(-0.5 * (u * u / (sa * sa) + v * v / (sb * sb))));
            }
    }
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < nan_cols && c < w; c++) x[r * w + c] = NAN;
}

static void ex_teardown(void *p)
{
    ex_state *s = p;
    gpuws_extract_catalog_free(s->want);
    gpuws_extract_catalog_free(s->got);
    free(s->want_seg);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->back);
    gpuws_buffer_destroy(s->rms);
    gpuws_buffer_destroy(s->seg);
    free(s);
}

/* The reference: the device steps' scalar version and the host steps, as the CPU backend runs them. */
static gpuws_status ex_reference(ex_state *s, const float *x, const float *back, const float *rms)
{
    gpuws__extract_params p;
    gpuws__extract_pixels px;
    memset(&px, 0, sizeof px);
    gpuws_status st = gpuws__extract_resolve(&s->o, s->w, s->h, s->rms != NULL, "extract", &p);
    if (!st) st = gpuws_extract_ref_pixels(&p, x, back, rms, NULL, &px);
    int32_t *obj_of = NULL;
    if (!st && !(obj_of = malloc((px.n ? px.n : 1) * sizeof *obj_of))) st = GPUWS_ERR_OUT_OF_MEMORY;
    if (!st) st = gpuws__extract_objects(&p, &px, &s->want, obj_of);
    if (!st && !(s->want_seg = calloc(s->n, sizeof *s->want_seg))) st = GPUWS_ERR_OUT_OF_MEMORY;
    for (size_t r = 0; !st && r < px.n; r++) s->want_seg[px.idx[r] & 0x7fffffffu] = obj_of[r];
    free(obj_of);
    gpuws__extract_params_free(&p);
    gpuws__extract_pixels_free(&px);
    return st;
}

static gpuws_status ex_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    ex_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->w = gpuws__case_pick(size, 96, 1000, 2048, 8192);
    s->h = gpuws__case_pick(size, 64, 700, 2048, 8192);
    s->n = s->w * s->h;
    const gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    s->o = o;
    float *x = malloc(s->n * sizeof *x), *back = malloc(s->n * sizeof *back), *rms = malloc(s->n * sizeof *rms);
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY;
    if (x && back && rms && (gpuws__case_extract_sky(s->w, s->h, 20261126, 3, x, back, rms), true) &&
        !(st = gpuws__case_upload(ctx, x, s->n * sizeof *x, &s->x)) &&
        !(st = gpuws__case_upload(ctx, back, s->n * sizeof *back, &s->back)) &&
        !(st = gpuws__case_upload(ctx, rms, s->n * sizeof *rms, &s->rms)) &&
        !(st = gpuws_buffer_create(ctx, s->n * sizeof(int32_t), &s->seg)))
        st = ex_reference(s, x, back, rms);
    free(x);
    free(back);
    free(rms);
    if (st) return st;
    s->o.back = s->back;
    s->o.rms = s->rms;
    s->o.segmap = s->seg;
    /* image, back and rms read twice (prep; the filter's window mostly from cache), the three maps written and
     * read, the mask and labels; the matched filter does ~5 operations per kernel value, 9 values per pixel */
    c->bytes = (double)s->n * (3 * 4 + 3 * 4 * 2 + 1 + 4 * 2 + 4);
    c->flops = 60.0 * (double)s->n;
    c->flop_type = BENCH_FLOPS_F32;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu SEP defaults", s->w, s->h);
    return GPUWS_OK;
}

static gpuws_status ex_run(void *p, gpuws_stream *st)
{
    ex_state *s = p;
    gpuws_extract_catalog_free(s->got);
    s->got = NULL;
    return gpuws_extract(st, s->w, s->h, s->x, &s->o, &s->got);
}

static bool ex_check(void *p, char *msg, size_t n)
{
    const ex_state *s = p;
    if (!s->got) {
        snprintf(msg, n, "no catalogue");
        return false;
    }
    if (s->got->num_objects != s->want->num_objects) {
        snprintf(msg, n, "%zu objects; reference %zu", s->got->num_objects, s->want->num_objects);
        return false;
    }
    for (size_t i = 0; i < s->want->num_objects; i++) {
        gpuws_object a = s->got->objects[i], b = s->want->objects[i];
        if (memcmp(&a, &b, sizeof a)) {
            snprintf(msg, n, "object %zu: (%.9g, %.9g) npix %lld flux %.9g; reference (%.9g, %.9g) npix %lld flux %.9g",
                     i, a.x, a.y, (long long)a.npix, a.flux, b.x, b.y, (long long)b.npix, b.flux);
            return false;
        }
    }
    int32_t *seg = NULL;
    bool ok = gpuws__case_read(s->seg, (void **)&seg, s->n * sizeof(int32_t), msg, n);
    for (size_t i = 0; ok && i < s->n; i++)
        if (seg[i] != s->want_seg[i]) {
            snprintf(msg, n, "segmap pixel %zu (row %zu, col %zu): %d; reference %d", i, i / s->w, i % s->w, seg[i],
                     s->want_seg[i]);
            ok = false;
        }
    free(seg);
    return ok;
}

static size_t ex_outputs(void *p, bench_output *out)
{
    ex_state *s = p;
    out[0] = (bench_output){ s->seg, NULL, s->n * sizeof(int32_t) };
    return 1;
}

static const gpuws__case w_extract = { { "extract", "f32", false, ex_setup, ex_run, ex_check, ex_teardown },
                                       ex_outputs,
                                       false };
GPUWS_CASE(w_extract)
