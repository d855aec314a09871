/* Included by every kernels/<algo>/<algo>.cu.
 *
 * GPUWS_CUDA_KERNELS(algo, GPUWS_CUDA_KERNEL(fn), ...) exports the algorithm's kernel table. Each kernel's
 * parameter signature is derived from its C++ type here, so it cannot drift from the code: gpuws_launch checks
 * the caller's arguments against it exactly as the OpenCL backend checks against clGetKernelArgInfo. */
#ifndef GPUWS_CUDA_CUH
#define GPUWS_CUDA_CUH

#include "../../backends/cuda/cuda_kernel.h"

#include <cstdint>
#include <type_traits>

/* The CUDA side of gpuws_arg_local(bytes): the launcher passes the region's size; the memory itself lies in the
 * kernel's extern __shared__ array (regions in parameter order, each 16-byte aligned). */
struct gpuws_local {
    unsigned long long bytes;
};

template <typename T, typename = void> struct gpuws_sig_char;
template <typename T> struct gpuws_sig_char<T *> {
    static constexpr char value = 'b';
};
template <> struct gpuws_sig_char<int> {
    static constexpr char value = 'i';
};
template <> struct gpuws_sig_char<unsigned> {
    static constexpr char value = 'u';
};
template <> struct gpuws_sig_char<long> {
    static constexpr char value = 'l';
};
template <> struct gpuws_sig_char<long long> {
    static constexpr char value = 'l';
};
template <> struct gpuws_sig_char<unsigned long> {
    static constexpr char value = 'L';
};
template <> struct gpuws_sig_char<unsigned long long> {
    static constexpr char value = 'L';
};
template <> struct gpuws_sig_char<float> {
    static constexpr char value = 'f';
};
template <> struct gpuws_sig_char<double> {
    static constexpr char value = 'd';
};
template <> struct gpuws_sig_char<gpuws_local> {
    static constexpr char value = 's';
};

template <typename F> struct gpuws_sig;
template <typename... A> struct gpuws_sig<void(A...)> {
    static constexpr char value[] = { gpuws_sig_char<typename std::remove_cv<A>::type>::value..., 0 };
};

#define GPUWS_CUDA_KERNEL(fn)                                                                                          \
    {                                                                                                                  \
#fn, (const void *)fn, gpuws_sig < decltype(fn)> ::value                                                       \
    }
#define GPUWS_CUDA_KERNELS(algo, ...)                                                                                  \
    extern "C" const gpuws__cuda_kernel gpuws__cuda_kernels_##algo[] = { __VA_ARGS__, { nullptr, nullptr, nullptr } };

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in thread 0. Every thread of
 * the block must call it (it synchronizes once). */
template <typename T> __device__ __forceinline__ T gpuws_block_sum(T v)
{
    __shared__ T warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : T(0);
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* Dynamic shared memory, as one byte array the kernel carves into its regions. */
#define GPUWS_SHARED_BYTES() extern __shared__ __align__(16) unsigned char gpuws_smem[]

/* Exclusive prefix sum of v over the block (blockDim.x a multiple of 32, at most 1024); *total gets the sum.
 * warp_sums: 32 T of shared memory, free again when it returns. */
template <typename T> __device__ inline T gpuws_block_exclusive_scan(T v, T *warp_sums, T *total)
{
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    T inc = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const T t = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= (unsigned)o) inc += t;
    }
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        T w = lane < nwarps ? warp_sums[lane] : T(0);
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const T t = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= (unsigned)o) w += t;
        }
        if (lane < nwarps) warp_sums[lane] = w; // inclusive warp totals
    }
    __syncthreads();
    *total = warp_sums[nwarps - 1];
    const T r = inc - v + (warp ? warp_sums[warp - 1] : T(0));
    __syncthreads(); // warp_sums may be reused by the caller
    return r;
}

#endif
