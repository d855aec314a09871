/* png_write_rgb (tools/png_overlay.h), the writer of `gpuws sources --overlay`: the file decodes, with libpng, to the
 * picture it was given, whatever its size against the strips compressed on separate cores (one row, a strip and a
 * row, widths of one pixel and odd ones), and a path that exists is refused with nothing changed. */
#include "support.h"
#include "png_overlay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<png.h>)
#include <png.h>
#define PNG_TEST_HAVE_LIBPNG 1
#endif
#endif

#ifdef PNG_TEST_HAVE_LIBPNG
static char dir[256];

static void png_setup(void)
{
    if (!png_overlay_available()) cr_skip_test("gpuws was built without libpng");
    test_dir_make("png", dir, sizeof dir);
}

static void png_teardown(void) { test_dir_remove(dir); }

/* A picture of w x h with every byte from a simple generator, runs of equal pixels among them (what compresses). */
static unsigned char *picture(size_t w, size_t h, unsigned seed)
{
    unsigned char *rgb = malloc(3 * w * h + 1);
    cr_assert(rgb);
    for (size_t i = 0; i < 3 * w * h; i++) {
        seed = seed * 1103515245u + 12345u;
        rgb[i] = (i / 3) % 7 < 3 ? (unsigned char)(seed >> 16) : (unsigned char)((i / 3) % 251);
    }
    return rgb;
}

ParameterizedTestParameters(png, decodes_to_the_picture)
{
    static size_t sizes[][2] = { { 1, 1 }, { 5, 1 }, { 1, 300 }, { 37, 128 }, { 37, 129 }, { 640, 257 } };
    return cr_make_param_array(size_t[2], sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(size_t (*size)[2], png, decodes_to_the_picture, .init = png_setup, .fini = png_teardown)
{
    const size_t w = (*size)[0], h = (*size)[1];
    char path[300], err[512] = "";
    snprintf(path, sizeof path, "%s/p.png", dir);
    unsigned char *rgb = picture(w, h, (unsigned)(w * 31 + h));
    cr_assert_eq(png_write_rgb(path, rgb, w, h, err, sizeof err), 0, "%s", err);
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    cr_assert(png_image_begin_read_from_file(&im, path), "%zu x %zu: libpng cannot read it: %s", w, h, im.message);
    cr_assert(im.width == w && im.height == h, "%zu x %zu read as %u x %u", w, h, im.width, im.height);
    im.format = PNG_FORMAT_RGB;
    unsigned char *back = malloc(PNG_IMAGE_SIZE(im));
    cr_assert(back);
    cr_assert(png_image_finish_read(&im, NULL, back, 0, NULL), "%zu x %zu: %s", w, h, im.message);
    cr_assert(!memcmp(back, rgb, 3 * w * h), "%zu x %zu: the decoded picture differs", w, h);
    free(back);
    free(rgb);
    unlink(path);
}

Test(png, a_path_that_exists_is_refused_and_kept, .init = png_setup, .fini = png_teardown)
{
    char path[300], err[512] = "";
    snprintf(path, sizeof path, "%s/there.png", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("mine", f);
    fclose(f);
    unsigned char *rgb = picture(4, 4, 1);
    cr_assert_eq(png_write_rgb(path, rgb, 4, 4, err, sizeof err), -1);
    cr_assert(strstr(err, path) && strstr(err, "cannot create"), "%s", err);
    char *kept = test_read_file(path);
    cr_assert(kept && !strcmp(kept, "mine"), "the file was changed");
    free(kept);
    free(rgb);
    unlink(path);
}
#else
Test(png, needs_libpng) { cr_skip_test("png.h not found"); }
#endif
