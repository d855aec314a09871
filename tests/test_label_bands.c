/* label_host: host masks of any size labelled through the device in row bands (out-of-core), on every backend;
 * gpuws_label in slabs.
 *
 * Truth: SciPy's golden files (every one of them, in bands of 1, 3 and 7 rows: one-row and one-column images,
 * a spiral, a comb, a checkerboard, all ones, all zeros), and the in-core gpuws_label on the same backend, byte for
 * byte with the same N, for the table below: components that span three bands or more (a percolating random mask,
 * spirals, U shapes, nested Us, a comb whose teeth meet only in the last band), 4- and 8-connectivity, sources on band
 * borders (pairs across a border, diagonal pairs that touch only with 8-connectivity, single pixels on a band's first
 * and last rows), an image one row too tall for the in-core budget, band counts that do not divide the height, bands
 * of one row, one-row and one-column images, one and two slots, all-zero and all-one masks, and bands of megabytes
 * (the host's copies on several threads). The band count each budget gives is part of the specification
 * (gpuws_label_host_bands): a slot of r rows holds r x width bytes of mask and r x width int32 labels, three slots
 * (fewer when fewer fit) plus gpuws_label's chunk counts, 4 x (ceil(r x width / LABEL_CHUNK) + 1) bytes.
 *
 * From a mask and into labels in memory pinned for the device (gpuws_host_alloc), either or both, the bands go
 * straight (no host copy through staging; pass 2 numbered on the device): the same bytes as in-core for rows of the
 * table, the debug line's counts of direct steps, a strided mask still staged, and two devices each deciding for
 * its own steps.
 *
 * gpuws_label on device buffers of more than 2^31 - 1 pixels (label_slab_pixels; lowered here) labels slabs of whole
 * rows inside the caller's buffers and joins them as the bands are joined: the same truth for the same goldens and
 * table, in slabs of the band rows (one row, counts that do not divide the height, slabs that start off an 8-byte
 * boundary), and on a GPU with the memory for it, 2^31 + 2^16 pixels against label_host. */
#include "label_support.h"
#include "label/label_layout.h"

#include <pthread.h>
#include <unistd.h>

/* The budget of `slots` slots of r rows of width w. */
static uint64_t slots_budget(size_t w, int slots, size_t r)
{
    return 5 * (uint64_t)slots * r * w + 4 * (((uint64_t)r * w + LABEL_CHUNK - 1) / LABEL_CHUNK + 1);
}

typedef struct {
    size_t calls, passes, bands, rows, last_rows;
    bool in_order;
} progress_log;

/* The knob label_host_passes as the test last set it on a context (NULL: auto). */
static const char *pass_knob;

static void set_passes(gpuws_context *ctx, const char *value)
{
    test_tune(ctx, "label_host_passes", value);
    pass_knob = value;
}

/* The passes over more than one band: the knob's, else by default one where every device is a CPU (the labelling
 * there costs more than mapping the labels in place), two otherwise. */
static size_t passes_over_bands(gpuws_context *ctx, gpuws_context *const *more, size_t num_more)
{
    if (pass_knob) return strcmp(pass_knob, "one") ? 2 : 1;
    for (size_t d = 0; d <= num_more; d++) {
        gpuws_device_info info;
        TEST_OK(gpuws_context_get_device_info(d ? more[d - 1] : ctx, &info));
        if (info.type != GPUWS_DEVICE_CPU) return 2;
    }
    return 1;
}

/* Pass 1 then pass 2 (or one pass), each band in order, rows_done growing to the height in each pass. */
static void on_band(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done, size_t rows)
{
    progress_log *l = user;
    const size_t want_pass = l->bands ? l->calls / l->bands + 1 : 1, want_band = l->bands ? l->calls % l->bands : 0;
    if ((l->calls && (passes != (int)l->passes || bands != l->bands || rows != l->rows)) || (size_t)pass != want_pass ||
        band != want_band || (band > 0 && rows_done <= l->last_rows) || rows_done > rows)
        l->in_order = false;
    l->calls++, l->passes = (size_t)passes, l->bands = bands, l->rows = rows, l->last_rows = rows_done;
}

/* gpuws_label_host on ctx and the num_more contexts `more` into poisoned, guarded host memory; asserts the band
 * count, the guard and the progress calls. */
static int32_t *label_in_bands_on(gpuws_context *ctx, gpuws_context *const *more, size_t num_more, const uint8_t *mask,
                                  size_t w, size_t h, int conn, uint64_t budget, size_t want_bands, size_t *n,
                                  const char *what)
{
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = budget;
    o.more_contexts = more, o.num_more_contexts = num_more;
    progress_log log = { 0, 0, 0, 0, 0, true };
    o.progress = on_band, o.progress_user = &log;
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_label_host_bands(ctx, w, h, &o, &band_rows, &bands));
    cr_assert_eq(bands, want_bands, "%s: %zu bands of %zu rows, want %zu bands", what, bands, band_rows, want_bands);
    cr_assert_eq((h + band_rows - 1) / band_rows, bands, "%s: %zu rows per band do not make %zu bands", what, band_rows,
                 bands);
    const size_t bytes = w * h * sizeof(int32_t);
    unsigned char *got = malloc(bytes + TEST_GUARD_BYTES);
    cr_assert_not_null(got);
    memset(got, 0xA5, bytes + TEST_GUARD_BYTES);
    *n = (size_t)-1;
    TEST_OK(gpuws_label_host(ctx, w, h, mask, 0, conn, &o, (int32_t *)(void *)got, n));
    for (size_t i = 0; i < TEST_GUARD_BYTES; i++) cr_assert_eq(got[bytes + i], 0xA5, "%s: wrote past labels", what);
    cr_assert(log.in_order, "%s: progress out of order", what);
    const size_t passes = bands == 1 ? 1 : passes_over_bands(ctx, more, num_more);
    cr_assert_eq(log.passes, passes, "%s: %zu passes over %zu bands", what, log.passes, bands);
    cr_assert_eq(log.calls, passes * bands, "%s: %zu progress calls for %zu bands", what, log.calls, bands);
    cr_assert_eq(log.last_rows, h, "%s: progress ended at %zu of %zu rows", what, log.last_rows, h);
    return (int32_t *)(void *)got;
}

static int32_t *label_in_bands(gpuws_context *ctx, const uint8_t *mask, size_t w, size_t h, int conn, uint64_t budget,
                               size_t want_bands, size_t *n, const char *what)
{
    return label_in_bands_on(ctx, NULL, 0, mask, w, h, conn, budget, want_bands, n, what);
}

/* gpuws_label with slabs of slab_rows rows (label_slab_pixels = slab_rows x w). */
static int32_t *label_in_slabs(gpuws_context *ctx, const uint8_t *mask, size_t w, size_t h, int conn, size_t slab_rows,
                               size_t *n)
{
    char px[32];
    snprintf(px, sizeof px, "%zu", slab_rows * w);
    test_tune(ctx, "label_slab_pixels", px);
    int32_t *got = run_label(ctx, mask, w, h, conn, n);
    test_tune(ctx, "label_slab_pixels", NULL);
    return got;
}

/* ---- SciPy's goldens in bands ---------------------------------------------------------------------------------- */

static const size_t golden_band_rows[] = { 1, 3, 7 };
#define NGOLDEN_ROWS (sizeof golden_band_rows / sizeof golden_band_rows[0])

typedef struct {
    gpuws_backend_kind backend;
    size_t golden, rows;
} golden_band_case;

ParameterizedTestParameters(label_bands, matches_scipy_golden)
{
    static golden_band_case cases[NGOLDEN * NGOLDEN_ROWS];
    size_t k = 0;
    for (size_t i = 0; i < NGOLDEN; i++)
        for (size_t r = 0; r < NGOLDEN_ROWS; r++) cases[k++] = (golden_band_case){ 0, i, golden_band_rows[r] };
    return TEST_BACKEND_PARAMS(cases, k);
}

ParameterizedTest(golden_band_case *c, label_bands, matches_scipy_golden)
{
    gpuws_context *ctx = test_open(c->backend);
    golden g;
    golden_load(golden_names[c->golden], &g);
    /* three slots of c->rows rows; in-core when that holds the whole image (one-row images, or few rows) */
    const uint64_t budget = slots_budget(g.width, 3, c->rows);
    const size_t bands = budget >= slots_budget(g.width, 1, g.height) ? 1 : (g.height + c->rows - 1) / c->rows;
    char what[128];
    for (int conn = 4; conn <= 8; conn += 4) {
        snprintf(what, sizeof what, "%s %s, bands of %zu rows, connectivity %d", test_backend_name(c->backend),
                 golden_names[c->golden], c->rows, conn);
        size_t n;
        int32_t *got = label_in_bands(ctx, g.mask, g.width, g.height, conn, budget, bands, &n, what);
        cr_assert_eq(n, conn == 4 ? g.n4 : g.n8, "%s: %zu labels, SciPy has %zu", what, n, conn == 4 ? g.n4 : g.n8);
        assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, g.width * g.height, what);
        free(got);
        snprintf(what, sizeof what, "%s %s, slabs of %zu rows, connectivity %d", test_backend_name(c->backend),
                 golden_names[c->golden], c->rows, conn);
        got = label_in_slabs(ctx, g.mask, g.width, g.height, conn, c->rows, &n);
        cr_assert_eq(n, conn == 4 ? g.n4 : g.n8, "%s: %zu labels, SciPy has %zu", what, n, conn == 4 ? g.n4 : g.n8);
        assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, g.width * g.height, what);
        free(got);
    }
    golden_free(&g);
    gpuws_context_destroy(ctx);
}

/* ---- generated masks against the in-core labelling ------------------------------------------------------------- */

typedef enum { PAT_RANDOM, PAT_SPIRAL, PAT_U_SHAPES, PAT_BORDERS, PAT_ZEROS, PAT_ONES } pattern;

typedef struct {
    const char *name;
    size_t w, h;
    pattern pat;
    double density; /* PAT_RANDOM */
    int conn;
    int slots; /* budget: `slots` slots of `rows` rows (slots 1, rows h: exactly in-core) */
    size_t rows;
    size_t bands; /* what the budget gives */
} band_row;

static const band_row rows[] = {
    { "percolating_random_4", 301, 257, PAT_RANDOM, 0.6, 4, 3, 10, 26 },
    { "percolating_random_8", 301, 257, PAT_RANDOM, 0.41, 8, 3, 10, 26 },
    { "dense_random_8", 128, 200, PAT_RANDOM, 0.6, 8, 3, 9, 23 },
    { "spiral_4", 203, 199, PAT_SPIRAL, 0, 4, 3, 6, 34 },
    { "spiral_8", 203, 199, PAT_SPIRAL, 0, 8, 3, 5, 40 },
    { "u_shapes_4", 90, 120, PAT_U_SHAPES, 0, 4, 3, 7, 18 },
    { "u_shapes_8", 90, 120, PAT_U_SHAPES, 0, 8, 3, 4, 30 },
    { "sources_on_band_borders_4", 64, 60, PAT_BORDERS, 0, 4, 3, 6, 10 },
    { "sources_on_band_borders_8", 64, 60, PAT_BORDERS, 0, 8, 3, 6, 10 },
    { "one_row_too_tall_for_in_core", 40, 61, PAT_RANDOM, 0.55, 4, 1, 60, 4 },
    { "bands_do_not_divide_the_height", 50, 101, PAT_RANDOM, 0.5, 8, 3, 7, 15 },
    { "bands_of_one_row", 33, 40, PAT_RANDOM, 0.6, 4, 3, 1, 40 },
    { "one_slot_of_one_row", 20, 30, PAT_RANDOM, 0.6, 8, 1, 1, 30 },
    { "two_slots_of_one_row", 20, 30, PAT_RANDOM, 0.6, 4, 2, 1, 30 },
    { "one_row_image", 1000, 1, PAT_RANDOM, 0.6, 4, 1, 1, 1 },
    { "one_column_image", 1, 300, PAT_RANDOM, 0.6, 8, 3, 7, 43 },
    { "all_zero", 37, 45, PAT_ZEROS, 0, 4, 3, 4, 12 },
    { "all_one", 37, 45, PAT_ONES, 0, 8, 3, 4, 12 },
    { "large_bands_copied_by_several_threads", 1024, 1536, PAT_RANDOM, 0.6, 4, 3, 500, 4 },
    { "fits_exactly_in_core", 30, 30, PAT_RANDOM, 0.6, 4, 1, 30, 1 },
};
#define NROWS (sizeof rows / sizeof rows[0])

/* A square spiral walked inwards, rings two pixels apart: one path that crosses every band border many times, down
 * its right side and up its left. */
static void draw_spiral(uint8_t *m, size_t w, size_t h)
{
    long top = 0, bottom = (long)h - 1, left = 0, right = (long)w - 1, from = 0;
    const long W = (long)w;
    while (top <= bottom && left <= right) {
        for (long x = from; x <= right; x++) m[top * W + x] = 1;
        for (long y = top; y <= bottom; y++) m[y * W + right] = 1;
        for (long x = right; x >= left && bottom > top; x--) m[bottom * W + x] = 1;
        for (long y = bottom; y >= top + 2 && right > left; y--) m[y * W + left] = 1;
        from = left, top += 2, bottom -= 2, left += 2, right -= 2;
    }
}

/* Components that leave a band and come back through bands below: a comb whose teeth (starting on staggered rows)
 * meet only on the last row, nested Us, and upside-down Us whose arms of different lengths meet on the first row. */
static void draw_u_shapes(uint8_t *m, size_t w, size_t h)
{
    const size_t third = w / 3;
    for (size_t x = 1; x < third; x += 3)
        for (size_t y = x % 5; y + 1 < h; y++) m[y * w + x] = 1;
    for (size_t x = 1; x < third; x++) m[(h - 1) * w + x] = 1;
    for (size_t j = 0; j < 4; j++) { /* U j inside U j - 1 */
        const size_t l = third + 1 + 2 * j, r = 2 * third - 2 - 2 * j, top = 2 + 3 * j, bottom = h - 2 - 2 * j;
        for (size_t y = top; y <= bottom; y++) m[y * w + l] = m[(y > top ? y : y + 1) * w + r] = 1;
        for (size_t x = l; x <= r; x++) m[bottom * w + x] = 1;
    }
    for (size_t x = 2 * third + 1; x + 3 < w; x += 6) { /* an upside-down U: arms down to different rows */
        for (size_t y = 0; y < h - 1 - x % 7; y++) m[y * w + x] = 1;
        for (size_t y = 0; y < h / 2 + x % 11; y++) m[y * w + x + 3] = 1;
        for (size_t k = 0; k <= 3; k++) m[x + k] = 1;
    }
}

/* Sources on the borders of bands of r rows: pairs across a border, diagonal pairs (joined with 8-connectivity
 * only), single pixels on a band's first and last rows, and lines through three bands. */
static void draw_borders(uint8_t *m, size_t w, size_t h, size_t r)
{
    for (size_t y = r; y < h; y += r)
        for (size_t x = 0; x + 1 < w; x += 8) {
            m[(y - 1) * w + x] = m[y * w + x] = 1;         /* a pair across the border */
            m[(y - 1) * w + x + 2] = m[y * w + x + 3] = 1; /* a diagonal pair */
            m[y * w + x + 5] = 1;                          /* alone on a band's first row */
            if (x + 7 < w) m[(y - 1) * w + x + 7] = 1;     /* alone on a band's last row */
            if (y + 2 * r < h && x % 16 == 0)
                for (size_t k = y - 1; k < y + 2 * r; k++) m[k * w + x + 1] = 1; /* three bands, joining the pair */
        }
}

static uint8_t *row_mask(const band_row *r, uint64_t seed)
{
    uint8_t *m = calloc(r->w * r->h, 1);
    cr_assert_not_null(m);
    switch (r->pat) {
    case PAT_RANDOM:
        for (size_t i = 0; i < r->w * r->h; i++) m[i] = test_rand_uniform(&seed) < r->density;
        break;
    case PAT_SPIRAL: draw_spiral(m, r->w, r->h); break;
    case PAT_U_SHAPES: draw_u_shapes(m, r->w, r->h); break;
    case PAT_BORDERS: draw_borders(m, r->w, r->h, r->rows); break;
    case PAT_ZEROS: break;
    case PAT_ONES: memset(m, 1, r->w * r->h); break;
    }
    return m;
}

typedef struct {
    gpuws_backend_kind backend;
    size_t row;
} band_case;

ParameterizedTestParameters(label_bands, identical_to_in_core_for_any_banding)
{
    static band_case cases[NROWS];
    for (size_t r = 0; r < NROWS; r++) cases[r] = (band_case){ 0, r };
    return TEST_BACKEND_PARAMS(cases, NROWS);
}

ParameterizedTest(band_case *c, label_bands, identical_to_in_core_for_any_banding)
{
    const band_row *r = &rows[c->row];
    gpuws_context *ctx = test_open(c->backend);
    uint8_t *mask = row_mask(r, 0x1abe1 + c->row);
    char what[128];
    snprintf(what, sizeof what, "%s on %s (connectivity %d)", r->name, test_backend_name(c->backend), r->conn);
    size_t want_n, got_n;
    int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n); /* in-core, the same backend */
    if (r->pat != PAT_ZEROS) cr_assert(want_n > 0, "%s: the mask has no component: the row tests nothing", what);
    /* the default passes for the device, then the other way (knob label_host_passes) */
    for (int k = 0; k < 2; k++) {
        if (k) set_passes(ctx, passes_over_bands(ctx, NULL, 0) == 1 ? "two" : "one");
        char how[160];
        snprintf(how, sizeof how, "%s, %s passes", what, pass_knob ? pass_knob : "default");
        int32_t *got = label_in_bands(ctx, mask, r->w, r->h, r->conn, slots_budget(r->w, r->slots, r->rows), r->bands,
                                      &got_n, how);
        cr_assert_eq(got_n, want_n, "%s: %zu labels, in-core has %zu", how, got_n, want_n);
        assert_same_labels(got, want, r->w, r->w * r->h, how);
        free(got);
    }
    set_passes(ctx, NULL);
    int32_t *got;
    /* gpuws_label in slabs of the band rows */
    got = label_in_slabs(ctx, mask, r->w, r->h, r->conn, r->rows, &got_n);
    cr_assert_eq(got_n, want_n, "%s, in slabs: %zu labels, in-core has %zu", what, got_n, want_n);
    assert_same_labels(got, want, r->w, r->w * r->h, what);
    free(mask);
    free(want);
    free(got);
    gpuws_context_destroy(ctx);
}

/* On a GPU with the memory for it, gpuws_label of device buffers of 65536 x 32769 pixels (2^31 + 2^16: a slab of
 * 32767 rows and one of 2) gives the labels and N of gpuws_label_host (bands of at most 256 rows), for a percolating
 * random mask with 4- and 8-connectivity (components cross every band border and the slab border). It needs 10 GiB
 * of device memory and 19 GiB of host memory, so it skips on CPU devices (the CPU backend and PoCL run the same slab
 * code on the small images above) and on GPUs with less. */
GPU_BACKEND_TEST(label_bands, device_buffers_of_more_than_2_to_the_31_pixels)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    const size_t w = 65536, h = 32769, n = w * h;
    const double host_bytes = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (info.type == GPUWS_DEVICE_CPU || info.global_mem_bytes < 12 * ((uint64_t)1 << 30) ||
        info.max_alloc_bytes < 4 * (uint64_t)n || host_bytes < 32.0 * (1 << 30)) {
        gpuws_context_destroy(ctx);
        cr_skip_test("%s: %s: needs a GPU with 12 GiB (buffers of %zu bytes) and 32 GiB of host memory",
                     test_backend_name(*kind), info.name, 4 * n);
    }
    uint8_t *mask = malloc(n);
    int32_t *want = malloc(n * sizeof *want);
    cr_assert(mask && want);
    for (int conn = 4; conn <= 8; conn += 4) {
        uint64_t seed = 0x2b16 + (uint64_t)conn; /* xorshift64: eight pixels a draw, each foreground at 0.59 or 0.41 */
        const unsigned below = conn == 4 ? 151 : 105;
        for (size_t i = 0; i < n; i += 8) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            for (size_t j = 0; j < 8 && i + j < n; j++) mask[i + j] = ((seed >> (8 * j)) & 0xff) < below;
        }
        size_t want_n, got_n = (size_t)-1;
        TEST_OK(gpuws_label_host(ctx, w, h, mask, 0, conn, NULL, want, &want_n));
        gpuws_buffer *m = test_buffer_from(ctx, mask, n), *l = test_buffer(ctx, n * sizeof(int32_t));
        TEST_OK(gpuws_label(NULL, w, h, m, conn, l, &got_n));
        cr_assert_eq(got_n, want_n, "connectivity %d: %zu labels, label_host has %zu", conn, got_n, want_n);
        int32_t *got = test_download(l, n * sizeof(int32_t));
        test_check_guard(l, n * sizeof(int32_t), "labels");
        char what[64];
        snprintf(what, sizeof what, "2^31 + 2^16 pixels, connectivity %d", conn);
        assert_same_labels(got, want, w, n, what);
        free(got);
        gpuws_buffer_destroy(m);
        gpuws_buffer_destroy(l);
    }
    free(mask);
    free(want);
    gpuws_context_destroy(ctx);
}

/* ---- strides, the default budget, images of 2^31 pixels -------------------------------------------------------- */

/* A mask with a row stride larger than its width gives what the packed mask gives; the padding is never read as
 * foreground (it is all ones here). */
BACKEND_TEST(label_bands, strided_mask_matches_packed)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t w = 29, h = 41, stride = 40;
    uint8_t *strided = malloc(h * stride), *packed = malloc(w * h);
    int32_t *a = malloc(w * h * 4), *b = malloc(w * h * 4);
    cr_assert(strided && packed && a && b);
    memset(strided, 1, h * stride);
    uint64_t seed = 77;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) strided[y * stride + x] = packed[y * w + x] = test_rand_uniform(&seed) < 0.55;
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = slots_budget(w, 3, 4);
    size_t na, nb;
    TEST_OK(gpuws_label_host(ctx, w, h, strided, stride, 8, &o, a, &na));
    TEST_OK(gpuws_label_host(ctx, w, h, packed, 0, 8, &o, b, &nb));
    cr_assert_eq(na, nb);
    assert_same_labels(a, b, w, w * h, "strided against packed");
    free(strided), free(packed), free(a), free(b);
    gpuws_context_destroy(ctx);
}

/* A strided mask that fits as one band (packed before its upload) gives what gpuws_label gives on the packed mask,
 * and the padding between the rows is never read as foreground (it is all ones here). */
BACKEND_TEST(label_bands, strided_mask_in_one_band_matches_in_core)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t w = 53, h = 37, stride = 64;
    uint8_t *strided = malloc(h * stride), *packed = malloc(w * h);
    cr_assert(strided && packed);
    memset(strided, 1, h * stride);
    uint64_t seed = 91;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) strided[y * stride + x] = packed[y * w + x] = test_rand_uniform(&seed) < 0.55;
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_label_host_bands(ctx, w, h, NULL, &band_rows, &bands));
    cr_assert_eq(bands, 1);
    int32_t *got = malloc(w * h * 4);
    cr_assert_not_null(got);
    for (int conn = 4; conn <= 8; conn += 4) {
        size_t n = (size_t)-1, n_ref;
        TEST_OK(gpuws_label_host(ctx, w, h, strided, stride, conn, NULL, got, &n));
        int32_t *ref = run_label(ctx, packed, w, h, conn, &n_ref);
        cr_assert_eq(n, n_ref, "connectivity %d: N %zu, in-core %zu", conn, n, n_ref);
        assert_same_labels(got, ref, w, w * h, "strided in one band against in-core");
        free(ref);
    }
    free(got);
    free(strided), free(packed);
    gpuws_context_destroy(ctx);
}

/* With no budget the device's free memory decides: a small image is one band (in-core). */
BACKEND_TEST(label_bands, default_budget_runs_small_images_in_core)
{
    gpuws_context *ctx = test_open(*kind);
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_label_host_bands(ctx, 100, 100, NULL, &band_rows, &bands));
    cr_assert_eq(bands, 1);
    cr_assert_eq(band_rows, 100);
    gpuws_context_destroy(ctx);
}

/* More than 2^31 pixels are legal: however large the budget, a band holds fewer than 2^31 pixels (gpuws_label's
 * int32 indices), no more labels than the device's largest buffer, and no more than a staging buffer's 64 MiB. */
BACKEND_TEST(label_bands, images_of_2_to_the_31_pixels_and_more_go_in_bands)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info info;
    TEST_OK(gpuws_context_get_device_info(ctx, &info));
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = (uint64_t)1 << 50;
    const size_t w = 65536, h = 32769; /* 2^31 + 2^16 pixels */
    size_t band_rows = 0, bands = 0;
    TEST_OK(gpuws_label_host_bands(ctx, w, h, &o, &band_rows, &bands));
    cr_assert(bands >= 2 && band_rows * w <= INT32_MAX, "%zu bands of %zu rows", bands, band_rows);
    cr_assert(band_rows * w * 4 <= info.max_alloc_bytes, "bands of %zu rows exceed the largest buffer", band_rows);
    /* and no band's labels larger than a staging buffer (64 MiB: 256 rows of 65536 int32) */
    cr_assert(band_rows == 256 || (band_rows + 1) * w * 4 > info.max_alloc_bytes, "bands of %zu rows: more would fit",
              band_rows);
    cr_assert_eq(bands, (h + band_rows - 1) / band_rows);
    gpuws_context_destroy(ctx);
}

/* ---- several devices ------------------------------------------------------------------------------------------- */

/* Bands spread round-robin over two and over three contexts (here of one device, which the call cannot tell from
 * several) give the in-core labels and N for every row of the table, the progress still in order. */
BACKEND_TEST(label_bands, several_devices_give_the_in_core_labels)
{
    gpuws_context *ctx = test_open(*kind), *more[2] = { test_open(*kind), test_open(*kind) };
    for (size_t i = 0; i < NROWS; i++) {
        const band_row *r = &rows[i];
        uint8_t *mask = row_mask(r, 0x1abe1 + i);
        size_t want_n, got_n;
        int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n);
        for (size_t num_more = 1; num_more <= 2; num_more++) {
            char what[160];
            snprintf(what, sizeof what, "%s on %s, %zu devices (connectivity %d)", r->name, test_backend_name(*kind),
                     num_more + 1, r->conn);
            int32_t *got = label_in_bands_on(ctx, more, num_more, mask, r->w, r->h, r->conn,
                                             slots_budget(r->w, r->slots, r->rows), r->bands, &got_n, what);
            cr_assert_eq(got_n, want_n, "%s: %zu labels, in-core has %zu", what, got_n, want_n);
            assert_same_labels(got, want, r->w, r->w * r->h, what);
            free(got);
        }
        free(mask);
        free(want);
    }
    gpuws_context_destroy(more[1]);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* ---- parts held by several callers: gpuws_label_host_reduce ---------------------------------------------------- */

typedef struct {
    test_sum_group *g;
    gpuws_context *ctx;
    const uint8_t *mask;
    int32_t *labels;
    size_t w, rows, part, parts;
    int conn;
    gpuws_status st;
    size_t n;
} label_caller;

static void *label_caller_main(void *arg)
{
    label_caller *c = arg;
    c->st = gpuws_label_host_reduce(c->ctx, c->w, c->rows, c->mask, 0, c->conn, NULL, c->part, c->parts,
                                    test_sum_group_reduce, c->g, c->labels, &c->n);
    return NULL;
}

/* parts callers on threads, each with a slice of rows (the first none, the others uneven); conn_of_last: the last
 * caller's connectivity (another one makes them disagree). */
static void label_in_parts(gpuws_context *ctx, const uint8_t *mask, size_t w, size_t h, int conn, int conn_of_last,
                           size_t parts, int32_t *labels, label_caller *cs)
{
    test_sum_group *g = test_sum_group_new((unsigned)parts, 16 + parts * (2 * w + 2));
    pthread_t t[8];
    size_t at = 0;
    for (size_t p = 0; p < parts; p++) {
        const size_t share = p == 0 ? 0 : p + 1 == parts ? h - at : (h - at) / 3 + 1;
        cs[p] = (label_caller){ .g = g,
                                .ctx = ctx,
                                .mask = mask + at * w,
                                .labels = labels + at * w,
                                .w = w,
                                .rows = share,
                                .part = p,
                                .parts = parts,
                                .conn = p + 1 == parts ? conn_of_last : conn };
        at += share;
        pthread_create(&t[p], NULL, label_caller_main, &cs[p]);
    }
    for (size_t p = 0; p < parts; p++) pthread_join(t[p], NULL);
    test_sum_group_free(g);
}

/* Rows spread between 2, 3 and 4 callers (as MPI ranks hold them): the labels and N of the whole image, on every
 * backend, for the table's components that span parts (spirals, U shapes, a percolating mask, sources on borders). */
BACKEND_TEST(label_bands, parts_held_by_several_callers_give_the_whole_image_labels)
{
    gpuws_context *ctx = test_open(*kind);
    for (size_t i = 0; i < NROWS; i++) {
        const band_row *r = &rows[i];
        if (r->h < 8) continue; /* parts of a few rows each */
        uint8_t *mask = row_mask(r, 0x9a7 + i);
        size_t want_n;
        int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n);
        int32_t *got = malloc(r->w * r->h * sizeof *got);
        cr_assert_not_null(got);
        for (size_t parts = 2; parts <= 4; parts++) {
            label_caller cs[4];
            memset(got, 0xA5, r->w * r->h * sizeof *got);
            label_in_parts(ctx, mask, r->w, r->h, r->conn, r->conn, parts, got, cs);
            char what[160];
            snprintf(what, sizeof what, "%s on %s in %zu parts", r->name, test_backend_name(*kind), parts);
            for (size_t p = 0; p < parts; p++) {
                cr_assert_eq(cs[p].st, GPUWS_OK, "%s: part %zu failed", what, p);
                cr_assert_eq(cs[p].n, want_n, "%s: part %zu says N = %zu, the whole image has %zu", what, p, cs[p].n,
                             want_n);
            }
            assert_same_labels(got, want, r->w, r->w * r->h, what);
        }
        free(mask), free(want), free(got);
    }
    gpuws_context_destroy(ctx);
}

/* Callers that disagree (one says connectivity 8) all fail before any label is written. */
BACKEND_TEST(label_bands, callers_that_disagree_all_fail_and_write_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    const size_t w = 40, h = 30;
    uint8_t mask[40 * 30];
    for (size_t i = 0; i < w * h; i++) mask[i] = (i * 7) % 5 < 3;
    int32_t labels[40 * 30];
    memset(labels, 0xA5, sizeof labels);
    label_caller cs[3];
    label_in_parts(ctx, mask, w, h, 4, 8, 3, labels, cs);
    for (size_t p = 0; p < 3; p++) {
        cr_assert_eq(cs[p].st, GPUWS_ERR_INVALID_ARGUMENT, "part %zu: status %d", p, cs[p].st);
    }
    for (size_t i = 0; i < w * h; i++) cr_assert_eq((uint32_t)labels[i], 0xA5A5A5A5u, "label %zu was written", i);
    gpuws_context_destroy(ctx);
}

/* ---- pinned caller memory: transfers straight from and into it ------------------------------------------------- */

/* CUDA and OpenCL copy the context's own gpuws_host_alloc memory as it is; the CPU backend always stages. */
static bool transfers_direct(gpuws_backend_kind k) { return k != GPUWS_BACKEND_CPU; }

static size_t row_named(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (!strcmp(rows[i].name, name)) return i;
    cr_assert_fail("no row %s", name);
    return 0;
}

/* Row r's mask (row stride `stride`, its padding all ones) labelled by gpuws_label_host on ctx and `more` with the
 * row's budget, from memory pinned for ctx or not into memory pinned for ctx or not; asserts the labels and N are
 * the in-core ones (`want`, want_n) byte for byte and nothing is written past the labels. Returns the debug lines. */
static const char *label_pinned(gpuws_context *ctx, gpuws_context *const *more, size_t num_more, const band_row *r,
                                const uint8_t *mask, size_t stride, bool pin_in, bool pin_out, const int32_t *want,
                                size_t want_n, const char *what)
{
    const size_t px = r->w * r->h, bytes = px * sizeof(int32_t);
    uint8_t *m = test_host_bytes(ctx, pin_in, r->h * stride);
    memset(m, 1, r->h * stride);
    for (size_t y = 0; y < r->h; y++) memcpy(m + y * stride, mask + y * r->w, r->w);
    unsigned char *got = test_host_bytes(ctx, pin_out, bytes + TEST_GUARD_BYTES);
    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = slots_budget(r->w, r->slots, r->rows);
    o.more_contexts = more, o.num_more_contexts = num_more;
    size_t n = (size_t)-1;
    test_capture_stderr();
    const gpuws_status st = gpuws_label_host(ctx, r->w, r->h, m, stride, r->conn, &o, (int32_t *)(void *)got, &n);
    const char *text = test_captured_stderr();
    TEST_OK(st);
    cr_assert_eq(n, want_n, "%s: %zu labels, in-core has %zu", what, n, want_n);
    cr_assert(memcmp(got, want, bytes) == 0, "%s: differs from in-core", what);
    for (size_t i = 0; i < TEST_GUARD_BYTES; i++) cr_assert_eq(got[bytes + i], 0xA5, "%s: wrote past labels", what);
    test_host_bytes_free(ctx, pin_in, m);
    test_host_bytes_free(ctx, pin_out, got);
    return text;
}

ParameterizedTestParameters(label_bands, pinned_caller_memory_transfers_direct)
{
    static const char *const names[] = { "percolating_random_4",
                                         "percolating_random_8",
                                         "spiral_4",
                                         "spiral_8",
                                         "u_shapes_4",
                                         "u_shapes_8",
                                         "sources_on_band_borders_8",
                                         "bands_do_not_divide_the_height",
                                         "bands_of_one_row",
                                         "one_slot_of_one_row",
                                         "all_zero",
                                         "large_bands_copied_by_several_threads" };
    static band_case cases[sizeof names / sizeof names[0]];
    const size_t k = sizeof names / sizeof names[0];
    for (size_t i = 0; i < k; i++) cases[i] = (band_case){ 0, row_named(names[i]) };
    return TEST_BACKEND_PARAMS(cases, k);
}

/* A packed mask in memory pinned for the device uploads straight from it in both passes, and pass 2 downloads
 * straight into labels pinned for the device, numbered on the device first (pass 1's border rows still come back
 * through staging): the labels and N are the in-core ones byte for byte either way, and the debug line says how many
 * of the 2 x bands steps went direct. The CPU backend always stages. */
ParameterizedTest(band_case *c, label_bands, pinned_caller_memory_transfers_direct)
{
    setenv("GPUWS_LOG", "debug", 1); /* before the process's first message, which fixes the level */
    const band_row *r = &rows[c->row];
    gpuws_context *ctx = test_open(c->backend);
    set_passes(ctx, "two"); /* the direct transfers of the two passes (one pass always downloads into labels) */
    uint8_t *mask = row_mask(r, 0x1abe1 + c->row);
    size_t want_n;
    int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n);
    const bool direct = transfers_direct(c->backend);
    for (int sides = 1; sides <= 3; sides++) { /* 1: mask pinned, 2: labels pinned, 3: both */
        const bool pin_in = sides & 1, pin_out = sides & 2;
        char what[160], line[160];
        snprintf(what, sizeof what, "%s on %s, mask %s, labels %s", r->name, test_backend_name(c->backend),
                 pin_in ? "pinned" : "pageable", pin_out ? "pinned" : "pageable");
        const char *text = label_pinned(ctx, NULL, 0, r, mask, r->w, pin_in, pin_out, want, want_n, what);
        snprintf(line, sizeof line, "label_host: device 0: input direct for %zu of %zu steps, output direct for %zu\n",
                 direct && pin_in ? 2 * r->bands : 0, 2 * r->bands, direct && pin_out ? r->bands : 0);
        cr_assert_eq(test_count(text, line), 1, "%s: no line '%s' in: %s", what, line, text);
    }
    free(mask);
    free(want);
    gpuws_context_destroy(ctx);
}

/* A strided mask is staged (packed) whatever its memory, while pinned labels still take pass 2 straight. */
BACKEND_TEST(label_bands, strided_pinned_mask_is_staged)
{
    setenv("GPUWS_LOG", "debug", 1);
    const band_row *r = &rows[row_named("bands_do_not_divide_the_height")];
    gpuws_context *ctx = test_open(*kind);
    set_passes(ctx, "two");
    uint8_t *mask = row_mask(r, 0x57);
    size_t want_n;
    int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n);
    char line[160];
    const char *text = label_pinned(ctx, NULL, 0, r, mask, r->w + 13, true, true, want, want_n, "strided, pinned");
    snprintf(line, sizeof line, "label_host: device 0: input direct for 0 of %zu steps, output direct for %zu\n",
             2 * r->bands, transfers_direct(*kind) ? r->bands : 0);
    cr_assert_eq(test_count(text, line), 1, "no line '%s' in: %s", line, text);
    free(mask);
    free(want);
    gpuws_context_destroy(ctx);
}

/* Memory pinned for one context need not be for another: over two devices (step t on device t % 2), each decides
 * for its own steps. Mask and labels are gpuws_host_alloc'd on ctx: OpenCL knows only a context's own blocks, so the
 * second device stages both; CUDA knows any page-locked memory, so both go direct. Band counts odd and even; the
 * labels are the in-core ones. */
ParameterizedTestParameters(label_bands, each_device_decides_for_its_own_bands)
{
    static band_case cases[2];
    cases[0] = (band_case){ 0, row_named("bands_do_not_divide_the_height") }; /* 15 bands */
    cases[1] = (band_case){ 0, row_named("spiral_8") };                       /* 40 bands */
    return TEST_BACKEND_PARAMS(cases, 2);
}

ParameterizedTest(band_case *c, label_bands, each_device_decides_for_its_own_bands)
{
    setenv("GPUWS_LOG", "debug", 1);
    const band_row *r = &rows[c->row];
    gpuws_context *ctx = test_open(c->backend), *more[1] = { test_open(c->backend) };
    set_passes(ctx, "two"); /* the knob of the call's first context decides */
    uint8_t *mask = row_mask(r, 0x1abe1 + c->row);
    size_t want_n;
    int32_t *want = run_label(ctx, mask, r->w, r->h, r->conn, &want_n);
    char what[128];
    snprintf(what, sizeof what, "%s on 2 %s devices", r->name, test_backend_name(c->backend));
    const char *text = label_pinned(ctx, more, 1, r, mask, r->w, true, true, want, want_n, what);
    const bool direct[2] = { transfers_direct(c->backend), c->backend == GPUWS_BACKEND_CUDA };
    for (unsigned d = 0; d < 2; d++) {
        size_t steps = 0, pass2 = 0;
        for (size_t t = d; t < 2 * r->bands; t += 2) steps++, pass2 += t >= r->bands;
        char line[160];
        snprintf(line, sizeof line, "label_host: device %u: input direct for %zu of %zu steps, output direct for %zu\n",
                 d, direct[d] ? steps : 0, steps, direct[d] ? pass2 : 0);
        cr_assert_eq(test_count(text, line), 1, "%s: no line '%s' in: %s", what, line, text);
    }
    free(mask);
    free(want);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}
