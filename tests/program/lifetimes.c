/* Lifetimes and threads: a kernel dies with its program and a launch of it is an error, never a crash; programs left
 * alive at context destroy are destroyed with it; launches from several threads share a context; launches in a loop
 * each run once; contexts with their threads come and go. (Leaks show in the sanitizer build, which CI runs this
 * suite under.) */
#include "../test_program.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static const char *count_source = "GW_KERNEL void count(gw_u64 n, GW_GLOBAL gw_u32 *out)\n"
                                  "{\n"
                                  "    GW_SHARED gw_u32 s[64];\n"
                                  "    const gw_u64 t = gw_thread_idx(0), i = gw_global_idx(0);\n"
                                  "    s[t] = (gw_u32)i;\n"
                                  "    gw_barrier();\n"
                                  "    if (i < n) out[i] = s[gw_block_dim(0) - 1 - t] + 1u;\n"
                                  "}\n";

/* Runs count over n elements (blocks of 64) and checks them. */
static bool count_ok(gpuws_kernel *k, gpuws_buffer *out, gpuws_stream *s, uint32_t n)
{
    gpuws_arg args[] = { gpuws_arg_u64(n), gpuws_arg_buffer(out) };
    gpuws_launch_config cfg = { { (n + 63) / 64, 1, 1 }, { 64, 1, 1 } };
    uint32_t *h = malloc(n * sizeof *h);
    bool ok = h && gpuws_launch(s, k, &cfg, args, 2) == GPUWS_OK && (!s || gpuws_stream_synchronize(s) == GPUWS_OK) &&
              gpuws_buffer_read(out, 0, h, n * sizeof *h) == GPUWS_OK;
    for (uint32_t i = 0; ok && i < n; i++) ok = h[i] == (i / 64) * 64 + (63 - i % 64) + 1u;
    free(h);
    return ok;
}

BACKEND_TEST(program, a_kernel_of_a_destroyed_program_is_an_invalid_argument)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, count_source);
    gpuws_kernel *k = test_kernel(p, "count");
    gpuws_buffer *out = test_buffer(ctx, 256 * 4);
    gpuws_program_destroy(p);
    gpuws_arg args[] = { gpuws_arg_u64(256), gpuws_arg_buffer(out) };
    gpuws_launch_config cfg = CFG(4, 1, 1, 64, 1, 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, &cfg, args, 2));
    gpuws_kernel_info ki;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_kernel_get_info(k, &ki));
    cr_assert_null(gpuws_kernel_signature(k));
    /* the program's handle is dead too */
    gpuws_kernel *k2 = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_get_kernel(p, "count", &k2));
    cr_assert_null(k2);
    cr_assert_null(gpuws_program_log(p));
    cr_assert_null(gpuws_program_source(p));
    gpuws_program_destroy(p); /* twice: a no-op */
    TEST_OK(gpuws_context_synchronize(ctx));
    test_expect_untouched(out, 256 * 4, "out");
    /* a program built again works */
    p = test_build(ctx, count_source);
    cr_assert(count_ok(test_kernel(p, "count"), out, NULL, 256));
    gpuws_program_destroy(p);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

/* Programs (a failed one too), their kernels and the generators' are destroyed with the context. */
BACKEND_TEST(program, programs_left_alive_are_destroyed_with_their_context)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, count_source), *failed = NULL;
    gpuws_buffer *out = test_buffer(ctx, 1000 * 4);
    cr_assert(count_ok(test_kernel(p, "count"), out, NULL, 1000));
    TEST_FAILS(GPUWS_ERR_BUILD, gpuws_program_create(ctx, "GW_KERNEL void k(void) { x; }\n", NULL, &failed));
    cr_assert_not_null(failed);
    gpuws_kernel *ew;
    gpuws_reduction *red;
    TEST_OK(gpuws_elementwise_create(ctx, "gw_u32 *y", "y[i] = 1u", NULL, &ew));
    TEST_OK(gpuws_reduction_create(ctx, "gw_i32", "-2147483647 - 1", "x[i]", "gw_max(a, b)", "const gw_i32 *x", NULL,
                                   &red));
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx); /* p, failed, ew and red still alive */
    cr_assert_null(gpuws_program_log(p), "the context destroyed the program");
    cr_assert_null(gpuws_program_log(failed));
    gpuws_program_destroy(p); /* a no-op now */
    gpuws_arg args[] = { gpuws_arg_u64(0) };
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_elementwise_launch(NULL, ew, 0, args, 0));
}

typedef struct {
    gpuws_context *ctx;
    gpuws_kernel *k;
    int launches;
    bool ok;
} launcher;

static void *launch_many(void *arg)
{
    launcher *l = arg;
    gpuws_stream *s = NULL;
    gpuws_buffer *out = NULL;
    l->ok = gpuws_stream_create(l->ctx, &s) == GPUWS_OK && gpuws_buffer_create(l->ctx, 777 * 4, &out) == GPUWS_OK;
    for (int i = 0; l->ok && i < l->launches; i++) l->ok = count_ok(l->k, out, s, 777 - (uint32_t)i);
    gpuws_buffer_destroy(out);
    gpuws_stream_destroy(s);
    return NULL;
}

BACKEND_TEST(program, launches_from_several_threads_share_one_context)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, count_source);
    gpuws_kernel *k = test_kernel(p, "count");
    enum { THREADS = 3 };
    launcher l[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        l[i] = (launcher){ ctx, k, 20, false };
        cr_assert_eq(pthread_create(&t[i], NULL, launch_many, &l[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) cr_assert_eq(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) cr_assert(l[i].ok, "thread %d: a launch failed or gave a wrong result", i);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

static const char *add_one_source = "GW_KERNEL void add_one(gw_u64 n, GW_GLOBAL gw_u32 *x)\n"
                                    "{\n"
                                    "    const gw_u64 i = gw_global_idx(0);\n"
                                    "    if (i < n) x[i] += 1u;\n"
                                    "}\n";

/* A kernel launched again and again on one stream, with no wait between most launches, runs every block of every
 * launch exactly once: launches of one block and of many alternate (the CPU backend runs a one-block launch on the
 * launching thread alone and wakes its pool for the others), and a pause of a millisecond now and then lets the
 * pool's threads fall asleep between launches. */
BACKEND_TEST(program, every_launch_in_a_loop_runs_each_block_once)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, add_one_source);
    gpuws_kernel *k = test_kernel(p, "add_one");
    enum { N = 4096, LAUNCHES = 600 };
    gpuws_buffer *x = test_buffer(ctx, N * 4);
    const uint32_t zero = 0;
    TEST_OK(gpuws_buffer_fill(x, 0, &zero, sizeof zero, N * 4));
    gpuws_stream *s;
    TEST_OK(gpuws_context_get_default_stream(ctx, &s));
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(x) };
    uint32_t want[N] = { 0 };
    for (int i = 0; i < LAUNCHES; i++) {
        const uint64_t blocks = i % 3 == 0 ? 1 : i % 3 == 1 ? 64 : 7; /* one block covers only its first 64 */
        gpuws_launch_config cfg = { { blocks, 1, 1 }, { 64, 1, 1 } };
        TEST_OK(gpuws_launch(s, k, &cfg, args, 2));
        for (uint64_t e = 0; e < blocks * 64 && e < N; e++) want[e]++;
        if (i % 97 == 0) {
            TEST_OK(gpuws_stream_synchronize(s));
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
        }
    }
    uint32_t *h = malloc(N * sizeof *h);
    cr_assert_not_null(h);
    TEST_OK(gpuws_buffer_read(x, 0, h, N * sizeof *h));
    for (int e = 0; e < N; e++) cr_assert_eq(h[e], want[e], "element %d: %u increments, want %u", e, h[e], want[e]);
    free(h);
    gpuws_buffer_destroy(x);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* Each context has its own threads for user kernels (on the CPU backend): made at the first launch, gone with the
 * context, also when it is destroyed right after a launch. */
BACKEND_TEST(program, contexts_come_and_go_with_their_threads)
{
    for (int round = 0; round < 4; round++) {
        gpuws_context *ctx = test_open(*kind);
        gpuws_program *p = test_build(ctx, count_source);
        gpuws_buffer *out = test_buffer(ctx, 5000 * 4);
        if (round % 2) cr_assert(count_ok(test_kernel(p, "count"), out, NULL, 5000), "round %d", round);
        gpuws_buffer_destroy(out);
        if (round < 2) gpuws_program_destroy(p);
        gpuws_context_destroy(ctx);
    }
}
