/* The numbering of a labelling done in row bands, shared by the banded labelling of host images (label_host.c),
 * the parts of several callers (gpuws_label_host_reduce) and gpuws_label on device buffers of more pixels than one
 * labelling's int32 indices reach (label.c). Not installed.
 *
 * A band's labels are numbered 1..N_b in raster order within the band; band b's label l is the provisional label
 * offset_b + l, offset_b = N_0 + ... + N_(b-1) (64-bit). A component cut by band borders is several provisional
 * labels that touch across a border (the last row of band b against the first row of band b + 1), so they are
 * united in a union-find over the labels found on a band's first or last row ("nodes", numbered in provisional
 * order, the root of a set its smallest). A component's first pixel in raster order is the first pixel of its
 * smallest provisional label, so the components are numbered by their roots in provisional order: a root's number
 * is its provisional label less the non-root nodes before it, a node that is not a root takes its root's number, and
 * every other label of a band is a component of its own, numbered on from the band's offset less the non-root nodes
 * before it: SciPy's numbering whatever the banding. */
#ifndef GPUWS_LABEL_NUMBERING_H
#define GPUWS_LABEL_NUMBERING_H

#include "../common/driver.h"

typedef struct {
    const char *name;    /* the public call, for messages */
    size_t w, bands;     /* pixels a row; bands */
    size_t *count;       /* [bands]: N_b (the caller fills it before harvesting band b) */
    uint64_t *offset;    /* [bands + 1]: provisional label of band b's label l = offset[b] + l */
    size_t *node_base;   /* [bands + 1]: band b's nodes are [node_base[b], node_base[b + 1]) */
    size_t *nh_before;   /* [bands + 1]: nodes that are not roots before band b's */
    int32_t *node_label; /* each node's band label, ascending within a band */
    size_t *parent;      /* union-find; after numbering, each node's root */
    int32_t *final;      /* after numbering: each node's final number */
    size_t nodes, node_cap;
    int32_t *dense; /* by band label: a band's marks and node numbers while it is joined (zero between bands) */
    size_t dense_cap;
    size_t *prev_last, *first; /* the previous band's last row and this band's first row as nodes */
    size_t total;              /* after numbering: the components */
} gpuws__label_numbering;

/* The state of `bands` bands of rows of w pixels (zeroed, then allocated; free it also on error). */
gpuws_status gpuws__numbering_make(gpuws__label_numbering *nb, const char *name, size_t w, size_t bands);
void gpuws__numbering_free(gpuws__label_numbering *nb);

/* Room for bands of up to max_count labels and max_nodes nodes in all, so that harvesting and numbering allocate
 * nothing more (for a caller that has written its output before it harvests). The label table is calloc'd: pages
 * that no label reaches are never touched. */
gpuws_status gpuws__numbering_reserve(gpuws__label_numbering *nb, size_t max_count, size_t max_nodes);

/* Band b, in band order, count[b] set: its border labels become nodes (ascending), and its first row is united with
 * the previous band's last row. row0, row1: the band's first and last rows of labels (the same row for a band of
 * one row). */
gpuws_status gpuws__numbering_harvest(gpuws__label_numbering *nb, int conn, size_t b, const int32_t *row0,
                                      const int32_t *row1);

/* After the last band: offsets, roots, every node's final number and the total (GPUWS_ERR_UNSUPPORTED past 2^31 - 1
 * components). */
gpuws_status gpuws__numbering_number(gpuws__label_numbering *nb);

/* Band b's table after numbering: t[l] = the final number of its label l, t holding count[b] + 1. */
void gpuws__numbering_band_table(const gpuws__label_numbering *nb, size_t b, int32_t *t);

/* After numbering, for label_remap: nh[j] = the nodes before node j that are not roots, j = 0 .. nodes. */
void gpuws__numbering_non_roots(const gpuws__label_numbering *nb, uint64_t *nh);

#endif
