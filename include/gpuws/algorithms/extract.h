/* Source extraction as SExtractor and SEP do it. This header holds its first step, the mesh background.
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
 * usable pixels (all NaN or masked); GPUWS_ERR_UNSUPPORTED on OpenCL devices without fp64. On error nothing is
 * written. */
GPUWS_API gpuws_status gpuws_background(gpuws_stream *stream, gpuws_dtype dtype, size_t width, size_t height,
                                        const gpuws_buffer *image, const gpuws_background_options *options,
                                        gpuws_buffer *back, gpuws_buffer *rms, gpuws_background_result *result);

#ifdef __cplusplus
}
#endif
#endif
