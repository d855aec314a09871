/* The text of a catalogue's numbers, printf's own, without most of printf's cost.
 *
 * A large catalogue is a few million numbers; glibc's printf of a double converts the exact binary value with
 * multi-precision arithmetic, and formatting the numbers costs more than writing the file. number_text gives the same
 * bytes as snprintf for the catalogue's three styles from one double multiplication or division and integer digits,
 * and calls snprintf for the numbers where that cannot prove its rounding. */
#ifndef GPUWS_NUMBER_TEXT_H
#define GPUWS_NUMBER_TEXT_H

#include <stddef.h>

/* Writes the text of v as snprintf(buf, n, ...) does, and returns what snprintf returns (the text's length, which
 * may be n or more: then buf holds its first n - 1 bytes and a NUL; buf may be NULL when n is 0). The style is the
 * catalogue's column's (catalog_column.decimals): "%.9g" for decimals < 0, "%lld" of (long long)v for 0,
 * "%.*f" with that many decimals otherwise; NaN is "nan" in every style, whatever its sign bit.
 *
 * Exactness, in the default rounding mode (the tools never change it): the text is snprintf's, byte for byte. The
 * fast path scales |v| by an exact power of ten (10^0..10^22) with one multiplication or division, which IEEE 754
 * rounds once, so the scaled value lies within a relative 2^-53 of the exact one. Its rounding to an integer (9
 * significant digits, or that many decimals) is then that of the exact value unless a half-integer lies within
 * twice that error of it: those (true ties, which glibc breaks to even, among them) go to snprintf, as do values
 * whose scaling needs a power of ten beyond 10^22 (|v| below about 1e-14 or from 1e31 for %.9g), scaled values
 * from 2^50, more than 22 decimals, subnormals and infinities. */
int number_text(char *buf, size_t n, double v, int decimals);

#endif
