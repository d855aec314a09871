/* The OpenCL program cache: hits, and every fault (corrupt, truncated, foreign, not a regular file, unwritable, not
 * a directory, concurrent) ends in a correct result. */
#include "support.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void gpuws__opencl_cache_stats(unsigned long *hits, unsigned long *misses, unsigned long *rejected,
                               unsigned long *builds);
uint64_t gpuws__fnv1a(const void *data, size_t n, uint64_t seed);

typedef struct {
    unsigned long hits, misses, rejected, builds;
} stats;

static stats now(void)
{
    stats s;
    gpuws__opencl_cache_stats(&s.hits, &s.misses, &s.rejected, &s.builds);
    return s;
}

static char dir[256];

/* .fini of every test: the cache directory goes away with the test */
static void remove_cache_dir(void)
{
    if (!dir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s 2>/dev/null; rm -rf %s", dir, dir);
    if (system(cmd) != 0) cr_log_warn("could not remove %s", dir);
}

static void fresh_cache_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/gpuws-cache-test-%ld", (long)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    setenv("GPUWS_CACHE_DIR", dir, 1);
}

/* Runs vector_add on a new OpenCL context (a fresh program build or cache load) and checks the result. */
static void vector_add_once(void)
{
    gpuws_context *ctx = test_open(GPUWS_BACKEND_OPENCL);
    enum { N = 777 };
    float a[N], c[N];
    for (int i = 0; i < N; i++) a[i] = (float)i * 0.25f;
    gpuws_buffer *da = test_buffer_from(ctx, a, sizeof a), *dc = test_buffer(ctx, sizeof c);
    TEST_OK(gpuws_vector_add(NULL, GPUWS_F32, N, da, da, dc));
    TEST_OK(gpuws_buffer_read(dc, 0, c, sizeof c));
    for (int i = 0; i < N; i++) cr_assert_eq(c[i], (float)i * 0.5f, "element %d", i);
    gpuws_buffer_destroy(da);
    gpuws_buffer_destroy(dc);
    gpuws_context_destroy(ctx);
}

/* Applies f to every cache entry. */
static int for_each_entry(void (*f)(const char *path))
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".clbin") || strstr(e->d_name, ".tmp")) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (f) f(path);
        n++;
    }
    closedir(d);
    return n;
}

static void corrupt(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 40, SEEK_SET);
    fputs("garbage garbage garbage", f);
    fclose(f);
}

static void truncate_half(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(truncate(path, st.st_size / 2), 0);
}

/* Rewrites the key so it names another device, keeping the file otherwise valid-looking. */
static void foreign(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    char buf[64];
    cr_assert_eq(fread(buf, 1, sizeof buf, f), sizeof buf);
    char *p = NULL;
    for (size_t i = 0; i + 9 <= sizeof buf && !p; i++)
        if (memcmp(buf + i, "platform=", 9) == 0) p = buf + i;
    cr_assert_not_null(p, "entry starts with its key");
    p[9] ^= 0x20; /* flip the case of the platform name's first letter */
    fseek(f, 0, SEEK_SET);
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
}

Test(cache, a_second_context_loads_from_disk, .fini = remove_cache_dir)
{
    fresh_cache_dir();
    stats s0 = now();
    vector_add_once();
    stats s1 = now();
    cr_assert_geq(s1.builds - s0.builds, 1);
    cr_assert_geq(for_each_entry(NULL), 1, "an entry was written to %s", dir);
    vector_add_once();
    stats s2 = now();
    cr_assert_geq(s2.hits - s1.hits, 1, "second context loaded the binary");
    cr_assert_eq(s2.builds, s1.builds, "and built nothing from source");
}

static void fault_then_rebuild(void (*fault)(const char *))
{
    fresh_cache_dir();
    vector_add_once();
    cr_assert_geq(for_each_entry(fault), 1);
    stats s0 = now();
    vector_add_once(); /* correct despite the bad entry */
    stats s1 = now();
    cr_assert_geq(s1.rejected - s0.rejected, 1, "the bad entry was detected");
    cr_assert_geq(s1.builds - s0.builds, 1, "and rebuilt from source");
    vector_add_once(); /* the rewritten entry is good again */
    cr_assert_geq(now().hits - s1.hits, 1);
}

/* A well-formed entry (magic, key and checksum all right) whose binary the driver refuses: clCreateProgramWithBinary
 * or clBuildProgram fails, and the program is built from source instead. */
static void driver_rejects(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    char magic[8];
    uint32_t kl;
    cr_assert_eq(fread(magic, 1, 8, f), 8);
    cr_assert_eq(fread(&kl, sizeof kl, 1, f), 1);
    char *key = malloc(kl);
    uint64_t bl;
    cr_assert_eq(fread(key, 1, kl, f), kl);
    cr_assert_eq(fread(&bl, sizeof bl, 1, f), 1);
    unsigned char *bin = malloc(bl);
    for (uint64_t i = 0; i < bl; i++) bin[i] = (unsigned char)(i * 131 + 7); /* not a binary of any driver */
    uint64_t sum = gpuws__fnv1a(bin, bl, gpuws__fnv1a(key, kl, 0xcbf29ce484222325ULL));
    cr_assert_eq(fwrite(bin, 1, bl, f), bl);
    cr_assert_eq(fwrite(&sum, sizeof sum, 1, f), 1);
    fclose(f);
    free(key);
    free(bin);
}

Test(cache, a_corrupt_entry_is_rebuilt, .fini = remove_cache_dir) { fault_then_rebuild(corrupt); }
Test(cache, a_truncated_entry_is_rebuilt, .fini = remove_cache_dir) { fault_then_rebuild(truncate_half); }
Test(cache, an_entry_for_another_device_is_rebuilt, .fini = remove_cache_dir) { fault_then_rebuild(foreign); }
Test(cache, an_entry_the_driver_refuses_is_rebuilt, .fini = remove_cache_dir) { fault_then_rebuild(driver_rejects); }

Test(cache, an_unwritable_directory_only_disables_caching, .fini = remove_cache_dir)
{
    /* /proc refuses new files even to root; a chmod'ed directory would not stop root */
    setenv("GPUWS_CACHE_DIR", "/proc/gpuws-cache", 1);
    vector_add_once();
    fresh_cache_dir();
    cr_assert_eq(mkdir(dir, 0555), 0);
    vector_add_once();
    setenv("GPUWS_CACHE_DIR", "off", 1);
    stats s0 = now();
    vector_add_once();
    cr_assert_eq(now().hits, s0.hits, "cache off: nothing loaded");
}

Test(cache, concurrent_processes_never_see_a_partial_entry, .fini = remove_cache_dir)
{
    fresh_cache_dir();
    enum { P = 4 };
    pid_t kids[P];
    for (int i = 0; i < P; i++) {
        kids[i] = fork();
        cr_assert_geq(kids[i], 0);
        if (kids[i] == 0) {
            /* each child builds, stores and reloads the same programs at the same time */
            for (int r = 0; r < 3; r++) vector_add_once();
            _exit(0);
        }
    }
    for (int i = 0; i < P; i++) {
        int status;
        cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d failed (status 0x%x)", i, status);
    }
    stats s0 = now();
    vector_add_once();
    cr_assert_geq(now().hits - s0.hits, 1, "the entries left behind are valid");
    cr_assert_eq(now().rejected, s0.rejected);
}

/* ---- entries and directories that are not what they should be ---- */

static void capture_stderr(void)
{
    /* set before the first message of the process, which fixes the level: a GPUWS_LOG=error would hide warnings */
    setenv("GPUWS_LOG", "warn", 1);
    test_capture_stderr();
}

/* Ends the capture; returns how many times `needle` was written to stderr. */
static int captured_count(const char *needle)
{
    const char *text = test_captured_stderr();
    cr_log_info("stderr: %s", text);
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* vector_add on two contexts in turn, which must warn exactly once; *s0 and *s1: the cache events before and after */
static void two_contexts_warn_once(const char *warning, stats *s0, stats *s1)
{
    capture_stderr();
    *s0 = now();
    vector_add_once();
    vector_add_once();
    *s1 = now();
    cr_assert_eq(captured_count(warning), 1, "one warning '%s'", warning);
}

static void replace_by_fifo(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0644), 0, "mkfifo %s: %s", path, strerror(errno));
}

/* a link to a FIFO in the cache directory, not named as an entry */
static void replace_by_link_to_fifo(const char *path)
{
    static int made;
    char target[700];
    snprintf(target, sizeof target, "%s/fifo-%d", dir, made++);
    cr_assert_eq(mkfifo(target, 0644), 0, "mkfifo %s: %s", target, strerror(errno));
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(target, path), 0);
}

static mode_t entry_type;
static void expect_type(const char *path)
{
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0, "%s is gone", path);
    cr_assert_eq(sb.st_mode & S_IFMT, entry_type, "%s was replaced", path);
}

/* An entry that is not a regular file is never opened (opening a FIFO for reading blocks until a writer comes:
 * forever) and never replaced (it is not ours): each context counts it as rejected, builds the program from source
 * and warns about it once per process. */
static void special_entry(void (*make)(const char *), mode_t type, const char *warning)
{
    fresh_cache_dir();
    vector_add_once();
    int entries = for_each_entry(make);
    cr_assert_geq(entries, 1);
    stats s0, s1;
    two_contexts_warn_once(warning, &s0, &s1);
    cr_assert_eq(s1.rejected - s0.rejected, 2 * (unsigned long)entries);
    cr_assert_eq(s1.builds - s0.builds, 2 * (unsigned long)entries);
    cr_assert_eq(s1.hits, s0.hits);
    entry_type = type;
    cr_assert_eq(for_each_entry(expect_type), entries);
}

Test(cache, an_entry_that_is_a_fifo_is_neither_read_nor_replaced, .fini = remove_cache_dir, .timeout = 120)
{
    special_entry(replace_by_fifo, S_IFIFO, "is a FIFO, not a regular file: it is neither read nor replaced");
}

Test(cache, an_entry_that_is_a_link_to_a_fifo_is_neither_read_nor_replaced, .fini = remove_cache_dir, .timeout = 120)
{
    special_entry(replace_by_link_to_fifo, S_IFLNK, "is a symbolic link, not a regular file");
}

/* GPUWS_CACHE_DIR = value_fmt with %s the test's directory, which holds a regular file "file" and a symbolic link
 * "loop" to itself. A cache directory that cannot be one disables the cache with one warning, naming why. */
static void unusable_cache_dir(const char *value_fmt, const char *why)
{
    fresh_cache_dir();
    cr_assert_eq(mkdir(dir, 0755), 0);
    char file[300], loop[300], value[300], warning[600];
    snprintf(file, sizeof file, "%s/file", dir);
    snprintf(loop, sizeof loop, "%s/loop", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("not a directory\n", f);
    fclose(f);
    cr_assert_eq(symlink(loop, loop), 0);
    snprintf(value, sizeof value, value_fmt, dir);
    setenv("GPUWS_CACHE_DIR", value, 1);
    snprintf(warning, sizeof warning, "GPUWS_CACHE_DIR=%s: %s; programs are built from source and not cached", value,
             why);
    stats s0, s1;
    two_contexts_warn_once(warning, &s0, &s1);
    cr_assert_eq(s1.hits, s0.hits, "nothing loaded");
    cr_assert_eq(s1.misses + s1.rejected, s0.misses + s0.rejected, "no lookup made");
    cr_assert_eq(s1.builds - s0.builds, 2);
    char *text = test_read_file(file);
    cr_assert_str_eq(text, "not a directory\n");
    free(text);
}

Test(cache, a_cache_directory_that_is_a_file_disables_caching_with_a_warning, .fini = remove_cache_dir)
{
    unusable_cache_dir("%s/file", "it is not a directory");
}

Test(cache, a_cache_directory_that_is_a_symlink_loop_disables_caching_with_a_warning, .fini = remove_cache_dir)
{
    unusable_cache_dir("%s/loop", strerror(ELOOP));
}

Test(cache, a_cache_directory_below_a_file_disables_caching_with_a_warning, .fini = remove_cache_dir)
{
    unusable_cache_dir("%s/file/gpuws", strerror(ENOTDIR));
}
