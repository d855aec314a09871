#include "ocl_cache.h"

#include "../../core/backend_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'G', 'P', 'U', 'W', 'S', 'C', 'L', 2};
#define MAX_BINARY (512u << 20)

/* The warnings below are given once per process: each context checks the directory again. */
static atomic_flag warned_dir = ATOMIC_FLAG_INIT, warned_entry = ATOMIC_FLAG_INIT;

/* A directory that cannot be one (a file, a symlink loop, a path through a file) disables the cache with a warning:
 * every program would be built from source, slowly, for a reason the user should see. A directory that does not
 * exist yet is made at the first store; one that cannot be written only disables caching (debug message). */
static bool dir_usable(const char *dir, bool from_env)
{
    struct stat sb;
    const char *why = NULL;
    if (stat(dir, &sb) == 0)
        why = S_ISDIR(sb.st_mode) ? NULL : "it is not a directory";
    else if (errno == ELOOP || errno == ENOTDIR)
        why = strerror(errno);
    if (!why) return true;
    if (!atomic_flag_test_and_set(&warned_dir))
        gpuws__log(GPUWS__LOG_WARN, "%s%s: %s; OpenCL programs are built from source and not cached", from_env ?
                   "GPUWS_CACHE_DIR=" : "the OpenCL program cache ", dir, why);
    return false;
}

void ocl_cache_init(ocl_cache *c)
{
    memset(c, 0, sizeof *c);
    const char *v = gpuws__getenv("GPUWS_CACHE_DIR");
    const bool from_env = v != NULL;
    if (v && gpuws__strcasecmp(v, "off") == 0) return;
    int n;
    if (v)
        n = snprintf(c->dir, sizeof c->dir, "%s", v);
    else if ((v = gpuws__getenv("XDG_CACHE_HOME")))
        n = snprintf(c->dir, sizeof c->dir, "%s/gpuws", v);
    else if ((v = gpuws__getenv("HOME")))
        n = snprintf(c->dir, sizeof c->dir, "%s/.cache/gpuws", v);
    else
        return;
    c->enabled = n > 0 && (size_t)n < sizeof c->dir && dir_usable(c->dir, from_env);
}

void ocl_cache_path(const ocl_cache *c, const char *key, char *out, size_t n)
{
    snprintf(out, n, "%s/%016llx.clbin", c->dir, (unsigned long long)gpuws__fnv1a(key, strlen(key), GPUWS__FNV_SEED));
}

static uint64_t checksum(const char *key, size_t kl, const unsigned char *bin, size_t bl)
{
    return gpuws__fnv1a(bin, bl, gpuws__fnv1a(key, kl, GPUWS__FNV_SEED));
}

static bool read_all(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

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
                   "OpenCL cache entry %s is a %s, not a regular file: it is neither read nor replaced, and its "
                   "program is built from source", path, file_kind(m));
}

/* Opens an entry for reading only if it is a regular file; *present says whether anything is there. Anything else is
 * never opened (a FIFO would block the open or the read forever, a device could do anything); O_NONBLOCK and
 * O_NOFOLLOW cover an entry swapped for one between the lstat and the open. */
static FILE *open_entry(const char *path, bool *present)
{
    struct stat sb;
    if (!(*present = lstat(path, &sb) == 0)) return NULL;
    int fd = -1;
    if (S_ISREG(sb.st_mode) && (fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) < 0) return NULL;
    if (fd >= 0 && fstat(fd, &sb) != 0) sb.st_mode = 0;
    if (!S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        special_entry(path, sb.st_mode);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1 ? NULL : fdopen(fd, "rb");
    if (!f) close(fd);
    return f;
}

ocl_cache_result ocl_cache_load(const ocl_cache *c, const char *key, unsigned char **bin, size_t *len)
{
    *bin = NULL;
    *len = 0;
    if (!c->enabled) return OCL_CACHE_OFF;
    char path[1100];
    ocl_cache_path(c, key, path, sizeof path);
    bool present;
    FILE *f = open_entry(path, &present);
    if (!f) return present ? OCL_CACHE_REJECTED : OCL_CACHE_MISS;
    bool ok = false;
    char magic[8];
    uint32_t kl;
    uint64_t bl, sum;
    char *k = NULL;
    unsigned char *b = NULL;
    size_t want_kl = strlen(key);
    if (!read_all(f, magic, 8) || memcmp(magic, MAGIC, 8) != 0) goto done;
    if (!read_all(f, &kl, sizeof kl) || kl != want_kl) goto done;
    if (!(k = malloc(kl)) || !read_all(f, k, kl) || memcmp(k, key, kl) != 0) goto done;
    if (!read_all(f, &bl, sizeof bl) || bl == 0 || bl > MAX_BINARY) goto done;
    if (!(b = malloc(bl)) || !read_all(f, b, bl)) goto done;
    if (!read_all(f, &sum, sizeof sum) || sum != checksum(key, kl, b, bl)) goto done;
    ok = true;
done:
    fclose(f);
    free(k);
    if (!ok) {
        gpuws__log(GPUWS__LOG_INFO, "OpenCL cache entry %s is invalid (corrupt, truncated or for another device); rebuilding", path);
        free(b);
        return OCL_CACHE_REJECTED;
    }
    *bin = b;
    *len = bl;
    return OCL_CACHE_HIT;
}

static void mkdirs(const char *dir)
{
    char tmp[1024];
    gpuws__strlcpy(tmp, dir, sizeof tmp);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
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

void ocl_cache_store(const ocl_cache *c, const char *key, const unsigned char *bin, size_t len)
{
    if (!c->enabled || len == 0 || len > MAX_BINARY) return;
    static atomic_uint counter;
    mkdirs(c->dir);
    char path[1100], tmp[1200];
    ocl_cache_path(c, key, path, sizeof path);
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        special_entry(path, sb.st_mode); /* the rename would replace it: not ours to remove */
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        gpuws__log(GPUWS__LOG_DEBUG, "OpenCL cache: cannot write %s (%s); caching skipped", tmp, strerror(errno));
        return;
    }
    uint32_t kl = (uint32_t)strlen(key);
    uint64_t bl = len, sum = checksum(key, kl, bin, len);
    bool ok = write_all(fd, MAGIC, 8) && write_all(fd, &kl, sizeof kl) && write_all(fd, key, kl) &&
              write_all(fd, &bl, sizeof bl) && write_all(fd, bin, len) && write_all(fd, &sum, sizeof sum);
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        gpuws__log(GPUWS__LOG_DEBUG, "OpenCL cache: storing %s failed (%s)", path, strerror(errno));
        unlink(tmp);
    }
}
