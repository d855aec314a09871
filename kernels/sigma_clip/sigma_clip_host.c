/* gpuws_sigma_clip_host: κ-σ clipping of host values of any number, exact, the same for any split of the values.
 *
 * The kept set is always a window of order-preserving keys [lo, hi] (sigma_clip_ref.h's keys), so no value moves.
 * An iteration reads the values once or twice, split in parts over the host's cores (gpuws__run_ranges):
 *  pass A, over the values in the window: the count, the sum and the sum of squares, exactly (below), and a
 *          histogram of the keys' top 16 bits. The window only shrinks, so after the first pass A counts only the
 *          values that left it and takes them off the totals (integers: exact);
 *  pass B, over the values in the window whose top 16 bits are those of the two middle values (lower and upper
 *          median ranks): a histogram of the keys' low 16 bits, which gives both middle values exactly.
 * After the first iteration pass A also does pass B's work, so that an iteration is one read: before it, the old
 * window's histogram bounds the buckets (top 16 bits) where the new window's middle ranks can fall, since only the
 * two buckets at the new window's edges are cut and their counts are at most their old ones. Pass A takes the keys
 * of the new window in those candidate buckets: the low-16 histograms of up to CAND_BUCKETS buckets (a sky with an
 * offset: a few wide buckets of many values), or, with no reducer, the keys themselves when the buckets hold at
 * most LIST_MAX values of the old window (a sky around zero: many narrow buckets of few values). Pass B reads the
 * values only when neither applies or the middle ranks fall elsewhere (they cannot, with the bounds above).
 * Parts merge by integer addition, so the result does not depend on how the values were split: threads here, bands
 * or ranks for the callers that will merge parts of their own.
 *
 * Exact sums. A non-NaN f32 is m * 2^(E - 150) with an integer |m| < 2^24 and E = max(exponent field, 1). A part
 * adds m into an int64 per E (2^39 values before it could overflow) and m^2 into an unsigned 128-bit integer per E;
 * the merged buckets become two fixed-point integers, S = sum x * 2^149 and Q = sum x^2 * 2^298, in 768-bit
 * arithmetic, and the population variance is (n Q - S^2) / n^2 * 2^-298, exact until its one rounding to long
 * double. Infinities are counted apart (they make the mean infinite or NaN and the std NaN, as NumPy's loop does).
 *
 * The values stay on the host: each pass is one read of them, which the host's cores do at memory speed, faster than
 * a transfer to a device that does not hold them (a device that holds them: gpuws_sigma_clip). */
#include "../common/driver.h"
#include "../../core/options.h"
#include "../../core/threads.h"
#include "sigma_clip_host.h"
#include "sigma_clip_ref.h"
#include "sigma_clip_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PART_MIN ((size_t)1 << 20) /* values a part has at least: fewer do not pay for a thread */
#define BINS     65536
#define LIMBS    12 /* 768-bit two's complement fixed point */

typedef unsigned __int128 u128;

/* ---- 768-bit integers ----------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t w[LIMBS]; /* little-endian limbs, two's complement */
} big;

/* x += v * 2^shift (v signed 128-bit as two's complement, sign-extended) */
static void big_add_shifted(big *x, u128 v, bool negative, unsigned shift)
{
    uint64_t add[LIMBS] = { 0 };
    const uint64_t ext = negative ? ~(uint64_t)0 : 0;
    const unsigned limb = shift / 64, bit = shift % 64;
    uint64_t src[3] = { (uint64_t)v, (uint64_t)(v >> 64), ext };
    for (unsigned i = 0; i < LIMBS; i++) {
        const unsigned j = i - limb; /* source limb; i < limb: below the shift */
        if (i < limb) continue;
        const uint64_t lo = j < 3 ? src[j] : ext, below = j >= 1 && j - 1 < 3 ? src[j - 1] : (j >= 1 ? ext : 0);
        add[i] = bit ? (lo << bit) | (below >> (64 - bit)) : lo;
    }
    uint64_t carry = 0;
    for (unsigned i = 0; i < LIMBS; i++) {
        const u128 s = (u128)x->w[i] + add[i] + carry;
        x->w[i] = (uint64_t)s;
        carry = (uint64_t)(s >> 64);
    }
}

static bool big_negative(const big *x) { return x->w[LIMBS - 1] >> 63; }

static void big_negate(big *x)
{
    uint64_t carry = 1;
    for (unsigned i = 0; i < LIMBS; i++) {
        const u128 s = (u128)(~x->w[i]) + carry;
        x->w[i] = (uint64_t)s;
        carry = (uint64_t)(s >> 64);
    }
}

/* r = a * b for non-negative a, b whose product fits LIMBS limbs */
static void big_mul(const big *a, const big *b, big *r)
{
    memset(r, 0, sizeof *r);
    for (unsigned i = 0; i < LIMBS; i++) {
        if (!a->w[i]) continue;
        uint64_t carry = 0;
        for (unsigned j = 0; i + j < LIMBS; j++) {
            const u128 p = (u128)a->w[i] * b->w[j] + r->w[i + j] + carry;
            r->w[i + j] = (uint64_t)p;
            carry = (uint64_t)(p >> 64);
        }
    }
}

static void big_sub(big *a, const big *b) /* a -= b */
{
    uint64_t borrow = 0;
    for (unsigned i = 0; i < LIMBS; i++) {
        const u128 d = (u128)a->w[i] - b->w[i] - borrow;
        a->w[i] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) & 1;
    }
}

/* A non-negative x as a long double: its top 64 bits, scaled (truncated below them, deterministically). */
static long double big_ld(const big *x)
{
    int top = LIMBS - 1;
    while (top >= 0 && !x->w[top]) top--;
    if (top < 0) return 0.0L;
    const long double hi = (long double)x->w[top], lo = top ? (long double)x->w[top - 1] : 0.0L;
    return ldexpl(hi, 64 * top) + ldexpl(lo, 64 * (top - 1));
}

/* ---- one part's pass ------------------------------------------------------------------------------------------ */

/* The candidate buckets of the middle ranks, taken by pass A (CAND_HIST or CAND_LIST), or none. */
enum { CAND_NONE, CAND_HIST, CAND_LIST };
#define CAND_BUCKETS 2
#define LIST_MAX     ((size_t)1 << 16)

typedef struct {
    int mode;
    uint32_t b0, nb; /* buckets b0 .. b0 + nb - 1 */
    uint64_t *hist;  /* CAND_HIST: nb x BINS low-16 counts */
    uint32_t *keys;  /* CAND_LIST: the keys, at most LIST_MAX */
    size_t nkeys;
} cand;

typedef struct {
    size_t n; /* values in the window */
    size_t pinf, ninf;
    int64_t s[256];  /* sum of m by E */
    u128 q[256];     /* sum of m^2 by E */
    uint64_t *hist;  /* pass A: BINS by top 16 bits; pass B: 2 x BINS by low 16 bits (for top0, top1) */
    uint32_t *lanes; /* pass A: LANES x BINS counts, folded into hist (after hist's 2 x BINS in one block) */
    cand c;          /* pass A: the candidates' histograms or keys (after the lanes in the block) */
} part;

/* Pass A's loop keeps LANES copies of every running total, value i adding into copy i % LANES: the values of an
 * image fall in a few bins and exponents, and one copy would make each addition wait for the one before into the
 * same bin (a store-to-load chain). m^2 < 2^48 adds Q_BLOCK / LANES times into a lane's uint64 before it is folded
 * into the part's 128-bit sums; a lane's uint32 count takes H_BLOCK / LANES < 2^32 values before it is folded. */
#define LANES           4
#define Q_BLOCK         ((size_t)1 << 16)
#define H_BLOCK         ((size_t)1 << 30)
#define CAND_BYTES      (CAND_BUCKETS * BINS * sizeof(uint64_t))
#define PART_HIST_BYTES (2 * BINS * sizeof(uint64_t) + LANES * BINS * sizeof(uint32_t) + CAND_BYTES)
_Static_assert(LIST_MAX * sizeof(uint32_t) <= CAND_BYTES, "a part's keys fit its candidates' histograms");

typedef struct {
    size_t n, pinf, ninf;
    int64_t s[LANES][256];
    uint64_t q[LANES][256];
} lane_sums;

/* Value v, when its key is in [w[0], w[1]] but not in [w[2], w[3]], into lane l's totals (and histogram lane);
 * when it is in [w[2], w[3]] and in a candidate bucket, into the candidates. */
static inline void lane_add(lane_sums *a, uint32_t *lanes, unsigned l, float v, const uint32_t w[4], cand *c)
{
    const uint32_t k = gpuws_sigma_clip_key(v);
    if (k < w[0] || k > w[1]) return;
    if (k >= w[2] && k <= w[3]) {
        const uint32_t b = (k >> 16) - c->b0; /* wraps below b0: never < nb (none when nb is 0) */
        if (b < c->nb) {
            if (c->mode == CAND_HIST) c->hist[(size_t)b * BINS + (k & 0xffffu)]++;
            else c->keys[c->nkeys++] = k;
        }
        return;
    }
    a->n++;
    lanes[(size_t)l * BINS + (k >> 16)]++;
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint32_t e = (u >> 23) & 0xffu, frac = u & 0x7fffffu;
    if (e == 0xffu) { /* in the window: an infinity */
        if (u >> 31) a->ninf++;
        else a->pinf++;
        return;
    }
    const int64_t m = (int64_t)(e ? frac | 0x800000u : frac);
    const unsigned b = e ? e : 1;
    a->s[l][b] += (u >> 31) ? -m : m;
    a->q[l][b] += (uint64_t)(m * m);
}

/* The lanes' counts into the part's histogram, and the lanes zeroed. */
static void fold_lanes(part *pt)
{
    const uint32_t *l = pt->lanes;
    for (size_t i = 0; i < BINS; i++) pt->hist[i] += (uint64_t)l[i] + l[BINS + i] + l[2 * BINS + i] + l[3 * BINS + i];
    memset(pt->lanes, 0, LANES * BINS * sizeof *pt->lanes);
}

/* Pass A over values [i0, i1) into part pt: those with keys in the window w, and the candidates (lane_add). */
static void pass_a_part(part *pt, const float *x, size_t i0, size_t i1, const uint32_t w[4])
{
    _Static_assert(LANES == 4, "fold_lanes adds four lanes");
    memset(pt->hist, 0, BINS * sizeof *pt->hist);
    pt->c.nkeys = 0;
    if (pt->c.mode == CAND_HIST) memset(pt->c.hist, 0, (size_t)pt->c.nb * BINS * sizeof *pt->c.hist);
    memset(pt->lanes, 0, LANES * BINS * sizeof *pt->lanes);
    memset(pt->s, 0, sizeof pt->s);
    memset(pt->q, 0, sizeof pt->q);
    lane_sums a;
    a.n = a.pinf = a.ninf = 0;
    size_t since_fold = 0;
    for (size_t b0 = i0; b0 < i1; b0 += Q_BLOCK) {
        const size_t b1 = i1 - b0 < Q_BLOCK ? i1 : b0 + Q_BLOCK;
        memset(a.s, 0, sizeof a.s);
        memset(a.q, 0, sizeof a.q);
        size_t i = b0;
        for (; i + LANES <= b1; i += LANES) {
            lane_add(&a, pt->lanes, 0, x[i], w, &pt->c);
            lane_add(&a, pt->lanes, 1, x[i + 1], w, &pt->c);
            lane_add(&a, pt->lanes, 2, x[i + 2], w, &pt->c);
            lane_add(&a, pt->lanes, 3, x[i + 3], w, &pt->c);
        }
        for (; i < b1; i++) lane_add(&a, pt->lanes, 0, x[i], w, &pt->c);
        for (unsigned l = 0; l < LANES; l++)
            for (unsigned e = 0; e < 256; e++) {
                pt->s[e] += a.s[l][e];
                pt->q[e] += a.q[l][e];
            }
        if ((since_fold += b1 - b0) >= H_BLOCK) {
            fold_lanes(pt);
            since_fold = 0;
        }
    }
    fold_lanes(pt);
    pt->n = a.n, pt->pinf = a.pinf, pt->ninf = a.ninf;
}

typedef struct {
    const float *x;
    uint32_t lo, hi;   /* the window of keys */
    uint32_t ilo, ihi; /* pass A: keys inside [lo, hi] left out (those still kept when it counts the removed) */
    int pass;          /* 0: A; 1: B */
    uint32_t top0, top1;
    int cand_mode; /* pass A: the candidates (cand) */
    uint32_t cand_b0, cand_nb;
    part *parts;
} job;

static void run_part(void *arg, size_t p, size_t i0, size_t i1)
{
    job *j = arg;
    part *pt = &j->parts[p];
    const float *x = j->x;
    const uint32_t lo = j->lo, hi = j->hi;
    if (j->pass == 1) {
        memset(pt->hist, 0, 2 * BINS * sizeof *pt->hist);
        for (size_t i = i0; i < i1; i++) {
            const uint32_t k = gpuws_sigma_clip_key(x[i]);
            if (k < lo || k > hi) continue;
            const uint32_t t = k >> 16;
            if (t == j->top0) pt->hist[k & 0xffffu]++;
            if (t == j->top1) pt->hist[BINS + (k & 0xffffu)]++;
        }
        return;
    }
    const uint32_t w[4] = { lo, hi, j->ilo, j->ihi };
    pt->c.mode = j->cand_mode, pt->c.b0 = j->cand_b0, pt->c.nb = j->cand_mode ? j->cand_nb : 0;
    pass_a_part(pt, x, i0, i1, w);
}

/* ---- the statistics of a window ------------------------------------------------------------------------------- */

typedef struct {
    size_t n;
    double median, mean, std;
} stats;

/* The smallest key whose value is > v, or UINT32_MAX when none (NaN v: none). */
static uint32_t first_above(double v)
{
    const uint32_t a0 = SC_KEY_NEG_INF, b0 = SC_KEY_POS_INF;
    if (!((double)gpuws_sigma_clip_unkey(b0) > v)) return UINT32_MAX;
    uint32_t a = a0, b = b0;
    while (a < b) {
        const uint32_t m = a + (b - a) / 2;
        if ((double)gpuws_sigma_clip_unkey(m) > v) b = m;
        else a = m + 1;
    }
    return a;
}

/* The largest key whose value is < v, or 0 when none. */
static uint32_t last_below(double v)
{
    const uint32_t a0 = SC_KEY_NEG_INF, b0 = SC_KEY_POS_INF;
    if (!((double)gpuws_sigma_clip_unkey(a0) < v)) return 0;
    uint32_t a = a0, b = b0;
    while (a < b) {
        const uint32_t m = a + (b - a + 1) / 2;
        if ((double)gpuws_sigma_clip_unkey(m) < v) a = m;
        else b = m - 1;
    }
    return a;
}

/* The merged totals of a pass, as words that callers with parts of their own (MPI ranks) sum elementwise: pass A
 * holds the count, the infinities, s by E, m^2 sums by E as two words of 44 bits (no carry is lost however many
 * parts add them) and the top-16 histogram; pass B the two low-16 histograms. */
#define W_N     0
#define W_PINF  1
#define W_NINF  2
#define W_S     3
#define W_QLO   (W_S + 256)
#define W_QHI   (W_QLO + 256)
#define W_HIST  (W_QHI + 256)
#define W_A     (W_HIST + BINS)
#define W_B     (2 * BINS)
#define W_WORDS (W_A > W_B ? W_A : W_B)
#define Q_BITS  44
_Static_assert(W_WORDS >= (CAND_BUCKETS * BINS), "the candidates' histograms reduce in the words");

/* The window's totals over every part (and caller), decoded from pass A's words. */
typedef struct {
    size_t n, pinf, ninf;
    int64_t s[256];
    u128 q[256];
    uint64_t *hist; /* BINS */
} totals;

typedef struct {
    const float *x;
    size_t nvals, nparts;
    part *parts;
    uint64_t *w;     /* W_WORDS: the merged totals of the last pass */
    uint64_t *hist;  /* the merged histogram(s) of the last pass: pass A's in tot, pass B's in w */
    totals tot;      /* the current window's */
    cand cand;       /* pass A's candidates, merged: histograms in w, keys in keys */
    uint32_t *keys;  /* LIST_MAX */
    size_t reads;    /* passes over the values (GPUWS_LOG=debug) */
    size_t found[3]; /* medians found in pass A's candidates, by cand mode */
    gpuws_sum_reducer reduce;
    void *reduce_user;
} clip;

static gpuws_status reduce_words(clip *c, size_t count)
{
    if (!c->reduce) return GPUWS_OK;
    const gpuws_status st = c->reduce(c->reduce_user, c->w, count);
    return st ? gpuws__error_prefix(st, "sigma_clip: the reducer failed") : GPUWS_OK;
}

static void run_pass(clip *c, job *j)
{
    j->x = c->x, j->parts = c->parts;
    gpuws__run_ranges(c->nvals, c->nparts, run_part, j);
    c->reads++;
}

/* The candidate buckets for window [lo, hi] inside the window whose top-16 histogram is hist (c->tot's), into
 * c->cand: the buckets that hold the new window's middle ranks whatever the cut buckets at its edges keep. */
static void choose_candidates(clip *c, uint32_t lo, uint32_t hi)
{
    const uint64_t *hist = c->tot.hist;
    const uint32_t blo = lo >> 16, bhi = hi >> 16;
    cand *cd = &c->cand;
    cd->mode = CAND_NONE, cd->nb = 0, cd->nkeys = 0;
    uint32_t b0 = blo, b1 = blo;
    if (blo != bhi) {
        /* n = p_lo + m + p_hi, p_lo <= h_lo and p_hi <= h_hi the edge buckets' new counts; a middle rank r lies at
         * r - p_lo into the buckets between them, at least (h_lo + m - 1) / 2 - h_lo and at most (m + h_hi) / 2 */
        uint64_t m = 0;
        for (uint32_t b = blo + 1; b < bhi; b++) m += hist[b];
        const int64_t hlo = (int64_t)hist[blo], hhi = (int64_t)hist[bhi], mm = (int64_t)m;
        const int64_t xmin = hlo + mm >= 1 ? (hlo + mm - 1) / 2 - hlo : 0, xmax = (mm + hhi) / 2;
        int64_t acc = 0;
        b0 = xmin < 0 ? blo : bhi, b1 = xmax < 0 ? blo : bhi;
        for (uint32_t b = blo + 1; b < bhi; b++) {
            acc += (int64_t)hist[b]; /* the ranks below acc lie in buckets up to b */
            if (xmin >= 0 && b0 == bhi && xmin < acc) b0 = b;
            if (xmax >= 0 && b1 == bhi && xmax < acc) b1 = b;
        }
    }
    cd->b0 = b0, cd->nb = b1 - b0 + 1;
    uint64_t held = 0;
    for (uint32_t b = b0; b <= b1; b++) held += hist[b];
    if (cd->nb <= CAND_BUCKETS) cd->mode = CAND_HIST;
    else if (!c->reduce && held <= LIST_MAX) cd->mode = CAND_LIST;
    else cd->nb = 0;
}

static int key_order(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The parts' candidates merged (CAND_HIST: summed into c->w and reduced; CAND_LIST: the keys sorted). */
static gpuws_status merge_candidates(clip *c)
{
    cand *cd = &c->cand;
    if (cd->mode == CAND_HIST) {
        const size_t words = (size_t)cd->nb * BINS;
        memset(c->w, 0, words * sizeof *c->w);
        for (size_t p = 0; c->nvals && p < c->nparts; p++)
            for (size_t i = 0; i < words; i++) c->w[i] += c->parts[p].c.hist[i];
        cd->hist = c->w;
        return reduce_words(c, words);
    }
    if (cd->mode == CAND_LIST) {
        cd->nkeys = 0;
        for (size_t p = 0; c->nvals && p < c->nparts; p++) {
            memcpy(c->keys + cd->nkeys, c->parts[p].c.keys, c->parts[p].c.nkeys * sizeof *c->keys);
            cd->nkeys += c->parts[p].c.nkeys;
        }
        qsort(c->keys, cd->nkeys, sizeof *c->keys, key_order);
        cd->keys = c->keys;
    }
    return GPUWS_OK;
}

/* Pass A: the totals of window [lo, hi] into c->tot, their count and moments into st, and c->hist = the top-16
 * histogram. The window only shrinks, so after the first pass (olo > ohi: none) it reads the values once to count
 * those that left it, [olo, ohi] outside [lo, hi], and takes them off the totals: integers, exactly, whatever the
 * split, with the per-value work only for the few that left. */
static gpuws_status pass_a(clip *c, uint32_t olo, uint32_t ohi, uint32_t lo, uint32_t hi, stats *st)
{
    const bool first = olo > ohi;
    job j = { .lo = first ? lo : olo, .hi = first ? hi : ohi, .ilo = first ? 1 : lo, .ihi = first ? 0 : hi };
    c->cand.mode = CAND_NONE;
    if (!first) choose_candidates(c, lo, hi);
    j.cand_mode = c->cand.mode, j.cand_b0 = c->cand.b0, j.cand_nb = c->cand.nb;
    if (c->nvals) run_pass(c, &j);
    uint64_t *w = c->w;
    memset(w, 0, W_A * sizeof *w);
    for (size_t p = 0; c->nvals && p < c->nparts; p++) {
        const part *pt = &c->parts[p];
        w[W_N] += pt->n, w[W_PINF] += pt->pinf, w[W_NINF] += pt->ninf;
        for (unsigned b = 0; b < 256; b++) {
            w[W_S + b] += (uint64_t)pt->s[b]; /* two's complement: the sum wraps back into range */
            w[W_QLO + b] += (uint64_t)(pt->q[b] & (((u128)1 << Q_BITS) - 1));
            w[W_QHI + b] += (uint64_t)(pt->q[b] >> Q_BITS);
        }
        for (size_t i = 0; i < BINS; i++) w[W_HIST + i] += pt->hist[i];
    }
    gpuws_status rst = reduce_words(c, W_A);
    if (rst) return rst;
    totals *t = &c->tot;
    /* the first pass's words are the totals; a later pass's, what left them (unsigned: s wraps as its words do) */
    if (first) {
        t->n = (size_t)w[W_N], t->pinf = (size_t)w[W_PINF], t->ninf = (size_t)w[W_NINF];
        for (unsigned b = 0; b < 256; b++) {
            t->s[b] = (int64_t)w[W_S + b];
            t->q[b] = (u128)w[W_QLO + b] + ((u128)w[W_QHI + b] << Q_BITS);
        }
        memcpy(t->hist, w + W_HIST, BINS * sizeof *t->hist);
    } else {
        t->n -= (size_t)w[W_N], t->pinf -= (size_t)w[W_PINF], t->ninf -= (size_t)w[W_NINF];
        for (unsigned b = 0; b < 256; b++) {
            t->s[b] = (int64_t)((uint64_t)t->s[b] - w[W_S + b]);
            t->q[b] -= (u128)w[W_QLO + b] + ((u128)w[W_QHI + b] << Q_BITS);
        }
        for (size_t i = 0; i < BINS; i++) t->hist[i] -= w[W_HIST + i];
    }
    c->hist = t->hist;
    if ((rst = merge_candidates(c))) return rst; /* into w, whose totals are decoded */
    const int64_t *s = t->s;
    const u128 *q = t->q;
    const size_t n = t->n, pinf = t->pinf, ninf = t->ninf;
    st->n = n;
    if (!n) {
        st->mean = st->std = NAN;
        return GPUWS_OK;
    }
    if (pinf || ninf) { /* NumPy's loop: an infinite mean (NaN with both signs), a NaN std */
        st->mean = pinf && ninf ? NAN : pinf ? INFINITY : -INFINITY;
        st->std = NAN;
        return GPUWS_OK;
    }
    big S = { { 0 } }, Q = { { 0 } };
    for (unsigned b = 1; b < 255; b++) {
        if (s[b]) big_add_shifted(&S, (u128)(int64_t)s[b], s[b] < 0, b - 1);
        if (q[b]) big_add_shifted(&Q, q[b], false, 2 * (b - 1));
    }
    const size_t finite = n;
    const bool neg = big_negative(&S);
    big absS = S;
    if (neg) big_negate(&absS);
    const long double sum = ldexpl(big_ld(&absS), -149);
    st->mean = (double)((neg ? -sum : sum) / (long double)finite);
    big nb = { { 0 } }, nQ, S2;
    nb.w[0] = (uint64_t)finite;
    big_mul(&Q, &nb, &nQ);
    big_mul(&absS, &absS, &S2);
    big_sub(&nQ, &S2); /* n Q - S^2 >= 0 */
    const long double var = ldexpl(big_ld(&nQ), -298) / ((long double)finite * (long double)finite);
    st->std = (double)sqrtl(var);
    return GPUWS_OK;
}

/* The key of rank r (0-based) in the window, given the merged top-16 histogram: its top 16 bits. */
static uint32_t rank_top(const uint64_t *hist, size_t r, size_t *below)
{
    size_t acc = 0;
    for (uint32_t t = 0;; t++) {
        if (acc + hist[t] > r) {
            *below = acc;
            return t;
        }
        acc += hist[t];
    }
}

/* The median of the window (n > 0) from pass A's candidates when they hold both middle ranks (true), as pass B
 * would find it. */
static bool median_of_candidates(clip *c, stats *st)
{
    const cand *cd = &c->cand;
    const size_t r0 = (st->n - 1) / 2, r1 = st->n / 2;
    size_t below0, below1, dummy;
    const uint32_t t0 = rank_top(c->hist, r0, &below0), t1 = rank_top(c->hist, r1, &below1);
    if (!cd->mode || t0 < cd->b0 || t1 - cd->b0 >= cd->nb) return false;
    uint32_t k0, k1;
    if (cd->mode == CAND_HIST) {
        k0 = (t0 << 16) | rank_top(cd->hist + (size_t)(t0 - cd->b0) * BINS, r0 - below0, &dummy);
        k1 = (t1 << 16) | rank_top(cd->hist + (size_t)(t1 - cd->b0) * BINS, r1 - below1, &dummy);
    } else {
        size_t below = 0; /* the window's values in buckets below the candidates: the keys start at that rank */
        for (uint32_t b = 0; b < cd->b0; b++) below += c->hist[b];
        k0 = cd->keys[r0 - below], k1 = cd->keys[r1 - below];
    }
    st->median = st->n & 1 ? (double)gpuws_sigma_clip_unkey(k0)
                           : ((double)gpuws_sigma_clip_unkey(k0) + (double)gpuws_sigma_clip_unkey(k1)) / 2.0;
    c->found[cd->mode]++;
    return true;
}

/* Pass B: the two middle values of the window (n > 0) from pass A's histogram, and the median. */
static gpuws_status pass_b(clip *c, uint32_t lo, uint32_t hi, stats *st)
{
    if (median_of_candidates(c, st)) return GPUWS_OK;
    const size_t r0 = (st->n - 1) / 2, r1 = st->n / 2;
    size_t below0, below1;
    const uint32_t t0 = rank_top(c->hist, r0, &below0), t1 = rank_top(c->hist, r1, &below1);
    job j = { .lo = lo, .hi = hi, .pass = 1, .top0 = t0, .top1 = t1 };
    if (c->nvals) run_pass(c, &j);
    c->hist = c->w;
    memset(c->hist, 0, W_B * sizeof *c->hist);
    for (size_t p = 0; c->nvals && p < c->nparts; p++)
        for (size_t i = 0; i < 2 * BINS; i++) c->hist[i] += c->parts[p].hist[i];
    const gpuws_status rst = reduce_words(c, W_B);
    if (rst) return rst;
    size_t dummy;
    const uint32_t k0 = (t0 << 16) | rank_top(c->hist, r0 - below0, &dummy),
                   k1 = (t1 << 16) | rank_top(c->hist + BINS, r1 - below1, &dummy);
    st->median = st->n & 1 ? (double)gpuws_sigma_clip_unkey(k0)
                           : ((double)gpuws_sigma_clip_unkey(k0) + (double)gpuws_sigma_clip_unkey(k1)) / 2.0;
    return GPUWS_OK;
}

/* Options must match between the callers of one reduction: every caller contributes whether its own are valid,
 * and kappa and max_iterations as gpuws__agree_words has them (16-bit pieces: 32-bit halves, whose squares' sums
 * overflowed from 16 callers on, failed every caller). */
static gpuws_status check_shared_options(clip *c, const gpuws_sigma_clip_options *o, bool valid)
{
    uint64_t v[2] = { 0, (uint32_t)o->max_iterations };
    memcpy(&v[0], &o->kappa, 8);
    uint64_t *w = c->w;
    w[0] = 1, w[1] = !valid;
    gpuws__agree_words(v, 2, w + 2);
    gpuws_status st = reduce_words(c, 2 + GPUWS__AGREE_WORDS(2));
    if (st) return st;
    if (w[1])
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sigma_clip_host: the options of %llu of %llu callers are "
                            "not valid (kappa finite > 0, max_iterations >= 1)",
                            (unsigned long long)w[1], (unsigned long long)w[0]);
    const size_t bad = gpuws__agree_check(w + 2, 2, w[0]);
    if (bad < 2)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sigma_clip_host: the %llu callers' options differ (%s): each must pass the same",
                            (unsigned long long)w[0], bad == 0 ? "kappa" : "max_iterations");
    return GPUWS_OK;
}

/* The whole loop on nparts parts of this caller's values (the tests choose nparts; the public calls: the online
 * CPUs), reduced over the callers when reduce is given. */
gpuws_status gpuws__sigma_clip_host_split(const float *x, size_t nvals, const gpuws_sigma_clip_options *o,
                                          size_t nparts, gpuws_sum_reducer reduce, void *reduce_user,
                                          gpuws_sigma_clip_result *result)
{
    if (nparts < 1) nparts = 1;
    if (nvals && nparts > nvals) nparts = nvals;
    clip c = { .x = x, .nvals = nvals, .nparts = nparts, .reduce = reduce, .reduce_user = reduce_user };
    c.parts = gpuws__calloc(nparts, sizeof *c.parts);
    c.w = gpuws__malloc(W_WORDS * sizeof *c.w);
    c.tot.hist = gpuws__malloc(BINS * sizeof *c.tot.hist);
    c.keys = reduce ? NULL : gpuws__malloc(LIST_MAX * sizeof *c.keys);
    bool ok = c.parts && c.w && c.tot.hist && (reduce || c.keys);
    for (size_t p = 0; ok && p < nparts; p++) /* hist's 2 x BINS words, the LANES x BINS counts, the candidates */
        if ((ok = (c.parts[p].hist = gpuws__malloc(PART_HIST_BYTES)) != NULL)) {
            c.parts[p].lanes = (uint32_t *)(c.parts[p].hist + 2 * BINS);
            c.parts[p].c.hist = (uint64_t *)(c.parts[p].lanes + LANES * BINS);
            c.parts[p].c.keys = (uint32_t *)c.parts[p].c.hist;
        }
    gpuws_status st = GPUWS_OK;
    if (!ok) {
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                          "sigma_clip_host: no host memory for the histograms of %zu parts (%zu bytes)", nparts,
                          nparts * (PART_HIST_BYTES + sizeof(part)) + (W_WORDS + BINS) * sizeof(uint64_t) +
                              (reduce ? 0 : LIST_MAX * sizeof(uint32_t)));
        goto done;
    }
    const bool valid = o->kappa > 0 && isfinite(o->kappa) && o->max_iterations >= 1;
    if (reduce && (st = check_shared_options(&c, o, valid))) goto done;
    uint32_t lo = SC_KEY_NEG_INF, hi = SC_KEY_POS_INF;
    stats cur;
    if ((st = pass_a(&c, 1, 0, lo, hi, &cur))) goto done;
    if (cur.n == 0) {
        st = reduce ? gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                   "sigma_clip_host: every caller's values are NaN (or none): no statistics exist")
                    : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                   "sigma_clip_host: all %zu values are NaN: no statistics exist", nvals);
        goto done;
    }
    if ((st = pass_b(&c, lo, hi, &cur))) goto done;
    int it = 0, converged = 0;
    while (it < o->max_iterations) {
        it++;
        if (cur.n == 0) { /* NumPy: the median of nothing is NaN, nothing can be removed */
            converged = 1;
            break;
        }
        const double t = o->kappa * cur.std, a = cur.median - t, b = cur.median + t;
        uint32_t nlo = first_above(a), nhi = last_below(b);
        if (nlo < lo) nlo = lo;
        if (nhi > hi) nhi = hi;
        stats next = { 0, NAN, NAN, NAN };
        if (nlo <= nhi && nlo != UINT32_MAX) {
            if ((st = pass_a(&c, lo, hi, nlo, nhi, &next))) goto done;
        } else {
            nlo = 1, nhi = 0; /* empty */
        }
        if (next.n == cur.n) {
            converged = 1;
            break;
        }
        lo = nlo, hi = nhi;
        if (next.n && (st = pass_b(&c, lo, hi, &next))) goto done;
        cur = next;
    }
    result->count = cur.n;
    result->median = cur.median;
    result->mean = cur.mean;
    result->std = cur.std;
    result->iterations = it;
    result->converged = converged;
done:
    for (size_t p = 0; c.parts && p < nparts; p++) gpuws__free(c.parts[p].hist);
    gpuws__free(c.parts);
    gpuws__free(c.w);
    gpuws__free(c.tot.hist);
    gpuws__free(c.keys);
    if (!st)
        gpuws__log(GPUWS__LOG_DEBUG,
                   "sigma_clip_host: %zu values in %zu parts, %d iterations, %zu reads; medians from pass A: %zu by "
                   "buckets' histograms, %zu by keys",
                   nvals, nparts, result->iterations, c.reads, c.found[CAND_HIST], c.found[CAND_LIST]);
    return st;
}

static size_t default_parts(size_t n)
{
    size_t parts = n / PART_MIN;
    const size_t cpus = gpuws__cpu_count();
    return parts > cpus ? cpus : parts ? parts : 1;
}

gpuws_status gpuws_sigma_clip_host(gpuws_context *ctx, const float *data, size_t n,
                                   const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__SIGMA_CLIP_OPTIONS_BASE, "sigma_clip_host: options")))
        return st;
    if (!data || !result)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_host: argument '%s' is NULL",
                            !data ? "data" : "result");
    if (!(o.kappa > 0) || !isfinite(o.kappa))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_host: kappa %g is not a finite number > 0",
                            o.kappa);
    if (o.max_iterations < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_host: max_iterations %d is not >= 1",
                            o.max_iterations);
    if (n == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_host: no values (n == 0): no statistics exist");
    gpuws_sigma_clip_result r;
    if ((st = gpuws__sigma_clip_host_split(data, n, &o, default_parts(n), NULL, NULL, &r))) return st;
    *result = r;
    return GPUWS_OK;
}

gpuws_status gpuws_sigma_clip_host_reduce(gpuws_context *ctx, const float *data, size_t n,
                                          const gpuws_sigma_clip_options *options, gpuws_sum_reducer reduce,
                                          void *reduce_user, gpuws_sigma_clip_result *result)
{
    /* A caller's own mistakes that leave it unable to take part fail it alone; every other error is collective. */
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!reduce || !result || (!data && n))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_host_reduce: argument '%s' is NULL",
                            !reduce   ? "reduce"
                            : !result ? "result"
                                      : "data");
    gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__SIGMA_CLIP_OPTIONS_BASE,
                                  "sigma_clip_host_reduce: options")))
        return st;
    gpuws_sigma_clip_result r;
    if ((st = gpuws__sigma_clip_host_split(data, n, &o, default_parts(n), reduce, reduce_user, &r))) return st;
    *result = r;
    return GPUWS_OK;
}
