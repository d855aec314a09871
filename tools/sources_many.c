/* gpuws sources on many images in one process (--outdir), one context for all: each image's outputs are planned,
 * computed and written all or none; a failing image is reported and the rest processed. */
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

int sources_run_many(sources_args *a)
{
    const size_t n = a->nimages;
    struct stat sb;
    if (stat(a->outdir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fprintf(stderr, "gpuws sources: --outdir %s: %s\n", a->outdir,
                       stat(a->outdir, &sb) != 0 ? strerror(errno) : "not a directory"),
               1;
    /* two images of one stem would write one set of files */
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
    if (clash) return clash;
    gpuws_context *ctx;
    if (tool_context(CMD, &ctx)) return 1;
    size_t failed = 0;
    for (size_t k = 0; k < n; k++) {
        char names[OUT_COUNT][PATH_MAX + 32], st[PATH_MAX], err[4400];
        a->image = a->images[k];
        stem_of(a->image, st, sizeof st);
        for (int o = 0; o < OUT_COUNT; o++) {
            snprintf(names[o], sizeof names[o], "%s/%s%s", a->outdir, st, sources_out_suffixes[o]);
            a->out[o] = a->write[o] ? names[o] : NULL;
        }
        printf("[%zu/%zu] %s\n", k + 1, n, a->image);
        fflush(stdout);
        int code;
        const char *inputs[2] = { a->image, a->filter_file };
        a->outputs = output_files_prepare(inputs, 2, a->out, sources_out_options, OUT_COUNT, &code, err, sizeof err);
        if (!a->outputs) fprintf(stderr, "gpuws sources: %s\n", err);
        const int rc = a->outputs ? sources_run_image(a, ctx) : 1;
        fflush(stdout); /* the file's report before the next progress line, and before a failure on stderr */
        output_files_destroy(a->outputs);
        a->outputs = NULL;
        if (rc) {
            failed++;
            fprintf(stderr, "gpuws sources: [%zu/%zu] %s failed: nothing written for it\n", k + 1, n, a->image);
        }
    }
    gpuws_context_destroy(ctx);
    printf("%zu image%s: %zu done, %zu failed\n", n, n == 1 ? "" : "s", n - failed, failed);
    return failed ? 1 : 0;
}
