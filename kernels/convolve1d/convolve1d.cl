/* convolve1d: numpy.convolve, the same three kernels as convolve1d.cu with the same parameters (design notes there):
 *   convolve1d_stream_*  persistent work-groups, next tile prefetched into registers (GPUs, filters <= 248/120 taps)
 *   convolve1d_tiled_*   signal segment and flipped filter block in local memory, R outputs per work-item (GPUs)
 *   convolve1d_direct_*  4 SIMD vectors of outputs per work-item from global memory (CPU devices)
 * out[t] = sum_j filt[ms-1-j] * sig[t + base + j], zero outside sig (sig is the longer input). */

/* GPUWS_CONV_NO_UNROLL (the knob convolve_no_unroll): no unroll pragmas (NVIDIA's OpenCL compiler has been seen to miscompile them). */
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

/* The stream kernel (convolve1d.cu's design notes): persistent work-groups of C1S_THREADS work-items, the next
 * tile in registers while the current one is computed from one of two local buffers. The shape comes from
 * convolve1d_stream.h as -D options. Every 16-byte access goes through a vector-typed pointer to an address that
 * is aligned (global: an aligned signal index of a buffer; local: inside a static __local V array): a dereference of
 * a V * is one 16-byte access for NVIDIA's compiler, where vloadN (element alignment) may be N scalar ones. */
#define S_TT(W) (C1S_THREADS * C1S_VECS * (W))
/* one buffer, in vectors: front pad, tile, halo, and one junk vector that the work-items past the halo write (so
 * that the halo's store needs no branch: PoCL 5's work-group compiler aborts on an `if (tid < hv)` around the
 * store's own if/else chain inside the tile loop, the shape of pocl/pocl#1435) */
#define S_PITCHV (1 + C1S_THREADS * C1S_VECS + C1S_HALO_VECS + 1)
#define S_HALO_SLOT (min(tid, C1S_HALO_VECS)) /* this work-item's halo vector, or the junk one */

/* Element by element without a loop (PoCL 5's work-group compiler has aborted on loops under branches between
 * barriers, pocl/pocl#1435, #2281; these branches sit inside the tile loop, between its barriers). */
#define S_EACH_4(X) X(0) X(1) X(2) X(3)
#define S_EACH_2(X) X(0) X(1)
#define S_FETCH_E(w) e[w] = i + (w) >= 0 && i + (w) < n ? sig[i + (w)] : 0;
#define S_PUT_E(w) dst[w] = e[w];
#define S_STORE_E(w) if (t + (w) < out_n) out[t + (w)] = a_[w];

/* K taps of a chunk for the W outputs of vector q: acc[q * W + i] (K < C only for the filter's last chunk). */
#define S_CHUNK(W, K)                                                                                           \
    {                                                                                                           \
        UNROLL for (int k = 0; k < (K); k++) UNROLL for (int i = 0; i < (W); i++)                               \
            acc[q * (W) + i] = fma(g[k], in[i + k], acc[q * (W) + i]);                                          \
    }

#define DEFINE_STREAM(NAME, T, V, W, T2)                                                                        \
    /* The aligned vector sig[i .. i + W), zeros outside [0, n). */                                             \
    static V stream_fetch_##NAME(__global const T *sig, long i, long n)                                         \
    {                                                                                                           \
        if (i >= 0 && i + (W) <= n) return *(__global const V *)(sig + i);                                      \
        T e[W];                                                                                                 \
        S_EACH_##W(S_FETCH_E)                                                                                   \
        return VFROM_##W(e);                                                                                    \
    }                                                                                                           \
    /* v to dst[0 .. W), dst = its aligned place - off: whole when off is 0, halves when off is W / 2. */      \
    static void stream_put_##NAME(__local T *dst, V v, int off)                                                 \
    {                                                                                                           \
        if (off == 0) {                                                                                         \
            *(__local V *)dst = v;                                                                              \
        } else if (off == (W) / 2) {                                                                            \
            ((__local T2 *)dst)[0] = v.lo, ((__local T2 *)dst)[1] = v.hi;                                        \
        } else {                                                                                                \
            T e[W];                                                                                             \
            VTO_##W(e, v);                                                                                      \
            S_EACH_##W(S_PUT_E)                                                                                 \
        }                                                                                                       \
    }                                                                                                           \
    __kernel __attribute__((reqd_work_group_size(C1S_THREADS, 1, 1))) void convolve1d_stream_##NAME(            \
        __global const T *sig, __global const T *filt, __global T *out, ulong n, ulong ms, long base, ulong out_n) \
    {                                                                                                           \
        __local V bufv[2 * S_PITCHV + C1S_HALO_VECS];                                                           \
        __local T *fb = (__local T *)(bufv + 2 * S_PITCHV);                                                     \
        const int tid = (int)get_local_id(0), kb = (int)ms, kbp = (kb + C - 1) / C * C;                         \
        for (int j = tid; j < kbp; j += C1S_THREADS) fb[j] = j < kb ? filt[ms - 1 - (ulong)j] : (T)0;           \
        const int off = (int)(((base % (W)) + (W)) % (W)), hv = (kbp + off + (W) - 1) / (W);                    \
        const ulong ntiles = (out_n + S_TT(W) - 1) / S_TT(W);                                                   \
        V pre[C1S_VECS], halo = (V)0;                                                                           \
        ulong tile = get_group_id(0);                                                                           \
        /* unconditional fetches (zeros past the last tile): no branch around them between the barriers */     \
        long ga = (long)(tile * S_TT(W)) + base - off;                                                          \
        UNROLL for (int q = 0; q < C1S_VECS; q++)                                                               \
            pre[q] = stream_fetch_##NAME(sig, ga + (long)(q * C1S_THREADS + tid) * (W), (long)n);              \
        /* past the halo (tid >= hv) the fetch sees an empty signal and gives zeros: no branch around it */      \
        halo = stream_fetch_##NAME(sig, ga + (long)(C1S_VECS * C1S_THREADS + tid) * (W), tid < hv ? (long)n : 0L); \
        for (int b = 0; tile < ntiles; tile += get_num_groups(0), b ^= 1) {                                     \
            __local V *B = bufv + b * S_PITCHV;                                                                 \
            __local T *Bs = (__local T *)B + (W) - off;                                                         \
            UNROLL for (int q = 0; q < C1S_VECS; q++)                                                           \
                stream_put_##NAME(Bs + (q * C1S_THREADS + tid) * (W), pre[q], off);                             \
            stream_put_##NAME(Bs + (C1S_VECS * C1S_THREADS + S_HALO_SLOT) * (W), halo, off);                      \
            /* orders this buffer and the taps; every work-item is done with the other buffer */               \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
            ga = (long)((tile + get_num_groups(0)) * S_TT(W)) + base - off;                                     \
            UNROLL for (int q = 0; q < C1S_VECS; q++)                                                           \
                pre[q] = stream_fetch_##NAME(sig, ga + (long)(q * C1S_THREADS + tid) * (W), (long)n);          \
            halo = stream_fetch_##NAME(sig, ga + (long)(C1S_VECS * C1S_THREADS + tid) * (W), tid < hv ? (long)n : 0L); \
            T acc[C1S_VECS * (W)];                                                                              \
            UNROLL for (int i = 0; i < C1S_VECS * (W); i++) acc[i] = (T)0;                                      \
            for (int c = 0; c < kbp; c += C) {                                                                  \
                T g[C];                                                                                         \
                UNROLL for (int p = 0; p < C / (W); p++) VTO_##W(g + p * (W), ((__local V *)fb)[c / (W) + p]);  \
                UNROLL for (int q = 0; q < C1S_VECS; q++) {                                                     \
                    T in[(W) + C];                                                                              \
                    __local V *x = B + 1 + q * C1S_THREADS + tid + c / (W);                                     \
                    UNROLL for (int p = 0; p < 1 + C / (W); p++) VTO_##W(in + p * (W), x[p]);                   \
                    switch (kb - c) {                                                                           \
                    case 1: S_CHUNK(W, 1) break;                                                                \
                    case 2: S_CHUNK(W, 2) break;                                                                \
                    case 3: S_CHUNK(W, 3) break;                                                                \
                    case 4: S_CHUNK(W, 4) break;                                                                \
                    case 5: S_CHUNK(W, 5) break;                                                                \
                    case 6: S_CHUNK(W, 6) break;                                                                \
                    case 7: S_CHUNK(W, 7) break;                                                                \
                    default: S_CHUNK(W, 8) break;                                                               \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
            UNROLL for (int q = 0; q < C1S_VECS; q++) {                                                         \
                const ulong t = tile * S_TT(W) + (ulong)((q * C1S_THREADS + tid) * (W));                        \
                if (t + (W) <= out_n) {                                                                         \
                    *(__global V *)(out + t) = VFROM_##W(acc + q * (W));                                        \
                } else {                                                                                        \
                    const T *a_ = acc + q * (W);                                                                \
                    S_EACH_##W(S_STORE_E)                                                                       \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

/* private arrays <-> 16-byte vectors, element by element (constant indices: the arrays stay in registers) */
#define VFROM_4(a) (float4)((a)[0], (a)[1], (a)[2], (a)[3])
#define VFROM_2(a) (double2)((a)[0], (a)[1])
#define VTO_4(a, v) ((a)[0] = (v).s0, (a)[1] = (v).s1, (a)[2] = (v).s2, (a)[3] = (v).s3)
#define VTO_2(a, v) ((a)[0] = (v).s0, (a)[1] = (v).s1)

#ifdef C1S_THREADS /* only in the program built with the stream shape (convolve1d.c, conv_options) */
DEFINE_STREAM(f32, float, float4, 4, float2)
#endif
DEFINE_TILED(f32, float, float4, 4, 4)
DEFINE_DIRECT(f32, float, float16, 16)

#ifdef GPUWS_FP64
#ifdef C1S_THREADS
DEFINE_STREAM(f64, double, double2, 2, double)
#endif
DEFINE_TILED(f64, double, double2, 2, 2)
DEFINE_DIRECT(f64, double, double8, 8)
#endif
