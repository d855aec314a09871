/* gpuws: command-line entry point. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

static const gpuws_command commands[] = {
    {"info", "list backends and devices, and the device the environment selects", cmd_info},
    {"bench", "time the algorithms on every backend/device against the device's ceilings", cmd_bench},
};

int tool_fail(const char *cmd, gpuws_status st)
{
    fprintf(stderr, "gpuws %s: %s: %s\n", cmd, gpuws_status_name(st), gpuws_last_error());
    return 1;
}

int tool_context(const char *cmd, gpuws_context **ctx)
{
    gpuws_status st = gpuws_context_create(ctx, NULL);
    return st ? tool_fail(cmd, st) : 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuws <command> [options]   (gpuws <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nenvironment: GPUWS_BACKEND=cuda|opencl|cpu (comma list, tried in order), GPUWS_DEVICE=N,\n"
               "GPUWS_OPENCL_PLATFORM=<name substring>, GPUWS_CACHE_DIR=<dir>|off, GPUWS_LOG=error|warn|info|debug\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gpuws %d.%d.%d\n", GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR, GPUWS_VERSION_PATCH);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "gpuws: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
