/* convolve1d: numpy.convolve, the same two kernels as convolve1d.cu with the same parameters (design notes there):
 *   convolve1d_tiled_*   signal segment and flipped filter block in local memory, R outputs per work-item (GPUs)
 *   convolve1d_direct_*  4 SIMD vectors of outputs per work-item from global memory (CPU devices)
 * out[t] = sum_j filt[ms-1-j] * sig[t + base + j], zero outside sig (sig is the longer input). */

/* GPUWS_CONV_NO_UNROLL: no unroll pragmas (NVIDIA's OpenCL compiler has been seen to miscompile them). */
#ifdef GPUWS_CONV_NO_UNROLL
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif
#define C 8 /* filter taps per chunk */

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
#define LOAD_N(dst, src, n, VW) UNROLL for (int q_ = 0; q_ < (n) / VW; q_++) LOADV_##VW(dst, src, q_)

/* K taps of one chunk; the filter's last chunk skips its missing taps rather than multiplying them by 0. */
#define CHUNK(T, R, VW, K)                                                                                      \
    {                                                                                                           \
        T g[C];                                                                                                 \
        LOAD_N(g, fb + c, C, VW);                                                                               \
        UNROLL for (int k = 0; k < (K); k++) UNROLL for (int i = 0; i < R; i++) acc[i] = fma(g[k], in[i + k], acc[i]); \
    }

/* R outputs per work-item (4 floats or 2 doubles: one 16-byte vector V of VW values). */
#define DEFINE_TILED(NAME, T, V, VW, R)                                                                         \
    __kernel void convolve1d_tiled_##NAME(__global const T *sig, __global const T *filt, __global T *out, ulong n, \
                                          ulong ms, long base, ulong out_n, int kb_max, __local T *tile)         \
    {                                                                                                           \
        const int nthreads = (int)get_local_size(0), tid = (int)get_local_id(0), TT = nthreads * R;             \
        __local T *fb = tile + TT + kb_max;                                                                     \
        const ulong t0 = (ulong)get_group_id(0) * (ulong)TT;                                                    \
        const int x0 = tid * R;                                                                                 \
        T acc[R];                                                                                               \
        UNROLL for (int i = 0; i < R; i++) acc[i] = (T)0;                                                       \
        const int nkb = (int)((ms + (ulong)kb_max - 1) / (ulong)kb_max);                                        \
        for (int b = 0; b < nkb; b++) {                                                                         \
            const ulong j0 = (ulong)b * (ulong)kb_max;                                                          \
            const int kb = (int)min((ulong)kb_max, ms - j0), kbp = (kb + C - 1) / C * C;                        \
            barrier(CLK_LOCAL_MEM_FENCE); /* unconditional: PoCL 5 aborts on a barrier under a branch */       \
            for (int j = tid; j < kbp; j += nthreads) fb[j] = j < kb ? filt[ms - 1 - j0 - (ulong)j] : (T)0;     \
            /* One staging loop, the bounds test inside it: an if/else of two loops between the barriers made  \
             * PoCL 5's parallel-region formation abort (pocl/pocl#1435, #2281); the 2-D kernel stages rows in \
             * a loop around its if/else and builds. */                                                        \
            const long g0 = (long)t0 + base + (long)j0;                                                         \
            const int len = TT + kbp;                                                                           \
            for (int v = tid; v < len; v += nthreads) {                                                         \
                const long g = g0 + v;                                                                          \
                tile[v] = g >= 0 && g < (long)n ? sig[g] : (T)0;                                                \
            }                                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
            for (int c = 0; c < kbp; c += C) {                                                                  \
                T in[R + C];                                                                                    \
                LOAD_N(in, tile + x0 + c, R + C, VW);                                                           \
                switch (kb - c) {                                                                               \
                case 1: CHUNK(T, R, VW, 1) break;                                                               \
                case 2: CHUNK(T, R, VW, 2) break;                                                               \
                case 3: CHUNK(T, R, VW, 3) break;                                                               \
                case 4: CHUNK(T, R, VW, 4) break;                                                               \
                case 5: CHUNK(T, R, VW, 5) break;                                                               \
                case 6: CHUNK(T, R, VW, 6) break;                                                               \
                case 7: CHUNK(T, R, VW, 7) break;                                                               \
                default: CHUNK(T, R, VW, 8) break;                                                              \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
        const ulong t = t0 + (ulong)x0;                                                                         \
        if (t + R <= out_n) {                                                                                   \
            *(__global V *)(out + t) = STOREV_##VW(acc);                                                        \
        } else {                                                                                                \
            UNROLL for (int i = 0; i < R; i++) if (t + i < out_n) out[t + i] = acc[i];                          \
        }                                                                                                       \
    }

#define STOREV_4(a) (float4)((a)[0], (a)[1], (a)[2], (a)[3])
#define STOREV_2(a) (double2)((a)[0], (a)[1])

/* The direct kernel: one work-item per 4 x DV consecutive outputs, for CPU devices, where DV outputs are one SIMD
 * vector VT and the 4 vectors 4 independent FMA chains (PoCL does not vectorise a tap loop across work-items). Away
 * from the signal's ends, unaligned vector loads; near them, output by output over the taps that meet the signal. */
#define DEFINE_DIRECT(NAME, T, VT, DV)                                                                          \
    __kernel void convolve1d_direct_##NAME(__global const T *sig, __global const T *filt, __global T *out,      \
                                           ulong n, ulong ms, long base, ulong out_n)                            \
    {                                                                                                           \
        const ulong stride = get_global_size(0) * 4 * DV;                                                       \
        __global const T *f = filt + ms - 1; /* flipped tap j is f[-j] */                                       \
        for (ulong t0 = get_global_id(0) * 4 * DV; t0 < out_n; t0 += stride) {                                  \
            const long lo = (long)t0 + base; /* signal index met by flipped tap 0 of output t0 */               \
            if (t0 + 4 * DV <= out_n && lo >= 0 && lo + 4 * DV + (long)ms - 1 <= (long)n) {                     \
                VT a0 = (VT)0, a1 = (VT)0, a2 = (VT)0, a3 = (VT)0;                                              \
                __global const T *s = sig + lo;                                                                 \
                for (ulong j = 0; j < ms; j++) {                                                                \
                    const T h = f[-(long)j];                                                                    \
                    a0 += h * vload##DV(0, s + j), a1 += h * vload##DV(1, s + j);                               \
                    a2 += h * vload##DV(2, s + j), a3 += h * vload##DV(3, s + j);                               \
                }                                                                                               \
                vstore##DV(a0, 0, out + t0), vstore##DV(a1, 1, out + t0), vstore##DV(a2, 2, out + t0),          \
                    vstore##DV(a3, 3, out + t0);                                                                \
                continue;                                                                                       \
            }                                                                                                   \
            for (ulong t = t0; t < t0 + 4 * DV && t < out_n; t++) {                                             \
                const long l = (long)t + base;                                                                  \
                T acc = (T)0;                                                                                   \
                for (ulong j = 0; j < ms; j++) {                                                                \
                    const long g = l + (long)j;                                                                 \
                    if (g >= 0 && g < (long)n) acc += f[-(long)j] * sig[g];                                     \
                }                                                                                               \
                out[t] = acc;                                                                                   \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_TILED(f32, float, float4, 4, 4)
DEFINE_DIRECT(f32, float, float16, 16)

#ifdef GPUWS_FP64
DEFINE_TILED(f64, double, double2, 2, 2)
DEFINE_DIRECT(f64, double, double8, 8)
#endif
