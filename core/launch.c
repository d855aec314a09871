/* Kernel lookup and launch checks. */
#include "alloc.h"
#include "backend.h"
#include "driver_support.h"
#include "errors.h"
#include "objects.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gpuws_status gpuws__kernel_get_ex(gpuws_context *ctx, const char *name, const char *options, gpuws_kernel **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!name || !*name) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'name' is NULL or empty");
    if (!options) options = "";
    if (!ctx->backend->kernel_create)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "the %s backend has no kernels to launch (its algorithms run the C references)",
                            ctx->backend->name);
    pthread_mutex_lock(&ctx->lock);
    for (gpuws_kernel *k = ctx->kernels; k; k = k->next) {
        if (strcmp(k->name, name) == 0 && strcmp(k->options, options) == 0) {
            pthread_mutex_unlock(&ctx->lock);
            *out = k;
            return GPUWS_OK;
        }
    }
    gpuws_kernel *k = gpuws__calloc(1, sizeof *k);
    if (!k || !(k->name = gpuws__strdup(name)) || !(k->options = gpuws__strdup(options))) {
        pthread_mutex_unlock(&ctx->lock);
        if (k) gpuws__free(k->name);
        gpuws__free(k);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating kernel '%s' (%zu bytes and its names)", name,
                            sizeof *k);
    }
    k->ctx = ctx;
    /* The backend is called under the context lock, so two threads never build one program twice. */
    st = ctx->backend->kernel_create(k);
    if (!st && (st = gpuws__handle_add(k, GPUWS__H_KERNEL)) && ctx->backend->kernel_destroy)
        ctx->backend->kernel_destroy(k);
    if (st) {
        pthread_mutex_unlock(&ctx->lock);
        gpuws__free(k->name);
        gpuws__free(k->options);
        gpuws__free(k);
        return st;
    }
    k->info.name = k->name;
    k->info.num_params = (uint32_t)strlen(k->sig);
    k->next = ctx->kernels;
    ctx->kernels = k;
    pthread_mutex_unlock(&ctx->lock);
    *out = k;
    return GPUWS_OK;
}

gpuws_status gpuws_kernel_get(gpuws_context *ctx, const char *name, gpuws_kernel **k)
{
    return gpuws__kernel_get_ex(ctx, name, NULL, k);
}

gpuws_status gpuws_kernel_get_info(const gpuws_kernel *k, gpuws_kernel_info *info)
{
    if (!k || !gpuws__handle_live(k, GPUWS__H_KERNEL))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is not a live kernel");
    if (!info) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'info' is NULL");
    *info = k->info;
    return GPUWS_OK;
}

const char *gpuws_kernel_signature(const gpuws_kernel *k)
{
    if (!k || !gpuws__handle_live(k, GPUWS__H_KERNEL)) return NULL;
    return k->sig;
}

static const char *kind_name(int c)
{
    switch (c) {
    case 'b': return "buffer";
    case 'i': return "int32";
    case 'u': return "uint32";
    case 'l': return "int64";
    case 'L': return "uint64";
    case 'f': return "float";
    case 'd': return "double";
    case 's': return "local memory";
    default: return "unknown";
    }
}

gpuws_status gpuws__check_launch_args(const gpuws_kernel *k, const gpuws_arg *args, size_t nargs, size_t *local_total)
{
    size_t np = strlen(k->sig);
    if (nargs != np)
        return gpuws__error(GPUWS_ERR_ARGUMENTS, "kernel '%s' takes %zu argument(s), %zu given", k->name, np, nargs);
    if (nargs && !args)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'args' is NULL with nargs = %zu", nargs);
    size_t total = 0;
    for (size_t i = 0; i < nargs; i++) {
        int want = k->sig[i], got = (int)args[i].kind;
        if (!strchr("biulLfds", got))
            return gpuws__error(GPUWS_ERR_ARGUMENTS, "kernel '%s' argument %zu: %d is not a gpuws_arg_kind", k->name, i,
                                got);
        if (want != '?' && want != got)
            return gpuws__error(GPUWS_ERR_ARGUMENTS, "kernel '%s' argument %zu: expects %s, got %s", k->name, i,
                                kind_name(want), kind_name(got));
        if (got == 'b') {
            gpuws_status st = gpuws__check_buffer(args[i].v.buffer, "kernel argument");
            if (st) return gpuws__error_prefix(st, "kernel '%s' argument %zu", k->name, i);
            if (args[i].v.buffer->ctx != k->ctx)
                return gpuws__error(GPUWS_ERR_WRONG_CONTEXT,
                                    "kernel '%s' argument %zu: buffer belongs to another context", k->name, i);
        } else if (got == 's') {
            if (args[i].v.local_bytes == 0)
                return gpuws__error(GPUWS_ERR_ARGUMENTS, "kernel '%s' argument %zu: local memory of 0 bytes", k->name,
                                    i);
            /* each region rounded up to 16 bytes: CUDA's and the CPU backend's layout, and what NVIDIA's OpenCL
             * needs too (a launch at the device's limit minus one byte fails there with CL_OUT_OF_RESOURCES) */
            size_t rounded = (args[i].v.local_bytes + 15) & ~(size_t)15;
            if (rounded < args[i].v.local_bytes || gpuws__add_overflows(total, rounded, &total))
                return gpuws__error(GPUWS_ERR_OVERFLOW, "kernel '%s': local memory sizes overflow", k->name);
        }
    }
    *local_total = total;
    return GPUWS_OK;
}

gpuws_status gpuws_launch(gpuws_stream *s, gpuws_kernel *k, const gpuws_launch_config *cfg, const gpuws_arg *args,
                          size_t nargs)
{
    if (!k || !gpuws__handle_live(k, GPUWS__H_KERNEL))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is not a live kernel");
    gpuws_context *ctx = k->ctx;
    gpuws_status st = gpuws__resolve_stream(ctx, &s, "argument 'stream'");
    if (st) return st;
    if (!cfg) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'config' is NULL");
    const gpuws_device_info *d = &ctx->info;
    const uint32_t *g = cfg->grid, *b = cfg->block;
    uint64_t threads = 1, blocks = 1;
    bool too_many_blocks = false;
    for (int i = 0; i < 3; i++) {
        if (g[i] == 0 || b[i] == 0)
            return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                                "kernel '%s': grid (%u,%u,%u) and block (%u,%u,%u) need every dimension >= 1", k->name,
                                g[0], g[1], g[2], b[0], b[1], b[2]);
        if (b[i] > d->max_block_dims[i])
            return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                                "kernel '%s': block dimension %d is %u but %s allows at most %u", k->name, i, b[i],
                                d->name, d->max_block_dims[i]);
        if (g[i] > d->max_grid_dims[i])
            return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                                "kernel '%s': grid (%u,%u,%u) has %u blocks in dimension %d but %s allows at most %llu",
                                k->name, g[0], g[1], g[2], g[i], i, d->name, (unsigned long long)d->max_grid_dims[i]);
#if SIZE_MAX < UINT64_MAX
        if ((uint64_t)g[i] * b[i] > SIZE_MAX) /* OpenCL's global work size is a size_t per dimension */
            return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                                "kernel '%s': grid %u x block %u in dimension %d is more threads than a size_t holds",
                                k->name, g[i], b[i], i);
#endif
        threads *= b[i];
        too_many_blocks |= __builtin_mul_overflow(blocks, g[i], &blocks);
    }
    if (too_many_blocks || blocks > d->max_grid_blocks) {
        /* the totals, exact where they fit 64 bits */
        const double all = (double)g[0] * g[1] * g[2];
        char nb[32], nt[40];
        uint64_t t;
        if (too_many_blocks) snprintf(nb, sizeof nb, "about %.3g", all);
        else snprintf(nb, sizeof nb, "%llu", (unsigned long long)blocks);
        if (too_many_blocks || __builtin_mul_overflow(blocks, threads, &t))
            snprintf(nt, sizeof nt, "about %.3g", all * (double)threads);
        else snprintf(nt, sizeof nt, "%llu", (unsigned long long)t);
        return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG,
                            "kernel '%s': grid (%u,%u,%u) of blocks (%u,%u,%u) is %s blocks, %s threads in all, but %s "
                            "runs at most %llu blocks per launch",
                            k->name, g[0], g[1], g[2], b[0], b[1], b[2], nb, nt, d->name,
                            (unsigned long long)d->max_grid_blocks);
    }
    if (threads > d->max_block_size || threads > k->info.max_block_size)
        return gpuws__error(GPUWS_ERR_LAUNCH_CONFIG, "kernel '%s': block of %llu threads exceeds the limit of %u on %s",
                            k->name, (unsigned long long)threads,
                            k->info.max_block_size < d->max_block_size ? k->info.max_block_size : d->max_block_size,
                            d->name);
    size_t local = 0;
    if ((st = gpuws__check_launch_args(k, args, nargs, &local))) return st;
    uint64_t shared = (uint64_t)local + k->info.static_shared_bytes;
    if (shared > d->shared_mem_bytes)
        return gpuws__error(
            GPUWS_ERR_LAUNCH_CONFIG,
            "kernel '%s': %llu bytes of shared/local memory (%zu dynamic + %llu static) exceed the %llu bytes of %s",
            k->name, (unsigned long long)shared, local, (unsigned long long)k->info.static_shared_bytes,
            (unsigned long long)d->shared_mem_bytes, d->name);
    return ctx->backend->launch(s, k, cfg, args, nargs);
}
