/* convolve2d: scipy.signal.convolve2d, the same two kernels as convolve2d.cu with the same parameters (see the
 * design notes there and in docs/algorithms/convolve.md):
 *   convolve2d_tiled_*   shared/local-memory tiles, R x S outputs per work-item from registers (GPUs)
 *   convolve2d_direct_*  64 (f32) / 32 (f64) outputs per work-item straight from global memory, as 4 SIMD vectors
 *                        (CPU devices, and the fallback)
 *   convolve2d_sep_*     gpuws_convolve2d_separable's row pass and column pass (tiled on GPUs; _direct_ on CPU
 *                        devices, as convolve2d_direct_*)
 *   convolve2d_fixed_*_k<KW>  the tiled kernel for one kernel width, built with -DGPUWS_CONV2D_KW=<KW> (the program
 *                        then holds only these; the driver asks for them by that name with that option)
 * The tiled kernel is written once as a macro over the element type; loops over compile-time counts are
 * unrolled so the per-thread arrays stay in registers. */

#define BOUNDARY_FILL 0
#define BOUNDARY_WRAP 1
#define BOUNDARY_SYMM 2

/* The extended image's source index for row/column i, or -1 for the fill value (periodic wrap; mirror with
 * period 2n), also many periods away when the kernel is larger than the image. */
static inline int conv_extend(int i, int n, int boundary)
{
    if ((uint)i < (uint)n) return i;
    if (boundary == BOUNDARY_WRAP) {
        const int r = i % n;
        return r < 0 ? r + n : r;
    }
    if (boundary == BOUNDARY_SYMM) {
        int p = i % (2 * n);
        if (p < 0) p += 2 * n;
        return p < n ? p : 2 * n - 1 - p;
    }
    return -1;
}

/* GPUWS_CONV_NO_UNROLL (the knob convolve_no_unroll): no unroll pragmas (NVIDIA's OpenCL compiler has been seen to miscompile them). */
#ifdef GPUWS_CONV_NO_UNROLL
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif
#define R 8 /* outputs per work-item along a row */
#define C 8 /* kernel columns per chunk */

/* dst[q*VW .. q*VW+VW) = VW values at src + q*VW (16-byte aligned local memory) */
#define LOADV_4(dst, src, q)                                                                                    \
    {                                                                                                           \
        const float4 v_ = vload4(q, (src)); /* a local argument is only element-aligned */                    \
        dst[4 * (q)] = v_.s0, dst[4 * (q) + 1] = v_.s1, dst[4 * (q) + 2] = v_.s2, dst[4 * (q) + 3] = v_.s3;     \
    }
#define LOADV_2(dst, src, q)                                                                                    \
    {                                                                                                           \
        const double2 v_ = vload2(q, (src));                                                                    \
        dst[2 * (q)] = v_.s0, dst[2 * (q) + 1] = v_.s1;                                                         \
    }
#define LOAD_N(dst, src, n, VW)                                                                                 \
    UNROLL for (int q_ = 0; q_ < (n) / VW; q_++) LOADV_##VW(dst, src, q_)

/* The same from a pointer the compiler may take as 16-byte aligned (a __local V * argument, offsets multiples of
 * VW): one 16-byte local load per vector (see the fixed-width kernel below for why). */
#define LOADA_4(dst, src, q)                                                                                    \
    {                                                                                                           \
        const float4 v_ = ((__local const float4 *)(src))[q];                                                   \
        dst[4 * (q)] = v_.s0, dst[4 * (q) + 1] = v_.s1, dst[4 * (q) + 2] = v_.s2, dst[4 * (q) + 3] = v_.s3;     \
    }
#define LOADA_2(dst, src, q)                                                                                    \
    {                                                                                                           \
        const double2 v_ = ((__local const double2 *)(src))[q];                                                 \
        dst[2 * (q)] = v_.s0, dst[2 * (q) + 1] = v_.s1;                                                         \
    }
#define LOADA_N(dst, src, n, VW) UNROLL for (int q_ = 0; q_ < (n) / VW; q_++) LOADA_##VW(dst, src, q_)

/* K taps of one chunk for every output row s of the work-item (kernel row r - s). Missing taps of the kernel's
 * last chunk are skipped, not multiplied by 0, so Inf/NaN next to a footprint stay out of it (as in SciPy). */
#define CHUNK(T, S, VW, K)                                                                                      \
    UNROLL for (int s = 0; s < S; s++) {                                                                        \
        const int j = r - s;                                                                                    \
        if (j >= 0 && j < kbh) {                                                                                \
            T f[C];                                                                                             \
            LOAD_N(f, fbc + j * kbwp, C, VW);                                                                   \
            UNROLL for (int k = 0; k < (K); k++)                                                                \
                UNROLL for (int i = 0; i < R; i++) acc[s][i] = fma(f[k], in[i + k], acc[s][i]);                 \
        }                                                                                                       \
    }

/* A work-item's S x RF outputs from row m0 + y0, column n0 + x0: 16-byte stores when every row start is 16-byte
 * aligned, 8-byte when 8-byte aligned, else element by element. */
#define STORE_ROWS(T, V, VW, RF, S)                                                                             \
    const int n = n0 + x0;                                                                                      \
    UNROLL for (int s = 0; s < S; s++) {                                                                        \
        const int m = m0 + y0 + s;                                                                              \
        if (m < OH && n < OW) {                                                                                 \
            __global T *o = out + (size_t)m * OW + n;                                                           \
            if (n + RF <= OW && OW % VW == 0) {                                                                 \
                UNROLL for (int q = 0; q < RF / VW; q++) {                                                      \
                    V v;                                                                                        \
                    STOREV_##VW(v, acc[s], q);                                                                  \
                    *(__global V *)(o + q * VW) = v;                                                            \
                }                                                                                               \
            } else if (VW == 4 && n + RF <= OW && OW % 2 == 0) {                                                \
                UNROLL for (int q = 0; q < RF / 2; q++)                                                         \
                    *(__global T##2 *)(o + 2 * q) = (T##2)(acc[s][2 * q], acc[s][2 * q + 1]);                   \
            } else {                                                                                            \
                UNROLL for (int i = 0; i < RF; i++) if (n + i < OW) o[i] = acc[s][i];                           \
            }                                                                                                   \
        }                                                                                                       \
    }

/* S rows per work-item (odd: see the pitch rule in convolve2d.c), LX work-items across a warp, VW values per
 * 16-byte vector V. */
#define DEFINE_TILED(NAME, T, V, VW, S, LX)                                                                     \
    __kernel void convolve2d_tiled_##NAME(__global const T *img, __global const T *kern, __global T *out,       \
                                          ulong stride, int H, int W, int kh, int kw, int OH, int OW, int base_r,  \
                                          int base_c, int boundary, T fill, int wx, int kbh_max, int kbw_max,    \
                                          int pitch, int split, __local T *tile)                                 \
    {                                                                                                           \
        (void)split; /* the fixed kernel's (one argument list for both) */                                      \
        const int LY = 32 / LX;                                                                                 \
        const int nthreads = (int)get_local_size(0), nwarps = nthreads >> 5, wy = nwarps / wx;                       \
        const int TW = wx * LX * R, TH = wy * LY * S;                                                           \
        __local T *fb = tile + (TH + kbh_max - 1) * pitch;                                                      \
        const int tid = (int)get_local_id(0), lane = tid & 31, warp = tid >> 5;                                      \
        const int wxi = warp % wx, wyi = warp / wx;                                                             \
        const int x0 = (wxi * LX + lane % LX) * R, y0 = (wyi * LY + lane / LX) * S;                             \
        const int tiles_x = (OW + TW - 1) / TW;                                                                 \
        const int m0 = (int)(get_group_id(0) / tiles_x) * TH, n0 = (int)(get_group_id(0) % tiles_x) * TW;      \
        const bool active = m0 + wyi * LY * S < OH && n0 + wxi * LX * R < OW;                                   \
        T acc[S][R];                                                                                            \
        UNROLL for (int s = 0; s < S; s++) UNROLL for (int i = 0; i < R; i++) acc[s][i] = (T)0;                 \
        for (int j0 = 0; j0 < kh; j0 += kbh_max) {                                                              \
            const int kbh = min(kbh_max, kh - j0);                                                              \
            for (int k0 = 0; k0 < kw; k0 += kbw_max) {                                                          \
                const int kbw = min(kbw_max, kw - k0), kbwp = (kbw + C - 1) / C * C;                            \
                barrier(CLK_LOCAL_MEM_FENCE); /* unconditional: PoCL 5 aborts on a barrier under a branch */   \
                for (int i = tid; i < kbh * kbwp; i += nthreads) {                                              \
                    const int j = i / kbwp, k = i - j * kbwp;                                                   \
                    fb[i] = k < kbw ? kern[(size_t)(kh - 1 - j0 - j) * kw + (kw - 1 - k0 - k)] : (T)0;          \
                }                                                                                               \
                const int rows = TH + kbh - 1, cols = TW + kbwp;                                                \
                const int gr0 = m0 + base_r + j0, gc0 = n0 + base_c + k0;                                       \
                const bool cols_inside = gc0 >= 0 && gc0 + cols <= W;                                           \
                for (int u = warp; u < rows; u += nwarps) {                                                     \
                    __local T *dst = tile + u * pitch;                                                          \
                    const int gr = conv_extend(gr0 + u, H, boundary);                                           \
                    if (gr < 0) {                                                                               \
                        for (int v = lane; v < cols; v += 32) dst[v] = fill;                                    \
                    } else if (cols_inside) {                                                                   \
                        __global const T *src = img + (size_t)gr * stride + gc0;                                \
                        for (int v = lane; v < cols; v += 32) dst[v] = src[v];                                  \
                    } else {                                                                                    \
                        __global const T *src = img + (size_t)gr * stride;                                      \
                        for (int v = lane; v < cols; v += 32) {                                                 \
                            const int gc = conv_extend(gc0 + v, W, boundary);                                   \
                            dst[v] = gc < 0 ? fill : src[gc];                                                   \
                        }                                                                                       \
                    }                                                                                           \
                }                                                                                               \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                   \
                if (!active) continue;                                                                          \
                __local const T *trow = tile + y0 * pitch + x0;                                                 \
                for (int r = 0; r < S + kbh - 1; r++, trow += pitch) {                                          \
                    for (int c = 0; c < kbwp; c += C) {                                                         \
                        T in[R + C];                                                                            \
                        LOAD_N(in, trow + c, R + C, VW);                                                        \
                        __local const T *fbc = fb + c;                                                          \
                        switch (kbw - c) {                                                                      \
                        case 1: CHUNK(T, S, VW, 1) break;                                                       \
                        case 2: CHUNK(T, S, VW, 2) break;                                                       \
                        case 3: CHUNK(T, S, VW, 3) break;                                                       \
                        case 4: CHUNK(T, S, VW, 4) break;                                                       \
                        case 5: CHUNK(T, S, VW, 5) break;                                                       \
                        case 6: CHUNK(T, S, VW, 6) break;                                                       \
                        case 7: CHUNK(T, S, VW, 7) break;                                                       \
                        default: CHUNK(T, S, VW, 8) break;                                                      \
                        }                                                                                       \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
        if (!active) return;                                                                                    \
        STORE_ROWS(T, V, VW, R, S)                                                                              \
    }

#define STOREV_4(v, a, q) (v) = (float4)((a)[4 * (q)], (a)[4 * (q) + 1], (a)[4 * (q) + 2], (a)[4 * (q) + 3])
#define STOREV_2(v, a, q) (v) = (double2)((a)[2 * (q)], (a)[2 * (q) + 1])

/* The direct kernel: one work-item per 4 x DV consecutive outputs of a row (rows grid-strided), for CPU devices,
 * where DV outputs are one SIMD vector VT and the 4 vectors are 4 independent FMA chains (PoCL does not vectorise
 * a tap loop across work-items, and one chain would wait on the FMA latency). Kernel rows then columns, unflipped
 * (SciPy's order); each kernel row's image row is mapped by the boundary rule once (fill rows multiply the fill
 * value). A vector whose columns lie inside the image reads them with unaligned vector loads; one at the image's
 * left or right edge first gathers its extended columns (boundary rule per column) into a private row segment of
 * DV + EXT_TAPS - 1 values, EXT_TAPS kernel columns at a time, and reads that the same way. */
#define DIRECT_VECTORS 4
#define EXT_TAPS 32
#define DIRECT_INSIDE(n, DV) ((n) + (DV) <= OW && (n) + on - (kw - 1) >= 0 && (n) + on + (DV) <= W)

/* acc (VT) += kernel row j times the extended image row rr (-1: fill), for the DV outputs from column n */
#define DIRECT_ROW(acc, T, DV, n, inside)                                                                       \
    if (rr < 0) {                                                                                               \
        for (int k = 0; k < kw; k++) acc += hrow[k] * fill;                                                     \
    } else if (inside) {                                                                                        \
        __global const T *irow = img + (size_t)rr * stride + (n) + on;                                          \
        for (int k = 0; k < kw; k++) acc += hrow[k] * vload##DV(0, irow - k);                                   \
    } else {                                                                                                    \
        __global const T *irow = img + (size_t)rr * stride;                                                     \
        for (int k0 = 0; k0 < kw; k0 += EXT_TAPS) {                                                             \
            const int kc = min(EXT_TAPS, kw - k0), c0 = (n) + on - (k0 + kc - 1);                               \
            T ext[DV + EXT_TAPS];                                                                               \
            for (int v = 0; v < DV + kc - 1; v++) {                                                             \
                const int cc = conv_extend(c0 + v, W, boundary);                                                \
                ext[v] = cc < 0 ? fill : irow[cc];                                                              \
            }                                                                                                   \
            for (int k = k0; k < k0 + kc; k++) acc += hrow[k] * vload##DV(0, ext + (k0 + kc - 1 - k));          \
        }                                                                                                       \
    }

#define DEFINE_DIRECT(NAME, T, VT, DV)                                                                          \
    __kernel void convolve2d_direct_##NAME(__global const T *img, __global const T *kern, __global T *out,      \
                                           ulong stride, int H, int W, int kh, int kw, int OH, int OW, int om,   \
                                           int on, int boundary, T fill)                                         \
    {                                                                                                           \
        const int n0 = (int)get_global_id(0) * (DIRECT_VECTORS * DV);                                           \
        if (n0 >= OW) return;                                                                                   \
        /* a vector is inside when all its outputs exist and all the columns it reads lie in the image */       \
        bool all_inside = true;                                                                                 \
        for (int q = 0; q < DIRECT_VECTORS; q++) all_inside = all_inside && DIRECT_INSIDE(n0 + q * DV, DV);      \
        for (int m = (int)get_global_id(1); m < OH; m += (int)get_global_size(1)) {                             \
            __global T *o = out + (size_t)m * OW;                                                               \
            if (all_inside) {                                                                                   \
                VT a0 = (VT)0, a1 = (VT)0, a2 = (VT)0, a3 = (VT)0;                                              \
                for (int j = 0; j < kh; j++) {                                                                  \
                    const int rr = conv_extend(m + om - j, H, boundary);                                        \
                    __global const T *hrow = kern + (size_t)j * kw;                                             \
                    if (rr < 0) {                                                                               \
                        for (int k = 0; k < kw; k++) {                                                          \
                            const T c = hrow[k] * fill;                                                         \
                            a0 += c, a1 += c, a2 += c, a3 += c;                                                 \
                        }                                                                                       \
                    } else {                                                                                    \
                        __global const T *irow = img + (size_t)rr * stride + n0 + on;                           \
                        for (int k = 0; k < kw; k++) {                                                          \
                            const T h = hrow[k];                                                                \
                            a0 += h * vload##DV(0, irow - k);                                                   \
                            a1 += h * vload##DV(1, irow - k);                                                   \
                            a2 += h * vload##DV(2, irow - k);                                                   \
                            a3 += h * vload##DV(3, irow - k);                                                   \
                        }                                                                                       \
                    }                                                                                           \
                }                                                                                               \
                vstore##DV(a0, 0, o + n0), vstore##DV(a1, 1, o + n0), vstore##DV(a2, 2, o + n0),                \
                    vstore##DV(a3, 3, o + n0);                                                                  \
                continue;                                                                                       \
            }                                                                                                   \
            for (int q = 0; q < DIRECT_VECTORS && n0 + q * DV < OW; q++) {                                      \
                const int n = n0 + q * DV;                                                                      \
                VT acc = (VT)0;                                                                                 \
                for (int j = 0; j < kh; j++) {                                                                  \
                    const int rr = conv_extend(m + om - j, H, boundary);                                        \
                    __global const T *hrow = kern + (size_t)j * kw;                                             \
                    DIRECT_ROW(acc, T, DV, n, DIRECT_INSIDE(n, DV))                                             \
                }                                                                                               \
                if (n + DV <= OW) {                                                                             \
                    vstore##DV(acc, 0, o + n);                                                                  \
                } else {                                                                                        \
                    T lanes[DV];                                                                                \
                    vstore##DV(acc, 0, lanes);                                                                  \
                    for (int i = 0; n + i < OW; i++) o[n + i] = lanes[i];                                       \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }


/* ---- gpuws_convolve2d_separable's two passes (design: convolve2d.cu, sep_rows / sep_cols) ------------------------
 * Work-groups of 32 x 8. _sep_rows_: each row of 32 work-items one row of the extended image, a segment of 32 * VW
 * row sums; taps (flipped) and the segment staged in local memory per block of SEP_KB taps. _sep_cols_: 32
 * consecutive columns per row of work-items, SEP_RS output rows per work-item. Barriers are unconditional (PoCL 5
 * aborts on a barrier under a branch). Shapes: SEP_* of convolve2d_layout.h. */
#include "convolve2d_layout.h"

#define SEP_STAGE_TAPS(T, sh, v, k, kb0, kn)                                                                    \
    {                                                                                                           \
        const int padded_ = ((kn) + SEP_C - 1) / SEP_C * SEP_C;                                                 \
        for (int q_ = tid; q_ < padded_; q_ += 32 * SEP_WARPS)                                                  \
            (sh)[q_] = q_ < (kn) ? (v)[(k) - 1 - ((kb0) + q_)] : (T)0;                                          \
    }

/* the taps [q, q + kc) of a chunk (kc <= SEP_C) into NOUT accumulators from the window in[] */
#define SEP_FMAS(T, NOUT)                                                                                          \
    {                                                                                                           \
        const int kc = min(SEP_C, kn - q);                                                                      \
        UNROLL for (int k = 0; k < SEP_C; k++) {                                                                \
            if (k < kc) {                                                                                       \
                const T f = taps[q + k];                                                                        \
                UNROLL for (int i = 0; i < (NOUT); i++) acc[i] = fma(f, in[i + k], acc[i]);                     \
            }                                                                                                   \
        }                                                                                                       \
    }

/* x = element u of the segment of a row that crosses the image's edge (or a fill row: rr < 0) */
#define SEP_EDGE_VALUE(T, x, u)                                                                                 \
    T x = (T)0;                                                                                                 \
    if ((u) < have) {                                                                                           \
        const int gc_ = rr < 0 ? -1 : conv_extend(cbase + (u), W, boundary);                                    \
        x = gc_ < 0 ? fill : irow[gc_];                                                                         \
    }
/* A warp's segment of the extended-image row into xs. GPUs: plain loads in a loop of their own inside the image
 * (on NVIDIA's OpenCL a bounds test per element makes the workshop case markedly slower). CPU devices
 * (-DGPUWS_SEP_ONE_LOOP=1): one loop, since PoCL 5.0 fails an assertion compiling the two loops under an if/else
 * between these barriers. */
#ifdef GPUWS_SEP_ONE_LOOP
#define SEP_STAGE_ROW(T)                                                                                        \
    {                                                                                                           \
        const bool inside = rr >= 0 && cbase >= 0 && cbase + have <= W;                                         \
        for (int u = lane; u < xs_len; u += 32) {                                                               \
            T x = (T)0;                                                                                         \
            if (u < have) {                                                                                     \
                const int gc = inside ? cbase + u : rr < 0 ? -1 : conv_extend(cbase + u, W, boundary);          \
                x = gc < 0 ? fill : irow[gc];                                                                   \
            }                                                                                                   \
            xs[u] = x;                                                                                          \
        }                                                                                                       \
    }
#else
#define SEP_STAGE_ROW(T)                                                                                        \
    if (rr >= 0 && cbase >= 0 && cbase + have <= W) {                                                          \
        __global const T *src = irow + cbase;                                                                   \
        for (int u = lane; u < xs_len; u += 32) xs[u] = u < have ? src[u] : (T)0;                               \
    } else {                                                                                                    \
        for (int u = lane; u < xs_len; u += 32) {                                                               \
            SEP_EDGE_VALUE(T, x, u)                                                                             \
            xs[u] = x;                                                                                          \
        }                                                                                                       \
    }
#endif

#define DEFINE_SEP(NAME, T, VW)                                                                                 \
    __kernel void convolve2d_sep_rows_##NAME(__global const T *img, __global const T *row, __global T *tmp,     \
                                             ulong stride, int H, int W, int kw, int TR, int OW, int r0, int c0, \
                                             int boundary, T fill, int xs_len, __local T *smem)                  \
    {                                                                                                           \
        const int lane = (int)get_local_id(0), wy = (int)get_local_id(1), tid = wy * 32 + lane;                 \
        __local T *taps = smem, *xs = smem + SEP_KB + wy * xs_len;                                              \
        const int n0 = (int)get_group_id(0) * (32 * VW), nblocks = (kw + SEP_KB - 1) / SEP_KB;                  \
        if (nblocks == 1) SEP_STAGE_TAPS(T, taps, row, kw, 0, kw)                                               \
        for (int base = (int)get_group_id(1) * SEP_WARPS; base < TR; base += (int)get_num_groups(1) * SEP_WARPS) { \
            const int t = base + wy;                                                                            \
            const int rr = t < TR ? conv_extend(t + r0, H, boundary) : -1;                                      \
            __global const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;                                  \
            T acc[VW];                                                                                          \
            UNROLL for (int i = 0; i < VW; i++) acc[i] = (T)0;                                                  \
            for (int b = 0; b < nblocks; b++) {                                                                 \
                const int kb0 = b * SEP_KB, kn = min(SEP_KB, kw - kb0);                                         \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                   \
                if (nblocks > 1) SEP_STAGE_TAPS(T, taps, row, kw, kb0, kn)                                      \
                const int have = 32 * VW + kn - 1, cbase = n0 + c0 + kb0;                                       \
                SEP_STAGE_ROW(T)                                                                                \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                   \
                __local const T *win = xs + lane * VW;                                                          \
                for (int q = 0; q < kn; q += SEP_C) {                                                           \
                    T in[VW + SEP_C];                                                                           \
                    LOAD_N(in, win + q, VW + SEP_C, VW);                                                        \
                    SEP_FMAS(T, VW)                                                                                \
                }                                                                                               \
            }                                                                                                   \
            const int n = n0 + lane * VW;                                                                       \
            if (t < TR && n < OW) {                                                                             \
                __global T *o = tmp + (size_t)t * OW + n;                                                       \
                UNROLL for (int i = 0; i < VW; i++) if (n + i < OW) o[i] = acc[i];                              \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    __kernel void convolve2d_sep_cols_##NAME(__global const T *tmp, __global const T *col, __global T *out,     \
                                             int OH, int OW, int kh, __local T *taps)                            \
    {                                                                                                           \
        const int lane = (int)get_local_id(0), wy = (int)get_local_id(1), tid = wy * 32 + lane;                 \
        const int n = (int)get_group_id(0) * 32 + lane, TR = OH + kh - 1, nblocks = (kh + SEP_KB - 1) / SEP_KB; \
        const int nc = n < OW ? n : OW - 1; /* work-items past the last column load a valid one, store nothing */ \
        if (nblocks == 1) SEP_STAGE_TAPS(T, taps, col, kh, 0, kh)                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
        for (int base = (int)get_group_id(1) * SEP_WARPS * SEP_RS; base < OH;                                   \
             base += (int)get_num_groups(1) * SEP_WARPS * SEP_RS) {                                             \
            const int m0 = base + wy * SEP_RS;                                                                  \
            T acc[SEP_RS];                                                                                      \
            UNROLL for (int i = 0; i < SEP_RS; i++) acc[i] = (T)0;                                              \
            for (int b = 0; b < nblocks; b++) {                                                                 \
                const int kb0 = b * SEP_KB, kn = min(SEP_KB, kh - kb0);                                         \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                   \
                if (nblocks > 1) SEP_STAGE_TAPS(T, taps, col, kh, kb0, kn)                                      \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                   \
                /* a sliding window of row sums, as in convolve2d.cu's sep_cols */                              \
                const int r0 = m0 + kb0; /* inside: as in convolve2d.cu, kn rounded up to whole chunks */      \
                const bool inside = r0 + (kn + SEP_C - 1) / SEP_C * SEP_C + SEP_RS - 1 <= TR;                   \
                __global const T *pn = tmp + (size_t)r0 * OW + nc;                                              \
                T in[SEP_RS + SEP_C - 1];                                                                       \
                UNROLL for (int i = 0; i < SEP_RS - 1; i++, pn += OW) in[i] = inside || r0 + i < TR ? *pn : (T)0; \
                for (int q = 0; q < kn; q += SEP_C) {                                                           \
                    UNROLL for (int i = 0; i < SEP_C; i++, pn += OW)                                            \
                        in[SEP_RS - 1 + i] = inside || r0 + q + SEP_RS - 1 + i < TR ? *pn : (T)0;               \
                    SEP_FMAS(T, SEP_RS)                                                                         \
                    UNROLL for (int i = 0; i < SEP_RS - 1; i++) in[i] = in[i + SEP_C];                          \
                }                                                                                               \
            }                                                                                                   \
            if (n < OW) {                                                                                       \
                UNROLL for (int i = 0; i < SEP_RS; i++) if (m0 + i < OH) out[(size_t)(m0 + i) * OW + n] = acc[i]; \
            }                                                                                                   \
        }                                                                                                       \
    }


/* The direct pair (CPU devices; the knob convolve_path=direct): DIRECT_VECTORS SIMD vectors of DV outputs per
 * work-item straight from global memory, rows grid-strided, the same sums as the tiled pair (taps in order). */
#define DEFINE_SEP_DIRECT(NAME, T, VT, DV)                                                                      \
    __kernel void convolve2d_sep_rows_direct_##NAME(__global const T *img, __global const T *row,               \
                                                    __global T *tmp, ulong stride, int H, int W, int kw, int TR,  \
                                                    int OW, int r0, int c0, int boundary, T fill)               \
    {                                                                                                           \
        const int n0 = (int)get_global_id(0) * (DIRECT_VECTORS * DV), hi = n0 + c0 + kw - 1;                   \
        if (n0 >= OW) return;                                                                                   \
        const bool cols_inside = n0 + DIRECT_VECTORS * DV <= OW && n0 + c0 >= 0 && hi + DIRECT_VECTORS * DV <= W; \
        for (int t = (int)get_global_id(1); t < TR; t += (int)get_global_size(1)) {                             \
            const int rr = conv_extend(t + r0, H, boundary);                                                    \
            __global T *o = tmp + (size_t)t * OW;                                                               \
            if (rr >= 0 && cols_inside) {                                                                       \
                __global const T *x = img + (size_t)rr * stride + hi;                                           \
                VT a0 = (VT)0, a1 = (VT)0, a2 = (VT)0, a3 = (VT)0;                                              \
                for (int k = 0; k < kw; k++) {                                                                  \
                    const T h = row[k];                                                                         \
                    a0 += h * vload##DV(0, x - k), a1 += h * vload##DV(1, x - k);                               \
                    a2 += h * vload##DV(2, x - k), a3 += h * vload##DV(3, x - k);                               \
                }                                                                                               \
                vstore##DV(a0, 0, o + n0), vstore##DV(a1, 1, o + n0), vstore##DV(a2, 2, o + n0),                \
                    vstore##DV(a3, 3, o + n0);                                                                  \
                continue;                                                                                       \
            }                                                                                                   \
            __global const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;                                  \
            for (int n = n0; n < n0 + DIRECT_VECTORS * DV && n < OW; n++) {                                     \
                T acc = (T)0;                                                                                   \
                for (int k = 0; k < kw; k++) {                                                                  \
                    const int gc = rr < 0 ? -1 : conv_extend(n + c0 + kw - 1 - k, W, boundary);                \
                    acc += row[k] * (gc < 0 ? fill : irow[gc]);                                                 \
                }                                                                                               \
                o[n] = acc;                                                                                     \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    __kernel void convolve2d_sep_cols_direct_##NAME(__global const T *tmp, __global const T *col,               \
                                                    __global T *out, int OH, int OW, int kh)                    \
    {                                                                                                           \
        const int n0 = (int)get_global_id(0) * (DIRECT_VECTORS * DV);                                           \
        if (n0 >= OW) return;                                                                                   \
        for (int m = (int)get_global_id(1); m < OH; m += (int)get_global_size(1)) {                             \
            __global const T *src = tmp + (size_t)m * OW + n0;                                                  \
            __global T *o = out + (size_t)m * OW;                                                               \
            if (n0 + DIRECT_VECTORS * DV <= OW) {                                                               \
                VT a0 = (VT)0, a1 = (VT)0, a2 = (VT)0, a3 = (VT)0;                                              \
                for (int q = 0; q < kh; q++) {                                                                  \
                    const T h = col[kh - 1 - q];                                                                \
                    __global const T *p = src + (size_t)q * OW;                                                 \
                    a0 += h * vload##DV(0, p), a1 += h * vload##DV(1, p);                                       \
                    a2 += h * vload##DV(2, p), a3 += h * vload##DV(3, p);                                       \
                }                                                                                               \
                vstore##DV(a0, 0, o + n0), vstore##DV(a1, 1, o + n0), vstore##DV(a2, 2, o + n0),                \
                    vstore##DV(a3, 3, o + n0);                                                                  \
                continue;                                                                                       \
            }                                                                                                   \
            for (int n = n0; n < OW; n++) {                                                                     \
                T acc = (T)0;                                                                                   \
                for (int q = 0; q < kh; q++) acc += col[kh - 1 - q] * src[(size_t)q * OW + (n - n0)];           \
                o[n] = acc;                                                                                     \
            }                                                                                                   \
        }                                                                                                       \
    }


/* Both passes in one kernel for factors of up to 16 taps (design: convolve2d.cu, sep_fused): tiles of SEP_FTH output
 * rows x 32 * VW columns; the row sums of the tile's SEP_FTH + kh - 1 rows in local memory (rs), then the column
 * sums from there. Every loop that holds a barrier runs the same number of times in every work-item. */
/* acc[0 .. VW) = the row sums of a work-item's VW outputs from its window of the staged row xs, taps tr[] */
#define SEP_WINDOW_SUMS(T, VW)                                                                                  \
    T in[VW + SEP_FTAPS], acc[VW];                                                                              \
    LOADA_N(in, xs + lane * VW, VW + SEP_FTAPS, VW);                                                            \
    UNROLL for (int i = 0; i < VW; i++) acc[i] = (T)0;                                                          \
    UNROLL for (int k = 0; k < SEP_FTAPS; k++) {                                                                \
        if (k < kw) {                                                                                           \
            UNROLL for (int i = 0; i < VW; i++) acc[i] = fma(tr[k], in[i + k], acc[i]);                         \
        }                                                                                                       \
    }

/* The fused kernel's phase 1: the row sums of the tile's rows into rs, each warp every SEP_WARPS-th row. NVIDIA's
 * OpenCL (-DGPUWS_NV_PTX=1): a warp's 32 work-items (get_local_id(0) is the lane) synchronize alone with PTX's
 * bar.warp.sync, as CUDA's __syncwarp, and go at their own pace; elsewhere every row round has two work-group
 * barriers. */
#ifdef GPUWS_NV_PTX
#define SEP_WARP_SYNC() asm volatile("bar.warp.sync -1;" ::: "memory")
/* A warp's rows per tile, and each lane's values of a row's staged segment (xs_len <= 32 * VW + 24: the driver). */
#define SEP_FPR ((SEP_FTH + SEP_FTAPS - 1 + SEP_WARPS - 1) / SEP_WARPS)
#define SEP_FE(VW) ((32 * (VW) + 24 + 31) / 32)
/* v[e] = element lane + 32 e of the warp's segment of extended-image row rr (as SEP_STAGE_ROW), all loads issued
 * before any is used */
#define SEP_FETCH_ROW(T, v, VW)                                                                                 \
    if (rr >= 0 && cbase >= 0 && cbase + have <= W) {                                                          \
        __global const T *src = irow + cbase;                                                                   \
        UNROLL for (int e = 0; e < SEP_FE(VW); e++) v[e] = lane + 32 * e < have ? src[lane + 32 * e] : (T)0;    \
    } else {                                                                                                    \
        UNROLL for (int e = 0; e < SEP_FE(VW); e++) {                                                           \
            SEP_EDGE_VALUE(T, x, lane + 32 * e)                                                                 \
            v[e] = x;                                                                                           \
        }                                                                                                       \
    }
/* Each warp's rows t = wy + 8 j go through registers, SEP_FPD of them loading at any time (row j + SEP_FPD's loads
 * are issued once row j is in xs), then each is staged in xs and its windows summed (as CUDA's sep_fused). */
#define SEP_FPD 3
#define SEP_FETCH_J(T, VW, slot, j)                                                                             \
    {                                                                                                           \
        const int tj_ = wy + SEP_WARPS * (j);                                                                   \
        if (tj_ < rows) {                                                                                       \
            const int rr = conv_extend(m0 + tj_ + r0, H, boundary);                                             \
            __global const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;                                 \
            SEP_FETCH_ROW(T, pf[slot], VW)                                                                      \
        }                                                                                                       \
    }
#define SEP_FUSED_ROW_SUMS(T, VT, VW)                                                                           \
    T pf[SEP_FPD][SEP_FE(VW)];                                                                                  \
    UNROLL for (int j = 0; j < SEP_FPD; j++) SEP_FETCH_J(T, VW, j, j)                                           \
    UNROLL for (int j = 0; j < SEP_FPR; j++) {                                                                  \
        const int t = wy + SEP_WARPS * j;                                                                       \
        if (t < rows) {                                                                                         \
            UNROLL for (int e = 0; e < SEP_FE(VW); e++)                                                         \
                if (lane + 32 * e < xs_len) xs[lane + 32 * e] = pf[j % SEP_FPD][e];                             \
            if (j + SEP_FPD < SEP_FPR) SEP_FETCH_J(T, VW, j % SEP_FPD, j + SEP_FPD)                              \
            SEP_WARP_SYNC();                                                                                    \
            SEP_WINDOW_SUMS(T, VW)                                                                              \
            VT v_;                                                                                              \
            STOREV_##VW(v_, acc, 0);                                                                            \
            *(__local VT *)(rs + t * TW + lane * VW) = v_;                                                      \
            SEP_WARP_SYNC();                                                                                    \
        }                                                                                                       \
    }
#else
#define SEP_FUSED_ROW_SUMS(T, VT, VW)                                                                           \
    for (int t0 = 0; t0 < rows; t0 += SEP_WARPS) {                                                          \
        const int t = t0 + wy;                                                                              \
        const int rr = conv_extend(m0 + t + r0, H, boundary);                                               \
        __global const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;                                  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
        SEP_STAGE_ROW(T)                                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
        SEP_WINDOW_SUMS(T, VW)                                                                              \
        if (t < rows) {                                                                                     \
            VT v_;                                                                                          \
            STOREV_##VW(v_, acc, 0);                                                                        \
            *(__local VT *)(rs + t * TW + lane * VW) = v_;                                                  \
        }                                                                                                   \
    }
#endif

#define DEFINE_SEP_FUSED(NAME, T, VT, VW)                                                                       \
    __kernel void convolve2d_sep_fused_##NAME(__global const T *img, __global const T *col,                     \
                                              __global const T *row, __global T *out, ulong stride, int H,       \
                                              int W, int kh, int kw, int OH, int OW, int r0, int c0,             \
                                              int boundary, T fill, int xs_len, __local VT *smemv)               \
    {                                                                                                           \
        const int RS = SEP_FTH / SEP_WARPS, TW = 32 * VW;                                                       \
        const int lane = (int)get_local_id(0), wy = (int)get_local_id(1);                                       \
        __local T *smem = (__local T *)smemv; /* 16-byte aligned: LOADA_N's vector loads */                      \
        __local T *rs = smem, *xs = smem + (SEP_FTH + SEP_FTAPS) * TW + wy * xs_len;                            \
        const int n0 = (int)get_group_id(0) * TW, ntiles = (OH + SEP_FTH - 1) / SEP_FTH;                        \
        T tr[SEP_FTAPS], tc[SEP_FTAPS];                                                                         \
        UNROLL for (int q = 0; q < SEP_FTAPS; q++) {                                                            \
            tr[q] = q < kw ? row[kw - 1 - q] : (T)0;                                                            \
            tc[q] = q < kh ? col[kh - 1 - q] : (T)0;                                                            \
        }                                                                                                       \
        const int rows = SEP_FTH + kh - 1, have = TW + kw - 1, cbase = n0 + c0;                                 \
        for (int tile = (int)get_group_id(1); tile < ntiles; tile += (int)get_num_groups(1)) {                  \
            const int m0 = tile * SEP_FTH;                                                                      \
            SEP_FUSED_ROW_SUMS(T, VT, VW)                                                                       \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
            T acc2[RS * VW];                                                                                    \
            UNROLL for (int i = 0; i < RS * VW; i++) acc2[i] = (T)0;                                            \
            __local const T *base = rs + wy * RS * TW + lane * VW;                                              \
            UNROLL for (int r = 0; r < RS + SEP_FTAPS - 1; r++) {                                               \
                if (r < RS + kh - 1) {                                                                          \
                    T x[VW];                                                                                    \
                    LOADA_N(x, base + r * TW, VW, VW);                                                          \
                    UNROLL for (int s = 0; s < RS; s++) {                                                       \
                        const int q = r - s;                                                                    \
                        if (q >= 0 && q < SEP_FTAPS && q < kh) {                                                \
                            UNROLL for (int v = 0; v < VW; v++)                                                 \
                                acc2[s * VW + v] = fma(tc[q < 0 ? 0 : q], x[v], acc2[s * VW + v]);             \
                        }                                                                                       \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
            const int n = n0 + lane * VW;                                                                       \
            UNROLL for (int s = 0; s < RS; s++) {                                                               \
                const int m = m0 + wy * RS + s;                                                                 \
                if (m < OH) {                                                                                   \
                    UNROLL for (int v = 0; v < VW; v++) if (n + v < OW) out[(size_t)m * OW + n + v] = acc2[s * VW + v]; \
                }                                                                                               \
            }                                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE); /* rs is rewritten by the next tile */                                \
        }                                                                                                       \
    }

/* The separable pair is a program of its own (built with -DGPUWS_CONV2D_SEP=1), so that a compiler that cannot
 * build it (PoCL 5.0 aborted on one version) leaves the 2-D kernels alone. */
#if defined(GPUWS_CONV2D_SEP)
DEFINE_SEP(f32, float, 4)
DEFINE_SEP_FUSED(f32, float, float4, 4)
DEFINE_SEP_DIRECT(f32, float, float16, 16)
#ifdef GPUWS_FP64
DEFINE_SEP(f64, double, 2)
DEFINE_SEP_FUSED(f64, double, double2, 2)
DEFINE_SEP_DIRECT(f64, double, double8, 8)
#endif
#elif !defined(GPUWS_CONV2D_KW)
DEFINE_TILED(f32, float, float4, 4, 5, 4)
DEFINE_DIRECT(f32, float, float16, 16)
#ifdef GPUWS_FP64
DEFINE_TILED(f64, double, double2, 2, 3, 2)
DEFINE_DIRECT(f64, double, double8, 8)
#endif
#endif

/* ---- the fixed-width tiled kernel (design: convolve2d.cu, fixed<T, KW>) ------------------------------------------
 * The kernel width KW is a build option, so the tap loops unroll completely with constant register indices: per
 * staged input row a work-item loads its window of R + KW - 1 values once, then for each of its S output rows whose
 * kernel row exists streams that row (one local 16-byte load per VW taps) into KW x R FMAs. Taps past KW are not in
 * the code (no 0 x Inf). The tile is staged rows by warps, columns by lanes, STAGE_ROWS rows loaded before their
 * stores so that several loads are in flight. */
#ifdef GPUWS_CONV2D_KW
#define KW GPUWS_CONV2D_KW
#define ROUND_UP(x, m) (((x) + (m) - 1) / (m) * (m))
#define FIXED_NAME_(NAME, K) convolve2d_fixed_##NAME##_k##K
#define FIXED_NAME(NAME, K) FIXED_NAME_(NAME, K)
#define STAGE_ROWS 4

/* 16-byte local loads for the hot loop (LOADA_N): the tile parameter is a __local V *, so the compiler knows the
 * local buffer's 16-byte alignment (the window and filter offsets are multiples of VW by the layout, as the CUDA
 * kernel's vector loads assume). Through vloadN from a __local T * NVIDIA's compiler splits them into 8-byte loads
 * (no LDS.128 where CUDA issues them), which makes the kernel markedly slower than CUDA's. */

/* A tile inside the image: rows by warps (STAGE_ROWS rows loaded before their stores), columns by lanes in
 * vectors of N elements, aligned by construction (the driver's copy width), no boundary arithmetic. */
#define STAGE_INSIDE(T, N)                                                                                      \
    for (int u0 = warp; u0 < rows; u0 += STAGE_ROWS * nwarps) {                                                 \
        for (int v = lane * N; v < cols; v += 32 * N) {                                                         \
            T##N x[STAGE_ROWS];                                                                                 \
            UNROLL for (int b = 0; b < STAGE_ROWS; b++)                                                         \
                x[b] = u0 + b * nwarps < rows ? *(__global const T##N *)(src + (size_t)(u0 + b * nwarps) * stride + v) \
                                              : (T##N)0;                                                        \
            UNROLL for (int b = 0; b < STAGE_ROWS; b++)                                                         \
                if (u0 + b * nwarps < rows) vstore##N(x[b], 0, tile + (u0 + b * nwarps) * pitch + v);           \
        }                                                                                                       \
    }

/* One staged input row r: the work-item's window, then each output row s whose kernel row r - s exists (ALL: every
 * one does, and the tests are not in the code) into KW x RF FMAs. */
#define FIXED_ROW(T, VW, RF, S, ALL)                                                                            \
    {                                                                                                           \
        T in[ROUND_UP(RF + KW - 1, VW)];                                                                        \
        LOADA_N(in, trow, ROUND_UP(RF + KW - 1, VW), VW);                                                       \
        UNROLL for (int s = 0; s < S; s++) {                                                                    \
            if (ALL || (uint)(r - s) < (uint)kh) {                                                              \
                UNROLL for (int q = 0; q < ROUND_UP(KW, VW) / VW; q++) {                                        \
                    T f[VW];                                                                                    \
                    LOADA_##VW(f, frow - s * KWP + q * VW, 0);                                                  \
                    UNROLL for (int w = 0; w < VW; w++)                                                         \
                        if (q * VW + w < KW)                                                                    \
                            UNROLL for (int i = 0; i < RF; i++)                                                 \
                                acc[s][i] = fma(f[w], in[i + q * VW + w], acc[s][i]);                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

/* The compute of a tile of S rows per work-item, once the tile is staged: a block of the kernel below. Input rows
 * S - 1 .. kh - 1 feed all S output rows: their loop has no row tests (one basic block to schedule; as the CUDA
 * kernel's fixed_row). */
#define FIXED_COMPUTE(T, V, VW, RF, S, LX)                                                                      \
    {                                                                                                           \
        const int y0 = (wyi * LY + lane / LX) * S;                                                              \
        if (m0 + wyi * LY * S >= OH || n0 + wxi * LX * RF >= OW) return;                                        \
        T acc[S][RF];                                                                                           \
        UNROLL for (int s = 0; s < S; s++) UNROLL for (int i = 0; i < RF; i++) acc[s][i] = (T)0;                \
        __local const T *trow = tile + y0 * pitch + x0, *frow = fb;                                             \
        int r = 0;                                                                                              \
        for (; r < S - 1; r++, trow += pitch, frow += KWP) FIXED_ROW(T, VW, RF, S, 0)                           \
        for (; r < kh; r++, trow += pitch, frow += KWP) FIXED_ROW(T, VW, RF, S, 1)                              \
        for (; r < S + kh - 1; r++, trow += pitch, frow += KWP) FIXED_ROW(T, VW, RF, S, 0)                      \
        STORE_ROWS(T, V, VW, RF, S)                                                                             \
    }

/* Whole tiles (S rows per work-item) for output rows [0, split), thin ones (SUB_S rows) below: the grid's first
 * work-groups fill the resident slots a whole number of times, the thin tiles spread the rest over every slot (see
 * convolve2d.cu, FixedShape). The staging takes the tile's height at run time and the barrier is outside the
 * branch: PoCL 3.1 miscompiled the kernel with a whole tile (staging, barrier, compute) in each branch of a
 * work-group-uniform if (wrong sums in a few work-items). */
#define DEFINE_FIXED(NAME, T, V, VW, RF, S, SUB_S, LX)                                                          \
    __kernel void FIXED_NAME(NAME, KW)(__global const T *img, __global const T *kern, __global T *out,          \
                                       ulong stride, int H, int W, int kh, int kw, int OH, int OW, int base_r,     \
                                       int base_c, int boundary, T fill, int wx, int kbh_max, int kbw_max,       \
                                       int pitch, int split, __local V *tilev)                                   \
    {                                                                                                           \
        (void)kw, (void)kbh_max;                                                                                \
        const int vec = kbw_max; /* the copy width for tiles inside the image (convolve2d.c) */                 \
        __local T *tile = (__local T *)tilev;                                                                   \
        const int LY = 32 / LX, KWP = ROUND_UP(KW, VW), COLS = ROUND_UP(KW, 8);                                 \
        const int nthreads = (int)get_local_size(0), nwarps = nthreads >> 5, wy = nwarps / wx;                  \
        const int TW = wx * LX * RF, tiles_x = (OW + TW - 1) / TW, g = (int)get_group_id(0);                    \
        const int main_groups = split / (wy * LY * S) * tiles_x;                                                \
        const bool whole = g < main_groups;                                                                     \
        const int TH = wy * LY * (whole ? S : SUB_S);                                                           \
        const int m0 = whole ? g / tiles_x * TH : split + (g - main_groups) / tiles_x * TH;                     \
        const int n0 = (whole ? g : g - main_groups) % tiles_x * TW;                                            \
        __local T *fb = tile + (TH + kh - 1) * pitch;                                                           \
        const int tid = (int)get_local_id(0), lane = tid & 31, warp = tid >> 5;                                 \
        const int wxi = warp % wx, wyi = warp / wx;                                                             \
        const int x0 = (wxi * LX + lane % LX) * RF;                                                             \
        for (int i = tid; i < kh * KWP; i += nthreads) {                                                        \
            const int j = i / KWP, k = i - j * KWP;                                                             \
            fb[i] = k < KW ? kern[(size_t)(kh - 1 - j) * KW + (KW - 1 - k)] : (T)0;                             \
        }                                                                                                       \
        const int rows = TH + kh - 1, cols = TW + COLS, gr0 = m0 + base_r, gc0 = n0 + base_c;                  \
        const bool cols_inside = gc0 >= 0 && gc0 + cols <= W;                                                   \
        if (vec > 1 && cols_inside && gr0 >= 0 && gr0 + rows <= H) {                                            \
            __global const T *src = img + (size_t)gr0 * stride + gc0;                                           \
            if (VW == 4 && vec == 4) {                                                                          \
                STAGE_INSIDE(T, 4)                                                                              \
            } else {                                                                                            \
                STAGE_INSIDE(T, 2)                                                                              \
            }                                                                                                   \
        } else                                                                                                  \
        for (int u0 = warp; u0 < rows; u0 += STAGE_ROWS * nwarps) {                                             \
            int gr[STAGE_ROWS];                                                                                 \
            UNROLL for (int b = 0; b < STAGE_ROWS; b++) gr[b] = conv_extend(gr0 + u0 + b * nwarps, H, boundary); \
            for (int v = lane; v < cols; v += 32) {                                                             \
                const int gc = cols_inside ? gc0 + v : conv_extend(gc0 + v, W, boundary);                       \
                T x[STAGE_ROWS];                                                                                \
                UNROLL for (int b = 0; b < STAGE_ROWS; b++)                                                     \
                    x[b] = u0 + b * nwarps >= rows || gr[b] < 0 || gc < 0 ? fill : img[(size_t)gr[b] * stride + gc]; \
                UNROLL for (int b = 0; b < STAGE_ROWS; b++)                                                     \
                    if (u0 + b * nwarps < rows) tile[(u0 + b * nwarps) * pitch + v] = x[b];                     \
            }                                                                                                   \
        }                                                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
        if (whole) FIXED_COMPUTE(T, V, VW, RF, S, LX)                                                           \
        else FIXED_COMPUTE(T, V, VW, RF, SUB_S, LX)                                                             \
    }

DEFINE_FIXED(f32, float, float4, 4, 8, 5, 1, 4)
#ifdef GPUWS_FP64
DEFINE_FIXED(f64, double, double2, 2, 4, 5, 1, 4)
#endif
#endif
