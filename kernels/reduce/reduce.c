/* Host driver for reduce: partial pass + one-block final pass on GPU backends, the reference on the CPU. */
#include "../common/driver.h"
#include "reduce_ref.h"

#include <math.h>
#include <string.h>

static const char *const op_names[] = { "sum", "min", "max" };

static gpuws_status reduce_cpu(gpuws_reduce_op op, gpuws_dtype dt, size_t n, const void *in, void *out)
{
    if (dt == GPUWS_F32) {
        const float *x = in;
        float r = op == GPUWS_REDUCE_SUM   ? (float)gpuws_reduce_ref_sum_f32(x, n)
                  : op == GPUWS_REDUCE_MIN ? gpuws_reduce_ref_min_f32(x, n)
                                           : gpuws_reduce_ref_max_f32(x, n);
        memcpy(out, &r, sizeof r);
    } else {
        const double *x = in;
        double r = op == GPUWS_REDUCE_SUM   ? gpuws_reduce_ref_sum_f64(x, n)
                   : op == GPUWS_REDUCE_MIN ? gpuws_reduce_ref_min_f64(x, n)
                                            : gpuws_reduce_ref_max_f64(x, n);
        memcpy(out, &r, sizeof r);
    }
    return GPUWS_OK;
}

/* Partials per launch: enough blocks to fill the device, never more than the final block's 1024 threads can
 * combine in a few steps, and no more than there is data for. */
static uint32_t partial_blocks(const gpuws_context *ctx, size_t n, uint32_t block)
{
    uint32_t g = gpuws__saturating_blocks(ctx, gpuws__is_cpu_device(ctx) ? 4 : 8);
    size_t need = (n + (size_t)block * 4 - 1) / ((size_t)block * 4);
    if (need < g) g = (uint32_t)(need ? need : 1);
    return g > 1024 ? 1024 : g;
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_partials = { "reduce.partials" };
static const gpuws__stream_key key_result = { "reduce.result" };

static gpuws_status reduce_gpu(gpuws_stream *s, gpuws_reduce_op op, gpuws_dtype dt, size_t n, const gpuws_buffer *in,
                               gpuws_buffer *out)
{
    gpuws_context *ctx = s->ctx;
    const bool cuda = ctx->backend->kind == GPUWS_BACKEND_CUDA;
    /* the knob reduce_f32_acc=float (for tests) forces the no-fp64 path */
    const bool float_acc = !cuda && dt == GPUWS_F32 && op == GPUWS_REDUCE_SUM &&
                           (!ctx->info.fp64 || ctx->tuning.reduce_f32_acc == GPUWS__REDUCE_ACC_FLOAT);
    const char *options = float_acc && ctx->info.fp64 ? "-DGPUWS_REDUCE_FLOAT_ACC=1" : NULL;
    size_t acc = op == GPUWS_REDUCE_SUM && !float_acc ? 8 : gpuws_dtype_size(dt);

    char pname[48], fname[48];
    snprintf(pname, sizeof pname, "reduce_%s_%s_partial", op_names[op], gpuws_dtype_name(dt));
    snprintf(fname, sizeof fname, "reduce_%s_%s_final", op_names[op], gpuws_dtype_name(dt));
    /* the CUDA block reduction works in whole warps: at least 32 threads */
    gpuws_kernel *kp, *kf;
    uint32_t block, fblock;
    gpuws_status st;
    if ((st = gpuws__kernel_block(ctx, pname, options, gpuws__is_cpu_device(ctx) ? 64 : 256, &kp, &block)) ||
        (st = gpuws__kernel_block(ctx, fname, options, gpuws__is_cpu_device(ctx) ? 64 : 1024, &kf, &fblock)))
        return st;
    if (cuda && (block < 32 || fblock < 32))
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "reduce: kernel allows fewer than 32 threads per block");
    uint32_t g = partial_blocks(ctx, n, block);

    gpuws_buffer *partials;
    if ((st = gpuws__stream_scratch(s, &key_partials, (size_t)g * acc, &partials))) return st;
    gpuws_launch_config c1 = { { g, 1, 1 }, { block, 1, 1 } };
    gpuws_arg a1[] = { gpuws_arg_buffer((gpuws_buffer *)in), gpuws_arg_buffer(partials), gpuws_arg_u64(n),
                       gpuws_arg_local((size_t)block * acc) };
    if ((st = gpuws_launch(s, kp, &c1, a1, GPUWS__NARGS(a1)))) return st;
    gpuws_launch_config c2 = { { 1, 1, 1 }, { fblock, 1, 1 } };
    gpuws_arg a2[] = { gpuws_arg_buffer(partials), gpuws_arg_buffer(out), gpuws_arg_u32(g),
                       gpuws_arg_local((size_t)fblock * acc) };
    return gpuws_launch(s, kf, &c2, a2, GPUWS__NARGS(a2));
}

static gpuws_status check(gpuws_stream **s, gpuws__stream_claim *claim, gpuws_reduce_op op, gpuws_dtype dt, size_t n,
                          const gpuws_buffer *in, gpuws_context **ctx)
{
    gpuws_status st = gpuws__buffer_context(in, "in", ctx);
    if (st || (st = gpuws__driver_stream(*ctx, s, claim, "reduce"))) return st;
    if ((unsigned)op > GPUWS_REDUCE_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "reduce: op %d is not a gpuws_reduce_op", (int)op);
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "reduce: dtype %s is not f32 or f64", gpuws_dtype_name(dt));
    if ((st = gpuws__check_array(*ctx, in, "in", n, gpuws_dtype_size(dt))) ||
        (st = gpuws__check_dtype(*ctx, dt, "reduce")))
        return st;
    if (n == 0 && op != GPUWS_REDUCE_SUM)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "reduce: the %s of zero elements has no value", op_names[op]);
    return GPUWS_OK;
}

gpuws_status gpuws_reduce(gpuws_stream *s, gpuws_reduce_op op, gpuws_dtype dt, size_t n, const gpuws_buffer *in,
                          gpuws_buffer *out)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = check(&s, &claim, op, dt, n, in, &ctx);
    if (st || (st = gpuws__check_array(ctx, out, "out", 1, gpuws_dtype_size(dt)))) return st;
    if (n == 0) {
        const double zero = 0.0;
        const float zf = 0.0f;
        return gpuws_buffer_fill_async(s, out, 0, dt == GPUWS_F32 ? (const void *)&zf : (const void *)&zero,
                                       gpuws_dtype_size(dt), gpuws_dtype_size(dt));
    }
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) return reduce_cpu(op, dt, n, gpuws__cpu_ptr(in), gpuws__cpu_ptr(out));
    return reduce_gpu(s, op, dt, n, in, out);
}

gpuws_status gpuws_reduce_value(gpuws_stream *s, gpuws_reduce_op op, gpuws_dtype dt, size_t n, const gpuws_buffer *in,
                                double *result)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = check(&s, &claim, op, dt, n, in, &ctx);
    if (st) return st;
    if (!result) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'result' is NULL");
    if (n == 0) {
        *result = 0.0;
        return GPUWS_OK;
    }
    unsigned char v[8];
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        reduce_cpu(op, dt, n, gpuws__cpu_ptr(in), v);
    } else {
        gpuws_buffer *out;
        if ((st = gpuws__stream_scratch(s, &key_result, 8, &out)) || (st = reduce_gpu(s, op, dt, n, in, out)) ||
            (st = gpuws__buffer_read_sync(s, out, 0, v, gpuws_dtype_size(dt))))
            return st;
    }
    if (dt == GPUWS_F32) {
        float f;
        memcpy(&f, v, 4);
        *result = f;
    } else {
        memcpy(result, v, 8);
    }
    return GPUWS_OK;
}
