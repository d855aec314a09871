#include "transpose_ref.h"

/* 16×16 blocks, each written row by row: 16 strided reads stay within the ways of one L1 set even when the
 * stride is a large power of two (32 do not). */
enum { B = 16 };

#define TRANSPOSE_REF(in, out, rows, cols)                                                                             \
    for (size_t i0 = 0; i0 < rows; i0 += B)                                                                            \
        for (size_t j0 = 0; j0 < cols; j0 += B) {                                                                      \
            const size_t i1 = i0 + B < rows ? i0 + B : rows, j1 = j0 + B < cols ? j0 + B : cols;                       \
            for (size_t j = j0; j < j1; j++)                                                                           \
                for (size_t i = i0; i < i1; i++) out[j * rows + i] = in[i * cols + j];                                 \
        }

void gpuws_transpose_ref_b32(const uint32_t *in, uint32_t *out, size_t rows, size_t cols)
{
    TRANSPOSE_REF(in, out, rows, cols)
}
void gpuws_transpose_ref_b64(const uint64_t *in, uint64_t *out, size_t rows, size_t cols)
{
    TRANSPOSE_REF(in, out, rows, cols)
}
