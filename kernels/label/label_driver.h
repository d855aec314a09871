/* What label.c offers the banded labelling (label_host.c). Not installed. */
#ifndef GPUWS_LABEL_DRIVER_H
#define GPUWS_LABEL_DRIVER_H

#include "../common/driver.h"

#include <stdbool.h>

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

/* The CPU backend's labelling of mask (w x h, 1 <= w * h <= INT32_MAX) into labels, SciPy's numbering: bands of rows
 * labelled on up to `threads` threads (gpuws_label_ref each, at least 2^18 pixels a band) and joined as
 * label_numbering.h says, or one scan. The same labels for any number. GPUWS_ERR_OUT_OF_MEMORY (its message naming
 * `name`) before any label is written. */
gpuws_status gpuws__label_cpu(const uint8_t *mask, size_t w, size_t h, int conn, int32_t *labels, size_t threads,
                              const char *name, size_t *num_labels);

/* Enqueues label_remap on s: the px labels from `first` (a pixel index) of a band of a banded labelling to their
 * final numbers, through the band's nodes [j0, j1) of the device copies nodes[0] (band labels), nodes[1] (final
 * numbers), nodes[2] (non-root counts, gpuws__numbering_non_roots); offset: the band's provisional label base. */
gpuws_status gpuws__label_remap_launch(gpuws_stream *s, gpuws_buffer *labels, uint64_t first, size_t px,
                                       gpuws_buffer *const nodes[3], uint64_t j0, uint64_t j1, uint64_t offset);

/* A band's labels to their final numbers: label l's is table[l - 1] (int32, on the band's stream; NULL: none). */
typedef struct {
    gpuws_buffer *table;
} gpuws__label_remap;

/* Rows that several streams hold, in order, labelled as one image of `width` pixels a row: each part's rows on its own
 * device (every part's first band at once), in bands of at most 2^31 - 1 pixels, joined and numbered as
 * label_numbering.h says (SciPy's numbering of the whole image). Streams distinct, of contexts of one backend; a part
 * may hold no rows (its buffers then unused). On return each part's [lo, hi] holds every label its rows hold (lo > hi:
 * none): the components that begin in its rows are first .. hi, those that reach it from above are below first.
 * Blocking; on error the labels are unspecified. defer: a part whose rows are one band and whose labels need mapping to
 * their final numbers keeps its band's numbers, and `remap` maps them (a table in the stream's scratch: until the next
 * labelling on it) for a pass over the labels that follows (gpuws__measure_sums) to apply as it reads them. */
typedef struct {
    gpuws_stream *stream;
    const gpuws_buffer *mask; /* rows x width bytes */
    gpuws_buffer *labels;     /* rows x width int32, written */
    size_t rows;
    bool defer;
    size_t lo, first, hi;     /* out */
    gpuws__label_remap remap; /* out */
} gpuws__label_part;
gpuws_status gpuws__label_parts(gpuws__label_part *parts, size_t num_parts, size_t width, int connectivity,
                                const char *name, size_t *num_labels);

/* Several callers (MPI ranks), each with its own parts, their rows in the order (caller, part), as one
 * gpuws__label_parts: caller `caller` of `callers`, reduce sums words over all of them (gpuws_sum_reducer). The
 * reductions: the callers' width and connectivity (17 words) and band counts (P, in rounds of 64 callers), whether each
 * could allocate (1), then every caller's block, whether it failed and each of its bands' count and first and last rows
 * (1 + W words a band), gathered (gather) or summed among zeros; each caller then joins and numbers all the bands and
 * maps its own. Each part's lo, first and hi and *num_labels are those of the
 * whole image. `failed`: this caller failed before (it still makes the reductions, and every caller fails); a failure
 * during the labelling is exchanged too. */
typedef struct {
    gpuws_sum_reducer reduce;
    void *user;
    size_t caller, callers;
    bool failed;
    gpuws_gatherer gather; /* the border rows, and the sources pipeline's records; NULL: through reduce */
    size_t root;           /* the sources pipeline's: the caller that gets the whole catalogue (the same) */
} gpuws__label_exchange;
gpuws_status gpuws__label_parts_reduce(gpuws__label_part *parts, size_t num_parts, size_t width, int connectivity,
                                       const gpuws__label_exchange *x, const char *name, size_t *num_labels);

#endif
