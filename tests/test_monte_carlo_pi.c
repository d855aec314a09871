/* monte_carlo_pi: Philox4x32-10 samples, hit counts identical on every backend (integers: bit-exact).
 *
 * Truth: Random123's published known-answer vectors for Philox4x32-10, and the sample mapping recomputed here in
 * double precision (x^2 + y^2 of two 24-bit fractions is exact in a double: 49 significant bits at most). The
 * estimate itself must land within 6 standard deviations of pi (binomial: sd = 4 sqrt(p(1-p)/n), p = pi/4). */
#include "support.h"
#include "monte_carlo_pi/monte_carlo_pi_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

Test(monte_carlo_pi, philox_matches_random123_known_answers)
{
    /* Random123 tests/kat_vectors, philox4x32_10 (also in TensorFlow's and Random123-Boost's test suites) */
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        { { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
        { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
          { 0xffffffff, 0xffffffff },
          { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
        { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 },
          { 0xa4093822, 0x299f31d0 },
          { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t got[4];
        gpuws_philox4x32_10(kat[i].ctr, kat[i].key, got);
        cr_assert_arr_eq(got, kat[i].out, sizeof got, "vector %zu: got %08x %08x %08x %08x", i, got[0], got[1], got[2],
                         got[3]);
    }
}

/* The documented mapping, recomputed independently: sample k uses words (r0, r1) or (r2, r3) of call k / 2. */
Test(monte_carlo_pi, reference_follows_the_documented_sample_mapping)
{
    const uint64_t seed = 0x0123456789abcdefULL;
    const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    uint64_t hits = 0;
    const uint64_t first = 0xfffffff0ULL * 2 + 1; /* an odd start, and counters whose high word becomes 1 */
    for (uint64_t k = first; k < first + 4001; k++) {
        const uint64_t j = k / 2;
        const uint32_t ctr[4] = { (uint32_t)j, (uint32_t)(j >> 32), 0, 0 };
        uint32_t r[4];
        gpuws_philox4x32_10(ctr, key, r);
        const uint32_t rx = k & 1 ? r[2] : r[0], ry = k & 1 ? r[3] : r[1];
        const double x = (double)(rx >> 8) * 0x1p-24, y = (double)(ry >> 8) * 0x1p-24;
        const int in = x * x + y * y < 1.0;
        cr_assert_eq(gpuws_monte_carlo_pi_ref(k, 1, seed), (uint64_t)in, "sample %llu", (unsigned long long)k);
        hits += (uint64_t)in;
    }
    cr_assert_eq(gpuws_monte_carlo_pi_ref(first, 4001, seed), hits);
}

typedef struct {
    gpuws_backend_kind backend;
    uint64_t first, n, seed;
    bool fresh_seed;
} mc_case;

ParameterizedTestParameters(monte_carlo_pi, hit_count_is_identical_to_the_reference)
{
    static const struct {
        uint64_t first, n, seed;
    } sizes[] = { { 0, 1, 1 },
                  { 0, 2, 1 },
                  { 0, 3, 7 },
                  { 1, 1, 7 },
                  { 1, 2, 7 },
                  { 0, 1001, 0 },
                  { 5, 999, 0xdeadbeefcafef00dULL },
                  { 0, (1u << 20) + 1, 42 },
                  { 0, 10000000, 2026 },
                  /* counters past 2^32 (high word non-zero), an odd start, and the very end of the sample space */
                  { (1ULL << 33) + 1, 100001, 3 },
                  { UINT64_MAX - 99, 100, 5 } };
    enum { NS = sizeof sizes / sizeof sizes[0] };
    static mc_case cases[NS + 1];
    size_t k = 0;
    for (size_t i = 0; i < NS; i++) cases[k++] = (mc_case){ 0, sizes[i].first, sizes[i].n, sizes[i].seed, false };
    cases[k++] = (mc_case){ 0, 0, 1000003, 0, true };
    return TEST_BACKEND_PARAMS(cases, k);
}

ParameterizedTest(mc_case *c, monte_carlo_pi, hit_count_is_identical_to_the_reference)
{
    gpuws_context *ctx = test_open(c->backend);
    const uint64_t seed = c->fresh_seed ? test_seed(true) : c->seed;
    const uint64_t want = gpuws_monte_carlo_pi_ref(c->first, c->n, seed);
    gpuws_buffer *hits = test_buffer(ctx, 8);
    TEST_OK(gpuws_monte_carlo_pi(NULL, c->first, c->n, seed, hits));
    uint64_t got;
    TEST_OK(gpuws_buffer_read(hits, 0, &got, 8));
    cr_assert_eq(got, want, "first=%llu n=%llu seed=%llu: %llu hits, reference %llu", (unsigned long long)c->first,
                 (unsigned long long)c->n, (unsigned long long)seed, (unsigned long long)got, (unsigned long long)want);
    test_check_guard(hits, 8, "hits");
    uint64_t via_value;
    double pi;
    TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, c->first, c->n, seed, &via_value, &pi));
    cr_assert_eq(via_value, want);
    cr_assert_eq(pi, 4.0 * (double)want / (double)c->n);
    gpuws_buffer_destroy(hits);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(monte_carlo_pi, estimate_is_statistically_consistent_with_pi)
{
    gpuws_context *ctx = test_open(*kind);
    const uint64_t n = 4000000;
    const double p = M_PI / 4, sd = 4 * sqrt(p * (1 - p) / (double)n);
    for (int fresh = 0; fresh < 2; fresh++) {
        const uint64_t seed = test_seed(fresh);
        double pi;
        TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, 0, n, seed, NULL, &pi));
        cr_assert(fabs(pi - M_PI) < 6 * sd, "seed %llu: estimate %.6f is %.1f standard deviations from pi",
                  (unsigned long long)seed, pi, fabs(pi - M_PI) / sd);
    }
    /* split ranges add up; and a different seed gives a different sample */
    uint64_t a, b, whole, other;
    TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, 0, 123457, 9, &a, NULL));
    TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, 123457, 200000, 9, &b, NULL));
    TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, 0, 323457, 9, &whole, NULL));
    TEST_OK(gpuws_monte_carlo_pi_value(ctx, NULL, 0, 323457, 10, &other, NULL));
    cr_assert_eq(a + b, whole);
    cr_assert_neq(other, whole);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(monte_carlo_pi, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *hits = test_buffer(ctx, 8);
    uint64_t h;
    double pi;
    TEST_OK(gpuws_monte_carlo_pi(NULL, 0, 0, 1, hits)); /* n = 0: zero hits */
    TEST_OK(gpuws_buffer_read(hits, 0, &h, 8));
    cr_assert_eq(h, 0);
    const unsigned char poison = TEST_POISON_BYTE;
    TEST_OK(gpuws_buffer_fill(hits, 0, &poison, 1, 8 + TEST_GUARD_BYTES));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_monte_carlo_pi_value(ctx, NULL, 0, 0, 1, &h, &pi));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_monte_carlo_pi(NULL, UINT64_MAX, 2, 1, hits));
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_monte_carlo_pi_value(ctx, NULL, 2, UINT64_MAX, 1, &h, &pi));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_monte_carlo_pi(NULL, 0, 10, 1, NULL));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_monte_carlo_pi_value(NULL, NULL, 0, 10, 1, &h, &pi));
    gpuws_buffer *tiny;
    TEST_OK(gpuws_buffer_create(ctx, 4, &tiny));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_monte_carlo_pi(NULL, 0, 10, 1, tiny));
    gpuws_context *other = test_open(*kind);
    gpuws_stream *foreign;
    TEST_OK(gpuws_context_get_default_stream(other, &foreign));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_monte_carlo_pi(foreign, 0, 10, 1, hits));
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_monte_carlo_pi_value(ctx, foreign, 0, 10, 1, &h, &pi));
    test_check_guard(hits, 0, "hits");
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(tiny);
    gpuws_buffer_destroy(hits);
    gpuws_context_destroy(ctx);
}

Test(monte_carlo_pi, cli_prints_the_estimate_the_hits_and_the_rate)
{
    const char *cli = getenv("GPUWS_CLI");
    if (!cli) cr_skip_test("GPUWS_CLI is not set (ctest sets it to the built gpuws tool)");
    char cmd[1024], out[4096], want[64];
    snprintf(cmd, sizeof cmd, "GPUWS_BACKEND=cpu '%s' pi 10^6 --seed 7 --repeat 1 2>/dev/null", cli);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    out[fread(out, 1, sizeof out - 1, p)] = 0;
    const int status = pclose(p);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "output: %s", out);
    snprintf(want, sizeof want, "(%llu of 1000000 samples inside, seed 7",
             (unsigned long long)gpuws_monte_carlo_pi_ref(0, 1000000, 7));
    cr_assert(strstr(out, want) && strstr(out, "samples/s") && strstr(out, "pi ~ 3.1"), "output: %s", out);
    snprintf(cmd, sizeof cmd, "'%s' pi 0 2>/dev/null; test $? = 2 && '%s' pi 10 --seed 2>/dev/null; test $? = 2", cli,
             cli);
    cr_assert_eq(system(cmd), 0, "pi 0 and a missing seed are usage errors (exit 2)");
}
