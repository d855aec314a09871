/* Philox4x32-10's multipliers and Weyl increments (Salmon et al., SC'11), shared by philox.h (the reference and the
 * CUDA kernel) and monte_carlo_pi.cl (into which cmake/embed_cl.cmake copies this file): plain preprocessor, valid
 * C11, CUDA and OpenCL C. */
#ifndef GPUWS_PHILOX_CONSTANTS_H
#define GPUWS_PHILOX_CONSTANTS_H

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

#endif
