/* gpuws_mpi_world_rows under mpirun -n P (ctest mpi_world_P): the ranks hold uneven shares of a 37-row image (rank
 * 0 none when P > 1, some a row or two), and each gets the rows it asks for, whichever ranks hold them: the whole
 * image, its own rows and 5 more each side (a halo that reaches past a neighbour's share), none, one row of another
 * rank. Shares that are not consecutive from row 0 and a request past the last row fail every rank alike, none
 * hanging (ctest's time-out bounds the run). Exit 0 when every rank got every byte. */
#include "gpuws_mpi_world.h"
#include "mpi_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 37, ROW = 12 };

/* Byte c of row y. */
static unsigned char pixel(size_t y, size_t c) { return (unsigned char)(y * 31 + c * 7 + 1); }

/* Rows lo .. hi - 1 into a fresh array, through gpuws_mpi_world_rows, checked byte by byte. */
static void ask(int rank, const unsigned char *mine, size_t row0, size_t rows, size_t lo, size_t hi)
{
    unsigned char *out = malloc((hi - lo) * ROW + 1);
    if (!out) mpi_fail(rank, "out of memory");
    if (gpuws_mpi_world_rows(mine, row0, rows, ROW, lo, hi, out)) mpi_fail(rank, "gpuws_mpi_world_rows");
    for (size_t y = lo; y < hi; y++)
        for (size_t c = 0; c < ROW; c++)
            if (out[(y - lo) * ROW + c] != pixel(y, c)) {
                fprintf(stderr, "rank %d: rows %zu to %zu: row %zu byte %zu is %u, not %u\n", rank, lo, hi - 1, y, c,
                        out[(y - lo) * ROW + c], pixel(y, c));
                mpi_fail(rank, "a row's bytes");
            }
    free(out);
}

int main(int argc, char **argv)
{
    int rank, size;
    gpuws_context *ctx = mpi_start(&argc, &argv, &rank, &size);
    /* shares: rank 0 none (P > 1), then 1, 2, 1, 2, ... rows, the last rank the rest */
    size_t row0 = 0, rows = 0;
    for (int r = 0; r <= rank; r++) {
        row0 += rows;
        rows = size > 1 && r == 0 ? 0 : r + 1 == size ? H - row0 : (size_t)(r % 2 ? 1 : 2);
    }
    unsigned char *mine = malloc(rows * ROW + 1);
    if (!mine) mpi_fail(rank, "out of memory");
    for (size_t y = 0; y < rows; y++)
        for (size_t c = 0; c < ROW; c++) mine[y * ROW + c] = pixel(row0 + y, c);
    ask(rank, mine, row0, rows, 0, H);
    ask(rank, mine, row0, rows, row0 < 5 ? 0 : row0 - 5, row0 + rows + 5 < H ? row0 + rows + 5 : H);
    ask(rank, mine, row0, rows, 0, 0);
    ask(rank, mine, row0, rows, (size_t)(H - 1 - rank), (size_t)(H - rank));
    /* the last rank's share one row late: every rank refused, nothing sent */
    if (gpuws_mpi_world_rows(mine, row0 + (rank + 1 == size), rows, ROW, 0, 0, NULL) != GPUWS_ERR_INVALID_ARGUMENT)
        mpi_fail(rank, "shares with a gap were not refused");
    /* the first rank asks for a row past the image */
    unsigned char *out = malloc((H + 1) * ROW);
    if (!out) mpi_fail(rank, "out of memory");
    if (gpuws_mpi_world_rows(mine, row0, rows, ROW, 0, rank == 0 ? H + 1 : H, out) != GPUWS_ERR_INVALID_ARGUMENT)
        mpi_fail(rank, "a request past the last row was not refused");
    free(out), free(mine);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    if (rank == 0) printf("ok: %d ranks, every row from every rank\n", size);
    return 0;
}
