/* transpose's cases (kernels/common/cases.h): a square f32 matrix, 72² (tiny), 2048² (small), 8192² (default),
 * 16384² (large), of uniform [-1, 1) values; exact against the reference. */
#include "common/cases.h"
#include "transpose/transpose_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpuws_status tr_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    const size_t n = gpuws__case_pick(size, 72, 2048, 8192, 16384);
    c->bytes = 2.0 * (double)n * (double)n * 4; /* read once, written once */
    c->flops = 0;
    snprintf(c->size_label, sizeof c->size_label, "%zux%zu f32", n, n);
    return gpuws__case_matrix_setup(ctx, state, n, n, n * n, 8);
}

static gpuws_status tr_run(void *p, gpuws_stream *st)
{
    gpuws__case_matrix *s = p;
    return gpuws_transpose(st, GPUWS_F32, s->rows, s->cols, s->x, s->out);
}

static bool tr_check(void *p, char *msg, size_t len)
{
    gpuws__case_matrix *s = p;
    const size_t bytes = s->rows * s->cols * 4;
    void *got, *want = malloc(bytes);
    bool ok = gpuws__case_read(s->out, &got, bytes, msg, len) && want;
    if (ok) {
        gpuws_transpose_ref_b32((const uint32_t *)s->hx, want, s->rows, s->cols);
        ok = memcmp(got, want, bytes) == 0;
        if (!ok) snprintf(msg, len, "result differs from the scalar reference");
    }
    free(got);
    free(want);
    return ok;
}

static const gpuws__case w_transpose_f32 = { { "transpose", "f32", false, tr_setup, tr_run, tr_check,
                                               gpuws__case_matrix_teardown },
                                             gpuws__case_matrix_outputs,
                                             false };
GPUWS_CASE(w_transpose_f32)
