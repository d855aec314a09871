/* Aperture photometry (aperture_geom.h holds the per-pixel arithmetic, aperture.c the host side).
 *   aperture_sum  one work-group per aperture (striding over the apertures when there are more than groups): its
 *                 work-items share the pixels of the aperture's box, accumulate AP_RAW f64 sums (kron = 0: SEP's
 *                 weighted sums; kron = 1: the Kron sums), and a tree in local memory adds them.
 * Every barrier is in code the whole work-group runs (the aperture loop's bounds are uniform), and the local
 * memory comes as a kernel argument, as background.cl explains. */
#ifdef GPUWS_FP64
#pragma OPENCL FP_CONTRACT OFF

#include "aperture_geom.h"

__kernel void aperture_sum(__global const float *image, __global const float *back, __global const float *rms,
                           __global const uchar *mask, uint has_back, uint has_rms, uint has_mask, float var0,
                           ulong width, ulong n, int subpix, uint kron, __global const double *params,
                           __global double *raw, __local double *red)
{
    const uint lid = get_local_id(0), B = get_local_size(0);
    for (ulong ap = get_group_id(0); ap < n; ap += get_num_groups(0)) {
        __global const double *p = params + AP_PARAMS * ap;
        const ulong x0 = (ulong)p[AP_XMIN], y0 = (ulong)p[AP_YMIN];
        const ulong bw = (ulong)p[AP_XMAX] - x0, npx = bw * ((ulong)p[AP_YMAX] - y0);
        double s[AP_RAW] = { 0.0, 0.0, 0.0, 0.0, 0.0 };
        for (ulong i = lid; i < npx; i += B) {
            const ulong ix = x0 + i % bw, iy = y0 + i / bw;
            ap_add_pixel(p, image, back, rms, mask, (int)has_back, (int)has_rms, (int)has_mask, var0, (int)kron,
                         subpix, ix, iy, iy * width + ix, s);
        }
        for (int k = 0; k < AP_RAW; k++) red[k * B + lid] = s[k];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint h = B / 2; h > 0; h >>= 1) {
            if (lid < h)
                for (int k = 0; k < AP_RAW; k++) red[k * B + lid] += red[k * B + lid + h];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            for (int k = 0; k < AP_RAW; k++) raw[AP_RAW * ap + k] = red[k * B];
        barrier(CLK_LOCAL_MEM_FENCE); /* red is written again for the next aperture */
    }
}

#endif
