/* l2_norm's cases (kernels/common/cases.h): the norm of every row of a rows × 1024 f32 matrix of uniform [-1, 1)
 * values, rows = 2^5 (tiny), 2^12 (small), 2^16 (default), 2^18 (large); within the bound of tests/test_l2_norm.c. */
#include "common/cases.h"
#include "l2_norm/l2_norm_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpuws_status l2_setup(gpuws_context *ctx, bench_size size, void **state, bench_counts *c)
{
    const int log_rows = (int)gpuws__case_pick(size, 5, 12, 16, 18);
    const size_t rows = (size_t)1 << log_rows, cols = 1024;
    c->bytes = (double)(rows * cols + rows) * 4; /* the matrix read once, one norm per row written */
    c->flops = 2.0 * (double)(rows * cols); /* a square and an add per element (the scaling multiply not counted) */
    snprintf(c->size_label, sizeof c->size_label, "2^%d x %zu f32", log_rows, cols);
    return gpuws__case_matrix_setup(ctx, state, rows, cols, rows, 9);
}

static gpuws_status l2_run(void *p, gpuws_stream *st)
{
    gpuws__case_matrix *s = p;
    return gpuws_l2_norm(st, GPUWS_F32, s->rows, s->cols, s->x, s->out);
}

/* Every row against the long-double oracle: relative error within γ_cols/2 + 2u (tests/test_l2_norm.c). */
static bool l2_check(void *p, char *msg, size_t len)
{
    gpuws__case_matrix *s = p;
    void *got;
    bool ok = gpuws__case_read(s->out, &got, s->rows * 4, msg, len);
    const long double u = 0x1p-24L, nu = s->cols * u, rel = nu / (1 - nu) / 2 + 2 * u + 1e-15L;
    for (size_t r = 0; ok && r < s->rows; r++) {
        const long double want = gpuws_l2_norm_oracle_f32(s->hx + r * s->cols, s->cols), g = ((float *)got)[r];
        if (!(fabsl(g - want) <= rel * want)) {
            snprintf(msg, len, "row %zu: %.9Lg, exact %.9Lg (allowed relative error %.3Lg)", r, g, want, rel);
            ok = false;
        }
    }
    free(got);
    return ok;
}

static const gpuws__case w_l2_norm_f32 = { { "l2_norm", "f32", false, l2_setup, l2_run, l2_check,
                                             gpuws__case_matrix_teardown },
                                           gpuws__case_matrix_outputs,
                                           false };
GPUWS_CASE(w_l2_norm_f32)
