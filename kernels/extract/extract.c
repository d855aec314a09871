/* Host driver for gpuws_extract: validation; then the device steps, on the CPU backend by the reference
 * (extract_ref.c) and on GPUs by the kernels below; then the host steps (extract_objects.c), which every backend
 * shares, and the segmentation map.
 *
 * GPU plan (extract.cu / extract.cl):
 *   extract_prep     per pixel: d = image - back (0 where masked), σ (SEP's noise buffer after its mask)
 *   extract_detect   per pixel: the filtered value and the threshold test (det = 0/1)
 *   extract_count    per chunk of EX_CHUNK raster-consecutive pixels: its detected pixels (= labelled pixels)
 *   label_scan       label's exclusive scan of the chunk counts; the total, the number of records, after them
 *   gpuws_label      components of det (8- or 4-connectivity)
 *   extract_scatter  per chunk: the records (index, value, filtered value, σ, σ of the lower-right neighbour,
 *                    label) of its labelled pixels, in raster order from the chunk's offset
 *   extract_sort_*   the records grouped by label, raster order kept within each label (extract_gpu_group)
 *   extract_chain_*  the components that deblending cannot split, their records in SEP's scan order, and their
 *                    objects' thresholds and measures (extract_chain.h), which the host takes as they are
 *   extract_compact_* the records of the components the host works on (neither measured on the device nor below
 *                    minarea), copied together for the host's read (extract_chain.h)
 *   extract_segmap   per record read: segmap[index] = its object + 1 (after a fill with 0); extract_segmap_labels
 *                    the same for the measured objects' records, from their labels' numbers
 *   extract_clean_*  in the host steps' cleaning, per object packed by the host: its cell in the grid, then its
 *                    pairs that act, counted, scanned and written (extract_clean.c, extract_clean.h)
 * The call blocks: the catalogue is made on the host from the records read back, in raster order, and their
 * grouping; the objects of the records go back to the device as they are, in that order. */
#include "../common/driver.h"
#include "../../core/options.h"
#include "../../core/threads.h"
#include "extract_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract_pixel.h" /* after <math.h>: it includes nothing */
#include "extract_chain.h"
#include "extract_clean.h"

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_maps = { "extract.maps" };
static const gpuws__stream_key key_det = { "extract.det" };
static const gpuws__stream_key key_labels = { "extract.labels" };
static const gpuws__stream_key key_kern = { "extract.kern" };
static const gpuws__stream_key key_counts = { "extract.counts" };
static const gpuws__stream_key key_records = { "extract.records" };
static const gpuws__stream_key key_objects = { "extract.objects" };
static const gpuws__stream_key key_calls = { "extract.calls" };
static const gpuws__stream_key key_chain[8] = { { "extract.chain" },       { "extract.chain.next" },
                                                { "extract.chain.ints" },  { "extract.chain.bytes" },
                                                { "extract.chain.lmax" },  { "extract.chain.list" },
                                                { "extract.chain.taken" }, { "extract.chain.measures" } };
static const gpuws__stream_key key_compact[4] = {
    { "extract.compact.need" }, { "extract.compact.records" }, { "extract.compact.group" }, { "extract.compact.lobj" }
};
static const gpuws__stream_key key_sort[5] = { { "extract.sort.keys0" },
                                               { "extract.sort.keys1" },
                                               { "extract.sort.vals0" },
                                               { "extract.sort.vals1" },
                                               { "extract.sort.hist" } };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The records grouped by label on the device, raster order kept within each label: a stable LSD radix sort of
 * (label, record number) pairs over the bits that nl needs, EX_SORT_BITS a pass (each pass: count the digits of
 * each tile, label_scan the counts in digit-major order, scatter), then each label's first place. *out: the cnt
 * record numbers, then start[0 .. nl]. This is the host steps' first step done by the device (a counting sort on the
 * host's threads there: extract_objects.c), and what the host then reads back besides the records is 4 bytes a
 * record. */
static gpuws_status extract_gpu_group(gpuws_stream *s, gpuws_kernel *kscan, uint32_t sblock, gpuws_buffer *rec,
                                      size_t cnt, size_t nl, gpuws_buffer **out)
{
    const size_t ntiles = (cnt + EX_SORT_TILE - 1) / EX_SORT_TILE, nh = EX_SORT_DIGITS * ntiles;
    unsigned bits = 0;
    while (bits < 32 && (nl >> bits)) bits++;
    const unsigned passes = bits ? (bits + EX_SORT_BITS - 1) / EX_SORT_BITS : 1;
    gpuws_buffer *keys[2], *vals[2], *hist;
    gpuws_status st;
    if ((st = gpuws__stream_scratch(s, &key_sort[0], cnt * sizeof(uint32_t), &keys[0])) ||
        (st = gpuws__stream_scratch(s, &key_sort[1], cnt * sizeof(uint32_t), &keys[1])) ||
        (st = gpuws__stream_scratch(s, &key_sort[2], cnt * sizeof(uint32_t), &vals[0])) ||
        (st = gpuws__stream_scratch(s, &key_sort[3], (cnt + nl + 1) * sizeof(uint32_t), &vals[1])) ||
        (st = gpuws__stream_scratch(s, &key_sort[4], (nh + 1) * sizeof(int32_t), &hist)))
        return st;
    const gpuws_launch_config c_tiles = { { (uint32_t)ntiles, 1, 1 }, { EX_SORT_THREADS, 1, 1 } };
    const gpuws_launch_config c_scan = { { 1, 1, 1 }, { sblock, 1, 1 } };
    const gpuws_arg a_scan[] = { gpuws_arg_buffer(hist), gpuws_arg_u32((uint32_t)nh) };
    for (unsigned k = 0; k < passes && !st; k++) {
        const unsigned to = (passes - 1 - k) % 2 == 0; /* the last pass writes keys[1] and vals[1] */
        gpuws_buffer *kin = k ? keys[!to] : rec, *vin = k ? vals[!to] : rec;
        const uint64_t koff = k ? 0 : 5 * (uint64_t)cnt; /* the first pass's keys: the records' labels */
        const uint32_t shift = k * EX_SORT_BITS;
        const gpuws_arg a_count[] = { gpuws_arg_buffer(kin), gpuws_arg_u64(koff),    gpuws_arg_u64(cnt),
                                      gpuws_arg_u32(shift),  gpuws_arg_buffer(hist), gpuws_arg_u32((uint32_t)ntiles) };
        const gpuws_arg a_scatter[] = { gpuws_arg_buffer(kin),      gpuws_arg_u64(koff),
                                        gpuws_arg_buffer(vin),      gpuws_arg_u32(k == 0),
                                        gpuws_arg_u64(cnt),         gpuws_arg_u32(shift),
                                        gpuws_arg_buffer(hist),     gpuws_arg_u32((uint32_t)ntiles),
                                        gpuws_arg_buffer(keys[to]), gpuws_arg_buffer(vals[to]) };
        if (!(st = gpuws__launch_named(s, "extract_sort_count", NULL, &c_tiles, a_count, GPUWS__NARGS(a_count))) &&
            !(st = gpuws_launch(s, kscan, &c_scan, a_scan, GPUWS__NARGS(a_scan))))
            st = gpuws__launch_named(s, "extract_sort_scatter", NULL, &c_tiles, a_scatter, GPUWS__NARGS(a_scatter));
    }
    const gpuws_launch_config c1 =
        gpuws__config_1d(cnt, 256, gpuws__is_cpu_device(s->ctx) ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_arg a_starts[] = { gpuws_arg_buffer(keys[1]), gpuws_arg_u64(cnt), gpuws_arg_buffer(vals[1]),
                                   gpuws_arg_u64(cnt) };
    if (!st) st = gpuws__launch_named(s, "extract_sort_starts", NULL, &c1, a_starts, GPUWS__NARGS(a_starts));
    *out = vals[1];
    return st;
}

/* The number of chained components' slots taken (*taken, the counter of extract_chain_measure), copied after the
 * chained grouping's words in out for the host's read of it. A kernel reads out no more after it: Oclgrind's
 * uninitialised-value check (21.10) takes a buffer copied into at a nonzero offset as uninitialised everywhere. */
static gpuws_status chain_count_copy(gpuws_stream *s, gpuws_buffer *out, size_t cnt, size_t nl)
{
    gpuws_buffer *taken;
    gpuws_status st = gpuws__stream_scratch(s, &key_chain[6], sizeof(uint32_t), &taken);
    return st ? st
              : gpuws_buffer_copy_async(s, out, (cnt + 2 * (nl + 1)) * sizeof(uint32_t), taken, 0, sizeof(uint32_t));
}

/* Where the device refused a scratch buffer (GPUWS_ERR_OUT_OF_MEMORY with no host allocation failed since
 * host_failures was read) the call goes on without the step: GPUWS_OK, and the fallback counted for the fault tests. */
static gpuws_status fall_back_or_fail(gpuws_status st, unsigned long host_failures)
{
    if (st != GPUWS_ERR_OUT_OF_MEMORY || gpuws__host_alloc_failures() != host_failures) return st;
    gpuws__device_fallback();
    return GPUWS_OK;
}

/* The components that deblending cannot split, chained on the device (extract_chain.h): from the grouping (record
 * numbers, start[0 .. nl]) to *out, the same with those components' records in chain order and their starts marked,
 * then each label's word (the threshold, or a chained one's slot in *mom); the number of slots taken follows where
 * the host reads *out itself (chain_count_copy). Where the device has no memory for the scratch (about 44 bytes a record and EX_MOM_DOUBLES
 * doubles a possible component), nothing is chained and *out stays the grouping: the host deblends every component,
 * as it can. A host allocation that fails meanwhile (a buffer's handle) is the call's failure. */
static gpuws_status extract_gpu_chain(gpuws_stream *s, const gpuws__extract_params *p, gpuws_buffer *grouped,
                                      gpuws_buffer *rec, gpuws_buffer *labels, gpuws_buffer *maps, size_t cnt,
                                      size_t nl, size_t most, const uint64_t border[2], gpuws_buffer **out,
                                      gpuws_buffer **mom)
{
    *out = grouped;
    const size_t room = EX_CHAIN_ROOM(cnt, nl), ngroup = cnt + 2 * (nl + 1) + 1;
    const size_t per = p->minarea > 1 ? (size_t)p->minarea : 1, slots = nl < cnt / per ? nl : cnt / per;
    gpuws_buffer *chained, *nx, *ints, *bytes, *lmax, *list, *taken;
    const unsigned long host_failures = gpuws__host_alloc_failures();
    gpuws_status st;
    if ((st = gpuws__stream_scratch(s, &key_chain[0], ngroup * sizeof(uint32_t), &chained)) ||
        (st = gpuws__stream_scratch(s, &key_chain[1], cnt * sizeof(int32_t), &nx)) ||
        (st = gpuws__stream_scratch(s, &key_chain[2], 8 * room * sizeof(int32_t), &ints)) ||
        (st = gpuws__stream_scratch(s, &key_chain[3], 3 * room, &bytes)) ||
        (st = gpuws__stream_scratch(s, &key_chain[4], cnt, &lmax)) ||
        (st = gpuws__stream_scratch(s, &key_chain[5], (nl + 1) * sizeof(uint32_t), &list)) ||
        (st = gpuws__stream_scratch(s, &key_chain[6], sizeof(uint32_t), &taken)) ||
        (st = gpuws__stream_scratch(s, &key_chain[7], (slots ? slots : 1) * EX_MOM_DOUBLES * sizeof(double), mom)))
        return fall_back_or_fail(st, host_failures);
    *out = chained;
    const bool cpu = gpuws__is_cpu_device(s->ctx);
    const gpuws_launch_config c_rec =
        gpuws__config_1d(cnt, 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_launch_config c_lab = gpuws__config_1d(nl, 64, cpu ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 16));
    const gpuws_arg a_max[] = { gpuws_arg_buffer(rec),         gpuws_arg_buffer(rec),  gpuws_arg_u64(cnt),
                                gpuws_arg_buffer(labels),      gpuws_arg_buffer(maps), gpuws_arg_u32((uint32_t)p->w),
                                gpuws_arg_u32((uint32_t)p->h), gpuws_arg_buffer(lmax), gpuws_arg_buffer(list),
                                gpuws_arg_buffer(taken) };
    const gpuws_arg a_list[] = { gpuws_arg_buffer(grouped), gpuws_arg_u64(cnt),
                                 gpuws_arg_u64(nl),         gpuws_arg_u32((uint32_t)p->minarea),
                                 gpuws_arg_u64(most),       gpuws_arg_buffer(rec),
                                 gpuws_arg_u64(border[0]),  gpuws_arg_u64(border[1]),
                                 gpuws_arg_buffer(list) };
    const gpuws_arg a_copy[] = { gpuws_arg_buffer(grouped), gpuws_arg_u64(ngroup - 1), gpuws_arg_u64(cnt),
                                 gpuws_arg_u64(nl), gpuws_arg_buffer(*out) };
    const gpuws_launch_config c_copy =
        gpuws__config_1d(ngroup - 1, 256, cpu ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8));
    const gpuws_arg a_chain[] = { gpuws_arg_buffer(grouped),
                                  gpuws_arg_u64(cnt),
                                  gpuws_arg_u64(nl),
                                  gpuws_arg_buffer(rec),
                                  gpuws_arg_buffer(rec),
                                  gpuws_arg_u64(cnt),
                                  gpuws_arg_buffer(lmax),
                                  gpuws_arg_u32((uint32_t)p->w),
                                  gpuws_arg_u32((uint32_t)p->deblend_nthresh),
                                  gpuws_arg_u32((uint32_t)p->noise),
                                  gpuws_arg_f32(p->thresh),
                                  gpuws_arg_f32(p->relthresh),
                                  gpuws_arg_u32(p->sep_version == GPUWS_SEP_1_2),
                                  gpuws_arg_buffer(list),
                                  gpuws_arg_buffer(*out),
                                  gpuws_arg_buffer(nx),
                                  gpuws_arg_buffer(ints),
                                  gpuws_arg_buffer(bytes) };
    const gpuws_arg a_measure[] = { gpuws_arg_buffer(grouped),
                                    gpuws_arg_u64(cnt),
                                    gpuws_arg_u64(nl),
                                    gpuws_arg_buffer(rec),
                                    gpuws_arg_buffer(rec),
                                    gpuws_arg_u64(cnt),
                                    gpuws_arg_u32((uint32_t)p->w),
                                    gpuws_arg_u32((uint32_t)p->noise),
                                    gpuws_arg_f32(p->thresh),
                                    gpuws_arg_f32(p->relthresh),
                                    gpuws_arg_f64(p->gain),
                                    gpuws_arg_u32((uint32_t)p->minarea),
                                    gpuws_arg_buffer(list),
                                    gpuws_arg_buffer(*out),
                                    gpuws_arg_buffer(taken),
                                    gpuws_arg_buffer(*mom) };
    if ((st = gpuws__launch_named(s, "extract_chain_copy", NULL, &c_copy, a_copy, GPUWS__NARGS(a_copy))) ||
        (st = gpuws__launch_named(s, "extract_chain_maxima", NULL, &c_rec, a_max, GPUWS__NARGS(a_max))) ||
        (st = gpuws__launch_named(s, "extract_chain_list", NULL, &c_lab, a_list, GPUWS__NARGS(a_list))) ||
        (st = gpuws__launch_named(s, "extract_chain", NULL, &c_lab, a_chain, GPUWS__NARGS(a_chain))) ||
        (st = gpuws__launch_named(s, "extract_chain_measure", NULL, &c_lab, a_measure, GPUWS__NARGS(a_measure))))
        return st;
    return GPUWS_OK;
}

/* What the host reads of the chained grouping (extract_chain.h, "what the host reads"): the records of the
 * components it works on, nread arrays of *m records in the grouping's order (*compact), and that grouping
 * (*cgroup: start[0 .. nl] in those records, with the chain bits, the labels' words, the slots taken). The measured
 * components, most of them, and those below minarea leave their records on the device: on a synthetic 8192^2
 * sky about a sixth of them is read. Where the device has no room for the copy, *compact stays NULL and the host
 * reads every record, as it can. */
static gpuws_status extract_gpu_compact(gpuws_stream *s, const gpuws__extract_params *p, gpuws_kernel *kscan,
                                        uint32_t sblock, gpuws_buffer *chained, gpuws_buffer *rec, gpuws_buffer *mom,
                                        size_t cnt, size_t nl, size_t nread, const uint64_t border[2],
                                        gpuws_buffer **compact, gpuws_buffer **cgroup, size_t *m)
{
    *compact = NULL;
    gpuws_buffer *need, *cr, *cg, *taken;
    const unsigned long host_failures = gpuws__host_alloc_failures();
    gpuws_status st;
    if ((st = gpuws__stream_scratch(s, &key_chain[6], sizeof(uint32_t), &taken))) return st; /* extract_gpu_chain's */
    if ((st = gpuws__stream_scratch(s, &key_compact[0], (nl + 1) * sizeof(int32_t), &need)) ||
        (st = gpuws__stream_scratch(s, &key_compact[1], nread * cnt * sizeof(uint32_t), &cr)) ||
        (st = gpuws__stream_scratch(s, &key_compact[2], (2 * nl + 3) * sizeof(uint32_t), &cg)))
        return fall_back_or_fail(st, host_failures);
    const bool cpu = gpuws__is_cpu_device(s->ctx);
    const uint32_t blocks = cpu ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8);
    const gpuws_launch_config c_lab = gpuws__config_1d(nl, 256, blocks), c_rec = gpuws__config_1d(cnt, 256, blocks);
    const gpuws_launch_config c_grp = gpuws__config_1d(2 * nl + 3, 256, blocks);
    const gpuws_launch_config c_scan = { { 1, 1, 1 }, { sblock, 1, 1 } };
    const gpuws_arg a_need[] = { gpuws_arg_buffer(chained),
                                 gpuws_arg_u64(cnt),
                                 gpuws_arg_u64(nl),
                                 gpuws_arg_buffer(mom),
                                 gpuws_arg_u32((uint32_t)p->minarea),
                                 gpuws_arg_buffer(rec),
                                 gpuws_arg_u64(border[0]),
                                 gpuws_arg_u64(border[1]),
                                 gpuws_arg_buffer(need) };
    const gpuws_arg a_scan[] = { gpuws_arg_buffer(need), gpuws_arg_u32((uint32_t)nl) };
    const gpuws_arg a_place[] = { gpuws_arg_buffer(chained),      gpuws_arg_u64(cnt),  gpuws_arg_u64(nl),
                                  gpuws_arg_buffer(rec),          gpuws_arg_u64(cnt),  gpuws_arg_buffer(need),
                                  gpuws_arg_u32((uint32_t)nread), gpuws_arg_buffer(cr) };
    const gpuws_arg a_group[] = { gpuws_arg_buffer(chained), gpuws_arg_u64(cnt),      gpuws_arg_u64(nl),
                                  gpuws_arg_buffer(need),    gpuws_arg_buffer(taken), gpuws_arg_buffer(cg) };
    int32_t total = 0;
    if ((st = gpuws__launch_named(s, "extract_compact_need", NULL, &c_lab, a_need, GPUWS__NARGS(a_need))) ||
        (st = gpuws_launch(s, kscan, &c_scan, a_scan, GPUWS__NARGS(a_scan))) ||
        (st = gpuws__launch_named(s, "extract_compact_place", NULL, &c_rec, a_place, GPUWS__NARGS(a_place))) ||
        (st = gpuws__launch_named(s, "extract_compact_group", NULL, &c_grp, a_group, GPUWS__NARGS(a_group))) ||
        (st = gpuws__buffer_read_sync(s, need, nl * sizeof(int32_t), &total, sizeof total)))
        return st;
    *compact = cr, *cgroup = cg, *m = (size_t)total;
    return GPUWS_OK;
}

/* The device bytes that extract_gpu_group, extract_gpu_chain and extract_gpu_compact take for cnt records of nl
 * components, nread arrays of them read: a band's, which gpuws_extract_host's budget did not count (the in-core call's
 * counts them: EX_IN_CORE_BYTES there). */
static uint64_t compact_bytes(uint64_t cnt, uint64_t nl, int minarea, uint64_t nread)
{
    const uint64_t tiles = (cnt + EX_SORT_TILE - 1) / EX_SORT_TILE, room = EX_CHAIN_ROOM(cnt, nl);
    const uint64_t per = minarea > 1 ? (uint64_t)minarea : 1, slots = nl < cnt / per ? nl : cnt / per;
    const uint64_t sort = 4 * (4 * cnt + nl + 1 + EX_SORT_DIGITS * tiles + 1);
    const uint64_t chain =
        4 * (2 * cnt + 3 * (nl + 1) + 2) + 35 * room + cnt + EX_MOM_DOUBLES * sizeof(double) * (slots ? slots : 1);
    return sort + chain + 4 * (nl + 1) + 4 * nread * cnt + 4 * (2 * nl + 3);
}

/* Host memory for cnt records and ngroup words of their grouping after them, nread arrays of the records read
 * back. A GPU driver copies out to pageable memory through buffers of its own on one thread, several times slower
 * than the bus from pinned memory, and the fresh pages must be mapped too; but pinning costs more than one read
 * saves (staged.c). So a stream's first extraction takes gpuws__malloc'd pages, mapped on threads, and from its
 * second on (many images, a benchmark) the records go to pinned memory kept with the context for the next call
 * (gpuws__staging_take / _give). */
static gpuws_status records_host(gpuws_stream *s, size_t cnt, size_t ngroup, size_t nread, gpuws__extract_pixels *px)
{
    gpuws_context *ctx = s->ctx;
    const size_t bytes = (6 * (cnt ? cnt : 1) + ngroup) * sizeof(uint32_t);
    unsigned *calls;
    gpuws_status st;
    if (ctx->info.type == GPUWS_DEVICE_GPU && !ctx->info.unified_memory) {
        if ((st = gpuws__stream_memo(s, &key_calls, sizeof *calls, (void **)&calls))) return st;
        void *p;
        size_t got;
        if ((*calls)++ && !gpuws__staging_take(ctx, bytes, &p, &got)) { /* else pageable, as on the first call */
            gpuws__extract_pixels_place(px, cnt, p);
            px->group = ngroup ? (uint32_t *)p + 6 * (cnt ? cnt : 1) : NULL;
            px->kept = got;
            return GPUWS_OK;
        }
    }
    if (!gpuws__extract_pixels_alloc(px, cnt) || (ngroup && !(px->group = gpuws__malloc(ngroup * sizeof *px->group)))) {
        gpuws__extract_pixels_free(px);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for %zu pixel records (%zu bytes)", cnt,
                            bytes);
    }
    gpuws__prefault(px->idx, nread * cnt * sizeof(float));
    if (ngroup) gpuws__prefault(px->group, ngroup * sizeof *px->group);
    return GPUWS_OK;
}

/* The chained components' measures (extract_chain.h), n slots of mom, into px->mom: pinned memory kept with the
 * context where the records took such (records_host says why), else pages mapped on threads first. */
static gpuws_status measures_read(gpuws_stream *s, gpuws_buffer *mom, size_t n, gpuws__extract_pixels *px)
{
    const size_t bytes = n * EX_MOM_DOUBLES * sizeof(double);
    void *p;
    if (!n) return GPUWS_OK;
    if (px->kept && !gpuws__staging_take(s->ctx, bytes, &p, &px->mom_kept)) {
        px->mom = p;
    } else {
        if (!(px->mom = gpuws__malloc(bytes)))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "extract: no host memory for the measures of %zu objects (%zu bytes)", n, bytes);
        gpuws__prefault(px->mom, bytes);
    }
    px->nmom = n;
    return gpuws__buffer_read_sync(s, mom, 0, px->mom, bytes);
}

/* Gives px's memory back: pinned memory to the context for the next call (freed instead after a failed read, which
 * the device may still be writing), else to the heap. */
static void records_release(gpuws_context *ctx, gpuws__extract_pixels *px, bool failed)
{
    if (px->mom_kept && failed) gpuws_host_free(ctx, px->mom);
    else if (px->mom_kept) gpuws__staging_give(ctx, px->mom, px->mom_kept);
    else gpuws__free(px->mom);
    px->mom = NULL, px->mom_kept = 0;
    if (!px->kept) {
        gpuws__extract_pixels_free(px);
        return;
    }
    if (failed) gpuws_host_free(ctx, px->idx);
    else gpuws__staging_give(ctx, px->idx, px->kept);
    memset(px, 0, sizeof *px);
}

/* A band's halo rows (those outside p->own0 .. p->own1 - 1) left undetected: their pixels are the next band's or
 * the last one's, and their filtered values lack rows outside the band. */
static gpuws_status halo_undetected(gpuws_stream *s, gpuws_buffer *det, const gpuws__extract_params *p)
{
    static const unsigned char zero = 0; /* the fills may read it after the call */
    gpuws_status st = p->own0 ? gpuws_buffer_fill_async(s, det, 0, &zero, 1, p->own0 * p->w) : GPUWS_OK;
    if (!st && p->own1 < p->h) st = gpuws_buffer_fill_async(s, det, p->own1 * p->w, &zero, 1, (p->h - p->own1) * p->w);
    return st;
}

/* The device steps on a GPU backend, into *px (raster order, or with px->compact the host's records only);
 * *records: the device's copy of every record (six arrays of px->all words), and *compact of those read back where
 * px->compact, which the segmentation map uses. */
static gpuws_status extract_gpu_pixels(gpuws_stream *s, const gpuws__extract_params *p, const gpuws_buffer *image,
                                       const gpuws_extract_options *o, const gpuws__records_sink *band_sink,
                                       bool band_compact, gpuws__extract_pixels *px, gpuws_buffer **records,
                                       gpuws_buffer **compact)
{
    *compact = NULL;
    gpuws_context *ctx = s->ctx;
    const size_t w = p->w, h = p->h, n = w * h, nk = p->kern ? (size_t)p->kw * (size_t)p->kh : 1;
    const size_t nchunks = (n + EX_CHUNK - 1) / EX_CHUNK;
    const char *const names[] = { "extract_prep",          "extract_detect",        "extract_count",
                                  "extract_scatter",       "extract_segmap",        "extract_sort_count",
                                  "extract_sort_scatter",  "extract_sort_starts",   "extract_chain_copy",
                                  "extract_chain_maxima",  "extract_chain_list",    "extract_chain",
                                  "extract_chain_measure", "extract_segmap_labels", "extract_compact_need",
                                  "extract_compact_place", "extract_compact_group" };
    gpuws_kernel *k, *kscan;
    uint32_t sblock;
    gpuws_status st = GPUWS_OK;
    for (size_t i = 0; i < GPUWS__NARGS(names) && !st; i++) st = gpuws__kernel_get_ex(ctx, names[i], NULL, &k);
    if (st == GPUWS_ERR_KERNEL_NOT_FOUND)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks",
                            ctx->info.name);
    if (!st) st = gpuws__kernel_block(ctx, "label_scan", NULL, gpuws__is_cpu_device(ctx) ? 256 : 1024, &kscan, &sblock);
    gpuws_buffer *maps, *det, *labels, *kern, *counts;
    /* maps: d, σ, filtered; counts: one a chunk, then the total */
    if (st || (st = gpuws__stream_scratch(s, &key_maps, 3 * n * sizeof(float), &maps)) ||
        (st = gpuws__stream_scratch(s, &key_det, n, &det)) ||
        (st = gpuws__stream_scratch(s, &key_labels, n * sizeof(int32_t), &labels)) ||
        (st = gpuws__stream_scratch(s, &key_kern, nk * sizeof(float), &kern)) ||
        (st = gpuws__stream_scratch(s, &key_counts, (nchunks + 1) * sizeof(int32_t), &counts)))
        return st;
    const float zero = 0.0f;
    const uint32_t cpu = gpuws__is_cpu_device(ctx);
    const uint32_t blocks = cpu ? UINT32_MAX : gpuws__saturating_blocks(ctx, 8);
    const gpuws_launch_config c1 = gpuws__config_1d(n, 256, blocks);
    gpuws_buffer *img = (gpuws_buffer *)image, *back = (gpuws_buffer *)(o->back ? o->back : image),
                 *rms = (gpuws_buffer *)(o->rms ? o->rms : image), *mask = (gpuws_buffer *)(o->mask ? o->mask : image);
    const gpuws_arg a_prep[] = { gpuws_arg_buffer(img),
                                 gpuws_arg_buffer(back),
                                 gpuws_arg_u32(o->back != NULL),
                                 gpuws_arg_buffer(rms),
                                 gpuws_arg_buffer(mask),
                                 gpuws_arg_u32(o->mask != NULL),
                                 gpuws_arg_u64(gpuws__extract_mask_from(p)),
                                 gpuws_arg_u32((uint32_t)p->noise),
                                 gpuws_arg_f32(p->err),
                                 gpuws_arg_u64(n),
                                 gpuws_arg_buffer(maps) };
    const uint32_t tx = 32, ty = cpu ? 1 : 8;
    const gpuws_launch_config c2 = { { (uint32_t)((w + tx - 1) / tx), (uint32_t)((h + ty - 1) / ty), 1 },
                                     { tx, ty, 1 } };
    const gpuws_arg a_det[] = { gpuws_arg_buffer(maps),
                                gpuws_arg_buffer(kern),
                                gpuws_arg_u32((uint32_t)w),
                                gpuws_arg_u32((uint32_t)h),
                                gpuws_arg_u32((uint32_t)p->kw),
                                gpuws_arg_u32((uint32_t)p->kh),
                                gpuws_arg_u32((uint32_t)p->filter),
                                gpuws_arg_u32((uint32_t)p->noise),
                                gpuws_arg_f32(p->thresh),
                                gpuws_arg_buffer(det) };
    const gpuws_launch_config c_chunks = { { (uint32_t)nchunks, 1, 1 }, { EX_CHUNK_THREADS, 1, 1 } };
    const gpuws_launch_config c_scan = { { 1, 1, 1 }, { sblock, 1, 1 } };
    const gpuws_arg a_count[] = { gpuws_arg_buffer(det), gpuws_arg_buffer(counts), gpuws_arg_u64(n) };
    const gpuws_arg a_scan[] = { gpuws_arg_buffer(counts), gpuws_arg_u32((uint32_t)nchunks) };
    size_t nl = 0;
    int32_t total = 0;
    double tm[4]; /* for GPUWS_LOG=debug: the kernels to the count, the host block, the records' read */
    tm[0] = now_ms();
    /* the filter's upload reads p->kern, which outlives this call, or `zero` (no filter), waited for below */
    if (!(st = gpuws_buffer_write_async(s, kern, 0, p->kern ? (const void *)p->kern : &zero, nk * sizeof(float))) &&
        !(st = gpuws__launch_named(s, "extract_prep", NULL, &c1, a_prep, GPUWS__NARGS(a_prep))) &&
        !(st = gpuws__launch_named(s, "extract_detect", NULL, &c2, a_det, GPUWS__NARGS(a_det))) &&
        !(p->own1 && (st = halo_undetected(s, det, p))) &&
        !(st = gpuws__launch_named(s, "extract_count", NULL, &c_chunks, a_count, GPUWS__NARGS(a_count))) &&
        !(st = gpuws_launch(s, kscan, &c_scan, a_scan, GPUWS__NARGS(a_scan))) &&
        !(st = gpuws_label(s, w, h, det, p->connectivity, labels, &nl)))
        st = gpuws__buffer_read_sync(s, counts, nchunks * sizeof(int32_t), &total, sizeof total);
    if (st) {
        gpuws_stream_synchronize(s); /* the upload may still read `zero` */
        return st;
    }
    const size_t cnt = (size_t)total;
    gpuws_buffer *rec;
    tm[1] = now_ms();
    if ((st = gpuws__stream_scratch(s, &key_records, 6 * (cnt ? cnt : 1) * sizeof(float), &rec))) return st;
    /* the arrays the host steps read where the device groups, from the first (the records lie in the struct's
     * order): σ of the lower-right neighbour for SEP 1.2's thresholds with a σ map; σ with any noise */
    const size_t nread_grouped = p->noise == EX_NOISE_MAP && p->sep_version == GPUWS_SEP_1_2 ? 5
                                 : p->noise != EX_NOISE_NONE                                 ? 4
                                                                                             : 3;
    const int64_t most = ctx->tuning.extract_chain < 0 ? EX_CHAIN_AUTO : ctx->tuning.extract_chain;
    /* a band asked to work as in-core does so where the budget has room for it: the six words a pixel that the
     * band's records may take, less those they do */
    band_compact = band_compact && cnt && most > 0 && !p->chain_check &&
                   compact_bytes(cnt, nl, p->minarea, nread_grouped) <= 6 * sizeof(float) * (uint64_t)(n - cnt);
    const gpuws__records_sink *sink = band_compact ? NULL : band_sink;
    /* the grouping read back (record numbers, start[0 .. nl]) where the device groups; the labels then stay there */
    const int knob = ctx->tuning.extract_group;
    const bool group = band_compact || (!sink && (knob == GPUWS__GROUP_DEVICE || (knob == GPUWS__GROUP_AUTO && !cpu)));
    const bool chain = group && most > 0;
    const size_t nread = group ? nread_grouped : 6; /* and the labels where the host groups */
    /* a band's border rows (ex_on_border): its first own row where rows lie above, its last where rows lie below */
    const uint64_t border[2] = { p->own1 && p->own0 ? (p->own0 + 1) * w : 0,
                                 p->own1 && p->own1 < h ? (p->own1 - 1) * w : n };
    const size_t ngroup = cnt && group ? cnt + (chain ? 2 : 1) * (nl + 1) + chain : 0;
    /* with chains the host reads only the records it works on (extract_gpu_compact), and its block waits for their
     * number; the check of the chains (a test's knob) reads every record */
    const bool compactable = chain && !p->chain_check && cnt;
    void *into[6] = { NULL }; /* the sink's arrays */
    if (sink && cnt && !sink->room(sink->user, cnt, into))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for %zu pixel records (%zu bytes)", cnt,
                            6 * cnt * sizeof(uint32_t));
    if (sink) px->n = cnt;
    else if (!compactable && (st = records_host(s, cnt, ngroup, nread, px))) return st;
    px->nl = nl;
    tm[2] = now_ms();
    double block_ms = tm[2] - tm[1]; /* the host block's time (GPUWS_LOG=debug) */
    if (cnt) {
        const gpuws_arg a_sc[] = {
            gpuws_arg_buffer(det),      gpuws_arg_buffer(labels),       gpuws_arg_buffer(maps),
            gpuws_arg_buffer(mask),     gpuws_arg_u32(o->mask != NULL), gpuws_arg_u32((uint32_t)w),
            gpuws_arg_u32((uint32_t)h), gpuws_arg_buffer(counts),       gpuws_arg_u64(cnt),
            gpuws_arg_buffer(rec),      gpuws_arg_buffer(rec)
        };
        /* the six arrays lie one after the other on both sides (gpuws__extract_pixels_alloc); the labels, last,
         * stay on the device where it groups the records */
        gpuws_buffer *grouped = NULL, *chained = NULL, *mom = NULL, *cgroup = NULL;
        size_t m = cnt;
        if (!(st = gpuws__launch_named(s, "extract_scatter", NULL, &c_chunks, a_sc, GPUWS__NARGS(a_sc))) && group &&
            !(st = extract_gpu_group(s, kscan, sblock, rec, cnt, nl, &grouped)) && chain)
            st = extract_gpu_chain(s, p, grouped, rec, labels, maps, cnt, nl, (size_t)most, border, &chained, &mom);
        const bool chained_ok = chain && chained != grouped; /* else the device had no room for it */
        if (!st && compactable && chained_ok)
            st = extract_gpu_compact(s, p, kscan, sblock, chained, rec, mom, cnt, nl, nread, border, compact, &cgroup,
                                     &m);
        if (!st && chained_ok && !*compact) st = chain_count_copy(s, chained, cnt, nl); /* the host reads it whole */
        const size_t mgroup = m + 2 * (nl + 1) + 1; /* the compact records' grouping */
        if (!st && band_compact) {
            /* a band's compact records straight into the sink's arrays, its grouping's words apart; or, where the
             * device had no room for the copy, every record as the sink's bands have them (the chains unused) */
            const size_t take = *compact ? m : cnt;
            if (!band_sink->room(band_sink->user, take, into))
                st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for %zu pixel records (%zu bytes)",
                                  take, 6 * take * sizeof(uint32_t));
            else if (*compact && !(px->group = gpuws__malloc((mgroup - m) * sizeof *px->group)))
                st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                  "extract: no host memory for %zu components' words (%zu bytes)", nl,
                                  (mgroup - m) * sizeof *px->group);
            if (st) {
                gpuws_stream_synchronize(s);
                return st;
            }
            px->n = take;
        } else if (!st && compactable) {
            const double b0 = now_ms();
            st = records_host(s, m, *compact ? mgroup : ngroup, nread, px);
            block_ms = now_ms() - b0;
            if (st) {
                gpuws_stream_synchronize(s);
                return st;
            }
            px->nl = nl;
        }
        px->chained = chained_ok && (!band_compact || *compact);
        px->compact = *compact != NULL;
        px->all = cnt;
        if (st) {
            records_release(ctx, px, true);
            return st;
        }
        if (px->compact && band_compact) {
            for (size_t q = 0; q < nread && m && !st; q++) /* OpenCL refuses a read of nothing */
                st = gpuws__read_kept(s, *compact, q * m * sizeof(float), into[q], m * sizeof(float));
            if (st || (st = gpuws__buffer_read_sync(s, cgroup, 0, px->group, (mgroup - m) * sizeof *px->group))) {
                records_release(ctx, px, true);
                return st;
            }
            const size_t taken = px->group[mgroup - m - 1];
            double *to = taken ? band_sink->moms(band_sink->user, taken) : NULL;
            if (taken && !to) {
                records_release(ctx, px, true);
                return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                    "extract: no host memory for the measures of %zu objects (%zu bytes)", taken,
                                    taken * EX_MOM_DOUBLES * sizeof(double));
            }
            if (taken && (st = gpuws__read_kept(s, mom, 0, to, taken * EX_MOM_DOUBLES * sizeof(double)))) {
                records_release(ctx, px, true);
                return st;
            }
            px->nmom = taken;
        } else if (px->compact) {
            if ((m && (st = gpuws__buffer_read_sync(s, *compact, 0, px->idx, nread * m * sizeof(float)))) ||
                (st = gpuws__buffer_read_sync(s, cgroup, 0, px->group + m, (mgroup - m) * sizeof *px->group))) {
                records_release(ctx, px, true);
                return st;
            }
            for (size_t i = 0; i < m; i++) px->group[i] = (uint32_t)i; /* the compact records are in that order */
        } else if (sink || band_sink) {
            /* each array straight into the sink's, through the staging blocks the band's uploads keep */
            for (size_t q = 0; q < 6 && !st; q++)
                st = gpuws__read_kept(s, rec, q * cnt * sizeof(float), into[q], cnt * sizeof(float));
            if (st) return st;
        } else if ((st = gpuws__buffer_read_sync(s, rec, 0, px->idx, nread * cnt * sizeof(float))) ||
                   (group &&
                    (st = gpuws__buffer_read_sync(s, px->chained ? chained : grouped, 0, px->group,
                                                  (px->chained ? ngroup : cnt + nl + 1) * sizeof *px->group)))) {
            records_release(ctx, px, true);
            return st;
        }
        if (px->chained && !band_compact &&
            (st = measures_read(s, mom, px->group[(px->compact ? mgroup : ngroup) - 1], px))) {
            records_release(ctx, px, true);
            return st;
        }
    }
    tm[3] = now_ms();
    gpuws__log(
        GPUWS__LOG_DEBUG,
        "extract: device steps (ms): kernels and labels to the count %.1f, host block (%s) %.1f, records and their "
        "grouping %.1f (%zu records, %zu of them read, %zu components, %.0f MB read)",
        tm[1] - tm[0], px->kept ? "pinned, kept" : "its pages mapped", block_ms, tm[3] - tm[1] - block_ms, cnt, px->n,
        nl,
        4e-6 * (double)(px->compact ? nread * px->n + 2 * (nl + 1) + 1 : nread * cnt + ngroup) +
            8e-6 * (double)(px->nmom * EX_MOM_DOUBLES));
    *records = rec;
    return GPUWS_OK;
}

/* The segmentation map on a GPU: 0, then each record's object + 1 at its pixel. obj_of and the device's records
 * that px holds (read, as extract_gpu_pixels leaves them: every record, or the compact ones) are in the same order:
 * obj_of goes up as it is, and a kernel writes each record's number at its index; with px->compact a second kernel
 * writes the objects measured on the device over all the records (rec) from their labels' numbers
 * (px->label_obj). obj_of has a buffer of its own, written from its start: Oclgrind's uninitialised-value check
 * (21.10) misses a host write at a nonzero offset and reports a kernel's reads of it. */
static gpuws_status extract_gpu_segmap(gpuws_stream *s, size_t npix, gpuws_buffer *read, gpuws_buffer *rec,
                                       const gpuws__extract_pixels *px, const int32_t *obj_of, gpuws_buffer *segmap)
{
    const int32_t zero = 0;
    const size_t cnt = px->n;
    const uint32_t blocks = gpuws__is_cpu_device(s->ctx) ? UINT32_MAX : gpuws__saturating_blocks(s->ctx, 8);
    gpuws_buffer *obj = NULL, *lobj = NULL;
    gpuws_status st = cnt ? gpuws__stream_scratch(s, &key_objects, cnt * sizeof *obj_of, &obj) : GPUWS_OK;
    if (!st && px->compact) st = gpuws__stream_scratch(s, &key_compact[3], (px->nl + 1) * sizeof *px->label_obj, &lobj);
    if (!st) st = gpuws_buffer_fill_async(s, segmap, 0, &zero, sizeof zero, npix * sizeof(int32_t));
    if (!st && cnt && !(st = gpuws_buffer_write_async(s, obj, 0, obj_of, cnt * sizeof *obj_of))) {
        const gpuws_launch_config c = gpuws__config_1d(cnt, 256, blocks);
        const gpuws_arg a[] = { gpuws_arg_buffer(read), gpuws_arg_buffer(obj), gpuws_arg_u64(cnt),
                                gpuws_arg_buffer(segmap) };
        st = gpuws__launch_named(s, "extract_segmap", NULL, &c, a, GPUWS__NARGS(a));
    }
    if (!st && px->compact &&
        !(st = gpuws_buffer_write_async(s, lobj, 0, px->label_obj, (px->nl + 1) * sizeof *px->label_obj))) {
        const gpuws_launch_config c = gpuws__config_1d(px->all, 256, blocks);
        const gpuws_arg a[] = { gpuws_arg_buffer(rec), gpuws_arg_u64(px->all), gpuws_arg_buffer(lobj),
                                gpuws_arg_buffer(segmap) };
        st = gpuws__launch_named(s, "extract_segmap_labels", NULL, &c, a, GPUWS__NARGS(a));
    }
    const gpuws_status st2 = gpuws_stream_synchronize(s); /* the caller frees obj_of and px->label_obj */
    return st ? st : st2;
}

static gpuws_status bad(const char *fmt, const char *fn, double v)
{
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, fmt, fn, v);
}

gpuws_status gpuws__extract_check(const gpuws_extract_options *o, size_t width, size_t height, bool has_rms,
                                  const char *fn, size_t *npix)
{
    if (width == 0 || height == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: the image is %zu x %zu: no pixels", fn, width, height);
    if (gpuws__mul_overflows(width, height, npix))
        return gpuws__error(GPUWS_ERR_OVERFLOW, "%s: %zu x %zu pixels overflow size_t", fn, width, height);
    const bool relative = has_rms || o->err > 0.0;
    if (!isfinite(o->thresh) || (relative && !(o->thresh > 0.0)))
        return bad("%s: thresh %g is not a finite number (> 0 when relative to the noise)", fn, o->thresh);
    if (!(o->err >= 0.0) || !isfinite(o->err)) return bad("%s: err %g is not a finite number >= 0", fn, o->err);
    if (o->minarea < 1) return bad("%s: minarea %g is not at least 1", fn, (double)o->minarea);
    if (o->filter_type != GPUWS_FILTER_NONE && o->filter_type != GPUWS_FILTER_CONV &&
        o->filter_type != GPUWS_FILTER_MATCHED)
        return bad("%s: filter_type %g is not GPUWS_FILTER_NONE, _CONV or _MATCHED", fn, (double)o->filter_type);
    if (o->filter && (o->filter_w < 1 || o->filter_h < 1 || o->filter_w % 2 == 0 || o->filter_h % 2 == 0 ||
                      o->filter_w > 4095 || o->filter_h > 4095))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "%s: filter size %d x %d is not odd and in 1..4095", fn,
                            o->filter_w, o->filter_h);
    if (o->connectivity != 4 && o->connectivity != 8)
        return bad("%s: connectivity %g is not 4 or 8", fn, (double)o->connectivity);
    if (o->deblend_nthresh < 1) return bad("%s: deblend_nthresh %g is not at least 1", fn, (double)o->deblend_nthresh);
    if (!(o->deblend_cont >= 0.0 && o->deblend_cont <= 1.0))
        return bad("%s: deblend_cont %g is not in [0, 1]", fn, o->deblend_cont);
    if (!(o->clean_param > 0.0) || !isfinite(o->clean_param))
        return bad("%s: clean_param %g is not a finite number > 0", fn, o->clean_param);
    if (!(o->gain >= 0.0) || !isfinite(o->gain)) return bad("%s: gain %g is not a finite number >= 0", fn, o->gain);
    if (o->sep_version != GPUWS_SEP_1_4 && o->sep_version != GPUWS_SEP_1_2)
        return bad("%s: sep_version %g is not GPUWS_SEP_1_4 or GPUWS_SEP_1_2", fn, (double)o->sep_version);
    return GPUWS_OK;
}

gpuws_status gpuws__extract_band_records(gpuws_stream *s, const gpuws__extract_params *p, const gpuws_buffer *image,
                                         const gpuws_extract_options *o, const gpuws__records_sink *sink, bool compact,
                                         gpuws__extract_pixels *px)
{
    gpuws_buffer *rec, *cr;
    return extract_gpu_pixels(s, p, image, o, sink, compact, px, &rec, &cr);
}

gpuws_status gpuws__extract_band_labels(gpuws_stream *s, const gpuws__extract_params *p, size_t r0, size_t r1,
                                        int32_t *dst)
{
    gpuws_buffer *labels; /* the same request as extract_gpu_pixels': the buffer as that band left it */
    const gpuws_status st = gpuws__stream_scratch(s, &key_labels, p->w * p->h * sizeof(int32_t), &labels);
    if (st || r1 <= r0) return st;
    return gpuws__read_kept(s, labels, r0 * p->w * sizeof(int32_t), dst, (r1 - r0) * p->w * sizeof(int32_t));
}

gpuws_status gpuws_extract(gpuws_stream *s, size_t width, size_t height, const gpuws_buffer *image,
                           const gpuws_extract_options *options, gpuws_extract_catalog **catalog)
{
    GPUWS__CLAIM(claim);
    if (catalog) *catalog = NULL;
    gpuws_context *ctx;
    gpuws_status st = gpuws__buffer_context(image, "image", &ctx);
    if (st || (st = gpuws__driver_stream(ctx, &s, &claim, "extract"))) return st;
    gpuws_extract_options o = GPUWS_EXTRACT_OPTIONS_INIT;
    if ((st = gpuws__options_read(options, &o, sizeof o, GPUWS__EXTRACT_OPTIONS_BASE, "extract: options"))) return st;
    if (!catalog) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "extract: argument 'catalog' is NULL");
    size_t npix;
    if ((st = gpuws__extract_check(&o, width, height, o.rms != NULL, "extract", &npix))) return st;
    if ((st = gpuws__check_array(ctx, image, "image", npix, sizeof(float))) ||
        (o.back && (st = gpuws__check_array(ctx, o.back, "back", npix, sizeof(float)))) ||
        (o.rms && (st = gpuws__check_array(ctx, o.rms, "rms", npix, sizeof(float)))) ||
        (o.mask && (st = gpuws__check_array(ctx, o.mask, "mask", npix, 1))) ||
        (o.segmap && (st = gpuws__check_array(ctx, o.segmap, "segmap", npix, sizeof(int32_t)))))
        return st;
    if (o.segmap && (o.segmap == image || o.segmap == o.back || o.segmap == o.rms || o.segmap == o.mask))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "extract: 'segmap' must be a buffer of its own, not the image, back, rms or mask");
    /* the records index a band's pixels in 31 bits: larger images go in bands */
    const int64_t slab = ctx->tuning.extract_slab_pixels;
    const uint64_t most = slab > 0 ? (uint64_t)slab : INT32_MAX;
    if (npix > most) return gpuws__extract_slabs(s, width, height, image, &o, most, catalog);

    gpuws__extract_params p;
    if ((st = gpuws__extract_resolve(&o, width, height, o.rms != NULL, "extract", &p))) return st;
    float *kern = p.kern;
    p.threads = gpuws__threads_from_knob(ctx->tuning.extract_threads);
    p.chain_check = ctx->tuning.extract_chain_check;

    double t0 = now_ms();
    gpuws__extract_pixels px;
    memset(&px, 0, sizeof px);
    int32_t *obj_of = NULL;
    gpuws_extract_catalog *cat = NULL;
    gpuws_buffer *rec = NULL, *compact = NULL;
    const bool on_cpu = ctx->backend->kind == GPUWS_BACKEND_CPU;
    if (gpuws__extract_clean_where(ctx, &p)) p.clean_on = s;
    if (on_cpu) {
        st =
            gpuws_extract_ref_pixels(&p, gpuws__cpu_ptr(image), o.back ? gpuws__cpu_ptr(o.back) : NULL,
                                     o.rms ? gpuws__cpu_ptr(o.rms) : NULL, o.mask ? gpuws__cpu_ptr(o.mask) : NULL, &px);
        if (st)
            st = gpuws__error(st, "extract: no host memory for the maps of %zu x %zu pixels (%zu bytes)", width, height,
                              npix * (4 * sizeof(float) + 1 + sizeof(int32_t)));
    } else if (!ctx->info.fp64) {
        st = gpuws__error(GPUWS_ERR_UNSUPPORTED, "extract divides in double precision, which %s lacks", ctx->info.name);
    } else {
        st = extract_gpu_pixels(s, &p, image, &o, NULL, false, &px, &rec, &compact);
    }
    const double t1 = now_ms();
    if (!st && o.segmap && !(obj_of = gpuws__malloc((px.n ? px.n : 1) * sizeof *obj_of)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for the segmentation map (%zu bytes)",
                          px.n * sizeof *obj_of);
    if (!st && o.segmap && px.compact && !(px.label_obj = gpuws__calloc(px.nl + 1, sizeof *px.label_obj)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "extract: no host memory for the segmentation map (%zu bytes)",
                          (px.nl + 1) * sizeof *px.label_obj);
    if (!st) st = gpuws__extract_objects(&p, &px, &cat, obj_of);
    const double t2 = now_ms();
    if (!st && o.segmap) {
        if (on_cpu) {
            int32_t *seg = gpuws__cpu_ptr(o.segmap);
            memset(seg, 0, npix * sizeof *seg);
            for (size_t r = 0; r < px.n; r++) seg[px.idx[r] & ~EX_BLANK_BIT] = obj_of[r];
        } else {
            st = extract_gpu_segmap(s, npix, px.compact ? compact : rec, rec, &px, obj_of, o.segmap);
        }
    }
    gpuws__free(kern);
    gpuws__free(obj_of);
    gpuws__free(px.label_obj);
    px.label_obj = NULL;
    records_release(ctx, &px, false);
    if (st) {
        gpuws_extract_catalog_free(cat);
        return st;
    }
    cat->ms_device = t1 - t0;
    cat->ms_host = t2 - t1;
    *catalog = cat;
    return GPUWS_OK;
}

bool gpuws__extract_clean_where(const gpuws_context *ctx, gpuws__extract_params *p)
{
    const int clean = ctx->tuning.extract_clean;
    if (!p->clean || ctx->backend->kind == GPUWS_BACKEND_CPU || !ctx->info.fp64 || clean == GPUWS__CLEAN_HOST ||
        (clean == GPUWS__CLEAN_AUTO && gpuws__is_cpu_device(ctx)))
        return false;
    p->clean_from = clean == GPUWS__CLEAN_AUTO ? EX_CL_DEVICE_FROM : 1;
    p->clean_unsure = clean == GPUWS__CLEAN_UNSURE;
    p->clean_most = ctx->tuning.extract_clean_most < 0 ? EX_CL_MOST : (int)ctx->tuning.extract_clean_most;
    return true;
}

void gpuws_extract_catalog_free(gpuws_extract_catalog *catalog)
{
    if (!catalog) return;
    gpuws__free(catalog->objects);
    gpuws__free(catalog);
}
