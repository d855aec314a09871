/* gpuws bench merge: the vendor comparison. Each vendor's machine runs `gpuws bench` and its JSON report is copied
 * to one place; merge reads the reports back into one bench_report (targets of every run, rows of every run) so that
 * the same table writer, SVG and JSON writers draw them together, and prints a table with one line per workload and
 * one column per device. */
#include "report.h" /* bench.h and bench_fmt4 */
#include "commands.h"
#include "json.h"
#include "output_files.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The workloads the rows name: read rows point at these (the report writers group rows by workload pointer). */
typedef struct {
    bench_workload w;
    char algorithm[48], variant[48];
} merged_workload;

typedef struct {
    bench_report rep;
    merged_workload *works;
    size_t nworks, cap_works;
    size_t cap_targets, cap_rows;
    char (*target_host)[128]; /* the run each target came from */
} merged;

static void merged_free(merged *m)
{
    free(m->works);
    free(m->rep.targets);
    free(m->rep.rows);
    free(m->target_host);
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return false;
    memset((char *)q + *cap * size, 0, (n - *cap) * size);
    *p = q, *cap = n;
    return true;
}

/* The workload named by (algorithm, variant), added on first sight; NULL when out of memory. Its address may move
 * while more are added: rows hold indices until the end (fix_pointers). */
static ptrdiff_t workload_index(merged *m, const char *algorithm, const char *variant, bool end_to_end)
{
    for (size_t i = 0; i < m->nworks; i++)
        if (!strcmp(m->works[i].algorithm, algorithm) && !strcmp(m->works[i].variant, variant)) return (ptrdiff_t)i;
    if (!grow((void **)&m->works, &m->cap_works, m->nworks + 1, sizeof *m->works)) return -1;
    merged_workload *w = &m->works[m->nworks];
    snprintf(w->algorithm, sizeof w->algorithm, "%s", algorithm);
    snprintf(w->variant, sizeof w->variant, "%s", variant);
    w->w.end_to_end = end_to_end;
    return (ptrdiff_t)m->nworks++;
}

static gpuws_backend_kind backend_of(const char *name)
{
    gpuws_backend_kind k;
    return gpuws_backend_from_name(name, &k) == GPUWS_OK ? k : GPUWS_BACKEND_CPU;
}

static bench_size size_of(const char *name)
{
    return !strcmp(name, "small") ? BENCH_SMALL : !strcmp(name, "large") ? BENCH_LARGE : BENCH_DEFAULT;
}

static void read_target(const json_value *v, bench_target *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->label, sizeof t->label, "%s", json_get_string(v, "label", "?"));
    snprintf(t->short_label, sizeof t->short_label, "%s", json_get_string(v, "short_label", t->label));
    t->backend = backend_of(json_get_string(v, "backend", "cpu"));
    t->info.backend = t->backend;
    snprintf(t->info.name, sizeof t->info.name, "%s", json_get_string(v, "device", ""));
    snprintf(t->info.vendor, sizeof t->info.vendor, "%s", json_get_string(v, "vendor", ""));
    snprintf(t->info.platform, sizeof t->info.platform, "%s", json_get_string(v, "platform", ""));
    snprintf(t->info.driver_version, sizeof t->info.driver_version, "%s", json_get_string(v, "driver_version", ""));
    const char *type = json_get_string(v, "type", "other");
    t->info.type = !strcmp(type, "gpu")   ? GPUWS_DEVICE_GPU
                   : !strcmp(type, "cpu") ? GPUWS_DEVICE_CPU
                                          : GPUWS_DEVICE_OTHER;
    t->info.compute_units = (uint32_t)json_get_number(v, "compute_units", 0);
    t->info.global_mem_bytes = (uint64_t)json_get_number(v, "global_mem_bytes", 0);
    const json_value *fp64 = json_get(v, "fp64");
    t->info.fp64 = fp64 && fp64->type == JSON_BOOL && fp64->boolean;
    t->copy_gbs = json_get_number(v, "copy_gb_per_s", 0);
    t->fma_gflops[0] = json_get_number(v, "fma_f32_gflop_per_s", 0);
    t->fma_gflops[1] = json_get_number(v, "fma_f64_gflop_per_s", 0);
    t->timer_floor_us = json_get_number(v, "timer_floor_us", 0);
    snprintf(t->ceiling_error, sizeof t->ceiling_error, "%s", json_get_string(v, "ceiling_error", ""));
}

/* One row; the workload index goes in r->w and the target index in r->t until fix_pointers. */
static int read_row(merged *m, const json_value *v, size_t first_target, size_t ntargets, bench_result *r)
{
    memset(r, 0, sizeof *r);
    const char *target = json_get_string(v, "target", "");
    size_t t = first_target;
    while (t < first_target + ntargets && strcmp(m->rep.targets[t].label, target)) t++;
    if (t == first_target + ntargets) return 1; /* a row of no listed target: not drawn */
    const json_value *e2e = json_get(v, "end_to_end");
    ptrdiff_t w = workload_index(m, json_get_string(v, "algorithm", "?"), json_get_string(v, "variant", "?"),
                                 e2e && e2e->type == JSON_BOOL && e2e->boolean);
    if (w < 0) return -1;
    r->w = (const bench_workload *)(uintptr_t)(w + 1);
    r->t = (const bench_target *)(uintptr_t)(t + 1);
    r->size = size_of(json_get_string(v, "size_class", "default"));
    snprintf(r->counts.size_label, sizeof r->counts.size_label, "%s", json_get_string(v, "size", ""));
    r->counts.bytes = json_get_number(v, "bytes", 0);
    r->counts.flops = json_get_number(v, "flops", 0);
    r->counts.flop_type = !strcmp(json_get_string(v, "flop_dtype", ""), "f64") ? BENCH_FLOPS_F64 : BENCH_FLOPS_F32;
    r->median_ms = json_get_number(v, "median_ms", 0);
    r->min_ms = json_get_number(v, "min_ms", 0);
    r->repeats = (int)json_get_number(v, "repeats", 0);
    r->ok = !strcmp(json_get_string(v, "status", ""), "ok") && r->median_ms > 0;
    snprintf(r->error, sizeof r->error, "%s", json_get_string(v, "error", r->ok ? "" : "no time"));
    r->batch_ms = json_get_number(v, "back_to_back_ms", 0);
    r->batch_calls = (int)json_get_number(v, "back_to_back_calls", 0);
    r->batch_samples = (int)json_get_number(v, "back_to_back_samples", 0);
    /* the derived columns as the run computed them: the speed-up is over that machine's own reference */
    r->gbs = json_get_number(v, "gb_per_s", 0);
    r->gflops = json_get_number(v, "gflop_per_s", 0);
    r->frac_bw = json_get_number(v, "fraction_of_copy_bandwidth", 0);
    r->frac_fma = json_get_number(v, "fraction_of_fma_peak", 0);
    r->fraction = json_get_number(v, "fraction_of_ceiling", 0);
    const char *bound = json_get_string(v, "bound", "");
    r->bound = !strcmp(bound, "memory")      ? "memory"
               : !strcmp(bound, "compute")   ? "compute"
               : !strcmp(bound, "host link") ? "host link"
                                             : NULL;
    r->speedup = json_get_number(v, "speedup_vs_reference", 0);
    r->ocl_cuda = json_get_number(v, "opencl_over_cuda", 0);
    r->ocl_cuda_batch = json_get_number(v, "opencl_over_cuda_back_to_back", 0);
    return 0;
}

/* Adds one run's targets and rows. 0, or -1 with why in err. */
static int add_run(merged *m, const char *path, char *err, size_t errn)
{
    json_value doc;
    if (bench_read_json(path, &doc, err, errn)) return -1;
    const json_value *targets = json_get(&doc, "targets"), *rows = json_get(&doc, "rows");
    if (strcmp(json_get_string(&doc, "schema", ""), "gpuws-bench/1") || !targets || targets->type != JSON_ARRAY ||
        !rows || rows->type != JSON_ARRAY) {
        snprintf(err, errn,
                 "%s: not a gpuws bench report (expected \"schema\": \"gpuws-bench/1\" with \"targets\" and "
                 "\"rows\" arrays, as gpuws bench --json writes)",
                 path);
        json_free(&doc);
        return -1;
    }
    const size_t first = m->rep.ntargets;
    size_t cap_hosts = m->cap_targets;
    if (!grow((void **)&m->rep.targets, &m->cap_targets, first + targets->n, sizeof *m->rep.targets) ||
        !grow((void **)&m->target_host, &cap_hosts, m->cap_targets, sizeof *m->target_host) ||
        !grow((void **)&m->rep.rows, &m->cap_rows, m->rep.nrows + rows->n + 1, sizeof *m->rep.rows)) {
        snprintf(err, errn, "%s: out of memory", path);
        json_free(&doc);
        return -1;
    }
    for (size_t i = 0; i < targets->n; i++) {
        read_target(&targets->items[i], &m->rep.targets[first + i]);
        snprintf(m->target_host[first + i], sizeof m->target_host[0], "%s", json_get_string(&doc, "host", "?"));
    }
    m->rep.ntargets += targets->n;
    for (size_t i = 0; i < rows->n; i++) {
        int r = read_row(m, &rows->items[i], first, targets->n, &m->rep.rows[m->rep.nrows]);
        if (r < 0) {
            snprintf(err, errn, "%s: out of memory", path);
            json_free(&doc);
            return -1;
        }
        if (r == 0) m->rep.nrows++;
    }
    /* the merged document's metadata: the hosts and dates of the runs */
    size_t l = strlen(m->rep.host);
    snprintf(m->rep.host + l, sizeof m->rep.host - l, "%s%s", l ? ", " : "", json_get_string(&doc, "host", "?"));
    if (!strcmp(json_get_string(&doc, "mode", "full"), "full")) m->rep.full = true;
    json_free(&doc);
    return 0;
}

/* Rows held indices while the arrays grew; now the arrays are final. Two targets of the same name from different
 * runs (a CPU backend on each machine) get the run's host in their label so the columns and the legend tell them
 * apart. */
static void fix_pointers(merged *m)
{
    for (size_t i = 0; i < m->nworks; i++) {
        m->works[i].w.algorithm = m->works[i].algorithm;
        m->works[i].w.variant = m->works[i].variant;
    }
    for (size_t i = 0; i < m->rep.nrows; i++) {
        bench_result *r = &m->rep.rows[i];
        r->w = &m->works[(uintptr_t)r->w - 1].w;
        r->t = &m->rep.targets[(uintptr_t)r->t - 1];
    }
    bool *dup = calloc(m->rep.ntargets + 1, sizeof *dup);
    for (size_t i = 0; dup && i < m->rep.ntargets; i++)
        for (size_t j = 0; j < m->rep.ntargets; j++)
            if (i != j && !strcmp(m->rep.targets[i].short_label, m->rep.targets[j].short_label)) dup[i] = true;
    for (size_t i = 0; dup && i < m->rep.ntargets; i++) {
        if (!dup[i]) continue;
        bench_target *t = &m->rep.targets[i];
        char s[sizeof t->short_label];
        snprintf(s, sizeof s, "%s", t->short_label);
        snprintf(t->short_label, sizeof t->short_label, "%.40s @ %.28s", s, m->target_host[i]);
    }
    free(dup);
}

void bench_print_comparison(const bench_report *r, FILE *f)
{
    char a[24], b[24];
    fprintf(f, "vendor comparison: median ms per run of each workload (shorter is faster)\n");
    for (size_t t = 0; t < r->ntargets; t++) fprintf(f, "  [%zu] %s\n", t + 1, r->targets[t].short_label);
    fprintf(f, "\n%-34s %-8s", "workload", "size");
    for (size_t t = 0; t < r->ntargets; t++) {
        snprintf(a, sizeof a, "[%zu] ms", t + 1);
        fprintf(f, " %10s", a);
    }
    fprintf(f, "  fastest\n");
    size_t *idx = bench_sorted_rows(r);
    double *ms = calloc(r->ntargets + 1, sizeof *ms);
    for (size_t k = 0; idx && ms && k < r->nrows;) {
        const bench_result *x = &r->rows[idx[k]];
        for (size_t t = 0; t < r->ntargets; t++) ms[t] = NAN;
        for (; k < r->nrows && r->rows[idx[k]].w == x->w && r->rows[idx[k]].size == x->size; k++) {
            const bench_result *y = &r->rows[idx[k]];
            ms[y->t - r->targets] = y->ok ? y->median_ms : -1;
        }
        char w[120];
        snprintf(w, sizeof w, "%s %s%s", x->w->algorithm, x->w->variant, x->w->end_to_end ? " (e2e)" : "");
        fprintf(f, "%-34.34s %-8s", w, bench_size_name(x->size));
        size_t best = r->ntargets, second = r->ntargets;
        for (size_t t = 0; t < r->ntargets; t++) {
            fprintf(f, " %10s", isnan(ms[t]) ? "" : ms[t] < 0 ? "FAILED" : bench_fmt4(a, sizeof a, ms[t]));
            if (!(ms[t] > 0)) continue;
            if (best == r->ntargets || ms[t] < ms[best]) second = best, best = t;
            else if (second == r->ntargets || ms[t] < ms[second]) second = t;
        }
        if (best < r->ntargets && second < r->ntargets)
            fprintf(f, "  [%zu] %sx", best + 1, bench_fmt4(b, sizeof b, ms[second] / ms[best]));
        else if (best < r->ntargets) fprintf(f, "  [%zu]", best + 1);
        fputc('\n', f);
    }
    free(ms);
    free(idx);
}

static void merge_usage(FILE *f)
{
    fprintf(f, "usage: gpuws bench merge RUN.json RUN.json ... [--svg FILE] [--json FILE]\n"
               "  Combines the JSON reports of gpuws bench runs made on different machines (or with different\n"
               "  backends) into one vendor comparison: the table on stdout has one line per workload and size\n"
               "  class and one column per device of every run, and 'fastest' names the fastest device and its lead\n"
               "  over the next; --svg draws the chart (bars per workload, one colour per device), --json writes the\n"
               "  merged report (which merge reads again). The reports are written all or none, never over an input.\n"
               "  Exit status: 0, 1 a run cannot be read or is not a gpuws bench report, or a report cannot be\n"
               "  written, 2 usage error.\n");
}

int bench_merge_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *json = NULL, *svg = NULL;
    const char *inputs[OUTPUT_FILES_MAX * 8];
    size_t ninputs = 0;
    tool_args ta = TOOL_ARGS_INIT("bench merge");
    ta.err = err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            merge_usage(out);
            return 0;
        }
        if (a[0] == '-' && a[1]) {
            if (tool_once(&ta, a)) return 2;
            if ((!strcmp(a, "--json") || !strcmp(a, "--svg")) && v) {
                if (tool_name(&ta, a, v, "a file name")) return 2;
                *(a[2] == 'j' ? &json : &svg) = v, i++;
                continue;
            }
            fprintf(err, "gpuws bench merge: unknown or incomplete option '%s'\n", a);
            merge_usage(err);
            return 2;
        }
        if (ninputs == sizeof inputs / sizeof inputs[0]) {
            fprintf(err, "gpuws bench merge: more than %zu runs\n", sizeof inputs / sizeof inputs[0]);
            return 2;
        }
        inputs[ninputs++] = a;
    }
    if (!ninputs) {
        fprintf(err, "gpuws bench merge: no run named (give the JSON reports of gpuws bench runs)\n");
        merge_usage(err);
        return 2;
    }
    static const char *const options[2] = { "--json", "--svg" };
    const char *paths[2] = { json, svg };
    char why[4400];
    int rc = 0;
    output_files *files = output_files_prepare(inputs, ninputs, paths, options, 2, &rc, why, sizeof why);
    if (!files) {
        fprintf(err, "gpuws bench merge: %s\n", why);
        return rc;
    }
    merged m;
    memset(&m, 0, sizeof m);
    for (size_t i = 0; i < ninputs && !rc; i++)
        if (add_run(&m, inputs[i], why, sizeof why)) {
            fprintf(err, "gpuws bench merge: %s\n", why);
            rc = 1;
        }
    if (!rc) {
        fix_pointers(&m);
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(m.rep.date, sizeof m.rep.date, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(m.rep.version, sizeof m.rep.version, "%d.%d.%d", GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR,
                 GPUWS_VERSION_PATCH);
        m.rep.argc = argc, m.rep.argv = argv;
        m.rep.size = m.rep.nrows ? m.rep.rows[0].size : BENCH_DEFAULT;
        bench_print_comparison(&m.rep, out);
        fflush(out);
        void (*const writers[2])(const bench_report *, FILE *) = { bench_write_json, bench_write_svg };
        for (size_t i = 0; i < 2 && !rc; i++) {
            if (!paths[i]) continue;
            const char *stage = output_files_stage(files, i, why, sizeof why);
            rc = !stage || bench_write_file(stage, writers[i], &m.rep, why, sizeof why);
            if (rc) output_files_reword(files, i, why, sizeof why);
        }
        if (!rc) rc = output_files_commit(files, why, sizeof why);
        if (rc) fprintf(err, "gpuws bench merge: cannot write %s (no report written)\n", why);
        for (size_t i = 0; i < 2 && !rc; i++)
            if (paths[i]) fprintf(err, "gpuws bench merge: %s report: %s\n", i ? "SVG" : "JSON", paths[i]);
    }
    merged_free(&m);
    output_files_destroy(files);
    return rc ? 1 : 0;
}
