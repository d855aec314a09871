#include "ocl_loader.h"

#include "../../core/backend_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

ocl_api ocl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_reason[256];

static void load_once(void)
{
    const char *name = gpuws__getenv("GPUWS_OPENCL_LIBRARY");
    if (!name) name = "libOpenCL.so.1";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_reason, sizeof load_reason, "no OpenCL ICD loader (%s)", dlerror());
        return;
    }
#define OCL_LOAD(fn)                                                                                                   \
    *(void **)(&ocl.fn) = dlsym(h, #fn);                                                                               \
    if (!ocl.fn) {                                                                                                     \
        snprintf(load_reason, sizeof load_reason, "%s lacks %s (OpenCL 1.2 needed)", name, #fn);                       \
        return;                                                                                                        \
    }
    OCL_FUNCS(OCL_LOAD)
#undef OCL_LOAD
    loaded = true; /* the handle stays open for the life of the process */
}

bool ocl_load(char *reason, size_t n)
{
    pthread_once(&once, load_once);
    if (!loaded) gpuws__strlcpy(reason, load_reason, n);
    return loaded;
}

const char *ocl_error_name(cl_int e)
{
    switch (e) {
#define E(x)                                                                                                           \
    case x: return #x;
        E(CL_SUCCESS)
        E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
            E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
                E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH) E(
                    CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
                    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(
                        CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
                        E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE) E(
                            CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
                            E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
                                E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
                                    E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
                                        E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
                                            E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
                                                E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
                                                    E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
                                                        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
                                                            E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(
                                                                CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT)
                                                                E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_MIP_LEVEL) E(
                                                                    CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
                                                                    E(CL_INVALID_IMAGE_DESCRIPTOR)
                                                                        E(CL_INVALID_COMPILER_OPTIONS)
                                                                            E(CL_INVALID_LINKER_OPTIONS)
                                                                                E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
                                                                                    case -1001
            : return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
}
