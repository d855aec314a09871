/* CPU backend: user programs. The generated C (backends/cpu/dialect_cpu.h, the user's source, the entry points
 * below) is compiled by the system C compiler into a shared object and loaded; blocks run in parallel on all
 * cores, a pool of threads per context taking blocks from a counter. A kernel without gw_barrier runs each block
 * as a loop over its work-items (the compiler inlines the kernel and can vectorise the loop); a kernel with
 * barriers runs each work-item of a block as a fiber (cpu_fiber.h) that switches at every barrier. */
#include "cpu_program.h"

#include "cpu_fiber.h"
#include "../../core/threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What the generated entry points take (keep in step with dialect_cpu.h). */
typedef struct gw__block {
    uint64_t grid[3], block[3], bid[3];
    void *const *args;
} gw__block;
typedef struct gw__runtime {
    void (*barrier)(void);
} gw__runtime;
typedef void (*block_fn)(const gw__block *b);
typedef void (*item_fn)(const gw__block *b, uint64_t x, uint64_t y, uint64_t z);

/* ---- the compiler --------------------------------------------------------------------------------------- */

#define MAX_CC_WORDS 16
static struct {
    pthread_once_t once;
    char *argv[MAX_CC_WORDS + 1]; /* GPUWS_CC split at spaces, or the compiler found on PATH */
    char words[1024];
    char identity[1400]; /* the compiler's resolved path, size and time: part of cache keys */
    char reason[512];    /* why there is none */
} cc = { .once = PTHREAD_ONCE_INIT };

static bool find_on_path(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, n, "%.*s/%s", (int)len, len ? p : ".", name);
        struct stat sb;
        if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && access(out, X_OK) == 0) return true;
        p += len + (p[len] == ':');
    }
    return false;
}

static void find_compiler(void)
{
    const char *env = gpuws__getenv("GPUWS_CC");
    size_t nw = 0;
    if (env) {
        gpuws__strlcpy(cc.words, env, sizeof cc.words);
        for (char *save = NULL, *w = strtok_r(cc.words, " \t", &save); w && nw < MAX_CC_WORDS;
             w = strtok_r(NULL, " \t", &save))
            cc.argv[nw++] = w;
    } else {
        static const char *const names[] = { "cc", "gcc", "clang" };
        char path[PATH_MAX];
        for (size_t i = 0; i < 3 && !nw; i++)
            if (find_on_path(names[i], path, sizeof path)) {
                gpuws__strlcpy(cc.words, names[i], sizeof cc.words);
                cc.argv[nw++] = cc.words;
            }
    }
    cc.argv[nw] = NULL;
    char path[PATH_MAX], real[PATH_MAX];
    if (!nw) {
        snprintf(cc.reason, sizeof cc.reason, "%s",
                 env ? "GPUWS_CC is empty"
                     : "no C compiler: none of cc, gcc, clang is on PATH (install one, or set GPUWS_CC)");
        return;
    }
    if (!find_on_path(cc.argv[0], path, sizeof path)) {
        snprintf(cc.reason, sizeof cc.reason, "no C compiler: '%s'%s is not an executable on PATH", cc.argv[0],
                 env ? " (from GPUWS_CC)" : "");
        cc.argv[0] = NULL;
        return;
    }
    struct stat sb;
    if (!realpath(path, real) || stat(real, &sb) != 0) gpuws__strlcpy(real, path, sizeof real);
    snprintf(cc.identity, sizeof cc.identity, "%s %lld %lld", real, (long long)sb.st_size, (long long)sb.st_mtime);
    for (size_t i = 1; i < nw; i++) {
        size_t l = strlen(cc.identity);
        snprintf(cc.identity + l, sizeof cc.identity - l, " %s", cc.argv[i]);
    }
}

/* The host CPU, since programs are built with -march=native: a binary for another CPU must not be loaded. */
static char cpu_identity[64];
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void read_cpu_identity(void)
{
    uint64_t h = GPUWS__FNV_SEED;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[4096];
        int seen = 0;
        while (seen < 3 && fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5) || !strncmp(line, "Features", 8)) {
                h = gpuws__fnv1a(line, strlen(line), h);
                seen++;
            }
        fclose(f);
    }
    snprintf(cpu_identity, sizeof cpu_identity, "%016llx", (unsigned long long)h);
}

/* ---- entry points --------------------------------------------------------------------------------------- */

static void unpack(const gpuws__kernel_decl *d, gpuws__strbuf *b)
{
    for (size_t i = 0; i < d->nparams; i++) {
        const gpuws__param *p = &d->params[i];
        if (p->kind == 'b' || p->kind == 's')
            gpuws__sb_printf(b, "    %s gw__p%zu = (%s)gw__b->args[%zu];\n", p->type, i, p->type, i);
        else gpuws__sb_printf(b, "    %s gw__p%zu = *(%s *)gw__b->args[%zu];\n", p->type, i, p->type, i);
    }
}

static void call(const gpuws__kernel_decl *d, gpuws__strbuf *b)
{
    gpuws__sb_printf(b, "%s(", d->name);
    for (size_t i = 0; i < d->nparams; i++) gpuws__sb_printf(b, "%sgw__p%zu", i ? ", " : "", i);
    gpuws__sb_puts(b, ");");
}

gpuws_status gpuws__cpu_program_text(const gpuws_program *p, gpuws__text_place where, gpuws__strbuf *b)
{
    if (where != GPUWS__TEXT_AFTER) return GPUWS_OK;
    for (size_t k = 0; k < p->ndecls; k++) {
        const gpuws__kernel_decl *d = &p->decls[k];
        /* a block as a loop over its work-items */
        gpuws__sb_printf(b,
                         "GW__EXPORT void gw__block_%s(const gw__block *gw__b);\n"
                         "GW__EXPORT void gw__block_%s(const gw__block *gw__b)\n{\n",
                         d->name, d->name);
        unpack(d, b);
        gpuws__sb_puts(
            b,
            "    for (int gw__d = 0; gw__d < 3; gw__d++) {\n"
            "        gw__it.bid[gw__d] = gw__b->bid[gw__d];\n"
            "        gw__it.bdim[gw__d] = gw__b->block[gw__d];\n"
            "        gw__it.gdim[gw__d] = gw__b->grid[gw__d];\n    }\n"
            "    for (gw_u64 gw__z = 0; gw__z < gw__b->block[2]; gw__z++)\n"
            "        for (gw_u64 gw__y = 0; gw__y < gw__b->block[1]; gw__y++)\n"
            "            for (gw_u64 gw__x = 0; gw__x < gw__b->block[0]; gw__x++) {\n"
            "                gw__it.tid[0] = gw__x, gw__it.tid[1] = gw__y, gw__it.tid[2] = gw__z;\n                ");
        call(d, b);
        gpuws__sb_puts(b, "\n            }\n}\n");
        /* one work-item (a fiber of a block with barriers) */
        gpuws__sb_printf(
            b,
            "GW__EXPORT void gw__item_%s(const gw__block *gw__b, gw_u64 gw__x, gw_u64 gw__y, gw_u64 gw__z);\n"
            "GW__EXPORT void gw__item_%s(const gw__block *gw__b, gw_u64 gw__x, gw_u64 gw__y, gw_u64 gw__z)\n{\n",
            d->name, d->name);
        unpack(d, b);
        gpuws__sb_puts(b, "    for (int gw__d = 0; gw__d < 3; gw__d++) {\n"
                          "        gw__it.bid[gw__d] = gw__b->bid[gw__d];\n"
                          "        gw__it.bdim[gw__d] = gw__b->block[gw__d];\n"
                          "        gw__it.gdim[gw__d] = gw__b->grid[gw__d];\n    }\n"
                          "    gw__it.tid[0] = gw__x, gw__it.tid[1] = gw__y, gw__it.tid[2] = gw__z;\n    ");
        call(d, b);
        gpuws__sb_puts(b, "\n}\n");
    }
    return GPUWS_OK;
}

/* ---- building ------------------------------------------------------------------------------------------- */

typedef struct {
    void *dl;
} cpu_module;

static void barrier_cb(void);
static const gw__runtime runtime = { barrier_cb };

static gpuws_status write_file(const char *path, const void *data, size_t n, const char *what)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return gpuws__error(GPUWS_ERR_IO, "writing %s %s: %s", what, path, strerror(errno));
    const char *c = data;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return gpuws__error(GPUWS_ERR_IO, "writing %s %s: %s", what, path, strerror(e));
        }
        c += w;
        n -= (size_t)w;
    }
    if (close(fd) != 0) return gpuws__error(GPUWS_ERR_IO, "writing %s %s: %s", what, path, strerror(errno));
    return GPUWS_OK;
}

/* The whole file, gpuws__malloc'd and NUL-terminated; NULL when it cannot be read. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    char *buf = NULL;
    if (fstat(fd, &sb) == 0 && sb.st_size >= 0 && (buf = gpuws__malloc((size_t)sb.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)sb.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        buf[got] = 0;
        if (len) *len = got;
    }
    close(fd);
    return buf;
}

/* A private directory for one build: removed (with what is in it) by remove_dir. */
static gpuws_status make_dir(char *dir, size_t n)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, n, "%s/gpuws-cc-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) return gpuws__error(GPUWS_ERR_IO, "making a build directory %s: %s", dir, strerror(errno));
    return GPUWS_OK;
}

static void remove_dir(const char *dir)
{
    static const char *const files[] = { "kernel.c", "kernel.so", "compiler.log", "cached.so" };
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static gpuws_status load(gpuws_program *p, const char *so)
{
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return gpuws__error(GPUWS_ERR_BUILD, "loading the compiled program %s: %s", p->file_name, dlerror());
    void (*init)(const gw__runtime *) = (void (*)(const gw__runtime *))dlsym(dl, "gw__init");
    cpu_module *m = init ? gpuws__calloc(1, sizeof *m) : NULL;
    if (!m) {
        dlclose(dl);
        return init ? gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a module")
                    : gpuws__error(GPUWS_ERR_BUILD, "the compiled program %s lacks gw__init", p->file_name);
    }
    init(&runtime);
    m->dl = dl;
    p->impl = m;
    return GPUWS_OK;
}

/* Runs the compiler on dir/kernel.c into dir/kernel.so; its output goes to dir/compiler.log. */
static gpuws_status compile(gpuws_program *p, const char *dir, bool *failed)
{
    char src[PATH_MAX], so[PATH_MAX], logp[PATH_MAX];
    snprintf(src, sizeof src, "%s/kernel.c", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    snprintf(logp, sizeof logp, "%s/compiler.log", dir);
    gpuws_status st = write_file(src, p->source, p->source_len, "the program's source to");
    if (st) return st;
    const char *argv[MAX_CC_WORDS + 24];
    size_t n = 0;
    for (size_t i = 0; cc.argv[i]; i++) argv[n++] = cc.argv[i];
    const bool debug = p->flags & GPUWS_PROGRAM_DEBUG;
    argv[n++] = "-std=gnu11";
    argv[n++] = "-fPIC";
    argv[n++] = "-shared";
    argv[n++] = debug ? "-O0" : "-O3";
    if (debug) argv[n++] = "-g";
    argv[n++] = "-march=native";
    argv[n++] = "-fno-math-errno";
    argv[n++] = "-ffp-contract=fast";
    argv[n++] = "-fvisibility=hidden";
    /* a function no backend has (rsqrt, a typo) is an error here too, not a symbol missing at load time */
    argv[n++] = "-Werror=implicit-function-declaration";
    if (p->flags & GPUWS_PROGRAM_FAST_MATH) argv[n++] = "-ffast-math";
    argv[n++] = "-o";
    argv[n++] = so;
    argv[n++] = src;
    argv[n++] = "-lm";
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e)
        return gpuws__error(GPUWS_ERR_BACKEND_UNAVAILABLE,
                            "cpu not available for programs: running the C compiler '%s': %s", argv[0], strerror(e));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return gpuws__error(GPUWS_ERR_IO, "waiting for the C compiler: %s", strerror(errno));
    gpuws__free(p->log);
    p->log = read_file(logp, NULL);
    *failed = !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    if (*failed)
        return gpuws__error(GPUWS_ERR_BUILD, "the C compiler (%s) %s %d", argv[0],
                            WIFEXITED(ws) ? "exited with" : "was killed by signal",
                            WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    return GPUWS_OK;
}

gpuws_status gpuws__cpu_program_build(gpuws_program *p)
{
    pthread_once(&cc.once, find_compiler);
    pthread_once(&cpu_once, read_cpu_identity);
    if (!cc.argv[0])
        return gpuws__error(GPUWS_ERR_BACKEND_UNAVAILABLE, "cpu not available for programs: %s", cc.reason);
    gpuws__cache cache;
    gpuws__cache_init(&cache);
    const bool use_cache = cache.enabled && !(p->flags & GPUWS_PROGRAM_NO_CACHE);
    gpuws__strbuf key = { 0 };
    gpuws__sb_printf(&key, "backend=cpu\ncompiler=%s\ncpu=%s\nflags=%u\nsource=%zu:%016llx\n", cc.identity,
                     cpu_identity, p->flags & (GPUWS_PROGRAM_DEBUG | GPUWS_PROGRAM_FAST_MATH), p->source_len,
                     (unsigned long long)gpuws__fnv1a(p->source, p->source_len, GPUWS__FNV_SEED));
    char *k = gpuws__sb_take(&key);
    if (!k) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a cache key");
    char dir[PATH_MAX];
    gpuws_status st = make_dir(dir, sizeof dir);
    if (st) {
        gpuws__free(k);
        return st;
    }
    char path[PATH_MAX];
    unsigned char *bin = NULL;
    size_t len = 0;
    if (use_cache && (st = gpuws__cache_load(&cache, k, ".so", &bin, &len))) {
        remove_dir(dir);
        gpuws__free(k);
        return st;
    }
    if (bin) {
        /* dlopen needs a file: a private copy, so the entry itself is never mapped */
        snprintf(path, sizeof path, "%s/cached.so", dir);
        st = write_file(path, bin, len, "a cached program to");
        gpuws__free(bin);
        if (!st && !(st = load(p, path))) {
            remove_dir(dir);
            gpuws__free(k);
            return p->log || (p->log = gpuws__strdup("")) ? GPUWS_OK
                                                          : gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a log");
        }
        gpuws__log(GPUWS__LOG_INFO, "cached build of %s could not be loaded (%s); compiling it again", p->file_name,
                   gpuws_last_error());
    }
    bool failed = false;
    st = compile(p, dir, &failed);
    if (!st) {
        snprintf(path, sizeof path, "%s/kernel.so", dir);
        if (use_cache && (bin = (unsigned char *)read_file(path, &len))) {
            gpuws__cache_store(&cache, k, ".so", bin, len);
            gpuws__free(bin);
        }
        st = load(p, path);
    }
    remove_dir(dir);
    gpuws__free(k);
    return st;
}

void gpuws__cpu_program_destroy(gpuws_program *p)
{
    cpu_module *m = p->impl;
    if (!m) return;
    dlclose(m->dl);
    gpuws__free(m);
}

/* ---- kernels -------------------------------------------------------------------------------------------- */

typedef struct {
    block_fn block;
    item_fn item;
    bool barrier;
} cpu_kernel;

gpuws_status gpuws__cpu_program_kernel(gpuws_program *p, size_t index, gpuws_kernel *k)
{
    cpu_module *m = p->impl;
    char name[300];
    const char *kn = p->decls[index].name;
    snprintf(name, sizeof name, "gw__block_%s", kn);
    block_fn b = (block_fn)dlsym(m->dl, name);
    snprintf(name, sizeof name, "gw__item_%s", kn);
    item_fn it = (item_fn)dlsym(m->dl, name);
    if (!b || !it)
        return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND,
                            "program '%s' declares kernel '%s' but its build has none (is it "
                            "inside an #if?)",
                            p->file_name, kn);
    cpu_kernel *ck = gpuws__calloc(1, sizeof *ck);
    if (!ck) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a kernel");
    ck->block = b;
    ck->item = it;
    ck->barrier = p->decls[index].barrier;
    k->impl = ck;
    k->info.max_block_size = k->ctx->info.max_block_size;
    k->info.static_shared_bytes = 0;
    return GPUWS_OK;
}

void gpuws__cpu_kernel_destroy(gpuws_kernel *k) { gpuws__free(k->impl); }

/* ---- running: a pool of threads per context ------------------------------------------------------------- */

typedef struct job {
    const cpu_kernel *k;
    uint64_t grid[3], block[3], nblocks;
    uint64_t chunk; /* blocks a thread takes at a time: one atomic per block would cost more than a small block */
    _Alignas(64) atomic_ullong next;
    void *args[GPUWS__SIG_MAX];
    size_t nargs;
    size_t local_off[GPUWS__SIG_MAX]; /* GW_LOCAL arguments: offset into the worker's area, or SIZE_MAX */
    size_t local_total;
    atomic_int stray_barrier; /* gw_barrier reached in a kernel run as a loop */
    atomic_int no_memory;
} job;

typedef struct item_arg {
    const cpu_kernel *k;
    const gw__block *b;
    uint64_t x, y, z;
} item_arg;

typedef struct worker {
    struct cpu_pool *pool;
    pthread_t thread;
    cpu_fibers fibers;
    void *local; /* GW_LOCAL memory of the block being run */
    size_t local_cap;
    item_arg *items; /* one per work-item, for fibers */
    void **item_ptrs;
    size_t items_cap;
    bool in_fibers;
    job *job;
} worker;

/* A launch publishes job, then advances gen; every worker runs each launch's blocks with it (busy counts those not
 * done). A worker watches gen for a while before it sleeps on go (gpuws__spin: launches in a loop come faster than
 * a sleeping thread wakes), and the launching thread watches busy as long before it sleeps on done; sleepers are
 * woken only where there are any. */
struct cpu_pool {
    pthread_mutex_t m;
    pthread_cond_t go, done;
    pthread_mutex_t launch; /* one launch at a time per context */
    size_t n;               /* workers, the launching thread's own (w[0]) included */
    worker *w;
    atomic_ulong gen;
    atomic_size_t busy;
    atomic_bool quit;
    size_t sleepers;      /* workers asleep on go (under m) */
    bool launcher_asleep; /* the launching thread asleep on done (under m) */
    job *job;
};

static _Thread_local worker *current;

static void barrier_cb(void)
{
    worker *w = current;
    if (!w || !w->in_fibers) {
        if (w) atomic_store(&w->job->stray_barrier, 1);
        return;
    }
    cpu_fibers_yield(&w->fibers);
}

static void run_item(void *arg)
{
    const item_arg *a = arg;
    a->k->item(a->b, a->x, a->y, a->z);
}

static bool worker_ready(worker *w, const job *j, uint64_t threads)
{
    if (j->local_total > w->local_cap) {
        gpuws__free(w->local);
        w->local_cap = 0;
        if (!(w->local = gpuws__aligned_alloc(64, (j->local_total + 63) & ~(size_t)63))) return false;
        w->local_cap = j->local_total;
    }
    if (j->k->barrier && threads > w->items_cap) {
        gpuws__free(w->items);
        gpuws__free(w->item_ptrs);
        w->items_cap = 0;
        w->items = gpuws__calloc(threads, sizeof *w->items);
        w->item_ptrs = gpuws__calloc(threads, sizeof *w->item_ptrs);
        if (!w->items || !w->item_ptrs) return false;
        w->items_cap = threads;
    }
    return true;
}

static void run_blocks(worker *w, job *j)
{
    const uint64_t threads = j->block[0] * j->block[1] * j->block[2];
    if (!worker_ready(w, j, threads)) {
        atomic_store(&j->no_memory, 1);
        atomic_store(&j->next, j->nblocks); /* the others stop too */
        return;
    }
    void *args[GPUWS__SIG_MAX];
    for (size_t i = 0; i < j->nargs; i++)
        args[i] = j->local_off[i] == SIZE_MAX ? j->args[i] : (char *)w->local + j->local_off[i];
    gw__block b;
    memcpy(b.grid, j->grid, sizeof b.grid);
    memcpy(b.block, j->block, sizeof b.block);
    b.args = args;
    worker *saved = current;
    current = w;
    w->job = j;
    for (uint64_t id = 0, end = 0;; id++) {
        if (id == end) {
            id = atomic_fetch_add(&j->next, j->chunk);
            if (id >= j->nblocks) break;
            end = id + j->chunk < j->nblocks ? id + j->chunk : j->nblocks;
        }
        b.bid[0] = id % j->grid[0];
        b.bid[1] = (id / j->grid[0]) % j->grid[1];
        b.bid[2] = id / (j->grid[0] * j->grid[1]);
        if (!j->k->barrier) {
            j->k->block(&b);
            continue;
        }
        size_t t = 0;
        for (uint64_t z = 0; z < j->block[2]; z++)
            for (uint64_t y = 0; y < j->block[1]; y++)
                for (uint64_t x = 0; x < j->block[0]; x++, t++) {
                    w->items[t] = (item_arg){ j->k, &b, x, y, z };
                    w->item_ptrs[t] = &w->items[t];
                }
        w->in_fibers = true;
        bool ok = cpu_fibers_run(&w->fibers, (size_t)threads, run_item, w->item_ptrs);
        w->in_fibers = false;
        if (!ok) {
            atomic_store(&j->no_memory, 1);
            atomic_store(&j->next, j->nblocks);
            break;
        }
    }
    current = saved;
}

typedef struct {
    const struct cpu_pool *pool;
    unsigned long seen;
} pool_watch;

static bool pool_moved(const void *arg)
{
    const pool_watch *p = arg;
    return atomic_load(&p->pool->quit) || atomic_load(&p->pool->gen) != p->seen;
}

static bool pool_done(const void *arg)
{
    const struct cpu_pool *pool = arg;
    return atomic_load(&pool->busy) == 0;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct cpu_pool *pool = w->pool;
    unsigned long seen = 0;
    for (;;) {
        if (!gpuws__spin(pool_moved, &(pool_watch){ pool, seen })) {
            /* the launch advances gen (destroy sets quit) before it looks for sleepers under m: no wake is lost */
            pthread_mutex_lock(&pool->m);
            pool->sleepers++;
            while (!atomic_load(&pool->quit) && atomic_load(&pool->gen) == seen) pthread_cond_wait(&pool->go, &pool->m);
            pool->sleepers--;
            pthread_mutex_unlock(&pool->m);
        }
        if (atomic_load(&pool->quit)) break;
        seen = atomic_load(&pool->gen);
        run_blocks(w, pool->job);
        if (atomic_fetch_sub(&pool->busy, 1) == 1) { /* the last: the launching thread may be asleep */
            pthread_mutex_lock(&pool->m);
            if (pool->launcher_asleep) pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->m);
        }
    }
    return NULL;
}

static void free_worker(worker *w)
{
    cpu_fibers_free(&w->fibers);
    gpuws__free(w->local);
    gpuws__free(w->items);
    gpuws__free(w->item_ptrs);
}

void gpuws__cpu_pool_destroy(struct cpu_pool *pool)
{
    if (!pool) return;
    atomic_store(&pool->quit, true);
    pthread_mutex_lock(&pool->m);
    pthread_cond_broadcast(&pool->go);
    pthread_mutex_unlock(&pool->m);
    for (size_t i = 1; i < pool->n; i++) pthread_join(pool->w[i].thread, NULL);
    for (size_t i = 0; i < pool->n; i++) free_worker(&pool->w[i]);
    pthread_mutex_destroy(&pool->m);
    pthread_mutex_destroy(&pool->launch);
    pthread_cond_destroy(&pool->go);
    pthread_cond_destroy(&pool->done);
    gpuws__free(pool->w);
    gpuws__free(pool);
}

static gpuws_status pool_create(size_t nthreads, struct cpu_pool **out)
{
    struct cpu_pool *pool = gpuws__calloc(1, sizeof *pool);
    worker *w = gpuws__calloc(nthreads, sizeof *w);
    if (!pool || !w) {
        gpuws__free(pool);
        gpuws__free(w);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a pool of %zu threads", nthreads);
    }
    pthread_mutex_init(&pool->m, NULL);
    pthread_mutex_init(&pool->launch, NULL);
    pthread_cond_init(&pool->go, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->gen, 0);
    atomic_init(&pool->busy, 0);
    atomic_init(&pool->quit, false);
    pool->w = w;
    pool->n = 1;
    w[0].pool = pool;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    for (size_t i = 1; i < nthreads; i++) {
        w[i].pool = pool;
        if (pthread_create(&w[i].thread, &attr, worker_main, &w[i]) != 0) break; /* fewer threads: still correct */
        pool->n++;
    }
    pthread_attr_destroy(&attr);
    *out = pool;
    return GPUWS_OK;
}

gpuws_status gpuws__cpu_launch(struct cpu_pool **poolp, pthread_mutex_t *pool_lock, gpuws_kernel *k,
                               const gpuws_launch_config *cfg, const gpuws_arg *args, size_t nargs)
{
    pthread_mutex_lock(pool_lock);
    gpuws_status st = GPUWS_OK;
    if (!*poolp) st = pool_create(k->ctx->info.compute_units, poolp);
    struct cpu_pool *pool = *poolp;
    pthread_mutex_unlock(pool_lock);
    if (st) return st;

    job j;
    memset(&j, 0, sizeof j);
    j.k = k->impl;
    j.nblocks = 1;
    for (int d = 0; d < 3; d++) {
        j.grid[d] = cfg->grid[d];
        j.block[d] = cfg->block[d];
        j.nblocks *= cfg->grid[d];
    }
    j.nargs = nargs;
    for (size_t i = 0; i < nargs; i++) {
        j.local_off[i] = SIZE_MAX;
        switch (args[i].kind) {
        case GPUWS_ARG_BUFFER: j.args[i] = args[i].v.buffer->impl; break;
        case GPUWS_ARG_LOCAL:
            j.local_off[i] = j.local_total;
            j.local_total += (args[i].v.local_bytes + 15) & ~(size_t)15;
            break;
        default: j.args[i] = (void *)&args[i].v; break;
        }
    }
    atomic_init(&j.next, 0);
    pthread_mutex_lock(&pool->launch);
    /* about 16 chunks per thread, so a slow block delays little; a block with barriers is long enough alone */
    j.chunk = j.k->barrier ? 1 : j.nblocks / (pool->n * 16);
    if (j.chunk < 1) j.chunk = 1;
    const bool alone = j.nblocks == 1 || pool->n == 1;
    if (!alone) { /* every worker is done with the last launch: it waited for busy to reach 0 */
        pool->job = &j;
        atomic_store(&pool->busy, pool->n - 1);
        atomic_fetch_add(&pool->gen, 1);
        pthread_mutex_lock(&pool->m);
        if (pool->sleepers) pthread_cond_broadcast(&pool->go);
        pthread_mutex_unlock(&pool->m);
    }
    run_blocks(&pool->w[0], &j);
    if (!alone && !gpuws__spin(pool_done, pool)) {
        pthread_mutex_lock(&pool->m);
        pool->launcher_asleep = true;
        while (atomic_load(&pool->busy)) pthread_cond_wait(&pool->done, &pool->m);
        pool->launcher_asleep = false;
        pthread_mutex_unlock(&pool->m);
    }
    pool->job = NULL;
    pthread_mutex_unlock(&pool->launch);
    if (atomic_load(&j.no_memory))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "kernel '%s': no memory for a block of %llu work-items (fiber stacks or "
                            "GW_LOCAL memory of %zu bytes); some blocks did not run",
                            k->name, (unsigned long long)(j.block[0] * j.block[1] * j.block[2]), j.local_total);
    if (atomic_load(&j.stray_barrier))
        return gpuws__error(GPUWS_ERR_DEVICE,
                            "kernel '%s' reached gw_barrier but was run without barriers (is gw_barrier "
                            "hidden in a macro of a header? name it in the kernel's body)",
                            k->name);
    return GPUWS_OK;
}
