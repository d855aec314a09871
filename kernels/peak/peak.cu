// The FMA-rate kernel (see peak.h): eight independent register chains x = fma(x, a, b) per thread, the step loop
// unrolled by 16 so the loop's own instructions are a few percent of the FMAs. Nothing touches memory but the
// one store per thread.
#include "../common/gpuws_cuda.cuh"

namespace
{

__device__ __forceinline__ float step(float x, float a, float b) { return __fmaf_rn(x, a, b); }
__device__ __forceinline__ double step(double x, double a, double b) { return __fma_rn(x, a, b); }

template <typename T> __device__ void peak(T *__restrict__ out, T a, T b, unsigned iters, unsigned long long n)
{
    const unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const T base = T(2) + T(t & 7) * T(0.25); // gpuws__peak_start
    T x0 = base, x1 = base + T(0.125), x2 = base + T(0.25), x3 = base + T(0.375), x4 = base + T(0.5),
      x5 = base + T(0.625), x6 = base + T(0.75), x7 = base + T(0.875);
    for (unsigned i = 0; i < iters; i += 16) {
#pragma unroll
        for (int k = 0; k < 16; k++) {
            x0 = step(x0, a, b);
            x1 = step(x1, a, b);
            x2 = step(x2, a, b);
            x3 = step(x3, a, b);
            x4 = step(x4, a, b);
            x5 = step(x5, a, b);
            x6 = step(x6, a, b);
            x7 = step(x7, a, b);
        }
    }
    if (t < n) out[t] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}

} // namespace

extern "C" __global__ void peak_fma_f32(float *out, float a, float b, unsigned iters, unsigned long long n)
{
    peak(out, a, b, iters, n);
}
extern "C" __global__ void peak_fma_f64(double *out, double a, double b, unsigned iters, unsigned long long n)
{
    peak(out, a, b, iters, n);
}

GPUWS_CUDA_KERNELS(peak, GPUWS_CUDA_KERNEL(peak_fma_f32), GPUWS_CUDA_KERNEL(peak_fma_f64))
