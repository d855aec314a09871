/* gpuws pi N: Monte Carlo estimate of pi from N Philox samples on the selected device, with time and rate. */
#include "commands.h"
#include "gpuws/algorithms.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuws pi N [--seed S] [--repeat R]\n"
               "  Draws N points in the unit square (N up to 2^64 - 1; 100000000, 1e8 and 10^8 are all accepted) from\n"
               "  Philox4x32-10 keyed by the seed (default 0) and prints 4 * hits / N, the hit count (the same on\n"
               "  every backend and device for the same N and seed), the device time (median of R runs after a\n"
               "  warm-up, default 5) and the rate. S is a whole number from 0 to 2^64 - 1, R from 1 to 1000000.\n"
               "  Exit status: 0 done, 1 error, 2 bad usage (N included).\n");
}

/* The usage after a message saying what was wrong; exit code 2. */
static int usage_error(void)
{
    usage(stderr);
    return 2;
}

static int cmd_pi(int argc, char **argv)
{
    const char *nstr = NULL;
    uint64_t n = 0, seed = 0;
    int repeat = 5;
    tool_args t = TOOL_ARGS_INIT("pi");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x;
        const bool option = a[0] == '-' && a[1] && !tool_is_signed_number(a);
        if (option && tool_once(&t, a)) return usage_error();
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--seed")) {
            if (tool_count(&t, a, v, 0, UINT64_MAX, NULL, &seed)) return usage_error();
            i++;
        } else if (!strcmp(a, "--repeat")) {
            if (tool_count(&t, a, v, 1, TOOL_REPEAT_MAX, NULL, &x)) return usage_error();
            repeat = (int)x, i++;
        } else if (!option && !nstr) {
            nstr = a;
        } else {
            tool_bad_argument("pi", argc, argv, i);
            return usage_error();
        }
    }
    if (!nstr) return usage_error();
    if (tool_parse_count(nstr, UINT64_MAX, &n) || n == 0) {
        fprintf(stderr, "gpuws pi: N = '%s' is not a whole number of samples from 1 to 2^64 - 1\n", nstr);
        return usage_error();
    }
    gpuws_context *ctx;
    if (tool_context("pi", &ctx)) return 1;
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_buffer *hits = NULL;
    gpuws_event *e0 = NULL, *e1 = NULL;
    double *ms = calloc((size_t)repeat, sizeof *ms);
    uint64_t h = 0;
    gpuws_status st = ms ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    if (!st) st = gpuws_buffer_create(ctx, 8, &hits);
    if (!st) st = gpuws_event_create(ctx, &e0);
    if (!st) st = gpuws_event_create(ctx, &e1);
    if (!st) st = gpuws_monte_carlo_pi(NULL, 0, n < 1000 ? n : 1000, seed, hits); /* warm-up: builds the kernels */
    for (int r = 0; r < repeat && !st; r++) {
        if ((st = gpuws_event_record(e0, NULL)) || (st = gpuws_monte_carlo_pi(NULL, 0, n, seed, hits)) ||
            (st = gpuws_event_record(e1, NULL)) || (st = gpuws_event_synchronize(e1)) ||
            (st = gpuws_event_elapsed_ms(e0, e1, &ms[r])))
            break;
        if (ms[r] > 1000 && r + 1 < repeat)
            fprintf(stderr, "gpuws pi: run %d of %d took %.1f s\n", r + 1, repeat, ms[r] / 1e3);
    }
    if (!st) st = gpuws_buffer_read(hits, 0, &h, sizeof h);
    int rc = 0;
    if (st) {
        rc = tool_fail("pi", st);
    } else {
        const double med = tool_median(ms, repeat);
        const double pi = 4.0 * (double)h / (double)n, p = M_PI / 4, sd = 4 * sqrt(p * (1 - p) / (double)n);
        printf("pi ~ %.10f  (%llu of %llu samples inside, seed %llu; error %.2e = %.2f standard deviations)\n", pi,
               (unsigned long long)h, (unsigned long long)n, (unsigned long long)seed, pi - M_PI, (pi - M_PI) / sd);
        printf("%s: %.4f ms (median of %d), %.3g samples/s\n", d.name, med, repeat,
               med > 0 ? (double)n / (med * 1e-3) : 0.0);
    }
    free(ms);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    gpuws_buffer_destroy(hits);
    gpuws_context_destroy(ctx);
    return rc;
}

GPUWS_COMMAND("pi", "Monte Carlo estimate of pi from N counter-based random samples, with time and rate", cmd_pi)
