/* gpuws_extract's device steps (extract.c has the plan; extract_pixel.h the arithmetic, the reference's too, and
 * the records' layout). kern: the normalised filter. maps: d, σ, filtered, each width * height floats. Records: six
 * arrays of cap words (index | blank bit, value, filtered, σ, σ of the lower-right neighbour, label), written in
 * raster order through two views of one buffer (as uint and as float). */
#ifdef GPUWS_FP64
#pragma OPENCL FP_CONTRACT OFF

#include "extract_pixel.h"
#include "extract_chain.h"
#include "extract_clean.h"

__kernel void extract_prep(__global const float *image, __global const float *back, uint has_back,
                           __global const float *rms, __global const uchar *mask, uint has_mask, ulong mask_from,
                           uint noise, float err, ulong n, __global float *maps)
{
    GPUWS_FOR_EACH(i, n)
    {
        float s;
        maps[i] = ex_prep(image[i], has_back ? back[i] : 0.0f, has_mask && i >= mask_from && mask[i], (int)noise,
                          noise == EX_NOISE_MAP ? rms[i] : 0.0f, err, &s);
        maps[n + i] = s;
    }
}

__kernel void extract_detect(__global float *maps, __global const float *kern, uint width, uint height, uint kw,
                             uint kh, uint filter, uint noise, float thresh, __global uchar *det)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height) return;
    const ulong n = (ulong)width * height, p = (ulong)y * width + x;
    float cd;
    const int hit =
        ex_detect(maps, maps + n, kern, width, height, x, y, (int)kw, (int)kh, (int)filter, (int)noise, thresh, &cd);
    maps[2 * n + p] = cd;
    det[p] = (uchar)hit;
}

GPUWS_GROUP_SUM(ex_group_sum, int)

/* One work-group a chunk: counts[chunk] = its labelled pixels. */
__kernel __attribute__((reqd_work_group_size(EX_CHUNK_THREADS, 1, 1))) void extract_count(__global const uchar *det,
                                                                                          __global int *counts, ulong n)
{
    __local int red[EX_CHUNK_THREADS];
    const ulong base = get_group_id(0) * (ulong)EX_CHUNK + get_local_id(0);
    int c = 0;
    for (uint r = 0; r < EX_PER_THREAD; r++) {
        const ulong i = base + r * EX_CHUNK_THREADS;
        c += i < n && det[i];
    }
    c = ex_group_sum(c, red);
    if (get_local_id(0) == 0) counts[get_group_id(0)] = c;
}

/* One work-group a chunk; work-item t writes the records of pixels EX_PER_THREAD * t ... of the chunk, from the
 * chunk's offset plus the records of the work-items before it: an inclusive scan of the work-items' counts in local
 * memory (Hillis and Steele's, double-buffered: one barrier a step, log2 EX_CHUNK_THREADS steps). */
__kernel __attribute__((reqd_work_group_size(EX_CHUNK_THREADS, 1, 1))) void
extract_scatter(__global const uchar *det, __global const int *labels, __global const float *maps,
                __global const uchar *mask, uint has_mask, uint width, uint height, __global const int *offsets,
                ulong cap, __global uint *ru, __global float *rf)
{
    __local int sc[2 * EX_CHUNK_THREADS];
    const uint t = get_local_id(0);
    const ulong n = (ulong)width * height, base = get_group_id(0) * (ulong)EX_CHUNK + t * EX_PER_THREAD;
    const uint len = base < n ? (uint)min((ulong)EX_PER_THREAD, n - base) : 0u;
    int c = 0;
    for (uint j = 0; j < len; j++) c += det[base + j] != 0;
    sc[t] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint from = 0;
    for (uint d = 1; d < EX_CHUNK_THREADS; d <<= 1) {
        const int v = sc[from + t] + (t >= d ? sc[from + t - d] : 0);
        from ^= EX_CHUNK_THREADS;
        sc[from + t] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    ulong slot = (ulong)offsets[get_group_id(0)] + (ulong)(sc[from + t] - c);
    for (uint j = 0; j < len; j++)
        if (det[base + j]) ex_record(ru, rf, cap, slot++, labels, maps, mask, (int)has_mask, width, height, base + j);
}

/* idx: the records' indices (in raster order), obj: their objects + 1 (or 0) */
__kernel void extract_segmap(__global const uint *idx, __global const int *obj, ulong cnt, __global int *segmap)
{
    GPUWS_FOR_EACH(i, cnt)
    {
        if (obj[i]) segmap[idx[i] & ~EX_BLANK_BIT] = obj[i];
    }
}

/* ru: the records (their sixth array the labels), lobj: each label's object + 1 where it is one measured on the
 * device (0 else): its pixels' entries of the map, which the host never read. */
__kernel void extract_segmap_labels(__global const uint *ru, ulong cap, __global const int *lobj,
                                    __global int *segmap)
{
    GPUWS_FOR_EACH(r, cap)
    {
        const int v = lobj[ru[5 * cap + r]];
        if (v) segmap[ru[r] & ~EX_BLANK_BIT] = v;
    }
}

/* ---- the records grouped by label (extract.c: extract_gpu_group; extract.cu says how a pass works) ---- */

/* A work-item's count of each digit among its pairs, four bits a digit. */
inline ulong ex_sort_digits(__global const uint *keys, ulong from, ulong n, uint shift)
{
    ulong packed = 0;
    for (uint j = 0; j < EX_SORT_PER; j++)
        if (from + j < n) packed += 1ul << (4 * ((keys[from + j] >> shift) & (EX_SORT_DIGITS - 1)));
    return packed;
}

__kernel __attribute__((reqd_work_group_size(EX_SORT_THREADS, 1, 1))) void
extract_sort_count(__global const uint *keys, ulong key_off, ulong n, uint shift, __global int *hist, uint ntiles)
{
    __local int c[EX_SORT_DIGITS];
    const uint t = get_local_id(0);
    if (t < EX_SORT_DIGITS) c[t] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong packed =
        ex_sort_digits(keys + key_off, get_group_id(0) * (ulong)EX_SORT_TILE + t * EX_SORT_PER, n, shift);
    for (uint d = 0; d < EX_SORT_DIGITS; d++) {
        const int v = (int)((packed >> (4 * d)) & 15u);
        if (v) atomic_add(&c[d], v);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < EX_SORT_DIGITS) hist[t * ntiles + get_group_id(0)] = c[t];
}

__kernel __attribute__((reqd_work_group_size(EX_SORT_THREADS, 1, 1))) void
extract_sort_scatter(__global const uint *keys, ulong key_off, __global const uint *vals, uint first, ulong n,
                     uint shift, __global const int *hist, uint ntiles, __global uint *keys_out,
                     __global uint *vals_out)
{
    __local int sc[32 * GPUWS_SCAN_PAD], seg[64];
    keys += key_off;
    const ulong base = get_group_id(0) * (ulong)EX_SORT_TILE + get_local_id(0) * EX_SORT_PER;
    const ulong packed = ex_sort_digits(keys, base, n, shift);
    int at[EX_SORT_DIGITS];
    for (uint d = 0; d < EX_SORT_DIGITS; d++) {
        int total;
        at[d] = hist[d * ntiles + get_group_id(0)] +
                gpuws_group_exclusive_scan((int)((packed >> (4 * d)) & 15u), sc, seg, &total);
    }
    for (uint j = 0; j < EX_SORT_PER && base + j < n; j++) {
        const uint k = keys[base + j];
        const int p = at[(k >> shift) & (EX_SORT_DIGITS - 1)]++;
        keys_out[p] = k;
        vals_out[p] = first ? (uint)(base + j) : vals[base + j];
    }
}

__kernel void extract_sort_starts(__global const uint *keys, ulong n, __global uint *out, ulong start_off)
{
    GPUWS_FOR_EACH(i, n)
    {
        if (i == 0 || keys[i - 1] != keys[i]) out[start_off + keys[i]] = (uint)i;
    }
    if (get_global_id(0) == 0) out[start_off] = 0;
}

/* ---- the components that deblending cannot split, chained (extract_chain.h) ---- */

__kernel void extract_chain_copy(__global const uint *grp, ulong n, ulong cnt, ulong nl, __global uint *out)
{
    GPUWS_FOR_EACH(i, n)
    {
        ex_chain_copy(i, cnt, nl, grp, out);
    }
}

/* Also list[0] = 0 for extract_chain_list and the measures' count (*taken) = 0 for extract_chain_measure (a kernel's
 * write: Oclgrind's check of uninitialised values misses fills). */
__kernel void extract_chain_maxima(__global const uint *ru, __global const float *rf, ulong cap,
                                   __global const int *labels, __global const float *maps, uint width, uint height,
                                   __global uchar *lmax, __global uint *list, __global uint *taken)
{
    __global const float *cdm = maps + 2 * (ulong)width * height;
    if (get_global_id(0) == 0) list[0] = 0, *taken = 0;
    GPUWS_FOR_EACH(r, cap)
    {
        ex_chain_maximum(r, ru, rf, cap, labels, cdm, (long)width, (long)height, lmax);
    }
}

/* list[0]: the listed components; list[1 ..]: their labels (list[0] zeroed by extract_chain_maxima). */
__kernel void extract_chain_list(__global const uint *grp, ulong cnt, ulong nl, uint minarea, ulong most,
                                 __global const uint *ru, ulong lo, ulong hi, __global uint *list)
{
    GPUWS_FOR_EACH(i, nl)
    {
        if (ex_chain_listed(i + 1, nl, cnt, grp, (int)minarea, most, ru, lo, hi))
            list[1 + atomic_inc(&list[0])] = (uint)(i + 1);
    }
}

__kernel void extract_chain(__global const uint *grp, ulong cnt, ulong nl, __global const uint *ru,
                            __global const float *rf, ulong cap, __global const uchar *lmax, uint width, uint xn,
                            uint noise, float thresh, float relthresh, uint sep12, __global const uint *list,
                            __global uint *out, __global int *nx, __global int *ints, __global uchar *bytes)
{
    const ulong listed = list[0];
    GPUWS_FOR_EACH(i, listed)
    {
        ex_chain(list[1 + i], nl, cnt, grp, ru, rf, cap, lmax, (long)width, (int)xn, (int)noise, thresh, relthresh,
                 (int)sep12, out, nx, ints, bytes);
    }
}

__kernel void extract_chain_measure(__global const uint *grp, ulong cnt, ulong nl, __global const uint *ru,
                                    __global const float *rf, ulong cap, uint width, uint noise, float thresh,
                                    float relthresh, double gain, uint minarea, __global const uint *list,
                                    __global uint *out, __global uint *taken, __global double *mom)
{
    const ulong listed = list[0];
    GPUWS_FOR_EACH(i, listed)
    {
        ex_chain_measured(list[1 + i], nl, cnt, grp, ru, rf, cap, (long)width, (int)noise, thresh, relthresh, gain,
                          (int)minarea, out, taken, mom);
    }
}

/* ---- cleaning's pairs (extract_clean.h) ---- */

/* Each object's cell, and its place among its cell's objects (count: the cells' counts, zeroed before). */
__kernel void extract_clean_cells(ulong n, __global const double *d, __global const uchar *lvl,
                                  __global const double *lvd, __global const uint *lvu, __global uint *cellof,
                                  __global uint *rank, __global int *count)
{
    GPUWS_FOR_EACH(i, n)
    {
        const uint c = ex_clean_cell_of(i, d, lvl, lvd, lvu);
        cellof[i] = c;
        rank[i] = (uint)atomic_inc(&count[c]);
    }
}

/* Each object into its cell's place (cstart: the counts scanned). */
__kernel void extract_clean_place(ulong n, __global const uint *cellof, __global const uint *rank,
                                  __global const int *cstart, __global uint *cellids)
{
    GPUWS_FOR_EACH(i, n)
    {
        cellids[cstart[cellof[i]] + rank[i]] = (uint)i;
    }
}

__kernel void extract_clean_pairs(ulong n, __global const double *d, __global const float *f, double beta,
                                  double margin, int most, uint nused, __global const uint *used,
                                  __global const double *lvd, __global const uint *lvu, __global const uint *cellids,
                                  __global const int *cstart, uint pass, __global int *cnt, __global uint *words)
{
    GPUWS_FOR_EACH(i, n)
    {
        ex_clean_pairs(i, d, f, beta, margin, most, nused, used, lvd, lvu, cellids, cstart, pass, cnt, words);
    }
}

#endif

/* ---- the records the host reads, compact (extract_chain.h) ---- */

__kernel void extract_compact_need(__global const uint *out, ulong cnt, ulong nl, __global const double *mom,
                                   uint minarea, __global const uint *ru, ulong lo, ulong hi, __global int *need)
{
    GPUWS_FOR_EACH(i, nl)
    {
        ex_compact_need(i + 1, nl, cnt, out, mom, (int)minarea, ru, lo, hi, need);
    }
}

__kernel void extract_compact_place(__global const uint *out, ulong cnt, ulong nl, __global const uint *ru, ulong cap,
                                    __global const int *at, uint nread, __global uint *cu)
{
    GPUWS_FOR_EACH(i, cnt)
    {
        ex_compact_place(i, nl, cnt, out, ru, cap, at, nread, cu);
    }
}

__kernel void extract_compact_group(__global const uint *out, ulong cnt, ulong nl, __global const int *at,
                                    __global const uint *taken, __global uint *cg)
{
    const ulong words = 2 * nl + 3;
    GPUWS_FOR_EACH(j, words)
    {
        ex_compact_group(j, nl, cnt, out, at, taken, cg);
    }
}
