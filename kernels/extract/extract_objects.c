/* gpuws_extract's host steps (extract_ref.h): from the pixel records of the components, in raster order, to SEP's
 * catalogue, in double precision and a fixed order, so that every backend gives the same catalogue.
 *  1. Components of at least minarea pixels, in the order SEP's one-pass scan completes them: by the last pixel of
 *     their last row (row, then column), which is where the scan finds them finished. Their threshold is SEP's:
 *     the constant one, or, with a σ map, relthresh × σ at the pixel that follows that last pixel on the next row
 *     (0 outside the image), where SEP's scan stands when it completes the object.
 *  2. Lutz's scan of each component's box orders its pixels as SEP chains them; deblending (SExtractor's
 *     multi-threshold tree and gatherup, with SEP's random numbers) splits it into objects (extract_deblend.c).
 *  3. The analysis of each object (SEP's analyse: moments weighted by the filtered values, errors, ellipse, flags),
 *     the float roundings where SEP rounds to float.
 *  4. Cleaning removes the objects that a brighter neighbour's profile explains (extract_clean.c).
 * docs/algorithms/extract.md says where this differs from SEP. */
#include "extract_objects.h"
#include "../../core/alloc.h"
#include "../../core/errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool gpuws__ex_objs_push(ex_objs *o, const ex_obj *x)
{
    if (o->n == o->cap) {
        const size_t cap = o->cap ? 2 * o->cap : 16;
        ex_obj *v = gpuws__realloc(o->v, cap * sizeof *v);
        if (!v) return false;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = *x;
    return true;
}

void gpuws__ex_objs_free(ex_objs *o)
{
    for (size_t i = 0; i < o->n; i++) gpuws__free(o->v[i].pix);
    gpuws__free(o->v);
    memset(o, 0, sizeof *o);
}

/* SEP's preanalyse: bounds, peaks (the first largest in list order), the filtered flux (summed in double, kept as
 * float). */
void gpuws__ex_preanalyse(const ex_ctx *c, ex_obj *o)
{
    double rv = 0.0;
    float peak = -EX_BIG, cpeak = -EX_BIG;
    o->xmin = o->ymin = INT64_MAX;
    o->xmax = o->ymax = 0;
    o->xpeak = o->ypeak = o->xcpeak = o->ycpeak = 0;
    for (size_t k = 0; k < o->npix; k++) {
        const size_t r = o->pix[k];
        const int64_t x = px_x(c, r), y = px_y(c, r);
        const float v = c->px->value[r], cv = c->px->cd[r];
        if (peak < v) {
            peak = v;
            o->xpeak = x;
            o->ypeak = y;
        }
        if (cpeak < cv) {
            cpeak = cv;
            o->xcpeak = x;
            o->ycpeak = y;
        }
        rv += cv;
        if (x < o->xmin) o->xmin = x;
        if (x > o->xmax) o->xmax = x;
        if (y < o->ymin) o->ymin = y;
        if (y > o->ymax) o->ymax = y;
    }
    o->fdflux = (float)rv;
    o->fdpeak = cpeak;
    o->dpeak = peak;
}

void gpuws__ex_analyse(const ex_ctx *c, ex_obj *o, int robust, double gain)
{
    gpuws__ex_preanalyse(c, o);
    const double thresh = o->thresh, peak = o->dpeak, rv = o->fdflux, rv2 = rv * rv, thresh2 = (thresh + peak) / 2.0;
    double mx = 0, my = 0, mx2 = 0, my2 = 0, mxy = 0, tv = 0;
    int64_t dnpix = 0, area2 = 0;
    for (size_t k = 0; k < o->npix; k++) {
        const size_t r = o->pix[k];
        const float x = (float)(px_x(c, r) - o->xmin), y = (float)(px_y(c, r) - o->ymin);
        const float cv = c->px->cd[r], v = c->px->value[r];
        tv += v;
        if (v > thresh) dnpix++;
        if (v > thresh2) area2++;
        /* SEP's products are float (a float times an int), its sums double */
        mx += ex_fmul(cv, x);
        my += ex_fmul(cv, y);
        mx2 += ex_fmul(ex_fmul(cv, x), x);
        my2 += ex_fmul(ex_fmul(cv, y), y);
        mxy += ex_fmul(ex_fmul(cv, x), y);
    }
    double xm = mx / rv, ym = my / rv, xm2, ym2, xym;
    if (robust && (o->flag & GPUWS_OBJ_MERGED)) {
        const double xn = o->mx - (double)o->xmin, yn = o->my - (double)o->ymin;
        xm2 = mx2 / rv + xn * xn - 2 * xm * xn;
        ym2 = my2 / rv + yn * yn - 2 * ym * yn;
        xym = mxy / rv + xn * yn - xm * yn - xn * ym;
        xm = xn;
        ym = yn;
    } else {
        xm2 = mx2 / rv - xm * xm;
        ym2 = my2 / rv - ym * ym;
        xym = mxy / rv - xm * ym;
    }
    double cvarsum = 0, errx2 = 0, erry2 = 0, errxy = 0;
    for (size_t k = 0; k < o->npix; k++) {
        const size_t r = o->pix[k];
        const double x = (double)(px_x(c, r) - o->xmin), y = (double)(px_y(c, r) - o->ymin);
        double cvar = c->p->noise != EX_NOISE_NONE ? (double)ex_fmul(c->px->sig[r], c->px->sig[r]) : 0.0;
        if (gain > 0.0 && c->px->cd[r] > 0.0f) cvar += c->px->cd[r] / gain;
        cvarsum += cvar;
        errx2 += cvar * (x - xm) * (x - xm);
        erry2 += cvar * (y - ym) * (y - ym);
        errxy += cvar * (x - xm) * (y - ym);
    }
    errx2 /= rv2;
    erry2 /= rv2;
    errxy /= rv2;
    double temp2 = xm2 * ym2 - xym * xym;
    if (temp2 < 0.00694) { /* x and y fully correlated: SExtractor's fix of the singularity */
        xm2 += 0.0833333;
        ym2 += 0.0833333;
        temp2 = xm2 * ym2 - xym * xym;
        o->flag |= GPUWS_OBJ_SINGU;
        cvarsum *= 0.08333 / rv2;
        if (errx2 * erry2 - errxy * errxy < cvarsum * cvarsum) {
            errx2 += cvarsum;
            erry2 += cvarsum;
        }
    }
    double temp = xm2 - ym2;
    const double theta = fabs(temp) > 0.0 ? atan2(2.0 * xym, temp) / 2.0 : EX_PI / 4.0;
    temp = sqrt(0.25 * temp * temp + xym * xym);
    const double pmx2 = 0.5 * (xm2 + ym2) + temp, pmy2 = 0.5 * (xm2 + ym2) - temp;
    o->dnpix = dnpix;
    o->dflux = tv;
    o->mx = xm + (double)o->xmin;
    o->my = ym + (double)o->ymin;
    o->mx2 = xm2;
    o->my2 = ym2;
    o->mxy = xym;
    o->errx2 = errx2;
    o->erry2 = erry2;
    o->errxy = errxy;
    o->a = (float)sqrt(pmx2);
    o->b = (float)sqrt(pmy2);
    o->theta = theta;
    o->cxx = (float)(ym2 / temp2);
    o->cyy = (float)(xm2 / temp2);
    o->cxy = (float)(-2 * xym / temp2);
    const double darea = (double)area2 - (double)dnpix, t1t2 = thresh / thresh2;
    if (t1t2 > 0.0) {
        o->abcor = (darea < 0.0 ? darea : -1.0) / (2 * EX_PI * log(t1t2 < 1.0 ? t1t2 : 0.99) * o->a * o->b);
        if (o->abcor > 1.0) o->abcor = 1.0;
    } else {
        o->abcor = 1.0;
    }
}

typedef struct {
    uint64_t key; /* where SEP's scan completes the component */
    size_t first, n;
    float thresh;
} ex_comp;

/* Sorts the components by key (each key is a pixel of its own: no ties), an LSD radix sort, 8 bits a pass; tmp: n
 * entries. */
static void sort_comps(ex_comp *v, size_t n, ex_comp *tmp)
{
    uint64_t maxk = 0;
    ex_comp *src = v, *dst = tmp;
    for (size_t i = 0; i < n; i++) maxk = v[i].key > maxk ? v[i].key : maxk;
    for (unsigned shift = 0; shift < 64 && (maxk >> shift); shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < n; i++) count[(src[i].key >> shift & 0xffu) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) dst[count[src[i].key >> shift & 0xffu]++] = src[i];
        ex_comp *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
}

gpuws_status gpuws__extract_objects(const gpuws__extract_params *p, const gpuws__extract_pixels *px,
                                    gpuws_extract_catalog **out, int32_t *obj_of)
{
    const size_t n = px->n;
    uint32_t *xy = gpuws__malloc(2 * (n ? n : 1) * sizeof *xy);
    ex_ctx c = { p, px, 1u, xy, xy ? xy + n : NULL };
    size_t nl = 0;
    for (size_t r = 0; r < n; r++)
        if ((size_t)px->label[r] > nl) nl = (size_t)px->label[r];
    size_t *start = gpuws__calloc(nl + 2, sizeof *start), *order = gpuws__malloc((n ? n : 1) * sizeof *order);
    ex_comp *comps = gpuws__malloc(2 * (nl ? nl : 1) * sizeof *comps); /* and the sort's scratch */
    ex_objs objs = { 0 };
    int *survives = NULL;
    float *heap = NULL; /* cleaning's mthresh: the heap and the sort's scratch */
    gpuws_extract_catalog *cat = NULL;
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY;
    if (!xy || !start || !order || !comps) goto done;
    for (size_t r = 0; r < n; r++) {
        const uint32_t i = px->idx[r] & ~EX_BLANK_BIT;
        xy[r] = (uint32_t)(i % p->w);
        xy[n + r] = (uint32_t)(i / p->w);
    }
    /* the records grouped by component, raster order kept within each */
    for (size_t r = 0; r < n; r++) start[px->label[r] + 1]++;
    for (size_t l = 0; l <= nl; l++) start[l + 1] += start[l];
    for (size_t r = 0; r < n; r++) order[start[px->label[r]]++] = r;
    for (size_t l = nl + 1; l > 0; l--) start[l] = start[l - 1];
    start[0] = 0;
    size_t nc = 0;
    for (size_t l = 1; l <= nl; l++) {
        const size_t first = start[l], cnt = start[l + 1] - start[l];
        if (cnt < (size_t)p->minarea || cnt == 0) continue;
        const size_t last = order[first + cnt - 1]; /* the component's last pixel in raster order */
        const uint64_t x = (uint64_t)px_x(&c, last), y = (uint64_t)px_y(&c, last);
        comps[nc].key = (y + 1) * ((uint64_t)p->w + 1) + x + 1;
        comps[nc].first = first;
        comps[nc].n = cnt;
        comps[nc].thresh = p->noise == EX_NOISE_MAP ? ex_fmul(p->relthresh, px->sig_lr[last]) : p->thresh;
        nc++;
    }
    sort_comps(comps, nc, comps + nl);
    for (size_t k = 0; k < nc; k++) {
        const size_t before = objs.n;
        if (!gpuws__ex_deblend(&c, order + comps[k].first, comps[k].n, comps[k].thresh, &objs)) goto done;
        for (size_t i = before; i < objs.n; i++) gpuws__ex_analyse(&c, &objs.v[i], 1, p->gain);
    }
    survives = gpuws__malloc((objs.n ? objs.n : 1) * sizeof *survives);
    if (!survives) goto done;
    if (p->clean) {
        heap = gpuws__malloc(2 * (size_t)p->minarea * sizeof *heap);
        if (!heap) goto done;
        for (size_t i = 0; i < objs.n; i++) gpuws__ex_mthresh(&c, &objs.v[i], heap, heap + p->minarea);
        if (!gpuws__ex_clean(&objs, p->clean_param, p->w, p->h, survives)) goto done;
    } else {
        for (size_t i = 0; i < objs.n; i++) survives[i] = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < objs.n; i++) kept += (size_t)survives[i];
    if (!(cat = gpuws__calloc(1, sizeof *cat)) ||
        !(cat->objects = gpuws__calloc(kept ? kept : 1, sizeof *cat->objects)))
        goto done;
    if (obj_of) memset(obj_of, 0, n * sizeof *obj_of);
    size_t j = 0;
    for (size_t i = 0; i < objs.n; i++) {
        if (!survives[i]) continue;
        const ex_obj *o = &objs.v[i];
        gpuws_object *q = &cat->objects[j++];
        q->thresh = o->thresh;
        q->npix = (int64_t)o->npix;
        q->tnpix = o->dnpix;
        q->xmin = o->xmin;
        q->xmax = o->xmax;
        q->ymin = o->ymin;
        q->ymax = o->ymax;
        q->x = o->mx;
        q->y = o->my;
        q->x2 = o->mx2;
        q->y2 = o->my2;
        q->xy = o->mxy;
        q->errx2 = o->errx2;
        q->erry2 = o->erry2;
        q->errxy = o->errxy;
        q->a = o->a;
        q->b = o->b;
        q->theta = o->theta;
        q->cxx = o->cxx;
        q->cyy = o->cyy;
        q->cxy = o->cxy;
        q->flux = o->dflux;
        q->cflux = o->fdflux;
        double fv = 0.0; /* the flux's variance: the pixels' σ², and the Poisson term with a gain */
        for (size_t k = 0; k < o->npix; k++) {
            const size_t r = o->pix[k];
            if (p->noise != EX_NOISE_NONE) fv += (double)ex_fmul(px->sig[r], px->sig[r]);
            if (p->gain > 0.0 && px->value[r] > 0.0f) fv += px->value[r] / p->gain;
            if (obj_of) obj_of[r] = (int32_t)j;
        }
        q->fluxerr = sqrt(fv);
        q->peak = o->dpeak;
        q->cpeak = o->fdpeak;
        q->xpeak = o->xpeak;
        q->ypeak = o->ypeak;
        q->xcpeak = o->xcpeak;
        q->ycpeak = o->ycpeak;
        q->flag = o->flag;
    }
    cat->num_objects = kept;
    st = GPUWS_OK;
done:
    if (st) {
        if (cat) gpuws__free(cat->objects);
        gpuws__free(cat);
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                          "extract: no host memory for the catalogue of %zu pixel records (%zu bytes and more)", n,
                          n * (sizeof(size_t) + sizeof(gpuws_object)));
    } else {
        *out = cat;
    }
    gpuws__ex_objs_free(&objs);
    gpuws__free(survives);
    gpuws__free(heap);
    gpuws__free(xy);
    gpuws__free(start);
    gpuws__free(order);
    gpuws__free(comps);
    return st;
}
