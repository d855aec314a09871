/* Monte Carlo estimate of pi from a counter-based generator: the same hit count on every backend. */
#ifndef GPUWS_ALG_MONTE_CARLO_PI_H
#define GPUWS_ALG_MONTE_CARLO_PI_H
#ifdef __cplusplus
extern "C" {
#endif

/* hits[0] (one uint64) = the number of samples k in [first, first + n) whose point (x, y) lies inside the quarter
 * circle, x^2 + y^2 < 1; the estimate is 4 * hits / n. Ranges of samples can be split over calls or devices:
 * the counts of [0, a) and [a, a + b) add up to the count of [0, a + b).
 *
 * Sample k comes from Philox4x32-10 (Salmon et al., SC'11; the Random123 constants) with key = {seed & 0xffffffff,
 * seed >> 32} and counter = {j & 0xffffffff, j >> 32, 0, 0} for j = k / 2: its four 32-bit words r0..r3 give
 * sample 2j from (r0, r1) and sample 2j + 1 from (r2, r3), each word r mapped to x = (r >> 8) * 2^-24 in [0, 1).
 * The test x^2 + y^2 < 1 is evaluated exactly, in 64-bit integers on the 24-bit values, so hits depends only on
 * (n, seed) and is identical on every backend and device. No sample array is ever stored.
 * n == 0 gives hits = 0; first + n > 2^64 → GPUWS_ERR_OVERFLOW. Asynchronous like every algorithm. */
GPUWS_API gpuws_status gpuws_monte_carlo_pi(gpuws_stream *stream, uint64_t first, uint64_t n, uint64_t seed,
                                            gpuws_buffer *hits);

/* The same, blocking, with the result on the host: *hits (may be NULL) and *pi = 4 * hits / n (may be NULL).
 * stream NULL = ctx's default stream (else it must belong to ctx). n == 0 → GPUWS_ERR_INVALID_ARGUMENT (no estimate). */
GPUWS_API gpuws_status gpuws_monte_carlo_pi_value(gpuws_context *ctx, gpuws_stream *stream, uint64_t first, uint64_t n,
                                                  uint64_t seed, uint64_t *hits, double *pi);

#ifdef __cplusplus
}
#endif
#endif
