#ifndef GPUWS_ALG_MATMUL_H
#define GPUWS_ALG_MATMUL_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the matmul algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
