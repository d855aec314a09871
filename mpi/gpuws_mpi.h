/* gpuws over MPI ranks: the gpuws_mpi library, built when CMake finds MPI (GPUWS_WITH_MPI). The core library never
 * includes mpi.h; these calls give its collective forms an MPI communicator (docs/scale.md, "Several hosts"). */
#ifndef GPUWS_MPI_H
#define GPUWS_MPI_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gpuws_sigma_clip_host over the values of every rank of comm: collective; each rank passes its own n values (0
 * allowed); every rank gets the result of gpuws_sigma_clip_host on all the values together (rank order does not
 * matter: the sums are exact), the same bits on every rank. Errors as gpuws_sigma_clip_host_reduce's, collective
 * too (options that differ between ranks fail every rank); an MPI error is GPUWS_ERR_INTERNAL naming it. */
GPUWS_API gpuws_status gpuws_mpi_sigma_clip_host(MPI_Comm comm, gpuws_context *ctx, const float *data, size_t n,
                                                 const gpuws_sigma_clip_options *options,
                                                 gpuws_sigma_clip_result *result);

#ifdef __cplusplus
}
#endif
#endif
