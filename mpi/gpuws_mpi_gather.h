/* gpuws_mpi's gatherer with its message size as a parameter, for the tests (tests/mpi/mpi_world.c): the
 * gatherers pass INT_MAX words. Not installed. */
#ifndef GPUWS_MPI_GATHER_H
#define GPUWS_MPI_GATHER_H

#include "gpuws.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* A gpuws_gatherer over comm: every caller's counts[caller] words in caller order, into root (GPUWS_ALL_CALLERS:
 * into every caller), in place there, through MPI_Gatherv or MPI_Allgatherv while every count and place fits in
 * `most` words (1 .. INT_MAX), else in point-to-point messages of at most `most` words. GPUWS_ERR_INTERNAL on
 * every caller alike when root is neither a caller nor GPUWS_ALL_CALLERS, most is out of range, or a caller has no
 * memory for the counts. */
GPUWS_API gpuws_status gpuws__mpi_gather(MPI_Comm comm, uint64_t *words, const size_t *counts, size_t caller,
                                         size_t callers, size_t root, size_t most);

#endif
