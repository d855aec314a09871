// Histogram over equal bins, bit-exact on every backend.
//
// A value's bin is decided only by exact comparisons with the edge table (edges[k] <= v < edges[k + 1]); the
// float estimate (v - glo) * gscale is just a starting guess that the comparisons correct, so rounding in the
// guess (or FMA contraction) can never change a count. Edges are made on the device in double with every
// operation rounded once (__dmul_rn / __dadd_rn: no FMA), exactly as the host reference makes them.
//
// histogram_<t>_local:  one privatised histogram per block in shared memory (shared atomics), written to its own
//                       row of `partials`; the edges are copied to shared memory too.
// histogram_<t>_global: too many bins for shared memory: 32-bit atomics on one zeroed row in global memory.
// histogram_merge:      counts[b] (+)= sum of the rows, one thread per bin, 64-bit.
#include "../common/gpuws_cuda.cuh"

namespace
{

__device__ __forceinline__ unsigned guess(float v, float glo, float gscale, unsigned bins)
{
    // v >= glo whenever v passed the range test (see histogram.c), so t >= 0; a NaN or huge t clamps to the top bin
    const float t = (v - glo) * gscale;
    return min((unsigned)fminf(t, 4.0e9f), bins - 1);
}

// e0 = e[0] and eb = e[bins], kept in registers by the caller (the shared-memory atomics could alias them).
template <typename T, typename E>
__device__ __forceinline__ int bin_of(T v, const E *e, E e0, E eb, unsigned bins, float glo, float gscale)
{
    if (!(v >= e0 && v < eb)) return -1; // also drops NaN
    unsigned k = guess((float)v, glo, gscale, bins);
    while (k > 0 && v < e[k]) k--;
    while (k < bins - 1 && v >= e[k + 1]) k++;
    return (int)k;
}

template <typename T> struct vec4;
template <> struct vec4<float> {
    using type = float4;
};
template <> struct vec4<int> {
    using type = int4;
};

// Calls f(value) for x[offset .. offset + len): 16-byte loads, two in flight per thread, then the tail.
template <typename T, typename F>
__device__ __forceinline__ void for_each_value(const T *__restrict__ x, unsigned long long offset,
                                               unsigned long long len, F f)
{
    using V = typename vec4<T>::type;
    const V *xv = reinterpret_cast<const V *>(x + offset); // offset is a multiple of 4 (chunks of 2^31)
    const unsigned long long nv = len / 4, stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    for (; i + stride < nv; i += 2 * stride) {
        const V a = __ldg(xv + i), b = __ldg(xv + i + stride);
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
        const V a = __ldg(xv + i);
        f(a.x);
        f(a.y);
        f(a.z);
        f(a.w);
    }
    for (unsigned long long j = nv * 4 + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < len;
         j += stride)
        f(__ldg(x + offset + j));
}

template <typename T, typename E>
__device__ void hist_local(const T *x, unsigned *partials, const E *edges, unsigned long long offset,
                           unsigned long long len, unsigned bins, float glo, float gscale, unsigned long long lbytes)
{
    GPUWS_SHARED_BYTES();
    unsigned *lb = reinterpret_cast<unsigned *>(gpuws_smem);
    E *le = reinterpret_cast<E *>(gpuws_smem + ((lbytes + 15) & ~15ull));
    for (unsigned i = threadIdx.x; i < bins; i += blockDim.x) lb[i] = 0;
    for (unsigned i = threadIdx.x; i <= bins; i += blockDim.x) le[i] = edges[i];
    __syncthreads();
    const E e0 = le[0], eb = le[bins];
    for_each_value(x, offset, len, [&](T v) {
        const int k = bin_of(v, le, e0, eb, bins, glo, gscale);
        if (k >= 0) atomicAdd(lb + k, 1u);
    });
    __syncthreads();
    unsigned *row = partials + (unsigned long long)blockIdx.x * bins;
    for (unsigned i = threadIdx.x; i < bins; i += blockDim.x) row[i] = lb[i];
}

template <typename T, typename E>
__device__ void hist_global(const T *x, unsigned *partials, const E *__restrict__ edges, unsigned long long offset,
                            unsigned long long len, unsigned bins, float glo, float gscale)
{
    const E e0 = edges[0], eb = edges[bins];
    for_each_value(x, offset, len, [&](T v) {
        const int k = bin_of(v, edges, e0, eb, bins, glo, gscale);
        if (k >= 0) atomicAdd(partials + k, 1u);
    });
}

} // namespace

extern "C" __global__ void histogram_f32_local(const float *x, unsigned *partials, const float *edges,
                                               unsigned long long offset, unsigned long long len, unsigned bins,
                                               float glo, float gscale, gpuws_local lbins, gpuws_local ledges)
{
    (void)ledges;
    hist_local(x, partials, edges, offset, len, bins, glo, gscale, lbins.bytes);
}

extern "C" __global__ void histogram_i32_local(const int *x, unsigned *partials, const long long *edges,
                                               unsigned long long offset, unsigned long long len, unsigned bins,
                                               float glo, float gscale, gpuws_local lbins, gpuws_local ledges)
{
    (void)ledges;
    hist_local(x, partials, edges, offset, len, bins, glo, gscale, lbins.bytes);
}

extern "C" __global__ void histogram_f32_global(const float *x, unsigned *partials, const float *edges,
                                                unsigned long long offset, unsigned long long len, unsigned bins,
                                                float glo, float gscale)
{
    hist_global(x, partials, edges, offset, len, bins, glo, gscale);
}

extern "C" __global__ void histogram_i32_global(const int *x, unsigned *partials, const long long *edges,
                                                unsigned long long offset, unsigned long long len, unsigned bins,
                                                float glo, float gscale)
{
    hist_global(x, partials, edges, offset, len, bins, glo, gscale);
}

extern "C" __global__ void histogram_merge(const unsigned *partials, unsigned long long *counts, unsigned bins,
                                           unsigned rows, unsigned accumulate)
{
    const unsigned b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= bins) return;
    unsigned long long s = accumulate ? counts[b] : 0ull;
    for (unsigned r = 0; r < rows; r++) s += partials[(unsigned long long)r * bins + b];
    counts[b] = s;
}

// edge k = k * step + lo, rounded once per operation (the host reference's order), edge[bins] = hi.
__device__ __forceinline__ double edge_at(unsigned k, double lo, double step, double hi, unsigned bins)
{
    return k == bins ? hi : __dadd_rn(__dmul_rn((double)k, step), lo);
}

extern "C" __global__ void histogram_edges_f32(float *edges, double lo, double step, double hi, unsigned bins)
{
    const unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (k <= bins) edges[k] = __double2float_ru(edge_at((unsigned)k, lo, step, hi, bins));
}

extern "C" __global__ void histogram_edges_i32(long long *edges, double lo, double step, double hi, unsigned bins)
{
    const unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (k > bins) return;
    const double c = ceil(edge_at((unsigned)k, lo, step, hi, bins));
    edges[k] = c < -2147483648.0 ? -2147483648ll : c > 2147483648.0 ? 2147483648ll : (long long)c;
}

GPUWS_CUDA_KERNELS(histogram, GPUWS_CUDA_KERNEL(histogram_f32_local), GPUWS_CUDA_KERNEL(histogram_i32_local),
                   GPUWS_CUDA_KERNEL(histogram_f32_global), GPUWS_CUDA_KERNEL(histogram_i32_global),
                   GPUWS_CUDA_KERNEL(histogram_merge), GPUWS_CUDA_KERNEL(histogram_edges_f32),
                   GPUWS_CUDA_KERNEL(histogram_edges_i32))
