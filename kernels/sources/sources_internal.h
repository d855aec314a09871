/* Internals of the source-finding pipeline used by the CLI's --demo, the tests and the benchmarks (not installed). */
#ifndef GPUWS_SOURCES_INTERNAL_H
#define GPUWS_SOURCES_INTERNAL_H

#include "../common/driver.h"
#include "../../core/options.h"
#include "sources_ref.h"

/* The pipeline on an image already on the device (width*height f32 in `image`, in the stream's context): the same
 * as gpuws_find_sources without the upload (ms_upload = 0). Blocks; the stream NULL = the default stream. */
gpuws_status gpuws__find_sources_device(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                                        const gpuws_sources_options *options, gpuws_catalog **catalog);

/* Fills `image` (p->width * p->height f32) with the synthetic sky of p and `sources` (p->num_sources of them), on
 * the device (the reference on the CPU backend). Blocks until done. */
gpuws_status gpuws__sky_generate(gpuws_stream *s, const gpuws_sky_params *p, const gpuws_sky_source *sources,
                                 gpuws_buffer *image);

/* gpuws_find_sources_host's measurement: gpuws_measure_ref's records (num_labels of them into out) on `threads`
 * host threads, in blocks of gpuws__measure_host_block_rows(width) rows. labels must be connected components numbered
 * 1..N in raster order of their first pixels (gpuws_label's); other values than 1..num_labels are ignored. npix and
 * the peaks are gpuws_measure_ref's; each label's sums add its pixels in raster order within a block, then the
 * blocks' partial sums in block order: the same bits for any thread count, and within gpuws_measure_ref's
 * summation bounds (a different order of the same additions). Host memory: measure_host.c. Errors: out of memory;
 * labels found not to be in raster order (GPUWS_ERR_INVALID_ARGUMENT); out is then unspecified. */
gpuws_status gpuws__measure_host(const float *data, const int32_t *labels, size_t width, size_t height,
                                 size_t num_labels, unsigned threads, gpuws_source_measure *out);
size_t gpuws__measure_host_block_rows(size_t width);

#endif
