/* What goes wrong, and what the user is told: compile errors name the user's file (or header) and line; a failed
 * program has only its log, its source and destroy; bad calls change nothing; launches of user kernels get the
 * launch API's checks. */
#include "../test_program.h"

#include <stdint.h>

/* ---- compile errors --------------------------------------------------------------------------------------- */

/* The first error, as "file:line: message" with the line of the user's source (the dialect put in front of it
 * shifts nothing). */
BACKEND_TEST(program, a_compile_error_names_the_users_file_and_line)
{
    gpuws_context *ctx = test_open(*kind);
    static const struct {
        const char *file, *source, *at, *says;
    } rows[] = {
        { "broken.gw", "GW_KERNEL void k(GW_GLOBAL gw_f32 *x)\n{\n    x[0] = 1.0f +;\n}\n", "broken.gw:3:", NULL },
        { NULL, "\n\nGW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = 1.0f +; }\n",
          "kernel.gw:3:", NULL }, /* default name */
        { "unknown.gw", "GW_KERNEL void k(GW_GLOBAL gw_f32 *x)\n{\n\n    x[0] = undefined_thing;\n}\n",
          "unknown.gw:4:", "undefined_thing" },
        { "late.gw", "GW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = 1.0f; }\n#warning not an error\n\nint oops = ;\n",
          "late.gw:4:", NULL }, /* the first error, not the first warning */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
        o.file_name = rows[i].file;
        test_build_fails(ctx, rows[i].source, &o, rows[i].at, rows[i].says, true);
    }
    gpuws_context_destroy(ctx);
}

/* A construct that exists only on CUDA stops the build elsewhere with the user's message. */
BACKEND_TEST(program, an_error_directive_outside_cuda_stops_the_build_there)
{
    gpuws_context *ctx = test_open(*kind);
    const char *src = "GW_KERNEL void k(GW_GLOBAL gw_u32 *out) { out[0] = 1; }\n"
                      "#ifndef GW_CUDA\n"
                      "#error warp shuffles need CUDA\n"
                      "#endif\n";
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = "portable.gw";
    if (*kind == GPUWS_BACKEND_CUDA) gpuws_program_destroy(test_build_opts(ctx, src, &o));
    else test_build_fails(ctx, src, &o, "portable.gw:3:", "warp shuffles need CUDA", true);
    gpuws_context_destroy(ctx);
}

/* An error inside an in-memory header names the header and its line, also when the header is included by
 * another header. */
BACKEND_TEST(program, an_error_in_a_header_names_the_header_and_its_line)
{
    gpuws_context *ctx = test_open(*kind);
    const gpuws_program_header headers[] = {
        { "outer.h", "#include \"helpers.h\"\n" },
        { "helpers.h", "GW_DEVICE gw_f32 twice(gw_f32 v)\n"
                       "{\n"
                       "    return 2.0f * v + no_such_thing;\n"
                       "}\n" },
    };
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = "main.gw";
    o.headers = headers;
    o.num_headers = 2;
    const char *direct = "#include \"helpers.h\"\nGW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = twice(x[0]); }\n";
    const char *nested = "\n#include \"outer.h\"\nGW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = twice(x[0]); }\n";
    test_build_fails(ctx, direct, &o, "helpers.h:3:", "no_such_thing", false);
    test_build_fails(ctx, nested, &o, "helpers.h:3:", "no_such_thing", false);
    const gpuws_program_header fine[] = { { "helpers.h", "GW_DEVICE gw_f32 twice(gw_f32 v) { return 2.0f * v; }\n" } };
    o.headers = fine;
    o.num_headers = 1;
    /* an error after the #include is on the user's line, not shifted by the header's */
    test_build_fails(ctx, "#include \"helpers.h\"\n\nGW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = twice(x[0]) +; }\n",
                     &o, "main.gw:3:", NULL, false);
    /* a header that is not among the options' */
    test_build_fails(ctx, "\n#include \"nope.h\"\nGW_KERNEL void k(GW_GLOBAL gw_f32 *x) { x[0] = 1.0f; }\n", &o,
                     "main.gw:2:", "nope.h", false);
    gpuws_context_destroy(ctx);
}

/* Scalar kernel parameters are the 32- and 64-bit kinds gpuws_arg has; pointers need an address space. The message
 * names the line of the parameter, in the header when the kernel is in one. */
BACKEND_TEST(program, a_kernel_parameter_the_launch_api_cannot_pass_is_a_build_error)
{
    gpuws_context *ctx = test_open(*kind);
    static const struct {
        const char *params, *says;
    } rows[] = {
        { "gw_u8 v, GW_GLOBAL gw_u8 *out", "gw_u8" },
        { "gw_i16 v, GW_GLOBAL gw_u8 *out", "gw_i16" },
        { "char v, GW_GLOBAL gw_u8 *out", "char" },
        { "GW_GLOBAL gw_u8 *out, gw_u64 n,\n                 gw_u16 v", "gw_u16" },
        { "gw_f32 *x", "GW_GLOBAL" },
        { "GW_GLOBAL GW_LOCAL gw_f32 *x", "GW_GLOBAL" },
        { "GW_GLOBAL gw_f32 x[4]", "pointer" },
        { "struct pair p", "unsupported" },
        { "GW_GLOBAL gw_f32 *", "name" },
    };
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = "params.gw";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char src[512], at[32];
        snprintf(src, sizeof src, "struct pair { int a, b; };\nGW_KERNEL void k(%s)\n{\n}\n", rows[i].params);
        snprintf(at, sizeof at, "params.gw:%d:", strchr(rows[i].params, '\n') ? 3 : 2);
        cr_log_info("parameters: %s", rows[i].params);
        test_build_fails(ctx, src, &o, at, rows[i].says, true);
    }
    const gpuws_program_header headers[] = { { "kernels.h", "\nGW_KERNEL void k(gw_u8 v) { }\n" } };
    o.headers = headers;
    o.num_headers = 1;
    test_build_fails(ctx, "#include \"kernels.h\"\n", &o, "kernels.h:2:", "gw_u8", false);
    gpuws_context_destroy(ctx);
}

/* ---- bad calls ------------------------------------------------------------------------------------------- */

BACKEND_TEST(program, a_missing_source_or_output_is_an_invalid_argument)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_create(ctx, NULL, NULL, &p));
    cr_assert_null(p, "on error the output is NULL");
    cr_assert(strstr(gpuws_last_error(), "source"), "%s", gpuws_last_error());
    p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_create(ctx, "", NULL, &p));
    cr_assert_null(p);
    cr_assert(strstr(gpuws_last_error(), "empty"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_create(ctx, "GW_KERNEL void k(void) { }\n", NULL, NULL));
    p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_create(NULL, "GW_KERNEL void k(void) { }\n", NULL, &p));
    cr_assert_null(p);
    /* the queries take NULL */
    cr_assert_null(gpuws_program_log(NULL));
    cr_assert_null(gpuws_program_source(NULL));
    cr_assert_null(gpuws_kernel_signature(NULL));
    gpuws_program_destroy(NULL);
    gpuws_kernel *k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_get_kernel(NULL, "k", &k));
    cr_assert_null(k);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, bad_options_are_invalid_arguments_and_build_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    const char *good_define[] = { "A=1" }, *null_define[] = { NULL }, *digit[] = { "1X=3" }, *no_name[] = { "=3" },
               *space[] = { "A B" }, *dash[] = { "A-B=1" }, *newline[] = { "A=1\n#error injected" };
    const gpuws_program_header null_name[] = { { NULL, "int x;\n" } }, empty_name[] = { { "", "int x;\n" } },
                               null_source[] = { { "h.h", NULL } };
    struct {
        const char *what;
        gpuws_program_options o;
    } rows[] = {
        { "defines NULL with a count", { 0, NULL, NULL, 1, NULL, 0, 0 } },
        { "a NULL define", { 0, NULL, null_define, 1, NULL, 0, 0 } },
        { "a define name starting with a digit", { 0, NULL, digit, 1, NULL, 0, 0 } },
        { "a define without a name", { 0, NULL, no_name, 1, NULL, 0, 0 } },
        { "a define name with a space", { 0, NULL, space, 1, NULL, 0, 0 } },
        { "a define name with a dash", { 0, NULL, dash, 1, NULL, 0, 0 } },
        { "a define value with a newline", { 0, NULL, newline, 1, NULL, 0, 0 } },
        { "headers NULL with a count", { 0, NULL, good_define, 1, NULL, 2, 0 } },
        { "a header with a NULL name", { 0, NULL, NULL, 0, null_name, 1, 0 } },
        { "a header with an empty name", { 0, NULL, NULL, 0, empty_name, 1, 0 } },
        { "a header with a NULL source", { 0, NULL, NULL, 0, null_source, 1, 0 } },
        { "an unknown flag bit", { 0, NULL, NULL, 0, NULL, 0, 1u << 7 } },
        { "a high unknown flag bit", { 0, NULL, NULL, 0, NULL, 0, GPUWS_PROGRAM_NO_CACHE | 0x80000000u } },
        { "an empty file name", { 0, "", NULL, 0, NULL, 0, 0 } },
        { "a file name with a quote", { 0, "a\"b.gw", NULL, 0, NULL, 0, 0 } },
        { "a file name with a newline", { 0, "a\nb.gw", NULL, 0, NULL, 0, 0 } },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        gpuws_program *p = NOT_SET;
        gpuws_status st =
            gpuws_program_create(ctx, "GW_KERNEL void k(GW_GLOBAL gw_u32 *o) { o[0] = 1; }\n", &rows[i].o, &p);
        cr_assert_eq(st, GPUWS_ERR_INVALID_ARGUMENT, "%s: %s: %s", rows[i].what, gpuws_status_name(st),
                     gpuws_last_error());
        cr_assert_null(p, "%s: the output is NULL", rows[i].what);
        cr_assert(strstr(gpuws_last_error(), "options."), "%s: the message names the option: %s", rows[i].what,
                  gpuws_last_error());
    }
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, an_unknown_kernel_name_lists_the_programs_kernels)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, "GW_KERNEL void alpha(GW_GLOBAL gw_u32 *o) { o[0] = 1; }\n"
                                       "GW_DEVICE void helper(void) { }\n"
                                       "GW_KERNEL void beta(GW_GLOBAL gw_u32 *o) { o[0] = 2; }\n");
    gpuws_kernel *k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_KERNEL_NOT_FOUND, gpuws_program_get_kernel(p, "gamma", &k));
    cr_assert_null(k);
    const char *msg = gpuws_last_error();
    cr_assert(strstr(msg, "gamma") && strstr(msg, "alpha") && strstr(msg, "beta"), "%s", msg);
    cr_assert_null(strstr(msg, "helper"), "a GW_DEVICE helper is no kernel: %s", msg);
    k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_KERNEL_NOT_FOUND, gpuws_program_get_kernel(p, "helper", &k));
    cr_assert_null(k);
    k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_get_kernel(p, NULL, &k));
    cr_assert_null(k);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_program_get_kernel(p, "alpha", NULL));
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

/* ---- launches ------------------------------------------------------------------------------------------- */

static const char *fill_source =
    "GW_KERNEL void fill(gw_u64 n, gw_f32 v, GW_GLOBAL gw_f32 *out, GW_LOCAL gw_f32 *tmp)\n"
    "{\n"
    "    const gw_u64 i = gw_global_idx(0);\n"
    "    tmp[gw_thread_idx(0)] = v;\n"
    "    if (i < n) out[i] = tmp[gw_thread_idx(0)];\n"
    "}\n";

BACKEND_TEST(program, a_launch_with_wrong_arguments_is_refused_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, fill_source);
    gpuws_kernel *k = test_kernel(p, "fill");
    enum { N = 256 };
    gpuws_buffer *out = test_buffer(ctx, N * 4);
    const gpuws_launch_config cfg = CFG(4, 1, 1, 64, 1, 1);
    const gpuws_arg good[] = { gpuws_arg_u64(N), gpuws_arg_f32(1.5f), gpuws_arg_buffer(out), gpuws_arg_local(64 * 4) };
    static const struct {
        int index;
        const char *what;
    } kinds[] = { { 0, "u32 for u64" },           { 0, "i64 for u64" },      { 1, "f64 for f32" },
                  { 1, "i32 for f32" },           { 2, "u64 for a buffer" }, { 2, "local memory for a buffer" },
                  { 3, "a buffer for GW_LOCAL" }, { 3, "u32 for GW_LOCAL" } };
    const gpuws_arg replacement[] = {
        gpuws_arg_u32(N), gpuws_arg_i64(N),    gpuws_arg_f64(1.5),    gpuws_arg_i32(1),
        gpuws_arg_u64(1), gpuws_arg_local(64), gpuws_arg_buffer(out), gpuws_arg_u32(256)
    };
    for (size_t r = 0; r < sizeof kinds / sizeof kinds[0]; r++) {
        gpuws_arg a[4];
        memcpy(a, good, sizeof a);
        a[kinds[r].index] = replacement[r];
        TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, a, 4));
        char want[32];
        snprintf(want, sizeof want, "argument %d", kinds[r].index);
        cr_assert(strstr(gpuws_last_error(), want), "%s: %s", kinds[r].what, gpuws_last_error());
    }
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, good, 3));
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, good, 0));
    gpuws_arg five[5];
    memcpy(five, good, sizeof good);
    five[4] = gpuws_arg_u32(1);
    TEST_FAILS(GPUWS_ERR_ARGUMENTS, gpuws_launch(NULL, k, &cfg, five, 5));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, &cfg, NULL, 4));
    TEST_OK(gpuws_context_synchronize(ctx));
    test_expect_untouched(out, N * 4, "out");
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, a_block_or_shared_memory_over_the_devices_limits_is_refused)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_program *p = test_build(ctx, fill_source);
    gpuws_kernel *k = test_kernel(p, "fill");
    const gpuws_device_info d = test_device(ctx);
    enum { N = 256 };
    gpuws_buffer *out = test_buffer(ctx, N * 4);
    gpuws_arg a[] = { gpuws_arg_u64(N), gpuws_arg_f32(1.5f), gpuws_arg_buffer(out), gpuws_arg_local(64 * 4) };
    /* every dimension allowed, their product not */
    cr_assert_gt((uint64_t)d.max_block_dims[0] * 2, d.max_block_size);
    const gpuws_launch_config big = CFG(1, 1, 1, d.max_block_dims[0], 2, 1),
                              tall = CFG(1, 1, 1, 1, 1, d.max_block_dims[2] + 1);
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &big, a, 4));
    cr_assert(strstr(gpuws_last_error(), "exceeds the limit"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &tall, a, 4));
    const gpuws_launch_config cfg = CFG(4, 1, 1, 64, 1, 1);
    a[3] = gpuws_arg_local(d.shared_mem_bytes + 1);
    TEST_FAILS(GPUWS_ERR_LAUNCH_CONFIG, gpuws_launch(NULL, k, &cfg, a, 4));
    cr_assert(strstr(gpuws_last_error(), "shared"), "%s", gpuws_last_error());
    TEST_OK(gpuws_context_synchronize(ctx));
    test_expect_untouched(out, N * 4, "out");
    /* at the limit it runs (the CPU backend, OpenCL and CUDA alike): a region is counted rounded up to 16 bytes */
    gpuws_kernel_info ki;
    TEST_OK(gpuws_kernel_get_info(k, &ki));
    a[3] = gpuws_arg_local((d.shared_mem_bytes - ki.static_shared_bytes) & ~(uint64_t)15);
    TEST_OK(gpuws_launch(NULL, k, &cfg, a, 4));
    float *h = test_download(out, N * 4);
    for (int i = 0; i < N; i++) cr_assert_eq(h[i], 1.5f, "element %d", i);
    free(h);
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}
