/* Mesh background, scalar reference: the tests' oracle and the CPU backend's implementation; its grid steps
 * (gpuws__background_grid) also serve the GPU driver, which computes the per-mesh statistics and the
 * full-resolution maps on the device and the small steps in between here. */
#ifndef GPUWS_BACKGROUND_REF_H
#define GPUWS_BACKGROUND_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdbool.h>
#include <stdint.h>

/* The plan the interpolation reads, one block of 4-byte words: BG_PLANES planes of n = nx * ny floats (back, its
 * y-spline, the x-splines of both; the same four for rms), then BG_ROW_COEFS floats per image row, BG_COL_COEFS
 * floats per image column, then int32 per row (the grid row below it, yl) and per column (the grid column to its
 * left, k). Offsets in words. */
typedef struct gpuws__background_plan {
    size_t nx, ny, n;
    size_t rows, cols;   /* float offsets of the row and column weights */
    size_t row_k, col_k; /* int32 offsets of yl and k */
    size_t words;        /* the plan's size in 4-byte words */
} gpuws__background_plan;

/* The layout for a width x height image in meshes of bw x bh. False when a size overflows. */
bool gpuws__background_layout(size_t width, size_t height, int bw, int bh, gpuws__background_plan *p);

/* Step 1 for every mesh, its pixel sums in the devices' order (background_mesh.h: bg_lanes_fold): mesh[2m] =
 * background, mesh[2m + 1] = rms of mesh m (row-major over the grid); -1e30 both for a bad mesh. mask NULL or
 * width*height bytes (nonzero excludes). Rows of meshes on the host's cores: each mesh alone, the same bits. */
void gpuws_background_mesh_ref(const float *image, const uint8_t *mask, size_t width, size_t height, int bw, int bh,
                               float *mesh);

/* Steps 2-4 and the spline plan from the mesh statistics (overwritten): plan receives p->words words; *result its
 * globals, grid size and bad-mesh count. GPUWS_ERR_INVALID_ARGUMENT when no mesh is good (the caller words the
 * message), GPUWS_ERR_OUT_OF_MEMORY when a temporary cannot be had; no message is set. */
gpuws_status gpuws__background_grid(const gpuws__background_plan *p, size_t width, size_t height, int bw, int bh,
                                    int fw, int fh, double fthresh, float *mesh, void *plan,
                                    gpuws_background_result *result);

/* The host memory gpuws__background_grid allocates (for messages). */
size_t gpuws__background_grid_bytes(const gpuws__background_plan *p, int fw, int fh);

/* Step 5 for the pixels of rows [r0, r1), into back and rms from their first row (which holds row r0). */
void gpuws_background_interp_ref(const gpuws__background_plan *p, const void *plan, size_t width, size_t r0, size_t r1,
                                 float *back, float *rms);

/* All steps (1 and 5 on the host's cores). Statuses as gpuws__background_grid's; nothing is written to back, rms or
 * *result on error. */
gpuws_status gpuws_background_ref(const float *image, const uint8_t *mask, size_t width, size_t height,
                                  const gpuws_background_options *o, float *back, float *rms,
                                  gpuws_background_result *result);

/* Pass 1 of gpuws_background_host on a GPU backend (background.c), which gpuws_extract_host's background shares: the
 * meshes' statistics in bands within max_device_bytes (progress called as pass 1 of 2) and the grid steps: *plan
 * (p->words 4-byte words, gpuws__malloc'd; NULL on error), *p its layout, *result the globals. o read and checked but
 * for its sizes, which are checked here (messages of the call fn); o->mask NULL, mask the host's. */
gpuws_status gpuws__background_host_plan(gpuws_context *ctx, size_t width, size_t height, const float *image,
                                         const unsigned char *mask, const gpuws_background_options *o,
                                         uint64_t max_device_bytes, gpuws_extract_host_progress progress,
                                         void *progress_user, const char *fn, void **plan, gpuws__background_plan *p,
                                         gpuws_background_result *result);
/* Pass 1 alone on `rows` whole rows of an image (a caller's share of gpuws_extract_host_reduce, which starts on a
 * mesh row): the statistics of their meshes, 2 floats a mesh (ceil(rows / bh) mesh rows, the last partial where the
 * share ends the image) into mesh, in bands within max_device_bytes on a GPU, by gpuws_background_mesh_ref on the
 * CPU backend (the same bits). o checked by the caller on the whole image. */
gpuws_status gpuws__background_host_meshes(gpuws_context *ctx, size_t width, size_t rows, const float *image,
                                           const unsigned char *mask, const gpuws_background_options *o,
                                           uint64_t max_device_bytes, gpuws_extract_host_progress progress,
                                           void *progress_user, const char *fn, float *mesh);
/* Enqueues back and rms of the image rows first .. end - 1 into rows 0 on of back and rms (device buffers), from the
 * plan's device copy dplan. */
gpuws_status gpuws__background_rows(gpuws_stream *s, gpuws_buffer *dplan, const gpuws__background_plan *p, size_t width,
                                    size_t first, size_t end, gpuws_buffer *back, gpuws_buffer *rms);

#endif
