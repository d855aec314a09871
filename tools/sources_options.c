/* gpuws sources: the command line (options, IMAGE operands and @lists, --filter files). */
#include "png_overlay.h"
#include "sources.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[] = { "extract", "workshop", NULL };

const char *const sources_out_options[OUT_COUNT] = { "--catalog", "--fits-catalog", "--regions", "--background",
                                                     "--rms",     "--labels",       "--overlay" };
const char *const sources_out_suffixes[OUT_COUNT] = { ".csv",      ".cat.fits",    ".reg", ".back.fits",
                                                      ".rms.fits", ".labels.fits", ".png" };

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
        "                         (columns flux_aper_D, fluxerr_aper_D, flag_aper_D; D = 2.5 as 2p5)\n"
        "workshop options:\n"
        "  --kappa K              clipping at K clipped stds from the median (default 3)\n"
        "  --threshold S          detect pixels above S x the clipped std (default 5; no median added)\n"
        "  --threshold-abs T      detect pixels above the value T instead (as SExtractor's ABSOLUTE)\n"
        "  --max-device-memory SIZE  the pipeline from host memory (gpuws_find_sources_host: the clipping, the\n"
        "                         threshold and the measurement on the host's cores, the labelling on the device in\n"
        "                         bands of rows when the mask and labels exceed SIZE: bytes, or with K, M, G or T:\n"
        "                         512M; 0 = the device's free memory), the bands shared between the devices\n"
        "                         a GPUWS_DEVICE list names (0,1,... or all), a line per band on stderr once a run\n"
        "                         takes more than a second; images of more than 2^32 pixels, or whose image, mask\n"
        "                         and labels (9 bytes a pixel) exceed 3/4 of the device's memory, take this path.\n"
        "                         With --method extract: the background and the extraction from host memory\n"
        "                         (gpuws_extract_host) in bands of rows within SIZE, the same outputs as in-core\n"
        "                         (--phot-apertures: the image's background and rms maps kept on the host, 8 bytes\n"
        "                         a pixel); an image whose extraction (40 bytes a pixel) exceeds 3/4 of the\n"
        "                         device's memory takes this path too\n"
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
        "  --timings              each step's wall time on stderr (the read, the device's start, the upload, the\n"
        "                         background, the extraction, each output, the total)\n"
        "many images: IMAGE... or @LIST (a file of names, one a line) with --outdir DIR: the outputs of each are\n"
        "  DIR/<name>.csv, .cat.fits, .reg, .back.fits, .rms.fits, .labels.fits, .png, chosen with\n"
        "  --write catalog,fits-catalog,regions,background,rms,labels,overlay (default catalog); one context for\n"
        "  all, a line per image; a failing image is reported, nothing written for it, the others processed; each\n"
        "  image is read while the one before it is on the device.\n"
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
static int parse_filter(tool_args *t, const char *v, sources_args *a)
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

/* The outputs of --write (sources_sources_out_options' order). */
static const char *const write_names[OUT_COUNT + 1] = { "catalog", "fits-catalog", "regions", "background",
                                                        "rms",     "labels",       "overlay", NULL };

static int parse_write(tool_args *t, const char *v, sources_args *a)
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

static int add_image(sources_args *a, const char *name)
{
    const char **m = realloc(a->images, (a->nimages + 1) * sizeof *m);
    if (!m) return fprintf(stderr, "gpuws sources: out of memory\n"), -1;
    a->images = m;
    a->images[a->nimages++] = name;
    return 0;
}

/* @FILE: one image name per line (blank lines and lines starting with '#' skipped). */
static int read_list(tool_args *t, const char *path, sources_args *a)
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

void sources_args_free(sources_args *a)
{
    free(a->x.filter);
    for (size_t i = 0; i < a->nlisted; i++) free(a->listed[i]);
    free(a->listed);
    free(a->images);
}

int sources_parse(int argc, char **argv, sources_args *a)
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
            if (!strcmp(o, sources_out_options[k])) out = k;
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
        } else if (!strcmp(o, "--max-device-memory")) {
            if (!v || tool_parse_bytes(v, &a->max_device_bytes)) /* gpuws label's sizes and message */
                return tool_usage_error(&t, "--max-device-memory needs a size in bytes (512M, 2G, 1048576), not '%s'",
                                        v ? v : ""),
                       2;
            a->max_device_given = 1, i++;
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
        } else if (!strcmp(o, "--timings")) {
            a->timings = 1, ONLY(image_only);
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
    for (int k = 0; k < OUT_COUNT; k++) named = named ? named : a->out[k] ? sources_out_options[k] : NULL;
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
