/* Every example of examples/kernels/ (the workshop's kernels written in the kernel dialect) runs on every backend:
 * built against the public library, started with GPUWS_BACKEND naming the backend and a cache directory of its own,
 * it must exit 0 and print its success line (each example checks its own answer against a host computation).
 * ctest passes the folder of the example binaries in GPUWS_KERNEL_EXAMPLES (run by hand, the suite finds them in
 * its build tree). */
#include "run_cli.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const examples[] = { "vector_add", "check_prime", "histogram", "matmul_tiled",
                                        "block_sum",  "elementwise", "reduction" };
#define NUM_EXAMPLES (sizeof examples / sizeof examples[0])

typedef struct {
    int example; /* an index into examples[] (a parameter holds no pointer: a test runs in another process) */
    gpuws_backend_kind kind;
} run;

/* A line "<name>: checked ...: correct". */
static bool has_success_line(const char *out, const char *name)
{
    const size_t nl = strlen(name);
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > nl + 11 && strncmp(p, name, nl) == 0 && strncmp(p + nl, ": checked ", 10) == 0 && len >= 9 &&
            strncmp(p + len - 9, ": correct", 9) == 0)
            return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

ParameterizedTestParameters(kernel_examples, each_example_on_each_backend)
{
    static run runs[NUM_EXAMPLES * TEST_BACKENDS];
    for (size_t e = 0; e < NUM_EXAMPLES; e++)
        for (size_t b = 0; b < TEST_BACKENDS; b++) runs[e * TEST_BACKENDS + b] = (run){ (int)e, test_backends[b] };
    return cr_make_param_array(run, runs, NUM_EXAMPLES * TEST_BACKENDS);
}

ParameterizedTest(run *r, kernel_examples, each_example_on_each_backend, .init = test_cache_dir_fresh,
                  .fini = test_cache_dir_remove, .timeout = 300)
{
    const char *name = examples[r->example], *backend = test_backend_name(r->kind);
    gpuws_context_destroy(test_open(r->kind)); /* skips an unavailable backend with the reason, or fails if required */
    char path[4096];
    const char *dir = getenv("GPUWS_KERNEL_EXAMPLES");
    if (dir && *dir) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
    } else { /* run by hand: the examples' folder of the build tree this suite is in (<build>/tests/<suite>) */
        char self[2048];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        cr_assert_gt(n, 0, "GPUWS_KERNEL_EXAMPLES is not set and /proc/self/exe cannot be read");
        self[n] = 0;
        char *slash = strrchr(self, '/');
        *slash = 0;
        snprintf(path, sizeof path, "%s/../examples/kernels/%s", self, name);
    }
    cr_assert_eq(access(path, X_OK), 0, "example %s is not built (%s)", name, path);
    char env[64];
    snprintf(env, sizeof env, "GPUWS_BACKEND=%s", backend);
    const char *const envs[] = { env, NULL };
    char *out;
    int rc = test_run_program(path, NULL, envs, false, &out); /* GPUWS_DEVICE and the platform as test_open saw them */
    cr_assert_eq(rc, 0, "%s on %s exited with %d:\n%s", name, backend, rc, out);
    cr_assert(has_success_line(out, name), "%s on %s exited 0 without its success line:\n%s", name, backend, out);
    cr_log_info("%s", out);
    free(out);
}
