/* gpuws_sigma_clip_host's loop on a chosen number of parts (sigma_clip_host.c), for the tests: the result must be
 * the same bits for any number. Never installed. */
#ifndef GPUWS_SIGMA_CLIP_HOST_H
#define GPUWS_SIGMA_CLIP_HOST_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

/* nparts parts (1 at least, at most nvals) of this caller's values; reduce NULL: this caller's values alone, whose
 * options are already checked; else as gpuws_sigma_clip_host_reduce. Errors as those calls'. */
gpuws_status gpuws__sigma_clip_host_split(const float *x, size_t nvals, const gpuws_sigma_clip_options *o,
                                          size_t nparts, gpuws_sum_reducer reduce, void *reduce_user,
                                          gpuws_sigma_clip_result *result);

#endif
