// Segmentation: mask[i] = data[i] > t ? 1 : 0. Four values per thread and step (one 16-byte load, one 4-byte
// store), grid-stride; the last n % 4 values one per thread.
#include "../common/gpuws_cuda.cuh"

extern "C" __global__ void threshold_f32(const float *__restrict__ data, unsigned char *__restrict__ mask,
                                         unsigned long long n, float t)
{
    const unsigned long long nv = n >> 2, stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *v = reinterpret_cast<const float4 *>(data); // cudaMalloc'd buffers are 256-byte aligned
    uchar4 *m = reinterpret_cast<uchar4 *>(mask);
    for (unsigned long long i = tid; i < nv; i += stride) {
        const float4 x = __ldg(v + i);
        m[i] = make_uchar4(x.x > t, x.y > t, x.z > t, x.w > t);
    }
    for (unsigned long long j = (nv << 2) + tid; j < n; j += stride) mask[j] = data[j] > t ? 1 : 0;
}

GPUWS_CUDA_KERNELS(threshold, GPUWS_CUDA_KERNEL(threshold_f32))
