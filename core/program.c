/* User programs (include/gpuws/program.h): options, the generated text, lifetimes. The backend compiles; core
 * reads the GW_KERNEL signatures so that gpuws_launch checks a user kernel's arguments the same way on every
 * backend. */
#include "options.h"
#include "program_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_FILE_NAME "kernel.gw"
#define KNOWN_FLAGS       (GPUWS_PROGRAM_NO_CACHE | GPUWS_PROGRAM_DEBUG | GPUWS_PROGRAM_FAST_MATH)

static bool is_identifier(const char *s, size_t n)
{
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
    return true;
}

static gpuws_status check_options(const gpuws_program_options *o, const char *file)
{
    if (strpbrk(file, "\"\n\\") || !*file)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "options.file_name '%s' is empty or holds a quote, backslash or "
                            "newline (it is written into #line directives)",
                            file);
    if (o->num_defines && !o->defines)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.defines is NULL with num_defines = %zu",
                            o->num_defines);
    for (size_t i = 0; i < o->num_defines; i++) {
        const char *d = o->defines[i];
        if (!d) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.defines[%zu] is NULL", i);
        const char *eq = strchr(d, '=');
        size_t n = eq ? (size_t)(eq - d) : strlen(d);
        if (!is_identifier(d, n))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                                "options.defines[%zu] = '%s': the name before '=' must be an identifier", i, d);
        if (strchr(d, '\n'))
            return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.defines[%zu]: a value cannot hold a newline", i);
    }
    if (o->num_headers && !o->headers)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.headers is NULL with num_headers = %zu",
                            o->num_headers);
    if (o->flags & ~(unsigned)KNOWN_FLAGS)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "options.flags 0x%x has unknown bits 0x%x", o->flags,
                            o->flags & ~(unsigned)KNOWN_FLAGS);
    return GPUWS_OK;
}

static void program_free(gpuws_program *p)
{
    if (!p) return;
    gpuws__kernel_decls_free(p->decls, p->ndecls);
    gpuws__free(p->kernels);
    gpuws__free(p->file_name);
    gpuws__free(p->source);
    gpuws__free(p->log);
    gpuws__free(p);
}

/* The dialect, the defines, the backend's text before, the user's source, the backend's text after. */
static gpuws_status generate(gpuws_program *p, const gpuws_program_options *o, const char *expanded, bool with_after)
{
    const gpuws__backend *b = p->ctx->backend;
    gpuws__strbuf t = { 0 };
    gpuws__sb_printf(&t, "#line 1 \"gpuws-dialect-%s.h\"\n", b->name);
    gpuws__sb_puts(&t, b->dialect);
    gpuws__sb_puts(&t, "\n#line 1 \"gpuws-defines\"\n");
    for (size_t i = 0; i < o->num_defines; i++) {
        const char *d = o->defines[i], *eq = strchr(d, '=');
        if (eq) gpuws__sb_printf(&t, "#define %.*s %s\n", (int)(eq - d), d, eq + 1);
        else gpuws__sb_printf(&t, "#define %s 1\n", d);
    }
    gpuws_status st = GPUWS_OK;
    if (b->program_text) {
        gpuws__sb_puts(&t, "#line 1 \"gpuws-entry-points\"\n");
        st = b->program_text(p, GPUWS__TEXT_BEFORE, &t);
    }
    gpuws__sb_printf(&t, "#line 1 \"%s\"\n", p->file_name);
    gpuws__sb_puts(&t, expanded);
    if (!st && with_after && b->program_text) {
        gpuws__sb_puts(&t, "\n#line 1 \"gpuws-entry-points\"\n");
        st = b->program_text(p, GPUWS__TEXT_AFTER, &t);
    }
    if (st) {
        gpuws__sb_free(&t);
        return st;
    }
    p->source_len = t.len;
    if (!(p->source = gpuws__sb_take(&t)))
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "assembling a program's source");
    return GPUWS_OK;
}

static gpuws_status register_program(gpuws_program *p)
{
    gpuws_status st = gpuws__handle_add(p, GPUWS__H_PROGRAM);
    if (st) return st;
    pthread_mutex_lock(&p->ctx->lock);
    p->next = p->ctx->programs;
    p->ctx->programs = p;
    pthread_mutex_unlock(&p->ctx->lock);
    return GPUWS_OK;
}

/* A failed program: the message (already in gpuws_last_error) is its log when the compiler wrote none. */
static gpuws_status fail_program(gpuws_program *p, gpuws_program **out)
{
    char msg[2048];
    gpuws__strlcpy(msg, gpuws_last_error(), sizeof msg);
    if (!p->log && !(p->log = gpuws__strdup(msg))) {
        program_free(p);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "keeping a failed program's log");
    }
    p->failed = true;
    if (register_program(p)) {
        program_free(p);
        return GPUWS_ERR_OUT_OF_MEMORY;
    }
    *out = p;
    return gpuws__error(GPUWS_ERR_BUILD, "%s", msg);
}

static gpuws_status create(gpuws_context *ctx, const char *source, const gpuws_program_options *opt, bool internal,
                           gpuws_program **out)
{
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    gpuws_status st = gpuws__options_read(opt, &o, sizeof o, GPUWS__PROGRAM_OPTIONS_BASE, "program_create: options");
    if (st) return st;
    const char *file = o.file_name ? o.file_name : DEFAULT_FILE_NAME;
    st = check_options(&o, file);
    if (st) return st;
    if (!ctx->backend->program_build)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "the %s backend cannot compile programs", ctx->backend->name);
    gpuws_program *p = gpuws__calloc(1, sizeof *p);
    if (!p || !(p->file_name = gpuws__strdup(file))) {
        gpuws__free(p);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a program");
    }
    p->ctx = ctx;
    p->flags = o.flags;
    char *expanded = NULL;
    st = gpuws__program_expand(source, file, o.headers, o.num_headers, &expanded);
    if (!st) st = gpuws__program_parse(expanded, file, o.defines, o.num_defines, &p->decls, &p->ndecls);
    if (st == GPUWS_ERR_BUILD) { /* the source's fault: a failed program, with what text there is */
        if (expanded) generate(p, &o, expanded, false);
        gpuws__free(expanded);
        return internal ? (program_free(p), GPUWS_ERR_BUILD) : fail_program(p, out);
    }
    if (!st && p->ndecls && !(p->kernels = gpuws__calloc(p->ndecls, sizeof *p->kernels)))
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a program's kernel table");
    if (!st) st = generate(p, &o, expanded, true);
    gpuws__free(expanded);
    if (!st) st = ctx->backend->program_build(p);
    if (st == GPUWS_ERR_BUILD) {
        char diag[1024];
        gpuws__first_diagnostic(p->log, p->source, diag, sizeof diag);
        if (!diag[0]) gpuws__strlcpy(diag, gpuws_last_error(), sizeof diag);
        if (internal) /* no program is handed out: the whole output goes into the message */
            gpuws__error(GPUWS_ERR_BUILD, "%s; the compiler's output:\n%s", diag, p->log ? p->log : "");
        else gpuws__error(GPUWS_ERR_BUILD, "%s (the whole compiler output: gpuws_program_log)", diag);
        if (ctx->backend->program_destroy && p->impl) ctx->backend->program_destroy(p);
        p->impl = NULL;
        return internal ? (program_free(p), GPUWS_ERR_BUILD) : fail_program(p, out);
    }
    if (!st && !p->log && !(p->log = gpuws__strdup(""))) st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a log");
    if (!st) st = register_program(p);
    if (st) {
        if (p->impl && ctx->backend->program_destroy) ctx->backend->program_destroy(p);
        program_free(p);
        return st;
    }
    *out = p;
    return GPUWS_OK;
}

gpuws_status gpuws_program_create(gpuws_context *ctx, const char *source, const gpuws_program_options *options,
                                  gpuws_program **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'program' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!source) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'source' is NULL");
    if (!*source) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'source' is empty");
    return create(ctx, source, options, false, out);
}

gpuws_status gpuws__program_create_internal(gpuws_context *ctx, const char *source, const char *file_name,
                                            gpuws_program **out)
{
    gpuws_program_options o = GPUWS_PROGRAM_OPTIONS_INIT;
    o.file_name = file_name;
    *out = NULL;
    return create(ctx, source, &o, true, out);
}

const char *gpuws_program_log(const gpuws_program *p)
{
    if (!p || !gpuws__handle_live(p, GPUWS__H_PROGRAM)) return NULL;
    return p->log ? p->log : "";
}

const char *gpuws_program_source(const gpuws_program *p)
{
    if (!p || !gpuws__handle_live(p, GPUWS__H_PROGRAM)) return NULL;
    return p->source ? p->source : "";
}

gpuws_status gpuws_program_get_kernel(gpuws_program *p, const char *name, gpuws_kernel **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is NULL");
    *out = NULL;
    if (!p) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'program' is NULL");
    if (!gpuws__handle_live(p, GPUWS__H_PROGRAM))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "argument 'program': %p is not a live program (destroyed, or never "
                            "created)",
                            (void *)p);
    if (p->failed)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "program '%s' failed to build: it has no kernels (its log says why)", p->file_name);
    if (!name || !*name) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'name' is NULL or empty");
    size_t i = 0;
    while (i < p->ndecls && strcmp(p->decls[i].name, name) != 0) i++;
    if (i == p->ndecls) {
        char list[1024] = "";
        size_t n = 0;
        for (size_t j = 0; j < p->ndecls && n < sizeof list; j++) {
            int w = snprintf(list + n, sizeof list - n, "%s%s", j ? ", " : "", p->decls[j].name);
            if (w > 0) n += (size_t)w;
        }
        return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND, "program '%s' has no kernel '%s'; its kernels: %s",
                            p->file_name, name, p->ndecls ? list : "none (no GW_KERNEL definition)");
    }
    gpuws_context *ctx = p->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (p->kernels[i]) {
        *out = p->kernels[i];
        pthread_mutex_unlock(&ctx->lock);
        return GPUWS_OK;
    }
    gpuws_kernel *k = gpuws__calloc(1, sizeof *k);
    gpuws_status st = GPUWS_OK;
    if (!k || !(k->name = gpuws__strdup(name)) || !(k->options = gpuws__strdup(""))) {
        if (k) gpuws__free(k->name);
        gpuws__free(k);
        pthread_mutex_unlock(&ctx->lock);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating kernel '%s'", name);
    }
    k->ctx = ctx;
    k->program = p;
    memcpy(k->sig, p->decls[i].sig, sizeof k->sig);
    k->info.max_block_size = ctx->info.max_block_size;
    st = ctx->backend->program_kernel(p, i, k);
    if (!st && (st = gpuws__handle_add(k, GPUWS__H_KERNEL)) && ctx->backend->kernel_destroy)
        ctx->backend->kernel_destroy(k);
    if (st) {
        pthread_mutex_unlock(&ctx->lock);
        gpuws__free(k->name);
        gpuws__free(k->options);
        gpuws__free(k);
        return st;
    }
    k->info.name = k->name;
    k->info.num_params = (uint32_t)strlen(k->sig);
    p->kernels[i] = k;
    pthread_mutex_unlock(&ctx->lock);
    *out = k;
    return GPUWS_OK;
}

void gpuws__program_release(gpuws_program *p)
{
    gpuws_context *ctx = p->ctx;
    gpuws__handle_remove(p);
    pthread_mutex_lock(&ctx->lock);
    for (gpuws_program **pp = &ctx->programs; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    for (size_t i = 0; i < p->ndecls; i++) {
        gpuws_kernel *k = p->kernels ? p->kernels[i] : NULL;
        if (!k) continue;
        gpuws__handle_remove(k);
        if (ctx->backend->kernel_destroy) ctx->backend->kernel_destroy(k);
        gpuws__free(k->name);
        gpuws__free(k->options);
        gpuws__free(k);
    }
    pthread_mutex_unlock(&ctx->lock);
    if (p->impl && ctx->backend->program_destroy) ctx->backend->program_destroy(p);
    program_free(p);
}

void gpuws_program_destroy(gpuws_program *p)
{
    if (!p || !gpuws__handle_live(p, GPUWS__H_PROGRAM)) return;
    gpuws__program_release(p);
}

void gpuws__context_release_programs(gpuws_context *ctx)
{
    gpuws__generators_release(ctx);
    for (;;) {
        pthread_mutex_lock(&ctx->lock);
        gpuws_program *p = ctx->programs;
        pthread_mutex_unlock(&ctx->lock);
        if (!p) break;
        gpuws__program_release(p);
    }
}
