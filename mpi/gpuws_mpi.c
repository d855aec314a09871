/* The gpuws_mpi library: the reducers of the collective calls as MPI allreduces, their gatherers as MPI gathers. */
#include "gpuws_mpi.h"
#include "gpuws_mpi_world.h"
#include "gpuws_mpi_gather.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In allreduces of at most INT_MAX words each (MPI's int counts). */
static gpuws_status allreduce_sum(void *user, uint64_t *words, size_t count)
{
    MPI_Comm comm = *(MPI_Comm *)user;
    int rc = MPI_SUCCESS;
    for (size_t k = 0; k < count && rc == MPI_SUCCESS; k += INT_MAX) {
        const size_t n = count - k < INT_MAX ? count - k : INT_MAX;
        rc = MPI_Allreduce(MPI_IN_PLACE, words + k, (int)n, MPI_UINT64_T, MPI_SUM, comm);
    }
    return rc == MPI_SUCCESS ? GPUWS_OK : GPUWS_ERR_INTERNAL;
}

/* Each caller's words to root in messages of at most `most` words (point to point: MPI's int counts bound one
 * message, not the whole), then, for every caller, from caller 0 to all. As in place as the gathers below: root's
 * (every caller's) words are its share of the whole, at its place; another caller's are its share alone. */
static int gather_messages(MPI_Comm comm, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                           size_t root, size_t most)
{
    const size_t to = root == GPUWS_ALL_CALLERS ? 0 : root;
    size_t at = 0, total = 0;
    for (size_t c = 0; c < callers; c++) {
        if (c < caller) at += counts[c];
        total += counts[c];
    }
    int rc = MPI_SUCCESS;
    if (caller != to) {
        const uint64_t *mine = root == GPUWS_ALL_CALLERS ? words + at : words;
        for (size_t k = 0; k < counts[caller] && rc == MPI_SUCCESS; k += most) {
            const size_t n = counts[caller] - k < most ? counts[caller] - k : most;
            rc = MPI_Send(mine + k, (int)n, MPI_UINT64_T, (int)to, 2, comm);
        }
    } else {
        size_t off = 0;
        for (size_t c = 0; c < callers; c++) {
            for (size_t k = 0; c != to && k < counts[c] && rc == MPI_SUCCESS; k += most) {
                const size_t n = counts[c] - k < most ? counts[c] - k : most;
                rc = MPI_Recv(words + off + k, (int)n, MPI_UINT64_T, (int)c, 2, comm, MPI_STATUS_IGNORE);
            }
            off += counts[c];
        }
    }
    for (size_t k = 0; root == GPUWS_ALL_CALLERS && k < total && rc == MPI_SUCCESS; k += most) {
        const size_t n = total - k < most ? total - k : most;
        rc = MPI_Bcast(words + k, (int)n, MPI_UINT64_T, 0, comm);
    }
    return rc;
}

/* MPI_Allgatherv in place, or MPI_Gatherv into root (in place there). Their counts and displacements are ints: every
 * rank passes the same counts and root, so every rank finds alike whether they fit, and where they do not (more
 * than `most` words before a caller's end, most at most INT_MAX) the words go in messages (gather_messages). Up to
 * 64 ranks the counts sit on the stack; beyond, every rank first learns whether every other could allocate them, and
 * none is left waiting in the gather when one cannot (an allreduce more, which the common case saves). */
gpuws_status gpuws__mpi_gather(MPI_Comm comm, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                               size_t root, size_t most)
{
    enum { ON_STACK = 64 };
    int stack[2 * ON_STACK];
    int *cd = callers <= ON_STACK ? stack : callers <= INT_MAX ? malloc(2 * callers * sizeof *cd) : NULL;
    int ok = cd != NULL && (root < callers || root == GPUWS_ALL_CALLERS) && most >= 1 && most <= INT_MAX;
    bool fit = true;
    size_t at = 0;
    for (size_t c = 0; c < callers && ok; c++) {
        fit = fit && counts[c] <= most && at + counts[c] <= most;
        if (fit) cd[c] = (int)counts[c], cd[callers + c] = (int)at;
        at += counts[c];
    }
    gpuws_status st = GPUWS_ERR_INTERNAL;
    int rc = callers <= ON_STACK ? MPI_SUCCESS : MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (rc == MPI_SUCCESS && ok) {
        if (!fit) rc = gather_messages(comm, words, counts, caller, callers, root, most);
        else if (root == GPUWS_ALL_CALLERS)
            rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, words, cd, cd + callers, MPI_UINT64_T, comm);
        else if (root == caller)
            rc =
                MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, words, cd, cd + callers, MPI_UINT64_T, (int)root, comm);
        else rc = MPI_Gatherv(words, cd[caller], MPI_UINT64_T, NULL, NULL, NULL, MPI_UINT64_T, (int)root, comm);
        if (rc == MPI_SUCCESS) st = GPUWS_OK;
    }
    if (cd != stack) free(cd);
    return st;
}

static gpuws_status gather(void *user, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                           size_t root)
{
    return gpuws__mpi_gather(*(MPI_Comm *)user, words, counts, caller, callers, root, INT_MAX);
}

gpuws_status gpuws_mpi_sigma_clip_host(MPI_Comm comm, gpuws_context *ctx, const float *data, size_t n,
                                       const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    return gpuws_sigma_clip_host_reduce(ctx, data, n, options, allreduce_sum, &comm, result);
}

/* This rank's part and the part count: its rank and the communicator's size. */
static gpuws_status rank_part(MPI_Comm comm, size_t *part, size_t *parts)
{
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return GPUWS_ERR_INTERNAL;
    *part = (size_t)rank, *parts = (size_t)size;
    return GPUWS_OK;
}

gpuws_status gpuws_mpi_sigma_clip(MPI_Comm comm, gpuws_stream *stream, const gpuws_buffer *data, size_t n,
                                  const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    size_t part, parts;
    if (rank_part(comm, &part, &parts)) return GPUWS_ERR_INTERNAL;
    return gpuws_sigma_clip_reduce(stream, data, n, options, part, parts, allreduce_sum, &comm, result);
}

gpuws_status gpuws_mpi_label_host(MPI_Comm comm, gpuws_context *ctx, size_t width, size_t rows, const void *mask,
                                  size_t mask_stride, int connectivity, const gpuws_label_host_options *options,
                                  int32_t *labels, size_t *num_labels)
{
    size_t part, parts;
    if (rank_part(comm, &part, &parts)) return GPUWS_ERR_INTERNAL;
    return gpuws_label_host_reduce(ctx, width, rows, mask, mask_stride, connectivity, options, part, parts,
                                   allreduce_sum, &comm, labels, num_labels);
}

gpuws_status gpuws_mpi_find_sources_parts(MPI_Comm comm, const gpuws_image_part *parts, size_t num_parts, size_t width,
                                          const gpuws_sources_options *options, int root, gpuws_catalog **catalog)
{
    size_t rank, size;
    if (rank_part(comm, &rank, &size)) return GPUWS_ERR_INTERNAL;
    const size_t r = root == GPUWS_MPI_ALL_RANKS ? GPUWS_ALL_CALLERS : root < 0 ? size : (size_t)root;
    return gpuws_find_sources_parts_reduce(parts, num_parts, width, options, rank, size, r, allreduce_sum, gather,
                                           &comm, catalog);
}

gpuws_status gpuws_mpi_find_sources_host(MPI_Comm comm, gpuws_context *ctx, const float *image, size_t width,
                                         size_t rows, const gpuws_sources_options *options,
                                         const gpuws_label_host_options *label_options, gpuws_catalog **catalog)
{
    size_t part, parts;
    if (rank_part(comm, &part, &parts)) return GPUWS_ERR_INTERNAL;
    return gpuws_find_sources_host_reduce(ctx, image, width, rows, options, label_options, part, parts, allreduce_sum,
                                          &comm, catalog);
}

gpuws_status gpuws_mpi_extract_host(MPI_Comm comm, gpuws_context *ctx, size_t width, size_t rows, const float *image,
                                    const gpuws_extract_host_options *options, int root,
                                    gpuws_extract_catalog **catalog)
{
    size_t rank, size;
    if (rank_part(comm, &rank, &size)) return GPUWS_ERR_INTERNAL;
    return gpuws_extract_host_reduce(ctx, width, rows, image, options, rank, size, root < 0 ? size : (size_t)root,
                                     allreduce_sum, gather, &comm, catalog);
}

/* ---- MPI_COMM_WORLD for a caller without mpi.h (gpuws_mpi_world.h) ------------------------------------------- */

gpuws_status gpuws_mpi_world_init(int *rank, int *size, int *local_rank)
{
    int started = 0, provided = 0;
    if (MPI_Initialized(&started) != MPI_SUCCESS) return GPUWS_ERR_INTERNAL;
    if (!started && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return GPUWS_ERR_INTERNAL;
    MPI_Comm host;
    if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS || MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS ||
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) != MPI_SUCCESS)
        return GPUWS_ERR_INTERNAL;
    const int rc = MPI_Comm_rank(host, local_rank);
    MPI_Comm_free(&host);
    return rc == MPI_SUCCESS ? GPUWS_OK : GPUWS_ERR_INTERNAL;
}

gpuws_status gpuws_mpi_world_sum(void *user, uint64_t *words, size_t count)
{
    (void)user;
    MPI_Comm world = MPI_COMM_WORLD;
    return allreduce_sum(&world, words, count);
}

gpuws_status gpuws_mpi_world_gatherer(void *user, uint64_t *words, const size_t *counts, size_t caller, size_t callers,
                                      size_t root)
{
    (void)user;
    MPI_Comm world = MPI_COMM_WORLD;
    return gather(&world, words, counts, caller, callers, root);
}

int gpuws_mpi_world_agree(int code, char *why, size_t n, int *first, int *first_code)
{
    int rank, size, count = 0, lowest = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int mine = code ? 1 : 0, me = code ? rank : size;
    MPI_Allreduce(&mine, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&me, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (count) {
        MPI_Bcast(&code, 1, MPI_INT, lowest, MPI_COMM_WORLD);
        if (n > INT_MAX) n = INT_MAX;
        if (n && rank == lowest) why[n - 1] = 0;
        if (n) MPI_Bcast(why, (int)n, MPI_CHAR, lowest, MPI_COMM_WORLD);
    }
    if (first) *first = count ? lowest : -1;
    if (first_code) *first_code = count ? code : 0;
    return count;
}

/* One message's bytes at most: MPI counts in int. */
#define GATHER_MESSAGE ((size_t)1 << 30)

gpuws_status gpuws_mpi_world_gather(const void *mine, size_t bytes, void *all, size_t all_bytes)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t total = bytes;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = rank || (total == all_bytes && (all || !total));
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) return GPUWS_ERR_INVALID_ARGUMENT;
    if (rank) { /* the size first: rank 0 places the parts one after the other */
        uint64_t n = bytes;
        MPI_Send(&n, 1, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD);
        for (size_t at = 0; at < bytes; at += GATHER_MESSAGE) {
            const size_t k = bytes - at < GATHER_MESSAGE ? bytes - at : GATHER_MESSAGE;
            MPI_Send((const char *)mine + at, (int)k, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        return GPUWS_OK;
    }
    char *to = all;
    if (bytes) memcpy(to, mine, bytes);
    size_t off = bytes;
    for (int r = 1; r < size; r++) {
        uint64_t n;
        MPI_Recv(&n, 1, MPI_UINT64_T, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t at = 0; at < n; at += GATHER_MESSAGE) { /* the sum is all_bytes: off + n fits */
            const size_t k = n - at < GATHER_MESSAGE ? (size_t)n - at : GATHER_MESSAGE;
            MPI_Recv(to + off + at, (int)k, MPI_BYTE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        off += n;
    }
    return GPUWS_OK;
}

/* What each rank says in gpuws_mpi_world_rows: its rows, their size, the rows it asks for, whether its pointers
 * hold them. */
enum { ROWS_ROW0, ROWS_ROWS, ROWS_BYTES, ROWS_LO, ROWS_HI, ROWS_OK, ROWS_WORDS };

/* Rows s's share holds of the rows r asks for: [*from, *to), empty when *from >= *to. */
static void rows_between(const uint64_t *said, int s, int r, uint64_t *from, uint64_t *to)
{
    const uint64_t *a = said + (size_t)s * ROWS_WORDS, *b = said + (size_t)r * ROWS_WORDS;
    const uint64_t end = a[ROWS_ROW0] + a[ROWS_ROWS];
    *from = a[ROWS_ROW0] > b[ROWS_LO] ? a[ROWS_ROW0] : b[ROWS_LO];
    *to = end < b[ROWS_HI] ? end : b[ROWS_HI];
}

gpuws_status gpuws_mpi_world_rows(const void *mine, size_t row0, size_t rows, size_t row_bytes, size_t lo, size_t hi,
                                  void *out)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t stack[ROWS_WORDS * 64], *said = size <= 64 ? stack : malloc((size_t)size * ROWS_WORDS * sizeof *said);
    uint64_t me[ROWS_WORDS] = { row0, rows, row_bytes, lo, hi, (!rows || mine) && (hi <= lo || out) && lo <= hi };
    int ok = said != NULL; /* every rank learns whether every rank could keep what they say */
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        if (said != stack) free(said);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    MPI_Allgather(me, ROWS_WORDS, MPI_UINT64_T, said, ROWS_WORDS, MPI_UINT64_T, MPI_COMM_WORLD);
    /* the shares in rank order from row 0, one row size, requests within them: alike on every rank */
    uint64_t next = 0;
    for (int r = 0; r < size && ok; r++) {
        const uint64_t *a = said + (size_t)r * ROWS_WORDS;
        ok = a[ROWS_OK] && a[ROWS_ROW0] == next && a[ROWS_BYTES] == said[ROWS_BYTES] &&
             a[ROWS_ROWS] <= UINT64_MAX - next;
        next += a[ROWS_ROWS];
    }
    for (int r = 0; r < size && ok; r++) ok = said[(size_t)r * ROWS_WORDS + ROWS_HI] <= next;
    if (!ok) {
        if (said != stack) free(said);
        return GPUWS_ERR_INVALID_ARGUMENT;
    }
    uint64_t from, to;
    rows_between(said, rank, rank, &from, &to);
    if (from < to)
        memcpy((char *)out + (from - lo) * row_bytes, (const char *)mine + (from - row0) * row_bytes,
               (size_t)(to - from) * row_bytes);
    /* round k: rows to rank + k, from rank - k, chunk by chunk: chunk c of a pair waits only for its partners'
     * chunk c, which every rank posts once its chunk c - 1 is done */
    for (int k = 1; k < size; k++) {
        const int dst = (rank + k) % size, src = (rank - k + size) % size;
        uint64_t sf, st, rf, rt;
        rows_between(said, rank, dst, &sf, &st);
        rows_between(said, src, rank, &rf, &rt);
        const size_t sent = sf < st ? (size_t)(st - sf) * row_bytes : 0,
                     got = rf < rt ? (size_t)(rt - rf) * row_bytes : 0;
        for (size_t at = 0; at < sent || at < got; at += GATHER_MESSAGE) {
            MPI_Request q[2];
            int nq = 0;
            if (at < got)
                MPI_Irecv((char *)out + (rf - lo) * row_bytes + at,
                          (int)(got - at < GATHER_MESSAGE ? got - at : GATHER_MESSAGE), MPI_BYTE, src, 2,
                          MPI_COMM_WORLD, &q[nq++]);
            if (at < sent)
                MPI_Isend((const char *)mine + (sf - row0) * row_bytes + at,
                          (int)(sent - at < GATHER_MESSAGE ? sent - at : GATHER_MESSAGE), MPI_BYTE, dst, 2,
                          MPI_COMM_WORLD, &q[nq++]);
            MPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
        }
    }
    if (said != stack) free(said);
    return GPUWS_OK;
}

void gpuws_mpi_world_finalize(void)
{
    int started = 0, ended = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&ended);
    if (started && !ended) MPI_Finalize();
}
