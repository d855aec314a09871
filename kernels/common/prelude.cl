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
