// Pattern fill for gpuws_buffer_fill when the pattern bytes differ (equal bytes go through cudaMemsetAsync).
#include <cuda_runtime.h>

namespace
{
struct pattern16 {
    unsigned char b[16];
};

__global__ void fill_pattern(unsigned char *dst, size_t n, pattern16 p, unsigned psize)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = p.b[i % psize]; // dst offset is a multiple of psize (checked by core)
}
} // namespace

extern "C" cudaError_t gpuws__cuda_fill(void *dst, size_t n, const void *pattern, size_t psize, cudaStream_t s)
{
    pattern16 p = {};
    for (size_t i = 0; i < psize && i < 16; i++) p.b[i] = static_cast<const unsigned char *>(pattern)[i];
    size_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    fill_pattern<<<(unsigned)blocks, 256, 0, s>>>(static_cast<unsigned char *>(dst), n, p, (unsigned)psize);
    return cudaGetLastError();
}
