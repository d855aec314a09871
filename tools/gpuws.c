/* gpuws: command-line entry point. Commands register themselves (tools/commands.h). */
#include "commands.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuws <command> [options]   (gpuws <command> --help for its options)\n\ncommands:\n");
    for (const gpuws_command *const *c = gpuws_commands(); *c; c++)
        fprintf(f, "  %-10s %s\n", (*c)->name, (*c)->summary);
    fprintf(f,
            "\nenvironment: GPUWS_BACKEND=cuda|opencl|cpu (comma list, tried in order), GPUWS_DEVICE=N|N,M,...|all,\n"
            "GPUWS_OPENCL_PLATFORM=<name substring>, GPUWS_CACHE_DIR=<dir>|off, GPUWS_LOG=error|warn|info|debug,\n"
            "GPUWS_TUNING=name=value,... (knobs); `gpuws tuning` lists them all (docs/tuning.md)\n");
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
    for (const gpuws_command *const *c = gpuws_commands(); *c; c++)
        if (strcmp(argv[1], (*c)->name) == 0) return (*c)->run(argc - 1, argv + 1);
    fprintf(stderr, "gpuws: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
