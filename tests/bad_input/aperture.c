/* Bad input for aperture photometry (include/gpuws/algorithms/aperture.h): every output is a host array in f->host,
 * which the harness checks is untouched by a failure; the image is f->in (BAD_W x BAD_H f32). */
#include "../bad_input.h"

#include <math.h>
#include <string.h>

#define AP_SUM  BAD_HOST_OUT(double)
#define AP_ERR  (BAD_HOST_OUT(double) + 8)
#define AP_AREA (BAD_HOST_OUT(double) + 16)
#define AP_FLAG ((int *)(void *)(BAD_HOST_OUT(double) + 24))

static const double X[2] = { 3.0, 8.5 }, Y[2] = { 4.0, 2.5 }, R[2] = { 2.0, 1.5 };
static const double A[2] = { 2.0, 3.0 }, B[2] = { 1.0, 3.0 }, TH[2] = { 0.3, -1.2 };

static gpuws_status circle(bad_fixture *f, const double *x, const double *y, const double *r,
                           const gpuws_aperture_options *o)
{
    return gpuws_sum_circle(NULL, BAD_W, BAD_H, f->in, 2, x, y, r, o, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

static gpuws_status ellipse(bad_fixture *f, const double *a, const double *b, const double *th, const double *r)
{
    return gpuws_sum_ellipse(NULL, BAD_W, BAD_H, f->in, 2, X, Y, a, b, th, r, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

static gpuws_status with(bad_fixture *f, gpuws_aperture_options o) { return circle(f, X, Y, R, &o); }

BAD_CASE(aperture_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'image': buffer is NULL")
{
    return gpuws_sum_circle(NULL, BAD_W, BAD_H, NULL, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_zero_height, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_circle: the image is 16 x 0: no pixels")
{
    return gpuws_sum_circle(NULL, BAD_W, 0, f->in, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_image_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'image'")
{
    return gpuws_sum_circle(NULL, BAD_W, 2 * BAD_H, f->in, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_width_times_height_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "overflow the pixel index")
{
    return gpuws_sum_circle(NULL, SIZE_MAX / 4, 8, f->in, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_nan_x, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_circle: position 1 (x nan, y 2.5) is not finite")
{
    const double x[2] = { 3.0, NAN };
    return circle(f, x, Y, R, NULL);
}

BAD_CASE(aperture_infinite_y, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "position 0 (x 3, y inf) is not finite")
{
    const double y[2] = { INFINITY, 2.5 };
    return circle(f, X, y, R, NULL);
}

BAD_CASE(aperture_negative_radius, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "r[1] = -1 is not a finite number >= 0")
{
    const double r[2] = { 2.0, -1.0 };
    return circle(f, X, Y, r, NULL);
}

BAD_CASE(aperture_nan_radius, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "r[0] = nan is not a finite number >= 0")
{
    const double r[2] = { NAN, 1.0 };
    return circle(f, X, Y, r, NULL);
}

BAD_CASE(aperture_ellipse_a_less_than_b, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "sum_ellipse: ellipse 1 has a = 2, b = 3: the axes must be finite with a >= b > 0")
{
    const double a[2] = { 2.0, 2.0 };
    return ellipse(f, a, B, TH, R);
}

BAD_CASE(aperture_ellipse_b_zero, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "ellipse 0 has a = 2, b = 0")
{
    const double b[2] = { 0.0, 3.0 };
    return ellipse(f, A, b, TH, R);
}

BAD_CASE(aperture_ellipse_infinite_a, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "ellipse 0 has a = inf, b = 1")
{
    const double a[2] = { INFINITY, 3.0 };
    return ellipse(f, a, B, TH, R);
}

BAD_CASE(aperture_ellipse_theta_past_half_pi, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "theta[1] = -1.6 is not in [-pi/2, pi/2]")
{
    const double th[2] = { 0.3, -1.6 };
    return ellipse(f, A, B, th, R);
}

BAD_CASE(aperture_ellipse_nan_r, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_ellipse: r[1] = nan")
{
    const double r[2] = { 1.0, NAN };
    return ellipse(f, A, B, TH, r);
}

BAD_CASE(aperture_kron_a_less_than_b, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "kron_radius: ellipse 0 has a = 0.5")
{
    const double a[2] = { 0.5, 3.0 };
    return gpuws_kron_radius(NULL, BAD_W, BAD_H, f->in, 2, X, Y, a, B, TH, R, NULL, AP_SUM, AP_FLAG);
}

BAD_CASE(aperture_flux_auto_nan_theta, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "flux_auto: theta[0] = nan")
{
    const double th[2] = { NAN, 0.0 };
    return gpuws_flux_auto(NULL, BAD_W, BAD_H, f->in, 2, X, Y, A, B, th, NULL, AP_AREA, AP_SUM, AP_ERR, NULL, AP_FLAG);
}

BAD_CASE(aperture_no_apertures_is_nothing_to_do, BAD_ALL, GPUWS_OK, "")
{
    /* n = 0: the arrays may be NULL and nothing is written (the harness checks f->host is still poison) */
    gpuws_status st =
        gpuws_sum_circle(NULL, BAD_W, BAD_H, f->in, 0, NULL, NULL, NULL, NULL, AP_SUM, NULL, NULL, AP_FLAG);
    if (!st)
        st = gpuws_flux_auto(NULL, BAD_W, BAD_H, f->in, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL);
    return st;
}

BAD_CASE(aperture_null_x, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_circle: argument 'x' is NULL")
{
    return circle(f, NULL, Y, R, NULL);
}

BAD_CASE(aperture_null_r, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_ellipse: argument 'r' is NULL")
{
    return ellipse(f, A, B, TH, NULL);
}

BAD_CASE(aperture_null_theta, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'theta' is NULL")
{
    return ellipse(f, A, B, NULL, R);
}

BAD_CASE(aperture_null_sum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_circle: argument 'sum' is NULL")
{
    return gpuws_sum_circle(NULL, BAD_W, BAD_H, f->in, 2, X, Y, R, NULL, NULL, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_null_flag, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_ellipse: argument 'flag' is NULL")
{
    return gpuws_sum_ellipse(NULL, BAD_W, BAD_H, f->in, 2, X, Y, A, B, TH, R, NULL, AP_SUM, AP_ERR, AP_AREA, NULL);
}

BAD_CASE(aperture_null_kronrad, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "kron_radius: argument 'kronrad' is NULL")
{
    return gpuws_kron_radius(NULL, BAD_W, BAD_H, f->in, 2, X, Y, A, B, TH, R, NULL, NULL, AP_FLAG);
}

BAD_CASE(aperture_err_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "err -1 is not a finite number >= 0")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.err = -1.0;
    return with(f, o);
}

BAD_CASE(aperture_err_and_rms, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "err 2 and an rms map: give one of them")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.err = 2.0;
    o.rms = f->in;
    return with(f, o);
}

BAD_CASE(aperture_gain_nan, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "gain nan is not a finite number >= 0")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.gain = NAN;
    return with(f, o);
}

BAD_CASE(aperture_subpix_too_large, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "subpix 65 is not in 0..64")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.subpix = 65;
    return with(f, o);
}

BAD_CASE(aperture_subpix_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "subpix -1 is not in 0..64")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.subpix = -1;
    return with(f, o);
}

BAD_CASE(aperture_kron_factor_negative, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "flux_auto: kron_factor -2.5 is not a finite number >= 0")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.kron_factor = -2.5;
    return gpuws_flux_auto(NULL, BAD_W, BAD_H, f->in, 2, X, Y, A, B, TH, &o, AP_AREA, AP_SUM, AP_ERR, NULL, AP_FLAG);
}

BAD_CASE(aperture_options_struct_size_too_small, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "struct_size 8 is less than")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.struct_size = 8;
    return with(f, o);
}

BAD_CASE(aperture_rms_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'rms'")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.rms = f->small;
    return with(f, o);
}

BAD_CASE(aperture_back_too_small, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'back'")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.back = f->small;
    return with(f, o);
}

BAD_CASE(aperture_back_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'back'")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.back = f->foreign;
    return with(f, o);
}

BAD_CASE(aperture_mask_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'mask'")
{
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.mask = f->foreign;
    return with(f, o);
}

BAD_CASE(aperture_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_sum_circle(f->foreign_stream, BAD_W, BAD_H, f->in, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_of_a_nan_image_is_nan, BAD_ALL, GPUWS_OK, "")
{
    /* A NaN pixel makes the sum NaN (SEP); the call succeeds and says so in its results. */
    double sum[2], err[2], area[2];
    int flag[2];
    const gpuws_status st =
        gpuws_sum_circle(f->stream, BAD_W, BAD_H, f->nan_img, 2, X, Y, R, NULL, sum, err, area, flag);
    cr_assert_eq(st, GPUWS_OK, "%s", gpuws_last_error());
    cr_assert(isnan(sum[0]) && isnan(sum[1]) && err[0] == 0.0 && fabs(area[0] - 3.14159265358979 * 4) < 1e-12 &&
                  flag[0] == 0,
              "sum %g err %g area %g flag %d", sum[0], err[0], area[0], flag[0]);
    return st;
}

/* ---- from host memory (the _host calls) ---- */

static const float HIMG[BAD_N] = { 1, 2, 3, [BAD_W] = 4, [5 * BAD_W + 9] = 9 };

static gpuws_status circle_host(bad_fixture *f, const float *image, const gpuws_aperture_host_options *o)
{
    return gpuws_sum_circle_host(f->ctx, BAD_W, BAD_H, image, 2, X, Y, R, o, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_host_null_ctx, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'ctx'")
{
    return gpuws_sum_circle_host(NULL, BAD_W, BAD_H, HIMG, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_host_destroyed_ctx, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'ctx'")
{
    return gpuws_sum_circle_host(f->dead_ctx, BAD_W, BAD_H, HIMG, 2, X, Y, R, NULL, AP_SUM, AP_ERR, AP_AREA, AP_FLAG);
}

BAD_CASE(aperture_host_null_image, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "sum_circle_host: argument 'image' is NULL")
{
    return circle_host(f, NULL, NULL);
}

BAD_CASE(aperture_host_device_map_in_options, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "sum_circle_host: options->aperture->rms is a device buffer; give the host array in options")
{
    gpuws_aperture_options a = GPUWS_APERTURE_OPTIONS_INIT;
    a.rms = f->in;
    gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    o.aperture = &a;
    return circle_host(f, HIMG, &o);
}

BAD_CASE(aperture_host_err_and_an_rms_map, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "sum_circle_host: err 2 and an rms map: give one of them")
{
    gpuws_aperture_options a = GPUWS_APERTURE_OPTIONS_INIT;
    a.err = 2.0;
    gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    o.aperture = &a, o.rms = HIMG;
    return circle_host(f, HIMG, &o);
}

BAD_CASE(aperture_host_nan_position, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "flux_auto_host: position 1 (x nan, y 2.5) is not finite")
{
    const double x[2] = { 3.0, NAN };
    return gpuws_flux_auto_host(f->ctx, BAD_W, BAD_H, HIMG, 2, x, Y, A, B, TH, NULL, AP_SUM, AP_SUM, AP_ERR, AP_AREA,
                                AP_FLAG);
}

/* the first circle's box: rows (int)(4 - 2 + 0.5) = 2 to (int)(4 + 2 + 1.4999999) = 7, 5 rows of 16 f32, and 2
 * apertures' parameters and sums: 2 x 168 + 320 bytes */
BAD_CASE(aperture_host_budget_below_the_tallest_box, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "sum_circle_host: a device budget of 655 bytes is too small: aperture 0's box spans 5 rows of 16 pixels, "
         "which with the parameters and sums of 2 apertures need 656 bytes")
{
    gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    o.max_device_bytes = 655;
    return circle_host(f, HIMG, &o);
}

BAD_CASE(aperture_host_budget_of_the_tallest_box_runs, BAD_ALL, GPUWS_OK, "")
{
    gpuws_aperture_host_options o = GPUWS_APERTURE_HOST_OPTIONS_INIT;
    o.max_device_bytes = 656;
    double sum[2], err[2], area[2];
    int flag[2];
    const gpuws_status st = gpuws_sum_circle_host(f->ctx, BAD_W, BAD_H, HIMG, 2, X, Y, R, &o, sum, err, area, flag);
    cr_assert(st || (fabs(area[1] - 3.14159265358979 * 1.5 * 1.5) < 1e-12 && sum[1] == 0.0 && flag[1] == 0),
              "the circle at (8.5, 2.5): sum %g area %g flag %d", sum[1], area[1], flag[1]);
    return st;
}
