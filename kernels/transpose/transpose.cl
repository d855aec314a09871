/* out = inᵀ for a rows×cols row-major matrix: the same kernels as transpose.cu. A 32×8 work-group moves a 32×32
 * tile through local memory (rows padded by one element against bank conflicts); each work-item reads 4 elements
 * along a row of `in` and writes 4 along a row of `out`, so both sides are coalesced. Launched with local size
 * (32, 8); y loops when the NDRange is shorter than the tiles (NVIDIA's 65535 limit on groups in y). */

#include "transpose_layout.h"

#define TILE TRANSPOSE_TILE
#define ROWS TRANSPOSE_ROWS

#define DEFINE_TRANSPOSE(NAME, T)                                                                               \
    __kernel __attribute__((reqd_work_group_size(TILE, ROWS, 1))) void NAME(__global const T *in,              \
                                                                           __global T *out, uint rows,          \
                                                                           uint cols)                           \
    {                                                                                                           \
        __local T tile[TILE][TILE + 1];                                                                         \
        const uint tx = get_local_id(0), ty = get_local_id(1);                                                  \
        const uint x0 = get_group_id(0) * TILE, tiles_y = (rows + TILE - 1) / TILE;                             \
        for (uint by = get_group_id(1); by < tiles_y; by += get_num_groups(1)) {                                \
            const uint y0 = by * TILE, x = x0 + tx;                                                             \
            for (uint j = 0; j < TILE; j += ROWS) {                                                             \
                const uint y = y0 + ty + j;                                                                     \
                if (x < cols && y < rows) tile[ty + j][tx] = in[(ulong)y * cols + x];                           \
            }                                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
            const uint ox = y0 + tx;                                                                            \
            for (uint j = 0; j < TILE; j += ROWS) {                                                             \
                const uint oy = x0 + ty + j;                                                                    \
                if (ox < rows && oy < cols) out[(ulong)oy * rows + ox] = tile[tx][ty + j];                      \
            }                                                                                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
        }                                                                                                       \
    }

DEFINE_TRANSPOSE(transpose_b32, uint)
DEFINE_TRANSPOSE(transpose_b64, ulong)
