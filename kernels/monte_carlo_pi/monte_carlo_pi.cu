// Monte Carlo pi: grid-stride over Philox4x32-10 calls (two samples each), per-thread 64-bit hit counts, a block
// sum per block (monte_carlo_pi_partial), then one block adds the partials (monte_carlo_pi_final). No samples are
// stored. Counts are exact integers, so every backend gives the same hits for the same (n, seed).
#include "../common/gpuws_cuda.cuh"

#include "philox.h"

// Samples first..last (inclusive); Philox call j gives samples 2j and 2j + 1, so the calls first/2..last/2 are
// made and the two end calls may contribute one sample only. Each thread makes two calls per step of its
// grid-stride loop (j and j + stride): a Philox call is a chain of ten dependent rounds, and two independent
// chains keep the multipliers busy where one leaves them waiting on the previous round (bench/NOTES.md).
extern "C" __global__ void monte_carlo_pi_partial(unsigned long long *partials, unsigned long long first,
                                                  unsigned long long last, unsigned key0, unsigned key1,
                                                  gpuws_local scratch)
{
    (void)scratch;
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
    const unsigned long long total = gpuws_block_sum(hits);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void monte_carlo_pi_final(const unsigned long long *partials, unsigned long long *hits,
                                                unsigned count, gpuws_local scratch)
{
    (void)scratch;
    unsigned long long s = 0;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    s = gpuws_block_sum(s);
    if (threadIdx.x == 0) hits[0] = s;
}

GPUWS_CUDA_KERNELS(monte_carlo_pi, GPUWS_CUDA_KERNEL(monte_carlo_pi_partial), GPUWS_CUDA_KERNEL(monte_carlo_pi_final))
