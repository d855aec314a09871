/* Everything core offers backends/ (and core's own files): the handles' real types, the backend descriptor and
 * registry, errors and handles, host memory, the program cache, text utilities and the drivers' helpers. Never
 * installed. Algorithm drivers include kernels/common/driver.h instead, which brings only what they use. */
#ifndef GPUWS_BACKEND_IMPL_H
#define GPUWS_BACKEND_IMPL_H

#include "alloc.h"
#include "backend.h"
#include "cache.h"
#include "driver_support.h"
#include "errors.h"
#include "objects.h"
#include "text.h"
#include "util.h"

#endif
