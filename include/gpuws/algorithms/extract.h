/* Source extraction as SExtractor and SEP do it: the mesh background, then the extraction of objects.
 * Images are row-major f32, width = number of columns (FITS NAXIS1), height = rows; pixel (row, col). */
#ifndef GPUWS_ALG_EXTRACT_H
#define GPUWS_ALG_EXTRACT_H
#ifdef __cplusplus
extern "C" {
#endif

/* ---- background ------------------------------------------------------------------------------------------
 * SExtractor's / SEP's mesh background (sep.Background(data, mask=, bw=, bh=, fw=, fh=, fthresh=) with
 * maskthresh 0), docs/algorithms/background.md:
 *  1. The image is cut into meshes of bw x bh pixels (the last column and row of meshes hold what is left). A pixel
 *     is usable unless it is NaN (or <= -1e30) or its mask byte is nonzero. A mesh with fewer than half of its
 *     pixels usable is "bad". For the others: mean and σ of the usable pixels, then mean and σ again of those within
 *     mean ± 2σ; a histogram of these over mean ± 5σ; on it, clipping at median ± 3σ until σ converges; the mesh's
 *     background is the mode 2.5 × median − 1.5 × mean (the median when |mean − median| >= 0.3σ), its rms the
 *     clipped σ.
 *  2. A bad mesh takes the average of the nearest good meshes (squared distance on the mesh grid, ties averaged).
 *  3. A median filter of fw x fh meshes (an even size acts as the next odd one; the window shrinks symmetrically
 *     at the grid's edges) replaces a mesh's background and rms by the window's medians where the background
 *     moves by at least fthresh.
 *  4. globalback / globalrms: the medians of the filtered grid (globalrms: of its positive values when the
 *     median is <= 0; 1 when none is positive).
 *  5. back and rms: SEP's bicubic spline through the mesh centres, evaluated at every pixel (SEP's conventions kept:
 *     x positions are pixel centres, y positions pixel edges; a grid of one mesh row is linear along x).
 * Steps 1 and 5 run on the device (one work-group per mesh; one work-item per pixel); steps 2-4 and the spline
 * coefficients, a few floats per mesh, run in C on the host from the mesh statistics, which is why the call blocks.
 * Same result on every backend: the mesh statistics are equal unless a pixel lies within an f64 rounding of a
 * 2σ cut (sums in another order), and back/rms then differ by float rounding alone (stated in the doc page). */
typedef struct gpuws_background_options {
    size_t struct_size;       /* sizeof(gpuws_background_options); set by GPUWS_BACKGROUND_OPTIONS_INIT */
    int bw, bh;               /* mesh width and height in pixels, 1..width and 1..height; default 64 x 64 */
    int fw, fh;               /* median filter width and height in meshes, >= 1 (1 = no filter); default 3 x 3 */
    double fthresh;           /* finite, >= 0; default 0 (always filter) */
    const gpuws_buffer *mask; /* NULL, or width*height uint8 of the image's context: nonzero excludes the pixel */
} gpuws_background_options;
#define GPUWS_BACKGROUND_OPTIONS_INIT                                                                                  \
    {                                                                                                                  \
        sizeof(gpuws_background_options), 64, 64, 3, 3, 0.0, NULL                                                      \
    }

typedef struct gpuws_background_result {
    float globalback, globalrms; /* SEP's Background.globalback / .globalrms */
    size_t nx, ny;               /* meshes per row, per column */
    size_t bad_meshes;           /* meshes filled from their neighbours (step 2) */
} gpuws_background_result;

/* image: width*height values of dtype GPUWS_F32 or GPUWS_F64 on the device (f64 pixels are rounded to f32 first, as
 * SEP converts its input to float). back and rms: width*height f32 outputs of the same context, distinct from each
 * other and from the image and mask. options NULL = defaults. Blocks until back and rms are written and *result
 * is filled. Errors: GPUWS_ERR_INVALID_ARGUMENT for another dtype, a zero size, a mesh larger than the image,
 * sizes < 1, fthresh not finite or negative, a NULL result, aliased buffers, or an image where no mesh has enough
 * usable pixels (all NaN or masked); GPUWS_ERR_UNSUPPORTED on OpenCL devices without fp64, for a side of 2^31 pixels
 * or more, a mesh of 2^32 or more, or more meshes than the device runs work-groups in a row. Any number of pixels
 * otherwise. On error nothing is written. */
GPUWS_API gpuws_status gpuws_background(gpuws_stream *stream, gpuws_dtype dtype, size_t width, size_t height,
                                        const gpuws_buffer *image, const gpuws_background_options *options,
                                        gpuws_buffer *back, gpuws_buffer *rms, gpuws_background_result *result);

/* ---- extraction ------------------------------------------------------------------------------------------
 * SEP's sep.extract(data - back, thresh, err=rms|err, mask=, minarea=, filter_kernel=, filter_type=,
 * deblend_nthresh=, deblend_cont=, clean=, clean_param=, segmentation_map=) on a device-resident image
 * (docs/algorithms/extract.md). On the device: the image minus back (0 where masked), SEP's filter, the threshold
 * test per pixel, the connected components, and the records of their pixels; on the host, in double precision and
 * a fixed order: minarea, deblending, the measurements, cleaning. Every backend gives the same catalogue, bit for
 * bit, and the same segmentation map; on SEP's test skies, SEP's catalogue and segmentation map exactly. */
#define GPUWS_FILTER_NONE    0 /* no filtering: detection on the pixels themselves */
#define GPUWS_FILTER_CONV    1 /* convolution with the filter kernel (SEP 'conv') */
#define GPUWS_FILTER_MATCHED 2 /* SEP's 'matched' filter: accounts for the noise map; CONV when there is no rms map */

/* object flags, SEP's bits (sep.h) plus ours */
#define GPUWS_OBJ_MERGED 0x0001 /* the object was deblended from a larger detection */
#define GPUWS_OBJ_TRUNC  0x0002 /* the object touches the image edge */
#define GPUWS_OBJ_SINGU  0x0008 /* x and y fully correlated: moments made non-singular */
#define GPUWS_OBJ_BLANK  0x0100 /* the object touches a NaN, blank or masked pixel */

/* sep_version: which SEP's catalogue to reproduce where SEP's versions differ. They differ with an rms map, in an
 * object's threshold (its thresh column, and through it deblending, tnpix, the ellipse and cleaning): SEP 1.3.3 and
 * later (1.4.x on PyPI) take the mean of the thresholds of the object's pixels; SEP 1.2.x takes the threshold at
 * the pixel where its scan completes the object (the pixel after the object's last one, on the next row; 0 past the
 * image's edge). */
#define GPUWS_SEP_1_4 0 /* default: SEP >= 1.3.3 */
#define GPUWS_SEP_1_2 1 /* SEP 1.2.x (Debian's python3-sep) */

typedef struct gpuws_extract_options {
    size_t struct_size;       /* sizeof(gpuws_extract_options); set by GPUWS_EXTRACT_OPTIONS_INIT */
    double thresh;            /* detection threshold, default 1.5: in units of the noise (σ) when rms or err is
                                 given (pixel threshold = thresh × rms[pixel] or thresh × err), else absolute */
    const gpuws_buffer *back; /* NULL, or width*height f32: subtracted from the image first (SEP: data - bkg) */
    const gpuws_buffer *rms;  /* NULL, or width*height f32: per-pixel noise σ (SEP's err array) */
    double err;               /* used when rms is NULL: one noise σ for every pixel; 0 (default) = none */
    const gpuws_buffer *mask; /* NULL, or width*height uint8: nonzero excludes the pixel (SEP's mask, maskthresh 0) */
    int minarea;              /* >= 1; default 5 */
    int filter_type;          /* GPUWS_FILTER_*; default GPUWS_FILTER_MATCHED (sep.extract's default) */
    const float *filter;      /* host, filter_w*filter_h row-major; NULL = SEP's default 3x3 {1,2,1,2,4,2,1,2,1} */
    int filter_w, filter_h;   /* odd, >= 1, when filter is not NULL */
    int connectivity;         /* 8 (default, SExtractor) or 4 */
    int deblend_nthresh;      /* >= 1; default 32: thresholds of SExtractor's deblending tree (no cap on its nodes) */
    double deblend_cont;      /* in [0, 1]; default 0.005; 1 = no deblending */
    int clean;                /* 1 (default) = SExtractor's cleaning of spurious detections near bright ones */
    double clean_param;       /* > 0; default 1.0 */
    double gain;              /* >= 0; 0 (default) = no Poisson term in the errors (as SEP's gain) */
    gpuws_buffer *segmap;     /* NULL, or width*height int32 output of the same context: 0 for no object, k + 1 for
                                 the pixels of object k (SEP's segmentation map) */
    int sep_version;          /* GPUWS_SEP_1_4 (default) or GPUWS_SEP_1_2: the SEP to match where versions differ */
} gpuws_extract_options;
#define GPUWS_EXTRACT_OPTIONS_INIT                                                                                     \
    {                                                                                                                  \
        sizeof(gpuws_extract_options), 1.5, NULL, NULL, 0.0, NULL, 5, GPUWS_FILTER_MATCHED, NULL, 0, 0, 8, 32, 0.005,  \
            1, 1.0, 0.0, NULL, GPUWS_SEP_1_4                                                                           \
    }

/* One object: SEP's catalogue columns. Pixel coordinates are 0-based (pixel centres at integers), x = column,
 * y = row. As in SEP, the moments (x, y, x2, y2, xy, their errors, the ellipse) are weighted by the filtered
 * values (the convolved image; the image itself with GPUWS_FILTER_NONE), as are cflux and cpeak; flux and peak
 * are of the background-subtracted, unfiltered pixels. */
typedef struct gpuws_object {
    double thresh;       /* the threshold at the object (data units; with an rms map, see GPUWS_SEP_1_4) */
    int64_t npix, tnpix; /* pixels of the object; of them, above thresh unfiltered */
    int64_t xmin, xmax, ymin, ymax;
    double x, y;                 /* barycentre (first moments) */
    double x2, y2, xy;           /* second moments */
    double errx2, erry2, errxy;  /* their errors, from the noise (and gain) */
    double a, b, theta;          /* ellipse: semi-axes (pixels), angle of a from +x towards +y in radians */
    double cxx, cyy, cxy;        /* the ellipse as cxx x² + cyy y² + cxy x y = 1 */
    double flux, cflux, fluxerr; /* sums (unfiltered, filtered); fluxerr = sqrt(Σ σ² + Σ max(v, 0) / gain) */
    double peak, cpeak;          /* largest pixel (unfiltered, filtered) */
    int64_t xpeak, ypeak, xcpeak, ycpeak;
    int flag; /* GPUWS_OBJ_* bits */
} gpuws_object;

typedef struct gpuws_extract_catalog {
    size_t num_objects;
    gpuws_object *objects; /* num_objects records in SEP's order */
    double ms_device;      /* wall time of the device steps, the records' read-back included */
    double ms_host;        /* wall time of the host steps (deblending, measurement) */
} gpuws_extract_catalog;

/* image: width*height f32 values on the device. Blocks until *catalog is filled (and segmap written). On success
 * *catalog is allocated; free it with gpuws_extract_catalog_free. On error *catalog is NULL and nothing is written.
 * Images of 2^31 pixels or more (the device records' indices are 31-bit) go through the device in bands of whole rows
 * of fewer than 2^31 pixels with their halo, each band's rows copied from the caller's buffers on the device, as
 * gpuws_extract_host's bands from host memory: the same catalogue and map bit for bit; the segmentation map is then
 * made in host memory (4 bytes a pixel, and 4 more while the bands' labels are kept) and written once the call
 * succeeds. Errors of such an image are worded as gpuws_extract_host's.
 * Errors: GPUWS_ERR_INVALID_ARGUMENT for zero sizes, NULL image/catalog, thresh not finite or <= 0 when relative,
 * minarea < 1, an unknown filter_type, a filter side even or outside 1..4095, a filter whose absolute values do not
 * sum to a finite number > 0, connectivity other than 4/8, deblend_nthresh < 1, deblend_cont outside [0, 1],
 * clean_param <= 0, negative gain or err, an unknown sep_version, a segmap aliasing an input;
 * GPUWS_ERR_OUT_OF_RANGE / _WRONG_CONTEXT for buffers too small or of another context; GPUWS_ERR_UNSUPPORTED on an
 * OpenCL device without fp64, and beyond 2^31 - 1 pixels for gpuws_extract_host's reasons (a row whose band holds 2^31
 * pixels, 2^32 rows). */
GPUWS_API gpuws_status gpuws_extract(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *image,
                                     const gpuws_extract_options *options, gpuws_extract_catalog **catalog);
GPUWS_API void gpuws_extract_catalog_free(gpuws_extract_catalog *catalog);

/* ---- out of core: host images of any size (docs/scale.md, "Source extraction from host memory") -------------
 * gpuws_background and gpuws_extract from host memory to host memory, for images larger than the device's memory
 * (or than max_device_bytes): the image goes through the device in bands of whole rows. The results are the
 * in-core calls' on the same backend, bit for bit, for any banding: the same catalogue (count, order, every column),
 * segmentation map, back and rms.
 *
 * Progress of both: called on the calling thread once band `band` (0-based, in order) of `bands` is through pass
 * `pass` of `passes`, with rows_done of the image's `rows` rows through it. */
typedef void (*gpuws_extract_host_progress)(void *user, int pass, int passes, size_t band, size_t bands,
                                            size_t rows_done, size_t rows);

typedef struct gpuws_background_host_options {
    size_t struct_size;                         /* sizeof(gpuws_background_host_options) */
    const gpuws_background_options *background; /* NULL = defaults; its mask must be NULL (the host mask below) */
    const unsigned char *mask;                  /* NULL, or width*height host bytes: nonzero excludes the pixel */
    uint64_t max_device_bytes;                  /* device memory the call may use; 0 = what the device has free */
    gpuws_extract_host_progress progress;       /* NULL = none */
    void *progress_user;                        /* progress's first argument */
} gpuws_background_host_options;
#define GPUWS_BACKGROUND_HOST_OPTIONS_INIT                                                                             \
    {                                                                                                                  \
        sizeof(gpuws_background_host_options), NULL, NULL, 0, NULL, NULL                                               \
    }

/* gpuws_background on a host image (width*height f32, row-major) into host back and rms (width*height f32 each). On
 * GPUs, pass 1 uploads bands of whole mesh rows (image and mask: 5 bytes a pixel) and computes their meshes'
 * statistics; the host makes the grid steps from them; pass 2 evaluates back and rms for bands of rows (8 bytes a pixel
 * beside the plan) and downloads them; when the budget holds the whole image each pass is one band. The values are
 * gpuws_background's on the same backend, bit for bit. Any number of pixels, each side below 2^31. On the CPU backend,
 * whose device memory is the host's, the reference runs on the caller's arrays. (gpuws_extract_host makes the
 * background itself without host maps: options->background.) Errors: gpuws_background's (a mesh larger than the image,
 * sizes < 1, ...), NULL ctx, image, back, rms or result, back and rms overlapping each other, the image or the mask,
 * options->background->mask not NULL, a budget smaller than one band of one mesh row or of one row of maps beside the
 * plan (the message gives the minimum) → GPUWS_ERR_INVALID_ARGUMENT; nothing is written then. A device error while
 * bands run: back and rms unspecified. */
GPUWS_API gpuws_status gpuws_background_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                             const gpuws_background_host_options *options, float *back, float *rms,
                                             gpuws_background_result *result);

typedef struct gpuws_extract_host_options {
    size_t struct_size;                   /* sizeof(gpuws_extract_host_options) */
    const gpuws_extract_options *extract; /* NULL = defaults; its buffers (back, rms, mask, segmap) must be NULL */
    const float *back, *rms;              /* NULL, or width*height host f32: as gpuws_extract_options' */
    const unsigned char *mask;            /* NULL, or width*height host bytes */
    int32_t *segmap;                      /* NULL, or width*height host int32 output: the segmentation map */
    uint64_t max_device_bytes;            /* device memory the call may use; 0 = what the device has free */
    gpuws_extract_host_progress progress; /* NULL = none */
    void *progress_user;                  /* progress's first argument */
    /* SEP's mesh background made by the call, as `gpuws sources` uses it: NULL = none (back and rms as given);
     * else back and rms must be NULL, and the image's background with these options (their mask NULL: the mask
     * above serves both, as in sep.Background(data, mask) and sep.extract(data - bkg, thresh, err=bkg.rms(),
     * mask)) is subtracted and its rms is the noise map. Its maps never need the host's memory: the device makes
     * each band's from the mesh grid. */
    const gpuws_background_options *background;
    float *back_out, *rms_out;                  /* NULL, or width*height host f32: the background's maps */
    gpuws_background_result *background_result; /* NULL, or the background's globals */
    /* Several devices: contexts of further devices of ctx's backend over which, with ctx, a banded extraction's
     * bands are spread (as gpuws_convolve2d_host_options.more_contexts; gpuws_contexts_create makes them from
     * GPUWS_DEVICE). An extraction that fits ctx in-core runs there alone. NULL = ctx alone. */
    gpuws_context *const *more_contexts;
    size_t num_more_contexts;
} gpuws_extract_host_options;
#define GPUWS_EXTRACT_HOST_OPTIONS_INIT                                                                                \
    {                                                                                                                  \
        sizeof(gpuws_extract_host_options), NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
            0                                                                                                          \
    }

/* gpuws_extract on a host image (width*height f32, row-major), the maps and the segmentation map in host memory. When
 * the image, its maps and the in-core extraction's device memory (about 118 bytes a pixel) fit the budget, the call is
 * one in-core gpuws_extract between uploads and a download. Otherwise bands of whole rows, each with max(filter_h / 2,
 * 1) rows of halo above and below, go through the device one after the other (on a GPU or OpenCL device the next band's
 * upload, on a thread of its own, while the device works on one, where the budget holds two bands' inputs): the pixels
 * are prepared, filtered, thresholded and labelled there and the records of the band's own rows read back; the host
 * then joins the bands' labels at their borders (numbered as gpuws_label numbers the whole image) and makes the
 * catalogue with gpuws_extract's host steps. Host memory: about 32 bytes a detected pixel (with a segmentation map on a
 * device that groups the records, a GPU, 4 bytes a pixel more: the bands' labels, which the map is made from once the
 * catalogue is). On the CPU backend the bands are the reference's, on the caller's arrays. With options->background the
 * call first makes the mesh grid as gpuws_background_host's pass 1 does (progress: pass 1 of 2, the extraction pass 2),
 * then each band's back and rms on the device from it, its own rows read back into back_out and rms_out where given:
 * the results are gpuws_background's and then gpuws_extract's in-core, bit for bit. Several devices
 * (options->more_contexts): the budget holds on each, and a banded extraction's bands are cut into one range of
 * consecutive bands a device (at least a band each), each device driven by a thread of its own (ctx's by the calling
 * thread; the background's grid is made on ctx); the results are the same bits as on ctx alone when the devices are the
 * same model. Progress comes on the calling thread in band order (the other devices' bands once every device is done).
 * Errors: gpuws_extract's and gpuws_background's, NULL ctx or image, a buffer set in options->extract or
 * options->background, back or rms given with background, an output (segmap, back_out, rms_out) overlapping an
 * input or another, a more_contexts entry that is NULL, not live, of another backend, or ctx or an entry again, a
 * budget smaller than one band of one row with its halo (the message gives the minimum) →
 * GPUWS_ERR_INVALID_ARGUMENT. Images of 2^31 pixels or more are legal (pixel indices are 64-bit on the host); a row
 * whose band (the row with its halo) holds 2^31 pixels or more, 2^32 rows or more, or 2^31 or more detected pixels or
 * components' pieces in the bands → GPUWS_ERR_UNSUPPORTED. On error *catalog is NULL and segmap untouched; back_out and rms_out are
 * unspecified. */
GPUWS_API gpuws_status gpuws_extract_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                          const gpuws_extract_host_options *options, gpuws_extract_catalog **catalog);

/* gpuws_extract_host over an image whose rows are spread over several callers in caller order (MPI ranks:
 * gpuws_mpi_extract_host wraps this; caller c's rows follow those of callers 0 .. c - 1, a caller may hold none, image
 * NULL then): collective; caller root gets the whole image's catalogue, gpuws_extract_host's (and so gpuws_extract's)
 * on the whole image bit for bit, and in options->segmap (root's, the whole width x height map; NULL on the others)
 * its segmentation map; the others get *catalog NULL. The background is made by the callers (options->background;
 * back and rms cannot be given → GPUWS_ERR_UNSUPPORTED), each caller's first row then a multiple of the mesh height
 * (a mesh's pixels in one caller): every caller gets the globals (background_result) and, in back_out and rms_out,
 * its own rows of the maps; options->mask is the caller's rows (NULL: none masked). Each caller runs its rows in bands
 * on its own devices within its own budget (max_device_bytes, more_contexts, progress: its own). What a caller sends
 * (8-byte words, P callers): 2 + 8 x 19 (the options agreed), P and 4 P (its rows; its records' and labels' count
 * and band height), a word for each failure check (7 with the background, 5 without), its meshes (a word each), the
 * rows within the halo of either end of its share (up to 2 halo rows of width x 4 bytes, 5 with a mask, to every
 * caller), and its records, 3 words each (24 bytes a detected pixel), to root. Errors: gpuws_extract_host's, collectively (every caller fails
 * when one does, with its own message where it failed); callers that disagree on the width, root or the options that
 * shape the catalogue (the filter, thresholds, deblending, cleaning, connectivity, the background's meshes and
 * filter) → GPUWS_ERR_INVALID_ARGUMENT on every caller. Only a NULL catalog, reduce or gather, caller or root not
 * below callers fail this caller alone. */
GPUWS_API gpuws_status gpuws_extract_host_reduce(gpuws_context *ctx, size_t width, size_t rows, const float *image,
                                                 const gpuws_extract_host_options *options, size_t caller,
                                                 size_t callers, size_t root, gpuws_sum_reducer reduce,
                                                 gpuws_gatherer gather, void *reduce_user,
                                                 gpuws_extract_catalog **catalog);

/* How gpuws_extract_host would split this extraction: *band_rows own rows per band (the last band may have fewer)
 * in *bands bands; 1 band when everything fits the budget (in-core). Only options' budget, maps given, filter and
 * devices count; no image is read. Errors as for gpuws_extract_host (a NULL result pointer is GPUWS_ERR_INVALID_ARGUMENT). */
GPUWS_API gpuws_status gpuws_extract_host_bands(gpuws_context *ctx, size_t width, size_t height,
                                                const gpuws_extract_host_options *options, size_t *band_rows,
                                                size_t *bands);

#ifdef __cplusplus
}
#endif
#endif
