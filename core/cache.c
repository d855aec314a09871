/* On-disk cache of compiled programs (OpenCL binaries, CUDA cubins, the CPU backend's shared objects): see
 * gpuws__cache in cache.h. A cached binary is code the process will run, so an entry is used only when it
 * and its directory belong to the user and nobody else can write them, and only regular files are opened (a FIFO
 * or device planted in the directory must not block or feed the process). Reading an entry allocates with the C
 * library, not gpuws__malloc: the cache only saves a build, so a failed allocation there is a miss, and the build
 * that follows succeeds or fails on its own (the fault suite fails gpuws__malloc'd allocations one by one and
 * expects each to end in GPUWS_ERR_OUT_OF_MEMORY). */
#include "alloc.h"
#include "cache.h"
#include "errors.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = { 'G', 'P', 'U', 'W', 'S', 'C', 'B', 3 };
#define MAX_BINARY (512u << 20)

/* The warnings below are given once per process: each context and each build checks again. */
static atomic_flag warned_dir = ATOMIC_FLAG_INIT, warned_entry = ATOMIC_FLAG_INIT, warned_owner = ATOMIC_FLAG_INIT;

/* A directory that cannot be one (a file, a symlink loop, a path through a file) disables the cache with a warning:
 * every program would be built from source, slowly, for a reason the user should see. A directory that does not
 * exist yet is made at the first store; one that cannot be written only disables caching (debug message). */
static bool dir_usable(const char *dir, bool from_env)
{
    struct stat sb;
    const char *why = NULL;
    if (stat(dir, &sb) == 0) why = S_ISDIR(sb.st_mode) ? NULL : "it is not a directory";
    else if (errno == ELOOP || errno == ENOTDIR) why = strerror(errno);
    if (!why) return true;
    if (!atomic_flag_test_and_set(&warned_dir))
        gpuws__log(GPUWS__LOG_WARN, "%s%s: %s; programs are built from source and not cached",
                   from_env ? "GPUWS_CACHE_DIR=" : "the program cache ", dir, why);
    return false;
}

void gpuws__cache_init(gpuws__cache *c)
{
    memset(c, 0, sizeof *c);
    const char *v = gpuws__getenv("GPUWS_CACHE_DIR");
    const bool from_env = v != NULL;
    if (v && gpuws__strcasecmp(v, "off") == 0) return;
    int n;
    if (v) n = snprintf(c->dir, sizeof c->dir, "%s", v);
    else if ((v = gpuws__getenv("XDG_CACHE_HOME"))) n = snprintf(c->dir, sizeof c->dir, "%s/gpuws", v);
    else if ((v = gpuws__getenv("HOME"))) n = snprintf(c->dir, sizeof c->dir, "%s/.cache/gpuws", v);
    else return;
    c->enabled = n > 0 && (size_t)n < sizeof c->dir && dir_usable(c->dir, from_env);
}

static void entry_path(const gpuws__cache *c, const char *key, const char *ext, char *out, size_t n)
{
    snprintf(out, n, "%s/%016llx%s", c->dir, (unsigned long long)gpuws__fnv1a(key, strlen(key), GPUWS__FNV_SEED), ext);
}

static uint64_t checksum(const char *key, size_t kl, const unsigned char *bin, size_t bl)
{
    return gpuws__fnv1a(bin, bl, gpuws__fnv1a(key, kl, GPUWS__FNV_SEED));
}

static bool read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Owned by the user and not writable by group or others. */
static bool private_to_user(const struct stat *sb)
{
    return sb->st_uid == geteuid() && !(sb->st_mode & (S_IWGRP | S_IWOTH));
}

static void warn_once(const char *what, const char *path)
{
    if (atomic_flag_test_and_set(&warned_owner)) return;
    gpuws__log(GPUWS__LOG_WARN,
               "program cache: %s %s; compiled programs are not loaded from it (set GPUWS_CACHE_DIR to a "
               "directory of your own, or 'off')",
               path, what);
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "FIFO"
           : S_ISLNK(m)  ? "symbolic link"
           : S_ISDIR(m)  ? "directory"
           : S_ISCHR(m)  ? "character device"
           : S_ISBLK(m)  ? "block device"
           : S_ISSOCK(m) ? "socket"
                         : "special file";
}

static void special_entry(const char *path, mode_t m)
{
    if (!atomic_flag_test_and_set(&warned_entry))
        gpuws__log(GPUWS__LOG_WARN,
                   "program cache entry %s is a %s, not a regular file: it is neither read nor replaced, "
                   "and its program is built from source",
                   path, file_kind(m));
}

/* The directory may hold code we run: it must be ours alone. */
static bool dir_trusted(const gpuws__cache *c)
{
    struct stat sb;
    if (stat(c->dir, &sb) != 0) return false;
    if (!S_ISDIR(sb.st_mode)) {
        warn_once("is not a directory", c->dir);
        return false;
    }
    if (!private_to_user(&sb)) {
        warn_once("is writable by others or not yours", c->dir);
        return false;
    }
    return true;
}

gpuws_status gpuws__cache_load(const gpuws__cache *c, const char *key, const char *ext, unsigned char **bin,
                               size_t *len)
{
    *bin = NULL;
    *len = 0;
    if (!c->enabled || !dir_trusted(c)) return GPUWS_OK;
    char path[1100];
    entry_path(c, key, ext, path, sizeof path);
    /* Only a regular file is opened (a FIFO would block the open or the read forever, a device could do anything);
     * O_NONBLOCK and O_NOFOLLOW cover an entry swapped for one between the lstat and the open. */
    struct stat sb;
    if (lstat(path, &sb) != 0) return GPUWS_OK;
    if (!S_ISREG(sb.st_mode)) {
        special_entry(path, sb.st_mode);
        return GPUWS_OK;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ELOOP) special_entry(path, S_IFLNK);
        return GPUWS_OK;
    }
    bool ok = false;
    char magic[8];
    uint32_t kl;
    uint64_t bl, sum;
    char *k = NULL;
    unsigned char *b = NULL;
    size_t failed_alloc = 0; /* bytes of an allocation that failed */
    const size_t want_kl = strlen(key);
    const char *why = "corrupt, truncated or for another device";
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        special_entry(path, sb.st_mode);
        why = "not a regular file";
        goto done;
    }
    if (!private_to_user(&sb)) {
        warn_once("holds an entry that is writable by others or not yours:", path);
        why = "not private to the user";
        goto done;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!read_all(fd, magic, 8) || memcmp(magic, MAGIC, 8) != 0) goto done;
    if (!read_all(fd, &kl, sizeof kl) || kl != want_kl) goto done;
    if (!(k = gpuws__malloc(kl ? kl : 1))) {
        failed_alloc = kl ? kl : 1;
        goto done;
    }
    if (!read_all(fd, k, kl) || memcmp(k, key, kl) != 0) goto done;
    if (!read_all(fd, &bl, sizeof bl) || bl == 0 || bl > MAX_BINARY) goto done;
    if (!(b = gpuws__malloc(bl))) {
        failed_alloc = bl;
        goto done;
    }
    if (!read_all(fd, b, bl)) goto done;
    if (!read_all(fd, &sum, sizeof sum) || sum != checksum(key, kl, b, bl)) goto done;
    ok = true;
done:
    close(fd);
    gpuws__free(k);
    if (failed_alloc)
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading program cache entry %s: allocating %zu bytes failed",
                            path, failed_alloc);
    if (!ok) {
        gpuws__log(GPUWS__LOG_INFO, "program cache entry %s is not used (%s); rebuilding", path, why);
        gpuws__free(b);
        return GPUWS_OK;
    }
    *bin = b;
    *len = bl;
    return GPUWS_OK;
}

static void mkdirs(const char *dir)
{
    char tmp[1024];
    gpuws__strlcpy(tmp, dir, sizeof tmp);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0700);
            *p = '/';
        }
    }
    mkdir(tmp, 0700);
}

void gpuws__cache_store(const gpuws__cache *c, const char *key, const char *ext, const void *bin, size_t len)
{
    if (!c->enabled || len == 0 || len > MAX_BINARY) return;
    static atomic_uint counter;
    mkdirs(c->dir);
    if (!dir_trusted(c)) return;
    char path[1100], tmp[1200];
    entry_path(c, key, ext, path, sizeof path);
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        special_entry(path, sb.st_mode); /* the rename would replace it: not ours to remove */
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        gpuws__log(GPUWS__LOG_DEBUG, "program cache: cannot write %s (%s); caching skipped", tmp, strerror(errno));
        return;
    }
    uint32_t kl = (uint32_t)strlen(key);
    uint64_t bl = len, sum = checksum(key, kl, bin, len);
    bool ok = write_all(fd, MAGIC, 8) && write_all(fd, &kl, sizeof kl) && write_all(fd, key, kl) &&
              write_all(fd, &bl, sizeof bl) && write_all(fd, bin, len) && write_all(fd, &sum, sizeof sum);
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        gpuws__log(GPUWS__LOG_DEBUG, "program cache: storing %s failed (%s)", path, strerror(errno));
        unlink(tmp);
    }
}

void gpuws__cache_path(const gpuws__cache *c, const char *key, const char *ext, char *out, size_t n)
{
    entry_path(c, key, ext, out, n);
}
