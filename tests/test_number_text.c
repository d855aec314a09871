/* number_text (tools/number_text.h), the catalogue CSV's numbers: for every style, "%.9g", "%.*f" with 1 to 9 and
 * more decimals and "%lld", the same bytes and the same return as glibc's snprintf, on random doubles over the
 * catalogue's magnitudes, floats widened to double, the decimal ties and their neighbours (where the rounding is
 * decided), roundings up across a power of ten, integers, powers of ten and the values printf writes its own way
 * (zeros, NaN as "nan", infinities, subnormals, the largest doubles); short buffers cut like snprintf's. */
#include "support.h"
#include "number_text.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The styles of catalog_column.decimals the catalogues use, and some they could. */
static const int styles[] = { -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 22, 25 };
enum { NSTYLES = sizeof styles / sizeof styles[0] };

static long failures;

static int printf_text(char *buf, size_t n, double v, int decimals)
{
    if (isnan(v)) return snprintf(buf, n, "nan");
    if (decimals == 0) return snprintf(buf, n, "%lld", (long long)v);
    if (decimals < 0) return snprintf(buf, n, "%.9g", v);
    return snprintf(buf, n, "%.*f", decimals, v);
}

static void check(double v, int decimals)
{
    if (decimals == 0 && !(fabs(v) < 0x1p63)) return; /* (long long)v is undefined there */
    char want[512], got[512];
    const int w = printf_text(want, sizeof want, v, decimals);
    memset(got, 'x', sizeof got);
    const int g = number_text(got, sizeof got, v, decimals);
    if (g == w && strcmp(got, want) == 0) return;
    if (failures++ < 10)
        cr_log_error("%a with decimals %d: \"%s\" (%d), printf \"%s\" (%d)", v, decimals, got, g, want, w);
}

/* v and its neighbours, one and two units in the last place away, both signs, in one style. */
static void check_around(double v, int decimals)
{
    double lo = v, hi = v;
    for (int k = 0; k < 3; k++) {
        check(lo, decimals), check(-lo, decimals), check(hi, decimals), check(-hi, decimals);
        lo = nextafter(lo, 0), hi = nextafter(hi, INFINITY);
    }
}

static void check_all_styles(double v)
{
    for (int s = 0; s < NSTYLES; s++) check(v, styles[s]);
}

Test(number_text, is_printfs_text_on_random_doubles_of_catalogue_magnitudes)
{
    uint64_t st = test_seed(false);
    failures = 0;
    for (int i = 0; i < 1000000; i++) {
        const double mag = pow(10, -12 + 27 * test_rand_uniform(&st)); /* 1e-12 .. 1e15 */
        const double v = (test_rand_u64(&st) & 1 ? -1 : 1) * mag * (1 + test_rand_uniform(&st));
        check(v, -1);
        check(v, 1 + (int)(test_rand_u64(&st) % 9));
        if (i % 4 == 0) check(v, 0);
    }
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

Test(number_text, is_printfs_text_on_floats_widened_to_double)
{
    uint64_t st = test_seed(false) + 1;
    failures = 0;
    for (int i = 0; i < 400000; i++) {
        const uint32_t bits = (uint32_t)test_rand_u64(&st);
        float f;
        memcpy(&f, &bits, sizeof f); /* every exponent: subnormals, infinities and NaNs too */
        check(f, -1);
        check(f, 1 + (int)(test_rand_u64(&st) % 9));
        /* and the catalogue's usual ones: positions, fluxes */
        const float g = (float)(test_rand_uniform(&st) * pow(10, (double)(test_rand_u64(&st) % 8)));
        check(g, -1);
        check(g, 1 + (int)(test_rand_u64(&st) % 9));
    }
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

/* The values nearest to a decimal tie at 9 significant digits (ten digits ending in 5), and at 1 to 9 decimals,
 * with their neighbours; and the ties a double holds exactly, which printf breaks to even. */
Test(number_text, rounds_decimal_ties_and_their_neighbours_as_printf)
{
    uint64_t st = test_seed(false) + 2;
    failures = 0;
    char s[64];
    for (int i = 0; i < 30000; i++) {
        const long m = 100000000 + (long)(test_rand_u64(&st) % 900000000); /* nine digits */
        snprintf(s, sizeof s, "%ld5e%d", m, -25 + (int)(test_rand_u64(&st) % 50));
        check_around(strtod(s, NULL), -1);
        const int d = 1 + (int)(test_rand_u64(&st) % 9);
        snprintf(s, sizeof s, "%ld.%0*ld5", (long)(test_rand_u64(&st) % 100000), d,
                 (long)(test_rand_u64(&st) % (uint64_t)pow(10, d)));
        check_around(strtod(s, NULL), d);
        /* exact ties: at d decimals the odd multiples of 2^-(d+1); at 9 digits m + 1/2 with 9 integer digits, m +
         * 1/4 with 8, ... and (10 m + 5) 10^k */
        check_around(ldexp((double)(2 * (test_rand_u64(&st) % 100000000) + 1), -(d + 1)), d);
        const int j = 1 + (int)(test_rand_u64(&st) % 4);
        check_around((double)(m / (long)pow(10, j - 1)) + ldexp(1, -j), -1);
        check_around((double)(10 * m + 5) * pow(10, (double)(test_rand_u64(&st) % 6)), -1);
    }
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

Test(number_text, rounds_up_across_powers_of_ten_as_printf)
{
    failures = 0;
    char s[64];
    for (int e = -30; e <= 40; e++) {
        snprintf(s, sizeof s, "9999999995e%d", e - 9);
        check_around(strtod(s, NULL), -1);
        snprintf(s, sizeof s, "9999999994999e%d", e - 12);
        check_around(strtod(s, NULL), -1);
        for (int d = 1; d <= 9; d++) {
            snprintf(s, sizeof s, "%.*e", 20, pow(10, e) - 0.5 * pow(10, -d));
            check_around(strtod(s, NULL), d);
        }
    }
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

Test(number_text, is_printfs_text_on_integers_and_powers_of_ten)
{
    uint64_t st = test_seed(false) + 3;
    failures = 0;
    for (int i = 0; i < 100000; i++) {
        const uint64_t r = test_rand_u64(&st);
        const double v = (double)(r >> (r % 64)) * (r & 1 ? -1 : 1);
        check(v, -1), check(v, 0), check(v, 6);
    }
    for (int e = -330; e <= 310; e++) {
        char s[16];
        snprintf(s, sizeof s, "1e%d", e);
        const double p = strtod(s, NULL);
        for (int k = 0; k < NSTYLES; k++) check_around(p, styles[k]);
    }
    for (double v = 1; v < 0x1p64; v *= 2) check_around(v, -1), check_around(v, 0), check_around(v, 3);
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

Test(number_text, writes_printfs_own_cases)
{
    failures = 0;
    const double special[] = {
        0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, DBL_MAX, DBL_MIN, 0x1p-1074, 0x1p-1050, 1e-5,  9.9999999995e-5, 1e-4,
        0.5, 1.5,  2.5, -0.5, 0x1p50,   0x1p52,    0x1p53,  1e9,     1e31,      1e-14,     1e-15, 123456789.0,     1e30
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) check_all_styles(special[i]);
    char got[8];
    cr_assert_eq(number_text(got, sizeof got, NAN, -1), 3);
    cr_assert_str_eq(got, "nan", "NaN is \"nan\" in every style");
    cr_assert_eq(number_text(got, sizeof got, -NAN, 4), 3);
    cr_assert_str_eq(got, "nan");
    cr_assert_eq(failures, 0, "%ld numbers differ from printf's", failures);
}

Test(number_text, cuts_short_buffers_as_snprintf)
{
    const double values[] = { -1234.5678, 0.000123456789, 1e300, 42.0 };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        for (int s = 0; s < NSTYLES; s++)
            for (size_t n = 0; n < 12; n++) {
                if (styles[s] == 0 && !(fabs(values[i]) < 0x1p63)) continue; /* (long long)v is undefined */
                char want[16], got[16];
                memset(want, '#', sizeof want), memset(got, '#', sizeof got);
                const int w = printf_text(n ? want : NULL, n, values[i], styles[s]);
                const int g = number_text(n ? got : NULL, n, values[i], styles[s]);
                cr_assert_eq(g, w, "%g, decimals %d, %zu bytes", values[i], styles[s], n);
                cr_assert_eq(memcmp(got, want, sizeof got), 0, "%g, decimals %d, %zu bytes: \"%.16s\" for \"%.16s\"",
                             values[i], styles[s], n, got, want);
            }
}
