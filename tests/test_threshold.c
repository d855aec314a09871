/* threshold (segmentation): mask = data > t ? 1 : 0 on every backend, bit for bit (one comparison per value:
 * nothing to round). */
#include "support.h"
#include "threshold/threshold_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_backend_kind backend;
    size_t n;
    bool fresh;
} th_case;

static const size_t sizes[] = { 1, 3, 4, 5, 1000, 4099, (1u << 20) + 7 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

ParameterizedTestParameters(threshold, matches_reference_bit_for_bit)
{
    static th_case cases[NSIZES + 1];
    size_t k = 0;
    for (size_t s = 0; s < NSIZES; s++) cases[k++] = (th_case){ 0, sizes[s], false };
    cases[k++] = (th_case){ 0, 77777, true };
    return TEST_BACKEND_PARAMS(cases, k);
}

/* Uniform values in [-1, 1) with NaNs, infinities, signed zeros and values equal to the threshold mixed in. */
static float *make_data(size_t n, uint64_t seed, float t)
{
    float *x = malloc(n * sizeof *x + 4);
    cr_assert(x);
    test_fill_uniform_f32(x, n, seed, -1.0, 1.0);
    const float specials[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f };
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rand_u64(&seed) % 16;
        if (r < 7) x[i] = specials[r];
        else if (r == 7) x[i] = t;
        else if (r == 8) x[i] = nextafterf(t, INFINITY);
    }
    return x;
}

ParameterizedTest(th_case *c, threshold, matches_reference_bit_for_bit)
{
    gpuws_context *ctx = test_open(c->backend);
    const float t = 0.25f;
    float *x = make_data(c->n, test_seed(c->fresh), t);
    uint8_t *want = malloc(c->n);
    cr_assert(want);
    gpuws_threshold_ref(x, c->n, t, want);
    size_t ones = 0;
    for (size_t i = 0; i < c->n; i++) ones += want[i];
    cr_assert(c->n < 100 || (ones > c->n / 8 && ones < c->n / 2), "the data should give a mixed mask (%zu ones)", ones);
    gpuws_buffer *d = test_buffer_from(ctx, x, c->n * sizeof *x), *m = test_buffer(ctx, c->n);
    TEST_OK(gpuws_threshold(NULL, c->n, d, t, m));
    uint8_t *got = test_download(m, c->n);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < c->n; i++)
        if (got[i] != want[i] && bad++ == 0) first = i;
    cr_assert_eq(bad, 0, "%s n=%zu: %zu mask values differ (first at %zu: data %a, mask %u, expected %u)",
                 test_backend_name(c->backend), c->n, bad, first, (double)x[first], got[first], want[first]);
    test_check_guard(m, c->n, "mask");
    free(got);
    free(want);
    free(x);
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(m);
    gpuws_context_destroy(ctx);
}

/* Known answers: NaN compares false on either side; +0 and -0 are equal; denormals are numbers. */
BACKEND_TEST(threshold, edge_values)
{
    gpuws_context *ctx = test_open(*kind);
    const float x[] = { NAN, -INFINITY, -1.0f, -0.0f, 0.0f, 1e-45f, 1.0f, INFINITY, 2.0f };
    enum { N = sizeof x / sizeof x[0] };
    struct {
        float t;
        uint8_t want[N];
    } cases[] = {
        { 0.0f, { 0, 0, 0, 0, 0, 1, 1, 1, 1 } },     { -0.0f, { 0, 0, 0, 0, 0, 1, 1, 1, 1 } },
        { 1.0f, { 0, 0, 0, 0, 0, 0, 0, 1, 1 } },     { -INFINITY, { 0, 0, 1, 1, 1, 1, 1, 1, 1 } },
        { INFINITY, { 0, 0, 0, 0, 0, 0, 0, 0, 0 } }, { NAN, { 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
    };
    gpuws_buffer *d = test_buffer_from(ctx, x, sizeof x), *m = test_buffer(ctx, N);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t got[N];
        TEST_OK(gpuws_threshold(NULL, N, d, cases[c].t, m));
        TEST_OK(gpuws_buffer_read(m, 0, got, N));
        for (int i = 0; i < N; i++)
            cr_assert_eq(got[i], cases[c].want[i], "%s: %g > %g gave %u", test_backend_name(*kind), (double)x[i],
                         (double)cases[c].t, got[i]);
    }
    test_check_guard(m, N, "mask");
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(m);
    gpuws_context_destroy(ctx);
}

/* n == 0 writes nothing; bad arguments are refused before anything is written. */
BACKEND_TEST(threshold, bad_input_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    static float x[1024];
    test_fill_uniform_f32(x, 1024, 3, -1, 1);
    gpuws_buffer *d = test_buffer_from(ctx, x, 16 * sizeof(float)), *big = test_buffer_from(ctx, x, sizeof x);
    gpuws_buffer *m = test_buffer(ctx, 16), *mbig = test_buffer(ctx, 1024);
    const size_t mask_room = 16 + TEST_GUARD_BYTES, data_room = 16 + TEST_GUARD_BYTES / sizeof(float);
    TEST_OK(gpuws_threshold(NULL, 0, d, 0.0f, m));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_threshold(NULL, mask_room + 1, big, 0.0f, m));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_threshold(NULL, data_room + 1, d, 0.0f, mbig));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_threshold(NULL, 16, NULL, 0.0f, m));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_threshold(NULL, 16, d, 0.0f, NULL));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_threshold(NULL, SIZE_MAX / 2, d, 0.0f, m));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *m2 = test_buffer(other, 16);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_threshold(NULL, 16, d, 0.0f, m2));
    uint8_t got[1024 + TEST_GUARD_BYTES];
    TEST_OK(gpuws_buffer_read(m, 0, got, mask_room));
    for (size_t i = 0; i < mask_room; i++) cr_assert_eq(got[i], TEST_POISON_BYTE, "mask byte %zu was written", i);
    TEST_OK(gpuws_buffer_read(mbig, 0, got, sizeof got));
    for (size_t i = 0; i < sizeof got; i++) cr_assert_eq(got[i], TEST_POISON_BYTE, "mask byte %zu was written", i);
    gpuws_buffer_destroy(m2);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(d);
    gpuws_buffer_destroy(big);
    gpuws_buffer_destroy(m);
    gpuws_buffer_destroy(mbig);
    gpuws_context_destroy(ctx);
}
