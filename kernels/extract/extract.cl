/* gpuws_extract's device steps (extract.c has the plan; extract_pixel.h the arithmetic, the reference's too).
 * small: two counters (detected pixels; records written), then the normalised filter. maps: d, σ, filtered, each
 * width * height floats. Records: six arrays of cap words (index | blank bit, label, value, filtered, σ, σ of the
 * lower-right neighbour), written through two views of one buffer (as uint and as float). */
#ifdef GPUWS_FP64
#pragma OPENCL FP_CONTRACT OFF

#include "extract_pixel.h"

__kernel void extract_prep(__global const float *image, __global const float *back, uint has_back,
                           __global const float *rms, __global const uchar *mask, uint has_mask, ulong mask_from,
                           uint noise, float err, ulong n, __global float *maps)
{
    GPUWS_FOR_EACH(i, n)
    {
        float s;
        maps[i] = ex_prep(image[i], has_back ? back[i] : 0.0f, has_mask && i >= mask_from && mask[i], (int)noise,
                          noise == EX_NOISE_MAP ? rms[i] : 0.0f, err, &s);
        maps[n + i] = s;
    }
}

__kernel void extract_detect(__global float *maps, __global uint *small, uint width, uint height, uint kw, uint kh,
                             uint filter, uint noise, float thresh, __global uchar *det)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height) return;
    const ulong n = (ulong)width * height, p = (ulong)y * width + x;
    float cd;
    const int hit = ex_detect(maps, maps + n, (__global const float *)(small + 4), width, height, x, y, (int)kw,
                              (int)kh, (int)filter, (int)noise, thresh, &cd);
    maps[2 * n + p] = cd;
    det[p] = (uchar)hit;
    if (hit) atomic_inc(&small[0]);
}

__kernel void extract_scatter(__global const int *labels, __global const float *maps, __global const uchar *mask,
                              uint has_mask, uint width, uint height, __global uint *small, ulong cap,
                              __global uint *ru, __global float *rf)
{
    const ulong n = (ulong)width * height;
    GPUWS_FOR_EACH(i, n)
    {
        const int l = labels[i];
        if (!l) continue;
        const uint slot = atomic_inc(&small[1]);
        if (slot >= cap) continue;
        const long x = (long)(i % width), y = (long)(i / width);
        const int blank = ex_blank_near(maps, mask, (int)has_mask, width, height, x, y);
        ru[slot] = (uint)i | (blank ? EX_BLANK_BIT : 0u);
        ru[cap + slot] = (uint)l;
        rf[2 * cap + slot] = maps[i];
        rf[3 * cap + slot] = maps[2 * n + i];
        rf[4 * cap + slot] = maps[n + i];
        rf[5 * cap + slot] = x + 1 < (long)width && y + 1 < (long)height ? maps[n + i + width + 1] : 0.0f;
    }
}

/* pairs: (pixel index, object + 1) */
__kernel void extract_segmap(__global const uint *pairs, ulong m, __global int *segmap)
{
    GPUWS_FOR_EACH(i, m) segmap[pairs[2 * i]] = (int)pairs[2 * i + 1];
}

#endif
