/* Allocation failure. Fault injection: every row is run with its 1st, 2nd, 3rd, ... host allocation inside the
 * library made to fail (gpuws__fault_alloc_countdown) until one run makes no allocation fail; each failure must come
 * back as GPUWS_ERR_OUT_OF_MEMORY naming the sizes, must leave the output untouched, must release everything the
 * call had taken (the library's live-allocation count returns to its value before the fixture), and must leave the
 * context working. Real failures: requests larger than the device, and a request that passes that check but that
 * the backend cannot satisfy (address space limited with RLIMIT_AS). How to add a row: docs/reliability.md. */
#include "faults.h"
#include "run_cli.h"

#include "../core/errors.h" /* the live-handle registry: registry_make_room */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAULT_MAX_CASES 256
static const fault_case *cases[FAULT_MAX_CASES];
static size_t ncases;

void fault_register(const fault_case *c)
{
    if (ncases < FAULT_MAX_CASES) cases[ncases++] = c;
}

/* ---- rows: core objects ---- */

FAULT_CASE(context_create, FAULT_ALL)
{
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = test_backend_name(f->kind);
    gpuws_context *c;
    gpuws_status st = gpuws_context_create(&c, &o);
    if (!st) gpuws_context_destroy(c);
    return st;
}

FAULT_CASE(buffer_create, FAULT_ALL)
{
    gpuws_buffer *b;
    gpuws_status st = gpuws_buffer_create(f->ctx, 1 << 20, &b);
    if (!st) gpuws_buffer_destroy(b);
    return st;
}

FAULT_CASE(stream_create, FAULT_ALL)
{
    gpuws_stream *s;
    gpuws_status st = gpuws_stream_create(f->ctx, &s);
    if (!st) gpuws_stream_destroy(s);
    return st;
}

FAULT_CASE(event_create_and_record, FAULT_ALL)
{
    gpuws_event *e;
    gpuws_status st = gpuws_event_create(f->ctx, &e);
    if (!st) {
        st = gpuws_event_record(e, f->stream);
        if (!st) st = gpuws_event_synchronize(e);
        gpuws_event_destroy(e);
    }
    return st;
}

FAULT_CASE(host_alloc, FAULT_ALL)
{
    void *p;
    gpuws_status st = gpuws_host_alloc(f->ctx, 1 << 16, &p);
    if (!st) gpuws_host_free(f->ctx, p);
    return st;
}

FAULT_CASE(kernel_get_and_launch, FAULT_GPU)
{
    gpuws_kernel *k;
    gpuws_status st = gpuws_kernel_get(f->ctx, "vector_add_f32", &k);
    if (st) return st;
    gpuws_arg args[] = { gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out),
                         gpuws_arg_u64(FAULT_N) };
    gpuws_launch_config cfg = { { (FAULT_N + 63) / 64, 1, 1 }, { 64, 1, 1 } };
    return gpuws_launch(f->stream, k, &cfg, args, 4);
}

/* The algorithms' rows are in tests/faults/algorithms.c; and one row per case of every algorithm's case table
 * (kernels/<algo>/<algo>_cases.c), "case <algorithm> <variant>": the case set up at the TINY size before the
 * injection is armed, then its run under it; on success its check must pass. */

static gpuws_status fault_op_case(fault_fixture *f)
{
    const gpuws__case *c = f->algorithm_case;
    gpuws_status st = c->w.run(f->case_state, f->stream);
    if (fault_ok(f, st)) {
        TEST_OK(gpuws_context_synchronize(f->ctx)); /* a case that ignores the stream runs on the context's own */
        char msg[512] = "";
        cr_assert(c->w.check(f->case_state, msg, sizeof msg), "%s %s: %s", c->w.algorithm, c->w.variant, msg);
    }
    return st;
}

#define FAULT_MAX_CASE_ROWS 128
static fault_case case_rows[FAULT_MAX_CASE_ROWS];
static char case_row_names[FAULT_MAX_CASE_ROWS][96];

/* Registers the case rows once (the parameters and each test both sort the rows: the same list in every process). */
static void register_case_rows(void)
{
    static bool done;
    if (done) return;
    done = true;
    size_t i = 0;
    for (const gpuws__case *const *c = gpuws__cases(); *c && i < FAULT_MAX_CASE_ROWS; c++, i++) {
        snprintf(case_row_names[i], sizeof case_row_names[i], "case %s %s", (*c)->w.algorithm, (*c)->w.variant);
        case_rows[i] = (fault_case){ case_row_names[i], FAULT_ALL, fault_op_case, *c };
        fault_register(&case_rows[i]);
    }
}

/* Sets up a case row's state (before the injection is armed) and poisons its outputs. */
static void case_open(fault_fixture *f, const fault_case *c)
{
    f->algorithm_case = c->algorithm_case;
    if (!f->algorithm_case) return;
    if (strstr(f->algorithm_case->w.variant, "f64")) test_require_dtype(f->ctx, GPUWS_F64);
    bench_counts counts;
    memset(&counts, 0, sizeof counts);
    TEST_OK(f->algorithm_case->w.setup(f->ctx, BENCH_TINY, &f->case_state, &counts));
    f->case_nout = test_case_poison(f->algorithm_case, f->case_state, f->case_out);
    TEST_OK(gpuws_context_synchronize(f->ctx));
}

static void case_close(fault_fixture *f)
{
    if (f->algorithm_case && f->case_state) f->algorithm_case->w.teardown(f->case_state);
    f->case_state = NULL;
}

/* ---- the harness ---- */

static void fixture_open(fault_fixture *f, gpuws_backend_kind kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->ctx = test_open(kind);
    TEST_OK(gpuws_stream_create(f->ctx, &f->stream));
    float a[FAULT_N];
    double d[FAULT_N];
    int32_t i32[FAULT_N];
    int16_t i16[FAULT_N];
    for (int i = 0; i < FAULT_N; i++) a[i] = (float)(i + 1), d[i] = i + 1, i32[i] = i + 1, i16[i] = (int16_t)(i + 1);
    unsigned char mask[FAULT_W * FAULT_H];
    int32_t labels[FAULT_W * FAULT_H];
    for (int r = 0; r < FAULT_H; r++)
        for (int c = 0; c < FAULT_W; c++)
            mask[r * FAULT_W + c] = fault_mask_pixel(r, c), labels[r * FAULT_W + c] = fault_label_pixel(r, c);
    f->in = test_buffer_from(f->ctx, a, sizeof a);
    f->in64 = test_buffer_from(f->ctx, d, sizeof d);
    f->in32 = test_buffer_from(f->ctx, i32, sizeof i32);
    f->in16 = test_buffer_from(f->ctx, i16, sizeof i16);
    f->mask = test_buffer_from(f->ctx, mask, sizeof mask);
    f->labels = test_buffer_from(f->ctx, labels, sizeof labels);
    f->out = test_buffer(f->ctx, FAULT_OUT_BYTES);
    f->out2 = test_buffer(f->ctx, FAULT_OUT2_BYTES);
}

static void fixture_close(fault_fixture *f)
{
    gpuws_buffer *b[] = { f->in, f->in64, f->in32, f->in16, f->mask, f->labels, f->out, f->out2 };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) gpuws_buffer_destroy(b[i]);
    gpuws_stream_destroy(f->stream);
    gpuws_context_destroy(f->ctx);
}

/* What the row's call did, as fault_ok saw it (the row's checks may call the library after it). */
static struct {
    bool fired, seen;
    char msg[1024];
} row_run;

bool fault_ok(fault_fixture *f, gpuws_status st)
{
    row_run.fired |= gpuws__fault_alloc_countdown(0);
    row_run.fired |= gpuws__fault_device_countdown(0);
    if (!row_run.seen) snprintf(row_run.msg, sizeof row_run.msg, "%s", gpuws_last_error());
    row_run.seen = true;
    if (st) return false;
    TEST_OK(gpuws_stream_synchronize(f->stream));
    return true;
}

/* The context still does correct work: a vector_add on a new stream, a reduce on the fixture's stream. */
static void expect_working(fault_fixture *f, const char *row, long k)
{
    gpuws_stream *s;
    TEST_OK(gpuws_stream_create(f->ctx, &s));
    gpuws_buffer *c = test_buffer(f->ctx, FAULT_N * 4);
    TEST_OK(gpuws_vector_add(s, GPUWS_F32, FAULT_N, f->in, f->in, c));
    TEST_OK(gpuws_stream_synchronize(s));
    float *h = test_download(c, FAULT_N * 4);
    for (int i = 0; i < FAULT_N; i++)
        cr_assert_eq(h[i], 2.0f * (float)(i + 1), "%s, allocation %ld failed: element %d", row, k, i);
    free(h);
    double r = 0;
    TEST_OK(gpuws_reduce_value(f->stream, GPUWS_REDUCE_MAX, GPUWS_F32, FAULT_N, f->in, &r));
    cr_assert_eq(r, FAULT_N, "%s, allocation %ld failed: max %g", row, k, r);
    gpuws_buffer_destroy(c);
    gpuws_stream_destroy(s);
}

static void expect_poison(gpuws_buffer *b, size_t bytes, const char *row, long k)
{
    unsigned char *h = test_download(b, bytes);
    for (size_t i = 0; i < bytes; i++)
        cr_assert_eq(h[i], TEST_POISON_BYTE, "%s: allocation %ld failed but byte %zu of the output was written", row, k,
                     i);
    free(h);
}

/* The live-handle registry rehashes when its live handles plus tombstones pass half its slots, and when the
 * rehash's allocation fails it goes on probing the old table, which still has room: that failure is absorbed and
 * the call succeeds. Every handle a row creates at a new address takes a new slot (under ASan's quarantine nearly
 * every one: freed memory is not handed out again soon), so a long row's runs together reach the rehash, and where
 * it falls would make "an allocation failed, the call succeeded" appear at random (it did, under ASan, in the
 * extraction's rows near their 200th allocation). Before each run the registry is made room for 20000 more handles,
 * so that no rehash falls inside one. */
static void registry_make_room(void) { TEST_OK(gpuws__handle_reserve(20000)); }

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const fault_case *const *)a)->name, (*(const fault_case *const *)b)->name);
}

typedef struct {
    int index;
    gpuws_backend_kind kind;
} fault_param;

static void free_params(struct criterion_test_params *crp) { cr_free(crp->params); }

/* Whether the row of that name runs: GPUWS_TEST_FAULT_ROWS=TEXT keeps the rows whose name holds TEXT (a second run
 * of the suite with a knob set that only some rows reach), unset every row; the CLI's rows too. */
static bool row_chosen(const char *name)
{
    const char *only = getenv("GPUWS_TEST_FAULT_ROWS");
    return !only || strstr(name, only);
}

static struct criterion_test_params all_rows(void)
{
    register_case_rows();
    qsort(cases, ncases, sizeof cases[0], by_name);
    size_t n = 0, j = 0;
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++)
            n += row_chosen(cases[i]->name) && ((cases[i]->backends >> test_backends[k]) & 1);
    fault_param *p = cr_malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++)
            if (row_chosen(cases[i]->name) && ((cases[i]->backends >> test_backends[k]) & 1))
                p[j++] = (fault_param){ (int)i, test_backends[k] };
    return cr_make_param_array(fault_param, p, n, free_params);
}

ParameterizedTestParameters(faults, every_allocation_of) { return all_rows(); }

/* Runs the row with its 1st, 2nd, ... host allocation (device: the device's buffer) made to fail, until a run where
 * none fails. */
static void sweep(const fault_param *p, bool device)
{
    register_case_rows();
    qsort(cases, ncases, sizeof cases[0], by_name);
    const fault_case *c = cases[p->index];
    char row[128];
    snprintf(row, sizeof row, "%s on %s", c->name, test_backend_name(p->kind));
    setenv("GPUWS_LOG", "error", 1); /* leftover-object warnings are the harness's business here */
    fault_fixture f;
    fixture_open(&f, p->kind); /* first-use allocations (programs, caches) happen before the first baseline */
    case_open(&f, c);
    if (c->algorithm_case) { /* a case's first run builds its programs */
        TEST_OK(c->algorithm_case->w.run(f.case_state, f.stream));
        TEST_OK(gpuws_context_synchronize(f.ctx));
    }
    case_close(&f);
    fixture_close(&f);
    long k;
    for (k = 1; k <= 10000; k++) {
        registry_make_room();
        long live0 = gpuws__alloc_live();
        fixture_open(&f, p->kind);
        case_open(&f, c);
        memset(&row_run, 0, sizeof row_run);
        gpuws__error(GPUWS_OK, "(no message set since the row started)"); /* no earlier run's message can pass */
        const unsigned long fallbacks0 = gpuws__device_fallbacks();
        if (device) gpuws__fault_device_countdown(k);
        else gpuws__fault_alloc_countdown(k);
        gpuws_status st = c->op(&f);
        const bool fired =
            (device ? gpuws__fault_device_countdown(0) : gpuws__fault_alloc_countdown(0)) || row_run.fired;
        const char *msg = row_run.seen ? row_run.msg : gpuws_last_error();
        if (!fired) {
            cr_assert_eq(st, GPUWS_OK, "%s: no allocation failed, yet %s: %s", row, gpuws_status_name(st), msg);
        } else if (device && st == GPUWS_OK && gpuws__device_fallbacks() != fallbacks0) {
            /* the driver went on with less device memory (it said so): the row checked the result */
            cr_assert(row_run.seen, "%s: device allocation %ld failed, the call succeeded, its result unchecked", row,
                      k);
        } else {
            cr_assert_eq(st, GPUWS_ERR_OUT_OF_MEMORY, "%s: allocation %ld failed and the call returned %s: %s", row, k,
                         gpuws_status_name(st), msg);
            cr_assert(strstr(msg, "bytes"), "%s: allocation %ld: the message names no size: %s", row, k, msg);
            TEST_OK(gpuws_context_synchronize(f.ctx));
            expect_poison(f.out, FAULT_OUT_BYTES, row, k);
            expect_poison(f.out2, FAULT_OUT2_BYTES, row, k);
            for (size_t o = 0; o < f.case_nout; o++)
                cr_assert(test_output_poisoned(&f.case_out[o]), "%s: allocation %ld failed but output %zu was written",
                          row, k, o);
        }
        expect_working(&f, row, k);
        case_close(&f);
        fixture_close(&f);
        cr_assert_eq(gpuws__alloc_live(), live0, "%s: allocation %ld failed and %ld allocation(s) leaked", row, k,
                     gpuws__alloc_live() - live0);
        if (!fired) break;
    }
    cr_log_info("%s: %ld %sallocation(s), each failed once", row, k - 1, device ? "device " : "");
}

ParameterizedTest(fault_param *p, faults, every_allocation_of) { sweep(p, false); }

ParameterizedTestParameters(faults, every_device_allocation_of) { return all_rows(); }
ParameterizedTest(fault_param *p, faults, every_device_allocation_of) { sweep(p, true); }

/* ---- the CLI, through GPUWS_FAULT_ALLOC (the library reads it at its first allocation) ---- */

/* The commands themselves on small inputs, on the CPU backend (the in-process rows cover every algorithm on every
 * backend; these cover what each command adds around them: setup, checks, reports, and the selftest harness). */
typedef struct {
    const char *name;
    const char *argv[12];
} fault_cli_case;

static const fault_cli_case cli_cases[] = {
    { "convolve_demo", { "convolve", "--demo", "--size", "16", "--repeat", "1" } },
    { "convolve_demo_f64", { "convolve", "--demo", "--dtype", "f64", "--size", "16", "--repeat", "1" } },
    { "info", { "info" } },
    { "matmul", { "matmul", "17", "9", "13", "--repeat", "1" } },
    { "pi", { "pi", "10000", "--repeat", "1" } },
    { "primes", { "primes", "1000", "--repeat", "1" } },
    { "primes_trial", { "primes", "1000", "--variant", "trial", "--repeat", "1" } },
    { "selftest_vector_add", { "selftest", "--backends", "cpu", "--sizes", "small", "--algorithms", "vector_add" } },
    { "sources_demo", { "sources", "--demo", "--size", "64" } },
};
#define N_CLI (sizeof cli_cases / sizeof cli_cases[0])

ParameterizedTestParameters(faults, cli_allocation_of)
{
    static int idx[N_CLI];
    for (size_t i = 0; i < N_CLI; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_CLI);
}

ParameterizedTest(int *i, faults, cli_allocation_of)
{
    const fault_cli_case *c = &cli_cases[*i];
    if (!row_chosen(c->name)) cr_skip_test("%s: left out by GPUWS_TEST_FAULT_ROWS", c->name);
    long k;
    for (k = 1; k <= 10000; k++) {
        char fault[64];
        snprintf(fault, sizeof fault, "GPUWS_FAULT_ALLOC=%ld", k);
        const char *env[] = { fault, "GPUWS_BACKEND=cpu", NULL };
        char *out;
        int code = test_run_cli(c->argv, env, &out);
        bool fired = strstr(out, "fault injection (GPUWS_FAULT_ALLOC)") != NULL;
        if (!fired) {
            cr_assert_eq(code, 0, "%s: no allocation failed, yet exit %d:\n%s", c->name, code, out);
            free(out);
            break;
        }
        cr_assert_eq(code, 1, "%s: allocation %ld failed: exit %d (wanted 1):\n%s", c->name, k, code, out);
        char *line = strstr(out, "GPUWS_ERR_OUT_OF_MEMORY");
        cr_assert(line, "%s: allocation %ld failed, no OUT_OF_MEMORY in:\n%s", c->name, k, out);
        line[strcspn(line, "\n")] = 0; /* the error's line (the injector's own line names a size too) */
        cr_assert(strstr(line, "bytes"), "%s: allocation %ld failed, no size in the error: %s", c->name, k, line);
        free(out);
    }
    cr_log_info("%s: %ld allocation(s), each failed once", c->name, k - 1);
}

/* ---- real out-of-memory ---- */

BACKEND_TEST(faults, larger_than_the_largest_buffer_is_out_of_memory_with_the_sizes)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    gpuws_buffer *b = (gpuws_buffer *)&b;
    TEST_FAILS(GPUWS_ERR_OUT_OF_MEMORY, gpuws_buffer_create(ctx, (size_t)d.max_alloc_bytes + 1, &b));
    cr_assert_null(b);
    char want[64];
    snprintf(want, sizeof want, "requested %llu bytes", (unsigned long long)d.max_alloc_bytes + 1);
    cr_assert(strstr(gpuws_last_error(), want), "message: %s", gpuws_last_error());
    void *p = &p;
    TEST_FAILS(GPUWS_ERR_OUT_OF_MEMORY, gpuws_host_alloc(ctx, SIZE_MAX - 8, &p));
    cr_assert_null(p);
    gpuws_context_destroy(ctx);
}

/* The address space is limited to what the process has plus 256 MiB, then a buffer of min(1 GiB, the largest
 * buffer) is asked for: it passes core's size checks and fails in the backend (CPU: aligned_alloc; OpenCL on PoCL:
 * clCreateBuffer, which allocates at once on host-memory devices; GPU devices skip). The failure is OUT_OF_MEMORY
 * with the size, and the context goes on working. (Criterion runs each test in a process of its own; the limit is lifted right after.) */
static long vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0;
    if (f && fscanf(f, "%ld", &pages) != 1) pages = 0;
    if (f) fclose(f);
    return pages * sysconf(_SC_PAGESIZE);
}

BACKEND_TEST(faults, a_request_the_backend_cannot_satisfy_is_out_of_memory_and_the_context_survives)
{
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    if (d.type != GPUWS_DEVICE_CPU) /* CUDA, or an OpenCL GPU: buffers in device memory */
        cr_skip_test("%s on %s: RLIMIT_AS does not limit device memory", test_backend_name(*kind), d.name);
    size_t want = d.max_alloc_bytes < ((size_t)1 << 30) ? (size_t)d.max_alloc_bytes : (size_t)1 << 30;
    cr_assert_gt(want, (size_t)512 << 20, "the test needs a device that allows buffers over 512 MiB");
    /* the programs the context will need are built before the limit */
    gpuws_buffer *a = test_buffer(ctx, 4096), *b = test_buffer(ctx, 4096);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 1024, a, a, b));
    TEST_OK(gpuws_context_synchronize(ctx));
    long vm = vm_bytes();
    cr_assert_gt(vm, 0);
    struct rlimit lim = { (rlim_t)vm + ((rlim_t)256 << 20), (rlim_t)vm + ((rlim_t)256 << 20) };
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    gpuws_buffer *big = (gpuws_buffer *)&big;
    gpuws_status st = gpuws_buffer_create(ctx, want, &big);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpuws_last_error());
    struct rlimit none = { RLIM_INFINITY, RLIM_INFINITY };
    setrlimit(RLIMIT_AS, &none);
    cr_assert_eq(st, GPUWS_ERR_OUT_OF_MEMORY, "%s: %s", gpuws_status_name(st), msg);
    cr_assert_null(big);
    char size[32];
    snprintf(size, sizeof size, "%zu bytes", want);
    cr_assert(strstr(msg, size), "the message names the size: %s", msg);
    /* still works */
    float h[1024], r[1024];
    for (int i = 0; i < 1024; i++) h[i] = (float)i;
    TEST_OK(gpuws_buffer_write(a, 0, h, sizeof h));
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 1024, a, a, b));
    TEST_OK(gpuws_buffer_read(b, 0, r, sizeof r));
    for (int i = 0; i < 1024; i++) cr_assert_eq(r[i], 2.0f * (float)i, "element %d", i);
    gpuws_buffer_destroy(a);
    gpuws_buffer_destroy(b);
    gpuws_context_destroy(ctx);
}
