// Aperture photometry: the CUDA twin of aperture.cl (read its header comment first; kernel, parameters and
// algorithm are the same, the per-pixel arithmetic is aperture_geom.h's).
#include "../common/gpuws_cuda.cuh"

#include <cmath>

#include "aperture_geom.h"

typedef unsigned long long u64;

extern "C" __global__ void __launch_bounds__(AP_BLOCK)
    aperture_sum(const float *image, const float *back, const float *rms, const unsigned char *mask, unsigned has_back,
                 unsigned has_rms, unsigned has_mask, float var0, u64 width, u64 n, int subpix, unsigned kron,
                 const double *params, double *raw, gpuws_local lred)
{
    GPUWS_SHARED_BYTES();
    double *red = reinterpret_cast<double *>(gpuws_smem);
    (void)lred;
    const unsigned lid = threadIdx.x, B = blockDim.x;
    for (u64 ap = blockIdx.x; ap < n; ap += gridDim.x) {
        const double *p = params + AP_PARAMS * ap;
        const u64 x0 = (u64)p[AP_XMIN], y0 = (u64)p[AP_YMIN];
        const u64 bw = (u64)p[AP_XMAX] - x0, npx = bw * ((u64)p[AP_YMAX] - y0);
        double s[AP_RAW] = { 0.0, 0.0, 0.0, 0.0, 0.0 };
        for (u64 i = lid; i < npx; i += B) {
            const u64 ix = x0 + i % bw, iy = y0 + i / bw;
            ap_add_pixel(p, image, back, rms, mask, (int)has_back, (int)has_rms, (int)has_mask, var0, (int)kron, subpix,
                         ix, iy, iy * width + ix, s);
        }
        for (int k = 0; k < AP_RAW; k++) red[k * B + lid] = s[k];
        __syncthreads();
        for (unsigned h = B / 2; h > 0; h >>= 1) {
            if (lid < h)
                for (int k = 0; k < AP_RAW; k++) red[k * B + lid] += red[k * B + lid + h];
            __syncthreads();
        }
        if (lid == 0)
            for (int k = 0; k < AP_RAW; k++) raw[AP_RAW * ap + k] = red[k * B];
        __syncthreads(); // red is written again for the next aperture
    }
}

GPUWS_CUDA_KERNELS(aperture, GPUWS_CUDA_KERNEL(aperture_sum))
