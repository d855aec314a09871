/* libFuzzer target: the FITS reader (tools/fits_io.c over cfitsio) on arbitrary bytes.
 *
 * Each input is written to a file and read with fits_read_image as "whatever the file holds", as float or as double
 * (by the input's length). fits_read_image runs cfitsio in a child process; GPUWS_TUNING=fits_in_process=1 fuzzes
 * cfitsio in this process instead (its crashes are then libFuzzer crashes: use -fork=1 -ignore_crashes=1 to go on).
 * A failure must come with a message and leave the image zeroed; a success must hold a 2-D image whose
 * every pixel can be read (ASan checks the allocation covers width * height elements). */
#include "fits_io.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256];

static void cleanup(void) { unlink(path); }

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* tmpfs when there is one: millions of small writes */
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof path, "%s/gpuws-fuzz-fits-%ld.fits", dir, (long)getpid());
    atexit(cleanup);
    return 0;
}

static void check_one(int want_double)
{
    fits_image img;
    char err[512];
    memset(&img, 0x5a, sizeof img);
    err[0] = 0;
    if (fits_read_image(path, want_double, &img, err, sizeof err) != 0) {
        if (!err[0] || img.data || img.width || img.height) {
            fprintf(stderr, "fits_read_image failed without a message or left data behind: '%s'\n", err);
            abort();
        }
        return;
    }
    if (!img.data || img.width == 0 || img.height == 0 || img.hdu < 1 ||
        (want_double >= 0 && img.is_double != want_double)) {
        fprintf(stderr, "fits_read_image succeeded with an inconsistent image (%zu x %zu, hdu %d)\n", img.width,
                img.height, img.hdu);
        abort();
    }
    /* touch every pixel: an allocation shorter than width * height elements is an ASan report */
    volatile double sink = 0;
    size_t n = img.width * img.height;
    if (img.is_double)
        for (size_t i = 0; i < n; i++) sink += ((const double *)img.data)[i];
    else
        for (size_t i = 0; i < n; i++) sink += ((const float *)img.data)[i];
    (void)sink;
    fits_image_free(&img);
    if (img.data) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) abort();
        done += (size_t)w;
    }
    close(fd);
    check_one((int)(size % 3) - 1); /* native, float, double: one read per input (each read forks a child) */
    return 0;
}
