/* The numbering of a labelling in row bands: label_numbering.h says what and why. */
#include "label_numbering.h"
#include "union_find.h"

#include <string.h>

#define NONE SIZE_MAX /* no node: background */

void gpuws__numbering_free(gpuws__label_numbering *nb)
{
    gpuws__free(nb->count), gpuws__free(nb->offset), gpuws__free(nb->node_base), gpuws__free(nb->nh_before);
    gpuws__free(nb->node_label), gpuws__free(nb->parent), gpuws__free(nb->final), gpuws__free(nb->dense);
    gpuws__free(nb->prev_last), gpuws__free(nb->first);
    memset(nb, 0, sizeof *nb);
}

gpuws_status gpuws__numbering_make(gpuws__label_numbering *nb, const char *name, size_t w, size_t bands)
{
    memset(nb, 0, sizeof *nb);
    nb->name = name, nb->w = w, nb->bands = bands;
    const size_t nbands = bands + 1;
    nb->count = gpuws__calloc(nbands, sizeof *nb->count);
    nb->offset = gpuws__calloc(nbands, sizeof *nb->offset);
    nb->node_base = gpuws__calloc(nbands, sizeof *nb->node_base);
    nb->nh_before = gpuws__calloc(nbands, sizeof *nb->nh_before);
    nb->prev_last = gpuws__malloc(w * sizeof *nb->prev_last);
    nb->first = gpuws__malloc(w * sizeof *nb->first);
    if (!nb->count || !nb->offset || !nb->node_base || !nb->nh_before || !nb->prev_last || !nb->first)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the numbering of %zu bands (%zu bytes)",
                            name, bands, 4 * nbands * sizeof(size_t) + 2 * w * sizeof(size_t));
    return GPUWS_OK;
}

/* dense holds at least n + 1 entries, zero. */
static gpuws_status dense_reserve(gpuws__label_numbering *nb, size_t n)
{
    if (n + 1 <= nb->dense_cap) return GPUWS_OK;
    int32_t *d = gpuws__realloc(nb->dense, (n + 1) * sizeof *d);
    if (!d)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for a table of %zu labels (%zu bytes)",
                            nb->name, n + 1, (n + 1) * sizeof *d);
    memset(d + nb->dense_cap, 0, (n + 1 - nb->dense_cap) * sizeof *d);
    nb->dense = d, nb->dense_cap = n + 1;
    return GPUWS_OK;
}

/* node_label, parent and final hold at least cap nodes. */
static gpuws_status nodes_reserve(gpuws__label_numbering *nb, size_t cap)
{
    if (cap <= nb->node_cap) return GPUWS_OK;
    int32_t *l = gpuws__realloc(nb->node_label, cap * sizeof *l);
    if (l) nb->node_label = l;
    size_t *p = l ? gpuws__realloc(nb->parent, cap * sizeof *p) : NULL;
    if (p) nb->parent = p;
    int32_t *f = p ? gpuws__realloc(nb->final, cap * sizeof *f) : NULL;
    if (!f)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for %zu border labels (%zu bytes)", nb->name,
                            cap, cap * (sizeof *l + sizeof *p + sizeof *f));
    nb->final = f, nb->node_cap = cap;
    return GPUWS_OK;
}

gpuws_status gpuws__numbering_reserve(gpuws__label_numbering *nb, size_t max_count, size_t max_nodes)
{
    if (max_count + 1 > nb->dense_cap) {
        int32_t *d = gpuws__calloc(max_count + 1, sizeof *d);
        if (!d)
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for a table of %zu labels (%zu bytes)",
                                nb->name, max_count + 1, (max_count + 1) * sizeof *d);
        gpuws__free(nb->dense);
        nb->dense = d, nb->dense_cap = max_count + 1;
    }
    return nodes_reserve(nb, max_nodes);
}

static gpuws_status node_add(gpuws__label_numbering *nb, int32_t label)
{
    gpuws_status st;
    if (nb->nodes == nb->node_cap && (st = nodes_reserve(nb, nb->node_cap ? 2 * nb->node_cap : 4096))) return st;
    nb->node_label[nb->nodes] = label;
    nb->parent[nb->nodes] = nb->nodes;
    nb->nodes++;
    return GPUWS_OK;
}

/* A set's root is its smallest node: its smallest provisional label. */
GPUWS__UNION_FIND(uf, size_t)

gpuws_status gpuws__numbering_harvest(gpuws__label_numbering *nb, int conn, size_t b, const int32_t *row0,
                                      const int32_t *row1)
{
    const size_t w = nb->w, n = nb->count[b];
    gpuws_status st = dense_reserve(nb, n);
    if (st) return st;
    int32_t *d = nb->dense;
    for (size_t x = 0; x < w; x++) d[row0[x]] = d[row1[x]] = 1;
    nb->node_base[b] = nb->nodes;
    for (size_t l = 1; l <= n; l++) {
        if (!d[l]) continue;
        if ((st = node_add(nb, (int32_t)l))) break;
        d[l] = (int32_t)(nb->nodes - nb->node_base[b]); /* the node, 1-based within the band */
    }
    nb->node_base[b + 1] = nb->nodes;
    const size_t base = nb->node_base[b] - 1; /* d[l] is 1-based */
    if (!st) {
        for (size_t x = 0; x < w; x++) nb->first[x] = row0[x] ? base + (size_t)d[row0[x]] : NONE;
        for (size_t x = 0; b > 0 && x < w; x++) {
            const size_t a = nb->prev_last[x];
            if (a == NONE) continue;
            if (nb->first[x] != NONE) uf_unite(nb->parent, a, nb->first[x]);
            if (conn == 8 && x > 0 && nb->first[x - 1] != NONE) uf_unite(nb->parent, a, nb->first[x - 1]);
            if (conn == 8 && x + 1 < w && nb->first[x + 1] != NONE) uf_unite(nb->parent, a, nb->first[x + 1]);
        }
        for (size_t x = 0; x < w; x++) nb->prev_last[x] = row1[x] ? base + (size_t)d[row1[x]] : NONE;
    }
    d[0] = 0;
    for (size_t x = 0; x < w; x++) d[row0[x]] = d[row1[x]] = 0;
    return st;
}

/* Nodes are in provisional order, so a root's number is its provisional label less the nodes before it that are
 * not roots; a node that is not a root takes its root's number (the root comes first). */
gpuws_status gpuws__numbering_number(gpuws__label_numbering *nb)
{
    const size_t nbands = nb->bands;
    for (size_t b = 0; b < nbands; b++) nb->offset[b + 1] = nb->offset[b] + nb->count[b];
    size_t merged = 0;
    for (size_t i = 0; i < nb->nodes; i++) {
        nb->parent[i] = uf_find(nb->parent, i);
        merged += nb->parent[i] != i;
    }
    const uint64_t total = nb->offset[nbands] - merged;
    if (total > INT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "%s: %llu components; labels are int32, so at most 2^31 - 1 components", nb->name,
                            (unsigned long long)total);
    nb->total = (size_t)total;
    size_t nh = 0;
    for (size_t b = 0; b < nbands; b++) {
        nb->nh_before[b] = nh;
        for (size_t i = nb->node_base[b]; i < nb->node_base[b + 1]; i++) {
            if (nb->parent[i] == i) {
                nb->final[i] = (int32_t)(nb->offset[b] + (uint64_t)nb->node_label[i] - nh);
            } else {
                nb->final[i] = nb->final[nb->parent[i]];
                nh++;
            }
        }
    }
    nb->nh_before[nbands] = nh;
    return GPUWS_OK;
}

/* Between its border labels the numbers run on from the band's offset, less the nodes merged into earlier roots. */
void gpuws__numbering_band_table(const gpuws__label_numbering *nb, size_t b, int32_t *t)
{
    const size_t n = nb->count[b], end = nb->node_base[b + 1];
    const uint64_t base = nb->offset[b];
    size_t j = nb->node_base[b], nh = nb->nh_before[b];
    t[0] = 0;
    for (size_t l = 1; l <= n; l++) {
        if (j < end && (size_t)nb->node_label[j] == l) {
            t[l] = nb->final[j];
            nh += nb->parent[j] != j;
            j++;
        } else {
            t[l] = (int32_t)(base + l - nh);
        }
    }
}

void gpuws__numbering_non_roots(const gpuws__label_numbering *nb, uint64_t *nh)
{
    nh[0] = 0;
    for (size_t j = 0; j < nb->nodes; j++) nh[j + 1] = nh[j] + (nb->parent[j] != j);
}
