#include "sources_ref.h"

#include "../../core/alloc.h" /* gpuws__malloc: allocations the fault tests can fail */
#include "../../core/errors.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix(uint64_t *s) { return mix64(*s += GOLDEN_GAMMA); }
static double uniform(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1.0p-53; }

gpuws_sky_params gpuws_sky_defaults(size_t width, size_t height, uint64_t seed)
{
    gpuws_sky_params p;
    p.width = width;
    p.height = height;
    p.seed = seed;
    p.noise_sigma = 1e-3;
    p.beam_sigma = 1.7;
    p.cutoff_sigmas = 6.0;
    double n = 300.0 * (double)width * (double)height / (2048.0 * 2048.0);
    p.num_sources = n < 10 ? 10 : (size_t)(n + 0.5);
    p.peak_min = 5e-3;
    p.peak_max = 1e-1;
    p.margin = 8.0;
    return p;
}

void gpuws_sky_sources(const gpuws_sky_params *p, gpuws_sky_source *out)
{
    uint64_t s = mix64(p->seed ^ 0x736f7572636573ULL); /* a stream apart from the noise's */
    const double xr = (double)p->width - 1 - 2 * p->margin, yr = (double)p->height - 1 - 2 * p->margin;
    const double lmin = log(p->peak_min), lmax = log(p->peak_max);
    for (size_t k = 0; k < p->num_sources; k++) {
        out[k].x = (float)(p->margin + (xr > 0 ? xr : 0) * uniform(&s));
        out[k].y = (float)(p->margin + (yr > 0 ? yr : 0) * uniform(&s));
        out[k].peak = (float)exp(lmin + (lmax - lmin) * uniform(&s));
    }
}

int gpuws_sky_bin(const gpuws_sky_params *p, const gpuws_sky_source *src, gpuws_sky_bins *b)
{
    memset(b, 0, sizeof *b);
    const double r = p->cutoff_sigmas * p->beam_sigma;
    b->cell = (uint32_t)(r > 16 ? ceil(r) : 16);
    b->cells_x = (uint32_t)((p->width + b->cell - 1) / b->cell);
    b->cells_y = (uint32_t)((p->height + b->cell - 1) / b->cell);
    b->r2max = (float)(r * r);
    b->inv_two_s2 = (float)(1.0 / (2.0 * p->beam_sigma * p->beam_sigma));
    const size_t ncells = (size_t)b->cells_x * b->cells_y;
    b->cell_start = gpuws__calloc(ncells + 1, sizeof *b->cell_start);
    b->sorted = gpuws__malloc((p->num_sources ? p->num_sources : 1) * sizeof *b->sorted);
    uint32_t *fill = gpuws__calloc(ncells + 1, sizeof *fill);
    /* counting sort by cell, stable: a cell's sources keep their list order */
    size_t *cell_of = gpuws__malloc((p->num_sources ? p->num_sources : 1) * sizeof *cell_of);
    if (!b->cell_start || !b->sorted || !fill || !cell_of) {
        gpuws__free(fill);
        gpuws__free(cell_of);
        gpuws_sky_bins_free(b);
        gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "binning %zu sources into %zu cells (%zu bytes)", p->num_sources, ncells,
                     2 * (ncells + 1) * sizeof *fill + p->num_sources * (sizeof *b->sorted + sizeof *cell_of));
        return -1;
    }
    for (size_t k = 0; k < p->num_sources; k++) {
        size_t cx = (size_t)(src[k].x < 0 ? 0 : src[k].x) / b->cell,
               cy = (size_t)(src[k].y < 0 ? 0 : src[k].y) / b->cell;
        if (cx >= b->cells_x) cx = b->cells_x - 1;
        if (cy >= b->cells_y) cy = b->cells_y - 1;
        cell_of[k] = cy * b->cells_x + cx;
        b->cell_start[cell_of[k] + 1]++;
    }
    for (size_t c = 0; c < ncells; c++) b->cell_start[c + 1] += b->cell_start[c];
    for (size_t k = 0; k < p->num_sources; k++) b->sorted[b->cell_start[cell_of[k]] + fill[cell_of[k]]++] = src[k];
    gpuws__free(cell_of);
    gpuws__free(fill);
    return 0;
}

void gpuws_sky_bins_free(gpuws_sky_bins *b)
{
    gpuws__free(b->cell_start);
    gpuws__free(b->sorted);
    b->cell_start = NULL;
    b->sorted = NULL;
}

float gpuws_sky_noise(uint64_t seed, uint64_t i, float sigma)
{
    const uint64_t h = mix64(seed + (i + 1) * GOLDEN_GAMMA);
    const float u1 = (float)((h >> 40) + 1) * 0x1.0p-24f; /* (0, 1]: log never sees 0 */
    const float u2 = (float)((h >> 16) & 0xffffffu) * 0x1.0p-24f;
    const float r = sqrtf(-2.0f * logf(u1));
    const float a = 6.28318530717958647692f * u2;
    return sigma * (r * cosf(a));
}

void gpuws_sky_ref(const gpuws_sky_params *p, const gpuws_sky_bins *b, float *image, float *scale)
{
    const float sigma = (float)p->noise_sigma;
    for (size_t y = 0; y < p->height; y++) {
        const long cy = (long)(y / b->cell);
        for (size_t x = 0; x < p->width; x++) {
            const long cx = (long)(x / b->cell);
            const size_t i = y * p->width + x;
            const float noise = gpuws_sky_noise(p->seed, i, sigma);
            float v = noise, mag = fabsf(noise);
            for (long ny = cy - 1; ny <= cy + 1; ny++) {
                if (ny < 0 || ny >= (long)b->cells_y) continue;
                for (long nx = cx - 1; nx <= cx + 1; nx++) {
                    if (nx < 0 || nx >= (long)b->cells_x) continue;
                    const size_t c = (size_t)ny * b->cells_x + (size_t)nx;
                    for (uint32_t k = b->cell_start[c]; k < b->cell_start[c + 1]; k++) {
                        const float dx = (float)x - b->sorted[k].x, dy = (float)y - b->sorted[k].y;
                        const float d2 = dx * dx + dy * dy;
                        if (d2 > b->r2max) continue;
                        const float t = b->sorted[k].peak * expf(-d2 * b->inv_two_s2);
                        v += t;
                        mag += t;
                    }
                }
            }
            image[i] = v;
            if (scale) scale[i] = mag;
        }
    }
}

/* ---- matching ------------------------------------------------------------------------------------------------ */

typedef struct {
    double d2;
    size_t inj, det;
} pair;

static int by_distance(const void *a, const void *b)
{
    const pair *p = a, *q = b;
    if (p->d2 != q->d2) return p->d2 < q->d2 ? -1 : 1;
    if (p->inj != q->inj) return p->inj < q->inj ? -1 : 1;
    return p->det < q->det ? -1 : p->det > q->det;
}

int gpuws_sky_match_catalog(const gpuws_sky_source *inj, size_t ninj, const gpuws_source *det, size_t ndet,
                            double radius, double faint_peak, double blend_radius, gpuws_sky_match *out)
{
    memset(out, 0, sizeof *out);
    out->injected = ninj;
    out->detected = ndet;
    const double r2 = radius * radius, b2 = blend_radius * blend_radius;
    size_t npairs = 0, cap = ninj + ndet + 16;
    pair *pairs = gpuws__malloc(cap * sizeof *pairs);
    unsigned char *inj_used = gpuws__calloc(ninj + 1, 1), *det_used = gpuws__calloc(ndet + 1, 1);
    if (!pairs || !inj_used || !det_used) goto oom;
    for (size_t i = 0; i < ninj; i++)
        for (size_t d = 0; d < ndet; d++) {
            const double dx = det[d].x - inj[i].x, dy = det[d].y - inj[i].y, d2 = dx * dx + dy * dy;
            if (d2 >= r2) continue;
            if (npairs == cap) {
                pair *grown = gpuws__realloc(pairs, 2 * cap * sizeof *pairs);
                if (!grown) goto oom;
                pairs = grown;
                cap *= 2;
            }
            pairs[npairs++] = (pair){ d2, i, d };
        }
    qsort(pairs, npairs, sizeof *pairs, by_distance);
    double sum2 = 0;
    for (size_t k = 0; k < npairs; k++) {
        if (inj_used[pairs[k].inj] || det_used[pairs[k].det]) continue;
        inj_used[pairs[k].inj] = det_used[pairs[k].det] = 1;
        out->recovered++;
        sum2 += pairs[k].d2;
        if (sqrt(pairs[k].d2) > out->max_error) out->max_error = sqrt(pairs[k].d2);
    }
    out->rms_error = out->recovered ? sqrt(sum2 / (double)out->recovered) : 0.0;
    for (size_t d = 0; d < ndet; d++) {
        if (det_used[d]) continue;
        bool near = false;
        for (size_t i = 0; i < ninj && !near; i++) {
            const double dx = det[d].x - inj[i].x, dy = det[d].y - inj[i].y;
            near = dx * dx + dy * dy < b2;
        }
        if (near) out->fragments++;
        else out->spurious++;
    }
    for (size_t i = 0; i < ninj; i++) {
        if (inj_used[i]) continue;
        if (inj[i].peak < faint_peak) {
            out->missed_faint++;
            continue;
        }
        bool blended = false;
        for (size_t j = 0; j < ninj && !blended; j++) {
            const double dx = inj[j].x - inj[i].x, dy = inj[j].y - inj[i].y;
            blended = j != i && dx * dx + dy * dy < b2;
        }
        if (blended) out->missed_blended++;
        else out->missed_other++;
    }
    gpuws__free(pairs);
    gpuws__free(inj_used);
    gpuws__free(det_used);
    return 0;
oom:
    gpuws__free(pairs);
    gpuws__free(inj_used);
    gpuws__free(det_used);
    gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "matching %zu injected sources with %zu detections (%zu bytes)", ninj, ndet,
                 cap * sizeof *pairs + ninj + ndet + 2);
    return -1;
}
