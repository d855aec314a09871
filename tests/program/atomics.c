/* The dialect's atomics on global and on block-shared memory: every gw_atomic_* returns the value before its
 * operation and no update is lost, with many work-items on one address. 64-bit forms where GW_HAS_ATOMIC64 says
 * the device has them (always on CUDA and the CPU backend). */
#include "../test_program.h"

#include <stdint.h>
#include <stdio.h>

/* The operations of both kernels on c (u32[5]), ci (i32[3]) and cf (f32[1]), by work-item number w. Each
 * work-item's returned values go to tickets, cas_tickets, swapped and fold at index g. */
#define ATOMIC_OPS                                                                                                     \
    "    const gw_i32 v = (gw_i32)((w * 7919) % 1001) - 500;\n"                                                        \
    "    const gw_u32 u = (gw_u32)w * 2654435761u;\n"                                                                  \
    "    tickets[g] = gw_atomic_add_u32(&c[0], 1);\n"                                                                  \
    "    gw_atomic_add_i32(&ci[0], (gw_i32)(w % 7) - 3);\n"                                                            \
    "    gw_atomic_min_i32(&ci[1], v);\n"                                                                              \
    "    gw_atomic_max_i32(&ci[2], v);\n"                                                                              \
    "    gw_atomic_min_u32(&c[1], u);\n"                                                                               \
    "    gw_atomic_max_u32(&c[2], u);\n"                                                                               \
    "    gw_u32 old = 0;\n"                                                                                            \
    "    for (;;) { /* an increment by compare-and-swap */\n"                                                          \
    "        const gw_u32 seen = gw_atomic_cas_u32(&c[3], old, old + 1);\n"                                            \
    "        if (seen == old) break;\n"                                                                                \
    "        old = seen;\n"                                                                                            \
    "    }\n"                                                                                                          \
    "    cas_tickets[g] = old;\n"                                                                                      \
    "    swapped[g] = gw_atomic_xchg_u32(&c[4], (gw_u32)w + 1000u);\n"                                                 \
    "    fold[g] = gw_atomic_add_f32(&cf[0], 1.0f);\n"

#define ATOMIC_OUTPUTS                                                                                                 \
    "GW_GLOBAL gw_u32 *tickets, GW_GLOBAL gw_u32 *cas_tickets, GW_GLOBAL gw_u32 *swapped, GW_GLOBAL gw_f32 *fold"

static const char *atomics_source =
    "GW_KERNEL void global_atomics(GW_GLOBAL gw_u32 *c, GW_GLOBAL gw_i32 *ci, GW_GLOBAL gw_f32 *cf, " ATOMIC_OUTPUTS
    ")\n"
    "{\n"
    "    const gw_u64 g = gw_global_idx(0), w = g;\n" ATOMIC_OPS "}\n"
    "GW_KERNEL void shared_atomics(GW_GLOBAL gw_u32 *c_out, GW_GLOBAL gw_i32 *ci_out, GW_GLOBAL gw_f32 "
    "*cf_out, " ATOMIC_OUTPUTS ")\n"
    "{\n"
    "    GW_SHARED gw_u32 c[5];\n"
    "    GW_SHARED gw_i32 ci[3];\n"
    "    GW_SHARED gw_f32 cf[1];\n"
    "    const gw_u64 g = gw_global_idx(0), w = gw_thread_idx(0), b = gw_block_idx(0);\n"
    "    if (w == 0) {\n"
    "        c[0] = 0; c[1] = 0xffffffffu; c[2] = 0; c[3] = 0; c[4] = 7777u;\n"
    "        ci[0] = 0; ci[1] = 2147483647; ci[2] = -2147483647 - 1; cf[0] = 0.0f;\n"
    "    }\n"
    "    gw_barrier();\n" ATOMIC_OPS "    gw_barrier();\n"
    "    if (w == 0) {\n"
    "        for (int k = 0; k < 5; k++) c_out[b * 5 + k] = c[k];\n"
    "        for (int k = 0; k < 3; k++) ci_out[b * 3 + k] = ci[k];\n"
    "        cf_out[b] = cf[0];\n"
    "    }\n"
    "}\n";

/* Asserts v[0..n) is a permutation of base, base+1, ..., base+n-1. */
static void expect_permutation(const uint32_t *v, uint32_t n, uint32_t base, const char *what)
{
    unsigned char *seen = calloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert(v[i] >= base && v[i] - base < n, "%s: value %u at %u is out of [%u, %u)", what, v[i], i, base,
                  base + n);
        cr_assert(!seen[v[i] - base], "%s: value %u twice: an update was lost", what, v[i]);
        seen[v[i] - base] = 1;
    }
    free(seen);
}

/* The results of the work-items w = 0..n-1 that updated one set of counters. */
static void expect_counters(const uint32_t *c, const int32_t *ci, float cf, const uint32_t *tickets,
                            const uint32_t *cas_tickets, const uint32_t *swapped, const float *fold, uint32_t n,
                            const char *where)
{
    int32_t sum = 0, mn = INT32_MAX, mx = INT32_MIN;
    uint32_t umn = UINT32_MAX, umx = 0;
    for (uint32_t w = 0; w < n; w++) {
        const int32_t v = (int32_t)((w * 7919u) % 1001u) - 500;
        const uint32_t u = w * 2654435761u;
        sum += (int32_t)(w % 7) - 3;
        mn = v < mn ? v : mn, mx = v > mx ? v : mx;
        umn = u < umn ? u : umn, umx = u > umx ? u : umx;
    }
    cr_assert_eq(c[0], n, "%s: add_u32 counted %u of %u", where, c[0], n);
    cr_assert_eq(ci[0], sum, "%s: add_i32 %d, want %d", where, ci[0], sum);
    cr_assert_eq(ci[1], mn, "%s: min_i32 %d, want %d", where, ci[1], mn);
    cr_assert_eq(ci[2], mx, "%s: max_i32 %d, want %d", where, ci[2], mx);
    cr_assert_eq(c[1], umn, "%s: min_u32 %u, want %u", where, c[1], umn);
    cr_assert_eq(c[2], umx, "%s: max_u32 %u, want %u", where, c[2], umx);
    cr_assert_eq(c[3], n, "%s: cas_u32 counted %u of %u", where, c[3], n);
    cr_assert_eq(cf, (float)n, "%s: add_f32 summed %g, want %u", where, (double)cf, n);
    expect_permutation(tickets, n, 0, "add_u32's returned values");
    expect_permutation(cas_tickets, n, 0, "cas_u32's returned values");
    /* xchg: the values returned plus the one left are the first value and every value written */
    uint32_t *all = malloc((n + 1) * sizeof *all);
    memcpy(all, swapped, n * sizeof *all);
    all[n] = c[4];
    bool initial = false;
    for (uint32_t i = 0; i <= n; i++)
        if (all[i] == 7777u) all[i] = 1000u + n, initial = true; /* stands for the initial value in the check */
    cr_assert(initial, "%s: xchg_u32 never returned the initial value", where);
    expect_permutation(all, n + 1, 1000, "xchg_u32's returned and final values");
    free(all);
    uint32_t *folds = malloc(n * sizeof *folds);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(fold[i], (float)(uint32_t)fold[i], "%s: add_f32 returned %g", where, (double)fold[i]);
        folds[i] = (uint32_t)fold[i];
    }
    expect_permutation(folds, n, 0, "add_f32's returned values");
    free(folds);
}

BACKEND_TEST(program, atomics_on_global_and_shared_memory_lose_no_update)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 64, BLOCKS = 12, N = B * BLOCKS };
    gpuws_program *p = test_build(ctx, atomics_source);
    gpuws_buffer *c = test_buffer(ctx, BLOCKS * 5 * 4), *ci = test_buffer(ctx, BLOCKS * 3 * 4),
                 *cf = test_buffer(ctx, BLOCKS * 4), *tickets = test_buffer(ctx, N * 4), *cas = test_buffer(ctx, N * 4),
                 *swapped = test_buffer(ctx, N * 4), *fold = test_buffer(ctx, N * 4);
    const uint32_t c0[5] = { 0, UINT32_MAX, 0, 0, 7777u };
    const int32_t ci0[3] = { 0, INT32_MAX, INT32_MIN };
    const float cf0 = 0.0f;
    TEST_OK(gpuws_buffer_write(c, 0, c0, sizeof c0));
    TEST_OK(gpuws_buffer_write(ci, 0, ci0, sizeof ci0));
    TEST_OK(gpuws_buffer_write(cf, 0, &cf0, 4));
    gpuws_arg args[] = { gpuws_arg_buffer(c),       gpuws_arg_buffer(ci),  gpuws_arg_buffer(cf),
                         gpuws_arg_buffer(tickets), gpuws_arg_buffer(cas), gpuws_arg_buffer(swapped),
                         gpuws_arg_buffer(fold) };

    /* global: all N work-items on one set of counters */
    test_launch(test_kernel(p, "global_atomics"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 7);
    uint32_t *hc = test_download(c, BLOCKS * 5 * 4), *ht = test_download(tickets, N * 4),
             *hcas = test_download(cas, N * 4), *hs = test_download(swapped, N * 4);
    int32_t *hci = test_download(ci, BLOCKS * 3 * 4);
    float *hcf = test_download(cf, BLOCKS * 4), *hf = test_download(fold, N * 4);
    expect_counters(hc, hci, hcf[0], ht, hcas, hs, hf, N, "global memory");
    test_check_guard(tickets, N * 4, "tickets");

    /* shared: each block on its own counters */
    test_launch(test_kernel(p, "shared_atomics"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 7);
    free(hc), free(ht), free(hcas), free(hs), free(hci), free(hcf), free(hf);
    hc = test_download(c, BLOCKS * 5 * 4), ht = test_download(tickets, N * 4), hcas = test_download(cas, N * 4);
    hs = test_download(swapped, N * 4), hci = test_download(ci, BLOCKS * 3 * 4), hcf = test_download(cf, BLOCKS * 4);
    hf = test_download(fold, N * 4);
    for (int b = 0; b < BLOCKS; b++) {
        char where[64];
        snprintf(where, sizeof where, "shared memory of block %d", b);
        expect_counters(hc + b * 5, hci + b * 3, hcf[b], ht + b * B, hcas + b * B, hs + b * B, hf + b * B, B, where);
    }
    test_check_guard(c, BLOCKS * 5 * 4, "c");
    free(hc), free(ht), free(hcas), free(hs), free(hci), free(hcf), free(hf);
    gpuws_buffer *bufs[] = { c, ci, cf, tickets, cas, swapped, fold };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gpuws_buffer_destroy(bufs[i]);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}

static const char *atomics64_source =
    "GW_KERNEL void atomics64(GW_GLOBAL gw_u64 *c, GW_GLOBAL gw_i64 *ci, GW_GLOBAL gw_u64 *tickets,\n"
    "                         GW_GLOBAL gw_u64 *swapped, GW_GLOBAL gw_u32 *has)\n"
    "{\n"
    "    const gw_u64 g = gw_global_idx(0);\n"
    "#ifdef GW_HAS_ATOMIC64\n"
    "    if (g == 0) has[0] = 1;\n"
    "    gw_atomic_add_u64(&c[0], (gw_u64)1 << 33);\n"
    "    gw_atomic_add_i64(&ci[0], -((gw_i64)1 << 35));\n"
    "    gw_u64 old = 0;\n"
    "    for (;;) {\n"
    "        const gw_u64 seen = gw_atomic_cas_u64(&c[1], old, old + ((gw_u64)1 << 32));\n"
    "        if (seen == old) break;\n"
    "        old = seen;\n"
    "    }\n"
    "    tickets[g] = old;\n"
    "    swapped[g] = gw_atomic_xchg_u64(&c[2], (g << 40) | g);\n"
    "#else\n"
    "    if (g == 0) has[0] = 0;\n"
    "#endif\n"
    "}\n";

BACKEND_TEST(program, atomics_64_bit_under_GW_HAS_ATOMIC64)
{
    gpuws_context *ctx = test_open(*kind);
    enum { B = 32, BLOCKS = 8, N = B * BLOCKS };
    gpuws_program *p = test_build(ctx, atomics64_source);
    gpuws_buffer *c = test_buffer(ctx, 3 * 8), *ci = test_buffer(ctx, 8), *tickets = test_buffer(ctx, N * 8),
                 *swapped = test_buffer(ctx, N * 8), *has = test_buffer(ctx, 4);
    const uint64_t c0[3] = { 5, 0, UINT64_MAX };
    const int64_t ci0 = 3;
    TEST_OK(gpuws_buffer_write(c, 0, c0, sizeof c0));
    TEST_OK(gpuws_buffer_write(ci, 0, &ci0, 8));
    gpuws_arg args[] = { gpuws_arg_buffer(c), gpuws_arg_buffer(ci), gpuws_arg_buffer(tickets),
                         gpuws_arg_buffer(swapped), gpuws_arg_buffer(has) };
    test_launch(test_kernel(p, "atomics64"), CFG(BLOCKS, 1, 1, B, 1, 1), args, 5);
    uint32_t h;
    TEST_OK(gpuws_buffer_read(has, 0, &h, 4));
    cr_assert(h == 0 || h == 1, "the kernel ran (has = 0x%x)", h);
    if (*kind != GPUWS_BACKEND_OPENCL) cr_assert_eq(h, 1, "%s defines GW_HAS_ATOMIC64", test_backend_name(*kind));
    if (h) {
        uint64_t hc[3], *ht = test_download(tickets, N * 8), *hs = test_download(swapped, N * 8);
        int64_t hci;
        TEST_OK(gpuws_buffer_read(c, 0, hc, sizeof hc));
        TEST_OK(gpuws_buffer_read(ci, 0, &hci, 8));
        cr_assert_eq(hc[0], 5 + ((uint64_t)N << 33), "add_u64: %llu", (unsigned long long)hc[0]);
        cr_assert_eq(hci, 3 - ((int64_t)N << 35), "add_i64: %lld", (long long)hci);
        cr_assert_eq(hc[1], (uint64_t)N << 32, "cas_u64 counted %llu", (unsigned long long)(hc[1] >> 32));
        unsigned char seen[N + 1] = { 0 };
        for (int i = 0; i < N; i++) {
            cr_assert_eq(ht[i] & 0xffffffffu, 0, "cas_u64 returned %llx", (unsigned long long)ht[i]);
            cr_assert(ht[i] >> 32 < N && !seen[ht[i] >> 32], "cas_u64's returned values are 0, 1, ... << 32 once each");
            seen[ht[i] >> 32] = 1;
        }
        memset(seen, 0, sizeof seen);
        for (int i = 0; i <= N; i++) { /* the xchg chain: the initial value and every value written, once each */
            const uint64_t v = i < N ? hs[i] : hc[2];
            const uint64_t slot = v == UINT64_MAX ? N : (v & 0xffffffffffu);
            cr_assert(slot <= N && (v == UINT64_MAX || v == ((slot << 40) | slot)) && !seen[slot],
                      "xchg_u64 value %llx", (unsigned long long)v);
            seen[slot] = 1;
        }
        free(ht);
        free(hs);
    } else {
        cr_log_info("%s has no 64-bit atomics (GW_HAS_ATOMIC64 undefined)", test_device(ctx).name);
    }
    gpuws_buffer *bufs[] = { c, ci, tickets, swapped, has };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gpuws_buffer_destroy(bufs[i]);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
}
