/* CUDA backend: cudart, linked statically, so a machine without the NVIDIA driver still runs the other
 * backends; here the backend then reports "unavailable: <reason>". Built-in kernels are compiled by nvcc into the
 * library and found by name in the tables the .cu files export (cuda_kernel.h); user programs are compiled at run
 * time by NVRTC (cuda_program.c). */
#include "cuda_internal.h"
#include "cuda_kernel.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Implemented in cuda_fill.cu: fills with a 2/4/8/16-byte pattern. */
cudaError_t gpuws__cuda_fill(void *dst, size_t n, const void *pattern, size_t psize, cudaStream_t s);

static gpuws_status cuda_status(cudaError_t e)
{
    switch (e) {
    case cudaErrorMemoryAllocation: return GPUWS_ERR_OUT_OF_MEMORY;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources: return GPUWS_ERR_LAUNCH_CONFIG;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction: return GPUWS_ERR_UNSUPPORTED;
    default: return GPUWS_ERR_DEVICE;
    }
}

static gpuws_status cuda_fail(cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear non-sticky errors so the context stays usable */
    return gpuws__error(cuda_status(e), "%s: %s (%d): %s", what, cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
}

gpuws_status gpuws__cuda_fail(cudaError_t e, const char *what) { return cuda_fail(e, what); }

#define CHECK_CU(call, ...)                                                                                            \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            char what_[256];                                                                                           \
            snprintf(what_, sizeof what_, __VA_ARGS__);                                                                \
            return cuda_fail(e_, what_);                                                                               \
        }                                                                                                              \
    } while (0)

/* ---- probing -------------------------------------------------------------------------------------------- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int ndev;
static char probe_reason[256];

static void probe(void)
{
    /* cudart would say "insufficient driver" when libcuda is missing; say what is missing instead. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(probe_reason, sizeof probe_reason, "no NVIDIA driver (%s)", dlerror());
        return;
    }
    dlclose(h);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(probe_reason, sizeof probe_reason, "cudaGetDeviceCount: %s (%d): %s", cudaGetErrorName(e), (int)e,
                 cudaGetErrorString(e));
        return;
    }
    if (n == 0) snprintf(probe_reason, sizeof probe_reason, "the NVIDIA driver reports no CUDA device");
    ndev = n;
}

static gpuws_status cuda_probe(char *reason, size_t n)
{
    pthread_once(&probe_once, probe);
    if (ndev == 0) {
        gpuws__strlcpy(reason, probe_reason, n);
        return GPUWS_ERR_BACKEND_UNAVAILABLE;
    }
    return GPUWS_OK;
}

static gpuws_status cuda_device_count(const char *filter, size_t *count)
{
    (void)filter;
    *count = (size_t)ndev;
    return GPUWS_OK;
}

static gpuws_status cuda_device_info(const char *filter, size_t index, gpuws_device_info *d)
{
    (void)filter;
    struct cudaDeviceProp p;
    CHECK_CU(cudaGetDeviceProperties(&p, (int)index), "cudaGetDeviceProperties(%zu)", index);
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    d->backend = GPUWS_BACKEND_CUDA;
    d->type = GPUWS_DEVICE_GPU;
    snprintf(d->name, sizeof d->name, "%s", p.name);
    gpuws__strlcpy(d->vendor, "NVIDIA Corporation", sizeof d->vendor);
    snprintf(d->platform, sizeof d->platform, "CUDA runtime %d.%d, sm_%d%d", rt / 1000, (rt % 1000) / 10, p.major,
             p.minor);
    snprintf(d->driver_version, sizeof d->driver_version, "CUDA driver %d.%d", drv / 1000, (drv % 1000) / 10);
    d->global_mem_bytes = p.totalGlobalMem;
    d->max_alloc_bytes = p.totalGlobalMem;
    d->compute_units = (uint32_t)p.multiProcessorCount;
    d->max_block_size = (uint32_t)p.maxThreadsPerBlock;
    d->max_grid_blocks = 1;
    for (int i = 0; i < 3; i++) {
        d->max_block_dims[i] = (uint32_t)p.maxThreadsDim[i];
        d->max_grid_dims[i] = (uint64_t)p.maxGridSize[i];
        if (__builtin_mul_overflow(d->max_grid_blocks, d->max_grid_dims[i], &d->max_grid_blocks))
            d->max_grid_blocks = UINT64_MAX;
    }
    d->shared_mem_bytes = p.sharedMemPerBlockOptin ? p.sharedMemPerBlockOptin : p.sharedMemPerBlock;
    d->shared_mem_per_unit = p.sharedMemPerMultiprocessor;
    d->warp_size = (uint32_t)p.warpSize;
    d->fp64 = 1;
    d->unified_memory = 0;
    return GPUWS_OK;
}

/* ---- contexts, streams, buffers ------------------------------------------------------------------------- */

typedef struct {
    int dev;
} cuda_ctx;

#define DEV(ctx) (((cuda_ctx *)(ctx)->impl)->dev)
int gpuws__cuda_device(const gpuws_context *ctx) { return DEV(ctx); }
/* The calling thread's current device must be the context's before every runtime call. */
#define SET_DEVICE(ctx) CHECK_CU(cudaSetDevice(DEV(ctx)), "cudaSetDevice(%d)", DEV(ctx))

static gpuws_status cuda_context_create(gpuws_context *ctx, const char *filter, size_t index)
{
    gpuws_status st = cuda_device_info(filter, index, &ctx->info);
    if (st) return st;
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a CUDA context");
    c->dev = (int)index;
    cudaError_t e = cudaSetDevice(c->dev);
    if (e == cudaSuccess) e = cudaFree(NULL); /* creates the primary context now, not inside a timed region */
    if (e != cudaSuccess) {
        free(c);
        return cuda_fail(e, "initialising the CUDA device");
    }
    ctx->impl = c;
    return GPUWS_OK;
}

static void cuda_context_destroy(gpuws_context *ctx) { free(ctx->impl); }

#define STREAM(s) ((cudaStream_t)(s)->impl)

static gpuws_status cuda_stream_create(gpuws_stream *s)
{
    SET_DEVICE(s->ctx);
    cudaStream_t cs;
    CHECK_CU(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), "cudaStreamCreate");
    s->impl = cs;
    return GPUWS_OK;
}

static void cuda_stream_destroy(gpuws_stream *s)
{
    cudaSetDevice(DEV(s->ctx));
    if (s->read_marker) cudaEventDestroy((cudaEvent_t)s->read_marker);
    s->read_marker = NULL;
    cudaStreamDestroy(STREAM(s));
}

static gpuws_status cuda_stream_synchronize(gpuws_stream *s)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaStreamSynchronize(STREAM(s)), "cudaStreamSynchronize");
    return GPUWS_OK;
}

static gpuws_status cuda_buffer_create(gpuws_buffer *b)
{
    SET_DEVICE(b->ctx);
    void *p = NULL;
    CHECK_CU(cudaMalloc(&p, b->size), "cudaMalloc of %zu bytes", b->size);
    b->impl = p;
    return GPUWS_OK;
}

static void cuda_buffer_destroy(gpuws_buffer *b)
{
    cudaSetDevice(DEV(b->ctx));
    cudaFree(b->impl);
}

#define DPTR(b, off) ((char *)(b)->impl + (off))

static gpuws_status cuda_write(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *src, size_t n, int blocking)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaMemcpyAsync(DPTR(b, off), src, n, cudaMemcpyHostToDevice, STREAM(s)), "writing %zu bytes", n);
    if (blocking) CHECK_CU(cudaStreamSynchronize(STREAM(s)), "writing %zu bytes", n);
    return GPUWS_OK;
}

static gpuws_status cuda_read(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n, int blocking)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaMemcpyAsync(dst, DPTR(b, off), n, cudaMemcpyDeviceToHost, STREAM(s)), "reading %zu bytes", n);
    if (blocking) CHECK_CU(cudaStreamSynchronize(STREAM(s)), "reading %zu bytes", n);
    return GPUWS_OK;
}

/* The token is an event recorded right after the copy (one per stream, made on first use, without timing). */
static gpuws_status cuda_read_start(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n,
                                    void **token)
{
    SET_DEVICE(s->ctx);
    if (!s->read_marker) {
        cudaEvent_t ev;
        CHECK_CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
        s->read_marker = ev;
    }
    CHECK_CU(cudaMemcpyAsync(dst, DPTR(b, off), n, cudaMemcpyDeviceToHost, STREAM(s)), "reading %zu bytes", n);
    CHECK_CU(cudaEventRecord((cudaEvent_t)s->read_marker, STREAM(s)), "cudaEventRecord");
    *token = s->read_marker;
    return GPUWS_OK;
}

static gpuws_status cuda_read_wait(gpuws_stream *s, void *token)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaEventSynchronize((cudaEvent_t)token), "waiting for a read");
    return GPUWS_OK;
}

static gpuws_status cuda_copy(gpuws_stream *s, gpuws_buffer *d, size_t doff, const gpuws_buffer *src, size_t soff,
                              size_t n)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaMemcpyAsync(DPTR(d, doff), DPTR(src, soff), n, cudaMemcpyDeviceToDevice, STREAM(s)),
             "copying %zu bytes", n);
    return GPUWS_OK;
}

static gpuws_status cuda_fill(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *pat, size_t ps, size_t n)
{
    SET_DEVICE(s->ctx);
    const unsigned char *p = pat;
    bool same = true;
    for (size_t i = 1; i < ps; i++) same = same && p[i] == p[0];
    if (same) CHECK_CU(cudaMemsetAsync(DPTR(b, off), p[0], n, STREAM(s)), "filling %zu bytes", n);
    else
        CHECK_CU(gpuws__cuda_fill(DPTR(b, off), n, pat, ps, STREAM(s)), "filling %zu bytes with a %zu-byte pattern", n,
                 ps);
    return GPUWS_OK;
}

static gpuws_status cuda_host_alloc(gpuws_context *ctx, size_t n, void **p)
{
    SET_DEVICE(ctx);
    CHECK_CU(cudaHostAlloc(p, n, cudaHostAllocPortable), "cudaHostAlloc of %zu bytes", n);
    return GPUWS_OK;
}

static void cuda_host_free(gpuws_context *ctx, void *p)
{
    cudaSetDevice(DEV(ctx));
    cudaFreeHost(p);
}

/* Pinned: host memory CUDA knows (cudaHostAlloc'd by any library, or registered), at both ends of the range. */
static bool cuda_host_pinned(gpuws_context *ctx, const void *p, size_t n)
{
    (void)ctx;
    const void *ends[2] = { p, (const char *)p + n - 1 };
    for (int i = 0; i < 2; i++) {
        struct cudaPointerAttributes a;
        if (cudaPointerGetAttributes(&a, ends[i]) != cudaSuccess) {
            cudaGetLastError(); /* not an error of the caller's next call */
            return false;
        }
        if (a.type != cudaMemoryTypeHost) return false;
    }
    return true;
}

/* ---- events --------------------------------------------------------------------------------------------- */

static gpuws_status cuda_event_create(gpuws_event *e)
{
    SET_DEVICE(e->ctx);
    cudaEvent_t ev;
    CHECK_CU(cudaEventCreate(&ev), "cudaEventCreate");
    e->impl = ev;
    return GPUWS_OK;
}

static void cuda_event_destroy(gpuws_event *e)
{
    cudaSetDevice(DEV(e->ctx));
    cudaEventDestroy((cudaEvent_t)e->impl);
}

static gpuws_status cuda_event_record(gpuws_event *e, gpuws_stream *s)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaEventRecord((cudaEvent_t)e->impl, STREAM(s)), "cudaEventRecord");
    return GPUWS_OK;
}

static gpuws_status cuda_stream_wait_event(gpuws_stream *s, gpuws_event *e)
{
    SET_DEVICE(s->ctx);
    CHECK_CU(cudaStreamWaitEvent(STREAM(s), (cudaEvent_t)e->impl, 0), "cudaStreamWaitEvent");
    return GPUWS_OK;
}

static gpuws_status cuda_mem_free(gpuws_context *ctx, uint64_t *bytes)
{
    SET_DEVICE(ctx);
    size_t free_bytes = 0, total = 0;
    CHECK_CU(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    *bytes = free_bytes;
    return GPUWS_OK;
}

static gpuws_status cuda_event_synchronize(gpuws_event *e)
{
    SET_DEVICE(e->ctx);
    CHECK_CU(cudaEventSynchronize((cudaEvent_t)e->impl), "cudaEventSynchronize");
    return GPUWS_OK;
}

static gpuws_status cuda_event_elapsed(gpuws_event *a, gpuws_event *b, double *ms)
{
    SET_DEVICE(a->ctx);
    CHECK_CU(cudaEventSynchronize((cudaEvent_t)b->impl), "cudaEventSynchronize");
    float f = 0;
    CHECK_CU(cudaEventElapsedTime(&f, (cudaEvent_t)a->impl, (cudaEvent_t)b->impl), "cudaEventElapsedTime");
    *ms = f;
    return GPUWS_OK;
}

/* ---- kernels -------------------------------------------------------------------------------------------- */

typedef struct {
    const void *func;  /* a __global__ function, or a user program's cudaKernel_t */
    size_t smem_optin; /* dynamic shared memory the function has been allowed so far */
    pthread_mutex_t lock;
} cuda_kernel_impl;

gpuws_status gpuws__cuda_kernel_init(gpuws_kernel *k, const void *func, const struct cudaFuncAttributes *attr)
{
    cuda_kernel_impl *ki = calloc(1, sizeof *ki);
    if (!ki) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a kernel");
    ki->func = func;
    ki->smem_optin = 48 * 1024;
    pthread_mutex_init(&ki->lock, NULL);
    k->info.max_block_size = (uint32_t)attr->maxThreadsPerBlock;
    k->info.static_shared_bytes = attr->sharedSizeBytes;
    k->impl = ki;
    return GPUWS_OK;
}

static gpuws_status cuda_kernel_create(gpuws_kernel *k)
{
    const gpuws__cuda_kernel *found = NULL;
    for (size_t t = 0; t < gpuws__cuda_kernel_table_count && !found; t++)
        for (const gpuws__cuda_kernel *e = gpuws__cuda_kernel_tables[t]; e->name && !found; e++)
            if (strcmp(e->name, k->name) == 0) found = e;
    if (!found) return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND, "no built-in CUDA kernel '%s'", k->name);
    SET_DEVICE(k->ctx);
    struct cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, found->func);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return gpuws__error(cuda_status(e),
                            "kernel '%s' cannot run on %s (%s): %s (%d); rebuild with its architecture in "
                            "GPUWS_CUDA_ARCHITECTURES (CMake)",
                            k->name, k->ctx->info.name, k->ctx->info.platform, cudaGetErrorName(e), (int)e);
    }
    size_t n = strlen(found->sig);
    if (n > GPUWS__SIG_MAX) return gpuws__error(GPUWS_ERR_INTERNAL, "kernel '%s' has too many parameters", k->name);
    memcpy(k->sig, found->sig, n + 1);
    return gpuws__cuda_kernel_init(k, found->func, &attr);
}

static void cuda_kernel_destroy(gpuws_kernel *k)
{
    cuda_kernel_impl *ki = k->impl;
    pthread_mutex_destroy(&ki->lock);
    free(ki);
}

static gpuws_status cuda_launch(gpuws_stream *s, gpuws_kernel *k, const gpuws_launch_config *cfg, const gpuws_arg *args,
                                size_t nargs)
{
    cuda_kernel_impl *ki = k->impl;
    void *argv[GPUWS__SIG_MAX];
    void *ptrs[GPUWS__SIG_MAX];
    size_t smem = 0;
    for (size_t i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case GPUWS_ARG_BUFFER:
            ptrs[i] = args[i].v.buffer->impl;
            argv[i] = &ptrs[i];
            break;
        case GPUWS_ARG_LOCAL:
            smem += (args[i].v.local_bytes + 15) & ~(size_t)15;
            argv[i] = (void *)&args[i].v.local_bytes;
            break;
        default: argv[i] = (void *)&args[i].v; break;
        }
    }
    SET_DEVICE(s->ctx);
    if (smem > 48 * 1024) {
        pthread_mutex_lock(&ki->lock);
        cudaError_t e = cudaSuccess;
        if (smem > ki->smem_optin) {
            e = cudaFuncSetAttribute(ki->func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (e == cudaSuccess) ki->smem_optin = smem;
        }
        pthread_mutex_unlock(&ki->lock);
        if (e != cudaSuccess) return cuda_fail(e, "raising the dynamic shared memory limit");
    }
    dim3 grid = { cfg->grid[0], cfg->grid[1], cfg->grid[2] };
    dim3 block = { cfg->block[0], cfg->block[1], cfg->block[2] };
    CHECK_CU(cudaLaunchKernel(ki->func, grid, block, argv, smem, STREAM(s)),
             "launching '%s' with grid (%u,%u,%u) block (%u,%u,%u)", k->name, grid.x, grid.y, grid.z, block.x, block.y,
             block.z);
    return GPUWS_OK;
}

extern const char gpuws__dialect_cuda[];

const gpuws__backend gpuws__backend_cuda = {
    .kind = GPUWS_BACKEND_CUDA,
    .name = "cuda",
    .probe = cuda_probe,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .buffer_create = cuda_buffer_create,
    .buffer_destroy = cuda_buffer_destroy,
    .buffer_write = cuda_write,
    .buffer_read = cuda_read,
    .read_start = cuda_read_start,
    .read_wait = cuda_read_wait,
    .buffer_copy = cuda_copy,
    .buffer_fill = cuda_fill,
    .host_alloc = cuda_host_alloc,
    .host_pinned = cuda_host_pinned,
    .host_free = cuda_host_free,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed_ms = cuda_event_elapsed,
    .stream_wait_event = cuda_stream_wait_event,
    .mem_free = cuda_mem_free,
    .kernel_create = cuda_kernel_create,
    .kernel_destroy = cuda_kernel_destroy,
    .launch = cuda_launch,
    .dialect = gpuws__dialect_cuda,
    .program_text = gpuws__cuda_program_text,
    .program_build = gpuws__cuda_program_build,
    .program_destroy = gpuws__cuda_program_destroy,
    .program_kernel = gpuws__cuda_program_kernel,
};
