/* Launch shapes shared by the host driver (label.c), the CUDA kernels (label.cu) and the OpenCL kernels (label.cl,
 * into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid C11, CUDA and OpenCL C. */
#ifndef GPUWS_LABEL_LAYOUT_H
#define GPUWS_LABEL_LAYOUT_H

#define LABEL_TILE_W        32 /* tile of the `local` pass: one block of LABEL_TILE_W x LABEL_TILE_ROWS threads */
#define LABEL_TILE_H        32
#define LABEL_TILE_ROWS     8   /* each thread takes LABEL_TILE_H / LABEL_TILE_ROWS rows */
#define LABEL_CHUNK_THREADS 256 /* `flatten`: one block per chunk of raster-consecutive pixels */
#define LABEL_PER_THREAD    8
#define LABEL_CHUNK         (LABEL_CHUNK_THREADS * LABEL_PER_THREAD)

#endif
