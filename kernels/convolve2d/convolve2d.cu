// convolve2d: scipy.signal.convolve2d on the GPU. Two kernels per type (the host driver picks; see convolve2d.c):
//
// _tiled_  A block of 32*wx*wy threads computes a TH x TW tile of outputs. Per kernel block (the whole kernel when it
//          fits the shared-memory budget) it stages the flipped kernel block and the image tile with its halo in
//          shared memory, the boundary rule applied while loading, then every thread computes R consecutive outputs
//          in each of S consecutive rows from registers: per input row and chunk of C kernel columns it reads R + C
//          image values (16-byte loads) once and uses them for up to S output rows, R * C FMAs each, with the C
//          kernel values of that row read as a warp-wide broadcast. So the inner loop is ~90% FMA.
//          Bank conflicts: a lane's R values span 32 bytes (f32) or 64 (f64); the lanes of a warp are laid out
//          LX across by 32/LX down and the host picks the tile pitch so that consecutive lane rows land 16 bytes
//          apart in the banks: each quarter-warp's 16-byte loads then hit 8 distinct bank groups.
// _sep_    gpuws_convolve2d_separable's two passes (row sums, then column sums; see below), and their _direct_ pair.
// _direct_ 64 (f32) / 32 (f64) outputs of a row per thread straight from global memory: the path for CPU OpenCL
//          devices (where they are 4 SIMD vectors) and the fallback for devices whose shared memory cannot hold even
//          a small tile.
#include "../common/gpuws_cuda.cuh"
#include "convolve2d_layout.h"
#include "convolve_vec.cuh"

namespace
{

enum { BOUNDARY_FILL = 0, BOUNDARY_WRAP = 1, BOUNDARY_SYMM = 2 };

// The extended image's source index for row/column i, or -1 for the fill value (SciPy: periodic wrap, mirror
// with period 2n, both also many periods away when the kernel is larger than the image).
__device__ __forceinline__ int extend(int i, int n, int boundary)
{
    if ((unsigned)i < (unsigned)n) return i;
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

// R outputs per thread along a row, C kernel columns per chunk, S rows per thread, LX lanes across a warp.
// S is odd so that the pitch rule in convolve2d.c can make the lane rows of a warp bank-conflict free.
template <typename T> struct Shape;
template <> struct Shape<float> {
    static constexpr int R = 8, C = 8, S = 5, LX = 4;
};
template <> struct Shape<double> {
    static constexpr int R = 8, C = 8, S = 3, LX = 2;
};

// The FMAs of one input row and K kernel columns (K = C but for the kernel's last chunk): output row s of the
// thread uses kernel row r - s. K is a template argument so that a last chunk of fewer taps runs as tight code,
// and its missing taps are skipped rather than multiplied by 0: an Inf or NaN next to an output's footprint
// stays out of it, as in SciPy.
template <int K, typename T, int S, int R, int N>
__device__ __forceinline__ void chunk(T (&acc)[S][R], const T (&in)[N], const T *fbc, int kbwp, int r, int kbh)
{
    constexpr int C = N - R;
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int j = r - s;
        if (j < 0 || j >= kbh) continue;
        T f[C];
        load_vec(f, fbc + j * kbwp);
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
            for (int i = 0; i < R; i++) acc[s][i] = fma(f[k], in[i + k], acc[s][i]);
    }
}

// Where a thread works: a block of 32 * wx * wy threads computes a TH x TW tile (tile blockIdx.x, row-major); a warp
// is LX lanes across by 32 / LX down, each lane R outputs across by S down from (y0, x0) of the tile. Warps whose
// outputs all lie past the edge load and synchronise but skip the arithmetic (!active).
// The fixed kernel places its tiles itself (Place with an explicit origin m0, n0).
template <int R, int S, int LX> struct Place {
    int nthreads, nwarps, TW, TH, tid, lane, warp, x0, y0, m0, n0;
    bool active;
    __device__ __forceinline__ Place(int wx, int OH, int OW)
    {
        const int tw = wx * LX * R, th = (int)(blockDim.x >> 5) / wx * (32 / LX) * S, tiles_x = (OW + tw - 1) / tw;
        init(wx, OH, OW, (int)(blockIdx.x / tiles_x) * th, (int)(blockIdx.x % tiles_x) * tw);
    }
    __device__ __forceinline__ Place(int wx, int OH, int OW, int m0_, int n0_) { init(wx, OH, OW, m0_, n0_); }
    __device__ __forceinline__ void init(int wx, int OH, int OW, int m0_, int n0_)
    {
        constexpr int LY = 32 / LX;
        nthreads = blockDim.x, nwarps = nthreads >> 5;
        const int wy = nwarps / wx;
        TW = wx * LX * R, TH = wy * LY * S;
        tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
        const int wxi = warp % wx, wyi = warp / wx;
        x0 = (wxi * LX + lane % LX) * R, y0 = (wyi * LY + lane / LX) * S;
        m0 = m0_, n0 = n0_;
        active = m0 + wyi * LY * S < OH && n0 + wxi * LX * R < OW;
    }
};

// One element global -> shared without passing through registers (cp.async, sm_80+): a thread issues all its
// copies back to back and waits once, instead of waiting on each load before its store.
template <bool Async, typename T> __device__ __forceinline__ void copy_async(T *dst, const T *src)
{
#if __CUDA_ARCH__ >= 800
    if (!Async) {
        *dst = __ldg(src);
        return;
    }
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src),
                 "n"(sizeof(T)));
#else
    *dst = __ldg(src);
#endif
}
__device__ __forceinline__ void copy_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// V consecutive elements global -> shared with one cp.async of V * sizeof(T) bytes (4, 8 or 16); both addresses
// aligned to that size.
// OFF elements past both addresses, as immediate offsets (no 64-bit address arithmetic per copy).
template <int V, int OFF, typename T> __device__ __forceinline__ void copy_async_vec(T *dst, const T *src)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0+%3], [%1+%3], %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "n"(V * sizeof(T)), "n"(OFF * sizeof(T)));
#else
#pragma unroll
    for (int i = 0; i < V; i++) dst[OFF + i] = __ldg(src + OFF + i);
#endif
}

// The fixed kernel's staging of a tile that lies inside the image (no boundary rule anywhere): rows by warps,
// columns by lanes in vectors of V elements (the widest the image's alignment allows, chosen by the driver), no
// per-row boundary arithmetic. The general loader spends ~75 instructions per tile row and warp on the boundary
// tests and 4-byte copies (~2,000 per warp and tile in SASS, 18% of the kernel's instructions); this loop is
// ~10 per row. cols is a multiple of 8, so of V.
template <int V, typename T>
__device__ __forceinline__ void stage_inside(T *tile, int pitch, int rows, int cols, const T *__restrict__ src,
                                             unsigned long long stride, int lane, int warp, int nwarps)
{
    constexpr int J = 5; // 32 * J vectors cover the widest tile row (8 x 1 warps: 272 f32 / 144 f64 columns)
    const int nv = cols / V;
    T *dst = tile + warp * pitch + lane * V;
    const T *s = src + (size_t)warp * stride + lane * V;
    const size_t step = (size_t)nwarps * stride;
    for (int u = warp; u < rows; u += nwarps, dst += nwarps * pitch, s += step) {
        // constant offsets: one copy instruction per vector, no address arithmetic; the tests on j are uniform
        if (lane < nv) copy_async_vec<V, 0>(dst, s);
        if (32 >= nv) continue;
        if (32 + lane < nv) copy_async_vec<V, 32 * V>(dst, s);
        if (64 >= nv) continue;
        if (64 + lane < nv) copy_async_vec<V, 64 * V>(dst, s);
        if (96 >= nv) continue;
        if (96 + lane < nv) copy_async_vec<V, 96 * V>(dst, s);
        if (128 + lane < nv) copy_async_vec<V, 128 * V>(dst, s);
        static_assert(J == 5, "the copies above cover 32 * J vectors");
    }
}

// tile[u * pitch + v] = X(gr0 + u, gc0 + v) for u < rows, v < cols: rows by warps, columns by lanes; a row of the
// fill value is stored, an image row copied (element by element through the boundary rule at the left/right edge).
// Async: with cp.async (the fixed kernel), else through registers, one or two loads in flight (the generic kernel,
// kept as measured).
template <bool Async, typename T>
__device__ __forceinline__ void stage_tile(T *tile, int pitch, int rows, int cols, const T *__restrict__ img,
                                           unsigned long long stride, int H, int W, int gr0, int gc0, int boundary,
                                           T fill, int lane, int warp, int nwarps)
{
    const bool cols_inside = gc0 >= 0 && gc0 + cols <= W;
    for (int u = warp; u < rows; u += nwarps) {
        T *dst = tile + u * pitch;
        const int gr = extend(gr0 + u, H, boundary);
        if (gr < 0) {
            for (int v = lane; v < cols; v += 32) dst[v] = fill;
        } else if (cols_inside) {
            const T *src = img + (size_t)gr * stride + gc0;
            for (int v = lane; v < cols; v += 32) copy_async<Async>(dst + v, src + v);
        } else {
            const T *src = img + (size_t)gr * stride;
            for (int v = lane; v < cols; v += 32) {
                const int gc = extend(gc0 + v, W, boundary);
                if (gc < 0) dst[v] = fill;
                else copy_async<Async>(dst + v, src + gc);
            }
        }
    }
    if (Async) copy_async_wait();
}

// A thread's S x R outputs from row m, column n. Stores: 16-byte when every row start is 16-byte aligned, 8-byte
// when 8-byte aligned (n is a multiple of R, and device buffers are 256-byte aligned), else element by element.
template <typename T, int S, int R>
__device__ __forceinline__ void store_rows(T *__restrict__ out, const T (&acc)[S][R], int OH, int OW, int m0, int n)
{
    constexpr int VW = Vec16<T>::W;
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int m = m0 + s;
        if (m >= OH || n >= OW) break;
        T *o = out + (size_t)m * OW + n;
        if (n + R <= OW && OW % VW == 0) {
            store_vec(o, acc[s]);
        } else if (VW == 4 && n + R <= OW && OW % 2 == 0) {
#pragma unroll
            for (int q = 0; q < R / 2; q++)
                *reinterpret_cast<float2 *>(o + 2 * q) = make_float2(acc[s][2 * q], acc[s][2 * q + 1]);
        } else {
#pragma unroll
            for (int i = 0; i < R; i++)
                if (n + i < OW) o[i] = acc[s][i];
        }
    }
}

template <typename T>
__device__ void tiled(const T *__restrict__ img, const T *__restrict__ kern, T *__restrict__ out,
                      unsigned long long stride, int H, int W, int kh, int kw, int OH, int OW, int base_r, int base_c,
                      int boundary, T fill, int wx, int kbh_max, int kbw_max, int pitch)
{
    using Sh = Shape<T>;
    constexpr int R = Sh::R, C = Sh::C, S = Sh::S, LX = Sh::LX;
    GPUWS_SHARED_BYTES();
    T *tile = reinterpret_cast<T *>(gpuws_smem);
    const Place<R, S, LX> pl(wx, OH, OW);
    const int nthreads = pl.nthreads, nwarps = pl.nwarps, TW = pl.TW, TH = pl.TH, tid = pl.tid, lane = pl.lane;
    const int warp = pl.warp, x0 = pl.x0, y0 = pl.y0, m0 = pl.m0, n0 = pl.n0;
    const bool active = pl.active;
    T *fb = tile + (TH + kbh_max - 1) * pitch; // kernel block, flipped, rows of kbwp (a multiple of C) values

    T acc[S][R];
#pragma unroll
    for (int s = 0; s < S; s++)
#pragma unroll
        for (int i = 0; i < R; i++) acc[s][i] = T(0);

    for (int j0 = 0; j0 < kh; j0 += kbh_max) {
        const int kbh = min(kbh_max, kh - j0);
        for (int k0 = 0; k0 < kw; k0 += kbw_max) {
            const int kbw = min(kbw_max, kw - k0), kbwp = (kbw + C - 1) / C * C;
            if (j0 != 0 || k0 != 0) __syncthreads(); // everyone is done with the previous block's tiles
            for (int i = tid; i < kbh * kbwp; i += nthreads) {
                const int j = i / kbwp, k = i - j * kbwp;
                fb[i] = k < kbw ? kern[(size_t)(kh - 1 - j0 - j) * kw + (kw - 1 - k0 - k)] : T(0);
            }
            stage_tile<false>(tile, pitch, TH + kbh - 1, TW + kbwp, img, stride, H, W, m0 + base_r + j0,
                              n0 + base_c + k0, boundary, fill, lane, warp, nwarps);
            __syncthreads();
            if (!active) continue;
            const T *trow = tile + y0 * pitch + x0;
#pragma unroll 1
            for (int r = 0; r < S + kbh - 1; r++, trow += pitch) {
#pragma unroll 1
                for (int c = 0; c < kbwp; c += C) {
                    T in[R + C];
                    load_vec(in, trow + c);
                    static_assert(C == 8, "the switch below lists C cases");
                    switch (kbw - c) {
                    case 1: chunk<1>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 2: chunk<2>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 3: chunk<3>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 4: chunk<4>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 5: chunk<5>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 6: chunk<6>(acc, in, fb + c, kbwp, r, kbh); break;
                    case 7: chunk<7>(acc, in, fb + c, kbwp, r, kbh); break;
                    default: chunk<8>(acc, in, fb + c, kbwp, r, kbh); break;
                    }
                }
            }
        }
    }
    if (active) store_rows(out, acc, OH, OW, m0 + y0, n0 + x0);
}

// ---- _fixed_: the tiled kernel for a kernel width KW known at compile time (1..16) ---------------------------------
// The generic kernel's inner loop walks 8-tap chunks chosen by a runtime switch and reloads its image window per
// chunk; it issues about one other instruction per FMA and stalls while staging. Here the width is a template
// argument: per staged input row a thread loads its whole window of R + KW - 1 values once (16-byte loads), then for
// each of its S output rows whose kernel row exists it streams that flipped kernel row from shared memory (one
// broadcast 16-byte load per VW taps) into KW x R FMAs whose register indices are all constants. Taps past KW do not
// exist in the code at all, so no padding tap is ever multiplied (Inf/NaN stay inside their footprints). The row test
// is one uniform branch per output row and input row. The whole kernel must fit the shared-memory budget (no kernel
// blocks): the driver falls back to the generic kernel otherwise.
// The tile is staged with asynchronous copies (the generic loader's row loop waited on one or two loads at a time:
// ~50 dependent round trips per block before any FMA).
//
// Thin tiles for the last rows (`split`): the grid's first blocks take whole tiles of S = 5 rows per thread, as many
// as fill the resident slots a whole number of times (the driver's estimate); the rows below are cut into tiles of
// SUB_S = 1 row per thread, five times as many blocks of a fifth of the work. Whole tiles that fill the slots a
// little over once leave a short last round of blocks, about one warp per scheduler, that runs far below the issue
// rate for a whole tile's time while most slots idle. Thin tiles spread that work over every slot.
template <typename T> struct FixedShape;
#ifndef GPUWS_CONV2D_F32_SUB_S // an A/B knob (CUDA and the host driver only; odd): rows per thread of thin tiles
#define GPUWS_CONV2D_F32_SUB_S 1
#endif
template <> struct FixedShape<float> {
    static constexpr int R = 8, S = 5, SUB_S = GPUWS_CONV2D_F32_SUB_S,
                         LX = 4; // a lane's outputs span 32 bytes: same bank rule as Shape<float>
};
template <> struct FixedShape<double> {
    static constexpr int R = 4, S = 5, SUB_S = 1, LX = 4; // 32 bytes again
};
__host__ __device__ constexpr int round_up_c(int x, int m) { return (x + m - 1) / m * m; }

// One staged input row of the fixed kernel: the thread's window of R + KW - 1 values, then for each output row s
// whose kernel row r - s exists (All: every one does) that flipped kernel row streamed from shared memory into
// KW x R FMAs.
template <typename T, int KW, int S, bool All, int R = FixedShape<T>::R>
__device__ __forceinline__ void fixed_row(T (&acc)[S][R], const T *trow, const T *frow, int r, int kh)
{
    constexpr int VW = Vec16<T>::W, NW = round_up_c(R + KW - 1, VW), KWP = round_up_c(KW, VW);
    T in[NW];
    load_vec(in, trow);
#pragma unroll
    for (int s = 0; s < S; s++) {
        if (!All && (unsigned)(r - s) >= (unsigned)kh) continue;
#pragma unroll
        for (int q = 0; q < KWP / VW; q++) {
            T f[VW];
            load_vec(f, frow - s * KWP + q * VW);
#pragma unroll
            for (int w = 0; w < VW; w++) {
                if (q * VW + w >= KW) break;
#pragma unroll
                for (int i = 0; i < R; i++) acc[s][i] = fma(f[w], in[i + q * VW + w], acc[s][i]);
            }
        }
    }
}

// Stages the tile of outputs [m0, m0 + TH) x [n0, n0 + TW) (its rows with the halo) with asynchronous copies and
// waits for them; the caller synchronizes the block before reading it. Interior tiles are copied in vectors of `vec`
// elements, the others through the boundary rule.
template <typename T, int KW>
__device__ __forceinline__ void fixed_stage(T *tile, const T *__restrict__ img, unsigned long long stride, int H, int W,
                                            int kh, int base_r, int base_c, int boundary, T fill, int pitch, int vec,
                                            int TW, int TH, int m0, int n0)
{
    constexpr int VW = Vec16<T>::W, COLS = round_up_c(KW, 8); // tile columns past TW (the driver's kbw for the pitch)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int rows = TH + kh - 1, cols = TW + COLS, gr0 = m0 + base_r, gc0 = n0 + base_c;
    if (vec > 1 && gr0 >= 0 && gr0 + rows <= H && gc0 >= 0 && gc0 + cols <= W) { // uniform over the block
        const T *src = img + (size_t)gr0 * stride + gc0;
        if (VW == 4 && vec == 4) stage_inside<VW>(tile, pitch, rows, cols, src, stride, lane, warp, nwarps);
        else stage_inside<2>(tile, pitch, rows, cols, src, stride, lane, warp, nwarps);
    } else {
        stage_tile<true>(tile, pitch, rows, cols, img, stride, H, W, gr0, gc0, boundary, fill, lane, warp, nwarps);
    }
    copy_async_wait();
}

// This thread's S x R outputs of the staged tile of outputs from (m0, n0), wx warps across; fb: the flipped kernel,
// rows of KWP. Input row r feeds output rows s with kernel row r - s in [0, kh). Rows S - 1 .. kh - 1 feed all S
// output rows: their loop has no row tests, so its loads and FMAs form one basic block the compiler schedules across
// (the filter loads of one output row under the FMAs of the previous one). The first and last S - 1 rows, with the
// tests, are one loop body run on two passes, before and after it: the input rows go in ascending order, so every
// output sums its kernel rows 0, 1, .., kh - 1 in that order whatever its row s in the thread's S and whatever S is
// (whole or thin tile), as the generic and the OpenCL kernels do. Row by row alone makes an output's bits
// independent of the tiling: gpuws_convolve2d_host's bands tile their rows from each band's first row, whole tiles
// only, and must give the in-core bits (docs/scale.md). A constant wx (the persistent kernel's) is folded into the
// placement.
template <typename T, int KW, int S>
__device__ __forceinline__ void fixed_compute(const T *tile, const T *fb, T *__restrict__ out, int kh, int OH, int OW,
                                              int wx, int pitch, int m0, int n0)
{
    using Sh = FixedShape<T>;
    constexpr int R = Sh::R, KWP = round_up_c(KW, Vec16<T>::W);
    const Place<R, S, Sh::LX> pl(wx, OH, OW, m0, n0);
    if (!pl.active) return;
    T acc[S][R];
#pragma unroll
    for (int s = 0; s < S; s++)
#pragma unroll
        for (int i = 0; i < R; i++) acc[s][i] = T(0);
    const T *trow0 = tile + pl.y0 * pitch + pl.x0;
    int r = 0;
#pragma unroll 1
    for (int pass = 0; pass < 2; pass++) { // rows with tests: [0, S - 1), then [max(S - 1, kh), S + kh - 1)
#pragma unroll 1
        for (const int end = pass ? S + kh - 1 : S - 1; r < end; r++)
            fixed_row<T, KW, S, false>(acc, trow0 + r * pitch, fb + r * KWP, r, kh);
        if (pass == 0) {
#pragma unroll 1
            for (; r < kh; r++) fixed_row<T, KW, S, true>(acc, trow0 + r * pitch, fb + r * KWP, r, kh);
        }
    }
    store_rows(out, acc, OH, OW, m0 + pl.y0, n0 + pl.x0);
}

// The flipped kernel into shared memory (rows of KWP, padding taps 0).
template <typename T, int KW>
__device__ __forceinline__ void fixed_stage_kernel(T *fb, const T *__restrict__ kern, int kh)
{
    constexpr int KWP = round_up_c(KW, Vec16<T>::W);
    for (int i = threadIdx.x; i < kh * KWP; i += blockDim.x) {
        const int j = i / KWP, k = i - j * KWP;
        fb[i] = k < KW ? kern[(size_t)(kh - 1 - j) * KW + (KW - 1 - k)] : T(0);
    }
}

// One tile of the fixed kernel: the flipped kernel and the tile staged, then the compute.
template <typename T, int KW, int S>
__device__ __forceinline__ void fixed_tile(const T *__restrict__ img, const T *__restrict__ kern, T *__restrict__ out,
                                           unsigned long long stride, int H, int W, int kh, int OH, int OW, int base_r,
                                           int base_c, int boundary, T fill, int wx, int pitch, int vec, int m0, int n0)
{
    using Sh = FixedShape<T>;
    const int TW = wx * Sh::LX * Sh::R, TH = (int)(blockDim.x >> 5) / wx * (32 / Sh::LX) * S;
    GPUWS_SHARED_BYTES();
    T *tile = reinterpret_cast<T *>(gpuws_smem), *fb = tile + (TH + kh - 1) * pitch;
    fixed_stage_kernel<T, KW>(fb, kern, kh);
    fixed_stage<T, KW>(tile, img, stride, H, W, kh, base_r, base_c, boundary, fill, pitch, vec, TW, TH, m0, n0);
    __syncthreads();
    fixed_compute<T, KW, S>(tile, fb, out, kh, OH, OW, wx, pitch, m0, n0);
}

// Where tile t of a fixed-kernel plan lies: tiles [0, main_tiles) are whole (th rows) from output row 0, tiles_x
// per tile row in row-major order; the rest thin (th_sub rows) from row split. Returns whether t is whole.
__device__ __forceinline__ bool fixed_tile_origin(int t, int main_tiles, int tiles_x, int tw, int th, int th_sub,
                                                  int split, int &m0, int &n0)
{
    const bool whole = t < main_tiles;
    const int u = whole ? t : t - main_tiles;
    m0 = whole ? u / tiles_x * th : split + u / tiles_x * th_sub, n0 = u % tiles_x * tw;
    return whole;
}

// Whole tiles for output rows [0, split) (blocks in row-major tile order), thin ones below. BND >= 0: the boundary
// rule is that constant (the _fill kernels), not the run-time `boundary` (see GPUWS_CONVOLVE2D_FIXED).
template <typename T, int KW, int BND>
__device__ void fixed(const T *__restrict__ img, const T *__restrict__ kern, T *__restrict__ out,
                      unsigned long long stride, int H, int W, int kh, int OH, int OW, int base_r, int base_c,
                      int boundary, T fill, int wx, int pitch, int vec, int split)
{
    if (BND >= 0) boundary = BND;
    using Sh = FixedShape<T>;
    const int wy = (int)(blockDim.x >> 5) / wx, lanes_down = 32 / Sh::LX, TW = wx * Sh::LX * Sh::R;
    const int tiles_x = (OW + TW - 1) / TW, th = wy * lanes_down * Sh::S, main_blocks = split / th * tiles_x;
    int m0, n0;
    if (fixed_tile_origin((int)blockIdx.x, main_blocks, tiles_x, TW, th, wy * lanes_down * Sh::SUB_S, split, m0, n0))
        fixed_tile<T, KW, Sh::S>(img, kern, out, stride, H, W, kh, OH, OW, base_r, base_c, boundary, fill, wx, pitch,
                                 vec, m0, n0);
    else
        fixed_tile<T, KW, Sh::SUB_S>(img, kern, out, stride, H, W, kh, OH, OW, base_r, base_c, boundary, fill, wx,
                                     pitch, vec, m0, n0);
}

// ---- _persist_: CUDA's f32 fixed kernel for the 2 x 2-warp plan, as persistent blocks ------------------------------
// The blocks stay resident (as many as the SMs hold) and take tiles from
// the stream's ticket counter until they run out: the fixed kernel's whole tiles (S rows per thread) for output
// rows [0, split) in row-major order, then its thin ones (SUB_S rows); the same staging, rows and stores. Per tile:
// staging, a barrier, the compute, a barrier; the blocks of an SM drift out of step, so one block's staging
// overlaps the others' FMAs, and SMs that run faster take more tiles. Tile t is ticket base + t; every block stops
// at its first ticket past the last tile, so a launch draws exactly ntiles + gridDim.x tickets and the host adds
// that to the base for the next kernel on the stream (gpuws__stream_tickets): nothing resets the counter. Any grid
// size is correct.
// On the workshop case the persistent kernels beat the fixed kernel (the same tiles and code, a block per tile), for
// boundary fill and for any boundary. The host keeps the base: a last block that resets the counter instead is
// slower.
__device__ __forceinline__ int draw_tile(unsigned *tickets, unsigned base, int ntiles)
{
    const unsigned t = atomicAdd(tickets, 1u) - base;
    return t < (unsigned)ntiles ? (int)t : ntiles;
}

template <int KW, int BND>
__device__ void persist_f32(const float *__restrict__ img, const float *__restrict__ kern, float *__restrict__ out,
                            unsigned long long stride, int H, int W, int kh, int OH, int OW, int base_r, int base_c,
                            int boundary, float fill, int pitch, int vec, int split, unsigned *tickets, unsigned base,
                            int ntiles, int tiles_x, int main_tiles)
{
    if (BND >= 0) boundary = BND;
    using Sh = FixedShape<float>;
    constexpr int R = Sh::R, LX = Sh::LX, S = Sh::S, SUB_S = Sh::SUB_S, WX = 2, WY = 2;
    constexpr int TW = WX * LX * R, TH = WY * (32 / LX) * S, TH_SUB = WY * (32 / LX) * SUB_S;
    GPUWS_SHARED_BYTES();
    float *tile = reinterpret_cast<float *>(gpuws_smem), *fb = tile + (TH + kh - 1) * pitch;
    __shared__ int next[2];
    fixed_stage_kernel<float, KW>(fb, kern, kh);
    if (threadIdx.x == 0) next[0] = draw_tile(tickets, base, ntiles);
    __syncthreads();
    int t = next[0];
    for (int it = 1; t < ntiles; it++) {
        int m0, n0;
        const bool whole = fixed_tile_origin(t, main_tiles, tiles_x, TW, TH, TH_SUB, split, m0, n0);
        fixed_stage<float, KW>(tile, img, stride, H, W, kh, base_r, base_c, boundary, fill, pitch, vec, TW,
                               whole ? TH : TH_SUB, m0, n0);
        if (threadIdx.x == 0) next[it & 1] = draw_tile(tickets, base, ntiles);
        __syncthreads(); // the tile, and next[it & 1], visible to every thread
        if (whole) fixed_compute<float, KW, S>(tile, fb, out, kh, OH, OW, WX, pitch, m0, n0);
        else fixed_compute<float, KW, SUB_S>(tile, fb, out, kh, OH, OW, WX, pitch, m0, n0);
        __syncthreads(); // everyone is done with the tile before the next one is staged over it
        t = next[it & 1];
    }
}

template <typename T>
__device__ __forceinline__ void direct_one(const T *__restrict__ img, const T *__restrict__ kern, T *__restrict__ out,
                                           unsigned long long stride, int H, int W, int kh, int kw, int OW, int m,
                                           int n, int om, int on, int boundary, T fill)
{
    const int r_hi = m + om, c_hi = n + on; // tap (j, k) reads (r_hi - j, c_hi - k)
    T acc = T(0);
    if (r_hi - (kh - 1) >= 0 && r_hi < H && c_hi - (kw - 1) >= 0 && c_hi < W) {
        for (int j = 0; j < kh; j++) {
            const T *irow = img + (size_t)(r_hi - j) * stride + c_hi;
            const T *hrow = kern + (size_t)j * kw;
            for (int k = 0; k < kw; k++) acc = fma(hrow[k], irow[-k], acc);
        }
    } else {
        for (int j = 0; j < kh; j++) {
            const int r = extend(r_hi - j, H, boundary);
            const T *hrow = kern + (size_t)j * kw;
            for (int k = 0; k < kw; k++) {
                const int c = r < 0 ? -1 : extend(c_hi - k, W, boundary);
                acc = fma(hrow[k], c < 0 ? fill : img[(size_t)r * stride + c], acc);
            }
        }
    }
    out[(size_t)m * OW + n] = acc;
}

// DV outputs of a row per thread (as many as the OpenCL kernel's 4 SIMD vectors, so both take the same launch),
// rows grid-strided, each output in SciPy's order (kernel rows then columns, unflipped). Only a fallback on GPUs.
template <typename T>
__device__ void direct(const T *__restrict__ img, const T *__restrict__ kern, T *__restrict__ out,
                       unsigned long long stride, int H, int W, int kh, int kw, int OH, int OW, int om, int on,
                       int boundary, T fill)
{
    constexpr int DV = 256 / sizeof(T);
    const int n0 = (blockIdx.x * blockDim.x + threadIdx.x) * DV;
    for (int m = blockIdx.y * blockDim.y + threadIdx.y; m < OH; m += gridDim.y * blockDim.y)
        for (int n = n0; n < n0 + DV && n < OW; n++)
            direct_one(img, kern, out, stride, H, W, kh, kw, OW, m, n, om, on, boundary, fill);
}

// ---- _sep_: gpuws_convolve2d_separable, the kernel outer(col, row) as two 1-D passes ------------------------------
// The two-pass pair, for factors longer than 16 taps (shorter ones run _sep_fused_ below, unless
// the knob convolve2d_separable=two-pass). Pass 1 (_sep_rows_): tmp[t][n] = sum_k row[k] * X(t + r0, n + c0 + kw - 1 - k)
// for the TR = OH + kh - 1 rows of the extended image the outputs need (r0 = om - (kh - 1), c0 = on - (kw - 1)).
// A block of 32 x 8 threads: each warp one tmp row at a time, a segment of SEG = 32 * V outputs, V consecutive per
// lane (one 16-byte vector). Per block of up to SEP_KB taps the flipped taps and, per warp, the segment's
// SEG + taps - 1 extended-image values (boundary rule applied) are staged in shared memory; a lane then slides a
// V + 7 window (16-byte loads at a lane stride of 16 bytes: conflict-free) over it, 8 taps per chunk, V x 8 FMAs per
// chunk from registers. With one block of taps the warps synchronize alone. Rows are grid-strided over about one
// resident wave. Pass 2 (_sep_cols_): out[m][n] = sum_q col[kh - 1 - q] * tmp[m + q][n]: a warp takes 32
// consecutive columns (coalesced 128-byte rows of tmp) and SEP_RS consecutive output rows per lane, through a
// sliding window of row sums (8 new rows per chunk of 8 taps; the whole window at once up to 16 taps).
// Taps past the last are skipped, not multiplied by 0 (as everywhere in convolve2d: Inf/NaN stay in footprints).
// SEP_KB, SEP_C, SEP_RS, SEP_WARPS: convolve2d_layout.h

// K taps (K <= SEP_C) of one chunk for W outputs from the window in[] (in[i + k] feeds output i with tap k).
template <int K, typename T, int W, int N>
__device__ __forceinline__ void sep_fmas(T (&acc)[W], const T (&in)[N], const T *taps)
{
#pragma unroll
    for (int k = 0; k < K; k++) {
        const T f = taps[k];
#pragma unroll
        for (int i = 0; i < W; i++) acc[i] = fma(f, in[i + k], acc[i]);
    }
}

// The last chunk's kn (1..SEP_C) taps, kn a run-time value: one tight body per count.
template <typename T, int W, int N>
__device__ __forceinline__ void sep_chunk(T (&acc)[W], const T (&in)[N], const T *taps, int kn)
{
    switch (kn) {
    case 1: sep_fmas<1>(acc, in, taps); break;
    case 2: sep_fmas<2>(acc, in, taps); break;
    case 3: sep_fmas<3>(acc, in, taps); break;
    case 4: sep_fmas<4>(acc, in, taps); break;
    case 5: sep_fmas<5>(acc, in, taps); break;
    case 6: sep_fmas<6>(acc, in, taps); break;
    case 7: sep_fmas<7>(acc, in, taps); break;
    default: sep_fmas<SEP_C>(acc, in, taps); break;
    }
}

// The flipped taps [kb0, kb0 + kn) of v (length k): sh[q] = v[k - 1 - (kb0 + q)], zero up to a whole chunk.
template <typename T>
__device__ __forceinline__ void sep_stage_taps(T *sh, const T *__restrict__ v, int k, int kb0, int kn)
{
    const int padded = (kn + SEP_C - 1) / SEP_C * SEP_C, tid = threadIdx.y * 32 + threadIdx.x;
    for (int q = tid; q < padded; q += 32 * SEP_WARPS) sh[q] = q < kn ? v[k - 1 - (kb0 + q)] : T(0);
}

// A warp's segment of extended-image row rr (-1: a fill row) into xs: have values from column cbase, the boundary
// rule applied, zeros up to xs_len; inside the image plain loads, several in flight.
template <typename T>
__device__ __forceinline__ void sep_stage_row(T *xs, const T *__restrict__ irow, int rr, int cbase, int have,
                                              int xs_len, int W, int boundary, T fill, int lane)
{
    if (rr >= 0 && cbase >= 0 && cbase + have <= W) {
        const T *src = irow + cbase;
#pragma unroll 4
        for (int u = lane; u < xs_len; u += 32) xs[u] = u < have ? src[u] : T(0);
    } else {
        for (int u = lane; u < xs_len; u += 32) {
            T x = T(0);
            if (u < have) {
                const int gc = rr < 0 ? -1 : extend(cbase + u, W, boundary);
                x = gc < 0 ? fill : irow[gc];
            }
            xs[u] = x;
        }
    }
}

// xs_len: each warp's staged row (SEG + the taps of a block rounded up to a chunk, a multiple of 8 elements).
template <typename T>
__device__ void sep_rows(const T *__restrict__ img, const T *__restrict__ row, T *__restrict__ tmp,
                         unsigned long long stride, int H, int W, int kw, int TR, int OW, int r0, int c0, int boundary,
                         T fill, int xs_len)
{
    constexpr int V = Vec16<T>::W, SEG = 32 * V, N = V + SEP_C; // window: V + 7 values, rounded to vectors
    GPUWS_SHARED_BYTES();
    T *taps = reinterpret_cast<T *>(gpuws_smem), *xs = taps + SEP_KB + threadIdx.y * xs_len;
    const int lane = threadIdx.x, n0 = blockIdx.x * SEG, nblocks = (kw + SEP_KB - 1) / SEP_KB;
    // One block of taps (kw <= SEP_KB): staged once, and then each warp's row is its own (xs is the warp's), so the
    // warps synchronize alone and go at their own pace; more blocks of taps need the whole block between them.
    const bool one = nblocks == 1;
    if (one) {
        sep_stage_taps(taps, row, kw, 0, kw);
        __syncthreads();
    }
    for (int base = blockIdx.y * SEP_WARPS; base < TR; base += gridDim.y * SEP_WARPS) { // uniform over the block
        const int t = base + threadIdx.y;
        const int rr = t < TR ? extend(t + r0, H, boundary) : -1;
        const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;
        T acc[V];
#pragma unroll
        for (int i = 0; i < V; i++) acc[i] = T(0);
        for (int b = 0; b < nblocks; b++) {
            const int kb0 = b * SEP_KB, kn = min(SEP_KB, kw - kb0);
            if (nblocks > 1) sep_stage_taps(taps, row, kw, kb0, kn);
            const int have = SEG + kn - 1, cbase = n0 + c0 + kb0;
            sep_stage_row(xs, irow, rr, cbase, have, xs_len, W, boundary, fill, lane);
            if (one) __syncwarp();
            else __syncthreads();
            const T *win = xs + lane * V;
            for (int q = 0; q < kn; q += SEP_C) {
                T in[N];
                load_vec(in, win + q);
                if (kn - q >= SEP_C) sep_fmas<SEP_C>(acc, in, taps + q);
                else sep_chunk(acc, in, taps + q, kn - q);
            }
            if (one) __syncwarp();
            else __syncthreads();
        }
        const int n = n0 + lane * V;
        if (t < TR && n < OW) {
            T *o = tmp + (size_t)t * OW + n;
#pragma unroll
            for (int i = 0; i < V; i++)
                if (n + i < OW) o[i] = acc[i];
        }
    }
}

template <typename T>
__device__ void sep_cols(const T *__restrict__ tmp, const T *__restrict__ col, T *__restrict__ out, int OH, int OW,
                         int kh)
{
    constexpr int N = SEP_RS + SEP_C - 1;
    GPUWS_SHARED_BYTES();
    T *taps = reinterpret_cast<T *>(gpuws_smem);
    const int n = blockIdx.x * 32 + threadIdx.x, TR = OH + kh - 1, nblocks = (kh + SEP_KB - 1) / SEP_KB;
    const int nc = n < OW ? n : OW - 1; // lanes past the last column load a valid one and store nothing
    if (nblocks == 1) sep_stage_taps(taps, col, kh, 0, kh);
    __syncthreads();
    for (int base = blockIdx.y * SEP_WARPS * SEP_RS; base < OH; base += gridDim.y * SEP_WARPS * SEP_RS) {
        const int m0 = base + threadIdx.y * SEP_RS;
        T acc[SEP_RS];
#pragma unroll
        for (int i = 0; i < SEP_RS; i++) acc[i] = T(0);
        for (int b = 0; b < nblocks; b++) {
            const int kb0 = b * SEP_KB, kn = min(SEP_KB, kh - kb0);
            if (nblocks > 1) {
                __syncthreads();
                sep_stage_taps(taps, col, kh, kb0, kn);
                __syncthreads();
            }
            // The window in[] holds row sums r0 + q .. r0 + q + N - 1 for the chunk at q; the next chunk keeps its
            // last SEP_RS - 1 and loads SEP_C new ones, through a pointer that steps a row at a time. Rows past the
            // last row sum (only near the bottom) feed no stored output: read as 0. The last chunk loads whole
            // (rows for up to SEP_C - 1 taps past kn), so `inside` counts kn rounded up to chunks: with kn itself,
            // long factors read up to 7 rows past the row sums' end (which now and then crashes PoCL 5).
            const int r0 = m0 + kb0;
            const bool inside = r0 + (kn + SEP_C - 1) / SEP_C * SEP_C + SEP_RS - 1 <= TR;
            const T *pn = tmp + (size_t)r0 * OW + nc;
            if (kn <= 2 * SEP_C) { // up to 16 taps (the common case): every row sum of the window in flight at once
                constexpr int N2 = SEP_RS + 2 * SEP_C - 1;
                T w[N2];
#pragma unroll
                for (int i = 0; i < N2; i++, pn += OW)
                    w[i] = (inside || r0 + i < TR) && i < SEP_RS - 1 + kn ? *pn : T(0);
                if (kn >= SEP_C) {
                    sep_fmas<SEP_C>(acc, w, taps);
                    T w2[N];
#pragma unroll
                    for (int i = 0; i < N; i++) w2[i] = w[i + SEP_C];
                    if (kn > SEP_C) sep_chunk(acc, w2, taps + SEP_C, kn - SEP_C);
                } else {
                    sep_chunk(acc, w, taps, kn);
                }
                continue;
            }
            T in[N];
#pragma unroll
            for (int i = 0; i < SEP_RS - 1; i++, pn += OW) in[i] = inside || r0 + i < TR ? *pn : T(0);
            for (int q = 0; q < kn; q += SEP_C) {
#pragma unroll
                for (int i = 0; i < SEP_C; i++, pn += OW)
                    in[SEP_RS - 1 + i] = inside || r0 + q + SEP_RS - 1 + i < TR ? *pn : T(0);
                if (kn - q >= SEP_C) sep_fmas<SEP_C>(acc, in, taps + q);
                else sep_chunk(acc, in, taps + q, kn - q);
#pragma unroll
                for (int i = 0; i < SEP_RS - 1; i++) in[i] = in[i + SEP_C];
            }
        }
        if (n < OW) {
#pragma unroll
            for (int i = 0; i < SEP_RS; i++)
                if (m0 + i < OH) out[(size_t)(m0 + i) * OW + n] = acc[i];
        }
    }
}

// ---- _sep_fused_: both passes in one kernel, for factors of up to 16 taps each (the common case) ---------------------
// A block of 32 x 8 threads takes tiles of SEP_FTH output rows x 32 * V columns (grid-strided over tile rows). Phase 1:
// the row sums of the SEP_FTH + kh - 1 extended-image rows the tile needs go to shared memory (rs, rows of 32 * V):
// each warp takes every 8th row. Its rows' segments (boundary rule applied) come through registers, the loads of
// PD rows in flight while it sums one; per row it stores the segment in its own xs and slides a V + 15 window over
// it with the taps in registers. Phase 2: each thread sums SEP_FTH / 8 output rows of V columns from rs with the
// column taps in registers (16-byte shared loads, every row of its window read once). No temporary device memory,
// one launch; rows are read about (SEP_FTH + kh - 1) / SEP_FTH times (from L2 after the first).
// SEP_FTAPS, SEP_FTH: convolve2d_layout.h
// The fused kernel's rows in flight per warp (of its 6 per tile) and its register caps (A/B knobs). All 6 rows in
// flight take so many registers that only 3 (f32) or 2 (f64) blocks of 8 warps fit an SM; capping them at 64 fits 4
// but makes f64 spill. 3 rows in flight fit 64 registers without spilling and are the fastest for both; a lower f32
// cap (48, 5 blocks) is slower again.
#ifndef GPUWS_SEP_FUSED_DEPTH_f32
#define GPUWS_SEP_FUSED_DEPTH_f32 3
#endif
#ifndef GPUWS_SEP_FUSED_DEPTH_f64
#define GPUWS_SEP_FUSED_DEPTH_f64 3
#endif
#ifndef GPUWS_SEP_FUSED_REGS_f32
#define GPUWS_SEP_FUSED_REGS_f32 64
#endif
#ifndef GPUWS_SEP_FUSED_REGS_f64
#define GPUWS_SEP_FUSED_REGS_f64 64
#endif

// The column index of the fused kernel's rows that cross the image's edge (few): extend() inline for f32, as a call
// for f64, whose unrolled rows then keep that code out and do not spill at 64 registers. f32 is faster with the code
// inline (as long as nothing spills) than with a call; f64 inline spills and is much slower than with the call.
__device__ __noinline__ int extend_call(int i, int n, int boundary) { return extend(i, n, boundary); }
template <typename T> __device__ __forceinline__ int sep_extend_col(int i, int n, int boundary)
{
    return sizeof(T) == 4 ? extend(i, n, boundary) : extend_call(i, n, boundary);
}

// Element lane + 32 e (e < E) of a warp's segment of extended-image row rr (-1: a fill row): have values from column
// cbase, the boundary rule applied, zeros after; inside the image plain loads, all E issued before any is used.
template <typename T, int E>
__device__ __forceinline__ void sep_fetch_row(T (&v)[E], const T *__restrict__ irow, int rr, int cbase, int have, int W,
                                              int boundary, T fill, int lane)
{
    if (rr >= 0 && cbase >= 0 && cbase + have <= W) {
        const T *src = irow + cbase;
#pragma unroll
        for (int e = 0; e < E; e++) v[e] = lane + 32 * e < have ? src[lane + 32 * e] : T(0);
    } else {
#pragma unroll
        for (int e = 0; e < E; e++) {
            const int u = lane + 32 * e;
            T x = T(0);
            if (u < have) {
                const int gc = rr < 0 ? -1 : sep_extend_col<T>(cbase + u, W, boundary);
                x = gc < 0 ? fill : irow[gc];
            }
            v[e] = x;
        }
    }
}

template <typename T>
__device__ void sep_fused(const T *__restrict__ img, const T *__restrict__ col, const T *__restrict__ row,
                          T *__restrict__ out, unsigned long long stride, int H, int W, int kh, int kw, int OH, int OW,
                          int r0, int c0, int boundary, T fill, int xs_len)
{
    constexpr int V = Vec16<T>::W, TW = 32 * V, RS = SEP_FTH / SEP_WARPS, NR = RS + SEP_FTAPS - 1;
    // a warp's rows per tile, each lane's values of a row's staged segment (xs_len <= TW + 24: see the driver), and
    // the rows whose loads are in flight at once
    constexpr int PR = (SEP_FTH + SEP_FTAPS - 1 + SEP_WARPS - 1) / SEP_WARPS, E = (TW + 24 + 31) / 32;
    constexpr int PD = sizeof(T) == 4 ? GPUWS_SEP_FUSED_DEPTH_f32 : GPUWS_SEP_FUSED_DEPTH_f64;
    GPUWS_SHARED_BYTES();
    T *rs = reinterpret_cast<T *>(gpuws_smem), *xs = rs + (SEP_FTH + SEP_FTAPS) * TW + threadIdx.y * xs_len;
    const int lane = threadIdx.x, wy = threadIdx.y, n0 = blockIdx.x * TW, ntiles = (OH + SEP_FTH - 1) / SEP_FTH;
    T tr[SEP_FTAPS], tc[SEP_FTAPS]; // flipped taps: tr[q] = row[kw - 1 - q], tc[q] = col[kh - 1 - q]
#pragma unroll
    for (int q = 0; q < SEP_FTAPS; q++) {
        tr[q] = q < kw ? row[kw - 1 - q] : T(0);
        tc[q] = q < kh ? col[kh - 1 - q] : T(0);
    }
    const int rows = SEP_FTH + kh - 1, have = TW + kw - 1, cbase = n0 + c0;
    for (int tile = blockIdx.y; tile < ntiles; tile += gridDim.y) {
        const int m0 = tile * SEP_FTH;
        // phase 1: row sums of rows m0 .. m0 + rows - 1 (tmp numbering: image row t + r0); rows t = wy + 8 j, PD of
        // them loading at any time (row j + PD's loads are issued once row j is in xs)
        auto fetch = [&](T(&v)[E], int j) {
            const int t = wy + SEP_WARPS * j;
            if (t < rows) {
                const int rr = extend(m0 + t + r0, H, boundary);
                sep_fetch_row(v, img + (size_t)(rr < 0 ? 0 : rr) * stride, rr, cbase, have, W, boundary, fill, lane);
            }
        };
        T pf[PD][E];
#pragma unroll
        for (int j = 0; j < PD; j++) fetch(pf[j], j);
#pragma unroll
        for (int j = 0; j < PR; j++) {
            const int t = wy + SEP_WARPS * j;
            if (t < rows) {
#pragma unroll
                for (int e = 0; e < E; e++)
                    if (lane + 32 * e < xs_len) xs[lane + 32 * e] = pf[j % PD][e];
                if (j + PD < PR) fetch(pf[j % PD], j + PD);
                __syncwarp();
                T in[V + SEP_FTAPS], acc[V];
                load_vec(in, xs + lane * V);
#pragma unroll
                for (int i = 0; i < V; i++) acc[i] = T(0);
#pragma unroll
                for (int k = 0; k < SEP_FTAPS; k++)
                    if (k < kw) { // taps past the last are skipped, not multiplied by 0
#pragma unroll
                        for (int i = 0; i < V; i++) acc[i] = fma(tr[k], in[i + k], acc[i]);
                    }
                store_vec(rs + t * TW + lane * V, acc);
                __syncwarp();
            }
        }
        __syncthreads();
        // phase 2: output rows m0 + wy * RS .. + RS - 1, columns n0 + lane * V .. + V - 1
        T acc[RS][V];
#pragma unroll
        for (int s = 0; s < RS; s++)
#pragma unroll
            for (int v = 0; v < V; v++) acc[s][v] = T(0);
        const T *base = rs + wy * RS * TW + lane * V;
#pragma unroll
        for (int r = 0; r < NR; r++) {
            if (r >= RS + kh - 1) break;
            T x[V];
            load_vec(x, base + r * TW);
#pragma unroll
            for (int s = 0; s < RS; s++) {
                const int q = r - s; // tap q of output row s
                if (q >= 0 && q < SEP_FTAPS && q < kh) {
#pragma unroll
                    for (int v = 0; v < V; v++) acc[s][v] = fma(tc[q < 0 ? 0 : q], x[v], acc[s][v]);
                }
            }
        }
        const int n = n0 + lane * V;
#pragma unroll
        for (int s = 0; s < RS; s++) {
            const int m = m0 + wy * RS + s;
            if (m < OH)
#pragma unroll
                for (int v = 0; v < V; v++)
                    if (n + v < OW) out[(size_t)m * OW + n + v] = acc[s][v];
        }
        __syncthreads(); // rs is rewritten by the next tile
    }
}

// The direct pair (the knob convolve_path=direct; what CPU OpenCL devices run): DV outputs of a row per thread
// straight from global memory, rows grid-strided, each output's taps in order.
template <typename T>
__device__ void sep_rows_direct(const T *__restrict__ img, const T *__restrict__ row, T *__restrict__ tmp,
                                unsigned long long stride, int H, int W, int kw, int TR, int OW, int r0, int c0,
                                int boundary, T fill)
{
    constexpr int DV = 256 / sizeof(T);
    const int n0 = (blockIdx.x * blockDim.x + threadIdx.x) * DV;
    for (int t = blockIdx.y * blockDim.y + threadIdx.y; t < TR; t += gridDim.y * blockDim.y) {
        const int rr = extend(t + r0, H, boundary);
        const T *irow = img + (size_t)(rr < 0 ? 0 : rr) * stride;
        for (int n = n0; n < n0 + DV && n < OW; n++) {
            T acc = T(0);
            for (int k = 0; k < kw; k++) {
                const int gc = rr < 0 ? -1 : extend(n + c0 + kw - 1 - k, W, boundary);
                acc = fma(row[k], gc < 0 ? fill : irow[gc], acc);
            }
            tmp[(size_t)t * OW + n] = acc;
        }
    }
}

template <typename T>
__device__ void sep_cols_direct(const T *__restrict__ tmp, const T *__restrict__ col, T *__restrict__ out, int OH,
                                int OW, int kh)
{
    constexpr int DV = 256 / sizeof(T);
    const int n0 = (blockIdx.x * blockDim.x + threadIdx.x) * DV;
    for (int m = blockIdx.y * blockDim.y + threadIdx.y; m < OH; m += gridDim.y * blockDim.y)
        for (int n = n0; n < n0 + DV && n < OW; n++) {
            T acc = T(0);
            for (int q = 0; q < kh; q++) acc = fma(col[kh - 1 - q], tmp[(size_t)(m + q) * OW + n], acc);
            out[(size_t)m * OW + n] = acc;
        }
}
} // namespace

#define GPUWS_CONVOLVE2D_KERNELS(NAME, T)                                                                              \
    extern "C" __global__ void convolve2d_tiled_##NAME(const T *img, const T *kern, T *out, unsigned long long stride, \
                                                       int H, int W, int kh, int kw, int OH, int OW, int base_r,       \
                                                       int base_c, int boundary, T fill, int wx, int kbh_max,          \
                                                       int kbw_max, int pitch, int split, gpuws_local smem)            \
    {                                                                                                                  \
        (void)smem, (void)split;                                                                                       \
        tiled<T>(img, kern, out, stride, H, W, kh, kw, OH, OW, base_r, base_c, boundary, fill, wx, kbh_max, kbw_max,   \
                 pitch);                                                                                               \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) convolve2d_sep_rows_##NAME(                                      \
        const T *img, const T *row, T *tmp, unsigned long long stride, int H, int W, int kw, int TR, int OW, int r0,   \
        int c0, int boundary, T fill, int xs_len, gpuws_local smem)                                                    \
    {                                                                                                                  \
        (void)smem;                                                                                                    \
        sep_rows<T>(img, row, tmp, stride, H, W, kw, TR, OW, r0, c0, boundary, fill, xs_len);                          \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                                                  \
        convolve2d_sep_cols_##NAME(const T *tmp, const T *col, T *out, int OH, int OW, int kh, gpuws_local smem)       \
    {                                                                                                                  \
        (void)smem;                                                                                                    \
        sep_cols<T>(tmp, col, out, OH, OW, kh);                                                                        \
    }                                                                                                                  \
    extern "C" __global__ void __maxnreg__(GPUWS_SEP_FUSED_REGS_##NAME) /* blocks of 256 threads */                    \
        convolve2d_sep_fused_##NAME(const T *img, const T *col, const T *row, T *out, unsigned long long stride,       \
                                    int H, int W, int kh, int kw, int OH, int OW, int r0, int c0, int boundary,        \
                                    T fill, int xs_len, gpuws_local smem)                                              \
    {                                                                                                                  \
        (void)smem;                                                                                                    \
        sep_fused<T>(img, col, row, out, stride, H, W, kh, kw, OH, OW, r0, c0, boundary, fill, xs_len);                \
    }                                                                                                                  \
    extern "C" __global__ void convolve2d_sep_rows_direct_##NAME(const T *img, const T *row, T *tmp,                   \
                                                                 unsigned long long stride, int H, int W, int kw,      \
                                                                 int TR, int OW, int r0, int c0, int boundary, T fill) \
    {                                                                                                                  \
        sep_rows_direct<T>(img, row, tmp, stride, H, W, kw, TR, OW, r0, c0, boundary, fill);                           \
    }                                                                                                                  \
    extern "C" __global__ void convolve2d_sep_cols_direct_##NAME(const T *tmp, const T *col, T *out, int OH, int OW,   \
                                                                 int kh)                                               \
    {                                                                                                                  \
        sep_cols_direct<T>(tmp, col, out, OH, OW, kh);                                                                 \
    }                                                                                                                  \
    extern "C" __global__ void convolve2d_direct_##NAME(const T *img, const T *kern, T *out,                           \
                                                        unsigned long long stride, int H, int W, int kh, int kw,       \
                                                        int OH, int OW, int om, int on, int boundary, T fill)          \
    {                                                                                                                  \
        direct<T>(img, kern, out, stride, H, W, kh, kw, OH, OW, om, on, boundary, fill);                               \
    }

GPUWS_CONVOLVE2D_KERNELS(f32, float)
GPUWS_CONVOLVE2D_KERNELS(f64, double)

// convolve2d_fixed_<dtype>_k<KW>: the same parameters as _tiled_ (kw and kbh_max are implied: the whole kernel is one
// block; kbw_max carries `vec`, the elements per copy of interior tiles: 1 = the general loader only, 2, or 4 (f32)),
// so the driver launches either with one argument list. convolve2d_fixed_f32_k<KW>_fill: the same for boundary fill
// only, the boundary rule a constant: the staging of edge tiles then has no wrap/mirror arithmetic, which makes the
// f32 kernels faster on the workshop case (fixed and persistent alike); fill is SciPy's default and the workshop's.
// f64 is no faster that way, so it has one kernel per width.
// Register caps: with the middle input rows in a loop of their own the f32 k15 kernel took 85 registers (5 blocks of
// 4 warps per SM); 80 keeps the 6 that shared memory allows for the workshop case. f64 at most 96 (5).
#ifndef GPUWS_CONVOLVE2D_MAX_REGS_f32 // an A/B knob
#define GPUWS_CONVOLVE2D_MAX_REGS_f32 80
#endif
#define GPUWS_CONVOLVE2D_MAX_REGS_f64 96
#define GPUWS_CONVOLVE2D_FIXED_(NAME, T, KW, SUFFIX, BND)                                                              \
    extern "C" __global__ void __maxnreg__(GPUWS_CONVOLVE2D_MAX_REGS_##NAME) convolve2d_fixed_##NAME##_k##KW##SUFFIX(  \
        const T *img, const T *kern, T *out, unsigned long long stride, int H, int W, int kh, int kw, int OH, int OW,  \
        int base_r, int base_c, int boundary, T fill, int wx, int kbh_max, int kbw_max, int pitch, int split,          \
        gpuws_local smem)                                                                                              \
    {                                                                                                                  \
        (void)kw, (void)kbh_max, (void)smem;                                                                           \
        fixed<T, KW, BND>(img, kern, out, stride, H, W, kh, OH, OW, base_r, base_c, boundary, fill, wx, pitch,         \
                          kbw_max, split);                                                                             \
    }
#define GPUWS_CONVOLVE2D_FIXED(NAME, T, KW)      GPUWS_CONVOLVE2D_FIXED_(NAME, T, KW, , -1)
#define GPUWS_CONVOLVE2D_FIXED_FILL(NAME, T, KW) GPUWS_CONVOLVE2D_FIXED_(NAME, T, KW, _fill, BOUNDARY_FILL)
// convolve2d_persist_f32_k<KW>[_fill]: persist_f32 (2 x 2 warps, 128 threads per block), the same register cap as
// the fixed f32 kernels.
#define GPUWS_CONVOLVE2D_PERSIST_(KW, SUFFIX, BND)                                                                     \
    extern "C" __global__ void __maxnreg__(GPUWS_CONVOLVE2D_MAX_REGS_f32) convolve2d_persist_f32_k##KW##SUFFIX(        \
        const float *img, const float *kern, float *out, unsigned long long stride, int H, int W, int kh, int OH,      \
        int OW, int base_r, int base_c, int boundary, float fill, int pitch, int vec, int split, unsigned *tickets,    \
        unsigned base, int ntiles, int tiles_x, int main_tiles, gpuws_local smem)                                      \
    {                                                                                                                  \
        (void)smem;                                                                                                    \
        persist_f32<KW, BND>(img, kern, out, stride, H, W, kh, OH, OW, base_r, base_c, boundary, fill, pitch, vec,     \
                             split, tickets, base, ntiles, tiles_x, main_tiles);                                       \
    }
#define GPUWS_CONVOLVE2D_PERSIST(NAME, T, KW)                                                                          \
    GPUWS_CONVOLVE2D_PERSIST_(KW, , -1) GPUWS_CONVOLVE2D_PERSIST_(KW, _fill, BOUNDARY_FILL)
#define GPUWS_CONVOLVE2D_PERSIST_ENTRY(NAME, T, KW)                                                                    \
    GPUWS_CUDA_KERNEL(convolve2d_persist_f32_k##KW), GPUWS_CUDA_KERNEL(convolve2d_persist_f32_k##KW##_fill),
#define GPUWS_CONVOLVE2D_FIXED_WIDTHS(X, NAME, T)                                                                      \
    X(NAME, T, 1)                                                                                                      \
    X(NAME, T, 2) X(NAME, T, 3) X(NAME, T, 4) X(NAME, T, 5) X(NAME, T, 6) X(NAME, T, 7) X(NAME, T, 8) X(NAME, T, 9)    \
        X(NAME, T, 10) X(NAME, T, 11) X(NAME, T, 12) X(NAME, T, 13) X(NAME, T, 14) X(NAME, T, 15) X(NAME, T, 16)
#define GPUWS_CONVOLVE2D_FIXED_ENTRY(NAME, T, KW)      GPUWS_CUDA_KERNEL(convolve2d_fixed_##NAME##_k##KW),
#define GPUWS_CONVOLVE2D_FIXED_FILL_ENTRY(NAME, T, KW) GPUWS_CUDA_KERNEL(convolve2d_fixed_##NAME##_k##KW##_fill),
GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED, f32, float)
GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED_FILL, f32, float)
GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED, f64, double)
GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_PERSIST, f32, float)

GPUWS_CUDA_KERNELS(convolve2d,
                   GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_PERSIST_ENTRY, f32, float)
                       GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED_ENTRY, f32, float)
                           GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED_FILL_ENTRY, f32, float)
                               GPUWS_CONVOLVE2D_FIXED_WIDTHS(GPUWS_CONVOLVE2D_FIXED_ENTRY, f64, double)
                                   GPUWS_CUDA_KERNEL(convolve2d_tiled_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_tiled_f64), GPUWS_CUDA_KERNEL(convolve2d_direct_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_direct_f64), GPUWS_CUDA_KERNEL(convolve2d_sep_rows_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_sep_rows_f64), GPUWS_CUDA_KERNEL(convolve2d_sep_cols_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_sep_cols_f64), GPUWS_CUDA_KERNEL(convolve2d_sep_fused_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_sep_fused_f64), GPUWS_CUDA_KERNEL(convolve2d_sep_rows_direct_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_sep_rows_direct_f64), GPUWS_CUDA_KERNEL(convolve2d_sep_cols_direct_f32),
                   GPUWS_CUDA_KERNEL(convolve2d_sep_cols_direct_f64))
