// The synthetic sky of `gpuws sources --demo` (see kernels/sources/sources_ref.h and sources.cl): one thread per
// pixel, Box-Muller noise from a counter-based hash of (seed, pixel) plus the beams of the sources in the 3x3 cells
// around the pixel, summed in the reference's order. Full-precision logf/cosf/expf/sqrtf (no fast math).
#include "../common/gpuws_cuda.cuh"

namespace
{
__device__ __forceinline__ unsigned long long sky_mix64(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
} // namespace

extern "C" __global__ void sources_sky_f32(float *img, const float *src, const unsigned *cell_start, unsigned width,
                                           unsigned height, unsigned cell, unsigned cells_x, unsigned cells_y,
                                           unsigned long long seed, float sigma, float r2max, float inv_two_s2)
{
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned long long i = (unsigned long long)y * width + x;
    const unsigned long long h = sky_mix64(seed + (i + 1) * 0x9e3779b97f4a7c15ULL);
    const float u1 = (float)((h >> 40) + 1) * 0x1.0p-24f;
    const float u2 = (float)((h >> 16) & 0xffffffULL) * 0x1.0p-24f;
    const float r = sqrtf(-2.0f * logf(u1));
    const float a = 6.28318530717958647692f * u2;
    float v = sigma * (r * cosf(a));
    const int cx = (int)(x / cell), cy = (int)(y / cell);
    for (int ny = cy - 1; ny <= cy + 1; ny++) {
        if (ny < 0 || ny >= (int)cells_y) continue;
        for (int nx = cx - 1; nx <= cx + 1; nx++) {
            if (nx < 0 || nx >= (int)cells_x) continue;
            const unsigned c = (unsigned)ny * cells_x + (unsigned)nx;
            for (unsigned k = cell_start[c]; k < cell_start[c + 1]; k++) {
                const float dx = (float)x - src[3 * k], dy = (float)y - src[3 * k + 1];
                const float d2 = dx * dx + dy * dy;
                if (d2 > r2max) continue;
                v += src[3 * k + 2] * expf(-d2 * inv_two_s2);
            }
        }
    }
    img[i] = v;
}

GPUWS_CUDA_KERNELS(sources, GPUWS_CUDA_KERNEL(sources_sky_f32))
