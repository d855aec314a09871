/* Host driver for the ufuncs: operand checks, one launch per call on GPU backends, the double-precision references
 * rounded to f32 on the CPU backend; plus the chunked, overlapped host-to-host pipeline of the hidden layer. */
#include "../common/driver.h"
#include "../../core/options.h"
#include "ufunc_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPERANDS 4

typedef struct {
    size_t n;
    int count;
    gpuws_operand op[MAX_OPERANDS];
    const char *names[MAX_OPERANDS];
    uint32_t arrays; /* bit k: operand k is an array */
} operands;

/* Context from out, the stream claimed for the call `fn`; every array operand live, in that context, with n f32
 * values; out likewise. */
static gpuws_status check(gpuws_stream **s, gpuws__stream_claim *claim, const char *fn, operands *o, gpuws_buffer *out,
                          gpuws_context **ctx)
{
    gpuws_status st = gpuws__buffer_context(out, "out", ctx);
    if (st || (st = gpuws__driver_stream(*ctx, s, claim, fn)) ||
        (st = gpuws__check_array(*ctx, out, "out", o->n, sizeof(float))))
        return st;
    o->arrays = 0;
    for (int k = 0; k < o->count; k++) {
        if (!o->op[k].array) continue;
        if ((st = gpuws__check_array(*ctx, o->op[k].array, o->names[k], o->n, sizeof(float)))) return st;
        o->arrays |= 1u << k;
    }
    return GPUWS_OK;
}

/* 1-D grid for the map kernels: `items` work-items, each taking two groups of 16 bytes (4 floats, 8 int16) per
 * step. GPUs: one step per work-item where the grid allows it (a grid of n/8 work-items; the kernels' grid-stride
 * loops take over past the largest grid): a full grid reaches more of the copy bandwidth than a few blocks per SM
 * looping over the array. CPU OpenCL devices (PoCL): one work-item per pair of groups as well. */
static gpuws_status launch_mapped(gpuws_stream *s, const char *kernel, size_t items, const gpuws_arg *args,
                                  size_t nargs)
{
    const bool cpu = gpuws__is_cpu_device(s->ctx);
    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st = gpuws__kernel_block(s->ctx, kernel, NULL, cpu ? 64 : 256, &k, &block);
    if (st) return st;
    const uint64_t grid_max = s->ctx->info.max_grid_dims[0] < UINT32_MAX ? s->ctx->info.max_grid_dims[0] : UINT32_MAX;
    gpuws_launch_config cfg = gpuws__config_1d(items, block, (uint32_t)grid_max);
    return gpuws_launch(s, k, &cfg, args, nargs);
}

static gpuws_status launch_map(gpuws_stream *s, const char *kernel, const operands *o, gpuws_buffer *out)
{
    gpuws_arg args[2 * MAX_OPERANDS + 3];
    size_t k = 0;
    for (int i = 0; i < o->count; i++) {
        /* a scalar operand still fills the buffer slot (never read): out is a valid buffer of this context */
        args[k++] = gpuws_arg_buffer(o->op[i].array ? (gpuws_buffer *)o->op[i].array : out);
        args[k++] = gpuws_arg_f32((float)o->op[i].scalar);
    }
    args[k++] = gpuws_arg_buffer(out);
    args[k++] = gpuws_arg_u64(o->n);
    args[k++] = gpuws_arg_u32(o->arrays);
    return launch_mapped(s, kernel, (o->n + 7) / 8, args, k);
}

/* The CPU backend: the double formula on the f32 inputs, rounded once. Operands are read before out is written
 * element by element, so out may alias an input. */
static void map_cpu(const operands *o, gpuws_buffer *out, gpuws_ufunc_id which)
{
    const float *p[MAX_OPERANDS];
    float sc[MAX_OPERANDS];
    for (int k = 0; k < o->count; k++) {
        p[k] = o->op[k].array ? gpuws__cpu_ptr(o->op[k].array) : NULL;
        sc[k] = (float)o->op[k].scalar;
    }
    float *y = gpuws__cpu_ptr(out);
    for (size_t i = 0; i < o->n; i++) {
        double a[MAX_OPERANDS] = { 0 };
        for (int k = 0; k < o->count; k++) a[k] = p[k] ? p[k][i] : sc[k];
        y[i] = (float)gpuws_ufunc_ref_eval(which, a);
    }
}

static gpuws_status run_map(gpuws_stream *s, operands *o, gpuws_buffer *out, const char *kernel, gpuws_ufunc_id which)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = check(&s, &claim, kernel + strlen("ufunc_"), o, out, &ctx);
    if (st || o->n == 0) return st;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        map_cpu(o, out, which);
        return GPUWS_OK;
    }
    return launch_map(s, kernel, o, out);
}

gpuws_status gpuws_gaussian_pdf(gpuws_stream *s, size_t n, gpuws_operand x, gpuws_operand mean, gpuws_operand sigma,
                                gpuws_buffer *out)
{
    operands o = { n, 3, { x, mean, sigma }, { "x", "mean", "sigma" }, 0 };
    return run_map(s, &o, out, "ufunc_gaussian_pdf", GPUWS_UFUNC_GAUSSIAN_PDF);
}

gpuws_status gpuws_polar_distance(gpuws_stream *s, size_t n, gpuws_operand rho1, gpuws_operand theta1,
                                  gpuws_operand rho2, gpuws_operand theta2, gpuws_buffer *out)
{
    operands o = { n, 4, { rho1, theta1, rho2, theta2 }, { "rho1", "theta1", "rho2", "theta2" }, 0 };
    return run_map(s, &o, out, "ufunc_polar_distance", GPUWS_UFUNC_POLAR_DISTANCE);
}

gpuws_status gpuws_make_pulses(gpuws_stream *s, size_t n, gpuws_operand i, gpuws_operand period,
                               gpuws_operand amplitude, gpuws_buffer *out)
{
    operands o = { n, 3, { i, period, amplitude }, { "i", "period", "amplitude" }, 0 };
    return run_map(s, &o, out, "ufunc_make_pulses", GPUWS_UFUNC_MAKE_PULSES);
}

gpuws_status gpuws_hypot(gpuws_stream *s, size_t n, gpuws_operand x, gpuws_operand y, gpuws_buffer *out)
{
    operands o = { n, 2, { x, y }, { "x", "y" }, 0 };
    return run_map(s, &o, out, "ufunc_hypot", GPUWS_UFUNC_HYPOT);
}

/* ---- hypot with NaN rejected ---------------------------------------------------------------------------- */

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_nan_partials = { "ufunc.nan_partials" };

/* The first index < n where an array operand holds NaN (n if none), found on the device. */
static gpuws_status find_nan(gpuws_stream *s, const operands *o, gpuws_buffer *out, size_t *first)
{
    gpuws_context *ctx = s->ctx;
    *first = o->n;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        for (int k = 0; k < 2; k++) {
            if (!o->op[k].array) continue;
            const float *p = gpuws__cpu_ptr(o->op[k].array);
            for (size_t i = 0; i < *first; i++)
                if (isnan(p[i])) *first = i;
        }
        return GPUWS_OK;
    }
    const bool cpu = gpuws__is_cpu_device(ctx);
    gpuws_kernel *kfind;
    uint32_t block;
    gpuws_status kst = gpuws__kernel_block(ctx, "ufunc_find_nan", NULL, cpu ? 64 : 256, &kfind, &block);
    if (kst) return kst;
    gpuws_launch_config cfg = gpuws__config_1d(o->n, block, gpuws__saturating_blocks(ctx, cpu ? 4 : 8));
    const uint32_t groups = cfg.grid[0];
    uint64_t *host = gpuws__malloc((size_t)groups * sizeof *host);
    if (!host)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "hypot_checked: %u partial results (%zu bytes)", groups,
                            (size_t)groups * sizeof *host);
    gpuws_buffer *partials;
    gpuws_status st = gpuws__stream_scratch(s, &key_nan_partials, (size_t)groups * sizeof *host, &partials);
    gpuws_arg a[] = { gpuws_arg_buffer(o->op[0].array ? (gpuws_buffer *)o->op[0].array : out),
                      gpuws_arg_buffer(o->op[1].array ? (gpuws_buffer *)o->op[1].array : out),
                      gpuws_arg_buffer(partials),
                      gpuws_arg_u64(o->n),
                      gpuws_arg_u32(o->arrays),
                      gpuws_arg_local((size_t)block * 8) };
    if (!st) st = gpuws_launch(s, kfind, &cfg, a, GPUWS__NARGS(a));
    if (!st) st = gpuws_buffer_read_async(s, partials, 0, host, (size_t)groups * sizeof *host);
    if (!st) st = gpuws_stream_synchronize(s);
    for (uint32_t g = 0; !st && g < groups; g++)
        if (host[g] < *first) *first = (size_t)host[g];
    gpuws__free(host);
    return st;
}

gpuws_status gpuws_hypot_checked(gpuws_stream *s, size_t n, gpuws_operand x, gpuws_operand y, gpuws_buffer *out)
{
    operands o = { n, 2, { x, y }, { "x", "y" }, 0 };
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = check(&s, &claim, "hypot_checked", &o, out, &ctx);
    if (st) return st;
    for (int k = 0; k < 2; k++)
        if (!o.op[k].array && isnan(o.op[k].scalar))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "hypot_checked: scalar argument '%s' is NaN", o.names[k]);
    if (n == 0) return GPUWS_OK;
    size_t first;
    if (o.arrays && (st = find_nan(s, &o, out, &first))) return st;
    if (o.arrays && first < n) {
        int k = 1; /* x or y: look at x[first] when x is an array */
        float v;
        if ((o.arrays & 1u) && (st = gpuws_buffer_read(o.op[0].array, first * sizeof v, &v, sizeof v))) return st;
        if ((o.arrays & 1u) && isnan(v)) k = 0;
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "hypot_checked: argument '%s' is NaN at index %zu (of %zu)",
                            o.names[k], first, n);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        map_cpu(&o, out, GPUWS_UFUNC_HYPOT);
        return GPUWS_OK;
    }
    if ((st = launch_map(s, "ufunc_hypot", &o, out))) return st;
    return gpuws_stream_synchronize(s);
}

/* ---- zero_suppress ---------------------------------------------------------------------------------------- */

/* w < threshold  <=>  w < the smallest float >= threshold (for float w), and <=> w < ceil(threshold) (integer w). */
static float threshold_f32(double t)
{
    float f = (float)t;
    if ((double)f < t) f = nextafterf(f, INFINITY);
    return f;
}

static int32_t threshold_i16(double t)
{
    const double c = ceil(t);
    return c < -32768.0 ? -32768 : c > 32768.0 ? 32768 : (int32_t)c;
}

gpuws_status gpuws_zero_suppress(gpuws_stream *s, gpuws_dtype dt, size_t n, const gpuws_buffer *w, double threshold,
                                 gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(w, "w", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "zero_suppress"))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_I16)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "zero_suppress: dtype %s is not f32 or i16",
                            gpuws_dtype_name(dt));
    if (isnan(threshold)) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "zero_suppress: threshold is NaN");
    const size_t es = gpuws_dtype_size(dt);
    if ((st = gpuws__check_array(ctx, w, "w", n, es)) || (st = gpuws__check_array(ctx, out, "out", n, es))) return st;
    if (n == 0) return GPUWS_OK;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dt == GPUWS_F32) {
            const float *x = gpuws__cpu_ptr(w);
            float *y = gpuws__cpu_ptr(out);
            for (size_t i = 0; i < n; i++) y[i] = gpuws_ufunc_ref_zero_suppress_f32(x[i], threshold);
        } else {
            const int16_t *x = gpuws__cpu_ptr(w);
            int16_t *y = gpuws__cpu_ptr(out);
            for (size_t i = 0; i < n; i++) y[i] = gpuws_ufunc_ref_zero_suppress_i16(x[i], threshold);
        }
        return GPUWS_OK;
    }
    gpuws_arg a[] = { gpuws_arg_buffer((gpuws_buffer *)w), gpuws_arg_buffer(out), gpuws_arg_u64(n),
                      dt == GPUWS_F32 ? gpuws_arg_f32(threshold_f32(threshold))
                                      : gpuws_arg_i32(threshold_i16(threshold)) };
    return launch_mapped(s, dt == GPUWS_F32 ? "ufunc_zero_suppress_f32" : "ufunc_zero_suppress_i16",
                         dt == GPUWS_I16 ? (n + 15) / 16 : (n + 7) / 8, a, GPUWS__NARGS(a));
}

/* ---- the hidden layer --------------------------------------------------------------------------------------- */

static void hidden_cpu(size_t n, const float *g, const float *w, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = (float)gpuws_ufunc_ref_hidden_layer(g[i], w[i]);
}

static gpuws_status hidden_launch(gpuws_stream *s, gpuws_buffer *g, gpuws_buffer *w, gpuws_buffer *out, size_t offset,
                                  size_t n)
{
    gpuws_arg a[] = { gpuws_arg_buffer(g), gpuws_arg_buffer(w), gpuws_arg_buffer(out), gpuws_arg_u64(offset),
                      gpuws_arg_u64(n) };
    return launch_mapped(s, "ufunc_hidden_layer", (n + 7) / 8, a, GPUWS__NARGS(a));
}

gpuws_status gpuws_hidden_layer(gpuws_stream *s, size_t n, const gpuws_buffer *g, const gpuws_buffer *w,
                                gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(out, "out", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "hidden_layer")) ||
        (st = gpuws__check_array(ctx, g, "greyscales", n, sizeof(float))) ||
        (st = gpuws__check_array(ctx, w, "weights", n, sizeof(float))) ||
        (st = gpuws__check_array(ctx, out, "out", n, sizeof(float))))
        return st;
    if (n == 0) return GPUWS_OK;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        hidden_cpu(n, gpuws__cpu_ptr(g), gpuws__cpu_ptr(w), gpuws__cpu_ptr(out));
        return GPUWS_OK;
    }
    return hidden_launch(s, (gpuws_buffer *)g, (gpuws_buffer *)w, out, 0, n);
}

#define PIPE_MAX_STREAMS 8

/* The rings pipeline keeps on its leading stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_ring_g = { "ufunc.ring_g" };
static const gpuws__stream_key key_ring_w = { "ufunc.ring_w" };

/* Chunk c goes to stream c % S and to ring slot c % S of two device buffers (greyscales, overwritten in place by
 * the result, and weights): upload, kernel, download, all asynchronous. A slot is reused only by its own in-order
 * stream, so no chunk overwrites one still in use, and chunks on different streams overlap. */
static gpuws_status pipeline(gpuws_context *ctx, size_t n, const float *g, const float *w, float *out, size_t chunk,
                             int ns)
{
    GPUWS__CLAIM(claim);
    gpuws_stream *streams[PIPE_MAX_STREAMS] = { NULL };
    gpuws_buffer *ring_g, *ring_w;
    gpuws_status st;
    /* The default stream leads and owns the rings; earlier work on it may still use its scratch. */
    if ((st = gpuws__driver_stream(ctx, &streams[0], &claim, "hidden_layer_host")) ||
        (st = gpuws_stream_synchronize(streams[0])) ||
        (st = gpuws__stream_scratch(streams[0], &key_ring_g, (size_t)ns * chunk * sizeof(float), &ring_g)) ||
        (st = gpuws__stream_scratch(streams[0], &key_ring_w, (size_t)ns * chunk * sizeof(float), &ring_w)))
        return st;
    int made = 1;
    for (; made < ns && !st; made++) st = gpuws_stream_create(ctx, &streams[made]);
    if (st) made--;
    for (size_t c = 0; !st && c * chunk < n; c++) {
        const size_t off = c * chunk, len = n - off < chunk ? n - off : chunk, slot = (c % (size_t)ns) * chunk;
        gpuws_stream *s = streams[c % (size_t)ns];
        const size_t bytes = len * sizeof(float), dev = slot * sizeof(float);
        if ((st = gpuws_buffer_write_async(s, ring_g, dev, g + off, bytes)) ||
            (st = gpuws_buffer_write_async(s, ring_w, dev, w + off, bytes)) ||
            (st = hidden_launch(s, ring_g, ring_w, ring_g, slot, len)))
            break;
        st = gpuws_buffer_read_async(s, ring_g, dev, out + off, bytes);
    }
    /* wait for everything enqueued, even after an error, before the host arrays or the rings can go away */
    for (int k = 0; k < made; k++) {
        gpuws_status sync = gpuws_stream_synchronize(streams[k]);
        if (!st) st = sync;
        if (k > 0) gpuws_stream_destroy(streams[k]);
    }
    return st;
}

gpuws_status gpuws_hidden_layer_host(gpuws_context *ctx, size_t n, const float *g, const float *w, float *out,
                                     const gpuws_pipeline_options *options)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (n && (!g || !w || !out))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "hidden_layer_host: argument '%s' is NULL",
                            !g   ? "greyscales"
                            : !w ? "weights"
                                 : "out");
    size_t bytes; /* no host array holds more: refuse before reading past the caller's arrays */
    if (gpuws__mul_overflows(n, sizeof(float), &bytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "hidden_layer_host: %zu elements of %zu bytes overflow size_t", n,
                            sizeof(float));
    gpuws_pipeline_options o = GPUWS_PIPELINE_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__PIPELINE_OPTIONS_BASE, "hidden_layer_host: options")))
        return st;
    size_t chunk = o.chunk ? o.chunk : (size_t)1 << 21;
    const int ns = o.streams ? o.streams : 3;
    if (ns < 1 || ns > PIPE_MAX_STREAMS)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "hidden_layer_host: streams = %d (allowed 1..%d)", ns,
                            PIPE_MAX_STREAMS);
    if (chunk > ((size_t)1 << 40))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "hidden_layer_host: chunk of %zu elements is absurd", chunk);
    chunk = (chunk + 1023) & ~(size_t)1023; /* whole 16-byte groups, aligned ring slots */
    if (n == 0) return GPUWS_OK;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        hidden_cpu(n, g, w, out);
        return GPUWS_OK;
    }
    if (chunk > n) chunk = (n + 1023) & ~(size_t)1023; /* small inputs: no device memory beyond what they need */
    return pipeline(ctx, n, g, w, out, chunk, ns);
}
