/* The workshop's elementwise functions: the same kernels, parameters and structure as ufunc.cu (see there).
 * Bit k of `arrays` says whether operand k is an array or its scalar parameter is broadcast. Built-ins are the
 * full-precision ones (no -cl-fast-relaxed-math, no native_ functions). */

#define SQRT_2PI_F 2.50662827463100050242f

static float gaussian_pdf(float x, float m, float s)
{
    const float z = (x - m) / s;
    return exp(-0.5f * (z * z)) / (s * SQRT_2PI_F);
}

static float polar_distance(float r1, float t1, float r2, float t2)
{
    const float dx = r1 * cos(t1) - r2 * cos(t2), dy = r1 * sin(t1) - r2 * sin(t2);
    return sqrt(dx * dx + dy * dy);
}

static float make_pulses(float i, float period, float amplitude) { return fmax(sin(i / period) - 0.3f, 0.0f) * amplitude; }

static float hypot_ws(float x, float y)
{
    x = fabs(x);
    y = fabs(y);
    if (isinf(x) || isinf(y)) return INFINITY;
    if (isnan(x) || isnan(y)) return x + y;
    const float a = fmax(x, y), t = fmin(x, y);
    if (a == 0.0f) return 0.0f;
    const float r = t / a;
    return a * sqrt(1.0f + r * r);
}

static float hidden_layer(float g, float w) { return tanh(g / 255.0f * w); }

#define LOAD4(k, p, s, v) (((arrays >> (k)) & 1u) ? vload4((v), (p)) : (float4)(s))
#define LOAD1(k, p, s, i) (((arrays >> (k)) & 1u) ? (p)[i] : (s))

/* Grid-stride over 4-element groups, two in flight per work-item, then the scalar tail. F4(v) computes the float4
 * for group v, F1(i) the value of element i. out may be one of the inputs (each element is read before the same
 * work-item writes it). */
#define MAP(F4, F1)                                                                                                 \
    {                                                                                                               \
        const ulong nv = n / 4, stride = get_global_size(0);                                                        \
        ulong v = get_global_id(0);                                                                                 \
        for (; v + stride < nv; v += 2 * stride) {                                                                  \
            const float4 ra = F4(v), rb = F4(v + stride);                                                           \
            vstore4(ra, v, out);                                                                                    \
            vstore4(rb, v + stride, out);                                                                           \
        }                                                                                                           \
        if (v < nv) vstore4(F4(v), v, out);                                                                         \
        for (ulong i = nv * 4 + get_global_id(0); i < n; i += stride) out[i] = F1(i);                               \
    }

#define APPLY4_3(f, a, b, c) (float4)(f(a.s0, b.s0, c.s0), f(a.s1, b.s1, c.s1), f(a.s2, b.s2, c.s2), f(a.s3, b.s3, c.s3))
#define APPLY4_2(f, a, b) (float4)(f(a.s0, b.s0), f(a.s1, b.s1), f(a.s2, b.s2), f(a.s3, b.s3))

static float4 gaussian4(float4 a, float4 b, float4 c) { return APPLY4_3(gaussian_pdf, a, b, c); }

__kernel void ufunc_gaussian_pdf(__global const float *x, float xs, __global const float *mean, float ms,
                                 __global const float *sigma, float ss, __global float *out, ulong n, uint arrays)
{
#define G4(v) gaussian4(LOAD4(0, x, xs, v), LOAD4(1, mean, ms, v), LOAD4(2, sigma, ss, v))
#define G1(i) gaussian_pdf(LOAD1(0, x, xs, i), LOAD1(1, mean, ms, i), LOAD1(2, sigma, ss, i))
    MAP(G4, G1)
}

static float4 polar4(float4 a, float4 b, float4 c, float4 d)
{
    return (float4)(polar_distance(a.s0, b.s0, c.s0, d.s0), polar_distance(a.s1, b.s1, c.s1, d.s1),
                    polar_distance(a.s2, b.s2, c.s2, d.s2), polar_distance(a.s3, b.s3, c.s3, d.s3));
}

__kernel void ufunc_polar_distance(__global const float *rho1, float r1s, __global const float *theta1, float t1s,
                                   __global const float *rho2, float r2s, __global const float *theta2, float t2s,
                                   __global float *out, ulong n, uint arrays)
{
#define P4(v) polar4(LOAD4(0, rho1, r1s, v), LOAD4(1, theta1, t1s, v), LOAD4(2, rho2, r2s, v), LOAD4(3, theta2, t2s, v))
#define P1(i) polar_distance(LOAD1(0, rho1, r1s, i), LOAD1(1, theta1, t1s, i), LOAD1(2, rho2, r2s, i), LOAD1(3, theta2, t2s, i))
    MAP(P4, P1)
}

static float4 pulses4(float4 a, float4 b, float4 c) { return APPLY4_3(make_pulses, a, b, c); }

/* (the first operand is the workshop's i; named t here, since MAP's loop index is i) */
__kernel void ufunc_make_pulses(__global const float *t, float ts, __global const float *period, float ps,
                                __global const float *amplitude, float as, __global float *out, ulong n, uint arrays)
{
#define M4(v) pulses4(LOAD4(0, t, ts, v), LOAD4(1, period, ps, v), LOAD4(2, amplitude, as, v))
#define M1(j) make_pulses(LOAD1(0, t, ts, j), LOAD1(1, period, ps, j), LOAD1(2, amplitude, as, j))
    MAP(M4, M1)
}

static float4 hypot4(float4 a, float4 b) { return APPLY4_2(hypot_ws, a, b); }

__kernel void ufunc_hypot(__global const float *x, float xs, __global const float *y, float ys, __global float *out,
                          ulong n, uint arrays)
{
#define H4(v) hypot4(LOAD4(0, x, xs, v), LOAD4(1, y, ys, v))
#define H1(i) hypot_ws(LOAD1(0, x, xs, i), LOAD1(1, y, ys, i))
    MAP(H4, H1)
}

static float4 hidden4(float4 a, float4 b) { return APPLY4_2(hidden_layer, a, b); }

/* Elements [offset, offset + n) of the three buffers (offset: a multiple of 4; the host pipeline's ring slots). */
__kernel void ufunc_hidden_layer(__global const float *g, __global const float *w, __global float *out, ulong offset, ulong n)
{
    __global const float *gs = g + offset, *ws = w + offset;
    out += offset;
#define L4(v) hidden4(vload4((v), gs), vload4((v), ws))
#define L1(i) hidden_layer(gs[i], ws[i])
    MAP(L4, L1)
}

/* w < t exactly, with t the smallest float >= the double threshold (computed by the host). */
static float4 zs4(float4 a, float t) { return select(a, (float4)(0.0f), a < t); }

__kernel void ufunc_zero_suppress_f32(__global const float *w, __global float *out, ulong n, float t)
{
#define Z4(v) zs4(vload4((v), w), t)
#define Z1(i) (w[i] < t ? 0.0f : w[i])
    MAP(Z4, Z1)
}

/* int16, 8 per 16-byte access, two in flight per work-item; t = ceil(threshold) clamped to [-32768, 32768]. The
 * accesses go through short8 pointers (whole buffers are aligned): a vload8 of a short pointer may be split into
 * narrower loads by a compiler that cannot prove the alignment. */
static short8 zs8(short8 a, int t) { return select(a, (short8)(0), convert_short8(convert_int8(a) < t)); }

__kernel void ufunc_zero_suppress_i16(__global const short *w, __global short *out, ulong n, int t)
{
    const ulong nv = n / 8, stride = get_global_size(0);
    __global const short8 *w8 = (__global const short8 *)w;
    __global short8 *out8 = (__global short8 *)out;
    ulong v = get_global_id(0);
    for (; v + stride < nv; v += 2 * stride) {
        const short8 a = w8[v], b = w8[v + stride];
        out8[v] = zs8(a, t);
        out8[v + stride] = zs8(b, t);
    }
    if (v < nv) out8[v] = zs8(w8[v], t);
    for (ulong i = nv * 8 + get_global_id(0); i < n; i += stride) out[i] = w[i] < t ? (short)0 : w[i];
}

/* partials[group] = the smallest i < n with x[i] or y[i] NaN (array operands only), or n when none. */
__kernel void ufunc_find_nan(__global const float *x, __global const float *y, __global ulong *partials, ulong n,
                             uint arrays, __local ulong *red)
{
    ulong first = n;
    for (ulong i = get_global_id(0); i < n && first == n; i += get_global_size(0))
        if (((arrays & 1u) && isnan(x[i])) || ((arrays & 2u) && isnan(y[i]))) first = i;
    const uint lid = get_local_id(0);
    red[lid] = first;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] = min(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partials[get_group_id(0)] = red[0];
}
