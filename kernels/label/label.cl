/* Connected-component labelling, numbered like scipy.ndimage.label. The plan (kernels/label/label.c, and
 * docs/algorithms/label.md) in five launches:
 *   local    one work-group per 32x32 tile: union-find in local memory, writes L = 1 + global index of the
 *            pixel's root within the tile (0 for background)
 *   merge    one work-item per tile-border pixel: unites it with its neighbours in other tiles (global atomic_min)
 *   flatten  one work-group per chunk of 2048 raster-consecutive pixels: points every pixel at its root, numbers
 *            the chunk's roots in raster order (root := -(rank in chunk + 1)), counts them
 *   scan     one work-group: exclusive prefix sum of the chunk counts, total at the end
 *   relabel  L = chunk offset + rank in chunk + 1, read at each pixel's root
 * Every union links the larger root under the smaller, so a component's final root is its smallest raster index,
 * its first pixel: ranking the roots in raster order gives SciPy's numbering.
 *
 * L encodes a parent p as p + 1 so that background stays 0, its final value: no pass writes background after
 * `local`. Indices are int: the host refuses images of 2^31 pixels or more.
 *
 * Work-group shapes are fixed: label_layout.h, shared with the host driver and label.cu. */

#include "label_layout.h"

#define TILE_W LABEL_TILE_W
#define TILE_H LABEL_TILE_H
#define TILE_ROWS LABEL_TILE_ROWS /* work-group (TILE_W, TILE_ROWS); a work-item takes TILE_H / TILE_ROWS rows */
#define CHUNK_THREADS LABEL_CHUNK_THREADS
#define PER_THREAD LABEL_PER_THREAD
#define CHUNK LABEL_CHUNK

/* ---- union-find: parents are always smaller than their children, roots point at themselves --------------------
 * Reads are volatile: another work-item may change a parent at any time. A stale read is harmless: every value a
 * cell ever held is a member of its final component, and a union only returns after its atomic (atomic_min in
 * local memory, compare-and-swap in global memory) saw the root it expected, or both sides met at one root. */

inline int find_local(volatile __local int *s, int a)
{
    int p = s[a];
    while (p != a) {
        a = p;
        p = s[a];
    }
    return a;
}

inline void unite_local(volatile __local int *s, int a, int b)
{
    for (;;) {
        a = find_local(s, a);
        b = find_local(s, b);
        if (a == b) return;
        if (a > b) {
            const int t = a;
            a = b;
            b = t;
        }
        const int old = atomic_min(&s[b], a);
        if (old == b) return; /* b was still a root: linked */
        b = old;              /* b had gained a parent meanwhile: unite with that instead */
    }
}

/* Global forms with the +1 encoding. */
inline int find_global(volatile __global int *L, int a)
{
    int p = L[a] - 1;
    while (p != a) {
        a = p;
        p = L[a] - 1;
    }
    return a;
}

/* Points every cell on the path from x at r (atomic_min: never undoes a smaller link made meanwhile). Long chains
 * across tiles (a spiral through the whole image) would otherwise make every later find walk them again.
 * Safe because r is in x's tree and trees only ever merge, which is why unite_global links a root with a
 * compare-and-swap that fails once the root has gained a parent. With unite_local's atomic_min instead, a root
 * that is no longer a root gets re-pointed and its old parent's tree loses it until the uniting work-item has
 * joined the two again; a compress that runs in that window moves cells between trees that nobody then joins.
 * On GPUs that splits a component in two now and then on large images
 * (label::repeated_runs_of_a_percolating_image_agree covers it). */
inline void compress_global(volatile __global int *L, int x, int r)
{
    while (x > r) {
        const int next = L[x] - 1;
        atomic_min(&L[x], r + 1);
        if (next == x) break;
        x = next;
    }
}

inline void unite_global(volatile __global int *L, int a0, int b0)
{
    int a = a0, b = b0;
    for (;;) {
        a = find_global(L, a);
        b = find_global(L, b);
        if (a == b) break;
        if (a > b) {
            const int t = a;
            a = b;
            b = t;
        }
        if (atomic_cmpxchg(&L[b], b + 1, a + 1) == b + 1) break; /* b was still a root: linked */
    }
    compress_global(L, a0, a);
    compress_global(L, b0, a);
}

/* ---- local: one tile per work-group -------------------------------------------------------------------------
 * Each pixel first points at the start of its horizontal run, so only runs are united: a pixel unites with the
 * row above only where that adds a connection its left neighbour has not made (the decision tree of Wu, Otoo and
 * Suzuki's scan, restricted to the tile; links that leave the tile are `merge`'s). */

#define LOCAL_KERNEL(CONN)                                                                                        \
    __kernel __attribute__((reqd_work_group_size(TILE_W, TILE_ROWS, 1))) void label_local_##CONN(              \
        __global const uchar *mask, __global int *L, uint width, uint height, uint tiles_x, ulong slab)          \
    {                                                                                                             \
        mask += slab;                                                                                             \
        L += slab;                                                                                                \
        __local uchar m[TILE_W * TILE_H];                                                                         \
        __local int s[TILE_W * TILE_H];                                                                           \
        const uint tile = get_group_id(0), tx = tile % tiles_x, ty = tile / tiles_x;                              \
        const uint lx = get_local_id(0), x0 = tx * TILE_W, y0 = ty * TILE_H, x = x0 + lx;                         \
        for (uint r = 0; r < TILE_H / TILE_ROWS; r++) {                                                           \
            const uint ly = get_local_id(1) + r * TILE_ROWS, y = y0 + ly;                                         \
            m[ly * TILE_W + lx] = x < width && y < height && mask[(ulong)y * width + x] != 0;                     \
        }                                                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                             \
        for (uint r = 0; r < TILE_H / TILE_ROWS; r++) {                                                           \
            const uint ly = get_local_id(1) + r * TILE_ROWS, li = ly * TILE_W + lx;                               \
            if (!m[li]) continue;                                                                                 \
            uint start = li;                                                                                      \
            while (start > ly * TILE_W && m[start - 1]) start--;                                                  \
            s[li] = (int)start;                                                                                   \
        }                                                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                             \
        for (uint r = 0; r < TILE_H / TILE_ROWS; r++) {                                                           \
            const uint ly = get_local_id(1) + r * TILE_ROWS, li = ly * TILE_W + lx;                               \
            if (!m[li] || ly == 0) continue;                                                                      \
            const bool left = lx > 0 && m[li - 1], up = m[li - TILE_W];                                           \
            const bool ul = lx > 0 && m[li - TILE_W - 1];                                                         \
            if (CONN == 4) {                                                                                      \
                if (up && !(left && ul)) unite_local(s, (int)li, (int)(li - TILE_W));                             \
            } else {                                                                                              \
                const bool ur = lx + 1 < TILE_W && m[li - TILE_W + 1];                                            \
                if (left) {                                                                                       \
                    if (ur && !up) unite_local(s, (int)li, (int)(li - TILE_W + 1));                               \
                } else if (up) {                                                                                  \
                    unite_local(s, (int)li, (int)(li - TILE_W));                                                  \
                } else {                                                                                          \
                    if (ul) unite_local(s, (int)li, (int)(li - TILE_W - 1));                                      \
                    if (ur) unite_local(s, (int)li, (int)(li - TILE_W + 1));                                      \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                             \
        if (x >= width) return;                                                                                   \
        for (uint r = 0; r < TILE_H / TILE_ROWS; r++) {                                                           \
            const uint ly = get_local_id(1) + r * TILE_ROWS, li = ly * TILE_W + lx, y = y0 + ly;                  \
            if (y >= height) break;                                                                               \
            int v = 0;                                                                                            \
            if (m[li]) {                                                                                          \
                const uint root = (uint)find_local(s, (int)li);                                                   \
                v = (int)((y0 + root / TILE_W) * width + x0 + root % TILE_W) + 1;                                  \
            }                                                                                                     \
            L[(ulong)y * width + x] = v;                                                                          \
        }                                                                                                         \
    }

LOCAL_KERNEL(4)
LOCAL_KERNEL(8)

/* ---- merge: the links between tiles ---------------------------------------------------------------------------
 * Items per tile: the top row (TILE_W), the left column (TILE_H) and, for 8-connectivity, the right column
 * (TILE_H). Each item's pixel is united with every backward neighbour (left, up-left, up, up-right) that lies in
 * another tile: every link that crosses a tile border has its later pixel among these. Corners repeat a link or
 * two; uniting twice is harmless. */

#define MERGE_KERNEL(CONN, PER_TILE)                                                                              \
    __kernel void label_merge_##CONN(__global const uchar *mask, __global int *L, uint width, uint height,       \
                                     uint tiles_x, ulong items, ulong slab)                                       \
    {                                                                                                             \
        mask += slab;                                                                                             \
        L += slab;                                                                                                \
        for (ulong it = get_global_id(0); it < items; it += get_global_size(0)) {                                 \
            const ulong tile = it / (PER_TILE);                                                                     \
            const uint k = (uint)(it % (PER_TILE));                                                                 \
            const uint x0 = (uint)(tile % tiles_x) * TILE_W, y0 = (uint)(tile / tiles_x) * TILE_H;                \
            if (k < TILE_W) { /* top row: the row above */                                                        \
                const uint x = x0 + k;                                                                            \
                if (y0 == 0 || x >= width || y0 >= height) continue;                                              \
                const int p = (int)(y0 * width + x);                                                              \
                if (!mask[p]) continue;                                                                           \
                for (int dx = CONN == 8 ? -1 : 0; dx <= (CONN == 8 ? 1 : 0); dx++) {                              \
                    const int q = p - (int)width + dx;                                                            \
                    if ((int)x + dx >= 0 && (int)x + dx < (int)width && mask[q]) unite_global(L, p, q);           \
                }                                                                                                 \
            } else if (k < TILE_W + TILE_H) { /* left column: left, up-left */                                    \
                const uint y = y0 + (k - TILE_W);                                                                 \
                if (x0 == 0 || x0 >= width || y >= height) continue;                                              \
                const int p = (int)(y * width + x0);                                                              \
                if (!mask[p]) continue;                                                                           \
                if (mask[p - 1]) unite_global(L, p, p - 1);                                                       \
                if (CONN == 8 && y > 0 && mask[p - (int)width - 1]) unite_global(L, p, p - (int)width - 1);       \
            } else { /* right column below the top row: up-right */                                               \
                const uint y = y0 + (k - TILE_W - TILE_H), x = x0 + TILE_W - 1;                                   \
                if (y == y0 || x + 1 >= width || y >= height) continue;                                           \
                const int p = (int)(y * width + x);                                                               \
                if (mask[p] && mask[p - (int)width + 1]) unite_global(L, p, p - (int)width + 1);                  \
            }                                                                                                     \
        }                                                                                                         \
    }

MERGE_KERNEL(4, TILE_W + TILE_H)
MERGE_KERNEL(8, TILE_W + 2 * TILE_H)

/* ---- flatten: roots, and their rank within the chunk -------------------------------------------------------- */

/* The mask bytes of pixels base .. base + PER_THREAD - 1 as one word (byte j = pixel base + j), zero past n. Buffers
 * are aligned far beyond 8 bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN) and base is a multiple of 8: one 8-byte load when
 * mask itself is aligned (a slab's start may not be). */
inline ulong mask8(__global const uchar *mask, uint base, uint n, bool aligned)
{
    if (aligned && base + PER_THREAD <= n) return ((__global const ulong *)mask)[base / PER_THREAD];
    ulong m = 0;
    for (uint j = 0; j < PER_THREAD && base + j < n; j++) m |= (ulong)mask[base + j] << (8 * j);
    return m;
}

__kernel __attribute__((reqd_work_group_size(CHUNK_THREADS, 1, 1))) void label_flatten(
    __global const uchar *mask, __global int *L, __global int *counts, uint n, ulong slab)
{
    __local int sc[32 * GPUWS_SCAN_PAD], seg[64];
    mask += slab;
    L += slab;
    const uint base = get_group_id(0) * CHUNK + get_local_id(0) * PER_THREAD;
    const ulong m = base < n ? mask8(mask, base, n, (slab & 7) == 0) : 0;
    uint roots = 0; /* bit j: pixel base + j is a root */
    for (uint j = 0; m && j < PER_THREAD; j++) {
        if (!((m >> (8 * j)) & 0xff)) continue;
        const uint i = base + j;
        const int v = L[i] - 1;
        if (v == (int)i) {
            roots |= 1u << j;
            continue;
        }
        /* find; roots numbered meanwhile by their own work-item hold a negative rank */
        volatile __global int *vl = L;
        int x = v, p = vl[x];
        while (p > 0 && p - 1 != x) {
            x = p - 1;
            p = vl[x];
        }
        if (x != v) L[i] = x + 1;
    }
    int total;
    int rank = gpuws_group_exclusive_scan(popcount(roots), sc, seg, &total);
    for (uint j = 0; j < PER_THREAD; j++)
        if (roots & (1u << j)) L[base + j] = -(++rank);
    if (get_local_id(0) == 0) counts[get_group_id(0)] = total;
}

/* ---- scan: one work-group, any number of chunks ---------------------------------------------------------------
 * Each work-item adds up 4 consecutive counts (one 16-byte load) in registers, the group scans those totals, and
 * each work-item writes its 4 prefix sums back: a pass covers 4 * size chunks (4096 at 1024 work-items: all of a
 * 2048 x 2048 image's 2048 chunks in one pass). The scan's local arrays are static. */

__kernel void label_scan(__global int *counts, uint nchunks)
{
    __local int sc[32 * GPUWS_SCAN_PAD], seg[64];
    const uint t = get_local_id(0), nt = get_local_size(0);
    int carry = 0;
    for (uint base = 0; base < nchunks; base += 4 * nt) {
        const uint i = base + 4 * t;
        const bool whole = i + 4 <= nchunks; /* base and i are multiples of 4: aligned */
        int4 v;
        if (whole) v = ((__global const int4 *)counts)[i / 4];
        else v = (int4)(i < nchunks ? counts[i] : 0, i + 1 < nchunks ? counts[i + 1] : 0, i + 2 < nchunks ? counts[i + 2] : 0, 0);
        int total;
        const int ex = carry + gpuws_group_exclusive_scan(v.x + v.y + v.z + v.w, sc, seg, &total);
        const int4 o = (int4)(ex, ex + v.x, ex + v.x + v.y, ex + v.x + v.y + v.z);
        if (whole) {
            ((__global int4 *)counts)[i / 4] = o;
        } else {
            if (i < nchunks) counts[i] = o.x;
            if (i + 1 < nchunks) counts[i + 1] = o.y;
            if (i + 2 < nchunks) counts[i + 2] = o.z;
        }
        carry += total;
    }
    if (t == 0) counts[nchunks] = carry;
}

/* ---- relabel ------------------------------------------------------------------------------------------------
 * A root holds -(rank in its chunk + 1) until its own work-item replaces it with the final label, so a pixel that
 * reads its root sees one or the other: negative means "add the root's chunk offset", positive is final. */

__kernel void label_relabel(__global const uchar *mask, __global int *L, __global const int *offsets, uint n,
                            ulong slab)
{
    const uint base = get_global_id(0) * PER_THREAD;
    if (base >= n) return;
    mask += slab;
    L += slab;
    const ulong m = mask8(mask, base, n, (slab & 7) == 0);
    for (uint j = 0; m && j < PER_THREAD; j++) {
        if (!((m >> (8 * j)) & 0xff)) continue;
        const uint i = base + j;
        const int v = L[i];
        int label;
        if (v < 0) {
            label = offsets[i / CHUNK] - v;
        } else {
            const int root = v - 1, w = ((volatile __global int *)L)[root];
            label = w < 0 ? offsets[root / CHUNK] - w : w;
        }
        L[i] = label;
    }
}

/* ---- remap: a slab's labels to their final numbers -------------------------------------------------------------
 * l (1..N, the slab's pixels from `slab` on) becomes the node's final number where l is one of the slab's border
 * labels (nodes j0..j1, labels ascending), else offset + l less the non-root nodes before it (nh[k]: those before
 * node k). label_numbering.h says why. */

static int remap_one(int l, __global const int *node_label, __global const int *node_final, __global const ulong *nh,
                     ulong j0, ulong j1, ulong offset)
{
    ulong lo = j0, hi = j1;
    while (lo < hi) {
        const ulong mid = lo + (hi - lo) / 2;
        if (node_label[mid] < l) lo = mid + 1;
        else hi = mid;
    }
    return lo < j1 && node_label[lo] == l ? node_final[lo] : (int)(offset + (ulong)l - nh[lo]);
}

__kernel void label_remap(__global int *L, ulong slab, uint n, __global const int *node_label,
                          __global const int *node_final, __global const ulong *nh, ulong j0, ulong j1, ulong offset)
{
    L += slab;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        const int l = L[i];
        if (l > 0) L[i] = remap_one(l, node_label, node_final, nh, j0, j1, offset);
    }
}

/* The same map as a table: table[l - 1] = label_remap's number for l = 1..count (a pass that reads the labels later
 * maps them with one load, gpuws__label_parts' defer). */
__kernel void label_remap_table(__global int *table, uint count, __global const int *node_label,
                                __global const int *node_final, __global const ulong *nh, ulong j0, ulong j1,
                                ulong offset)
{
    for (uint i = get_global_id(0); i < count; i += get_global_size(0))
        table[i] = remap_one((int)i + 1, node_label, node_final, nh, j0, j1, offset);
}
