/* Subcommands of the gpuws tool: each lives in its own cmd_<name>.c and is listed in gpuws.c. */
#ifndef GPUWS_TOOLS_COMMANDS_H
#define GPUWS_TOOLS_COMMANDS_H

#include "gpuws.h"

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns the exit code */
} gpuws_command;

int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Prints "gpuws <cmd>: <status name>: <detail>" to stderr and returns 1. */
int tool_fail(const char *cmd, gpuws_status st);
/* Opens a context from the environment, printing the error on failure. */
int tool_context(const char *cmd, gpuws_context **ctx);

#endif
