/* Host driver for convolve2d: validation, then the reference on the CPU backend (rows on threads), or one launch of
 * the tiled kernel (GPUs) / the direct kernel (CPU OpenCL devices, devices with too little local memory) by name.
 *
 * The tiled kernel is the fixed-width one (compiled for the kernel's width, 1..16 columns) when the whole kernel
 * fits the shared-memory budget, else the generic one. On CUDA, f32 plans of 2 x 2 warps run the fixed kernel's
 * tiles as persistent blocks (see launch_persistent). Knobs (ctx->tuning, docs/tuning.md): convolve_path forces a
 * kernel family on CUDA/OpenCL; convolve2d_warps forces the tiled kernels' block shape, convolve2d_kernel_block caps
 * their kernel blocks (to exercise kernel blocking); convolve2d_split, _stage, _persist and _grid steer the fixed
 * kernel. gpuws_convolve2d_separable's driver is convolve2d_separable.c. */
#include "convolve2d_driver.h"
#include "../../core/threads.h"

#include <string.h>

/* Build options: convolve_no_unroll=1 compiles the OpenCL kernels without unroll pragmas (a diagnostic knob; see
 * docs/algorithms/convolve.md). */
static const char *conv_options(const gpuws__tuning *kn)
{
    return kn->convolve_no_unroll ? "-DGPUWS_CONV_NO_UNROLL=1" : NULL;
}

/* The fixed-width kernel's name and build options (OpenCL compiles the program once per width; CUDA has every
 * width compiled in and ignores the options). CUDA's f32 kernels for boundary fill (_fill) have the rule as a
 * constant, so the staging of edge tiles has no wrap/mirror arithmetic, which makes them faster on the workshop
 * case (convolve2d.cu). CUDA's f64 is no faster that way; in NVIDIA's OpenCL (the rule a build option) the kernel is
 * slower, and capped at 80 registers no faster than the generic kernel capped the same way, which OpenCL's f32 uses
 * (below). */
#define FIXED_MAX_KW 16
typedef struct {
    char name[48], options[128];
} fixed_kernel;

static bool fill_kernel(const gpuws_context *ctx, gpuws_dtype dt, gpuws_convolve_boundary boundary)
{
    return ctx->backend->kind == GPUWS_BACKEND_CUDA && dt == GPUWS_F32 && boundary == GPUWS_BOUNDARY_FILL;
}

static fixed_kernel fixed_kernel_for(const gpuws_context *ctx, gpuws_dtype dt, size_t kw,
                                     gpuws_convolve_boundary boundary, const gpuws__tuning *kn)
{
    fixed_kernel f;
    const char *extra = conv_options(kn);
    snprintf(f.name, sizeof f.name, "convolve2d_fixed_%s_k%zu%s", gpuws_dtype_name(dt), kw,
             fill_kernel(ctx, dt, boundary) ? "_fill" : "");
    snprintf(f.options, sizeof f.options, "-DGPUWS_CONV2D_KW=%zu%s%s", kw, extra ? " " : "", extra ? extra : "");
    /* f32 on NVIDIA's OpenCL: at most 80 registers, so that 6 work-groups of 128 fit an SM (the compiler's own choice
     * fits 5), which is slightly faster. f64 spills under the cap and is slower, so it keeps the compiler's choice.
     * Devices without cl_nv_compiler_options never see the option. */
    if (ctx->backend->kind == GPUWS_BACKEND_OPENCL && dt == GPUWS_F32) {
        const size_t l = strlen(f.options);
        snprintf(f.options + l, sizeof f.options - l, " -cl-nv-maxrregcount=80");
    }
    return f;
}

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must match Shape<T> / FixedShape<T> in convolve2d.cu and DEFINE_TILED / DEFINE_FIXED in convolve2d.cl. The
 * fixed kernel's c is the column padding of its tile (kw rounded up to 8), as for the generic kernel's chunks. */
typedef struct {
    int r, c, s, lx, vw; /* outputs per thread across, kernel columns per chunk, rows per thread, lanes across a
                            warp, elements per 16-byte vector */
    int sub_s;           /* the fixed kernel's rows per thread in the thin tiles below `split` (0: generic kernel) */
    int thin_auto;       /* the fixed kernel splits by itself (else only when the knob convolve2d_split says so) */
} tile_shape;
static const tile_shape shape_f32 = { 8, 8, 5, 4, 4, 0, 0 }, shape_f64 = { 8, 8, 3, 2, 2, 0, 0 };
/* f64 keeps whole tiles by default, and the model it was tuned with: its thin-tile plans are slower on the workshop
 * case. */
#ifndef GPUWS_CONV2D_F32_SUB_S /* FixedShape<float>::SUB_S's experiment knob (convolve2d.cu) */
#define GPUWS_CONV2D_F32_SUB_S 1
#endif
static const tile_shape fixed_f32 = { 8, 8, 5, 4, 4, GPUWS_CONV2D_F32_SUB_S, 1 }, fixed_f64 = { 4, 8, 5, 4, 2, 1, 0 };

/* Shared memory a tiled launch may use: 48 KB is every CUDA GPU's default and NVIDIA OpenCL's limit, and leaves
 * room for several blocks per multiprocessor. */
#define LOCAL_BUDGET (48u * 1024u)

typedef struct {
    int wx, wy;   /* warps across and down: block = 32 * wx * wy threads */
    int tw, th;   /* outputs per tile */
    int kbh, kbw; /* kernel block (kbw a multiple of the chunk) */
    int pitch;    /* tile row pitch in elements */
    size_t local_bytes;
    uint64_t blocks;
    int split;            /* the fixed kernel's output rows in whole tiles; thin tiles below (0 for the generic) */
    uint64_t main_blocks; /* blocks of whole tiles (the first ones of the grid) */
    int th_sub;           /* rows of a thin tile */
    double cost;
} tiled_plan;

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* The tile's row pitch: at least `width`, a whole number of 16-byte vectors, and an odd number of them, so that
 * rows S apart (S odd) start 16 bytes apart modulo 128: the 8 lanes of each quarter-warp's 16-byte loads (LX
 * across, 8/LX rows down) then fall in 8 distinct bank groups. */
static int tile_pitch(int width, int vw)
{
    int v = (width + vw - 1) / vw;
    if (v % 2 == 0) v++;
    return v * vw;
}

static size_t plan_local_bytes(const tile_shape *sh, int tw, int th, int kbh, int kbw, size_t es, int *pitch)
{
    *pitch = tile_pitch(tw + kbw, sh->vw);
    return ((size_t)(th + kbh - 1) * (size_t)*pitch + (size_t)kbh * (size_t)kbw) * es;
}

/* Kernel blocks for a tile shape: the whole kernel if it fits the budget, else halves of it until it does,
 * then evened out (15 rows in blocks of 8 become 8 + 7). Returns false when not even one row of C columns fits. */
static bool plan_kernel_blocks(const tile_shape *sh, const gpuws__conv2d_geometry *g, size_t es, size_t budget,
                               int cap_h, int cap_w, tiled_plan *p)
{
    int kbh = (int)(g->kh < (size_t)cap_h ? g->kh : (size_t)cap_h);
    int kbw = (int)round_up(g->kw < (size_t)cap_w ? g->kw : (size_t)cap_w, (size_t)sh->c);
    int pitch;
    while (plan_local_bytes(sh, p->tw, p->th, kbh, kbw, es, &pitch) > budget) {
        if (kbh > 1 && (kbh >= kbw || kbw <= sh->c)) kbh = (kbh + 1) / 2;
        else if (kbw > sh->c) kbw = (int)round_up((size_t)(kbw + 1) / 2, (size_t)sh->c);
        else return false;
    }
    const int nbh = (int)((g->kh + (size_t)kbh - 1) / (size_t)kbh),
              nbw = (int)((g->kw + (size_t)kbw - 1) / (size_t)kbw);
    p->kbh = (int)((g->kh + (size_t)nbh - 1) / (size_t)nbh);
    p->kbw = (int)round_up((g->kw + (size_t)nbw - 1) / (size_t)nbw, (size_t)sh->c);
    p->local_bytes = plan_local_bytes(sh, p->tw, p->th, p->kbh, p->kbw, es, &p->pitch);
    return true;
}

/* Blocks of a plan resident on one compute unit at once, at most 16: by shared memory (1 KB more per block, as CUDA
 * reserves; the generic kernel's model, and units whose size is not known, as if a unit had 4 x the budget); for the
 * fixed kernel also by its registers, since a kernel allowed fewer than 1024 threads per block has that many per
 * unit at most. kernel_block_limit: 0 for the generic kernel. */
static double plan_resident(const gpuws_context *ctx, const tiled_plan *p, uint32_t kernel_block_limit, bool thin)
{
    const double unit =
        thin && ctx->info.shared_mem_per_unit ? (double)ctx->info.shared_mem_per_unit : 4.0 * LOCAL_BUDGET;
    double resident = floor(unit / (double)(p->local_bytes + 1024));
    if (resident > 16) resident = 16;
    if (kernel_block_limit) {
        const double warps_by_regs = kernel_block_limit >= 1024 ? 64 : floor(kernel_block_limit / 32.0);
        const double by_regs = floor(warps_by_regs / (p->wx * p->wy));
        if (by_regs < resident) resident = by_regs;
    }
    return resident < 1 ? 1 : resident;
}

/* A block's work in FMA slots: the FMAs of its tile, staging its tiles, and a fixed cost. The generic kernel's
 * model, kept as measured (also f64's fixed kernel: thin_model = false), counts every FMA of a tile, partial edge
 * tiles included, and 4 slots per staged element. The f32 fixed kernel's (thin_model): its warps past the output's
 * right edge skip their FMAs, so it counts the average share of active warp columns; and 16 slots per staged
 * element: blocks of 1 or 2 warps, whose tiles stage 1.7-2.0 elements per output, are slower than 4-warp blocks
 * staging 1.5 (2048^2 * 15x15 f32), more than the FMA count alone says. */
static double block_work(const gpuws__conv2d_geometry *g, const tiled_plan *p, int th, bool thin_model)
{
    const double nkb = (double)((g->kh + (size_t)p->kbh - 1) / (size_t)p->kbh) *
                       (double)((g->kw + (size_t)p->kbw - 1) / (size_t)p->kbw);
    double fmas = (double)p->tw * th * (double)g->kh * (double)g->kw;
    if (thin_model) { /* warp columns of LX * R outputs: tw / wx each */
        const double warp_w = (double)p->tw / p->wx, tiles_x = ceil((double)g->ow / p->tw);
        fmas *= ceil((double)g->ow / warp_w) / (tiles_x * p->wx);
    }
    const double staged = (double)(th + p->kbh - 1) * (double)(p->tw + p->kbw) * nkb;
    return fmas + (thin_model ? 16.0 : 4.0) * staged + 64.0 * 32 * p->wx * p->wy;
}

/* A rough time for a plan, in FMA slots of one compute unit; units with fewer than 8 resident warps cannot hide
 * latency and run proportionally slower. */
static double plan_cost(const gpuws_context *ctx, const gpuws__conv2d_geometry *g, const tiled_plan *p,
                        uint32_t kernel_block_limit, bool thin)
{
    const double per_block = block_work(g, p, p->th, thin);
    const double units = ctx->info.compute_units ? ctx->info.compute_units : 1;
    const double resident = plan_resident(ctx, p, kernel_block_limit, thin);
    if (kernel_block_limit == 0) { /* the generic kernel's model, kept as it was measured: the busiest unit gets
                                      ceil(blocks / units) blocks */
        const double per_unit = ceil((double)p->blocks / units);
        const double warps = (per_unit < resident ? per_unit : resident) * p->wx * p->wy;
        const double efficiency = warps >= 8 ? 1.0 : warps / 8.0;
        return per_unit * per_block / efficiency;
    }
    const double eff_full = resident * p->wx * p->wy >= 8 ? 1.0 : resident * p->wx * p->wy / 8.0;
    if (p->main_blocks < p->blocks) {
        /* The fixed kernel with thin tiles: the whole tiles fill the slots a whole number of times and the thin
         * ones go to whichever slot is free, so the work evens out over the units up to about one thin block. */
        const double sub = block_work(g, p, p->th_sub, true);
        const double work = (double)p->main_blocks * per_block + (double)(p->blocks - p->main_blocks) * sub;
        return work / units / eff_full + sub;
    }
    /* Whole tiles only: a unit's blocks run in rounds of `resident`, and a last round of few blocks leaves the
     * unit underused (the generic kernel's 1.3 waves). */
    const double per_unit = ceil((double)p->blocks / units);
    const double full = floor(per_unit / resident), rest = per_unit - full * resident;
    const double eff_rest = rest * p->wx * p->wy >= 8 ? 1.0 : rest * p->wx * p->wy / 8.0;
    return full * resident * per_block / eff_full + (rest > 0 ? rest * per_block / eff_rest : 0.0);
}

/* The fixed kernel's split between whole and thin tiles (FixedShape in convolve2d.cu): whole tiles for as many tile
 * rows as fill the units' resident slots a whole number of times, thin tiles for the rows below; none when the
 * whole tiles fill them exactly. forced, the knob convolve2d_split: off (whole tiles only), all (thin only) or a
 * number of whole tile rows, overrides it. */
static void plan_split(const gpuws_context *ctx, const gpuws__conv2d_geometry *g, const tile_shape *sh,
                       uint32_t kernel_block_limit, int64_t forced, tiled_plan *p)
{
    const uint64_t tiles_x = (g->ow + (size_t)p->tw - 1) / (size_t)p->tw,
                   tiles_y = (g->oh + (size_t)p->th - 1) / (size_t)p->th;
    const uint64_t units = ctx->info.compute_units ? ctx->info.compute_units : 1;
    const uint64_t slots = units * (uint64_t)plan_resident(ctx, p, kernel_block_limit, true), tiles = tiles_x * tiles_y;
    uint64_t rows =
        tiles % slots == 0 || !sh->thin_auto ? tiles_y : tiles / slots * slots / tiles_x; /* whole tile rows */
    if (forced == GPUWS__SPLIT_OFF) rows = tiles_y;
    else if (forced == GPUWS__SPLIT_ALL) rows = 0;
    else if (forced >= 0) rows = (uint64_t)forced < tiles_y ? (uint64_t)forced : tiles_y;
    p->th_sub = p->th / sh->s * sh->sub_s;
    p->main_blocks = rows * tiles_x;
    p->split = (int)(rows * (uint64_t)p->th);
    const uint64_t left = rows < tiles_y ? g->oh - (uint64_t)p->split : 0;
    p->blocks = p->main_blocks + (left + (uint64_t)p->th_sub - 1) / (uint64_t)p->th_sub * tiles_x;
}

/* The cheapest block shape for a tile shape. fixed_limit: 0 for the generic kernel; for the fixed one the kernel's
 * own block-size limit (its register use), and then only plans that hold the whole kernel qualify. */
static bool plan_tiled(const gpuws_context *ctx, const gpuws__conv2d_geometry *g, const tile_shape *sh, gpuws_dtype dt,
                       uint32_t max_block, uint32_t fixed_limit, const gpuws__tuning *kn, tiled_plan *best)
{
    const size_t es = gpuws_dtype_size(dt);
    const size_t budget = ctx->info.shared_mem_bytes < LOCAL_BUDGET ? ctx->info.shared_mem_bytes : LOCAL_BUDGET;
    const int cap_h = kn->convolve2d_kernel_block[0] ? kn->convolve2d_kernel_block[0] : 256;
    const int cap_w = kn->convolve2d_kernel_block[0] ? kn->convolve2d_kernel_block[1] : 256;
    static const int shapes[][2] = { { 2, 1 }, { 1, 2 }, { 4, 1 }, { 2, 2 }, { 1, 4 },
                                     { 8, 1 }, { 4, 2 }, { 2, 4 }, { 1, 1 } };
    const int forced_wx = kn->convolve2d_warps[0], forced_wy = kn->convolve2d_warps[1];
    bool found = false;
    /* {1, 1} is the fixed kernel's only: the generic kernel's choices stay as measured */
    const size_t nshapes = sizeof shapes / sizeof shapes[0] - (fixed_limit ? 0 : 1);
    for (size_t i = 0; i < nshapes; i++) {
        tiled_plan p = { 0 };
        p.wx = shapes[i][0], p.wy = shapes[i][1];
        if (forced_wx > 0 && (p.wx != forced_wx || p.wy != forced_wy)) continue;
        if ((uint32_t)(32 * p.wx * p.wy) > max_block) continue;
        p.tw = p.wx * sh->lx * sh->r;
        p.th = p.wy * (32 / sh->lx) * sh->s;
        if (!plan_kernel_blocks(sh, g, es, budget, cap_h, cap_w, &p)) continue;
        if (fixed_limit && ((size_t)p.kbh < g->kh || (size_t)p.kbw < g->kw)) continue;
        p.blocks = (uint64_t)((g->ow + (size_t)p.tw - 1) / (size_t)p.tw) *
                   (uint64_t)((g->oh + (size_t)p.th - 1) / (size_t)p.th);
        p.main_blocks = p.blocks;
        p.split = (int)((g->oh + (size_t)p.th - 1) / (size_t)p.th * (size_t)p.th);
        if (fixed_limit) plan_split(ctx, g, sh, fixed_limit, kn->convolve2d_split, &p);
        if (p.blocks > ctx->info.max_grid_dims[0]) continue;
        p.cost = plan_cost(ctx, g, &p, fixed_limit, fixed_limit && sh->thin_auto);
        if (!found || p.cost < best->cost) *best = p;
        found = true;
    }
    return found;
}

/* The fixed kernel's planning of the last call on this stream, for the next call of the same shape (the stream's
 * memo, key_plan): planning and the kernel's name and options (two snprintf calls) cost thousands of host
 * instructions per call, while the host's time per call shows in every event-timed row (the device waits
 * for the launch). Keyed by all the planning reads: dtype, sizes, the fill-kernel choice and the steering knobs
 * (tests change them between calls). */
typedef struct {
    int warps[2], kernel_block[2];
    int64_t split;
    bool no_unroll;
} memo_knobs;

typedef struct {
    bool valid, found;
    gpuws_dtype dt;
    size_t kh, kw, oh, ow;
    gpuws_convolve_boundary boundary;
    memo_knobs knobs;
    fixed_kernel f;
    tiled_plan p;
} plan_memo;

static void memo_key(const gpuws__tuning *kn, memo_knobs *key)
{
    *key = (memo_knobs){ { kn->convolve2d_warps[0], kn->convolve2d_warps[1] },
                         { kn->convolve2d_kernel_block[0], kn->convolve2d_kernel_block[1] },
                         kn->convolve2d_split,
                         kn->convolve_no_unroll };
}

static bool memo_hit(const plan_memo *m, gpuws_dtype dt, const gpuws__conv2d_geometry *g, const memo_knobs *key)
{
    const memo_knobs *k = &m->knobs; /* field by field: struct copies need not keep padding */
    return m->valid && m->dt == dt && m->kh == g->kh && m->kw == g->kw && m->oh == g->oh && m->ow == g->ow &&
           m->boundary == g->boundary && k->warps[0] == key->warps[0] && k->warps[1] == key->warps[1] &&
           k->kernel_block[0] == key->kernel_block[0] && k->kernel_block[1] == key->kernel_block[1] &&
           k->split == key->split && k->no_unroll == key->no_unroll;
}

/* What this file keeps on the stream (gpuws__stream_memo). */
static const gpuws__stream_key key_plan = { "convolve2d.plan" };

/* The fixed kernel's name and options and its plan (found: one exists), from the memo or planned and memoized. */
static gpuws_status plan_fixed(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *g,
                               const gpuws__tuning *kn, fixed_kernel *f, tiled_plan *p, bool *found)
{
    gpuws_context *ctx = s->ctx;
    plan_memo *m;
    gpuws_status st = gpuws__stream_memo(s, &key_plan, sizeof *m, (void **)&m);
    if (st) return st;
    memo_knobs key;
    memo_key(kn, &key);
    if (memo_hit(m, dt, g, &key)) {
        *f = m->f, *p = m->p, *found = m->found;
        return GPUWS_OK;
    }
    *f = fixed_kernel_for(ctx, dt, g->kw, g->boundary, kn);
    gpuws_kernel *k;
    uint32_t max_block;
    m->valid = false;
    if ((st = gpuws__kernel_block(ctx, f->name, f->options, 1024, &k, &max_block))) return st;
    const uint32_t limit = k->info.max_block_size ? k->info.max_block_size : 1024;
    *found = plan_tiled(ctx, g, dt == GPUWS_F32 ? &fixed_f32 : &fixed_f64, dt, max_block, limit, kn, p);
    *m = (plan_memo){ true, *found, dt, g->kh, g->kw, g->oh, g->ow, g->boundary, key, *f, *p };
    return GPUWS_OK;
}

/* Where the tiled kernels' tiles start in the extended image: tile row u of the tile of output row m0 holds
 * extended-image row m0 + base_row + u (the flipped kernel's row 0), and the same for columns. */
static int32_t base_row(const gpuws__conv2d_geometry *g)
{
    return (int32_t)((long long)g->om - (long long)(g->kh - 1));
}
static int32_t base_col(const gpuws__conv2d_geometry *g)
{
    return (int32_t)((long long)g->on - (long long)(g->kw - 1));
}

/* The fixed kernel's copy width for tiles inside the image, in elements: the widest 16-byte vector, or 8 bytes, that
 * every tile row start is aligned to (device buffers are 256-byte aligned; tile starts are multiples of the tile
 * width past base_c), else 1 (the general loader only; also with the knob convolve2d_stage=general, to A/B). */
static int fixed_copy_vec(gpuws_dtype dt, const gpuws__conv2d_geometry *g, const gpuws__tuning *kn)
{
    if (kn->convolve2d_stage == GPUWS__STAGE_GENERAL) return 1;
    const long long base_c = base_col(g);
    const int widest = dt == GPUWS_F32 ? 4 : 2;
    for (int v = widest; v >= 2; v /= 2)
        if (base_c % v == 0 && g->stride % (size_t)v == 0) return v;
    return 1;
}

/* The generic tiled kernel (fixed == NULL) or a fixed-width one: the same arguments (the fixed kernel takes its copy
 * width where the generic one takes the kernel block's columns). */
static gpuws_status launch_tiled(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *g, const tiled_plan *p,
                                 const fixed_kernel *fixed, const gpuws__tuning *kn, const gpuws_buffer *image,
                                 const gpuws_buffer *kernel, gpuws_buffer *out)
{
    gpuws_launch_config cfg = { { (uint32_t)p->blocks, 1, 1 }, { (uint32_t)(32 * p->wx * p->wy), 1, 1 } };
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                         gpuws_arg_buffer((gpuws_buffer *)kernel),
                         gpuws_arg_buffer(out),
                         gpuws_arg_u64(g->stride),
                         gpuws_arg_i32((int32_t)g->h),
                         gpuws_arg_i32((int32_t)g->w),
                         gpuws_arg_i32((int32_t)g->kh),
                         gpuws_arg_i32((int32_t)g->kw),
                         gpuws_arg_i32((int32_t)g->oh),
                         gpuws_arg_i32((int32_t)g->ow),
                         gpuws_arg_i32(base_row(g)),
                         gpuws_arg_i32(base_col(g)),
                         gpuws_arg_i32((int32_t)g->boundary),
                         dt == GPUWS_F32 ? gpuws_arg_f32((float)g->fill) : gpuws_arg_f64(g->fill),
                         gpuws_arg_i32(p->wx),
                         gpuws_arg_i32(p->kbh),
                         gpuws_arg_i32(fixed ? fixed_copy_vec(dt, g, kn) : p->kbw),
                         gpuws_arg_i32(p->pitch),
                         gpuws_arg_i32(p->split),
                         gpuws_arg_local(p->local_bytes) };
    if (fixed) return gpuws__launch_named(s, fixed->name, fixed->options, &cfg, args, GPUWS__NARGS(args));
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve2d_tiled_f32" : "convolve2d_tiled_f64", conv_options(kn),
                               &cfg, args, GPUWS__NARGS(args));
}

/* CUDA's persistent f32 kernel (convolve2d_persist_f32_k<kw>[_fill] in convolve2d.cu): the fixed kernel's tiles for
 * the 2 x 2-warp plan, taken from the stream's ticket counter (gpuws__stream_tickets) by as many blocks as the SMs
 * hold at once (at most one per tile). OpenCL keeps a work-group per tile: the same loop there (warp shape
 * constant, ticket base) is much slower on NVIDIA's OpenCL than a group per tile, and PoCL 5 crashes building the
 * program. The knob convolve2d_persist=0 keeps the fixed kernel (an A/B knob); convolve2d_grid=tiles launches a
 * block per tile, =N at most N blocks (tests: blocks that
 * take many tiles each). */
static bool use_persistent(const gpuws_context *ctx, gpuws_dtype dt, const tiled_plan *p, const gpuws__tuning *kn)
{
    return ctx->backend->kind == GPUWS_BACKEND_CUDA && dt == GPUWS_F32 && p->wx == 2 && p->wy == 2 &&
           kn->convolve2d_persist;
}

static gpuws_status launch_persistent(gpuws_stream *s, const gpuws__conv2d_geometry *g, const tiled_plan *p,
                                      const gpuws__tuning *kn, const gpuws_buffer *image, const gpuws_buffer *kernel,
                                      gpuws_buffer *out)
{
    gpuws_context *ctx = s->ctx;
    char name[48];
    snprintf(name, sizeof name, "convolve2d_persist_f32_k%zu%s", g->kw,
             fill_kernel(ctx, GPUWS_F32, g->boundary) ? "_fill" : "");
    gpuws_kernel *k;
    gpuws_buffer *tickets;
    uint32_t base;
    gpuws_status st = gpuws__kernel_get_ex(ctx, name, NULL, &k);
    if (st || (st = gpuws__stream_tickets(s, &tickets, &base))) return st;
    const uint32_t limit = k->info.max_block_size ? k->info.max_block_size : 1024;
    const uint64_t units = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t grid = units * (uint64_t)plan_resident(ctx, p, limit, true);
    if (kn->convolve2d_grid == GPUWS__GRID_TILES) grid = p->blocks;
    else if (kn->convolve2d_grid > 0) grid = (uint64_t)kn->convolve2d_grid;
    if (grid > p->blocks) grid = p->blocks;
    const uint64_t tiles_x = (g->ow + (size_t)p->tw - 1) / (size_t)p->tw;
    gpuws__log(GPUWS__LOG_DEBUG,
               "convolve2d f32: persistent kw %zu, %llu tiles (%llu whole for rows < %d, then %d-row "
               "tiles) on %llu blocks",
               g->kw, (unsigned long long)p->blocks, (unsigned long long)p->main_blocks, p->split, p->th_sub,
               (unsigned long long)grid);
    gpuws_launch_config cfg = { { (uint32_t)grid, 1, 1 }, { 128, 1, 1 } };
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                         gpuws_arg_buffer((gpuws_buffer *)kernel),
                         gpuws_arg_buffer(out),
                         gpuws_arg_u64(g->stride),
                         gpuws_arg_i32((int32_t)g->h),
                         gpuws_arg_i32((int32_t)g->w),
                         gpuws_arg_i32((int32_t)g->kh),
                         gpuws_arg_i32((int32_t)g->oh),
                         gpuws_arg_i32((int32_t)g->ow),
                         gpuws_arg_i32(base_row(g)),
                         gpuws_arg_i32(base_col(g)),
                         gpuws_arg_i32((int32_t)g->boundary),
                         gpuws_arg_f32((float)g->fill),
                         gpuws_arg_i32(p->pitch),
                         gpuws_arg_i32(fixed_copy_vec(GPUWS_F32, g, kn)),
                         gpuws_arg_i32(p->split),
                         gpuws_arg_buffer(tickets),
                         gpuws_arg_u32(base),
                         gpuws_arg_i32((int32_t)p->blocks),
                         gpuws_arg_i32((int32_t)tiles_x),
                         gpuws_arg_i32((int32_t)p->main_blocks),
                         gpuws_arg_local(p->local_bytes) };
    st = gpuws_launch(s, k, &cfg, args, GPUWS__NARGS(args));
    /* each block draws a ticket per tile it takes and one past the last tile */
    gpuws__stream_tickets_drawn(s, st == GPUWS_OK, (uint32_t)(p->blocks + grid));
    return st;
}

static gpuws_status launch_direct(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *g,
                                  const gpuws__tuning *kn, const gpuws_buffer *image, const gpuws_buffer *kernel,
                                  gpuws_buffer *out)
{
    const gpuws_context *ctx = s->ctx;
    /* each work-item computes 256 bytes of outputs of a row (4 SIMD vectors on a CPU); CPU devices get groups of
     * 8 work-items along a row, GPUs 32 x 4 */
    const size_t dv = 256 / gpuws_dtype_size(dt), items = (g->ow + dv - 1) / dv;
    const uint32_t bx = gpuws__is_cpu_device(ctx) ? 8 : 32, by = gpuws__is_cpu_device(ctx) ? 1 : 4;
    uint64_t gy = (g->oh + by - 1) / by;
    if (gy > ctx->info.max_grid_dims[1]) gy = ctx->info.max_grid_dims[1]; /* the kernel strides over the rest */
    gpuws_launch_config cfg = { { (uint32_t)((items + bx - 1) / bx), (uint32_t)gy, 1 }, { bx, by, 1 } };
    gpuws_arg args[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                         gpuws_arg_buffer((gpuws_buffer *)kernel),
                         gpuws_arg_buffer(out),
                         gpuws_arg_u64(g->stride),
                         gpuws_arg_i32((int32_t)g->h),
                         gpuws_arg_i32((int32_t)g->w),
                         gpuws_arg_i32((int32_t)g->kh),
                         gpuws_arg_i32((int32_t)g->kw),
                         gpuws_arg_i32((int32_t)g->oh),
                         gpuws_arg_i32((int32_t)g->ow),
                         gpuws_arg_i32((int32_t)g->om),
                         gpuws_arg_i32((int32_t)g->on),
                         gpuws_arg_i32((int32_t)g->boundary),
                         dt == GPUWS_F32 ? gpuws_arg_f32((float)g->fill) : gpuws_arg_f64(g->fill) };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "convolve2d_direct_f32" : "convolve2d_direct_f64", conv_options(kn),
                               &cfg, args, GPUWS__NARGS(args));
}

gpuws_status gpuws__conv2d_arguments(const char *fn, gpuws_stream **s, gpuws__stream_claim *claim, gpuws_dtype dt,
                                     const gpuws_buffer *image, size_t height, size_t width, size_t row_stride,
                                     size_t kh, size_t kw, const gpuws_convolve2d_options *options, gpuws_context **ctx,
                                     gpuws__conv2d_geometry *g, size_t *image_elems, size_t *out_elems)
{
    gpuws_status st = gpuws__buffer_context(image, "image", ctx);
    if (st || (st = gpuws__driver_stream(*ctx, s, claim, fn))) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: dtype %s is not f32 or f64", fn, gpuws_dtype_name(dt));
    if ((st = gpuws__conv2d_geometry_init(height, width, row_stride, kh, kw, options, g))) return st;
    if (gpuws__mul_overflows(g->h - 1, g->stride, image_elems) ||
        gpuws__add_overflows(*image_elems, g->w, image_elems) || gpuws__mul_overflows(g->oh, g->ow, out_elems))
        return gpuws__error(GPUWS_ERR_OVERFLOW,
                            "%s: image %zu x %zu (row stride %zu), kernel %zu x %zu: element counts "
                            "overflow size_t",
                            fn, g->h, g->w, g->stride, g->kh, g->kw);
    return GPUWS_OK;
}

gpuws_status gpuws_convolve2d(gpuws_stream *s, gpuws_dtype dt, const gpuws_buffer *image, size_t height, size_t width,
                              size_t row_stride, const gpuws_buffer *kernel, size_t kh, size_t kw,
                              const gpuws_convolve2d_options *options, gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws__conv2d_geometry g = { 0 };
    size_t image_elems = 0, kernel_elems, out_elems = 0;
    const size_t es = gpuws_dtype_size(dt);
    gpuws_status st = gpuws__conv2d_arguments("convolve2d", &s, &claim, dt, image, height, width, row_stride, kh, kw,
                                              options, &ctx, &g, &image_elems, &out_elems);
    if (st) return st;
    if (gpuws__mul_overflows(g.kh, g.kw, &kernel_elems))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "convolve2d: kernel %zu x %zu: element count overflows size_t", g.kh,
                            g.kw);
    if (out == image || out == kernel)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "convolve2d: out must not be the %s buffer (it is read while out is "
                            "written)",
                            out == image ? "image" : "kernel");
    if ((st = gpuws__check_array(ctx, image, "image", image_elems, es)) ||
        (st = gpuws__check_array(ctx, kernel, "kernel", kernel_elems, es)) ||
        (st = gpuws__check_array(ctx, out, "out", out_elems, es)) || (st = gpuws__check_dtype(ctx, dt, "convolve2d")))
        return st;

    return gpuws__convolve2d_launch(s, dt, &g, &g, image, kernel, out);
}

/* A plan made for the geometry gp, for the rows of g: the same tile shape and kernel blocks, the blocks (and the
 * fixed kernel's whole tiles; no thin ones) counted for g's output. */
static void plan_for_rows(const gpuws__conv2d_geometry *g, tiled_plan *p)
{
    const uint64_t tiles_x = (g->ow + (size_t)p->tw - 1) / (size_t)p->tw,
                   tiles_y = (g->oh + (size_t)p->th - 1) / (size_t)p->th;
    p->blocks = p->main_blocks = tiles_x * tiles_y;
    p->split = (int)(tiles_y * (uint64_t)p->th);
}

/* The CPU backend: the reference on a range of output rows. */
typedef struct {
    const gpuws__conv2d_geometry *g;
    gpuws_dtype dt;
    const void *image, *kernel;
    void *out;
} cpu_rows;

static void cpu_conv_rows(void *arg, size_t part, size_t r0, size_t r1)
{
    (void)part;
    const cpu_rows *c = arg;
    if (c->dt == GPUWS_F32) gpuws_convolve2d_ref_f32(c->g, c->image, c->kernel, c->out, r0, r1);
    else gpuws_convolve2d_ref_f64(c->g, c->image, c->kernel, c->out, r0, r1);
}

gpuws_status gpuws__convolve2d_launch(gpuws_stream *s, gpuws_dtype dt, const gpuws__conv2d_geometry *gp,
                                      const gpuws__conv2d_geometry *g, const gpuws_buffer *image,
                                      const gpuws_buffer *kernel, gpuws_buffer *out)
{
    gpuws_context *ctx = s->ctx;
    gpuws_status st;
    const bool same = gp == g;
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        /* rows of the output on the host's cores, each part at least 2^22 multiply-adds: every output value is
         * computed alone, so any number of parts gives the same bits */
        cpu_rows c = { g, dt, gpuws__cpu_ptr(image), gpuws__cpu_ptr(kernel), gpuws__cpu_ptr(out) };
        const double work = (double)g->oh * (double)g->ow * (double)g->kh * (double)g->kw;
        gpuws__run_ranges(g->oh, gpuws__work_parts(gpuws__cpu_count(), work, 4194304.0, g->oh), cpu_conv_rows, &c);
        return GPUWS_OK;
    }
    const gpuws__tuning *kn = &ctx->tuning;
    /* Tiled on GPUs (CUDA, and OpenCL GPU devices: the kernels read local memory with vload, since NVIDIA's OpenCL
     * faults on vector loads from a local argument, which is only element-aligned), direct on CPU OpenCL devices. */
    bool tiled = !gpuws__is_cpu_device(ctx);
    if (kn->convolve_path != GPUWS__PATH_AUTO) tiled = kn->convolve_path == GPUWS__PATH_TILED;
    tiled_plan p;
    uint32_t max_block = 0;
    if (tiled && g->kw <= FIXED_MAX_KW) {
        /* the fixed-width kernel when the whole kernel fits a tile's budget */
        fixed_kernel f;
        bool found;
        if ((st = plan_fixed(s, dt, gp, kn, &f, &p, &found))) return st;
        if (found) {
            if (!same) plan_for_rows(g, &p);
            gpuws__log(GPUWS__LOG_DEBUG,
                       "convolve2d %s: fixed kw %zu, %d x %d warps, tiles %d x %d, pitch %d, %zu bytes "
                       "local, %llu blocks (%llu whole tiles for rows < %d, then %d-row tiles)",
                       gpuws_dtype_name(dt), g->kw, p.wx, p.wy, p.th, p.tw, p.pitch, p.local_bytes,
                       (unsigned long long)p.blocks, (unsigned long long)p.main_blocks, p.split, p.th_sub);
            if (use_persistent(ctx, dt, &p, kn)) return launch_persistent(s, g, &p, kn, image, kernel, out);
            return launch_tiled(s, dt, g, &p, &f, kn, image, kernel, out);
        }
    }
    if (tiled) { /* the kernel's own limit (register use) as well as the device's */
        gpuws_kernel *k;
        if ((st = gpuws__kernel_block(ctx, dt == GPUWS_F32 ? "convolve2d_tiled_f32" : "convolve2d_tiled_f64",
                                      conv_options(kn), 1024, &k, &max_block)))
            return st;
    }
    if (tiled && plan_tiled(ctx, gp, dt == GPUWS_F32 ? &shape_f32 : &shape_f64, dt, max_block, 0, kn, &p)) {
        if (!same) plan_for_rows(g, &p);
        gpuws__log(GPUWS__LOG_DEBUG,
                   "convolve2d %s: tiled, %d x %d warps, tiles %d x %d, kernel blocks %d x %d, "
                   "pitch %d, %zu bytes local, %llu blocks",
                   gpuws_dtype_name(dt), p.wx, p.wy, p.th, p.tw, p.kbh, p.kbw, p.pitch, p.local_bytes,
                   (unsigned long long)p.blocks);
        return launch_tiled(s, dt, g, &p, NULL, kn, image, kernel, out);
    }
    gpuws__log(GPUWS__LOG_DEBUG, "convolve2d %s: direct", gpuws_dtype_name(dt));
    return launch_direct(s, dt, g, kn, image, kernel, out);
}
