/* gpuws_mpi_find_sources_host under mpirun -n P (ctest mpi_sources_P): every rank holds uneven rows of one image
 * (tests/sources_split.h: rank 0 none when P > 1, sources across the ranks' borders, one through three ranks' rows,
 * NaN rows) and must get gpuws_find_sources_host's catalogue of the whole image: the same bits when every rank
 * begins on a block of the measurement, else the same clip, labels, count, npix and peaks and the floats within the
 * summation bound; and its own rows of the whole image's labels. Ranks that disagree on the options, or one whose
 * options are invalid, must all fail, none hanging (ctest's time-out bounds the run). Then the same shares on the
 * ranks' devices (gpuws_mpi_find_sources_parts): every rank must get the bits of gpuws_find_sources_parts in one
 * process with the same parts, and its rows of its labels (and without the label image the same catalogue);
 * differing options fail every rank. Exit 0 when every
 * rank agrees. */
#include "mpi_support.h"
#include "../sources_split.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void differs(int rank, int aligned, const char *what, size_t k)
{
    fprintf(stderr, "rank %d, %s shares: %s (source %zu)\n", rank, aligned ? "aligned" : "unaligned", what, k);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* got against want: the same integers; the floats the same bits (aligned) or within the summation bound of npix
 * positive pixels added in another grouping (the sources lie above a positive threshold). */
static void compare(int rank, int aligned, const gpuws_catalog *got, const gpuws_catalog *want)
{
    if (memcmp(&got->clip, &want->clip, sizeof got->clip) || got->threshold != want->threshold)
        differs(rank, aligned, "clip or threshold", 0);
    if (got->num_sources != want->num_sources) differs(rank, aligned, "number of sources", got->num_sources);
    for (size_t k = 0; k < want->num_sources; k++) {
        const gpuws_source *g = &got->sources[k], *w = &want->sources[k];
        const double bound = 2.0 * (double)w->npix * DBL_EPSILON;
        if (g->id != w->id || g->npix != w->npix || g->peak != w->peak || g->peak_x != w->peak_x ||
            g->peak_y != w->peak_y)
            differs(rank, aligned, "id, npix or peak", k);
        if (aligned ? memcmp(g, w, sizeof *g) != 0
                    : fabs(g->flux - w->flux) > bound * w->flux || fabs(g->x - w->x) > 2 * bound * SPLIT_W ||
                          fabs(g->y - w->y) > 2 * bound * SPLIT_H)
            differs(rank, aligned, "flux or centre", k);
    }
}

/* The rows [first, first + rows) of img in a device buffer on a new stream of ctx, as an image part. */
static gpuws_image_part device_part(gpuws_context *ctx, int rank, const float *img, size_t first, size_t rows)
{
    gpuws_image_part part = { NULL, NULL, rows };
    gpuws_buffer *b = NULL;
    const size_t bytes = rows * SPLIT_W * sizeof *img;
    if (gpuws_stream_create(ctx, &part.stream) ||
        (rows && (gpuws_buffer_create(ctx, bytes, &b) || gpuws_buffer_write(b, 0, img + first * SPLIT_W, bytes))))
        mpi_fail(rank, "a device part");
    part.image = b;
    return part;
}

static void drop_part(gpuws_image_part *part)
{
    gpuws_buffer_destroy((gpuws_buffer *)part->image);
    gpuws_stream_destroy(part->stream);
}

/* gpuws_mpi_find_sources_parts on the ranks' shares against gpuws_find_sources_parts on all of them in one process:
 * with the shares aligned on measurement blocks every rank gets the whole catalogue, else the last rank does and each
 * other rank the sources that begin in its rows. */
static void device_parts(gpuws_context *ctx, int rank, int size, const float *img, const gpuws_sources_options *o)
{
    for (int aligned = 0; aligned <= 1; aligned++) {
        const int root = aligned ? GPUWS_MPI_ALL_RANKS : size - 1;
        gpuws_image_part all[4], mine;
        size_t first = 0, rows = 0;
        for (int r = 0; r < size; r++) {
            size_t f;
            const size_t k = split_share(aligned, (size_t)size, (size_t)r, &f);
            all[r] = device_part(ctx, rank, img, f, k);
            if (r == rank) first = f, rows = k;
        }
        mine = device_part(ctx, rank, img, first, rows);
        gpuws_catalog *want = NULL, *got = NULL;
        gpuws_sources_options one = *o;
        one.want_labels = 1; /* which sources begin in this rank's rows */
        if (gpuws_find_sources_parts(all, (size_t)size, SPLIT_W, &one, &want))
            mpi_fail(rank, "gpuws_find_sources_parts in one process");
        if (gpuws_mpi_find_sources_parts(MPI_COMM_WORLD, &mine, 1, SPLIT_W, o, root, &got))
            mpi_fail(rank, "gpuws_mpi_find_sources_parts");
        size_t own0 = 0, own = want->num_sources;
        if (root != GPUWS_MPI_ALL_RANKS && root != rank)
            own = split_own_sources(want->labels, SPLIT_W, first, rows, &own0);
        if (memcmp(&got->clip, &want->clip, sizeof got->clip) || got->threshold != want->threshold ||
            got->num_sources != own ||
            (own && memcmp(got->sources, want->sources + own0, own * sizeof *got->sources))) /* none: NULL */
            differs(rank, aligned,
                    root == rank || root == GPUWS_MPI_ALL_RANKS
                        ? "the devices' catalogue against one process's"
                        : "the sources that begin in this rank's rows against one process's",
                    0);
        if (o->want_labels
                ? (rows ? memcmp(got->labels, want->labels + first * SPLIT_W, rows * SPLIT_W * sizeof *got->labels) != 0
                        : got->labels != NULL)
                : got->labels != NULL)
            differs(rank, aligned, "the devices' rows of labels", 0);
        if (rank == 0)
            printf("%d ranks' devices, %s shares%s, the catalogue into %s: %zu sources on rank 0, the bits of one "
                   "process\n",
                   size, aligned ? "aligned" : "unaligned", o->want_labels ? "" : ", no label image",
                   aligned ? "every rank" : "the last rank", got->num_sources);
        gpuws_catalog_free(got);
        gpuws_catalog_free(want);
        if (size > 1) { /* the last rank's threshold differs, then its connectivity is invalid: every rank fails */
            gpuws_sources_options bad = *o;
            if (rank + 1 == size) bad.threshold_sigma = 4.5;
            gpuws_status st = gpuws_mpi_find_sources_parts(MPI_COMM_WORLD, &mine, 1, SPLIT_W, &bad, root, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || got || !strstr(gpuws_last_error(), "disagree"))
                mpi_fail(rank, "ranks' devices that disagree did not fail this rank");
            if (rank + 1 == size) bad.threshold_sigma = o->threshold_sigma, bad.connectivity = 6;
            st = gpuws_mpi_find_sources_parts(MPI_COMM_WORLD, &mine, 1, SPLIT_W, &bad, root, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || got ||
                !strstr(gpuws_last_error(), rank + 1 == size ? "connectivity 6" : "1 of"))
                mpi_fail(rank, "one rank's invalid options did not fail this rank's devices");
        }
        for (int r = 0; r < size; r++) drop_part(&all[r]);
        drop_part(&mine);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    gpuws_context *ctx = mpi_start(&argc, &argv, &rank, &size);
    const size_t w = SPLIT_W, h = SPLIT_H;
    float *img = malloc(w * h * sizeof *img);
    split_image(img);
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.want_labels = 1;
    gpuws_catalog *want = NULL, *got = NULL;
    if (gpuws_find_sources_host(ctx, img, w, h, &o, NULL, &want)) return mpi_fail(rank, "find_sources_host, whole");
    if (gpuws_find_sources_host_block_rows(w) != 81) return mpi_fail(rank, "the blocks are not the shares' 81 rows");
    for (int aligned = 0; aligned <= 1; aligned++) {
        size_t first;
        const size_t rows = split_share(aligned, (size_t)size, (size_t)rank, &first);
        const float *mine = rows ? img + first * w : NULL;
        if (gpuws_mpi_find_sources_host(MPI_COMM_WORLD, ctx, mine, w, rows, &o, NULL, &got))
            return mpi_fail(rank, "gpuws_mpi_find_sources_host");
        compare(rank, aligned, got, want);
        if (rows ? memcmp(got->labels, want->labels + first * w, rows * w * sizeof *got->labels) != 0
                 : got->labels != NULL)
            differs(rank, aligned, "its rows of labels", 0);
        size_t other_bits = 0;
        for (size_t k = 0; k < got->num_sources; k++)
            other_bits += memcmp(&got->sources[k], &want->sources[k], sizeof *got->sources) != 0;
        if (rank == 0)
            printf("%d ranks, %s shares: %zu sources, %zu not the bits of one call\n", size,
                   aligned ? "aligned" : "unaligned", got->num_sources, other_bits);
        gpuws_catalog_free(got);
        if (size > 1) { /* the last rank's threshold differs, then its connectivity is invalid: every rank fails */
            gpuws_sources_options bad = o;
            if (rank + 1 == size) bad.threshold_sigma = 4.5;
            gpuws_status st = gpuws_mpi_find_sources_host(MPI_COMM_WORLD, ctx, mine, w, rows, &bad, NULL, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || got || !strstr(gpuws_last_error(), "disagree"))
                return mpi_fail(rank, "ranks that disagree did not fail this rank");
            if (rank + 1 == size) bad.threshold_sigma = o.threshold_sigma, bad.connectivity = 6;
            st = gpuws_mpi_find_sources_host(MPI_COMM_WORLD, ctx, mine, w, rows, &bad, NULL, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || got ||
                !strstr(gpuws_last_error(), rank + 1 == size ? "connectivity 6" : "1 of"))
                return mpi_fail(rank, "one rank's invalid options did not fail this rank");
        }
    }
    gpuws_catalog_free(want);
    device_parts(ctx, rank, size, img, &o);
    o.want_labels = 0; /* the devices' labels then go through the measurement's tables (label_driver.h: defer) */
    device_parts(ctx, rank, size, img, &o);
    free(img);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
