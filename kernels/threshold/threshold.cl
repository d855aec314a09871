/* Segmentation: mask[i] = data[i] > t ? 1 : 0. Four values per 16-byte load and 4-byte store; a grid-stride step
 * takes vectors i and i + stride, so two loads are in flight (on GPUs the host's grid is 16 blocks of 256 per
 * compute unit: at 2048^2 one step per work-item; on PoCL one vector per work-item, the second load repeats the
 * first); the last n % 4 values by the first work-items, one each. restrict: the stores cannot alias the loads, so
 * the second load may go before the first store, and the read-only load path is allowed. */
#define THR_MASK4(x) convert_uchar4(-((x) > t)) /* a vector comparison gives -1 for true */

__kernel void threshold_f32(__global const float *restrict data, __global uchar *restrict mask, ulong n, float t)
{
    const ulong nv = n >> 2, stride = get_global_size(0);
    __global const float4 *data4 = (__global const float4 *)data; /* whole buffers: aligned for vector access */
    __global uchar4 *mask4 = (__global uchar4 *)mask;
    for (ulong i = get_global_id(0); i < nv; i += 2 * stride) {
        const ulong i2 = i + stride;
        const bool two = i2 < nv;
        const float4 a = data4[i], b = data4[two ? i2 : i]; /* both loads unconditional: both in flight */
        mask4[i] = THR_MASK4(a);
        if (two) mask4[i2] = THR_MASK4(b);
    }
    for (ulong j = (nv << 2) + get_global_id(0); j < n; j += stride) mask[j] = data[j] > t ? 1 : 0;
}
