/* gpuws_convolve2d_host and gpuws_convolve2d_separable_host: the 2-D convolution, of a kernel or of its two factors,
 * from host memory to host memory, in row bands when the image does not fit the device budget (docs/scale.md).
 *
 * Band b holds output rows [m0, m1). Its outputs read the extended-image rows [m0 + om - (kh - 1), m1 + om). With
 * boundary FILL (VALID is FILL too) the band's input is the image rows of that range (clipped to the image) and the
 * band's own geometry puts the rows outside them where the whole image's rows outside the image are, so the kernels'
 * own fill rule supplies them, exactly as in-core. With WRAP and SYMM the wrapped or mirrored rows are copied into
 * the band (the host maps each row), so the band reads no row outside itself and only the columns follow the rule.
 * Each band is launched with the whole image's plan (gpuws__convolve2d_launch), so every output is the same sum of
 * the same products in the same order as in-core: bit-identical for any banding. The separable form's outputs do not
 * depend on the plan (gpuws__convolve2d_separable_launch): a band's own geometry gives the in-core values; its
 * budget holds the two factors instead of the kernel, and a band's row sums.
 *
 * The bands stream through the device (or round-robin through several) as kernels/common/band_stream.h describes:
 * three slots a device, uploads, convolutions and downloads on three streams. The host stages a band's rows into
 * pinned memory and copies a band's output out of it while the device works on the other two slots. Those copies
 * are skipped where the caller's memory is pinned for the device (gpuws_host_alloc on its context; with CUDA any
 * page-locked memory): a band whose input is the image's rows as they are (boundary FILL, VALID included, and a
 * packed image) uploads straight from the image, and a band whose output rows in `out` are pinned downloads straight
 * into them. Each device decides for itself, since memory pinned for one context need not be for another. */
#include "convolve2d_driver.h"

#include "../common/band_stream.h"

#include "../../core/options.h"
#include "../../core/threads.h"

#include <string.h>

#define SLOTS           GPUWS__BAND_SLOTS
#define MIN_SHARED_ROWS 64 /* output rows a band has at least when several devices split an image that fits one */

typedef struct {
    size_t es;                /* element size */
    size_t rows, bands;       /* output rows per band, bands */
    int slots;                /* slots used (1..SLOTS) */
    size_t in_rows;           /* input rows a slot holds at most */
    size_t src_stride;        /* the caller's row stride */
    gpuws__conv2d_geometry g; /* the whole convolution, rows packed (stride = w) as the bands are on the device */
    gpuws_convolve2d_host_options o;
    gpuws_context *ctxs[GPUWS__BAND_DEVICES]; /* ctx, then o.more_contexts */
    unsigned devices;
    bool sep;       /* the separable form: the kernel is its two factors, col (kh) and row (kw) */
    const char *fn; /* the call's name, for messages */
} band_plan;

/* Input rows of a band of r output rows, at most. */
static size_t band_in_rows(const gpuws__conv2d_geometry *g, size_t r)
{
    const size_t rows = r + g->kh - 1;
    return g->boundary == GPUWS_BOUNDARY_FILL && rows > g->h ? g->h : rows;
}

/* The most output rows whose input and output rows fit staging buffers of GPUWS__BAND_STAGING_BYTES (1 at least:
 * a band of one row may exceed them). */
static size_t staging_rows(const gpuws__conv2d_geometry *g, size_t es)
{
    const size_t in_rows = GPUWS__BAND_STAGING_BYTES / (g->w * es), out_rows = GPUWS__BAND_STAGING_BYTES / (g->ow * es);
    /* a band of r output rows reads r + kh - 1 input rows, never more than the image's with boundary FILL */
    size_t r = g->boundary == GPUWS_BOUNDARY_FILL && in_rows >= g->h ? g->oh
               : in_rows > g->kh - 1                                 ? in_rows - (g->kh - 1)
                                                                     : 1;
    if (out_rows < r) r = out_rows;
    return r ? r : 1;
}

/* Device bytes of `slots` slots of r output rows, plus the kernel (sep: its factors, and the row sums of a band of
 * r rows, which one stream a device keeps); false when they overflow. */
static bool slots_bytes(const gpuws__conv2d_geometry *g, size_t es, bool sep, int slots, size_t r, uint64_t *bytes)
{
    const double kernel = sep ? ((double)g->kh + (double)g->kw + ((double)r + (double)g->kh - 1) * (double)g->ow)
                              : (double)g->kh * (double)g->kw;
    const double b = ((double)band_in_rows(g, r) * (double)g->w + (double)r * (double)g->ow) * (double)es * slots +
                     kernel * (double)es;
    if (b >= 1.8e19) return false;
    *bytes = (uint64_t)b;
    return true;
}

/* The largest number of output rows per band whose slots fit the budget and the device's largest buffer, or 0. */
static size_t fit_rows(const gpuws__conv2d_geometry *g, size_t es, bool sep, int slots, uint64_t budget,
                       uint64_t max_alloc)
{
    size_t lo = 0, hi = g->oh;
    while (lo < hi) {
        const size_t mid = hi - (hi - lo) / 2;
        uint64_t b;
        const bool fits =
            slots_bytes(g, es, sep, slots, mid, &b) && b <= budget &&
            (!max_alloc || ((double)band_in_rows(g, mid) * (double)g->w * (double)es <= (double)max_alloc &&
                            (double)mid * (double)g->ow * (double)es <= (double)max_alloc));
        if (fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* bp->sep and bp->fn set: the plan of the call's bands. */
static gpuws_status plan_bands(gpuws_context *ctx, gpuws_dtype dt, size_t height, size_t width, size_t row_stride,
                               size_t kh, size_t kw, const gpuws_convolve2d_host_options *options, band_plan *bp)
{
    const char *fn = bp->fn;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (dt != GPUWS_F32 && dt != GPUWS_F64)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: dtype %s is not f32 or f64", fn, gpuws_dtype_name(dt));
    bp->o = (gpuws_convolve2d_host_options)GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    char what[64];
    snprintf(what, sizeof what, "%s: options", fn);
    if ((st = gpuws__options_read(options, &bp->o, sizeof bp->o, GPUWS__CONVOLVE2D_HOST_OPTIONS_BASE, what))) return st;
    const gpuws_convolve2d_host_options *o = &bp->o;
    if ((st = gpuws__band_contexts(ctx, o->more_contexts, o->num_more_contexts, fn, bp->ctxs, &bp->devices))) return st;
    gpuws_convolve2d_options co = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    co.mode = o->mode, co.boundary = o->boundary, co.fill_value = o->fill_value;
    gpuws__conv2d_geometry *g = &bp->g;
    if ((st = gpuws__conv2d_geometry_init(height, width, row_stride, kh, kw, &co, g))) return st;
    /* every byte count the call forms: the caller's image (strided), the packed image, the output, the kernel */
    const size_t es = gpuws_dtype_size(dt);
    size_t image, packed, out, kernel;
    if (gpuws__mul_overflows(g->h - 1, g->stride, &image) || gpuws__add_overflows(image, g->w, &image) ||
        gpuws__mul_overflows(image, es, &image) || gpuws__mul_overflows(g->h, g->w, &packed) ||
        gpuws__mul_overflows(packed, es, &packed) || gpuws__mul_overflows(g->oh, g->ow, &out) ||
        gpuws__mul_overflows(out, es, &out) ||
        (bp->sep ? gpuws__add_overflows(g->kh, g->kw, &kernel) : gpuws__mul_overflows(g->kh, g->kw, &kernel)) ||
        gpuws__mul_overflows(kernel, es, &kernel))
        return gpuws__error(GPUWS_ERR_OVERFLOW,
                            "%s: image %zu x %zu (row stride %zu), kernel %zu x %zu: element counts overflow size_t",
                            fn, g->h, g->w, g->stride, g->kh, g->kw);
    for (unsigned d = 0; d < bp->devices; d++)
        if ((st = gpuws__check_dtype(bp->ctxs[d], dt, fn))) return st;
    bp->src_stride = g->stride;
    g->stride = g->w;
    bp->es = es;
    uint64_t budget, max_alloc;
    gpuws__band_budget(bp->ctxs, bp->devices, o->max_device_bytes, &budget, &max_alloc);
    /* Several devices share the bands: three or more a device (each overlaps its copies), even when the whole image
     * would fit one, but no band under MIN_SHARED_ROWS rows for the sake of it. */
    size_t cap = g->oh;
    if (bp->devices > 1) {
        const size_t share = (g->oh + SLOTS * bp->devices - 1) / (SLOTS * bp->devices);
        cap = share > MIN_SHARED_ROWS ? share : MIN_SHARED_ROWS;
    }
    /* in-core: the whole image (packed), the output and the kernel (sep: the factors and the row sums) */
    const double kernel_elems = bp->sep ? (double)g->kh + (double)g->kw + ((double)g->oh + (double)g->kh - 1) * g->ow
                                        : (double)g->kh * (double)g->kw;
    const double whole = ((double)g->h * (double)g->w + (double)g->oh * (double)g->ow + kernel_elems) * (double)bp->es;
    if (cap >= g->oh && whole <= (double)budget &&
        (!max_alloc || ((double)g->h * (double)g->w * (double)bp->es <= (double)max_alloc &&
                        (double)g->oh * (double)g->ow * (double)bp->es <= (double)max_alloc))) {
        bp->rows = g->oh, bp->bands = 1, bp->slots = 1, bp->in_rows = g->h;
        return GPUWS_OK;
    }
    for (int slots = SLOTS; slots >= 1; slots--) {
        size_t rows = fit_rows(g, bp->es, bp->sep, slots, budget, max_alloc);
        if (rows == 0) continue;
        if (rows > cap) rows = cap;
        const size_t staged = staging_rows(g, bp->es);
        if (rows > staged) rows = staged;
        /* the last band holds what is left (one row when the output is one row longer than a band) */
        bp->rows = rows, bp->bands = (g->oh + rows - 1) / rows;
        bp->slots = bp->bands < (size_t)slots ? (int)bp->bands : slots;
        bp->in_rows = band_in_rows(g, rows);
        return GPUWS_OK;
    }
    uint64_t minimum = 0;
    slots_bytes(g, bp->es, bp->sep, 1, 1, &minimum);
    char kernel_text[96];
    if (bp->sep) snprintf(kernel_text, sizeof kernel_text, "factors of %zu and %zu taps", g->kh, g->kw);
    else snprintf(kernel_text, sizeof kernel_text, "%zu x %zu kernel", g->kh, g->kw);
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                        "%s: a device budget of %llu bytes is too small: one band of one output row with its %zu halo "
                        "rows, and the %s, need at least %llu bytes",
                        fn, (unsigned long long)budget, g->kh - 1, kernel_text, (unsigned long long)minimum);
}

/* Both _bands calls: fn names the call, `of` the call it plans (for the plan's messages). */
static gpuws_status bands_of(const char *fn, const char *of, bool sep, gpuws_context *ctx, gpuws_dtype dt,
                             size_t height, size_t width, size_t kh, size_t kw,
                             const gpuws_convolve2d_host_options *options, size_t *band_rows, size_t *bands)
{
    if (!band_rows || !bands)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", fn,
                            !band_rows ? "band_rows" : "bands");
    band_plan bp = { .sep = sep, .fn = of };
    gpuws_status st = plan_bands(ctx, dt, height, width, 0, kh, kw, options, &bp);
    if (st) return st;
    *band_rows = bp.rows;
    *bands = bp.bands;
    return GPUWS_OK;
}

gpuws_status gpuws_convolve2d_host_bands(gpuws_context *ctx, gpuws_dtype dt, size_t height, size_t width, size_t kh,
                                         size_t kw, const gpuws_convolve2d_host_options *options, size_t *band_rows,
                                         size_t *bands)
{
    return bands_of("convolve2d_host_bands", "convolve2d_host", false, ctx, dt, height, width, kh, kw, options,
                    band_rows, bands);
}

gpuws_status gpuws_convolve2d_separable_host_bands(gpuws_context *ctx, gpuws_dtype dt, size_t height, size_t width,
                                                   size_t kh, size_t kw, const gpuws_convolve2d_host_options *options,
                                                   size_t *band_rows, size_t *bands)
{
    return bands_of("convolve2d_separable_host_bands", "convolve2d_separable_host", true, ctx, dt, height, width, kh,
                    kw, options, band_rows, bands);
}

/* A band's geometry and where its input rows start in the extended image (*first; rows follow consecutively). */
static void band_geometry(const band_plan *bp, size_t b, gpuws__conv2d_geometry *gb, long long *first)
{
    const gpuws__conv2d_geometry *g = &bp->g;
    const size_t m0 = b * bp->rows, m1 = m0 + bp->rows < g->oh ? m0 + bp->rows : g->oh;
    *gb = *g;
    gb->stride = g->w;
    gb->oh = m1 - m0;
    const long long lo = (long long)m0 + (long long)g->om - (long long)(g->kh - 1),
                    hi = (long long)m1 + (long long)g->om;
    if (g->boundary != GPUWS_BOUNDARY_FILL) { /* every row copied in, mapped by the rule */
        *first = lo;
        gb->h = m1 - m0 + g->kh - 1;
        gb->om = g->kh - 1;
        return;
    }
    long long r0 = lo < 0 ? 0 : lo, r1 = hi > (long long)g->h ? (long long)g->h : hi;
    if (r1 <= r0) { /* the band reads fill only (VALID with a kernel larger than the image): one row it never reads */
        r0 = (long long)g->h - 1;
        r1 = (long long)g->h;
    }
    *first = r0;
    gb->h = (size_t)(r1 - r0);
    gb->om = (size_t)((long long)m0 + (long long)g->om - r0);
}

/* The host's copies into and out of pinned staging: rows of row_bytes from src (row i at src_row(i), through the
 * boundary rule when `map`) to dst, packed, on gpuws__copy_threads threads (no more than the rows; on a 32-core host
 * 16 threads moved a 32768-square image through 1 GiB of bands 1.35 times faster than 4). gpuws__run_ranges runs on
 * the calling thread the rows of a thread that cannot start. */
typedef struct {
    const char *src;
    char *dst;
    size_t row_bytes, src_stride_bytes; /* src rows are src_stride_bytes apart */
    long long first, h;                 /* map: source row of row i = conv_extend(first + i, h, boundary) */
    gpuws_convolve_boundary boundary;
    bool map;
} row_copy;

/* Rows [r0, r1) of the copy c. */
static void row_copy_range(void *arg, size_t part, size_t r0, size_t r1)
{
    const row_copy *c = arg;
    (void)part;
    if (!c->map) { /* contiguous: one memcpy */
        memcpy(c->dst + r0 * c->row_bytes, c->src + r0 * c->src_stride_bytes, (r1 - r0) * c->row_bytes);
        return;
    }
    for (size_t i = r0; i < r1; i++) {
        const long long r = gpuws__conv_extend(c->first + (long long)i, c->h, c->boundary);
        memcpy(c->dst + i * c->row_bytes, c->src + (size_t)r * c->src_stride_bytes, c->row_bytes);
    }
}

static void copy_rows(const row_copy *c, size_t rows)
{
    size_t n = gpuws__copy_threads(rows * c->row_bytes);
    if (n > rows) n = rows;
    gpuws__run_ranges(rows, n, row_copy_range, (void *)c);
}

/* Copies band b's rows from the caller's image into pinned staging (packed rows of g.w elements). */
static void stage_rows(const band_plan *bp, const gpuws__conv2d_geometry *gb, long long first, const void *image,
                       void *dst)
{
    const gpuws__conv2d_geometry *g = &bp->g;
    const row_copy c = { .src = image,
                         .dst = dst,
                         .row_bytes = g->w * bp->es,
                         .src_stride_bytes = bp->src_stride * bp->es,
                         .first = first,
                         .h = (long long)g->h,
                         .boundary = g->boundary,
                         .map = true };
    copy_rows(&c, gb->h);
}

/* ---- the steps of band_stream.h: one band each ---------------------------------------------------------------- */

typedef struct {
    const band_plan *bp;
    gpuws_dtype dt;
    const void *image, *kernel, *col, *row; /* the kernel, or (bp->sep) its factors */
    void *out;
} run_state;

/* A device's copy of the kernel, or of its factors. */
typedef struct {
    gpuws_buffer *kernel, *col, *row;
} device_kernel;

static void kernel_free(device_kernel *k)
{
    gpuws_buffer_destroy(k->kernel);
    gpuws_buffer_destroy(k->col);
    gpuws_buffer_destroy(k->row);
}

/* The kernel (or its factors) on ctx, written through the stream s. */
static gpuws_status kernel_upload(const run_state *rs, gpuws_context *ctx, gpuws_stream *s, device_kernel *k)
{
    const band_plan *bp = rs->bp;
    const size_t es = bp->es;
    memset(k, 0, sizeof *k);
    gpuws_status st;
    if (bp->sep) {
        if (!(st = gpuws_buffer_create(ctx, bp->g.kh * es, &k->col)) &&
            !(st = gpuws_buffer_create(ctx, bp->g.kw * es, &k->row)) &&
            !(st = gpuws_buffer_write_async(s, k->col, 0, rs->col, bp->g.kh * es)))
            st = gpuws_buffer_write_async(s, k->row, 0, rs->row, bp->g.kw * es);
    } else if (!(st = gpuws_buffer_create(ctx, bp->g.kh * bp->g.kw * es, &k->kernel))) {
        st = gpuws_buffer_write_async(s, k->kernel, 0, rs->kernel, bp->g.kh * bp->g.kw * es);
    }
    return st;
}

/* Geometry g's output from the device's image buffer into out: the kernel's launch planned as the whole image's
 * (bp->g), or the separable form's (g alone decides it). */
static gpuws_status launch(const run_state *rs, gpuws_stream *s, const gpuws__conv2d_geometry *g,
                           const device_kernel *k, const gpuws_buffer *image, gpuws_buffer *out)
{
    if (rs->bp->sep) return gpuws__convolve2d_separable_launch(s, rs->dt, g, image, k->col, k->row, out);
    return gpuws__convolve2d_launch(s, rs->dt, &rs->bp->g, g, image, k->kernel, out);
}

static gpuws_status device_make(void *user, unsigned d, gpuws_context *ctx, gpuws_stream *run, void **state)
{
    (void)d;
    device_kernel *k = gpuws__malloc(sizeof *k);
    if (!k)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s: no host memory for a device's kernel (%zu bytes)",
                            ((const run_state *)user)->bp->fn, sizeof *k);
    gpuws_status st = kernel_upload(user, ctx, run, k);
    if (!st) st = gpuws_stream_synchronize(run); /* the caller's kernel may be pageable memory */
    if (st) kernel_free(k), gpuws__free(k);
    else *state = k;
    return st;
}

static void device_free(void *user, unsigned d, gpuws_context *ctx, void *state)
{
    (void)user, (void)d, (void)ctx;
    kernel_free(state);
    gpuws__free(state);
}

/* Band b's geometry: the whole image's with one band. */
static void geometry(const band_plan *bp, size_t b, gpuws__conv2d_geometry *gb, long long *first)
{
    if (bp->bands == 1) *gb = bp->g, *first = 0;
    else band_geometry(bp, b, gb, first);
}

/* Band b's input in the caller's image, when it is the image's own rows (boundary FILL, packed rows: the rows
 * [first, first + gb.h) as they are) in memory pinned for ctx; else NULL: staged. */
static const void *source(void *user, gpuws_context *ctx, size_t b, size_t *bytes)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    if (bp->g.boundary != GPUWS_BOUNDARY_FILL || bp->src_stride != bp->g.w) return NULL;
    gpuws__conv2d_geometry gb;
    long long first;
    geometry(bp, b, &gb, &first);
    const size_t row_bytes = bp->g.w * bp->es;
    const char *p = (const char *)rs->image + (size_t)first * row_bytes;
    if (!gpuws__host_pinned(ctx, p, gb.h * row_bytes)) return NULL;
    *bytes = gb.h * row_bytes;
    return p;
}

/* Band b's rows of `out`, when they are pinned for ctx; else NULL: downloaded into staging. */
static void *target(void *user, gpuws_context *ctx, size_t b)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t m0 = b * bp->rows, m1 = m0 + bp->rows < bp->g.oh ? m0 + bp->rows : bp->g.oh,
                 row_bytes = bp->g.ow * bp->es;
    char *p = (char *)rs->out + m0 * row_bytes;
    return gpuws__host_pinned(ctx, p, (m1 - m0) * row_bytes) ? p : NULL;
}

static gpuws_status stage(void *user, size_t b, void *in, size_t *bytes)
{
    const run_state *rs = user;
    gpuws__conv2d_geometry gb;
    long long first;
    geometry(rs->bp, b, &gb, &first);
    stage_rows(rs->bp, &gb, first, rs->image, in);
    *bytes = gb.h * gb.w * rs->bp->es;
    return GPUWS_OK;
}

/* The whole image's geometry plans the launch; with one band the band is the whole image. */
static gpuws_status compute(void *user, void *state, size_t b, gpuws_stream *run, gpuws_buffer *din, gpuws_buffer *dout)
{
    const run_state *rs = user;
    gpuws__conv2d_geometry gb;
    long long first;
    geometry(rs->bp, b, &gb, &first);
    return launch(rs, run, &gb, state, din, dout);
}

static gpuws_status download(void *user, size_t b, gpuws_stream *down, gpuws_buffer *dout, void *out)
{
    const run_state *rs = user;
    gpuws__conv2d_geometry gb;
    long long first;
    geometry(rs->bp, b, &gb, &first);
    return gpuws_buffer_read_async(down, dout, 0, out, gb.oh * gb.ow * rs->bp->es);
}

/* Band b's output, downloaded into staging, into the caller's out (NULL: downloaded there already). */
static gpuws_status complete(void *user, void *state, size_t b, const void *staged)
{
    (void)state;
    const run_state *rs = user;
    if (!staged) return GPUWS_OK;
    const band_plan *bp = rs->bp;
    const size_t m0 = b * bp->rows, m1 = m0 + bp->rows < bp->g.oh ? m0 + bp->rows : bp->g.oh,
                 row_bytes = bp->g.ow * bp->es;
    const row_copy c = {
        .src = staged, .dst = (char *)rs->out + m0 * row_bytes, .row_bytes = row_bytes, .src_stride_bytes = row_bytes
    };
    copy_rows(&c, m1 - m0);
    return GPUWS_OK;
}

static gpuws_status done(void *user, size_t b)
{
    const run_state *rs = user;
    const band_plan *bp = rs->bp;
    const size_t m1 = (b + 1) * bp->rows < bp->g.oh ? (b + 1) * bp->rows : bp->g.oh;
    bp->o.progress(bp->o.progress_user, b, bp->bands, m1, bp->g.oh);
    return GPUWS_OK;
}

/* One band: one gpuws_convolve2d between an upload straight from the caller's image and a download straight into
 * out, on ctx. No pinned staging: pinning an image's worth of host memory for one call costs far more than the
 * transfers gain (as label_host's run_in_core). A strided image is packed first, on several threads. */
static gpuws_status run_in_core(const run_state *rs)
{
    const band_plan *bp = rs->bp;
    gpuws_context *ctx = bp->ctxs[0];
    const gpuws__conv2d_geometry *g = &bp->g;
    const void *image = rs->image;
    const size_t in_bytes = g->h * g->w * bp->es, out_bytes = g->oh * g->ow * bp->es;
    void *packed = NULL;
    if (bp->src_stride != g->w) {
        if (!(packed = gpuws__malloc(in_bytes)))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "%s: no host memory to pack an image of row stride %zu (%zu bytes)", bp->fn,
                                bp->src_stride, in_bytes);
        const row_copy c = {
            .src = image, .dst = packed, .row_bytes = g->w * bp->es, .src_stride_bytes = bp->src_stride * bp->es
        };
        copy_rows(&c, g->h);
    }
    gpuws_stream *s = NULL;
    gpuws_buffer *din = NULL, *dout = NULL;
    device_kernel dk = { NULL, NULL, NULL };
    gpuws_status st;
    if (!(st = gpuws_stream_create(ctx, &s)) && !(st = gpuws_buffer_create(ctx, in_bytes, &din)) &&
        !(st = kernel_upload(rs, ctx, s, &dk)) && !(st = gpuws_buffer_create(ctx, out_bytes, &dout)) &&
        !(st = gpuws_buffer_write_async(s, din, 0, packed ? packed : image, in_bytes)) &&
        !(st = launch(rs, s, g, &dk, din, dout)))
        st = gpuws_buffer_read_async(s, dout, 0, rs->out, out_bytes);
    if (s) { /* the stream stops before the buffers and the packed image go, also after an error */
        const gpuws_status sync = gpuws_stream_synchronize(s);
        if (!st) st = sync;
    }
    gpuws_stream_destroy(s);
    gpuws_buffer_destroy(din);
    kernel_free(&dk);
    gpuws_buffer_destroy(dout);
    gpuws__free(packed);
    if (!st && bp->o.progress) bp->o.progress(bp->o.progress_user, 0, 1, g->oh, g->oh);
    return st;
}

static gpuws_status run_bands(const run_state *rs)
{
    const band_plan *bp = rs->bp;
    const gpuws__band_ops ops = { .steps = bp->bands,
                                  .slots = bp->slots,
                                  .in_bytes = bp->in_rows * bp->g.w * bp->es,
                                  .out_bytes = bp->rows * bp->g.ow * bp->es,
                                  .user = (void *)rs,
                                  .what = bp->fn,
                                  .device_make = device_make,
                                  .device_free = device_free,
                                  .stage = stage,
                                  .source = source,
                                  .target = target,
                                  .compute = compute,
                                  .download = download,
                                  .complete = complete,
                                  .done = bp->o.progress ? done : NULL };
    if (bp->bands == 1) return run_in_core(rs);
    return gpuws__band_stream_run(bp->ctxs, bp->devices, &ops);
}

/* Both calls: rs->kernel, or rs->col and rs->row (sep), checked; out not overlapping what it reads. */
static gpuws_status host_call(const char *fn, bool sep, gpuws_context *ctx, gpuws_dtype dt, size_t height, size_t width,
                              size_t row_stride, size_t kh, size_t kw, const gpuws_convolve2d_host_options *options,
                              run_state *rs)
{
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    const char *null = !rs->image            ? "image"
                       : !sep && !rs->kernel ? "kernel"
                       : sep && !rs->col     ? "col"
                       : sep && !rs->row     ? "row"
                       : !rs->out            ? "out"
                                             : NULL;
    if (null) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", fn, null);
    band_plan bp = { .sep = sep, .fn = fn };
    if ((st = plan_bands(ctx, dt, height, width, row_stride, kh, kw, options, &bp))) return st;
    const gpuws__conv2d_geometry *g = &bp.g;
    const size_t image_bytes = ((g->h - 1) * bp.src_stride + g->w) * bp.es, out_bytes = g->oh * g->ow * bp.es;
    const struct {
        const void *p;
        size_t bytes;
        const char *name;
    } read[4] = { { rs->image, image_bytes, "image" },
                  { sep ? NULL : rs->kernel, g->kh * g->kw * bp.es, "kernel" },
                  { sep ? rs->col : NULL, g->kh * bp.es, "col" },
                  { sep ? rs->row : NULL, g->kw * bp.es, "row" } };
    for (int k = 0; k < 4; k++)
        if (read[k].p && gpuws__overlaps(rs->out, out_bytes, read[k].p, read[k].bytes))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: out overlaps the %s (it is read while out is written)",
                                fn, read[k].name);
    gpuws__log(GPUWS__LOG_DEBUG, "%s %s: %zu x %zu, kernel %zu x %zu: %zu bands of %zu rows, %d slots, %u devices", fn,
               gpuws_dtype_name(dt), g->h, g->w, g->kh, g->kw, bp.bands, bp.rows, bp.slots, bp.devices);
    rs->bp = &bp, rs->dt = dt;
    return run_bands(rs);
}

gpuws_status gpuws_convolve2d_host(gpuws_context *ctx, gpuws_dtype dt, const void *image, size_t height, size_t width,
                                   size_t row_stride, const void *kernel, size_t kh, size_t kw,
                                   const gpuws_convolve2d_host_options *options, void *out)
{
    run_state rs = { .image = image, .kernel = kernel, .out = out };
    return host_call("convolve2d_host", false, ctx, dt, height, width, row_stride, kh, kw, options, &rs);
}

gpuws_status gpuws_convolve2d_separable_host(gpuws_context *ctx, gpuws_dtype dt, const void *image, size_t height,
                                             size_t width, size_t row_stride, const void *col, size_t kh,
                                             const void *row, size_t kw, const gpuws_convolve2d_host_options *options,
                                             void *out)
{
    run_state rs = { .image = image, .col = col, .row = row, .out = out };
    return host_call("convolve2d_separable_host", true, ctx, dt, height, width, row_stride, kh, kw, options, &rs);
}
