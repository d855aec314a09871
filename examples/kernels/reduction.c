/* Reductions made by the generator, like CuPy's ReductionKernel: the sum of squares of a vector (its L2 norm
 * squared) and its largest absolute value.
 *
 * gpuws_reduction_create takes the result type, the neutral value (the identity of the reduction), a map
 * expression of element i, a reduce expression of a and b, and the parameter list. gpuws_reduction_launch runs one
 * pass over the data on the device plus a tiny second pass, and writes one value into the output buffer. The order
 * of the additions is fixed for a given device and n, so the result is the same from run to run.
 *
 * The values are small integers, so the sum of squares is exact in float (it stays below 2^24) and a maximum is
 * always exact: both must equal the host's. Choose the backend with GPUWS_BACKEND=cuda|opencl|cpu. Exits 0 only
 * when both results are right. */
#include <gpuws.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 500000

int main(void)
{
    float *x = malloc(N * sizeof *x);
    gpuws_context *ctx = NULL;
    gpuws_buffer *dx = NULL, *dout = NULL;
    gpuws_status st = x ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    float want_sum = 0.0f, want_max = 0.0f;
    for (int i = 0; !st && i < N; i++) {
        x[i] = (float)(i * 37 % 15 - 7); /* -7 .. 7 */
        want_sum += x[i] * x[i];
        want_max = fmaxf(want_max, fabsf(x[i]));
    }
    gpuws_device_info info;
    gpuws_reduction *sum_sq, *max_abs; /* belong to the context: no destroy call */
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st =
             gpuws_reduction_create(ctx, "gw_f32", "0.0f", "x[i] * x[i]", "a + b", "const gw_f32 *x", NULL, &sum_sq)) ||
        (st = gpuws_reduction_create(ctx, "gw_f32", "0.0f", "fabs(x[i])", "gw_max(a, b)", "const gw_f32 *x", NULL,
                                     &max_abs)) ||
        (st = gpuws_buffer_create(ctx, N * sizeof *x, &dx)) || (st = gpuws_buffer_create(ctx, sizeof(float), &dout)) ||
        (st = gpuws_buffer_write(dx, 0, x, N * sizeof *x)))
        goto done;

    /* the arguments follow params; each launch writes its one result at byte 0 of dout */
    gpuws_arg args[] = { gpuws_arg_buffer(dx) };
    float sum, max;
    if ((st = gpuws_reduction_launch(NULL, sum_sq, N, args, 1, dout)) ||
        (st = gpuws_buffer_read(dout, 0, &sum, sizeof sum)) ||
        (st = gpuws_reduction_launch(NULL, max_abs, N, args, 1, dout)) ||
        (st = gpuws_buffer_read(dout, 0, &max, sizeof max)))
        goto done;

    if (sum != want_sum || max != want_max) {
        fprintf(stderr, "reduction: sum of squares %.9g (want %.9g), largest |x| %g (want %g)\n", (double)sum,
                (double)want_sum, (double)max, (double)want_max);
        st = GPUWS_ERR_INTERNAL;
        goto done;
    }
    printf(
        "reduction: checked the sum of squares (%.0f, L2 norm %.6g) and the largest |x| (%g) of %d floats against the "
        "host on %s: correct\n",
        (double)sum, sqrt(sum), (double)max, N, info.name);
done:
    if (st) fprintf(stderr, "reduction: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dout);
    gpuws_context_destroy(ctx);
    free(x);
    return st ? 1 : 0;
}
