// Experiment (issue 3, convolve2d f32 <= 60 us on the H100): kernel times of the workshop case (2048^2 deltas (*)
// 15x15 Gaussian, mode full, fill 0; and a random image) for the schedules of the f32 fixed-width kernel, with the
// plan the driver picks on the H100 (2 x 2 warps, 64 x 80 tiles, pitch 84, 8-byte copies):
//
//   fixed [_fill]    convolve2d_fixed_f32_k15[_fill]: a block per tile, 792 whole tiles (rows < 1920) then 297 thin
//                    ones of 16 rows, placed by the hardware (6 blocks per SM); _fill: the boundary rule a constant
//   persist [_fill]  convolve2d_persist_f32_k15[_fill]: persistent blocks (6 per SM) taking the same tiles from a
//                    ticket counter, with a base kept here as the driver keeps it per stream (each launch draws
//                    ntiles + grid tickets); also with 20 whole tile rows (more thin tiles)
//
// Commit e08e329 also timed copies of persist_f32's loop with the warp shape, the boundary and the fill value each a
// constant or a run-time value: that found what the run-time boundary costs (2026-11-22: 58.8-59.1 us with it,
// 55.9-56.1 with BOUNDARY_FILL a constant; the warp shape and the fill value made no difference), hence the _fill
// kernels; the copies are gone now that the library has them.
//
// Only the library's kernels; outputs are compared with the fixed kernel's:
// identical with its split (the same sums in the same order), within f32 rounding with others. The first version
// of this file (git history, commit d9a84ad) also timed a double-buffered variant: 65-66 us, slower.
//
// Build and run on the GPU machine (bench/gpu_explore.sh persist):
//   nvcc -arch=sm_90 -O3 -std=c++17 bench/experiments/conv2d_persistent.cu -o /tmp/persist && /tmp/persist
#include "../../kernels/convolve2d/convolve2d.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

constexpr int LX = 4, R = 8, WX = 2, TW = WX * LX * R, TH = 2 * (32 / LX) * 5, TH_SUB = 2 * (32 / LX);

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 50;
    const int N = 2048, K = 15, OH = N + K - 1, OW = N + K - 1, pitch = 84, vec = 2;
    std::vector<float> h_img((size_t)N * N, 0.0f), h_k(K * K), h_rnd((size_t)N * N);
    for (int y = 8; y < N; y += 16)
        for (int x = 8; x < N; x += 16) h_img[(size_t)y * N + x] = 1.0f;
    for (int j = 0; j < K; j++)
        for (int i = 0; i < K; i++) {
            const double x = -2.0 + 4.0 * i / (K - 1), y = -2.0 + 4.0 * j / (K - 1);
            h_k[j * K + i] = (float)std::exp(-(x * x + y * y) / 2);
        }
    unsigned long long st = 12345; // the deltas are mostly zeros (METHOD.md: never time only on zeros)
    for (auto &v : h_rnd) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        v = (float)((st >> 40) & 0xffffff) / 16777216.0f;
    }
    float *img, *rnd, *kern, *out_ref, *out;
    unsigned *counters;
    CK(cudaMalloc(&img, h_img.size() * 4));
    CK(cudaMalloc(&rnd, h_rnd.size() * 4));
    CK(cudaMalloc(&kern, h_k.size() * 4));
    CK(cudaMalloc(&out_ref, (size_t)OH * OW * 4));
    CK(cudaMalloc(&out, (size_t)OH * OW * 4));
    CK(cudaMalloc(&counters, 16));
    CK(cudaMemset(counters, 0, 16)); // counters[0]: the tickets of every persistent variant (base below)
    unsigned ticket_base = 0;
    CK(cudaMemcpy(img, h_img.data(), h_img.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(rnd, h_rnd.data(), h_rnd.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(kern, h_k.data(), h_k.size() * 4, cudaMemcpyHostToDevice));

    int sms = 0, occ_fixed = 0, occ_persist = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int tiles_x = (OW + TW - 1) / TW;
    const size_t smem = ((size_t)(TH + K - 1) * pitch + K * 16) * 4;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_fixed, convolve2d_fixed_f32_k15, 128, smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_persist, convolve2d_persist_f32_k15, 128, smem));
    printf("device: %d SMs; blocks per SM: fixed %d, persist %d; %d tiles across of %d x %d outputs\n", sms, occ_fixed,
           occ_persist, tiles_x, TH, TW);

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    using FixedFn = void (*)(const float *, const float *, float *, unsigned long long, int, int, int, int, int,
                             int, int, int, int, float, int, int, int, int, int, gpuws_local);
    using PersistFn = void (*)(const float *, const float *, float *, unsigned long long, int, int, int, int, int,
                               int, int, int, float, int, int, int, unsigned *, unsigned, int, int, int, gpuws_local);
    struct Variant {
        const char *name;
        int kind, whole_rows; // kind 0 a library fixed kernel, 1 a library persistent kernel
        FixedFn fixed;
        PersistFn persist;
    };
    std::vector<Variant> vars = {
        {"fixed", 0, 24, convolve2d_fixed_f32_k15, nullptr},
        {"fixed _fill", 0, 24, convolve2d_fixed_f32_k15_fill, nullptr},
        {"persist", 1, 24, nullptr, convolve2d_persist_f32_k15},
        {"persist _fill", 1, 24, nullptr, convolve2d_persist_f32_k15_fill},
        {"persist _fill", 1, 20, nullptr, convolve2d_persist_f32_k15_fill},
    };
    auto launch = [&](const Variant &v, const float *src, float *dst) {
        const int split = v.whole_rows * TH, main_tiles = v.whole_rows * tiles_x;
        const int ntiles = main_tiles + (OH - split + TH_SUB - 1) / TH_SUB * tiles_x;
        const int grid = std::min(sms * occ_persist, ntiles);
        if (v.kind == 0)
            v.fixed<<<ntiles, 128, smem, s>>>(src, kern, dst, N, N, N, K, K, OH, OW, -(K - 1), -(K - 1), BOUNDARY_FILL,
                                              0.0f, WX, K, vec, pitch, split, gpuws_local{smem});
        else {
            v.persist<<<grid, 128, smem, s>>>(src, kern, dst, N, N, N, K, OH, OW, -(K - 1), -(K - 1), BOUNDARY_FILL,
                                              0.0f, pitch, vec, split, counters, ticket_base, ntiles, tiles_x,
                                              main_tiles, gpuws_local{smem});
            ticket_base += (unsigned)(ntiles + grid); // as the driver keeps it per stream
        }
    };
    // correctness: every variant against the fixed kernel, on both images, outputs poisoned with NaN first
    std::vector<float> ref((size_t)OH * OW), got((size_t)OH * OW);
    bool all_ok = true;
    for (const float *src : {(const float *)img, (const float *)rnd}) {
        launch(vars[0], src, out_ref);
        CK(cudaGetLastError());
        CK(cudaMemcpy(ref.data(), out_ref, ref.size() * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 1; i < vars.size(); i++) {
            CK(cudaMemsetAsync(out, 0xff, got.size() * 4, s));
            launch(vars[i], src, out);
            CK(cudaGetLastError());
            CK(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost));
            size_t differ = 0;
            double maxref = 0, maxdiff = 0;
            for (size_t k = 0; k < got.size(); k++) {
                differ += !(got[k] == ref[k]);
                maxref = std::max(maxref, (double)std::fabs(ref[k]));
                maxdiff = std::max(maxdiff, std::isnan(got[k]) ? INFINITY : (double)std::fabs(got[k] - ref[k]));
            }
            // with the fixed kernel's split the sums run in the same order; other splits move rows into thin tiles
            const bool ok = vars[i].whole_rows == 24 ? differ == 0 : maxdiff <= 1e-5 * maxref;
            if (!ok || differ)
                printf("%s %s %d: %zu of %zu outputs differ from the fixed kernel's, max |diff| %.3g (max |out| %.3g)\n",
                       ok ? "rounding" : "MISMATCH", vars[i].name, vars[i].whole_rows, differ, got.size(), maxdiff,
                       maxref);
            all_ok = all_ok && ok;
        }
    }
    printf("outputs agree with the fixed kernel's (deltas and random): %s\n", all_ok ? "yes" : "NO");
    // timing: rounds over the variants, events around each launch
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const float *src : {(const float *)img, (const float *)rnd}) {
        std::vector<std::vector<double>> t(vars.size());
        for (int w = 0; w < 5; w++)
            for (const auto &v : vars) launch(v, src, out);
        for (int r = 0; r < reps; r++)
            for (size_t i = 0; i < vars.size(); i++) {
                CK(cudaEventRecord(e0, s));
                launch(vars[i], src, out);
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t[i].push_back(ms * 1e3);
            }
        CK(cudaGetLastError());
        printf("%s image, median of %d (us):\n", src == img ? "deltas" : "random", reps);
        for (size_t i = 0; i < vars.size(); i++)
            printf("  %-20s whole tile rows %2d  %8.1f  (min %.1f)\n", vars[i].name, vars[i].whole_rows, median(t[i]),
                   *std::min_element(t[i].begin(), t[i].end()));
    }
    return all_ok ? 0 : 1;
}
