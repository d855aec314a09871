#ifndef GPUWS_ALG_UFUNC_H
#define GPUWS_ALG_UFUNC_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the ufunc algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
