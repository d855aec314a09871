/* A vector stored whole, built from four different scalars: Oclgrind 21.10 rewrites a store of an insertelement
 * chain (Program::scalarizeAggregateStore) into a store of the chain's first operand, `undef`, followed by one
 * scalar store per element, and its uninitialised-value plugin then reports the `store <4 x float> undef` that it
 * made itself, although every element of the vector is defined. */
__kernel void pack4(__global const float *in, __global float4 *out)
{
    const size_t i = get_global_id(0);
    const float x = in[i];
    out[i] = (float4)(x * 2.0f, x + 3.0f, (float)i, 1.0f / x);
}
