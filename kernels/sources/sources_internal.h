/* Internals of the source-finding pipeline used by the CLI's --demo, the tests and the benchmarks (not installed). */
#ifndef GPUWS_SOURCES_INTERNAL_H
#define GPUWS_SOURCES_INTERNAL_H

#include "../common/driver.h"
#include "../../core/options.h"
#include "sources_ref.h"

#include <time.h>

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

/* The pieces of gpuws__measure_host that the collective pipeline (sources_reduce.c) measures its rows with. */
extern const gpuws_source_measure gpuws__measure_empty; /* a label's record before its first pixel */
/* m then p, p's pixels after m's in raster order: the peak rule of gpuws_measure_ref_add (the earlier peak among
 * equal ones, a NaN before any number); the sums add p's. */
void gpuws__measure_merge(gpuws_source_measure *m, const gpuws_source_measure *p);
/* The first column from c on of a row of w labels with a label in 1..nl, or w. */
size_t gpuws__measure_skip_background(const int32_t *row, size_t c, size_t w, size_t nl);
/* The distinct labels in 1..num_labels of a row of w (ascending, in *labels, gpuws__malloc'd) and as many empty
 * records (*records); both NULL and *count 0 when there is none. -1 when out of memory (nothing allocated). */
int gpuws__measure_row_labels(const int32_t *row, size_t w, size_t num_labels, int32_t **labels,
                              gpuws_source_measure **records, size_t *count);
int gpuws__cmp_i32(const void *a, const void *b); /* qsort and bsearch order of int32_t */

/* ---- what gpuws_find_sources_host and its collective form (sources_reduce.c) share (sources.c) ---- */

/* The caller's options and the clipping options they point to, read at this library's sizes (core/options.h);
 * o.clip points to clip. */
typedef struct {
    gpuws_sources_options o;
    gpuws_sigma_clip_options clip;
} sources_options;

/* The options, read and checked; `name` (find_sources, find_sources_host) begins the messages. */
gpuws_status gpuws__sources_read_options(const char *name, const gpuws_sources_options *in, sources_options *r);
/* cat->threshold from the options and cat->clip; an error (name begins it) when it is not a finite float. */
gpuws_status gpuws__sources_threshold_value(const char *name, const gpuws_sources_options *o, gpuws_catalog *cat);
/* mask[i] = image[i] > threshold for n pixels, on up to `threads` host threads. */
void gpuws__sources_mask_host(const float *image, size_t n, float threshold, unsigned threads, uint8_t *mask);
/* The catalogue's record of label k from its measurement. */
static inline gpuws_source gpuws__source_of(const gpuws_source_measure *m, size_t k)
{
    return (gpuws_source){ (int64_t)k, m->col, m->row, m->sum, m->npix, m->peak, m->peak_col, m->peak_row };
}
/* The catalogue's sources from nl measurements (label k + 1 in record k). */
gpuws_status gpuws__sources_fill(gpuws_catalog *cat, const gpuws_source_measure *meas, size_t nl);
/* The error for a clipping that kept no pixel (threshold_sigma x std has no value), saying why: from the n pixels
 * at host, or read back from dev when host is NULL. */
gpuws_status gpuws__sources_no_pixel_kept(const float *host, const gpuws_buffer *dev, size_t n, double kappa);
/* gpuws_find_sources over the nd streams (claimed; contexts distinct, of one backend): the image's rows in parts of
 * whole measurement blocks (gpuws_find_sources_host_block_rows), uploaded at once from threads, then the pipeline
 * over parts (sources_parts.c). o: read and checked. */
gpuws_status gpuws__find_sources_devices(gpuws_stream *const *streams, unsigned nd, const float *image, size_t width,
                                         size_t height, const gpuws_sources_options *o, gpuws_catalog **catalog);
/* Milliseconds of the monotonic clock since *t0, which becomes now. */
double gpuws__sources_ms_since(struct timespec *t0);

#endif
