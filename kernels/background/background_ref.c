/* Mesh background, scalar reference (see background_ref.h; the algorithm: docs/algorithms/background.md). */
#include "background_ref.h"

#include "../../core/alloc.h"   /* gpuws__malloc: allocations the fault tests can fail */
#include "../../core/threads.h" /* the meshes and the pixels on the host's cores */

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "background_mesh.h"

bool gpuws__background_layout(size_t width, size_t height, int bw, int bh, gpuws__background_plan *p)
{
    memset(p, 0, sizeof *p);
    if (width == 0 || height == 0 || bw < 1 || bh < 1) return false;
    p->nx = (width - 1) / (size_t)bw + 1;
    p->ny = (height - 1) / (size_t)bh + 1;
    p->n = p->nx * p->ny; /* <= width * height, which the caller has checked */
    if (p->n > SIZE_MAX / 64 || width > SIZE_MAX / 64 || height > SIZE_MAX / 64) return false;
    p->rows = BG_PLANES * p->n;
    p->cols = p->rows + BG_ROW_COEFS * height;
    p->row_k = p->cols + BG_COL_COEFS * width;
    p->col_k = p->row_k + height;
    p->words = p->col_k + width;
    return true;
}

static bool usable(const float *image, const uint8_t *mask, size_t i)
{
    return (!mask || mask[i] == 0) && (double)image[i] > -BG_BIG;
}

/* Parts of `pixels` pixels of work in `items` rows (of meshes or of pixels), at least 2^18 pixels each: each mesh
 * and each pixel is computed alone, in the same order, so any number gives the same bits. */
static size_t ref_parts(size_t pixels, size_t items)
{
    return gpuws__work_parts(gpuws__cpu_count(), (double)pixels, 262144.0, items);
}

typedef struct {
    const float *image;
    const uint8_t *mask;
    size_t width, height;
    int bw, bh;
    float *mesh;
} mesh_job;

/* The meshes of the mesh rows [my0, my1). */
static void mesh_rows(void *arg, size_t part, size_t my0, size_t my1)
{
    (void)part;
    const mesh_job *j = arg;
    const float *image = j->image;
    const uint8_t *mask = j->mask;
    const size_t width = j->width, height = j->height;
    const int bw = j->bw, bh = j->bh;
    float *mesh = j->mesh;
    const size_t nx = (width - 1) / (size_t)bw + 1;
    unsigned int hist[BG_MAXLEVELS];    /* one mesh's histogram at a time */
    double ps[BG_LANES], pss[BG_LANES]; /* and its sums in bg_lanes_fold's lanes */
    for (size_t my = my0; my < my1; my++)
        for (size_t mx = 0; mx < nx; mx++) {
            const size_t x0 = mx * (size_t)bw, y0 = my * (size_t)bh;
            const size_t mw = x0 + (size_t)bw <= width ? (size_t)bw : width - x0;
            const size_t mh = y0 + (size_t)bh <= height ? (size_t)bh : height - y0;
            float *out = mesh + 2 * (my * nx + mx);
            const unsigned used = mw * mh < BG_LANES ? (unsigned)(mw * mh) : BG_LANES; /* lanes with pixels */
            double n = 0;
            memset(ps, 0, used * sizeof *ps);
            memset(pss, 0, used * sizeof *pss);
            for (size_t r = y0, i = 0; r < y0 + mh; r++)
                for (size_t c = x0; c < x0 + mw; c++, i++)
                    if (usable(image, mask, r * width + c)) {
                        const double v = image[r * width + c];
                        ps[i % BG_LANES] += v;
                        pss[i % BG_LANES] += v * v;
                        n++;
                    }
            if (!bg_enough(n, (double)mw * (double)mh)) {
                out[0] = out[1] = (float)-BG_BIG;
                continue;
            }
            float lcut, hcut;
            bg_cuts(bg_lanes_fold(ps, used), bg_lanes_fold(pss, used), n, &lcut, &hcut);
            memset(ps, 0, used * sizeof *ps);
            memset(pss, 0, used * sizeof *pss);
            n = 0;
            for (size_t r = y0, i = 0; r < y0 + mh; r++)
                for (size_t c = x0; c < x0 + mw; c++, i++) {
                    const size_t k = r * width + c;
                    const float v = image[k];
                    if ((!mask || mask[k] == 0) && v <= hcut && v >= lcut) {
                        ps[i % BG_LANES] += v;
                        pss[i % BG_LANES] += (double)v * v;
                        n++;
                    }
                }
            const double s = bg_lanes_fold(ps, used), ss = bg_lanes_fold(pss, used);
            float mean, sigma, qzero, qscale;
            const int levels = bg_levels(s, ss, n, &mean, &sigma, &qzero, &qscale);
            const float cste = bg_cste(qzero, qscale);
            memset(hist, 0, (size_t)levels * sizeof *hist);
            for (size_t r = y0; r < y0 + mh; r++)
                for (size_t c = x0; c < x0 + mw; c++) {
                    const size_t i = r * width + c;
                    const int b = bg_bin(image[i], qscale, cste, levels);
                    if (b >= 0 && (!mask || mask[i] == 0)) hist[b]++;
                }
            out[0] = bg_mode(hist, levels, mean, qzero, qscale, &out[1]);
        }
}

void gpuws_background_mesh_ref(const float *image, const uint8_t *mask, size_t width, size_t height, int bw, int bh,
                               float *mesh)
{
    const size_t ny = (height - 1) / (size_t)bh + 1;
    mesh_job j = { image, mask, width, height, bw, bh, mesh };
    gpuws__run_ranges(ny, ref_parts(width * height, ny), mesh_rows, &j);
}

/* ---- the grid steps ---- */

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x > y ? 1 : (x < y ? -1 : 0);
}

/* The k-th smallest of v[0..n) (k < n), v reordered so that v[0..k) holds the k smaller ones: Hoare's selection,
 * linear on average where sorting the grid of a large image (tens of thousands of meshes) dominated the call. */
static float select_kth(float *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1;
    const ptrdiff_t kk = (ptrdiff_t)k;
    while (lo < hi) {
        const float pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                const float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (kk <= j) hi = j;
        else if (kk >= i) lo = i;
        else break; /* v[j + 1 .. i) all equal the pivot */
    }
    return v[k];
}

/* The k-th smallest of the few values v[0..n) (no NaN): the value with at most k smaller ones and more than k
 * smaller or equal. Counting compares without branches, which beats sorting windows of random order. */
static float rank_kth(const float *v, size_t n, size_t k)
{
    for (size_t i = 0; i < n; i++) {
        size_t lt = 0, le = 0;
        for (size_t j = 0; j < n; j++) {
            lt += v[j] < v[i];
            le += v[j] <= v[i];
        }
        if (lt <= k && k < le) return v[i];
    }
    return v[k];
}

/* The median of v[0..n) (reordered), as SEP: the middle value, or the mean of the two middle ones rounded to float.
 * The filter's windows (a few values) are ranked, larger sets selected. */
static float median(float *v, size_t n)
{
    if (n < 2) return v[0];
    float lower, upper;
    if (n <= 64) {
        lower = rank_kth(v, n, (n - 1) / 2);
        upper = n & 1 ? lower : rank_kth(v, n, n / 2);
    } else {
        upper = select_kth(v, n, n / 2);
        lower = upper;
        if (!(n & 1)) { /* the largest of the lower half */
            lower = v[0];
            for (size_t i = 1; i < n / 2; i++)
                if (v[i] > lower) lower = v[i];
        }
    }
    return n & 1 ? upper : (float)((lower + upper) / 2.0);
}

static bool bad(float v) { return (double)v <= -BG_BIG; }

/* Step 2: a bad mesh takes the average of the good meshes nearest to it on the grid (float sums in raster order). */
static void fill_bad(size_t nx, size_t ny, float *back, float *sigma, float *back2, size_t *nbad)
{
    *nbad = 0;
    for (size_t py = 0, i = 0; py < ny; py++)
        for (size_t px = 0; px < nx; px++, i++) {
            back2[i] = back[i];
            if (!bad(back[i])) continue;
            ++*nbad;
            double best = INFINITY;
            float val = 0, sval = 0;
            int count = 0;
            for (size_t y = 0, j = 0; y < ny; y++)
                for (size_t x = 0; x < nx; x++, j++) {
                    if (bad(back[j])) continue;
                    const double dx = (double)x - (double)px, dy = (double)y - (double)py, d2 = dx * dx + dy * dy;
                    if (d2 < best) {
                        best = d2;
                        val = back[j];
                        sval = sigma[j];
                        count = 1;
                    } else if (d2 == best) {
                        val += back[j];
                        sval += sigma[j];
                        count++;
                    }
                }
            back2[i] = count ? val / (float)count : 0.0f;
            sigma[i] = count ? sval / (float)count : 1.0f;
        }
    memcpy(back, back2, nx * ny * sizeof *back);
}

/* Step 3: the median filter, its window shrunk symmetrically at the edges (SEP's). win: room for the window. */
static void filter(size_t nx, size_t ny, int fw, int fh, double fthresh, float *back, float *sigma, float *back2,
                   float *sigma2, float *win_b, float *win_s)
{
    const size_t hx = (size_t)fw / 2, hy = (size_t)fh / 2;
    for (size_t py = 0; py < ny; py++)
        for (size_t px = 0; px < nx; px++) {
            size_t rx = hx, ry = hy;
            if (rx > nx - 1 - px) rx = nx - 1 - px;
            if (rx > px) rx = px;
            if (ry > ny - 1 - py) ry = ny - 1 - py;
            if (ry > py) ry = py;
            size_t m = 0;
            for (size_t y = py - ry; y <= py + ry; y++)
                for (size_t x = px - rx; x <= px + rx; x++, m++) {
                    win_b[m] = back[y * nx + x];
                    win_s[m] = sigma[y * nx + x];
                }
            const size_t i = py * nx + px;
            const float med = median(win_b, m);
            if (fabs((double)(med - back[i])) >= fthresh) {
                back2[i] = med;
                sigma2[i] = median(win_s, m);
            } else {
                back2[i] = back[i];
                sigma2[i] = sigma[i];
            }
        }
    memcpy(back, back2, nx * ny * sizeof *back);
    memcpy(sigma, sigma2, nx * ny * sizeof *sigma);
}

/* SEP's spline second derivatives (divided by 6) of m values v[0], v[stride], ... into d (same stride): the
 * natural-spline recurrence as SExtractor writes it, whose back substitution also divides the carried term by 6.
 * u: m scratch doubles. Linear in v. */
static void spline(const float *v, size_t m, size_t stride, float *d, double *u)
{
    if (m < 3) {
        for (size_t i = 0; i < m; i++) d[i * stride] = 0.0f;
        return;
    }
    double prev = 0.0; /* d[i - 1] before back substitution */
    u[0] = 0.0;
    double *c = u + m; /* the forward coefficients */
    c[0] = 0.0;
    for (size_t i = 1; i + 1 < m; i++) {
        const double t = -1.0 / (prev + 4.0);
        c[i] = t;
        u[i] = t * (u[i - 1] -
                    6.0 * ((double)v[(i + 1) * stride] + (double)v[(i - 1) * stride] - 2.0 * (double)v[i * stride]));
        prev = t;
    }
    double next = 0.0;
    d[(m - 1) * stride] = 0.0f;
    for (size_t i = m - 2; i >= 1; i--) {
        next = (c[i] * next + u[i]) / 6.0;
        d[i * stride] = (float)next;
    }
    d[0] = 0.0f;
}

/* The planes of one map (values in g[0..n)): its y-spline, and the x-splines of both. */
static void map_planes(size_t nx, size_t ny, float *g, double *u)
{
    const size_t n = nx * ny;
    for (size_t x = 0; x < nx; x++) spline(g + x, ny, nx, g + n + x, u);
    for (size_t plane = 0; plane < 2; plane++)
        for (size_t y = 0; y < ny; y++) {
            if (ny < 2) { /* SEP interpolates a single row of meshes linearly along x */
                memset(g + (2 + plane) * n + y * nx, 0, nx * sizeof *g);
                continue;
            }
            spline(g + plane * n + y * nx, nx, 1, g + (2 + plane) * n + y * nx, u);
        }
}

/* The weights of each image row and column (SEP's positions: x at pixel centres, y at pixel edges). */
static void weights(const gpuws__background_plan *p, size_t width, size_t height, int bw, int bh, void *plan)
{
    float *f = plan;
    int32_t *k = (int32_t *)plan;
    for (size_t y = 0; y < height; y++) {
        float *ry = f + p->rows + BG_ROW_COEFS * y;
        int yl = 0;
        float dy = 0.0f;
        if (p->ny > 1) {
            dy = (float)y / (float)bh - 0.5f;
            yl = (int)dy;
            dy -= (float)yl;
            if (yl >= (int)p->ny - 1) {
                yl = (int)p->ny - 2;
                dy += 1.0f;
            }
        }
        const float cdy = 1.0f - dy;
        ry[0] = cdy;
        ry[1] = dy;
        ry[2] = cdy * cdy * cdy - cdy;
        ry[3] = dy * dy * dy - dy;
        k[p->row_k + y] = yl;
    }
    for (size_t x = 0; x < width; x++) {
        float *cx = f + p->cols + BG_COL_COEFS * x;
        size_t kk = 0;
        float dx = 0.0f;
        if (p->nx > 1) {
            /* SEP moves to the next pair of nodes half a mesh into each inner mesh; with bw = 1 it never moves */
            const size_t half = (size_t)bw / 2;
            if (bw > 1 && x >= half) kk = (x - half) / (size_t)bw;
            if (kk > p->nx - 2) kk = p->nx - 2;
            dx = (float)(((double)x + 0.5) / bw - 0.5 - (double)kk);
        }
        const float cdx = 1.0f - dx;
        cx[0] = cdx;
        cx[1] = cdx * (cdx * cdx - 1.0f);
        cx[2] = dx;
        cx[3] = dx * (dx * dx - 1.0f);
        k[p->col_k + x] = (int32_t)kk;
    }
}

/* The filter window's size in meshes, at most the grid (it never reaches further). */
static size_t window(const gpuws__background_plan *p, int fw, int fh)
{
    const size_t wx = 2 * (size_t)(fw / 2) + 1, wy = 2 * (size_t)(fh / 2) + 1;
    return (wx < p->nx ? wx : p->nx) * (wy < p->ny ? wy : p->ny);
}

size_t gpuws__background_grid_bytes(const gpuws__background_plan *p, int fw, int fh)
{
    return (5 * p->n + 2 * window(p, fw, fh)) * sizeof(float) + 2 * (p->nx > p->ny ? p->nx : p->ny) * sizeof(double);
}

gpuws_status gpuws__background_grid(const gpuws__background_plan *p, size_t width, size_t height, int bw, int bh,
                                    int fw, int fh, double fthresh, float *mesh, void *plan,
                                    gpuws_background_result *result)
{
    const size_t n = p->n, win = window(p, fw, fh), um = 2 * (p->nx > p->ny ? p->nx : p->ny);
    size_t good = 0;
    for (size_t i = 0; i < n; i++) good += !bad(mesh[2 * i]);
    if (!good) return GPUWS_ERR_INVALID_ARGUMENT;
    float *tmp = gpuws__malloc((5 * n + 2 * win) * sizeof *tmp);
    double *u = gpuws__malloc(um * sizeof *u);
    if (!tmp || !u) {
        gpuws__free(tmp);
        gpuws__free(u);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    float *back = tmp, *sigma = tmp + n, *back2 = tmp + 2 * n, *sigma2 = tmp + 3 * n, *sorted = tmp + 4 * n;
    for (size_t i = 0; i < n; i++) {
        back[i] = mesh[2 * i];
        sigma[i] = mesh[2 * i + 1];
    }
    size_t nbad;
    fill_bad(p->nx, p->ny, back, sigma, back2, &nbad);
    filter(p->nx, p->ny, fw, fh, fthresh, back, sigma, back2, sigma2, tmp + 5 * n, tmp + 5 * n + win);

    memcpy(sorted, back, n * sizeof *sorted);
    const float globalback = median(sorted, n);
    memcpy(sorted, sigma, n * sizeof *sorted);
    float globalrms = median(sorted, n);
    if (globalrms <= 0.0f) {
        qsort(sorted, n, sizeof *sorted, cmp_float);
        size_t first = n; /* the first positive value */
        while (first > 0 && sorted[first - 1] > 0.0f) first--;
        globalrms = first < n ? median(sorted + first, n - first) : 1.0f;
    }

    float *f = plan;
    memcpy(f, back, n * sizeof *f);
    memcpy(f + 4 * n, sigma, n * sizeof *f);
    map_planes(p->nx, p->ny, f, u);
    map_planes(p->nx, p->ny, f + 4 * n, u);
    weights(p, width, height, bw, bh, plan);
    gpuws__free(tmp);
    gpuws__free(u);
    result->globalback = globalback;
    result->globalrms = globalrms;
    result->nx = p->nx;
    result->ny = p->ny;
    result->bad_meshes = nbad;
    return GPUWS_OK;
}

void gpuws_background_interp_ref(const gpuws__background_plan *p, const void *plan, size_t width, size_t r0, size_t r1,
                                 float *back, float *rms)
{
    const float *f = plan;
    const int32_t *k = (const int32_t *)plan;
    for (size_t y = r0; y < r1; y++) {
        const size_t yl = (size_t)k[p->row_k + y], y1 = p->ny > 1 ? yl + 1 : yl;
        const float *ry = f + p->rows + BG_ROW_COEFS * y;
        for (size_t x = 0; x < width; x++) {
            const int kx = k[p->col_k + x], k1 = p->nx > 1 ? kx + 1 : kx;
            const float *cx = f + p->cols + BG_COL_COEFS * x;
            float cb[16], cr[16];
            bg_nodes(f, p->n, yl * p->nx, y1 * p->nx, kx, k1, cb);
            bg_nodes(f + 4 * p->n, p->n, yl * p->nx, y1 * p->nx, kx, k1, cr);
            back[(y - r0) * width + x] = bg_interp(cb, ry, cx);
            rms[(y - r0) * width + x] = bg_interp(cr, ry, cx);
        }
    }
}

typedef struct {
    const gpuws__background_plan *p;
    const void *plan;
    size_t width;
    float *back, *rms;
} interp_job;

static void interp_rows(void *arg, size_t part, size_t r0, size_t r1)
{
    (void)part;
    const interp_job *j = arg;
    gpuws_background_interp_ref(j->p, j->plan, j->width, r0, r1, j->back + r0 * j->width, j->rms + r0 * j->width);
}

gpuws_status gpuws_background_ref(const float *image, const uint8_t *mask, size_t width, size_t height,
                                  const gpuws_background_options *o, float *back, float *rms,
                                  gpuws_background_result *result)
{
    gpuws__background_plan p;
    if (!gpuws__background_layout(width, height, o->bw, o->bh, &p)) return GPUWS_ERR_INVALID_ARGUMENT;
    float *mesh = gpuws__malloc(2 * p.n * sizeof *mesh);
    void *plan = gpuws__malloc(p.words * 4);
    gpuws_status st = GPUWS_ERR_OUT_OF_MEMORY;
    gpuws_background_result r;
    if (mesh && plan) {
        gpuws_background_mesh_ref(image, mask, width, height, o->bw, o->bh, mesh);
        st = gpuws__background_grid(&p, width, height, o->bw, o->bh, o->fw, o->fh, o->fthresh, mesh, plan, &r);
    }
    if (st == GPUWS_OK) {
        interp_job j = { &p, plan, width, back, rms };
        gpuws__run_ranges(height, ref_parts(width * height, height), interp_rows, &j);
        *result = r;
    }
    gpuws__free(mesh);
    gpuws__free(plan);
    return st;
}
