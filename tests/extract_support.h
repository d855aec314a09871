/* What the suites of the in-core (test_extract.c) and the out-of-core extraction (test_extract_host.c) share:
 * gpuws_extract on host arrays through device buffers, and the comparison of two catalogues and their maps. */
#ifndef GPUWS_TEST_EXTRACT_SUPPORT_H
#define GPUWS_TEST_EXTRACT_SUPPORT_H

#include "support.h"

#include <stdlib.h>

typedef struct {
    gpuws_extract_catalog *cat;
    int32_t *seg;
} result;

static inline void result_free(result *r)
{
    gpuws_extract_catalog_free(r->cat);
    free(r->seg);
}

/* gpuws_extract on ctx: x (w*h f32), back and rms (NULL or w*h f32), mask (NULL or w*h bytes), with o's scalar
 * options; the segmentation map is read back. */
static inline result run(gpuws_context *ctx, const float *x, const float *back, const float *rms, const uint8_t *mask,
                         size_t w, size_t h, const gpuws_extract_options *o)
{
    const size_t n = w * h;
    gpuws_buffer *img = test_buffer_from(ctx, x, n * sizeof(float));
    gpuws_buffer *b = back ? test_buffer_from(ctx, back, n * sizeof(float)) : NULL;
    gpuws_buffer *r = rms ? test_buffer_from(ctx, rms, n * sizeof(float)) : NULL;
    gpuws_buffer *m = mask ? test_buffer_from(ctx, mask, n) : NULL;
    gpuws_buffer *seg = test_buffer(ctx, n * sizeof(int32_t));
    gpuws_extract_options opt = *o;
    opt.back = b;
    opt.rms = r;
    opt.mask = m;
    opt.segmap = seg;
    result out = { NULL, NULL };
    TEST_OK(gpuws_extract(NULL, w, h, img, &opt, &out.cat));
    cr_assert(out.cat);
    test_check_guard(seg, n * sizeof(int32_t), "segmap");
    out.seg = test_download(seg, n * sizeof(int32_t));
    gpuws_buffer_destroy(img);
    gpuws_buffer_destroy(b);
    gpuws_buffer_destroy(r);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(seg);
    return out;
}

/* The same catalogue bit for bit, and the same segmentation map (its first n entries: 0 compares none). */
static inline void expect_same(const char *what, const result *got, const result *want, size_t n)
{
    cr_assert_eq(got->cat->num_objects, want->cat->num_objects, "%s: %zu objects, reference %zu", what,
                 got->cat->num_objects, want->cat->num_objects);
    for (size_t i = 0; i < want->cat->num_objects; i++) {
        const gpuws_object *a = &got->cat->objects[i], *b = &want->cat->objects[i];
        cr_assert(a->npix == b->npix && a->xmin == b->xmin && a->ymin == b->ymin && a->flag == b->flag,
                  "%s: object %zu: npix %lld at (%lld, %lld) flag %d, reference %lld at (%lld, %lld) flag %d", what, i,
                  (long long)a->npix, (long long)a->xmin, (long long)a->ymin, a->flag, (long long)b->npix,
                  (long long)b->xmin, (long long)b->ymin, b->flag);
        const double ga[] = { a->thresh, a->x,     a->y,     a->x2,      a->y2,    a->xy,   a->errx2,
                              a->erry2,  a->errxy, a->a,     a->b,       a->theta, a->cxx,  a->cyy,
                              a->cxy,    a->flux,  a->cflux, a->fluxerr, a->peak,  a->cpeak };
        const double wa[] = { b->thresh, b->x,     b->y,     b->x2,      b->y2,    b->xy,   b->errx2,
                              b->erry2,  b->errxy, b->a,     b->b,       b->theta, b->cxx,  b->cyy,
                              b->cxy,    b->flux,  b->cflux, b->fluxerr, b->peak,  b->cpeak };
        for (size_t k = 0; k < sizeof ga / sizeof ga[0]; k++)
            cr_assert(test_ulp_diff_f64(ga[k], wa[k]) == 0, "%s: object %zu, column %zu: %.17g, reference %.17g", what,
                      i, k, ga[k], wa[k]);
        cr_assert(a->tnpix == b->tnpix && a->xmax == b->xmax && a->ymax == b->ymax && a->xpeak == b->xpeak &&
                      a->ypeak == b->ypeak && a->xcpeak == b->xcpeak && a->ycpeak == b->ycpeak,
                  "%s: object %zu: the integer columns differ", what, i);
    }
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got->seg[i], want->seg[i], "%s: segmap[%zu] = %d, reference %d", what, i, got->seg[i],
                     want->seg[i]);
}

#endif
