/* Host driver for convolve1d: validation, then the reference on the CPU backend, or one launch by name of
 *   the stream kernel (GPUs, filters of up to 248 f32 / 120 f64 taps: the memory-bound case),
 *   the tiled kernel (GPUs, longer filters: arithmetic-bound), or
 *   the direct kernel (CPU OpenCL devices).
 * Knobs (ctx->tuning, docs/tuning.md): convolve_path=tiled|direct forces the GPU kernels (stream or tiled) or the
 * direct one; convolve1d_blocks_per_cu=N sizes the stream kernel's persistent grid (default: its residency). */
#include "../common/band_stream.h"
#include "../../core/options.h"
#include "../common/driver.h"
#include "convolve1d_ref.h"
#include "convolve1d_stream.h"

#include <stdlib.h>
#include <string.h>

/* Build options. The stream kernels are compiled only into the program built with their shape (C1S_CL_OPTIONS),
 * and on NVIDIA's OpenCL with the register caps that __launch_bounds__ gives the CUDA stream kernels (it has no
 * __launch_bounds__; one cap per program, so one program per dtype). The tiled and direct kernels come from a
 * program without them: PoCL 5 aborts building work-group functions in the program that holds the stream kernels,
 * and CPU devices run the direct kernel. With the
 * knob convolve_no_unroll=1, no unroll pragmas (a diagnostic; see docs/algorithms/convolve.md). */
static const char *conv_options(const gpuws_context *ctx, gpuws_dtype dt, bool stream)
{
#define NOU  " -DGPUWS_CONV_NO_UNROLL=1"
#define NV32 " -cl-nv-maxrregcount=64" /* 65536 / (256 threads x C1S_BLOCKS_PER_CU_F32) */
#define NV64 " -cl-nv-maxrregcount=80" /* 65536 / (256 x C1S_BLOCKS_PER_CU_F64), rounded down to 8 */
    static const char *const table[2][2][2] = {
        { { C1S_CL_OPTIONS, C1S_CL_OPTIONS }, { C1S_CL_OPTIONS NV32, C1S_CL_OPTIONS NV64 } },
        { { C1S_CL_OPTIONS NOU, C1S_CL_OPTIONS NOU }, { C1S_CL_OPTIONS NOU NV32, C1S_CL_OPTIONS NOU NV64 } }
    };
    const bool no_unroll = ctx->tuning.convolve_no_unroll;
    if (!stream) return no_unroll ? "-DGPUWS_CONV_NO_UNROLL=1" : NULL;
#undef NOU
#undef NV32
#undef NV64
    return table[no_unroll][gpuws__is_nvidia_opencl(ctx)][dt == GPUWS_F64];
}

#define BLOCK        256
#define KB_CAP       2048 /* filter taps staged per block */
#define LOCAL_BUDGET (48u * 1024u)
#define C            8 /* taps per chunk in the kernels */

typedef struct {
    const gpuws_buffer *sig, *filt;
    gpuws_buffer *out;
    size_t n, ms;
    long long base; /* output t meets sig[t + base + j] */
    size_t out_n;
} conv1d_args;

/* The stream kernel when it applies: filter taps (rounded up to C) plus the misalignment within a 16-byte vector fit
 * the halo, 256-thread blocks, its static shared memory. GPUWS_ERR_UNSUPPORTED (no message) when it does not. */
static gpuws_status launch_stream(gpuws_stream *s, gpuws_dtype dt, const char *opts, const conv1d_args *a)
{
    const gpuws_context *ctx = s->ctx;
    const size_t es = gpuws_dtype_size(dt), w = 16 / es, kbp = (a->ms + C - 1) / C * C;
    const size_t tt = (size_t)C1S_THREADS * C1S_VECS * w, pitch = w + tt + (size_t)C1S_HALO_VECS * w;
    if (kbp + w - 1 > (size_t)C1S_HALO_VECS * w ||
        (2 * pitch + (size_t)C1S_HALO_VECS * w) * es > ctx->info.shared_mem_bytes)
        return GPUWS_ERR_UNSUPPORTED;
    const char *name = dt == GPUWS_F32 ? "convolve1d_stream_f32" : "convolve1d_stream_f64";
    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st = gpuws__kernel_block(s->ctx, name, opts, C1S_THREADS, &k, &block);
    if (st) return st;
    if (block != C1S_THREADS) return GPUWS_ERR_UNSUPPORTED;
    /* a persistent grid: as many blocks as reside at once (or as there are tiles), each walking tiles grid-strided */
    uint32_t per_cu = dt == GPUWS_F32 ? C1S_BLOCKS_PER_CU_F32 : C1S_BLOCKS_PER_CU_F64;
    if (ctx->tuning.convolve1d_blocks_per_cu > 0) per_cu = (uint32_t)ctx->tuning.convolve1d_blocks_per_cu;
    const size_t tiles = (a->out_n + tt - 1) / tt;
    uint32_t blocks = gpuws__saturating_blocks(ctx, per_cu);
    if (tiles < blocks) blocks = (uint32_t)tiles;
    gpuws_launch_config cfg = { { blocks, 1, 1 }, { C1S_THREADS, 1, 1 } };
    gpuws__log(GPUWS__LOG_DEBUG, "convolve1d %s: stream, %u blocks of %d threads, %zu tiles of %zu outputs, %zu taps",
               gpuws_dtype_name(dt), blocks, C1S_THREADS, tiles, tt, a->ms);
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)a->sig),
                         gpuws_arg_buffer((gpuws_buffer *)a->filt),
                         gpuws_arg_buffer(a->out),
                         gpuws_arg_u64(a->n),
                         gpuws_arg_u64(a->ms),
                         gpuws_arg_i64(a->base),
                         gpuws_arg_u64(a->out_n) };
    return gpuws__launch_named(s, name, opts, &cfg, args, GPUWS__NARGS(args));
}

static gpuws_status launch(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv1d_geometry *g, const gpuws_buffer *sig,
                           size_t n, const gpuws_buffer *filt, size_t ms, gpuws_buffer *out)
{
    const gpuws_context *ctx = s->ctx;
    const size_t es = gpuws_dtype_size(dt);
    const conv1d_args a = { sig, filt, out, n, ms, (long long)g->start - (long long)(ms - 1), g->out_n };
    const char *opts = conv_options(ctx, dt, false);
    /* GPU kernels on GPUs (CUDA, and OpenCL GPU devices: the kernels read local memory with vload, since NVIDIA's
     * OpenCL faults on vector loads from a local argument, which is only element-aligned), direct on CPU devices. */
    bool tiled = !gpuws__is_cpu_device(ctx);
    if (ctx->tuning.convolve_path != GPUWS__PATH_AUTO) tiled = ctx->tuning.convolve_path == GPUWS__PATH_TILED;
    if (tiled) {
        gpuws_status st = launch_stream(s, dt, conv_options(ctx, dt, true), &a);
        if (st != GPUWS_ERR_UNSUPPORTED) return st;
    }

    gpuws_kernel *k;
    uint32_t block;
    gpuws_status st = gpuws__kernel_block(s->ctx, dt == GPUWS_F32 ? "convolve1d_tiled_f32" : "convolve1d_tiled_f64",
                                          opts, BLOCK, &k, &block);
    if (st) return st;
    const size_t r = dt == GPUWS_F32 ? 4 : 2, tt = (size_t)block * r; /* outputs per thread and per block */
    const size_t budget = ctx->info.shared_mem_bytes < LOCAL_BUDGET ? ctx->info.shared_mem_bytes : LOCAL_BUDGET;
    size_t kb = ms < KB_CAP ? ms : KB_CAP;
    kb = (kb + C - 1) / C * C;
    while (kb > C && (tt + 2 * kb) * es > budget) kb = (kb / 2 + C - 1) / C * C;
    const size_t blocks = (g->out_n + tt - 1) / tt;
    if (tiled && (tt + 2 * kb) * es <= budget && blocks <= ctx->info.max_grid_dims[0]) {
        gpuws_launch_config cfg = { { (uint32_t)blocks, 1, 1 }, { block, 1, 1 } };
        gpuws__log(GPUWS__LOG_DEBUG, "convolve1d %s: tiled, %zu blocks of %u threads, filter blocks of %zu taps",
                   gpuws_dtype_name(dt), blocks, block, kb);
        gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)sig),
                             gpuws_arg_buffer((gpuws_buffer *)filt),
                             gpuws_arg_buffer(out),
                             gpuws_arg_u64(n),
                             gpuws_arg_u64(ms),
                             gpuws_arg_i64(a.base),
                             gpuws_arg_u64(g->out_n),
                             gpuws_arg_i32((int32_t)kb),
                             gpuws_arg_local((tt + 2 * kb) * es) };
        return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve1d_tiled_f32" : "convolve1d_tiled_f64", opts, &cfg,
                                   args, GPUWS__NARGS(args));
    }
    /* each work-item computes 256 bytes of outputs (4 SIMD vectors on a CPU), grid-strided; groups of 8 on CPUs */
    const bool cpu = gpuws__is_cpu_device(ctx);
    const size_t items = (g->out_n + 256 / es - 1) / (256 / es);
    gpuws_launch_config cfg =
        gpuws__config_1d(items, cpu ? 8 : 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 16));
    if (cfg.grid[0] > ctx->info.max_grid_dims[0]) cfg.grid[0] = (uint32_t)ctx->info.max_grid_dims[0];
    gpuws__log(GPUWS__LOG_DEBUG, "convolve1d %s: direct", gpuws_dtype_name(dt));
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)sig),
                         gpuws_arg_buffer((gpuws_buffer *)filt),
                         gpuws_arg_buffer(out),
                         gpuws_arg_u64(n),
                         gpuws_arg_u64(ms),
                         gpuws_arg_i64(a.base),
                         gpuws_arg_u64(g->out_n) };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve1d_direct_f32" : "convolve1d_direct_f64", opts, &cfg, args,
                               GPUWS__NARGS(args));
}

gpuws_status gpuws_convolve1d(gpuws_stream *s, gpuws_dtype dt, const gpuws_buffer *a, size_t n, const gpuws_buffer *v,
                              size_t m, gpuws_convolve_mode mode, gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(a, "a", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "convolve1d"))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d: dtype %s is not f32 or f64", gpuws_dtype_name(dt));
    gpuws__conv1d_geometry g = { 0 };
    if ((st = gpuws__conv1d_geometry_init(n, m, mode, &g))) return st;
    if (out == a || out == v)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "convolve1d: out must not be the %s buffer (it is read while out is "
                            "written)",
                            out == a ? "a" : "v");
    const size_t es = gpuws_dtype_size(dt);
    if ((st = gpuws__check_array(ctx, a, "a", n, es)) || (st = gpuws__check_array(ctx, v, "v", m, es)) ||
        (st = gpuws__check_array(ctx, out, "out", g.out_n, es)) || (st = gpuws__check_dtype(ctx, dt, "convolve1d")))
        return st;

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dt == GPUWS_F32)
            gpuws_convolve1d_ref_f32(&g, gpuws__cpu_ptr(a), gpuws__cpu_ptr(v), gpuws__cpu_ptr(out), 0, g.out_n);
        else gpuws_convolve1d_ref_f64(&g, gpuws__cpu_ptr(a), gpuws__cpu_ptr(v), gpuws__cpu_ptr(out), 0, g.out_n);
        return GPUWS_OK;
    }
    /* NumPy's swap: the longer input is the signal */
    return n >= m ? launch(s, dt, &g, a, n, v, m, out) : launch(s, dt, &g, v, m, a, n, out);
}

/* ---- from host memory ------------------------------------------------------------------------------------------
 * gpuws_convolve1d_host: segments of outputs through kernels/common/band_stream.h (three slots a device, uploads,
 * kernels and downloads on streams of their own, overlapped), or one in-core launch when everything fits one device. */

/* Outputs a segment starts on (a multiple of every kernel's tile of outputs: 2048 f32 / 1024 f64 for the stream
 * kernel, 1024 / 512 for the tiled one, 64 / 32 a work-item for the direct one) and samples a segment's input starts
 * on (a multiple of the 16-byte vectors the kernels align by): then every output is tiled and aligned as in the
 * whole signal's launch. A segment's samples: its outputs, ms - 1 more, and up to SEG_ALIGN - 1 before. */
#define SEG_OUTPUTS ((size_t)4096)
#define SEG_ALIGN   ((size_t)16)

/* The call's inputs checked and its segments planned. */
typedef struct {
    const char *fn;
    gpuws_dtype dt;
    gpuws__conv1d_geometry g;
    size_t es, ms, ns, seg, segments;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES];
    unsigned devices;
    const char *sig; /* the longer input, the filter, the output: host arrays (the call's) */
    const void *filt;
    char *out;
} seg_plan;

/* A segment's elements of the device and of staging: in its samples, out its outputs. */
static size_t seg_in(const seg_plan *p) { return p->seg + p->ms + SEG_ALIGN; }

static gpuws_status plan_segments(const char *fn, gpuws_context *ctx, gpuws_dtype dt, size_t n, size_t m,
                                  gpuws_convolve_mode mode, const gpuws_convolve1d_host_options *options, seg_plan *p)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_convolve1d_host_options o = GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT;
    char what[64];
    snprintf(what, sizeof what, "%s: options", fn);
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__CONVOLVE1D_HOST_OPTIONS_BASE, what))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: dtype %s is not f32 or f64", fn, gpuws_dtype_name(dt));
    memset(p, 0, sizeof *p);
    p->fn = fn, p->dt = dt;
    if ((st = gpuws__conv1d_geometry_init(n, m, mode, &p->g)) || (st = gpuws__check_dtype(ctx, dt, fn)) ||
        (st = gpuws__band_contexts(ctx, o.more_contexts, o.num_more_contexts, fn, p->ctxs, &p->devices)))
        return st;
    p->es = gpuws_dtype_size(dt), p->ms = n < m ? n : m, p->ns = n < m ? m : n;
    const size_t es = p->es, ms = p->ms, out_n = p->g.out_n;
    uint64_t budget, max_alloc;
    gpuws__band_budget(p->ctxs, p->devices, o.max_device_bytes, &budget, &max_alloc);
    /* in-core on one device: the signal, the filter and the output at once */
    const uint64_t whole = ((uint64_t)p->ns + ms + out_n) * es;
    const size_t largest = p->ns > out_n ? p->ns : out_n;
    if (p->devices == 1 && whole <= budget && (!max_alloc || (uint64_t)largest * es <= max_alloc)) {
        p->seg = out_n, p->segments = 1;
        return GPUWS_OK;
    }
    /* else the filter and GPUWS__BAND_SLOTS slots of a segment's samples and outputs a device */
    const uint64_t fixed = (uint64_t)ms * es + (uint64_t)GPUWS__BAND_SLOTS * (ms + SEG_ALIGN) * es;
    const uint64_t per = (uint64_t)GPUWS__BAND_SLOTS * 2 * es; /* an output a segment, in and out */
    uint64_t seg = budget > fixed ? (budget - fixed) / per : 0;
    const uint64_t in_max = max_alloc ? max_alloc / es : UINT64_MAX; /* a segment's samples in one buffer */
    if (seg > (in_max > ms + SEG_ALIGN ? in_max - ms - SEG_ALIGN : 0))
        seg = in_max > ms + SEG_ALIGN ? in_max - ms - SEG_ALIGN : 0;
    const uint64_t staged = GPUWS__BAND_STAGING_BYTES / es; /* staging buffers of 64 MiB at most, where they hold */
    if (staged > ms + SEG_ALIGN + SEG_OUTPUTS && seg > staged - ms - SEG_ALIGN) seg = staged - ms - SEG_ALIGN;
    seg = seg / SEG_OUTPUTS * SEG_OUTPUTS;
    if (seg == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: a device budget of %llu bytes is too small: the %zu-tap filter and %d slots of one "
                            "segment of %zu outputs with its samples need %llu bytes",
                            fn, (unsigned long long)budget, ms, GPUWS__BAND_SLOTS, SEG_OUTPUTS,
                            (unsigned long long)(fixed + per * SEG_OUTPUTS));
    /* several devices: three segments a device at least, when the outputs allow */
    const size_t share = (out_n + 3 * (size_t)p->devices - 1) / (3 * (size_t)p->devices);
    const size_t even = (share + SEG_OUTPUTS - 1) / SEG_OUTPUTS * SEG_OUTPUTS;
    if (p->devices > 1 && even < seg) seg = even;
    p->seg = seg < out_n ? (size_t)seg : (out_n + SEG_OUTPUTS - 1) / SEG_OUTPUTS * SEG_OUTPUTS;
    p->segments = (out_n + p->seg - 1) / p->seg;
    return GPUWS_OK;
}

gpuws_status gpuws_convolve1d_host_segments(gpuws_context *ctx, gpuws_dtype dt, size_t n, size_t m,
                                            gpuws_convolve_mode mode, const gpuws_convolve1d_host_options *options,
                                            size_t *segment, size_t *segments)
{
    seg_plan p;
    gpuws_status st = plan_segments("convolve1d_host_segments", ctx, dt, n, m, mode, options, &p);
    if (st) return st;
    if (!segment || !segments)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "convolve1d_host_segments: NULL result pointer");
    *segment = p.seg, *segments = p.segments;
    return GPUWS_OK;
}

/* Segment t: outputs [*t0, *t1), samples [*i0, *i1) of the signal, and the launch's geometry for them (the same
 * samples for every output as in the whole signal's). */
static void segment(const seg_plan *p, size_t t, size_t *t0, size_t *t1, size_t *i0, size_t *i1,
                    gpuws__conv1d_geometry *g)
{
    const long long base = (long long)p->g.start - (long long)(p->ms - 1); /* output t meets sig[t + base + j] */
    *t0 = t * p->seg, *t1 = *t0 + p->seg < p->g.out_n ? *t0 + p->seg : p->g.out_n;
    /* from t0 + base (on a multiple of SEG_ALIGN) to t1 - 1 + base + ms - 1 */
    const long long first = (long long)*t0 + base, last = (long long)*t1 + base + (long long)p->ms - 1;
    *i0 = first <= 0 ? 0 : (size_t)first / SEG_ALIGN * SEG_ALIGN;
    *i1 = (size_t)last < p->ns ? (size_t)last : p->ns;
    *g = p->g;
    g->out_n = *t1 - *t0;
    g->start = (size_t)((long long)*t0 - (long long)*i0 + (long long)p->g.start); /* base + t0 - i0 + ms - 1 */
}

static gpuws_status seg_device_make(void *user, unsigned d, gpuws_context *ctx, gpuws_stream *run, void **state)
{
    (void)d;
    const seg_plan *p = user;
    gpuws_buffer *f = NULL;
    gpuws_status st = gpuws_buffer_create(ctx, p->ms * p->es, &f);
    if (!st) st = gpuws_buffer_write_async(run, f, 0, p->filt, p->ms * p->es);
    if (st) {
        gpuws_stream_synchronize(run);
        gpuws_buffer_destroy(f);
        return gpuws__error(st, "%s: the %zu-tap filter on the device: %s", p->fn, p->ms, gpuws_last_error());
    }
    *state = f;
    return GPUWS_OK;
}

static void seg_device_free(void *user, unsigned d, gpuws_context *ctx, void *state)
{
    (void)user, (void)d, (void)ctx;
    gpuws_buffer_destroy(state);
}

static const void *seg_source(void *user, gpuws_context *ctx, size_t t, size_t *bytes)
{
    const seg_plan *p = user;
    size_t t0, t1, i0, i1;
    gpuws__conv1d_geometry g;
    segment(p, t, &t0, &t1, &i0, &i1, &g);
    const char *at = p->sig + i0 * p->es;
    if (!gpuws__host_pinned(ctx, at, (i1 - i0) * p->es)) return NULL;
    *bytes = (i1 - i0) * p->es;
    return at;
}

static void *seg_target(void *user, gpuws_context *ctx, size_t t)
{
    const seg_plan *p = user;
    size_t t0, t1, i0, i1;
    gpuws__conv1d_geometry g;
    segment(p, t, &t0, &t1, &i0, &i1, &g);
    char *at = p->out + t0 * p->es;
    return gpuws__host_pinned(ctx, at, (t1 - t0) * p->es) ? at : NULL;
}

static gpuws_status seg_stage(void *user, size_t t, void *in, size_t *bytes)
{
    const seg_plan *p = user;
    size_t t0, t1, i0, i1;
    gpuws__conv1d_geometry g;
    segment(p, t, &t0, &t1, &i0, &i1, &g);
    memcpy(in, p->sig + i0 * p->es, (i1 - i0) * p->es);
    *bytes = (i1 - i0) * p->es;
    return GPUWS_OK;
}

static gpuws_status seg_compute(void *user, void *state, size_t t, gpuws_stream *run, gpuws_buffer *din,
                                gpuws_buffer *dout)
{
    const seg_plan *p = user;
    size_t t0, t1, i0, i1;
    gpuws__conv1d_geometry g;
    segment(p, t, &t0, &t1, &i0, &i1, &g);
    return launch(run, p->dt, &g, din, i1 - i0, state, p->ms, dout);
}

static gpuws_status seg_download(void *user, size_t t, gpuws_stream *down, gpuws_buffer *dout, void *out)
{
    const seg_plan *p = user;
    const size_t t0 = t * p->seg, t1 = t0 + p->seg < p->g.out_n ? t0 + p->seg : p->g.out_n;
    return gpuws_buffer_read_async(down, dout, 0, out, (t1 - t0) * p->es);
}

static gpuws_status seg_complete(void *user, void *state, size_t t, const void *staged)
{
    (void)state;
    const seg_plan *p = user;
    if (!staged) return GPUWS_OK;
    const size_t t0 = t * p->seg, t1 = t0 + p->seg < p->g.out_n ? t0 + p->seg : p->g.out_n;
    memcpy(p->out + t0 * p->es, staged, (t1 - t0) * p->es);
    return GPUWS_OK;
}

/* One segment on one device: the caller's arrays uploaded as they are, one launch, the output read back into
 * out. No pinned staging (pinning a signal's worth costs more than the transfers gain, as convolve2d_host's). */
static gpuws_status run_in_core(const seg_plan *p)
{
    gpuws_context *ctx = p->ctxs[0];
    const size_t es = p->es;
    gpuws_stream *s = NULL;
    gpuws_buffer *din = NULL, *df = NULL, *dout = NULL;
    gpuws_status st;
    if (!(st = gpuws_stream_create(ctx, &s)) && !(st = gpuws_buffer_create(ctx, p->ns * es, &din)) &&
        !(st = gpuws_buffer_create(ctx, p->ms * es, &df)) && !(st = gpuws_buffer_create(ctx, p->g.out_n * es, &dout)) &&
        !(st = gpuws_buffer_write_async(s, din, 0, p->sig, p->ns * es)) &&
        !(st = gpuws_buffer_write_async(s, df, 0, p->filt, p->ms * es)) &&
        !(st = launch(s, p->dt, &p->g, din, p->ns, df, p->ms, dout)))
        st = gpuws_buffer_read_async(s, dout, 0, p->out, p->g.out_n * es);
    if (s) { /* the stream stops before the buffers go, also after an error */
        const gpuws_status sync = gpuws_stream_synchronize(s);
        if (!st) st = sync;
    }
    gpuws_stream_destroy(s);
    gpuws_buffer_destroy(din);
    gpuws_buffer_destroy(df);
    gpuws_buffer_destroy(dout);
    return st;
}

gpuws_status gpuws_convolve1d_host(gpuws_context *ctx, gpuws_dtype dt, const void *a, size_t n, const void *v, size_t m,
                                   gpuws_convolve_mode mode, const gpuws_convolve1d_host_options *options, void *out)
{
    static const char fn[] = "convolve1d_host";
    seg_plan p;
    gpuws_status st = plan_segments(fn, ctx, dt, n, m, mode, options, &p);
    if (st) return st;
    const size_t es = p.es, out_n = p.g.out_n;
    if (!a || !v || !out)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !a ? "a" : !v ? "v" : "out");
    if (gpuws__overlaps(out, out_n * es, a, n * es) || gpuws__overlaps(out, out_n * es, v, m * es))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: out overlaps %s (it is read while out is written)", fn,
                            gpuws__overlaps(out, out_n * es, a, n * es) ? "a" : "v");
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) { /* the caller's arrays are the device's memory */
        if (dt == GPUWS_F32) gpuws_convolve1d_ref_f32(&p.g, a, v, out, 0, out_n);
        else gpuws_convolve1d_ref_f64(&p.g, a, v, out, 0, out_n);
        return GPUWS_OK;
    }
    p.sig = n >= m ? a : v, p.filt = n >= m ? v : a, p.out = out;
    if (p.segments == 1 && p.devices == 1) return run_in_core(&p);
    const gpuws__band_ops ops = { .steps = p.segments,
                                  .slots = GPUWS__BAND_SLOTS,
                                  .in_bytes = seg_in(&p) * es,
                                  .out_bytes = p.seg * es,
                                  .user = &p,
                                  .what = fn,
                                  .device_make = seg_device_make,
                                  .device_free = seg_device_free,
                                  .stage = seg_stage,
                                  .source = seg_source,
                                  .target = seg_target,
                                  .compute = seg_compute,
                                  .download = seg_download,
                                  .complete = seg_complete };
    return gpuws__band_stream_run(p.ctxs, p.devices, &ops);
}
