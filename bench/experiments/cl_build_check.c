/* Builds OpenCL sources the way gpuws's OpenCL backend does (kernels/common/prelude.cl in front, -cl-std=CL1.2
 * -cl-kernel-arg-info -DGPUWS_FP64=1 plus extra options) on the first device of a platform whose name contains
 * argv[1], then asks for the program binaries, as gpuws's program cache does (PoCL then compiles every kernel of
 * the program: a kernel its compiler cannot handle shows up here, not only when it runs). Prints one line per file.
 *   usage: cl_build_check PLATFORM PRELUDE "EXTRA OPTIONS" FILE.cl...   (exit 1 if any build fails) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 5) return fprintf(stderr, "usage: cl_build_check PLATFORM PRELUDE OPTIONS FILE.cl...\n"), 2;
    cl_platform_id plats[16];
    cl_uint np = 0;
    clGetPlatformIDs(16, plats, &np);
    cl_platform_id plat = NULL;
    for (cl_uint i = 0; i < np && !plat; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, argv[1])) plat = plats[i];
    }
    if (!plat) return fprintf(stderr, "no platform matching %s\n", argv[1]), 2;
    cl_device_id dev;
    cl_int e = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    char *prelude = slurp(argv[2]);
    if (!ctx || !prelude) return fprintf(stderr, "context or prelude failed\n"), 2;
    char options[1024];
    snprintf(options, sizeof options, "-cl-std=CL1.2 -cl-kernel-arg-info -DGPUWS_FP64=1 %s", argv[3]);
    int bad = 0;
    for (int a = 4; a < argc; a++) {
        char *src = slurp(argv[a]);
        if (!src) {
            printf("%s: cannot read\n", argv[a]);
            bad = 1;
            continue;
        }
        const char *parts[] = {prelude, "\n#line 1 \"file.cl\"\n", src};
        cl_program p = clCreateProgramWithSource(ctx, 3, parts, NULL, &e);
        e = clBuildProgram(p, 1, &dev, options, NULL, NULL);
        size_t bin_size = 0;
        cl_int eb = e == CL_SUCCESS ? clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, NULL) : e;
        unsigned char *bin = bin_size ? malloc(bin_size) : NULL;
        if (eb == CL_SUCCESS && bin) eb = clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
        cl_uint nk = 0;
        if (e == CL_SUCCESS) clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
        printf("%s: build %d, binaries %d (%zu bytes), %u kernels\n", argv[a], (int)e, (int)eb, bin_size, nk);
        if (e != CL_SUCCESS) {
            char log[4096] = "";
            clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
            printf("%s\n", log);
        }
        fflush(stdout);
        bad |= e != CL_SUCCESS || eb != CL_SUCCESS;
        free(bin);
        free(src);
        clReleaseProgram(p);
    }
    clReleaseContext(ctx);
    free(prelude);
    return bad;
}
