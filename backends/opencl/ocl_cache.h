/* On-disk cache of OpenCL program binaries.
 *
 * Entry file: "<dir>/<fnv64 of key>.clbin" holding magic, the full key, the binary and a checksum. The key names
 * the platform, device, device and driver versions, build options and a hash of the source, so a stale,
 * corrupt, truncated or foreign entry is detected on load and rebuilt from source. Writes go to a unique
 * temporary file renamed into place, so concurrent processes never see a half-written entry. */
#ifndef GPUWS_OCL_CACHE_H
#define GPUWS_OCL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ocl_cache {
    bool enabled;
    char dir[1024];
} ocl_cache;

/* From GPUWS_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/gpuws, else $HOME/.cache/gpuws. A path that exists
 * and is not a directory, or cannot be resolved (a symlink loop, a path through a file), disables the cache with a
 * warning, once per process. */
void ocl_cache_init(ocl_cache *c);
typedef enum {
    OCL_CACHE_OFF,      /* caching disabled */
    OCL_CACHE_MISS,     /* no entry */
    OCL_CACHE_HIT,      /* *bin: a malloc'd binary from a valid entry */
    OCL_CACHE_REJECTED  /* an entry that is invalid, unreadable, or not a regular file (never opened; warned once) */
} ocl_cache_result;
ocl_cache_result ocl_cache_load(const ocl_cache *c, const char *key, unsigned char **bin, size_t *len);
/* Best effort: failures (read-only directory, full disk) are logged at debug level and ignored. An entry that is
 * not a regular file is left alone. */
void ocl_cache_store(const ocl_cache *c, const char *key, const unsigned char *bin, size_t len);
/* The path of key's entry (for tests and `gpuws info`). */
void ocl_cache_path(const ocl_cache *c, const char *key, char *out, size_t n);

#endif
