/* gpuws sources on many images in one process (--outdir): one context for all, each image read by the reading
 * process while the one before it is on the device, and the extraction a pipeline (image_job): an image's reading,
 * scan, upload and background overlap the extraction of the one before, and its extraction the writing of the one
 * before. Each image's outputs are planned, computed and written all or none; a failing image is reported and the
 * rest processed. */
#include "parallel.h"
#include "sources.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file name of path without its directory and its FITS extension (.fits, .fit, .fts, each maybe .gz or .fz). */
static void stem_of(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    snprintf(out, n, "%s", base ? base + 1 : path);
    static const char *const exts[] = { ".fits.gz", ".fits.fz", ".fit.gz", ".fts.gz", ".fits", ".fit", ".fts", ".fz" };
    const size_t len = strlen(out);
    for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
        const size_t el = strlen(exts[e]);
        if (len > el && !strcasecmp(out + len - el, exts[e])) {
            out[len - el] = 0;
            return;
        }
    }
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* Two images of one stem would write one set of files: 0, or the exit code with the reason on stderr. */
static int stems_clash(const sources_args *a)
{
    const size_t n = a->nimages;
    char **stems = malloc(n * sizeof *stems);
    int clash = !stems;
    for (size_t k = 0; stems && k < n; k++) {
        char st[PATH_MAX];
        stem_of(a->images[k], st, sizeof st);
        if (!(stems[k] = strdup(st))) clash = 1;
    }
    if (stems && !clash) {
        qsort(stems, n, sizeof *stems, cmp_str);
        for (size_t k = 1; k < n && !clash; k++)
            if (!strcmp(stems[k - 1], stems[k])) {
                fprintf(stderr, "gpuws sources: two images are named %s: their outputs would be the same files\n",
                        stems[k]);
                clash = 2;
            }
    } else if (clash) {
        fprintf(stderr, "gpuws sources: out of memory\n");
    }
    for (size_t k = 0; stems && k < n; k++) free(stems[k]);
    free(stems);
    return clash;
}

/* The images' order between the threads that finish them: how many have been extracted, and reported, so far. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    size_t extracted, reported;
} image_order;

/* Until *count reaches k: the images before k have passed that step. */
static void order_wait(image_order *o, const size_t *count, size_t k)
{
    pthread_mutex_lock(&o->lock);
    while (*count < k) pthread_cond_wait(&o->moved, &o->lock);
    pthread_mutex_unlock(&o->lock);
}

/* Image k has passed the step that *count counts. */
static void order_pass(image_order *o, size_t *count, size_t k)
{
    pthread_mutex_lock(&o->lock);
    *count = k + 1;
    pthread_cond_broadcast(&o->moved);
    pthread_mutex_unlock(&o->lock);
}

/* One image of many: its arguments (its names, its outputs, its report), its pixels, its times; and the slot it
 * takes, one of two that the images take in turn: a stream and the buffers kept for images of one size. The main
 * thread reads an image, scans it, puts it on the device and makes its background; a thread of the image's own
 * then extracts it (after the image before: the device and the host steps take one image at a time) and, once the
 * image before is reported, writes its outputs and prints its report, which was kept in a buffer meanwhile. So the
 * next image's reading, scan, upload and background overlap this one's extraction, and the writing overlaps the
 * next extraction; the reports come in the images' order, and every "wrote" line is true. */
typedef struct {
    sources_args a;
    char names[OUT_COUNT][PATH_MAX + 32];
    size_t k, n;
    size_t shown, total; /* its number among all images (from 1; one rank's share holds some), and their count */
    fits_image img;
    sources_times t;
    sources_pending *pending; /* the extraction begun, then its outputs to write; NULL: none (left) */
    int deferred;             /* the image's steps after its background are this thread's (--timings printed here) */
    char *text;               /* the report, when it could be buffered */
    size_t len;
    pthread_t thread;
    int running; /* the image's thread runs */
    int joined;  /* its thread was joined early (before a fork), its exit code not yet counted */
    int rc;
    image_order *order;
    gpuws_stream *stream; /* the slot's */
    sources_reuse keep;   /* the slot's */
} image_job;

/* The report printed and the image's memory released; the failure said; its exit code. */
static int job_end(image_job *j)
{
    if (j->a.report) {
        fclose(j->a.report);
        j->a.report = NULL;
        /* in one write where the system allows: under MPI the ranks' reports share one stdout, which the
         * launcher forwards as each write comes */
        fflush(stdout);
        for (size_t at = 0; j->text && at < j->len;) {
            const ssize_t w = write(STDOUT_FILENO, j->text + at, j->len - at);
            if (w > 0) at += (size_t)w;
            else if (w < 0 && errno == EINTR) continue;
            else break;
        }
    }
    free(j->text);
    j->text = NULL;
    fflush(stdout); /* the image's report before the next progress line, and before a failure on stderr */
    output_files_destroy(j->a.outputs);
    j->a.outputs = NULL;
    fits_image_free(&j->img);
    if (j->t.written >= 0) j->t.release = tool_now_ms() - j->t.written;
    if (!j->rc && j->a.timings && j->deferred) sources_times_print(&j->t, j->a.image);
    if (j->rc)
        fprintf(stderr, "gpuws sources: [%zu/%zu] %s failed: nothing written for it\n", j->shown, j->total, j->a.image);
    return j->rc;
}

/* The image's extraction after the one before it, then its outputs and report after the report before it. */
static void *finish_image(void *p)
{
    image_job *j = p;
    image_order *o = j->order;
    order_wait(o, &o->extracted, j->k);
    if (!j->rc && j->pending && (j->rc = sources_pending_extract(j->pending, &j->a, &j->img, &j->t)))
        j->pending = NULL; /* freed */
    order_pass(o, &o->extracted, j->k);
    order_wait(o, &o->reported, j->k);
    if (!j->rc && j->pending) j->rc = sources_pending_write(j->pending, &j->a, &j->t);
    j->pending = NULL; /* freed */
    job_end(j);
    order_pass(o, &o->reported, j->k);
    return NULL;
}

/* The slot's image finished (its thread joined); its exit code (0 when it has none). */
static int job_join(image_job *j)
{
    if (j->joined) {
        j->joined = 0;
        return j->rc;
    }
    if (!j->running) return 0;
    pthread_join(j->thread, NULL);
    j->running = 0;
    return j->rc;
}

/* Whether an image is too large for two at once on the device: an extraction holds about 40 bytes a pixel there
 * (the image, mask, maps and segmentation, and the extraction's own maps, labels and records), and two slots twice
 * that; past a quarter of the device's memory an image takes the device alone. */
static int takes_the_device(const sources_contexts *c, const fits_image *img)
{
    gpuws_device_info d;
    if (gpuws_context_get_device_info(c->ctx[0], &d)) return 1;
    return 2.0 * 40.0 * (double)img->width * (double)img->height > 0.25 * (double)d.global_mem_bytes;
}

/* Image k: its outputs planned, its read (started before) finished, the next image's read started, then its
 * sources found (the extraction begun here and finished on the image's thread). serial: the image waits for the one
 * before it to be extracted (no stream of its own). other: the other slot. */
static void one_of_many(const sources_args *a, size_t k, fits_reading *reading, fits_reading *next,
                        const fits_read_request *req, const sources_contexts *c, image_job *j, image_job *other,
                        int serial, const sources_images_share *share, size_t total)
{
    const size_t n = a->nimages;
    char st[PATH_MAX], err[4400];
    j->a = *a;
    j->a.image = a->images[k];
    j->k = k, j->n = n, j->rc = 1, j->pending = NULL, j->deferred = 0, j->text = NULL, j->len = 0;
    j->shown = (share ? k * (size_t)share->size + (size_t)share->rank : k) + 1, j->total = total;
    memset(&j->img, 0, sizeof j->img);
    stem_of(j->a.image, st, sizeof st);
    for (int o = 0; o < OUT_COUNT; o++) {
        snprintf(j->names[o], sizeof j->names[o], "%s/%s%s", a->outdir, st, sources_out_suffixes[o]);
        j->a.out[o] = a->write[o] ? j->names[o] : NULL;
    }
    /* the report kept until the images before have printed theirs (on stdout as it goes where it cannot be kept);
     * the workshop's pipeline writes its outputs as it goes: it waits for the images before it */
    const int extract = a->method == METHOD_EXTRACT;
    j->a.report = open_memstream(&j->text, &j->len);
    if (!j->a.report || !extract) order_wait(j->order, &j->order->reported, k);
    fprintf(sources_report(&j->a), "[%zu/%zu] %s\n", j->shown, total, j->a.image);
    fflush(sources_report(&j->a));
    const char *inputs[2] = { j->a.image, a->filter_file };
    int code;
    j->a.outputs = output_files_prepare(inputs, 2, j->a.out, sources_out_options, OUT_COUNT, &code, err, sizeof err);
    if (!j->a.outputs) {
        fprintf(stderr, "gpuws sources: %s\n", err);
        fits_read_abandon(reading);
    } else {
        const double t0 = tool_now_ms();
        j->rc = fits_read_finish(reading, &j->img, err, sizeof err) ? 1 : 0;
        j->t.read = tool_now_ms() - t0, j->t.read_ahead = k > 0;
        if (j->rc) fprintf(stderr, "gpuws sources: %s\n", err);
    }
    if (k + 1 < n) {
        /* a new reading process (the kept one crashed on a corrupt file) is forked once the image before has
         * written its outputs: its thread allocates (fits_read_forks) */
        if (fits_read_forks() && other->running) {
            pthread_join(other->thread, NULL);
            other->running = 0, other->joined = 1;
        }
        fits_read_start(next, a->images[k + 1], 0, req);
    }
    if (serial) order_wait(j->order, &j->order->extracted, k);
    else if (!j->rc && takes_the_device(c, &j->img)) { /* it waits for the image before, whose buffers go */
        order_wait(j->order, &j->order->reported, k);
        sources_reuse_free(&other->keep);
    }
    if (!j->rc)
        j->rc = sources_run_read(&j->a, &j->img, c, j->stream, &j->t, &j->keep,
                                 j->a.report && extract ? &j->pending : NULL);
    j->deferred = j->pending != NULL;
    if (pthread_create(&j->thread, NULL, finish_image, j) == 0) j->running = 1;
    else finish_image(j); /* here, then */
}

/* The images of one rank's share in *mine (malloc'd; the caller frees it), their count the return value. */
static size_t share_images(const sources_args *a, const sources_images_share *s, const char ***mine)
{
    const size_t m = a->nimages > (size_t)s->rank ? (a->nimages - (size_t)s->rank - 1) / (size_t)s->size + 1 : 0;
    *mine = malloc((m ? m : 1) * sizeof **mine);
    for (size_t k = 0; *mine && k < m; k++) (*mine)[k] = a->images[k * (size_t)s->size + (size_t)s->rank];
    return m;
}

int sources_run_many(sources_args *whole, double start, sources_images_share *share)
{
    const size_t total = whole->nimages;
    struct stat sb;
    if (stat(whole->outdir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fprintf(stderr, "gpuws sources: --outdir %s: %s\n", whole->outdir,
                       stat(whole->outdir, &sb) != 0 ? strerror(errno) : "not a directory"),
               1;
    const int clash = stems_clash(whole);
    if (clash) return clash;
    sources_args mine = *whole, *a = &mine; /* the share's images, the others as the command line's */
    const char **list = NULL;
    if (share) {
        share->done = share->failed = 0;
        mine.nimages = share_images(whole, share, &list);
        if (!list) return fprintf(stderr, "gpuws sources: out of memory\n"), 1;
        mine.images = list, mine.image = mine.nimages ? list[0] : NULL;
    }
    const size_t n = a->nimages;
    if (!n) return free(list), 0;
    const fits_read_request req = sources_read_request(a);
    fits_reading reading[2];
    fits_read_start(&reading[0], a->images[0], 0, &req);
    sources_device dev;
    if (share) sources_device_begin_with(&dev, share->make, share->user);
    else sources_device_begin(&dev);
    sources_times t;
    sources_times_init(&t, start);
    sources_contexts c;
    if (sources_device_end(&dev, &c, &t)) {
        fits_read_abandon(&reading[0]);
        if (share) share->failed = n;
        return free(list), 1;
    }
    size_t failed = 0;
    image_order order = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    image_job *jobs = calloc(2, sizeof *jobs); /* the two slots */
    if (!jobs) {
        fits_read_abandon(&reading[0]);
        gpuws_contexts_destroy(c.ctx, c.n);
        if (share) share->failed = n;
        return free(list), fprintf(stderr, "gpuws sources: out of memory\n"), 1;
    }
    int serial = 0; /* without a stream a slot, the images' device work takes the default stream in turn */
    for (int s = 0; s < 2; s++) {
        jobs[s].order = &order;
        if (gpuws_stream_create(c.ctx[0], &jobs[s].stream)) serial = 1;
    }
    jobs[0].t = t;
    for (size_t k = 0; k < n; k++) {
        image_job *j = &jobs[k % 2];
        failed += job_join(j) != 0;                      /* the slot's image before, finished */
        if (k) sources_times_init(&j->t, tool_now_ms()); /* the first image's times include the device's start */
        one_of_many(a, k, &reading[k % 2], &reading[(k + 1) % 2], &req, &c, j, &jobs[(k + 1) % 2], serial, share,
                    total);
        if (!j->running) failed += j->rc != 0;
    }
    for (int s = 0; s < 2; s++) {
        failed += job_join(&jobs[s]) != 0;
        sources_reuse_free(&jobs[s].keep);
        gpuws_stream_destroy(jobs[s].stream);
    }
    free(jobs);
    free(list);
    gpuws_contexts_destroy(c.ctx, c.n);
    if (share) share->done = n - failed, share->failed = failed;
    else printf("%zu image%s: %zu done, %zu failed\n", n, n == 1 ? "" : "s", n - failed, failed);
    return failed ? 1 : 0;
}
