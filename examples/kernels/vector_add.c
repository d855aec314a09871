/* Vector add written in the gpuws kernel dialect: c[i] = a[i] + b[i], one thread per element.
 *
 * The kernel below is the whole device side. gpuws compiles it at run time for the device the context opened
 * (NVRTC on CUDA, the OpenCL driver, the system C compiler on the CPU backend) and caches the build on disk.
 * Choose the backend with GPUWS_BACKEND=cuda|opencl|cpu (unset: the first available of cuda, opencl, cpu).
 * Exits 0 only when every element matches the host's sum. */
#include <gpuws.h>

#include <stdio.h>
#include <stdlib.h>

static const char *source =
    "GW_KERNEL void vector_add(gw_u64 n, GW_GLOBAL const gw_f32 *a, GW_GLOBAL const gw_f32 *b,\n"
    "                          GW_GLOBAL gw_f32 *c)\n"
    "{\n"
    "    gw_u64 i = gw_global_idx(0);   /* block index * block size + thread index */\n"
    "    if (i < n) c[i] = a[i] + b[i]; /* the grid is rounded up to whole blocks: guard the tail */\n"
    "}\n";

#define N     1000003 /* not a multiple of the block: the guard matters */
#define BLOCK 256

int main(void)
{
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    gpuws_context *ctx = NULL;
    gpuws_program *prog = NULL;
    gpuws_buffer *da = NULL, *db = NULL, *dc = NULL;
    gpuws_status st = a && b && c ? GPUWS_OK : GPUWS_ERR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)(i % 1000);
    }
    gpuws_device_info info;
    gpuws_kernel *k;
    gpuws_program_options opt = GPUWS_PROGRAM_OPTIONS_INIT;
    opt.file_name = "vector_add.gw"; /* compiler messages name this file, with the lines of `source` */
    if (st || (st = gpuws_context_create(&ctx, NULL)) || (st = gpuws_context_get_device_info(ctx, &info)) ||
        (st = gpuws_program_create(ctx, source, &opt, &prog)) ||
        (st = gpuws_program_get_kernel(prog, "vector_add", &k)) ||
        (st = gpuws_buffer_create(ctx, N * sizeof *a, &da)) || (st = gpuws_buffer_create(ctx, N * sizeof *b, &db)) ||
        (st = gpuws_buffer_create(ctx, N * sizeof *c, &dc)) || (st = gpuws_buffer_write(da, 0, a, N * sizeof *a)) ||
        (st = gpuws_buffer_write(db, 0, b, N * sizeof *b)))
        goto done;

    /* The arguments in the order of the kernel's parameters; gpuws_launch checks their number and kinds. */
    gpuws_arg args[] = { gpuws_arg_u64(N), gpuws_arg_buffer(da), gpuws_arg_buffer(db), gpuws_arg_buffer(dc) };
    gpuws_launch_config cfg = { { (N + BLOCK - 1) / BLOCK, 1, 1 }, { BLOCK, 1, 1 } };
    if ((st = gpuws_launch(NULL, k, &cfg, args, 4)) || (st = gpuws_buffer_read(dc, 0, c, N * sizeof *c))) goto done;

    for (int i = 0; i < N; i++)
        if (c[i] != a[i] + b[i]) {
            fprintf(stderr, "vector_add: element %d is %g, want %g\n", i, (double)c[i], (double)(a[i] + b[i]));
            st = GPUWS_ERR_INTERNAL;
            goto done;
        }
    printf("vector_add: checked %d sums against the host on %s: correct\n", N, info.name);
done:
    if (st) fprintf(stderr, "vector_add: %s: %s\n", gpuws_status_name(st), gpuws_last_error());
    if (st == GPUWS_ERR_BUILD) fprintf(stderr, "compiler output:\n%s\n", gpuws_program_log(prog));
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_program_destroy(prog); /* its kernels go with it */
    gpuws_context_destroy(ctx);
    free(a);
    free(b);
    free(c);
    return st ? 1 : 0;
}
