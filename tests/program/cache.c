/* The on-disk cache of compiled programs (GPUWS_CACHE_DIR; each test has a directory of its own): a build leaves one
 * entry that the next build of the same source loads; a corrupt, truncated or planted entry, an unwritable or shared
 * directory, or GPUWS_PROGRAM_NO_CACHE never give a wrong or failed build; processes building at once both succeed.
 * Whether a build compiled or was loaded is seen in its log: test_probe's source has a #warning, which a compiler
 * reports and a load from the cache (no compiler run) does not. */
#include "../test_program.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The entries of the directory (files of a store in progress excluded); the path of the last one seen in path. */
static int entries_in(const char *dir, char *path, size_t n)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".tmp.")) continue;
        if (path) snprintf(path, n, "%s/%s", dir, e->d_name);
        count++;
    }
    closedir(d);
    return count;
}

static int entries(char *path, size_t n) { return entries_in(test_cache_dir(), path, n); }

static ino_t inode(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s: %s", path, strerror(errno));
    return sb.st_ino;
}

BACKEND_TEST(program, a_build_leaves_one_entry_that_the_next_build_loads)
{
    gpuws_context *ctx = test_open(*kind);
    char path[4096];
    cr_assert_eq(entries(NULL, 0), 0);
    cr_assert(test_probe(ctx, 0), "the first build compiles");
    cr_assert_eq(entries(path, sizeof path), 1, "and leaves one entry in %s", test_cache_dir());
    const ino_t ino = inode(path);
    cr_assert_not(test_probe(ctx, 0), "the second build loads it");
    cr_assert_eq(entries(NULL, 0), 1);
    cr_assert_eq(inode(path), ino, "a load does not rewrite the entry");
    gpuws_context_destroy(ctx);
    /* a new context (another process would see the same) loads it too */
    ctx = test_open(*kind);
    cr_assert_not(test_probe(ctx, 0));
    gpuws_context_destroy(ctx);
}

/* Damages the only entry (made by this build, or left good by the call before), then: the build compiles, runs
 * right, and stores a good entry in its place. */
static void damaged_entry_is_rebuilt(gpuws_backend_kind kind, void (*damage)(const char *path))
{
    gpuws_context *ctx = test_open(kind);
    char path[4096];
    test_probe(ctx, 0);
    cr_assert_eq(entries(path, sizeof path), 1);
    damage(path);
    cr_assert(test_probe(ctx, 0), "a damaged entry is not used: the program is compiled");
    cr_assert_eq(entries(NULL, 0), 1);
    cr_assert_not(test_probe(ctx, 0), "the entry stored in its place is good");
    gpuws_context_destroy(ctx);
}

static void overwrite_middle(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    static const char junk[] = "garbage garbage garbage";
    cr_assert_eq(pwrite(fd, junk, sizeof junk, sb.st_size / 2), (ssize_t)sizeof junk);
    close(fd);
}

static void overwrite_start(const char *path)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, "XXXX", 4, 0), 4);
    close(fd);
}

static void overwrite_last_byte(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    unsigned char c;
    cr_assert_eq(pread(fd, &c, 1, sb.st_size - 1), 1);
    c ^= 0x5a;
    cr_assert_eq(pwrite(fd, &c, 1, sb.st_size - 1), 1);
    close(fd);
}

static void truncate_half(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(truncate(path, sb.st_size / 2), 0);
}

static void truncate_to_5(const char *path) { cr_assert_eq(truncate(path, 5), 0); }
static void truncate_to_0(const char *path) { cr_assert_eq(truncate(path, 0), 0); }

BACKEND_TEST(program, a_corrupt_entry_is_compiled_again)
{
    damaged_entry_is_rebuilt(*kind, overwrite_middle);
    damaged_entry_is_rebuilt(*kind, overwrite_start);
    damaged_entry_is_rebuilt(*kind, overwrite_last_byte);
}

BACKEND_TEST(program, a_truncated_entry_is_compiled_again)
{
    damaged_entry_is_rebuilt(*kind, truncate_half);
    damaged_entry_is_rebuilt(*kind, truncate_to_5);
    damaged_entry_is_rebuilt(*kind, truncate_to_0);
}

BACKEND_TEST(program, an_unwritable_cache_directory_only_disables_caching)
{
    gpuws_context *ctx = test_open(*kind);
    const char *dir = test_cache_dir();
    /* read-only: the build compiles and runs; it cannot store (unless root, whom modes do not stop) */
    cr_assert_eq(chmod(dir, 0500), 0);
    cr_assert(test_probe(ctx, 0));
    if (geteuid() != 0) cr_assert_eq(entries(NULL, 0), 0);
    /* an entry made while it was writable is still loaded from the read-only directory */
    cr_assert_eq(chmod(dir, 0700), 0);
    test_probe(ctx, 0);
    cr_assert_eq(chmod(dir, 0500), 0);
    cr_assert_not(test_probe(ctx, 0), "entries are read from a read-only directory");
    cr_assert_eq(chmod(dir, 0700), 0);
    gpuws_context_destroy(ctx);
    /* a directory that cannot be made, even by root: under a regular file */
    char file[4096], below[4200];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(below, sizeof below, "%s/cache", file);
    setenv("GPUWS_CACHE_DIR", below, 1);
    ctx = test_open(*kind);
    cr_assert(test_probe(ctx, 0));
    cr_assert(test_probe(ctx, 0), "nothing could be stored, so the build compiles again");
    gpuws_context_destroy(ctx);
}

BACKEND_TEST(program, GPUWS_PROGRAM_NO_CACHE_neither_reads_nor_writes_the_cache)
{
    gpuws_context *ctx = test_open(*kind);
    cr_assert(test_probe(ctx, GPUWS_PROGRAM_NO_CACHE));
    cr_assert_eq(entries(NULL, 0), 0, "nothing written");
    cr_assert(test_probe(ctx, 0));
    cr_assert_eq(entries(NULL, 0), 1);
    cr_assert(test_probe(ctx, GPUWS_PROGRAM_NO_CACHE), "the entry is not read");
    gpuws_context_destroy(ctx);
}

/* Anyone could plant code in a directory others may write: such a cache is neither read nor written. */
BACKEND_TEST(program, a_cache_directory_others_may_write_is_not_used)
{
    const char *dir = test_cache_dir();
    gpuws_context *ctx = test_open(*kind);
    char path[4096];
    cr_assert(test_probe(ctx, 0));
    cr_assert_eq(entries(path, sizeof path), 1);
    const ino_t ino = inode(path);
    gpuws_context_destroy(ctx);
    cr_assert_eq(chmod(dir, 0777), 0);
    ctx = test_open(*kind); /* backends may read GPUWS_CACHE_DIR when a context opens */
    cr_assert(test_probe(ctx, 0), "the entry is not loaded: the program is compiled");
    cr_assert_eq(entries(NULL, 0), 1, "and nothing is stored");
    cr_assert_eq(inode(path), ino, "the entry is not replaced");
    gpuws_context_destroy(ctx);
    /* the same for an entry others may write, in a private directory */
    cr_assert_eq(chmod(dir, 0700), 0);
    cr_assert_eq(chmod(path, 0666), 0);
    ctx = test_open(*kind);
    cr_assert(test_probe(ctx, 0), "an entry others may write is not loaded");
    gpuws_context_destroy(ctx);
    /* an empty shared directory gets no entry */
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(chmod(dir, 0777), 0);
    ctx = test_open(*kind);
    cr_assert(test_probe(ctx, 0));
    cr_assert_eq(entries(NULL, 0), 0, "nothing is stored in a shared directory");
    gpuws_context_destroy(ctx);
    cr_assert_eq(chmod(dir, 0700), 0);
}

BACKEND_TEST(program, a_fifo_in_place_of_an_entry_does_not_block_the_build)
{
    gpuws_context *ctx = test_open(*kind);
    char path[4096];
    cr_assert(test_probe(ctx, 0));
    cr_assert_eq(entries(path, sizeof path), 1);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert(test_probe(ctx, 0), "the FIFO is not read: the program is compiled"); /* the suite's timeout: no hang */
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "and the FIFO is left alone");
    gpuws_context_destroy(ctx);
}

/* A child's whole life: open the backend, wait for the start signal, build and run the probe. 0: correct; 77: the
 * backend cannot open; anything else: failed. No Criterion assert may run in a child. */
static int child_builds(gpuws_backend_kind kind, int start_fd)
{
    gpuws_context_options o = GPUWS_CONTEXT_OPTIONS_INIT;
    o.backend = test_backend_name(kind);
    gpuws_context *ctx;
    char go;
    if (read(start_fd, &go, 1) != 1) return 3;
    if (gpuws_context_create(&ctx, &o)) return 77;
    gpuws_program *p = NULL;
    gpuws_kernel *k;
    gpuws_buffer *out = NULL;
    enum { N = 1000 };
    uint32_t h[N];
    int rc = 0;
    gpuws_arg args[3] = { gpuws_arg_u64(N), gpuws_arg_u32(11), gpuws_arg_buffer(NULL) };
    gpuws_launch_config cfg = { { 8, 1, 1 }, { 128, 1, 1 } };
    if (gpuws_program_create(ctx, test_probe_source, NULL, &p) || gpuws_program_get_kernel(p, "probe", &k) ||
        gpuws_buffer_create(ctx, sizeof h, &out) ||
        (args[2] = gpuws_arg_buffer(out), gpuws_launch(NULL, k, &cfg, args, 3)) ||
        gpuws_buffer_read(out, 0, h, sizeof h)) {
        fprintf(stderr, "child %d: %s\n", (int)getpid(), gpuws_last_error());
        rc = 1;
    }
    for (uint32_t i = 0; !rc && i < N; i++)
        if (h[i] != 11u + 3u * i) rc = 2;
    gpuws_buffer_destroy(out);
    gpuws_program_destroy(p);
    gpuws_context_destroy(ctx);
    return rc;
}

BACKEND_TEST(program, two_processes_building_the_same_program_at_once_both_succeed)
{
    /* no context in this process before the fork: a driver's threads do not survive one */
    enum { KIDS = 2 };
    int start[2];
    cr_assert_eq(pipe(start), 0);
    pid_t kids[KIDS];
    for (int i = 0; i < KIDS; i++) {
        kids[i] = fork();
        cr_assert_geq(kids[i], 0);
        if (kids[i] == 0) {
            close(start[1]);
            _exit(child_builds(*kind, start[0]));
        }
    }
    close(start[0]);
    cr_assert_eq(write(start[1], "gg", KIDS), KIDS, "both start together");
    close(start[1]);
    int codes[KIDS];
    for (int i = 0; i < KIDS; i++) {
        int ws;
        cr_assert_eq(waitpid(kids[i], &ws, 0), kids[i]);
        codes[i] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    }
    gpuws_context *ctx = test_open(*kind); /* skips or fails here when the children could not open the backend */
    for (int i = 0; i < KIDS; i++) cr_assert_eq(codes[i], 0, "child %d exited with %d", i, codes[i]);
    cr_assert_eq(entries(NULL, 0), 1, "they left one entry");
    cr_assert_not(test_probe(ctx, 0), "a whole one: it loads");
    gpuws_context_destroy(ctx);
}

/* The CPU backend compiles with the system C compiler (cc, or GPUWS_CC); without one, programs are unavailable
 * and say why, and the rest of the backend works. GPUWS_CC is read at a process's first build: each test runs in
 * a process of its own. */
Test(program, without_a_c_compiler_cpu_programs_are_unavailable_with_the_reason)
{
    setenv("GPUWS_CC", "/nonexistent/cc", 1);
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CPU);
    gpuws_program *p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_BACKEND_UNAVAILABLE, gpuws_program_create(ctx, test_probe_source, NULL, &p));
    cr_assert_null(p, "no program, not a failed one: the source is not at fault");
    cr_assert(strstr(gpuws_last_error(), "/nonexistent/cc"), "the reason names the compiler: %s", gpuws_last_error());
    gpuws_kernel *k = NOT_SET;
    TEST_FAILS(GPUWS_ERR_BACKEND_UNAVAILABLE, gpuws_elementwise_create(ctx, "gw_f32 *y", "y[i] = 1.0f", NULL, &k));
    cr_assert_null(k);
    cr_assert(strstr(gpuws_last_error(), "/nonexistent/cc"), "%s", gpuws_last_error());
    cr_assert_eq(entries(NULL, 0), 0);
    /* the backend's own algorithms still run */
    const float a[4] = { 1, 2, 3, 4 };
    float c[4];
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *dc = test_buffer(ctx, sizeof c);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 4, da, da, dc));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < 4; i++) cr_assert_eq(c[i], 2 * a[i]);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
}

#ifdef GPUWS_HAVE_CUDA
/* Points the CUDA backend's NVRTC loader at another library name (NULL: the usual ones), for the next load. */
void gpuws__cuda_nvrtc_library(const char *name);

/* A machine without NVRTC (simulated: the loader looks for a library that is not there) still runs CUDA's built-in
 * kernels, and says why it cannot build programs. */
Test(program, without_nvrtc_cuda_programs_are_unavailable_with_the_reason)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_CUDA);
    gpuws__cuda_nvrtc_library("libnvrtc-not-installed.so");
    gpuws_program *p = NOT_SET;
    TEST_FAILS(GPUWS_ERR_BACKEND_UNAVAILABLE, gpuws_program_create(ctx, test_probe_source, NULL, &p));
    cr_assert_null(p, "no program, not a failed one: the source is not at fault");
    cr_assert(strstr(gpuws_last_error(), "NVRTC") && strstr(gpuws_last_error(), "libnvrtc-not-installed.so"),
              "the reason names NVRTC and the library: %s", gpuws_last_error());
    cr_assert_eq(entries(NULL, 0), 0);
    const float a[4] = { 1, 2, 3, 4 };
    float c[4];
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *dc = test_buffer(ctx, sizeof c);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, 4, da, da, dc));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < 4; i++) cr_assert_eq(c[i], 2 * a[i]);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(dc);
    gpuws__cuda_nvrtc_library(NULL);
    gpuws_context_destroy(ctx);
}
#endif
