/* gpuws primes N: count (and flag) the primes below N on the selected device, with the time and the rate. */
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
    fprintf(f, "usage: gpuws primes N [--variant fast|trial] [--repeat R] [--count-only]\n"
               "  Flags every prime below N (N up to 2^31; 1000000, 1e6 and 10^6 are all accepted) on the device that\n"
               "  GPUWS_BACKEND / GPUWS_DEVICE select, as an int32 array holding each prime or 0, and prints how many\n"
               "  there are, the device time (median of R runs after a warm-up, default 5) and the rate.\n"
               "  --variant trial runs the workshop's one-thread-per-number trial division instead of the sieve.\n"
               "  --count-only counts without storing the array (for N too large for device memory).\n"
               "  R is a whole number from 1 to 1000000. Exit status: 0 done, 1 error, 2 bad usage (N included).\n");
}

/* The usage after a message saying what was wrong; exit code 2. */
static int usage_error(void)
{
    usage(stderr);
    return 2;
}

static int cmd_primes(int argc, char **argv)
{
    const char *nstr = NULL;
    gpuws_primes_variant variant = GPUWS_PRIMES_FAST;
    int repeat = 5, count_only = 0;
    tool_args t = TOOL_ARGS_INIT("primes");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x;
        const bool option = a[0] == '-' && a[1] && !tool_is_signed_number(a);
        if (option && tool_once(&t, a)) return usage_error();
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--variant")) {
            static const char *const variants[] = { "fast", "trial", NULL };
            const int k = tool_choice(&t, a, v, variants);
            if (k < 0) return usage_error();
            variant = k ? GPUWS_PRIMES_TRIAL : GPUWS_PRIMES_FAST, i++;
        } else if (!strcmp(a, "--repeat")) {
            if (tool_count(&t, a, v, 1, TOOL_REPEAT_MAX, NULL, &x)) return usage_error();
            repeat = (int)x, i++;
        } else if (!strcmp(a, "--count-only")) {
            count_only = 1;
        } else if (!option && !nstr) {
            nstr = a;
        } else {
            tool_bad_argument("primes", argc, argv, i);
            return usage_error();
        }
    }
    uint64_t nd;
    if (!nstr) return usage_error();
    if (tool_parse_count(nstr, GPUWS_PRIMES_MAX_N, &nd)) {
        fprintf(stderr, "gpuws primes: N = '%s' is not a whole number from 0 to 2^31\n", nstr);
        return usage_error();
    }
    const size_t n = (size_t)nd;

    gpuws_context *ctx;
    if (tool_context("primes", &ctx)) return 1;
    gpuws_device_info d;
    gpuws_backend_kind kind;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &kind);
    gpuws_buffer *out = NULL, *count = NULL;
    gpuws_event *e0 = NULL, *e1 = NULL;
    double *ms = calloc((size_t)repeat, sizeof *ms);
    uint64_t primes = 0;
    int rc = 0;
    gpuws_status st = ms ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    if (!st && !count_only && n && (st = gpuws_buffer_create(ctx, n * sizeof(int32_t), &out))) {
        fprintf(stderr, "gpuws primes: %s: %s (the int32 array of %zu numbers; --count-only needs none)\n",
                gpuws_status_name(st), gpuws_last_error(), n);
        rc = 1;
    }
    if (!st) st = gpuws_buffer_create(ctx, 8, &count);
    if (!st) st = gpuws_event_create(ctx, &e0);
    if (!st) st = gpuws_event_create(ctx, &e1);
    /* warm-up on a small N: builds (or loads) the kernels without repeating a long run */
    if (!st) st = gpuws_primes(NULL, variant, n < 1000 ? n : 1000, out, count);
    for (int r = 0; r < repeat && !st; r++) {
        if ((st = gpuws_event_record(e0, NULL)) || (st = gpuws_primes(NULL, variant, n, out, count)) ||
            (st = gpuws_event_record(e1, NULL)) || (st = gpuws_event_synchronize(e1)) ||
            (st = gpuws_event_elapsed_ms(e0, e1, &ms[r])))
            break;
        if (ms[r] > 1000 && r + 1 < repeat)
            fprintf(stderr, "gpuws primes: run %d of %d took %.1f s\n", r + 1, repeat, ms[r] / 1e3);
    }
    if (!st) st = gpuws_buffer_read(count, 0, &primes, sizeof primes);
    if (st) {
        if (!rc) rc = tool_fail("primes", st);
    } else {
        const double med = tool_median(ms, repeat);
        printf("%llu primes below %zu\n", (unsigned long long)primes, n);
        printf("%s variant on %s (%s): %.4f ms (median of %d), %.3g numbers/s%s\n",
               variant == GPUWS_PRIMES_TRIAL ? "trial" : "fast", d.name,
               kind == GPUWS_BACKEND_CUDA     ? "cuda"
               : kind == GPUWS_BACKEND_OPENCL ? "opencl"
                                              : "cpu",
               med, repeat, med > 0 ? (double)n / (med * 1e-3) : 0.0, count_only ? ", count only" : "");
    }
    free(ms);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    gpuws_buffer_destroy(out);
    gpuws_buffer_destroy(count);
    gpuws_context_destroy(ctx);
    return rc;
}

GPUWS_COMMAND("primes", "count the primes below N (sieve or the workshop's trial division), with time and rate",
              cmd_primes)
