#define _GNU_SOURCE /* memfd_create */
#include "fits_io.h"

#include "core/tuning.h"
#include "parallel.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GPUWS_HAVE_CFITSIO
#include <fitsio.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

int fits_available(void) { return 1; }

static int fail(char *err, size_t n, const char *path, const char *what, int status)
{
    char msg[FLEN_ERRMSG] = "";
    if (status) fits_get_errstatus(status, msg);
    snprintf(err, n, "%s: %s%s%s", path, what, status ? ": " : "", msg);
    return -1;
}

/* Moves to the first HDU holding an image of >= 2 axes: 0 if found, 1 if there is none, -1 if HDU *hdu cannot be read
 * (*status says why). HDUs are visited until cfitsio finds no more: fits_get_num_hdus counts only those it has
 * already walked past, and misses one whose header or data the file cuts short. */
static int find_image(fitsfile *f, int *naxis, long long dims[9], int *hdu, int *status)
{
    for (int h = 1;; h++) {
        int type;
        *hdu = h;
        if (fits_movabs_hdu(f, h, &type, status)) {
            if (*status != END_OF_FILE || h == 1) return -1;
            *status = 0;
            return 1;
        }
        if (type != IMAGE_HDU) continue;
        int bitpix;
        if (fits_get_img_paramll(f, 9, &bitpix, naxis, dims, status)) return -1;
        if (*naxis >= 2) return 0;
    }
}

/* HDU hdu (> 1) could not be read. Returns 0 when the bytes after HDU hdu - 1 are not an extension header (the
 * standard allows such trailing records: there is no HDU hdu); 1, with the reason in what, when they are one that
 * the file cuts short (no END card, or END in a 2880-byte block the file does not complete); 2 otherwise. */
static int header_cut_short(fitsfile *f, const char *path, int hdu, char *what, size_t n)
{
    int type, status = 0;
    LONGLONG head = 0, start = 0, end = 0;
    struct stat sb;
    if (hdu < 2 || fits_movabs_hdu(f, hdu - 1, &type, &status) || fits_get_hduaddrll(f, &head, &start, &end, &status) ||
        stat(path, &sb) != 0 || sb.st_size <= end)
        return 2;
    FILE *in = fopen(path, "rb");
    char card[80];
    long cards = 0;
    bool header = false, ended = false;
    if (in && fseeko(in, (off_t)end, SEEK_SET) == 0) {
        while (!ended && fread(card, 1, 80, in) == 80) {
            if (cards++ == 0) header = !strncmp(card, "XTENSION= ", 10);
            ended = !strncmp(card, "END     ", 8);
        }
    }
    if (in) fclose(in);
    const long long block_end = (long long)end + (cards * 80 + 2879) / 2880 * 2880;
    if (!header) return 0;
    if (ended && sb.st_size >= block_end) return 2;
    snprintf(what, n, "truncated: the header of HDU %d (from byte %lld) %s; the file ends after %lld bytes", hdu,
             (long long)end, ended ? "ends in a 2880-byte block the file does not complete" : "has no END card",
             (long long)sb.st_size);
    return 1;
}

/* BSCALE and BZERO must be finite numbers, BSCALE non-zero (FITS standard 4.0, section 5.3). cfitsio ignores a value
 * it cannot use (BZERO = 'x', BSCALE = 'NaN' or NaN: the raw pixels come back) and applies BSCALE = 0 (every pixel
 * becomes BZERO); astropy refuses all of these, and so does this reader. 0 when both are absent or valid. */
static int check_scaling(fitsfile *f, int hdu, char *what, size_t n)
{
    static const char *const keys[] = { "BSCALE", "BZERO" };
    for (int k = 0; k < 2; k++) {
        char value[FLEN_VALUE] = "", comment[FLEN_COMMENT];
        int status = 0;
        if (fits_read_keyword(f, keys[k], value, comment, &status) == KEY_NO_EXIST) continue;
        double v = NAN;
        if (!status && value[0] != '\'') fits_read_key(f, TDOUBLE, keys[k], &v, NULL, &status);
        if (value[0] == '\'')
            snprintf(what, n, "HDU %d: %s = %s is a string; FITS requires a number", hdu, keys[k], value);
        else if (status || !isfinite(v))
            snprintf(what, n, "HDU %d: %s = %s is not a finite number", hdu, keys[k], value);
        else if (k == 0 && v == 0)
            snprintf(what, n,
                     "HDU %d: BSCALE = %s is zero (every pixel would be BZERO); FITS requires a non-zero "
                     "scale",
                     hdu, value);
        else continue;
        return -1;
    }
    return 0;
}

/* BSCALE/BZERO applied; BLANK pixels of integer images become NaN. Floating-point pixels are passed through as they
 * are: cfitsio's null check counts +-Inf as undefined too and would turn them into NaN. */
static void read_pixels(fitsfile *f, int bitpix, int dbl, int naxis, const long long dims[9], long long plane,
                        size_t row0, size_t n, void *data, int *status)
{
    long long first[9];
    for (int i = 0; i < 9; i++) first[i] = 1;
    first[1] = (long long)row0 + 1; /* whole rows are consecutive pixels: n of them from the first of row row0 */
    for (int i = 2; i < naxis && i < 9; i++) /* the plane's index along each axis after the second */
        first[i] = plane % dims[i] + 1, plane /= dims[i];
    int anynul = 0;
    if (dbl) {
        double nanv = 0.0 / 0.0;
        fits_read_pixll(f, TDOUBLE, first, (LONGLONG)n, bitpix < 0 ? NULL : &nanv, data, &anynul, status);
    } else {
        float nanv = 0.0f / 0.0f;
        fits_read_pixll(f, TFLOAT, first, (LONGLONG)n, bitpix < 0 ? NULL : &nanv, data, &anynul, status);
    }
}

/* Uncompressed 32-bit floats read as floats without scaling are the file's bytes in big-endian order: those are
 * read straight into the pixels and put in this machine's order on every core, where cfitsio reads and swaps them
 * in one thread. What it gives is the same, bit for bit (NaN payloads included). */
static bool raw_floats(fitsfile *f, int bitpix, int dbl, int compressed)
{
    if (compressed || bitpix != FLOAT_IMG || dbl) return false;
    double scale = 1, zero = 0;
    int status = 0;
    if (fits_read_key(f, TDOUBLE, "BSCALE", &scale, NULL, &status) == KEY_NO_EXIST) status = 0, scale = 1;
    if (!status && fits_read_key(f, TDOUBLE, "BZERO", &zero, NULL, &status) == KEY_NO_EXIST) status = 0, zero = 0;
    return !status && scale == 1 && zero == 0;
}

typedef struct {
    int fd;
    off_t at; /* the first pixel's byte in the file */
    uint32_t *data;
    int failed[64];
} raw_job;

static void read_raw_range(void *user, size_t part, size_t lo, size_t hi)
{
    raw_job *j = user;
    char *to = (char *)(j->data + lo);
    size_t left = (hi - lo) * sizeof *j->data;
    off_t at = j->at + (off_t)(lo * sizeof *j->data);
    while (left) {
        const ssize_t k = pread(j->fd, to, left, at);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return (void)(j->failed[part] = 1);
        to += k, at += k, left -= (size_t)k;
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (size_t i = lo; i < hi; i++) j->data[i] = __builtin_bswap32(j->data[i]);
#endif
}

/* n floats of the current HDU's data from its pixel `first` on into data; a cfitsio status (READ_ERROR when the file
 * is short). */
static void read_raw_floats(fitsfile *f, const char *path, size_t first, size_t n, void *data, int *status)
{
    LONGLONG head = 0, start = 0, end = 0;
    if (fits_get_hduaddrll(f, &head, &start, &end, status)) return;
    raw_job j = { open(path, O_RDONLY | O_CLOEXEC), (off_t)start + (off_t)first * 4, data, { 0 } };
    if (j.fd < 0) return (void)(*status = FILE_NOT_OPENED);
    const size_t parts = tool_parts(n, (size_t)1 << 20);
    tool_parallel(n, parts, read_raw_range, &j);
    close(j.fd);
    for (size_t k = 0; k < parts; k++)
        if (j.failed[k]) *status = READ_ERROR;
}

/* The HDU asked for: 0 when it holds an image of >= 2 axes (the file is there); 1 with the reason in what when it is
 * missing, a table, or an image of fewer axes; -1 when it cannot be read (*status says why). */
static int goto_hdu(fitsfile *f, const char *path, int want, int *naxis, long long dims[9], int *status, char *what,
                    size_t n)
{
    int type, bitpix;
    if (fits_movabs_hdu(f, want, &type, status)) {
        if (*status != END_OF_FILE || want == 1) return -1;
        if (header_cut_short(f, path, want, what, n) == 1) return 1;
        int count = 0, s2 = 0;
        *status = 0;
        fits_get_num_hdus(f, &count, &s2);
        snprintf(what, n, "there is no HDU %d: the file has %d", want, count);
        return 1;
    }
    if (type != IMAGE_HDU) {
        snprintf(what, n, "HDU %d is %s, not an image", want, type == BINARY_TBL ? "a binary table" : "an ASCII table");
        return 1;
    }
    if (fits_get_img_paramll(f, 9, &bitpix, naxis, dims, status)) return -1;
    if (*naxis < 2) {
        snprintf(what, n, "HDU %d holds no 2-D image (NAXIS = %d)", want, *naxis);
        return 1;
    }
    return 0;
}

/* Where read_here puts the pixels: malloc'd memory in this process, shared memory in the reading child. */
typedef struct {
    void *(*alloc)(size_t bytes, void *user); /* NULL when there is no memory for them */
    void (*release)(void *data, size_t bytes, void *user);
    void *user;
} pixel_store;

static void *heap_alloc(size_t bytes, void *user)
{
    (void)user;
    return malloc(bytes);
}

static void heap_release(void *data, size_t bytes, void *user)
{
    (void)bytes, (void)user;
    free(data);
}

static const pixel_store heap_store = { heap_alloc, heap_release, NULL };

/* Which rows read_here reads (fits_read_rows); NULL: all. */
typedef struct {
    fits_rows_chooser choose;
    void *user;
} rows_pick;

static int read_here(const char *path, int want_double, const fits_read_request *req, fits_image *img, char *err,
                     size_t errlen, const pixel_store *store, const rows_pick *pick)
{
    memset(img, 0, sizeof *img);
    if (!path) return fail(err, errlen, "(null)", "no file name", 0);
    fitsfile *f = NULL;
    int status = 0;
    /* cfitsio says "error reading from FITS file" of a directory, and opening a FIFO blocks until someone writes */
    struct stat in_sb;
    if (stat(path, &in_sb) == 0 && !S_ISREG(in_sb.st_mode))
        return fail(err, errlen, path,
                    S_ISDIR(in_sb.st_mode)    ? "is a directory, not a FITS file"
                    : S_ISFIFO(in_sb.st_mode) ? "is a FIFO, not a regular file"
                                              : "is not a regular file",
                    0);
    /* diskfile: the name is taken literally, never parsed as cfitsio's extended syntax ("file.fits[1]") */
    if (fits_open_diskfile(&f, path, READONLY, &status)) return fail(err, errlen, path, "cannot open as FITS", status);
    int naxis = 0, hdu = req->hdu;
    long long dims[9] = { 0 };
    char reason[240];
    if (req->hdu > 0) {
        const int g = goto_hdu(f, path, req->hdu, &naxis, dims, &status, reason, sizeof reason);
        if (g) {
            int s2 = 0;
            fits_close_file(f, &s2);
            if (g < 0) snprintf(reason, sizeof reason, "unreadable header of HDU %d", req->hdu);
            return fail(err, errlen, path, reason, g < 0 ? status : 0);
        }
    }
    int r = req->hdu > 0 ? 0 : find_image(f, &naxis, dims, &hdu, &status);
    if (r != 0 || check_scaling(f, hdu, reason, sizeof reason)) {
        const int after = r < 0 && hdu > 1 ? header_cut_short(f, path, hdu, reason, sizeof reason) : 2;
        if (r > 0 || (r < 0 && after == 0)) snprintf(reason, sizeof reason, "no 2-D image in any HDU");
        else if (r < 0 && after == 2) snprintf(reason, sizeof reason, "unreadable header of HDU %d", hdu);
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, reason, r < 0 && after == 2 ? status : 0);
    }
    /* planes: the axes after the second, flattened */
    long long nplanes = 1, plane = req->plane < 0 ? 0 : req->plane;
    int longer = 0; /* the first axis after the second longer than 1 (1-based), or 0 */
    for (int i = 2; i < naxis && i < 9; i++) {
        if (dims[i] <= 0) {
            nplanes = 0;
            break;
        }
        if (dims[i] > 1 && !longer) longer = i + 1;
        nplanes = nplanes > (1LL << 62) / dims[i] ? (1LL << 62) : nplanes * dims[i];
    }
    if (nplanes && (nplanes > 1 || req->plane > 0) && (req->plane < 0 || plane >= nplanes)) {
        int s2 = 0;
        fits_close_file(f, &s2);
        char what[240];
        if (req->plane < 0)
            snprintf(what, sizeof what,
                     "HDU %d is a %d-D image (axis %d has length %lld): choose one of its %lld planes with --plane "
                     "(0 to %lld)",
                     hdu, naxis, longer, dims[longer - 1], nplanes, nplanes - 1);
        else
            snprintf(what, sizeof what, "HDU %d has %lld plane%s (0 to %lld): there is no plane %lld", hdu, nplanes,
                     nplanes == 1 ? "" : "s", nplanes - 1, plane);
        return fail(err, errlen, path, what, 0);
    }
    if (dims[0] <= 0 || dims[1] <= 0 || !nplanes) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, "image has a zero-length axis", 0);
    }
    int bitpix = 0, equiv = 0;
    fits_get_img_type(f, &bitpix, &status);
    fits_get_img_equivtype(f, &equiv, &status);
    const bool exact_float = equiv == BYTE_IMG || equiv == SBYTE_IMG || equiv == SHORT_IMG || equiv == USHORT_IMG ||
                             (bitpix == FLOAT_IMG && equiv == FLOAT_IMG);
    int dbl = want_double == -2 ? !exact_float
              : want_double < 0 ? (equiv == DOUBLE_IMG || equiv == LONGLONG_IMG)
                                : want_double;
    size_t w = (size_t)dims[0], h = (size_t)dims[1], es = dbl ? sizeof(double) : sizeof(float);
    if ((unsigned long long)dims[0] > ((size_t)-1) / (size_t)dims[1] / es) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, "image too large for this machine's address space", 0);
    }
    size_t row0 = 0, rows = h;
    if (pick) pick->choose(pick->user, w, h, &row0, &rows);
    if (row0 > h || rows > h - row0) {
        int s2 = 0;
        fits_close_file(f, &s2);
        char what[160];
        snprintf(what, sizeof what, "rows %zu to %zu asked of an image of %zu rows", row0, row0 + rows, h);
        return fail(err, errlen, path, what, 0);
    }
    size_t bytes = w * rows * es;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && bytes / (size_t)psize > (size_t)pages) {
        int s2 = 0;
        fits_close_file(f, &s2);
        char what[160];
        snprintf(what, sizeof what, "the %zu x %zu image needs %zu bytes, more than this machine's memory", w, h,
                 bytes);
        return fail(err, errlen, path, what, 0);
    }
    int compressed = fits_is_compressed_image(f, &status);
    if (!compressed && !status) {
        /* the header alone can claim any size: check the file holds the pixels before allocating for them */
        LONGLONG head = 0, start = 0, end = 0;
        struct stat sb;
        fits_get_hduaddrll(f, &head, &start, &end, &status);
        size_t bpp = (size_t)(bitpix < 0 ? -bitpix : bitpix) / 8, avail = 0;
        if (!status && stat(path, &sb) == 0 && sb.st_size > start) avail = (size_t)(sb.st_size - start);
        const size_t upto = (size_t)plane + 1 > ((size_t)-1) / (w * h) ? (size_t)-1 : ((size_t)plane + 1) * w * h;
        if (!status && avail / (bpp ? bpp : 1) < upto) {
            int s2 = 0;
            fits_close_file(f, &s2);
            char what[200];
            snprintf(what, sizeof what,
                     "truncated: the header declares a %zu x %zu image of BITPIX %d but the file ends after %lld bytes",
                     w, h, bitpix, (long long)sb.st_size);
            return fail(err, errlen, path, what, 0);
        }
    }
    void *data = status ? NULL : store->alloc(bytes ? bytes : es, store->user); /* no rows: still not NULL */
    if (!data) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, status ? "unreadable header" : "out of memory for the pixels", status);
    }
    if (!rows) {
    } else if (raw_floats(f, bitpix, dbl, compressed)) {
        read_raw_floats(f, path, (size_t)plane * w * h + row0 * w, w * rows, data, &status);
    } else {
        read_pixels(f, bitpix, dbl, naxis, dims, plane, row0, w * rows, data, &status);
    }
    char *header = NULL;
    int nkeys = 0;
    if (!status && req->want_header) { /* a compressed image's header as the image it holds, not as the table */
        char *hs = NULL;
        if (compressed) fits_convert_hdr2str(f, 1, NULL, 0, &hs, &nkeys, &status);
        else fits_hdr2str(f, 1, NULL, 0, &hs, &nkeys, &status);
        if (!status && !(header = hs ? strdup(hs) : NULL)) status = MEMORY_ALLOCATION;
        int s3 = 0;
        if (hs) fits_free_memory(hs, &s3);
    }
    int s2 = 0;
    fits_close_file(f, &s2);
    if (status) {
        store->release(data, bytes ? bytes : es, store->user);
        free(header);
        return fail(err, errlen, path,
                    compressed ? "decompressing the pixels failed (corrupt compressed image?)"
                               : "reading the pixels failed (truncated file?)",
                    status);
    }
    img->width = w;
    img->height = h;
    img->is_double = dbl;
    img->data = data;
    img->hdu = hdu;
    img->bitpix = bitpix;
    img->naxis = naxis;
    img->plane = plane;
    img->nplanes = nplanes;
    img->header = header;
    img->nkeys = header ? nkeys : 0;
    if (pick) img->row0 = row0, img->rows = rows;
    return 0;
}

/* cfitsio 4.2 crashes on some corrupt files (found by fuzz/fuzz_fits: an integer division by zero while parsing a
 * tile-compressed image's header, out-of-bounds reads in the Rice decoder), so the file is read in a child process:
 * a crash there is a "corrupt file" error here, not the end of the caller. The child reads the pixels straight into
 * shared memory (a memfd: no name anywhere, and not bounded by the size of /dev/shm), which the caller then maps, so
 * the pixels are never copied on their way. The kept reading process (below) makes that memory itself and sends it
 * back with the reply and the header over a socket; a child of one read gets it made before the fork and answers
 * through a pipe. If no child can be started, or with the knob fits_in_process=1 (GPUWS_TUNING), the file is read
 * in this process. */
typedef struct {
    int rc, is_double, hdu, bitpix, naxis, nkeys;
    long long plane, nplanes;
    size_t width, height, header_len; /* header_len: the header's bytes after this reply, without its NUL */
    char err[512];
} read_reply;

static void die_quietly(int sig) { _exit(128 + sig); }

/* The reply's description of the image read (rc set already). */
static void describe(read_reply *rep, const fits_image *im)
{
    rep->is_double = im->is_double, rep->hdu = im->hdu, rep->bitpix = im->bitpix, rep->width = im->width;
    rep->height = im->height, rep->naxis = im->naxis, rep->nkeys = im->nkeys, rep->plane = im->plane;
    rep->nplanes = im->nplanes, rep->header_len = im->header ? strlen(im->header) : 0;
}

static bool xfer(int fd, void *p, size_t n, bool out)
{
    char *c = p;
    while (n) {
        ssize_t k = out ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

/* Shared memory for the child's pixels, closed on exec; -1 when there is none. */
static int shared_memory_fd(void)
{
#ifdef __linux__
    return memfd_create("gpuws-fits-pixels", MFD_CLOEXEC);
#else
    static _Atomic unsigned serial;
    char name[64];
    snprintf(name, sizeof name, "/gpuws-fits-%ld-%u", (long)getpid(), serial++);
    const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) shm_unlink(name); /* the open descriptor is all that is needed: nothing is left to clean up */
    return fd;
#endif
}

/* The child's pixel store: the shared memory, sized and mapped once the header gives the size. The memory is taken
 * at once (posix_fallocate), so that running out of it is "out of memory" here rather than SIGBUS in cfitsio. */
static void *shared_alloc(size_t bytes, void *user)
{
    const int fd = *(const int *)user;
    if (bytes > (size_t)INT64_MAX || ftruncate(fd, (off_t)bytes) != 0 || posix_fallocate(fd, 0, (off_t)bytes) != 0)
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void shared_release(void *data, size_t bytes, void *user)
{
    (void)user;
    if (data) munmap(data, bytes);
}

static _Noreturn void read_in_child(const fits_reading *r, int out)
{
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], die_quietly);
    read_reply rep;
    memset(&rep, 0, sizeof rep);
    fits_image im;
    const pixel_store store = { shared_alloc, shared_release, (void *)&r->pixel_fd };
    rep.rc = read_here(r->path, r->want_double, &r->req, &im, rep.err, sizeof rep.err, &store, NULL);
    describe(&rep, &im);
    const bool ok =
        xfer(out, &rep, sizeof rep, true) && (rep.rc || !rep.header_len || xfer(out, im.header, rep.header_len, true));
    _exit(ok ? 0 : 1);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* ---- the kept reading process ----
 * A fork copies the caller's page tables, and until the child ends each page that either side writes is copied:
 * forked for every image of a run on many, while the image before is on the device and its host steps write their
 * memory, that costs milliseconds an image. So one reading process serves the reads one after the other: forked at
 * the first read (before the device and the host steps have mapped much), it reads each file into shared memory of
 * its own, sends that back over a socket (SCM_RIGHTS) with the reply and the header, and ends when the socket
 * closes (the caller's exit). A crash (a corrupt file) ends it, and the next read forks a new one. A read started
 * while another is out to it gets a child of its own, as before. */
typedef struct {
    int want_double;
    fits_read_request req;
    size_t path_len;
} read_order;

static struct {
    pthread_mutex_t lock;
    pid_t pid; /* 0: none */
    int sock;  /* this side of its socket */
    int busy;  /* a read is out to it */
} keeper = { PTHREAD_MUTEX_INITIALIZER, 0, -1, 0 };

static bool send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        const ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        c += k, n -= (size_t)k;
    }
    return true;
}

/* A socket message of n bytes at p with room for one descriptor. */
typedef struct {
    struct msghdr m;
    struct iovec io;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
} fd_message;

static void fd_message_init(fd_message *f, void *p, size_t n)
{
    memset(f, 0, sizeof *f);
    f->io.iov_base = p, f->io.iov_len = n;
    f->m.msg_iov = &f->io, f->m.msg_iovlen = 1;
    f->m.msg_control = f->u.buf, f->m.msg_controllen = sizeof f->u.buf;
}

/* The reply, with the pixels' shared memory (fd >= 0) attached to its first byte. */
static bool send_reply(int sock, read_reply *rep, int fd)
{
    fd_message f;
    fd_message_init(&f, rep, sizeof *rep);
    if (fd < 0) {
        f.m.msg_control = NULL, f.m.msg_controllen = 0;
    } else {
        struct cmsghdr *cm = CMSG_FIRSTHDR(&f.m);
        cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    ssize_t k;
    while ((k = sendmsg(sock, &f.m, MSG_NOSIGNAL)) < 0 && errno == EINTR) continue;
    return k > 0 && send_all(sock, (const char *)rep + k, sizeof *rep - (size_t)k);
}

/* The reply and the descriptor that came with it (-1: none); false when the socket closed first. */
static bool recv_reply(int sock, read_reply *rep, int *fd)
{
    char *c = (char *)rep;
    size_t n = sizeof *rep;
    *fd = -1;
    while (n) {
        fd_message f;
        fd_message_init(&f, c, n);
        const ssize_t k = recvmsg(sock, &f.m, MSG_CMSG_CLOEXEC);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&f.m); cm; cm = CMSG_NXTHDR(&f.m, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && *fd < 0)
                memcpy(fd, CMSG_DATA(cm), sizeof *fd);
        c += k, n -= (size_t)k;
    }
    if (n) close_fd(fd);
    return n == 0;
}

static _Noreturn void serve_reads(int sock)
{
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], die_quietly);
    for (;;) {
        read_order o;
        if (!xfer(sock, &o, sizeof o, false)) _exit(0); /* the caller is done */
        char *path = o.path_len < PATH_MAX ? malloc(o.path_len + 1) : NULL;
        if (!path || !xfer(sock, path, o.path_len, false)) _exit(1);
        path[o.path_len] = 0;
        read_reply rep;
        memset(&rep, 0, sizeof rep);
        fits_image im;
        memset(&im, 0, sizeof im);
        int pfd = shared_memory_fd();
        const pixel_store store = { shared_alloc, shared_release, (void *)&pfd };
        if (pfd < 0) rep.rc = -1, snprintf(rep.err, sizeof rep.err, "%s: no shared memory for the pixels", path);
        else rep.rc = read_here(path, o.want_double, &o.req, &im, rep.err, sizeof rep.err, &store, NULL);
        describe(&rep, &im);
        const bool ok = send_reply(sock, &rep, rep.rc ? -1 : pfd) &&
                        (rep.rc || !rep.header_len || send_all(sock, im.header, rep.header_len));
        if (!rep.rc) { /* the mapping read_here made (shared_alloc): the caller maps its own */
            const size_t es = im.is_double ? sizeof(double) : sizeof(float), bytes = im.width * im.height * es;
            munmap(im.data, bytes ? bytes : es);
        }
        free(im.header);
        free(path);
        close_fd(&pfd);
        if (!ok) _exit(1);
    }
}

/* A fork of the caller (another read's child) has no use for the kept process's socket. */
static void keeper_forget(void)
{
    if (keeper.sock >= 0) close(keeper.sock);
    keeper.pid = 0, keeper.sock = -1, keeper.busy = 0;
}

static void keeper_atfork_once(void) { pthread_atfork(NULL, NULL, keeper_forget); }

/* Under keeper.lock: a kept process started; false when none could be. */
static bool keeper_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, keeper_atfork_once);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        serve_reads(sv[1]);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return false;
    }
    keeper.pid = pid, keeper.sock = sv[0], keeper.busy = 0;
    return true;
}

/* Under keeper.lock: the kept process ended (killed first when kill_it) and waited for; its status in *ws. */
static void keeper_end(int kill_it, int *ws)
{
    int status = 0;
    if (keeper.pid > 0) {
        if (kill_it) kill(keeper.pid, SIGKILL);
        close_fd(&keeper.sock);
        while (waitpid(keeper.pid, &status, 0) < 0 && errno == EINTR) continue;
    }
    close_fd(&keeper.sock);
    keeper.pid = 0, keeper.busy = 0;
    if (ws) *ws = status;
}

/* The read ordered from the kept process (started first when there is none); false when it is busy or cannot be
 * had. */
static bool keeper_order(const fits_reading *r)
{
    bool sent = false;
    pthread_mutex_lock(&keeper.lock);
    for (int attempt = 0; !keeper.busy && !sent && attempt < 2; attempt++) {
        if (!keeper.pid && !keeper_start()) break;
        read_order o;
        memset(&o, 0, sizeof o); /* its padding too: the bytes go to another process */
        o.want_double = r->want_double, o.path_len = strlen(r->path);
        o.req.hdu = r->req.hdu, o.req.plane = r->req.plane, o.req.want_header = r->req.want_header;
        sent = send_all(keeper.sock, &o, sizeof o) && send_all(keeper.sock, r->path, o.path_len);
        if (!sent) keeper_end(1, NULL); /* it ended since its last read: a new one */
    }
    if (sent) keeper.busy = 1;
    pthread_mutex_unlock(&keeper.lock);
    return sent;
}

int fits_read_forks(void)
{
    gpuws__tuning t;
    gpuws__tuning_from_env(&t);
    if (t.fits_in_process) return 0;
    pthread_mutex_lock(&keeper.lock);
    const int forks = keeper.pid == 0 || keeper.busy;
    pthread_mutex_unlock(&keeper.lock);
    return forks;
}

void fits_read_start(fits_reading *r, const char *path, int want_double, const fits_read_request *req)
{
    static const fits_read_request first = FITS_READ_REQUEST_INIT;
    memset(r, 0, sizeof *r);
    r->path = path, r->want_double = want_double, r->req = req ? *req : first;
    r->reply_fd = r->pixel_fd = -1;
    gpuws__tuning t; /* fits_in_process=1: no child (fuzzing cfitsio itself, debuggers) */
    gpuws__tuning_from_env(&t);
    int fd[2];
    if (!path || t.fits_in_process) return;
    if (strlen(path) < PATH_MAX && keeper_order(r)) {
        r->served = 1;
        return;
    }
    if ((r->pixel_fd = shared_memory_fd()) < 0) return;
    if (pipe(fd) != 0) return close_fd(&r->pixel_fd);
    fcntl(fd[0], F_SETFD, FD_CLOEXEC); /* not inherited by programs the caller runs while the child reads */
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        read_in_child(r, fd[1]);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return close_fd(&r->pixel_fd);
    }
    r->pid = pid, r->reply_fd = fd[0];
}

int fits_read_finish(fits_reading *r, fits_image *img, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    if (r->pid <= 0 && !r->served) {
        close_fd(&r->pixel_fd);
        return read_here(r->path, r->want_double, &r->req, img, err, errlen, &heap_store, NULL);
    }
    read_reply rep;
    char *header = NULL;
    const int from = r->served ? keeper.sock : r->reply_fd;
    const bool replied = r->served ? recv_reply(from, &rep, &r->pixel_fd) : xfer(from, &rep, sizeof rep, false);
    bool got = replied, header_memory = true;
    if (got && rep.rc == 0 && rep.header_len) {
        header_memory = (header = malloc(rep.header_len + 1)) != NULL;
        got = header && xfer(from, header, rep.header_len, false);
        if (got) header[rep.header_len] = 0;
    }
    int ws = 0;
    if (r->served) { /* the kept process: ready for the next read, or ended (its status says how) */
        pthread_mutex_lock(&keeper.lock);
        if (got) keeper.busy = 0;
        else keeper_end(!replied ? 0 : 1, !replied ? &ws : NULL); /* a reply cut short: start afresh */
        pthread_mutex_unlock(&keeper.lock);
        r->served = 0;
    } else {
        close_fd(&r->reply_fd);
        while (waitpid(r->pid, &ws, 0) < 0 && errno == EINTR) {
        }
        r->pid = -1;
    }
    const bool clean = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    void *data = NULL;
    size_t bytes = 0;
    if (got && clean && rep.rc == 0) {
        const size_t es = rep.is_double ? sizeof(double) : sizeof(float);
        struct stat sb;
        bytes = rep.width && rep.height <= (size_t)-1 / rep.width / es ? rep.width * rep.height * es : 0;
        int flags = MAP_SHARED;
#ifdef MAP_POPULATE
        flags |= MAP_POPULATE; /* the pages are there already: map them all now rather than one fault at a time */
#endif
        if (bytes && fstat(r->pixel_fd, &sb) == 0 && (size_t)sb.st_size >= bytes)
            data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, r->pixel_fd, 0);
        if (data == MAP_FAILED) data = NULL;
    }
    close_fd(&r->pixel_fd);
    if (!got || !clean || (!rep.rc && !data)) {
        free(header);
        if (data) munmap(data, bytes);
        char what[160];
        if (WIFEXITED(ws) && WEXITSTATUS(ws) > 128)
            snprintf(what, sizeof what, "cfitsio crashed reading it (signal %d): corrupt file", WEXITSTATUS(ws) - 128);
        else if (WIFSIGNALED(ws))
            snprintf(what, sizeof what, "cfitsio crashed reading it (signal %d): corrupt file", WTERMSIG(ws));
        else if (!header_memory) snprintf(what, sizeof what, "out of memory for the header");
        else if (got && clean) snprintf(what, sizeof what, "out of memory for the pixels");
        else snprintf(what, sizeof what, "the reading process failed: corrupt file?");
        return fail(err, errlen, r->path, what, 0);
    }
    if (rep.rc) {
        snprintf(err, errlen, "%s", rep.err);
        return -1;
    }
    img->width = rep.width;
    img->height = rep.height;
    img->is_double = rep.is_double;
    img->hdu = rep.hdu;
    img->bitpix = rep.bitpix;
    img->naxis = rep.naxis;
    img->plane = rep.plane;
    img->nplanes = rep.nplanes;
    img->header = header;
    img->nkeys = header ? rep.nkeys : 0;
    img->data = data;
    img->mapped = bytes;
    return 0;
}

void fits_read_abandon(fits_reading *r)
{
    if (r->served) { /* the kept process is reading it: a new one for the next read */
        pthread_mutex_lock(&keeper.lock);
        keeper_end(1, NULL);
        pthread_mutex_unlock(&keeper.lock);
        r->served = 0;
    }
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    r->pid = -1;
    close_fd(&r->reply_fd);
    close_fd(&r->pixel_fd);
}

int fits_read_image(const char *path, int want_double, fits_image *img, char *err, size_t errlen)
{
    return fits_read_image_at(path, want_double, NULL, img, err, errlen);
}

int fits_read_image_at(const char *path, int want_double, const fits_read_request *req, fits_image *img, char *err,
                       size_t errlen)
{
    fits_reading r;
    fits_read_start(&r, path, want_double, req);
    return fits_read_finish(&r, img, err, errlen);
}

int fits_read_rows(const char *path, int want_double, const fits_read_request *req, fits_rows_chooser choose,
                   void *user, fits_image *img, char *err, size_t errlen)
{
    static const fits_read_request first = FITS_READ_REQUEST_INIT;
    const rows_pick pick = { choose, user };
    return read_here(path, want_double, req ? req : &first, img, err, errlen, &heap_store, &pick);
}

int fits_write_image(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height, char *err,
                     size_t errlen)
{
    return fits_write_image_cards(path, type, data, width, height, NULL, 0, err, errlen);
}

/* Appends ncards 80-character cards to the current header. */
static void write_cards(fitsfile *f, const char *cards, int ncards, int *status)
{
    for (int k = 0; cards && k < ncards && !*status; k++) {
        char card[81];
        memcpy(card, cards + 80 * (size_t)k, 80);
        card[80] = 0;
        fits_write_record(f, card, status);
    }
}

/* Closes f, whose current HDU is its last, and says how it ended: 0, or -1 with the reason in err (the file removed).
 * cfitsio does not see a write that the system cuts short (at a file size limit; on some full disks) and leaves a
 * truncated file behind without an error, so the file's size is checked against the end of that HDU's data. */
static int close_written(fitsfile *f, const char *path, int status, char *err, size_t errlen)
{
    long long head = 0, data = 0, end = 0;
    int s = 0;
    fits_get_hduaddrll(f, &head, &data, &end, &s);
    int s2 = 0;
    fits_close_file(f, &s2);
    struct stat sb;
    const int e = stat(path, &sb) == 0 ? 0 : errno;
    if (!status && !s2 && !s && !e && sb.st_size == end) return 0;
    unlink(path); /* the file this call created */
    if (status || s2 || s) return fail(err, errlen, path, "writing failed", status ? status : s2 ? s2 : s);
    if (e) return fail(err, errlen, path, strerror(e), 0);
    snprintf(err, errlen, "%s: writing failed: cut short at %lld of its %lld bytes (a full disk or a file size limit)",
             path, (long long)sb.st_size, end);
    return -1;
}

int fits_write_table(const char *path, const char *extname, size_t ncols, const char *const *names,
                     const char *const *units, const int *integer, size_t nrows, const double *values,
                     const char *cards, int ncards, char *err, size_t errlen)
{
    if (!path || !ncols || ncols > 999 || (nrows && !values))
        return fail(err, errlen, path ? path : "(null)", "nothing to write", 0);
    struct stat sb; /* a new file only, as fits_write_image_cards */
    if (lstat(path, &sb) == 0) return fail(err, errlen, path, "cannot create the file: it exists", 0);
    fitsfile *f = NULL;
    int status = 0;
    if (fits_create_diskfile(&f, path, &status)) return fail(err, errlen, path, "cannot create the file", status);
    char **ttype = calloc(ncols, sizeof *ttype), **tform = calloc(ncols, sizeof *tform),
         **tunit = calloc(ncols, sizeof *tunit);
    double *col = malloc((nrows ? nrows : 1) * sizeof *col);
    long long *icol = malloc((nrows ? nrows : 1) * sizeof *icol);
    if (!ttype || !tform || !tunit || !col || !icol) status = MEMORY_ALLOCATION;
    for (size_t c = 0; !status && c < ncols; c++) {
        ttype[c] = (char *)names[c];
        tform[c] = integer[c] ? "1K" : "1D";
        tunit[c] = (char *)(units && units[c] ? units[c] : "");
    }
    fits_create_img(f, BYTE_IMG, 0, NULL, &status);
    fits_write_comment(f, "written by gpuws", &status);
    if (!status) fits_create_tbl(f, BINARY_TBL, (LONGLONG)nrows, (int)ncols, ttype, tform, tunit, extname, &status);
    for (size_t c = 0; !status && nrows && c < ncols; c++) {
        for (size_t r = 0; r < nrows; r++) {
            col[r] = values[r * ncols + c];
            icol[r] = (long long)values[r * ncols + c];
        }
        if (integer[c]) fits_write_col(f, TLONGLONG, (int)c + 1, 1, 1, (LONGLONG)nrows, icol, &status);
        else fits_write_col(f, TDOUBLE, (int)c + 1, 1, 1, (LONGLONG)nrows, col, &status);
    }
    write_cards(f, cards, ncards, &status);
    free(ttype), free(tform), free(tunit), free(col), free(icol);
    return close_written(f, path, status, err, errlen);
}

static size_t raw_from = (size_t)64 << 20;

size_t fits_write_raw_from(size_t bytes)
{
    const size_t was = raw_from;
    raw_from = bytes;
    return was;
}

typedef struct {
    const unsigned char *from;
    unsigned char *to;
    size_t size; /* bytes a pixel: 4 or 8 */
} swap_job;

/* Pixels [lo, hi) of the block into big-endian order. */
static void swap_range(void *user, size_t part, size_t lo, size_t hi)
{
    const swap_job *j = user;
    (void)part;
    if (j->size == 4) {
        for (size_t i = lo; i < hi; i++) {
            uint32_t v;
            memcpy(&v, j->from + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(j->to + 4 * i, &v, 4);
        }
    } else {
        for (size_t i = lo; i < hi; i++) {
            uint64_t v;
            memcpy(&v, j->from + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(j->to + 8 * i, &v, 8);
        }
    }
}

/* fd's header (the file so far, whole 2880-byte blocks) says NAXIS2 = 0: made `height`, in the card's fixed format
 * (the value right-justified in columns 11 to 30). 0, or -1 with errno (EINVAL: no such card). */
static int set_naxis2(int fd, off_t header, size_t height)
{
    char card[80];
    for (off_t at = 0; at + 80 <= header; at += 80) {
        if (pread(fd, card, 80, at) != 80) return -1;
        if (memcmp(card, "END     ", 8) == 0) break;
        if (memcmp(card, "NAXIS2  = ", 10) != 0) continue;
        char value[32];
        snprintf(value, sizeof value, "%20llu", (unsigned long long)height);
        bool zero = card[29] == '0' && strlen(value) == 20;
        for (int c = 10; c < 29; c++) zero = zero && card[c] == ' ';
        if (!zero) break;
        return pwrite(fd, value, 20, at + 10) == 20 ? 0 : -1;
    }
    errno = EINVAL;
    return -1;
}

/* n pixels of `size` bytes from data, swapped on every core a block at a time, each written after the one before,
 * at byte `at` of fd; *reached grows by the bytes written. 0, or -1 with errno. */
static int put_pixels(int fd, off_t at, size_t size, const void *data, size_t n, off_t *reached)
{
    enum { BLOCK_PIXELS = 1 << 22 };
    unsigned char *buf = malloc((n < BLOCK_PIXELS ? n : BLOCK_PIXELS) * size + 1);
    if (!buf) return errno = ENOMEM, -1;
    int ok = 1;
    for (size_t i = 0; ok && i < n; i += BLOCK_PIXELS) {
        const size_t m = n - i < BLOCK_PIXELS ? n - i : BLOCK_PIXELS;
        swap_job j = { (const unsigned char *)data + i * size, buf, size };
        tool_parallel(m, tool_parts(m, 1 << 16), swap_range, &j);
        for (size_t done = 0; ok && done < m * size;) {
            const ssize_t w = pwrite(fd, buf + done, m * size - done, at + (off_t)(i * size + done));
            if (w > 0) done += (size_t)w, *reached += w;
            else if (w == 0) ok = 0, errno = EIO;
            else ok = errno == EINTR;
        }
    }
    const int e = errno;
    free(buf);
    errno = e;
    return ok ? 0 : -1;
}

/* The reason a write of `path` failed with errno e, having reached `reached` of its `end` bytes. */
static void write_failed(const char *path, int e, off_t reached, off_t end, char *err, size_t errlen)
{
    if (e == EFBIG || e == ENOSPC) /* as close_written says it of cfitsio's writes */
        snprintf(err, errlen,
                 "%s: writing failed: cut short at %lld of its %lld bytes (a full disk or a file size limit)", path,
                 (long long)reached, (long long)end);
    else snprintf(err, errlen, "%s: writing failed: %s", path, strerror(e ? e : EIO));
}

/* The data unit of a header that cfitsio wrote for an image of 0 rows: NAXIS2 set to height, then the pixels
 * (put_pixels; data NULL: none, the whole unit zeros) and zeros to the 2880-byte block. 0 with the header's size in
 * *data_at, or -1 with the reason in err (the file removed). */
static int write_data_unit(const char *path, size_t size, const void *data, size_t width, size_t height,
                           uint64_t *data_at, char *err, size_t errlen)
{
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat sb;
    int ok = fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size > 0 && sb.st_size % 2880 == 0;
    const bool header = ok;
    ok = ok && set_naxis2(fd, sb.st_size, height) == 0;
    off_t reached = header ? sb.st_size : 0; /* the bytes written so far */
    ok = ok && (!data || put_pixels(fd, sb.st_size, size, data, width * height, &reached) == 0);
    const off_t end = ((sb.st_size + (off_t)(width * height * size)) + 2879) / 2880 * 2880;
    ok = ok && ftruncate(fd, end) == 0; /* the padding (and without data, the pixels): zeros */
    int e = ok ? 0 : errno ? errno : EIO;
    if (fd >= 0 && close(fd) != 0 && ok) ok = 0, e = errno;
    if (ok) return *data_at = (uint64_t)sb.st_size, 0;
    unlink(path);
    if (header && e == EINVAL)
        snprintf(err, errlen, "%s: writing failed: the header cfitsio wrote has no NAXIS2 card to set", path);
    else write_failed(path, e, reached, end, err, errlen);
    return -1;
}

/* cfitsio's header of a width x 0 image of `type` with the cards, in a new file `path`. */
static int write_header(const char *path, fits_pixel_type type, size_t width, size_t height, const void *data,
                        bool rows, const char *cards, int ncards, char *err, size_t errlen)
{
    /* A new file only, checked here: cfitsio's own check opens an existing name for reading, which blocks on a
     * FIFO and, for a file it may not read, goes on to truncate it. */
    struct stat sb;
    if (lstat(path, &sb) == 0) return fail(err, errlen, path, "cannot create the file: it exists", 0);
    fitsfile *f = NULL;
    int status = 0;
    if (fits_create_diskfile(&f, path, &status)) return fail(err, errlen, path, "cannot create the file", status);
    /* !rows: the header of an image of 0 rows, so that cfitsio writes no data unit (it would fill the one it was not
     * given with zeros), and the data unit after it (write_data_unit) */
    long long naxes[2] = { (long long)width, rows ? (long long)height : 0 };
    int bitpix = type == FITS_F32 ? FLOAT_IMG : type == FITS_F64 ? DOUBLE_IMG : LONG_IMG;
    int dtype = type == FITS_F32 ? TFLOAT : type == FITS_F64 ? TDOUBLE : TINT;
    long long first[2] = { 1, 1 };
    fits_create_imgll(f, bitpix, 2, naxes, &status);
    if (rows) fits_write_pixll(f, dtype, first, (LONGLONG)(width * height), (void *)data, &status);
    write_cards(f, cards, ncards, &status);
    fits_write_comment(f, "written by gpuws", &status);
    return close_written(f, path, status, err, errlen);
}

int fits_write_image_shell(const char *path, fits_pixel_type type, size_t width, size_t height, const char *cards,
                           int ncards, uint64_t *data_at, char *err, size_t errlen)
{
    if (!path || !width || !height || !data_at) return fail(err, errlen, path ? path : "(null)", "nothing to write", 0);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (write_header(path, type, width, height, NULL, false, cards, ncards, err, errlen)) return -1;
    return write_data_unit(path, type == FITS_F64 ? 8 : 4, NULL, width, height, data_at, err, errlen);
#else
    (void)type, (void)cards, (void)ncards;
    return fail(err, errlen, path, "rows written in place need a little-endian host", 0);
#endif
}

int fits_write_rows(const char *path, uint64_t data_at, fits_pixel_type type, const void *data, size_t width,
                    size_t height, size_t row0, size_t rows, char *err, size_t errlen)
{
    const size_t size = type == FITS_F64 ? 8 : 4;
    if (!path || !width || row0 > height || rows > height - row0 || (rows && !data))
        return fail(err, errlen, path ? path : "(null)", "rows outside the image", 0);
    const off_t end = (off_t)((data_at + width * height * size + 2879) / 2880 * 2880);
    /* never created nor truncated: the file fits_write_image_shell made, as this process sees it */
    const int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 && errno == ENOENT) return snprintf(err, errlen, "%s: not found here", path), -2;
    if (fd < 0) return snprintf(err, errlen, "%s: cannot open it: %s", path, strerror(errno)), -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != end) {
        close(fd);
        return snprintf(err, errlen, "%s: not the file made for the rows here (another size or kind)", path), -2;
    }
    off_t reached = 0;
    int ok = put_pixels(fd, (off_t)(data_at + row0 * width * size), size, data, rows * width, &reached) == 0;
    int e = ok ? 0 : errno;
    if (close(fd) != 0 && ok) ok = 0, e = errno;
    if (ok) return 0;
    write_failed(path, e, reached, (off_t)(rows * width * size), err, errlen);
    return -1;
}

int fits_write_image_cards(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height,
                           const char *cards, int ncards, char *err, size_t errlen)
{
    if (!path || !data || !width || !height) return fail(err, errlen, path ? path : "(null)", "nothing to write", 0);
    const size_t size = type == FITS_F64 ? 8 : 4;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const bool raw = width * height * size >= raw_from;
#else
    const bool raw = false; /* the swap assumes a little-endian host */
#endif
    uint64_t data_at;
    if (write_header(path, type, width, height, data, !raw, cards, ncards, err, errlen)) return -1;
    return raw ? write_data_unit(path, size, data, width, height, &data_at, err, errlen) : 0;
}

#else

int fits_available(void) { return 0; }

int fits_read_image(const char *path, int want_double, fits_image *img, char *err, size_t errlen)
{
    return fits_read_image_at(path, want_double, NULL, img, err, errlen);
}

int fits_read_image_at(const char *path, int want_double, const fits_read_request *req, fits_image *img, char *err,
                       size_t errlen)
{
    (void)want_double, (void)req;
    memset(img, 0, sizeof *img);
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)",
             path ? path : "");
    return -1;
}

int fits_read_rows(const char *path, int want_double, const fits_read_request *req, fits_rows_chooser choose,
                   void *user, fits_image *img, char *err, size_t errlen)
{
    (void)choose, (void)user;
    return fits_read_image_at(path, want_double, req, img, err, errlen);
}

int fits_read_forks(void) { return 0; } /* without cfitsio nothing is read, nor forked */

void fits_read_start(fits_reading *r, const char *path, int want_double, const fits_read_request *req)
{
    memset(r, 0, sizeof *r);
    r->path = path, r->want_double = want_double, r->req = req ? *req : (fits_read_request)FITS_READ_REQUEST_INIT;
    r->reply_fd = r->pixel_fd = -1;
}

int fits_read_finish(fits_reading *r, fits_image *img, char *err, size_t errlen)
{
    return fits_read_image_at(r->path, r->want_double, &r->req, img, err, errlen);
}

void fits_read_abandon(fits_reading *r) { (void)r; }

int fits_write_image(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height, char *err,
                     size_t errlen)
{
    return fits_write_image_cards(path, type, data, width, height, NULL, 0, err, errlen);
}

int fits_write_table(const char *path, const char *extname, size_t ncols, const char *const *names,
                     const char *const *units, const int *integer, size_t nrows, const double *values,
                     const char *cards, int ncards, char *err, size_t errlen)
{
    (void)extname, (void)ncols, (void)names, (void)units, (void)integer, (void)nrows, (void)values, (void)cards,
        (void)ncards;
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)",
             path ? path : "");
    return -1;
}

int fits_write_image_shell(const char *path, fits_pixel_type type, size_t width, size_t height, const char *cards,
                           int ncards, uint64_t *data_at, char *err, size_t errlen)
{
    (void)type, (void)width, (void)height, (void)cards, (void)ncards, (void)data_at;
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)",
             path ? path : "");
    return -1;
}

int fits_write_rows(const char *path, uint64_t data_at, fits_pixel_type type, const void *data, size_t width,
                    size_t height, size_t row0, size_t rows, char *err, size_t errlen)
{
    (void)data_at, (void)type, (void)data, (void)width, (void)height, (void)row0, (void)rows;
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)",
             path ? path : "");
    return -1;
}

int fits_write_image_cards(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height,
                           const char *cards, int ncards, char *err, size_t errlen)
{
    (void)type, (void)data, (void)width, (void)height, (void)cards, (void)ncards;
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)",
             path ? path : "");
    return -1;
}

#endif

void fits_image_free_pixels(fits_image *img)
{
    if (!img) return;
#ifdef GPUWS_HAVE_CFITSIO
    if (img->mapped) munmap(img->data, img->mapped);
    else
#endif
        free(img->data);
    img->data = NULL, img->mapped = 0;
}

void fits_image_free(fits_image *img)
{
    if (!img) return;
    fits_image_free_pixels(img);
    free(img->header);
    memset(img, 0, sizeof *img);
}
