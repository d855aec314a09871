/* gpuws matmul M N K: C = A·B on random matrices, the result checked against a higher-precision oracle, the
 * product timed with device events and its rate printed. */
#include "commands.h"
#include "gpuws/algorithms.h"
#include "matmul/matmul_ref.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpuws matmul M N K [--dtype f32|f64] [--variant tiled|shared|naive] [--repeat N] [--seed S]\n"
            "  C (MxN) = A (MxK) . B (KxN), row-major, with A and B uniform in [-1, 1) from the seed (default 1).\n"
            "  Prints corners and the sum of C, how far 1024 sampled elements plus the last row and column lie from\n"
            "  a higher-precision oracle (as a fraction of the error bound, see docs/algorithms/matmul.md), and the\n"
            "  median time of N timed runs (default 10) after one checked run, in ms, GFLOP/s (2MNK) and GB/s.\n"
            "  M, N and K are whole numbers (1e3 and 2^10 forms too), --repeat from 1 to 1000000, --seed from 0 to\n"
            "  2^64 - 1. Device: GPUWS_BACKEND, GPUWS_DEVICE, GPUWS_OPENCL_PLATFORM (see gpuws info).\n"
            "  Exit status: 0 done, 1 a wrong result or an error, 2 bad usage.\n");
}

typedef struct {
    gpuws_context *ctx;
    gpuws_buffer *a, *b, *c;
    gpuws_event *e0, *e1;
    void *ha, *hb, *hc;
    double *times;
} mm_run;

static void release(mm_run *r)
{
    gpuws_buffer_destroy(r->a);
    gpuws_buffer_destroy(r->b);
    gpuws_buffer_destroy(r->c);
    gpuws_event_destroy(r->e0);
    gpuws_event_destroy(r->e1);
    gpuws_context_destroy(r->ctx);
    free(r->ha);
    free(r->hb);
    free(r->hc);
    free(r->times);
}

/* *out = a·b·c unless that overflows size_t. */
static bool mul3(size_t a, size_t b, size_t c, size_t *out)
{
    if ((b && a > SIZE_MAX / b) || (c && a * b > SIZE_MAX / c)) return false;
    *out = a * b * c;
    return true;
}

static void fill(void *x, gpuws_dtype dt, size_t count, uint64_t seed)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        const double v = (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        if (dt == GPUWS_F32) ((float *)x)[i] = (float)v;
        else ((double *)x)[i] = v;
    }
}

/* Allocates, uploads, runs once (checked) and `repeat` times (timed); fills times. 0 or an exit code. */
static int run(mm_run *r, gpuws_dtype dt, gpuws_matmul_variant v, size_t m, size_t n, size_t k, int repeat,
               uint64_t seed)
{
    const size_t es = gpuws_dtype_size(dt);
    size_t mk, kn, mn;
    if (!mul3(m, k, es, &mk) || !mul3(k, n, es, &kn) || !mul3(m, n, es, &mn)) {
        fprintf(stderr, "gpuws matmul: %zu x %zu x %zu matrices are too large to address\n", m, n, k);
        return 1;
    }
    /* More than the machine's memory is refused with the sizes before malloc is asked (which could only fail) */
    const double need = (double)mk + (double)kn + (double)mn;
    const double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && need > have) {
        fprintf(stderr,
                "gpuws matmul: A, B and C of %zu x %zu x %zu take %.3g GB of host memory; this machine has %.3g GB\n",
                m, n, k, need / 1e9, have / 1e9);
        return 1;
    }
    r->ha = malloc(mk ? mk : 1), r->hb = malloc(kn ? kn : 1), r->hc = malloc(mn ? mn : 1);
    r->times = malloc((size_t)repeat * sizeof *r->times);
    if (!r->ha || !r->hb || !r->hc || !r->times) {
        fprintf(stderr, "gpuws matmul: out of host memory for %zu x %zu x %zu\n", m, n, k);
        return 1;
    }
    fill(r->ha, dt, mk / es, seed);
    fill(r->hb, dt, kn / es, seed ^ 0x5555555555555555ULL);
    gpuws_status st;
    /* buffers of at least one byte: a valid handle even for an empty matrix */
    if ((st = gpuws_buffer_create(r->ctx, mk ? mk : 1, &r->a)) ||
        (st = gpuws_buffer_create(r->ctx, kn ? kn : 1, &r->b)) ||
        (st = gpuws_buffer_create(r->ctx, mn ? mn : 1, &r->c)) || (st = gpuws_buffer_write(r->a, 0, r->ha, mk)) ||
        (st = gpuws_buffer_write(r->b, 0, r->hb, kn)) || (st = gpuws_event_create(r->ctx, &r->e0)) ||
        (st = gpuws_event_create(r->ctx, &r->e1)))
        return tool_fail("matmul", st);
    fprintf(stderr, "gpuws matmul: first (checked) run...\n");
    if ((st = gpuws_matmul_ex(NULL, v, dt, m, n, k, r->a, r->b, r->c)) || (st = gpuws_buffer_read(r->c, 0, r->hc, mn)))
        return tool_fail("matmul", st);
    fprintf(stderr, "gpuws matmul: %d timed run(s)...\n", repeat);
    for (int i = 0; i < repeat; i++) {
        double ms;
        if ((st = gpuws_event_record(r->e0, NULL)) || (st = gpuws_matmul_ex(NULL, v, dt, m, n, k, r->a, r->b, r->c)) ||
            (st = gpuws_event_record(r->e1, NULL)) || (st = gpuws_event_synchronize(r->e1)) ||
            (st = gpuws_event_elapsed_ms(r->e0, r->e1, &ms)))
            return tool_fail("matmul", st);
        r->times[i] = ms;
    }
    return 0;
}

/* The usage after a message saying what was wrong; exit code 2. */
static int usage_error(void)
{
    usage(stderr);
    return 2;
}

static int cmd_matmul(int argc, char **argv)
{
    uint64_t dims[3], nd = 0;
    gpuws_dtype dt = GPUWS_F32;
    gpuws_matmul_variant v = GPUWS_MATMUL_TILED;
    int repeat = 10;
    uint64_t seed = 1;
    tool_args t = TOOL_ARGS_INIT("matmul");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        const bool option = a[0] == '-' && a[1] && !tool_is_signed_number(a);
        uint64_t x;
        int k;
        if (option && tool_once(&t, a)) return usage_error();
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--dtype")) {
            static const char *const dtypes[] = { "f32", "f64", NULL };
            if ((k = tool_choice(&t, a, val, dtypes)) < 0) return usage_error();
            dt = k ? GPUWS_F64 : GPUWS_F32, i++;
        } else if (!strcmp(a, "--variant")) {
            static const char *const variants[] = { "tiled", "naive", "shared", NULL };
            if ((k = tool_choice(&t, a, val, variants)) < 0) return usage_error();
            v = k == 0 ? GPUWS_MATMUL_TILED : k == 1 ? GPUWS_MATMUL_NAIVE : GPUWS_MATMUL_SHARED, i++;
        } else if (!strcmp(a, "--repeat")) {
            if (tool_count(&t, a, val, 1, TOOL_REPEAT_MAX, NULL, &x)) return usage_error();
            repeat = (int)x, i++;
        } else if (!strcmp(a, "--seed")) {
            if (tool_count(&t, a, val, 0, UINT64_MAX, NULL, &seed)) return usage_error();
            i++;
        } else if (!option && nd < 3) {
            static const char *const names[] = { "M", "N", "K" };
            if (tool_parse_count(a, SIZE_MAX, &dims[nd])) {
                fprintf(stderr, "gpuws matmul: %s = '%s' is not a whole number from 0 to 2^64 - 1\n", names[nd], a);
                return usage_error();
            }
            nd++;
        } else {
            tool_bad_argument("matmul", argc, argv, i);
            return usage_error();
        }
    }
    if (nd != 3) {
        fprintf(stderr, "gpuws matmul: need the three sizes M N K\n");
        return usage_error();
    }
    const size_t m = dims[0], n = dims[1], k = dims[2];
    mm_run r = { 0 };
    if (tool_context("matmul", &r.ctx)) return 1;
    gpuws_device_info d;
    gpuws_backend_kind kind;
    gpuws_backend_info bi;
    gpuws_context_get_device_info(r.ctx, &d);
    gpuws_context_get_backend(r.ctx, &kind);
    gpuws_backend_get_info(kind, &bi);
    int rc = run(&r, dt, v, m, n, k, repeat, seed);
    if (rc) {
        release(&r);
        return rc;
    }
    printf("matmul %zu x %zu x %zu %s %s on %s | %s\n", m, n, k, gpuws_dtype_name(dt),
           v == GPUWS_MATMUL_TILED    ? "tiled"
           : v == GPUWS_MATMUL_SHARED ? "shared"
                                      : "naive",
           bi.name, d.name);
    int bad = 0;
    if (m && n) {
        double sum = 0, worst;
        for (size_t i = 0; i < m * n; i++) sum += dt == GPUWS_F32 ? (double)((float *)r.hc)[i] : ((double *)r.hc)[i];
#define AT(i, j) (dt == GPUWS_F32 ? (double)((float *)r.hc)[(i)*n + (j)] : ((double *)r.hc)[(i)*n + (j)])
        printf("  C[0][0] = %.9g, C[0][%zu] = %.9g, C[%zu][0] = %.9g, C[%zu][%zu] = %.9g, sum = %.9g\n", AT(0, 0),
               n - 1, AT(0, n - 1), m - 1, AT(m - 1, 0), m - 1, n - 1, AT(m - 1, n - 1), sum);
#undef AT
        char msg[256] = "";
        bad = gpuws_matmul_check_sampled(dt == GPUWS_F64, r.ha, r.hb, r.hc, m, n, k, 1024, seed, &worst, msg,
                                         sizeof msg) != 0;
        printf("  check: sampled elements (1024 random, the last row and column) within %.3g of the error bound%s%s\n",
               worst, bad ? ": WRONG, " : "", msg);
    } else {
        printf("  C is empty (%zu x %zu)\n", m, n);
    }
    const double ms = tool_median(r.times, repeat);
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    const double bytes = ((double)m * k + (double)k * n + (double)m * n) * gpuws_dtype_size(dt);
    printf("  time: %.4f ms (median of %d, min %.4f), %.1f GFLOP/s, %.1f GB/s\n", ms, repeat, r.times[0],
           ms > 0 ? flops / (ms * 1e-3) / 1e9 : 0.0, ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0);
    release(&r);
    if (bad) fprintf(stderr, "gpuws matmul: the result is outside the error bound\n");
    return bad;
}

GPUWS_COMMAND("matmul", "C = A.B on random matrices: result, check, time and rate", cmd_matmul)
