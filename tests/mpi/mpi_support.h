/* What the mpirun tests share: starting MPI with a CPU-backend context, failing every rank. */
#ifndef GPUWS_MPI_SUPPORT_H
#define GPUWS_MPI_SUPPORT_H

#include "gpuws_mpi.h"

#include <stdio.h>

/* Prints what failed on this rank and aborts every rank (so none waits in a collective). */
static inline int mpi_fail(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s (%s)\n", rank, what, gpuws_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* MPI_Init, this rank and the rank count, and a context on the CPU backend (aborts when there is none). */
static inline gpuws_context *mpi_start(int *argc, char ***argv, int *rank, int *size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = "cpu";
    gpuws_context *ctx = NULL;
    if (gpuws_context_create(&ctx, &co)) mpi_fail(*rank, "no context");
    return ctx;
}

#endif
