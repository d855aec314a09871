/* libOpenCL loaded at run time, so gpuws starts on machines without an ICD loader. */
#ifndef GPUWS_OCL_LOADER_H
#define GPUWS_OCL_LOADER_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>

#define OCL_FUNCS(X)                                                                                                   \
    X(clGetPlatformIDs)                                                                                                \
    X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) X(clReleaseContext)                   \
        X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer) X(clReleaseMemObject)                       \
            X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer)               \
                X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject) X(clCreateProgramWithSource)                          \
                    X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo) X(clGetProgramInfo)        \
                        X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clGetKernelInfo)  \
                            X(clGetKernelArgInfo) X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) X(clFinish)    \
                                X(clFlush) X(clEnqueueMarkerWithWaitList) X(clWaitForEvents)                           \
                                    X(clGetEventProfilingInfo) X(clReleaseEvent) X(clGetEventInfo)

typedef struct ocl_api {
#define OCL_DECLARE(fn) __typeof__(&fn) fn;
    OCL_FUNCS(OCL_DECLARE)
#undef OCL_DECLARE
} ocl_api;

/* The table, valid after ocl_load() returned true. */
extern ocl_api ocl;
/* Loads the library once (GPUWS_OPENCL_LIBRARY overrides the name libOpenCL.so.1); false with a reason. */
bool ocl_load(char *reason, size_t n);
/* "CL_INVALID_WORK_GROUP_SIZE" for -54. */
const char *ocl_error_name(cl_int err);

#endif
