/* gpuws bench: the bench's own logic (never a time).
 *
 * - The reports: the JSON is valid (checked by a strict syntax checker written here, independent of the bench's
 *   reader) and complete (every row has every key, every target its ceilings), the CSV has the same columns, the
 *   SVG's tags balance; all from the real `gpuws` binary on the built-in workloads at small sizes.
 * - Correct before timed: a workload whose result is wrong is FAILED, shown as such, and run exactly once (the
 *   checked run), never timed; a setup error is FAILED with the status named.
 * - Clear errors: unknown backend / algorithm / size / count → exit 2 and a message naming it.
 * - The derived columns from known inputs: roofline fraction and binding side, speed-up over the CPU backend's row,
 *   OpenCL/CUDA ratio only for the same device; --compare pairs peer rows with the best gpuws row per device.
 * The FMA-rate kernel behind the compute ceiling has its own suite (test_peak.c). */
#include "support.h"
#include "json.h"
#include "report.h" /* bench.h and bench_fmt4 */

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a strict JSON syntax checker (RFC 8259), independent of bench/json.c --------------------------------- */

static const char *jc_value(const char *p, int depth);

static const char *jc_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
    return p;
}

static const char *jc_string(const char *p)
{
    if (*p++ != '"') return NULL;
    for (;;) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"') return p;
        if (c < 0x20) return NULL; /* includes the end of the text */
        if (c != '\\') continue;
        c = (unsigned char)*p++;
        if (c == 'u') {
            for (int i = 0; i < 4; i++, p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) return NULL;
        } else if (!strchr("\"\\/bfnrt", c) || c == 0) {
            return NULL;
        }
    }
}

static const char *jc_digits(const char *p)
{
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
    return p;
}

static const char *jc_number(const char *p)
{
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (!(p = jc_digits(p))) return NULL;
    if (*p == '.' && !(p = jc_digits(p + 1))) return NULL;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(p = jc_digits(p))) return NULL;
    }
    return p;
}

static const char *jc_container(const char *p, char close, int depth)
{
    p = jc_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (!(p = jc_string(jc_ws(p)))) return NULL;
            p = jc_ws(p);
            if (*p++ != ':') return NULL;
        }
        if (!(p = jc_value(p, depth + 1))) return NULL;
        p = jc_ws(p);
        if (*p == close) return p + 1;
        if (*p++ != ',') return NULL;
    }
}

static const char *jc_value(const char *p, int depth)
{
    if (depth > 100) return NULL;
    p = jc_ws(p);
    if (*p == '{') return jc_container(p, '}', depth);
    if (*p == '[') return jc_container(p, ']', depth);
    if (*p == '"') return jc_string(p);
    if (!strncmp(p, "true", 4)) return p + 4;
    if (!strncmp(p, "false", 5)) return p + 5;
    if (!strncmp(p, "null", 4)) return p + 4;
    return jc_number(p);
}

static bool json_valid(const char *text)
{
    const char *end = jc_value(text, 0);
    return end && *jc_ws(end) == 0;
}

/* ---- an XML well-formedness check good enough for our SVG: every tag closed in order ---------------------- */

static bool xml_balanced(const char *s, char *why, size_t n)
{
    char stack[64][32];
    int depth = 0;
    for (const char *p = s; (p = strchr(p, '<'));) {
        if (!strncmp(p, "<?", 2)) {
            p = strstr(p, "?>");
            if (!p) break;
            continue;
        }
        if (!strncmp(p, "<!--", 4)) {
            p = strstr(p, "-->");
            if (!p) break;
            continue;
        }
        const bool closing = p[1] == '/';
        const char *name = p + 1 + closing, *end = strchr(p, '>');
        if (!end) {
            snprintf(why, n, "unterminated tag");
            return false;
        }
        size_t l = strcspn(name, " \t\n/>");
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != l || strncmp(stack[depth - 1], name, l)) {
                snprintf(why, n, "</%.*s> closes <%s>", (int)l, name, depth ? stack[depth - 1] : "(nothing)");
                return false;
            }
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 64 || l >= 32) {
                snprintf(why, n, "too deep");
                return false;
            }
            snprintf(stack[depth++], 32, "%.*s", (int)l, name);
        }
        p = end;
    }
    for (const char *p = s; (p = strchr(p, '&')); p++)
        if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4) && strncmp(p, "&quot;", 6)) {
            snprintf(why, n, "bare '&'");
            return false;
        }
    if (depth) snprintf(why, n, "<%s> never closed", stack[depth - 1]);
    return depth == 0;
}

/* ---- helpers ---------------------------------------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char tmpdir[PATH_MAX];
static const char *tmp_path(const char *name)
{
    static char paths[8][PATH_MAX + 32];
    static int k;
    if (!tmpdir[0]) test_dir_make("test-bench", tmpdir, sizeof tmpdir);
    char *p = paths[k++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    return p;
}

/* Each test's files go with it (every test runs in a process of its own, its tmpdir made on first use). */
static void tmp_remove(void)
{
    if (tmpdir[0]) test_dir_remove(tmpdir);
    tmpdir[0] = 0;
}

TestSuite(bench, .fini = tmp_remove);

static void parse_json_file(const char *path, json_value *doc)
{
    char *text = test_read_file(path);
    cr_assert(json_valid(text), "%s is not valid JSON:\n%.2000s", path, text);
    char err[160];
    cr_assert_eq(json_parse(text, doc, err, sizeof err), 0, "%s", err);
    free(text);
}

/* The gpuws binary: ctest passes its path in GPUWS_CLI; by hand, it lies next to the tests' folder. */
static const char *cli_path(void)
{
    static char path[4096];
    const char *env = getenv("GPUWS_CLI");
    if (env && *env) return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    cr_assert(n > 0, "GPUWS_CLI is not set and /proc/self/exe cannot be read");
    path[n] = 0;
    char *slash = strrchr(path, '/');
    snprintf(slash, 32, "/../tools/gpuws");
    return path;
}

/* Runs `gpuws bench ARGS` with stdout and stderr into *output; returns the exit status. */
static int run_cli(const char *args, char **output)
{
    char cmd[8192];
    const char *log = tmp_path("cli.log");
    snprintf(cmd, sizeof cmd, "'%s' bench %s >'%s' 2>&1", cli_path(), args, log);
    int st = system(cmd);
    cr_assert(st != -1 && WIFEXITED(st), "could not run: %s", cmd);
    *output = test_read_file(log);
    return WEXITSTATUS(st);
}

/* The backends the bench tests ask for: cpu, and opencl where it is available (or required). */
static const char *test_bench_backends(void)
{
    gpuws_backend_info bi;
    gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi);
    if (!bi.available && test_is_required("opencl")) cr_assert_fail("opencl is required but %s", bi.reason);
    return bi.available ? "cpu,opencl" : "cpu";
}

/* ---- test-only workloads: a copy, right and deliberately wrong, and a setup that fails ---------------------- */

enum { SELFTEST_N = 1000 };
static int runs_right, runs_wrong;

typedef struct {
    float host[SELFTEST_N];
    gpuws_buffer *src, *dst;
    int *runs;
} selftest_state;

static gpuws_status selftest_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, int *runs)
{
    (void)size;
    selftest_state *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    *state = s;
    s->runs = runs;
    test_fill_uniform_f32(s->host, SELFTEST_N, 42, -1, 1);
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, sizeof s->host, &s->src)) ||
        (st = gpuws_buffer_create(ctx, sizeof s->host, &s->dst)) ||
        (st = gpuws_buffer_write(s->src, 0, s->host, sizeof s->host)))
        return st;
    c->bytes = 2.0 * sizeof s->host;
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%d f32", SELFTEST_N);
    return GPUWS_OK;
}

static gpuws_status right_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return selftest_setup(ctx, size, state, c, &runs_right);
}

static gpuws_status wrong_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return selftest_setup(ctx, size, state, c, &runs_wrong);
}

static gpuws_status failing_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    (void)ctx, (void)size, (void)state, (void)c;
    return GPUWS_ERR_UNSUPPORTED;
}

static gpuws_status right_run(void *p, gpuws_stream *s)
{
    selftest_state *st = p;
    (*st->runs)++;
    return gpuws_buffer_copy_async(s, st->dst, 0, st->src, 0, sizeof st->host);
}

/* off by one element: dst[i] = src[i + 1], the last element never written */
static gpuws_status wrong_run(void *p, gpuws_stream *s)
{
    selftest_state *st = p;
    (*st->runs)++;
    return gpuws_buffer_copy_async(s, st->dst, 0, st->src, sizeof(float), sizeof st->host - sizeof(float));
}

static bool selftest_check(void *p, char *msg, size_t n)
{
    selftest_state *s = p;
    float got[SELFTEST_N];
    if (gpuws_buffer_read(s->dst, 0, got, sizeof got)) {
        snprintf(msg, n, "read back failed");
        return false;
    }
    for (int i = 0; i < SELFTEST_N; i++)
        if (got[i] != s->host[i]) {
            snprintf(msg, n, "element %d is %g, the reference says %g", i, (double)got[i], (double)s->host[i]);
            return false;
        }
    return true;
}

static void selftest_teardown(void *p)
{
    selftest_state *s = p;
    gpuws_buffer_destroy(s->src);
    gpuws_buffer_destroy(s->dst);
    free(s);
}

static const bench_workload w_right = { "selftest",     "right",          false, right_setup, right_run,
                                        selftest_check, selftest_teardown };
static const bench_workload w_wrong = { "selftest",     "wrong",          false, wrong_setup, wrong_run,
                                        selftest_check, selftest_teardown };
static const bench_workload w_failing = { "selftest",     "setup_fails",    false, failing_setup, right_run,
                                          selftest_check, selftest_teardown };
BENCH_WORKLOAD(w_right)
BENCH_WORKLOAD(w_wrong)
BENCH_WORKLOAD(w_failing)

/* bench_main in this process (so the test-only workloads exist) on `gpuws <first> ARGS`; stdout into *out_text,
 * stderr into *err_text (NULL: logged). */
static int run_bench_main(const char *const *first, int nfirst, char **args, int nargs, char **out_text,
                          char **err_text)
{
    char *argv[32];
    cr_assert(nfirst + nargs < 32);
    for (int i = 0; i < nfirst; i++) argv[i] = (char *)first[i];
    for (int i = 0; i < nargs; i++) argv[nfirst + i] = args[i];
    const char *outp = tmp_path("inproc.out"), *errp = tmp_path("inproc.err");
    FILE *out = fopen(outp, "w"), *err = fopen(errp, "w");
    cr_assert(out && err);
    int rc = bench_main(nfirst + nargs, argv, out, err);
    fclose(out);
    fclose(err);
    *out_text = test_read_file(outp);
    char *e = test_read_file(errp);
    if (err_text) *err_text = e;
    else cr_log_info("bench stderr:\n%s", e), free(e);
    return rc;
}

static int run_inproc(char **args, int nargs, char **out_text)
{
    static const char *const bench[] = { "bench" };
    return run_bench_main(bench, 1, args, nargs, out_text, NULL);
}

static const json_value *find_row(const json_value *doc, const char *variant, const char *backend)
{
    const json_value *rows = json_get(doc, "rows");
    for (size_t i = 0; rows && i < rows->n; i++)
        if (!strcmp(json_get_string(&rows->items[i], "variant", ""), variant) &&
            !strcmp(json_get_string(&rows->items[i], "backend", ""), backend))
            return &rows->items[i];
    return NULL;
}

/* ---- the reports from the real binary --------------------------------------------------------------------- */

static const char *const row_keys[] = { "algorithm",
                                        "variant",
                                        "size",
                                        "size_class",
                                        "backend",
                                        "platform",
                                        "device",
                                        "target",
                                        "end_to_end",
                                        "status",
                                        "error",
                                        "median_ms",
                                        "min_ms",
                                        "repeats",
                                        "bytes",
                                        "flops",
                                        "gb_per_s",
                                        "gflop_per_s",
                                        "flop_per_byte",
                                        "flop_dtype",
                                        "fraction_of_copy_bandwidth",
                                        "fraction_of_fma_peak",
                                        "fraction_of_ceiling",
                                        "bound",
                                        "speedup_vs_reference",
                                        "opencl_over_cuda",
                                        "back_to_back_ms",
                                        "back_to_back_calls",
                                        "back_to_back_samples",
                                        "opencl_over_cuda_back_to_back" };
#define NROW_KEYS (sizeof row_keys / sizeof row_keys[0])

static const char *const target_keys[] = { "label",
                                           "short_label",
                                           "backend",
                                           "platform",
                                           "device",
                                           "vendor",
                                           "driver_version",
                                           "type",
                                           "compute_units",
                                           "global_mem_bytes",
                                           "fp64",
                                           "copy_gb_per_s",
                                           "fma_f32_gflop_per_s",
                                           "fma_f64_gflop_per_s",
                                           "ridge_f32_flop_per_byte",
                                           "ridge_f64_flop_per_byte",
                                           "timer_floor_us",
                                           "ceiling_error" };

static void check_row(const json_value *row, const char *backend)
{
    for (size_t k = 0; k < NROW_KEYS; k++)
        cr_assert_not_null(json_get(row, row_keys[k]), "row without \"%s\"", row_keys[k]);
    const char *alg = json_get_string(row, "algorithm", "?"), *var = json_get_string(row, "variant", "?");
    cr_assert_str_eq(json_get_string(row, "status", ""), "ok", "%s %s on %s: %s", alg, var, backend,
                     json_get_string(row, "error", ""));
    const double med = json_get_number(row, "median_ms", -1), mn = json_get_number(row, "min_ms", -1);
    const double bytes = json_get_number(row, "bytes", -1), gbs = json_get_number(row, "gb_per_s", -1);
    cr_assert(med > 0 && mn > 0 && mn <= med, "%s %s: median %g, min %g", alg, var, med, mn);
    cr_assert(bytes > 0 && fabs(gbs - bytes / (med * 1e-3) / 1e9) <= 1e-6 * gbs,
              "%s %s: %g GB/s from %g bytes in %g ms", alg, var, gbs, bytes, med);
    cr_assert_eq(json_get_number(row, "repeats", 0), 3);
    const bool e2e = json_get(row, "end_to_end")->boolean;
    cr_assert_eq(e2e, !strcmp(alg, "transfer"), "%s %s: end_to_end %d", alg, var, e2e);
    if (e2e) {
        cr_assert_str_eq(json_get_string(row, "bound", ""), "host link");
        cr_assert_eq(json_get(row, "fraction_of_ceiling")->type, JSON_NULL);
        cr_assert_eq(json_get(row, "speedup_vs_reference")->type, JSON_NULL, "transfers have no reference");
    } else {
        const char *bound = json_get_string(row, "bound", "");
        cr_assert(!strcmp(bound, "memory") || !strcmp(bound, "compute"), "%s %s: bound '%s'", alg, var, bound);
        cr_assert(json_get_number(row, "fraction_of_ceiling", 0) > 0);
        const double sp = json_get_number(row, "speedup_vs_reference", 0);
        cr_assert(strcmp(backend, "cpu") ? sp > 0 : sp == 1, "%s %s on %s: speed-up %g", alg, var, backend, sp);
    }
    cr_assert_eq(json_get(row, "opencl_over_cuda")->type, JSON_NULL, "no CUDA row, so no ratio");
    cr_assert_eq(json_get(row, "opencl_over_cuda_back_to_back")->type, JSON_NULL, "no CUDA row, so no ratio");
    /* back to back (the default 10 calls per sample, as many samples as timed runs): GPU targets only */
    if (strcmp(backend, "cpu")) {
        const double b2b = json_get_number(row, "back_to_back_ms", 0);
        cr_assert(b2b > 0 && b2b < 10 * med, "%s %s on %s: back to back %g ms per call, one call %g ms", alg, var,
                  backend, b2b, med);
        cr_assert_eq(json_get_number(row, "back_to_back_calls", 0), 10);
        cr_assert_eq(json_get_number(row, "back_to_back_samples", 0), 3);
    } else {
        cr_assert_eq(json_get(row, "back_to_back_ms")->type, JSON_NULL, "the CPU backend runs each call synchronously");
        cr_assert_eq(json_get(row, "back_to_back_calls")->type, JSON_NULL);
    }
}

Test(bench, json_csv_and_svg_are_complete_and_well_formed, .timeout = 300)
{
    const char *backends = test_bench_backends();
    const char *json = tmp_path("b.json"), *csv = tmp_path("b.csv"), *svg = tmp_path("b.svg");
    char args[2048], *out;
    snprintf(args, sizeof args,
             "--backends %s --algorithms vector_add,reduce,transfer/h2d_pinned,transfer/d2h_pageable --size small "
             "--repeat 3 --cpu-repeat 3 --json '%s' --csv '%s' --svg '%s'",
             backends, json, csv, svg);
    int rc = run_cli(args, &out);
    cr_assert_eq(rc, 0, "gpuws bench exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "[1/") && strstr(out, "vector_add f32"), "no progress line or table:\n%s", out);

    json_value doc;
    parse_json_file(json, &doc);
    cr_assert_str_eq(json_get_string(&doc, "schema", ""), "gpuws-bench/1");
    const char *meta[] = { "date", "gpuws_version", "host", "size_class", "method" };
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++)
        cr_assert(json_get_string(&doc, meta[i], NULL), "no metadata \"%s\"", meta[i]);
    cr_assert_str_eq(json_get_string(&doc, "size_class", ""), "small");
    const json_value *argv = json_get(&doc, "argv");
    cr_assert(argv && argv->type == JSON_ARRAY && argv->n > 4 && !strcmp(argv->items[0].string, "bench"));

    const json_value *targets = json_get(&doc, "targets"), *rows = json_get(&doc, "rows");
    cr_assert(targets && targets->n >= 1 && rows);
    const size_t nwork = 4 /* vector_add f32, reduce sum_f32, two transfers */;
    cr_assert_eq(rows->n, targets->n * nwork, "%zu rows for %zu targets", rows->n, targets->n);
    bool seen_opencl = false;
    for (size_t t = 0; t < targets->n; t++) {
        const json_value *tg = &targets->items[t];
        for (size_t k = 0; k < sizeof target_keys / sizeof target_keys[0]; k++)
            cr_assert_not_null(json_get(tg, target_keys[k]), "target without \"%s\"", target_keys[k]);
        cr_assert_eq(json_get(tg, "ceiling_error")->type, JSON_NULL, "%s", json_get_string(tg, "ceiling_error", ""));
        cr_assert(json_get_number(tg, "copy_gb_per_s", 0) > 0 && json_get_number(tg, "fma_f32_gflop_per_s", 0) > 0);
        cr_assert(!json_get(tg, "fp64")->boolean || json_get_number(tg, "fma_f64_gflop_per_s", 0) > 0);
        seen_opencl |= !strcmp(json_get_string(tg, "backend", ""), "opencl");
        /* every timed run includes the timer's floor: no row of this target can be much faster than it */
        const double floor_us = json_get_number(tg, "timer_floor_us", 0);
        cr_assert(floor_us >= 0 && floor_us < 1e6, "timer floor %g us", floor_us);
        for (size_t i = 0; i < rows->n; i++)
            if (!strcmp(json_get_string(&rows->items[i], "target", ""), json_get_string(tg, "label", "?")))
                cr_assert(json_get_number(&rows->items[i], "median_ms", 0) * 1e3 >= 0.5 * floor_us,
                          "a row of %s timed below half its timer floor (%g us)", json_get_string(tg, "label", "?"),
                          floor_us);
    }
    cr_assert(seen_opencl || !strstr(backends, "opencl"), "opencl was asked for but has no target");
    for (size_t i = 0; i < rows->n; i++) check_row(&rows->items[i], json_get_string(&rows->items[i], "backend", ""));

    /* CSV: the same columns, one line per row */
    char *c = test_read_file(csv), *line = strtok(c, "\n");
    char header[2048] = "";
    for (size_t k = 0; k < NROW_KEYS; k++)
        snprintf(header + strlen(header), sizeof header - strlen(header), "%s%s", k ? "," : "", row_keys[k]);
    cr_assert_str_eq(line, header);
    size_t lines = 0;
    while (strtok(NULL, "\n")) lines++;
    cr_assert_eq(lines, rows->n);
    free(c);

    char *s = test_read_file(svg), why[128] = "";
    cr_assert(!strncmp(s, "<?xml", 5) && strstr(s, "<svg"), "not an SVG");
    cr_assert(xml_balanced(s, why, sizeof why), "SVG not well-formed: %s", why);
    size_t bars = 0;
    for (const char *p = s; (p = strstr(p, "<g><title>")); p++) bars++;
    cr_assert_eq(bars, rows->n, "one bar per row");
    free(s);
    json_free(&doc);
    free(out);
}

/* ---- correct before timed --------------------------------------------------------------------------------- */

Test(bench, a_wrong_result_is_FAILED_and_never_timed, .timeout = 120)
{
    char backends[32];
    snprintf(backends, sizeof backends, "%s", test_bench_backends());
    const size_t ntargets = strchr(backends, ',') ? 2 : 1;
    char *args[] = { "--backends",
                     backends,
                     "--algorithms",
                     "selftest",
                     "--size",
                     "small",
                     "--repeat",
                     "3",
                     "--cpu-repeat",
                     "3",
                     "--back-to-back",
                     "4",
                     "--no-ceilings",
                     "--json",
                     (char *)tmp_path("f.json"),
                     "--svg",
                     (char *)tmp_path("f.svg") };
    char *out;
    int rc = run_inproc(args, sizeof args / sizeof args[0], &out);
    cr_assert_eq(rc, 1, "a FAILED row must make the exit status 1, got %d", rc);
    cr_assert_eq(runs_wrong, (int)ntargets,
                 "the wrong workload ran %d times on %zu targets: it must run once each "
                 "(the checked run) and never be timed",
                 runs_wrong, ntargets);
    /* the GPU target (OpenCL, the second) also runs 3 back-to-back samples of 4 calls */
    cr_assert_eq(runs_right, (int)ntargets * (1 + 1 + 3) + (ntargets > 1 ? 3 * 4 : 0),
                 "checked run + warm-up + 3 timed runs per target, + 3 x 4 back to back on the GPU target");

    json_value doc;
    parse_json_file(tmp_path("f.json"), &doc);
    for (size_t t = 0; t < ntargets; t++) {
        const char *be = t ? "opencl" : "cpu";
        const json_value *wrong = find_row(&doc, "wrong", be), *right = find_row(&doc, "right", be),
                         *failing = find_row(&doc, "setup_fails", be);
        cr_assert(wrong && right && failing, "missing rows for %s", be);
        cr_assert_str_eq(json_get_string(wrong, "status", ""), "FAILED");
        cr_assert(strstr(json_get_string(wrong, "error", ""), "element 0 is"), "%s",
                  json_get_string(wrong, "error", ""));
        cr_assert_eq(json_get(wrong, "median_ms")->type, JSON_NULL, "a FAILED row has no time");
        cr_assert_eq(json_get(wrong, "repeats")->number, 0);
        cr_assert_str_eq(json_get_string(right, "status", ""), "ok");
        cr_assert_str_eq(json_get_string(failing, "status", ""), "FAILED");
        cr_assert(strstr(json_get_string(failing, "error", ""), "GPUWS_ERR_UNSUPPORTED"));
    }
    /* the table says so on the row's own line, and the picture marks it */
    size_t failed_lines = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
        if (strstr(l, "FAILED: element 0 is")) failed_lines++;
    cr_assert_eq(failed_lines, ntargets, "the table shows %zu FAILED lines for the wrong workload", failed_lines);
    char *svg = test_read_file(tmp_path("f.svg"));
    size_t marks = 0;
    for (const char *p = svg; (p = strstr(p, ">FAILED</text>")); p++) marks++;
    cr_assert_eq(marks, 2 * ntargets, "wrong and setup_fails marked on every target");
    free(svg);
    json_free(&doc);
    free(out);
}

/* ---- usage errors ----------------------------------------------------------------------------------------- */

static void expect_usage_error(const char *args, const char *message)
{
    char *out;
    int rc = run_cli(args, &out);
    cr_assert_eq(rc, 2, "gpuws bench %s: exit %d, wanted 2:\n%s", args, rc, out);
    cr_assert(strstr(out, message), "gpuws bench %s: the message should contain \"%s\":\n%s", args, message, out);
    cr_assert_eq(strstr(out, "[1/"), NULL, "nothing may run after a usage error");
    free(out);
}

/* ---- the quick default and --full --------------------------------------------------------------------------- */

static void check_run(const json_value *doc, const char *mode, const char *size_class, int repeat, int cpu_repeat,
                      double budget_s)
{
    cr_assert_str_eq(json_get_string(doc, "mode", ""), mode);
    cr_assert_str_eq(json_get_string(doc, "size_class", ""), size_class);
    cr_assert_eq(json_get_number(doc, "repeat", 0), repeat);
    cr_assert_eq(json_get_number(doc, "cpu_repeat", 0), cpu_repeat);
    cr_assert_eq(json_get_number(doc, "budget_s", 0), budget_s);
}

Test(bench, the_default_is_quick_and_full_is_the_measurement)
{
    /* no report named: all three go to gpuws-bench-HOST.* in the current directory, and the last lines say so */
    char dir[128], host[128], json[400];
    snprintf(dir, sizeof dir, "%s", tmp_path("quick"));
    cr_assert_eq(mkdir(dir, 0755), 0);
    cr_assert_eq(chdir(dir), 0);
    cr_assert_eq(gethostname(host, sizeof host), 0);
    for (char *p = host; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", *p)) *p = '_';
    char *quick[] = { "--backends", "cpu", "--algorithms", "selftest/right", "--no-ceilings" }, *out;
    cr_assert_eq(run_inproc(quick, 5, &out), 0);
    free(out);
    char *err = test_read_file(tmp_path("inproc.err"));
    static const char *const ext[3] = { "json", "csv", "svg" }, *const kind[3] = { "JSON", "CSV", "SVG" };
    for (int i = 0; i < 3; i++) {
        char name[300], line[400];
        snprintf(name, sizeof name, "gpuws-bench-%s.%s", host, ext[i]);
        snprintf(line, sizeof line, "gpuws bench: %s report: %s\n", kind[i], name);
        cr_assert_eq(access(name, F_OK), 0, "no %s in the current directory", name);
        cr_assert(strstr(err, line), "no line saying where the %s went:\n%s", kind[i], err);
    }
    free(err);
    snprintf(json, sizeof json, "%s/gpuws-bench-%s.json", dir, host);
    json_value doc;
    parse_json_file(json, &doc);
    check_run(&doc, "quick", "small", 5, 1, 1);
    const json_value *row = find_row(&doc, "right", "cpu");
    cr_assert(row && !strcmp(json_get_string(row, "status", ""), "ok"), "every row is still checked and timed");
    json_free(&doc);

    /* --full: the default sizes and today's repeats; an explicit option still wins */
    char *full[] = { "--backends", "cpu", "--algorithms", "selftest/right", "--no-ceilings", "--full", "--repeat", "7",
                     "--json",     json };
    cr_assert_eq(run_inproc(full, 10, &out), 0);
    free(out);
    parse_json_file(json, &doc);
    check_run(&doc, "full", "default", 7, 3, 60);
    json_free(&doc);
}

Test(bench, unknown_names_and_bad_values_are_usage_errors)
{
    expect_usage_error("--backends cuda,vulkan",
                       "unknown backend 'vulkan' in --backends (valid: cuda, opencl, cpu, all)");
    expect_usage_error("--backends cpu --algorithms reduce,nosuch",
                       "unknown algorithm 'nosuch' in --algorithms; known:");
    expect_usage_error("--backends cpu --algorithms nosuch", " vector_add");
    expect_usage_error("--backends cpu --algorithms reduce/nosuch", "unknown algorithm 'reduce/nosuch'");
    expect_usage_error("--size huge", "--size must be small, default or large, not 'huge'");
    expect_usage_error("--repeat 0", "--repeat needs a positive count from 1 to 1000000, not '0'");
    expect_usage_error("--repeat 3x", "--repeat needs a positive count from 1 to 1000000, not '3x'");
    expect_usage_error("--back-to-back 1", "--back-to-back needs 0 (off) or a count of calls from 2 to 1000, not '1'");
    expect_usage_error("--back-to-back -3",
                       "--back-to-back needs 0 (off) or a count of calls from 2 to 1000, not '-3'");
    expect_usage_error("--frobnicate", "unknown or incomplete option '--frobnicate'");
    expect_usage_error("--json", "unknown or incomplete option '--json'");
}

Test(bench, list_prints_every_workload_and_help_exits_0)
{
    char *out;
    cr_assert_eq(run_cli("--list", &out), 0);
    cr_assert(strstr(out, "vector_add f32") && strstr(out, "reduce sum_f32") && strstr(out, "transfer h2d_pinned"),
              "%s", out);
    free(out);
    cr_assert_eq(run_cli("--help", &out), 0);
    cr_assert(strstr(out, "usage: gpuws bench"));
    free(out);
}

/* ---- --compare ---------------------------------------------------------------------------------------------- */

Test(bench, compare_prints_peer_over_gpuws_for_matching_rows, .timeout = 120)
{
    const char *peers = tmp_path("peers.json");
    write_text(
        peers,
        "{\"schema\": \"gpuws-bench/1\", \"rows\": [\n"
        " {\"algorithm\": \"selftest\", \"variant\": \"right\", \"size\": \"1000 f32\", \"size_class\": \"small\","
        "  \"backend\": \"numpy\", \"device\": \"host \\\"cpu\\\"\", \"status\": \"ok\", \"median_ms\": 2.5},\n"
        " {\"algorithm\": \"selftest\", \"variant\": \"right\", \"size\": \"999 f32\", \"size_class\": \"small\","
        "  \"backend\": \"cupy\", \"device\": \"gpu\", \"status\": \"FAILED\", \"error\": \"no cupy\", \"median_ms\": "
        "null},\n"
        " {\"algorithm\": \"selftest\", \"variant\": \"right\", \"size\": \"1000 f32\", \"size_class\": \"default\","
        "  \"backend\": \"numpy\", \"device\": \"host\", \"status\": \"ok\", \"median_ms\": 9},\n"
        " {\"algorithm\": \"nosuch\", \"variant\": \"x\", \"size_class\": \"small\", \"backend\": \"scipy\","
        "  \"status\": \"ok\", \"median_ms\": 1}]}\n");
    char *args[] = { "--backends",
                     "cpu",
                     "--algorithms",
                     "selftest/right",
                     "--size",
                     "small",
                     "--repeat",
                     "3",
                     "--no-ceilings",
                     "--compare",
                     (char *)peers,
                     "--json",
                     (char *)tmp_path("c.json") };
    char *out;
    cr_assert_eq(run_inproc(args, sizeof args / sizeof args[0], &out), 0);
    json_value doc;
    parse_json_file(tmp_path("c.json"), &doc);
    const json_value *cmp = json_get(&doc, "comparisons"), *row = find_row(&doc, "right", "cpu");
    cr_assert(cmp && row);
    cr_assert_eq(cmp->n, 1, "only the ok peer row of the same size class matches, got %zu", cmp->n);
    const json_value *c = &cmp->items[0];
    const double gpuws_ms = json_get_number(row, "median_ms", 0), ratio = json_get_number(c, "peer_over_gpuws", 0);
    cr_assert_str_eq(json_get_string(c, "peer_device", ""), "host \"cpu\"");
    cr_assert_eq(json_get_number(c, "gpuws_ms", 0), gpuws_ms);
    cr_assert(fabs(ratio - 2.5 / gpuws_ms) <= 1e-8 * ratio, "ratio %.9g, want %.9g", ratio, 2.5 / gpuws_ms);
    cr_assert_eq(json_get(c, "size_differs")->boolean, false);
    char want[64], b[24];
    snprintf(want, sizeof want, "%sx", bench_fmt4(b, sizeof b, ratio));
    cr_assert(strstr(out, "gpuws against peers") && strstr(out, want), "no ratio %s in:\n%s", want, out);
    cr_assert(strstr(out, "nosuch x (scipy, small)") && strstr(out, "no cupy"), "unmatched peer rows are listed:\n%s",
              out);
    json_free(&doc);
    free(out);
}

Test(bench, size_labels_written_differently_still_match_and_different_sizes_do_not)
{
    /* pairs the CuPy peer script and gpuws write for the same workshop sizes */
    static const char *const same[][2] = { { "2048x2048 * 15x15", "2048^2*15x15" },
                                           { "4194304 * 15", "4M*15" },
                                           { "2048x2048 f32", "2048x2048 f32, 7 passes" },
                                           { "2048x2048", "2048x2048 u8" },
                                           { "1000000", "N = 1e+06" },
                                           { "2^26 values", "2^26 f32" },
                                           { "100000000 f32", "1e+08 f32 host->host" },
                                           { "100000000 points", "1e+08 samples" },
                                           { "4096x4096x4096 f32", "4096^3 f32" },
                                           { "65536x1024 f32", "2^16 x 1024 f32" },
                                           { "1000 f32", "1000 f32" } };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        cr_expect(bench_sizes_match(same[i][0], same[i][1]), "'%s' and '%s' are one size", same[i][0], same[i][1]);
    static const char *const differ[][2] = { { "2048x2048 * 15x15", "2048^2*13x13" },
                                             { "4194304 * 15", "4M*16" },
                                             { "2^26 values", "2^25 f32" },
                                             { "2048x2048, 299 labels", "2048x2048 300 labels, 11876 px" },
                                             { "1000 f32", "999 f32" },
                                             { "4096x4096 f32", "4096x2048 f32" },
                                             { "small", "1000 f32" } };
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++)
        cr_expect(!bench_sizes_match(differ[i][0], differ[i][1]), "'%s' and '%s' differ", differ[i][0], differ[i][1]);
}

Test(bench, compare_with_an_unreadable_peers_file_fails_clearly)
{
    const char *bad = tmp_path("bad.json");
    write_text(bad, "{\"rows\": [ {\"algorithm\": \"x\",} ]}");
    char *args[] = { "--backends", "cpu", "--compare", (char *)bad };
    char *out;
    cr_assert_eq(run_inproc(args, 4, &out), 1);
    free(out);
    char *args2[] = { "--backends", "cpu", "--compare", (char *)tmp_path("missing.json") };
    cr_assert_eq(run_inproc(args2, 4, &out), 1);
    free(out);
    char err[256];
    bench_peer *p;
    size_t n;
    cr_assert_eq(bench_read_peers(bad, &p, &n, err, sizeof err), -1);
    cr_assert(strstr(err, "not JSON: line 1: expected a key"), "%s", err);
    write_text(bad, "{\"results\": []}");
    cr_assert_eq(bench_read_peers(bad, &p, &n, err, sizeof err), -1);
    cr_assert(strstr(err, "no \"rows\" array"), "%s", err);
}

/* ---- bench merge: runs from different machines in one comparison ------------------------------------------ */

/* A gpuws bench report of one target with vector_add f32 and reduce sum_f32 rows (reduce FAILED when failed). */
static void write_run(const char *path, const char *host, const char *backend, const char *device, double vadd_ms,
                      bool failed)
{
    char target[160], rows[2][1024], text[4096];
    snprintf(target, sizeof target, "%s | %s", backend, device);
    snprintf(rows[0], sizeof rows[0],
             "{\"algorithm\": \"vector_add\", \"variant\": \"f32\", \"size\": \"2^20 f32\",\n"
             " \"size_class\": \"small\",\n"
             " \"target\": \"%s\", \"end_to_end\": false, \"status\": \"ok\", \"median_ms\": %g,\n"
             " \"min_ms\": %g, \"repeats\": 5, \"bytes\": 12582912, \"flops\": 1048576}",
             target, vadd_ms, vadd_ms);
    snprintf(rows[1], sizeof rows[1],
             "{\"algorithm\": \"reduce\", \"variant\": \"sum_f32\", \"size\": \"2^20 f32\",\n"
             " \"size_class\": \"small\",\n"
             " \"target\": \"%s\", \"end_to_end\": false, \"status\": \"%s\", \"error\": %s,\n"
             " \"median_ms\": %s, \"repeats\": 5, \"bytes\": 4194304, \"flops\": 1048576}",
             target, failed ? "FAILED" : "ok", failed ? "\"INTERNAL: wrong sum\"" : "null", failed ? "null" : "0.25");
    snprintf(text, sizeof text,
             "{\"schema\": \"gpuws-bench/1\", \"host\": \"%s\", \"mode\": \"quick\", \"size_class\": \"small\",\n"
             " \"targets\": [{\"label\": \"%s\", \"short_label\": \"%s %s\", \"backend\": \"%s\",\n"
             "              \"device\": \"%s\", \"type\": \"gpu\", \"copy_gb_per_s\": 1000}],\n"
             " \"rows\": [%s,\n%s]}\n",
             host, target, backend, device, backend, device, rows[0], rows[1]);
    write_text(path, text);
}

static int run_merge(char **args, int nargs, char **out_text, char **err_text)
{
    static const char *const merge[] = { "bench", "merge" };
    return run_bench_main(merge, 2, args, nargs, out_text, err_text);
}

Test(bench, merge_puts_the_devices_of_every_run_side_by_side)
{
    char a[128], b[128], svg[128], json[128]; /* tmp_path's names are reused after a few calls */
    snprintf(a, sizeof a, "%s", tmp_path("nvidia.json"));
    snprintf(b, sizeof b, "%s", tmp_path("amd.json"));
    snprintf(svg, sizeof svg, "%s", tmp_path("vendors.svg"));
    snprintf(json, sizeof json, "%s", tmp_path("merged.json"));
    write_run(a, "h100-box", "cuda", "NVIDIA H100", 0.5, false);
    write_run(b, "mi300-box", "opencl", "AMD Instinct MI300X", 0.25, true);
    char *args[] = { a, b, "--svg", svg, "--json", json }, *out, *err;
    int rc = run_merge(args, 6, &out, &err);
    cr_assert_eq(rc, 0, "exit %d:\n%s%s", rc, out, err);
    cr_assert(strstr(out, "[1] cuda NVIDIA H100\n") && strstr(out, "[2] opencl AMD Instinct MI300X\n"), "%s", out);
    /* one line per workload, both devices' times on it, the fastest named with its lead */
    const char *line = strstr(out, "\nvector_add f32");
    cr_assert_not_null(line, "%s", out);
    char row[256];
    snprintf(row, sizeof row, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
    const char *t1 = strstr(row, " 0.5000 "), *t2 = strstr(row, " 0.2500 ");
    cr_assert(t1 && t2 && t1 < t2, "both times in column order: %s", row);
    cr_assert(strstr(row, "[2] 2.000x"), "the MI300X is twice as fast: %s", row);
    line = strstr(out, "\nreduce sum_f32");
    cr_assert(line && strstr(line, "0.2500") && strstr(line, "FAILED") && strstr(line, "[1]\n"), "%s", out);
    cr_assert(strstr(err, svg) && strstr(err, json), "where the reports went: %s", err);

    char *s = test_read_file(svg), why[128] = "";
    cr_assert(xml_balanced(s, why, sizeof why), "SVG not well-formed: %s", why);
    cr_assert(strstr(s, "cuda NVIDIA H100") && strstr(s, "opencl AMD Instinct MI300X"), "a legend entry per device");
    size_t bars = 0;
    for (const char *p = s; (p = strstr(p, "<g><title>")); p++) bars++;
    cr_assert_eq(bars, 4, "one bar per row of each run");
    free(s);
    json_value doc;
    parse_json_file(json, &doc);
    cr_assert_eq(json_get(&doc, "targets")->n, 2);
    cr_assert_eq(json_get(&doc, "rows")->n, 4);
    json_free(&doc);
    free(out);
    free(err);

    /* the merged report merges again; two CPUs of the same name are told apart by their hosts */
    write_run(b, "other-box", "cuda", "NVIDIA H100", 0.4, false);
    char *again[] = { json, b };
    cr_assert_eq(run_merge(again, 2, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "[1] cuda NVIDIA H100 @ h100-box") && strstr(out, "[3] cuda NVIDIA H100 @ other-box"), "%s",
              out);
    free(out);
    free(err);
}

Test(bench, merge_refuses_what_is_not_a_bench_report)
{
    char good[128], bad[128], svg[128]; /* tmp_path's names are reused after a few calls */
    snprintf(good, sizeof good, "%s", tmp_path("good.json"));
    snprintf(bad, sizeof bad, "%s", tmp_path("bad.json"));
    snprintf(svg, sizeof svg, "%s", tmp_path("never.svg"));
    write_run(good, "h", "cpu", "Xeon", 1, false);
    const struct {
        const char *text; /* NULL: the file does not exist */
        int rc;
        const char *message;
    } rows[] = {
        { NULL, 1, "No such file or directory" },
        { "{\"rows\": [ {\"algorithm\": \"x\",} ]}", 1, "not JSON: line 1" },
        { "{\"rows\": []}", 1, "not a gpuws bench report" },
        { "{\"schema\": \"gpuws-bench/1\", \"rows\": {}}", 1, "not a gpuws bench report" },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        remove(bad);
        if (rows[i].text) write_text(bad, rows[i].text);
        char *args[] = { good, bad, "--svg", svg }, *out, *err;
        int rc = run_merge(args, 4, &out, &err);
        cr_assert_eq(rc, rows[i].rc, "row %zu: exit %d: %s", i, rc, err);
        cr_assert(strstr(err, bad) && strstr(err, rows[i].message), "row %zu: %s", i, err);
        cr_assert_eq(access(svg, F_OK), -1, "row %zu: no chart from a failed merge", i);
        free(out);
        free(err);
    }
    char *none[] = { "--svg", svg }, *out, *err;
    cr_assert_eq(run_merge(none, 2, &out, &err), 2);
    cr_assert(strstr(err, "no run named"), "%s", err);
    free(out);
    free(err);
    char *onto_input[] = { good, "--json", good };
    cr_assert_eq(run_merge(onto_input, 3, &out, &err), 2);
    cr_assert(strstr(err, "input and outputs must be different files"), "%s", err);
    free(out);
    free(err);
}

/* ---- derived columns from known numbers -------------------------------------------------------------------- */

static const bench_workload w_mem = { "known", "f32", false, NULL, NULL, NULL, NULL };
static const bench_workload w_f64 = { "known", "gemm_f64", false, NULL, NULL, NULL, NULL };
static const bench_workload w_e2e = { "known", "f32+transfers", true, NULL, NULL, NULL, NULL };

static bench_result known_row(const bench_workload *w, const bench_target *t, double bytes, double flops, double ms)
{
    bench_result r;
    memset(&r, 0, sizeof r);
    r.w = w, r.t = t, r.ok = true, r.median_ms = r.min_ms = ms, r.repeats = 3, r.size = BENCH_DEFAULT;
    r.counts.bytes = bytes, r.counts.flops = flops;
    snprintf(r.counts.size_label, sizeof r.counts.size_label, "n");
    return r;
}

Test(bench, roofline_fraction_takes_the_binding_side)
{
    bench_target t = { .backend = GPUWS_BACKEND_CUDA, .copy_gbs = 100, .fma_gflops = { 1000, 500 } };
    bench_result r[4] = {
        known_row(&w_mem, &t, 1e9, 1e9, 20),   /* 50 GB/s = 0.5 of copy; 50 GFLOP/s = 0.05 of FMA: memory */
        known_row(&w_mem, &t, 1e8, 1e11, 200), /* 0.5 GB/s; 500 GFLOP/s = 0.5 of the f32 peak: compute */
        known_row(&w_f64, &t, 1e8, 1e11, 250), /* 400 GFLOP/s against the f64 peak 500: 0.8, compute */
        known_row(&w_e2e, &t, 1e9, 1e9, 20),   /* end to end: the host link binds, no device fraction */
    };
    bench_derive(r, 4);
    cr_assert_float_eq(r[0].gbs, 50, 1e-9);
    cr_assert_float_eq(r[0].frac_bw, 0.5, 1e-12);
    cr_assert_float_eq(r[0].frac_fma, 0.05, 1e-12);
    cr_assert_str_eq(r[0].bound, "memory");
    cr_assert_float_eq(r[0].fraction, 0.5, 1e-12);
    cr_assert_str_eq(r[1].bound, "compute");
    cr_assert_float_eq(r[1].fraction, 0.5, 1e-12);
    cr_assert_str_eq(r[2].bound, "compute");
    cr_assert_float_eq(r[2].fraction, 0.8, 1e-12, "f64 work is measured against the f64 peak");
    cr_assert_str_eq(r[3].bound, "host link");
    cr_assert_eq(r[3].fraction, 0);
}

Test(bench, speedup_is_over_the_cpu_row_and_ocl_cuda_only_on_the_same_device)
{
    bench_target cuda = { .backend = GPUWS_BACKEND_CUDA }, ocl_nv = { .backend = GPUWS_BACKEND_OPENCL },
                 ocl_pocl = { .backend = GPUWS_BACKEND_OPENCL }, cpu = { .backend = GPUWS_BACKEND_CPU };
    snprintf(cuda.info.name, sizeof cuda.info.name, "NVIDIA H100 80GB HBM3");
    snprintf(ocl_nv.info.name, sizeof ocl_nv.info.name, "NVIDIA H100 80GB HBM3");
    snprintf(ocl_pocl.info.name, sizeof ocl_pocl.info.name, "cpu-sapphirerapids");
    snprintf(cpu.info.name, sizeof cpu.info.name, "Intel Xeon");
    bench_result r[6] = { known_row(&w_mem, &cuda, 1, 0, 2),      known_row(&w_mem, &ocl_nv, 1, 0, 2.5),
                          known_row(&w_mem, &ocl_pocl, 1, 0, 40), known_row(&w_mem, &cpu, 1, 0, 400),
                          known_row(&w_f64, &cuda, 1, 0, 1),      known_row(&w_f64, &ocl_nv, 1, 0, 1) };
    r[5].ok = false; /* a FAILED row gives no ratio */
    bench_derive(r, 6);
    cr_assert_float_eq(r[0].speedup, 200, 1e-9);
    cr_assert_float_eq(r[1].speedup, 160, 1e-9);
    cr_assert_float_eq(r[2].speedup, 10, 1e-9);
    cr_assert_eq(r[3].speedup, 1, "the CPU backend's row is the reference itself");
    cr_assert_float_eq(r[1].ocl_cuda, 0.8, 1e-12, "t_cuda / t_opencl on the same H100");
    cr_assert_eq(r[2].ocl_cuda, 0, "PoCL is another device: no OpenCL/CUDA ratio");
    cr_assert_eq(r[0].ocl_cuda, 0, "the ratio is shown on the OpenCL row");
    cr_assert_eq(r[4].speedup, 0, "no CPU row for that workload");
    cr_assert_eq(r[5].ocl_cuda, 0);
    cr_assert_eq(r[5].gbs, 0);
}

Test(bench, the_back_to_back_ratio_needs_both_rows_measured_back_to_back)
{
    bench_target cuda = { .backend = GPUWS_BACKEND_CUDA }, ocl = { .backend = GPUWS_BACKEND_OPENCL };
    snprintf(cuda.info.name, sizeof cuda.info.name, "NVIDIA H100 80GB HBM3");
    snprintf(ocl.info.name, sizeof ocl.info.name, "NVIDIA H100 80GB HBM3");
    bench_result r[4] = { known_row(&w_mem, &cuda, 1, 0, 0.010), known_row(&w_mem, &ocl, 1, 0, 0.016),
                          known_row(&w_f64, &cuda, 1, 0, 0.010), known_row(&w_f64, &ocl, 1, 0, 0.016) };
    r[0].batch_ms = 0.008, r[1].batch_ms = 0.0085; /* per call: 0.625; back to back: 0.941 */
    r[3].batch_ms = 0.009;                         /* CUDA's row of that workload has no back-to-back time */
    bench_derive(r, 4);
    cr_assert_float_eq(r[1].ocl_cuda, 0.625, 1e-12);
    cr_assert_float_eq(r[1].ocl_cuda_batch, 0.008 / 0.0085, 1e-12);
    cr_assert_eq(r[0].ocl_cuda_batch, 0, "the ratio is shown on the OpenCL row");
    cr_assert_float_eq(r[3].ocl_cuda, 0.625, 1e-12);
    cr_assert_eq(r[3].ocl_cuda_batch, 0, "no ratio without both back-to-back times");
}

Test(bench, compare_keeps_the_best_row_per_device)
{
    bench_target cuda = { .backend = GPUWS_BACKEND_CUDA }, ocl_nv = { .backend = GPUWS_BACKEND_OPENCL },
                 cpu = { .backend = GPUWS_BACKEND_CPU };
    snprintf(cuda.info.name, sizeof cuda.info.name, "H100");
    snprintf(ocl_nv.info.name, sizeof ocl_nv.info.name, "H100");
    snprintf(cpu.info.name, sizeof cpu.info.name, "Xeon");
    bench_result r[3] = { known_row(&w_mem, &cuda, 1, 0, 2), known_row(&w_mem, &ocl_nv, 1, 0, 1.6),
                          known_row(&w_mem, &cpu, 1, 0, 100) };
    bench_peer p = { .algorithm = "known",
                     .variant = "f32",
                     .size = "n",
                     .size_class = "default",
                     .backend = "cupy",
                     .ok = true,
                     .median_ms = 4 };
    bench_comparison *c;
    size_t n = bench_compare(r, 3, &p, 1, &c);
    cr_assert_eq(n, 2, "one comparison per device (H100, Xeon), got %zu", n);
    cr_assert_eq(c[0].row, &r[1], "the faster of CUDA and OpenCL on the H100");
    cr_assert_float_eq(c[0].ratio, 2.5, 1e-12);
    cr_assert_eq(c[1].row, &r[2]);
    cr_assert_float_eq(c[1].ratio, 0.04, 1e-12);
    free(c);
}

/* ---- the JSON writer and reader ---------------------------------------------------------------------------- */

Test(bench, json_strings_round_trip_with_every_escape)
{
    const char *s = "quote \" backslash \\ slash / tab \t newline \n cr \r bell \a nul-less \x01 \x1f é ∑";
    const char *path = tmp_path("s.json");
    FILE *f = fopen(path, "w");
    fputs("{\"s\": ", f);
    json_put_string(f, s);
    fputs(", \"nan\": ", f);
    json_put_number(f, NAN);
    fputs(", \"big\": ", f);
    json_put_number(f, 1099511627776.0 + 3);
    fputs(", \"x\": ", f);
    json_put_number(f, 0.1);
    fputs("}", f);
    fclose(f);
    json_value doc;
    parse_json_file(path, &doc);
    cr_assert_str_eq(json_get_string(&doc, "s", ""), s);
    cr_assert_eq(json_get(&doc, "nan")->type, JSON_NULL, "JSON has no NaN");
    cr_assert_eq(json_get_number(&doc, "big", 0), 1099511627779.0, "byte counts stay exact");
    cr_assert_float_eq(json_get_number(&doc, "x", 0), 0.1, 1e-15);
    json_free(&doc);
}

Test(bench, json_reader_rejects_malformed_documents_with_a_line)
{
    const char *bad[] = {
        "{\"a\": 1,}", "[1 2]",        "{\"a\" 1}", "\"unterminated", "01",      "1.",
        "-",           "{\"a\": tru}", "[1]]",      "\"tab\there\"",  "\"\\x\"", "\"\\ud800\\u0041\""
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_value v;
        char err[160];
        cr_assert_eq(json_parse(bad[i], &v, err, sizeof err), -1, "accepted: %s", bad[i]);
        cr_assert(!strncmp(err, "line 1: ", 8), "%s: %s", bad[i], err);
        cr_assert(!json_valid(bad[i]) || i == 11, "the test's checker accepts %s", bad[i]);
    }
    json_value v;
    char err[160];
    cr_assert_eq(
        json_parse("[\n1,\n\n{\"k\": [true, false, null, -1.5e3, \"\\u00e9\\ud83d\\ude00\"]}\n]", &v, err, sizeof err),
        0, "%s", err);
    const json_value *k = json_get(&v.items[1], "k");
    cr_assert(k && k->n == 5 && k->items[0].boolean && !k->items[1].boolean && k->items[2].type == JSON_NULL);
    cr_assert_eq(k->items[3].number, -1500);
    cr_assert_str_eq(k->items[4].string, "é😀");
    json_free(&v);
    cr_assert_eq(json_parse("[1,\n2,\n}", &v, err, sizeof err), -1);
    cr_assert(!strncmp(err, "line 3: ", 8), "%s", err);
}
