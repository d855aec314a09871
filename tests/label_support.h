/* What the suites of the in-core (test_label.c) and the banded labelling (test_label_bands.c) share: SciPy's golden
 * files (tests/data/label_*.bin, written by tests/data/make_label_golden.py), the comparison, and gpuws_label on a
 * guarded buffer. */
#ifndef GPUWS_TEST_LABEL_SUPPORT_H
#define GPUWS_TEST_LABEL_SUPPORT_H

#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cases make_label_golden.py writes (its CASES, in the same order). */
static const char *const golden_names[] = { "random_64x64_d10",  "random_64x64_d30",  "random_64x64_d45",
                                            "random_64x64_d55",  "random_64x64_d70",  "random_64x64_d90",
                                            "random_7x13_d50",   "random_37x101_d50", "random_101x37_d60",
                                            "random_97x131_d55", "row_1x257_d60",     "col_257x1_d60",
                                            "blobs_120x100",     "spiral_97x97",      "diagonals_40x50",
                                            "comb_70x95",        "checker_33x65",     "ones_45x70",
                                            "zeros_30x30",       "one_1x1",           "zero_1x1" };
#define NGOLDEN (sizeof golden_names / sizeof golden_names[0])

typedef struct {
    size_t width, height, n4, n8;
    uint8_t *mask;
    int32_t *labels4, *labels8; /* full images, background 0 */
} golden;

static inline uint32_t le32(const unsigned char *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void golden_load(const char *name, golden *g)
{
    const char *dir = getenv("GPUWS_TEST_DATA");
    cr_assert(dir && *dir, "GPUWS_TEST_DATA is not set (ctest sets it to tests/data)");
    char path[1024];
    snprintf(path, sizeof path, "%s/label_%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s (regenerate with tests/data/make_label_golden.py)", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size);
    cr_assert(buf && fread(buf, 1, (size_t)size, f) == (size_t)size, "cannot read %s", path);
    fclose(f);
    cr_assert(size >= 24 && memcmp(buf, "GWL1", 4) == 0, "%s: not a label golden file", path);
    g->height = le32(buf + 4), g->width = le32(buf + 8), g->n4 = le32(buf + 12), g->n8 = le32(buf + 16);
    const uint32_t lb = le32(buf + 20);
    const size_t n = g->width * g->height, mbytes = (n + 7) / 8;
    g->mask = malloc(n + 1);
    g->labels4 = calloc(n + 1, 4);
    g->labels8 = calloc(n + 1, 4);
    cr_assert(g->mask && g->labels4 && g->labels8);
    size_t fg = 0;
    for (size_t i = 0; i < n; i++) fg += g->mask[i] = (buf[24 + i / 8] >> (i % 8)) & 1;
    cr_assert((lb == 2 || lb == 4) && (size_t)size == 24 + mbytes + 2 * fg * lb, "%s: inconsistent sizes", path);
    const unsigned char *p4 = buf + 24 + mbytes, *p8 = p4 + fg * lb;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!g->mask[i]) continue;
        g->labels4[i] = (int32_t)(lb == 2 ? (uint32_t)(p4[2 * k] | p4[2 * k + 1] << 8) : le32(p4 + 4 * k));
        g->labels8[i] = (int32_t)(lb == 2 ? (uint32_t)(p8[2 * k] | p8[2 * k + 1] << 8) : le32(p8 + 4 * k));
        k++;
    }
    free(buf);
}

static inline void golden_free(golden *g)
{
    free(g->mask);
    free(g->labels4);
    free(g->labels8);
}

/* Asserts got == want over n pixels, naming the first difference. */
static inline void assert_same_labels(const int32_t *got, const int32_t *want, size_t width, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: pixel (row %zu, col %zu) has label %d, expected %d", what, i / width,
                     i % width, got[i], want[i]);
}

/* Runs gpuws_label on a poisoned, guarded labels buffer; returns the host copy (malloc'd) and the count. */
static inline int32_t *run_label(gpuws_context *ctx, const uint8_t *mask, size_t width, size_t height, int conn,
                                 size_t *count)
{
    const size_t n = width * height;
    gpuws_buffer *m = test_buffer_from(ctx, mask, n), *l = test_buffer(ctx, n * 4);
    *count = (size_t)-1;
    TEST_OK(gpuws_label(NULL, width, height, m, conn, l, count));
    int32_t *got = test_download(l, n * 4);
    test_check_guard(l, n * 4, "labels");
    test_check_guard(m, n, "mask"); /* the mask is input only */
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(l);
    return got;
}

#endif
