/* Aperture photometry as SEP computes it (sep.sum_circle, sep.sum_ellipse, sep.kron_radius and the flux_auto
 * recipe of SEP's documentation), batched: thousands of apertures in one call, the image staying on the device.
 * docs/algorithms/aperture.md has the definitions. Images are row-major f32, width = number of columns; positions
 * are 0-based pixel coordinates with (0, 0) the centre of the first pixel, x along a row (SEP's convention).
 * Positions, sizes and results are host arrays of n values: uploaded and read back inside, so every call blocks. */
#ifndef GPUWS_ALG_APERTURE_H
#define GPUWS_ALG_APERTURE_H
#ifdef __cplusplus
extern "C" {
#endif

/* Flags, SEP's bits. */
#define GPUWS_APER_TRUNC     0x0010 /* the aperture's box was clipped by the image's edge */
#define GPUWS_APER_HASMASKED 0x0020 /* a masked pixel lies in the aperture (kron: or a pixel below -1e30) */
#define GPUWS_APER_ALLMASKED                                                                                           \
    0x0040                            /* every pixel is masked: the sum is NaN, the Kron radius 0 (SEP 1.2 sets
                                         it for kron_radius only; here sums set it too) */
#define GPUWS_APER_NONPOSITIVE 0x0080 /* kron: the weighted or plain sum is <= 0; the Kron radius is 0 */

typedef struct gpuws_aperture_options {
    size_t struct_size;       /* sizeof(gpuws_aperture_options); set by GPUWS_APERTURE_OPTIONS_INIT */
    const gpuws_buffer *rms;  /* NULL, or width*height f32 of the image's context: each pixel's 1σ error */
    double err;               /* every pixel's 1σ error when rms is NULL: finite, >= 0; default 0 (sumerr 0) */
    double gain;              /* > 0: adds sum / gain to the variance where sum > 0 (Poisson); 0: none (default) */
    const gpuws_buffer *mask; /* NULL, or width*height uint8 of the image's context: nonzero masks the pixel */
    int subpix;               /* 0: exact overlap (default); k in 1..64: k x k samples per pixel, as SEP's subpix */
    /* gpuws_flux_auto only; 0 stands for the default (a zero-initialised struct), negative is an error */
    double kron_r;      /* the ellipse scale in which the Kron radius is measured; default 6 */
    double kron_factor; /* the aperture is the ellipse scaled by kron_factor x Kron radius; default 2.5 */
    double kron_rmin;   /* the circle's radius where kronrad sqrt(a b) < kron_rmin; default 1.75 */
    /* newer than the struct's first version: struct_size says whether a caller's struct has it */
    const gpuws_buffer *back; /* NULL, or width*height f32 of the image's context: a background map subtracted
                                 from every pixel before it is used (each pixel image - back in f32, as SEP's
                                 sum_circle(data - bkg, ...) sees it) */
} gpuws_aperture_options;
#define GPUWS_APERTURE_OPTIONS_INIT                                                                                    \
    {                                                                                                                  \
        sizeof(gpuws_aperture_options), NULL, 0.0, 0.0, NULL, 0, 6.0, 2.5, 1.75, NULL                                  \
    }

/* sep.sum_circle(image, x, y, r, err=, mask=, gain=, subpix=) for n circles of radius r[i] >= 0 at (x[i], y[i]),
 * on image - back when the options give a background map (then as sep.sum_circle(data - bkg, ...)):
 * sum[i] = Σ overlap × pixel over the unmasked pixels, area[i] = Σ overlap (masked pixels included), sumerr[i] =
 * sqrt(Σ overlap × σ² (+ sum / gain)). With a mask the sum and variance are scaled by area / unmasked area (SEP's
 * correction). A NaN pixel in the aperture makes its sum NaN, as in SEP. Positions may lie outside the image
 * (partly: TRUNC; wholly: sum 0, TRUNC). sum and flag are required; sumerr and area may be NULL. n = 0 does
 * nothing (the arrays may then be NULL).
 * Errors (nothing written): GPUWS_ERR_INVALID_ARGUMENT for a NULL input array or required output, a position
 * that is not finite, a radius that is negative or not finite, bad options (err < 0 or with rms, gain < 0,
 * subpix outside 0..64), rms/mask/back too small or of another context; GPUWS_ERR_UNSUPPORTED on OpenCL devices
 * without fp64. */
GPUWS_API gpuws_status gpuws_sum_circle(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *image,
                                        size_t n, const double *x, const double *y, const double *r,
                                        const gpuws_aperture_options *options, double *sum, double *sumerr,
                                        double *area, int *flag);

/* sep.sum_ellipse(image, x, y, a, b, theta, r, ...): ellipses of semi-axes a[i] r[i] and b[i] r[i], the major axis
 * at angle theta[i] (radians, counter-clockwise from +x) with a >= b > 0, |theta| <= pi/2, r >= 0 (SEP's checks;
 * b = 0 is refused here). Otherwise as gpuws_sum_circle. */
GPUWS_API gpuws_status gpuws_sum_ellipse(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *image,
                                         size_t n, const double *x, const double *y, const double *a, const double *b,
                                         const double *theta, const double *r, const gpuws_aperture_options *options,
                                         double *sum, double *sumerr, double *area, int *flag);

/* sep.kron_radius(image, x, y, a, b, theta, r, mask=): over the whole pixels whose centre lies within the ellipse
 * (a, b, theta) scaled by r (metric distance² <= r²), kronrad = Σ d × pixel / Σ pixel, d the metric distance;
 * masked pixels and pixels below -1e30 are left out (HASMASKED). No pixel left: 0 and ALLMASKED; a sum <= 0: 0 and
 * NONPOSITIVE. Only the options' mask and back are used. kronrad and flag are required. Errors as
 * gpuws_sum_ellipse. */
GPUWS_API gpuws_status gpuws_kron_radius(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *image,
                                         size_t n, const double *x, const double *y, const double *a, const double *b,
                                         const double *theta, const double *r, const gpuws_aperture_options *options,
                                         double *kronrad, int *flag);

/* SEP's flux_auto recipe (its documentation, "Kron radius and AUTO flux"): kronrad = kron_radius(..., kron_r);
 * the sum in the ellipse scaled by kron_factor × kronrad, its flag ORed with the Kron flags; where kronrad ×
 * sqrt(a b) < kron_rmin, the sum in the circle of radius kron_rmin and that circle's flag alone. A NaN Kron radius
 * (a NaN pixel in the Kron ellipse) gives sum and sumerr NaN, area 0. SEP's recipe uses subpix = 1: set it in the
 * options to reproduce it to the bit. kronrad, sumerr and area may be NULL; kron_r, kron_factor and kron_rmin
 * must be finite and >= 0 (0: the default). Errors as gpuws_sum_ellipse. */
GPUWS_API gpuws_status gpuws_flux_auto(gpuws_stream *stream, size_t width, size_t height, const gpuws_buffer *image,
                                       size_t n, const double *x, const double *y, const double *a, const double *b,
                                       const double *theta, const gpuws_aperture_options *options, double *kronrad,
                                       double *sum, double *sumerr, double *area, int *flag);

/* ---- from host memory -------------------------------------------------------------------------------------
 * The same four calls on a host image of any size (as gpuws_extract_host's, larger than the device's memory): the
 * image, and the maps given here as host arrays, go through ctx's device in windows of whole rows, each window
 * holding the whole pixel box of every aperture it sums (windows start at the first row of an aperture's box not
 * yet summed, so rows without apertures are never uploaded). Each aperture's parameters and flags are made for the
 * whole image and moved to its window by whole rows, which changes no rounding: the results are the device-buffer
 * call's on the same backend, bit for bit. On the CPU backend the reference runs on the caller's arrays. Blocking. */
typedef struct gpuws_aperture_host_options {
    size_t struct_size;                     /* sizeof(gpuws_aperture_host_options) */
    const gpuws_aperture_options *aperture; /* NULL = defaults; its rms, mask and back must be NULL (the maps below) */
    const float *back, *rms;                /* NULL, or width*height host f32: as gpuws_aperture_options' */
    const unsigned char *mask;              /* NULL, or width*height host bytes */
    uint64_t max_device_bytes;              /* device memory the call may use; 0 = fifteen sixteenths of the free */
    /* newer than the struct's first version: struct_size says whether a caller's struct has them */
    size_t row0, rows; /* rows > 0: image and maps hold only the image's rows row0 .. row0 + rows - 1 (width x rows
                          values; positions and results stay the whole image's, whose height is `height`), and
                          every aperture's pixel box must lie in them (an MPI rank's rows and a halo: the gpuws tool's
                          --phot-apertures); 0 = all height rows (row0 0) */
} gpuws_aperture_host_options;
#define GPUWS_APERTURE_HOST_OPTIONS_INIT                                                                               \
    {                                                                                                                  \
        sizeof(gpuws_aperture_host_options), NULL, NULL, NULL, NULL, 0, 0, 0                                           \
    }

/* Errors: those of the device-buffer calls, NULL ctx or image, a map set in options->aperture, a budget that
 * cannot hold the rows of the tallest aperture's box (GPUWS_ERR_INVALID_ARGUMENT: the message gives the rows and
 * the bytes needed), row0 and rows outside the image, or an aperture's box outside them (INVALID_ARGUMENT: the
 * aperture and its rows; flux_auto's boxes are known only once the Kron radii are). Nothing is written on an
 * error. */
GPUWS_API gpuws_status gpuws_sum_circle_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                             size_t n, const double *x, const double *y, const double *r,
                                             const gpuws_aperture_host_options *options, double *sum, double *sumerr,
                                             double *area, int *flag);
GPUWS_API gpuws_status gpuws_sum_ellipse_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                              size_t n, const double *x, const double *y, const double *a,
                                              const double *b, const double *theta, const double *r,
                                              const gpuws_aperture_host_options *options, double *sum, double *sumerr,
                                              double *area, int *flag);
GPUWS_API gpuws_status gpuws_kron_radius_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                              size_t n, const double *x, const double *y, const double *a,
                                              const double *b, const double *theta, const double *r,
                                              const gpuws_aperture_host_options *options, double *kronrad, int *flag);
GPUWS_API gpuws_status gpuws_flux_auto_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                            size_t n, const double *x, const double *y, const double *a,
                                            const double *b, const double *theta,
                                            const gpuws_aperture_host_options *options, double *kronrad, double *sum,
                                            double *sumerr, double *area, int *flag);

#ifdef __cplusplus
}
#endif
#endif
