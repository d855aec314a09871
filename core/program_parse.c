/* Reading a user program: in-memory #include files, and the GW_KERNEL definitions whose parameters the launch API
 * checks. Not a C parser: a tokenizer that skips comments, strings and preprocessor lines, then looks for
 *   GW_KERNEL void name ( parameter, ... ) { body }
 * Kernels must be written out (one made by a macro is not seen), which docs/kernels.md says. */
#include "program_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INCLUDE_DEPTH 16

/* ---- #include of in-memory headers -------------------------------------------------------------------- */

static const gpuws_program_header *find_header(const gpuws_program_header *h, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name && strlen(h[i].name) == len && strncmp(h[i].name, name, len) == 0) return &h[i];
    return NULL;
}

bool gpuws__include_name(const char *line, size_t len, const char **name, size_t *nlen)
{
    const char *p = line, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p >= end || *p != '#') return false;
    p++;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if ((size_t)(end - p) < 7 || strncmp(p, "include", 7) != 0) return false;
    p += 7;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p >= end || (*p != '"' && *p != '<')) return false;
    const char close = *p == '"' ? '"' : '>';
    const char *s = ++p;
    while (p < end && *p != close) p++;
    if (p >= end) return false;
    *name = s;
    *nlen = (size_t)(p - s);
    return true;
}

static gpuws_status expand(gpuws__strbuf *out, const char *src, const char *file, const gpuws_program_header *headers,
                           size_t nh, int depth)
{
    unsigned long line = 1;
    for (const char *p = src; *p;) {
        const char *e = strchr(p, '\n');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *name;
        size_t nlen;
        const bool inc = gpuws__include_name(p, len, &name, &nlen);
        const gpuws_program_header *h = inc ? find_header(headers, nh, name, nlen) : NULL;
        if (inc && !h && nlen == sizeof GPUWS__EDITOR_HEADER - 1 && strncmp(name, GPUWS__EDITOR_HEADER, nlen) == 0) {
            gpuws__sb_puts(out, "/* " GPUWS__EDITOR_HEADER ": the dialect is above */\n");
        } else if (inc) {
            if (!h)
                return gpuws__error(GPUWS_ERR_BUILD,
                                    "%s:%lu: #include \"%.*s\": no such header (a program includes only "
                                    "the headers given in gpuws_program_options.headers)",
                                    file, line, (int)nlen, name);
            if (depth >= MAX_INCLUDE_DEPTH)
                return gpuws__error(GPUWS_ERR_BUILD, "%s:%lu: #include \"%s\" nests deeper than %d headers (a cycle?)",
                                    file, line, h->name, MAX_INCLUDE_DEPTH);
            gpuws__sb_printf(out, "#line 1 \"%s\"\n", h->name);
            gpuws_status st = expand(out, h->source ? h->source : "", h->name, headers, nh, depth + 1);
            if (st) return st;
            gpuws__sb_printf(out, "\n#line %lu \"%s\"\n", line + 1, file);
        } else {
            gpuws__sb_add(out, p, len);
            gpuws__sb_puts(out, "\n");
        }
        if (!e) break;
        p = e + 1;
        line++;
    }
    return GPUWS_OK;
}

gpuws_status gpuws__program_expand(const char *source, const char *file, const gpuws_program_header *headers, size_t nh,
                                   char **out)
{
    *out = NULL;
    for (size_t i = 0; i < nh; i++)
        if (!headers[i].name || !*headers[i].name || !headers[i].source)
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.headers[%zu]: %s is NULL%s", i,
                                !headers[i].name || !*headers[i].name ? "name" : "source",
                                headers[i].name && !*headers[i].name ? " or empty" : "");
    gpuws__strbuf b = { 0 };
    gpuws_status st = expand(&b, source, file, headers, nh, 0);
    if (st) {
        gpuws__sb_free(&b);
        return st;
    }
    if (!(*out = gpuws__sb_take(&b))) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "expanding a program's #includes");
    return GPUWS_OK;
}

/* ---- tokens --------------------------------------------------------------------------------------------- */

typedef struct {
    const char *s;
    size_t n;
    unsigned line;
    char kind;        /* 'i' identifier, 'n' number, 'p' punctuation (one character) */
    const char *file; /* as named by the last #line (not NUL-terminated), or NULL for the user's file */
    size_t file_n;
} token;

typedef struct {
    char *name, *value;
} macro;

typedef struct {
    token *t;
    size_t n, cap;
    macro *m;
    size_t nm, capm;
    bool barrier_macro; /* a #define (object- or function-like) whose text names gw_barrier */
    bool oom;
} lexed;

static void push_token(lexed *L, token t)
{
    if (L->oom) return;
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 1024;
        token *nt = gpuws__realloc(L->t, cap * sizeof *nt);
        if (!nt) {
            L->oom = true;
            return;
        }
        L->t = nt;
        L->cap = cap;
    }
    L->t[L->n++] = t;
}

static void push_macro(lexed *L, const char *name, size_t nn, const char *value, size_t vn)
{
    if (L->oom) return;
    if (L->nm == L->capm) {
        size_t cap = L->capm ? L->capm * 2 : 16;
        macro *nm = gpuws__realloc(L->m, cap * sizeof *nm);
        if (!nm) {
            L->oom = true;
            return;
        }
        L->m = nm;
        L->capm = cap;
    }
    macro *m = &L->m[L->nm];
    m->name = gpuws__malloc(nn + 1);
    m->value = gpuws__malloc(vn + 1);
    if (!m->name || !m->value) {
        gpuws__free(m->name);
        gpuws__free(m->value);
        L->oom = true;
        return;
    }
    memcpy(m->name, name, nn), m->name[nn] = 0;
    memcpy(m->value, value, vn), m->value[vn] = 0;
    L->nm++;
}

static bool is_id0(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A preprocessor line starting at p (the '#'), continuation lines included; returns where it ends. Records
 * "#line N" and object-like "#define NAME value", and whether a #define names gw_barrier. */
static const char *directive(lexed *L, const char *p, unsigned *line, const char **file, size_t *file_n)
{
    const char *start = p;
    while (*p && !(*p == '\n' && p[-1] != '\\')) p++;
    const char *end = p;
    const char *q = start + 1;
    while (q < end && (*q == ' ' || *q == '\t')) q++;
    if (end - q > 4 && strncmp(q, "line", 4) == 0 && (q[4] == ' ' || q[4] == '\t')) {
        /* "#line N" names the next line; the newline ending this one adds 1 */
        char *after;
        unsigned long n = strtoul(q + 5, &after, 10);
        if (n > 0) *line = (unsigned)(n - 1);
        const char *f0 = strchr(after, '"');
        const char *f1 = f0 && f0 < end ? memchr(f0 + 1, '"', (size_t)(end - f0 - 1)) : NULL;
        if (f1) *file = f0 + 1, *file_n = (size_t)(f1 - f0 - 1);
        return end;
    }
    if (end - q > 6 && strncmp(q, "define", 6) == 0 && (q[6] == ' ' || q[6] == '\t')) {
        for (const char *c = q + 7; c + 10 <= end && !L->barrier_macro; c++)
            L->barrier_macro = !strncmp(c, "gw_barrier", 10);
        const char *n0 = q + 7;
        while (n0 < end && (*n0 == ' ' || *n0 == '\t')) n0++;
        const char *n1 = n0;
        while (n1 < end && is_id(*n1)) n1++;
        if (n1 > n0 && is_id0(*n0) && (n1 == end || *n1 == ' ' || *n1 == '\t')) { /* object-like only */
            const char *v0 = n1;
            while (v0 < end && (*v0 == ' ' || *v0 == '\t')) v0++;
            const char *v1 = end;
            while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t' || v1[-1] == '\r')) v1--;
            push_macro(L, n0, (size_t)(n1 - n0), v0, (size_t)(v1 - v0));
        }
    }
    for (const char *c = start; c < end; c++)
        if (*c == '\n') (*line)++;
    return end;
}

static void lex(lexed *L, const char *s)
{
    unsigned line = 1;
    const char *file = NULL;
    size_t file_n = 0;
    bool line_start = true;
    for (const char *p = s; *p && !L->oom;) {
        char c = *p;
        if (c == '\n') {
            line++, p++, line_start = true;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            p++;
            continue;
        }
        if (c == '\\' && p[1] == '\n') {
            line++, p += 2;
            continue;
        }
        if (c == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
            continue;
        }
        if (c == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) line += *p++ == '\n';
            if (*p) p += 2;
            continue;
        }
        if (c == '#' && line_start) {
            p = directive(L, p, &line, &file, &file_n);
            continue;
        }
        line_start = false;
        if (c == '"' || c == '\'') {
            p++;
            while (*p && *p != c && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p == c) p++;
            continue;
        }
        token t = { p, 1, line, 'p', file, file_n };
        if (is_id0(c)) {
            while (is_id(p[t.n])) t.n++;
            t.kind = 'i';
        } else if (isdigit((unsigned char)c)) {
            while (is_id(p[t.n]) || p[t.n] == '.') t.n++;
            t.kind = 'n';
        }
        push_token(L, t);
        p += t.n;
    }
}

static bool tok_is(const token *t, const char *s) { return t->n == strlen(s) && strncmp(t->s, s, t->n) == 0; }

/* "file:line" of a token, for messages: the header it lies in, or the user's file. */
#define AT(file, tk) (int)((tk)->file ? (tk)->file_n : strlen(file)), ((tk)->file ? (tk)->file : (file)), (tk)->line

/* ---- kernel parameters ---------------------------------------------------------------------------------- */

static const struct {
    const char *type;
    char kind;
} scalar_types[] = {
    { "gw_i32", 'i' }, { "gw_u32", 'u' }, { "gw_i64", 'l' },   { "gw_u64", 'L' }, { "gw_f32", 'f' },
    { "gw_f64", 'd' }, { "int", 'i' },    { "unsigned", 'u' }, { "float", 'f' },  { "double", 'd' },
};

static const char *const narrow_types[] = { "gw_i8", "gw_u8", "gw_i16", "gw_u16", "char", "short", "bool", "_Bool" };

static const char *macro_value(const lexed *L, const char *const *defines, size_t nd, const char *name, size_t n)
{
    for (size_t i = L->nm; i-- > 0;)
        if (strlen(L->m[i].name) == n && strncmp(L->m[i].name, name, n) == 0) return L->m[i].value;
    for (size_t i = 0; i < nd; i++) {
        const char *eq = strchr(defines[i], '=');
        size_t dn = eq ? (size_t)(eq - defines[i]) : strlen(defines[i]);
        if (dn == n && strncmp(defines[i], name, n) == 0) return eq ? eq + 1 : "1";
    }
    return NULL;
}

/* The kind of a scalar type written as `word` (qualifiers removed); macros are followed a few levels. */
static char scalar_kind(const lexed *L, const char *const *defines, size_t nd, const char *word, size_t n, char *why,
                        size_t whyn)
{
    char buf[128];
    for (int depth = 0; depth < 8; depth++) {
        for (size_t i = 0; i < sizeof scalar_types / sizeof scalar_types[0]; i++)
            if (strlen(scalar_types[i].type) == n && strncmp(scalar_types[i].type, word, n) == 0)
                return scalar_types[i].kind;
        for (size_t i = 0; i < sizeof narrow_types / sizeof narrow_types[0]; i++)
            if (strlen(narrow_types[i]) == n && strncmp(narrow_types[i], word, n) == 0) {
                snprintf(why, whyn,
                         "scalar parameters of type %.*s are not supported: kernel arguments are 32 or 64 bits "
                         "(pass a gw_i32 or gw_u32, or a buffer)",
                         (int)n, word);
                return 0;
            }
        const char *v = macro_value(L, defines, nd, word, n);
        if (!v) break;
        while (*v == ' ' || *v == '\t') v++;
        size_t vn = strlen(v);
        while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) vn--;
        if (vn >= sizeof buf) break;
        memcpy(buf, v, vn);
        buf[vn] = 0;
        word = buf;
        n = vn;
    }
    snprintf(why, whyn,
             "unsupported scalar parameter type '%.*s' (use gw_i32, gw_u32, gw_i64, gw_u64, gw_f32 or gw_f64; "
             "pointers need GW_GLOBAL or GW_LOCAL)",
             (int)n, word);
    return 0;
}

static char *dup_span(const char *s, size_t n)
{
    char *d = gpuws__malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = 0;
    return d;
}

/* Parses tokens [a, b) as one parameter. */
static gpuws_status parse_param(const lexed *L, const char *const *defines, size_t nd, const char *file,
                                const char *kname, size_t a, size_t b, gpuws__param *out)
{
    const token *t = L->t, *at = &t[a < b ? a : a - 1];
    if (a == b) return gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s': empty parameter", AT(file, at), kname);
    if (t[b - 1].kind != 'i')
        return gpuws__error(GPUWS_ERR_BUILD,
                            "%.*s:%u: kernel '%s': a parameter needs a name (write pointers as T *name)", AT(file, at),
                            kname);
    bool ptr = false, global = false, local = false;
    size_t words = 0, wi = 0;
    for (size_t i = a; i + 1 < b; i++) {
        if (tok_is(&t[i], "*")) ptr = true;
        else if (tok_is(&t[i], "["))
            return gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s': write array parameters as pointers (T *name)",
                                AT(file, &t[i]), kname);
        else if (tok_is(&t[i], "GW_GLOBAL")) global = true;
        else if (tok_is(&t[i], "GW_LOCAL")) local = true;
        else if (t[i].kind == 'i' && !tok_is(&t[i], "const") && !tok_is(&t[i], "volatile") &&
                 !tok_is(&t[i], "GW_RESTRICT") && !tok_is(&t[i], "restrict")) {
            if (!words) wi = i;
            words++;
        }
    }
    char why[256] = "";
    char kind;
    if (ptr) {
        if (global == local)
            return gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s': pointer parameter '%.*s' needs %s",
                                AT(file, at), kname, (int)t[b - 1].n, t[b - 1].s,
                                global ? "one of GW_GLOBAL and GW_LOCAL, not both"
                                       : "GW_GLOBAL (a buffer) or GW_LOCAL (dynamic shared memory)");
        kind = global ? 'b' : 's';
    } else {
        if (words == 2 && tok_is(&t[wi], "unsigned") && tok_is(&t[wi + 1], "int")) kind = 'u';
        else if (words == 1) kind = scalar_kind(L, defines, nd, t[wi].s, t[wi].n, why, sizeof why);
        else {
            kind = 0;
            snprintf(why, sizeof why,
                     "unsupported scalar parameter type (use gw_i32, gw_u32, gw_i64, gw_u64, gw_f32 or gw_f64)");
        }
        if (!kind)
            return gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s': parameter '%.*s': %s", AT(file, at), kname,
                                (int)t[b - 1].n, t[b - 1].s, why);
    }
    out->kind = kind;
    out->name = dup_span(t[b - 1].s, t[b - 1].n);
    /* the type as written, from its first token to the end of its last (comments inside are kept: harmless) */
    out->type = b - 1 > a ? dup_span(t[a].s, (size_t)(t[b - 2].s + t[b - 2].n - t[a].s)) : dup_span("", 0);
    if (!out->name || !out->type) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading kernel '%s'", kname);
    return GPUWS_OK;
}

void gpuws__kernel_decls_free(gpuws__kernel_decl *d, size_t n)
{
    if (!d) return;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d[i].nparams; j++) {
            gpuws__free(d[i].params[j].type);
            gpuws__free(d[i].params[j].name);
        }
        gpuws__free(d[i].params);
        gpuws__free(d[i].name);
    }
    gpuws__free(d);
}

/* Index of the token closing the bracket at i (same depth), or n. */
static size_t match(const token *t, size_t i, size_t n, char open, char close)
{
    int depth = 0;
    for (size_t j = i; j < n; j++) {
        if (t[j].kind != 'p') continue;
        if (t[j].s[0] == open) depth++;
        else if (t[j].s[0] == close && --depth == 0) return j;
    }
    return n;
}

static bool span_names(const token *t, size_t a, size_t b, const char *id)
{
    for (size_t i = a; i < b; i++)
        if (t[i].kind == 'i' && tok_is(&t[i], id)) return true;
    return false;
}

gpuws_status gpuws__program_parse(const char *text, const char *file, const char *const *defines, size_t nd,
                                  gpuws__kernel_decl **decls, size_t *ndecls)
{
    *decls = NULL;
    *ndecls = 0;
    lexed L = { 0 };
    lex(&L, text);
    gpuws_status st = GPUWS_OK;
    gpuws__kernel_decl *d = NULL;
    size_t nk = 0, capk = 0;
    bool barrier_outside = false; /* gw_barrier named outside every kernel body: in a helper or a macro */
    size_t last_body_end = 0;
    if (L.oom) {
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading a program's source");
        goto done;
    }
    for (size_t i = 0; i < L.n; i++) {
        if (!(L.t[i].kind == 'i' && tok_is(&L.t[i], "GW_KERNEL"))) continue;
        const token *t = L.t;
        if (i + 3 >= L.n || !tok_is(&t[i + 1], "void") || t[i + 2].kind != 'i' || !tok_is(&t[i + 3], "(")) {
            st = gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: GW_KERNEL must be followed by void name(parameters)",
                              AT(file, &t[i]));
            goto done;
        }
        size_t close = match(t, i + 3, L.n, '(', ')');
        if (close == L.n) {
            st = gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%.*s': unbalanced parentheses", AT(file, &t[i]),
                              (int)t[i + 2].n, t[i + 2].s);
            goto done;
        }
        if (close + 1 >= L.n || !tok_is(&t[close + 1], "{")) continue; /* a declaration, not the definition */
        size_t body_end = match(t, close + 1, L.n, '{', '}');
        if (nk == capk) {
            size_t cap = capk ? capk * 2 : 8;
            gpuws__kernel_decl *nd2 = gpuws__realloc(d, cap * sizeof *nd2);
            if (!nd2) {
                st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading a program's kernels");
                goto done;
            }
            d = nd2;
            capk = cap;
        }
        gpuws__kernel_decl *k = &d[nk++];
        memset(k, 0, sizeof *k);
        k->line = t[i + 2].line;
        if (!(k->name = dup_span(t[i + 2].s, t[i + 2].n))) {
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading a program's kernels");
            goto done;
        }
        for (size_t j = 0; j + 1 < nk; j++)
            if (strcmp(d[j].name, k->name) == 0) {
                st = gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s' is defined twice (also at line %u)",
                                  AT(file, &t[i + 2]), k->name, d[j].line);
                goto done;
            }
        /* parameters: split at depth-0 commas; "void" alone or nothing means none */
        size_t a = i + 4;
        bool none = close == a || (close == a + 1 && tok_is(&t[a], "void"));
        size_t np = 0;
        if (!none) {
            np = 1;
            for (size_t j = a, depth = 0; j < close; j++) {
                if (tok_is(&t[j], "(") || tok_is(&t[j], "[")) depth++;
                else if (tok_is(&t[j], ")") || tok_is(&t[j], "]")) depth--;
                else if (depth == 0 && tok_is(&t[j], ",")) np++;
            }
        }
        if (np > GPUWS__SIG_MAX) {
            st = gpuws__error(GPUWS_ERR_BUILD, "%.*s:%u: kernel '%s' has %zu parameters; at most %d are supported",
                              AT(file, &t[i + 2]), k->name, np, GPUWS__SIG_MAX);
            goto done;
        }
        if (np && !(k->params = gpuws__calloc(np, sizeof *k->params))) {
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "reading kernel '%s'", k->name);
            goto done;
        }
        size_t start = a;
        for (size_t j = a, depth = 0; !none && j <= close; j++) {
            if (j < close && (tok_is(&t[j], "(") || tok_is(&t[j], "["))) depth++;
            else if (j < close && (tok_is(&t[j], ")") || tok_is(&t[j], "]"))) depth--;
            else if (j == close || (depth == 0 && tok_is(&t[j], ","))) {
                st = parse_param(&L, defines, nd, file, k->name, start, j, &k->params[k->nparams++]);
                if (st) goto done;
                k->sig[k->nparams - 1] = k->params[k->nparams - 1].kind;
                start = j + 1;
            }
        }
        k->sig[k->nparams] = 0;
        k->barrier = span_names(t, close + 1, body_end, "gw_barrier");
        if (span_names(t, last_body_end, i, "gw_barrier")) barrier_outside = true;
        last_body_end = body_end;
        i = body_end < L.n ? body_end : L.n - 1;
    }
    if (span_names(L.t, last_body_end, L.n, "gw_barrier")) barrier_outside = true;
    /* a #define naming gw_barrier is a directive, not a token: look at the source's macros, function-like ones
     * included, and at the options' defines */
    if (L.barrier_macro) barrier_outside = true;
    for (size_t m = 0; m < nd && !barrier_outside; m++) {
        const char *eq = strchr(defines[m], '=');
        barrier_outside = eq && strstr(eq + 1, "gw_barrier") != NULL;
    }
    if (barrier_outside)
        for (size_t j = 0; j < nk; j++) d[j].barrier = true;
done:
    for (size_t m = 0; m < L.nm; m++) {
        gpuws__free(L.m[m].name);
        gpuws__free(L.m[m].value);
    }
    gpuws__free(L.m);
    gpuws__free(L.t);
    if (st) {
        gpuws__kernel_decls_free(d, nk);
        return st;
    }
    *decls = d;
    *ndecls = nk;
    return GPUWS_OK;
}
