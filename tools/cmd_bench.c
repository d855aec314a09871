/* gpuws bench: every workload on every selected backend/device; see bench/bench.h. */
#include "bench.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuws bench [--backends cuda,opencl,cpu|all] [--platform NAME] [--algorithms LIST]\n"
               "                   [--size small|default|large] [--repeat N]\n"
               "  Runs every algorithm on every selected device, checks each result against the scalar reference\n"
               "  (a wrong result is FAILED, never timed), then times it with device events: median of N runs.\n");
}

static bool in_list(const char *list, const char *name)
{
    if (!list || !strcmp(list, "all")) return true;
    size_t nl = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == nl && strncmp(p, name, l) == 0) return true;
        p += l + (e ? 1 : 0);
    }
    return false;
}

static int cmd_bench(int argc, char **argv)
{
    const char *backends = "all", *platform = NULL, *algorithms = NULL;
    bench_size size = BENCH_DEFAULT;
    int repeat = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--backends") && v) {
            backends = v, i++;
        } else if (!strcmp(a, "--platform") && v) {
            platform = v, i++;
        } else if (!strcmp(a, "--algorithms") && v) {
            algorithms = v, i++;
        } else if (!strcmp(a, "--repeat") && v) {
            repeat = atoi(v), i++;
            if (repeat < 1) {
                fprintf(stderr, "gpuws bench: --repeat needs a positive count\n");
                return 2;
            }
        } else if (!strcmp(a, "--size") && v) {
            size = !strcmp(v, "small") ? BENCH_SMALL : !strcmp(v, "large") ? BENCH_LARGE : !strcmp(v, "default") ? BENCH_DEFAULT : (bench_size)-1;
            if ((int)size < 0) {
                fprintf(stderr, "gpuws bench: --size must be small, default or large\n");
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "gpuws bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    unsigned mask = 0;
    if (!strcmp(backends, "all")) {
        mask = 7;
    } else {
        for (const char *p = backends; *p;) {
            char name[32];
            size_t l = strcspn(p, ",");
            snprintf(name, sizeof name, "%.*s", (int)(l < 31 ? l : 31), p);
            gpuws_backend_kind k;
            if (gpuws_backend_from_name(name, &k)) return tool_fail("bench", GPUWS_ERR_UNKNOWN_BACKEND);
            mask |= 1u << k;
            p += l + (p[l] == ',');
        }
    }
    for (const char *p = algorithms; p && *p;) {
        size_t l = strcspn(p, ",");
        bool known = false;
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++)
            known |= strlen((*wp)->algorithm) == l && !strncmp(p, (*wp)->algorithm, l);
        if (!known) {
            fprintf(stderr, "gpuws bench: unknown algorithm '%.*s'; known:", (int)l, p);
            for (const bench_workload *const *wp = bench_workloads(); *wp; wp++) fprintf(stderr, " %s", (*wp)->algorithm);
            fprintf(stderr, "\n");
            return 2;
        }
        p += l + (p[l] == ',');
    }
    bench_target targets[32];
    size_t nt = bench_targets(mask, platform, targets, 32);
    if (nt == 0) {
        fprintf(stderr, "gpuws bench: no available device among the selected backends (see gpuws info)\n");
        return 1;
    }
    printf("%-60s %-11s %-9s %-12s %10s %10s %9s %9s %8s\n", "device", "algorithm", "variant", "size", "median ms",
           "min ms", "GB/s", "GFLOP/s", "% copy");
    int failed = 0;
    for (size_t t = 0; t < nt; t++) {
        gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
        o.backend = targets[t].backend == GPUWS_BACKEND_CUDA ? "cuda" : targets[t].backend == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu";
        o.device = (int)targets[t].device;
        o.opencl_platform = "";
        gpuws_context *ctx;
        gpuws_status st = gpuws_context_create(&ctx, &o);
        if (st) {
            fprintf(stderr, "%s: %s\n", targets[t].label, gpuws_last_error());
            failed++;
            continue;
        }
        double copy = 0;
        fprintf(stderr, "[%zu/%zu] %s: measuring copy bandwidth...\n", t + 1, nt, targets[t].label);
        if (bench_copy_bandwidth(ctx, &copy)) fprintf(stderr, "  copy bandwidth: %s\n", gpuws_last_error());
        printf("%-60.60s %-11s %-9s %-12s %10s %10s %9.1f %9s %8s\n", targets[t].label, "copy", "d2d", "", "", "", copy, "", "100");
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++) {
            if (!in_list(algorithms, (*wp)->algorithm)) continue;
            fprintf(stderr, "  %s %s...\n", (*wp)->algorithm, (*wp)->variant);
            bench_result r;
            bench_run((*wp), &targets[t], ctx, size, targets[t].backend == GPUWS_BACKEND_CPU ? 3 : repeat, &r);
            if (!r.ok) {
                printf("%-60.60s %-11s %-9s %-12s FAILED: %s\n", targets[t].label, r.w->algorithm, r.w->variant,
                       r.counts.size_label, r.error);
                failed++;
                continue;
            }
            double gbs = r.counts.bytes / (r.median_ms * 1e-3) / 1e9, gfl = r.counts.flops / (r.median_ms * 1e-3) / 1e9;
            printf("%-60.60s %-11s %-9s %-12s %10.4f %10.4f %9.1f %9.1f %8.1f\n", targets[t].label, r.w->algorithm,
                   r.w->variant, r.counts.size_label, r.median_ms, r.min_ms, gbs, gfl, copy > 0 ? 100 * gbs / copy : 0);
            fflush(stdout);
        }
        gpuws_context_destroy(ctx);
    }
    return failed ? 1 : 0;
}

GPUWS_COMMAND("bench", "time the algorithms on every backend/device against the device's ceilings", cmd_bench)
