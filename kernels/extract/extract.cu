// gpuws_extract's device steps: the CUDA twin of extract.cl (read its header comment first; kernels, parameters,
// arithmetic and records are the same, the arithmetic is extract_pixel.h's). The scatter differs in how its threads
// share a chunk: here warp ballots rank the records, there a work-group scan.
#include "../common/gpuws_cuda.cuh"

#include <cmath>

#include "extract_pixel.h"
#include "extract_chain.h"
#include "extract_clean.h"

typedef unsigned long long u64;

extern "C" __global__ void extract_prep(const float *image, const float *back, unsigned has_back, const float *rms,
                                        const unsigned char *mask, unsigned has_mask, u64 mask_from, unsigned noise,
                                        float err, u64 n, float *maps)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        float s;
        maps[i] = ex_prep(image[i], has_back ? back[i] : 0.0f, has_mask && i >= mask_from && mask[i], (int)noise,
                          noise == EX_NOISE_MAP ? rms[i] : 0.0f, err, &s);
        maps[n + i] = s;
    }
}

extern "C" __global__ void extract_detect(float *maps, const float *kern, unsigned width, unsigned height, unsigned kw,
                                          unsigned kh, unsigned filter, unsigned noise, float thresh,
                                          unsigned char *det)
{
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const u64 n = (u64)width * height, p = (u64)y * width + x;
    float cd;
    const int hit =
        ex_detect(maps, maps + n, kern, width, height, x, y, (int)kw, (int)kh, (int)filter, (int)noise, thresh, &cd);
    maps[2 * n + p] = cd;
    det[p] = (unsigned char)hit;
}

// Thread t of a chunk's block takes the chunk's pixels t, t + EX_CHUNK_THREADS, ... (one pass of the block reads
// consecutive pixels), in count and scatter alike.
extern "C" __global__ void __launch_bounds__(EX_CHUNK_THREADS)
    extract_count(const unsigned char *det, int *counts, u64 n)
{
    const u64 base = (u64)blockIdx.x * EX_CHUNK + threadIdx.x;
    int c = 0;
#pragma unroll
    for (unsigned r = 0; r < EX_PER_THREAD; r++) {
        const u64 i = base + r * EX_CHUNK_THREADS;
        c += __syncthreads_count(i < n && det[i]);
    }
    if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

// A record's slot: the chunk's offset, the records of the passes before, of the warps before in this pass, and of
// the lanes before in this warp (a ballot per pass and warp; the warps' counts go through shared memory once).
extern "C" __global__ void __launch_bounds__(EX_CHUNK_THREADS)
    extract_scatter(const unsigned char *det, const int *labels, const float *maps, const unsigned char *mask,
                    unsigned has_mask, unsigned width, unsigned height, const int *offsets, u64 cap, unsigned *ru,
                    float *rf)
{
    constexpr unsigned warps = EX_CHUNK_THREADS / 32;
    __shared__ unsigned warp_counts[EX_PER_THREAD * warps];
    const u64 n = (u64)width * height, base = (u64)blockIdx.x * EX_CHUNK + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    unsigned ballot[EX_PER_THREAD];
#pragma unroll
    for (unsigned r = 0; r < EX_PER_THREAD; r++) {
        const u64 i = base + r * EX_CHUNK_THREADS;
        ballot[r] = __ballot_sync(0xffffffffu, i < n && det[i]);
        if (lane == 0) warp_counts[r * warps + warp] = __popc(ballot[r]);
    }
    __syncthreads();
    u64 slot = (u64)offsets[blockIdx.x];
#pragma unroll
    for (unsigned r = 0; r < EX_PER_THREAD; r++) {
        u64 mine = slot;
        for (unsigned q = 0; q < warps; q++) {
            const unsigned c = warp_counts[r * warps + q];
            mine += q < warp ? c : 0u;
            slot += c;
        }
        if ((ballot[r] >> lane) & 1u)
            ex_record(ru, rf, cap, mine + __popc(ballot[r] & ((1u << lane) - 1u)), labels, maps, mask, (int)has_mask,
                      width, height, (long)(base + r * EX_CHUNK_THREADS));
    }
}

extern "C" __global__ void extract_segmap(const unsigned *idx, const int *obj, u64 cnt, int *segmap)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < cnt; i += (u64)gridDim.x * blockDim.x)
        if (obj[i]) segmap[idx[i] & ~EX_BLANK_BIT] = obj[i];
}

// ru: the records (their sixth array the labels), lobj: each label's object + 1 where it is one measured on the
// device (0 else): its pixels' entries of the map, which the host never read.
extern "C" __global__ void extract_segmap_labels(const unsigned *ru, u64 cap, const int *lobj, int *segmap)
{
    for (u64 r = blockIdx.x * (u64)blockDim.x + threadIdx.x; r < cap; r += (u64)gridDim.x * blockDim.x) {
        const int v = lobj[ru[5 * cap + r]];
        if (v) segmap[ru[r] & ~EX_BLANK_BIT] = v;
    }
}

// ---- the records grouped by label (extract.c: extract_gpu_group) ----
// A pass sorts pairs (keys[key_off + i], vals[i]), i < n, by the digit of the key at `shift`; in the first pass the
// keys are the records' labels and vals[i] is i itself (first = 1). Tile t's counts: hist[digit * ntiles + t],
// which label_scan turns into the place of the tile's first pair of each digit.

// A thread's count of each digit among its pairs, four bits a digit.
__device__ inline u64 ex_sort_digits(const unsigned *keys, u64 from, u64 n, unsigned shift)
{
    u64 packed = 0;
#pragma unroll
    for (unsigned j = 0; j < EX_SORT_PER; j++)
        if (from + j < n) packed += 1ull << (4 * ((keys[from + j] >> shift) & (EX_SORT_DIGITS - 1)));
    return packed;
}

extern "C" __global__ void __launch_bounds__(EX_SORT_THREADS)
    extract_sort_count(const unsigned *keys, u64 key_off, u64 n, unsigned shift, int *hist, unsigned ntiles)
{
    __shared__ int c[EX_SORT_DIGITS];
    if (threadIdx.x < EX_SORT_DIGITS) c[threadIdx.x] = 0;
    __syncthreads();
    const u64 base = (u64)blockIdx.x * EX_SORT_TILE + (u64)threadIdx.x * EX_SORT_PER;
    const u64 packed = ex_sort_digits(keys + key_off, base, n, shift);
    for (unsigned d = 0; d < EX_SORT_DIGITS; d++) {
        const int v = (int)((packed >> (4 * d)) & 15u);
        if (v) atomicAdd(&c[d], v);
    }
    __syncthreads();
    if (threadIdx.x < EX_SORT_DIGITS) hist[threadIdx.x * ntiles + blockIdx.x] = c[threadIdx.x];
}

// Each pair to its place: its digit's place for the tile, plus the tile's pairs of that digit in the threads before
// (a block scan a digit), plus this thread's before it.
extern "C" __global__ void __launch_bounds__(EX_SORT_THREADS)
    extract_sort_scatter(const unsigned *keys, u64 key_off, const unsigned *vals, unsigned first, u64 n, unsigned shift,
                         const int *hist, unsigned ntiles, unsigned *keys_out, unsigned *vals_out)
{
    __shared__ int warp_sums[32];
    keys += key_off;
    const u64 base = (u64)blockIdx.x * EX_SORT_TILE + (u64)threadIdx.x * EX_SORT_PER;
    const u64 packed = ex_sort_digits(keys, base, n, shift);
    int at[EX_SORT_DIGITS];
    for (unsigned d = 0; d < EX_SORT_DIGITS; d++) {
        int total;
        at[d] = hist[d * ntiles + blockIdx.x] +
                gpuws_block_exclusive_scan((int)((packed >> (4 * d)) & 15u), warp_sums, &total);
    }
    for (unsigned j = 0; j < EX_SORT_PER && base + j < n; j++) {
        const unsigned k = keys[base + j];
        const int p = at[(k >> shift) & (EX_SORT_DIGITS - 1)]++;
        keys_out[p] = k;
        vals_out[p] = first ? (unsigned)(base + j) : vals[base + j];
    }
}

// start[l] (at out[start_off + l]): the place of label l's first pair in the sorted keys; start[0] = 0. Every label
// 1 .. nl has records.
extern "C" __global__ void extract_sort_starts(const unsigned *keys, u64 n, unsigned *out, u64 start_off)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        if (i == 0 || keys[i - 1] != keys[i]) out[start_off + keys[i]] = (unsigned)i;
    if (blockIdx.x == 0 && threadIdx.x == 0) out[start_off] = 0;
}

// ---- the components that deblending cannot split, chained (extract_chain.h) ----

extern "C" __global__ void extract_chain_copy(const unsigned *grp, u64 n, u64 cnt, u64 nl, unsigned *out)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        ex_chain_copy(i, cnt, nl, grp, out);
}

// Also list[0] = 0 for extract_chain_list and the measures' count (*taken) = 0 for extract_chain_measure (a kernel's
// write: Oclgrind's check of uninitialised values misses fills).
extern "C" __global__ void extract_chain_maxima(const unsigned *ru, const float *rf, u64 cap, const int *labels,
                                                const float *maps, unsigned width, unsigned height, unsigned char *lmax,
                                                unsigned *list, unsigned *taken)
{
    const float *cdm = maps + 2 * (u64)width * height;
    if (blockIdx.x == 0 && threadIdx.x == 0) list[0] = 0, *taken = 0;
    for (u64 r = blockIdx.x * (u64)blockDim.x + threadIdx.x; r < cap; r += (u64)gridDim.x * blockDim.x)
        ex_chain_maximum(r, ru, rf, cap, labels, cdm, (long)width, (long)height, lmax);
}

// list[0]: the listed components; list[1 ..]: their labels (list[0] zeroed by extract_chain_maxima).
extern "C" __global__ void extract_chain_list(const unsigned *grp, u64 cnt, u64 nl, unsigned minarea, u64 most,
                                              const unsigned *ru, u64 lo, u64 hi, unsigned *list)
{
    for (u64 l = 1 + blockIdx.x * (u64)blockDim.x + threadIdx.x; l <= nl; l += (u64)gridDim.x * blockDim.x)
        if (ex_chain_listed(l, nl, cnt, grp, (int)minarea, most, ru, lo, hi))
            list[1 + atomicAdd(&list[0], 1u)] = (unsigned)l;
}

extern "C" __global__ void extract_chain(const unsigned *grp, u64 cnt, u64 nl, const unsigned *ru, const float *rf,
                                         u64 cap, const unsigned char *lmax, unsigned width, unsigned xn,
                                         unsigned noise, float thresh, float relthresh, unsigned sep12,
                                         const unsigned *list, unsigned *out, int *nx, int *ints, unsigned char *bytes)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < list[0]; i += (u64)gridDim.x * blockDim.x)
        ex_chain(list[1 + i], nl, cnt, grp, ru, rf, cap, lmax, (long)width, (int)xn, (int)noise, thresh, relthresh,
                 (int)sep12, out, nx, ints, bytes);
}

extern "C" __global__ void extract_chain_measure(const unsigned *grp, u64 cnt, u64 nl, const unsigned *ru,
                                                 const float *rf, u64 cap, unsigned width, unsigned noise, float thresh,
                                                 float relthresh, double gain, unsigned minarea, const unsigned *list,
                                                 unsigned *out, unsigned *taken, double *mom)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < list[0]; i += (u64)gridDim.x * blockDim.x)
        ex_chain_measured(list[1 + i], nl, cnt, grp, ru, rf, cap, (long)width, (int)noise, thresh, relthresh, gain,
                          (int)minarea, out, taken, mom);
}

// ---- cleaning's pairs (extract_clean.h) ----

// Each object's cell, and its place among its cell's objects (count: the cells' counts, zeroed before).
extern "C" __global__ void extract_clean_cells(u64 n, const double *d, const unsigned char *lvl, const double *lvd,
                                               const unsigned *lvu, unsigned *cellof, unsigned *rank, int *count)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const unsigned c = ex_clean_cell_of(i, d, lvl, lvd, lvu);
        cellof[i] = c;
        rank[i] = (unsigned)atomicAdd(&count[c], 1);
    }
}

// Each object into its cell's place (cstart: the counts scanned).
extern "C" __global__ void extract_clean_place(u64 n, const unsigned *cellof, const unsigned *rank, const int *cstart,
                                               unsigned *cellids)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        cellids[cstart[cellof[i]] + rank[i]] = (unsigned)i;
}

extern "C" __global__ void extract_clean_pairs(u64 n, const double *d, const float *f, double beta, double margin,
                                               int most, unsigned nused, const unsigned *used, const double *lvd,
                                               const unsigned *lvu, const unsigned *cellids, const int *cstart,
                                               unsigned pass, int *cnt, unsigned *words)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        ex_clean_pairs(i, d, f, beta, margin, most, nused, used, lvd, lvu, cellids, cstart, pass, cnt, words);
}

// ---- the records the host reads, compact (extract_chain.h) ----

extern "C" __global__ void extract_compact_need(const unsigned *out, u64 cnt, u64 nl, const double *mom,
                                                unsigned minarea, const unsigned *ru, u64 lo, u64 hi, int *need)
{
    for (u64 l = 1 + blockIdx.x * (u64)blockDim.x + threadIdx.x; l <= nl; l += (u64)gridDim.x * blockDim.x)
        ex_compact_need(l, nl, cnt, out, mom, (int)minarea, ru, lo, hi, need);
}

extern "C" __global__ void extract_compact_place(const unsigned *out, u64 cnt, u64 nl, const unsigned *ru, u64 cap,
                                                 const int *at, unsigned nread, unsigned *cu)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < cnt; i += (u64)gridDim.x * blockDim.x)
        ex_compact_place(i, nl, cnt, out, ru, cap, at, nread, cu);
}

extern "C" __global__ void extract_compact_group(const unsigned *out, u64 cnt, u64 nl, const int *at,
                                                 const unsigned *taken, unsigned *cg)
{
    for (u64 j = blockIdx.x * (u64)blockDim.x + threadIdx.x; j <= 2 * nl + 2; j += (u64)gridDim.x * blockDim.x)
        ex_compact_group(j, nl, cnt, out, at, taken, cg);
}

GPUWS_CUDA_KERNELS(extract, GPUWS_CUDA_KERNEL(extract_prep), GPUWS_CUDA_KERNEL(extract_detect),
                   GPUWS_CUDA_KERNEL(extract_count), GPUWS_CUDA_KERNEL(extract_scatter),
                   GPUWS_CUDA_KERNEL(extract_segmap), GPUWS_CUDA_KERNEL(extract_sort_count),
                   GPUWS_CUDA_KERNEL(extract_sort_scatter), GPUWS_CUDA_KERNEL(extract_sort_starts),
                   GPUWS_CUDA_KERNEL(extract_chain_copy), GPUWS_CUDA_KERNEL(extract_chain_maxima),
                   GPUWS_CUDA_KERNEL(extract_chain_list), GPUWS_CUDA_KERNEL(extract_chain),
                   GPUWS_CUDA_KERNEL(extract_chain_measure), GPUWS_CUDA_KERNEL(extract_segmap_labels),
                   GPUWS_CUDA_KERNEL(extract_compact_need), GPUWS_CUDA_KERNEL(extract_compact_place),
                   GPUWS_CUDA_KERNEL(extract_compact_group), GPUWS_CUDA_KERNEL(extract_clean_cells),
                   GPUWS_CUDA_KERNEL(extract_clean_place), GPUWS_CUDA_KERNEL(extract_clean_pairs))
