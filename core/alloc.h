/* Host memory of the library, counted and with fault injection. Never installed.
 *
 * Every host allocation of core, the CPU backend and the algorithm drivers goes through these (never plain
 * malloc/free), so tests can make the n-th one fail and can count what is still live. Pair them: memory from
 * gpuws__malloc/calloc/aligned_alloc/strdup is released with gpuws__free. */
#ifndef GPUWS_CORE_ALLOC_H
#define GPUWS_CORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *gpuws__malloc(size_t bytes);
void *gpuws__calloc(size_t count, size_t size);
/* realloc semantics: NULL p allocates; on failure NULL is returned and p is untouched. */
void *gpuws__realloc(void *p, size_t bytes);
void *gpuws__aligned_alloc(size_t alignment, size_t bytes); /* alignment a power of two */
char *gpuws__strdup(const char *s);
void gpuws__free(void *p);
/* Fault injection (tests; docs/reliability.md): the n-th allocation from now on fails (n >= 1); n <= 0 disarms.
 * GPUWS_FAULT_ALLOC=n in the environment arms it at the first allocation of the process and logs a warning when
 * it fires. Returns whether the previous countdown fired. */
bool gpuws__fault_alloc_countdown(long n);
/* How many allocations through the functions above failed on this thread so far: a caller that falls back where
 * the device lacks memory compares it before and after, so that a host allocation's failure is still reported. */
unsigned long gpuws__host_alloc_failures(void);
/* Allocations made through the functions above and not yet freed (process-wide). */
long gpuws__alloc_live(void);
/* Fault injection for the device's memory: the n-th buffer a backend would create from now on is refused as if the
 * device had no memory left (gpuws__fault_device_now, asked by core before the backend's allocation). Tests only. */
bool gpuws__fault_device_countdown(long n);
bool gpuws__fault_device_now(void);
/* A driver that meets GPUWS_ERR_OUT_OF_MEMORY from the device and goes on by a path that needs less device memory
 * says so here; the count (process-wide) lets the fault tests tell such a fallback from a failure swallowed. */
void gpuws__device_fallback(void);
unsigned long gpuws__device_fallbacks(void);

#endif
