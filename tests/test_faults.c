/* Allocation failure. Fault injection: every row is run with its 1st, 2nd, 3rd, ... host allocation inside the
 * library made to fail (gpuws__fault_alloc_countdown) until one run makes no allocation fail; each failure must come
 * back as GPUWS_ERR_OUT_OF_MEMORY naming the sizes, must leave the output untouched, must release everything the
 * call had taken (the library's live-allocation count returns to its value before the fixture), and must leave the
 * context working. Real failures: requests larger than the device, and a request that passes that check but that
 * the backend cannot satisfy (address space limited with RLIMIT_AS). How to add a row: docs/reliability.md. */
#include "run_cli.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

bool gpuws__fault_alloc_countdown(long n);
long gpuws__alloc_live(void);

#define FAULT_N 1000 /* elements of the fixture's arrays */

typedef struct fault_fixture {
    gpuws_backend_kind kind;
    gpuws_context *ctx;
    gpuws_stream *stream; /* fresh: its scratch memory is allocated by the first algorithm that needs it */
    gpuws_buffer *in;     /* FAULT_N f32: 1, 2, 3, ... */
    gpuws_buffer *in64;   /* FAULT_N f64: 1, 2, 3, ... */
    gpuws_buffer *out;    /* FAULT_N * 8 bytes, poisoned; the harness checks it is still poison after a failure */
} fault_fixture;

typedef struct fault_case {
    const char *name;
    unsigned backends; /* bit per gpuws_backend_kind */
    /* Performs the operation; on success releases whatever it created (so only leaks remain). */
    gpuws_status (*op)(fault_fixture *f);
} fault_case;

#define FAULT_CPU (1u << GPUWS_BACKEND_CPU)
#define FAULT_GPU ((1u << GPUWS_BACKEND_OPENCL) | (1u << GPUWS_BACKEND_CUDA))
#define FAULT_ALL (FAULT_CPU | FAULT_GPU)

#define FAULT_MAX_CASES 256
static const fault_case *cases[FAULT_MAX_CASES];
static size_t ncases;

static void fault_register(const fault_case *c)
{
    if (ncases < FAULT_MAX_CASES) cases[ncases++] = c;
}

/* FAULT_CASE(name, backends) { ...the operation on f...; return status; } */
#define FAULT_CASE(Name, Backends)                                                                              \
    static gpuws_status fault_op_##Name(fault_fixture *f);                                                      \
    __attribute__((constructor)) static void fault_register_##Name(void)                                        \
    {                                                                                                           \
        static const fault_case c = {#Name, (Backends), fault_op_##Name};                                       \
        fault_register(&c);                                                                                     \
    }                                                                                                           \
    static gpuws_status fault_op_##Name(__attribute__((unused)) fault_fixture *f)

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
    gpuws_arg args[] = {gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->in), gpuws_arg_buffer(f->out), gpuws_arg_u64(FAULT_N)};
    gpuws_launch_config cfg = {{(FAULT_N + 63) / 64, 1, 1}, {64, 1, 1}};
    return gpuws_launch(f->stream, k, &cfg, args, 4);
}

/* ---- rows: algorithms (on the fixture's fresh stream) ---- */

FAULT_CASE(vector_add_f32, FAULT_ALL) { return gpuws_vector_add(f->stream, GPUWS_F32, FAULT_N, f->in, f->in, f->out); }
FAULT_CASE(vector_add_f64, FAULT_ALL) { return gpuws_vector_add(f->stream, GPUWS_F64, FAULT_N, f->in64, f->in64, f->out); }
FAULT_CASE(reduce_sum_f32, FAULT_ALL) { return gpuws_reduce(f->stream, GPUWS_REDUCE_SUM, GPUWS_F32, FAULT_N, f->in, f->out); }
FAULT_CASE(reduce_min_f64, FAULT_ALL) { return gpuws_reduce(f->stream, GPUWS_REDUCE_MIN, GPUWS_F64, FAULT_N, f->in64, f->out); }
FAULT_CASE(reduce_max_f32, FAULT_ALL) { return gpuws_reduce(f->stream, GPUWS_REDUCE_MAX, GPUWS_F32, FAULT_N, f->in, f->out); }
FAULT_CASE(reduce_value_sum_f64, FAULT_ALL)
{
    double r = 0;
    gpuws_status st = gpuws_reduce_value(f->stream, GPUWS_REDUCE_SUM, GPUWS_F64, FAULT_N, f->in64, &r);
    if (!st) cr_assert_eq(r, FAULT_N * (FAULT_N + 1) / 2.0);
    return st;
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
    for (int i = 0; i < FAULT_N; i++) a[i] = (float)(i + 1), d[i] = i + 1;
    f->in = test_buffer_from(f->ctx, a, sizeof a);
    f->in64 = test_buffer_from(f->ctx, d, sizeof d);
    f->out = test_buffer(f->ctx, FAULT_N * 8);
}

static void fixture_close(fault_fixture *f)
{
    gpuws_buffer_destroy(f->in);
    gpuws_buffer_destroy(f->in64);
    gpuws_buffer_destroy(f->out);
    gpuws_stream_destroy(f->stream);
    gpuws_context_destroy(f->ctx);
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
    for (int i = 0; i < FAULT_N; i++) cr_assert_eq(h[i], 2.0f * (float)(i + 1), "%s, allocation %ld failed: element %d", row, k, i);
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
        cr_assert_eq(h[i], TEST_POISON_BYTE, "%s: allocation %ld failed but byte %zu of the output was written", row, k, i);
    free(h);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const fault_case *const *)a)->name, (*(const fault_case *const *)b)->name);
}

typedef struct {
    int index;
    gpuws_backend_kind kind;
} fault_param;

static void free_params(struct criterion_test_params *crp) { cr_free(crp->params); }

ParameterizedTestParameters(faults, every_allocation_of)
{
    qsort(cases, ncases, sizeof cases[0], by_name);
    size_t n = 0, j = 0;
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++) n += (cases[i]->backends >> test_backends[k]) & 1;
    fault_param *p = cr_malloc(n * sizeof *p);
    for (size_t i = 0; i < ncases; i++)
        for (int k = 0; k < TEST_BACKENDS; k++)
            if ((cases[i]->backends >> test_backends[k]) & 1) p[j++] = (fault_param){(int)i, test_backends[k]};
    return cr_make_param_array(fault_param, p, n, free_params);
}

ParameterizedTest(fault_param *p, faults, every_allocation_of)
{
    qsort(cases, ncases, sizeof cases[0], by_name);
    const fault_case *c = cases[p->index];
    char row[128];
    snprintf(row, sizeof row, "%s on %s", c->name, test_backend_name(p->kind));
    setenv("GPUWS_LOG", "error", 1); /* leftover-object warnings are the harness's business here */
    fault_fixture f;
    fixture_open(&f, p->kind); /* sizes the live-handle registry before the first baseline */
    fixture_close(&f);
    long k;
    for (k = 1; k <= 10000; k++) {
        long live0 = gpuws__alloc_live();
        fixture_open(&f, p->kind);
        gpuws__fault_alloc_countdown(k);
        gpuws_status st = c->op(&f);
        bool fired = gpuws__fault_alloc_countdown(0);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gpuws_last_error());
        if (!fired) {
            cr_assert_eq(st, GPUWS_OK, "%s: no allocation failed, yet %s: %s", row, gpuws_status_name(st), msg);
        } else {
            cr_assert_eq(st, GPUWS_ERR_OUT_OF_MEMORY, "%s: allocation %ld failed and the call returned %s: %s", row, k,
                         gpuws_status_name(st), msg);
            cr_assert(strstr(msg, "bytes"), "%s: allocation %ld: the message names no size: %s", row, k, msg);
            TEST_OK(gpuws_context_synchronize(f.ctx));
            expect_poison(f.out, FAULT_N * 8, row, k);
        }
        expect_working(&f, row, k);
        fixture_close(&f);
        cr_assert_eq(gpuws__alloc_live(), live0, "%s: allocation %ld failed and %ld allocation(s) leaked", row, k,
                     gpuws__alloc_live() - live0);
        if (!fired) break;
    }
    cr_log_info("%s: %ld allocation(s), each failed once", row, k - 1);
}

/* ---- the CLI, through GPUWS_FAULT_ALLOC (the library reads it at its first allocation) ---- */

typedef struct {
    const char *name;
    const char *argv[10];
} fault_cli_case;

static const fault_cli_case cli_cases[] = {
    {"info", {"info"}},
    {"selftest_cpu_small", {"selftest", "--backends", "cpu", "--sizes", "small"}},
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
    long k;
    for (k = 1; k <= 10000; k++) {
        char fault[64];
        snprintf(fault, sizeof fault, "GPUWS_FAULT_ALLOC=%ld", k);
        const char *env[] = {fault, "GPUWS_BACKEND=cpu", NULL};
        char *out;
        int code = test_run_cli(c->argv, env, &out);
        bool fired = strstr(out, "fault injection (GPUWS_FAULT_ALLOC)") != NULL;
        if (!fired) {
            cr_assert_eq(code, 0, "%s: no allocation failed, yet exit %d:\n%s", c->name, code, out);
            free(out);
            break;
        }
        cr_assert_eq(code, 1, "%s: allocation %ld failed: exit %d (wanted 1):\n%s", c->name, k, code, out);
        cr_assert(strstr(out, "GPUWS_ERR_OUT_OF_MEMORY"), "%s: allocation %ld failed, no OUT_OF_MEMORY in:\n%s", c->name, k, out);
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
 * clCreateBuffer, which allocates at once on host-memory devices). The failure is OUT_OF_MEMORY with the size, and
 * the context goes on working. (Criterion runs each test in a process of its own; the limit is lifted right after.) */
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
    if (*kind == GPUWS_BACKEND_CUDA) cr_skip_test("cuda: RLIMIT_AS does not limit device memory");
    gpuws_context *ctx = test_open(*kind);
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    size_t want = d.max_alloc_bytes < ((size_t)1 << 30) ? (size_t)d.max_alloc_bytes : (size_t)1 << 30;
    cr_assert_gt(want, (size_t)512 << 20, "the test needs a device that allows buffers over 512 MiB");
    /* the programs the context will need are built before the limit */
    gpuws_buffer *a = test_buffer(ctx, 4096), *b = test_buffer(ctx, 4096);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 1024, a, a, b));
    TEST_OK(gpuws_context_synchronize(ctx));
    long vm = vm_bytes();
    cr_assert_gt(vm, 0);
    struct rlimit lim = {(rlim_t)vm + ((rlim_t)256 << 20), (rlim_t)vm + ((rlim_t)256 << 20)};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    gpuws_buffer *big = (gpuws_buffer *)&big;
    gpuws_status st = gpuws_buffer_create(ctx, want, &big);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpuws_last_error());
    struct rlimit none = {RLIM_INFINITY, RLIM_INFINITY};
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
