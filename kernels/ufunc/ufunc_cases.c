/* ufunc's cases (kernels/common/cases.h): the workshop's calls on device-resident arrays, and the hidden layer host
 * to host (the assessment). Each check compares with the scalar reference under the tests' rule (the stated bounds;
 * bit-exact for zero_suppress). */
#include "common/cases.h"
#include "ufunc/ufunc_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { UF_GAUSSIAN, UF_POLAR, UF_PULSES, UF_HYPOT, UF_ZS_F32, UF_ZS_I16 } uf_kind;

typedef struct {
    uf_kind kind;
    size_t n;
    float *host[4]; /* array operands */
    int16_t *wave;  /* zero_suppress_i16 input */
    gpuws_buffer *in[4], *out;
} uf_state;

/* The workshop's calls: which operands are arrays, their ranges, the scalars, the formula-level operation count
 * (each exp/sin/cos/sqrt/tanh and division counted once). zero_suppress (exact) needs no entry. */
static const struct {
    gpuws_ufunc_id id;
    int arrays; /* operands 0..arrays-1 are arrays, the rest scalars */
    double lo[4], hi[4];
    double scalar[4];
    double ops;
} uf_spec[] = {
    [UF_GAUSSIAN] = { GPUWS_UFUNC_GAUSSIAN_PDF, 1, { -5 }, { 5 }, { 0, 0.5, 1.5 }, 7 }, /* (x, 0.5, 1.5) */
    [UF_POLAR] = { GPUWS_UFUNC_POLAR_DISTANCE,
                   4,
                   { 0, -3.2, 0, -3.2 },
                   { 1, 3.2, 1, 3.2 },
                   { 0 },
                   14 },                                                          /* four arrays */
    [UF_PULSES] = { GPUWS_UFUNC_MAKE_PULSES, 1, { 0 }, { 0 }, { 0, 0, 100 }, 5 }, /* (t, n/23, 100) */
    [UF_HYPOT] = { GPUWS_UFUNC_HYPOT, 2, { -1e3, -1e3 }, { 1e3, 1e3 }, { 0 }, 9 },
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
    s->n = gpuws__case_fit(ctx, gpuws__case_pick(size, 5000, (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 28), es,
                           arrays + 1);
    uint64_t seed = 11 + (uint64_t)kind;
    gpuws_status st;
    if ((st = gpuws_buffer_create(ctx, s->n * es, &s->out))) return st;
    for (int k = 0; k < arrays; k++) {
        void *h;
        if (kind == UF_ZS_I16) {
            h = s->wave = malloc(s->n * 2);
            if (!h) return GPUWS_ERR_OUT_OF_MEMORY;
            for (size_t i = 0; i < s->n; i++)
                s->wave[i] = (int16_t)(bench_splitmix(&seed) % 64) - 20; /* a noisy waveform */
        } else {
            h = s->host[k] = malloc(s->n * 4);
            if (!h) return GPUWS_ERR_OUT_OF_MEMORY;
            for (size_t i = 0; i < s->n; i++) {
                if (kind == UF_PULSES) s->host[k][i] = (float)i; /* t = arange(n) */
                else if (kind == UF_ZS_F32) s->host[k][i] = (float)(bench_uniform(&seed) * 64 - 20);
                else
                    s->host[k][i] = (float)(uf_spec[kind].lo[k] +
                                            (uf_spec[kind].hi[k] - uf_spec[kind].lo[k]) * bench_uniform(&seed));
            }
        }
        if ((st = gpuws_buffer_create(ctx, s->n * es, &s->in[k])) ||
            (st = gpuws_buffer_write(s->in[k], 0, h, s->n * es)))
            return st;
    }
    c->bytes = (double)(arrays + 1) * (double)s->n * (double)es;
    c->flops = zs ? (double)s->n : uf_spec[kind].ops * (double)s->n;
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, kind == UF_ZS_I16 ? "i16" : "f32");
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
            ok = gpuws_ufunc_ref_within(uf_spec[s->kind].id, a, gpuws_ufunc_ref_eval(uf_spec[s->kind].id, a),
                                        ((float *)got)[i], NULL, NULL);
        }
        if (!ok) snprintf(msg, n, "element %zu is outside the stated bound (or differs, for zero_suppress)", i);
    }
    free(got);
    return ok;
}

static size_t uf_outputs(void *p, bench_output *out)
{
    uf_state *s = p;
    out[0] = (bench_output){ s->out, NULL, s->n * (s->kind == UF_ZS_I16 ? 2 : 4) };
    return 1;
}

#define UF_WORKLOAD(KIND, VARIANT)                                                                                     \
    static gpuws_status uf_setup_##KIND(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)            \
    {                                                                                                                  \
        return uf_setup(ctx, size, state, c, KIND);                                                                    \
    }                                                                                                                  \
    static const gpuws__case w_##KIND = { { "ufunc", VARIANT, false, uf_setup_##KIND, uf_run, uf_check, uf_teardown }, \
                                          uf_outputs,                                                                  \
                                          false };                                                                     \
    GPUWS_CASE(w_##KIND)

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
    s->n = gpuws__case_pick(size, 5000, (size_t)1 << 20, 100000000, 100000000); /* the assessment's 10^8 */
    gpuws_status st;
    if ((st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->g)) ||
        (st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->w)) ||
        (st = gpuws_host_alloc(ctx, s->n * 4, (void **)&s->out)))
        return st;
    uint64_t seed = 31;
    for (size_t i = 0; i < s->n; i++) {
        s->g[i] = floorf((float)(255 * bench_uniform(&seed)));                       /* floor(uniform(0, 255)) */
        const double u1 = bench_uniform(&seed) + 0x1p-60, u2 = bench_uniform(&seed); /* normal(0.5, 0.1), Box-Muller */
        s->w[i] = (float)(0.5 + 0.1 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
    c->bytes = 12.0 * (double)s->n; /* over the bus: two arrays up, one down */
    c->flops = 3.0 * (double)s->n;
    gpuws__case_label_count(c->size_label, sizeof c->size_label, s->n, "f32 host->host");
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
        const double a[2] = { s->g[i], s->w[i] };
        if (!gpuws_ufunc_ref_within(GPUWS_UFUNC_HIDDEN_LAYER, a, gpuws_ufunc_ref_hidden_layer(a[0], a[1]), s->out[i],
                                    NULL, NULL)) {
            snprintf(msg, n, "element %zu: tanh(%g / 255 * %g) = %.9g is outside the bound", i, a[0], a[1],
                     (double)s->out[i]);
            return false;
        }
    }
    return true;
}

static size_t hl_outputs(void *p, bench_output *out)
{
    hl_state *s = p;
    out[0] = (bench_output){ NULL, s->out, s->n * 4 };
    return 1;
}

static const gpuws__case w_hidden = {
    { "ufunc", "hidden_layer+transfers", true, hl_setup, hl_run, hl_check, hl_teardown }, hl_outputs, true
};
GPUWS_CASE(w_hidden)
