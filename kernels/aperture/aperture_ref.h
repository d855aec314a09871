/* Aperture photometry, scalar reference: the tests' oracle and the CPU backend's implementation. The host steps
 * (validation, each aperture's parameters and box, the final corrections) also serve the GPU driver, which runs
 * the per-pixel sums (aperture_geom.h) on the device. */
#ifndef GPUWS_APERTURE_REF_H
#define GPUWS_APERTURE_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stdint.h>

/* The host side of gpuws_aperture_options: per-pixel rms map (or NULL and a scalar err), gain, mask, subpix, the
 * background map subtracted from the image (or NULL). */
typedef struct gpuws__aperture_host {
    const float *rms;
    double err, gain;
    const uint8_t *mask;
    int subpix;
    const float *back;
} gpuws__aperture_host;

/* One aperture's AP_PARAMS doubles (aperture_geom.h) and SEP's truncation flag for its box in a width x height
 * image. Circle: radius r. Ellipse: axes a >= b > 0, theta in [-pi/2, pi/2], scaled by r. Inputs valid. */
int gpuws__aperture_circle(double x, double y, double r, size_t width, size_t height, double *p);
int gpuws__aperture_ellipse(double x, double y, double a, double b, double theta, double r, size_t width, size_t height,
                            double *p);

/* The AP_RAW sums of aperture p over the image (kron: SEP's Kron sums over the pixels with rpix2 <= r^2). */
void gpuws__aperture_raw_ref(const float *image, size_t width, const gpuws__aperture_host *o, bool kron,
                             const double *p, double *raw);

/* From the raw sums: SEP's mask correction and Poisson term; flag starts as the box's flag. */
void gpuws__aperture_finish_sum(const double *raw, bool has_mask, double gain, int flag, double *sum, double *sumerr,
                                double *area, int *out_flag);
void gpuws__aperture_finish_kron(const double *raw, int flag, double *kronrad, int *out_flag);

/* Whole calls on host arrays, one aperture at a time (the arguments are those of include/gpuws/algorithms/
 * aperture.h, already validated). a == NULL: circles of radius r. sumerr, area may be NULL. */
void gpuws_aperture_sum_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, size_t n,
                            const double *x, const double *y, const double *a, const double *b, const double *theta,
                            const double *r, double *sum, double *sumerr, double *area, int *flag);
void gpuws_kron_radius_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, size_t n,
                           const double *x, const double *y, const double *a, const double *b, const double *theta,
                           const double *r, double *kronrad, int *flag);

/* SEP's flux_auto recipe for one object of Kron radius kronrad: the circle of radius rmin when kronrad sqrt(a b) <
 * rmin (*circle true), else the ellipse scaled by factor * kronrad; its parameters in p. Returns the box flag, or
 * -1 when the Kron radius is not a number (no aperture: the sum is NaN). */
int gpuws__flux_auto_aperture(double x, double y, double a, double b, double theta, double kronrad, double factor,
                              double rmin, size_t width, size_t height, double *p, bool *circle);
void gpuws_flux_auto_ref(const float *image, size_t width, size_t height, const gpuws__aperture_host *o, double kron_r,
                         double factor, double rmin, size_t n, const double *x, const double *y, const double *a,
                         const double *b, const double *theta, double *kronrad, double *sum, double *sumerr,
                         double *area, int *flag);

#endif
