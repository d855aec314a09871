/* gpuws sources: the workshop's source finding (κ-σ clip → threshold → label → measure) on a FITS image, or on a
 * synthetic sky made on the device (--demo). The outputs are planned before any work and written all or none
 * (tools/output_files.h). */
#include "catalog_csv.h"
#include "commands.h"
#include "fits_io.h"
#include "output_files.h"
#include "png_overlay.h"
#include "sky_wcs.h"
#include "sources/sources_internal.h"
#include "sources_phot.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "sources"

enum { METHOD_EXTRACT, METHOD_WORKSHOP };
static const char *const method_names[] = { "extract", "workshop", NULL };

/* The outputs, in this order everywhere (output_files indices). */
enum { OUT_CATALOG, OUT_FITS_CATALOG, OUT_REGIONS, OUT_BACKGROUND, OUT_RMS, OUT_LABELS, OUT_OVERLAY, OUT_COUNT };
static const char *const out_options[OUT_COUNT] = { "--catalog", "--fits-catalog", "--regions", "--background",
                                                    "--rms",     "--labels",       "--overlay" };

/* The extraction's parameters under SExtractor's names (the library's own options exist only with gpuws_extract). */
typedef struct {
    int back_w, back_h, back_fw, back_fh;
    double detect_thresh;
    int minarea;
    int filter_none; /* --filter none */
    float *filter;   /* NULL: SEP's default 3x3 kernel; else filter_w x filter_h, malloc'd */
    int filter_w, filter_h;
    int deblend_nthresh;
    double deblend_mincont;
    int clean;
    double clean_param;
    phot_apertures phot; /* --phot-apertures */
} extract_args;

typedef struct {
    const char *image, *out[OUT_COUNT], *filter_file;
    const char **images; /* every IMAGE operand, @list files read (malloc'd, as the names read from lists) */
    size_t nimages;
    char **listed; /* names read from @lists (malloc'd each) */
    size_t nlisted;
    const char *outdir; /* many files: outputs DIR/<stem>.<suffix> for the outputs in write */
    int write[OUT_COUNT];
    int back_size_given;
    int method;
    int demo;
    int hdu;         /* 0: the first HDU with an image */
    long long plane; /* -1: none chosen */
    size_t size, nsources;
    int have_nsources;
    uint64_t seed;
    int connectivity;
    gpuws_sources_options o;
    gpuws_sigma_clip_options clip; /* o.clip points here */
    extract_args x;
    output_files *outputs; /* planned before any work */
} args;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: gpuws sources IMAGE.fits [--method extract|workshop] [options]\n"
        "       gpuws sources IMAGE.fits... | @LIST --outdir DIR [--write OUTPUTS] [options]\n"
        "       gpuws sources --demo [--size N] [--seed S] [--sources N] [workshop options]\n"
        "  --method extract (the default): SExtractor's way, as SEP does it: a mesh background and its rms,\n"
        "  detection above a threshold in units of the rms after a matched filter, deblending, cleaning, and for\n"
        "  every object its moments, ellipse and flux (docs/algorithms/extract.md). --method workshop: the\n"
        "  workshop's way, bit-exact with SciPy: k-sigma clipping of all pixels, a threshold, connected components,\n"
        "  then each component's pixel count, flux (sum), centre of mass and peak (docs/algorithms/sources.md).\n"
        "input:\n"
        "  --hdu N                the HDU to read (1 = primary; default: the first HDU with an image)\n"
        "  --plane K              the plane K (0-based, the axes after the second flattened) of a 3-D or 4-D image;\n"
        "                         axes of length 1 (a radio image's FREQ and STOKES) need none\n"
        "extract options (SExtractor's names):\n"
        "  --back-size N|W,H      background mesh in pixels (default 64)\n"
        "  --back-filtersize N|W,H  median filter of the mesh grid, in meshes (default 3)\n"
        "  --detect-thresh T      detect pixels above T x the background rms (sigmas; default 1.5)\n"
        "  --minarea N            at least N pixels per object (default 5)\n"
        "  --filter default|none|gauss:FWHM|FILE  detection filter: SEP's 3x3 kernel, none, a Gaussian of that\n"
        "                         FWHM in pixels, or a SExtractor .conv file (default: default)\n"
        "  --deblend-nthresh N    deblending levels (default 32)\n"
        "  --deblend-mincont C    minimum contrast of a deblended branch, 0 to 1 (default 0.005; 1: no deblending)\n"
        "  --clean-param P        cleaning of spurious detections near bright ones (default 1.0); --no-clean: none\n"
        "  --connectivity 4|8     pixel neighbours: 8 with corners (extract default), 4 edges only (workshop default)\n"
        "  --phot-apertures D[,D...]  SExtractor's PHOT_APERTURES: per object and diameter D (pixels, at most 32),\n"
        "                         the sum in that circle on the image less its background, its error and flags\n"
        "                         (columns flux_aper_k, fluxerr_aper_k, flag_aper_k)\n"
        "workshop options:\n"
        "  --kappa K              clipping at K clipped stds from the median (default 3)\n"
        "  --threshold S          detect pixels above S x the clipped std (default 5; no median added)\n"
        "  --threshold-abs T      detect pixels above the value T instead (as SExtractor's ABSOLUTE)\n"
        "  --demo                 no IMAGE: a synthetic sky made on the device (noise sigma 1e-3, Gaussian beams\n"
        "                         of sigma 1.7 px, peaks log-uniform in 5e-3..1e-1), scored against what was injected\n"
        "  --size N               demo image N x N, N from 16 to 46340 (default 2048); --seed S from 0 to\n"
        "                         2^64 - 1 (default 1); --sources N from 0 to 1000000 (default 300 per 2048^2);\n"
        "                         these three apply to --demo only\n"
        "outputs (each written all or none, with the others):\n"
        "  --catalog OUT.csv      extract: SEP's columns in SEP's order (id = the object's label; units in the header\n"
        "                         row); workshop: id,x,y,flux,npix,peak sorted by flux; x = column, y = row, 0-based;\n"
        "                         with a WCS in the header (wcslib), ra,dec in degrees after them (glon,glat when\n"
        "                         it is Galactic); a missing or broken WCS is a warning and pixel coordinates only\n"
        "  --fits-catalog OUT.fits  the same as a FITS binary table, with units\n"
        "  --regions OUT.reg      DS9 regions: ellipses at 3 a x 3 b (workshop: circles), on the sky with a WCS, else\n"
        "                         in DS9's 1-based image pixels (the catalogue's x, y plus 1)\n"
        "  --background OUT.fits  extract: the background map; --rms OUT.fits: its rms map (both with the WCS)\n"
        "  --labels OUT.fits      the label image (int32; 0 = none, object k is k), with the input's WCS\n"
        "  --overlay OUT.png      log-scaled image with each object's ellipse, the faint ones thin, and a legend%s\n"
        "many images: IMAGE... or @LIST (a file of names, one a line) with --outdir DIR: the outputs of each are\n"
        "  DIR/<name>.csv, .cat.fits, .reg, .back.fits, .rms.fits, .labels.fits, .png, chosen with\n"
        "  --write catalog,fits-catalog,regions,background,rms,labels,overlay (default catalog); one context for\n"
        "  all, a line per image; a failing image is reported, nothing written for it, the others processed.\n"
        "Numbers are decimal (whole numbers also 1e6 or 10^6), without spaces; each option may be given once.\n"
        "The outputs are written all or none: a regular file (or a symlink's target) is replaced, keeping its\n"
        "permissions; a device or FIFO is written into; a directory, the image, or one file named twice is\n"
        "refused before any work. The device comes from GPUWS_BACKEND / GPUWS_DEVICE (gpuws info lists them).\n"
        "Exit status: 0 done, 1 error (nothing written; many images: one failed at least), 2 bad usage (also: an\n"
        "output is the image or another).\n",
        png_overlay_available() ? "" : " (unavailable: built without libpng)");
}

/* "N" or "W,H", each a whole number in [lo, hi]. */
static int parse_pair(tool_args *t, const char *o, const char *v, uint64_t lo, uint64_t hi, int *w, int *h)
{
    char a[64], b[64];
    const char *comma = v ? strchr(v, ',') : NULL;
    uint64_t x, y;
    if (v && comma && (size_t)(comma - v) < sizeof a && strlen(comma + 1) < sizeof b) {
        snprintf(a, sizeof a, "%.*s", (int)(comma - v), v);
        snprintf(b, sizeof b, "%s", comma + 1);
        if (!tool_parse_count(a, hi, &x) && x >= lo && !tool_parse_count(b, hi, &y) && y >= lo) {
            *w = (int)x, *h = (int)y;
            return 0;
        }
    } else if (v && !tool_parse_count(v, hi, &x) && x >= lo) {
        *w = *h = (int)x;
        return 0;
    }
    return tool_usage_error(t, "%s needs N or W,H, whole numbers from %llu to %llu%s%s%s", o, (unsigned long long)lo,
                            (unsigned long long)hi, v ? ", not '" : "", v ? v : "", v ? "'" : "");
}

enum { FILTER_MAX = 63 }; /* a kernel's largest side: SExtractor's own files go to 15 x 15 */

/* A SExtractor convolution file: "CONV NORM" or "CONV NONORM", then rows of numbers (lines starting with '#' are
 * comments), every row as long, odd width and height, a positive sum. NORM divides by the sum. */
static int read_conv(tool_args *t, const char *path, extract_args *x)
{
    FILE *f = fopen(path, "r");
    if (!f) return tool_usage_error(t, "--filter %s: cannot read: %s", path, strerror(errno));
    char line[4096];
    int norm = -1, w = 0, h = 0, bad = 0;
    float *k = malloc(FILTER_MAX * FILTER_MAX * sizeof *k);
    char why[200] = "";
    while (k && !bad && fgets(line, sizeof line, f)) {
        char *s = line + strspn(line, " \t\r\n");
        if (!*s || *s == '#') continue;
        if (norm < 0) {
            if (!strncmp(s, "CONV", 4) && strstr(s, "NONORM")) norm = 0;
            else if (!strncmp(s, "CONV", 4) && strstr(s, "NORM")) norm = 1;
            else snprintf(why, sizeof why, "the first line is not CONV NORM or CONV NONORM"), bad = 1;
            continue;
        }
        int n = 0;
        for (char *tok = strtok(s, " \t\r\n"); tok && !bad; tok = strtok(NULL, " \t\r\n"), n++) {
            double d;
            if (tool_parse_real(tok, &d)) snprintf(why, sizeof why, "'%s' is not a number", tok), bad = 1;
            else if (n >= FILTER_MAX || h >= FILTER_MAX)
                snprintf(why, sizeof why, "larger than %d x %d", FILTER_MAX, FILTER_MAX), bad = 1;
            else k[h * FILTER_MAX + n] = (float)d;
        }
        if (!bad && h && n != w) snprintf(why, sizeof why, "row %d has %d values, row 1 %d", h + 1, n, w), bad = 1;
        w = n, h++;
    }
    fclose(f);
    if (!k) return tool_usage_error(t, "out of memory");
    double sum = 0;
    for (int i = 0; i < h && !bad; i++)
        for (int j = 0; j < w; j++) sum += k[i * FILTER_MAX + j];
    if (!bad && norm < 0) snprintf(why, sizeof why, "empty"), bad = 1;
    else if (!bad && !h) snprintf(why, sizeof why, "no rows of numbers after CONV"), bad = 1;
    else if (!bad && (w % 2 == 0 || h % 2 == 0)) snprintf(why, sizeof why, "%d x %d: sides must be odd", w, h), bad = 1;
    else if (!bad && !(sum > 0)) snprintf(why, sizeof why, "the values do not have a positive sum"), bad = 1;
    if (bad) {
        free(k);
        return tool_usage_error(t, "--filter %s is not a SExtractor convolution kernel: %s", path, why);
    }
    x->filter = malloc((size_t)(w * h) * sizeof *x->filter);
    if (!x->filter) return free(k), tool_usage_error(t, "out of memory");
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) x->filter[i * w + j] = (float)(k[i * FILTER_MAX + j] / (norm ? sum : 1.0));
    x->filter_w = w, x->filter_h = h;
    free(k);
    return 0;
}

/* --filter's value: default, none, gauss:FWHM (a Gaussian sampled at pixel centres, 2 ceil(FWHM) + 1 pixels on a
 * side as SExtractor's gauss_*.conv files about are) or a .conv file. */
static int parse_filter(tool_args *t, const char *v, args *a)
{
    extract_args *x = &a->x;
    if (!v || !*v) return tool_usage_error(t, "--filter needs default, none, gauss:FWHM or a .conv file");
    if (!strcmp(v, "default")) return 0;
    if (!strcmp(v, "none")) return x->filter_none = 1, 0;
    if (!strncmp(v, "gauss:", 6)) {
        double fwhm;
        if (tool_parse_real(v + 6, &fwhm) || !(fwhm > 0) || fwhm > 30)
            return tool_usage_error(t, "--filter gauss:FWHM needs a FWHM in pixels above 0 and at most 30, not '%s'",
                                    v + 6);
        const int r = (int)ceil(fwhm), n = 2 * r + 1;
        if (!(x->filter = malloc((size_t)(n * n) * sizeof *x->filter))) return tool_usage_error(t, "out of memory");
        const double s2 = fwhm * fwhm / (8 * log(2.0)); /* sigma^2 */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                x->filter[i * n + j] = (float)exp(-((i - r) * (i - r) + (j - r) * (j - r)) / (2 * s2));
        x->filter_w = x->filter_h = n;
        return 0;
    }
    a->filter_file = v;
    return read_conv(t, v, x);
}

/* The outputs of --write and their file name suffixes under --outdir (out_options' order). */
static const char *const write_names[OUT_COUNT + 1] = { "catalog", "fits-catalog", "regions", "background",
                                                        "rms",     "labels",       "overlay", NULL };
static const char *const out_suffixes[OUT_COUNT] = { ".csv",      ".cat.fits",    ".reg", ".back.fits",
                                                     ".rms.fits", ".labels.fits", ".png" };

static int parse_write(tool_args *t, const char *v, args *a)
{
    char item[64];
    if (!v || !*v)
        return tool_usage_error(t, "--write needs a list of catalog, fits-catalog, regions, background, "
                                   "rms, labels, overlay");
    for (const char *s = v; *s;) {
        const size_t len = strcspn(s, ",");
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item - 1 ? len : sizeof item - 1), s);
        int k = 0;
        while (write_names[k] && (len >= sizeof item || strcmp(item, write_names[k]))) k++;
        if (!write_names[k])
            return tool_usage_error(t,
                                    "--write: '%s' is not an output (catalog, fits-catalog, regions, background, "
                                    "rms, labels or overlay)",
                                    item);
        a->write[k] = 1;
        s += len + (s[len] == ',');
    }
    return 0;
}

static int add_image(args *a, const char *name)
{
    const char **m = realloc(a->images, (a->nimages + 1) * sizeof *m);
    if (!m) return fprintf(stderr, "gpuws sources: out of memory\n"), -1;
    a->images = m;
    a->images[a->nimages++] = name;
    return 0;
}

/* @FILE: one image name per line (blank lines and lines starting with '#' skipped). */
static int read_list(tool_args *t, const char *path, args *a)
{
    FILE *f = *path ? fopen(path, "r") : NULL;
    if (!f)
        return tool_usage_error(t, "@%s: cannot read the list of images: %s", path,
                                *path ? strerror(errno) : "no name");
    char line[4096];
    int rc = 0;
    size_t before = a->nimages;
    while (!rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char **m = realloc(a->listed, (a->nlisted + 1) * sizeof *m);
        if (m) a->listed = m;
        char *copy = m ? strdup(line) : NULL;
        if (!copy) rc = tool_usage_error(t, "out of memory");
        else a->listed[a->nlisted++] = copy, rc = add_image(a, copy);
    }
    fclose(f);
    if (!rc && a->nimages == before) rc = tool_usage_error(t, "@%s names no image", path);
    return rc;
}

static void free_args(args *a)
{
    free(a->x.filter);
    for (size_t i = 0; i < a->nlisted; i++) free(a->listed[i]);
    free(a->listed);
    free(a->images);
}

/* 0: parsed; 1: --help printed; 2: bad usage (message printed). */
static int parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT;
    a->clip = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    a->o.clip = &a->clip;
    a->x = (extract_args){ 64, 64, 3, 3, 1.5, 5, 0, NULL, 0, 0, 32, 0.005, 1, 1.0, { 0, { 0 } } };
    a->size = 2048;
    a->seed = 1;
    a->plane = -1;
    a->method = -1;
    int have_sigma = 0, have_abs = 0, have_clean_param = 0;
    const char *write_given = NULL;
    tool_args t = TOOL_ARGS_INIT(CMD);
    const char *demo_only = NULL;     /* the first option given that only --demo takes */
    const char *workshop_only = NULL; /* ... that only --method workshop takes */
    const char *extract_only = NULL;  /* ... that only --method extract takes */
    const char *image_only = NULL;    /* ... that needs an IMAGE */
#define ONLY(var) (var = var ? var : o)
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int out = -1;
        for (int k = 0; k < OUT_COUNT; k++)
            if (!strcmp(o, out_options[k])) out = k;
        uint64_t u;
        double d;
        if (o[0] == '-' && o[1] && !tool_is_signed_number(o) && tool_once(&t, o)) return 2;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "--method")) {
            if ((a->method = tool_choice(&t, o, v, method_names)) < 0) return 2;
            i++;
        } else if (!strcmp(o, "--demo")) {
            a->demo = 1;
            ONLY(workshop_only);
        } else if (!strcmp(o, "--kappa")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return fprintf(stderr, "gpuws sources: --kappa must be > 0\n"), 2;
            a->clip.kappa = d, i++, ONLY(workshop_only);
        } else if (!strcmp(o, "--threshold")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return fprintf(stderr, "gpuws sources: --threshold must be > 0 (stds)\n"), 2;
            a->o.threshold_sigma = d, have_sigma = 1, i++, ONLY(workshop_only);
        } else if (!strcmp(o, "--threshold-abs")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            a->o.threshold_abs = d, have_abs = 1, i++, ONLY(workshop_only);
        } else if (!strcmp(o, "--connectivity")) {
            if (!v || (strcmp(v, "4") && strcmp(v, "8")))
                return fprintf(stderr, "gpuws sources: --connectivity is 4 or 8\n"), 2;
            a->connectivity = v[0] - '0', i++;
        } else if (!strcmp(o, "--back-size")) {
            if (parse_pair(&t, o, v, 1, 0x7fffffff, &a->x.back_w, &a->x.back_h)) return 2;
            a->back_size_given = 1, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--back-filtersize")) {
            if (parse_pair(&t, o, v, 1, 1001, &a->x.back_fw, &a->x.back_fh)) return 2;
            i++, ONLY(extract_only);
        } else if (!strcmp(o, "--detect-thresh")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return tool_usage_error(&t, "--detect-thresh must be > 0 (sigmas), not '%s'", v), 2;
            a->x.detect_thresh = d, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--minarea")) {
            if (tool_count(&t, o, v, 1, 0x7fffffff, "a pixel count", &u)) return 2;
            a->x.minarea = (int)u, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--filter")) {
            if (parse_filter(&t, v, a)) return 2;
            i++, ONLY(extract_only);
        } else if (!strcmp(o, "--deblend-nthresh")) {
            if (tool_count(&t, o, v, 1, 1024, "a count", &u)) return 2;
            a->x.deblend_nthresh = (int)u, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--deblend-mincont")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d >= 0 && d <= 1))
                return tool_usage_error(&t, "--deblend-mincont must be from 0 to 1, not '%s'", v), 2;
            a->x.deblend_mincont = d, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--clean-param")) {
            if (tool_real(&t, o, v, false, &d)) return 2;
            if (!(d > 0)) return tool_usage_error(&t, "--clean-param must be > 0, not '%s'", v), 2;
            a->x.clean_param = d, have_clean_param = 1, i++, ONLY(extract_only);
        } else if (!strcmp(o, "--no-clean")) {
            a->x.clean = 0, ONLY(extract_only);
        } else if (!strcmp(o, "--phot-apertures")) {
            if (phot_parse(&t, o, v, &a->x.phot)) return 2;
            i++, ONLY(extract_only);
        } else if (!strcmp(o, "--hdu")) {
            if (tool_count(&t, o, v, 1, 100000, "an HDU number", &u)) return 2;
            a->hdu = (int)u, i++, ONLY(image_only);
        } else if (!strcmp(o, "--plane")) {
            if (tool_count(&t, o, v, 0, (uint64_t)1 << 62, "a plane index", &u)) return 2;
            a->plane = (long long)u, i++, ONLY(image_only);
        } else if (out >= 0) {
            if (tool_name(&t, o, v, "a file name")) return 2;
            a->out[out] = v, i++;
            if (out == OUT_BACKGROUND || out == OUT_RMS) ONLY(extract_only);
        } else if (!strcmp(o, "--outdir")) {
            if (tool_name(&t, o, v, "a directory")) return 2;
            a->outdir = v, i++, ONLY(image_only);
        } else if (!strcmp(o, "--write")) {
            if (parse_write(&t, v, a)) return 2;
            write_given = o, i++;
        } else if (!strcmp(o, "--size")) {
            if (tool_count(&t, o, v, 16, 46340, NULL, &u)) return 2; /* 46340^2 < 2^31: labels are int32 */
            a->size = (size_t)u, i++, ONLY(demo_only);
        } else if (!strcmp(o, "--seed")) {
            if (tool_count(&t, o, v, 0, UINT64_MAX, NULL, &u)) return 2;
            a->seed = u, i++, ONLY(demo_only);
        } else if (!strcmp(o, "--sources")) {
            if (tool_count(&t, o, v, 0, 1000000, NULL, &u)) return 2;
            a->nsources = (size_t)u, a->have_nsources = 1, i++, ONLY(demo_only);
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "gpuws sources: unknown or incomplete option '%s'\n", o);
            usage(stderr);
            return 2;
        } else if (!*o) {
            fprintf(stderr, "gpuws sources: the IMAGE file name is empty ('')\n");
            return 2;
        } else if (o[0] == '@' ? read_list(&t, o + 1, a) : add_image(a, o)) {
            return 2;
        }
    }
#undef ONLY
    a->image = a->nimages ? a->images[0] : NULL;
    const char *named = NULL; /* the first output named on the command line */
    for (int k = 0; k < OUT_COUNT; k++) named = named ? named : a->out[k] ? out_options[k] : NULL;
    if (a->nimages > 1 && !a->outdir)
        return fprintf(stderr, "gpuws sources: %zu images: give --outdir DIR (their outputs are DIR/<name>.csv, ...)\n",
                       a->nimages),
               2;
    if (a->outdir && named)
        return fprintf(stderr, "gpuws sources: %s names one file; with --outdir choose the outputs with --write\n",
                       named),
               2;
    if (write_given && !a->outdir) return fprintf(stderr, "gpuws sources: --write applies to --outdir only\n"), 2;
    if (a->outdir && !write_given) a->write[OUT_CATALOG] = 1;
    if (a->outdir && (a->write[OUT_BACKGROUND] || a->write[OUT_RMS]))
        extract_only = extract_only ? extract_only : "--write background/rms";
    if (have_sigma && have_abs)
        return fprintf(stderr, "gpuws sources: --threshold and --threshold-abs exclude each other\n"), 2;
    if (have_clean_param && !a->x.clean)
        return fprintf(stderr, "gpuws sources: --clean-param and --no-clean exclude each other\n"), 2;
    if (a->demo && a->nimages) {
        fprintf(stderr, "gpuws sources: --demo takes no IMAGE\n");
        usage(stderr);
        return 2;
    }
    if (a->demo == !!a->image) {
        fprintf(stderr, "gpuws sources: %s\n", a->demo ? "--demo takes no IMAGE" : "no IMAGE (or --demo) given");
        usage(stderr);
        return 2;
    }
    if (demo_only && !a->demo) return fprintf(stderr, "gpuws sources: %s applies to --demo only\n", demo_only), 2;
    if (image_only && a->demo) return fprintf(stderr, "gpuws sources: %s applies to an IMAGE only\n", image_only), 2;
    /* --demo alone picks the workshop (the demo scores the workshop's catalogue); an explicit method is kept */
    const int explicit = a->method >= 0;
    if (!explicit) a->method = a->demo ? METHOD_WORKSHOP : METHOD_EXTRACT;
    const char *wrong = a->method == METHOD_EXTRACT ? workshop_only : extract_only;
    if (wrong)
        return fprintf(stderr, "gpuws sources: %s applies to --method %s only%s\n", wrong,
                       a->method == METHOD_EXTRACT ? "workshop" : "extract",
                       explicit || a->demo ? "" : " (the default method is extract)"),
               2;
    if (!a->connectivity) a->connectivity = a->method == METHOD_EXTRACT ? 8 : 4;
    a->o.connectivity = a->connectivity;
    a->o.want_labels = a->out[OUT_LABELS] || a->write[OUT_LABELS];
    return 0;
}

static void print_result(const gpuws_catalog *cat, const args *a)
{
    const gpuws_sigma_clip_result *c = &cat->clip;
    printf("sigma clipping (kappa %g): median %.6g, mean %.6g, std %.6g of %zu pixels after %d iteration%s%s\n",
           a->clip.kappa, c->median, c->mean, c->std, c->count, c->iterations, c->iterations == 1 ? "" : "s",
           c->converged ? " (converged)" : " (NOT converged: max_iterations reached)");
    if (isnan(a->o.threshold_abs))
        printf("threshold: %.6g (%g x clipped std; no median added, as in the workshop)\n", cat->threshold,
               a->o.threshold_sigma);
    else printf("threshold: %.6g (absolute)\n", cat->threshold);
    printf("sources: %zu (%d-connectivity)\n", cat->num_sources, a->o.connectivity);
    printf(
        "times (ms, device events): upload %.3f  clip %.3f  threshold %.3f  label %.3f  measure %.3f  download %.3f  "
        "total %.3f\n",
        cat->ms_upload, cat->ms_clip, cat->ms_threshold, cat->ms_label, cat->ms_measure, cat->ms_download,
        cat->ms_total);
}

static void print_brightest(const gpuws_catalog *cat)
{
    size_t *order = catalog_order_by_flux(cat->sources, cat->num_sources);
    if (!order || !cat->num_sources) {
        free(order);
        return;
    }
    const size_t show = cat->num_sources < 5 ? cat->num_sources : 5;
    printf("brightest %zu:\n  %6s %10s %10s %12s %6s %12s\n", show, "id", "x", "y", "flux", "npix", "peak");
    for (size_t k = 0; k < show; k++) {
        const gpuws_source *s = &cat->sources[order[k]];
        printf("  %6lld %10.3f %10.3f %12.6g %6lld %12.6g\n", (long long)s->id, s->x, s->y, s->flux, (long long)s->npix,
               s->peak);
    }
    free(order);
}

/* What the outputs are made of, whichever method made it. */
typedef struct {
    size_t w, h;
    const float *image;      /* host pixels (the overlay), or NULL */
    double lo;               /* the overlay's black level (NaN: the median) */
    const int32_t *labels;   /* or NULL */
    const float *back, *rms; /* extract's maps, or NULL */
    const sky_wcs *wcs;      /* or NULL */
    const char *no_wcs;      /* why there is none (a warning when an output would carry world coordinates) */
    char *cards;             /* the input's WCS for the 2-D maps (malloc'd), or NULL */
    int ncards;
    catalog_column cols[40 + PHOT_MAX_COLUMNS];
    size_t ncols;
    const char *comment, *table_cards; /* the CSV's comment line, the FITS table's header cards (or NULL) */
    int table_ncards;
    double *v; /* the catalogue: nrows x ncols, row-major (malloc'd) */
    size_t nrows;
    int units;             /* units in the CSV's header row */
    catalog_shape *shapes; /* nrows ellipses (malloc'd), and their strength (flux) for the overlay */
    double *strength;
    char title[600]; /* the regions file's header line */
} products;

static void products_free(products *p)
{
    free(p->cards);
    free(p->v);
    free(p->shapes);
    free(p->strength);
}

static int add_col(products *p, const char *name, const char *unit, int decimals)
{
    if (p->ncols == sizeof p->cols / sizeof p->cols[0]) return -1;
    p->cols[p->ncols++] = (catalog_column){ name, unit, decimals };
    return 0;
}

/* Room for the rows; the caller fills p->v. */
static int alloc_rows(products *p, size_t nrows)
{
    const size_t m = nrows ? nrows : 1;
    p->nrows = nrows;
    p->v = malloc(m * p->ncols * sizeof *p->v);
    p->shapes = malloc(m * sizeof *p->shapes);
    p->strength = malloc(m * sizeof *p->strength);
    return p->v && p->shapes && p->strength ? 0 : -1;
}

static int world_of(const void *w, double x, double y, double *lng, double *lat)
{
    return sky_wcs_world(w, x, y, lng, lat);
}

/* A string keyword's value from a header of 80-character cards ("" when absent). */
static void header_string(const char *hdr, const char *key, char *out, size_t n)
{
    out[0] = 0;
    for (const char *c = hdr; c && strlen(c) >= 80; c += 80) {
        if (strncmp(c, key, strlen(key)) || c[8] != '=') continue;
        const char *q = memchr(c + 10, '\'', 70), *e = q ? memchr(q + 1, '\'', (size_t)(c + 80 - q - 1)) : NULL;
        if (!q || !e) return;
        size_t len = (size_t)(e - q - 1);
        while (len && q[len] == ' ') len--; /* trailing blanks are not significant */
        snprintf(out, n, "%.*s", (int)len, q + 1);
        return;
    }
}

/* Writes every requested output into its staging file, then puts them all in place; on any failure none. */
static int write_outputs(const args *a, const products *p)
{
    const char *const *finals = a->out;
    char err[4400] = "";
    int rc = 0;
    if (!p->wcs && (finals[OUT_CATALOG] || finals[OUT_FITS_CATALOG] || finals[OUT_REGIONS]) && a->image)
        fprintf(stderr, "gpuws sources: warning: %s: no world coordinates (%s): the outputs are in pixel coordinates\n",
                a->image, p->no_wcs ? p->no_wcs : "none");
    const char *names[sizeof p->cols / sizeof p->cols[0]], *units[sizeof p->cols / sizeof p->cols[0]];
    int integer[sizeof p->cols / sizeof p->cols[0]];
    for (size_t c = 0; c < p->ncols; c++)
        names[c] = p->cols[c].name, units[c] = p->cols[c].unit, integer[c] = p->cols[c].decimals == 0;
    const catalog_table table = { p->ncols, p->nrows, p->cols, p->v, p->comment };
    const char *frame = p->wcs ? sky_wcs_ds9_frame(p->wcs) : NULL;
    for (size_t k = 0; k < OUT_COUNT && !rc; k++) {
        if (!finals[k]) continue;
        const char *path = output_files_stage(a->outputs, k, err, sizeof err);
        if (path && p->w * p->h >= ((size_t)1 << 24)) /* seconds */
            fprintf(stderr, "gpuws sources: writing %s...\n", finals[k]);
        if (!path) rc = -1;
        else if (k == OUT_CATALOG) rc = catalog_table_csv(path, &table, p->units, err, sizeof err);
        else if (k == OUT_FITS_CATALOG)
            rc = fits_write_table(path, "OBJECTS", p->ncols, names, units, integer, p->nrows, p->v, p->table_cards,
                                  p->table_ncards, err, sizeof err);
        else if (k == OUT_REGIONS)
            rc = catalog_regions_write(path, p->shapes, p->nrows, frame ? world_of : NULL, p->wcs, frame, p->title, err,
                                       sizeof err);
        else if (k == OUT_BACKGROUND || k == OUT_RMS)
            rc = fits_write_image_cards(path, FITS_F32, k == OUT_RMS ? p->rms : p->back, p->w, p->h, p->cards,
                                        p->ncards, err, sizeof err);
        else if (k == OUT_LABELS)
            rc = fits_write_image_cards(path, FITS_I32, p->labels, p->w, p->h, p->cards, p->ncards, err, sizeof err);
        else
            rc =
                png_overlay_write(path, p->image, p->w, p->h, p->lo, p->shapes, p->strength, p->nrows, err, sizeof err);
        if (rc) output_files_reword(a->outputs, k, err, sizeof err); /* the user's name, not the staged one */
    }
    if (!rc) rc = output_files_commit(a->outputs, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpuws sources: %s\n", err);
        return 1;
    }
    for (int k = 0; k < OUT_COUNT; k++)
        if (finals[k]) printf("wrote %s\n", finals[k]);
    return 0;
}

/* The WCS, the flux unit and the maps' header cards of the image just read. */
static void products_from_image(products *p, const fits_image *img, sky_wcs **wcs, char *why, size_t n, char *bunit,
                                size_t nb)
{
    memset(p, 0, sizeof *p);
    p->w = img->width, p->h = img->height, p->lo = NAN;
    *wcs = sky_wcs_create(img, why, n);
    p->wcs = *wcs, p->no_wcs = why;
    if (*wcs && sky_wcs_header_2d(*wcs, &p->cards, &p->ncards)) p->cards = NULL, p->ncards = 0;
    header_string(img->header, "BUNIT", bunit, nb);
    for (char *c = bunit; *c; c++) /* a unit in the CSV's header row: no separator, quote or bracket in it */
        if (*c == ',' || *c == '"' || *c == '[' || *c == ']') *c = ' ';
}

/* The workshop's catalogue: today's columns (id,x,y,flux,npix,peak sorted by flux; CSV without units), then the
 * world coordinates when there are any; a circle of the source's area (plus 2 pixels) for regions and overlays. */
static int workshop_products(products *p, const gpuws_catalog *cat, const char *bunit)
{
    const char *flux = *bunit ? bunit : "count";
    add_col(p, "id", "", 0), add_col(p, "x", "pix", 6), add_col(p, "y", "pix", 6), add_col(p, "flux", flux, -1);
    add_col(p, "npix", "pix", 0), add_col(p, "peak", flux, -1);
    if (p->wcs) add_col(p, sky_wcs_lng_name(p->wcs), "deg", 8), add_col(p, sky_wcs_lat_name(p->wcs), "deg", 8);
    size_t *order = catalog_order_by_flux(cat->sources, cat->num_sources);
    if (!order || alloc_rows(p, cat->num_sources)) return free(order), -1;
    for (size_t r = 0; r < cat->num_sources; r++) {
        const gpuws_source *s = &cat->sources[order[r]];
        double *row = p->v + r * p->ncols;
        row[0] = (double)s->id, row[1] = s->x, row[2] = s->y, row[3] = s->flux, row[4] = (double)s->npix;
        row[5] = s->peak;
        if (p->wcs) sky_wcs_world(p->wcs, s->x, s->y, &row[6], &row[7]);
        const double rad = 2.0 + sqrt((double)s->npix / M_PI);
        p->shapes[r] = (catalog_shape){ s->x, s->y, rad, rad, 0 };
        p->strength[r] = s->flux;
    }
    free(order);
    p->labels = cat->labels;
    p->lo = cat->clip.median;
    return 0;
}

static void workshop_title(products *p, const args *a, size_t n)
{
    snprintf(p->title, sizeof p->title,
             "gpuws sources --method workshop: %zu source%s in %s; circles of each source's area plus 2 pixels", n,
             n == 1 ? "" : "s", a->image ? a->image : "the demo sky");
}

static int run_workshop(const args *a, const fits_image *img, gpuws_context *ctx)
{
    char why[300] = "", bunit[72];
    sky_wcs *wcs;
    products p;
    products_from_image(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
    p.image = img->data;
    gpuws_catalog *cat;
    gpuws_status st = gpuws_find_sources(ctx, img->data, img->width, img->height, &a->o, &cat);
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_result(cat, a);
        print_brightest(cat);
        workshop_title(&p, a, cat->num_sources);
        rc = workshop_products(&p, cat, bunit) ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : write_outputs(a, &p);
    }
    gpuws_catalog_free(cat);
    products_free(&p);
    sky_wcs_destroy(wcs);
    return rc;
}

static int run_extract(const args *a, const fits_image *img, gpuws_context *ctx);

/* The background mesh for a w x h image: --back-size, or the default cut to the image (one mesh, as SEP makes). */
static void mesh_for(const args *a, size_t w, size_t h, int *bw, int *bh)
{
    *bw = a->x.back_w, *bh = a->x.back_h;
    if (!a->back_size_given && (size_t)*bw > w) *bw = (int)w;
    if (!a->back_size_given && (size_t)*bh > h) *bh = (int)h;
}

/* One image; shared: the context of many files, or NULL to make one. */
static int run_image(const args *a, gpuws_context *shared)
{
    fits_image img;
    char err[4400];
    struct stat sb;
    if (stat(a->image, &sb) == 0 && sb.st_size >= (1 << 26))
        fprintf(stderr, "gpuws sources: reading %s...\n", a->image);
    const fits_read_request req = { a->hdu, a->plane, 1 };
    if (fits_read_image_at(a->image, 0, &req, &img, err, sizeof err))
        return fprintf(stderr, "gpuws sources: %s\n", err), 1;
    const float *px = img.data;
    const size_t n = img.width * img.height;
    size_t blanks = 0, infinite = 0;
    for (size_t i = 0; i < n; i++) /* != 0: glibc's isinf(-inf) is -1 */
        blanks += isnan(px[i]) != 0, infinite += isinf(px[i]) != 0;
    if (blanks + infinite == n) { /* no statistics exist: say which kind of pixel filled the image */
        fprintf(stderr, "gpuws sources: %s: every pixel of the %zu x %zu image (HDU %d) is ", a->image, img.width,
                img.height, img.hdu);
        if (!infinite) fprintf(stderr, "blank or NaN\n");
        else if (!blanks) fprintf(stderr, "infinite (+inf or -inf)\n");
        else fprintf(stderr, "blank, NaN or infinite: %zu blank or NaN, %zu infinite\n", blanks, infinite);
        fits_image_free(&img);
        return 1;
    }
    if (a->method == METHOD_EXTRACT && ((size_t)a->x.back_w > img.width || (size_t)a->x.back_h > img.height) &&
        a->back_size_given) {
        fprintf(stderr,
                "gpuws sources: %s: the background mesh (--back-size %d,%d) is larger than the %zu x %zu image\n",
                a->image, a->x.back_w, a->x.back_h, img.width, img.height);
        fits_image_free(&img);
        return 1;
    }
    gpuws_context *ctx = shared;
    if (!ctx && tool_context(CMD, &ctx)) {
        fits_image_free(&img);
        return 1;
    }
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    char plane[64] = "";
    if (img.nplanes > 1) snprintf(plane, sizeof plane, " plane %lld of %lld,", img.plane, img.nplanes);
    printf("%s: HDU %d,%s %zu x %zu pixels (BITPIX %d), %zu blank or NaN, %zu infinite\n", a->image, img.hdu, plane,
           img.width, img.height, img.bitpix, blanks, infinite);
    printf("device: %s: %s\n", k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu", d.name);
    const int rc = a->method == METHOD_EXTRACT ? run_extract(a, &img, ctx) : run_workshop(a, &img, ctx);
    if (!shared) gpuws_context_destroy(ctx);
    fits_image_free(&img);
    return rc;
}

static int run_demo(const args *a)
{
    gpuws_sky_params p = gpuws_sky_defaults(a->size, a->size, a->seed);
    if (a->have_nsources) p.num_sources = a->nsources;
    gpuws_sky_source *src = malloc((p.num_sources + 1) * sizeof *src);
    if (!src) return fprintf(stderr, "gpuws sources: out of memory\n"), 1;
    gpuws_sky_sources(&p, src);
    gpuws_context *ctx;
    if (tool_context(CMD, &ctx)) return free(src), 1;
    gpuws_device_info d;
    gpuws_backend_kind k;
    gpuws_context_get_device_info(ctx, &d);
    gpuws_context_get_backend(ctx, &k);
    printf("synthetic sky %zu x %zu (seed %llu): %zu point sources, peaks %g..%g Jy/beam log-uniform, noise sigma %g, "
           "beam sigma %g px\n",
           p.width, p.height, (unsigned long long)p.seed, p.num_sources, p.peak_min, p.peak_max, p.noise_sigma,
           p.beam_sigma);
    printf("device: %s: %s\n", k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu", d.name);
    const size_t n = p.width * p.height;
    gpuws_buffer *img = NULL;
    gpuws_catalog *cat = NULL;
    float *host = NULL;
    gpuws_status st = gpuws_buffer_create(ctx, n * sizeof(float), &img);
    if (!st) st = gpuws__sky_generate(NULL, &p, src, img);
    if (!st) st = gpuws__find_sources_device(NULL, p.width, p.height, img, &a->o, &cat);
    if (!st && a->out[OUT_OVERLAY]) { /* only the preview needs the pixels on the host */
        if (!(host = malloc(n * sizeof *host))) st = GPUWS_ERR_OUT_OF_MEMORY;
        else st = gpuws_buffer_read(img, 0, host, n * sizeof *host);
    }
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_result(cat, a);
        gpuws_sky_match m;
        const double radius = 2.0, blend = 4 * p.beam_sigma;
        if (gpuws_sky_match_catalog(src, p.num_sources, cat->sources, cat->num_sources, radius, cat->threshold, blend,
                                    &m)) {
            rc = tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY);
        } else {
            printf("recovered %zu of %zu injected sources within %g px (position error rms %.3f px, max %.3f px)\n",
                   m.recovered, m.injected, radius, m.rms_error, m.max_error);
            printf(
                "missed: %zu with a peak below the threshold, %zu within %.1f px of another source (merged islands), "
                "%zu others (faint ones the noise pulled under the threshold)\n",
                m.missed_faint, m.missed_blended, blend, m.missed_other);
            printf(
                "other detections: %zu fragments near injected sources (islands of faint sources broken by the noise), "
                "%zu spurious (noise above the threshold)\n",
                m.fragments, m.spurious);
            products out;
            memset(&out, 0, sizeof out);
            out.w = p.width, out.h = p.height, out.image = host, out.no_wcs = "a synthetic sky";
            workshop_title(&out, a, cat->num_sources);
            rc = workshop_products(&out, cat, "") ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : write_outputs(a, &out);
            products_free(&out);
        }
    }
    free(host);
    gpuws_catalog_free(cat);
    gpuws_buffer_destroy(img);
    gpuws_context_destroy(ctx);
    free(src);
    return rc;
}

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

/* Many files: each one's outputs planned, computed and written all or none under --outdir; a failing file is
 * reported and the rest processed. One context for all. */
static int run_many(args *a)
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
            snprintf(names[o], sizeof names[o], "%s/%s%s", a->outdir, st, out_suffixes[o]);
            a->out[o] = a->write[o] ? names[o] : NULL;
        }
        printf("[%zu/%zu] %s\n", k + 1, n, a->image);
        fflush(stdout);
        int code;
        const char *inputs[2] = { a->image, a->filter_file };
        a->outputs = output_files_prepare(inputs, 2, a->out, out_options, OUT_COUNT, &code, err, sizeof err);
        if (!a->outputs) fprintf(stderr, "gpuws sources: %s\n", err);
        const int rc = a->outputs ? run_image(a, ctx) : 1;
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

static int cmd_sources(int argc, char **argv)
{
    args a;
    int r = parse(argc, argv, &a);
    if (r) {
        free_args(&a);
        return r == 1 ? 0 : r;
    }
    if ((a.out[OUT_OVERLAY] || a.write[OUT_OVERLAY]) && !png_overlay_available()) {
        free_args(&a);
        fprintf(stderr, "gpuws sources: --overlay is unavailable: gpuws was built without libpng\n");
        return 1;
    }
    if (a.outdir) {
        r = run_many(&a);
        free_args(&a);
        return r;
    }
    /* the outputs first: a destination that cannot be written, or that is the image, fails before any work */
    char err[4400];
    const char *inputs[2] = { a.image, a.filter_file };
    a.outputs = output_files_prepare(inputs, 2, a.out, out_options, OUT_COUNT, &r, err, sizeof err);
    if (!a.outputs) {
        free_args(&a);
        return fprintf(stderr, "gpuws sources: %s\n", err), r;
    }
    r = a.demo ? run_demo(&a) : run_image(&a, NULL);
    output_files_destroy(a.outputs);
    free_args(&a);
    return r;
}

/* The extraction's catalogue: SEP's columns in SEP's order, id = the object's label (k + 1), world coordinates
 * after x and y when there are any, the aperture photometry's columns last, units in the CSV's header row; ellipses
 * at 3 a x 3 b (as SEP's documentation draws them) for regions and overlays. */
static int extract_products(products *p, const gpuws_extract_catalog *cat, const phot_table *ph, const char *bunit)
{
    const char *flux = *bunit ? bunit : "count";
    add_col(p, "id", "", 0), add_col(p, "x", "pix", 6), add_col(p, "y", "pix", 6);
    if (p->wcs) add_col(p, sky_wcs_lng_name(p->wcs), "deg", 8), add_col(p, sky_wcs_lat_name(p->wcs), "deg", 8);
    const size_t first = p->ncols;
    static const struct {
        const char *name, *unit; /* unit "F": the image's flux unit */
        int decimals;
    } rest[] = {
        { "flux", "F", -1 },     { "fluxerr", "F", -1 },  { "cflux", "F", -1 },    { "peak", "F", -1 },
        { "cpeak", "F", -1 },    { "npix", "pix", 0 },    { "tnpix", "pix", 0 },   { "a", "pix", -1 },
        { "b", "pix", -1 },      { "theta", "rad", -1 },  { "cxx", "pix-2", -1 },  { "cyy", "pix-2", -1 },
        { "cxy", "pix-2", -1 },  { "x2", "pix2", -1 },    { "y2", "pix2", -1 },    { "xy", "pix2", -1 },
        { "errx2", "pix2", -1 }, { "erry2", "pix2", -1 }, { "errxy", "pix2", -1 }, { "xmin", "pix", 0 },
        { "xmax", "pix", 0 },    { "ymin", "pix", 0 },    { "ymax", "pix", 0 },    { "xpeak", "pix", 0 },
        { "ypeak", "pix", 0 },   { "xcpeak", "pix", 0 },  { "ycpeak", "pix", 0 },  { "thresh", "F", -1 },
        { "flag", "", 0 },
    };
    for (size_t c = 0; c < sizeof rest / sizeof rest[0]; c++)
        if (add_col(p, rest[c].name, strcmp(rest[c].unit, "F") ? rest[c].unit : flux, rest[c].decimals)) return -1;
    const size_t aper = p->ncols;
    for (size_t c = 0; c < phot_ncolumns(ph); c++) {
        const catalog_column col = phot_column(ph, c, flux);
        if (add_col(p, col.name, col.unit, col.decimals)) return -1;
    }
    if (ph->nap) p->comment = ph->comment, p->table_cards = ph->cards, p->table_ncards = ph->ncards;
    if (alloc_rows(p, cat->num_objects)) return -1;
    for (size_t k = 0; k < cat->num_objects; k++) {
        const gpuws_object *o = &cat->objects[k];
        double *row = p->v + k * p->ncols;
        row[0] = (double)(k + 1), row[1] = o->x, row[2] = o->y;
        if (p->wcs) sky_wcs_world(p->wcs, o->x, o->y, &row[3], &row[4]);
        const double v[] = { o->flux,
                             o->fluxerr,
                             o->cflux,
                             o->peak,
                             o->cpeak,
                             (double)o->npix,
                             (double)o->tnpix,
                             o->a,
                             o->b,
                             o->theta,
                             o->cxx,
                             o->cyy,
                             o->cxy,
                             o->x2,
                             o->y2,
                             o->xy,
                             o->errx2,
                             o->erry2,
                             o->errxy,
                             (double)o->xmin,
                             (double)o->xmax,
                             (double)o->ymin,
                             (double)o->ymax,
                             (double)o->xpeak,
                             (double)o->ypeak,
                             (double)o->xcpeak,
                             (double)o->ycpeak,
                             o->thresh,
                             (double)o->flag };
        memcpy(row + first, v, sizeof v);
        if (ph->nap) memcpy(row + aper, phot_row(ph, k), phot_ncolumns(ph) * sizeof *row);
        p->shapes[k] = (catalog_shape){ o->x, o->y, 3 * o->a, 3 * o->b, o->theta };
        p->strength[k] = o->flux;
    }
    p->units = 1;
    return 0;
}

static void print_extract(const args *a, size_t w, size_t h, const gpuws_background_result *br,
                          const gpuws_extract_catalog *cat)
{
    const extract_args *x = &a->x;
    int bw, bh;
    mesh_for(a, w, h, &bw, &bh);
    printf("background: global %.6g, rms %.6g (%zu x %zu meshes of %d x %d pixels, filter %d x %d; %zu meshes filled "
           "from their neighbours)\n",
           br->globalback, br->globalrms, br->nx, br->ny, bw, bh, x->back_fw, x->back_fh, br->bad_meshes);
    char filter[64];
    if (x->filter_none) snprintf(filter, sizeof filter, "none");
    else if (!x->filter) snprintf(filter, sizeof filter, "SEP's default 3 x 3");
    else snprintf(filter, sizeof filter, "%d x %d kernel", x->filter_w, x->filter_h);
    printf("objects: %zu (detect-thresh %g sigma, minarea %d, filter %s, deblend %d levels, mincont %g, ",
           cat->num_objects, x->detect_thresh, x->minarea, filter, x->deblend_nthresh, x->deblend_mincont);
    if (x->clean) printf("clean-param %g, ", x->clean_param);
    else printf("no cleaning, ");
    printf("%d-connectivity)\n", a->connectivity);
    printf("times (ms): extraction on the device %.3f, on the host %.3f\n", cat->ms_device, cat->ms_host);
    const size_t show = cat->num_objects < 5 ? cat->num_objects : 5;
    if (!show) return;
    printf("first %zu:\n  %6s %10s %10s %12s %12s %8s %8s %6s\n", show, "id", "x", "y", "flux", "fluxerr", "a", "b",
           "flag");
    for (size_t k = 0; k < show; k++) {
        const gpuws_object *o = &cat->objects[k];
        printf("  %6zu %10.3f %10.3f %12.6g %12.6g %8.3f %8.3f %6d\n", k + 1, o->x, o->y, o->flux, o->fluxerr, o->a,
               o->b, o->flag);
    }
}

/* gpuws_background, then gpuws_extract on the image minus the background, in units of its rms; NaN and infinite
 * pixels are masked in both. */
static int run_extract(const args *a, const fits_image *img, gpuws_context *ctx)
{
    const size_t w = img->width, h = img->height, n = w * h;
    const float *px = img->data;
    const extract_args *x = &a->x;
    char why[300] = "", bunit[72];
    sky_wcs *wcs;
    products p;
    products_from_image(&p, img, &wcs, why, sizeof why, bunit, sizeof bunit);
    p.image = px;
    size_t masked = 0;
    for (size_t i = 0; i < n; i++) masked += !isfinite(px[i]);
    gpuws_buffer *image = NULL, *mask = NULL, *back = NULL, *rms = NULL, *seg = NULL;
    unsigned char *hmask = masked ? malloc(n) : NULL;
    float *hback = a->out[OUT_BACKGROUND] ? malloc(n * sizeof *hback) : NULL;
    float *hrms = a->out[OUT_RMS] ? malloc(n * sizeof *hrms) : NULL;
    int32_t *hseg = a->out[OUT_LABELS] ? malloc(n * sizeof *hseg) : NULL;
    gpuws_extract_catalog *cat = NULL;
    phot_table ph = { 0 };
    gpuws_background_result br;
    gpuws_status st = (masked && !hmask) || (a->out[OUT_BACKGROUND] && !hback) || (a->out[OUT_RMS] && !hrms) ||
                              (a->out[OUT_LABELS] && !hseg)
                          ? GPUWS_ERR_OUT_OF_MEMORY
                          : GPUWS_OK;
    for (size_t i = 0; hmask && i < n; i++) hmask[i] = !isfinite(px[i]);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &image);
    if (!st) st = gpuws_buffer_write(image, 0, px, n * sizeof(float));
    if (!st && hmask) st = gpuws_buffer_create(ctx, n, &mask);
    if (!st && hmask) st = gpuws_buffer_write(mask, 0, hmask, n);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &back);
    if (!st) st = gpuws_buffer_create(ctx, n * sizeof(float), &rms);
    if (!st && hseg) st = gpuws_buffer_create(ctx, n * sizeof(int32_t), &seg);
    if (!st) {
        gpuws_background_options bo = GPUWS_BACKGROUND_OPTIONS_INIT;
        mesh_for(a, w, h, &bo.bw, &bo.bh);
        bo.fw = x->back_fw, bo.fh = x->back_fh, bo.mask = mask;
        st = gpuws_background(NULL, GPUWS_F32, w, h, image, &bo, back, rms, &br);
    }
    if (!st) {
        gpuws_extract_options eo = GPUWS_EXTRACT_OPTIONS_INIT;
        eo.thresh = x->detect_thresh, eo.back = back, eo.rms = rms, eo.mask = mask, eo.minarea = x->minarea;
        eo.filter_type = x->filter_none ? GPUWS_FILTER_NONE : GPUWS_FILTER_MATCHED;
        eo.filter = x->filter, eo.filter_w = x->filter_w, eo.filter_h = x->filter_h;
        eo.connectivity = a->connectivity, eo.deblend_nthresh = x->deblend_nthresh;
        eo.deblend_cont = x->deblend_mincont, eo.clean = x->clean, eo.clean_param = x->clean_param, eo.segmap = seg;
        st = gpuws_extract(NULL, w, h, image, &eo, &cat);
    }
    if (!st && x->phot.n) st = phot_measure(&x->phot, w, h, image, back, rms, mask, cat, &ph);
    if (!st && hback) st = gpuws_buffer_read(back, 0, hback, n * sizeof *hback);
    if (!st && hrms) st = gpuws_buffer_read(rms, 0, hrms, n * sizeof *hrms);
    if (!st && hseg) st = gpuws_buffer_read(seg, 0, hseg, n * sizeof *hseg);
    int rc = st ? tool_fail(CMD, st) : 0;
    if (!rc) {
        print_extract(a, w, h, &br, cat);
        if (ph.nap) phot_print(&ph);
        p.back = hback, p.rms = hrms, p.labels = hseg, p.lo = br.globalback;
        snprintf(p.title, sizeof p.title,
                 "gpuws sources --method extract: %zu object%s in %s; ellipses at 3 a x 3 b, SEP's isophotal semi-axes "
                 "times 3",
                 cat->num_objects, cat->num_objects == 1 ? "" : "s", a->image);
        rc = extract_products(&p, cat, &ph, bunit) ? tool_fail(CMD, GPUWS_ERR_OUT_OF_MEMORY) : write_outputs(a, &p);
    }
    gpuws_extract_catalog_free(cat);
    phot_free(&ph);
    gpuws_buffer_destroy(image), gpuws_buffer_destroy(mask), gpuws_buffer_destroy(back), gpuws_buffer_destroy(rms);
    gpuws_buffer_destroy(seg);
    free(hmask), free(hback), free(hrms), free(hseg);
    products_free(&p);
    sky_wcs_destroy(wcs);
    return rc;
}

GPUWS_COMMAND("sources", "find sources in a FITS image, or in a synthetic sky (--demo)", cmd_sources)
