/* gpuws_extract's host steps (extract_ref.h): from the pixel records of the components, in raster order, to SEP's
 * catalogue, in double precision and a fixed order, so that every backend gives the same catalogue.
 *  1. Components of at least minarea pixels, in the order SEP's one-pass scan completes them: by the last pixel of
 *     their last row (row, then column), which is where the scan finds them finished. Their threshold is SEP's:
 *     the constant one, or, with a σ map, the mean of their pixels' thresholds (SEP >= 1.3.3), or with
 *     GPUWS_SEP_1_2 relthresh × σ at the pixel that follows that last pixel on the next row (0 outside the image),
 *     where SEP 1.2's scan stands when it completes the object.
 *  2. Lutz's scan of each component's box orders its pixels as SEP chains them; deblending (SExtractor's
 *     multi-threshold tree and gatherup, with SEP's random numbers) splits it into objects.
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
    size_t son0, son1; /* deblending: the node's sons, nodes[son0 .. son1 - 1] */
    bool keep;         /* deblending: no split below it */
} ex_obj;

typedef struct {
    ex_obj *v;
    size_t n, cap;
} ex_objs;

typedef struct {
    const gpuws__extract_params *p;
    const gpuws__extract_pixels *px;
    unsigned seed;         /* SEP's random numbers for deblending's faint pixels, seeded with 1 per extraction */
    const uint32_t *x, *y; /* each record's column and row: divisions by w done once, not at every visit */
} ex_ctx;

static int64_t px_x(const ex_ctx *c, size_t r) { return (int64_t)c->x[r]; }
static int64_t px_y(const ex_ctx *c, size_t r) { return (int64_t)c->y[r]; }

/* The threshold SEP stores with a pixel (used by cleaning). */
static float px_thresh(const ex_ctx *c, size_t r)
{
    return c->p->noise == EX_NOISE_MAP ? ex_fmul(c->p->relthresh, c->px->sig[r]) : c->p->thresh;
}

/* SEP >= 1.3.3's threshold of a component with a σ map: the mean of its pixels' thresholds, summed in double and
 * rounded to float. SEP adds them in its chain order, this in raster order: the same sum, exact in double, while
 * the thresholds lie within a factor 2^29 / n of each other (a σ map varies slowly); past that (a masked pixel's σ
 * of 1e30 in a matched-filter detection) the two can differ in the double's last bits, which the rounding to float
 * hides but at a near tie. */
static float mean_thresh(const ex_ctx *c, const size_t *rec, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++) s += (double)px_thresh(c, rec[k]);
    return (float)(s / (double)n);
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
static void analyse(const ex_ctx *c, ex_obj *o, int robust, double gain)
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

/* Sorts v[0 .. n - 1] ascending (tmp: n entries) in the order that glibc's qsort, a top-down merge sort, gives with
 * the comparator x < y ? -1 : x > y: halves of n / 2 and n - n / 2, the left element taken first unless it compares
 * greater; so NaN excesses, which no comparison places, land where they land there, on every C library. */
static void sort_float_msort(float *v, size_t n, float *tmp)
{
    if (n <= 1) return;
    const size_t n1 = n / 2;
    sort_float_msort(v, n1, tmp);
    sort_float_msort(v + n1, n - n1, tmp);
    size_t i = 0, j = n1, k = 0;
    while (i < n1 && j < n) tmp[k++] = v[j] < v[i] ? v[j++] : v[i++];
    while (i < n1) tmp[k++] = v[i++];
    memcpy(v, tmp, k * sizeof *v);
}

/* Cleaning's mthresh, as SEP finds it: the excesses of the filtered values over their pixels' thresholds in pixel
 * list order; the first minarea go into an array, which is sorted when the next pixel comes (that pixel itself is
 * not kept); every later excess larger than the array's first replaces it and moves down SExtractor's heap walk.
 * mthresh is then the array's first value. */
static void mthresh(const ex_ctx *c, ex_obj *o, float *heap, float *tmp)
{
    const size_t m = (size_t)c->p->minarea;
    if (o->npix < m) {
        o->mthresh = 0.0f;
        return;
    }
    for (size_t k = 0; k < o->npix; k++) {
        const float t = c->px->cd[o->pix[k]] - px_thresh(c, o->pix[k]);
        if (k < m) {
            heap[k] = t;
        } else if (k == m) {
            sort_float_msort(heap, m, tmp);
        } else if (t > heap[0]) {
            heap[0] = t;
            /* SExtractor's walk: from slot j to the smaller of slots k - 1 and k (k = 2(j + 1)), then on from k */
            for (size_t j = 0, kk; (kk = (j + 1) << 1) <= m; j = kk) {
                size_t child = kk - 1;
                if (kk != m && heap[kk - 1] > heap[kk]) {
                    child = kk;
                    kk++;
                }
                if (heap[j] <= heap[child]) break;
                const float sw = heap[child];
                heap[child] = heap[j];
                heap[j] = sw;
            }
        }
    }
    o->mthresh = heap[0];
}

/* ---- cleaning ---- */

/* Whether SEP's clean passes over the pair (o1, o2) as too far apart: further than 10 (a1 + a2), in SEP's float
 * arithmetic (never when an a is NaN or infinite). */
static bool clean_far(const ex_obj *o1, const ex_obj *o2)
{
    const float dx = (float)(o1->mx - o2->mx), dy = (float)(o1->my - o2->my);
    float rlim = o1->a + o2->a;
    rlim *= rlim;
    return dx * dx + dy * dy > rlim * EX_CLEAN_ZONE * EX_CLEAN_ZONE;
}

/* Sorts v[0 .. n - 1] ascending (tmp: n entries): insertion for a few, else an LSD radix sort, 8 bits a pass. */
static void sort_size(size_t *v, size_t n, size_t *tmp)
{
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            const size_t x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    size_t maxv = 0, *src = v, *dst = tmp;
    for (size_t i = 0; i < n; i++) maxv = v[i] > maxv ? v[i] : maxv;
    for (unsigned shift = 0; shift < 64 && (shift == 0 || (maxv >> shift)); shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < n; i++) count[(src[i] >> shift & 0xffu) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) dst[count[src[i] >> shift & 0xffu]++] = src[i];
        size_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
}

/* Cleaning's search for the neighbours of an object. The objects with a finite a and position go into levels by a
 * (below 1, then [2^(k-1), 2^k)), so that a level's largest a is at most twice its smallest, and each level into a
 * grid of square cells over the image, about 20 times its largest a wide (wider where the level has few objects):
 * an object's possible neighbours in a level then lie in the few cells within 10 (its a + the level's largest a).
 * Where that search would cover most of a level's cells, the level's list is walked instead. The cost follows the
 * objects near each object, not the largest object of the image. Positions outside the image fall in the edge
 * cells, so that a search clamped to the grid still finds them. */
#define CL_LEVELS 130 /* frexp's exponents of the floats, from 0 */

typedef struct {
    float amax;  /* the largest a in the level */
    double cell; /* the cells' width */
    size_t gx, gy;
    size_t first, n; /* the level's objects: ids[first .. first + n - 1] ascending, and the same in cells */
    size_t cfirst;   /* cell k holds cellids[first + cstart[cfirst + k] .. first + cstart[cfirst + k + 1] - 1] */
} cl_level;

typedef struct {
    cl_level lv[CL_LEVELS];
    size_t *ids, *cellids, *cstart;
} cl_grid;

static int cl_level_of(float a)
{
    int e;
    (void)frexp(a, &e);
    return e < 1 ? 0 : e;
}

/* The cell of coordinate x in a row or column of g cells of width cell, clamped to the grid. */
static size_t cl_cell(double x, double cell, size_t g)
{
    const double t = floor(x / cell);
    return t <= 0.0 ? 0 : t >= (double)(g - 1) ? g - 1 : (size_t)t;
}

static bool cl_in_grid(const ex_obj *o) { return isfinite(o->a) && isfinite(o->mx) && isfinite(o->my); }

/* Builds the levels and grids of the objects of o over a w x h image; false when memory fails (g freed). */
static bool cl_build(cl_grid *g, const ex_objs *o, size_t w, size_t h)
{
    const size_t n = o->n;
    memset(g, 0, sizeof *g);
    g->ids = gpuws__malloc((n ? n : 1) * sizeof *g->ids);
    g->cellids = gpuws__malloc((n ? n : 1) * sizeof *g->cellids);
    if (!g->ids || !g->cellids) goto fail;
    for (size_t i = 0; i < n; i++) {
        if (!cl_in_grid(&o->v[i])) continue;
        cl_level *l = &g->lv[cl_level_of(o->v[i].a)];
        l->n++;
        l->amax = o->v[i].a > l->amax ? o->v[i].a : l->amax;
    }
    size_t at = 0, ncells = 0;
    for (int k = 0; k < CL_LEVELS; k++) {
        cl_level *l = &g->lv[k];
        l->first = at;
        at += l->n;
        if (!l->n) continue;
        /* cells 20 largest a wide, at most about 4 per object, at least a pixel */
        const double area = (double)w * (double)h;
        l->cell = 20.0 * (double)l->amax;
        if (l->cell < sqrt(area / (double)(2 * l->n))) l->cell = sqrt(area / (double)(2 * l->n));
        if (l->cell < 1.0) l->cell = 1.0;
        for (;;) {
            const double gx = ceil((double)w / l->cell), gy = ceil((double)h / l->cell);
            if (gx * gy <= 4.0 * (double)l->n + 16.0) {
                l->gx = gx < 1.0 ? 1 : (size_t)gx;
                l->gy = gy < 1.0 ? 1 : (size_t)gy;
                break;
            }
            l->cell *= 2.0;
        }
        l->cfirst = ncells;
        ncells += l->gx * l->gy + 1;
    }
    if (!(g->cstart = gpuws__calloc(ncells ? ncells : 1, sizeof *g->cstart))) goto fail;
    size_t fill[CL_LEVELS] = { 0 };
    for (size_t i = 0; i < n; i++) {
        const ex_obj *q = &o->v[i];
        if (!cl_in_grid(q)) continue;
        const int k = cl_level_of(q->a);
        const cl_level *l = &g->lv[k];
        g->ids[l->first + fill[k]++] = i;
        g->cstart[l->cfirst + 1 + cl_cell(q->my, l->cell, l->gy) * l->gx + cl_cell(q->mx, l->cell, l->gx)]++;
    }
    for (int k = 0; k < CL_LEVELS; k++) {
        const cl_level *l = &g->lv[k];
        if (!l->n) continue;
        size_t *cs = g->cstart + l->cfirst;
        for (size_t c = 0; c < l->gx * l->gy; c++) cs[c + 1] += cs[c];
        /* each cell's objects ascending: the level's list is */
        for (size_t m = 0; m < l->n; m++) {
            const size_t i = g->ids[l->first + m];
            const size_t c = cl_cell(o->v[i].my, l->cell, l->gy) * l->gx + cl_cell(o->v[i].mx, l->cell, l->gx);
            g->cellids[l->first + cs[c]++] = i;
        }
        for (size_t c = l->gx * l->gy; c > 0; c--) cs[c] = cs[c - 1];
        cs[0] = 0;
    }
    return true;
fail:
    gpuws__free(g->ids);
    gpuws__free(g->cellids);
    memset(g, 0, sizeof *g);
    return false;
}

static void cl_free(cl_grid *g)
{
    gpuws__free(g->ids);
    gpuws__free(g->cellids);
    gpuws__free(g->cstart);
}

/* Appends to cand the objects j > i of the grid that still survive and that SEP does not pass over as too far from
 * o1 = o->v[i] (finite a and position); returns their count (in no particular order). */
static size_t cl_near(const cl_grid *g, const ex_objs *o, size_t i, const int *survives, size_t *cand)
{
    const ex_obj *o1 = &o->v[i];
    size_t nc = 0;
    for (int k = 0; k < CL_LEVELS; k++) {
        const cl_level *l = &g->lv[k];
        if (!l->n) continue;
        /* the zone, with a margin for SEP's float arithmetic (a float overflow there spares every pair) */
        const double s = (double)o1->a + (double)l->amax;
        const double r = s > 1e18 ? INFINITY : s * EX_CLEAN_ZONE * (1.0 + 1e-4) + 1e-3;
        const size_t x0 = cl_cell(o1->mx - r, l->cell, l->gx), x1 = cl_cell(o1->mx + r, l->cell, l->gx);
        const size_t y0 = cl_cell(o1->my - r, l->cell, l->gy), y1 = cl_cell(o1->my + r, l->cell, l->gy);
        if ((x1 - x0 + 1) * (y1 - y0 + 1) * 4 >= l->n) { /* most of the level: its list */
            const size_t *ids = g->ids + l->first;
            size_t lo = 0, hi = l->n;
            while (lo < hi) {
                const size_t mid = lo + (hi - lo) / 2;
                if (ids[mid] <= i) lo = mid + 1;
                else hi = mid;
            }
            for (size_t m = lo; m < l->n; m++)
                if (survives[ids[m]] && !clean_far(o1, &o->v[ids[m]])) cand[nc++] = ids[m];
            continue;
        }
        const size_t *cs = g->cstart + l->cfirst, *cell = g->cellids + l->first;
        for (size_t y = y0; y <= y1; y++)
            for (size_t c = y * l->gx + x0; c <= y * l->gx + x1; c++)
                for (size_t m = cs[c]; m < cs[c + 1]; m++) {
                    const size_t j = cell[m];
                    if (j > i && survives[j] && !clean_far(o1, &o->v[j])) cand[nc++] = j;
                }
    }
    return nc;
}

/* SEP's clean: whether each object survives, the objects in catalogue order. SEP compares every pair, in
 * catalogue order; a pair further apart than 10 (a1 + a2) has no effect, and neither has a pair with a NaN
 * position, so each object is compared with the grid's neighbours (cl_near) and the objects whose a is not finite,
 * in catalogue order; an object whose a is not finite with every later one. w x h: the image. False when memory
 * fails. */
static bool clean(const ex_objs *o, double beta, size_t w, size_t h, int *survives)
{
    const size_t n = o->n;
    size_t *cand = gpuws__malloc((n ? n : 1) * sizeof *cand), *tmp = gpuws__malloc((n ? n : 1) * sizeof *tmp);
    size_t *wild = gpuws__malloc((n ? n : 1) * sizeof *wild), nwild = 0; /* a not finite: never passed over */
    cl_grid g;
    if (!cand || !tmp || !wild || !cl_build(&g, o, w, h)) {
        gpuws__free(cand);
        gpuws__free(tmp);
        gpuws__free(wild);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        survives[i] = 1;
        if (!isfinite(o->v[i].a)) wild[nwild++] = i;
    }
    size_t w0 = 0; /* wild[w0 ..]: the wild objects after i */
    for (size_t i = 0; i < n; i++) {
        while (w0 < nwild && wild[w0] <= i) w0++;
        if (!survives[i]) continue;
        const ex_obj *o1 = &o->v[i];
        if (!isfinite(o1->mx) || !isfinite(o1->my)) continue;
        size_t nc = 0;
        if (isfinite(o1->a)) {
            nc = cl_near(&g, o, i, survives, cand);
            for (size_t k = w0; k < nwild; k++)
                if (survives[wild[k]] && !clean_far(o1, &o->v[wild[k]])) cand[nc++] = wild[k];
            sort_size(cand, nc, tmp);
        } else {
            for (size_t j = i + 1; j < n; j++)
                if (survives[j] && !clean_far(o1, &o->v[j])) cand[nc++] = j;
        }
        const double unitareain = EX_PI * o1->a * o1->b, ampin = o1->fdflux / (2 * unitareain * o1->abcor);
        const double alphain = (pow(ampin / o1->thresh, 1.0 / beta) - 1) * unitareain / (double)o1->npix;
        for (size_t k = 0; k < nc; k++) { /* survives[cand[k]] changes only at k */
            const size_t j = cand[k];
            const ex_obj *o2 = &o->v[j];
            const float dx = (float)(o1->mx - o2->mx), dy = (float)(o1->my - o2->my);
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
    cl_free(&g);
    gpuws__free(cand);
    gpuws__free(tmp);
    gpuws__free(wild);
    return true;
}

/* ---- Lutz's scan and SExtractor's deblending ----
 * Deblending runs Lutz's one-pass scan (SExtractor's lutz.c) on an object's box; the order of the pixels in each
 * object it finds (their "chain") and the order of the objects are the scan's, and they decide SEP's results where
 * order matters: the first of equal peaks, cleaning's mthresh, and which faint pixel deblending gives to which
 * object (a random draw per pixel, in chain order). The scan keeps, for the row above, markers at the columns where
 * a run of object pixels starts ('S' first run of an object, 's' a later one) or ends ('f' object not finished, 'F'
 * finished); crossing a marker on the current row updates which partial objects are open, and partial objects join
 * by appending one chain to the other. */

typedef struct {
    int64_t first, last; /* local pixel numbers, -1: none */
    size_t n;
} lz_part;

enum { LZ_NONOBJECT, LZ_OBJECT, LZ_COMPLETE, LZ_INCOMPLETE };
#define LZ_UNKNOWN (-1)

typedef struct {
    /* the box and what lies in it: rec[y * bw + x] = record number or -1 */
    int64_t x0, y0, bw, bh;
    const int32_t *rec;
    const float *cd; /* the filtered value at each pixel with a record, read in the box's order */
    /* scan state, bw + 2 entries each */
    lz_part *part, *store;
    char *marker;
    int *psstack;
    int64_t *start, *end;
    /* pixels met, in scan order: their records and the chains through them */
    size_t *ids;
    int64_t *next;
    size_t nids;
} lz_scan;

static void lz_join(lz_scan *z, lz_part *a, const lz_part *b)
{
    a->n += b->n;
    if (a->first == -1) {
        a->first = b->first;
        a->last = b->last;
    } else if (b->last != -1) {
        z->next[a->last] = b->first;
        a->last = b->last;
    }
}

static void lz_free(lz_scan *z)
{
    gpuws__free(z->part);
    gpuws__free(z->store);
    gpuws__free(z->marker);
    gpuws__free(z->psstack);
    gpuws__free(z->start);
    gpuws__free(z->end);
    gpuws__free(z->ids);
    gpuws__free(z->next);
}

/* Buffers for scans of boxes up to bw x bh with up to npix pixels. */
static bool lz_init(lz_scan *z, int64_t bw, size_t npix)
{
    const size_t m = (size_t)bw + 2;
    memset(z, 0, sizeof *z);
    z->part = gpuws__malloc(m * sizeof *z->part);
    z->store = gpuws__malloc(m * sizeof *z->store);
    z->marker = gpuws__malloc(m);
    z->psstack = gpuws__malloc(2 * m * sizeof *z->psstack);
    z->start = gpuws__malloc(m * sizeof *z->start);
    z->end = gpuws__malloc(m * sizeof *z->end);
    z->ids = gpuws__malloc((npix ? npix : 1) * sizeof *z->ids);
    z->next = gpuws__malloc((npix ? npix : 1) * sizeof *z->next);
    if (z->part && z->store && z->marker && z->psstack && z->start && z->end && z->ids && z->next) return true;
    lz_free(z);
    return false;
}

/* Scans the sub-box [sx0, sx1] x [sy0, sy1] of z's box for pixels with a record whose filtered value exceeds t (all
 * of them when all), and appends the objects of at least minsize pixels to out in the order the scan completes
 * them, each with its pixels in chain order, its threshold t and no flags. */
static bool lz_run(lz_scan *z, int64_t sx0, int64_t sy0, int64_t sx1, int64_t sy1, float t, bool all, size_t minsize,
                   ex_objs *out)
{
    const int64_t w = sx1 - sx0 + 1;
    int co = 0, pstop = 0;
    z->nids = 0;
    memset(z->marker, 0, (size_t)w + 1);
    for (int64_t y = sy0; y <= sy1 + 1; y++) {
        int ps = LZ_COMPLETE, cs = LZ_NONOBJECT;
        for (int64_t xi = 0; xi <= w; xi++) {
            const char nm = z->marker[xi];
            z->marker[xi] = 0;
            int64_t r = -1;
            if (y <= sy1 && xi < w) {
                const int64_t q = (y - z->y0) * z->bw + (sx0 + xi - z->x0);
                r = z->rec[q];
                if (r >= 0 && !all && !(z->cd[q] > t)) r = -1;
            }
            lz_part cur = { -1, -1, 0 };
            if (r >= 0) {
                const int64_t id = (int64_t)z->nids++;
                z->ids[id] = (size_t)r;
                z->next[id] = -1;
                cur.first = cur.last = id;
                cur.n = 1;
                if (cs != LZ_OBJECT) { /* a run starts */
                    cs = LZ_OBJECT;
                    if (ps == LZ_OBJECT) {
                        if (z->start[co] == LZ_UNKNOWN) {
                            z->marker[xi] = 'S';
                            z->start[co] = xi;
                        } else {
                            z->marker[xi] = 's';
                        }
                    } else {
                        z->psstack[pstop++] = ps;
                        z->marker[xi] = 'S';
                        z->start[++co] = xi;
                        ps = LZ_COMPLETE;
                        z->part[co] = (lz_part){ -1, -1, 0 };
                    }
                }
            }
            if (nm == 'S') { /* an object of the row above starts here */
                z->psstack[pstop++] = ps;
                if (cs == LZ_NONOBJECT) {
                    z->psstack[pstop++] = LZ_COMPLETE;
                    z->part[++co] = z->store[xi];
                    z->start[co] = LZ_UNKNOWN;
                } else {
                    lz_join(z, &z->part[co], &z->store[xi]);
                }
                ps = LZ_OBJECT;
            } else if (nm == 's') { /* a later run of it: the current run joins two partial objects */
                if (cs == LZ_OBJECT && ps == LZ_COMPLETE) {
                    pstop--;
                    const int64_t x2 = z->start[co];
                    lz_join(z, &z->part[co - 1], &z->part[co]);
                    if (z->start[--co] == LZ_UNKNOWN) z->start[co] = x2;
                    else z->marker[x2] = 's';
                }
                ps = LZ_OBJECT;
            } else if (nm == 'f') {
                ps = LZ_INCOMPLETE;
            } else if (nm == 'F') { /* a run of the row above ends here */
                ps = z->psstack[--pstop];
                if (cs == LZ_NONOBJECT && ps == LZ_COMPLETE) {
                    if (z->start[co] == LZ_UNKNOWN) { /* nothing of it on this row: finished */
                        if (z->part[co].n >= minsize) {
                            ex_obj o;
                            memset(&o, 0, sizeof o);
                            if (!(o.pix = gpuws__malloc(z->part[co].n * sizeof *o.pix))) return false;
                            for (int64_t id = z->part[co].first; id != -1; id = z->next[id])
                                o.pix[o.npix++] = z->ids[id];
                            o.thresh = t;
                            if (!objs_push(out, &o)) {
                                gpuws__free(o.pix);
                                return false;
                            }
                        }
                    } else {
                        z->marker[z->end[co]] = 'F';
                        z->store[z->start[co]] = z->part[co];
                    }
                    co--;
                    ps = z->psstack[--pstop];
                }
            }
            if (r >= 0) {
                lz_join(z, &z->part[co], &cur);
            } else if (cs == LZ_OBJECT) { /* a run ends */
                cs = LZ_NONOBJECT;
                if (ps != LZ_COMPLETE) {
                    z->marker[xi] = 'f';
                    z->end[co] = xi;
                } else {
                    ps = z->psstack[--pstop];
                    z->marker[xi] = 'F';
                    z->store[z->start[co]] = z->part[co];
                    co--;
                }
            }
        }
    }
    return true;
}

/* glibc's rand_r, which SEP draws from. */
static int ex_rand(unsigned *seed)
{
    unsigned next = *seed;
    int result;
    next = next * 1103515245u + 12345u;
    result = (int)((next / 65536u) % 2048u);
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ (int)((next / 65536u) % 1024u);
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ (int)((next / 65536u) % 1024u);
    *seed = next;
    return result;
}

/* The flag of an object with a pixel on the image's edge, from its bounds (preanalyse's): a pixel lies on the edge
 * exactly when a bound does. */
static int edge_flag(const ex_ctx *c, const ex_obj *o)
{
    const bool edge =
        o->xmin == 0 || o->ymin == 0 || o->xmax == (int64_t)c->p->w - 1 || o->ymax == (int64_t)c->p->h - 1;
    return edge ? GPUWS_OBJ_TRUNC : 0;
}

static int blank_flag(const ex_ctx *c, const ex_obj *o)
{
    for (size_t i = 0; i < o->npix; i++)
        if (c->px->idx[o->pix[i]] & EX_BLANK_BIT) return GPUWS_OBJ_BLANK;
    return 0;
}

static bool obj_copy(ex_obj *dst, const ex_obj *src, size_t extra)
{
    *dst = *src;
    if (!(dst->pix = gpuws__malloc((src->npix + extra) * sizeof *dst->pix))) return false;
    memcpy(dst->pix, src->pix, src->npix * sizeof *dst->pix);
    return true;
}

/* SExtractor's gatherup: the objects kept by deblending (d->v[1..]) take the pixels of the component (d->v[0]) that
 * none of them holds, each pixel drawn at random in proportion to the objects' fitted profiles there. */
static bool gatherup(ex_ctx *c, ex_objs *d, const int32_t *rec, int64_t bx0, int64_t by0, int64_t bw, ex_objs *out)
{
    const size_t n = d->n;
    const ex_obj *root = &d->v[0];
    float *amp = gpuws__malloc(n * sizeof *amp), *p = gpuws__malloc(n * sizeof *p);
    size_t *slot = gpuws__malloc(n * sizeof *slot);
    uint8_t *taken = gpuws__calloc((size_t)bw * (size_t)(root->ymax - root->ymin + 1), 1);
    bool ok = amp && p && slot && taken;
    (void)rec;
    const size_t first_out = out->n;
    for (size_t i = 1; ok && i < n; i++) {
        ex_obj *o = &d->v[i];
        analyse(c, o, 0, 0.0);
        o->thresh = root->thresh; /* past deblending: the component's threshold again */
        for (size_t k = 0; k < o->npix; k++) taken[(px_y(c, o->pix[k]) - by0) * bw + (px_x(c, o->pix[k]) - bx0)] = 1;
        const float dist = (float)((double)o->npix / (2 * EX_PI * o->abcor * o->a * o->b));
        amp[i] = dist < 70.0f ? o->thresh * expf(dist) : (float)(4.0 * o->fdpeak);
        if (amp[i] > 4.0 * o->fdpeak) amp[i] = (float)(4.0 * o->fdpeak);
    }
    /* the outputs, with room for every unclaimed pixel */
    size_t extra = root->npix;
    for (size_t i = 1; i < n; i++) extra -= d->v[i].npix;
    for (size_t i = 1; ok && i < n; i++) {
        ex_obj o;
        if (!(ok = obj_copy(&o, &d->v[i], extra))) break;
        if (!(ok = objs_push(out, &o))) gpuws__free(o.pix);
        slot[i] = out->n - 1;
    }
    if (ok) p[0] = 0.0f;
    for (size_t k = 0; ok && k < root->npix; k++) {
        const size_t r = root->pix[k];
        const int64_t x = px_x(c, r), y = px_y(c, r);
        if (taken[(y - by0) * bw + (x - bx0)]) continue;
        float distmin = 1e+31f;
        size_t iclst = 0, i;
        for (i = 1; i < n; i++) {
            const ex_obj *o = &d->v[i];
            const float dx = (float)((double)x - o->mx), dy = (float)((double)y - o->my);
            const float dist = (float)(0.5 * (o->cxx * dx * dx + o->cyy * dy * dy + o->cxy * dx * dy) / o->abcor);
            p[i] = p[i - 1] + (dist < 70.0f ? amp[i] * expf(-dist) : 0.0f);
            if (dist < distmin) {
                distmin = dist;
                iclst = i;
            }
        }
        if (p[n - 1] > 1.0e-31) {
            const float drand = p[n - 1] * (float)ex_rand(&c->seed) / (float)2147483647;
            for (i = 1; i < n && p[i] < drand; i++) continue;
            if (i == n) i = iclst;
        } else {
            i = iclst;
        }
        ex_obj *o = &out->v[slot[i]];
        o->pix[o->npix++] = r;
    }
    if (!ok) { /* what this call added goes */
        while (out->n > first_out) gpuws__free(out->v[--out->n].pix);
    }
    gpuws__free(amp);
    gpuws__free(p);
    gpuws__free(slot);
    gpuws__free(taken);
    return ok;
}

/* One component (records in raster order, its threshold t0) to its objects, appended to out in SEP's order:
 * SExtractor's multi-threshold deblending. The component's pixels above nthresh - 1 thresholds spaced
 * logarithmically between t0 and its filtered peak form a tree (the objects of each level, found by Lutz's scan in
 * each object of the level below); from the top down, a node with more than one son holding more than
 * deblend_cont of the component's filtered flux (above its own threshold) keeps those sons (unless a son's subtree
 * splits further) and gives up the rest; then gatherup hands the pixels no kept object holds to the kept ones.
 * With no split the component is one object. */
static bool deblend_component(ex_ctx *c, const size_t *recs, size_t npix, float t0, ex_objs *out)
{
    const gpuws__extract_params *p = c->p;
    int64_t xmin = INT64_MAX, xmax = 0, ymin = INT64_MAX, ymax = 0;
    for (size_t i = 0; i < npix; i++) {
        const int64_t x = px_x(c, recs[i]), y = px_y(c, recs[i]);
        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
        ymin = y < ymin ? y : ymin;
        ymax = y > ymax ? y : ymax;
    }
    const int64_t bw = xmax - xmin + 1, bh = ymax - ymin + 1;
    const size_t xn = (size_t)p->deblend_nthresh;
    int32_t *rec = gpuws__malloc((size_t)(bw * bh) * sizeof *rec); /* record numbers: at most 2^31 - 1 pixels */
    float *cdb = gpuws__malloc((size_t)(bw * bh) * sizeof *cdb);
    uint64_t *owner = gpuws__calloc((size_t)(bw * bh), sizeof *owner), stamp = 0; /* which node holds a pixel */
    size_t *lvl = gpuws__malloc((xn + 1) * sizeof *lvl); /* level k: nodes[lvl[k] .. lvl[k + 1] - 1] */
    ex_objs nodes = { 0 }, kept = { 0 };
    lz_scan z;
    bool ok = rec && cdb && owner && lvl && lz_init(&z, bw, npix);
    if (!ok) {
        gpuws__free(rec);
        gpuws__free(cdb);
        gpuws__free(owner);
        gpuws__free(lvl);
        return false;
    }
    for (int64_t i = 0; i < bw * bh; i++) rec[i] = -1;
    for (size_t i = 0; i < npix; i++) {
        const int64_t q = (px_y(c, recs[i]) - ymin) * bw + (px_x(c, recs[i]) - xmin);
        rec[q] = (int32_t)recs[i];
        cdb[q] = c->px->cd[recs[i]];
    }
    z.x0 = xmin;
    z.y0 = ymin;
    z.bw = bw;
    z.bh = bh;
    z.rec = rec;
    z.cd = cdb;
    /* the component itself, its pixels in the order of SEP's scan */
    lvl[0] = 0;
    ok = lz_run(&z, xmin, ymin, xmax, ymax, t0, true, 1, &nodes) && nodes.n == 1;
    if (ok) {
        preanalyse(c, &nodes.v[0]);
        nodes.v[0].flag = edge_flag(c, &nodes.v[0]);
        const double value0 = nodes.v[0].fdflux * p->deblend_cont, peak = nodes.v[0].fdpeak;
        const size_t minsize = p->minarea < 3 ? (size_t)p->minarea : 3; /* SExtractor's smallest sub-object */
        lvl[1] = 1;
        for (size_t k = 1; ok && k < xn; k++) {
            const float t = (float)(peak > 0.0 ? t0 * pow(peak / t0, (double)k / (double)xn) : t0);
            for (size_t i = lvl[k - 1]; ok && i < lvl[k]; i++) {
                const ex_obj par = nodes.v[i]; /* a copy: the scan below may move the nodes */
                const size_t from = nodes.n;
                if (!(par.fdpeak > t)) { /* none of par's pixels above t: the scan would keep nothing */
                    nodes.v[i].son0 = nodes.v[i].son1 = from;
                    continue;
                }
                ok = lz_run(&z, par.xmin, par.ymin, par.xmax, par.ymax, t, false, minsize, &nodes);
                /* keep the objects of par's own (a scan of its box may meet a sibling's pixels) */
                stamp++;
                for (size_t q = 0; q < par.npix; q++)
                    owner[(px_y(c, par.pix[q]) - ymin) * bw + (px_x(c, par.pix[q]) - xmin)] = stamp;
                size_t keep = from;
                for (size_t j = from; ok && j < nodes.n; j++) {
                    const size_t head = nodes.v[j].pix[0];
                    if (owner[(px_y(c, head) - ymin) * bw + (px_x(c, head) - xmin)] == stamp) {
                        nodes.v[keep] = nodes.v[j];
                        preanalyse(c, &nodes.v[keep]);
                        nodes.v[keep].flag = edge_flag(c, &nodes.v[keep]);
                        keep++;
                    } else {
                        gpuws__free(nodes.v[j].pix);
                    }
                }
                if (ok) nodes.n = keep; /* else objs_free frees what the scan found */
                nodes.v[i].son0 = from;
                nodes.v[i].son1 = nodes.n;
            }
            lvl[k + 1] = nodes.n;
        }
        for (size_t i = 0; ok && i < nodes.n; i++) nodes.v[i].keep = true;
        ex_obj rootcopy;
        ok = ok && obj_copy(&rootcopy, &nodes.v[0], 0);
        if (ok && !(ok = objs_push(&kept, &rootcopy))) gpuws__free(rootcopy.pix);
        /* from the top down: nodes with more than one significant son keep them */
        for (size_t k = xn - 1; ok && k-- > 0;) {
            for (size_t i = lvl[k]; ok && i < lvl[k + 1]; i++) {
                ex_obj *par = &nodes.v[i];
                size_t m = 0;
                for (size_t j = par->son0; j < par->son1; j++) {
                    const ex_obj *o = &nodes.v[j];
                    if (o->fdflux - o->thresh * (float)o->npix > value0) m++;
                    par->keep = par->keep && o->keep;
                }
                if (m > 1) {
                    for (size_t j = par->son0; ok && j < par->son1; j++) {
                        ex_obj *o = &nodes.v[j];
                        if (o->keep && o->fdflux - o->thresh * (float)o->npix > value0) {
                            o->flag |= GPUWS_OBJ_MERGED;
                            ex_obj cp;
                            if ((ok = obj_copy(&cp, o, 0)) && !(ok = objs_push(&kept, &cp))) gpuws__free(cp.pix);
                        }
                    }
                    par->keep = false;
                }
            }
        }
        if (ok) {
            const size_t first = out->n;
            if (nodes.v[0].keep) {
                ex_obj o;
                if ((ok = obj_copy(&o, &kept.v[0], 0)) && !(ok = objs_push(out, &o))) gpuws__free(o.pix);
            } else {
                ok = gatherup(c, &kept, rec, xmin, ymin, bw, out);
            }
            for (size_t i = first; ok && i < out->n; i++) out->v[i].flag |= blank_flag(c, &out->v[i]);
        }
    }
    objs_free(&kept);
    objs_free(&nodes);
    gpuws__free(lvl);
    gpuws__free(rec);
    gpuws__free(cdb);
    gpuws__free(owner);
    lz_free(&z);
    return ok;
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
    ex_ctx c = { p, px, 1u, xy, xy + n };
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
        comps[nc].thresh = p->noise != EX_NOISE_MAP          ? p->thresh
                           : p->sep_version == GPUWS_SEP_1_2 ? ex_fmul(p->relthresh, px->sig_lr[last])
                                                             : mean_thresh(&c, order + first, cnt);
        nc++;
    }
    sort_comps(comps, nc, comps + nl);
    for (size_t k = 0; k < nc; k++) {
        const size_t before = objs.n;
        if (!deblend_component(&c, order + comps[k].first, comps[k].n, comps[k].thresh, &objs)) goto done;
        for (size_t i = before; i < objs.n; i++) analyse(&c, &objs.v[i], 1, p->gain);
    }
    survives = gpuws__malloc((objs.n ? objs.n : 1) * sizeof *survives);
    if (!survives) goto done;
    if (p->clean) {
        heap = gpuws__malloc(2 * (size_t)p->minarea * sizeof *heap);
        if (!heap) goto done;
        for (size_t i = 0; i < objs.n; i++) mthresh(&c, &objs.v[i], heap, heap + p->minarea);
        if (!clean(&objs, p->clean_param, p->w, p->h, survives)) goto done;
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
    gpuws__free(heap);
    gpuws__free(xy);
    gpuws__free(start);
    gpuws__free(order);
    gpuws__free(comps);
    return st;
}
