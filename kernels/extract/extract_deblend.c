/* Deblending, gpuws_extract's second host step (extract_objects.h): Lutz's one-pass scan, which orders a
 * component's pixels as SEP chains them, SExtractor's multi-threshold tree, and gatherup, which hands the pixels
 * that no kept object holds to the kept ones with SEP's random numbers. */
#include "extract_objects.h"
#include "extract_chain.h" /* the device's measures of a chained component */
#include "../../core/alloc.h"

#include <math.h>
#include <string.h>

/* ---- Lutz's scan and SExtractor's deblending ----
 * Deblending runs Lutz's one-pass scan (SExtractor's lutz.c) on an object's box; the order of the pixels in each
 * object it finds (their "chain") and the order of the objects are the scan's, and they decide SEP's results where
 * order matters: the first of equal peaks, cleaning's mthresh, and which faint pixel deblending gives to which
 * object (a random draw per pixel, in chain order). The scan keeps, for the row above, markers at the columns where
 * a run of object pixels starts ('S' first run of an object, 's' a later one) or ends ('f' object not finished, 'F'
 * finished); crossing a marker on the current row updates which partial objects are open, and partial objects join
 * by appending one chain to the other. extract_chain.h runs the same scan on the device, for the components that
 * cannot split (every pixel in, one object); test_extract's components_chained_on_the_device_give_the_host_catalogue
 * holds the two to the same chains. */

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
    ex_rec *ids;
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
 * them, each with its pixels (from pool) in chain order, its threshold t and no flags. */
static bool lz_run(lz_scan *z, int64_t sx0, int64_t sy0, int64_t sx1, int64_t sy1, float t, bool all, size_t minsize,
                   ex_objs *out, ex_pool *pool)
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
                z->ids[id] = (ex_rec)r;
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
                            if (!(o.pix = gpuws__ex_pool_take(pool, z->part[co].n))) return false;
                            for (int64_t id = z->part[co].first; id != -1; id = z->next[id])
                                o.pix[o.npix++] = z->ids[id];
                            o.thresh = t;
                            if (!gpuws__ex_objs_push(out, &o)) return false;
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

/* glibc's rand_r, which SEP draws from: three steps of a linear congruential generator on the 32-bit seed. */
#define EX_RAND_A 1103515245u
#define EX_RAND_C 12345u

static int ex_rand(unsigned *seed)
{
    unsigned next = *seed;
    int result;
    next = next * EX_RAND_A + EX_RAND_C;
    result = (int)((next / 65536u) % 2048u);
    next = next * EX_RAND_A + EX_RAND_C;
    result = (result << 10) ^ (int)((next / 65536u) % 1024u);
    next = next * EX_RAND_A + EX_RAND_C;
    result = (result << 10) ^ (int)((next / 65536u) % 1024u);
    *seed = next;
    return result;
}

/* The generator's step is the map s -> A s + C (mod 2^32); k steps are its k-th power, made by squaring, so the
 * seed after any number of draws (three steps each) takes O(log draws) products. */
unsigned gpuws__ex_rand_skip(unsigned seed, uint64_t draws)
{
    unsigned a = EX_RAND_A, c = EX_RAND_C, ak = 1u, ck = 0u; /* the step to the power 2^j, and the product so far */
    for (uint64_t k = 3 * draws; k; k >>= 1) {
        if (k & 1u) {
            ak *= a;
            ck = ck * a + c;
        }
        c = c * a + c;
        a *= a;
    }
    return ak * seed + ck;
}

/* The flag of an object with a pixel on the image's edge, from its bounds (preanalyse's): a pixel lies on the edge
 * exactly when a bound does. */
static int edge_flag(const ex_ctx *c, const ex_obj *o)
{
    const bool edge =
        o->xmin == 0 || o->ymin == 0 || o->xmax == (int64_t)c->p->w - 1 || o->ymax == (int64_t)c->p->h - 1;
    return edge ? GPUWS_OBJ_TRUNC : 0;
}

/* src with its pixels copied to a list from pool, with room for `extra` more. */
static bool obj_copy(ex_obj *dst, const ex_obj *src, size_t extra, ex_pool *pool)
{
    *dst = *src;
    if (!(dst->pix = gpuws__ex_pool_take(pool, src->npix + extra))) return false;
    memcpy(dst->pix, src->pix, src->npix * sizeof *dst->pix);
    return true;
}

/* SExtractor's gatherup, first part: the objects kept by deblending (d->v[1..]; d->v[0] is the component) are
 * measured, given the component's threshold again and the amplitude of their fitted profiles. */
static void gatherup_prepare(const ex_ctx *c, ex_objs *d)
{
    const ex_obj *root = &d->v[0];
    for (size_t i = 1; i < d->n; i++) {
        ex_obj *o = &d->v[i];
        gpuws__ex_analyse(c, o, 0, 0.0);
        o->thresh = root->thresh; /* past deblending: the component's threshold again */
        const float dist = (float)((double)o->npix / (2 * EX_PI * o->abcor * o->a * o->b));
        o->amp = dist < 70.0f ? o->thresh * expf(dist) : (float)(4.0 * o->fdpeak);
        if (o->amp > 4.0 * o->fdpeak) o->amp = (float)(4.0 * o->fdpeak);
    }
}

/* Gatherup, second part: the kept objects take the pixels of the component that none of them holds, in chain
 * order, each pixel drawn at random (from *seed) in proportion to the objects' profiles there, or the nearest
 * profile's where they are all negligible; the objects go to out. *ndraws: the draws made. Whether a pixel draws
 * depends on the profiles alone, never on an earlier draw: so with out NULL this only counts the draws (seed unused),
 * and the count is what the drawing pass makes. */
static bool gatherup_assign(const ex_ctx *c, const ex_objs *d, unsigned *seed, ex_objs *out, uint64_t *ndraws,
                            ex_pool *pool)
{
    const size_t n = d->n;
    const ex_obj *root = &d->v[0];
    const int64_t bx0 = root->xmin, by0 = root->ymin, bw = root->xmax - root->xmin + 1;
    float *p = gpuws__malloc(n * sizeof *p);
    uint8_t *taken = gpuws__calloc((size_t)bw * (size_t)(root->ymax - root->ymin + 1), 1);
    bool ok = p && taken;
    const size_t first_out = out ? out->n : 0;
    size_t extra = root->npix; /* the outputs have room for every unclaimed pixel */
    for (size_t i = 1; ok && i < n; i++) {
        const ex_obj *o = &d->v[i];
        for (size_t k = 0; k < o->npix; k++) taken[(px_y(c, o->pix[k]) - by0) * bw + (px_x(c, o->pix[k]) - bx0)] = 1;
        extra -= o->npix;
    }
    for (size_t i = 1; ok && out && i < n; i++) { /* object i goes to out->v[first_out + i - 1] */
        ex_obj o;
        if (!(ok = obj_copy(&o, &d->v[i], extra, pool))) break;
        ok = gpuws__ex_objs_push(out, &o);
    }
    uint64_t draws = 0;
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
            p[i] = p[i - 1] + (dist < 70.0f ? o->amp * expf(-dist) : 0.0f);
            if (dist < distmin) {
                distmin = dist;
                iclst = i;
            }
        }
        if (p[n - 1] > 1.0e-31) {
            draws++;
            if (!out) continue;
            const float drand = p[n - 1] * (float)ex_rand(seed) / (float)2147483647;
            for (i = 1; i < n && p[i] < drand; i++) continue;
            if (i == n) i = iclst;
        } else {
            i = iclst;
        }
        if (!out) continue;
        ex_obj *o = &out->v[first_out + i - 1];
        o->pix[o->npix++] = r;
    }
    if (!ok && out) out->n = first_out; /* what this call added goes (its lists with the pool) */
    *ndraws = draws;
    gpuws__free(p);
    gpuws__free(taken);
    return ok;
}

bool gpuws__ex_gatherup(const ex_ctx *c, const ex_objs *pending, unsigned *seed, ex_objs *out, ex_pool *pool)
{
    uint64_t draws;
    return gatherup_assign(c, pending, seed, out, &draws, pool);
}

/* The scratch of a thread's deblending, grown to the largest component it has met: the component's box with a
 * margin of a pixel (its record numbers, filtered values, its local maxima, and which node holds each pixel), the
 * levels of the tree, Lutz's scan. */
struct ex_deblender {
    int32_t *rec;
    float *cdb;
    uint8_t *lmax;          /* lmax[q]: no 8-neighbour in the component has a larger filtered value than pixel q */
    uint64_t *owner, stamp; /* owner[q] == stamp: the node being split holds pixel q (stamps only grow) */
    size_t box_cap;
    size_t *lvl, lvl_cap;
    int64_t *place; /* place[i]: the box place of the component's i-th record */
    size_t place_cap;
    ex_objs nodes;   /* the tree's nodes, no pixels held between components */
    ex_pool scratch; /* the nodes' pixel lists, rewound after each component */
    lz_scan z;
    int64_t z_bw;
    size_t z_npix;
};

ex_deblender *gpuws__ex_deblender_new(void)
{
    ex_deblender *d = gpuws__calloc(1, sizeof(ex_deblender));
    if (d) gpuws__ex_pool_init(&d->scratch, 0);
    return d;
}

void gpuws__ex_deblender_free(ex_deblender *d)
{
    if (!d) return;
    gpuws__free(d->rec);
    gpuws__free(d->cdb);
    gpuws__free(d->lmax);
    gpuws__free(d->owner);
    gpuws__free(d->lvl);
    gpuws__free(d->place);
    gpuws__ex_objs_free(&d->nodes);
    gpuws__ex_pool_free(&d->scratch);
    lz_free(&d->z);
    gpuws__free(d);
}

/* Room for a box of `box` pixels bw wide, npix pixels and nlvl levels; false when memory fails (d stays valid). */
static bool deblender_fit(ex_deblender *d, size_t box, int64_t bw, size_t npix, size_t nlvl)
{
    if (box > d->box_cap) {
        int32_t *rec = gpuws__malloc(box * sizeof *rec);
        float *cdb = gpuws__malloc(box * sizeof *cdb);
        uint8_t *lmax = gpuws__malloc(box);
        uint64_t *owner = gpuws__calloc(box, sizeof *owner); /* 0: below every stamp */
        if (!rec || !cdb || !lmax || !owner) {
            gpuws__free(rec);
            gpuws__free(cdb);
            gpuws__free(lmax);
            gpuws__free(owner);
            return false;
        }
        gpuws__free(d->rec);
        gpuws__free(d->cdb);
        gpuws__free(d->lmax);
        gpuws__free(d->owner);
        d->rec = rec;
        d->cdb = cdb;
        d->lmax = lmax;
        d->owner = owner;
        d->box_cap = box;
    }
    if (nlvl > d->lvl_cap) {
        size_t *lvl = gpuws__realloc(d->lvl, nlvl * sizeof *lvl);
        if (!lvl) return false;
        d->lvl = lvl;
        d->lvl_cap = nlvl;
    }
    if (npix > d->place_cap) {
        int64_t *place = gpuws__realloc(d->place, npix * sizeof *place);
        if (!place) return false;
        d->place = place;
        d->place_cap = npix;
    }
    if (bw > d->z_bw || npix > d->z_npix) {
        const int64_t zbw = bw > d->z_bw ? bw : d->z_bw;
        const size_t znpix = npix > d->z_npix ? npix : d->z_npix;
        lz_scan z;
        if (!lz_init(&z, zbw, znpix)) return false;
        lz_free(&d->z);
        d->z = z;
        d->z_bw = zbw;
        d->z_npix = znpix;
    }
    return true;
}

/* Marks the local maxima of the component in d->lmax: the pixels that no 8-neighbour in the component exceeds.
 * Every pixel of a node above a threshold t rises, from neighbour to larger neighbour, to a local maximum above t
 * without leaving the node's pixels above t (8-connected, as Lutz's scan joins them); so a node that holds at most
 * one local maximum above t has at most one son at t, that son holds at most one maximum, and nothing under the
 * node splits. A NaN never exceeds a neighbour nor lies above t: no path rises through it. */
static void mark_maxima(ex_deblender *d, size_t npix, int64_t bw)
{
    for (size_t i = 0; i < npix; i++) {
        const int64_t q = d->place[i];
        const float *n = d->cdb + q, v = *n; /* the box's margin and the pixels of no record hold -inf */
        d->lmax[q] = !(n[-bw - 1] > v || n[-bw] > v || n[-bw + 1] > v || n[-1] > v || n[1] > v || n[bw - 1] > v ||
                       n[bw] > v || n[bw + 1] > v);
    }
}

/* Whether the node o holds more than one local maximum above t (mark_maxima), so that it may split below. */
static bool may_split(const ex_ctx *c, const ex_deblender *d, const ex_obj *o, float t, int64_t bx0, int64_t by0,
                      int64_t bw)
{
    size_t m = 0;
    for (size_t k = 0; k < o->npix; k++) {
        const int64_t q = (px_y(c, o->pix[k]) - by0) * bw + (px_x(c, o->pix[k]) - bx0);
        if (d->lmax[q] && d->cdb[q] > t && ++m > 1) return true;
    }
    return false;
}

/* What deblending reads of a node, as preanalyse finds it (the same order and arithmetic): its bounds, filtered
 * peak and filtered flux. Its other fields stay as they are: the analysis measures every object that deblending
 * gives out again, and gatherup its kept objects. */
static void node_stats(const ex_ctx *c, ex_obj *o)
{
    double rv = 0.0;
    float cpeak = -EX_BIG;
    int64_t xmin = INT64_MAX, xmax = 0, ymin = INT64_MAX, ymax = 0;
    for (size_t k = 0; k < o->npix; k++) {
        const int64_t x = px_x(c, o->pix[k]), y = px_y(c, o->pix[k]);
        const float cv = c->px->cd[o->pix[k]];
        if (cpeak < cv) cpeak = cv;
        rv += cv;
        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
        ymin = y < ymin ? y : ymin;
        ymax = y > ymax ? y : ymax;
    }
    o->fdflux = (float)rv;
    o->fdpeak = cpeak;
    o->xmin = xmin;
    o->xmax = xmax;
    o->ymin = ymin;
    o->ymax = ymax;
}

/* Lets go of the nodes' pixels and keeps their array for the next component. */
static void nodes_release(ex_deblender *d, ex_objs *nodes)
{
    nodes->n = 0;
    d->nodes = *nodes;
    gpuws__ex_pool_rewind(&d->scratch);
}

/* SExtractor's multi-threshold deblending (gpuws__ex_deblend). The component's pixels above nthresh - 1 thresholds
 * spaced logarithmically between t0 and its filtered peak form a tree (the objects of each level, found by Lutz's
 * scan in each object of the level below); from the top down, a node with more than one son holding more than
 * deblend_cont of the component's filtered flux (above its own threshold) keeps those sons (unless a son's subtree
 * splits further) and gives up the rest; then gatherup hands the pixels no kept object holds to the kept ones.
 * With no split the component is one object. */
bool gpuws__ex_deblend(const ex_ctx *c, ex_deblender *d, const ex_rec *recs, size_t npix, float t0, unsigned *seed,
                       ex_objs *out, ex_objs *pending, uint64_t *ndraws, ex_pool *pool)
{
    const gpuws__extract_params *p = c->p;
    *ndraws = 0;
    /* the records in raster order: the first and last rows are the first and last records' */
    int64_t xmin = INT64_MAX, xmax = 0;
    const int64_t ymin = npix ? px_y(c, recs[0]) : 0, ymax = npix ? px_y(c, recs[npix - 1]) : 0;
    for (size_t i = 0; i < npix; i++) {
        const int64_t x = px_x(c, recs[i]);
        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
    }
    /* the box with a margin of one pixel: every pixel of the component has its 8 neighbours in it */
    const int64_t bx0 = xmin - 1, by0 = ymin - 1, bw = xmax - xmin + 3, bh = ymax - ymin + 3;
    const size_t xn = (size_t)p->deblend_nthresh;
    /* record numbers: at most 2^31 - 1 pixels; lvl: level k is nodes[lvl[k] .. lvl[k + 1] - 1] */
    if (!deblender_fit(d, (size_t)(bw * bh), bw, npix, xn + 1)) return false;
    int32_t *rec = d->rec;
    float *cdb = d->cdb;
    uint64_t *owner = d->owner;
    size_t *lvl = d->lvl;
    ex_objs nodes = d->nodes, kept = { 0 };
    lz_scan z = d->z;
    for (int64_t i = 0; i < bw * bh; i++) {
        rec[i] = -1;
        cdb[i] = -INFINITY;
    }
    for (size_t i = 0; i < npix; i++) {
        const int64_t q = (px_y(c, recs[i]) - by0) * bw + (px_x(c, recs[i]) - bx0);
        d->place[i] = q;
        rec[q] = (int32_t)recs[i];
        cdb[q] = c->px->cd[recs[i]];
    }
    mark_maxima(d, npix, bw);
    z.x0 = bx0;
    z.y0 = by0;
    z.bw = bw;
    z.bh = bh;
    z.rec = rec;
    z.cd = cdb;
    /* the component itself, its pixels in the order of SEP's scan: the one list that outlives the tree (the object
     * when nothing splits, else gatherup's source) comes from pool */
    lvl[0] = 0;
    bool ok = lz_run(&z, xmin, ymin, xmax, ymax, t0, true, 1, &nodes, pool) && nodes.n == 1;
    if (ok) {
        node_stats(c, &nodes.v[0]);
        nodes.v[0].flag = edge_flag(c, &nodes.v[0]);
        const double value0 = nodes.v[0].fdflux * p->deblend_cont, peak = nodes.v[0].fdpeak;
        const size_t minsize = p->minarea < 3 ? (size_t)p->minarea : 3; /* SExtractor's smallest sub-object */
        lvl[1] = 1;
        for (size_t k = 1; ok && k < xn; k++) {
            if (lvl[k - 1] == lvl[k]) { /* no nodes at level k - 1: none above */
                for (size_t kk = k + 1; kk <= xn; kk++) lvl[kk] = nodes.n;
                break;
            }
            const float t = (float)(peak > 0.0 ? t0 * pow(peak / t0, (double)k / (double)xn) : t0);
            for (size_t i = lvl[k - 1]; ok && i < lvl[k]; i++) {
                const ex_obj par = nodes.v[i]; /* a copy: the scan below may move the nodes */
                const size_t from = nodes.n;
                /* none of par's pixels above t: the scan would keep nothing; one maximum above t: its one son
                 * never splits, and a node without sons decides the same as one whose chain never splits */
                if (!(par.fdpeak > t) || !may_split(c, d, &par, t, bx0, by0, bw)) {
                    nodes.v[i].son0 = nodes.v[i].son1 = from;
                    continue;
                }
                ok = lz_run(&z, par.xmin, par.ymin, par.xmax, par.ymax, t, false, minsize, &nodes, &d->scratch);
                /* keep the objects of par's own (a scan of its box may meet a sibling's pixels) */
                const uint64_t stamp = ++d->stamp;
                for (size_t q = 0; q < par.npix; q++)
                    owner[(px_y(c, par.pix[q]) - by0) * bw + (px_x(c, par.pix[q]) - bx0)] = stamp;
                size_t keep = from;
                for (size_t j = from; ok && j < nodes.n; j++) {
                    const size_t head = nodes.v[j].pix[0];
                    if (owner[(px_y(c, head) - by0) * bw + (px_x(c, head) - bx0)] == stamp) {
                        nodes.v[keep] = nodes.v[j];
                        node_stats(c, &nodes.v[keep]);
                        nodes.v[keep].flag = edge_flag(c, &nodes.v[keep]);
                        keep++;
                    }
                }
                if (ok) nodes.n = keep; /* else nodes_release frees what the scan found */
                nodes.v[i].son0 = from;
                nodes.v[i].son1 = nodes.n;
            }
            lvl[k + 1] = nodes.n;
        }
        for (size_t i = 0; ok && i < nodes.n; i++) nodes.v[i].keep = true;
        if (ok && nodes.n == 1) { /* no sons: the component is one object */
            ok = gpuws__ex_objs_push(out, &nodes.v[0]);
            nodes_release(d, &nodes);
            return ok;
        }
        ok = ok && gpuws__ex_objs_push(&kept, &nodes.v[0]); /* its list shared: nothing changes it */
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
                            ok = obj_copy(&cp, o, 0, pool) && gpuws__ex_objs_push(&kept, &cp);
                        }
                    }
                    par->keep = false;
                }
            }
        }
        if (ok && nodes.v[0].keep) {
            ok = gpuws__ex_objs_push(out, &kept.v[0]);
        } else if (ok) {
            gatherup_prepare(c, &kept);
            if (seed) {
                ok = gatherup_assign(c, &kept, seed, out, ndraws, pool);
            } else if ((ok = gatherup_assign(c, &kept, NULL, NULL, ndraws, NULL)) && *ndraws == 0) {
                unsigned any = 1u; /* nothing is drawn from it */
                uint64_t none;
                ok = gatherup_assign(c, &kept, &any, out, &none, pool);
            } else if (ok) {
                /* the draws wait for the seed at this component */
                *pending = kept;
                memset(&kept, 0, sizeof kept);
            }
        }
    }
    if (!ok) *ndraws = 0;
    gpuws__ex_objs_free(&kept);
    nodes_release(d, &nodes);
    return ok;
}

void gpuws__ex_measured(const ex_ctx *c, const ex_rec *chain, size_t npix, const double *mom, uint32_t label,
                        ex_obj *obj)
{
    const uint32_t *mw = (const uint32_t *)(mom + EXM_WORDS);
    ex_obj o;
    memset(&o, 0, sizeof o);
    o.pix = (ex_rec *)chain; /* read only, as every object's list once deblending is done */
    o.npix = npix;
    o.thresh = exc_float(mw[EXW_PEAK + 3]);
    o.fdflux = (float)mom[EXM_RV];
    o.dpeak = exc_float(mw[EXW_PEAK]);
    o.fdpeak = exc_float(mw[EXW_PEAK + 1]);
    o.mthresh = exc_float(mw[EXW_PEAK + 2]);
    o.xmin = mw[EXW_XMIN], o.xmax = mw[EXW_XMIN + 1], o.ymin = mw[EXW_XMIN + 2], o.ymax = mw[EXW_XMIN + 3];
    o.xpeak = mw[EXW_XMIN + 4], o.ypeak = mw[EXW_XMIN + 5], o.xcpeak = mw[EXW_XMIN + 6], o.ycpeak = mw[EXW_XMIN + 7];
    o.flag = edge_flag(c, &o) | (mw[EXW_FLAGS] & EXM_BLANK ? GPUWS_OBJ_BLANK : 0);
    const ex_sums m = { mom[EXM_XM],          mom[EXM_XM + 1],  mom[EXM_XM + 2],      mom[EXM_XM + 3],
                        mom[EXM_XM + 4],      mom[EXM_CVARSUM], mom[EXM_CVARSUM + 1], mom[EXM_CVARSUM + 2],
                        mom[EXM_CVARSUM + 3], mom[EXM_TV],      mw[EXW_DNPIX],        mw[EXW_AREA2] };
    gpuws__ex_analyse_finish(&o, &m);
    o.fvar = mom[EXM_FVAR];
    o.measured = true;
    o.label = label;
    *obj = o;
}

bool gpuws__ex_single_measured(const ex_ctx *c, const ex_rec *chain, size_t npix, const double *mom, uint32_t label,
                               ex_objs *out)
{
    ex_obj o;
    gpuws__ex_measured(c, chain, npix, mom, label, &o);
    return gpuws__ex_objs_push(out, &o);
}

bool gpuws__ex_single(const ex_ctx *c, const ex_rec *chain, size_t npix, float t0, ex_objs *out, ex_pool *pool)
{
    ex_obj o;
    memset(&o, 0, sizeof o);
    if (!(o.pix = gpuws__ex_pool_take(pool, npix ? npix : 1))) return false;
    memcpy(o.pix, chain, npix * sizeof *o.pix);
    o.npix = npix;
    o.thresh = t0;
    node_stats(c, &o);
    o.flag = edge_flag(c, &o);
    return gpuws__ex_objs_push(out, &o);
}
