/* Host driver for gpuws_convolve2d_separable (the 2-D convolution of a kernel given as outer(col, row)); it shares
 * the knobs and argument checks of convolve2d.c through convolve2d_driver.h. */
#include "convolve2d_driver.h"
#include "convolve2d_layout.h"

#include <stdatomic.h>
#include <string.h>

/* ---- gpuws_convolve2d_separable ---------------------------------------------------------------------------------
 * GPUs, factors of up to SEP_FTAPS taps: one launch of convolve2d_sep_fused_* (a tile's row sums in shared memory,
 * then its column sums; faster than the two passes, which write and read the row sums through device memory, on
 * CUDA and NVIDIA's OpenCL alike; the knob convolve2d_separable=two-pass skips it). Otherwise two launches: the
 * row sums of the oh + kh - 1 extended-image rows the outputs need, into the stream's scratch memory (key_tmp), then
 * the column sums into out; GPUs run the tiled pair (convolve2d_sep_rows_* / _cols_*), CPU OpenCL devices the
 * direct pair (_sep_rows_direct_* / _cols_direct_*; on PoCL the tiled pair is much slower than even the 2-D path).
 * Work-groups of 32 x 8 (SEP_* of convolve2d_layout.h, shared with both kernel files).
 * The knob convolve_path=tiled|direct forces one, as for gpuws_convolve2d. */
/* NVIDIA's OpenCL takes inline PTX (the fused kernel's warp barriers); should a driver refuse it, the build without
 * it is used from then on (as measure.c does). */
static _Atomic int sep_nv_ptx_failed;

/* Build options of the separable kernels: OpenCL builds them as a program of their own (convolve2d.cl), on CPU
 * devices with the staging PoCL 5.0 can compile; CUDA ignores build options. */
static const char *sep_options(const gpuws_context *ctx)
{
    if (gpuws__is_cpu_device(ctx)) return "-DGPUWS_CONV2D_SEP=1 -DGPUWS_SEP_ONE_LOOP=1";
    if (gpuws__is_nvidia_opencl(ctx) && !atomic_load(&sep_nv_ptx_failed))
        return "-DGPUWS_CONV2D_SEP=1 -DGPUWS_NV_PTX=1";
    return "-DGPUWS_CONV2D_SEP=1";
}

/* Looks a separable kernel up with sep_options; a build refused with the PTX option is tried once without it. */
static gpuws_status sep_kernel_block(gpuws_context *ctx, const char *name, gpuws_kernel **k, uint32_t *block)
{
    const char *o = sep_options(ctx);
    gpuws_status st = gpuws__kernel_block(ctx, name, o, 256, k, block);
    if (st == GPUWS_ERR_BUILD && strstr(o, "-DGPUWS_NV_PTX")) {
        atomic_store(&sep_nv_ptx_failed, 1);
        gpuws__log(GPUWS__LOG_INFO, "convolve2d_separable: %s refused the PTX build; building without it",
                   ctx->info.name);
        st = gpuws__kernel_block(ctx, name, sep_options(ctx), 256, k, block);
    }
    return st;
}

/* The two-pass pair's row kernel kr and column kernel kc: the tiled pair, or the direct one, of the dtype. */
static gpuws_status sep_pair(gpuws_context *ctx, bool direct, bool f32, gpuws_kernel **kr, uint32_t *br,
                             gpuws_kernel **kc, uint32_t *bc)
{
    static const char *const names[2][2][2] = {
        /* [direct][f64][rows, cols] */
        { { "convolve2d_sep_rows_f32", "convolve2d_sep_cols_f32" },
          { "convolve2d_sep_rows_f64", "convolve2d_sep_cols_f64" } },
        { { "convolve2d_sep_rows_direct_f32", "convolve2d_sep_cols_direct_f32" },
          { "convolve2d_sep_rows_direct_f64", "convolve2d_sep_cols_direct_f64" } }
    };
    const char *const *n = names[direct][!f32];
    gpuws_status st = sep_kernel_block(ctx, n[0], kr, br);
    return st ? st : sep_kernel_block(ctx, n[1], kc, bc);
}

/* The direct pair kr (rows) and kc (columns), already looked up by the caller. */
static gpuws_status separable_direct(gpuws_stream *s, gpuws_kernel *kr, gpuws_kernel *kc, gpuws_dtype dt,
                                     const gpuws__conv2d_geometry *g, size_t tr, const gpuws_buffer *image,
                                     const gpuws_buffer *col, const gpuws_buffer *row, gpuws_buffer *tmp,
                                     gpuws_buffer *out)
{
    const gpuws_context *ctx = s->ctx;
    const bool f32 = dt == GPUWS_F32;
    /* as launch_direct: 256 bytes of outputs of a row per work-item; CPU devices 8 x 1 groups, GPUs 32 x 4 */
    const size_t dv = 256 / gpuws_dtype_size(dt), items = (g->ow + dv - 1) / dv;
    const uint32_t bx = gpuws__is_cpu_device(ctx) ? 8 : 32, by = gpuws__is_cpu_device(ctx) ? 1 : 4;
    const uint64_t max_y = ctx->info.max_grid_dims[1];
    const uint64_t gy_rows = (tr + by - 1) / by, gy_cols = (g->oh + by - 1) / by;
    gpuws_launch_config c_rows = {
        { (uint32_t)((items + bx - 1) / bx), (uint32_t)(gy_rows < max_y ? gy_rows : max_y), 1 }, { bx, by, 1 }
    };
    gpuws_launch_config c_cols = c_rows;
    c_cols.grid[1] = (uint32_t)(gy_cols < max_y ? gy_cols : max_y);
    const gpuws_arg a_rows[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                                 gpuws_arg_buffer((gpuws_buffer *)row),
                                 gpuws_arg_buffer(tmp),
                                 gpuws_arg_u64(g->stride),
                                 gpuws_arg_i32((int32_t)g->h),
                                 gpuws_arg_i32((int32_t)g->w),
                                 gpuws_arg_i32((int32_t)g->kw),
                                 gpuws_arg_i32((int32_t)tr),
                                 gpuws_arg_i32((int32_t)g->ow),
                                 gpuws_arg_i32((int32_t)g->om - (int32_t)(g->kh - 1)),
                                 gpuws_arg_i32((int32_t)g->on - (int32_t)(g->kw - 1)),
                                 gpuws_arg_i32((int32_t)g->boundary),
                                 f32 ? gpuws_arg_f32((float)g->fill) : gpuws_arg_f64(g->fill) };
    const gpuws_arg a_cols[] = { gpuws_arg_buffer(tmp),         gpuws_arg_buffer((gpuws_buffer *)col),
                                 gpuws_arg_buffer(out),         gpuws_arg_i32((int32_t)g->oh),
                                 gpuws_arg_i32((int32_t)g->ow), gpuws_arg_i32((int32_t)g->kh) };
    gpuws__log(GPUWS__LOG_DEBUG, "convolve2d_separable %s: direct, %zu x %zu row sums", gpuws_dtype_name(dt), tr,
               g->ow);
    gpuws_status st = gpuws_launch(s, kr, &c_rows, a_rows, GPUWS__NARGS(a_rows));
    return st ? st : gpuws_launch(s, kc, &c_cols, a_cols, GPUWS__NARGS(a_cols));
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_tmp = { "convolve2d_separable.tmp" };

static gpuws_status separable_gpu(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *g,
                                  const gpuws_buffer *image, const gpuws_buffer *col, const gpuws_buffer *row,
                                  gpuws_buffer *out)
{
    gpuws_context *ctx = s->ctx;
    bool direct = gpuws__is_cpu_device(ctx);
    if (ctx->tuning.convolve_path != GPUWS__PATH_AUTO) direct = ctx->tuning.convolve_path == GPUWS__PATH_DIRECT;
    const bool f32 = dt == GPUWS_F32;
    const size_t es = gpuws_dtype_size(dt), v = 16 / es, seg = 32 * v;
    gpuws_status st = GPUWS_OK;
    /* factors of up to 16 taps: both passes in one kernel (no temporary memory) unless convolve2d_separable=two-pass */
    if (!direct && g->kh <= SEP_FTAPS && g->kw <= SEP_FTAPS &&
        ctx->tuning.convolve2d_separable != GPUWS__SEPARABLE_TWO_PASS) {
        /* each warp's staged row: at most seg + 24 elements, which the kernels' registers per row are sized for */
        const size_t fxs = seg + (g->kw + 7) / 8 * 8 + 8, flocal = ((SEP_FTH + SEP_FTAPS) * seg + SEP_WARPS * fxs) * es;
        gpuws_kernel *kf;
        uint32_t bf;
        if (flocal <= ctx->info.shared_mem_bytes &&
            (st = sep_kernel_block(ctx, f32 ? "convolve2d_sep_fused_f32" : "convolve2d_sep_fused_f64", &kf, &bf)) ==
                GPUWS_OK &&
            bf >= 256) {
            const uint64_t ntiles = (g->oh + SEP_FTH - 1) / SEP_FTH;
            const uint64_t max_y = ctx->info.max_grid_dims[1] < 65535 ? ctx->info.max_grid_dims[1] : 65535;
            gpuws_launch_config c = { { (uint32_t)((g->ow + seg - 1) / seg),
                                        (uint32_t)(ntiles < max_y ? ntiles : max_y), 1 },
                                      { 32, SEP_WARPS, 1 } };
            const gpuws_arg a[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                                    gpuws_arg_buffer((gpuws_buffer *)col),
                                    gpuws_arg_buffer((gpuws_buffer *)row),
                                    gpuws_arg_buffer(out),
                                    gpuws_arg_u64(g->stride),
                                    gpuws_arg_i32((int32_t)g->h),
                                    gpuws_arg_i32((int32_t)g->w),
                                    gpuws_arg_i32((int32_t)g->kh),
                                    gpuws_arg_i32((int32_t)g->kw),
                                    gpuws_arg_i32((int32_t)g->oh),
                                    gpuws_arg_i32((int32_t)g->ow),
                                    gpuws_arg_i32((int32_t)g->om - (int32_t)(g->kh - 1)),
                                    gpuws_arg_i32((int32_t)g->on - (int32_t)(g->kw - 1)),
                                    gpuws_arg_i32((int32_t)g->boundary),
                                    f32 ? gpuws_arg_f32((float)g->fill) : gpuws_arg_f64(g->fill),
                                    gpuws_arg_i32((int32_t)fxs),
                                    gpuws_arg_local(flocal) };
            gpuws__log(GPUWS__LOG_DEBUG, "convolve2d_separable %s: fused, %u x %u groups", gpuws_dtype_name(dt),
                       c.grid[0], c.grid[1]);
            return gpuws_launch(s, kf, &c, a, GPUWS__NARGS(a));
        }
        if (st) return st;
    }
    const size_t tr = g->oh + g->kh - 1, kb = g->kw < SEP_KB ? g->kw : SEP_KB;
    const size_t xs_len = seg + (kb + 7) / 8 * 8;
    const size_t rows_local = (SEP_KB + SEP_WARPS * xs_len) * es, cols_local = SEP_KB * es;
    size_t tmp_elems, tmp_bytes;
    if (gpuws__mul_overflows(tr, g->ow, &tmp_elems) || gpuws__mul_overflows(tmp_elems, es, &tmp_bytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "convolve2d_separable: %zu x %zu row sums overflow size_t", tr, g->ow);
    if (!direct && rows_local > ctx->info.shared_mem_bytes) {
        gpuws__log(GPUWS__LOG_DEBUG,
                   "convolve2d_separable: %s has %llu bytes of local memory per group, the tiled row "
                   "pass needs %zu: the direct pair",
                   ctx->info.name, (unsigned long long)ctx->info.shared_mem_bytes, rows_local);
        direct = true;
    }
    gpuws_kernel *kr, *kc;
    uint32_t br, bc;
    /* both kernels looked up (which may fail) before anything is enqueued */
    if ((st = sep_pair(ctx, direct, f32, &kr, &br, &kc, &bc))) return st;
    if (!direct && (br < 256 || bc < 256)) { /* the tiled pair needs groups of 32 x 8; the direct one takes 8 */
        gpuws__log(GPUWS__LOG_DEBUG,
                   "convolve2d_separable: %s runs at most %u work-items per group of the tiled pair: "
                   "the direct pair",
                   ctx->info.name, br < bc ? br : bc);
        direct = true;
        if ((st = sep_pair(ctx, direct, f32, &kr, &br, &kc, &bc))) return st;
    }
    gpuws_buffer *tmp;
    if ((st = gpuws__stream_scratch(s, &key_tmp, tmp_bytes, &tmp))) return st;
    if (direct) return separable_direct(s, kr, kc, dt, g, tr, image, col, row, tmp, out);
    /* Grids of about as many groups as the device holds at once (6 / 5 of 256 per compute unit: the kernels' 40 / 48
     * registers on NVIDIA's GPUs), each walking its rows: a group that takes one row group (or 8 rows per work-item)
     * spends more on its set-up (taps, barriers, the first loads' latency) than on its sums. */
    const uint64_t max_y = ctx->info.max_grid_dims[1] < 65535 ? ctx->info.max_grid_dims[1] : 65535;
    const uint64_t gx_rows = (g->ow + seg - 1) / seg, gx_cols = (g->ow + 31) / 32;
    uint64_t gy = (tr + SEP_WARPS - 1) / SEP_WARPS, fill_y = gpuws__saturating_blocks(ctx, 6) / gx_rows;
    if (fill_y < 1) fill_y = 1;
    if (gy > fill_y) gy = fill_y;
    gpuws_launch_config c_rows = { { (uint32_t)gx_rows, (uint32_t)(gy < max_y ? gy : max_y), 1 },
                                   { 32, SEP_WARPS, 1 } };
    const gpuws_arg a_rows[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                                 gpuws_arg_buffer((gpuws_buffer *)row),
                                 gpuws_arg_buffer(tmp),
                                 gpuws_arg_u64(g->stride),
                                 gpuws_arg_i32((int32_t)g->h),
                                 gpuws_arg_i32((int32_t)g->w),
                                 gpuws_arg_i32((int32_t)g->kw),
                                 gpuws_arg_i32((int32_t)tr),
                                 gpuws_arg_i32((int32_t)g->ow),
                                 gpuws_arg_i32((int32_t)g->om - (int32_t)(g->kh - 1)),
                                 gpuws_arg_i32((int32_t)g->on - (int32_t)(g->kw - 1)),
                                 gpuws_arg_i32((int32_t)g->boundary),
                                 f32 ? gpuws_arg_f32((float)g->fill) : gpuws_arg_f64(g->fill),
                                 gpuws_arg_i32((int32_t)xs_len),
                                 gpuws_arg_local(rows_local) };
    gy = (g->oh + SEP_WARPS * SEP_RS - 1) / (SEP_WARPS * SEP_RS);
    fill_y = gpuws__saturating_blocks(ctx, 5) / gx_cols;
    if (fill_y < 1) fill_y = 1;
    if (gy > fill_y) gy = fill_y;
    gpuws_launch_config c_cols = { { (uint32_t)gx_cols, (uint32_t)(gy < max_y ? gy : max_y), 1 },
                                   { 32, SEP_WARPS, 1 } };
    const gpuws_arg a_cols[] = { gpuws_arg_buffer(tmp),         gpuws_arg_buffer((gpuws_buffer *)col),
                                 gpuws_arg_buffer(out),         gpuws_arg_i32((int32_t)g->oh),
                                 gpuws_arg_i32((int32_t)g->ow), gpuws_arg_i32((int32_t)g->kh),
                                 gpuws_arg_local(cols_local) };
    gpuws__log(GPUWS__LOG_DEBUG, "convolve2d_separable %s: %zu x %zu row sums (%u x %u groups), then %u x %u groups",
               gpuws_dtype_name(dt), tr, g->ow, c_rows.grid[0], c_rows.grid[1], c_cols.grid[0], c_cols.grid[1]);
    if ((st = gpuws_launch(s, kr, &c_rows, a_rows, GPUWS__NARGS(a_rows)))) return st;
    return gpuws_launch(s, kc, &c_cols, a_cols, GPUWS__NARGS(a_cols));
}

gpuws_status gpuws_convolve2d_separable(gpuws_stream *s, gpuws_dtype dt, const gpuws_buffer *image, size_t height,
                                        size_t width, size_t row_stride, const gpuws_buffer *col, size_t kh,
                                        const gpuws_buffer *row, size_t kw, const gpuws_convolve2d_options *options,
                                        gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws__conv2d_geometry g = { 0 };
    size_t image_elems = 0, out_elems = 0;
    const size_t es = gpuws_dtype_size(dt);
    gpuws_status st = gpuws__conv2d_arguments("convolve2d_separable", &s, &claim, dt, image, height, width, row_stride,
                                              kh, kw, options, &ctx, &g, &image_elems, &out_elems);
    if (st) return st;
    if (out == image || out == col || out == row)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "convolve2d_separable: out must not be the %s buffer (it is read "
                            "while out is written)",
                            out == image ? "image"
                            : out == col ? "col"
                                         : "row");
    if ((st = gpuws__check_array(ctx, image, "image", image_elems, es)) ||
        (st = gpuws__check_array(ctx, col, "col", g.kh, es)) || (st = gpuws__check_array(ctx, row, "row", g.kw, es)) ||
        (st = gpuws__check_array(ctx, out, "out", out_elems, es)) ||
        (st = gpuws__check_dtype(ctx, dt, "convolve2d_separable")))
        return st;
    return gpuws__convolve2d_separable_launch(s, dt, &g, image, col, row, out);
}

gpuws_status gpuws__convolve2d_separable_launch(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *g,
                                                const gpuws_buffer *image, const gpuws_buffer *col,
                                                const gpuws_buffer *row, gpuws_buffer *out)
{
    if (s->ctx->backend->kind == GPUWS_BACKEND_CPU) { /* the row sums in the stream's memory, the host's here */
        size_t bytes = 0;
        gpuws_buffer *tmp;
        gpuws_status st = gpuws__convolve2d_separable_tmp_bytes(g, &bytes);
        if (st || (st = gpuws__stream_scratch(s, &key_tmp, bytes, &tmp))) return st;
        if (dt == GPUWS_F32)
            gpuws_convolve2d_separable_ref_f32_into(g, gpuws__cpu_ptr(image), gpuws__cpu_ptr(col), gpuws__cpu_ptr(row),
                                                    gpuws__cpu_ptr(out), gpuws__cpu_ptr(tmp));
        else
            gpuws_convolve2d_separable_ref_f64_into(g, gpuws__cpu_ptr(image), gpuws__cpu_ptr(col), gpuws__cpu_ptr(row),
                                                    gpuws__cpu_ptr(out), gpuws__cpu_ptr(tmp));
        return GPUWS_OK;
    }
    return separable_gpu(s, dt, g, image, col, row, out);
}
