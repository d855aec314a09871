/* The picture: one group of horizontal bars per workload, one bar per target (and per peer, with --compare), the
 * median time on a log scale (shorter is faster), FAILED rows marked. Plain SVG 1.1 that browsers open directly. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    WIDTH = 1120,
    LABEL_X = 10,
    PLOT_X = 380,
    PLOT_W = 600,
    BAR_H = 11,
    BAR_STEP = 14,
    GROUP_GAP = 12,
    LEGEND_STEP = 16
};

/* NVIDIA green first (CUDA usually runs first), then the usual categorical colours. */
static const char *const palette[] = { "#76b900", "#1f77b4", "#ff7f0e", "#9467bd", "#d62728",
                                       "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22" };
#define NPALETTE (sizeof palette / sizeof palette[0])

static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

typedef struct {
    size_t series;
    bool ok;
    double ms;
    char tip[400];
} bar;

typedef struct {
    char label[200];
    size_t first, n; /* bars[first .. first + n) */
} group;

/* Everything the drawing needs, gathered from the report: series are the targets, then each distinct peer. */
typedef struct {
    group *g;
    size_t ng;
    bar *b;
    size_t nb;
    char (*series)[200];
    size_t ns;
} chart;

static size_t peer_series(chart *c, size_t ntargets, const bench_peer *p)
{
    char name[200];
    snprintf(name, sizeof name, "%s %s", p->backend, p->device);
    for (size_t i = ntargets; i < c->ns; i++)
        if (!strcmp(c->series[i], name)) return i;
    snprintf(c->series[c->ns], sizeof c->series[0], "%s", name);
    return c->ns++;
}

/* The peers of the workload of row x join the last group. */
static void add_peers(chart *c, const bench_report *r, const bench_result *x)
{
    for (size_t p = 0; p < r->npeers; p++) {
        const bench_peer *q = &r->peers[p];
        if (strcmp(q->algorithm, x->w->algorithm) || strcmp(q->variant, x->w->variant) ||
            strcmp(q->size_class, bench_size_name(x->size)))
            continue;
        bar *b = &c->b[c->nb++];
        char a[24];
        b->series = peer_series(c, r->ntargets, q);
        b->ok = q->ok, b->ms = q->median_ms;
        snprintf(b->tip, sizeof b->tip, "%s %s: %s%s", q->backend, q->device,
                 q->ok ? bench_fmt4(a, sizeof a, q->median_ms) : "FAILED: ", q->ok ? " ms" : q->error);
        c->g[c->ng - 1].n++;
    }
}

static void add_row(chart *c, const bench_report *r, const bench_result *x)
{
    bar *b = &c->b[c->nb++];
    char m[24], gb[24], gf[24];
    size_t t = x->t ? (size_t)(x->t - r->targets) : 0;
    b->series = t < r->ntargets ? t : 0;
    b->ok = x->ok, b->ms = x->median_ms;
    if (x->ok)
        snprintf(b->tip, sizeof b->tip, "%s: %s ms (median of %d), %s GB/s, %s GFLOP/s", c->series[b->series],
                 bench_fmt4(m, sizeof m, x->median_ms), x->repeats, bench_fmt4(gb, sizeof gb, x->gbs),
                 bench_fmt4(gf, sizeof gf, x->gflops));
    else snprintf(b->tip, sizeof b->tip, "%s: FAILED: %s", c->series[b->series], x->error);
    c->g[c->ng - 1].n++;
}

static void chart_free(chart *c)
{
    free(c->g);
    free(c->b);
    free(c->series);
}

static int gather(const bench_report *r, chart *c)
{
    memset(c, 0, sizeof *c);
    size_t *idx = bench_sorted_rows(r);
    c->g = calloc(r->nrows + 1, sizeof *c->g);
    c->b = calloc(r->nrows * (r->npeers + 1) + 1, sizeof *c->b); /* every peer may match every group */
    c->series = calloc(r->ntargets + r->npeers + 1, sizeof *c->series);
    if (!idx || !c->g || !c->b || !c->series) {
        free(idx);
        chart_free(c);
        return -1;
    }
    for (size_t i = 0; i < r->ntargets; i++)
        snprintf(c->series[i], sizeof c->series[0], "%s", r->targets[i].short_label);
    c->ns = r->ntargets;
    for (size_t k = 0; k < r->nrows; k++) {
        const bench_result *x = &r->rows[idx[k]], *prev = k ? &r->rows[idx[k - 1]] : NULL;
        if (!prev || prev->w != x->w || prev->size != x->size) {
            if (prev) add_peers(c, r, prev);
            group *g = &c->g[c->ng++];
            snprintf(g->label, sizeof g->label, "%s %s%s, %s", x->w->algorithm, x->w->variant,
                     x->w->end_to_end ? " (end to end)" : "", x->counts.size_label);
            g->first = c->nb;
        }
        add_row(c, r, x);
    }
    if (r->nrows) add_peers(c, r, &r->rows[idx[r->nrows - 1]]);
    free(idx);
    return 0;
}

void bench_write_svg(const bench_report *r, FILE *f)
{
    chart c;
    if (gather(r, &c)) {
        fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"10\" y=\"20\">out of "
              "memory</text></svg>\n",
              f);
        return;
    }
    /* the log axis spans whole decades around every successful time */
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < c.nb; i++)
        if (c.b[i].ok && c.b[i].ms > 0) lo = fmin(lo, c.b[i].ms), hi = fmax(hi, c.b[i].ms);
    int d0 = isfinite(lo) ? (int)floor(log10(lo)) : -3, d1 = isfinite(hi) ? (int)ceil(log10(hi)) : 3;
    if (d1 <= d0) d1 = d0 + 1;
    const int legend_rows = (int)((c.ns + 1) / 2), top = 60 + legend_rows * LEGEND_STEP + 36;
    int height = top + 20;
    for (size_t i = 0; i < c.ng; i++) height += (int)c.g[i].n * BAR_STEP + GROUP_GAP;

    fprintf(
        f,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
        "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
        WIDTH, height, WIDTH, height);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", WIDTH, height);
    fputs("<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">gpuws bench: median time per run "
          "(log scale, shorter is faster)</text>\n",
          f);
    fprintf(f, "<text x=\"10\" y=\"40\" fill=\"#555\">");
    put_text(f, r->date);
    fputs(" on ", f);
    put_text(f, r->host);
    fprintf(f,
            ", gpuws %s, %s sizes; each result checked against the scalar reference before timing; "
            "device events, median of the timed runs</text>\n",
            r->version, bench_size_name(r->size));
    for (size_t i = 0; i < c.ns; i++) { /* legend, two columns */
        int x = 10 + (int)(i % 2) * 540, y = 56 + (int)(i / 2) * LEGEND_STEP;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"11\" fill=\"%s\"/>", x, y, palette[i % NPALETTE]);
        fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 18, y + 10);
        put_text(f, c.series[i]);
        fputs(i >= r->ntargets ? " (peer)</text>\n" : "</text>\n", f);
    }
    /* decade grid and labels */
    const double span = d1 - d0;
    for (int d = d0; d <= d1; d++) {
        double x = PLOT_X + PLOT_W * (d - d0) / span;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>", x, top - 6, x, height - 14);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%g ms</text>\n", x, top - 10,
                pow(10.0, d));
    }
    int y = top;
    for (size_t gi = 0; gi < c.ng; gi++) {
        const group *g = &c.g[gi];
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", LABEL_X, y + BAR_H - 1);
        put_text(f, g->label);
        fputs("</text>\n", f);
        for (size_t k = 0; k < g->n; k++, y += BAR_STEP) {
            const bar *b = &c.b[g->first + k];
            fputs("<g><title>", f);
            put_text(f, b->tip);
            fputs("</title>", f);
            if (b->ok && b->ms > 0) {
                double w = PLOT_W * (log10(b->ms) - d0) / span;
                char m[24];
                if (w < 1) w = 1;
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", PLOT_X, y, w, BAR_H,
                        palette[b->series % NPALETTE]);
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" fill=\"#333\">%s</text>", PLOT_X + w + 4, y + BAR_H - 1,
                        bench_fmt4(m, sizeof m, b->ms));
            } else {
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"%s\"/>", PLOT_X,
                        y, BAR_H, BAR_H, palette[b->series % NPALETTE]);
                fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#c00\" font-weight=\"bold\">FAILED</text>",
                        PLOT_X + BAR_H + 4, y + BAR_H - 1);
            }
            fputs("</g>\n", f);
        }
        y += GROUP_GAP;
    }
    fputs("</svg>\n", f);
    chart_free(&c);
}
