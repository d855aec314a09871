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
 * in raster order, the order of the component's records, so it walks them instead of a box.
 *
 * Inputs: grp, the records grouped by label (extract_sort_*): the cnt record numbers, then start[0 .. nl] (label l:
 * grp[start[l] .. start[l + 1] - 1], start[nl + 1] = cnt); the records (ru / rf, six arrays of cap words); the
 * labels and the filtered map (cdm) of the image. Output out: first a copy of grp (extract.c copies it), then each
 * label's threshold as a float (t0s[l] = out[cnt + nl + 1 + l], l = 1 .. nl; 0 for those not listed); the kernels
 * put the records of each component that cannot split in chain order and set EX_CHAIN_BIT on its start. Three
 * kernels: ex_chain_maximum a record each (the local maxima), ex_chain_listed a label each (the components to chain,
 * listed), ex_chain a listed component each. Scratch, disjoint between labels: nx (cnt ints) and, for label l from
 * place start[l] + 2 l, room for its box's columns: six int arrays and the marker bytes (EX_CHAIN_ROOM(cnt, nl)
 * entries each), the state stack (twice that). */
#ifndef GPUWS_EXTRACT_CHAIN_H
#define GPUWS_EXTRACT_CHAIN_H

#define EX_CHAIN_AUTO 256 /* records of the largest component chained (knob extract_chain auto) */
/* Records of the largest component whose chain the kernel makes by Lutz's scan (the rest of those that are not one
 * run a row go to the host): the scan is one work-item's, and the largest component it takes bounds the kernel's
 * time, while the host scans the next larger ones quickly (docs/algorithms/extract.md has the figures). */
#define EX_CHAIN_SCAN          32
#define EX_CHAIN_ROOM(cnt, nl) ((cnt) + 2 * ((nl) + 1))
#define EX_CHAIN_MARGIN        1e-5 /* how much lower the device's first level lies, relatively */

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

/* Whether label l goes into the list of components to chain (at an atomic count's place: the order does not matter,
 * each writes only its own records' places): those of minarea to most records (a component's scan is one thread's
 * work, so the largest, few, stay with the host's threads). */
EX_FN int ex_chain_listed(unsigned long l, unsigned long nl, unsigned long cnt, EX_CONST unsigned *grp, int minarea,
                          unsigned long most)
{
    const unsigned long m = (l < nl ? grp[cnt + l + 1] : cnt) - grp[cnt + l];
    return m >= (unsigned long)minarea && m > 0 && m <= most;
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
    if (m > EX_CHAIN_SCAN) return;
    /* Lutz's scan of the box [xmin, xmax] x [ymin, ymax], its pixels the component's records in raster order */
    EX_GLOBAL int *pf = ints + c0, *pl = ints + room + c0, *sf = ints + 2 * room + c0, *sl = ints + 3 * room + c0,
                  *start = ints + 4 * room + c0, *end = ints + 5 * room + c0;
    EX_GLOBAL unsigned char *marker = bytes + c0, *psstack = bytes + room + 2 * c0;
    const long bw = xmax - xmin + 1;
    for (long xi = 0; xi <= bw; xi++) marker[xi] = 0;
    int co = 0, pstop = 0, done = 0, ff = -1;
    unsigned long nids = 0;
    long at = nx[0] - xmin; /* the next record's place in its row of the box, from the box's first row */
    start[0] = EXC_UNKNOWN;
    for (long y = ymin; y <= ymax + 1; y++) {
        int ps = EXC_COMPLETE, cs = EXC_NONOBJECT;
        const long row = (y - ymin) * w;
        for (long xi = 0; xi <= bw; xi++) {
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

#endif
