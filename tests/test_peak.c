/* peak: the FMA-rate kernel behind gpuws bench's compute ceiling (kernels/peak).
 *
 * Oracle: the closed form L + a^n (x0 - L) of the recurrence x = a x + b, itself checked against the recurrence in
 * long double. Every backend (and the OpenCL vector variants) must land within the rounding bound that
 * gpuws__peak_error_bound states and the bench applies; that bound must be far tighter than the change a kernel
 * skipping half of its steps would make, or the check could not tell. */
#include "support.h"
#include "peak/peak.h"

#include <math.h>
#include <stdlib.h>

/* The closed form against the plain recurrence in long double (independent truth), and a check that would catch
 * a kernel doing half of its steps: the difference is far beyond the bound the bench allows. */
Test(peak, closed_form_matches_the_recurrence_and_discriminates_missing_steps)
{
    const double a = 1.0 - 0x1p-10, b = 0x1p-10;
    for (uint64_t t = 0; t < 16; t += 5) {
        long double sum = 0;
        for (int j = 0; j < GPUWS_PEAK_CHAINS; j++)
            for (int l = 0; l < 4; l++) {
                long double x = gpuws__peak_start(t, j, l);
                for (int i = 0; i < 1024; i++) x = x * a + b;
                sum += x;
            }
        cr_assert(fabsl(sum - gpuws__peak_expected(t, 1024, a, b, 4)) < 1e-9, "thread %llu", (unsigned long long)t);
    }
    for (uint32_t iters = 1024; iters <= 8192; iters *= 8) {
        const double gap = fabs(gpuws__peak_expected(3, iters, a, b, 1) - gpuws__peak_expected(3, iters / 2, a, b, 1));
        cr_assert(gap > 10 * gpuws__peak_error_bound(0x1p-24, a, b, 1), "%u steps: half of them differ by %g only",
                  iters, gap);
    }
}

BACKEND_TEST(peak, agrees_with_the_closed_form_within_the_stated_bound)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    const double a = 1.0 - 0x1p-10, b = 0x1p-10;
    for (int dt = 0; dt < 2; dt++) {
        const gpuws_dtype dtype = dt ? GPUWS_F64 : GPUWS_F32;
        if (dtype == GPUWS_F64 && !d.fp64) continue;
        /* lanes > 1: the vector kernels, OpenCL only */
        for (uint32_t lanes = 1; lanes <= (*kind == GPUWS_BACKEND_OPENCL ? 16u : 1u); lanes *= 4) {
            const size_t threads = 256;
            const uint32_t iters = 208; /* 13 x 16: the unrolled loop's count need not be a power of two */
            gpuws_buffer *out = test_buffer(ctx, threads * gpuws_dtype_size(dtype));
            TEST_OK(gpuws__peak_fma(NULL, dtype, threads, 64, iters, lanes, a, b, out));
            void *h = test_download(out, threads * gpuws_dtype_size(dtype));
            test_check_guard(out, threads * gpuws_dtype_size(dtype), "out");
            /* the bound the bench applies (peak.h): damped rounding errors of each step plus the final sum */
            const double bound = gpuws__peak_error_bound(dt ? 0x1p-53 : 0x1p-24, a, b, lanes);
            for (size_t t = 0; t < threads; t++) {
                const double got = dt ? ((double *)h)[t] : ((float *)h)[t],
                             want = gpuws__peak_expected(t, iters, a, b, lanes);
                cr_assert(fabs(got - want) <= bound, "%s lanes %u thread %zu: %.17g, want %.17g (bound %.3g)",
                          gpuws_dtype_name(dtype), lanes, t, got, want, bound);
            }
            free(h);
            gpuws_buffer_destroy(out);
        }
    }
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(peak, rejects_bad_arguments_before_running)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *out = test_buffer(ctx, 256 * sizeof(float));
    const double a = 0.5, b = 0.5;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__peak_fma(NULL, GPUWS_F32, 256, 64, 100, 1, a, b, out)); /* not x16 */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__peak_fma(NULL, GPUWS_F32, 256, 64, 0, 1, a, b, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws__peak_fma(NULL, GPUWS_F32, 250, 64, 16, 1, a, b, out)); /* not x block */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws__peak_fma(NULL, GPUWS_F32, 256, 64, 16, 1, 1.5, b, out)); /* diverges */
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__peak_fma(NULL, GPUWS_I32, 256, 64, 16, 1, a, b, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__peak_fma(NULL, GPUWS_F32, 256, 64, 16, 3, a, b, out));
    if (*kind != GPUWS_BACKEND_OPENCL)
        TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__peak_fma(NULL, GPUWS_F32, 256, 64, 16, 4, a, b, out));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws__peak_fma(NULL, GPUWS_F32, 512, 64, 16, 1, a, b, out));
    /* nothing was written */
    unsigned char *h = test_download(out, 256 * sizeof(float));
    for (size_t i = 0; i < 256 * sizeof(float); i++) cr_assert_eq(h[i], TEST_POISON_BYTE);
    free(h);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}
