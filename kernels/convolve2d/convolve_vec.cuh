// Shared by convolve2d.cu and convolve1d.cu: 16-byte vectors between shared/global memory and register arrays.
#ifndef GPUWS_CONVOLVE_VEC_CUH
#define GPUWS_CONVOLVE_VEC_CUH

template <typename T> struct Vec16;
template <> struct Vec16<float> {
    using V = float4;
    static constexpr int W = 4;
};
template <> struct Vec16<double> {
    using V = double2;
    static constexpr int W = 2;
};

// dst[0..N) = src[0..N); src 16-byte aligned, N a multiple of the vector width. Constant indices only, so dst
// stays in registers.
template <typename T, int N> __device__ __forceinline__ void load_vec(T (&dst)[N], const T *src)
{
    constexpr int W = Vec16<T>::W;
#pragma unroll
    for (int q = 0; q < N / W; q++) {
        const typename Vec16<T>::V v = *reinterpret_cast<const typename Vec16<T>::V *>(src + q * W);
        const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
        for (int w = 0; w < W; w++) dst[q * W + w] = e[w];
    }
}

// dst[0..N) = src[0..N); dst 16-byte aligned.
template <typename T, int N> __device__ __forceinline__ void store_vec(T *dst, const T (&src)[N])
{
    constexpr int W = Vec16<T>::W;
#pragma unroll
    for (int q = 0; q < N / W; q++) {
        typename Vec16<T>::V v;
        T *e = reinterpret_cast<T *>(&v);
#pragma unroll
        for (int w = 0; w < W; w++) e[w] = src[q * W + w];
        *reinterpret_cast<typename Vec16<T>::V *>(dst + q * W) = v;
    }
}

#endif
