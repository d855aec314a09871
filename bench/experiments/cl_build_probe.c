/* Experiment (not part of the library): builds OpenCL source files on one platform, each in a child process, and
 * says which ones the compiler accepts; for compiler crashes (PoCL 5's work-group compiler aborted on convolve1d.cl,
 * 2026-11-21, and on convolve2d.cl's separable kernels, 2026-11-22). Each file is built, its binaries are asked for
 * (as gpuws's program cache does: PoCL then compiles every kernel of the program, which is where the 2026-11-22 abort
 * happened), and every kernel is created and enqueued once.
 * usage: [PROBE_DUMP=FILE] cl_build_probe PLATFORM-SUBSTRING "OPTIONS" PRELUDE.cl FILE.cl...  (PROBE_DUMP: the last
 * file's program binary is written there, PTX on NVIDIA)
 * (gpuws's own options: "-cl-std=CL1.2 -cl-kernel-arg-info -DGPUWS_FP64=1" plus the driver's, e.g. -DGPUWS_CONV2D_SEP=1) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc(1, (size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = 0;
    fclose(f);
    return b;
}

static int build(const char *plat, const char *opts, const char *prelude, const char *file)
{
    cl_platform_id ps[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, ps, &np);
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = {0};
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strstr(name, plat)) continue;
        cl_device_id d;
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL) != CL_SUCCESS) return 3;
        cl_int e;
        cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        const char *src[2] = {slurp(prelude), slurp(file)};
        cl_program p = clCreateProgramWithSource(c, 2, src, NULL, &e);
        e = clBuildProgram(p, 1, &d, opts, NULL, NULL);
        if (e != CL_SUCCESS) {
            char log[4096] = {0};
            clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            fprintf(stderr, "%s: build error %d\n%.1500s\n", file, e, log);
            return 1;
        }
        /* the binaries, as the program cache asks for them */
        size_t bin_size = 0;
        if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, NULL) != CL_SUCCESS) return 5;
        unsigned char *bin = malloc(bin_size ? bin_size : 1);
        if (!bin || clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) return 5;
        fprintf(stderr, "  binaries: %zu bytes\n", bin_size);
        const char *dump = getenv("PROBE_DUMP"); /* a file for the binary (NVIDIA's: PTX, to count its loads) */
        FILE *df = dump ? fopen(dump, "wb") : NULL;
        if (df) {
            fwrite(bin, 1, bin_size, df);
            fclose(df);
        }
        free(bin);
        /* PoCL compiles the work-group functions when kernels are created */
        cl_kernel ks[32];
        cl_uint nk = 0;
        e = clCreateKernelsInProgram(p, 32, ks, &nk);
        if (e != CL_SUCCESS) return 2;
        /* ... and compiles them when they are first enqueued: each kernel once, work-group 256 (or its required
         * size), buffers for pointers, zeros for scalars (n = 0: the kernels do nothing) */
        cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
        cl_mem buf = clCreateBuffer(c, CL_MEM_READ_WRITE, 1 << 20, NULL, &e);
        for (cl_uint k = 0; k < nk; k++) {
            char kname[128] = {0};
            clGetKernelInfo(ks[k], CL_KERNEL_FUNCTION_NAME, sizeof kname, kname, NULL);
            cl_uint na = 0;
            clGetKernelInfo(ks[k], CL_KERNEL_NUM_ARGS, sizeof na, &na, NULL);
            for (cl_uint a = 0; a < na; a++) {
                char tn[64] = {0};
                cl_kernel_arg_address_qualifier aq = 0;
                clGetKernelArgInfo(ks[k], a, CL_KERNEL_ARG_TYPE_NAME, sizeof tn, tn, NULL);
                clGetKernelArgInfo(ks[k], a, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL);
                const unsigned long long zero = 0;
                if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) clSetKernelArg(ks[k], a, 4096, NULL);
                else if (strchr(tn, '*')) clSetKernelArg(ks[k], a, sizeof buf, &buf);
                else clSetKernelArg(ks[k], a, strstr(tn, "long") || strstr(tn, "double") ? 8 : 4, &zero);
            }
            size_t req[3] = {0};
            clGetKernelWorkGroupInfo(ks[k], d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof req, req, NULL);
            size_t local = req[0] ? req[0] : 256, global = local;
            fprintf(stderr, "  %s: enqueue\n", kname);
            e = clEnqueueNDRangeKernel(q, ks[k], 1, NULL, &global, &local, 0, NULL, NULL);
            if (e == CL_SUCCESS) e = clFinish(q);
            fprintf(stderr, "  %s: %d\n", kname, e);
        }
        return 0;
    }
    return 4;
}

int main(int argc, char **argv)
{
    if (argc < 5) return 2;
    for (int i = 4; i < argc; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(build(argv[1], argv[2], argv[3], argv[i]));
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st)) printf("%-40s CRASH (signal %d)\n", argv[i], WTERMSIG(st));
        else printf("%-40s %s (exit %d)\n", argv[i], WEXITSTATUS(st) == 0 ? "builds" : "fails", WEXITSTATUS(st));
        fflush(stdout);
    }
    return 0;
}
