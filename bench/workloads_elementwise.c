/* Benchmark workloads for primes, ufunc, monte_carlo_pi and histogram.
 * Inputs are made on the host from fixed seeds and uploaded once; each check compares with the scalar reference
 * under the same rule as the tests (bit-exact for integers, the stated bounds for the ufuncs). */
#include "bench.h"
#include "histogram/histogram_ref.h"
#include "monte_carlo_pi/monte_carlo_pi_ref.h"
#include "primes/primes_ref.h"
#include "ufunc/ufunc_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



static size_t pick(bench_size s, size_t small, size_t dflt, size_t large)
{
    return s == BENCH_SMALL ? small : s == BENCH_LARGE ? large : dflt;
}

/* "2^26" for powers of two, "1e+08" otherwise */
static void label_size(char *out, size_t n, size_t count, const char *what)
{
    if (count && (count & (count - 1)) == 0) {
        int k = 0;
        while (((size_t)1 << k) < count) k++;
        snprintf(out, n, "2^%d %s", k, what);
    } else {
        snprintf(out, n, "%.0e %s", (double)count, what);
    }
}

/* Shrinks a device-resident size until `arrays` buffers of n elements of es bytes fit comfortably. */
static size_t fit(gpuws_context *ctx, size_t n, size_t es, int arrays)
{
    gpuws_device_info d;
    if (gpuws_context_get_device_info(ctx, &d)) return n;
    while (n > ((size_t)1 << 16) && (n * es > d.max_alloc_bytes || n * es * (size_t)arrays > d.global_mem_bytes / 2)) n /= 2;
    return n;
}

/* ---- primes ---------------------------------------------------------------------------------------------- */

typedef struct {
    gpuws_primes_variant variant;
    size_t n;
    gpuws_buffer *out, *count;
} primes_state;

static void primes_teardown(void *p)
{
    primes_state *s = p;
    gpuws_buffer_destroy(s->out);
    gpuws_buffer_destroy(s->count);
    free(s);
}

static gpuws_status primes_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c,
                                 gpuws_primes_variant v)
{
    primes_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->variant = v;
    s->n = pick(size, 100000, 1000000, 10000000); /* the workshop's 10^5 and the 10^6 */
    /* The workshop's kernel does O(N^2 / log N) divisions: 10^6 takes minutes on a CPU (PoCL or the scalar
     * backend) and 10^7 hours even on a GPU, so it stays at 10^5 on CPUs and at 10^6 for the large size. */
    gpuws_device_info d;
    if (v == GPUWS_PRIMES_TRIAL && !gpuws_context_get_device_info(ctx, &d) && (d.type == GPUWS_DEVICE_CPU || size == BENCH_LARGE))
        s->n = d.type == GPUWS_DEVICE_CPU ? 100000 : 1000000;
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * 4, &s->out)) || (st = gpuws_buffer_create(ctx, 8, &s->count))) return st;
    c->bytes = 4.0 * (double)s->n + 8; /* the int32 output; the work is integer arithmetic, not counted as FLOPs */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "N = %.0e", (double)s->n);
    return GPUWS_OK;
}

static gpuws_status primes_setup_trial(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return primes_setup(ctx, size, state, c, GPUWS_PRIMES_TRIAL);
}

static gpuws_status primes_setup_fast(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return primes_setup(ctx, size, state, c, GPUWS_PRIMES_FAST);
}

static gpuws_status primes_run(void *p, gpuws_stream *st)
{
    primes_state *s = p;
    return gpuws_primes(st, s->variant, s->n, s->out, s->count);
}

static bool primes_check(void *p, char *msg, size_t n)
{
    primes_state *s = p;
    int32_t *got = malloc(s->n * 4), *want = malloc(s->n * 4);
    uint64_t count = 0, want_count = 0;
    bool ok = got && want && !gpuws_buffer_read(s->out, 0, got, s->n * 4) && !gpuws_buffer_read(s->count, 0, &count, 8);
    if (!ok) {
        snprintf(msg, n, "could not read the result back");
    } else if (gpuws_primes_ref_sieve(want, s->n, &want_count) != 0) {
        ok = false;
        snprintf(msg, n, "GPUWS_ERR_OUT_OF_MEMORY: the reference sieve's table of %zu bytes", s->n / 2);
    } else if (count != want_count) {
        ok = false;
        snprintf(msg, n, "%llu primes, want %llu", (unsigned long long)count, (unsigned long long)want_count);
    } else if (memcmp(got, want, s->n * 4) != 0) {
        ok = false;
        snprintf(msg, n, "the flagged numbers differ from the sieve");
    }
    free(got);
    free(want);
    return ok;
}

static const bench_workload w_primes_trial = {"primes", "trial", false, primes_setup_trial, primes_run, primes_check, primes_teardown};
static const bench_workload w_primes_fast = {"primes", "fast", false, primes_setup_fast, primes_run, primes_check, primes_teardown};
BENCH_WORKLOAD(w_primes_trial)
BENCH_WORKLOAD(w_primes_fast)

/* ---- ufunc: device-resident --------------------------------------------------------------------------------- */

typedef enum { UF_GAUSSIAN, UF_POLAR, UF_PULSES, UF_HYPOT, UF_ZS_F32, UF_ZS_I16 } uf_kind;

typedef struct {
    uf_kind kind;
    size_t n;
    float *host[4];   /* array operands */
    int16_t *wave;    /* zero_suppress_i16 input */
    gpuws_buffer *in[4], *out;
} uf_state;

/* The workshop's calls: which operands are arrays, their ranges, the scalars, the formula-level operation count
 * (each exp/sin/cos/sqrt/tanh and division counted once). zero_suppress (exact) needs no entry. */
static const struct {
    gpuws_ufunc_id id;
    int arrays;          /* operands 0..arrays-1 are arrays, the rest scalars */
    double lo[4], hi[4];
    double scalar[4];
    double ops;
} uf_spec[] = {
    [UF_GAUSSIAN] = {GPUWS_UFUNC_GAUSSIAN_PDF, 1, {-5}, {5}, {0, 0.5, 1.5}, 7},                 /* (x, 0.5, 1.5) */
    [UF_POLAR] = {GPUWS_UFUNC_POLAR_DISTANCE, 4, {0, -3.2, 0, -3.2}, {1, 3.2, 1, 3.2}, {0}, 14}, /* four arrays */
    [UF_PULSES] = {GPUWS_UFUNC_MAKE_PULSES, 1, {0}, {0}, {0, 0, 100}, 5},                      /* (t, n/23, 100) */
    [UF_HYPOT] = {GPUWS_UFUNC_HYPOT, 2, {-1e3, -1e3}, {1e3, 1e3}, {0}, 9},
};

static void uf_teardown(void *p)
{
    uf_state *s = p;
    for (int k = 0; k < 4; k++) {
        free(s->host[k]);
        gpuws_buffer_destroy(s->in[k]);
    }
    free(s->wave);
    gpuws_buffer_destroy(s->out);
    free(s);
}

static gpuws_status uf_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, uf_kind kind)
{
    uf_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->kind = kind;
    const bool zs = kind == UF_ZS_F32 || kind == UF_ZS_I16;
    const size_t es = kind == UF_ZS_I16 ? 2 : 4;
    const int arrays = zs ? 1 : uf_spec[kind].arrays;
    s->n = fit(ctx, pick(size, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28), es, arrays + 1);
    uint64_t seed = 11 + (uint64_t)kind;
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * es, &s->out))) return st;
    for (int k = 0; k < arrays; k++) {
        void *h;
        if (kind == UF_ZS_I16) {
            h = s->wave = malloc(s->n * 2);
            if (!h) return GPUWS_ERR_OUT_OF_MEMORY;
            for (size_t i = 0; i < s->n; i++) s->wave[i] = (int16_t)(bench_splitmix(&seed) % 64) - 20; /* a noisy waveform */
        } else {
            h = s->host[k] = malloc(s->n * 4);
            if (!h) return GPUWS_ERR_OUT_OF_MEMORY;
            for (size_t i = 0; i < s->n; i++) {
                if (kind == UF_PULSES) s->host[k][i] = (float)i; /* t = arange(n) */
                else if (kind == UF_ZS_F32) s->host[k][i] = (float)(bench_uniform(&seed) * 64 - 20);
                else s->host[k][i] = (float)(uf_spec[kind].lo[k] + (uf_spec[kind].hi[k] - uf_spec[kind].lo[k]) * bench_uniform(&seed));
            }
        }
        if ((st = gpuws_buffer_create(ctx, s->n * es, &s->in[k])) || (st = gpuws_buffer_write(s->in[k], 0, h, s->n * es)))
            return st;
    }
    c->bytes = (double)(arrays + 1) * (double)s->n * (double)es;
    c->flops = zs ? (double)s->n : uf_spec[kind].ops * (double)s->n;
    label_size(c->size_label, sizeof c->size_label, s->n, kind == UF_ZS_I16 ? "i16" : "f32");
    return GPUWS_OK;
}

static gpuws_operand uf_operand(const uf_state *s, int k)
{
    if (k < uf_spec[s->kind].arrays) return gpuws_operand_array(s->in[k]);
    if (s->kind == UF_PULSES && k == 1) return gpuws_operand_scalar((double)s->n / 23); /* the notebook's period */
    return gpuws_operand_scalar(uf_spec[s->kind].scalar[k]);
}

static gpuws_status uf_run(void *p, gpuws_stream *st)
{
    uf_state *s = p;
    if (s->kind == UF_ZS_F32 || s->kind == UF_ZS_I16)
        return gpuws_zero_suppress(st, s->kind == UF_ZS_F32 ? GPUWS_F32 : GPUWS_I16, s->n, s->in[0], 15.0, s->out);
    gpuws_operand o[4];
    for (int k = 0; k < 4; k++) o[k] = uf_operand(s, k);
    switch (s->kind) {
    case UF_GAUSSIAN: return gpuws_gaussian_pdf(st, s->n, o[0], o[1], o[2], s->out);
    case UF_POLAR: return gpuws_polar_distance(st, s->n, o[0], o[1], o[2], o[3], s->out);
    case UF_PULSES: return gpuws_make_pulses(st, s->n, o[0], o[1], o[2], s->out);
    default: return gpuws_hypot(st, s->n, o[0], o[1], s->out);
    }
}

static bool uf_check(void *p, char *msg, size_t n)
{
    uf_state *s = p;
    const size_t es = s->kind == UF_ZS_I16 ? 2 : 4;
    void *got = malloc(s->n * es);
    bool ok = got && gpuws_buffer_read(s->out, 0, got, s->n * es) == GPUWS_OK;
    if (!ok) snprintf(msg, n, "could not read the result back");
    for (size_t i = 0; ok && i < s->n; i++) {
        if (s->kind == UF_ZS_I16) {
            ok = ((int16_t *)got)[i] == gpuws_ufunc_ref_zero_suppress_i16(s->wave[i], 15.0);
        } else if (s->kind == UF_ZS_F32) {
            const float w = gpuws_ufunc_ref_zero_suppress_f32(s->host[0][i], 15.0);
            ok = memcmp(&w, (float *)got + i, 4) == 0;
        } else {
            double a[4];
            for (int k = 0; k < 4; k++) a[k] = s->host[k] ? s->host[k][i] : (double)(float)uf_operand(s, k).scalar;
            ok = gpuws_ufunc_ref_within(uf_spec[s->kind].id, a, gpuws_ufunc_ref_eval(uf_spec[s->kind].id, a), ((float *)got)[i],
                                        NULL, NULL);
        }
        if (!ok) snprintf(msg, n, "element %zu is outside the stated bound (or differs, for zero_suppress)", i);
    }
    free(got);
    return ok;
}

#define UF_WORKLOAD(KIND, VARIANT)                                                                              \
    static gpuws_status uf_setup_##KIND(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)    \
    {                                                                                                           \
        return uf_setup(ctx, size, state, c, KIND);                                                             \
    }                                                                                                           \
    static const bench_workload w_##KIND = {"ufunc", VARIANT, false, uf_setup_##KIND, uf_run, uf_check, uf_teardown}; \
    BENCH_WORKLOAD(w_##KIND)

UF_WORKLOAD(UF_GAUSSIAN, "gaussian_pdf")
UF_WORKLOAD(UF_POLAR, "polar_distance")
UF_WORKLOAD(UF_PULSES, "make_pulses")
UF_WORKLOAD(UF_HYPOT, "hypot")
UF_WORKLOAD(UF_ZS_F32, "zero_suppress_f32")
UF_WORKLOAD(UF_ZS_I16, "zero_suppress_i16")

/* ---- the hidden layer, host to host (the assessment) ---------------------------------------------------------- */

typedef struct {
    gpuws_context *ctx;
    size_t n;
    float *g, *w, *out; /* page-locked (gpuws_host_alloc) */
} hl_state;

static void hl_teardown(void *p)
{
    hl_state *s = p;
    gpuws_host_free(s->ctx, s->g);
    gpuws_host_free(s->ctx, s->w);
    gpuws_host_free(s->ctx, s->out);
    free(s);
}

static gpuws_status hl_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    hl_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->ctx = ctx;
    s->n = pick(size, (size_t)1 << 20, 100000000, 100000000); /* the assessment's 10^8 */
    gpuws_status st;
    if ((st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->g)) || (st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->w)) ||
        (st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->out)))
        return st;
    uint64_t seed = 31;
    for (size_t i = 0; i < s->n; i++) {
        s->g[i] = floorf((float)(255 * bench_uniform(&seed))); /* floor(uniform(0, 255)) */
        const double u1 = bench_uniform(&seed) + 0x1p-60, u2 = bench_uniform(&seed);    /* normal(0.5, 0.1), Box-Muller */
        s->w[i] = (float)(0.5 + 0.1 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
    c->bytes = 12.0 * (double)s->n; /* over the bus: two arrays up, one down */
    c->flops = 3.0 * (double)s->n;
    label_size(c->size_label, sizeof c->size_label, s->n, "f32 host->host");
    return GPUWS_OK;
}

static gpuws_status hl_run(void *p, gpuws_stream *st)
{
    hl_state *s = p;
    (void)st; /* the pipeline leads with the context's default stream, the one the bench times */
    return gpuws_hidden_layer_host(s->ctx, s->n, s->g, s->w, s->out, NULL);
}

static bool hl_check(void *p, char *msg, size_t n)
{
    hl_state *s = p;
    for (size_t i = 0; i < s->n; i++) {
        const double a[2] = {s->g[i], s->w[i]};
        if (!gpuws_ufunc_ref_within(GPUWS_UFUNC_HIDDEN_LAYER, a, gpuws_ufunc_ref_hidden_layer(a[0], a[1]), s->out[i], NULL, NULL)) {
            snprintf(msg, n, "element %zu: tanh(%g / 255 * %g) = %.9g is outside the bound", i, a[0], a[1], (double)s->out[i]);
            return false;
        }
    }
    return true;
}

static const bench_workload w_hidden = {"ufunc", "hidden_layer+transfers", true, hl_setup, hl_run, hl_check, hl_teardown};
BENCH_WORKLOAD(w_hidden)

/* ---- monte_carlo_pi ---------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t n;
    gpuws_buffer *hits;
} mc_state;

#define MC_SEED 2026

static void mc_teardown(void *p)
{
    mc_state *s = p;
    gpuws_buffer_destroy(s->hits);
    free(s);
}

static gpuws_status mc_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    mc_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->n = pick(size, 1000000, 100000000, 10000000000ULL);
    c->bytes = 8; /* no sample array: only the count is written */
    c->flops = 0; /* integer work: one Philox4x32-10 call (10 rounds of 2 wide multiplies) per 2 samples */
    snprintf(c->size_label, sizeof c->size_label, "%.0e samples", (double)s->n);
    return gpuws_buffer_create(ctx, 8, &s->hits);
}

static gpuws_status mc_run(void *p, gpuws_stream *st)
{
    mc_state *s = p;
    return gpuws_monte_carlo_pi(st, 0, s->n, MC_SEED, s->hits);
}

static bool mc_check(void *p, char *msg, size_t n)
{
    mc_state *s = p;
    uint64_t got;
    if (gpuws_buffer_read(s->hits, 0, &got, 8)) {
        snprintf(msg, n, "could not read the result back");
        return false;
    }
    const uint64_t want = gpuws_monte_carlo_pi_ref(0, s->n, MC_SEED);
    if (got != want) snprintf(msg, n, "%llu hits, reference %llu", (unsigned long long)got, (unsigned long long)want);
    return got == want;
}

static const bench_workload w_pi = {"monte_carlo_pi", "philox", false, mc_setup, mc_run, mc_check, mc_teardown};
BENCH_WORKLOAD(w_pi)

/* ---- histogram --------------------------------------------------------------------------------------------- */

#define HIST_BINS 256
#define HIST_LO (-4.0)
#define HIST_HI 4.0

typedef struct {
    gpuws_dtype dtype;
    size_t n;
    void *host;
    gpuws_buffer *x, *counts;
} hist_state;

static void hist_teardown(void *p)
{
    hist_state *s = p;
    free(s->host);
    gpuws_buffer_destroy(s->x);
    gpuws_buffer_destroy(s->counts);
    free(s);
}

static gpuws_status hist_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c, gpuws_dtype dt)
{
    hist_state *s = calloc(1, sizeof *s);
    if (!s) return GPUWS_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dtype = dt;
    s->n = fit(ctx, pick(size, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28), 4, 1);
    s->host = malloc(s->n * 4);
    if (!s->host) return GPUWS_ERR_OUT_OF_MEMORY;
    uint64_t seed = 41;
    for (size_t i = 0; i < s->n; i++) {
        /* roughly normal (sum of 4 uniforms): realistic, uneven bin loads, a little outside the range */
        const double v = (bench_uniform(&seed) + bench_uniform(&seed) + bench_uniform(&seed) + bench_uniform(&seed) - 2.0) * 4.4;
        if (dt == GPUWS_F32) ((float *)s->host)[i] = (float)v;
        else ((int32_t *)s->host)[i] = (int32_t)floor(v * 1e6); /* i32: the same shape, in micro-units */
    }
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * 4, &s->x)) || (st = gpuws_buffer_create(ctx, HIST_BINS * 8, &s->counts)) ||
        (st = gpuws_buffer_write(s->x, 0, s->host, s->n * 4)))
        return st;
    c->bytes = 4.0 * (double)s->n + HIST_BINS * 8.0;
    c->flops = 0;
    label_size(c->size_label, sizeof c->size_label, s->n, dt == GPUWS_F32 ? "f32, 256 bins" : "i32, 256 bins");
    return GPUWS_OK;
}

static double hist_scale(const hist_state *s) { return s->dtype == GPUWS_F32 ? 1.0 : 1e6; }

static gpuws_status hist_setup_f32(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return hist_setup(ctx, size, state, c, GPUWS_F32);
}

static gpuws_status hist_setup_i32(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    return hist_setup(ctx, size, state, c, GPUWS_I32);
}

static gpuws_status hist_run(void *p, gpuws_stream *st)
{
    hist_state *s = p;
    return gpuws_histogram(st, s->dtype, s->n, s->x, HIST_LO * hist_scale(s), HIST_HI * hist_scale(s), HIST_BINS, s->counts);
}

static bool hist_check(void *p, char *msg, size_t n)
{
    hist_state *s = p;
    uint64_t got[HIST_BINS], want[HIST_BINS];
    if (gpuws_buffer_read(s->counts, 0, got, sizeof got)) {
        snprintf(msg, n, "could not read the result back");
        return false;
    }
    const double lo = HIST_LO * hist_scale(s), hi = HIST_HI * hist_scale(s);
    if (s->dtype == GPUWS_F32) {
        float e[HIST_BINS + 1];
        gpuws_histogram_edges_f32(lo, hi, HIST_BINS, e);
        gpuws_histogram_ref_f32(s->host, s->n, e, HIST_BINS, want);
    } else {
        int64_t e[HIST_BINS + 1];
        gpuws_histogram_edges_i32(lo, hi, HIST_BINS, e);
        gpuws_histogram_ref_i32(s->host, s->n, e, HIST_BINS, want);
    }
    for (int b = 0; b < HIST_BINS; b++)
        if (got[b] != want[b]) {
            snprintf(msg, n, "bin %d holds %llu, reference %llu", b, (unsigned long long)got[b], (unsigned long long)want[b]);
            return false;
        }
    return true;
}

static const bench_workload w_hist_f32 = {"histogram", "f32", false, hist_setup_f32, hist_run, hist_check, hist_teardown};
static const bench_workload w_hist_i32 = {"histogram", "i32", false, hist_setup_i32, hist_run, hist_check, hist_teardown};
BENCH_WORKLOAD(w_hist_f32)
BENCH_WORKLOAD(w_hist_i32)
