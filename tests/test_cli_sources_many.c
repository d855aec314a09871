/* `gpuws sources` on many images (see cli_sources.h): listed on the command line or in @lists, written under
 * --outdir, each image's failure its own, the others' outputs what they are on their own. */
#include "cli_sources.h"

#include <signal.h>
#include <sys/resource.h>

#ifdef HAVE_FITSIO_H
/* The two files hold the same bytes (binary files too). */
static void assert_same_bytes(const char *a, const char *b)
{
    FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
    cr_assert(x && y, "cannot open %s or %s", a, b);
    for (long at = 0;; at++) {
        const int cx = fgetc(x), cy = fgetc(y);
        cr_assert_eq(cx, cy, "%s and %s differ at byte %ld", a, b, at);
        if (cx == EOF) break;
    }
    fclose(x);
    fclose(y);
}

/* out/<stem><suffix>, from the run on many images, holds the bytes of `alone`, the file of the image's run on its own
 * in r->dir; then it is removed. */
static void assert_as_alone(cli_run *r, const char *out, const char *stem, const char *suffix, const char *alone)
{
    char path[700], single[600];
    snprintf(path, sizeof path, "%s/%s%s", out, stem, suffix);
    path_in(r, alone, single, sizeof single);
    assert_same_bytes(path, single);
    cr_assert_eq(unlink(path), 0);
}

/* Two good images (one named in a list) and a missing one: each good one's outputs under --outdir, nothing for the
 * missing one, a progress line per image, exit 1 at the end. */
BACKEND_TEST(cli_sources, many_images_each_written_and_a_failure_reported)
{
    cli_run r;
    setup(&r, *kind);
    char path[600], out[600];
    path_in(&r, "good1.fits", path, sizeof path);
    write_wcs_image(path, "RA---TAN", "DEC--TAN");
    path_in(&r, "good2.fits", path, sizeof path);
    write_wcs_image(path, NULL, NULL);
    path_in(&r, "list.txt", path, sizeof path);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("# the list\nabsent.fits\n\ngood2.fits\n", f);
    fclose(f);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    run_cli(&r, *kind, "good1.fits", "@list.txt", "--outdir", "out", "--write", "catalog,labels", "--method",
            "workshop", "--threshold-abs", "1", NULL);
    cr_assert_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "[1/3] good1.fits\n") && strstr(r.stdout_text, "[2/3] absent.fits\n") &&
                  strstr(r.stdout_text, "[3/3] good2.fits\n") && strstr(r.stdout_text, "3 images: 2 done, 1 failed"),
              "%s", r.stdout_text);
    cr_assert(strstr(r.stderr_text, "[2/3] absent.fits failed: nothing written for it"), "%s", r.stderr_text);
    static const char *const want[] = { "good1.csv", "good1.labels.fits", "good2.csv", "good2.labels.fits" };
    DIR *d = opendir(out);
    cr_assert(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int known = 0;
        for (size_t k = 0; k < 4; k++) known |= !strcmp(e->d_name, want[k]);
        cr_assert(known, "unexpected %s in the output directory", e->d_name);
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        unlink(path);
        n++;
    }
    closedir(d);
    rmdir(out);
    cr_assert_eq(n, 4, "%d outputs, wanted 4", n);
    teardown(&r);
}

/* A Rice-compressed image whose ZTILE2 is 0: cfitsio divides by zero reading its header (SIGFPE), in the reading
 * child. */
static void write_crashing_fits(const char *path)
{
    fitsfile *f;
    int st = 0, px[64];
    for (int i = 0; i < 64; i++) px[i] = (i * 37) % 101;
    long naxes[2] = { 8, 8 };
    fits_create_diskfile(&f, path, &st);
    fits_set_compression_type(f, RICE_1, &st);
    fits_create_img(f, LONG_IMG, 2, naxes, &st);
    fits_write_img(f, TINT, 1, 64, px, &st);
    fits_close_file(f, &st);
    cr_assert_eq(st, 0, "cfitsio status %d", st);
    FILE *fp = fopen(path, "r+b");
    cr_assert(fp);
    char card[80];
    long pos = 0;
    while (fread(card, 1, 80, fp) == 80 && strncmp(card, "ZTILE2  =", 9)) pos += 80;
    cr_assert(!strncmp(card, "ZTILE2  =", 9), "no ZTILE2 card");
    fseek(fp, pos + 10, SEEK_SET);
    fprintf(fp, "%20d", 0);
    fclose(fp);
}

/* Each image is read (by its own child process) while the one before it is processed: one that crashes cfitsio in
 * the middle fails alone, and the images around it get the catalogues they get on their own, byte for byte. */
BACKEND_TEST(cli_sources, many_images_read_ahead_past_one_that_crashes_the_reader)
{
    cli_run r;
    setup(&r, *kind);
    char path[600], out[600];
    write_sky(&r, "a.fits", 200, 150, 11, 8);
    write_sky(&r, "c.fits", 180, 170, 12, 9);
    path_in(&r, "b.fits", path, sizeof path);
    write_crashing_fits(path);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    run_cli(&r, *kind, "a.fits", "b.fits", "c.fits", "--outdir", "out", NULL);
    cr_assert_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stdout_text, "[1/3] a.fits\n") && strstr(r.stdout_text, "[2/3] b.fits\n") &&
                  strstr(r.stdout_text, "[3/3] c.fits\n") && strstr(r.stdout_text, "3 images: 2 done, 1 failed"),
              "%s", r.stdout_text);
    cr_assert(strstr(r.stderr_text, "b.fits: cfitsio crashed reading it (signal 8): corrupt file\n") &&
                  strstr(r.stderr_text, "[2/3] b.fits failed: nothing written for it"),
              "%s", r.stderr_text);
    static const char *const names[] = { "a", "c" };
    for (size_t k = 0; k < 2; k++) {
        char image[32], csv[32];
        snprintf(image, sizeof image, "%s.fits", names[k]);
        snprintf(csv, sizeof csv, "%s1.csv", names[k]);
        run_cli(&r, *kind, image, "--catalog", csv, NULL);
        cr_assert_eq(r.status, 0, "%s alone: exit %d; stderr: %s", image, r.status, r.stderr_text);
        assert_as_alone(&r, out, names[k], ".csv", csv);
    }
    cr_assert_eq(rmdir(out), 0, "more than a.csv and c.csv in the output directory");
    teardown(&r);
}

/* Writes a sky of w x h with its rows y0 .. y0 + rows - 1 blank (NaN), as a FITS file in r->dir. */
static void write_sky_blank_rows(cli_run *r, const char *name, size_t w, size_t h, uint64_t seed, size_t y0,
                                 size_t rows)
{
    float *img = sky_image(w, h, seed, 8);
    for (size_t i = y0 * w; i < (y0 + rows) * w; i++) img[i] = NAN;
    char path[600], err[600];
    path_in(r, name, path, sizeof path);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, w, h, err, sizeof err), 0, "%s", err);
    free(img);
}

/* Each image <name>.fits of names, run alone with --catalog and --labels: its CSV and map under out (from the run on
 * many images) hold the same bytes, and are removed. */
static void assert_each_as_alone(cli_run *r, gpuws_backend_kind kind, const char *out, const char *const *names,
                                 size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char image[32], csv[32], labels[32];
        snprintf(image, sizeof image, "%s.fits", names[k]);
        snprintf(csv, sizeof csv, "%s1.csv", names[k]);
        snprintf(labels, sizeof labels, "%s1.labels.fits", names[k]);
        run_cli(r, kind, image, "--catalog", csv, "--labels", labels, NULL);
        cr_assert_eq(r->status, 0, "%s alone: exit %d; stderr: %s", image, r->status, r->stderr_text);
        assert_as_alone(r, out, names[k], ".csv", csv);
        assert_as_alone(r, out, names[k], ".labels.fits", labels);
    }
}

/* The many-images mode keeps its mask and device buffers from one image to the next of the same size: images that
 * change size, and that have blank pixels or none, each get the catalogue and segmentation map they get alone. */
BACKEND_TEST(cli_sources, many_images_of_changing_sizes_and_blanks_as_each_alone)
{
    cli_run r;
    setup(&r, *kind);
    char out[600];
    write_sky_blank_rows(&r, "p.fits", 200, 150, 21, 0, 7);
    write_sky(&r, "q.fits", 200, 150, 22, 8);
    write_sky(&r, "s.fits", 180, 170, 23, 9);
    write_sky_blank_rows(&r, "t.fits", 200, 150, 24, 140, 10);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    run_cli(&r, *kind, "p.fits", "q.fits", "s.fits", "t.fits", "--outdir", "out", "--write", "catalog,labels", NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.stderr_text);
    static const char *const names[] = { "p", "q", "s", "t" };
    assert_each_as_alone(&r, *kind, out, names, 4);
    cr_assert_eq(rmdir(out), 0, "more than the catalogues and maps in the output directory");
    teardown(&r);
}

/* An extraction's outputs are written on a thread while the next image is worked on: an image whose outputs cannot
 * be written (here a file size limit that its pixels' shared memory keeps within and its segmentation map, with the
 * FITS header, passes; the limit's signal ignored: the system cuts the write short, which cfitsio does not see) is
 * reported as failed, none of its files is left, and the images before and after it are written, each as alone. */
BACKEND_TEST(cli_sources, many_images_one_whose_outputs_fail_to_write_reported_the_next_written)
{
    cli_run r;
    setup(&r, *kind);
    char out[600];
    write_sky(&r, "a.fits", 200, 150, 31, 8);
    write_sky(&r, "big.fits", 640, 480, 32, 16);
    write_sky(&r, "c.fits", 180, 170, 33, 9);
    path_in(&r, "out", out, sizeof out);
    cr_assert_eq(mkdir(out, 0755), 0);
    struct rlimit keep, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    lim = keep;
    lim.rlim_cur = 640 * 480 * sizeof(float) + 1024;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    run_cli(&r, *kind, "a.fits", "big.fits", "c.fits", "--outdir", "out", "--write", "catalog,labels", NULL);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, was);
    cr_assert_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.stderr_text);
    cr_assert(strstr(r.stderr_text, "big.labels.fits") && strstr(r.stderr_text, "writing failed: cut short") &&
                  strstr(r.stderr_text, "[2/3] big.fits failed: nothing written for it"),
              "%s", r.stderr_text);
    const char *a = strstr(r.stdout_text, "[1/3] a.fits\n"), *b = strstr(r.stdout_text, "[2/3] big.fits\n"),
               *c = strstr(r.stdout_text, "[3/3] c.fits\n"), *end = strstr(r.stdout_text, "3 images: 2 done, 1 failed");
    cr_assert(a && b && c && end && a < b && b < c && c < end, "the reports out of order: %s", r.stdout_text);
    const char *wa = strstr(a, "wrote out/a.csv\n");
    cr_assert(wa && wa < b && !strstr(b, "wrote out/big") && strstr(c, "wrote out/c.csv\n"), "%s", r.stdout_text);
    static const char *const names[] = { "a", "c" };
    assert_each_as_alone(&r, *kind, out, names, 2);
    cr_assert_eq(rmdir(out), 0, "more than a's and c's outputs in the output directory (big's, or staging left)");
    teardown(&r);
}

#endif
