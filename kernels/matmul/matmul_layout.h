/* Kernel shapes shared by the host driver (matmul.c), the CUDA kernels (matmul.cu) and the OpenCL kernels
 * (matmul.cl, into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid C11, CUDA and OpenCL C. */
#ifndef GPUWS_MATMUL_LAYOUT_H
#define GPUWS_MATMUL_LAYOUT_H

/* The shared variant: a MATMUL_SHARED_TILE x MATMUL_SHARED_TILE work-group per tile of C. */
#define MATMUL_SHARED_TILE 16

/* The tiled variant: MATMUL_TX x MATMUL_TY work-items (along n and m), 16-byte vectors (MATMUL_VW_* elements),
 * MATMUL_BK k per step; a work-group computes a tile of C of 2 * TY * VW rows by 2 * TX * VW columns. matmul.cu
 * has this shape only; it is matmul.cl's default, which -DMM_TX, -DMM_TY, -DMM_VW and -DMM_BK override. */
#define MATMUL_TX     16
#define MATMUL_TY     16
#define MATMUL_BK     8
#define MATMUL_VW_F32 4
#define MATMUL_VW_F64 2

/* The small shape the driver builds matmul.cl with for CPU OpenCL devices and devices with small work-groups. */
#define MATMUL_SMALL_TX 8
#define MATMUL_SMALL_TY 8
#define MATMUL_SMALL_VW 2
#define MATMUL_SMALL_BK 16

/* Tile order: MATMUL_GROUP_M rows of tiles walk the tile columns together, so their B tiles are shared in cache. */
#define MATMUL_GROUP_M 8u

#endif
