// Per-label measurements: the CUDA twin of measure.cl (read its header comment first; kernels, parameters, record
// layout and algorithm are the same). Native f64 atomicAdd and 64-bit atomicMax (sm_60+) replace the
// compare-and-swap loops. The wide path (more than 2^32 pixels) instantiates the same accumulation with 64-bit rows,
// columns and width and a key of the value only (Pos = u64), as measure.cl's GPUWS_MEASURE_WIDE build.
#include "../common/gpuws_cuda.cuh"
#include "measure_layout.h"

#include <cmath>

namespace
{

typedef unsigned long long u64;
constexpr unsigned P = MEASURE_PIXELS;
constexpr unsigned MAXB = MEASURE_MAX_BLOCK;
constexpr unsigned JOIN_MAX = MEASURE_JOIN_MAX;

__device__ __forceinline__ unsigned m_okey(float x)
{
    if (isnan(x)) return 0xffffffffu;
    const unsigned u = __float_as_uint(x == 0.0f ? 0.0f : x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <typename T> __device__ __forceinline__ T from_bits(unsigned u);
template <> __device__ __forceinline__ int from_bits<int>(unsigned u) { return (int)u; }
template <> __device__ __forceinline__ float from_bits<float>(unsigned u) { return __uint_as_float(u); }

// v[j] = p[i + j] for j < 8 (0 past n): two 16-byte loads when all 8 are there (i is a multiple of 8: aligned).
template <typename T> __device__ __forceinline__ void load8(const T *__restrict__ p, u64 i, u64 n, T (&v)[P])
{
    if (i + P <= n) {
        const uint4 a = __ldg(reinterpret_cast<const uint4 *>(p + i)),
                    b = __ldg(reinterpret_cast<const uint4 *>(p + i) + 1);
        v[0] = from_bits<T>(a.x);
        v[1] = from_bits<T>(a.y);
        v[2] = from_bits<T>(a.z);
        v[3] = from_bits<T>(a.w);
        v[4] = from_bits<T>(b.x);
        v[5] = from_bits<T>(b.y);
        v[6] = from_bits<T>(b.z);
        v[7] = from_bits<T>(b.w);
    } else {
#pragma unroll
        for (unsigned j = 0; j < P; j++) v[j] = i + j < n ? __ldg(p + i + j) : T(0);
    }
}

struct Acc {
    double sd, sr, sc;
    unsigned cnt;
    u64 key;
};

__device__ __forceinline__ void m_flush(u64 *out, int label, const Acc &a)
{
    u64 *rec = out + (u64)(label - 1) * MEASURE_RECORD_WORDS;
    double *f = reinterpret_cast<double *>(rec);
    atomicAdd(f + 0, a.sd);
    atomicAdd(f + 1, a.sr);
    atomicAdd(f + 2, a.sc);
    atomicMax(rec + 3, a.key);
    atomicAdd(rec + 4, (u64)a.cnt);
}

struct Shared {
    int lab[2 * MAXB];
    double sd[2 * MAXB], sr[2 * MAXB], sc[2 * MAXB];
    unsigned cnt[2 * MAXB], seg[2 * MAXB];
    u64 key[2 * MAXB];
    unsigned joins;
};

// Segmented inclusive scan of the block's 2B runs; every run end flushes its total.
__device__ void m_scan_flush(Shared &s, u64 *out)
{
    const unsigned i0 = 2 * threadIdx.x, i1 = i0 + 1, N2 = 2 * blockDim.x;
    s.seg[i0] = i0 == 0 || s.lab[i0] != s.lab[i0 - 1] ? i0 : 0u;
    s.seg[i1] = s.lab[i1] != s.lab[i0] ? i1 : 0u;
    __syncthreads();
    for (unsigned d = 1; d < N2; d <<= 1) {
        const unsigned s0 = i0 >= d ? s.seg[i0 - d] : 0u, s1 = i1 >= d ? s.seg[i1 - d] : 0u;
        __syncthreads();
        s.seg[i0] = max(s.seg[i0], s0);
        s.seg[i1] = max(s.seg[i1], s1);
        __syncthreads();
    }
    for (unsigned d = 1; d < N2; d <<= 1) {
        Acc add[2];
        bool take[2];
#pragma unroll
        for (unsigned q = 0; q < 2; q++) {
            const unsigned i = i0 + q;
            take[q] = i >= d && i - d >= s.seg[i];
            if (take[q]) add[q] = { s.sd[i - d], s.sr[i - d], s.sc[i - d], s.cnt[i - d], s.key[i - d] };
        }
        __syncthreads();
#pragma unroll
        for (unsigned q = 0; q < 2; q++) {
            const unsigned i = i0 + q;
            if (take[q]) {
                s.sd[i] += add[q].sd;
                s.sr[i] += add[q].sr;
                s.sc[i] += add[q].sc;
                s.cnt[i] += add[q].cnt;
                s.key[i] = max(s.key[i], add[q].key);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned q = 0; q < 2; q++) {
        const unsigned i = i0 + q;
        if (s.lab[i] != 0 && s.cnt[i] && (i == N2 - 1 || s.lab[i + 1] != s.lab[i]))
            m_flush(out, s.lab[i], Acc{ s.sd[i], s.sr[i], s.sc[i], s.cnt[i], s.key[i] });
    }
}

// The accumulation; Pos is the type of rows, columns and width: unsigned (at most 2^32 pixels, the key holds
// ~index) or u64 (the wide path: the key holds the value only).
template <typename Pos>
__device__ __forceinline__ void accumulate(const float *__restrict__ data, const int *__restrict__ labels, u64 npix,
                                           Pos width, unsigned nlab, u64 *out, const int *__restrict__ remap)
{
    constexpr bool wide = sizeof(Pos) == 8;
    __shared__ Shared s;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    const u64 tile = (u64)B * P, ntiles = (npix + tile - 1) / tile;
    if (lid == 0) s.joins = 0;
    __syncthreads();
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const u64 base = t * tile + (u64)lid * P;
        int lab[P];
        float val[P];
        load8(labels, base, npix, lab);
        if (remap) { // a band's own numbers: its table maps them (a run of one label looks up once)
            int raw = 0, fin = 0;
#pragma unroll
            for (unsigned j = 0; j < P; j++)
                if (lab[j] > 0) {
                    if (lab[j] != raw) fin = __ldg(remap + (raw = lab[j]) - 1);
                    lab[j] = fin;
                }
        }
        bool any = false;
#pragma unroll
        for (unsigned j = 0; j < P; j++) {
            if (lab[j] < 1 || (unsigned)lab[j] > nlab) lab[j] = 0;
            any |= lab[j] != 0;
        }
        if (any) load8(data, base, npix, val); // the data only where a label needs it (sparse images: a fraction)
        else
#pragma unroll
            for (unsigned j = 0; j < P; j++) val[j] = 0.0f;
        // runs of equal labels in this thread's pixels
        Pos r = (Pos)(base / width), c = (Pos)(base - (u64)r * width);
        int fl = 0, cl = 0, nruns = 0;
        const Acc zero = { 0.0, 0.0, 0.0, 0u, 0ull };
        Acc first = zero, cur = zero;
#pragma unroll
        for (unsigned j = 0; j < P; j++) {
            const int L = lab[j];
            if (j == 0 || L != cl) {
                if (j > 0) {
                    if (nruns == 1) {
                        fl = cl;
                        first = cur;
                    } else if (cl != 0) {
                        m_flush(out, cl, cur);
                    }
                }
                cl = L;
                cur = zero;
                nruns++;
            }
            if (L != 0) {
                const double d = (double)val[j];
                cur.sd += d;
                cur.sr += d * (double)r;
                cur.sc += d * (double)c;
                cur.cnt++;
                const u64 key = wide ? (u64)m_okey(val[j]) << 32
                                     : ((u64)m_okey(val[j]) << 32) | (u64)(0xffffffffu - (unsigned)(base + j));
                cur.key = max(cur.key, key);
            }
            if (++c == width) {
                c = 0;
                r++;
            }
        }
        if (nruns == 1) { // one run: it is both ends; the second item continues it with nothing added
            fl = cl;
            first = cur;
            cur = zero;
        }
        const unsigned i0 = 2 * lid, i1 = i0 + 1;
        s.lab[i0] = fl;
        s.sd[i0] = first.sd;
        s.sr[i0] = first.sr;
        s.sc[i0] = first.sc;
        s.cnt[i0] = first.cnt;
        s.key[i0] = first.key;
        s.lab[i1] = cl;
        s.sd[i1] = cur.sd;
        s.sr[i1] = cur.sr;
        s.sc[i1] = cur.sc;
        s.cnt[i1] = cur.cnt;
        s.key[i1] = cur.key;
        __syncthreads();
        if (lid > 0 && fl != 0 && s.lab[i0 - 1] == fl) atomicAdd(&s.joins, 1u);
        __syncthreads();
        if (s.joins <= JOIN_MAX) {
            if (fl != 0 && first.cnt) m_flush(out, fl, first);
            if (cl != 0 && cur.cnt) m_flush(out, cl, cur);
        } else {
            m_scan_flush(s, out);
        }
        __syncthreads();
        if (lid == 0) s.joins = 0;
        __syncthreads();
    }
}

} // namespace

extern "C" __global__ void __launch_bounds__(MAXB, 3)
    measure_accumulate(const float *__restrict__ data, const int *__restrict__ labels, u64 npix, unsigned width,
                       unsigned nlab, u64 *out, const int *table, unsigned remap)
{
    accumulate<unsigned>(data, labels, npix, width, nlab, out, remap ? table : nullptr);
}

extern "C" __global__ void __launch_bounds__(MAXB, 3)
    measure_accumulate_wide(const float *__restrict__ data, const int *__restrict__ labels, u64 npix, u64 width,
                            unsigned nlab, u64 *out, const int *table, unsigned remap)
{
    accumulate<u64>(data, labels, npix, width, nlab, out, remap ? table : nullptr);
}

// The wide path's second pass (measure.cl's measure_first_peak): each label's first pixel whose value has its
// largest key, as an atomic max of ~index on acc word 5; a thread skips its later pixels of a label it matched.
extern "C" __global__ void measure_first_peak(const float *__restrict__ data, const int *__restrict__ labels, u64 npix,
                                              unsigned nlab, u64 *acc, const int *table, unsigned remap)
{
    int last = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < npix; i += (u64)gridDim.x * blockDim.x) {
        int L = __ldg(labels + i);
        if (remap && L > 0) L = __ldg(table + L - 1);
        if (L < 1 || (unsigned)L > nlab || L == last) continue;
        u64 *a = acc + (u64)(L - 1) * MEASURE_RECORD_WORDS;
        if (((u64)m_okey(__ldg(data + i)) << 32) != a[3]) continue;
        atomicMax(a + 5, ~i);
        last = L;
    }
}

namespace
{

// Record k of out from the totals in acc, whose words it clears for the next call (the stream's zeroed memory);
// Pos as accumulate's (the wide path reads the first peak's index from acc word 5).
template <typename Pos>
__device__ __forceinline__ void finalize(const float *data, u64 *acc, u64 *out, unsigned nlab, Pos width, unsigned raw)
{
    constexpr bool wide = sizeof(Pos) == 8;
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < nlab; k += gridDim.x * blockDim.x) {
        u64 *a = acc + (u64)k * MEASURE_RECORD_WORDS, *rec = out + (u64)k * MEASURE_RECORD_WORDS;
        const double *fa = reinterpret_cast<const double *>(a);
        const double sum = fa[0], sr = fa[1], sc = fa[2];
        const u64 key = a[3], npix = a[4];
        const Pos idx = wide ? (Pos)~a[5] : (Pos)(0xffffffffu - (unsigned)key);
        a[0] = a[1] = a[2] = a[3] = a[4] = 0;
        if (wide) a[5] = 0;
        double *f = reinterpret_cast<double *>(rec);
        const bool some = sum != 0.0; // a NaN sum counts: NaN / NaN stays NaN
        f[0] = sum;
        f[1] = raw ? sr : some ? sr / sum : (double)NAN;
        f[2] = raw ? sc : some ? sc / sum : (double)NAN;
        rec[4] = npix;
        if (npix) {
            f[3] = (double)data[idx];
            rec[5] = idx / width;
            rec[6] = idx % width;
        } else {
            f[3] = (double)NAN;
            rec[5] = rec[6] = ~0ull;
        }
    }
}

} // namespace

extern "C" __global__ void measure_finalize(const float *data, u64 *acc, u64 *out, unsigned nlab, unsigned width,
                                            unsigned raw)
{
    finalize<unsigned>(data, acc, out, nlab, width, raw);
}

extern "C" __global__ void measure_finalize_wide(const float *data, u64 *acc, u64 *out, unsigned nlab, u64 width,
                                                 unsigned raw)
{
    finalize<u64>(data, acc, out, nlab, width, raw);
}

GPUWS_CUDA_KERNELS(measure, GPUWS_CUDA_KERNEL(measure_accumulate), GPUWS_CUDA_KERNEL(measure_finalize),
                   GPUWS_CUDA_KERNEL(measure_accumulate_wide), GPUWS_CUDA_KERNEL(measure_first_peak),
                   GPUWS_CUDA_KERNEL(measure_finalize_wide))
