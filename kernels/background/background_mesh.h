/* The arithmetic of the mesh background that must be the same everywhere: shared by the scalar reference
 * (background_ref.c), the CUDA kernels (background.cu) and the OpenCL kernels (background.cl, into which
 * cmake/embed_cl.cmake copies this file), so one text defines each step. Valid C11, CUDA and OpenCL C (with fp64);
 * it includes nothing (the C includer brings <math.h>). The steps follow SExtractor's back.c as SEP 1.2 has it,
 * rewritten; the choices that decide a float bit (which divisions are float, where f64 rounds to f32) are SEP's.
 * docs/algorithms/background.md describes the algorithm. */
#ifndef GPUWS_BACKGROUND_MESH_H
#define GPUWS_BACKGROUND_MESH_H

#define BG_NSIGMA      5               /* the histogram spans mean ± 5σ */
#define BG_MAXLEVELS   4096            /* at most this many histogram bins */
#define BG_AMIN        4               /* with at least this many "mode pixels" per bin on average */
#define BG_BIG         1e+30           /* pixels <= -BG_BIG are unusable; a bad mesh's statistics are -BG_BIG */
#define BG_PI          3.1415926535898 /* SEP's value of π, which decides the bin count */
#define BG_BLOCK       256             /* largest work-group of the mesh kernel (static local arrays) */
#define BG_LANES       256             /* a mesh's pixel sums run in this many lanes (below), at least BG_BLOCK */
#define BG_PLANES      8  /* planes of the grid plan: back, its y-spline, their x-splines; the same for rms */
#define BG_ROW_COEFS   4  /* per image row: the y weights of (lower node, upper node, their y-splines) */
#define BG_COL_COEFS   4  /* per image column: the x weights of (left node, its x-spline, right node, its x-spline) */
#define BG_INTERP_ROWS 32 /* image rows per work-item of background_interp */
#if BG_LANES < BG_BLOCK
#error "the mesh kernel's local doubles (3 BG_LANES + 1) hold bg_mode_group's 3 B + 1 for B <= BG_BLOCK"
#endif

#if defined(__OPENCL_VERSION__)
#define BG_FN     static inline
#define BG_HIST   __local
#define BG_GLOBAL __global
#define BG_U64    ulong
#elif defined(__CUDACC__)
#define BG_FN static __device__ __forceinline__
#define BG_HIST
#define BG_GLOBAL
#define BG_U64 unsigned long long
#else
#define BG_FN static inline
#define BG_HIST
#define BG_GLOBAL
#define BG_U64 unsigned long long
#endif

/* A mesh has enough usable pixels when at least half of its pixels are: SEP compares in float. */
BG_FN int bg_enough(double usable, double mesh_pixels) { return !((float)usable < (float)(mesh_pixels * 0.5)); }

/* The order of a mesh's pixel sums, the same on every backend, since f64 sums of floats depend on it (a bright sky
 * loses bits in every mesh): lane l of BG_LANES adds the mesh's pixels l, l + BG_LANES, l + 2 BG_LANES, ... in turn
 * (numbered in raster order within the mesh), then the lanes' partials are added pairwise, p[l] += p[l + h] for
 * h = BG_LANES / 2, ..., 1, into p[0]. A work-group runs that as a strided loop and a tree (bg_group_pass); the
 * reference adds in raster order into the lanes and folds them here. Lanes from `used` on have no pixel: adding
 * their +0.0 changes no partial (none is -0.0), so they are left out. */
#if !defined(__OPENCL_VERSION__) && !defined(__CUDACC__)
BG_FN double bg_lanes_fold(double *p, unsigned used)
{
    for (unsigned h = BG_LANES / 2; h > 0; h >>= 1)
        for (unsigned l = 0; l < h && l + h < used; l++) p[l] += p[l + h];
    return p[0];
}
#endif

/* The first pass's cuts: mean ± 2σ of the usable pixels (sums s, ss of n values), rounded to float. */
BG_FN void bg_cuts(double s, double ss, double n, float *lcut, float *hcut)
{
    const double mean = s / n, var = ss / n - mean * mean, sd = var > 0.0 ? sqrt(var) : 0.0;
    *lcut = (float)(mean - 2.0 * sd);
    *hcut = (float)(mean + 2.0 * sd);
}

/* The second pass's statistics and the histogram they define; returns the number of bins. */
BG_FN int bg_levels(double s, double ss, double n, float *mean, float *sigma, float *qzero, float *qscale)
{
    const double m = s / n, var = ss / n - m * m, sd = var > 0.0 ? sqrt(var) : 0.0;
    const double step = sqrt(2.0 / BG_PI) * BG_NSIGMA / BG_AMIN;
    const double want = step * n + 1.0; /* compared before the conversion: huge meshes overflow an int */
    const int levels = want < BG_MAXLEVELS ? (int)want : BG_MAXLEVELS;
    *mean = (float)m;
    *sigma = (float)sd;
    *qscale = sd > 0.0 ? (float)(2.0 * BG_NSIGMA * sd / levels) : 1.0f;
    *qzero = (float)(m - BG_NSIGMA * sd);
    return levels;
}

/* A float quotient, correctly rounded on every device: the f64 quotient of two floats rounds to the same float
 * as an exact division would (53 >= 2 * 24 + 2 bits), whereas OpenCL's f32 division may be off by ulps. In OpenCL C
 * the f64 quotient is formed from the reciprocal and one fma correction (error below 2^-52 relative, while a
 * quotient of floats is never closer than about 2^-49 to a float rounding boundary): the plain
 * (float)((double)a / (double)b) is a pattern an optimiser may shrink to the f32 division a / b, which IEEE
 * arithmetic allows and OpenCL then computes to 2.5 ulp (NVIDIA's OpenCL does both, and its histograms moved). */
#if defined(__OPENCL_VERSION__)
BG_FN float bg_fdiv(float a, float b)
{
    const double da = a, db = b, r = 1.0 / db, q = da * r;
    if (!isfinite(q) || q == 0.0) return (float)q;
    return (float)fma(fma(-q, db, da), r, q);
}
#else
BG_FN float bg_fdiv(float a, float b) { return (float)((double)a / (double)b); }
#endif

/* The offset that makes bin = (int)(pix / qscale + cste) round to the nearest bin, as SEP computes it. */
BG_FN float bg_cste(float qzero, float qscale) { return (float)(0.499999 - (double)bg_fdiv(qzero, qscale)); }

/* pix's histogram bin, or -1 outside [0, levels): SEP truncates toward zero, so values in (-1, 0) land in bin 0;
 * NaN lands nowhere (the comparisons fail before any conversion). */
BG_FN int bg_bin(float pix, float qscale, float cste, int levels)
{
    const float v = bg_fdiv(pix, qscale) + cste;
    return (v > -1.0f && v < (float)levels) ? (int)v : -1;
}

/* A rounded bin position: SEP rounds half away from zero and stops the low cut at 0 and the high cut at top; the
 * low cut also stops at top, and a NaN or infinite position (which SEP converts undefinedly) takes the bound. */
BG_FN int bg_round_cut(double x, int top, int low_side)
{
    if (low_side) {
        if (!(x > 0.0)) return 0;
        return x + 0.5 >= (double)top ? top : (int)(x + 0.5);
    }
    if (!(x < (double)top)) return top;
    if (!(x > -1e9)) return -1; /* an empty range, as any negative cut gives */
    return (int)(x > 0.0 ? x + 0.5 : x - 0.5);
}

/* The end of one clipping pass of the mode (both walks below): the median interpolated inside the bin where the
 * walks met (a from below with `below` counts, b from above with `above`), the clipped mean and σ in bins from the
 * pass's sums, and the next clip range [lo, hi]. */
BG_FN void bg_pass_end(const BG_HIST unsigned int *hist, int a, int b, double below, double above, double total,
                       double s1, double s2, int top, double *med, double *mea, double *sig, int *lo, int *hi)
{
    if (b >= 0) {
        const unsigned int ha = hist[a], hb = hist[b];
        *med = b + 0.5 + (above - below) / (2.0 * (double)(ha > hb ? ha : hb));
    } else {
        *med = 0.0;
    }
    double m = 0.0, v = 0.0;
    if (total > 0.0) {
        m = s1 / total;
        v = s2 / total - m * m;
    }
    *mea = m;
    *sig = v > 0.0 ? sqrt(v) : 0.0;
    *lo = bg_round_cut(*med - 3.0 * *sig, top, 1);
    *hi = bg_round_cut(*med + 3.0 * *sig, top, 0);
}

/* The mesh's background and (in *rms) its σ from the last pass, in data units. */
BG_FN float bg_mode_of(double sig, double mea, double med, float qzero, float qscale, float *rms)
{
    *rms = (float)(sig * qscale);
    if (!(fabs(sig) > 0.0)) return (float)(qzero + mea * qscale);
    if (fabs((mea - med) / sig) < 0.3) return (float)(qzero + (2.5 * med - 1.5 * mea) * qscale);
    return (float)(qzero + med * qscale);
}

/* The mode and rms of a mesh from its histogram (hist[0..levels)): clip at median ± 3σ (in bins) until σ stops
 * moving (relative change <= 1e-4), drops below 0.1 bin, or 100 passes are made. The median walks in from both
 * ends of the clipped range, always on the side holding fewer counts, and is interpolated inside the bin where
 * the walks meet. mean, sigma, qzero, qscale: the mesh's second-pass statistics and histogram position. */
BG_FN float bg_mode(const BG_HIST unsigned int *hist, int levels, float mean, float qzero, float qscale, float *rms)
{
    const int top = levels - 1;
    int lo = 0, hi = top;
    double sig = 10.0 * top, prev = 1.0, mea = mean, med = mean;
    for (int pass = 0; pass < 100 && sig >= 0.1 && fabs(sig / prev - 1.0) > 1e-4; pass++) {
        prev = sig;
        BG_U64 total = 0, below = 0, above = 0;
        double s1 = 0.0, s2 = 0.0;
        int a = lo, b = hi; /* the next bins the low and the high walk take */
        for (int i = lo; i <= hi; i++) {
            if (below < above) below += hist[a++];
            else above += hist[b--];
            const unsigned int h = hist[i];
            total += h;
            const double t = (double)h * i;
            s1 += t;
            s2 += t * i;
        }
        bg_pass_end(hist, a, b, (double)below, (double)above, (double)total, s1, s2, top, &med, &mea, &sig, &lo, &hi);
    }
    return bg_mode_of(sig, mea, med, qzero, qscale, rms);
}

#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)
#if defined(__OPENCL_VERSION__)
#define BG_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#define BG_SHARED __local
#else
#define BG_SYNC() __syncthreads()
#define BG_SHARED
#endif

/* One pass of a mesh's pixel sums (s, ss and the count n) by a work-group of B work-items (B a power of two, at
 * most BG_LANES), in bg_lanes_fold's order whatever B is: work-item lid runs lanes lid, lid + B, ..., then the
 * work-group adds the lanes pairwise. first: the usable pixels; otherwise the unmasked ones within [lcut, hcut].
 * red: 3 BG_LANES doubles, free again on return. The mesh is npx pixels, mw wide, from (x0, y0). */
BG_FN void bg_group_pass(const BG_GLOBAL float *image, const BG_GLOBAL unsigned char *mask, unsigned has_mask,
                         unsigned width, unsigned x0, unsigned y0, unsigned mw, unsigned npx, int first, float lcut,
                         float hcut, double *s, double *ss, double *n, BG_SHARED double *red, unsigned lid, unsigned B)
{
    for (unsigned l = lid; l < BG_LANES; l += B) {
        double ls = 0.0, lss = 0.0, ln = 0.0;
        for (unsigned i = l; i < npx; i += BG_LANES) {
            const BG_U64 p = (BG_U64)(y0 + i / mw) * width + x0 + i % mw;
            const float v = image[p];
            if ((!has_mask || mask[p] == 0) && (first ? (double)v > -BG_BIG : (v <= hcut && v >= lcut))) {
                ls += v;
                lss += (double)v * v;
                ln += 1.0;
            }
        }
        red[l] = ls;
        red[BG_LANES + l] = lss;
        red[2 * BG_LANES + l] = ln;
    }
    BG_SYNC();
    for (unsigned h = BG_LANES / 2; h > 0; h >>= 1) {
        for (unsigned l = lid; l < h; l += B) {
            red[l] += red[l + h];
            red[BG_LANES + l] += red[BG_LANES + l + h];
            red[2 * BG_LANES + l] += red[2 * BG_LANES + l + h];
        }
        BG_SYNC();
    }
    *s = red[0];
    *ss = red[BG_LANES];
    *n = red[2 * BG_LANES];
    BG_SYNC();
}

/* The sum of red[0..B) over the work-group (B a power of two), returned to every work-item; red is free again on
 * return. */
BG_FN double bg_group_total(BG_SHARED double *red, unsigned lid, unsigned B)
{
    for (unsigned h = B / 2; h > 0; h >>= 1) {
        if (lid < h) red[lid] += red[lid + h];
        BG_SYNC();
    }
    const double t = red[0];
    BG_SYNC();
    return t;
}

/* bg_mode by a work-group of B work-items (B a power of two, red: 3 B + 1 doubles of local memory), with the same
 * result bit for bit. Every sum over bins is of integers below 2^53 (counts, count x bin, count x bin^2 for meshes
 * of fewer than 2^29 pixels), so any order gives the sequential value. The median walk needs no sequence either:
 * with C[i] the counts of the first i bins of [lo, hi] and T their total, the walk takes bin lo + i from the low side
 * exactly when C[i] + C[i + 1] < T (it is a merge of the low side's running sums with the high side's, ties to the
 * high side), so it ends at a = lo + #{i : C[i] + C[i + 1] < T}, b = a - 1, with C[a - lo] counts below. */
BG_FN float bg_mode_group(const BG_HIST unsigned int *hist, int levels, float mean, float qzero, float qscale,
                          float *rms, unsigned lid, unsigned B, BG_SHARED double *red)
{
    const int top = levels - 1;
    int lo = 0, hi = top;
    double sig = 10.0 * top, prev = 1.0, mea = mean, med = mean;
    for (int pass = 0; pass < 100 && sig >= 0.1 && fabs(sig / prev - 1.0) > 1e-4; pass++) {
        prev = sig;
        const int nb = hi - lo + 1, chunk = nb > 0 ? (nb + (int)B - 1) / (int)B : 0;
        const int i0 = (int)lid * chunk, i1 = i0 + chunk < nb ? i0 + chunk : nb;
        double cs = 0.0, s1 = 0.0, s2 = 0.0;
        for (int i = i0; i < i1; i++) {
            const unsigned int h = hist[lo + i];
            const double t = (double)h * (lo + i);
            cs += h;
            s1 += t;
            s2 += t * (lo + i);
        }
        red[lid] = s1;
        red[B + lid] = s2;
        red[2 * B + lid] = cs;
        BG_SYNC();
        for (unsigned h = B / 2; h > 0; h >>= 1) { /* s1 and s2 reduce while the counts are scanned */
            if (lid < h) {
                red[lid] += red[lid + h];
                red[B + lid] += red[B + lid + h];
            }
            BG_SYNC();
        }
        for (unsigned off = 1; off < B; off <<= 1) { /* inclusive scan of the chunks' counts */
            const double v = lid >= off ? red[2 * B + lid - off] : 0.0;
            BG_SYNC();
            red[2 * B + lid] += v;
            BG_SYNC();
        }
        s1 = red[0];
        s2 = red[B];
        const double total = red[3 * B - 1], c0 = red[2 * B + lid] - cs; /* C at this chunk's first bin */
        BG_SYNC();
        double c = c0, taken = 0.0;
        for (int i = i0; i < i1; i++) {
            const double c1 = c + hist[lo + i];
            if (c + c1 < total) taken += 1.0;
            c = c1;
        }
        red[lid] = taken;
        BG_SYNC();
        const int low = (int)bg_group_total(red, lid, B);
        if (nb > 0 && low / chunk == (int)lid) { /* this chunk holds bin lo + low: C there is the count below */
            double cb = c0;
            for (int i = i0; i < low; i++) cb += hist[lo + i];
            red[3 * B] = cb;
        }
        BG_SYNC();
        const double below = nb > 0 ? red[3 * B] : 0.0, above = nb > 0 ? total - below : 0.0;
        BG_SYNC();
        const int a = nb > 0 ? lo + low : lo, b = nb > 0 ? a - 1 : hi;
        bg_pass_end(hist, a, b, below, above, total, s1, s2, top, &med, &mea, &sig, &lo, &hi);
    }
    return bg_mode_of(sig, mea, med, qzero, qscale, rms);
}
#endif

/* The 16 plan values one map needs for the pixels between grid rows row0 and row1 (offsets of rows in the grid)
 * and columns k and k1, from the grid plan (background_ref.h: plan layout): g = the map's first plane (its node
 * values; then + n its y-spline, + 2n the x-spline of the values' rows, + 3n the x-spline of the y-spline's rows).
 * A device thread keeps them while its rows stay between the same grid rows. */
BG_FN void bg_nodes(const BG_GLOBAL float *g, BG_U64 n, BG_U64 row0, BG_U64 row1, int k, int k1, float c[16])
{
    for (int plane = 0; plane < 4; plane++) {
        const BG_GLOBAL float *q = g + plane * n;
        c[4 * plane + 0] = q[row0 + k];
        c[4 * plane + 1] = q[row1 + k];
        c[4 * plane + 2] = q[row0 + k1];
        c[4 * plane + 3] = q[row1 + k1];
    }
}

/* back or rms at one pixel from its map's bg_nodes c, the row's y weights ry[0..4) and the column's x weights
 * cx[0..4) (a device thread keeps those too). Every plane enters linearly, so SEP's per-row spline through the y-interpolated nodes equals this sum
 * of precomputed rows. */
BG_FN float bg_interp(const float c[16], const BG_GLOBAL float *ry, const float cx[4])
{
    const float *v = c, *dv = c + 4, *sv = c + 8, *sdv = c + 12; /* [row0 k, row1 k, row0 k1, row1 k1] */
    const float node0 = ry[0] * v[0] + ry[1] * v[1] + ry[2] * dv[0] + ry[3] * dv[1];
    const float node1 = ry[0] * v[2] + ry[1] * v[3] + ry[2] * dv[2] + ry[3] * dv[3];
    const float d0 = ry[0] * sv[0] + ry[1] * sv[1] + ry[2] * sdv[0] + ry[3] * sdv[1];
    const float d1 = ry[0] * sv[2] + ry[1] * sv[3] + ry[2] * sdv[2] + ry[3] * sdv[3];
    return cx[0] * node0 + cx[1] * d0 + cx[2] * node1 + cx[3] * d1;
}

#endif
