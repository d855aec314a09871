/* The table for people: the ceilings measured on each target, one line per row grouped by workload, FAILED rows
 * with their reason, and the comparisons with peers. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *bench_fmt4(char *b, size_t n, double x)
{
    if (!(x > 0) || !isfinite(x)) snprintf(b, n, "-");
    else if (x >= 1000) snprintf(b, n, "%.0f", x);
    else if (x >= 100) snprintf(b, n, "%.1f", x);
    else if (x >= 10) snprintf(b, n, "%.2f", x);
    else if (x >= 1) snprintf(b, n, "%.3f", x);
    else if (x >= 0.001) snprintf(b, n, "%.4f", x);
    else snprintf(b, n, "%.2e", x);
    return b;
}

static const bench_report *sort_report;
static int cmp_rows(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const bench_result *x = &sort_report->rows[i], *y = &sort_report->rows[j];
    int c = strcmp(x->w->algorithm, y->w->algorithm);
    if (!c) c = strcmp(x->w->variant, y->w->variant);
    if (!c) c = (int)x->size - (int)y->size;
    return c ? c : (i > j) - (i < j);
}

size_t *bench_sorted_rows(const bench_report *r)
{
    size_t *idx = malloc((r->nrows ? r->nrows : 1) * sizeof *idx);
    if (!idx) return NULL;
    for (size_t i = 0; i < r->nrows; i++) idx[i] = i;
    sort_report = r;
    qsort(idx, r->nrows, sizeof *idx, cmp_rows);
    return idx;
}

static void print_ceilings(const bench_report *r, FILE *f)
{
    char a[24], b[24], c[24], d[24], e[24];
    fprintf(f, "%-44s %12s %16s %16s %12s %15s\n", "ceilings measured in this run", "copy GB/s", "FMA f32 GFLOP/s",
            "FMA f64 GFLOP/s", "ridge FLOP/B", "timer floor us");
    for (size_t i = 0; i < r->ntargets; i++) {
        const bench_target *t = &r->targets[i];
        fprintf(f, "  %-42.42s %12s %16s %16s %12s %15s\n", t->short_label, bench_fmt4(a, sizeof a, t->copy_gbs),
                bench_fmt4(b, sizeof b, t->fma_gflops[0]), bench_fmt4(c, sizeof c, t->fma_gflops[1]),
                bench_fmt4(d, sizeof d, t->copy_gbs > 0 ? t->fma_gflops[0] / t->copy_gbs : 0),
                bench_fmt4(e, sizeof e, t->timer_floor_us));
        if (t->ceiling_error[0]) fprintf(f, "    (%s)\n", t->ceiling_error);
    }
    fputc('\n', f);
}

static void print_comparisons(const bench_report *r, FILE *f)
{
    if (!r->npeers) return;
    char a[24], b[24], c[24], w[120];
    fprintf(f, "\ngpuws against peers (best gpuws row per device; speed-up = peer time / gpuws time):\n");
    fprintf(f, "%-30s %-40s %10s  %-40s %10s %9s\n", "workload", "peer", "peer ms", "gpuws", "gpuws ms", "speed-up");
    for (size_t i = 0; i < r->ncmp; i++) {
        const bench_comparison *m = &r->cmp[i];
        char peer[80];
        snprintf(w, sizeof w, "%s %s", m->peer->algorithm, m->peer->variant);
        snprintf(peer, sizeof peer, "%s %s", m->peer->backend, m->peer->device);
        fprintf(f, "%-30.30s %-40.40s %10s  %-40.40s %10s %8sx%s\n", w, peer,
                bench_fmt4(a, sizeof a, m->peer->median_ms), m->row->t->short_label,
                bench_fmt4(b, sizeof b, m->row->median_ms), bench_fmt4(c, sizeof c, m->ratio),
                m->size_differs ? "  (sizes differ)" : "");
        if (m->size_differs)
            fprintf(f, "%30s peer size %s; gpuws size %s\n", "", m->peer->size, m->row->counts.size_label);
    }
    size_t unmatched = 0;
    for (size_t p = 0; p < r->npeers; p++) {
        bool found = false;
        for (size_t i = 0; i < r->ncmp && !found; i++) found = r->cmp[i].peer == &r->peers[p];
        if (!found) {
            if (!unmatched++) fprintf(f, "peer rows without a gpuws row to compare with:\n");
            fprintf(f, "  %s %s (%s, %s)%s%s\n", r->peers[p].algorithm, r->peers[p].variant, r->peers[p].backend,
                    r->peers[p].size_class, r->peers[p].ok ? "" : ": ", r->peers[p].ok ? "" : r->peers[p].error);
        }
    }
}

void bench_print_table(const bench_report *r, FILE *f)
{
    print_ceilings(r, f);
    fprintf(f, "%-30s %-18s %-40s %10s %10s %9s %9s %-9s %8s %8s %10s %8s\n", "workload", "size", "target", "median ms",
            "min ms", "GB/s", "GFLOP/s", "ceiling", "vs ref", "ocl/cuda", "b2b ms", "b2b o/c");
    size_t *idx = bench_sorted_rows(r);
    const bench_result *prev = NULL;
    for (size_t k = 0; idx && k < r->nrows; k++) {
        const bench_result *x = &r->rows[idx[k]];
        char w[120], a[24], b[24], c[24], d[24], e[24], g[24], h[24], k2[24], ceil[24];
        snprintf(w, sizeof w, "%s %s%s", x->w->algorithm, x->w->variant, x->w->end_to_end ? " (e2e)" : "");
        bool same = prev && prev->w == x->w && prev->size == x->size;
        prev = x;
        if (!x->ok) {
            fprintf(f, "%-30.30s %-18.18s %-40.40s FAILED: %s\n", same ? "" : w, same ? "" : x->counts.size_label,
                    x->t ? x->t->short_label : "", x->error);
            continue;
        }
        if (x->bound && x->fraction > 0)
            snprintf(ceil, sizeof ceil, "%3.0f%% %s", 100 * x->fraction, x->bound[0] == 'm' ? "mem" : "fma");
        else snprintf(ceil, sizeof ceil, "%s", x->bound && x->bound[0] == 'h' ? "link" : "-");
        if (x->t && x->t->backend == GPUWS_BACKEND_CPU && x->speedup == 1) snprintf(e, sizeof e, "ref");
        else if (x->speedup > 0) snprintf(e, sizeof e, "%sx", bench_fmt4(g, sizeof g, x->speedup));
        else snprintf(e, sizeof e, "-");
        fprintf(f, "%-30.30s %-18.18s %-40.40s %10s %10s %9s %9s %-9s %8s %8s %10s %8s\n", same ? "" : w,
                same ? "" : x->counts.size_label, x->t ? x->t->short_label : "", bench_fmt4(a, sizeof a, x->median_ms),
                bench_fmt4(b, sizeof b, x->min_ms), bench_fmt4(c, sizeof c, x->gbs), bench_fmt4(d, sizeof d, x->gflops),
                ceil, e, x->ocl_cuda > 0 ? bench_fmt4(g, sizeof g, x->ocl_cuda) : "-",
                bench_fmt4(h, sizeof h, x->batch_ms), bench_fmt4(k2, sizeof k2, x->ocl_cuda_batch));
    }
    free(idx);
    print_comparisons(r, f);
}
