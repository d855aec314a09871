/* gpuws convolve: scipy.signal.convolve2d on FITS images, and --demo, the workshop's exercise timed against the
 * scalar reference on the backend the environment selects. */
#include "commands.h"
#include "parallel.h"
#include "fits_io.h"
#include "gpuws/algorithms.h"
#include "output_files.h"
#include "convolve1d/convolve1d_ref.h"
#include "convolve2d/convolve2d_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: gpuws convolve IN.fits KERNEL.fits -o OUT.fits [--mode full|same|valid] [--boundary fill|wrap|symm]\n"
        "                      [--fill V] [--dtype f32|f64] [--separable] [--max-device-memory SIZE]\n"
        "       gpuws convolve --demo [--dtype f32|f64] [--size N] [--repeat N]\n"
        "  Convolves the first 2-D image of IN.fits with that of KERNEL.fits exactly as\n"
        "  scipy.signal.convolve2d(in, kernel, mode, boundary, fillvalue) does (defaults: full, fill, 0) and writes\n"
        "  OUT.fits, completely or not at all: a regular file (or a symlink's target) is replaced, keeping its\n"
        "  permissions; a device or FIFO is written into; a directory, or one of the inputs, is refused before\n"
        "  any work. The arithmetic is f64 when either file holds doubles, else f32, unless --dtype says\n"
        "  otherwise.\n"
        "  --separable: the kernel K (kh x kw) is outer(col, row). gpuws factors it in double, with (j*, k*) the\n"
        "  entry of largest |K|: col[j] = K[j][k*], row[k] = K[j*][k] / K[j*][k*], and convolves in two 1-D passes\n"
        "  (kh + kw products per output instead of kh * kw; rounding differs from the 2-D sum, see\n"
        "  gpuws_convolve2d_separable). If some |K[j][k] - col[j] * row[k]| exceeds 1e-6 * max |K|, or K holds NaN\n"
        "  or Inf, it exits 1 and writes nothing. An all-zero kernel is accepted (col = row = 0).\n"
        "  The image streams through the device in bands of rows (halos of kernel-height - 1 rows; results\n"
        "  bit-identical to one in-core convolution) when the image, output and kernel do not fit the device's\n"
        "  free memory, or --max-device-memory SIZE (bytes, or with K, M, G or T: 512M; 0 = the free memory),\n"
        "  with a line per band on stderr once a run takes more than a second (--separable too: its budget holds\n"
        "  the factors and a band's row sums instead of the kernel).\n"
        "  --demo runs the workshop's exercise: deltas (ones at [8::16, 8::16]) of N x N (default 2048) convolved\n"
        "  with the 15 x 15 Gaussian, and np.convolve of the flattened deltas with its diagonal, timed on the\n"
        "  device (median of --repeat runs, default 20) next to one run of the scalar reference on one CPU core;\n"
        "  also the same 2-D convolution through the separable path (outer(g, g), g = exp(-x^2 / 2)), timed the\n"
        "  same way and compared with the 2-D path's output.\n"
        "  --fill V is a decimal number, nan, inf or -inf; --size N from 16 to 16384; --repeat N from 1 to\n"
        "  1000000. -o, --mode, --boundary, --fill and --separable apply to files only, --size and --repeat to\n"
        "  --demo only; each option may be given once.\n"
        "  The backend and device come from GPUWS_BACKEND / GPUWS_DEVICE / GPUWS_OPENCL_PLATFORM; a GPUWS_DEVICE\n"
        "  list (0,1,...) or all shares the bands of a streamed convolution between several devices.\n"
        "  Exit status: 0 done, 1 error (nothing written), 2 bad usage (also: OUT.fits is an input).\n");
}

/* ---- convolving files ---------------------------------------------------------------------------------------- */

typedef struct {
    const char *in, *kernel, *out;
    gpuws_convolve2d_options opt;
    int dtype; /* -1 auto, else gpuws_dtype */
    bool demo, separable;
    size_t demo_size;
    int repeat;
    uint64_t max_device_bytes; /* --max-device-memory; 0 = the device's free memory */
    output_files *outputs;     /* OUT.fits, planned before any work */
} args;

/* --separable: relative tolerance of the factorization check (stated in the usage). */
#define SEPARABLE_TOL 1e-6

/* Factors the kh x kw kernel k (row-major, double) as k = outer(col, row) on the host, for --separable.
 * With (j*, k*) the entry of largest |K|: col[j] = K[j][k*] and row[k] = K[j*][k] / K[j*][k*] (so row[k*] = 1, and
 * outer(col, row) reproduces row j* and column k* up to the division's rounding). Then every entry is checked:
 * *dev = max |K[j][k] - col[j] * row[k]| and *scale = max |K|. Returns 0 when *dev <= SEPARABLE_TOL * *scale;
 * -1 when it is not, and -2 when K holds NaN or Inf (*bad_j, *bad_k name the first such entry). An all-zero kernel
 * gives col = 0 and row = 0 (deviation 0): the result is the 2-D convolution with a zero kernel. */
static int factor_separable(const double *k, size_t kh, size_t kw, double *col, double *row, double *dev, double *scale,
                            size_t *bad_j, size_t *bad_k)
{
    size_t js = 0, ks = 0;
    double big = 0;
    for (size_t j = 0; j < kh; j++)
        for (size_t i = 0; i < kw; i++) {
            const double v = k[j * kw + i];
            if (!isfinite(v)) {
                *bad_j = j, *bad_k = i;
                return -2;
            }
            if (fabs(v) > big) big = fabs(v), js = j, ks = i;
        }
    for (size_t j = 0; j < kh; j++) col[j] = k[j * kw + ks];
    for (size_t i = 0; i < kw; i++) row[i] = big > 0 ? k[js * kw + i] / k[js * kw + ks] : 0.0;
    double worst = 0;
    for (size_t j = 0; j < kh; j++)
        for (size_t i = 0; i < kw; i++) {
            const double e = fabs(k[j * kw + i] - col[j] * row[i]);
            if (e > worst) worst = e;
        }
    *dev = worst, *scale = big;
    return worst <= SEPARABLE_TOL * big ? 0 : -1;
}

/* Writes OUT.fits into its staging file and puts it in place (tools/output_files.h). */
static int write_output(const args *a, gpuws_dtype dt, const void *out, size_t ow, size_t oh)
{
    char err[4400];
    const char *path = output_files_stage(a->outputs, 0, err, sizeof err);
    if (path && ow * oh >= ((size_t)1 << 24)) fprintf(stderr, "gpuws convolve: writing %s...\n", a->out); /* seconds */
    if (!path || fits_write_image(path, dt == GPUWS_F32 ? FITS_F32 : FITS_F64, out, ow, oh, err, sizeof err) ||
        output_files_commit(a->outputs, err, sizeof err)) {
        output_files_reword(a->outputs, 0, err, sizeof err);
        fprintf(stderr, "gpuws convolve: %s\n", err);
        return 1;
    }
    return 0;
}

/* n doubles as dtype (malloc'd; NULL when out of memory) */
static void *host_dtype(const double *x, size_t n, gpuws_dtype dt)
{
    void *h = malloc(n * gpuws_dtype_size(dt));
    for (size_t i = 0; h && i < n; i++) {
        if (dt == GPUWS_F32) ((float *)h)[i] = (float)x[i];
        else ((double *)h)[i] = x[i];
    }
    return h;
}

/* The 2-D convolution through gpuws_convolve2d_host (--separable: of the factors col and row, through
 * gpuws_convolve2d_separable_host): in-core when it fits the budget, else in bands. */
static gpuws_status convolve_streamed(const args *a, gpuws_context *const *ctxs, size_t nctx, gpuws_dtype dt,
                                      const fits_image *img, const fits_image *ker, const double *col,
                                      const double *row, size_t oh, void *out)
{
    gpuws_context *ctx = ctxs[0];
    gpuws_convolve2d_host_options o = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    o.mode = a->opt.mode, o.boundary = a->opt.boundary, o.fill_value = a->opt.fill_value;
    o.max_device_bytes = a->max_device_bytes;
    o.more_contexts = ctxs + 1, o.num_more_contexts = nctx - 1;
    tool_band_progress progress = tool_band_progress_start("gpuws convolve");
    o.progress = tool_convolve_band, o.progress_user = &progress;
    size_t rows = 0, bands = 0;
    const size_t kh = ker->height, kw = ker->width;
    gpuws_status st =
        a->separable
            ? gpuws_convolve2d_separable_host_bands(ctx, dt, img->height, img->width, kh, kw, &o, &rows, &bands)
            : gpuws_convolve2d_host_bands(ctx, dt, img->height, img->width, kh, kw, &o, &rows, &bands);
    if (st) return st;
    if (bands > 1 && nctx > 1)
        fprintf(stderr, "gpuws convolve: streaming through %zu devices in %zu bands of up to %zu of %zu output rows\n",
                nctx, bands, rows, oh);
    else if (bands > 1)
        fprintf(stderr, "gpuws convolve: streaming through the device in %zu bands of up to %zu of %zu output rows\n",
                bands, rows, oh);
    void *hi = host_dtype(img->data, img->width * img->height, dt),
         *hk = a->separable ? host_dtype(col, kh, dt) : host_dtype(ker->data, kw * kh, dt),
         *hr = a->separable ? host_dtype(row, kw, dt) : NULL;
    if (!hi || !hk || (a->separable && !hr)) st = GPUWS_ERR_OUT_OF_MEMORY;
    else if (a->separable)
        st = gpuws_convolve2d_separable_host(ctx, dt, hi, img->height, img->width, 0, hk, kh, hr, kw, &o, out);
    else st = gpuws_convolve2d_host(ctx, dt, hi, img->height, img->width, 0, hk, kh, kw, &o, out);
    free(hi);
    free(hk);
    free(hr);
    return st;
}

static int convolve_files(const args *a)
{
    char err[512];
    fits_image img, ker;
    if (fits_read_image(a->in, 1, &img, err, sizeof err)) {
        fprintf(stderr, "gpuws convolve: %s\n", err);
        return 1;
    }
    if (fits_read_image(a->kernel, 1, &ker, err, sizeof err)) {
        fprintf(stderr, "gpuws convolve: %s\n", err);
        fits_image_free(&img);
        return 1;
    }
    const bool file_double = img.bitpix == -64 || ker.bitpix == -64 || img.bitpix == 64 || ker.bitpix == 64;
    const gpuws_dtype dt = a->dtype >= 0 ? (gpuws_dtype)a->dtype : file_double ? GPUWS_F64 : GPUWS_F32;
    size_t oh = 0, ow = 0;
    gpuws_context *ctx = NULL, *ctxs[64] = { NULL };
    size_t nctx = 0;
    void *out = NULL;
    double *col = NULL, *row = NULL;
    int rc = 1;
    gpuws_status st =
        gpuws_convolve2d_output_shape(img.height, img.width, ker.height, ker.width, a->opt.mode, &oh, &ow);
    if (st) {
        rc = tool_fail("convolve", st);
        goto done;
    }
    if (a->separable) { /* on the host, before any device work: a kernel that does not factor writes nothing */
        col = malloc(ker.height * sizeof *col), row = malloc(ker.width * sizeof *row);
        if (!col || !row) {
            rc = tool_fail("convolve", GPUWS_ERR_OUT_OF_MEMORY);
            goto done;
        }
        double dev = 0, scale = 0;
        size_t nj = 0, nk = 0;
        const int f = factor_separable(ker.data, ker.height, ker.width, col, row, &dev, &scale, &nj, &nk);
        if (f == -2) {
            fprintf(stderr,
                    "gpuws convolve: the kernel holds %g at row %zu, column %zu (0-based): a kernel with NaN or Inf "
                    "cannot be factored; drop --separable\n",
                    ((const double *)ker.data)[nj * ker.width + nk], nj, nk);
            goto done;
        }
        if (f) {
            fprintf(stderr,
                    "gpuws convolve: the kernel is not separable: largest deviation from outer(col, row) is %.3g "
                    "(relative %.3g, tolerance %g); drop --separable\n",
                    dev, dev / scale, SEPARABLE_TOL);
            goto done;
        }
    }
    /* a GPUWS_DEVICE list: the streamed paths share their bands between those devices */
    if ((st = gpuws_contexts_create(NULL, sizeof ctxs / sizeof *ctxs, ctxs, &nctx))) {
        rc = tool_fail("convolve", st);
        goto done;
    }
    ctx = ctxs[0];
    gpuws_device_info d;
    gpuws_context_get_device_info(ctx, &d);
    fprintf(stderr, "gpuws convolve: %zu x %zu image * %zu x %zu kernel%s -> %zu x %zu (%s) on %s\n", img.height,
            img.width, ker.height, ker.width, a->separable ? " (separable: col x row)" : "", oh, ow,
            gpuws_dtype_name(dt), d.name);
    const size_t es = gpuws_dtype_size(dt);
    out = malloc(oh * ow * es);
    if (!out) st = GPUWS_ERR_OUT_OF_MEMORY;
    if (!st) st = convolve_streamed(a, ctxs, nctx, dt, &img, &ker, col, row, oh, out);
    if (st) {
        rc = tool_fail("convolve", st);
        goto done;
    }
    rc = write_output(a, dt, out, ow, oh);
done:
    free(out);
    free(col);
    free(row);
    if (nctx) gpuws_contexts_destroy(ctxs, nctx);
    fits_image_free(&img);
    fits_image_free(&ker);
    return rc;
}

/* ---- the demo --------------------------------------------------------------------------------------------------- */

enum { TAPS = 15 };

/* Median device time of `repeat` runs of fn between two events, after one warm-up run. */
typedef gpuws_status (*run_fn)(void *state, gpuws_stream *s);
static gpuws_status time_device(gpuws_context *ctx, run_fn fn, void *state, int repeat, double *median_ms)
{
    gpuws_stream *s;
    gpuws_event *e0 = NULL, *e1 = NULL;
    double *t = malloc((size_t)repeat * sizeof *t);
    gpuws_status st = t ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    if (st || (st = gpuws_context_get_default_stream(ctx, &s)) || (st = gpuws_event_create(ctx, &e0)) ||
        (st = gpuws_event_create(ctx, &e1)) || (st = fn(state, s)) || (st = gpuws_stream_synchronize(s)))
        goto done;
    for (int i = 0; i < repeat; i++)
        if ((st = gpuws_event_record(e0, s)) || (st = fn(state, s)) || (st = gpuws_event_record(e1, s)) ||
            (st = gpuws_event_elapsed_ms(e0, e1, &t[i])))
            goto done;
    *median_ms = tool_median(t, repeat);
done:
    free(t);
    gpuws_event_destroy(e0);
    gpuws_event_destroy(e1);
    return st;
}

typedef struct {
    gpuws_dtype dt;
    size_t side;
    gpuws__conv2d_geometry g2;
    gpuws__conv1d_geometry g1;
    void *h_image, *h_kernel, *h_diag, *h_out; /* dtype; h_image and h_out pinned */
    gpuws_buffer *image, *kernel, *diag, *out;
    gpuws_buffer *g; /* the Gaussian's factor: kernel = outer(g, g), one buffer passed as both */
} demo;

static gpuws_status run2d(void *p, gpuws_stream *s)
{
    demo *d = p;
    return gpuws_convolve2d(s, d->dt, d->image, d->side, d->side, 0, d->kernel, TAPS, TAPS, NULL, d->out);
}

static gpuws_status run2d_separable(void *p, gpuws_stream *s)
{
    demo *d = p;
    return gpuws_convolve2d_separable(s, d->dt, d->image, d->side, d->side, 0, d->g, TAPS, d->g, TAPS, NULL, d->out);
}

static gpuws_status run2d_transfers(void *p, gpuws_stream *s)
{
    demo *d = p;
    const size_t es = gpuws_dtype_size(d->dt);
    gpuws_status st;
    if ((st = gpuws_buffer_write_async(s, d->image, 0, d->h_image, d->side * d->side * es)) || (st = run2d(p, s)))
        return st;
    return gpuws_buffer_read_async(s, d->out, 0, d->h_out, d->g2.oh * d->g2.ow * es);
}

static gpuws_status run1d(void *p, gpuws_stream *s)
{
    demo *d = p;
    return gpuws_convolve1d(s, d->dt, d->image, d->side * d->side, d->diag, TAPS, GPUWS_CONVOLVE_FULL, d->out);
}

static double value(const void *p, size_t i, gpuws_dtype dt)
{
    return dt == GPUWS_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Largest |got - want| over the largest |want|. */
static double max_rel_diff(const void *got, const void *want, size_t n, gpuws_dtype dt)
{
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        const double g = value(got, i, dt), w = value(want, i, dt);
        if (fabs(g - w) > diff || isnan(g - w)) diff = isnan(g - w) ? INFINITY : fabs(g - w);
        if (fabs(w) > scale) scale = fabs(w);
    }
    return scale > 0 ? diff / scale : diff;
}

/* The reference on one core, in bands of rows with progress on stderr; returns its wall time. */
static double reference2d(const demo *d, void *want)
{
    const double t0 = tool_now_ms();
    const size_t bands = 20, rows = d->g2.oh;
    const bool tty = isatty(2);
    fprintf(stderr, "  running the scalar reference on one core...%s", tty ? "" : "\n");
    for (size_t b = 0; b < bands; b++) {
        const size_t r0 = rows * b / bands, r1 = rows * (b + 1) / bands;
        if (d->dt == GPUWS_F32) gpuws_convolve2d_ref_f32(&d->g2, d->h_image, d->h_kernel, want, r0, r1);
        else gpuws_convolve2d_ref_f64(&d->g2, d->h_image, d->h_kernel, want, r0, r1);
        if (tty) fprintf(stderr, "\r  running the scalar reference on one core... %3zu%%", 100 * (b + 1) / bands);
    }
    if (tty) fprintf(stderr, "\n");
    return tool_now_ms() - t0;
}

static void *to_dtype(const double *x, size_t n, gpuws_dtype dt, void *dst)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == GPUWS_F32) ((float *)dst)[i] = (float)x[i];
        else ((double *)dst)[i] = x[i];
    }
    return dst;
}

static int run_demo(const args *a)
{
    gpuws_context *ctx;
    int rc = tool_context("convolve", &ctx);
    if (rc) return rc;
    demo d = { 0 };
    d.dt = a->dtype >= 0 ? (gpuws_dtype)a->dtype : GPUWS_F64; /* the workshop's arrays are float64 */
    d.side = a->demo_size;
    const size_t n = d.side * d.side, es = gpuws_dtype_size(d.dt);
    gpuws_status st = gpuws__conv2d_geometry_init(d.side, d.side, 0, TAPS, TAPS, NULL, &d.g2);
    if (!st) st = gpuws__conv1d_geometry_init(n, TAPS, GPUWS_CONVOLVE_FULL, &d.g1);
    const size_t no = d.g2.oh * d.g2.ow > d.g1.out_n ? d.g2.oh * d.g2.ow : d.g1.out_n;
    double *img = malloc(n * sizeof *img), gauss[TAPS * TAPS], diag[TAPS], g[TAPS];
    void *got = malloc(no * es), *want = malloc(no * es), *sep = malloc(no * es), *h_g = malloc(TAPS * es);
    d.h_kernel = malloc(TAPS * TAPS * es), d.h_diag = malloc(TAPS * es);
    if (!st && (!img || !got || !want || !sep || !h_g || !d.h_kernel || !d.h_diag)) st = GPUWS_ERR_OUT_OF_MEMORY;
    if (st || (st = gpuws_host_alloc(ctx, n * es, &d.h_image)) || (st = gpuws_host_alloc(ctx, no * es, &d.h_out)))
        goto fail;
    for (size_t i = 0; i < n; i++) img[i] = (i / d.side) % 16 == 8 && (i % d.side) % 16 == 8 ? 1.0 : 0.0;
    for (int j = 0; j < TAPS; j++)
        for (int k = 0; k < TAPS; k++) {
            const double y = -2.0 + 4.0 * j / (TAPS - 1), x = -2.0 + 4.0 * k / (TAPS - 1);
            gauss[j * TAPS + k] = exp(-(x * x + y * y) / 2);
        }
    for (int j = 0; j < TAPS; j++) diag[j] = gauss[j * TAPS + j];
    for (int j = 0; j < TAPS; j++) { /* the Gaussian is outer(g, g), g = exp(-x^2 / 2) at x = linspace(-2, 2, 15) */
        const double x = -2.0 + 4.0 * j / (TAPS - 1);
        g[j] = exp(-x * x / 2);
    }
    to_dtype(img, n, d.dt, d.h_image), to_dtype(gauss, TAPS * TAPS, d.dt, d.h_kernel),
        to_dtype(diag, TAPS, d.dt, d.h_diag);
    to_dtype(g, TAPS, d.dt, h_g);
    if ((st = gpuws_buffer_create(ctx, n * es, &d.image)) ||
        (st = gpuws_buffer_create(ctx, TAPS * TAPS * es, &d.kernel)) ||
        (st = gpuws_buffer_create(ctx, TAPS * es, &d.diag)) || (st = gpuws_buffer_create(ctx, no * es, &d.out)) ||
        (st = gpuws_buffer_create(ctx, TAPS * es, &d.g)) || (st = gpuws_buffer_write(d.g, 0, h_g, TAPS * es)) ||
        (st = gpuws_buffer_write(d.image, 0, d.h_image, n * es)) ||
        (st = gpuws_buffer_write(d.kernel, 0, d.h_kernel, TAPS * TAPS * es)) ||
        (st = gpuws_buffer_write(d.diag, 0, d.h_diag, TAPS * es)))
        goto fail;

    gpuws_device_info info;
    gpuws_backend_kind kind;
    gpuws_backend_info bi;
    gpuws_context_get_device_info(ctx, &info);
    gpuws_context_get_backend(ctx, &kind);
    gpuws_backend_get_info(kind, &bi);
    const double flops2 = 2.0 * (double)(d.g2.oh * d.g2.ow) * TAPS * TAPS, flops1 = 2.0 * (double)n * TAPS;
    printf("The workshop's convolution: deltas %zu x %zu (ones at [8::16, 8::16]) * 15 x 15 Gaussian, %s, mode full\n",
           d.side, d.side, gpuws_dtype_name(d.dt));
    printf("  device: %s | %s (%s)\n", bi.name, info.name, info.platform);
    fprintf(stderr, "  timing convolve2d on the device (%d runs)...\n", a->repeat);
    double t2 = 0, t2x = 0, t1 = 0, r2, r1;
    if ((st = time_device(ctx, run2d, &d, a->repeat, &t2)) ||
        (st = gpuws_buffer_read(d.out, 0, got, d.g2.oh * d.g2.ow * es)) ||
        (st = time_device(ctx, run2d_transfers, &d, a->repeat < 5 ? a->repeat : 5, &t2x)))
        goto fail;
    r2 = reference2d(&d, want);
    const double diff2 = max_rel_diff(got, want, d.g2.oh * d.g2.ow, d.dt);
    printf("  convolve2d   device %10.3f ms  (%.1f GFLOP/s)   with transfers %9.3f ms   scalar reference %9.1f ms\n",
           t2, flops2 / t2 / 1e6, t2x, r2);
    printf("               speed-up %.0fx on the device, %.0fx with transfers; max |device - reference| / max "
           "|reference| = %.2g\n",
           r2 / t2, r2 / t2x, diff2);
    /* The same convolution through the separable path, timed the same way, compared with the 2-D path's output. */
    fprintf(stderr, "  timing convolve2d_separable on the device (%d runs)...\n", a->repeat);
    double ts = 0;
    if ((st = time_device(ctx, run2d_separable, &d, a->repeat, &ts)) ||
        (st = gpuws_buffer_read(d.out, 0, sep, d.g2.oh * d.g2.ow * es)))
        goto fail;
    const double diffs = max_rel_diff(sep, got, d.g2.oh * d.g2.ow, d.dt);
    printf("  separable (col x row, %d products per output): %.3f ms, %.1fx %s than the 2-D path, max rel. diff %.2g\n",
           2 * TAPS, ts, t2 >= ts ? t2 / ts : ts / t2, t2 >= ts ? "faster" : "slower", diffs);
    if ((st = time_device(ctx, run1d, &d, a->repeat, &t1)) || (st = gpuws_buffer_read(d.out, 0, got, d.g1.out_n * es)))
        goto fail;
    const double t0 = tool_now_ms();
    if (d.dt == GPUWS_F32) gpuws_convolve1d_ref_f32(&d.g1, d.h_image, d.h_diag, want, 0, d.g1.out_n);
    else gpuws_convolve1d_ref_f64(&d.g1, d.h_image, d.h_diag, want, 0, d.g1.out_n);
    r1 = tool_now_ms() - t0;
    const double diff1 = max_rel_diff(got, want, d.g1.out_n, d.dt);
    printf("  convolve1d   device %10.3f ms  (%.1f GFLOP/s)   np.convolve(deltas.ravel(), gauss.diagonal()), %zu "
           "samples\n",
           t1, flops1 / t1 / 1e6, n);
    printf(
        "               scalar reference %.1f ms, speed-up %.0fx; max |device - reference| / max |reference| = %.2g\n",
        r1, r1 / t1, diff1);
    /* the bound the tests state, 2 (K + 1) u relative to the largest output here (every term is >= 0) */
    const double u = d.dt == GPUWS_F32 ? 0x1p-24 : 0x1p-53;
    if (!(diff2 <= 2 * (TAPS * TAPS + 1) * u) || !(diff1 <= 2 * (TAPS + 1) * u)) {
        fprintf(stderr,
                "gpuws convolve: the device's results differ from the reference by more than the stated bound\n");
        rc = 1;
    }
    /* separable against 2-D: the separable bound (kh + kw products) plus the 2-D one, plus a few u because the
     * Gaussian and outer(g, g) are rounded to dtype separately */
    if (!(diffs <= 2 * (TAPS * TAPS + 1) * u + 2 * (2 * TAPS + 1) * u + 8 * u)) {
        fprintf(
            stderr,
            "gpuws convolve: the separable path's result differs from the 2-D path's by more than the stated bounds\n");
        rc = 1;
    }
    goto done;
fail:
    rc = tool_fail("convolve", st);
done:
    free(img);
    free(got);
    free(want);
    free(sep);
    free(h_g);
    free(d.h_kernel);
    free(d.h_diag);
    gpuws_host_free(ctx, d.h_image);
    gpuws_host_free(ctx, d.h_out);
    gpuws_buffer_destroy(d.image);
    gpuws_buffer_destroy(d.kernel);
    gpuws_buffer_destroy(d.diag);
    gpuws_buffer_destroy(d.out);
    gpuws_buffer_destroy(d.g);
    gpuws_context_destroy(ctx);
    return rc;
}

/* ---- options ------------------------------------------------------------------------------------------------ */

/* A usage error: the message and the usage on stderr, exit code 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpuws convolve: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return 2;
}

/* The usage after a message tool_*() printed. */
static int bad_value(void)
{
    usage(stderr);
    return 2;
}

static int cmd_convolve(int argc, char **argv)
{
    args a = { NULL, NULL, NULL, GPUWS_CONVOLVE2D_OPTIONS_INIT, -1, false, false, 2048, 20, 0, NULL };
    tool_args t = TOOL_ARGS_INIT("convolve");
    const char *demo_only = NULL, *files_only = NULL; /* the first option given that only the demo, only files take */
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *name = !strcmp(o, "-o") ? "--output" : o;
        if (o[0] == '-' && o[1] && tool_once(&t, name)) return bad_value();
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--demo")) {
            a.demo = true;
        } else if (!strcmp(o, "--separable")) {
            a.separable = true;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            if (tool_name(&t, o, v, "a file name")) return bad_value();
            a.out = v, i++, files_only = files_only ? files_only : o;
        } else if (!strcmp(o, "--mode")) {
            if (!v || (strcmp(v, "full") && strcmp(v, "same") && strcmp(v, "valid")))
                return bad("--mode must be full, same or valid");
            a.opt.mode = !strcmp(v, "full")   ? GPUWS_CONVOLVE_FULL
                         : !strcmp(v, "same") ? GPUWS_CONVOLVE_SAME
                                              : GPUWS_CONVOLVE_VALID;
            i++, files_only = files_only ? files_only : o;
        } else if (!strcmp(o, "--boundary")) {
            if (!v || (strcmp(v, "fill") && strcmp(v, "wrap") && strcmp(v, "symm")))
                return bad("--boundary must be fill, wrap or symm");
            a.opt.boundary = !strcmp(v, "fill")   ? GPUWS_BOUNDARY_FILL
                             : !strcmp(v, "wrap") ? GPUWS_BOUNDARY_WRAP
                                                  : GPUWS_BOUNDARY_SYMM;
            i++, files_only = files_only ? files_only : o;
        } else if (!strcmp(o, "--fill")) {
            if (tool_real(&t, o, v, true, &a.opt.fill_value)) return bad_value();
            i++, files_only = files_only ? files_only : o;
        } else if (!strcmp(o, "--max-device-memory")) {
            if (tool_bytes(&t, o, v, &a.max_device_bytes)) return bad_value();
            i++, files_only = files_only ? files_only : o;
        } else if (!strcmp(o, "--dtype")) {
            if (!v || (strcmp(v, "f32") && strcmp(v, "f64"))) return bad("--dtype must be f32 or f64");
            a.dtype = !strcmp(v, "f32") ? GPUWS_F32 : GPUWS_F64;
            i++;
        } else if (!strcmp(o, "--size")) {
            uint64_t x;
            if (tool_count(&t, o, v, 16, 16384, "a side", &x)) return bad_value();
            a.demo_size = (size_t)x, i++, demo_only = demo_only ? demo_only : o;
        } else if (!strcmp(o, "--repeat")) {
            uint64_t x;
            if (tool_count(&t, o, v, 1, TOOL_REPEAT_MAX, "a count", &x)) return bad_value();
            a.repeat = (int)x, i++, demo_only = demo_only ? demo_only : o;
        } else if (o[0] == '-' && o[1]) {
            return bad("unknown option '%s'", o);
        } else if (a.in && a.kernel) {
            return bad("unexpected argument '%s'", o);
        } else if (!*o) {
            return bad("an empty file name ('') where %s was expected", !a.in ? "IN.fits" : "KERNEL.fits");
        } else if (!a.in) {
            a.in = o;
        } else {
            a.kernel = o;
        }
    }
    if (a.demo) {
        if (a.in) return bad("--demo takes no files");
        if (a.separable) return bad("--separable is for files; --demo times both the 2-D and the separable path");
        if (files_only)
            return bad("%s applies to files only (the demo's mode is full, its boundary fill 0)", files_only);
        return run_demo(&a);
    }
    if (demo_only) return bad("%s applies to --demo only", demo_only);
    if (!a.in || !a.kernel || !a.out) return bad("needs IN.fits, KERNEL.fits and -o OUT.fits");
    /* OUT.fits first: a destination that cannot be written, or that is an input, fails before any work */
    const char *in[2] = { a.in, a.kernel }, *opt = "-o";
    char err[4400];
    int rc;
    if (!(a.outputs = output_files_prepare(in, 2, &a.out, &opt, 1, &rc, err, sizeof err)))
        return fprintf(stderr, "gpuws convolve: %s\n", err), rc;
    rc = convolve_files(&a);
    output_files_destroy(a.outputs);
    return rc;
}

GPUWS_COMMAND("convolve", "scipy.signal.convolve2d on FITS images; --demo: the workshop's exercise, timed",
              cmd_convolve)
