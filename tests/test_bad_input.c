/* Bad input, table-driven: every public call and the CLI given NULLs, zero and overflowing sizes, ranges past the
 * end, handles that are destroyed or belong to another context, launch geometry past the device's limits, unknown
 * names, and broken FITS files. Each row states the exact status (or exit code) and a piece of the message; the
 * harness checks that nothing was written and nothing leaked. How to add a row: docs/reliability.md.
 * The fixture, BAD_CASE and the backend masks are in bad_input.h; the rows for the algorithm calls other than
 * vector_add and reduce are in tests/bad_input/algorithms.c (the same executable).
 *
 * Three tables:
 *   BAD_CASE rows  — API calls, run on a fresh fixture per backend (cpu, opencl, cuda where available): here the
 *                    core API, vector_add and reduce; in tests/bad_input/<file>.c every other algorithm call;
 *   cli_cases      — the gpuws binary (GPUWS_CLI) with bad arguments or environment (and beside it, what
 *                    gpuws info lists for a GPUWS_DEVICE list);
 *   fits_cases     — tools/fits_io.h on files written here with cfitsio, then broken on purpose. */
#include "bad_input.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fits_io.h"
#include "run_cli.h"
#if defined(__has_include)
#if __has_include(<fitsio.h>)
#include <fitsio.h>
#define BAD_HAVE_FITSIO 1
#endif
#endif

long gpuws__alloc_live(void);

/* ================================================================================================================
 * The harness
 * ================================================================================================================ */

#define BAD_MAX_CASES 512
static const bad_case *cases[BAD_MAX_CASES];
static size_t ncases;

void bad_register(const bad_case *c)
{
    cr_assert_lt(ncases, BAD_MAX_CASES, "raise BAD_MAX_CASES");
    cases[ncases++] = c;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const bad_case *const *)a)->name, (*(const bad_case *const *)b)->name);
}

static void sort_cases(void)
{
    static bool sorted;
    if (!sorted) qsort(cases, ncases, sizeof cases[0], by_name); /* stable parameter indices */
    sorted = true;
}

/* Rows live in several files, where the compiler cannot see a name used twice: the row's test fails instead. */
static bool name_used_twice(size_t i)
{
    return (i > 0 && strcmp(cases[i - 1]->name, cases[i]->name) == 0) ||
           (i + 1 < ncases && strcmp(cases[i + 1]->name, cases[i]->name) == 0);
}

void bad_expect_poison(bad_fixture *f, gpuws_buffer *b, size_t from, size_t to, const char *name)
{
    TEST_OK(gpuws_context_synchronize(f->ctx));
    unsigned char *bytes = test_download(b, to);
    for (size_t i = from; i < to; i++)
        cr_assert_eq(bytes[i], TEST_POISON_BYTE, "byte %zu of '%s' was written", i, name);
    free(bytes);
}

static gpuws_buffer *image_buffer(gpuws_context *ctx, const float *px, size_t n)
{
    return test_buffer_from(ctx, px, n * sizeof(float));
}

static void fixture_open(bad_fixture *f, gpuws_backend_kind kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->ctx = test_open(kind);
    f->other = test_open(kind);
    f->dead_ctx = test_open(kind);
    gpuws_context_destroy(f->dead_ctx);
    TEST_OK(gpuws_context_get_device_info(f->ctx, &f->info));
    TEST_OK(gpuws_stream_create(f->ctx, &f->stream));
    TEST_OK(gpuws_stream_create(f->other, &f->foreign_stream));
    TEST_OK(gpuws_event_create(f->ctx, &f->event));
    TEST_OK(gpuws_event_record(f->event, NULL));
    TEST_OK(gpuws_event_create(f->ctx, &f->unrecorded));
    TEST_OK(gpuws_event_create(f->other, &f->foreign_event));
    TEST_OK(gpuws_event_record(f->foreign_event, NULL));

    float px[BAD_N], nan_px[BAD_N], inf_px[BAD_N], one = 7.5f;
    double px64[BAD_N];
    for (int i = 0; i < BAD_N; i++) {
        px[i] = (float)(i + 1);
        px64[i] = (double)(i + 1);
        nan_px[i] = NAN;
        inf_px[i] = i % 2 ? -INFINITY : INFINITY;
    }
    f->in = image_buffer(f->ctx, px, BAD_N);
    f->in64 = test_buffer_from(f->ctx, px64, sizeof px64);
    f->out = test_buffer(f->ctx, BAD_N * 8);
    f->small = test_buffer(f->ctx, 4);
    f->foreign = test_buffer(f->other, BAD_N * 8);
    f->nan_img = image_buffer(f->ctx, nan_px, BAD_N);
    f->inf_img = image_buffer(f->ctx, inf_px, BAD_N);
    f->one_px = image_buffer(f->ctx, &one, 1);
    if (kind != GPUWS_BACKEND_CPU) TEST_OK(gpuws_kernel_get(f->ctx, "vector_add_f32", &f->kernel));
    /* The destroyed handles last: a handle whose memory is reused by a later object of the same kind is that object
     * again (the registry cannot tell them apart; docs/reliability.md), so nothing is created after these. */
    TEST_OK(gpuws_stream_create(f->ctx, &f->dead_stream));
    TEST_OK(gpuws_event_create(f->ctx, &f->dead_event));
    f->dead = test_buffer(f->ctx, 64);
    gpuws_stream_destroy(f->dead_stream);
    gpuws_event_destroy(f->dead_event);
    gpuws_buffer_destroy(f->dead);
    f->result = -12345.0;
    memset(f->host, TEST_POISON_BYTE, sizeof f->host);
    TEST_OK(gpuws_context_synchronize(f->ctx));
    TEST_OK(gpuws_context_synchronize(f->other));
}

static void fixture_close(bad_fixture *f)
{
    gpuws_buffer *bufs[] = { f->in, f->in64, f->out, f->small, f->foreign, f->nan_img, f->inf_img, f->one_px };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gpuws_buffer_destroy(bufs[i]);
    gpuws_event_destroy(f->event);
    gpuws_event_destroy(f->unrecorded);
    gpuws_event_destroy(f->foreign_event);
    gpuws_stream_destroy(f->stream);
    gpuws_stream_destroy(f->foreign_stream);
    gpuws_context_destroy(f->ctx);
    gpuws_context_destroy(f->other);
}

/* Every byte of every fixture buffer (guards included) and of the host outputs. */
typedef struct {
    unsigned char *bytes[8];
    size_t size[8];
    double result;
    unsigned char host[BAD_HOST];
} snapshot;

static void take_snapshot(bad_fixture *f, snapshot *s)
{
    gpuws_buffer *bufs[8] = { f->in, f->in64, f->out, f->small, f->foreign, f->nan_img, f->inf_img, f->one_px };
    TEST_OK(gpuws_context_synchronize(f->ctx));
    TEST_OK(gpuws_context_synchronize(f->other));
    for (int i = 0; i < 8; i++) {
        TEST_OK(gpuws_buffer_get_size(bufs[i], &s->size[i]));
        s->bytes[i] = test_download(bufs[i], s->size[i]);
    }
    s->result = f->result;
    memcpy(s->host, f->host, sizeof s->host);
}

static void free_snapshot(snapshot *s)
{
    for (int i = 0; i < 8; i++) free(s->bytes[i]);
}

static const char *const buffer_names[8] = { "in", "in64", "out", "small", "foreign", "nan_img", "inf_img", "one_px" };

static void expect_unchanged(const bad_case *c, const snapshot *a, const snapshot *b)
{
    for (int i = 0; i < 8; i++)
        cr_assert(memcmp(a->bytes[i], b->bytes[i], a->size[i]) == 0, "%s: the failed call changed buffer '%s'", c->name,
                  buffer_names[i]);
    cr_assert(memcmp(&a->result, &b->result, sizeof a->result) == 0, "%s: the failed call wrote f->result", c->name);
    cr_assert(memcmp(a->host, b->host, sizeof a->host) == 0, "%s: the failed call wrote f->host", c->name);
}

typedef struct {
    int index;
    gpuws_backend_kind kind;
} bad_param;

static void free_params(struct criterion_test_params *crp) { cr_free(crp->params); }

ParameterizedTestParameters(bad_input, api)
{
    sort_cases();
    size_t n = 0;
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++) n += (cases[i]->backends >> test_backends[k]) & 1;
    bad_param *p = cr_malloc(n * sizeof *p);
    size_t j = 0;
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++)
            if ((cases[i]->backends >> test_backends[k]) & 1) p[j++] = (bad_param){ (int)i, test_backends[k] };
    return cr_make_param_array(bad_param, p, n, free_params);
}

/* A context made and destroyed first: the live-handle registry then exists before the leak baseline is taken. */
static void warm_up(void)
{
    gpuws_context *c;
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "cpu";
    TEST_OK(gpuws_context_create(&c, &o));
    gpuws_context_destroy(c);
}

ParameterizedTest(bad_param *p, bad_input, api)
{
    sort_cases();
    const bad_case *c = cases[p->index];
    cr_log_info("%s on %s", c->name, test_backend_name(p->kind));
    cr_assert(!name_used_twice((size_t)p->index), "two BAD_CASE rows are named %s: rename one", c->name);
    warm_up();
    long live0 = gpuws__alloc_live();
    bad_fixture f;
    fixture_open(&f, p->kind);
    snapshot before, after;
    take_snapshot(&f, &before);
    gpuws_status st = c->call(&f);
    const char *msg = gpuws_last_error();
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", msg);
    cr_assert_eq(st, c->want, "%s on %s: got %s, wanted %s: %s", c->name, test_backend_name(p->kind),
                 gpuws_status_name(st), gpuws_status_name(c->want), saved);
    if (c->want != GPUWS_OK) {
        cr_assert(strstr(saved, c->message), "%s on %s: message '%s' lacks '%s'", c->name, test_backend_name(p->kind),
                  saved, c->message);
        take_snapshot(&f, &after);
        expect_unchanged(c, &before, &after);
        free_snapshot(&after);
    }
    free_snapshot(&before);
    fixture_close(&f);
    cr_assert_eq(gpuws__alloc_live(), live0, "%s on %s: %ld library allocation(s) leaked", c->name,
                 test_backend_name(p->kind), gpuws__alloc_live() - live0);
}

/* Every algorithm's case (kernels/<algo>/<algo>_cases.c), set up at the TINY size on one context and run on the
 * default stream of another context of the same backend: the call must refuse (the stream and the buffers belong to
 * different contexts), say why, write none of the outputs (poisoned first) and leak nothing. Cases whose run takes
 * the context's own streams (host-to-host pipelines) have no stream to get wrong and are left out. */
ParameterizedTestParameters(bad_input, case_on_foreign_stream) { return test_case_params(true); }

ParameterizedTest(test_case_param *p, bad_input, case_on_foreign_stream)
{
    const gpuws__case *c = gpuws__cases()[p->index];
    char name[160];
    test_case_name(p, name, sizeof name);
    warm_up();
    long live0 = gpuws__alloc_live();
    gpuws_context *ctx = test_open(p->kind), *other = test_open(p->kind);
    if (strstr(c->w.variant, "f64")) test_require_dtype(ctx, GPUWS_F64);
    gpuws_stream *foreign;
    TEST_OK(gpuws_context_get_default_stream(other, &foreign));
    void *state = NULL;
    bench_counts counts;
    memset(&counts, 0, sizeof counts);
    TEST_OK(c->w.setup(ctx, BENCH_TINY, &state, &counts));
    bench_output out[BENCH_MAX_OUTPUTS];
    const size_t nout = test_case_poison(c, state, out);
    TEST_OK(gpuws_context_synchronize(ctx));
    const gpuws_status st = c->w.run(state, foreign);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gpuws_last_error());
    cr_assert(st == GPUWS_ERR_WRONG_CONTEXT || st == GPUWS_ERR_INVALID_ARGUMENT,
              "%s on another context's stream: got %s, wanted GPUWS_ERR_WRONG_CONTEXT or INVALID_ARGUMENT: %s", name,
              gpuws_status_name(st), msg);
    cr_assert(msg[0], "%s on another context's stream: %s without a message", name, gpuws_status_name(st));
    TEST_OK(gpuws_context_synchronize(ctx));
    TEST_OK(gpuws_context_synchronize(other));
    for (size_t k = 0; k < nout; k++)
        cr_assert(test_output_poisoned(&out[k]), "%s on another context's stream: output %zu was written", name, k);
    c->w.teardown(state);
    gpuws_context_destroy(other);
    gpuws_context_destroy(ctx);
    cr_assert_eq(gpuws__alloc_live(), live0, "%s: %ld library allocation(s) leaked", name, gpuws__alloc_live() - live0);
}

/* ================================================================================================================
 * API rows
 * ================================================================================================================ */

static gpuws_context_options this_backend(bad_fixture *f)
{
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = test_backend_name(f->kind);
    return o;
}

/* ---- contexts, backends, devices ---- */

BAD_CASE(context_create_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'ctx' is NULL")
{
    gpuws_context_options o = this_backend(f);
    return gpuws_context_create(NULL, &o);
}

/* Creates a context with o; a failure must leave the out-handle NULL. */
static gpuws_status try_create(bad_fixture *f, gpuws_context_options o)
{
    gpuws_context *c = f->ctx;
    gpuws_status st = gpuws_context_create(&c, &o);
    if (st == GPUWS_OK) gpuws_context_destroy(c);
    else BAD_EXPECT_NULL(c);
    return st;
}

BAD_CASE(context_create_unknown_backend_lists_the_valid_names, BAD_ALL, GPUWS_ERR_UNKNOWN_BACKEND,
         "valid names: cuda, opencl, cpu")
{
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = "bogus";
    return try_create(f, o);
}

BAD_CASE(context_create_device_index_past_the_end, BAD_ALL, GPUWS_ERR_NO_DEVICE, "device index 99")
{
    gpuws_context_options o = this_backend(f);
    o.device = 99;
    return try_create(f, o);
}

BAD_CASE(context_create_device_index_below_minus_one, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "options.device = -5 is not a device index")
{
    gpuws_context_options o = this_backend(f);
    o.device = -5;
    return try_create(f, o);
}

BAD_CASE(context_create_options_struct_size_smaller_than_any_version, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "context_create: options: struct_size 4 is less than")
{
    gpuws_context_options o = this_backend(f);
    o.struct_size = 4;
    return try_create(f, o);
}

BAD_CASE(context_create_options_from_a_newer_header_with_a_new_field_set, BAD_ALL, GPUWS_ERR_UNSUPPORTED,
         "knows only the first")
{
    struct {
        gpuws_context_options o;
        uint64_t later; /* a field this library does not know */
    } newer = { this_backend(f), 1 };
    newer.o.struct_size = sizeof newer;
    gpuws_context *c = f->ctx;
    gpuws_status st = gpuws_context_create(&c, &newer.o);
    if (st == GPUWS_OK) gpuws_context_destroy(c);
    else BAD_EXPECT_NULL(c);
    return st;
}

BAD_CASE(context_create_platform_that_matches_nothing, BAD_OPENCL, GPUWS_ERR_NO_DEVICE,
         "on platforms matching 'nomatch'")
{
    gpuws_context_options o = this_backend(f);
    o.opencl_platform = "nomatch";
    return try_create(f, o);
}

BAD_CASE(backend_from_name_null, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT, "'name' is NULL")
{
    gpuws_backend_kind k;
    return gpuws_backend_from_name(NULL, &k);
}

BAD_CASE(backend_get_info_kind_outside_the_enum, BAD_CPU, GPUWS_ERR_INVALID_ARGUMENT, "not a gpuws_backend_kind")
{
    gpuws_backend_info bi;
    return gpuws_backend_get_info((gpuws_backend_kind)7, &bi);
}

BAD_CASE(device_get_info_index_past_the_end, BAD_ALL, GPUWS_ERR_NO_DEVICE, "index 1000 is out of range")
{
    gpuws_device_info d;
    return gpuws_device_get_info(f->kind, NULL, 1000, &d);
}

BAD_CASE(device_count_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'count' is NULL")
{
    return gpuws_device_count(f->kind, NULL, NULL);
}

BAD_CASE(context_get_device_info_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'info' is NULL")
{
    return gpuws_context_get_device_info(f->ctx, NULL);
}

BAD_CASE(context_get_device_index_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'index' is NULL")
{
    return gpuws_context_get_device_index(f->ctx, NULL);
}

BAD_CASE(context_synchronize_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return gpuws_context_synchronize(f->dead_ctx);
}

BAD_CASE(context_get_default_stream_null_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "context is NULL")
{
    gpuws_stream *s;
    return gpuws_context_get_default_stream(NULL, &s);
}

/* A context destroyed with objects still live releases them (and warns): destroying one of them afterwards is a
 * no-op and any other use an error, never a use of the freed context. */
BAD_CASE(objects_still_live_when_their_context_is_destroyed, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live buffer")
{
    gpuws_context_options o = this_backend(f);
    gpuws_context *c;
    gpuws_buffer *b;
    gpuws_event *e;
    gpuws_stream *s;
    gpuws_kernel *k = NULL;
    TEST_OK(gpuws_context_create(&c, &o));
    TEST_OK(gpuws_buffer_create(c, 64, &b));
    TEST_OK(gpuws_event_create(c, &e));
    TEST_OK(gpuws_event_record(e, NULL));
    TEST_OK(gpuws_stream_create(c, &s));
    if (f->kind != GPUWS_BACKEND_CPU) TEST_OK(gpuws_kernel_get(c, "vector_add_f32", &k));
    gpuws_context_destroy(c);
    gpuws_buffer_destroy(b);
    gpuws_event_destroy(e);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(c);
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_event_synchronize(e));
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_stream_synchronize(s));
    gpuws_launch_config one = { { 1, 1, 1 }, { 1, 1, 1 } };
    if (k) TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws_launch(NULL, k, &one, NULL, 0));
    return gpuws_buffer_read(b, 0, f->host, 16);
}

/* ---- buffers ---- */

BAD_CASE(buffer_create_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'buffer' is NULL")
{
    return gpuws_buffer_create(f->ctx, 16, NULL);
}

/* A failed create must leave the out-handle NULL. */
static gpuws_status try_buffer_create(gpuws_context *ctx, size_t bytes)
{
    gpuws_buffer *b = (gpuws_buffer *)&b;
    gpuws_status st = gpuws_buffer_create(ctx, bytes, &b);
    if (st == GPUWS_OK) gpuws_buffer_destroy(b);
    else BAD_EXPECT_NULL(b);
    return st;
}

BAD_CASE(buffer_create_zero_bytes, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'bytes' is 0")
{
    return try_buffer_create(f->ctx, 0);
}

BAD_CASE(buffer_create_size_max_is_out_of_memory_with_the_sizes, BAD_ALL, GPUWS_ERR_OUT_OF_MEMORY,
         "requested 18446744073709551615 bytes")
{
    return try_buffer_create(f->ctx, SIZE_MAX);
}

BAD_CASE(buffer_create_in_a_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    return try_buffer_create(f->dead_ctx, 16);
}

BAD_CASE(buffer_write_range_past_the_end, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE,
         "[1, 69) is past the end of a buffer of 68 bytes")
{
    return gpuws_buffer_write(f->small, 1, f->host, 68);
}

BAD_CASE(buffer_write_offset_plus_size_wraps, BAD_ALL, GPUWS_ERR_OVERFLOW, "overflows size_t")
{
    return gpuws_buffer_write(f->out, SIZE_MAX - 3, f->host, 8);
}

BAD_CASE(buffer_write_null_source, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'src' is NULL")
{
    return gpuws_buffer_write(f->out, 0, NULL, 8);
}

BAD_CASE(buffer_read_null_destination, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'dst' is NULL")
{
    return gpuws_buffer_read(f->in, 0, NULL, 8);
}

BAD_CASE(buffer_read_destroyed_buffer, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live buffer")
{
    return gpuws_buffer_read(f->dead, 0, f->host, 8);
}

BAD_CASE(buffer_read_past_the_end, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "[576, 580) is past the end")
{
    return gpuws_buffer_read(f->in, BAD_N * 4 + TEST_GUARD_BYTES, f->host, 4);
}

BAD_CASE(buffer_copy_from_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "belongs to another context")
{
    return gpuws_buffer_copy(f->out, 0, f->foreign, 0, 16);
}

BAD_CASE(buffer_copy_overlapping_ranges_of_one_buffer, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "overlap")
{
    return gpuws_buffer_copy(f->out, 8, f->out, 0, 16);
}

BAD_CASE(buffer_copy_async_overlapping_ranges_of_one_buffer, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT,
         "overlap in one buffer")
{
    return gpuws_buffer_copy_async(f->stream, f->out, 0, f->out, 15, 16);
}

BAD_CASE(buffer_copy_source_range_past_the_end, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'src'")
{
    return gpuws_buffer_copy(f->out, 0, f->small, 0, 100);
}

BAD_CASE(buffer_fill_pattern_size_3, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "pattern_size 3")
{
    return gpuws_buffer_fill(f->out, 0, f->host, 3, 9);
}

BAD_CASE(buffer_fill_offset_not_a_multiple_of_the_pattern, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "must be multiples")
{
    return gpuws_buffer_fill(f->out, 4, f->host, 8, 16);
}

BAD_CASE(buffer_fill_null_pattern, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'pattern' is NULL")
{
    return gpuws_buffer_fill(f->out, 0, NULL, 4, 16);
}

BAD_CASE(buffer_write_async_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_buffer_write_async(f->dead_stream, f->out, 0, f->host, 16);
}

BAD_CASE(buffer_read_async_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT,
         "stream belongs to another context")
{
    return gpuws_buffer_read_async(f->foreign_stream, f->in, 0, f->host, 16);
}

BAD_CASE(buffer_get_size_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'bytes' is NULL")
{
    return gpuws_buffer_get_size(f->in, NULL);
}

BAD_CASE(buffer_get_context_of_a_destroyed_buffer, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live buffer")
{
    gpuws_context *c;
    return gpuws_buffer_get_context(f->dead, &c);
}

BAD_CASE(buffer_get_pointer_of_a_destroyed_buffer, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live buffer")
{
    void *p = f;
    gpuws_status st = gpuws_buffer_get_pointer(f->dead, &p);
    BAD_EXPECT_NULL(p);
    return st;
}

BAD_CASE(buffer_get_pointer_on_opencl_is_unsupported, BAD_OPENCL, GPUWS_ERR_UNSUPPORTED, "have no address")
{
    void *p = f;
    gpuws_status st = gpuws_buffer_get_pointer(f->in, &p);
    BAD_EXPECT_NULL(p);
    return st;
}

BAD_CASE(buffer_wrap_misaligned_memory, BAD_CPU | BAD_CUDA, GPUWS_ERR_INVALID_ARGUMENT, "is not aligned to 16 bytes")
{
    void *p;
    gpuws_buffer *b = (gpuws_buffer *)f;
    gpuws_status st = gpuws_buffer_get_pointer(f->in, &p);
    if (!st) st = gpuws_buffer_wrap(f->ctx, (char *)p + 1, 16, &b);
    BAD_EXPECT_NULL(b);
    return st;
}

BAD_CASE(buffer_wrap_on_a_destroyed_context_is_refused, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'ctx'")
{
    gpuws_buffer *b = (gpuws_buffer *)f;
    gpuws_status st = gpuws_buffer_wrap(NULL, f->host, 16, &b);
    BAD_EXPECT_NULL(b);
    return st;
}

BAD_CASE(stream_get_native_of_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    void *p = f;
    gpuws_status st = gpuws_stream_get_native(f->dead_stream, &p);
    BAD_EXPECT_NULL(p);
    return st;
}

BAD_CASE(host_alloc_zero_bytes, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'bytes' is 0")
{
    void *p = f;
    gpuws_status st = gpuws_host_alloc(f->ctx, 0, &p);
    BAD_EXPECT_NULL(p);
    return st;
}

BAD_CASE(host_alloc_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'ptr' is NULL")
{
    return gpuws_host_alloc(f->ctx, 64, NULL);
}

/* ---- streams and events ---- */

BAD_CASE(stream_create_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'stream' is NULL")
{
    return gpuws_stream_create(f->ctx, NULL);
}

BAD_CASE(stream_synchronize_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_stream_synchronize(f->dead_stream);
}

BAD_CASE(event_create_in_a_destroyed_context, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live context")
{
    gpuws_event *e = f->event;
    gpuws_status st = gpuws_event_create(f->dead_ctx, &e);
    BAD_EXPECT_NULL(e);
    return st;
}

BAD_CASE(event_synchronize_never_recorded, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "never recorded")
{
    return gpuws_event_synchronize(f->unrecorded);
}

BAD_CASE(event_elapsed_with_an_unrecorded_end, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "event 'end' was never recorded")
{
    double ms;
    return gpuws_event_elapsed_ms(f->event, f->unrecorded, &ms);
}

BAD_CASE(event_elapsed_across_contexts, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "different contexts")
{
    double ms;
    return gpuws_event_elapsed_ms(f->event, f->foreign_event, &ms);
}

BAD_CASE(event_elapsed_null_out, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'ms' is NULL")
{
    return gpuws_event_elapsed_ms(f->event, f->event, NULL);
}

BAD_CASE(event_record_destroyed_event, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live event")
{
    return gpuws_event_record(f->dead_event, NULL);
}

BAD_CASE(event_record_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_event_record(f->unrecorded, f->foreign_stream);
}

/* ---- kernels and launches ---- */

BAD_CASE(kernel_get_on_the_cpu_backend_is_unsupported, BAD_CPU, GPUWS_ERR_UNSUPPORTED, "has no kernels to launch")
{
    gpuws_kernel *k;
    return gpuws_kernel_get(f->ctx, "vector_add_f32", &k);
}

BAD_CASE(kernel_get_unknown_name, BAD_GPU, GPUWS_ERR_KERNEL_NOT_FOUND, "no_such_kernel")
{
    gpuws_kernel *k;
    return gpuws_kernel_get(f->ctx, "no_such_kernel", &k);
}

BAD_CASE(kernel_get_empty_name, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'name' is NULL or empty")
{
    gpuws_kernel *k;
    return gpuws_kernel_get(f->ctx, "", &k);
}

BAD_CASE(kernel_get_info_null_kernel, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live kernel")
{
    gpuws_kernel_info ki;
    return gpuws_kernel_get_info(NULL, &ki);
}

static gpuws_status launch_va(bad_fixture *f, gpuws_stream *s, gpuws_launch_config cfg, gpuws_buffer *a, size_t nargs)
{
    gpuws_arg args[] = { gpuws_arg_buffer(a), gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out), gpuws_arg_u64(BAD_N) };
    return gpuws_launch(s, f->kernel, &cfg, args, nargs);
}

#define CFG(gx, gy, gz, bx, by, bz) ((gpuws_launch_config){ { (gx), (gy), (gz) }, { (bx), (by), (bz) } })

BAD_CASE(launch_block_beyond_the_devices_threads_per_block, BAD_GPU, GPUWS_ERR_LAUNCH_CONFIG, "exceeds the limit")
{
    return launch_va(f, NULL, CFG(1, 1, 1, f->info.max_block_dims[0], 2, 1), f->in, 4);
}

BAD_CASE(launch_block_dimension_beyond_the_device, BAD_GPU, GPUWS_ERR_LAUNCH_CONFIG, "block dimension 2")
{
    return launch_va(f, NULL, CFG(1, 1, 1, 1, 1, f->info.max_block_dims[2] + 1), f->in, 4);
}

/* 2^96 blocks: PoCL took it and ran for ever; CUDA refuses dimension 1, OpenCL the total (max_grid_blocks). */
BAD_CASE(launch_grid_of_2_to_the_96_blocks, BAD_GPU, GPUWS_ERR_LAUNCH_CONFIG, "grid (4294967295,4294967295,4294967295)")
{
    return launch_va(f, NULL, CFG(UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, 1, 1), f->in, 4);
}

BAD_CASE(launch_grid_dimension_zero, BAD_GPU, GPUWS_ERR_LAUNCH_CONFIG, "every dimension >= 1")
{
    return launch_va(f, NULL, CFG(1, 0, 1, 64, 1, 1), f->in, 4);
}

BAD_CASE(launch_wrong_number_of_arguments, BAD_GPU, GPUWS_ERR_ARGUMENTS, "takes 4 argument(s), 3 given")
{
    return launch_va(f, NULL, CFG(1, 1, 1, 64, 1, 1), f->in, 3);
}

BAD_CASE(launch_wrong_kind_of_argument, BAD_GPU, GPUWS_ERR_ARGUMENTS, "argument 3: expects uint64, got uint32")
{
    gpuws_arg args[] = { gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out),
                         gpuws_arg_u32(BAD_N) };
    return gpuws_launch(NULL, f->kernel, &CFG(1, 1, 1, 64, 1, 1), args, 4);
}

BAD_CASE(launch_with_a_destroyed_buffer, BAD_GPU, GPUWS_ERR_INVALID_ARGUMENT, "argument 0")
{
    return launch_va(f, NULL, CFG(1, 1, 1, 64, 1, 1), f->dead, 4);
}

BAD_CASE(launch_with_another_contexts_buffer, BAD_GPU, GPUWS_ERR_WRONG_CONTEXT, "buffer belongs to another context")
{
    return launch_va(f, NULL, CFG(1, 1, 1, 64, 1, 1), f->foreign, 4);
}

BAD_CASE(launch_on_a_destroyed_stream, BAD_GPU, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return launch_va(f, f->dead_stream, CFG(1, 1, 1, 64, 1, 1), f->in, 4);
}

BAD_CASE(launch_null_config, BAD_GPU, GPUWS_ERR_INVALID_ARGUMENT, "'config' is NULL")
{
    gpuws_arg args[] = { gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out),
                         gpuws_arg_u64(BAD_N) };
    return gpuws_launch(NULL, f->kernel, NULL, args, 4);
}

BAD_CASE(launch_null_kernel, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live kernel")
{
    return gpuws_launch(NULL, NULL, &CFG(1, 1, 1, 1, 1, 1), NULL, 0);
}

BAD_CASE(launch_more_local_memory_than_the_device_has, BAD_GPU, GPUWS_ERR_LAUNCH_CONFIG, "shared/local memory")
{
    gpuws_kernel *k;
    gpuws_status st = gpuws_kernel_get(f->ctx, "reduce_max_f32_final", &k);
    if (st) return st;
    gpuws_arg args[] = { gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out), gpuws_arg_u32(BAD_N),
                         gpuws_arg_local((size_t)f->info.shared_mem_bytes + 1) };
    return gpuws_launch(NULL, k, &CFG(1, 1, 1, 64, 1, 1), args, 4);
}

/* ---- vector_add ---- */

BAD_CASE(vector_add_null_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'a': buffer is NULL")
{
    return gpuws_vector_add(NULL, GPUWS_F32, BAD_N, NULL, f->in, f->out);
}

BAD_CASE(vector_add_output_of_another_context, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "argument 'c'")
{
    return gpuws_vector_add(NULL, GPUWS_F32, BAD_N, f->in, f->in, f->foreign);
}

BAD_CASE(vector_add_destroyed_output, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'c'")
{
    return gpuws_vector_add(NULL, GPUWS_F32, BAD_N, f->in, f->in, f->dead);
}

BAD_CASE(vector_add_more_elements_than_the_input_holds, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'b': 145 elements")
{
    /* f->in holds BAD_N floats and the guard: 144 */
    return gpuws_vector_add(NULL, GPUWS_F32, (BAD_N * 4 + TEST_GUARD_BYTES) / 4 + 1, f->out, f->in, f->out);
}

BAD_CASE(vector_add_count_times_element_size_wraps_size_t, BAD_ALL, GPUWS_ERR_OVERFLOW, "overflow size_t")
{
    return gpuws_vector_add(NULL, GPUWS_F64, SIZE_MAX / 8 + 2, f->in64, f->in64, f->out);
}

BAD_CASE(vector_add_integer_dtype, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype i32 is not f32 or f64")
{
    return gpuws_vector_add(NULL, GPUWS_I32, 4, f->in, f->in, f->out);
}

BAD_CASE(vector_add_dtype_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "dtype ?")
{
    return gpuws_vector_add(NULL, (gpuws_dtype)99, 4, f->in, f->in, f->out);
}

BAD_CASE(vector_add_on_a_destroyed_stream, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "not a live stream")
{
    return gpuws_vector_add(f->dead_stream, GPUWS_F32, 4, f->in, f->in, f->out);
}

BAD_CASE(vector_add_on_another_contexts_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT, "stream belongs to another context")
{
    return gpuws_vector_add(f->foreign_stream, GPUWS_F32, 4, f->in, f->in, f->out);
}

BAD_CASE(vector_add_of_zero_elements_writes_nothing, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_vector_add(NULL, GPUWS_F32, 0, f->in, f->in, f->out);
    bad_expect_poison(f, f->out, 0, BAD_N * 8, "out");
    return st;
}

BAD_CASE(vector_add_of_nan_images_is_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_vector_add(f->stream, GPUWS_F32, BAD_N, f->nan_img, f->in, f->out);
    if (st || (st = gpuws_stream_synchronize(f->stream))) return st;
    float *o = test_download(f->out, BAD_N * 4);
    for (int i = 0; i < BAD_N; i++) cr_assert(isnan(o[i]), "pixel %d is %g", i, o[i]);
    free(o);
    test_check_guard(f->out, BAD_N * 8, "out");
    return st;
}

BAD_CASE(vector_add_of_one_pixel, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_vector_add(NULL, GPUWS_F32, 1, f->one_px, f->one_px, f->out);
    if (st) return st;
    float *o = test_download(f->out, 8);
    cr_assert_eq(o[0], 15.0f);
    cr_assert_eq(((unsigned char *)o)[4], TEST_POISON_BYTE, "the second element was written");
    free(o);
    return st;
}

/* ---- reduce ---- */

BAD_CASE(reduce_op_outside_the_enum, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "op 7 is not a gpuws_reduce_op")
{
    return gpuws_reduce(NULL, (gpuws_reduce_op)7, GPUWS_F32, BAD_N, f->in, f->out);
}

BAD_CASE(reduce_min_of_zero_elements_has_no_value, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "min of zero elements")
{
    return gpuws_reduce_value(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, 0, f->in, &f->result);
}

BAD_CASE(reduce_value_null_result, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "'result' is NULL")
{
    return gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, BAD_N, f->in, NULL);
}

BAD_CASE(reduce_output_too_small_for_f64, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'out'")
{
    gpuws_buffer *tiny;
    gpuws_status st = gpuws_buffer_create(f->ctx, 4, &tiny);
    if (st) return st;
    st = gpuws_reduce(NULL, GPUWS_REDUCE_SUM, GPUWS_F64, BAD_N, f->in64, tiny);
    gpuws_buffer_destroy(tiny);
    return st;
}

BAD_CASE(reduce_destroyed_input, BAD_ALL, GPUWS_ERR_INVALID_ARGUMENT, "argument 'in'")
{
    return gpuws_reduce_value(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, 4, f->dead, &f->result);
}

BAD_CASE(reduce_input_of_another_context_on_this_stream, BAD_ALL, GPUWS_ERR_WRONG_CONTEXT,
         "stream belongs to another context")
{
    return gpuws_reduce_value(f->stream, GPUWS_REDUCE_SUM, GPUWS_F32, 4, f->foreign, &f->result);
}

BAD_CASE(reduce_more_elements_than_the_input_holds, BAD_ALL, GPUWS_ERR_OUT_OF_RANGE, "argument 'in': 137 elements")
{
    return gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F64, (BAD_N * 8 + TEST_GUARD_BYTES) / 8 + 1, f->in64,
                              &f->result);
}

BAD_CASE(reduce_max_of_an_all_nan_image_is_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_reduce_value(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, BAD_N, f->nan_img, &f->result);
    if (!st) cr_assert(isnan(f->result), "max = %g", f->result);
    return st;
}

BAD_CASE(reduce_sum_of_plus_and_minus_infinity_is_nan, BAD_ALL, GPUWS_OK, "")
{
    gpuws_status st = gpuws_reduce_value(NULL, GPUWS_REDUCE_SUM, GPUWS_F32, BAD_N, f->inf_img, &f->result);
    if (!st) cr_assert(isnan(f->result), "sum = %g", f->result);
    return st;
}

BAD_CASE(reduce_min_and_max_of_infinities, BAD_ALL, GPUWS_OK, "")
{
    double lo = 0, hi = 0;
    gpuws_status st = gpuws_reduce_value(NULL, GPUWS_REDUCE_MIN, GPUWS_F32, BAD_N, f->inf_img, &lo);
    if (!st) st = gpuws_reduce_value(NULL, GPUWS_REDUCE_MAX, GPUWS_F32, BAD_N, f->inf_img, &hi);
    if (!st) cr_assert(lo == -INFINITY && hi == INFINITY, "min %g max %g", lo, hi);
    return st;
}

BAD_CASE(reduce_of_one_pixel_is_that_pixel, BAD_ALL, GPUWS_OK, "")
{
    static const gpuws_reduce_op ops[] = { GPUWS_REDUCE_SUM, GPUWS_REDUCE_MIN, GPUWS_REDUCE_MAX };
    for (int i = 0; i < 3; i++) {
        gpuws_status st = gpuws_reduce_value(NULL, ops[i], GPUWS_F32, 1, f->one_px, &f->result);
        if (st) return st;
        cr_assert_eq(f->result, 7.5, "op %d", i);
    }
    return GPUWS_OK;
}

/* ================================================================================================================
 * CLI rows: the built gpuws binary (ctest passes its path in GPUWS_CLI)
 * ================================================================================================================ */

typedef struct {
    const char *name;
    const char *env[4];   /* NAME=value set for the run (GPUWS_BACKEND etc. are unset otherwise) */
    const char *argv[10]; /* after "gpuws"; NULL-terminated */
    int exit_code;
    const char *output; /* must appear in stdout + stderr */
} cli_case;

static const cli_case cli_cases[] = {
    { "info_unknown_backend", { "GPUWS_BACKEND=bogus" }, { "info" }, 1, "valid names: cuda, opencl, cpu" },
    { "info_device_index_past_the_end", { "GPUWS_BACKEND=cpu", "GPUWS_DEVICE=99" }, { "info" }, 1, "device index 99" },
    { "info_device_index_not_a_number",
      { "GPUWS_BACKEND=cpu", "GPUWS_DEVICE=first" },
      { "info" },
      1,
      "is not a device index" },
    { "info_platform_matches_nothing",
      { "GPUWS_BACKEND=opencl", "GPUWS_OPENCL_PLATFORM=nomatch" },
      { "info" },
      1,
      "'nomatch'" },
    { "info_device_neither_an_index_a_list_nor_all",
      { "GPUWS_BACKEND=cpu", "GPUWS_DEVICE=0,bogus" },
      { "info" },
      1,
      "GPUWS_DEVICE='0,bogus' is not a device index (0, 1, ...), a list of them (0,1,...) nor all" },
    { "info_device_list_index_past_the_end",
      { "GPUWS_BACKEND=cpu", "GPUWS_DEVICE=0,5" },
      { "info" },
      1,
      "GPUWS_DEVICE='0,5': device 5" },
    /* the selection is the list's first device */
    { "info_device_list_whose_first_is_past_the_end",
      { "GPUWS_BACKEND=cpu", "GPUWS_DEVICE=99,0" },
      { "info" },
      1,
      "device index 99" },
    { "log_level_that_is_not_a_level",
      { "GPUWS_BACKEND=cpu", "GPUWS_LOG=bogus" },
      { "info" },
      0,
      "GPUWS_LOG='bogus' is not a log level (error, warn, info, debug); using warn" },
    { "info_unexpected_argument", { NULL }, { "info", "--bogus" }, 2, "unexpected argument '--bogus'" },
    { "unknown_command", { NULL }, { "frobnicate" }, 2, "unknown command 'frobnicate'" },
    { "no_command", { NULL }, { NULL }, 2, "usage: gpuws <command>" },
    { "bench_unknown_backend", { NULL }, { "bench", "--backends", "bogus" }, 2, "unknown backend 'bogus'" },
    { "bench_unknown_algorithm", { NULL }, { "bench", "--algorithms", "nope" }, 2, "unknown algorithm 'nope'" },
    { "bench_repeat_zero", { NULL }, { "bench", "--repeat", "0" }, 2, "--repeat needs a positive count" },
    { "bench_unknown_size", { NULL }, { "bench", "--size", "huge" }, 2, "--size must be small, default or large" },
    { "bench_option_without_value",
      { NULL },
      { "bench", "--backends" },
      2,
      "unknown or incomplete option '--backends'" },
    { "selftest_unknown_option", { NULL }, { "selftest", "--bogus" }, 2, "usage: gpuws selftest" },
    { "selftest_unknown_backend", { NULL }, { "selftest", "--backends", "bogus" }, 2, "unknown backend 'bogus'" },
    { "selftest_unknown_algorithm",
      { NULL },
      { "selftest", "--backends", "cpu", "--algorithms", "nope" },
      2,
      "unknown algorithm 'nope'" },
    { "primes_n_not_a_number",
      { "GPUWS_BACKEND=cpu" },
      { "primes", "abc" },
      2,
      "N = 'abc' is not a whole number from 0 to 2^31" },
    { "primes_n_past_2_to_the_31",
      { "GPUWS_BACKEND=cpu" },
      { "primes", "4294967296" },
      2,
      "is not a whole number from 0 to 2^31" },
    { "primes_unknown_variant",
      { NULL },
      { "primes", "10", "--variant", "bogus" },
      2,
      "bad argument '--variant bogus'" },
    { "pi_zero_samples", { "GPUWS_BACKEND=cpu" }, { "pi", "0" }, 2, "N = '0' is not a whole number of samples" },
    { "pi_seed_not_a_number",
      { NULL },
      { "pi", "100", "--seed", "x" },
      2,
      "--seed needs a whole number from 0 to 2^64 - 1, not 'x'" },
    { "matmul_two_sizes", { NULL }, { "matmul", "4", "4" }, 2, "need the three sizes M N K" },
    { "matmul_unknown_dtype",
      { NULL },
      { "matmul", "4", "4", "4", "--dtype", "f16" },
      2,
      "bad argument '--dtype f16'" },
    { "matmul_more_than_host_memory",
      { "GPUWS_BACKEND=cpu" },
      { "matmul", "99999999", "99999999", "99999999" },
      1,
      "GB of host memory; this machine has" },
    { "convolve_missing_input",
      { "GPUWS_BACKEND=cpu" },
      { "convolve", "/nonexistent/in.fits", "/nonexistent/k.fits", "-o", "/tmp/gpuws-never.fits" },
      1,
      "/nonexistent/in.fits: cannot open as FITS" },
    { "convolve_without_an_output",
      { NULL },
      { "convolve", "in.fits", "k.fits" },
      2,
      "needs IN.fits, KERNEL.fits and -o OUT.fits" },
    { "convolve_unknown_mode",
      { NULL },
      { "convolve", "--demo", "--mode", "bogus" },
      2,
      "--mode must be full, same or valid" },
    { "convolve_demo_size_zero", { NULL }, { "convolve", "--demo", "--size", "0" }, 2, "--size needs a side from 16" },
    { "sources_missing_image",
      { "GPUWS_BACKEND=cpu" },
      { "sources", "/nonexistent/sky.fits" },
      1,
      "/nonexistent/sky.fits: cannot open as FITS" },
    { "sources_directory_as_image",
      { "GPUWS_BACKEND=cpu" },
      { "sources", "/tmp" },
      1,
      "/tmp: is a directory, not a FITS file" },
    { "sources_demo_size_one",
      { NULL },
      { "sources", "--demo", "--size", "1" },
      2,
      "--size needs a whole number from 16" },
    { "sources_connectivity_six",
      { NULL },
      { "sources", "--demo", "--connectivity", "6" },
      2,
      "--connectivity is 4 or 8" },
    { "sources_negative_kappa", { NULL }, { "sources", "--demo", "--kappa", "-1" }, 2, "--kappa must be > 0" },
    { "sources_unwritable_catalog",
      { "GPUWS_BACKEND=cpu" },
      { "sources", "--demo", "--size", "64", "--catalog", "/proc/gpuws-bad-input.csv" },
      1,
      "/proc/gpuws-bad-input.csv: cannot create" },
};
#define N_CLI (sizeof cli_cases / sizeof cli_cases[0])

ParameterizedTestParameters(bad_input, cli)
{
    static int idx[N_CLI];
    for (size_t i = 0; i < N_CLI; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_CLI);
}

ParameterizedTest(int *i, bad_input, cli)
{
    const cli_case *c = &cli_cases[*i];
    if (strstr(c->name, "platform")) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi);
        if (!bi.available) cr_skip_test("%s: opencl: %s", c->name, bi.reason);
    }
    char *out;
    int code = test_run_cli(c->argv, c->env, &out);
    cr_assert_eq(code, c->exit_code, "%s: exit %d, wanted %d; output:\n%s", c->name, code, c->exit_code, out);
    cr_assert(strstr(out, c->output), "%s: output lacks '%s':\n%s", c->name, c->output, out);
    free(out);
}

/* Beside the error rows, what gpuws info lists for a GPUWS_DEVICE list or all: every context gpuws_contexts_create
 * opens, in order, one line each ("<backend> <index>  <name> (<platform>)"), and the variable in the selection line.
 * The CPU backend has one device: 0,0 lists it twice, all once; one index or unset lists nothing. */
static size_t count_rows(const char *text, const char *row)
{
    size_t n = 0;
    for (const char *p = strstr(text, row); p; p = strstr(p + strlen(row) - 1, row)) n++; /* rows share a '\n' */
    return n;
}

Test(bad_input, info_lists_the_contexts_a_gpuws_device_list_opens)
{
    gpuws_device_info d;
    TEST_OK(gpuws_device_get_info(GPUWS_BACKEND_CPU, NULL, 0, &d));
    char row[300];
    snprintf(row, sizeof row, "\n    cpu    0  %s (%s)\n", d.name, d.platform);
    static const struct {
        const char *env, *selection;
        size_t rows;
    } runs[] = {
        { "GPUWS_DEVICE=0,0", "GPUWS_DEVICE=0,0,", 2 },
        { "GPUWS_DEVICE=all", "GPUWS_DEVICE=all,", 1 },
        { "GPUWS_DEVICE=0", "GPUWS_DEVICE=0,", 0 },
        { NULL, "GPUWS_DEVICE=<unset>,", 0 },
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        const char *env[] = { "GPUWS_BACKEND=cpu", runs[i].env, NULL };
        const char *argv[] = { "info", NULL };
        char *out;
        int code = test_run_cli(argv, env, &out);
        cr_assert_eq(code, 0, "%s: exit %d; output:\n%s", runs[i].selection, code, out);
        cr_assert(strstr(out, runs[i].selection), "output lacks '%s':\n%s", runs[i].selection, out);
        char header[64];
        snprintf(header, sizeof header, "\n  GPUWS_DEVICE's list: %zu context(s)", runs[i].rows);
        cr_assert(runs[i].rows ? strstr(out, header) != NULL : strstr(out, "\n  GPUWS_DEVICE's list:") == NULL,
                  "%s: want %zu context(s):\n%s", runs[i].selection, runs[i].rows, out);
        cr_assert_eq(count_rows(out, row), runs[i].rows, "%s: '%s' listed %zu times, want %zu:\n%s", runs[i].selection,
                     row + 1, count_rows(out, row), runs[i].rows, out);
        free(out);
    }
}

/* ================================================================================================================
 * FITS rows: tools/fits_io.h on files written here with cfitsio (then broken on purpose where the row says so)
 * ================================================================================================================ */

static char fits_dir[256];

static void fits_setup(void)
{
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    snprintf(fits_dir, sizeof fits_dir, "/tmp/gpuws-bad-input-XXXXXX");
    cr_assert_not_null(mkdtemp(fits_dir));
}

static void fits_teardown(void)
{
    if (!fits_dir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fits_dir);
    cr_assert_eq(system(cmd), 0);
}

static void fits_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", fits_dir, name); }

#ifdef BAD_HAVE_FITSIO
static fitsfile *fits_new(const char *path)
{
    fitsfile *f;
    int st = 0;
    cr_assert_eq(fits_create_diskfile(&f, path, &st), 0, "creating %s: status %d", path, st);
    return f;
}

static void fits_done(fitsfile *f, int st)
{
    fits_close_file(f, &st);
    cr_assert_eq(st, 0, "cfitsio status %d", st);
}

/* An image of naxis axes with the given float pixels (n of them). */
static void write_float_image(const char *path, int naxis, long *naxes, const float *px, long n)
{
    fitsfile *f = fits_new(path);
    int st = 0;
    fits_create_img(f, FLOAT_IMG, naxis, naxes, &st);
    if (n) fits_write_img(f, TFLOAT, 1, n, (void *)px, &st);
    fits_done(f, st);
}

static void make_image_4x3(const char *path)
{
    float px[12];
    for (int i = 0; i < 12; i++) px[i] = (float)i - 3.5f;
    long naxes[2] = { 4, 3 };
    write_float_image(path, 2, naxes, px, 12);
}

static void make_empty(const char *path) { fclose(fopen(path, "w")); }

static void make_text(const char *path)
{
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 100; i++) fputs("this is not a FITS file, it is a text file\n", f);
    fclose(f);
}

static void cut(const char *path, off_t keep) { cr_assert_eq(truncate(path, keep), 0, "truncating %s", path); }

static void make_truncated_in_header(const char *path)
{
    make_image_4x3(path);
    cut(path, 1000);
}

static void make_truncated_in_data(const char *path)
{
    make_image_4x3(path);
    cut(path, 2880 + 20); /* the header block and 5 of 12 pixels */
}

static void make_cube(const char *path)
{
    float px[24];
    for (int i = 0; i < 24; i++) px[i] = (float)i;
    long naxes[3] = { 4, 3, 2 };
    write_float_image(path, 3, naxes, px, 24);
}

static void make_degenerate_third_axis(const char *path)
{
    float px[12];
    for (int i = 0; i < 12; i++) px[i] = (float)i - 3.5f;
    long naxes[4] = { 4, 3, 1, 1 };
    write_float_image(path, 4, naxes, px, 12);
}

static void make_bintable_only(const char *path)
{
    fitsfile *f = fits_new(path);
    int st = 0;
    char *ttype[] = { "FLUX" }, *tform[] = { "1E" }, *tunit[] = { "Jy" };
    float v[3] = { 1, 2, 3 };
    fits_create_img(f, 8, 0, NULL, &st);
    fits_create_tbl(f, BINARY_TBL, 3, 1, ttype, tform, tunit, "SOURCES", &st);
    fits_write_col(f, TFLOAT, 1, 1, 1, 3, v, &st);
    fits_done(f, st);
}

static void make_one_d(const char *path)
{
    float px[5] = { 1, 2, 3, 4, 5 };
    long naxes[1] = { 5 };
    write_float_image(path, 1, naxes, px, 5);
}

static void make_zero_axis(const char *path)
{
    long naxes[2] = { 0, 5 };
    write_float_image(path, 2, naxes, NULL, 0);
}

static void make_all_nan(const char *path)
{
    float px[12];
    for (int i = 0; i < 12; i++) px[i] = NAN;
    long naxes[2] = { 4, 3 };
    write_float_image(path, 2, naxes, px, 12);
}

static void make_all_inf(const char *path)
{
    float px[12];
    for (int i = 0; i < 12; i++) px[i] = i % 2 ? -INFINITY : INFINITY;
    long naxes[2] = { 4, 3 };
    write_float_image(path, 2, naxes, px, 12);
}

static void make_one_pixel(const char *path)
{
    float px = 42.0f;
    long naxes[2] = { 1, 1 };
    write_float_image(path, 2, naxes, &px, 1);
}

static void make_scaled_int16_with_blank(const char *path)
{
    fitsfile *f = fits_new(path);
    int st = 0;
    short raw[12];
    for (int i = 0; i < 12; i++) raw[i] = (short)(i * 10);
    raw[5] = -32768;
    long naxes[2] = { 4, 3 }, blank = -32768;
    double bscale = 0.5, bzero = 100.0;
    fits_create_img(f, SHORT_IMG, 2, naxes, &st);
    fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
    fits_write_key(f, TDOUBLE, "BZERO", &bzero, NULL, &st);
    fits_write_key(f, TLONG, "BLANK", &blank, NULL, &st);
    fits_set_bscale(f, 1.0, 0.0, &st); /* write the raw integers */
    fits_write_img(f, TSHORT, 1, 12, raw, &st);
    fits_done(f, st);
}

static void make_image_in_extension(const char *path)
{
    fitsfile *f = fits_new(path);
    int st = 0;
    float px[12];
    for (int i = 0; i < 12; i++) px[i] = (float)i - 3.5f;
    long naxes[2] = { 4, 3 };
    fits_create_img(f, 8, 0, NULL, &st);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_write_img(f, TFLOAT, 1, 12, px, &st);
    fits_done(f, st);
}

/* Rewrites the value of a header keyword in place (a deliberate corruption of a written file). */
static void patch_keyword(const char *path, const char *key, const char *value)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    char card[81] = { 0 };
    for (long pos = 0; fread(card, 1, 80, f) == 80; pos += 80) {
        if (strncmp(card, key, strlen(key)) == 0 && card[8] == '=') {
            char v[21];
            snprintf(v, sizeof v, "%20s", value);
            fseek(f, pos + 10, SEEK_SET);
            fwrite(v, 1, 20, f);
            fclose(f);
            return;
        }
    }
    fclose(f);
    cr_assert_fail("no %s card in %s", key, path);
}

static void make_header_claims_huge_image(const char *path)
{
    make_image_4x3(path);
    patch_keyword(path, "NAXIS1", "2000000000");
    patch_keyword(path, "NAXIS2", "2000000000");
}

static void make_header_claims_big_image(const char *path)
{
    make_image_4x3(path);
    patch_keyword(path, "NAXIS1", "1000");
    patch_keyword(path, "NAXIS2", "1000");
}

static void make_corrupt_first_card(const char *path)
{
    make_image_4x3(path);
    FILE *f = fopen(path, "r+b");
    fwrite("GARBAGE!", 1, 8, f);
    fclose(f);
}

static void write_rice(const char *path)
{
    fitsfile *f = fits_new(path);
    int st = 0, px[64];
    for (int i = 0; i < 64; i++) px[i] = (i * 37) % 101;
    long naxes[2] = { 8, 8 };
    fits_set_compression_type(f, RICE_1, &st);
    fits_create_img(f, LONG_IMG, 2, naxes, &st);
    fits_write_img(f, TINT, 1, 64, px, &st);
    fits_done(f, st);
}

static void make_rice_compressed(const char *path) { write_rice(path); }

static void make_a_directory(const char *path) { cr_assert_eq(mkdir(path, 0755), 0); }

/* Opening a FIFO for reading blocks until a writer comes: the reader must refuse it before cfitsio opens it. */
static void make_a_fifo(const char *path) { cr_assert_eq(mkfifo(path, 0644), 0); }

/* The primary HDU (no data) and part of the image extension's header: cfitsio counts one HDU and says nothing. */
static void make_cut_inside_the_second_header(const char *path)
{
    make_image_in_extension(path);
    cut(path, 2880 + 400); /* 5 of its 8 cards */
}

static void make_cut_in_the_padding_of_the_second_header(const char *path)
{
    make_image_in_extension(path);
    cut(path, 2880 + 1000); /* every card, END included, but not the whole 2880-byte block */
}

/* make_scaled_int16_with_blank with one value replaced: FITS requires BSCALE and BZERO to be numbers, BSCALE not 0
 * (cfitsio ignores a value it cannot read, and scales by 0). */
static void make_bzero_a_string(const char *path)
{
    make_scaled_int16_with_blank(path);
    patch_keyword(path, "BZERO", "'x'");
}

static void make_bscale_the_string_nan(const char *path)
{
    make_scaled_int16_with_blank(path);
    patch_keyword(path, "BSCALE", "'NaN'");
}

static void make_bscale_nan(const char *path)
{
    make_scaled_int16_with_blank(path);
    patch_keyword(path, "BSCALE", "NaN");
}

static void make_bscale_zero(const char *path)
{
    make_scaled_int16_with_blank(path);
    patch_keyword(path, "BSCALE", "0.0");
}

static void make_bzero_past_the_range_of_double(const char *path)
{
    make_scaled_int16_with_blank(path);
    patch_keyword(path, "BZERO", "1E400");
}

/* fuzz/fuzz_fits found this: ZTILE2 = 0 makes cfitsio 4.2 divide by zero while it reads the header (SIGFPE). */
static void make_rice_with_a_zero_tile_size(const char *path)
{
    write_rice(path);
    patch_keyword(path, "ZTILE2", "0");
}

/* fuzz/fuzz_fits found this: one tile's heap offset moved past its data made cfitsio 4.2's Rice decoder read out of
 * bounds and crash under ASan. The reader runs cfitsio in a child process since, and reports the file corrupt. */
static void make_rice_with_a_bad_tile_offset(const char *path)
{
    write_rice(path);
    fitsfile *f;
    int st = 0, hdutype;
    LONGLONG head, data, end;
    cr_assert_eq(fits_open_diskfile(&f, path, READONLY, &st), 0);
    fits_movabs_hdu(f, 2, &hdutype, &st);
    fits_get_hduaddrll(f, &head, &data, &end, &st);
    int s2 = 0;
    fits_close_file(f, &s2);
    cr_assert_eq(st, 0);
    /* the descriptor table: one (byte count, heap offset) pair of big-endian int32 per 8-pixel tile; the fuzzer moved
     * tile 4's offset 4 bytes on, into the middle of the next tile's data */
    FILE *fp = fopen(path, "r+b");
    unsigned char off[4];
    fseek(fp, (long)data + 4 * 8 + 4, SEEK_SET);
    cr_assert_eq(fread(off, 1, 4, fp), 4);
    off[3] = (unsigned char)(off[3] + 4);
    fseek(fp, (long)data + 4 * 8 + 4, SEEK_SET);
    fwrite(off, 1, 4, fp);
    fclose(fp);
}
#endif

typedef struct {
    const char *name;
    void (*make)(const char *path); /* NULL: the file does not exist */
    int want_double;                /* as fits_read_image's argument */
    int ok;                         /* 1: must load; 0: must fail */
    const char *message;            /* failure: in the error text */
    size_t width, height;           /* success: the dimensions */
    double first, last;             /* success: first and last pixels (NaN matches NaN) */
} fits_case;

static const fits_case fits_cases[] = {
    { "missing_file", NULL, -1, 0, "cannot open as FITS", 0, 0, 0, 0 },
#ifdef BAD_HAVE_FITSIO
    { "empty_file", make_empty, -1, 0, "cannot open as FITS", 0, 0, 0, 0 },
    { "text_file", make_text, -1, 0, "cannot open as FITS", 0, 0, 0, 0 },
    { "truncated_in_the_header", make_truncated_in_header, -1, 0, "cannot open as FITS", 0, 0, 0, 0 },
    { "truncated_in_the_data", make_truncated_in_data, -1, 0, "truncated", 0, 0, 0, 0 },
    { "corrupt_first_card", make_corrupt_first_card, -1, 0, "cannot open as FITS", 0, 0, 0, 0 },
    { "header_claims_more_pixels_than_memory", make_header_claims_huge_image, -1, 0, "more than this machine's memory",
      0, 0, 0, 0 },
    { "header_claims_more_pixels_than_the_file_holds", make_header_claims_big_image, -1, 0,
      "truncated: the header declares a 1000 x 1000 image", 0, 0, 0, 0 },
    { "three_d_cube", make_cube, -1, 0, "3-D image (axis 3 has length 2)", 0, 0, 0, 0 },
    { "bintable_only", make_bintable_only, -1, 0, "no 2-D image in any HDU", 0, 0, 0, 0 },
    { "one_d_image", make_one_d, -1, 0, "no 2-D image in any HDU", 0, 0, 0, 0 },
    { "zero_length_axis", make_zero_axis, -1, 0, "zero-length axis", 0, 0, 0, 0 },
    { "rice_with_a_zero_tile_size", make_rice_with_a_zero_tile_size, -1, 0, "cfitsio crashed reading it (signal 8)", 0,
      0, 0, 0 },
    { "rice_with_a_bad_tile_offset", make_rice_with_a_bad_tile_offset, -1, 0, "corrupt", 0, 0, 0, 0 },
    { "a_directory", make_a_directory, -1, 0, "is a directory, not a FITS file", 0, 0, 0, 0 },
    { "a_fifo", make_a_fifo, -1, 0, "is a FIFO, not a regular file", 0, 0, 0, 0 },
    { "cut_inside_the_second_header", make_cut_inside_the_second_header, -1, 0,
      "truncated: the header of HDU 2 (from byte 2880) has no END card; the file ends after 3280 bytes", 0, 0, 0, 0 },
    { "cut_in_the_padding_of_the_second_header", make_cut_in_the_padding_of_the_second_header, -1, 0,
      "truncated: the header of HDU 2 (from byte 2880) ends in a 2880-byte block the file does not complete", 0, 0, 0,
      0 },
    { "bzero_a_string", make_bzero_a_string, -1, 0, "HDU 1: BZERO = 'x' is a string; FITS requires a number", 0, 0, 0,
      0 },
    { "bscale_the_string_nan", make_bscale_the_string_nan, -1, 0, "HDU 1: BSCALE = 'NaN' is a string", 0, 0, 0, 0 },
    { "bscale_nan", make_bscale_nan, -1, 0, "HDU 1: BSCALE = NaN is not a finite number", 0, 0, 0, 0 },
    { "bscale_zero", make_bscale_zero, -1, 0, "HDU 1: BSCALE = 0.0 is zero", 0, 0, 0, 0 },
    { "bzero_past_the_range_of_double", make_bzero_past_the_range_of_double, -1, 0,
      "HDU 1: BZERO = 1E400 is not a finite number", 0, 0, 0, 0 },
    { "degenerate_third_and_fourth_axes_are_dropped", make_degenerate_third_axis, 0, 1, "", 4, 3, -3.5, 7.5 },
    { "all_nan", make_all_nan, 0, 1, "", 4, 3, NAN, NAN },
    { "all_inf", make_all_inf, 1, 1, "", 4, 3, INFINITY, -INFINITY },
    { "one_pixel", make_one_pixel, -1, 1, "", 1, 1, 42, 42 },
    { "scaled_int16_with_blank", make_scaled_int16_with_blank, 1, 1, "", 4, 3, 100, 155 },
    { "image_in_an_extension", make_image_in_extension, 0, 1, "", 4, 3, -3.5, 7.5 },
    { "rice_compressed", make_rice_compressed, 1, 1, "", 8, 8, 0, (63 * 37) % 101 },
#endif
};
#define N_FITS (sizeof fits_cases / sizeof fits_cases[0])

/* The same with an HDU or a plane asked for (gpuws sources --hdu / --plane). */
typedef struct {
    fits_case c;
    int hdu;          /* fits_read_request.hdu: 0 for the first image */
    long long plane1; /* the plane asked for plus 1; 0: none */
} fits_at_case;

static const fits_at_case fits_at_cases[] = {
#ifdef BAD_HAVE_FITSIO
    { { "cube_names_its_planes", make_cube, -1, 0, "choose one of its 2 planes with --plane (0 to 1)", 0, 0, 0, 0 },
      0,
      0 },
    { { "cube_plane_1", make_cube, 0, 1, "", 4, 3, 12, 23 }, 0, 2 },
    { { "cube_plane_past_the_last", make_cube, 0, 0, "HDU 1 has 2 planes (0 to 1): there is no plane 2", 0, 0, 0, 0 },
      0,
      3 },
    { { "degenerate_axes_plane_0", make_degenerate_third_axis, 0, 1, "", 4, 3, -3.5, 7.5 }, 0, 1 },
    { { "degenerate_axes_plane_1", make_degenerate_third_axis, 0, 0, "HDU 1 has 1 plane (0 to 0): there is no plane 1",
        0, 0, 0, 0 },
      0,
      2 },
    { { "hdu_2_a_binary_table", make_bintable_only, -1, 0, "HDU 2 is a binary table, not an image", 0, 0, 0, 0 },
      2,
      0 },
    { { "hdu_past_the_last", make_bintable_only, -1, 0, "there is no HDU 5: the file has 2", 0, 0, 0, 0 }, 5, 0 },
    { { "hdu_1_an_empty_primary", make_image_in_extension, -1, 0, "HDU 1 holds no 2-D image (NAXIS = 0)", 0, 0, 0, 0 },
      1,
      0 },
    { { "hdu_2_an_image_extension", make_image_in_extension, 0, 1, "", 4, 3, -3.5, 7.5 }, 2, 0 },
    { { "hdu_1_a_one_d_image", make_one_d, -1, 0, "HDU 1 holds no 2-D image (NAXIS = 1)", 0, 0, 0, 0 }, 1, 0 },
#else
    { { "missing_file", NULL, -1, 0, "cannot open as FITS", 0, 0, 0, 0 }, 1, 0 },
#endif
};
#define N_FITS_AT (sizeof fits_at_cases / sizeof fits_at_cases[0])

ParameterizedTestParameters(bad_input, fits_read)
{
    static int idx[N_FITS];
    for (size_t i = 0; i < N_FITS; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_FITS);
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* Reads the file c makes from HDU hdu, plane plane1 - 1, and checks the outcome. */
static void check_fits_read(const fits_case *c, int hdu, long long plane1)
{
    char path[400];
    fits_path(path, sizeof path, "in.fits");
    if (c->make) c->make(path);
    fits_image img;
    memset(&img, 0x5a, sizeof img);
    char err[512] = "";
    const fits_read_request req = { hdu, plane1 - 1, 1 };
    int rc = fits_read_image_at(path, c->want_double, &req, &img, err, sizeof err);
    if (!c->ok) {
        cr_assert_eq(rc, -1, "%s: read succeeded", c->name);
        cr_assert(strstr(err, c->message), "%s: error '%s' lacks '%s'", c->name, err, c->message);
        cr_assert(strstr(err, path), "%s: error '%s' does not name the file", c->name, err);
        cr_assert(img.data == NULL && img.width == 0 && img.height == 0, "%s: a failed read left an image", c->name);
        return;
    }
    cr_assert_eq(rc, 0, "%s: %s", c->name, err);
    cr_assert(img.width == c->width && img.height == c->height, "%s: %zu x %zu, wanted %zu x %zu", c->name, img.width,
              img.height, c->width, c->height);
    size_t n = img.width * img.height;
    double first = img.is_double ? ((double *)img.data)[0] : ((float *)img.data)[0];
    double last = img.is_double ? ((double *)img.data)[n - 1] : ((float *)img.data)[n - 1];
    cr_assert(same(first, c->first) && same(last, c->last), "%s: first %g last %g, wanted %g and %g", c->name, first,
              last, c->first, c->last);
    if (strcmp(c->name, "scaled_int16_with_blank") == 0)
        cr_assert(isnan(((double *)img.data)[5]), "a BLANK pixel becomes NaN, got %g", ((double *)img.data)[5]);
    /* the header comes back from the reading process whole: one 80-character card per key */
    cr_assert(img.header && img.nkeys > 0 && strlen(img.header) == (size_t)img.nkeys * 80 &&
                  strstr(img.header, "NAXIS1  ="),
              "%s: header of %d keys: %.160s", c->name, img.nkeys, img.header ? img.header : "(none)");
    fits_image_free(&img);
    cr_assert_null(img.data);
}

/* The timeout: a reader that opens a FIFO waits for a writer forever. */
ParameterizedTest(int *i, bad_input, fits_read, .init = fits_setup, .fini = fits_teardown, .timeout = 120)
{
    check_fits_read(&fits_cases[*i], 0, 0);
}

ParameterizedTestParameters(bad_input, fits_read_at)
{
    static int idx[N_FITS_AT];
    for (size_t i = 0; i < N_FITS_AT; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_FITS_AT);
}

ParameterizedTest(int *i, bad_input, fits_read_at, .init = fits_setup, .fini = fits_teardown, .timeout = 120)
{
    check_fits_read(&fits_at_cases[*i].c, fits_at_cases[*i].hdu, fits_at_cases[*i].plane1);
}

/* ---- writing to places that cannot be written ---- */

typedef struct {
    const char *name;
    const char *path; /* "%s" is the temp dir */
    const char *message;
} fits_write_case;

static const fits_write_case fits_write_cases[] = {
    { "under_proc", "/proc/gpuws-bad-input.fits", "cannot create the file" },
    { "under_a_regular_file", "%s/regular/out.fits", "cannot create the file" },
    { "in_a_missing_directory", "%s/missing/out.fits", "cannot create the file" },
    { "onto_a_directory", "%s/adir", "cannot create the file: it exists" },
    { "onto_an_existing_file", "%s/regular", "cannot create the file: it exists" },
};
#define N_FITS_WRITE (sizeof fits_write_cases / sizeof fits_write_cases[0])

ParameterizedTestParameters(bad_input, fits_write)
{
    static int idx[N_FITS_WRITE];
    for (size_t i = 0; i < N_FITS_WRITE; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_FITS_WRITE);
}

/* Entries of the temp dir other than the two fixtures: a failed write must leave no file (temporary or not). */
static int stray_files(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep -v -x -e regular -e adir)\"", fits_dir);
    return system(cmd);
}

ParameterizedTest(int *i, bad_input, fits_write, .init = fits_setup, .fini = fits_teardown)
{
    const fits_write_case *c = &fits_write_cases[*i];
    char fixture[400], path[400];
    fits_path(fixture, sizeof fixture, "regular");
    {
        FILE *f = fopen(fixture, "w");
        fputs("x\n", f);
        fclose(f);
    }
    fits_path(fixture, sizeof fixture, "adir");
    cr_assert_eq(mkdir(fixture, 0755), 0);
    snprintf(path, sizeof path, c->path, fits_dir);
    float px[6] = { 1, 2, 3, 4, 5, 6 };
    char err[512] = "";
    int rc = fits_write_image(path, FITS_F32, px, 3, 2, err, sizeof err);
    cr_assert_eq(rc, -1, "%s: writing %s succeeded", c->name, path);
    cr_assert(strstr(err, c->message) && strstr(err, path), "%s: error '%s'", c->name, err);
    cr_assert_eq(stray_files(), 0, "%s: a failed write left a file in %s", c->name, fits_dir);
    struct stat sb;
    if (strcmp(c->name, "onto_a_directory") == 0)
        cr_assert(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory is gone");
    else if (strncmp(path, "/proc", 5) == 0) cr_assert_neq(stat(path, &sb), 0, "%s exists", path);
    fits_path(fixture, sizeof fixture, "regular");
    char *kept = test_read_file(fixture); /* never replaced: fits_write_image creates new files only */
    cr_assert_str_eq(kept, "x\n", "%s: the existing file was written", c->name);
    free(kept);
}

Test(bad_input, fits_write_nothing_to_write)
{
    char err[256] = "";
    float px = 1;
    cr_assert_eq(fits_write_image("/tmp/gpuws-never-written.fits", FITS_F32, &px, 0, 1, err, sizeof err), -1);
    cr_assert(strstr(err, "nothing to write"), "%s", err);
    cr_assert_eq(fits_write_image("/tmp/gpuws-never-written.fits", FITS_F32, NULL, 1, 1, err, sizeof err), -1);
    cr_assert_neq(access("/tmp/gpuws-never-written.fits", F_OK), 0);
}
