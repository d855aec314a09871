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
 * measure_finalize: record k <- (sum, row = Σd·r / sum, col, peak = data[index], npix, peak row, peak col).
 * Record layout (gpuws_source_measure, 7 words): sum, row, col, peak, npix, peak_row, peak_col; while
 * accumulating, row/col hold the weighted sums and peak the key. */
#if defined(GPUWS_FP64) && (defined(cl_khr_int64_base_atomics) || defined(GPUWS_MEASURE_INT64_ATOMICS))
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define M_P 8         /* pixels per work-item and tile */
#define M_MAXB 256    /* largest work-group (static local arrays) */
#define M_JOIN_MAX 32 /* more joins than this in a tile: add runs up in local memory first */

inline uint m_okey(float x)
{
    if (isnan(x)) return 0xffffffffu;
    const uint u = as_uint(x == 0.0f ? 0.0f : x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline void m_add_f64(__global ulong *p, double v)
{
    volatile __global ulong *vp = p;
    ulong old = *vp, seen;
    do {
        seen = old;
        old = atom_cmpxchg(vp, seen, as_ulong(as_double(seen) + v));
    } while (old != seen);
}

inline void m_max_u64(__global ulong *p, ulong v)
{
    volatile __global ulong *vp = p;
    ulong old = *vp;
    while (v > old) {
        const ulong prev = atom_cmpxchg(vp, old, v);
        if (prev == old) break;
        old = prev;
    }
}

typedef struct {
    double sd, sr, sc;
    uint cnt;
    ulong key;
} m_acc;

inline void m_flush(__global ulong *out, int label, const m_acc *a)
{
    __global ulong *rec = out + (ulong)(label - 1) * 7u;
    m_add_f64(rec + 0, a->sd);
    m_add_f64(rec + 1, a->sr);
    m_add_f64(rec + 2, a->sc);
    m_max_u64(rec + 3, a->key);
    atom_add(rec + 4, (ulong)a->cnt);
}

__kernel void measure_accumulate(__global const float *data, __global const int *labels, ulong npix, uint width,
                                 uint nlab, __global ulong *out)
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
        int lab[M_P];
        float val[M_P];
        if (base + M_P <= npix) {
            const int4 a = ((__global const int4 *)(labels + base))[0], b = ((__global const int4 *)(labels + base))[1];
            vstore4(a, 0, lab);
            vstore4(b, 1, lab);
        } else {
            for (uint j = 0; j < M_P; j++) lab[j] = base + j < npix ? labels[base + j] : 0;
        }
        bool any = false;
        for (uint j = 0; j < M_P; j++) {
            if (lab[j] < 1 || (uint)lab[j] > nlab) lab[j] = 0;
            any |= lab[j] != 0;
        }
        if (!any) {
            for (uint j = 0; j < M_P; j++) val[j] = 0.0f;
        } else if (base + M_P <= npix) { /* the data only where a label needs it (sparse images: a fraction) */
            const float4 a = ((__global const float4 *)(data + base))[0], b = ((__global const float4 *)(data + base))[1];
            vstore4(a, 0, val);
            vstore4(b, 1, val);
        } else {
            for (uint j = 0; j < M_P; j++) val[j] = base + j < npix ? data[base + j] : 0.0f;
        }
        /* runs of equal labels in this work-item's pixels */
        uint r = (uint)(base / width), c = (uint)(base - (ulong)r * width);
        int fl = 0, cl = 0, nruns = 0;
        m_acc first = {0.0, 0.0, 0.0, 0u, 0ul}, cur = first;
        const m_acc zero = first;
        for (uint j = 0; j < M_P; j++) {
            const int L = lab[j];
            if (j == 0 || L != cl) {
                if (j > 0) {
                    if (nruns == 1) {
                        fl = cl;
                        first = cur;
                    } else if (cl != 0) {
                        m_flush(out, cl, &cur);
                    }
                }
                cl = L;
                cur = zero;
                nruns++;
            }
            if (L != 0) {
                const double d = (double)val[j];
                cur.sd += d;
                cur.sr += d * (double)r;
                cur.sc += d * (double)c;
                cur.cnt++;
                const ulong key = ((ulong)m_okey(val[j]) << 32) | (ulong)(0xffffffffu - (uint)(base + j));
                cur.key = max(cur.key, key);
            }
            if (++c == width) {
                c = 0;
                r++;
            }
        }
        if (nruns == 1) { /* one run: it is both ends; the second item continues it with nothing added */
            fl = cl;
            first = cur;
            cur = zero;
        }
        const uint i0 = 2 * lid, i1 = i0 + 1;
        l_lab[i0] = fl;
        l_sd[i0] = first.sd; l_sr[i0] = first.sr; l_sc[i0] = first.sc; l_cnt[i0] = first.cnt; l_key[i0] = first.key;
        l_lab[i1] = cl;
        l_sd[i1] = cur.sd; l_sr[i1] = cur.sr; l_sc[i1] = cur.sc; l_cnt[i1] = cur.cnt; l_key[i1] = cur.key;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid > 0 && fl != 0 && l_lab[i0 - 1] == fl) atomic_inc(&l_joins[0]);
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint joins = l_joins[0];
        if (joins <= M_JOIN_MAX) {
            if (fl != 0 && first.cnt) m_flush(out, fl, &first);
            if (cl != 0 && cur.cnt) m_flush(out, cl, &cur);
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
                m_acc add[2];
                bool take[2];
                for (uint q = 0; q < 2; q++) {
                    const uint i = i0 + q;
                    take[q] = i >= d && i - d >= l_seg[i];
                    if (take[q]) {
                        add[q].sd = l_sd[i - d]; add[q].sr = l_sr[i - d]; add[q].sc = l_sc[i - d];
                        add[q].cnt = l_cnt[i - d]; add[q].key = l_key[i - d];
                    }
                }
                barrier(CLK_LOCAL_MEM_FENCE);
                for (uint q = 0; q < 2; q++) {
                    const uint i = i0 + q;
                    if (take[q]) {
                        l_sd[i] += add[q].sd; l_sr[i] += add[q].sr; l_sc[i] += add[q].sc;
                        l_cnt[i] += add[q].cnt; l_key[i] = max(l_key[i], add[q].key);
                    }
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            for (uint q = 0; q < 2; q++) { /* run ends flush their totals */
                const uint i = i0 + q;
                if (l_lab[i] != 0 && l_cnt[i] && (i == N2 - 1 || l_lab[i + 1] != l_lab[i])) {
                    const m_acc a = {l_sd[i], l_sr[i], l_sc[i], l_cnt[i], l_key[i]};
                    m_flush(out, l_lab[i], &a);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) l_joins[0] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel void measure_finalize(__global const float *data, __global ulong *out, uint nlab, uint width)
{
    for (uint k = get_global_id(0); k < nlab; k += get_global_size(0)) {
        __global ulong *rec = out + (ulong)k * 7u;
        const double sum = as_double(rec[0]);
        const ulong npix = rec[4];
        const bool some = sum != 0.0; /* a NaN sum counts: NaN / NaN stays NaN */
        rec[1] = as_ulong(some ? as_double(rec[1]) / sum : (double)NAN);
        rec[2] = as_ulong(some ? as_double(rec[2]) / sum : (double)NAN);
        if (npix) {
            const uint idx = 0xffffffffu - (uint)rec[3];
            rec[3] = as_ulong((double)data[idx]);
            rec[5] = idx / width;
            rec[6] = idx % width;
        } else {
            rec[3] = as_ulong((double)NAN);
            rec[5] = rec[6] = (ulong)-1L;
        }
    }
}

#endif
