/* A block-level sum in the gpuws kernel dialect: each block adds up its 256 elements with a tree in shared memory
 * and writes one partial sum; the host adds the partials (the workshop's raw-kernel reduction).
 *
 * The shared memory here is dynamic: the kernel takes a GW_LOCAL pointer and the launch gives its size with
 * gpuws_arg_local(bytes), so one build serves any block size. The tree halves the number of active threads at
 * each step, with gw_barrier() between steps so each step reads the finished results of the one before.
 *
 * The values are small integers, so every partial sum is exact in float and must equal the host's. Choose the
 * backend with GPUWS_BACKEND=cuda|opencl|cpu. Exits 0 only when every partial sum and the total are right. */
#include <gpuws.h>

#include <stdio.h>
#include <stdlib.h>

static const char *source =
    "GW_KERNEL void block_sum(gw_u64 n, GW_GLOBAL const gw_f32 *x, GW_GLOBAL gw_f32 *partial,\n"
    "                         GW_LOCAL gw_f32 *s)\n"
    "{\n"
    "    const gw_u64 t = gw_thread_idx(0), i = gw_global_idx(0);\n"
    "    s[t] = i < n ? x[i] : 0.0f;\n"
    "    gw_barrier();\n"
    "    for (gw_u64 step = gw_block_dim(0) / 2; step > 0; step /= 2) { /* the block size is a power of two */\n"
    "        if (t < step) s[t] += s[t + step];\n"
    "        gw_barrier();\n"
    "    }\n"
    "    if (t == 0) partial[gw_block_idx(0)] = s[0];\n"
    "}\n";

#define N      1000000
#define BLOCK  256
#define BLOCKS ((N + BLOCK - 1) / BLOCK)

int main(void)
{
    float *x = malloc(N * sizeof *x), *partial = malloc(BLOCKS * sizeof *partial);
    gpuws_context *ctx = NULL;
    gpuws_program *prog = NULL;
    gpuws_buffer *dx = NULL, *dp = NULL;
    gpuws_status st = x && partial ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < N; i++) x[i] = (float)(i % 10);
    gpuws_device_info info;
    gpuws_kernel *k;
    gpuws_program_options opt = GPUWS_PROGRAM_OPTIONS_INIT;
    opt.file_name = "block_sum.gw";
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_program_create(ctx, source, &opt, &prog)) ||
        (st = gpuws_program_get_kernel(prog, "block_sum", &k)) || (st = gpuws_buffer_create(ctx, N * sizeof *x, &dx)) ||
        (st = gpuws_buffer_create(ctx, BLOCKS * sizeof *partial, &dp)) ||
        (st = gpuws_buffer_write(dx, 0, x, N * sizeof *x)))
        goto done;

    /* the last argument is the GW_LOCAL parameter: one float per thread of the block */
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(dx), gpuws_arg_buffer(dp),
                         gpuws_arg_local(BLOCK * sizeof(float)) };
    gpuws_launch_config cfg = { { BLOCKS, 1, 1 }, { BLOCK, 1, 1 } };
    if ((st = gpuws_launch(NULL, k, &cfg, args, 4)) ||
        (st = gpuws_buffer_read(dp, 0, partial, BLOCKS * sizeof *partial)))
        goto done;

    double total = 0, want_total = 0;
    for (int b = 0; b < BLOCKS; b++) {
        float want = 0.0f;
        for (int i = b * BLOCK; i < (b + 1) * BLOCK && i < N; i++) want += x[i];
        if (partial[b] != want) {
            fprintf(stderr, "block_sum: block %d summed to %g, want %g\n", b, (double)partial[b], (double)want);
            st = GPUWS_ERR_INTERNAL;
            goto done;
        }
        total += partial[b];
    }
    for (int i = 0; i < N; i++) want_total += x[i];
    if (total != want_total) {
        fprintf(stderr, "block_sum: total %.17g, want %.17g\n", total, want_total);
        st = GPUWS_ERR_INTERNAL;
        goto done;
    }
    printf("block_sum: checked %d block sums (total %.0f) against the host on %s: correct\n", BLOCKS, total, info.name);
done:
    if (st) fprintf(stderr, "block_sum: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    if (st == GPUWS_ERR_BUILD) fprintf(stderr, "compiler output:\n%s\n", gpuws_program_log(prog));
    gpuws_buffer_destroy(dx);
    gpuws_buffer_destroy(dp);
    gpuws_program_destroy(prog);
    gpuws_context_destroy(ctx);
    free(x);
    free(partial);
    return st ? 1 : 0;
}
