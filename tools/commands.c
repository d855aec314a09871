#include "commands.h"
#include "parallel.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
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
    else fprintf(stderr, "gpuws %s: bad argument '%s' (not an option, or one value too many)\n", cmd, a);
}

static const char digits[] = "0123456789";

/* digits[.digits][e[+]digits] or digits^digits, the whole string */
static bool count_form(const char *s)
{
    size_t d = strspn(s, digits);
    if (!d) return false;
    s += d;
    if (*s == '^') return (d = strspn(++s, digits)) && !s[d];
    if (*s == '.') {
        if (!(d = strspn(++s, digits))) return false;
        s += d;
    }
    if (*s == 'e' || *s == 'E') {
        s += s[1] == '+' ? 2 : 1;
        if (!(d = strspn(s, digits))) return false;
        s += d;
    }
    return !*s;
}

/* [+-](digits[.digits] | .digits)[e[+-]digits], the whole string */
static bool real_form(const char *s)
{
    s += *s == '+' || *s == '-';
    size_t a = strspn(s, digits), b = 0;
    s += a;
    if (*s == '.') s++, s += b = strspn(s, digits);
    if (!a && !b) return false;
    if (*s == 'e' || *s == 'E') {
        s += s[1] == '+' || s[1] == '-' ? 2 : 1;
        size_t e = strspn(s, digits);
        if (!e) return false;
        s += e;
    }
    return !*s;
}

int tool_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !count_form(s)) return -1;
    if (strspn(s, digits) == strlen(s)) {
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

int tool_parse_bytes(const char *s, uint64_t *out)
{
    static const char units[] = "KMGT";
    if (!s || !*s) return -1;
    const size_t n = strlen(s);
    const char *u = strchr(units, s[n - 1]);
    unsigned shift = u && s[n - 1] ? 10u * (unsigned)(u - units + 1) : 0;
    char digits_part[64];
    if (n - (shift ? 1 : 0) >= sizeof digits_part) return -1;
    memcpy(digits_part, s, n - (shift ? 1 : 0));
    digits_part[n - (shift ? 1 : 0)] = 0;
    uint64_t v;
    if (tool_parse_count(digits_part, UINT64_MAX >> shift, &v)) return -1;
    *out = v << shift;
    return 0;
}

int tool_parse_real(const char *s, double *out)
{
    if (!s || !real_form(s)) return -1;
    const double v = strtod(s, NULL);
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

bool tool_is_signed_number(const char *a) { return a && (a[0] == '-' || a[0] == '+') && real_form(a); }

int tool_usage_error(tool_args *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(t->err, "gpuws %s: ", t->cmd);
    vfprintf(t->err, fmt, ap);
    fputc('\n', t->err);
    va_end(ap);
    return -1;
}

int tool_once(tool_args *t, const char *opt)
{
    for (int i = 0; i < t->nseen; i++)
        if (!strcmp(t->seen[i], opt)) return tool_usage_error(t, "%s given twice", opt);
    if (t->nseen < (int)(sizeof t->seen / sizeof t->seen[0])) t->seen[t->nseen++] = opt;
    return 0;
}

/* 2^64 - 1, 2^k from 2^20, else decimal */
static const char *bound_text(uint64_t v, char *buf, size_t n)
{
    if (v == UINT64_MAX) snprintf(buf, n, "2^64 - 1");
    else if (v >= (1u << 20) && !(v & (v - 1))) snprintf(buf, n, "2^%d", (int)log2((double)v));
    else snprintf(buf, n, "%llu", (unsigned long long)v);
    return buf;
}

int tool_count(tool_args *t, const char *opt, const char *v, uint64_t lo, uint64_t hi, const char *noun, uint64_t *out)
{
    uint64_t x;
    if (v && !tool_parse_count(v, hi, &x) && x >= lo) {
        *out = x;
        return 0;
    }
    char a[24], b[24];
    return tool_usage_error(t, "%s needs %s from %s to %s%s%s%s", opt, noun ? noun : "a whole number",
                            bound_text(lo, a, sizeof a), bound_text(hi, b, sizeof b), v ? ", not '" : "", v ? v : "",
                            v ? "'" : "");
}

int tool_bytes(tool_args *t, const char *opt, const char *v, uint64_t *out)
{
    if (v && !tool_parse_bytes(v, out)) return 0;
    return tool_usage_error(t, "%s needs a size in bytes (512M, 2G, 1048576)%s%s%s", opt, v ? ", not '" : "",
                            v ? v : "", v ? "'" : "");
}

int tool_real(tool_args *t, const char *opt, const char *v, bool nonfinite, double *out)
{
    if (v && !tool_parse_real(v, out)) return 0;
    if (v && nonfinite && (!strcmp(v, "nan") || !strcmp(v, "inf") || !strcmp(v, "-inf"))) {
        *out = !strcmp(v, "nan") ? NAN : !strcmp(v, "inf") ? INFINITY : -INFINITY;
        return 0;
    }
    return tool_usage_error(t, "%s needs a number%s%s%s", opt, v ? ", not '" : "", v ? v : "", v ? "'" : "");
}

int tool_choice(tool_args *t, const char *opt, const char *v, const char *const *names)
{
    int n = 0;
    for (; names[n]; n++)
        if (v && !strcmp(v, names[n])) return n;
    char list[256] = "";
    for (int k = 0; k < n; k++) {
        const size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", k == 0 ? "" : k + 1 < n ? ", " : " or ", names[k]);
    }
    if (!v) return tool_usage_error(t, "%s needs a value: %s", opt, list);
    return tool_usage_error(t, "bad argument '%s %s': %s must be %s", opt, v, opt, list);
}

int tool_name(tool_args *t, const char *opt, const char *v, const char *what)
{
    if (v && *v) return 0;
    return tool_usage_error(t, "%s needs %s%s", opt, what, v ? ", not an empty string" : "");
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

tool_band_progress tool_band_progress_start(const char *what)
{
    return (tool_band_progress){ what, tool_now_ms(), false, "labelling" };
}

/* Whether a band's line is due: every one once the run has taken a second. */
static bool band_line_due(tool_band_progress *p)
{
    if (!p->shown && tool_now_ms() - p->t0 < 1000.0) return false;
    return p->shown = true;
}

void tool_convolve_band(void *user, size_t band, size_t bands, size_t rows_done, size_t out_rows)
{
    tool_band_progress *p = user;
    if (band_line_due(p))
        fprintf(stderr, "%s: band %zu of %zu done (%zu of %zu output rows)\n", p->what, band + 1, bands, rows_done,
                out_rows);
}

void tool_label_band(void *user, int pass, int passes, size_t band, size_t bands, size_t rows_done, size_t rows)
{
    tool_band_progress *p = user;
    if (band_line_due(p))
        fprintf(stderr, "%s: %s pass %d of %d: band %zu of %zu done (%zu of %zu rows)\n", p->what, p->step, pass,
                passes, band + 1, bands, rows_done, rows);
}
