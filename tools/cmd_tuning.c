/* gpuws tuning: the environment variables gpuws reads and the knobs GPUWS_TUNING sets (core/tuning.h); with
 * --markdown, docs/tuning.md as the registry generates it. */
#include "commands.h"

#include "core/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuws tuning [--markdown]\n"
               "  Lists the environment variables gpuws reads, and the tuning knobs with the values GPUWS_TUNING\n"
               "  gives them (GPUWS_TUNING=name=value,name=value: for every context, without recompiling).\n"
               "  --markdown  print docs/tuning.md as the registry (core/tuning.h) generates it\n");
}

/* A table cell: '|' escaped, as GitHub's tables need even inside code spans. */
static void cell(const char *s, bool code)
{
    if (code) putchar('`');
    for (; *s; s++) {
        if (*s == '|') putchar('\\');
        putchar(*s);
    }
    if (code) putchar('`');
}

static void markdown(void)
{
    printf("# Environment variables and tuning knobs\n\n"
           "<!-- Generated from core/tuning.h by `gpuws tuning --markdown > docs/tuning.md`; the test tuning_doc fails "
           "when the two differ. -->\n\n"
           "The library and the `gpuws` CLI read the environment variables of the first table and no other `GPUWS_*` "
           "variable (the test test_tuning checks the sources). Everything else that steers a code path is a knob of "
           "the second table: set through `GPUWS_TUNING`, read once when a context is created, an unknown name or a "
           "bad value ignored with a warning that names the accepted values. For an A/B on a GPU machine, e.g.\n\n"
           "```sh\nGPUWS_TUNING=convolve2d_persist=0,convolve2d_warps=2x2 gpuws bench --backends cuda\n```\n\n"
           "Tests set knobs per context with `gpuws__tuning_set(ctx, name, value)` (core/tuning.h, in the "
           "gpuws_internal library), never through the environment. `gpuws tuning` lists the values in effect.\n\n"
           "## Environment variables\n\n| variable | values | default | effect |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (!e->is_public) continue;
        printf("| `%s` | ", e->name);
        cell(e->values, false);
        printf(" | ");
        if (*e->def) cell(e->def, true);
        else printf("unset");
        printf(" | %s |\n", e->doc);
    }
    printf("\n## Tuning knobs (`GPUWS_TUNING`)\n\n| knob | values | default | effect |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (e->is_public) continue;
        printf("| `%s` | ", e->name);
        cell(e->values, true);
        printf(" | `%s` | %s |\n", e->def, e->doc);
    }
    printf("\n## Test-harness variables\n\n"
           "Read by the test suites and fuzz targets, not by the library or the CLI.\n\n"
           "| variable | effect |\n| --- | --- |\n"
           "| `GPUWS_REQUIRE` | backends (and `fp64`) whose unavailability fails the tests instead of skipping them, "
           "e.g. `cpu,opencl` |\n"
           "| `GPUWS_TEST_BACKENDS` | run just these backends |\n"
           "| `GPUWS_TEST_SEED` | replay a \"fresh seed\" case |\n"
           "| `GPUWS_TEST_REPEAT` | test_label: repeat its randomised cases |\n"
           "| `GPUWS_TEST_DATA`, `GPUWS_CLI`, `GPUWS_KERNEL_EXAMPLES` | set by ctest: the test data folder, the CLI, "
           "the built kernel examples |\n"
           "| `GPUWS_FUZZ_OPENCL` | fuzz_api: fuzz the OpenCL backend too (by default it hides the OpenCL loader) |\n");
}

static int cmd_tuning(int argc, char **argv)
{
    bool md = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--markdown") == 0 && !md) {
            md = true;
            continue;
        }
        if (strcmp(argv[i], "--markdown") == 0) fprintf(stderr, "gpuws tuning: --markdown given twice\n");
        else fprintf(stderr, "gpuws tuning: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (md) {
        markdown();
        return 0;
    }
    printf("environment variables:\n");
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (!e->is_public) continue;
        const char *v = getenv(e->name);
        printf("  %-22s %s\n", e->name, v && *v ? v : "<unset>");
    }
    gpuws__tuning t;
    gpuws__tuning_from_env(&t);
    printf("\nknobs (GPUWS_TUNING=name=value,...; docs/tuning.md):\n");
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (e->is_public) continue;
        char v[64];
        gpuws__tuning_format(&t, e->name, v, sizeof v);
        printf("  %-26s %-8s (%s; default %s)\n", e->name, v, e->values, e->def);
    }
    return 0;
}

GPUWS_COMMAND("tuning", "list the environment variables and tuning knobs (--markdown: docs/tuning.md)", cmd_tuning)
