/* Primes below N: the workshop's check_prime_gpu over [0, N), and a fast sieve with the same output. */
#ifndef GPUWS_ALG_PRIMES_H
#define GPUWS_ALG_PRIMES_H
#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpuws_primes_variant {
    /* Segmented sieve of Eratosthenes (the default): base primes up to sqrt(N) are found on the device by one
     * work-group, then every work-group sieves its own segment of odd numbers in shared/local memory and writes
     * it out. O(N log log N) work. */
    GPUWS_PRIMES_FAST = 0,
    /* The workshop's kernel, kept as the "before": one thread per number, trial division by every i in
     * 2..num/2, stopping at the first divisor. O(N^2 / log N) work. */
    GPUWS_PRIMES_TRIAL = 1,
} gpuws_primes_variant;

/* The largest N accepted: every number below it fits in int32. */
#define GPUWS_PRIMES_MAX_N ((size_t)1 << 31)

/* For every i in [0, n): out[i] = i if i is prime, else 0 (int32, n elements), as the workshop's check_prime_gpu
 * returns; 0 and 1 are not prime. count (optional, NULL = not wanted): one uint64 receiving the number of primes
 * below n. out may be NULL when only the count is wanted (then count must not be NULL).
 *
 * Both variants give identical output. n == 0 writes only count (0).
 * Errors: n > GPUWS_PRIMES_MAX_N → GPUWS_ERR_OVERFLOW (the numbers would not fit in int32); an unknown variant,
 * out and count both NULL → GPUWS_ERR_INVALID_ARGUMENT; buffers too small → GPUWS_ERR_OUT_OF_RANGE. */
GPUWS_API gpuws_status gpuws_primes(gpuws_stream *stream, gpuws_primes_variant variant, size_t n, gpuws_buffer *out,
                                    gpuws_buffer *count);

#ifdef __cplusplus
}
#endif
#endif
