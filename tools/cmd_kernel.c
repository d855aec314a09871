/* gpuws kernel check: builds a kernel file in the gpuws dialect (docs/kernels.md) for every backend and device
 * this machine has, and prints what each compiler said: a linter for portability. */
#include "commands.h"
#include "core/program_internal.h" /* the program's GW_KERNEL declarations; #include read as the library does */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_LIST    64 /* -D and -I options, headers */
#define MAX_DEVICES 16 /* devices checked per backend */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpuws kernel check FILE [-D NAME[=VALUE]]... [-I DIR]... [--time]\n"
            "  Builds FILE, a kernel file in the gpuws kernel dialect (docs/kernels.md), for every backend here: the\n"
            "  CPU backend, and one device of each name on CUDA and on each OpenCL platform (identical devices build\n"
            "  alike). The program cache is not used, so every compiler runs and prints its warnings. For each\n"
            "  it prints 'ok (N kernels: name(kinds), ...)', or 'FAILED' with the first diagnostic as FILE:LINE,\n"
            "  then the compiler's whole output when there was any. kinds are the launch argument of each\n"
            "  parameter: b buffer (GW_GLOBAL), s gpuws_arg_local (GW_LOCAL), i u l L f d for gw_i32, gw_u32,\n"
            "  gw_i64, gw_u64, gw_f32, gw_f64. A backend that is not available is listed with the reason.\n"
            "  -D NAME[=VALUE]  defined for the kernel, as gpuws_program_options.defines (VALUE 1 when omitted)\n"
            "  -I DIR           where #include \"NAME\" is looked for after FILE's directory; every header FILE\n"
            "                   and its headers include is read into gpuws_program_options.headers under NAME\n"
            "                   (#include <" GPUWS__EDITOR_HEADER "> is left to the library, which drops it)\n"
            "  --time           also times, on each device, FILE from source to launchable kernels (on a context\n"
            "                   already made: a backend's start-up is not counted) and from the program cache\n"
            "                   (GPUWS_CACHE_DIR; its first use stores the build), median of 5 each\n"
            "  GPUWS_OPENCL_PLATFORM narrows the OpenCL platforms; GPUWS_CC names the CPU backend's compiler.\n"
            "  Exit status: 0 when every available backend built FILE, 1 when one failed, FILE or a header could\n"
            "  not be read, or no backend could build at all; 2 on bad usage.\n");
}

static void kernel_usage(FILE *f)
{
    fprintf(f, "usage: gpuws kernel check FILE [-D NAME[=VALUE]]... [-I DIR]... [--time]\n"
               "  (gpuws kernel check --help describes it)\n");
}

/* A usage error: the message and the usage on stderr, exit code 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpuws kernel check: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    kernel_usage(stderr);
    return 2;
}

/* ---- reading the file and its headers ------------------------------------------------------------------ */

/* The whole file, NUL-terminated (malloc'd); NULL with errno set when it cannot be read. */
static char *read_text(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL;
    if (S_ISDIR(sb.st_mode)) {
        errno = EISDIR;
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    for (size_t r; s && (r = fread(s + len, 1, cap - len - 1, f)) > 0;) {
        len += r;
        if (cap - len < 2) {
            char *t = realloc(s, cap *= 2);
            if (!t) free(s);
            s = t;
        }
    }
    const int e = !s ? ENOMEM : ferror(f) ? EIO : 0;
    fclose(f);
    if (e) {
        free(s);
        errno = e;
        return NULL;
    }
    s[len] = 0;
    return s;
}

typedef struct {
    const char *file;
    const char *dir; /* FILE's directory */
    const char *includes[MAX_LIST];
    int nincludes;
    const char *defines[MAX_LIST];
    int ndefines;
    gpuws_program_header headers[MAX_LIST];
    char *paths[MAX_LIST]; /* where each header was read from */
    int nheaders;
    bool timing; /* --time */
} check;

/* Reads header `name` from FILE's directory or the first -I directory that has it (an absolute name as it is).
 * Returns its text and sets *path; NULL with a message on stderr when there is none or it cannot be read. */
static char *read_header(const check *c, const char *name, const char *from, unsigned long line, char **path)
{
    const bool absolute = name[0] == '/';
    for (int i = -1; i < (absolute ? 0 : c->nincludes); i++) {
        const char *dir = absolute ? "" : i < 0 ? c->dir : c->includes[i];
        if (!(*path = malloc(strlen(dir) + strlen(name) + 2))) break;
        sprintf(*path, "%s%s%s", dir, absolute ? "" : "/", name);
        char *text = read_text(*path);
        if (text) return text;
        if (errno != ENOENT && errno != ENOTDIR) {
            fprintf(stderr, "gpuws kernel check: %s:%lu: #include \"%s\": cannot read %s: %s\n", from, line, name,
                    *path, strerror(errno));
            free(*path);
            return NULL;
        }
        free(*path);
    }
    *path = NULL;
    fprintf(stderr, "gpuws kernel check: %s:%lu: #include \"%s\": no such file", from, line, name);
    if (!absolute) {
        fprintf(stderr, " in %s (FILE's directory)", c->dir);
        for (int i = 0; i < c->nincludes; i++) fprintf(stderr, ", %s", c->includes[i]);
        if (!c->nincludes) fprintf(stderr, "; -I DIR adds a directory");
    }
    fprintf(stderr, "\n");
    return NULL;
}

/* Reads every header that text (of file `from`) includes and that is not read yet, then the headers those
 * include. 0, or 1 when one cannot be read. */
static int read_headers(check *c, const char *text, const char *from)
{
    unsigned long line = 1;
    for (const char *p = text; *p; line++) {
        const char *e = strchr(p, '\n');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *name;
        size_t nlen;
        /* the editors' header is dropped by the library: never read from disk */
        bool known = !gpuws__include_name(p, len, &name, &nlen) ||
                     (nlen == strlen(GPUWS__EDITOR_HEADER) && strncmp(name, GPUWS__EDITOR_HEADER, nlen) == 0);
        for (int i = 0; i < c->nheaders && !known; i++)
            known = strlen(c->headers[i].name) == nlen && strncmp(c->headers[i].name, name, nlen) == 0;
        if (!known) {
            if (c->nheaders == MAX_LIST) {
                fprintf(stderr, "gpuws kernel check: %s:%lu: more than %d headers\n", from, line, MAX_LIST);
                return 1;
            }
            char *hname = strndup(name, nlen), *path = NULL;
            char *src = hname ? read_header(c, hname, from, line, &path) : NULL;
            if (!src) {
                free(hname);
                return 1;
            }
            c->headers[c->nheaders] = (gpuws_program_header){ hname, src };
            c->paths[c->nheaders++] = path;
            if (read_headers(c, src, path)) return 1;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* ---- building ------------------------------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of `runs` builds of the file on ctx with `flags`, each to all its kernels; -1 when one fails. */
static double time_builds(gpuws_context *ctx, const check *c, const char *source, unsigned flags, int runs)
{
    double t[8];
    for (int r = 0; r < runs; r++) {
        gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
        o.file_name = c->file;
        o.defines = c->defines;
        o.num_defines = (size_t)c->ndefines;
        o.headers = c->headers;
        o.num_headers = (size_t)c->nheaders;
        o.flags = flags;
        gpuws_program *p = NULL;
        const double t0 = now_ms();
        gpuws_status st = gpuws_program_create(ctx, source, &o, &p);
        for (size_t i = 0; !st && i < p->ndecls; i++) {
            gpuws_kernel *k;
            st = gpuws_program_get_kernel(p, p->decls[i].name, &k);
        }
        t[r] = now_ms() - t0;
        gpuws_program_destroy(p);
        if (st) return -1;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    return t[runs / 2];
}

static void print_times(gpuws_context *ctx, const check *c, const char *source)
{
    const double from_source = time_builds(ctx, c, source, GPUWS_PROGRAM_NO_CACHE, 5);
    const char *dir = getenv("GPUWS_CACHE_DIR");
    const bool cache_off = dir && !strcmp(dir, "off");
    const double first = cache_off ? -1 : time_builds(ctx, c, source, 0, 1); /* stores the build (or finds it) */
    const double cached = first < 0 ? -1 : time_builds(ctx, c, source, 0, 5);
    printf("        time to launchable kernels: %.1f ms from source, ", from_source);
    if (cache_off) printf("cache off (GPUWS_CACHE_DIR=off)\n");
    else if (cached < 0) printf("from the cache: failed (%s)\n", gpuws_last_error());
    else printf("%.2f ms from the cache\n", cached);
}

/* Builds the file on one device and prints one line (and the compiler's output under it); returns 1 when it was
 * built, 0 when it failed, -1 when the backend cannot build programs here. */
static int check_device(const check *c, const char *source, const char *backend, size_t index, const char *platform,
                        const gpuws_device_info *d)
{
    gpuws_context_options co = GPUWS_CONTEXT_OPTIONS_INIT;
    co.backend = backend;
    co.device = (int)index;
    co.opencl_platform = platform;
    gpuws_context *ctx = NULL;
    gpuws_program *p = NULL;
    gpuws_status st = gpuws_context_create(&ctx, &co);
    if (!st) {
        gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
        o.file_name = c->file;
        o.defines = c->defines;
        o.num_defines = (size_t)c->ndefines;
        o.headers = c->headers;
        o.num_headers = (size_t)c->nheaders;
        o.flags = GPUWS_PROGRAM_NO_CACHE; /* a cached build would say nothing: the compiler must run */
        st = gpuws_program_create(ctx, source, &o, &p);
    }
    /* printed after the build: an OpenCL compiler may write to stderr while it runs */
    if (platform) printf("%-7s %s (%s): ", backend, d->name, d->platform);
    else printf("%-7s %s: ", backend, d->name);
    const char *log = p ? gpuws_program_log(p) : NULL;
    int rc = 1;
    if (st == GPUWS_ERR_BACKEND_UNAVAILABLE || st == GPUWS_ERR_UNSUPPORTED) {
        printf("unavailable: %s\n", gpuws_last_error());
        rc = -1;
    } else if (st) {
        char diag[1024] = "";
        if (log) gpuws__first_diagnostic(log, gpuws_program_source(p), diag, sizeof diag);
        const char *msg = diag[0] ? diag : gpuws_last_error();
        printf("FAILED: %.*s\n", (int)strcspn(msg, "\n"), msg);
        if (log && !strcmp(log, gpuws_last_error())) log = NULL; /* no compiler ran: the library read the source */
        rc = 0;
    } else {
        const size_t n = p->ndecls;
        bool missing = false;
        printf("ok (%zu kernel%s%s", n, n == 1 ? "" : "s", n ? ": " : "");
        for (size_t i = 0; i < n; i++) {
            gpuws_kernel *k = NULL;
            missing |= gpuws_program_get_kernel(p, p->decls[i].name, &k) != GPUWS_OK;
            printf("%s%s(%s)%s", i ? ", " : "", p->decls[i].name, p->decls[i].sig, k ? "" : " [not in this build]");
        }
        printf(")\n");
        if (!n)
            printf("        no GW_KERNEL definition: kernels must be written out (one made by a macro is not seen)\n");
        if (missing) printf("        [not in this build]: declared where this compiler does not see it (an #if)\n");
    }
    if (log && *log) {
        printf("        compiler output:\n%s", log);
        if (log[strlen(log) - 1] != '\n') printf("\n");
    }
    if (rc == 1 && c->timing) print_times(ctx, c, source);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
    return rc;
}

static int run_check(check *c)
{
    char *source = read_text(c->file);
    if (!source) {
        fprintf(stderr, "gpuws kernel check: cannot read %s: %s\n", c->file, strerror(errno));
        return 1;
    }
    if (!*source) {
        fprintf(stderr, "gpuws kernel check: %s is empty\n", c->file);
        free(source);
        return 1;
    }
    int rc = read_headers(c, source, c->file);
    const char *platform = getenv("GPUWS_OPENCL_PLATFORM");
    int built = 0, failed = 0;
    static const gpuws_backend_kind order[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };
    for (int b = 0; b < 3 && !rc; b++) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(order[b], &bi);
        const char *filter = order[b] != GPUWS_BACKEND_OPENCL ? NULL : platform ? platform : "";
        size_t n = 0;
        gpuws_status st = bi.available ? gpuws_device_count(order[b], filter, &n) : GPUWS_OK;
        if (!bi.available || st || n == 0) {
            const char *why = !bi.available ? bi.reason : st ? gpuws_last_error() : "no device";
            printf("%-7s unavailable: %s\n", bi.name, why);
            continue;
        }
        /* identical devices compile alike: one per platform and device name */
        gpuws_device_info seen[MAX_DEVICES];
        int nseen = 0;
        for (size_t i = 0; i < n && nseen < MAX_DEVICES; i++) {
            gpuws_device_info d;
            if (gpuws_device_get_info(order[b], filter, i, &d)) continue;
            bool dup = false;
            for (int j = 0; j < nseen && !dup; j++)
                dup = !strcmp(seen[j].platform, d.platform) && !strcmp(seen[j].name, d.name);
            if (dup) continue;
            seen[nseen++] = d;
            const int r = check_device(c, source, bi.name, i, filter, &d);
            built += r == 1;
            failed += r == 0;
        }
    }
    free(source);
    if (rc) return rc;
    if (failed) {
        printf("%s: FAILED on %d of %d device%s\n", c->file, failed, built + failed, built + failed == 1 ? "" : "s");
        return 1;
    }
    if (!built) {
        printf("%s: not checked: no backend here can build kernels\n", c->file);
        return 1;
    }
    printf("%s: ok on %d device%s\n", c->file, built, built == 1 ? "" : "s");
    return 0;
}

/* ---- options -------------------------------------------------------------------------------------------- */

static bool is_identifier(const char *s, size_t n)
{
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
    return true;
}

static int cmd_kernel(int argc, char **argv)
{
    if (argc < 2) return bad("needs a subcommand: check");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "check")) return bad("unknown subcommand '%s' (the one there is: check)", argv[1]);
    check c;
    memset(&c, 0, sizeof c);
    bool options_end = false;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (!options_end && (!strcmp(o, "--help") || !strcmp(o, "-h"))) {
            usage(stdout);
            return 0;
        }
        if (!options_end && !strcmp(o, "--")) {
            options_end = true;
        } else if (!options_end && !strcmp(o, "--time")) {
            if (c.timing) return bad("--time is given twice");
            c.timing = true;
        } else if (!options_end && (!strncmp(o, "-D", 2) || !strncmp(o, "-I", 2))) {
            /* "-D NAME" and "-DNAME" alike, as compilers take them */
            const char *v = o[2] ? o + 2 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return bad("%s needs a value", o);
            if (o[1] == 'D') {
                const size_t n = strcspn(v, "=");
                if (!n) return bad("-D '%s': the name is empty", v);
                if (!is_identifier(v, n)) return bad("-D '%s': '%.*s' is not an identifier", v, (int)n, v);
                if (strchr(v, '\n')) return bad("-D '%.*s': the value holds a newline", (int)n, v);
                for (int j = 0; j < c.ndefines; j++)
                    if (strcspn(c.defines[j], "=") == n && !strncmp(c.defines[j], v, n))
                        return bad("-D %.*s is given twice ('%s', '%s')", (int)n, v, c.defines[j], v);
                if (c.ndefines == MAX_LIST) return bad("more than %d -D options", MAX_LIST);
                c.defines[c.ndefines++] = v;
            } else {
                struct stat sb;
                if (!*v) return bad("-I needs a directory");
                if (stat(v, &sb) != 0 || !S_ISDIR(sb.st_mode)) return bad("-I '%s' is not a directory", v);
                for (int j = 0; j < c.nincludes; j++)
                    if (!strcmp(c.includes[j], v)) return bad("-I '%s' is given twice", v);
                if (c.nincludes == MAX_LIST) return bad("more than %d -I options", MAX_LIST);
                c.includes[c.nincludes++] = v;
            }
        } else if (!options_end && o[0] == '-' && o[1]) {
            return bad("unknown option '%s'", o);
        } else if (!c.file) {
            if (!*o) return bad("FILE is empty");
            c.file = o;
        } else {
            return bad("one FILE at a time: '%s' after '%s'", o, c.file);
        }
    }
    if (!c.file) return bad("needs a kernel FILE");
    const char *slash = strrchr(c.file, '/');
    char *dir = slash ? strndup(c.file, slash == c.file ? 1 : (size_t)(slash - c.file)) : strdup(".");
    if (!dir) return tool_fail("kernel check", GPUWS_ERR_OUT_OF_MEMORY);
    c.dir = dir;
    const int rc = run_check(&c);
    for (int i = 0; i < c.nheaders; i++) {
        free((char *)c.headers[i].name);
        free((char *)c.headers[i].source);
        free(c.paths[i]);
    }
    free(dir);
    return rc;
}

GPUWS_COMMAND("kernel", "check FILE: build a kernel file (the gpuws dialect) on every backend here", cmd_kernel)
