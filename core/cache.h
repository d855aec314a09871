/* On-disk cache of compiled programs (core/cache.c). Never installed. */
#ifndef GPUWS_CORE_CACHE_H
#define GPUWS_CORE_CACHE_H

#include "gpuws.h"

#include <stdbool.h>
#include <stddef.h>

/* Entries are "<dir>/<fnv64 of key><ext>" holding magic, the full key, the binary and a checksum: a stale,
 * corrupt, truncated, foreign or non-regular entry is a miss (and is rebuilt); entries and the directory must
 * belong to the user and not be writable by group or others, else they are not used (warned once). Writes go to
 * a temporary file renamed into place, so concurrent processes never see half an entry. The key must name
 * everything the binary depends on: backend, device, toolchain versions, options and the whole source. */
typedef struct gpuws__cache {
    bool enabled;
    char dir[1024];
} gpuws__cache;
/* From GPUWS_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/gpuws, else $HOME/.cache/gpuws. */
void gpuws__cache_init(gpuws__cache *c);
/* A valid entry for key: GPUWS_OK and a gpuws__malloc'd binary in *bin; no usable entry: GPUWS_OK and *bin NULL.
 * GPUWS_ERR_OUT_OF_MEMORY (message set) when memory for reading it cannot be had. */
gpuws_status gpuws__cache_load(const gpuws__cache *c, const char *key, const char *ext, unsigned char **bin,
                               size_t *len);
/* Best effort: failures (read-only directory, full disk) are logged at debug level and ignored. */
void gpuws__cache_store(const gpuws__cache *c, const char *key, const char *ext, const void *bin, size_t len);
/* The path of key's entry (tests, statistics). */
void gpuws__cache_path(const gpuws__cache *c, const char *key, const char *ext, char *out, size_t n);

#endif
