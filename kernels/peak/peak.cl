/* The FMA-rate kernel (see peak.h): eight independent register chains per work-item, the step loop unrolled by
 * 16. mad() is the device's fastest a*b+c (an FFMA/DFMA on NVIDIA, a vector FMA under PoCL on CPUs with FMA).
 * peak_fma_f32/f64 keep one value per chain, like the CUDA kernel; the _vec kernels make each chain a vector of
 * PEAK_VW lanes (-DPEAK_VW=2|4|8|16), for CPU devices, whose SIMD units explicit vectors reach most directly. */

#define PEAK_STEP8 \
    x0 = mad(x0, a, b); x1 = mad(x1, a, b); x2 = mad(x2, a, b); x3 = mad(x3, a, b); \
    x4 = mad(x4, a, b); x5 = mad(x5, a, b); x6 = mad(x6, a, b); x7 = mad(x7, a, b);
#define PEAK_STEP16x8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 \
                      PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8 PEAK_STEP8

/* T: the chain's type; base: its start value (gpuws__peak_start with j = 0); SUM: folds a chain to a scalar. */
#define PEAK_BODY(T, base, SUM)                                                                                 \
    T x0 = base, x1 = base + 0.125f, x2 = base + 0.25f, x3 = base + 0.375f, x4 = base + 0.5f,                   \
      x5 = base + 0.625f, x6 = base + 0.75f, x7 = base + 0.875f;                                                \
    for (uint i = 0; i < iters; i += 16) { PEAK_STEP16x8 }                                                      \
    if (t < n) out[t] = SUM(((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)));

#define PEAK_SCALAR(x) (x)

__kernel void peak_fma_f32(__global float *out, float a, float b, uint iters, ulong n)
{
    const ulong t = get_global_id(0);
    PEAK_BODY(float, 2.0f + (float)(t & 7) * 0.25f, PEAK_SCALAR)
}

#ifdef GPUWS_FP64
__kernel void peak_fma_f64(__global double *out, double a, double b, uint iters, ulong n)
{
    const ulong t = get_global_id(0);
    PEAK_BODY(double, 2.0 + (double)(t & 7) * 0.25, PEAK_SCALAR)
}
#endif

#ifdef PEAK_VW
#define PEAK_CAT_(a, b) a##b
#define PEAK_CAT(a, b) PEAK_CAT_(a, b)
#define FLOATV PEAK_CAT(float, PEAK_VW)
#define DOUBLEV PEAK_CAT(double, PEAK_VW)

/* lane l of a vector starts l / 64 higher (gpuws__peak_start); HSUM adds the lanes pairwise */
#if PEAK_VW == 2
#define LANE_OFFSETS(T) ((T)(0.0f, 1.0f) / 64.0f)
#define HSUM(v) ((v).s0 + (v).s1)
#elif PEAK_VW == 4
#define LANE_OFFSETS(T) ((T)(0.0f, 1.0f, 2.0f, 3.0f) / 64.0f)
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#elif PEAK_VW == 8
#define LANE_OFFSETS(T) ((T)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f) / 64.0f)
#define HSUM(v) ((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) + (((v).s4 + (v).s5) + ((v).s6 + (v).s7)))
#else
#define LANE_OFFSETS(T) ((T)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f) / 64.0f)
#define HSUM(v) (((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) + (((v).s4 + (v).s5) + ((v).s6 + (v).s7))) + \
                 ((((v).s8 + (v).s9) + ((v).sa + (v).sb)) + (((v).sc + (v).sd) + ((v).se + (v).sf))))
#endif

__kernel void peak_fma_vec_f32(__global float *out, float as, float bs, uint iters, ulong n)
{
    const ulong t = get_global_id(0);
    const FLOATV a = (FLOATV)(as), b = (FLOATV)(bs);
    PEAK_BODY(FLOATV, (FLOATV)(2.0f + (float)(t & 7) * 0.25f) + LANE_OFFSETS(FLOATV), HSUM)
}

#ifdef GPUWS_FP64
__kernel void peak_fma_vec_f64(__global double *out, double as, double bs, uint iters, ulong n)
{
    const ulong t = get_global_id(0);
    const DOUBLEV a = (DOUBLEV)(as), b = (DOUBLEV)(bs);
    PEAK_BODY(DOUBLEV, (DOUBLEV)(2.0 + (double)(t & 7) * 0.25) + PEAK_CAT(convert_double, PEAK_VW)(LANE_OFFSETS(FLOATV)), HSUM)
}
#endif
#endif
