/* Experiment (not part of the library): the cheapest way for the host to get a few bytes a kernel wrote, on an
 * OpenCL platform (issue 4: label returns N, and NVIDIA's OpenCL takes ~19 us of host wall for a kernel plus a 4-byte
 * read against ~10 us for a kernel plus clFinish; cl_launch_gap.c, 2026-11-22).
 * usage: cl_roundtrip PLATFORM-SUBSTRING [noprof]   (noprof: a queue without CL_QUEUE_PROFILING_ENABLE; gpuws's
 *        streams have it, for their events' times)
 *
 * Every round trip enqueues a kernel that writes a new value (work-item 0 of 256) and ends with that value in the
 * host's hands; the host checks it. Host wall time from before the kernel's enqueue to the checked value (and the
 * enqueue of whatever must follow, such as an unmap), median and minimum of 101 after 10 warm-ups. Ways:
 *   read-blocking      device buffer, blocking clEnqueueReadBuffer into pinned host memory (gpuws's read_sync)
 *   read-spin          the same, non-blocking with an event, clFlush, poll the event (gpuws's read_start/finish)
 *   read-watch         the same, but the pinned word holds a sentinel before the read is enqueued and the host polls
 *                      the word (64 reads between event polls) until it changes: the value is used before the read is
 *                      reported complete, which the specification leaves undefined (measured, not adopted: NOTES)
 *   map-alloc          the kernel writes an ALLOC_HOST_PTR buffer; blocking clEnqueueMapBuffer, read, unmap
 *   map-alloc-spin     the same, non-blocking map with an event, clFlush, poll the event
 *   map-use            the kernel writes a USE_HOST_PTR buffer (4096-aligned host memory); blocking map, read, unmap
 *   use-direct         the same buffer; clFinish, then the host memory read without a map (undefined by the
 *                      specification: shows whether the platform writes the host memory itself, zero copy)
 *   svm-coarse         the kernel writes coarse-grained SVM; blocking clEnqueueSVMMap, read, clEnqueueSVMUnmap
 *   svm-fine           the kernel writes fine-grained SVM (where the device has it); clFinish, read
 *   finish-only        the kernel, clFinish, no value (the floor: what a wait alone costs)
 * A way the platform does not offer prints why and is skipped. Each way gets its own kernel object. */
#define _POSIX_C_SOURCE 200112L
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_timing.h"

#include "cl_check.h"

static const char *src = "__kernel void put(__global int *p, int v) { if (get_global_id(0) == 0) p[0] = v; }\n";

enum way { READ_BLOCKING, READ_SPIN, READ_WATCH, MAP_ALLOC, MAP_ALLOC_SPIN, MAP_USE, USE_DIRECT, SVM_COARSE, SVM_FINE,
           FINISH_ONLY, N_WAYS };
static const char *names[] = {"read-blocking", "read-spin",  "read-watch", "map-alloc",  "map-alloc-spin",
                              "map-use",       "use-direct", "svm-coarse", "svm-fine",   "finish-only"};


static void run(cl_context c, cl_device_id d, cl_command_queue q, cl_program prog, enum way w)
{
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(prog, "put", &e);
    CHECK(e);
    cl_mem dev = NULL, pin = NULL, buf = NULL;
    int *pinned = NULL, *svm = NULL;
    void *use = NULL;
    if (w == READ_BLOCKING || w == READ_SPIN || w == READ_WATCH || w == FINISH_ONLY) {
        dev = clCreateBuffer(c, CL_MEM_READ_WRITE, 64, NULL, &e);
        CHECK(e);
        pin = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 64, NULL, &e);
        CHECK(e);
        pinned = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 64, 0, NULL, NULL, &e);
        CHECK(e);
        CHECK(clSetKernelArg(k, 0, sizeof dev, &dev));
    } else if (w == MAP_ALLOC || w == MAP_ALLOC_SPIN) {
        buf = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 64, NULL, &e);
        CHECK(e);
        CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    } else if (w == MAP_USE || w == USE_DIRECT) {
        if (posix_memalign(&use, 4096, 4096)) exit(1);
        memset(use, 0, 4096);
        buf = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, 4096, use, &e);
        CHECK(e);
        CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    } else {
        cl_device_svm_capabilities caps = 0;
        if (clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS) caps = 0;
        const int fine = w == SVM_FINE;
        if (!(caps & (fine ? CL_DEVICE_SVM_FINE_GRAIN_BUFFER : CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))) {
            printf("%-15s skipped: CL_DEVICE_SVM_CAPABILITIES = 0x%llx\n", names[w], (unsigned long long)caps);
            clReleaseKernel(k);
            return;
        }
        svm = clSVMAlloc(c, CL_MEM_READ_WRITE | (fine ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0), 64, 0);
        if (!svm) {
            printf("%-15s skipped: clSVMAlloc failed\n", names[w]);
            clReleaseKernel(k);
            return;
        }
        CHECK(clSetKernelArgSVMPointer(k, 0, svm));
    }
    double wall[101];
    int wrong = 0;
    size_t global = 256, local = 256;
    for (int rep = -10; rep < 101; rep++) {
        const int want = 1000 + rep * 7 + (int)w;
        CHECK(clSetKernelArg(k, 1, sizeof want, &want));
        CHECK(clFinish(q));
        const double t0 = now_us();
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
        int got = want;
        cl_event ev = NULL;
        switch (w) {
        case READ_BLOCKING:
            CHECK(clEnqueueReadBuffer(q, dev, CL_TRUE, 0, sizeof(int), pinned, 0, NULL, NULL));
            got = *pinned;
            break;
        case READ_WATCH: {
            volatile int *word = pinned;
            *word = -1; /* the kernel's values are >= 0 */
            CHECK(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, sizeof(int), pinned, 0, NULL, &ev));
            CHECK(clFlush(q));
            cl_int status = CL_QUEUED;
            for (int i = 0; status > CL_COMPLETE && *word == -1; i++)
                if (i % 64 == 63) CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
            got = *word;
            break;
        }
        case READ_SPIN:
            CHECK(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, sizeof(int), pinned, 0, NULL, &ev));
            CHECK(clFlush(q));
            CHECK(wait_spin(ev));
            got = *pinned;
            break;
        case MAP_ALLOC:
        case MAP_ALLOC_SPIN:
        case MAP_USE: {
            const cl_bool block = w != MAP_ALLOC_SPIN;
            int *p = clEnqueueMapBuffer(q, buf, block, CL_MAP_READ, 0, sizeof(int), 0, NULL, block ? NULL : &ev, &e);
            CHECK(e);
            if (!block) {
                CHECK(clFlush(q));
                CHECK(wait_spin(ev));
            }
            got = *p;
            CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
            break;
        }
        case SVM_COARSE:
            CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, svm, sizeof(int), 0, NULL, NULL));
            got = *svm;
            CHECK(clEnqueueSVMUnmap(q, svm, 0, NULL, NULL));
            break;
        case SVM_FINE:
            CHECK(clFinish(q));
            got = *(volatile int *)svm;
            break;
        case USE_DIRECT:
            CHECK(clFinish(q));
            got = *(volatile int *)use;
            break;
        case FINISH_ONLY:
            CHECK(clFinish(q));
            break;
        case N_WAYS: break;
        }
        const double t = now_us() - t0;
        if (ev) clReleaseEvent(ev);
        if (rep < 0) continue;
        wall[rep] = t;
        wrong += got != want;
    }
    CHECK(clFinish(q));
    const double med = median(wall, 101);
    printf("%-15s host wall median %7.2f us, min %7.2f us, wrong values %d/101\n", names[w], med, wall[0], wrong);
    if (pinned) CHECK(clEnqueueUnmapMemObject(q, pin, pinned, 0, NULL, NULL));
    CHECK(clFinish(q));
    if (dev) clReleaseMemObject(dev);
    if (pin) clReleaseMemObject(pin);
    if (buf) clReleaseMemObject(buf);
    if (svm) clSVMFree(c, svm);
    free(use);
    clReleaseKernel(k);
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "NVIDIA";
    const int profiling = !(argc > 2 && !strcmp(argv[2], "noprof"));
    cl_platform_id ps[8];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(8, ps, &np));
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = {0}, dname[256] = {0};
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strstr(name, want)) continue;
        cl_device_id d;
        CHECK(clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL));
        clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof dname, dname, NULL);
        printf("platform %s, device %s\n", name, dname);
        cl_int e;
        cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        CHECK(e);
        const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, 0};
        cl_command_queue q = clCreateCommandQueueWithProperties(c, d, props, &e);
        CHECK(e);
        printf("queue %s profiling\n", profiling ? "with" : "without");
        cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &e);
        CHECK(e);
        CHECK(clBuildProgram(p, 1, &d, "", NULL, NULL));
        for (int round = 0; round < 2; round++)
            for (int w = 0; w < N_WAYS; w++) run(c, d, q, p, (enum way)w);
        clReleaseProgram(p);
        clReleaseCommandQueue(q);
        clReleaseContext(c);
        return 0;
    }
    fprintf(stderr, "no platform matching '%s'\n", want);
    return 1;
}
