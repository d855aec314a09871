// out = inᵀ for a rows×cols row-major matrix, element by element (bit moves: one kernel per element size).
// A block of 32×8 threads moves a 32×32 tile: each thread reads 4 elements of a tile row (a warp reads 32
// consecutive elements of one row of `in`), the tile goes through shared memory, and each thread writes 4
// elements of a row of `out` (a warp writes 32 consecutive elements). The tile's rows are padded by one element so
// that the column-wise reads from shared memory fall in 32 different banks. Any rows, cols: edges are guarded.
#include "../common/gpuws_cuda.cuh"
#include "transpose_layout.h"

namespace
{

constexpr unsigned TILE = TRANSPOSE_TILE,
                   ROWS = TRANSPOSE_ROWS; // block = TILE × ROWS threads, TILE / ROWS elements each

template <typename T>
__device__ void transpose(const T *__restrict__ in, T *__restrict__ out, unsigned rows, unsigned cols)
{
    __shared__ T tile[TILE][TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned x0 = blockIdx.x * TILE, tiles_y = (rows + TILE - 1) / TILE;
    // y loops when rows need more tiles than the grid's y limit (65535).
    for (unsigned by = blockIdx.y; by < tiles_y; by += gridDim.y) {
        const unsigned y0 = by * TILE;
        const unsigned x = x0 + tx;
#pragma unroll
        for (unsigned j = 0; j < TILE; j += ROWS) {
            const unsigned y = y0 + ty + j;
            if (x < cols && y < rows) tile[ty + j][tx] = in[(size_t)y * cols + x];
        }
        __syncthreads();
        const unsigned ox = y0 + tx; // column of out = row of in
#pragma unroll
        for (unsigned j = 0; j < TILE; j += ROWS) {
            const unsigned oy = x0 + ty + j; // row of out = column of in
            if (ox < rows && oy < cols) out[(size_t)oy * rows + ox] = tile[tx][ty + j];
        }
        __syncthreads(); // the next tile overwrites this one
    }
}

} // namespace

// Launched with block (32, 8) and grid (ceil(cols / 32), min(ceil(rows / 32), 65535)): see transpose.c.
extern "C" __global__ void transpose_b32(const unsigned *in, unsigned *out, unsigned rows, unsigned cols)
{
    transpose(in, out, rows, cols);
}
extern "C" __global__ void transpose_b64(const unsigned long long *in, unsigned long long *out, unsigned rows,
                                         unsigned cols)
{
    transpose(in, out, rows, cols);
}

GPUWS_CUDA_KERNELS(transpose, GPUWS_CUDA_KERNEL(transpose_b32), GPUWS_CUDA_KERNEL(transpose_b64))
