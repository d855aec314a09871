/* gpuws_mpi_world_rows under mpirun -n P (ctest mpi_world_P): the ranks hold uneven shares of a 37-row image (rank
 * 0 none when P > 1, some a row or two), and each gets the rows it asks for, whichever ranks hold them: the whole
 * image, its own rows and 5 more each side (a halo that reaches past a neighbour's share), none, one row of another
 * rank. Shares that are not consecutive from row 0 and a request past the last row fail every rank alike, none
 * hanging (ctest's time-out bounds the run). Then gpuws_mpi's gatherer, into rank 0, the last rank and every rank,
 * in one MPI_Gatherv or MPI_Allgatherv and in point-to-point messages cut to 4 words and to 1 (the way past MPI's
 * int counts), uneven shares, one of them empty. Exit 0 when every rank got every byte and every word. */
#include "gpuws_mpi_gather.h"
#include "gpuws_mpi_world.h"
#include "mpi_support.h"

#include <limits.h>
#include <stdbool.h>
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

/* Rank c's share in gpuws_mpi's gatherer: (3c + 2) mod 5 words (2, 0, 3, 1, ...: rank 1 has none), word k =
 * 1000 c + k. */
static size_t share(int c) { return (size_t)(3 * c + 2) % 5; }
static uint64_t word(int c, size_t k) { return 1000 * (uint64_t)c + k; }

/* The gatherer into root (GPUWS_ALL_CALLERS: every rank) in messages of at most `most` words, checked word by word
 * where the words land. */
static void gather(int rank, int size, size_t root, size_t most)
{
    size_t counts[64], total = 0, at = 0;
    for (int c = 0; c < size; c++) {
        counts[c] = share(c);
        if (c < rank) at += counts[c];
        total += counts[c];
    }
    const bool whole = root == GPUWS_ALL_CALLERS || root == (size_t)rank;
    uint64_t *w = calloc(total + 1, sizeof *w), *mine = whole ? w + at : w;
    if (!w) mpi_fail(rank, "out of memory");
    for (size_t k = 0; k < counts[rank]; k++) mine[k] = word(rank, k);
    if (gpuws__mpi_gather(MPI_COMM_WORLD, w, counts, (size_t)rank, (size_t)size, root, most))
        mpi_fail(rank, "gpuws__mpi_gather");
    size_t off = 0;
    for (int c = 0; c < size && whole; off += counts[c++])
        for (size_t k = 0; k < counts[c]; k++)
            if (w[off + k] != word(c, k)) {
                fprintf(stderr, "rank %d: root %zu, messages of %zu words: rank %d's word %zu is %llu\n", rank, root,
                        most, c, k, (unsigned long long)w[off + k]);
                mpi_fail(rank, "a gathered word");
            }
    free(w);
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
    /* the gatherer: in one MPI_Gatherv or MPI_Allgatherv, and in messages (as past MPI's int counts) of 4 and 1 words */
    if (size > 64) mpi_fail(rank, "more than 64 ranks");
    const size_t roots[] = { 0, (size_t)size - 1, GPUWS_ALL_CALLERS }, mosts[] = { INT_MAX, 4, 1 };
    for (size_t r = 0; r < 3; r++)
        for (size_t m = 0; m < 3; m++) gather(rank, size, roots[r], mosts[m]);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    if (rank == 0) printf("ok: %d ranks, every row from every rank, every word gathered\n", size);
    return 0;
}
