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

void ocl_cache_init(ocl_cache *c)
{
    memset(c, 0, sizeof *c);
    const char *v = gpuws__getenv("GPUWS_CACHE_DIR");
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
    c->enabled = n > 0 && (size_t)n < sizeof c->dir;
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

bool ocl_cache_load(const ocl_cache *c, const char *key, unsigned char **bin, size_t *len)
{
    *bin = NULL;
    *len = 0;
    if (!c->enabled) return false;
    char path[1100];
    ocl_cache_path(c, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
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
        return false;
    }
    *bin = b;
    *len = bl;
    return true;
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
