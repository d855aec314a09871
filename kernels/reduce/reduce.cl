/* Sum / min / max in two launches: _partial (grid-stride, 16-byte vector loads, one value per work-group) and
 * _final (one work-group over the partials, writes out[0]). Work-group size: a power of two, chosen by the host.
 * f32 sums accumulate in double where the device has fp64; elsewhere (or with -DGPUWS_REDUCE_FLOAT_ACC) in float
 * with a Kahan-compensated per-work-item sum. */

#define ADD(a, b) ((a) + (b))
/* NaN wins (NumPy); -0.0 < +0.0, so the result never depends on the order of combination. */
#define MINOP(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : ((b) < (a) || ((b) == (a) && signbit(b))) ? (b) : (a))
#define MAXOP(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : ((b) > (a) || ((b) == (a) && !signbit(b))) ? (b) : (a))

#define TREE(OPF, lds, v)                                                                                       \
    {                                                                                                           \
        const uint lid = get_local_id(0);                                                                       \
        lds[lid] = v;                                                                                           \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
        for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {                                                  \
            if (lid < s) lds[lid] = OPF(lds[lid], lds[lid + s]);                                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
        }                                                                                                       \
    }

/* NAME, element type T, its 4-vector, accumulator type A, identity, combine. */
#define DEFINE_REDUCE(NAME, T, A, IDENT, OPF)                                                                   \
    __kernel void reduce_##NAME##_partial(__global const T *in, __global A *partials, ulong n, __local A *lds)  \
    {                                                                                                           \
        A v = IDENT;                                                                                            \
        const ulong nv = n / 4, stride = get_global_size(0);                                                    \
        for (ulong i = get_global_id(0); i < nv; i += stride) {                                                 \
            const T##4 x = vload4(i, in);                                                                       \
            v = OPF(v, (A)x.s0); v = OPF(v, (A)x.s1); v = OPF(v, (A)x.s2); v = OPF(v, (A)x.s3);                 \
        }                                                                                                       \
        for (ulong j = nv * 4 + get_global_id(0); j < n; j += stride) v = OPF(v, (A)in[j]);                     \
        TREE(OPF, lds, v)                                                                                       \
        if (get_local_id(0) == 0) partials[get_group_id(0)] = lds[0];                                           \
    }                                                                                                           \
    __kernel void reduce_##NAME##_final(__global const A *partials, __global T *out, uint count, __local A *lds) \
    {                                                                                                           \
        A v = IDENT;                                                                                            \
        for (uint i = get_local_id(0); i < count; i += get_local_size(0)) v = OPF(v, partials[i]);              \
        TREE(OPF, lds, v)                                                                                       \
        if (get_local_id(0) == 0) out[0] = (T)lds[0];                                                           \
    }

DEFINE_REDUCE(min_f32, float, float, INFINITY, MINOP)
DEFINE_REDUCE(max_f32, float, float, -INFINITY, MAXOP)

#if defined(GPUWS_FP64) && !defined(GPUWS_REDUCE_FLOAT_ACC)
DEFINE_REDUCE(sum_f32, float, double, 0.0, ADD)
#else
/* Float accumulation: each work-item keeps a Kahan-compensated sum, the tree adds the compensated values. */
__kernel void reduce_sum_f32_partial(__global const float *in, __global float *partials, ulong n, __local float *lds)
{
    float s = 0.0f, c = 0.0f;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        const float y = in[i] - c;
        const float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    TREE(ADD, lds, s)
    if (get_local_id(0) == 0) partials[get_group_id(0)] = lds[0];
}
__kernel void reduce_sum_f32_final(__global const float *partials, __global float *out, uint count, __local float *lds)
{
    float s = 0.0f, c = 0.0f;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0)) {
        const float y = partials[i] - c;
        const float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    TREE(ADD, lds, s)
    if (get_local_id(0) == 0) out[0] = lds[0];
}
#endif

#ifdef GPUWS_FP64
DEFINE_REDUCE(sum_f64, double, double, 0.0, ADD)
DEFINE_REDUCE(min_f64, double, double, INFINITY, MINOP)
DEFINE_REDUCE(max_f64, double, double, -INFINITY, MAXOP)
#endif
