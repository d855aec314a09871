/* The FMA-rate kernel behind `gpuws bench`'s compute ceiling. Internal: bench/ includes it; not installed.
 *
 * Thread t runs GPUWS_PEAK_CHAINS independent chains x <- x * a + b for `iters` steps each, all in registers, and
 * writes the sum of its chains to out[t]. Nothing is read from memory and one value per thread is written, so the
 * time is the device's fused multiply-add rate: 2 FLOP per FMA, GPUWS_PEAK_CHAINS * iters FMAs per thread.
 * The chains are independent so the FMA pipeline is full without waiting on the previous result; the result is
 * checked against the closed form (gpuws__peak_expected), so a compiler cannot drop the work. */
#ifndef GPUWS_PEAK_H
#define GPUWS_PEAK_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#define GPUWS_PEAK_CHAINS 8
/* iters must be a multiple of this (the kernels unroll the step loop by it). */
#define GPUWS_PEAK_UNROLL 16

/* Start value of lane l of chain j of thread t: 2 + (t mod 8)/4 + j/8 + l/64 (exact in f32; every chain starts away
 * from the fixed point, every lane differs so a compiler cannot compute one lane for all). */
double gpuws__peak_start(uint64_t t, int j, int lane);
/* The exact sum of thread t's chains (and lanes) after iters steps: Σ L + a^iters (x0 − L), L = b / (1 − a). */
double gpuws__peak_expected(uint64_t t, uint32_t iters, double a, double b, uint32_t lanes);
/* The largest |computed − exact| for one thread's sum when each step rounds (FMA: once; a*b+c: twice) in a format
 * of unit roundoff u. Needs 0 < a < 1 and b > 0. */
double gpuws__peak_error_bound(double u, double a, double b, uint32_t lanes);

/* Enqueues the kernel on s: out[t] for t < threads (dtype GPUWS_F32 or GPUWS_F64 elements). iters is a positive
 * multiple of GPUWS_PEAK_UNROLL; block is the threads per block on GPU backends (threads a multiple of it).
 * lanes 1: scalar chains (every backend); 2, 4, 8, 16: each chain an OpenCL vector of that width (OpenCL only, for
 * CPU devices, where explicit vectors are what reaches the SIMD units): GPUWS_PEAK_CHAINS * lanes * iters FMAs per
 * thread. On the CPU backend the scalar reference runs instead (the rate of plain C on one core). */
gpuws_status gpuws__peak_fma(gpuws_stream *s, gpuws_dtype dtype, size_t threads, uint32_t block, uint32_t iters,
                             uint32_t lanes, double a, double b, gpuws_buffer *out);

#endif
