// Mesh background: the CUDA twin of background.cl (read its header comment first; kernels, parameters and
// algorithm are the same, the arithmetic is background_mesh.h's).
#include "../common/gpuws_cuda.cuh"

#include <cmath>

#include "background_mesh.h"

namespace
{

typedef unsigned long long u64;

} // namespace

extern "C" __global__ void __launch_bounds__(BG_BLOCK)
    background_mesh(const float *image, const unsigned char *mask, unsigned has_mask, unsigned width, unsigned height,
                    unsigned bw, unsigned bh, unsigned nx, float *mesh, gpuws_local lhist, gpuws_local lred)
{
    // the regions of gpuws_arg_local, in parameter order, each 16-byte aligned: BG_MAXLEVELS counts, 3 x BG_LANES + 1
    // doubles
    GPUWS_SHARED_BYTES();
    unsigned int *hist = reinterpret_cast<unsigned int *>(gpuws_smem);
    double *red = reinterpret_cast<double *>(gpuws_smem + ((lhist.bytes + 15) & ~15ull));
    (void)lred;
    const unsigned lid = threadIdx.x, B = blockDim.x, m = blockIdx.x;
    const unsigned x0 = (m % nx) * bw, y0 = (m / nx) * bh;
    const unsigned mw = min(bw, width - x0), mh = min(bh, height - y0), npx = mw * mh;

    double s, ss, n;
    bg_group_pass(image, mask, has_mask, width, x0, y0, mw, npx, 1, 0.0f, 0.0f, &s, &ss, &n, red, lid, B);
    if (!bg_enough(n, (double)npx)) {
        if (lid == 0) mesh[2 * (u64)m] = mesh[2 * (u64)m + 1] = (float)-BG_BIG;
        return; // the whole block
    }
    float lcut, hcut;
    bg_cuts(s, ss, n, &lcut, &hcut);
    bg_group_pass(image, mask, has_mask, width, x0, y0, mw, npx, 0, lcut, hcut, &s, &ss, &n, red, lid, B);
    float mean, sigma, qzero, qscale;
    const int levels = bg_levels(s, ss, n, &mean, &sigma, &qzero, &qscale);
    const float cste = bg_cste(qzero, qscale);
    for (int b = (int)lid; b < levels; b += (int)B) hist[b] = 0u;
    __syncthreads();
    for (unsigned i = lid; i < npx; i += B) {
        const u64 p = (u64)(y0 + i / mw) * width + x0 + i % mw;
        const int b = bg_bin(image[p], qscale, cste, levels);
        if (b >= 0 && (!has_mask || mask[p] == 0)) atomicAdd(&hist[b], 1u);
    }
    __syncthreads();
    float rms;
    const float mode = bg_mode_group(hist, levels, mean, qzero, qscale, &rms, lid, B, red);
    if (lid == 0) {
        mesh[2 * (u64)m] = mode;
        mesh[2 * (u64)m + 1] = rms;
    }
}

// An f64 image rounded to f32, as SEP converts its input.
extern "C" __global__ void background_to_f32(const double *x, u64 n, float *y)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = (float)x[i];
}

extern "C" __global__ void background_interp(const float *plan, const int *k, unsigned width, unsigned first,
                                             unsigned height, unsigned nx, unsigned ny, u64 rows, u64 cols, u64 row_k,
                                             u64 col_k, float *back, float *rms)
{
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= width) return;
    const u64 n = (u64)nx * ny;
    const int kx = k[col_k + x], k1 = nx > 1 ? kx + 1 : kx;
    float cx[BG_COL_COEFS], cb[16], cr[16];
    for (int i = 0; i < BG_COL_COEFS; i++) cx[i] = plan[cols + BG_COL_COEFS * (u64)x + i];
    long long held = -1; // the grid row whose values cb and cr hold
    // the groups of rows stride by the grid's height: a grid's rows are capped (65535 on NVIDIA's devices)
    const unsigned stride = gridDim.y * BG_INTERP_ROWS;
    for (unsigned y0 = first + blockIdx.y * BG_INTERP_ROWS; y0 < height; y0 += stride) {
        for (unsigned y = y0, y_end = min(y0 + BG_INTERP_ROWS, height); y < y_end; y++) {
            const u64 yl = (u64)k[row_k + y], y1 = ny > 1 ? yl + 1 : yl;
            if ((long long)yl != held) {
                bg_nodes(plan, n, yl * nx, y1 * nx, kx, k1, cb);
                bg_nodes(plan + 4 * n, n, yl * nx, y1 * nx, kx, k1, cr);
                held = (long long)yl;
            }
            const float *ry = plan + rows + BG_ROW_COEFS * (u64)y;
            const u64 p = (u64)(y - first) * width + x;
            back[p] = bg_interp(cb, ry, cx);
            rms[p] = bg_interp(cr, ry, cx);
        }
    }
}

GPUWS_CUDA_KERNELS(background, GPUWS_CUDA_KERNEL(background_mesh), GPUWS_CUDA_KERNEL(background_to_f32),
                   GPUWS_CUDA_KERNEL(background_interp))
