/* OpenCL backend: any vendor through the ICD loader (loaded at run time), PoCL on CPUs.
 *
 * Programs: one per algorithm (kernels/<algo>/<algo>.cl with kernels/common/prelude.cl in front, embedded at
 * build time), built on first use of one of its kernels, kept per context and cached on disk (gpuws__cache, core/cache.c). */
#include "../../core/backend_impl.h"
#include "cl_sources.h"
#include "ocl_loader.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Program-cache events in this process (tests read them through gpuws__opencl_cache_stats). */
static atomic_ulong n_hits, n_misses, n_rejected, n_source_builds;

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif
#ifndef CL_DEVICE_WARP_SIZE_NV
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#endif
#ifndef CL_DEVICE_WAVEFRONT_WIDTH_AMD
#define CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
#endif

/* Translates a native error: `return CHECK_CL(err, "what %s", x)` style via ocl_fail. */
static gpuws_status ocl_status(cl_int e)
{
    switch (e) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: return GPUWS_ERR_OUT_OF_MEMORY;
    case CL_OUT_OF_RESOURCES: return GPUWS_ERR_OUT_OF_MEMORY;
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE: return GPUWS_ERR_LAUNCH_CONFIG;
    case CL_BUILD_PROGRAM_FAILURE: return GPUWS_ERR_BUILD;
    case CL_INVALID_KERNEL_NAME: return GPUWS_ERR_KERNEL_NOT_FOUND;
    default: return GPUWS_ERR_DEVICE;
    }
}

#define CHECK_CL(call, ...)                                                                                            \
    do {                                                                                                               \
        cl_int e_ = (call);                                                                                            \
        if (e_ != CL_SUCCESS) {                                                                                        \
            char what_[256];                                                                                           \
            snprintf(what_, sizeof what_, __VA_ARGS__);                                                                \
            return gpuws__error(ocl_status(e_), "%s: %s (%d)", what_, ocl_error_name(e_), (int)e_);                    \
        }                                                                                                              \
    } while (0)

/* ---- device discovery (once per process) ---------------------------------------------------------------- */

typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    char platform_name[128];
    bool gpu;
} ocl_dev;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static ocl_dev *devs;
static size_t ndevs;
static char probe_reason[256];

static void probe_devices(void)
{
    if (!ocl_load(probe_reason, sizeof probe_reason)) return;
    cl_uint np = 0;
    cl_int e = ocl.clGetPlatformIDs(0, NULL, &np);
    if (e == -1001 || (e == CL_SUCCESS && np == 0)) {
        snprintf(probe_reason, sizeof probe_reason,
                 "no OpenCL platform (no ICD registered in /etc/OpenCL/vendors or OCL_ICD_VENDORS)");
        return;
    }
    if (e != CL_SUCCESS) {
        snprintf(probe_reason, sizeof probe_reason, "clGetPlatformIDs failed: %s (%d)", ocl_error_name(e), (int)e);
        return;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats || ocl.clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) {
        free(plats);
        snprintf(probe_reason, sizeof probe_reason, "clGetPlatformIDs failed");
        return;
    }
    size_t cap = 0;
    for (int pass = 0; pass < 2; pass++) { /* GPUs and accelerators first, then the rest, each in platform order */
        for (cl_uint p = 0; p < np; p++) {
            cl_uint nd = 0;
            if (ocl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
            cl_device_id *ids = calloc(nd, sizeof *ids);
            if (!ids) continue;
            ocl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
            for (cl_uint d = 0; d < nd; d++) {
                cl_device_type t = 0;
                ocl.clGetDeviceInfo(ids[d], CL_DEVICE_TYPE, sizeof t, &t, NULL);
                bool gpu = (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
                if (gpu != (pass == 0)) continue;
                if (ndevs == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    ocl_dev *nd2 = realloc(devs, nc * sizeof *nd2);
                    if (!nd2) break;
                    devs = nd2;
                    cap = nc;
                }
                ocl_dev *o = &devs[ndevs++];
                memset(o, 0, sizeof *o);
                o->platform = plats[p];
                o->device = ids[d];
                o->gpu = gpu;
                ocl.clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof o->platform_name - 1, o->platform_name, NULL);
            }
            free(ids);
        }
    }
    free(plats);
    if (ndevs == 0) snprintf(probe_reason, sizeof probe_reason, "OpenCL platforms found but no device on any of them");
}

static gpuws_status ocl_probe(char *reason, size_t n)
{
    pthread_once(&probe_once, probe_devices);
    if (ndevs == 0) {
        gpuws__strlcpy(reason, probe_reason, n);
        return GPUWS_ERR_BACKEND_UNAVAILABLE;
    }
    return GPUWS_OK;
}

static const ocl_dev *nth_device(const char *filter, size_t index, size_t *count)
{
    size_t k = 0;
    const ocl_dev *found = NULL;
    for (size_t i = 0; i < ndevs; i++) {
        if (!gpuws__icontains(devs[i].platform_name, filter)) continue;
        if (k == index) found = &devs[i];
        k++;
    }
    if (count) *count = k;
    return found;
}

static gpuws_status ocl_device_count(const char *filter, size_t *count)
{
    nth_device(filter, (size_t)-1, count);
    return GPUWS_OK;
}

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t n)
{
    out[0] = 0;
    if (ocl.clGetDeviceInfo(d, what, n - 1, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[n - 1] = 0;
}

static bool dev_has_ext(cl_device_id d, const char *ext)
{
    size_t sz = 0;
    if (ocl.clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &sz) != CL_SUCCESS || !sz) return false;
    char *s = malloc(sz + 1);
    if (!s) return false;
    bool has = false;
    if (ocl.clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, sz, s, NULL) == CL_SUCCESS) {
        s[sz] = 0;
        size_t el = strlen(ext);
        for (char *p = strstr(s, ext); p && !has; p = strstr(p + 1, ext))
            has = (p == s || p[-1] == ' ') && (p[el] == 0 || p[el] == ' ');
    }
    free(s);
    return has;
}

/* Shared memory of one SM by compute capability (CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability"): OpenCL reports only what one work-group may use. 0 where the capability is not in the table. */
static uint64_t nv_shared_per_sm(cl_device_id id)
{
    cl_uint major = 0, minor = 0;
    if (ocl.clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major, NULL) != CL_SUCCESS ||
        ocl.clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor, NULL) != CL_SUCCESS)
        return 0;
    static const struct {
        cl_uint major, minor, kib;
    } table[] = { { 6, 0, 64 },  { 6, 1, 96 },   { 6, 2, 64 },  { 7, 0, 96 },  { 7, 2, 96 },
                  { 7, 5, 64 },  { 8, 0, 164 },  { 8, 6, 100 }, { 8, 7, 164 }, { 8, 9, 100 },
                  { 9, 0, 228 }, { 10, 0, 228 }, { 12, 0, 100 } };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].major == major && table[i].minor == minor) return (uint64_t)table[i].kib * 1024;
    return 0;
}

static void fill_info(const ocl_dev *o, gpuws_device_info *d)
{
    cl_device_id id = o->device;
    cl_device_type t = 0;
    ocl.clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    d->backend = GPUWS_BACKEND_OPENCL;
    d->type = (t & CL_DEVICE_TYPE_GPU)   ? GPUWS_DEVICE_GPU
              : (t & CL_DEVICE_TYPE_CPU) ? GPUWS_DEVICE_CPU
                                         : GPUWS_DEVICE_OTHER;
    dev_str(id, CL_DEVICE_NAME, d->name, sizeof d->name);
    dev_str(id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    dev_str(id, CL_DRIVER_VERSION, d->driver_version, sizeof d->driver_version);
    gpuws__strlcpy(d->platform, o->platform_name, sizeof d->platform);
    cl_ulong u64 = 0;
    cl_uint u32 = 0;
    size_t sz = 0;
    ocl.clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof u64, &u64, NULL);
    d->global_mem_bytes = u64;
    ocl.clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof u64, &u64, NULL);
    d->max_alloc_bytes = u64;
    ocl.clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u32, &u32, NULL);
    d->compute_units = u32;
    ocl.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL);
    d->max_block_size = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
    size_t dims[3] = { 1, 1, 1 };
    ocl.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL);
    for (int i = 0; i < 3; i++) d->max_block_dims[i] = dims[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)dims[i];
    bool nv = dev_has_ext(id, "cl_nv_device_attribute_query");
    /* NVIDIA's OpenCL maps work-groups onto a CUDA grid and inherits its y/z limits. */
    d->max_grid_dims[0] = nv ? 0x7fffffffu : UINT32_MAX;
    d->max_grid_dims[1] = nv ? 65535u : UINT32_MAX;
    d->max_grid_dims[2] = nv ? 65535u : UINT32_MAX;
    /* OpenCL has no limit on work-groups, but devices run them one after another: PoCL loops over them, and a grid
     * of (2^32 - 1)^3 would run for ever (and overflow its 64-bit count) where it is not refused here. 2^32 - 1 blocks
     * per launch is more than any driver's grid for data that fits a device's memory. */
    d->max_grid_blocks = UINT32_MAX;
    ocl.clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof u64, &u64, NULL);
    d->shared_mem_bytes = u64;
    d->shared_mem_per_unit = nv ? nv_shared_per_sm(id) : 0;
    u32 = 0;
    if (nv) ocl.clGetDeviceInfo(id, CL_DEVICE_WARP_SIZE_NV, sizeof u32, &u32, NULL);
    else if (dev_has_ext(id, "cl_amd_device_attribute_query"))
        ocl.clGetDeviceInfo(id, CL_DEVICE_WAVEFRONT_WIDTH_AMD, sizeof u32, &u32, NULL);
    else if (t & CL_DEVICE_TYPE_CPU)
        ocl.clGetDeviceInfo(id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof u32, &u32, NULL);
    d->warp_size = u32 ? u32 : 1;
    d->fp64 = dev_has_ext(id, "cl_khr_fp64");
    cl_bool unified = CL_FALSE;
    ocl.clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    d->unified_memory = unified || (t & CL_DEVICE_TYPE_CPU);
}

static gpuws_status ocl_device_info(const char *filter, size_t index, gpuws_device_info *d)
{
    const ocl_dev *o = nth_device(filter, index, NULL);
    if (!o) return gpuws__error(GPUWS_ERR_NO_DEVICE, "no OpenCL device %zu", index);
    fill_info(o, d);
    return GPUWS_OK;
}

/* ---- contexts ------------------------------------------------------------------------------------------- */

typedef struct ocl_program {
    const char *algo;
    char *options;
    cl_program prog;
    struct ocl_program *next;
} ocl_program;

typedef struct ocl_pinned {
    void *ptr;
    size_t n;
    cl_mem mem;
    struct ocl_pinned *next;
} ocl_pinned;

typedef struct {
    cl_context ctx;
    cl_device_id dev;
    cl_command_queue aux;  /* for pinned-memory maps */
    ocl_program *programs; /* under ctx->lock */
    ocl_pinned *pinned;
    pthread_mutex_t pin_lock;
    gpuws__cache cache;
    char device_key[900];   /* platform, device, versions: the device part of cache keys */
    cl_program marker_prog; /* no-op kernel for events where markers lack profiling data */
    cl_kernel marker_kernel;
    atomic_int kernel_markers; /* 0 unknown/use clEnqueueMarker, 1 use marker kernel; any thread may set it */
    bool nv_options;           /* cl_nv_compiler_options: build options -cl-nv-* are passed on, else dropped */
    uint64_t max_global;       /* largest global work size in one dimension: what the device's addresses hold */
    bool oclgrind;             /* the Oclgrind simulator: fills are host writes, buffers released at the end (below) */
    bool nvidia;               /* NVIDIA's OpenCL: fills that reach past 2^31 bytes are our kernel's (ocl_fill) */
    cl_program fill_prog;      /* that kernel, built on first use */
    cl_kernel fill_kernel;
    cl_mem *graveyard;       /* Oclgrind: destroyed buffers, released with the context (ocl_buffer_destroy) */
    size_t ngrave, capgrave; /* under pin_lock */
} ocl_ctx;

#define OCTX(c) ((ocl_ctx *)(c)->impl)

/* Some platforms keep no profiling times for markers; events then use a no-op kernel instead. */
static bool markers_have_times(ocl_ctx *c)
{
    cl_int e;
    cl_command_queue q = ocl.clCreateCommandQueue(c->ctx, c->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!q) return false;
    cl_event ev = NULL;
    cl_ulong t = 0;
    bool ok = ocl.clEnqueueMarkerWithWaitList(q, 0, NULL, &ev) == CL_SUCCESS && ocl.clFinish(q) == CL_SUCCESS &&
              ocl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL) == CL_SUCCESS && t != 0;
    if (ev) ocl.clReleaseEvent(ev);
    ocl.clReleaseCommandQueue(q);
    return ok;
}

static gpuws_status ocl_context_create(gpuws_context *ctx, const char *filter, size_t index)
{
    const ocl_dev *o = nth_device(filter, index, NULL);
    if (!o) return gpuws__error(GPUWS_ERR_NO_DEVICE, "no OpenCL device %zu", index);
    ocl_ctx *c = calloc(1, sizeof *c);
    if (!c) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating an OpenCL context");
    fill_info(o, &ctx->info);
    c->dev = o->device;
    c->oclgrind = gpuws__icontains(o->platform_name, "Oclgrind");
    c->nvidia = gpuws__icontains(o->platform_name, "NVIDIA");
    cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)o->platform, 0 };
    cl_int e;
    c->ctx = ocl.clCreateContext(props, 1, &o->device, NULL, NULL, &e);
    if (!c->ctx) {
        free(c);
        return gpuws__error(ocl_status(e), "clCreateContext on %s: %s (%d)", ctx->info.name, ocl_error_name(e), (int)e);
    }
    c->aux = ocl.clCreateCommandQueue(c->ctx, c->dev, 0, &e);
    if (!c->aux) {
        ocl.clReleaseContext(c->ctx);
        free(c);
        return gpuws__error(ocl_status(e), "clCreateCommandQueue: %s (%d)", ocl_error_name(e), (int)e);
    }
    pthread_mutex_init(&c->pin_lock, NULL);
    gpuws__cache_init(&c->cache);
    char ver[128];
    dev_str(c->dev, CL_DEVICE_VERSION, ver, sizeof ver);
    snprintf(c->device_key, sizeof c->device_key, "platform=%s\ndevice=%s\nvendor=%s\ndevice_version=%s\ndriver=%s\n",
             ctx->info.platform, ctx->info.name, ctx->info.vendor, ver, ctx->info.driver_version);
    c->nv_options = dev_has_ext(c->dev, "cl_nv_compiler_options");
    cl_uint bits = 0;
    ocl.clGetDeviceInfo(c->dev, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL);
    c->max_global = bits == 0 || bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    const int m = ctx->tuning.opencl_events;
    atomic_init(&c->kernel_markers, m != GPUWS__EVENTS_AUTO ? m == GPUWS__EVENTS_KERNEL : !markers_have_times(c));
    ctx->impl = c;
    return GPUWS_OK;
}

static void pinned_release(ocl_ctx *c, ocl_pinned *pin);

static void ocl_context_destroy(gpuws_context *ctx)
{
    ocl_ctx *c = OCTX(ctx);
    if (!c) return;
    while (c->pinned) {
        ocl_pinned *p = c->pinned;
        c->pinned = p->next;
        pinned_release(c, p);
    }
    for (size_t i = 0; i < c->ngrave; i++) ocl.clReleaseMemObject(c->graveyard[i]);
    free(c->graveyard);
    while (c->programs) {
        ocl_program *p = c->programs;
        c->programs = p->next;
        ocl.clReleaseProgram(p->prog);
        free(p->options);
        free(p);
    }
    if (c->marker_kernel) ocl.clReleaseKernel(c->marker_kernel);
    if (c->fill_kernel) ocl.clReleaseKernel(c->fill_kernel);
    if (c->fill_prog) ocl.clReleaseProgram(c->fill_prog);
    if (c->marker_prog) ocl.clReleaseProgram(c->marker_prog);
    ocl.clReleaseCommandQueue(c->aux);
    ocl.clReleaseContext(c->ctx);
    pthread_mutex_destroy(&c->pin_lock);
    free(c);
}

/* ---- streams, buffers, host memory ---------------------------------------------------------------------- */

static gpuws_status ocl_stream_create(gpuws_stream *s)
{
    cl_int e;
    cl_command_queue q = ocl.clCreateCommandQueue(OCTX(s->ctx)->ctx, OCTX(s->ctx)->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!q) return gpuws__error(ocl_status(e), "clCreateCommandQueue: %s (%d)", ocl_error_name(e), (int)e);
    s->impl = q;
    return GPUWS_OK;
}

static void ocl_stream_destroy(gpuws_stream *s) { ocl.clReleaseCommandQueue((cl_command_queue)s->impl); }

static gpuws_status ocl_stream_synchronize(gpuws_stream *s)
{
    CHECK_CL(ocl.clFinish((cl_command_queue)s->impl), "clFinish");
    return GPUWS_OK;
}

#define Q(s)   ((cl_command_queue)(s)->impl)
#define MEM(b) ((cl_mem)(b)->impl)

static gpuws_status ocl_buffer_create(gpuws_buffer *b)
{
    /* Drivers allocate lazily: clCreateBuffer succeeds and the memory is taken at first use, where PoCL 3.1 aborts
     * the process (an assertion in pocl_create_migration_commands) instead of failing the enqueue. On host-memory
     * devices CL_MEM_ALLOC_HOST_PTR makes the allocation happen here, so running out is GPUWS_ERR_OUT_OF_MEMORY from
     * gpuws_buffer_create (cost on PoCL: under 1 us per buffer; docs/reliability.md). Discrete GPUs keep device
     * memory; there a failure shows at the first enqueue that touches the buffer. */
    cl_mem_flags flags = CL_MEM_READ_WRITE | (b->ctx->info.unified_memory ? CL_MEM_ALLOC_HOST_PTR : 0);
    cl_int e;
    cl_mem m = ocl.clCreateBuffer(OCTX(b->ctx)->ctx, flags, b->size, NULL, &e);
    if (!m)
        return gpuws__error(ocl_status(e), "clCreateBuffer of %zu bytes: %s (%d)", b->size, ocl_error_name(e), (int)e);
    b->impl = m;
    return GPUWS_OK;
}

/* Releases m; pin_lock held. On Oclgrind m is kept in the graveyard until the context goes: the simulator gives a
 * new buffer the number of a released one, and its uninitialised-value check then misses the new buffer's stores
 * past the old one's size and reports reads of values that were written (docs/reliability.md, "Oclgrind";
 * tests/oclgrind/host_calls.c grow). Keeping them costs a simulator's run only memory. */
static void release_locked(ocl_ctx *c, cl_mem m)
{
    if (c->oclgrind && c->ngrave == c->capgrave) {
        const size_t cap = c->capgrave ? 2 * c->capgrave : 64;
        cl_mem *g = realloc(c->graveyard, cap * sizeof *g);
        if (g) {
            c->graveyard = g;
            c->capgrave = cap;
        }
    }
    if (c->oclgrind && c->ngrave < c->capgrave) c->graveyard[c->ngrave++] = m;
    else ocl.clReleaseMemObject(m);
}

static void ocl_buffer_destroy(gpuws_buffer *b)
{
    ocl_ctx *c = OCTX(b->ctx);
    if (!c || !c->oclgrind) {
        ocl.clReleaseMemObject(MEM(b));
        return;
    }
    pthread_mutex_lock(&c->pin_lock);
    release_locked(c, MEM(b));
    pthread_mutex_unlock(&c->pin_lock);
}

static gpuws_status ocl_write(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *src, size_t n, int blocking)
{
    CHECK_CL(ocl.clEnqueueWriteBuffer(Q(s), MEM(b), blocking ? CL_TRUE : CL_FALSE, off, n, src, 0, NULL, NULL),
             "clEnqueueWriteBuffer of %zu bytes at offset %zu", n, off);
    return GPUWS_OK;
}

static gpuws_status ocl_read(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n, int blocking)
{
    CHECK_CL(ocl.clEnqueueReadBuffer(Q(s), MEM(b), blocking ? CL_TRUE : CL_FALSE, off, n, dst, 0, NULL, NULL),
             "clEnqueueReadBuffer of %zu bytes at offset %zu", n, off);
    return GPUWS_OK;
}

/* The read's own event is the token: waiting for it does not wait for the commands enqueued after it. */
static gpuws_status ocl_read_start(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n,
                                   void **token)
{
    cl_event ev;
    CHECK_CL(ocl.clEnqueueReadBuffer(Q(s), MEM(b), CL_FALSE, off, n, dst, 0, NULL, &ev),
             "clEnqueueReadBuffer of %zu bytes at offset %zu", n, off);
    *token = ev;
    return GPUWS_OK;
}

/* Polls the read's status a while before it blocks: on NVIDIA's OpenCL clWaitForEvents returns several microseconds
 * later than a blocking read and its delay varies from call to call, while polling a pinned read's event is the
 * fastest wait there is. A wait longer than the polls (a deep queue) blocks, so the host does not spin for
 * milliseconds. */
#define OCL_READ_POLLS 20000
static gpuws_status ocl_read_wait(gpuws_stream *s, void *token)
{
    cl_event ev = (cl_event)token;
    cl_int e = ocl.clFlush(Q(s)), status = CL_QUEUED;
    for (int i = 0; e == CL_SUCCESS && status > CL_COMPLETE && i < OCL_READ_POLLS; i++)
        e = ocl.clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (e == CL_SUCCESS && status > CL_COMPLETE) e = ocl.clWaitForEvents(1, &ev);
    else if (e == CL_SUCCESS && status < 0) e = status; /* the read failed */
    ocl.clReleaseEvent(ev);
    CHECK_CL(e, "waiting for a read");
    return GPUWS_OK;
}

static gpuws_status ocl_copy(gpuws_stream *s, gpuws_buffer *d, size_t doff, const gpuws_buffer *src, size_t soff,
                             size_t n)
{
    CHECK_CL(ocl.clEnqueueCopyBuffer(Q(s), MEM(src), MEM(d), soff, doff, n, 0, NULL, NULL),
             "clEnqueueCopyBuffer of %zu bytes", n);
    return GPUWS_OK;
}

/* Pinned host memory: a CL_MEM_ALLOC_HOST_PTR buffer mapped for the host until it is freed. pin_lock held (or the
 * context going). */
static void pinned_release(ocl_ctx *c, ocl_pinned *pin)
{
    ocl.clEnqueueUnmapMemObject(c->aux, pin->mem, pin->ptr, 0, NULL, NULL);
    ocl.clFinish(c->aux);
    release_locked(c, pin->mem);
    free(pin);
}

static gpuws_status ocl_host_alloc(gpuws_context *ctx, size_t n, void **p)
{
    ocl_ctx *c = OCTX(ctx);
    ocl_pinned *pin = calloc(1, sizeof *pin);
    if (!pin) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating pinned-memory bookkeeping");
    cl_int e;
    pin->mem = ocl.clCreateBuffer(c->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, NULL, &e);
    if (!pin->mem) {
        free(pin);
        return gpuws__error(ocl_status(e), "pinned host memory of %zu bytes: %s (%d)", n, ocl_error_name(e), (int)e);
    }
    pthread_mutex_lock(&c->pin_lock);
    pin->ptr = ocl.clEnqueueMapBuffer(c->aux, pin->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, NULL, NULL, &e);
    if (!pin->ptr) {
        pthread_mutex_unlock(&c->pin_lock);
        ocl.clReleaseMemObject(pin->mem);
        free(pin);
        return gpuws__error(ocl_status(e), "mapping pinned host memory of %zu bytes: %s (%d)", n, ocl_error_name(e),
                            (int)e);
    }
    pin->n = n;
    pin->next = c->pinned;
    c->pinned = pin;
    pthread_mutex_unlock(&c->pin_lock);
    *p = pin->ptr;
    return GPUWS_OK;
}

static void ocl_host_free(gpuws_context *ctx, void *p)
{
    ocl_ctx *c = OCTX(ctx);
    pthread_mutex_lock(&c->pin_lock);
    for (ocl_pinned **pp = &c->pinned; *pp; pp = &(*pp)->next) {
        ocl_pinned *pin = *pp;
        if (pin->ptr != p) continue;
        *pp = pin->next;
        pinned_release(c, pin);
        break;
    }
    pthread_mutex_unlock(&c->pin_lock);
}

/* Pinned: within one of this context's host_alloc blocks (OpenCL cannot say of any other memory). */
static bool ocl_host_pinned(gpuws_context *ctx, const void *p, size_t n)
{
    ocl_ctx *c = OCTX(ctx);
    const char *q = p;
    bool in = false;
    pthread_mutex_lock(&c->pin_lock);
    for (const ocl_pinned *pin = c->pinned; pin && !in; pin = pin->next)
        in = q >= (const char *)pin->ptr && n <= pin->n && (size_t)(q - (const char *)pin->ptr) <= pin->n - n;
    pthread_mutex_unlock(&c->pin_lock);
    return in;
}

/* ---- events --------------------------------------------------------------------------------------------- */

typedef struct {
    cl_event ev;
    int kernel_marker;
} ocl_event;

static gpuws_status ocl_event_create(gpuws_event *e)
{
    e->impl = calloc(1, sizeof(ocl_event));
    return e->impl ? GPUWS_OK : gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating an event");
}

static void ocl_event_destroy(gpuws_event *e)
{
    ocl_event *oe = e->impl;
    if (oe->ev) ocl.clReleaseEvent(oe->ev);
    free(oe);
}

/* The backend's own small kernels (the event marker, the large fill): built from src on first use into *prog and
 * *kernel. Called with ctx->lock held. */
static gpuws_status own_kernel(ocl_ctx *c, const char *src, const char *name, cl_program *prog, cl_kernel *kernel)
{
    if (*kernel) return GPUWS_OK;
    cl_int e;
    cl_program p = ocl.clCreateProgramWithSource(c->ctx, 1, &src, NULL, &e);
    if (p && ocl.clBuildProgram(p, 1, &c->dev, "", NULL, NULL) == CL_SUCCESS) *kernel = ocl.clCreateKernel(p, name, &e);
    if (!*kernel) {
        if (p) ocl.clReleaseProgram(p);
        return gpuws__error(GPUWS_ERR_DEVICE, "building the backend's kernel %s failed", name);
    }
    *prog = p;
    return GPUWS_OK;
}

static gpuws_status marker_kernel(gpuws_context *ctx, cl_kernel *out)
{
    ocl_ctx *c = OCTX(ctx);
    pthread_mutex_lock(&ctx->lock);
    const gpuws_status st =
        own_kernel(c, "__kernel void gpuws_marker(void) {}\n", "gpuws_marker", &c->marker_prog, &c->marker_kernel);
    *out = c->marker_kernel;
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

static gpuws_status ocl_event_record(gpuws_event *e, gpuws_stream *s)
{
    ocl_event *oe = e->impl;
    if (oe->ev) {
        ocl.clReleaseEvent(oe->ev);
        oe->ev = NULL;
    }
    oe->kernel_marker = atomic_load(&OCTX(s->ctx)->kernel_markers);
    if (oe->kernel_marker) {
        cl_kernel k = NULL;
        gpuws_status st = marker_kernel(s->ctx, &k);
        if (st) return st;
        size_t one = 1;
        CHECK_CL(ocl.clEnqueueNDRangeKernel(Q(s), k, 1, NULL, &one, &one, 0, NULL, &oe->ev),
                 "enqueueing an event marker kernel");
    } else {
        CHECK_CL(ocl.clEnqueueMarkerWithWaitList(Q(s), 0, NULL, &oe->ev), "clEnqueueMarkerWithWaitList");
    }
    ocl.clFlush(Q(s));
    return GPUWS_OK;
}

static gpuws_status ocl_event_synchronize(gpuws_event *e)
{
    ocl_event *oe = e->impl;
    CHECK_CL(ocl.clWaitForEvents(1, &oe->ev), "clWaitForEvents");
    return GPUWS_OK;
}

/* A marker that waits for the event: later commands of the in-order queue start after it. */
static gpuws_status ocl_stream_wait_event(gpuws_stream *s, gpuws_event *e)
{
    ocl_event *oe = e->impl;
    CHECK_CL(ocl.clEnqueueMarkerWithWaitList(Q(s), 1, &oe->ev, NULL),
             "clEnqueueMarkerWithWaitList (waiting for an event)");
    return GPUWS_OK;
}

static gpuws_status ocl_event_elapsed(gpuws_event *a, gpuws_event *b, double *ms)
{
    ocl_event *x = a->impl, *y = b->impl;
    cl_event evs[2] = { x->ev, y->ev };
    CHECK_CL(ocl.clWaitForEvents(2, evs), "clWaitForEvents");
    cl_ulong t0 = 0, t1 = 0;
    cl_int e0 = ocl.clGetEventProfilingInfo(x->ev, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
    /* A marker kernel's start is when the work before it had finished; a plain marker's end is. */
    cl_int e1 = ocl.clGetEventProfilingInfo(
        y->ev, y->kernel_marker ? CL_PROFILING_COMMAND_START : CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (e0 != CL_SUCCESS || e1 != CL_SUCCESS || (t0 == 0 && t1 == 0)) {
        if (!x->kernel_marker && !y->kernel_marker) {
            /* This platform keeps no times for markers: record with a no-op kernel from now on. */
            atomic_store(&OCTX(a->ctx)->kernel_markers, 1);
            gpuws__log(GPUWS__LOG_INFO, "OpenCL markers carry no profiling times on %s; using marker kernels",
                       a->ctx->info.name);
        }
        cl_int err = e0 != CL_SUCCESS ? e0 : e1;
        return gpuws__error(GPUWS_ERR_NOT_READY, "no profiling times for these events (%s); record them again",
                            ocl_error_name(err));
    }
    *ms = ((double)t1 - (double)t0) * 1e-6;
    return GPUWS_OK;
}

/* ---- programs and kernels ------------------------------------------------------------------------------- */

static const gpuws__cl_source *source_for_kernel(const char *name)
{
    const gpuws__cl_source *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < gpuws__cl_source_count; i++) {
        size_t l = strlen(gpuws__cl_sources[i].algo);
        if (l > best_len && strncmp(name, gpuws__cl_sources[i].algo, l) == 0 && name[l] == '_') {
            best = &gpuws__cl_sources[i];
            best_len = l;
        }
    }
    return best;
}

/* The program's build log for the context's device (malloc'd, "" when empty; NULL when out of memory). */
static char *build_log(ocl_ctx *c, cl_program p)
{
    size_t sz = 0;
    ocl.clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &sz);
    char *log = malloc(sz + 1);
    if (log) {
        log[0] = 0;
        if (sz) ocl.clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, sz, log, NULL);
        log[sz] = 0;
    }
    return log;
}

static void store_binary(ocl_ctx *c, cl_program p, const char *key)
{
    size_t len = 0;
    if (ocl.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || len == 0) return;
    unsigned char *bin = malloc(len);
    if (!bin) return;
    unsigned char *bins[1] = { bin };
    if (ocl.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        gpuws__cache_store(&c->cache, key, ".clbin", bin, len);
    free(bin);
}

/* Removes the space-separated options that start with "-cl-nv-" (NVIDIA's compiler options) from s, in place. */
static void drop_nv_options(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        while (*r == ' ') r++;
        const size_t n = strcspn(r, " ");
        if (n && strncmp(r, "-cl-nv-", 7) != 0) {
            if (w != s) *w++ = ' ';
            memmove(w, r, n);
            w += n;
        }
        r += n;
    }
    *w = 0;
}

/* Builds text (name: for messages and the cache key) with options, or loads its binary from the cache (unless
 * use_cache is false). On a compile error returns GPUWS_ERR_BUILD and, when log is given, the build log in *log
 * (malloc'd); on success *log (when given) holds the build log, warnings included, "" when none. */
static gpuws_status build_program(gpuws_context *ctx, const char *name, const char *text, size_t len,
                                  const char *options, bool use_cache, cl_program *out, char **log)
{
    ocl_ctx *c = OCTX(ctx);
    if (log) *log = NULL;
    size_t keylen = strlen(c->device_key) + strlen(options) + strlen(name) + 128;
    char *key = malloc(keylen);
    if (!key) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a cache key");
    snprintf(key, keylen, "%soptions=%s\nsource=%s:%zu:%016llx\n", c->device_key, options, name, len,
             (unsigned long long)gpuws__fnv1a(text, len, GPUWS__FNV_SEED));

    cl_program prog = NULL;
    cl_int e;
    unsigned char *bin;
    size_t binlen;
    bin = NULL;
    binlen = 0;
    gpuws_status cst = use_cache ? gpuws__cache_load(&c->cache, key, ".clbin", &bin, &binlen) : GPUWS_OK;
    if (cst) {
        free(key);
        return cst;
    }
    bool have = bin != NULL;
    if (!have && use_cache && c->cache.enabled) {
        char path[1100];
        gpuws__cache_path(&c->cache, key, ".clbin", path, sizeof path);
        atomic_fetch_add(access(path, F_OK) == 0 ? &n_rejected : &n_misses, 1);
    }
    if (have) {
        const unsigned char *bins[1] = { bin };
        cl_int bst;
        prog = ocl.clCreateProgramWithBinary(c->ctx, 1, &c->dev, &binlen, bins, &bst, &e);
        if (prog && (e != CL_SUCCESS || bst != CL_SUCCESS ||
                     ocl.clBuildProgram(prog, 1, &c->dev, options, NULL, NULL) != CL_SUCCESS)) {
            ocl.clReleaseProgram(prog);
            prog = NULL;
        }
        gpuws__free(bin);
        if (prog) {
            atomic_fetch_add(&n_hits, 1);
            gpuws__log(GPUWS__LOG_DEBUG, "%s loaded from the cache", name);
            if (log && !(*log = strdup(""))) {
                ocl.clReleaseProgram(prog);
                free(key);
                return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a build log");
            }
        } else {
            atomic_fetch_add(&n_rejected, 1);
            gpuws__log(GPUWS__LOG_INFO, "cached binary of %s was rejected by the driver; rebuilding from source", name);
        }
    }
    if (!prog) {
        prog = ocl.clCreateProgramWithSource(c->ctx, 1, &text, &len, &e);
        if (!prog) {
            free(key);
            return gpuws__error(ocl_status(e), "clCreateProgramWithSource(%s): %s (%d)", name, ocl_error_name(e),
                                (int)e);
        }
        atomic_fetch_add(&n_source_builds, 1);
        e = ocl.clBuildProgram(prog, 1, &c->dev, options, NULL, NULL);
        char *blog = build_log(c, prog);
        if (e != CL_SUCCESS) {
            gpuws_status st = gpuws__error(
                e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ? GPUWS_ERR_BUILD : ocl_status(e),
                "building %s for %s failed: %s (%d); build log:\n%s", name, ctx->info.name, ocl_error_name(e), (int)e,
                blog ? blog : "(unavailable)");
            if (log) *log = blog;
            else free(blog);
            ocl.clReleaseProgram(prog);
            free(key);
            return st;
        }
        if (log) *log = blog;
        else free(blog);
        if (use_cache) store_binary(c, prog, key);
    }
    free(key);
    *out = prog;
    return GPUWS_OK;
}

/* Called with ctx->lock held (core serialises kernel creation). Drivers may pass NVIDIA's -cl-nv-* options; a
 * device without cl_nv_compiler_options builds without them. */
static gpuws_status get_program(gpuws_context *ctx, const gpuws__cl_source *src, const char *extra, cl_program *out)
{
    ocl_ctx *c = OCTX(ctx);
    for (ocl_program *p = c->programs; p; p = p->next)
        if (p->algo == src->algo && strcmp(p->options, extra) == 0) {
            *out = p->prog;
            return GPUWS_OK;
        }
    char options[1024];
    snprintf(options, sizeof options, "-cl-std=CL1.2 -cl-kernel-arg-info%s %s", ctx->info.fp64 ? " -DGPUWS_FP64=1" : "",
             extra);
    if (!c->nv_options) drop_nv_options(options);
    char name[96];
    snprintf(name, sizeof name, "%s.cl", src->algo);
    cl_program prog;
    gpuws_status st = build_program(ctx, name, (const char *)src->text, src->len, options, true, &prog, NULL);
    if (st) return st;
    ocl_program *p = calloc(1, sizeof *p);
    if (!p || !(p->options = strdup(extra))) {
        free(p);
        ocl.clReleaseProgram(prog);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a program record");
    }
    p->algo = src->algo;
    p->prog = prog;
    p->next = c->programs;
    c->programs = p;
    *out = prog;
    return GPUWS_OK;
}

void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds)
{
    *hits = atomic_load(&n_hits);
    *misses = atomic_load(&n_misses);
    *rejected = atomic_load(&n_rejected);
    *builds = atomic_load(&n_source_builds);
}

/* The value an argument was last set to on this cl_kernel (OpenCL keeps argument values between enqueues): a
 * buffer's serial, or the bytes of a scalar, or a local size. */
typedef struct {
    bool set;
    gpuws_arg_kind kind;
    uint64_t value;
} ocl_arg_memo;

typedef struct {
    cl_kernel k;
    pthread_mutex_t lock; /* clSetKernelArg + enqueue must not interleave between threads */
    ocl_arg_memo args[GPUWS__SIG_MAX];
} ocl_kernel;

static char arg_kind(cl_kernel k, cl_uint i)
{
    cl_kernel_arg_address_qualifier aq;
    char type[64] = "";
    if (ocl.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL) != CL_SUCCESS) return '?';
    if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) return 's';
    if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) return 'b';
    if (ocl.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, NULL) != CL_SUCCESS) return '?';
    if (strchr(type, '*')) return 'b';
    static const struct {
        const char *t;
        char c;
    } map[] = { { "int", 'i' },   { "uint", 'u' },          { "unsigned int", 'u' }, { "long", 'l' },
                { "ulong", 'L' }, { "unsigned long", 'L' }, { "float", 'f' },        { "double", 'd' } };
    for (size_t j = 0; j < sizeof map / sizeof map[0]; j++)
        if (strcmp(type, map[j].t) == 0) return map[j].c;
    return '?';
}

/* Takes ck over into k: its limits on the device and the state launches keep. */
static gpuws_status wrap_kernel(gpuws_kernel *k, cl_kernel ck)
{
    ocl_ctx *c = OCTX(k->ctx);
    size_t wg = 0;
    cl_ulong lm = 0;
    ocl.clGetKernelWorkGroupInfo(ck, c->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    ocl.clGetKernelWorkGroupInfo(ck, c->dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    k->info.max_block_size = wg ? (uint32_t)(wg > UINT32_MAX ? UINT32_MAX : wg) : k->ctx->info.max_block_size;
    k->info.static_shared_bytes = lm;
    ocl_kernel *ok = calloc(1, sizeof *ok);
    if (!ok) {
        ocl.clReleaseKernel(ck);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a kernel");
    }
    ok->k = ck;
    pthread_mutex_init(&ok->lock, NULL);
    k->impl = ok;
    return GPUWS_OK;
}

static gpuws_status ocl_kernel_create(gpuws_kernel *k)
{
    gpuws_context *ctx = k->ctx;
    const gpuws__cl_source *src = source_for_kernel(k->name);
    if (!src)
        return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND, "no built-in kernel '%s' (no algorithm has that prefix)",
                            k->name);
    cl_program prog;
    gpuws_status st = get_program(ctx, src, k->options, &prog);
    if (st) return st;
    cl_int e;
    cl_kernel ck = ocl.clCreateKernel(prog, k->name, &e);
    if (!ck) {
        if (e == CL_INVALID_KERNEL_NAME)
            return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND, "no kernel '%s' in %s.cl%s", k->name, src->algo,
                                !ctx->info.fp64 && strstr(k->name, "f64") ? " for this device (it lacks cl_khr_fp64)"
                                                                          : "");
        return gpuws__error(ocl_status(e), "clCreateKernel(%s): %s (%d)", k->name, ocl_error_name(e), (int)e);
    }
    cl_uint nargs = 0;
    ocl.clGetKernelInfo(ck, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    if (nargs > GPUWS__SIG_MAX) {
        ocl.clReleaseKernel(ck);
        return gpuws__error(GPUWS_ERR_INTERNAL, "kernel '%s' has %u parameters; at most %d are supported", k->name,
                            nargs, GPUWS__SIG_MAX);
    }
    for (cl_uint i = 0; i < nargs; i++) k->sig[i] = arg_kind(ck, i);
    k->sig[nargs] = 0;
    return wrap_kernel(k, ck);
}

static void ocl_kernel_destroy(gpuws_kernel *k)
{
    ocl_kernel *ok = k->impl;
    ocl.clReleaseKernel(ok->k);
    pthread_mutex_destroy(&ok->lock);
    free(ok);
}

/* ---- user programs -------------------------------------------------------------------------------------- */

extern const char gpuws__dialect_opencl[];

static gpuws_status ocl_program_build(gpuws_program *p)
{
    char options[256];
    snprintf(options, sizeof options, "-cl-std=CL1.2%s%s",
             p->flags & GPUWS_PROGRAM_FAST_MATH ? " -cl-fast-relaxed-math" : "",
             p->flags & GPUWS_PROGRAM_DEBUG ? " -g -cl-opt-disable" : "");
    cl_program prog = NULL;
    char *log = NULL;
    gpuws_status st = build_program(p->ctx, p->file_name, p->source, p->source_len, options,
                                    !(p->flags & GPUWS_PROGRAM_NO_CACHE), &prog, &log);
    if (log) {
        p->log = gpuws__strdup(log);
        free(log);
    }
    if (st) return st;
    p->impl = prog;
    return GPUWS_OK;
}

static void ocl_program_destroy(gpuws_program *p) { ocl.clReleaseProgram((cl_program)p->impl); }

static gpuws_status ocl_program_kernel(gpuws_program *p, size_t index, gpuws_kernel *k)
{
    cl_int e;
    cl_kernel ck = ocl.clCreateKernel((cl_program)p->impl, p->decls[index].name, &e);
    if (!ck) {
        if (e == CL_INVALID_KERNEL_NAME)
            return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND,
                                "program '%s' declares kernel '%s' but the OpenCL build has none "
                                "(is it inside an #if?)",
                                p->file_name, p->decls[index].name);
        return gpuws__error(ocl_status(e), "clCreateKernel(%s): %s (%d)", p->decls[index].name, ocl_error_name(e),
                            (int)e);
    }
    return wrap_kernel(k, ck);
}

/* Sets the arguments that differ from the values the kernel already holds. A call of a driver sets ~5-20 arguments
 * and repeated calls mostly the same values; an event-timed call of a short kernel waits for the host's work, and
 * clSetKernelArg is a large part of NVIDIA's OpenCL host time per call. Buffers compare by serial, not by cl_mem: a
 * destroyed buffer's handle may come back for a new one. */
static gpuws_status set_args(ocl_kernel *ok, const gpuws_arg *args, size_t nargs, const char *name)
{
    for (size_t i = 0; i < nargs; i++) {
        const gpuws_arg *a = &args[i];
        cl_mem mem = NULL;
        size_t size = 0;
        const void *value = &a->v;
        uint64_t key = 0; /* what the memo compares */
        switch (a->kind) {
        case GPUWS_ARG_BUFFER:
            mem = MEM(a->v.buffer), size = sizeof mem, value = &mem, key = a->v.buffer->serial;
            break;
        case GPUWS_ARG_I32:
        case GPUWS_ARG_U32:
        case GPUWS_ARG_F32: size = 4; break;
        case GPUWS_ARG_I64:
        case GPUWS_ARG_U64:
        case GPUWS_ARG_F64: size = 8; break;
        case GPUWS_ARG_LOCAL: size = a->v.local_bytes, value = NULL, key = a->v.local_bytes; break;
        default: CHECK_CL(CL_INVALID_ARG_VALUE, "kernel '%s': argument %zu of unknown kind", name, i);
        }
        if (a->kind != GPUWS_ARG_BUFFER && a->kind != GPUWS_ARG_LOCAL) memcpy(&key, &a->v, size);
        ocl_arg_memo *memo = i < GPUWS__SIG_MAX ? &ok->args[i] : NULL;
        if (memo && memo->set && memo->kind == a->kind && memo->value == key) continue;
        if (memo) memo->set = false; /* until it is set below */
        CHECK_CL(ocl.clSetKernelArg(ok->k, (cl_uint)i, size, value), "kernel '%s': setting argument %zu", name, i);
        if (memo) *memo = (ocl_arg_memo){ true, a->kind, key };
    }
    return GPUWS_OK;
}

/* The knob opencl_profile=1: every launch waits for its kernel and prints the kernel's own run time (the profiling
 * END - START of its event) to stderr. A diagnostic: it serialises the queue, so it shows what each kernel costs
 * on the device, not the gaps between launches (compare the sum with an event-timed run of the same work). */
static bool profile_kernels(const gpuws_context *ctx) { return ctx->tuning.opencl_profile; }

/* what: the kernel's name or the command's, where: its grid or size, already formatted. */
static void print_command_time(cl_event ev, const char *what, const char *where)
{
    cl_ulong q = 0, t0 = 0, t1 = 0;
    if (ocl.clWaitForEvents(1, &ev) == CL_SUCCESS &&
        ocl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) == CL_SUCCESS &&
        ocl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
        ocl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS)
        fprintf(stderr, "gpuws opencl profile: %-32s %s: %10.2f us (queued to start %.2f us)\n", what, where,
                (double)(t1 - t0) * 1e-3, (double)(t0 - q) * 1e-3);
    else fprintf(stderr, "gpuws opencl profile: %s: no profiling times\n", what);
    ocl.clReleaseEvent(ev);
}

static void print_kernel_time(cl_event ev, const char *name, const gpuws_launch_config *cfg)
{
    char where[96];
    snprintf(where, sizeof where, "grid (%u,%u,%u) block (%u,%u,%u)", cfg->grid[0], cfg->grid[1], cfg->grid[2],
             cfg->block[0], cfg->block[1], cfg->block[2]);
    print_command_time(ev, name, where);
}

/* NVIDIA's OpenCL fills past 2^31 bytes wrongly (driver 580 on an H200): one clEnqueueFillBuffer of 4.5 GiB from
 * offset 0 reports success and leaves the buffer's end unfilled, one of 2.5 GiB does not return, and a fill from
 * 1.5 GiB or 2.25 GiB that ends past 2^31 breaks the queue (CL_INVALID_COMMAND_QUEUE at the next wait). Such fills
 * are this kernel's: one pattern byte a work-item, 64-bit offsets, the pattern's 16 bytes as a uint4 (little-endian,
 * as NVIDIA's devices are). Built on first use; its arguments are set and the kernel enqueued under the context's
 * lock, since streams of other threads share it. */
static gpuws_status fill_by_kernel(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *pat, size_t ps, size_t n)
{
    gpuws_context *ctx = s->ctx;
    ocl_ctx *c = OCTX(ctx);
    static const char *src =
        "__kernel void gpuws_fill(__global uchar *p, ulong off, ulong n, uint ps, uint4 pat)\n"
        "{\n"
        "    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
        "        const uint k = (uint)(i % ps), w = k < 4 ? pat.x : k < 8 ? pat.y : k < 12 ? pat.z : pat.w;\n"
        "        p[off + i] = (uchar)(w >> (8 * (k & 3)));\n"
        "    }\n"
        "}\n";
    pthread_mutex_lock(&ctx->lock);
    const gpuws_status st = own_kernel(c, src, "gpuws_fill", &c->fill_prog, &c->fill_kernel);
    if (st) {
        pthread_mutex_unlock(&ctx->lock);
        return st;
    }
    unsigned char bytes[16] = { 0 };
    memcpy(bytes, pat, ps);
    cl_uint4 p4;
    memcpy(&p4, bytes, sizeof p4);
    const cl_ulong o64 = off, n64 = n;
    const cl_uint ps32 = (cl_uint)ps;
    const size_t global = 1u << 20;
    const cl_mem mem = MEM(b);
    cl_int e = ocl.clSetKernelArg(c->fill_kernel, 0, sizeof mem, &mem);
    if (e == CL_SUCCESS) e = ocl.clSetKernelArg(c->fill_kernel, 1, sizeof o64, &o64);
    if (e == CL_SUCCESS) e = ocl.clSetKernelArg(c->fill_kernel, 2, sizeof n64, &n64);
    if (e == CL_SUCCESS) e = ocl.clSetKernelArg(c->fill_kernel, 3, sizeof ps32, &ps32);
    if (e == CL_SUCCESS) e = ocl.clSetKernelArg(c->fill_kernel, 4, sizeof p4, &p4);
    if (e == CL_SUCCESS) e = ocl.clEnqueueNDRangeKernel(Q(s), c->fill_kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    pthread_mutex_unlock(&ctx->lock);
    CHECK_CL(e, "the fill kernel over %zu bytes at offset %zu", n, off);
    return GPUWS_OK;
}

/* Fills are timed by opencl_profile=1 as kernels are (some drivers implement them as their own kernels).
 * On the Oclgrind simulator a fill is a blocking host write of the repeated pattern: its uninitialised-value check
 * does not see clEnqueueFillBuffer and would report every later read of filled memory (docs/reliability.md,
 * "Oclgrind"; tests/oclgrind/host_calls.c, mode fill, shows it). */
static gpuws_status ocl_fill(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *pat, size_t ps, size_t n)
{
    if (OCTX(s->ctx)->oclgrind) {
        unsigned char *h = malloc(n ? n : 1);
        if (!h) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "host copy of a %zu-byte fill", n);
        for (size_t i = 0; i < n; i++) h[i] = ((const unsigned char *)pat)[i % ps];
        const cl_int e = ocl.clEnqueueWriteBuffer(Q(s), MEM(b), CL_TRUE, off, n, h, 0, NULL, NULL);
        free(h);
        CHECK_CL(e, "clEnqueueWriteBuffer of a %zu-byte fill", n);
        return GPUWS_OK;
    }
    if (OCTX(s->ctx)->nvidia && off + n > (size_t)INT32_MAX) return fill_by_kernel(s, b, off, pat, ps, n);
    cl_event ev = NULL;
    CHECK_CL(ocl.clEnqueueFillBuffer(Q(s), MEM(b), pat, ps, off, n, 0, NULL, profile_kernels(s->ctx) ? &ev : NULL),
             "clEnqueueFillBuffer of %zu bytes", n);
    if (ev) {
        char where[64];
        snprintf(where, sizeof where, "%zu bytes, pattern of %zu", n, ps);
        print_command_time(ev, "(clEnqueueFillBuffer)", where);
    }
    return GPUWS_OK;
}

static gpuws_status ocl_launch(gpuws_stream *s, gpuws_kernel *k, const gpuws_launch_config *cfg, const gpuws_arg *args,
                               size_t nargs)
{
    ocl_kernel *ok = k->impl;
    size_t global[3], local[3]; /* core checked that grid x block fits size_t */
    for (int i = 0; i < 3; i++) {
        local[i] = cfg->block[i];
        global[i] = (size_t)cfg->grid[i] * cfg->block[i];
        if (global[i] > OCTX(s->ctx)->max_global)
            return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                                "kernel '%s': %zu threads in dimension %d (grid %u x block %u) are more than the %llu "
                                "that %s addresses",
                                k->name, global[i], i, cfg->grid[i], cfg->block[i],
                                (unsigned long long)OCTX(s->ctx)->max_global, s->ctx->info.name);
    }
    cl_uint dims = (cfg->grid[2] > 1 || cfg->block[2] > 1) ? 3 : (cfg->grid[1] > 1 || cfg->block[1] > 1) ? 2 : 1;
    const bool profile = profile_kernels(s->ctx);
    cl_event ev = NULL;
    pthread_mutex_lock(&ok->lock);
    gpuws_status st = set_args(ok, args, nargs, k->name);
    cl_int e = CL_SUCCESS;
    if (!st) e = ocl.clEnqueueNDRangeKernel(Q(s), ok->k, dims, NULL, global, local, 0, NULL, profile ? &ev : NULL);
    pthread_mutex_unlock(&ok->lock);
    if (st) return st;
    CHECK_CL(e, "launching '%s' with grid (%u,%u,%u) block (%u,%u,%u)", k->name, cfg->grid[0], cfg->grid[1],
             cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2]);
    if (ev) print_kernel_time(ev, k->name, cfg);
    return GPUWS_OK;
}

const gpuws__backend gpuws__backend_opencl = {
    .kind = GPUWS_BACKEND_OPENCL,
    .name = "opencl",
    .probe = ocl_probe,
    .device_count = ocl_device_count,
    .device_info = ocl_device_info,
    .context_create = ocl_context_create,
    .context_destroy = ocl_context_destroy,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .stream_synchronize = ocl_stream_synchronize,
    .buffer_create = ocl_buffer_create,
    .buffer_destroy = ocl_buffer_destroy,
    .buffer_write = ocl_write,
    .buffer_read = ocl_read,
    .read_start = ocl_read_start,
    .read_wait = ocl_read_wait,
    .buffer_copy = ocl_copy,
    .buffer_fill = ocl_fill,
    .host_alloc = ocl_host_alloc,
    .host_pinned = ocl_host_pinned,
    .host_free = ocl_host_free,
    .event_create = ocl_event_create,
    .event_destroy = ocl_event_destroy,
    .event_record = ocl_event_record,
    .event_synchronize = ocl_event_synchronize,
    .event_elapsed_ms = ocl_event_elapsed,
    .stream_wait_event = ocl_stream_wait_event,
    .kernel_create = ocl_kernel_create,
    .kernel_destroy = ocl_kernel_destroy,
    .launch = ocl_launch,
    .dialect = gpuws__dialect_opencl,
    .program_build = ocl_program_build,
    .program_destroy = ocl_program_destroy,
    .program_kernel = ocl_program_kernel,
};
