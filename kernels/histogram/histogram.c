/* Host driver for histogram: edge table, privatised (or global-atomic) counting per chunk, merge into uint64. */
#include "../common/driver.h"
#include "histogram_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values per counting launch: a work-group never counts 2^32 values, so its 32-bit bins cannot overflow. A
 * multiple of 4, so the 16-byte loads of every chunk stay aligned. The knob histogram_chunk (a smaller multiple of
 * 4) is a testing knob that exercises the multi-chunk path on small inputs. */
static uint64_t chunk_size(const gpuws_context *ctx)
{
    const int64_t c = ctx->tuning.histogram_chunk;
    return c >= 4 && c % 4 == 0 && c < ((int64_t)1 << 31) ? (uint64_t)c : (uint64_t)1 << 31;
}
/* Local memory the privatised variant may use per work-group (bins + edges); above it, global atomics. */
#define LOCAL_LIMIT (32u * 1024u)

/* A power-of-two work-group for the named kernel, within its limit and the device's. */
static gpuws_status pow2_block(gpuws_context *ctx, const char *kernel, uint32_t want, uint32_t *block)
{
    gpuws_kernel *k;
    return gpuws__kernel_block(ctx, kernel, NULL, want, &k, block);
}

static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

static gpuws_status validate(gpuws_dtype dt, double lo, double hi, uint32_t bins)
{
    if (dt != GPUWS_F32 && dt != GPUWS_I32)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: dtype %s is not f32 or i32", gpuws_dtype_name(dt));
    if (bins == 0) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: bins = 0 (need at least one bin)");
    if (!isfinite(lo) || !isfinite(hi))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: range [%g, %g) is not finite", lo, hi);
    if (!(lo < hi))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: lo = %.17g is not below hi = %.17g", lo, hi);
    if (!isfinite(hi - lo))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: hi - lo = %g - %g overflows double", hi, lo);
    if ((hi - lo) / (double)bins == 0.0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "histogram: range [%g, %g) is too narrow for %u bins (step 0)",
                            lo, hi, bins);
    return GPUWS_OK;
}

static gpuws_status histogram_cpu(gpuws_dtype dt, size_t n, const void *x, double lo, double hi, uint32_t bins,
                                  uint64_t *counts)
{
    const size_t es = dt == GPUWS_F32 ? sizeof(float) : sizeof(int64_t);
    const size_t bytes = ((size_t)bins + 1) * es;
    void *edges = gpuws__malloc(bytes);
    if (!edges)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "histogram: edge table of %u bins (%zu bytes)", bins, bytes);
    if (dt == GPUWS_F32) {
        gpuws_histogram_edges_f32(lo, hi, bins, edges);
        gpuws_histogram_ref_f32(x, n, edges, bins, counts);
    } else {
        gpuws_histogram_edges_i32(lo, hi, bins, edges);
        gpuws_histogram_ref_i32(x, n, edges, bins, counts);
    }
    gpuws__free(edges);
    return GPUWS_OK;
}

/* The edge table on the device: computed there in double where the device has fp64; otherwise uploaded from the
 * host, which then has to wait for the upload before its table may be freed (the knob histogram_host_edges=1
 * forces this path for testing). */
static gpuws_status make_edges(gpuws_stream *s, gpuws_dtype dt, double lo, double hi, uint32_t bins,
                               gpuws_buffer *edges)
{
    gpuws_context *ctx = s->ctx;
    const size_t es = dt == GPUWS_F32 ? sizeof(float) : sizeof(int64_t), bytes = ((size_t)bins + 1) * es;
    if (ctx->info.fp64 && !ctx->tuning.histogram_host_edges) {
        const char *ename = dt == GPUWS_F32 ? "histogram_edges_f32" : "histogram_edges_i32";
        uint32_t block;
        gpuws_status st = pow2_block(ctx, ename, 256, &block);
        if (st) return st;
        gpuws_launch_config cfg = gpuws__config_1d((size_t)bins + 1, block, UINT32_MAX);
        gpuws_arg a[] = { gpuws_arg_buffer(edges), gpuws_arg_f64(lo), gpuws_arg_f64((hi - lo) / (double)bins),
                          gpuws_arg_f64(hi), gpuws_arg_u32(bins) };
        return gpuws__launch_named(s, ename, NULL, &cfg, a, GPUWS__NARGS(a));
    }
    void *host = gpuws__malloc(bytes);
    if (!host)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "histogram: edge table of %u bins (%zu bytes)", bins, bytes);
    if (dt == GPUWS_F32) gpuws_histogram_edges_f32(lo, hi, bins, host);
    else gpuws_histogram_edges_i32(lo, hi, bins, host);
    gpuws_status st = gpuws_buffer_write_async(s, edges, 0, host, bytes);
    if (!st) st = gpuws_stream_synchronize(s);
    gpuws__free(host);
    return st;
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_partials = { "histogram.partials" };
static const gpuws__stream_key key_edges = { "histogram.edges" };

static gpuws_status histogram_gpu(gpuws_stream *s, gpuws_dtype dt, size_t n, const gpuws_buffer *x, double lo,
                                  double hi, uint32_t bins, gpuws_buffer *counts)
{
    gpuws_context *ctx = s->ctx;
    const bool cpu = gpuws__is_cpu_device(ctx);
    const size_t es = dt == GPUWS_F32 ? sizeof(float) : sizeof(int64_t);
    const size_t lbins = (size_t)bins * 4, ledges = ((size_t)bins + 1) * es;
    const size_t lbytes = align16(lbins) + align16(ledges);
    const bool local = lbytes <= LOCAL_LIMIT && lbytes <= ctx->info.shared_mem_bytes;
    const char *kname = dt == GPUWS_F32 ? (local ? "histogram_f32_local" : "histogram_f32_global")
                                        : (local ? "histogram_i32_local" : "histogram_i32_global");
    uint32_t block, mblock;
    gpuws_status st;
    if ((st = pow2_block(ctx, kname, cpu ? 64 : 256, &block)) ||
        (st = pow2_block(ctx, "histogram_merge", cpu ? 64 : 256, &mblock)))
        return st;
    /* A few work-groups per compute unit; each local row costs a merge read, so rows * bins stays under 2^24. */
    const uint64_t chunk = chunk_size(ctx);
    uint32_t groups = gpuws__saturating_blocks(ctx, cpu ? 2 : 4);
    const uint64_t need = ((uint64_t)(n < chunk ? n : chunk) + (uint64_t)block * 8 - 1) / ((uint64_t)block * 8);
    if (need < groups) groups = (uint32_t)(need ? need : 1);
    if (local && (uint64_t)groups * bins > ((uint64_t)1 << 24)) groups = (uint32_t)(((uint64_t)1 << 24) / bins);
    if (groups == 0) groups = 1;
    const uint32_t rows = local ? groups : 1;

    gpuws_buffer *partials, *edges;
    size_t pbytes;
    if (gpuws__mul_overflows((size_t)rows, lbins, &pbytes))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "histogram: %u rows of %u bins", rows, bins);
    if ((st = gpuws__stream_scratch(s, &key_partials, pbytes, &partials)) ||
        (st = gpuws__stream_scratch(s, &key_edges, ledges, &edges)) || (st = make_edges(s, dt, lo, hi, bins, edges)))
        return st;

    /* starting guess only (the edge comparisons decide): glo <= edge[0] <= every counted value, so t >= 0 */
    const float glo = (float)lo;
    const double scale = (double)bins / (hi - lo);
    const float gscale = scale > FLT_MAX ? FLT_MAX : (float)scale;
    const uint32_t zero = 0;
    for (uint64_t off = 0; off < n; off += chunk) {
        const uint64_t len = n - off < chunk ? n - off : chunk;
        if (!local && (st = gpuws_buffer_fill_async(s, partials, 0, &zero, sizeof zero, lbins))) return st;
        gpuws_launch_config cfg = { { groups, 1, 1 }, { block, 1, 1 } };
        gpuws_arg a[] = { gpuws_arg_buffer((gpuws_buffer *)x),
                          gpuws_arg_buffer(partials),
                          gpuws_arg_buffer(edges),
                          gpuws_arg_u64(off),
                          gpuws_arg_u64(len),
                          gpuws_arg_u32(bins),
                          gpuws_arg_f32(glo),
                          gpuws_arg_f32(gscale),
                          gpuws_arg_local(lbins),
                          gpuws_arg_local(ledges) };
        if ((st = gpuws__launch_named(s, kname, NULL, &cfg, a, local ? GPUWS__NARGS(a) : GPUWS__NARGS(a) - 2)))
            return st;
        gpuws_launch_config mcfg = gpuws__config_1d(bins, mblock, UINT32_MAX);
        gpuws_arg m[] = { gpuws_arg_buffer(partials), gpuws_arg_buffer(counts), gpuws_arg_u32(bins),
                          gpuws_arg_u32(rows), gpuws_arg_u32(off > 0) };
        if ((st = gpuws__launch_named(s, "histogram_merge", NULL, &mcfg, m, GPUWS__NARGS(m)))) return st;
    }
    return GPUWS_OK;
}

gpuws_status gpuws_histogram(gpuws_stream *s, gpuws_dtype dt, size_t n, const gpuws_buffer *x, double lo, double hi,
                             uint32_t bins, gpuws_buffer *counts)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(x, "x", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "histogram")) || (st = validate(dt, lo, hi, bins)) ||
        (st = gpuws__check_array(ctx, x, "x", n, gpuws_dtype_size(dt))) ||
        (st = gpuws__check_array(ctx, counts, "counts", bins, sizeof(uint64_t))))
        return st;
    if (n == 0) {
        const uint64_t zero = 0;
        return gpuws_buffer_fill_async(s, counts, 0, &zero, sizeof zero, (size_t)bins * sizeof zero);
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU)
        return histogram_cpu(dt, n, gpuws__cpu_ptr(x), lo, hi, bins, gpuws__cpu_ptr(counts));
    return histogram_gpu(s, dt, n, x, lo, hi, bins, counts);
}
