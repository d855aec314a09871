/* --compare: reads a peers file (rows written by bench/peers/run_peers.py, or any gpuws bench JSON) and pairs each
 * peer row with the best gpuws row per device for the same workload. */
#include "bench.h"
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *bench_slurp(const char *path, char *err, size_t errn)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) free(buf);
            buf = nb, cap *= 2;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errn, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

static void copy_field(char *dst, size_t n, const json_value *row, const char *key, const char *def)
{
    snprintf(dst, n, "%s", json_get_string(row, key, def));
}

int bench_read_json(const char *path, json_value *doc, char *err, size_t errn)
{
    char *text = bench_slurp(path, err, errn);
    if (!text) return -1;
    char why[160];
    int rc = json_parse(text, doc, why, sizeof why);
    free(text);
    if (rc) snprintf(err, errn, "%s: not JSON: %s", path, why);
    return rc ? -1 : 0;
}

int bench_read_peers(const char *path, bench_peer **peers, size_t *n, char *err, size_t errn)
{
    *peers = NULL;
    *n = 0;
    json_value doc;
    if (bench_read_json(path, &doc, err, errn)) return -1;
    const json_value *rows = json_get(&doc, "rows");
    if (!rows || rows->type != JSON_ARRAY) {
        snprintf(err, errn, "%s: no \"rows\" array (expected the JSON that gpuws bench or run_peers.py writes)", path);
        json_free(&doc);
        return -1;
    }
    bench_peer *p = calloc(rows->n ? rows->n : 1, sizeof *p);
    if (!p) {
        snprintf(err, errn, "%s: out of memory", path);
        json_free(&doc);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < rows->n; i++) {
        const json_value *row = &rows->items[i];
        if (!json_get_string(row, "algorithm", NULL) || !json_get_string(row, "variant", NULL)) continue;
        bench_peer *q = &p[k++];
        copy_field(q->algorithm, sizeof q->algorithm, row, "algorithm", "");
        copy_field(q->variant, sizeof q->variant, row, "variant", "");
        copy_field(q->size, sizeof q->size, row, "size", "");
        copy_field(q->size_class, sizeof q->size_class, row, "size_class", "default");
        copy_field(q->backend, sizeof q->backend, row, "backend", "peer");
        copy_field(q->device, sizeof q->device, row, "device", "");
        copy_field(q->error, sizeof q->error, row, "error", "");
        q->median_ms = json_get_number(row, "median_ms", 0);
        q->ok = !strcmp(json_get_string(row, "status", "ok"), "ok") && q->median_ms > 0;
    }
    json_free(&doc);
    *peers = p;
    *n = k;
    return 0;
}

/* The number of elements a size label describes: the product of its leading dimension expression, numbers joined by
 * 'x', '*' or '^' (a power), spaces allowed around them, each number plain, in exponent form (1e+08) or with a binary
 * suffix (4M = 4 * 2^20, as gpuws writes it); text before the first number ("N = ") is skipped and the expression
 * ends at the first word that is not an operator ("f32", "values", a comma). 0 when there is no number. */
static double size_elements(const char *s)
{
    while (*s && !(*s >= '0' && *s <= '9')) s++;
    double prod = 0, base = 0;
    char op = '*';
    for (;;) {
        char *end;
        double v = strtod(s, &end);
        if (end == s) break;
        s = end;
        if (*s == 'k' || *s == 'K') v *= 1024.0, s++;
        else if (*s == 'M') v *= 1048576.0, s++;
        else if (*s == 'G') v *= 1073741824.0, s++;
        if (op == '^') {
            double pw = 1;
            for (int i = 0; i < (int)v && i < 64; i++) pw *= base;
            prod = (prod == 0 ? 1 : prod / base) * pw;
        } else {
            prod = (prod == 0 ? 1 : prod) * v;
        }
        base = v;
        const char *t = s;
        while (*t == ' ') t++;
        if (*t != 'x' && *t != '*' && *t != '^') break;
        op = *t == '^' ? '^' : '*';
        t++;
        while (*t == ' ') t++;
        if (!(*t >= '0' && *t <= '9')) break;
        s = t;
    }
    return prod;
}

/* The count before a word in a label ("300 labels" -> 300), or -1 without it. */
static long count_before(const char *s, const char *word)
{
    const char *w = strstr(s, word);
    if (!w || w == s) return -1;
    const char *d = w - 1;
    while (d > s && *d == ' ') d--;
    const char *e = d + 1;
    while (d > s && d[-1] >= '0' && d[-1] <= '9') d--;
    return (*d >= '0' && *d <= '9' && d < e) ? strtol(d, NULL, 10) : -1;
}

bool bench_sizes_match(const char *a, const char *b)
{
    if (!strcmp(a, b)) return true;
    const double x = size_elements(a), y = size_elements(b);
    if (x <= 0 || y <= 0 || x != y) return false;
    const long la = count_before(a, "label"), lb = count_before(b, "label");
    return la < 0 || lb < 0 || la == lb;
}

size_t bench_compare(const bench_result *rows, size_t nrows, const bench_peer *peers, size_t npeers,
                     bench_comparison **out)
{
    size_t cap = 16, k = 0;
    bench_comparison *c = malloc(cap * sizeof *c);
    for (size_t p = 0; c && p < npeers; p++) {
        const bench_peer *q = &peers[p];
        if (!q->ok) continue;
        for (size_t i = 0; i < nrows; i++) {
            const bench_result *r = &rows[i];
            if (!r->ok || !r->t || strcmp(r->w->algorithm, q->algorithm) || strcmp(r->w->variant, q->variant) ||
                strcmp(bench_size_name(r->size), q->size_class))
                continue;
            /* the best row of this device: skip r when another row on the same device is faster (or as fast and
             * earlier) */
            bool best = true;
            for (size_t j = 0; j < nrows && best; j++) {
                const bench_result *o = &rows[j];
                if (j == i || !o->ok || !o->t || o->w != r->w || o->size != r->size ||
                    strcmp(o->t->info.name, r->t->info.name))
                    continue;
                best = !(o->median_ms < r->median_ms || (o->median_ms == r->median_ms && j < i));
            }
            if (!best) continue;
            if (k == cap) {
                bench_comparison *nc = realloc(c, 2 * cap * sizeof *nc);
                if (!nc) break;
                c = nc, cap *= 2;
            }
            c[k++] = (bench_comparison){ q, r, q->median_ms / r->median_ms,
                                         !bench_sizes_match(q->size, r->counts.size_label) };
        }
    }
    *out = c;
    return c ? k : 0;
}
