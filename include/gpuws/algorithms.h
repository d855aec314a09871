/* gpuws algorithms: the workshop's computations on device buffers, the same call on every backend.
 *
 * Conventions for every function here:
 * - stream NULL means the context's default stream; the call is asynchronous on GPU backends (results are
 *   ready after gpuws_stream_synchronize) unless its comment says it returns a host value.
 * - Buffers must be live and belong to the stream's context; sizes are checked against element counts.
 * - A stream is used by one thread at a time (docs/threads.md). Each call claims its stream while it runs: a call
 *   on a stream that a call on another thread holds fails at once with GPUWS_ERR_INVALID_ARGUMENT ("stream ... is
 *   in use by another thread") and changes nothing. Calls that take a context use its default stream.
 * - On any error nothing has been enqueued and no output has been written. */
#ifndef GPUWS_ALGORITHMS_H
#define GPUWS_ALGORITHMS_H

#include "../gpuws.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpuws_dtype {
    GPUWS_F32 = 0,
    GPUWS_F64 = 1,
    GPUWS_I32 = 2,
    GPUWS_U32 = 3,
    GPUWS_I16 = 4,
    GPUWS_U8 = 5,
    GPUWS_I64 = 6,
} gpuws_dtype;

/* Bytes per element; 0 for a value outside the enum. */
GPUWS_API size_t gpuws_dtype_size(gpuws_dtype dtype);
/* "f32", "f64", ...; "?" for a value outside the enum. */
GPUWS_API const char *gpuws_dtype_name(gpuws_dtype dtype);

#ifdef __cplusplus
}
#endif

#include "algorithms/vector_add.h"
#include "algorithms/reduce.h"
#include "algorithms/convolve.h"
#include "algorithms/sources.h"
#include "algorithms/primes.h"
#include "algorithms/ufunc.h"
#include "algorithms/monte_carlo_pi.h"
#include "algorithms/histogram.h"
#include "algorithms/matmul.h"
#include "algorithms/transpose.h"
#include "algorithms/l2_norm.h"
#include "algorithms/extract.h"
#include "algorithms/aperture.h"

#endif
