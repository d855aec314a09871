/* Monte Carlo pi: the same kernels, parameters and structure as monte_carlo_pi.cu (see there). */

#include "philox_constants.h"

/* x^2 + y^2 < 1 for x = (rx >> 8) * 2^-24, y = (ry >> 8) * 2^-24, exactly, in 64-bit integers. */
static uint inside(uint rx, uint ry)
{
    const ulong a = rx >> 8, b = ry >> 8;
    return a * a + b * b < (1ul << 48);
}

/* The same test on the FP64 pipe where the device has one (exact: a^2 + b^2 < 2^49 is a double; see
 * gpuws__pi_inside_f64 in philox.h), leaving the integer multiplier to the Philox rounds. */
#ifdef GPUWS_FP64
static uint inside_fast(uint rx, uint ry)
{
    const double x = as_double(0x4330000000000000ul | (ulong)(rx >> 8)) - 4503599627370496.0;
    const double y = as_double(0x4330000000000000ul | (ulong)(ry >> 8)) - 4503599627370496.0;
    return fma(x, x, y * y) < 281474976710656.0;
}
#else
#define inside_fast inside
#endif

/* out = Philox4x32-10 of counter (j, j >> 32, 0, 0) under key (k0, k1) */
static uint4 philox(ulong j, uint k0, uint k1)
{
    uint c0 = (uint)j, c1 = (uint)(j >> 32), c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        const uint h0 = mul_hi(PHILOX_M0, c0), l0 = PHILOX_M0 * c0;
        const uint h1 = mul_hi(PHILOX_M1, c2), l1 = PHILOX_M1 * c2;
        c0 = h1 ^ c1 ^ k0;
        c1 = l1;
        c2 = h0 ^ c3 ^ k1;
        c3 = l0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return (uint4)(c0, c1, c2, c3);
}

GPUWS_GROUP_SUM(group_sum, ulong)

/* Philox calls jf..jl, both samples of each; two independent calls per step (jl = last / 2 < 2^63: no wrap). */
__kernel void monte_carlo_pi_partial(__global ulong *partials, ulong jf, ulong jl, uint key0, uint key1,
                                     __local ulong *red)
{
    const ulong stride = get_global_size(0);
    ulong j = jf + get_global_id(0), hits = 0;
    /* steps of two calls, counted in 32 bits for up to 2^29 steps at a time, as in the CUDA kernel */
    ulong steps = j + stride <= jl ? (jl - j - stride) / (2 * stride) + 1 : 0;
    while (steps) {
        const uint m = steps < (1u << 29) ? (uint)steps : (1u << 29);
        steps -= m;
        uint h = 0;
        for (uint k = 0; k < m; k++, j += 2 * stride) {
            const uint4 u = philox(j, key0, key1), v = philox(j + stride, key0, key1);
            h += inside_fast(u.s0, u.s1) + inside_fast(u.s2, u.s3) + inside_fast(v.s0, v.s1) + inside_fast(v.s2, v.s3);
        }
        hits += h;
    }
    if (j <= jl) {
        const uint4 u = philox(j, key0, key1);
        hits += inside_fast(u.s0, u.s1) + inside_fast(u.s2, u.s3);
    }
    const ulong total = group_sum(hits, red);
    if (get_local_id(0) == 0) partials[get_group_id(0)] = total;
}

/* hits[0] = the sum of the partials, less sample 2 jf when first is odd and sample 2 jl + 1 when last is even. */
__kernel void monte_carlo_pi_final(__global const ulong *partials, __global ulong *hits, uint count, ulong first,
                                   ulong last, uint key0, uint key1, __local ulong *red)
{
    ulong s = 0;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0)) s += partials[i];
    s = group_sum(s, red);
    if (get_local_id(0) == 0) {
        if (first & 1) {
            const uint4 u = philox(first / 2, key0, key1);
            s -= inside(u.s0, u.s1);
        }
        if (!(last & 1)) {
            const uint4 u = philox(last / 2, key0, key1);
            s -= inside(u.s2, u.s3);
        }
        hits[0] = s;
    }
}
