/* Per-label measurements (sum, Σ data·row, Σ data·col, pixel count, peak) with f64 atomics on the output
 * records, then a finalize pass. Needs fp64 and 64-bit atomics (cl_khr_int64_base_atomics: f64 adds and the peak
 * maximum are compare-and-swap loops on ulong).
 *
 * measure_accumulate: each work-group takes tiles of B*8 consecutive pixels (raster order); each work-item walks
 * its 8 pixels (two 16-byte loads of labels, aligned since 8 | base; the data only when one of them is
 * labelled), adding runs of equal
 * labels in registers. Runs that start and end inside the work-item are flushed at once; its first and last runs
 * go to local memory, where runs continuing across work-items are joined: when few joins happen (sparse labels)
 * every work-item flushes its own, otherwise (large sources, where many work-items hit one label) a segmented
 * scan adds each run up and only run ends flush, so one label costs a few atomics per tile, not one per pixel.
 * Peak: a 64-bit key (order-preserving value bits << 32 | ~raster index), so one atomic max keeps the largest value
 * and, among equal ones, the first pixel; NaN maps to the top key, +0 and -0 to one key.
 * The atomics go to the stream's zeroed memory (acc, gpuws__stream_zeroed), not to the output: no fill per call.
 * measure_finalize: out record k <- (sum, row = Σd·r / sum, col, peak = data[index], npix, peak row, peak col)
 * (raw: Σd·r and Σd·c themselves, for records that a caller adds up over parts of an image),
 * and acc record k <- 0 again for the next call.
 * remap (the accumulation and measure_first_peak): the labels are a band's provisional numbers, l read as table[l - 1]
 * (label.cl's label_remap_table), which spares a pipeline over several devices a pass over them.
 * Record layout (gpuws_source_measure, 7 words): sum, row, col, peak, npix, peak_row, peak_col; in acc, row/col
 * hold the weighted sums and peak the key (words 5 and 6 are never written there but in the wide build, below).
 * More than 2^32 pixels (built with GPUWS_MEASURE_WIDE, used only there or when the measure_wide_peak knob forces
 * it): an index no longer fits the key's low word, so measure_accumulate_wide keeps the value's key only (rows,
 * columns and width 64-bit), measure_first_peak then takes, among each label's pixels of that key, the first one
 * (an atomic max of ~index on acc word 5, 0 meaning none) and measure_finalize_wide reads it from there. */
#include "measure_layout.h"

#if defined(GPUWS_FP64) && (defined(cl_khr_int64_base_atomics) || defined(GPUWS_MEASURE_INT64_ATOMICS))
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifdef cl_khr_int64_extended_atomics
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#endif

#define M_P MEASURE_PIXELS
#define M_MAXB MEASURE_MAX_BLOCK
#define M_JOIN_MAX MEASURE_JOIN_MAX

#ifdef GPUWS_MEASURE_WIDE
typedef ulong m_pos; /* row, column and width */
#define M_ACCUMULATE measure_accumulate_wide
#define M_FINALIZE   measure_finalize_wide
#define M_KEY(v, i)  ((ulong)m_okey(v) << 32)
#else
typedef uint m_pos; /* at most 2^32 pixels: 32-bit row, column and width */
#define M_ACCUMULATE measure_accumulate
#define M_FINALIZE   measure_finalize
#define M_KEY(v, i)  (((ulong)m_okey(v) << 32) | (ulong)(0xffffffffu - (i)))
#endif

inline uint m_okey(float x)
{
    if (isnan(x)) return 0xffffffffu;
    const uint u = as_uint(x == 0.0f ? 0.0f : x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* *p <- max(*p, v), atomically */
inline void m_max(__global ulong *p, ulong v)
{
#ifdef cl_khr_int64_extended_atomics
    atom_max(p, v);
#else
    for (ulong old = 0; v > old;) {
        const ulong prev = atom_cmpxchg(p, old, v);
        if (prev == old) break;
        old = prev;
    }
#endif
}

/* One run's totals into record rec (label - 1). Accumulators are plain scalars passed by value, never a struct
 * behind a pointer: NVIDIA's OpenCL compiler kept such structs in a stack frame (local memory).
 * GPUWS_NV_PTX (set by the host on NVIDIA's OpenCL platform only): fire-and-forget PTX reductions, as CUDA's
 * atomicAdd/atomicMax compile to when their result is unused. Elsewhere: the 64-bit max and count are OpenCL
 * atomics whose result is unused (a GPU compiler may make them reductions too), and the three f64 sums are
 * compare-and-swap loops run side by side, so their round trips to memory overlap instead of queueing. The
 * first guess is 0, not a read of the record: a label's first flush then succeeds at once, later ones fail once
 * and learn the value, which costs the round trip a read would, and no plain read races with the atomics
 * (Oclgrind reports such a race; a volatile read was a system-scope load). */
inline void m_flush(__global ulong *out, int label, double sd, double sr, double sc, uint cnt, ulong key)
{
    __global ulong *rec = out + (ulong)(label - 1) * MEASURE_RECORD_WORDS;
#ifdef GPUWS_NV_PTX
    asm volatile("red.global.add.f64 [%0], %1;" ::"l"(rec), "d"(sd) : "memory");
    asm volatile("red.global.add.f64 [%0], %1;" ::"l"(rec + 1), "d"(sr) : "memory");
    asm volatile("red.global.add.f64 [%0], %1;" ::"l"(rec + 2), "d"(sc) : "memory");
    asm volatile("red.global.max.u64 [%0], %1;" ::"l"(rec + 3), "l"(key) : "memory");
    asm volatile("red.global.add.u64 [%0], %1;" ::"l"(rec + 4), "l"((ulong)cnt) : "memory");
#else
    m_max(rec + 3, key);
    atom_add(rec + 4, (ulong)cnt);
    ulong o0 = 0, o1 = 0, o2 = 0;
    bool d0 = false, d1 = false, d2 = false;
    do {
        if (!d0) {
            const ulong p = atom_cmpxchg(rec, o0, as_ulong(as_double(o0) + sd));
            d0 = p == o0;
            o0 = p;
        }
        if (!d1) {
            const ulong p = atom_cmpxchg(rec + 1, o1, as_ulong(as_double(o1) + sr));
            d1 = p == o1;
            o1 = p;
        }
        if (!d2) {
            const ulong p = atom_cmpxchg(rec + 2, o2, as_ulong(as_double(o2) + sc));
            d2 = p == o2;
            o2 = p;
        }
    } while (!(d0 && d1 && d2));
#endif
}

/* v = p[i .. i+7] as two vectors (zero past n): two 16-byte loads when all 8 are there (8 | i: aligned). */
#define M_LOAD8(T, p, i, n, a, b)                                                                                 \
    do {                                                                                                          \
        if ((i) + M_P <= (n)) {                                                                                   \
            a = ((__global const T##4 *)((p) + (i)))[0];                                                          \
            b = ((__global const T##4 *)((p) + (i)))[1];                                                          \
        } else {                                                                                                  \
            a = (T##4)((i) + 0 < (n) ? (p)[(i) + 0] : (T)0, (i) + 1 < (n) ? (p)[(i) + 1] : (T)0,                  \
                       (i) + 2 < (n) ? (p)[(i) + 2] : (T)0, (i) + 3 < (n) ? (p)[(i) + 3] : (T)0);                 \
            b = (T##4)((i) + 4 < (n) ? (p)[(i) + 4] : (T)0, (i) + 5 < (n) ? (p)[(i) + 5] : (T)0,                  \
                       (i) + 6 < (n) ? (p)[(i) + 6] : (T)0, (i) + 7 < (n) ? (p)[(i) + 7] : (T)0);                 \
        }                                                                                                         \
    } while (0)

/* x (a label of the work-item's, in order) through a band's table; a run of one label looks up once (raw, fin: the
 * last one). */
#define M_REMAP(x)                                                                                                \
    do {                                                                                                          \
        if ((x) > 0) {                                                                                            \
            if ((x) != raw) fin = table[(raw = (x)) - 1];                                                         \
            (x) = fin;                                                                                            \
        }                                                                                                         \
    } while (0)

/* Labels outside 1..nlab count as background. */
#define M_VALID(v, nlab) select((int4)0, (v), ((v) >= 1) & (as_uint4(v) <= (uint4)(nlab)))

__kernel void M_ACCUMULATE(__global const float *restrict data, __global const int *restrict labels, ulong npix,
                           m_pos width, uint nlab, __global ulong *restrict out, __global const int *restrict table,
                           uint remap)
{
    __local int l_lab[2 * M_MAXB];
    __local double l_sd[2 * M_MAXB], l_sr[2 * M_MAXB], l_sc[2 * M_MAXB];
    __local uint l_cnt[2 * M_MAXB], l_seg[2 * M_MAXB], l_joins[1];
    __local ulong l_key[2 * M_MAXB];
    const uint lid = get_local_id(0), B = get_local_size(0), N2 = 2 * B;
    const ulong tile = (ulong)B * M_P, ntiles = (npix + tile - 1) / tile;
    if (lid == 0) l_joins[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
        const ulong base = t * tile + (ulong)lid * M_P;
        int4 la, lb;
        M_LOAD8(int, labels, base, npix, la, lb);
        if (remap) {
            int raw = 0, fin = 0;
            M_REMAP(la.s0);
            M_REMAP(la.s1);
            M_REMAP(la.s2);
            M_REMAP(la.s3);
            M_REMAP(lb.s0);
            M_REMAP(lb.s1);
            M_REMAP(lb.s2);
            M_REMAP(lb.s3);
        }
        la = M_VALID(la, nlab);
        lb = M_VALID(lb, nlab);
        float4 va = (float4)0.0f, vb = (float4)0.0f;
        if (any((la | lb) != 0)) M_LOAD8(float, data, base, npix, va, vb); /* sparse images: a fraction */
        /* Plain scalars from here on, and a fully unrolled loop: no private array or struct that a compiler could
         * leave in local memory. Pixels at or past npix are background, so base < 2^32 wherever r and c are used
         * unless GPUWS_MEASURE_WIDE: 32-bit division there, 64-bit in the wide build. */
        const int lab[M_P] = {la.s0, la.s1, la.s2, la.s3, lb.s0, lb.s1, lb.s2, lb.s3};
        const float val[M_P] = {va.s0, va.s1, va.s2, va.s3, vb.s0, vb.s1, vb.s2, vb.s3};
        const m_pos b = (m_pos)base;
        m_pos r = b / width, c = b - r * width;
        int fl = 0, cl = 0, nruns = 0;
        double f_sd = 0.0, f_sr = 0.0, f_sc = 0.0, c_sd = 0.0, c_sr = 0.0, c_sc = 0.0;
        uint f_cnt = 0, c_cnt = 0;
        ulong f_key = 0, c_key = 0;
#pragma unroll
        for (uint j = 0; j < M_P; j++) {
            const int L = lab[j];
            if (j == 0 || L != cl) {
                if (j > 0) {
                    if (nruns == 1) {
                        fl = cl;
                        f_sd = c_sd; f_sr = c_sr; f_sc = c_sc; f_cnt = c_cnt; f_key = c_key;
                    } else if (cl != 0) {
                        m_flush(out, cl, c_sd, c_sr, c_sc, c_cnt, c_key);
                    }
                }
                cl = L;
                c_sd = c_sr = c_sc = 0.0;
                c_cnt = 0;
                c_key = 0;
                nruns++;
            }
            if (L != 0) {
                const double d = (double)val[j];
                c_sd += d;
                c_sr += d * (double)r;
                c_sc += d * (double)c;
                c_cnt++;
                c_key = max(c_key, M_KEY(val[j], b + j));
            }
            if (++c == width) {
                c = 0;
                r++;
            }
        }
        if (nruns == 1) { /* one run: it is both ends; the second item continues it with nothing added */
            fl = cl;
            f_sd = c_sd; f_sr = c_sr; f_sc = c_sc; f_cnt = c_cnt; f_key = c_key;
            c_sd = c_sr = c_sc = 0.0;
            c_cnt = 0;
            c_key = 0;
        }
        const uint i0 = 2 * lid, i1 = i0 + 1;
        l_lab[i0] = fl;
        l_sd[i0] = f_sd; l_sr[i0] = f_sr; l_sc[i0] = f_sc; l_cnt[i0] = f_cnt; l_key[i0] = f_key;
        l_lab[i1] = cl;
        l_sd[i1] = c_sd; l_sr[i1] = c_sr; l_sc[i1] = c_sc; l_cnt[i1] = c_cnt; l_key[i1] = c_key;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid > 0 && fl != 0 && l_lab[i0 - 1] == fl) atomic_inc(&l_joins[0]);
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint joins = l_joins[0];
        if (joins <= M_JOIN_MAX) {
            if (fl != 0 && f_cnt) m_flush(out, fl, f_sd, f_sr, f_sc, f_cnt, f_key);
            if (cl != 0 && c_cnt) m_flush(out, cl, c_sd, c_sr, c_sc, c_cnt, c_key);
        } else {
            /* segment starts (max-scan of head indices), then a segmented inclusive scan of the runs */
            l_seg[i0] = i0 == 0 || l_lab[i0] != l_lab[i0 - 1] ? i0 : 0u;
            l_seg[i1] = l_lab[i1] != l_lab[i0] ? i1 : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint d = 1; d < N2; d <<= 1) {
                const uint s0 = i0 >= d ? l_seg[i0 - d] : 0u, s1 = i1 >= d ? l_seg[i1 - d] : 0u;
                barrier(CLK_LOCAL_MEM_FENCE);
                l_seg[i0] = max(l_seg[i0], s0);
                l_seg[i1] = max(l_seg[i1], s1);
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            for (uint d = 1; d < N2; d <<= 1) {
                const bool t0 = i0 >= d && i0 - d >= l_seg[i0], t1 = i1 >= d && i1 - d >= l_seg[i1];
                double a0 = 0.0, b0 = 0.0, e0 = 0.0, a1 = 0.0, b1 = 0.0, e1 = 0.0;
                uint n0 = 0, n1 = 0;
                ulong k0 = 0, k1 = 0;
                if (t0) {
                    a0 = l_sd[i0 - d]; b0 = l_sr[i0 - d]; e0 = l_sc[i0 - d]; n0 = l_cnt[i0 - d]; k0 = l_key[i0 - d];
                }
                if (t1) {
                    a1 = l_sd[i1 - d]; b1 = l_sr[i1 - d]; e1 = l_sc[i1 - d]; n1 = l_cnt[i1 - d]; k1 = l_key[i1 - d];
                }
                barrier(CLK_LOCAL_MEM_FENCE);
                if (t0) {
                    l_sd[i0] += a0; l_sr[i0] += b0; l_sc[i0] += e0; l_cnt[i0] += n0; l_key[i0] = max(l_key[i0], k0);
                }
                if (t1) {
                    l_sd[i1] += a1; l_sr[i1] += b1; l_sc[i1] += e1; l_cnt[i1] += n1; l_key[i1] = max(l_key[i1], k1);
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            /* run ends flush their totals (no #pragma unroll: PoCL 3.1 loses counts with one here) */
            for (uint q = 0; q < 2; q++) {
                const uint i = i0 + q;
                if (l_lab[i] != 0 && l_cnt[i] && (i == N2 - 1 || l_lab[i + 1] != l_lab[i]))
                    m_flush(out, l_lab[i], l_sd[i], l_sr[i], l_sc[i], l_cnt[i], l_key[i]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) l_joins[0] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Record k of out from the totals in acc, whose words it clears for the next call (the stream's zeroed memory). */
__kernel void M_FINALIZE(__global const float *data, __global ulong *acc, __global ulong *out, uint nlab, m_pos width,
                         uint raw)
{
    for (uint k = get_global_id(0); k < nlab; k += get_global_size(0)) {
        __global ulong *a = acc + (ulong)k * MEASURE_RECORD_WORDS, *rec = out + (ulong)k * MEASURE_RECORD_WORDS;
        const double sum = as_double(a[0]), sr = as_double(a[1]), sc = as_double(a[2]);
        const ulong npix = a[4];
#ifdef GPUWS_MEASURE_WIDE
        const ulong idx = ~a[5];
        a[5] = 0;
#else
        const uint idx = 0xffffffffu - (uint)a[3];
#endif
        a[0] = a[1] = a[2] = a[3] = a[4] = 0;
        const bool some = sum != 0.0; /* a NaN sum counts: NaN / NaN stays NaN */
        rec[0] = as_ulong(sum);
        rec[1] = as_ulong(raw ? sr : some ? sr / sum : (double)NAN);
        rec[2] = as_ulong(raw ? sc : some ? sc / sum : (double)NAN);
        rec[4] = npix;
        if (npix) {
            rec[3] = as_ulong((double)data[idx]);
            rec[5] = idx / width;
            rec[6] = idx % width;
        } else {
            rec[3] = as_ulong((double)NAN);
            rec[5] = rec[6] = (ulong)-1L;
        }
    }
}

#ifdef GPUWS_MEASURE_WIDE
/* The wide build's second pass: each label's first pixel (raster order) whose value has the label's largest key
 * (acc word 3, from measure_accumulate_wide), as an atomic max of ~index on acc word 5. A work-item's pixels come
 * in increasing order, so after a match to one label its next pixels of that label cannot be earlier: it skips
 * them (a flat source then costs one atomic per work-item, not one per pixel). */
__kernel void measure_first_peak(__global const float *restrict data, __global const int *restrict labels, ulong npix,
                                 uint nlab, __global ulong *restrict acc, __global const int *restrict table,
                                 uint remap)
{
    int last = 0;
    for (ulong i = get_global_id(0); i < npix; i += get_global_size(0)) {
        int L = labels[i];
        if (remap && L > 0) L = table[L - 1];
        if (L < 1 || (uint)L > nlab || L == last) continue;
        __global ulong *a = acc + (ulong)(L - 1) * MEASURE_RECORD_WORDS;
        if (((ulong)m_okey(data[i]) << 32) != a[3]) continue;
        m_max(a + 5, ~i);
        last = L;
    }
}
#endif

#endif
