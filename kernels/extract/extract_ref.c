/* gpuws_extract's device steps as scalar C (extract_ref.h), and the records' memory. */
#include "extract_ref.h"
#include "../../core/alloc.h"      /* gpuws__malloc: allocations the fault tests can fail */
#include "../../core/errors.h"     /* gpuws__error: the messages */
#include "../../core/threads.h"    /* the pixel steps on the host's cores */
#include "../label/label_driver.h" /* gpuws__label_cpu */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extract_pixel.h"

static const float default_filter[9] = { 1, 2, 1, 2, 4, 2, 1, 2, 1 };

gpuws_status gpuws__extract_resolve(const gpuws_extract_options *o, size_t width, size_t height, bool has_rms,
                                    const char *fn, gpuws__extract_params *p)
{
    memset(p, 0, sizeof *p);
    p->w = width;
    p->h = height;
    p->noise = has_rms ? EX_NOISE_MAP : o->err > 0.0 ? EX_NOISE_CONST : EX_NOISE_NONE;
    p->minarea = o->minarea;
    p->connectivity = o->connectivity;
    p->deblend_nthresh = o->deblend_nthresh;
    p->deblend_cont = o->deblend_cont;
    p->clean = o->clean;
    p->clean_param = o->clean_param;
    p->gain = o->gain;
    p->sep_version = o->sep_version;
    if (p->noise == EX_NOISE_MAP) {
        p->relthresh = (float)o->thresh;
        p->thresh = p->relthresh;
    } else if (p->noise == EX_NOISE_CONST) {
        p->err = (float)o->err;
        p->thresh = (float)o->thresh * p->err; /* SEP: thresh *= σ, in float */
    } else {
        p->thresh = (float)o->thresh;
    }
    if (o->filter_type == GPUWS_FILTER_NONE) return GPUWS_OK;
    const float *f = o->filter ? o->filter : default_filter;
    p->kw = o->filter ? o->filter_w : 3;
    p->kh = o->filter ? o->filter_h : 3;
    const size_t nk = (size_t)p->kw * (size_t)p->kh;
    float sum = 0.0f; /* SEP normalises by the sum of the absolute values, summed in float */
    for (size_t i = 0; i < nk; i++) sum += fabsf(f[i]);
    if (!(sum > 0.0f) || !isfinite(sum))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: the filter's absolute values sum to %g: not a finite number > 0", fn, (double)sum);
    if (!(p->kern = gpuws__malloc(nk * sizeof *p->kern)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the filter (%zu bytes)", fn,
                            nk * sizeof *p->kern);
    for (size_t i = 0; i < nk; i++) p->kern[i] = f[i] / sum;
    p->filter = o->filter_type == GPUWS_FILTER_MATCHED && p->noise == EX_NOISE_MAP ? EX_FILTER_MATCH : EX_FILTER_CONV;
    return GPUWS_OK;
}

void gpuws__extract_params_free(gpuws__extract_params *p)
{
    gpuws__free(p->kern);
    p->kern = NULL;
}

size_t gpuws__extract_mask_from(const gpuws__extract_params *p)
{
    const size_t rows = p->filter == EX_FILTER_NONE ? 0 : (size_t)(p->kh / 2);
    return rows > p->row0 ? (rows - p->row0) * p->w : 0;
}

bool gpuws__extract_pixels_alloc(gpuws__extract_pixels *px, size_t n)
{
    memset(px, 0, sizeof *px);
    uint32_t *block = gpuws__malloc(6 * (n ? n : 1) * sizeof *block);
    if (!block) return false;
    gpuws__extract_pixels_place(px, n, block);
    return true;
}

void gpuws__extract_pixels_place(gpuws__extract_pixels *px, size_t n, void *p)
{
    const size_t m = n ? n : 1;
    uint32_t *block = p;
    memset(px, 0, sizeof *px);
    px->n = n;
    px->idx = block;
    px->value = (float *)(block + m);
    px->cd = (float *)(block + 2 * m);
    px->sig = (float *)(block + 3 * m);
    px->sig_lr = (float *)(block + 4 * m);
    px->label = (int32_t *)(block + 5 * m);
}

void gpuws__extract_pixels_free(gpuws__extract_pixels *px)
{
    gpuws__free(px->idx);
    gpuws__free(px->group);
    gpuws__free(px->mom);
    memset(px, 0, sizeof *px);
}

/* c ? a : b, by the bits: a branch-free select, which the compiler vectorises where it keeps a ?: as a branch. */
static inline float select_bits(int c, float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    const uint32_t m = 0u - (uint32_t)c;
    x = (x & m) | (y & ~m);
    memcpy(&a, &x, sizeof a);
    return a;
}

/* ex_detect on the pixels x0 .. x1 - 1 of row y, where x0 = kw / 2 (0 without a filter) and the filter's windows lie
 * inside the image in x: each pixel's sums in ex_conv's and ex_matched's order, so the same bits, but a tap at a
 * time over the row, which the compiler can vectorise. cd, det: the row's; m: 2 w floats of scratch. */
static void detect_row(const gpuws__extract_params *p, const float *d, const float *sig, size_t y, size_t x0, size_t x1,
                       float *cd, uint8_t *det, float *m)
{
    const size_t w = p->w, nx = x1 - x0;
    const int kw = p->kw, kh = p->kh;
    float *restrict c = cd + x0;
    if (p->filter == EX_FILTER_NONE) {
        for (size_t t = 0; t < nx; t++) c[t] = d[y * w + x0 + t];
    } else {
        for (size_t t = 0; t < nx; t++) c[t] = 0.0f;
        for (int j = 0; j < kh; j++) {
            const long yy = (long)y + j - kh / 2;
            if (yy < 0 || yy >= (long)p->h) continue;
            for (int i = 0; i < kw; i++) { /* pixel x0 + t reads column x0 + t + i - kw / 2 = t + i */
                const float k = p->kern[j * kw + i], *restrict src = d + (size_t)yy * w + (size_t)i;
                for (size_t t = 0; t < nx; t++) c[t] = ex_fadd(c[t], ex_fmul(k, src[t]));
            }
        }
    }
    uint8_t *restrict dt = det + x0;
    if (p->filter == EX_FILTER_MATCH) {
        float *restrict num = m, *restrict den = m + w;
        for (size_t t = 0; t < nx; t++) num[t] = den[t] = 0.0f;
        for (int j = 0; j < kh; j++) {
            const long yy = (long)y + j - kh / 2;
            if (yy < 0 || yy >= (long)p->h) continue;
            for (int i = 0; i < kw; i++) {
                const float k = p->kern[j * kw + i], kk = ex_fmul(k, k);
                const float *restrict ds = d + (size_t)yy * w + (size_t)i, *restrict ss =
                                                                               sig + (size_t)yy * w + (size_t)i;
                for (size_t t = 0; t < nx; t++) { /* the pixels with σ² = 0 left out, as ex_matched */
                    const float var = ex_fmul(ss[t], ss[t]);
                    const float a = ex_fadd(num[t], ex_fdiv(ex_fmul(k, ds[t]), var)),
                                b = ex_fadd(den[t], ex_fdiv(kk, var));
                    num[t] = select_bits(var != 0.0f, a, num[t]);
                    den[t] = select_bits(var != 0.0f, b, den[t]);
                }
            }
        }
        for (size_t t = 0; t < nx; t++) dt[t] = (float)((double)num[t] / sqrt((double)den[t])) > p->thresh;
    } else if (p->noise == EX_NOISE_MAP) {
        const float *restrict s = sig + y * w + x0;
        for (size_t t = 0; t < nx; t++) dt[t] = c[t] > ex_fmul(p->thresh, s[t]);
    } else {
        for (size_t t = 0; t < nx; t++) dt[t] = c[t] > p->thresh;
    }
}

/* The pixel steps on threads: each pixel's values are computed alone (its prepared value, then its filtered value and
 * test from the prepared ones), and each part of the rows writes its records from the place that the parts before
 * it leave, so any number of threads gives the same bits. */
typedef struct {
    const gpuws__extract_params *p;
    const float *image, *back, *rms;
    const uint8_t *mask;
    float *d, *sig, *cd, *mrow; /* mrow: 2 w floats a part */
    uint8_t *det;
    const int32_t *lab;
    size_t *count; /* per part: its detected pixels; then the place of its first record */
    gpuws__extract_pixels *px;
    size_t step;
} ref_job;

static void ref_part(void *arg, size_t part, size_t lo, size_t hi)
{
    const ref_job *j = arg;
    const gpuws__extract_params *p = j->p;
    const size_t w = p->w, h = p->h;
    const float *d = j->d, *sig = j->sig;
    if (j->step == 0) { /* rows lo .. hi - 1 prepared */
        const size_t mask_from = gpuws__extract_mask_from(p);
        for (size_t i = lo * w; i < hi * w; i++)
            j->d[i] = ex_prep(j->image[i], j->back ? j->back[i] : 0.0f, j->mask && i >= mask_from && j->mask[i],
                              p->noise, j->rms ? j->rms[i] : 0.0f, p->err, &j->sig[i]);
    } else if (j->step == 1) { /* filtered and tested: the columns whose window lies inside a row at a time */
        const size_t x0 = p->filter == EX_FILTER_NONE ? 0 : (size_t)(p->kw / 2), x1 = w > x0 ? w - x0 : 0;
        size_t count = 0;
        for (size_t y = lo; y < hi; y++) {
            const size_t i0 = y * w;
            if (x0 < x1) detect_row(p, d, sig, y, x0, x1, j->cd + i0, j->det + i0, j->mrow + 2 * w * part);
            for (size_t x = 0; x < w; x++) {
                if (x == x0 && x0 < x1) x = x1;
                if (x >= w) break;
                j->det[i0 + x] = (uint8_t)ex_detect(d, sig, p->kern, (long)w, (long)h, (long)x, (long)y, p->kw, p->kh,
                                                    p->filter, p->noise, p->thresh, &j->cd[i0 + x]);
            }
            if (p->own1 && (y < p->own0 || y >= p->own1)) memset(j->det + i0, 0, w); /* a band's halo row */
            for (size_t x = 0; x < w; x++) count += j->det[i0 + x];
        }
        j->count[part] = count;
    } else { /* the records of the labelled pixels, in raster order, as the device writes them */
        const size_t cap = j->px->n ? j->px->n : 1;
        size_t k = j->count[part];
        for (size_t i = lo * w; i < hi * w; i++)
            if (j->lab[i])
                ex_record(j->px->idx, (float *)j->px->idx, cap, k++, j->lab, d, j->mask, j->mask != NULL, (long)w,
                          (long)h, (long)i);
    }
}

gpuws_status gpuws_extract_ref_pixels(const gpuws__extract_params *p, const float *image, const float *back,
                                      const float *rms, const uint8_t *mask, gpuws__extract_pixels *px)
{
    const size_t w = p->w, h = p->h, n = w * h;
    const size_t parts = gpuws__work_parts(p->threads > 1 ? p->threads : 1, (double)n, 65536.0, h);
    /* d, σ, filtered one after the other: the maps of ex_record */
    float *d = gpuws__malloc(3 * n * sizeof *d), *sig = d ? d + n : NULL, *cd = d ? d + 2 * n : NULL;
    float *mrow = gpuws__malloc(2 * w * parts * sizeof *mrow);
    uint8_t *det = gpuws__malloc(n);
    int32_t *lab = gpuws__malloc(n * sizeof *lab);
    size_t *count = gpuws__malloc(parts * sizeof *count);
    gpuws_status st = GPUWS_OK;
    if (!d || !sig || !cd || !mrow || !det || !lab || !count) {
        st = GPUWS_ERR_OUT_OF_MEMORY;
        goto done;
    }
    ref_job j = { p, image, back, rms, mask, d, sig, cd, mrow, det, lab, count, px, 0 };
    gpuws__run_ranges(h, parts, ref_part, &j);
    j.step = 1;
    gpuws__run_ranges(h, parts, ref_part, &j);
    size_t total = 0;
    for (size_t t = 0; t < parts; t++) {
        const size_t m = count[t];
        count[t] = total;
        total += m;
    }
    size_t nl;
    if ((st = gpuws__label_cpu(det, w, h, p->connectivity, lab, parts, "extract", &nl))) goto done;
    if (!gpuws__extract_pixels_alloc(px, total)) {
        st = GPUWS_ERR_OUT_OF_MEMORY;
        goto done;
    }
    px->nl = nl;
    j.step = 2;
    gpuws__run_ranges(h, parts, ref_part, &j);
done:
    gpuws__free(count);
    gpuws__free(d);
    gpuws__free(mrow);
    gpuws__free(det);
    gpuws__free(lab);
    return st;
}
