#include "fits_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GPUWS_HAVE_CFITSIO
#include <fitsio.h>

int fits_available(void) { return 1; }

static int fail(char *err, size_t n, const char *path, const char *what, int status)
{
    char msg[FLEN_ERRMSG] = "";
    if (status) fits_get_errstatus(status, msg);
    snprintf(err, n, "%s: %s%s%s", path, what, status ? ": " : "", msg);
    return -1;
}

/* Moves to the first HDU holding an image of >= 2 non-degenerate-compatible axes; 0 if found. */
static int find_image(fitsfile *f, int *naxis, long long dims[9], int *hdu, int *status)
{
    int nhdu = 0;
    if (fits_get_num_hdus(f, &nhdu, status)) return -1;
    for (int h = 1; h <= nhdu; h++) {
        int type;
        if (fits_movabs_hdu(f, h, &type, status)) return -1;
        if (type != IMAGE_HDU) continue;
        int bitpix;
        if (fits_get_img_paramll(f, 9, &bitpix, naxis, dims, status)) return -1;
        if (*naxis >= 2) {
            *hdu = h;
            return 0;
        }
    }
    return 1;
}

int fits_read_image(const char *path, int want_double, fits_image *img, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    if (!path) return fail(err, errlen, "(null)", "no file name", 0);
    fitsfile *f = NULL;
    int status = 0;
    /* diskfile: the name is taken literally, never parsed as cfitsio's extended syntax ("file.fits[1]") */
    if (fits_open_diskfile(&f, path, READONLY, &status)) return fail(err, errlen, path, "cannot open as FITS", status);
    int naxis = 0, hdu = 0;
    long long dims[9] = {0};
    int r = find_image(f, &naxis, dims, &hdu, &status);
    if (r != 0) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, r < 0 ? "unreadable header" : "no 2-D image in any HDU", r < 0 ? status : 0);
    }
    for (int i = 2; i < naxis; i++) {
        if (dims[i] != 1) {
            int s2 = 0;
            fits_close_file(f, &s2);
            char what[160];
            snprintf(what, sizeof what, "HDU %d is a %d-D image (axis %d has length %lld); only 2-D images are supported", hdu,
                     naxis, i + 1, dims[i]);
            return fail(err, errlen, path, what, 0);
        }
    }
    if (dims[0] <= 0 || dims[1] <= 0) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, "image has a zero-length axis", 0);
    }
    int bitpix = 0, equiv = 0;
    fits_get_img_type(f, &bitpix, &status);
    fits_get_img_equivtype(f, &equiv, &status);
    int dbl = want_double < 0 ? (equiv == DOUBLE_IMG || equiv == LONGLONG_IMG) : want_double;
    size_t w = (size_t)dims[0], h = (size_t)dims[1], es = dbl ? sizeof(double) : sizeof(float);
    if ((unsigned long long)dims[0] > ((size_t)-1) / (size_t)dims[1] / es) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, "image too large for this machine's address space", 0);
    }
    void *data = malloc(w * h * es);
    if (!data) {
        int s2 = 0;
        fits_close_file(f, &s2);
        return fail(err, errlen, path, "out of memory for the pixels", 0);
    }
    long long first[9];
    for (int i = 0; i < 9; i++) first[i] = 1;
    int anynul = 0;
    if (dbl) {
        double nanv = 0.0 / 0.0;
        fits_read_pixll(f, TDOUBLE, first, (LONGLONG)(w * h), &nanv, data, &anynul, &status);
    } else {
        float nanv = 0.0f / 0.0f;
        fits_read_pixll(f, TFLOAT, first, (LONGLONG)(w * h), &nanv, data, &anynul, &status);
    }
    int s2 = 0;
    fits_close_file(f, &s2);
    if (status) {
        free(data);
        return fail(err, errlen, path, "reading the pixels failed (truncated file?)", status);
    }
    img->width = w;
    img->height = h;
    img->is_double = dbl;
    img->data = data;
    img->hdu = hdu;
    img->bitpix = bitpix;
    return 0;
}

int fits_write_image(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height, char *err,
                     size_t errlen)
{
    if (!path || !data || !width || !height) return fail(err, errlen, path ? path : "(null)", "nothing to write", 0);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    unlink(tmp);
    fitsfile *f = NULL;
    int status = 0;
    if (fits_create_diskfile(&f, tmp, &status)) return fail(err, errlen, path, "cannot create the file", status);
    long long naxes[2] = {(long long)width, (long long)height};
    int bitpix = type == FITS_F32 ? FLOAT_IMG : type == FITS_F64 ? DOUBLE_IMG : LONG_IMG;
    int dtype = type == FITS_F32 ? TFLOAT : type == FITS_F64 ? TDOUBLE : TINT;
    long long first[2] = {1, 1};
    fits_create_imgll(f, bitpix, 2, naxes, &status);
    fits_write_pixll(f, dtype, first, (LONGLONG)(width * height), (void *)data, &status);
    fits_write_comment(f, "written by gpuws", &status);
    int s2 = 0;
    fits_close_file(f, &s2);
    if (status || s2 || rename(tmp, path) != 0) {
        unlink(tmp);
        return fail(err, errlen, path, "writing failed", status ? status : s2);
    }
    return 0;
}

#else

int fits_available(void) { return 0; }

int fits_read_image(const char *path, int want_double, fits_image *img, char *err, size_t errlen)
{
    (void)want_double;
    memset(img, 0, sizeof *img);
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)", path ? path : "");
    return -1;
}

int fits_write_image(const char *path, fits_pixel_type type, const void *data, size_t width, size_t height, char *err,
                     size_t errlen)
{
    (void)type, (void)data, (void)width, (void)height;
    snprintf(err, errlen, "%s: gpuws was built without cfitsio (install libcfitsio-dev and reconfigure)", path ? path : "");
    return -1;
}

#endif

void fits_image_free(fits_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}
