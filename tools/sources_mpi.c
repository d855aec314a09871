/* gpuws sources under an MPI launcher (`mpirun -n P gpuws sources IMAGE.fits --method workshop ...`): each rank reads
 * its own rows of the file and runs the pipeline on them with its own devices, and the ranks combine through the
 * pipeline's collectives: gpuws_find_sources_parts_reduce when every rank's rows fit its devices (one process's in-core
 * rule), else gpuws_find_sources_host_reduce (any size: the labelling in bands); rank 0 writes the outputs. The gpuws
 * tool never links libmpi (its start would cost every run): it dlopen()s libgpuws_mpi, whose gpuws_mpi_world_* calls
 * need no mpi.h here, and makes the library calls itself, so that one copy of gpuws holds the contexts. docs/scale.md,
 * "Several hosts". */
#include "gpuws_mpi_world.h"
#include "core/threads.h"
#include "core/tuning.h"
#include "parallel.h"
#include "sources.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The launcher's world size from its environment (Open MPI's OMPI_COMM_WORLD_*, MPICH's and Slurm's PMI_*): these
 * are how a process learns it was started as one of P ranks before MPI is loaded; not knobs. 0: no launcher. */
static int launcher_value(const char *ompi, const char *pmi)
{
    const char *v = getenv(ompi);
    if (!v || !*v) v = getenv(pmi);
    return v && *v ? atoi(v) : -1;
}

int sources_mpi_size(void) { return launcher_value("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"); }

/* A line when the launcher left this rank fewer CPUs than its share of the host's (Open MPI binds each of up to
 * two ranks to one core by default): the host steps run on a thread per CPU the rank may use. */
static void say_binding(int rank, int size)
{
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int local = launcher_value("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS");
    const unsigned allowed = gpuws__cpu_count();
    if (online > 0 && (long)allowed < online / (local > 1 ? local : 1))
        fprintf(stderr,
                "gpuws sources: rank %d of %d may run on %u of the host's %ld CPUs (the launcher binds it): its host "
                "steps get %u thread%s (Open MPI: mpirun --bind-to none)\n",
                rank, size, allowed, online, allowed, allowed == 1 ? "" : "s");
}

typedef struct {
    void *lib;
    int rank, size, local_rank;
    gpuws_sum_reducer sum;
    gpuws_gatherer gatherer;
    gpuws_mpi_world_agree_fn agree;
    gpuws_mpi_world_gather_fn gather;
    gpuws_mpi_world_rows_fn rows;
    gpuws_mpi_world_finalize_fn finalize;
} world;

/* libgpuws_mpi: next to the tool as installed (GPUWS_MPI_INSTALLED: the library's path relative to the tool's
 * folder), else where the build tree made it. 0, or -1 with the reason in err. */
static int world_load(world *w, char *err, size_t n)
{
    memset(w, 0, sizeof *w);
#if defined(GPUWS_MPI_INSTALLED) && defined(GPUWS_MPI_BUILT)
    char self[PATH_MAX], path[PATH_MAX + 256];
    const ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    const char *tried[2] = { NULL, GPUWS_MPI_BUILT };
    if (k > 0) {
        self[k] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(path, sizeof path, "%s/%s", self, GPUWS_MPI_INSTALLED);
        tried[0] = path;
    }
    const char *why = "";
    for (int t = 0; t < 2 && !w->lib; t++) {
        if (!tried[t]) continue;
        /* global: Open MPI's plugins, loaded later, look for libmpi's symbols there */
        w->lib = dlopen(tried[t], RTLD_NOW | RTLD_GLOBAL);
        if (!w->lib && (why = dlerror()) == NULL) why = "";
    }
    if (!w->lib) return snprintf(err, n, "cannot load libgpuws_mpi: %s", why), -1;
    gpuws_mpi_world_init_fn init;
    *(void **)&init = dlsym(w->lib, "gpuws_mpi_world_init");
    *(void **)&w->sum = dlsym(w->lib, "gpuws_mpi_world_sum");
    *(void **)&w->gatherer = dlsym(w->lib, "gpuws_mpi_world_gatherer");
    *(void **)&w->agree = dlsym(w->lib, "gpuws_mpi_world_agree");
    *(void **)&w->gather = dlsym(w->lib, "gpuws_mpi_world_gather");
    *(void **)&w->rows = dlsym(w->lib, "gpuws_mpi_world_rows");
    *(void **)&w->finalize = dlsym(w->lib, "gpuws_mpi_world_finalize");
    if (!init || !w->sum || !w->gatherer || !w->agree || !w->gather || !w->rows || !w->finalize)
        return snprintf(err, n, "libgpuws_mpi lacks gpuws_mpi_world_* (an older library?)"), -1;
    if (init(&w->rank, &w->size, &w->local_rank)) return snprintf(err, n, "MPI_Init_thread failed"), -1;
    return 0;
#else
    return snprintf(err, n, "gpuws was built without MPI (reconfigure where CMake finds MPI: libopenmpi-dev)"), -1;
#endif
}

/* Collective: every rank's outcome (code 0, or the exit code it gives, its reason printed by itself). 0 when every
 * rank succeeded; else this rank's exit code: its own, or the lowest failing rank's, with a line saying which rank
 * failed and why. */
static int world_check(const world *w, int code, const char *why)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", why ? why : "");
    int first = -1, first_code = 0;
    if (!w->agree(code, msg, sizeof msg, &first, &first_code)) return 0;
    if (code) return code;
    fprintf(stderr, "gpuws sources: rank %d of %d: stopped: rank %d failed: %s\n", w->rank, w->size, first, msg);
    return first_code;
}

/* This rank's own failure: its line on stderr, then world_check. */
static int world_fail(const world *w, int code, const char *why)
{
    if (code) fprintf(stderr, "gpuws sources: rank %d of %d: %s\n", w->rank, w->size, why);
    return world_check(w, code, why);
}

/* FNV-1a of n bytes, on from h (0: the start). */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    if (!h) h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* Compares a value of every rank with rank 0's through one sum of P words: the first rank that differs, or -1; -2
 * when the reduction fails (on every rank alike). */
static int differs(const world *w, uint64_t v)
{
    uint64_t *words = calloc((size_t)w->size, sizeof *words);
    if (!words) { /* a rank that cannot take part ends the job: the launcher stops the others, none waits */
        fprintf(stderr, "gpuws sources: rank %d of %d: out of memory\n", w->rank, w->size);
        exit(1);
    }
    words[w->rank] = v;
    int at = w->sum(NULL, words, (size_t)w->size) ? -2 : -1;
    for (int r = 1; at == -1 && r < w->size; r++)
        if (words[r] != words[0]) at = r;
    free(words);
    return at;
}

/* What runs in one process is refused under MPI: 2 with the reason on stderr. The extraction's maps (--background,
 * --rms) go with --method extract: the parser refuses them with --method workshop. */
static int refuse_options(const world *w, const sources_args *a)
{
    const char *why = NULL;
    if (a->demo) why = "--demo makes its sky on one device";
    if (why) fprintf(stderr, "gpuws sources: rank %d of %d: %s: not under MPI\n", w->rank, w->size, why);
    return why ? 2 : 0;
}

/* Rank `rank` of `size`: its share of the height, whole blocks of the measurement's rows (the catalogue is then one
 * process's bits), or with --method extract whole rows of the background's meshes (each mesh then one rank's), rank
 * 0 first; a rank may get none. */
typedef struct {
    int rank, size;
    const sources_args *a;
} share_of;

/* The rows of a block of a share: the measurement's, or the extraction's mesh rows. */
static size_t share_block(const sources_args *a, size_t width, size_t height)
{
    if (a->method != METHOD_EXTRACT) return gpuws_find_sources_host_block_rows(width);
    gpuws_extract_options eo;
    gpuws_background_options bo;
    sources_extract_options(a, width, height, &eo, &bo);
    return bo.bh > 0 ? (size_t)bo.bh : 1;
}

static void choose_rows(void *user, size_t width, size_t height, size_t *row0, size_t *rows)
{
    const share_of *s = user;
    const size_t block = share_block(s->a, width, height), blocks = (height + block - 1) / block;
    const size_t b0 = blocks * (size_t)s->rank / (size_t)s->size, b1 = blocks * ((size_t)s->rank + 1) / (size_t)s->size;
    const size_t r0 = b0 * block < height ? b0 * block : height, r1 = b1 * block < height ? b1 * block : height;
    *row0 = r0, *rows = r1 - r0;
}

/* This rank's contexts: GPUWS_DEVICE's when it is set, else one on the device of index local rank modulo the
 * device count of the first backend of GPUWS_BACKEND's list (else cuda, opencl, cpu) that has a device: one rank a
 * GPU of its host. The devices are counted without a context: one on device 0 for every rank of a host would take
 * that device's memory. An unknown name is left to gpuws_context_create to report. */
static gpuws_status rank_contexts(void *user, sources_contexts *c)
{
    const world *w = user;
    c->n = 0;
    const char *list = getenv("GPUWS_DEVICE");
    if (list && *list) return gpuws_contexts_create(NULL, sizeof c->ctx / sizeof *c->ctx, c->ctx, &c->n);
    static const char *const names[] = { "cuda", "opencl", "cpu" };
    static const gpuws_backend_kind kinds[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };
    const char *env = getenv("GPUWS_BACKEND");
    char spec[256];
    snprintf(spec, sizeof spec, "%s", env && *env ? env : "cuda,opencl,cpu");
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    char *save = NULL;
    for (char *name = strtok_r(spec, ",", &save); name && !o.backend; name = strtok_r(NULL, ",", &save)) {
        name += strspn(name, " \t");
        name[strcspn(name, " \t")] = 0;
        int k = 0;
        while (k < 3 && strcasecmp(name, names[k])) k++;
        if (k == 3) break;
        size_t count = 0;
        if (!gpuws_device_count(kinds[k], kinds[k] == GPUWS_BACKEND_OPENCL ? getenv("GPUWS_OPENCL_PLATFORM") : NULL,
                                &count) &&
            count)
            o.backend = names[k], o.device = (int)((size_t)w->local_rank % count);
    }
    const gpuws_status st = gpuws_context_create(&c->ctx[0], o.backend ? &o : NULL);
    c->n = !st;
    return st;
}

/* Whether the ranks run the pipeline on the host (gpuws_find_sources_host_reduce) rather than on their devices: when
 * --max-device-memory is given or a rank's share for one of its devices does not fit that device by one process's
 * rule (sources_use_host). One sum decides for every rank, since either pipeline is collective. 1: the host, 0: the
 * devices, -1: the reduction failed. */
static int ranks_use_host(const world *w, const sources_args *a, const sources_contexts *c, const fits_image *img)
{
    const size_t share = (img->rows + c->n - 1) / c->n;
    uint64_t host = a->max_device_given || (share && sources_use_host(a, c->ctx[0], img->width, share));
    if (w->sum(NULL, &host, 1)) return -1;
    return host != 0;
}

/* This rank's rows on its devices: a part a device, in whole blocks of the measurement's rows as one process splits
 * its image over its devices (gpuws_find_sources with more_contexts), each on a stream of its own. */
typedef struct {
    gpuws_image_part part[sizeof((sources_contexts *)0)->ctx / sizeof(gpuws_context *)];
    size_t n;
} rank_parts;

static void rank_parts_free(rank_parts *rp)
{
    for (size_t p = 0; p < rp->n; p++) {
        gpuws_buffer_destroy((gpuws_buffer *)rp->part[p].image);
        gpuws_stream_destroy(rp->part[p].stream);
    }
    rp->n = 0;
}

/* Uploads this rank's rows into rp: 0, or 1 with the reason in err (rp then holds nothing). */
static int rank_parts_upload(const sources_contexts *c, const fits_image *img, rank_parts *rp, char *err, size_t n)
{
    const size_t block = gpuws_find_sources_host_block_rows(img->width), blocks = (img->rows + block - 1) / block;
    gpuws_status st = GPUWS_OK;
    rp->n = 0;
    for (size_t d = 0; d < c->n && !st; d++) {
        const size_t r0 = blocks * d / c->n * block, end = blocks * (d + 1) / c->n * block;
        const size_t r1 = end < img->rows ? end : img->rows, bytes = (r1 - r0) * img->width * sizeof(float);
        if (r1 <= r0) continue;
        gpuws_image_part *p = &rp->part[rp->n];
        gpuws_buffer *b = NULL;
        *p = (gpuws_image_part){ NULL, NULL, r1 - r0 };
        if (!(st = gpuws_stream_create(c->ctx[d], &p->stream)) && !(st = gpuws_buffer_create(c->ctx[d], bytes, &b)))
            st = gpuws_buffer_write(b, 0, img->data + r0 * img->width, bytes);
        p->image = b;
        rp->n++;
        if (st)
            snprintf(err, n, "rows %zu to %zu on device %zu: %s: %s", img->row0 + r0, img->row0 + r1 - 1, d,
                     gpuws_status_name(st), gpuws_last_error());
    }
    if (st) rank_parts_free(rp);
    return st ? 1 : 0;
}

/* Output k, a width x height FITS image of `type` whose rows the ranks hold (this rank img->rows at `mine`, from
 * img->row0), written without being gathered: rank 0 stages the file, its header and a data unit of zeros
 * (fits_write_image_shell), and every rank writes its own rows into it (fits_write_rows). A rank that does not see
 * that file (on another host, where the output is a device or FIFO, which is staged in rank 0's $TMPDIR; or with the
 * knob mpi_rows_to_root=1) sends its rows to rank 0 instead, one rank's share at a time. sources_write_outputs then
 * only puts the file in place (products.staged). *ms: the time it took. The exit code, the same on every rank. */
static int write_rows_ranks(const world *w, const sources_args *a, const fits_image *img, size_t k,
                            fits_pixel_type type, const void *mine, double *ms)
{
    enum { PATH_WORDS = PATH_MAX / 8 };
    const double t0 = tool_now_ms();
    const int root = w->rank == 0, P = w->size;
    const size_t width = img->width, row_bytes = width * (type == FITS_F64 ? 8 : 4);
    char err[PATH_MAX + 600] = "";
    uint64_t *words = calloc(1 + PATH_WORDS + 2 * (size_t)P, sizeof *words);
    uint64_t *share = words ? words + 1 + PATH_WORDS : NULL; /* rows a rank did not write: first, count */
    size_t *counts = calloc((size_t)P, sizeof *counts);
    int code = !words || !counts;
    if (code) snprintf(err, sizeof err, "out of memory");
    if (!code && root) { /* the file, with the input's WCS as the one-process maps have it */
        char why[300] = "", bunit[72];
        sky_wcs *wcs;
        products p;
        products_from_image(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
        const char *path = output_files_stage(a->outputs, k, err, sizeof err);
        code = !path;
        if (path && strlen(path) >= PATH_WORDS * 8) snprintf(err, sizeof err, "%s: path too long", path), code = 1;
        else if (path && fits_write_image_shell(path, type, width, img->height, p.cards, p.ncards, &words[0], err,
                                                sizeof err)) {
            output_files_reword(a->outputs, k, err, sizeof err);
            code = 1;
        } else if (path) memcpy(words + 1, path, strlen(path) + 1);
        products_free(&p);
        sky_wcs_destroy(wcs);
    }
    int rc = world_fail(w, code, err);
    gpuws_status st = GPUWS_OK;
    if (!rc) { /* its offset and path to every rank */
        counts[0] = 1 + PATH_WORDS;
        st = w->gatherer(NULL, words, counts, (size_t)w->rank, (size_t)P, GPUWS_ALL_CALLERS);
        snprintf(err, sizeof err, "the staged file's name from rank 0 failed: %s", gpuws_status_name(st));
        rc = world_fail(w, st ? 1 : 0, err);
    }
    const char *path = (const char *)(words + 1);
    int wrote = -2;
    if (!rc) {
        gpuws__tuning tu;
        gpuws__tuning_from_env(&tu);
        if (!img->rows) wrote = 0;
        else if (root || !tu.mpi_rows_to_root)
            wrote =
                fits_write_rows(path, words[0], type, mine, width, img->height, img->row0, img->rows, err, sizeof err);
        output_files_reword_path(err, sizeof err, path, a->out[k]); /* the file the user gave */
        rc = world_fail(w, wrote == -1, err);
    }
    if (!rc) { /* which rows went unwritten, and where they are */
        share[2 * (size_t)w->rank] = wrote == -2 ? img->row0 : 0;
        share[2 * (size_t)w->rank + 1] = wrote == -2 ? img->rows : 0;
        st = w->sum(NULL, share, 2 * (size_t)P);
        snprintf(err, sizeof err, "a reduction failed: %s", gpuws_status_name(st));
        rc = world_fail(w, st ? 1 : 0, err);
    }
    size_t most = 0;
    for (int r = 0; !rc && r < P; r++) most = share[2 * r + 1] > most ? share[2 * r + 1] : most;
    void *rows = most && root ? malloc(most * row_bytes) : NULL;
    if (!rc && most) rc = world_fail(w, root && !rows, "out of memory on rank 0 for a rank's rows of the maps");
    for (int r = 0; !rc && r < P; r++) {
        const size_t lo = share[2 * r], n = share[2 * r + 1];
        if (!n) continue;
        st = w->rows(mine, img->row0, img->rows, row_bytes, root ? lo : 0, root ? lo + n : 0, rows);
        snprintf(err, sizeof err, "rank %d's rows of %s to rank 0 failed: %s", r, a->out[k], gpuws_status_name(st));
        code = st ? 1 : 0;
        if (!st && root && fits_write_rows(path, words[0], type, rows, width, img->height, lo, n, err, sizeof err))
            code = 1, output_files_reword(a->outputs, k, err, sizeof err);
        rc = world_fail(w, code, err);
    }
    free(rows), free(words), free(counts);
    *ms = tool_now_ms() - t0;
    return rc;
}

/* The whole image's pixels (--overlay) on rank 0, which holds W x H x 4 bytes of them, from every rank's rows; the
 * other ranks free their catalogue and image once sent (only rank 0 writes). The exit code, the same on every rank;
 * rank 0's *pixels is the caller's to free whatever it is. */
static int gather_pixels(const world *w, fits_image *img, gpuws_catalog **cat, float **pixels)
{
    const size_t n = img->width * img->height, mine = img->rows * img->width;
    const int root = w->rank == 0;
    char err[300] = "";
    if (root && !(*pixels = malloc(n * sizeof **pixels)))
        snprintf(err, sizeof err, "out of memory for the whole image's pixels (%zu bytes) on rank 0", n * 4);
    int rc = world_fail(w, root && !*pixels, err);
    if (rc) return rc;
    const gpuws_status st = w->gather(img->data, mine * sizeof(float), *pixels, root ? n * sizeof(float) : 0);
    if (!root) gpuws_catalog_free(*cat), *cat = NULL, fits_image_free(img);
    /* the same status on every rank: the gather checks its sizes collectively */
    snprintf(err, sizeof err, "the gather of the rows on rank 0 failed: %s", gpuws_status_name(st));
    return world_fail(w, st ? 1 : 0, err);
}

/* The objects one phot_ranks call measures: at (x[k], y[k]), index[k] in the catalogue, on rows lo .. hi - 1. */
typedef struct {
    size_t n, lo, hi;
    double *x, *y;
    size_t *index;
} phot_group;

/* Rows of a group of three maps (pixels, background, rms) of rows lo .. hi - 1 from whichever ranks hold them, and
 * their mask of NaN and infinite pixels (NULL when none): collective, 0 or the exit code. */
static int phot_strip(const world *w, const fits_image *img, const float *back, const float *rms, const phot_group *g,
                      float **maps, unsigned char **mask)
{
    const size_t width = img->width, n = (g->hi - g->lo) * width;
    char err[300];
    *mask = NULL;
    *maps = malloc((n ? n : 1) * 3 * sizeof **maps);
    int rc = world_fail(w, !*maps, "out of memory for the apertures' rows of other ranks");
    const float *part[3] = { img->data, back, rms };
    for (int k = 0; !rc && k < 3; k++) {
        const gpuws_status st =
            w->rows(part[k], img->row0, img->rows, width * sizeof(float), g->lo, g->hi, *maps + (size_t)k * n);
        snprintf(err, sizeof err, "the apertures' rows from the other ranks failed: %s", gpuws_status_name(st));
        rc = world_fail(w, st ? 1 : 0, err);
    }
    size_t bad = 0;
    for (size_t i = 0; !rc && i < n; i++) bad += !isfinite((*maps)[i]);
    if (bad && (*mask = malloc(n)))
        for (size_t i = 0; i < n; i++) (*mask)[i] = !isfinite((*maps)[i]);
    if (!rc) rc = world_fail(w, bad && !*mask, "out of memory for the mask of the apertures' rows");
    return rc;
}

/* --phot-apertures over the ranks, after the extraction: rank 0 sends every object's (x, y) to every rank; each
 * rank measures the objects whose row floor(y) is one of its own: those whose circles stay in its rows on its own
 * arrays (mask: its rows' NaN and infinite pixels, or NULL), those near its first or last row on a strip of rows
 * that gpuws_mpi_world_rows brings from the ranks that hold them (phot_halo_rows each side of the objects: 12 bytes
 * a pixel), on its device within --max-device-memory; rank 0 gathers the values into *ph in the catalogue's order.
 * A circle's sums depend only on the pixels of its box and its place in the image: one process's bits. The exit
 * code, the same on every rank. */
static int phot_ranks(const world *w, const sources_args *a, const fits_image *img, const sources_contexts *c,
                      const gpuws_extract_catalog *cat, const float *back, const float *rms, const unsigned char *mask,
                      phot_table *ph)
{
    const size_t width = img->width, height = img->height, nap = a->x.phot.n, per = 1 + 3 * nap;
    const size_t row0 = img->row0, end = img->row0 + img->rows, halo = phot_halo_rows(&a->x.phot);
    const int root = w->rank == 0;
    char err[600] = "";
    uint64_t nobj = root ? cat->num_objects : 0;
    gpuws_status st = w->sum(NULL, &nobj, 1);
    snprintf(err, sizeof err, "the object count's reduction failed: %s", gpuws_status_name(st));
    int rc = world_fail(w, st ? 1 : 0, err);
    if (rc) return rc;
    /* every object's x then y, as words, from rank 0 */
    uint64_t *xy = malloc((nobj ? 2 * nobj : 1) * sizeof *xy);
    size_t *counts = calloc((size_t)w->size, sizeof *counts), *index = malloc((nobj ? nobj : 1) * sizeof *index);
    double *ox = malloc((nobj ? nobj : 1) * 2 * sizeof *ox);
    unsigned char *group = malloc(nobj ? nobj : 1);
    rc = world_fail(w, !xy || !counts || !index || !ox || !group, "out of memory for the objects' positions");
    if (!rc) {
        for (size_t k = 0; root && k < nobj; k++) {
            memcpy(&xy[k], &cat->objects[k].x, sizeof *xy);
            memcpy(&xy[nobj + k], &cat->objects[k].y, sizeof *xy);
        }
        counts[0] = 2 * nobj;
        st = w->gatherer(NULL, xy, counts, (size_t)w->rank, (size_t)w->size, GPUWS_ALL_CALLERS);
        snprintf(err, sizeof err, "the objects' positions from rank 0 failed: %s", gpuws_status_name(st));
        rc = world_fail(w, st ? 1 : 0, err);
    }
    /* this rank's objects in three groups (its own rows; near its first row; near its last), each contiguous */
    phot_group g[3];
    memset(g, 0, sizeof g);
    g[0].lo = row0, g[0].hi = end, g[1].lo = g[2].lo = height;
    for (size_t k = 0; !rc && k < nobj; k++) {
        double y;
        memcpy(&y, &xy[nobj + k], sizeof y);
        const size_t row = !(y > 0) ? 0 : y >= (double)(height - 1) ? height - 1 : (size_t)y;
        if (row < row0 || row >= end) {
            group[k] = 3;
            continue;
        }
        const size_t lo = row < halo ? 0 : row - halo, hi = row + halo + 1 < height ? row + halo + 1 : height;
        const int at = lo >= row0 && hi <= end ? 0 : lo < row0 ? 1 : 2;
        group[k] = (unsigned char)at;
        g[at].n++;
        if (at && lo < g[at].lo) g[at].lo = lo;
        if (at && hi > g[at].hi) g[at].hi = hi;
    }
    size_t m = 0;
    for (int at = 0; at < 3 && !rc; at++) {
        g[at].x = ox + m, g[at].y = ox + nobj + m, g[at].index = index + m;
        m += g[at].n, g[at].n = 0;
        if (at && g[at].lo >= g[at].hi) g[at].lo = g[at].hi = 0;
    }
    for (size_t k = 0; !rc && k < nobj; k++) {
        if (group[k] == 3) continue;
        phot_group *q = &g[group[k]];
        memcpy(&q->x[q->n], &xy[k], sizeof(double)), memcpy(&q->y[q->n], &xy[nobj + k], sizeof(double));
        q->index[q->n++] = k;
    }
    free(xy), free(group);
    /* the values: (index, 3 nap values) an object, gathered on rank 0 in rank order */
    double *rows = rc ? NULL : malloc((m ? m : 1) * per * sizeof *rows), *all = NULL;
    if (!rc) rc = world_fail(w, !rows, "out of memory for the apertures' values");
    size_t done = 0;
    for (int at = 0; at < 3 && !rc; at++) {
        float *maps = NULL;
        unsigned char *smask = NULL;
        if (at && (rc = phot_strip(w, img, back, rms, &g[at], &maps, &smask))) break;
        const size_t n = (g[at].hi - g[at].lo) * width;
        phot_table got;
        memset(&got, 0, sizeof got);
        st = !g[at].n ? GPUWS_OK
             : at     ? phot_measure_rows(&a->x.phot, c->ctx[0], width, height, g[at].lo, g[at].hi - g[at].lo, maps,
                                          maps + n, maps + 2 * n, smask, a->max_device_bytes, g[at].n, g[at].x, g[at].y,
                                          &got)
                      : phot_measure_rows(&a->x.phot, c->ctx[0], width, height, row0, end - row0, img->data, back, rms,
                                          mask, a->max_device_bytes, g[at].n, g[at].x, g[at].y, &got);
        for (size_t j = 0; !st && j < g[at].n; j++, done++) {
            rows[done * per] = (double)g[at].index[j]; /* exact: an object count is far below 2^53 */
            memcpy(rows + done * per + 1, phot_row(&got, j), 3 * nap * sizeof *rows);
        }
        phot_free(&got);
        free(maps), free(smask);
        snprintf(err, sizeof err, "the apertures: %s: %s", gpuws_status_name(st), gpuws_last_error());
        rc = world_fail(w, st ? 1 : 0, err);
    }
    free(ox), free(index);
    st = GPUWS_OK;
    if (!rc && root) {
        all = malloc((nobj ? nobj : 1) * per * sizeof *all);
        st = phot_table_init(&a->x.phot, nobj, ph);
    }
    if (!rc) rc = world_fail(w, root && (!all || st), "out of memory on rank 0 for the apertures' values");
    if (!rc) {
        st = w->gather(rows, m * per * sizeof *rows, all, root ? nobj * per * sizeof *all : 0);
        snprintf(err, sizeof err, "the apertures' values to rank 0 failed: %s", gpuws_status_name(st));
        rc = world_fail(w, st ? 1 : 0, err);
    }
    for (size_t j = 0; !rc && root && j < nobj; j++)
        memcpy(ph->v + (size_t)all[j * per] * 3 * nap, all + j * per + 1, 3 * nap * sizeof *all);
    free(rows), free(all), free(counts);
    return rc;
}

/* --method extract over the ranks (gpuws_extract_host_reduce): each rank its rows' mask of NaN and infinite pixels
 * and its bands on its devices within --max-device-memory; rank 0 gets the catalogue and the segmentation map, the
 * ranks measure --phot-apertures on their own rows (phot_ranks) and write their rows of the maps (--background,
 * --rms: write_rows_ranks), and rank 0 gathers the pixels (--overlay) and writes the other outputs. The exit code,
 * the same on every rank. */
static int run_extract_ranks(const world *w, const sources_args *a, const fits_image *img, const sources_contexts *c,
                             sources_times *t)
{
    const size_t width = img->width, n = width * img->height, mine = img->rows * width;
    const int root = w->rank == 0;
    char err[600] = "";
    int code = 0;
    size_t bad = 0;
    const float *px = img->data;
    for (size_t i = 0; i < mine; i++) bad += !isfinite(px[i]);
    unsigned char *mask = bad ? malloc(mine) : NULL;
    const int phot = a->x.phot.n > 0, want_back = a->out[OUT_BACKGROUND] || phot, want_rms = a->out[OUT_RMS] || phot;
    float *back = want_back ? malloc(mine ? mine * sizeof *back : 1) : NULL;
    float *rms = want_rms ? malloc(mine ? mine * sizeof *rms : 1) : NULL;
    int32_t *seg = root && a->out[OUT_LABELS] ? malloc(n * sizeof *seg) : NULL;
    if ((bad && !mask) || (want_back && !back) || (want_rms && !rms) || (root && a->out[OUT_LABELS] && !seg))
        snprintf(err, sizeof err, "out of memory for the extraction's mask and maps"), code = 1;
    for (size_t i = 0; mask && i < mine; i++) mask[i] = !isfinite(px[i]);
    int rc = world_fail(w, code, err);
    gpuws_extract_catalog *cat = NULL;
    gpuws_background_result br;
    if (!rc) {
        gpuws_extract_options eo;
        gpuws_background_options bo;
        sources_extract_options(a, width, img->height, &eo, &bo);
        tool_band_progress progress = tool_band_progress_start("gpuws sources");
        progress.step = "extraction";
        gpuws_extract_host_options eho = GPUWS_EXTRACT_HOST_OPTIONS_INIT;
        eho.extract = &eo, eho.background = &bo, eho.mask = mask, eho.segmap = seg;
        eho.back_out = back, eho.rms_out = rms, eho.background_result = &br;
        eho.max_device_bytes = a->max_device_bytes, eho.more_contexts = c->ctx + 1, eho.num_more_contexts = c->n - 1;
        if (root) eho.progress = tool_label_band, eho.progress_user = &progress;
        const double t0 = tool_now_ms();
        const gpuws_status st =
            gpuws_extract_host_reduce(c->ctx[0], width, img->rows, img->rows ? px : NULL, &eho, (size_t)w->rank,
                                      (size_t)w->size, 0, w->sum, w->gatherer, NULL, &cat);
        t->extract = tool_now_ms() - t0;
        snprintf(err, sizeof err, "%s: %s", gpuws_status_name(st), gpuws_last_error());
        rc = world_fail(w, st ? 1 : 0, err);
    }
    phot_table ph;
    memset(&ph, 0, sizeof ph);
    if (!rc && phot) {
        const double t1 = tool_now_ms();
        rc = phot_ranks(w, a, img, c, root ? cat : NULL, back, rms, mask, &ph);
        t->phot = tool_now_ms() - t1;
    }
    free(mask);
    /* the maps written by the ranks, each its rows; the pixels of the overlay whole on rank 0 */
    unsigned staged = 0;
    const size_t maps[2] = { OUT_BACKGROUND, OUT_RMS };
    for (int m = 0; !rc && m < 2; m++) {
        if (!a->out[maps[m]]) continue;
        rc = write_rows_ranks(w, a, img, maps[m], FITS_F32, m ? rms : back, &t->out[maps[m]]);
        staged |= 1u << maps[m];
    }
    free(back), free(rms);
    float *all = NULL;
    if (!rc && a->out[OUT_OVERLAY]) {
        rc = world_fail(w, root && !(all = malloc(n * sizeof *all)), "out of memory on rank 0 for the whole image");
        const double t0 = tool_now_ms();
        const gpuws_status st = rc ? GPUWS_OK : w->gather(px, mine * sizeof *px, all, root ? n * sizeof *all : 0);
        snprintf(err, sizeof err, "the gather of the rows on rank 0 failed: %s", gpuws_status_name(st));
        if (!rc) rc = world_fail(w, st ? 1 : 0, err);
        t->download = tool_now_ms() - t0;
    }
    if (!rc && root) {
        rc = sources_extract_write(a, img, all, cat, seg, staged, phot ? &ph : NULL, &br, t);
        cat = NULL, seg = NULL;
    }
    phot_free(&ph);
    gpuws_extract_catalog_free(cat);
    free(seg), free(all);
    return rc;
}

/* Rank 0's report of the image and of how the ranks share it: rows in shares of whole `blocks`, `how`. */
static void say_run(const world *w, const sources_args *a, const fits_image *img, const uint64_t counts[2],
                    const sources_contexts *c, const char *blocks, const char *how)
{
    if (w->rank) return;
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(c->ctx[0], &d);
    gpuws_context_get_backend(c->ctx[0], &k);
    char plane[64] = "";
    if (img->nplanes > 1) snprintf(plane, sizeof plane, " plane %lld of %lld,", img->plane, img->nplanes);
    printf("%s: HDU %d,%s %zu x %zu pixels (BITPIX %d), %llu blank or NaN, %llu infinite\n", a->image, img->hdu, plane,
           img->width, img->height, img->bitpix, (unsigned long long)counts[0], (unsigned long long)counts[1]);
    say_binding(w->rank, w->size);
    printf("ranks: %d (MPI), rows in shares of whole %zu-row %s, %s; rank 0's device: %s: %s\n", w->size,
           share_block(a, img->width, img->height), blocks, how,
           k == GPUWS_BACKEND_CUDA     ? "cuda"
           : k == GPUWS_BACKEND_OPENCL ? "opencl"
                                       : "cpu",
           d.name);
    fflush(stdout);
}

/* The run after the command line: the read, the pipeline, rank 0's outputs. The exit code, the same on every rank. */
static int run(const world *w, sources_args *a, double start, double ms_mpi)
{
    sources_times t;
    sources_times_init(&t, start);
    t.mpi = ms_mpi;
    char err[4400] = "";
    int code = 0;
    if (w->rank == 0) { /* the outputs first: a destination that cannot be written fails before any work */
        const char *inputs[2] = { a->image, a->filter_file };
        a->outputs = output_files_prepare(inputs, 2, a->out, sources_out_options, OUT_COUNT, &code, err, sizeof err);
    }
    int rc = world_fail(w, a->outputs || w->rank ? 0 : code, err);
    if (rc) return rc;

    share_of share = { w->rank, w->size, a };
    fits_read_request req = sources_read_request(a);
    req.want_header = w->rank == 0; /* the WCS of the outputs */
    fits_image img;
    /* the rank's device starts on a thread while it reads its rows (rank_contexts makes no MPI call): a context's
     * start costs a GPU process about as much as the read of its share */
    sources_device dev;
    sources_device_begin_with(&dev, rank_contexts, (void *)w);
    double t0 = tool_now_ms();
    rc = fits_read_rows(a->image, 0, &req, choose_rows, &share, &img, err, sizeof err) ? 1 : 0;
    t.read = tool_now_ms() - t0;
    sources_device_wait(&dev, &t);
    sources_contexts c = dev.c;
    if ((rc = world_fail(w, rc, err))) return fits_image_free(&img), gpuws_contexts_destroy(c.ctx, c.n), rc;

    /* every rank read the same image (the same file on every host), and the blank and infinite pixels of all */
    size_t blanks = 0, infinite = 0;
    const float *px = img.data;
    for (size_t i = 0; i < img.rows * img.width; i++) blanks += isnan(px[i]) != 0, infinite += isinf(px[i]) != 0;
    uint64_t counts[2] = { blanks, infinite };
    const uint64_t dims[4] = { img.width, img.height, (uint64_t)img.hdu, (uint64_t)img.plane };
    const int other = differs(w, fnv(0, dims, sizeof dims));
    if (other == -1 && w->sum(NULL, counts, 2)) snprintf(err, sizeof err, "a reduction failed"), rc = 1;
    if (other == -2) snprintf(err, sizeof err, "a reduction failed"), rc = 1;
    if (other > 0)
        snprintf(err, sizeof err, "%s: rank %d read another image than rank 0 (size, HDU or plane)", a->image, other),
            rc = 1;
    if (!rc && counts[0] + counts[1] == (uint64_t)img.width * img.height)
        snprintf(err, sizeof err, "%s: every pixel of the %zu x %zu image (HDU %d) is blank, NaN or infinite", a->image,
                 img.width, img.height, img.hdu),
            rc = 1;
    if (rc) { /* known to every rank alike */
        fprintf(stderr, "gpuws sources: rank %d of %d: %s\n", w->rank, w->size, err);
        return fits_image_free(&img), gpuws_contexts_destroy(c.ctx, c.n), rc;
    }
    gpuws_status st = dev.st;
    snprintf(err, sizeof err, "%s: %s", gpuws_status_name(st), dev.why);
    if ((rc = world_fail(w, st ? 1 : 0, err))) return fits_image_free(&img), gpuws_contexts_destroy(c.ctx, c.n), rc;
    if (a->method == METHOD_EXTRACT) {
        say_run(w, a, &img, counts, &c, "mesh rows", "the extraction from host memory");
        rc = run_extract_ranks(w, a, &img, &c, &t);
        if (!rc && w->rank == 0 && a->timings) sources_times_print(&t, a->image);
        fflush(stdout);
        rc = world_check(w, rc, "the outputs were not written");
        gpuws_contexts_destroy(c.ctx, c.n);
        fits_image_free(&img);
        return rc;
    }
    const int host = ranks_use_host(w, a, &c, &img);
    if ((rc = world_fail(w, host < 0, "a reduction failed")))
        return fits_image_free(&img), gpuws_contexts_destroy(c.ctx, c.n), rc;

    say_run(w, a, &img, counts, &c, "blocks",
            host ? "the pipeline on the host (labelling on the devices)" : "the pipeline on each rank's devices");
    gpuws_label_host_options lo = GPUWS_LABEL_HOST_OPTIONS_INIT;
    lo.max_device_bytes = a->max_device_bytes;
    lo.more_contexts = c.ctx + 1, lo.num_more_contexts = c.n - 1;
    gpuws_catalog *cat = NULL;
    rank_parts rp = { .n = 0 };
    if (!host) {
        t0 = tool_now_ms();
        rc = world_fail(w, rank_parts_upload(&c, &img, &rp, err, sizeof err), err);
        t.upload = tool_now_ms() - t0;
    }
    if (!rc) {
        t0 = tool_now_ms();
        st = host ? gpuws_find_sources_host_reduce(c.ctx[0], img.rows ? img.data : NULL, img.width, img.rows, &a->o,
                                                   &lo, (size_t)w->rank, (size_t)w->size, w->sum, NULL, &cat)
                  : gpuws_find_sources_parts_reduce(rp.part, rp.n, img.width, &a->o, (size_t)w->rank, (size_t)w->size,
                                                    0, w->sum, w->gatherer, NULL, &cat);
        t.find = tool_now_ms() - t0;
        if (!st && !host) cat->ms_upload = t.upload, cat->ms_total += t.upload;
        snprintf(err, sizeof err, "%s: %s", gpuws_status_name(st), gpuws_last_error());
        rc = world_fail(w, st ? 1 : 0, err);
    }
    rank_parts_free(&rp);
    float *pixels = NULL;
    if (!rc && a->out[OUT_LABELS])
        rc = write_rows_ranks(w, a, &img, OUT_LABELS, FITS_I32, cat->labels, &t.out[OUT_LABELS]);
    if (!rc && a->out[OUT_OVERLAY]) {
        t0 = tool_now_ms();
        rc = gather_pixels(w, &img, &cat, &pixels);
        t.download = tool_now_ms() - t0;
    }
    if (!rc && w->rank == 0) {
        char why[300] = "", bunit[72];
        sky_wcs *wcs;
        products p;
        t0 = tool_now_ms();
        products_from_image(&p, &img, &wcs, why, sizeof why, bunit, sizeof bunit);
        sources_print_workshop(cat, a, host ? 1 : 2);
        sources_print_brightest(cat, stdout);
        workshop_title(&p, a, cat->num_sources);
        rc = workshop_products(&p, cat, bunit);
        p.staged = a->out[OUT_LABELS] ? 1u << OUT_LABELS : 0;
        p.image = pixels;
        t.table = tool_now_ms() - t0;
        rc = rc ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : sources_write_outputs(a, &p, &t);
        products_free(&p);
        sky_wcs_destroy(wcs);
        if (!rc && a->timings) sources_times_print(&t, a->image);
        fflush(stdout);
    }
    rc = world_check(w, rc, "the outputs were not written"); /* every rank's exit code is rank 0's */
    gpuws_catalog_free(cat);
    gpuws_contexts_destroy(c.ctx, c.n);
    fits_image_free(&img);
    free(pixels);
    return rc;
}

/* --outdir over the ranks: the images dealt out in turn (image k to rank k mod P), each rank's on its own device as
 * one process runs many (sources_run_many), and rank 0's closing line for all of them. The exit code, the same on
 * every rank: 2 when two images share a name (every rank finds it), else 1 when an image failed on any rank. */
static int run_many_ranks(const world *w, sources_args *a, double start)
{
    struct stat sb;
    char err[PATH_MAX + 300] = "";
    const int found = stat(a->outdir, &sb) == 0, bad = !found || !S_ISDIR(sb.st_mode);
    if (bad) snprintf(err, sizeof err, "--outdir %s: %s", a->outdir, found ? "not a directory" : strerror(errno));
    int rc = world_fail(w, bad, err);
    if (rc) return rc;
    if (w->rank == 0) say_binding(w->rank, w->size);
    sources_images_share share = { w->rank, w->size, rank_contexts, (void *)w, 0, 0 };
    const int code = sources_run_many(a, start, &share);
    uint64_t words[3] = { share.done, share.failed, code != 0 };
    if (w->sum(NULL, words, 3)) return world_fail(w, 1, "a reduction failed");
    if (w->rank == 0 && code != 2)
        printf("%zu image%s: %llu done, %llu failed (%d ranks)\n", a->nimages, a->nimages == 1 ? "" : "s",
               (unsigned long long)words[0], (unsigned long long)words[1], w->size);
    fflush(stdout);
    return code == 2 ? 2 : words[1] || words[2] ? 1 : 0;
}

int sources_run_mpi(int argc, char **argv, double start)
{
    world w;
    char err[512];
    const double t0 = tool_now_ms();
    if (world_load(&w, err, sizeof err)) {
        fprintf(stderr, "gpuws sources: rank %d of %d (MPI launcher): %s\n",
                launcher_value("OMPI_COMM_WORLD_RANK", "PMI_RANK"), sources_mpi_size(), err);
        /* no collective to wait in: the launcher stops the job at the first failing exit, which would cut the other
         * ranks' lines short; a moment's wait lets every rank say why */
        nanosleep(&(struct timespec){ 0, 500000000 }, NULL);
        return 1;
    }
    int rc;
    uint64_t h = 0;
    for (int i = 0; i < argc; i++) h = fnv(h, argv[i], strlen(argv[i]) + 1);
    const int other = differs(&w, h);
    if (other == -2) rc = world_fail(&w, 1, "a reduction failed");
    else if (other > 0) {
        snprintf(err, sizeof err, "rank %d was given another command line than rank 0 (mpirun's MPMD form?)", other);
        rc = world_fail(&w, w.rank == other ? 2 : 0, err);
    } else {
        sources_args a;
        const int r = sources_parse(argc, argv, &a);
        rc = world_check(&w, r == 2 || (!r && refuse_options(&w, &a)) ? 2 : 0, "bad command line");
        if (!rc && !r) rc = a.outdir ? run_many_ranks(&w, &a, start) : run(&w, &a, start, tool_now_ms() - t0);
        output_files_destroy(a.outputs);
        sources_args_free(&a);
    }
    fflush(NULL);
    w.finalize();
    return rc;
}
