// Experiment (not part of the library): the CUDA side of cl_launch_gap.c. N launches of an empty kernel and of the
// same ~10 us FMA kernel, back to back on one stream: host wall time per launch (synchronize before and after) and
// event time per launch (events before the first and after the last launch). usage: cuda_launch_gap [launches] [iters]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void empty(float *) {}
__global__ void put(int *d, int v)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile int *)d = v;
}
__global__ void spin(float *x, int n)
{
    const size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float a = x[g], b = 1.0001f;
    for (int i = 0; i < n; i++) a = fmaf(a, b, 0.5f), b = fmaf(b, a, -0.25f);
    x[g] = a + b;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 200, iters = argc > 2 ? atoi(argv[2]) : 2000;
    const int blocks = 132 * 2048 / 256;
    float *x;
    cudaMalloc(&x, 132 * 2048 * sizeof(float));
    cudaMemset(x, 0, 132 * 2048 * sizeof(float));
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int which = 0; which < 2; which++)
        for (int rep = 0; rep < 2; rep++) {
            cudaStreamSynchronize(s);
            const auto t0 = std::chrono::steady_clock::now();
            cudaEventRecord(a, s);
            for (int i = 0; i < n; i++)
                if (which == 0) empty<<<blocks, 256, 0, s>>>(x);
                else spin<<<blocks, 256, 0, s>>>(x, iters);
            cudaEventRecord(b, s);
            cudaStreamSynchronize(s);
            const double wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
            float ms = 0;
            cudaEventElapsedTime(&ms, a, b);
            if (rep) printf("%-6s cuda       launches %4d  host wall %8.2f us/launch  events %8.2f us/launch\n",
                            which ? "spin" : "empty", n, wall, ms * 1e3 / n);
        }
    // the timer's floor: events around 0, 1 and 5 empty kernels, median of 50
    for (int between : {0, 1, 5}) {
        float t[50];
        for (int rep = 0; rep < 50; rep++) {
            cudaEventRecord(a, s);
            for (int i = 0; i < between; i++) empty<<<blocks, 256, 0, s>>>(x);
            cudaEventRecord(b, s);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&t[rep], a, b);
        }
        std::sort(t, t + 50);
        printf("interval cuda events   %d empty kernels between: median %8.2f us, min %8.2f us\n", between,
               0.5e3 * (t[24] + t[25]), 1e3 * t[0]);
    }
    {   // 5 spin kernels of ~10 us between events
        float t[50];
        for (int rep = 0; rep < 50; rep++) {
            cudaEventRecord(a, s);
            for (int i = 0; i < 5; i++) spin<<<blocks, 256, 0, s>>>(x, iters / 4);
            cudaEventRecord(b, s);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&t[rep], a, b);
        }
        std::sort(t, t + 50);
        printf("interval cuda events   5 spin/4 kernels between: median %8.2f us, min %8.2f us\n", 0.5e3 * (t[24] + t[25]), 1e3 * t[0]);
    }
    // a host round trip as label's driver makes one: a kernel that writes a new value, 4 bytes read back, wait.
    // how: 0 pageable + stream sync, 1 pinned + stream sync, 2 pinned + spin on cudaStreamQuery, 3 the kernel writes
    // into mapped pinned memory itself (no copy) + stream sync, 4 the same + spin on cudaStreamQuery
    {
        static const char *names[] = {"pageable + sync", "pinned + sync", "pinned + query spin", "kernel->mapped + sync",
                                      "kernel->mapped + spin"};
        int *pinned, *mapped, *mapped_dev, value = 0;
        cudaMallocHost(&pinned, 64);
        cudaHostAlloc(&mapped, 64, cudaHostAllocMapped);
        cudaHostGetDevicePointer(&mapped_dev, mapped, 0);
        for (int how = 0; how < 5; how++) {
            double wall[101], dev[101];
            int wrong = 0;
            for (int rep = 0; rep < 101; rep++) {
                const int want = 1000 + rep * (how + 1);
                cudaEventRecord(a, s);
                const auto t0 = std::chrono::steady_clock::now();
                put<<<1, 256, 0, s>>>(how >= 3 ? mapped_dev : (int *)x, want);
                if (how < 3) cudaMemcpyAsync(how ? pinned : &value, x, sizeof(int), cudaMemcpyDeviceToHost, s);
                if (how == 2 || how == 4)
                    while (cudaStreamQuery(s) == cudaErrorNotReady) {
                    }
                else
                    cudaStreamSynchronize(s);
                const int got = how >= 3 ? *(volatile int *)mapped : how ? *pinned : value;
                wall[rep] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
                wrong += got != want;
                cudaEventRecord(b, s);
                cudaEventSynchronize(b);
                float ms;
                cudaEventElapsedTime(&ms, a, b);
                dev[rep] = ms * 1e3;
            }
            std::sort(wall, wall + 101), std::sort(dev, dev + 101);
            printf("roundtrip cuda %-22s host wall median %8.2f us (min %7.2f)   timed interval median %8.2f us (min %7.2f)"
                   "   wrong values %d/101\n", names[how], wall[50], wall[0], dev[50], dev[0], wrong);
        }
        cudaFreeHost(pinned);
        cudaFreeHost(mapped);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { printf("CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
    return 0;
}
