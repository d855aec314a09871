#ifndef GPUWS_TRANSPOSE_REF_H
#define GPUWS_TRANSPOSE_REF_H
#include <stddef.h>
#include <stdint.h>
/* out[j·rows + i] = in[i·cols + j]: the CPU backend's implementation and the tests' oracle (blocked in 16×16
 * tiles so both sides stay in cache). in and out must not overlap. */
void gpuws_transpose_ref_b32(const uint32_t *in, uint32_t *out, size_t rows, size_t cols);
void gpuws_transpose_ref_b64(const uint64_t *in, uint64_t *out, size_t rows, size_t cols);
#endif
