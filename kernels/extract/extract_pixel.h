/* The per-pixel arithmetic of gpuws_extract that must be the same everywhere: shared by the scalar reference
 * (extract_ref.c), the CUDA kernels (extract.cu) and the OpenCL kernels (extract.cl, into which cmake/embed_cl.cmake
 * copies this file), so that every backend thresholds the same pixels; and the device's chunks and records. Valid
 * C11, CUDA and OpenCL C (with fp64); it includes nothing (the C includer brings <math.h>). The choices that decide
 * a float bit are SEP's (1.2): the filter kernel is normalised by the sum of its absolute values (on the host), the
 * convolution is a correlation summed in float in the kernel's row-major order with the pixels outside the image
 * left out, the matched filter sums in float and divides by the square root in double. Float products and sums are
 * spelled ex_fmul / ex_fadd (double ones ex_dmul / ex_dadd) so that no compiler fuses them (CUDA would; the OpenCL
 * file turns contraction off). docs/algorithms/extract.md. */
#ifndef GPUWS_EXTRACT_PIXEL_H
#define GPUWS_EXTRACT_PIXEL_H

#define EX_BIG          1e+30f /* SEP's noise of a masked pixel */
#define EX_NOISE_NONE   0      /* absolute threshold, no variance */
#define EX_NOISE_CONST  1      /* one σ for every pixel */
#define EX_NOISE_MAP    2      /* a σ per pixel */
#define EX_FILTER_NONE  0
#define EX_FILTER_CONV  1
#define EX_FILTER_MATCH 2
#define EX_BLANK_BIT    0x80000000u /* in a record's pixel index: the pixel touches a NaN or masked pixel */
#define EX_CHAIN_BIT    0x80000000u /* in a label's start of the grouping: one object, in chain order (extract_chain.h) */
#define EX_MAX_KERNEL   4096        /* filter values passed to the device (kw * kh) */
/* The device writes the records in raster order by chunks of EX_CHUNK raster-consecutive pixels: one block of
 * EX_CHUNK_THREADS threads a chunk counts its labelled pixels (extract_count), an exclusive scan of the counts gives
 * each chunk the slot of its first record, and the chunk's block writes its records from there in order
 * (extract_scatter). */
#define EX_CHUNK_THREADS 256
#define EX_PER_THREAD    8
#define EX_CHUNK         (EX_CHUNK_THREADS * EX_PER_THREAD)
/* The records grouped by label on the device, raster order kept within each label (extract_sort_*): a stable LSD
 * radix sort of (label, record) pairs, EX_SORT_BITS bits a pass, by tiles of EX_SORT_TILE pairs, one block of
 * EX_SORT_THREADS threads a tile and EX_SORT_PER consecutive pairs a thread (a thread's count of one digit, at most
 * EX_SORT_PER, fits the 4 bits it has in a 64-bit word of sixteen counts). */
#define EX_SORT_BITS    4
#define EX_SORT_DIGITS  (1 << EX_SORT_BITS)
#define EX_SORT_THREADS 256
#define EX_SORT_PER     8
#define EX_SORT_TILE    (EX_SORT_THREADS * EX_SORT_PER)

#if defined(__OPENCL_VERSION__)
#define EX_FN     static inline
#define EX_GLOBAL __global
#define EX_CONST  __global const
#elif defined(__CUDACC__)
#define EX_FN static __device__ __forceinline__
#define EX_GLOBAL
#define EX_CONST const
#else
#define EX_FN static inline
#define EX_GLOBAL
#define EX_CONST const
#endif

#if defined(__CUDACC__)
EX_FN float ex_fmul(float a, float b) { return __fmul_rn(a, b); }
EX_FN float ex_fadd(float a, float b) { return __fadd_rn(a, b); }
EX_FN double ex_dmul(double a, double b) { return __dmul_rn(a, b); }
EX_FN double ex_dadd(double a, double b) { return __dadd_rn(a, b); }
#else
EX_FN float ex_fmul(float a, float b) { return a * b; }
EX_FN float ex_fadd(float a, float b) { return a + b; }
EX_FN double ex_dmul(double a, double b) { return a * b; }
EX_FN double ex_dadd(double a, double b) { return a + b; }
#endif
/* A float quotient correctly rounded on every device (OpenCL's float division may be off by 2.5 ulp; a double
 * quotient of floats rounds to the float one). In OpenCL C the double quotient comes from the reciprocal and one
 * fma correction, because an optimiser may shrink (float)((double)a / (double)b) back to the float division, as
 * NVIDIA's OpenCL does (background_mesh.h's bg_fdiv: the same reasoning). */
#if defined(__OPENCL_VERSION__)
EX_FN float ex_fdiv(float a, float b)
{
    const double r = 1.0 / (double)b, q = (double)a * r;
    return isfinite(q) && q != 0.0 ? (float)fma(fma(-q, (double)b, (double)a), r, q) : (float)q;
}
#else
EX_FN float ex_fdiv(float a, float b) { return (float)((double)a / (double)b); }
#endif

/* SEP's convolution at (x, y): sum over the kernel's rows j and columns i, in that order, of
 * kern[j][i] * d(x + i - kw/2, y + j - kh/2), the pixels outside the image left out. */
EX_FN float ex_conv(EX_CONST float *d, EX_CONST float *kern, long w, long h, long x, long y, int kw, int kh)
{
    float acc = 0.0f;
    for (int j = 0; j < kh; j++) {
        const long yy = y + j - kh / 2;
        if (yy < 0 || yy >= h) continue;
        for (int i = 0; i < kw; i++) {
            const long xx = x + i - kw / 2;
            if (xx < 0 || xx >= w) continue;
            acc = ex_fadd(acc, ex_fmul(kern[j * kw + i], d[yy * w + xx]));
        }
    }
    return acc;
}

/* SEP's matched filter at (x, y): sum(k d / σ²) / sqrt(sum(k² / σ²)) over the kernel (σ² in float, pixels with
 * σ² = 0 left out), the sums in float, the last division in double. */
EX_FN float ex_matched(EX_CONST float *d, EX_CONST float *sig, EX_CONST float *kern, long w, long h, long x, long y,
                       int kw, int kh)
{
    float num = 0.0f, den = 0.0f;
    for (int j = 0; j < kh; j++) {
        const long yy = y + j - kh / 2;
        if (yy < 0 || yy >= h) continue;
        for (int i = 0; i < kw; i++) {
            const long xx = x + i - kw / 2;
            if (xx < 0 || xx >= w) continue;
            const float s = sig[yy * w + xx], var = ex_fmul(s, s), k = kern[j * kw + i];
            if (var != 0.0f) {
                num = ex_fadd(num, ex_fdiv(ex_fmul(k, d[yy * w + xx]), var));
                den = ex_fadd(den, ex_fdiv(ex_fmul(k, k), var));
            }
        }
    }
    return (float)((double)num / sqrt((double)den));
}

/* Whether pixel p is detected, and its filtered value (*cd). noise: EX_NOISE_*; thresh: the absolute threshold
 * (EX_NOISE_NONE), thresh × σ (EX_NOISE_CONST), or the relative one (EX_NOISE_MAP: × sig[p] here, in float). */
EX_FN int ex_detect(EX_CONST float *d, EX_CONST float *sig, EX_CONST float *kern, long w, long h, long x, long y,
                    int kw, int kh, int filter, int noise, float thresh, float *cd)
{
    const long p = y * w + x;
    const float c = filter == EX_FILTER_NONE ? d[p] : ex_conv(d, kern, w, h, x, y, kw, kh);
    *cd = c;
    if (filter == EX_FILTER_MATCH) return ex_matched(d, sig, kern, w, h, x, y, kw, kh) > thresh;
    return c > (noise == EX_NOISE_MAP ? ex_fmul(thresh, sig[p]) : thresh);
}

/* The prepared pixel (SEP's buffers after its mask): d = image - back (0 where masked), *s = the pixel's σ (EX_BIG
 * where masked with a σ map; the constant, or 0 without noise). */
EX_FN float ex_prep(float image, float back, int masked, int noise, float rms, float err, float *s)
{
    *s = noise == EX_NOISE_MAP ? (masked ? EX_BIG : rms) : err;
    return masked ? 0.0f : image - back;
}

/* Whether (x, y) touches a blank pixel: one of its 8 neighbours is NaN in d or masked. */
EX_FN int ex_blank_near(EX_CONST float *d, EX_CONST unsigned char *mask, int has_mask, long w, long h, long x, long y)
{
    for (long yy = y - 1; yy <= y + 1; yy++)
        for (long xx = x - 1; xx <= x + 1; xx++) {
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            const long q = yy * w + xx;
            if (d[q] != d[q] || (has_mask && mask[q])) return 1;
        }
    return 0;
}

/* Record `slot` of labelled pixel i: six arrays of cap words (index | blank bit, value, filtered value, σ, σ of the
 * lower-right neighbour, label), ru and rf two views (words, floats) of the same memory; maps: d, σ, filtered. The
 * label comes last: the host needs none of them where the device groups the records (extract.c). */
EX_FN void ex_record(EX_GLOBAL unsigned *ru, EX_GLOBAL float *rf, unsigned long cap, unsigned long slot,
                     EX_CONST int *labels, EX_CONST float *maps, EX_CONST unsigned char *mask, int has_mask, long w,
                     long h, long i)
{
    const long n = w * h, x = i % w, y = i / w;
    const int blank = ex_blank_near(maps, mask, has_mask, w, h, x, y);
    ru[slot] = (unsigned)i | (blank ? EX_BLANK_BIT : 0u);
    rf[cap + slot] = maps[i];
    rf[2 * cap + slot] = maps[2 * n + i];
    rf[3 * cap + slot] = maps[n + i];
    rf[4 * cap + slot] = x + 1 < w && y + 1 < h ? maps[n + i + w + 1] : 0.0f;
    ru[5 * cap + slot] = (unsigned)labels[i];
}

#endif
