/* Shared by the parts of the user-program suite (test_program.c and the files of tests/program/): building,
 * launching and reading back user kernels with the checks every part makes. */
#ifndef GPUWS_TEST_PROGRAM_H
#define GPUWS_TEST_PROGRAM_H

#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What an output pointer holds before a call that must set it (to NULL on failure, to an object on success). */
extern char test_program_sentinel;
#define NOT_SET ((void *)&test_program_sentinel)

/* Builds source with options (NULL = defaults); asserts success, printing the compiler's output when it fails. */
gpuws_program *test_build_opts(gpuws_context *ctx, const char *source, const gpuws_program_options *options);
gpuws_program *test_build(gpuws_context *ctx, const char *source);
gpuws_kernel *test_kernel(gpuws_program *p, const char *name);
/* Launches on the default stream; asserts success. */
void test_launch(gpuws_kernel *k, gpuws_launch_config cfg, const gpuws_arg *args, size_t nargs);
#define CFG(gx, gy, gz, bx, by, bz) ((gpuws_launch_config){ { (gx), (gy), (gz) }, { (bx), (by), (bz) } })

/* Asserts that source fails to compile with GPUWS_ERR_BUILD, that gpuws_last_error() starts with want_at
 * ("file:line:") and holds want_text (unless NULL), and that the failed program it returns has a log, has its
 * source (holding `source` itself when user_text_in_source), gives no kernel, and is destroyed. */
void test_build_fails(gpuws_context *ctx, const char *source, const gpuws_program_options *options, const char *want_at,
                      const char *want_text, bool user_text_in_source);

/* Asserts bytes of b are all TEST_POISON_BYTE (nothing was written), guard bytes included. */
void test_expect_untouched(gpuws_buffer *b, size_t bytes, const char *name);

/* The context's device. */
gpuws_device_info test_device(gpuws_context *ctx);

/* A kernel that fills out[i] = v + 3 i for i < n, with a #warning its compiler reports: a build that compiled it
 * has the warning in its log, one loaded from the on-disk cache (nothing compiled) has an empty log. */
extern const char *const test_probe_source;
/* Builds test_probe_source with flags, runs it and checks every element; returns true when it was compiled, false
 * when it came from the cache. */
bool test_probe(gpuws_context *ctx, unsigned flags);

#endif
