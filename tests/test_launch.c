/* Raw kernel launches through the public API, and the checks made before anything is enqueued. */
#include "support.h"

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
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *db = test_buffer_from(ctx, b, sizeof b), *dc = test_buffer(ctx, sizeof c);
    gpuws_kernel *k;
    TEST_OK(gpuws_kernel_get(ctx, "vector_add_f32", &k));
    gpuws_kernel_info ki;
    TEST_OK(gpuws_kernel_get_info(k, &ki));
    cr_assert_str_eq(ki.name, "vector_add_f32");
    cr_assert_eq(ki.num_params, 4);
    cr_assert(ki.max_block_size >= 1 && ki.max_block_size <= d.max_block_size);
    gpuws_arg args[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N)};
    gpuws_launch_config cfg = {{4, 1, 1}, {64, 1, 1}};

    /* a good launch: 256 threads in a grid-stride loop cover all 1000 elements */
    TEST_OK(gpuws_launch(NULL, k, &cfg, args, 4));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], (float)i + 0.5f, "element %d", i);

    /* a block whose every dimension is allowed but whose thread count is too large */
    gpuws_launch_config big = {{1, 1, 1}, {d.max_block_dims[0], 2, 1}};
    cr_assert_gt((uint64_t)d.max_block_dims[0] * 2, d.max_block_size);
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &big, args, 4));
    cr_assert(strstr(gpuws_last_error(), "exceeds the limit"), "message: %s", gpuws_last_error());
    /* one block dimension too large */
    gpuws_launch_config tall = {{1, 1, 1}, {1, 1, d.max_block_dims[2] + 1}};
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &tall, args, 4));
    /* zero-sized grid */
    gpuws_launch_config empty = {{0, 1, 1}, {64, 1, 1}};
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &empty, args, 4));
    /* wrong number and kinds of arguments */
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, args, 3));
    gpuws_arg wrong[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u32(N)};
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, wrong, 4));
    cr_assert(strstr(gpuws_last_error(), "argument 3"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, NULL, args, 4));
    /* a destroyed buffer as an argument */
    gpuws_buffer *dead = test_buffer(ctx, 16);
    gpuws_buffer_destroy(dead);
    gpuws_arg stale[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(dead), gpuws_arg_buffer(dc), gpuws_arg_u64(N)};
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, &cfg, stale, 4));

    /* more shared/local memory than the device has */
    gpuws_kernel *rk;
    TEST_OK(gpuws_kernel_get(ctx, "reduce_max_f32_final", &rk));
    gpuws_arg rargs[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(dc), gpuws_arg_u32(N), gpuws_arg_local(d.shared_mem_bytes + 1)};
    gpuws_launch_config one = {{1, 1, 1}, {64, 1, 1}};
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
    const gpuws_launch_config cfg = {{4, 1, 1}, {64, 1, 1}};
    /* c = a + b; c = a + b again; d = a + a; the first 500 of c = b + b; then b replaced by a new buffer of 3s */
    gpuws_arg l1[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N)};
    TEST_OK(gpuws_launch(NULL, k, &cfg, l1, 4));
    TEST_OK(gpuws_launch(NULL, k, &cfg, l1, 4));
    gpuws_arg l2[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(da), gpuws_arg_buffer(dd), gpuws_arg_u64(N)};
    TEST_OK(gpuws_launch(NULL, k, &cfg, l2, 4));
    TEST_OK(gpuws_buffer_read(dd, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], 2.0f * (float)i, "a + a: element %d", i);
    gpuws_arg l3[] = {gpuws_arg_buffer(db), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N / 2)};
    TEST_OK(gpuws_launch(NULL, k, &cfg, l3, 4));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], i < N / 2 ? 1.0f : (float)i + 0.5f, "b + b, then a + b: element %d", i);
    for (int round = 0; round < 8; round++) {
        gpuws_buffer_destroy(db);
        for (int i = 0; i < N; i++) b[i] = (float)(3 + round);
        db = test_buffer_from(ctx, b, sizeof b);
        gpuws_arg l4[] = {gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc), gpuws_arg_u64(N)};
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
