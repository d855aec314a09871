/* gpuws label: scipy.ndimage.label of a FITS image's foreground, through gpuws_label_host: in-core when the image
 * fits the device, else in row bands, over the devices a GPUWS_DEVICE list names. */
#include "commands.h"
#include "fits_io.h"
#include "gpuws/algorithms.h"
#include "output_files.h"
#include "parallel.h"
#include "sky_wcs.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(
        f, "usage: gpuws label IN.fits -o LABELS.fits [--threshold T] [--connectivity 4|8] [--max-device-memory SIZE]\n"
           "                   [--hdu N] [--plane K]\n"
           "  Labels the connected components of the foreground of the first 2-D image of IN.fits exactly as\n"
           "  scipy.ndimage.label does (components 1..N in raster order of their first pixel, 0 for the background)\n"
           "  and writes them to LABELS.fits as an int32 image of the same size, with the input's celestial WCS when\n"
           "  gpuws has wcslib. The foreground is the pixels != 0 (so a mask works as is), or with --threshold T the\n"
           "  pixels > T; a NaN pixel (a BLANK one of an integer image too) is never foreground. Pixels are compared\n"
           "  as the file holds them (as double for BITPIX 32, 64 and -64, and for scaled integers).\n"
           "  --connectivity 4 (the default, SciPy's cross) or 8 (structure=np.ones((3, 3))).\n"
           "  The image goes through the device in bands of rows, labelled twice (the labels identical to one in-core\n"
           "  labelling), when its mask and labels do not fit the device's free memory, or --max-device-memory SIZE\n"
           "  (bytes, or with K, M, G or T: 512M; 0 = the free memory), with a line per band on stderr once a run\n"
           "  takes more than a second.\n"
           "  --hdu N reads HDU N (1 = primary; default: the first HDU with a 2-D image); --plane K the plane K\n"
           "  (0-based, the axes after the second flattened) of a cube. T is a decimal number.\n"
           "  LABELS.fits is written completely or not at all: a regular file (or a symlink's target) is replaced,\n"
           "  keeping its permissions; a device or FIFO is written into; a directory, or IN.fits, is refused before\n"
           "  any work. A summary line on stderr gives the number of components, the size, the devices and bands.\n"
           "  The backend and device come from GPUWS_BACKEND / GPUWS_DEVICE / GPUWS_OPENCL_PLATFORM; a GPUWS_DEVICE\n"
           "  list (0,1,...) or all shares the bands between several devices.\n"
           "  Exit status: 0 done, 1 error (nothing written), 2 bad usage (also: LABELS.fits is IN.fits).\n");
}

typedef struct {
    const char *in, *out;
    const char *threshold_text; /* --threshold as given; NULL: the foreground is the pixels != 0 */
    double threshold;           /* foreground = pixels > threshold */
    int connectivity;           /* 4 or 8 */
    int hdu;                    /* --hdu; 0 = the first HDU with a 2-D image */
    long long plane;            /* --plane; -1 = none asked for */
    uint64_t max_device_bytes;  /* --max-device-memory; 0 = the device's free memory */
    output_files *outputs;      /* LABELS.fits, planned before any work */
} args;

/* ---- the mask ------------------------------------------------------------------------------------------------ */

typedef struct {
    const fits_image *img;
    const args *a;
    uint8_t *mask;
    size_t fg[64]; /* foreground pixels of each part */
} mask_job;

/* One range of pixels to mask bytes (1 = foreground); NaN compares false either way. */
static void mask_range(void *user, size_t part, size_t lo, size_t hi)
{
    mask_job *j = user;
    const bool above = j->a->threshold_text != NULL;
    const double t = j->a->threshold;
    size_t n = 0;
    uint8_t *m = j->mask;
    if (j->img->is_double) {
        const double *p = j->img->data;
        if (above)
            for (size_t i = lo; i < hi; i++) n += m[i] = p[i] > t;
        else
            for (size_t i = lo; i < hi; i++) n += m[i] = p[i] != 0 && !isnan(p[i]);
    } else {
        const float *p = j->img->data;
        if (above)
            for (size_t i = lo; i < hi; i++) n += m[i] = (double)p[i] > t;
        else
            for (size_t i = lo; i < hi; i++) n += m[i] = p[i] != 0 && !isnan(p[i]);
    }
    j->fg[part] = n;
}

/* The foreground of img as a uint8 mask (malloc'd; NULL when out of memory); its pixel count in *fg. */
static uint8_t *make_mask(const fits_image *img, const args *a, size_t *fg)
{
    const size_t n = img->width * img->height;
    mask_job j = { img, a, malloc(n), { 0 } };
    if (!j.mask) return NULL;
    const size_t parts = tool_parts(n, (size_t)1 << 20);
    tool_parallel(n, parts, mask_range, &j);
    *fg = 0;
    for (size_t k = 0; k < parts; k++) *fg += j.fg[k];
    return j.mask;
}

/* ---- labelling ----------------------------------------------------------------------------------------------- */

/* "NAME" of one device, "N devices (NAME, NAME, ...)" of several. */
static void device_names(gpuws_context *const *ctxs, size_t nctx, char *buf, size_t n)
{
    size_t len = 0;
    if (nctx > 1) len = (size_t)snprintf(buf, n, "%zu devices (", nctx);
    for (size_t k = 0; k < nctx && len < n; k++) {
        gpuws_device_info d;
        gpuws_context_get_device_info(ctxs[k], &d);
        len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? ", " : "", d.name);
    }
    if (nctx > 1 && len < n) snprintf(buf + len, n - len, ")");
}

/* Writes LABELS.fits into its staging file and puts it in place (tools/output_files.h). */
static int write_labels(const args *a, const int32_t *labels, size_t w, size_t h, const char *cards, int ncards)
{
    char err[4400];
    const char *path = output_files_stage(a->outputs, 0, err, sizeof err);
    if (path && w * h >= ((size_t)1 << 24)) fprintf(stderr, "gpuws label: writing %s...\n", a->out); /* seconds */
    if (!path || fits_write_image_cards(path, FITS_I32, labels, w, h, cards, ncards, err, sizeof err) ||
        output_files_commit(a->outputs, err, sizeof err)) {
        output_files_reword(a->outputs, 0, err, sizeof err);
        fprintf(stderr, "gpuws label: %s\n", err);
        return 1;
    }
    return 0;
}

static int label_file(const args *a)
{
    char err[512], why[300], devices[1024];
    fits_read_request req = FITS_READ_REQUEST_INIT;
    req.hdu = a->hdu, req.plane = a->plane, req.want_header = 1;
    fits_reading reading;
    fits_image img;
    memset(&img, 0, sizeof img);
    gpuws_context *ctxs[64] = { NULL };
    size_t nctx = 0;
    uint8_t *mask = NULL;
    int32_t *labels = NULL;
    char *cards = NULL;
    int ncards = 0, rc = 1;
    /* the file is read in a child process while the devices start */
    fits_read_start(&reading, a->in, -2, &req);
    gpuws_status st = gpuws_contexts_create(NULL, sizeof ctxs / sizeof *ctxs, ctxs, &nctx);
    if (st) {
        fits_read_abandon(&reading);
        return tool_fail("label", st);
    }
    if (fits_read_finish(&reading, &img, err, sizeof err)) {
        fprintf(stderr, "gpuws label: %s\n", err);
        goto done;
    }
    const size_t w = img.width, h = img.height;
    sky_wcs *wcs = sky_wcs_create(&img, why, sizeof why);
    if (wcs && sky_wcs_header_2d(wcs, &cards, &ncards)) cards = NULL, ncards = 0;
    sky_wcs_destroy(wcs);

    gpuws_label_host_options o = GPUWS_LABEL_HOST_OPTIONS_INIT;
    o.max_device_bytes = a->max_device_bytes;
    o.more_contexts = ctxs + 1, o.num_more_contexts = nctx - 1;
    tool_band_progress progress = tool_band_progress_start("gpuws label");
    o.progress = tool_label_band, o.progress_user = &progress;
    size_t rows = 0, bands = 0, fg = 0, num = 0;
    if ((st = gpuws_label_host_bands(ctxs[0], w, h, &o, &rows, &bands))) { /* a budget below one band: no work */
        rc = tool_fail("label", st);
        goto done;
    }
    device_names(ctxs, nctx, devices, sizeof devices);
    fprintf(stderr, "gpuws label: %zu x %zu image, foreground: pixels %s %s, connectivity %d, on %s\n", h, w,
            a->threshold_text ? ">" : "!=", a->threshold_text ? a->threshold_text : "0", a->connectivity, devices);
    if (bands > 1 && nctx > 1)
        fprintf(stderr, "gpuws label: streaming through %zu devices in %zu bands of up to %zu of %zu rows\n", nctx,
                bands, rows, h);
    else if (bands > 1)
        fprintf(stderr, "gpuws label: streaming through the device in %zu bands of up to %zu of %zu rows\n", bands,
                rows, h);
    mask = make_mask(&img, a, &fg);
    fits_image_free(&img); /* the pixels are the mask now: their memory goes to the labels */
    labels = mask ? malloc(w * h * sizeof *labels) : NULL;
    if (!labels) {
        fprintf(stderr, "gpuws label: out of host memory for the mask and the labels of %zu x %zu pixels (%zu bytes)\n",
                h, w, w * h * (1 + sizeof *labels));
        goto done;
    }
    const double t0 = tool_now_ms();
    if ((st = gpuws_label_host(ctxs[0], w, h, mask, 0, a->connectivity, &o, labels, &num))) {
        rc = tool_fail("label", st);
        goto done;
    }
    const double ms = tool_now_ms() - t0;
    free(mask), mask = NULL;
    if ((rc = write_labels(a, labels, w, h, cards, ncards))) goto done;
    fprintf(stderr, "gpuws label: %zu component%s of %zu foreground pixels in %zu x %zu, %zu band%s on %s, %.3f s\n",
            num, num == 1 ? "" : "s", fg, h, w, bands, bands == 1 ? "" : "s", devices, ms / 1e3);
done:
    free(mask);
    free(labels);
    free(cards);
    fits_image_free(&img);
    gpuws_contexts_destroy(ctxs, nctx);
    return rc;
}

/* ---- options ------------------------------------------------------------------------------------------------ */

/* A usage error: the usage after the message tool_*() printed; exit code 2. */
static int bad_value(void)
{
    usage(stderr);
    return 2;
}

static int cmd_label(int argc, char **argv)
{
    args a = { NULL, NULL, NULL, 0.0, 4, 0, -1, 0, NULL };
    tool_args t = TOOL_ARGS_INIT("label");
    static const char *const connectivities[] = { "4", "8", NULL };
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *name = !strcmp(o, "-o") ? "--output" : o;
        if (o[0] == '-' && o[1] && tool_once(&t, name)) return bad_value();
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            if (tool_name(&t, o, v, "a file name")) return bad_value();
            a.out = v, i++;
        } else if (!strcmp(o, "--threshold")) {
            if (tool_real(&t, o, v, false, &a.threshold)) return bad_value();
            a.threshold_text = v, i++;
        } else if (!strcmp(o, "--connectivity")) {
            const int c = tool_choice(&t, o, v, connectivities);
            if (c < 0) return bad_value();
            a.connectivity = c ? 8 : 4, i++;
        } else if (!strcmp(o, "--max-device-memory")) {
            if (tool_bytes(&t, o, v, &a.max_device_bytes)) return bad_value();
            i++;
        } else if (!strcmp(o, "--hdu")) {
            uint64_t u;
            if (tool_count(&t, o, v, 1, 100000, "an HDU number", &u)) return bad_value();
            a.hdu = (int)u, i++;
        } else if (!strcmp(o, "--plane")) {
            uint64_t u;
            if (tool_count(&t, o, v, 0, (uint64_t)1 << 62, "a plane index", &u)) return bad_value();
            a.plane = (long long)u, i++;
        } else if (o[0] == '-' && o[1]) {
            return tool_usage_error(&t, "unknown option '%s'", o), bad_value();
        } else if (a.in) {
            return tool_usage_error(&t, "unexpected argument '%s'", o), bad_value();
        } else if (!*o) {
            return tool_usage_error(&t, "an empty file name ('') where IN.fits was expected"), bad_value();
        } else {
            a.in = o;
        }
    }
    if (!a.in || !a.out) return tool_usage_error(&t, "needs IN.fits and -o LABELS.fits"), bad_value();
    /* LABELS.fits first: a destination that cannot be written, or that is the input, fails before any work */
    const char *opt = "-o";
    char err[4400];
    int rc;
    if (!(a.outputs = output_files_prepare(&a.in, 1, &a.out, &opt, 1, &rc, err, sizeof err)))
        return fprintf(stderr, "gpuws label: %s\n", err), rc;
    rc = label_file(&a);
    output_files_destroy(a.outputs);
    return rc;
}

GPUWS_COMMAND("label", "connected components of a FITS image (scipy.ndimage.label), out-of-core", cmd_label)
