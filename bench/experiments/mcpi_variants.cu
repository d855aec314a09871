// Experiment (not part of the library): variants of monte_carlo_pi's CUDA partial kernel, timed in one process on
// the GPU machine, each checked against the variant the library ships (same hit count for the same samples).
//   nvcc -arch=sm_90 -O3 -std=c++17 -I kernels bench/experiments/mcpi_variants.cu -o /tmp/mcpi && /tmp/mcpi
// Prints one line per variant: median of 30 event-timed runs of 10^8 samples (partial kernel + final sum).
// Results and what was learned: bench/NOTES.md (monte_carlo_pi sections).
#include "monte_carlo_pi/philox.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                                    \
    do {                                                                                                         \
        cudaError_t e_ = (x);                                                                                    \
        if (e_ != cudaSuccess) {                                                                                 \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                      \
            std::exit(1);                                                                                        \
        }                                                                                                        \
    } while (0)

__device__ __forceinline__ unsigned long long block_sum(unsigned long long v)
{
    __shared__ unsigned long long w[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? w[threadIdx.x] : 0;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// x^2 + y^2 < 1 for 24-bit coordinates, decided in double precision: a^2 and b^2 (< 2^48) and their sum (< 2^49)
// are exact in a double, so this is the integer test exactly, on the FP64 pipe instead of the integer multiplier.
__device__ __forceinline__ unsigned inside_f64(uint32_t rx, uint32_t ry)
{
    const double two52 = 4503599627370496.0;
    const double x = __hiloint2double(0x43300000, (int)(rx >> 8)) - two52;
    const double y = __hiloint2double(0x43300000, (int)(ry >> 8)) - two52;
    return fma(x, x, y * y) < 281474976710656.0;
}

// Philox with the 32x32 products as separate mul.lo / mul.hi (the compiler otherwise emits one IMAD.WIDE).
__device__ __forceinline__ void philox_split(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                             uint32_t k1, uint32_t out[4])
{
#pragma unroll
    for (int r = 0; r < 10; r++) {
        const uint32_t h0 = __umulhi(0xD2511F53u, c0), l0 = 0xD2511F53u * c0;
        const uint32_t h1 = __umulhi(0xCD9E8D57u, c2), l1 = 0xCD9E8D57u * c2;
        c0 = h1 ^ c1 ^ k0;
        c1 = l1;
        c2 = h0 ^ c3 ^ k1;
        c3 = l0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

// V0: the library's kernel as of 2026-11-21 (two chains, per-sample range tests).
__global__ void v0(unsigned long long *partials, unsigned long long first, unsigned long long last, unsigned key0,
                   unsigned key1)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x, jlast = last / 2;
    unsigned long long hits = 0;
    for (unsigned long long j = first / 2 + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j <= jlast;
         j += 2 * stride) {
        const unsigned long long j2 = j + stride;
        uint32_t u[4], v[4];
        gpuws__philox((uint32_t)j, (uint32_t)(j >> 32), 0, 0, key0, key1, u);
        gpuws__philox((uint32_t)j2, (uint32_t)(j2 >> 32), 0, 0, key0, key1, v);
        hits += (2 * j >= first ? gpuws__pi_inside(u[0], u[1]) : 0u) + (2 * j + 1 <= last ? gpuws__pi_inside(u[2], u[3]) : 0u);
        if (j2 <= jlast) hits += gpuws__pi_inside(v[0], v[1]) + (2 * j2 + 1 <= last ? gpuws__pi_inside(v[2], v[3]) : 0u);
    }
    const unsigned long long total = block_sum(hits);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Interior variants: every call jf..jl counts both samples (the ends are corrected on the host here, by the final
// kernel in the library). CH independent chains per step; INSIDE 0 = integer test, 1 = f64 test; SPLIT: mul.lo/hi.
template <int CH, int INSIDE, bool SPLIT>
__global__ void vi(unsigned long long *partials, unsigned long long jf, unsigned long long jl, unsigned key0,
                   unsigned key1)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long j = jf + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned hits = 0; // at most 2 * CH per step, fewer than 2^32 in all per thread for n < 2^40
    for (; j + (CH - 1) * stride <= jl; j += CH * stride) {
        uint32_t u[CH][4];
#pragma unroll
        for (int c = 0; c < CH; c++) {
            const unsigned long long jj = j + c * stride;
            if (SPLIT) philox_split((uint32_t)jj, (uint32_t)(jj >> 32), 0, 0, key0, key1, u[c]);
            else gpuws__philox((uint32_t)jj, (uint32_t)(jj >> 32), 0, 0, key0, key1, u[c]);
        }
#pragma unroll
        for (int c = 0; c < CH; c++) {
            if (INSIDE == 1) hits += inside_f64(u[c][0], u[c][1]) + inside_f64(u[c][2], u[c][3]);
            else hits += gpuws__pi_inside(u[c][0], u[c][1]) + gpuws__pi_inside(u[c][2], u[c][3]);
        }
    }
    for (; j <= jl; j += stride) {
        uint32_t u[4];
        gpuws__philox((uint32_t)j, (uint32_t)(j >> 32), 0, 0, key0, key1, u);
        hits += gpuws__pi_inside(u[0], u[1]) + gpuws__pi_inside(u[2], u[3]);
    }
    const unsigned long long total = block_sum(hits);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void final_sum(const unsigned long long *partials, unsigned long long *out, unsigned count)
{
    unsigned long long s = 0;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    s = block_sum(s);
    if (threadIdx.x == 0) out[0] = s;
}

typedef void (*kfn)(unsigned long long *, unsigned long long, unsigned long long, unsigned, unsigned);

int main(int argc, char **argv)
{
    const unsigned long long n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000000ull, first = 0,
                             last = first + n - 1;
    const unsigned long long seed = 20261121ull; // any key: all variants see the same samples
    const unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    unsigned long long *partials, *out;
    CK(cudaMalloc(&partials, 65536 * 8));
    CK(cudaMalloc(&out, 8));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    // end corrections for the interior variants: samples 2*jf (if first is odd) and 2*jl + 1 (if last is even)
    const unsigned long long jf = first / 2, jl = last / 2;
    uint32_t u[4];
    unsigned long long corr = 0;
    if (first & 1) {
        gpuws__philox((uint32_t)jf, (uint32_t)(jf >> 32), 0, 0, k0, k1, u);
        corr += gpuws__pi_inside(u[0], u[1]);
    }
    if (!(last & 1)) {
        gpuws__philox((uint32_t)jl, (uint32_t)(jl >> 32), 0, 0, k0, k1, u);
        corr += gpuws__pi_inside(u[2], u[3]);
    }
    struct V {
        const char *name;
        kfn f;
        bool interior;
        int block, per_sm;
    };
    const V vs[] = {
        {"v0 library (2 chains, range tests) 256x4/SM", v0, false, 256, 4},
        {"interior 1 chain int 256x4", vi<1, 0, false>, true, 256, 4},
        {"interior 2 chains int 256x4", vi<2, 0, false>, true, 256, 4},
        {"interior 4 chains int 256x4", vi<4, 0, false>, true, 256, 4},
        {"interior 2 chains f64 256x4", vi<2, 1, false>, true, 256, 4},
        {"interior 4 chains f64 256x4", vi<4, 1, false>, true, 256, 4},
        {"interior 2 chains int split 256x4", vi<2, 0, true>, true, 256, 4},
        {"interior 2 chains f64 split 256x4", vi<2, 1, true>, true, 256, 4},
        {"interior 2 chains int 256x8", vi<2, 0, false>, true, 256, 8},
        {"interior 2 chains f64 256x8", vi<2, 1, false>, true, 256, 8},
        {"interior 2 chains f64 256x16", vi<2, 1, false>, true, 256, 16},
        {"interior 4 chains f64 256x8", vi<4, 1, false>, true, 256, 8},
        {"interior 2 chains f64 128x8", vi<2, 1, false>, true, 128, 8},
        {"interior 2 chains f64 512x4", vi<2, 1, false>, true, 512, 4},
    };
    unsigned long long want = 0;
    std::printf("device %s, %d SMs, n = %llu\n", p.name, sms, n);
    for (const V &v : vs) {
        cudaFuncAttributes a;
        CK(cudaFuncGetAttributes(&a, v.f));
        const unsigned g = (unsigned)std::min<long long>((long long)sms * v.per_sm, 65536);
        auto once = [&]() {
            if (v.interior) v.f<<<g, v.block>>>(partials, jf, jl, k0, k1);
            else v.f<<<g, v.block>>>(partials, first, last, k0, k1);
            final_sum<<<1, 1024>>>(partials, out, g);
        };
        once();
        CK(cudaDeviceSynchronize());
        unsigned long long h = 0;
        CK(cudaMemcpy(&h, out, 8, cudaMemcpyDeviceToHost));
        if (v.interior) h -= corr;
        if (&v == vs) want = h;
        std::vector<float> ms;
        for (int r = 0; r < 30; r++) {
            CK(cudaEventRecord(e0));
            once();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        std::printf("%-48s regs %3d  median %.4f ms  min %.4f  hits %llu %s\n", v.name, a.numRegs, ms[ms.size() / 2],
                    ms[0], h, h == want ? "ok" : "MISMATCH");
    }
    return 0;
}
