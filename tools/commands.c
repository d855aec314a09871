#include "commands.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COMMANDS 64
static const gpuws_command *table[MAX_COMMANDS + 1];
static int count;

void gpuws_command_register(const gpuws_command *cmd)
{
    if (count == MAX_COMMANDS) {
        fprintf(stderr, "gpuws: too many commands (raise MAX_COMMANDS)\n");
        abort();
    }
    /* insertion keeps the table sorted by name, whatever order the constructors ran in */
    int i = count++;
    while (i > 0 && strcmp(table[i - 1]->name, cmd->name) > 0) {
        table[i] = table[i - 1];
        i--;
    }
    table[i] = cmd;
}

const gpuws_command *const *gpuws_commands(void) { return table; }

int tool_fail(const char *cmd, gpuws_status st)
{
    fprintf(stderr, "gpuws %s: %s: %s\n", cmd, gpuws_status_name(st), gpuws_last_error());
    return 1;
}

void tool_bad_argument(const char *cmd, int argc, char **argv, int i)
{
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] == '-' && a[1] == '-' && v && v[0] != '-')
        fprintf(stderr, "gpuws %s: bad argument '%s %s' (unknown option, or a value out of range)\n", cmd, a, v);
    else if (a[0] == '-' && a[1] == '-')
        fprintf(stderr, "gpuws %s: bad argument '%s' (unknown option, or its value is missing)\n", cmd, a);
    else
        fprintf(stderr, "gpuws %s: bad argument '%s' (not an option, or one value too many)\n", cmd, a);
}

int tool_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s) return -1;
    if (strspn(s, "0123456789") == strlen(s)) {
        const unsigned long long v = strtoull(s, &end, 10);
        if (errno || v > max) return -1;
        *out = v;
        return 0;
    }
    const char *caret = strchr(s, '^');
    double v = strtod(s, &end);
    if (caret && end == caret) v = pow(v, strtod(caret + 1, &end));
    if (errno || *end || !(v >= 0) || v >= 0x1p53 || v > (double)max || v != floor(v)) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tool_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int tool_context(const char *cmd, gpuws_context **ctx)
{
    gpuws_status st = gpuws_context_create(ctx, NULL);
    return st ? tool_fail(cmd, st) : 0;
}
