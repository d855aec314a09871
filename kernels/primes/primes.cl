/* Primes below n: out[i] = i if prime else 0, plus one count per work-group (summed by primes_count_final).
 * The same kernels, parameters and structure as primes.cu (see there for the design). Work-group sizes are powers
 * of two chosen by the host; n <= 2^31, so 32-bit arithmetic suffices. */

GPUWS_GROUP_SUM(group_sum, uint)

/* The workshop's check_prime_gpu_kernel, one work-item per number. */
__kernel void primes_trial(__global int *out, __global uint *partials, uint n, uint write_out, __local uint *red)
{
    const uint i = get_global_id(0);
    uint is_prime = 0;
    if (i < n) {
        const int num = (int)i;
        int result = num;
        for (int d = 2; d <= num / 2; d++) {
            if (num % d == 0) {
                result = 0;
                break;
            }
        }
        if (num < 2) result = 0; /* gpuws: 0 and 1 are not prime */
        if (write_out) out[i] = result;
        is_prime = result != 0;
    }
    const uint c = group_sum(is_prime, red);
    if (get_local_id(0) == 0) partials[get_group_id(0)] = c;
}

/* base[0] = number of odd primes <= limit, base[1] = how many are <= threshold, base[2..] = the primes ascending. */
__kernel void primes_base(__global uint *base, uint limit, uint threshold, __local uchar *flags, __local uint *scan)
{
    const uint nf = limit / 2 + 1, tid = get_local_id(0), nt = get_local_size(0);
    for (uint j = tid; j < nf; j += nt) flags[j] = j >= 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint p = 3; p * p <= limit; p += 2) {
        const bool prime = flags[p / 2];
        if (prime)
            for (uint m = p * p + 2 * p * tid; m <= limit; m += 2 * p * nt) flags[m / 2] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* ordered compaction: each work-item owns a contiguous run of flags; an inclusive scan (Hillis-Steele) of the
     * per-item counts, both packed in one word (at most 23171 flags each), gives every item its first slot */
    const uint run = (nf + nt - 1) / nt, j0 = min(nf, tid * run), j1 = min(nf, j0 + run);
    uint packed = 0; /* all primes in the run (low 16 bits), those <= threshold (high 16 bits) */
    for (uint j = j0; j < j1; j++) packed += flags[j] ? (2 * j + 1 <= threshold ? 0x10001u : 1u) : 0u;
    scan[tid] = packed;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint o = 1; o < nt; o <<= 1) {
        const uint v = tid >= o ? scan[tid - o] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[tid] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tid == nt - 1) {
        base[0] = scan[tid] & 0xffffu;
        base[1] = scan[tid] >> 16;
    }
    uint k = 2 + ((scan[tid] - packed) & 0xffffu);
    for (uint j = j0; j < j1; j++)
        if (flags[j]) base[k++] = 2 * j + 1;
}

/* flags: seg_odd bytes, declared as uint4 so that the 16-byte initialising stores are aligned */
__kernel void primes_sieve(__global int *out, __global uint *partials, __global const uint *base, uint n, uint seg_odd,
                           uint write_out, __local uint4 *f4, __local uint *red)
{
    const uint tid = get_local_id(0), nt = get_local_size(0);
    const uint lo = get_group_id(0) * 2u * seg_odd, hi = lo + 2u * seg_odd;
    __local uchar *flags = (__local uchar *)f4;
    for (uint j = tid; j < seg_odd / 16; j += nt) f4[j] = (uint4)(0x01010101u);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint nbase = base[0], nsmall = base[1];
    for (uint k = 0; k < nsmall; k++) {
        const uint p = base[2 + k];
        if (p * p >= hi) break;
        uint m = max(p * p, (lo + p - 1) / p * p);
        if (!(m & 1u)) m += p;
        for (uint j = (m - lo - 1) / 2 + tid * p; j < seg_odd; j += nt * p) flags[j] = 0;
    }
    for (uint k = nsmall + tid; k < nbase; k += nt) {
        const uint p = base[2 + k];
        if (p * p >= hi) break;
        uint m = max(p * p, (lo + p - 1) / p * p);
        if (!(m & 1u)) m += p;
        for (uint j = (m - lo - 1) / 2; j < seg_odd; j += p) flags[j] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint count = 0;
    for (uint q = tid; q < seg_odd / 2; q += nt) {
        const uint x = lo + 4 * q;
        if (x >= n) break;
        const int v1 = flags[2 * q] && x + 1 != 1u ? (int)(x + 1) : 0;
        const int v2 = x + 2 == 2u ? 2 : 0;
        const int v3 = flags[2 * q + 1] ? (int)(x + 3) : 0;
        if (x + 3 < n) {
            count += (v1 != 0) + (v2 != 0) + (v3 != 0);
            if (write_out) vstore4((int4)(0, v1, v2, v3), x / 4, out);
        } else {
            const int v[4] = {0, v1, v2, v3};
            for (uint e = 0; e < 4 && x + e < n; e++) {
                count += v[e] != 0;
                if (write_out) out[x + e] = v[e];
            }
        }
    }
    const uint c = group_sum(count, red);
    if (tid == 0) partials[get_group_id(0)] = c;
}

__kernel void primes_count_final(__global const uint *partials, __global ulong *count, uint nparts, __local ulong *sums)
{
    const uint lid = get_local_id(0);
    ulong s = 0;
    for (uint i = lid; i < nparts; i += get_local_size(0)) s += partials[i];
    sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = get_local_size(0) / 2; w > 0; w >>= 1) {
        if (lid < w) sums[lid] += sums[lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) count[0] = sums[0];
}
