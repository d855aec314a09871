#ifndef GPUWS_ALG_TRANSPOSE_H
#define GPUWS_ALG_TRANSPOSE_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the transpose algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
