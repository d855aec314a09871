#ifndef GPUWS_ALG_CONVOLVE_H
#define GPUWS_ALG_CONVOLVE_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the convolve algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
