#ifndef GPUWS_ALG_L2_NORM_H
#define GPUWS_ALG_L2_NORM_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the l2_norm algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
