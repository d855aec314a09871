/* Shape of convolve1d's stream kernel (the memory-bound path), one definition for convolve1d.c (launch and
 * eligibility), convolve1d.cu (compile-time shape) and convolve1d.cl (passed as -D build options by the driver).
 * Design: convolve1d.cu's header comment and docs/algorithms/convolve.md. */
#ifndef GPUWS_CONVOLVE1D_STREAM_H
#define GPUWS_CONVOLVE1D_STREAM_H

#define C1S_THREADS 256 /* threads per block: fixed, so tiles and shared arrays have compile-time sizes */
#define C1S_VECS    2   /* 16-byte output vectors per thread per tile (8 f32 / 4 f64 outputs, 32 bytes) */
#define C1S_HALO_VECS                                                                                                  \
    64 /* aligned 16-byte halo vectors per tile: the taps (rounded up to 8) plus the signal's
                             * misalignment (< one vector) must fit, so at most 248 f32 / 120 f64 taps */
/* Resident blocks of 256 threads per SM, through a register cap (__launch_bounds__ / -cl-nv-maxrregcount): 64
 * registers per thread in f32 (4 blocks), 80 in f64 (3 blocks; at 64 ptxas spills). The persistent grid
 * is that many blocks per compute unit. */
#define C1S_BLOCKS_PER_CU_F32 4
#define C1S_BLOCKS_PER_CU_F64 3

#define C1S_STR_(x) #x
#define C1S_STR(x)  C1S_STR_(x)
/* The OpenCL build options that carry the shape into convolve1d.cl. */
#define C1S_CL_OPTIONS                                                                                                 \
    "-DC1S_THREADS=" C1S_STR(C1S_THREADS) " -DC1S_VECS=" C1S_STR(C1S_VECS) " -DC1S_HALO_VECS=" C1S_STR(C1S_HALO_VECS)

#endif
