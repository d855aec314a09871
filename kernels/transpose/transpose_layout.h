/* The tile shared by the host driver (transpose.c), the CUDA kernels (transpose.cu) and the OpenCL kernels
 * (transpose.cl, into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid C11, CUDA and
 * OpenCL C. A block of TRANSPOSE_TILE x TRANSPOSE_ROWS threads moves a TRANSPOSE_TILE x TRANSPOSE_TILE tile,
 * TRANSPOSE_TILE / TRANSPOSE_ROWS elements per thread. */
#ifndef GPUWS_TRANSPOSE_LAYOUT_H
#define GPUWS_TRANSPOSE_LAYOUT_H

#define TRANSPOSE_TILE 32u
#define TRANSPOSE_ROWS 8u

#endif
