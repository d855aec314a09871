/* The source-finding pipeline (gpuws_find_sources) and the synthetic sky it is demonstrated on.

 *
 * Oracles: known answers for the sky (noise statistics, one noise-free beam) and for a hand-made image; the injected
 * sources for recovery; the label reference and sums in double on the host for the catalogue's contents. */
#include "support.h"
#include "label/label_ref.h"
#include "measure/measure_ref.h"
#include "sources/sources_internal.h"
#include "sources_split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the synthetic sky ----------------------------------------------------------------------------------------- */

/* The reference sky of p (malloc'd), and optionally its per-pixel scale. */
static float *sky_host(const gpuws_sky_params *p, gpuws_sky_source **sources, float **scale)
{
    *sources = malloc((p->num_sources + 1) * sizeof **sources);
    float *img = malloc(p->width * p->height * sizeof *img);
    if (scale) *scale = malloc(p->width * p->height * sizeof **scale);
    cr_assert(*sources && img && (!scale || *scale));
    gpuws_sky_sources(p, *sources);
    gpuws_sky_bins bins;
    cr_assert_eq(gpuws_sky_bin(p, *sources, &bins), 0);
    gpuws_sky_ref(p, &bins, img, scale ? *scale : NULL);
    gpuws_sky_bins_free(&bins);
    return img;
}

/* Noise alone: mean 0 and std sigma, within 6 standard errors for 10^6 samples (sigma/1000 for the mean,
 * sigma/sqrt(2*10^6) for the std); no value beyond 6 sigma is impossible but 1 in 5*10^8, so none is expected. */
Test(sky_reference, noise_is_gaussian_with_the_requested_sigma)
{
    gpuws_sky_params p = gpuws_sky_defaults(1000, 1000, 42);
    p.num_sources = 0;
    gpuws_sky_source *src;
    float *img = sky_host(&p, &src, NULL);
    double s = 0, s2 = 0, big = 0;
    const size_t n = p.width * p.height;
    for (size_t i = 0; i < n; i++) {
        s += img[i];
        s2 += (double)img[i] * img[i];
        big += fabs(img[i]) > 6e-3;
    }
    const double mean = s / (double)n, std = sqrt(s2 / (double)n - mean * mean);
    cr_assert(fabs(mean) < 6e-3 / 1000, "noise mean %g", mean);
    cr_assert(fabs(std - 1e-3) < 6 * 1e-3 / sqrt(2e6), "noise std %g, wanted 1e-3", std);
    cr_assert_eq(big, 0, "%g values beyond 6 sigma", big);
    free(img);
    free(src);
}

/* One source, no noise: its peak at its (integer) position, peak*exp(-d^2 / 2 sigma_b^2) around it, exactly 0 beyond
 * the cutoff. In float, 1 / (2 sigma_b^2) is rounded (2^-24 relative), an error the exponent a = d^2 / (2 sigma_b^2)
 * multiplies: within (a + 4) * 2^-24 relative of the value computed in double (4 for expf and the products). */
Test(sky_reference, one_noise_free_beam_has_the_known_profile)
{
    gpuws_sky_params p = gpuws_sky_defaults(64, 48, 7);
    p.noise_sigma = 0;
    p.num_sources = 1;
    gpuws_sky_source src = { 30.0f, 20.0f, 0.05f };
    gpuws_sky_bins bins;
    cr_assert_eq(gpuws_sky_bin(&p, &src, &bins), 0);
    float *img = malloc(64 * 48 * sizeof *img);
    cr_assert(img);
    gpuws_sky_ref(&p, &bins, img, NULL);
    const double r = p.cutoff_sigmas * p.beam_sigma;
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) {
            const double d2 = (x - 30.0) * (x - 30.0) + (y - 20.0) * (y - 20.0);
            const double want = d2 > r * r ? 0.0 : 0.05f * exp(-d2 / (2 * p.beam_sigma * p.beam_sigma));
            const double a = d2 / (2 * p.beam_sigma * p.beam_sigma);
            cr_assert(fabs(img[y * 64 + x] - want) <= (a + 4) * 0x1p-24 * want, "pixel (%d, %d) = %.9g, wanted %.9g", y,
                      x, (double)img[y * 64 + x], want);
        }
    free(img);
    gpuws_sky_bins_free(&bins);
}

/* The device sky against the reference. Bound: 2^-16 of |noise| + sum |beam terms| at each pixel. The integer hash
 * is exact everywhere; what may differ are log (3 ulp allowed in OpenCL), sqrt (3 ulp), cos (4 ulp), exp (3 ulp, and
 * an argument of up to 18 whose rounding - FMA contraction of dx*dx + dy*dy on GPUs - moves it by 18 * 2^-24), and
 * the rounding of the sum: about 10 ulp on each side for the noise and 24 for a beam term, 2^-18 or so relative
 * to the magnitude; 2^-16 leaves a factor of 4. */
BACKEND_TEST(sky, device_matches_reference)
{
    gpuws_context *ctx = test_open(*kind);
    static const size_t sizes[][2] = { { 1000, 777 }, { 33, 17 } };
    for (size_t c = 0; c < 2; c++) {
        gpuws_sky_params p = gpuws_sky_defaults(sizes[c][0], sizes[c][1], 1234 + c);
        if (c == 1) p.num_sources = 3; /* more than the default density: beams overlap the edges' cells */
        gpuws_sky_source *src;
        float *scale, *want = sky_host(&p, &src, &scale);
        const size_t n = p.width * p.height;
        gpuws_buffer *img = test_buffer(ctx, n * sizeof(float));
        TEST_OK(gpuws__sky_generate(NULL, &p, src, img));
        float *got = test_download(img, n * sizeof(float));
        test_check_guard(img, n * sizeof(float), "image");
        for (size_t i = 0; i < n; i++)
            cr_assert(fabsf(got[i] - want[i]) <= 0x1p-16f * scale[i],
                      "%s %zux%zu pixel %zu: %.9g, reference %.9g (allowed %.3g)", test_backend_name(*kind), p.width,
                      p.height, i, (double)got[i], (double)want[i], (double)(0x1p-16f * scale[i]));
        free(got);
        free(want);
        free(scale);
        free(src);
        gpuws_buffer_destroy(img);
    }
    gpuws_context_destroy(ctx);
}

/* ---- the pipeline -------------------------------------------------------------------------------------------- */

/* The catalogue's contents from the label image it returned and the image, recomputed on the host: threshold mask →
 * reference labels (exact) → sums in double. Flux: both sides add npix positive values in double, each within
 * npix * 2^-53 * flux of the exact sum (Higham), so they agree within 2 * npix * 2^-53 * flux. Centre: a ratio of
 * two such sums: within 4 * npix * 2^-53 relative, plus nothing for peaks (compared exactly). */
static void check_catalog_against_host(const gpuws_catalog *cat, const float *img, size_t w, size_t h, int conn)
{
    const size_t n = w * h;
    uint8_t *mask = malloc(n);
    int32_t *want = malloc(n * 4);
    cr_assert(mask && want && cat->labels);
    for (size_t i = 0; i < n; i++) mask[i] = img[i] > (float)cat->threshold;
    size_t nl = gpuws_label_ref(mask, w, h, conn, want);
    cr_assert_eq(cat->num_sources, nl, "%zu sources, the host finds %zu", cat->num_sources, nl);
    for (size_t i = 0; i < n; i++) cr_assert_eq(cat->labels[i], want[i], "label of pixel %zu", i);
    double *sum = calloc(nl + 1, sizeof *sum), *sx = calloc(nl + 1, sizeof *sx), *sy = calloc(nl + 1, sizeof *sy);
    double *peak = malloc((nl + 1) * sizeof *peak);
    int64_t *npix = calloc(nl + 1, sizeof *npix);
    cr_assert(sum && sx && sy && peak && npix);
    for (size_t k = 0; k <= nl; k++) peak[k] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const int32_t l = want[i];
        if (!l) continue;
        sum[l] += img[i];
        sx[l] += (double)img[i] * (double)(i % w);
        sy[l] += (double)img[i] * (double)(i / w);
        npix[l]++;
        if (img[i] > peak[l]) peak[l] = img[i];
    }
    for (size_t k = 0; k < nl; k++) {
        const gpuws_source *s = &cat->sources[k];
        const size_t l = k + 1;
        const double e = (double)npix[l] * 0x1p-53;
        cr_assert_eq(s->id, (int64_t)l);
        cr_assert_eq(s->npix, npix[l], "source %zu: npix %lld, host %lld", l, (long long)s->npix, (long long)npix[l]);
        cr_assert_eq(s->peak, peak[l], "source %zu: peak %.9g, host %.9g", l, s->peak, peak[l]);
        cr_assert(fabs(s->flux - sum[l]) <= 2 * e * sum[l], "source %zu: flux %.17g, host %.17g", l, s->flux, sum[l]);
        cr_assert(fabs(s->x - sx[l] / sum[l]) <= 4 * e * (fabs(s->x) + 1), "source %zu: x %.17g, host %.17g", l, s->x,
                  sx[l] / sum[l]);
        cr_assert(fabs(s->y - sy[l] / sum[l]) <= 4 * e * (fabs(s->y) + 1), "source %zu: y %.17g, host %.17g", l, s->y,
                  sy[l] / sum[l]);
        const size_t pi = (size_t)s->peak_y * w + (size_t)s->peak_x;
        cr_assert(pi < n && want[pi] == (int32_t)l && img[pi] == s->peak, "source %zu: the peak's position", l);
    }
    free(mask);
    free(want);
    free(sum);
    free(sx);
    free(sy);
    free(peak);
    free(npix);
}

/* A 1024x1024 sky (75 sources, peaks 5 to 100 noise sigmas). What must hold:
 * - the clipped std is the noise sigma within 2% (sources cover ~0.1% of the pixels and are clipped away);
 * - every injected source with a peak of 8 sigma or more and no other source within 4 beam sigmas is found within
 *   1.5 pixels (its peak pixel is 3 sigma above the 5-sigma threshold, so noise cannot hide it);
 * - spurious detections (far from every injected source): the threshold is 5 x the clipped std, which is 0.985
 *   sigma after 3-sigma clipping converges, so noise passes it with probability 4.3e-7 per pixel: 0.45 expected
 *   in 10^6 pixels; allow 3;
 * - fragments (extra islands near an injected source) come only from faint sources, whose pixels near the threshold
 *   break into several 4-connected islands: allow them near sources below 10 sigma only;
 * - the catalogue matches the host's labelling and sums of the same image (check_catalog_against_host). */
BACKEND_TEST(find_sources, recovers_the_injected_sources)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_sky_params p = gpuws_sky_defaults(1024, 1024, 2026);
    gpuws_sky_source *src;
    float *img = sky_host(&p, &src, NULL);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.want_labels = 1;
    gpuws_catalog *cat = NULL;
    TEST_OK(gpuws_find_sources(ctx, img, p.width, p.height, &o, &cat));
    cr_assert(fabs(cat->clip.std / p.noise_sigma - 1) < 0.02, "clipped std %g", cat->clip.std);
    cr_assert_eq(cat->threshold, 5.0 * cat->clip.std, "threshold %.17g is not 5 x clipped std", cat->threshold);
    check_catalog_against_host(cat, img, p.width, p.height, 4);
    const double blend = 4 * p.beam_sigma;
    size_t must = 0, found = 0;
    for (size_t k = 0; k < p.num_sources; k++) {
        bool isolated = true;
        for (size_t j = 0; j < p.num_sources; j++)
            if (j != k && hypot(src[j].x - src[k].x, src[j].y - src[k].y) < blend) isolated = false;
        if (!isolated || src[k].peak < 8 * p.noise_sigma) continue;
        must++;
        for (size_t d = 0; d < cat->num_sources; d++)
            if (hypot(cat->sources[d].x - src[k].x, cat->sources[d].y - src[k].y) < 1.5) {
                found++;
                break;
            }
    }
    cr_assert(must > 40, "only %zu bright isolated sources: the case tests little", must);
    cr_assert_eq(found, must, "%zu of %zu bright isolated sources found", found, must);
    gpuws_sky_match m;
    cr_assert_eq(
        gpuws_sky_match_catalog(src, p.num_sources, cat->sources, cat->num_sources, 2.0, cat->threshold, blend, &m), 0);
    cr_assert(m.spurious <= 3, "%zu spurious detections", m.spurious);
    for (size_t d = 0; d < cat->num_sources; d++) {
        size_t nearest = 0;
        for (size_t k = 1; k < p.num_sources; k++)
            if (hypot(cat->sources[d].x - src[k].x, cat->sources[d].y - src[k].y) <
                hypot(cat->sources[d].x - src[nearest].x, cat->sources[d].y - src[nearest].y))
                nearest = k;
        const double dist = hypot(cat->sources[d].x - src[nearest].x, cat->sources[d].y - src[nearest].y);
        cr_assert(dist < 1.5 || dist > blend || src[nearest].peak < 10 * p.noise_sigma,
                  "detection %zu is %.2f px from a source of %.1f sigma: a bright source breaks up", d, dist,
                  src[nearest].peak / p.noise_sigma);
    }
    double steps =
        cat->ms_upload + cat->ms_clip + cat->ms_threshold + cat->ms_label + cat->ms_measure + cat->ms_download;
    cr_assert(cat->ms_upload >= 0 && cat->ms_clip >= 0 && cat->ms_label >= 0 && cat->ms_download >= 0);
    cr_assert(fabs(steps - cat->ms_total) <= 1e-3 + 1e-6 * cat->ms_total, "step times add to %g ms, total %g", steps,
              cat->ms_total);
    gpuws_catalog_free(cat);
    free(img);
    free(src);
    gpuws_context_destroy(ctx);
}

/* Hand-made: two 2x2 blocks touching at one corner on a weak, non-constant background, found with an absolute
 * threshold: 4-connectivity sees two sources, 8-connectivity one. Every value is exact in float and double.
 * The blocks' top-left pixel is (r0 + 1, c0 + 2) in a W x H image. */
static void two_blocks(float *img, int W, int H, int r0, int c0)
{
    for (int i = 0; i < W * H; i++) img[i] = (float)((i * 37) % 11 - 5) * 0x1p-10f; /* |x| < 0.005 */
    /* block A rows 1-2, cols 2-3; block B rows 3-4, cols 4-5: A(2,3) and B(3,4) touch diagonally */
    const int a[4][2] = { { 1, 2 }, { 1, 3 }, { 2, 2 }, { 2, 3 } },
              b[4][2] = { { 3, 4 }, { 3, 5 }, { 4, 4 }, { 4, 5 } };
    for (int k = 0; k < 4; k++) {
        img[(r0 + a[k][0]) * W + c0 + a[k][1]] = 1.0f + (float)k; /* 1, 2, 3, 4: peak 4 at (2, 3) */
        img[(r0 + b[k][0]) * W + c0 + b[k][1]] = 0.5f;
    }
}

/* The 4-connected answer for two_blocks(img, W, H, r0, c0) */
static void expect_two_blocks(const gpuws_catalog *cat, int r0, int c0)
{
    cr_assert_eq(cat->threshold, 0.25);
    cr_assert_eq(cat->num_sources, 2);
    const gpuws_source *s = cat->sources;
    cr_assert(s[0].id == 1 && s[0].npix == 4 && s[0].flux == 10.0 && s[0].peak == 4.0 && s[0].peak_x == c0 + 3 &&
              s[0].peak_y == r0 + 2);
    /* (2*1 + 3*2 + 2*3 + 3*4) / 10 and (1*3 + 2*7) / 10: exact sums, one rounded division (or a few ulp more) */
    cr_assert(fabs(s[0].x - (c0 + 2.6)) < 1e-13 && fabs(s[0].y - (r0 + 1.7)) < 1e-13, "centre (%.17g, %.17g)", s[0].x,
              s[0].y);
    cr_assert(s[1].id == 2 && s[1].npix == 4 && s[1].flux == 2.0 && s[1].x == c0 + 4.5 && s[1].y == r0 + 3.5 &&
              s[1].peak == 0.5);
    cr_assert(s[1].peak_x == c0 + 4 && s[1].peak_y == r0 + 3,
              "peak at (%lld, %lld): the first in raster order wins a tie", (long long)s[1].peak_x,
              (long long)s[1].peak_y);
}

BACKEND_TEST(find_sources, connectivity_and_absolute_threshold_known_answer)
{
    gpuws_context *ctx = test_open(*kind);
    enum { W = 9, H = 7 };
    float img[W * H];
    two_blocks(img, W, H, 0, 0);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_abs = 0.25;
    gpuws_catalog *cat;
    TEST_OK(gpuws_find_sources(ctx, img, W, H, &o, &cat));
    cr_assert_null(cat->labels, "labels returned though not asked for");
    expect_two_blocks(cat, 0, 0);
    gpuws_catalog_free(cat);
    o.connectivity = 8;
    o.want_labels = 1;
    TEST_OK(gpuws_find_sources(ctx, img, W, H, &o, &cat));
    cr_assert_eq(cat->num_sources, 1);
    cr_assert(cat->sources[0].npix == 8 && cat->sources[0].flux == 12.0);
    for (int i = 0; i < W * H; i++) cr_assert_eq(cat->labels[i], img[i] > 0.25f ? 1 : 0, "label of pixel %d", i);
    gpuws_catalog_free(cat);
    gpuws_context_destroy(ctx);
}

/* The pipeline keeps its device buffers (image, mask, labels) on the stream for the next call: a call on a smaller
 * image after a larger one, whose buffers still hold the larger image's pixels and labels past the smaller one's
 * end, and a larger one after that, see nothing of the earlier calls. */
BACKEND_TEST(find_sources, calls_of_other_sizes_see_nothing_of_earlier_calls)
{
    gpuws_context *ctx = test_open(*kind);
    enum { BW = 70, BH = 50, R0 = 31, C0 = 57, W = 9, H = 7 };
    float big[BW * BH], small[W * H];
    two_blocks(big, BW, BH, R0, C0);
    two_blocks(small, W, H, 0, 0);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_abs = 0.25;
    o.want_labels = 1;
    const struct {
        const float *img;
        int w, h, r0, c0;
    } calls[] = { { big, BW, BH, R0, C0 }, { small, W, H, 0, 0 }, { big, BW, BH, R0, C0 }, { small, W, H, 0, 0 } };
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        gpuws_catalog *cat;
        TEST_OK(gpuws_find_sources(ctx, calls[k].img, (size_t)calls[k].w, (size_t)calls[k].h, &o, &cat));
        expect_two_blocks(cat, calls[k].r0, calls[k].c0);
        for (int i = 0; i < calls[k].w * calls[k].h; i++) {
            const int r = i / calls[k].w - calls[k].r0, c = i % calls[k].w - calls[k].c0;
            const int want = calls[k].img[i] <= 0.25f ? 0 : r <= 2 && c <= 3 ? 1 : 2; /* block A, else B */
            cr_assert_eq(cat->labels[i], want, "call %zu: label of pixel %d", k, i);
        }
        gpuws_catalog_free(cat);
    }
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(find_sources, all_nan_image_is_refused_without_a_catalog)
{
    gpuws_context *ctx = test_open(*kind);
    float img[50];
    for (int i = 0; i < 50; i++) img[i] = NAN;
    gpuws_catalog *cat = (gpuws_catalog *)&cat;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 10, 5, NULL, &cat));
    cr_assert_null(cat);
    gpuws_context_destroy(ctx);
}

/* Checked before anything reaches the device. */
BACKEND_TEST(find_sources, bad_arguments_are_refused_without_a_catalog)
{
    gpuws_context *ctx = test_open(*kind);
    float img[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
    gpuws_catalog *cat = (gpuws_catalog *)&cat;
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
#define REFUSED(want, call)                                                                                            \
    do {                                                                                                               \
        cat = (gpuws_catalog *)&cat;                                                                                   \
        TEST_FAILS(want, call);                                                                                        \
        cr_assert_null(cat, "%s left a catalogue", #call);                                                             \
    } while (0)
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, NULL, 4, 3, NULL, &cat));
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 0, 3, NULL, &cat));
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 0, NULL, &cat));
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(NULL, img, 4, 3, NULL, &cat));
    REFUSED(GPUWS_ERR_OVERFLOW, gpuws_find_sources(ctx, img, SIZE_MAX / 2, 3, NULL, &cat));
    o.connectivity = 6;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
    gpuws_sigma_clip_options clip = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    clip.kappa = 0;
    o.clip = &clip;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
    clip = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    clip.max_iterations = 0;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
    o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_sigma = NAN;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
    o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_sigma = 0;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
    o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    o.threshold_abs = INFINITY;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, &o, &cat));
#undef REFUSED
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 3, NULL, NULL));
    gpuws_catalog_free(NULL); /* accepted, like every free */
    gpuws_context_destroy(ctx);
}

/* ---- the pipeline from host memory ----------------------------------------------------------------------------- */

/* A sky on the host (*img, *src: free them) and gpuws_find_sources' catalogue of it with labels; *o gets the options
 * it ran with, for the host pipeline to run with too. */
static gpuws_catalog *device_catalog(gpuws_context *ctx, const gpuws_sky_params *p, gpuws_sources_options *o,
                                     float **img, gpuws_sky_source **src)
{
    *img = sky_host(p, src, NULL);
    *o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    o->want_labels = 1;
    gpuws_catalog *dev = NULL;
    TEST_OK(gpuws_find_sources(ctx, *img, p->width, p->height, o, &dev));
    return dev;
}

/* gpuws_find_sources_host on a 1024² sky, in-core and with the labelling in bands (over two contexts too): the
 * clipped count and median and the labels of gpuws_find_sources on the same backend, the std within a few ulps (the
 * host's sums are exact), the catalogue the host's labelling and sums of the image (check_catalog_against_host),
 * and every run the same bits as the others. */
BACKEND_TEST(find_sources, host_pipeline_matches_the_device_pipeline)
{
    gpuws_context *ctx = test_open(*kind), *more[1] = { test_open(*kind) };
    gpuws_sky_params p = gpuws_sky_defaults(1024, 1024, 2027);
    gpuws_sky_source *src;
    float *img;
    gpuws_sources_options o;
    gpuws_catalog *dev = device_catalog(ctx, &p, &o, &img, &src), *host[3] = { NULL };
    gpuws_label_host_options lo = GPUWS_LABEL_HOST_OPTIONS_INIT;
    TEST_OK(gpuws_find_sources_host(ctx, img, p.width, p.height, &o, &lo, &host[0]));
    lo.max_device_bytes = 1 << 20; /* bands of a few dozen rows */
    TEST_OK(gpuws_find_sources_host(ctx, img, p.width, p.height, &o, &lo, &host[1]));
    lo.more_contexts = more, lo.num_more_contexts = 1;
    TEST_OK(gpuws_find_sources_host(ctx, img, p.width, p.height, &o, &lo, &host[2]));
    const size_t n = p.width * p.height;
    for (int r = 0; r < 3; r++) {
        const gpuws_catalog *h = host[r];
        cr_assert_eq(h->clip.count, dev->clip.count, "run %d: clipped count %zu, device %zu", r, h->clip.count,
                     dev->clip.count);
        cr_assert_eq(h->clip.median, dev->clip.median, "run %d: median %.17g, device %.17g", r, h->clip.median,
                     dev->clip.median);
        cr_assert(fabs(h->clip.std - dev->clip.std) <= 1e-12 * dev->clip.std, "run %d: std %.17g, device %.17g", r,
                  h->clip.std, dev->clip.std);
        cr_assert_eq(h->num_sources, dev->num_sources, "run %d: %zu sources, device %zu", r, h->num_sources,
                     dev->num_sources);
        cr_assert(memcmp(h->labels, dev->labels, n * sizeof *h->labels) == 0, "run %d: labels differ", r);
        check_catalog_against_host(h, img, p.width, p.height, 4);
        if (r)
            cr_assert(memcmp(h->sources, host[0]->sources, h->num_sources * sizeof *h->sources) == 0 &&
                          memcmp(&h->clip, &host[0]->clip, sizeof h->clip) == 0,
                      "run %d differs from the in-core run", r);
    }
    cr_assert(dev->num_sources > 40, "%zu sources: the case tests little", dev->num_sources);
    for (int r = 0; r < 3; r++) gpuws_catalog_free(host[r]);
    gpuws_catalog_free(dev);
    free(img);
    free(src);
    gpuws_context_destroy(more[0]);
    gpuws_context_destroy(ctx);
}

/* The host pipeline's bad input: a clear status, no catalogue. */
Test(find_sources, host_pipeline_refuses_bad_arguments_without_a_catalog)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    float img[16] = { 0 }, nan4[4] = { NAN, NAN, NAN, NAN };
    gpuws_catalog *cat = (gpuws_catalog *)1;
    gpuws_sources_options bad = GPUWS_SOURCES_OPTIONS_INIT;
    bad.connectivity = 6;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, img, 4, 4, NULL, NULL, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(NULL, img, 4, 4, NULL, NULL, &cat));
    cr_assert_null(cat);
    cat = (gpuws_catalog *)1;
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, NULL, 4, 4, NULL, NULL, &cat));
    cr_assert_null(cat);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, img, 0, 4, NULL, NULL, &cat));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_find_sources_host(ctx, img, SIZE_MAX / 2, 4, NULL, NULL, &cat));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, img, 4, 4, &bad, NULL, &cat));
    cr_assert(strstr(gpuws_last_error(), "find_sources_host: connectivity 6"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, nan4, 2, 2, NULL, NULL, &cat));
    cr_assert(strstr(gpuws_last_error(), "NaN"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_host(ctx, img, 4, 4, NULL, NULL, &cat)); /* constant */
    cr_assert(strstr(gpuws_last_error(), "constant image"), "%s", gpuws_last_error());
    cr_assert_null(cat);
    gpuws_context_destroy(ctx);
}

/* ---- the host pipeline's measurement on threads ------------------------------------------------------------------ */

/* gpuws__measure_host against gpuws_measure_ref on small whole numbers, whose sums are exact in any order, so every
 * field must be the same bits: labels of random blobs; comb A (one component through every block, entering each
 * through its first row with many teeth) holding a NaN (its peak); comb B through every block, its peak value tied
 * in blocks 2, 3 and 4 (the first in raster order wins); labels past num_labels (ignored); two labels without a
 * pixel. Then, on values that are not whole numbers, comb B's sums are its blocks' sums (each in raster order)
 * added in block order, bit for bit. For 1, 2 and 5 threads. */
Test(find_sources, host_measurement_is_the_reference_on_any_thread_count)
{
    enum { W = 97, H = 700, R = 169 }; /* blocks of 169 rows: 5 of them, the last one short */
    cr_assert_eq(gpuws__measure_host_block_rows(W), R);
    float *img = malloc(W * H * sizeof *img), *frac = malloc(W * H * sizeof *frac);
    uint8_t *mask = malloc(W * H);
    int32_t *labels = malloc(W * H * sizeof *labels);
    cr_assert(img && frac && mask && labels);
    uint64_t s = 12345;
    for (size_t i = 0; i < W * H; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        img[i] = (float)((s >> 33) % 16); /* ties everywhere */
        frac[i] = img[i] + (float)((s >> 20) % 1000) / 1000.0f;
        const size_t c = i % W;
        mask[i] = (s >> 40) % 3 == 0 && !(c >= 40 && c < 56); /* a moat keeps the combs apart */
    }
    for (size_t r = 0; r < H; r++) mask[r * W] = mask[r * W + W - 1] = 1; /* the combs' spines ... */
    for (size_t r = 0; r < H; r++)
        for (size_t c = 0; c < 30; c++) mask[r * W + (r % 2 ? W - 1 - c : c)] = 1;     /* ... and their teeth */
    for (size_t c = 0; c < W; c++) mask[169 * W + c] = mask[170 * W + c] = 0;          /* a gap inside the combs ... */
    mask[169 * W] = mask[170 * W] = mask[169 * W + W - 1] = mask[170 * W + W - 1] = 1; /* ... bridged by the spines */
    const size_t nl = gpuws_label_ref(mask, W, H, 8, labels);
    const int32_t a = labels[0], b = labels[W - 1];
    cr_assert(nl > 100 && a == 1 && b > 1, "%zu labels, comb A %d, comb B %d", nl, a, b);
    img[600 * W] = NAN;
    for (size_t i = 0; i < W * H; i++)
        if (labels[i] == b) img[i] = 1;
    img[400 * W + W - 1] = img[550 * W + W - 1] = img[680 * W + W - 1] = 20; /* blocks 2, 3, 4 */
    labels[5] = (int32_t)nl + 3;                                             /* past num_labels: ignored by both */
    labels[W * H - 1] = -1;
    gpuws_source_measure *want = malloc((nl + 2) * sizeof *want), *got = malloc((nl + 2) * sizeof *got);
    cr_assert(want && got);
    gpuws_measure_ref(img, labels, W, H, nl + 2, want);
    cr_assert(isnan(want[a - 1].peak) && want[b - 1].peak_row == 400, "the case is not what it means to be");
    double sum = 0, row = 0, col = 0; /* comb B of frac: block sums in block order */
    for (size_t b0 = 0; b0 < H; b0 += R) {
        double bs = 0, br = 0, bc = 0;
        for (size_t i = b0 * W; i < (b0 + R < H ? b0 + R : H) * W; i++)
            if (labels[i] == b)
                bs += frac[i], br += (double)frac[i] * (double)(i / W), bc += (double)frac[i] * (double)(i % W);
        sum += bs, row += br, col += bc;
    }
    const unsigned threads[] = { 1, 2, 5 };
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        memset(got, 0x5a, (nl + 2) * sizeof *got);
        TEST_OK(gpuws__measure_host(img, labels, W, H, nl + 2, threads[t], got));
        for (size_t k = 0; k < nl + 2; k++)
            cr_assert(memcmp(&got[k], &want[k], sizeof *got) == 0,
                      "%u threads: label %zu: sum %.17g/%.17g npix %lld/%lld peak %g/%g at (%lld, %lld)/(%lld, %lld)",
                      threads[t], k + 1, got[k].sum, want[k].sum, (long long)got[k].npix, (long long)want[k].npix,
                      got[k].peak, want[k].peak, (long long)got[k].peak_row, (long long)got[k].peak_col,
                      (long long)want[k].peak_row, (long long)want[k].peak_col);
        TEST_OK(gpuws__measure_host(frac, labels, W, H, nl + 2, threads[t], got));
        const gpuws_source_measure *m = &got[b - 1];
        cr_assert(m->sum == sum && m->row == row / sum && m->col == col / sum,
                  "%u threads: comb B: sum %.17g, row %.17g, col %.17g; block sums in order give %.17g, %.17g, %.17g",
                  threads[t], m->sum, m->row, m->col, sum, row / sum, col / sum);
    }
    free(img);
    free(frac);
    free(mask);
    free(labels);
    free(want);
    free(got);
}

/* gpuws_find_sources_host with 1, 2 and 3 threads (knob find_sources_host_threads) on a sky whose sources cross the
 * measurement's block borders: the same catalogue, bit for bit, and gpuws_find_sources' labels, counts and peaks
 * with sums within the summation bounds (check_catalog_against_host). */
Test(find_sources, host_pipeline_is_the_same_bits_on_any_thread_count)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    gpuws_sky_params p = gpuws_sky_defaults(512, 1536, 2031);
    p.num_sources = 400; /* dense: many sources cross the borders every 64 rows */
    gpuws_sky_source *src;
    float *img;
    gpuws_sources_options o;
    gpuws_catalog *dev = device_catalog(ctx, &p, &o, &img, &src), *host[3] = { NULL };
    static const char *const threads[] = { "1", "2", "3" };
    for (int t = 0; t < 3; t++) {
        test_tune(ctx, "find_sources_host_threads", threads[t]);
        TEST_OK(gpuws_find_sources_host(ctx, img, p.width, p.height, &o, NULL, &host[t]));
    }
    const size_t rows = gpuws__measure_host_block_rows(p.width);
    size_t crossing = 0;
    for (size_t i = 0; i + p.width < p.width * p.height; i++)
        crossing += (i / p.width + 1) % rows == 0 && dev->labels[i] && dev->labels[i] == dev->labels[i + p.width];
    cr_assert(crossing > 20, "%zu pixels of a source above a block border: the case tests little", crossing);
    for (int t = 0; t < 3; t++) {
        const gpuws_catalog *h = host[t];
        cr_assert_eq(h->num_sources, dev->num_sources, "%s threads: %zu sources, device %zu", threads[t],
                     h->num_sources, dev->num_sources);
        check_catalog_against_host(h, img, p.width, p.height, 4);
        for (size_t k = 0; k < h->num_sources; k++) {
            cr_assert_eq(h->sources[k].npix, dev->sources[k].npix, "%s threads: source %zu", threads[t], k + 1);
            cr_assert_eq(h->sources[k].peak, dev->sources[k].peak, "%s threads: source %zu", threads[t], k + 1);
        }
        cr_assert(memcmp(h->sources, host[0]->sources, h->num_sources * sizeof *h->sources) == 0,
                  "%s threads: the catalogue differs from one thread's", threads[t]);
    }
    for (int t = 0; t < 3; t++) gpuws_catalog_free(host[t]);
    gpuws_catalog_free(dev);
    free(img);
    free(src);
    gpuws_context_destroy(ctx);
}

/* ---- one image over several devices ------------------------------------------------------------------------- */

/* gpuws_find_sources_parts on `img`, its rows cut after rows[0], rows[1], ... (np parts) onto the contexts ctxs (the
 * same context may hold several parts: each part its own stream). */
static gpuws_catalog *parts_catalog(gpuws_context *const *ctxs, size_t np, const size_t *rows, const float *img,
                                    size_t w, const gpuws_sources_options *o)
{
    gpuws_image_part parts[4];
    gpuws_buffer *bufs[4] = { NULL };
    cr_assert(np <= 4);
    size_t r0 = 0;
    for (size_t p = 0; p < np; p++) {
        TEST_OK(gpuws_stream_create(ctxs[p], &parts[p].stream));
        parts[p].rows = rows[p];
        if (rows[p]) {
            TEST_OK(gpuws_buffer_create(ctxs[p], rows[p] * w * sizeof(float), &bufs[p]));
            TEST_OK(gpuws_buffer_write(bufs[p], 0, img + r0 * w, rows[p] * w * sizeof(float)));
        }
        parts[p].image = bufs[p];
        r0 += rows[p];
    }
    gpuws_catalog *cat = NULL;
    TEST_OK(gpuws_find_sources_parts(parts, np, w, o, &cat));
    for (size_t p = 0; p < np; p++) {
        gpuws_buffer_destroy(bufs[p]);
        gpuws_stream_destroy(parts[p].stream);
    }
    return cat;
}

/* got against gpuws_find_sources' catalogue want of the same image (w x h): the clip's count, median, iterations
 * and convergence, the labels and the number of sources the same, the std within 1e-12 (the chunk sums' other
 * order), and the sources the host's labelling and sums of the image (check_catalog_against_host). */
static void expect_one_device(const gpuws_catalog *got, const gpuws_catalog *want, const float *img, size_t w, size_t h,
                              int conn, const char *what)
{
    cr_assert_eq(got->clip.count, want->clip.count, "%s: clipped count %zu, one device %zu", what, got->clip.count,
                 want->clip.count);
    cr_assert_eq(got->clip.median, want->clip.median, "%s: median %.17g, one device %.17g", what, got->clip.median,
                 want->clip.median);
    cr_assert_eq(got->clip.iterations, want->clip.iterations, "%s: %d iterations", what, got->clip.iterations);
    cr_assert_eq(got->clip.converged, want->clip.converged, "%s: converged", what);
    cr_assert(fabs(got->clip.std - want->clip.std) <= 1e-12 * want->clip.std, "%s: std %.17g, one device %.17g", what,
              got->clip.std, want->clip.std);
    cr_assert_eq(got->num_sources, want->num_sources, "%s: %zu sources, one device %zu", what, got->num_sources,
                 want->num_sources);
    cr_assert(memcmp(got->labels, want->labels, w * h * sizeof *got->labels) == 0, "%s: labels differ", what);
    check_catalog_against_host(got, img, w, h, conn);
}

/* got (found without the label image: a device whose labels need mapping to the image's numbers keeps its band's
 * own, and the measurement maps them as it reads them) against want (with it): the same sources, npix and peaks
 * exact, flux and centres within the summation bounds of check_catalog_against_host (both sides add the same pixels
 * in other orders). */
static void expect_same_sources(const gpuws_catalog *got, const gpuws_catalog *want, const char *what)
{
    cr_assert_null(got->labels, "%s: a label image nobody asked for", what);
    cr_assert_eq(got->num_sources, want->num_sources, "%s: %zu sources, %zu with labels", what, got->num_sources,
                 want->num_sources);
    cr_assert(memcmp(&got->clip, &want->clip, sizeof got->clip) == 0, "%s: the clip differs", what);
    for (size_t k = 0; k < got->num_sources; k++) {
        const gpuws_source *a = &got->sources[k], *b = &want->sources[k];
        const double e = (double)b->npix * 0x1p-53;
        cr_assert(a->id == b->id && a->npix == b->npix && a->peak == b->peak && a->peak_x == b->peak_x &&
                      a->peak_y == b->peak_y,
                  "%s: source %zu: npix %lld / %lld, peak %.9g at (%lld, %lld) / %.9g at (%lld, %lld)", what, k + 1,
                  (long long)a->npix, (long long)b->npix, a->peak, (long long)a->peak_x, (long long)a->peak_y, b->peak,
                  (long long)b->peak_x, (long long)b->peak_y);
        cr_assert(fabs(a->flux - b->flux) <= 4 * e * fabs(b->flux), "%s: source %zu: flux %.17g / %.17g", what, k + 1,
                  a->flux, b->flux);
        cr_assert(fabs(a->x - b->x) <= 8 * e * (fabs(b->x) + 1) && fabs(a->y - b->y) <= 8 * e * (fabs(b->y) + 1),
                  "%s: source %zu: centre (%.17g, %.17g) / (%.17g, %.17g)", what, k + 1, a->x, a->y, b->x, b->y);
    }
}

/* A 1024² sky over one, two and three devices (contexts of one device here: the call cannot tell), from host
 * memory (options->more_contexts) and from device buffers in parts on whole measurement blocks (with a part of no
 * rows), and in parts that cut blocks: gpuws_find_sources' results (expect_one_device), and the clip's bits the same
 * for every split on whole blocks. */
BACKEND_TEST(find_sources_parts, any_split_finds_the_sources_of_one_device)
{
    gpuws_context *ctx[3] = { test_open(*kind), test_open(*kind), test_open(*kind) };
    gpuws_sky_params p = gpuws_sky_defaults(1024, 1024, 2028);
    gpuws_sky_source *src;
    float *img;
    gpuws_sources_options o;
    gpuws_catalog *one = device_catalog(ctx[0], &p, &o, &img, &src);
    const size_t w = p.width, h = p.height, br = gpuws_find_sources_host_block_rows(w);
    cr_assert_eq(br, 64, "blocks of %zu rows at width 1024", br);
    gpuws_catalog *aligned[4] = { NULL };
    o.more_contexts = ctx + 1, o.num_more_contexts = 1;
    TEST_OK(gpuws_find_sources(ctx[0], img, w, h, &o, &aligned[0]));
    expect_one_device(aligned[0], one, img, w, h, 4, "two devices from host memory");
    o.num_more_contexts = 2;
    TEST_OK(gpuws_find_sources(ctx[0], img, w, h, &o, &aligned[1]));
    expect_one_device(aligned[1], one, img, w, h, 4, "three devices from host memory");
    o.more_contexts = NULL, o.num_more_contexts = 0;
    const size_t whole[1] = { h }, blocks[4] = { 5 * br, 0, 3 * br, h - 8 * br };
    aligned[2] = parts_catalog(ctx, 1, whole, img, w, &o);
    expect_one_device(aligned[2], one, img, w, h, 4, "one part");
    gpuws_context *const four[4] = { ctx[0], ctx[1], ctx[2], ctx[2] };
    aligned[3] = parts_catalog(four, 4, blocks, img, w, &o);
    expect_one_device(aligned[3], one, img, w, h, 4, "four parts on whole blocks");
    for (int r = 1; r < 4; r++)
        cr_assert(memcmp(&aligned[r]->clip, &aligned[0]->clip, sizeof aligned[0]->clip) == 0,
                  "split %d: the clip's bits differ from two devices' (std %.17g against %.17g)", r,
                  aligned[r]->clip.std, aligned[0]->clip.std);
    const size_t cut[3] = { 333, 1, h - 334 };
    gpuws_catalog *uneven = parts_catalog(ctx, 3, cut, img, w, &o);
    expect_one_device(uneven, one, img, w, h, 4, "parts that cut blocks");
    o.want_labels = 0;
    gpuws_catalog *bare[2] = { parts_catalog(four, 4, blocks, img, w, &o), NULL };
    expect_same_sources(bare[0], aligned[3], "four parts without the label image");
    o.more_contexts = ctx + 1, o.num_more_contexts = 1;
    TEST_OK(gpuws_find_sources(ctx[0], img, w, h, &o, &bare[1]));
    expect_same_sources(bare[1], aligned[0], "two devices from host memory without the label image");
    gpuws_catalog_free(bare[0]);
    gpuws_catalog_free(bare[1]);
    cr_assert(one->num_sources > 40, "%zu sources: the case tests little", one->num_sources);
    for (int r = 0; r < 4; r++) gpuws_catalog_free(aligned[r]);
    gpuws_catalog_free(uneven);
    gpuws_catalog_free(one);
    free(img);
    free(src);
    for (int c = 0; c < 3; c++) gpuws_context_destroy(ctx[c]);
}

/* split_image (bars through three parts' rows, a U joined only at its bottom, sources on the parts' borders, NaN
 * half-rows) with an absolute threshold, 4- and 8-connectivity, in parts of 81, 9, 0, 30 and the rest rows:
 * gpuws_find_sources' labels and sources. */
BACKEND_TEST(find_sources_parts, components_through_several_parts_are_joined)
{
    gpuws_context *ctx[2] = { test_open(*kind), test_open(*kind) };
    float *img = malloc((size_t)SPLIT_W * SPLIT_H * sizeof *img);
    cr_assert_not_null(img);
    split_image(img);
    const size_t rows[4] = { 81, 9, 30, SPLIT_H - 120 }, rows0[4] = { 81, 0, 39, SPLIT_H - 120 };
    gpuws_context *const on[4] = { ctx[0], ctx[1], ctx[0], ctx[1] };
    for (int conn = 4; conn <= 8; conn += 4) {
        gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
        o.want_labels = 1, o.connectivity = conn, o.threshold_abs = 1.5;
        gpuws_catalog *one = NULL;
        TEST_OK(gpuws_find_sources(ctx[0], img, SPLIT_W, SPLIT_H, &o, &one));
        gpuws_catalog *a = parts_catalog(on, 4, rows, img, SPLIT_W, &o),
                      *b = parts_catalog(on, 4, rows0, img, SPLIT_W, &o);
        expect_one_device(a, one, img, SPLIT_W, SPLIT_H, conn, "parts of 81, 9, 30 rows");
        expect_one_device(b, one, img, SPLIT_W, SPLIT_H, conn, "parts of 81, 0, 39 rows");
        o.want_labels = 0; /* the U's arms: two numbers of each part above its foot, one label of the image */
        gpuws_catalog *bare = parts_catalog(on, 4, rows, img, SPLIT_W, &o);
        expect_same_sources(bare, a, "parts of 81, 9, 30 rows without the label image");
        gpuws_catalog_free(bare);
        /* the measurement's path for more than 2^32 pixels maps the labels in both of its passes */
        for (int c = 0; c < 2; c++) test_tune(ctx[c], "measure_wide_peak", "1");
        bare = parts_catalog(on, 4, rows, img, SPLIT_W, &o);
        expect_same_sources(bare, a, "parts of 81, 9, 30 rows without the label image, the wide measurement");
        gpuws_catalog_free(bare);
        for (int c = 0; c < 2; c++) test_tune(ctx[c], "measure_wide_peak", NULL);
        size_t across = 0; /* sources with pixels in three parts or more */
        for (size_t k = 0; k < one->num_sources; k++) {
            int seen[4] = { 0 };
            for (size_t r = 60; r < 200; r++)
                for (size_t c = 0; c < SPLIT_W; c++)
                    if (one->labels[r * SPLIT_W + c] == (int32_t)k + 1)
                        seen[r < 81 ? 0 : r < 90 ? 1 : r < 120 ? 2 : 3] = 1;
            across += seen[0] + seen[1] + seen[2] + seen[3] >= 3;
        }
        cr_assert(across >= 2, "%zu sources through three parts: the case tests little", across);
        gpuws_catalog_free(a);
        gpuws_catalog_free(b);
        gpuws_catalog_free(one);
    }
    free(img);
    gpuws_context_destroy(ctx[1]);
    gpuws_context_destroy(ctx[0]);
}

/* Bad input: a clear status, no catalogue, nothing run. */
Test(find_sources_parts, bad_parts_are_refused_without_a_catalog)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    gpuws_stream *s[2];
    gpuws_buffer *b;
    TEST_OK(gpuws_stream_create(ctx, &s[0]));
    TEST_OK(gpuws_stream_create(ctx, &s[1]));
    TEST_OK(gpuws_buffer_create(ctx, 16 * sizeof(float), &b));
    gpuws_image_part parts[2] = { { s[0], b, 2 }, { s[1], b, 2 } };
    gpuws_catalog *cat = (gpuws_catalog *)1;
#define REFUSED(want, call, text)                                                                                      \
    do {                                                                                                               \
        cat = (gpuws_catalog *)1;                                                                                      \
        TEST_FAILS(want, call);                                                                                        \
        cr_assert_null(cat);                                                                                           \
        cr_assert(strstr(gpuws_last_error(), text), "%s", gpuws_last_error());                                         \
    } while (0)
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, NULL, NULL));
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(NULL, 2, 4, NULL, &cat), "parts is NULL");
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 0, 4, NULL, &cat), "0 parts");
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 0, NULL, &cat), "no pixels");
    parts[1].stream = s[0];
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, NULL, &cat), "again");
    parts[1].stream = NULL;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, NULL, &cat), "is NULL");
    parts[1].stream = s[1], parts[1].rows = 5;
    REFUSED(GPUWS_ERR_OUT_OF_RANGE, gpuws_find_sources_parts(parts, 2, 4, NULL, &cat), "parts[1].image");
    parts[0].rows = parts[1].rows = 0;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, NULL, &cat), "no pixels");
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.connectivity = 6, parts[0].rows = 2;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, &o, &cat), "connectivity 6");
    float img[16] = { 0 };
    o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    gpuws_context *again[1] = { ctx };
    o.more_contexts = again, o.num_more_contexts = 1;
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources(ctx, img, 4, 4, &o, &cat), "each device once");
    o.num_more_contexts = 0;
    parts[1].rows = 2;
    TEST_OK(gpuws_buffer_write(b, 0, img, sizeof img));
    REFUSED(GPUWS_ERR_INVALID_ARGUMENT, gpuws_find_sources_parts(parts, 2, 4, &o, &cat), "constant image");
#undef REFUSED
    gpuws_buffer_destroy(b);
    gpuws_stream_destroy(s[1]);
    gpuws_stream_destroy(s[0]);
    gpuws_context_destroy(ctx);
}
