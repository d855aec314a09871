/* The case registry and the helpers the case tables share (kernels/common/cases.h). */
#include "common/cases.h"
#include "sources/sources_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 128
static const gpuws__case *cases[MAX_CASES + 1];
static int ncases;

void gpuws__case_register(const gpuws__case *w)
{
    if (ncases == MAX_CASES) {
        fprintf(stderr, "gpuws: too many cases (raise MAX_CASES in kernels/common/cases.c)\n");
        abort();
    }
    int i = ncases++;
    while (i > 0) {
        int c = strcmp(cases[i - 1]->w.algorithm, w->w.algorithm);
        if (c < 0 || (c == 0 && strcmp(cases[i - 1]->w.variant, w->w.variant) <= 0)) break;
        cases[i] = cases[i - 1];
        i--;
    }
    cases[i] = w;
    bench_register(&w->w);
}

const gpuws__case *const *gpuws__cases(void) { return cases; }

size_t gpuws__case_pick(bench_size s, size_t tiny, size_t small, size_t dflt, size_t large)
{
    switch (s) {
    case BENCH_TINY: return tiny;
    case BENCH_SMALL: return small;
    case BENCH_LARGE: return large;
    default: return dflt;
    }
}

void gpuws__case_label_count(char *out, size_t n, size_t count, const char *what)
{
    if (count && (count & (count - 1)) == 0) {
        int k = 0;
        while (((size_t)1 << k) < count) k++;
        snprintf(out, n, "2^%d %s", k, what);
    } else {
        snprintf(out, n, "%.0e %s", (double)count, what);
    }
}

size_t gpuws__case_fit(gpuws_context *ctx, size_t n, size_t es, int arrays)
{
    gpuws_device_info d;
    if (gpuws_context_get_device_info(ctx, &d)) return n;
    while (n > ((size_t)1 << 16) && (n * es > d.max_alloc_bytes || n * es * (size_t)arrays > d.global_mem_bytes / 2))
        n /= 2;
    return n;
}

gpuws_status gpuws__case_upload(gpuws_context *ctx, const void *host, size_t bytes, gpuws_buffer **out)
{
    gpuws_status st = gpuws_buffer_create(ctx, bytes, out);
    if (!st && host) st = gpuws_buffer_write(*out, 0, host, bytes);
    return st;
}

bool gpuws__case_read(gpuws_buffer *b, void **host, size_t bytes, char *msg, size_t n)
{
    *host = malloc(bytes);
    if (*host && gpuws_buffer_read(b, 0, *host, bytes) == GPUWS_OK) return true;
    snprintf(msg, n, "could not read the result back");
    return false;
}

/* ---- a matrix in, one output ---- */

void gpuws__case_matrix_teardown(void *p)
{
    gpuws__case_matrix *s = p;
    free(s->hx);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->out);
    free(s);
}

gpuws_status gpuws__case_matrix_setup(gpuws_context *ctx, void **state, size_t rows, size_t cols, size_t out_elems,
                                      uint64_t seed)
{
    gpuws__case_matrix *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->rows = rows, s->cols = cols, s->out_elems = out_elems;
    if (!(s->hx = malloc(rows * cols * 4))) return GPUWS_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < rows * cols; i++) s->hx[i] = (float)(bench_uniform(&seed) * 2.0 - 1.0);
    gpuws_status st = gpuws__case_upload(ctx, s->hx, rows * cols * 4, &s->x);
    return st ? st : gpuws__case_upload(ctx, NULL, out_elems * 4, &s->out);
}

size_t gpuws__case_matrix_outputs(void *p, bench_output *out)
{
    gpuws__case_matrix *s = p;
    out[0] = (bench_output){ s->out, NULL, s->out_elems * 4 };
    return 1;
}

/* ---- the synthetic sky ---- */

gpuws_status gpuws__case_sky_input_make(gpuws_context *ctx, bench_size size, gpuws__case_sky_input *in,
                                        gpuws__case_source src[GPUWS__CASE_SKY_SOURCES])
{
    in->side = gpuws__case_pick(size, 64, 256, 2048, 4096);
    in->n = in->side * in->side;
    in->nsrc = size == BENCH_TINY ? 12 : GPUWS__CASE_SKY_SOURCES;
    if (!(in->hx = gpuws__case_sky(in->side, 20261121, src, in->nsrc))) return GPUWS_ERR_OUT_OF_MEMORY;
    return gpuws__case_upload(ctx, in->hx, in->n * sizeof(float), &in->x);
}

void gpuws__case_sky_input_free(gpuws__case_sky_input *in)
{
    free(in->hx);
    gpuws_buffer_destroy(in->x);
}

float *gpuws__case_sky(size_t side, uint64_t seed, gpuws__case_source *src, size_t nsrc)
{
    const size_t n = side * side;
    float *x = malloc(n * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i + 1 < n; i += 2) { /* Box-Muller, both outputs */
        const double r = 1e-3 * sqrt(-2.0 * log(1.0 - bench_uniform(&seed)));
        const double a = 6.283185307179586 * bench_uniform(&seed);
        x[i] = (float)(r * cos(a));
        x[i + 1] = (float)(r * sin(a));
    }
    if (n & 1) x[n - 1] = 0.0f;
    for (size_t k = 0; k < nsrc; k++) {
        src[k] = (gpuws__case_source){ bench_splitmix(&seed) % side, bench_splitmix(&seed) % side,
                                       0.005 + 0.2 * bench_uniform(&seed) };
        for (size_t r = src[k].r >= 6 ? src[k].r - 6 : 0; r <= src[k].r + 6 && r < side; r++)
            for (size_t c = src[k].c >= 6 ? src[k].c - 6 : 0; c <= src[k].c + 6 && c < side; c++) {
                const double dr = (double)r - (double)src[k].r, dc = (double)c - (double)src[k].c;
                x[r * side + c] += (float)(src[k].amp * exp(-(dr * dr + dc * dc) / (2 * 1.5 * 1.5)));
            }
    }
    return x;
}

/* ---- the source finder's sky ---- */

size_t gpuws__case_sources_side(bench_size size) { return gpuws__case_pick(size, 64, 512, 2048, 4096); }

int gpuws__case_sources_sky(size_t side_px, float *img)
{
    gpuws_sky_params p = gpuws_sky_defaults(side_px, side_px, 1);
    gpuws_sky_source *src = malloc(p.num_sources * sizeof *src);
    gpuws_sky_bins b;
    if (!src) return -1;
    gpuws_sky_sources(&p, src);
    if (gpuws_sky_bin(&p, src, &b)) {
        free(src);
        return -1;
    }
    gpuws_sky_ref(&p, &b, img, NULL);
    gpuws_sky_bins_free(&b);
    free(src);
    return 0;
}

/* ---- the workshop's convolution inputs ---- */

size_t gpuws__case_workshop_side(bench_size size) { return gpuws__case_pick(size, 48, 256, 2048, 4096); }

void gpuws__case_workshop_image(double *img, size_t side, bool random)
{
    uint64_t s = 0x5eed2026ULL;
    for (size_t i = 0; i < side * side; i++) {
        if (random) {
            img[i] = bench_uniform(&s);
        } else {
            const size_t r = i / side, c = i % side;
            img[i] = (r % 16 == 8 && c % 16 == 8) ? 1.0 : 0.0;
        }
    }
}

void gpuws__case_workshop_gaussian(double *g, int taps)
{
    for (int j = 0; j < taps; j++)
        for (int k = 0; k < taps; k++) {
            const double y = -2.0 + 4.0 * j / (taps - 1), x = -2.0 + 4.0 * k / (taps - 1);
            g[j * taps + k] = exp(-(x * x + y * y) / 2);
        }
}

void *gpuws__case_convert(const double *x, size_t n, gpuws_dtype dt)
{
    void *p = malloc(n * gpuws_dtype_size(dt));
    if (p)
        for (size_t i = 0; i < n; i++) {
            if (dt == GPUWS_F32) ((float *)p)[i] = (float)x[i];
            else ((double *)p)[i] = x[i];
        }
    return p;
}

bool gpuws__case_within_conv_bound(const void *got, const void *want, size_t n, gpuws_dtype dt, double taps, char *msg,
                                   size_t len)
{
    const double u = dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53;
    for (size_t i = 0; i < n; i++) {
        const double g = dt == GPUWS_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
        const double w = dt == GPUWS_F32 ? ((const float *)want)[i] : ((const double *)want)[i];
        if (!(fabs(g - w) <= 2 * (taps + 1) * u * fabs(w))) {
            snprintf(msg, len, "output %zu = %.17g, scalar reference %.17g", i, g, w);
            return false;
        }
    }
    return true;
}
