/* gpuws_extract_host: the extraction of a host image of any size (docs/scale.md, "Source extraction from host
 * memory"). In one band it is gpuws_extract between uploads and a download. In bands, each band of whole rows goes
 * to the device with max(filter_h / 2, 1) rows of halo on either side, which is every row that its own rows' filtered
 * values, blank flags and lower-right σ read: so the device makes the records of the band's own rows exactly as it
 * makes them in one image (the filter leaves out only rows outside the image, and a band's edge is the image's only
 * where the image ends). Only a band's own rows are detected, so its labels are gpuws_label's on them. The host
 * keeps the records of the bands' own rows, which are then the whole image's in raster order, joins the labels that
 * touch across the borders between bands and numbers the components as gpuws_label numbers the whole image, and
 * makes the catalogue with gpuws_extract's host steps: the same catalogue and segmentation map, bit for bit. Where
 * the device groups (a GPU), a band also finishes on the device the components that touch none of its border rows,
 * as in-core, and the host keeps only the records of the others (docs/scale.md). */
#include "../common/band_stream.h"
#include "../common/driver.h"
#include "../../core/options.h"
#include "../../core/threads.h"
#include "../background/background_ref.h"
#include "extract_ref.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract_pixel.h" /* after <math.h>: it includes nothing */
#include "extract_chain.h" /* the measures' words, which a band's coordinates are moved in */

/* Device bytes a pixel of a band: the image, the prepared maps (d, σ, filtered), det, labels, and records of six
 * words where every pixel is detected; the maps given take 4 bytes each and the mask 1 more. */
#define EX_HOST_BYTES 45u
/* What the in-core call adds a pixel, every pixel a record at worst: the device's grouping of the records (16 bytes a
 * record), their chaining (about 44) and the segmentation map (4). */
#define EX_IN_CORE_BYTES 64u

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The records of the bands' own rows, growing as the bands come, and their components: label holds each record's
 * band label, made global (the labels of the bands before added), until components_join numbers them.
 * With compact bands (ex_bands.compact) the records are those the host works on, each band's grouped by its labels
 * (a band's components that the device measured have none), and three more things are kept: each label's slot in
 * mom where the device chained its component, the measures (moved to the image's coordinates), and the records of
 * the rows either side of each border (ex_edge), which the join reads instead. */
typedef struct {
    uint64_t *idx; /* raster index | EX_BLANK_BIT64: 64 bits, as the image may hold 2^31 pixels or more */
    float *value, *cd, *sig, *sig_lr;
    int32_t *label;
    size_t n, cap;
    uint32_t *band_idx; /* where a band's records' indices are read (the band's, 32 bits), before they are moved */
    size_t band_cap;
    size_t labels; /* the bands' labels so far */
    size_t all;    /* the records the devices made (compact bands: more than n) */
    uint32_t *slot;
    size_t slot_cap;
    double *mom;
    size_t nmom, mom_cap;
    struct ex_edge *edge;
    size_t nedge, edge_cap;
    struct ex_run *run; /* the border components' records in grouped bands (raster order each) */
    size_t nrun, run_cap;
} ex_kept;

/* A record of a border row: its raster index and label. */
typedef struct ex_edge {
    uint64_t at;
    int32_t label;
} ex_edge;

/* A border component's records in a grouped band: k's records [r0, r1), all of label `label`. Two of one band may
 * belong to one component (joined through another band: a U), whose records must then be merged into raster order,
 * which in-core they have (runs_merge). */
typedef struct ex_run {
    uint32_t label;
    size_t band, r0, r1;
} ex_run;

static void kept_free(ex_kept *k)
{
    gpuws__free(k->idx), gpuws__free(k->value), gpuws__free(k->cd), gpuws__free(k->sig), gpuws__free(k->sig_lr);
    gpuws__free(k->label), gpuws__free(k->slot), gpuws__free(k->mom), gpuws__free(k->edge), gpuws__free(k->run);
    gpuws__free(k->band_idx);
    memset(k, 0, sizeof *k);
}

/* *p (of *cap entries of `size` bytes) holding at least `need` entries, on its first growth `first` entries (a
 * guess for every band) if more, later by doubling; the fresh pages mapped on threads (each realloc copies and
 * faults in what it moves). False when memory fails. */
static bool room_mapped(void **p, size_t *cap, size_t need, size_t first, size_t size)
{
    if (need <= *cap) return true;
    const size_t c = *cap ? (2 * *cap > need ? 2 * *cap : need) : first > need ? first : need;
    char *q = gpuws__realloc(*p, c * size);
    if (!q) return false;
    gpuws__prefault(q + *cap * size, (c - *cap) * size);
    *p = q, *cap = c;
    return true;
}

/* The same without a first guess: the small arrays (edges, runs, slots appended). */
static bool room_for(void **p, size_t *cap, size_t need, size_t size) { return room_mapped(p, cap, need, 0, size); }

/* Room for `more` records: the first time as asked, later by doubling, or exactly when `exact`. */
static bool kept_grow(ex_kept *k, size_t more, bool exact)
{
    if (k->n + more <= k->cap) return true;
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < k->n + more) cap = k->cap && !exact ? cap * 2 : k->n + more;
    void *p[6] = { k->idx, k->value, k->cd, k->sig, k->sig_lr, k->label };
    for (int a = 0; a < 6; a++) {
        const size_t size = a ? sizeof(uint32_t) : sizeof(uint64_t);
        void *q = gpuws__realloc(p[a], cap * size);
        if (!q) return false;
        p[a] = q;
        k->idx = p[0], k->value = p[1], k->cd = p[2], k->sig = p[3], k->sig_lr = p[4], k->label = p[5];
        /* the fresh pages mapped on threads, not one at a time in the copies into them */
        gpuws__prefault((char *)q + k->cap * size, (cap - k->cap) * size);
    }
    k->cap = cap;
    return true;
}

/* A band's room in k for its records (a GPU's are read there straight from the device: gpuws__records_sink). After
 * the first of `bands` bands, room for as many records a band again and a quarter more: the arrays then grow once
 * or twice, not at every doubling. */
typedef struct {
    ex_kept *k;
    size_t bands; /* room for as many after the first band */
} ex_room;

static bool kept_room(void *user, size_t n, void *arrays[6])
{
    ex_room *r = user;
    ex_kept *k = r->k;
    const size_t guess = k->cap ? 0 : n + n * (r->bands - 1) / 4 * 5;
    if (!kept_grow(k, n > guess ? n : guess, false) || !room_mapped((void **)&k->band_idx, &k->band_cap, n, 0, 4))
        return false;
    arrays[0] = k->band_idx, arrays[1] = k->value + k->n, arrays[2] = k->cd + k->n;
    arrays[3] = k->sig + k->n, arrays[4] = k->sig_lr + k->n, arrays[5] = k->label + k->n;
    return true;
}

/* Room for n slots of measures after k's (a grouped band's, read there straight from the device), the first time for
 * as many a band again and a quarter more, the fresh pages mapped on threads. */
static double *kept_moms(void *user, size_t n)
{
    ex_room *r = user;
    ex_kept *k = r->k;
    const size_t need = (k->nmom + n) * EX_MOM_DOUBLES, guess = (n + n * (r->bands - 1) / 4 * 5) * EX_MOM_DOUBLES;
    return room_mapped((void **)&k->mom, &k->mom_cap, need, guess, sizeof *k->mom) ? k->mom + k->nmom * EX_MOM_DOUBLES
                                                                                   : NULL;
}

typedef struct {
    ex_kept *k;
    size_t offset;
    int32_t most[GPUWS__THREADS_MAX];
} ex_place;

/* A band's index i (32 bits, the blank bit among them) moved by `offset` to the image's 64 bits. */
static uint64_t index_moved(uint32_t i, size_t offset)
{
    return ((uint64_t)(i & ~EX_BLANK_BIT) + offset) | (i & EX_BLANK_BIT ? EX_BLANK_BIT64 : 0);
}

static void place_range(void *arg, size_t part, size_t lo, size_t hi)
{
    ex_place *j = arg;
    ex_kept *k = j->k;
    int32_t most = 0;
    for (size_t r = k->n + lo; r < k->n + hi; r++) {
        k->idx[r] = index_moved(k->band_idx[r - k->n], j->offset);
        most = k->label[r] > most ? k->label[r] : most;
        k->label[r] += (int32_t)k->labels;
    }
    j->most[part] = most;
}

/* The n records a band put into kept_room's room (its own rows alone are detected): their indices (in band_idx)
 * moved by `offset` to the image's and their labels by the labels of the bands before (a band's labels are 1 .. its
 * largest, each of some record). */
static void kept_placed(ex_kept *k, size_t n, size_t offset)
{
    ex_place j;
    j.k = k, j.offset = offset;
    const size_t parts = gpuws__copy_threads(n * 3 * sizeof(uint32_t));
    gpuws__run_ranges(n, parts, place_range, &j);
    int32_t most = 0;
    for (size_t t = 0; t < parts; t++) most = j.most[t] > most ? j.most[t] : most;
    k->n += n;
    k->labels += (size_t)most;
}

/* A band's records made on the host (the CPU backend's) into k, as a GPU's are read into it. */
static bool kept_add(ex_kept *k, const gpuws__extract_pixels *b, size_t offset, size_t bands)
{
    if (!b->n) return true; /* a band without records may have no arrays */
    ex_room r = { k, bands };
    void *to[6];
    if (!kept_room(&r, b->n, to)) return false;
    const void *from[6] = { b->idx, b->value, b->cd, b->sig, b->sig_lr, b->label };
    for (int a = 0; a < 6; a++) gpuws__copy_bytes(to[a], from[a], 0, b->n * sizeof(uint32_t)); /* idx: band_idx */
    kept_placed(k, b->n, offset);
    return true;
}

typedef struct {
    int32_t *to;
    const int32_t *from;
    int32_t add;
} ex_shift;

static void shift_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_shift *j = arg;
    for (size_t r = lo; r < hi; r++) j->to[r] = j->from[r] + j->add;
}

/* The records another device kept for the bands after k's (m's labels follow k's), copied into k: into the room
 * that k's first band made for every band where it suffices (a realloc of memory given huge pages may copy it). */
static bool kept_append(ex_kept *k, const ex_kept *m)
{
    if (m->n && !kept_grow(k, m->n, true)) return false;
    ex_shift j = { k->label + k->n, m->label, (int32_t)k->labels };
    gpuws__run_ranges(m->n, gpuws__copy_threads(m->n * sizeof(int32_t)), shift_range, &j);
    gpuws__copy_bytes(k->idx + k->n, m->idx, 0, m->n * sizeof(uint64_t));
    gpuws__copy_bytes(k->value + k->n, m->value, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->cd + k->n, m->cd, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->sig + k->n, m->sig, 0, m->n * sizeof(float));
    gpuws__copy_bytes(k->sig_lr + k->n, m->sig_lr, 0, m->n * sizeof(float));
    if (m->slot) { /* compact bands: m's slots follow k's, its edges' labels k's */
        if (!room_for((void **)&k->slot, &k->slot_cap, k->labels + m->labels + 1, sizeof *k->slot) ||
            !room_for((void **)&k->mom, &k->mom_cap, (k->nmom + m->nmom) * EX_MOM_DOUBLES, sizeof(double)) ||
            !room_for((void **)&k->edge, &k->edge_cap, k->nedge + m->nedge, sizeof *k->edge))
            return false;
        for (size_t l = 1; l <= m->labels; l++)
            k->slot[k->labels + l] = m->slot[l] == UINT32_MAX ? UINT32_MAX : m->slot[l] + (uint32_t)k->nmom;
        if (m->nmom) memcpy(k->mom + k->nmom * EX_MOM_DOUBLES, m->mom, m->nmom * EX_MOM_DOUBLES * sizeof(double));
        for (size_t e = 0; e < m->nedge; e++)
            k->edge[k->nedge + e] = (ex_edge){ m->edge[e].at, m->edge[e].label + (int32_t)k->labels };
        if (!room_for((void **)&k->run, &k->run_cap, k->nrun + m->nrun, sizeof *k->run)) return false;
        for (size_t q = 0; q < m->nrun; q++) {
            const ex_run *u = &m->run[q];
            k->run[k->nrun + q] = (ex_run){ u->label + (uint32_t)k->labels, u->band, u->r0 + k->n, u->r1 + k->n };
        }
        k->nmom += m->nmom, k->nedge += m->nedge, k->nrun += m->nrun;
    }
    k->n += m->n, k->labels += m->labels, k->all += m->all;
    return true;
}

/* The records [r0, r1) of k, raster order, into the edges: those before raster index lo (a band's first own row,
 * where a band lies above) and those at hi or after (its last, where one lies below), each once. */
static bool kept_edges_of_run(ex_kept *k, size_t r0, size_t r1, uint64_t lo, uint64_t hi)
{
    size_t a = r0, b = r1;
    while (a < r1 && (k->idx[a] & ~EX_BLANK_BIT64) < lo) a++;
    while (b > a && (k->idx[b - 1] & ~EX_BLANK_BIT64) >= hi) b--;
    if (!room_for((void **)&k->edge, &k->edge_cap, k->nedge + (a - r0) + (r1 - b), sizeof *k->edge)) return false;
    for (size_t r = r0; r < a; r++) k->edge[k->nedge++] = (ex_edge){ k->idx[r] & ~EX_BLANK_BIT64, k->label[r] };
    for (size_t r = b; r < r1; r++) k->edge[k->nedge++] = (ex_edge){ k->idx[r] & ~EX_BLANK_BIT64, k->label[r] };
    return true;
}

/* Labels [l0, l1) of k without a chained component: a band's whose records came through the sink, every one. */
static bool kept_unchained(ex_kept *k, size_t l0, size_t l1)
{
    if (!room_for((void **)&k->slot, &k->slot_cap, l1, sizeof *k->slot)) return false;
    for (size_t l = l0; l < l1; l++) k->slot[l] = UINT32_MAX;
    return true;
}

typedef struct {
    ex_kept *k;
    const gpuws__extract_pixels *px;
    size_t at, a0;   /* the band's first pixel and row in the image */
    uint64_t lo, hi; /* its border rows (kept_sunk) */
    uint8_t *edge;   /* per label: 1 where its component touches one */
} ex_sunk;

/* Records [lo, hi) of a grouped band, read into k after its n records: their indices (in band_idx) moved to the
 * image's. */
static void sunk_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_sunk *g = arg;
    uint64_t *idx = g->k->idx + g->k->n;
    for (size_t i = lo; i < hi; i++) idx[i] = index_moved(g->k->band_idx[i], g->at);
}

/* Labels [lo + 1, hi + 1) of a grouped band (its records' indices moved already): each of its records takes the
 * label's number in k, the label its slot (UINT32_MAX: not chained), and edge[l - 1] whether its component, records
 * in raster order, has some on a border row (below g->lo or from g->hi). */
static void label_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_sunk *g = arg;
    ex_kept *k = g->k;
    const gpuws__extract_pixels *px = g->px;
    const uint32_t *gw = px->group;
    const uint64_t *idx = k->idx + k->n;
    const size_t n = px->n, nl = px->nl;
    for (size_t l = lo + 1; l <= hi; l++) {
        const uint32_t s0 = gw[l] & ~EX_CHAIN_BIT, s1 = l < nl ? gw[l + 1] & ~EX_CHAIN_BIT : (uint32_t)n;
        for (size_t i = s0; i < s1; i++) k->label[k->n + i] = (int32_t)(k->labels + l);
        const bool chained = px->chained && (gw[l] & EX_CHAIN_BIT);
        k->slot[k->labels + l] = chained ? gw[nl + 1 + l] + (uint32_t)k->nmom : UINT32_MAX;
        g->edge[l - 1] =
            !chained && s1 > s0 && ((idx[s0] & ~EX_BLANK_BIT64) < g->lo || (idx[s1 - 1] & ~EX_BLANK_BIT64) >= g->hi);
    }
}

/* Slots [lo, hi) of a grouped band's measures, read into k after its nmom: moved from the band's coordinates to the
 * image's. */
static void mom_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_sunk *g = arg;
    const uint32_t a0 = (uint32_t)g->a0;
    for (size_t q = lo; q < hi; q++) {
        uint32_t *mw = (uint32_t *)(g->k->mom + (g->k->nmom + q) * EX_MOM_DOUBLES + EXM_WORDS);
        mw[EXW_XMIN + 2] += a0, mw[EXW_XMIN + 3] += a0; /* ymin, ymax */
        mw[EXW_XMIN + 5] += a0, mw[EXW_XMIN + 7] += a0; /* ypeak, ycpeak */
        const uint64_t last = (mw[EXW_LAST] | (uint64_t)mw[EXW_LAST + 1] << 32) + g->at;
        mw[EXW_LAST] = (uint32_t)last, mw[EXW_LAST + 1] = (uint32_t)(last >> 32);
    }
}

/* A band that the device grouped (gpuws__extract_band_records with `compact`), whose records the host works on and
 * measures the sink read into k after its own (kept_room, kept_moms): the records' indices and the measures moved
 * from the band's coordinates (row 0 is image row a0) to the image's, the records' labels (the band's, after the
 * bands' before), the chained components' slots, and the records of its border rows (image raster index below lo or
 * from hi) into the edges, each border component's records a run (runs_merge). */
static bool kept_sunk(ex_kept *k, const gpuws__extract_pixels *px, size_t band, size_t bands, size_t w, size_t a0,
                      uint64_t lo, uint64_t hi)
{
    const size_t n = px->n, nl = px->nl, nm = px->nmom;
    const uint32_t *gw = px->group; /* start[0 .. nl], then each label's word */
    uint8_t *edge = gpuws__malloc(nl ? nl : 1);
    const size_t guess = nl + 1 + nl * (bands - 1) / 4 * 5;
    if (!edge || !room_mapped((void **)&k->slot, &k->slot_cap, k->labels + nl + 1, guess, sizeof *k->slot)) {
        gpuws__free(edge);
        return false;
    }
    /* a band has millions of labels, most of a few noise pixels, which threads pass over */
    ex_sunk g = { k, px, a0 * w, a0, lo, hi, edge };
    gpuws__run_ranges(n, gpuws__copy_threads(n * sizeof(uint32_t)), sunk_range, &g);
    gpuws__run_ranges(nl, gpuws__copy_threads(n * sizeof(int32_t) + nl * 16), label_range, &g);
    if (nm) gpuws__run_ranges(nm, gpuws__copy_threads(nm * EX_MOM_DOUBLES * sizeof(double)), mom_range, &g);
    bool ok = true;
    for (const uint8_t *e = edge; ok && (e = memchr(e, 1, nl - (size_t)(e - edge))) != NULL; e++) {
        /* a component on a border keeps its records in raster order: its border rows' at its ends */
        const size_t l = (size_t)(e - edge) + 1;
        const uint32_t s0 = gw[l] & ~EX_CHAIN_BIT, s1 = l < nl ? gw[l + 1] & ~EX_CHAIN_BIT : (uint32_t)n;
        ok = kept_edges_of_run(k, k->n + s0, k->n + s1, lo, hi) &&
             room_for((void **)&k->run, &k->run_cap, k->nrun + 1, sizeof *k->run);
        if (ok) k->run[k->nrun++] = (ex_run){ (uint32_t)(k->labels + l), band, k->n + s0, k->n + s1 };
    }
    gpuws__free(edge);
    if (!ok) return false;
    k->n += n, k->labels += nl, k->nmom += nm, k->all += px->all;
    return true;
}

static uint32_t root_of(uint32_t *parent, uint32_t l)
{
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
}

/* Records in raster order with their labels: every record, or the edges of compact bands. */
typedef struct {
    const uint64_t *idx;
    const int32_t *label;
    size_t n;
} ex_view;

/* The first record of v at raster index i or after. */
static size_t record_at(const ex_view *v, size_t i)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        const size_t m = lo + (hi - lo) / 2;
        if ((v->idx[m] & ~EX_BLANK_BIT64) < i) lo = m + 1;
        else hi = m;
    }
    return lo;
}

static int edge_order(const void *a, const void *b)
{
    const ex_edge *x = a, *y = b;
    return x->at != y->at ? (x->at > y->at) - (x->at < y->at) : (x->label > y->label) - (x->label < y->label);
}

/* A record's raster index and its place, ordered by the index. */
typedef struct {
    uint64_t at;
    size_t j;
} ex_key;

static int key_order(const void *a, const void *b)
{
    const ex_key *x = a, *y = b;
    return x->at != y->at ? (x->at > y->at) - (x->at < y->at) : (x->j > y->j) - (x->j < y->j);
}

typedef struct {
    int32_t *label;
    const uint32_t *number;
} ex_renumber;

static void renumber_range(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const ex_renumber *j = arg;
    for (size_t r = lo; r < hi; r++) j->label[r] = (int32_t)j->number[j->label[r]];
}

typedef struct {
    uint32_t root;
    uint32_t at; /* the run's place in k->run */
} ex_root_run;

static int root_run_order(const void *a, const void *b)
{
    const ex_root_run *x = a, *y = b;
    return x->root != y->root ? (x->root > y->root) - (x->root < y->root) : (x->at > y->at) - (x->at < y->at);
}

/* The records of runs[0 .. m) (one band's, one component's, in k's order) merged into raster order in the places
 * they hold. */
static bool runs_merge_one(ex_kept *k, const ex_root_run *runs, size_t m)
{
    size_t total = 0;
    for (size_t q = 0; q < m; q++) total += k->run[runs[q].at].r1 - k->run[runs[q].at].r0;
    ex_key *key = gpuws__malloc(total * sizeof *key);
    uint32_t *tmp = gpuws__malloc(total * 5 * sizeof *tmp);
    uint64_t *tidx = gpuws__malloc(total * sizeof *tidx);
    if (!key || !tmp || !tidx) {
        gpuws__free(key), gpuws__free(tmp), gpuws__free(tidx);
        return false;
    }
    void *arr[5] = { k->value, k->cd, k->sig, k->sig_lr, k->label };
    size_t j = 0;
    for (size_t q = 0; q < m; q++)
        for (size_t r = k->run[runs[q].at].r0; r < k->run[runs[q].at].r1; r++, j++) {
            for (int a = 0; a < 5; a++) tmp[a * total + j] = ((const uint32_t *)arr[a])[r];
            tidx[j] = k->idx[r];
            key[j] = (ex_key){ k->idx[r] & ~EX_BLANK_BIT64, j };
        }
    qsort(key, total, sizeof *key, key_order);
    j = 0;
    for (size_t q = 0; q < m; q++)
        for (size_t r = k->run[runs[q].at].r0; r < k->run[runs[q].at].r1; r++, j++) {
            for (int a = 0; a < 5; a++) ((uint32_t *)arr[a])[r] = tmp[a * total + key[j].j];
            k->idx[r] = tidx[key[j].j];
        }
    gpuws__free(key), gpuws__free(tmp), gpuws__free(tidx);
    return true;
}

/* The border components' runs (ex_run) of each grouped band whose labels the join made one component (root: each
 * label's root), merged into raster order. */
static bool runs_merge(ex_kept *k, const uint32_t *root)
{
    ex_root_run *rr = gpuws__malloc(k->nrun * sizeof *rr);
    if (!rr) return false;
    for (size_t i = 0, j; i < k->nrun; i = j) {
        for (j = i; j < k->nrun && k->run[j].band == k->run[i].band; j++)
            rr[j - i] = (ex_root_run){ root[k->run[j].label], (uint32_t)j };
        qsort(rr, j - i, sizeof *rr, root_run_order);
        for (size_t a = 0, b; a < j - i; a = b) {
            b = a + 1;
            while (b < j - i && rr[b].root == rr[a].root) b++;
            if (b - a > 1 && !runs_merge_one(k, rr + a, b - a)) {
                gpuws__free(rr);
                return false;
            }
        }
    }
    gpuws__free(rr);
    return true;
}

/* The components of the whole image from those of its bands of width w (each band's labels are gpuws_label's on its
 * own rows: numbered in raster order of their first pixels), the bands' first rows but the first's in borders[0 ..
 * nb): the labels that touch across each border (row y - 1 of one band, row y of the next; within a column with
 * connectivity 8, the same column with 4) are joined under the smaller one, which is the earlier first pixel; then
 * the roots, in order, are numbered 1, 2, ... and every record takes its root's number: gpuws_label's numbering of
 * the whole image. *nl the components. With compact bands the edges stand for the records in the border rows, the
 * runs are merged (runs_merge) and the slots follow their labels' numbers. final_of (may be NULL): the bands'
 * labels' numbers (k->labels + 1 of them, gpuws__malloc'd: the caller frees them). */
static bool components_join(ex_kept *k, size_t w, const size_t *borders, size_t nb, int connectivity, size_t *nl,
                            uint32_t **final_of)
{
    uint32_t *parent = gpuws__malloc((k->labels + 1) * sizeof *parent);
    /* compact bands: the edges in raster order stand for the records, which lie in label order */
    uint64_t *ei = k->slot ? gpuws__malloc((k->nedge ? k->nedge : 1) * (sizeof *ei + sizeof(int32_t))) : NULL;
    if (!parent || (k->slot && !ei)) {
        gpuws__free(parent), gpuws__free(ei);
        return false;
    }
    ex_view v = { k->idx, k->label, k->n };
    if (k->slot) {
        int32_t *el = (int32_t *)(ei + k->nedge);
        if (k->nedge) qsort(k->edge, k->nedge, sizeof *k->edge, edge_order);
        for (size_t e = 0; e < k->nedge; e++) ei[e] = k->edge[e].at, el[e] = k->edge[e].label;
        v = (ex_view){ ei, el, k->nedge };
    }
    for (size_t l = 0; l <= k->labels; l++) parent[l] = (uint32_t)l;
    const size_t d = connectivity == 8;
    for (size_t i = 0; i < nb; i++) {
        const size_t y = borders[i];
        const size_t up0 = record_at(&v, (y - 1) * w), up1 = record_at(&v, y * w);
        const size_t down1 = record_at(&v, (y + 1) * w);
        size_t above = up0;
        for (size_t r = up1; r < down1; r++) {
            const size_t x = (v.idx[r] & ~EX_BLANK_BIT64) - y * w;
            const size_t lo = (y - 1) * w + (x >= d ? x - d : 0), hi = (y - 1) * w + (x + d < w ? x + d : x);
            while (above < up1 && (v.idx[above] & ~EX_BLANK_BIT64) < lo) above++;
            for (size_t q = above; q < up1 && (v.idx[q] & ~EX_BLANK_BIT64) <= hi; q++) {
                const uint32_t a = root_of(parent, (uint32_t)v.label[q]), c = root_of(parent, (uint32_t)v.label[r]);
                if (a < c) parent[c] = a;
                else parent[a] = c;
            }
        }
    }
    gpuws__free(ei);
    for (size_t l = 1; l <= k->labels; l++) parent[l] = root_of(parent, (uint32_t)l); /* each to its root */
    if (k->nrun && !runs_merge(k, parent)) {
        gpuws__free(parent);
        return false;
    }
    size_t count = 0;
    for (size_t l = 1; l <= k->labels; l++) { /* a root lies below its members: its number is made first */
        if (parent[l] != l) {
            parent[l] = parent[parent[l]];
            continue;
        }
        parent[l] = (uint32_t)++count;
        if (k->slot) k->slot[count] = k->slot[l]; /* a chained component is its own root: count <= l */
    }
    ex_renumber j = { k->label, parent };
    gpuws__run_ranges(k->n, gpuws__copy_threads(k->n * 2 * sizeof(int32_t)), renumber_range, &j);
    if (final_of) *final_of = parent;
    else gpuws__free(parent);
    *nl = count;
    return true;
}

typedef struct {
    gpuws_context *const *ctxs; /* the devices: ctxs[d] runs the d-th of nctx consecutive ranges of bands */
    unsigned nctx;
    const gpuws__extract_params *p;
    const gpuws_extract_host_options *ho; /* with back and rms the made background's where the CPU backend made it */
    /* The image rows the call holds, in three pieces: image[0] its own rows [first, end) (the whole image but for a
     * caller of gpuws_extract_host_reduce), image[1] the n_above rows before them, image[2] the n_below rows after
     * them (the other callers' halo rows); mask the same where `masked` (a NULL piece: rows of zeros). ho->back and
     * ho->rms, when given, are the whole image's (one caller). */
    const float *image[3];
    const unsigned char *mask[3];
    bool masked;
    /* Or (gpuws_extract's slabs) the image and its maps in device buffers of ctxs[0], the only device: image, back,
     * rms, mask (NULL where none), the bands copied from them on the device; image and mask above NULL then. */
    const gpuws_buffer *const *dev;
    size_t first, end, n_above, n_below;
    size_t halo, rows, bands; /* rows: a band's own rows (the last may have fewer); bands from `first` */
    const void *plan;         /* the background's plan, which the device makes each band's maps from; NULL: none */
    const gpuws__background_plan *bp;
    int passes;   /* the bands are the last of them in progress: 2 after the background's */
    bool compact; /* the bands grouped, chained and measured on the devices that group (extract_gpu_pixels) */
    int slots;    /* 2: the budget holds a second band's inputs, uploaded while the device works on the first */
    /* With a segmentation map where the devices group: each band's labels of its own rows (band_labels: the rows
     * [first, end), w each) and the labels of the bands before band b (label_base[b]), by which extract_records
     * finds the pixels of the components that the bands measured on the devices (their records never come back) */
    int32_t *band_labels;
    size_t *label_base;
} ex_bands;

/* The first own row of band `band`, and one past its last. */
static size_t band_start(const ex_bands *b, size_t band) { return b->first + band * b->rows; }
static size_t band_end(const ex_bands *b, size_t band)
{
    const size_t y1 = b->first + (band + 1) * b->rows;
    return y1 < b->end ? y1 : b->end;
}

/* Where row y of piece[0 .. 2] (as ex_bands.image: own rows, rows above, rows below; e bytes a pixel) lies (NULL
 * for a NULL piece), and in *stop one past the last row from y up to y1 in the same piece. */
static const void *rows_at(const ex_bands *b, const void *const piece[3], size_t e, size_t y, size_t y1, size_t *stop)
{
    const size_t row = b->p->w * e;
    const int k = y < b->first ? 1 : y < b->end ? 0 : 2;
    const size_t from = k == 1 ? b->first - b->n_above : k == 0 ? b->first : b->end;
    *stop = k == 1 ? (y1 < b->first ? y1 : b->first) : k == 0 ? (y1 < b->end ? y1 : b->end) : y1;
    return piece[k] ? (const char *)piece[k] + (y - from) * row : NULL;
}

/* Rows [a0, a1) of the pieces (zeros for a NULL one) into d from its start (on the device), or into to (the
 * host). */
static gpuws_status rows_copy(const ex_bands *b, const void *const piece[3], size_t e, size_t a0, size_t a1,
                              gpuws_stream *s, gpuws_buffer *d, void *to)
{
    static const unsigned char zero = 0; /* a fill may read it after the call */
    const size_t row = b->p->w * e;
    gpuws_status st = GPUWS_OK;
    for (size_t y = a0, stop; y < a1 && !st; y = stop) {
        const void *from = rows_at(b, piece, e, y, a1, &stop);
        const size_t at = (y - a0) * row, bytes = (stop - y) * row;
        if (d && from) st = gpuws_buffer_write_async(s, d, at, from, bytes);
        else if (d) st = gpuws_buffer_fill_async(s, d, at, &zero, 1, bytes);
        else gpuws__copy_bytes((char *)to + at, from, 0, bytes);
    }
    return st;
}

/* A band's records on the CPU backend: the reference on the caller's arrays where the band is among its own rows and
 * the maps are given or none, else on copies of its rows and its maps made from the plan (own rows of the maps then
 * into back_out and rms_out). */
static gpuws_status band_on_cpu(const ex_bands *b, const gpuws__extract_params *pb, size_t y0, size_t y1, size_t a0,
                                size_t a1, gpuws__extract_pixels *px)
{
    const gpuws_extract_host_options *ho = b->ho;
    const size_t w = b->p->w, n = (a1 - a0) * w, at = a0 * w;
    const bool inside = a0 >= b->first && a1 <= b->end && (b->mask[0] || !b->masked), has_mask = b->masked;
    const size_t copies = (inside ? 0 : n * (sizeof(float) + has_mask)) + (b->plan ? 2 * n * sizeof(float) : 0);
    char *tmp = copies ? gpuws__malloc(copies) : NULL;
    if (copies && !tmp)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for a band's copies (%zu bytes)",
                            copies);
    const float *img = inside ? b->image[0] + (a0 - b->first) * w : (const float *)(void *)tmp;
    const unsigned char *mask = inside && has_mask ? b->mask[0] + (a0 - b->first) * w : NULL;
    const float *back = ho->back ? ho->back + at : NULL, *rms = ho->rms ? ho->rms + at : NULL;
    /* the floats first (the band's image, then back and rms), the mask's bytes last: every float aligned */
    float *next = (float *)(void *)tmp;
    if (!inside) {
        rows_copy(b, (const void *const *)b->image, sizeof(float), a0, a1, NULL, NULL, next);
        next += n;
    }
    if (!inside && has_mask) {
        unsigned char *m = (unsigned char *)(next + (b->plan ? 2 * n : 0));
        rows_copy(b, (const void *const *)b->mask, 1, a0, a1, NULL, NULL, m);
        mask = m;
    }
    if (b->plan) {
        float *tb = next, *tr = tb + n;
        gpuws_background_interp_ref(b->bp, b->plan, w, a0, a1, tb, tr);
        const size_t from = (y0 - a0) * w, own = (y1 - y0) * w * sizeof(float);
        if (ho->back_out) memcpy(ho->back_out + (y0 - b->first) * w, tb + from, own);
        if (ho->rms_out) memcpy(ho->rms_out + (y0 - b->first) * w, tr + from, own);
        back = tb, rms = tr;
    }
    gpuws_status st = gpuws_extract_ref_pixels(pb, img, back, rms, mask, px);
    if (st)
        st = gpuws__error(st, "extract_host: no host memory for a band of %zu x %zu pixels (%zu bytes)", w, a1 - a0,
                          n * (4 * sizeof(float) + 1 + sizeof(int32_t)));
    gpuws__free(tmp);
    return st;
}

/* A band's inputs on a device: its rows of the image with their halo, back and rms (the caller's rows, or made from
 * the plan), the mask. */
typedef struct {
    gpuws_buffer *img, *back, *rms, *mask;
} ex_inputs;

/* The uploads of one device's bands [lo, hi), a band ahead of its device steps where there are two slots: on a
 * stream and a thread of their own, band j into slot (j - lo) % slots once the device steps of band j - slots are
 * done. A transfer from pageable memory keeps the host thread that asks for it (the driver's copy, or the copy through
 * pinned staging blocks: core/staged.c), and the device steps wait for their counts and records on the other: so each
 * needs a thread of its own to overlap. */
typedef struct {
    const ex_bands *b;
    gpuws_stream *up;
    gpuws_buffer *plan;
    ex_inputs in[2];
    int slots;
    size_t lo, hi;
    pthread_mutex_t lock;
    pthread_cond_t moved; /* uploaded or done moved on, or stop was set */
    size_t uploaded;      /* bands [lo, uploaded) are on the device */
    size_t done;          /* the device steps of bands [lo, done) are done: their slots may be filled again */
    bool stop;            /* an error on either side, or the device steps ended */
    gpuws_status st;      /* the uploads' error, with its message (each thread has its own) */
    char why[512];
    double ms; /* the uploads' time */
} ex_feed;

/* Band `band`'s inputs into its slot on f->up, the maps made from the plan (their own rows read into back_out and
 * rms_out), and waits for them. */
static gpuws_status band_upload(ex_feed *f, size_t band)
{
    const ex_bands *b = f->b;
    const gpuws_extract_host_options *ho = b->ho;
    const ex_inputs *d = &f->in[(band - f->lo) % (size_t)f->slots];
    const size_t w = b->p->w, h = b->p->h, y0 = band_start(b, band), y1 = band_end(b, band);
    const size_t a0 = y0 > b->halo ? y0 - b->halo : 0, a1 = y1 + b->halo < h ? y1 + b->halo : h;
    const size_t at = a0 * w, n = (a1 - a0) * w, out = (y0 - b->first) * w;
    const size_t own = (y1 - y0) * w * sizeof(float), from = (y0 - a0) * w * sizeof(float);
    gpuws_stream *s = f->up;
    gpuws_status st;
    if (b->dev) { /* copies on the device: the plan, back_out and rms_out are the host calls' alone */
        gpuws_buffer *to[4] = { d->img, d->back, d->rms, d->mask };
        const size_t e[4] = { sizeof(float), sizeof(float), sizeof(float), 1 };
        st = GPUWS_OK;
        for (int i = 0; i < 4 && !st; i++)
            if (b->dev[i]) st = gpuws_buffer_copy_async(s, to[i], 0, b->dev[i], at * e[i], n * e[i]);
        return st ? st : gpuws_stream_synchronize(s);
    }
    if (!(st = rows_copy(b, (const void *const *)b->image, sizeof(float), a0, a1, s, d->img, NULL)) &&
        !(ho->back && (st = gpuws_buffer_write_async(s, d->back, 0, ho->back + at, n * sizeof(float)))) &&
        !(ho->rms && (st = gpuws_buffer_write_async(s, d->rms, 0, ho->rms + at, n * sizeof(float)))) &&
        !(b->masked && (st = rows_copy(b, (const void *const *)b->mask, 1, a0, a1, s, d->mask, NULL))) &&
        !(b->plan && (st = gpuws__background_rows(s, f->plan, b->bp, w, a0, a1, d->back, d->rms))) &&
        !(b->plan && ho->back_out && (st = gpuws_buffer_read_async(s, d->back, from, ho->back_out + out, own))) &&
        !(b->plan && ho->rms_out && (st = gpuws_buffer_read_async(s, d->rms, from, ho->rms_out + out, own))))
        st = gpuws_stream_synchronize(s);
    return st;
}

static void *feed_main(void *arg)
{
    ex_feed *f = arg;
    for (size_t band = f->lo; band < f->hi; band++) {
        pthread_mutex_lock(&f->lock);
        while (!f->stop && band - f->done >= (size_t)f->slots) pthread_cond_wait(&f->moved, &f->lock);
        const bool stop = f->stop;
        pthread_mutex_unlock(&f->lock);
        if (stop) break;
        const double t0 = now_ms();
        const gpuws_status st = band_upload(f, band);
        pthread_mutex_lock(&f->lock);
        f->ms += now_ms() - t0;
        if (st) {
            f->st = st, f->stop = true;
            snprintf(f->why, sizeof f->why, "%s", gpuws_last_error());
        } else {
            f->uploaded = band + 1;
        }
        pthread_cond_broadcast(&f->moved);
        pthread_mutex_unlock(&f->lock);
        if (st) break;
    }
    return NULL;
}

/* Waits until band `band` is on the device (threaded: the feed's thread puts it there; else it is uploaded here). */
static gpuws_status feed_wait(ex_feed *f, bool threaded, size_t band, double *ms)
{
    if (!threaded) {
        const double t0 = now_ms();
        const gpuws_status st = band_upload(f, band);
        *ms += now_ms() - t0;
        return st;
    }
    pthread_mutex_lock(&f->lock);
    while (!f->stop && f->uploaded <= band) pthread_cond_wait(&f->moved, &f->lock);
    const gpuws_status st = f->uploaded > band ? GPUWS_OK : f->st ? f->st : GPUWS_ERR_INTERNAL;
    pthread_mutex_unlock(&f->lock);
    if (st) return gpuws__error(st, "%s", f->st ? f->why : "extract_host: the uploads stopped");
    return GPUWS_OK;
}

/* The device steps of band `band` are done: its slot may take the band after next. */
static void feed_done(ex_feed *f, bool threaded, size_t band)
{
    if (!threaded) return;
    pthread_mutex_lock(&f->lock);
    f->done = band + 1;
    pthread_cond_broadcast(&f->moved);
    pthread_mutex_unlock(&f->lock);
}

/* No more bands are wanted (the last is done, or an error): the feed's thread ends at its next wait. */
static void feed_stop(ex_feed *f)
{
    pthread_mutex_lock(&f->lock);
    f->stop = true;
    pthread_cond_broadcast(&f->moved);
    pthread_mutex_unlock(&f->lock);
}

/* Whether ctx groups a band's records on the device (and so chains and measures its components there): a GPU or
 * OpenCL device, by the knob extract_group (auto: not on CPU devices such as PoCL). */
static bool groups_on_device(gpuws_context *ctx)
{
    const int knob = ctx->tuning.extract_group;
    return ctx->backend->kind != GPUWS_BACKEND_CPU &&
           (knob == GPUWS__GROUP_DEVICE || (knob == GPUWS__GROUP_AUTO && !gpuws__is_cpu_device(ctx)));
}

/* The records of the own rows of bands [lo, hi) into k, on ctx: on the CPU backend by the reference on the caller's
 * arrays, else through the device, a band at a time on a stream of the call's own (which holds the device steps'
 * memory), the uploads a band ahead on a stream and thread of their own where b->slots is 2 (ex_feed); progress
 * after each band when `report`. k's first band makes room for as many as `room` bands hold. ms adds up the times of
 * the bands' uploads (and maps; overlapped with the device steps where they run ahead), their device steps (with
 * any wait for an upload) and the records' keeping. */
static gpuws_status records_in_bands(const ex_bands *b, gpuws_context *ctx, size_t lo, size_t hi, size_t room,
                                     bool report, ex_kept *k, double ms[3])
{
    const size_t w = b->p->w, h = b->p->h, rows_in = b->rows + 2 * b->halo;
    const gpuws_extract_host_options *ho = b->ho;
    const bool on_cpu = ctx->backend->kind == GPUWS_BACKEND_CPU;
    const bool compact = b->compact && groups_on_device(ctx); /* the device groups as it does in-core */
    gpuws_stream *s = NULL;
    gpuws_status st = GPUWS_OK;
    ex_feed f;
    memset(&f, 0, sizeof f);
    f.b = b, f.lo = lo, f.hi = hi, f.uploaded = f.done = lo;
    f.slots = b->slots > 1 && hi - lo > 1 ? 2 : 1;
    bool threaded = false;
    if (!on_cpu && lo < hi && !(st = gpuws_stream_create(ctx, &s)) && !(st = gpuws_stream_create(ctx, &f.up))) {
        const size_t bytes = rows_in * w * sizeof(float);
        for (int i = 0; i < f.slots && !st; i++) {
            ex_inputs *d = &f.in[i];
            if (!(st = gpuws_buffer_create(ctx, bytes, &d->img)) && (ho->back || b->plan || (b->dev && b->dev[1])))
                st = gpuws_buffer_create(ctx, bytes, &d->back);
            if (!st && (ho->rms || b->plan || (b->dev && b->dev[2]))) st = gpuws_buffer_create(ctx, bytes, &d->rms);
            if (!st && b->masked) st = gpuws_buffer_create(ctx, rows_in * w, &d->mask);
        }
        if (!st && b->plan && !(st = gpuws_buffer_create(ctx, b->bp->words * 4, &f.plan)) &&
            !(st = gpuws_buffer_write_async(f.up, f.plan, 0, b->plan, b->bp->words * 4)))
            st = gpuws_stream_synchronize(f.up);
    }
    pthread_t feeder;
    if (!st && !on_cpu && f.slots > 1 && !pthread_mutex_init(&f.lock, NULL)) {
        if (!pthread_cond_init(&f.moved, NULL)) {
            threaded = !pthread_create(&feeder, NULL, feed_main, &f);
            if (!threaded) pthread_cond_destroy(&f.moved);
        }
        if (!threaded) pthread_mutex_destroy(&f.lock);
    }
    if (!threaded) f.slots = 1; /* one slot is enough for uploads on this thread; the second stays unused */
    for (size_t band = lo; band < hi && !st; band++) {
        const size_t y0 = band_start(b, band), y1 = band_end(b, band);
        const size_t a0 = y0 > b->halo ? y0 - b->halo : 0, a1 = y1 + b->halo < h ? y1 + b->halo : h;
        const size_t at = a0 * w;
        gpuws__extract_params pb = *b->p;
        pb.h = a1 - a0, pb.row0 = a0, pb.own0 = y0 - a0, pb.own1 = y1 - a0;
        double t0 = now_ms();
        gpuws__extract_pixels px;
        memset(&px, 0, sizeof px);
        if (on_cpu) {
            st = band_on_cpu(b, &pb, y0, y1, a0, a1, &px);
        } else if (!(st = feed_wait(&f, threaded, band, &ms[0]))) {
            const ex_inputs *d = &f.in[(band - lo) % (size_t)f.slots];
            gpuws_extract_options ob = GPUWS_EXTRACT_OPTIONS_INIT;
            ob.back = d->back, ob.rms = d->rms, ob.mask = d->mask;
            if (!threaded) t0 = now_ms();
            ex_room r = { k, room };
            const gpuws__records_sink sink = { kept_room, kept_moms, &r };
            st = gpuws__extract_band_records(s, &pb, d->img, &ob, &sink, compact, &px);
            if (b->band_labels) b->label_base[band] = k->labels;
            if (!st && b->band_labels)
                st = gpuws__extract_band_labels(s, &pb, y0 - a0, y1 - a0, b->band_labels + (y0 - b->first) * w);
            /* nothing of the band's reads its slot any more once s is idle */
            const gpuws_status sy = gpuws_stream_synchronize(s);
            if (!st) st = sy;
            feed_done(&f, threaded, band);
        }
        ms[1] += now_ms() - t0, t0 = now_ms();
        /* with compact bands: the records of the band's first own row where bands lie above, and of its last where
         * they lie below, go into the edges */
        const uint64_t e0 = y0 > 0 ? (y0 + 1) * w : 0, e1 = y1 < h ? (y1 - 1) * w : UINT64_MAX;
        const size_t r0 = k->n, l0 = k->labels + 1;
        bool kept = true;
        if (!st && px.compact) {
            kept = kept_sunk(k, &px, band, room, w, a0, e0, e1);
            gpuws__free(px.group);
        } else if (!st) {
            if (on_cpu) kept = kept_add(k, &px, at, room);
            else kept_placed(k, px.n, at), k->all += px.n;
            if (kept && b->compact)
                kept = kept_unchained(k, l0, k->labels + 1) && kept_edges_of_run(k, r0, k->n, e0, e1);
        }
        if (!st && !kept)
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu pixel records (%zu bytes)",
                              k->n + px.n, (k->n + px.n) * 7 * sizeof(uint32_t));
        if (on_cpu) gpuws__extract_pixels_free(&px);
        ms[2] += now_ms() - t0;
        if (!st && report && ho->progress)
            ho->progress(ho->progress_user, b->passes, b->passes, band, b->bands, y1 - b->first, b->end - b->first);
    }
    if (threaded) {
        feed_stop(&f); /* also after an error on this side */
        pthread_join(feeder, NULL);
        pthread_cond_destroy(&f.moved);
        pthread_mutex_destroy(&f.lock);
        ms[0] += f.ms;
    }
    if (s) {
        gpuws_stream_synchronize(s);
        gpuws_stream_destroy(s);
    }
    if (f.up) {
        gpuws_stream_synchronize(f.up); /* no upload reads the caller's memory after an error */
        gpuws_stream_destroy(f.up);
    }
    for (int i = 0; i < 2; i++) {
        gpuws_buffer_destroy(f.in[i].img);
        gpuws_buffer_destroy(f.in[i].back);
        gpuws_buffer_destroy(f.in[i].rms);
        gpuws_buffer_destroy(f.in[i].mask);
    }
    gpuws_buffer_destroy(f.plan);
    return st;
}

/* One device's share of the bands: its records, times and outcome (with its message: the error text is each
 * thread's own). */
typedef struct {
    ex_kept kept;
    double ms[3], wall; /* its bands' parts, and its whole share from the thread's start */
    size_t bands, records;
    gpuws_status st;
    char why[512];
} ex_share;

typedef struct {
    const ex_bands *b;
    ex_share *share;
} ex_shares;

static void share_run(void *arg, size_t part, size_t lo, size_t hi)
{
    const ex_shares *x = arg;
    ex_share *d = &x->share[part];
    const double t0 = now_ms();
    /* device 0's records make room for every band's: the others' then join them without a realloc */
    const size_t room = part ? hi - lo : x->b->bands;
    d->st = records_in_bands(x->b, x->b->ctxs[part], lo, hi, room, part == 0, &d->kept, d->ms);
    if (d->st) snprintf(d->why, sizeof d->why, "%s", gpuws_last_error());
    d->wall = now_ms() - t0, d->bands = hi - lo, d->records = d->kept.n;
}

/* The records of every band into k, the bands cut into one consecutive range a device, each device on a thread of
 * its own (ctxs[0] on the calling thread, whose progress comes as its bands do; the others' once every device is
 * done, in band order): device d's records follow device d - 1's, so k holds them in raster order, and device d's
 * labels follow d - 1's as a band's follow the band's before it. ms as records_in_bands', over every device. */
static gpuws_status records_on_devices(const ex_bands *b, ex_kept *k, double ms[3])
{
    if (b->nctx == 1) return records_in_bands(b, b->ctxs[0], 0, b->bands, b->bands, true, k, ms);
    ex_share *share = gpuws__malloc(b->nctx * sizeof *share);
    if (!share)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %u devices' records (%zu bytes)",
                            b->nctx, b->nctx * sizeof *share);
    memset(share, 0, b->nctx * sizeof *share);
    ex_shares x = { b, share };
    gpuws__run_ranges(b->bands, b->nctx, share_run, &x);
    gpuws_status st = GPUWS_OK;
    for (unsigned d = 0; d < b->nctx && !st; d++)
        if (share[d].st) st = gpuws__error(share[d].st, "%s", share[d].why);
    *k = share[0].kept, share[0].kept = (ex_kept){ 0 };
    const double t0 = now_ms();
    for (unsigned d = 1; d < b->nctx && !st; d++) {
        /* device d's bands (gpuws__run_ranges' split) number their labels after the devices' before it */
        const size_t lo = d * b->bands / b->nctx, hi = (d + 1) * b->bands / b->nctx, before = k->labels;
        if (!kept_append(k, &share[d].kept))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu pixel records (%zu bytes)",
                              k->n + share[d].kept.n, (k->n + share[d].kept.n) * 7 * sizeof(uint32_t));
        for (size_t band = lo; b->label_base && band < hi; band++) b->label_base[band] += before;
    }
    const double t1 = now_ms();
    for (unsigned d = 0; d < b->nctx; d++) {
        const ex_share *e = &share[d];
        if (!st)
            gpuws__log(GPUWS__LOG_DEBUG,
                       "extract_host: device %u: %zu band%s in %.1f ms (uploads and maps %.1f, device steps %.1f, "
                       "records kept %.1f), %zu records",
                       d, e->bands, e->bands == 1 ? "" : "s", e->wall, e->ms[0], e->ms[1], e->ms[2], e->records);
        for (int i = 0; i < 3; i++) ms[i] += e->ms[i];
        kept_free(&share[d].kept);
    }
    if (!st) gpuws__log(GPUWS__LOG_DEBUG, "extract_host: the devices' records appended in %.1f ms", t1 - t0);
    gpuws__free(share);
    const gpuws_extract_host_options *ho = b->ho;
    for (size_t band = b->bands / b->nctx; band < b->bands && !st && ho->progress; band++) /* device 0's: reported */
        ho->progress(ho->progress_user, b->passes, b->passes, band, b->bands, band_end(b, band) - b->first,
                     b->end - b->first);
    return st;
}

/* One band: gpuws_extract on device copies of the caller's arrays (with bo, after gpuws_background on the device),
 * the segmentation map and the background's maps read back. */
static gpuws_status extract_in_core(gpuws_context *ctx, size_t w, size_t h, const float *image,
                                    const gpuws_extract_options *eo, const gpuws_extract_host_options *ho,
                                    const gpuws_background_options *bo, gpuws_extract_catalog **catalog)
{
    const size_t n = w * h;
    gpuws_stream *s;
    gpuws_status st = gpuws_stream_create(ctx, &s);
    if (st) return st;
    gpuws_buffer *b[5] = { NULL, NULL, NULL, NULL, NULL }; /* image, back, rms, mask, segmap */
    const void *from[4] = { image, ho->back, ho->rms, ho->mask };
    const bool made[5] = { false, bo != NULL, bo != NULL, false, false }; /* made on the device */
    const size_t bytes[5] = { n * sizeof(float), n * sizeof(float), n * sizeof(float), n, n * sizeof(int32_t) };
    for (int i = 0; i < 5 && !st; i++) {
        if ((i < 4 && !from[i] && !made[i]) || (i == 4 && !ho->segmap)) continue;
        if (!(st = gpuws_buffer_create(ctx, bytes[i], &b[i])) && i < 4 && !made[i])
            st = gpuws_buffer_write_async(s, b[i], 0, from[i], bytes[i]);
    }
    gpuws_background_result r;
    if (!st && bo) {
        gpuws_background_options o = *bo;
        o.mask = b[3];
        if (!(st = gpuws_background(s, GPUWS_F32, w, h, b[0], &o, b[1], b[2], &r)) && ho->progress)
            ho->progress(ho->progress_user, 1, 2, 0, 1, h, h);
    }
    gpuws_extract_options o = *eo;
    o.back = b[1], o.rms = b[2], o.mask = b[3], o.segmap = b[4];
    gpuws_extract_catalog *cat = NULL;
    if (!st) st = gpuws_extract(s, w, h, b[0], &o, &cat);
    if (!st && ho->segmap) st = gpuws__buffer_read_sync(s, b[4], 0, ho->segmap, bytes[4]);
    if (!st && bo && ho->back_out) st = gpuws__buffer_read_sync(s, b[1], 0, ho->back_out, bytes[1]);
    if (!st && bo && ho->rms_out) st = gpuws__buffer_read_sync(s, b[2], 0, ho->rms_out, bytes[2]);
    const gpuws_status sync = gpuws_stream_synchronize(s);
    if (!st) st = sync;
    for (int i = 0; i < 5; i++) gpuws_buffer_destroy(b[i]);
    gpuws_stream_destroy(s);
    if (st) {
        gpuws_extract_catalog_free(cat);
        return st;
    }
    if (bo && ho->background_result) *ho->background_result = r;
    if (ho->progress) ho->progress(ho->progress_user, bo ? 2 : 1, bo ? 2 : 1, 0, 1, h, h);
    *catalog = cat;
    return GPUWS_OK;
}

typedef struct {
    int32_t *segmap;
    const uint64_t *idx;
    const int32_t *obj_of;
} ex_scatter;

/* Records [lo, hi) into the map: each its own pixel, so the ranges write apart. */
static void scatter_range(void *arg, size_t part, size_t lo, size_t hi)
{
    const ex_scatter *j = arg;
    (void)part;
    for (size_t r = lo; r < hi; r++) j->segmap[j->idx[r] & ~EX_BLANK_BIT64] = j->obj_of[r];
}

/* The map from the bands' labels: a pixel of a component measured on a device takes its object, any other 0 (the
 * kept records' objects are scattered after). obj_of_label[l]: the object + 1 of the bands' label l (0: none),
 * label_obj of its component's number (final_of[l]), made first so that each pixel takes one look-up. */
typedef struct {
    int32_t *segmap, *obj_of_label;
    const int32_t *band_labels, *label_obj;
    const size_t *label_base;
    const uint32_t *final_of;
    size_t w, rows; /* a band's own rows */
} ex_by_labels;

static void obj_of_label_range(void *arg, size_t part, size_t lo, size_t hi)
{
    const ex_by_labels *j = arg;
    (void)part;
    for (size_t l = lo; l < hi; l++) j->obj_of_label[l] = j->label_obj[j->final_of[l]];
}

/* Rows [lo, hi) of the map. */
static void by_labels_range(void *arg, size_t part, size_t lo, size_t hi)
{
    const ex_by_labels *j = arg;
    (void)part;
    for (size_t y = lo; y < hi; y++) {
        const int32_t *ob = j->obj_of_label + j->label_base[y / j->rows], *l = j->band_labels + y * j->w;
        int32_t *o = j->segmap + y * j->w;
        for (size_t x = 0; x < j->w; x++) o[x] = l[x] ? ob[l[x]] : 0; /* ob[0] is the bands' before */
    }
}

/* The catalogue of the records kept from bands whose first rows but the first's are borders[0 .. nb): their
 * components, the host steps, the segmentation map: from the kept records' objects alone, or (b's band_labels,
 * bands of b->rows own rows from row 0) first from the bands' labels, where the bands measured components on the
 * devices and kept none of their records. */
static gpuws_status extract_records(gpuws_context *ctx, const gpuws__extract_params *p, ex_kept *k,
                                    const size_t *borders, size_t nb, int32_t *segmap, const ex_bands *b,
                                    gpuws_extract_catalog **catalog, double ms[3])
{
    /* labels are int32 and the host steps number records in 31 bits (ex_rec): an image of 2^31 pixels or more is
     * within them unless nearly every pixel is detected */
    if (k->labels > INT32_MAX || k->n > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "extract_host: %zu detected pixels in %zu pieces of components; at most 2^31 - 1 of each "
                            "are supported",
                            k->n, k->labels);
    gpuws__extract_pixels px;
    memset(&px, 0, sizeof px);
    px.n = k->n, px.idx64 = k->idx, px.value = k->value, px.cd = k->cd, px.sig = k->sig, px.sig_lr = k->sig_lr;
    if (k->slot) /* compact bands: the host groups the records by label; the measured components have none */
        px.chained = px.compact = true, px.all = k->all, px.mom = k->mom, px.nmom = k->nmom, px.slot_of = k->slot;
    const bool by_labels = segmap && b && b->band_labels;
    int32_t *obj_of = segmap ? gpuws__malloc((k->n ? k->n : 1) * sizeof *obj_of) : NULL;
    uint32_t *final_of = NULL;
    size_t nl;
    const double t0 = now_ms();
    if ((segmap && !obj_of) ||
        !components_join(k, p->w, borders, nb, p->connectivity, &nl, by_labels ? &final_of : NULL) ||
        (by_labels && !(px.label_obj = gpuws__calloc(nl + 1, sizeof *px.label_obj)))) {
        gpuws__free(obj_of), gpuws__free(final_of);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "extract_host: no host memory for the components of %zu records (%zu bytes)", k->n,
                            (k->labels + 1 + (segmap ? k->n : 0) + (by_labels ? k->labels + 1 : 0)) * sizeof(uint32_t));
    }
    px.label = k->label, px.nl = nl;
    const double t1 = now_ms();
    gpuws__extract_params pc = *p; /* cleaning's pairs on ctx's device where it may, on a stream of its own */
    gpuws_stream *cs = NULL;
    gpuws_status st = GPUWS_OK;
    if (gpuws__extract_clean_where(ctx, &pc) && !(st = gpuws_stream_create(ctx, &cs))) pc.clean_on = cs;
    if (!st) st = gpuws__extract_objects(&pc, &px, catalog, obj_of);
    gpuws_stream_destroy(cs);
    const double t2 = now_ms();
    /* the bands' labels' objects over final_of, whose room they take */
    if (!st && by_labels) {
        const size_t nlab = k->labels + 1;
        ex_by_labels j = { segmap, (int32_t *)final_of, b->band_labels, px.label_obj, b->label_base, final_of, p->w,
                           b->rows };
        gpuws__run_ranges(nlab, gpuws__copy_threads(nlab * 3 * sizeof(int32_t)), obj_of_label_range, &j);
        gpuws__run_ranges(p->h, gpuws__copy_threads(p->w * p->h * 2 * sizeof(int32_t)), by_labels_range, &j);
    } else if (!st && segmap) {
        gpuws__copy_bytes(segmap, NULL, 0, p->w * p->h * sizeof *segmap); /* fresh pages fault in on threads */
    }
    if (!st && segmap) {
        ex_scatter j = { segmap, k->idx, obj_of };
        gpuws__run_ranges(k->n, gpuws__copy_threads(k->n * 3 * sizeof(uint32_t)), scatter_range, &j);
    }
    ms[0] = t1 - t0, ms[1] = t2 - t1, ms[2] = now_ms() - t2;
    gpuws__free(obj_of);
    gpuws__free(final_of);
    gpuws__free(px.label_obj);
    return st;
}

/* The halo of the extraction's bands: the rows a band's own rows read on either side (at least one: the labels' and
 * the lower-right σ's). */
static size_t filter_halo(const gpuws_extract_options *eo)
{
    const int kh = eo->filter_type == GPUWS_FILTER_NONE ? 0 : eo->filter ? eo->filter_h : 3;
    return kh / 2 > 1 ? (size_t)(kh / 2) : 1;
}

/* The rows a band holds in `budget` bytes at per_px a pixel of width-pixel rows beside plan_bytes, and no more than
 * the records' buffer, the largest, allows (max_alloc: the largest buffer, 0 when unknown). */
static uint64_t rows_in_budget(uint64_t budget, uint64_t max_alloc, size_t width, uint64_t per_px, uint64_t plan_bytes)
{
    uint64_t rows = budget > plan_bytes ? (budget - plan_bytes) / (per_px * width) : 0; /* the plan beside them */
    if (max_alloc && rows > max_alloc / (6 * sizeof(float) * width)) rows = max_alloc / (6 * sizeof(float) * width);
    return rows;
}

/* The rows a band may hold on each of the n devices, halo included, at per_px device bytes a pixel of width-pixel rows
 * beside plan_bytes (the background's plan), at most most_px pixels (below 2^31); in *budget the budget. *slots 2 where
 * the budget also holds a second band's inputs (slot_px bytes a pixel more: ex_feed uploads them while the device works
 * on the first) and there is more than one band, the rows then as many as that leaves; else 1.
 * GPUWS_ERR_INVALID_ARGUMENT (the minimum in the message of the call fn) where it holds less than one row and its halo,
 * unless it holds `need` rows, the whole image, which one band holds without a halo (UINT64_MAX: a band always has its
 * halo). */
static gpuws_status band_rows_in(gpuws_context *const *ctxs, unsigned n, uint64_t max_device_bytes, size_t width,
                                 uint64_t per_px, uint64_t slot_px, uint64_t plan_bytes, size_t halo, uint64_t need,
                                 uint64_t most_px, const char *fn, uint64_t *rows_in, uint64_t *budget, int *slots)
{
    uint64_t max_alloc;
    gpuws__band_budget(ctxs, n, max_device_bytes, budget, &max_alloc);
    /* a band holds fewer than 2^31 pixels (read_options checked that a row and its halo do) */
    const uint64_t most = most_px / width;
    *rows_in = rows_in_budget(*budget, max_alloc, width, per_px, plan_bytes);
    *rows_in = *rows_in < most ? *rows_in : most;
    *slots = 1;
    uint64_t two = slot_px ? rows_in_budget(*budget, max_alloc, width, per_px + slot_px, plan_bytes) : 0;
    two = two < most ? two : most;
    if (*rows_in < need && two >= 1 + 2 * (uint64_t)halo) *rows_in = two, *slots = 2;
    if (*rows_in < need && *rows_in < 1 + 2 * (uint64_t)halo)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: max_device_bytes %llu is less than one band needs: %llu bytes (a row and %zu rows of "
                            "halo either side, %llu bytes a pixel%s)",
                            fn, (unsigned long long)*budget,
                            (unsigned long long)(per_px * width * (1 + 2 * (uint64_t)halo) + plan_bytes), halo,
                            (unsigned long long)per_px, plan_bytes ? ", beside the background's plan" : "");
    return GPUWS_OK;
}

/* The own rows of `rows` rows' bands of rows_in rows with their halo (a band of them all needs no halo), cut so that
 * each of n devices gets a band where the rows hold as many and the budget allows the halo. */
static size_t band_own_rows(size_t rows, uint64_t rows_in, size_t halo, unsigned n)
{
    size_t own = rows_in >= rows ? rows : (size_t)rows_in - 2 * halo;
    if (n > 1 && rows_in >= 1 + 2 * (uint64_t)halo) { /* every device works, its bands within budget */
        const size_t each = (rows + n - 1) / n, most = rows_in - 2 * halo < each ? (size_t)rows_in - 2 * halo : each;
        if (own > most) own = most;
    }
    return own;
}

/* The bands on the n devices ctxs: as many rows as the budget holds on each with their halo, at most most_px pixels
 * (*rows own rows a band, *bands of them), or the whole image in one band; *in_core when that band is the in-core
 * call's on ctxs[0] (which holds more a pixel than a band does). Bands on several devices are at least one a device.
 * The inputs are ho's, or dev's (ex_bands.dev) where dev is not NULL. */
static gpuws_status plan_bands(gpuws_context *const *ctxs, unsigned n, size_t width, size_t height,
                               const gpuws_extract_host_options *ho, const gpuws_extract_options *eo,
                               const gpuws_buffer *const *dev, uint64_t most_px, uint64_t plan_bytes, size_t *rows,
                               size_t *bands, size_t *halo, bool *in_core, int *slots)
{
    const bool bg = ho->background != NULL;
    const bool back = dev ? dev[1] != NULL : ho->back || bg, rms = dev ? dev[2] != NULL : ho->rms || bg;
    const bool mask = dev ? dev[3] != NULL : ho->mask != NULL;
    *halo = filter_halo(eo);
    const uint64_t in_px = (back ? 4u : 0u) + (rms ? 4u : 0u) + (mask ? 1u : 0u);
    const uint64_t per_px = EX_HOST_BYTES + in_px; /* EX_HOST_BYTES holds the image */
    const uint64_t slot_px = ctxs[0]->backend->kind == GPUWS_BACKEND_CPU ? 0 : sizeof(float) + in_px;
    uint64_t budget, rows_in;
    const gpuws_status st = band_rows_in(ctxs, n, ho->max_device_bytes, width, per_px, slot_px, plan_bytes, *halo,
                                         height, most_px, "extract_host", &rows_in, &budget, slots);
    if (st) return st;
    /* in-core when the whole image fits what gpuws_extract holds on the device, not only what a band does */
    *in_core = rows_in >= height && (budget - plan_bytes) / ((per_px + EX_IN_CORE_BYTES) * width) >= height;
    *rows = band_own_rows(height, rows_in, *halo, *in_core ? 1 : n);
    *bands = (height + *rows - 1) / *rows;
    return GPUWS_OK;
}

/* The call's options read and checked (fn names the call in messages): *ho, *eo and, with ho->background, *bo;
 * *plan_bytes the background's plan's (0 without), *npix the pixels, ctxs[0 .. *nctx) the devices. */
static gpuws_status read_options(gpuws_context *ctx, size_t width, size_t height,
                                 const gpuws_extract_host_options *options, const char *fn,
                                 gpuws_extract_host_options *ho, gpuws_extract_options *eo,
                                 gpuws_background_options *bo, uint64_t *plan_bytes, size_t *npix, gpuws_context **ctxs,
                                 unsigned *nctx)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    char what[96];
    *ho = (gpuws_extract_host_options)GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    *eo = (gpuws_extract_options)GPUWS_EXTRACT_OPTIONS_INIT;
    *bo = (gpuws_background_options)GPUWS_BACKGROUND_OPTIONS_INIT;
    snprintf(what, sizeof what, "%s: options", fn);
    if ((st = gpuws__options_read(options, ho, sizeof *ho, GPUWS__EXTRACT_HOST_OPTIONS_BASE, what))) return st;
    snprintf(what, sizeof what, "%s: options->extract", fn);
    if (ho->extract && (st = gpuws__options_read(ho->extract, eo, sizeof *eo, GPUWS__EXTRACT_OPTIONS_BASE, what)))
        return st;
    snprintf(what, sizeof what, "%s: options->background", fn);
    if (ho->background &&
        (st = gpuws__options_read(ho->background, bo, sizeof *bo, GPUWS__BACKGROUND_OPTIONS_BASE, what)))
        return st;
    if (eo->back || eo->rms || eo->mask || eo->segmap)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->extract->%s is a device buffer; give the host array in options", fn,
                            eo->back   ? "back"
                            : eo->rms  ? "rms"
                            : eo->mask ? "mask"
                                       : "segmap");
    if (ho->background && bo->mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->background->mask is a device buffer; options->mask serves both", fn);
    if (ho->background && (ho->back || ho->rms))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: options->%s is given with options->background, which makes the background", fn,
                            ho->back ? "back" : "rms");
    if ((st = gpuws__band_contexts(ctx, ho->more_contexts, ho->num_more_contexts, fn, ctxs, nctx))) return st;
    if ((st = gpuws__extract_check(eo, width, height, ho->rms || ho->background, fn, npix))) return st;
    /* a band is gpuws_extract's on the device, whose records index its pixels in 31 bits; the host steps and the
     * device's measures hold rows in 32 */
    if (height > UINT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: %zu rows; at most 2^32 - 1 are supported", fn, height);
    const size_t halo = filter_halo(eo);
    if (width > (size_t)INT32_MAX / (1 + 2 * halo))
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "%s: rows of %zu pixels; a band, a row with %zu of halo either side, holds at most 2^31 - "
                            "1 pixels",
                            fn, width, halo);
    *plan_bytes = 0;
    gpuws__background_plan bp;
    if (ho->background && bo->bw >= 1 && bo->bh >= 1 && gpuws__background_layout(width, height, bo->bw, bo->bh, &bp))
        *plan_bytes = (uint64_t)bp.words * 4;
    return GPUWS_OK;
}

gpuws_status gpuws_extract_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                      const gpuws_extract_host_options *options, size_t *band_rows, size_t *bands)
{
    gpuws_extract_host_options ho;
    gpuws_extract_options eo;
    gpuws_background_options bo;
    uint64_t plan_bytes = 0;
    size_t npix, halo;
    bool in_core;
    int slots;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned nctx;
    gpuws_status st =
        read_options(ctx, width, height, options, "extract_host_bands", &ho, &eo, &bo, &plan_bytes, &npix, ctxs, &nctx);
    if (st) return st;
    if (!band_rows || !bands)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host_bands: argument '%s' is NULL",
                            !band_rows ? "band_rows" : "bands");
    return plan_bands(ctxs, nctx, width, height, &ho, &eo, NULL, INT32_MAX, plan_bytes, band_rows, bands, &halo,
                      &in_core, &slots);
}

/* Whether an output of `bytes` bytes at out overlaps an input or another output. */
static bool output_overlaps(const void *out, size_t bytes, const float *image, const gpuws_extract_host_options *ho,
                            size_t npix)
{
    const size_t fb = npix * sizeof(float), sb = npix * sizeof(int32_t);
    const void *other[6] = { image, ho->back, ho->rms, ho->segmap, ho->back_out, ho->rms_out };
    const size_t size[6] = { fb, fb, fb, sb, fb, fb };
    for (int i = 0; i < 6; i++)
        if (other[i] && other[i] != out && gpuws__overlaps(out, bytes, other[i], size[i])) return true;
    return ho->mask && gpuws__overlaps(out, bytes, ho->mask, npix);
}

/* The background made on the CPU backend, whose device memory is the host's: gpuws_background_host's maps, into
 * back_out and rms_out where given, else into memory of the call's own (*tb, *tr, to free); *r its globals. */
static gpuws_status background_on_cpu(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                      gpuws_extract_host_options *ho, const gpuws_background_options *bo, float **tb,
                                      float **tr, gpuws_background_result *r)
{
    const size_t bytes = width * height * sizeof(float);
    *tb = ho->back_out ? NULL : gpuws__malloc(bytes);
    *tr = ho->rms_out ? NULL : gpuws__malloc(bytes);
    if ((!ho->back_out && !*tb) || (!ho->rms_out && !*tr))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "extract_host: no host memory for the background's maps (%zu bytes)", 2 * bytes);
    gpuws_background_host_options o = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    o.background = bo, o.mask = ho->mask;
    float *back = ho->back_out ? ho->back_out : *tb, *rms = ho->rms_out ? ho->rms_out : *tr;
    const gpuws_status st = gpuws_background_host(ctx, width, height, image, &o, back, rms, r);
    if (st) return st;
    if (ho->progress) ho->progress(ho->progress_user, 1, 2, 0, 1, height, height);
    ho->back = back, ho->rms = rms;
    return GPUWS_OK;
}

static _Thread_local size_t bands_last;
size_t gpuws__extract_bands_last(void) { return bands_last; }

/* gpuws_extract_host's work, and gpuws_extract's in slabs: the image the host's (image), or device buffers of ctx,
 * the only device (dev: ex_bands.dev; image NULL); bands of at most most_px pixels. */
static gpuws_status extract_host_run(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                     const gpuws_buffer *const *dev, uint64_t most_px,
                                     const gpuws_extract_host_options *options, gpuws_extract_catalog **catalog)
{
    if (catalog) *catalog = NULL;
    bands_last = 0;
    gpuws_extract_host_options ho;
    gpuws_extract_options eo;
    gpuws_background_options bo;
    uint64_t plan_bytes = 0;
    size_t npix;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned nctx;
    gpuws_status st =
        read_options(ctx, width, height, options, "extract_host", &ho, &eo, &bo, &plan_bytes, &npix, ctxs, &nctx);
    if (st) return st;
    if ((!image && !dev) || !catalog)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host: argument '%s' is NULL",
                            !catalog ? "catalog" : "image");
    const size_t fb = npix * sizeof(float), sb = npix * sizeof(int32_t);
    if (!dev && ((ho.segmap && output_overlaps(ho.segmap, sb, image, &ho, npix)) ||
                 (ho.back_out && output_overlaps(ho.back_out, fb, image, &ho, npix)) ||
                 (ho.rms_out && output_overlaps(ho.rms_out, fb, image, &ho, npix))))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host: '%s' overlaps the image, back, rms, mask or another output (they are read "
                            "while it is written)",
                            ho.segmap && output_overlaps(ho.segmap, sb, image, &ho, npix)       ? "segmap"
                            : ho.back_out && output_overlaps(ho.back_out, fb, image, &ho, npix) ? "back_out"
                                                                                                : "rms_out");
    const bool on_cpu = ctx->backend->kind == GPUWS_BACKEND_CPU;
    for (unsigned d = 0; d < nctx && !on_cpu; d++)
        if (!ctxs[d]->info.fp64)
            return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks",
                                ctxs[d]->info.name);
    const gpuws_background_options *bg = ho.background ? &bo : NULL;
    size_t rows, bands, halo;
    bool in_core;
    int slots;
    if ((st = plan_bands(ctxs, nctx, width, height, &ho, &eo, dev, most_px, plan_bytes, &rows, &bands, &halo, &in_core,
                         &slots)))
        return st;
    if (in_core && !on_cpu && !dev) return extract_in_core(ctx, width, height, image, &eo, &ho, bg, catalog);

    gpuws__extract_params p;
    if ((st = gpuws__extract_resolve(&eo, width, height, ho.rms || bg || (dev && dev[2]), "extract_host", &p)))
        return st;
    p.threads = gpuws__threads_from_knob(ctx->tuning.extract_threads);
    ex_bands b = { .ctxs = ctxs,
                   .nctx = nctx,
                   .p = &p,
                   .ho = &ho,
                   .image = { image, NULL, NULL },
                   .mask = { ho.mask, NULL, NULL },
                   .masked = ho.mask != NULL || (dev && dev[3]),
                   .dev = dev,
                   .first = 0,
                   .end = height,
                   .halo = halo,
                   .rows = rows,
                   .bands = bands,
                   .passes = bg ? 2 : 1,
                   .compact = !on_cpu,
                   .slots = slots };
    float *tb = NULL, *tr = NULL;
    void *plan = NULL;
    gpuws__background_plan bp;
    gpuws_background_result r;
    const double t0 = now_ms();
    if (bg && on_cpu) {
        st = background_on_cpu(ctx, width, height, image, &ho, &bo, &tb, &tr, &r);
    } else if (bg && !(st = gpuws__background_host_plan(ctx, width, height, image, ho.mask, &bo, ho.max_device_bytes,
                                                        ho.progress, ho.progress_user, "extract_host: background",
                                                        &plan, &bp, &r))) {
        b.plan = plan, b.bp = &bp;
        /* the bands' maps are read into them a band at a time, by the driver on one thread: their fresh pages are
         * mapped first, on threads */
        if (ho.back_out) gpuws__prefault(ho.back_out, fb);
        if (ho.rms_out) gpuws__prefault(ho.rms_out, fb);
    }
    /* the segmentation map of components measured on the devices comes from the bands' labels, kept on the host
     * until the catalogue is made: the map is written only once the call knows that it succeeds */
    if (!st && ho.segmap && groups_on_device(ctx)) {
        b.band_labels = gpuws__malloc(npix * sizeof *b.band_labels);
        b.label_base = gpuws__malloc(bands * sizeof *b.label_base);
        if (!b.band_labels || !b.label_base)
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                              "extract_host: no host memory for the bands' labels of the segmentation map (%zu bytes)",
                              npix * sizeof(int32_t) + bands * sizeof(size_t));
    }
    const double tb0 = now_ms();
    ex_kept k;
    memset(&k, 0, sizeof k);
    double band_ms[3] = { 0, 0, 0 };
    if (!st) st = records_on_devices(&b, &k, band_ms);
    const double t1 = now_ms();
    gpuws_extract_catalog *cat = NULL;
    double ms[3] = { 0, 0, 0 }; /* the components, the host steps, the segmentation map */
    size_t *borders = bands > 1 ? gpuws__malloc((bands - 1) * sizeof *borders) : NULL;
    if (!st && bands > 1 && !borders)
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract_host: no host memory for %zu band borders (%zu bytes)",
                          bands - 1, (bands - 1) * sizeof *borders);
    for (size_t i = 1; i < bands && borders; i++) borders[i - 1] = i * rows;
    if (!st) st = extract_records(ctx, &p, &k, borders, bands - 1, ho.segmap, &b, &cat, ms);
    gpuws__free(borders);
    gpuws__free(b.band_labels);
    gpuws__free(b.label_base);
    const size_t records = k.n, made = k.slot ? k.all : k.n, measured = k.nmom;
    kept_free(&k);
    gpuws__extract_params_free(&p);
    gpuws__free(plan);
    gpuws__free(tb);
    gpuws__free(tr);
    if (st) return st;
    if (bg && ho.background_result) *ho.background_result = r;
    cat->ms_device = t1 - t0;
    cat->ms_host = now_ms() - t1;
    gpuws__log(
        GPUWS__LOG_DEBUG,
        "extract_host: background's pass %.1f ms, %zu band%s of %zu rows (halo %zu, %d slot%s) on %u device%s %.1f ms "
        "(summed over the devices: uploads and maps %.1f, device steps %.1f, records kept %.1f); %zu records "
        "kept of %zu made, %zu components chained on the devices; components %.1f ms, host steps %.1f, "
        "segmentation map %.1f",
        tb0 - t0, b.bands, b.bands == 1 ? "" : "s", b.rows, b.halo, b.slots, b.slots == 1 ? "" : "s", nctx,
        nctx == 1 ? "" : "s", t1 - tb0, band_ms[0], band_ms[1], band_ms[2], records, made, measured, ms[0], ms[1],
        ms[2]);
    bands_last = b.bands;
    *catalog = cat;
    return GPUWS_OK;
}

gpuws_status gpuws_extract_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                const gpuws_extract_host_options *options, gpuws_extract_catalog **catalog)
{
    return extract_host_run(ctx, width, height, image, NULL, INT32_MAX, options, catalog);
}

gpuws_status gpuws__extract_slabs(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                                  const gpuws_extract_options *o, uint64_t most_px, gpuws_extract_catalog **catalog)
{
    gpuws_context *ctx = s->ctx;
    const size_t npix = width * height;
    gpuws_status st = gpuws_stream_synchronize(s); /* the caller's work on the buffers is done before the bands' */
    if (st) return st;
    gpuws_extract_options eo = *o;
    eo.back = eo.rms = eo.mask = eo.segmap = NULL;
    gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
    ho.extract = &eo;
    /* a band holds at least a row and its halo */
    const uint64_t least = (uint64_t)width * (1 + 2 * filter_halo(o));
    most_px = most_px > least ? most_px : least;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) { /* its buffers are the host's memory: the host call on them */
        ho.back = o->back ? gpuws__cpu_ptr(o->back) : NULL;
        ho.rms = o->rms ? gpuws__cpu_ptr(o->rms) : NULL;
        ho.mask = o->mask ? gpuws__cpu_ptr(o->mask) : NULL;
        ho.segmap = o->segmap ? gpuws__cpu_ptr(o->segmap) : NULL;
        return extract_host_run(ctx, width, height, gpuws__cpu_ptr(image), NULL, most_px, &ho, catalog);
    }
    /* the map is made on the host from the bands' records, then written whole: only once the call succeeds */
    if (o->segmap && !(ho.segmap = gpuws__malloc(npix * sizeof(int32_t))))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for the segmentation map (%zu bytes)",
                            npix * sizeof(int32_t));
    const gpuws_buffer *dev[4] = { image, o->back, o->rms, o->mask };
    const double t0 = now_ms();
    st = extract_host_run(ctx, width, height, NULL, dev, most_px, &ho, catalog);
    const double t1 = now_ms();
    if (!st && o->segmap) st = gpuws_buffer_write(o->segmap, 0, ho.segmap, npix * sizeof(int32_t));
    gpuws__free(ho.segmap);
    if (!st)
        gpuws__log(GPUWS__LOG_DEBUG,
                   "extract: %zu x %zu pixels in %zu slabs %.1f ms, the segmentation map written %.1f ms", width,
                   height, bands_last, t1 - t0, now_ms() - t1);
    if (st) {
        gpuws_extract_catalog_free(*catalog);
        *catalog = NULL;
    }
    return st;
}

/* ---- gpuws_extract_host_reduce: the image's rows spread over several callers ---------------------------------- */

typedef struct {
    gpuws_sum_reducer reduce;
    gpuws_gatherer gather;
    void *user;
    size_t caller, callers;
} ex_coll;

/* Collective: every caller learns whether any failed. st: this caller's outcome so far, returned as it is (with its
 * message) when it failed; GPUWS_ERR_INVALID_ARGUMENT naming the count when only others did. */
static gpuws_status settle(const ex_coll *c, gpuws_status st, const char *step)
{
    uint64_t failed = st != GPUWS_OK;
    const gpuws_status rs = c->reduce(c->user, &failed, 1);
    if (rs) return st ? st : gpuws__error_prefix(rs, "extract_host_reduce: the reducer failed");
    if (st || !failed) return st;
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host_reduce: %llu of %zu callers failed %s",
                        (unsigned long long)failed, c->callers, step);
}

/* FNV-1a of n bytes, for the agreement on the filter's kernel. */
static uint64_t bytes_hash(const void *p, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
    return h;
}

static uint64_t double_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* A record's two floats in one word of the gather, and back. */
static uint64_t two_floats(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    return x | (uint64_t)y << 32;
}

static void floats_of(uint64_t w, float *a, float *b)
{
    const uint32_t x = (uint32_t)w, y = (uint32_t)(w >> 32);
    memcpy(a, &x, 4), memcpy(b, &y, 4);
}

/* The first reduction: did any caller fail so far (its own status is returned then), do they agree on the options
 * that shape the catalogue, and does any give a mask (*any_mask)? */
static gpuws_status agree_extract(const ex_coll *c, gpuws_status st, size_t width, size_t root,
                                  const gpuws_extract_options *eo, const gpuws_background_options *bo, bool bg,
                                  bool mask, bool segmap, bool *any_mask, bool *any_segmap)
{
    enum { VALUES = 19, WORDS = 3 + GPUWS__AGREE_WORDS(VALUES) };
    static const char *const what[VALUES] = { "width",
                                              "root",
                                              "thresh",
                                              "err",
                                              "minarea",
                                              "filter_type",
                                              "the filter",
                                              "connectivity",
                                              "deblend_nthresh",
                                              "deblend_cont",
                                              "clean",
                                              "clean_param",
                                              "gain",
                                              "sep_version",
                                              "background",
                                              "the meshes",
                                              "the median filter",
                                              "fthresh",
                                              "the filter's size" };
    const size_t nk = eo->filter ? (size_t)eo->filter_w * (size_t)eo->filter_h : 0;
    const uint64_t v[VALUES] = { width,
                                 root,
                                 double_bits(eo->thresh),
                                 double_bits(eo->err),
                                 (uint64_t)(uint32_t)eo->minarea,
                                 (uint64_t)(uint32_t)eo->filter_type,
                                 eo->filter ? bytes_hash(eo->filter, nk * sizeof(float)) : 0,
                                 (uint64_t)(uint32_t)eo->connectivity,
                                 (uint64_t)(uint32_t)eo->deblend_nthresh,
                                 double_bits(eo->deblend_cont),
                                 (uint64_t)(uint32_t)eo->clean,
                                 double_bits(eo->clean_param),
                                 double_bits(eo->gain),
                                 (uint64_t)(uint32_t)eo->sep_version,
                                 bg,
                                 bg ? (uint64_t)(uint32_t)bo->bw << 32 | (uint32_t)bo->bh : 0,
                                 bg ? (uint64_t)(uint32_t)bo->fw << 32 | (uint32_t)bo->fh : 0,
                                 bg ? double_bits(bo->fthresh) : 0,
                                 eo->filter ? (uint64_t)(uint32_t)eo->filter_w << 32 | (uint32_t)eo->filter_h : 0 };
    uint64_t w[WORDS];
    w[0] = st != GPUWS_OK, w[1] = mask, w[2] = segmap;
    gpuws__agree_words(v, VALUES, w + 3);
    const gpuws_status rs = c->reduce(c->user, w, WORDS);
    if (rs) return st ? st : gpuws__error_prefix(rs, "extract_host_reduce: the reducer failed");
    if (st) return st;
    if (w[0])
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract_host_reduce: %llu of %zu callers failed",
                            (unsigned long long)w[0], c->callers);
    const size_t bad = gpuws__agree_check(w + 3, VALUES, c->callers);
    if (bad < VALUES)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract_host_reduce: the %zu callers disagree on %s: each must pass the same", c->callers,
                            what[bad]);
    *any_mask = w[1] != 0, *any_segmap = w[2] != 0;
    return GPUWS_OK;
}

/* The rows within `halo` of either end of each caller's share (all of a share of up to 2 halo rows), every caller's
 * to every caller: a row is its floats, then its mask bytes where any caller has a mask, in whole words. Then this
 * caller's halo rows: n_above rows before its first into above (and mabove), n_below after its last into below. */
typedef struct {
    size_t w, halo, row_words;
    bool masked;
    const uint64_t *start, *rows; /* every caller's first row and rows */
} ex_halo;

static size_t halo_rows_of(const ex_halo *x, size_t c) { return x->rows[c] < 2 * x->halo ? x->rows[c] : 2 * x->halo; }

/* Where image row y of caller c lies among its halo rows. */
static size_t halo_slot(const ex_halo *x, size_t c, size_t y)
{
    const size_t r = y - x->start[c];
    return x->rows[c] <= 2 * x->halo || r < x->halo ? r : x->halo + (r - (x->rows[c] - x->halo));
}

static void halo_pack(const ex_halo *x, uint64_t *row, const float *image, const unsigned char *mask)
{
    memset(row, 0, x->row_words * sizeof *row);
    memcpy(row, image, x->w * sizeof(float));
    if (x->masked && mask) memcpy((char *)row + x->w * sizeof(float), mask, x->w);
}

static void halo_unpack(const ex_halo *x, const uint64_t *row, float *image, unsigned char *mask)
{
    memcpy(image, row, x->w * sizeof(float));
    if (x->masked) memcpy(mask, (const char *)row + x->w * sizeof(float), x->w);
}

/* What the steps of gpuws_extract_host_reduce share: the collective, this caller's rows and every caller's. */
typedef struct {
    ex_coll c;
    const char *fn;
    size_t width, height, first, end, halo;
    const uint64_t *start, *share; /* every caller's first row and rows */
    size_t *counts;                /* a gather's words of every caller */
    bool any_mask;
} ex_reduce;

/* The background's plan from every caller's meshes: this caller's own (its rows from x->first, a mesh row), every
 * caller's to every caller, the grid steps on each. st: this caller's outcome so far; collective whatever it is. */
static gpuws_status reduce_background(const ex_reduce *x, gpuws_status st, gpuws_context *ctx, const float *image,
                                      const gpuws_extract_host_options *ho, const gpuws_background_options *bo,
                                      const gpuws__background_plan *bp, float **mesh, void **plan,
                                      gpuws_background_result *r)
{
    const size_t bh = (size_t)bo->bh;
    *mesh = gpuws__malloc(bp->n * 2 * sizeof **mesh);
    *plan = gpuws__malloc(bp->words * 4);
    if (!st && (!*mesh || !*plan))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the %zu meshes' plan (%zu bytes)", x->fn,
                          bp->n, bp->words * 4 + bp->n * 2 * sizeof **mesh);
    if (!st)
        st =
            gpuws__background_host_meshes(ctx, x->width, x->end - x->first, image, ho->mask, bo, ho->max_device_bytes,
                                          ho->progress, ho->progress_user, x->fn, *mesh + 2 * bp->nx * (x->first / bh));
    for (size_t q = 0; q < x->c.callers; q++)
        x->counts[q] = bp->nx * ((x->share[q] + bh - 1) / bh); /* a mesh: a word */
    if (!(st = settle(&x->c, st, "in the background's meshes")) &&
        (st = x->c.gather(x->c.user, (uint64_t *)(void *)*mesh, x->counts, x->c.caller, x->c.callers,
                          GPUWS_ALL_CALLERS)))
        st = gpuws__error_prefix(st, "%s: the gatherer failed", x->fn);
    const gpuws_status gs = st ? st
                               : gpuws__background_grid(bp, x->width, x->height, bo->bw, bo->bh, bo->fw, bo->fh,
                                                        bo->fthresh, *mesh, *plan, r);
    if (!st && gs == GPUWS_ERR_INVALID_ARGUMENT)
        st = gpuws__error(gs, "background: no mesh of %d x %d pixels has half of them usable (not NaN, not masked)",
                          bo->bw, bo->bh);
    else if (!st && gs)
        st = gpuws__error(gs, "%s: no host memory for the background's grid (%zu bytes)", x->fn,
                          gpuws__background_grid_bytes(bp, bo->fw, bo->fh));
    return settle(&x->c, st, "in the background's grid");
}

/* The halo rows: every caller's rows within x->halo of its ends to every caller; this caller's n_above rows before
 * its own and n_below after them into *above (one block, freed with it: the rows above, below, then their masks where
 * any caller gives one). Collective whatever st is. */
static gpuws_status reduce_halos(const ex_reduce *x, gpuws_status st, const float *image, const unsigned char *mask,
                                 size_t n_above, size_t n_below, float **above, float **below, unsigned char **mabove,
                                 unsigned char **mbelow)
{
    const size_t width = x->width, first = x->first, end = x->end;
    const ex_halo hx = { width,       x->halo,  (width * (sizeof(float) + x->any_mask) + 7) / 8,
                         x->any_mask, x->start, x->share };
    size_t words = 0, mine_at = 0;
    for (size_t q = 0; q < x->c.callers; q++) {
        x->counts[q] = halo_rows_of(&hx, q) * hx.row_words;
        if (q < x->c.caller) mine_at += x->counts[q];
        words += x->counts[q];
    }
    uint64_t *halos = NULL;
    *above = NULL;
    if (!st) {
        halos = gpuws__malloc((words ? words : 1) * sizeof *halos);
        *above = gpuws__malloc((n_above + n_below) * width * (sizeof(float) + x->any_mask) + 1);
        if (!halos || !*above)
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the halo rows (%zu bytes)", x->fn,
                              words * sizeof *halos + (n_above + n_below) * width * (sizeof(float) + 1));
    }
    if (!st) {
        *below = *above + n_above * width;
        *mabove = x->any_mask ? (unsigned char *)(*below + n_below * width) : NULL;
        *mbelow = x->any_mask ? *mabove + n_above * width : NULL;
        for (size_t y = first; y < end; y++)
            if (y - first < x->halo || end - y <= x->halo)
                halo_pack(&hx, halos + mine_at + halo_slot(&hx, x->c.caller, y) * hx.row_words,
                          image + (y - first) * width, mask ? mask + (y - first) * width : NULL);
    }
    if (!(st = settle(&x->c, st, "in the halo rows")) &&
        (st = x->c.gather(x->c.user, halos, x->counts, x->c.caller, x->c.callers, GPUWS_ALL_CALLERS)))
        st = gpuws__error_prefix(st, "%s: the gatherer failed", x->fn);
    for (size_t y = first - n_above; !st && y < end + n_below; y++) {
        if (y >= first && y < end) continue;
        size_t q = 0, at = 0;
        while (y >= x->start[q] + x->share[q]) at += x->counts[q], q++;
        const size_t r = y < first ? y - (first - n_above) : y - end;
        halo_unpack(&hx, halos + at + halo_slot(&hx, q, y) * hx.row_words, (y < first ? *above : *below) + r * width,
                    !x->any_mask ? NULL : (y < first ? *mabove : *mbelow) + r * width);
    }
    gpuws__free(halos);
    return st;
}

/* What each caller says of its records before they go to root (each: EX_EACH words a caller): its records, labels,
 * band rows, whether it kept slots (compact bands), its measures, edges, runs and bands, and the records its devices
 * made. */
enum { EXE_N = 1, EXE_LABELS, EXE_ROWS, EXE_SLOT, EXE_MOM, EXE_EDGE, EXE_RUN, EXE_BANDS, EXE_ALL, EX_EACH };

/* The words that caller q sends: a record in four (index, label and value, filtered value and σ, the lower-right
 * σ), then with slots two labels' slots a word, a measure's EX_MOM_DOUBLES, an edge's two, a run's two. */
static size_t reduce_words(const uint64_t *e)
{
    return 4 * (size_t)e[EXE_N] + (e[EXE_SLOT] ? ((size_t)e[EXE_LABELS] + 1) / 2 + EX_MOM_DOUBLES * (size_t)e[EXE_MOM] +
                                                     2 * (size_t)e[EXE_EDGE] + 2 * (size_t)e[EXE_RUN]
                                               : 0);
}

/* k's words (reduce_words) into to. */
static void reduce_pack(const ex_kept *k, uint64_t *to)
{
    for (size_t i = 0; i < k->n; i++) {
        uint32_t value;
        memcpy(&value, &k->value[i], sizeof value);
        to[4 * i] = k->idx[i], to[4 * i + 1] = (uint32_t)k->label[i] | (uint64_t)value << 32;
        to[4 * i + 2] = two_floats(k->cd[i], k->sig[i]), to[4 * i + 3] = two_floats(k->sig_lr[i], 0);
    }
    if (!k->slot) return;
    to += 4 * k->n;
    for (size_t l = 1; l <= k->labels; l += 2)
        *to++ = k->slot[l] | (l + 1 <= k->labels ? (uint64_t)k->slot[l + 1] << 32 : 0);
    if (k->nmom) memcpy(to, k->mom, k->nmom * EX_MOM_DOUBLES * sizeof(double));
    to += k->nmom * EX_MOM_DOUBLES;
    for (size_t e = 0; e < k->nedge; e++, to += 2) to[0] = k->edge[e].at, to[1] = (uint32_t)k->edge[e].label;
    for (size_t q = 0; q < k->nrun; q++, to += 2) {
        const ex_run *u = &k->run[q];
        to[0] = u->label | (uint64_t)u->band << 32, to[1] = u->r0 | (uint64_t)u->r1 << 32;
    }
}

/* Caller q's words f (its EX_EACH words e) appended to root's k, its labels, measures, records and bands after
 * those of the callers before it. */
static void reduce_unpack(ex_kept *k, const uint64_t *f, const uint64_t *e, size_t bands)
{
    const size_t n = (size_t)e[EXE_N], labels = (size_t)e[EXE_LABELS];
    for (size_t i = 0; i < n; i++, f += 4) {
        const size_t at = k->n + i;
        const uint32_t value = (uint32_t)(f[1] >> 32);
        float zero;
        k->idx[at] = f[0], k->label[at] = (int32_t)(uint32_t)f[1] + (int32_t)k->labels;
        memcpy(&k->value[at], &value, sizeof value);
        floats_of(f[2], &k->cd[at], &k->sig[at]), floats_of(f[3], &k->sig_lr[at], &zero);
    }
    if (k->slot) {
        for (size_t l = 1; l <= labels; l++) {
            const uint32_t v = e[EXE_SLOT] ? (uint32_t)(f[(l - 1) / 2] >> ((l - 1) % 2 ? 32 : 0)) : UINT32_MAX;
            k->slot[k->labels + l] = v == UINT32_MAX ? UINT32_MAX : v + (uint32_t)k->nmom;
        }
    }
    if (e[EXE_SLOT]) {
        f += (labels + 1) / 2;
        const size_t nm = (size_t)e[EXE_MOM], ne = (size_t)e[EXE_EDGE], nr = (size_t)e[EXE_RUN];
        if (nm) memcpy(k->mom + k->nmom * EX_MOM_DOUBLES, f, nm * EX_MOM_DOUBLES * sizeof(double));
        f += nm * EX_MOM_DOUBLES;
        for (size_t q = 0; q < ne; q++, f += 2)
            k->edge[k->nedge + q] = (ex_edge){ f[0], (int32_t)(uint32_t)f[1] + (int32_t)k->labels };
        for (size_t q = 0; q < nr; q++, f += 2)
            k->run[k->nrun + q] = (ex_run){ (uint32_t)f[0] + (uint32_t)k->labels, (size_t)(f[0] >> 32) + bands,
                                            k->n + (uint32_t)f[1], k->n + (size_t)(f[1] >> 32) };
        k->nmom += nm, k->nedge += ne, k->nrun += nr;
    }
    k->n += n, k->labels += labels, k->all += (size_t)e[EXE_ALL];
}

/* Every caller's records to root, after what each says of them (reduce_words): root's k then holds them all in
 * caller order, each caller's labels after the callers' before it (with compact bands their slots, measures, edges
 * and runs too), and borders[0 .. *nb) every band's first row but the image's first (the callers' own first rows
 * among them). k is emptied on the other callers. Collective whatever st is. */
static gpuws_status reduce_records(const ex_reduce *x, gpuws_status st, size_t root, size_t band_rows, uint64_t *each,
                                   ex_kept *k, size_t **borders, size_t *nb)
{
    const size_t caller = x->c.caller, callers = x->c.callers;
    *borders = NULL, *nb = 0;
    if (!(st = settle(&x->c, st, "in their bands"))) {
        size_t bands = 0;
        for (size_t r = 0; r < k->nrun; r++) bands = k->run[r].band + 1 > bands ? k->run[r].band + 1 : bands;
        const uint64_t mine[EX_EACH] = { 0,       k->n,     k->labels, band_rows, k->slot != NULL,
                                         k->nmom, k->nedge, k->nrun,   bands,     k->all };
        uint64_t before[EX_EACH], total[EX_EACH];
        if ((st = gpuws__reduce_slots(x->c.reduce, x->c.user, caller, callers, mine, EX_EACH, before, total, each)))
            st = gpuws__error_prefix(st, "%s: the reducer failed", x->fn);
    }
    uint64_t *words = NULL;
    size_t all = 0;
    bool slots = false;
    for (size_t q = 0; !st && q < callers; q++) {
        x->counts[q] = reduce_words(each + EX_EACH * q), all += x->counts[q];
        slots |= each[EX_EACH * q + EXE_SLOT] != 0;
    }
    if (!st) {
        const size_t nw = caller == root ? all : x->counts[caller];
        if (!(words = gpuws__malloc((nw ? nw : 1) * sizeof *words)))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu pixel records (%zu bytes)", x->fn,
                              (size_t)k->n, nw * sizeof *words);
        uint64_t *to = words;
        for (size_t q = 0; !st && caller == root && q < caller; q++) to += x->counts[q];
        if (!st) reduce_pack(k, to);
    }
    kept_free(k);
    if (!(st = settle(&x->c, st, "to keep the records")) &&
        (st = x->c.gather(x->c.user, words, x->counts, caller, callers, root)))
        st = gpuws__error_prefix(st, "%s: the gatherer failed", x->fn);
    if (!st && caller == root) {
        size_t n = 0, records = 0, labels = 0, moms = 0, edges = 0, runs = 0;
        for (size_t q = 0; q < callers; q++) {
            const uint64_t *e = each + EX_EACH * q;
            if (x->share[q]) n += (x->share[q] + e[EXE_ROWS] - 1) / e[EXE_ROWS];
            records += (size_t)e[EXE_N], labels += (size_t)e[EXE_LABELS];
            moms += (size_t)e[EXE_MOM], edges += (size_t)e[EXE_EDGE], runs += (size_t)e[EXE_RUN];
        }
        *borders = gpuws__malloc((n ? n : 1) * sizeof **borders);
        if (!*borders || !kept_grow(k, records, true) ||
            (slots && (!room_for((void **)&k->slot, &k->slot_cap, labels + 1, sizeof *k->slot) ||
                       !room_for((void **)&k->mom, &k->mom_cap, moms * EX_MOM_DOUBLES, sizeof *k->mom) ||
                       !room_for((void **)&k->edge, &k->edge_cap, edges, sizeof *k->edge) ||
                       !room_for((void **)&k->run, &k->run_cap, runs, sizeof *k->run))))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu pixel records (%zu bytes)", x->fn,
                              records, all * sizeof *words + n * sizeof **borders);
        const uint64_t *f = words;
        for (size_t q = 0, bands = 0; !st && q < callers; q++) {
            const uint64_t *e = each + EX_EACH * q;
            for (size_t y = x->start[q]; x->share[q] && y < x->start[q] + x->share[q]; y += e[EXE_ROWS])
                if (y) (*borders)[(*nb)++] = y;
            reduce_unpack(k, f, e, bands);
            f += x->counts[q], bands += (size_t)e[EXE_BANDS];
        }
    }
    gpuws__free(words);
    return st;
}

gpuws_status gpuws_extract_host_reduce(gpuws_context *ctx, size_t width, size_t rows, const float *image,
                                       const gpuws_extract_host_options *options, size_t caller, size_t callers,
                                       size_t root, gpuws_sum_reducer reduce, gpuws_gatherer gather, void *reduce_user,
                                       gpuws_extract_catalog **catalog)
{
    const char *fn = "extract_host_reduce";
    if (catalog) *catalog = NULL;
    if (!catalog || !reduce || !gather || caller >= callers || root >= callers)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                            !catalog            ? "argument 'catalog' is NULL"
                            : !reduce           ? "argument 'reduce' is NULL"
                            : !gather           ? "argument 'gather' is NULL"
                            : caller >= callers ? "the caller's index is not below the callers' count"
                                                : "root is not below the callers' count");
    const ex_coll c = { reduce, gather, reduce_user, caller, callers };
    const double t_start = now_ms();
    gpuws_extract_host_options ho;
    gpuws_extract_options eo;
    gpuws_background_options bo;
    uint64_t plan_bytes = 0;
    size_t npix = 0;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned nctx = 0;
    /* the slots of the reductions and gathers, had before the first, so that none is left waiting for a caller
     * without memory */
    uint64_t *slots = gpuws__malloc(callers * (2 + EX_EACH) * sizeof *slots);
    size_t *counts = gpuws__malloc(callers * sizeof *counts);
    gpuws_status st =
        slots && counts
            ? GPUWS_OK
            : gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the slots of %zu callers (%zu bytes)", fn,
                           callers, callers * ((2 + EX_EACH) * sizeof *slots + sizeof *counts));
    if (!st)
        st = read_options(ctx, width, rows ? rows : 1, options, fn, &ho, &eo, &bo, &plan_bytes, &npix, ctxs, &nctx);
    const bool bg = !st && ho.background;
    if (!st && rows && !image) st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument 'image' is NULL", fn);
    if (!st && (ho.back || ho.rms))
        st = gpuws__error(GPUWS_ERR_UNSUPPORTED,
                          "%s: options->%s is given; the callers make the background themselves (options->background)",
                          fn, ho.back ? "back" : "rms");
    if (!st && caller != root && ho.segmap)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: options->segmap on caller %zu: the map is root's (%zu)", fn,
                          caller, root);
    if (!st && ctx->backend->kind != GPUWS_BACKEND_CPU)
        for (unsigned d = 0; d < nctx && !st; d++)
            if (!ctxs[d]->info.fp64)
                st = gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks",
                                  ctxs[d]->info.name);
    bool any_mask = false, any_segmap = false;
    const gpuws_extract_options defaults = GPUWS_EXTRACT_OPTIONS_INIT;
    const gpuws_background_options bdefaults = GPUWS_BACKGROUND_OPTIONS_INIT;
    st = agree_extract(&c, st, width, root, st ? &defaults : &eo, st ? &bdefaults : &bo, bg, ho.mask != NULL,
                       ho.segmap != NULL, &any_mask, &any_segmap);
    if (st) {
        gpuws__free(slots), gpuws__free(counts);
        return st;
    }

    /* every caller's rows: this caller's first row, the height */
    uint64_t mine = rows, before, total;
    uint64_t *start = slots, *share = slots + callers, *each = slots + 2 * callers; /* each: EX_EACH a caller */
    if ((st = gpuws__reduce_slots(reduce, reduce_user, caller, callers, &mine, 1, &before, &total, share))) {
        gpuws__free(slots), gpuws__free(counts);
        return gpuws__error_prefix(st, "%s: the reducer failed", fn);
    }
    const size_t height = (size_t)total, first = (size_t)before, end = first + rows;
    for (size_t q = 0, at = 0; q < callers; q++) start[q] = at, at += share[q];
    /* checks every caller makes alike */
    if (height == 0) st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x 0: no pixels", fn, width);
    else if (gpuws__mul_overflows(width, height, &npix))
        st = gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", fn, width, height);
    else if (height > UINT32_MAX)
        st = gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: %zu rows; at most 2^32 - 1 are supported", fn, height);
    else if (bg && ((size_t)bo.bw > width || (size_t)bo.bh > height))
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: mesh %d x %d is larger than the %zu x %zu image", fn, bo.bw,
                          bo.bh, width, height);
    for (size_t q = 0; q < callers && bg && !st; q++)
        if (share[q] && start[q] % (size_t)bo.bh)
            st =
                gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                             "%s: caller %zu's first row %llu is not a multiple of the mesh height %d (a mesh's pixels "
                             "must lie in one caller)",
                             fn, q, (unsigned long long)start[q], bo.bh);
    gpuws__extract_params p;
    memset(&p, 0, sizeof p);
    if (!st) st = gpuws__extract_resolve(&eo, width, height, bg, fn, &p);
    p.threads = gpuws__threads_from_knob(ctx->tuning.extract_threads);
    /* this caller's bands: as many rows as its budget holds with a halo either side */
    const size_t halo = filter_halo(&eo);
    size_t band_rows = 0, bands = 0;
    int band_slots = 1;
    gpuws__background_plan bp;
    memset(&bp, 0, sizeof bp);
    if (!st && bg && !gpuws__background_layout(width, height, bo.bw, bo.bh, &bp))
        st = gpuws__error(GPUWS_ERR_OVERFLOW, "%s: the plan for %zu x %zu pixels overflows size_t", fn, width, height);
    if (!st && rows) { /* a band holds its halo rows whatever its height: the other callers' rows are not here */
        const uint64_t in_px = (bg ? 8u : 0u) + (any_mask ? 1u : 0u), per_px = EX_HOST_BYTES + in_px;
        const uint64_t slot_px = ctx->backend->kind == GPUWS_BACKEND_CPU ? 0 : sizeof(float) + in_px;
        const uint64_t plan = bg ? bp.words * 4 : 0;
        uint64_t budget, rows_in;
        /* one band holds the caller's rows and a halo either side */
        if (!(st = band_rows_in(ctxs, nctx, ho.max_device_bytes, width, per_px, slot_px, plan, halo,
                                rows + 2 * (uint64_t)halo, INT32_MAX, fn, &rows_in, &budget, &band_slots))) {
            band_rows = band_own_rows(rows, rows_in - 2 * halo, 0, nctx);
            bands = (rows + band_rows - 1) / band_rows;
        }
    }
    if ((st = settle(&c, st, "to plan"))) goto plan_failed;

    /* the background's plan from every caller's meshes; the halo rows; then this caller's bands */
    const ex_reduce x = { c, fn, width, height, first, end, halo, start, share, counts, any_mask };
    float *mesh = NULL, *above = NULL, *below = NULL;
    unsigned char *mabove = NULL, *mbelow = NULL;
    void *plan = NULL;
    gpuws_background_result r;
    memset(&r, 0, sizeof r);
    if (bg) st = reduce_background(&x, st, ctx, image, &ho, &bo, &bp, &mesh, &plan, &r);
    const size_t n_above = first < halo ? first : halo, n_below = height - end < halo ? height - end : halo;
    st = reduce_halos(&x, st, image, ho.mask, n_above, n_below, &above, &below, &mabove, &mbelow);
    ex_kept k;
    memset(&k, 0, sizeof k);
    double ms[3] = { 0, 0, 0 };
    ex_bands b = { .ctxs = ctxs,
                   .nctx = nctx,
                   .p = &p,
                   .ho = &ho,
                   .image = { image, above, below },
                   .mask = { ho.mask, mabove, mbelow },
                   .masked = any_mask,
                   .first = first,
                   .end = end,
                   .n_above = n_above,
                   .n_below = n_below,
                   .halo = halo,
                   .rows = band_rows,
                   .bands = bands,
                   .plan = plan,
                   .bp = &bp,
                   .passes = bg ? 2 : 1,
                   /* every caller keeps its edges and slots (a CPU backend's bands send every record), so that root
                    * joins them alike; not where root makes the segmentation map (extract_host says why) */
                   .compact = !any_segmap,
                   .slots = band_slots };
    if (!st) st = records_on_devices(&b, &k, ms);
    /* the records to root, which joins the bands' labels and makes the catalogue */
    size_t *borders, nb;
    st = reduce_records(&x, st, root, band_rows, each, &k, &borders, &nb);
    gpuws_extract_catalog *cat = NULL;
    const double t_host = now_ms();
    if (!st && caller == root && !(st = extract_records(ctx, &p, &k, borders, nb, ho.segmap, NULL, &cat, ms)))
        cat->ms_device = t_host - t_start, cat->ms_host = now_ms() - t_host; /* as extract_host's */
    gpuws__free(borders);
    kept_free(&k);
    st = settle(&c, st, "to make the catalogue");
    if (!st && bg && ho.background_result) *ho.background_result = r;
    if (st) gpuws_extract_catalog_free(cat);
    else *catalog = cat;
    gpuws__free(above);
    gpuws__free(mesh);
    gpuws__free(plan);
plan_failed:
    gpuws__extract_params_free(&p);
    gpuws__free(slots);
    gpuws__free(counts);
    return st;
}
