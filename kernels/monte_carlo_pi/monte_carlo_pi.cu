// Monte Carlo pi: grid-stride over Philox4x32-10 calls (two samples each), per-thread 64-bit hit counts, a block
// sum per block (monte_carlo_pi_partial), then one block adds the partials and corrects the two end calls
// (monte_carlo_pi_final). No samples are stored. Counts are exact integers, so every backend gives the same hits
// for the same (n, seed).
#include "../common/gpuws_cuda.cuh"

#include "philox.h"

// Philox calls jf..jl (call j gives samples 2j and 2j + 1), both samples of every call counted: the partial kernel
// tests no sample against the range (those tests are a noticeable share of the time); the final kernel takes
// off the samples of the two end calls that lie outside [first, last]. Each thread makes two independent calls
// per step (two dependent chains of ten rounds keep the multipliers busier than one) and decides x^2 + y^2 < 1 on
// the FP64 pipe (gpuws__pi_inside_f64, the integer test exactly), leaving the integer multiplier to Philox.
extern "C" __global__ void monte_carlo_pi_partial(unsigned long long *partials, unsigned long long jf,
                                                  unsigned long long jl, unsigned key0, unsigned key1,
                                                  gpuws_local scratch)
{
    (void)scratch;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long j = jf + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, hits = 0;
    // steps of two calls (jl = last / 2 < 2^63, so j + 2 * stride cannot wrap), counted in 32 bits for up to 2^29
    // steps at a time (4 hits each) and then added to the 64-bit total: a 64-bit add per step cost 7%
    unsigned long long steps = j + stride <= jl ? (jl - j - stride) / (2 * stride) + 1 : 0;
    while (steps) {
        const unsigned m = steps < (1u << 29) ? (unsigned)steps : (1u << 29);
        steps -= m;
        unsigned h = 0;
        for (unsigned k = 0; k < m; k++, j += 2 * stride) {
            const unsigned long long j2 = j + stride;
            uint32_t u[4], v[4];
            gpuws__philox((uint32_t)j, (uint32_t)(j >> 32), 0, 0, key0, key1, u);
            gpuws__philox((uint32_t)j2, (uint32_t)(j2 >> 32), 0, 0, key0, key1, v);
            h += gpuws__pi_inside_f64(u[0], u[1]) + gpuws__pi_inside_f64(u[2], u[3]) +
                 gpuws__pi_inside_f64(v[0], v[1]) + gpuws__pi_inside_f64(v[2], v[3]);
        }
        hits += h;
    }
    if (j <= jl) {
        uint32_t u[4];
        gpuws__philox((uint32_t)j, (uint32_t)(j >> 32), 0, 0, key0, key1, u);
        hits += gpuws__pi_inside_f64(u[0], u[1]) + gpuws__pi_inside_f64(u[2], u[3]);
    }
    const unsigned long long total = gpuws_block_sum(hits);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// hits[0] = the sum of the partials, less sample 2 jf when first is odd and sample 2 jl + 1 when last is even.
extern "C" __global__ void monte_carlo_pi_final(const unsigned long long *partials, unsigned long long *hits,
                                                unsigned count, unsigned long long first, unsigned long long last,
                                                unsigned key0, unsigned key1, gpuws_local scratch)
{
    (void)scratch;
    unsigned long long s = 0;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    s = gpuws_block_sum(s);
    if (threadIdx.x == 0) {
        uint32_t u[4];
        const unsigned long long jf = first / 2, jl = last / 2;
        if (first & 1) {
            gpuws__philox((uint32_t)jf, (uint32_t)(jf >> 32), 0, 0, key0, key1, u);
            s -= gpuws__pi_inside(u[0], u[1]);
        }
        if (!(last & 1)) {
            gpuws__philox((uint32_t)jl, (uint32_t)(jl >> 32), 0, 0, key0, key1, u);
            s -= gpuws__pi_inside(u[2], u[3]);
        }
        hits[0] = s;
    }
}

GPUWS_CUDA_KERNELS(monte_carlo_pi, GPUWS_CUDA_KERNEL(monte_carlo_pi_partial), GPUWS_CUDA_KERNEL(monte_carlo_pi_final))
