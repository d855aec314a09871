/* Scalar references: the tests' oracle and the CPU backend's implementation. */
#include "ufunc_ref.h"

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
