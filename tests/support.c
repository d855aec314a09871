#define _XOPEN_SOURCE 700 /* nftw */
#include "support.h"

#include "core/tuning.h"

#include <ctype.h>
#include <pthread.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

gpuws_backend_kind test_backends[TEST_BACKENDS] = { GPUWS_BACKEND_CPU, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CUDA };

const char *test_backend_name(gpuws_backend_kind kind)
{
    return kind == GPUWS_BACKEND_CPU ? "cpu" : kind == GPUWS_BACKEND_OPENCL ? "opencl" : "cuda";
}

static bool list_has(const char *list, const char *name)
{
    if (!list) return false;
    size_t nl = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if ((size_t)(t - p) == nl && strncasecmp(p, name, nl) == 0) return true;
        p = e;
    }
    return false;
}

bool test_is_required(const char *name) { return list_has(getenv("GPUWS_REQUIRE"), name); }

static _Noreturn void skip_or_fail(const char *backend, const char *why)
{
    if (test_is_required(backend)) {
        cr_assert_fail("%s is required (GPUWS_REQUIRE) but %s", backend, why);
        criterion_abort_test(); /* not reached: an assert failure aborts the test */
    }
    cr_skip_test("%s: %s", backend, why);
}

void test_tune(gpuws_context *ctx, const char *knob, const char *value)
{
    cr_assert_eq(gpuws__tuning_set(ctx, knob, value), GPUWS_OK, "%s=%s: %s", knob, value ? value : "(default)",
                 gpuws_last_error());
}

gpuws_context *test_open(gpuws_backend_kind kind)
{
    const char *name = test_backend_name(kind);
    const char *only = getenv("GPUWS_TEST_BACKENDS");
    if (only && *only && !list_has(only, name)) {
        if (test_is_required(name))
            cr_assert_fail("%s is required but GPUWS_TEST_BACKENDS=%s leaves it out", name, only);
        cr_skip_test("%s left out by GPUWS_TEST_BACKENDS=%s", name, only);
    }
    gpuws_backend_info bi;
    cr_assert_eq(gpuws_backend_get_info(kind, &bi), GPUWS_OK);
    if (!bi.available) skip_or_fail(name, bi.reason);
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = name;
    gpuws_context *ctx = NULL;
    gpuws_status st = gpuws_context_create(&ctx, &o);
    if (st) {
        char why[512];
        snprintf(why, sizeof why, "context creation failed: %s: %s", gpuws_status_name(st), gpuws_last_error());
        skip_or_fail(name, why);
    }
    return ctx;
}

void test_require_dtype(gpuws_context *ctx, gpuws_dtype dtype)
{
    gpuws_device_info d;
    TEST_OK(gpuws_context_get_device_info(ctx, &d));
    if (dtype == GPUWS_F64 && !d.fp64) {
        const char *name = test_backend_name(d.backend);
        if (test_is_required("fp64")) cr_assert_fail("%s has no fp64 but GPUWS_REQUIRE names fp64", d.name);
        gpuws_context_destroy(ctx);
        cr_skip_test("%s: %s has no double precision", name, d.name);
    }
}

uint64_t test_seed(bool fresh)
{
    const char *env = getenv("GPUWS_TEST_SEED");
    if (env && *env) return strtoull(env, NULL, 0);
    if (!fresh) return 0x5eed2026ULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    cr_log_info("fresh seed %llu (replay with GPUWS_TEST_SEED=%llu)", (unsigned long long)s, (unsigned long long)s);
    return s;
}

uint64_t test_rand_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double test_rand_uniform(uint64_t *s) { return (double)(test_rand_u64(s) >> 11) * 0x1.0p-53; }

void test_fill_uniform_f32(float *x, size_t n, uint64_t seed, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * test_rand_uniform(&seed));
}

void test_fill_uniform_f64(double *x, size_t n, uint64_t seed, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * test_rand_uniform(&seed);
}

gpuws_buffer *test_buffer(gpuws_context *ctx, size_t bytes)
{
    gpuws_buffer *b = NULL;
    const unsigned char p = TEST_POISON_BYTE;
    TEST_OK(gpuws_buffer_create(ctx, bytes + TEST_GUARD_BYTES, &b));
    TEST_OK(gpuws_buffer_fill(b, 0, &p, 1, bytes + TEST_GUARD_BYTES));
    return b;
}

gpuws_buffer *test_buffer_from(gpuws_context *ctx, const void *host, size_t bytes)
{
    gpuws_buffer *b = test_buffer(ctx, bytes);
    if (bytes) TEST_OK(gpuws_buffer_write(b, 0, host, bytes));
    return b;
}

void test_check_guard(gpuws_buffer *b, size_t bytes, const char *name)
{
    unsigned char g[TEST_GUARD_BYTES];
    TEST_OK(gpuws_buffer_read(b, bytes, g, TEST_GUARD_BYTES));
    for (int i = 0; i < TEST_GUARD_BYTES; i++)
        cr_assert_eq(g[i], TEST_POISON_BYTE, "buffer '%s': guard byte %d past the end was overwritten (0x%02x)", name,
                     i, g[i]);
}

char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s && fread(s, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
    s[n] = 0;
    fclose(f);
    return s;
}

static FILE *captured_file;
static int saved_stderr = -1;

void test_capture_stderr(void)
{
    fflush(stderr);
    captured_file = tmpfile();
    cr_assert_not_null(captured_file);
    saved_stderr = dup(2);
    cr_assert_geq(saved_stderr, 0);
    cr_assert_geq(dup2(fileno(captured_file), 2), 0);
}

const char *test_captured_stderr(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    static char text[1 << 16];
    rewind(captured_file);
    text[fread(text, 1, sizeof text - 1, captured_file)] = 0;
    fclose(captured_file);
    return text;
}

int test_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

void *test_host_bytes(gpuws_context *ctx, bool pinned, size_t n)
{
    void *p = NULL;
    if (pinned) TEST_OK(gpuws_host_alloc(ctx, n, &p));
    else p = malloc(n);
    cr_assert_not_null(p);
    memset(p, 0xA5, n);
    return p;
}

void test_host_bytes_free(gpuws_context *ctx, bool pinned, void *p)
{
    if (pinned) gpuws_host_free(ctx, p);
    else free(p);
}

static char cache_dir[PATH_MAX];

void test_cache_dir_fresh(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/gpuws-test-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(cache_dir), "mkdtemp(%s) failed", cache_dir);
    cr_assert_eq(setenv("GPUWS_CACHE_DIR", cache_dir, 1), 0);
    /* also at exit: Criterion runs no .fini after a skipped test (an unavailable backend) */
    static bool registered;
    if (!registered) registered = atexit(test_cache_dir_remove) == 0;
}

const char *test_cache_dir(void) { return cache_dir; }

void test_dir_make(const char *what, char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/gpuws-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", what);
    cr_assert(mkdtemp(dir), "mkdtemp(%s) failed", dir);
}

static int make_removable(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_D || type == FTW_DNR) chmod(path, (sb->st_mode & 07777) | S_IRWXU);
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if (type == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

void test_dir_remove(const char *dir)
{
    chmod(dir, S_IRWXU); /* a test may have left it unreadable or read-only */
    nftw(dir, make_removable, 16, FTW_PHYS);
    nftw(dir, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
    struct stat sb;
    cr_assert(lstat(dir, &sb) != 0, "%s could not be removed", dir);
}

void test_cache_dir_remove(void)
{
    if (!cache_dir[0]) return;
    test_dir_remove(cache_dir);
    cache_dir[0] = 0;
}

void *test_download(gpuws_buffer *b, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    cr_assert_not_null(h);
    if (bytes) TEST_OK(gpuws_buffer_read(b, 0, h, bytes));
    return h;
}

static uint64_t ordered32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? (uint64_t)(0x80000000u - (u & 0x7fffffffu)) : (uint64_t)u + 0x80000000u;
}

static uint64_t ordered64(double f)
{
    uint64_t u;
    memcpy(&u, &f, 8);
    return (u >> 63) ? 0x8000000000000000ULL - (u & 0x7fffffffffffffffULL) : u + 0x8000000000000000ULL;
}

uint64_t test_ulp_diff_f32(float a, float b)
{
    if (isnan(a) && isnan(b)) return 0;
    if (isnan(a) || isnan(b)) return UINT64_MAX;
    uint64_t x = ordered32(a), y = ordered32(b);
    return x > y ? x - y : y - x;
}

uint64_t test_ulp_diff_f64(double a, double b)
{
    if (isnan(a) && isnan(b)) return 0;
    if (isnan(a) || isnan(b)) return UINT64_MAX;
    uint64_t x = ordered64(a), y = ordered64(b);
    return x > y ? x - y : y - x;
}

static void free_case_params(struct criterion_test_params *crp) { cr_free(crp->params); }

struct criterion_test_params test_case_params(bool with_stream)
{
    const gpuws__case *const *cs = gpuws__cases();
    size_t n = 0, j = 0;
    for (size_t i = 0; cs[i]; i++) n += !with_stream || !cs[i]->ignores_stream;
    test_case_param *p = cr_malloc(n * TEST_BACKENDS * sizeof *p);
    for (size_t i = 0; cs[i]; i++)
        for (int k = 0; k < TEST_BACKENDS && (!with_stream || !cs[i]->ignores_stream); k++)
            p[j++] = (test_case_param){ (int)i, test_backends[k] };
    return cr_make_param_array(test_case_param, p, j, free_case_params);
}

struct criterion_test_params test_backend_params(const void *rows, size_t n, size_t size, size_t backend)
{
    unsigned char *p = cr_malloc(TEST_BACKENDS * n * size);
    for (int k = 0; k < TEST_BACKENDS; k++)
        for (size_t i = 0; i < n; i++) {
            unsigned char *row = p + (k * n + i) * size;
            memcpy(row, (const unsigned char *)rows + i * size, size);
            memcpy(row + backend, &test_backends[k], sizeof test_backends[k]);
        }
    return (struct criterion_test_params){ size, p, TEST_BACKENDS * n, free_case_params };
}

const char *test_case_name(const test_case_param *p, char *buf, size_t n)
{
    const gpuws__case *c = gpuws__cases()[p->index];
    snprintf(buf, n, "%s %s on %s", c->w.algorithm, c->w.variant, test_backend_name(p->kind));
    return buf;
}

size_t test_case_poison(const gpuws__case *c, void *state, bench_output *out)
{
    cr_assert(c->outputs, "%s %s: a case lists its outputs (kernels/common/cases.h)", c->w.algorithm, c->w.variant);
    const size_t n = c->outputs(state, out);
    cr_assert_leq(n, BENCH_MAX_OUTPUTS, "%s %s lists %zu outputs", c->w.algorithm, c->w.variant, n);
    const unsigned char poison = TEST_POISON_BYTE;
    for (size_t k = 0; k < n; k++) {
        if (out[k].buffer) TEST_OK(gpuws_buffer_fill(out[k].buffer, 0, &poison, 1, out[k].bytes));
        else memset(out[k].host, TEST_POISON_BYTE, out[k].bytes);
    }
    return n;
}

bool test_output_poisoned(const bench_output *o)
{
    const unsigned char *h = o->host;
    unsigned char *copy = NULL;
    if (o->buffer) {
        copy = test_download(o->buffer, o->bytes);
        h = copy;
    }
    size_t i = 0;
    while (i < o->bytes && h[i] == TEST_POISON_BYTE) i++;
    free(copy);
    return i == o->bytes;
}

struct test_sum_group {
    pthread_barrier_t bar;
    pthread_mutex_t lock;
    size_t max;
    uint64_t *acc;
};

test_sum_group *test_sum_group_new(unsigned callers, size_t max_words)
{
    test_sum_group *g = calloc(1, sizeof *g);
    cr_assert(g && (g->acc = calloc(max_words, sizeof *g->acc)));
    g->max = max_words;
    pthread_barrier_init(&g->bar, NULL, callers);
    pthread_mutex_init(&g->lock, NULL);
    return g;
}

void test_sum_group_free(test_sum_group *g)
{
    pthread_barrier_destroy(&g->bar);
    pthread_mutex_destroy(&g->lock);
    free(g->acc);
    free(g);
}

gpuws_status test_sum_group_reduce(void *group, uint64_t *w, size_t count)
{
    test_sum_group *g = group;
    cr_assert(count <= g->max, "a reduction of %zu words; the group holds %zu", count, g->max);
    pthread_mutex_lock(&g->lock);
    for (size_t i = 0; i < count; i++) g->acc[i] += w[i];
    pthread_mutex_unlock(&g->lock);
    pthread_barrier_wait(&g->bar);
    memcpy(w, g->acc, count * sizeof *w);
    if (pthread_barrier_wait(&g->bar) == PTHREAD_BARRIER_SERIAL_THREAD) memset(g->acc, 0, count * sizeof *w);
    pthread_barrier_wait(&g->bar);
    return GPUWS_OK;
}

gpuws_status test_sum_group_gather(void *group, uint64_t *w, const size_t *counts, size_t caller, size_t callers,
                                   size_t root)
{
    test_sum_group *g = group;
    size_t at = 0, count = 0;
    for (size_t c = 0; c < callers; c++) count += counts[c], at += c < caller ? counts[c] : 0;
    cr_assert(count <= g->max, "a gather of %zu words; the group holds %zu", count, g->max);
    cr_assert(root < callers || root == GPUWS_ALL_CALLERS, "a gather into root %zu of %zu callers", root, callers);
    /* mine_only: w holds its own words only; each caller copies its own, so no lock */
    const bool all = root == GPUWS_ALL_CALLERS, mine_only = !all && root != caller;
    if (counts[caller]) memcpy(g->acc + at, w + (mine_only ? 0 : at), counts[caller] * sizeof *w);
    pthread_barrier_wait(&g->bar);
    if (!mine_only) memcpy(w, g->acc, count * sizeof *w);
    if (pthread_barrier_wait(&g->bar) == PTHREAD_BARRIER_SERIAL_THREAD) memset(g->acc, 0, count * sizeof *w);
    pthread_barrier_wait(&g->bar);
    return GPUWS_OK;
}
