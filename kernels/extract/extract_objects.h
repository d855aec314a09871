/* What the files of gpuws_extract's host steps share (extract_ref.h's gpuws__extract_objects): extract_objects.c
 * (components, analysis, the threads, the catalogue), extract_deblend.c (Lutz's scan, deblending, gatherup) and
 * extract_clean.c (cleaning). */
#ifndef GPUWS_EXTRACT_OBJECTS_H
#define GPUWS_EXTRACT_OBJECTS_H

#include "extract_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "extract_pixel.h" /* after <math.h>: it includes nothing */

#define EX_PI 3.1415926535898 /* SEP's π */

/* A pixel record's number (extract.c): below 2^31, as the labels are int32. Lists of them are the objects' pixels, 4
 * bytes an entry: the device's grouping serves as the components' lists as it is read back. */
typedef uint32_t ex_rec;

/* One object: its pixels (record numbers) and SEP's objstruct fields. */
typedef struct {
    ex_rec *pix;
    size_t npix;
    float thresh; /* the threshold at the object */
    int flag;
    float fdflux, fdpeak, dpeak, a, b, cxx, cyy, cxy, mthresh;
    double dflux, mx, my, mx2, my2, mxy, errx2, erry2, errxy, theta, abcor;
    int64_t dnpix, xmin, xmax, ymin, ymax, xpeak, ypeak, xcpeak, ycpeak;
    size_t son0, son1; /* deblending: the node's sons, nodes[son0 .. son1 - 1] */
    bool keep;         /* deblending: no split below it */
    float amp;         /* gatherup: the amplitude of the object's fitted profile */
    bool measured;     /* analysed, mthresh and fvar made, from the device's measures (extract_chain.h) */
    double fvar;       /* then the flux's variance */
    uint32_t label;    /* then its component (pix NULL: its records not read, extract_ref.h's px->compact) */
} ex_obj;

typedef struct {
    ex_obj *v;
    size_t n, cap;
} ex_objs;

typedef struct {
    const gpuws__extract_params *p;
    const gpuws__extract_pixels *px;
    const uint32_t *x, *y; /* each record's column and row: divisions by w done once, not at every visit */
} ex_ctx;

static inline int64_t px_x(const ex_ctx *c, size_t r) { return (int64_t)c->x[r]; }
static inline int64_t px_y(const ex_ctx *c, size_t r) { return (int64_t)c->y[r]; }

/* Record r's raster index, and whether its pixel touches a NaN or masked pixel. */
static inline uint64_t px_index(const gpuws__extract_pixels *px, size_t r)
{
    return px->idx64 ? px->idx64[r] & ~EX_BLANK_BIT64 : (uint64_t)(px->idx[r] & ~EX_BLANK_BIT);
}
static inline bool px_blank(const gpuws__extract_pixels *px, size_t r)
{
    return px->idx64 ? (px->idx64[r] & EX_BLANK_BIT64) != 0 : (px->idx[r] & EX_BLANK_BIT) != 0;
}

/* The threshold SEP stores with a pixel (used by cleaning). */
static inline float px_thresh(const ex_ctx *c, size_t r)
{
    return c->p->noise == EX_NOISE_MAP ? ex_fmul(c->p->relthresh, c->px->sig[r]) : c->p->thresh;
}

/* Milliseconds on the monotonic clock: the host steps' times for GPUWS_LOG=debug. */
static inline double ex_ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

bool gpuws__ex_objs_push(ex_objs *o, const ex_obj *x);
void gpuws__ex_objs_free(ex_objs *o); /* the array; the pixel lists belong to their pool */

/* Where pixel lists come from: carved one after the other from large chunks and released all at once. A large
 * image's hundreds of thousands of lists, each a malloc of its own, cost a fault at every fresh page and a free
 * each at the end; large chunks are advised into huge pages (gpuws__malloc). */
typedef struct {
    ex_rec **chunk; /* the chunks held */
    size_t *size;   /* their entries */
    size_t n, cap;
    ex_rec *at;  /* the current chunk's free part */
    size_t left; /* its entries */
    size_t next; /* the entries of the next chunk */
} ex_pool;
void gpuws__ex_pool_init(ex_pool *p, size_t first); /* the first chunk holds at least `first` entries */
ex_rec *gpuws__ex_pool_take(ex_pool *p, size_t n);  /* n entries; NULL when memory fails */
void gpuws__ex_pool_rewind(ex_pool *p);             /* every list gone; the largest chunk kept for the next */
void gpuws__ex_pool_free(ex_pool *p);

/* SEP's preanalyse: bounds, peaks, the filtered flux. */
void gpuws__ex_preanalyse(const ex_ctx *c, ex_obj *o);
/* SEP's analyse. robust: an object made by deblending keeps the barycentre of its earlier analysis. */
void gpuws__ex_analyse(const ex_ctx *c, ex_obj *o, int robust, double gain);
/* What analyse sums over the pixels: the barycentre and second moments from the box's corner (xmin, ymin), the
 * error sums before their division by the flux squared, the flux, the pixels above the threshold and above half
 * way to the peak. */
typedef struct {
    double xm, ym, xm2, ym2, xym, cvarsum, errx2, erry2, errxy, tv;
    int64_t dnpix, area2;
} ex_sums;
/* The rest of analyse, from those sums, o's preanalysis and threshold. */
void gpuws__ex_analyse_finish(ex_obj *o, const ex_sums *m);

/* ---- deblending (extract_deblend.c) ---- */

/* A thread's scratch for deblending, kept from one component to the next. */
typedef struct ex_deblender ex_deblender;
ex_deblender *gpuws__ex_deblender_new(void); /* NULL when memory fails */
void gpuws__ex_deblender_free(ex_deblender *d);

/* One component (records in raster order, its threshold t0) to its objects, appended to out in SEP's order, and the
 * random numbers its gatherup draws, *ndraws. seed (SEP's, at this component): the draws are made from it. seed
 * NULL: a gatherup that draws is left for later: out gets nothing and *pending the objects deblending keeps (the
 * component first), ready for gpuws__ex_gatherup from the seed at this component; a component that draws nothing is
 * done at once. The objects' pixel lists come from pool (the tree's own from d's scratch). False when memory fails
 * (nothing added to out or *pending). */
bool gpuws__ex_deblend(const ex_ctx *c, ex_deblender *d, const ex_rec *recs, size_t npix, float t0, unsigned *seed,
                       ex_objs *out, ex_objs *pending, uint64_t *ndraws, ex_pool *pool);
/* A component that cannot split (the device found it so: extract_chain.h), its records in chain order: its one
 * object, as gpuws__ex_deblend makes it, appended to out (its pixel list from pool). False when memory fails. */
bool gpuws__ex_single(const ex_ctx *c, const ex_rec *chain, size_t npix, float t0, ex_objs *out, ex_pool *pool);
/* The same object, measured (analysed, its mthresh and flux variance: extract_chain.h's ex_chain_measure) from the
 * device's slot mom, of component label; its pixel list is the chain itself, which must outlive it (NULL: the
 * records were not read, extract_ref.h's px->compact). False when memory fails. */
bool gpuws__ex_single_measured(const ex_ctx *c, const ex_rec *chain, size_t npix, const double *mom, uint32_t label,
                               ex_objs *out);
/* That object into *o, which nothing allocates. */
void gpuws__ex_measured(const ex_ctx *c, const ex_rec *chain, size_t npix, const double *mom, uint32_t label,
                        ex_obj *o);
/* The gatherup left for later (*pending from gpuws__ex_deblend), drawing from *seed: its objects appended to out.
 * False when memory fails (nothing added). The pixel lists of out and *pending come from pool. */
bool gpuws__ex_gatherup(const ex_ctx *c, const ex_objs *pending, unsigned *seed, ex_objs *out, ex_pool *pool);
/* SEP's seed after `draws` random numbers drawn from seed. */
unsigned gpuws__ex_rand_skip(unsigned seed, uint64_t draws);

/* ---- cleaning (extract_clean.c) ---- */

/* Cleaning's mthresh of o, as SEP finds it; heap and tmp: minarea floats each. */
void gpuws__ex_mthresh(const ex_ctx *c, ex_obj *o, float *heap, float *tmp);
/* SEP's clean (with p's clean_param, over p's w x h image): whether each object survives, the objects in catalogue
 * order; the same for any number of threads, and with p->clean_on, whose device then works out the pairs where there
 * are p->clean_from objects or more (extract_clean.h). On failure (survives untouched) host memory's status or the
 * device's, its message set. */
gpuws_status gpuws__ex_clean(const ex_objs *o, const gpuws__extract_params *p, unsigned threads, int *survives);

#endif
