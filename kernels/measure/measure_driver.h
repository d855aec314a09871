/* What measure.c offers the pipeline over several devices (kernels/sources). Not installed. */
#ifndef GPUWS_MEASURE_DRIVER_H
#define GPUWS_MEASURE_DRIVER_H

#include "../common/driver.h"
#include "../label/label_driver.h"

/* gpuws_measure's records with row and col holding the sums Σ data·row and Σ data·col (rows counted from the
 * buffers' first), not the centre: records of one label from several parts of an image add up. Arguments as
 * gpuws_measure's, checked by the caller (num_labels >= 1); remap (NULL or table NULL: none, else GPUs only):
 * labels are a band's provisional numbers, each read through the table (gpuws__label_parts' defer). Asynchronous on
 * GPUs. */
gpuws_status gpuws__measure_sums(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *data,
                                 const gpuws_buffer *labels, size_t num_labels, const gpuws__label_remap *remap,
                                 gpuws_buffer *out);

#endif
