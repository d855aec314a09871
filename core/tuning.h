/* The tuning registry: every environment variable the library and the CLI read, and every tuning or testing knob
 * the drivers and backends consult, in one list. Never installed.
 *
 * A PUBLIC entry is an environment variable of its own (its name is the variable; at most 10 of them: tests/
 * test_tuning.c checks the count and that the sources read no other GPUWS_* variable). Every other entry is a knob:
 * a field of gpuws__tuning, read once per context (gpuws_context_create) from GPUWS_TUNING="name=value,name=value"
 * and consulted by the drivers as ctx->tuning.<name>; tests set one with gpuws__tuning_set. docs/tuning.md is this
 * list printed by `gpuws tuning --markdown` (a test compares the two).
 *
 * X(name, type, default, values, doc). Types and the values they accept (the `values` string is also what the
 * parser checks against):
 *   PUBLIC  an environment variable; values and default only document it.
 *   BOOL    0 or 1; a bool field.
 *   CHOICE  one of the words "a|b|c"; an int field, the word's index (the GPUWS__* constants below name them).
 *   NUMBER  a word of "a|b|lo..hi" or a whole number in lo..hi; an int64_t field: the number, or -(1 + the word's
 *           index) for a word (so the first word, usually auto, is -1).
 *   PAIR    "auto" or AxB with A, B >= 1; an int[2] field, {0, 0} for auto. */
#ifndef GPUWS_TUNING_H
#define GPUWS_TUNING_H

#include "gpuws.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPUWS__TUNING(X)                                                                                               \
    X(GPUWS_BACKEND, PUBLIC, "cuda,opencl,cpu", "cuda|opencl|cpu, a comma list",                                       \
      "the backends gpuws_context_create tries, in order (options.backend wins over it)")                              \
    X(GPUWS_DEVICE, PUBLIC, "0", "0, 1, ..., a list 0,1,..., or all",                                                  \
      "the device index on the backend (options.device wins over it); a list or all: the devices of "                  \
      "gpuws_contexts_create (the _host calls, gpuws convolve, gpuws label, gpuws sources), a list's first for one "   \
      "context; all = every device of device 0's type and platform; an index may repeat; gpuws info lists them")       \
    X(GPUWS_OPENCL_PLATFORM, PUBLIC, "", "a substring of the platform name",                                           \
      "only OpenCL platforms whose name contains it (case-insensitive)")                                               \
    X(GPUWS_CACHE_DIR, PUBLIC, "$XDG_CACHE_HOME/gpuws or ~/.cache/gpuws", "a directory, or off",                       \
      "where compiled OpenCL programs and CPU-backend user kernels are cached; off: no disk cache")                    \
    X(GPUWS_LOG, PUBLIC, "warn", "error|warn|info|debug",                                                              \
      "library messages on stderr; another value means warn, with a warning saying so")                                \
    X(GPUWS_OPENCL_LIBRARY, PUBLIC, "libOpenCL.so.1", "a file name or path", "the OpenCL ICD loader to load")          \
    X(GPUWS_CC, PUBLIC, "cc, gcc or clang on PATH", "a command, with options",                                         \
      "the C compiler that builds user kernels on the CPU backend")                                                    \
    X(GPUWS_FAULT_ALLOC, PUBLIC, "", "k >= 1",                                                                         \
      "fault injection: the library's k-th host allocation fails (docs/reliability.md)")                               \
    X(GPUWS_TUNING, PUBLIC, "", "name=value,name=value",                                                               \
      "sets the knobs below for every context created afterwards; an unknown name or a bad value is ignored "          \
      "with a warning")                                                                                                \
    X(convolve_path, CHOICE, "auto", "auto|tiled|direct",                                                              \
      "convolve1d, convolve2d and convolve2d_separable on CUDA/OpenCL: auto runs the GPU kernels (tiled, stream, "     \
      "fused) on GPUs and the direct ones on CPU OpenCL devices; tiled or direct forces either family")                \
    X(convolve_no_unroll, BOOL, "0", "0|1",                                                                            \
      "1 builds the OpenCL convolution kernels without their unroll pragmas (a diagnostic)")                           \
    X(convolve1d_blocks_per_cu, NUMBER, "auto", "auto|1..64",                                                          \
      "blocks per compute unit of convolve1d's stream kernel's persistent grid (auto: its residency)")                 \
    X(convolve2d_warps, PAIR, "auto", "auto|WXxWY",                                                                    \
      "the tiled convolve2d kernels' block shape in warps across x down (auto: the cheapest the planner finds)")       \
    X(convolve2d_kernel_block, PAIR, "auto", "auto|ROWSxCOLS",                                                         \
      "caps the tiled convolve2d kernels' kernel blocks (auto: 256x256), to exercise kernel blocking")                 \
    X(convolve2d_split, NUMBER, "auto", "auto|off|all|0..1048576",                                                     \
      "the fixed-width convolve2d kernel's whole-tile rows: off whole tiles only, all thin tiles only, N tile rows "   \
      "of whole tiles then thin ones")                                                                                 \
    X(convolve2d_stage, CHOICE, "auto", "auto|general",                                                                \
      "general stages every tile of the fixed-width convolve2d kernel through the boundary rule (no vector copies)")   \
    X(convolve2d_persist, BOOL, "1", "0|1",                                                                            \
      "CUDA f32 convolve2d plans of 2x2 warps run as persistent blocks; 0 launches a block per tile")                  \
    X(convolve2d_grid, NUMBER, "auto", "auto|tiles|1..2147483647",                                                     \
      "blocks of the persistent convolve2d kernel: auto as many as reside at once, tiles one per tile, or N")          \
    X(convolve2d_separable, CHOICE, "auto", "auto|two-pass",                                                           \
      "two-pass runs convolve2d_separable's two launches where the fused kernel would run (factors <= 16 taps)")       \
    X(background_interp_groups, NUMBER, "auto", "auto|1..65535",                                                       \
      "the most work-groups down the grid of background's interpolation (auto: what the device allows, 65535 on "      \
      "NVIDIA's); beyond it their rows stride by the grid's height; small values test the stride")                     \
    X(extract_threads, NUMBER, "auto", "auto|1..1024",                                                                 \
      "host threads of extract's catalogue steps, and on the CPU backend of its pixel steps (auto: the CPUs the "      \
      "process may run on); the catalogue is the same for any number")                                                 \
    X(extract_group, CHOICE, "auto", "auto|device|host",                                                               \
      "where extract groups its pixel records by component on CUDA and OpenCL: auto on GPUs' device (a radix sort) "   \
      "and on CPU OpenCL devices by the host's threads, which are faster there; where the device groups, "             \
      "extract_host's bands also finish their components on it; the catalogue is the same")                            \
    X(extract_chain, NUMBER, "auto", "auto|0..1048576",                                                                \
      "where the device groups extract's records, it also finds the components of up to this many pixels that "        \
      "deblending cannot split, their pixels' order in SEP's scan and their objects' measures, which the host then "   \
      "takes as they are (auto: 256; 0: the host deblends and measures every component); the catalogue is the same")   \
    X(extract_slab_pixels, NUMBER, "auto", "auto|1..2147483647",                                                       \
      "the most pixels gpuws_extract works on at once on device buffers (auto: 2^31 - 1, its records' 31-bit "         \
      "indices); a larger image goes through the device in bands of whole rows, as gpuws_extract_host's, copied "      \
      "from the caller's buffers on the device; the catalogue is the same; small values test the bands")               \
    X(extract_chain_check, BOOL, "0", "0|1",                                                                           \
      "a test: the host deblends and measures the components chained on the device too, and counts those whose "       \
      "object, pixel order or measures differ (test_extract reads the count)")                                         \
    X(extract_clean, CHOICE, "auto", "auto|device|host|unsure",                                                        \
      "where extract's cleaning works out which pairs of objects act, on CUDA and OpenCL: auto on GPUs' device from "  \
      "4096 objects, device on any device from one object, host on the host's threads, unsure as device but every "    \
      "pair whose test takes a power is left to the host's (a test); the catalogue is the same")                       \
    X(extract_clean_most, NUMBER, "auto", "auto|0..1024",                                                              \
      "the most pairs an object takes from the device where it cleans (auto: 64); an object with more is searched "    \
      "again on the host; small values test that search")                                                              \
    X(find_sources_host_threads, NUMBER, "auto", "auto|1..1024",                                                       \
      "host threads of find_sources_host's threshold and measurement (auto: the CPUs the process may run on); the "    \
      "same catalogue")                                                                                                \
    X(histogram_chunk, NUMBER, "auto", "auto|4..2147483644",                                                           \
      "values per histogram counting launch (auto: 2^31), a multiple of 4; small values test the multi-chunk path")    \
    X(histogram_host_edges, BOOL, "0", "0|1", "1 computes histogram's bin edges on the host (the no-fp64 path)")       \
    X(label_host_passes, CHOICE, "auto", "auto|one|two",                                                               \
      "how label_host labels an image in bands: two passes (label each band for its borders, number, label it "        \
      "again: auto on GPUs) or one (keep each band's labels in the output and map them in place once numbered: auto "  \
      "on CPU devices, where labelling costs more than the map); the same labels")                                     \
    X(label_slab_pixels, NUMBER, "auto", "auto|1..2147483647",                                                         \
      "the most pixels label labels at once in device memory (auto: 2^31 - 1, its int32 indices); more go in slabs "   \
      "of whole rows, joined at their borders; small values test the slabs")                                           \
    X(l2_norm_kernel, CHOICE, "auto", "auto|rows|group",                                                               \
      "l2_norm: one work-item per row (rows) or a work-group per row (group); auto picks by device and row length")    \
    X(matmul_tile, CHOICE, "auto", "auto|large|small",                                                                 \
      "matmul on OpenCL: the GPUs' (large) or the CPU devices' (small) tile shape")                                    \
    X(measure_groups, NUMBER, "auto", "auto|1..65535",                                                                 \
      "at most this many work-groups for measure's accumulation (fewer than tiles: the GPUs' tile loop)")              \
    X(measure_wide_peak, BOOL, "0", "0|1",                                                                             \
      "1 runs measure's path for more than 2^32 pixels (the peak's first pixel in a second pass) on any image")        \
    X(reduce_f32_acc, CHOICE, "auto", "auto|float",                                                                    \
      "float forces the f32 sum's compensated float accumulation (the no-fp64 path) on OpenCL")                        \
    X(sigma_clip_groups, NUMBER, "auto", "auto|1..65535",                                                              \
      "sigma_clip's work-groups (many: the GPUs' many-partials path on a CPU device)")                                 \
    X(staging_keep_mib, NUMBER, "auto", "auto|0..1048576",                                                             \
      "pinned staging the _host calls keep with the context for its next call, MiB (auto: 512, none on CPU devices)")  \
    X(staged_copy_mib, NUMBER, "auto", "auto|0..1048576",                                                              \
      "buffer writes and reads of pageable host memory on a GPU go through pinned blocks that several threads "        \
      "fill: auto from 128 MiB (blocks of 8 MiB below 1 GiB until the context keeps 64 MiB ones); 0 never; N from N "  \
      "MiB in blocks of up to N MiB, on any device")                                                                   \
    X(opencl_events, CHOICE, "auto", "auto|marker|kernel",                                                             \
      "OpenCL events recorded as profiling markers or as one-work-item kernels (auto: markers where the platform "     \
      "gives them times); read when the context is created")                                                           \
    X(opencl_profile, BOOL, "0", "0|1",                                                                                \
      "1: every OpenCL launch and fill waits for its command and prints its device time to stderr (serialises "        \
      "the queue)")                                                                                                    \
    X(fits_in_process, BOOL, "0", "0|1",                                                                               \
      "the CLI reads FITS files in its own process instead of a child (fuzzing cfitsio, debuggers)")                   \
    X(mpi_rows_to_root, BOOL, "0", "0|1",                                                                              \
      "gpuws sources under MPI: every rank but 0 sends its rows of the maps to rank 0 to write, as a rank on another " \
      "host than the staged file does (tests)")

/* The words of the CHOICE and NUMBER knobs, in the order of their `values`. */
enum { GPUWS__PATH_AUTO, GPUWS__PATH_TILED, GPUWS__PATH_DIRECT };
enum { GPUWS__STAGE_AUTO, GPUWS__STAGE_GENERAL };
enum { GPUWS__SEPARABLE_AUTO, GPUWS__SEPARABLE_TWO_PASS };
enum { GPUWS__L2_AUTO, GPUWS__L2_ROWS, GPUWS__L2_GROUP };
enum { GPUWS__MATMUL_AUTO, GPUWS__MATMUL_LARGE, GPUWS__MATMUL_SMALL };
enum { GPUWS__REDUCE_ACC_AUTO, GPUWS__REDUCE_ACC_FLOAT };
enum { GPUWS__EVENTS_AUTO, GPUWS__EVENTS_MARKER, GPUWS__EVENTS_KERNEL };
enum { GPUWS__GROUP_AUTO, GPUWS__GROUP_DEVICE, GPUWS__GROUP_HOST };
enum { GPUWS__CLEAN_AUTO, GPUWS__CLEAN_DEVICE, GPUWS__CLEAN_HOST, GPUWS__CLEAN_UNSURE };
enum { GPUWS__PASSES_AUTO, GPUWS__PASSES_ONE, GPUWS__PASSES_TWO };
#define GPUWS__NUMBER_AUTO (-1) /* every NUMBER knob's first word */
#define GPUWS__SPLIT_OFF   (-2) /* convolve2d_split=off */
#define GPUWS__SPLIT_ALL   (-3) /* convolve2d_split=all */
#define GPUWS__GRID_TILES  (-2) /* convolve2d_grid=tiles */

#define GPUWS__TUNING_FIELD(name, type, def, values, doc) GPUWS__TUNING_FIELD_##type(name)
#define GPUWS__TUNING_FIELD_PUBLIC(name)
#define GPUWS__TUNING_FIELD_BOOL(name)   bool name;
#define GPUWS__TUNING_FIELD_CHOICE(name) int name;
#define GPUWS__TUNING_FIELD_NUMBER(name) int64_t name;
#define GPUWS__TUNING_FIELD_PAIR(name)   int name[2];
typedef struct {
    GPUWS__TUNING(GPUWS__TUNING_FIELD)
} gpuws__tuning;

/* The defaults, then GPUWS_TUNING's entries over them; each bad entry is ignored with a warning (the first parse in
 * a process warns; later ones, of the same variable, stay quiet). */
void gpuws__tuning_from_env(gpuws__tuning *t);
/* Sets one knob of the context (tests): GPUWS_ERR_INVALID_ARGUMENT, naming the accepted values, for an unknown name
 * or a bad value. value NULL: the knob's default; name NULL (value NULL): every knob's default. A knob read when the
 * context is created (opencl_events) keeps the value it had then. */
gpuws_status gpuws__tuning_set(gpuws_context *ctx, const char *name, const char *value);

/* The list, for printing (gpuws tuning). */
typedef struct {
    const char *name, *type, *def, *values, *doc;
    bool is_public;
} gpuws__tuning_entry;
size_t gpuws__tuning_count(void);
const gpuws__tuning_entry *gpuws__tuning_get(size_t i);
/* The value knob `name` has in t, formatted as GPUWS_TUNING takes it; false for an unknown or public name. */
bool gpuws__tuning_format(const gpuws__tuning *t, const char *name, char *buf, size_t size);

#endif
