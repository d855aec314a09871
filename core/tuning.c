/* The tuning registry (core/tuning.h): parsing GPUWS_TUNING and gpuws__tuning_set's values into gpuws__tuning. */
#include "tuning.h"

#include "backend_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_PUBLIC, T_BOOL, T_CHOICE, T_NUMBER, T_PAIR };

typedef struct {
    gpuws__tuning_entry e;
    int type;
    size_t off;
} entry;

#define OFF_PUBLIC(name) 0
#define OFF_BOOL(name)   offsetof(gpuws__tuning, name)
#define OFF_CHOICE(name) offsetof(gpuws__tuning, name)
#define OFF_NUMBER(name) offsetof(gpuws__tuning, name)
#define OFF_PAIR(name)   offsetof(gpuws__tuning, name)
#define ENTRY(name, type, def, values, doc)                                                                            \
    { { #name, #type, def, values, doc, T_##type == T_PUBLIC }, T_##type, OFF_##type(name) },
static const entry entries[] = { GPUWS__TUNING(ENTRY) };
#undef ENTRY
#define N_ENTRIES (sizeof entries / sizeof entries[0])

size_t gpuws__tuning_count(void) { return N_ENTRIES; }
const gpuws__tuning_entry *gpuws__tuning_get(size_t i) { return i < N_ENTRIES ? &entries[i].e : NULL; }

static const entry *find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_ENTRIES; i++)
        if (entries[i].type != T_PUBLIC && strlen(entries[i].e.name) == len &&
            strncmp(entries[i].e.name, name, len) == 0)
            return &entries[i];
    return NULL;
}

static bool is_range(const char *p, size_t l)
{
    for (size_t i = 0; i + 1 < l; i++)
        if (p[i] == '.' && p[i + 1] == '.') return true;
    return false;
}

/* The index of word w (length n) among the '|'-separated words of values, or -1; a "lo..hi" item is no word. */
static int word_index(const char *values, const char *w, size_t n)
{
    int i = 0;
    for (const char *p = values; *p;) {
        const char *e = strchr(p, '|');
        const size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!is_range(p, l)) {
            if (l == n && strncmp(p, w, n) == 0) return i;
            i++;
        }
        if (!e) break;
        p = e + 1;
    }
    return -1;
}

/* The "lo..hi" item of values (false: none). */
static bool number_range(const char *values, long long *lo, long long *hi)
{
    const char *d = strstr(values, "..");
    if (!d) return false;
    const char *s = d;
    while (s > values && s[-1] != '|') s--;
    *lo = strtoll(s, NULL, 10);
    *hi = strtoll(d + 2, NULL, 10);
    return true;
}

static bool parse_int(const char *s, size_t n, long long *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    *out = strtoll(buf, &end, 10);
    return !errno && *end == 0 && (buf[0] >= '0' && buf[0] <= '9');
}

/* Parses value (length n) into the knob's field; false when the knob does not accept it. */
static bool apply(gpuws__tuning *t, const entry *k, const char *v, size_t n)
{
    char *field = (char *)t + k->off;
    long long x, lo, hi;
    int w;
    switch (k->type) {
    case T_BOOL:
        if (n != 1 || (v[0] != '0' && v[0] != '1')) return false;
        *(bool *)field = v[0] == '1';
        return true;
    case T_CHOICE:
        if ((w = word_index(k->e.values, v, n)) < 0) return false;
        *(int *)field = w;
        return true;
    case T_NUMBER:
        if ((w = word_index(k->e.values, v, n)) >= 0) {
            *(int64_t *)field = -1 - w;
            return true;
        }
        if (!parse_int(v, n, &x) || !number_range(k->e.values, &lo, &hi) || x < lo || x > hi) return false;
        *(int64_t *)field = x;
        return true;
    case T_PAIR: {
        int *pair = (int *)field;
        if (n == 4 && strncmp(v, "auto", 4) == 0) {
            pair[0] = pair[1] = 0;
            return true;
        }
        const char *sep = memchr(v, 'x', n);
        long long a, b;
        if (!sep || !parse_int(v, (size_t)(sep - v), &a) || !parse_int(sep + 1, n - (size_t)(sep - v) - 1, &b) ||
            a < 1 || b < 1 || a > 4096 || b > 4096)
            return false;
        pair[0] = (int)a, pair[1] = (int)b;
        return true;
    }
    }
    return false;
}

static void defaults(gpuws__tuning *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < N_ENTRIES; i++)
        if (entries[i].type != T_PUBLIC) apply(t, &entries[i], entries[i].e.def, strlen(entries[i].e.def));
}

void gpuws__tuning_from_env(gpuws__tuning *t)
{
    defaults(t);
    const char *spec = gpuws__getenv("GPUWS_TUNING");
    if (!spec) return;
    /* One warning per process: every context parses the same variable, and a typo should not fill a log. */
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    bool quiet = atomic_flag_test_and_set(&warned);
    for (const char *p = spec; *p;) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *t_end = end;
        while (t_end > p && t_end[-1] == ' ') t_end--;
        const char *eq = memchr(p, '=', (size_t)(t_end - p));
        const size_t nlen = eq ? (size_t)(eq - p) : (size_t)(t_end - p);
        const entry *k = find(p, nlen);
        if (!k) {
            if (!quiet) {
                char known[1024] = "";
                size_t l = 0;
                for (size_t i = 0; i < N_ENTRIES && l < sizeof known; i++)
                    if (entries[i].type != T_PUBLIC) {
                        const int m = snprintf(known + l, sizeof known - l, "%s%s", l ? ", " : "", entries[i].e.name);
                        if (m > 0) l += (size_t)m;
                    }
                gpuws__log(GPUWS__LOG_WARN, "GPUWS_TUNING: unknown knob '%.*s', ignored; knobs: %s (docs/tuning.md)",
                           (int)nlen, p, known);
            }
        } else if (!eq || !apply(t, k, eq + 1, (size_t)(t_end - eq - 1))) {
            if (!quiet)
                gpuws__log(GPUWS__LOG_WARN, "GPUWS_TUNING: %s='%.*s' is not one of %s; ignored (default %s)", k->e.name,
                           eq ? (int)(t_end - eq - 1) : 0, eq ? eq + 1 : "", k->e.values, k->e.def);
        }
        p = end;
    }
}

gpuws_status gpuws__tuning_set(gpuws_context *ctx, const char *name, const char *value)
{
    if (!ctx) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "gpuws__tuning_set: ctx is NULL");
    if (!name) {
        if (value) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "gpuws__tuning_set: a value without a knob name");
        defaults(&ctx->tuning);
        return GPUWS_OK;
    }
    const entry *k = find(name, strlen(name));
    if (!k)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "gpuws__tuning_set: unknown knob '%s' (docs/tuning.md)", name);
    if (!value) value = k->e.def;
    gpuws__tuning t = ctx->tuning;
    if (!apply(&t, k, value, strlen(value)))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "gpuws__tuning_set: %s='%s' is not one of %s", name, value,
                            k->e.values);
    ctx->tuning = t;
    return GPUWS_OK;
}

/* The word of index i among values' words. */
static void word_at(const char *values, int i, char *buf, size_t size)
{
    for (const char *p = values; *p;) {
        const char *e = strchr(p, '|');
        const size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!is_range(p, l) && i-- == 0) {
            snprintf(buf, size, "%.*s", (int)l, p);
            return;
        }
        if (!e) break;
        p = e + 1;
    }
    snprintf(buf, size, "?");
}

bool gpuws__tuning_format(const gpuws__tuning *t, const char *name, char *buf, size_t size)
{
    const entry *k = find(name, strlen(name));
    if (!k) return false;
    const char *field = (const char *)t + k->off;
    switch (k->type) {
    case T_BOOL: snprintf(buf, size, "%d", *(const bool *)field ? 1 : 0); break;
    case T_CHOICE: word_at(k->e.values, *(const int *)field, buf, size); break;
    case T_NUMBER: {
        const int64_t v = *(const int64_t *)field;
        if (v < 0) word_at(k->e.values, (int)(-1 - v), buf, size);
        else snprintf(buf, size, "%" PRId64, v);
        break;
    }
    case T_PAIR: {
        const int *p = (const int *)field;
        if (p[0] == 0) snprintf(buf, size, "auto");
        else snprintf(buf, size, "%dx%d", p[0], p[1]);
        break;
    }
    }
    return true;
}
