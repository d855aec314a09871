/* A 256-bin histogram of bytes in the gpuws kernel dialect, with block-shared memory and atomics.
 *
 * Each block counts its share of the input into its own bins in shared memory (GW_SHARED: one array per block,
 * fast, contended only by the block's threads), then adds its bins to the global histogram with one atomic per
 * bin. gw_barrier() separates the phases: every thread must see the cleared bins before counting, and the full
 * counts before publishing them. Choose the backend with GPUWS_BACKEND=cuda|opencl|cpu. Exits 0 only when all
 * 256 counts equal the host's. */
#include <gpuws.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *source =
    "#define BINS 256\n"
    "GW_KERNEL void histogram256(gw_u64 n, GW_GLOBAL const gw_u8 *data, GW_GLOBAL gw_u32 *bins)\n"
    "{\n"
    "    GW_SHARED gw_u32 local_bins[BINS]; /* one per block, shared by its threads */\n"
    "    const gw_u64 t = gw_thread_idx(0), threads = gw_block_dim(0);\n"
    "    for (gw_u64 b = t; b < BINS; b += threads) local_bins[b] = 0;\n"
    "    gw_barrier();\n"
    "    /* a grid-stride loop: any grid covers any n */\n"
    "    for (gw_u64 i = gw_global_idx(0); i < n; i += gw_global_size(0))\n"
    "        gw_atomic_add_u32(&local_bins[data[i]], 1);\n"
    "    gw_barrier();\n"
    "    for (gw_u64 b = t; b < BINS; b += threads)\n"
    "        if (local_bins[b]) gw_atomic_add_u32(&bins[b], local_bins[b]);\n"
    "}\n";

#define N     (3 * 1000 * 1000 + 17)
#define BLOCK 256
#define GRID  64

int main(void)
{
    gpuws_context *ctx = NULL;
    gpuws_program *prog = NULL;
    gpuws_buffer *ddata = NULL, *dbins = NULL;
    uint8_t *data = malloc(N);
    uint32_t bins[256], want[256] = { 0 };
    gpuws_status st = data ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    uint32_t x = 12345; /* a fixed xorshift stream, skewed towards low values so the bins differ */
    for (int i = 0; !st && i < N; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        data[i] = (uint8_t)((x & 0xff) * ((x >> 8) & 0xff) >> 8);
        want[data[i]]++;
    }
    gpuws_device_info info;
    gpuws_kernel *k;
    gpuws_program_options opt = GPUWS_PROGRAM_OPTIONS_INIT;
    opt.file_name = "histogram.gw";
    const uint32_t zero = 0;
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_program_create(ctx, source, &opt, &prog)) ||
        (st = gpuws_program_get_kernel(prog, "histogram256", &k)) || (st = gpuws_buffer_create(ctx, N, &ddata)) ||
        (st = gpuws_buffer_create(ctx, sizeof bins, &dbins)) || (st = gpuws_buffer_write(ddata, 0, data, N)) ||
        (st = gpuws_buffer_fill(dbins, 0, &zero, 4, sizeof bins)))
        goto done;

    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(ddata), gpuws_arg_buffer(dbins) };
    gpuws_launch_config cfg = { { GRID, 1, 1 }, { BLOCK, 1, 1 } };
    if ((st = gpuws_launch(NULL, k, &cfg, args, 3)) || (st = gpuws_buffer_read(dbins, 0, bins, sizeof bins))) goto done;

    for (int b = 0; b < 256; b++)
        if (bins[b] != want[b]) {
            fprintf(stderr, "histogram: bin %d holds %u, want %u\n", b, bins[b], want[b]);
            st = GPUWS_ERR_INTERNAL;
            goto done;
        }
    printf("histogram: checked 256 bins of %d bytes against the host on %s: correct\n", N, info.name);
done:
    if (st) fprintf(stderr, "histogram: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    if (st == GPUWS_ERR_BUILD) fprintf(stderr, "compiler output:\n%s\n", gpuws_program_log(prog));
    gpuws_buffer_destroy(ddata);
    gpuws_buffer_destroy(dbins);
    gpuws_program_destroy(prog);
    gpuws_context_destroy(ctx);
    free(data);
    return st ? 1 : 0;
}
