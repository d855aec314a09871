/* gpuws over MPI_COMM_WORLD for a program that does not include mpi.h nor link libmpi: the gpuws tool dlopen()s
 * libgpuws_mpi when it runs under an MPI launcher (`mpirun -n P gpuws sources ...`, docs/scale.md) and finds these
 * by name. The reducer fits gpuws_find_sources_host_reduce (and the other _reduce calls) of the caller's own copy
 * of gpuws: the library calls stay in the caller, only the MPI calls are made here. MPI errors abort the job (MPI's
 * default handler on MPI_COMM_WORLD). */
#ifndef GPUWS_MPI_WORLD_H
#define GPUWS_MPI_WORLD_H

#include "gpuws.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initialises MPI (MPI_Init_thread, MPI_THREAD_FUNNELED: only the calling thread makes MPI calls) unless it is
 * already, and gives this process's rank and MPI_COMM_WORLD's size, and its rank among the ranks of its host
 * (MPI_COMM_TYPE_SHARED). GPUWS_ERR_INTERNAL when MPI cannot start. */
GPUWS_API gpuws_status gpuws_mpi_world_init(int *rank, int *size, int *local_rank);
typedef gpuws_status (*gpuws_mpi_world_init_fn)(int *rank, int *size, int *local_rank);

/* A gpuws_sum_reducer over MPI_COMM_WORLD (user is not used): MPI_Allreduce of count uint64 sums, in place. */
GPUWS_API gpuws_status gpuws_mpi_world_sum(void *user, uint64_t *words, size_t count);

/* A gpuws_gatherer over MPI_COMM_WORLD (user is not used; caller: this rank): MPI_Allgatherv in place, or MPI_Gatherv
 * into root, or where the words do not fit MPI's int counts, messages of at most INT_MAX words. Every rank fails
 * alike (GPUWS_ERR_INTERNAL) when one has no memory for the counts, or root is neither a rank nor
 * GPUWS_ALL_CALLERS. */
GPUWS_API gpuws_status gpuws_mpi_world_gatherer(void *user, uint64_t *words, const size_t *counts, size_t caller,
                                                size_t callers, size_t root);

/* Collective: did every rank succeed? code: this rank's outcome (0: success, else the exit code it would give), why
 * its message (n bytes, n the same on every rank). Returns how many ranks failed; when some did, *first is the
 * lowest of them, *first_code its code and why its message on every rank (truncated to n - 1 bytes). */
GPUWS_API int gpuws_mpi_world_agree(int code, char *why, size_t n, int *first, int *first_code);
typedef int (*gpuws_mpi_world_agree_fn)(int code, char *why, size_t n, int *first, int *first_code);

/* Collective: rank 0 gets every rank's `bytes` bytes at `mine`, in rank order, in `all` (`all_bytes`: the sum of
 * every rank's bytes; the other ranks pass NULL, 0). The parts go in messages of at most 1 GiB (MPI's int counts):
 * a rank's share of a large image may hold many. GPUWS_ERR_INVALID_ARGUMENT on every rank, nothing sent, when the
 * parts do not add up to rank 0's all_bytes, or rank 0's all is NULL while they add up to more than 0 bytes. */
GPUWS_API gpuws_status gpuws_mpi_world_gather(const void *mine, size_t bytes, void *all, size_t all_bytes);
typedef gpuws_status (*gpuws_mpi_world_gather_fn)(const void *mine, size_t bytes, void *all, size_t all_bytes);

/* Collective: rows of an image that the ranks hold in rank order, consecutive from row 0 (this rank rows row0 ..
 * row0 + rows - 1 at mine, every row row_bytes bytes on every rank; a rank may hold none): this rank gets the
 * image's rows lo .. hi - 1 into out, (hi - lo) row_bytes bytes (lo == hi: none), wherever they are, its own
 * included: a halo of neighbours' rows, or rows of ranks beyond them. In messages of at most 1 GiB.
 * GPUWS_ERR_INVALID_ARGUMENT on every rank, nothing sent, when the shares are not consecutive from row 0, the row
 * sizes differ, a rank asks for rows past the last share's or lo > hi, or a NULL mine or out where rows are;
 * GPUWS_ERR_OUT_OF_MEMORY on every rank when one has no memory for what the ranks say (beyond 64 ranks). */
GPUWS_API gpuws_status gpuws_mpi_world_rows(const void *mine, size_t row0, size_t rows, size_t row_bytes, size_t lo,
                                            size_t hi, void *out);
typedef gpuws_status (*gpuws_mpi_world_rows_fn)(const void *mine, size_t row0, size_t rows, size_t row_bytes, size_t lo,
                                                size_t hi, void *out);

/* MPI_Finalize, when MPI is initialised and not finalised yet. */
GPUWS_API void gpuws_mpi_world_finalize(void);
typedef void (*gpuws_mpi_world_finalize_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
