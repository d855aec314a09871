/* The backend registry: the only place core names backends. */
#include "backend.h"
#include "errors.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static const char *const backend_names[GPUWS_BACKEND_COUNT] = { "cpu", "opencl", "cuda" };

const gpuws__backend *gpuws__backend_get(gpuws_backend_kind kind)
{
    switch (kind) {
    case GPUWS_BACKEND_CPU: return &gpuws__backend_cpu;
#ifdef GPUWS_HAVE_OPENCL
    case GPUWS_BACKEND_OPENCL: return &gpuws__backend_opencl;
#endif
#ifdef GPUWS_HAVE_CUDA
    case GPUWS_BACKEND_CUDA: return &gpuws__backend_cuda;
#endif
    default: return NULL;
    }
}

static bool valid_kind(gpuws_backend_kind k) { return (int)k >= 0 && (int)k < GPUWS_BACKEND_COUNT; }

gpuws_status gpuws_backend_from_name(const char *name, gpuws_backend_kind *kind)
{
    if (!name) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'name' is NULL");
    if (!kind) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kind' is NULL");
    for (int i = 0; i < GPUWS_BACKEND_COUNT; i++) {
        if (gpuws__strcasecmp(name, backend_names[i]) == 0) {
            *kind = (gpuws_backend_kind)i;
            return GPUWS_OK;
        }
    }
    return gpuws__error(GPUWS_ERR_UNKNOWN_BACKEND, "unknown backend '%s'; valid names: cuda, opencl, cpu", name);
}

gpuws_status gpuws_backend_get_info(gpuws_backend_kind kind, gpuws_backend_info *info)
{
    if (!info) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'info' is NULL");
    if (!valid_kind(kind))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "backend kind %d is not a gpuws_backend_kind", (int)kind);
    memset(info, 0, sizeof *info);
    info->kind = kind;
    info->name = backend_names[kind];
    const gpuws__backend *b = gpuws__backend_get(kind);
    if (!b) {
        snprintf(info->reason, sizeof info->reason, "not built into this library (configure with GPUWS_WITH_%s=ON)",
                 kind == GPUWS_BACKEND_CUDA ? "CUDA" : "OPENCL");
        return GPUWS_OK;
    }
    info->built_in = 1;
    info->available = b->probe(info->reason, sizeof info->reason) == GPUWS_OK;
    if (info->available) info->reason[0] = 0;
    return GPUWS_OK;
}

static gpuws_status usable_backend(gpuws_backend_kind kind, const gpuws__backend **out)
{
    if (!valid_kind(kind))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "backend kind %d is not a gpuws_backend_kind", (int)kind);
    gpuws_backend_info bi;
    gpuws_backend_get_info(kind, &bi);
    if (!bi.available) return gpuws__error(GPUWS_ERR_BACKEND_UNAVAILABLE, "%s not available: %s", bi.name, bi.reason);
    *out = gpuws__backend_get(kind);
    return GPUWS_OK;
}

gpuws_status gpuws_device_count(gpuws_backend_kind kind, const char *platform_filter, size_t *count)
{
    if (!count) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'count' is NULL");
    *count = 0;
    const gpuws__backend *b;
    gpuws_status st = usable_backend(kind, &b);
    if (st) return st;
    return b->device_count(platform_filter, count);
}

gpuws_status gpuws_device_get_info(gpuws_backend_kind kind, const char *platform_filter, size_t index,
                                   gpuws_device_info *info)
{
    if (!info) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'info' is NULL");
    const gpuws__backend *b;
    gpuws_status st = usable_backend(kind, &b);
    if (st) return st;
    size_t n = 0;
    if ((st = b->device_count(platform_filter, &n))) return st;
    if (index >= n)
        return gpuws__error(GPUWS_ERR_NO_DEVICE, "%s has %zu device(s)%s%s%s; index %zu is out of range", b->name, n,
                            platform_filter ? " on platforms matching '" : "", platform_filter ? platform_filter : "",
                            platform_filter ? "'" : "", index);
    memset(info, 0, sizeof *info);
    return b->device_info(platform_filter, index, info);
}

#ifndef GPUWS_HAVE_OPENCL
void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds)
{
    *hits = *misses = *rejected = *builds = 0;
}
#endif
