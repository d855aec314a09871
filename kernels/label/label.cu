// Connected-component labelling numbered like scipy.ndimage.label: the same five launches as label.cl (the plan is
// written there and in label.c). CUDA differences: a tile row is one warp, so the mask of a row is one __ballot_sync
// word and the start of each pixel's run is a bit scan; scans use warp shuffles.
//
// L encodes a parent p as p + 1 so that background stays 0; parents are always smaller than their children, so a
// component's root is its first pixel in raster order.
#include "../common/gpuws_cuda.cuh"
#include "label_layout.h"

namespace
{

constexpr int TW = LABEL_TILE_W, TH = LABEL_TILE_H, ROWS = LABEL_TILE_ROWS;
constexpr int CHUNK_THREADS = LABEL_CHUNK_THREADS, PER_THREAD = LABEL_PER_THREAD, CHUNK = LABEL_CHUNK;
static_assert(TW == 32, "a tile row is one warp");
static_assert(PER_THREAD == 8, "flatten/relabel read the mask as one 8-byte word per thread");

// ---- union-find (see label.cl for why stale reads are harmless) -------------------------------------------------

__device__ __forceinline__ int find_shared(volatile int *s, int a)
{
    int p = s[a];
    while (p != a) {
        a = p;
        p = s[a];
    }
    return a;
}

__device__ void unite_shared(int *s, int a, int b)
{
    for (;;) {
        a = find_shared(s, a);
        b = find_shared(s, b);
        if (a == b) return;
        if (a > b) {
            const int t = a;
            a = b;
            b = t;
        }
        const int old = atomicMin(&s[b], a);
        if (old == b) return;
        b = old;
    }
}

__device__ __forceinline__ int find_global(volatile int *L, int a)
{
    int p = L[a] - 1;
    while (p != a) {
        a = p;
        p = L[a] - 1;
    }
    return a;
}

__device__ void compress_global(int *L, int x, int r)
{
    while (x > r) {
        const int next = ((volatile int *)L)[x] - 1;
        atomicMin(&L[x], r + 1);
        if (next == x) break;
        x = next;
    }
}

__device__ void unite_global(int *L, int a0, int b0)
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
        // Link only a root that is still a root (compare-and-swap): the comment on compress_global in label.cl says
        // why unite_shared's atomicMin would be unsafe next to compression.
        if (atomicCAS(&L[b], b + 1, a + 1) == b + 1) break;
    }
    compress_global(L, a0, a);
    compress_global(L, b0, a);
}

// ---- local: one 32x32 tile per block of 32x8 threads ------------------------------------------------------------

template <int CONN>
__device__ void local_tile(const unsigned char *__restrict__ mask, int *__restrict__ L, unsigned width, unsigned height,
                           unsigned tiles_x)
{
    __shared__ int s[TH * TW];
    __shared__ unsigned rowbits[TH]; // bit lx of rowbits[ly]: pixel (ly, lx) of the tile is foreground
    const unsigned tile = blockIdx.x, x0 = (tile % tiles_x) * TW, y0 = (tile / tiles_x) * TH;
    const unsigned lx = threadIdx.x, x = x0 + lx;
    const unsigned below = (1u << lx) - 1u; // lanes left of this one

#pragma unroll
    for (int r = 0; r < TH / ROWS; r++) {
        const unsigned ly = threadIdx.y + r * ROWS, y = y0 + ly;
        const bool fg = x < width && y < height && mask[(size_t)y * width + x] != 0;
        const unsigned bits = __ballot_sync(0xffffffffu, fg);
        if (lx == 0) rowbits[ly] = bits;
        const unsigned gaps = ~bits & below;                                      // background left of this pixel
        if (fg) s[ly * TW + lx] = (int)(ly * TW + (gaps ? 32 - __clz(gaps) : 0)); // the start of its run
    }
    __syncthreads();

#pragma unroll
    for (int r = 0; r < TH / ROWS; r++) {
        const unsigned ly = threadIdx.y + r * ROWS, li = ly * TW + lx;
        const unsigned bits = rowbits[ly];
        if (!((bits >> lx) & 1u) || ly == 0) continue;
        const unsigned above = rowbits[ly - 1];
        const bool left = lx > 0 && ((bits >> (lx - 1)) & 1u), up = (above >> lx) & 1u;
        const bool ul = lx > 0 && ((above >> (lx - 1)) & 1u);
        if (CONN == 4) {
            if (up && !(left && ul)) unite_shared(s, (int)li, (int)(li - TW));
        } else {
            const bool ur = lx + 1 < TW && ((above >> (lx + 1)) & 1u);
            if (left) {
                if (ur && !up) unite_shared(s, (int)li, (int)(li - TW + 1));
            } else if (up) {
                unite_shared(s, (int)li, (int)(li - TW));
            } else {
                if (ul) unite_shared(s, (int)li, (int)(li - TW - 1));
                if (ur) unite_shared(s, (int)li, (int)(li - TW + 1));
            }
        }
    }
    __syncthreads();

    if (x >= width) return;
#pragma unroll
    for (int r = 0; r < TH / ROWS; r++) {
        const unsigned ly = threadIdx.y + r * ROWS, li = ly * TW + lx, y = y0 + ly;
        if (y >= height) break;
        int v = 0;
        if ((rowbits[ly] >> lx) & 1u) {
            const unsigned root = (unsigned)find_shared(s, (int)li);
            v = (int)((y0 + root / TW) * width + x0 + root % TW) + 1;
        }
        L[(size_t)y * width + x] = v;
    }
}

// ---- merge: links between tiles (items per tile: top row, left column, and for 8 the right column) ----------------

template <int CONN>
__device__ void merge_items(const unsigned char *__restrict__ mask, int *L, unsigned width, unsigned height,
                            unsigned tiles_x, unsigned long long items)
{
    constexpr unsigned PER_TILE = CONN == 8 ? TW + 2 * TH : TW + TH;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long it = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; it < items; it += stride) {
        const unsigned long long tile = it / PER_TILE;
        const unsigned k = (unsigned)(it % PER_TILE);
        const unsigned x0 = (unsigned)(tile % tiles_x) * TW, y0 = (unsigned)(tile / tiles_x) * TH;
        if (k < TW) { // top row: the row above
            const unsigned x = x0 + k;
            if (y0 == 0 || x >= width || y0 >= height) continue;
            const int p = (int)(y0 * width + x);
            if (!mask[p]) continue;
            for (int dx = CONN == 8 ? -1 : 0; dx <= (CONN == 8 ? 1 : 0); dx++) {
                const int q = p - (int)width + dx;
                if ((int)x + dx >= 0 && (int)x + dx < (int)width && mask[q]) unite_global(L, p, q);
            }
        } else if (k < TW + TH) { // left column: left, and for 8 up-left
            const unsigned y = y0 + (k - TW);
            if (x0 == 0 || x0 >= width || y >= height) continue;
            const int p = (int)(y * width + x0);
            if (!mask[p]) continue;
            if (mask[p - 1]) unite_global(L, p, p - 1);
            if (CONN == 8 && y > 0 && mask[p - (int)width - 1]) unite_global(L, p, p - (int)width - 1);
        } else { // right column below the top row: up-right
            const unsigned y = y0 + (k - TW - TH), x = x0 + TW - 1;
            if (y == y0 || x + 1 >= width || y >= height) continue;
            const int p = (int)(y * width + x);
            if (mask[p] && mask[p - (int)width + 1]) unite_global(L, p, p - (int)width + 1);
        }
    }
}

// The 8 mask bytes of pixels base..base+7 as one word (byte j = pixel base + j), zero past n.
// aligned: mask + 0 is 8-byte aligned (the buffer's start is; a slab's may not be).
__device__ __forceinline__ unsigned long long mask8(const unsigned char *__restrict__ mask, unsigned base, unsigned n,
                                                    bool aligned)
{
    if (aligned && base + PER_THREAD <= n) return *reinterpret_cast<const unsigned long long *>(mask + base);
    unsigned long long m = 0;
    for (unsigned j = 0; j < PER_THREAD && base + j < n; j++) m |= (unsigned long long)mask[base + j] << (8 * j);
    return m;
}

} // namespace

extern "C" __global__ void __launch_bounds__(TW *ROWS)
    label_local_4(const unsigned char *mask, int *L, unsigned width, unsigned height, unsigned tiles_x,
                  unsigned long long slab)
{
    local_tile<4>(mask + slab, L + slab, width, height, tiles_x);
}

extern "C" __global__ void __launch_bounds__(TW *ROWS)
    label_local_8(const unsigned char *mask, int *L, unsigned width, unsigned height, unsigned tiles_x,
                  unsigned long long slab)
{
    local_tile<8>(mask + slab, L + slab, width, height, tiles_x);
}

extern "C" __global__ void label_merge_4(const unsigned char *mask, int *L, unsigned width, unsigned height,
                                         unsigned tiles_x, unsigned long long items, unsigned long long slab)
{
    merge_items<4>(mask + slab, L + slab, width, height, tiles_x, items);
}

extern "C" __global__ void label_merge_8(const unsigned char *mask, int *L, unsigned width, unsigned height,
                                         unsigned tiles_x, unsigned long long items, unsigned long long slab)
{
    merge_items<8>(mask + slab, L + slab, width, height, tiles_x, items);
}

// Every pixel of the chunk points at its root; the chunk's roots get -(rank in chunk + 1); counts[chunk] = roots.
extern "C" __global__ void __launch_bounds__(CHUNK_THREADS)
    label_flatten(const unsigned char *mask, int *L, int *counts, unsigned n, unsigned long long slab)
{
    __shared__ int warp_sums[32];
    mask += slab;
    L += slab;
    const unsigned base = blockIdx.x * CHUNK + threadIdx.x * PER_THREAD;
    const unsigned long long m = base < n ? mask8(mask, base, n, (slab & 7) == 0) : 0ull;
    unsigned roots = 0;
    if (m) {
#pragma unroll
        for (unsigned j = 0; j < PER_THREAD; j++) {
            if (!((m >> (8 * j)) & 0xffu)) continue;
            const unsigned i = base + j;
            const int v = L[i] - 1;
            if (v == (int)i) {
                roots |= 1u << j;
                continue;
            }
            int x = v, p = ((volatile int *)L)[x];
            while (p > 0 && p - 1 != x) { // roots already ranked hold a negative value
                x = p - 1;
                p = ((volatile int *)L)[x];
            }
            if (x != v) L[i] = x + 1;
        }
    }
    int total;
    int rank = gpuws_block_exclusive_scan(__popc(roots), warp_sums, &total);
    while (roots) {
        const unsigned j = __ffs(roots) - 1;
        roots &= roots - 1;
        L[base + j] = -(++rank);
    }
    if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// One block: counts[0..nchunks) -> exclusive prefix sums, counts[nchunks] = the total.
extern "C" __global__ void label_scan(int *counts, unsigned nchunks)
{
    __shared__ int warp_sums[32];
    int carry = 0;
    for (unsigned base = 0; base < nchunks; base += blockDim.x) {
        const unsigned i = base + threadIdx.x;
        const int v = i < nchunks ? counts[i] : 0;
        int total;
        const int ex = gpuws_block_exclusive_scan(v, warp_sums, &total);
        if (i < nchunks) counts[i] = carry + ex;
        carry += total;
    }
    if (threadIdx.x == 0) counts[nchunks] = carry;
}

// L = final label: offset of the root's chunk + its rank there. A root's cell holds -(rank + 1) until its own thread
// replaces it with the final (positive) label, so a reader decodes either.
extern "C" __global__ void label_relabel(const unsigned char *mask, int *L, const int *offsets, unsigned n,
                                         unsigned long long slab)
{
    const unsigned base = (blockIdx.x * blockDim.x + threadIdx.x) * PER_THREAD;
    if (base >= n) return;
    mask += slab;
    L += slab;
    unsigned long long m = mask8(mask, base, n, (slab & 7) == 0);
    while (m) {
        const unsigned j = (__ffsll((long long)m) - 1) / 8;
        m &= ~(0xffull << (8 * j));
        const unsigned i = base + j;
        const int v = L[i];
        int label;
        if (v < 0) {
            label = offsets[i / CHUNK] - v;
        } else {
            const int root = v - 1, w = ((volatile int *)L)[root];
            label = w < 0 ? offsets[root / CHUNK] - w : w;
        }
        L[i] = label;
    }
}

// A slab's labels l (1..N, the slab's pixels from `slab` on) to their final numbers: the node's final number where l
// is one of the slab's border labels (nodes j0..j1, labels ascending), else offset + l less the non-root nodes
// before it (nh[k]: those before node k). label_numbering.h says why.
static __device__ __forceinline__ int remap_one(int l, const int *node_label, const int *node_final,
                                                const unsigned long long *nh, unsigned long long j0,
                                                unsigned long long j1, unsigned long long offset)
{
    unsigned long long lo = j0, hi = j1;
    while (lo < hi) {
        const unsigned long long mid = lo + (hi - lo) / 2;
        if (node_label[mid] < l) lo = mid + 1;
        else hi = mid;
    }
    return lo < j1 && node_label[lo] == l ? node_final[lo] : (int)(offset + (unsigned long long)l - nh[lo]);
}

extern "C" __global__ void label_remap(int *L, unsigned long long slab, unsigned n, const int *node_label,
                                       const int *node_final, const unsigned long long *nh, unsigned long long j0,
                                       unsigned long long j1, unsigned long long offset)
{
    L += slab;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int l = L[i];
        if (l > 0) L[i] = remap_one(l, node_label, node_final, nh, j0, j1, offset);
    }
}

// The same map as a table: table[l - 1] = label_remap's number for l = 1..count (a pass that reads the labels later
// maps them with one load, gpuws__label_parts' defer).
extern "C" __global__ void label_remap_table(int *table, unsigned count, const int *node_label, const int *node_final,
                                             const unsigned long long *nh, unsigned long long j0, unsigned long long j1,
                                             unsigned long long offset)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        table[i] = remap_one((int)i + 1, node_label, node_final, nh, j0, j1, offset);
}

GPUWS_CUDA_KERNELS(label, GPUWS_CUDA_KERNEL(label_local_4), GPUWS_CUDA_KERNEL(label_local_8),
                   GPUWS_CUDA_KERNEL(label_merge_4), GPUWS_CUDA_KERNEL(label_merge_8), GPUWS_CUDA_KERNEL(label_flatten),
                   GPUWS_CUDA_KERNEL(label_scan), GPUWS_CUDA_KERNEL(label_relabel), GPUWS_CUDA_KERNEL(label_remap),
                   GPUWS_CUDA_KERNEL(label_remap_table))
