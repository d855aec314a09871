// convolve1d: numpy.convolve on the GPU. The host passes the longer input as the signal and the shorter as the
// filter (NumPy swaps them the same way), so out[t] = sum_j filt[ms-1-j] * sig[t + base + j], zero outside sig.
//
// _tiled_  A block of 256 threads computes 256 * R consecutive outputs (R = 4 floats or 2 doubles: one 16-byte
//          store per thread, and a lane stride of 16 bytes, so the 16-byte shared-memory loads of a quarter-warp hit
//          8 distinct bank groups). Per block of up to KB filter taps it stages the flipped taps and the signal
//          segment in shared memory, then each thread slides an R + C value window over it, C = 8 taps per chunk,
//          R * C FMAs per chunk from registers. The signal is read once (plus a halo of the filter's length per
//          block) and the output written once: the kernel is memory-bound for short filters.
// _direct_ 64 (f32) / 32 (f64) outputs per thread from global memory (CPU OpenCL devices, as 4 SIMD vectors).
#include "../common/gpuws_cuda.cuh"
#include "../convolve2d/convolve_vec.cuh"

namespace {

template <typename T> struct Shape;
template <> struct Shape<float> {
    static constexpr int R = 4, C = 8; // R = one 16-byte vector
};
template <> struct Shape<double> {
    static constexpr int R = 2, C = 8;
};

// K taps (K = C but for the filter's last chunk, whose missing taps are skipped rather than multiplied by 0).
template <int K, typename T, int R, int N> __device__ __forceinline__ void chunk(T (&acc)[R], const T (&in)[N], const T *f)
{
    T g[N - R];
    load_vec(g, f);
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = fma(g[k], in[i + k], acc[i]);
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
    T *fb = tile + TT + kb_max;                   // kb_max flipped taps
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

} // namespace

#define GPUWS_CONVOLVE1D_KERNELS(NAME, T)                                                                        \
    extern "C" __global__ void convolve1d_tiled_##NAME(const T *sig, const T *filt, T *out, unsigned long long n,   \
                                                        unsigned long long ms, long long base,                     \
                                                        unsigned long long out_n, int kb_max, gpuws_local smem)    \
    {                                                                                                            \
        (void)smem;                                                                                              \
        tiled<T>(sig, filt, out, n, ms, base, out_n, kb_max);                                                    \
    }                                                                                                            \
    extern "C" __global__ void convolve1d_direct_##NAME(const T *sig, const T *filt, T *out, unsigned long long n,  \
                                                         unsigned long long ms, long long base,                    \
                                                         unsigned long long out_n)                                 \
    {                                                                                                            \
        direct<T>(sig, filt, out, n, ms, base, out_n);                                                           \
    }

GPUWS_CONVOLVE1D_KERNELS(f32, float)
GPUWS_CONVOLVE1D_KERNELS(f64, double)

GPUWS_CUDA_KERNELS(convolve1d, GPUWS_CUDA_KERNEL(convolve1d_tiled_f32), GPUWS_CUDA_KERNEL(convolve1d_tiled_f64),
                   GPUWS_CUDA_KERNEL(convolve1d_direct_f32), GPUWS_CUDA_KERNEL(convolve1d_direct_f64))
