/* Shapes and the record size shared by the host driver (measure.c), the CUDA kernels (measure.cu) and the OpenCL
 * kernels (measure.cl, into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid C11, CUDA and
 * OpenCL C. */
#ifndef GPUWS_MEASURE_LAYOUT_H
#define GPUWS_MEASURE_LAYOUT_H

#define MEASURE_PIXELS    8   /* pixels per work-item and tile: a tile is block * MEASURE_PIXELS pixels */
#define MEASURE_MAX_BLOCK 256 /* largest work-group the accumulate kernel is written for (static local arrays) */
#define MEASURE_JOIN_MAX  32  /* more joins than this in a tile: add runs up in local memory first */
/* One record (gpuws_source_measure) in 64-bit words: sum, row, col, peak, npix, peak_row, peak_col. */
#define MEASURE_RECORD_WORDS 7

#endif
