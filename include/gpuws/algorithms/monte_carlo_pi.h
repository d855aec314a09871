#ifndef GPUWS_ALG_MONTE_CARLO_PI_H
#define GPUWS_ALG_MONTE_CARLO_PI_H
#ifdef __cplusplus
extern "C" {
#endif

/* (declarations of the monte_carlo_pi algorithm come with its implementation) */

#ifdef __cplusplus
}
#endif
#endif
