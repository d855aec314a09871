/* c = a + b, the workshop's exercise 2. Grid-stride: the host caps the grid at a few blocks per compute unit. */

__kernel void vector_add_f32(__global const float *a, __global const float *b, __global float *c, ulong n)
{
    GPUWS_FOR_EACH(i, n) c[i] = a[i] + b[i];
}

#ifdef GPUWS_FP64
__kernel void vector_add_f64(__global const double *a, __global const double *b, __global double *c, ulong n)
{
    GPUWS_FOR_EACH(i, n) c[i] = a[i] + b[i];
}
#endif
