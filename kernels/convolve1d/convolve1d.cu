// convolve1d: numpy.convolve on the GPU. The host passes the longer input as the signal and the shorter as the
// filter (NumPy swaps them the same way), so out[t] = sum_j filt[ms-1-j] * sig[t + base + j], zero outside sig.
//
// _stream_ (GPUs, filters of up to STREAM_TAPS taps: the memory-bound case) A persistent grid of 256-thread blocks
//          walks tiles of TT = 256 * G * W outputs (W = one 16-byte vector, G = 2 vectors per thread: 2048 f32 /
//          1024 f64, 8 KB). Each thread holds its share of the NEXT tile in registers (G aligned 16-byte loads, plus
//          one halo vector for the first threads) while it computes the current one from shared memory, so a
//          thread always has 32-48 bytes of loads in flight, through the compute and the stores too. Per tile: the
//          registers go to one of two shared buffers (shifted by the signal's misalignment, so the compute reads
//          aligned 16-byte windows), one barrier, the next tile's loads are issued, then each thread computes its
//          G vectors of outputs (lane stride 16 bytes: conflict-free LDS.128 windows, coalesced STG.128 per
//          vector) from the taps staged once per block. Two buffers make one barrier per tile enough.
// _tiled_  (longer filters) A block of 256 threads computes 256 * R consecutive outputs (R = 4 floats or 2 doubles: one
//          16-byte store per thread, and a lane stride of 16 bytes, so the 16-byte shared-memory loads of a
//          quarter-warp hit 8 distinct bank groups). Per block of up to KB filter taps it stages the flipped taps and
//          the signal segment in shared memory, then each thread slides an R + C value window over it, C = 8 taps per
//          chunk, R * C FMAs per chunk from registers. Before the stream kernel it ran every case (it is 55% of copy
//          bandwidth on short filters: one scalar load in flight per thread, load and compute phases not overlapped).
// _direct_ 64 (f32) / 32 (f64) outputs per thread from global memory (CPU OpenCL devices, as 4 SIMD vectors).
#include "../common/gpuws_cuda.cuh"
#include "../convolve2d/convolve_vec.cuh"
#include "convolve1d_stream.h"

namespace
{

template <typename T> struct Shape;
template <> struct Shape<float> {
    static constexpr int R = 4, C = 8; // R = one 16-byte vector
};
template <> struct Shape<double> {
    static constexpr int R = 2, C = 8;
};

// K taps of one chunk for W outputs (K < C only for the filter's last chunk, whose missing taps are skipped rather
// than multiplied by 0: 0 * Inf would widen a footprint).
template <int K, typename T, int W, int N, int C>
__device__ __forceinline__ void fmas(T (&acc)[W], const T (&in)[N], const T (&g)[C])
{
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int i = 0; i < W; i++) acc[i] = fma(g[k], in[i + k], acc[i]);
}

// The same for the tiled kernel, the chunk's taps read from f.
template <int K, typename T, int R, int N>
__device__ __forceinline__ void chunk(T (&acc)[R], const T (&in)[N], const T *f)
{
    T g[N - R];
    load_vec(g, f);
    fmas<K>(acc, in, g);
}

template <typename T>
__device__ void tiled(const T *__restrict__ sig, const T *__restrict__ filt, T *__restrict__ out, unsigned long long n,
                      unsigned long long ms, long long base, unsigned long long out_n, int kb_max)
{
    using Sh = Shape<T>;
    constexpr int R = Sh::R, C = Sh::C;
    static_assert(R == Vec16<T>::W, "one 16-byte store per thread");
    GPUWS_SHARED_BYTES();
    const int nthreads = blockDim.x, tid = threadIdx.x, TT = nthreads * R;
    T *tile = reinterpret_cast<T *>(gpuws_smem); // TT + kb_max values
    T *fb = tile + TT + kb_max;                  // kb_max flipped taps
    const unsigned long long t0 = (unsigned long long)blockIdx.x * TT;
    const int x0 = tid * R;
    T acc[R];
#pragma unroll
    for (int i = 0; i < R; i++) acc[i] = T(0);
    for (unsigned long long j0 = 0; j0 < ms; j0 += kb_max) {
        const int kb = (int)min((unsigned long long)kb_max, ms - j0), kbp = (kb + C - 1) / C * C;
        if (j0 != 0) __syncthreads();
        for (int j = tid; j < kbp; j += nthreads) fb[j] = j < kb ? filt[ms - 1 - j0 - j] : T(0);
        const long long g0 = (long long)t0 + base + (long long)j0; // signal index of tile[0]
        const int len = TT + kbp;
        if (g0 >= 0 && g0 + len <= (long long)n) {
            const T *src = sig + g0;
            for (int v = tid; v < len; v += nthreads) tile[v] = __ldg(src + v);
        } else {
            for (int v = tid; v < len; v += nthreads) {
                const long long g = g0 + v;
                tile[v] = g >= 0 && g < (long long)n ? __ldg(sig + g) : T(0);
            }
        }
        __syncthreads();
#pragma unroll 1
        for (int c = 0; c < kbp; c += C) {
            T in[R + C];
            load_vec(in, tile + x0 + c);
            static_assert(C == 8, "the switch below lists C cases");
            switch (kb - c) {
            case 1: chunk<1>(acc, in, fb + c); break;
            case 2: chunk<2>(acc, in, fb + c); break;
            case 3: chunk<3>(acc, in, fb + c); break;
            case 4: chunk<4>(acc, in, fb + c); break;
            case 5: chunk<5>(acc, in, fb + c); break;
            case 6: chunk<6>(acc, in, fb + c); break;
            case 7: chunk<7>(acc, in, fb + c); break;
            default: chunk<8>(acc, in, fb + c); break;
            }
        }
    }
    const unsigned long long t = t0 + x0;
    if (t + R <= out_n) { // one 16-byte store (out is 256-byte aligned and t a multiple of R)
        store_vec(out + t, acc);
    } else {
#pragma unroll
        for (int i = 0; i < R; i++)
            if (t + i < out_n) out[t + i] = acc[i];
    }
}

// 256 bytes of consecutive outputs per thread (as many as the OpenCL kernel's 4 SIMD vectors, so both take the same
// launch), grid-strided, each over the taps that meet the signal in tap order. Only a fallback on GPUs.
template <typename T>
__device__ void direct(const T *__restrict__ sig, const T *__restrict__ filt, T *__restrict__ out, unsigned long long n,
                       unsigned long long ms, long long base, unsigned long long out_n)
{
    constexpr unsigned DV = 256 / sizeof(T);
    for (unsigned long long t0 = (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) * DV; t0 < out_n;
         t0 += (unsigned long long)gridDim.x * blockDim.x * DV)
        for (unsigned long long t = t0; t < t0 + DV && t < out_n; t++) {
            const long long lo = (long long)t + base; // signal index met by flipped tap 0
            T acc = T(0);
            for (unsigned long long j = 0; j < ms; j++) {
                const long long g = lo + (long long)j;
                if (g >= 0 && g < (long long)n) acc = fma(filt[ms - 1 - j], sig[g], acc);
            }
            out[t] = acc;
        }
}

// ---- stream: persistent blocks, the next tile in registers while the current one is computed --------------------

template <typename T> struct StreamShape {
    using V = typename Vec16<T>::V;
    static constexpr int W = Vec16<T>::W, NT = C1S_THREADS, G = C1S_VECS, HV = C1S_HALO_VECS, C = 8;
    static constexpr int TT = NT * G * W;         // outputs per tile
    static constexpr int PITCH = W + TT + HV * W; // one buffer: W values of front pad for the shift, tile, halo
};

// The aligned 16-byte vector sig[i .. i + W), zeros outside [0, n); i is a multiple of W (sig is 256-byte aligned).
template <typename T>
__device__ __forceinline__ typename Vec16<T>::V fetch_vec(const T *__restrict__ sig, long long i, long long n)
{
    using V = typename Vec16<T>::V;
    constexpr int W = Vec16<T>::W;
    if (i >= 0 && i + W <= n) return __ldg(reinterpret_cast<const V *>(sig + i));
    V v;
    T *e = reinterpret_cast<T *>(&v);
#pragma unroll
    for (int w = 0; w < W; w++) e[w] = i + w >= 0 && i + w < n ? __ldg(sig + i + w) : T(0);
    return v;
}

// Stores the vector v of aligned signal values at dst[0 .. W), dst = aligned position - off: whole when off is 0,
// in 8-byte halves when off is 2 (f32), else value by value. off is uniform across the grid, so no divergence.
template <typename T> __device__ __forceinline__ void put_shifted(T *dst, const typename Vec16<T>::V &v, int off)
{
    constexpr int W = Vec16<T>::W;
    const T *e = reinterpret_cast<const T *>(&v);
    if (off == 0) {
        *reinterpret_cast<typename Vec16<T>::V *>(dst) = v;
    } else if (W == 4 && off == 2) {
        reinterpret_cast<float2 *>(dst)[0] = make_float2(float(e[0]), float(e[1]));
        reinterpret_cast<float2 *>(dst)[1] = make_float2(float(e[2]), float(e[3]));
    } else {
#pragma unroll
        for (int w = 0; w < W; w++) dst[w] = e[w];
    }
}

// The caller guarantees ms <= the largest filter whose taps (rounded up to C) plus W - 1 fit in HV vectors, and a
// launch of exactly NT threads.
template <typename T>
__device__ void stream(const T *__restrict__ sig, const T *__restrict__ filt, T *__restrict__ out, unsigned long long n,
                       unsigned long long ms, long long base, unsigned long long out_n)
{
    using S = StreamShape<T>;
    using V = typename S::V;
    constexpr int W = S::W, NT = S::NT, G = S::G, HV = S::HV, C = S::C, TT = S::TT, PITCH = S::PITCH;
    __shared__ __align__(16) T buf[2 * PITCH + HV * W];
    T *fb = buf + 2 * PITCH; // the flipped taps, zero-padded to a multiple of C
    const int tid = threadIdx.x, kb = (int)ms, kbp = (kb + C - 1) / C * C;
    for (int j = tid; j < kbp; j += NT) fb[j] = j < kb ? filt[ms - 1 - j] : T(0);
    // Tile i's first input sig[i * TT + base] lies off = base mod W values past an aligned vector: the same for
    // every tile. Each buffer keeps the tile's first input at index W (16-byte aligned).
    const int off = (int)(((base % W) + W) % W), hv = (kbp + off + W - 1) / W;
    const long long ln = (long long)n;
    const unsigned long long ntiles = (out_n + TT - 1) / TT;
    V pre[G], halo;
    // Unconditional fetches (past the last tile they read zeros): the loop body has no branch around them.
    auto fetch = [&](unsigned long long tile) {
        const long long ga = (long long)(tile * TT) + base - off; // aligned start
#pragma unroll
        for (int q = 0; q < G; q++) pre[q] = fetch_vec(sig, ga + (long long)(q * NT + tid) * W, ln);
        if (tid < hv) halo = fetch_vec(sig, ga + (long long)(G * NT + tid) * W, ln);
    };
    unsigned long long tile = blockIdx.x;
    fetch(tile);
    for (int b = 0; tile < ntiles; tile += gridDim.x, b ^= 1) {
        T *B = buf + b * PITCH;
#pragma unroll
        for (int q = 0; q < G; q++) put_shifted<T>(B + W - off + (q * NT + tid) * W, pre[q], off);
        if (tid < hv) put_shifted<T>(B + W - off + (G * NT + tid) * W, halo, off);
        // Orders this tile's buffer (and the taps), and tells that every thread is done with the other buffer,
        // which the next iteration overwrites.
        __syncthreads();
        fetch(tile + gridDim.x);
        const T *x = B + W + tid * W;
        T acc[G][W];
#pragma unroll
        for (int q = 0; q < G; q++)
#pragma unroll
            for (int i = 0; i < W; i++) acc[q][i] = T(0);
#pragma unroll 1
        for (int c = 0; c < kbp; c += C) {
            T g[C];
            load_vec(g, fb + c);
            static_assert(C == 8, "the switch below lists C cases");
#pragma unroll
            for (int q = 0; q < G; q++) { // one vector at a time: W + C window values live, not G (W + C)
                T in[W + C];
                load_vec(in, x + q * NT * W + c);
                switch (kb - c) {
                case 1: fmas<1>(acc[q], in, g); break;
                case 2: fmas<2>(acc[q], in, g); break;
                case 3: fmas<3>(acc[q], in, g); break;
                case 4: fmas<4>(acc[q], in, g); break;
                case 5: fmas<5>(acc[q], in, g); break;
                case 6: fmas<6>(acc[q], in, g); break;
                case 7: fmas<7>(acc[q], in, g); break;
                default: fmas<8>(acc[q], in, g); break;
                }
            }
        }
#pragma unroll
        for (int q = 0; q < G; q++) {
            const unsigned long long t = tile * TT + (unsigned long long)(q * NT + tid) * W;
            if (t + W <= out_n) {
                store_vec(out + t, acc[q]);
            } else {
#pragma unroll
                for (int i = 0; i < W; i++)
                    if (t + i < out_n) out[t + i] = acc[q][i];
            }
        }
    }
}

} // namespace

#define GPUWS_CONVOLVE1D_KERNELS(NAME, T, BPC)                                                                         \
    extern "C" __global__ void convolve1d_tiled_##NAME(const T *sig, const T *filt, T *out, unsigned long long n,      \
                                                       unsigned long long ms, long long base,                          \
                                                       unsigned long long out_n, int kb_max, gpuws_local smem)         \
    {                                                                                                                  \
        (void)smem;                                                                                                    \
        tiled<T>(sig, filt, out, n, ms, base, out_n, kb_max);                                                          \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(C1S_THREADS, BPC)                                                     \
        convolve1d_stream_##NAME(const T *sig, const T *filt, T *out, unsigned long long n, unsigned long long ms,     \
                                 long long base, unsigned long long out_n)                                             \
    {                                                                                                                  \
        stream<T>(sig, filt, out, n, ms, base, out_n);                                                                 \
    }                                                                                                                  \
    extern "C" __global__ void convolve1d_direct_##NAME(const T *sig, const T *filt, T *out, unsigned long long n,     \
                                                        unsigned long long ms, long long base,                         \
                                                        unsigned long long out_n)                                      \
    {                                                                                                                  \
        direct<T>(sig, filt, out, n, ms, base, out_n);                                                                 \
    }

GPUWS_CONVOLVE1D_KERNELS(f32, float, C1S_BLOCKS_PER_CU_F32)
GPUWS_CONVOLVE1D_KERNELS(f64, double, C1S_BLOCKS_PER_CU_F64)

GPUWS_CUDA_KERNELS(convolve1d, GPUWS_CUDA_KERNEL(convolve1d_stream_f32), GPUWS_CUDA_KERNEL(convolve1d_stream_f64),
                   GPUWS_CUDA_KERNEL(convolve1d_tiled_f32), GPUWS_CUDA_KERNEL(convolve1d_tiled_f64),
                   GPUWS_CUDA_KERNEL(convolve1d_direct_f32), GPUWS_CUDA_KERNEL(convolve1d_direct_f64))
