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

/* From GPUWS_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/gpuws, else $HOME/.cache/gpuws. */
void ocl_cache_init(ocl_cache *c);
/* True and a malloc'd binary when a valid entry for key exists. */
bool ocl_cache_load(const ocl_cache *c, const char *key, unsigned char **bin, size_t *len);
/* Best effort: failures (read-only directory, full disk) are logged at debug level and ignored. */
void ocl_cache_store(const ocl_cache *c, const char *key, const unsigned char *bin, size_t len);
/* The path of key's entry (for tests and `gpuws info`). */
void ocl_cache_path(const ocl_cache *c, const char *key, char *out, size_t n);

#endif
