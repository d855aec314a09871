/* What label.c offers the banded labelling (label_host.c). Not installed. */
#ifndef GPUWS_LABEL_DRIVER_H
#define GPUWS_LABEL_DRIVER_H

#include "../common/driver.h"

/* Where a labelling's N is: in `value` when `buffer` is NULL (the CPU backend labels while the call is made), else
 * an int32 at byte `offset` of `buffer` (the stream's scratch) once the stream reaches it; read it on the same
 * stream before the next labelling there, which reuses that scratch. */
typedef struct {
    gpuws_buffer *buffer;
    size_t offset;
    size_t value;
} gpuws__label_count;

/* gpuws_label's work enqueued on s without waiting for N: the arguments are checked already (1 <= width * height
 * <= INT32_MAX, connectivity 4 or 8, buffers of the stream's context and large enough, labels not mask) and s is
 * the caller's own. Every kernel is found before the first launch, so on error labels are untouched. */
gpuws_status gpuws__label_enqueue(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *mask, int conn,
                                  gpuws_buffer *labels, gpuws__label_count *count);

/* Enqueues label_remap on s: the px labels from `first` (a pixel index) of a band of a banded labelling to their
 * final numbers, through the band's nodes [j0, j1) of the device copies nodes[0] (band labels), nodes[1] (final
 * numbers), nodes[2] (non-root counts, gpuws__numbering_non_roots); offset: the band's provisional label base. */
gpuws_status gpuws__label_remap_launch(gpuws_stream *s, gpuws_buffer *labels, uint64_t first, size_t px,
                                       gpuws_buffer *const nodes[3], uint64_t j0, uint64_t j1, uint64_t offset);

#endif
