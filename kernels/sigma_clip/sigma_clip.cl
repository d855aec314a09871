/* κ-σ clipping with the data left in place: the kept set is always an interval of order-preserving keys
 * [klo, khi], so a round is three passes over the data and no value is ever copied or sorted.
 *   sigma_clip_stats   count, mean, M2 (shifted sums per work-item, Chan's combination), smallest/largest kept
 *                      key; round 0 also builds the level-1 histogram (key bits 31..21) of all non-NaN values,
 *                      later rounds only count the kept values in the two bins holding klo and khi. The last
 *                      work-group finds the level-1 bin of the lower median.
 *   sigma_clip_refine  level-2 histogram (bits 20..10) of the kept values in that bin; the last work-group picks
 *                      the level-2 bin.
 *   sigma_clip_finish  level-3 histogram (bits 9..0) inside it, and the smallest kept key above it (the upper
 *                      median of an even count may lie there); the last work-group resolves the median, applies
 *                      the bounds m ± κs to the keys and writes the next interval, or the result and the done flag.
 * Every kernel returns at once when the done flag is set, so the host may enqueue more rounds than needed.
 * Cross-work-group hand-off: each group writes its partial, fences, and takes a ticket; the group that draws the
 * last ticket reads everyone's partials (volatile) and resets the ticket. Layout: sigma_clip_state.h.
 * Counts of values are 64-bit wherever they can pass a work-group's share (global histograms, flushed with
 * cl_khr_int64_base_atomics; totals; ranks); the per-item counts and local histograms stay 32-bit on the hot path.
 * Only whole work-groups return early: the single-work-item tails are `if (lid == 0) ...` blocks, because PoCL 3.1
 * ran the code after a per-work-item `return` (placed after the last barrier) in every work-item. */
#if defined(GPUWS_FP64) && (defined(cl_khr_int64_base_atomics) || defined(GPUWS_SIGMA_CLIP_INT64_ATOMICS))
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL FP_CONTRACT OFF

#include "sigma_clip_state.h"

inline uint sc_key(float f)
{
    const uint u = as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline double sc_value(uint k) { return (double)as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }

/* Smallest non-NaN key whose value is > lo (SC_KEY_POS_INF + 1 when none; a NaN bound has none). */
inline uint sc_first_above(double lo)
{
    if (!(sc_value(SC_KEY_POS_INF) > lo)) return SC_KEY_POS_INF + 1u;
    uint a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const uint m = a + (b - a) / 2u;
        if (sc_value(m) > lo) b = m;
        else a = m + 1u;
    }
    return a;
}

/* Largest non-NaN key whose value is < hi (SC_KEY_NEG_INF - 1 when none). */
inline uint sc_last_below(double hi)
{
    if (!(sc_value(SC_KEY_NEG_INF) < hi)) return SC_KEY_NEG_INF - 1u;
    uint a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const uint m = a + (b - a + 1u) / 2u;
        if (sc_value(m) < hi) a = m;
        else b = m - 1u;
    }
    return a;
}

/* Chan et al.'s pairwise update of (count, mean, M2). */
inline void sc_chan(ulong *na, double *ma, double *m2a, ulong nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (*na == 0) {
        *na = nb;
        *ma = mb;
        *m2a = m2b;
        return;
    }
    const ulong n = *na + nb;
    const double d = mb - *ma, f = (double)nb / (double)n;
    *ma += d * f;
    *m2a += m2b + d * d * (double)*na * f;
    *na = n;
}

/* The group's (count, mean, M2, min key, max key, blo, bhi) tree; the totals end in index 0. */
void sc_stats_tree(__local ulong *l_n, __local double *l_mean, __local double *l_m2, __local uint *l_kmin,
                   __local uint *l_kmax, __local ulong *l_blo, __local ulong *l_bhi)
{
    const uint lid = get_local_id(0);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) {
            ulong na = l_n[lid];
            double ma = l_mean[lid], m2a = l_m2[lid];
            sc_chan(&na, &ma, &m2a, l_n[lid + s], l_mean[lid + s], l_m2[lid + s]);
            l_n[lid] = na;
            l_mean[lid] = ma;
            l_m2[lid] = m2a;
            l_kmin[lid] = min(l_kmin[lid], l_kmin[lid + s]);
            l_kmax[lid] = max(l_kmax[lid], l_kmax[lid + s]);
            l_blo[lid] += l_blo[lid + s];
            l_bhi[lid] += l_bhi[lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Every work-item of the group: the bin of cnt[0..nbins) holding rank `rank` -> res[0], the rank inside it ->
 * res[1]. nbins is a multiple of the group size. tmp: one ulong per work-item. */
void sc_find_rank(__local const ulong *cnt, uint nbins, ulong rank, __local ulong *tmp, __local ulong *res)
{
    const uint lid = get_local_id(0), B = get_local_size(0), per = nbins / B;
    ulong s = 0;
    for (uint j = 0; j < per; j++) s += cnt[lid * per + j];
    tmp[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = 1; d < B; d <<= 1) {
        const ulong v = lid >= d ? tmp[lid - d] : 0ul;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ulong incl = tmp[lid];
    if (rank >= incl - s && rank < incl) {
        ulong c = incl - s;
        for (uint j = 0; j < per; j++) {
            const uint b = lid * per + j;
            if (rank < c + cnt[b]) {
                res[0] = b;
                res[1] = rank - c;
                break;
            }
            c += cnt[b];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Fence this work-item's global writes, then draw a ticket; true in every work-item of the last group. */
inline bool sc_last_group(__global uint *ticket, __local uint *flag)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) flag[0] = atomic_inc(ticket) == get_num_groups(0) - 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const bool last = flag[0] != 0;
    if (last && get_local_id(0) == 0) *ticket = 0u; /* ready for the next launch */
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    return last;
}

/* The 64-bit global histograms in the counter buffer (sigma_clip_state.h). */
inline __global ulong *sc_hist(__global uint *ctr) { return (__global ulong *)ctr; }

/* Adds the group's 32-bit local histogram into a 64-bit global one (non-zero bins only). */
inline void sc_flush(__local const uint *h, uint nbins, __global ulong *g)
{
    for (uint b = get_local_id(0); b < nbins; b += get_local_size(0))
        if (h[b]) atom_add(&g[b], (ulong)h[b]);
}

/* Copies a global histogram into local memory (volatile: written by other groups' atomics) and clears it. */
inline void sc_take(__global ulong *g, uint nbins, __local ulong *h)
{
    volatile __global ulong *vg = g;
    for (uint b = get_local_id(0); b < nbins; b += get_local_size(0)) {
        h[b] = vg[b];
        vg[b] = 0ul;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The result when this round's set is the answer. */
inline void sc_result(__global ulong *st, ulong n, double median, double mean, double std, ulong iterations,
                      ulong converged)
{
    st[SC_RES_N] = n;
    st[SC_RES_MEDIAN] = as_ulong(median);
    st[SC_RES_MEAN] = as_ulong(mean);
    st[SC_RES_STD] = as_ulong(std);
    st[SC_RES_ITER] = iterations;
    st[SC_RES_CONV] = converged;
    st[SC_DONE] = 1;
}

__kernel void sigma_clip_init(__global ulong *st, __global uint *ctr)
{
    for (uint i = get_local_id(0); i < SC_STATE_WORDS; i += get_local_size(0))
        st[i] = i == SC_KLO ? SC_KEY_NEG_INF : i == SC_KHI ? SC_KEY_POS_INF : 0ul;
    for (uint i = get_local_id(0); i < 2u * SC_H1; i += get_local_size(0)) ctr[i] = i == SC_KABOVE ? 0xffffffffu : 0u;
    for (uint i = SC_H1 + get_local_id(0); i < SC_CTR_WORDS; i += get_local_size(0)) sc_hist(ctr)[i] = 0ul;
}

/* ADD(x) for every value: grid-stride, 16-byte loads (whole buffers are aligned), two in flight per work-item. */
#define SC_FOR_EACH(ADD)                                                                                        \
    {                                                                                                           \
        const ulong nv_ = n >> 2, gsz_ = get_global_size(0);                                                    \
        __global const float4 *d4_ = (__global const float4 *)data;                                             \
        ulong i_ = get_global_id(0);                                                                            \
        for (; i_ + gsz_ < nv_; i_ += 2 * gsz_) {                                                               \
            const float4 a_ = d4_[i_], b_ = d4_[i_ + gsz_];                                                     \
            ADD(a_.s0) ADD(a_.s1) ADD(a_.s2) ADD(a_.s3) ADD(b_.s0) ADD(b_.s1) ADD(b_.s2) ADD(b_.s3)             \
        }                                                                                                       \
        if (i_ < nv_) {                                                                                         \
            const float4 a_ = d4_[i_];                                                                          \
            ADD(a_.s0) ADD(a_.s1) ADD(a_.s2) ADD(a_.s3)                                                         \
        }                                                                                                       \
        for (ulong j_ = (nv_ << 2) + get_global_id(0); j_ < n; j_ += gsz_) ADD(data[j_])                        \
    }

/* One kept value into the work-item's shifted sums (shift K = its first kept value); SQ adds d_ * d_ to s2. */
#define SC_STATS_ADD_SQ(xf, SQ)                                                                                 \
    {                                                                                                           \
        const float x_ = (xf);                                                                                  \
        const uint k_ = sc_key(x_);                                                                             \
        if (k_ >= klo && k_ <= khi) {                                                                           \
            const double xd_ = (double)x_;                                                                      \
            if (cnt == 0) K = xd_;                                                                              \
            const double d_ = xd_ - K;                                                                          \
            cnt++;                                                                                              \
            s1 += d_;                                                                                           \
            SQ;                                                                                                 \
            kmin = min(kmin, k_);                                                                               \
            kmax = max(kmax, k_);                                                                               \
            blo += (k_ >> 21) == blo_bin;                                                                       \
            bhi += (k_ >> 21) == bhi_bin;                                                                       \
            if (build) atomic_inc(&hist[k_ >> 21]);                                                             \
        }                                                                                                       \
    }
#define SC_STATS_ADD(xf) SC_STATS_ADD_SQ(xf, s2 += d_ * d_)

/* The stats kernel's local memory in two phases that share the space, so the group stays as small as with 32-bit
 * counts: every group's 32-bit histogram and (count, mean, M2, min, max, blo, bhi) tree; then, in the last group
 * once the totals are read, the kept set's 64-bit level-1 histogram and the rank search's prefix sums. */
#define SC_STATS_LOCAL (1024 + 6 * SC_MAXB) /* ulongs: 2048 uint, 2 x double, 3 x ulong, 2 x uint per work-item */

__kernel void sigma_clip_stats(__global const float *data, ulong n, __global ulong *st, __global uint *ctr)
{
    __local ulong l_space[SC_STATS_LOCAL], l_res[2];
    __local uint l_flag[1];
    __local uint *hist = (__local uint *)l_space;
    __local double *l_mean = (__local double *)(l_space + 1024), *l_m2 = l_mean + SC_MAXB;
    __local ulong *l_n = l_space + 1024 + 2 * SC_MAXB, *l_blo = l_n + SC_MAXB, *l_bhi = l_blo + SC_MAXB;
    __local uint *l_kmin = (__local uint *)(l_bhi + SC_MAXB), *l_kmax = l_kmin + SC_MAXB;
    __local ulong *l_kept = l_space, *l_tmp = l_space + 2048; /* the last group's second phase */
    if (st[SC_DONE]) return;
    const uint lid = get_local_id(0), B = get_local_size(0);
    const uint klo = (uint)st[SC_KLO], khi = (uint)st[SC_KHI], blo_bin = klo >> 21, bhi_bin = khi >> 21;
    const bool build = st[SC_ROUND] == 0 && st[SC_FINAL] == 0;
    for (uint b = lid; b < 2048u; b += B) hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);

    uint cnt = 0, kmin = 0xffffffffu, kmax = 0u, blo = 0u, bhi = 0u;
    double K = 0.0, s1 = 0.0, s2 = 0.0;
    SC_FOR_EACH(SC_STATS_ADD)

    l_n[lid] = cnt;
    l_mean[lid] = cnt ? K + s1 / (double)cnt : 0.0;
    l_m2[lid] = cnt ? fmax(s2 - s1 * s1 / (double)cnt, 0.0) : 0.0;
    l_kmin[lid] = kmin;
    l_kmax[lid] = kmax;
    l_blo[lid] = blo;
    l_bhi[lid] = bhi;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (build) sc_flush(hist, 2048u, sc_hist(ctr) + SC_H1);
    sc_stats_tree(l_n, l_mean, l_m2, l_kmin, l_kmax, l_blo, l_bhi);
    __global ulong *part = st + SC_STATE_WORDS;
    if (lid == 0) {
        __global ulong *p = part + (ulong)get_group_id(0) * SC_PART_WORDS;
        p[0] = l_n[0];
        p[1] = as_ulong(l_mean[0]);
        p[2] = as_ulong(l_m2[0]);
        p[3] = l_kmin[0];
        p[4] = l_kmax[0];
        p[5] = l_blo[0];
        p[6] = l_bhi[0];
    }
    if (!sc_last_group(ctr + SC_TICKET1, l_flag)) return;

    /* The last group: combine the partials in group order (deterministic), then find the median's level-1 bin. */
    volatile __global ulong *vp = part;
    ulong na = 0, bl = 0, bh = 0;
    uint kmn = 0xffffffffu, kmx = 0u;
    double ma = 0.0, m2a = 0.0;
    for (uint g = lid; g < get_num_groups(0); g += B) {
        volatile __global ulong *p = vp + (ulong)g * SC_PART_WORDS;
        sc_chan(&na, &ma, &m2a, p[0], as_double(p[1]), as_double(p[2]));
        kmn = min(kmn, (uint)p[3]);
        kmx = max(kmx, (uint)p[4]);
        bl += p[5];
        bh += p[6];
    }
    l_n[lid] = na;
    l_mean[lid] = ma;
    l_m2[lid] = m2a;
    l_kmin[lid] = kmn;
    l_kmax[lid] = kmx;
    l_blo[lid] = bl;
    l_bhi[lid] = bh;
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_stats_tree(l_n, l_mean, l_m2, l_kmin, l_kmax, l_blo, l_bhi);
    const ulong total = l_n[0];
    if (lid == 0) {
        st[SC_N] = total;
        st[SC_MEAN] = as_ulong(l_mean[0]);
        st[SC_M2] = as_ulong(l_m2[0]);
        st[SC_KMIN] = l_kmin[0];
        st[SC_KMAX] = l_kmax[0];
        if (build) st[SC_N0] = total;
        if (total == 0) { /* nothing left: NumPy's statistics of an empty array, nothing more to remove */
            const bool fin = st[SC_FINAL] != 0;
            sc_result(st, 0, NAN, NAN, NAN, st[SC_ROUND] + (fin ? 0 : 1), fin ? 0 : 1);
        }
    }
    if (total == 0) return;
    /* The kept set's level-1 histogram: the full one strictly inside (klo, khi), the kept counts at the ends. */
    volatile __global ulong *h1 = sc_hist(ctr) + SC_H1;
    const ulong bl0 = l_blo[0], bh0 = l_bhi[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* the tree's results are read: its space becomes the 64-bit histogram */
    for (uint b = lid; b < 2048u; b += B)
        l_kept[b] = b < blo_bin || b > bhi_bin ? 0ul : blo_bin == bhi_bin ? total : b == blo_bin ? bl0 : b == bhi_bin ? bh0 : h1[b];
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_find_rank(l_kept, 2048u, (total - 1ul) / 2ul, l_tmp, l_res);
    if (lid == 0) {
        st[SC_B1] = l_res[0];
        st[SC_R1] = l_res[1];
    }
}

__kernel void sigma_clip_refine(__global const float *data, ulong n, __global ulong *st, __global uint *ctr)
{
    __local ulong l_hist[2048], l_tmp[SC_MAXB], l_res[2];
    __local uint l_flag[1];
    __local uint *hist = (__local uint *)l_hist; /* the group's 32-bit histogram; in the last group, the 64-bit one */
    if (st[SC_DONE]) return;
    const uint lid = get_local_id(0), B = get_local_size(0);
    const uint klo = (uint)st[SC_KLO], khi = (uint)st[SC_KHI], b1 = (uint)st[SC_B1];
    for (uint b = lid; b < 2048u; b += B) hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
#define SC_REFINE_ADD(xf)                                                                                       \
    {                                                                                                           \
        const uint k_ = sc_key(xf);                                                                             \
        if ((k_ >> 21) == b1 && k_ >= klo && k_ <= khi) atomic_inc(&hist[(k_ >> 10) & 0x7ffu]);                 \
    }
    SC_FOR_EACH(SC_REFINE_ADD)
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_flush(hist, 2048u, sc_hist(ctr) + SC_H2);
    if (!sc_last_group(ctr + SC_TICKET2, l_flag)) return; /* its barrier ends the flush's reads of hist */
    sc_take(sc_hist(ctr) + SC_H2, 2048u, l_hist);
    sc_find_rank(l_hist, 2048u, st[SC_R1], l_tmp, l_res);
    if (lid == 0) {
        st[SC_B2] = l_res[0];
        st[SC_R2] = l_res[1];
    }
}

/* One work-item of the finish kernel's last group: the median from the level-3 bin, then either the result
 * (nothing removed, or the final measurement) or the next round's key interval. */
void sc_decide(__global ulong *st, volatile __global uint *vctr, __local const ulong *hist, uint prefix, uint b3, ulong r3,
               uint next, double kappa, uint max_iterations)
{
    const uint kabove = vctr[SC_KABOVE];
    vctr[SC_KABOVE] = 0xffffffffu;
    const ulong cnt = st[SC_N];
    const uint vlo = (prefix << 10) | b3;
    double median = sc_value(vlo);
    if ((cnt & 1ul) == 0) {
        const uint vhi = r3 + 1ul < hist[b3] ? vlo : next != 0xffffffffu ? (prefix << 10) | next : kabove;
        median = (median + sc_value(vhi)) / 2.0;
    }
    const uint klo = (uint)st[SC_KLO], khi = (uint)st[SC_KHI], kmin = (uint)st[SC_KMIN], kmax = (uint)st[SC_KMAX];
    double mean = as_double(st[SC_MEAN]);
    double std = sqrt(as_double(st[SC_M2]) / (double)cnt);
    if (kmin == SC_KEY_NEG_INF || kmax == SC_KEY_POS_INF) mean = std = NAN; /* NumPy: an infinity makes std NaN */
    const ulong round = st[SC_ROUND];
    if (st[SC_FINAL]) { /* max_iterations passes made: this was the measurement of the final set */
        sc_result(st, cnt, median, mean, std, round, 0);
        return;
    }
    const double t = kappa * std, lo = median - t, hi = median + t;
    const uint nlo = sc_first_above(lo), nhi = sc_last_below(hi);
    if (nlo <= kmin && kmax <= nhi) { /* nothing removed */
        sc_result(st, cnt, median, mean, std, round + 1, 1);
        return;
    }
    st[SC_KLO] = max(klo, nlo);
    st[SC_KHI] = min(khi, nhi);
    st[SC_ROUND] = round + 1;
    if (round + 1 >= max_iterations) st[SC_FINAL] = 1;
}

__kernel void sigma_clip_finish(__global const float *data, ulong n, __global ulong *st, __global uint *ctr,
                                double kappa, uint max_iterations)
{
    __local ulong l_hist[1024], l_tmp[SC_MAXB], l_res[2];
    __local uint l_next[1], l_flag[1];
    __local uint *hist = (__local uint *)l_hist; /* the group's 32-bit histogram; in the last group, the 64-bit one */
    if (st[SC_DONE]) return;
    const uint lid = get_local_id(0), B = get_local_size(0);
    const uint klo = (uint)st[SC_KLO], khi = (uint)st[SC_KHI];
    const uint prefix = ((uint)st[SC_B1] << 11) | (uint)st[SC_B2], top = (prefix << 10) | 0x3ffu;
    for (uint b = lid; b < 1024u; b += B) hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint above = 0xffffffffu;
#define SC_FINISH_ADD(xf)                                                                                       \
    {                                                                                                           \
        const uint k_ = sc_key(xf);                                                                             \
        if (k_ >= klo && k_ <= khi) {                                                                           \
            if ((k_ >> 10) == prefix) atomic_inc(&hist[k_ & 0x3ffu]);                                           \
            else if (k_ > top) above = min(above, k_);                                                          \
        }                                                                                                       \
    }
    SC_FOR_EACH(SC_FINISH_ADD)
    l_tmp[lid] = above;
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_flush(hist, 1024u, sc_hist(ctr) + SC_H3);
    for (uint s = B / 2; s > 0; s >>= 1) {
        if (lid < s) l_tmp[lid] = min(l_tmp[lid], l_tmp[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && l_tmp[0] != 0xffffffffu) atomic_min(ctr + SC_KABOVE, (uint)l_tmp[0]);
    if (!sc_last_group(ctr + SC_TICKET3, l_flag)) return;

    sc_take(sc_hist(ctr) + SC_H3, 1024u, l_hist);
    volatile __global uint *vctr = ctr;
    sc_find_rank(l_hist, 1024u, st[SC_R2], l_tmp, l_res);
    const uint b3 = (uint)l_res[0];
    const ulong r3 = l_res[1];
    /* the next non-empty level-3 bin, for the upper median of an even count */
    if (lid == 0) l_next[0] = 0xffffffffu;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = b3 + 1u + lid; b < 1024u; b += B)
        if (l_hist[b]) atomic_min(&l_next[0], b);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) sc_decide(st, vctr, l_hist, prefix, b3, r3, l_next[0], kappa, max_iterations);
}

/* ---- values spread over several parts (devices, buffers): sigma_clip_parts.c drives these -----------------------
 * The host runs the loop and combines the parts between kernels, so that the result's bits depend only on the values
 * and the chunk boundaries, never on the launch shape or the split into parts:
 *   sigma_clip_parts_stats   per chunk of `chunk` values (from the part's start), the kept values' (count, mean, M2)
 *                            in one fixed order: work-item t of a group of exactly SC_MAXB takes the chunk's values
 *                            t, t + 256, ... in increasing order (shifted sums as sigma_clip_stats), then sc_chan
 *                            combines the 256 triples in the tree order h = 128, ..., 1. Groups take chunks
 *                            grid-stride. Also the kept keys' min and max, the counts in the level-1 bins of klo and
 *                            khi, and with `build` the level-1 histogram of every kept value (round 0: all non-NaN);
 *   sigma_clip_parts_refine  level-2 histogram (bits 20..10) of the kept values in level-1 bin b1;
 *   sigma_clip_parts_finish  level-3 histogram (bits 9..0) of the kept values with key >> 10 == prefix, and the
 *                            smallest kept key above that bucket.
 * Histograms are integers (64-bit global atomics: any order gives the same sums). `scr` is the part's stream's
 * scratch, offsets in 64-bit words: the part's chunk records at `rec`, then two words per work-group of the stats
 * kernel (its smallest kept key << 32 | its largest, ~0u << 32 when it kept none; its counts blo << 32 | bhi, which
 * fit: sigma_clip_parts.c gives a group at most 2^31 values); `slot`: one word per work-group of the finish kernel
 * (its smallest kept key above the bucket, ~0u when none). Words per group, combined by the host, rather than global
 * atomic_min/atomic_max: fewer reads, and Oclgrind reports those atomics as writing uninitialised values to memory
 * the host wrote. */
#define SCP_UNROLL 8 /* loads in flight per work-item in the stats kernel: 8 coalesced 4-byte loads */

/* One value of the work-item's lane into its shifted sums, with an explicit fma so that every backend and the host's
 * C round it the same way. */
#define SCP_STATS_ADD(xf) SC_STATS_ADD_SQ(xf, s2 = fma(d_, d_, s2))

__kernel void sigma_clip_parts_stats(__global const float *data, ulong n, ulong chunk, __global ulong *scr, ulong rec,
                                     ulong h1, uint klo, uint khi, uint build)
{
    __local uint hist[2048], l_red[4];
    __local ulong l_n[SC_MAXB];
    __local double l_mean[SC_MAXB], l_m2[SC_MAXB];
    const uint lid = get_local_id(0), blo_bin = klo >> 21, bhi_bin = khi >> 21;
    if (build)
        for (uint b = lid; b < 2048u; b += SC_MAXB) hist[b] = 0u;
    if (lid == 0) {
        l_red[0] = 0xffffffffu;
        l_red[1] = 0u;
        l_red[2] = 0u;
        l_red[3] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint kmin = 0xffffffffu, kmax = 0u, blo = 0u, bhi = 0u;
    const ulong nchunks = (n + chunk - 1) / chunk;
    for (ulong c = get_group_id(0); c < nchunks; c += get_num_groups(0)) {
        __global const float *x = data + c * chunk;
        const ulong len = min(chunk, n - c * chunk);
        uint cnt = 0;
        double K = 0.0, s1 = 0.0, s2 = 0.0;
        ulong i = lid;
        for (; i + (SCP_UNROLL - 1) * SC_MAXB < len; i += SCP_UNROLL * SC_MAXB) {
            float v[SCP_UNROLL];
            for (uint j = 0; j < SCP_UNROLL; j++) v[j] = x[i + j * SC_MAXB];
            for (uint j = 0; j < SCP_UNROLL; j++) SCP_STATS_ADD(v[j])
        }
        for (; i < len; i += SC_MAXB) SCP_STATS_ADD(x[i])
        l_n[lid] = cnt;
        l_mean[lid] = cnt ? K + s1 / (double)cnt : 0.0;
        l_m2[lid] = cnt ? fmax(s2 - s1 * s1 / (double)cnt, 0.0) : 0.0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint h = SC_MAXB / 2; h > 0; h >>= 1) {
            if (lid < h) {
                ulong na = l_n[lid];
                double ma = l_mean[lid], m2a = l_m2[lid];
                sc_chan(&na, &ma, &m2a, l_n[lid + h], l_mean[lid + h], l_m2[lid + h]);
                l_n[lid] = na;
                l_mean[lid] = ma;
                l_m2[lid] = m2a;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) {
            __global ulong *r = scr + rec + 3 * c;
            r[0] = l_n[0];
            r[1] = as_ulong(l_mean[0]);
            r[2] = as_ulong(l_m2[0]);
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* index 0 is read before the next chunk writes it */
    }
    if (kmin != 0xffffffffu) {
        atomic_min(&l_red[0], kmin);
        atomic_max(&l_red[1], kmax);
    }
    if (blo) atomic_add(&l_red[2], blo);
    if (bhi) atomic_add(&l_red[3], bhi);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (build) sc_flush(hist, 2048u, scr + h1);
    if (lid == 0) {
        __global ulong *w = scr + rec + 3 * nchunks + 2 * get_group_id(0);
        w[0] = ((ulong)l_red[0] << 32) | l_red[1];
        w[1] = ((ulong)l_red[2] << 32) | l_red[3];
    }
}

__kernel void sigma_clip_parts_refine(__global const float *data, ulong n, __global ulong *scr, ulong h2, uint klo,
                                      uint khi, uint b1)
{
    __local uint hist[2048];
    const uint lid = get_local_id(0), B = get_local_size(0);
    for (uint b = lid; b < 2048u; b += B) hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
#define SCP_REFINE_ADD(xf)                                                                                      \
    {                                                                                                           \
        const uint k_ = sc_key(xf);                                                                             \
        if ((k_ >> 21) == b1 && k_ >= klo && k_ <= khi) atomic_inc(&hist[(k_ >> 10) & 0x7ffu]);                 \
    }
    SC_FOR_EACH(SCP_REFINE_ADD)
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_flush(hist, 2048u, scr + h2);
}

__kernel void sigma_clip_parts_finish(__global const float *data, ulong n, __global ulong *scr, ulong h3, ulong slot,
                                      uint klo, uint khi, uint prefix)
{
    __local uint hist[1024], l_above[1];
    const uint lid = get_local_id(0), B = get_local_size(0), top = (prefix << 10) | 0x3ffu;
    for (uint b = lid; b < 1024u; b += B) hist[b] = 0u;
    if (lid == 0) l_above[0] = 0xffffffffu;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint above = 0xffffffffu;
    SC_FOR_EACH(SC_FINISH_ADD) /* sigma_clip_finish's: the same names in scope */
    if (above != 0xffffffffu) atomic_min(&l_above[0], above);
    barrier(CLK_LOCAL_MEM_FENCE);
    sc_flush(hist, 1024u, scr + h3);
    if (lid == 0) scr[slot + get_group_id(0)] = l_above[0];
}

#endif
