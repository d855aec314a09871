/* Histogram over equal bins: the same kernels, parameters and structure as histogram.cu (see there).
 * A value's bin comes only from exact comparisons with the edge table; the float guess is corrected by them. */

static uint guess(float v, float glo, float gscale, uint bins)
{
    const float t = (v - glo) * gscale; /* >= 0 after the range test; NaN or huge t clamps to the top bin */
    return min((uint)fmin(t, 4.0e9f), bins - 1);
}

/* The bin of v in the edge table e (any address space): -1 when v is outside [e0, eb) = [e[0], e[bins]) or
 * NaN. e0 and eb come in registers: the local atomics could alias the table, so they would be reloaded. */
#define DEFINE_BIN_OF(NAME, T, E, SPACE)                                                                            \
    static int NAME(T v, SPACE const E *e, E e0, E eb, uint bins, float glo, float gscale)                          \
    {                                                                                                               \
        if (!(v >= e0 && v < eb)) return -1;                                                                        \
        uint k = guess((float)v, glo, gscale, bins);                                                                \
        while (k > 0 && v < e[k]) k--;                                                                              \
        while (k < bins - 1 && v >= e[k + 1]) k++;                                                                  \
        return (int)k;                                                                                              \
    }
DEFINE_BIN_OF(bin_f32_local, float, float, __local)
DEFINE_BIN_OF(bin_f32_global, float, float, __global)
DEFINE_BIN_OF(bin_i32_local, int, long, __local)
DEFINE_BIN_OF(bin_i32_global, int, long, __global)

/* Runs ADD(value, F) over xs[0 .. len): 4-element loads, two in flight per work-item, then the tail. */
#define FOR_EACH_VALUE(T, xs, len, ADD, F)                                                                          \
    {                                                                                                               \
        const ulong nv = (len) / 4, stride = get_global_size(0);                                                    \
        ulong i = get_global_id(0);                                                                                 \
        for (; i + stride < nv; i += 2 * stride) {                                                                  \
            const T##4 a = vload4(i, xs), b = vload4(i + stride, xs);                                               \
            ADD(a.s0, F); ADD(a.s1, F); ADD(a.s2, F); ADD(a.s3, F);                                                 \
            ADD(b.s0, F); ADD(b.s1, F); ADD(b.s2, F); ADD(b.s3, F);                                                 \
        }                                                                                                           \
        if (i < nv) {                                                                                               \
            const T##4 a = vload4(i, xs);                                                                           \
            ADD(a.s0, F); ADD(a.s1, F); ADD(a.s2, F); ADD(a.s3, F);                                                 \
        }                                                                                                           \
        for (ulong j = nv * 4 + get_global_id(0); j < (len); j += stride) ADD(xs[j], F);                            \
    }

/* One privatised histogram per work-group in local memory, written to the group's row of partials. */
#define DEFINE_LOCAL(NAME, T, E, BIN_OF)                                                                            \
    __kernel void NAME(__global const T *x, __global uint *partials, __global const E *edges, ulong offset,         \
                       ulong len, uint bins, float glo, float gscale, __local uint *lb, __local E *le)              \
    {                                                                                                               \
        for (uint i = get_local_id(0); i < bins; i += get_local_size(0)) lb[i] = 0;                                 \
        for (uint i = get_local_id(0); i <= bins; i += get_local_size(0)) le[i] = edges[i];                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                               \
        __global const T *xs = x + offset;                                                                          \
        const E e0 = le[0], eb = le[bins];                                                                          \
        FOR_EACH_VALUE(T, xs, len, ADD_LOCAL, BIN_OF)                                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                               \
        __global uint *row = partials + (ulong)get_group_id(0) * bins;                                              \
        for (uint i = get_local_id(0); i < bins; i += get_local_size(0)) row[i] = lb[i];                            \
    }

/* Too many bins for local memory: 32-bit atomics on one zeroed row in global memory. */
#define DEFINE_GLOBAL(NAME, T, E, BIN_OF)                                                                           \
    __kernel void NAME(__global const T *x, __global uint *partials, __global const E *edges, ulong offset,         \
                       ulong len, uint bins, float glo, float gscale)                                               \
    {                                                                                                               \
        __global const T *xs = x + offset;                                                                          \
        const E e0 = edges[0], eb = edges[bins];                                                                    \
        FOR_EACH_VALUE(T, xs, len, ADD_GLOBAL, BIN_OF)                                                              \
    }

#define ADD_LOCAL(v, BIN_OF)                                                                                        \
    {                                                                                                               \
        const int k_ = BIN_OF((v), le, e0, eb, bins, glo, gscale);                                                  \
        if (k_ >= 0) atomic_inc(lb + k_);                                                                           \
    }
#define ADD_GLOBAL(v, BIN_OF)                                                                                       \
    {                                                                                                               \
        const int k_ = BIN_OF((v), edges, e0, eb, bins, glo, gscale);                                               \
        if (k_ >= 0) atomic_inc(partials + k_);                                                                     \
    }

DEFINE_LOCAL(histogram_f32_local, float, float, bin_f32_local)
DEFINE_LOCAL(histogram_i32_local, int, long, bin_i32_local)
DEFINE_GLOBAL(histogram_f32_global, float, float, bin_f32_global)
DEFINE_GLOBAL(histogram_i32_global, int, long, bin_i32_global)

__kernel void histogram_merge(__global const uint *partials, __global ulong *counts, uint bins, uint rows, uint accumulate)
{
    const uint b = get_global_id(0);
    if (b >= bins) return;
    ulong s = accumulate ? counts[b] : 0;
    for (uint r = 0; r < rows; r++) s += partials[(ulong)r * bins + b];
    counts[b] = s;
}

#ifdef GPUWS_FP64
/* edge k = k * step + lo, each operation rounded once (no contraction into fma), edge[bins] = hi: the host's. */
#pragma OPENCL FP_CONTRACT OFF
static double edge_at(uint k, double lo, double step, double hi, uint bins)
{
    if (k == bins) return hi;
    double e = (double)k * step;
    e = e + lo;
    return e;
}

__kernel void histogram_edges_f32(__global float *edges, double lo, double step, double hi, uint bins)
{
    const ulong k = get_global_id(0);
    if (k <= bins) edges[k] = convert_float_rtp(edge_at((uint)k, lo, step, hi, bins));
}

__kernel void histogram_edges_i32(__global long *edges, double lo, double step, double hi, uint bins)
{
    const ulong k = get_global_id(0);
    if (k > bins) return;
    const double c = ceil(edge_at((uint)k, lo, step, hi, bins));
    edges[k] = c < -2147483648.0 ? -2147483648L : c > 2147483648.0 ? 2147483648L : (long)c;
}
#endif
