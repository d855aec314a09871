/* An image for the pipeline over rows held by several callers (gpuws_find_sources_host_reduce: the thread-reducer
 * rows of test_sources_pipeline and the mpirun test mpi_sources_P), and the callers' shares of its rows. */
#ifndef GPUWS_TEST_SOURCES_SPLIT_H
#define GPUWS_TEST_SOURCES_SPLIT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

enum { SPLIT_W = 203, SPLIT_H = 420 }; /* 203 columns: the measurement's blocks are 81 rows */

static inline double split_uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(*s >> 11) + 0.5) * 0x1p-53;
}

/* SPLIT_W x SPLIT_H pixels: unit Gaussian noise about 0 with scattered NaNs; NaN half-rows at rows 200 and 330
 * (columns 100 on); round sources across the shares' borders (rows 81, 90, 120, 162, 243, 324); a bar in column 60
 * through rows 60 .. 300 (some of its pixels near 10^12, so that its sums round) and another in column 150 through rows 40 .. 199 (through three callers' rows); a U whose
 * arms (columns 20 and 30, rows 70 .. 130) join only at row 130. */
static inline void split_image(float *img)
{
    uint64_t s = 2026;
    for (size_t i = 0; i < (size_t)SPLIT_W * SPLIT_H; i++) {
        const double u = split_uniform(&s), v = split_uniform(&s);
        img[i] = (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
        if (i % 1009 == 0) img[i] = NAN;
    }
    static const int centres[][2] = { { 81, 40 },  { 90, 100 },  { 120, 80 }, { 162, 180 },
                                      { 243, 90 }, { 324, 120 }, { 89, 170 }, { 119, 10 } };
    for (size_t k = 0; k < sizeof centres / sizeof *centres; k++)
        for (int dy = -4; dy <= 4; dy++)
            for (int dx = -4; dx <= 4; dx++) {
                const int y = centres[k][0] + dy, x = centres[k][1] + dx;
                img[(size_t)y * SPLIT_W + (size_t)x] += (float)(30 * exp(-(dx * dx + dy * dy) / 4.5));
            }
    for (size_t y = 60; y <= 300; y++) /* every 7th pixel 10^11 times brighter: sums that round, in any order */
        img[y * SPLIT_W + 60] = y % 7 ? img[y * SPLIT_W + 60] + 20 : (float)(1e12 + 1e9 * img[y * SPLIT_W + 60]);
    for (size_t y = 40; y <= 199; y++) img[y * SPLIT_W + 150] += 20;
    for (size_t y = 70; y <= 130; y++) img[y * SPLIT_W + 20] += 20, img[y * SPLIT_W + 30] += 20;
    for (size_t x = 20; x <= 30; x++) img[130 * SPLIT_W + x] += 20;
    for (size_t x = 100; x < SPLIT_W; x++) img[200 * SPLIT_W + x] = img[330 * SPLIT_W + x] = NAN;
}

/* Caller r's rows of `parts`, and in *first the rows before them: none for caller 0 when parts > 1; then (aligned)
 * one and two blocks of 81 rows, each caller beginning on a block; or (not aligned) 90 rows and 30 (a block of
 * rows 81 .. 161 split between three callers); the last caller the rest. */
static inline size_t split_share(int aligned, size_t parts, size_t r, size_t *first)
{
    const size_t fixed[2][3] = { { 0, 90, 30 }, { 0, 81, 162 } };
    size_t at = 0, share = 0;
    for (size_t p = 0; p <= r; p++) {
        share = parts == 1 ? SPLIT_H : p + 1 == parts ? SPLIT_H - at : fixed[aligned != 0][p];
        if (p < r) at += share;
    }
    *first = at;
    return share;
}

/* The sources that begin in rows [first, first + rows) of an image labelled in raster order (labels: the whole
 * image's, width a row; label k begins before label k + 1, so the labels that begin above a row are 1 up to the
 * largest there): their count, and in *own0 the count of those that begin above them. */
static inline size_t split_own_sources(const int32_t *labels, size_t width, size_t first, size_t rows, size_t *own0)
{
    int32_t above = 0, upto = 0;
    for (size_t i = 0; i < (first + rows) * width; i++) {
        if (i < first * width && labels[i] > above) above = labels[i];
        if (labels[i] > upto) upto = labels[i];
    }
    *own0 = (size_t)above;
    return (size_t)(upto - above);
}

#endif
