/* Host driver for the mesh background: the reference on the CPU backend; on GPUs the per-mesh statistics on the
 * device (background_mesh), the grid steps on the host from the 8 bytes per mesh read back (background_ref.c:
 * nearest-good fill, median filter, globals, spline coefficients), then the full-resolution maps on the device
 * (background_interp) from the plan uploaded. Blocking: the globals are returned on the host, and the plan's host
 * copy must outlive its upload. */
#include "../common/driver.h"
#include "../../core/options.h"
#include "background_ref.h"

#include <math.h>
#include <stdlib.h>

#include "background_mesh.h" /* after <math.h>: it includes nothing */

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_mesh = { "background.mesh" };
static const gpuws__stream_key key_plan = { "background.plan" };
static const gpuws__stream_key key_image = { "background.image" };

static gpuws_status background_gpu(gpuws_stream *s, gpuws_dtype dtype, size_t width, size_t height,
                                   const gpuws_buffer *image, const gpuws_background_options *o,
                                   const gpuws__background_plan *p, gpuws_buffer *back, gpuws_buffer *rms,
                                   gpuws_background_result *result)
{
    gpuws_context *ctx = s->ctx;
    gpuws_kernel *km, *ki;
    uint32_t block;
    gpuws_status st =
        gpuws__kernel_block(ctx, "background_mesh", NULL, gpuws__is_cpu_device(ctx) ? 64 : BG_BLOCK, &km, &block);
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "background accumulates in double precision, which %s lacks",
                            ctx->info.name);
    if (st || (st = gpuws__kernel_get_ex(ctx, "background_interp", NULL, &ki))) return st;
    if (dtype == GPUWS_F64) { /* SEP's float conversion, into the stream's memory */
        gpuws_buffer *f32;
        uint32_t cb;
        gpuws_kernel *kc;
        if ((st = gpuws__kernel_block(ctx, "background_to_f32", NULL, 256, &kc, &cb)) ||
            (st = gpuws__stream_scratch(s, &key_image, width * height * sizeof(float), &f32)))
            return st;
        const gpuws_launch_config cc = gpuws__config_1d(
            width * height, cb, gpuws__is_cpu_device(ctx) ? UINT32_MAX : gpuws__saturating_blocks(ctx, 8));
        const gpuws_arg ac[] = { gpuws_arg_buffer((gpuws_buffer *)image), gpuws_arg_u64(width * height),
                                 gpuws_arg_buffer(f32) };
        if ((st = gpuws_launch(s, kc, &cc, ac, GPUWS__NARGS(ac)))) return st;
        image = f32;
    }
    if (p->n > ctx->info.max_grid_dims[0])
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "background: %zu meshes; %s runs at most %llu work-groups in a row",
                            p->n, ctx->info.name, (unsigned long long)ctx->info.max_grid_dims[0]);

    gpuws_buffer *dmesh, *dplan;
    if ((st = gpuws__stream_scratch(s, &key_mesh, 2 * p->n * sizeof(float), &dmesh)) ||
        (st = gpuws__stream_scratch(s, &key_plan, p->words * 4, &dplan)))
        return st;
    float *mesh = gpuws__malloc(2 * p->n * sizeof *mesh);
    void *plan = gpuws__malloc(p->words * 4);
    if (!mesh || !plan) {
        gpuws__free(mesh);
        gpuws__free(plan);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "background: no host memory for the %zu meshes' plan (%zu bytes)",
                            p->n, p->words * 4 + 2 * p->n * sizeof *mesh);
    }
    const gpuws_buffer *mask = o->mask ? o->mask : image; /* an unread stand-in when there is no mask */
    const gpuws_launch_config cm = { { (uint32_t)p->n, 1, 1 }, { block, 1, 1 } };
    const gpuws_arg am[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                             gpuws_arg_buffer((gpuws_buffer *)mask),
                             gpuws_arg_u32(o->mask != NULL),
                             gpuws_arg_u32((uint32_t)width),
                             gpuws_arg_u32((uint32_t)height),
                             gpuws_arg_u32((uint32_t)o->bw),
                             gpuws_arg_u32((uint32_t)o->bh),
                             gpuws_arg_u32((uint32_t)p->nx),
                             gpuws_arg_buffer(dmesh),
                             gpuws_arg_local(BG_MAXLEVELS * sizeof(uint32_t)),
                             gpuws_arg_local((3 * BG_LANES + 1) * sizeof(double)) };
    gpuws_background_result r;
    if (!(st = gpuws_launch(s, km, &cm, am, GPUWS__NARGS(am))) &&
        !(st = gpuws__buffer_read_sync(s, dmesh, 0, mesh, 2 * p->n * sizeof *mesh))) {
        st = gpuws__background_grid(p, width, height, o->bw, o->bh, o->fw, o->fh, o->fthresh, mesh, plan, &r);
        if (st == GPUWS_ERR_INVALID_ARGUMENT)
            st = gpuws__error(st, "background: no mesh of %d x %d pixels has half of them usable (not NaN, not masked)",
                              o->bw, o->bh);
        else if (st)
            st = gpuws__error(st, "background: no host memory for the median filter of %zu meshes (%zu bytes)", p->n,
                              gpuws__background_grid_bytes(p, o->fw, o->fh));
    }
    if (!st) {
        const uint32_t tx = gpuws__is_cpu_device(ctx) ? 32 : 128; /* a work-item per column and BG_INTERP_ROWS rows */
        const gpuws_launch_config ci = { { (uint32_t)((width + tx - 1) / tx),
                                           (uint32_t)((height + BG_INTERP_ROWS - 1) / BG_INTERP_ROWS), 1 },
                                         { tx, 1, 1 } };
        const gpuws_arg ai[] = { gpuws_arg_buffer(dplan),        gpuws_arg_buffer(dplan),
                                 gpuws_arg_u32((uint32_t)width), gpuws_arg_u32((uint32_t)height),
                                 gpuws_arg_u32((uint32_t)p->nx), gpuws_arg_u32((uint32_t)p->ny),
                                 gpuws_arg_u64(p->rows),         gpuws_arg_u64(p->cols),
                                 gpuws_arg_u64(p->row_k),        gpuws_arg_u64(p->col_k),
                                 gpuws_arg_buffer(back),         gpuws_arg_buffer(rms) };
        if (!(st = gpuws_buffer_write_async(s, dplan, 0, plan, p->words * 4)))
            st = gpuws_launch(s, ki, &ci, ai, GPUWS__NARGS(ai));
        gpuws_status st2 = gpuws_stream_synchronize(s); /* the plan's host copy is freed below */
        if (!st) st = st2;
    }
    gpuws__free(mesh);
    gpuws__free(plan);
    if (!st) *result = r;
    return st;
}

gpuws_status gpuws_background(gpuws_stream *s, gpuws_dtype dtype, size_t width, size_t height,
                              const gpuws_buffer *image, const gpuws_background_options *options, gpuws_buffer *back,
                              gpuws_buffer *rms, gpuws_background_result *result)
{
    GPUWS__CLAIM(claim);
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "background"))) return st;
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__BACKGROUND_OPTIONS_BASE, "background: options")))
        return st;
    if (!result) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: argument 'result' is NULL");
    if (dtype != GPUWS_F32 && dtype != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: dtype %s is not f32 or f64",
                            gpuws_dtype_name(dtype));
    const size_t es = dtype == GPUWS_F64 ? sizeof(double) : sizeof(float);
    size_t npix;
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: the image is %zu x %zu: no pixels", width, height);
    if (gpuws__mul_overflows(width, height, &npix))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "background: %zu x %zu pixels overflow size_t", width, height);
    if (o.bw < 1 || o.bh < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: mesh size %d x %d is not at least 1 x 1", o.bw,
                            o.bh);
    if ((size_t)o.bw > width || (size_t)o.bh > height)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: mesh %d x %d is larger than the %zu x %zu image",
                            o.bw, o.bh, width, height);
    if (o.fw < 1 || o.fh < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: filter size %d x %d is not at least 1 x 1", o.fw,
                            o.fh);
    if (!(o.fthresh >= 0) || !isfinite(o.fthresh))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background: fthresh %g is not a finite number >= 0",
                            o.fthresh);
    if ((st = gpuws__check_array(ctx, image, "image", npix, es)) ||
        (st = gpuws__check_array(ctx, back, "back", npix, sizeof(float))) ||
        (st = gpuws__check_array(ctx, rms, "rms", npix, sizeof(float))) ||
        (o.mask && (st = gpuws__check_array(ctx, o.mask, "mask", npix, 1))))
        return st;
    if (back == rms || back == image || rms == image || (o.mask && (o.mask == back || o.mask == rms)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "background: 'back' and 'rms' must be two buffers, neither the image nor the mask");
    if (width > UINT32_MAX / 2 || height > UINT32_MAX / 2 || npix > UINT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "background: %zu x %zu pixels; at most 2^32 - 1 are supported",
                            width, height);
    gpuws__background_plan p;
    if (!gpuws__background_layout(width, height, o.bw, o.bh, &p))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "background: the plan for %zu x %zu pixels overflows size_t", width,
                            height);

    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {
        const float *pixels = gpuws__cpu_ptr(image);
        float *converted = NULL;
        if (dtype == GPUWS_F64) { /* SEP's float conversion */
            if (!(converted = gpuws__malloc(npix * sizeof(float))))
                return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "background: no host memory for the f32 image (%zu bytes)",
                                    npix * sizeof(float));
            const double *x = gpuws__cpu_ptr(image);
            for (size_t i = 0; i < npix; i++) converted[i] = (float)x[i];
            pixels = converted;
        }
        st = gpuws_background_ref(pixels, o.mask ? gpuws__cpu_ptr(o.mask) : NULL, width, height, &o,
                                  gpuws__cpu_ptr(back), gpuws__cpu_ptr(rms), result);
        gpuws__free(converted);
        if (st == GPUWS_ERR_INVALID_ARGUMENT)
            return gpuws__error(
                st, "background: no mesh of %d x %d pixels has half of them usable (not NaN, not masked)", o.bw, o.bh);
        if (st)
            return gpuws__error(st, "background: no host memory for the plan of %zu meshes (%zu bytes)", p.n,
                                p.words * 4 + 2 * p.n * sizeof(float) + gpuws__background_grid_bytes(&p, o.fw, o.fh));
        return GPUWS_OK;
    }
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "background accumulates in double precision, which %s lacks",
                            ctx->info.name);
    return background_gpu(s, dtype, width, height, image, &o, &p, back, rms, result);
}
