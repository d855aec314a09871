#include "catalog_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    double flux;
    int64_t id;
    size_t index;
} key;

static int by_flux(const void *a, const void *b)
{
    const key *p = a, *q = b;
    if (p->flux != q->flux) return p->flux > q->flux ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

size_t *catalog_order_by_flux(const gpuws_source *sources, size_t n)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!order || !keys) {
        free(order);
        free(keys);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) keys[i] = (key){ sources[i].flux, sources[i].id, i };
    qsort(keys, n, sizeof *keys, by_flux);
    for (size_t i = 0; i < n; i++) order[i] = keys[i].index;
    free(keys);
    return order;
}

int catalog_csv_write(const char *path, const gpuws_source *sources, size_t n, char *err, size_t errlen)
{
    size_t *order = catalog_order_by_flux(sources, n);
    if (!order) {
        snprintf(err, errlen, "%s: out of memory sorting %zu sources", path, n);
        return -1;
    }
    FILE *f = fopen(path, "wx"); /* a new file only: the unlink below removes nothing else */
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        free(order);
        return -1;
    }
    int bad = fprintf(f, "id,x,y,flux,npix,peak\n") < 0;
    for (size_t k = 0; k < n && !bad; k++) {
        const gpuws_source *s = &sources[order[k]];
        bad = fprintf(f, "%lld,%.6f,%.6f,%.9g,%lld,%.9g\n", (long long)s->id, s->x, s->y, s->flux, (long long)s->npix,
                      s->peak) < 0;
    }
    free(order);
    if (fclose(f) != 0 || bad) {
        snprintf(err, errlen, "%s: writing failed: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}
