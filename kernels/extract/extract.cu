// gpuws_extract's device steps: the CUDA twin of extract.cl (read its header comment first; kernels, parameters and
// arithmetic are the same, the arithmetic is extract_pixel.h's).
#include "../common/gpuws_cuda.cuh"

#include <cmath>

#include "extract_pixel.h"

typedef unsigned long long u64;

extern "C" __global__ void extract_prep(const float *image, const float *back, unsigned has_back, const float *rms,
                                        const unsigned char *mask, unsigned has_mask, u64 mask_from, unsigned noise,
                                        float err, u64 n, float *maps)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        float s;
        maps[i] = ex_prep(image[i], has_back ? back[i] : 0.0f, has_mask && i >= mask_from && mask[i], (int)noise,
                          noise == EX_NOISE_MAP ? rms[i] : 0.0f, err, &s);
        maps[n + i] = s;
    }
}

extern "C" __global__ void extract_detect(float *maps, unsigned *small, unsigned width, unsigned height, unsigned kw,
                                          unsigned kh, unsigned filter, unsigned noise, float thresh,
                                          unsigned char *det)
{
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const u64 n = (u64)width * height, p = (u64)y * width + x;
    float cd;
    const int hit = ex_detect(maps, maps + n, reinterpret_cast<const float *>(small + 4), width, height, x, y, (int)kw,
                              (int)kh, (int)filter, (int)noise, thresh, &cd);
    maps[2 * n + p] = cd;
    det[p] = (unsigned char)hit;
    if (hit) atomicAdd(&small[0], 1u);
}

extern "C" __global__ void extract_scatter(const int *labels, const float *maps, const unsigned char *mask,
                                           unsigned has_mask, unsigned width, unsigned height, unsigned *small, u64 cap,
                                           unsigned *ru, float *rf)
{
    const u64 n = (u64)width * height;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const int l = labels[i];
        if (!l) continue;
        const unsigned slot = atomicAdd(&small[1], 1u);
        if (slot >= cap) continue;
        const long x = (long)(i % width), y = (long)(i / width);
        const int blank = ex_blank_near(maps, mask, (int)has_mask, width, height, x, y);
        ru[slot] = (unsigned)i | (blank ? EX_BLANK_BIT : 0u);
        ru[cap + slot] = (unsigned)l;
        rf[2 * cap + slot] = maps[i];
        rf[3 * cap + slot] = maps[2 * n + i];
        rf[4 * cap + slot] = maps[n + i];
        rf[5 * cap + slot] = x + 1 < (long)width && y + 1 < (long)height ? maps[n + i + width + 1] : 0.0f;
    }
}

extern "C" __global__ void extract_segmap(const unsigned *pairs, u64 m, int *segmap)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x)
        segmap[pairs[2 * i]] = (int)pairs[2 * i + 1];
}

GPUWS_CUDA_KERNELS(extract, GPUWS_CUDA_KERNEL(extract_prep), GPUWS_CUDA_KERNEL(extract_detect),
                   GPUWS_CUDA_KERNEL(extract_scatter), GPUWS_CUDA_KERNEL(extract_segmap))
