/* gpuws sources on many images in one process (--outdir): one context for all, each image read by the reading
 * process while the one before it is on the device, and an extraction's outputs written on a thread while the next
 * image is worked on, so that the reading and the writing are hidden behind the device's and the host steps' work.
 * Each image's outputs are planned, computed and written all or none; a failing image is reported and the rest
 * processed. */
#include "parallel.h"
#include "sources.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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

/* One image of many: its arguments (its names, its outputs, its report), its pixels, its times. An extraction's
 * outputs are written on a thread of their own while the next image is read, scanned and extracted; the image's
 * report (stdout) is kept in a buffer and printed after its outputs are written, so the reports come in the images'
 * order whatever overlaps. */
typedef struct {
    sources_args a;
    char names[OUT_COUNT][PATH_MAX + 32];
    size_t k, n;
    fits_image img;
    sources_times t;
    sources_pending *pending; /* the outputs to write; NULL: none */
    char *text;               /* the report, when it could be buffered */
    size_t len;
    pthread_t thread;
    int running; /* the writing thread runs */
    int rc;
} image_job;

/* The report printed and the image's memory released; the failure said; its exit code. */
static int job_end(image_job *j)
{
    if (j->a.report) {
        fclose(j->a.report);
        j->a.report = NULL;
        if (j->text) fwrite(j->text, 1, j->len, stdout);
    }
    free(j->text);
    j->text = NULL;
    fflush(stdout); /* the image's report before the next progress line, and before a failure on stderr */
    output_files_destroy(j->a.outputs);
    j->a.outputs = NULL;
    fits_image_free(&j->img);
    if (j->t.written >= 0) j->t.release = tool_now_ms() - j->t.written;
    if (!j->rc && j->a.timings && j->pending) sources_times_print(&j->t, j->a.image);
    j->pending = NULL;
    if (j->rc)
        fprintf(stderr, "gpuws sources: [%zu/%zu] %s failed: nothing written for it\n", j->k + 1, j->n, j->a.image);
    return j->rc;
}

static void *write_outputs(void *p)
{
    image_job *j = p;
    j->rc = sources_pending_write(j->pending, &j->a, &j->t);
    job_end(j);
    return NULL;
}

/* The job's outputs written (on its thread, if it has one); its exit code (0 when there was no job). */
static int job_join(image_job *j)
{
    if (!j->running) return 0;
    pthread_join(j->thread, NULL);
    j->running = 0;
    return j->rc;
}

/* Image k: its outputs planned, its read (started before) finished, the next image's read started, then its
 * sources found and reported; its outputs then written on a thread (the extraction) or here. prev: the image
 * before's job, joined before this one's report can be printed. The failed images, prev's included. */
static size_t one_of_many(const sources_args *a, size_t k, fits_reading *reading, fits_reading *next,
                          const fits_read_request *req, const sources_contexts *c, image_job *j, image_job *prev,
                          sources_reuse *keep)
{
    const size_t n = a->nimages;
    char st[PATH_MAX], err[4400];
    j->a = *a;
    j->a.image = a->images[k];
    j->k = k, j->n = n, j->rc = 1, j->pending = NULL, j->text = NULL, j->len = 0;
    memset(&j->img, 0, sizeof j->img);
    stem_of(j->a.image, st, sizeof st);
    for (int o = 0; o < OUT_COUNT; o++) {
        snprintf(j->names[o], sizeof j->names[o], "%s/%s%s", a->outdir, st, sources_out_suffixes[o]);
        j->a.out[o] = a->write[o] ? j->names[o] : NULL;
    }
    /* the workshop's pipeline prints on stdout itself, and writes here: its report goes straight out */
    j->a.report = a->method == METHOD_EXTRACT ? open_memstream(&j->text, &j->len) : NULL;
    size_t failed = 0;
    if (!j->a.report) failed += job_join(prev) != 0, fflush(stdout);
    fprintf(sources_report(&j->a), "[%zu/%zu] %s\n", k + 1, n, j->a.image);
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
    if (k + 1 < n) fits_read_start(next, a->images[k + 1], 0, req);
    if (!j->rc) j->rc = sources_run_read(&j->a, &j->img, c, &j->t, keep, j->a.report ? &j->pending : NULL);
    failed += job_join(prev) != 0;
    if (j->pending && pthread_create(&j->thread, NULL, write_outputs, j) == 0) {
        j->running = 1;
        return failed;
    }
    if (j->pending) j->rc = sources_pending_write(j->pending, &j->a, &j->t); /* no thread: here */
    return failed + (job_end(j) != 0);
}

int sources_run_many(sources_args *a, double start)
{
    const size_t n = a->nimages;
    struct stat sb;
    if (stat(a->outdir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fprintf(stderr, "gpuws sources: --outdir %s: %s\n", a->outdir,
                       stat(a->outdir, &sb) != 0 ? strerror(errno) : "not a directory"),
               1;
    const int clash = stems_clash(a);
    if (clash) return clash;
    const fits_read_request req = sources_read_request(a);
    fits_reading reading[2];
    fits_read_start(&reading[0], a->images[0], 0, &req);
    sources_device dev;
    sources_device_begin(&dev, a);
    sources_times t;
    sources_times_init(&t, start);
    sources_contexts c;
    if (sources_device_end(&dev, &c, &t)) {
        fits_read_abandon(&reading[0]);
        return 1;
    }
    size_t failed = 0;
    sources_reuse keep;
    memset(&keep, 0, sizeof keep);
    image_job *jobs = calloc(2, sizeof *jobs); /* the image's and the one before's (its outputs maybe being written) */
    if (!jobs) {
        fits_read_abandon(&reading[0]);
        gpuws_contexts_destroy(c.ctx, c.n);
        return fprintf(stderr, "gpuws sources: out of memory\n"), 1;
    }
    jobs[0].t = t;
    for (size_t k = 0; k < n; k++) {
        image_job *j = &jobs[k % 2];
        if (k) sources_times_init(&j->t, tool_now_ms()); /* the first image's times include the device's start */
        failed += one_of_many(a, k, &reading[k % 2], &reading[(k + 1) % 2], &req, &c, j, &jobs[(k + 1) % 2], &keep);
    }
    failed += job_join(&jobs[(n + 1) % 2]) != 0;
    free(jobs);
    sources_reuse_free(&keep);
    gpuws_contexts_destroy(c.ctx, c.n);
    printf("%zu image%s: %zu done, %zu failed\n", n, n == 1 ? "" : "s", n - failed, failed);
    return failed ? 1 : 0;
}
