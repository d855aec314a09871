/* gpuws selftest: every benchmark workload run once per size on every selected device and checked against the
 * scalar reference, without timing. It is what compute-sanitizer runs on the GPU machine: Criterion's workers
 * cannot be followed by compute-sanitizer (it rejects their process ids), this single process can. */
#include "bench.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool listed(const char *list, const char *name)
{
    if (!list) return true;
    size_t nl = strlen(name);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == nl && !strncmp(p, name, l)) return true;
        p += l + (p[l] == ',');
    }
    return false;
}

static int selftest_usage(FILE *f, int code)
{
    fprintf(f, "usage: gpuws selftest [--backends cuda,opencl,cpu] [--algorithms LIST]\n"
               "                      [--sizes tiny,small,default,large]\n"
               "  Runs every workload once per size on every selected device and checks it against the scalar\n"
               "  reference (no timing). tiny is the tests' size, small enough for a simulator. Each option may be\n"
               "  given once; its list may not be empty.\n"
               "  Exit status: 0 all correct, 1 a result is wrong or a call fails, 2 bad usage.\n");
    return code;
}

static const struct {
    bench_size size;
    const char *name;
} size_names[] = {
    { BENCH_TINY, "tiny" }, { BENCH_SMALL, "small" }, { BENCH_DEFAULT, "default" }, { BENCH_LARGE, "large" }
};

/* True when every item of the --sizes list is tiny, small, default or large (the message printed otherwise). */
static bool sizes_known(tool_args *t, const char *list)
{
    for (const char *p = list;; p++) {
        const size_t l = strcspn(p, ",");
        bool known = false;
        for (size_t z = 0; z < sizeof size_names / sizeof size_names[0]; z++)
            known |= strlen(size_names[z].name) == l && !strncmp(p, size_names[z].name, l);
        if (!known) {
            tool_usage_error(t, "unknown size '%.*s' in --sizes (valid: tiny, small, default, large)", (int)l, p);
            return false;
        }
        if (!p[l]) return true;
        p += l;
    }
}

static int cmd_selftest(int argc, char **argv)
{
    const char *backends = NULL, *algorithms = NULL, *sizes = "small";
    tool_args ta = TOOL_ARGS_INIT("selftest");
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help")) return selftest_usage(stdout, 0);
        if (argv[i][0] == '-' && tool_once(&ta, argv[i])) return 2;
        if (!strcmp(argv[i], "--backends") && v) backends = argv[++i];
        else if (!strcmp(argv[i], "--algorithms") && v) algorithms = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && v) sizes = argv[++i];
        else return selftest_usage(stderr, 2);
        if (!*argv[i]) return tool_name(&ta, argv[i - 1], argv[i], "a comma list"), 2;
    }
    if (!sizes_known(&ta, sizes)) return 2;
    /* a name that selects nothing is a mistake, not an empty run */
    for (const char *p = backends; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(p, ","), p);
        gpuws_backend_kind k;
        if (gpuws_backend_from_name(name, &k)) {
            fprintf(stderr, "gpuws selftest: %s\n", gpuws_last_error());
            return 2;
        }
    }
    for (const char *p = algorithms; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        size_t l = strcspn(p, ",");
        bool known = false;
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++)
            known |= strlen((*wp)->algorithm) == l && !strncmp(p, (*wp)->algorithm, l);
        if (!known) {
            fprintf(stderr, "gpuws selftest: unknown algorithm '%.*s'\n", (int)l, p);
            return 2;
        }
    }
    unsigned mask = 0;
    static const char *names[] = { "cpu", "opencl", "cuda" };
    for (int k = 0; k < 3; k++)
        if (listed(backends, names[k])) mask |= 1u << k;
    bench_target targets[32];
    const char *platform = getenv("GPUWS_OPENCL_PLATFORM"); /* narrows the OpenCL devices, as for selection */
    size_t nt = bench_targets(mask, platform && *platform ? platform : NULL, targets, 32);
    int failed = 0, passed = 0;
    for (size_t t = 0; t < nt; t++) {
        gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
        o.backend = names[targets[t].backend];
        o.device = (int)targets[t].device;
        o.opencl_platform = "";
        gpuws_context *ctx;
        gpuws_status cst = gpuws_context_create(&ctx, &o);
        if (cst) {
            printf("FAIL %s: %s: %s\n", targets[t].label, gpuws_status_name(cst), gpuws_last_error());
            failed++;
            continue;
        }
        gpuws_stream *s;
        gpuws_context_get_default_stream(ctx, &s);
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++) {
            const bench_workload *w = *wp;
            if (!listed(algorithms, w->algorithm)) continue;
            for (size_t z = 0; z < sizeof size_names / sizeof size_names[0]; z++) {
                if (!listed(sizes, size_names[z].name)) continue;
                void *state = NULL;
                bench_counts c;
                memset(&c, 0, sizeof c);
                char msg[256] = "";
                gpuws_status st = w->setup(ctx, size_names[z].size, &state, &c);
                if (!st) st = w->run(state, s);
                if (!st) st = gpuws_stream_synchronize(s);
                bool ok = !st && w->check(state, msg, sizeof msg);
                if (st) snprintf(msg, sizeof msg, "%s: %s", gpuws_status_name(st), gpuws_last_error());
                if (state) w->teardown(state);
                printf("%s %s | %s %s | %s%s%s\n", ok ? "PASS" : "FAIL", targets[t].label, w->algorithm, w->variant,
                       c.size_label, ok ? "" : " | ", msg);
                fflush(stdout);
                ok ? passed++ : failed++;
            }
        }
        gpuws_context_destroy(ctx);
    }
    printf("selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : (passed ? 0 : 1);
}

GPUWS_COMMAND("selftest", "run every workload once on every device and check it against the reference", cmd_selftest)
