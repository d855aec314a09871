/* gpuws sources on many images in one process (--outdir): one context for all, and each image read by its child
 * process while the one before it is on the device, so that the reading is hidden behind the device's work. Each
 * image's outputs are planned, computed and written all or none; a failing image is reported and the rest
 * processed. */
#include "parallel.h"
#include "sources.h"

#include <errno.h>
#include <limits.h>
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

/* Image k: its outputs planned, its read (started before) finished, the next image's read started, then its
 * sources found and written. 0, or 1 with the reason on stderr. */
static int one_of_many(sources_args *a, size_t k, fits_reading *reading, fits_reading *next,
                       const fits_read_request *req, const sources_contexts *c, sources_times *t, sources_reuse *keep)
{
    const size_t n = a->nimages;
    char names[OUT_COUNT][PATH_MAX + 32], st[PATH_MAX], err[4400];
    a->image = a->images[k];
    stem_of(a->image, st, sizeof st);
    for (int o = 0; o < OUT_COUNT; o++) {
        snprintf(names[o], sizeof names[o], "%s/%s%s", a->outdir, st, sources_out_suffixes[o]);
        a->out[o] = a->write[o] ? names[o] : NULL;
    }
    printf("[%zu/%zu] %s\n", k + 1, n, a->image);
    fflush(stdout);
    int code, rc = 1;
    const char *inputs[2] = { a->image, a->filter_file };
    a->outputs = output_files_prepare(inputs, 2, a->out, sources_out_options, OUT_COUNT, &code, err, sizeof err);
    fits_image img;
    memset(&img, 0, sizeof img);
    if (!a->outputs) {
        fprintf(stderr, "gpuws sources: %s\n", err);
        fits_read_abandon(reading);
    } else {
        const double t0 = tool_now_ms();
        rc = fits_read_finish(reading, &img, err, sizeof err) ? 1 : 0;
        t->read = tool_now_ms() - t0, t->read_ahead = k > 0;
        if (rc) fprintf(stderr, "gpuws sources: %s\n", err);
    }
    if (k + 1 < n) fits_read_start(next, a->images[k + 1], 0, req);
    if (!rc) rc = sources_run_read(a, &img, c, t, keep);
    fits_image_free(&img);
    fflush(stdout); /* the image's report before the next progress line, and before a failure on stderr */
    output_files_destroy(a->outputs);
    a->outputs = NULL;
    return rc;
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
    for (size_t k = 0; k < n; k++) {
        if (k) sources_times_init(&t, tool_now_ms()); /* the first image's times include the device's start */
        if (one_of_many(a, k, &reading[k % 2], &reading[(k + 1) % 2], &req, &c, &t, &keep)) {
            failed++;
            fprintf(stderr, "gpuws sources: [%zu/%zu] %s failed: nothing written for it\n", k + 1, n, a->image);
        }
    }
    sources_reuse_free(&keep);
    gpuws_contexts_destroy(c.ctx, c.n);
    printf("%zu image%s: %zu done, %zu failed\n", n, n == 1 ? "" : "s", n - failed, failed);
    return failed ? 1 : 0;
}
