/* Minimal JSON writer and reader for bench reports; see json.h. */
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void json_put_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

void json_put_number(FILE *f, double x)
{
    if (!isfinite(x)) fputs("null", f);
    else if (x == floor(x) && fabs(x) < 0x1p53) fprintf(f, "%.0f", x); /* counts of bytes stay exact */
    else fprintf(f, "%.9g", x);
}

/* ---- reader ---------------------------------------------------------------------------------------------- */

typedef struct {
    const char *s, *p;
    char *err;
    size_t errn;
    int depth;
} parser;

static int fail(parser *ps, const char *why)
{
    if (ps->err && !ps->err[0]) {
        int line = 1;
        for (const char *q = ps->s; q < ps->p; q++) line += *q == '\n';
        snprintf(ps->err, ps->errn, "line %d: %s", line, why);
    }
    return -1;
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static int hex4(parser *ps, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return fail(ps, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | c >> 12);
        o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | c >> 18);
    o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* At the opening quote. The decoded string is never longer than its source. */
static int parse_string(parser *ps, char **out)
{
    const char *start = ++ps->p;
    const char *q = start;
    for (; *q && *q != '"'; q++)
        if (*q == '\\' && q[1]) q++;
    char *o = malloc((size_t)(q - start) + 1), *w = o;
    if (!o) return fail(ps, "out of memory");
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') break;
        if (c == 0) {
            free(o);
            return fail(ps, "unterminated string");
        }
        if (c < 0x20) {
            free(o);
            return fail(ps, "control character in a string");
        }
        ps->p++;
        if (c != '\\') {
            *w++ = (char)c;
            continue;
        }
        char e = *ps->p++;
        unsigned u;
        switch (e) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u':
            if (hex4(ps, &u)) {
                free(o);
                return -1;
            }
            if (u >= 0xd800 && u < 0xdc00 && ps->p[0] == '\\' && ps->p[1] == 'u') { /* surrogate pair */
                unsigned lo;
                ps->p += 2;
                if (hex4(ps, &lo)) {
                    free(o);
                    return -1;
                }
                if (lo >= 0xdc00 && lo < 0xe000) u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                else {
                    free(o);
                    return fail(ps, "unpaired surrogate");
                }
            }
            w += put_utf8(w, u);
            break;
        default: free(o); return fail(ps, "bad escape in a string");
        }
    }
    ps->p++;
    *w = 0;
    *out = o;
    return 0;
}

static int parse_number(parser *ps, double *out)
{
    const char *q = ps->p;
    if (*q == '-') q++;
    if (*q == '0') q++;
    else if (*q >= '1' && *q <= '9')
        while (*q >= '0' && *q <= '9') q++;
    else return fail(ps, "bad number");
    if (*q == '.') {
        if (!(*++q >= '0' && *q <= '9')) return fail(ps, "bad number: no digit after '.'");
        while (*q >= '0' && *q <= '9') q++;
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) return fail(ps, "bad number: no exponent digits");
        while (*q >= '0' && *q <= '9') q++;
    }
    *out = strtod(ps->p, NULL);
    ps->p = q;
    return 0;
}

static int parse_value(parser *ps, json_value *v);

static int push(parser *ps, json_value *v, size_t *cap, char *key)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        json_value *ni = realloc(v->items, nc * sizeof *ni);
        if (!ni) return fail(ps, "out of memory");
        v->items = ni;
        if (v->type == JSON_OBJECT) {
            char **nk = realloc(v->keys, nc * sizeof *nk);
            if (!nk) return fail(ps, "out of memory");
            v->keys = nk;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->type == JSON_OBJECT) v->keys[v->n] = key;
    v->n++;
    return parse_value(ps, &v->items[v->n - 1]);
}

static int parse_container(parser *ps, json_value *v, char close)
{
    size_t cap = 0;
    if (++ps->depth > 64) return fail(ps, "nested too deeply");
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (close == '}') {
            if (*ps->p != '"') return fail(ps, "expected a key");
            if (parse_string(ps, &key)) return -1;
            skip_ws(ps);
            if (*ps->p++ != ':') {
                free(key);
                return fail(ps, "expected ':'");
            }
        }
        if (push(ps, v, &cap, key)) {
            if (v->n == 0 || (close == '}' && v->keys[v->n - 1] != key)) free(key);
            return -1;
        }
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            ps->depth--;
            return 0;
        }
        return fail(ps, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(parser *ps, json_value *v)
{
    skip_ws(ps);
    const char *p = ps->p;
    switch (*p) {
    case '{': v->type = JSON_OBJECT; return parse_container(ps, v, '}');
    case '[': v->type = JSON_ARRAY; return parse_container(ps, v, ']');
    case '"': v->type = JSON_STRING; return parse_string(ps, &v->string);
    case 't':
        if (!strncmp(p, "true", 4)) {
            v->type = JSON_BOOL;
            v->boolean = true;
            ps->p += 4;
            return 0;
        }
        break;
    case 'f':
        if (!strncmp(p, "false", 5)) {
            v->type = JSON_BOOL;
            ps->p += 5;
            return 0;
        }
        break;
    case 'n':
        if (!strncmp(p, "null", 4)) {
            v->type = JSON_NULL;
            ps->p += 4;
            return 0;
        }
        break;
    default:
        if (*p == '-' || (*p >= '0' && *p <= '9')) {
            v->type = JSON_NUMBER;
            return parse_number(ps, &v->number);
        }
    }
    return fail(ps, *p ? "unexpected character" : "unexpected end of input");
}

int json_parse(const char *text, json_value *out, char *err, size_t errn)
{
    parser ps = { text, text, err, errn, 0 };
    if (err && errn) err[0] = 0;
    memset(out, 0, sizeof *out);
    if (parse_value(&ps, out) == 0) {
        skip_ws(&ps);
        if (!*ps.p) return 0;
        fail(&ps, "text after the document");
    }
    json_free(out);
    return -1;
}

void json_free(json_value *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const json_value *json_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

const char *json_get_string(const json_value *obj, const char *key, const char *def)
{
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_STRING ? v->string : def;
}

double json_get_number(const json_value *obj, const char *key, double def)
{
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_NUMBER ? v->number : def;
}
