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

/* gpuws_sigma_clip over the values that every rank of comm holds on its device (stream NULL: data's context's
 * default stream; n 0 allowed): collective, ranks in rank order; no value leaves its device, and every rank gets the
 * same bits (gpuws_sigma_clip_reduce: count and median those of gpuws_sigma_clip on all the values together, mean
 * and std within a few ulps). What a rank sends: about 2048 words a pass (three passes an iteration), 3 more a chunk
 * of 2^18 values of every rank in the first pass of each. Errors as gpuws_sigma_clip_reduce's, collective too. */
GPUWS_API gpuws_status gpuws_mpi_sigma_clip(MPI_Comm comm, gpuws_stream *stream, const gpuws_buffer *data, size_t n,
                                            const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result);

/* gpuws_label_host over an image whose rows are spread over the ranks of comm in rank order (rank r's rows follow
 * rank r - 1's; a rank may hold none): collective; each rank labels its own rows on its ctx and gets them in labels
 * with the whole image's numbering (scipy.ndimage.label's), and every rank gets the whole image's N. What a rank
 * sends: its label count and its first and last rows of labels (2 width + 2 words), gathered by one allreduce.
 * Errors as gpuws_label_host_reduce's (ranks that disagree on width, connectivity or the part count fail every
 * rank before labels is written). */
GPUWS_API gpuws_status gpuws_mpi_label_host(MPI_Comm comm, gpuws_context *ctx, size_t width, size_t rows,
                                            const void *mask, size_t mask_stride, int connectivity,
                                            const gpuws_label_host_options *options, int32_t *labels,
                                            size_t *num_labels);

/* gpuws_find_sources_parts over the ranks of comm, each with its own parts (its rows on its devices, following the
 * rows of the ranks before it; 0 parts allowed): collective; rank root gets the whole catalogue, every other rank the
 * sources that begin in its rows (root GPUWS_MPI_ALL_RANKS: every rank gets the whole catalogue; the same root on
 * every rank), catalog->labels its own rows. gpuws_find_sources_parts_reduce says what a rank sends: the records
 * of the labels that cross ranks' borders in one MPI_Allgatherv, then each rank's finished sources in one
 * MPI_Gatherv into root (MPI_Allgatherv for every rank). */
#define GPUWS_MPI_ALL_RANKS (-1)
GPUWS_API gpuws_status gpuws_mpi_find_sources_parts(MPI_Comm comm, const gpuws_image_part *parts, size_t num_parts,
                                                    size_t width, const gpuws_sources_options *options, int root,
                                                    gpuws_catalog **catalog);

/* gpuws_find_sources_host over an image whose rows are spread over the ranks of comm in rank order (rank r's rows
 * follow rank r - 1's; a rank may hold none, image NULL then): collective; every rank gets the whole image's
 * catalogue, gpuws_find_sources_host's (the same bits when every rank's first row is a multiple of
 * gpuws_find_sources_host_block_rows(width), else flux and centres within the summation bounds), and in
 * catalog->labels (want_labels) its own rows' labels. What a rank sends: gpuws_find_sources_host_reduce says (the
 * partial records of all ranks, 64 bytes each, gathered by one allreduce). Errors as
 * gpuws_find_sources_host_reduce's, collective too (options that differ between ranks fail every rank). */
GPUWS_API gpuws_status gpuws_mpi_find_sources_host(MPI_Comm comm, gpuws_context *ctx, const float *image, size_t width,
                                                   size_t rows, const gpuws_sources_options *options,
                                                   const gpuws_label_host_options *label_options,
                                                   gpuws_catalog **catalog);

/* gpuws_extract_host over an image whose rows are spread over the ranks of comm in rank order (rank r's rows follow
 * rank r - 1's; a rank may hold none, image NULL then; with options->background each rank's first row a multiple of
 * the mesh height): collective; rank root gets gpuws_extract_host's catalogue of the whole image (and in its
 * options->segmap the whole map), the other ranks *catalog NULL; each rank its own rows of back_out and rms_out.
 * gpuws_extract_host_reduce says what a rank sends: the options' agreement, its meshes and halo rows to every rank
 * (MPI_Allgatherv), its pixel records to root (MPI_Gatherv, 24 bytes a detected pixel). Errors as
 * gpuws_extract_host_reduce's, collective too. */
GPUWS_API gpuws_status gpuws_mpi_extract_host(MPI_Comm comm, gpuws_context *ctx, size_t width, size_t rows,
                                              const float *image, const gpuws_extract_host_options *options, int root,
                                              gpuws_extract_catalog **catalog);

#ifdef __cplusplus
}
#endif
#endif
