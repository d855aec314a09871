/* transpose: out = inᵀ on every backend, bit for bit (elements are moved, never converted).
 *
 * Inputs are random bit patterns, so they include NaNs with payloads, signalling NaNs, subnormals and -0: any
 * conversion through a floating-point register would show. Shapes: single elements, single rows and columns,
 * below / at / across the 32×32 tile, primes, and more rows than NVIDIA's 65535 groups in y cover (2^21 + 33),
 * which makes the kernels loop. */
#include "support.h"
#include "transpose/transpose_ref.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    gpuws_backend_kind backend;
    gpuws_dtype dtype;
    size_t rows, cols;
    bool fresh_seed;
} tr_case;

static const size_t shapes[][2] = { { 1, 1 },   { 1, 1000 },  { 1000, 1 },   { 31, 33 },   { 32, 32 },
                                    { 64, 96 }, { 127, 129 }, { 1025, 513 }, { 4099, 37 }, { 2048, 2048 } };
#define NSHAPES (sizeof shapes / sizeof shapes[0])
static const gpuws_dtype dtypes[] = { GPUWS_F32, GPUWS_F64, GPUWS_I32 };

static void *random_bits(size_t bytes, uint64_t seed)
{
    unsigned char *x = malloc(bytes + 8);
    cr_assert_not_null(x);
    for (size_t i = 0; i < bytes; i += 8) {
        const uint64_t r = test_rand_u64(&seed);
        memcpy(x + i, &r, 8); /* the 8 bytes of slack cover the last partial word */
    }
    return x;
}

static void transpose_ref(gpuws_dtype dt, const void *in, void *out, size_t rows, size_t cols)
{
    if (gpuws_dtype_size(dt) == 4) gpuws_transpose_ref_b32(in, out, rows, cols);
    else gpuws_transpose_ref_b64(in, out, rows, cols);
}

Test(transpose, reference_gives_known_answers)
{
    /* [[1 2 3] [4 5 6]]ᵀ = [[1 4] [2 5] [3 6]] */
    const uint32_t a[6] = { 1, 2, 3, 4, 5, 6 }, want[6] = { 1, 4, 2, 5, 3, 6 };
    uint32_t t[6], back[6];
    gpuws_transpose_ref_b32(a, t, 2, 3);
    cr_assert_arr_eq(t, want, sizeof t);
    gpuws_transpose_ref_b32(t, back, 3, 2);
    cr_assert_arr_eq(back, a, sizeof back);
    /* element (i, j) of a 70×45 matrix holds i·1000 + j: it must land at (j, i), across the 32-blocks */
    enum { R = 70, C = 45 };
    static uint64_t x[R * C], y[R * C];
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < C; j++) x[i * C + j] = i * 1000 + j;
    gpuws_transpose_ref_b64(x, y, R, C);
    for (size_t j = 0; j < C; j++)
        for (size_t i = 0; i < R; i++) cr_assert_eq(y[j * R + i], i * 1000 + j, "out[%zu][%zu]", j, i);
}

ParameterizedTestParameters(transpose, matches_reference_bit_for_bit)
{
    static tr_case cases[3 * (NSHAPES + 1) + 1];
    size_t q = 0;
    for (size_t d = 0; d < 3; d++) {
        for (size_t s = 0; s < NSHAPES; s++) cases[q++] = (tr_case){ 0, dtypes[d], shapes[s][0], shapes[s][1], false };
        cases[q++] = (tr_case){ 0, dtypes[d], 333, 517, true };
    }
    cases[q++] = (tr_case){ 0, GPUWS_F32, ((size_t)1 << 21) + 33, 3, false };
    return TEST_BACKEND_PARAMS(cases, q);
}

ParameterizedTest(tr_case *c, transpose, matches_reference_bit_for_bit)
{
    gpuws_context *ctx = test_open(c->backend);
    test_require_dtype(ctx, c->dtype);
    const size_t es = gpuws_dtype_size(c->dtype), bytes = c->rows * c->cols * es;
    void *in = random_bits(bytes, test_seed(c->fresh_seed)), *want = malloc(bytes + 8);
    cr_assert_not_null(want);
    transpose_ref(c->dtype, in, want, c->rows, c->cols);
    gpuws_buffer *din = test_buffer_from(ctx, in, bytes), *dout = test_buffer(ctx, bytes);
    TEST_OK(gpuws_transpose(NULL, c->dtype, c->rows, c->cols, din, dout));
    unsigned char *got = test_download(dout, bytes);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < bytes; i += es)
        if (memcmp(got + i, (unsigned char *)want + i, es) != 0 && bad++ == 0) first = i / es;
    cr_assert_eq(bad, 0, "%s %s %zux%zu: %zu of %zu elements differ (first at out[%zu][%zu])",
                 test_backend_name(c->backend), gpuws_dtype_name(c->dtype), c->rows, c->cols, bad, c->rows * c->cols,
                 first / c->rows, first % c->rows);
    test_check_guard(dout, bytes, "out");
    /* the input is untouched */
    unsigned char *after = test_download(din, bytes);
    cr_assert(memcmp(after, in, bytes) == 0, "transpose modified its input");
    free(after);
    free(got);
    free(in);
    free(want);
    gpuws_buffer_destroy(din);
    gpuws_buffer_destroy(dout);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(transpose, empty_matrices_write_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *in = test_buffer(ctx, 64), *out = test_buffer(ctx, 64);
    TEST_OK(gpuws_transpose(NULL, GPUWS_F32, 0, 7, in, out));
    TEST_OK(gpuws_transpose(NULL, GPUWS_F64, 7, 0, in, out));
    TEST_OK(gpuws_transpose(NULL, GPUWS_F32, 0, 0, in, in)); /* nothing to move: no aliasing to reject */
    test_check_guard(out, 0, "out");
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(transpose, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *in = test_buffer(ctx, 400), *out = test_buffer(ctx, 400);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, GPUWS_F32, 10, 10, NULL, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, GPUWS_F32, 10, 10, in, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, GPUWS_I16, 10, 10, in, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, GPUWS_U8, 10, 10, in, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, (gpuws_dtype)99, 10, 10, in, out));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_transpose(NULL, GPUWS_F32, 10, 10, in, in)); /* in place */
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_transpose(NULL, GPUWS_F32, SIZE_MAX / 2, 3, in, out));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_transpose(NULL, GPUWS_F64, SIZE_MAX / 16, 4, in, out)); /* bytes overflow */
    cr_assert(strstr(gpuws_last_error(), "overflow"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_transpose(NULL, GPUWS_F32, 11, 11, in, out)); /* 484 > 400 + guard */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_transpose(NULL, GPUWS_F32, (size_t)1 << 31, 0, in, out)); /* 2^31 rows */
    TEST_OK(gpuws_transpose(NULL, GPUWS_F32, 0, ((size_t)1 << 31) - 1, in, out));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 400);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_transpose(NULL, GPUWS_F32, 10, 10, in, foreign));
    test_check_guard(out, 0, "out");
    test_check_guard(foreign, 0, "foreign");
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(in);
    gpuws_buffer_destroy(out);
    gpuws_context_destroy(ctx);
}
