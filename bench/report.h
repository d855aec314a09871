/* Helpers shared by the report writers (bench/report_*.c). */
#ifndef GPUWS_BENCH_REPORT_H
#define GPUWS_BENCH_REPORT_H

#include "bench.h"

/* Four significant digits without an exponent over the range benchmarks show; "-" for 0, negative or NaN. */
const char *bench_fmt4(char *buf, size_t n, double x);
/* Row indices grouped by workload (algorithm, variant, size class), in run order within a workload; malloc'd. */
size_t *bench_sorted_rows(const bench_report *r);

#endif
