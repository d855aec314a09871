// The workshop's elementwise functions. Each kernel is a grid-stride loop over 4-element groups (16-byte loads and
// stores, two groups in flight per thread) plus a scalar tail, applying one scalar function per element. Operands
// are arrays or scalars: bit k of `arrays` says whether operand k is an array (its pointer is then read) or the
// scalar parameter next to it is broadcast. The bit is the same for the whole grid, so the branch costs nothing.
// No fast-math: expf, sinf, cosf, tanhf, sqrtf and '/' are the accurate versions (see algorithms/ufunc.h).
#include "../common/gpuws_cuda.cuh"

#include <utility>

namespace
{

constexpr float kSqrt2Pi = 2.50662827463100050242f;

__device__ __forceinline__ float gaussian_pdf(float x, float m, float s)
{
    const float z = (x - m) / s;
    return expf(-0.5f * (z * z)) / (s * kSqrt2Pi);
}

__device__ __forceinline__ float polar_distance(float r1, float t1, float r2, float t2)
{
    const float dx = r1 * cosf(t1) - r2 * cosf(t2), dy = r1 * sinf(t1) - r2 * sinf(t2);
    return sqrtf(dx * dx + dy * dy);
}

__device__ __forceinline__ float make_pulses(float i, float period, float amplitude)
{
    return fmaxf(sinf(i / period) - 0.3f, 0.0f) * amplitude;
}

// The workshop's overflow-safe formula; 0/0 and inf/inf replaced by the C99 values (see algorithms/ufunc.h).
__device__ __forceinline__ float hypot_ws(float x, float y)
{
    x = fabsf(x);
    y = fabsf(y);
    if (isinf(x) || isinf(y)) return INFINITY;
    if (isnan(x) || isnan(y)) return x + y;
    const float a = fmaxf(x, y), t = fminf(x, y);
    if (a == 0.0f) return 0.0f;
    const float r = t / a;
    return a * sqrtf(1.0f + r * r);
}

__device__ __forceinline__ float hidden_layer(float g, float w) { return tanhf(g / 255.0f * w); }

struct Operand {
    const float *p;
    float s;
    bool array;
    __device__ float4 load4(unsigned long long v) const
    {
        return array ? reinterpret_cast<const float4 *>(p)[v] : make_float4(s, s, s, s);
    }
    __device__ float load1(unsigned long long i) const { return array ? p[i] : s; }
};

template <typename F, std::size_t... I>
__device__ __forceinline__ float4 apply4(F f, const float4 (&a)[sizeof...(I)], std::index_sequence<I...>)
{
    return make_float4(f(a[I].x...), f(a[I].y...), f(a[I].z...), f(a[I].w...));
}

template <std::size_t N, typename F, std::size_t... I>
__device__ __forceinline__ float apply1(F f, const Operand (&op)[N], unsigned long long i, std::index_sequence<I...>)
{
    return f(op[I].load1(i)...);
}

// out[i] = f(op[0][i], ..., op[N-1][i]) for i < n. out may be one of the operands: each element is read by the
// thread that writes it, before it writes it (and plain loads, not __ldg, since the data is not read-only then).
template <std::size_t N, typename F> __device__ void map(F f, const Operand (&op)[N], float *out, unsigned long long n)
{
    using Seq = std::make_index_sequence<N>;
    const unsigned long long nv = n / 4, stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long v = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float4 *out4 = reinterpret_cast<float4 *>(out);
    for (; v + stride < nv; v += 2 * stride) {
        float4 a[N], b[N];
#pragma unroll
        for (std::size_t k = 0; k < N; k++) {
            a[k] = op[k].load4(v);
            b[k] = op[k].load4(v + stride);
        }
        out4[v] = apply4(f, a, Seq{});
        out4[v + stride] = apply4(f, b, Seq{});
    }
    if (v < nv) {
        float4 a[N];
#pragma unroll
        for (std::size_t k = 0; k < N; k++) a[k] = op[k].load4(v);
        out4[v] = apply4(f, a, Seq{});
    }
    for (unsigned long long i = nv * 4 + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = apply1(f, op, i, Seq{});
}

} // namespace

#define OPERAND(k, p, s)                                                                                               \
    Operand { p, s, ((arrays >> (k)) & 1u) != 0 }

extern "C" __global__ void ufunc_gaussian_pdf(const float *x, float xs, const float *mean, float ms, const float *sigma,
                                              float ss, float *out, unsigned long long n, unsigned arrays)
{
    const Operand op[3] = { OPERAND(0, x, xs), OPERAND(1, mean, ms), OPERAND(2, sigma, ss) };
    map([](float a, float b, float c) { return gaussian_pdf(a, b, c); }, op, out, n);
}

extern "C" __global__ void ufunc_polar_distance(const float *rho1, float r1s, const float *theta1, float t1s,
                                                const float *rho2, float r2s, const float *theta2, float t2s,
                                                float *out, unsigned long long n, unsigned arrays)
{
    const Operand op[4] = { OPERAND(0, rho1, r1s), OPERAND(1, theta1, t1s), OPERAND(2, rho2, r2s),
                            OPERAND(3, theta2, t2s) };
    map([](float a, float b, float c, float d) { return polar_distance(a, b, c, d); }, op, out, n);
}

extern "C" __global__ void ufunc_make_pulses(const float *i, float is, const float *period, float ps,
                                             const float *amplitude, float as, float *out, unsigned long long n,
                                             unsigned arrays)
{
    const Operand op[3] = { OPERAND(0, i, is), OPERAND(1, period, ps), OPERAND(2, amplitude, as) };
    map([](float a, float b, float c) { return make_pulses(a, b, c); }, op, out, n);
}

extern "C" __global__ void ufunc_hypot(const float *x, float xs, const float *y, float ys, float *out,
                                       unsigned long long n, unsigned arrays)
{
    const Operand op[2] = { OPERAND(0, x, xs), OPERAND(1, y, ys) };
    map([](float a, float b) { return hypot_ws(a, b); }, op, out, n);
}

// Elements [offset, offset + n) of the three buffers (offset: a multiple of 4; the host pipeline's ring slots).
extern "C" __global__ void ufunc_hidden_layer(const float *g, const float *w, float *out, unsigned long long offset,
                                              unsigned long long n)
{
    const Operand op[2] = { Operand{ g + offset, 0.0f, true }, Operand{ w + offset, 0.0f, true } };
    map([](float a, float b) { return hidden_layer(a, b); }, op, out + offset, n);
}

// w < t exactly, with t the smallest float >= the double threshold (computed by the host).
extern "C" __global__ void ufunc_zero_suppress_f32(const float *w, float *out, unsigned long long n, float t)
{
    const Operand op[1] = { Operand{ w, 0.0f, true } };
    map([t](float a) { return a < t ? 0.0f : a; }, op, out, n);
}

// int16, 8 per 16-byte access, two accesses in flight per thread (as map's float groups); t = ceil(threshold)
// clamped to [-32768, 32768].
__device__ __forceinline__ uint4 zero_suppress8(uint4 q, int t)
{
    unsigned *words = reinterpret_cast<unsigned *>(&q);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const short lo = (short)(words[k] & 0xffffu), hi = (short)(words[k] >> 16);
        const unsigned l = lo < t ? 0u : (unsigned short)lo, h = hi < t ? 0u : (unsigned short)hi;
        words[k] = l | (h << 16);
    }
    return q;
}

extern "C" __global__ void ufunc_zero_suppress_i16(const short *w, short *out, unsigned long long n, int t)
{
    const unsigned long long nv = n / 8, stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const uint4 *w8 = reinterpret_cast<const uint4 *>(w);
    uint4 *out8 = reinterpret_cast<uint4 *>(out);
    unsigned long long v = tid;
    for (; v + stride < nv; v += 2 * stride) {
        const uint4 a = w8[v], b = w8[v + stride];
        out8[v] = zero_suppress8(a, t);
        out8[v + stride] = zero_suppress8(b, t);
    }
    if (v < nv) out8[v] = zero_suppress8(w8[v], t);
    for (unsigned long long i = nv * 8 + tid; i < n; i += stride) out[i] = w[i] < t ? (short)0 : w[i];
}

// For gpuws_hypot_checked: partials[block] = the smallest i < n with x[i] or y[i] NaN (array operands only; bit k
// of `arrays` as above), or n when the block saw none.
extern "C" __global__ void ufunc_find_nan(const float *x, const float *y, unsigned long long *partials,
                                          unsigned long long n, unsigned arrays, gpuws_local scratch)
{
    (void)scratch;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = n;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n && first == n;
         i += stride)
        if (((arrays & 1u) && isnan(__ldg(x + i))) || ((arrays & 2u) && isnan(__ldg(y + i)))) first = i;
    __shared__ unsigned long long warp_min[32];
    for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_down_sync(0xffffffffu, first, o));
    if ((threadIdx.x & 31u) == 0) warp_min[threadIdx.x >> 5] = first;
    __syncthreads();
    if (threadIdx.x < 32) {
        first = threadIdx.x < (blockDim.x >> 5) ? warp_min[threadIdx.x] : n;
        for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_down_sync(0xffffffffu, first, o));
        if (threadIdx.x == 0) partials[blockIdx.x] = first;
    }
}

GPUWS_CUDA_KERNELS(ufunc, GPUWS_CUDA_KERNEL(ufunc_gaussian_pdf), GPUWS_CUDA_KERNEL(ufunc_polar_distance),
                   GPUWS_CUDA_KERNEL(ufunc_make_pulses), GPUWS_CUDA_KERNEL(ufunc_hypot),
                   GPUWS_CUDA_KERNEL(ufunc_hidden_layer), GPUWS_CUDA_KERNEL(ufunc_zero_suppress_f32),
                   GPUWS_CUDA_KERNEL(ufunc_zero_suppress_i16), GPUWS_CUDA_KERNEL(ufunc_find_nan))
