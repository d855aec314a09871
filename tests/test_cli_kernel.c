/* gpuws kernel check: the command-line tool (the built binary, GPUWS_CLI) on kernel files written here. A file that
 * builds is "ok" with its kernels and their launch kinds on every backend this machine has; a compile error exits
 * 1 and names the user's file:line on each; -D reaches the compiler and the library's reading of parameter types;
 * headers come from FILE's directory and -I directories, and a missing one is named; bad usage exits 2. */
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *name, *text; /* written into the row's folder; a name may have one directory ("inc/x.h") */
} kernel_file;

typedef struct {
    const char *backend; /* "cuda", "opencl", "cpu", or "*" for each of them */
    const char *text;    /* must appear on each line of that backend's devices */
} backend_line;

typedef struct {
    const char *name;
    const char *env[3]; /* NAME=value for the run */
    kernel_file files[4];
    const char *argv[10]; /* after "gpuws"; "@x" is file x of the row's folder, "%x" is x in tests/data */
    int exit_code;
    const char *output[4]; /* each must appear in stdout + stderr */
    backend_line lines[2]; /* checked for every backend the library has here (see backend_lines) */
} kernel_case;

#define AXPY                                                                                                           \
    "GW_KERNEL void axpy(gw_u64 n, gw_f32 a, GW_GLOBAL const gw_f32 *x, GW_GLOBAL gw_f32 *y)\n"                        \
    "{\n"                                                                                                              \
    "    gw_u64 i = gw_global_idx(0);\n"                                                                               \
    "    if (i < n) y[i] = a * x[i] + y[i];\n"                                                                         \
    "}\n"
#define SCALE                                                                                                          \
    "GW_KERNEL void scale(gw_u64 n, REAL s, GW_GLOBAL REAL *y, GW_LOCAL REAL *tmp)\n"                                  \
    "{\n"                                                                                                              \
    "    gw_u64 i = gw_global_idx(0), t = gw_thread_idx(0);\n"                                                         \
    "    tmp[t] = i < n ? y[i] : 0;\n"                                                                                 \
    "    gw_barrier();\n"                                                                                              \
    "    if (i < n) y[i] = s * tmp[t];\n"                                                                              \
    "}\n"
#define UNDECLARED                                                                                                     \
    "GW_KERNEL void f(GW_GLOBAL gw_f32 *x)\n"                                                                          \
    "{\n"                                                                                                              \
    "    x[0] = undefined_thing;\n"                                                                                    \
    "}\n"
#define NEEDS_WIDTH                                                                                                    \
    "#ifndef WIDTH\n"                                                                                                  \
    "#error WIDTH is not defined\n"                                                                                    \
    "#endif\n"                                                                                                         \
    "GW_KERNEL void fill(GW_GLOBAL gw_i32 *x) { x[gw_global_idx(0)] = WIDTH; }\n"

static const kernel_case cases[] = {
    /* files that build */
    { "good_file",
      { NULL },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw" },
      0,
      { "axpy.gw: ok on " },
      { { "*", "ok (1 kernel: axpy(Lfbb))" } } },
    { "warnings_are_printed_with_ok",
      { NULL },
      { { "warn.gw", "#define W 1\n#define W 2\n" AXPY } },
      { "kernel", "check", "@warn.gw" },
      0,
      { "compiler output:", "redefined" },
      { { "*", "ok (1 kernel: axpy(Lfbb))" } } },
    { "every_part_of_the_dialect_through_the_editor_header",
      { NULL },
      { { NULL } },
      { "kernel", "check", "%kernels/dialect_sample.gw" },
      0,
      { "dialect_sample.gw: ok on " },
      { { "*", "ok (3 kernels: every_part(Lfiubbbbs), wide(Llbbbb), doubles(Ldb" } } },
    { "kernel_under_an_if_is_named",
      { NULL },
      { { "cpu.gw", AXPY "#ifdef GW_CPU\nGW_KERNEL void only_cpu(gw_i32 v) { (void)v; }\n#endif\n" } },
      { "kernel", "check", "@cpu.gw" },
      0,
      { NULL },
      { { "cpu", "ok (2 kernels: axpy(Lfbb), only_cpu(i))" }, { "opencl", "only_cpu(i) [not in this build]" } } },

    { "kernel_made_by_a_macro_is_not_seen",
      { NULL },
      { { "macro.gw", "#define MAKE(name) GW_KERNEL void name(GW_GLOBAL gw_f32 *y) { y[0] = 1; }\nMAKE(k1)\n" } },
      { "kernel", "check", "@macro.gw" },
      0,
      { "kernels must be written out (one made by a macro is not seen)" },
      { { "*", "ok (0 kernels)" } } },

    /* --time: from source and from the cache, per device */
    { "time_gives_both_build_times",
      { NULL },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw", "--time" },
      0,
      { "time to launchable kernels: ", "ms from source, ", "ms from the cache" },
      { { "*", "ok (1 kernel: axpy(Lfbb))" } } },
    { "time_with_the_cache_off_says_so",
      { "GPUWS_CACHE_DIR=off" },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw", "--time" },
      0,
      { "ms from source, cache off (GPUWS_CACHE_DIR=off)" },
      { { NULL } } },
    { "time_given_twice",
      { NULL },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw", "--time", "--time" },
      2,
      { "--time is given twice" },
      { { NULL } } },

    /* compile errors: exit 1, the user's file:line */
    { "compile_error_names_file_and_line",
      { NULL },
      { { "bad.gw", UNDECLARED } },
      { "kernel", "check", "@bad.gw" },
      1,
      { "bad.gw: FAILED on ", "compiler output:", "undefined_thing" },
      { { "*", "FAILED: " }, { "*", "bad.gw:3: " } } },
    { "error_in_a_header_names_the_header",
      { NULL },
      { { "uses.gw", "#include \"helpers.h\"\nGW_KERNEL void f(GW_GLOBAL gw_f32 *x) { x[0] = h(); }\n" },
        { "helpers.h", "/* helpers */\nGW_DEVICE gw_f32 h(void) { return nope; }\n" } },
      { "kernel", "check", "@uses.gw" },
      1,
      { "uses.gw: FAILED on " },
      { { "*", "FAILED: helpers.h:2: " } } },
    { "unsupported_parameter_is_an_error_before_any_compiler",
      { NULL },
      { { "narrow.gw", "\nGW_KERNEL void f(gw_u8 v, GW_GLOBAL gw_u8 *x) { x[0] = v; }\n" } },
      { "kernel", "check", "@narrow.gw" },
      1,
      { "narrow.gw: FAILED on " },
      { { "*", "narrow.gw:2: kernel 'f': parameter 'v': scalar parameters of type gw_u8 are not supported" } } },

    /* -D */
    { "define_given",
      { NULL },
      { { "width.gw", NEEDS_WIDTH } },
      { "kernel", "check", "@width.gw", "-D", "WIDTH=4" },
      0,
      { "width.gw: ok on " },
      { { "*", "ok (1 kernel: fill(b))" } } },
    { "define_given_in_one_word",
      { NULL },
      { { "width.gw", NEEDS_WIDTH } },
      { "kernel", "check", "-DWIDTH", "@width.gw" },
      0,
      { "width.gw: ok on " },
      { { "*", "ok (1 kernel: fill(b))" } } },
    { "define_missing",
      { NULL },
      { { "width.gw", NEEDS_WIDTH } },
      { "kernel", "check", "@width.gw" },
      1,
      { "WIDTH is not defined" },
      { { "*", "width.gw:2: " } } },
    { "define_sets_a_parameter_type",
      { NULL },
      { { "scale.gw", SCALE } },
      { "kernel", "check", "@scale.gw", "-D", "REAL=gw_f64" },
      0,
      { NULL },
      { { "*", "ok (1 kernel: scale(Ldbs))" } } },

    /* headers */
    { "headers_from_the_files_directory_nested",
      { NULL },
      { { "scale.gw", "#include \"real.h\"\n" SCALE },
        { "real.h", "#include <more.h>\n#define REAL gw_f32\n" },
        { "more.h", "/* nothing */\n" } },
      { "kernel", "check", "@scale.gw" },
      0,
      { "scale.gw: ok on " },
      { { "*", "ok (1 kernel: scale(Lfbs))" } } },
    { "header_from_an_include_directory",
      { NULL },
      { { "scale.gw", "#include \"real.h\"\n" SCALE }, { "inc/real.h", "#define REAL gw_f64\n" } },
      { "kernel", "check", "@scale.gw", "-I", "@inc" },
      0,
      { "scale.gw: ok on " },
      { { "*", "ok (1 kernel: scale(Ldbs))" } } },
    { "missing_header",
      { NULL },
      { { "miss.gw", "\n#include \"nothere.h\"\n" AXPY } },
      { "kernel", "check", "@miss.gw" },
      1,
      { "miss.gw:2: #include \"nothere.h\": no such file in " },
      { { NULL } } },
    { "missing_header_of_a_header",
      { NULL },
      { { "miss.gw", "#include \"real.h\"\n" AXPY }, { "real.h", "#include \"gone.h\"\n" } },
      { "kernel", "check", "@miss.gw" },
      1,
      { "real.h:1: #include \"gone.h\": no such file in " },
      { { NULL } } },

    /* backends that cannot build are listed, and do not fail the check */
    { "no_opencl_loader",
      { "GPUWS_OPENCL_LIBRARY=/nonexistent/libOpenCL.so.1" },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw" },
      0,
      { "opencl  unavailable: " },
      { { "cpu", "ok (1 kernel: axpy(Lfbb))" } } },
    { "no_c_compiler_with_opencl",
      { "GPUWS_CC=/nonexistent/cc" },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw" },
      0,
      { "unavailable: cpu not available for programs: no C compiler: '/nonexistent/cc'" },
      { { "opencl", "ok (1 kernel: axpy(Lfbb))" } } },
    { "nothing_can_build",
      { "GPUWS_CC=/nonexistent/cc", "GPUWS_OPENCL_LIBRARY=/nonexistent/libOpenCL.so.1" },
      { { "axpy.gw", AXPY } },
      { "kernel", "check", "@axpy.gw" },
      1,
      { "axpy.gw: not checked: no backend here can build kernels", "opencl  unavailable: " },
      { { NULL } } },

    /* the file itself */
    { "file_missing",
      { NULL },
      { { NULL } },
      { "kernel", "check", "@nothere.gw" },
      1,
      { "cannot read ", "nothere.gw" },
      { { NULL } } },
    { "file_empty",
      { NULL },
      { { "empty.gw", "" } },
      { "kernel", "check", "@empty.gw" },
      1,
      { "empty.gw is empty" },
      { { NULL } } },

    /* usage */
    { "help",
      { NULL },
      { { NULL } },
      { "kernel", "check", "--help" },
      0,
      { "usage: gpuws kernel check FILE", "Exit status" },
      { { NULL } } },
    { "no_subcommand", { NULL }, { { NULL } }, { "kernel" }, 2, { "needs a subcommand: check" }, { { NULL } } },
    { "unknown_subcommand",
      { NULL },
      { { NULL } },
      { "kernel", "lint" },
      2,
      { "unknown subcommand 'lint'" },
      { { NULL } } },
    { "no_file",
      { NULL },
      { { NULL } },
      { "kernel", "check" },
      2,
      { "needs a kernel FILE", "usage: gpuws kernel check" },
      { { NULL } } },
    { "two_files",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "@a.gw" },
      2,
      { "one FILE at a time" },
      { { NULL } } },
    { "unknown_option",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "--fast" },
      2,
      { "unknown option '--fast'" },
      { { NULL } } },
    { "define_without_value",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-D" },
      2,
      { "-D needs a value" },
      { { NULL } } },
    { "define_empty",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-D", "" },
      2,
      { "-D '': the name is empty" },
      { { NULL } } },
    { "define_empty_name",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-D", "=3" },
      2,
      { "-D '=3': the name is empty" },
      { { NULL } } },
    { "define_not_an_identifier",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-D", "2X=1" },
      2,
      { "'2X' is not an identifier" },
      { { NULL } } },
    { "define_twice",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-D", "X=1", "-DX=2" },
      2,
      { "-D X is given twice ('X=1', 'X=2')" },
      { { NULL } } },
    { "include_dir_missing",
      { NULL },
      { { "a.gw", AXPY } },
      { "kernel", "check", "@a.gw", "-I", "@nodir" },
      2,
      { "nodir' is not a directory" },
      { { NULL } } },
    { "include_dir_twice",
      { NULL },
      { { "a.gw", AXPY }, { "inc/x.h", "" } },
      { "kernel", "check", "@a.gw", "-I", "@inc", "-I", "@inc" },
      2,
      { "is given twice" },
      { { NULL } } },
};
#define N_CASES (sizeof cases / sizeof cases[0])

static const char *const backends[] = { "cuda", "opencl", "cpu" };
static const gpuws_backend_kind kinds[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };

/* Checks want on every output line of backend b ("cuda    ...", "opencl  ...", "cpu     ..."). A line that says
 * the backend cannot build programs here passes unless GPUWS_REQUIRE names the backend; a backend the library
 * does not have here prints no device lines. */
static void backend_lines(const kernel_case *c, const char *out, int b, const char *want)
{
    gpuws_backend_info bi;
    gpuws_backend_get_info(kinds[b], &bi);
    if (!bi.available) {
        cr_assert(!test_is_required(backends[b]), "%s: %s is required but unavailable: %s", c->name, backends[b],
                  bi.reason);
        return;
    }
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%-7s ", backends[b]);
    int seen = 0;
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!strncmp(p, prefix, strlen(prefix))) {
            char line[4096];
            snprintf(line, sizeof line, "%.*s", (int)len, p);
            if (!strstr(line, ": unavailable: ") || test_is_required(backends[b]))
                cr_assert(strstr(line, want), "%s: %s's line lacks '%s':\n%s\nwhole output:\n%s", c->name, backends[b],
                          want, line, out);
            seen++;
        }
        if (!e) break;
        p = e + 1;
    }
    cr_assert(seen, "%s: no line for %s, which is available:\n%s", c->name, backends[b], out);
}

static void write_file(const char *dir, const kernel_file *f)
{
    char path[600];
    const char *slash = strchr(f->name, '/');
    if (slash) {
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(slash - f->name), f->name);
        mkdir(path, 0700);
    }
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp, "cannot write %s", path);
    cr_assert(fputs(f->text, fp) >= 0, "cannot write %s", path);
    cr_assert_eq(fclose(fp), 0);
}

ParameterizedTestParameters(cli_kernel, check)
{
    static int idx[N_CASES];
    for (size_t i = 0; i < N_CASES; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_CASES);
}

ParameterizedTest(int *i, cli_kernel, check)
{
    const kernel_case *c = &cases[*i];
    char dir[] = "/tmp/gpuws-cli-kernel-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (int f = 0; f < 4 && c->files[f].name; f++) write_file(dir, &c->files[f]);
    const char *data = getenv("GPUWS_TEST_DATA");
    char args[10][600];
    const char *argv[10] = { NULL };
    for (int a = 0; a < 9 && c->argv[a]; a++) {
        const char *v = c->argv[a];
        if (v[0] == '@') snprintf(args[a], sizeof args[a], "%s/%s", dir, v + 1);
        else if (v[0] == '%') {
            if (!data) cr_skip_test("GPUWS_TEST_DATA is not set (run through ctest)");
            snprintf(args[a], sizeof args[a], "%s/%s", data, v + 1);
        } else snprintf(args[a], sizeof args[a], "%s", v);
        argv[a] = args[a];
    }
    gpuws_backend_info bi;
    if (strstr(c->name, "with_opencl") && (gpuws_backend_get_info(GPUWS_BACKEND_OPENCL, &bi), !bi.available)) {
        cr_assert(!test_is_required("opencl"), "%s: opencl is required but unavailable: %s", c->name, bi.reason);
        cr_skip_test("%s: opencl: %s", c->name, bi.reason);
    }
    if (strstr(c->name, "nothing_can_build") && (gpuws_backend_get_info(GPUWS_BACKEND_CUDA, &bi), bi.available))
        cr_skip_test("%s: cuda is here and may build", c->name);
    char *out;
    const int code = test_run_cli(argv, c->env, &out);
    const int want_code = c->exit_code;
    cr_assert_eq(code, want_code, "%s: exit %d, wanted %d; output:\n%s", c->name, code, want_code, out);
    for (int k = 0; k < 4 && c->output[k]; k++)
        cr_assert(strstr(out, c->output[k]), "%s: output lacks '%s':\n%s", c->name, c->output[k], out);
    for (int l = 0; l < 2 && c->lines[l].backend; l++)
        for (int b = 0; b < 3; b++)
            if (!strcmp(c->lines[l].backend, "*") || !strcmp(c->lines[l].backend, backends[b]))
                backend_lines(c, out, b, c->lines[l].text);
    free(out);
    char cmd[100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
