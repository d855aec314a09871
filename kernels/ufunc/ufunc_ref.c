/* Scalar references: the tests' oracle and the CPU backend's implementation. */
#include "ufunc_ref.h"

#include <float.h>
#include <math.h>

double gpuws_ufunc_ref_gaussian_pdf(double x, double mean, double sigma)
{
    const double z = (x - mean) / sigma;
    return exp(-0.5 * z * z) / (sigma * sqrt(2.0 * M_PI));
}

double gpuws_ufunc_ref_polar_distance(double rho1, double theta1, double rho2, double theta2)
{
    const double dx = rho1 * cos(theta1) - rho2 * cos(theta2), dy = rho1 * sin(theta1) - rho2 * sin(theta2);
    return sqrt(dx * dx + dy * dy);
}

double gpuws_ufunc_ref_make_pulses(double i, double period, double amplitude)
{
    return fmax(sin(i / period) - 0.3, 0.0) * amplitude;
}

double gpuws_ufunc_ref_hypot(double x, double y)
{
    return hypot(x, y); /* C99: hypot(±inf, NaN) = +inf, hypot(0, 0) = 0, NaN otherwise propagates */
}

double gpuws_ufunc_ref_hidden_layer(double greyscale, double weight) { return tanh(greyscale / 255.0 * weight); }

float gpuws_ufunc_ref_zero_suppress_f32(float w, double threshold) { return (double)w < threshold ? 0.0f : w; }

int16_t gpuws_ufunc_ref_zero_suppress_i16(int16_t w, double threshold) { return (double)w < threshold ? 0 : w; }

const char *const gpuws_ufunc_names[GPUWS_UFUNC_COUNT] = { "gaussian_pdf", "polar_distance", "make_pulses", "hypot",
                                                           "hidden_layer" };
const int gpuws_ufunc_arity[GPUWS_UFUNC_COUNT] = { 3, 4, 3, 2, 2 };

double gpuws_ufunc_ref_eval(gpuws_ufunc_id f, const double *a)
{
    switch (f) {
    case GPUWS_UFUNC_GAUSSIAN_PDF: return gpuws_ufunc_ref_gaussian_pdf(a[0], a[1], a[2]);
    case GPUWS_UFUNC_POLAR_DISTANCE: return gpuws_ufunc_ref_polar_distance(a[0], a[1], a[2], a[3]);
    case GPUWS_UFUNC_MAKE_PULSES: return gpuws_ufunc_ref_make_pulses(a[0], a[1], a[2]);
    case GPUWS_UFUNC_HYPOT: return gpuws_ufunc_ref_hypot(a[0], a[1]);
    default: return gpuws_ufunc_ref_hidden_layer(a[0], a[1]);
    }
}

/* u = 2^-24. Each bound is first order in u from the per-operation bounds of OpenCL 1.2 §7.4 (the looser of the
 * two APIs), plus an absolute FLT_MIN-sized term for results a device without single-precision denormals may
 * flush to zero. */
#define U 0x1p-24

double gpuws_ufunc_ref_bound(gpuws_ufunc_id f, const double *a, double ref)
{
    switch (f) {
    case GPUWS_UFUNC_GAUSSIAN_PDF: {
        const double z = (a[0] - a[1]) / a[2], q = 0.5 * z * z, den = fabs(a[2]) * sqrt(2 * M_PI);
        return (13 + 13 * q) * U * fabs(ref) + FLT_MIN * (1 + 2 / den);
    }
    case GPUWS_UFUNC_POLAR_DISTANCE: return 16 * U * (fabs(a[0]) + fabs(a[2])) + 10 * U * fabs(ref) + FLT_MIN;
    case GPUWS_UFUNC_MAKE_PULSES: return fabs(a[2]) * (5 * fabs(a[0] / a[1]) + 12) * U + FLT_MIN;
    case GPUWS_UFUNC_HYPOT: return 12 * U * fabs(ref) + FLT_MIN;
    default: return 16 * U * fabs(ref) + FLT_MIN;
    }
}

bool gpuws_ufunc_ref_within(gpuws_ufunc_id f, const double *a, double ref, float got, double *err, double *allowed)
{
    double e = 0, b = 0;
    bool ok;
    if (isnan(ref) || isnan(got)) {
        ok = isnan(ref) && isnan(got);
    } else if (isinf((float)ref)) {
        ok = got == (float)ref;
    } else {
        e = fabs((double)got - ref);
        b = gpuws_ufunc_ref_bound(f, a, ref);
        ok = e <= b;
    }
    if (err) *err = e;
    if (allowed) *allowed = b;
    return ok;
}
