/* Host driver for convolve1d: validation, then the reference on the CPU backend, or one launch of the tiled kernel
 * (GPUs) / the direct kernel (CPU OpenCL devices) by name. GPUWS_CONVOLVE_PATH=tiled|direct forces a kernel. */
#include "../common/driver.h"
#include "convolve1d_ref.h"

#include <string.h>

/* Build options: GPUWS_CONV_NO_UNROLL=1 compiles the OpenCL kernels without unroll pragmas (a diagnostic knob;
 * see docs/algorithms/convolve.md). */
static const char *conv_options(void)
{
    const char *v = gpuws__getenv("GPUWS_CONV_NO_UNROLL");
    return v && gpuws__strcasecmp(v, "1") == 0 ? "-DGPUWS_CONV_NO_UNROLL=1" : NULL;
}

#define BLOCK 256
#define KB_CAP 2048          /* filter taps staged per block */
#define LOCAL_BUDGET (48u * 1024u)

static gpuws_status launch(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv1d_geometry *g, const gpuws_buffer *sig,
                           size_t n, const gpuws_buffer *filt, size_t ms, gpuws_buffer *out)
{
    const gpuws_context *ctx = s->ctx;
    const size_t es = gpuws_dtype_size(dt);
    const long long base = (long long)g->start - (long long)(ms - 1); /* output t meets sig[t + base + j] */
    const char *path = gpuws__getenv("GPUWS_CONVOLVE_PATH");
    /* Tiled on GPUs (CUDA, and OpenCL GPU devices: the NVIDIA OpenCL fault of 2026-11-21 was fixed by reading local
     * memory with vload, and the whole test matrix passed there on both paths), direct on CPU OpenCL devices. */
    bool tiled = !gpuws__is_cpu_device(ctx);
    if (path) tiled = gpuws__strcasecmp(path, "direct") != 0;

    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st = gpuws__kernel_block(s->ctx, dt == GPUWS_F32 ? "convolve1d_tiled_f32" : "convolve1d_tiled_f64", conv_options(),
                                          BLOCK, &k, &block);
    if (st) return st;
    const size_t r = dt == GPUWS_F32 ? 4 : 2, tt = (size_t)block * r; /* outputs per thread and per block */
    const size_t budget = ctx->info.shared_mem_bytes < LOCAL_BUDGET ? ctx->info.shared_mem_bytes : LOCAL_BUDGET;
    size_t kb = ms < KB_CAP ? ms : KB_CAP;
    kb = (kb + 7) / 8 * 8;
    while (kb > 8 && (tt + 2 * kb) * es > budget) kb = (kb / 2 + 7) / 8 * 8;
    const size_t blocks = (g->out_n + tt - 1) / tt;
    if (tiled && (tt + 2 * kb) * es <= budget && blocks <= ctx->info.max_grid_dims[0]) {
        gpuws_launch_config cfg = {{(uint32_t)blocks, 1, 1}, {block, 1, 1}};
        gpuws_arg args[] = {gpuws_arg_buffer((gpuws_buffer *)sig), gpuws_arg_buffer((gpuws_buffer *)filt),
                            gpuws_arg_buffer(out), gpuws_arg_u64(n), gpuws_arg_u64(ms), gpuws_arg_i64(base),
                            gpuws_arg_u64(g->out_n), gpuws_arg_i32((int32_t)kb), gpuws_arg_local((tt + 2 * kb) * es)};
        return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve1d_tiled_f32" : "convolve1d_tiled_f64", conv_options(), &cfg,
                                   args, GPUWS__NARGS(args));
    }
    /* each work-item computes 256 bytes of outputs (4 SIMD vectors on a CPU), grid-strided; groups of 8 on CPUs */
    const bool cpu = gpuws__is_cpu_device(ctx);
    const size_t items = (g->out_n + 256 / es - 1) / (256 / es);
    gpuws_launch_config cfg = gpuws__config_1d(items, cpu ? 8 : 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 16));
    if (cfg.grid[0] > ctx->info.max_grid_dims[0]) cfg.grid[0] = (uint32_t)ctx->info.max_grid_dims[0];
    gpuws_arg args[] = {gpuws_arg_buffer((gpuws_buffer *)sig), gpuws_arg_buffer((gpuws_buffer *)filt),
                        gpuws_arg_buffer(out), gpuws_arg_u64(n), gpuws_arg_u64(ms), gpuws_arg_i64(base),
                        gpuws_arg_u64(g->out_n)};
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve1d_direct_f32" : "convolve1d_direct_f64", conv_options(), &cfg, args,
                               GPUWS__NARGS(args));
}

gpuws_status gpuws_convolve1d(gpuws_stream *s, gpuws_dtype dt, const gpuws_buffer *a, size_t n, const gpuws_buffer *v,
                              size_t m, gpuws_convolve_mode mode, gpuws_buffer *out)
{
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(a, "a", &ctx);
    if (st || (st = gpuws__resolve_stream(ctx, &s, "argument 'stream'"))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d: dtype %s is not f32 or f64", gpuws_dtype_name(dt));
    gpuws__conv1d_geometry g = {0};
    if ((st = gpuws__conv1d_geometry_init(n, m, mode, &g))) return st;
    if (out == a || out == v)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d: out must not be the %s buffer (it is read while out is "
                            "written)", out == a ? "a" : "v");
    const size_t es = gpuws_dtype_size(dt);
    if ((st = gpuws__check_array(ctx, a, "a", n, es)) || (st = gpuws__check_array(ctx, v, "v", m, es)) ||
        (st = gpuws__check_array(ctx, out, "out", g.out_n, es)) || (st = gpuws__check_dtype(ctx, dt, "convolve1d")))
        return st;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dt == GPUWS_F32)
            gpuws_convolve1d_ref_f32(&g, gpuws__cpu_ptr(a), gpuws__cpu_ptr(v), gpuws__cpu_ptr(out), 0, g.out_n);
        else
            gpuws_convolve1d_ref_f64(&g, gpuws__cpu_ptr(a), gpuws__cpu_ptr(v), gpuws__cpu_ptr(out), 0, g.out_n);
        return GPUWS_OK;
    }
    /* NumPy's swap: the longer input is the signal */
    return n >= m ? launch(s, dt, &g, a, n, v, m, out) : launch(s, dt, &g, v, m, a, n, out);
}
