/* OpenCL helpers shared by the experiments that call OpenCL directly (cl_launch_gap.c, cl_roundtrip.c): a call
 * checked with exit on failure, and a wait that polls an event instead of blocking. Include after <CL/cl.h>. */
#ifndef GPUWS_EXPERIMENTS_CL_CHECK_H
#define GPUWS_EXPERIMENTS_CL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        cl_int e_ = (x);                                                                                               \
        if (e_ != CL_SUCCESS) {                                                                                        \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)e_);                                     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Polls e until it completes: CL_SUCCESS, the command's error status, or the query's error. */
static inline cl_int wait_spin(cl_event e)
{
    cl_int status = CL_QUEUED, err;
    while ((err = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL)) == CL_SUCCESS &&
           status > CL_COMPLETE) {
    }
    return err != CL_SUCCESS ? err : status < 0 ? status : CL_SUCCESS;
}

#endif
