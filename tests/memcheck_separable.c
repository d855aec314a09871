/* Separable convolution with factors longer than a block of taps reads nothing outside its buffers: run by ctest
 * under valgrind (memcheck_separable_opencl), on an OpenCL CPU device (PoCL), whose kernels read host memory that
 * valgrind watches. A column pass that reads past the end of the row sums for such factors crashes PoCL 5 only now
 * and then; valgrind reports it on every run.
 *
 * The case is test_convolve2d_separable's long-factor one: kh = 270 and kw = 300 taps (a whole block of 256 and a
 * partial one, kh longer than the image) on a 40 x 600 image, mode same, boundary symm; the tiled pair and the direct
 * pair (the knob convolve_path), f32 and f64; each result also within rounding of the CPU backend's.
 * Exit 0: all agree (and, under valgrind, nothing was read out of bounds: valgrind's --error-exitcode says so);
 * 1: a wrong result or a failed call, or no OpenCL CPU device while GPUWS_REQUIRE names opencl and
 * GPUWS_OPENCL_PLATFORM does not narrow the platforms (CI: PoCL must be there); 77 (ctest: skipped): no OpenCL CPU
 * device otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "gpuws.h"
#include "gpuws/algorithms.h"
#include "core/tuning.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 40, W = 600, KH = 270, KW = 300 };

static unsigned long long state = 12345;
static double uniform(void) /* in [-1, 1) */
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(state >> 11) / 4503599627370496.0 - 1.0;
}

static bool required(const char *name)
{
    const char *r = getenv("GPUWS_REQUIRE");
    for (const char *p = r; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
        if (strcspn(p, ",") == strlen(name) && !strncmp(p, name, strlen(name))) return true;
    return false;
}

/* gpuws_convolve2d_separable of (img, col, row) on ctx as doubles into out (OH x OW); 0 on success */
static int run(gpuws_context *ctx, gpuws_dtype dt, const double *img, const double *col, const double *row, double *out,
               size_t *n_out)
{
    const size_t es = gpuws_dtype_size(dt), len[3] = { (size_t)H * W, KH, KW };
    const double *src[3] = { img, col, row };
    gpuws_buffer *in[3] = { NULL, NULL, NULL }, *bo = NULL;
    gpuws_convolve2d_options opt = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    opt.mode = GPUWS_CONVOLVE_SAME, opt.boundary = GPUWS_BOUNDARY_SYMM;
    size_t oh = 0, ow = 0;
    void *h = malloc((size_t)H * W * sizeof(double));
    int rc = 1;
    if (!h || gpuws_convolve2d_output_shape(H, W, KH, KW, opt.mode, &oh, &ow)) goto done;
    for (int b = 0; b < 3; b++) {
        for (size_t i = 0; i < len[b]; i++) {
            if (dt == GPUWS_F32) ((float *)h)[i] = (float)src[b][i];
            else ((double *)h)[i] = src[b][i];
        }
        if (gpuws_buffer_create(ctx, len[b] * es, &in[b]) || gpuws_buffer_write(in[b], 0, h, len[b] * es)) goto done;
    }
    if (gpuws_buffer_create(ctx, oh * ow * es, &bo) ||
        gpuws_convolve2d_separable(NULL, dt, in[0], H, W, 0, in[1], KH, in[2], KW, &opt, bo) ||
        gpuws_buffer_read(bo, 0, h, oh * ow * es))
        goto done;
    for (size_t i = 0; i < oh * ow; i++) out[i] = dt == GPUWS_F32 ? ((float *)h)[i] : ((double *)h)[i];
    *n_out = oh * ow;
    rc = 0;
done:
    if (rc) fprintf(stderr, "memcheck_separable: %s\n", gpuws_last_error());
    for (int b = 0; b < 3; b++) gpuws_buffer_destroy(in[b]);
    gpuws_buffer_destroy(bo);
    free(h);
    return rc;
}

int main(void)
{
    /* the first OpenCL CPU device (of the platforms GPUWS_OPENCL_PLATFORM names) */
    const char *platform = getenv("GPUWS_OPENCL_PLATFORM");
    size_t count = 0, dev = (size_t)-1;
    if (gpuws_device_count(GPUWS_BACKEND_OPENCL, platform, &count)) count = 0;
    for (size_t i = 0; i < count && dev == (size_t)-1; i++) {
        gpuws_device_info info;
        if (!gpuws_device_get_info(GPUWS_BACKEND_OPENCL, platform, i, &info) && info.type == GPUWS_DEVICE_CPU) dev = i;
    }
    if (dev == (size_t)-1) {
        const bool fail = required("opencl") && !platform;
        printf("memcheck_separable: no OpenCL CPU device (valgrind sees kernel memory only there)%s\n",
               fail ? ", and GPUWS_REQUIRE names opencl: failed" : ": skipped");
        return fail ? 1 : 77;
    }
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = "opencl", co.device = (int)dev, co.opencl_platform = platform;
    gpuws_context *ocl = NULL, *cpu = NULL;
    gpuws_context_options cc = GPUWS_CONTEXT_OPTIONS_INIT;
    cc.backend = "cpu";
    if (gpuws_context_create(&ocl, &co) || gpuws_context_create(&cpu, &cc)) {
        fprintf(stderr, "memcheck_separable: %s\n", gpuws_last_error());
        return 1;
    }
    double *img = malloc(sizeof(double) * H * W), *col = malloc(sizeof(double) * KH),
           *row = malloc(sizeof(double) * KW);
    double *got = malloc(sizeof(double) * H * W), *want = malloc(sizeof(double) * H * W);
    if (!img || !col || !row || !got || !want) return 1;
    for (int i = 0; i < H * W; i++) img[i] = uniform();
    for (int i = 0; i < KH; i++) col[i] = uniform();
    for (int i = 0; i < KW; i++) row[i] = uniform();
    int failures = 0;
    const char *paths[] = { "tiled", "direct" };
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 2; d++) {
            const gpuws_dtype dt = d ? GPUWS_F64 : GPUWS_F32;
            size_t n = 0, n2 = 0;
            if (gpuws__tuning_set(ocl, "convolve_path", paths[p]) || run(ocl, dt, img, col, row, got, &n) ||
                run(cpu, dt, img, col, row, want, &n2) || n != n2) {
                failures++;
                continue;
            }
            /* each output sums KH x KW terms of magnitude <= 1: both sides round each within a few ulps of that */
            const double tol = (dt == GPUWS_F32 ? 1e-6 : 1e-14) * KH * KW;
            size_t bad = 0;
            double worst = 0;
            for (size_t i = 0; i < n; i++) {
                const double e = fabs(got[i] - want[i]);
                bad += !(e <= tol);
                worst = e > worst ? e : worst;
            }
            printf("memcheck_separable: %s %s: %zu outputs, %zu differ from the CPU backend's by more than %.3g "
                   "(largest %.3g)\n",
                   paths[p], gpuws_dtype_name(dt), n, bad, tol, worst);
            failures += bad != 0;
        }
    free(img), free(col), free(row), free(got), free(want);
    gpuws_context_destroy(ocl);
    gpuws_context_destroy(cpu);
    return failures ? 1 : 0;
}
