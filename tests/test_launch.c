/* Raw kernel launches through the public API, and the checks made before anything is enqueued. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

GPU_BACKEND_TEST(launch, gpu_backends)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    enum { N = 1000 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.5f;
    }
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *db = test_buffer_from(ctx, b, sizeof b),
                 *dc = test_buffer(ctx, sizeof c);
    gpuws_kernel *k;
    TEST_OK(gpuws_kernel_get(ctx, "vector_add_f32", &k));
    gpuws_kernel_info ki;
    TEST_OK(gpuws_kernel_get_info(k, &ki));
    cr_assert_str_eq(ki.name, "vector_add_f32");
    cr_assert_eq(ki.num_params, 4);
    cr_assert(ki.max_block_size >= 1 && ki.max_block_size <= d.max_block_size);
    gpuws_arg args[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N) };
    gpuws_launch_config cfg = { { 4, 1, 1 }, { 64, 1, 1 } };

    /* a good launch: 256 threads in a grid-stride loop cover all 1000 elements */
    TEST_OK(gpuws_launch(NULL, k, &cfg, args, 4));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], (float)i + 0.5f, "element %d", i);

    /* a block whose every dimension is allowed but whose thread count is too large */
    gpuws_launch_config big = { { 1, 1, 1 }, { d.max_block_dims[0], 2, 1 } };
    cr_assert_gt((uint64_t)d.max_block_dims[0] * 2, d.max_block_size);
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &big, args, 4));
    cr_assert(strstr(gpuws_last_error(), "exceeds the limit"), "message: %s", gpuws_last_error());
    /* one block dimension too large */
    gpuws_launch_config tall = { { 1, 1, 1 }, { 1, 1, d.max_block_dims[2] + 1 } };
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &tall, args, 4));
    /* zero-sized grid */
    gpuws_launch_config empty = { { 0, 1, 1 }, { 64, 1, 1 } };
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &empty, args, 4));
    /* wrong number and kinds of arguments */
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, args, 3));
    gpuws_arg wrong[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u32(N) };
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, wrong, 4));
    cr_assert(strstr(gpuws_last_error(), "argument 3"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, NULL, args, 4));
    /* a destroyed buffer as an argument */
    gpuws_buffer *dead = test_buffer(ctx, 16);
    gpuws_buffer_destroy(dead);
    gpuws_arg stale[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(dead), gpuws_arg_buffer(dc), gpuws_arg_u64(N) };
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, &cfg, stale, 4));

    /* more shared/local memory than the device has */
    gpuws_kernel *rk;
    TEST_OK(gpuws_kernel_get(ctx, "reduce_max_f32_final", &rk));
    gpuws_arg rargs[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(dc), gpuws_arg_u32(N),
                          gpuws_arg_local(d.shared_mem_bytes + 1) };
    gpuws_launch_config one = { { 1, 1, 1 }, { 64, 1, 1 } };
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, rk, &one, rargs, 4));
    cr_assert(strstr(gpuws_last_error(), "shared/local memory"), "message: %s", gpuws_last_error());
    rargs[3] = gpuws_arg_local(0);
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, rk, &one, rargs, 4));
    /* and a valid local-memory launch: max of 0..999 */
    rargs[3] = gpuws_arg_local(64 * sizeof(float));
    TEST_OK(gpuws_launch(NULL, rk, &one, rargs, 4));
    float m;
    TEST_OK(gpuws_buffer_read(dc, 0, &m, sizeof m));
    cr_assert_eq(m, 999.0f);

    /* names */
    TEST_FAILS(GPUWS_ERR_KERNEL_NOT_FOUND, gpuws_kernel_get(ctx, "no_such_kernel", &k));
    TEST_FAILS(GPUWS_ERR_KERNEL_NOT_FOUND, gpuws_kernel_get(ctx, "vector_add_f16", &k));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_kernel_get(ctx, "", &k));
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
}

/* A kernel launched again and again with some arguments changed, some not: every launch computes with its own
 * (the OpenCL backend sets only the arguments that differ from the kernel's last launch), also when a buffer was
 * destroyed and a new one, which may get the old one's native handle, takes its place. */
GPU_BACKEND_TEST(launch, each_launch_uses_its_own_arguments)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 1000 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 0.5f;
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *db = test_buffer_from(ctx, b, sizeof b);
    gpuws_buffer *dc = test_buffer(ctx, sizeof c), *dd = test_buffer(ctx, sizeof c);
    gpuws_kernel *k;
    TEST_OK(gpuws_kernel_get(ctx, "vector_add_f32", &k));
    const gpuws_launch_config cfg = { { 4, 1, 1 }, { 64, 1, 1 } };
    /* c = a + b; c = a + b again; d = a + a; the first 500 of c = b + b; then b replaced by a new buffer of 3s */
    gpuws_arg l1[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N) };
    TEST_OK(gpuws_launch(NULL, k, &cfg, l1, 4));
    TEST_OK(gpuws_launch(NULL, k, &cfg, l1, 4));
    gpuws_arg l2[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(da), gpuws_arg_buffer(dd), gpuws_arg_u64(N) };
    TEST_OK(gpuws_launch(NULL, k, &cfg, l2, 4));
    TEST_OK(gpuws_buffer_read(dd, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], 2.0f * (float)i, "a + a: element %d", i);
    gpuws_arg l3[] = { gpuws_arg_buffer(db), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N / 2) };
    TEST_OK(gpuws_launch(NULL, k, &cfg, l3, 4));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < N; i++)
        cr_assert_eq(c[i], i < N / 2 ? 1.0f : (float)i + 0.5f, "b + b, then a + b: element %d", i);
    for (int round = 0; round < 8; round++) {
        gpuws_buffer_destroy(db);
        for (int i = 0; i < N; i++) b[i] = (float)(3 + round);
        db = test_buffer_from(ctx, b, sizeof b);
        gpuws_arg l4[] = { gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N) };
        TEST_OK(gpuws_launch(NULL, k, &cfg, l4, 4));
        TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
        for (int i = 0; i < N; i++) cr_assert_eq(c[i], (float)(i + 3 + round), "round %d: element %d", round, i);
    }
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_buffer_destroy(dd);
    gpuws_context_destroy(ctx);
}

Test(launch, cpu_backend_has_no_kernels)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    gpuws_kernel *k = (gpuws_kernel *)1;
    TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_kernel_get(ctx, "vector_add_f32", &k));
    cr_assert_null(k);
    gpuws_context_destroy(ctx);
}

/* The blocks of a grid in all are limited (max_grid_blocks), not only each dimension: a device runs them in turn,
 * and PoCL took a grid of (2^32 - 1)^3 blocks and never finished it. A refused grid enqueues nothing. */
GPU_BACKEND_TEST(launch, grids_past_the_blocks_a_launch_may_have_are_refused)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    uint64_t dims = 1;
    for (int i = 0; i < 3; i++)
        if (__builtin_mul_overflow(dims, d.max_grid_dims[i], &dims)) dims = UINT64_MAX;
    cr_assert(d.max_grid_blocks >= UINT32_MAX / 2 && d.max_grid_blocks <= dims, "max_grid_blocks %llu, dimensions %llu",
              (unsigned long long)d.max_grid_blocks, (unsigned long long)dims);
    enum { N = 256 };
    gpuws_buffer *a = test_buffer(ctx, N * 4), *c = test_buffer(ctx, N * 4);
    gpuws_kernel *k;
    TEST_OK(gpuws_kernel_get(ctx, "vector_add_f32", &k));
    gpuws_arg args[] = { gpuws_arg_buffer(a), gpuws_arg_buffer(a), gpuws_arg_buffer(c), gpuws_arg_u64(N) };

    gpuws_launch_config huge = { { UINT32_MAX, UINT32_MAX, UINT32_MAX }, { 1, 1, 1 } };
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &huge, args, 4));
    cr_assert(strstr(gpuws_last_error(), "grid (4294967295,4294967295,4294967295)"), "message: %s", gpuws_last_error());
    if (d.max_grid_blocks < dims) {
        /* one block more than a launch may have, every dimension within its own limit */
        const uint64_t want = d.max_grid_blocks + 1;
        uint32_t g0 = (uint32_t)(d.max_grid_dims[0] < UINT32_MAX ? d.max_grid_dims[0] : UINT32_MAX);
        uint64_t g1 = (want + g0 - 1) / g0;
        cr_assert_leq(g1, d.max_grid_dims[1]);
        gpuws_launch_config over = { { g0, (uint32_t)g1, 1 }, { 64, 1, 1 } };
        TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &over, args, 4));
        char want_msg[400];
        const unsigned long long blocks = (unsigned long long)g0 * g1;
        snprintf(want_msg, sizeof want_msg, "is %llu blocks, %llu threads in all, but %s runs at most %llu blocks %s",
                 blocks, blocks * 64, d.name, (unsigned long long)d.max_grid_blocks, "per launch");
        cr_assert(strstr(gpuws_last_error(), want_msg), "message: %s", gpuws_last_error());
    }
    /* nothing ran (c is still poison), and the stream works */
    unsigned char *bytes = test_download(c, N * 4);
    for (int i = 0; i < N * 4; i++) cr_assert_eq(bytes[i], TEST_POISON_BYTE, "byte %d of c was written", i);
    free(bytes);
    float h[N], back[N];
    for (int i = 0; i < N; i++) h[i] = (float)i;
    TEST_OK(gpuws_buffer_write(a, 0, h, sizeof h));
    gpuws_launch_config one = { { 4, 1, 1 }, { 64, 1, 1 } };
    TEST_OK(gpuws_launch(NULL, k, &one, args, 4));
    TEST_OK(gpuws_buffer_read(c, 0, back, sizeof back));
    for (int i = 0; i < N; i++) cr_assert_eq(back[i], 2.0f * (float)i, "element %d", i);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(c);
    gpuws_context_destroy(ctx);
}
