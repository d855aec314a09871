/* What the CUDA backend's files share: cuda_backend.c (devices, memory, launches) and cuda_program.c (user
 * programs through NVRTC). */
#ifndef GPUWS_CUDA_INTERNAL_H
#define GPUWS_CUDA_INTERNAL_H

#include "../../core/backend_impl.h"

#include <cuda_runtime_api.h>

/* The context's device: make it current (cudaSetDevice) before every runtime call. */
int gpuws__cuda_device(const gpuws_context *ctx);
/* Clears a non-sticky error and sets "what: cudaErrorX (n): text" with the status that matches e. */
gpuws_status gpuws__cuda_fail(cudaError_t e, const char *what);
/* Makes k->impl (what the launcher and kernel_destroy take) for func, a __global__ function or a cudaKernel_t
 * cast to const void * (the runtime takes both), and sets k->info's limits from its attributes. */
gpuws_status gpuws__cuda_kernel_init(gpuws_kernel *k, const void *func, const struct cudaFuncAttributes *attr);

/* User programs (cuda_program.c), the backend descriptor's program_* members. */
gpuws_status gpuws__cuda_program_text(const gpuws_program *p, gpuws__text_place where, gpuws__strbuf *out);
gpuws_status gpuws__cuda_program_build(gpuws_program *p);
void gpuws__cuda_program_destroy(gpuws_program *p);
gpuws_status gpuws__cuda_program_kernel(gpuws_program *p, size_t index, gpuws_kernel *k);

/* Tests: the next NVRTC load tries only the library `name` (NULL: the usual sonames), so a name that does not
 * exist simulates a machine without NVRTC. Call it while no program is being built. */
void gpuws__cuda_nvrtc_library(const char *name);

#endif
