/* Both lid / lanes and lid % lanes of a run-time divisor: LLVM's DivRemPairs pass rewrites the remainder as
 * lid - (lid / lanes) * lanes and freezes the operands (`freeze i32`), an instruction Oclgrind 21.10's
 * uninitialised-value plugin does not handle. */
__kernel void divrem(__global uint *out, uint lanes)
{
    const uint lid = get_local_id(0);
    out[get_global_id(0)] = lid / lanes * 100 + lid % lanes;
}
