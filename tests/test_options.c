/* Options structs grow without breaking callers (include/gpuws.h, "Options structs grow"): the first member,
 * struct_size, says how much of the caller's struct there is.
 *
 * - The mechanism (core/options.h) on a struct that grew: a caller built against the older, shorter struct gets the
 *   defaults of the fields it lacks; struct_size 0 is the oldest struct; a newer, larger struct is read when what
 *   this library does not know is zero, and refused when it is set.
 * - Every public call that takes an options struct, with its struct: struct_size 0 (zero-initialised), a newer
 *   caller's larger struct with a zero tail, the same with a field of the future set (GPUWS_ERR_UNSUPPORTED), and a
 *   struct_size too small to be any version (GPUWS_ERR_INVALID_ARGUMENT); outputs untouched on error. */
#include "support.h"
#include "core/options.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

/* ---- the mechanism -------------------------------------------------------------------------------------------- */

typedef struct {
    size_t struct_size;
    int a;
} grown_v1;
typedef struct {
    size_t struct_size;
    int a;
    double b; /* added in version 2 */
} grown_v2;
#define GROWN_V2_INIT                                                                                                  \
    {                                                                                                                  \
        sizeof(grown_v2), 1, 7.5                                                                                       \
    }
#define GROWN_BASE GPUWS__OPTIONS_END(grown_v2, a)

/* Called through a pointer: inlined here, GCC's -Warray-bounds checks the tail loop against the small test structs
 * (a range the calls never reach) and fails the sanitizer build. */
static gpuws_status (*volatile options_read)(const void *, void *, size_t, size_t, const char *) = gpuws__options_read;

Test(options, an_older_shorter_struct_gets_the_defaults_of_the_fields_it_lacks)
{
    const grown_v1 old = { sizeof old, 5 };
    grown_v2 got = GROWN_V2_INIT;
    cr_assert_eq(options_read(&old, &got, sizeof got, GROWN_BASE, "test options"), GPUWS_OK, "%s", gpuws_last_error());
    cr_assert_eq(got.a, 5, "the caller's field");
    cr_assert_eq(got.b, 7.5, "the default of the field the caller's struct lacks");
    cr_assert_eq(got.struct_size, sizeof got, "the library's copy has the library's size");

    const grown_v1 zeroed = { .a = 6 }; /* struct_size 0: the oldest struct */
    got = (grown_v2)GROWN_V2_INIT;
    cr_assert_eq(options_read(&zeroed, &got, sizeof got, GROWN_BASE, "test options"), GPUWS_OK);
    cr_assert(got.a == 6 && got.b == 7.5);

    got = (grown_v2)GROWN_V2_INIT;
    cr_assert_eq(options_read(NULL, &got, sizeof got, GROWN_BASE, "test options"), GPUWS_OK, "NULL: defaults");
    cr_assert(got.a == 1 && got.b == 7.5);
}

Test(options, a_newer_larger_struct_is_read_when_its_unknown_tail_is_zero_and_refused_when_set)
{
    typedef struct {
        grown_v1 known;
        uint64_t later; /* a field of a newer version this "library" (sizeof grown_v1) does not know */
    } newer;
    newer n = { { sizeof n, 9 }, 0 };
    grown_v1 got = { sizeof got, 1 };
    cr_assert_eq(options_read(&n, &got, sizeof got, sizeof got, "test options"), GPUWS_OK);
    cr_assert_eq(got.a, 9);
    n.later = 1;
    got = (grown_v1){ sizeof got, 1 };
    cr_assert_eq(options_read(&n, &got, sizeof got, sizeof got, "test options"), GPUWS_ERR_UNSUPPORTED);
    char want[160];
    snprintf(want, sizeof want,
             "test options: struct_size %zu, but this gpuws (%d.%d.%d) knows only the first %zu bytes "
             "and byte %zu is set",
             sizeof n, GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR, GPUWS_VERSION_PATCH, sizeof got,
             offsetof(newer, later));
    cr_assert(strstr(gpuws_last_error(), want), "%s", gpuws_last_error());
    cr_assert_eq(got.a, 1, "nothing read from a refused struct");
}

/* ---- every public options struct ------------------------------------------------------------------------------- */

enum { N = 64, SIDE = 8 };

typedef struct {
    gpuws_context *ctx;
    gpuws_buffer *data, *kernel, *out;
    float host[N], host_out[N];
} fixture;

typedef struct {
    const char *name;
    size_t size;                                     /* sizeof the struct in this header */
    void (*init)(void *o);                           /* its _OPTIONS_INIT, plus what the call needs */
    gpuws_status (*call)(fixture *f, const void *o); /* the public call; cleans up after itself on success */
} options_row;

static void init_context(void *o)
{
    *(gpuws_context_options *)o = (gpuws_context_options)GPUWS_CONTEXT_OPTIONS_INIT;
    ((gpuws_context_options *)o)->backend = "cpu";
}
static gpuws_status call_context(fixture *f, const void *o)
{
    (void)f;
    gpuws_context *c = (gpuws_context *)&c; /* poison: NULL on error */
    gpuws_status st = gpuws_context_create(&c, o);
    cr_assert(st ? c == NULL : c != NULL);
    gpuws_context_destroy(st ? NULL : c);
    return st;
}

static void init_program(void *o) { *(gpuws_program_options *)o = (gpuws_program_options)GPUWS_PROGRAM_OPTIONS_INIT; }
static gpuws_status call_program(fixture *f, const void *o)
{
    gpuws_program *p = (gpuws_program *)&p;
    gpuws_status st = gpuws_program_create(f->ctx, "GW_KERNEL void one(GW_GLOBAL gw_f32 *x) { x[0] = 1; }\n", o, &p);
    cr_assert(st ? p == NULL : p != NULL);
    gpuws_program_destroy(st ? NULL : p);
    return st;
}

static void init_convolve2d(void *o)
{
    *(gpuws_convolve2d_options *)o = (gpuws_convolve2d_options)GPUWS_CONVOLVE2D_OPTIONS_INIT;
    ((gpuws_convolve2d_options *)o)->mode = GPUWS_CONVOLVE_SAME;
}
static gpuws_status call_convolve2d(fixture *f, const void *o)
{
    return gpuws_convolve2d(NULL, GPUWS_F32, f->data, SIDE, SIDE, 0, f->kernel, 3, 3, o, f->out);
}

static void init_convolve2d_host(void *o)
{
    *(gpuws_convolve2d_host_options *)o = (gpuws_convolve2d_host_options)GPUWS_CONVOLVE2D_HOST_OPTIONS_INIT;
    ((gpuws_convolve2d_host_options *)o)->mode = GPUWS_CONVOLVE_SAME;
}
static gpuws_status call_convolve2d_host(fixture *f, const void *o)
{
    static const float k[9] = { 0, 0, 0, 0, 1, 0, 0, 0, 0 };
    memset(f->host_out, 0xAB, sizeof f->host_out);
    gpuws_status st = gpuws_convolve2d_host(f->ctx, GPUWS_F32, f->host, SIDE, SIDE, 0, k, 3, 3, o, f->host_out);
    for (size_t i = 0; st && i < sizeof f->host_out; i++)
        cr_assert_eq(((unsigned char *)f->host_out)[i], 0xAB, "a refused call wrote out");
    return st;
}

static void init_convolve1d_host(void *o)
{
    *(gpuws_convolve1d_host_options *)o = (gpuws_convolve1d_host_options)GPUWS_CONVOLVE1D_HOST_OPTIONS_INIT;
}
static gpuws_status call_convolve1d_host(fixture *f, const void *o)
{
    static const float k[3] = { 0, 1, 0 };
    memset(f->host_out, 0xAB, sizeof f->host_out);
    gpuws_status st = gpuws_convolve1d_host(f->ctx, GPUWS_F32, f->host, N, k, 3, GPUWS_CONVOLVE_SAME, o, f->host_out);
    for (size_t i = 0; st && i < sizeof f->host_out; i++)
        cr_assert_eq(((unsigned char *)f->host_out)[i], 0xAB, "a refused call wrote out");
    return st;
}

static void init_label_host(void *o)
{
    *(gpuws_label_host_options *)o = (gpuws_label_host_options)GPUWS_LABEL_HOST_OPTIONS_INIT;
}
static gpuws_status call_label_host(fixture *f, const void *o)
{
    size_t n = 77;
    memset(f->host_out, 0xAB, sizeof f->host_out); /* SIDE x SIDE int32 labels of the mask f->host's first bytes */
    gpuws_status st = gpuws_label_host(f->ctx, SIDE, SIDE, f->host, 0, 8, o, (int32_t *)(void *)f->host_out, &n);
    for (size_t i = 0; st && i < sizeof f->host_out; i++)
        cr_assert_eq(((unsigned char *)f->host_out)[i], 0xAB, "a refused call wrote labels");
    cr_assert(!st || n == 77, "a refused call wrote num_labels");
    return st;
}

static void init_sigma_clip(void *o)
{
    *(gpuws_sigma_clip_options *)o = (gpuws_sigma_clip_options)GPUWS_SIGMA_CLIP_OPTIONS_INIT;
}
static gpuws_status call_sigma_clip(fixture *f, const void *o)
{
    gpuws_sigma_clip_result r;
    memset(&r, 0xAB, sizeof r);
    gpuws_sigma_clip_result poison = r;
    gpuws_status st = gpuws_sigma_clip(NULL, N, f->data, o, &r);
    cr_assert(!st || !memcmp(&r, &poison, sizeof r), "a refused call wrote its result");
    return st;
}

static void init_sources(void *o) { *(gpuws_sources_options *)o = (gpuws_sources_options)GPUWS_SOURCES_OPTIONS_INIT; }
static gpuws_status call_sources(fixture *f, const void *o)
{
    gpuws_catalog *cat = (gpuws_catalog *)&cat;
    gpuws_status st = gpuws_find_sources(f->ctx, f->host, SIDE, SIDE, o, &cat);
    cr_assert(st ? cat == NULL : cat != NULL);
    gpuws_catalog_free(st ? NULL : cat);
    return st;
}

static void init_pipeline(void *o)
{
    *(gpuws_pipeline_options *)o = (gpuws_pipeline_options)GPUWS_PIPELINE_OPTIONS_INIT;
}
static gpuws_status call_pipeline(fixture *f, const void *o)
{
    memset(f->host_out, 0xAB, sizeof f->host_out);
    gpuws_status st = gpuws_hidden_layer_host(f->ctx, N, f->host, f->host, f->host_out, o);
    for (int i = 0; st && i < N; i++) cr_assert_eq(((unsigned char *)f->host_out)[i], 0xAB, "a refused call wrote out");
    return st;
}

static void init_background(void *o)
{
    *(gpuws_background_options *)o = (gpuws_background_options)GPUWS_BACKGROUND_OPTIONS_INIT;
    ((gpuws_background_options *)o)->bw = ((gpuws_background_options *)o)->bh = 4; /* the 8 x 8 image: 2 x 2 meshes */
}
static gpuws_status call_background(fixture *f, const void *o)
{
    gpuws_background_result r;
    memset(&r, 0xAB, sizeof r);
    const gpuws_background_result poison = r;
    gpuws_buffer *rms = test_buffer(f->ctx, sizeof f->host);
    gpuws_status st = gpuws_background(NULL, GPUWS_F32, SIDE, SIDE, f->data, o, f->out, rms, &r);
    cr_assert(!st || !memcmp(&r, &poison, sizeof r), "a refused call wrote its result");
    gpuws_buffer_destroy(rms);
    return st;
}

static void init_extract(void *o) { *(gpuws_extract_options *)o = (gpuws_extract_options)GPUWS_EXTRACT_OPTIONS_INIT; }
static gpuws_status call_extract(fixture *f, const void *o)
{
    gpuws_extract_catalog *cat = (gpuws_extract_catalog *)&cat; /* poison: NULL on error */
    gpuws_status st = gpuws_extract(NULL, SIDE, SIDE, f->data, o, &cat);
    cr_assert(st ? cat == NULL : cat != NULL);
    gpuws_extract_catalog_free(st ? NULL : cat);
    return st;
}

static void init_aperture(void *o)
{
    *(gpuws_aperture_options *)o = (gpuws_aperture_options)GPUWS_APERTURE_OPTIONS_INIT;
}
static gpuws_status call_aperture(fixture *f, const void *o)
{
    const double x = 3.5, y = 4.0, r = 2.5;
    double sum = 12345.0;
    int flag = 77;
    gpuws_status st = gpuws_sum_circle(NULL, SIDE, SIDE, f->data, 1, &x, &y, &r, o, &sum, NULL, NULL, &flag);
    cr_assert(!st || (sum == 12345.0 && flag == 77), "a refused call wrote its results");
    return st;
}

static void init_aperture_host(void *o)
{
    *(gpuws_aperture_host_options *)o = (gpuws_aperture_host_options)GPUWS_APERTURE_HOST_OPTIONS_INIT;
}
static gpuws_status call_aperture_host(fixture *f, const void *o)
{
    const double x = 3.5, y = 4.0, r = 2.5;
    double sum = 12345.0;
    int flag = 77;
    gpuws_status st = gpuws_sum_circle_host(f->ctx, SIDE, SIDE, f->host, 1, &x, &y, &r, o, &sum, NULL, NULL, &flag);
    cr_assert(!st || (sum == 12345.0 && flag == 77), "a refused call wrote its results");
    return st;
}

static const options_row rows[] = {
    { "gpuws_context_options", sizeof(gpuws_context_options), init_context, call_context },
    { "gpuws_program_options", sizeof(gpuws_program_options), init_program, call_program },
    { "gpuws_convolve2d_options", sizeof(gpuws_convolve2d_options), init_convolve2d, call_convolve2d },
    { "gpuws_convolve2d_host_options", sizeof(gpuws_convolve2d_host_options), init_convolve2d_host,
      call_convolve2d_host },
    { "gpuws_convolve1d_host_options", sizeof(gpuws_convolve1d_host_options), init_convolve1d_host,
      call_convolve1d_host },
    { "gpuws_label_host_options", sizeof(gpuws_label_host_options), init_label_host, call_label_host },
    { "gpuws_sigma_clip_options", sizeof(gpuws_sigma_clip_options), init_sigma_clip, call_sigma_clip },
    { "gpuws_sources_options", sizeof(gpuws_sources_options), init_sources, call_sources },
    { "gpuws_pipeline_options", sizeof(gpuws_pipeline_options), init_pipeline, call_pipeline },
    { "gpuws_background_options", sizeof(gpuws_background_options), init_background, call_background },
    { "gpuws_extract_options", sizeof(gpuws_extract_options), init_extract, call_extract },
    { "gpuws_aperture_options", sizeof(gpuws_aperture_options), init_aperture, call_aperture },
    { "gpuws_aperture_host_options", sizeof(gpuws_aperture_host_options), init_aperture_host, call_aperture_host },
};

static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->ctx = test_open(GPUWS_BACKEND_CPU);
    test_fill_uniform_f32(f->host, N, 3, 0, 1);
    f->host[27] = 40; /* one source */
    static const float k[9] = { 0, 0, 0, 0, 1, 0, 0, 0, 0 };
    f->data = test_buffer_from(f->ctx, f->host, sizeof f->host);
    f->kernel = test_buffer_from(f->ctx, k, sizeof k);
    f->out = test_buffer(f->ctx, sizeof f->host);
}

static void fixture_close(fixture *f)
{
    gpuws_buffer_destroy(f->data);
    gpuws_buffer_destroy(f->kernel);
    gpuws_buffer_destroy(f->out);
    gpuws_context_destroy(f->ctx);
}

Test(options, every_public_options_struct_reads_its_struct_size)
{
    fixture f;
    fixture_open(&f);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const options_row *r = &rows[i];
        /* a newer caller's struct: this header's struct followed by a field this library does not know */
        union {
            max_align_t align;
            unsigned char bytes[256];
        } o;
        const size_t later = (r->size + 7) & ~(size_t)7, newer = later + 8;
        cr_assert(newer <= sizeof o.bytes);

        memset(&o, 0, sizeof o);
        r->init(&o);
        cr_assert_eq(*(size_t *)o.bytes, r->size, "%s: its _OPTIONS_INIT sets struct_size", r->name);
        cr_assert_eq(r->call(&f, &o), GPUWS_OK, "%s from its INIT macro: %s", r->name, gpuws_last_error());

        *(size_t *)o.bytes = 0;
        cr_assert_eq(r->call(&f, &o), GPUWS_OK, "%s with struct_size 0 (zero-initialised): %s", r->name,
                     gpuws_last_error());

        *(size_t *)o.bytes = newer;
        cr_assert_eq(r->call(&f, &o), GPUWS_OK, "%s from a newer header, its new field left 0: %s", r->name,
                     gpuws_last_error());

        o.bytes[later] = 1;
        cr_assert_eq(r->call(&f, &o), GPUWS_ERR_UNSUPPORTED, "%s: a newer field set must be refused", r->name);
        cr_assert(strstr(gpuws_last_error(), "knows only the first") && strstr(gpuws_last_error(), "newer header"),
                  "%s: %s", r->name, gpuws_last_error());
        o.bytes[later] = 0;

        *(size_t *)o.bytes = sizeof(size_t);
        cr_assert_eq(r->call(&f, &o), GPUWS_ERR_INVALID_ARGUMENT, "%s: struct_size too small", r->name);
        cr_assert(strstr(gpuws_last_error(), "struct_size 8 is less than"), "%s: %s", r->name, gpuws_last_error());
    }
    fixture_close(&f);
}

Test(options, the_clipping_options_a_sources_struct_points_to_are_read_by_their_own_size)
{
    fixture f;
    fixture_open(&f);
    struct {
        gpuws_sigma_clip_options clip;
        uint64_t later;
    } newer = { GPUWS_SIGMA_CLIP_OPTIONS_INIT, 1 };
    newer.clip.struct_size = sizeof newer;
    gpuws_sources_options o = GPUWS_SOURCES_OPTIONS_INIT;
    o.clip = &newer.clip;
    cr_assert_eq(call_sources(&f, &o), GPUWS_ERR_UNSUPPORTED);
    cr_assert(strstr(gpuws_last_error(), "find_sources: options.clip: struct_size"), "%s", gpuws_last_error());
    newer.later = 0;
    newer.clip.kappa = 2.5;
    cr_assert_eq(call_sources(&f, &o), GPUWS_OK, "%s", gpuws_last_error());
    fixture_close(&f);
}

/* A caller built against the aperture struct's first version (struct_size ending at kron_rmin) has no back field:
 * whatever lies after its struct is not read, so the sum is the one without a map. */
Test(options, the_first_aperture_struct_has_no_background_map)
{
    fixture f;
    fixture_open(&f);
    gpuws_aperture_options o = GPUWS_APERTURE_OPTIONS_INIT;
    o.back = f.data; /* set in the bytes beyond the old struct; read, it would make every pixel 0 */
    const double x = 3.5, y = 4.0, r = 2.5;
    double first, plain, with;
    int flag;
    cr_assert_eq(gpuws_sum_circle(NULL, SIDE, SIDE, f.data, 1, &x, &y, &r, NULL, &plain, NULL, NULL, &flag), GPUWS_OK);
    cr_assert_eq(gpuws_sum_circle(NULL, SIDE, SIDE, f.data, 1, &x, &y, &r, &o, &with, NULL, NULL, &flag), GPUWS_OK);
    cr_assert(with == 0.0 && plain > 1.0, "the map in the current struct: %g, without %g", with, plain);
    o.struct_size = GPUWS__APERTURE_OPTIONS_BASE;
    cr_assert_eq(gpuws_sum_circle(NULL, SIDE, SIDE, f.data, 1, &x, &y, &r, &o, &first, NULL, NULL, &flag), GPUWS_OK,
                 "%s", gpuws_last_error());
    cr_assert_eq(first, plain, "the first version's struct: %.17g, wanted the sum without a map %.17g", first, plain);
    o.struct_size = 0;
    cr_assert_eq(gpuws_sum_circle(NULL, SIDE, SIDE, f.data, 1, &x, &y, &r, &o, &first, NULL, NULL, &flag), GPUWS_OK);
    cr_assert_eq(first, plain, "struct_size 0 (zero-initialised: the first version): %.17g", first);
    fixture_close(&f);
}
