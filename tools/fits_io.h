/* FITS images through cfitsio, for the command-line tools (convolve, sources, ...).
 *
 * Reading picks the first HDU holding a 2-D image (the primary array or an IMAGE/compressed-image extension), or
 * the HDU asked for; axes of length 1 beyond the second are dropped (radio images often carry degenerate frequency
 * and Stokes axes); an image with longer axes beyond the second is read one plane at a time, the plane asked for
 * (plane k = the axes after the second flattened, first axis fastest), and refused when none is asked for.
 * BSCALE/BZERO are applied and BLANK pixels of integer images become NaN (cfitsio does both); pixels come back as
 * float or double, row-major, row 0 first (FITS row 1 = y = 1 at the bottom of a displayed image). */
#ifndef GPUWS_FITS_IO_H
#define GPUWS_FITS_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    size_t width, height; /* NAXIS1, NAXIS2 */
    int is_double;        /* data is double (else float) */
    void *data;           /* width * height elements; free with fits_image_free */
    size_t mapped;        /* data is shared memory the reading process wrote (this many bytes mapped); 0: malloc'd */
    int hdu;              /* 1-based HDU the image came from */
    int bitpix;           /* the file's BITPIX */
    int naxis;            /* the HDU's NAXIS (2 or more) */
    long long plane;      /* the plane read (0 for a 2-D image) */
    long long nplanes;    /* planes in the HDU (1 for a 2-D image or degenerate axes) */
    char *header;         /* fits_read_image_at with want_header: the HDU's header, 80-character cards without
                             comments, NUL-terminated (malloc'd; else NULL) */
    int nkeys;            /* cards in header */
    size_t row0, rows;    /* fits_read_rows: data holds rows [row0, row0 + rows) of the height; else 0, 0 */
} fits_image;

/* Which HDU and plane fits_read_image_at reads. */
typedef struct {
    int hdu;         /* 1-based; 0: the first HDU with a 2-D image */
    long long plane; /* -1: none asked for (only 2-D images, or longer axes of length 1) */
    int want_header; /* also return the header (for the WCS) */
} fits_read_request;
#define FITS_READ_REQUEST_INIT                                                                                         \
    {                                                                                                                  \
        0, -1, 0                                                                                                       \
    }

/* 0 on success. On failure returns -1 and writes a one-line reason to err (file missing, a directory or FIFO, not
 * FITS, truncated in the data or in a later HDU's header, no 2-D image, BSCALE or BZERO not a finite number or
 * BSCALE 0, too large, ...); img is left zeroed and nothing is allocated.
 * want_double: 1 reads as double, 0 as float, -1 picks double for BITPIX -64 and 64 and float otherwise, -2 picks
 * float only where it holds every value exactly (BITPIX -32, and 8 and 16 without scaling) and double otherwise. */
int fits_read_image(const char *path, int want_double, fits_image *img, char *err, size_t errlen);
/* The same, for the HDU and plane in req (NULL: as fits_read_image). Further errors: no HDU req->hdu, a table
 * there, an image of fewer than 2 axes there, several planes and none asked for, a plane past the last. */
int fits_read_image_at(const char *path, int want_double, const fits_read_request *req, fits_image *img, char *err,
                       size_t errlen);
void fits_image_free(fits_image *img);
/* Frees the pixels alone (data NULL after it); the header and the description stay until fits_image_free. */
void fits_image_free_pixels(fits_image *img);

/* Picks the rows [*row0, *row0 + *rows) of a width x height image that fits_read_rows reads, once the header gives
 * the size (the rows of one MPI rank: tools/sources_mpi.c). */
typedef void (*fits_rows_chooser)(void *user, size_t width, size_t height, size_t *row0, size_t *rows);
/* fits_read_image_at's read of only the rows choose picks, in this process (no reading child): img->data holds
 * img->rows x width pixels from row img->row0 on (not NULL when it holds none), width and height are the whole
 * image's. Full rows are consecutive pixels in the file, so the read is one run from the first row's first pixel
 * (cfitsio's fits_read_pixll; the raw big-endian floats read straight), with the same HDU and plane choice,
 * checks and errors as the whole read (the file must hold the whole image), BSCALE/BZERO applied and BLANK pixels
 * NaN as there. */
int fits_read_rows(const char *path, int want_double, const fits_read_request *req, fits_rows_chooser choose,
                   void *user, fits_image *img, char *err, size_t errlen);

/* The same read in two halves, so that the caller works while the file is read (the device starting, the image
 * before it on the device): fits_read_start starts the reading process and returns at once, fits_read_finish waits
 * for it and returns what fits_read_image_at would. Every started read is finished or abandoned, on the thread
 * that started it; path and req are not copied: they stay valid until then. When the child cannot be started (or
 * with the knob fits_in_process=1) the file is read in this process, by fits_read_finish. */
typedef struct {
    const char *path; /* the rest is private */
    int want_double;
    fits_read_request req;
    pid_t pid;    /* the reading process, or 0: read by fits_read_finish */
    int reply_fd; /* the child's reply and header */
    int pixel_fd; /* the shared memory the child reads the pixels into */
    int served;   /* ordered from the kept reading process instead */
} fits_reading;
void fits_read_start(fits_reading *r, const char *path, int want_double, const fits_read_request *req);
int fits_read_finish(fits_reading *r, fits_image *img, char *err, size_t errlen);
/* Stops a started read and releases what it holds (the caller no longer wants the image). */
void fits_read_abandon(fits_reading *r);
/* Whether the next fits_read_start forks: no kept reading process (none yet, or its last read crashed it), or it is
 * busy. A fork while another thread allocates can leave the child waiting forever on an allocator lock that the
 * fork copied taken (AddressSanitizer's allocator, unlike glibc's malloc, does not hold its locks across fork), so
 * a caller whose own threads allocate lets them finish first. */
int fits_read_forks(void);

/* Creates the file `path`, which must not exist (nothing is ever replaced, written through or removed but the file
 * this call created), with one 2-D image of float (BITPIX -32), double (-64) or int32 (32). On failure (a file that
 * the system cut short included, which cfitsio does not see) the file is removed. The commands write into a staging
 * path and put it in place with tools/output_files.h. */
typedef enum { FITS_F32, FITS_F64, FITS_I32 } fits_pixel_type;
int fits_write_image(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height, char *err,
                     size_t errlen);
/* The same with header cards added (ncards of 80 characters each, e.g. the input's WCS; NULL for none). */
int fits_write_image_cards(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height,
                           const char *cards, int ncards, char *err, size_t errlen);
/* Rows written in place by several writers (the MPI ranks' maps: tools/sources_mpi.c), none holding the whole image:
 * fits_write_image_shell creates `path`, which must not exist, as fits_write_image_cards would with every pixel 0
 * (the data unit made by extending the file: sparse where the file system allows) and gives the data unit's byte
 * offset in *data_at; each writer then puts its rows with fits_write_rows. 0, or -1 with the reason in err (the file
 * removed). */
int fits_write_image_shell(const char *path, fits_pixel_type type, size_t width, size_t height, const char *cards,
                           int ncards, uint64_t *data_at, char *err, size_t errlen);
/* Rows row0 .. row0 + rows - 1 of the width x height image (rows x width pixels of type at data) into the file
 * fits_write_image_shell made (data_at its data unit's offset), opened for writing, never created nor truncated.
 * 0; -1 with the reason in err; -2 with the reason in err when `path` is not, as this process sees it, that file (no
 * such file, or not a regular file of its size): a process on another host than the one that made it. */
int fits_write_rows(const char *path, uint64_t data_at, fits_pixel_type type, const void *data, size_t width,
                    size_t height, size_t row0, size_t rows, char *err, size_t errlen);
/* The data size from which an image's pixels are written by gpuws (byte-swapped on every core, in large blocks)
 * after cfitsio wrote its header, instead of by cfitsio (28800 bytes at a time on one core); the same bytes. The
 * previous value is returned; tests lower it to write small images both ways. */
size_t fits_write_raw_from(size_t bytes);

/* Creates the file `path`, which must not exist, with an empty primary array and one binary table (EXTNAME
 * extname) of ncols columns of nrows rows: values row-major; a column with integer[c] is 64-bit integers (TFORM K),
 * else doubles (D); units[c] becomes TUNITn when not empty. cards (ncards of 80 characters, NULL for none) go into
 * the table's header. On failure (a file cut short included) the file is removed. */
int fits_write_table(const char *path, const char *extname, size_t ncols, const char *const *names,
                     const char *const *units, const int *integer, size_t nrows, const double *values,
                     const char *cards, int ncards, char *err, size_t errlen);

/* True when gpuws was built with cfitsio; otherwise every call above fails with a message saying so. */
int fits_available(void);

#endif
