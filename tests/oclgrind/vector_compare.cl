/* The negated vector comparison -(x > t) is 1 where x > t (a vector comparison gives -1 for true). Optimised, clang
 * folds the `sext` and the negation into `zext <4 x i1> %cmp to <4 x i32>`, which Oclgrind 21.10 evaluates to 255,
 * not 1, in the true lanes (unoptimised, sext then sub, it gives 1). threshold.cl builds its mask this way. */
__kernel void neg_cmp(__global const float4 *x, __global int4 *r, float t)
{
    r[0] = -(x[0] > t);
}
