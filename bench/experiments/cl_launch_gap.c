/* Experiment (not part of the library): what one kernel launch costs on an OpenCL platform, back to back in one
 * in-order queue, and which queue settings change it (issue 4: label's five launches run ~4-5 us apart on NVIDIA's
 * OpenCL, ~0.5 us apart on CUDA). usage: cl_launch_gap PLATFORM-SUBSTRING [launches]
 *
 * Per kernel (an empty one, and one of ~10 us of FMAs on every work-item) and per queue setting it enqueues N
 * launches, waits, and prints per launch: the host's wall time (clFinish before and after), the device span from
 * the first kernel's START to the last one's END (profiling queues), the kernels' own mean END - START and the mean
 * gap START(k+1) - END(k) (where every launch has an event). Settings:
 *   prof        queue with CL_QUEUE_PROFILING_ENABLE, events on the first and last launch only (gpuws's streams)
 *   prof-all    the same, an event on every launch (to see the gaps)
 *   prof-flush  the same as prof, clFlush after every launch
 *   noprof      queue without profiling: host wall time only
 * Then the timer's own floor, as gpuws's OpenCL events measure (END of one marker to START of the next, each marker
 * a 1-work-item kernel with an event, or END to END of plain clEnqueueMarkerWithWaitList markers where the platform
 * times them) with 0, 1 and 5 empty kernels between the markers: median of 50. Then the same interval around 5 spin
 * kernels of ~10 us, with clFlush after the first marker only (gpuws's streams) or after every kernel: if the
 * platform holds enqueued commands until a flush, the first interval also holds the host's enqueue time. Last, the
 * host's cost of one clSetKernelArg. Then a host round trip as label's driver makes one (a kernel, 4 bytes read back,
 * wait): host wall time and the timed interval of marker, kernel, read, wait, marker, for several ways to read and
 * wait. Last, on NVIDIA only: device-side timestamps (%globaltimer through inline PTX) written by one-work-item
 * kernels on a queue without profiling, as a cheaper timer: their resolution, and the interval they measure around 0,
 * 1 and 5 empty kernels and 5 spin/4 kernels. */
#define _POSIX_C_SOURCE 199309L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_check.h"
#include "host_timing.h"

static const char *src = "__kernel void empty(__global float *x) { }\n"
                         "__kernel void put(__global int *d, int v) { if (get_global_id(0) == 0) d[0] = v; }\n"
                         "__kernel void spin(__global float *x, int n) {\n"
                         "  float a = x[get_global_id(0)], b = 1.0001f;\n"
                         "  for (int i = 0; i < n; i++) { a = fma(a, b, 0.5f); b = fma(b, a, -0.25f); }\n"
                         "  x[get_global_id(0)] = a + b;\n"
                         "}\n";

static cl_ulong prof(cl_event e, cl_profiling_info what)
{
    cl_ulong t = 0;
    CHECK(clGetEventProfilingInfo(e, what, sizeof t, &t, NULL));
    return t;
}

/* mode: 0 prof, 1 prof-all, 2 prof-flush, 3 noprof */
static void run(cl_context c, cl_device_id d, cl_kernel k, size_t global, int mode, int n, const char *kname)
{
    static const char *names[] = {"prof", "prof-all", "prof-flush", "noprof"};
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(c, d, mode == 3 ? 0 : CL_QUEUE_PROFILING_ENABLE, &e);
    CHECK(e);
    cl_event *ev = calloc((size_t)n, sizeof *ev);
    size_t local = 256;
    for (int rep = 0; rep < 2; rep++) { /* the first round warms up */
        CHECK(clFinish(q));
        const double t0 = now_us();
        for (int i = 0; i < n; i++) {
            const int want = mode == 1 || (mode != 3 && (i == 0 || i == n - 1));
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, want ? &ev[i] : NULL));
            if (mode == 2) CHECK(clFlush(q));
        }
        CHECK(clFinish(q));
        const double wall = (now_us() - t0) / n;
        if (rep == 0) {
            for (int i = 0; i < n; i++)
                if (ev[i]) clReleaseEvent(ev[i]), ev[i] = NULL;
            continue;
        }
        double span = 0, own = 0, gap = 0;
        if (mode != 3) span = (double)(prof(ev[n - 1], CL_PROFILING_COMMAND_END) - prof(ev[0], CL_PROFILING_COMMAND_START)) * 1e-3 / n;
        if (mode == 1) {
            for (int i = 0; i < n; i++) own += (double)(prof(ev[i], CL_PROFILING_COMMAND_END) - prof(ev[i], CL_PROFILING_COMMAND_START)) * 1e-3;
            for (int i = 1; i < n; i++) gap += (double)(prof(ev[i], CL_PROFILING_COMMAND_START) - prof(ev[i - 1], CL_PROFILING_COMMAND_END)) * 1e-3;
            own /= n, gap /= n - 1;
        }
        printf("%-6s %-10s launches %4d  host wall %8.2f us/launch  device span %8.2f us/launch  kernel %8.2f us  gap %6.2f us\n",
               kname, names[mode], n, wall, span, own, gap);
        for (int i = 0; i < n; i++)
            if (ev[i]) clReleaseEvent(ev[i]), ev[i] = NULL;
    }
    free(ev);
    clReleaseCommandQueue(q);
}

/* plain: 1 = clEnqueueMarkerWithWaitList events (END to END), 0 = marker kernels (END to START) */
static void interval(cl_context c, cl_device_id d, cl_kernel marker, cl_kernel k, size_t global, int between, int plain,
                     int flush_each, const char *what)
{
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(c, d, CL_QUEUE_PROFILING_ENABLE, &e);
    CHECK(e);
    double t[50];
    size_t one = 1, local = 256;
    for (int rep = 0; rep < 50; rep++) {
        cl_event a, b;
        if (plain) CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &a));
        else CHECK(clEnqueueNDRangeKernel(q, marker, 1, NULL, &one, &one, 0, NULL, &a));
        clFlush(q);
        for (int i = 0; i < between; i++) {
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
            if (flush_each) clFlush(q);
        }
        if (plain) CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &b));
        else CHECK(clEnqueueNDRangeKernel(q, marker, 1, NULL, &one, &one, 0, NULL, &b));
        clFlush(q);
        CHECK(clWaitForEvents(1, &b));
        cl_ulong t0 = 0, t1 = 0;
        const cl_int e0 = clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
        const cl_int e1 = clGetEventProfilingInfo(b, plain ? CL_PROFILING_COMMAND_END : CL_PROFILING_COMMAND_START, sizeof t1, &t1, NULL);
        clReleaseEvent(a), clReleaseEvent(b);
        if (e0 != CL_SUCCESS || e1 != CL_SUCCESS || (t0 == 0 && t1 == 0)) {
            printf("interval %-14s %d %s kernels between%s: no profiling times (%d, %d)\n", plain ? "plain markers" : "marker kernels",
                   between, what, flush_each ? ", flush each" : "", (int)e0, (int)e1);
            clReleaseCommandQueue(q);
            return;
        }
        t[rep] = ((double)t1 - (double)t0) * 1e-3;
    }
    qsort(t, 50, sizeof *t, cmp_double);
    printf("interval %-14s %d %s kernels between%s: median %8.2f us, min %8.2f us\n", plain ? "plain markers" : "marker kernels",
           between, what, flush_each ? ", flush each" : "", 0.5 * (t[24] + t[25]), t[0]);
    clReleaseCommandQueue(q);
}


/* how: 0 non-blocking read + clFinish, 1 blocking read, 2 non-blocking read + clFlush + spin on its event,
 * 3 read into pinned host memory (mapped ALLOC_HOST_PTR) + clFinish, 4 non-blocking read + clWaitForEvents,
 * 5 blocking read into pinned host memory, 6 pinned read + clFlush + spin on its event, 7 the kernel writes the value
 * into the mapped ALLOC_HOST_PTR buffer itself (no read command) + clFinish, 8 the same + clFlush + spin on the
 * kernel's event. Every round trip's kernel writes a new value and the host checks it got that value. */
static void roundtrip(cl_context c, cl_device_id d, cl_kernel marker, cl_kernel k, cl_mem src, int how)
{
    static const char *names[] = {"read + clFinish", "blocking read", "read + flush + spin", "pinned read + clFinish",
                                  "read + clWaitForEvents", "blocking pinned read", "pinned read + flush + spin",
                                  "kernel->mapped + clFinish", "kernel->mapped + spin"};
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(c, d, CL_QUEUE_PROFILING_ENABLE, &e);
    CHECK(e);
    cl_mem pin = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 64, NULL, &e);
    CHECK(e);
    int *pinned = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 64, 0, NULL, NULL, &e);
    CHECK(e);
    const int direct = how >= 7;
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), direct ? &pin : &src));
    size_t global = 256, local = 256, one = 1;
    double wall[101], dev[101];
    int value = 0, wrong = 0;
    for (int rep = 0; rep < 101; rep++) {
        cl_event a, b, r = NULL;
        const int want = 1000 + rep * (how + 1);
        CHECK(clSetKernelArg(k, 1, sizeof want, &want));
        CHECK(clEnqueueNDRangeKernel(q, marker, 1, NULL, &one, &one, 0, NULL, &a));
        clFlush(q);
        const double t0 = now_us();
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, how == 8 ? &r : NULL));
        int *dst = how == 3 || how == 5 || how == 6 ? pinned : &value;
        if (!direct)
            CHECK(clEnqueueReadBuffer(q, src, how == 1 || how == 5 ? CL_TRUE : CL_FALSE, 0, sizeof(int), dst, 0, NULL,
                                      how == 2 || how == 4 || how == 6 ? &r : NULL));
        if (how == 0 || how == 3 || how == 7) CHECK(clFinish(q));
        if (how == 2 || how == 6 || how == 8) {
            clFlush(q);
            CHECK(wait_spin(r));
        }
        if (how == 4) CHECK(clWaitForEvents(1, &r));
        const int got = direct ? *(volatile int *)pinned : *dst;
        wall[rep] = now_us() - t0;
        wrong += got != want;
        CHECK(clEnqueueNDRangeKernel(q, marker, 1, NULL, &one, &one, 0, NULL, &b));
        clFlush(q);
        CHECK(clWaitForEvents(1, &b));
        dev[rep] = (double)(prof(b, CL_PROFILING_COMMAND_START) - prof(a, CL_PROFILING_COMMAND_END)) * 1e-3;
        clReleaseEvent(a), clReleaseEvent(b);
        if (r) clReleaseEvent(r);
    }
    qsort(wall, 101, sizeof *wall, cmp_double);
    qsort(dev, 101, sizeof *dev, cmp_double);
    printf("roundtrip %-27s host wall median %8.2f us (min %7.2f)   timed interval median %8.2f us (min %7.2f)"
           "   wrong values %d/101\n", names[how], wall[50], wall[0], dev[50], dev[0], wrong);
    clEnqueueUnmapMemObject(q, pin, pinned, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(pin);
    clReleaseCommandQueue(q);
}

static const char *gsrc =
    "__kernel void stamp(__global ulong *t, int i) {\n"
    "  ulong v; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(v)); t[i] = v;\n"
    "}\n"
    "__kernel void res(__global ulong *t) {\n"
    "  ulong prev, v, best = ~0ul, changes = 0; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(prev));\n"
    "  const ulong first = prev;\n"
    "  for (int k = 0; k < 100000; k++) {\n"
    "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(v));\n"
    "    if (v != prev) { changes++; if (v - prev < best) best = v - prev; prev = v; }\n"
    "  }\n"
    "  t[0] = best; t[1] = changes; t[2] = prev - first;\n"
    "}\n";

static void globaltimer(cl_context c, cl_device_id d, cl_kernel ke, cl_kernel ks, size_t global)
{
    cl_int e;
    cl_program p = clCreateProgramWithSource(c, 1, &gsrc, NULL, &e);
    CHECK(e);
    if (clBuildProgram(p, 1, &d, "", NULL, NULL) != CL_SUCCESS) {
        char log[4096] = {0};
        clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        printf("globaltimer: the program does not build here:\n%s\n", log);
        return;
    }
    cl_kernel kst = clCreateKernel(p, "stamp", &e), kres = clCreateKernel(p, "res", &e);
    CHECK(e);
    cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
    CHECK(e);
    cl_mem tb = clCreateBuffer(c, CL_MEM_READ_WRITE, 64, NULL, &e);
    CHECK(e);
    cl_ulong t[8] = {0};
    size_t one = 1, local = 256;
    CHECK(clSetKernelArg(kres, 0, sizeof tb, &tb));
    CHECK(clEnqueueNDRangeKernel(q, kres, 1, NULL, &one, &one, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, tb, CL_TRUE, 0, 3 * sizeof(cl_ulong), t, 0, NULL, NULL));
    printf("globaltimer: smallest step %llu ns, %llu changes over %llu ns of reads\n", (unsigned long long)t[0],
           (unsigned long long)t[1], (unsigned long long)t[2]);
    CHECK(clSetKernelArg(kst, 0, sizeof tb, &tb));
    static const int betweens[] = {0, 1, 5, 5};
    for (int m = 0; m < 4; m++) {
        cl_kernel k = m == 3 ? ks : ke;
        double dt[50];
        for (int rep = 0; rep < 50; rep++) {
            int i0 = 0, i1 = 1;
            CHECK(clSetKernelArg(kst, 1, sizeof i0, &i0));
            CHECK(clEnqueueNDRangeKernel(q, kst, 1, NULL, &one, &one, 0, NULL, NULL));
            clFlush(q);
            for (int i = 0; i < betweens[m]; i++) CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
            CHECK(clSetKernelArg(kst, 1, sizeof i1, &i1));
            CHECK(clEnqueueNDRangeKernel(q, kst, 1, NULL, &one, &one, 0, NULL, NULL));
            CHECK(clEnqueueReadBuffer(q, tb, CL_TRUE, 0, 2 * sizeof(cl_ulong), t, 0, NULL, NULL));
            dt[rep] = (double)(t[1] - t[0]) * 1e-3;
        }
        qsort(dt, 50, sizeof *dt, cmp_double);
        printf("interval globaltimer   %d %s kernels between: median %8.2f us, min %8.2f us\n", betweens[m],
               m == 3 ? "spin/4" : "empty", 0.5 * (dt[24] + dt[25]), dt[0]);
    }
    clReleaseMemObject(tb);
    clReleaseCommandQueue(q);
    clReleaseKernel(kst), clReleaseKernel(kres), clReleaseProgram(p);
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "NVIDIA";
    const int n = argc > 2 ? atoi(argv[2]) : 200;
    cl_platform_id ps[8];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(8, ps, &np));
    static const char *msrc = "__kernel void gpuws_marker(void) {}\n";
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = {0};
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strstr(name, want)) continue;
        cl_device_id d;
        CHECK(clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL));
        char dname[256] = {0};
        clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof dname, dname, NULL);
        printf("platform %s, device %s\n", name, dname);
        cl_int e;
        cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        CHECK(e);
        cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &e);
        CHECK(e);
        CHECK(clBuildProgram(p, 1, &d, "", NULL, NULL));
        const size_t global = 132 * 2048;
        cl_mem x = clCreateBuffer(c, CL_MEM_READ_WRITE, global * sizeof(float), NULL, &e);
        CHECK(e);
        cl_kernel ke = clCreateKernel(p, "empty", &e), ks = clCreateKernel(p, "spin", &e);
        CHECK(e);
        const int iters = argc > 3 ? atoi(argv[3]) : 2000;
        CHECK(clSetKernelArg(ke, 0, sizeof x, &x));
        CHECK(clSetKernelArg(ks, 0, sizeof x, &x));
        CHECK(clSetKernelArg(ks, 1, sizeof iters, &iters));
        for (int mode = 0; mode < 4; mode++) run(c, d, ke, global, mode, n, "empty");
        for (int mode = 0; mode < 4; mode++) run(c, d, ks, global, mode, n, "spin");
        cl_program mp = clCreateProgramWithSource(c, 1, &msrc, NULL, &e);
        CHECK(e);
        CHECK(clBuildProgram(mp, 1, &d, "", NULL, NULL));
        cl_kernel km = clCreateKernel(mp, "gpuws_marker", &e);
        CHECK(e);
        static const int betweens[] = {0, 1, 5};
        for (int plain = 1; plain >= 0; plain--)
            for (int i = 0; i < 3; i++) interval(c, d, km, ke, global, betweens[i], plain, 0, "empty");
        const int short_iters = iters / 4; /* ~10 us on the H100 */
        CHECK(clSetKernelArg(ks, 1, sizeof short_iters, &short_iters));
        interval(c, d, km, ks, global, 1, 0, 0, "spin/4");
        interval(c, d, km, ks, global, 5, 0, 0, "spin/4");
        interval(c, d, km, ks, global, 5, 0, 1, "spin/4");
        const double t0 = now_us();
        for (int i = 0; i < 10000; i++) CHECK(clSetKernelArg(ks, 1, sizeof short_iters, &short_iters));
        printf("clSetKernelArg: %.3f us per call (host)\n", (now_us() - t0) / 10000);
        cl_kernel kp = clCreateKernel(p, "put", &e);
        CHECK(e);
        for (int how = 0; how < 9; how++) roundtrip(c, d, km, kp, x, how);
        if (strstr(name, "NVIDIA")) globaltimer(c, d, ke, ks, global);
        return 0;
    }
    fprintf(stderr, "no platform matching '%s'\n", want);
    return 1;
}
