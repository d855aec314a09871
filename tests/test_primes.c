/* primes: out[i] = i if prime else 0 for i < n, and the count, on every backend and both variants.
 *
 * Truth: the prime-counting function's known values (pi(10^4) = 1229, pi(10^5) = 9592, pi(10^6) = 78498,
 * pi(10^7) = 664579) and, element by element, a primality test written here independently of the library.
 * Then every backend and variant against the reference sieve: integers, so bit-exact. */
#include "support.h"
#include "primes/primes_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int is_prime_slow(uint64_t x)
{
    if (x < 2) return 0;
    for (uint64_t d = 2; d * d <= x; d++)
        if (x % d == 0) return 0;
    return 1;
}

Test(primes, reference_matches_known_prime_counts)
{
    static const struct {
        size_t n;
        uint64_t pi;
    } known[] = { { 0, 0 },
                  { 1, 0 },
                  { 2, 0 },
                  { 3, 1 },
                  { 4, 2 },
                  { 10, 4 },
                  { 100, 25 },
                  { 10000, 1229 },
                  { 100000, 9592 },
                  { 1000000, 78498 },
                  { 10000000, 664579 } };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        uint64_t c = 12345;
        cr_assert_eq(gpuws_primes_ref_sieve(NULL, known[k].n, &c), 0);
        cr_assert_eq(c, known[k].pi, "sieve: pi(%zu) = %llu, want %llu", known[k].n, (unsigned long long)c,
                     (unsigned long long)known[k].pi);
        if (known[k].n <= 10000) {
            gpuws_primes_ref_trial(NULL, known[k].n, &c);
            cr_assert_eq(c, known[k].pi, "trial: pi(%zu) = %llu", known[k].n, (unsigned long long)c);
        }
    }
}

Test(primes, reference_flags_each_number_correctly)
{
    enum { N = 30011 }; /* a prime, so the last element is a prime that must be flagged */
    int32_t *sieve = malloc(N * sizeof *sieve), *trial = malloc(N * sizeof *trial);
    uint64_t cs, ct;
    cr_assert(sieve && trial);
    cr_assert_eq(gpuws_primes_ref_sieve(sieve, N, &cs), 0);
    gpuws_primes_ref_trial(trial, N, &ct);
    for (size_t i = 0; i < N; i++) {
        const int32_t want = is_prime_slow(i) ? (int32_t)i : 0;
        cr_assert_eq(sieve[i], want, "sieve: out[%zu] = %d, want %d", i, sieve[i], want);
        cr_assert_eq(trial[i], want, "trial: out[%zu] = %d, want %d", i, trial[i], want);
    }
    cr_assert_eq(cs, ct);
    free(sieve);
    free(trial);
}

typedef struct {
    gpuws_backend_kind backend;
    gpuws_primes_variant variant;
    size_t n;
} pr_case;

/* Edge sizes, primes, and sizes around segment lengths (2 * 1024 .. 2 * 16384 numbers) and the 4-number stores. */
static const size_t fast_sizes[] = { 1,    2,    3,    4,    5,     6,     7,     9,      97,      1000,
                                     2047, 2048, 2049, 4099, 32767, 32768, 32769, 100003, 1000000, 10000000 };
static const size_t trial_sizes[] = { 1, 2, 3, 5, 97, 1000, 4099, 10000 };

ParameterizedTestParameters(primes, matches_reference_bit_for_bit)
{
    static pr_case cases[sizeof fast_sizes / sizeof fast_sizes[0] + sizeof trial_sizes / sizeof trial_sizes[0]];
    size_t k = 0;
    for (size_t i = 0; i < sizeof fast_sizes / sizeof fast_sizes[0]; i++)
        cases[k++] = (pr_case){ 0, GPUWS_PRIMES_FAST, fast_sizes[i] };
    for (size_t i = 0; i < sizeof trial_sizes / sizeof trial_sizes[0]; i++)
        cases[k++] = (pr_case){ 0, GPUWS_PRIMES_TRIAL, trial_sizes[i] };
    return TEST_BACKEND_PARAMS(cases, k);
}

static void check_against_reference(gpuws_context *ctx, gpuws_primes_variant v, size_t n)
{
    const size_t bytes = n * sizeof(int32_t);
    int32_t *want = malloc(bytes);
    uint64_t want_count, got_count;
    cr_assert(want);
    cr_assert_eq(gpuws_primes_ref_sieve(want, n, &want_count), 0);
    gpuws_buffer *out = test_buffer(ctx, bytes), *count = test_buffer(ctx, 8);
    TEST_OK(gpuws_primes(NULL, v, n, out, count));
    int32_t *got = test_download(out, bytes);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0) first = i;
    cr_assert_eq(bad, 0, "%s n=%zu: %zu of %zu numbers differ from the reference; first out[%zu] = %d (want %d)",
                 v == GPUWS_PRIMES_FAST ? "fast" : "trial", n, bad, n, first, bad ? got[first] : 0,
                 bad ? want[first] : 0);
    TEST_OK(gpuws_buffer_read(count, 0, &got_count, 8));
    cr_assert_eq(got_count, want_count, "n=%zu: count %llu, want %llu", n, (unsigned long long)got_count,
                 (unsigned long long)want_count);
    test_check_guard(out, bytes, "out");
    test_check_guard(count, 8, "count");
    free(got);
    free(want);
    gpuws_buffer_destroy(out);
    gpuws_buffer_destroy(count);
}

ParameterizedTest(pr_case *c, primes, matches_reference_bit_for_bit)
{
    gpuws_context *ctx = test_open(c->backend);
    check_against_reference(ctx, c->variant, c->n);
    gpuws_context_destroy(ctx);
}

/* The workshop's largest size for the trial kernel (100 000: 9592 primes): one case, it is slow on PoCL. */
BACKEND_TEST(primes, trial_variant_finds_9592_primes_below_100000)
{
    gpuws_context *ctx = test_open(*kind);
    check_against_reference(ctx, GPUWS_PRIMES_TRIAL, 100000);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(primes, count_alone_and_output_alone)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *count = test_buffer(ctx, 8);
    uint64_t c;
    /* count only: no output array at all (pi(10^7) = 664579) */
    TEST_OK(gpuws_primes(NULL, GPUWS_PRIMES_FAST, 10000000, NULL, count));
    TEST_OK(gpuws_buffer_read(count, 0, &c, 8));
    cr_assert_eq(c, 664579, "pi(10^7) = %llu", (unsigned long long)c);
    TEST_OK(gpuws_primes(NULL, GPUWS_PRIMES_TRIAL, 10000, NULL, count));
    TEST_OK(gpuws_buffer_read(count, 0, &c, 8));
    cr_assert_eq(c, 1229, "trial pi(10^4) = %llu", (unsigned long long)c);
    /* output only; then n = 0 writes the count 0 and nothing else */
    gpuws_buffer *out = test_buffer(ctx, 100 * 4);
    TEST_OK(gpuws_primes(NULL, GPUWS_PRIMES_FAST, 100, out, NULL));
    int32_t got[100];
    TEST_OK(gpuws_buffer_read(out, 0, got, sizeof got));
    for (int i = 0; i < 100; i++) cr_assert_eq(got[i], is_prime_slow((uint64_t)i) ? i : 0, "out[%d] = %d", i, got[i]);
    TEST_OK(gpuws_primes(NULL, GPUWS_PRIMES_FAST, 0, out, count));
    TEST_OK(gpuws_buffer_read(count, 0, &c, 8));
    cr_assert_eq(c, 0);
    TEST_OK(gpuws_buffer_read(out, 0, got, sizeof got));
    cr_assert_eq(got[97], 97, "n = 0 must not touch out");
    gpuws_buffer_destroy(out);
    gpuws_buffer_destroy(count);
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(primes, rejects_bad_input_and_writes_nothing)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_buffer *out = test_buffer(ctx, 400), *count = test_buffer(ctx, 8);
    /* 2^31 + 1 numbers: the last one does not fit in int32 */
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_primes(NULL, GPUWS_PRIMES_FAST, GPUWS_PRIMES_MAX_N + 1, NULL, count));
    cr_assert(strstr(gpuws_last_error(), "2^31"), "message: %s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_OVERFLOW, gpuws_primes(NULL, GPUWS_PRIMES_TRIAL, SIZE_MAX, out, count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_primes(NULL, (gpuws_primes_variant)2, 10, out, count));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_primes(NULL, GPUWS_PRIMES_FAST, 10, NULL, NULL));
    /* 400 bytes + guard hold 116 numbers, not 117 */
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE,
               gpuws_primes(NULL, GPUWS_PRIMES_FAST, (400 + TEST_GUARD_BYTES) / 4 + 1, out, count));
    gpuws_buffer *tiny; /* 4 bytes, no guard: too small for the uint64 count */
    TEST_OK(gpuws_buffer_create(ctx, 4, &tiny));
    TEST_FAILS(GPUWS_ERR_OUT_OF_RANGE, gpuws_primes(NULL, GPUWS_PRIMES_FAST, 10, out, tiny));
    gpuws_context *other = test_open(*kind);
    gpuws_buffer *foreign = test_buffer(other, 8);
    TEST_FAILS(GPUWS_ERR_WRONG_CONTEXT, gpuws_primes(NULL, GPUWS_PRIMES_FAST, 10, out, foreign));
    test_check_guard(out, 0, "out");
    test_check_guard(count, 0, "count");
    gpuws_buffer_destroy(foreign);
    gpuws_context_destroy(other);
    gpuws_buffer_destroy(tiny);
    gpuws_buffer_destroy(out);
    gpuws_buffer_destroy(count);
    gpuws_context_destroy(ctx);
}

/* Runs the gpuws tool with args on the CPU backend; returns its exit code and its stdout in out. */
static int run_cli(const char *args, char *out, size_t size)
{
    const char *cli = getenv("GPUWS_CLI");
    if (!cli) cr_skip_test("GPUWS_CLI is not set (ctest sets it to the built gpuws tool)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "GPUWS_BACKEND=cpu '%s' %s 2>/dev/null", cli, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, size - 1, p);
    out[len] = 0;
    const int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(primes, cli_prints_the_count_the_time_and_the_rate)
{
    char out[4096];
    cr_assert_eq(run_cli("primes 10^4 --repeat 1", out, sizeof out), 0, "output: %s", out);
    cr_assert(strstr(out, "1229 primes below 10000") && strstr(out, " ms ") && strstr(out, "numbers/s"), "output: %s",
              out);
    cr_assert_eq(run_cli("primes 1e5 --variant trial --repeat 1 --count-only", out, sizeof out), 0);
    cr_assert(strstr(out, "9592 primes below 100000") && strstr(out, "trial"), "output: %s", out);
    /* usage errors, N out of range or not a whole number included (tools/commands.h: one parser, one exit code) */
    cr_assert_eq(run_cli("primes 2147483649", out, sizeof out), 2); /* past 2^31 */
    cr_assert_eq(run_cli("primes 1.5", out, sizeof out), 2);
    cr_assert_eq(run_cli("primes 100 --variant slow", out, sizeof out), 2);
    cr_assert_eq(run_cli("primes", out, sizeof out), 2);
}
