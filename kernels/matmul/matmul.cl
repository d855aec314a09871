/* C = A·B, row-major, any M, N, K: the same three kernels as matmul.cu, with the same structure and parameters.
 *
 * One source, built per dtype: without -DMM_F64 it defines matmul_{naive,shared,tiled}_f32, with -DMM_F64=1
 * (only where the device has fp64) the same _f64. Tunables of the tiled
 * kernel, as -D options (the host driver picks them by device type):
 *   MM_TX, MM_TY  work-items along n and m (default MATMUL_TX×MATMUL_TY = 16×16 = 256, matmul_layout.h)
 *   MM_VW         vector width in elements, 2 or 4 (default 16 bytes: 4 for f32, 2 for f64)
 *   MM_BK         k per shared-memory step, a multiple of MM_VW (default MATMUL_BK = 8)
 * A work-group computes a BM×BN tile of C, BM = 2·MM_TY·MM_VW, BN = 2·MM_TX·MM_VW; each work-item a
 * (2·VW)×(2·VW) register micro-tile of 2×2 sub-blocks VW wide. A's tile is stored transposed in local memory
 * (rows padded by one vector) so both operands are read as vectors; the local tiles are double-buffered and the
 * next step's global loads are issued before the current step is multiplied. Edges: guarded loads write zeros,
 * guarded stores. */
#pragma OPENCL FP_CONTRACT ON

#include "matmul_layout.h"

#ifdef MM_F64
#ifndef GPUWS_FP64
#error "matmul f64 kernels need cl_khr_fp64"
#endif
#define T double
#define MM_NAME(v) matmul_##v##_f64
#ifndef MM_VW
#define MM_VW MATMUL_VW_F64
#endif
#else
#define T float
#define MM_NAME(v) matmul_##v##_f32
#ifndef MM_VW
#define MM_VW MATMUL_VW_F32
#endif
#endif
#ifndef MM_TX
#define MM_TX MATMUL_TX
#endif
#ifndef MM_TY
#define MM_TY MATMUL_TY
#endif
#ifndef MM_BK
#define MM_BK MATMUL_BK
#endif

#define MM_CAT2(a, b) a##b
#define MM_CAT(a, b) MM_CAT2(a, b)
#define VT MM_CAT(T, MM_VW) /* float4, double2, ... */
#define NT (MM_TX * MM_TY)
#define BM (2 * MM_TY * MM_VW)
#define BN (2 * MM_TX * MM_VW)
#define AV (BM * MM_BK / MM_VW / NT) /* A vectors each work-item moves per K step */
#define AROWS (NT / (MM_BK / MM_VW))
#define BV (MM_BK * BN / MM_VW / NT)
#define BROWS (NT / (BN / MM_VW))
#define GROUP_M MATMUL_GROUP_M

#if MM_BK % MM_VW || AV * NT * MM_VW != BM * MM_BK || BV * NT * MM_VW != MM_BK * BN || NT % (MM_BK / MM_VW) || \
    NT % (BN / MM_VW)
#error "matmul: MM_TX, MM_TY, MM_VW, MM_BK do not tile"
#endif

#if MM_VW == 4
#define UNPACK(r, v) (r[0] = (v).s0, r[1] = (v).s1, r[2] = (v).s2, r[3] = (v).s3)
#define PACK(r) ((VT)(r[0], r[1], r[2], r[3]))
#elif MM_VW == 2
#define UNPACK(r, v) (r[0] = (v).s0, r[1] = (v).s1)
#define PACK(r) ((VT)(r[0], r[1]))
#else
#error "matmul: MM_VW must be 2 or 4"
#endif

/* One work-item per element of C, x along a row of C; y loops when the grid is shorter than M. */
__kernel void MM_NAME(naive)(__global const T *A, __global const T *B, __global T *C, uint M, uint N, uint K)
{
    const uint col = get_global_id(0);
    for (uint row = get_global_id(1); row < M; row += get_global_size(1)) {
        if (col >= N) continue;
        __global const T *a = A + (ulong)row * K;
        T acc = 0;
        for (uint l = 0; l < K; l++) acc += a[l] * B[(ulong)l * N + col];
        C[(ulong)row * N + col] = acc;
    }
}

/* A 16×16 work-group per 16×16 tile of C, A's and B's tiles in local memory (the workshop's second version); y
 * loops over tile rows when the grid is shorter than M / 16. */
#define MM_TS MATMUL_SHARED_TILE
__kernel __attribute__((reqd_work_group_size(MM_TS, MM_TS, 1))) void MM_NAME(shared)(__global const T *A,
                                                                                      __global const T *B, __global T *C,
                                                                                      uint M, uint N, uint K)
{
    __local T As[MM_TS][MM_TS], Bs[MM_TS][MM_TS];
    const uint tx = get_local_id(0), ty = get_local_id(1), col = get_group_id(0) * MM_TS + tx;
    for (uint r0 = get_group_id(1) * MM_TS; r0 < M; r0 += get_num_groups(1) * MM_TS) {
        const uint row = r0 + ty;
        T acc = 0;
        for (uint t = 0; t < K; t += MM_TS) {
            As[ty][tx] = row < M && t + tx < K ? A[(ulong)row * K + t + tx] : (T)0;
            Bs[ty][tx] = t + ty < K && col < N ? B[(ulong)(t + ty) * N + col] : (T)0;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint l = 0; l < MM_TS; l++) acc += As[ty][l] * Bs[l][tx];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < M && col < N) C[(ulong)row * N + col] = acc;
    }
}

/* One work-group of NT work-items per BM×BN tile of C; groups = tiles, in x. */
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void MM_NAME(tiled)(__global const T *A,
                                                                              __global const T *B, __global T *C,
                                                                              uint M, uint N, uint K)
{
    __local VT As[2][MM_BK][(BM + MM_VW) / MM_VW];
    __local VT Bs[2][MM_BK][BN / MM_VW];

    const uint tid = get_local_id(0), tx = tid % MM_TX, ty = tid / MM_TX;
    /* Tile order: GROUP_M tile rows walk the tile columns together, so their B tiles are shared in cache. */
    const uint mt = (M + BM - 1) / BM, nt = (N + BN - 1) / BN, t = get_group_id(0);
    const uint group = t / (GROUP_M * nt), first = group * GROUP_M;
    const uint gsize = min(mt - first, GROUP_M), in = t - group * GROUP_M * nt;
    const uint m0 = (first + in % gsize) * BM, n0 = (in / gsize) * BN;

    /* This work-item's share of each K step: A rows ar + v·AROWS at columns ak.., B rows bk + v·BROWS at bn.. */
    const uint ar = tid / (MM_BK / MM_VW), ak = tid % (MM_BK / MM_VW) * MM_VW;
    const uint bk = tid / (BN / MM_VW), bn = tid % (BN / MM_VW) * MM_VW;
    const bool vec_a = K % MM_VW == 0, vec_b = N % MM_VW == 0; /* rows start on a vector boundary */
    const bool b_cols = vec_b && n0 + bn + MM_VW <= N;
    __global const T *pa = A + (ulong)(m0 + ar) * K + ak; /* advanced by BK per K step; read only where valid */
    __global const T *pb = B + (ulong)bk * N + n0 + bn;   /* advanced by BK rows per K step */
    const ulong b_step = (ulong)MM_BK * N;

    T ra[AV][MM_VW], rb[BV][MM_VW];
    T acc[2 * MM_VW][2 * MM_VW];
#pragma unroll
    for (int i = 0; i < 2 * MM_VW; i++)
#pragma unroll
        for (int j = 0; j < 2 * MM_VW; j++) acc[i][j] = 0;

    /* Step kt loads K step kt (global -> registers), multiplies step kt - 1 (in local buffer (kt - 1) & 1) while
     * those loads are in flight, then stores step kt to buffer kt & 1. One barrier per step: the buffer stored to
     * was last read in step kt - 1, before the previous barrier. */
    const uint ktiles = (K + MM_BK - 1) / MM_BK;
    for (uint kt = 0; kt <= ktiles; kt++) {
        const bool load = kt < ktiles;
        if (load) { /* zeros past the edges */
            const uint k0 = kt * MM_BK;
#pragma unroll
            for (int v = 0; v < AV; v++) {
                const uint r = m0 + ar + v * AROWS, k = k0 + ak;
                __global const T *p = pa + (ulong)v * AROWS * K;
                if (vec_a && r < M && k + MM_VW <= K) {
                    const VT x = *(__global const VT *)p;
                    UNPACK(ra[v], x);
                } else {
#pragma unroll
                    for (int c = 0; c < MM_VW; c++) ra[v][c] = r < M && k + c < K ? p[c] : 0;
                }
            }
#pragma unroll
            for (int v = 0; v < BV; v++) {
                const uint k = k0 + bk + v * BROWS, n = n0 + bn;
                __global const T *p = pb + (ulong)v * BROWS * N;
                if (b_cols && k < K) {
                    const VT x = *(__global const VT *)p;
                    UNPACK(rb[v], x);
                } else {
#pragma unroll
                    for (int c = 0; c < MM_VW; c++) rb[v][c] = k < K && n + c < N ? p[c] : 0;
                }
            }
            pa += MM_BK;
            pb += b_step;
        }
        if (kt > 0) {
            const int cur = (kt - 1) & 1;
#pragma unroll
            for (int k = 0; k < MM_BK; k++) {
                T a[2 * MM_VW], b[2 * MM_VW];
                const VT a0 = As[cur][k][ty], a1 = As[cur][k][MM_TY + ty], b0 = Bs[cur][k][tx], b1 = Bs[cur][k][MM_TX + tx];
                UNPACK(a, a0);
                UNPACK((a + MM_VW), a1);
                UNPACK(b, b0);
                UNPACK((b + MM_VW), b1);
#pragma unroll
                for (int i = 0; i < 2 * MM_VW; i++)
#pragma unroll
                    for (int j = 0; j < 2 * MM_VW; j++) acc[i][j] += a[i] * b[j];
            }
        }
        if (load) { /* A transposed (one scalar store per element), B as vectors */
            const int buf = kt & 1;
#pragma unroll
            for (int v = 0; v < AV; v++)
#pragma unroll
                for (int c = 0; c < MM_VW; c++) ((__local T *)As[buf][ak + c])[ar + v * AROWS] = ra[v][c];
#pragma unroll
            for (int v = 0; v < BV; v++) Bs[buf][bk + v * BROWS][bn / MM_VW] = PACK(rb[v]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* Micro-tile row i is tile row ty·VW + i (i < VW) or BM/2 + ty·VW + i - VW; columns likewise. */
#pragma unroll
    for (int i = 0; i < 2 * MM_VW; i++) {
        const uint row = m0 + (i < MM_VW ? ty * MM_VW + i : BM / 2 + ty * MM_VW + (i - MM_VW));
        if (row >= M) continue;
        __global T *crow = C + (ulong)row * N;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint col = n0 + h * (BN / 2) + tx * MM_VW;
            if (vec_b && col + MM_VW <= N) {
                *(__global VT *)(crow + col) = PACK((acc[i] + h * MM_VW));
            } else {
#pragma unroll
                for (int c = 0; c < MM_VW; c++)
                    if (col + c < N) crow[col + c] = acc[i][h * MM_VW + c];
            }
        }
    }
}
