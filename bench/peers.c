/* --compare: reads a peers file (rows written by bench/peers/run_peers.py, or any gpuws bench JSON) and pairs each
 * peer row with the best gpuws row per device for the same workload. */
#include "bench.h"
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, char *err, size_t errn)
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

int bench_read_peers(const char *path, bench_peer **peers, size_t *n, char *err, size_t errn)
{
    *peers = NULL;
    *n = 0;
    char *text = slurp(path, err, errn);
    if (!text) return -1;
    json_value doc;
    char why[160];
    int rc = json_parse(text, &doc, why, sizeof why);
    free(text);
    if (rc) {
        snprintf(err, errn, "%s: not JSON: %s", path, why);
        return -1;
    }
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
            c[k++] = (bench_comparison){q, r, q->median_ms / r->median_ms, strcmp(q->size, r->counts.size_label) != 0};
        }
    }
    *out = c;
    return c ? k : 0;
}
