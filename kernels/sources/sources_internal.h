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

#endif
