/* convolve2d_host: host images of any size through the device in row bands (out-of-core), on every backend and
 * kernel path (test_convolve.h's targets), in f32 and f64.
 *
 * Truth: the in-core gpuws_convolve2d on the same target, bit for bit (memcmp, NaN payloads included), for every
 * row of the table below: band counts that do not divide the output height, a last band of one row, an image one
 * row too tall for the budget's in-core size, one-row images, kernels of 1, 3, 7, 9, 21 rows and even sizes, a kernel
 * taller than a band, a kernel larger than the image (VALID swaps the inputs; WRAP reaches several periods), every
 * mode and boundary, NaN pixels on band borders and a NaN fill value, and a kernel wider than the fixed-width
 * kernels take (the generic tiled kernel, whose kernel blocks are planned for the whole image), and bands of megabytes,
 * which the host copies into and out of staging on several threads. The band count each budget gives is part of
 * the specification (gpuws_convolve2d_host_bands): a slot of r output rows holds r + kh - 1 input rows (at most the
 * image's height with boundary FILL) and r output rows, three slots (fewer when fewer fit) plus the kernel. */
#include "test_convolve.h"
#include "../core/driver_support.h" /* gpuws__staging_take */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a row sets the budget: room for three slots of `rows` output rows, or the in-core size less `short_by`
 * elements (so that the image does not fit in-core by that much). */
typedef struct {
    const char *name;
    size_t h, w, kh, kw;
    gpuws_convolve_mode mode;
    gpuws_convolve_boundary boundary;
    double fill;
    size_t rows;     /* budget: three slots of this many output rows (0: use short_by) */
    size_t short_by; /* budget: the in-core size less this many elements */
    size_t bands;    /* what the budget gives */
    bool nan_pixels; /* NaN on the first and last input rows of every band, and inside */
} band_row;

static const band_row rows[] = {
    { "bands_do_not_divide_the_height", 37, 29, 3, 3, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0, 5, 0, 8, false },
    { "last_band_is_one_row", 41, 16, 3, 3, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_FILL, 0.0, 8, 0, 6, false },
    { "one_row_too_tall_for_in_core", 64, 32, 5, 5, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_FILL, 0.0, 0, 64, 4, false },
    { "fill_value_and_nan_pixels", 40, 23, 7, 7, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.375, 6, 0, 8, true },
    { "nan_fill_value", 30, 18, 3, 5, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, NAN, 7, 0, 5, false },
    { "wrap_kernel_7", 40, 17, 7, 7, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0, 6, 0, 7, true },
    { "symm_kernel_7_full", 35, 21, 7, 3, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_SYMM, 0.0, 9, 0, 5, false },
    { "valid_kernel_7x5", 33, 20, 7, 5, GPUWS_CONVOLVE_VALID, GPUWS_BOUNDARY_FILL, 0.0, 4, 0, 7, true },
    { "kernel_1x1", 25, 31, 1, 1, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0, 7, 0, 4, false },
    { "even_kernel_4x6_symm", 30, 12, 4, 6, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0, 4, 0, 8, false },
    { "even_kernel_2x2_fill", 27, 14, 2, 2, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_FILL, 1.5, 5, 0, 6, true },
    { "kernel_taller_than_a_band", 50, 16, 9, 3, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0, 2, 0, 25, false },
    { "kernel_taller_than_a_band_fill", 50, 16, 9, 3, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0, 3, 0, 20, true },
    { "one_row_image_full", 1, 50, 3, 3, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_FILL, 0.0, 0, 1, 3, false },
    { "one_row_image_same", 1, 50, 3, 3, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_WRAP, 0.0, 0, 0, 1, false },
    { "kernel_larger_than_image_valid", 3, 4, 9, 10, GPUWS_CONVOLVE_VALID, GPUWS_BOUNDARY_FILL, 0.0, 0, 1, 7, false },
    { "kernel_taller_than_image_wrap", 4, 9, 7, 3, GPUWS_CONVOLVE_FULL, GPUWS_BOUNDARY_WRAP, 0.0, 0, 1, 3, false },
    { "wide_kernel_21x40_generic_tiles", 60, 70, 21, 40, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_FILL, 0.25, 9, 0, 7,
      true },
    { "large_bands_copied_by_several_threads", 1536, 1280, 3, 3, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_SYMM, 0.0, 500, 0,
      4, true },
    { "fits_exactly_in_core", 24, 24, 3, 3, GPUWS_CONVOLVE_SAME, GPUWS_BOUNDARY_FILL, 0.0, 0, 0, 1, true },
};
#define NROWS (sizeof rows / sizeof rows[0])

typedef struct {
    target t;
    gpuws_dtype dt;
    size_t row;
} band_case;

/* The budget a row asks for, in bytes. */
static uint64_t row_budget(const band_row *r, size_t oh, size_t ow, size_t es)
{
    const size_t kernel = r->kh * r->kw;
    if (r->rows) {
        size_t in = r->rows + r->kh - 1;
        if (r->boundary == GPUWS_BOUNDARY_FILL || r->mode == GPUWS_CONVOLVE_VALID) in = in > r->h ? r->h : in;
        return (uint64_t)(3 * (in * r->w + r->rows * ow) + kernel) * es;
    }
    return (uint64_t)(r->h * r->w + oh * ow + kernel - r->short_by) * es;
}

static void *row_image(const band_row *r, gpuws_dtype dt, uint64_t seed)
{
    const size_t n = r->h * r->w;
    double *x = random_values(n, seed);
    if (r->nan_pixels) {
        const size_t step = r->rows ? r->rows : 3;
        for (size_t y = 0; y < r->h; y++)
            if (y % step == 0 || y % step == step - 1) x[y * r->w + (y * 7) % r->w] = NAN;
        x[(r->h / 2) * r->w + r->w / 2] = NAN;
    }
    void *p = to_dtype(x, n, dt);
    free(x);
    return p;
}

/* The in-core result on the same target. */
static void *in_core(gpuws_context *ctx, gpuws_dtype dt, const band_row *r, const gpuws_convolve2d_options *o,
                     const void *image, const void *kernel, size_t no)
{
    const size_t es = gpuws_dtype_size(dt);
    gpuws_buffer *bi = test_buffer_from(ctx, image, r->h * r->w * es),
                 *bk = test_buffer_from(ctx, kernel, r->kh * r->kw * es), *bo = test_buffer(ctx, no * es);
    TEST_OK(gpuws_convolve2d(NULL, dt, bi, r->h, r->w, 0, bk, r->kh, r->kw, o, bo));
    void *got = test_download(bo, no * es);
    gpuws_buffer_destroy(bi);
    gpuws_buffer_destroy(bk);
    gpuws_buffer_destroy(bo);
    return got;
}

typedef struct {
    size_t calls, last_band, last_rows, bands, out_rows;
    bool in_order;
} progress_log;

static void on_band(void *user, size_t band, size_t bands, size_t rows_done, size_t out_rows)
{
    progress_log *l = user;
    if (band != l->calls || (l->calls && rows_done <= l->last_rows)) l->in_order = false;
    l->calls++, l->last_band = band, l->last_rows = rows_done, l->bands = bands, l->out_rows = out_rows;
}

/* What a run of a table row needs: its output shape, the in-core options and the banded ones (the row's budget, a
 * progress log), the image, the kernel and the in-core result on the same target (want). */
typedef struct {
    const band_row *r;
    size_t es, oh, ow, no;
    gpuws_convolve2d_options o;
    gpuws_convolve2d_host_options ho;
    progress_log log;
    void *image, *kernel, *want;
} row_run;

static void row_run_start(row_run *run, gpuws_context *ctx, gpuws_dtype dt, size_t row)
{
    const band_row *r = &rows[row];
    run->r = r;
    run->es = gpuws_dtype_size(dt);
    TEST_OK(gpuws_convolve2d_output_shape(r->h, r->w, r->kh, r->kw, r->mode, &run->oh, &run->ow));
    run->no = run->oh * run->ow;
    run->o = (gpuws_convolve2d_options)GPUWS_CONVOLVE2D_OPTIONS_INIT;
    run->o.mode = r->mode, run->o.boundary = r->boundary, run->o.fill_value = r->fill;
    run->ho = (gpuws_convolve2d_host_options)GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    run->ho.mode = r->mode, run->ho.boundary = r->boundary, run->ho.fill_value = r->fill;
    run->ho.max_device_bytes = row_budget(r, run->oh, run->ow, run->es);
    run->log = (progress_log){ 0, 0, 0, 0, 0, true };
    run->ho.progress = on_band, run->ho.progress_user = &run->log;
    run->image = row_image(r, dt, 0xba4d + row);
    double *k = random_values(r->kh * r->kw, 0x6e71 + row);
    run->kernel = to_dtype(k, r->kh * r->kw, dt);
    free(k);
    run->want = in_core(ctx, dt, r, &run->o, run->image, run->kernel, run->no);
}

static void row_run_end(row_run *run) { free(run->image), free(run->kernel), free(run->want); }

/* Every row of the table on every target, in f32 and f64. */
static struct criterion_test_params every_row(void)
{
    static band_case cases[NTARGETS * 2 * NROWS];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (int d = 0; d < 2; d++)
            for (size_t r = 0; r < NROWS; r++) cases[k++] = (band_case){ targets[t], d ? GPUWS_F64 : GPUWS_F32, r };
    return cr_make_param_array(band_case, cases, k);
}

ParameterizedTestParameters(convolve2d_bands, bit_identical_to_in_core_for_any_banding) { return every_row(); }

ParameterizedTest(band_case *c, convolve2d_bands, bit_identical_to_in_core_for_any_banding)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dt);
    row_run run;
    row_run_start(&run, ctx, c->dt, c->row);
    const band_row *r = run.r;
    const size_t es = run.es, oh = run.oh, ow = run.ow, no = run.no;

    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_convolve2d_host_bands(ctx, c->dt, r->h, r->w, r->kh, r->kw, &run.ho, &band_rows, &bands));
    cr_assert_eq(bands, r->bands, "%s: %zu bands of %zu rows, want %zu bands", r->name, bands, band_rows, r->bands);
    cr_assert_eq((oh + band_rows - 1) / band_rows, bands, "%s: %zu rows per band do not make %zu bands", r->name,
                 band_rows, bands);

    unsigned char *got = malloc(no * es + TEST_GUARD_BYTES);
    cr_assert_not_null(got);
    memset(got, 0xA5, no * es + TEST_GUARD_BYTES);
    TEST_OK(gpuws_convolve2d_host(ctx, c->dt, run.image, r->h, r->w, 0, run.kernel, r->kh, r->kw, &run.ho, got));
    for (size_t i = 0; i < no * es; i++)
        if (got[i] != ((unsigned char *)run.want)[i])
            cr_assert_fail("%s on %s (%s, %zu bands of %zu rows): byte %zu (output %zu, row %zu) differs from in-core",
                           r->name, target_name(&c->t), gpuws_dtype_name(c->dt), bands, band_rows, i, i / es,
                           i / es / ow);
    for (size_t i = 0; i < TEST_GUARD_BYTES; i++)
        cr_assert_eq(got[no * es + i], 0xA5, "%s: wrote past the output", r->name);
    const progress_log *log = &run.log;
    cr_assert(log->in_order, "%s: progress out of order", r->name);
    cr_assert_eq(log->calls, bands, "%s: %zu progress calls for %zu bands", r->name, log->calls, bands);
    cr_assert_eq(log->last_rows, oh, "%s: progress ended at %zu of %zu rows", r->name, log->last_rows, oh);
    cr_assert_eq(log->bands, bands);
    cr_assert_eq(log->out_rows, oh);
    row_run_end(&run);
    free(got);
    gpuws_context_destroy(ctx);
}

/* A strided host image (row_stride > width) gives what the packed one gives. */
ParameterizedTestParameters(convolve2d_bands, strided_host_image_matches_packed)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d_bands, strided_host_image_matches_packed)
{
    gpuws_context *ctx = open_target(t);
    const size_t h = 29, w = 13, stride = 20, kh = 5, kw = 3, oh = h, ow = w;
    double *x = random_values(h * stride, 11), *k = random_values(kh * kw, 12);
    float *strided = to_dtype(x, h * stride, GPUWS_F32), *kernel = to_dtype(k, kh * kw, GPUWS_F32);
    float *packed = malloc(h * w * sizeof *packed), *a = malloc(oh * ow * sizeof *a), *b = malloc(oh * ow * sizeof *b);
    cr_assert(packed && a && b);
    for (size_t y = 0; y < h; y++) memcpy(packed + y * w, strided + y * stride, w * sizeof *packed);
    gpuws_convolve2d_host_options ho = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    ho.mode = GPUWS_CONVOLVE_SAME, ho.boundary = GPUWS_BOUNDARY_SYMM;
    ho.max_device_bytes = 3 * ((4 + kh - 1) * w + 4 * ow) * sizeof(float) + kh * kw * sizeof(float);
    TEST_OK(gpuws_convolve2d_host(ctx, GPUWS_F32, strided, h, w, stride, kernel, kh, kw, &ho, a));
    TEST_OK(gpuws_convolve2d_host(ctx, GPUWS_F32, packed, h, w, 0, kernel, kh, kw, &ho, b));
    cr_assert(memcmp(a, b, oh * ow * sizeof *a) == 0, "%s: strided and packed images differ", target_name(t));
    free(x), free(k), free(strided), free(kernel), free(packed), free(a), free(b);
    gpuws_context_destroy(ctx);
}

/* With no budget the device's free memory decides: a small image runs in one band (in-core). */
ParameterizedTestParameters(convolve2d_bands, default_budget_runs_small_images_in_core)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d_bands, default_budget_runs_small_images_in_core)
{
    gpuws_context *ctx = open_target(t);
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_convolve2d_host_bands(ctx, GPUWS_F32, 100, 100, 7, 7, NULL, &band_rows, &bands));
    cr_assert_eq(bands, 1);
    cr_assert_eq(band_rows, 106);
    gpuws_context_destroy(ctx);
}

/* Several devices: the bands go round-robin over ctx and two more contexts (here of one device, which the call
 * cannot tell from several); every row of the table gives the in-core bytes, the progress still in band order. */
ParameterizedTestParameters(convolve2d_bands, several_devices_give_the_in_core_bytes)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d_bands, several_devices_give_the_in_core_bytes)
{
    gpuws_context *ctx = open_target(t), *more[2] = { open_target(t), open_target(t) };
    const gpuws_dtype dt = GPUWS_F32;
    for (size_t i = 0; i < NROWS; i++) {
        row_run run;
        row_run_start(&run, ctx, dt, i);
        const band_row *r = run.r;
        const size_t nbytes = run.no * run.es;
        run.ho.more_contexts = more, run.ho.num_more_contexts = 2;
        unsigned char *got = malloc(nbytes);
        cr_assert_not_null(got);
        memset(got, 0xA5, nbytes);
        size_t band_rows, bands;
        TEST_OK(gpuws_convolve2d_host_bands(ctx, dt, r->h, r->w, r->kh, r->kw, &run.ho, &band_rows, &bands));
        TEST_OK(gpuws_convolve2d_host(ctx, dt, run.image, r->h, r->w, 0, run.kernel, r->kh, r->kw, &run.ho, got));
        cr_assert(memcmp(got, run.want, nbytes) == 0, "%s on %s over 3 devices (%zu bands): differs from in-core",
                  r->name, target_name(t), bands);
        const progress_log *log = &run.log;
        cr_assert(log->in_order && log->calls == bands && log->last_rows == run.oh,
                  "%s: %zu progress calls (in order: %d) for %zu bands, ending at row %zu of %zu", r->name, log->calls,
                  log->in_order, bands, log->last_rows, run.oh);
        row_run_end(&run);
        free(got);
    }
    gpuws_context_destroy(more[1]);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* With several devices an image that fits one is still split, three bands or more a device (no band under 64
 * output rows), so that every device works; alone, it is one band. */
ParameterizedTestParameters(convolve2d_bands, several_devices_split_an_image_that_fits_one)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d_bands, several_devices_split_an_image_that_fits_one)
{
    gpuws_context *ctx = open_target(t), *more[1] = { open_target(t) };
    gpuws_convolve2d_host_options ho = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    ho.mode = GPUWS_CONVOLVE_SAME;
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_convolve2d_host_bands(ctx, GPUWS_F32, 1000, 300, 5, 5, &ho, &band_rows, &bands));
    cr_assert(bands == 1 && band_rows == 1000, "one device: %zu bands of %zu rows", bands, band_rows);
    ho.more_contexts = more, ho.num_more_contexts = 1;
    TEST_OK(gpuws_convolve2d_host_bands(ctx, GPUWS_F32, 1000, 300, 5, 5, &ho, &band_rows, &bands));
    cr_assert(bands == 6 && band_rows == 167, "two devices: %zu bands of %zu rows, want 6 of 167", bands, band_rows);
    TEST_OK(gpuws_convolve2d_host_bands(ctx, GPUWS_F32, 200, 300, 5, 5, &ho, &band_rows, &bands));
    cr_assert(bands == 4 && band_rows == 64, "200 rows on two devices: %zu bands of %zu rows, want 4 of 64", bands,
              band_rows);
    TEST_OK(gpuws_convolve2d_host_bands(ctx, GPUWS_F32, 50, 300, 5, 5, &ho, &band_rows, &bands));
    cr_assert(bands == 1 && band_rows == 50, "50 rows on two devices: %zu bands of %zu rows", bands, band_rows);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* Pinned staging is kept with the context for the next call (gpuws__staging_take / _give): a block given back is
 * handed out again for a request it covers (not more than twice its size), within the staging_keep_mib knob; with
 * the knob at 0 nothing is kept. Results are those of a fresh context: the banded rows above run with it. */
BACKEND_TEST(convolve2d_bands, staging_is_kept_for_the_next_call)
{
    gpuws_context *ctx = test_open(*kind);
    test_tune(ctx, "staging_keep_mib", "1");
    void *a, *b, *c;
    size_t na, nb, nc;
    TEST_OK(gpuws__staging_take(ctx, 600 << 10, &a, &na));
    cr_assert_eq(na, 600 << 10);
    gpuws__staging_give(ctx, a, na);
    TEST_OK(gpuws__staging_take(ctx, 500 << 10, &b, &nb)); /* covered: the kept block */
    cr_assert(b == a && nb == na, "a kept block of %zu bytes was not handed out again", na);
    TEST_OK(gpuws__staging_take(ctx, 600 << 10, &c, &nc)); /* none kept now: a new one */
    cr_assert(c != b);
    gpuws__staging_give(ctx, b, nb);
    gpuws__staging_give(ctx, c, nc);                       /* past the knob's 1 MiB: freed, not kept */
    TEST_OK(gpuws__staging_take(ctx, 200 << 10, &a, &na)); /* less than half the kept block: a new one */
    cr_assert(a != b && na == 200 << 10);
    gpuws__staging_give(ctx, a, na);
    test_tune(ctx, "staging_keep_mib", "0");
    gpuws__staging_release(ctx);
    TEST_OK(gpuws__staging_take(ctx, 600 << 10, &a, &na));
    gpuws__staging_give(ctx, a, na); /* knob 0: freed */
    gpuws_context_destroy(ctx);
}

/* ---- pinned caller memory: transfers straight from and into it ---- */

/* CUDA and OpenCL copy the context's own gpuws_host_alloc memory as it is; the CPU backend has no transfer to spare
 * a copy for and always stages. */
static bool transfers_direct(const target *t) { return t->backend != GPUWS_BACKEND_CPU; }

static size_t row_named(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (!strcmp(rows[i].name, name)) return i;
    cr_assert_fail("no row %s", name);
    return 0;
}

typedef struct {
    target t;
    size_t row;
} pinned_case;

/* Boundary FILL (VALID is FILL too) reads the image's own rows: pinned, a band uploads straight from them. WRAP and
 * SYMM map rows and still stage. Pinned output rows take the download straight. Every combination gives the
 * in-core bytes, nothing past the output written, the progress in band order. */
ParameterizedTestParameters(convolve2d_bands, pinned_caller_memory_transfers_direct)
{
    static const char *const names[] = { "bands_do_not_divide_the_height", "valid_kernel_7x5", "wrap_kernel_7",
                                         "symm_kernel_7_full", "large_bands_copied_by_several_threads" };
    static pinned_case cases[NTARGETS * 5];
    size_t k = 0;
    for (size_t t = 0; t < NTARGETS; t++)
        for (size_t i = 0; i < 5; i++) cases[k++] = (pinned_case){ targets[t], row_named(names[i]) };
    return cr_make_param_array(pinned_case, cases, k);
}

ParameterizedTest(pinned_case *c, convolve2d_bands, pinned_caller_memory_transfers_direct)
{
    setenv("GPUWS_LOG", "debug", 1); /* before the process's first message, which fixes the level */
    gpuws_context *ctx = open_target(&c->t);
    const gpuws_dtype dt = GPUWS_F32;
    row_run run;
    row_run_start(&run, ctx, dt, c->row);
    const band_row *r = run.r;
    const size_t in_bytes = r->h * r->w * run.es, out_bytes = run.no * run.es;
    const bool fill = r->boundary == GPUWS_BOUNDARY_FILL || r->mode == GPUWS_CONVOLVE_VALID;
    unsigned char guard[TEST_GUARD_BYTES];
    memset(guard, 0xA5, sizeof guard);
    for (int sides = 1; sides <= 3; sides++) { /* 1: input pinned, 2: output pinned, 3: both */
        const bool pin_in = sides & 1, pin_out = sides & 2;
        const char *in_name = pin_in ? "pinned" : "pageable", *out_name = pin_out ? "pinned" : "pageable";
        void *image = test_host_bytes(ctx, pin_in, in_bytes);
        memcpy(image, run.image, in_bytes);
        unsigned char *got = test_host_bytes(ctx, pin_out, out_bytes + TEST_GUARD_BYTES);
        run.log = (progress_log){ 0, 0, 0, 0, 0, true };
        test_capture_stderr();
        const gpuws_status st =
            gpuws_convolve2d_host(ctx, dt, image, r->h, r->w, 0, run.kernel, r->kh, r->kw, &run.ho, got);
        const char *text = test_captured_stderr();
        TEST_OK(st);
        const size_t direct_in = transfers_direct(&c->t) && pin_in && fill ? r->bands : 0,
                     direct_out = transfers_direct(&c->t) && pin_out ? r->bands : 0;
        char line[160];
        snprintf(line, sizeof line,
                 "convolve2d_host: device 0: input direct for %zu of %zu steps, output direct for %zu\n", direct_in,
                 r->bands, direct_out);
        cr_assert_eq(test_count(text, line), 1, "%s on %s, input %s, output %s: no line '%s' in: %s", r->name,
                     target_name(&c->t), in_name, out_name, line, text);
        cr_assert(memcmp(got, run.want, out_bytes) == 0, "%s on %s, input %s, output %s: differs from in-core", r->name,
                  target_name(&c->t), in_name, out_name);
        cr_assert(memcmp(got + out_bytes, guard, TEST_GUARD_BYTES) == 0, "%s: wrote past the output", r->name);
        cr_assert(run.log.in_order && run.log.calls == r->bands && run.log.last_rows == run.oh,
                  "%s: %zu progress calls (in order: %d) for %zu bands", r->name, run.log.calls, run.log.in_order,
                  r->bands);
        test_host_bytes_free(ctx, pin_in, image);
        test_host_bytes_free(ctx, pin_out, got);
    }
    row_run_end(&run);
    gpuws_context_destroy(ctx);
}

/* Memory pinned for one context need not be for another: over two devices, each decides for its own bands. The
 * image and output are gpuws_host_alloc'd on ctx: OpenCL knows only a context's own blocks, so the second device
 * stages both; CUDA knows any page-locked memory, so both devices go direct. The bytes are the in-core ones. */
ParameterizedTestParameters(convolve2d_bands, each_device_decides_for_its_own_bands)
{
    return cr_make_param_array(target, targets, NTARGETS);
}

ParameterizedTest(const target *t, convolve2d_bands, each_device_decides_for_its_own_bands)
{
    setenv("GPUWS_LOG", "debug", 1);
    gpuws_context *ctx = open_target(t), *more[1] = { open_target(t) };
    const gpuws_dtype dt = GPUWS_F32;
    row_run run;
    row_run_start(&run, ctx, dt, row_named("bands_do_not_divide_the_height"));
    const band_row *r = run.r;
    const size_t in_bytes = r->h * r->w * run.es, out_bytes = run.no * run.es, per_device = r->bands / 2;
    run.ho.more_contexts = more, run.ho.num_more_contexts = 1;
    void *image = test_host_bytes(ctx, true, in_bytes), *got = test_host_bytes(ctx, true, out_bytes);
    memcpy(image, run.image, in_bytes);
    test_capture_stderr();
    const gpuws_status st =
        gpuws_convolve2d_host(ctx, dt, image, r->h, r->w, 0, run.kernel, r->kh, r->kw, &run.ho, got);
    const char *text = test_captured_stderr();
    TEST_OK(st);
    const size_t direct[2] = { transfers_direct(t) ? per_device : 0,
                               t->backend == GPUWS_BACKEND_CUDA ? per_device : 0 };
    char lines[2][160];
    for (int d = 0; d < 2; d++) {
        snprintf(lines[d], sizeof lines[d], "device %d: input direct for %zu of %zu steps, output direct for %zu\n", d,
                 direct[d], per_device, direct[d]);
        cr_assert_eq(test_count(text, lines[d]), 1, "%s: no line '%s' in: %s", target_name(t), lines[d], text);
    }
    cr_assert(memcmp(got, run.want, out_bytes) == 0, "%s over 2 devices: differs from in-core", target_name(t));
    test_host_bytes_free(ctx, true, image);
    test_host_bytes_free(ctx, true, got);
    row_run_end(&run);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* ---- the separable form: gpuws_convolve2d_separable_host ------------------------------------------------------ */

/* A row's budget for the separable form: the same slots, the factors instead of the kernel, and a band's row sums;
 * or the separable in-core size less short_by elements. */
static uint64_t separable_budget(const band_row *r, size_t oh, size_t ow, size_t es)
{
    const size_t factors = r->kh + r->kw;
    if (r->rows) {
        size_t in = r->rows + r->kh - 1;
        if (r->boundary == GPUWS_BOUNDARY_FILL || r->mode == GPUWS_CONVOLVE_VALID) in = in > r->h ? r->h : in;
        return (uint64_t)(3 * (in * r->w + r->rows * ow) + factors + (r->rows + r->kh - 1) * ow) * es;
    }
    return (uint64_t)(r->h * r->w + oh * ow + factors + (oh + r->kh - 1) * ow - r->short_by) * es;
}

ParameterizedTestParameters(convolve2d_bands, separable_bit_identical_to_in_core_for_any_banding)
{
    return every_row();
}

/* Every row of the table, with the kernel given as two factors (col, row): out is gpuws_convolve2d_separable's
 * in-core result on the same target, bit for bit, in as many bands as the 2-D form takes with the same rows a band
 * (and banded at all where the in-core size is short by an element), the progress in order. Factors longer than 16
 * taps (the wide row) take the two-pass kernels, whose row sums the budget holds. */
ParameterizedTest(band_case *c, convolve2d_bands, separable_bit_identical_to_in_core_for_any_banding)
{
    gpuws_context *ctx = open_target(&c->t);
    test_require_dtype(ctx, c->dt);
    const band_row *r = &rows[c->row];
    const size_t es = gpuws_dtype_size(c->dt);
    size_t oh, ow;
    TEST_OK(gpuws_convolve2d_output_shape(r->h, r->w, r->kh, r->kw, r->mode, &oh, &ow));
    const size_t no = oh * ow;
    void *image = row_image(r, c->dt, 0x5e9a + c->row);
    double *fc = random_values(r->kh, 0xc01 + c->row), *fr = random_values(r->kw, 0x40e + c->row);
    void *col = to_dtype(fc, r->kh, c->dt), *row = to_dtype(fr, r->kw, c->dt);
    free(fc), free(fr);
    gpuws_convolve2d_options o = GPUWS_CONVOLVE2D_OPTIONS_INIT;
    o.mode = r->mode, o.boundary = r->boundary, o.fill_value = r->fill;
    gpuws_buffer *bi = test_buffer_from(ctx, image, r->h * r->w * es), *bc = test_buffer_from(ctx, col, r->kh * es),
                 *br = test_buffer_from(ctx, row, r->kw * es), *bo = test_buffer(ctx, no * es);
    TEST_OK(gpuws_convolve2d_separable(NULL, c->dt, bi, r->h, r->w, 0, bc, r->kh, br, r->kw, &o, bo));
    unsigned char *want = test_download(bo, no * es);
    gpuws_convolve2d_host_options ho = GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    ho.mode = r->mode, ho.boundary = r->boundary, ho.fill_value = r->fill;
    ho.max_device_bytes = separable_budget(r, oh, ow, es);
    progress_log log = { 0, 0, 0, 0, 0, true };
    ho.progress = on_band, ho.progress_user = &log;
    unsigned char *got = malloc(no * es + TEST_GUARD_BYTES);
    cr_assert_not_null(got);
    memset(got, 0xA5, no * es + TEST_GUARD_BYTES);
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_convolve2d_separable_host_bands(ctx, c->dt, r->h, r->w, r->kh, r->kw, &ho, &band_rows, &bands));
    TEST_OK(gpuws_convolve2d_separable_host(ctx, c->dt, image, r->h, r->w, 0, col, r->kh, row, r->kw, &ho, got));
    cr_assert_eq(log.bands, bands, "%s: %zu bands run, separable_host_bands says %zu", r->name, log.bands, bands);
    if (r->rows) cr_assert_eq(log.bands, r->bands, "%s: %zu bands, want %zu", r->name, log.bands, r->bands);
    else
        cr_assert_eq(log.bands > 1, r->short_by > 0, "%s: %zu bands with the in-core size short by %zu", r->name,
                     log.bands, r->short_by);
    for (size_t i = 0; i < no * es; i++)
        if (got[i] != want[i])
            cr_assert_fail("%s on %s (%s, %zu bands): byte %zu (output %zu, row %zu) differs from in-core", r->name,
                           target_name(&c->t), gpuws_dtype_name(c->dt), log.bands, i, i / es, i / es / ow);
    for (size_t i = 0; i < TEST_GUARD_BYTES; i++)
        cr_assert_eq(got[no * es + i], 0xA5, "%s: wrote past the output", r->name);
    cr_assert(log.in_order && log.calls == log.bands && log.last_rows == oh, "%s: progress", r->name);
    gpuws_buffer_destroy(bi), gpuws_buffer_destroy(bc), gpuws_buffer_destroy(br), gpuws_buffer_destroy(bo);
    free(image), free(col), free(row), free(want), free(got);
    gpuws_context_destroy(ctx);
}
