/* gpuws_extract's two halves (docs/algorithms/extract.md). The device steps' scalar reference (the CPU backend's
 * implementation and the tests' oracle): the prepared image, the filter, the threshold, the labels and the pixel
 * records. The host steps, which every backend shares: from the records (in raster order) to the catalogue. */
#ifndef GPUWS_EXTRACT_REF_H
#define GPUWS_EXTRACT_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The options resolved to what the pixels see: SEP's float threshold and normalised kernel, its noise mode and
 * effective filter. */
typedef struct gpuws__extract_params {
    size_t w, h;
    int noise;       /* EX_NOISE_* */
    int filter;      /* EX_FILTER_*: MATCH only with a σ map, as SEP */
    float thresh;    /* what ex_detect compares with: absolute, thresh × err, or relative (σ map) */
    float relthresh; /* the relative threshold (EX_NOISE_MAP), else 0 */
    float err;       /* the constant σ (EX_NOISE_CONST), else 0 */
    float *kern;     /* kw * kh normalised values (NULL with EX_FILTER_NONE) */
    int kw, kh;
    int minarea, connectivity;
    int deblend_nthresh;
    double deblend_cont;
    int clean;
    double clean_param, gain;
    int sep_version;   /* GPUWS_SEP_*: whose threshold an object has with a σ map */
    unsigned threads;  /* host threads of gpuws__extract_objects (0 or 1: the caller's alone) */
    bool chain_check;  /* knob extract_chain_check: the host scans the chained components too and compares */
    size_t row0;       /* the image row that row 0 is (a band of gpuws_extract_host), for SEP's mask rule */
    size_t own0, own1; /* own1 > 0: only rows own0 .. own1 - 1 are detected (a band's own rows; the rest is halo) */
    gpuws_stream *clean_on; /* non-NULL: cleaning's pairs on this stream's device from clean_from objects (knob
                             * extract_clean; extract_clean.h); clean_unsure: the device leaves every power to the
                             * host (a test); clean_most: the most pairs an object takes from the device (knob
                             * extract_clean_most) */
    size_t clean_from;
    bool clean_unsure;
    int clean_most;
} gpuws__extract_params;

#define EX_BLANK_BIT64 ((uint64_t)1 << 63) /* EX_BLANK_BIT in a 64-bit index (idx64) */

/* The pixels of the components: one record per labelled pixel. idx: raster index | EX_BLANK_BIT when the pixel
 * touches a NaN or masked pixel; label: its component (1..); value: image - back; cd: the filtered value; sig: the
 * pixel's σ; sig_lr: the σ of its lower-right neighbour (x + 1, y + 1), 0 outside the image (SEP's threshold of an
 * object is the one at the pixel where its scan ends). Where the device groups the records, the host reads only the
 * arrays its steps need (extract.c): sig with noise, sig_lr for SEP 1.2's thresholds with a σ map; the others hold
 * nothing then.
 * group: the records grouped by label where the device did it (NULL: the host steps do), raster order kept within
 * each label: n record numbers, then start[0 .. nl], label l's first place in them (l in 1 .. nl, the labels). */
typedef struct gpuws__extract_pixels {
    size_t n;
    uint32_t *idx;
    const uint64_t *idx64; /* non-NULL: the raster indices in 64 bits instead of idx (gpuws_extract_host's) */
    float *value, *cd, *sig, *sig_lr;
    int32_t *label;  /* not read back where the device groups the records */
    uint32_t *group; /* the device's grouping: record numbers, start[0 .. nl]; chained: a word a label, a count */
    size_t nl;
    bool chained; /* the grouping comes from extract_chain (extract_chain.h) */
    double *mom;  /* then a chained label's word after start[] is its slot here: nmom slots of EX_MOM_DOUBLES */
    size_t nmom, mom_kept; /* mom_kept nonzero: mom is pinned memory of this many bytes, kept as px's arrays */
    /* compact: the arrays hold only the records of the components that the host works on (neither measured on the
     * device nor below minarea), in the grouping's order, numbered from 0 (group's first n words say so); start[]
     * places them; a measured component's pixels are not there: its object has no pixel list, and its number + 1
     * goes into label_obj[label] where that is not NULL (nl + 1 entries, zeroed by the caller) instead of obj_of.
     * all: the records on the device. */
    bool compact;
    size_t all;
    int32_t *label_obj;
    /* slot_of (gpuws_extract_host's compact bands): label l's slot in mom where the device chained its component,
     * UINT32_MAX where not (nl + 1 entries); group is NULL then (the host groups by label) and nl holds the labels,
     * the measured components' among them, which have no records. */
    const uint32_t *slot_of;
    size_t kept; /* nonzero: the arrays lie in pinned memory of this many bytes, kept with the context (extract.c) */
} gpuws__extract_pixels;

/* The options (validated but for the filter) resolved into *p: SEP's float thresholds, its noise mode (has_rms: a
 * σ map is given; o's buffers are not read), the effective filter type (SEP's matched filter needs a σ map), the
 * filter normalised by the float sum of its absolute values (p->kern from gpuws__malloc, the caller frees it).
 * GPUWS_ERR_INVALID_ARGUMENT when that sum is not a finite number > 0, GPUWS_ERR_OUT_OF_MEMORY; the message names
 * the call fn. */
gpuws_status gpuws__extract_resolve(const gpuws_extract_options *o, size_t width, size_t height, bool has_rms,
                                    const char *fn, gpuws__extract_params *p);

/* Frees p->kern. */
void gpuws__extract_params_free(gpuws__extract_params *p);

/* SEP applies the mask to the rows it reads in its scan loop, and so not to the kh / 2 rows its filter buffer reads
 * before (all rows are masked without a filter): the raster index from which the mask applies (in a band whose row 0
 * is image row p->row0, the band's index). */
size_t gpuws__extract_mask_from(const gpuws__extract_params *p);

/* Allocates the six arrays for n records (gpuws__malloc), one block that holds them one after the other in the
 * struct's order (as the device writes them: one read brings them all); false when that fails (nothing left
 * allocated). No group. */
bool gpuws__extract_pixels_alloc(gpuws__extract_pixels *px, size_t n);
/* The same arrays in block, 6 max(n, 1) words that the caller owns. */
void gpuws__extract_pixels_place(gpuws__extract_pixels *px, size_t n, void *block);
void gpuws__extract_pixels_free(gpuws__extract_pixels *px);

/* The device steps on host memory: image, back (NULL = none), rms (NULL unless EX_NOISE_MAP) f32 and mask (NULL =
 * none) of p->w x p->h pixels to the records, in raster order; on p->threads threads (the labelling in bands,
 * gpuws__label_cpu), the same records for any number. GPUWS_ERR_OUT_OF_MEMORY when host memory fails. */
gpuws_status gpuws_extract_ref_pixels(const gpuws__extract_params *p, const float *image, const float *back,
                                      const float *rms, const uint8_t *mask, gpuws__extract_pixels *px);

/* The host steps: records in raster order to the catalogue (*out, allocated with gpuws__malloc; free with
 * gpuws_extract_catalog_free). obj_of (NULL = not wanted): per record, the object's number + 1 or 0 (the segmap).
 * GPUWS_ERR_OUT_OF_MEMORY with a message when host memory fails. */
gpuws_status gpuws__extract_objects(const gpuws__extract_params *p, const gpuws__extract_pixels *px,
                                    gpuws_extract_catalog **out, int32_t *obj_of);

/* gpuws_extract's scalar options checked (has_rms: a σ map is given, so thresh is relative), with fn's messages;
 * *npix = width x height. */
gpuws_status gpuws__extract_check(const gpuws_extract_options *o, size_t width, size_t height, bool has_rms,
                                  const char *fn, size_t *npix);

/* Where gpuws__extract_band_records puts a band's records: room(user, n, arrays) gives the six arrays (idx, value,
 * cd, sig, sig_lr, label) of room for n records, which are read straight into them; false when memory fails.
 * moms(user, n) gives room for n slots of measures (EX_MOM_DOUBLES doubles each; NULL when memory fails). */
typedef struct {
    bool (*room)(void *user, size_t n, void *arrays[6]);
    double *(*moms)(void *user, size_t n);
    void *user;
} gpuws__records_sink;

/* gpuws_extract_host's device steps for one band on a GPU backend (extract.c): p of the band (w x h pixels, row0,
 * its own rows own0 .. own1 - 1), image and o's maps the band's device buffers; the records of the pixels detected
 * in its own rows, in its raster order, with its labels (gpuws_label's on those rows), not grouped, into the sink's
 * arrays; px->n and px->nl their count and the labels' (px holds no arrays: nothing to give back).
 * With `compact`, where the band's budget has room for it (the record words its undetected pixels leave), the band
 * works as the in-core call instead: the records grouped, the components chained and measured on the device but for
 * those that touch a border row (ex_on_border), and only the records that the host works on go into the sink's
 * arrays (as many as px->n; the labels' array holds nothing), grouped as in-core: px->compact then, px->group the
 * grouping's words that follow the records in-core (start[0 .. nl], each label's word, the slots taken:
 * gpuws__malloc'd, the caller frees it) and px->nmom slots of measures in moms' room (band coordinates). Where the
 * device has no room for the copy, every record goes into the sink as above (px->compact false). */
gpuws_status gpuws__extract_band_records(gpuws_stream *s, const gpuws__extract_params *p, const gpuws_buffer *image,
                                         const gpuws_extract_options *o, const gpuws__records_sink *sink, bool compact,
                                         gpuws__extract_pixels *px);

/* The labels of rows [r0, r1) of the band whose records gpuws__extract_band_records last made on s (gpuws_label's
 * numbers on its own rows, 0 where nothing was detected) into dst, w x (r1 - r0) int32 (a blocking read): where the
 * band's compact records leave out the components measured on the device, the segmentation map finds their pixels
 * here. */
gpuws_status gpuws__extract_band_labels(gpuws_stream *s, const gpuws__extract_params *p, size_t r0, size_t r1,
                                        int32_t *dst);

/* gpuws_extract on images of more than most_px pixels (past 2^31 - 1, or the knob extract_slab_pixels) in slabs
 * (extract_host.c): o checked, its buffers and image of s's context, as gpuws_extract has them; the image and its
 * maps go through the device as gpuws_extract_host's bands of at most most_px pixels (no fewer than a row and its
 * halo), copied from the caller's buffers on the device (on the CPU backend the host call runs on them), the
 * segmentation map made on the host and written once the call succeeds. gpuws__extract_bands_last: the bands of the
 * last gpuws_extract_host or gpuws_extract in slabs on this thread (0: it failed or ran in-core), for the tests. */
gpuws_status gpuws__extract_slabs(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                                  const gpuws_extract_options *o, uint64_t most_px, gpuws_extract_catalog **catalog);
size_t gpuws__extract_bands_last(void);

/* The components that the last gpuws__extract_objects of this thread took as the device chained them (one object
 * each, deblending skipped: extract_chain.h), and with p->chain_check those of them whose host deblending gave
 * other than one object of the same pixels in the same order, for the tests. */
size_t gpuws__extract_chained_last(void);
/* Of those, the ones whose object the device measured too (extract_chain.h's ex_chain_measure). */
size_t gpuws__extract_measured_last(void);
size_t gpuws__extract_chain_mismatches_last(void);
/* Whether cleaning's pairs are worked out on ctx's device (extract_clean.h), as the knob extract_clean, the device and
 * p->clean decide: then p's clean_from, clean_unsure and clean_most are set, and the caller sets p->clean_on to a
 * stream of ctx; else p is left as it is (the host's threads). */
bool gpuws__extract_clean_where(const gpuws_context *ctx, gpuws__extract_params *p);
/* The objects whose cleaning's pairs the device worked out in this thread's last cleaning (0: the host's threads),
 * the pairs it left to the host's pow and the objects with more pairs than it keeps, which the host searched. */
size_t gpuws__extract_clean_last(size_t *unsure, size_t *searched);
/* The records that the last gpuws__extract_objects of this thread had, compact (px->compact above; SIZE_MAX: it had
 * every record), and in *all the records on the device. */
size_t gpuws__extract_compact_last(size_t *all);

#endif
