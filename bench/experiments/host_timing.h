/* Host-side timing helpers shared by the C experiments that drive the library (sources_steps.c,
 * conv2d_hostpath.c). Define _POSIX_C_SOURCE before including, for clock_gettime. */
#ifndef GPUWS_EXPERIMENTS_HOST_TIMING_H
#define GPUWS_EXPERIMENTS_HOST_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* The monotonic clock in microseconds. */
static inline double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

#endif
