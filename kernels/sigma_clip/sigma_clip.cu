// κ-σ clipping with the data left in place: the CUDA twin of sigma_clip.cl (read its header comment first; the
// kernels, their parameters, the state layout in sigma_clip_state.h and the algorithm are the same).
// Per round: sigma_clip_stats (count/mean/M2/min/max of the kept keys, level-1 bin of the median),
// sigma_clip_refine (level-2 bin), sigma_clip_finish (level-3 bin, median, bounds, next interval or result).
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
__device__ __forceinline__ void sc_chan(unsigned &na, double &ma, double &m2a, unsigned nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (na == 0) {
        na = nb;
        ma = mb;
        m2a = m2b;
        return;
    }
    const unsigned n = na + nb;
    const double d = mb - ma, f = (double)nb / (double)n;
    ma += d * f;
    m2a += m2b + d * d * (double)na * f;
    na = n;
}

// Every thread of the block: the bin of cnt[0..nbins) holding rank `rank` -> res[0], the rank inside it -> res[1].
__device__ void sc_find_rank(const unsigned *cnt, unsigned nbins, unsigned rank, unsigned *tmp, unsigned *res)
{
    const unsigned lid = threadIdx.x, B = blockDim.x, per = nbins / B;
    unsigned s = 0;
    for (unsigned j = 0; j < per; j++) s += cnt[lid * per + j];
    tmp[lid] = s;
    __syncthreads();
    for (unsigned d = 1; d < B; d <<= 1) {
        const unsigned v = lid >= d ? tmp[lid - d] : 0u;
        __syncthreads();
        tmp[lid] += v;
        __syncthreads();
    }
    const unsigned incl = tmp[lid];
    if (rank >= incl - s && rank < incl) {
        unsigned c = incl - s;
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

__device__ void sc_flush(const unsigned *h, unsigned nbins, unsigned *g)
{
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x)
        if (h[b]) atomicAdd(&g[b], h[b]);
}

// Copies a global histogram (written by other blocks' atomics: read past L1) into shared memory and clears it.
__device__ void sc_take(unsigned *g, unsigned nbins, unsigned *h)
{
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x) {
        h[b] = __ldcg(g + b);
        g[b] = 0u;
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
__device__ void sc_decide(u64 *st, unsigned *ctr, const unsigned *hist, unsigned prefix, unsigned b3, unsigned r3,
                          unsigned next, double kappa, unsigned max_iterations)
{
    const unsigned kabove = __ldcg(ctr + SC_KABOVE);
    ctr[SC_KABOVE] = 0xffffffffu;
    const unsigned cnt = (unsigned)st[SC_N];
    const unsigned vlo = (prefix << 10) | b3;
    double median = sc_value(vlo);
    if ((cnt & 1u) == 0) {
        const unsigned vhi = r3 + 1u < hist[b3] ? vlo : next != 0xffffffffu ? (prefix << 10) | next : kabove;
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

struct StatsShared {
    unsigned hist[2048];
    double mean[SC_MAXB], m2[SC_MAXB];
    unsigned n[SC_MAXB], kmin[SC_MAXB], kmax[SC_MAXB], blo[SC_MAXB], bhi[SC_MAXB], res[2];
};

// The block's (count, mean, M2, min, max, blo, bhi) tree, result in index 0.
__device__ void sc_stats_tree(StatsShared &s)
{
    const unsigned lid = threadIdx.x;
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (lid < h) {
            unsigned na = s.n[lid];
            double ma = s.mean[lid], m2a = s.m2[lid];
            sc_chan(na, ma, m2a, s.n[lid + h], s.mean[lid + h], s.m2[lid + h]);
            s.n[lid] = na;
            s.mean[lid] = ma;
            s.m2[lid] = m2a;
            s.kmin[lid] = min(s.kmin[lid], s.kmin[lid + h]);
            s.kmax[lid] = max(s.kmax[lid], s.kmax[lid + h]);
            s.blo[lid] += s.blo[lid + h];
            s.bhi[lid] += s.bhi[lid + h];
        }
        __syncthreads();
    }
}

} // namespace

extern "C" __global__ void sigma_clip_init(u64 *st, unsigned *ctr)
{
    for (unsigned i = threadIdx.x; i < SC_STATE_WORDS; i += blockDim.x)
        st[i] = i == SC_KLO ? SC_KEY_NEG_INF : i == SC_KHI ? SC_KEY_POS_INF : 0ull;
    for (unsigned i = threadIdx.x; i < SC_CTR_WORDS; i += blockDim.x) ctr[i] = i == SC_KABOVE ? 0xffffffffu : 0u;
}

extern "C" __global__ void __launch_bounds__(SC_MAXB) sigma_clip_stats(const float *data, u64 n, u64 *st, unsigned *ctr)
{
    __shared__ StatsShared s;
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI], blo_bin = klo >> 21, bhi_bin = khi >> 21;
    const bool build = st[SC_ROUND] == 0 && st[SC_FINAL] == 0;
    for (unsigned b = lid; b < 2048u; b += B) s.hist[b] = 0u;
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
            if (build) atomicAdd(&s.hist[k >> 21], 1u);
        }
    });
    s.n[lid] = cnt;
    s.mean[lid] = cnt ? K + s1 / (double)cnt : 0.0;
    s.m2[lid] = cnt ? fmax(s2 - s1 * s1 / (double)cnt, 0.0) : 0.0;
    s.kmin[lid] = kmin;
    s.kmax[lid] = kmax;
    s.blo[lid] = blo;
    s.bhi[lid] = bhi;
    __syncthreads();
    if (build) sc_flush(s.hist, 2048u, ctr + SC_H1);
    sc_stats_tree(s);
    u64 *part = st + SC_STATE_WORDS;
    if (lid == 0) {
        u64 *p = part + (u64)blockIdx.x * SC_PART_WORDS;
        p[0] = s.n[0];
        p[1] = f64_bits(s.mean[0]);
        p[2] = f64_bits(s.m2[0]);
        p[3] = s.kmin[0];
        p[4] = s.kmax[0];
        p[5] = s.blo[0];
        p[6] = s.bhi[0];
    }
    if (!sc_last_block(ctr + SC_TICKET1, s.res)) return;

    // The last block: combine the partials in block order (deterministic), then find the median's level-1 bin.
    unsigned na = 0, kmn = 0xffffffffu, kmx = 0u, bl = 0u, bh = 0u;
    double ma = 0.0, m2a = 0.0;
    for (unsigned g = lid; g < gridDim.x; g += B) {
        const u64 *p = part + (u64)g * SC_PART_WORDS;
        sc_chan(na, ma, m2a, (unsigned)__ldcg(p), bits_f64(__ldcg(p + 1)), bits_f64(__ldcg(p + 2)));
        kmn = min(kmn, (unsigned)__ldcg(p + 3));
        kmx = max(kmx, (unsigned)__ldcg(p + 4));
        bl += (unsigned)__ldcg(p + 5);
        bh += (unsigned)__ldcg(p + 6);
    }
    __syncthreads(); // index 0 of the block's own tree was read above by thread 0 only; all done before reuse
    s.n[lid] = na;
    s.mean[lid] = ma;
    s.m2[lid] = m2a;
    s.kmin[lid] = kmn;
    s.kmax[lid] = kmx;
    s.blo[lid] = bl;
    s.bhi[lid] = bh;
    __syncthreads();
    sc_stats_tree(s);
    const unsigned total = s.n[0];
    if (lid == 0) {
        st[SC_N] = total;
        st[SC_MEAN] = f64_bits(s.mean[0]);
        st[SC_M2] = f64_bits(s.m2[0]);
        st[SC_KMIN] = s.kmin[0];
        st[SC_KMAX] = s.kmax[0];
        if (build) st[SC_N0] = total;
        if (total == 0) { // nothing left: NumPy's statistics of an empty array, nothing more to remove
            const bool fin = st[SC_FINAL] != 0;
            sc_result(st, 0, NAN, NAN, NAN, st[SC_ROUND] + (fin ? 0 : 1), fin ? 0 : 1);
        }
    }
    if (total == 0) return;
    // The kept set's level-1 histogram: the full one strictly inside (klo, khi), the kept counts at the ends.
    const unsigned bl0 = s.blo[0], bh0 = s.bhi[0];
    for (unsigned b = lid; b < 2048u; b += B)
        s.hist[b] = b < blo_bin || b > bhi_bin ? 0u
                    : blo_bin == bhi_bin       ? total
                    : b == blo_bin             ? bl0
                    : b == bhi_bin             ? bh0
                                               : __ldcg(ctr + SC_H1 + b);
    __syncthreads();
    sc_find_rank(s.hist, 2048u, (total - 1u) / 2u, s.kmin, s.res);
    if (lid == 0) {
        st[SC_B1] = s.res[0];
        st[SC_R1] = s.res[1];
    }
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_refine(const float *data, u64 n, u64 *st, unsigned *ctr)
{
    __shared__ unsigned hist[2048], tmp[SC_MAXB], res[2];
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI], b1 = (unsigned)st[SC_B1];
    for (unsigned b = lid; b < 2048u; b += B) hist[b] = 0u;
    __syncthreads();
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if ((k >> 21) == b1 && k >= klo && k <= khi) atomicAdd(&hist[(k >> 10) & 0x7ffu], 1u);
    });
    __syncthreads();
    sc_flush(hist, 2048u, ctr + SC_H2);
    if (!sc_last_block(ctr + SC_TICKET2, res)) return;
    sc_take(ctr + SC_H2, 2048u, hist);
    sc_find_rank(hist, 2048u, (unsigned)st[SC_R1], tmp, res);
    if (lid == 0) {
        st[SC_B2] = res[0];
        st[SC_R2] = res[1];
    }
}

extern "C" __global__ void __launch_bounds__(SC_MAXB)
    sigma_clip_finish(const float *data, u64 n, u64 *st, unsigned *ctr, double kappa, unsigned max_iterations)
{
    __shared__ unsigned hist[1024], tmp[SC_MAXB], res[2], next;
    if (st[SC_DONE]) return;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const unsigned klo = (unsigned)st[SC_KLO], khi = (unsigned)st[SC_KHI];
    const unsigned prefix = ((unsigned)st[SC_B1] << 11) | (unsigned)st[SC_B2], top = (prefix << 10) | 0x3ffu;
    for (unsigned b = lid; b < 1024u; b += B) hist[b] = 0u;
    __syncthreads();
    unsigned above = 0xffffffffu;
    sc_for_each(data, n, [&](float x) {
        const unsigned k = sc_key(x);
        if (k >= klo && k <= khi) {
            if ((k >> 10) == prefix) atomicAdd(&hist[k & 0x3ffu], 1u);
            else if (k > top) above = min(above, k);
        }
    });
    tmp[lid] = above;
    __syncthreads();
    sc_flush(hist, 1024u, ctr + SC_H3);
    for (unsigned h = B / 2; h > 0; h >>= 1) {
        if (lid < h) tmp[lid] = min(tmp[lid], tmp[lid + h]);
        __syncthreads();
    }
    if (lid == 0 && tmp[0] != 0xffffffffu) atomicMin(ctr + SC_KABOVE, tmp[0]);
    if (!sc_last_block(ctr + SC_TICKET3, res)) return;

    sc_take(ctr + SC_H3, 1024u, hist);
    sc_find_rank(hist, 1024u, (unsigned)st[SC_R2], tmp, res);
    const unsigned b3 = res[0], r3 = res[1];
    // the next non-empty level-3 bin, for the upper median of an even count
    if (lid == 0) next = 0xffffffffu;
    __syncthreads();
    for (unsigned b = b3 + 1u + lid; b < 1024u; b += B)
        if (hist[b]) atomicMin(&next, b);
    __syncthreads();
    if (lid == 0) sc_decide(st, ctr, hist, prefix, b3, r3, next, kappa, max_iterations);
}

GPUWS_CUDA_KERNELS(sigma_clip, GPUWS_CUDA_KERNEL(sigma_clip_init), GPUWS_CUDA_KERNEL(sigma_clip_stats),
                   GPUWS_CUDA_KERNEL(sigma_clip_refine), GPUWS_CUDA_KERNEL(sigma_clip_finish))
