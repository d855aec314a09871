/* Primes below n: out[i] = i if prime else 0, plus one count per work-group (summed by primes_count_final).
 * The same kernels, parameters and structure as primes.cu (see there for the design). Work-group sizes are powers
 * of two chosen by the host; n <= 2^31, so 32-bit arithmetic suffices. */

/* Sum over the work-group into red[0] (red: one uint per work-item). */
static uint group_sum(uint v, __local uint *red)
{
    const uint lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[0];
}

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
    const uint run = (nf + nt - 1) / nt, j0 = min(nf, tid * run), j1 = min(nf, j0 + run);
    uint all = 0, small = 0;
    for (uint j = j0; j < j1; j++) {
        all += flags[j];
        small += flags[j] && 2 * j + 1 <= threshold;
    }
    scan[tid] = all;
    scan[nt + tid] = small;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0) {
        uint a = 0, s = 0;
        for (uint t = 0; t < nt; t++) {
            const uint ca = scan[t], cs = scan[nt + t];
            scan[t] = a;
            scan[nt + t] = s;
            a += ca;
            s += cs;
        }
        base[0] = a;
        base[1] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint k = 2 + scan[tid];
    for (uint j = j0; j < j1; j++)
        if (flags[j]) base[k++] = 2 * j + 1;
}

__kernel void primes_sieve(__global int *out, __global uint *partials, __global const uint *base, uint n, uint seg_odd,
                           uint write_out, __local uchar *flags, __local uint *red)
{
    const uint tid = get_local_id(0), nt = get_local_size(0);
    const uint lo = get_group_id(0) * 2u * seg_odd, hi = lo + 2u * seg_odd;
    __local uint4 *f4 = (__local uint4 *)flags;
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
