/* Cleaning, gpuws_extract's last host step (extract_objects.h): SEP's clean, which removes the objects that a
 * brighter neighbour's profile explains, and the mthresh of each object that it compares with. */
#include "extract_objects.h"
#include "extract_chain.h" /* ex_heap_replace, which the device shares */
#include "extract_clean.h" /* the pair test and the device's search */
#include "../common/driver.h"
#include "../../core/alloc.h"
#include "../../core/errors.h"
#include "../../core/threads.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

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
            ex_heap_replace(heap, m, t);
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

/* Whether SEP's clean passes over the pair (o1, o2) as too far apart (extract_clean.h). */
static bool clean_far(const cl_pos *o1, const cl_pos *o2)
{
    return ex_clean_far(o1->mx, o1->my, o1->a, o2->mx, o2->my, o2->a);
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
    int used[CL_LEVELS], nused;             /* the levels with objects, ascending */
    size_t *ids, *cellids, *cstart, ncells; /* cstart: ncells entries */
    const cl_pos *pos;                      /* every object's, in catalogue order */
} cl_grid;

static int cl_level_of(float a)
{
    int e;
    (void)frexp(a, &e);
    return e < 1 ? 0 : e;
}

static bool cl_in_grid(const cl_pos *o) { return isfinite(o->a) && isfinite(o->mx) && isfinite(o->my); }

#define CL_OUT 255 /* the level of an object outside the grid */

/* A range of objects' count and largest a in each level. */
typedef struct {
    size_t n;
    float amax;
} cl_lstat;

/* An object's level (CL_OUT: outside the grid), counted in st. */
static uint8_t cl_level_count(const cl_pos *q, cl_lstat *st)
{
    if (!cl_in_grid(q)) return CL_OUT;
    const int k = cl_level_of(q->a);
    st[k].n++;
    st[k].amax = q->a > st[k].amax ? q->a : st[k].amax;
    return (uint8_t)k;
}

typedef struct {
    const cl_grid *g;
    const uint8_t *lvl;
    size_t *cellof;
} cl_cells;

/* Each object's cell in its level, for the objects [lo, hi). */
static void cl_cells_range(void *arg, size_t part, size_t lo, size_t hi)
{
    const cl_cells *cc = arg;
    (void)part;
    for (size_t i = lo; i < hi; i++) {
        if (cc->lvl[i] == CL_OUT) continue;
        const cl_level *l = &cc->g->lv[cc->lvl[i]];
        const cl_pos *q = &cc->g->pos[i];
        cc->cellof[i] =
            (size_t)ex_clean_cell(q->my, l->cell, l->gy) * l->gx + (size_t)ex_clean_cell(q->mx, l->cell, l->gx);
    }
}

/* The levels' counts, largest a and geometry (cells, their first in cstart, their first object) from the objects'
 * counts in parts ranges (stats: CL_LEVELS each) over a w x h image; g->pos = pos, nothing allocated. */
static void cl_levels(cl_grid *g, const cl_pos *pos, const cl_lstat *stats, size_t parts, size_t w, size_t h)
{
    memset(g, 0, sizeof *g);
    g->pos = pos;
    for (size_t p = 0; p < parts; p++)
        for (int k = 0; k < CL_LEVELS; k++) {
            cl_level *l = &g->lv[k];
            const cl_lstat *st = &stats[p * CL_LEVELS + k];
            l->n += st->n;
            l->amax = st->amax > l->amax ? st->amax : l->amax;
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
    g->ncells = ncells;
}

/* The grids of the n objects in the levels of cl_levels, from their levels lvl, the cells found on nt threads
 * (cellof: n entries, scratch); false when memory fails (g's arrays freed). */
static bool cl_fill(cl_grid *g, const uint8_t *lvl, size_t n, unsigned nt, size_t *cellof)
{
    g->ids = gpuws__malloc((n ? n : 1) * sizeof *g->ids);
    g->cellids = gpuws__malloc((n ? n : 1) * sizeof *g->cellids);
    g->cstart = gpuws__calloc(g->ncells ? g->ncells : 1, sizeof *g->cstart);
    if (!g->ids || !g->cellids || !g->cstart) {
        gpuws__free(g->ids);
        gpuws__free(g->cellids);
        gpuws__free(g->cstart);
        g->ids = g->cellids = g->cstart = NULL;
        return false;
    }
    cl_cells cc = { g, lvl, cellof };
    gpuws__run_ranges(n, nt, cl_cells_range, &cc);
    size_t fill[CL_LEVELS] = { 0 };
    for (size_t i = 0; i < n; i++) {
        const int k = lvl[i];
        if (k == CL_OUT) continue;
        const cl_level *l = &g->lv[k];
        g->ids[l->first + fill[k]++] = i;
        g->cstart[l->cfirst + 1 + cellof[i]]++;
    }
    for (int k = 0; k < CL_LEVELS; k++) {
        const cl_level *l = &g->lv[k];
        if (!l->n) continue;
        size_t *cs = g->cstart + l->cfirst;
        for (size_t c = 0; c < l->gx * l->gy; c++) cs[c + 1] += cs[c];
        /* each cell's objects ascending: the level's list is */
        for (size_t m = 0; m < l->n; m++) {
            const size_t i = g->ids[l->first + m];
            g->cellids[l->first + cs[cellof[i]]++] = i;
        }
        for (size_t c = l->gx * l->gy; c > 0; c--) cs[c] = cs[c - 1];
        cs[0] = 0;
    }
    return true;
}

static void cl_free(cl_grid *g)
{
    gpuws__free(g->ids);
    gpuws__free(g->cellids);
    gpuws__free(g->cstart);
}

/* ---- the pairs, on threads ----
 *
 * In SEP's loop, the turn of object i (if it still survives and its position is finite) takes its candidates, the
 * later objects near it that still survive, once, before it compares any pair; each pair is a pure function of the
 * two objects, and a candidate's fate changes only at its own pair. So the turn is: every candidate that i
 * explains goes, and i goes if a candidate explains it (those are the brighter ones, never one that i explains, so
 * the kills of the turn do not change that). An object's pairs that act (those whose test holds, whatever the
 * objects' fates) are then worked out on any thread, and only their effects go in catalogue order.
 *
 * The objects are cut into chunks that the threads take in catalogue order; a chunk's pairs that act go into its
 * own list, and whichever thread finds the next chunks in order finished applies them (never waiting for one:
 * the others go on with their chunks). Since a chunk is applied only once every chunk before it is, whatever a
 * thread reads as gone, while it works out a chunk, went in a turn before the chunk's objects: such an object has
 * no turn of its own and neither kills nor explains anything in a later turn, so the thread passes over it, as SEP's
 * loop does. That only saves work (the more, the closer the applying keeps up with the threads); which pairs act
 * for objects not yet gone, and so the result, do not depend on it. */

#define CL_CHUNK 32 /* objects a thread takes at a time: a chunk's pairs are applied once the chunk is done */

/* What a pair's test reads of an object beyond its place: SEP's profile (amp, alpha: SEP's expressions, for each
 * object once), its flux, its ellipse and mthresh. */
typedef struct {
    double amp, alpha;
    float fdflux, mthresh, cxx, cyy, cxy;
} cl_prof;

/* A growing list of a thread's pairs, and a finished chunk's. */
typedef struct {
    size_t *v, n, cap;
} cl_list;

typedef struct {
    const ex_objs *o;
    cl_pos *pos;     /* every object's, packed */
    cl_prof *pf;     /* every object's */
    uint8_t *lvl;    /* every object's level in the grid */
    cl_lstat *stats; /* each range's count and largest a of each level, from the packing */
    const cl_grid *g;
    double beta;
    size_t n, nchunks;
    const size_t *wild; /* the objects whose a is not finite, ascending */
    size_t nwild;
    atomic_uchar *alive;   /* whether each object survives, as the turns applied so far leave it */
    size_t *cnt;           /* object i's pairs that act: the next cnt[i] entries of its chunk's list */
    size_t **pairs;        /* each chunk's list: j << 1 for a j that the object explains, j << 1 | 1 for one that
                            * explains it */
    atomic_bool *ready;    /* a chunk's list is complete */
    cl_list *scratch;      /* one a thread */
    atomic_size_t next;    /* the next chunk to take */
    atomic_size_t applied; /* the chunks applied */
    atomic_bool applying;  /* a thread applies */
    atomic_bool failed;    /* memory failed */
    unsigned nt;           /* the threads */
    double *dd;            /* with the device: each object's mx, my, amp, alpha (extract_clean.h's d) */
    float *df;             /* and a, fdflux, mthresh, cxx, cyy, cxy (its f) */
} cl_job;

/* The objects [lo, hi) packed, alive, in their levels (counted in the range's stats). */
static void cl_pack_range(void *arg, size_t part, size_t lo, size_t hi)
{
    cl_job *cj = arg;
    cl_lstat *st = cj->stats + part * CL_LEVELS;
    for (size_t i = lo; i < hi; i++) {
        const ex_obj *o = &cj->o->v[i];
        const double unitarea = EX_PI * o->a * o->b, amp = o->fdflux / (2 * unitarea * o->abcor);
        const double alpha = (pow(amp / o->thresh, 1.0 / cj->beta) - 1) * unitarea / (double)o->npix;
        cj->pos[i] = (cl_pos){ o->mx, o->my, o->a };
        cj->pf[i] = (cl_prof){ amp, alpha, o->fdflux, o->mthresh, o->cxx, o->cyy, o->cxy };
        if (cj->dd) {
            double *d = cj->dd + 4 * i;
            float *f = cj->df + 6 * i;
            d[0] = o->mx, d[1] = o->my, d[2] = amp, d[3] = alpha;
            f[0] = o->a, f[1] = o->fdflux, f[2] = o->mthresh, f[3] = o->cxx, f[4] = o->cyy, f[5] = o->cxy;
        }
        atomic_init(&cj->alive[i], 1);
        cj->lvl[i] = cl_level_count(&cj->pos[i], st);
    }
}

enum { CL_NONE, CL_KILLS_J, CL_KILLS_I };

/* SEP's test of the pair (o1 = i, o2 = j), i before j and not passed over as too far: whether the brighter o1
 * explains o2 (CL_KILLS_J), the other explains o1 (CL_KILLS_I), or neither. */
static int cl_pair(const cl_job *cj, size_t i, size_t j)
{
    const cl_pos *p1 = &cj->pos[i], *p2 = &cj->pos[j];
    const cl_prof *o1 = &cj->pf[i], *o2 = &cj->pf[j];
    const float dx = (float)(p1->mx - p2->mx), dy = (float)(p1->my - p2->my);
    if (o2->fdflux < o1->fdflux) /* does the bigger o1 explain o2? */
        return ex_clean_explains(o1->amp, o1->alpha, o1->cxx, o1->cyy, o1->cxy, dx, dy, cj->beta, o2->mthresh, 0.0)
                   ? CL_KILLS_J
                   : CL_NONE;
    /* does o2 explain o1? */
    return ex_clean_explains(o2->amp, o2->alpha, o2->cxx, o2->cyy, o2->cxy, dx, dy, cj->beta, o1->mthresh, 0.0)
               ? CL_KILLS_I
               : CL_NONE;
}

static bool cl_push(cl_list *l, size_t e)
{
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 256;
        size_t *v = gpuws__realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return true;
}

static bool cl_alive(const cl_job *cj, size_t i)
{
    return atomic_load_explicit(&cj->alive[i], memory_order_relaxed) != 0;
}

/* The pair (i, j), i < j, onto l if it acts; passed over when j is too far or gone. False when memory fails. The
 * distance first: most candidates are too far (six in seven on a synthetic 8192² sky), and whether j is gone is a
 * byte the applying thread writes, whose cache line moves between the cores. */
static bool cl_try(const cl_job *cj, size_t i, size_t j, cl_list *l)
{
    if (clean_far(&cj->pos[i], &cj->pos[j]) || !cl_alive(cj, j)) return true;
    const int e = cl_pair(cj, i, j);
    return e == CL_NONE || cl_push(l, j << 1 | (e == CL_KILLS_I));
}

/* The pairs of i (finite a and position) with the objects j > i of the grid that SEP does not pass over as too far
 * from it, onto l (in no particular order). False when memory fails. */
static bool cl_near(const cl_job *cj, size_t i, cl_list *l)
{
    const cl_grid *g = cj->g;
    const cl_pos *o1 = &cj->pos[i];
    for (int u = 0; u < g->nused; u++) {
        const cl_level *lv = &g->lv[g->used[u]];
        const double r = ex_clean_reach(o1->a, (double)lv->amax); /* the zone, and a margin */
        const size_t x0 = (size_t)ex_clean_cell(o1->mx - r, lv->cell, lv->gx),
                     x1 = (size_t)ex_clean_cell(o1->mx + r, lv->cell, lv->gx);
        const size_t y0 = (size_t)ex_clean_cell(o1->my - r, lv->cell, lv->gy),
                     y1 = (size_t)ex_clean_cell(o1->my + r, lv->cell, lv->gy);
        if ((x1 - x0 + 1) * (y1 - y0 + 1) * 4 >= lv->n) { /* most of the level: its list */
            const size_t *ids = g->ids + lv->first;
            size_t lo = 0, hi = lv->n;
            while (lo < hi) {
                const size_t mid = lo + (hi - lo) / 2;
                if (ids[mid] <= i) lo = mid + 1;
                else hi = mid;
            }
            for (size_t m = lo; m < lv->n; m++)
                if (!cl_try(cj, i, ids[m], l)) return false;
            continue;
        }
        const size_t *cs = g->cstart + lv->cfirst, *cell = g->cellids + lv->first;
        for (size_t y = y0; y <= y1; y++)
            for (size_t c = y * lv->gx + x0; c <= y * lv->gx + x1; c++)
                for (size_t m = cs[c + 1]; m > cs[c] && cell[m - 1] > i; m--) /* a cell's objects ascend */
                    if (!cl_try(cj, i, cell[m - 1], l)) return false;
    }
    return true;
}

/* The pairs of i that act, onto l: none when i is gone or its position is not finite (SEP's pairs with a NaN
 * position have no effect); w0: the first wild object after i. False when memory fails. */
static bool cl_turn(const cl_job *cj, size_t i, size_t w0, cl_list *l)
{
    const cl_pos *o1 = &cj->pos[i];
    if (!cl_alive(cj, i) || !isfinite(o1->mx) || !isfinite(o1->my)) return true;
    if (!isfinite(o1->a)) { /* never passed over: every later object */
        for (size_t j = i + 1; j < cj->n; j++)
            if (!cl_try(cj, i, j, l)) return false;
        return true;
    }
    if (!cl_near(cj, i, l)) return false;
    for (size_t k = w0; k < cj->nwild; k++)
        if (!cl_try(cj, i, cj->wild[k], l)) return false;
    return true;
}

/* Chunk c's turns, in catalogue order, its list then freed. */
/* Object i's turn (it survives) on its m pairs that act, e (cl_push's words): each j it explains goes; it goes if a
 * j that still survives explains it. */
static void cl_turn_apply(cl_job *cj, size_t i, const size_t *e, size_t m)
{
    bool explained = false;
    for (size_t k = 0; k < m; k++) {
        const size_t j = e[k] >> 1;
        if (e[k] & 1) explained |= cl_alive(cj, j);
        else atomic_store_explicit(&cj->alive[j], 0, memory_order_relaxed);
    }
    if (explained) atomic_store_explicit(&cj->alive[i], 0, memory_order_relaxed);
}

static void cl_apply(cl_job *cj, size_t c)
{
    const size_t *e = cj->pairs[c];
    const size_t end = (c + 1) * CL_CHUNK < cj->n ? (c + 1) * CL_CHUNK : cj->n;
    for (size_t i = c * CL_CHUNK; e && i < end; i++) { /* no list: no pair of the chunk acts */
        const size_t m = cj->cnt[i];
        if (m && cl_alive(cj, i)) cl_turn_apply(cj, i, e, m);
        e += m;
    }
    gpuws__free(cj->pairs[c]);
    cj->pairs[c] = NULL;
}

/* Applies the chunks that are next in order and complete, unless another thread does. A thread that completes a
 * chunk while the applying one is about to stop either finds the applying flag down or is seen by that thread's last
 * look at the next chunk (both sequentially consistent). */
static void cl_apply_ready(cl_job *cj)
{
    for (;;) {
        if (atomic_exchange(&cj->applying, true)) return;
        size_t c = atomic_load(&cj->applied);
        for (; c < cj->nchunks && atomic_load(&cj->ready[c]); c++) cl_apply(cj, c);
        atomic_store(&cj->applied, c);
        atomic_store(&cj->applying, false);
        if (c == cj->nchunks || !atomic_load(&cj->ready[c])) return;
    }
}

static void cl_share(void *arg, unsigned t)
{
    cl_job *cj = arg;
    cl_list *l = &cj->scratch[t];
    for (;;) {
        if (atomic_load_explicit(&cj->failed, memory_order_relaxed)) return;
        const size_t c = atomic_fetch_add_explicit(&cj->next, 1, memory_order_relaxed);
        if (c >= cj->nchunks) return;
        const size_t i0 = c * CL_CHUNK, end = i0 + CL_CHUNK < cj->n ? i0 + CL_CHUNK : cj->n;
        size_t lo = 0, hi = cj->nwild; /* the first wild object after i0 */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (cj->wild[mid] <= i0) lo = mid + 1;
            else hi = mid;
        }
        l->n = 0;
        for (size_t i = i0; i < end; i++) {
            while (lo < cj->nwild && cj->wild[lo] <= i) lo++;
            const size_t at = l->n;
            if (!cl_turn(cj, i, lo, l)) goto fail;
            cj->cnt[i] = l->n - at;
        }
        if (l->n) {
            if (!(cj->pairs[c] = gpuws__malloc(l->n * sizeof *l->v))) goto fail;
            memcpy(cj->pairs[c], l->v, l->n * sizeof *l->v);
        }
        atomic_store(&cj->ready[c], true);
        cl_apply_ready(cj);
    }
fail:
    atomic_store(&cj->failed, true);
}

/* ---- the pairs on the device ----
 *
 * Where a stream is given, the device works out each object's pairs (extract_clean.h's ex_clean_pairs, a thread an
 * object): from the host's levels it builds the grid (a count a cell, label_scan, a place each), walks it for each
 * object, counts the pairs that act and those whose test its pow leaves open, scans the counts, and writes each
 * object's pairs after the ones before it, which the host reads (4 bytes a pair) to take the turns in catalogue order
 * as cl_apply does: it tests the open pairs itself, and searches again, as the threads would, for an object with more
 * than clean_most pairs (the device stops counting there and writes none of them), building its own grid for that
 * only then. */

enum {
    CL_D,
    CL_F,
    CL_LVL,
    CL_LVD,
    CL_LVU,
    CL_USED,
    CL_CELLOF,
    CL_RANK,
    CL_CSTART,
    CL_CELLIDS,
    CL_CNT,
    CL_WORDS,
    CL_BUFS
};
static const gpuws__stream_key key_clean[CL_BUFS] = {
    { "extract.clean_d" },      { "extract.clean_f" },       { "extract.clean_lvl" },    { "extract.clean_lvd" },
    { "extract.clean_lvu" },    { "extract.clean_used" },    { "extract.clean_cellof" }, { "extract.clean_rank" },
    { "extract.clean_cstart" }, { "extract.clean_cellids" }, { "extract.clean_cnt" },    { "extract.clean_words" }
};

static _Thread_local size_t device_last, unsure_last, searched_last;

size_t gpuws__extract_clean_last(size_t *unsure, size_t *searched)
{
    if (unsure) *unsure = unsure_last;
    if (searched) *searched = searched_last;
    return device_last;
}

/* cl_device_pairs' work, which may leave copies from the host's arrays (lvd, lvu, used among them) in flight on s
 * when it fails. */
static gpuws_status cl_device_work(gpuws_stream *s, const cl_job *cj, const cl_grid *g, double margin, int most,
                                   int32_t *at, uint32_t **words, double *lvd, uint32_t *lvu, uint32_t *used)
{
    const size_t n = cj->n, nu = (size_t)g->nused, nc = g->ncells;
    for (size_t u = 0; u < nu; u++) {
        const int k = g->used[u];
        const cl_level *l = &g->lv[k];
        used[u] = (uint32_t)k;
        lvd[2 * k] = l->cell, lvd[2 * k + 1] = (double)l->amax;
        lvu[3 * k] = (uint32_t)l->gx, lvu[3 * k + 1] = (uint32_t)l->gy, lvu[3 * k + 2] = (uint32_t)l->cfirst;
    }
    const size_t bytes[CL_BUFS] = { 4 * n * sizeof(double),
                                    6 * n * sizeof(float),
                                    n,
                                    2 * CL_LEVELS * sizeof(double),
                                    3 * CL_LEVELS * sizeof(uint32_t),
                                    nu * sizeof(uint32_t),
                                    n * sizeof(uint32_t),
                                    n * sizeof(uint32_t),
                                    (nc + 1) * sizeof(int32_t),
                                    n * sizeof(uint32_t),
                                    (n + 1) * sizeof(int32_t) };
    const void *from[CL_USED + 1] = { cj->dd, cj->df, cj->lvl, lvd, lvu, used };
    gpuws_buffer *b[CL_BUFS] = { NULL };
    gpuws_kernel *kscan;
    uint32_t sblock;
    const int32_t zero = 0;
    const bool cpu = gpuws__is_cpu_device(s->ctx);
    gpuws_status st = gpuws__kernel_block(s->ctx, "label_scan", NULL, cpu ? 256 : 1024, &kscan, &sblock);
    for (int k = 0; k < CL_WORDS && !st; k++) st = gpuws__stream_scratch(s, &key_clean[k], bytes[k], &b[k]);
    for (int k = 0; k <= CL_USED && !st; k++) st = gpuws_buffer_write_async(s, b[k], 0, from[k], bytes[k]);
    if (!st) st = gpuws_buffer_fill_async(s, b[CL_CSTART], 0, &zero, sizeof zero, bytes[CL_CSTART]);
    if (st) return st;
    const gpuws_launch_config c = gpuws__config_1d(n, 128, cpu ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_launch_config c_scan = { { 1, 1, 1 }, { sblock, 1, 1 } };
    const gpuws_arg a_cells[] = { gpuws_arg_u64(n),
                                  gpuws_arg_buffer(b[CL_D]),
                                  gpuws_arg_buffer(b[CL_LVL]),
                                  gpuws_arg_buffer(b[CL_LVD]),
                                  gpuws_arg_buffer(b[CL_LVU]),
                                  gpuws_arg_buffer(b[CL_CELLOF]),
                                  gpuws_arg_buffer(b[CL_RANK]),
                                  gpuws_arg_buffer(b[CL_CSTART]) };
    const gpuws_arg a_cscan[] = { gpuws_arg_buffer(b[CL_CSTART]), gpuws_arg_u32((uint32_t)nc) };
    const gpuws_arg a_place[] = { gpuws_arg_u64(n), gpuws_arg_buffer(b[CL_CELLOF]), gpuws_arg_buffer(b[CL_RANK]),
                                  gpuws_arg_buffer(b[CL_CSTART]), gpuws_arg_buffer(b[CL_CELLIDS]) };
    gpuws_arg a[] = { gpuws_arg_u64(n),
                      gpuws_arg_buffer(b[CL_D]),
                      gpuws_arg_buffer(b[CL_F]),
                      gpuws_arg_f64(cj->beta),
                      gpuws_arg_f64(margin),
                      gpuws_arg_i32(most),
                      gpuws_arg_u32((uint32_t)nu),
                      gpuws_arg_buffer(b[CL_USED]),
                      gpuws_arg_buffer(b[CL_LVD]),
                      gpuws_arg_buffer(b[CL_LVU]),
                      gpuws_arg_buffer(b[CL_CELLIDS]),
                      gpuws_arg_buffer(b[CL_CSTART]),
                      gpuws_arg_u32(0),
                      gpuws_arg_buffer(b[CL_CNT]),
                      gpuws_arg_buffer(b[CL_CNT]) };
    const gpuws_arg a_scan[] = { gpuws_arg_buffer(b[CL_CNT]), gpuws_arg_u32((uint32_t)n) };
    if ((st = gpuws__launch_named(s, "extract_clean_cells", NULL, &c, a_cells, GPUWS__NARGS(a_cells))) ||
        (st = gpuws_launch(s, kscan, &c_scan, a_cscan, GPUWS__NARGS(a_cscan))) ||
        (st = gpuws__launch_named(s, "extract_clean_place", NULL, &c, a_place, GPUWS__NARGS(a_place))) ||
        (st = gpuws__launch_named(s, "extract_clean_pairs", NULL, &c, a, GPUWS__NARGS(a))) ||
        (st = gpuws_launch(s, kscan, &c_scan, a_scan, GPUWS__NARGS(a_scan))) ||
        (st = gpuws__buffer_read_sync(s, b[CL_CNT], 0, at, bytes[CL_CNT])))
        return st;
    const size_t total = (size_t)at[n];
    if (!(*words = gpuws__malloc((total ? total : 1) * sizeof **words)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for cleaning's %zu pairs (%zu bytes)",
                            total, (total ? total : 1) * sizeof **words);
    if ((st = gpuws__stream_scratch(s, &key_clean[CL_WORDS], (total ? total : 1) * sizeof **words, &b[CL_WORDS])))
        return st;
    a[12] = gpuws_arg_u32(1), a[14] = gpuws_arg_buffer(b[CL_WORDS]);
    if ((st = gpuws__launch_named(s, "extract_clean_pairs", NULL, &c, a, GPUWS__NARGS(a))) ||
        (total && (st = gpuws_buffer_read_async(s, b[CL_WORDS], 0, *words, total * sizeof **words))))
        return st;
    return gpuws_stream_synchronize(s);
}

/* Every object's first word and, past the last, the words' count into at (n + 1 entries), and the words (*words,
 * gpuws__malloc'd), from the device on s, on the levels of g. Nothing of it is in flight on s when it returns. */
static gpuws_status cl_device_pairs(gpuws_stream *s, const cl_job *cj, const cl_grid *g, double margin, int most,
                                    int32_t *at, uint32_t **words)
{
    double lvd[2 * CL_LEVELS] = { 0 };
    uint32_t lvu[3 * CL_LEVELS] = { 0 }, used[CL_LEVELS];
    const gpuws_status st = cl_device_work(s, cj, g, margin, most, at, words, lvd, lvu, used);
    if (st) gpuws_stream_synchronize(s); /* its copies read these arrays and the job's */
    return st;
}

/* The turns in catalogue order from the device's words (cl_device_pairs); scratch: a list for the objects the host
 * searches again. False when memory fails. */
static bool cl_device_apply(cl_job *cj, cl_grid *g, const int32_t *at, const uint32_t *words, int most,
                            cl_list *scratch)
{
    size_t unsure = 0, searched = 0;
    for (size_t i = 0; i < cj->n; i++) {
        const size_t m = (size_t)(at[i + 1] - at[i]);
        if (!m || !cl_alive(cj, i)) continue;
        if (m > (size_t)most) { /* the device wrote none: the host's search, as a thread's, on a grid of its own */
            searched++;
            if (!g->cstart && !cl_fill(g, cj->lvl, cj->n, cj->nt, cj->cnt)) return false;
            scratch->n = 0;
            if (!cl_turn(cj, i, cj->nwild, scratch)) return false;
            cl_turn_apply(cj, i, scratch->v, scratch->n);
            continue;
        }
        bool explained = false;
        for (const uint32_t *w = words + at[i]; w < words + at[i + 1]; w++) {
            const size_t j = *w >> 2;
            int e = (*w & 3u) == EX_CL_J ? CL_KILLS_J : CL_KILLS_I;
            if ((*w & 3u) == EX_CL_UNSURE) unsure++, e = cl_pair(cj, i, j);
            if (e == CL_KILLS_I) explained |= cl_alive(cj, j);
            else if (e == CL_KILLS_J) atomic_store_explicit(&cj->alive[j], 0, memory_order_relaxed);
        }
        if (explained) atomic_store_explicit(&cj->alive[i], 0, memory_order_relaxed);
    }
    unsure_last = unsure, searched_last = searched;
    return true;
}

/* The pairs on the device on s and their turns: GPUWS_OK, or a failure's status with its message set (the device's,
 * or host memory). *acts: the pairs the device found. */
static gpuws_status cl_on_device(gpuws_stream *s, cl_job *cj, cl_grid *g, double margin, int most, size_t *acts)
{
    const double t0 = ex_ms_now();
    int32_t *at = gpuws__malloc((cj->n + 1) * sizeof *at);
    uint32_t *words = NULL;
    cl_list scratch = { 0 };
    bool host = !at; /* host memory of its own failed; the device's failures set their own message */
    double t1 = t0;
    /* any failure fails the call: a host allocation that failed on one of the backend's threads shows only so */
    gpuws_status st = at ? cl_device_pairs(s, cj, g, margin, most, at, &words) : GPUWS_ERR_OUT_OF_MEMORY;
    if (!st) {
        t1 = ex_ms_now();
        if (!cl_device_apply(cj, g, at, words, most, &scratch)) st = GPUWS_ERR_OUT_OF_MEMORY, host = true;
    }
    if (host)
        gpuws__error(st, "extract: no host memory for the turns of cleaning's %zu objects (%zu bytes and more)", cj->n,
                     (cj->n + 1) * sizeof *at);
    if (!st) {
        device_last = cj->n, *acts = (size_t)at[cj->n];
        gpuws__log(GPUWS__LOG_DEBUG,
                   "extract: cleaning's pairs on the device %.1f ms, their turns %.1f ms (%zu left open by the "
                   "device's pow, %zu objects of more than %d pairs searched again)",
                   t1 - t0, ex_ms_now() - t1, unsure_last, searched_last, most);
    }
    gpuws__free(at);
    gpuws__free(words);
    gpuws__free(scratch.v);
    return st;
}

/* SEP's clean: whether each object survives, the objects in catalogue order. SEP compares every pair, in
 * catalogue order; a pair further apart than 10 (a1 + a2) has no effect, and neither has a pair with a NaN
 * position, so each object is compared with the grid's neighbours (cl_near) and the objects whose a is not finite;
 * an object whose a is not finite with every later one. The pairs are worked out on threads, their effects applied
 * in catalogue order (above). w x h: the image. A failure (survives untouched) sets its message. */
gpuws_status gpuws__ex_clean(const ex_objs *o, const gpuws__extract_params *p, unsigned threads, int *survives)
{
    const double beta = p->clean_param;
    const size_t w = p->w, h = p->h;
    gpuws_stream *dev = p->clean_on;
    const double t0 = ex_ms_now();
    device_last = unsure_last = searched_last = 0;
    const size_t n = o->n, nchunks = (n + CL_CHUNK - 1) / CL_CHUNK, m = n ? n : 1, mc = nchunks ? nchunks : 1;
    const unsigned nt = threads < 1 ? 1u : nchunks < threads ? (nchunks ? (unsigned)nchunks : 1u) : threads;
    cl_job cj = { .o = o, .beta = beta, .n = n, .nchunks = nchunks, .nt = nt };
    atomic_init(&cj.next, 0);
    atomic_init(&cj.applied, 0);
    atomic_init(&cj.applying, false);
    atomic_init(&cj.failed, false);
    size_t *wild = gpuws__malloc(m * sizeof *wild); /* a not finite: never passed over */
    cj.pos = gpuws__malloc(m * sizeof *cj.pos);
    cj.pf = gpuws__malloc(m * sizeof *cj.pf);
    cj.alive = gpuws__malloc(m * sizeof *cj.alive);
    cj.cnt = gpuws__malloc(m * sizeof *cj.cnt);
    cj.pairs = gpuws__calloc(mc, sizeof *cj.pairs);
    cj.ready = gpuws__malloc(mc * sizeof *cj.ready);
    cj.scratch = gpuws__calloc(nt, sizeof *cj.scratch);
    cj.lvl = gpuws__malloc(m * sizeof *cj.lvl);
    cj.stats = gpuws__calloc((size_t)nt * CL_LEVELS, sizeof *cj.stats);
    cl_grid g;
    bool built = false;
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY;
    bool set = false; /* st's message set already */
    if (!wild || !cj.pos || !cj.pf || !cj.alive || !cj.cnt || !cj.pairs || !cj.ready || !cj.scratch || !cj.lvl ||
        !cj.stats)
        goto done;
    /* the device's counts, at most clean_most + 1 an object, add up in an int; its words name an object in 30 bits */
    if (dev && n && n >= p->clean_from && (uint64_t)n * (uint64_t)(p->clean_most + 1) < INT32_MAX &&
        n < ((size_t)1 << 30)) {
        cj.dd = gpuws__malloc(4 * n * sizeof *cj.dd);
        cj.df = gpuws__malloc(6 * n * sizeof *cj.df);
        if (!cj.dd || !cj.df) goto done;
    }
    gpuws__run_ranges(n, nt, cl_pack_range, &cj);
    const double t1 = ex_ms_now();
    cl_levels(&g, cj.pos, cj.stats, nt, w, h);
    built = true;
    cj.g = &g;
    cj.wild = wild;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(cj.pos[i].a)) wild[cj.nwild++] = i;
    for (size_t c = 0; c < nchunks; c++) atomic_init(&cj.ready[c], false);
    const double t2 = ex_ms_now();
    size_t in_grid = 0;
    for (int u = 0; u < g.nused; u++) in_grid += g.lv[g.used[u]].n;
    if (cj.dd && !cj.nwild && in_grid == n && g.ncells < INT32_MAX) { /* every object in the grid */
        size_t acts = 0;
        if ((st = cl_on_device(dev, &cj, &g, p->clean_unsure ? 1e300 : EX_CL_MARGIN, p->clean_most, &acts))) {
            set = true;
            goto done;
        }
        for (size_t i = 0; i < n; i++) survives[i] = cl_alive(&cj, i);
        gpuws__log(GPUWS__LOG_DEBUG,
                   "extract: cleaning with the device (ms): objects packed %.1f, levels %.1f, grid, pairs and turns "
                   "%.1f; %zu pairs that act or were left open",
                   t1 - t0, t2 - t1, ex_ms_now() - t2, acts);
        goto done;
    }
    /* cnt serves as the grid's scratch: the pairs fill it later */
    if (!g.cstart && !cl_fill(&g, cj.lvl, n, nt, cj.cnt)) goto done;
    const double t3 = ex_ms_now();
    if (gpuws__run_threads(nt, cl_share, &cj) != GPUWS_OK || atomic_load(&cj.failed)) goto done;
    cl_apply_ready(&cj); /* every chunk is ready now */
    size_t acts = 0;
    for (size_t i = 0; i < n; i++) {
        acts += cj.cnt[i];
        survives[i] = cl_alive(&cj, i);
    }
    st = GPUWS_OK;
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract: cleaning on %u threads (ms): objects packed %.1f, grid %.1f, pairs %.1f; %zu pairs that act "
               "listed (fewer the closer the applying keeps up: objects seen gone are passed over)",
               nt, t1 - t0, t3 - t1, ex_ms_now() - t3, acts);
done:
    for (size_t c = 0; cj.pairs && c < nchunks; c++) gpuws__free(cj.pairs[c]);
    for (unsigned t = 0; cj.scratch && t < nt; t++) gpuws__free(cj.scratch[t].v);
    if (built) cl_free(&g);
    gpuws__free(wild);
    gpuws__free(cj.pos);
    gpuws__free(cj.pf);
    gpuws__free(cj.alive);
    gpuws__free(cj.cnt);
    gpuws__free(cj.pairs);
    gpuws__free(cj.ready);
    gpuws__free(cj.scratch);
    gpuws__free(cj.lvl);
    gpuws__free(cj.stats);
    gpuws__free(cj.dd);
    gpuws__free(cj.df);
    if (st && !set)
        gpuws__error(st, "extract: no host memory for cleaning %zu objects (%zu bytes and more)", n,
                     m * (sizeof *cj.pos + sizeof *cj.pf + sizeof *cj.alive + sizeof *cj.cnt + sizeof *cj.lvl));
    return st;
}
