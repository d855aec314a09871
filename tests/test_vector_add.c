/* vector_add: c = a + b, on every backend, bit-identical to the reference (one correctly rounded addition). */
#include "support.h"
#include "vector_add/vector_add_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    size_t n;
    bool fresh_seed;
} va_case;

static const size_t sizes[] = { 0, 1, 31, 1000, (1u << 20) + 7, 1u << 24 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

ParameterizedTestParameters(vector_add, matches_reference_bit_for_bit)
{
    static va_case cases[2 * (NSIZES + 2)];
    size_t k = 0;
    for (int d = 0; d < 2; d++) {
        for (size_t s = 0; s < NSIZES; s++) cases[k++] = (va_case){ 0, d ? GPUWS_F64 : GPUWS_F32, sizes[s], false };
        cases[k++] = (va_case){ 0, d ? GPUWS_F64 : GPUWS_F32, 1000, true };
        cases[k++] = (va_case){ 0, d ? GPUWS_F64 : GPUWS_F32, (1u << 20) + 7, true };
    }
    return TEST_BACKEND_PARAMS(cases, k);
}

ParameterizedTest(va_case *c, vector_add, matches_reference_bit_for_bit)
{
    gpuws_context *ctx = test_open(c->backend);
    test_require_dtype(ctx, c->dtype);
    const size_t es = gpuws_dtype_size(c->dtype), bytes = c->n * es;
    uint64_t seed = test_seed(c->fresh_seed);
    void *a = malloc(bytes + 8), *b = malloc(bytes + 8), *want = malloc(bytes + 8);
    cr_assert(a && b && want);
    if (c->dtype == GPUWS_F32) {
        test_fill_uniform_f32(a, c->n, seed, -1e3, 1e3);
        test_fill_uniform_f32(b, c->n, seed + 1, -1e3, 1e3);
        gpuws_vector_add_ref_f32(a, b, want, c->n);
    } else {
        test_fill_uniform_f64(a, c->n, seed, -1e3, 1e3);
        test_fill_uniform_f64(b, c->n, seed + 1, -1e3, 1e3);
        gpuws_vector_add_ref_f64(a, b, want, c->n);
    }
    gpuws_buffer *da = test_buffer_from(ctx, a, bytes), *db = test_buffer_from(ctx, b, bytes),
                 *dc = test_buffer(ctx, bytes);
    TEST_OK(gpuws_vector_add(NULL, c->dtype, c->n, da, db, dc));
    gpuws_stream *s;
    TEST_OK(gpuws_context_get_default_stream(ctx, &s));
    TEST_OK(gpuws_stream_synchronize(s));
    unsigned char *got = test_download(dc, bytes);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < bytes; i += es)
        if (memcmp(got + i, (unsigned char *)want + i, es) != 0 && bad++ == 0) first = i / es;
    cr_assert_eq(bad, 0, "%s %s n=%zu: %zu of %zu elements differ from the reference (first at %zu)",
                 test_backend_name(c->backend), gpuws_dtype_name(c->dtype), c->n, bad, c->n, first);
    test_check_guard(dc, bytes, "c");
    free(got);
    free(a);
    free(b);
    free(want);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(vector_add, output_may_alias_an_input)
{
    gpuws_context *ctx = test_open(*kind);
    enum { N = 4099 };
    static float a[N], b[N], want[N], got[N];
    test_fill_uniform_f32(a, N, 7, -1, 1);
    test_fill_uniform_f32(b, N, 8, -1, 1);
    gpuws_vector_add_ref_f32(a, b, want, N);
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *db = test_buffer_from(ctx, b, sizeof b);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, N, da, db, da)); /* a += b */
    TEST_OK(gpuws_buffer_read(da, 0, got, sizeof got));
    cr_assert_arr_eq(got, want, sizeof got);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(vector_add, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *a = test_buffer(ctx, 400), *b = test_buffer(ctx, 400), *c = test_buffer(ctx, 400);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_vector_add(NULL, GPUWS_F32, 10, NULL, b, c));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_vector_add(NULL, GPUWS_F32, 10, a, b, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_vector_add(NULL, GPUWS_I32, 10, a, b, c));
    /* 101 floats need 404 bytes; each buffer holds 400 + guard: checked against the buffer's real size */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_vector_add(NULL, GPUWS_F32, (400 + TEST_GUARD_BYTES) / 4 + 1, a, b, c));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_vector_add(NULL, GPUWS_F64, SIZE_MAX / 4, a, b, c));
    cr_assert(strstr(gpuws_last_error(), "overflow"), "message: %s", gpuws_last_error());
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 400);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_vector_add(NULL, GPUWS_F32, 10, a, foreign, c));
    test_check_guard(c, 0, "c"); /* nothing written: every byte still poison */
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_buffer_destroy(c);
    gpuws_context_destroy(ctx);
}
