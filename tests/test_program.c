/* Your own kernels (include/gpuws/program.h) on every backend: a program built from the kernel dialect runs through
 * the launch API with barriers, shared memory, 2-D and 3-D grids, every scalar kind, dynamic shared memory, atomics
 * and math under OpenCL's names; options add defines and in-memory headers; GW_DEVICE helpers may synchronise.
 * The rest of the suite: tests/program/ (errors, generators, the cache, lifetimes and threads). Every test has a
 * cache directory of its own (the suite's .init), so none sees another's builds. */
#include "test_program.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The OpenCL backend's program-cache events (core, for tests). */
void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds);

TestSuite(program, .init = test_cache_dir_fresh, .fini = test_cache_dir_remove, .timeout = 180);

char test_program_sentinel;

gpuws_program *test_build_opts(gpuws_context *ctx, const char *source, const gpuws_program_options *options)
{
    gpuws_program *p = NOT_SET;
    gpuws_status st = gpuws_program_create(ctx, source, options, &p);
    cr_assert_eq(st, GPUWS_OK, "gpuws_program_create -> %s: %s\ncompiler output:\n%s", gpuws_status_name(st),
                 gpuws_last_error(), p && p != NOT_SET ? gpuws_program_log(p) : "(no program)");
    cr_assert(p && p != NOT_SET);
    return p;
}

gpuws_program *test_build(gpuws_context *ctx, const char *source) { return test_build_opts(ctx, source, NULL); }

gpuws_kernel *test_kernel(gpuws_program *p, const char *name)
{
    gpuws_kernel *k = NOT_SET;
    TEST_OK(gpuws_program_get_kernel(p, name, &k));
    cr_assert(k && k != NOT_SET);
    return k;
}

void test_launch(gpuws_kernel *k, gpuws_launch_config cfg, const gpuws_arg *args, size_t nargs)
{
    TEST_OK(gpuws_launch(NULL, k, &cfg, args, nargs));
}

void test_build_fails(gpuws_context *ctx, const char *source, const gpuws_program_options *options, const char *want_at,
                      const char *want_text, bool user_text_in_source)
{
    gpuws_program *p = NOT_SET;
    gpuws_status st = gpuws_program_create(ctx, source, options, &p);
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", gpuws_last_error());
    cr_assert_eq(st, GPUWS_ERR_BUILD, "wanted GPUWS_ERR_BUILD, got %s: %s", gpuws_status_name(st), msg);
    cr_assert(strncmp(msg, want_at, strlen(want_at)) == 0, "the message starts with '%s': %s", want_at, msg);
    if (want_text) cr_assert(strstr(msg, want_text), "the message holds '%s': %s", want_text, msg);
    /* the failed program: log, source and destroy, nothing else */
    cr_assert(p && p != NOT_SET, "a compile error gives a failed program");
    const char *log = gpuws_program_log(p), *src = gpuws_program_source(p);
    cr_assert(log && *log, "a failed program has the compiler's output (or the message) as its log");
    cr_assert_not_null(src);
    if (user_text_in_source)
        cr_assert(strstr(src, source), "the failed program's source holds the user's text:\n%s", src);
    gpuws_kernel *k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_get_kernel(p, "k", &k));
    cr_assert_null(k);
    cr_assert(strstr(gpuws_last_error(), "failed to build"), "%s", gpuws_last_error());
    gpuws_program_destroy(p);
}

void test_expect_untouched(gpuws_buffer *b, size_t bytes, const char *name)
{
    unsigned char *h = test_download(b, bytes + TEST_GUARD_BYTES);
    for (size_t i = 0; i < bytes + TEST_GUARD_BYTES; i++)
        cr_assert_eq(h[i], TEST_POISON_BYTE, "buffer '%s': byte %zu was written (0x%02x)", name, i, h[i]);
    free(h);
}

gpuws_device_info test_device(gpuws_context *ctx)
{
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    return d;
}

const char *const test_probe_source = "#warning gpuws-cache-probe\n"
                                      "GW_KERNEL void probe(gw_u64 n, gw_u32 v, GW_GLOBAL gw_u32 *out)\n"
                                      "{\n"
                                      "    const gw_u64 i = gw_global_idx(0);\n"
                                      "    if (i < n) out[i] = v + (gw_u32)i * 3u;\n"
                                      "}\n";

bool test_probe(gpuws_context *ctx, unsigned flags)
{
    static uint32_t calls;
    enum { N = 1000 };
    const uint32_t v = 1000003u * ++calls;
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.flags = flags;
    unsigned long hits, misses, rejected, builds0, builds1;
    gpuws__opencl_cache_stats(&hits, &misses, &rejected, &builds0);
    gpuws_program *p = test_build_opts(ctx, test_probe_source, &o);
    gpuws__opencl_cache_stats(&hits, &misses, &rejected, &builds1);
    const char *log = gpuws_program_log(p);
    cr_assert_not_null(log);
    /* NVIDIA's OpenCL serves a text it compiled before from its own cache, with no warnings in the log: the
     * backend's count of builds from source tells instead */
    const bool compiled = strstr(log, "gpuws-cache-probe") != NULL || builds1 > builds0;
    cr_assert(compiled || !*log, "a build either compiled (the log has the #warning) or was loaded (empty log):\n%s",
              log);
    gpuws_buffer *out = test_buffer(ctx, N * 4);
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_u32(v), gpuws_arg_buffer(out) };
    test_launch(test_kernel(p, "probe"), CFG(8, 1, 1, 128, 1, 1), args, 3);
    uint32_t *h = test_download(out, N * 4);
    for (uint32_t i = 0; i < N; i++) cr_assert_eq(h[i], v + i * 3u, "probe element %u", i);
    test_check_guard(out, N * 4, "out");
    free(h);
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    return compiled;
}

/* ---- a kernel through the launch API ----------------------------------------------------------------------- */

static const char *axpy_source =
    "GW_KERNEL void axpy(gw_u64 n, gw_f32 a, GW_GLOBAL const gw_f32 *x, GW_GLOBAL gw_f32 *y)\n"
    "{\n"
    "    gw_u64 i = gw_global_idx(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

BACKEND_TEST(program, a_built_kernel_runs_through_gpuws_launch)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 1003 };
    float x[N], y[N], got[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f - (float)i;
    gpuws_program *p = test_build(ctx, axpy_source);
    gpuws_kernel *k = test_kernel(p, "axpy");
    cr_assert_eq(test_kernel(p, "axpy"), k, "the same name gives the same kernel");
    gpuws_kernel_info ki;
    TEST_OK(gpuws_kernel_get_info(k, &ki));
    cr_assert_str_eq(ki.name, "axpy");
    cr_assert_eq(ki.num_params, 4);
    cr_assert(ki.max_block_size >= 1 && ki.max_block_size <= test_device(ctx).max_block_size);
    cr_assert_str_eq(gpuws_kernel_signature(k), "Lfbb", "the parameters' launch kinds, in order");
    gpuws_buffer *dx = test_buffer_from(ctx, x, sizeof x), *dy = test_buffer_from(ctx, y, sizeof y);
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_f32(2.0f), gpuws_arg_buffer(dx), gpuws_arg_buffer(dy) };
    test_launch(k, CFG((N + 63) / 64, 1, 1, 64, 1, 1), args, 4);
    TEST_OK(gpuws_buffer_read(dy, 0, got, sizeof got));
    for (int i = 0; i < N; i++) cr_assert_eq(got[i], 2.0f * x[i] + y[i], "element %d", i);
    test_check_guard(dy, sizeof y, "y");
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* ---- barriers and shared memory ---------------------------------------------------------------------------- */

/* block_sums synchronises (on the CPU backend: one fiber per work-item, switched at gw_barrier); own_slot does not
 * (on the CPU backend: a plain loop over the block's work-items). Both use GW_SHARED arrays. */
static const char *shared_source =
    "#define B 128\n"
    "GW_KERNEL void block_sums(gw_u64 n, GW_GLOBAL const gw_i32 *x, GW_GLOBAL gw_i32 *sums, GW_GLOBAL gw_u32 "
    "*foreign)\n"
    "{\n"
    "    GW_SHARED gw_i32 s[B];\n"
    "    GW_SHARED gw_u32 owner[B];\n"
    "    const gw_u64 t = gw_thread_idx(0), i = gw_global_idx(0);\n"
    "    owner[t] = (gw_u32)gw_block_idx(0);\n"
    "    s[t] = i < n ? x[i] : 0;\n"
    "    gw_barrier();\n"
    "    /* every slot of the block's array was written by this block: blocks do not share it */\n"
    "    if (owner[(t + 1) % B] != gw_block_idx(0)) gw_atomic_add_u32(foreign, 1);\n"
    "    for (gw_u64 step = B / 2; step > 0; step /= 2) {\n"
    "        if (t < step) s[t] += s[t + step];\n"
    "        gw_barrier();\n"
    "    }\n"
    "    if (t == 0) sums[gw_block_idx(0)] = s[0];\n"
    "}\n"
    "GW_KERNEL void own_slot(GW_GLOBAL gw_u32 *out)\n"
    "{\n"
    "    GW_SHARED gw_u32 slot[B];\n"
    "    const gw_u64 t = gw_thread_idx(0);\n"
    "    slot[t] = (gw_u32)(gw_global_idx(0) * 3 + 1);\n"
    "    out[gw_global_idx(0)] = slot[t];\n"
    "}\n";

BACKEND_TEST(program, barriers_and_shared_memory_work_in_many_more_blocks_than_cores)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 128, BLOCKS = 1000, N = B * BLOCKS - 77 };
    int32_t *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (i * 37) % 101 - 50;
    gpuws_program *p = test_build(ctx, shared_source);
    gpuws_buffer *dx = test_buffer_from(ctx, x, N * sizeof *x), *sums = test_buffer(ctx, BLOCKS * 4),
                 *foreign = test_buffer(ctx, 4), *slots = test_buffer(ctx, B * BLOCKS * 4);
    const uint32_t zero = 0;
    TEST_OK(gpuws_buffer_write(foreign, 0, &zero, 4));
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(dx), gpuws_arg_buffer(sums), gpuws_arg_buffer(foreign) };
    test_launch(test_kernel(p, "block_sums"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 4);
    int32_t *got = test_download(sums, BLOCKS * 4);
    for (int b = 0; b < BLOCKS; b++) {
        int32_t want = 0;
        for (int i = b * B; i < (b + 1) * B && i < N; i++) want += x[i];
        cr_assert_eq(got[b], want, "block %d", b);
    }
    test_check_guard(sums, BLOCKS * 4, "sums");
    uint32_t nforeign;
    TEST_OK(gpuws_buffer_read(foreign, 0, &nforeign, 4));
    cr_assert_eq(nforeign, 0, "%u work-items saw another block's GW_SHARED values", nforeign);

    gpuws_arg sargs[] = { gpuws_arg_buffer(slots) };
    test_launch(test_kernel(p, "own_slot"), CFG(BLOCKS, 1, 1, B, 1, 1), sargs, 1);
    uint32_t *s = test_download(slots, B * BLOCKS * 4);
    for (uint32_t i = 0; i < B * BLOCKS; i++) cr_assert_eq(s[i], i * 3 + 1, "own_slot element %u", i);
    test_check_guard(slots, B * BLOCKS * 4, "slots");
    free(s);
    free(got);
    free(x);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(sums);
    gpuws_buffer_destroy(foreign);
    gpuws_buffer_destroy(slots);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* A barrier the kernel's body names only through a macro, of the options' defines or a function-like one of the
 * source, is still a barrier. */
BACKEND_TEST(program, a_barrier_named_through_a_macro_synchronises)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 64, BLOCKS = 16 };
    const char *body = "GW_KERNEL void reverse(GW_GLOBAL const gw_i32 *x, GW_GLOBAL gw_i32 *y)\n"
                       "{\n"
                       "    GW_SHARED gw_i32 s[64];\n"
                       "    const gw_u64 t = gw_thread_idx(0);\n"
                       "    s[t] = x[gw_global_idx(0)];\n"
                       "    SYNC;\n"
                       "    y[gw_global_idx(0)] = s[gw_block_dim(0) - 1 - t];\n"
                       "}\n";
    char function_like[1024];
    snprintf(function_like, sizeof function_like, "#define SYNC_NOW() gw_barrier()\n#define SYNC SYNC_NOW()\n%s", body);
    const char *defines[] = { "SYNC=gw_barrier()" };
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.defines = defines;
    o.num_defines = 1;
    int32_t x[B * BLOCKS];
    for (int i = 0; i < B * BLOCKS; i++) x[i] = i * 5 - 7;
    gpuws_buffer *dx = test_buffer_from(ctx, x, sizeof x), *dy = test_buffer(ctx, sizeof x);
    for (int way = 0; way < 2; way++) {
        gpuws_program *p = way ? test_build(ctx, function_like) : test_build_opts(ctx, body, &o);
        const unsigned char poison = TEST_POISON_BYTE;
        TEST_OK(gpuws_buffer_fill(dy, 0, &poison, 1, sizeof x));
        gpuws_arg args[] = { gpuws_arg_buffer(dx), gpuws_arg_buffer(dy) };
        test_launch(test_kernel(p, "reverse"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 2);
        int32_t *y = test_download(dy, sizeof x);
        for (int i = 0; i < B * BLOCKS; i++)
            cr_assert_eq(y[i], x[(i / B) * B + (B - 1 - i % B)], "%s: element %d",
                         way ? "function-like macro" : "define", i);
        free(y);
        gpuws_program_destroy(p);
    }
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dy);
    gpuws_context_destroy(ctx);
}

/* ---- indices ---------------------------------------------------------------------------------------------- */

#define WHERE_VALUES 19
static const char *where_source =
    "GW_KERNEL void where(GW_GLOBAL gw_u32 *out)\n"
    "{\n"
    "    const gw_u64 g = (gw_global_idx(2) * gw_global_size(1) + gw_global_idx(1)) * gw_global_size(0) + "
    "gw_global_idx(0);\n"
    "    GW_GLOBAL gw_u32 *o = out + g * 19;\n"
    "    for (int d = 0; d < 3; d++) {\n"
    "        o[d] = (gw_u32)gw_thread_idx(d);\n"
    "        o[3 + d] = (gw_u32)gw_block_idx(d);\n"
    "        o[6 + d] = (gw_u32)gw_block_dim(d);\n"
    "        o[9 + d] = (gw_u32)gw_grid_dim(d);\n"
    "        o[12 + d] = (gw_u32)gw_global_idx(d);\n"
    "        o[15 + d] = (gw_u32)gw_global_size(d);\n"
    "    }\n"
    "    o[18] = (gw_u32)(sizeof(gw_thread_idx(0)) + sizeof(gw_block_idx(0)) + sizeof(gw_block_dim(0)) +\n"
    "                     sizeof(gw_grid_dim(0)) + sizeof(gw_global_idx(0)) + sizeof(gw_global_size(0)));\n"
    "}\n";

static void check_where(gpuws_context *ctx, gpuws_kernel *k, gpuws_launch_config c)
{
    const uint32_t gs[3] = { c.grid[0] * c.block[0], c.grid[1] * c.block[1], c.grid[2] * c.block[2] };
    const size_t items = (size_t)gs[0] * gs[1] * gs[2], bytes = items * WHERE_VALUES * 4;
    gpuws_buffer *out = test_buffer(ctx, bytes);
    gpuws_arg args[] = { gpuws_arg_buffer(out) };
    test_launch(k, c, args, 1);
    uint32_t *h = test_download(out, bytes);
    for (uint32_t gz = 0; gz < gs[2]; gz++)
        for (uint32_t gy = 0; gy < gs[1]; gy++)
            for (uint32_t gx = 0; gx < gs[0]; gx++) {
                const uint32_t g[3] = { gx, gy, gz };
                const uint32_t *o = h + (((size_t)gz * gs[1] + gy) * gs[0] + gx) * WHERE_VALUES;
                for (int d = 0; d < 3; d++) {
                    const uint32_t want[6] = {
                        g[d] % c.block[d], g[d] / c.block[d], c.block[d], c.grid[d], g[d], gs[d]
                    };
                    for (int f = 0; f < 6; f++)
                        cr_assert_eq(o[3 * f + d], want[f],
                                     "work-item (%u,%u,%u), function %d, dimension %d: %u, want %u", gx, gy, gz, f, d,
                                     o[3 * f + d], want[f]);
                }
                cr_assert_eq(o[18], 6 * 8, "every index function gives a 64-bit value");
            }
    test_check_guard(out, bytes, "out");
    free(h);
    gpuws_buffer_destroy(out);
}

BACKEND_TEST(program, every_index_function_in_two_and_three_dimensional_grids)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, where_source);
    gpuws_kernel *k = test_kernel(p, "where");
    check_where(ctx, k, CFG(5, 3, 1, 8, 4, 1));
    check_where(ctx, k, CFG(3, 2, 2, 4, 3, 2));
    check_where(ctx, k, CFG(1, 1, 3, 2, 2, 4));
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* ---- scalar arguments ------------------------------------------------------------------------------------- */

/* Every scalar kind gpuws_arg has, spelled with the dialect's types, C's names, a #define of the source and a
 * define of the options. */
static const char *scalars_source =
    "#define REAL gw_f32\n"
    "GW_KERNEL void scalars(gw_i32 a, gw_u32 b, gw_i64 c, gw_u64 d, gw_f32 e, int f, unsigned g, unsigned int h,\n"
    "                       float i, REAL j, INDEX k, GW_GLOBAL gw_i64 *ints, GW_GLOBAL gw_f32 *floats)\n"
    "{\n"
    "    if (gw_global_idx(0) != 0) return;\n"
    "    ints[0] = a; ints[1] = (gw_i64)b; ints[2] = c; ints[3] = (gw_i64)d; ints[4] = f; ints[5] = (gw_i64)g;\n"
    "    ints[6] = (gw_i64)h; ints[7] = (gw_i64)k;\n"
    "    floats[0] = e; floats[1] = i; floats[2] = j;\n"
    "}\n";
static const char *doubles_source = "GW_KERNEL void doubles(gw_f64 a, double b, GW_GLOBAL gw_f64 *out)\n"
                                    "{\n"
                                    "    if (gw_global_idx(0) == 0) out[0] = a, out[1] = b;\n"
                                    "}\n";

BACKEND_TEST(program, every_scalar_argument_kind_arrives_bit_for_bit)
{
    gpuws_context *ctx = test_open(*kind);
    const char *defines[] = { "INDEX=gw_u64" };
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.defines = defines;
    o.num_defines = 1;
    gpuws_program *p = test_build_opts(ctx, scalars_source, &o);
    gpuws_buffer *ints = test_buffer(ctx, 8 * 8), *floats = test_buffer(ctx, 3 * 4);
    const int64_t want_i[8] = { INT32_MIN + 7, 0xFEDCBA98, INT64_MIN + 9,   (int64_t)0xFEDCBA9876543210ULL, -42,
                                4000000000LL,  7,          (int64_t)1 << 40 };
    const float want_f[3] = { -3.25e7f, 1.0f / 3.0f, -0.0f };
    gpuws_arg args[] = { gpuws_arg_i32(INT32_MIN + 7),     gpuws_arg_u32(0xFEDCBA98u),
                         gpuws_arg_i64(INT64_MIN + 9),     gpuws_arg_u64(0xFEDCBA9876543210ULL),
                         gpuws_arg_f32(want_f[0]),         gpuws_arg_i32(-42),
                         gpuws_arg_u32(4000000000u),       gpuws_arg_u32(7),
                         gpuws_arg_f32(want_f[1]),         gpuws_arg_f32(want_f[2]),
                         gpuws_arg_u64((uint64_t)1 << 40), gpuws_arg_buffer(ints),
                         gpuws_arg_buffer(floats) };
    test_launch(test_kernel(p, "scalars"), CFG(2, 1, 1, 32, 1, 1), args, 13);
    int64_t gi[8];
    float gf[3];
    TEST_OK(gpuws_buffer_read(ints, 0, gi, sizeof gi));
    TEST_OK(gpuws_buffer_read(floats, 0, gf, sizeof gf));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(gi[i], want_i[i], "integer %d: %lld, want %lld", i, (long long)gi[i], (long long)want_i[i]);
    cr_assert_eq(memcmp(gf, want_f, sizeof gf), 0, "floats %g %g %g", (double)gf[0], (double)gf[1], (double)gf[2]);
    gpuws_program_destroy(p);
    gpuws_buffer_destroy(ints);
    gpuws_buffer_destroy(floats);
    if (!test_device(ctx).fp64) {
        cr_log_info("%s has no double precision: gw_f64 parameters not run", test_device(ctx).name);
    } else {
        p = test_build(ctx, doubles_source);
        gpuws_buffer *out = test_buffer(ctx, 16);
        const double want_d[2] = { 1.0 / 3.0, -0x1.fffffffffffffp+1023 };
        gpuws_arg dargs[] = { gpuws_arg_f64(want_d[0]), gpuws_arg_f64(want_d[1]), gpuws_arg_buffer(out) };
        test_launch(test_kernel(p, "doubles"), CFG(1, 1, 1, 1, 1, 1), dargs, 3);
        double gd[2];
        TEST_OK(gpuws_buffer_read(out, 0, gd, sizeof gd));
        cr_assert_eq(memcmp(gd, want_d, sizeof gd), 0, "doubles %a %a", gd[0], gd[1]);
        gpuws_buffer_destroy(out);
        gpuws_program_destroy(p);
    }
    gpuws_context_destroy(ctx);
}

/* ---- dynamic shared memory ---------------------------------------------------------------------------------- */

BACKEND_TEST(program, two_regions_of_dynamic_shared_memory_do_not_overlap)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 64, BLOCKS = 6 };
    const char *src = "GW_KERNEL void regions(GW_GLOBAL gw_i32 *out, GW_LOCAL gw_i32 *a, GW_LOCAL gw_f32 *b)\n"
                      "{\n"
                      "    const gw_u64 t = gw_thread_idx(0), n = gw_block_dim(0);\n"
                      "    a[t] = (gw_i32)(gw_block_idx(0) * 1000 + t);\n"
                      "    b[t] = -0.5f * (gw_f32)t;\n"
                      "    if (t == 0) b[n] = 99.0f; /* b has one more element than the block */\n"
                      "    gw_barrier();\n"
                      "    out[gw_global_idx(0)] = a[n - 1 - t] + (gw_i32)(b[n - 1 - t] * 4.0f) + (gw_i32)b[n];\n"
                      "}\n";
    gpuws_program *p = test_build(ctx, src);
    gpuws_buffer *out = test_buffer(ctx, B * BLOCKS * 4);
    gpuws_arg args[] = { gpuws_arg_buffer(out), gpuws_arg_local(B * 4), gpuws_arg_local((B + 1) * 4) };
    test_launch(test_kernel(p, "regions"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 3);
    int32_t *h = test_download(out, B * BLOCKS * 4);
    for (int i = 0; i < B * BLOCKS; i++) {
        const int blk = i / B, r = B - 1 - i % B;
        cr_assert_eq(h[i], blk * 1000 + r - 2 * r + 99, "element %d", i);
    }
    test_check_guard(out, B * BLOCKS * 4, "out");
    free(h);
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* ---- math ------------------------------------------------------------------------------------------------- */

#define MATH_FUNCTIONS 14
/* The body of both kernels: o[] gets each function of a and b, and o[14] the sizes of their results. */
#define MATH_BODY                                                                                                      \
    "    const gw_u64 i = gw_global_idx(0);\n"                                                                         \
    "    if (i >= n) return;\n"                                                                                        \
    "    const T a = x[i], b = y[i];\n"                                                                                \
    "    GW_GLOBAL T *o = out + i * 15;\n"                                                                             \
    "    o[0] = sqrt(a); o[1] = exp(b); o[2] = log(a); o[3] = sin(b); o[4] = cos(b); o[5] = tanh(b);\n"                \
    "    o[6] = pow(a, b); o[7] = hypot(a, b); o[8] = fabs(b); o[9] = fmin(a, b); o[10] = fmax(a, b);\n"               \
    "    o[11] = floor(b); o[12] = ceil(b); o[13] = fma(a, b, (T)0.5);\n"                                              \
    "    o[14] = (T)(sizeof(sqrt(a)) + sizeof(exp(b)) + sizeof(log(a)) + sizeof(sin(b)) + sizeof(cos(b)) +\n"          \
    "                sizeof(tanh(b)) + sizeof(pow(a, b)) + sizeof(hypot(a, b)) + sizeof(fabs(b)) +\n"                  \
    "                sizeof(fmin(a, b)) + sizeof(fmax(a, b)) + sizeof(floor(b)) + sizeof(ceil(b)) +\n"                 \
    "                sizeof(fma(a, b, a)));\n"
static const char *math32_source =
    "#define T gw_f32\n"
    "GW_KERNEL void math32(gw_u64 n, GW_GLOBAL const T *x, GW_GLOBAL const T *y, GW_GLOBAL T *out)\n{\n" MATH_BODY
    "}\n";
static const char *math64_source =
    "#define T gw_f64\n"
    "GW_KERNEL void math64(gw_u64 n, GW_GLOBAL const T *x, GW_GLOBAL const T *y, GW_GLOBAL T *out)\n{\n" MATH_BODY
    "}\n";

static const char *const math_names[MATH_FUNCTIONS] = { "sqrt",  "exp",  "log",  "sin",  "cos",   "tanh", "pow",
                                                        "hypot", "fabs", "fmin", "fmax", "floor", "ceil", "fma" };
/* Allowed error in ulps: OpenCL's minimum accuracy (its C specification, 7.4) plus one for the reference; the exact
 * functions must be exact on every backend. */
static const unsigned math_ulps[MATH_FUNCTIONS] = { 4, 4, 4, 5, 5, 6, 17, 5, 0, 0, 0, 0, 0, 0 };

static double math_ref(int f, double a, double b)
{
    switch (f) {
    case 0: return sqrt(a);
    case 1: return exp(b);
    case 2: return log(a);
    case 3: return sin(b);
    case 4: return cos(b);
    case 5: return tanh(b);
    case 6: return pow(a, b);
    case 7: return hypot(a, b);
    case 8: return fabs(b);
    case 9: return fmin(a, b);
    case 10: return fmax(a, b);
    case 11: return floor(b);
    case 12: return ceil(b);
    default: return fma(a, b, 0.5);
    }
}

BACKEND_TEST(program, math_functions_have_opencl_names_in_float_and_double)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 997 };
    const bool fp64 = test_device(ctx).fp64;
    for (int dbl = 0; dbl < 1 + fp64; dbl++) {
        const size_t es = dbl ? 8 : 4;
        double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
        unsigned char *hx = malloc(N * es), *hy = malloc(N * es);
        for (int i = 0; i < N; i++) {
            a[i] = 0.1 + 9.9 * i / N;                 /* (0, 10]: sqrt, log and pow's base are defined */
            b[i] = -4.0 + 8.0 * ((i * 7919) % N) / N; /* [-4, 4] */
            if (dbl) {
                memcpy(hx + i * 8, &a[i], 8), memcpy(hy + i * 8, &b[i], 8);
            } else {
                float fa = (float)a[i], fb = (float)b[i];
                a[i] = fa, b[i] = fb;
                memcpy(hx + i * 4, &fa, 4), memcpy(hy + i * 4, &fb, 4);
            }
        }
        gpuws_program *p = test_build(ctx, dbl ? math64_source : math32_source);
        gpuws_buffer *dx = test_buffer_from(ctx, hx, N * es), *dy = test_buffer_from(ctx, hy, N * es),
                     *out = test_buffer(ctx, N * 15 * es);
        gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(dx), gpuws_arg_buffer(dy), gpuws_arg_buffer(out) };
        test_launch(test_kernel(p, dbl ? "math64" : "math32"), CFG((N + 63) / 64, 1, 1, 64, 1, 1), args, 4);
        unsigned char *h = test_download(out, N * 15 * es);
        for (int i = 0; i < N; i++) {
            for (int f = 0; f < MATH_FUNCTIONS; f++) {
                const double ref = math_ref(f, a[i], b[i]);
                uint64_t ulps;
                double got;
                if (dbl) {
                    memcpy(&got, h + (i * 15 + f) * 8, 8);
                    ulps = test_ulp_diff_f64(got, ref);
                } else {
                    float g32;
                    memcpy(&g32, h + (i * 15 + f) * 4, 4);
                    got = g32;
                    /* fma's reference: a * b is exact in double, so one rounding to float is the fused result */
                    ulps = test_ulp_diff_f32(g32, f == 13 ? fmaf((float)a[i], (float)b[i], 0.5f) : (float)ref);
                }
                cr_assert_leq(ulps, math_ulps[f], "%s %s(%a, %a) = %a, reference %a: %llu ulps",
                              dbl ? "double" : "float", math_names[f], a[i], b[i], got, ref, (unsigned long long)ulps);
            }
            double sizes;
            if (dbl) memcpy(&sizes, h + (i * 15 + 14) * 8, 8);
            else {
                float s32;
                memcpy(&s32, h + (i * 15 + 14) * 4, 4);
                sizes = s32;
            }
            cr_assert_eq(sizes, (double)(MATH_FUNCTIONS * es), "every function of a %s gives a %s",
                         dbl ? "gw_f64" : "gw_f32", dbl ? "gw_f64" : "gw_f32");
        }
        test_check_guard(out, N * 15 * es, "out");
        free(h);
        free(a);
        free(b);
        free(hx);
        free(hy);
        gpuws_buffer_destroy(dx);
        gpuws_buffer_destroy(dy);
        gpuws_buffer_destroy(out);
        gpuws_program_destroy(p);
    }
    if (!fp64) cr_log_info("%s has no double precision: gw_f64 math not run", test_device(ctx).name);
    gpuws_context_destroy(ctx);
}

/* ---- defines, headers, helpers ---------------------------------------------------------------------------- */

BACKEND_TEST(program, defines_and_nested_in_memory_headers_reach_the_source)
{
    gpuws_context *ctx = test_open(*kind);
    const char *src = "#include \"outer.h\"\n"
                      "#include <flags.h>\n"
                      "GW_KERNEL void values(GW_GLOBAL gw_i32 *out)\n"
                      "{\n"
                      "    out[0] = OUTER * SCALE + OFFSET + ALSO;\n"
                      "    out[1] = inner_twice(21);\n"
                      "}\n";
    const gpuws_program_header headers[] = {
        { "outer.h", "#include \"inner.h\"\n#define OUTER (INNER + 1)\n" },
        { "inner.h", "#define INNER 10\nGW_DEVICE gw_i32 inner_twice(gw_i32 v) { return 2 * v; }\n" },
        { "flags.h", "#ifdef WITH_ALSO\n#define ALSO 100\n#else\n#define ALSO 0\n#endif\n" },
    };
    const char *defines[] = { "SCALE=3", "OFFSET", "WITH_ALSO" };
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = "values.gw";
    o.defines = defines;
    o.num_defines = 3;
    o.headers = headers;
    o.num_headers = 3;
    gpuws_program *p = test_build_opts(ctx, src, &o);
    gpuws_buffer *out = test_buffer(ctx, 8);
    gpuws_arg args[] = { gpuws_arg_buffer(out) };
    test_launch(test_kernel(p, "values"), CFG(1, 1, 1, 1, 1, 1), args, 1);
    int32_t got[2];
    TEST_OK(gpuws_buffer_read(out, 0, got, sizeof got));
    cr_assert_eq(got[0], 11 * 3 + 1 + 100, "OUTER * SCALE + OFFSET + ALSO = %d", got[0]);
    cr_assert_eq(got[1], 42);
    test_check_guard(out, 8, "out");
    /* the generated text: the dialect's definitions, then the user's lines and the headers' */
    const char *text = gpuws_program_source(p);
    cr_assert_not_null(text);
    const char *dialect = strstr(text, "GW_KERNEL"),
               *user = strstr(text, "    out[0] = OUTER * SCALE + OFFSET + ALSO;\n");
    cr_assert(dialect && user && dialect < user, "the source has the dialect, then the user's text:\n%s", text);
    cr_assert(strstr(text, "#define INNER 10\n") && strstr(text, "#define ALSO 100\n"), "and the headers' text");
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* GW_DEVICE helpers that use index functions and gw_barrier, in a header and calling one another. */
BACKEND_TEST(program, device_helpers_may_use_barriers_and_index_functions)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 32, BLOCKS = 40 };
    const gpuws_program_header headers[] = { { "block.h",
                                               "GW_DEVICE gw_u64 my_thread(void) { return gw_thread_idx(0); }\n"
                                               "GW_DEVICE gw_i32 block_total(GW_LOCAL gw_i32 *s, gw_i32 v)\n"
                                               "{\n"
                                               "    const gw_u64 t = my_thread();\n"
                                               "    s[t] = v;\n"
                                               "    gw_barrier();\n"
                                               "    for (gw_u64 step = gw_block_dim(0) / 2; step > 0; step /= 2) {\n"
                                               "        if (t < step) s[t] += s[t + step];\n"
                                               "        gw_barrier();\n"
                                               "    }\n"
                                               "    const gw_i32 total = s[0];\n"
                                               "    gw_barrier(); /* everyone has read s[0] before s is reused */\n"
                                               "    return total;\n"
                                               "}\n" } };
    const char *src =
        "#include \"block.h\"\n"
        "GW_KERNEL void totals(GW_GLOBAL const gw_i32 *x, GW_GLOBAL gw_i32 *sum, GW_GLOBAL gw_i32 *sum_sq,\n"
        "                      GW_LOCAL gw_i32 *s)\n"
        "{\n"
        "    const gw_i32 v = x[gw_global_idx(0)];\n"
        "    const gw_i32 total = block_total(s, v);\n"
        "    sum_sq[gw_global_idx(0)] = block_total(s, v * v);\n"
        "    sum[gw_global_idx(0)] = total;\n"
        "}\n";
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.headers = headers;
    o.num_headers = 1;
    gpuws_program *p = test_build_opts(ctx, src, &o);
    int32_t x[B * BLOCKS];
    for (int i = 0; i < B * BLOCKS; i++) x[i] = i % 13 - 6;
    gpuws_buffer *dx = test_buffer_from(ctx, x, sizeof x), *sum = test_buffer(ctx, sizeof x),
                 *sq = test_buffer(ctx, sizeof x);
    gpuws_arg args[] = { gpuws_arg_buffer(dx), gpuws_arg_buffer(sum), gpuws_arg_buffer(sq), gpuws_arg_local(B * 4) };
    test_launch(test_kernel(p, "totals"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 4);
    int32_t *hs = test_download(sum, sizeof x), *hq = test_download(sq, sizeof x);
    for (int b = 0; b < BLOCKS; b++) {
        int32_t ws = 0, wq = 0;
        for (int i = b * B; i < (b + 1) * B; i++) ws += x[i], wq += x[i] * x[i];
        for (int i = b * B; i < (b + 1) * B; i++) {
            cr_assert_eq(hs[i], ws, "work-item %d: block %d's sum", i, b);
            cr_assert_eq(hq[i], wq, "work-item %d: block %d's sum of squares", i, b);
        }
    }
    free(hs);
    free(hq);
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(sum);
    gpuws_buffer_destroy(sq);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* The compiler's output, warnings included, is the program's log; the generated text holds the user's source. */
BACKEND_TEST(program, the_log_holds_warnings_and_the_source_the_users_text)
{
    gpuws_context *ctx = test_open(*kind);
    /* a text of its own each run: a driver that caches compilations itself (NVIDIA's OpenCL does) reports no
     * warning for a text it has compiled before */
    char src[256];
    snprintf(src, sizeof src,
             "#warning gpuws-test-warning\n"
             "GW_KERNEL void k(GW_GLOBAL gw_u32 *out) { out[gw_global_idx(0)] = 7u; } /* %d %lld */\n",
             (int)getpid(), (long long)time(NULL));
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = "warns.gw";
    gpuws_program *p = test_build_opts(ctx, src, &o);
    const char *log = gpuws_program_log(p);
    cr_assert_not_null(log);
    cr_assert(strstr(log, "gpuws-test-warning"), "the log has the warning: %s", log);
    /* NVIDIA's OpenCL ignores #line: its log names the text "<kernel>" (gpuws_last_error maps an error back) */
    const gpuws_device_info d = test_device(ctx);
    const bool ignores_line = *kind == GPUWS_BACKEND_OPENCL && strstr(d.platform, "NVIDIA");
    cr_assert(strstr(log, ignores_line ? "<kernel>" : "warns.gw"), "naming the file: %s", log);
    const char *text = gpuws_program_source(p);
    cr_assert(text && strstr(text, src), "the source holds the user's text");
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}
