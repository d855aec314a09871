/* The workshop's check_prime_gpu_kernel in the gpuws kernel dialect: one thread checks one number by trial
 * division and writes result = num if it is prime, else 0 (0 and 1 are not prime).
 *
 * The host checks every answer against a sieve of Eratosthenes, a different method. Choose the backend with
 * GPUWS_BACKEND=cuda|opencl|cpu. Exits 0 only when all answers are right. */
#include <gpuws.h>

#include <stdio.h>
#include <stdlib.h>

/* The workshop divides by every i in 2..num/2; stopping at i * i > num finds the same primes with far fewer
 * divisions. The loop runs in 64 bits so i * i cannot overflow near INT32_MAX. */
static const char *source =
    "GW_KERNEL void check_prime_gpu_kernel(gw_u64 n, GW_GLOBAL const gw_i32 *num, GW_GLOBAL gw_i32 *result)\n"
    "{\n"
    "    gw_u64 t = gw_global_idx(0);\n"
    "    if (t >= n) return;\n"
    "    gw_i64 v = num[t];\n"
    "    gw_i32 prime = v >= 2;\n"
    "    for (gw_i64 i = 2; prime && i * i <= v; i++)\n"
    "        if (v % i == 0) prime = 0;\n"
    "    result[t] = prime ? (gw_i32)v : 0;\n"
    "}\n";

#define UPPER 100000 /* the workshop's largest run: the numbers 0 .. UPPER-1 */
#define BLOCK 128

int main(void)
{
    gpuws_context *ctx = NULL;
    gpuws_program *prog = NULL;
    gpuws_buffer *dnum = NULL, *dres = NULL;
    int32_t *num = malloc(UPPER * sizeof *num), *res = malloc(UPPER * sizeof *res);
    char *composite = calloc(UPPER, 1);
    gpuws_status st = num && res && composite ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < UPPER; i++) num[i] = i;
    gpuws_device_info info;
    gpuws_kernel *k;
    gpuws_program_options opt = GPUWS_PROGRAM_OPTIONS_INIT;
    opt.file_name = "check_prime.gw";
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_program_create(ctx, source, &opt, &prog)) ||
        (st = gpuws_program_get_kernel(prog, "check_prime_gpu_kernel", &k)) ||
        (st = gpuws_buffer_create(ctx, UPPER * sizeof *num, &dnum)) ||
        (st = gpuws_buffer_create(ctx, UPPER * sizeof *res, &dres)) ||
        (st = gpuws_buffer_write(dnum, 0, num, UPPER * sizeof *num)))
        goto done;

    gpuws_arg args[] = { gpuws_arg_u64(UPPER), gpuws_arg_buffer(dnum), gpuws_arg_buffer(dres) };
    gpuws_launch_config cfg = { { (UPPER + BLOCK - 1) / BLOCK, 1, 1 }, { BLOCK, 1, 1 } };
    if ((st = gpuws_launch(NULL, k, &cfg, args, 3)) || (st = gpuws_buffer_read(dres, 0, res, UPPER * sizeof *res)))
        goto done;

    /* the sieve: composite[i] for every i < UPPER that has a factor; 0 and 1 are not prime either */
    composite[0] = composite[1] = 1;
    for (long i = 2; i * i < UPPER; i++)
        if (!composite[i])
            for (long j = i * i; j < UPPER; j += i) composite[j] = 1;
    int primes = 0;
    for (int i = 0; i < UPPER; i++) {
        int want = composite[i] ? 0 : i;
        primes += !composite[i];
        if (res[i] != want) {
            fprintf(stderr, "check_prime: result[%d] is %d, want %d\n", i, (int)res[i], want);
            st = GPUWS_ERR_INTERNAL;
            goto done;
        }
    }
    printf("check_prime: checked %d numbers (%d primes) against a sieve on %s: correct\n", UPPER, primes, info.name);
done:
    if (st) fprintf(stderr, "check_prime: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    if (st == GPUWS_ERR_BUILD) fprintf(stderr, "compiler output:\n%s\n", gpuws_program_log(prog));
    gpuws_buffer_destroy(dnum);
    gpuws_buffer_destroy(dres);
    gpuws_program_destroy(prog);
    gpuws_context_destroy(ctx);
    free(num);
    free(res);
    free(composite);
    return st ? 1 : 0;
}
