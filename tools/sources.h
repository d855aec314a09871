/* gpuws sources, one concern a file: sources_options.c reads the command line, sources_image.c runs one image (the
 * read, the device, the extraction or the workshop's pipeline), sources_many.c many images in one process,
 * sources_products.c turns a catalogue into the output files, cmd_sources.c is the command and its --demo. */
#ifndef GPUWS_TOOLS_SOURCES_H
#define GPUWS_TOOLS_SOURCES_H

#include "catalog_csv.h"
#include "commands.h"
#include "fits_io.h"
#include "output_files.h"
#include "sky_wcs.h"
#include "sources/sources_internal.h"
#include "sources_phot.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define CMD "sources"

enum { METHOD_EXTRACT, METHOD_WORKSHOP };

/* The outputs, in this order everywhere (output_files indices); their options, their --write names and their file
 * name suffixes under --outdir. */
enum { OUT_CATALOG, OUT_FITS_CATALOG, OUT_REGIONS, OUT_BACKGROUND, OUT_RMS, OUT_LABELS, OUT_OVERLAY, OUT_COUNT };
extern const char *const sources_out_options[OUT_COUNT];
extern const char *const sources_out_suffixes[OUT_COUNT];

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
    int timings;     /* --timings: each step's wall time on stderr */
    int hdu;         /* 0: the first HDU with an image */
    long long plane; /* -1: none chosen */
    size_t size, nsources;
    int have_nsources;
    uint64_t seed;
    int connectivity;
    uint64_t max_device_bytes; /* --max-device-memory; 0 = the device's free memory */
    int max_device_given;      /* --max-device-memory given: the host pipeline (gpuws_find_sources_host) */
    gpuws_sources_options o;
    gpuws_sigma_clip_options clip; /* o.clip points here */
    extract_args x;
    output_files *outputs; /* planned before any work */
    FILE *report;          /* where an image's report goes: NULL for stdout (many images: a buffer, in order) */
} sources_args;

/* a->report, or stdout. */
static inline FILE *sources_report(const sources_args *a) { return a->report ? a->report : stdout; }

/* 0: parsed; 1: --help printed; 2: bad usage (message printed). Free a with sources_args_free in every case. */
int sources_parse(int argc, char **argv, sources_args *a);
void sources_args_free(sources_args *a);

/* The wall time of each step of one image in ms (--timings); a step not taken stays negative. */
typedef struct {
    double start;       /* tool_now_ms() when the image's work began (the command's start for one image) */
    double read;        /* one image: the whole read; many: what the image still waited for after reading ahead */
    int read_ahead;     /* the image was read while the one before it was processed */
    double mpi;         /* under MPI: libgpuws_mpi loaded and MPI started */
    double device;      /* the context's creation, on a thread while the file is read */
    double device_wait; /* ... of which the image waited for after its read */
    double scan;        /* NaN and infinite pixels counted, the mask made */
    double upload;      /* device buffers made, the image and mask written to them */
    double background, extract, extract_device, extract_host;
    double phot;     /* --phot-apertures */
    double find;     /* the workshop's gpuws_find_sources */
    double download; /* the maps read back */
    double table;    /* the catalogue's table, world coordinates included */
    double out[OUT_COUNT];
    double commit;         /* the outputs put in place */
    double written;        /* tool_now_ms() when they were (-1: not yet) */
    double release;        /* from then until the image's memory was released */
    double release_device; /* ... of which the device's context (-1: not in it) */
} sources_times;
void sources_times_init(sources_times *t, double start);
void sources_times_print(const sources_times *t, const char *image);

/* What the outputs are made of, whichever method made it. */
typedef struct {
    size_t w, h;
    const float *image;      /* host pixels (the overlay), or NULL */
    double lo;               /* the overlay's black level (NaN: the median) */
    const int32_t *labels;   /* or NULL */
    const float *back, *rms; /* extract's maps, or NULL */
    unsigned staged;         /* outputs (1 << k) already written into their staging files (by the MPI ranks) */
    const sky_wcs *wcs;      /* or NULL */
    const char *no_wcs;      /* why there is none (a warning when an output would carry world coordinates) */
    char *cards;             /* the input's WCS for the 2-D maps (malloc'd), or NULL */
    int ncards;
    catalog_column cols[40 + PHOT_MAX_COLUMNS];
    size_t ncols;
    const char *table_cards; /* the FITS table's header cards (or NULL) */
    int table_ncards;
    double *v; /* the catalogue: nrows x ncols, row-major (malloc'd) */
    size_t nrows;
    int units;             /* units in the CSV's header row */
    catalog_shape *shapes; /* nrows ellipses (malloc'd), and their strength (flux) for the overlay */
    double *strength;
    char title[600]; /* the regions file's header line */
} products;

/* The WCS, the flux unit and the maps' header cards of the image just read. */
void products_from_image(products *p, const fits_image *img, sky_wcs **wcs, char *why, size_t n, char *bunit,
                         size_t nb);
void products_free(products *p);
/* The catalogue's table, shapes and strengths: 0, or -1 when out of memory. */
int workshop_products(products *p, const gpuws_catalog *cat, const char *bunit);
void workshop_title(products *p, const sources_args *a, size_t n);
int extract_products(products *p, const gpuws_extract_catalog *cat, const phot_table *ph, const char *bunit);
/* Writes every requested output into its staging file, then puts them all in place; on any failure none. 0, or 1
 * with the reason on stderr. t (NULL for none) gets each output's time. */
int sources_write_outputs(const sources_args *a, const products *p, sources_times *t);

/* The contexts of one run: ctx[0] runs every step on the device; the workshop's host pipeline shares its labelling
 * bands between all of them (a GPUWS_DEVICE list; the extraction opens one). */
typedef struct {
    gpuws_context *ctx[64];
    size_t n;
} sources_contexts;

/* The device started on a thread while a file is read (its reading child forked first: the child gets no copy of
 * a thread in the middle of the device's start). */
typedef gpuws_status (*sources_device_maker)(void *user, sources_contexts *c);
typedef struct {
    pthread_t thread;
    int started;               /* the thread runs */
    sources_device_maker make; /* NULL: the devices of GPUWS_DEVICE (gpuws_contexts_create); else the caller's own */
    void *user;
    sources_contexts c;
    gpuws_status st;
    char why[1024]; /* the thread's gpuws_last_error() */
    double ms;
} sources_device;
void sources_device_begin(sources_device *d);
/* The same with the contexts that make(user, c) makes (under MPI: a rank's device by its rank on the host). */
void sources_device_begin_with(sources_device *d, sources_device_maker make, void *user);
/* Waits for the thread (or makes the contexts now when no thread started): t->device and t->device_wait set, d->st
 * and d->why its outcome, d->c its contexts. */
void sources_device_wait(sources_device *d, sources_times *t);
/* The contexts: the thread's, or made now when no thread started; t->device and t->device_wait set. 0, or 1 with
 * the reason on stderr. Destroy them with gpuws_contexts_destroy(c->ctx, c->n). */
int sources_device_end(sources_device *d, sources_contexts *c, sources_times *t);
/* The contexts are not wanted after all: the thread joined, its contexts destroyed. */
void sources_device_abandon(sources_device *d);

/* Reads one image (the device starting on a thread meanwhile), checks it, finds its sources and writes a's
 * outputs; start: tool_now_ms() at the command's start. 0, or 1 with the reason on stderr. */
int sources_run_image(const sources_args *a, double start);
/* What the many-images mode keeps from one image to the next of the same size, since fresh host memory costs a
 * page fault a page at its first touch and each device buffer an allocation: the scan's mask and the extraction's
 * device buffers (image, mask, background, rms, segmentation). Zeroed at first; sources_reuse_free at the end. */
typedef struct {
    size_t w, h;
    unsigned char *mask;
    gpuws_buffer *dev[5];
} sources_reuse;
void sources_reuse_free(sources_reuse *r);
/* An extraction between its steps: begun (its image on the device, its background made), then found and reported
 * (what its outputs are made from). */
typedef struct sources_pending sources_pending;
/* The same for an image read already, on the context of many images, its device work on stream (NULL: the default
 * stream); keep: what to reuse (NULL: nothing). pending NULL: every step and the outputs before it returns. Else,
 * for the extraction, only its steps up to the background: *pending (NULL when nothing is left, or on failure) goes
 * on with sources_pending_extract and then sources_pending_write, which img must outlive; --timings are printed
 * then. */
int sources_run_read(const sources_args *a, const fits_image *img, const sources_contexts *c, gpuws_stream *stream,
                     sources_times *t, sources_reuse *keep, sources_pending **pending);
/* The extraction's other steps and its report (p from sources_run_read): 0, or 1 with the reason on stderr and p
 * freed. */
int sources_pending_extract(sources_pending *p, const sources_args *a, const fits_image *img, sources_times *t);
/* Writes the outputs of p (a: the image's arguments, t: its times) and frees p. 0, or 1 with the reason on stderr. */
int sources_pending_write(sources_pending *p, const sources_args *a, sources_times *t);
/* The workshop's clipping, threshold, count and times in a's report (an image's or the demo's); host 1: the catalogue
 * is gpuws_find_sources_host's, its times the host clock's; 2: gpuws_find_sources' over several devices (the host
 * clock's, with the upload). */
void sources_print_workshop(const gpuws_catalog *cat, const sources_args *a, int host);
/* Whether the workshop's pipeline runs from host memory (gpuws_find_sources_host): --max-device-memory, or an image
 * whose image, mask and labels (9 bytes a pixel) take more than three quarters of ctx's device memory. */
int sources_use_host(const sources_args *a, gpuws_context *ctx, size_t w, size_t h);
/* gpuws_find_sources_host on host pixels, labelling in bands over c's devices within a's budget (a line per band on
 * stderr once the run takes more than a second); a budget below one band fails before any work. */
gpuws_status sources_find_host(const sources_args *a, const sources_contexts *c, const float *px, size_t w, size_t h,
                               gpuws_catalog **cat);
/* The five brightest sources into out. */
void sources_print_brightest(const gpuws_catalog *cat, FILE *out);
/* What an IMAGE read from the command line asks of the reader. */
fits_read_request sources_read_request(const sources_args *a);

/* One MPI rank's share of many images (tools/sources_mpi.c): images rank, rank + size, rank + 2 size, ... of the
 * command line's, each numbered among all in its progress line, on the contexts make(user) makes; the rank's count
 * of done and failed images comes back for the world's closing line. */
typedef struct {
    int rank, size;
    sources_device_maker make;
    void *user;
    size_t done, failed; /* out */
} sources_images_share;
/* Many images under --outdir: each one's outputs planned, computed and written all or none; a failing image is
 * reported and the rest processed. share: NULL for every image in this process (then a closing line "N images: D
 * done, F failed"), else one rank's share (the closing line is the caller's; a share of no image starts no
 * device). The exit code. */
int sources_run_many(sources_args *a, double start, sources_images_share *share);

/* The extraction's options from the command line for a w x h image: gpuws_extract's (no buffers) and the
 * background's (no mask). */
void sources_extract_options(const sources_args *a, size_t w, size_t h, gpuws_extract_options *eo,
                             gpuws_background_options *bo);
/* The report and the outputs of an extraction made elsewhere (rank 0 of `mpirun gpuws sources --method extract`):
 * img's header and size, pixels the whole image's (for --overlay; else NULL), cat, and the whole image's seg
 * (malloc'd; NULL where not asked for), both taken and freed; `staged` the outputs (1 << k) the ranks already wrote
 * into their staging files (the maps); ph (NULL: none) the apertures' table, taken (*ph zeroed). 0, or 1 with the
 * reason on stderr. */
int sources_extract_write(const sources_args *a, const fits_image *img, const float *pixels, gpuws_extract_catalog *cat,
                          int32_t *seg, unsigned staged, phot_table *ph, const gpuws_background_result *br,
                          sources_times *t);

/* The MPI world's size from the launcher's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE), or -1 without one. */
int sources_mpi_size(void);
/* gpuws sources as one rank of that world (tools/sources_mpi.c): the command line parsed, checked to be every
 * rank's, and run over every rank's rows; rank 0 writes the outputs. The exit code, the same on every rank. */
int sources_run_mpi(int argc, char **argv, double start);

#endif
