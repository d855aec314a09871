/* Shared by tests/test_convolve2d.c, test_convolve2d_separable.c and test_convolve1d.c: the targets every
 * convolution test runs on, the 2-D suites' problem, random data and host conversions. Targets: the CPU backend (the reference itself), and on CUDA and OpenCL both kernels, the tiled
 * one (what GPUs run) and the direct one (what CPU devices run, and the fallback), forced with the knob
 * convolve_path. */
#ifndef GPUWS_TEST_CONVOLVE_H
#define GPUWS_TEST_CONVOLVE_H

#include "support.h"

#include <stdio.h>
#include <stdlib.h>

/* Criterion passes parameters to other processes: no pointers in them. */
typedef enum { PATH_NONE, PATH_TILED, PATH_DIRECT } kernel_path;
static const char *const path_names[] = { "", "tiled", "direct" };

typedef struct {
    gpuws_backend_kind backend;
    kernel_path path; /* PATH_NONE on the CPU backend */
} target;

static const target targets[] = { { GPUWS_BACKEND_CPU, PATH_NONE },
                                  { GPUWS_BACKEND_OPENCL, PATH_TILED },
                                  { GPUWS_BACKEND_OPENCL, PATH_DIRECT },
                                  { GPUWS_BACKEND_CUDA, PATH_TILED },
                                  { GPUWS_BACKEND_CUDA, PATH_DIRECT } };
#define NTARGETS (sizeof targets / sizeof targets[0])

static gpuws_context *open_target(const target *t)
{
    gpuws_context *ctx = test_open(t->backend);
    if (t->path != PATH_NONE) test_tune(ctx, "convolve_path", path_names[t->path]);
    return ctx;
}

static const char *target_name(const target *t)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s%s%s", test_backend_name(t->backend), t->path ? "/" : "", path_names[t->path]);
    return buf;
}

static const char *mode_name(gpuws_convolve_mode m)
{
    return m == GPUWS_CONVOLVE_FULL ? "full" : m == GPUWS_CONVOLVE_SAME ? "same" : "valid";
}

/* n doubles rounded to dtype (malloc'd) */
static void *to_dtype(const double *x, size_t n, gpuws_dtype dt)
{
    void *p = malloc(n * gpuws_dtype_size(dt) + 8);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        if (dt == GPUWS_F32) ((float *)p)[i] = (float)x[i];
        else ((double *)p)[i] = x[i];
    }
    return p;
}

/* n values of dtype as doubles (malloc'd) */
static double *to_double(const void *p, size_t n, gpuws_dtype dt)
{
    double *x = malloc(n * sizeof *x + 8);
    cr_assert_not_null(x);
    for (size_t i = 0; i < n; i++) x[i] = dt == GPUWS_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
    return x;
}

/* A 2-D convolution problem of the 2-D suites: image h x w (row stride, 0 = w), kernel kh x kw, options. */
typedef struct {
    size_t h, w, stride, kh, kw;
    gpuws_convolve2d_options opt;
} problem;

static inline size_t image_elems(const problem *p) { return (p->h - 1) * (p->stride ? p->stride : p->w) + p->w; }

static inline const char *boundary_name(gpuws_convolve_boundary b)
{
    return b == GPUWS_BOUNDARY_FILL ? "fill" : b == GPUWS_BOUNDARY_WRAP ? "wrap" : "symm";
}

/* n random values in [-1, 1) (both signs; never all zero), malloc'd */
static inline double *random_values(size_t n, uint64_t seed)
{
    double *x = malloc(n * sizeof *x + 8);
    cr_assert_not_null(x);
    test_fill_uniform_f64(x, n, seed, -1.0, 1.0);
    return x;
}

#endif
