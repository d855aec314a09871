/* What the bench/large programs share: the clock, the order of their timings, stopping on an error. */
#ifndef GPUWS_BENCH_LARGE_SUPPORT_H
#define GPUWS_BENCH_LARGE_SUPPORT_H

#include "gpuws.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The program's name in its messages. */
#ifndef LARGE_PROGRAM
#error "define LARGE_PROGRAM before including large_support.h"
#endif

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* qsort's order of doubles. */
static inline int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* splitmix64's finaliser: the skies' pseudo-random bits by pixel index, the same whichever process makes them. */
static inline uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Stops the program with the library's message when st is an error. */
static inline void check(gpuws_status st, const char *what)
{
    if (!st) return;
    fprintf(stderr, "%s: %s: %s\n", LARGE_PROGRAM, what, gpuws_last_error());
    exit(1);
}

/* A context on the backend named (cuda, opencl, cpu). */
static inline gpuws_context *open_backend(const char *backend)
{
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = backend;
    gpuws_context *ctx;
    check(gpuws_context_create(&ctx, &co), "context");
    return ctx;
}

static inline void *must_alloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "%s: no host memory for %zu bytes\n", LARGE_PROGRAM, bytes);
        exit(1);
    }
    return p;
}

#endif
