/* CuPy-style generators: an elementwise kernel and a two-pass reduction made from a few lines of dialect text.
 * Each is an ordinary user program built from generated source, kept by the context under its texts so the same
 * texts are built once per context. */
#include "driver_support.h"
#include "program_internal.h"

#include <stdio.h>
#include <string.h>

#define REDUCE_BLOCK      256 /* work-items per block of both passes (a power of two: the tree halves it) */
#define REDUCE_MAX_GROUPS 1024

struct gpuws_reduction {
    gpuws_context *ctx;
    gpuws_kernel *partial, *final;
    size_t out_size;
    uint32_t groups_cap; /* blocks of the first pass: fixed per device, so results are too */
};

typedef struct gpuws__generated {
    char *key;
    gpuws_program *program;
    gpuws_kernel *kernel;       /* elementwise */
    gpuws_reduction *reduction; /* reduction */
    struct gpuws__generated *next;
} gpuws__generated;

static const struct {
    const char *name;
    size_t size;
} out_types[] = {
    { "gw_i32", 4 }, { "gw_u32", 4 }, { "gw_f32", 4 }, { "gw_i64", 8 }, { "gw_u64", 8 }, { "gw_f64", 8 }
};

/* params with GW_GLOBAL in front of every pointer parameter that has no address space (the generators' pointers are
 * buffers), followed by ", " when not empty. */
static void add_params(gpuws__strbuf *b, const char *params)
{
    const char *p = params;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) return;
    while (*p) {
        const char *e = p;
        int depth = 0;
        while (*e && !(depth == 0 && *e == ',')) {
            depth += (*e == '(' || *e == '[') - (*e == ')' || *e == ']');
            e++;
        }
        const size_t n = (size_t)(e - p);
        bool ptr = memchr(p, '*', n) != NULL, spaced = false;
        for (const char *q = p; q + 8 < e && !spaced; q++)
            spaced = !strncmp(q, "GW_GLOBAL", 9) || !strncmp(q, "GW_LOCAL", 8);
        if (ptr && !spaced) gpuws__sb_puts(b, "GW_GLOBAL ");
        gpuws__sb_add(b, p, n);
        gpuws__sb_puts(b, ", ");
        p = *e ? e + 1 : e;
    }
}

static gpuws__generated *find(gpuws_context *ctx, const char *key)
{
    for (gpuws__generated *g = ctx->generated; g; g = g->next)
        if (strcmp(g->key, key) == 0) return g;
    return NULL;
}

static char *make_key(char kind, const char *const *texts, size_t n)
{
    gpuws__strbuf b = { 0 };
    gpuws__sb_add(&b, &kind, 1);
    for (size_t i = 0; i < n; i++) {
        gpuws__sb_add(&b, "\x1f", 1);
        gpuws__sb_puts(&b, texts[i] ? texts[i] : "");
    }
    return gpuws__sb_take(&b);
}

/* Builds source into a program kept by the context under key; returns it (or the one made before). Called with
 * ctx->gen_lock not held: two threads may build the same texts at once; the first to register wins. */
static gpuws_status build(gpuws_context *ctx, char kind, const char *key, const char *source, const char *file,
                          gpuws__generated **out)
{
    pthread_mutex_lock(&ctx->lock);
    gpuws__generated *g = find(ctx, key);
    pthread_mutex_unlock(&ctx->lock);
    if (g) {
        *out = g;
        return GPUWS_OK;
    }
    gpuws_program *p;
    gpuws_status st = gpuws__program_create_internal(ctx, source, file, &p);
    if (st) return st;
    p->generator = kind;
    g = gpuws__calloc(1, sizeof *g);
    if (!g || !(g->key = gpuws__strdup(key))) {
        gpuws__free(g);
        gpuws__program_release(p);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "keeping a generated kernel");
    }
    g->program = p;
    pthread_mutex_lock(&ctx->lock);
    gpuws__generated *old = find(ctx, key);
    if (!old) {
        g->next = ctx->generated;
        ctx->generated = g;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (old) { /* another thread was first */
        gpuws__free(g->key);
        gpuws__free(g);
        gpuws__program_release(p);
        g = old;
    }
    *out = g;
    return GPUWS_OK;
}

static gpuws_status need_text(const char *what, const char *s)
{
    if (!s) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument '%s' is NULL", what);
    if (!*s) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument '%s' is empty", what);
    return GPUWS_OK;
}

gpuws_status gpuws_elementwise_create(gpuws_context *ctx, const char *params, const char *operation,
                                      const char *preamble, gpuws_kernel **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if (!params) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'params' is NULL (\"\" for none)");
    if ((st = need_text("operation", operation))) return st;
    const char *texts[3] = { params, operation, preamble };
    char *key = make_key('e', texts, 3);
    gpuws__strbuf src = { 0 };
    gpuws__sb_printf(&src, "#line 1 \"preamble\"\n%s\n#line 1 \"params\"\nGW_KERNEL void gw_elementwise(",
                     preamble ? preamble : "");
    add_params(&src, params);
    gpuws__sb_puts(&src,
                   "gw_u64 gw__n)\n{\n    for (gw_u64 i = gw_global_idx(0); i < gw__n; i += gw_global_size(0)) {\n"
                   "#line 1 \"operation\"\n");
    gpuws__sb_printf(&src, "%s;\n    }\n}\n", operation);
    char *source = gpuws__sb_take(&src);
    gpuws__generated *g = NULL;
    if (!key || !source) st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "generating an elementwise kernel");
    else st = build(ctx, 'e', key, source, "elementwise", &g);
    gpuws__free(key);
    gpuws__free(source);
    if (st) return gpuws__error_prefix(st, "gpuws_elementwise_create");
    if (!g->kernel && (st = gpuws_program_get_kernel(g->program, "gw_elementwise", &g->kernel))) return st;
    *out = g->kernel;
    return GPUWS_OK;
}

/* The largest power of two <= n (n >= 1). */
static uint32_t pow2_floor(uint64_t n)
{
    uint32_t p = 1;
    while ((uint64_t)p * 2 <= n && p < (1u << 30)) p *= 2;
    return p;
}

gpuws_status gpuws_elementwise_launch(gpuws_stream *s, gpuws_kernel *k, uint64_t n, const gpuws_arg *args, size_t nargs)
{
    if (!k || !gpuws__handle_live(k, GPUWS__H_KERNEL))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'kernel' is not a live kernel");
    if (!k->program || k->program->generator != 'e')
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "kernel '%s' was not made by gpuws_elementwise_create (launch it "
                            "with gpuws_launch)",
                            k->name);
    if (nargs + 1 != strlen(k->sig))
        return gpuws__error(GPUWS_ERR_ARGUMENTS, "elementwise kernel: %zu argument(s) given; its params take %zu",
                            nargs, strlen(k->sig) - 1);
    if (nargs && !args)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'args' is NULL with nargs = %zu", nargs);
    gpuws_arg all[GPUWS__SIG_MAX];
    if (nargs) memcpy(all, args, nargs * sizeof *args);
    all[nargs] = gpuws_arg_u64(n);
    gpuws_status st = gpuws__resolve_stream(k->ctx, &s, "argument 'stream'");
    size_t local;
    if (!st) st = gpuws__check_launch_args(k, all, nargs + 1, &local);
    if (st || n == 0) return st;
    const gpuws_device_info *d = &k->ctx->info;
    uint64_t block = 256;
    if (block > k->info.max_block_size) block = k->info.max_block_size;
    if (block > d->max_block_dims[0]) block = d->max_block_dims[0];
    uint64_t groups = (n + block - 1) / block, cap = d->max_grid_dims[0] < INT32_MAX ? d->max_grid_dims[0] : INT32_MAX;
    if (groups > cap) groups = cap; /* the kernel loops over the rest */
    gpuws_launch_config cfg = { { (uint32_t)groups, 1, 1 }, { (uint32_t)block, 1, 1 } };
    return gpuws_launch(s, k, &cfg, all, nargs + 1);
}

gpuws_status gpuws_reduction_create(gpuws_context *ctx, const char *out_type, const char *neutral, const char *map_expr,
                                    const char *reduce_expr, const char *params, const char *preamble,
                                    gpuws_reduction **out)
{
    if (!out) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'reduction' is NULL");
    *out = NULL;
    gpuws_status st = gpuws__check_context(ctx, "argument 'ctx'");
    if (st) return st;
    if ((st = need_text("out_type", out_type)) || (st = need_text("neutral", neutral)) ||
        (st = need_text("map_expr", map_expr)) || (st = need_text("reduce_expr", reduce_expr)))
        return st;
    if (!params) return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'params' is NULL (\"\" for none)");
    size_t size = 0;
    for (size_t i = 0; i < sizeof out_types / sizeof out_types[0]; i++)
        if (strcmp(out_type, out_types[i].name) == 0) size = out_types[i].size;
    if (!size)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "argument 'out_type' is '%s'; one of gw_i32, gw_u32, gw_i64, gw_u64, "
                            "gw_f32, gw_f64",
                            out_type);
    if (size == 8 && out_type[3] == 'f' && !ctx->info.fp64)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED, "out_type gw_f64: %s has no double precision", ctx->info.name);
    const char *texts[6] = { out_type, neutral, map_expr, reduce_expr, params, preamble };
    char *key = make_key('r', texts, 6);
    gpuws__strbuf src = { 0 };
    const char *T = out_type;
    gpuws__sb_printf(&src, "#line 1 \"preamble\"\n%s\n", preamble ? preamble : "");
    gpuws__sb_printf(&src, "#line 1 \"reduce_expr\"\nGW_DEVICE %s gw__reduce(%s a, %s b) { return (%s); }\n", T, T, T,
                     reduce_expr);
    /* the tree over a block's values, the same in both passes */
    gpuws__sb_printf(&src,
                     "#line 1 \"gpuws-reduction\"\n"
                     "GW_DEVICE void gw__tree(GW_LOCAL %s *sh, %s acc, GW_GLOBAL %s *out)\n{\n"
                     "    const gw_u64 t = gw_thread_idx(0);\n    sh[t] = acc;\n    gw_barrier();\n"
                     "    for (gw_u64 s = gw_block_dim(0) / 2; s > 0; s >>= 1) {\n"
                     "        if (t < s) sh[t] = gw__reduce(sh[t], sh[t + s]);\n        gw_barrier();\n    }\n"
                     "    if (t == 0) out[gw_block_idx(0)] = sh[0];\n}\n",
                     T, T, T);
    gpuws__sb_puts(&src, "#line 1 \"params\"\nGW_KERNEL void gw_reduce_partial(");
    add_params(&src, params);
    gpuws__sb_printf(&src, "gw_u64 gw__n, GW_GLOBAL %s *gw__out, GW_LOCAL %s *gw__sh)\n{\n", T, T);
    gpuws__sb_printf(&src, "#line 1 \"neutral\"\n    %s gw__acc = (%s);\n", T, neutral);
    gpuws__sb_printf(&src,
                     "    for (gw_u64 i = gw_global_idx(0); i < gw__n; i += gw_global_size(0))\n"
                     "#line 1 \"map_expr\"\n        gw__acc = gw__reduce(gw__acc, (%s));\n",
                     map_expr);
    gpuws__sb_puts(&src, "    gw__tree(gw__sh, gw__acc, gw__out);\n}\n");
    gpuws__sb_printf(&src,
                     "#line 1 \"gpuws-reduction\"\n"
                     "GW_KERNEL void gw_reduce_final(gw_u64 gw__m, GW_GLOBAL const %s *gw__in, GW_GLOBAL %s *gw__out, "
                     "GW_LOCAL %s *gw__sh)\n{\n"
                     "#line 1 \"neutral\"\n    %s gw__acc = (%s);\n"
                     "#line 9 \"gpuws-reduction\"\n"
                     "    for (gw_u64 i = gw_thread_idx(0); i < gw__m; i += gw_block_dim(0)) gw__acc = "
                     "gw__reduce(gw__acc, gw__in[i]);\n"
                     "    gw__tree(gw__sh, gw__acc, gw__out);\n}\n",
                     T, T, T, T, neutral);
    char *source = gpuws__sb_take(&src);
    gpuws__generated *g = NULL;
    if (!key || !source) st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "generating a reduction");
    else st = build(ctx, 'r', key, source, "reduction", &g);
    gpuws__free(key);
    gpuws__free(source);
    if (st) return gpuws__error_prefix(st, "gpuws_reduction_create");
    pthread_mutex_lock(&ctx->lock);
    gpuws_reduction *r = g->reduction;
    pthread_mutex_unlock(&ctx->lock);
    if (r) {
        *out = r;
        return GPUWS_OK;
    }
    if (!(r = gpuws__calloc(1, sizeof *r))) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a reduction");
    r->ctx = ctx;
    r->out_size = size;
    uint64_t cap = (uint64_t)ctx->info.compute_units * 4;
    r->groups_cap = (uint32_t)(cap < 1 ? 1 : cap > REDUCE_MAX_GROUPS ? REDUCE_MAX_GROUPS : cap);
    if ((st = gpuws_program_get_kernel(g->program, "gw_reduce_partial", &r->partial)) ||
        (st = gpuws_program_get_kernel(g->program, "gw_reduce_final", &r->final)) ||
        (st = gpuws__handle_add(r, GPUWS__H_REDUCTION))) {
        gpuws__free(r);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    gpuws_reduction *old = g->reduction;
    if (!old) g->reduction = r;
    pthread_mutex_unlock(&ctx->lock);
    if (old) {
        gpuws__handle_remove(r);
        gpuws__free(r);
        r = old;
    }
    *out = r;
    return GPUWS_OK;
}

/* What this file keeps on the stream (gpuws__stream_scratch). */
static const gpuws__stream_key key_partials = { "reduction.partials" };

gpuws_status gpuws_reduction_launch(gpuws_stream *s, gpuws_reduction *r, uint64_t n, const gpuws_arg *args,
                                    size_t nargs, gpuws_buffer *out)
{
    if (!r || !gpuws__handle_live(r, GPUWS__H_REDUCTION))
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'reduction' is not a live reduction");
    gpuws_context *ctx = r->ctx;
    GPUWS__CLAIM(claim); /* the partials live in the stream's scratch memory */
    gpuws_status st = gpuws__resolve_stream(ctx, &s, "argument 'stream'");
    if (!st) st = gpuws__claim(&claim, s, "gpuws_reduction_launch");
    if (!st) st = gpuws__check_buffer(out, "argument 'out'");
    if (!st) st = gpuws__check_same_context(ctx, out, "argument 'out'");
    if (!st) st = gpuws__check_range(out, 0, r->out_size, "argument 'out'");
    if (st) return st;
    if (nargs + 3 != strlen(r->partial->sig))
        return gpuws__error(GPUWS_ERR_ARGUMENTS, "reduction: %zu argument(s) given; its params take %zu", nargs,
                            strlen(r->partial->sig) - 3);
    if (nargs && !args)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT, "argument 'args' is NULL with nargs = %zu", nargs);
    const gpuws_device_info *d = &ctx->info;
    uint64_t lim = REDUCE_BLOCK;
    if (lim > r->partial->info.max_block_size) lim = r->partial->info.max_block_size;
    if (lim > r->final->info.max_block_size) lim = r->final->info.max_block_size;
    if (lim > d->max_block_dims[0]) lim = d->max_block_dims[0];
    const uint32_t block = pow2_floor(lim);
    uint64_t groups = (n + block - 1) / block;
    if (groups > r->groups_cap) groups = r->groups_cap;
    if (groups == 0) groups = 1;
    gpuws_buffer *partials;
    gpuws_arg all[GPUWS__SIG_MAX];
    if (nargs) memcpy(all, args, nargs * sizeof *args);
    all[nargs] = gpuws_arg_u64(n);
    all[nargs + 1] = gpuws_arg_buffer(out); /* checked now; the partials buffer replaces it below */
    all[nargs + 2] = gpuws_arg_local((size_t)block * r->out_size);
    size_t local;
    if ((st = gpuws__check_launch_args(r->partial, all, nargs + 3, &local))) return st;
    if ((st = gpuws__stream_scratch(s, &key_partials, groups * r->out_size, &partials))) return st;
    all[nargs + 1] = gpuws_arg_buffer(partials);
    gpuws_launch_config cfg = { { (uint32_t)groups, 1, 1 }, { block, 1, 1 } };
    if ((st = gpuws_launch(s, r->partial, &cfg, all, nargs + 3))) return st;
    gpuws_arg fin[4] = { gpuws_arg_u64(groups), gpuws_arg_buffer(partials), gpuws_arg_buffer(out),
                         gpuws_arg_local((size_t)block * r->out_size) };
    cfg.grid[0] = 1;
    return gpuws_launch(s, r->final, &cfg, fin, 4);
}

void gpuws__generators_release(gpuws_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    gpuws__generated *g = ctx->generated;
    ctx->generated = NULL;
    pthread_mutex_unlock(&ctx->lock);
    while (g) {
        gpuws__generated *next = g->next;
        if (g->reduction) {
            gpuws__handle_remove(g->reduction);
            gpuws__free(g->reduction);
        }
        gpuws__program_release(g->program);
        gpuws__free(g->key);
        gpuws__free(g);
        g = next;
    }
}
