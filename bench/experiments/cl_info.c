/* Experiment helper (not part of the library): every OpenCL platform and device with its version and extensions, one
 * extension per line, so that a run log answers "does NVIDIA's driver have cl_khr_command_buffer?" and the like.
 * usage: cl_info   (the GPU machine has no clinfo) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_list(const char *what, char *s)
{
    printf("  %s:\n", what);
    for (char *t = strtok(s, " "); t; t = strtok(NULL, " ")) printf("    %s\n", t);
}

static char *info(cl_device_id d, cl_device_info k)
{
    size_t n = 0;
    if (clGetDeviceInfo(d, k, 0, NULL, &n) != CL_SUCCESS || !n) return NULL;
    char *s = calloc(n + 1, 1);
    if (s && clGetDeviceInfo(d, k, n, s, NULL) != CL_SUCCESS) s[0] = 0;
    return s;
}

int main(void)
{
    cl_platform_id p[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, p, &np) != CL_SUCCESS) {
        printf("no OpenCL platform\n");
        return 1;
    }
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char name[256] = "", ver[256] = "";
        clGetPlatformInfo(p[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        clGetPlatformInfo(p[i], CL_PLATFORM_VERSION, sizeof ver, ver, NULL);
        printf("platform %u: %s (%s)\n", i, name, ver);
        cl_device_id d[8];
        cl_uint nd = 0;
        if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, 8, d, &nd) != CL_SUCCESS) continue;
        for (cl_uint j = 0; j < nd && j < 8; j++) {
            char *dn = info(d[j], CL_DEVICE_NAME), *dv = info(d[j], CL_DRIVER_VERSION),
                 *ext = info(d[j], CL_DEVICE_EXTENSIONS);
            printf(" device %u: %s, driver %s\n", j, dn ? dn : "?", dv ? dv : "?");
            if (ext) print_list("extensions", ext);
            free(dn), free(dv), free(ext);
        }
    }
    return 0;
}
