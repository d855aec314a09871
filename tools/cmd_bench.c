/* gpuws bench: every workload on every selected backend/device, checked then timed, against the device's ceilings
 * measured in the same run; a table on stdout, JSON / CSV / SVG files on request. See bench/bench.h and
 * docs/benchmarks.md. */
#include "report.h" /* bench.h and bench_fmt4 */
#include "commands.h"
#include "output_files.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: gpuws bench [--full] [--backends cuda,opencl,cpu|all] [--platform NAME] [--algorithms LIST]\n"
        "                   [--size small|default|large] [--repeat N] [--cpu-repeat N] [--budget SECONDS]\n"
        "                   [--back-to-back K]\n"
        "                   [--json FILE] [--csv FILE] [--svg FILE] [--compare PEERS.json] [--no-ceilings] [--list]\n"
        "       gpuws bench merge RUN.json RUN.json ... [--svg FILE] [--json FILE]\n"
        "  Runs every workload on every selected device (each OpenCL device of each platform is its own target),\n"
        "  checks each result against the scalar reference (a wrong result is FAILED, never timed), then times it\n"
        "  with device events after a warm-up run: median and minimum of N runs. Before the workloads it measures\n"
        "  each device's ceilings: device-to-device copy bandwidth, the FP32/FP64 FMA rate, and the timer's floor\n"
        "  (two events with nothing between them).\n"
        "  The default is a quick run (a few minutes on a CPU without a GPU): the small sizes, 5 runs per row\n"
        "  (the CPU backend, which runs the scalar reference, 1), at most 1 s of timed runs per row. --full is\n"
        "  the measurement: the default sizes, 20 runs (CPU backend 3), up to 60 s per row. --size, --repeat,\n"
        "  --cpu-repeat and --budget override either.\n"
        "  --algorithms  comma list of algorithms or algorithm/variant (e.g. reduce,convolve2d/f32,transfer)\n"
        "  --platform    keep only OpenCL platforms whose name contains NAME (case-insensitive; default:\n"
        "                GPUWS_OPENCL_PLATFORM when set)\n"
        "  --repeat, --cpu-repeat  from 1 to 1000000\n"
        "  --budget      at most this many seconds of timed runs per row (fewer repeats, at least 1; a number\n"
        "                > 0 and at most 86400)\n"
        "  --back-to-back  on GPU targets, also time K calls between two events (default 10; 0 = off) and report\n"
        "                the median per call: the timer's floor and the host's time per call then overlap the\n"
        "                device's work, as in a stream kept busy (nvbench's batch measurement)\n"
        "  --compare     a peers JSON (bench/peers/run_peers.py): prints peer time / gpuws time per workload\n"
        "  --list        prints the registered workloads and exits\n"
        "  Without --json, --csv or --svg the three reports go to gpuws-bench-HOST.json, .csv and .svg in the\n"
        "  current directory; the last lines say where they went.\n"
        "  merge: one vendor comparison of runs made on different machines (each machine runs gpuws bench and\n"
        "  copies its JSON over): a table of every workload with each run's devices side by side on stdout, and\n"
        "  with --svg the chart, with --json the merged document.\n"
        "  Each option may be given once; names and lists may not be empty.\n"
        "  The reports are written all or none: a regular file (or a symlink's target) is replaced, a device or\n"
        "  FIFO written into; a directory, the --compare file, or one file named twice is refused before any run.\n"
        "  Exit status: 0 all rows correct, 1 a row FAILED (the reports are still written) or the reports could\n"
        "  not be written (then none is), 2 usage error (also: a report names the --compare file or another).\n");
}

/* The next comma-separated item of *p into buf (trimmed of spaces); false at the end. */
static bool next_item(const char **p, char *buf, size_t n)
{
    while (**p == ',' || **p == ' ') (*p)++;
    if (!**p) return false;
    size_t l = strcspn(*p, ",");
    size_t t = l;
    while (t > 0 && (*p)[t - 1] == ' ') t--;
    snprintf(buf, n, "%.*s", (int)(t < n ? t : n - 1), *p);
    *p += l;
    return true;
}

/* An --algorithms item: "algo" or "algo/variant". */
static bool item_selects(const char *item, const bench_workload *w)
{
    const char *slash = strchr(item, '/');
    if (!slash) return !strcmp(item, w->algorithm);
    return strlen(w->algorithm) == (size_t)(slash - item) && !strncmp(item, w->algorithm, (size_t)(slash - item)) &&
           !strcmp(slash + 1, w->variant);
}

static bool selected(const char *list, const bench_workload *w)
{
    if (!list) return true;
    char item[128];
    for (const char *p = list; next_item(&p, item, sizeof item);)
        if (!strcmp(item, "all") || item_selects(item, w)) return true;
    return false;
}

typedef struct {
    const char *backends, *platform, *algorithms, *json, *csv, *svg, *compare;
    bench_size size;
    int repeat, cpu_repeat, batch_calls;
    double budget_s;
    bool ceilings, list, full;
    char default_paths[3][300]; /* the reports' names when none is given */
} options;

/* 0 on success, else the exit code (usage already printed). */
static int parse(int argc, char **argv, options *o, FILE *out, FILE *err)
{
    /* size, repeat, cpu_repeat and budget_s stay unset (-1, 0, 0, 0) until the end: --full picks their defaults */
    *o = (options){ .backends = "all", .size = (bench_size)-1, .batch_calls = 10, .ceilings = true };
    tool_args t = TOOL_ARGS_INIT("bench");
    t.err = err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **str = !strcmp(a, "--backends")     ? &o->backends
                           : !strcmp(a, "--platform")   ? &o->platform
                           : !strcmp(a, "--algorithms") ? &o->algorithms
                           : !strcmp(a, "--json")       ? &o->json
                           : !strcmp(a, "--csv")        ? &o->csv
                           : !strcmp(a, "--svg")        ? &o->svg
                           : !strcmp(a, "--compare")    ? &o->compare
                                                        : NULL;
        uint64_t x;
        if (a[0] == '-' && a[1] && !tool_is_signed_number(a) && tool_once(&t, a)) return 2;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(out);
            return -1;
        } else if (!strcmp(a, "--no-ceilings")) {
            o->ceilings = false;
        } else if (!strcmp(a, "--full")) {
            o->full = true;
        } else if (str && v) {
            const bool file = str == &o->json || str == &o->csv || str == &o->svg || str == &o->compare;
            if (tool_name(&t, a, v, file ? "a file name" : str == &o->platform ? "a platform name" : "a comma list"))
                return 2;
            *str = v, i++;
        } else if (!strcmp(a, "--list")) {
            o->list = true;
        } else if ((!strcmp(a, "--repeat") || !strcmp(a, "--cpu-repeat")) && v) {
            if (tool_count(&t, a, v, 1, TOOL_REPEAT_MAX, "a positive count", &x)) return 2;
            *(a[2] == 'r' ? &o->repeat : &o->cpu_repeat) = (int)x, i++;
        } else if (!strcmp(a, "--back-to-back") && v) {
            if (tool_parse_count(v, 1000, &x) || x == 1) {
                fprintf(err, "gpuws bench: --back-to-back needs 0 (off) or a count of calls from 2 to 1000, not '%s'\n",
                        v);
                return 2;
            }
            o->batch_calls = (int)x, i++;
        } else if (!strcmp(a, "--budget") && v) {
            /* a day per row: anything longer is a typo, and seconds * 1e3 stays far from overflow */
            if (tool_parse_real(v, &o->budget_s) || !(o->budget_s > 0) || o->budget_s > 86400) {
                fprintf(err, "gpuws bench: --budget needs a positive number of seconds, at most 86400, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--size") && v) {
            o->size = !strcmp(v, "small") ? BENCH_SMALL : !strcmp(v, "large") ? BENCH_LARGE : BENCH_DEFAULT;
            if (strcmp(v, "small") && strcmp(v, "large") && strcmp(v, "default")) {
                fprintf(err, "gpuws bench: --size must be small, default or large, not '%s'\n", v);
                return 2;
            }
            i++;
        } else {
            fprintf(err, "gpuws bench: unknown or incomplete option '%s'\n", a);
            usage(err);
            return 2;
        }
    }
    /* quick: every row checked and timed on the small sizes, so that the whole run fits a few minutes on a CPU
     * without a GPU (the scalar references and PoCL's first compilations are most of it); full: the measurement */
    if ((int)o->size < 0) o->size = o->full ? BENCH_DEFAULT : BENCH_SMALL;
    if (!o->repeat) o->repeat = o->full ? 20 : 5;
    if (!o->cpu_repeat) o->cpu_repeat = o->full ? 3 : 1;
    if (!(o->budget_s > 0)) o->budget_s = o->full ? 60 : 1;
    return 0;
}

/* Without any report option, all three go to gpuws-bench-HOST.{json,csv,svg} in the current directory: a run's
 * results are never only on the screen, and runs copied from several machines to one (bench merge) keep apart. */
static void default_reports(options *o)
{
    if (o->json || o->csv || o->svg) return;
    char host[128], safe[128];
    if (gethostname(host, sizeof host) != 0 || !host[0]) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = 0;
    size_t k = 0;
    for (const char *p = host; *p && k + 1 < sizeof safe; p++, k++) {
        const bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                          *p == '-' || *p == '_' || (*p == '.' && k > 0);
        safe[k] = keep ? *p : '_';
    }
    safe[k] = 0;
    static const char *const ext[3] = { "json", "csv", "svg" };
    for (int i = 0; i < 3; i++)
        snprintf(o->default_paths[i], sizeof o->default_paths[i], "gpuws-bench-%s.%s", safe, ext[i]);
    o->json = o->default_paths[0], o->csv = o->default_paths[1], o->svg = o->default_paths[2];
}

/* Backend names to a mask; 0 with the message printed when a name is unknown. */
static unsigned backend_mask(const char *list, FILE *err)
{
    unsigned mask = 0;
    char name[64];
    for (const char *p = list; next_item(&p, name, sizeof name);) {
        gpuws_backend_kind k;
        if (!strcmp(name, "all")) {
            mask |= 7;
        } else if (gpuws_backend_from_name(name, &k) == GPUWS_OK) {
            mask |= 1u << k;
        } else {
            fprintf(err, "gpuws bench: unknown backend '%s' in --backends (valid: cuda, opencl, cpu, all)\n", name);
            return 0;
        }
    }
    if (!mask) fprintf(err, "gpuws bench: --backends names no backend (valid: cuda, opencl, cpu, all)\n");
    return mask;
}

static bool check_algorithms(const char *list, FILE *err)
{
    char item[128];
    if (list && !next_item(&(const char *){ list }, item, sizeof item)) {
        fprintf(err, "gpuws bench: --algorithms names no algorithm (--list shows them)\n");
        return false;
    }
    for (const char *p = list; list && next_item(&p, item, sizeof item);) {
        bool known = !strcmp(item, "all");
        for (const bench_workload *const *wp = bench_workloads(); *wp && !known; wp++) known = item_selects(item, *wp);
        if (known) continue;
        fprintf(err, "gpuws bench: unknown algorithm '%s' in --algorithms; known:", item);
        const char *last = "";
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++) {
            if (strcmp(last, (*wp)->algorithm)) fprintf(err, " %s", (*wp)->algorithm);
            last = (*wp)->algorithm;
        }
        fprintf(err, " (or algorithm/variant; --list shows the variants)\n");
        return false;
    }
    return true;
}

/* Named backends that cannot run are said out loud: a missing row must not look like a skipped choice. */
static void say_unavailable(unsigned mask, bool named, FILE *err)
{
    for (int k = 0; k < GPUWS_BACKEND_COUNT; k++) {
        gpuws_backend_info bi;
        if (!(mask & (1u << k)) || gpuws_backend_get_info((gpuws_backend_kind)k, &bi) || bi.available) continue;
        fprintf(err, "gpuws bench: %s %s: %s\n", bi.name, named ? "not available" : "skipped", bi.reason);
    }
}

static void fill_metadata(bench_report *r, int argc, char **argv, const options *o)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(r->date, sizeof r->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(r->host, sizeof r->host) != 0) snprintf(r->host, sizeof r->host, "unknown");
    r->host[sizeof r->host - 1] = 0;
    snprintf(r->version, sizeof r->version, "%d.%d.%d", GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR, GPUWS_VERSION_PATCH);
    r->argc = argc, r->argv = argv;
    r->size = o->size, r->repeat = o->repeat, r->cpu_repeat = o->cpu_repeat, r->batch_calls = o->batch_calls;
    r->full = o->full, r->budget_s = o->budget_s;
}

static void fail_row(bench_result *r, const bench_workload *w, const bench_target *t, bench_size size, const char *why)
{
    memset(r, 0, sizeof *r);
    r->w = w, r->t = t, r->size = size;
    snprintf(r->error, sizeof r->error, "%s", why);
}

/* Runs every selected workload on every target; returns the rows written. */
static size_t run_all(bench_report *rep, const bench_workload **ws, size_t nw, const options *o, FILE *err)
{
    size_t k = 0, total = rep->ntargets * nw;
    for (size_t t = 0; t < rep->ntargets; t++) {
        bench_target *tg = &rep->targets[t];
        gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
        co.backend = tg->backend == GPUWS_BACKEND_CUDA     ? "cuda"
                     : tg->backend == GPUWS_BACKEND_OPENCL ? "opencl"
                                                           : "cpu";
        co.device = (int)tg->device;
        co.opencl_platform = "";
        gpuws_context *ctx;
        gpuws_status st = gpuws_context_create(&ctx, &co);
        if (st) {
            char why[256];
            snprintf(why, sizeof why, "context: %s: %s", gpuws_status_name(st), gpuws_last_error());
            fprintf(err, "gpuws bench: %s: %s\n", tg->label, why);
            for (size_t i = 0; i < nw; i++) fail_row(&rep->rows[k++], ws[i], tg, o->size, why);
            continue;
        }
        if (o->ceilings) {
            fprintf(err, "[%zu/%zu] %s: measuring ceilings (copy bandwidth, FMA rate, timer floor)...", k, total,
                    tg->label);
            fflush(err);
            bench_measure_ceilings(tg, ctx, o->size);
            char a[24], b[24], c[24], d[24];
            fprintf(err, " copy %s GB/s, FMA f32 %s GFLOP/s, f64 %s GFLOP/s, timer floor %s us\n",
                    bench_fmt4(a, sizeof a, tg->copy_gbs), bench_fmt4(b, sizeof b, tg->fma_gflops[0]),
                    bench_fmt4(c, sizeof c, tg->fma_gflops[1]), bench_fmt4(d, sizeof d, tg->timer_floor_us));
            if (tg->ceiling_error[0]) fprintf(err, "  ceilings: %s\n", tg->ceiling_error);
        }
        const int repeat = tg->backend == GPUWS_BACKEND_CPU ? o->cpu_repeat : o->repeat;
        for (size_t i = 0; i < nw; i++) {
            fprintf(err, "[%zu/%zu] %s | %s %s ...", k + 1, total, tg->label, ws[i]->algorithm, ws[i]->variant);
            fflush(err);
            bench_result *r = &rep->rows[k++];
            bench_run_budget(ws[i], tg, ctx, o->size, repeat, o->budget_s, o->batch_calls, r);
            char m[24], b[24];
            if (r->ok && r->batch_ms > 0)
                fprintf(err, " %s ms (%d runs), back to back %s ms per call\n", bench_fmt4(m, sizeof m, r->median_ms),
                        r->repeats, bench_fmt4(b, sizeof b, r->batch_ms));
            else if (r->ok) fprintf(err, " %s ms (%d runs)\n", bench_fmt4(m, sizeof m, r->median_ms), r->repeats);
            else fprintf(err, " FAILED: %s\n", r->error);
            /* A kernel fault can leave the device context unusable (NVIDIA's OpenCL then fails every later call):
             * the next workload gets a fresh context, so one bad kernel fails one row. */
            if (!r->ok && tg->backend != GPUWS_BACKEND_CPU && i + 1 < nw) {
                gpuws_context_destroy(ctx);
                if ((st = gpuws_context_create(&ctx, &co))) {
                    char why[256];
                    snprintf(why, sizeof why, "context after a failure: %s: %s", gpuws_status_name(st),
                             gpuws_last_error());
                    for (size_t j = i + 1; j < nw; j++) fail_row(&rep->rows[k++], ws[j], tg, o->size, why);
                    ctx = NULL;
                    break;
                }
            }
        }
        gpuws_context_destroy(ctx);
    }
    return k;
}

/* The reports' files, in this order in the plan. */
static const char *const report_options[3] = { "--json", "--csv", "--svg" };

/* Writes every requested report into its staging file, then puts them all in place; on any failure none. */
static int write_outputs(const bench_report *rep, const options *o, output_files *files, FILE *err)
{
    const char *paths[3] = { o->json, o->csv, o->svg };
    void (*const writers[3])(const bench_report *, FILE *) = { bench_write_json, bench_write_csv, bench_write_svg };
    char why[4400];
    int rc = 0;
    for (size_t i = 0; i < 3 && !rc; i++) {
        if (!paths[i]) continue;
        const char *stage = output_files_stage(files, i, why, sizeof why);
        rc = !stage || bench_write_file(stage, writers[i], rep, why, sizeof why);
        if (rc) output_files_reword(files, i, why, sizeof why);
    }
    if (!rc) rc = output_files_commit(files, why, sizeof why);
    if (rc) {
        fprintf(err, "gpuws bench: cannot write %s (no report written)\n", why);
        return 1;
    }
    static const char *const kinds[3] = { "JSON", "CSV", "SVG" };
    for (size_t i = 0; i < 3; i++)
        if (paths[i]) fprintf(err, "gpuws bench: %s report: %s\n", kinds[i], paths[i]);
    return 0;
}

int bench_main(int argc, char **argv, FILE *out, FILE *err)
{
    if (argc > 1 && !strcmp(argv[1], "merge")) return bench_merge_main(argc - 1, argv + 1, out, err);
    options o;
    int rc = parse(argc, argv, &o, out, err);
    if (rc) return rc < 0 ? 0 : rc;
    if (o.list) {
        char name[128];
        for (const bench_workload *const *wp = bench_workloads(); *wp; wp++)
            fprintf(out, "%-40s%s\n", bench_workload_name(*wp, name, sizeof name),
                    (*wp)->end_to_end ? "  (end to end)" : "");
        return 0;
    }
    const unsigned mask = backend_mask(o.backends, err);
    if (!mask || !check_algorithms(o.algorithms, err)) return 2;
    default_reports(&o);
    /* the reports' files before any run: a destination that cannot be written, or that is the peers file, fails
     * before the minutes of timing */
    const char *paths[3] = { o.json, o.csv, o.svg };
    char why[4400];
    output_files *files = output_files_prepare(&o.compare, 1, paths, report_options, 3, &rc, why, sizeof why);
    if (!files) {
        fprintf(err, "gpuws bench: %s\n", why);
        return rc;
    }

    bench_report rep;
    memset(&rep, 0, sizeof rep);
    fill_metadata(&rep, argc, argv, &o);
    if (o.compare && bench_read_peers(o.compare, &rep.peers, &rep.npeers, why, sizeof why)) {
        fprintf(err, "gpuws bench: --compare: %s\n", why);
        output_files_destroy(files);
        return 1;
    }
    say_unavailable(mask, strcmp(o.backends, "all") != 0, err);
    enum { MAX_TARGETS = 64, MAX_SELECTED = 256 };
    rep.targets = calloc(MAX_TARGETS, sizeof *rep.targets);
    /* GPUWS_OPENCL_PLATFORM narrows the OpenCL targets as it narrows device selection, unless --platform says */
    const char *platform = o.platform ? o.platform : getenv("GPUWS_OPENCL_PLATFORM");
    if (platform && !*platform) platform = NULL;
    rep.ntargets = rep.targets ? bench_targets(mask, platform, rep.targets, MAX_TARGETS) : 0;
    const bench_workload **ws = calloc(MAX_SELECTED, sizeof *ws);
    size_t nw = 0;
    for (const bench_workload *const *wp = bench_workloads(); ws && *wp && nw < MAX_SELECTED; wp++)
        if (selected(o.algorithms, *wp)) ws[nw++] = *wp;
    rep.rows = calloc(rep.ntargets * nw + 1, sizeof *rep.rows);
    if (!ws || !rep.rows || !rep.targets) {
        fprintf(err, "gpuws bench: out of memory\n");
        rc = 1;
    } else if (rep.ntargets == 0) {
        fprintf(err, "gpuws bench: no available device among the selected backends%s%s (see gpuws info)\n",
                platform ? " and OpenCL platforms matching " : "", platform ? platform : "");
        rc = 1;
    } else {
        rep.nrows = run_all(&rep, ws, nw, &o, err);
        bench_derive(rep.rows, rep.nrows);
        if (rep.npeers) rep.ncmp = bench_compare(rep.rows, rep.nrows, rep.peers, rep.npeers, &rep.cmp);
        fputc('\n', out);
        bench_print_table(&rep, out);
        fflush(out);
        for (size_t i = 0; i < rep.nrows; i++) rc |= !rep.rows[i].ok;
        rc |= write_outputs(&rep, &o, files, err);
    }
    output_files_destroy(files);
    free(ws);
    free(rep.targets);
    free(rep.rows);
    free(rep.peers);
    free(rep.cmp);
    return rc ? 1 : 0;
}

static int cmd_bench(int argc, char **argv) { return bench_main(argc, argv, stdout, stderr); }

GPUWS_COMMAND("bench", "time the algorithms on every backend/device against the device's ceilings", cmd_bench)
