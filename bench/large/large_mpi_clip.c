/* κσ clipping of one sky whose rows the ranks of an MPI world hold on their devices (docs/scale.md, "Several hosts"):
 *   mpirun -n P gpuws-large-mpi-clip BACKEND [SIDE [REPS]]
 * Each rank makes its rows of a SIDE x SIDE sky (noise of σ 1 and a bright pixel every 997, rows split in whole chunks
 * of 2^18 values), puts them on its device (its rank on its host, modulo the devices there) and calls gpuws_mpi_sigma_clip
 * REPS times after a first call; rank 0 prints the median and the fastest (wall clock, after a barrier). With one
 * rank it also times gpuws_sigma_clip on the same buffer. Not installed, not run by the tests. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define LARGE_PROGRAM   "gpuws-large-mpi-clip"
#include "gpuws_mpi.h"
#include "large_support.h"

#include <math.h>
#include <string.h>

/* Values i0 .. i0 + n - 1 of the sky, the same whichever rank makes them. */
static void make_values(float *x, size_t i0, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = mix(i0 + i);
        double u = 0;
        for (int k = 0; k < 4; k++) u += (double)((r >> (16 * k)) & 0xffff) / 65536.0;
        x[i] = (float)((u - 2.0) * 1.7320508 + ((i0 + i) % 997 == 0 ? 50.0 : 0.0));
    }
}

static void fail(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", LARGE_PROGRAM, what, gpuws_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, local;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &local);
    MPI_Comm_free(&host);
    const size_t side = argc > 2 ? strtoull(argv[2], NULL, 10) : 32768;
    const int reps = argc > 3 ? atoi(argv[3]) : 9;
    if (argc < 2 || side < 512 || reps < 1 || reps > 64) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n P %s BACKEND [SIDE >= 512 [REPS 1..64]]\n", LARGE_PROGRAM);
        MPI_Finalize();
        return 2;
    }
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = argv[1];
    gpuws_context *ctx;
    if (gpuws_context_create(&ctx, &co)) fail("context");
    gpuws_device_info di;
    if (gpuws_context_get_device_info(ctx, &di)) fail("device info");
    size_t devices = 1; /* the rank's device: its rank on the host, modulo the devices of its backend and platform */
    if (gpuws_device_count(di.backend, di.platform, &devices) || devices == 0) devices = 1;
    if ((size_t)local % devices) {
        gpuws_context_destroy(ctx);
        co.device = (int)((size_t)local % devices);
        if (gpuws_context_create(&ctx, &co)) fail("context");
    }
    /* rows in whole chunks of 2^18 values where the side allows */
    const size_t chunk_rows = side < ((size_t)1 << 18) ? ((size_t)1 << 18) / side : 1,
                 chunks = (side + chunk_rows - 1) / chunk_rows;
    const size_t r0 = chunks * (size_t)rank / (size_t)size * chunk_rows,
                 r1 = rank + 1 == size ? side : chunks * (size_t)(rank + 1) / (size_t)size * chunk_rows;
    const size_t n = (r1 - r0) * side;
    float *x = must_alloc(n * sizeof *x + 4);
    make_values(x, r0 * side, n);
    gpuws_buffer *b = NULL;
    if (n && (gpuws_buffer_create(ctx, n * sizeof *x, &b) || gpuws_buffer_write(b, 0, x, n * sizeof *x)))
        fail("the rank's rows on its device");
    free(x);
    if (gpuws_context_get_device_info(ctx, &di)) fail("device info");
    double *ms = must_alloc((size_t)reps * sizeof *ms);
    gpuws_sigma_clip_result r;
    for (int k = -1; k < reps; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t = now();
        if (gpuws_mpi_sigma_clip(MPI_COMM_WORLD, NULL, b, n, NULL, &r)) fail("gpuws_mpi_sigma_clip");
        if (k >= 0) ms[k] = (now() - t) * 1e3;
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    if (rank == 0)
        printf("%d rank(s), %s %s, %zu x %zu: gpuws_mpi_sigma_clip median %.2f ms, min %.2f (rank 0: rows %zu..%zu); "
               "count %zu median %.9g std %.9g, %d iterations\n",
               size, argv[1], di.name, side, side, ms[reps / 2], ms[0], r0, r1, r.count, r.median, r.std, r.iterations);
    if (size == 1) {
        gpuws_sigma_clip_result one;
        for (int k = -1; k < reps; k++) {
            const double t = now();
            if (gpuws_sigma_clip(NULL, n, b, NULL, &one)) fail("gpuws_sigma_clip");
            if (k >= 0) ms[k] = (now() - t) * 1e3;
        }
        qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
        printf("gpuws_sigma_clip on the same device: median %.2f ms, min %.2f; count %s, median %s, std %.3g "
               "relative\n",
               ms[reps / 2], ms[0], one.count == r.count ? "equal" : "DIFFERS",
               one.median == r.median ? "equal" : "DIFFERS", fabs(one.std / r.std - 1));
    }
    free(ms);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
