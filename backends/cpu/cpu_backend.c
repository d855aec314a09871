/* CPU backend: host memory, streams that run each operation when it is submitted (so trivially in order),
 * events that read the monotonic clock. Algorithms run their scalar C references (see kernels/<algo>/); user
 * programs are compiled by the system C compiler and run on all cores (cpu_program.c). */
#include "cpu_program.h"
#include "../../core/threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static gpuws_status cpu_probe(char *reason, size_t n)
{
    if (n) reason[0] = 0;
    return GPUWS_OK;
}

static gpuws_status cpu_device_count(const char *filter, size_t *count)
{
    (void)filter;
    *count = 1;
    return GPUWS_OK;
}

static void cpu_model_name(char *out, size_t n)
{
    gpuws__strlcpy(out, "host CPU", n);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                gpuws__strlcpy(out, c, n);
            }
            break;
        }
    }
    fclose(f);
}

static gpuws_status cpu_device_info(const char *filter, size_t index, gpuws_device_info *d)
{
    (void)filter;
    (void)index;
    d->backend = GPUWS_BACKEND_CPU;
    d->type = GPUWS_DEVICE_CPU;
    cpu_model_name(d->name, sizeof d->name);
    gpuws__strlcpy(d->vendor, "host", sizeof d->vendor);
    gpuws__strlcpy(d->platform, "gpuws scalar reference", sizeof d->platform);
    gpuws__strlcpy(d->driver_version, "-", sizeof d->driver_version);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    d->global_mem_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    d->max_alloc_bytes = d->global_mem_bytes;
    d->compute_units = gpuws__cpu_count(); /* those the process may run on */
    /* What user kernels get (the algorithms run their scalar references): blocks of work-items run as loops or
     * fibers on one core, GW_SHARED and GW_LOCAL memory in host memory. */
    d->max_block_size = 1024;
    d->max_block_dims[0] = d->max_block_dims[1] = 1024;
    d->max_block_dims[2] = 64;
    d->max_grid_dims[0] = d->max_grid_dims[1] = d->max_grid_dims[2] = UINT32_MAX;
    d->max_grid_blocks = UINT32_MAX; /* as on OpenCL, for drivers that size a grid before they take the reference */
    d->shared_mem_bytes = 64 * 1024;
    d->shared_mem_per_unit = 64 * 1024;
    d->warp_size = 1;
    d->fp64 = 1;
    d->unified_memory = 1;
    return GPUWS_OK;
}

typedef struct {
    struct cpu_pool *pool; /* threads for user kernels, made at the first launch */
    pthread_mutex_t lock;
} cpu_ctx;

static gpuws_status cpu_context_create(gpuws_context *ctx, const char *filter, size_t index)
{
    gpuws_status st = cpu_device_info(filter, index, &ctx->info);
    if (st) return st;
    cpu_ctx *c = gpuws__calloc(1, sizeof *c);
    if (!c) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a CPU context (%zu bytes)", sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    ctx->impl = c;
    return GPUWS_OK;
}

static void cpu_context_destroy(gpuws_context *ctx)
{
    cpu_ctx *c = ctx->impl;
    if (!c) return;
    gpuws__cpu_pool_destroy(c->pool);
    pthread_mutex_destroy(&c->lock);
    gpuws__free(c);
}

static gpuws_status cpu_launch(gpuws_stream *s, gpuws_kernel *k, const gpuws_launch_config *cfg, const gpuws_arg *args,
                               size_t nargs)
{
    cpu_ctx *c = s->ctx->impl;
    return gpuws__cpu_launch(&c->pool, &c->lock, k, cfg, args, nargs);
}

extern const char gpuws__dialect_cpu[];

static gpuws_status cpu_stream_create(gpuws_stream *s)
{
    (void)s;
    return GPUWS_OK;
}
static void cpu_stream_destroy(gpuws_stream *s) { (void)s; }
static gpuws_status cpu_stream_synchronize(gpuws_stream *s)
{
    (void)s;
    return GPUWS_OK;
}

static gpuws_status cpu_alloc(size_t n, void **p, const char *what)
{
    size_t rounded = (n + 63) & ~(size_t)63;
    if (rounded < n)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s of %zu bytes: more than the address space", what, n);
    *p = gpuws__aligned_alloc(64, rounded);
    if (!*p) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s of %zu bytes: host allocation failed", what, n);
    return GPUWS_OK;
}

static gpuws_status cpu_buffer_create(gpuws_buffer *b) { return cpu_alloc(b->size, &b->impl, "buffer"); }
static void cpu_buffer_destroy(gpuws_buffer *b) { gpuws__free(b->impl); }

/* A large copy or fill on several threads: one core copies far slower than memory moves, and a buffer's pages are
 * mapped (zeroed by the kernel) at their first write, which is this copy's for an upload into a new buffer. */
#define CPU_PARALLEL_FROM ((size_t)8 << 20)

static void cpu_move_bytes(void *dst, const void *src, unsigned char byte, size_t n)
{
    if (n >= CPU_PARALLEL_FROM) gpuws__copy_bytes(dst, src, byte, n);
    else if (src) memcpy(dst, src, n);
    else memset(dst, byte, n);
}

static gpuws_status cpu_write(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *src, size_t n, int blocking)
{
    (void)s;
    (void)blocking;
    cpu_move_bytes((char *)b->impl + off, src, 0, n);
    return GPUWS_OK;
}

static gpuws_status cpu_read(gpuws_stream *s, const gpuws_buffer *b, size_t off, void *dst, size_t n, int blocking)
{
    (void)s;
    (void)blocking;
    cpu_move_bytes(dst, (const char *)b->impl + off, 0, n);
    return GPUWS_OK;
}

static gpuws_status cpu_copy(gpuws_stream *s, gpuws_buffer *d, size_t doff, const gpuws_buffer *src, size_t soff,
                             size_t n)
{
    (void)s;
    cpu_move_bytes((char *)d->impl + doff, (const char *)src->impl + soff, 0, n);
    return GPUWS_OK;
}

static gpuws_status cpu_fill(gpuws_stream *s, gpuws_buffer *b, size_t off, const void *pat, size_t ps, size_t n)
{
    (void)s;
    char *p = (char *)b->impl + off;
    if (ps == 1) {
        cpu_move_bytes(p, NULL, *(const unsigned char *)pat, n);
        return GPUWS_OK;
    }
    for (size_t i = 0; i < n; i += ps) memcpy(p + i, pat, ps);
    return GPUWS_OK;
}

static gpuws_status cpu_host_alloc(gpuws_context *ctx, size_t n, void **p)
{
    (void)ctx;
    return cpu_alloc(n, p, "host memory");
}

static void cpu_host_free(gpuws_context *ctx, void *p)
{
    (void)ctx;
    gpuws__free(p);
}

static gpuws_status cpu_event_create(gpuws_event *e)
{
    e->impl = gpuws__calloc(1, sizeof(struct timespec));
    return e->impl ? GPUWS_OK
                   : gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating an event (%zu bytes)", sizeof(struct timespec));
}

static void cpu_event_destroy(gpuws_event *e) { gpuws__free(e->impl); }

static gpuws_status cpu_event_record(gpuws_event *e, gpuws_stream *s)
{
    (void)s;
    clock_gettime(CLOCK_MONOTONIC, (struct timespec *)e->impl);
    return GPUWS_OK;
}

static gpuws_status cpu_event_synchronize(gpuws_event *e)
{
    (void)e;
    return GPUWS_OK;
}

static gpuws_status cpu_event_elapsed(gpuws_event *a, gpuws_event *b, double *ms)
{
    const struct timespec *x = a->impl, *y = b->impl;
    *ms = (double)(y->tv_sec - x->tv_sec) * 1e3 + (double)(y->tv_nsec - x->tv_nsec) * 1e-6;
    return GPUWS_OK;
}

const gpuws__backend gpuws__backend_cpu = {
    .kind = GPUWS_BACKEND_CPU,
    .name = "cpu",
    .probe = cpu_probe,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .context_create = cpu_context_create,
    .context_destroy = cpu_context_destroy,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .buffer_create = cpu_buffer_create,
    .buffer_destroy = cpu_buffer_destroy,
    .buffer_write = cpu_write,
    .buffer_read = cpu_read,
    .buffer_copy = cpu_copy,
    .buffer_fill = cpu_fill,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_ms = cpu_event_elapsed,
    .kernel_create = NULL, /* no built-in kernels: the algorithms run their references */
    .kernel_destroy = gpuws__cpu_kernel_destroy,
    .launch = cpu_launch,
    .dialect = gpuws__dialect_cpu,
    .program_text = gpuws__cpu_program_text,
    .program_build = gpuws__cpu_program_build,
    .program_destroy = gpuws__cpu_program_destroy,
    .program_kernel = gpuws__cpu_program_kernel,
};
