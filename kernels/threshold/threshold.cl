/* Segmentation: mask[i] = data[i] > t ? 1 : 0. Four values per work-item (one 16-byte load, one 4-byte store);
 * the last n % 4 values by the first work-items, one each. */
__kernel void threshold_f32(__global const float *data, __global uchar *mask, ulong n, float t)
{
    const ulong nv = n >> 2, stride = get_global_size(0);
    __global const float4 *data4 = (__global const float4 *)data; /* whole buffers: aligned for vector access */
    __global uchar4 *mask4 = (__global uchar4 *)mask;
    for (ulong i = get_global_id(0); i < nv; i += stride)
        mask4[i] = convert_uchar4(-(data4[i] > t)); /* a vector comparison gives -1 for true */
    for (ulong j = (nv << 2) + get_global_id(0); j < n; j += stride) mask[j] = data[j] > t ? 1 : 0;
}
