/* gpuws_extract's host steps (extract_ref.h): from the pixel records of the components, in raster order, to SEP's
 * catalogue, in double precision and a fixed order, so that every backend gives the same catalogue.
 *  1. Components of at least minarea pixels, in the order SEP's one-pass scan completes them: by the last pixel of
 *     their last row (row, then column), which is where the scan finds them finished. Their threshold is SEP's:
 *     the constant one, or, with a σ map, the mean of their pixels' thresholds (SEP >= 1.3.3), or with
 *     GPUWS_SEP_1_2 relthresh × σ at the pixel that follows that last pixel on the next row (0 outside the image),
 *     where SEP 1.2's scan stands when it completes the object.
 *  2. Lutz's scan of each component's box orders its pixels as SEP chains them; deblending (SExtractor's
 *     multi-threshold tree and gatherup, with SEP's random numbers) splits it into objects (extract_deblend.c).
 *  3. The analysis of each object (SEP's analyse: moments weighted by the filtered values, errors, ellipse, flags),
 *     the float roundings where SEP rounds to float.
 *  4. Cleaning removes the objects that a brighter neighbour's profile explains (extract_clean.c).
 * Threads (p->threads): the grouping of the records by component, the components' list and thresholds, deblending
 * and analysis run on all of them, each component's or object's results kept in its place, so the objects keep
 * SEP's order; SEP draws its random numbers for gatherup from one seed in component order, so a component whose
 * gatherup draws is finished after every component has counted its draws (a count that no draw changes), from the
 * seed that skips the draws of the components before it. The catalogue is the same bit for bit for any number of
 * threads. Cleaning works out which pairs act on all of them and applies them in catalogue order (extract_clean.c).
 * docs/algorithms/extract.md says where this differs from SEP. */
#include "extract_objects.h"
#include "extract_chain.h" /* the device's measures of the chained components */
#include "../../core/alloc.h"
#include "../../core/errors.h"
#include "../../core/threads.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define EX_GROUP_MIN  16384 /* records per thread, at least, in the grouping: fewer do not pay for a thread */
#define EX_OBJ_CHUNK  64    /* objects a thread takes at a time in the analysis and the catalogue */
#define EX_GATHER_MIN 256   /* objects a thread gathers, at least: copying them to new pages takes a thread's start */
#define EX_PASS_MIN   16384 /* components a thread takes, at least, in deblending's passes over all of them */
/* Components per thread, at least, in their sort: its 8-bit passes are about ten fork-joins, each a wake of the
 * threads (tens of microseconds), which a thread's share of fewer components does not win back. */
#define EX_SORT_MIN 16384
/* A take of the deblending's shared counter: consecutive components of this many pixels in all (or this many
 * components), so that the hundreds of thousands of small components of a large image do not each pass the
 * counter's cache line from core to core, nor write their results next to another thread's. */
#define EX_TAKE_PIXELS 4096
#define EX_TAKE_MAX    256

/* SEP >= 1.3.3's threshold of a component with a σ map: the mean of its pixels' thresholds, summed in double and
 * rounded to float. SEP adds them in its chain order, this in raster order: the same sum, exact in double, while
 * the thresholds lie within a factor 2^29 / n of each other (a σ map varies slowly); past that (a masked pixel's σ
 * of 1e30 in a matched-filter detection) the two can differ in the double's last bits, which the rounding to float
 * hides but at a near tie. */
static float mean_thresh(const ex_ctx *c, const ex_rec *rec, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++) s += (double)px_thresh(c, rec[k]);
    return (float)(s / (double)n);
}

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
    gpuws__free(o->v);
    memset(o, 0, sizeof *o);
}

#define EX_POOL_MIN 8192              /* entries of a pool's first chunk, at least */
#define EX_POOL_MAX ((size_t)4 << 20) /* entries of a chunk, at most, but for a larger list */

void gpuws__ex_pool_init(ex_pool *p, size_t first)
{
    memset(p, 0, sizeof *p);
    p->next = first < EX_POOL_MIN ? EX_POOL_MIN : first < EX_POOL_MAX ? first : EX_POOL_MAX;
}

ex_rec *gpuws__ex_pool_take(ex_pool *p, size_t n)
{
    if (n > p->left) {
        const size_t m = n > p->next ? n : p->next;
        if (p->n == p->cap) {
            const size_t cap = p->cap ? 2 * p->cap : 8;
            ex_rec **chunk = gpuws__realloc(p->chunk, cap * sizeof *chunk);
            if (chunk) p->chunk = chunk;
            size_t *size = chunk ? gpuws__realloc(p->size, cap * sizeof *size) : NULL;
            if (!size) return NULL;
            p->size = size;
            p->cap = cap;
        }
        ex_rec *c = gpuws__malloc(m * sizeof *c);
        if (!c) return NULL;
        p->chunk[p->n] = c;
        p->size[p->n++] = m;
        p->at = c;
        p->left = m;
        p->next = 2 * p->next < EX_POOL_MAX ? 2 * p->next : EX_POOL_MAX;
    }
    ex_rec *q = p->at;
    p->at += n;
    p->left -= n;
    return q;
}

void gpuws__ex_pool_rewind(ex_pool *p)
{
    if (p->n == 0) return;
    size_t big = 0;
    for (size_t i = 1; i < p->n; i++)
        if (p->size[i] > p->size[big]) big = i;
    for (size_t i = 0; i < p->n; i++)
        if (i != big) gpuws__free(p->chunk[i]);
    p->chunk[0] = p->chunk[big];
    p->size[0] = p->size[big];
    p->n = 1;
    p->at = p->chunk[0];
    p->left = p->size[0];
}

void gpuws__ex_pool_free(ex_pool *p)
{
    for (size_t i = 0; i < p->n; i++) gpuws__free(p->chunk[i]);
    gpuws__free(p->chunk);
    gpuws__free(p->size);
    memset(p, 0, sizeof *p);
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
    const double thresh = o->thresh, peak = o->dpeak, rv = o->fdflux, thresh2 = (thresh + peak) / 2.0;
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
    ex_sums m = { mx / rv, my / rv, 0, 0, 0, 0, 0, 0, 0, tv, dnpix, area2 };
    if (robust && (o->flag & GPUWS_OBJ_MERGED)) {
        const double xn = o->mx - (double)o->xmin, yn = o->my - (double)o->ymin;
        m.xm2 = mx2 / rv + xn * xn - 2 * m.xm * xn;
        m.ym2 = my2 / rv + yn * yn - 2 * m.ym * yn;
        m.xym = mxy / rv + xn * yn - m.xm * yn - xn * m.ym;
        m.xm = xn;
        m.ym = yn;
    } else {
        m.xm2 = mx2 / rv - m.xm * m.xm;
        m.ym2 = my2 / rv - m.ym * m.ym;
        m.xym = mxy / rv - m.xm * m.ym;
    }
    for (size_t k = 0; k < o->npix; k++) {
        const size_t r = o->pix[k];
        const double x = (double)(px_x(c, r) - o->xmin), y = (double)(px_y(c, r) - o->ymin);
        double cvar = c->p->noise != EX_NOISE_NONE ? (double)ex_fmul(c->px->sig[r], c->px->sig[r]) : 0.0;
        if (gain > 0.0 && c->px->cd[r] > 0.0f) cvar += c->px->cd[r] / gain;
        m.cvarsum += cvar;
        m.errx2 += cvar * (x - m.xm) * (x - m.xm);
        m.erry2 += cvar * (y - m.ym) * (y - m.ym);
        m.errxy += cvar * (x - m.xm) * (y - m.ym);
    }
    gpuws__ex_analyse_finish(o, &m);
}

void gpuws__ex_analyse_finish(ex_obj *o, const ex_sums *m)
{
    const double thresh = o->thresh, peak = o->dpeak, rv = o->fdflux, rv2 = rv * rv, thresh2 = (thresh + peak) / 2.0;
    const double xm = m->xm, ym = m->ym;
    double xm2 = m->xm2, ym2 = m->ym2, xym = m->xym, cvarsum = m->cvarsum;
    double errx2 = m->errx2 / rv2, erry2 = m->erry2 / rv2, errxy = m->errxy / rv2;
    const int64_t dnpix = m->dnpix, area2 = m->area2;
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
    o->dflux = m->tv;
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

/* The flag of an object with a pixel next to a NaN or masked one. */
static int blank_flag(const ex_ctx *c, const ex_obj *o)
{
    for (size_t i = 0; i < o->npix; i++)
        if (px_blank(c->px, o->pix[i])) return GPUWS_OBJ_BLANK;
    return 0;
}

typedef struct {
    uint64_t key; /* where SEP's scan completes the component */
    size_t first, n;
    float thresh;
    bool chained;      /* one object, its records in chain order (the device's: extract_chain.h) */
    const double *mom; /* and where not NULL, that object's measures (extract_chain.h's slot) */
    uint32_t label;
} ex_comp;

/* ---- the components sorted by key (each key is a pixel of its own: no ties) ----
 * An LSD radix sort of (key, place) pairs, 8 bits a pass, on threads: each part counts its range's digits, the counts
 * become offsets (by digit, then by part, so the sort is stable), and each part puts its range in place; then the
 * components move once into their order. */
typedef struct {
    uint64_t key;
    size_t at;
} ex_keyat;

typedef struct {
    ex_comp *v, *tmp; /* the components; n more for the move */
    ex_keyat *src, *dst;
    size_t n;
    unsigned shift, step;
    size_t (*count)[256]; /* per part */
    uint64_t *maxk;       /* per part */
} ex_sort;

static void sort_range(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_sort *s = arg;
    size_t *c = s->count[part];
    uint64_t m = 0;
    switch (s->step) {
    case 0: /* the pairs, the largest key */
        for (size_t i = lo; i < hi; i++) {
            s->src[i] = (ex_keyat){ s->v[i].key, i };
            m = s->v[i].key > m ? s->v[i].key : m;
        }
        s->maxk[part] = m;
        break;
    case 1: /* digits counted */
        memset(c, 0, 256 * sizeof *c);
        for (size_t i = lo; i < hi; i++) c[s->src[i].key >> s->shift & 0xffu]++;
        break;
    case 2: /* in place */
        for (size_t i = lo; i < hi; i++) s->dst[c[s->src[i].key >> s->shift & 0xffu]++] = s->src[i];
        break;
    case 3: /* the components in their order */
        for (size_t i = lo; i < hi; i++) s->tmp[i] = s->v[s->src[i].at];
        break;
    default: /* and back */ memcpy(s->v + lo, s->tmp + lo, (hi - lo) * sizeof *s->v); break;
    }
}

/* v[0 .. n - 1] sorted on `parts` threads (at most 64); tmp: n components, kp: 2 n pairs, count: 256 per part. */
static void sort_comps(ex_comp *v, size_t n, ex_comp *tmp, ex_keyat *kp, size_t (*count)[256], size_t parts)
{
    uint64_t maxk[64], mk = 0;
    ex_sort s = { v, tmp, kp, kp + n, n, 0, 0, count, maxk };
    gpuws__run_ranges(n, parts, sort_range, &s);
    for (size_t p = 0; p < parts; p++) mk = maxk[p] > mk ? maxk[p] : mk;
    for (s.shift = 0; s.shift < 64 && (mk >> s.shift); s.shift += 8) {
        s.step = 1;
        gpuws__run_ranges(n, parts, sort_range, &s);
        for (size_t d = 0, at = 0; d < 256; d++)
            for (size_t p = 0; p < parts; p++) {
                const size_t k = count[p][d];
                count[p][d] = at;
                at += k;
            }
        s.step = 2;
        gpuws__run_ranges(n, parts, sort_range, &s);
        ex_keyat *t = s.src;
        s.src = s.dst;
        s.dst = t;
    }
    s.step = 3;
    gpuws__run_ranges(n, parts, sort_range, &s);
    s.step = 4;
    gpuws__run_ranges(n, parts, sort_range, &s);
}

/* The process's minor page faults so far, for GPUWS_LOG=debug: fresh memory costs a fault a page at its first touch. */
static long ex_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

/* t threads, or fewer for less work: at least one. */
static unsigned clamp_threads(unsigned t, size_t work) { return work < 1 ? 1u : work < t ? (unsigned)work : t; }

/* ---- the records grouped by component, raster order kept within each ----
 * A stable counting sort split over threads, each a share of the records in raster order. A thread owns the labels
 * that no earlier share holds (those above the largest label before its share): it alone counts and places their
 * records, which come first in their component. A label that an earlier share holds too (a component across the
 * border of two shares) is a carry: the thread counts its records in a small table of its own, the tables are
 * merged in share order (which gives each carry the records before it), and the thread places them after those.
 * Labels numbered in raster order of their first pixel, as gpuws_label's are, make the carries the few components
 * that cross a border; any numbering gives the same order. One count per label in all: a row per thread would cost
 * threads x labels (a million labels at 8192², sixteen rows of them). */
typedef struct {
    uint32_t label, n; /* its records in this share */
    size_t at;         /* records of the label before them (after the merge), then the next one's place */
} ex_carry;

typedef struct {
    ex_carry *v;
    uint32_t *slot; /* open addressing: index + 1 into v, 0 empty; cap a power of 2, at most half full */
    size_t n, cap;
} ex_carries;

/* The slot of label in a table of cap slots over v: the one that holds it, or the empty one where it goes. */
static size_t carry_slot(const uint32_t *slot, size_t cap, const ex_carry *v, uint32_t label)
{
    size_t h = (label * 2654435761u) & (cap - 1);
    while (slot[h] && v[slot[h] - 1].label != label) h = (h + 1) & (cap - 1);
    return h;
}

/* label's entry in cs (NULL: none). */
static ex_carry *carry_find(const ex_carries *cs, uint32_t label)
{
    if (!cs->cap) return NULL;
    const uint32_t k = cs->slot[carry_slot(cs->slot, cs->cap, cs->v, label)];
    return k ? &cs->v[k - 1] : NULL;
}

/* Counts a record of label in cs; false when memory fails. */
static bool carry_count(ex_carries *cs, uint32_t label)
{
    ex_carry *e = carry_find(cs, label);
    if (e) return e->n++, true;
    if (2 * (cs->n + 1) > cs->cap) { /* grow: twice the room, every entry placed again */
        const size_t cap = cs->cap ? 2 * cs->cap : 64;
        ex_carry *v = gpuws__realloc(cs->v, cap / 2 * sizeof *v);
        uint32_t *slot = gpuws__calloc(cap, sizeof *slot);
        if (v) cs->v = v;
        if (!v || !slot) return gpuws__free(slot), false;
        for (size_t i = 0; i < cs->n; i++) slot[carry_slot(slot, cap, v, v[i].label)] = (uint32_t)i + 1;
        gpuws__free(cs->slot);
        cs->slot = slot;
        cs->cap = cap;
    }
    cs->slot[carry_slot(cs->slot, cs->cap, cs->v, label)] = (uint32_t)cs->n + 1;
    cs->v[cs->n++] = (ex_carry){ label, 1, 0 };
    return true;
}

typedef struct {
    const ex_ctx *c;
    size_t n, nl;      /* records; the largest label */
    unsigned nt, step; /* threads of this step; the step */
    uint32_t *xy;      /* the records' columns, then rows */
    int32_t *obj_of;   /* zeroed here (NULL: none) */
    uint32_t *cnt;     /* per label: its owner's records, then with the carries, then the owner's placed so far */
    size_t *part;      /* per thread: its largest label; then its labels' records (the offsets' step) */
    size_t *before;    /* per thread: the largest label of the shares before it (it owns the labels above) */
    ex_carries *carry; /* per thread */
    size_t *start;     /* component l: order[start[l] .. start[l + 1] - 1] */
    ex_rec *order;
    atomic_bool failed;
} ex_group;

static void group_share(void *arg, unsigned t)
{
    ex_group *g = arg;
    const gpuws__extract_pixels *px = g->c->px;
    const size_t r0 = g->n * t / g->nt, r1 = g->n * (t + 1) / g->nt;
    const size_t l0 = 1 + g->nl * t / g->nt, l1 = 1 + g->nl * (t + 1) / g->nt; /* labels 1 .. nl */
    const size_t before = g->before ? g->before[t] : 0;
    ex_carries *cs = g->carry ? &g->carry[t] : NULL;
    size_t m = 0;
    switch (g->step) {
    case 0: { /* coordinates (a division only where a run of consecutive pixels breaks), the largest label */
        const uint64_t w = g->c->p->w;
        uint64_t prev = UINT64_MAX;
        uint32_t x = 0, y = 0;
        for (size_t r = r0; r < r1; r++) {
            const uint64_t i = px_index(px, r);
            if (r > r0 && i == prev + 1 && x + 1 < w) { /* not the first: prev + 1 wraps to pixel 0 */
                x++;
            } else {
                x = (uint32_t)(i % w);
                y = (uint32_t)(i / w);
            }
            prev = i;
            g->xy[r] = x;
            g->xy[g->n + r] = y;
            if (!px->group) m = (size_t)px->label[r] > m ? (size_t)px->label[r] : m; /* else px->nl */
        }
        if (g->obj_of) memset(g->obj_of + r0, 0, (r1 - r0) * sizeof *g->obj_of);
        g->part[t] = m;
        break;
    }
    case 1: /* counts: the owned labels' in cnt, the carries' in the thread's table */
        for (size_t r = r0; r < r1; r++) {
            const uint32_t l = (uint32_t)px->label[r];
            if (l > before) g->cnt[l]++;
            else if (!carry_count(cs, l)) return atomic_store(&g->failed, true);
        }
        break;
    case 2: /* the records of this thread's labels */
        for (size_t l = l0; l < l1; l++) m += g->cnt[l];
        g->part[t] = m;
        break;
    case 3: /* offsets; the owners' counts start again from 0 for the placing */
        m = g->part[t];
        for (size_t l = l0; l < l1; l++) {
            g->start[l] = m;
            m += g->cnt[l];
            g->cnt[l] = 0;
        }
        break;
    case 4: /* in place */
        for (size_t r = r0; r < r1; r++) {
            const uint32_t l = (uint32_t)px->label[r];
            if (l > before) g->order[g->start[l] + g->cnt[l]++] = (ex_rec)r;
            else g->order[g->start[l] + carry_find(cs, l)->at++] = (ex_rec)r;
        }
        break;
    case 5: /* or else the device's grouping: its records are the order, its starts widened (without the chained
             * components' bits) */
        for (size_t l = l0; l < l1; l++) g->start[l] = px->group[g->n + l] & ~EX_CHAIN_BIT;
        break;
    default: break;
    }
}

static bool group_step(ex_group *g, unsigned step)
{
    g->step = step;
    return gpuws__run_threads(g->nt, group_share, g) == GPUWS_OK && !atomic_load(&g->failed);
}

/* The carries' tables merged in share order: each carry's records before it, the counts made whole. */
static void group_merge(ex_group *g)
{
    for (unsigned t = 1; t < g->nt; t++)
        for (size_t i = 0; i < g->carry[t].n; i++) {
            ex_carry *e = &g->carry[t].v[i];
            e->at = g->cnt[e->label];
            g->cnt[e->label] += e->n;
        }
}

/* ---- the components of at least minarea records, in label order, with their keys and thresholds ----
 * Each thread takes the labels whose first record lies in its share of the records, so that the mean thresholds'
 * work, a visit of every record, divides evenly however large the components: it counts its components, then,
 * from the place that the counts before its own give, writes them in label order (one thread writes them at once). */
typedef struct {
    const ex_ctx *c;
    const size_t *start; /* label l: order[start[l] .. start[l + 1] - 1], l in 1 .. nl */
    const ex_rec *order;
    size_t n, nl;
    size_t *at; /* per part: its components; the place of its first; after it writes them, the place after its last */
    ex_comp *comps;
    bool fill;
} ex_complist;

/* The first label of the part whose records start at r: the first whose records start at r or later. */
static size_t complist_label(const ex_complist *cl, size_t r)
{
    if (r >= cl->n) return cl->nl + 1;
    size_t lo = 1, hi = cl->nl + 1;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cl->start[mid] < r) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void complist_share(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_complist *cl = arg;
    const ex_ctx *c = cl->c;
    const gpuws__extract_params *p = c->p;
    /* with compact records the measured components have none: the first part takes those before any record (all of
     * them where no record was read), the last those after */
    const size_t l0 = lo == 0 ? 1 : complist_label(cl, lo), l1 = hi >= cl->n ? cl->nl + 1 : complist_label(cl, hi);
    size_t k = cl->fill ? cl->at[part] : 0;
    const gpuws__extract_pixels *px = c->px;
    for (size_t l = l0; l < l1; l++) {
        const size_t first = cl->start[l], cnt = cl->start[l + 1] - first;
        /* a chained component's slot of measures; one out of range, which the device never gives, is read as none */
        const bool chained =
            px->slot_of ? px->slot_of[l] != UINT32_MAX : px->chained && (px->group[cl->n + l] & EX_CHAIN_BIT);
        const uint32_t slot = px->slot_of ? px->slot_of[l] : chained ? px->group[cl->n + cl->nl + 1 + l] : UINT32_MAX;
        const double *mom = px->mom && slot < px->nmom ? px->mom + (size_t)slot * EX_MOM_DOUBLES : NULL;
        const uint32_t *mw = mom ? (const uint32_t *)(mom + EXM_WORDS) : NULL;
        const bool measured = mw && (mw[EXW_FLAGS] & EXM_OK);
        const size_t npix = measured ? mw[EXW_NPIX] : cnt; /* compact records hold none of a measured one's */
        if (npix < (size_t)p->minarea || npix == 0) continue;
        if (cl->fill) {
            /* the component's last pixel in raster order: the device's where it measured the object, else its last
             * record, or in chain order the one of the largest index */
            uint64_t x, y;
            size_t last = cnt ? cl->order[first + cnt - 1] : 0; /* a measured one's compact records: none */
            if (measured) {
                const uint64_t at = mw[EXW_LAST] | (uint64_t)mw[EXW_LAST + 1] << 32;
                x = at % p->w, y = at / p->w;
            } else {
                for (size_t i = first; chained && i < first + cnt; i++)
                    if (px_index(px, cl->order[i]) > px_index(px, last)) last = cl->order[i];
                x = (uint64_t)px_x(c, last), y = (uint64_t)px_y(c, last);
            }
            ex_comp *cp = &cl->comps[k];
            cp->key = (y + 1) * ((uint64_t)p->w + 1) + x + 1;
            cp->first = first;
            cp->n = npix;
            cp->chained = chained;
            cp->mom = measured ? mom : NULL;
            cp->label = (uint32_t)l;
            /* a chained component's threshold is the device's, in its slot (made from the records in raster order,
             * as here) */
            cp->thresh = mw                                ? exc_float(mw[EXW_PEAK + 3])
                         : p->noise != EX_NOISE_MAP        ? p->thresh
                         : p->sep_version == GPUWS_SEP_1_2 ? ex_fmul(p->relthresh, px->sig_lr[last])
                                                           : mean_thresh(c, cl->order + first, cnt);
        }
        k++;
    }
    cl->at[part] = k;
}

/* The components into comps, on up to nt threads; their number. at: nt entries. */
static size_t complist(ex_complist *cl, unsigned nt)
{
    const size_t parts = clamp_threads(nt, cl->n / EX_GROUP_MIN);
    cl->at[0] = 0;
    if (parts > 1) {
        cl->fill = false;
        gpuws__run_ranges(cl->n, parts, complist_share, cl);
        for (size_t t = 0, nc = 0; t < parts; t++) {
            const size_t m = cl->at[t];
            cl->at[t] = nc;
            nc += m;
        }
    }
    cl->fill = true;
    gpuws__run_ranges(cl->n, parts, complist_share, cl);
    return cl->at[parts - 1];
}

/* ---- deblending, analysis and the catalogue on threads ---- */

typedef struct {
    ex_objs out;                /* the objects this thread made */
    ex_deblender *d;            /* its deblending scratch */
    ex_pool pool;               /* the pixel lists of its objects (and of the gatherups it leaves for later) */
    float *heap;                /* mthresh's: 2 minarea floats */
    double busy_ms, longest_ms; /* deblending: its time in all, its longest component's (GPUWS_LOG=debug) */
    double kind_ms[2];          /* and its time on chained components and on the others */
    size_t longest_n;           /* that component's pixels */
} ex_worker;

/* A component's objects: worker w[worker]'s out[o0 .. o0 + on - 1], which go to objs[at .. at + on - 1]. */
typedef struct {
    size_t o0, on, at;
    unsigned worker;
    ex_objs pending; /* its gatherup, left until the seed is known (no objects: none) */
    uint64_t ndraws; /* the random numbers its gatherup draws */
    unsigned seed;   /* SEP's seed at its gatherup */
} ex_result;

typedef struct {
    ex_ctx c;
    const ex_rec *order;
    const ex_comp *comps;
    ex_result *res;
    size_t nc;             /* components */
    size_t *handout;       /* the components in the order threads take them: the largest first */
    size_t *block, nblock; /* take b: handout[block[b] .. block[b + 1] - 1] */
    ex_worker *w;
    atomic_size_t next;
    atomic_bool failed;
    ex_objs objs;       /* every object, in catalogue order */
    const size_t *slot; /* object i's place in the catalogue, SIZE_MAX: cleaned away */
    gpuws_object *cat;
    int32_t *obj_of;
    size_t (*hcnt)[64]; /* deblend_all's passes over the components: each range's counts, then places */
    /* deblending's parts (GPUWS_LOG=debug): the scans, the gatherups left for later, the gathering, the handout
     * before the scans, the seeds and places between them */
    double ms[5];
} ex_job;

/* Takes the next n items of the shared counter; false when none is left (or a thread failed). */
static bool job_take(ex_job *j, size_t n, size_t total, size_t *first)
{
    if (atomic_load_explicit(&j->failed, memory_order_relaxed)) return false;
    *first = atomic_fetch_add_explicit(&j->next, n, memory_order_relaxed);
    return *first < total;
}

/* Deblending with the gatherups that draw left for later; the largest components first, so that none of them
 * keeps one thread busy at the end. The components measured on the device are not handed out (deblend_all). */
static void deblend_share(void *arg, unsigned t)
{
    ex_job *j = arg;
    ex_worker *w = &j->w[t];
    size_t b;
    while (job_take(j, 1, j->nblock, &b))
        for (size_t q = j->block[b]; q < j->block[b + 1]; q++) {
            const size_t k = j->handout[q];
            const ex_comp *cp = &j->comps[k];
            ex_result *r = &j->res[k];
            r->worker = t;
            r->o0 = w->out.n;
            const double t0 = ex_ms_now();
            const ex_rec *recs = j->order + cp->first;
            if (cp->chained ? !gpuws__ex_single(&j->c, recs, cp->n, cp->thresh, &w->out, &w->pool)
                            : !gpuws__ex_deblend(&j->c, w->d, recs, cp->n, cp->thresh, NULL, &w->out, &r->pending,
                                                 &r->ndraws, &w->pool)) {
                atomic_store(&j->failed, true);
                return;
            }
            const double ms = ex_ms_now() - t0;
            w->busy_ms += ms;
            w->kind_ms[cp->chained ? 0 : 1] += ms;
            if (ms > w->longest_ms) w->longest_ms = ms, w->longest_n = cp->n;
            r->on = w->out.n - r->o0;
        }
}

/* The gatherups left for later, each from its seed (handout: those components). */
static void gatherup_share(void *arg, unsigned t)
{
    ex_job *j = arg;
    ex_worker *w = &j->w[t];
    size_t b;
    while (job_take(j, 1, j->nblock, &b))
        for (size_t q = j->block[b]; q < j->block[b + 1]; q++) {
            ex_result *r = &j->res[j->handout[q]];
            unsigned seed = r->seed;
            r->worker = t;
            r->o0 = w->out.n;
            if (!gpuws__ex_gatherup(&j->c, &r->pending, &seed, &w->out, &w->pool)) {
                atomic_store(&j->failed, true);
                return;
            }
            r->on = w->out.n - r->o0;
        }
}

/* The handout's first nh components cut into takes of the shared counter (EX_TAKE_PIXELS). */
static void handout_blocks(ex_job *j, size_t nh)
{
    size_t nb = 0, pix = 0, cnt = 0;
    for (size_t q = 0; q < nh; q++) {
        if (cnt == 0) j->block[nb++] = q;
        pix += j->comps[j->handout[q]].n;
        if (++cnt == EX_TAKE_MAX || pix >= EX_TAKE_PIXELS) pix = cnt = 0;
    }
    j->block[nb] = nh;
    j->nblock = nb;
}

/* Each object's flags, analysis and cleaning's mthresh. */
static void analyse_share(void *arg, unsigned t)
{
    ex_job *j = arg;
    const gpuws__extract_params *p = j->c.p;
    size_t q;
    while (job_take(j, EX_OBJ_CHUNK, j->objs.n, &q)) {
        const size_t e = q + EX_OBJ_CHUNK < j->objs.n ? q + EX_OBJ_CHUNK : j->objs.n;
        for (size_t i = q; i < e; i++) {
            ex_obj *o = &j->objs.v[i];
            if (o->measured) continue;
            o->flag |= blank_flag(&j->c, o);
            gpuws__ex_analyse(&j->c, o, 1, p->gain);
            if (p->clean) gpuws__ex_mthresh(&j->c, o, j->w[t].heap, j->w[t].heap + p->minarea);
        }
    }
}

/* The variance of o's flux (its fluxerr squared): its pixels' σ² with noise, and the Poisson term with a gain, in
 * pixel order (extract_chain.h's ex_chain_measure makes the same sum for the objects the device measures). */
static double flux_variance(const ex_ctx *c, const ex_obj *o)
{
    const gpuws__extract_params *p = c->p;
    double fv = 0.0;
    for (size_t k = 0; k < o->npix; k++) {
        const size_t r = o->pix[k];
        if (p->noise != EX_NOISE_NONE) fv += (double)ex_fmul(c->px->sig[r], c->px->sig[r]);
        if (p->gain > 0.0 && c->px->value[r] > 0.0f) fv += c->px->value[r] / p->gain;
    }
    return fv;
}

/* The catalogue's rows and the segmentation map's numbers of the objects that survive cleaning. */
static void catalogue_share(void *arg, unsigned t)
{
    ex_job *j = arg;
    size_t q;
    (void)t;
    while (job_take(j, EX_OBJ_CHUNK, j->objs.n, &q)) {
        const size_t e = q + EX_OBJ_CHUNK < j->objs.n ? q + EX_OBJ_CHUNK : j->objs.n;
        for (size_t i = q; i < e; i++) {
            if (j->slot[i] == SIZE_MAX) continue;
            const ex_obj *o = &j->objs.v[i];
            gpuws_object *c = &j->cat[j->slot[i]];
            c->thresh = o->thresh;
            c->npix = (int64_t)o->npix;
            c->tnpix = o->dnpix;
            c->xmin = o->xmin;
            c->xmax = o->xmax;
            c->ymin = o->ymin;
            c->ymax = o->ymax;
            c->x = o->mx;
            c->y = o->my;
            c->x2 = o->mx2;
            c->y2 = o->my2;
            c->xy = o->mxy;
            c->errx2 = o->errx2;
            c->erry2 = o->erry2;
            c->errxy = o->errxy;
            c->a = o->a;
            c->b = o->b;
            c->theta = o->theta;
            c->cxx = o->cxx;
            c->cyy = o->cyy;
            c->cxy = o->cxy;
            c->flux = o->dflux;
            c->cflux = o->fdflux;
            const double fv = o->measured ? o->fvar : flux_variance(&j->c, o);
            if (o->pix) {
                for (size_t k = 0; j->obj_of && k < o->npix; k++) j->obj_of[o->pix[k]] = (int32_t)(j->slot[i] + 1);
            } else if (j->c.px->label_obj) { /* measured on the device, its records never read (px->compact) */
                j->c.px->label_obj[o->label] = (int32_t)(j->slot[i] + 1);
            }
            c->fluxerr = sqrt(fv);
            c->peak = o->dpeak;
            c->cpeak = o->fdpeak;
            c->xpeak = o->xpeak;
            c->ypeak = o->ypeak;
            c->xcpeak = o->xcpeak;
            c->ycpeak = o->ycpeak;
            c->flag = o->flag;
        }
    }
}

/* The objects [lo, hi) of the catalogue, copied from their workers. */
static void gather_range(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_job *j = arg;
    size_t a = 0, b = j->nc; /* the first component with objects at lo or after */
    (void)part;
    while (a < b) {
        const size_t mid = a + (b - a) / 2;
        if (j->res[mid].at + j->res[mid].on <= lo) a = mid + 1;
        else b = mid;
    }
    for (size_t k = a; k < j->nc && j->res[k].at < hi; k++) {
        const ex_result *r = &j->res[k];
        const ex_comp *cp = &j->comps[k];
        if (cp->mom) { /* measured on the device: its object made here, in place (its one place lies in range) */
            gpuws__ex_measured(&j->c, j->c.px->compact ? NULL : j->order + cp->first, cp->n, cp->mom, cp->label,
                               &j->objs.v[r->at]);
            continue;
        }
        const size_t s0 = r->at > lo ? r->at : lo, s1 = r->at + r->on < hi ? r->at + r->on : hi;
        memcpy(j->objs.v + s0, j->w[r->worker].out.v + r->o0 + (s0 - r->at), (s1 - s0) * sizeof *j->objs.v);
    }
}

/* Runs share on nt threads, the shared counter from 0; false when a thread failed or could not be had. */
static bool job_run(ex_job *j, unsigned nt, void (*share)(void *, unsigned))
{
    atomic_store(&j->next, 0);
    return gpuws__run_threads(nt, share, j) == GPUWS_OK && !atomic_load(&j->failed);
}

/* The handout's order: the largest components first, by the bit length of the pixel count, catalogue order within.
 * A counting sort over ranges of the components (one pass counts, one places; hcnt[part][bucket] is the range's
 * count, then its next place); the components measured on the device are made where the gathering puts them, never
 * in a thread's list first: one object each. */
static size_t comp_bucket(const ex_comp *cp) { return (size_t)__builtin_clzll((unsigned long long)cp->n); }

static void handout_count(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_job *j = arg;
    size_t *cnt = j->hcnt[part];
    memset(cnt, 0, sizeof j->hcnt[part]);
    for (size_t k = lo; k < hi; k++) {
        if (j->comps[k].mom) j->res[k].on = 1;
        else cnt[comp_bucket(&j->comps[k])]++;
    }
}

static void handout_place(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_job *j = arg;
    size_t *at = j->hcnt[part];
    for (size_t k = lo; k < hi; k++)
        if (!j->comps[k].mom) j->handout[at[comp_bucket(&j->comps[k])]++] = k;
}

/* Each component's first object in catalogue order (res[k].at), over ranges: a range's sum, then its places. */
static void places_sum(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_job *j = arg;
    size_t m = 0;
    for (size_t k = lo; k < hi; k++) m += j->res[k].on;
    j->hcnt[part][0] = m;
}

static void places_set(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_job *j = arg;
    size_t at = j->hcnt[part][0];
    for (size_t k = lo; k < hi; k++) {
        j->res[k].at = at;
        at += j->res[k].on;
    }
}

static int cmp_size(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Deblending of the components (comps, in catalogue order) into j->objs, on nt threads; false when memory fails. */
static bool deblend_all(ex_job *j, size_t nc, unsigned nt)
{
    if (nt == 1) { /* one thread: in catalogue order, the draws from SEP's seed as they come */
        unsigned seed = 1u;
        const double t0 = ex_ms_now();
        for (size_t k = 0; k < nc; k++) {
            const ex_comp *cp = &j->comps[k];
            ex_result *r = &j->res[k];
            r->o0 = j->w[0].out.n;
            const ex_rec *recs = j->order + cp->first;
            if (cp->mom ? !gpuws__ex_single_measured(&j->c, j->c.px->compact ? NULL : recs, cp->n, cp->mom, cp->label,
                                                     &j->w[0].out)
                : cp->chained ? !gpuws__ex_single(&j->c, recs, cp->n, cp->thresh, &j->w[0].out, &j->w[0].pool)
                              : !gpuws__ex_deblend(&j->c, j->w[0].d, recs, cp->n, cp->thresh, &seed, &j->w[0].out, NULL,
                                                   &r->ndraws, &j->w[0].pool))
                return false;
            r->on = j->w[0].out.n - r->o0;
        }
        j->ms[0] = ex_ms_now() - t0;
        j->objs = j->w[0].out; /* already in catalogue order */
        memset(&j->w[0].out, 0, sizeof j->w[0].out);
        return true;
    }
    /* the passes over every component on threads: at 8192² a quarter of a million of them, their results' pages
     * fresh */
    double t0 = ex_ms_now();
    const size_t parts = clamp_threads(nt, nc / EX_PASS_MIN);
    if (!(j->hcnt = gpuws__malloc(parts * sizeof *j->hcnt))) return false;
    gpuws__run_ranges(nc, parts, handout_count, j);
    size_t nh = 0;
    for (size_t b = 0; b < 64; b++)
        for (size_t t = 0; t < parts; t++) {
            const size_t m = j->hcnt[t][b];
            j->hcnt[t][b] = nh;
            nh += m;
        }
    gpuws__run_ranges(nc, parts, handout_place, j);
    handout_blocks(j, nh);
    j->ms[3] = ex_ms_now() - t0;
    t0 = ex_ms_now();
    if (!job_run(j, nt, deblend_share)) return false;
    j->ms[0] = ex_ms_now() - t0;
    t0 = ex_ms_now();
    /* the gatherups left for later, in the same largest-first order, and in catalogue order (block as scratch) for
     * SEP's seed at each: the draws of the components before it skipped */
    size_t np = 0;
    for (size_t q = 0; q < nh; q++)
        if (j->res[j->handout[q]].pending.n) j->handout[np++] = j->handout[q];
    memcpy(j->block, j->handout, np * sizeof *j->block);
    qsort(j->block, np, sizeof *j->block, cmp_size);
    unsigned seed = 1u;
    for (size_t q = 0; q < np; q++) {
        ex_result *r = &j->res[j->block[q]];
        r->seed = seed;
        seed = gpuws__ex_rand_skip(seed, r->ndraws);
    }
    handout_blocks(j, np);
    double between = ex_ms_now() - t0;
    t0 = ex_ms_now();
    if (np && !job_run(j, clamp_threads(nt, j->nblock), gatherup_share)) return false;
    j->ms[1] = ex_ms_now() - t0;
    t0 = ex_ms_now();
    /* every thread's objects, in catalogue order */
    gpuws__run_ranges(nc, parts, places_sum, j);
    size_t total = 0;
    for (size_t t = 0; t < parts; t++) {
        const size_t m = j->hcnt[t][0];
        j->hcnt[t][0] = total;
        total += m;
    }
    gpuws__run_ranges(nc, parts, places_set, j);
    if (!(j->objs.v = gpuws__malloc((total ? total : 1) * sizeof *j->objs.v))) return false;
    j->objs.cap = total ? total : 1;
    j->objs.n = total;
    j->nc = nc;
    j->ms[4] = between + ex_ms_now() - t0;
    t0 = ex_ms_now();
    gpuws__run_ranges(total, clamp_threads(nt, total / EX_GATHER_MIN), gather_range, j);
    j->ms[2] = ex_ms_now() - t0;
    for (unsigned t = 0; t < nt; t++) j->w[t].out.n = 0; /* j->objs holds them now */
    return true;
}

static _Thread_local size_t chained_last, measured_last, mismatches_last, compact_last, all_last;

size_t gpuws__extract_chained_last(void) { return chained_last; }
size_t gpuws__extract_compact_last(size_t *all)
{
    *all = all_last;
    return compact_last;
}
size_t gpuws__extract_measured_last(void) { return measured_last; }
size_t gpuws__extract_chain_mismatches_last(void) { return mismatches_last; }

static int cmp_rec(const void *a, const void *b)
{
    const ex_rec x = *(const ex_rec *)a, y = *(const ex_rec *)b;
    return (x > y) - (x < y);
}

/* Whether the host's object h and the device's measured m (of the same pixels) have the same measures, bit for
 * bit: every field that the analysis, cleaning or the catalogue reads. */
static bool same_measures(const ex_obj *h, const ex_obj *m)
{
#define EX_SAME(f) (memcmp(&h->f, &m->f, sizeof h->f) == 0)
    return EX_SAME(thresh) && EX_SAME(flag) && EX_SAME(fdflux) && EX_SAME(fdpeak) && EX_SAME(dpeak) && EX_SAME(a) &&
           EX_SAME(b) && EX_SAME(cxx) && EX_SAME(cyy) && EX_SAME(cxy) && EX_SAME(mthresh) && EX_SAME(dflux) &&
           EX_SAME(mx) && EX_SAME(my) && EX_SAME(mx2) && EX_SAME(my2) && EX_SAME(mxy) && EX_SAME(errx2) &&
           EX_SAME(erry2) && EX_SAME(errxy) && EX_SAME(theta) && EX_SAME(abcor) && EX_SAME(dnpix) && EX_SAME(xmin) &&
           EX_SAME(xmax) && EX_SAME(ymin) && EX_SAME(ymax) && EX_SAME(xpeak) && EX_SAME(ypeak) && EX_SAME(xcpeak) &&
           EX_SAME(ycpeak) && EX_SAME(fvar);
#undef EX_SAME
}

/* The host's measures of o as analyse_share and the catalogue make them (flags, analysis, mthresh, the flux's
 * variance), for the check below; heap: 2 minarea floats. */
static void measure_on_host(const ex_ctx *c, ex_obj *o, float *heap)
{
    const gpuws__extract_params *p = c->p;
    o->flag |= blank_flag(c, o);
    gpuws__ex_analyse(c, o, 1, p->gain);
    gpuws__ex_mthresh(c, o, heap, heap + p->minarea);
    o->fvar = flux_variance(c, o);
}

/* Knob extract_chain_check: each chained component deblended on the host from its records in raster order, which
 * must give one object, the component, its pixels in the device's chain order, and where the device measured it,
 * the same measures. The count of those that do not (a failure of host memory counts too), SIZE_MAX when the check
 * has no memory at all. */
static size_t chain_mismatches(const ex_ctx *c, const ex_comp *comps, size_t nc, const ex_rec *order)
{
    ex_deblender *d = gpuws__ex_deblender_new();
    ex_pool pool;
    gpuws__ex_pool_init(&pool, 0);
    ex_objs out = { 0 }, dev = { 0 };
    float *heap = gpuws__malloc(2 * (size_t)(c->p->minarea > 0 ? c->p->minarea : 1) * sizeof *heap);
    size_t bad = d && heap ? 0 : SIZE_MAX, cap = 0;
    ex_rec *raster = NULL;
    for (size_t k = 0; bad != SIZE_MAX && k < nc; k++) {
        const ex_comp *cp = &comps[k];
        if (!cp->chained) continue;
        if (cp->n > cap) {
            ex_rec *r = gpuws__realloc(raster, cp->n * sizeof *r);
            if (!r) {
                bad = SIZE_MAX;
                break;
            }
            raster = r, cap = cp->n;
        }
        memcpy(raster, order + cp->first, cp->n * sizeof *raster);
        qsort(raster, cp->n, sizeof *raster, cmp_rec); /* record numbers go up in raster order */
        unsigned seed = 1u;
        uint64_t draws;
        out.n = 0;
        /* false: memory failed, or the scan found other than one object (records that are not a component) */
        if (!gpuws__ex_deblend(c, d, raster, cp->n, cp->thresh, &seed, &out, NULL, &draws, &pool) || out.n != 1 ||
            out.v[0].npix != cp->n || memcmp(out.v[0].pix, order + cp->first, cp->n * sizeof *raster) != 0) {
            bad++;
        } else if (cp->mom) {
            dev.n = 0;
            measure_on_host(c, &out.v[0], heap);
            if (!gpuws__ex_single_measured(c, order + cp->first, cp->n, cp->mom, cp->label, &dev) ||
                !same_measures(&out.v[0], &dev.v[0]))
                bad++;
        }
        gpuws__ex_pool_rewind(&pool);
    }
    gpuws__free(raster);
    gpuws__free(heap);
    gpuws__ex_objs_free(&dev);
    gpuws__ex_objs_free(&out);
    gpuws__ex_pool_free(&pool);
    gpuws__ex_deblender_free(d);
    return bad;
}

gpuws_status gpuws__extract_objects(const gpuws__extract_params *p, const gpuws__extract_pixels *px,
                                    gpuws_extract_catalog **out, int32_t *obj_of)
{
    double tm[6] = { 0 }; /* the steps' ends, for GPUWS_LOG=debug: which host step a large image waits for */
    long pf[6] = { 0 };   /* the page faults so far at each */
    tm[0] = ex_ms_now();
    pf[0] = ex_faults();
    chained_last = measured_last = mismatches_last = 0;
    compact_last = px->compact ? px->n : SIZE_MAX, all_last = px->compact ? px->all : px->n;
    const size_t n = px->n;
    const unsigned threads = p->threads > 1 ? p->threads : 1u;
    ex_job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, false);
    uint32_t *xy = gpuws__malloc(2 * (n ? n : 1) * sizeof *xy);
    j.c = (ex_ctx){ p, px, xy, xy ? xy + n : NULL };
    ex_group g;
    memset(&g, 0, sizeof g);
    g.c = &j.c, g.n = n, g.nt = clamp_threads(threads, n / EX_GROUP_MIN), g.xy = xy, g.obj_of = obj_of;
    atomic_init(&g.failed, false);
    g.part = gpuws__malloc((threads + 1) * sizeof *g.part);
    g.before = gpuws__malloc((threads + 1) * sizeof *g.before);
    g.carry = gpuws__calloc(threads + 1, sizeof *g.carry);
    /* the records grouped by component: the device's grouping where it made one (extract.c), else the host's */
    const bool grouped = px->group != NULL;
    ex_rec *own = grouped ? NULL : gpuws__malloc((n ? n : 1) * sizeof *own), *order = grouped ? px->group : own;
    size_t *start = NULL, *slot = NULL, nc = 0, nw = 0;
    ex_comp *comps = NULL;
    int *survives = NULL;
    gpuws_extract_catalog *cat = NULL;
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY, cleaned = GPUWS_OK; /* cleaning's failure sets its own message */
    if (!xy || !g.part || !g.before || !g.carry || !order || !group_step(&g, 0)) goto done;
    for (unsigned t = 0; t < g.nt; t++) {
        g.before[t] = g.nl;
        g.nl = g.part[t] > g.nl ? g.part[t] : g.nl;
    }
    /* the device left the labels' count there, or the bands' join (slot_of: measured labels have no records) */
    if (grouped || px->slot_of) g.nl = px->nl;
    const size_t nl = g.nl;
    g.cnt = grouped ? NULL : gpuws__calloc(nl + 2, sizeof *g.cnt);
    start = gpuws__malloc((nl + 2) * sizeof *start);
    comps = gpuws__malloc(2 * (nl ? nl : 1) * sizeof *comps); /* and the sort's scratch */
    g.start = start;
    g.order = order;
    if ((!grouped && !g.cnt) || !start || !comps) goto done;
    if (grouped) {
        if (!group_step(&g, 5)) goto done;
    } else {
        if (!group_step(&g, 1)) goto done;
        group_merge(&g);
        if (!group_step(&g, 2)) goto done;
        for (size_t t = 0, at = 0; t < g.nt; t++) {
            const size_t m = g.part[t];
            g.part[t] = at;
            at += m;
        }
        if (!group_step(&g, 3) || !group_step(&g, 4)) goto done;
    }
    const double t_grouped = ex_ms_now();
    start[nl + 1] = n;
    ex_complist cl = { &j.c, start, order, n, nl, g.part, comps, false };
    nc = complist(&cl, threads);
    const double t_listed = ex_ms_now();
    const unsigned sort_parts = clamp_threads(threads < 64 ? threads : 64, nc / EX_SORT_MIN);
    ex_keyat *keyat = gpuws__malloc(2 * (nc ? nc : 1) * sizeof *keyat);
    size_t(*count)[256] = gpuws__malloc(sort_parts * sizeof *count);
    const bool sortable = keyat && count;
    if (sortable) sort_comps(comps, nc, comps + nl, keyat, count, sort_parts);
    gpuws__free(keyat);
    gpuws__free(count);
    if (!sortable) goto done;
    tm[1] = ex_ms_now();
    pf[1] = ex_faults();

    /* deblending, analysis */
    nw = clamp_threads(threads, nc);
    j.order = order;
    j.comps = comps;
    j.obj_of = obj_of;
    if (!(j.w = gpuws__calloc(nw, sizeof *j.w)) || !(j.res = gpuws__calloc(nc ? nc : 1, sizeof *j.res)) ||
        !(j.handout = gpuws__malloc((nc ? nc : 1) * sizeof *j.handout)) ||
        !(j.block = gpuws__malloc((nc + 1) * sizeof *j.block)))
        goto done;
    /* each pool and list of objects first sized for its share of the records and components, a quarter more: grown
     * by doubling, a list would move its objects to fresh pages at each step */
    for (size_t t = 0; t < nw; t++) gpuws__ex_pool_init(&j.w[t].pool, n / nw + n / nw / 4);
    for (size_t t = 0; t < nw; t++)
        if (!(j.w[t].d = gpuws__ex_deblender_new()) ||
            !(j.w[t].out.v = gpuws__malloc((j.w[t].out.cap = nc / nw + nc / nw / 4 + 16) * sizeof *j.w[t].out.v)) ||
            (p->clean && !(j.w[t].heap = gpuws__malloc(2 * (size_t)p->minarea * sizeof *j.w[t].heap))))
            goto done;
    const double t_setup = ex_ms_now() - tm[1];
    if (!deblend_all(&j, nc, (unsigned)nw)) goto done;
    tm[2] = ex_ms_now();
    pf[2] = ex_faults();
    if (!job_run(&j, clamp_threads((unsigned)nw, j.objs.n / EX_OBJ_CHUNK + 1), analyse_share)) goto done;
    tm[3] = ex_ms_now();
    pf[3] = ex_faults();

    /* cleaning: the pairs on threads, their effects in catalogue order (an object's fate depends on those before it) */
    survives = gpuws__malloc((j.objs.n ? j.objs.n : 1) * sizeof *survives);
    slot = gpuws__malloc((j.objs.n ? j.objs.n : 1) * sizeof *slot);
    if (!survives || !slot) goto done;
    if (p->clean) {
        if ((cleaned = gpuws__ex_clean(&j.objs, p, threads, survives))) goto done;
    } else {
        for (size_t i = 0; i < j.objs.n; i++) survives[i] = 1;
    }
    tm[4] = ex_ms_now();
    pf[4] = ex_faults();
    size_t kept = 0;
    for (size_t i = 0; i < j.objs.n; i++) slot[i] = survives[i] ? kept++ : SIZE_MAX;
    if (!(cat = gpuws__calloc(1, sizeof *cat)) ||
        !(cat->objects = gpuws__calloc(kept ? kept : 1, sizeof *cat->objects)))
        goto done;
    j.slot = slot;
    j.cat = cat->objects;
    if (!job_run(&j, clamp_threads((unsigned)nw, j.objs.n / EX_OBJ_CHUNK + 1), catalogue_share)) goto done;
    cat->num_objects = kept;
    st = GPUWS_OK;
    tm[5] = ex_ms_now();
    pf[5] = ex_faults();
    double busy = 0, longest = 0, kind[2] = { 0 };
    size_t longest_n = 0;
    for (size_t t = 0; t < nw; t++) {
        busy += j.w[t].busy_ms;
        for (int q = 0; q < 2; q++) kind[q] += j.w[t].kind_ms[q];
        if (j.w[t].longest_ms > longest) longest = j.w[t].longest_ms, longest_n = j.w[t].longest_n;
    }
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract: deblending on %zu threads: busy %.0f%% of the step, its longest component %zu pixels in "
               "%.1f ms; scans %.1f ms (the threads' time: chained %.1f, the others %.1f), gatherups left for later "
               "%.1f, gathering (the objects measured on the device made there) %.1f; before them: set-up %.1f, the "
               "handout %.1f; between them %.1f",
               nw, 100.0 * busy / ((double)nw * (tm[2] - tm[1]) + 1e-9), longest_n, longest, j.ms[0], kind[0], kind[1],
               j.ms[1], j.ms[2], t_setup, j.ms[3], j.ms[4]);
    size_t nchained = 0, nmeasured = 0;
    for (size_t k = 0; px->chained && k < nc; k++) nchained += comps[k].chained, nmeasured += comps[k].mom != NULL;
    chained_last = nchained;
    measured_last = nmeasured;
    if (p->chain_check && nchained) {
        mismatches_last = chain_mismatches(&j.c, comps, nc, order);
        gpuws__log(GPUWS__LOG_DEBUG, "extract: chain check: %zu of the %zu chained components differ from the host's",
                   mismatches_last, nchained);
    }
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract: components: grouped by label %.1f ms, listed %.1f, sorted %.1f; %zu of %zu chained on the "
               "device (one object each, deblending skipped), %zu of them measured there",
               t_grouped - tm[0], t_listed - t_grouped, tm[1] - t_listed, nchained, nc, nmeasured);
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract: host steps (ms, %u threads): components %.1f, deblending %.1f, analysis %.1f, cleaning %.1f, "
               "catalogue %.1f; %zu pixels, %zu components, %zu objects before cleaning, %zu after",
               threads, tm[1] - tm[0], tm[2] - tm[1], tm[3] - tm[2], tm[4] - tm[3], tm[5] - tm[4], n, nc, j.objs.n,
               kept);
    gpuws__log(GPUWS__LOG_DEBUG,
               "extract: host steps' page faults (first touches of fresh pages): components %ld, deblending %ld, "
               "analysis %ld, cleaning %ld, catalogue %ld",
               pf[1] - pf[0], pf[2] - pf[1], pf[3] - pf[2], pf[4] - pf[3], pf[5] - pf[4]);
done:
    if (st) {
        if (cat) gpuws__free(cat->objects);
        gpuws__free(cat);
        st = cleaned
                 ? cleaned
                 : gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "extract: no host memory for the catalogue of %zu pixel records (%zu bytes and more)",
                                n, n * (sizeof(size_t) + sizeof(gpuws_object)));
    } else {
        *out = cat;
    }
    for (size_t t = 0; j.w && t < nw; t++) {
        gpuws__ex_objs_free(&j.w[t].out);
        gpuws__ex_deblender_free(j.w[t].d);
        gpuws__free(j.w[t].heap);
    }
    for (size_t k = 0; j.res && k < nc; k++) gpuws__ex_objs_free(&j.res[k].pending); /* what is left, if any */
    gpuws__ex_objs_free(&j.objs);
    for (size_t t = 0; j.w && t < nw; t++) gpuws__ex_pool_free(&j.w[t].pool); /* the lists of all of them */
    gpuws__free(j.w);
    gpuws__free(j.res);
    gpuws__free(j.handout);
    gpuws__free(j.block);
    gpuws__free(j.hcnt);
    gpuws__free(survives);
    gpuws__free(slot);
    gpuws__free(xy);
    gpuws__free(g.part);
    gpuws__free(g.before);
    for (unsigned t = 0; g.carry && t <= threads; t++) gpuws__free(g.carry[t].v), gpuws__free(g.carry[t].slot);
    gpuws__free(g.carry);
    gpuws__free(g.cnt);
    gpuws__free(start);
    gpuws__free(own);
    gpuws__free(comps);
    if (!st) gpuws__log(GPUWS__LOG_DEBUG, "extract: host steps' memory released in %.1f ms", ex_ms_now() - tm[5]);
    return st;
}
