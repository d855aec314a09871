/* The smallest complete gpuws program: pick a device from the environment, add two vectors on it, check. */
#include <gpuws.h>
#include <gpuws/algorithms.h>

#include <stdio.h>

#define N 1000000

static float a[N], b[N], c[N];

int main(void)
{
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 2.0f * (float)i;
    }
    gpuws_context *ctx = NULL;
    gpuws_buffer *da = NULL, *db = NULL, *dc = NULL;
    gpuws_status st;
    if ((st = gpuws_context_create(&ctx, NULL))) goto fail;
    gpuws_device_info info;
    gpuws_context_get_device_info(ctx, &info);
    if ((st = gpuws_buffer_create(ctx, sizeof a, &da)) || (st = gpuws_buffer_create(ctx, sizeof b, &db)) ||
        (st = gpuws_buffer_create(ctx, sizeof c, &dc)) || (st = gpuws_buffer_write(da, 0, a, sizeof a)) ||
        (st = gpuws_buffer_write(db, 0, b, sizeof b)) || (st = gpuws_vector_add(NULL, GPUWS_F32, N, da, db, dc)) ||
        (st = gpuws_buffer_read(dc, 0, c, sizeof c)))
        goto fail;
    for (int i = 0; i < N; i++) {
        if (c[i] != 3.0f * (float)i) {
            fprintf(stderr, "wrong result at %d: %g\n", i, (double)c[i]);
            st = GPUWS_ERR_INTERNAL;
            goto fail;
        }
    }
    printf("added %d floats on %s: correct\n", N, info.name);
fail:
    if (st) fprintf(stderr, "%s: %s\n", gpuws_status_name(st), gpuws_last_error());
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(db);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
    return st ? 1 : 0;
}
