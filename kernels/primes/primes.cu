// Primes below n: out[i] = i if prime else 0, plus one count per block (summed by primes_count_final).
//
// trial: the workshop's check_prime_gpu_kernel, one thread per number (the "before").
// fast:  a segmented sieve. primes_base (one block) sieves the odd numbers up to sqrt(n - 1) in shared memory and
//        writes the sorted odd base primes; primes_sieve gives each block one segment of 2*seg_odd numbers, keeps
//        a byte per odd number in shared memory, crosses off the multiples of every base prime (small primes with
//        the whole block striding over their multiples, large ones one prime per thread), then writes the segment
//        with 16-byte stores. All arithmetic fits in 32 bits because n <= 2^31.
#include "../common/gpuws_cuda.cuh"

// `scratch` mirrors the OpenCL kernel's __local reduction array; CUDA reduces with warp shuffles instead.
extern "C" __global__ void primes_trial(int *out, unsigned *partials, unsigned n, unsigned write_out,
                                        gpuws_local scratch)
{
    (void)scratch;
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned is_prime = 0;
    if (i < n) {
        const int num = (int)i;
        int result = num;
        for (int d = 2; d <= num / 2; d++) {
            if (num % d == 0) {
                result = 0;
                break;
            }
        }
        if (num < 2) result = 0; // gpuws: 0 and 1 are not prime
        if (write_out) out[i] = result;
        is_prime = result != 0;
    }
    const unsigned c = gpuws_block_sum(is_prime);
    if (threadIdx.x == 0) partials[blockIdx.x] = c;
}

// base[0] = number of odd primes <= limit, base[1] = how many of them are <= threshold, base[2..] = the primes,
// ascending. One block (a multiple of 32 threads); flags holds limit/2 + 1 bytes (flags[j] describes 2j + 1);
// scan needs 32 uints (the OpenCL kernel uses 2 * blockDim.x).
extern "C" __global__ void primes_base(unsigned *base, unsigned limit, unsigned threshold, gpuws_local flags_bytes,
                                       gpuws_local scan_bytes)
{
    (void)scan_bytes;
    GPUWS_SHARED_BYTES();
    unsigned char *flags = gpuws_smem;
    unsigned *scan = reinterpret_cast<unsigned *>(gpuws_smem + ((flags_bytes.bytes + 15) & ~15ull));
    const unsigned nf = limit / 2 + 1, tid = threadIdx.x, nt = blockDim.x;
    for (unsigned j = tid; j < nf; j += nt) flags[j] = j >= 1;
    __syncthreads();
    for (unsigned p = 3; p * p <= limit; p += 2) {
        const bool prime = flags[p / 2];
        if (prime)
            for (unsigned m = p * p + 2 * p * tid; m <= limit; m += 2 * p * nt) flags[m / 2] = 0;
        __syncthreads();
    }
    // ordered compaction: each thread owns a contiguous run of flags; an exclusive block scan of the per-thread
    // counts (both of them packed in one 32-bit word: at most 23171 flags each) gives every thread its first slot
    const unsigned run = (nf + nt - 1) / nt, j0 = min(nf, tid * run), j1 = min(nf, j0 + run);
    unsigned packed = 0; // all primes in the run (low 16 bits), those <= threshold (high 16 bits)
    for (unsigned j = j0; j < j1; j++) packed += flags[j] ? (2 * j + 1 <= threshold ? 0x10001u : 1u) : 0u;
    unsigned total;
    const unsigned before = gpuws_block_exclusive_scan(packed, scan, &total);
    if (tid == 0) {
        base[0] = total & 0xffffu;
        base[1] = total >> 16;
    }
    unsigned k = 2 + (before & 0xffffu);
    for (unsigned j = j0; j < j1; j++)
        if (flags[j]) base[k++] = 2 * j + 1;
}

extern "C" __global__ void primes_sieve(int *out, unsigned *partials, const unsigned *__restrict__ base, unsigned n,
                                        unsigned seg_odd, unsigned write_out, gpuws_local flags_bytes,
                                        gpuws_local scratch)
{
    (void)flags_bytes;
    (void)scratch;
    GPUWS_SHARED_BYTES();
    unsigned char *flags = gpuws_smem; // flags[j] describes lo + 2j + 1
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    const unsigned lo = blockIdx.x * 2u * seg_odd, hi = lo + 2u * seg_odd; // hi <= 2^31 + 2*seg_odd < 2^32
    uint4 *f4 = reinterpret_cast<uint4 *>(flags);
    for (unsigned j = tid; j < seg_odd / 16; j += nt)
        f4[j] = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
    __syncthreads();
    const unsigned nbase = base[0], nsmall = base[1];
    // small primes: many multiples each, the whole block strides over them
    for (unsigned k = 0; k < nsmall; k++) {
        const unsigned p = __ldg(base + 2 + k);
        if (p * p >= hi) break;
        unsigned m = max(p * p, (lo + p - 1) / p * p);
        if (!(m & 1u)) m += p;
        for (unsigned j = (m - lo - 1) / 2 + tid * p; j < seg_odd; j += nt * p) flags[j] = 0;
    }
    // large primes: a few multiples each, one prime per thread
    for (unsigned k = nsmall + tid; k < nbase; k += nt) {
        const unsigned p = __ldg(base + 2 + k);
        if (p * p >= hi) break;
        unsigned m = max(p * p, (lo + p - 1) / p * p);
        if (!(m & 1u)) m += p;
        for (unsigned j = (m - lo - 1) / 2; j < seg_odd; j += p) flags[j] = 0;
    }
    __syncthreads();
    // four numbers per thread and step: lo + 4q + {0, 1, 2, 3}; the odd ones are flags[2q] and flags[2q + 1]
    const unsigned short *f2 = reinterpret_cast<const unsigned short *>(flags);
    unsigned count = 0;
    for (unsigned q = tid; q < seg_odd / 2; q += nt) {
        const unsigned x = lo + 4 * q;
        if (x >= n) break;
        const unsigned short f = f2[q];
        const int v1 = (f & 0xffu) && x + 1 != 1u ? (int)(x + 1) : 0;
        const int v2 = x + 2 == 2u ? 2 : 0;
        const int v3 = (f >> 8) ? (int)(x + 3) : 0;
        if (x + 3 < n) {
            count += (v1 != 0) + (v2 != 0) + (v3 != 0);
            if (write_out) reinterpret_cast<int4 *>(out)[x / 4] = make_int4(0, v1, v2, v3);
        } else {
            const int v[4] = { 0, v1, v2, v3 };
            for (unsigned e = 0; e < 4 && x + e < n; e++) {
                count += v[e] != 0;
                if (write_out) out[x + e] = v[e];
            }
        }
    }
    const unsigned c = gpuws_block_sum(count);
    if (tid == 0) partials[blockIdx.x] = c;
}

extern "C" __global__ void primes_count_final(const unsigned *partials, unsigned long long *count, unsigned nparts,
                                              gpuws_local scratch)
{
    (void)scratch;
    unsigned long long s = 0;
    for (unsigned i = threadIdx.x; i < nparts; i += blockDim.x) s += partials[i];
    // 64-bit block sum through shared memory (one launch per call: no need for shuffles here)
    __shared__ unsigned long long sums[1024];
    sums[threadIdx.x] = s;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) sums[threadIdx.x] += sums[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) count[0] = sums[0];
}

GPUWS_CUDA_KERNELS(primes, GPUWS_CUDA_KERNEL(primes_trial), GPUWS_CUDA_KERNEL(primes_base),
                   GPUWS_CUDA_KERNEL(primes_sieve), GPUWS_CUDA_KERNEL(primes_count_final))
