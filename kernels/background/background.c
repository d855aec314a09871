/* Host driver for the mesh background: the reference on the CPU backend; on GPUs the per-mesh statistics on the
 * device (background_mesh), the grid steps on the host from the 8 bytes per mesh read back (background_ref.c:
 * nearest-good fill, median filter, globals, spline coefficients), then the full-resolution maps on the device
 * (background_interp) from the plan uploaded. Blocking: the globals are returned on the host, and the plan's host
 * copy must outlive its upload. */
#include "../common/band_stream.h"
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

/* Step 1 on the device: the statistics of the nmesh meshes of an image (or a band of whole mesh rows) of width x
 * height pixels into dmesh (2 floats a mesh); mask NULL = none. */
static gpuws_status bg_mesh_launch(gpuws_stream *s, gpuws_kernel *km, uint32_t block, const gpuws_buffer *image,
                                   const gpuws_buffer *mask, size_t width, size_t height, int bw, int bh, size_t nx,
                                   size_t nmesh, gpuws_buffer *dmesh)
{
    const gpuws_launch_config cm = { { (uint32_t)nmesh, 1, 1 }, { block, 1, 1 } };
    const gpuws_arg am[] = { gpuws_arg_buffer((gpuws_buffer *)image),
                             gpuws_arg_buffer((gpuws_buffer *)(mask ? mask : image)), /* unread without a mask */
                             gpuws_arg_u32(mask != NULL),
                             gpuws_arg_u32((uint32_t)width),
                             gpuws_arg_u32((uint32_t)height),
                             gpuws_arg_u32((uint32_t)bw),
                             gpuws_arg_u32((uint32_t)bh),
                             gpuws_arg_u32((uint32_t)nx),
                             gpuws_arg_buffer(dmesh),
                             gpuws_arg_local(BG_MAXLEVELS * sizeof(uint32_t)),
                             gpuws_arg_local((3 * BG_LANES + 1) * sizeof(double)) };
    return gpuws_launch(s, km, &cm, am, GPUWS__NARGS(am));
}

/* Steps 2 to 4 and the spline's coefficients on the host, from every mesh's statistics, with the messages. */
static gpuws_status bg_grid(const gpuws__background_plan *p, size_t width, size_t height,
                            const gpuws_background_options *o, float *mesh, void *plan, gpuws_background_result *r)
{
    gpuws_status st = gpuws__background_grid(p, width, height, o->bw, o->bh, o->fw, o->fh, o->fthresh, mesh, plan, r);
    if (st == GPUWS_ERR_INVALID_ARGUMENT)
        return gpuws__error(st, "background: no mesh of %d x %d pixels has half of them usable (not NaN, not masked)",
                            o->bw, o->bh);
    if (st)
        return gpuws__error(st, "background: no host memory for the median filter of %zu meshes (%zu bytes)", p->n,
                            gpuws__background_grid_bytes(p, o->fw, o->fh));
    return GPUWS_OK;
}

/* Step 5 on the device: back and rms of the image rows first .. end - 1 from the plan (dplan), into row 0 on of
 * back and rms. */
static gpuws_status bg_interp_launch(gpuws_stream *s, gpuws_kernel *ki, gpuws_buffer *dplan,
                                     const gpuws__background_plan *p, size_t width, size_t first, size_t end,
                                     gpuws_buffer *back, gpuws_buffer *rms)
{
    const uint32_t tx = gpuws__is_cpu_device(s->ctx) ? 32 : 128; /* a work-item per column and BG_INTERP_ROWS rows */
    /* the groups' rows stride by the grid's height where the device caps it (or the knob, for the tests) */
    const int64_t knob = s->ctx->tuning.background_interp_groups;
    uint64_t gy = (end - first + BG_INTERP_ROWS - 1) / BG_INTERP_ROWS, most = s->ctx->info.max_grid_dims[1];
    if (knob > 0 && (uint64_t)knob < most) most = (uint64_t)knob;
    gy = gy < most ? gy : most;
    const gpuws_launch_config ci = { { (uint32_t)((width + tx - 1) / tx), (uint32_t)gy, 1 }, { tx, 1, 1 } };
    const gpuws_arg ai[] = { gpuws_arg_buffer(dplan),        gpuws_arg_buffer(dplan),
                             gpuws_arg_u32((uint32_t)width), gpuws_arg_u32((uint32_t)first),
                             gpuws_arg_u32((uint32_t)end),   gpuws_arg_u32((uint32_t)p->nx),
                             gpuws_arg_u32((uint32_t)p->ny), gpuws_arg_u64(p->rows),
                             gpuws_arg_u64(p->cols),         gpuws_arg_u64(p->row_k),
                             gpuws_arg_u64(p->col_k),        gpuws_arg_buffer(back),
                             gpuws_arg_buffer(rms) };
    return gpuws_launch(s, ki, &ci, ai, GPUWS__NARGS(ai));
}

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
    gpuws_background_result r;
    if (!(st = bg_mesh_launch(s, km, block, image, o->mask, width, height, o->bw, o->bh, p->nx, p->n, dmesh)) &&
        !(st = gpuws__buffer_read_sync(s, dmesh, 0, mesh, 2 * p->n * sizeof *mesh)))
        st = bg_grid(p, width, height, o, mesh, plan, &r);
    if (!st) {
        if (!(st = gpuws_buffer_write_async(s, dplan, 0, plan, p->words * 4)))
            st = bg_interp_launch(s, ki, dplan, p, width, 0, height, back, rms);
        gpuws_status st2 = gpuws_stream_synchronize(s); /* the plan's host copy is freed below */
        if (!st) st = st2;
    }
    gpuws__free(mesh);
    gpuws__free(plan);
    if (!st) *result = r;
    return st;
}

/* The sizes and options that gpuws_background and gpuws_background_host check alike; *npix the pixels. */
static gpuws_status bg_check(size_t width, size_t height, const gpuws_background_options *o, const char *fn,
                             size_t *npix)
{
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x %zu: no pixels", fn, width, height);
    if (gpuws__mul_overflows(width, height, npix))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", fn, width, height);
    if (o->bw < 1 || o->bh < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: mesh size %d x %d is not at least 1 x 1", fn, o->bw,
                            o->bh);
    if ((size_t)o->bw > width || (size_t)o->bh > height)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: mesh %d x %d is larger than the %zu x %zu image", fn,
                            o->bw, o->bh, width, height);
    if ((uint64_t)o->bw * (uint64_t)o->bh > UINT32_MAX) /* the kernels count a mesh's pixels in 32 bits */
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: meshes of %d x %d pixels; at most 2^32 - 1 pixels a mesh", fn,
                            o->bw, o->bh);
    if (o->fw < 1 || o->fh < 1)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: filter size %d x %d is not at least 1 x 1", fn, o->fw,
                            o->fh);
    if (!(o->fthresh >= 0) || !isfinite(o->fthresh))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: fthresh %g is not a finite number >= 0", fn, o->fthresh);
    return GPUWS_OK;
}

/* The plan's layout, within the kernels' 32-bit sides (their pixel indices are 64-bit: any number of pixels). */
static gpuws_status bg_layout(size_t width, size_t height, const gpuws_background_options *o, const char *fn,
                              gpuws__background_plan *p)
{
    if (width > UINT32_MAX / 2 || height > UINT32_MAX / 2)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: %zu x %zu pixels; each side at most 2^31 - 1", fn, width,
                            height);
    if (!gpuws__background_layout(width, height, o->bw, o->bh, p))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: the plan for %zu x %zu pixels overflows size_t", fn, width,
                            height);
    return GPUWS_OK;
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
    if ((st = bg_check(width, height, &o, "background", &npix))) return st;
    if ((st = gpuws__check_array(ctx, image, "image", npix, es)) ||
        (st = gpuws__check_array(ctx, back, "back", npix, sizeof(float))) ||
        (st = gpuws__check_array(ctx, rms, "rms", npix, sizeof(float))) ||
        (o.mask && (st = gpuws__check_array(ctx, o.mask, "mask", npix, 1))))
        return st;
    if (back == rms || back == image || rms == image || (o.mask && (o.mask == back || o.mask == rms)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "background: 'back' and 'rms' must be two buffers, neither the image nor the mask");
    gpuws__background_plan p;
    if ((st = bg_layout(width, height, &o, "background", &p))) return st;

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

/* ---- gpuws_background_host: bands of whole mesh rows (pass 1), then bands of rows of the maps (pass 2) ---- */

typedef struct {
    gpuws_stream *s;
    size_t width, height;
    const gpuws_background_options *o;
    const gpuws__background_plan *p;
    const gpuws_background_host_options *ho;
    size_t rows1, bands1, mesh_rows1; /* pass 1: rows a band (whole mesh rows), bands, mesh rows a band */
    size_t rows2, bands2;             /* pass 2 (gpuws_extract_host's bands where it makes the background) */
} bg_host;

/* Pass 1: each band's meshes' statistics into mesh (2 floats a mesh, the grid's row-major order). */
static gpuws_status bg_host_meshes(const bg_host *b, const float *image, float *mesh)
{
    gpuws_context *ctx = b->s->ctx;
    const size_t w = b->width, h = b->height;
    gpuws_kernel *km;
    uint32_t block;
    gpuws_status st =
        gpuws__kernel_block(ctx, "background_mesh", NULL, gpuws__is_cpu_device(ctx) ? 64 : BG_BLOCK, &km, &block);
    const size_t mesh_rows = b->mesh_rows1;
    gpuws_buffer *dimg = NULL, *dmask = NULL, *dmesh = NULL;
    if (!st) st = gpuws_buffer_create(ctx, b->rows1 * w * sizeof(float), &dimg);
    if (!st && b->ho->mask) st = gpuws_buffer_create(ctx, b->rows1 * w, &dmask);
    if (!st) st = gpuws_buffer_create(ctx, 2 * mesh_rows * b->p->nx * sizeof(float), &dmesh);
    for (size_t k = 0; k < b->bands1 && !st; k++) {
        const size_t y0 = k * b->rows1, rows = k + 1 < b->bands1 ? b->rows1 : h - y0;
        const size_t my0 = y0 / (size_t)b->o->bh, nmesh = b->p->nx * (k + 1 < b->bands1 ? mesh_rows : b->p->ny - my0);
        if (!(st = gpuws_buffer_write_async(b->s, dimg, 0, image + y0 * w, rows * w * sizeof(float))) &&
            !(b->ho->mask && (st = gpuws_buffer_write_async(b->s, dmask, 0, b->ho->mask + y0 * w, rows * w))) &&
            !(st = bg_mesh_launch(b->s, km, block, dimg, dmask, w, rows, b->o->bw, b->o->bh, b->p->nx, nmesh, dmesh)))
            st = gpuws__buffer_read_sync(b->s, dmesh, 0, mesh + 2 * my0 * b->p->nx, 2 * nmesh * sizeof(float));
        if (!st && b->ho->progress) b->ho->progress(b->ho->progress_user, 1, 2, k, b->bands1, y0 + rows, h);
    }
    gpuws_stream_synchronize(b->s); /* nothing reads the caller's memory after an error either */
    gpuws_buffer_destroy(dimg);
    gpuws_buffer_destroy(dmask);
    gpuws_buffer_destroy(dmesh);
    return st;
}

/* Pass 2: back and rms band by band from the plan. */
static gpuws_status bg_host_maps(const bg_host *b, const void *plan, float *back, float *rms)
{
    gpuws_context *ctx = b->s->ctx;
    const size_t w = b->width, h = b->height;
    gpuws_kernel *ki;
    gpuws_buffer *dplan = NULL, *dback = NULL, *drms = NULL;
    gpuws_status st = gpuws__kernel_get_ex(ctx, "background_interp", NULL, &ki);
    if (!st) st = gpuws_buffer_create(ctx, b->p->words * 4, &dplan);
    if (!st) st = gpuws_buffer_create(ctx, b->rows2 * w * sizeof(float), &dback);
    if (!st) st = gpuws_buffer_create(ctx, b->rows2 * w * sizeof(float), &drms);
    if (!st) st = gpuws_buffer_write_async(b->s, dplan, 0, plan, b->p->words * 4);
    for (size_t k = 0; k < b->bands2 && !st; k++) {
        const size_t y0 = k * b->rows2, rows = k + 1 < b->bands2 ? b->rows2 : h - y0;
        if (!(st = bg_interp_launch(b->s, ki, dplan, b->p, w, y0, y0 + rows, dback, drms)) &&
            !(st = gpuws_buffer_read_async(b->s, dback, 0, back + y0 * w, rows * w * sizeof(float))) &&
            !(st = gpuws_buffer_read_async(b->s, drms, 0, rms + y0 * w, rows * w * sizeof(float))))
            st = gpuws_stream_synchronize(b->s);
        if (!st && b->ho->progress) b->ho->progress(b->ho->progress_user, 2, 2, k, b->bands2, y0 + rows, h);
    }
    gpuws_stream_synchronize(b->s); /* the plan's upload reads host memory that the caller frees */
    gpuws_buffer_destroy(dplan);
    gpuws_buffer_destroy(dback);
    gpuws_buffer_destroy(drms);
    return st;
}

/* The bands that the budget gives each pass: pass 1 holds rows1 = whole mesh rows of image (and mask) and their
 * meshes' statistics, pass 2 rows2 rows of back and rms beside the plan. */
static gpuws_status bg_host_bands(gpuws_context *ctx, bg_host *b, const char *fn)
{
    const size_t w = b->width, h = b->height, bh = (size_t)b->o->bh, nx = b->p->nx;
    uint64_t budget, max_alloc;
    gpuws__band_budget(&ctx, 1, b->ho->max_device_bytes, &budget, &max_alloc);
    const uint64_t px1 = sizeof(float) + (b->ho->mask ? 1 : 0), plan = (uint64_t)b->p->words * 4;
    const uint64_t row1 = bh * w * px1 + 2 * nx * sizeof(float); /* one mesh row */
    const uint64_t need = row1 > 2 * w * sizeof(float) + plan ? row1 : 2 * w * sizeof(float) + plan;
    if (budget < need)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: max_device_bytes %llu is less than one band needs: %llu bytes (a mesh row of %zu x "
                            "%zu pixels, or a row of back and rms beside the %llu-byte plan)",
                            fn, (unsigned long long)budget, (unsigned long long)need, w, bh, (unsigned long long)plan);
    uint64_t mesh_rows = budget / row1, rows2 = (budget - plan) / (2 * w * sizeof(float));
    if (max_alloc) { /* no buffer larger than the device allows */
        const uint64_t most = max_alloc / (bh * w * sizeof(float));
        mesh_rows = mesh_rows < most ? mesh_rows : most ? most : 1;
        rows2 = rows2 < max_alloc / (w * sizeof(float)) ? rows2 : max_alloc / (w * sizeof(float));
    }
    const uint64_t grid = ctx->info.max_grid_dims[0] / nx; /* a work-group a mesh, in one row of them */
    if (mesh_rows > grid) mesh_rows = grid ? grid : 1;
    b->mesh_rows1 = mesh_rows >= b->p->ny ? b->p->ny : (size_t)mesh_rows;
    b->rows1 = b->mesh_rows1 * bh < h ? b->mesh_rows1 * bh : h;
    b->bands1 = (b->p->ny + b->mesh_rows1 - 1) / b->mesh_rows1;
    b->rows2 = rows2 >= h ? h : rows2 ? (size_t)rows2 : 1;
    b->bands2 = (h + b->rows2 - 1) / b->rows2;
    return GPUWS_OK;
}

gpuws_status gpuws_background_host(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                   const gpuws_background_host_options *options, float *back, float *rms,
                                   gpuws_background_result *result)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    gpuws_background_host_options ho = GPUWS_BACKGROUND_HOST_OPTIONS_INIT;
    gpuws_background_options o = GPUWS_BACKGROUND_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &ho, sizeof ho, GPUWS__BACKGROUND_HOST_OPTIONS_BASE,
                                  "background_host: options")) ||
        (ho.background && (st = gpuws__options_read(ho.background, &o, sizeof o, GPUWS__BACKGROUND_OPTIONS_BASE,
                                                    "background_host: options->background"))))
        return st;
    if (!image || !back || !rms || !result)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "background_host: argument '%s' is NULL",
                            !image  ? "image"
                            : !back ? "back"
                            : !rms  ? "rms"
                                    : "result");
    if (o.mask)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "background_host: options->background->mask is a device buffer; give the host mask as "
                            "options->mask");
    size_t npix;
    if ((st = bg_check(width, height, &o, "background_host", &npix))) return st;
    const size_t bytes = npix * sizeof(float);
    if (gpuws__overlaps(back, bytes, rms, bytes) || gpuws__overlaps(back, bytes, image, bytes) ||
        gpuws__overlaps(rms, bytes, image, bytes) ||
        (ho.mask && (gpuws__overlaps(back, bytes, ho.mask, npix) || gpuws__overlaps(rms, bytes, ho.mask, npix))))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "background_host: 'back' and 'rms' must not overlap each other, the image or the mask");
    gpuws__background_plan p;
    if ((st = bg_layout(width, height, &o, "background_host", &p))) return st;
    bg_host b = { NULL, width, height, &o, &p, &ho, 0, 0, 0, 0, 0 };
    if ((st = bg_host_bands(ctx, &b, "background_host"))) return st; /* on every backend: a budget fails alike */
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) {                   /* the device's memory is the host's: no bands */
        st = gpuws_background_ref(image, ho.mask, width, height, &o, back, rms, result);
        if (st == GPUWS_ERR_INVALID_ARGUMENT)
            return gpuws__error(
                st, "background_host: no mesh of %d x %d pixels has half of them usable (not NaN, not masked)", o.bw,
                o.bh);
        if (st)
            return gpuws__error(st, "background_host: no host memory for the plan of %zu meshes (%zu bytes)", p.n,
                                p.words * 4 + 2 * p.n * sizeof(float) + gpuws__background_grid_bytes(&p, o.fw, o.fh));
        if (ho.progress) ho.progress(ho.progress_user, 1, 1, 0, 1, height, height);
        return GPUWS_OK;
    }
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "background accumulates in double precision, which %s lacks",
                            ctx->info.name);
    void *plan;
    gpuws_background_result r;
    if ((st = gpuws__background_host_plan(ctx, width, height, image, ho.mask, &o, ho.max_device_bytes, ho.progress,
                                          ho.progress_user, "background_host", &plan, &p, &r)))
        return st;
    if (!(st = gpuws_stream_create(ctx, &b.s))) {
        if (!(st = bg_host_maps(&b, plan, back, rms))) *result = r;
        gpuws_stream_destroy(b.s);
    }
    gpuws__free(plan);
    return st;
}

gpuws_status gpuws__background_host_plan(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                         const unsigned char *mask, const gpuws_background_options *o,
                                         uint64_t max_device_bytes, gpuws_extract_host_progress progress,
                                         void *progress_user, const char *fn, void **plan, gpuws__background_plan *p,
                                         gpuws_background_result *result)
{
    size_t npix;
    gpuws_status st;
    *plan = NULL;
    if ((st = bg_check(width, height, o, fn, &npix)) || (st = bg_layout(width, height, o, fn, p))) return st;
    float *mesh = gpuws__malloc(2 * p->n * sizeof *mesh);
    void *words = gpuws__malloc(p->words * 4);
    if (!mesh || !words)
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for the %zu meshes' plan (%zu bytes)", fn, p->n,
                          p->words * 4 + 2 * p->n * sizeof *mesh);
    else if (!(st = gpuws__background_host_meshes(ctx, width, height, image, mask, o, max_device_bytes, progress,
                                                  progress_user, fn, mesh)))
        st = bg_grid(p, width, height, o, mesh, words, result);
    gpuws__free(mesh);
    if (st) gpuws__free(words);
    else *plan = words;
    return st;
}

gpuws_status gpuws__background_host_meshes(gpuws_context *ctx, size_t width, size_t rows, const float *image,
                                           const unsigned char *mask, const gpuws_background_options *o,
                                           uint64_t max_device_bytes, gpuws_extract_host_progress progress,
                                           void *progress_user, const char *fn, float *mesh)
{
    gpuws__background_plan p;
    if (!rows) return GPUWS_OK;
    if (!gpuws__background_layout(width, rows, o->bw, o->bh, &p))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: the plan for %zu x %zu pixels overflows size_t", fn, width, rows);
    if (ctx->backend->kind == GPUWS_BACKEND_CPU) { /* the device's sums, on the host's cores */
        gpuws_background_mesh_ref(image, mask, width, rows, o->bw, o->bh, mesh);
        if (progress) progress(progress_user, 1, 2, 0, 1, rows, rows);
        return GPUWS_OK;
    }
    const gpuws_background_host_options ho = { sizeof ho, o, mask, max_device_bytes, progress, progress_user };
    bg_host b = { NULL, width, rows, o, &p, &ho, 0, 0, 0, 0, 0 };
    gpuws_status st = bg_host_bands(ctx, &b, fn);
    if (!st && !(st = gpuws_stream_create(ctx, &b.s))) {
        st = bg_host_meshes(&b, image, mesh);
        gpuws_stream_destroy(b.s);
    }
    return st;
}

gpuws_status gpuws__background_rows(gpuws_stream *s, gpuws_buffer *dplan, const gpuws__background_plan *p, size_t width,
                                    size_t first, size_t end, gpuws_buffer *back, gpuws_buffer *rms)
{
    gpuws_kernel *ki;
    const gpuws_status st = gpuws__kernel_get_ex(s->ctx, "background_interp", NULL, &ki);
    return st ? st : bg_interp_launch(s, ki, dplan, p, width, first, end, back, rms);
}
