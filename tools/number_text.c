#include "number_text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The powers of ten a double holds exactly. */
static const double exact_ten[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
/* The longest text the fast paths write: a sign, 16 integer digits, a point and 22 decimals. */
enum { FAST_MAX = 48 };

/* round(s) for 0 <= s < 2^50, s within a relative 2^-53 (one rounding) of the exact x: 0 and round(x) in r, or -1
 * where a half-integer lies within twice that error of s, so that round(x) may differ (ties included). */
static int round_scaled(double s, uint64_t *r)
{
    const uint64_t whole = (uint64_t)s;
    const double frac = s - (double)whole; /* exact: s's bits below the point */
    if (fabs(frac - 0.5) <= s * 0x1p-52) return -1;
    *r = whole + (frac > 0.5);
    return 0;
}

/* The decimal digits of u, most significant first; their count. */
static int put_digits(char *p, uint64_t u)
{
    char d[20];
    int k = 0;
    do d[k++] = (char)('0' + u % 10), u /= 10;
    while (u);
    for (int i = 0; i < k; i++) p[i] = d[k - 1 - i];
    return k;
}

/* "%lld" */
static int integer_text(char *out, long long x)
{
    char *p = out;
    uint64_t u = (uint64_t)x;
    if (x < 0) *p++ = '-', u = 0 - u;
    return (int)(p - out) + put_digits(p, u);
}

/* "%.*f" with 1..22 decimals; -1 where it cannot prove the rounding. */
static int fixed_text(char *out, double v, int decimals)
{
    char *p = out;
    if (signbit(v)) *p++ = '-', v = -v;
    const double s = v * exact_ten[decimals];
    uint64_t r;
    if (!(s < 0x1p50) || round_scaled(s, &r)) return -1; /* also infinities */
    char d[FAST_MAX];                                    /* the digits from the last decimal up */
    int k = 0;
    for (int i = 0; i < decimals; i++) d[k++] = (char)('0' + r % 10), r /= 10;
    d[k++] = '.';
    do d[k++] = (char)('0' + r % 10), r /= 10;
    while (r);
    while (k) *p++ = d[--k];
    return (int)(p - out);
}

/* "%.9g"; -1 where it cannot prove the rounding. */
static int general_text(char *out, double v)
{
    char *p = out;
    if (signbit(v)) *p++ = '-', v = -v;
    if (v == 0) return *p++ = '0', (int)(p - out);
    if (!(v >= 0x1p-1022 && v < 1e31)) return -1; /* subnormals, beyond the exact powers, infinities */
    /* floor(log10(v)) or one less: v = f 2^e with 1 <= f < 2, floor(e log10 2) (78913 / 2^18 is log10 2 to within
     * 1e-6, exact enough for |e| < 1000; the offset keeps the division's operand positive, so it floors) */
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int e2 = (int)((bits >> 52) & 0x7ff) - 1023;
    int e10 = (e2 * 78913 + 4096 * 262144) / 262144 - 4096;
    double s = 0;
    for (int tries = 0;; tries++) { /* s = v 10^(8 - e10) in [1e8, 1e9) */
        const int k = 8 - e10;
        if (k > 22 || k < -22 || tries == 3) return -1;
        s = k >= 0 ? v * exact_ten[k] : v / exact_ten[-k];
        if (s < 1e8) e10--;
        else if (s >= 1e9) e10++;
        else break;
    }
    uint64_t r;
    if (round_scaled(s, &r)) return -1;
    if (r == 1000000000u) r = 100000000u, e10++; /* rounded up across a power of ten */
    char d[9];
    uint32_t q = (uint32_t)r; /* below 10^9: 32-bit divisions by 10 are cheaper */
    for (int i = 8; i >= 0; i--) d[i] = (char)('0' + q % 10), q /= 10;
    int nd = 9; /* the digits up to the last nonzero one: %g drops trailing zeros, and a point with none after it */
    while (d[nd - 1] == '0') nd--;
    if (e10 < -4 || e10 >= 9) {
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)(nd - 1));
            p += nd - 1;
        }
        const int x = e10 < 0 ? -e10 : e10;
        *p++ = 'e';
        *p++ = e10 < 0 ? '-' : '+';
        *p++ = (char)('0' + x / 10);
        *p++ = (char)('0' + x % 10);
    } else if (e10 >= 0) {
        memcpy(p, d, (size_t)e10 + 1);
        p += e10 + 1;
        if (nd > e10 + 1) {
            *p++ = '.';
            memcpy(p, d + e10 + 1, (size_t)(nd - e10 - 1));
            p += nd - e10 - 1;
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int i = -1; i > e10; i--) *p++ = '0';
        memcpy(p, d, (size_t)nd);
        p += nd;
    }
    return (int)(p - out);
}

int number_text(char *buf, size_t n, double v, int decimals)
{
    char local[FAST_MAX];
    char *out = n >= FAST_MAX ? buf : local;
    int len;
    if (isnan(v)) len = 3, memcpy(out, "nan", 3);
    else if (decimals == 0) len = integer_text(out, (long long)v);
    else if (decimals < 0) len = general_text(out, v);
    else if (decimals <= 22) len = fixed_text(out, v, decimals);
    else len = -1;
    if (len < 0) {
        if (decimals < 0) return snprintf(buf, n, "%.9g", v);
        return snprintf(buf, n, "%.*f", decimals, v);
    }
    if (out == local && n) memcpy(buf, local, (size_t)len < n ? (size_t)len : n - 1);
    if (n) buf[(size_t)len < n ? (size_t)len : n - 1] = '\0';
    return len;
}
