/* gpuws_sigma_clip_host's loop on a chosen number of parts (sigma_clip_host.c), for the tests: the result must be
 * the same bits for any number. Never installed. */
#ifndef GPUWS_SIGMA_CLIP_HOST_H
#define GPUWS_SIGMA_CLIP_HOST_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

/* Options already checked; nparts parts (1 at least, at most nvals). Errors as gpuws_sigma_clip_host's. */
gpuws_status gpuws__sigma_clip_host_parts(const float *x, size_t nvals, const gpuws_sigma_clip_options *o,
                                          size_t nparts, gpuws_sigma_clip_result *result);

#endif
