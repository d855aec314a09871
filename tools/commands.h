/* Subcommands of the gpuws tool. Each lives in its own tools/cmd_<name>.c and registers itself with
 * GPUWS_COMMAND(name, summary, function), so adding one touches no shared file. */
#ifndef GPUWS_TOOLS_COMMANDS_H
#define GPUWS_TOOLS_COMMANDS_H

#include "gpuws.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns the exit code */
} gpuws_command;

void gpuws_command_register(const gpuws_command *cmd);
/* Registered commands sorted by name; NULL-terminated. */
const gpuws_command *const *gpuws_commands(void);

#define GPUWS_COMMAND(NAME, SUMMARY, FN)                                                                               \
    static const gpuws_command gpuws_cmd_##FN = { NAME, SUMMARY, FN };                                                 \
    __attribute__((constructor)) static void gpuws_register_##FN(void) { gpuws_command_register(&gpuws_cmd_##FN); }

/* Prints "gpuws <cmd>: <status name>: <detail>" to stderr and returns 1. */
int tool_fail(const char *cmd, gpuws_status st);
/* Prints "gpuws <cmd>: bad argument '<argv[i]> <value>'" (the value when argv[i] is an option followed by one) and
 * what may be wrong with it, to stderr; the caller prints its usage and exits 2. */
void tool_bad_argument(const char *cmd, int argc, char **argv, int i);
/* A whole number in [0, max]: digits (exact up to 2^64 - 1), or "1e8" / "1.5e3" / "10^8" / "2^31" forms that are
 * exact in double (below 2^53). The value is the whole string: no sign, no spaces around it (" 5" and "5 " are both
 * refused), no hex. 0 on success, -1 otherwise (out untouched). */
int tool_parse_count(const char *s, uint64_t max, uint64_t *out);
/* A size in bytes: a whole number as tool_parse_count reads it, optionally followed by K, M, G or T (KiB, MiB, GiB,
 * TiB: powers of 1024), at most 2^64 - 1 bytes. 0 on success, -1 otherwise (out untouched). */
int tool_parse_bytes(const char *s, uint64_t *out);
/* A finite decimal number: [+-]digits[.digits][e[+-]digits] (or .digits), the whole string, no spaces, hex, inf or
 * nan, not past the range of double. 0 on success, -1 otherwise (out untouched). */
int tool_parse_real(const char *s, double *out);
/* True when a is a number with a sign ("-1", "-0.5", "-.5", "-1e3"): on a command line a value, not an option. */
bool tool_is_signed_number(const char *a);

/* Options and operands of one command, parsed the same way by every command: each option once ("given twice" is a
 * usage error), numbers strictly (tool_parse_count / tool_parse_real), names never empty. The functions below print
 * "gpuws <cmd>: <why>" to err and return -1 on a bad value; the caller prints its usage and exits 2. */
typedef struct {
    const char *cmd;
    FILE *err;
    const char *seen[32]; /* options met so far */
    int nseen;
} tool_args;
#define TOOL_ARGS_INIT(CMD)                                                                                            \
    {                                                                                                                  \
        (CMD), stderr, { NULL }, 0                                                                                     \
    }

/* Every --repeat (and bench's --cpu-repeat) takes 1 to TOOL_REPEAT_MAX: each run's time is kept, and a million runs
 * of the shortest workload already take seconds. */
#define TOOL_REPEAT_MAX 1000000

/* Call with every argument that starts an option (an argument beginning with '-' that is not a signed number): -1
 * with "<opt> given twice" when it was met before; aliases are passed under one name. */
int tool_once(tool_args *t, const char *opt);
/* v (opt's value; NULL when none followed) as a whole number in [lo, hi]; else "<opt> needs <noun> from <lo> to <hi>,
 * not '<v>'". noun NULL means "a whole number". Powers of two from 2^20 print as 2^k, 2^64 - 1 as such. */
int tool_count(tool_args *t, const char *opt, const char *v, uint64_t lo, uint64_t hi, const char *noun, uint64_t *out);
/* v as tool_parse_bytes's size; else "<opt> needs a size in bytes (512M, 2G, 1048576), not '<v>'". */
int tool_bytes(tool_args *t, const char *opt, const char *v, uint64_t *out);
/* v as tool_parse_real's number (nonfinite: "nan", "inf" and "-inf" too); else "<opt> needs a number, not '<v>'". */
int tool_real(tool_args *t, const char *opt, const char *v, bool nonfinite, double *out);
/* v as a non-empty name; else "<opt> needs <what>" (v missing) or "<opt> needs <what>, not an empty string". */
int tool_name(tool_args *t, const char *opt, const char *v, const char *what);
/* The index of v in names (NULL-terminated); else -1 with "bad argument '<opt> <v>': <opt> must be <a>, <b> or <c>". */
int tool_choice(tool_args *t, const char *opt, const char *v, const char *const *names);
/* Prints "gpuws <cmd>: <message>" to t->err and returns -1. */
int tool_usage_error(tool_args *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sorts t[0..n) ascending (n >= 1) and returns its median (the mean of the two middle values when n is even). */
double tool_median(double *t, int n);
/* Opens a context from the environment (GPUWS_BACKEND, ...), printing the error on failure; 0 on success. */
int tool_context(const char *cmd, gpuws_context **ctx);

/* The _host calls' progress for the tools: a line per band on stderr once the run has taken more than a second
 * (short runs stay quiet). tool_band_progress_start(what) begins one ("gpuws label"); pass its address as
 * progress_user with tool_convolve_band (gpuws_convolve2d_host) or tool_label_band (gpuws_label_host, and the
 * extraction's calls with `step` set to what their passes do). */
typedef struct {
    const char *what;
    double t0;
    bool shown;
    const char *step; /* the passes' work in tool_label_band's lines: "labelling" */
} tool_band_progress;
tool_band_progress tool_band_progress_start(const char *what);
void tool_convolve_band(void *user, size_t band, size_t bands, size_t rows_done, size_t out_rows);
void tool_label_band(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done, size_t rows);

#endif
