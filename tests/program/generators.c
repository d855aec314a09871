/* The generators: gpuws_elementwise_create/launch and gpuws_reduction_create/launch (CuPy's ElementwiseKernel and
 * ReductionKernel). The same texts give the same kernel or reduction; reductions are deterministic and give the
 * neutral value for no elements. */
#include "../test_program.h"

#include <math.h>
#include <stdint.h>

/* The reductions the tests below make (a driver compiles each distinct text once per machine, so the tests share
 * them). */
static const struct {
    const char *type, *neutral, *map, *reduce;
    size_t size;
} reductions[] = {
    { "gw_i32", "-2147483647 - 1", "x[i]", "gw_max(a, b)", 4 },
    { "gw_u32", "0xffffffffu", "(gw_u32)(x[i] + 10000)", "gw_min(a, b)", 4 },
    { "gw_i64", "0", "(gw_i64)x[i] * x[i] * x[i]", "a + b", 8 },
    { "gw_f64", "0.0", "(gw_f64)x[i] * 0.5", "a + b", 8 }, /* halves of integers: every partial sum exact */
};

typedef union {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
} scalar;

BACKEND_TEST(program, an_elementwise_kernel_runs_over_exactly_n_elements)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_kernel *k = NOT_SET;
    TEST_OK(gpuws_elementwise_create(ctx, "const gw_f32 *x, gw_f32 *y, gw_f32 a, gw_i32 b",
                                     "y[i] = twice(a * x[i]) + b", "GW_DEVICE gw_f32 twice(gw_f32 v) { return v + v; }",
                                     &k));
    cr_assert(k && k != NOT_SET);
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 1000) * 0.25f;
    gpuws_buffer *dx = test_buffer_from(ctx, x, N * 4), *dy = test_buffer(ctx, N * 4);
    gpuws_arg args[] = { gpuws_arg_buffer(dx), gpuws_arg_buffer(dy), gpuws_arg_f32(1.5f), gpuws_arg_i32(-3) };
    /* n = 0 writes nothing */
    TEST_OK(gpuws_elementwise_launch(NULL, k, 0, args, 4));
    TEST_OK(gpuws_context_synchronize(ctx));
    test_expect_untouched(dy, N * 4, "y");
    /* fewer elements than the buffer holds: the rest stays as it was */
    TEST_OK(gpuws_elementwise_launch(NULL, k, N - 5, args, 4));
    float *y = test_download(dy, N * 4);
    for (int i = 0; i < N - 5; i++) cr_assert_eq(y[i], 2.0f * (1.5f * x[i]) - 3.0f, "element %d", i);
    const unsigned char *tail = (const unsigned char *)(y + N - 5);
    for (int i = 0; i < 5 * 4; i++)
        cr_assert_eq(tail[i], TEST_POISON_BYTE, "element %d past n was written", N - 5 + i / 4);
    test_check_guard(dy, N * 4, "y");
    free(y);
    free(x);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_context_destroy(ctx); /* the generated kernel goes with the context */
}

BACKEND_TEST(program, the_same_generator_texts_give_the_same_kernel_or_reduction)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_kernel *k1, *k2, *k3;
    TEST_OK(gpuws_elementwise_create(ctx, "gw_f32 *y, gw_f32 v", "y[i] = v", NULL, &k1));
    TEST_OK(gpuws_elementwise_create(ctx, "gw_f32 *y, gw_f32 v", "y[i] = v", NULL, &k2));
    TEST_OK(gpuws_elementwise_create(ctx, "gw_u32 *y", "y[i] = 1u", NULL, &k3));
    cr_assert_eq(k1, k2, "the same texts: the same kernel");
    cr_assert_neq(k1, k3, "other texts: another kernel");
    gpuws_reduction *r[3];
    for (int i = 0; i < 3; i++)
        TEST_OK(gpuws_reduction_create(ctx, reductions[i / 2].type, reductions[i / 2].neutral, reductions[i / 2].map,
                                       reductions[i / 2].reduce, "const gw_i32 *x", NULL, &r[i]));
    cr_assert_eq(r[0], r[1], "the same texts: the same reduction");
    cr_assert_neq(r[0], r[2], "other texts: another reduction");
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, elementwise_launch_takes_only_elementwise_kernels_and_their_arguments)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_kernel *ew;
    TEST_OK(gpuws_elementwise_create(ctx, "gw_f32 *y, gw_f32 v", "y[i] = v", NULL, &ew));
    gpuws_program *p = test_build(ctx, "GW_KERNEL void k(GW_GLOBAL gw_f32 *y, gw_f32 v, gw_u64 n) { y[0] = v; }\n");
    gpuws_kernel *user = test_kernel(p, "k");
    gpuws_buffer *y = test_buffer(ctx, 64 * 4);
    gpuws_arg args[] = { gpuws_arg_buffer(y), gpuws_arg_f32(2.0f) };
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_elementwise_launch(NULL, user, 64, args, 2));
    cr_assert(strstr(gpuws_last_error(), "gpuws_elementwise_create"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_elementwise_launch(NULL, NULL, 64, args, 2));
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_elementwise_launch(NULL, ew, 64, args, 1));
    gpuws_arg wrong[] = { gpuws_arg_buffer(y), gpuws_arg_f64(2.0) };
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_elementwise_launch(NULL, ew, 64, wrong, 2));
    TEST_OK(gpuws_context_synchronize(ctx));
    test_expect_untouched(y, 64 * 4, "y");
    /* bad texts */
    gpuws_kernel *k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_elementwise_create(ctx, NULL, "y[i] = 1", NULL, &k));
    cr_assert_null(k);
    k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_elementwise_create(ctx, "gw_f32 *y", "", NULL, &k));
    cr_assert_null(k);
    k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_BUILD, gpuws_elementwise_create(ctx, "gw_f32 *y", "y[i] = no_such_thing", NULL, &k));
    cr_assert_null(k, "a generator that does not build gives no kernel");
    cr_assert(strstr(gpuws_last_error(), "no_such_thing"), "%s", gpuws_last_error());
    gpuws_buffer_destroy(y);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* Row r of reductions over x[0..n) on the host. */
static scalar host_reduce(size_t r, const int32_t *x, uint64_t n)
{
    scalar a = { 0 };
    if (r == 0) a.i32 = INT32_MIN;
    if (r == 1) a.u32 = UINT32_MAX;
    for (uint64_t i = 0; i < n; i++) {
        const int32_t v = x[i];
        switch (r) {
        case 0: a.i32 = v > a.i32 ? v : a.i32; break;
        case 1: a.u32 = (uint32_t)(v + 10000) < a.u32 ? (uint32_t)(v + 10000) : a.u32; break;
        case 2: a.i64 += (int64_t)v * v * v; break;
        default: a.f64 += v * 0.5; break;
        }
    }
    return a;
}

/* A maximum, a minimum and sums of several types against the host; n = 0 gives the neutral value. (The float sum
 * is the determinism test's.) */
BACKEND_TEST(program, reductions_give_the_hosts_result_and_the_neutral_for_no_elements)
{
    gpuws_context *ctx = test_open(*kind);
    const bool fp64 = test_device(ctx).fp64;
    enum { N = 77777 };
    int32_t *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (int32_t)((i * 7919u) % 20011u) - 10000;
    gpuws_buffer *dx = test_buffer_from(ctx, x, N * 4), *out = test_buffer(ctx, 8);
    for (size_t r = 0; r < sizeof reductions / sizeof reductions[0]; r++) {
        if (strcmp(reductions[r].type, "gw_f64") == 0 && !fp64) continue;
        gpuws_reduction *red = NOT_SET;
        TEST_OK(gpuws_reduction_create(ctx, reductions[r].type, reductions[r].neutral, reductions[r].map,
                                       reductions[r].reduce, "const gw_i32 *x", NULL, &red));
        cr_assert(red && red != NOT_SET);
        gpuws_arg args[] = { gpuws_arg_buffer(dx) };
        const uint64_t sizes[] = { 0, 1, 2, 255, 256, 257, N };
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            scalar want = host_reduce(r, x, sizes[s]), got = { 0 };
            TEST_OK(gpuws_reduction_launch(NULL, red, sizes[s], args, 1, out));
            TEST_OK(gpuws_buffer_read(out, 0, &got, reductions[r].size));
            cr_assert_eq(memcmp(&got, &want, reductions[r].size), 0, "%s of %s over %llu elements: 0x%llx, want 0x%llx",
                         reductions[r].reduce, reductions[r].map, (unsigned long long)sizes[s],
                         (unsigned long long)got.u64, (unsigned long long)want.u64);
        }
        test_check_guard(out, 8, "out");
    }
    free(x);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, a_reduction_is_bit_for_bit_the_same_from_run_to_run)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 300007 };
    float *x = malloc(N * sizeof *x);
    test_fill_uniform_f32(x, N, test_seed(false), -1.0, 1.0); /* rounding differs with the order of the additions */
    gpuws_buffer *dx = test_buffer_from(ctx, x, N * 4), *out = test_buffer(ctx, 4);
    gpuws_reduction *red;
    TEST_OK(gpuws_reduction_create(ctx, "gw_f32", "0.0f", "x[i] * 1.001f", "a + b", "const gw_f32 *x", NULL, &red));
    gpuws_arg args[] = { gpuws_arg_buffer(dx) };
    uint32_t first = 0;
    double want = 0, magnitude = 0;
    for (int i = 0; i < N; i++) want += x[i] * 1.001f, magnitude += fabs(x[i] * 1.001f);
    for (int run = 0; run < 4; run++) {
        uint32_t got;
        TEST_OK(gpuws_reduction_launch(NULL, red, N, args, 1, out));
        TEST_OK(gpuws_buffer_read(out, 0, &got, 4));
        if (run == 0) {
            first = got;
            float f;
            memcpy(&f, &got, 4);
            cr_assert(fabs(f - want) <= 1e-5 * magnitude, "the sum %.9g is near the host's %.9g", (double)f, want);
        }
        cr_assert_eq(got, first, "run %d gave 0x%08x, the first 0x%08x", run, got, first);
    }
    free(x);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, reduction_calls_with_bad_texts_or_outputs_are_refused)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_reduction *red = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws_reduction_create(ctx, "gw_u8", "0", "x[i]", "a + b", "const gw_u8 *x", NULL, &red));
    cr_assert_null(red);
    red = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT,
               gpuws_reduction_create(ctx, "gw_i32", NULL, "x[i]", "a + b", "const gw_i32 *x", NULL, &red));
    cr_assert_null(red);
    red = NOT_SET;
    TEST_FAILS(GPUWS_ERR_BUILD,
               gpuws_reduction_create(ctx, "gw_i32", "0", "x[i] +", "a + b", "const gw_i32 *x", NULL, &red));
    cr_assert_null(red);
    TEST_OK(gpuws_reduction_create(ctx, "gw_i64", "0", "x[i]", "a + b", "const gw_i32 *x", NULL, &red));
    gpuws_buffer *dx = test_buffer(ctx, 64), *small;
    TEST_OK(gpuws_buffer_create(ctx, 4, &small)); /* too small for a gw_i64 */
    const unsigned char poison = TEST_POISON_BYTE;
    TEST_OK(gpuws_buffer_fill(small, 0, &poison, 1, 4));
    gpuws_arg args[] = { gpuws_arg_buffer(dx) };
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_reduction_launch(NULL, red, 16, args, 1, small));
    gpuws_buffer *out = test_buffer(ctx, 8);
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_reduction_launch(NULL, red, 16, args, 0, out));
    gpuws_arg wrong[] = { gpuws_arg_u32(1) };
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_reduction_launch(NULL, red, 16, wrong, 1, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_reduction_launch(NULL, NULL, 16, args, 1, out));
    TEST_OK(gpuws_context_synchronize(ctx));
    uint32_t left;
    TEST_OK(gpuws_buffer_read(small, 0, &left, 4));
    cr_assert_eq(left, 0xABABABABu, "the too-small output was written");
    test_expect_untouched(out, 8, "out");
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(small);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}
