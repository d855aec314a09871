/* Growable strings and compiler-log reading, for the generated text of user programs. */
#include "alloc.h"
#include "text.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gpuws__sb_add(gpuws__strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = gpuws__realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void gpuws__sb_puts(gpuws__strbuf *b, const char *s) { gpuws__sb_add(b, s, strlen(s)); }

void gpuws__sb_printf(gpuws__strbuf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        gpuws__sb_add(b, small, (size_t)n);
        return;
    }
    char *big = gpuws__malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    gpuws__sb_add(b, big, (size_t)n);
    gpuws__free(big);
}

char *gpuws__sb_take(gpuws__strbuf *b)
{
    char *s = b->oom ? NULL : b->s;
    if (b->oom) gpuws__free(b->s);
    if (!b->oom && !s) s = gpuws__strdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return s;
}

void gpuws__sb_free(gpuws__strbuf *b)
{
    gpuws__free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

/* Compilers write "file:line:col: error: message" (gcc, clang), "error: file:line:col: message" (PoCL),
 * "file(line): error: message" (NVRTC) or "<file>:line:col: error: message" (NVIDIA's OpenCL). If the line names
 * file (length fl) followed by its line number, reads the number, the message after it and whether the line is an
 * error (the word before the file, or the message's first). */
static bool parse_diag(const char *line, size_t len, const char *file, size_t fl, unsigned long *lineno,
                       const char **msg, bool *is_error)
{
    for (const char *p = line; p + fl < line + len; p++) {
        if (strncmp(p, file, fl) != 0) continue;
        if (p > line && !strchr(" \t\"'<(", p[-1])) continue; /* "kernel.gw" inside "mykernel.gw" */
        const char *q = p + fl;
        if (*q == '"' || *q == '>') q++;
        if (*q != ':' && *q != '(') continue;
        q++;
        if (*q < '0' || *q > '9') continue;
        unsigned long n = 0;
        while (*q >= '0' && *q <= '9') n = n * 10 + (unsigned long)(*q++ - '0');
        if (*q == ')') q++;
        if (*q == ':') {
            q++;
            if (*q >= '0' && *q <= '9') { /* a column */
                while (*q >= '0' && *q <= '9') q++;
                if (*q == ':') q++;
            }
        }
        while (*q == ' ') q++;
        *lineno = n;
        *msg = q;
        *is_error = strncmp(q, "error", 5) == 0 || strncmp(q, "fatal", 5) == 0;
        for (const char *w = line; w + 5 <= p && !*is_error; w++) *is_error = strncmp(w, "error", 5) == 0;
        return true;
    }
    return false;
}

#define MAX_DIAG_FILES 64

/* The files a generated text names in its #line directives: the user's, its headers, the dialect's. */
static size_t line_files(const char *source, const char **name, size_t *len)
{
    size_t n = 0;
    for (const char *p = source; p && *p && n < MAX_DIAG_FILES; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "#line ", 6) != 0) continue;
        const char *q0 = strchr(p, '"'), *e = strchr(p, '\n');
        const char *q1 = q0 ? strchr(q0 + 1, '"') : NULL;
        if (!q1 || (e && q1 > e) || q1 == q0 + 1) continue;
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = len[i] == (size_t)(q1 - q0 - 1) && !strncmp(name[i], q0 + 1, len[i]);
        if (!seen) name[n] = q0 + 1, len[n++] = (size_t)(q1 - q0 - 1);
    }
    return n;
}

/* NVIDIA's OpenCL ignores #line and names the text it was given "<kernel>", with its physical line numbers: maps
 * physical line `line` of source to the file and line the #line directives before it name. false when none does. */
static bool map_physical(const char *source, unsigned long line, const char **file, size_t *fl, unsigned long *out)
{
    bool found = false;
    unsigned long phys = 1;
    for (const char *p = source; p && *p && phys < line; p = strchr(p, '\n'), p = p ? p + 1 : NULL, phys++) {
        if (strncmp(p, "#line ", 6) != 0) continue;
        char *after;
        unsigned long l = strtoul(p + 6, &after, 10);
        const char *q0 = strchr(after, '"'), *e = strchr(p, '\n');
        const char *q1 = q0 ? strchr(q0 + 1, '"') : NULL;
        if (!l || !q1 || (e && q1 > e)) continue;
        *file = q0 + 1, *fl = (size_t)(q1 - q0 - 1), *out = l + (line - phys - 1), found = true;
    }
    return found;
}

void gpuws__first_diagnostic(const char *log, const char *source, char *out, size_t n)
{
    if (!n) return;
    out[0] = 0;
    if (!log) return;
    const char *names[MAX_DIAG_FILES];
    size_t lens[MAX_DIAG_FILES];
    size_t nn = line_files(source, names, lens);
    if (nn < MAX_DIAG_FILES) names[nn] = "<kernel>", lens[nn++] = 8; /* physical lines: mapped below */
    const char *first_line = NULL, *first = NULL, *emsg = NULL, *efile = NULL;
    size_t first_len = 0, error_len = 0, efl = 0;
    unsigned long el = 0;
    bool first_is_error = false;
    for (const char *p = log; *p && !first_is_error;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && !first_line) first_line = p, first_len = len;
        for (size_t f = 0; f < nn; f++) {
            unsigned long ln;
            const char *msg;
            bool is_error;
            if (!parse_diag(p, len, names[f], lens[f], &ln, &msg, &is_error)) continue;
            if (!first || is_error) { /* the first error, else the first diagnostic */
                first = p, error_len = len, el = ln, emsg = msg, efile = names[f], efl = lens[f];
                if (!strncmp(efile, "<kernel>", 8) && efl == 8) map_physical(source, ln, &efile, &efl, &el);
                first_is_error = is_error;
            }
            break;
        }
        if (!e) break;
        p = e + 1;
    }
    if (first) {
        size_t ml = error_len - (size_t)(emsg - first);
        snprintf(out, n, "%.*s:%lu: %.*s", (int)efl, efile, el, (int)ml, emsg);
    } else if (first_line) {
        snprintf(out, n, "%.*s", (int)first_len, first_line);
    }
}
