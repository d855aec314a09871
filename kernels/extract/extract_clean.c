/* Cleaning, gpuws_extract's last host step (extract_objects.h): SEP's clean, which removes the objects that a
 * brighter neighbour's profile explains, and the mthresh of each object that it compares with. */
#include "extract_objects.h"
#include "../../core/alloc.h"

#include <math.h>
#include <string.h>

#define EX_CLEAN_ZONE 10.0 /* SExtractor's: cleaning looks this many (a1 + a2) far */

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
void gpuws__ex_mthresh(const ex_ctx *c, ex_obj *o, float *heap, float *tmp)
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

/* An object's place and a: what the search for neighbours reads, packed, so that it reads far less memory than
 * the objects hold. */
typedef struct {
    double mx, my;
    float a;
} cl_pos;

/* Whether SEP's clean passes over the pair (o1, o2) as too far apart: further than 10 (a1 + a2), in SEP's float
 * arithmetic (never when an a is NaN or infinite). */
static bool clean_far(const ex_obj *o1, const cl_pos *o2)
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
    int used[CL_LEVELS], nused; /* the levels with objects, ascending */
    size_t *ids, *cellids, *cstart;
    cl_pos *pos; /* every object's, in catalogue order */
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

static bool cl_in_grid(const cl_pos *o) { return isfinite(o->a) && isfinite(o->mx) && isfinite(o->my); }

/* Builds the levels and grids of the objects of o over a w x h image; false when memory fails (g freed). */
static bool cl_build(cl_grid *g, const ex_objs *o, size_t w, size_t h)
{
    const size_t n = o->n;
    memset(g, 0, sizeof *g);
    g->ids = gpuws__malloc((n ? n : 1) * sizeof *g->ids);
    g->cellids = gpuws__malloc((n ? n : 1) * sizeof *g->cellids);
    g->pos = gpuws__malloc((n ? n : 1) * sizeof *g->pos);
    if (!g->ids || !g->cellids || !g->pos) goto fail;
    for (size_t i = 0; i < n; i++) {
        g->pos[i] = (cl_pos){ o->v[i].mx, o->v[i].my, o->v[i].a };
        const cl_pos *q = &g->pos[i];
        if (!cl_in_grid(q)) continue;
        cl_level *l = &g->lv[cl_level_of(q->a)];
        l->n++;
        l->amax = q->a > l->amax ? q->a : l->amax;
    }
    size_t at = 0, ncells = 0;
    for (int k = 0; k < CL_LEVELS; k++) {
        cl_level *l = &g->lv[k];
        l->first = at;
        at += l->n;
        if (!l->n) continue;
        g->used[g->nused++] = k;
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
        const cl_pos *q = &g->pos[i];
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
            const size_t c = cl_cell(g->pos[i].my, l->cell, l->gy) * l->gx + cl_cell(g->pos[i].mx, l->cell, l->gx);
            g->cellids[l->first + cs[c]++] = i;
        }
        for (size_t c = l->gx * l->gy; c > 0; c--) cs[c] = cs[c - 1];
        cs[0] = 0;
    }
    return true;
fail:
    gpuws__free(g->ids);
    gpuws__free(g->cellids);
    gpuws__free(g->pos);
    memset(g, 0, sizeof *g);
    return false;
}

static void cl_free(cl_grid *g)
{
    gpuws__free(g->ids);
    gpuws__free(g->cellids);
    gpuws__free(g->cstart);
    gpuws__free(g->pos);
}

/* Appends to cand the objects j > i of the grid that still survive and that SEP does not pass over as too far from
 * o1 = o->v[i] (finite a and position); returns their count (in no particular order). */
static size_t cl_near(const cl_grid *g, const ex_objs *o, size_t i, const int *survives, size_t *cand)
{
    const ex_obj *o1 = &o->v[i];
    size_t nc = 0;
    for (int u = 0; u < g->nused; u++) {
        const cl_level *l = &g->lv[g->used[u]];
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
                if (survives[ids[m]] && !clean_far(o1, &g->pos[ids[m]])) cand[nc++] = ids[m];
            continue;
        }
        const size_t *cs = g->cstart + l->cfirst, *cell = g->cellids + l->first;
        for (size_t y = y0; y <= y1; y++)
            for (size_t c = y * l->gx + x0; c <= y * l->gx + x1; c++)
                for (size_t m = cs[c + 1]; m > cs[c] && cell[m - 1] > i; m--) { /* a cell's objects ascend */
                    const size_t j = cell[m - 1];
                    if (survives[j] && !clean_far(o1, &g->pos[j])) cand[nc++] = j;
                }
    }
    return nc;
}

/* SEP's clean: whether each object survives, the objects in catalogue order. SEP compares every pair, in
 * catalogue order; a pair further apart than 10 (a1 + a2) has no effect, and neither has a pair with a NaN
 * position, so each object is compared with the grid's neighbours (cl_near) and the objects whose a is not finite,
 * in catalogue order; an object whose a is not finite with every later one. w x h: the image. False when memory
 * fails. */
bool gpuws__ex_clean(const ex_objs *o, double beta, size_t w, size_t h, int *survives)
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
        if (!isfinite(g.pos[i].a)) wild[nwild++] = i;
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
                if (survives[wild[k]] && !clean_far(o1, &g.pos[wild[k]])) cand[nc++] = wild[k];
            sort_size(cand, nc, tmp);
        } else {
            for (size_t j = i + 1; j < n; j++)
                if (survives[j] && !clean_far(o1, &g.pos[j])) cand[nc++] = j;
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
