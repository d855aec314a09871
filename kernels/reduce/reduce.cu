// Sum / min / max in two launches: `partial` (grid-stride over the data, 16-byte loads, one value per block)
// then `final` (one block over the partials, writes out[0]). No host round trip between them.
#include "../common/gpuws_cuda.cuh"

#include <cmath>

namespace
{

struct Sum {
    template <typename T> using acc = double; // f32 sums accumulate in double too (see algorithms/reduce.h)
    template <typename A> __device__ static A identity() { return A(0); }
    template <typename A> __device__ static A combine(A a, A b) { return a + b; }
};

// NaN wins (NumPy); -0.0 < +0.0, so the result never depends on the order of combination.
struct Min {
    template <typename T> using acc = T;
    template <typename A> __device__ static A identity() { return A(INFINITY); }
    template <typename A> __device__ static A combine(A a, A b)
    {
        if (isnan(a)) return a;
        if (isnan(b)) return b;
        return (b < a || (b == a && signbit(b))) ? b : a;
    }
};

struct Max {
    template <typename T> using acc = T;
    template <typename A> __device__ static A identity() { return A(-INFINITY); }
    template <typename A> __device__ static A combine(A a, A b)
    {
        if (isnan(a)) return a;
        if (isnan(b)) return b;
        return (b > a || (b == a && !signbit(b))) ? b : a;
    }
};

template <typename T> struct vec4;
template <> struct vec4<float> {
    using type = float4;
};
template <> struct vec4<double> {
    using type = double2;
}; // 16 bytes either way

template <typename Op, typename A> __device__ A block_reduce(A v, A *warp_vals)
{
    for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) warp_vals[warp] = v;
    __syncthreads();
    const unsigned nwarps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nwarps ? warp_vals[threadIdx.x] : Op::template identity<A>();
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

template <typename Op, typename A> __device__ void add4(A &v, float4 x)
{
    v = Op::combine(v, A(x.x));
    v = Op::combine(v, A(x.y));
    v = Op::combine(v, A(x.z));
    v = Op::combine(v, A(x.w));
}
template <typename Op, typename A> __device__ void add4(A &v, double2 x)
{
    v = Op::combine(v, A(x.x));
    v = Op::combine(v, A(x.y));
}

template <typename Op, typename T>
__device__ void partial(const T *__restrict__ in, typename Op::template acc<T> *partials, unsigned long long n)
{
    using A = typename Op::template acc<T>;
    using V = typename vec4<T>::type;
    constexpr unsigned W = sizeof(V) / sizeof(T);
    GPUWS_SHARED_BYTES();
    A *warp_vals = reinterpret_cast<A *>(gpuws_smem);
    A v0 = Op::template identity<A>(), v1 = v0;
    const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long nv = n / W; // cudaMalloc'd buffers are 256-byte aligned
    const V *vin = reinterpret_cast<const V *>(in);
    unsigned long long i = tid;
    // Four 16-byte loads in flight per thread before they are combined, into two independent chains.
    for (; i + 3 * stride < nv; i += 4 * stride) {
        V a = __ldg(vin + i), b = __ldg(vin + i + stride), c = __ldg(vin + i + 2 * stride),
          d = __ldg(vin + i + 3 * stride);
        add4<Op>(v0, a);
        add4<Op>(v1, b);
        add4<Op>(v0, c);
        add4<Op>(v1, d);
    }
    for (; i < nv; i += stride) add4<Op>(v0, __ldg(vin + i));
    for (unsigned long long j = nv * W + tid; j < n; j += stride) v1 = Op::combine(v1, A(in[j]));
    A v = block_reduce<Op>(Op::combine(v0, v1), warp_vals);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

template <typename Op, typename T>
__device__ void final_pass(const typename Op::template acc<T> *partials, T *out, unsigned count)
{
    using A = typename Op::template acc<T>;
    GPUWS_SHARED_BYTES();
    A *warp_vals = reinterpret_cast<A *>(gpuws_smem);
    A v = Op::template identity<A>();
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) v = Op::combine(v, partials[i]);
    v = block_reduce<Op>(v, warp_vals);
    if (threadIdx.x == 0) out[0] = T(v);
}

} // namespace

// `scratch` is gpuws_arg_local(block * sizeof(acc)): the same argument list as the OpenCL kernels; CUDA uses
// its first 32 entries (one per warp).
#define GPUWS_REDUCE_KERNELS(OP, NAME, T)                                                                              \
    extern "C" __global__ void reduce_##NAME##_partial(const T *in, OP::acc<T> *partials, unsigned long long n,        \
                                                       gpuws_local scratch)                                            \
    {                                                                                                                  \
        (void)scratch;                                                                                                 \
        partial<OP, T>(in, partials, n);                                                                               \
    }                                                                                                                  \
    extern "C" __global__ void reduce_##NAME##_final(const OP::acc<T> *partials, T *out, unsigned count,               \
                                                     gpuws_local scratch)                                              \
    {                                                                                                                  \
        (void)scratch;                                                                                                 \
        final_pass<OP, T>(partials, out, count);                                                                       \
    }

GPUWS_REDUCE_KERNELS(Sum, sum_f32, float)
GPUWS_REDUCE_KERNELS(Sum, sum_f64, double)
GPUWS_REDUCE_KERNELS(Min, min_f32, float)
GPUWS_REDUCE_KERNELS(Min, min_f64, double)
GPUWS_REDUCE_KERNELS(Max, max_f32, float)
GPUWS_REDUCE_KERNELS(Max, max_f64, double)

GPUWS_CUDA_KERNELS(reduce, GPUWS_CUDA_KERNEL(reduce_sum_f32_partial), GPUWS_CUDA_KERNEL(reduce_sum_f32_final),
                   GPUWS_CUDA_KERNEL(reduce_sum_f64_partial), GPUWS_CUDA_KERNEL(reduce_sum_f64_final),
                   GPUWS_CUDA_KERNEL(reduce_min_f32_partial), GPUWS_CUDA_KERNEL(reduce_min_f32_final),
                   GPUWS_CUDA_KERNEL(reduce_min_f64_partial), GPUWS_CUDA_KERNEL(reduce_min_f64_final),
                   GPUWS_CUDA_KERNEL(reduce_max_f32_partial), GPUWS_CUDA_KERNEL(reduce_max_f32_final),
                   GPUWS_CUDA_KERNEL(reduce_max_f64_partial), GPUWS_CUDA_KERNEL(reduce_max_f64_final))
