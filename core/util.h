/* Small string, arithmetic and environment utilities of core, the backends and the drivers. Never installed. */
#ifndef GPUWS_CORE_UTIL_H
#define GPUWS_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool gpuws__mul_overflows(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline bool gpuws__add_overflows(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }
int gpuws__strcasecmp(const char *a, const char *b);
/* Case-insensitive substring test; an empty or NULL needle matches everything. */
bool gpuws__icontains(const char *haystack, const char *needle);
void gpuws__strlcpy(char *dst, const char *src, size_t size);
/* 64-bit FNV-1a. */
uint64_t gpuws__fnv1a(const void *data, size_t n, uint64_t seed);
#define GPUWS__FNV_SEED 0xcbf29ce484222325ULL
/* getenv that treats an empty value as unset. */
const char *gpuws__getenv(const char *name);

#endif
