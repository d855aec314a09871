/* The CPU backend's user programs (cpu_program.c), for the backend descriptor in cpu_backend.c. */
#ifndef GPUWS_CPU_PROGRAM_H
#define GPUWS_CPU_PROGRAM_H

#include "../../core/backend_impl.h"

struct cpu_pool;

gpuws_status gpuws__cpu_program_text(const gpuws_program *p, gpuws__text_place where, gpuws__strbuf *b);
gpuws_status gpuws__cpu_program_build(gpuws_program *p);
void gpuws__cpu_program_destroy(gpuws_program *p);
gpuws_status gpuws__cpu_program_kernel(gpuws_program *p, size_t index, gpuws_kernel *k);
void gpuws__cpu_kernel_destroy(gpuws_kernel *k);
/* Runs the kernel's blocks on the context's pool (made on first use under pool_lock) and returns when all ran. */
gpuws_status gpuws__cpu_launch(struct cpu_pool **pool, pthread_mutex_t *pool_lock, gpuws_kernel *k,
                               const gpuws_launch_config *cfg, const gpuws_arg *args, size_t nargs);
void gpuws__cpu_pool_destroy(struct cpu_pool *pool);

#endif
