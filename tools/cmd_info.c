/* gpuws info: every backend (available or why not), every device, and what the environment selects. */
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(gpuws_device_type t)
{
    return t == GPUWS_DEVICE_GPU ? "GPU" : t == GPUWS_DEVICE_CPU ? "CPU" : "other";
}

static void print_device(const char *backend, size_t i, const gpuws_device_info *d)
{
    printf("  %-6s %zu  %s [%s]\n", backend, i, d->name, type_name(d->type));
    printf("            platform: %s; vendor: %s; driver: %s\n", d->platform, d->vendor, d->driver_version);
    printf("            memory %.1f GiB (largest buffer %.1f GiB), %u compute units, max block %u (%u x %u x %u),\n",
           (double)d->global_mem_bytes / (1 << 30), (double)d->max_alloc_bytes / (1 << 30), d->compute_units,
           d->max_block_size, d->max_block_dims[0], d->max_block_dims[1], d->max_block_dims[2]);
    printf("            shared/local memory %llu KiB per block", (unsigned long long)(d->shared_mem_bytes / 1024));
    if (d->shared_mem_per_unit)
        printf(", %llu KiB per compute unit", (unsigned long long)(d->shared_mem_per_unit / 1024));
    printf(", warp/sub-group width %u, fp64 %s\n", d->warp_size, d->fp64 ? "yes" : "no");
}

/* The contexts gpuws_contexts_create opens for a GPUWS_DEVICE list or "all", in its order; 1 (after the error) when
 * it opens none. */
static int print_devices_selection(void)
{
    gpuws_context *ctxs[64];
    size_t n = 0;
    gpuws_status st = gpuws_contexts_create(NULL, sizeof ctxs / sizeof *ctxs, ctxs, &n);
    if (st) {
        printf("  GPUWS_DEVICE's list: none\n");
        return tool_fail("info", st);
    }
    printf("  GPUWS_DEVICE's list: %zu context(s), which the _host calls and the tools share their bands between:\n",
           n);
    for (size_t i = 0; i < n; i++) {
        gpuws_device_info d;
        gpuws_backend_kind k;
        size_t index;
        gpuws_context_get_device_info(ctxs[i], &d);
        gpuws_context_get_backend(ctxs[i], &k);
        gpuws_context_get_device_index(ctxs[i], &index);
        gpuws_backend_info bi;
        gpuws_backend_get_info(k, &bi);
        printf("    %-6s %zu  %s (%s)\n", bi.name, index, d.name, d.platform);
    }
    gpuws_contexts_destroy(ctxs, n);
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "--help") != 0) fprintf(stderr, "gpuws info: unexpected argument '%s'\n", argv[1]);
        printf("usage: gpuws info\n"
               "  Lists backends, devices and the device GPUWS_BACKEND / GPUWS_DEVICE / GPUWS_OPENCL_PLATFORM select,\n"
               "  GPUWS_TUNING, and when GPUWS_DEVICE is a list or all the devices it opens for the _host calls\n"
               "  and the tools, in order: backend, index (among GPUWS_OPENCL_PLATFORM's devices when that is\n"
               "  set), name, platform. Exits 1 when the environment selects no device or the list opens none.\n"
               "  `gpuws tuning` lists every environment variable and knob (docs/tuning.md).\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    printf("gpuws %d.%d.%d\n\nbackends:\n", GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR, GPUWS_VERSION_PATCH);
    static const gpuws_backend_kind order[] = { GPUWS_BACKEND_CUDA, GPUWS_BACKEND_OPENCL, GPUWS_BACKEND_CPU };
    for (int i = 0; i < 3; i++) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(order[i], &bi);
        size_t n = 0;
        if (bi.available) gpuws_device_count(order[i], NULL, &n);
        if (bi.available) printf("  %-6s available, %zu device(s)\n", bi.name, n);
        else printf("  %-6s unavailable: %s\n", bi.name, bi.reason);
    }
    printf("\ndevices:\n");
    for (int i = 0; i < 3; i++) {
        gpuws_backend_info bi;
        gpuws_backend_get_info(order[i], &bi);
        if (!bi.available) continue;
        size_t n = 0;
        gpuws_device_count(order[i], NULL, &n);
        for (size_t k = 0; k < n; k++) {
            gpuws_device_info d;
            if (gpuws_device_get_info(order[i], NULL, k, &d) == GPUWS_OK) print_device(bi.name, k, &d);
        }
    }
    const char *env[] = { "GPUWS_BACKEND", "GPUWS_DEVICE", "GPUWS_OPENCL_PLATFORM" };
    printf("\nselection (");
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(env[i]);
        printf("%s%s=%s", i ? ", " : "", env[i], v && *v ? v : "<unset>");
    }
    printf("):\n");
    const char *tuning = getenv("GPUWS_TUNING");
    if (tuning && *tuning) printf("  GPUWS_TUNING=%s (`gpuws tuning` shows the knobs' values)\n", tuning);
    gpuws_context *ctx;
    gpuws_status st = gpuws_context_create(&ctx, NULL);
    int rc = 0;
    if (st) {
        printf("  none\n");
        rc = tool_fail("info", st);
    } else {
        gpuws_device_info d;
        gpuws_backend_kind k;
        gpuws_context_get_device_info(ctx, &d);
        gpuws_context_get_backend(ctx, &k);
        gpuws_backend_info bi;
        gpuws_backend_get_info(k, &bi);
        printf("  %s: %s (%s)\n", bi.name, d.name, d.platform);
        const char *cache = getenv("GPUWS_CACHE_DIR");
        if (k == GPUWS_BACKEND_OPENCL)
            printf("  OpenCL program cache: %s\n", cache && *cache ? cache : "$XDG_CACHE_HOME/gpuws or ~/.cache/gpuws");
        gpuws_context_destroy(ctx);
    }
    /* A list's first device (device 0 for "all") is the selection's: when that failed, so does the list. */
    const char *devices = getenv("GPUWS_DEVICE");
    if (!st && devices && (strchr(devices, ',') || !strcmp(devices, "all")) && print_devices_selection() != 0) rc = 1;
    return rc;
}

GPUWS_COMMAND("info", "list backends and devices, and the device the environment selects", cmd_info)
