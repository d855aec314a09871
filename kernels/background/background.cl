/* Mesh background (background_mesh.h holds the arithmetic, background.c the host side).
 *   background_mesh    one work-group per mesh: two passes of f64 sums in bg_lanes_fold's order (usable pixels;
 *                      then those within the 2σ cuts), the histogram in local memory (local atomics), and the
 *                      work-group estimates the mode from it (bg_mode_group). Writes mesh[2m] = background,
 *                      mesh[2m + 1] = rms (-1e30 both: bad mesh).
 *   background_interp  one work-item per pixel: the spline from the grid plan the host made from those.
 * Every barrier is in unconditional code (a bad mesh runs the passes with cuts that keep nothing), the
 * single-work-item tail is an `if (lid == 0)` block (PoCL 3.1 ran code after a per-work-item return), and the local
 * memory comes as kernel arguments: with the same arrays declared in the kernel, PoCL's results changed from run to
 * run (work-groups lost counts and partial sums). */
#ifdef GPUWS_FP64
#pragma OPENCL FP_CONTRACT OFF

#include "background_mesh.h"

__kernel void background_mesh(__global const float *image, __global const uchar *mask, uint has_mask, uint width,
                              uint height, uint bw, uint bh, uint nx, __global float *mesh, __local uint *hist,
                              __local double *red)
{
    const uint lid = get_local_id(0), B = get_local_size(0), m = get_group_id(0);
    const uint x0 = (m % nx) * bw, y0 = (m / nx) * bh;
    const uint mw = min(bw, width - x0), mh = min(bh, height - y0), npx = mw * mh;

    double s, ss, n;
    bg_group_pass(image, mask, has_mask, width, x0, y0, mw, npx, 1, 0.0f, 0.0f, &s, &ss, &n, red, lid, B);
    /* A bad mesh runs the rest too, with cuts that keep nothing: every barrier stays in uniform, unconditional code */
    const int good = bg_enough(n, (double)npx);
    float lcut = 1.0f, hcut = 0.0f;
    if (good) bg_cuts(s, ss, n, &lcut, &hcut);
    bg_group_pass(image, mask, has_mask, width, x0, y0, mw, npx, 0, lcut, hcut, &s, &ss, &n, red, lid, B);
    float mean = 0.0f, sigma = 0.0f, qzero = 0.0f, qscale = 1.0f;
    const int levels = good ? bg_levels(s, ss, n, &mean, &sigma, &qzero, &qscale) : 0;
    const float cste = good ? bg_cste(qzero, qscale) : 0.0f;
    for (int b = (int)lid; b < levels; b += (int)B) hist[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; good && i < npx; i += B) {
        const ulong p = (ulong)(y0 + i / mw) * width + x0 + i % mw;
        const int b = bg_bin(image[p], qscale, cste, levels);
        if (b >= 0 && (!has_mask || mask[p] == 0)) atomic_inc(&hist[b]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float rms; /* a bad mesh has no levels: the mode's loop makes no pass */
    const float mode = bg_mode_group(hist, levels, mean, qzero, qscale, &rms, lid, B, red);
    if (lid == 0) {
        mesh[2 * (ulong)m] = good ? mode : (float)-BG_BIG;
        mesh[2 * (ulong)m + 1] = good ? rms : (float)-BG_BIG;
    }
}

/* An f64 image rounded to f32, as SEP converts its input. */
__kernel void background_to_f32(__global const double *x, ulong n, __global float *y)
{
    GPUWS_FOR_EACH(i, n) y[i] = (float)x[i];
}

/* plan and k: the same buffer (background_ref.h: the plan), read as floats and as int32. One work-item per column
 * and BG_INTERP_ROWS rows: the column's weights and the 32 plan values of the grid rows around it stay in registers
 * until its rows pass the next grid row, so a pixel costs two stores and the row's 4 (shared) weights. */
__kernel void background_interp(__global const float *plan, __global const int *k, uint width, uint first,
                                uint height, uint nx, uint ny, ulong rows, ulong cols, ulong row_k, ulong col_k,
                                __global float *back, __global float *rms)
{
    const uint x = get_global_id(0);
    if (x >= width) return;
    const ulong n = (ulong)nx * ny;
    const int kx = k[col_k + x], k1 = nx > 1 ? kx + 1 : kx;
    float cx[BG_COL_COEFS], cb[16], cr[16];
    for (int i = 0; i < BG_COL_COEFS; i++) cx[i] = plan[cols + BG_COL_COEFS * (ulong)x + i];
    long held = -1; /* the grid row whose values cb and cr hold */
    /* the groups of rows stride by the grid's height: a grid's rows are capped (65535 on NVIDIA's devices) */
    const uint stride = (uint)get_global_size(1) * BG_INTERP_ROWS;
    for (uint y0 = first + (uint)get_global_id(1) * BG_INTERP_ROWS; y0 < height; y0 += stride) {
        for (uint y = y0, y_end = min(y0 + BG_INTERP_ROWS, height); y < y_end; y++) {
            const ulong yl = (ulong)k[row_k + y], y1 = ny > 1 ? yl + 1 : yl;
            if ((long)yl != held) {
                bg_nodes(plan, n, yl * nx, y1 * nx, kx, k1, cb);
                bg_nodes(plan + 4 * n, n, yl * nx, y1 * nx, kx, k1, cr);
                held = (long)yl;
            }
            __global const float *ry = plan + rows + BG_ROW_COEFS * (ulong)y;
            const ulong p = (ulong)(y - first) * width + x;
            back[p] = bg_interp(cb, ry, cx);
            rms[p] = bg_interp(cr, ry, cx);
        }
    }
}

#endif
