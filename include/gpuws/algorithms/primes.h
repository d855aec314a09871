#ifndef GPUWS_ALG_PRIMES_H
#define GPUWS_ALG_PRIMES_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the primes algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
