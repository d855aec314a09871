/* The synthetic sky of `gpuws sources --demo` (see kernels/sources/sources_ref.h): one work-item per pixel,
 * Box-Muller noise from a counter-based hash of (seed, pixel), plus the beams of the sources in the 3x3 cells around
 * the pixel, summed in the reference's order. */

inline ulong sky_mix64(ulong z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    return z ^ (z >> 31);
}

__kernel void sources_sky_f32(__global float *img, __global const float *src, __global const uint *cell_start,
                              uint width, uint height, uint cell, uint cells_x, uint cells_y, ulong seed, float sigma,
                              float r2max, float inv_two_s2)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height) return;
    const ulong i = (ulong)y * width + x;
    const ulong h = sky_mix64(seed + (i + 1) * 0x9e3779b97f4a7c15UL);
    const float u1 = (float)((h >> 40) + 1) * 0x1.0p-24f;
    const float u2 = (float)((h >> 16) & 0xffffffUL) * 0x1.0p-24f;
    const float r = sqrt(-2.0f * log(u1));
    const float a = 6.28318530717958647692f * u2;
    float v = sigma * (r * cos(a));
    const int cx = (int)(x / cell), cy = (int)(y / cell);
    for (int ny = cy - 1; ny <= cy + 1; ny++) {
        if (ny < 0 || ny >= (int)cells_y) continue;
        for (int nx = cx - 1; nx <= cx + 1; nx++) {
            if (nx < 0 || nx >= (int)cells_x) continue;
            const uint c = (uint)ny * cells_x + (uint)nx;
            for (uint k = cell_start[c]; k < cell_start[c + 1]; k++) {
                const float dx = (float)x - src[3 * k], dy = (float)y - src[3 * k + 1];
                const float d2 = dx * dx + dy * dy;
                if (d2 > r2max) continue;
                v += src[3 * k + 2] * exp(-d2 * inv_two_s2);
            }
        }
    }
    img[i] = v;
}
