/* The collective calls over the devices of an MPI world's ranks (docs/scale.md, "Several hosts"):
 *   mpirun -n P gpuws-large-mpi BACKEND clip|sources [SIDE [REPS [all]]]
 * Each rank makes its rows of a SIDE x SIDE sky, puts them on its device (its rank on its host, modulo the devices
 * there) and times, REPS times after a first call (wall clock, after a barrier; rank 0 prints the median and the
 * fastest):
 *   clip     gpuws_mpi_sigma_clip on noise of σ 1 with a bright pixel every 997 (rows in whole chunks of 2^18
 *            values); with one rank also gpuws_sigma_clip on the same buffer;
 *   sources  gpuws_mpi_find_sources_parts on gpuws-large-incore's sky (its sources every 96 pixels; rows in whole
 *            measurement blocks), the catalogue into rank 0 (all: into every rank); with one rank also
 *            gpuws_find_sources_parts on the same part.
 * Not installed, not run by the tests. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define LARGE_PROGRAM   "gpuws-large-mpi"
#include "gpuws_mpi.h"
#include "large_support.h"

#include <math.h>
#include <string.h>

/* Values i0 .. i0 + n - 1 of the clipping's sky, the same whichever rank makes them. */
static void make_values(float *x, size_t i0, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = mix(i0 + i);
        double u = 0;
        for (int k = 0; k < 4; k++) u += (double)((r >> (16 * k)) & 0xffff) / 65536.0;
        x[i] = (float)((u - 2.0) * 1.7320508 + ((i0 + i) % 997 == 0 ? 50.0 : 0.0));
    }
}

/* Rows r0 .. r1 - 1 of gpuws-large-incore's sky (large_incore.c: make_sky), the same pixels whichever rank makes
 * them: the noise by pixel index, then the sources of the cells whose 13 x 13 footprints reach these rows (sources
 * never overlap: their centres are at least 21 pixels apart). */
static void make_rows(float *img, size_t w, size_t r0, size_t r1)
{
    for (size_t y = r0; y < r1; y++)
        for (size_t x = 0; x < w; x++) {
            const uint64_t r = mix(y * w + x);
            double u = 0;
            for (int k = 0; k < 4; k++) u += (double)((r >> (16 * k)) & 0xffff) / 65536.0;
            img[(y - r0) * w + x] = (float)((u - 2.0) * 1.7320508);
        }
    const size_t gh = (r1 + 96) / 96 < w / 96 ? (r1 + 96) / 96 : w / 96; /* the cells of large_incore's h == w */
    for (size_t gy = r0 > 96 ? r0 / 96 - 1 : 0; gy < gh; gy++)
        for (size_t gx = 0; gx < w / 96; gx++) {
            const uint64_t r = mix(~(gy * 100003 + gx));
            const double cx = (double)(gx * 96 + 10 + r % 76), cy = (double)(gy * 96 + 10 + (r >> 8) % 76);
            const double peak = 10.0 * pow(100.0, (double)((r >> 16) & 0xffff) / 65536.0);
            for (int dy = -6; dy <= 6; dy++) {
                const size_t y = (size_t)(cy + dy);
                if (y < r0 || y >= r1) continue;
                for (int dx = -6; dx <= 6; dx++) {
                    const double ex = dx, ey = dy;
                    img[(y - r0) * w + (size_t)(cx + dx)] +=
                        (float)(peak * exp(-(ex * ex + ey * ey) / (2 * 1.5 * 1.5)));
                }
            }
        }
}

static void fail(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", LARGE_PROGRAM, what, gpuws_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The median and the fastest of ms[0 .. reps) (sorted in place). */
static void median_min(double *ms, int reps, double *med, double *min)
{
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    *med = ms[reps / 2], *min = ms[0];
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
    const int sources = argc > 2 && !strcmp(argv[2], "sources");
    const size_t side = argc > 3 ? strtoull(argv[3], NULL, 10) : 32768;
    const int reps = argc > 4 ? atoi(argv[4]) : 9, root = argc > 5 ? GPUWS_MPI_ALL_RANKS : 0;
    if (argc < 3 || (!sources && strcmp(argv[2], "clip")) || side < 512 || reps < 1 || reps > 64 ||
        (argc > 5 && strcmp(argv[5], "all"))) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n P %s BACKEND clip|sources [SIDE >= 512 [REPS 1..64 [all]]]\n",
                    LARGE_PROGRAM);
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
    if (gpuws_context_get_device_info(ctx, &di)) fail("device info");
    /* rows in whole chunks of the clipping (2^18 values) or whole measurement blocks */
    const size_t unit = sources                    ? gpuws_find_sources_host_block_rows(side)
                        : side < ((size_t)1 << 18) ? ((size_t)1 << 18) / side
                                                   : 1,
                 units = (side + unit - 1) / unit;
    const size_t r0 = units * (size_t)rank / (size_t)size * unit,
                 r1 = rank + 1 == size ? side : units * (size_t)(rank + 1) / (size_t)size * unit;
    const size_t n = (r1 - r0) * side;
    float *x = must_alloc(n * sizeof *x + 4);
    if (sources) make_rows(x, side, r0, r1);
    else make_values(x, r0 * side, n);
    gpuws_buffer *b = NULL;
    if (n && (gpuws_buffer_create(ctx, n * sizeof *x, &b) || gpuws_buffer_write(b, 0, x, n * sizeof *x)))
        fail("the rank's rows on its device");
    free(x);
    gpuws_stream *s;
    if (gpuws_stream_create(ctx, &s)) fail("stream");
    const gpuws_image_part part = { s, b, r1 - r0 };
    double *ms = must_alloc((size_t)reps * sizeof *ms), med, min;
    double *steps = must_alloc((size_t)reps * 5 * sizeof *steps); /* sources: each step's and the rest's, per call */
    gpuws_sigma_clip_result r;
    gpuws_catalog *cat = NULL;
    for (int k = -1; k < reps; k++) {
        gpuws_catalog_free(cat);
        cat = NULL;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t = now();
        if (sources ? gpuws_mpi_find_sources_parts(MPI_COMM_WORLD, &part, 1, side, NULL, root, &cat)
                    : gpuws_mpi_sigma_clip(MPI_COMM_WORLD, NULL, b, n, NULL, &r))
            fail(sources ? "gpuws_mpi_find_sources_parts" : "gpuws_mpi_sigma_clip");
        if (k >= 0) ms[k] = (now() - t) * 1e3;
        if (k >= 0 && sources) {
            const double st[4] = { cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure };
            for (int i = 0; i < 4; i++) steps[i * reps + k] = st[i];
            steps[4 * reps + k] = ms[k] - (st[0] + st[1] + st[2] + st[3]);
        }
    }
    median_min(ms, reps, &med, &min);
    if (sources) r = cat->clip;
    char found[48] = ""; /* the sources found, in sources mode */
    if (sources) snprintf(found, sizeof found, "%zu sources, ", cat->num_sources);
    if (rank == 0)
        printf("%d rank(s), %s %s, %zu x %zu, %s: median %.2f ms, min %.2f (rank 0: rows %zu..%zu); %sclip count %zu "
               "median %.9g std %.9g, %d iterations\n",
               size, argv[1], di.name, side, side,
               !sources ? "gpuws_mpi_sigma_clip"
               : root   ? "gpuws_mpi_find_sources_parts into every rank"
                        : "gpuws_mpi_find_sources_parts into rank 0",
               med, min, r0, r1, found, r.count, r.median, r.std, r.iterations);
    if (sources) { /* where each rank's time goes: the medians of its steps (the catalogue's host-clock times) */
        double sm[5], mn;
        for (int i = 0; i < 5; i++) median_min(steps + i * reps, reps, &sm[i], &mn);
        for (int q = 0; q < size; q++) {
            if (q == rank)
                printf("rank %d steps (medians, ms): clip %.2f, threshold %.2f, label %.2f, measure %.2f, the rest "
                       "(agreement, set-up, catalogue) %.2f\n",
                       rank, sm[0], sm[1], sm[2], sm[3], sm[4]);
            fflush(stdout);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    free(steps);
    if (size == 1) { /* the same work in one process, without the reductions */
        gpuws_catalog *one = NULL;
        gpuws_sigma_clip_result c;
        for (int k = -1; k < reps; k++) {
            gpuws_catalog_free(one);
            one = NULL;
            const double t = now();
            if (sources ? gpuws_find_sources_parts(&part, 1, side, NULL, &one) : gpuws_sigma_clip(NULL, n, b, NULL, &c))
                fail(sources ? "gpuws_find_sources_parts" : "gpuws_sigma_clip");
            if (k >= 0) ms[k] = (now() - t) * 1e3;
        }
        median_min(ms, reps, &med, &min);
        if (sources) c = one->clip;
        if (sources) snprintf(found, sizeof found, "%zu sources, ", one->num_sources);
        printf("%s on the same device: median %.2f ms, min %.2f; %sclip count %s, median %s, std %.3g relative\n",
               sources ? "gpuws_find_sources_parts" : "gpuws_sigma_clip", med, min, found,
               c.count == r.count ? "equal" : "DIFFERS", c.median == r.median ? "equal" : "DIFFERS",
               fabs(c.std / r.std - 1));
        gpuws_catalog_free(one);
    }
    gpuws_catalog_free(cat);
    free(ms);
    gpuws_stream_destroy(s);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
