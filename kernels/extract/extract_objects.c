/* gpuws_extract's host steps (extract_ref.h): from the pixel records of the components, in raster order, to SEP's
 * catalogue, in double precision and a fixed order, so that every backend gives the same catalogue.
 *  1. Components of at least minarea pixels, in the order SEP's one-pass scan completes them: by the last pixel of
 *     their last row (row, then column), which is where the scan finds them finished. Their threshold is SEP's:
 *     the constant one, or, with a σ map, relthresh × σ at the pixel that follows that last pixel on the next row
 *     (0 outside the image), where SEP's scan stands when it completes the object.
 *  2. Deblending (SExtractor's multi-threshold tree) splits a component into objects.
 *  3. The analysis of each object (SEP's analyse: moments weighted by the filtered values, errors, ellipse, flags),
 *     the float roundings where SEP rounds to float.
 *  4. Cleaning removes the objects that a brighter neighbour's profile explains.
 * docs/algorithms/extract.md says where this differs from SEP. */
#include "extract_ref.h"
#include "../../core/alloc.h"
#include "../../core/errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extract_pixel.h"

#define EX_PI         3.1415926535898 /* SEP's π */
#define EX_CLEAN_ZONE 10.0            /* SExtractor's: cleaning looks this many (a1 + a2) far */

/* One object: its pixels (record numbers) and SEP's objstruct fields. */
typedef struct {
    size_t *pix, npix;
    float thresh; /* the threshold at the object */
    int flag;
    float fdflux, fdpeak, dpeak, a, b, cxx, cyy, cxy, mthresh;
    double dflux, mx, my, mx2, my2, mxy, errx2, erry2, errxy, theta, abcor;
    int64_t dnpix, xmin, xmax, ymin, ymax, xpeak, ypeak, xcpeak, ycpeak;
} ex_obj;

typedef struct {
    ex_obj *v;
    size_t n, cap;
} ex_objs;

typedef struct {
    const gpuws__extract_params *p;
    const gpuws__extract_pixels *px;
} ex_ctx;

static int64_t px_x(const ex_ctx *c, size_t r) { return (int64_t)((c->px->idx[r] & ~EX_BLANK_BIT) % c->p->w); }
static int64_t px_y(const ex_ctx *c, size_t r) { return (int64_t)((c->px->idx[r] & ~EX_BLANK_BIT) / c->p->w); }

/* The threshold SEP stores with a pixel (used by cleaning). */
static float px_thresh(const ex_ctx *c, size_t r)
{
    return c->p->noise == EX_NOISE_MAP ? ex_fmul(c->p->relthresh, c->px->sig[r]) : c->p->thresh;
}

static bool objs_push(ex_objs *o, const ex_obj *x)
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

static void objs_free(ex_objs *o)
{
    for (size_t i = 0; i < o->n; i++) gpuws__free(o->v[i].pix);
    gpuws__free(o->v);
    memset(o, 0, sizeof *o);
}

/* SEP's preanalyse: bounds, peaks (the first largest in list order), the filtered flux (summed in double, kept as
 * float). */
static void preanalyse(const ex_ctx *c, ex_obj *o)
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

/* SEP's analyse. robust: an object made by deblending keeps the barycentre of its earlier analysis. */
static void analyse(const ex_ctx *c, ex_obj *o, int robust)
{
    preanalyse(c, o);
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
        if (c->p->gain > 0.0 && c->px->cd[r] > 0.0f) cvar += c->px->cd[r] / c->p->gain;
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

static int cmp_float_desc(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

/* Cleaning's mthresh: the minarea-th largest excess of a filtered value over its pixel's threshold. */
static bool mthresh(const ex_ctx *c, ex_obj *o)
{
    const size_t m = (size_t)c->p->minarea;
    if (o->npix < m) {
        o->mthresh = 0.0f;
        return true;
    }
    float *t = gpuws__malloc(o->npix * sizeof *t);
    if (!t) return false;
    for (size_t k = 0; k < o->npix; k++) t[k] = c->px->cd[o->pix[k]] - px_thresh(c, o->pix[k]);
    qsort(t, o->npix, sizeof *t, cmp_float_desc);
    o->mthresh = t[m - 1];
    gpuws__free(t);
    return true;
}

/* SEP's clean: whether each object survives, the objects in catalogue order. */
static void clean(const ex_objs *o, double beta, int *survives)
{
    for (size_t i = 0; i < o->n; i++) survives[i] = 1;
    for (size_t i = 0; i < o->n; i++) {
        if (!survives[i]) continue;
        const ex_obj *o1 = &o->v[i];
        const double unitareain = EX_PI * o1->a * o1->b, ampin = o1->fdflux / (2 * unitareain * o1->abcor);
        const double alphain = (pow(ampin / o1->thresh, 1.0 / beta) - 1) * unitareain / (double)o1->npix;
        for (size_t j = i + 1; j < o->n; j++) {
            if (!survives[j]) continue;
            const ex_obj *o2 = &o->v[j];
            const float dx = (float)(o1->mx - o2->mx), dy = (float)(o1->my - o2->my);
            float rlim = o1->a + o2->a;
            rlim *= rlim;
            if (dx * dx + dy * dy > rlim * EX_CLEAN_ZONE * EX_CLEAN_ZONE) continue;
            if (o2->fdflux < o1->fdflux) { /* does the bigger o1 explain o2? */
                const double val = 1 + alphain * (o1->cxx * dx * dx + o1->cyy * dy * dy + o1->cxy * dx * dy);
                if (val > 1.0 && (float)(val < 1e10 ? ampin * pow(val, -beta) : 0.0) > o2->mthresh) survives[j] = 0;
            } else { /* does o2 explain o1? */
                const double unitarea = EX_PI * o2->a * o2->b, amp = o2->fdflux / (2 * unitarea * o2->abcor);
                const double alpha = (pow(amp / o2->thresh, 1.0 / beta) - 1) * unitarea / (double)o2->npix;
                const double val = 1 + alpha * (o2->cxx * dx * dx + o2->cyy * dy * dy + o2->cxy * dx * dy);
                if (val > 1.0 && (float)(val < 1e10 ? amp * pow(val, -beta) : 0.0) > o1->mthresh) survives[i] = 0;
            }
        }
    }
}

/* Deblending: for now the component as one object (deblend_cont = 1). Takes o->pix. */
static bool deblend(const ex_ctx *c, ex_obj *o, ex_objs *out)
{
    (void)c;
    if (objs_push(out, o)) return true;
    gpuws__free(o->pix);
    return false;
}

typedef struct {
    uint64_t key; /* where SEP's scan completes the component */
    size_t first, n;
    float thresh;
} ex_comp;

static int cmp_comp(const void *a, const void *b)
{
    const uint64_t x = ((const ex_comp *)a)->key, y = ((const ex_comp *)b)->key;
    return x < y ? -1 : x > y;
}

gpuws_status gpuws__extract_objects(const gpuws__extract_params *p, const gpuws__extract_pixels *px,
                                    gpuws_extract_catalog **out, int32_t *obj_of)
{
    const ex_ctx c = { p, px };
    const size_t n = px->n;
    size_t nl = 0;
    for (size_t r = 0; r < n; r++)
        if ((size_t)px->label[r] > nl) nl = (size_t)px->label[r];
    size_t *start = gpuws__calloc(nl + 2, sizeof *start), *order = gpuws__malloc((n ? n : 1) * sizeof *order);
    ex_comp *comps = gpuws__malloc((nl ? nl : 1) * sizeof *comps);
    ex_objs objs = { 0 };
    int *survives = NULL;
    gpuws_extract_catalog *cat = NULL;
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY;
    if (!start || !order || !comps) goto done;
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
    qsort(comps, nc, sizeof *comps, cmp_comp);
    for (size_t k = 0; k < nc; k++) {
        ex_obj o;
        memset(&o, 0, sizeof o);
        if (!(o.pix = gpuws__malloc(comps[k].n * sizeof *o.pix))) goto done;
        memcpy(o.pix, order + comps[k].first, comps[k].n * sizeof *o.pix);
        o.npix = comps[k].n;
        o.thresh = comps[k].thresh;
        for (size_t i = 0; i < o.npix; i++) {
            const size_t r = o.pix[i];
            const int64_t x = px_x(&c, r), y = px_y(&c, r);
            if (x == 0 || y == 0 || x == (int64_t)p->w - 1 || y == (int64_t)p->h - 1) o.flag |= GPUWS_OBJ_TRUNC;
            if (px->idx[r] & EX_BLANK_BIT) o.flag |= GPUWS_OBJ_BLANK;
        }
        const size_t before = objs.n;
        if (!deblend(&c, &o, &objs)) { /* takes o.pix */
            goto done;
        }
        for (size_t i = before; i < objs.n; i++) analyse(&c, &objs.v[i], 1);
    }
    survives = gpuws__malloc((objs.n ? objs.n : 1) * sizeof *survives);
    if (!survives) goto done;
    if (p->clean) {
        for (size_t i = 0; i < objs.n; i++)
            if (!mthresh(&c, &objs.v[i])) goto done;
        clean(&objs, p->clean_param, survives);
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
    objs_free(&objs);
    gpuws__free(survives);
    gpuws__free(start);
    gpuws__free(order);
    gpuws__free(comps);
    return st;
}
