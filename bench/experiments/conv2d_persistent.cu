// Experiment (issue 3, convolve2d f32 <= 60 us on the H100): does a persistent schedule beat the library's one launch
// of whole + thin tiles on the workshop case (2048^2 deltas (*) 15x15 Gaussian, mode full, fill 0)?
//
//   lib      the library's kernel (convolve2d_fixed_f32_k15) with the plan the driver picks on the H100: 2 x 2 warps,
//            64 x 80 tiles, 792 whole tiles (rows < 1920), then 297 thin tiles of 16 rows, 6 blocks per SM
//   single   persistent blocks (6 per SM), one tile buffer: tiles from a global counter (whole ones first, then
//            thin ones), each staged, then computed
//   double   persistent blocks (3 per SM), two tile buffers: the next tile's cp.async copies are in flight while the
//            block computes the current one
// Every variant uses the library's own device code for staging (stage_inside / stage_tile), the rows (fixed_row)
// and the stores, and the same 80-register cap, so only the schedule differs. Outputs are compared with the
// library kernel's, element by element: identical where the split is the library's (the same sums in the same
// order), within f32 rounding where another split sums some rows in thin tiles.
//
// Build and run on the GPU machine (bench/gpu_explore.sh persist):
//   nvcc -arch=sm_90 -O3 -std=c++17 bench/experiments/conv2d_persistent.cu -o /tmp/persist && /tmp/persist
#include "../../kernels/convolve2d/convolve2d.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                                   \
    do {                                                                                                        \
        cudaError_t e_ = (x);                                                                                   \
        if (e_ != cudaSuccess) {                                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                 \
            exit(1);                                                                                            \
        }                                                                                                       \
    } while (0)

namespace {

constexpr int KW = 15, R = 8, LX = 4, S = 5, SUB_S = 1, KWP = 16, WX = 2, WY = 2;
constexpr int TW = WX * LX * R, TH = WY * (32 / LX) * S, TH_SUB = WY * (32 / LX) * SUB_S;

struct Geo {
    const float *img, *kern;
    float *out;
    unsigned long long stride;
    int H, W, kh, OH, OW, base_r, base_c, pitch, vec, split, main_tiles, total_tiles, tiles_x;
};

__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void wait_group_1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// Tile t's origin and rows per thread: whole tiles (S rows per thread) first in row-major order, thin ones below.
__device__ __forceinline__ void tile_origin(const Geo &g, int t, int &m0, int &n0, bool &whole)
{
    whole = t < g.main_tiles;
    if (whole) {
        m0 = t / g.tiles_x * TH, n0 = t % g.tiles_x * TW;
    } else {
        const int u = t - g.main_tiles;
        m0 = g.split + u / g.tiles_x * TH_SUB, n0 = u % g.tiles_x * TW;
    }
}

// Issues the copies of tile t into buf (no wait; stage_tile waits for its own when the tile touches an edge).
__device__ void stage(const Geo &g, int t, float *buf, int lane, int warp, int nwarps)
{
    int m0, n0;
    bool whole;
    tile_origin(g, t, m0, n0, whole);
    const int rows = (whole ? TH : TH_SUB) + g.kh - 1, cols = TW + 16, gr0 = m0 + g.base_r, gc0 = n0 + g.base_c;
    if (g.vec > 1 && gr0 >= 0 && gr0 + rows <= g.H && gc0 >= 0 && gc0 + cols <= g.W) {
        const float *src = g.img + (size_t)gr0 * g.stride + gc0;
        if (g.vec == 4) stage_inside<4>(buf, g.pitch, rows, cols, src, g.stride, lane, warp, nwarps);
        else stage_inside<2>(buf, g.pitch, rows, cols, src, g.stride, lane, warp, nwarps);
    } else {
        stage_tile<true>(buf, g.pitch, rows, cols, g.img, g.stride, g.H, g.W, gr0, gc0, BOUNDARY_FILL, 0.0f, lane, warp,
                         nwarps);
    }
}

// The fixed kernel's compute for one staged tile (its middle rows without tests, then the partial rows).
template <int SS>
__device__ void compute(const Geo &g, const float *tile, const float *fb, int m0, int n0)
{
    const Place<R, SS, LX> pl(WX, g.OH, g.OW, m0, n0);
    if (!pl.active) return;
    float acc[SS][R];
#pragma unroll
    for (int s = 0; s < SS; s++)
#pragma unroll
        for (int i = 0; i < R; i++) acc[s][i] = 0.0f;
    const float *trow0 = tile + pl.y0 * g.pitch + pl.x0;
    const int kh = g.kh;
#pragma unroll 1
    for (int r = SS - 1; r < kh; r++) fixed_row<float, KW, SS, true>(acc, trow0 + r * g.pitch, fb + r * KWP, r, kh);
    const int hi = kh > SS - 1 ? kh : SS - 1, partial = SS - 1 + (SS + kh - 1 - hi);
#pragma unroll 1
    for (int i = 0; i < partial; i++) {
        const int r = i < SS - 1 ? i : hi + i - (SS - 1);
        fixed_row<float, KW, SS, false>(acc, trow0 + r * g.pitch, fb + r * KWP, r, kh);
    }
    store_rows(g.out, acc, g.OH, g.OW, m0 + pl.y0, n0 + pl.x0);
}

__device__ void compute_tile(const Geo &g, int t, const float *tile, const float *fb)
{
    int m0, n0;
    bool whole;
    tile_origin(g, t, m0, n0, whole);
    if (whole) compute<S>(g, tile, fb, m0, n0);
    else compute<SUB_S>(g, tile, fb, m0, n0);
}

// Double: two tile buffers, the next tile staged while this one is computed. Else one buffer.
template <bool Double>
__global__ void __maxnreg__(80) persist(Geo g, unsigned *counter, int buf_elems)
{
    GPUWS_SHARED_BYTES();
    float *buf0 = reinterpret_cast<float *>(gpuws_smem), *buf1 = buf0 + (Double ? buf_elems : 0);
    float *fb = buf0 + (Double ? 2 : 1) * buf_elems;
    __shared__ int next[2];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    for (int i = tid; i < g.kh * KWP; i += blockDim.x) {
        const int j = i / KWP, k = i - j * KWP;
        fb[i] = k < KW ? g.kern[(size_t)(g.kh - 1 - j) * KW + (KW - 1 - k)] : 0.0f;
    }
    if (tid == 0) next[0] = (int)atomicAdd(counter, 1u);
    __syncthreads();
    int t = next[0];
    if (!Double) {
        for (int it = 1; t < g.total_tiles; it++) {
            stage(g, t, buf0, lane, warp, nwarps);
            copy_async_wait();
            if (tid == 0) next[it & 1] = (int)atomicAdd(counter, 1u);
            __syncthreads();
            compute_tile(g, t, buf0, fb);
            __syncthreads(); // everyone is done with buf0 (and has read next[it & 1] below only after this)
            t = next[it & 1];
        }
        return;
    }
    if (t < g.total_tiles) stage(g, t, buf0, lane, warp, nwarps);
    commit_group();
    float *cur = buf0, *nxt = buf1;
    for (int it = 1; t < g.total_tiles; it++) {
        if (tid == 0) next[it & 1] = (int)atomicAdd(counter, 1u);
        __syncthreads(); // next[] visible; everyone is done with nxt (the tile before this one)
        const int tn = next[it & 1];
        if (tn < g.total_tiles) stage(g, tn, nxt, lane, warp, nwarps);
        commit_group();
        wait_group_1(); // this tile's copies (all but the group just committed)
        __syncthreads();
        compute_tile(g, t, cur, fb);
        t = tn;
        float *x = cur;
        cur = nxt, nxt = x;
    }
}

// The same one-buffer kernel with scalar parameters instead of the Geo struct (as a library kernel must take them:
// gpuws launches pass scalars and buffers), and with the warps across (wx) a run-time value in Place when RtWx.
template <bool RtWx>
__global__ void __maxnreg__(80) persist_scalars(const float *img, const float *kern, float *out,
                                               unsigned long long stride, int H, int W, int kh, int OH, int OW,
                                               int base_r, int base_c, int pitch, int vec, int split, int main_tiles,
                                               int total_tiles, int tiles_x, int wx, unsigned *counter)
{
    Geo g;
    g.img = img, g.kern = kern, g.out = out, g.stride = stride, g.H = H, g.W = W, g.kh = kh, g.OH = OH, g.OW = OW;
    g.base_r = base_r, g.base_c = base_c, g.pitch = pitch, g.vec = vec, g.split = split, g.main_tiles = main_tiles;
    g.total_tiles = total_tiles, g.tiles_x = tiles_x;
    GPUWS_SHARED_BYTES();
    float *buf0 = reinterpret_cast<float *>(gpuws_smem), *fb = buf0 + (TH + kh - 1) * pitch;
    __shared__ int next[2];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    for (int i = tid; i < kh * KWP; i += blockDim.x) {
        const int j = i / KWP, k = i - j * KWP;
        fb[i] = k < KW ? kern[(size_t)(kh - 1 - j) * KW + (KW - 1 - k)] : 0.0f;
    }
    if (tid == 0) next[0] = (int)atomicAdd(counter, 1u);
    __syncthreads();
    int t = next[0];
    for (int it = 1; t < total_tiles; it++) {
        stage(g, t, buf0, lane, warp, nwarps);
        copy_async_wait();
        if (tid == 0) next[it & 1] = (int)atomicAdd(counter, 1u);
        __syncthreads();
        if (!RtWx) {
            compute_tile(g, t, buf0, fb);
        } else {
            int m0, n0;
            bool whole;
            tile_origin(g, t, m0, n0, whole);
            if (whole) {
                const Place<R, S, LX> pl(wx, OH, OW, m0, n0);
                if (pl.active) {
                    float acc[S][R];
#pragma unroll
                    for (int s = 0; s < S; s++)
#pragma unroll
                        for (int i = 0; i < R; i++) acc[s][i] = 0.0f;
                    const float *trow0 = buf0 + pl.y0 * pitch + pl.x0;
#pragma unroll 1
                    for (int r = S - 1; r < kh; r++)
                        fixed_row<float, KW, S, true>(acc, trow0 + r * pitch, fb + r * KWP, r, kh);
                    const int hi = kh > S - 1 ? kh : S - 1, partial = S - 1 + (S + kh - 1 - hi);
#pragma unroll 1
                    for (int i = 0; i < partial; i++) {
                        const int r = i < S - 1 ? i : hi + i - (S - 1);
                        fixed_row<float, KW, S, false>(acc, trow0 + r * pitch, fb + r * KWP, r, kh);
                    }
                    store_rows(out, acc, OH, OW, m0 + pl.y0, n0 + pl.x0);
                }
            } else {
                compute<SUB_S>(g, buf0, fb, m0, n0);
            }
        }
        __syncthreads();
        t = next[it & 1];
    }
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 50;
    const int N = 2048, K = 15, OH = N + K - 1, OW = N + K - 1;
    std::vector<float> h_img((size_t)N * N, 0.0f), h_k(K * K);
    for (int y = 8; y < N; y += 16)
        for (int x = 8; x < N; x += 16) h_img[(size_t)y * N + x] = 1.0f;
    for (int j = 0; j < K; j++)
        for (int i = 0; i < K; i++) {
            const double x = -2.0 + 4.0 * i / (K - 1), y = -2.0 + 4.0 * j / (K - 1);
            h_k[j * K + i] = (float)std::exp(-(x * x + y * y) / 2);
        }
    // a second, random image: the deltas are mostly zeros (METHOD.md: never time only on zeros)
    std::vector<float> h_rnd((size_t)N * N);
    unsigned long long st = 12345;
    for (auto &v : h_rnd) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        v = (float)((st >> 40) & 0xffffff) / 16777216.0f;
    }
    float *img, *rnd, *kern, *out_lib, *out;
    unsigned *counter;
    CK(cudaMalloc(&img, h_img.size() * 4));
    CK(cudaMalloc(&rnd, h_rnd.size() * 4));
    CK(cudaMalloc(&kern, h_k.size() * 4));
    CK(cudaMalloc(&out_lib, (size_t)OH * OW * 4));
    CK(cudaMalloc(&out, (size_t)OH * OW * 4));
    CK(cudaMalloc(&counter, 4));
    CK(cudaMemcpy(img, h_img.data(), h_img.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(rnd, h_rnd.data(), h_rnd.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(kern, h_k.data(), h_k.size() * 4, cudaMemcpyHostToDevice));

    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // the library's plan for this case (convolve2d.c on the H100): pitch 84, 8-byte copies (base_c = -14)
    const int pitch = 84, vec = 2, tiles_x = (OW + TW - 1) / TW, tiles_y = (OH + TH - 1) / TH;
    const int buf_elems = (TH + K - 1) * pitch;
    const size_t lib_smem = ((size_t)(TH + K - 1) * pitch + K * KWP) * 4;

    auto geo = [&](const float *src, float *dst, int whole_rows) {
        Geo g;
        g.img = src, g.kern = kern, g.out = dst, g.stride = N, g.H = N, g.W = N, g.kh = K, g.OH = OH, g.OW = OW;
        g.base_r = -(K - 1), g.base_c = -(K - 1), g.pitch = pitch, g.vec = vec, g.split = whole_rows * TH;
        g.tiles_x = tiles_x, g.main_tiles = whole_rows * tiles_x;
        g.total_tiles = g.main_tiles + (OH - g.split + TH_SUB - 1) / TH_SUB * tiles_x;
        return g;
    };
    const size_t smem1 = (size_t)buf_elems * 4 + K * KWP * 4, smem2 = 2 * (size_t)buf_elems * 4 + K * KWP * 4;
    CK(cudaFuncSetAttribute(persist<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem1));
    CK(cudaFuncSetAttribute(persist<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem2));
    int occ1 = 0, occ2 = 0, occl = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ1, persist<false>, 128, smem1));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ2, persist<true>, 128, smem2));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occl, convolve2d_fixed_f32_k15, 128, lib_smem));
    printf("device: %d SMs; blocks per SM: lib %d, single %d, double %d; tiles %d x %d (%d x %d outputs)\n", sms, occl,
           occ1, occ2, tiles_y, tiles_x, TH, TW);

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int lib_split = 24 * TH, lib_blocks = 24 * tiles_x + (OH - lib_split + TH_SUB - 1) / TH_SUB * tiles_x;
    auto run_lib = [&](const float *src, float *dst) {
        convolve2d_fixed_f32_k15<<<lib_blocks, 128, lib_smem, s>>>(src, kern, dst, N, N, N, K, K, OH, OW, -(K - 1),
                                                                    -(K - 1), BOUNDARY_FILL, 0.0f, WX, K, vec, pitch,
                                                                    lib_split, gpuws_local{lib_smem});
    };
    struct Variant {
        const char *name;
        int kind, whole_rows; // kind 0 lib, 1 single, 2 double, 4 single with scalar parameters, 5 and run-time wx
    };
    std::vector<Variant> vars = {{"lib (24 whole rows)", 0, 24}};
    vars.push_back({"single, scalar params", 4, 24});
    vars.push_back({"single, scalars, rt wx", 5, 24});
    for (int wr : {24, 20, 16, 8}) {
        vars.push_back({"single", 1, wr});
        vars.push_back({"double", 2, wr});
    }
    CK(cudaFuncSetAttribute(persist_scalars<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem1));
    CK(cudaFuncSetAttribute(persist_scalars<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem1));
    auto launch_scalars = [&](bool rt_wx, const Geo &g) {
        if (rt_wx)
            persist_scalars<true><<<sms * occ1, 128, smem1, s>>>(g.img, g.kern, g.out, g.stride, g.H, g.W, g.kh, g.OH,
                                                                 g.OW, g.base_r, g.base_c, g.pitch, g.vec, g.split,
                                                                 g.main_tiles, g.total_tiles, g.tiles_x, WX, counter);
        else
            persist_scalars<false><<<sms * occ1, 128, smem1, s>>>(g.img, g.kern, g.out, g.stride, g.H, g.W, g.kh, g.OH,
                                                                  g.OW, g.base_r, g.base_c, g.pitch, g.vec, g.split,
                                                                  g.main_tiles, g.total_tiles, g.tiles_x, WX, counter);
    };
    auto launch = [&](const Variant &v, const float *src, float *dst) {
        if (v.kind == 0) return run_lib(src, dst);
        CK(cudaMemsetAsync(counter, 0, 4, s));
        const Geo g = geo(src, dst, v.whole_rows);
        if (v.kind == 1) persist<false><<<sms * occ1, 128, smem1, s>>>(g, counter, buf_elems);
        else if (v.kind == 2) persist<true><<<sms * occ2, 128, smem2, s>>>(g, counter, buf_elems);
        else launch_scalars(v.kind == 5, g);
    };
    // correctness: every variant against the library kernel, on both images
    std::vector<float> ref((size_t)OH * OW), got((size_t)OH * OW);
    bool all_ok = true;
    for (const float *src : {(const float *)img, (const float *)rnd}) {
        run_lib(src, out_lib);
        CK(cudaGetLastError());
        CK(cudaMemcpy(ref.data(), out_lib, ref.size() * 4, cudaMemcpyDeviceToHost));
        for (const auto &v : vars) {
            if (v.kind == 0) continue; // the reference
            CK(cudaMemsetAsync(out, 0xff, got.size() * 4, s)); // NaN poison: every output must be written
            launch(v, src, out);
            CK(cudaGetLastError());
            CK(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost));
            // the same split sums each output in the same order: identical; another split moves rows between
            // whole and thin tiles, whose sums run in another order: within f32 rounding of the largest output
            size_t differ = 0;
            double maxref = 0, maxdiff = 0;
            for (size_t i = 0; i < got.size(); i++) {
                differ += !(got[i] == ref[i]);
                maxref = std::max(maxref, (double)std::fabs(ref[i]));
                maxdiff = std::max(maxdiff, std::isnan(got[i]) ? INFINITY : (double)std::fabs(got[i] - ref[i]));
            }
            const bool ok = v.whole_rows == 24 ? differ == 0 : maxdiff <= 1e-5 * maxref;
            if (!ok || differ)
                printf("%s %s %d: %zu of %zu outputs differ from the library kernel's, max |diff| %.3g (max |out| "
                       "%.3g)\n", ok ? "rounding" : "MISMATCH", v.name, v.whole_rows, differ, got.size(), maxdiff,
                       maxref);
            all_ok = all_ok && ok;
        }
    }
    printf("outputs agree with the library kernel's (deltas and random): %s\n", all_ok ? "yes" : "NO");
    // timing: rounds over the variants, events around each launch (the counter reset before the start event)
    for (const float *src : {(const float *)img, (const float *)rnd}) {
        std::vector<std::vector<double>> t(vars.size());
        for (int w = 0; w < 5; w++)
            for (const auto &v : vars) launch(v, src, out);
        for (int r = 0; r < reps; r++)
            for (size_t i = 0; i < vars.size(); i++) {
                if (vars[i].kind) CK(cudaMemsetAsync(counter, 0, 4, s));
                CK(cudaEventRecord(e0, s));
                if (vars[i].kind == 0) run_lib(src, out);
                else {
                    const Geo g = geo(src, out, vars[i].whole_rows);
                    if (vars[i].kind == 1) persist<false><<<sms * occ1, 128, smem1, s>>>(g, counter, buf_elems);
                    else if (vars[i].kind == 2) persist<true><<<sms * occ2, 128, smem2, s>>>(g, counter, buf_elems);
                    else launch_scalars(vars[i].kind == 5, g);
                }
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t[i].push_back(ms * 1e3);
            }
        CK(cudaGetLastError());
        printf("%s image, median of %d (us):\n", src == img ? "deltas" : "random", reps);
        for (size_t i = 0; i < vars.size(); i++)
            printf("  %-22s whole rows %2d  tiles %5d  %8.1f  (min %.1f)\n", vars[i].name, vars[i].whole_rows,
                   vars[i].kind ? geo(img, out, vars[i].whole_rows).total_tiles : lib_blocks, median(t[i]),
                   *std::min_element(t[i].begin(), t[i].end()));
    }
    return all_ok ? 0 : 1;
}
