/* Cleaning's pair test (SEP's clean, extract_clean.c) and its search for an object's neighbours on the device
 * (extract_clean_pairs, extract.cu / extract.cl). Valid C11, CUDA and OpenCL C (with fp64), after extract_pixel.h;
 * it includes nothing.
 *
 * The test of a pair is SEP's arithmetic, operation by operation (ex_fmul / ex_dmul: no fused products), but for
 * one power, which devices do not round as the host's libm does: the device decides a pair only where its power
 * lies further than EX_CL_MARGIN (relatively) from the mthresh it is compared with, a million times any device's
 * error, and leaves the others to the host (EX_CL_UNSURE), which tests them with its own pow. So every decision
 * the device makes is the host's.
 *
 * The search walks a grid as the host's (extract_clean.c's levels by a, each a grid of cells), which the device
 * builds from the host's levels (a count a cell, a scan, a place in the cell each: the order within a cell is the
 * atomics', which no result depends on). Any cells that hold every object within SEP's zone will do: the zone test
 * itself (ex_clean_far) is exact. */
#ifndef GPUWS_EXTRACT_CLEAN_H
#define GPUWS_EXTRACT_CLEAN_H

#define EX_CLEAN_ZONE 10.0 /* SExtractor's: cleaning looks this many (a1 + a2) far */
/* A pair's word: j << 2 | one of these (i explains j, which goes; j explains i; the host tests the pair). */
#define EX_CL_J      0u
#define EX_CL_I      1u
#define EX_CL_UNSURE 2u
/* The most words an object has from the device (knob extract_clean_most auto); one with more pairs is the host's to
 * search. */
#define EX_CL_MOST        64
#define EX_CL_MARGIN      9.5367431640625e-07 /* 2^-20 */
#define EX_CL_DEVICE_FROM 4096 /* the fewest objects whose pairs the device works out (knob extract_clean auto) */

/* Whether SEP's clean passes over the pair as too far apart: further than 10 (a1 + a2), in SEP's float arithmetic
 * (never when an a is NaN or infinite). */
EX_FN int ex_clean_far(double mx1, double my1, float a1, double mx2, double my2, float a2)
{
    const float dx = (float)(mx1 - mx2), dy = (float)(my1 - my2);
    float rlim = ex_fadd(a1, a2);
    rlim = ex_fmul(rlim, rlim);
    return (double)ex_fadd(ex_fmul(dx, dx), ex_fmul(dy, dy)) >
           ex_dmul(ex_dmul((double)rlim, EX_CLEAN_ZONE), EX_CLEAN_ZONE);
}

/* Whether (float)x > m is decided by x alone, whatever the last bits of a power in x: x lies further than margin
 * times |m| from m, both finite and m normal. With margin EX_CL_MARGIN, (float)x' of any x' within 2^-30 of x
 * (relatively) then lies on the same side of m as (float)x. */
EX_FN int ex_clean_sure(double x, float m, double margin)
{
    const double dm = (double)m;
    return fabs(x) <= 1e300 && fabs(dm) >= 1.1754943508222875e-38 && fabs(dm) <= 3.4028234663852886e+38 &&
           fabs(x - dm) > fabs(dm) * margin;
}

/* Whether the object of profile (amp, alpha, cxx, cyy, cxy), (dx, dy) away from another whose mthresh is m,
 * explains it: SEP's 1 + alpha (cxx dx² + cyy dy² + cxy dx dy) = val, then amp val^-beta against m. 1 or 0; with a
 * margin > 0 (a device), -1 where the power's rounding could decide (ex_clean_sure). */
EX_FN int ex_clean_explains(double amp, double alpha, float cxx, float cyy, float cxy, float dx, float dy, double beta,
                            float m, double margin)
{
    const float q =
        ex_fadd(ex_fadd(ex_fmul(ex_fmul(cxx, dx), dx), ex_fmul(ex_fmul(cyy, dy), dy)), ex_fmul(ex_fmul(cxy, dx), dy));
    const double val = ex_dadd(1.0, ex_dmul(alpha, (double)q));
    if (!(val > 1.0)) return 0;
    if (!(val < 1e10)) return 0.0f > m;
    const double x = ex_dmul(amp, pow(val, -beta));
    if (margin > 0.0 && !ex_clean_sure(x, m, margin)) return -1;
    return (float)x > m;
}

/* How far from an object of a the objects of a level whose largest a is amax may lie and be within SEP's zone:
 * 10 (a + amax), with a margin for SEP's float arithmetic (a float overflow there spares every pair). */
EX_FN double ex_clean_reach(float a, double amax)
{
    const double s = (double)a + amax;
    return s > 1e18 ? 1e300 : s * EX_CLEAN_ZONE * (1.0 + 1e-4) + 1e-3;
}

/* The cell of coordinate x in a row or column of g cells of width cell, clamped to the grid. */
EX_FN unsigned long ex_clean_cell(double x, double cell, unsigned long g)
{
    const double t = floor(x / cell);
    return t <= 0.0 ? 0 : t >= (double)(g - 1) ? g - 1 : (unsigned long)t;
}

/* Object i's cell, numbered over every level's grid: level k (lvl[i]) has cells of width lvd[2 k] (lvd[2 k + 1] its
 * largest a), lvu[3 k] across and lvu[3 k + 1] down, the first numbered lvu[3 k + 2]. */
EX_FN unsigned ex_clean_cell_of(unsigned long i, EX_CONST double *d, EX_CONST unsigned char *lvl, EX_CONST double *lvd,
                                EX_CONST unsigned *lvu)
{
    const unsigned k = lvl[i];
    const double cell = lvd[2 * k];
    return lvu[3 * k + 2] + (unsigned)(ex_clean_cell(d[4 * i + 1], cell, lvu[3 * k + 1]) * lvu[3 * k] +
                                       ex_clean_cell(d[4 * i], cell, lvu[3 * k]));
}

/* Object i's pairs with the later objects of the grid within its zone (every object lies in the grid: finite
 * positions and a), those that act or are unsure, in two passes. Pass 0 counts them: cnt[i] (at most most + 1,
 * where the search stops). Pass 1, after an exclusive scan of the counts (cnt[i] is then i's first word and
 * cnt[i + 1] - cnt[i] its count), writes them from words[cnt[i]], unless i has more than most. d: mx, my, amp,
 * alpha of each object; f: a, fdflux, mthresh, cxx, cyy, cxy; margin: ex_clean_sure's (EX_CL_MARGIN; a test leaves
 * every power to the host with a huge one). The grid: the nused levels used[], as ex_clean_cell_of reads them; cell
 * c holds cellids[cstart[c] .. cstart[c + 1] - 1]. */
EX_FN void ex_clean_pairs(unsigned long i, EX_CONST double *d, EX_CONST float *f, double beta, double margin, int most,
                          unsigned nused, EX_CONST unsigned *used, EX_CONST double *lvd, EX_CONST unsigned *lvu,
                          EX_CONST unsigned *cellids, EX_CONST int *cstart, unsigned pass, EX_GLOBAL int *cnt,
                          EX_GLOBAL unsigned *words)
{
    const int at = pass ? cnt[i] : 0;
    if (pass && cnt[i + 1] - at > most) return;
    const double mx = d[4 * i], my = d[4 * i + 1];
    const float a = f[6 * i], fd = f[6 * i + 1];
    int c = 0;
    for (unsigned u = 0; u < nused && c <= most; u++) {
        const unsigned k = used[u];
        const double cell = lvd[2 * k], r = ex_clean_reach(a, lvd[2 * k + 1]);
        const unsigned long gx = lvu[3 * k], gy = lvu[3 * k + 1], cfirst = lvu[3 * k + 2];
        const unsigned long x0 = ex_clean_cell(mx - r, cell, gx), x1 = ex_clean_cell(mx + r, cell, gx);
        const unsigned long y0 = ex_clean_cell(my - r, cell, gy), y1 = ex_clean_cell(my + r, cell, gy);
        for (unsigned long y = y0; y <= y1 && c <= most; y++)
            for (unsigned long q = cfirst + y * gx + x0; q <= cfirst + y * gx + x1 && c <= most; q++)
                for (int m = cstart[q]; m < cstart[q + 1] && c <= most; m++) {
                    const unsigned long j = cellids[m];
                    if (j <= i || ex_clean_far(mx, my, a, d[4 * j], d[4 * j + 1], f[6 * j])) continue;
                    const float dx = (float)(mx - d[4 * j]), dy = (float)(my - d[4 * j + 1]);
                    /* the brighter explains the other: i when j's flux is below i's */
                    const int kills_j = f[6 * j + 1] < fd;
                    const unsigned long e = kills_j ? i : j;
                    const int x = ex_clean_explains(d[4 * e + 2], d[4 * e + 3], f[6 * e + 3], f[6 * e + 4],
                                                    f[6 * e + 5], dx, dy, beta, f[6 * (kills_j ? j : i) + 2], margin);
                    if (x == 0) continue;
                    if (pass) words[at + c] = (unsigned)(j << 2) | (x < 0 ? EX_CL_UNSURE : kills_j ? EX_CL_J : EX_CL_I);
                    c++;
                }
    }
    if (!pass) cnt[i] = c;
}

#endif
