/* Core API: status strings, backend selection rules, buffers and transfers, streams and events. */
#include "support.h"
#include "../core/driver_support.h" /* the memory a stream keeps for the drivers */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- status codes ---- */

Test(status, every_code_has_a_distinct_name_and_description)
{
    static const struct {
        gpuws_status s;
        const char *name;
    } all[] = {
#define XX(name, value, text) { GPUWS_##name, "GPUWS_" #name },
        GPUWS_STATUS_MAP(XX)
#undef XX
    };
    size_t n = sizeof all / sizeof all[0];
    cr_assert_geq(n, 19);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(gpuws_status_name(all[i].s), all[i].name);
        const char *d = gpuws_status_string(all[i].s);
        cr_assert(d && strlen(d) > 3 && strcmp(d, "unknown status") != 0, "%s has no description", all[i].name);
        cr_assert(all[i].s == GPUWS_OK ? all[i].s == 0 : all[i].s < 0, "%s = %d", all[i].name, all[i].s);
        for (size_t j = 0; j < i; j++) {
            cr_assert_neq(all[i].s, all[j].s, "%s and %s share a value", all[i].name, all[j].name);
            cr_assert_str_neq(gpuws_status_string(all[i].s), gpuws_status_string(all[j].s));
        }
    }
    cr_assert_str_eq(gpuws_status_name((gpuws_status)-999), "GPUWS_UNKNOWN_STATUS");
    cr_assert_str_eq(gpuws_status_string((gpuws_status)12345), "unknown status");
}

Test(status, detail_message_is_per_thread_and_names_the_argument)
{
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_context_create(NULL, NULL));
    cr_assert(strstr(gpuws_last_error(), "ctx"), "message: %s", gpuws_last_error());
}

/* ---- selection ---- */

static gpuws_backend_kind backend_of(gpuws_context *ctx)
{
    gpuws_backend_kind k;
    TEST_OK(gpuws_context_get_backend(ctx, &k));
    return k;
}

Test(selection, unknown_name_is_an_error_listing_the_valid_names)
{
    setenv("GPUWS_BACKEND", "bogus", 1);
    gpuws_context *ctx = (gpuws_context *)1;
    TEST_FAILS(GPUWS_ERR_UNKNOWN_BACKEND, gpuws_context_create(&ctx, NULL));
    cr_assert_null(ctx, "*ctx is NULL after a failure");
    const char *m = gpuws_last_error();
    cr_assert(strstr(m, "bogus") && strstr(m, "cuda") && strstr(m, "opencl") && strstr(m, "cpu"), "message: %s", m);
    /* an unknown name anywhere in the list is an error, even after an available one */
    setenv("GPUWS_BACKEND", "cpu,nope", 1);
    TEST_FAILS(GPUWS_ERR_UNKNOWN_BACKEND, gpuws_context_create(&ctx, NULL));
    setenv("GPUWS_BACKEND", " , ", 1);
    TEST_FAILS(GPUWS_ERR_UNKNOWN_BACKEND, gpuws_context_create(&ctx, NULL));
}

Test(selection, names_are_case_insensitive)
{
    setenv("GPUWS_BACKEND", "CPU", 1);
    gpuws_context *ctx;
    TEST_OK(gpuws_context_create(&ctx, NULL));
    cr_assert_eq(backend_of(ctx), GPUWS_BACKEND_CPU);
    gpuws_context_destroy(ctx);
    gpuws_backend_kind k;
    TEST_OK(gpuws_backend_from_name("OpenCL", &k));
    cr_assert_eq(k, GPUWS_BACKEND_OPENCL);
    TEST_FAILS(GPUWS_ERR_UNKNOWN_BACKEND, gpuws_backend_from_name("vulkan", &k));
}

/* Makes OpenCL unavailable in this (forked) test process, whatever the machine has. */
static void hide_opencl(void) { setenv("GPUWS_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1); }

Test(selection, an_explicit_unavailable_backend_is_an_error_with_its_reason)
{
    hide_opencl();
    setenv("GPUWS_BACKEND", "opencl", 1);
    gpuws_context *ctx;
    TEST_FAILS(GPUWS_ERR_BACKEND_UNAVAILABLE, gpuws_context_create(&ctx, NULL));
    const char *m = gpuws_last_error();
    cr_assert(strstr(m, "opencl not available: no OpenCL ICD loader"), "message: %s", m);
    gpuws_backend_info bi;
    TEST_OK(gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi));
    cr_assert(!bi.available && bi.built_in && strstr(bi.reason, "ICD loader"), "reason: %s", bi.reason);
}

Test(selection, a_later_available_name_in_the_list_is_used)
{
    hide_opencl();
    setenv("GPUWS_BACKEND", "opencl,cpu", 1);
    gpuws_context *ctx;
    TEST_OK(gpuws_context_create(&ctx, NULL));
    cr_assert_eq(backend_of(ctx), GPUWS_BACKEND_CPU);
    gpuws_context_destroy(ctx);
}

Test(selection, the_list_is_tried_in_order)
{
    setenv("GPUWS_BACKEND", "cpu,opencl", 1);
    gpuws_context *ctx;
    TEST_OK(gpuws_context_create(&ctx, NULL));
    cr_assert_eq(backend_of(ctx), GPUWS_BACKEND_CPU);
    gpuws_context_destroy(ctx);
    gpuws_backend_info bi;
    gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi);
    if (!bi.available) cr_skip_test("opencl: %s", bi.reason);
    setenv("GPUWS_BACKEND", "opencl,cpu", 1);
    TEST_OK(gpuws_context_create(&ctx, NULL));
    cr_assert_eq(backend_of(ctx), GPUWS_BACKEND_OPENCL);
    gpuws_context_destroy(ctx);
}

Test(selection, default_order_is_cuda_then_opencl_then_cpu)
{
    unsetenv("GPUWS_BACKEND");
    gpuws_backend_info cu, cl;
    gpuws_backend_get_info(GPUWS_BACKEND_CUDA, &cu);
    gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &cl);
    gpuws_context *ctx;
    TEST_OK(gpuws_context_create(&ctx, NULL));
    gpuws_backend_kind want = cu.available   ? GPUWS_BACKEND_CUDA
                              : cl.available ? GPUWS_BACKEND_OPENCL
                                             : GPUWS_BACKEND_CPU;
    cr_assert_eq(backend_of(ctx), want);
    gpuws_context_destroy(ctx);
}

Test(selection, device_index_out_of_range_is_an_error)
{
    setenv("GPUWS_BACKEND", "cpu", 1);
    setenv("GPUWS_DEVICE", "5", 1);
    gpuws_context *ctx;
    TEST_FAILS(GPUWS_ERR_NO_DEVICE, gpuws_context_create(&ctx, NULL));
    cr_assert(strstr(gpuws_last_error(), "index 5"), "message: %s", gpuws_last_error());
    setenv("GPUWS_DEVICE", "first", 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_context_create(&ctx, NULL));
    setenv("GPUWS_DEVICE", "-1", 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_context_create(&ctx, NULL));
    gpuws_device_info d;
    TEST_FAILS(GPUWS_ERR_NO_DEVICE, gpuws_device_get_info(GPUWS_BACKEND_CPU, NULL, 1, &d));
}

Test(selection, options_override_the_environment)
{
    setenv("GPUWS_BACKEND", "bogus", 1);
    setenv("GPUWS_DEVICE", "9", 1);
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "cpu";
    o.device = 0;
    gpuws_context *ctx;
    TEST_OK(gpuws_context_create(&ctx, &o));
    cr_assert_eq(backend_of(ctx), GPUWS_BACKEND_CPU);
    gpuws_context_destroy(ctx);
}

Test(selection, opencl_platform_filter_that_matches_nothing)
{
    gpuws_backend_info bi;
    gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi);
    if (!bi.available) cr_skip_test("opencl: %s", bi.reason);
    setenv("GPUWS_BACKEND", "opencl", 1);
    setenv("GPUWS_OPENCL_PLATFORM", "No Such Vendor", 1);
    gpuws_context *ctx;
    TEST_FAILS(GPUWS_ERR_NO_DEVICE, gpuws_context_create(&ctx, NULL));
    cr_assert(strstr(gpuws_last_error(), "No Such Vendor"), "message: %s", gpuws_last_error());
    size_t n = 99;
    TEST_OK(gpuws_device_count(GPUWS_BACKEND_OPENCL, "No Such Vendor", &n));
    cr_assert_eq(n, 0);
}

/* ---- buffers, on every backend ---- */

BACKEND_TEST(buffers, transfers_are_bounds_checked)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *b;
    TEST_OK(gpuws_buffer_create(ctx, 100, &b));
    unsigned char host[200], back[100];
    for (int i = 0; i < 200; i++) host[i] = (unsigned char)(i * 7 + 1);
    TEST_OK(gpuws_buffer_write(b, 0, host, 100));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_write(b, 1, host, 100));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_write(b, 101, host, 0));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_read(b, 0, back, 101));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_buffer_read(b, SIZE_MAX, back, 2));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_read(b, 0, NULL, 10));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_write(NULL, 0, host, 10));
    /* the failed calls changed nothing */
    TEST_OK(gpuws_buffer_read(b, 0, back, 100));
    cr_assert_arr_eq(back, host, 100);
    /* offsets */
    TEST_OK(gpuws_buffer_write(b, 90, host + 150, 10));
    TEST_OK(gpuws_buffer_read(b, 85, back, 15));
    cr_assert_arr_eq(back, host + 85, 5);
    cr_assert_arr_eq(back + 5, host + 150, 10);
    size_t sz;
    TEST_OK(gpuws_buffer_get_size(b, &sz));
    cr_assert_eq(sz, 100);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_create(ctx, 0, &b));
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}

static int output_sentinel; /* a value no call returns: outputs are set to it before a call that must clear them */
#define NOT_SET ((void *)&output_sentinel)

BACKEND_TEST(buffers, addresses_are_shared_without_a_copy_where_the_backend_has_them)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *b, *w = NOT_SET;
    void *p = NOT_SET;
    TEST_OK(gpuws_buffer_create(ctx, 256, &b));
    if (*kind == GPUWS_BACKEND_OPENCL) { /* a cl_mem has no address */
        TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_buffer_get_pointer(b, &p));
        cr_assert_null(p);
        cr_assert(strstr(gpuws_last_error(), "cl_mem"), "%s", gpuws_last_error());
        static _Alignas(16) unsigned char host_memory[64];
        TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_buffer_wrap(ctx, host_memory, sizeof host_memory, &w));
        cr_assert_null(w);
        gpuws_buffer_destroy(b);
        gpuws_context_destroy(ctx);
        return;
    }
    TEST_OK(gpuws_buffer_get_pointer(b, &p));
    cr_assert(p && (uintptr_t)p % GPUWS_BUFFER_WRAP_ALIGNMENT == 0);
    /* a second handle on the same memory: what is written through one is read through the other */
    TEST_OK(gpuws_buffer_wrap(ctx, p, 256, &w));
    unsigned char host[256], back[256];
    for (int i = 0; i < 256; i++) host[i] = (unsigned char)(i * 13 + 5);
    TEST_OK(gpuws_buffer_write(w, 0, host, 256));
    TEST_OK(gpuws_buffer_read(b, 0, back, 256));
    cr_assert_arr_eq(back, host, 256);
    if (*kind == GPUWS_BACKEND_CPU) cr_assert_arr_eq(p, host, 256, "the CPU backend's buffers are host memory");
    /* destroying the wrapping handle leaves the memory to its owner */
    gpuws_buffer_destroy(w);
    TEST_OK(gpuws_buffer_read(b, 0, back, 256));
    cr_assert_arr_eq(back, host, 256);
    /* the checks, output NULL on each */
    const struct {
        void *ptr;
        size_t bytes;
        const char *msg;
    } bad[] = { { (char *)p + 4, 16, "aligned" }, { NULL, 16, "'ptr' is NULL" }, { p, 0, "'bytes' is 0" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        w = NOT_SET;
        TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_wrap(ctx, bad[i].ptr, bad[i].bytes, &w));
        cr_assert_null(w);
        cr_assert(strstr(gpuws_last_error(), bad[i].msg), "%s", gpuws_last_error());
    }
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_wrap(NULL, p, 16, &w));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_wrap(ctx, p, 16, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_get_pointer(b, NULL));
    p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_get_pointer(NULL, &p));
    cr_assert_null(p);
    if (*kind == GPUWS_BACKEND_CPU) {
        /* an algorithm works in the caller's memory, and a wrapped buffer the context releases is not freed (ASan
         * reports a free of this stack array) */
        _Alignas(16) float x[16], y[16];
        for (int i = 0; i < 16; i++) x[i] = (float)i;
        gpuws_buffer *bx, *by;
        TEST_OK(gpuws_buffer_wrap(ctx, x, sizeof x, &bx));
        TEST_OK(gpuws_buffer_wrap(ctx, y, sizeof y, &by));
        TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 16, bx, bx, by));
        TEST_OK(gpuws_context_synchronize(ctx));
        for (int i = 0; i < 16; i++) cr_assert_eq(y[i], 2.0f * (float)i);
        gpuws_buffer_destroy(bx);
    }
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(streams, the_native_queue_is_the_backends_own)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_stream *def, *s;
    TEST_OK(gpuws_context_get_default_stream(ctx, &def));
    TEST_OK(gpuws_stream_create(ctx, &s));
    void *a = NOT_SET, *b = NOT_SET;
    TEST_OK(gpuws_stream_get_native(def, &a));
    TEST_OK(gpuws_stream_get_native(s, &b));
    if (*kind == GPUWS_BACKEND_CPU) cr_assert(!a && !b, "the CPU backend has no queue to hand on");
    else cr_assert(a && b && a != b, "each stream its own cudaStream_t / cl_command_queue");
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_stream_get_native(s, NULL));
    gpuws_stream_destroy(s);
    a = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_stream_get_native(s, &a));
    cr_assert_null(a);
    a = NOT_SET;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_stream_get_native(NULL, &a));
    cr_assert_null(a);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(buffers, copy_and_fill)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *a, *b;
    TEST_OK(gpuws_buffer_create(ctx, 256, &a));
    TEST_OK(gpuws_buffer_create(ctx, 256, &b));
    unsigned char host[256], back[256];
    for (int i = 0; i < 256; i++) host[i] = (unsigned char)i;
    TEST_OK(gpuws_buffer_write(a, 0, host, 256));
    const uint32_t zero = 0;
    TEST_OK(gpuws_buffer_fill(b, 0, &zero, 4, 256));
    TEST_OK(gpuws_buffer_copy(b, 16, a, 100, 50));
    TEST_OK(gpuws_buffer_read(b, 0, back, 256));
    for (int i = 0; i < 256; i++) cr_assert_eq(back[i], i >= 16 && i < 66 ? host[i + 84] : 0, "byte %d", i);
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_copy(b, 200, a, 0, 57));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_copy(b, 0, a, 250, 7));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_copy(a, 10, a, 0, 20)); /* overlap */
    TEST_OK(gpuws_buffer_copy(a, 20, a, 0, 20));                                /* adjacent is fine */
    /* fill with 2-, 8- and 16-byte patterns, at an offset */
    const uint16_t p2 = 0xBEEF;
    const uint64_t p8 = 0x0123456789ABCDEFULL;
    const unsigned char p16[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    TEST_OK(gpuws_buffer_fill(b, 0, &p2, 2, 32));
    TEST_OK(gpuws_buffer_fill(b, 32, &p8, 8, 64));
    TEST_OK(gpuws_buffer_fill(b, 96, p16, 16, 160));
    TEST_OK(gpuws_buffer_read(b, 0, back, 256));
    for (int i = 0; i < 32; i += 2) cr_assert_eq(memcmp(back + i, &p2, 2), 0, "2-byte pattern at %d", i);
    for (int i = 32; i < 96; i += 8) cr_assert_eq(memcmp(back + i, &p8, 8), 0, "8-byte pattern at %d", i);
    for (int i = 96; i < 256; i += 16) cr_assert_eq(memcmp(back + i, p16, 16), 0, "16-byte pattern at %d", i);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_fill(b, 0, p16, 3, 9));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_fill(b, 2, &p8, 8, 16));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_buffer_fill(b, 248, &p8, 8, 16));
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}

/* Fills of more than 2^32 bytes reach every byte, from offsets past 2^31 too (NVIDIA's OpenCL got both wrong: the
 * backend fills those with a kernel of its own). 4.5 GiB on a GPU that has the memory; skipped elsewhere. */
GPU_BACKEND_TEST(buffers, fills_past_2_to_the_32_bytes_reach_every_byte)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    const size_t n = (size_t)9 << 29; /* 4.5 GiB */
    if (info.type == GPUWS_DEVICE_CPU || info.max_alloc_bytes < n || info.global_mem_bytes < n + ((size_t)2 << 30)) {
        gpuws_context_destroy(ctx);
        cr_skip_test("%s: %s: needs a GPU buffer of %zu bytes", test_backend_name(*kind), info.name, n);
    }
    gpuws_buffer *b;
    TEST_OK(gpuws_buffer_create(ctx, n, &b));
    const uint64_t p8 = 0x0123456789ABCDEFULL;
    const unsigned char p1 = 0x5A;
    const size_t half = n / 2 + 8; /* past 2^31 */
    TEST_OK(gpuws_buffer_fill(b, 0, &p1, 1, n));
    TEST_OK(gpuws_buffer_fill(b, half, &p8, 8, n - half - 64));
    const size_t at[] = { 0, half - 8, half, (size_t)1 << 32, n - 72, n - 64, n - 8 };
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        unsigned char got[8];
        TEST_OK(gpuws_buffer_read(b, at[k], got, 8));
        const bool patterned = at[k] >= half && at[k] < n - 64;
        for (int i = 0; i < 8; i++)
            cr_assert_eq(got[i], patterned ? ((const unsigned char *)&p8)[i] : p1, "byte %zu", at[k] + (size_t)i);
    }
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(buffers, foreign_and_destroyed_handles_are_rejected)
{
    gpuws_context *c1 = test_open(*kind), *c2 = test_open(*kind);
    gpuws_buffer *a, *b, *dead;
    TEST_OK(gpuws_buffer_create(c1, 64, &a));
    TEST_OK(gpuws_buffer_create(c2, 64, &b));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_buffer_copy(a, 0, b, 0, 8));
    gpuws_stream *s2;
    TEST_OK(gpuws_stream_create(c2, &s2));
    char host[8] = { 0 };
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_buffer_write_async(s2, a, 0, host, 8));
    TEST_OK(gpuws_buffer_create(c1, 64, &dead));
    gpuws_buffer_destroy(dead);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_write(dead, 0, host, 8));
    cr_assert(strstr(gpuws_last_error(), "not a live buffer"), "message: %s", gpuws_last_error());
    gpuws_stream_destroy(s2);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_stream_synchronize(s2));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_buffer_write_async(s2, b, 0, host, 8));
    gpuws_buffer_destroy(NULL); /* NULL is accepted by every destroy function */
    gpuws_stream_destroy(NULL);
    gpuws_event_destroy(NULL);
    gpuws_context_destroy(NULL);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(c1);
    gpuws_context_destroy(c2);
}

BACKEND_TEST(buffers, larger_than_device_memory_is_out_of_memory)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    gpuws_buffer *b = NULL;
    TEST_FAILS(GPUWS_ERR_OUT_OF_MEMORY, gpuws_buffer_create(ctx, (size_t)d.global_mem_bytes + 1, &b));
    cr_assert_null(b);
    cr_assert(strstr(gpuws_last_error(), "bytes"), "message names the sizes: %s", gpuws_last_error());
    /* the context still works */
    TEST_OK(gpuws_buffer_create(ctx, 1024, &b));
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}

/* ---- streams, events, pinned memory ---- */

BACKEND_TEST(streams, async_work_and_events)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 1 << 20 };
    gpuws_stream *s;
    gpuws_event *e0, *e1, *never;
    TEST_OK(gpuws_stream_create(ctx, &s));
    TEST_OK(gpuws_event_create(ctx, &e0));
    TEST_OK(gpuws_event_create(ctx, &e1));
    TEST_OK(gpuws_event_create(ctx, &never));
    float *pinned;
    TEST_OK(gpuws_host_alloc(ctx, N * sizeof(float), (void **)&pinned));
    for (int i = 0; i < N; i++) pinned[i] = (float)i;
    gpuws_buffer *a, *b;
    TEST_OK(gpuws_buffer_create(ctx, N * sizeof(float), &a));
    TEST_OK(gpuws_buffer_create(ctx, N * sizeof(float), &b));
    TEST_OK(gpuws_event_record(e0, s));
    TEST_OK(gpuws_buffer_write_async(s, a, 0, pinned, N * sizeof(float)));
    TEST_OK(gpuws_vector_add(s, GPUWS_F32, N, a, a, b));
    TEST_OK(gpuws_buffer_read_async(s, b, 0, pinned, N * sizeof(float)));
    TEST_OK(gpuws_event_record(e1, s));
    TEST_OK(gpuws_event_synchronize(e1));
    for (int i = 0; i < N; i++) cr_assert_eq(pinned[i], 2.0f * (float)i, "element %d", i);
    double ms = -1;
    TEST_OK(gpuws_event_elapsed_ms(e0, e1, &ms));
    cr_assert(ms >= 0 && ms < 60000, "elapsed %g ms", ms);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_event_elapsed_ms(e0, never, &ms));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_event_synchronize(never));
    TEST_OK(gpuws_context_synchronize(ctx));
    gpuws_host_free(ctx, pinned);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    gpuws_event_destroy(never);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(ctx);
}

/* n bytes of xorshift64 from seed x: a pattern in which a byte out of place shows. */
static void xorshift_bytes(unsigned char *p, size_t n, uint64_t x)
{
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

/* A large write from pageable memory, and a read into it, go through pinned blocks that host threads fill and empty
 * while the device copies the block before (core/staged.c): the knob staged_copy_mib=1 stages from 1 MiB in 1 MiB
 * blocks on any device, so 10 MiB and a bit at an odd offset cross eleven blocks and reuse each of the three slots
 * (the last one short). The bytes arrive intact, the bytes around them untouched, with blocking and stream-ordered
 * calls alike; the context keeps the three blocks afterwards, which shows the transfers were staged. */
BACKEND_TEST(streams, large_pageable_transfers_go_through_pinned_blocks)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "staged_copy_mib", "1");
    test_tune(ctx, "staging_keep_mib", "16"); /* kept on every device, so the test can see them */
    const size_t n = (10u << 20) + 12345, off = 7, size = n + 64;
    unsigned char *src = malloc(n), *back = malloc(size), *want = malloc(size);
    cr_assert(src && back && want);
    xorshift_bytes(src, n, 88172645463325252ull);
    memset(want, 0x5a, size);
    memcpy(want + off, src, n);
    gpuws_buffer *b;
    gpuws_stream *s;
    TEST_OK(gpuws_buffer_create(ctx, size, &b));
    TEST_OK(gpuws_stream_create(ctx, &s));
    for (int async = 0; async < 2; async++) {
        const unsigned char fill = 0x5a;
        TEST_OK(gpuws_buffer_fill(b, 0, &fill, 1, size));
        memset(back, 0, size);
        if (async) {
            TEST_OK(gpuws_buffer_write_async(s, b, off, src, n));
            TEST_OK(gpuws_buffer_read_async(s, b, 0, back, size));
            TEST_OK(gpuws_stream_synchronize(s));
        } else {
            TEST_OK(gpuws_buffer_write(b, off, src, n));
            TEST_OK(gpuws_buffer_read(b, 0, back, size));
        }
        for (size_t i = 0; i < size; i++)
            cr_assert_eq(back[i], want[i], "%s: byte %zu is %u, not %u", async ? "async" : "blocking", i, back[i],
                         want[i]);
    }
    cr_assert_eq(ctx->nkept, 3, "the context keeps %u staging blocks, not the three slots", ctx->nkept);
    cr_assert_eq(ctx->kept_bytes, (size_t)3 << 20, "kept %zu bytes", (size_t)ctx->kept_bytes);
    gpuws_buffer_destroy(b);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(ctx);
    free(src);
    free(back);
    free(want);
}

/* Transfers, copies and fills of more than 8 MiB, which the CPU backend splits over threads, at odd offsets: every
 * byte arrives, and the bytes around them are untouched. */
BACKEND_TEST(buffers, large_writes_copies_fills_and_reads_arrive_whole)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t n = (9u << 20) + 333, off = 5, size = n + 64;
    unsigned char *src = malloc(n), *back = malloc(size), *want = malloc(size);
    cr_assert(src && back && want);
    xorshift_bytes(src, n, 2463534242ull);
    gpuws_buffer *a, *b;
    TEST_OK(gpuws_buffer_create(ctx, size, &a));
    TEST_OK(gpuws_buffer_create(ctx, size, &b));
    const unsigned char f1 = 0x5a, f2 = 0xc3;
    TEST_OK(gpuws_buffer_fill(a, 0, &f1, 1, size));
    TEST_OK(gpuws_buffer_fill(b, 0, &f2, 1, size));
    TEST_OK(gpuws_buffer_write(a, off, src, n));
    TEST_OK(gpuws_buffer_copy(b, off + 3, a, off, n - 3)); /* src[0 .. n - 3) at off + 3 */
    TEST_OK(gpuws_buffer_read(a, 0, back, size));
    memset(want, f1, size);
    memcpy(want + off, src, n);
    for (size_t i = 0; i < size; i++) cr_assert_eq(back[i], want[i], "written: byte %zu", i);
    TEST_OK(gpuws_buffer_read(b, 0, back, size));
    memset(want, f2, size);
    memcpy(want + off + 3, src, n - 3);
    for (size_t i = 0; i < size; i++) cr_assert_eq(back[i], want[i], "copied: byte %zu", i);
    TEST_OK(gpuws_buffer_fill(b, 1, &f1, 1, size - 2));
    TEST_OK(gpuws_buffer_read(b, 0, back, size));
    for (size_t i = 0; i < size; i++)
        cr_assert_eq(back[i], i == 0 ? want[0] : i == size - 1 ? want[size - 1] : f1, "filled: byte %zu", i);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
    free(src);
    free(back);
    free(want);
}

/* Three events around two stretches of work on one stream: each interval is positive, the whole is the sum of its
 * parts, and the interval with the work is longer than one with nothing between its events. Every way a backend
 * records times (CUDA events, OpenCL profiling markers or device timestamps, the CPU clock) must give this. */
BACKEND_TEST(streams, event_intervals_add_up_in_stream_order)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 1 << 22 };
    gpuws_stream *s;
    gpuws_event *e[4];
    TEST_OK(gpuws_stream_create(ctx, &s));
    for (int i = 0; i < 4; i++) TEST_OK(gpuws_event_create(ctx, &e[i]));
    gpuws_buffer *a, *b;
    TEST_OK(gpuws_buffer_create(ctx, N * sizeof(float), &a));
    TEST_OK(gpuws_buffer_create(ctx, N * sizeof(float), &b));
    const float one = 1.0f;
    TEST_OK(gpuws_buffer_fill_async(s, a, 0, &one, sizeof one, N * sizeof(float)));
    TEST_OK(gpuws_event_record(e[0], s));
    for (int i = 0; i < 4; i++) TEST_OK(gpuws_vector_add(s, GPUWS_F32, N, a, a, b));
    TEST_OK(gpuws_event_record(e[1], s));
    for (int i = 0; i < 4; i++) TEST_OK(gpuws_vector_add(s, GPUWS_F32, N, b, b, a));
    TEST_OK(gpuws_event_record(e[2], s));
    TEST_OK(gpuws_event_record(e[3], s));
    TEST_OK(gpuws_event_synchronize(e[3]));
    double t01, t12, t02, t23;
    TEST_OK(gpuws_event_elapsed_ms(e[0], e[1], &t01));
    TEST_OK(gpuws_event_elapsed_ms(e[1], e[2], &t12));
    TEST_OK(gpuws_event_elapsed_ms(e[0], e[2], &t02));
    TEST_OK(gpuws_event_elapsed_ms(e[2], e[3], &t23));
    cr_assert(t01 > 0 && t12 > 0, "intervals around work: %g and %g ms", t01, t12);
    cr_assert(fabs(t02 - (t01 + t12)) <= 1e-3 + 1e-6 * t02, "%g ms is not %g + %g", t02, t01, t12);
    cr_assert(t23 >= 0 && t23 < t01 + t12, "nothing between two events took %g ms; the work %g ms", t23, t02);
    float v;
    TEST_OK(gpuws_buffer_read(a, 0, &v, sizeof v));
    cr_assert_eq(v, 4.0f, "b = a + a = 2, then a = b + b = 4");
    for (int i = 0; i < 4; i++) gpuws_event_destroy(e[i]);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(ctx);
}

/* ---- memory a stream keeps for the algorithms' drivers (core/driver_support.h) ---- */

static const gpuws__stream_key key_a = { "test_core.a" };
static const gpuws__stream_key key_b = { "test_core.b" };

/* Scratch and memo memory belong to an owner's key: two keys never share memory (a driver nested in another on the
 * same stream cannot overwrite its caller's), one key keeps its memory between requests and grows it, there is no
 * fixed number of keys, and everything goes with the stream. */
BACKEND_TEST(streams, scratch_and_memo_are_kept_per_key_and_freed_with_the_stream)
{
    gpuws_context *ctx = test_open(*kind);
    const long live = gpuws__alloc_live();
    gpuws_stream *s;
    TEST_OK(gpuws_stream_create(ctx, &s));

    gpuws_buffer *a, *b, *again;
    TEST_OK(gpuws__stream_scratch(s, &key_a, 100, &a));
    TEST_OK(gpuws__stream_scratch(s, &key_b, 100, &b));
    cr_assert_neq(a, b, "two keys were given one buffer");
    TEST_OK(gpuws__stream_scratch(s, &key_a, 50, &again));
    cr_assert_eq(again, a, "a smaller request of the same key must reuse its buffer");
    size_t size, grown;
    TEST_OK(gpuws_buffer_get_size(a, &size));
    TEST_OK(gpuws__stream_scratch(s, &key_a, size + 1, &again));
    TEST_OK(gpuws_buffer_get_size(again, &grown));
    cr_assert_geq(grown, size + 1, "key a's buffer did not grow: %zu bytes for a request of %zu", grown, size + 1);
    a = again; /* the old one is gone */
    TEST_OK(gpuws__stream_scratch(s, &key_b, 100, &again));
    cr_assert_eq(again, b, "growing key a's buffer changed key b's");

    enum { MANY = 40 };
    static const gpuws__stream_key many[MANY];
    gpuws_buffer *bufs[MANY];
    for (int i = 0; i < MANY; i++) {
        TEST_OK(gpuws__stream_scratch(s, &many[i], 16, &bufs[i]));
        cr_assert(bufs[i] != a && bufs[i] != b, "key %d was given the buffer of key a or b", i);
        for (int j = 0; j < i; j++) cr_assert_neq(bufs[i], bufs[j], "keys %d and %d share a buffer", j, i);
    }
    for (int i = 0; i < MANY; i++) {
        TEST_OK(gpuws__stream_scratch(s, &many[i], 16, &again));
        cr_assert_eq(again, bufs[i], "key %d's buffer changed when more keys were added", i);
    }

    unsigned char *m, *m2, *mb;
    TEST_OK(gpuws__stream_memo(s, &key_a, 64, (void **)&m));
    for (int i = 0; i < 64; i++) cr_assert_eq(m[i], 0, "a new memo's byte %d is %d, not zero", i, m[i]);
    memset(m, 7, 64);
    TEST_OK(gpuws__stream_memo(s, &key_b, 64, (void **)&mb));
    cr_assert_neq(mb, m, "two keys were given one memo");
    cr_assert_eq(mb[0], 0);
    TEST_OK(gpuws__stream_memo(s, &key_a, 64, (void **)&m2));
    cr_assert(m2 == m && m2[63] == 7, "key a's memo was not kept");
    TEST_FAILS(GPUWS_ERR_INTERNAL, gpuws__stream_memo(s, &key_a, 32, (void **)&m2));
    cr_assert(strstr(gpuws_last_error(), "test_core.a"), "the message names the key: %s", gpuws_last_error());

    gpuws_stream_destroy(s);
    cr_assert_eq(gpuws__alloc_live(), live, "%ld allocations outlive the stream", gpuws__alloc_live() - live);
    gpuws_context_destroy(ctx);
}

/* ---- embedded OpenCL programs (cmake/embed_cl.cmake) ---- */

#ifdef GPUWS_HAVE_OPENCL
#include "../backends/opencl/cl_sources.h"

/* A file's text split into lines (the newlines replaced by NULs). */
typedef struct {
    char *text;
    char **line; /* line[i] is line i + 1 */
    long n;
} file_lines;

static void file_lines_read(file_lines *f, const char *path)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->text = malloc((size_t)size + 1);
    cr_assert_eq(fread(f->text, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    f->text[size] = 0;
    f->line = malloc(((size_t)size + 2) * sizeof *f->line);
    f->n = 0;
    for (char *q = f->text; q <= f->text + size;) {
        f->line[f->n++] = q;
        char *nl = strchr(q, '\n');
        if (!nl) break;
        *nl = 0;
        q = nl + 1;
    }
}

static void file_lines_free(file_lines *f)
{
    free(f->text);
    free(f->line);
    *f = (file_lines){ 0 };
}

/* An algorithm's OpenCL program is the prelude, then its .cl with each #include "x.h" replaced by the header the
 * .c and .cu include too. Every line after a #line directive is the line of the file it names, so the compiler's
 * messages point into the real files; a header that is included comes in whole, and at least label's is. */
Test(embedded_opencl, every_line_is_the_line_its_line_directive_names)
{
    const char *data = getenv("GPUWS_TEST_DATA");
    if (!data) cr_skip_test("GPUWS_TEST_DATA is not set (run through ctest)");
    bool label_layout = false;
    for (size_t i = 0; i < gpuws__cl_source_count; i++) {
        const gpuws__cl_source *src = &gpuws__cl_sources[i];
        const char *p = (const char *)src->text, *end = p + src->len;
        char file[256] = "", path[1024];
        file_lines fl = { 0 };
        long line = 0, checked = 0;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
            char got[4096];
            cr_assert_lt(len, sizeof got, "%s: a line of %zu characters", src->algo, len);
            memcpy(got, p, len);
            got[len] = 0;
            p += len + (nl != NULL);
            long l;
            char name[256];
            if (sscanf(got, "#line %ld \"%255[^\"]\"", &l, name) == 2) {
                line = l;
                if (strcmp(name, file) != 0) {
                    gpuws__strlcpy(file, name, sizeof file);
                    snprintf(path, sizeof path, "%s/../../kernels/%s/%s", data, src->algo, file);
                    file_lines_free(&fl);
                    file_lines_read(&fl, path);
                }
                label_layout |= strcmp(file, "label_layout.h") == 0;
                continue;
            }
            if (!file[0]) continue; /* the prelude */
            cr_assert(line >= 1 && line <= fl.n, "%s: %s has no line %ld", src->algo, file, line);
            cr_assert_str_eq(got, fl.line[line - 1], "%s: the program's line for %s:%ld differs from the file",
                             src->algo, file, line);
            line++;
            checked++;
        }
        file_lines_free(&fl);
        cr_assert_gt(checked, 0, "%s: no line of the program names its file", src->algo);
    }
    cr_assert(label_layout, "label's program does not include label_layout.h");
}
#endif

/* GPUWS_DEVICE as a list or "all": contexts on several devices of one backend (gpuws_contexts_create); one
 * context takes the list's first device. */
Test(selection, a_gpuws_device_list_names_the_contexts)
{
    setenv("GPUWS_BACKEND", "cpu", 1);
    gpuws_context *c[4] = { NULL };
    size_t n = 99;
    const char *one[] = { NULL, "0", "all" }; /* unset, one index, all (the CPU backend has one device) */
    for (size_t i = 0; i < sizeof one / sizeof *one; i++) {
        if (one[i]) setenv("GPUWS_DEVICE", one[i], 1);
        else unsetenv("GPUWS_DEVICE");
        TEST_OK(gpuws_contexts_create(NULL, 4, c, &n));
        cr_assert_eq(n, 1, "GPUWS_DEVICE=%s: %zu contexts", one[i] ? one[i] : "<unset>", n);
        gpuws_contexts_destroy(c, n);
    }
    setenv("GPUWS_DEVICE", "0,0,0", 1); /* one device three times: three contexts */
    TEST_OK(gpuws_contexts_create(NULL, 4, c, &n));
    cr_assert_eq(n, 3, "0,0,0: %zu contexts", n);
    cr_assert(c[0] != c[1] && c[1] != c[2] && c[0] != c[2], "the contexts are not distinct");
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(backend_of(c[i]), GPUWS_BACKEND_CPU);
        size_t index = 99;
        TEST_OK(gpuws_context_get_device_index(c[i], &index));
        cr_assert_eq(index, 0, "context %zu is on device %zu", i, index);
    }
    gpuws_contexts_destroy(c, n);
    gpuws_context *ctx; /* one context: the list's first device, so "0,7" opens device 0 */
    setenv("GPUWS_DEVICE", "0,7", 1);
    TEST_OK(gpuws_context_create(&ctx, NULL));
    gpuws_context_destroy(ctx);
    setenv("GPUWS_DEVICE", "7,0", 1);
    TEST_FAILS(GPUWS_ERR_NO_DEVICE, gpuws_context_create(&ctx, NULL));
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT; /* options.device wins: one context on it */
    o.device = 0;
    TEST_OK(gpuws_contexts_create(&o, 4, c, &n));
    cr_assert_eq(n, 1, "options.device with GPUWS_DEVICE=7,0: %zu contexts", n);
    gpuws_contexts_destroy(c, n);
    unsetenv("GPUWS_DEVICE");
}

/* The index a context reports is the one it was opened with: a GPUWS_DEVICE list's contexts on devices with the same
 * gpuws_device_info are told apart by it (gpuws info lists them). */
Test(selection, a_context_reports_the_device_index_it_was_opened_with)
{
    unsetenv("GPUWS_OPENCL_PLATFORM"); /* every platform's devices, as gpuws_device_count(kind, NULL) counts them */
    static const gpuws_backend_kind kinds[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };
    for (size_t b = 0; b < sizeof kinds / sizeof *kinds; b++) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(kinds[b], &bi);
        size_t n = 0;
        if (!bi.available || gpuws_device_count(kinds[b], NULL, &n)) continue;
        for (size_t i = 0; i < n; i++) {
            gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
            o.backend = bi.name, o.device = (int)i;
            gpuws_context *ctx;
            TEST_OK(gpuws_context_create(&ctx, &o));
            size_t index = 99;
            TEST_OK(gpuws_context_get_device_index(ctx, &index));
            cr_assert_eq(index, i, "%s device %zu reports index %zu", bi.name, i, index);
            gpuws_context_destroy(ctx);
        }
    }
}

Test(selection, gpuws_device_list_errors_leave_nothing_open)
{
    setenv("GPUWS_BACKEND", "cpu", 1);
    gpuws_context *c[2] = { NULL };
    size_t n = 99;
    const char *bad[] = { "first", "0,", ",0", "0,-1", "0;1", "All" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("GPUWS_DEVICE", bad[i], 1);
        TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_contexts_create(NULL, 2, c, &n));
        cr_assert(strstr(gpuws_last_error(), "is not a device index (0, 1, ...), a list of them (0,1,...) nor all"),
                  "%s: %s", bad[i], gpuws_last_error());
        cr_assert_eq(n, 0);
        gpuws_context *ctx = (gpuws_context *)1; /* one context reads the same variable the same way */
        TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_context_create(&ctx, NULL));
        cr_assert_null(ctx);
    }
    setenv("GPUWS_DEVICE", "0,0,0", 1);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_contexts_create(NULL, 2, c, &n));
    cr_assert(strstr(gpuws_last_error(), "names 3 devices, more than 2"), "message: %s", gpuws_last_error());
    setenv("GPUWS_DEVICE", "0,7", 1); /* the second cannot open: the first is closed again */
    TEST_FAILS(GPUWS_ERR_NO_DEVICE, gpuws_contexts_create(NULL, 2, c, &n));
    cr_assert(strstr(gpuws_last_error(), "GPUWS_DEVICE='0,7': device 7"), "message: %s", gpuws_last_error());
    cr_assert_eq(n, 0);
    unsetenv("GPUWS_DEVICE");
}
