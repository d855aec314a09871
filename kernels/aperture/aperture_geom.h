/* The per-pixel arithmetic of aperture photometry that must be the same everywhere: shared by the scalar reference
 * (aperture_ref.c), the CUDA kernel (aperture.cu) and the OpenCL kernel (aperture.cl, into which
 * cmake/embed_cl.cmake copies this file). Valid C11, CUDA and OpenCL C (with fp64); it includes nothing (the C
 * includer brings <math.h>). docs/algorithms/aperture.md describes the algorithm.
 *
 * An aperture reaches the device as AP_PARAMS doubles (aperture_ref.c prepares them on the host): its centre, the
 * ellipse's quadratic form cxx x^2 + cyy y^2 + cxy xy in units of the unscaled axes (a circle: 1, 1, 0), the
 * squared radius in that metric and the two squared margins around it, the scaled semi-axes and the rotation that
 * map it onto the unit circle, and the pixel box [xmin, xmax) x [ymin, ymax) (SEP's box). */
#ifndef GPUWS_APERTURE_GEOM_H
#define GPUWS_APERTURE_GEOM_H

#define AP_X      0 /* centre, 0-based pixel coordinates */
#define AP_Y      1
#define AP_CXX    2 /* the metric: rpix2 = cxx dx^2 + cyy dy^2 + cxy dx dy */
#define AP_CYY    3
#define AP_CXY    4
#define AP_R2     5 /* r^2 in the metric: the aperture's edge */
#define AP_RIN2   6 /* pixels with rpix2 <= this lie wholly inside */
#define AP_ROUT2  7 /* pixels with rpix2 >= this lie wholly outside and are not visited */
#define AP_A      8 /* semi-axes in pixels (a r, b r; a circle: r, r) */
#define AP_B      9
#define AP_COS    10 /* cos and sin of -theta */
#define AP_SIN    11
#define AP_XMIN   12 /* the box, integers held as doubles; xmax and ymax exclusive */
#define AP_XMAX   13
#define AP_YMIN   14
#define AP_YMAX   15
#define AP_PARAMS 16

/* What the device returns per aperture (AP_RAW doubles). Sums: the unmasked weighted sum, its weighted variance,
 * the total weight, the masked weight, the number of masked pixels visited. Kron: sum of sqrt(rpix2) * pixel, sum of
 * pixels, pixels used, pixels masked (or below -AP_BIG), unused. */
#define AP_RAW 5

#define AP_BLOCK 128    /* work-items per aperture on GPUs */
#define AP_BIG   1e+30  /* kron: pixels below -AP_BIG count as masked (SEP's BIG) */
#define AP_EDGE  0.7072 /* a margin just above half a pixel's diagonal, sqrt(2) / 2 */

/* Products and sums whose rounding decides whether a pixel or sample is inside: never contracted into an FMA
 * (nvcc contracts by default; the .cl turns contraction off; C compilers in ISO mode do not contract). */
#if defined(__CUDACC__)
#define AP_MUL(a, b) __dmul_rn((a), (b))
#define AP_ADD(a, b) __dadd_rn((a), (b))
#else
#define AP_MUL(a, b) ((a) * (b))
#define AP_ADD(a, b) ((a) + (b))
#endif

#if defined(__OPENCL_VERSION__)
#define AP_FN     static inline
#define AP_GLOBAL __global
#define AP_U64    ulong
#elif defined(__CUDACC__)
#define AP_FN static __device__ __forceinline__
#define AP_GLOBAL
#define AP_U64 unsigned long long
#else
#define AP_FN static inline
#define AP_GLOBAL
#define AP_U64 unsigned long long
#endif

/* The signed area of the triangle (origin, P, Q) intersected with the unit disk. The edge PQ is cut where it
 * crosses the circle; each piece inside the disk contributes its triangle with the origin, each piece outside the
 * sector it subtends. Summed over a polygon's edges this is the signed area of the polygon within the disk. */
AP_FN double ap_edge_in_disk(double px, double py, double qx, double qy)
{
    const double ex = qx - px, ey = qy - py;
    const double qa = ex * ex + ey * ey, qb = px * ex + py * ey, qc = px * px + py * py - 1.0;
    double cut[4], t0 = 0.0, t1 = 0.0;
    int k = 0;
    cut[k++] = 0.0;
    /* |P + tE|^2 = 1 at t = (-qb ± sqrt(disc)) / qa; the line is inside the disk strictly between the roots. A line
     * that misses or touches the circle (disc <= 0) is outside: deciding by the midpoint's distance would count a
     * tangent edge, whose midpoint can lie on the circle, as inside. */
    const double disc = qb * qb - qa * qc;
    const int crosses = qa > 0.0 && disc > 0.0;
    if (crosses) {
        const double root = sqrt(disc), q = qb >= 0.0 ? -(qb + root) : -(qb - root); /* no cancellation */
        t0 = q / qa;
        t1 = qc / q;
        if (t0 > t1) {
            const double t = t0;
            t0 = t1;
            t1 = t;
        }
        if (t0 > 0.0 && t0 < 1.0) cut[k++] = t0;
        if (t1 > 0.0 && t1 < 1.0) cut[k++] = t1;
    }
    cut[k++] = 1.0;
    double area = 0.0;
    for (int i = 0; i + 1 < k; i++) {
        const double ux = px + cut[i] * ex, uy = py + cut[i] * ey;
        const double vx = px + cut[i + 1] * ex, vy = py + cut[i + 1] * ey;
        const double tm = 0.5 * (cut[i] + cut[i + 1]), cross = ux * vy - uy * vx;
        if (crosses && tm > t0 && tm < t1) area += 0.5 * cross;
        else area += 0.5 * atan2(cross, ux * vx + uy * vy);
    }
    return area;
}

/* The exact area of the pixel centred at offset (dx, dy) from the centre that lies inside the ellipse of
 * semi-axes A, B (pixels) rotated by theta: the pixel's corners mapped to the frame where the ellipse is the unit
 * circle, the quadrilateral's area within the disk, scaled back by A B. */
AP_FN double ap_exact(AP_GLOBAL const double *p, double dx, double dy)
{
    const double A = p[AP_A], B = p[AP_B], c = p[AP_COS], s = p[AP_SIN];
    if (!(A > 0.0) || !(B > 0.0)) return 0.0;
    const double xs[4] = { dx - 0.5, dx + 0.5, dx + 0.5, dx - 0.5 }, ys[4] = { dy - 0.5, dy - 0.5, dy + 0.5, dy + 0.5 };
    double u[4], v[4];
    for (int i = 0; i < 4; i++) {
        u[i] = (xs[i] * c - ys[i] * s) / A;
        v[i] = (xs[i] * s + ys[i] * c) / B;
    }
    double area = 0.0;
    for (int i = 0; i < 4; i++) area += ap_edge_in_disk(u[i], v[i], u[(i + 1) & 3], v[(i + 1) & 3]);
    return fabs(area) * A * B;
}

/* SEP's sampled overlap: subpix x subpix points per pixel, at the centres of the sub-pixels, each inside the
 * aperture (rpix2 < r^2) counting 1 / subpix^2. The points are stepped by repeated addition, as SEP places them. */
AP_FN double ap_sampled(AP_GLOBAL const double *p, double dx, double dy, int subpix)
{
    const double step = 1.0 / subpix, cxx = p[AP_CXX], cyy = p[AP_CYY], cxy = p[AP_CXY], r2 = p[AP_R2];
    const double start = 0.5 * (step - 1.0);
    double sy = AP_ADD(dy, start);
    int inside = 0;
    for (int j = 0; j < subpix; j++, sy = AP_ADD(sy, step)) {
        const double sy2 = AP_MUL(sy, sy);
        double sx = AP_ADD(dx, start);
        for (int i = 0; i < subpix; i++, sx = AP_ADD(sx, step))
            if (AP_ADD(AP_ADD(AP_MUL(AP_MUL(cxx, sx), sx), AP_MUL(cyy, sy2)), AP_MUL(AP_MUL(cxy, sx), sy)) < r2)
                inside++;
    }
    return inside * (step * step);
}

/* The metric distance^2 of pixel (ix, iy) from the centre. */
AP_FN double ap_rpix2(AP_GLOBAL const double *p, double dx, double dy)
{
    return AP_ADD(AP_ADD(AP_MUL(AP_MUL(p[AP_CXX], dx), dx), AP_MUL(AP_MUL(p[AP_CYY], dy), dy)),
                  AP_MUL(AP_MUL(p[AP_CXY], dx), dy));
}

/* The weight of pixel (ix, iy) in a sum: its overlap with the aperture (exact, or sampled when subpix > 0); -1 for a
 * pixel beyond the outer margin, which SEP does not visit (it neither adds nor flags it). */
AP_FN double ap_weight(AP_GLOBAL const double *p, double ix, double iy, int subpix)
{
    const double dx = ix - p[AP_X], dy = iy - p[AP_Y], rpix2 = ap_rpix2(p, dx, dy);
    if (!(rpix2 < p[AP_ROUT2])) return -1.0;
    if (!(rpix2 > p[AP_RIN2])) return 1.0;
    return subpix == 0 ? ap_exact(p, dx, dy) : ap_sampled(p, dx, dy, subpix);
}

/* Pixel q of the image, less the background map's pixel when there is one: a difference of floats, the value SEP
 * reads from the array data - bkg. */
AP_FN float ap_pixel(AP_GLOBAL const float *image, AP_GLOBAL const float *back, int has_back, AP_U64 q)
{
    return has_back ? image[q] - back[q] : image[q];
}

/* Adds pixel q = (ix, iy) of the image (less back) to the AP_RAW sums s of aperture p (aperture_geom.h's header
 * says what they hold): kron = 0, SEP's weighted sums (its variance from rms[q] or var0, both held in a float as
 * SEP does); kron = 1, the Kron sums over the pixels with rpix2 <= r^2. Pixels SEP does not visit add nothing. */
AP_FN void ap_add_pixel(AP_GLOBAL const double *p, AP_GLOBAL const float *image, AP_GLOBAL const float *back,
                        AP_GLOBAL const float *rms, AP_GLOBAL const unsigned char *mask, int has_back, int has_rms,
                        int has_mask, float var0, int kron, int subpix, AP_U64 ix, AP_U64 iy, AP_U64 q, double *s)
{
    const int masked = has_mask && mask[q] != 0;
    if (kron) {
        const double rpix2 = ap_rpix2(p, (double)ix - p[AP_X], (double)iy - p[AP_Y]);
        if (!(rpix2 <= p[AP_R2])) return;
        const float v = ap_pixel(image, back, has_back, q);
        if (v < -AP_BIG || masked) {
            s[3] += 1.0;
        } else {
            s[0] += sqrt(rpix2) * v;
            s[1] += v;
            s[2] += 1.0;
        }
        return;
    }
    const double w = ap_weight(p, (double)ix, (double)iy, subpix);
    if (w < 0.0) return;
    if (masked) {
        s[3] += w;
        s[4] += 1.0;
    } else {
        const float e = has_rms ? rms[q] : 0.0f, var = has_rms ? e * e : var0;
        s[0] += (double)ap_pixel(image, back, has_back, q) * w;
        s[1] += (double)var * w;
    }
    s[2] += w;
}

#endif
