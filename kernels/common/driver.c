#include "driver.h"

#include <stdio.h>
#include <string.h>

size_t gpuws_dtype_size(gpuws_dtype t)
{
    switch (t) {
    case GPUWS_F32:
    case GPUWS_I32:
    case GPUWS_U32: return 4;
    case GPUWS_F64:
    case GPUWS_I64: return 8;
    case GPUWS_I16: return 2;
    case GPUWS_U8: return 1;
    }
    return 0;
}

const char *gpuws_dtype_name(gpuws_dtype t)
{
    switch (t) {
    case GPUWS_F32: return "f32";
    case GPUWS_F64: return "f64";
    case GPUWS_I32: return "i32";
    case GPUWS_U32: return "u32";
    case GPUWS_I16: return "i16";
    case GPUWS_U8: return "u8";
    case GPUWS_I64: return "i64";
    }
    return "?";
}

/* The argument checks below run on every algorithm call: they test first and format the argument's name into a
 * message only when a check fails (an eager snprintf per argument was ~10% of convolve2d's host instructions). */
static bool live_buffer(const gpuws_buffer *buf) { return buf && gpuws__handle_live(buf, GPUWS__H_BUFFER); }

gpuws_status gpuws__buffer_context(const gpuws_buffer *buf, const char *name, gpuws_context **ctx)
{
    if (live_buffer(buf)) {
        *ctx = buf->ctx;
        return GPUWS_OK;
    }
    char what[64];
    snprintf(what, sizeof what, "argument '%s'", name);
    gpuws_status st = gpuws__check_buffer(buf, what);
    if (st) return st;
    *ctx = buf->ctx;
    return GPUWS_OK;
}

gpuws_status gpuws__check_array(gpuws_context *ctx, const gpuws_buffer *buf, const char *name, size_t n, size_t elem)
{
    size_t need;
    if (live_buffer(buf) && buf->ctx == ctx && !gpuws__mul_overflows(n, elem, &need) && need <= buf->size)
        return GPUWS_OK;
    char what[64];
    snprintf(what, sizeof what, "argument '%s'", name);
    gpuws_status st = gpuws__check_buffer(buf, what);
    if (st || (st = gpuws__check_same_context(ctx, buf, what))) return st;
    size_t bytes;
    if (gpuws__mul_overflows(n, elem, &bytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu elements of %zu bytes overflow size_t", what, n, elem);
    if (bytes > buf->size)
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE, "%s: %zu elements of %zu bytes need %zu bytes; the buffer has %zu",
                            what, n, elem, bytes, buf->size);
    return GPUWS_OK;
}

gpuws_status gpuws__driver_stream(gpuws_context *ctx, gpuws_stream **s, gpuws__stream_claim *claim, const char *fn)
{
    gpuws_status st = gpuws__resolve_stream(ctx, s, "argument 'stream'");
    return st ? st : gpuws__claim(claim, *s, fn);
}

gpuws_status gpuws__check_dtype(gpuws_context *ctx, gpuws_dtype dtype, const char *algo)
{
    if ((dtype == GPUWS_F64) && !ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s in f64 needs double precision, which %s lacks (no cl_khr_fp64)",
                            algo, ctx->info.name);
    return GPUWS_OK;
}

gpuws_status gpuws__launch_named(gpuws_stream *s, const char *name, const char *options, const gpuws_launch_config *cfg,
                                 const gpuws_arg *args, size_t nargs)
{
    gpuws_kernel *k;
    gpuws_status st = gpuws__kernel_get_ex(s->ctx, name, options, &k);
    if (st) return st;
    return gpuws_launch(s, k, cfg, args, nargs);
}

gpuws_status gpuws__kernel_block(gpuws_context *ctx, const char *name, const char *options, uint32_t want,
                                 gpuws_kernel **kernel, uint32_t *block)
{
    gpuws_status st = gpuws__kernel_get_ex(ctx, name, options, kernel);
    if (st) return st;
    uint32_t lim = (*kernel)->info.max_block_size < ctx->info.max_block_size ? (*kernel)->info.max_block_size
                                                                             : ctx->info.max_block_size;
    uint32_t b = 1;
    while (b * 2 <= want && b * 2 <= lim) b *= 2;
    *block = b;
    return GPUWS_OK;
}

gpuws_launch_config gpuws__config_1d(size_t n, uint32_t block, uint32_t max_blocks)
{
    size_t blocks = (n + block - 1) / block;
    if (blocks > max_blocks) blocks = max_blocks;
    if (blocks == 0) blocks = 1;
    gpuws_launch_config c = { { (uint32_t)blocks, 1, 1 }, { block, 1, 1 } };
    return c;
}

uint32_t gpuws__saturating_blocks(const gpuws_context *ctx, uint32_t per_cu)
{
    uint64_t b = (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1) * per_cu;
    if (b > ctx->info.max_grid_dims[0]) b = ctx->info.max_grid_dims[0];
    return b ? (uint32_t)b : 1;
}

bool gpuws__is_cpu_device(const gpuws_context *ctx) { return ctx->info.type == GPUWS_DEVICE_CPU; }

bool gpuws__is_nvidia_opencl(const gpuws_context *ctx)
{
    return ctx->backend->kind == GPUWS_BACKEND_OPENCL && gpuws__icontains(ctx->info.platform, "NVIDIA");
}

gpuws_status gpuws__reduce_slots(gpuws_sum_reducer reduce, void *user, size_t caller, size_t callers,
                                 const uint64_t *mine, size_t per, uint64_t *before, uint64_t *total, uint64_t *each)
{
    enum { ROUND = 64, PER_MAX = 10 };
    uint64_t w[ROUND * PER_MAX];
    if (per < 1 || per > PER_MAX)
        return gpuws__error(GPUWS_ERR_INTERNAL, "reduce_slots: %zu values a caller (1 to %d)", per, PER_MAX);
    for (size_t i = 0; i < per; i++) before[i] = total[i] = 0;
    for (size_t c0 = 0; c0 < callers; c0 += ROUND) {
        const size_t k = callers - c0 < ROUND ? callers - c0 : ROUND;
        memset(w, 0, k * per * sizeof *w);
        if (caller >= c0 && caller < c0 + k) memcpy(w + (caller - c0) * per, mine, per * sizeof *w);
        const gpuws_status st = reduce(user, w, k * per);
        if (st) return st;
        if (each) memcpy(each + c0 * per, w, k * per * sizeof *w);
        for (size_t c = 0; c < k; c++)
            for (size_t i = 0; i < per; i++) {
                if (c0 + c < caller) before[i] += w[c * per + i];
                total[i] += w[c * per + i];
            }
    }
    return GPUWS_OK;
}

void gpuws__agree_words(const uint64_t *v, size_t n, uint64_t *w)
{
    for (size_t i = 0; i < 4 * n; i++) {
        const uint64_t piece = v[i / 4] >> (16 * (i % 4)) & 0xffffu;
        w[i] = piece, w[4 * n + i] = piece * piece;
    }
}

size_t gpuws__agree_check(const uint64_t *w, size_t n, uint64_t callers)
{
    for (size_t i = 0; i < 4 * n; i++)
        if ((unsigned __int128)w[i] * w[i] != (unsigned __int128)callers * w[4 * n + i]) return i / 4;
    return n;
}
