/* Growable strings and compiler-log reading, for the generated text of user programs. */
#include "backend_impl.h"

#include <stdarg.h>
#include <stdio.h>
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

/* Compilers write "file:line:col: error: message" (gcc, clang, PoCL), "file(line): error: message" (NVRTC) or
 * "<file>:line:col: error: message" (NVIDIA's OpenCL). Finds the first line that names file and reads the line
 * number after it. */
static bool parse_diag(const char *line, size_t len, const char *file, unsigned long *lineno, const char **msg,
                       const char **name, size_t *name_len)
{
    const size_t fl = file ? strlen(file) : 0;
    for (const char *p = line; p + fl < line + len; p++) {
        const char *q;
        if (file) {
            if (strncmp(p, file, fl) != 0) continue;
            q = p + fl;
        } else { /* any file: a name without spaces at the start of the line, or after "error: " */
            if (p != line && !(p - line >= 7 && !strncmp(p - 7, "error: ", 7))) continue;
            q = p;
            while (q < line + len && *q != ':' && *q != '(' && *q != ' ') q++;
            if (q == p) continue;
        }
        *name = p;
        *name_len = (size_t)(q - p);
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
        return true;
    }
    return false;
}

static bool find_diag(const char *log, const char *file, char *out, size_t n)
{
    const char *first_line = NULL, *first_error = NULL;
    size_t first_len = 0, error_len = 0;
    unsigned long el = 0;
    const char *emsg = NULL, *ename = NULL;
    size_t ename_len = 0;
    for (const char *p = log; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        unsigned long ln;
        const char *msg, *name;
        size_t name_len;
        if (len && !first_line) first_line = p, first_len = len;
        if (parse_diag(p, len, file, &ln, &msg, &name, &name_len)) {
            bool is_error = strstr(msg, "error") == msg || strstr(msg, "fatal") == msg;
            if (!first_error || (is_error && !(strstr(emsg, "error") == emsg || strstr(emsg, "fatal") == emsg))) {
                first_error = p, error_len = len, el = ln, emsg = msg, ename = name, ename_len = name_len;
                if (is_error) break;
            }
        }
        if (!e) break;
        p = e + 1;
    }
    if (first_error) {
        size_t ml = error_len - (size_t)(emsg - first_error);
        snprintf(out, n, "%.*s:%lu: %.*s", (int)ename_len, ename, el, (int)ml, emsg);
        return true;
    }
    if (first_line && !file) snprintf(out, n, "%.*s", (int)first_len, first_line);
    return false;
}

void gpuws__first_diagnostic(const char *log, const char *file, char *out, size_t n)
{
    if (!n) return;
    out[0] = 0;
    if (!log) return;
    /* the user's file first; else any file the log names (a header, a generator's text); else the first line */
    if (!find_diag(log, file, out, n)) find_diag(log, NULL, out, n);
}
