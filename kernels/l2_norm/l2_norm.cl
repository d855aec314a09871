/* out[r] = ‖row r‖₂, overflow-safe: the same kernels and parameters as l2_norm.cu (see there for the method).
 * Built per dtype: without -DL2_F64 this defines l2_norm_group_f32 and l2_norm_rows_f32, with -DL2_F64=1 (only
 * where the device has fp64) the _f64 pair. The group kernel reduces through local memory (OpenCL 1.2 has no
 * sub-group shuffles): `scratch` holds one value per work-item. Sums are written a·a + s under FP_CONTRACT, so
 * devices with fused multiply-add use it, and CPUs without one are not sent to a software fma(). */
#pragma OPENCL FP_CONTRACT ON

#ifdef L2_F64
#ifndef GPUWS_FP64
#error "l2_norm f64 kernels need cl_khr_fp64"
#endif
#define T double
#define VT double2
#define VW 2
#define L2_NAME(v) l2_norm_##v##_f64
#define EMAX 1022
#define EXPONENT(m) ((int)((as_ulong(m) >> 52) & 0x7ff) - 1023)
#define POW2(e) as_double((ulong)(1023 + (e)) << 52)
#define UNPACK(r, v) (r[0] = (v).s0, r[1] = (v).s1)
#else
#define T float
#define VT float4
#define VW 4
#define L2_NAME(v) l2_norm_##v##_f32
#define EMAX 126
#define EXPONENT(m) ((int)((as_uint(m) >> 23) & 0xffu) - 127)
#define POW2(e) as_float((uint)(127 + (e)) << 23)
#define UNPACK(r, v) (r[0] = (v).s0, r[1] = (v).s1, r[2] = (v).s2, r[3] = (v).s3)
#endif

#include "l2_norm_layout.h"

#define R L2_NORM_VECTORS /* vectors per work-item held in registers between the passes */

/* max that lets a NaN through: once NaN, stays NaN */
#define MAX_NAN(m, a) (((a) > (m) || (a) != (a)) ? (a) : (m))
#define ADD(a, b) ((a) + (b))

/* 2^-e and 2^e with 2^e near m, both normal (e clamped). */
#define SCALES(m, down, up)                                                                                     \
    {                                                                                                           \
        const int e_ = clamp(EXPONENT(m), -EMAX, EMAX);                                                         \
        down = POW2(-e_);                                                                                       \
        up = POW2(e_);                                                                                          \
    }

/* NaN, Inf and 0 are their own norm (a NaN anywhere made m NaN); otherwise undo the scaling. */
#define NORM_OF(m, sum, up) (((m) != (m) || (m) == 0 || isinf(m)) ? (m) : sqrt(sum) * (up))

/* Elements vi·VW .. vi·VW + VW - 1 of the row, zeros past n. */
#define LOAD(row, vi, n, aligned, x)                                                                            \
    {                                                                                                           \
        const uint e_ = (vi) * VW;                                                                              \
        if ((aligned) && e_ + VW <= (n)) {                                                                      \
            const VT v_ = *(__global const VT *)((row) + e_);                                                   \
            UNPACK(x, v_);                                                                                      \
        } else {                                                                                                \
            for (int c_ = 0; c_ < VW; c_++) x[c_] = e_ + c_ < (n) ? (row)[e_ + c_] : 0;                         \
        }                                                                                                       \
    }

/* Reduces v over the `lanes` work-items of each row: a tree in local memory; every lane gets the same result. */
#define GROUP_REDUCE(v, OP)                                                                                     \
    {                                                                                                           \
        scratch[lid] = v;                                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
        for (uint s_ = lanes / 2; s_ > 0; s_ >>= 1) {                                                           \
            if (lane < s_) scratch[lid] = OP(scratch[lid], scratch[lid + s_]);                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
        }                                                                                                       \
        v = scratch[lid - lane];                                                                                \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
    }

/* `lanes` work-items per row (a power of two dividing the work-group size), local size / lanes rows per group. */
__kernel void L2_NAME(group)(__global const T *in, __global T *out, uint rows, uint cols, uint lanes,
                             __local T *scratch)
{
    const uint lid = get_local_id(0), lane = lid % lanes, per_group = get_local_size(0) / lanes;
    const bool aligned = cols % VW == 0; /* every row starts on a vector boundary */
    /* Every work-item runs the same number of iterations (barriers inside). */
    for (ulong r0 = (ulong)get_group_id(0) * per_group; r0 < rows; r0 += (ulong)get_num_groups(0) * per_group) {
        const ulong r = r0 + lid / lanes;
        const uint n = r < rows ? cols : 0; /* past the last row: reads nothing, contributes zeros */
        __global const T *row = in + (r < rows ? r : 0) * cols;
        const uint nvec = (n + VW - 1) / VW;

        T x[R][VW];
        T m = 0;
#pragma unroll
        for (int j = 0; j < R; j++) {
            LOAD(row, j * lanes + lane, n, aligned, x[j])
#pragma unroll
            for (int c = 0; c < VW; c++) m = MAX_NAN(m, fabs(x[j][c]));
        }
        for (uint vi = R * lanes + lane; vi < nvec; vi += lanes) {
            T y[VW];
            LOAD(row, vi, n, aligned, y)
            for (int c = 0; c < VW; c++) m = MAX_NAN(m, fabs(y[c]));
        }
        GROUP_REDUCE(m, MAX_NAN)

        T down, up;
        SCALES(m, down, up)
        T s = 0;
#pragma unroll
        for (int j = 0; j < R; j++)
#pragma unroll
            for (int c = 0; c < VW; c++) {
                const T y = x[j][c] * down;
                s += y * y;
            }
        for (uint vi = R * lanes + lane; vi < nvec; vi += lanes) { /* long rows: read again (from cache) */
            T y[VW];
            LOAD(row, vi, n, aligned, y)
            for (int c = 0; c < VW; c++) {
                const T z = y[c] * down;
                s += z * z;
            }
        }
        GROUP_REDUCE(s, ADD)
        if (lane == 0 && r < rows) out[r] = NORM_OF(m, s, up);
    }
}

/* One work-item per row (short rows, and CPU devices), grid-stride over rows. */
__kernel void L2_NAME(rows)(__global const T *in, __global T *out, uint rows, uint cols)
{
    for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
        __global const T *row = in + r * cols;
        T m = 0;
        for (uint j = 0; j < cols; j++) m = MAX_NAN(m, fabs(row[j]));
        T down, up;
        SCALES(m, down, up)
        T s = 0;
        for (uint j = 0; j < cols; j++) {
            const T y = row[j] * down;
            s += y * y;
        }
        out[r] = NORM_OF(m, s, up);
    }
}
