/* Layout of sigma_clip's device state, shared by the host driver (sigma_clip.c), the CUDA kernels (sigma_clip.cu)
 * and the OpenCL kernels (sigma_clip.cl, into which cmake/embed_cl.cmake copies this file): plain preprocessor,
 * valid C11, CUDA and OpenCL C. */
#ifndef GPUWS_SIGMA_CLIP_STATE_H
#define GPUWS_SIGMA_CLIP_STATE_H

/* `st`: 64-bit words (doubles stored as their bits). */
#define SC_DONE        0 /* 1 once the result words hold the answer */
#define SC_ROUND       1 /* clipping passes completed */
#define SC_FINAL       2 /* 1: max_iterations passes made; this round only measures the final set */
#define SC_KLO         3 /* the kept set is {x : SC_KLO <= key(x) <= SC_KHI} (empty when KLO > KHI) */
#define SC_KHI         4
#define SC_N           5 /* this round's kept count, mean, M2 = sum (x - mean)^2, smallest and largest key */
#define SC_MEAN        6
#define SC_M2          7
#define SC_KMIN        8
#define SC_KMAX        9
#define SC_B1          10 /* radix-select progress: level-1 bin of the lower median and its rank inside it */
#define SC_R1          11
#define SC_B2          12
#define SC_R2          13
#define SC_N0          14 /* non-NaN values in the input (round 0's count) */
#define SC_RES_N       16 /* the result */
#define SC_RES_MEDIAN  17
#define SC_RES_MEAN    18
#define SC_RES_STD     19
#define SC_RES_ITER    20
#define SC_RES_CONV    21
#define SC_STATE_WORDS 32
#define SC_PART_WORDS  8 /* per work-group partial after the state: n, mean, M2, kmin, kmax, blo, bhi */

/* `ctr`: two views of one buffer. 32-bit words 0..7: the tickets and a key. From byte 32 on, 64-bit words (indices
 * below count 64-bit words from the buffer's start): the global histograms, whose bins can hold every value of the
 * input (n may pass 2^32). The work-groups' local histograms stay 32-bit (sigma_clip.c bounds a group's values). */
#define SC_TICKET1   0 /* "last work-group" tickets of the three passes */
#define SC_TICKET2   1
#define SC_TICKET3   2
#define SC_KABOVE    3              /* smallest kept key above the level-2 bucket (the upper median's fallback) */
#define SC_H1        4              /* level-1 histogram (key bits 31..21) of all non-NaN values, built in round 0 */
#define SC_H2        (SC_H1 + 2048) /* level 2 (bits 20..10) inside the level-1 bin */
#define SC_H3        (SC_H2 + 2048) /* level 3 (bits 9..0) inside the level-2 bin */
#define SC_CTR_WORDS (SC_H3 + 1024) /* 64-bit words */

#define SC_MAXB        256 /* largest work-group the kernels are written for (static local arrays) */
#define SC_KEY_NEG_INF 0x007fffffu
#define SC_KEY_POS_INF 0xff800000u

#endif
