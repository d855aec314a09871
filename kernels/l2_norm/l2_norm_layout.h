/* A constant shared by the host driver (l2_norm.c), the CUDA kernels (l2_norm.cu) and the OpenCL kernels
 * (l2_norm.cl, into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid C11, CUDA and OpenCL C. */
#ifndef GPUWS_L2_NORM_LAYOUT_H
#define GPUWS_L2_NORM_LAYOUT_H

/* 16-byte vectors of a row each lane of the group kernel holds in registers between its passes: a row of up to
 * lanes * L2_NORM_VECTORS * 16 bytes is read once. */
#define L2_NORM_VECTORS 8

#endif
