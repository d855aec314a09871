/* kernels/common/prelude.cl: put in front of every algorithm's .cl source when it is embedded.
 * Build options always include -cl-std=CL1.2 and, where the device has cl_khr_fp64, -DGPUWS_FP64=1. */
#ifdef GPUWS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* GPUWS_GROUP_SUM(NAME, T) defines `T NAME(T v, __local T *red)`: the sum of v over the work-group (its size a
 * power of two), returned to every work-item; red holds one T per work-item. */
#define GPUWS_GROUP_SUM(NAME, T)                                                                                   \
    static T NAME(T v, __local T *red)                                                                             \
    {                                                                                                              \
        const uint lid = get_local_id(0);                                                                          \
        red[lid] = v;                                                                                              \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                              \
        for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {                                                     \
            if (lid < s) red[lid] += red[lid + s];                                                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
        }                                                                                                          \
        return red[0];                                                                                             \
    }

/* Grid-stride loop over [0, n) with 64-bit indices. */
#define GPUWS_FOR_EACH(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

/* Exclusive prefix sum of v over the work-group (at most 32 * 32 work-items); *total gets the sum. sc: 32 *
 * GPUWS_SCAN_PAD ints of local memory, seg: 64; both free again when it returns. Four barriers whatever the group
 * size (a Hillis-Steele scan over local memory takes two per doubling: 16 for 256 work-items, 20 for 1024, and
 * NVIDIA's OpenCL has no warp shuffles to replace them with as the CUDA twin does).
 * Work-item t is element k = t % SL of segment s = t / SL (32 segments of SL = ceil(size / 32) elements), stored
 * transposed at sc[k * GPUWS_SCAN_PAD + s]: the scatter (a warp is one segment, consecutive k) and the 32 serial
 * segment scans (work-item s walks k) each touch 32 different banks. Then work-item s < 32 adds up the segment
 * totals before its own, and every work-item reads its segment's offset plus its place in the segment. */
#define GPUWS_SCAN_PAD 33
static int gpuws_group_exclusive_scan(int v, __local int *sc, __local int *seg, int *total)
{
    const uint t = get_local_id(0), nt = get_local_size(0), sl = (nt + 31) / 32;
    const uint s = t / sl, k = t - s * sl;
    sc[k * GPUWS_SCAN_PAD + s] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 32) {
        const uint len = t * sl < nt ? min(sl, nt - t * sl) : 0u;
        int run = 0;
        for (uint q = 0; q < len; q++) {
            const int x = sc[q * GPUWS_SCAN_PAD + t];
            sc[q * GPUWS_SCAN_PAD + t] = run;
            run += x;
        }
        seg[t] = run;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 32) {
        int p = 0;
        for (uint q = 0; q < t; q++) p += seg[q];
        seg[32 + t] = p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *total = seg[63] + seg[31];
    const int r = seg[32 + s] + sc[k * GPUWS_SCAN_PAD + s];
    barrier(CLK_LOCAL_MEM_FENCE); /* sc and seg may be used again */
    return r;
}
