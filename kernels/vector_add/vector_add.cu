// c = a + b, the workshop's exercise 2. Grid-stride: the host caps the grid at a few blocks per SM.
#include "../common/gpuws_cuda.cuh"

template <typename T>
__device__ void vector_add(const T *__restrict__ a, const T *__restrict__ b, T *c, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

// c may alias a or b (each element is read before it is written by the same thread), so c is not __restrict__.
extern "C" __global__ void vector_add_f32(const float *a, const float *b, float *c, unsigned long long n)
{
    vector_add(a, b, c, n);
}
extern "C" __global__ void vector_add_f64(const double *a, const double *b, double *c, unsigned long long n)
{
    vector_add(a, b, c, n);
}

GPUWS_CUDA_KERNELS(vector_add, GPUWS_CUDA_KERNEL(vector_add_f32), GPUWS_CUDA_KERNEL(vector_add_f64))
