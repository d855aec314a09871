/* The tuning registry (core/tuning.h): at most 10 public environment variables, and no other GPUWS_* variable named
 * by the library's or the CLI's sources; GPUWS_TUNING parsed once per context, a bad entry ignored with a warning;
 * gpuws__tuning_set for tests. (docs/tuning.md against the list: the ctest tuning_doc.) */
#include "support.h"

#include "core/backend_impl.h"
#include "core/tuning.h"

#include <criterion/redirect.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static size_t public_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < gpuws__tuning_count(); i++) n += gpuws__tuning_get(i)->is_public;
    return n;
}

static bool is_public(const char *name, size_t len)
{
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (e->is_public && strlen(e->name) == len && strncmp(e->name, name, len) == 0) return true;
    }
    return false;
}

Test(tuning, at_most_ten_public_environment_variables)
{
    const size_t n = public_count();
    cr_assert_leq(n, 10, "%zu public environment variables in core/tuning.h; the limit is 10", n);
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (e->is_public)
            cr_expect(strncmp(e->name, "GPUWS_", 6) == 0, "public entry %s is not a GPUWS_ variable", e->name);
        else cr_expect(islower((unsigned char)e->name[0]), "knob %s: knob names are lower case", e->name);
        cr_expect(e->doc[0] && e->values[0], "%s has no doc or values", e->name);
    }
}

/* ---- the sources name no other GPUWS_* variable ---------------------------------------------------------------- */

/* Literals that look like a variable and are none: the status names (core/status.c: "GPUWS_" #name, and this one). */
static const char *const not_variables[] = { "GPUWS_UNKNOWN_STATUS", "GPUWS_" };

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The problems in one file's text, appended to report: string literals that are a GPUWS_* name outside the public
 * list (a getenv("GPUWS_FOO"), a table of names), and reads of `environ` (a scan of the environment by prefix)
 * outside the CPU backend, which hands it on to the compiler it starts. Comments are skipped. */
static void scan_text(const char *path, const char *text, bool environ_allowed, char *report, size_t size)
{
    size_t used = strlen(report);
    for (const char *p = text; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
        } else if (*p == '\'') {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1]) p++;
            if (*p) p++;
        } else if (*p == '"') {
            const char *s = ++p;
            for (; *p && *p != '"'; p++)
                if (*p == '\\' && p[1]) p++;
            const size_t len = (size_t)(p - s);
            if (*p) p++;
            bool ident = len >= 6 && strncmp(s, "GPUWS_", 6) == 0;
            for (size_t i = 6; ident && i < len; i++)
                ident = isupper((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_';
            bool allowed = !ident || is_public(s, len);
            for (size_t i = 0; !allowed && i < sizeof not_variables / sizeof not_variables[0]; i++)
                allowed = strlen(not_variables[i]) == len && strncmp(not_variables[i], s, len) == 0;
            if (!allowed) {
                const int k = snprintf(report + used, size - used,
                                       "%s: \"%.*s\" is no public variable (core/tuning.h)\n", path, (int)len, s);
                if (k > 0 && (size_t)k < size - used) used += (size_t)k;
            }
        } else if (!environ_allowed && strncmp(p, "environ", 7) == 0 && (p == text || !is_word(p[-1])) &&
                   !is_word(p[7])) {
            const int k = snprintf(report + used, size - used,
                                   "%s: reads environ (scan the environment only through "
                                   "core/tuning.h)\n",
                                   path);
            if (k > 0 && (size_t)k < size - used) used += (size_t)k;
            p += 7;
        } else {
            p++;
        }
    }
}

static bool source_file(const char *name)
{
    static const char *const exts[] = { ".c", ".h", ".cu", ".cuh", ".cl" };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof exts / sizeof exts[0]; i++)
        if (strcmp(dot, exts[i]) == 0) return true;
    return false;
}

static size_t scan_tree(const char *root, const char *rel, bool recurse, char *report, size_t size)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char relpath[4096], full[8192];
        snprintf(relpath, sizeof relpath, "%s/%s", rel, e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, relpath);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (recurse) files += scan_tree(root, relpath, true, report, size);
            continue;
        }
        if (!source_file(e->d_name)) continue;
        char *text = test_read_file(full);
        scan_text(relpath, text, strcmp(relpath, "backends/cpu/cpu_program.c") == 0, report, size);
        free(text);
        files++;
    }
    closedir(d);
    return files;
}

Test(tuning, the_sources_read_no_other_gpuws_variable)
{
    const char *data = getenv("GPUWS_TEST_DATA"); /* <source>/tests/data */
    cr_assert(data && *data, "GPUWS_TEST_DATA is not set (ctest sets it)");
    char root[4096];
    snprintf(root, sizeof root, "%s/../..", data);
    static char report[1 << 16];
    report[0] = 0;
    size_t files = 0;
    static const char *const dirs[] = { "core", "backends", "kernels", "tools", "include" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        files += scan_tree(root, dirs[i], true, report, sizeof report);
    files += scan_tree(root, "bench", false, report, sizeof report); /* bench/: its files are the CLI's gpuws bench */
    cr_assert_gt(files, 100, "only %zu source files found under %s", files, root);
    cr_assert(report[0] == 0, "GPUWS_* names outside the registry's public list:\n%s", report);
}

/* The scan finds what it is for: a getenv of a variable of its own, a table of names, a scan of environ. */
Test(tuning, the_source_scan_finds_a_variable_of_its_own)
{
    char report[1024] = "";
    scan_text("a.c",
              "/* \"GPUWS_IN_A_COMMENT\" */ const char *v = getenv(\"GPUWS_FOO\"); // \"GPUWS_BAR\"\n"
              "x = getenv(\"GPUWS_BACKEND\"); s = \"GPUWS_ERR_X: text\"; c = '\"'; t = \"GPUWS_TABLE_NAME\";\n"
              "for (char **e = environ; *e; e++) {}",
              false, report, sizeof report);
    cr_expect(strstr(report, "\"GPUWS_FOO\""), "getenv(\"GPUWS_FOO\") not found:\n%s", report);
    cr_expect(strstr(report, "\"GPUWS_TABLE_NAME\""), "a table's name not found:\n%s", report);
    cr_expect(strstr(report, "reads environ"), "environ not found:\n%s", report);
    cr_expect(!strstr(report, "COMMENT") && !strstr(report, "BAR") && !strstr(report, "BACKEND") &&
                  !strstr(report, "ERR_X"),
              "flagged a comment, a public variable or a message:\n%s", report);
}

/* ---- GPUWS_TUNING ----------------------------------------------------------------------------------------------- */

Test(tuning, gpuws_tuning_sets_knobs_of_every_type)
{
    setenv("GPUWS_TUNING",
           " convolve_path=direct, convolve2d_warps=2x1,convolve2d_split=off,convolve2d_grid=7,"
           "histogram_host_edges=1,convolve2d_persist=0",
           1);
    gpuws__tuning t;
    gpuws__tuning_from_env(&t);
    cr_expect_eq(t.convolve_path, GPUWS__PATH_DIRECT);
    cr_expect(t.convolve2d_warps[0] == 2 && t.convolve2d_warps[1] == 1);
    cr_expect_eq(t.convolve2d_split, GPUWS__SPLIT_OFF);
    cr_expect_eq(t.convolve2d_grid, 7);
    cr_expect(t.histogram_host_edges);
    cr_expect(!t.convolve2d_persist);
    cr_expect_eq(t.matmul_tile, GPUWS__MATMUL_AUTO, "a knob not named keeps its default");
    cr_expect_eq(t.measure_groups, GPUWS__NUMBER_AUTO);
}

/* Read when the context is created: a later change of the variable does not reach it. */
Test(tuning, a_context_reads_gpuws_tuning_when_it_is_created)
{
    setenv("GPUWS_TUNING", "histogram_chunk=8", 1);
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    setenv("GPUWS_TUNING", "histogram_chunk=16", 1);
    cr_expect_eq(ctx->tuning.histogram_chunk, 8);
    gpuws_context_destroy(ctx);
}

Test(tuning, bad_entries_are_ignored_with_a_warning_naming_the_values, .init = cr_redirect_stderr)
{
    setenv("GPUWS_TUNING",
           "no_such_knob=1,convolve_path=sideways,convolve2d_warps=2,2,matmul_tile=small,"
           "measure_groups=0,opencl_profile",
           1);
    unsetenv("GPUWS_LOG");
    gpuws__tuning t;
    gpuws__tuning_from_env(&t);
    cr_expect_eq(t.matmul_tile, GPUWS__MATMUL_SMALL, "a good entry after bad ones applies");
    cr_expect_eq(t.convolve_path, GPUWS__PATH_AUTO);
    cr_expect_eq(t.convolve2d_warps[0], 0);
    cr_expect_eq(t.measure_groups, GPUWS__NUMBER_AUTO);
    cr_expect(!t.opencl_profile);
    fflush(stderr);
    char err[8192] = "";
    FILE *f = cr_get_redirected_stderr();
    const size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = 0;
    cr_expect(strstr(err, "unknown knob 'no_such_knob'"), "stderr:\n%s", err);
    cr_expect(strstr(err, "convolve_path='sideways' is not one of auto|tiled|direct"), "stderr:\n%s", err);
    cr_expect(strstr(err, "convolve2d_warps='2' is not one of auto|WXxWY"), "stderr:\n%s", err);
    cr_expect(strstr(err, "unknown knob '2'"), "stderr:\n%s", err);
    cr_expect(strstr(err, "measure_groups='0' is not one of auto|1..65535"), "stderr:\n%s", err);
    cr_expect(strstr(err, "opencl_profile='' is not one of 0|1"), "stderr:\n%s", err);
}

/* ---- gpuws__tuning_set ------------------------------------------------------------------------------------------ */

Test(tuning, tuning_set_changes_one_knob_of_one_context)
{
    unsetenv("GPUWS_TUNING");
    gpuws_context *a = test_open(GPUWS_BACKEND_CPU), *b = test_open(GPUWS_BACKEND_CPU);
    TEST_OK(gpuws__tuning_set(a, "convolve2d_kernel_block", "4x8"));
    cr_expect(a->tuning.convolve2d_kernel_block[0] == 4 && a->tuning.convolve2d_kernel_block[1] == 8);
    cr_expect_eq(b->tuning.convolve2d_kernel_block[0], 0, "another context's knob changed");
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__tuning_set(a, "convolve2d_kernel_block", "4x0"));
    cr_expect(strstr(gpuws_last_error(), "convolve2d_kernel_block='4x0' is not one of auto|ROWSxCOLS"), "%s",
              gpuws_last_error());
    cr_expect(a->tuning.convolve2d_kernel_block[0] == 4 && a->tuning.convolve2d_kernel_block[1] == 8,
              "a refused value changed the knob");
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__tuning_set(a, "GPUWS_BACKEND", "cpu"));
    cr_expect(strstr(gpuws_last_error(), "unknown knob 'GPUWS_BACKEND'"), "%s", gpuws_last_error());
    TEST_FAILS(GPUWS_ERR_INVALID_ARGUMENT, gpuws__tuning_set(a, "sigma_clip_groups", "65536"));
    TEST_OK(gpuws__tuning_set(a, "sigma_clip_groups", "65535"));
    TEST_OK(gpuws__tuning_set(a, "convolve2d_kernel_block", NULL));
    cr_expect_eq(a->tuning.convolve2d_kernel_block[0], 0, "value NULL: the default");
    cr_expect_eq(a->tuning.sigma_clip_groups, 65535);
    TEST_OK(gpuws__tuning_set(a, NULL, NULL));
    cr_expect_eq(a->tuning.sigma_clip_groups, GPUWS__NUMBER_AUTO, "name NULL: every default");
    gpuws_context_destroy(a);
    gpuws_context_destroy(b);
}

/* Every knob takes its documented default, and prints it back as docs/tuning.md shows it. */
Test(tuning, every_default_round_trips)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    for (size_t i = 0; i < gpuws__tuning_count(); i++) {
        const gpuws__tuning_entry *e = gpuws__tuning_get(i);
        if (e->is_public) continue;
        TEST_OK(gpuws__tuning_set(ctx, e->name, e->def));
        char v[64];
        cr_assert(gpuws__tuning_format(&ctx->tuning, e->name, v, sizeof v));
        cr_expect_str_eq(v, e->def, "%s", e->name);
    }
    gpuws_context_destroy(ctx);
}
