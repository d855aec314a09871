/* Two faults of Oclgrind 21.10's uninitialised-value check that need host calls to show, so oclgrind-kernel (whose
 * buffers are only ever written) cannot. Run with Oclgrind as the only OpenCL platform and OCLGRIND_UNINITIALIZED=1:
 *
 *   host_calls fill | write   The check does not see clEnqueueFillBuffer. Four words are zeroed, then
 *                             atomic_cmpxchg(acc + i, 0, 1) runs on each: after a fill the check reports the
 *                             result as uninitialised; after clEnqueueWriteBuffer of the same zeros it does not.
 *                             Prints "fill: 1 1 1 1" (or "write: ..."): each 1 is a swap that found its zero.
 *   host_calls map | plain    After a buffer mapped for reading and writing is unmapped and released, with other
 *                             buffers released after it and new ones created, the check loses part of the stores
 *                             a kernel makes into a later buffer: `put` writes e[0..257), `get` reads them back,
 *                             and reads of values `put` wrote are reported. Without the mapped buffer (plain)
 *                             nothing is. Prints "map: 257 of 257 values read back" (or "plain: ...").
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *source = "__kernel void cas(__global uint *acc, __global uint *out)\n"
                            "{\n"
                            "    const size_t i = get_global_id(0);\n"
                            "    out[i] = atomic_cmpxchg(acc + i, 0u, 1u) == 0u;\n"
                            "}\n"
                            "__kernel void put(__global long *e) { e[get_global_id(0)] = (long)get_global_id(0); }\n"
                            "__kernel void get(__global const long *e, __global uint *out, uint n)\n"
                            "{\n"
                            "    uint c = 0;\n"
                            "    for (uint i = 0; i < n; i++)\n"
                            "        if (e[i] == (long)i) c++;\n"
                            "    out[0] = c;\n"
                            "}\n";

static cl_context ctx;
static cl_command_queue q;
static cl_program prog;
static char zeros[65536];

static cl_mem buffer(size_t bytes, int write_zeros)
{
    cl_int e;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    if (m && write_zeros) clEnqueueWriteBuffer(q, m, CL_TRUE, 0, bytes, zeros, 0, NULL, NULL);
    return m;
}

static int run(const char *name, cl_mem a0, cl_mem a1, const cl_uint *a2, size_t global)
{
    cl_int e;
    cl_kernel k = clCreateKernel(prog, name, &e);
    if (k) e = clSetKernelArg(k, 0, sizeof a0, &a0);
    if (k && a1 && e == CL_SUCCESS) e = clSetKernelArg(k, 1, sizeof a1, &a1);
    if (k && a2 && e == CL_SUCCESS) e = clSetKernelArg(k, 2, sizeof *a2, a2);
    if (k && e == CL_SUCCESS) e = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (k) clReleaseKernel(k);
    return e == CL_SUCCESS ? 0 : (fprintf(stderr, "kernel %s failed (%d)\n", name, (int)e), 1);
}

static int fill_or_write(int fill)
{
    enum { N = 4 };
    const cl_uint zero[N] = { 0 };
    cl_mem acc = buffer(sizeof zero, 0), out = buffer(sizeof zero, 0);
    cl_int e = fill ? clEnqueueFillBuffer(q, acc, zero, sizeof zero[0], 0, sizeof zero, 0, NULL, NULL)
                    : clEnqueueWriteBuffer(q, acc, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL);
    cl_uint got[N] = { 0 };
    if (e != CL_SUCCESS || run("cas", acc, out, NULL, N) ||
        clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL) != CL_SUCCESS)
        return 1;
    printf("%s:", fill ? "fill" : "write");
    for (int i = 0; i < N; i++) printf(" %u", got[i]);
    printf("\n");
    clReleaseMemObject(out);
    clReleaseMemObject(acc);
    return 0;
}

static int released_map(int mapped)
{
    /* buffers that come and go before the one checked, as a library's earlier work leaves them */
    cl_mem a = buffer(16384, 1), b = buffer(1800, 1), c = buffer(50000, 0);
    if (mapped) {
        cl_int e;
        cl_mem pin = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 16384, NULL, &e);
        void *h =
            pin ? clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 16384, 0, NULL, NULL, &e) : NULL;
        if (!h) return fprintf(stderr, "mapping failed (%d)\n", (int)e), 1;
        memset(h, 1, 16384);
        clEnqueueUnmapMemObject(q, pin, h, 0, NULL, NULL);
        clFinish(q);
        clReleaseMemObject(pin);
    }
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    cl_mem x = buffer(20000, 1), p = buffer(4096, 0), eb = buffer(4096, 0), out = buffer(sizeof(cl_uint), 0);
    const cl_uint n = 257;
    cl_uint count = 0;
    if (run("put", eb, NULL, NULL, n) || run("get", eb, out, &n, 1) ||
        clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof count, &count, 0, NULL, NULL) != CL_SUCCESS)
        return 1;
    printf("%s: %u of %u values read back\n", mapped ? "map" : "plain", count, n);
    clReleaseMemObject(out);
    clReleaseMemObject(eb);
    clReleaseMemObject(p);
    clReleaseMemObject(x);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *modes[] = { "fill", "write", "map", "plain" };
    int mode = -1;
    for (int i = 0; argc == 2 && i < 4; i++)
        if (strcmp(argv[1], modes[i]) == 0) mode = i;
    if (mode < 0) {
        fprintf(stderr, "usage: %s fill|write|map|plain\n", argv[0]);
        return 2;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_int e = clGetPlatformIDs(1, &platform, NULL);
    if (e == CL_SUCCESS) e = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    if (e == CL_SUCCESS) ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    if (ctx) q = clCreateCommandQueue(ctx, device, 0, &e);
    if (q) prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &e);
    if (prog) e = clBuildProgram(prog, 1, &device, "", NULL, NULL);
    if (!prog || e != CL_SUCCESS) {
        fprintf(stderr, "OpenCL setup failed (%d)\n", (int)e);
        return 1;
    }
    const int rc = mode < 2 ? fill_or_write(mode == 0) : released_map(mode == 2);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return rc;
}
