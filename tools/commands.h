/* Subcommands of the gpuws tool. Each lives in its own tools/cmd_<name>.c and registers itself with
 * GPUWS_COMMAND(name, summary, function), so adding one touches no shared file. */
#ifndef GPUWS_TOOLS_COMMANDS_H
#define GPUWS_TOOLS_COMMANDS_H

#include "gpuws.h"

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns the exit code */
} gpuws_command;

void gpuws_command_register(const gpuws_command *cmd);
/* Registered commands sorted by name; NULL-terminated. */
const gpuws_command *const *gpuws_commands(void);

#define GPUWS_COMMAND(NAME, SUMMARY, FN)                                                                        \
    static const gpuws_command gpuws_cmd_##FN = {NAME, SUMMARY, FN};                                           \
    __attribute__((constructor)) static void gpuws_register_##FN(void) { gpuws_command_register(&gpuws_cmd_##FN); }

/* Prints "gpuws <cmd>: <status name>: <detail>" to stderr and returns 1. */
int tool_fail(const char *cmd, gpuws_status st);
/* Prints "gpuws <cmd>: bad argument '<argv[i]> <value>'" (the value when argv[i] is an option followed by one) and
 * what may be wrong with it, to stderr; the caller prints its usage and exits 2. */
void tool_bad_argument(const char *cmd, int argc, char **argv, int i);
/* A whole number in [0, max]: digits (exact up to 2^64 - 1), or "1e8" / "10^8" / "2^31" forms that are exact in
 * double (below 2^53). 0 on success, -1 otherwise (out untouched). */
int tool_parse_count(const char *s, uint64_t max, uint64_t *out);
/* Sorts t[0..n) ascending (n >= 1) and returns its median (the mean of the two middle values when n is even). */
double tool_median(double *t, int n);
/* Opens a context from the environment (GPUWS_BACKEND, ...), printing the error on failure; 0 on success. */
int tool_context(const char *cmd, gpuws_context **ctx);

#endif
