/* κ-σ clipping of values spread over several parts (one buffer each, on one or several devices' contexts), with a
 * result whose bits depend only on the values and the chunk boundaries.
 *
 * The loop is gpuws_sigma_clip's: the kept set of a round is a window [klo, khi] of order-preserving keys, so no value
 * moves; a round is three reads of every part (the sigma_clip_parts_* kernels of sigma_clip.cl / .cu, or the same
 * computation in C on the CPU backend), and the host combines the parts' small results between them:
 *   stats   per chunk (count, mean, M2) of the kept values in one fixed order (sigma_clip.cl says which); the kept
 *           keys' min and max and the counts in the level-1 bins of klo and khi; in round 0 the level-1 histogram
 *           (key bits 31..21) of every non-NaN value, which later rounds reuse for the bins strictly inside the
 *           window. The host combines the chunks' triples with Chan's formulas in (part, chunk) order and finds the
 *           level-1 bin of the lower median;
 *   refine  level-2 histogram (bits 20..10) inside that bin;
 *   finish  level-3 histogram (bits 9..0) inside the level-2 bin and the smallest kept key above it; the host
 *           resolves the median and the bounds exactly as sigma_clip.cu's sc_decide does.
 * Histograms and counts are integers summed over parts, so count and median are exact; the triples are computed in
 * the same order everywhere with every operation rounded on its own (no FMA contraction: this file is compiled as
 * ISO C11, where GCC does not contract, and each product and sum is its own statement for compilers that contract
 * within one expression; the one fused operation, fma(d, d, s2), is explicit on every backend).
 *
 * Every part's kernels of a step are enqueued before the host waits on any part, so several devices work at once;
 * then the host reads each part's results (records of a few words per chunk, 2048-bin histograms). */
#include "sigma_clip_parts.h"
#include "../../core/options.h"
#include "../../core/threads.h"
#include "sigma_clip_ref.h"
#include "sigma_clip_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LANES       SC_MAXB           /* work-items per chunk: the definition of the chunk's order, not a tuning */
#define CHUNK_MAX   ((size_t)1 << 31) /* so that a work-group's 32-bit local counts hold its values */
#define GROUP_MAX   ((size_t)1 << 31) /* values one work-group may see (its histograms are 32-bit) */
#define PIECE       ((size_t)1 << 16) /* values per work item of the CPU backend's histogram passes */
#define PIECE_LEAST 262144.0          /* values a host thread takes at least (pays for its wake) */
#define NO_KEY      0xffffffffu

/* Each stream's scratch, in 64-bit words: the level-2 and level-3 histograms; one word per work-group of the finish
 * launch of each of the stream's parts (the smallest kept key above the level-2 bucket), the parts in order; for each
 * part its region: the records (count, mean, M2) of its chunks, then two words per work-group of its stats launch
 * (smallest kept key << 32 | largest; blo << 32 | bhi); then the level-1 histogram. So a step's results of a part or
 * a stream are one read each. A zero fill clears the level-2 and level-3 histograms before a round (and one the
 * level-1 histogram before round 0); the per-group words are written by every group. */
#define W_H2  0
#define W_H3  2048
#define W_FIN 3072

static const gpuws__stream_key key_scratch = { "sigma_clip_parts.scratch" };

static const char *const kernel_names[3] = { "sigma_clip_parts_stats", "sigma_clip_parts_refine",
                                             "sigma_clip_parts_finish" };

typedef struct {
    uint64_t n;
    double mean, m2;
} triple; /* a chunk's record, as the kernels write it */
_Static_assert(sizeof(triple) == 24, "a chunk record is 3 words");

typedef struct {
    gpuws_stream *s;
    const gpuws_buffer *data;
    const float *host; /* the CPU backend's values */
    size_t n, nchunks, first_chunk, npieces, first_piece;
    size_t stream;      /* index into the job's streams */
    size_t rec, fin;    /* word offsets in the stream's scratch: its region (records, stats words), finish words */
    gpuws_kernel *k[3]; /* GPU backends */
    uint32_t groups[2]; /* stats; refine and finish */
} part_info;

typedef struct {
    gpuws_stream *s;
    gpuws_buffer *scr;
    size_t fin, h1; /* words of its parts' finish launches; word offset of the level-1 histogram */
    uint64_t *host; /* pinned host memory the scratch is read into, word for word (the context's kept staging) */
    size_t host_bytes;
} stream_info;

/* What a CPU thread accumulates over its share. */
typedef struct {
    uint32_t kmin, kmax, kabove;
    uint64_t blo, bhi;
    uint64_t hist[2048];
} cpu_acc;

typedef struct {
    part_info *parts; /* the parts with values, in order */
    size_t np;
    stream_info *streams;
    size_t ns;
    bool cpu, serial; /* serial: a step on one stream after another (gpu_step) */
    size_t chunk, nchunks, npieces, n;
    triple *tri; /* every chunk's record, in (caller, part, chunk) order: this caller's from tri + chunk0 */
    size_t chunk0, all_chunks;
    const gpuws__clip_exchange *x; /* NULL: one caller */
    uint64_t *xw;                  /* the exchanges' words */
    size_t *tri_words;             /* with a gatherer: every caller's words of chunk records */
    cpu_acc *acc;
    size_t nacc;
    /* a step's totals */
    uint32_t kmin, kmax, kabove;
    uint64_t blo, bhi;
    uint64_t h1[2048], h2[2048], h3[1024];
    double ms_enqueue, ms_collect; /* GPUWS_LOG=debug: the steps' enqueues, and their waits and reads */
    unsigned steps;
    /* the arguments of the CPU backend's step */
    uint32_t klo, khi, sel;
    bool build;
    int step;
} job;

/* ---- the arithmetic every backend shares ---------------------------------------------------------------------- */

/* Chan et al.'s pairwise update of (count, mean, M2), each operation rounded on its own (sigma_clip.cl's sc_chan). */
static void chan(uint64_t *na, double *ma, double *m2a, uint64_t nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (*na == 0) {
        *na = nb;
        *ma = mb;
        *m2a = m2b;
        return;
    }
    const uint64_t n = *na + nb;
    const double d = mb - *ma;
    const double f = (double)nb / (double)n;
    const double df = d * f;
    *ma = *ma + df;
    double p = d * d;
    p = p * (double)*na;
    p = p * f;
    const double q = m2b + p;
    *m2a = *m2a + q;
    *na = n;
}

static double key_value(uint32_t k) { return (double)gpuws_sigma_clip_unkey(k); }

/* Smallest non-NaN key whose value is > lo (SC_KEY_POS_INF + 1 when none; a NaN bound has none): sc_first_above. */
static uint32_t first_above(double lo)
{
    if (!(key_value(SC_KEY_POS_INF) > lo)) return SC_KEY_POS_INF + 1u;
    uint32_t a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const uint32_t m = a + (b - a) / 2u;
        if (key_value(m) > lo) b = m;
        else a = m + 1u;
    }
    return a;
}

/* Largest non-NaN key whose value is < hi (SC_KEY_NEG_INF - 1 when none): sc_last_below. */
static uint32_t last_below(double hi)
{
    if (!(key_value(SC_KEY_NEG_INF) < hi)) return SC_KEY_NEG_INF - 1u;
    uint32_t a = SC_KEY_NEG_INF, b = SC_KEY_POS_INF;
    while (a < b) {
        const uint32_t m = a + (b - a + 1u) / 2u;
        if (key_value(m) < hi) a = m;
        else b = m - 1u;
    }
    return a;
}

/* The bin of h[0..nbins) holding rank `rank` and the rank inside it; false when the bins hold fewer values. */
static bool find_rank(const uint64_t *h, unsigned nbins, uint64_t rank, unsigned *bin, uint64_t *inside)
{
    uint64_t below = 0;
    for (unsigned b = 0; b < nbins; b++) {
        if (rank < below + h[b]) {
            *bin = b;
            *inside = rank - below;
            return true;
        }
        below += h[b];
    }
    return false;
}

/* ---- the CPU backend: the kernels' computation in C ------------------------------------------------------------ */

/* A chunk's record, in the kernels' order: lane t takes values t, t + 256, ... (so value i goes to lane i % 256, and
 * a pass in index order feeds every lane its values in order), then the tree h = 128, ..., 1. */
static triple cpu_chunk(const job *j, const float *x, size_t len, cpu_acc *a)
{
    uint32_t cnt[LANES] = { 0 };
    double K[LANES] = { 0 }, s1[LANES] = { 0 }, s2[LANES] = { 0 };
    const uint32_t klo = j->klo, khi = j->khi, blo_bin = klo >> 21, bhi_bin = khi >> 21;
    for (size_t i = 0; i < len; i++) {
        const float v = x[i];
        const uint32_t k = gpuws_sigma_clip_key(v);
        if (k < klo || k > khi) continue;
        const size_t t = i % LANES;
        const double xd = (double)v;
        if (cnt[t] == 0) K[t] = xd;
        const double d = xd - K[t];
        cnt[t]++;
        s1[t] = s1[t] + d;
        s2[t] = fma(d, d, s2[t]);
        if (k < a->kmin) a->kmin = k;
        if (k > a->kmax) a->kmax = k;
        a->blo += (k >> 21) == blo_bin;
        a->bhi += (k >> 21) == bhi_bin;
        if (j->build) a->hist[k >> 21]++;
    }
    uint64_t tn[LANES];
    double tm[LANES], tq[LANES];
    for (size_t t = 0; t < LANES; t++) {
        tn[t] = cnt[t];
        tm[t] = 0.0;
        tq[t] = 0.0;
        if (cnt[t]) {
            const double c = (double)cnt[t];
            tm[t] = K[t] + s1[t] / c;
            double q = s1[t] * s1[t];
            q = q / c;
            tq[t] = fmax(s2[t] - q, 0.0);
        }
    }
    for (size_t h = LANES / 2; h > 0; h >>= 1)
        for (size_t t = 0; t < h; t++) chan(&tn[t], &tm[t], &tq[t], tn[t + h], tm[t + h], tq[t + h]);
    return (triple){ tn[0], tm[0], tq[0] };
}

/* The part holding item `idx` (chunk or piece, by the parts' first items). */
static size_t part_of(const job *j, size_t idx, bool chunks)
{
    size_t lo = 0, hi = j->np; /* the last part whose first item is <= idx */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if ((chunks ? j->parts[mid].first_chunk : j->parts[mid].first_piece) <= idx) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void cpu_share(void *arg, size_t share, size_t lo, size_t hi)
{
    job *j = arg;
    cpu_acc *a = &j->acc[share];
    a->kmin = NO_KEY, a->kmax = 0, a->kabove = NO_KEY, a->blo = 0, a->bhi = 0;
    memset(a->hist, 0, sizeof a->hist);
    if (lo >= hi) return;
    const bool stats = j->step == 0;
    size_t p = part_of(j, lo, stats);
    for (size_t idx = lo; idx < hi; idx++) {
        while (idx >=
               (stats ? j->parts[p].first_chunk + j->parts[p].nchunks : j->parts[p].first_piece + j->parts[p].npieces))
            p++;
        const part_info *pi = &j->parts[p];
        if (stats) {
            const size_t c = idx - pi->first_chunk, at = c * j->chunk;
            const size_t len = pi->n - at < j->chunk ? pi->n - at : j->chunk;
            j->tri[j->chunk0 + idx] = cpu_chunk(j, pi->host + at, len, a);
            continue;
        }
        const size_t at = (idx - pi->first_piece) * PIECE, len = pi->n - at < PIECE ? pi->n - at : PIECE;
        const float *x = pi->host + at;
        const uint32_t klo = j->klo, khi = j->khi, sel = j->sel, top = (sel << 10) | 0x3ffu;
        for (size_t i = 0; i < len; i++) {
            const uint32_t k = gpuws_sigma_clip_key(x[i]);
            if (k < klo || k > khi) continue;
            if (j->step == 1) {
                if ((k >> 21) == sel) a->hist[(k >> 10) & 0x7ffu]++;
            } else if ((k >> 10) == sel) {
                a->hist[k & 0x3ffu]++;
            } else if (k > top && k < a->kabove) {
                a->kabove = k;
            }
        }
    }
}

/* One step (0 stats, 1 refine, 2 finish) on the CPU backend's host memory, over the host's cores. */
static void cpu_step(job *j)
{
    const size_t items = j->step == 0 ? j->nchunks : j->npieces;
    const size_t shares = gpuws__work_parts(j->nacc, (double)j->n, PIECE_LEAST, items);
    gpuws__run_ranges(items, shares, cpu_share, j);
    uint64_t *h = j->step == 0 ? j->h1 : j->step == 1 ? j->h2 : j->h3;
    const unsigned bins = j->step == 2 ? 1024u : 2048u;
    if (j->step > 0 || j->build) memset(h, 0, bins * sizeof *h);
    for (size_t s = 0; s < shares; s++) {
        const cpu_acc *a = &j->acc[s];
        if (a->kmin < j->kmin) j->kmin = a->kmin;
        if (a->kmax > j->kmax) j->kmax = a->kmax;
        if (a->kabove < j->kabove) j->kabove = a->kabove;
        j->blo += a->blo;
        j->bhi += a->bhi;
        if (j->step > 0 || j->build)
            for (unsigned b = 0; b < bins; b++) h[b] += a->hist[b];
    }
}

static double clock_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- GPU backends ---------------------------------------------------------------------------------------------- */

static gpuws_status gpu_fill(gpuws_stream *s, gpuws_buffer *b, size_t word, size_t words, uint32_t pattern)
{
    return gpuws_buffer_fill_async(s, b, word * 8, &pattern, sizeof pattern, words * 8);
}

#define ALL ((size_t)-1) /* every stream, in gpu_enqueue and gpu_collect */

/* Enqueues step `step` on every part of stream `only` (ALL: of every stream); stats after the fills that reset the
 * stream's histograms and counts. */
static gpuws_status gpu_enqueue(job *j, size_t only, int step, uint32_t klo, uint32_t khi, uint32_t sel, bool build)
{
    gpuws_status st;
    if (step == 0)
        for (size_t s = 0; s < j->ns; s++) {
            stream_info *si = &j->streams[s];
            if (only != ALL && s != only) continue;
            if ((st = gpu_fill(si->s, si->scr, 0, W_FIN, 0))) return st;
            if (build && (st = gpu_fill(si->s, si->scr, si->h1, 2048, 0))) return st;
        }
    for (size_t p = 0; p < j->np; p++) {
        part_info *pi = &j->parts[p];
        if (only != ALL && pi->stream != only) continue;
        gpuws_buffer *scr = j->streams[pi->stream].scr, *data = (gpuws_buffer *)pi->data;
        const gpuws_launch_config cfg = { { pi->groups[step == 0 ? 0 : 1], 1, 1 }, { LANES, 1, 1 } };
        if (step == 0) {
            const gpuws_arg a[] = {
                gpuws_arg_buffer(data), gpuws_arg_u64(pi->n),   gpuws_arg_u64(j->chunk),
                gpuws_arg_buffer(scr),  gpuws_arg_u64(pi->rec), gpuws_arg_u64(j->streams[pi->stream].h1),
                gpuws_arg_u32(klo),     gpuws_arg_u32(khi),     gpuws_arg_u32(build ? 1u : 0u)
            };
            st = gpuws_launch(pi->s, pi->k[0], &cfg, a, GPUWS__NARGS(a));
        } else if (step == 1) {
            const gpuws_arg a[] = { gpuws_arg_buffer(data), gpuws_arg_u64(pi->n), gpuws_arg_buffer(scr),
                                    gpuws_arg_u64(W_H2),    gpuws_arg_u32(klo),   gpuws_arg_u32(khi),
                                    gpuws_arg_u32(sel) };
            st = gpuws_launch(pi->s, pi->k[1], &cfg, a, GPUWS__NARGS(a));
        } else {
            const gpuws_arg a[] = { gpuws_arg_buffer(data), gpuws_arg_u64(pi->n),   gpuws_arg_buffer(scr),
                                    gpuws_arg_u64(W_H3),    gpuws_arg_u64(pi->fin), gpuws_arg_u32(klo),
                                    gpuws_arg_u32(khi),     gpuws_arg_u32(sel) };
            st = gpuws_launch(pi->s, pi->k[2], &cfg, a, GPUWS__NARGS(a));
        }
        if (st) return st;
    }
    return GPUWS_OK;
}

/* Enqueues the reads of step `step`'s results of stream `only`'s parts (ALL: every stream's) into the streams'
 * pinned host memory: the reads of all the streams go at once, and the host waits for them together (gpu_add). */
static gpuws_status gpu_read(job *j, size_t only, int step, bool build)
{
    gpuws_status st;
    for (size_t s = 0; s < j->ns; s++) {
        const stream_info *si = &j->streams[s];
        if (only != ALL && s != only) continue;
        /* stats: the parts' regions and the level-1 histogram, which follow one another; refine: the level-2
         * histogram; finish: the level-3 histogram and the finish words */
        const size_t from = step == 0   ? W_FIN + si->fin
                            : step == 1 ? W_H2
                                        : W_H3,
                     to = step == 0   ? si->h1 + (build ? 2048 : 0)
                          : step == 1 ? W_H2 + 2048
                                      : W_FIN + si->fin;
        if ((st = gpuws_buffer_read_async(si->s, si->scr, from * 8, si->host + from, (to - from) * 8))) return st;
    }
    for (size_t s = 0; s < j->ns; s++)
        if ((only == ALL || s == only) && (st = gpuws_stream_synchronize(j->streams[s].s))) return st;
    return GPUWS_OK;
}

/* Adds the results of step `step` of stream `only`'s parts (ALL: every stream's), read by gpu_read, to the totals. */
static void gpu_add(job *j, size_t only, int step, bool build)
{
    for (size_t p = 0; p < j->np && step == 0; p++) {
        const part_info *pi = &j->parts[p];
        if (only != ALL && pi->stream != only) continue;
        const uint64_t *rd = j->streams[pi->stream].host + pi->rec;
        const size_t recs = 3 * pi->nchunks, words = recs + 2 * (size_t)pi->groups[0];
        memcpy(j->tri + j->chunk0 + pi->first_chunk, rd, recs * 8);
        for (size_t w = recs; w < words; w += 2) {
            const uint32_t kmin = (uint32_t)(rd[w] >> 32), kmax = (uint32_t)rd[w];
            if (kmin < j->kmin) j->kmin = kmin;
            if (kmax > j->kmax) j->kmax = kmax;
            j->blo += rd[w + 1] >> 32;
            j->bhi += (uint32_t)rd[w + 1];
        }
    }
    for (size_t s = 0; s < j->ns; s++) {
        const stream_info *si = &j->streams[s];
        if (only != ALL && s != only) continue;
        if (step == 0 && build) {
            for (unsigned b = 0; b < 2048; b++) j->h1[b] += si->host[si->h1 + b];
        } else if (step == 1) {
            for (unsigned b = 0; b < 2048; b++) j->h2[b] += si->host[W_H2 + b];
        } else if (step == 2) {
            for (unsigned b = 0; b < 1024; b++) j->h3[b] += si->host[W_H3 + b];
            for (size_t w = W_FIN; w < W_FIN + si->fin; w++)
                if ((uint32_t)si->host[w] < j->kabove) j->kabove = (uint32_t)si->host[w];
        }
    }
}

/* One step on every part: enqueued on every stream before the first read, so that the devices work at once. On
 * CPU-type OpenCL devices one stream after another instead: they share the host's cores, so overlap gains nothing,
 * and PoCL (seen with 3.1 and a newer release) can fail an assertion in its cache of compiled kernels
 * ("found->ref_count > 0") when two command queues run one kernel at the same time. */
static gpuws_status gpu_step(job *j, int step, uint32_t klo, uint32_t khi, uint32_t sel, bool build)
{
    gpuws_status st;
    if (build) memset(j->h1, 0, sizeof j->h1);
    if (step > 0) memset(step == 1 ? j->h2 : j->h3, 0, step == 1 ? sizeof j->h2 : sizeof j->h3);
    if (!j->serial) {
        const double t0 = clock_ms();
        if ((st = gpu_enqueue(j, ALL, step, klo, khi, sel, build))) return st;
        const double t1 = clock_ms();
        if ((st = gpu_read(j, ALL, step, build))) return st;
        gpu_add(j, ALL, step, build);
        j->ms_enqueue += t1 - t0, j->ms_collect += clock_ms() - t1, j->steps++;
        return GPUWS_OK;
    }
    for (size_t s = 0; s < j->ns; s++) {
        if ((st = gpu_enqueue(j, s, step, klo, khi, sel, build)) || (st = gpu_read(j, s, step, build))) return st;
        gpu_add(j, s, step, build);
    }
    return GPUWS_OK;
}

/* One step on whichever backend, its totals in the job. */
static gpuws_status step_run(job *j, int step, uint32_t klo, uint32_t khi, uint32_t sel, bool build)
{
    j->kmin = NO_KEY, j->kmax = 0, j->kabove = NO_KEY, j->blo = 0, j->bhi = 0;
    if (!j->cpu) return gpu_step(j, step, klo, khi, sel, build);
    j->klo = klo, j->khi = khi, j->sel = sel, j->build = build, j->step = step;
    cpu_step(j);
    return GPUWS_OK;
}

#define AGREE_VALUES 3 /* what the callers agree on: kappa, max_iterations, the chunk */
#define AGREE_WORDS  (1 + GPUWS__AGREE_WORDS(AGREE_VALUES)) /* agree's words before the callers' slots */

/* ---- several callers ------------------------------------------------------------------------------------------ */

static gpuws_status reduce_words(job *j, uint64_t *w, size_t count)
{
    const gpuws_status st = j->x->reduce(j->x->user, w, count);
    return st ? gpuws__error_prefix(st, "sigma_clip: the reducer failed") : GPUWS_OK;
}

static gpuws_status others_failed(uint64_t failed, size_t callers)
{
    return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: %llu of %zu callers failed",
                        (unsigned long long)failed, callers);
}

/* The words of one step's exchange: a failure count; step 0 every caller's smallest and largest kept key, the kept
 * counts in the bins of the window's ends, the level-1 histogram when built, and (without a gatherer) every chunk's
 * record (each caller's own at its place, zeros elsewhere, so the sum is the gather; with one they are gathered in
 * place, each moving once); step 1 the level-2 histogram; step 2 the level-3 histogram and every caller's smallest
 * kept key above the level-2 bin. */
static size_t exchange_words(const job *j, int step, bool build)
{
    const size_t P = j->x->callers, records = j->x->gather ? 0 : 3 * j->all_chunks;
    return step == 0 ? 1 + 2 * P + 2 + (build ? 2048 : 0) + records : step == 1 ? 1 + 2048 : 1 + 1024 + P;
}

/* This caller's results of a step (failed: none, the step failed here) summed with every other caller's into the
 * job's totals, the same on every caller. */
static gpuws_status step_exchange(job *j, int step, bool build, bool failed)
{
    const size_t P = j->x->callers, me = j->x->caller, count = exchange_words(j, step, build);
    uint64_t *w = j->xw;
    memset(w, 0, count * sizeof *w);
    w[0] = failed;
    if (step == 0) {
        w[1 + me] = j->kmin, w[1 + P + me] = j->kmax;
        w[1 + 2 * P] = j->blo, w[2 + 2 * P] = j->bhi;
        uint64_t *h = w + 3 + 2 * P, *t = h + (build ? 2048 : 0);
        if (build) memcpy(h, j->h1, sizeof j->h1);
        if (!j->x->gather) memcpy(t + 3 * j->chunk0, j->tri + j->chunk0, j->nchunks * sizeof *j->tri);
    } else if (step == 1) {
        memcpy(w + 1, j->h2, sizeof j->h2);
    } else {
        memcpy(w + 1, j->h3, sizeof j->h3);
        w[1 + 1024 + me] = j->kabove;
    }
    gpuws_status st = reduce_words(j, w, count);
    if (st) return st;
    if (w[0]) return failed ? GPUWS_OK : others_failed(w[0], P); /* the caller's own error is its own */
    if (step == 0) {
        j->kmin = NO_KEY, j->kmax = 0;
        for (size_t c = 0; c < P; c++) {
            if (w[1 + c] < j->kmin) j->kmin = (uint32_t)w[1 + c];
            if (w[1 + P + c] > j->kmax) j->kmax = (uint32_t)w[1 + P + c];
        }
        j->blo = w[1 + 2 * P], j->bhi = w[2 + 2 * P];
        const uint64_t *h = w + 3 + 2 * P, *t = h + (build ? 2048 : 0);
        if (build) memcpy(j->h1, h, sizeof j->h1);
        if (!j->x->gather) memcpy(j->tri, t, j->all_chunks * sizeof *j->tri);
        /* every caller past the sum with no failure: each makes the gather */
        else if ((st = j->x->gather(j->x->user, (uint64_t *)j->tri, j->tri_words, me, P, GPUWS_ALL_CALLERS)))
            return gpuws__error_prefix(st, "sigma_clip: the gatherer failed");
    } else if (step == 1) {
        memcpy(j->h2, w + 1, sizeof j->h2);
    } else {
        memcpy(j->h3, w + 1, sizeof j->h3);
        j->kabove = NO_KEY;
        for (size_t c = 0; c < P; c++)
            if (w[1 + 1024 + c] < j->kabove) j->kabove = (uint32_t)w[1 + 1024 + c];
    }
    return GPUWS_OK;
}

/* A step on this caller's parts, then (several callers) the exchange of its results: a failure here is still
 * exchanged, so that no caller waits for it. */
static gpuws_status step_all(job *j, int step, uint32_t klo, uint32_t khi, uint32_t sel, bool build)
{
    const gpuws_status st = step_run(j, step, klo, khi, sel, build);
    if (!j->x) return st;
    const gpuws_status xs = step_exchange(j, step, build, st != GPUWS_OK);
    return st ? st : xs;
}

/* Before the first step (several callers): their number, chunk and options must agree (sums and sums of squares,
 * as gpuws_sigma_clip_host_reduce does), and each caller's chunk count gives its first chunk among all. failed: this
 * caller failed before (its options or its parts), which fails every caller. Then the records and the exchanges'
 * words, whose allocation is agreed on once more. */
static gpuws_status agree(job *j, size_t chunk, const gpuws_sigma_clip_options *o, bool failed)
{
    const size_t P = j->x->callers, me = j->x->caller;
    uint64_t n2[2] = { 1, P };
    gpuws_status st = reduce_words(j, n2, 2);
    if (st) return st;
    if (n2[0] != P || n2[1] != (uint64_t)P * P)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sigma_clip: %llu callers, which do not all say they are %zu (each its own index of the "
                            "same count)",
                            (unsigned long long)n2[0], P);
    /* kappa, max_iterations and the chunk (gpuws__agree_words) */
    enum { AT = AGREE_WORDS };
    uint64_t v[AGREE_VALUES] = { 0, (uint64_t)(uint32_t)o->max_iterations, chunk };
    memcpy(&v[0], &o->kappa, 8);
    uint64_t *w = j->xw; /* AT + 2P words, allocated by the caller */
    memset(w, 0, (AT + 2 * P) * sizeof *w);
    w[0] = failed;
    gpuws__agree_words(v, AGREE_VALUES, w + 1);
    w[AT + me] = j->nchunks, w[AT + P + me] = 1;
    if ((st = reduce_words(j, w, AT + 2 * P))) return st;
    if (w[0]) return failed ? GPUWS_OK : others_failed(w[0], P);
    for (size_t c = 0; c < P; c++)
        if (w[AT + P + c] != 1)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "sigma_clip: %llu callers say they are caller %zu of %zu: each its own index",
                                (unsigned long long)w[AT + P + c], c, P);
    static const char *const what[AGREE_VALUES] = { "kappa", "max_iterations", "chunk" };
    const size_t bad = gpuws__agree_check(w + 1, AGREE_VALUES, P);
    if (bad < AGREE_VALUES)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sigma_clip: the %zu callers' options differ (%s): each must pass the same", P, what[bad]);
    j->chunk0 = j->all_chunks = 0;
    for (size_t c = 0; c < P; c++) {
        if (c < me) j->chunk0 += w[AT + c];
        j->all_chunks += w[AT + c];
    }
    if (j->all_chunks == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: no values on any of the %zu callers", P);
    return GPUWS_OK;
}

/* ---- set-up -------------------------------------------------------------------------------------------------- */

/* The three kernels on ctx (gpuws__sigma_clip_kernels), which must take work-groups of LANES. */
static gpuws_status parts_kernels(gpuws_context *ctx, gpuws_kernel *k[3])
{
    if (!ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "sigma_clip (parts) accumulates in double precision, which %s lacks",
                            ctx->info.name);
    gpuws_status st = gpuws__sigma_clip_kernels(ctx, kernel_names, 3, k, "sigma_clip (parts)");
    if (st) return st;
    for (int i = 0; i < 3; i++) {
        gpuws_kernel_info ki;
        if ((st = gpuws_kernel_get_info(k[i], &ki))) return st;
        if (ki.max_block_size < LANES || ctx->info.max_block_size < LANES)
            return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                                "sigma_clip (parts) runs work-groups of exactly %u work-items (the chunks' summation "
                                "order), but %s allows %u for %s",
                                LANES, ctx->info.name,
                                ki.max_block_size < ctx->info.max_block_size ? ki.max_block_size
                                                                             : ctx->info.max_block_size,
                                kernel_names[i]);
    }
    return GPUWS_OK;
}

/* The part's grids: stats takes chunks grid-stride (enough groups to fill the device, at most one per chunk, and
 * enough that a group sees at most GROUP_MAX values); refine and finish a grid-stride share of the values each. */
static gpuws_status part_grids(gpuws_context *ctx, part_info *pi, size_t chunk)
{
    const size_t per_group = GROUP_MAX / chunk ? GROUP_MAX / chunk : 1; /* chunks */
    size_t need = (pi->nchunks + per_group - 1) / per_group, g = gpuws__saturating_blocks(ctx, 16);
    if (g > pi->nchunks) g = pi->nchunks;
    if (g < need) g = need;
    size_t g2 = gpuws__saturating_blocks(ctx, 4), want = (pi->n + 4 * LANES - 1) / (4 * LANES);
    if (g2 > want) g2 = want;
    const size_t need2 = (pi->n - 1) / GROUP_MAX + 1;
    if (g2 < need2) g2 = need2;
    const size_t most = g > g2 ? g : g2;
    if (most > ctx->info.max_grid_dims[0] || most > UINT32_MAX)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "sigma_clip (parts): a part of %zu values needs %zu work-groups; %s launches %llu", pi->n,
                            most, ctx->info.name, (unsigned long long)ctx->info.max_grid_dims[0]);
    pi->groups[0] = (uint32_t)g;
    pi->groups[1] = (uint32_t)g2;
    return GPUWS_OK;
}

/* Checks the parts, claims their streams, finds kernels and scratch; fills j. */
static gpuws_status setup(job *j, const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                          gpuws__stream_claim *claims)
{
    gpuws_status st;
    gpuws_backend_kind kind = GPUWS_BACKEND_CPU;
    j->chunk = chunk;
    for (size_t i = 0; i < num_parts; i++) {
        if (parts[i].n == 0) continue;
        char name[48];
        snprintf(name, sizeof name, "parts[%zu].data", i);
        gpuws_context *ctx;
        gpuws_stream *s = parts[i].stream;
        if ((st = gpuws__buffer_context(parts[i].data, name, &ctx))) return st;
        if ((st = gpuws__driver_stream(ctx, &s, &claims[i], "sigma_clip (parts)"))) return st;
        if ((st = gpuws__check_array(ctx, parts[i].data, name, parts[i].n, sizeof(float)))) return st;
        if (j->np == 0) kind = ctx->backend->kind;
        else if (ctx->backend->kind != kind)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "sigma_clip (parts): parts[%zu] is on the %s backend, the parts before it on %s", i,
                                ctx->backend->name, j->parts[0].s->ctx->backend->name);
        part_info *pi = &j->parts[j->np++];
        pi->s = s;
        pi->data = parts[i].data;
        pi->n = parts[i].n;
        pi->nchunks = (pi->n - 1) / chunk + 1;
        pi->first_chunk = j->nchunks;
        pi->npieces = (pi->n - 1) / PIECE + 1;
        pi->first_piece = j->npieces;
        j->nchunks += pi->nchunks;
        j->npieces += pi->npieces;
        j->n += pi->n;
    }
    if (j->np == 0 && !j->x)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "sigma_clip: no values (%zu parts, n == 0 in all): no statistics exist", num_parts);
    j->cpu = j->np && kind == GPUWS_BACKEND_CPU;
    if (j->cpu) {
        /* at most 64 shares: gpuws__run_ranges keeps their table on the stack (no allocation that could fail), and
         * a pass that reads memory gains nothing from more threads */
        j->nacc = gpuws__cpu_count();
        if (j->nacc > 64) j->nacc = 64;
        if (!(j->acc = gpuws__malloc(j->nacc * sizeof *j->acc)))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "sigma_clip (parts): no memory for %zu threads' histograms (%zu bytes)", j->nacc,
                                j->nacc * sizeof *j->acc);
        for (size_t p = 0; p < j->np; p++) j->parts[p].host = gpuws__cpu_ptr(j->parts[p].data);
        return GPUWS_OK;
    }
    /* streams in order of first use; on each, the parts' finish words, then their regions, in part order */
    for (size_t p = 0; p < j->np; p++) {
        part_info *pi = &j->parts[p];
        size_t s = 0;
        while (s < j->ns && j->streams[s].s != pi->s) s++;
        if (s == j->ns) j->streams[j->ns++] = (stream_info){ .s = pi->s };
        pi->stream = s;
        gpuws_context *ctx = pi->s->ctx;
        j->serial |= gpuws__is_cpu_device(ctx);
        if ((st = parts_kernels(ctx, pi->k)) || (st = part_grids(ctx, pi, chunk))) return st;
        pi->fin = W_FIN + j->streams[s].fin;
        j->streams[s].fin += pi->groups[1];
    }
    for (size_t s = 0; s < j->ns; s++) {
        stream_info *si = &j->streams[s];
        si->h1 = W_FIN + si->fin;
        for (size_t p = 0; p < j->np; p++) {
            part_info *pi = &j->parts[p];
            if (pi->stream != s) continue;
            const size_t words = 3 * pi->nchunks + 2 * (size_t)pi->groups[0];
            pi->rec = si->h1;
            si->h1 += words;
        }
        const size_t bytes = (si->h1 + 2048) * 8;
        if ((st = gpuws__stream_scratch(si->s, &key_scratch, bytes, &si->scr))) return st;
        void *host;
        if ((st = gpuws__staging_take(si->s->ctx, bytes, &host, &si->host_bytes)))
            return gpuws__error_prefix(st, "sigma_clip (parts): pinned host memory for the results (%zu bytes)", bytes);
        si->host = host;
    }
    return GPUWS_OK;
}

/* ---- the loop ------------------------------------------------------------------------------------------------- */

static gpuws_status clip(job *j, double kappa, int max_iterations, gpuws_sigma_clip_result *out)
{
    uint32_t klo = SC_KEY_NEG_INF, khi = SC_KEY_POS_INF;
    uint64_t round = 0;
    bool final = false;
    gpuws_status st;
    for (;;) {
        const bool build = round == 0 && !final;
        if ((st = step_all(j, 0, klo, khi, 0, build))) return st;
        uint64_t cnt = 0;
        double mean = 0.0, m2 = 0.0;
        for (size_t c = 0; c < j->all_chunks; c++) chan(&cnt, &mean, &m2, j->tri[c].n, j->tri[c].mean, j->tri[c].m2);
        if (build && cnt == 0)
            return j->x ? gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                       "sigma_clip: every caller's values are NaN: no statistics exist")
                        : gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                       "sigma_clip: all %zu values are NaN: no statistics exist", j->n);
        if (cnt == 0) { /* nothing left: NumPy's statistics of an empty array, nothing more to remove */
            *out = (gpuws_sigma_clip_result){ 0, NAN, NAN, NAN, (int)(round + (final ? 0 : 1)), final ? 0 : 1 };
            return GPUWS_OK;
        }
        const uint32_t kmin = j->kmin, kmax = j->kmax, blo_bin = klo >> 21, bhi_bin = khi >> 21;
        /* the kept set's level-1 histogram: round 0's strictly inside (klo, khi), the kept counts at the ends */
        uint64_t kept[2048];
        for (unsigned b = 0; b < 2048; b++)
            kept[b] = b < blo_bin || b > bhi_bin ? 0
                      : blo_bin == bhi_bin       ? cnt
                      : b == blo_bin             ? j->blo
                      : b == bhi_bin             ? j->bhi
                                                 : j->h1[b];
        unsigned b1, b2, b3;
        uint64_t r1, r2, r3;
        if (!find_rank(kept, 2048, (cnt - 1) / 2, &b1, &r1))
            return gpuws__error(GPUWS_ERR_INTERNAL, "sigma_clip (parts): the level-1 bins hold fewer than %llu values",
                                (unsigned long long)cnt);
        if ((st = step_all(j, 1, klo, khi, b1, false))) return st;
        if (!find_rank(j->h2, 2048, r1, &b2, &r2))
            return gpuws__error(GPUWS_ERR_INTERNAL, "sigma_clip (parts): level-1 bin %u holds fewer than %llu values",
                                b1, (unsigned long long)r1 + 1);
        const uint32_t prefix = (b1 << 11) | b2;
        if ((st = step_all(j, 2, klo, khi, prefix, false))) return st;
        if (!find_rank(j->h3, 1024, r2, &b3, &r3))
            return gpuws__error(GPUWS_ERR_INTERNAL, "sigma_clip (parts): level-2 bin %u holds fewer than %llu values",
                                b2, (unsigned long long)r2 + 1);
        /* the median and the next window: sc_decide */
        const uint32_t vlo = (prefix << 10) | b3;
        double median = key_value(vlo);
        if ((cnt & 1) == 0) {
            uint32_t next = NO_KEY;
            for (unsigned b = b3 + 1; b < 1024 && next == NO_KEY; b++)
                if (j->h3[b]) next = b;
            const uint32_t vhi = r3 + 1 < j->h3[b3] ? vlo : next != NO_KEY ? (prefix << 10) | next : j->kabove;
            if (vhi == NO_KEY)
                return gpuws__error(GPUWS_ERR_INTERNAL, "sigma_clip (parts): no upper middle value among %llu",
                                    (unsigned long long)cnt);
            const double sum = median + key_value(vhi);
            median = sum * 0.5;
        }
        double std = sqrt(m2 / (double)cnt);
        if (kmin == SC_KEY_NEG_INF || kmax == SC_KEY_POS_INF) mean = std = NAN; /* NumPy: an infinity makes std NaN */
        if (final) { /* max_iterations passes made: this was the measurement of the final set */
            *out = (gpuws_sigma_clip_result){ (size_t)cnt, median, mean, std, (int)round, 0 };
            return GPUWS_OK;
        }
        const double t = kappa * std;
        const double lo = median - t;
        const double hi = median + t;
        const uint32_t nlo = first_above(lo), nhi = last_below(hi);
        if (nlo <= kmin && kmax <= nhi) { /* nothing removed */
            *out = (gpuws_sigma_clip_result){ (size_t)cnt, median, mean, std, (int)(round + 1), 1 };
            return GPUWS_OK;
        }
        klo = klo > nlo ? klo : nlo;
        khi = khi < nhi ? khi : nhi;
        round++;
        if (round >= (uint64_t)max_iterations) final = true;
    }
}

/* The records of every caller's chunks, and (several callers) the words of the largest exchange. */
static gpuws_status make_records(job *j)
{
    const size_t words = j->x ? exchange_words(j, 0, true) : 0;
    if (j->x && j->x->gather) { /* every caller's chunk count, from agree's words */
        if (!(j->tri_words = gpuws__malloc(j->x->callers * sizeof *j->tri_words)))
            return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                                "sigma_clip (parts): no memory for %zu callers' counts (%zu bytes)", j->x->callers,
                                j->x->callers * sizeof *j->tri_words);
        for (size_t c = 0; c < j->x->callers; c++) j->tri_words[c] = 3 * (size_t)j->xw[AGREE_WORDS + c];
    }
    j->tri = gpuws__malloc(j->all_chunks * sizeof *j->tri);
    uint64_t *xw = words ? gpuws__realloc(j->xw, words * sizeof *xw) : NULL;
    if (xw) j->xw = xw;
    if (!j->tri || (words && !xw))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY,
                            "sigma_clip (parts): no memory for the records of %zu chunks (%zu bytes)", j->all_chunks,
                            j->all_chunks * sizeof *j->tri + words * sizeof *xw);
    return GPUWS_OK;
}

static gpuws_status run_clip(const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                             const gpuws_sigma_clip_options *options, const gpuws__clip_exchange *x,
                             gpuws_sigma_clip_result *result)
{
    gpuws_sigma_clip_result r;
    const size_t slots = num_parts ? num_parts : 1, agree_words = x ? AGREE_WORDS + 2 * x->callers : 0;
    job *j = gpuws__calloc(1, sizeof *j);
    gpuws__stream_claim *claims = gpuws__calloc(slots, sizeof *claims);
    gpuws_status st = GPUWS_OK;
    if (j) {
        j->parts = gpuws__calloc(slots, sizeof *j->parts);
        j->streams = gpuws__calloc(slots, sizeof *j->streams);
        if (x) j->xw = gpuws__malloc(agree_words * sizeof *j->xw);
    }
    if (!j || !claims || !j->parts || !j->streams || (x && !j->xw)) {
        st = gpuws__error(
            GPUWS_ERR_OUT_OF_MEMORY, "sigma_clip (parts): no memory for the state of %zu parts (%zu bytes)", num_parts,
            sizeof *j + slots * (sizeof *claims + sizeof *j->parts + sizeof *j->streams) + agree_words * sizeof *j->xw);
        goto done;
    }
    j->x = x;
    const double t0 = clock_ms();
    st = setup(j, parts, num_parts, chunk, claims);
    if (x) {
        /* every caller agrees, then allocates, and says whether it could: no caller is left waiting */
        const gpuws_status ast = agree(j, chunk, options, st != GPUWS_OK || x->failed);
        if (st || x->failed || (st = ast)) goto done;
        st = make_records(j);
        uint64_t bad = st != GPUWS_OK;
        const gpuws_status rst = reduce_words(j, &bad, 1);
        if (!st && (st = rst)) goto done;
        if (!st && bad) st = others_failed(bad, x->callers);
    } else if (!st) {
        j->all_chunks = j->nchunks;
        st = make_records(j);
    }
    if (!st && !(st = clip(j, options->kappa, options->max_iterations, &r))) {
        *result = r;
        gpuws__log(GPUWS__LOG_DEBUG,
                   "sigma_clip (parts): %d rounds, %u steps over %zu parts and %zu streams in %.2f ms (enqueue %.2f, "
                   "waits and reads %.2f)",
                   r.iterations, j->steps, j->np, j->ns, clock_ms() - t0, j->ms_enqueue, j->ms_collect);
    }
done:
    for (size_t s = 0; j && j->streams && s < j->ns; s++) {
        if (!j->streams[s].host) continue;
        if (st) gpuws_stream_synchronize(j->streams[s].s); /* a read may still be on its way */
        gpuws__staging_give(j->streams[s].s->ctx, j->streams[s].host, j->streams[s].host_bytes);
    }
    if (claims)
        for (size_t i = slots; i-- > 0;) gpuws__unclaim(&claims[i]);
    gpuws__free(claims);
    if (j) {
        gpuws__free(j->tri);
        gpuws__free(j->tri_words);
        gpuws__free(j->acc);
        gpuws__free(j->xw);
        gpuws__free(j->parts);
        gpuws__free(j->streams);
        gpuws__free(j);
    }
    return st;
}

gpuws_status gpuws__sigma_clip_parts(const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                                     const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    if (!options || !result)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip (parts): argument '%s' is NULL",
                            options ? "result" : "options");
    if (num_parts && !parts)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip (parts): argument 'parts' is NULL (%zu parts)",
                            num_parts);
    if (chunk == 0 || chunk > CHUNK_MAX)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip (parts): chunk %zu is not in 1 .. 2^31", chunk);
    if (num_parts == 0)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: no values (no parts): no statistics exist");
    return run_clip(parts, num_parts, chunk, options, NULL, result);
}

/* A caller that failed (own: its status and message) still makes the first reductions, where every caller learns
 * that one failed; then its own error again. */
static gpuws_status fail_together(const gpuws__clip_exchange *x, gpuws_status own)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpuws_last_error());
    const gpuws_sigma_clip_options none = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    gpuws__clip_exchange failed = *x;
    failed.failed = true;
    gpuws_sigma_clip_result r;
    run_clip(NULL, 0, 1, &none, &failed, &r);
    return gpuws__error(own, "%s", msg);
}

gpuws_status gpuws__sigma_clip_parts_reduce(const gpuws__clip_part *parts, size_t num_parts, size_t chunk,
                                            const gpuws_sigma_clip_options *options, const gpuws__clip_exchange *x,
                                            gpuws_sigma_clip_result *result)
{
    if (!x || !x->reduce || x->callers == 0 || x->caller >= x->callers)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: no reducer, or caller %zu of %zu",
                            x ? x->caller : 0, x ? x->callers : 0);
    /* a caller whose own arguments are wrong still takes part, so that no other waits for it */
    gpuws_status own = GPUWS_OK;
    if (!options || !result)
        own = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: argument '%s' is NULL",
                           options ? "result" : "options");
    else if (num_parts && !parts)
        own = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: argument 'parts' is NULL (%zu parts)", num_parts);
    else if (chunk == 0 || chunk > CHUNK_MAX)
        own = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip: chunk %zu is not in 1 .. 2^31", chunk);
    return own ? fail_together(x, own) : run_clip(parts, num_parts, chunk, options, x, result);
}

/* The public collective call's chunk: a work-group's, and a device needs thousands of them to read at full rate. */
#define REDUCE_CHUNK ((size_t)1 << 18)

gpuws_status gpuws_sigma_clip_reduce(gpuws_stream *stream, const gpuws_buffer *data, size_t n,
                                     const gpuws_sigma_clip_options *options, size_t part, size_t parts,
                                     gpuws_sum_reducer reduce, void *reduce_user, gpuws_sigma_clip_result *result)
{
    if (!reduce || !result || (!data && n))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_reduce: argument '%s' is NULL",
                            !reduce   ? "reduce"
                            : !result ? "result"
                                      : "data");
    if (part >= parts)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_reduce: part %zu of %zu", part, parts);
    const gpuws__clip_exchange x = { reduce, reduce_user, part, parts, false, NULL };
    gpuws_sigma_clip_options o = GPUWS_SIGMA_CLIP_OPTIONS_INIT;
    gpuws_status st =
        gpuws__options_read(options, &o, sizeof o, GPUWS__SIGMA_CLIP_OPTIONS_BASE, "sigma_clip_reduce: options");
    if (!st && (!(o.kappa > 0) || !isfinite(o.kappa)))
        st =
            gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_reduce: kappa %g is not a finite number > 0", o.kappa);
    if (!st && o.max_iterations < 1)
        st = gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "sigma_clip_reduce: max_iterations %d is not >= 1",
                          o.max_iterations);
    if (st) return fail_together(&x, st); /* this caller's options: every caller fails */
    const gpuws__clip_part p = { stream, data, n };
    return gpuws__sigma_clip_parts_reduce(&p, n ? 1 : 0, REDUCE_CHUNK, &o, &x, result);
}
