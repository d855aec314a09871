// κ-σ clipping with the data left in place: the CUDA twin of sigma_clip.cl (read its header comment first; the
// kernels, their parameters, the state layout in sigma_clip_state.h and the algorithm are the same).
// Per round: sigma_clip_stats (count/mean/M2/min/max of the kept keys, level-1 bin of the median),
// sigma_clip_refine (level-2 bin), sigma_clip_finish (level-3 bin, median, bounds, next interval or result).
// Counts of values are 64-bit wherever they can pass a work-group's share (global histograms, totals, ranks);
// the per-thread counts and shared-memory histograms stay 32-bit on the hot path.
#include "../common/gpuws_cuda.cuh"
#include "sigma_clip_state.h"

#include <cmath>

namespace
{

typedef unsigned long long u64;

__device__ __forceinline__ unsigned sc_key(float f)
{
    const unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ double sc_value(unsigned k)
{
    return (double)__uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__device__ __forceinline__ double bits_f64(u64 w) { return __longlong_as_double((long long)w); }
__device__ __forceinline__ u64 f64_bits(double d) { return (u64)__double_as_longlong(d); }

// Smallest non-NaN key whose value is > lo (SC_KEY_POS_INF + 1 when none; a NaN bound has none).
__device__ unsigned sc_first_above(double lo)
{
    if (!(sc_value(SC_KEY_POS_INF) > lo)) return SC_KEY_POS_INF + 1u;
    unsigned a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const unsigned m = a + (b - a) / 2u;
        if (sc_value(m) > lo) b = m;
        else a = m + 1u;
    }
    return a;
}

// Largest non-NaN key whose value is < hi (SC_KEY_NEG_INF - 1 when none).
__device__ unsigned sc_last_below(double hi)
{
    if (!(sc_value(SC_KEY_NEG_INF) < hi)) return SC_KEY_NEG_INF - 1u;
    unsigned a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const unsigned m = a + (b - a + 1u) / 2u;
        if (sc_value(m) < hi) a = m;
        else b = m - 1u;
    }
    return a;
}

// Chan et al.'s pairwise update of (count, mean, M2).
__device__ __forceinline__ void sc_chan(u64 &na, double &ma, double &m2a, u64 nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (na == 0) {
        na = nb;
        ma = mb;
        m2a = m2b;
        return;
    }
    const u64 n = na + nb;
    const double d = mb - ma, f = (double)nb / (double)n;
    ma += d * f;
    m2a += m2b + d * d * (double)na * f;
    na = n;
}

// Every thread of the block: the bin of cnt[0..nbins) holding rank `rank` -> res[0], the rank inside it -> res[1].
__device__ void sc_find_rank(const u64 *cnt, unsigned nbins, u64 rank, u64 *tmp, u64 *res)
{
    const unsigned lid = threadIdx.x, B = blockDim.x, per = nbins / B;
    u64 s = 0;
    for (unsigned j = 0; j < per; j++) s += cnt[lid * per + j];
    tmp[lid] = s;
    __syncthreads();
    for (unsigned d = 1; d < B; d <<= 1) {
        const u64 v = lid >= d ? tmp[lid - d] : 0ull;
        __syncthreads();
        tmp[lid] += v;
        __syncthreads();
    }
    const u64 incl = tmp[lid];
    if (rank >= incl - s && rank < incl) {
        u64 c = incl - s;
        for (unsigned j = 0; j < per; j++) {
            const unsigned b = lid * per + j;
            if (rank < c + cnt[b]) {
                res[0] = b;
                res[1] = rank - c;
                break;
            }
            c += cnt[b];
        }
    }
    __syncthreads();
}

// Fence this thread's global writes, then draw a ticket; true in every thread of the last block.
__device__ bool sc_last_block(unsigned *ticket, unsigned *flag)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) flag[0] = atomicAdd(ticket, 1u) == gridDim.x - 1u;
    __syncthreads();
    const bool last = flag[0] != 0;
    if (last) {
        __threadfence(); // acquire: the other blocks' partials are read after this
        if (threadIdx.x == 0) *ticket = 0u;
    }
    return last;
}

// The 64-bit global histograms in the counter buffer (sigma_clip_state.h).
__device__ __forceinline__ u64 *sc_hist(unsigned *ctr) { return reinterpret_cast<u64 *>(ctr); }

// Adds the block's 32-bit shared histogram into a 64-bit global one (non-zero bins only).
__device__ void sc_flush(const unsigned *h, unsigned nbins, u64 *g)
{
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x)
        if (h[b]) atomicAdd(&g[b], (u64)h[b]);
}

// Copies a global histogram (written by other blocks' atomics: read past L1) into shared memory and clears it.
__device__ void sc_take(u64 *g, unsigned nbins, u64 *h)
{
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x) {
        h[b] = __ldcg(g + b);
        g[b] = 0ull;
    }
    __syncthreads();
}

__device__ void sc_result(u64 *st, u64 n, double median, double mean, double std, u64 iterations, u64 converged)
{
    st[SC_RES_N] = n;
    st[SC_RES_MEDIAN] = f64_bits(median);
    st[SC_RES_MEAN] = f64_bits(mean);
    st[SC_RES_STD] = f64_bits(std);
    st[SC_RES_ITER] = iterations;
    st[SC_RES_CONV] = converged;
    st[SC_DONE] = 1;
}

// One thread of the finish kernel's last block: the median from the level-3 bin, then the result or the next
// round's key interval. The bounds are m - κs and m + κs each rounded once, as NumPy computes them: no FMA.
__device__ void sc_decide(u64 *st, unsigned *ctr, const u64 *hist, unsigned prefix, unsigned b3, u64 r3, unsigned next,
                          double kappa, unsigned max_iterations)
{
    const unsigned kabove = __ldcg(ctr + SC_KABOVE);
    ctr[SC_KABOVE] = 0xffffffffu;
    const u64 cnt = st[SC_N];
    const unsigned vlo = (prefix << 10) | b3;
    double median = sc_value(vlo);
    if ((cnt & 1ull) == 0) {
        const unsigned vhi = r3 + 1ull < hist[b3] ? vlo : next != 0xffffffffu ? (prefix << 10) | next : kabove;
        median = __dmul_rn(__dadd_rn(median, sc_value(vhi)), 0.5);
    }
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI], kmin = (unsigned)st[SC_KMIN],
                   kmax = (unsigned)st[SC_KMAX];
    double mean = bits_f64(st[SC_MEAN]);
    double std = sqrt(bits_f64(st[SC_M2]) / (double)cnt);
    if (kmin == SC_KEY_NEG_INF || kmax == SC_KEY_POS_INF) mean = std = NAN; // NumPy: an infinity makes std NaN
    const u64 round = st[SC_ROUND];
    if (st[SC_FINAL]) { // max_iterations passes made: this was the measurement of the final set
        sc_result(st, cnt, median, mean, std, round, 0);
        return;
    }
    const double t = __dmul_rn(kappa, std), lo = __dsub_rn(median, t), hi = __dadd_rn(median, t);
    const unsigned nlo = sc_first_above(lo), nhi = sc_last_below(hi);
    if (nlo <= kmin && kmax <= nhi) { // nothing removed
        sc_result(st, cnt, median, mean, std, round + 1, 1);
        return;
    }
    st[SC_KLO] = max(klo, nlo);
    st[SC_KHI] = min(khi, nhi);
    st[SC_ROUND] = round + 1;
    if (round + 1 >= max_iterations) st[SC_FINAL] = 1;
}

// Grid-stride over the data, 16-byte loads, two in flight per thread; f(x) for every value.
template <typename F> __device__ __forceinline__ void sc_for_each(const float *__restrict__ data, u64 n, F f)
{
    const u64 nv = n >> 2, stride = (u64)gridDim.x * blockDim.x;
    const float4 *v = reinterpret_cast<const float4 *>(data); // cudaMalloc'd buffers are 256-byte aligned
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < nv; i += 2 * stride) {
        const float4 a = __ldg(v + i), b = __ldg(v + i + stride);
        f(a.x);
        f(a.y);
        f(a.z);
        f(a.w);
        f(b.x);
        f(b.y);
        f(b.z);
        f(b.w);
    }
    if (i < nv) {
        const float4 a = __ldg(v + i);
        f(a.x);
        f(a.y);
        f(a.z);
        f(a.w);
    }
    for (u64 j = (nv << 2) + (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) f(__ldg(data + j));
}

// The stats kernel's shared memory in two phases that share the space, so the block stays as small as with 32-bit
// counts (occupancy): every block's 32-bit histogram and (count, mean, M2, min, max, blo, bhi) tree; then, in the
// last block once the totals are read, the kept set's 64-bit level-1 histogram.
struct StatsTree {
    unsigned hist[2048];
    double mean[SC_MAXB], m2[SC_MAXB];
    u64 n[SC_MAXB], blo[SC_MAXB], bhi[SC_MAXB];
    unsigned kmin[SC_MAXB], kmax[SC_MAXB];
};
struct StatsRank {
    u64 hist[2048], tmp[SC_MAXB];
};
struct StatsShared {
    union {
        StatsTree t;
        StatsRank r;
    };
    u64 res[2];
    unsigned flag;
};

// The block's (count, mean, M2, min, max, blo, bhi) tree, result in index 0.
__device__ void sc_stats_tree(StatsShared &s)
{
    const unsigned lid = threadIdx.x;
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (lid < h) {
            u64 na = s.t.n[lid];
            double ma = s.t.mean[lid], m2a = s.t.m2[lid];
            sc_chan(na, ma, m2a, s.t.n[lid + h], s.t.mean[lid + h], s.t.m2[lid + h]);
            s.t.n[lid] = na;
            s.t.mean[lid] = ma;
            s.t.m2[lid] = m2a;
            s.t.kmin[lid] = min(s.t.kmin[lid], s.t.kmin[lid + h]);
            s.t.kmax[lid] = max(s.t.kmax[lid], s.t.kmax[lid + h]);
            s.t.blo[lid] += s.t.blo[lid + h];
            s.t.bhi[lid] += s.t.bhi[lid + h];
        }
        __syncthreads();
    }
}

} // namespace

extern "C" __global__ void sigma_clip_init(u64 *st, unsigned *ctr)
{
    for (unsigned i = threadIdx.x; i < SC_STATE_WORDS; i += blockDim.x)
        st[i] = i == SC_KLO ? SC_KEY_NEG_INF : i == SC_KHI ? SC_KEY_POS_INF : 0ull;
    for (unsigned i = threadIdx.x; i < 2u * SC_H1; i += blockDim.x) ctr[i] = i == SC_KABOVE ? 0xffffffffu : 0u;
    for (unsigned i = SC_H1 + threadIdx.x; i < SC_CTR_WORDS; i += blockDim.x) sc_hist(ctr)[i] = 0ull;
}

// At least 5 blocks of 256 per SM, as with 32-bit counts (48 registers): the last block's 64-bit combination would
// take the kernel to 54 registers (4 blocks per SM) for code that runs once per launch. The data loop alone needs
// 44; ptxas fits the rest with a 16-byte spill on sm_90.
extern "C" __global__ void __launch_bounds__(SC_MAXB, 5)
    sigma_clip_stats(const float *data, u64 n, u64 *st, unsigned *ctr)
{
    __shared__ StatsShared s;
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI], blo_bin = klo >> 21, bhi_bin = khi >> 21;
    const bool build = st[SC_ROUND] == 0 && st[SC_FINAL] == 0;
    for (unsigned b = lid; b < 2048u; b += B) s.t.hist[b] = 0u;
    __syncthreads();

    unsigned cnt = 0, kmin = 0xffffffffu, kmax = 0u, blo = 0u, bhi = 0u;
    double K = 0.0, s1 = 0.0, s2 = 0.0;
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if (k >= klo && k <= khi) {
            const double xd = (double)x;
            if (cnt == 0) K = xd; // shift: the thread's first kept value
            const double d = xd - K;
            cnt++;
            s1 += d;
            s2 = fma(d, d, s2);
            kmin = min(kmin, k);
            kmax = max(kmax, k);
            blo += (k >> 21) == blo_bin;
            bhi += (k >> 21) == bhi_bin;
            if (build) atomicAdd(&s.t.hist[k >> 21], 1u);
        }
    });
    s.t.n[lid] = cnt;
    s.t.mean[lid] = cnt ? K + s1 / (double)cnt : 0.0;
    s.t.m2[lid] = cnt ? fmax(s2 - s1 * s1 / (double)cnt, 0.0) : 0.0;
    s.t.kmin[lid] = kmin;
    s.t.kmax[lid] = kmax;
    s.t.blo[lid] = blo;
    s.t.bhi[lid] = bhi;
    __syncthreads();
    if (build) sc_flush(s.t.hist, 2048u, sc_hist(ctr) + SC_H1);
    sc_stats_tree(s);
    u64 *part = st + SC_STATE_WORDS;
    if (lid == 0) {
        u64 *p = part + (u64)blockIdx.x * SC_PART_WORDS;
        p[0] = s.t.n[0];
        p[1] = f64_bits(s.t.mean[0]);
        p[2] = f64_bits(s.t.m2[0]);
        p[3] = s.t.kmin[0];
        p[4] = s.t.kmax[0];
        p[5] = s.t.blo[0];
        p[6] = s.t.bhi[0];
    }
    if (!sc_last_block(ctr + SC_TICKET1, &s.flag)) return;

    // The last block: combine the partials in block order (deterministic), then find the median's level-1 bin.
    u64 na = 0, bl = 0, bh = 0;
    unsigned kmn = 0xffffffffu, kmx = 0u;
    double ma = 0.0, m2a = 0.0;
    for (unsigned g = lid; g < gridDim.x; g += B) {
        const u64 *p = part + (u64)g * SC_PART_WORDS;
        sc_chan(na, ma, m2a, __ldcg(p), bits_f64(__ldcg(p + 1)), bits_f64(__ldcg(p + 2)));
        kmn = min(kmn, (unsigned)__ldcg(p + 3));
        kmx = max(kmx, (unsigned)__ldcg(p + 4));
        bl += __ldcg(p + 5);
        bh += __ldcg(p + 6);
    }
    __syncthreads(); // index 0 of the block's own tree was read above by thread 0 only; all done before reuse
    s.t.n[lid] = na;
    s.t.mean[lid] = ma;
    s.t.m2[lid] = m2a;
    s.t.kmin[lid] = kmn;
    s.t.kmax[lid] = kmx;
    s.t.blo[lid] = bl;
    s.t.bhi[lid] = bh;
    __syncthreads();
    sc_stats_tree(s);
    const u64 total = s.t.n[0];
    if (lid == 0) {
        st[SC_N] = total;
        st[SC_MEAN] = f64_bits(s.t.mean[0]);
        st[SC_M2] = f64_bits(s.t.m2[0]);
        st[SC_KMIN] = s.t.kmin[0];
        st[SC_KMAX] = s.t.kmax[0];
        if (build) st[SC_N0] = total;
        if (total == 0) { // nothing left: NumPy's statistics of an empty array, nothing more to remove
            const bool fin = st[SC_FINAL] != 0;
            sc_result(st, 0, NAN, NAN, NAN, st[SC_ROUND] + (fin ? 0 : 1), fin ? 0 : 1);
        }
    }
    if (total == 0) return;
    // The kept set's level-1 histogram: the full one strictly inside (klo, khi), the kept counts at the ends.
    const u64 bl0 = s.t.blo[0], bh0 = s.t.bhi[0];
    __syncthreads(); // the tree's results are read: its space becomes the 64-bit histogram
    const u64 *h1 = sc_hist(ctr) + SC_H1;
    for (unsigned b = lid; b < 2048u; b += B)
        s.r.hist[b] = b < blo_bin || b > bhi_bin ? 0ull
                      : blo_bin == bhi_bin       ? total
                      : b == blo_bin             ? bl0
                      : b == bhi_bin             ? bh0
                                                 : __ldcg(h1 + b);
    __syncthreads();
    sc_find_rank(s.r.hist, 2048u, (total - 1ull) / 2ull, s.r.tmp, s.res);
    if (lid == 0) {
        st[SC_B1] = s.res[0];
        st[SC_R1] = s.res[1];
    }
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_refine(const float *data, u64 n, u64 *st, unsigned *ctr)
{
    __shared__ union { // the block's 32-bit histogram; in the last block, the global 64-bit one
        unsigned h32[2048];
        u64 h64[2048];
    } hist;
    __shared__ u64 tmp[SC_MAXB], res[2];
    __shared__ unsigned flag;
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI], b1 = (unsigned)st[SC_B1];
    for (unsigned b = lid; b < 2048u; b += B) hist.h32[b] = 0u;
    __syncthreads();
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if ((k >> 21) == b1 && k >= klo && k <= khi) atomicAdd(&hist.h32[(k >> 10) & 0x7ffu], 1u);
    });
    __syncthreads();
    sc_flush(hist.h32, 2048u, sc_hist(ctr) + SC_H2);
    if (!sc_last_block(ctr + SC_TICKET2, &flag)) return; // its barrier ends the flush's reads of h32
    sc_take(sc_hist(ctr) + SC_H2, 2048u, hist.h64);
    sc_find_rank(hist.h64, 2048u, st[SC_R1], tmp, res);
    if (lid == 0) {
        st[SC_B2] = res[0];
        st[SC_R2] = res[1];
    }
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_finish(const float *data, u64 n, u64 *st, unsigned *ctr, double kappa, unsigned max_iterations)
{
    __shared__ union { // the block's 32-bit histogram; in the last block, the global 64-bit one
        unsigned h32[1024];
        u64 h64[1024];
    } hist;
    __shared__ u64 tmp[SC_MAXB], res[2];
    __shared__ unsigned next, flag;
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI];
    const unsigned prefix = ((unsigned)st[SC_B1] << 11) | (unsigned)st[SC_B2], top = (prefix << 10) | 0x3ffu;
    for (unsigned b = lid; b < 1024u; b += B) hist.h32[b] = 0u;
    __syncthreads();
    unsigned above = 0xffffffffu;
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if (k >= klo && k <= khi) {
            if ((k >> 10) == prefix) atomicAdd(&hist.h32[k & 0x3ffu], 1u);
            else if (k > top) above = min(above, k);
        }
    });
    tmp[lid] = above;
    __syncthreads();
    sc_flush(hist.h32, 1024u, sc_hist(ctr) + SC_H3);
    for (unsigned h = B / 2; h > 0; h >>= 1) {
        if (lid < h) tmp[lid] = min(tmp[lid], tmp[lid + h]);
        __syncthreads();
    }
    if (lid == 0 && tmp[0] != 0xffffffffu) atomicMin(ctr + SC_KABOVE, (unsigned)tmp[0]);
    if (!sc_last_block(ctr + SC_TICKET3, &flag)) return;

    sc_take(sc_hist(ctr) + SC_H3, 1024u, hist.h64);
    sc_find_rank(hist.h64, 1024u, st[SC_R2], tmp, res);
    const unsigned b3 = (unsigned)res[0];
    const u64 r3 = res[1];
    // the next non-empty level-3 bin, for the upper median of an even count
    if (lid == 0) next = 0xffffffffu;
    __syncthreads();
    for (unsigned b = b3 + 1u + lid; b < 1024u; b += B)
        if (hist.h64[b]) atomicMin(&next, b);
    __syncthreads();
    if (lid == 0) sc_decide(st, ctr, hist.h64, prefix, b3, r3, next, kappa, max_iterations);
}

// ---- values spread over several parts (devices, buffers): sigma_clip_parts.c drives these ----------------------
// The twins of the sigma_clip_parts_* kernels in sigma_clip.cl (read the comment there): per-chunk (count, mean, M2)
// in one fixed order, whatever the grid, and integer histograms; the host runs the loop and combines the parts.

namespace
{

constexpr unsigned SCP_UNROLL = 8; // loads in flight per thread in the stats kernel: 8 coalesced 4-byte loads

// Chan's update with every product and sum rounded on its own: nvcc would fuse d * f into the add (sc_chan above
// may be contracted), and the host's C and the OpenCL twin (FP_CONTRACT OFF) round each operation.
__device__ __forceinline__ void scp_chan(u64 &na, double &ma, double &m2a, u64 nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (na == 0) {
        na = nb;
        ma = mb;
        m2a = m2b;
        return;
    }
    const u64 n = na + nb;
    const double d = __dsub_rn(mb, ma), f = __ddiv_rn((double)nb, (double)n);
    ma = __dadd_rn(ma, __dmul_rn(d, f));
    m2a = __dadd_rn(m2a, __dadd_rn(m2b, __dmul_rn(__dmul_rn(__dmul_rn(d, d), (double)na), f)));
    na = n;
}

} // namespace

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_parts_stats(const float *data, u64 n, u64 chunk, u64 *scr, u64 rec, u64 h1, unsigned klo, unsigned khi,
                           unsigned build)
{
    __shared__ unsigned hist[2048], red[4];
    __shared__ u64 l_n[SC_MAXB];
    __shared__ double l_mean[SC_MAXB], l_m2[SC_MAXB];
    const unsigned lid = threadIdx.x, blo_bin = klo >> 21, bhi_bin = khi >> 21;
    if (build)
        for (unsigned b = lid; b < 2048u; b += SC_MAXB) hist[b] = 0u;
    if (lid == 0) {
        red[0] = 0xffffffffu;
        red[1] = 0u;
        red[2] = 0u;
        red[3] = 0u;
    }
    __syncthreads();
    unsigned kmin = 0xffffffffu, kmax = 0u, blo = 0u, bhi = 0u;
    const u64 nchunks = (n + chunk - 1) / chunk;
    for (u64 c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const float *__restrict__ x = data + c * chunk;
        const u64 len = min(chunk, n - c * chunk);
        unsigned cnt = 0;
        double K = 0.0, s1 = 0.0, s2 = 0.0;
        auto add = [&](float xf) {
            const unsigned k = sc_key(xf);
            if (k >= klo && k <= khi) {
                const double xd = (double)xf;
                if (cnt == 0) K = xd;
                const double d = __dsub_rn(xd, K);
                cnt++;
                s1 = __dadd_rn(s1, d);
                s2 = fma(d, d, s2);
                kmin = min(kmin, k);
                kmax = max(kmax, k);
                blo += (k >> 21) == blo_bin;
                bhi += (k >> 21) == bhi_bin;
                if (build) atomicAdd(&hist[k >> 21], 1u);
            }
        };
        u64 i = lid;
        for (; i + (SCP_UNROLL - 1) * SC_MAXB < len; i += SCP_UNROLL * SC_MAXB) {
            float v[SCP_UNROLL];
#pragma unroll
            for (unsigned j = 0; j < SCP_UNROLL; j++) v[j] = __ldg(x + i + j * SC_MAXB);
#pragma unroll
            for (unsigned j = 0; j < SCP_UNROLL; j++) add(v[j]);
        }
        for (; i < len; i += SC_MAXB) add(__ldg(x + i));
        l_n[lid] = cnt;
        l_mean[lid] = cnt ? __dadd_rn(K, __ddiv_rn(s1, (double)cnt)) : 0.0;
        l_m2[lid] = cnt ? fmax(__dsub_rn(s2, __ddiv_rn(__dmul_rn(s1, s1), (double)cnt)), 0.0) : 0.0;
        __syncthreads();
        for (unsigned h = SC_MAXB / 2; h > 0; h >>= 1) {
            if (lid < h) {
                u64 na = l_n[lid];
                double ma = l_mean[lid], m2a = l_m2[lid];
                scp_chan(na, ma, m2a, l_n[lid + h], l_mean[lid + h], l_m2[lid + h]);
                l_n[lid] = na;
                l_mean[lid] = ma;
                l_m2[lid] = m2a;
            }
            __syncthreads();
        }
        if (lid == 0) {
            u64 *r = scr + rec + 3 * c;
            r[0] = l_n[0];
            r[1] = f64_bits(l_mean[0]);
            r[2] = f64_bits(l_m2[0]);
        }
        __syncthreads(); // index 0 is read before the next chunk writes it
    }
    if (kmin != 0xffffffffu) {
        atomicMin(&red[0], kmin);
        atomicMax(&red[1], kmax);
    }
    if (blo) atomicAdd(&red[2], blo);
    if (bhi) atomicAdd(&red[3], bhi);
    __syncthreads();
    if (build) sc_flush(hist, 2048u, scr + h1);
    if (lid == 0) {
        u64 *w = scr + rec + 3 * nchunks + 2 * (u64)blockIdx.x;
        w[0] = ((u64)red[0] << 32) | red[1];
        w[1] = ((u64)red[2] << 32) | red[3];
    }
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_parts_refine(const float *data, u64 n, u64 *scr, u64 h2, unsigned klo, unsigned khi, unsigned b1)
{
    __shared__ unsigned hist[2048];
    for (unsigned b = threadIdx.x; b < 2048u; b += blockDim.x) hist[b] = 0u;
    __syncthreads();
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if ((k >> 21) == b1 && k >= klo && k <= khi) atomicAdd(&hist[(k >> 10) & 0x7ffu], 1u);
    });
    __syncthreads();
    sc_flush(hist, 2048u, scr + h2);
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_parts_finish(const float *data, u64 n, u64 *scr, u64 h3, u64 slot, unsigned klo, unsigned khi,
                            unsigned prefix)
{
    __shared__ unsigned hist[1024], l_above;
    const unsigned top = (prefix << 10) | 0x3ffu;
    for (unsigned b = threadIdx.x; b < 1024u; b += blockDim.x) hist[b] = 0u;
    if (threadIdx.x == 0) l_above = 0xffffffffu;
    __syncthreads();
    unsigned above = 0xffffffffu;
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if (k >= klo && k <= khi) {
            if ((k >> 10) == prefix) atomicAdd(&hist[k & 0x3ffu], 1u);
            else if (k > top) above = min(above, k);
        }
    });
    if (above != 0xffffffffu) atomicMin(&l_above, above);
    __syncthreads();
    sc_flush(hist, 1024u, scr + h3);
    if (threadIdx.x == 0) scr[slot + blockIdx.x] = l_above;
}

GPUWS_CUDA_KERNELS(sigma_clip, GPUWS_CUDA_KERNEL(sigma_clip_init), GPUWS_CUDA_KERNEL(sigma_clip_stats),
                   GPUWS_CUDA_KERNEL(sigma_clip_refine), GPUWS_CUDA_KERNEL(sigma_clip_finish),
                   GPUWS_CUDA_KERNEL(sigma_clip_parts_stats), GPUWS_CUDA_KERNEL(sigma_clip_parts_refine),
                   GPUWS_CUDA_KERNEL(sigma_clip_parts_finish))
