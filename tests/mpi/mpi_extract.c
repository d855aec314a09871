/* gpuws_mpi_extract_host under mpirun -n P (ctest mpi_extract_P): every rank holds uneven rows of one sky (rank 0 none
 * when P > 1; each rank's first row on a mesh row) and root (the last rank) must get gpuws_extract_host's catalogue
 * of the whole sky bit for bit, and its segmentation map; every rank its own rows of the background's maps and its
 * globals. The sky: Gaussian sources on a gradient and noise, bars through every rank's rows, a U whose arms meet
 * only in the last rank's rows, a masked block and NaN pixels; the bands within a rank are 18 rows (a budget of 20
 * rows), so components cross band borders and rank borders. Then without the background (one σ), a 5 x 5 filter
 * (halo 2) and 4-connectivity, a mask on the odd ranks alone. Ranks that disagree on the options, and a split that is
 * not on mesh rows, must fail every rank, none hanging (ctest's time-out bounds the run). Exit 0 when every rank
 * agrees. */
#include "mpi_support.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 211, H = 200, MESH = 16 };

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void make_sky(float *x, unsigned char *mask)
{
    uint64_t s = 7;
    for (size_t y = 0; y < H; y++)
        for (size_t c = 0; c < W; c++) {
            const double u1 = uniform(&s) + 1e-12, u2 = uniform(&s);
            x[y * W + c] = (float)(100.0 + 0.05 * (double)c + 0.08 * (double)y +
                                   3.0 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    for (int k = 0; k < 120; k++) {
        const double cx = uniform(&s) * W, cy = uniform(&s) * H, amp = 20.0 + 200.0 * uniform(&s);
        const double sg = 0.8 + 2.0 * uniform(&s);
        for (int dy = -8; dy <= 8; dy++)
            for (int dx = -8; dx <= 8; dx++) {
                const long px = (long)cx + dx, py = (long)cy + dy;
                if (px < 0 || py < 0 || px >= W || py >= H) continue;
                const double r2 = ((double)px - cx) * ((double)px - cx) + ((double)py - cy) * ((double)py - cy);
                x[py * W + px] += (float)(amp * exp(-r2 / (2 * sg * sg)));
            }
    }
    for (size_t y = 3; y + 3 < H; y++) x[y * W + 40] += 60.0f, x[y * W + (y * 7 / 5) % W] += 50.0f;
    for (size_t y = 20; y < H - 6; y++) x[y * W + W - 30] += 60.0f, x[y * W + W - 12] += 60.0f;
    for (size_t c = W - 30; c <= W - 12; c++) x[(H - 6) * W + c] += 60.0f;
    memset(mask, 0, (size_t)W * H);
    for (size_t y = 90; y < 104; y++)
        for (size_t c = 100; c < 140; c++) mask[y * W + c] = 1;
    for (size_t y = 0; y < H; y += 37) x[y * W + 77] = NAN, mask[y * W + 77] = 1;
}

static int same_objects(const gpuws_extract_catalog *a, const gpuws_extract_catalog *b)
{
    if (a->num_objects != b->num_objects) return 0;
    for (size_t i = 0; i < a->num_objects; i++) {
        const gpuws_object *p = &a->objects[i], *q = &b->objects[i];
        const double pa[] = { p->thresh, p->x,     p->y,     p->x2,      p->y2,    p->xy,   p->errx2,
                              p->erry2,  p->errxy, p->a,     p->b,       p->theta, p->cxx,  p->cyy,
                              p->cxy,    p->flux,  p->cflux, p->fluxerr, p->peak,  p->cpeak };
        const double qa[] = { q->thresh, q->x,     q->y,     q->x2,      q->y2,    q->xy,   q->errx2,
                              q->erry2,  q->errxy, q->a,     q->b,       q->theta, q->cxx,  q->cyy,
                              q->cxy,    q->flux,  q->cflux, q->fluxerr, q->peak,  q->cpeak };
        if (memcmp(pa, qa, sizeof pa) || p->npix != q->npix || p->tnpix != q->tnpix || p->flag != q->flag ||
            p->xmin != q->xmin || p->xmax != q->xmax || p->ymin != q->ymin || p->ymax != q->ymax ||
            p->xpeak != q->xpeak || p->ypeak != q->ypeak || p->xcpeak != q->xcpeak || p->ycpeak != q->ycpeak)
            return 0;
    }
    return 1;
}

/* This rank's first row and rows: rank 0 none when there are several, the others whole mesh rows, uneven. */
static void rank_rows(int rank, int size, size_t *first, size_t *rows)
{
    const size_t meshes = (H + MESH - 1) / MESH;
    size_t at = 0;
    for (int r = 0; r < size; r++) {
        const size_t left = meshes - at, m = size > 1 && r == 0 ? 0 : r + 1 == size ? left : left / 3 + 1;
        if (r == rank) *first = at * MESH, *rows = (at + m) * MESH < H ? m * MESH : H - at * MESH;
        at += m;
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    gpuws_context *ctx = mpi_start(&argc, &argv, &rank, &size);
    const size_t n = (size_t)W * H;
    const int root = size - 1;
    float *x = malloc(n * sizeof *x), *back = malloc(n * sizeof *back), *rms = malloc(n * sizeof *rms);
    float *gback = malloc(n * sizeof *gback), *grms = malloc(n * sizeof *grms);
    unsigned char *mask = malloc(n);
    int32_t *want_seg = malloc(n * sizeof *want_seg), *got_seg = malloc(n * sizeof *got_seg);
    if (!x || !back || !rms || !gback || !grms || !mask || !want_seg || !got_seg) return mpi_fail(rank, "no memory");
    make_sky(x, mask);
    size_t first = 0, rows = 0;
    rank_rows(rank, size, &first, &rows);
    static const float k5[25] = { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1 };
    for (int made = 1; made >= 0; made--) {
        gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
        gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
        bo.bw = bo.bh = MESH;
        gpuws_background_result want_r, got_r;
        gpuws_extract_host_options ho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
        ho.extract = &eo, ho.mask = mask, ho.segmap = want_seg;
        if (made) {
            ho.background = &bo, ho.back_out = back, ho.rms_out = rms, ho.background_result = &want_r;
        } else {
            for (size_t i = 0; i < n; i++) x[i] = isnan(x[i]) ? x[i] : x[i] - 100.0f - 0.05f * (float)(i % W);
            eo.err = 3.0, eo.thresh = 2.0, eo.filter = k5, eo.filter_w = eo.filter_h = 5, eo.connectivity = 4;
            for (int r = 0; r < size; r += 2) { /* the even ranks give no mask: their rows are unmasked */
                size_t f = 0, m = 0;
                rank_rows(r, size, &f, &m);
                memset(mask + f * W, 0, m * W);
            }
        }
        gpuws_extract_catalog *want = NULL, *got = NULL;
        if (gpuws_extract_host(ctx, W, H, x, &ho, &want)) return mpi_fail(rank, "extract_host, whole");
        const size_t halo = made ? 1 : 2;
        const uint64_t per_px = 45 + (made ? 8 : 0) + 1;
        const uint64_t plan =
            made ? 4 * (8 * (uint64_t)((W + MESH - 1) / MESH) * ((H + MESH - 1) / MESH) + 5 * (uint64_t)(W + H)) : 0;
        gpuws_extract_host_options mo = ho;
        mo.max_device_bytes = plan + per_px * W * (18 + 2 * halo);
        mo.segmap = rank == root ? got_seg : NULL, mo.back_out = made ? gback + first * W : NULL;
        mo.rms_out = made ? grms + first * W : NULL, mo.background_result = made ? &got_r : NULL;
        mo.mask = made || rank % 2 ? mask + first * W : NULL; /* without the background: odd ranks alone */
        gpuws_status st =
            gpuws_mpi_extract_host(MPI_COMM_WORLD, ctx, W, rows, rows ? x + first * W : NULL, &mo, root, &got);
        if (st) return mpi_fail(rank, "gpuws_mpi_extract_host");
        if (rank == root && (!got || !same_objects(got, want) || memcmp(got_seg, want_seg, n * sizeof *got_seg))) {
            fprintf(stderr, "rank %d of %d (background %d): %zu objects (whole %zu) or the segmentation map differ\n",
                    rank, size, made, got ? got->num_objects : 0, want->num_objects);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank != root && got) return mpi_fail(rank, "a catalogue on a rank that is not root");
        if (made && (memcmp(gback + first * W, back + first * W, rows * W * sizeof *back) ||
                     memcmp(grms + first * W, rms + first * W, rows * W * sizeof *rms) ||
                     memcmp(&got_r, &want_r, sizeof got_r))) {
            fprintf(stderr, "rank %d of %d: its rows of back or rms, or the globals, differ\n", rank, size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == root)
            printf("%d ranks, background %d: %zu objects, the whole image's catalogue and map\n", size, made,
                   want->num_objects);
        gpuws_extract_catalog_free(got), got = NULL;
        if (size > 1) { /* the last rank says another deblend_cont: every rank fails */
            gpuws_extract_options other = eo;
            other.deblend_cont = 0.01;
            mo.extract = rank + 1 == size ? &other : &eo;
            st = gpuws_mpi_extract_host(MPI_COMM_WORLD, ctx, W, rows, rows ? x + first * W : NULL, &mo, root, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || !strstr(gpuws_last_error(), "disagree on deblend_cont") || got)
                return mpi_fail(rank, "ranks that disagree did not fail this rank");
            mo.extract = &eo;
        }
        if (made && size > 2) { /* rank 1 one row short, the last one longer: its first row is not on a mesh row */
            const size_t f = first - (rank == size - 1 && rank > 1 ? 1 : 0);
            const size_t r = rows + (rank == size - 1 && rank > 1 ? 1 : 0) - (rank == 1 && size > 2 ? 1 : 0);
            mo.back_out = gback + f * W, mo.rms_out = grms + f * W;
            st = gpuws_mpi_extract_host(MPI_COMM_WORLD, ctx, W, r, r ? x + f * W : NULL, &mo, root, &got);
            if (st != GPUWS_ERR_INVALID_ARGUMENT || !strstr(gpuws_last_error(), "not a multiple of the mesh") || got)
                return mpi_fail(rank, "a split off the mesh rows did not fail this rank");
            gpuws_extract_catalog_free(got);
        }
        gpuws_extract_catalog_free(want);
    }
    free(x), free(back), free(rms), free(gback), free(grms), free(mask), free(want_seg), free(got_seg);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
