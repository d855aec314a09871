/* gpuws_mpi_label_host under mpirun -n P (ctest mpi_label_P): every rank holds uneven rows of one mask (rank 0 none
 * when P > 1: a spiral through every rank's rows, U shapes and a percolating random part) and must get, for its rows,
 * the labels of gpuws_label_host on the whole mask and the whole N; ranks that disagree on the connectivity must all
 * fail, none hanging (ctest's time-out bounds the run). Exit 0 when every rank agrees. */
#include "mpi_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    gpuws_context *ctx = mpi_start(&argc, &argv, &rank, &size);
    const size_t w = 301, h = 257, n = w * h;
    uint8_t *mask = calloc(n, 1);
    uint64_t s = 99;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            uint8_t *m = &mask[y * w + x];
            if (x < 100) { /* a square spiral: one component through every band */
                const size_t d = x < y ? x : y, e = 99 - x < 256 - y ? 99 - x : 256 - y, ring = d < e ? d : e;
                *m = ring % 4 == 0 && !(x == ring + 1 && y == ring);
            } else if (x < 200) { /* U shapes that meet only at their bottoms */
                *m = (x % 10 == 0) || (y % 60 == 59 && x % 20 < 11);
            } else {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                *m = (s >> 40) % 100 < 60;
            }
        }
    int32_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    size_t want_n, got_n;
    for (int conn = 4; conn <= 8; conn += 4) {
        if (gpuws_label_host(ctx, w, h, mask, 0, conn, NULL, want, &want_n)) return mpi_fail(rank, "label_host, whole");
        size_t at = 0, mine = 0;
        for (int r = 0; r < size; r++) {
            const size_t share = size > 1 && r == 0 ? 0 : r + 1 == size ? h - at : (h - at) / 3 + 1;
            if (r == rank) mine = share;
            if (r < rank) at += share;
        }
        if (gpuws_mpi_label_host(MPI_COMM_WORLD, ctx, w, mine, mask + at * w, 0, conn, NULL, got + at * w, &got_n))
            return mpi_fail(rank, "gpuws_mpi_label_host");
        if (got_n != want_n || memcmp(got + at * w, want + at * w, mine * w * sizeof *got)) {
            fprintf(stderr, "rank %d of %d, connectivity %d: N %zu (whole %zu) or labels differ\n", rank, size, conn,
                    got_n, want_n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0) printf("%d ranks, connectivity %d: N %zu, the whole image's labels\n", size, conn, got_n);
        if (size > 1) { /* the last rank says another connectivity: every rank fails */
            const gpuws_status st =
                gpuws_mpi_label_host(MPI_COMM_WORLD, ctx, w, mine, mask + at * w, 0,
                                     rank + 1 == size ? 12 - conn : conn, NULL, got + at * w, &got_n);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || !strstr(gpuws_last_error(), "disagree"))
                return mpi_fail(rank, "ranks that disagree did not fail this rank");
        }
    }
    free(mask), free(want), free(got);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
