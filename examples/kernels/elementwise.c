/* An elementwise kernel made by the generator, like CuPy's ElementwiseKernel: the workshop's gaussian_pdf,
 *   y = exp(-0.5 ((x - mean) / sigma)^2) / (sigma sqrt(2 pi)),
 * over a million floats.
 *
 * gpuws_elementwise_create takes a parameter list, a statement on element i and an optional preamble of helper
 * functions; gpuws writes the kernel around them (pointers are buffers) and gpuws_elementwise_launch picks the grid
 * and block for n elements. Math functions have OpenCL's names (exp, sqrt, ...) on every backend.
 *
 * The device computes in float; the host in double. Choose the backend with GPUWS_BACKEND=cuda|opencl|cpu. Exits 0
 * only when every value is within 1e-5 (relative) of the host's. */
#include <gpuws.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *preamble = "GW_DEVICE gw_f32 gaussian_pdf(gw_f32 x, gw_f32 mean, gw_f32 sigma)\n"
                              "{\n"
                              "    const gw_f32 z = (x - mean) / sigma;\n"
                              "    return exp(-0.5f * z * z) / (sigma * sqrt(2.0f * 3.14159265358979f));\n"
                              "}\n";
static const char *params = "const gw_f32 *x, gw_f32 *y, gw_f32 mean, gw_f32 sigma";
static const char *operation = "y[i] = gaussian_pdf(x[i], mean, sigma)";

#define N 1000000

int main(void)
{
    const float mean = 0.5f, sigma = 1.5f;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    gpuws_context *ctx = NULL;
    gpuws_buffer *dx = NULL, *dy = NULL;
    gpuws_status st = x && y ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < N; i++) x[i] = -5.0f + 10.0f * (float)i / N;
    gpuws_device_info info;
    gpuws_kernel *k; /* belongs to the context: no destroy call */
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_elementwise_create(ctx, params, operation, preamble, &k)) ||
        (st = gpuws_buffer_create(ctx, N * sizeof *x, &dx)) || (st = gpuws_buffer_create(ctx, N * sizeof *y, &dy)) ||
        (st = gpuws_buffer_write(dx, 0, x, N * sizeof *x)))
        goto done;

    /* the arguments follow params, in order */
    gpuws_arg args[] = { gpuws_arg_buffer(dx), gpuws_arg_buffer(dy), gpuws_arg_f32(mean), gpuws_arg_f32(sigma) };
    if ((st = gpuws_elementwise_launch(NULL, k, N, args, 4)) || (st = gpuws_buffer_read(dy, 0, y, N * sizeof *y)))
        goto done;

    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double z = ((double)x[i] - mean) / sigma,
                     want = exp(-0.5 * z * z) / (sigma * sqrt(2.0 * 3.14159265358979323846));
        const double rel = fabs(y[i] - want) / want;
        if (!(rel <= 1e-5)) {
            fprintf(stderr, "elementwise: y[%d] = %.9g, want %.9g (relative error %.3g)\n", i, (double)y[i], want, rel);
            st = GPUWS_ERR_INTERNAL;
            goto done;
        }
        if (rel > worst) worst = rel;
    }
    printf(
        "elementwise: checked gaussian_pdf of %d floats against the host (worst relative error %.2g) on %s: correct\n",
        N, worst, info.name);
done:
    if (st) fprintf(stderr, "elementwise: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_context_destroy(ctx); /* destroys the generated kernel too */
    free(x);
    free(y);
    return st ? 1 : 0;
}
