/* gpuws_mpi_sigma_clip_host under mpirun -n P (ctest mpi_sigma_clip_P): every rank holds an uneven share of one
 * sky (rank 0 none when P > 1) and must get the bits of gpuws_sigma_clip_host on the whole sky; options that differ
 * between ranks must fail every rank, none hanging (ctest's time-out bounds the run). Then gpuws_mpi_sigma_clip on
 * the ranks' device buffers (shares of whole chunks of 2^18 values): the bits of one caller of
 * gpuws_sigma_clip_reduce on the whole sky, and gpuws_sigma_clip's count, median and iterations; a rank's invalid
 * kappa fails it with its own message and the others with "1 of P callers failed". Exit 0 when all ranks agree. */
#include "mpi_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One caller's reducer: the sum over one caller is its own words. */
static gpuws_status alone(void *user, uint64_t *words, size_t count)
{
    (void)user, (void)words, (void)count;
    return GPUWS_OK;
}

/* A device buffer holding x[0..n) (NULL when n is 0). */
static gpuws_buffer *on_device(gpuws_context *ctx, int rank, const float *x, size_t n)
{
    gpuws_buffer *b = NULL;
    if (n && (gpuws_buffer_create(ctx, n * sizeof *x, &b) || gpuws_buffer_write(b, 0, x, n * sizeof *x)))
        mpi_fail(rank, "a device buffer");
    return b;
}

/* gpuws_mpi_sigma_clip on shares of whole chunks (rank 0 none when P > 1, the last rank the rest). */
static void device_resident(gpuws_context *ctx, int rank, int size, const float *x, size_t n)
{
    const size_t chunk = (size_t)1 << 18, chunks = (n + chunk - 1) / chunk, holders = size > 1 ? size - 1 : 1,
                 me = size > 1 ? (size_t)rank - 1 : 0;
    size_t at = 0, mine = 0;
    if (size == 1 || rank > 0) {
        at = chunks * me / holders * chunk;
        const size_t end = rank + 1 == size ? n : chunks * (me + 1) / holders * chunk;
        mine = end - at;
    }
    gpuws_buffer *whole = on_device(ctx, rank, x, n), *part = on_device(ctx, rank, x + at, mine);
    gpuws_sigma_clip_result one, dev, got;
    if (gpuws_sigma_clip_reduce(NULL, whole, n, NULL, 0, 1, alone, NULL, &one))
        mpi_fail(rank, "gpuws_sigma_clip_reduce as one caller");
    if (gpuws_sigma_clip(NULL, n, whole, NULL, &dev)) mpi_fail(rank, "gpuws_sigma_clip on the whole sky");
    if (gpuws_mpi_sigma_clip(MPI_COMM_WORLD, NULL, part, mine, NULL, &got)) mpi_fail(rank, "gpuws_mpi_sigma_clip");
    if (memcmp(&got, &one, sizeof got) || got.count != dev.count || got.median != dev.median ||
        got.iterations != dev.iterations || got.converged != dev.converged ||
        !(fabs(got.std - dev.std) <= 1e-12 * dev.std)) {
        fprintf(stderr,
                "rank %d of %d on the devices: count %zu median %.17g mean %.17g std %.17g; one caller %zu %.17g "
                "%.17g %.17g; gpuws_sigma_clip %zu %.17g %.17g %.17g\n",
                rank, size, got.count, got.median, got.mean, got.std, one.count, one.median, one.mean, one.std,
                dev.count, dev.median, dev.mean, dev.std);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (size > 1) { /* rank 1's kappa is not valid: it fails with its reason, every other rank too */
        gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
        if (rank == 1) o.kappa = -1.0;
        const gpuws_status st = gpuws_mpi_sigma_clip(MPI_COMM_WORLD, NULL, part, mine, &o, &got);
        if (st != GPUWS_ERR_INVALID_ARGUMENT || !strstr(gpuws_last_error(), rank == 1 ? "kappa" : "1 of"))
            mpi_fail(rank, "a rank's invalid kappa did not fail this rank as it should");
    }
    if (rank == 0)
        printf("%d ranks on their devices: count %zu median %.9g std %.9g, the bits of one caller\n", size, got.count,
               got.median, got.std);
    gpuws_buffer_destroy(part);
    gpuws_buffer_destroy(whole);
}

int main(int argc, char **argv)
{
    int rank, size;
    gpuws_context *ctx = mpi_start(&argc, &argv, &rank, &size);
    /* a noisy sky with sources and NaNs, the same on every rank */
    const size_t n = 1000003;
    float *x = malloc(n * sizeof *x);
    uint64_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = ((double)(s >> 11) + 0.5) * 0x1p-53;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const double v = ((double)(s >> 11) + 0.5) * 0x1p-53;
        x[i] = (float)(0.25 + 1e-3 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
        if (i % 997 == 0) x[i] += 0.05f;
        if (i % 10007 == 0) x[i] = NAN;
    }
    gpuws_sigma_clip_result want, got;
    if (gpuws_sigma_clip_host(ctx, x, n, NULL, &want)) return mpi_fail(rank, "sigma_clip_host on the whole sky");
    /* rank r's share: nothing for rank 0 (P > 1), then shares that do not divide evenly */
    size_t at = 0, mine = 0;
    for (int r = 0; r < size; r++) {
        const size_t share = size > 1 && r == 0 ? 0 : r + 1 == size ? n - at : (n - at) / 3 + 1;
        if (r == rank) mine = share;
        if (r < rank) at += share;
    }
    if (gpuws_mpi_sigma_clip_host(MPI_COMM_WORLD, ctx, mine ? x + at : NULL, mine, NULL, &got))
        return mpi_fail(rank, "gpuws_mpi_sigma_clip_host");
    if (memcmp(&got, &want, sizeof got)) {
        fprintf(stderr, "rank %d of %d: count %zu median %.17g mean %.17g std %.17g; one call %zu %.17g %.17g %.17g\n",
                rank, size, got.count, got.median, got.mean, got.std, want.count, want.median, want.mean, want.std);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (size > 1) { /* one rank's kappa differs: every rank fails, and says so */
        gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
        if (rank == 1) o.kappa = 2.5;
        const gpuws_status st = gpuws_mpi_sigma_clip_host(MPI_COMM_WORLD, ctx, mine ? x + at : NULL, mine, &o, &got);
        if (st != GPUWS_ERR_INVALID_ARGUMENT || !strstr(gpuws_last_error(), "options differ"))
            return mpi_fail(rank, "different kappas did not fail this rank");
    }
    if (rank == 0)
        printf("%d ranks: count %zu median %.9g std %.9g, the bits of one call\n", size, got.count, want.median,
               want.std);
    device_resident(ctx, rank, size, x, n);
    free(x);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
