/* `gpuws sources` on many images (see cli_sources.h): listed on the command line or in @lists, written under
 * --outdir, each image's failure its own, the others' outputs what they are on their own. */
#include "cli_sources.h"

#ifdef HAVE_FITSIO_H
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
    char path[600], out[600], single[600];
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
        snprintf(path, sizeof path, "%s/%s.csv", out, names[k]);
        path_in(&r, csv, single, sizeof single);
        assert_same_file(path, single);
        cr_assert_eq(unlink(path), 0);
    }
    cr_assert_eq(rmdir(out), 0, "more than a.csv and c.csv in the output directory");
    teardown(&r);
}

#endif
