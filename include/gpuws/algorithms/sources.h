/* Radio-astronomy source finding, the workshop's main application, in four steps and as one pipeline:
 * κ-σ clipping → segmentation (threshold) → labelling (connected components) → measurement.
 * Images are row-major, width = number of columns (FITS NAXIS1), height = rows; pixel (row, col). */
#ifndef GPUWS_ALG_SOURCES_H
#define GPUWS_ALG_SOURCES_H
#ifdef __cplusplus
extern "C" {
#endif

/* ---- 1. κ-σ clipping ------------------------------------------------------------------------------------
 * x = all non-NaN values; repeat { m = median(x); s = std(x); x = x[(x > m − κs) & (x < m + κs)] } until an
 * iteration removes nothing (or max_iterations passes were made). median of an even count is the mean of the two
 * middle values (NumPy); std is the population std (ddof = 0). The statistics returned describe the final x.
 * GPU backends select the median on the device (no full sort) and never copy the data back between iterations. */
typedef struct gpuws_sigma_clip_options {
    size_t struct_size; /* sizeof(gpuws_sigma_clip_options); 0 = gpuws 0.2's (gpuws.h: options grow) */
    double kappa;       /* > 0; default 3 */
    int max_iterations; /* >= 1; default 100 */
} gpuws_sigma_clip_options;
#define GPUWS_SIGMA_CLIP_OPTIONS_INIT                                                                                  \
    {                                                                                                                  \
        sizeof(gpuws_sigma_clip_options), 3.0, 100                                                                     \
    }

typedef struct gpuws_sigma_clip_result {
    size_t count; /* values kept (NaNs never count) */
    double median, mean, std;
    int iterations; /* passes made */
    int converged;  /* 1 when the last pass removed nothing */
} gpuws_sigma_clip_result;

/* data: n f32 values, any number (2^32 and more). Blocks until the result is known (it is returned on the host).
 * options NULL = defaults. All-NaN or n == 0 input: GPUWS_ERR_INVALID_ARGUMENT (no statistics exist). OpenCL
 * devices without cl_khr_fp64 or cl_khr_int64_base_atomics: GPUWS_ERR_UNSUPPORTED. */
GPUWS_API gpuws_status gpuws_sigma_clip(gpuws_stream *stream, size_t n, const gpuws_buffer *data,
                                        const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result);

/* gpuws_sigma_clip for n f32 values in host memory, any number of them (more than 2^32 too): the same loop, the
 * same statistics, exact and the same for any split of the values. The kept set is always a window of keys, so no
 * value moves; each pass reads the values once on the host's cores: per pass the count, the sum and the sum of
 * squares accumulated exactly (integers per binary exponent, 768-bit fixed point), and a two-level histogram of
 * 16-bit digits of order-preserving keys for the median: the first iteration reads the values twice, each later
 * one once (the sums take off the values that left the window, so only those cost more than a comparison, and the
 * read also takes the keys of the buckets where the middle ranks can fall). So count and median are
 * gpuws_sigma_clip's exactly, and mean and std are the exact ones rounded once (gpuws_sigma_clip's are within a few
 * ulps of them). The values are not sent to ctx's device: each pass is one read, which the host does faster than a
 * transfer (for values a device holds, gpuws_sigma_clip). ctx: checked, for the calls' common form.
 * Errors: NULL ctx, data or result; n == 0 or all NaN; kappa not finite > 0; max_iterations < 1 →
 * GPUWS_ERR_INVALID_ARGUMENT; out of host memory (3 MiB of histograms per core) → GPUWS_ERR_OUT_OF_MEMORY. */
GPUWS_API gpuws_status gpuws_sigma_clip_host(gpuws_context *ctx, const float *data, size_t n,
                                             const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result);

/* Sums arrays of count words elementwise over every caller of a collective call, in place (an allreduce of
 * uint64 sums: MPI_Allreduce(MPI_IN_PLACE, words, count, MPI_UINT64_T, MPI_SUM, comm)). */
typedef gpuws_status (*gpuws_sum_reducer)(void *user, uint64_t *words, size_t count);

/* Gathers every caller's words, in caller order: counts[c] words of caller c follow those of the callers before it.
 * root < callers: into caller root alone (MPI_Gatherv); on root, words holds its own at their place on entry and
 * every caller's on return; on any other caller, words holds its own counts[caller] words only, which it sends.
 * root GPUWS_ALL_CALLERS: into every caller, in place (MPI_Allgatherv(MPI_IN_PLACE, ...)): on entry words holds this
 * caller's own at their place, on return every caller's. Where a call moves much data, a gather moves each word
 * once, where a sum moves it twice and adds zeros. */
#define GPUWS_ALL_CALLERS ((size_t)-1)
typedef gpuws_status (*gpuws_gatherer)(void *user, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                                       size_t root);

/* gpuws_sigma_clip_host over values spread between several callers (MPI ranks: gpuws_mpi.h wraps this): each
 * calls it with its own n values (0 and data NULL allowed) and a reducer that sums over all of them; every caller
 * gets the result of gpuws_sigma_clip_host on all the values together, the same bits. Collective: every caller
 * makes the same reductions in the same order (a few per iteration, at most 1 MiB each). The options are checked
 * collectively: invalid on any caller, or different between callers → GPUWS_ERR_INVALID_ARGUMENT on every caller;
 * so are all-NaN values and a failed reduction. Only a NULL ctx, reduce or result, or data NULL with n > 0, fail a
 * caller alone (before its first reduction: the others then wait in theirs). */
GPUWS_API gpuws_status gpuws_sigma_clip_host_reduce(gpuws_context *ctx, const float *data, size_t n,
                                                    const gpuws_sigma_clip_options *options, gpuws_sum_reducer reduce,
                                                    void *reduce_user, gpuws_sigma_clip_result *result);

/* gpuws_sigma_clip on values spread over several callers' devices (MPI ranks: gpuws_mpi_sigma_clip wraps this),
 * caller `part` of `parts` in order: each passes its own n values in a device buffer on its stream (NULL: the
 * buffer's context's default stream; n 0 allowed, data and stream unused then) and a reducer that sums over all of
 * them; no value leaves its device. Every caller gets the same result: count, median, iterations and converged
 * those of gpuws_sigma_clip on all the values together, mean and std within a few ulps of its. They are computed
 * per chunk of 2^18 values of each caller in one fixed order and the chunks combined in caller order, so they are
 * the same bits for any split between callers whose shares, but the last, are multiples of 2^18 values, and on
 * every backend (docs/scale.md, "Several hosts"). Collective: every caller makes the same reductions in the same
 * order: three before the first pass (2 words; 25 + 2 parts; 1), then one a pass (three passes an iteration: about
 * 2048 words, and in the first of an iteration 3 words a chunk of every caller). The options are checked
 * collectively: invalid on any caller, or different between callers → GPUWS_ERR_INVALID_ARGUMENT on every caller;
 * so are all-NaN or no values and a device or reducer failing on one caller (its own status there, INVALID_ARGUMENT
 * "n of P callers failed" on the others). Only a NULL reduce or result, part >= parts, or data NULL with n > 0 fail
 * a caller alone (before its first reduction: the others then wait in theirs). */
GPUWS_API gpuws_status gpuws_sigma_clip_reduce(gpuws_stream *stream, const gpuws_buffer *data, size_t n,
                                               const gpuws_sigma_clip_options *options, size_t part, size_t parts,
                                               gpuws_sum_reducer reduce, void *reduce_user,
                                               gpuws_sigma_clip_result *result);

/* ---- 2. segmentation ------------------------------------------------------------------------------------
 * mask[i] = data[i] > threshold ? 1 : 0 (uint8; NaN compares false so gives 0). data: n f32 values. */
GPUWS_API gpuws_status gpuws_threshold(gpuws_stream *stream, size_t n, const gpuws_buffer *data, float threshold,
                                       gpuws_buffer *mask);

/* ---- 3. labelling ---------------------------------------------------------------------------------------
 * Connected components of the non-zero pixels of a uint8 mask, connectivity 4 (SciPy's default cross) or 8.
 * labels (int32, width*height): 0 for background, 1..N numbered in raster order of each component's first pixel,
 * so the image is identical to scipy.ndimage.label's. Blocks until N is known and returns it in *num_labels; on GPU
 * backends the last pass over labels may still be running then: work enqueued on the stream afterwards sees the
 * finished image (read it with gpuws_buffer_read_async on the same stream, or synchronize the stream first).
 * Sizes: rows of fewer than 2^31 pixels, any number of rows; an image of more than 2^31 - 1 pixels is labelled in
 * slabs of rows and returns once every label is final. Fewer than 2^31 components (labels are int32). */
GPUWS_API gpuws_status gpuws_label(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *mask,
                                   int connectivity, gpuws_buffer *labels, size_t *num_labels);

/* Progress of gpuws_label_host: called once band `band` (0-based, in order) of `bands` is through pass `pass` of
 * `passes` (on the calling thread with one device; on one of the call's threads, one call at a time, still in order,
 * with more_contexts), with rows_done of the image's `rows` rows through that pass. One pass when the
 * image is one band; otherwise on GPUs pass 1 labels each band to learn its label count and its border rows, and
 * pass 2 labels it again and writes its final labels (rows_done of them are final in labels); on CPU devices one
 * pass writes each band's own labels, which are final once the call returns. */
typedef void (*gpuws_label_host_progress)(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done,
                                          size_t rows);

typedef struct gpuws_label_host_options {
    size_t struct_size;                 /* sizeof(gpuws_label_host_options) */
    uint64_t max_device_bytes;          /* device memory the call may use; 0 = what the device has free */
    gpuws_label_host_progress progress; /* NULL = none */
    void *progress_user;                /* progress's first argument */
    /* Several devices: contexts of further devices of ctx's backend that share the bands with ctx (as
     * gpuws_convolve2d_host_options.more_contexts). NULL = ctx alone. */
    gpuws_context *const *more_contexts;
    size_t num_more_contexts;
} gpuws_label_host_options;
#define GPUWS_LABEL_HOST_OPTIONS_INIT                                                                                  \
    {                                                                                                                  \
        sizeof(gpuws_label_host_options), 0, NULL, NULL, NULL, 0                                                       \
    }

/* How gpuws_label_host would split this image: *band_rows rows per band (the last band may have fewer) in *bands
 * bands; 1 band when the mask and the labels fit the budget (in-core). Errors as for gpuws_label_host (no mask is
 * read; a NULL result pointer is GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_label_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                              const gpuws_label_host_options *options, size_t *band_rows,
                                              size_t *bands);

/* gpuws_label from host memory to host memory, for images of any size (out-of-core; docs/scale.md). Blocks until
 * labels is complete. mask: height rows of width bytes (any non-zero byte is foreground), row r at byte
 * r * mask_stride (0 = width); labels: width * height int32, contiguous; *num_labels = N. labels and N are
 * gpuws_label's (scipy.ndimage.label's numbering) for any banding, on every backend. Any host memory (pinned or
 * not): in one band the mask is uploaded from it and the labels downloaded into it directly (a strided mask packed
 * first); in bands, rows are staged through pinned buffers of the call's own.
 *
 * When the mask and the labels fit options->max_device_bytes (0: fifteen sixteenths of the device's free memory, as
 * the CUDA driver counts it; of three quarters of the device's memory where the driver has no count: OpenCL, CPU)
 * the call is one in-core gpuws_label between an upload and a download. Otherwise the image goes through the device
 * in bands of whole rows, on GPUs twice: pass 1 labels each band (gpuws_label) and reads back only its label count
 * and its first and last rows of labels; the host joins the labels that touch across each border between bands
 * (union-find) and numbers the components in raster order of their first pixels; pass 2 labels each band again and
 * maps its labels to the final numbers while copying them out of pinned staging. On CPU devices, whose labelling
 * costs more than the copies, once: each band's labels go into labels as they are, and once numbered the host maps
 * them in place (knob label_host_passes). Bands go through three slots
 * (pinned staging, device mask, device labels, pinned staging) on three streams, so one band's upload, another's
 * labelling and a third's download overlap. With options->more_contexts the bands go round-robin over ctx and those
 * devices, each with its own slots and streams driven by a thread of its own, the budget holding on each; labels
 * and N are the same. Pixel indices are 64-bit: images of 2^31 pixels or more are legal as
 * long as a band of one row holds fewer than 2^31 pixels; labels are int32, so N must stay below 2^31.
 *
 * Errors (nothing read, labels untouched): NULL ctx, mask, labels or num_labels; connectivity not 4 or 8; a
 * more_contexts entry that is NULL, not live, of another backend, or ctx or an entry again; zero sizes;
 * mask_stride < width; labels overlapping the mask; a budget smaller than one band of one row (the message gives
 * the minimum in bytes) → GPUWS_ERR_INVALID_ARGUMENT. Byte counts overflowing size_t → GPUWS_ERR_OVERFLOW; a
 * row of 2^31 pixels or more, or more than 2^31 - 1 components (found after pass 1, before labels is written; on
 * CPU devices labels then holds each band's own labels) → GPUWS_ERR_UNSUPPORTED. A device error once bands run
 * returns its status after every stream has stopped; labels then holds the bands completed before it and the rest
 * is unspecified. */
GPUWS_API gpuws_status gpuws_label_host(gpuws_context *ctx, size_t width, size_t height, const void *mask,
                                        size_t mask_stride, int connectivity, const gpuws_label_host_options *options,
                                        int32_t *labels, size_t *num_labels);

/* gpuws_label_host over an image whose rows are spread between several callers (MPI ranks: gpuws_mpi.h wraps
 * this), part `part` of `parts` in row order (part p's rows follow part p - 1's; a part may have no rows): each
 * caller labels its own rows (gpuws_label_host, on its ctx, with options), then one reduction gathers every part's
 * label count and first and last rows (parts x (2 width + 2) words), and every caller joins the borders and numbers
 * the components as gpuws_label_host does between its bands, and maps its own labels to the final numbers in place.
 * labels (rows x width int32) and *num_labels (the whole image's N) are then those of gpuws_label_host on the whole
 * image. Collective: each caller makes two reductions (reduce: see gpuws_sum_reducer). Each part given once, the same
 * width, connectivity and part count on every caller: else GPUWS_ERR_INVALID_ARGUMENT on every caller before
 * labels is written; a caller whose own labelling fails fails every caller (its own status there, labels then
 * unspecified). Only a NULL ctx, reduce, num_labels, or mask/labels with rows > 0, and part >= parts or width 0,
 * fail a caller alone (before its first reduction: the others then wait in theirs). */
GPUWS_API gpuws_status gpuws_label_host_reduce(gpuws_context *ctx, size_t width, size_t rows, const void *mask,
                                               size_t mask_stride, int connectivity,
                                               const gpuws_label_host_options *options, size_t part, size_t parts,
                                               gpuws_sum_reducer reduce, void *reduce_user, int32_t *labels,
                                               size_t *num_labels);

/* ---- 4. measurement -------------------------------------------------------------------------------------
 * For labels 1..N: pixel count, sum of data (scipy.ndimage.sum_labels), centre of mass weighted by data
 * (scipy.ndimage.center_of_mass: (row, col) = Σ data·(row, col) / Σ data), and the peak (largest value; the
 * first in raster order among equal ones) with its position. f32 data, f64 accumulation.
 * out: a device buffer of num_labels gpuws_source_measure records, record k for label k + 1. */
typedef struct gpuws_source_measure {
    double sum;      /* Σ data over the label's pixels (the integrated flux) */
    double row, col; /* centre of mass; NaN when sum is 0 */
    double peak;     /* largest pixel value */
    int64_t npix;    /* pixels in the label */
    int64_t peak_row, peak_col;
} gpuws_source_measure;

GPUWS_API gpuws_status gpuws_measure(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *data,
                                     const gpuws_buffer *labels, size_t num_labels, gpuws_buffer *out);

/* ---- the pipeline ---------------------------------------------------------------------------------------
 * All four steps on one device: one upload of the image, one download of the catalogue (and of the label image
 * only when asked for). Detection threshold: threshold_abs when it is not NaN, else threshold_sigma × clipped std
 * (the workshop: 5 × std, no median offset). */
typedef struct gpuws_sources_options {
    size_t struct_size;                   /* sizeof(gpuws_sources_options); 0 = gpuws 0.2's (gpuws.h: options grow) */
    const gpuws_sigma_clip_options *clip; /* the κ-σ clipping; NULL = GPUWS_SIGMA_CLIP_OPTIONS_INIT */
    double threshold_sigma;               /* default 5 */
    double threshold_abs;                 /* NaN (default) = use threshold_sigma */
    int connectivity;                     /* 4 (default) or 8 */
    int want_labels;                      /* 1: also return the label image */
    /* gpuws_find_sources only: contexts of further devices of ctx's backend (live, distinct, not ctx) over which,
     * with ctx, the image's rows are split (gpuws_find_sources_parts); gpuws_contexts_create makes them from
     * GPUWS_DEVICE. NULL = ctx alone. */
    gpuws_context *const *more_contexts;
    size_t num_more_contexts;
} gpuws_sources_options;
#define GPUWS_SOURCES_OPTIONS_INIT                                                                                     \
    {                                                                                                                  \
        sizeof(gpuws_sources_options), NULL, 5.0, (0.0 / 0.0), 4, 0, NULL, 0                                           \
    }

typedef struct gpuws_source {
    int64_t id;  /* label number, 1..N */
    double x, y; /* centre of mass: x = column, y = row (0-based) */
    double flux; /* sum of the pixels */
    int64_t npix;
    double peak;
    int64_t peak_x, peak_y;
} gpuws_source;

typedef struct gpuws_catalog {
    gpuws_sigma_clip_result clip;
    double threshold; /* the threshold applied */
    size_t num_sources;
    gpuws_source *sources; /* num_sources records, in label order */
    int32_t *labels;       /* width*height when want_labels, else NULL */
    double ms_upload, ms_clip, ms_threshold, ms_label, ms_measure, ms_download, ms_total; /* device-event times */
} gpuws_catalog;

/* image: width*height f32 host pixels (NaN = blank). On success *catalog is allocated; free with
 * gpuws_catalog_free. On error *catalog is NULL. Runs on the context's default stream, whose device buffers for
 * the image, mask and labels (9 bytes per pixel) stay allocated for the next call until the context is destroyed.
 * Any size the device memory holds (more than 2^32 pixels too: docs/scale.md); gpuws_find_sources_host takes
 * images larger than that. With options->more_contexts the rows are split over ctx and those devices in parts of
 * whole blocks of gpuws_find_sources_host_block_rows(width) rows, uploaded at once (a thread a device) into each
 * default stream's kept memory, and found by gpuws_find_sources_parts (its results: the same for any number of
 * devices; ms_upload the host clock's); each default stream is claimed for the call.
 * Threads: one call per context at a time. A call while another thread's call (of this or any algorithm) holds the
 * default stream fails at once with GPUWS_ERR_INVALID_ARGUMENT ("find_sources: stream ... (the context's default
 * stream) is in use by another thread") and changes nothing; threads that find sources at once need a context
 * each, or a lock of their own around the call. */
GPUWS_API gpuws_status gpuws_find_sources(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                          const gpuws_sources_options *options, gpuws_catalog **catalog);
GPUWS_API void gpuws_catalog_free(gpuws_catalog *catalog);

/* ---- one image over several devices ----
 * The rows of one image held by several devices, in order: part p's rows follow part p - 1's. */
typedef struct gpuws_image_part {
    gpuws_stream *stream;      /* the part's stream: each part its own, contexts of one backend */
    const gpuws_buffer *image; /* rows * width f32 on the stream's context (unused when rows is 0) */
    size_t rows;               /* 0 allowed */
} gpuws_image_part;

/* gpuws_find_sources on an image whose rows several devices hold, every device working on its own rows at once and the
 * host joining them between the steps (docs/scale.md, "One image over several devices"): the κσ clipping's statistics
 * and key histograms of each device's rows combined on the host (a few KiB a pass, three passes an iteration), each
 * device's mask, the labelling of each device's rows joined at the parts' borders (SciPy's numbering of the whole
 * image), each device's records of the labels its rows hold, added on the host. Compared with gpuws_find_sources on the
 * whole image: clip count, median, iterations and converged, the labels, the number of sources, npix and peaks the
 * same; clip mean and std within a few ulps (the sums of each chunk of whole rows, which divide a block of
 * gpuws_find_sources_host_block_rows(width) rows, are taken in a fixed order and the chunks added in order, so they are
 * the same bits for any number of parts whose rows, but the last part's, are multiples of the block rows); flux and
 * centres within gpuws_measure's summation bounds. Blocking; the ms_* times are the host clock's (ms_upload 0). Each
 * stream keeps for the next call a mask and labels (5 bytes a pixel of its rows) and N records of 56 bytes (N: the
 * sources of the whole image). want_labels: the whole image's labels, width * (sum of rows). Errors: catalog NULL;
 * parts NULL, num_parts 0 or more than 64; a stream NULL, not live, given twice or of another backend; an image buffer
 * too small or of another context; no pixels → GPUWS_ERR_INVALID_ARGUMENT (or OUT_OF_RANGE, OVERFLOW as
 * gpuws_find_sources); the options as gpuws_find_sources'. */
GPUWS_API gpuws_status gpuws_find_sources_parts(const gpuws_image_part *parts, size_t num_parts, size_t width,
                                                const gpuws_sources_options *options, gpuws_catalog **catalog);

/* gpuws_find_sources_parts over several callers (MPI ranks: gpuws_mpi_find_sources_parts wraps this), caller `caller`
 * of `callers`, each with its own parts (0 to 64; its rows follow the rows of the callers before it), a reducer that
 * sums over all of them and, optionally, a gatherer (NULL: what is gathered travels through the reducer among zeros,
 * each word twice; reduce_user is both's user): every device works on its own rows, and the callers exchange what one
 * process's host joins between the steps (docs/scale.md, "Several hosts"). Each caller finishes the sources that begin
 * in its rows (with the records of their pixels in the rows of later callers: those labels' records alone travel to
 * every caller), and the finished sources are gathered. Caller `root` gets the whole catalogue,
 * gpuws_find_sources_parts' on all the parts in (caller, part) order; every other caller gets the sources that begin in
 * its rows (ids of the whole image, consecutive; num_sources their count). root GPUWS_ALL_CALLERS: every caller gets
 * the whole catalogue. catalog->labels (want_labels) holds this caller's rows only (NULL when it holds none). What a
 * caller sends (8-byte words, P callers; a caller's own slot among P in rounds of 64 callers): 49 and P (the options
 * and root in 16-bit pieces v and v², its rows), gpuws_sigma_clip_reduce's reductions (with a gatherer, each round's
 * chunk records gathered instead of summed among zeros), 17 and P (the labelling's width, connectivity and band
 * counts), 1, its block of 1 + (1 + W) a band (whether it failed; each band's count and border rows) to every caller, 1
 * and 2P (each caller's parts and crossing records), 1, its block of 1 + 4 a part + 7 a record of a label that reaches
 * a part from above, to every caller, then 8 words a source it finished (64 bytes), to root or to every caller.
 * Collective: options, roots or widths that differ, a root that is no caller, and every failure up to the crossing
 * records' exchange, fail every caller (its own status on the failing one, INVALID_ARGUMENT "n of P callers failed" on
 * the others). Only a NULL catalog or reduce, or caller >= callers, fail a caller alone (before its first reduction:
 * the others then wait in theirs). */
GPUWS_API gpuws_status gpuws_find_sources_parts_reduce(const gpuws_image_part *parts, size_t num_parts, size_t width,
                                                       const gpuws_sources_options *options, size_t caller,
                                                       size_t callers, size_t root, gpuws_sum_reducer reduce,
                                                       gpuws_gatherer gather, void *reduce_user,
                                                       gpuws_catalog **catalog);

/* gpuws_find_sources from host memory, for images of any size (more than 2^31 pixels too; docs/scale.md): κ-σ
 * clipping with gpuws_sigma_clip_host (exact, on the host's cores), the threshold on the host's cores into a mask,
 * the labelling with gpuws_label_host (its budget, devices and progress from label_options; NULL = its defaults:
 * in-core when the mask and labels fit the device, else in bands), and the measurement on the host's cores (tuning
 * knob find_sources_host_threads), in blocks of rows whose partial sums are added in block order: the catalogue
 * is the same bits for any thread count and any banding. Compared with gpuws_find_sources (any backend):
 * clip.count, clip.median, the labels, npix and the peaks the same; clip.mean, clip.std (so the threshold) within a
 * few ulps (gpuws_sigma_clip_host's exact sums); flux and centres within the measurement's summation bounds (the
 * same additions in another order). The ms_* times are the host clock's (ms_upload, ms_download 0). Host memory:
 * 5 bytes a pixel (mask, labels) beside the image, and the measurement's partial sums (a few bytes a column per
 * thread). Errors as gpuws_find_sources' and gpuws_label_host's. */
GPUWS_API gpuws_status gpuws_find_sources_host(gpuws_context *ctx, const float *image, size_t width, size_t height,
                                               const gpuws_sources_options *options,
                                               const gpuws_label_host_options *label_options, gpuws_catalog **catalog);

/* gpuws_find_sources_host over an image whose rows are spread between several callers (MPI ranks: gpuws_mpi.h wraps
 * this), callers in order of part: part p's rows follow part p - 1's; a part may hold none (image NULL then). Each
 * caller passes its own `rows` rows of width pixels (image: rows*width f32, row-major) and a reducer that sums over all
 * of them. The steps: gpuws_sigma_clip_host_reduce over every pixel, the threshold of its own rows,
 * gpuws_label_host_reduce (label_options are this caller's own: its devices, budget, progress), the measurement of its
 * own rows into partial records, one per label and block of rows of gpuws_find_sources_host's measurement that the
 * caller's rows touch, and one gather of every partial record. Every caller gets the whole catalogue:
 * gpuws_find_sources_host's on the whole image, the same clip, threshold, number of sources, npix and peaks; flux and
 * centres the same bits when every part's first row is a multiple of the measurement's block rows
 * (gpuws_find_sources_host_block_rows: a part then holds whole blocks), else within the measurement's summation bounds
 * (a block split between parts adds its parts' sums). catalog->labels (want_labels) holds this caller's rows only
 * (rows*width, the whole image's numbering; NULL when it holds none). ms_* are this caller's clock. What a caller sends
 * (8-byte words, P parts): 1 + 8P (rows and options), gpuws_sigma_clip_host_reduce's and gpuws_label_host_reduce's
 * reductions, 1 + P (partial counts), 1, then 8 words per partial record of every caller (an allreduce of the whole
 * gather: about 64 bytes a source, plus 64 for each further block a source crosses). Collective: the options are
 * checked collectively (invalid on any caller, or a different width, connectivity, threshold_sigma, threshold_abs, clip
 * option or part numbering → GPUWS_ERR_INVALID_ARGUMENT on every caller), and so is every failure up to the gather (a
 * caller's own is its error, the others get INVALID_ARGUMENT "n of P callers failed"). Only a NULL ctx, catalog or
 * reduce, image NULL with rows > 0, part >= parts, or no host memory for 1 + 8P words fail a caller alone (before its
 * first reduction: the others then wait in theirs); out of memory for the catalogue after the gather fails that caller
 * alone too (no reduction follows). */
GPUWS_API gpuws_status gpuws_find_sources_host_reduce(gpuws_context *ctx, const float *image, size_t width, size_t rows,
                                                      const gpuws_sources_options *options,
                                                      const gpuws_label_host_options *label_options, size_t part,
                                                      size_t parts, gpuws_sum_reducer reduce, void *reduce_user,
                                                      gpuws_catalog **catalog);

/* The rows of a block of gpuws_find_sources_host's measurement for this width (a function of the width alone): parts
 * of gpuws_find_sources_host_reduce that begin on multiples of it get the same bits. */
GPUWS_API size_t gpuws_find_sources_host_block_rows(size_t width);

#ifdef __cplusplus
}
#endif
#endif
