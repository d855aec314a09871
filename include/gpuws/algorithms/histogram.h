#ifndef GPUWS_ALG_HISTOGRAM_H
#define GPUWS_ALG_HISTOGRAM_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the histogram algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
