/* Host driver for matmul: one code path for CUDA and OpenCL, the reference on the CPU backend. */
#include "../common/driver.h"
#include "matmul_layout.h"
#include "matmul_ref.h"

/* The tiled kernels' shape (matmul_layout.h): 256 threads, 128×128 tiles of C for f32 (16-byte vectors of 4) and
 * 64×64 for f64 (vectors of 2). Tiles are square: the same size along m and n. */
_Static_assert(MATMUL_TX == MATMUL_TY && MATMUL_SMALL_TX == MATMUL_SMALL_TY, "matmul: square tiles of C");
enum {
    TILED_THREADS = MATMUL_TX * MATMUL_TY,
    TILE_F32 = 2 * MATMUL_TY * MATMUL_VW_F32,
    TILE_F64 = 2 * MATMUL_TY * MATMUL_VW_F64,
};

/* CPU OpenCL devices (PoCL) run each work-group as a loop over its work-items, vectorised across them, so they
 * (and devices whose work-groups are smaller than 256) get small work-groups with small register tiles: 8×8
 * work-items of 4×4 each, 32×32 tiles of C, 16 k per step (the fastest of the shapes measured on PoCL: see
 * docs/algorithms/matmul.md). */
#define MM_STR2(x) #x
#define MM_STR(x)  MM_STR2(x)
#define CPU_TILED_OPTIONS                                                                                              \
    "-DMM_TX=" MM_STR(MATMUL_SMALL_TX) " -DMM_TY=" MM_STR(MATMUL_SMALL_TY) " -DMM_VW=" MM_STR(                         \
        MATMUL_SMALL_VW) " -DMM_BK=" MM_STR(MATMUL_SMALL_BK)
enum { CPU_TILED_THREADS = MATMUL_SMALL_TX * MATMUL_SMALL_TY, CPU_TILE = 2 * MATMUL_SMALL_TY * MATMUL_SMALL_VW };

static gpuws_status check(gpuws_stream **s, gpuws__stream_claim *claim, gpuws_matmul_variant variant, gpuws_dtype dt,
                          size_t m, size_t n, size_t k, const gpuws_buffer *a, const gpuws_buffer *b,
                          const gpuws_buffer *c, gpuws_context **ctx)
{
    gpuws_status st = gpuws__buffer_context(a, "a", ctx);
    if (st || (st = gpuws__driver_stream(*ctx, s, claim, "matmul"))) return st;
    if ((unsigned)variant > GPUWS_MATMUL_SHARED)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "matmul: variant %d is not a gpuws_matmul_variant",
                            (int)variant);
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "matmul: dtype %s is not f32 or f64", gpuws_dtype_name(dt));
    size_t mk, kn, mn;
    if (gpuws__mul_overflows(m, k, &mk) || gpuws__mul_overflows(k, n, &kn) || gpuws__mul_overflows(m, n, &mn))
        return gpuws__error(GPUWS_ERR_OVERFLOW,
                            "matmul: m = %zu, n = %zu, k = %zu: a matrix's element count overflows size_t", m, n, k);
    const size_t es = gpuws_dtype_size(dt);
    if ((st = gpuws__check_array(*ctx, a, "a", mk, es)) || (st = gpuws__check_array(*ctx, b, "b", kn, es)) ||
        (st = gpuws__check_array(*ctx, c, "c", mn, es)) || (st = gpuws__check_dtype(*ctx, dt, "matmul")))
        return st;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) /* 32-bit indices, with room for a tile past the end */
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE,
                            "matmul: m = %zu, n = %zu, k = %zu: each dimension must be below 2^31", m, n, k);
    if (mn && (c == a || c == b))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "matmul: c must not be the same buffer as %s",
                            c == a ? "a" : "b");
    return GPUWS_OK;
}

/* Small work-groups and tiles (CPU_TILED_OPTIONS) for CPU OpenCL devices and devices with small work-groups. */
static bool small_groups(const gpuws_context *ctx)
{
    if (ctx->backend->kind == GPUWS_BACKEND_CUDA) return false; /* matmul.cu has the one (large) shape */
    /* The knob matmul_tile=large|small (for tests) forces either shape, so PoCL runs the GPUs' kernel too. */
    if (ctx->tuning.matmul_tile == GPUWS__MATMUL_LARGE) return false;
    if (ctx->tuning.matmul_tile == GPUWS__MATMUL_SMALL) return true;
    return gpuws__is_cpu_device(ctx) || ctx->info.max_block_size < TILED_THREADS;
}

/* NVIDIA's OpenCL has no __launch_bounds__: the same register cap as matmul.cu's (256 threads, 2 blocks per SM)
 * through its compiler option (cl_nv_compiler_options). */
#define NV_OPTIONS "-cl-nv-maxrregcount=128"

/* matmul.cl is built once per dtype and device class: every kernel of one dtype comes from one program. */
static const char *program_options(const gpuws_context *ctx, gpuws_dtype dt)
{
    const bool f64 = dt == GPUWS_F64;
    if (small_groups(ctx)) return f64 ? "-DMM_F64=1 " CPU_TILED_OPTIONS : CPU_TILED_OPTIONS;
    if (gpuws__is_nvidia_opencl(ctx)) return f64 ? "-DMM_F64=1 " NV_OPTIONS : NV_OPTIONS;
    return f64 ? "-DMM_F64=1" : NULL;
}

static gpuws_status launch_naive(gpuws_stream *s, gpuws_dtype dt, uint32_t m, uint32_t n, gpuws_arg *args, size_t nargs)
{
    const gpuws_context *ctx = s->ctx;
    const uint32_t bx = 16, by = ctx->info.max_block_size >= 256 ? 16 : 4; /* x along a row of C: B read coalesced */
    uint64_t gy = ((uint64_t)m + by - 1) / by;
    if (gy > ctx->info.max_grid_dims[1]) gy = ctx->info.max_grid_dims[1]; /* the kernel loops over the rest */
    gpuws_launch_config cfg = { { (uint32_t)(((uint64_t)n + bx - 1) / bx), (uint32_t)gy, 1 }, { bx, by, 1 } };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "matmul_naive_f32" : "matmul_naive_f64", program_options(ctx, dt),
                               &cfg, args, nargs);
}

static gpuws_status launch_shared(gpuws_stream *s, gpuws_dtype dt, uint32_t m, uint32_t n, gpuws_arg *args,
                                  size_t nargs)
{
    const gpuws_context *ctx = s->ctx;
    const uint32_t ts = MATMUL_SHARED_TILE;
    if (ctx->info.max_block_size < ts * ts)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "matmul: the shared variant needs blocks of %ux%u threads; %s allows %u", ts, ts,
                            ctx->info.name, ctx->info.max_block_size);
    uint64_t gy = ((uint64_t)m + ts - 1) / ts;
    if (gy > ctx->info.max_grid_dims[1]) gy = ctx->info.max_grid_dims[1]; /* the kernel loops over the rest */
    gpuws_launch_config cfg = { { (uint32_t)(((uint64_t)n + ts - 1) / ts), (uint32_t)gy, 1 }, { ts, ts, 1 } };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "matmul_shared_f32" : "matmul_shared_f64", program_options(ctx, dt),
                               &cfg, args, nargs);
}

static gpuws_status launch_tiled(gpuws_stream *s, gpuws_dtype dt, uint32_t m, uint32_t n, gpuws_arg *args, size_t nargs)
{
    const gpuws_context *ctx = s->ctx;
    const bool cpu = small_groups(ctx);
    const uint64_t tile = cpu ? CPU_TILE : dt == GPUWS_F32 ? TILE_F32 : TILE_F64;
    const uint64_t tiles = (((uint64_t)m + tile - 1) / tile) * (((uint64_t)n + tile - 1) / tile);
    if (tiles > ctx->info.max_grid_dims[0]) /* only for a C far larger than any device memory */
        return gpuws__error(GPUWS_ERR_OUT_OF_RANGE, "matmul: %llu tiles of %llux%llu exceed the grid limit of %s",
                            (unsigned long long)tiles, (unsigned long long)tile, (unsigned long long)tile,
                            ctx->info.name);
    gpuws_launch_config cfg = { { (uint32_t)tiles, 1, 1 }, { cpu ? CPU_TILED_THREADS : TILED_THREADS, 1, 1 } };
    return gpuws__launch_named(s, dt == GPUWS_F32 ? "matmul_tiled_f32" : "matmul_tiled_f64", program_options(ctx, dt),
                               &cfg, args, nargs);
}

gpuws_status gpuws_matmul_ex(gpuws_stream *s, gpuws_matmul_variant variant, gpuws_dtype dt, size_t m, size_t n,
                             size_t k, const gpuws_buffer *a, const gpuws_buffer *b, gpuws_buffer *c)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = check(&s, &claim, variant, dt, m, n, k, a, b, c, &ctx);
    if (st) return st;
    if (m == 0 || n == 0) return GPUWS_OK;
    const size_t es = gpuws_dtype_size(dt);
    if (k == 0) { /* the empty sum: zeros, as NumPy */
        const double zero = 0.0;
        return gpuws_buffer_fill_async(s, c, 0, &zero, es, m * n * es);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        if (dt == GPUWS_F32) gpuws_matmul_ref_f32(gpuws__cpu_ptr(a), gpuws__cpu_ptr(b), gpuws__cpu_ptr(c), m, n, k);
        else gpuws_matmul_ref_f64(gpuws__cpu_ptr(a), gpuws__cpu_ptr(b), gpuws__cpu_ptr(c), m, n, k);
        return GPUWS_OK;
    }
    gpuws_arg args[] = {
        gpuws_arg_buffer((gpuws_buffer *)a), gpuws_arg_buffer((gpuws_buffer *)b), gpuws_arg_buffer(c),
        gpuws_arg_u32((uint32_t)m),          gpuws_arg_u32((uint32_t)n),          gpuws_arg_u32((uint32_t)k)
    };
    if (variant == GPUWS_MATMUL_NAIVE) return launch_naive(s, dt, (uint32_t)m, (uint32_t)n, args, GPUWS__NARGS(args));
    if (variant == GPUWS_MATMUL_SHARED) return launch_shared(s, dt, (uint32_t)m, (uint32_t)n, args, GPUWS__NARGS(args));
    return launch_tiled(s, dt, (uint32_t)m, (uint32_t)n, args, GPUWS__NARGS(args));
}

gpuws_status gpuws_matmul(gpuws_stream *s, gpuws_dtype dt, size_t m, size_t n, size_t k, const gpuws_buffer *a,
                          const gpuws_buffer *b, gpuws_buffer *c)
{
    return gpuws_matmul_ex(s, GPUWS_MATMUL_TILED, dt, m, n, k, a, b, c);
}
