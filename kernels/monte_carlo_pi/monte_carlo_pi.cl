/* Monte Carlo pi: the same kernels, parameters and structure as monte_carlo_pi.cu. */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* x^2 + y^2 < 1 for x = (rx >> 8) * 2^-24, y = (ry >> 8) * 2^-24, exactly, in 64-bit integers. */
static uint inside(uint rx, uint ry)
{
    const ulong a = rx >> 8, b = ry >> 8;
    return a * a + b * b < (1ul << 48);
}

GPUWS_GROUP_SUM(group_sum, ulong)

/* Samples first..last (inclusive): Philox calls first/2..last/2; the two end calls may count one sample only. */
__kernel void monte_carlo_pi_partial(__global ulong *partials, ulong first, ulong last, uint key0, uint key1,
                                     __local ulong *red)
{
    const ulong jlast = last / 2;
    ulong hits = 0;
    for (ulong j = first / 2 + get_global_id(0); j <= jlast; j += get_global_size(0)) {
        uint c0 = (uint)j, c1 = (uint)(j >> 32), c2 = 0, c3 = 0, k0 = key0, k1 = key1;
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
        const uint a = 2 * j >= first ? inside(c0, c1) : 0u, b = 2 * j + 1 <= last ? inside(c2, c3) : 0u;
        hits += a + b;
    }
    const ulong total = group_sum(hits, red);
    if (get_local_id(0) == 0) partials[get_group_id(0)] = total;
}

__kernel void monte_carlo_pi_final(__global const ulong *partials, __global ulong *hits, uint count, __local ulong *red)
{
    ulong s = 0;
    for (uint i = get_local_id(0); i < count; i += get_local_size(0)) s += partials[i];
    s = group_sum(s, red);
    if (get_local_id(0) == 0) hits[0] = s;
}
