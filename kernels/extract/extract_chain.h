/* Deblending's first step on the device (extract_chain, extract.cu / extract.cl): for each component whose
 * multi-threshold tree cannot split, the order of its pixels that SEP's one-pass scan gives ("chain order",
 * extract_deblend.c says why it matters), so that the host's deblending takes such a component as it is. Valid C11,
 * CUDA and OpenCL C (with fp64), after extract_pixel.h; it includes nothing.
 *
 * A component cannot split when it holds at most one local maximum above the tree's first level (extract_deblend.c:
 * mark_maxima and may_split say why). That level, t0 (peak / t0)^(1 / nthresh), comes from pow, which devices do not
 * round as the host's libm does: the device counts the maxima above a level 1e-5 lower (relatively), which holds
 * every maximum the host's level holds, so a component it finds unsplittable the host would too. Its threshold t0 is
 * the host's, bit for bit (the same float products and the same double sum, in raster order). The chain is the one
 * Lutz's scan of the component's box makes (extract_deblend.c's lz_run, every pixel of the component in): in closed
 * form for a component with one run of pixels a row (ex_chain_runs), else by the scan itself, which meets the pixels
 * in raster order, the order of the component's records, so it walks them instead of a box, and visits only the
 * columns where it acts: its time is the component's records', whatever its box.
 *
 * Inputs: grp, the records grouped by label (extract_sort_*): the cnt record numbers, then start[0 .. nl] (label l:
 * grp[start[l] .. start[l + 1] - 1], start[nl + 1] = cnt); the records (ru / rf, six arrays of cap words); the
 * labels and the filtered map (cdm) of the image. Output out: first a copy of grp (ex_chain_copy), then each
 * label's threshold as a float (t0s[l] = out[cnt + nl + 1 + l], l = 1 .. nl; 0 for those not listed), last the
 * number of measures' slots taken (extract.c copies it); the kernels put the records of each component that cannot
 * split in chain order and set EX_CHAIN_BIT on its start. Four kernels: ex_chain_copy a word each, ex_chain_maximum
 * a record each (the local maxima), ex_chain_listed a label each (the components to chain, listed), ex_chain a listed
 * component each. Scratch, disjoint between labels: nx (cnt ints) and, for label l from
 * place start[l] + 2 l, room for its box's columns: eight int arrays and the marker bytes (EX_CHAIN_ROOM(cnt, nl)
 * entries each), the state stack (twice that).
 *
 * A chained component is one object, which the host would then measure pixel by pixel (the analysis, cleaning's
 * mthresh, the flux's variance); a fifth kernel, ex_chain_measured a listed component each, makes those sums here,
 * in chain order, the host's operations one by one (ex_dmul / ex_dadd: no fused products), into a slot of
 * EX_MOM_DOUBLES doubles taken from a counter; the label's word after the grouping then holds the slot instead of
 * the threshold, which moves into the slot. What depends on libm's rounding (atan2, sqrt, log) stays with the host,
 * which finishes each object from its slot. */
#ifndef GPUWS_EXTRACT_CHAIN_H
#define GPUWS_EXTRACT_CHAIN_H

#define EX_CHAIN_AUTO          256 /* records of the largest component chained (knob extract_chain auto) */
#define EX_CHAIN_ROOM(cnt, nl) ((cnt) + 2 * ((nl) + 1))
#define EX_CHAIN_MARGIN        1e-5 /* how much lower the device's first level lies, relatively */

/* A chained component's measures (ex_chain_measure): doubles, then 32-bit words from double EXM_WORDS on. */
#define EX_MOM_DOUBLES 21
#define EXM_RV         0  /* the filtered values' sum (fdflux before its rounding to float) */
#define EXM_TV         1  /* the values' sum */
#define EXM_XM         2  /* then ym, xm2, ym2, xym: the barycentre and second moments from the box's corner */
#define EXM_CVARSUM    7  /* then errx2, erry2, errxy, before their division by the flux squared */
#define EXM_FVAR       11 /* the flux's variance */
#define EXM_WORDS      12
#define EXW_XMIN       0 /* then xmax, ymin, ymax, xpeak, ypeak, xcpeak, ycpeak */
#define EXW_DNPIX      8
#define EXW_AREA2      9
#define EXW_FLAGS      10 /* EXM_BLANK, EXM_OK */
#define EXW_PEAK       11 /* then cpeak, mthresh, the threshold t0: float bits */
#define EXW_NPIX       15 /* the object's pixels */
#define EXW_LAST       16 /* and 17: the raster index of its last pixel (SEP's scan completes it there), 64-bit */
#define EXM_BLANK      1u /* a pixel touches a NaN or masked one */
#define EXM_OK         2u /* else the host measures the object itself (mthresh's array too small, or a NaN in it) */
#define EX_MOM_HEAP    64 /* the largest minarea whose mthresh the device finds */

#if defined(__OPENCL_VERSION__)
#define exc_bits(f) as_uint(f)
#define exc_take(p) atomic_inc(p)
#elif defined(__CUDACC__)
#define exc_bits(f) __float_as_uint(f)
#define exc_take(p) atomicAdd(p, 1u)
#else
typedef union {
    float f;
    unsigned u;
} exc_word;
static inline unsigned exc_bits(float f) { return ((exc_word){ .f = f }).u; }
/* The float whose bits are u: a measure's float word, read on the host. */
static inline float exc_float(unsigned u) { return ((exc_word){ .u = u }).f; }
#define exc_take(p) ((*(p))++)
#endif

#define EXC_NONOBJECT  0
#define EXC_OBJECT     1
#define EXC_COMPLETE   2
#define EXC_INCOMPLETE 3
#define EXC_UNKNOWN    (-1)

/* lz_join: b's chain after a's (ids local to the component; -1: none). */
EX_FN void exc_join(EX_GLOBAL int *nx, EX_GLOBAL int *af, EX_GLOBAL int *al, int bf, int bl)
{
    if (*af == -1) {
        *af = bf;
        *al = bl;
    } else if (bl != -1) {
        nx[*al] = bf;
        *al = bl;
    }
}

/* Record r's pixel is a local maximum of its component: no 8-neighbour of the same label has a larger filtered
 * value (mark_maxima's test, in which the pixels of no record hold -inf). 1 or 0 into lmax[r]. */
EX_FN void ex_chain_maximum(unsigned long r, EX_CONST unsigned *ru, EX_CONST float *rf, unsigned long cap,
                            EX_CONST int *labels, EX_CONST float *cdm, long w, long h, EX_GLOBAL unsigned char *lmax)
{
    const long i = (long)(ru[r] & ~EX_BLANK_BIT), x = i % w, y = i / w;
    const int l = (int)ru[5 * cap + r];
    const float v = rf[2 * cap + r];
    unsigned char top = 1;
    for (long yy = y - 1; yy <= y + 1 && top; yy++)
        for (long xx = x - 1; xx <= x + 1; xx++) {
            if (yy < 0 || yy >= h || xx < 0 || xx >= w || (yy == y && xx == x)) continue;
            const long q = yy * w + xx;
            if (labels[q] == l && cdm[q] > v) {
                top = 0;
                break;
            }
        }
    lmax[r] = top;
}

/* Word i of out before the chains: grp's records and starts as they are, the thresholds' words 0. A kernel's writes
 * where a buffer copy and a fill would do: after those (a fill is a host write on Oclgrind), Oclgrind's
 * uninitialised-value check reported ex_chain_measured's reads of the chains, which ex_chain had written; with every
 * word of out a kernel's write it reports none. */
EX_FN void ex_chain_copy(unsigned long i, unsigned long cnt, unsigned long nl, EX_CONST unsigned *grp,
                         EX_GLOBAL unsigned *out)
{
    out[i] = i < cnt + nl + 1 ? grp[i] : 0u;
}

/* Whether the component of records grp[s .. e - 1] (raster order) touches a band's border rows (gpuws_extract_host
 * in bands, extract_host.c): a record before raster index lo (the band's first own row and those above, where bands
 * lie above) or at hi or after (its last own row, where bands lie below). Such a component may go on in the next band:
 * the host joins its parts, so the device neither chains nor measures it and the host reads all of its records.
 * In-core, lo = 0 and hi is past the image: none does. */
EX_FN int ex_on_border(EX_CONST unsigned *grp, EX_CONST unsigned *ru, unsigned long s, unsigned long e,
                       unsigned long lo, unsigned long hi)
{
    return e > s && ((ru[grp[s]] & ~EX_BLANK_BIT) < lo || (ru[grp[e - 1]] & ~EX_BLANK_BIT) >= hi);
}

/* Whether label l goes into the list of components to chain (at an atomic count's place: the order does not matter,
 * each writes only its own records' places): those of minarea to most records (a component's scan is one thread's
 * work, so the largest, few, stay with the host's threads) that touch no band border (ex_on_border; ru: the
 * records' raster indices). */
EX_FN int ex_chain_listed(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *grp, int minarea,
                          unsigned long most, EX_CONST unsigned *ru, unsigned long lo, unsigned long hi)
{
    const unsigned long s = grp[cnt + l], e = l < nl ? grp[cnt + l + 1] : cnt, m = e - s;
    return m >= (unsigned long)minarea && m > 0 && m <= most && !ex_on_border(grp, ru, s, e, lo, hi);
}

/* The chain of a component with one run of pixels on every row (most small ones), which Lutz's scan makes without
 * ever holding two partial objects: each row's run joins the chain so far at the column where the run above starts
 * (its 'S' marker), so the pixels of the row left of that column come before the chain so far and the rest after it:
 * chain(y) = left(y) + chain(y - 1) + right(y), chain(first row) = its run. So the chain is the left parts from the
 * last row up, the first row, then the right parts from the second row down, each part in column order. rel: each
 * record's (row - first row) w + column, in raster order; rec: the m record numbers; out: the chain; lefts: room
 * for a count a row. */
EX_FN void ex_chain_runs(EX_CONST int *rel, unsigned long m, long w, EX_CONST unsigned *rec, EX_GLOBAL unsigned *out,
                         EX_GLOBAL int *lefts)
{
    long total = 0, first = 0, row = -1, a = -1, above = -1;
    for (unsigned long k = 0; k < m; k++) { /* each row's left part, the first row's run */
        const long ry = rel[k] / w, x = rel[k] % w;
        if (ry != row) {
            above = a, a = x, row = ry;
            lefts[ry] = 0;
        }
        if (ry == 0) first++;
        else if (x < above) lefts[ry]++, total++;
    }
    long before = 0, right = total + first; /* the left parts of the rows so far; the next right pixel's place */
    row = -1, a = -1, above = -1;
    for (unsigned long k = 0; k < m; k++) {
        const long ry = rel[k] / w, x = rel[k] % w;
        if (ry != row) {
            above = a, a = x, row = ry;
            before += ry ? lefts[ry] : 0;
        }
        const long at = ry == 0 ? total + (x - a) : x < above ? total - before + (x - a) : right++;
        out[at] = rec[k];
    }
}

/* mthresh's array of m excesses (extract_clean.c: gpuws__ex_mthresh, which shares this): its first replaced by t, then
 * SExtractor's walk from slot j to the smaller of slots k - 1 and k (k = 2(j + 1)), and on from k. */
EX_FN void ex_heap_replace(float *heap, unsigned long m, float t)
{
    heap[0] = t;
    for (unsigned long j = 0, kk; (kk = (j + 1) << 1) <= m; j = kk) {
        unsigned long child = kk - 1;
        if (kk != m && heap[kk - 1] > heap[kk]) {
            child = kk;
            kk++;
        }
        if (heap[j] <= heap[child]) break;
        const float sw = heap[child];
        heap[child] = heap[j];
        heap[j] = sw;
    }
}

/* SEP's measures of the object of the m records ch (chain order) at threshold t0, as the host makes them
 * (extract_objects.c: gpuws__ex_preanalyse, gpuws__ex_analyse up to its sums, blank_flag, the catalogue's flux
 * variance; extract_clean.c: gpuws__ex_mthresh), into mo (EX_MOM_DOUBLES). */
EX_FN void ex_chain_measure(EX_CONST unsigned *ch, unsigned long m, EX_CONST unsigned *ru, EX_CONST float *rf,
                            unsigned long cap, long w, float t0, int noise, float thresh, float relthresh, double gain,
                            int minarea, EX_GLOBAL double *mo)
{
    EX_CONST float *val = rf + cap, *cd = rf + 2 * cap, *sig = rf + 3 * cap;
    EX_GLOBAL unsigned *mw = (EX_GLOBAL unsigned *)(mo + EXM_WORDS);
    double rv = 0.0;
    float peak = -EX_BIG, cpeak = -EX_BIG;
    long xmin = w, xmax = 0, ymin = 0, ymax = 0, xpk = 0, ypk = 0, xcpk = 0, ycpk = 0;
    unsigned blank = 0, last = 0;
    for (unsigned long k = 0; k < m; k++) {
        const unsigned u = ru[ch[k]];
        const long i = (long)(u & ~EX_BLANK_BIT), x = i % w, y = i / w;
        const float v = val[ch[k]], c = cd[ch[k]];
        blank |= u & EX_BLANK_BIT;
        last = (unsigned)i > last ? (unsigned)i : last;
        if (peak < v) peak = v, xpk = x, ypk = y;
        if (cpeak < c) cpeak = c, xcpk = x, ycpk = y;
        rv += c;
        if (k == 0) ymin = ymax = y;
        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
        ymin = y < ymin ? y : ymin;
        ymax = y > ymax ? y : ymax;
    }
    const float fdflux = (float)rv;
    const double th = (double)t0, rvd = (double)fdflux, th2 = (th + (double)peak) / 2.0;
    double mx = 0.0, my = 0.0, mx2 = 0.0, my2 = 0.0, mxy = 0.0, tv = 0.0;
    unsigned dnpix = 0, area2 = 0;
    for (unsigned long k = 0; k < m; k++) {
        const long i = (long)(ru[ch[k]] & ~EX_BLANK_BIT);
        const float x = (float)(i % w - xmin), y = (float)(i / w - ymin), c = cd[ch[k]], v = val[ch[k]];
        const float cx = ex_fmul(c, x), cy = ex_fmul(c, y);
        tv += v;
        dnpix += v > th;
        area2 += v > th2;
        mx += cx;
        my += cy;
        mx2 += ex_fmul(cx, x);
        my2 += ex_fmul(cy, y);
        mxy += ex_fmul(cx, y);
    }
    const double xm = mx / rvd, ym = my / rvd;
    double cvarsum = 0.0, ex2 = 0.0, ey2 = 0.0, exy = 0.0, fv = 0.0;
    for (unsigned long k = 0; k < m; k++) {
        const unsigned r = ch[k];
        const long i = (long)(ru[r] & ~EX_BLANK_BIT);
        const double dx = (double)(i % w - xmin) - xm, dy = (double)(i / w - ymin) - ym;
        const double s2 = (double)ex_fmul(sig[r], sig[r]);
        double cvar = noise != EX_NOISE_NONE ? s2 : 0.0;
        if (gain > 0.0 && cd[r] > 0.0f) cvar = ex_dadd(cvar, (double)cd[r] / gain);
        cvarsum += cvar;
        ex2 = ex_dadd(ex2, ex_dmul(ex_dmul(cvar, dx), dx));
        ey2 = ex_dadd(ey2, ex_dmul(ex_dmul(cvar, dy), dy));
        exy = ex_dadd(exy, ex_dmul(ex_dmul(cvar, dx), dy));
        if (noise != EX_NOISE_NONE) fv += s2;
        if (gain > 0.0 && val[r] > 0.0f) fv = ex_dadd(fv, (double)val[r] / gain);
    }
    /* mthresh: SExtractor's heap of the excesses, its first minarea sorted when the next pixel comes (a stable sort:
     * any gives the host's merge sort's order, but for a NaN, which the host orders its own way) */
    float heap[EX_MOM_HEAP];
    const unsigned long ma = (unsigned long)minarea;
    int ok = minarea >= 1 && minarea <= EX_MOM_HEAP;
    for (unsigned long k = 0; ok && k < m; k++) {
        const unsigned r = ch[k];
        const float t = cd[r] - (noise == EX_NOISE_MAP ? ex_fmul(relthresh, sig[r]) : thresh);
        if (k < ma) {
            heap[k] = t;
        } else if (k == ma) {
            for (unsigned long a = 0; a < ma; a++) {
                const float e = heap[a];
                unsigned long b = a;
                ok &= e == e;
                for (; b > 0 && e < heap[b - 1]; b--) heap[b] = heap[b - 1];
                heap[b] = e;
            }
        } else if (t > heap[0]) {
            ex_heap_replace(heap, ma, t);
        }
    }
    mo[EXM_RV] = rv;
    mo[EXM_TV] = tv;
    mo[EXM_XM] = xm;
    mo[EXM_XM + 1] = ym;
    mo[EXM_XM + 2] = mx2 / rvd - ex_dmul(xm, xm);
    mo[EXM_XM + 3] = my2 / rvd - ex_dmul(ym, ym);
    mo[EXM_XM + 4] = mxy / rvd - ex_dmul(xm, ym);
    mo[EXM_CVARSUM] = cvarsum;
    mo[EXM_CVARSUM + 1] = ex2;
    mo[EXM_CVARSUM + 2] = ey2;
    mo[EXM_CVARSUM + 3] = exy;
    mo[EXM_FVAR] = fv;
    mw[EXW_XMIN] = (unsigned)xmin;
    mw[EXW_XMIN + 1] = (unsigned)xmax;
    mw[EXW_XMIN + 2] = (unsigned)ymin;
    mw[EXW_XMIN + 3] = (unsigned)ymax;
    mw[EXW_XMIN + 4] = (unsigned)xpk;
    mw[EXW_XMIN + 5] = (unsigned)ypk;
    mw[EXW_XMIN + 6] = (unsigned)xcpk;
    mw[EXW_XMIN + 7] = (unsigned)ycpk;
    mw[EXW_DNPIX] = dnpix;
    mw[EXW_AREA2] = area2;
    mw[EXW_FLAGS] = (blank ? EXM_BLANK : 0u) | (ok ? EXM_OK : 0u);
    mw[EXW_PEAK] = exc_bits(peak);
    mw[EXW_PEAK + 1] = exc_bits(cpeak);
    mw[EXW_PEAK + 2] = exc_bits(!ok || m < ma ? 0.0f : heap[0]);
    mw[EXW_PEAK + 3] = exc_bits(t0);
    mw[EXW_NPIX] = (unsigned)m;
    mw[EXW_LAST] = last;
    mw[EXW_LAST + 1] = 0u;
}

/* Listed component l, if ex_chain chained it: a slot of mom taken from *taken, its number in the label's word
 * after the grouping (which held the threshold: it moves into the slot), and its object's measures there. */
EX_FN void ex_chain_measured(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *grp,
                             EX_CONST unsigned *ru, EX_CONST float *rf, unsigned long cap, long w, int noise,
                             float thresh, float relthresh, double gain, int minarea, EX_GLOBAL unsigned *out,
                             EX_GLOBAL unsigned *taken, EX_GLOBAL double *mom)
{
    const unsigned start = out[cnt + l];
    if (!(start & EX_CHAIN_BIT)) return;
    const unsigned long s = start & ~EX_CHAIN_BIT, e = l < nl ? grp[cnt + l + 1] : cnt;
    EX_GLOBAL float *t0s = (EX_GLOBAL float *)(out + cnt + nl + 1);
    const float t0 = t0s[l];
    const unsigned slot = exc_take(taken);
    out[cnt + nl + 1 + l] = slot;
    ex_chain_measure(out + s, e - s, ru, rf, cap, w, t0, noise, thresh, relthresh, gain, minarea,
                     mom + (unsigned long)slot * EX_MOM_DOUBLES);
}

/* Component l (listed) into out: its threshold, and where it cannot split its records in chain order and its start
 * marked (out holds a copy of grp, and zeros for the thresholds, before). noise, thresh, relthresh, sep12: the
 * host's parameters (gpuws__extract_params), xn: deblend_nthresh; lmax: ex_chain_maximum's. */
EX_FN void ex_chain(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *grp, EX_CONST unsigned *ru,
                    EX_CONST float *rf, unsigned long cap, EX_CONST unsigned char *lmax, long w, int xn, int noise,
                    float thresh, float relthresh, int sep12, EX_GLOBAL unsigned *out, EX_GLOBAL int *nx_all,
                    EX_GLOBAL int *ints, EX_GLOBAL unsigned char *bytes)
{
    const unsigned long s = grp[cnt + l], e = l < nl ? grp[cnt + l + 1] : cnt, m = e - s;
    EX_GLOBAL float *t0s = (EX_GLOBAL float *)(out + cnt + nl + 1);
    EX_CONST float *cd = rf + 2 * cap;
    /* the component's threshold, as the host's complist; its peak and columns */
    const unsigned last = grp[e - 1];
    const int mean = noise == EX_NOISE_MAP && !sep12;
    const long ymin = (long)((ru[grp[s]] & ~EX_BLANK_BIT) / (unsigned long)w);
    const long ymax = (long)((ru[last] & ~EX_BLANK_BIT) / (unsigned long)w);
    EX_GLOBAL int *nx = nx_all + s; /* first each record's place from the box's first row (the scan's walk), then
                                     * the chains' links, written only where the walk has passed */
    double sum = 0.0;
    float peak = -EX_BIG;
    long xmin = w, xmax = 0, prev = 0;
    int runs = 1; /* one run of pixels on every row */
    for (unsigned long k = s; k < e; k++) {
        const unsigned r = grp[k];
        const long i = (long)(ru[r] & ~EX_BLANK_BIT), x = i % w;
        nx[k - s] = (int)(i - ymin * w);
        if (k > s && i / w == prev / w && i != prev + 1) runs = 0;
        prev = i;
        if (mean) sum += (double)ex_fmul(relthresh, rf[3 * cap + r]);
        if (peak < cd[r]) peak = cd[r];
        xmin = x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
    }
    const float t0 = noise != EX_NOISE_MAP ? thresh
                     : sep12               ? ex_fmul(relthresh, rf[4 * cap + last])
                                           : (float)(sum / (double)m);
    t0s[l] = t0;
    /* the local maxima above (a little under) the first level */
    if (xn > 1) {
        if (!(t0 > 0.0f)) return;
        const double pk = (double)peak;
        const float t1 = (float)(pk > 0.0 ? (double)t0 * pow(pk / (double)t0, 1.0 / (double)xn) : (double)t0);
        if (!isfinite(t1)) return;
        const float low = (float)((double)t1 - fabs((double)t1) * EX_CHAIN_MARGIN);
        int above = 0;
        for (unsigned long k = s; k < e; k++) {
            const unsigned r = grp[k];
            if (lmax[r] && cd[r] > low && ++above > 1) return;
        }
    }
    const unsigned long room = EX_CHAIN_ROOM(cnt, nl), c0 = s + 2 * l;
    if (runs) { /* one run a row: the scan's chain in closed form */
        ex_chain_runs(nx, m, w, grp + s, out + s, ints + c0);
        out[cnt + l] = (unsigned)s | EX_CHAIN_BIT;
        return;
    }
    /* Lutz's scan of the box [xmin, xmax] x [ymin, ymax], its pixels the component's records in raster order. The
     * scan acts at a column only where a pixel lies, a run has just ended, or the row above left a marker, and it
     * leaves markers only where this row's runs start or end: so it visits those columns alone (the row above's
     * run bounds, in order in `above`, merged with the pixels), which makes its time the records', not the box's. */
    EX_GLOBAL int *pf = ints + c0, *pl = ints + room + c0, *sf = ints + 2 * room + c0, *sl = ints + 3 * room + c0,
                  *start = ints + 4 * room + c0, *end = ints + 5 * room + c0;
    EX_GLOBAL int *above = ints + 6 * room + c0, *bounds = ints + 7 * room + c0;
    EX_GLOBAL unsigned char *marker = bytes + c0, *psstack = bytes + room + 2 * c0;
    const long bw = xmax - xmin + 1;
    for (long xi = 0; xi <= bw; xi++) marker[xi] = 0;
    int co = 0, pstop = 0, done = 0, ff = -1, nabove = 0;
    unsigned long nids = 0;
    long at = nx[0] - xmin; /* the next record's place in its row of the box, from the box's first row */
    start[0] = EXC_UNKNOWN;
    for (long y = ymin; y <= ymax + 1; y++) {
        int ps = EXC_COMPLETE, cs = EXC_NONOBJECT, nb = 0, ia = 0;
        const long row = (y - ymin) * w;
        for (long xi = -1;;) {
            /* the next column to visit: right after a pixel in a run, else the nearer of the next pixel on this
             * row and the next bound of a run above */
            long nxt = nids < m && at < row + bw ? at - row : bw + 1;
            if (ia < nabove && above[ia] < nxt) nxt = above[ia];
            if (cs == EXC_OBJECT) nxt = xi + 1;
            if (nxt > bw) break;
            xi = nxt;
            if (ia < nabove && above[ia] == xi) ia++;
            const unsigned char nm = marker[xi];
            marker[xi] = 0;
            int id = -1;
            if (xi < bw && at == row + xi && nids < m) {
                id = (int)nids++;
                if (nids < m) at = nx[nids] - xmin;
            }
            if (id >= 0) {
                nx[id] = -1;
                if (cs != EXC_OBJECT) { /* a run starts */
                    cs = EXC_OBJECT;
                    bounds[nb++] = (int)xi;
                    if (ps == EXC_OBJECT) {
                        if (start[co] == EXC_UNKNOWN) {
                            marker[xi] = 'S';
                            start[co] = (int)xi;
                        } else {
                            marker[xi] = 's';
                        }
                    } else {
                        psstack[pstop++] = (unsigned char)ps;
                        marker[xi] = 'S';
                        start[++co] = (int)xi;
                        ps = EXC_COMPLETE;
                        pf[co] = -1;
                        pl[co] = -1;
                    }
                }
            }
            if (nm == 'S') { /* an object of the row above starts here */
                psstack[pstop++] = (unsigned char)ps;
                if (cs == EXC_NONOBJECT) {
                    psstack[pstop++] = EXC_COMPLETE;
                    ++co;
                    pf[co] = sf[xi];
                    pl[co] = sl[xi];
                    start[co] = EXC_UNKNOWN;
                } else {
                    exc_join(nx, &pf[co], &pl[co], sf[xi], sl[xi]);
                }
                ps = EXC_OBJECT;
            } else if (nm == 's') { /* a later run of it: the current run joins two partial objects */
                if (cs == EXC_OBJECT && ps == EXC_COMPLETE) {
                    pstop--;
                    const int x2 = start[co];
                    exc_join(nx, &pf[co - 1], &pl[co - 1], pf[co], pl[co]);
                    if (start[--co] == EXC_UNKNOWN) start[co] = x2;
                    else marker[x2] = 's';
                }
                ps = EXC_OBJECT;
            } else if (nm == 'f') {
                ps = EXC_INCOMPLETE;
            } else if (nm == 'F') { /* a run of the row above ends here */
                ps = psstack[--pstop];
                if (cs == EXC_NONOBJECT && ps == EXC_COMPLETE) {
                    if (start[co] == EXC_UNKNOWN) { /* nothing of it on this row: finished */
                        if (pf[co] != -1) {
                            done++;
                            ff = pf[co];
                        }
                    } else {
                        marker[end[co]] = 'F';
                        sf[start[co]] = pf[co];
                        sl[start[co]] = pl[co];
                    }
                    co--;
                    ps = psstack[--pstop];
                }
            }
            if (id >= 0) {
                exc_join(nx, &pf[co], &pl[co], id, id);
            } else if (cs == EXC_OBJECT) { /* a run ends */
                cs = EXC_NONOBJECT;
                bounds[nb++] = (int)xi;
                if (ps != EXC_COMPLETE) {
                    marker[xi] = 'f';
                    end[co] = (int)xi;
                } else {
                    ps = psstack[--pstop];
                    marker[xi] = 'F';
                    sf[start[co]] = pf[co];
                    sl[start[co]] = pl[co];
                    co--;
                }
            }
        }
        EX_GLOBAL int *const was = above; /* this row's bounds are the next row's run bounds above */
        above = bounds, bounds = was, nabove = nb;
    }
    if (done != 1 || nids != m) return; /* not one object of every record: the host's scan decides */
    unsigned long k = s;
    int id = ff;
    for (; id != -1 && k < e; id = nx[id]) out[k++] = grp[s + (unsigned long)id];
    if (k != e || id != -1) { /* a chain of other than the records: raster order again */
        for (k = s; k < e; k++) out[k] = grp[k];
        return;
    }
    out[cnt + l] = (unsigned)s | EX_CHAIN_BIT;
}

/* ---- what the host reads: the records of the components it works on (extract.c: extract_gpu_compact) ----
 * A measured component's object is its slot; the host reads none of its records, nor those of a component below
 * minarea. The others' records (the components the host deblends, and the chained ones it measures itself) go into
 * compact arrays in the grouping's order, numbered from 0, and the host reads those instead of every record. */

/* Whether label l's component is measured on the device (out: ex_chain's output; mom: the slots). */
EX_FN int ex_compact_measured(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *out,
                              EX_CONST double *mom)
{
    if (!(out[cnt + l] & EX_CHAIN_BIT)) return 0;
    EX_CONST unsigned *mw =
        (EX_CONST unsigned *)(mom + (unsigned long)out[cnt + nl + 1 + l] * EX_MOM_DOUBLES + EXM_WORDS);
    return (mw[EXW_FLAGS] & EXM_OK) != 0;
}

/* The records of label l that the host reads: need[l - 1] (0: none), for label_scan. A component on a band's border
 * (ex_on_border, never chained: its records in raster order) is read whatever its size here. */
EX_FN void ex_compact_need(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *out,
                           EX_CONST double *mom, int minarea, EX_CONST unsigned *ru, unsigned long lo, unsigned long hi,
                           EX_GLOBAL int *need)
{
    const unsigned long s = out[cnt + l] & ~EX_CHAIN_BIT, e = l < nl ? out[cnt + l + 1] & ~EX_CHAIN_BIT : cnt;
    const int host = e > s && (e - s >= (unsigned long)minarea || ex_on_border(out, ru, s, e, lo, hi)) &&
                     !ex_compact_measured(l, nl, cnt, out, mom);
    need[l - 1] = host ? (int)(e - s) : 0;
}

/* The record at place i of the grouping (out) into the compact arrays at its label's place there (at: need after
 * label_scan, at[nl] the compact records, which is the arrays' stride): nread arrays, the first the raster index. */
EX_FN void ex_compact_place(unsigned long i, unsigned long nl, unsigned long cnt, EX_CONST unsigned *out,
                            EX_CONST unsigned *ru, unsigned long cap, EX_CONST int *at, unsigned nread,
                            EX_GLOBAL unsigned *cu)
{
    const unsigned r = out[i];
    const unsigned long l = ru[5 * cap + r]; /* the label, the records' sixth array */
    const unsigned long a = (unsigned long)at[l - 1], b = (unsigned long)at[l];
    if (a == b) return;
    const unsigned long m = (unsigned long)at[nl], k = a + i - (out[cnt + l] & ~EX_CHAIN_BIT);
    for (unsigned q = 0; q < nread; q++) cu[q * m + k] = ru[q * cap + r];
}

/* The host's grouping of the compact records, word j of 2 (nl + 1) + 1: start[l] (the compact place, with the
 * chain bit), then each label's word (its threshold or slot), then the slots taken (*taken). */
EX_FN void ex_compact_group(unsigned long j, unsigned long nl, unsigned long cnt, EX_CONST unsigned *out,
                            EX_CONST int *at, EX_CONST unsigned *taken, EX_GLOBAL unsigned *cg)
{
    if (j == 0) cg[0] = 0u;
    else if (j <= nl) cg[j] = (unsigned)at[j - 1] | (out[cnt + j] & EX_CHAIN_BIT);
    else if (j < 2 * nl + 2) cg[j] = out[cnt + j];
    else cg[j] = *taken;
}

#endif
