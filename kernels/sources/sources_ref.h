/* The synthetic radio sky of `gpuws sources --demo`, the pipeline tests and the benchmarks: Gaussian noise plus
 * point sources convolved with a Gaussian beam, and the matching of a catalogue against the injected sources.
 *
 * Units are those of a radio image: pixel values in Jy/beam, so a point source's peak pixel is its flux density.
 * Positions are 0-based pixel coordinates: x = column, y = row (pixel centres at integers), like gpuws_source.
 *
 * The image is a function of (params, sources) alone: pixel i = noise(seed, i) + Σ peak·exp(-r²/2σ_b²) over the
 * sources within cutoff_sigmas·σ_b, summed in a fixed order (cells of the binned list, then list order), so every
 * backend computes the same sum; only the transcendental functions (log, cos, exp, sqrt) may differ by the few ulp
 * their specifications allow (see gpuws_sky_ref's `scale`). */
#ifndef GPUWS_SOURCES_REF_H
#define GPUWS_SOURCES_REF_H

#include "gpuws/algorithms.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    float x, y; /* column, row */
    float peak; /* Jy/beam */
} gpuws_sky_source;

typedef struct {
    size_t width, height;
    uint64_t seed;             /* noise and source list */
    double noise_sigma;        /* Jy/beam; default 1e-3 */
    double beam_sigma;         /* pixels; default 1.7 (FWHM 4 px) */
    double cutoff_sigmas;      /* a source is drawn out to this many beam sigmas; default 6 (exp(-18) of its peak) */
    size_t num_sources;        /* default: 300 per 2048x2048, at least 10 */
    double peak_min, peak_max; /* log-uniform peaks; default 5e-3 .. 1e-1 (5 to 100 noise sigmas) */
    double margin;             /* sources keep this far (pixels) from the edges; default 8 */
} gpuws_sky_params;

/* Defaults above for a width x height image with the given seed. */
gpuws_sky_params gpuws_sky_defaults(size_t width, size_t height, uint64_t seed);

/* The injected sources: positions uniform in the image less the margin, peaks log-uniform; deterministic in
 * (seed, num_sources, sizes, peak range). out holds num_sources records. */
void gpuws_sky_sources(const gpuws_sky_params *p, gpuws_sky_source *out);

/* Sources binned into square cells of `cell` pixels (cell >= the cutoff radius, so a pixel's sources lie in its
 * cell and the 8 around it): cell_start[c] .. cell_start[c + 1] index `sorted`. Arrays are malloc'd; free with
 * gpuws_sky_bins_free. Returns 0, or -1 when out of memory (gpuws_last_error() then names the sizes). */
typedef struct {
    uint32_t cell, cells_x, cells_y;
    uint32_t *cell_start;     /* cells_x * cells_y + 1 */
    gpuws_sky_source *sorted; /* num_sources */
    float r2max, inv_two_s2;  /* cutoff radius², 1 / (2 σ_b²) */
} gpuws_sky_bins;
int gpuws_sky_bin(const gpuws_sky_params *p, const gpuws_sky_source *sources, gpuws_sky_bins *bins);
void gpuws_sky_bins_free(gpuws_sky_bins *bins);

/* The image, width * height floats. scale (NULL: not wanted) receives |noise| + Σ|source terms| per pixel: a device
 * image agrees with this one within 2^-16 · scale (derivation in tests/test_sources_pipeline.c). */
void gpuws_sky_ref(const gpuws_sky_params *p, const gpuws_sky_bins *bins, float *image, float *scale);

/* The noise of pixel i (a counter-based hash of (seed, i), then Box-Muller), the same formula as the kernels. */
float gpuws_sky_noise(uint64_t seed, uint64_t i, float sigma);

/* ---- matching a catalogue against the injected sources -------------------------------------------------------
 * Pairs closer than `radius` pixels are matched one to one, closest first. An injected source left unmatched is
 * counted as faint (peak below faint_peak, e.g. the detection threshold), blended (another injected source lies
 * within blend_radius of it: their islands merge into one, whose centre is between them) or missed otherwise.
 * A detection left unmatched is a fragment when an injected source lies within blend_radius (a faint source's
 * pixels near the threshold break into several islands; so do a bright one's outskirts), else spurious (noise). */
typedef struct {
    size_t injected, detected;
    size_t recovered; /* injected sources matched */
    size_t missed_faint, missed_blended, missed_other;
    size_t fragments;            /* unmatched detections near an injected source */
    size_t spurious;             /* unmatched detections far from every injected source */
    double rms_error, max_error; /* pixels, over the matched pairs (0 when none) */
} gpuws_sky_match;

/* Returns 0, or -1 when out of memory (gpuws_last_error() then names the sizes). */
int gpuws_sky_match_catalog(const gpuws_sky_source *injected, size_t ninj, const gpuws_source *detected, size_t ndet,
                            double radius, double faint_peak, double blend_radius, gpuws_sky_match *out);

#endif
