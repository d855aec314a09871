/* The shapes of gpuws_convolve2d_separable's kernels, shared by the host driver (convolve2d_separable.c), the CUDA
 * kernels (convolve2d.cu) and the OpenCL kernels (convolve2d.cl, into which cmake/embed_cl.cmake copies this file):
 * plain preprocessor, valid C11, CUDA and OpenCL C. Work-groups are 32 x SEP_WARPS work-items. */
#ifndef GPUWS_CONVOLVE2D_LAYOUT_H
#define GPUWS_CONVOLVE2D_LAYOUT_H

#define SEP_KB    256 /* the row pass: taps staged in local memory per block */
#define SEP_C     8   /* taps per chunk */
#define SEP_RS    8   /* the column pass: output rows per work-item */
#define SEP_WARPS 8   /* rows of 32 work-items per work-group */
#define SEP_FTAPS 16  /* the fused kernel: factors of up to SEP_FTAPS taps, tiles of SEP_FTH output rows */
#define SEP_FTH   32

#endif
