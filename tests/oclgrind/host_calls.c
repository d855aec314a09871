/* Two faults of Oclgrind 21.10's uninitialised-value check that need host calls to show, so oclgrind-kernel (whose
 * buffers are only ever written) cannot. Run with Oclgrind as the only OpenCL platform and OCLGRIND_UNINITIALIZED=1:
 *
 *   host_calls fill | write   The check does not see clEnqueueFillBuffer. Four words are zeroed, then
 *                             atomic_cmpxchg(acc + i, 0, 1) runs on each: after a fill the check reports the
 *                             result as uninitialised; after clEnqueueWriteBuffer of the same zeros it does not.
 *                             Prints "fill: 1 1 1 1" (or "write: ..."): each 1 is a swap that found its zero.
 *   host_calls grow | same    A released buffer's number goes to the next buffer created, and the check then
 *                             misses the new buffer's stores past the old one's size: `put` fills a 4096-byte buffer, which is released; `put`
 *                             then writes 4096 values (32 KiB) into a new buffer and `get` reads them back, and
 *                             reads of values past the old 4096 bytes are reported. When the released buffer was
 *                             as large (same: 40000 bytes) nothing is. Prints "grow: 4096 of 4096 values read
 *                             back" (or "same: ..."): every value came back right.
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

static cl_mem buffer(size_t bytes)
{
    cl_int e;
    return clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
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
    cl_mem acc = buffer(sizeof zero), out = buffer(sizeof zero);
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

/* A buffer of `first` bytes, written by a kernel and released, then one of 4096 values (32 KiB) that `put` fills and
 * `get` reads back: the new buffer takes the released one's number. */
static int reused(size_t first)
{
    const cl_uint n = 4096;
    cl_mem old = buffer(first), eb, out = buffer(sizeof(cl_uint));
    if (run("put", old, NULL, NULL, first / 8)) return 1;
    clFinish(q);
    clReleaseMemObject(old);
    eb = buffer(n * sizeof(cl_long));
    cl_uint count = 0;
    if (run("put", eb, NULL, NULL, n) || run("get", eb, out, &n, 1) ||
        clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof count, &count, 0, NULL, NULL) != CL_SUCCESS)
        return 1;
    printf("%s: %u of %u values read back\n", first < n * sizeof(cl_long) ? "grow" : "same", count, n);
    clReleaseMemObject(out);
    clReleaseMemObject(eb);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *modes[] = { "fill", "write", "grow", "same" };
    int mode = -1;
    for (int i = 0; argc == 2 && i < 4; i++)
        if (strcmp(argv[1], modes[i]) == 0) mode = i;
    if (mode < 0) {
        fprintf(stderr, "usage: %s fill|write|grow|same\n", argv[0]);
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
    const int rc = mode < 2 ? fill_or_write(mode == 0) : reused(mode == 2 ? 4096 : 40000);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return rc;
}
