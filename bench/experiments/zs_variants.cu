// Experiment (not part of the library): variants of ufunc_zero_suppress_i16's CUDA kernel on 2^26 int16 values
// (the bench row's size), timed in one process on the GPU machine next to cudaMemcpy device-to-device of the same
// bytes and of 1 GiB (the bench's copy ceiling), each checked against the first variant's output.
//   nvcc -arch=sm_90 -O3 -std=c++17 bench/experiments/zs_variants.cu -o /tmp/zs && /tmp/zs
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

__device__ __forceinline__ uint4 zs8(uint4 q, int t)
{
    unsigned *w = reinterpret_cast<unsigned *>(&q);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const short lo = (short)(w[k] & 0xffffu), hi = (short)(w[k] >> 16);
        const unsigned l = lo < t ? 0u : (unsigned short)lo, h = hi < t ? 0u : (unsigned short)hi;
        w[k] = l | (h << 16);
    }
    return q;
}

// U accesses of 16 bytes in flight per thread and grid-stride step; CS: streaming (evict-first) loads and stores.
template <int U, bool CS> __global__ void zs(const uint4 *in, uint4 *out, unsigned long long nv, int t)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long v = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    for (; v + (U - 1) * stride < nv; v += U * stride) {
        uint4 q[U];
#pragma unroll
        for (int u = 0; u < U; u++) q[u] = CS ? __ldcs(in + v + u * stride) : in[v + u * stride];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (CS) __stcs(out + v + u * stride, zs8(q[u], t));
            else out[v + u * stride] = zs8(q[u], t);
        }
    }
    for (; v < nv; v += stride) out[v] = zs8(in[v], t);
}

// one 16-byte access per thread, no loop: a grid of nv threads
__global__ void zs_flat(const uint4 *in, uint4 *out, unsigned long long nv, int t)
{
    const unsigned long long v = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (v < nv) out[v] = zs8(in[v], t);
}

typedef void (*kfn)(const uint4 *, uint4 *, unsigned long long, int);

static float median_ms(std::vector<float> &v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    const unsigned long long n = 1ull << 26, nv = n / 8, bytes = n * 2;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    std::vector<short> h(n);
    unsigned long long s = 11;
    for (auto &x : h) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = (short)((s >> 33) % 64) - 20;
    }
    uint4 *in, *out, *big0, *big1;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&big0, 1ull << 30));
    CK(cudaMalloc(&big1, 1ull << 30));
    CK(cudaMemcpy(in, h.data(), bytes, cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto time = [&](auto fn, int runs) {
        fn();
        CK(cudaDeviceSynchronize());
        std::vector<float> ms;
        for (int r = 0; r < runs; r++) {
            CK(cudaEventRecord(e0));
            fn();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        return median_ms(ms);
    };
    const float big = time([&] { CK(cudaMemcpyAsync(big1, big0, 1ull << 30, cudaMemcpyDeviceToDevice)); }, 15);
    const double ceiling = 2.0 * (1ull << 30) / (big * 1e-3) / 1e9;
    const float same = time([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }, 30);
    std::printf("device %s: copy 1 GiB %.1f GB/s (the bench ceiling); copy of the same %llu MB %.4f ms = %.1f%%\n", p.name,
                ceiling, 2 * bytes >> 20, same, 100.0 * 2.0 * bytes / (same * 1e-3) / 1e9 / ceiling);
    struct V {
        const char *name;
        kfn f;
        int block, per_sm; // per_sm 0: a flat grid of nv threads
    };
    const V vs[] = {
        {"1 in flight, 256 x 16/SM (old library)", zs<1, false>, 256, 16},
        {"2 in flight, 256 x 16/SM (library)", zs<2, false>, 256, 16},
        {"4 in flight, 256 x 16/SM", zs<4, false>, 256, 16},
        {"2 in flight streaming, 256 x 16/SM", zs<2, true>, 256, 16},
        {"4 in flight streaming, 256 x 16/SM", zs<4, true>, 256, 16},
        {"2 in flight, 256 x 8/SM", zs<2, false>, 256, 8},
        {"4 in flight, 256 x 8/SM", zs<4, false>, 256, 8},
        {"2 in flight, 512 x 4/SM", zs<2, false>, 512, 4},
        {"flat, one access per thread, 256", zs_flat, 256, 0},
        {"flat, one access per thread, 512", zs_flat, 512, 0},
    };
    std::vector<short> want(n), got(n);
    for (const V &v : vs) {
        const unsigned g = v.per_sm ? (unsigned)(sms * v.per_sm) : (unsigned)((nv + v.block - 1) / v.block);
        CK(cudaMemset(out, 0x5a, bytes));
        const float ms = time([&] { v.f<<<g, v.block>>>(in, out, nv, 15); }, 30);
        CK(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
        if (&v == vs) want = got;
        const double gbs = 2.0 * bytes / (ms * 1e-3) / 1e9;
        std::printf("%-44s median %.4f ms  %.1f GB/s = %.1f%% of copy  %s\n", v.name, ms, gbs, 100.0 * gbs / ceiling,
                    got == want ? "ok" : "MISMATCH");
    }
    return 0;
}
