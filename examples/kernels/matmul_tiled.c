/* The workshop's shared-memory tiled matrix multiply in the gpuws kernel dialect: C = A B with A of M x K, B of
 * K x N, all row-major float, for any M, N, K.
 *
 * A block of 16 x 16 threads computes a 16 x 16 tile of C. It walks along K one tile at a time: each thread loads
 * one element of A's tile and one of B's into block-shared memory (zero outside the matrices), gw_barrier() waits
 * until the whole tile is there, every thread adds its row-times-column of the two tiles, and a second barrier
 * keeps the tiles until everyone is done with them. Each element of A and B is read from global memory
 * N/16 and M/16 times instead of N and M times.
 *
 * The entries are small integers, so every sum is exact in float and the result must equal the host's bit for
 * bit. Choose the backend with GPUWS_BACKEND=cuda|opencl|cpu. Exits 0 only when all of C is right. */
#include <gpuws.h>

#include <stdio.h>
#include <stdlib.h>

static const char *source = "#define TILE 16\n"
                            "GW_KERNEL void matmul_tiled(gw_u32 M, gw_u32 N, gw_u32 K, GW_GLOBAL const gw_f32 *A,\n"
                            "                            GW_GLOBAL const gw_f32 *B, GW_GLOBAL gw_f32 *C)\n"
                            "{\n"
                            "    GW_SHARED gw_f32 As[TILE][TILE];\n"
                            "    GW_SHARED gw_f32 Bs[TILE][TILE];\n"
                            "    const gw_u64 tx = gw_thread_idx(0), ty = gw_thread_idx(1);\n"
                            "    const gw_u64 col = gw_block_idx(0) * TILE + tx, row = gw_block_idx(1) * TILE + ty;\n"
                            "    gw_f32 acc = 0.0f;\n"
                            "    for (gw_u64 t = 0; t < K; t += TILE) {\n"
                            "        As[ty][tx] = row < M && t + tx < K ? A[row * K + t + tx] : 0.0f;\n"
                            "        Bs[ty][tx] = t + ty < K && col < N ? B[(t + ty) * N + col] : 0.0f;\n"
                            "        gw_barrier(); /* the tiles are loaded */\n"
                            "        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];\n"
                            "        gw_barrier(); /* everyone is done with them */\n"
                            "    }\n"
                            "    if (row < M && col < N) C[row * N + col] = acc;\n"
                            "}\n";

#define TILE 16
enum { M = 100, N = 75, K = 130 }; /* none a multiple of the tile */

int main(void)
{
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)(i * 7 % 9 - 4); /* integers in [-4, 4] */
    for (int i = 0; i < K * N; i++) b[i] = (float)(i * 5 % 7 - 3);
    gpuws_context *ctx = NULL;
    gpuws_program *prog = NULL;
    gpuws_buffer *da = NULL, *db = NULL, *dc = NULL;
    gpuws_status st;
    gpuws_device_info info;
    gpuws_kernel *k;
    gpuws_program_options opt = GPUWS_PROGRAM_OPTIONS_INIT;
    opt.file_name = "matmul_tiled.gw";
    if ((st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_program_create(ctx, source, &opt, &prog)) ||
        (st = gpuws_program_get_kernel(prog, "matmul_tiled", &k)) || (st = gpuws_buffer_create(ctx, sizeof a, &da)) ||
        (st = gpuws_buffer_create(ctx, sizeof b, &db)) || (st = gpuws_buffer_create(ctx, sizeof c, &dc)) ||
        (st = gpuws_buffer_write(da, 0, a, sizeof a)) || (st = gpuws_buffer_write(db, 0, b, sizeof b)))
        goto done;

    /* a 2-D grid: x along the columns of C, y along its rows */
    gpuws_arg args[] = { gpuws_arg_u32(M),     gpuws_arg_u32(N),     gpuws_arg_u32(K),
                         gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc) };
    gpuws_launch_config cfg = { { (N + TILE - 1) / TILE, (M + TILE - 1) / TILE, 1 }, { TILE, TILE, 1 } };
    if ((st = gpuws_launch(NULL, k, &cfg, args, 6)) || (st = gpuws_buffer_read(dc, 0, c, sizeof c))) goto done;

    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = 0.0f;
            for (int l = 0; l < K; l++) want += a[i * K + l] * b[l * N + j];
            if (c[i * N + j] != want) {
                fprintf(stderr, "matmul_tiled: C[%d][%d] is %g, want %g\n", i, j, (double)c[i * N + j], (double)want);
                st = GPUWS_ERR_INTERNAL;
                goto done;
            }
        }
    printf("matmul_tiled: checked C = A B (%dx%d times %dx%d) against the host on %s: correct\n", M, K, K, N,
           info.name);
done:
    if (st) fprintf(stderr, "matmul_tiled: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    if (st == GPUWS_ERR_BUILD) fprintf(stderr, "compiler output:\n%s\n", gpuws_program_log(prog));
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_program_destroy(prog);
    gpuws_context_destroy(ctx);
    return st ? 1 : 0;
}
