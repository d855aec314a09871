// out[r] = ‖row r‖₂ of a rows×cols row-major matrix, overflow-safe (the workshop's gufunc l2_norm).
// Two passes over each row: the largest |v| (NaN wins), then the sum of squares of v·2^-e, where 2^e is a power of
// two near that maximum, so no square overflows or underflows harmfully; the result is sqrt(sum)·2^e. Scaling
// by powers of two is exact and both 2^e and 2^-e are kept normal numbers (e is clamped), so flushing subnormals
// would not break it.
//   l2_norm_rows_<t>:  one thread per row (short rows, cols < 32): grid-stride over rows.
//   l2_norm_group_<t>: `lanes` threads per row (32..256, a power of two: whole warps), blockDim / lanes rows per
//     block. Each lane keeps its first R 16-byte vectors of the row in registers, so rows of up to
//     lanes·R·16 bytes are read from memory once; longer rows are read again for the second pass.
// kernels/l2_norm/l2_norm.cl has the same kernels and parameters.
#include "../common/gpuws_cuda.cuh"
#include "l2_norm_layout.h"

namespace
{

template <typename T> struct fp;
template <> struct fp<float> {
    using V = float4;
    static constexpr int VW = 4, EMAX = 126; // 2^±126 are normal floats
    __device__ static void unpack(float4 v, float *r) { r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w; }
    __device__ static int exponent(float m) { return int((__float_as_uint(m) >> 23) & 0xffu) - 127; }
    __device__ static float pow2(int e) { return __uint_as_float(unsigned(127 + e) << 23); }
};
template <> struct fp<double> {
    using V = double2;
    static constexpr int VW = 2, EMAX = 1022;
    __device__ static void unpack(double2 v, double *r) { r[0] = v.x, r[1] = v.y; }
    __device__ static int exponent(double m) { return int((__double_as_longlong(m) >> 52) & 0x7ff) - 1023; }
    __device__ static double pow2(int e) { return __longlong_as_double((long long)(1023 + e) << 52); }
};

constexpr int R = L2_NORM_VECTORS; // 16-byte vectors per lane held in registers between the passes

// max that lets a NaN through (fmax would drop it): once NaN, stays NaN.
template <typename T> __device__ T max_nan(T m, T a) { return (a > m || a != a) ? a : m; }

// The row's maximum m → (2^-e, 2^e) with 2^e near m; both normal. Meaningless for m = 0, Inf, NaN (not used then).
template <typename T> __device__ void scales(T m, T &down, T &up)
{
    int e = fp<T>::exponent(m);
    e = e < -fp<T>::EMAX ? -fp<T>::EMAX : e > fp<T>::EMAX ? fp<T>::EMAX : e;
    down = fp<T>::pow2(-e);
    up = fp<T>::pow2(e);
}

// NaN, Inf and 0 are their own norm (a NaN anywhere made m NaN); otherwise undo the scaling.
template <typename T> __device__ T norm_of(T m, T sum, T up)
{
    return (m != m || m == T(0) || isinf(m)) ? m : sqrt(sum) * up;
}

// Reduces v over the `lanes` threads of each row (lanes a multiple of 32); every lane gets the same result.
template <typename T, typename Op> __device__ T group_reduce(T v, unsigned lanes, T *warp_vals, Op op)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lanes > 32) { // uniform over the block
        const unsigned warp = threadIdx.x / 32, per_row = lanes / 32, first = warp / per_row * per_row;
        __syncthreads(); // warp_vals may still be read from the previous reduction
        if (threadIdx.x % 32 == 0) warp_vals[warp] = v;
        __syncthreads();
        v = warp_vals[first];
        for (unsigned w = 1; w < per_row; w++) v = op(v, warp_vals[first + w]);
    }
    return v;
}

// Elements vi·VW .. vi·VW + VW - 1 of the row (zeros past n).
template <typename T> __device__ void load(const T *row, unsigned vi, unsigned n, bool aligned, T *x)
{
    constexpr int VW = fp<T>::VW;
    const unsigned e = vi * VW;
    if (aligned && e + VW <= n) {
        fp<T>::unpack(__ldg(reinterpret_cast<const typename fp<T>::V *>(row + e)), x);
    } else {
#pragma unroll
        for (int c = 0; c < VW; c++) x[c] = e + c < n ? row[e + c] : T(0);
    }
}

template <typename T>
__device__ void l2_norm_group(const T *__restrict__ in, T *__restrict__ out, unsigned rows, unsigned cols,
                              unsigned lanes)
{
    constexpr int VW = fp<T>::VW;
    __shared__ T warp_vals[32];
    const unsigned lane = threadIdx.x % lanes, per_block = blockDim.x / lanes;
    const bool aligned = cols % VW == 0; // every row starts on a 16-byte boundary
    const auto maxop = [](T a, T b) { return max_nan(a, b); };
    const auto addop = [](T a, T b) { return a + b; };
    // Every thread of the block runs the same number of iterations (barriers inside).
    for (unsigned long long r0 = (unsigned long long)blockIdx.x * per_block; r0 < rows;
         r0 += (unsigned long long)gridDim.x * per_block) {
        const unsigned long long r = r0 + threadIdx.x / lanes;
        const unsigned n = r < rows ? cols : 0; // a thread past the last row reads nothing and contributes zeros
        const T *row = in + (r < rows ? r : 0) * cols;
        const unsigned nvec = (n + VW - 1) / VW;

        T x[R][VW];
        T m = T(0);
#pragma unroll
        for (int j = 0; j < R; j++) {
            load(row, j * lanes + lane, n, aligned, x[j]);
#pragma unroll
            for (int c = 0; c < VW; c++) m = max_nan(m, fabs(x[j][c]));
        }
        for (unsigned vi = R * lanes + lane; vi < nvec; vi += lanes) {
            T y[VW];
            load(row, vi, n, aligned, y);
#pragma unroll
            for (int c = 0; c < VW; c++) m = max_nan(m, fabs(y[c]));
        }
        m = group_reduce(m, lanes, warp_vals, maxop);

        T down, up;
        scales(m, down, up);
        T s = T(0);
#pragma unroll
        for (int j = 0; j < R; j++)
#pragma unroll
            for (int c = 0; c < VW; c++) {
                const T y = x[j][c] * down;
                s = fma(y, y, s);
            }
        for (unsigned vi = R * lanes + lane; vi < nvec; vi += lanes) { // long rows: read again (from cache)
            T y[VW];
            load(row, vi, n, aligned, y);
#pragma unroll
            for (int c = 0; c < VW; c++) {
                const T z = y[c] * down;
                s = fma(z, z, s);
            }
        }
        s = group_reduce(s, lanes, warp_vals, addop);
        if (lane == 0 && r < rows) out[r] = norm_of(m, s, up);
    }
}

template <typename T>
__device__ void l2_norm_rows(const T *__restrict__ in, T *__restrict__ out, unsigned rows, unsigned cols)
{
    for (unsigned long long r = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; r < rows;
         r += (unsigned long long)gridDim.x * blockDim.x) {
        const T *row = in + r * cols;
        T m = T(0);
        for (unsigned j = 0; j < cols; j++) m = max_nan(m, fabs(row[j]));
        T down, up;
        scales(m, down, up);
        T s = T(0);
        for (unsigned j = 0; j < cols; j++) {
            const T y = row[j] * down;
            s = fma(y, y, s);
        }
        out[r] = norm_of(m, s, up);
    }
}

} // namespace

// group: block = a multiple of `lanes` threads (the driver uses 256); `scratch` is the OpenCL kernel's local
// array (gpuws_arg_local(block · sizeof(T))): CUDA uses 32 entries of static shared memory instead.
extern "C" __global__ void l2_norm_group_f32(const float *in, float *out, unsigned rows, unsigned cols, unsigned lanes,
                                             gpuws_local scratch)
{
    (void)scratch;
    l2_norm_group(in, out, rows, cols, lanes);
}
extern "C" __global__ void l2_norm_group_f64(const double *in, double *out, unsigned rows, unsigned cols,
                                             unsigned lanes, gpuws_local scratch)
{
    (void)scratch;
    l2_norm_group(in, out, rows, cols, lanes);
}
extern "C" __global__ void l2_norm_rows_f32(const float *in, float *out, unsigned rows, unsigned cols)
{
    l2_norm_rows(in, out, rows, cols);
}
extern "C" __global__ void l2_norm_rows_f64(const double *in, double *out, unsigned rows, unsigned cols)
{
    l2_norm_rows(in, out, rows, cols);
}

GPUWS_CUDA_KERNELS(l2_norm, GPUWS_CUDA_KERNEL(l2_norm_group_f32), GPUWS_CUDA_KERNEL(l2_norm_group_f64),
                   GPUWS_CUDA_KERNEL(l2_norm_rows_f32), GPUWS_CUDA_KERNEL(l2_norm_rows_f64))
