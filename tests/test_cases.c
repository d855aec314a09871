/* Every algorithm's case table (kernels/<algo>/<algo>_cases.c) on every backend, at the TINY size: the case is set
 * up, its outputs poisoned, run on a fresh stream, and checked against the scalar reference with its tolerance. So a
 * new algorithm is tested from its case table alone; its own suite (tests/test_<algo>.c) adds the edge cases. The
 * fault and bad-input harnesses run the same cases (tests/test_faults.c, tests/test_bad_input.c). */
#include "support.h"

#include <stdlib.h>
#include <string.h>

ParameterizedTestParameters(cases, tiny) { return test_case_params(false); }

/* Correct on every backend, and the outputs hook names what the run writes: each listed output was poisoned and
 * is no longer all poison afterwards (so the harnesses that check "untouched" look at real outputs). */
ParameterizedTest(test_case_param *p, cases, tiny)
{
    const gpuws__case *c = gpuws__cases()[p->index];
    char name[160];
    test_case_name(p, name, sizeof name);
    gpuws_context *ctx = test_open(p->kind);
    if (strstr(c->w.variant, "f64")) test_require_dtype(ctx, GPUWS_F64);
    gpuws_stream *s;
    TEST_OK(gpuws_stream_create(ctx, &s));
    void *state = NULL;
    bench_counts counts;
    memset(&counts, 0, sizeof counts);
    gpuws_status st = c->w.setup(ctx, BENCH_TINY, &state, &counts);
    cr_assert_eq(st, GPUWS_OK, "%s: setup: %s: %s", name, gpuws_status_name(st), gpuws_last_error());
    bench_output out[BENCH_MAX_OUTPUTS];
    const size_t nout = test_case_poison(c, state, out);
    TEST_OK(gpuws_context_synchronize(ctx));
    st = c->w.run(state, s);
    cr_assert_eq(st, GPUWS_OK, "%s (%s): %s: %s", name, counts.size_label, gpuws_status_name(st), gpuws_last_error());
    TEST_OK(gpuws_stream_synchronize(s));
    TEST_OK(gpuws_context_synchronize(ctx));
    char msg[512] = "";
    cr_assert(c->w.check(state, msg, sizeof msg), "%s (%s): %s", name, counts.size_label, msg);
    for (size_t k = 0; k < nout; k++)
        cr_assert(!test_output_poisoned(&out[k]), "%s: output %zu of %zu bytes was not written", name, k, out[k].bytes);
    c->w.teardown(state);
    gpuws_stream_destroy(s);
    gpuws_context_destroy(ctx);
}

/* Every case file (kernels/<algo>/<algo>_cases.c, GPUWS_CASE_FILES of them: tests/CMakeLists.txt) registered its
 * cases into the tests, each with an outputs hook: a file that is not linked, or registers nothing, fails here. */
Test(cases, registered)
{
    size_t algorithms = 0;
    const gpuws__case *const *cs = gpuws__cases();
    for (size_t i = 0; cs[i]; i++) {
        cr_assert(cs[i]->outputs, "%s %s has no outputs hook", cs[i]->w.algorithm, cs[i]->w.variant);
        algorithms += i == 0 || strcmp(cs[i]->w.algorithm, cs[i - 1]->w.algorithm) != 0;
    }
    cr_assert_eq(algorithms, (size_t)GPUWS_CASE_FILES, "cases of %zu algorithms registered, %d case files compiled",
                 algorithms, GPUWS_CASE_FILES);
}
