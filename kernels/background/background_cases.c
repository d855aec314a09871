/* background's cases (kernels/common/cases.h): an optical sky (level 100 with a gradient, Gaussian noise σ = 5,
 * Gaussian sources, NaN columns on the left edge), its sides no multiple of the 64-pixel mesh; checked against the
 * reference bit for bit (docs/algorithms/background.md: every backend adds in the same order, and none fuses). */
#include "common/cases.h"
#include "background/background_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_dtype dtype;
    size_t w, h, n;
    float *hx, *want_back, *want_rms;
    gpuws_background_result want;
    gpuws_background_result got;
    gpuws_buffer *x, *back, *rms;
} bg_state;

/* The sky of the header comment (tests/test_background.c and tests/sep/compare_background.py make the same kind). */
static float *bg_sky(size_t w, size_t h, uint64_t seed)
{
    float *x = malloc(w * h * sizeof *x);
    if (!x) return NULL;
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++) {
            const double u1 = bench_uniform(&seed), u2 = bench_uniform(&seed);
            const double g = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
            x[r * w + c] = (float)(100.0 + 0.01 * (double)c + 0.02 * (double)r + 5.0 * g);
        }
    const size_t nsrc = w * h / 2000 + 1;
    for (size_t k = 0; k < nsrc; k++) {
        const size_t sr = bench_splitmix(&seed) % h, sc = bench_splitmix(&seed) % w;
        const double amp = 20.0 + 500.0 * bench_uniform(&seed);
        for (size_t r = sr >= 8 ? sr - 8 : 0; r <= sr + 8 && r < h; r++)
            for (size_t c = sc >= 8 ? sc - 8 : 0; c <= sc + 8 && c < w; c++) {
                const double dr = (double)r - (double)sr, dc = (double)c - (double)sc;
                x[r * w + c] += (float)(amp * exp(-(dr * dr + dc * dc) / (2 * 2.0 * 2.0)));
            }
    }
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < 3 && c < w; c++) x[r * w + c] = NAN;
    return x;
}

static void bg_teardown(void *p)
{
    bg_state *s = p;
    free(s->hx);
    free(s->want_back);
    free(s->want_rms);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->back);
    gpuws_buffer_destroy(s->rms);
    free(s);
}

/* f64: the sky plus a part below float resolution, so the conversion to f32 rounds; the reference sees the
 * rounded image, as SEP does. */
static gpuws_status bg_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dtype)
{
    bg_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dtype = dtype;
    s->w = gpuws__case_pick(size, 150, 1000, 2050, 8190);
    s->h = gpuws__case_pick(size, 97, 700, 2040, 8180);
    s->n = s->w * s->h;
    s->hx = bg_sky(s->w, s->h, 20261126);
    s->want_back = malloc(s->n * sizeof(float));
    s->want_rms = malloc(s->n * sizeof(float));
    if (!s->hx || !s->want_back || !s->want_rms) return GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_status st;
    if (dtype == GPUWS_F64) {
        double *x64 = malloc(s->n * sizeof *x64);
        if (!x64) return GPUWS_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < s->n; i++) {
            x64[i] = (double)s->hx[i] + 1e-6 * (double)(i % 7);
            s->hx[i] = (float)x64[i];
        }
        st = gpuws__case_upload(ctx, x64, s->n * sizeof *x64, &s->x);
        free(x64);
    } else {
        st = gpuws__case_upload(ctx, s->hx, s->n * sizeof(float), &s->x);
    }
    const gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    if (st || (st = gpuws_background_ref(s->hx, NULL, s->w, s->h, &o, s->want_back, s->want_rms, &s->want)) ||
        (st = gpuws_buffer_create(ctx, s->n * sizeof(float), &s->back)) ||
        (st = gpuws_buffer_create(ctx, s->n * sizeof(float), &s->rms)))
        return st;
    /* the image read three times (two sums and the histogram; f64 once more to convert it), both maps written
     * once; ~12 operations per pixel and pass, ~40 per output pixel */
    c->bytes = (double)s->n * (dtype == GPUWS_F64 ? 4 * sizeof(float) + sizeof(double) * 2 : 5 * sizeof(float));
    c->flops = 76.0 * (double)s->n;
    c->flop_type = BENCH_FLOPS_F32;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu mesh 64", s->w, s->h);
    return GPUWS_OK;
}

static gpuws_status bg_setup_f32(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return bg_setup(ctx, size, state, c, GPUWS_F32);
}

static gpuws_status bg_setup_f64(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return bg_setup(ctx, size, state, c, GPUWS_F64);
}

static gpuws_status bg_run(void *p, gpuws_stream *st)
{
    bg_state *s = p;
    return gpuws_background(st, s->dtype, s->w, s->h, s->x, NULL, s->back, s->rms, &s->got);
}

/* docs/algorithms/background.md: the maps and globals equal the reference's bit for bit. */
static bool bg_check(void *p, char *msg, size_t n)
{
    const bg_state *s = p;
    float *back = NULL, *rms = NULL;
    bool ok = gpuws__case_read(s->back, (void **)&back, s->n * sizeof(float), msg, n) &&
              gpuws__case_read(s->rms, (void **)&rms, s->n * sizeof(float), msg, n);
    if (ok && (s->got.globalback != s->want.globalback || s->got.globalrms != s->want.globalrms ||
               s->got.bad_meshes != s->want.bad_meshes)) {
        snprintf(msg, n, "globalback %.9g globalrms %.9g bad meshes %zu; reference %.9g %.9g %zu", s->got.globalback,
                 s->got.globalrms, s->got.bad_meshes, s->want.globalback, s->want.globalrms, s->want.bad_meshes);
        ok = false;
    }
    for (size_t i = 0; ok && i < s->n; i++)
        if (memcmp(&back[i], &s->want_back[i], sizeof(float)) || memcmp(&rms[i], &s->want_rms[i], sizeof(float))) {
            snprintf(msg, n, "pixel %zu (row %zu, col %zu): back %.9g rms %.9g; reference %.9g %.9g", i, i / s->w,
                     i % s->w, back[i], rms[i], s->want_back[i], s->want_rms[i]);
            ok = false;
        }
    free(back);
    free(rms);
    return ok;
}

static size_t bg_outputs(void *p, bench_output *out)
{
    bg_state *s = p;
    out[0] = (bench_output){ s->back, NULL, s->n * sizeof(float) };
    out[1] = (bench_output){ s->rms, NULL, s->n * sizeof(float) };
    out[2] = (bench_output){ NULL, &s->got, sizeof s->got };
    return 3;
}

static const gpuws__case w_background = { { "background", "f32", false, bg_setup_f32, bg_run, bg_check, bg_teardown },
                                          bg_outputs,
                                          false };
static const gpuws__case w_background_f64 = {
    { "background", "f64", false, bg_setup_f64, bg_run, bg_check, bg_teardown }, bg_outputs, false
};
GPUWS_CASE(w_background)
GPUWS_CASE(w_background_f64)
