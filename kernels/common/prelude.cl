/* kernels/common/prelude.cl: put in front of every algorithm's .cl source when it is embedded.
 * Build options always include -cl-std=CL1.2 and, where the device has cl_khr_fp64, -DGPUWS_FP64=1. */
#ifdef GPUWS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* Grid-stride loop over [0, n) with 64-bit indices. */
#define GPUWS_FOR_EACH(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))
