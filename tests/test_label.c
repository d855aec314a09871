/* label: connected components numbered exactly like scipy.ndimage.label, on every backend.
 *
 * Oracle: golden files written by SciPy (tests/data/make_label_golden.py) for the reference and for every backend,
 * then the reference (checked against SciPy here) for larger and generated images. Labels are integers: every
 * comparison is exact, the label count included. */
#include "label_support.h"
#include "label/label_layout.h"
#include "label/label_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_backend_kind backend;
    size_t golden;
} golden_case;

ParameterizedTestParameters(label_reference, matches_scipy_golden)
{
    static size_t idx[NGOLDEN];
    for (size_t i = 0; i < NGOLDEN; i++) idx[i] = i;
    return cr_make_param_array(size_t, idx, NGOLDEN);
}

ParameterizedTest(size_t *which, label_reference, matches_scipy_golden)
{
    golden g;
    golden_load(golden_names[*which], &g);
    const size_t n = g.width * g.height;
    int32_t *got = malloc((n + 1) * 4);
    cr_assert(got);
    char what[96];
    for (int conn = 4; conn <= 8; conn += 4) {
        size_t count = gpuws_label_ref(g.mask, g.width, g.height, conn, got);
        snprintf(what, sizeof what, "%s, connectivity %d", golden_names[*which], conn);
        cr_assert_eq(count, conn == 4 ? g.n4 : g.n8, "%s: %zu labels, SciPy has %zu", what, count,
                     conn == 4 ? g.n4 : g.n8);
        assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, n, what);
    }
    free(got);
    golden_free(&g);
}

ParameterizedTestParameters(label, matches_scipy_golden)
{
    static golden_case cases[NGOLDEN];
    for (size_t i = 0; i < NGOLDEN; i++) cases[i] = (golden_case){ 0, i };
    return TEST_BACKEND_PARAMS(cases, NGOLDEN);
}

ParameterizedTest(golden_case *c, label, matches_scipy_golden)
{
    gpuws_context *ctx = test_open(c->backend);
    golden g;
    golden_load(golden_names[c->golden], &g);
    char what[128];
    for (int conn = 4; conn <= 8; conn += 4) {
        size_t count;
        int32_t *got = run_label(ctx, g.mask, g.width, g.height, conn, &count);
        snprintf(what, sizeof what, "%s %s, connectivity %d", test_backend_name(c->backend), golden_names[c->golden],
                 conn);
        cr_assert_eq(count, conn == 4 ? g.n4 : g.n8, "%s: %zu labels, SciPy has %zu", what, count,
                     conn == 4 ? g.n4 : g.n8);
        assert_same_labels(got, conn == 4 ? g.labels4 : g.labels8, g.width, g.width * g.height, what);
        free(got);
    }
    golden_free(&g);
    gpuws_context_destroy(ctx);
}

/* A known answer written out by hand (independent of SciPy and of the reference): a U whose arms begin on the
 * first row, so its first pixel comes before an isolated pixel that lies between the arms, and a diagonal pair that
 * is one component with 8-connectivity and two with 4. */
BACKEND_TEST(label, hand_made_known_answer)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 7, H = 4 };
    static const uint8_t mask[H * W] = {
        1, 0, 0, 1, 0, 0, 1, /* */
        1, 0, 1, 0, 0, 1, 0, /* */
        1, 0, 0, 0, 0, 0, 0, /* */
        1, 1, 1, 1, 0, 0, 7, /* any non-zero byte is foreground */
    };
    static const int32_t want4[H * W] = {
        1, 0, 0, 2, 0, 0, 3, /* */
        1, 0, 4, 0, 0, 5, 0, /* */
        1, 0, 0, 0, 0, 0, 0, /* */
        1, 1, 1, 1, 0, 0, 6,
    };
    static const int32_t want8[H * W] = {
        1, 0, 0, 2, 0, 0, 3, /* */
        1, 0, 2, 0, 0, 3, 0, /* */
        1, 0, 0, 0, 0, 0, 0, /* */
        1, 1, 1, 1, 0, 0, 4,
    };
    size_t count;
    int32_t *got = run_label(ctx, mask, W, H, 4, &count);
    cr_assert_eq(count, 6);
    assert_same_labels(got, want4, W, W * H, "4-connectivity");
    free(got);
    got = run_label(ctx, mask, W, H, 8, &count);
    cr_assert_eq(count, 4);
    assert_same_labels(got, want8, W, W * H, "8-connectivity");
    free(got);
    gpuws_context_destroy(ctx);
}

/* ---- every backend against the reference on generated images -------------------------------------------------- */

typedef enum { PAT_RANDOM, PAT_SPIRAL, PAT_SERPENTINE, PAT_STRIPES } pattern;

typedef struct {
    gpuws_backend_kind backend;
    size_t width, height;
    pattern pat;
    double density; /* PAT_RANDOM */
    int conn;
    bool fresh_seed;
} gen_case;

static void make_mask(const gen_case *c, uint8_t *m, uint64_t seed)
{
    const size_t w = c->width, h = c->height;
    memset(m, 0, w * h);
    switch (c->pat) {
    case PAT_RANDOM:
        for (size_t i = 0; i < w * h; i++) m[i] = test_rand_uniform(&seed) < c->density;
        break;
    case PAT_SPIRAL: { /* one path with one-pixel gaps, turning right whenever going on would touch itself */
        long y = 0, x = 0, dy = 0, dx = 1;
        m[0] = 1;
        for (;;) {
            int turns = 0;
            for (; turns < 2; turns++) {
                long ny = y + dy, nx = x + dx, ay = y + 2 * dy, ax = x + 2 * dx;
                bool inside = ny >= 0 && ny < (long)h && nx >= 0 && nx < (long)w;
                bool ahead = ay >= 0 && ay < (long)h && ax >= 0 && ax < (long)w && m[ay * (long)w + ax];
                if (inside && !m[ny * (long)w + nx] && !ahead) {
                    y = ny, x = nx;
                    m[y * (long)w + x] = 1;
                    break;
                }
                long t = dy;
                dy = dx, dx = -t;
            }
            if (turns == 2) break;
        }
        break;
    }
    case PAT_SERPENTINE: /* rows joined alternately at the right and the left end: one path through every tile */
        for (size_t y = 0; y < h; y += 2) memset(m + y * w, 1, w);
        for (size_t y = 1; y < h; y += 2) m[y * w + ((y / 2) % 2 ? 0 : w - 1)] = 1;
        break;
    case PAT_STRIPES: /* vertical lines of a random height, some touching diagonally */
        for (size_t x = 0; x < w; x += 2) {
            size_t len = (size_t)(test_rand_uniform(&seed) * (double)h);
            size_t y0 = (size_t)(test_rand_uniform(&seed) * (double)(h - len));
            for (size_t y = y0; y < y0 + len; y++) m[y * w + x + (y % 5 == 0 && x + 1 < w)] = 1;
        }
        break;
    }
}

ParameterizedTestParameters(label, agrees_with_reference)
{
    static const gen_case shapes[] = {
        { 0, 31, 33, PAT_RANDOM, 0.5, 4, false },     { 0, 33, 31, PAT_RANDOM, 0.5, 8, false },
        { 0, 100003, 1, PAT_RANDOM, 0.7, 4, false },  { 0, 1, 100003, PAT_RANDOM, 0.7, 8, false },
        { 0, 997, 1009, PAT_RANDOM, 0.59, 4, false }, /* near 4-connected percolation: components span many tiles */
        { 0, 997, 1009, PAT_RANDOM, 0.41, 8, false }, /* near 8-connected percolation */
        { 0, 1000, 1000, PAT_RANDOM, 0.2, 4, true },  { 0, 1000, 1000, PAT_RANDOM, 0.55, 8, true },
        { 0, 1023, 1025, PAT_SPIRAL, 0, 4, false },   { 0, 700, 1300, PAT_SERPENTINE, 0, 8, false },
        { 0, 1300, 700, PAT_STRIPES, 0, 4, false },   { 0, 1300, 700, PAT_STRIPES, 0, 8, false },
        { 0, 4096, 4096, PAT_RANDOM, 0.6, 4, false }, /* 2^24 pixels */
    };
    return TEST_BACKEND_PARAMS(shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(gen_case *c, label, agrees_with_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    const size_t n = c->width * c->height;
    uint8_t *mask = malloc(n);
    int32_t *want = malloc(n * 4);
    cr_assert(mask && want);
    make_mask(c, mask, test_seed(c->fresh_seed));
    size_t want_n = gpuws_label_ref(mask, c->width, c->height, c->conn, want), got_n;
    cr_assert(want_n > 0, "the generated image has no component: the case tests nothing");
    int32_t *got = run_label(ctx, mask, c->width, c->height, c->conn, &got_n);
    char what[128];
    snprintf(what, sizeof what, "%s %zux%zu pattern %d, connectivity %d", test_backend_name(c->backend), c->width,
             c->height, (int)c->pat, c->conn);
    cr_assert_eq(got_n, want_n, "%s: %zu labels, the reference has %zu", what, got_n, want_n);
    assert_same_labels(got, want, c->width, n, what);
    free(got);
    free(want);
    free(mask);
    gpuws_context_destroy(ctx);
}

/* ---- repeated runs: the GPU union-find is lock-free, so a lost link would show only now and then --------------- */

/* Names the first pair of neighbouring pixels that the reference joins and `got` keeps apart (the link that went
 * missing), and whether it crosses a tile border (the `merge` pass) or lies inside a tile (`local`). */
static void describe_lost_link(const int32_t *got, const int32_t *want, size_t w, size_t h, int conn, char *out,
                               size_t cap)
{
    static const int d4[][2] = { { 0, -1 }, { -1, 0 } }, d8[][2] = { { 0, -1 }, { -1, 0 }, { -1, -1 }, { -1, 1 } };
    const int(*d)[2] = conn == 8 ? d8 : d4;
    const int nd = conn == 8 ? 4 : 2;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++)
            for (int k = 0; k < nd; k++) {
                const long qy = (long)y + d[k][0], qx = (long)x + d[k][1];
                if (qy < 0 || qx < 0 || qx >= (long)w || !want[y * w + x]) continue;
                const size_t i = y * w + x, q = (size_t)qy * w + (size_t)qx;
                if (want[q] != want[i] || got[q] == got[i]) continue;
                const bool border =
                    (size_t)qy / LABEL_TILE_H != y / LABEL_TILE_H || (size_t)qx / LABEL_TILE_W != x / LABEL_TILE_W;
                snprintf(out, cap, "first lost link: (row %zu, col %zu) - (row %ld, col %ld), %s", y, x, qy, qx,
                         border ? "across a tile border (merge)" : "inside a tile (local)");
                return;
            }
    snprintf(out, cap, "no lost link: the labels differ only in numbering");
}

/* 2^24 pixels near the percolation threshold: one component spans thousands of tiles, so thousands of work-items
 * unite into the same roots at once. Runs GPUWS_TEST_REPEAT times (default 4; 1 on the CPU, which is serial). */
typedef struct {
    gpuws_backend_kind backend;
    int conn;
    double density;
} race_case;

ParameterizedTestParameters(label, repeated_runs_of_a_percolating_image_agree)
{
    static const race_case cases[] = { { 0, 4, 0.6 }, { 0, 8, 0.41 } };
    return TEST_BACKEND_PARAMS(cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(race_case *c, label, repeated_runs_of_a_percolating_image_agree)
{
    gpuws_context *ctx = test_open(c->backend);
    enum { W = 4096, H = 4096 };
    const size_t n = (size_t)W * H;
    uint8_t *mask = malloc(n);
    int32_t *want = malloc(n * 4);
    cr_assert(mask && want);
    uint64_t seed = test_seed(true);
    for (size_t i = 0; i < n; i++) mask[i] = test_rand_uniform(&seed) < c->density;
    const size_t want_n = gpuws_label_ref(mask, W, H, c->conn, want);
    const char *env = getenv("GPUWS_TEST_REPEAT");
    int repeat = env && *env ? atoi(env) : 4;
    if (c->backend == GPUWS_BACKEND_CPU || repeat < 1) repeat = 1;
    int bad = 0;
    char first[192] = "";
    for (int r = 0; r < repeat; r++) {
        size_t got_n;
        int32_t *got = run_label(ctx, mask, W, H, c->conn, &got_n);
        if (got_n != want_n || memcmp(got, want, n * 4) != 0) {
            if (!bad++) {
                char link[160];
                describe_lost_link(got, want, W, H, c->conn, link, sizeof link);
                snprintf(first, sizeof first, "run %d: %zu labels, the reference has %zu; %s", r, got_n, want_n, link);
            }
        }
        free(got);
    }
    cr_assert_eq(bad, 0, "%s connectivity %d: %d of %d runs differ from the reference (%s)",
                 test_backend_name(c->backend), c->conn, bad, repeat, first);
    free(want);
    free(mask);
    gpuws_context_destroy(ctx);
}

/* ---- calls in turn on one stream ------------------------------------------------------------------------------
 * gpuws_label returns once N is known; the label image is complete for the work that follows on the stream (here a
 * read on that stream). The GPU driver keeps its chunk counts and a pinned staging word on the stream between calls:
 * calls on images of other sizes and connectivities in turn must each see nothing of the one before. */
BACKEND_TEST(label, calls_in_turn_on_one_stream_each_agree_with_the_reference)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_stream *s;
    TEST_OK(gpuws_stream_create(ctx, &s));
    static const struct {
        size_t w, h;
        double density;
        int conn;
    } steps[] = { { 1000, 1000, 0.59, 4 },
                  { 333, 517, 0.45, 8 },
                  { 1000, 1000, 0.41, 8 },
                  { 64, 2000, 0.6, 4 },
                  { 1000, 1000, 0.59, 4 } };
    const size_t cap = 1000 * 2000;
    gpuws_buffer *m = test_buffer(ctx, cap), *l = test_buffer(ctx, cap * 4);
    uint8_t *mask = malloc(cap);
    int32_t *want = malloc(cap * 4), *got = malloc(cap * 4);
    cr_assert(mask && want && got);
    uint64_t seed = test_seed(true);
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        const size_t w = steps[k].w, h = steps[k].h, n = w * h;
        for (size_t i = 0; i < n; i++) mask[i] = test_rand_uniform(&seed) < steps[k].density;
        const size_t want_n = gpuws_label_ref(mask, w, h, steps[k].conn, want);
        size_t got_n = (size_t)-1;
        TEST_OK(gpuws_buffer_write_async(s, m, 0, mask, n));
        TEST_OK(gpuws_label(s, w, h, m, steps[k].conn, l, &got_n));
        TEST_OK(gpuws_buffer_read_async(s, l, 0, got, n * 4));
        TEST_OK(gpuws_stream_synchronize(s));
        char what[96];
        snprintf(what, sizeof what, "%s call %zu (%zux%zu, connectivity %d)", test_backend_name(*kind), k + 1, w, h,
                 steps[k].conn);
        cr_assert_eq(got_n, want_n, "%s: %zu labels, the reference has %zu", what, got_n, want_n);
        assert_same_labels(got, want, w, n, what);
    }
    test_check_guard(l, cap * 4, "labels");
    free(mask);
    free(want);
    free(got);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(l);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(ctx);
}

/* ---- sizes with nothing to do, and bad input ------------------------------------------------------------------ */

BACKEND_TEST(label, empty_images_have_no_labels_and_write_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *m = test_buffer(ctx, 16), *l = test_buffer(ctx, 64);
    size_t count = 77;
    TEST_OK(gpuws_label(NULL, 0, 5, m, 4, l, &count));
    cr_assert_eq(count, 0);
    count = 77;
    TEST_OK(gpuws_label(NULL, 5, 0, m, 8, l, &count));
    cr_assert_eq(count, 0);
    test_check_guard(l, 0, "labels"); /* not one byte written */
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(l);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(label, bad_input_is_refused_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 40, H = 30, N = W * H };
    uint8_t mask[N];
    for (size_t i = 0; i < N; i++) mask[i] = (i * 7) % 3 == 0;
    gpuws_buffer *m = test_buffer_from(ctx, mask, N), *l = test_buffer(ctx, N * 4);
    size_t count = 77;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, m, 6, l, &count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, m, 0, l, &count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, m, 4, l, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, NULL, 4, l, &count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, m, 4, NULL, &count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_label(NULL, W, H, l, 4, l, &count)); /* labels over the mask */
    /* buffers one element too small (test_buffer's guard bytes would make them large enough) */
    gpuws_buffer *small, *small_mask;
    TEST_OK(gpuws_buffer_create(ctx, N * 4 - 4, &small));
    TEST_OK(gpuws_buffer_create(ctx, N - 1, &small_mask));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_label(NULL, W, H, small_mask, 4, l, &count));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_label(NULL, W, H, m, 4, small, &count));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_label(NULL, SIZE_MAX / 2, 3, m, 4, l, &count));
    /* a row of 2^31 pixels does not fit one labelling's int32 indices (an image of more pixels is labelled in
     * slabs of whole rows): refused before the buffers' sizes are looked at */
    TEST_FAILS(GPUWS_ERR_UNSUPPORTED, gpuws_label(NULL, (size_t)1 << 31, 1, m, 4, l, &count));
    cr_assert_eq(count, 77, "num_labels was written by a failed call");
    unsigned char *after = test_download(l, N * 4);
    for (size_t i = 0; i < N * 4; i++)
        cr_assert_eq(after[i], TEST_POISON_BYTE, "labels byte %zu written by a failed call", i);
    free(after);
    /* a buffer of another context */
    gpuws_context *other = test_open(GPUWS_BACKEND_CPU);
    gpuws_buffer *foreign = test_buffer(other, N * 4);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_label(NULL, W, H, m, 4, foreign, &count));
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(small);
    gpuws_buffer_destroy(small_mask);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(l);
    gpuws_context_destroy(ctx);
}
