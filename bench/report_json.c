/* Machine-readable reports: one JSON document (metadata, targets with their ceilings, rows, comparisons) and a CSV
 * of the rows. Both list the same row fields, from one table, so they cannot drift apart. */
#include "bench.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { F_STRING, F_NUMBER, F_BOOL } field_kind;
typedef struct {
    field_kind kind;
    const char *s; /* F_STRING; NULL = null */
    double x;      /* F_NUMBER (NaN = null), F_BOOL (0/1) */
} field;

static field str(const char *s) { return (field){ F_STRING, s, 0 }; }
static field num(double x) { return (field){ F_NUMBER, NULL, x }; }
/* 0 means "does not apply" for the derived columns */
static field pos(double x) { return (field){ F_NUMBER, NULL, x > 0 ? x : NAN }; }
static field boolean(bool b) { return (field){ F_BOOL, NULL, b }; }

static const char *backend_name(gpuws_backend_kind k)
{
    return k == GPUWS_BACKEND_CUDA ? "cuda" : k == GPUWS_BACKEND_OPENCL ? "opencl" : "cpu";
}

static field f_algorithm(const bench_result *r) { return str(r->w->algorithm); }
static field f_variant(const bench_result *r) { return str(r->w->variant); }
static field f_size(const bench_result *r) { return str(r->counts.size_label); }
static field f_size_class(const bench_result *r) { return str(bench_size_name(r->size)); }
static field f_backend(const bench_result *r) { return str(r->t ? backend_name(r->t->backend) : NULL); }
static field f_platform(const bench_result *r) { return str(r->t ? r->t->info.platform : NULL); }
static field f_device(const bench_result *r) { return str(r->t ? r->t->info.name : NULL); }
static field f_target(const bench_result *r) { return str(r->t ? r->t->label : NULL); }
static field f_end_to_end(const bench_result *r) { return boolean(r->w->end_to_end); }
static field f_status(const bench_result *r) { return str(r->ok ? "ok" : "FAILED"); }
static field f_error(const bench_result *r) { return str(r->ok ? NULL : r->error); }
static field f_median(const bench_result *r) { return r->ok ? num(r->median_ms) : num(NAN); }
static field f_min(const bench_result *r) { return r->ok ? num(r->min_ms) : num(NAN); }
static field f_repeats(const bench_result *r) { return num(r->repeats); }
static field f_bytes(const bench_result *r) { return num(r->counts.bytes); }
static field f_flops(const bench_result *r) { return num(r->counts.flops); }
static field f_gbs(const bench_result *r) { return r->ok ? num(r->gbs) : num(NAN); }
static field f_gflops(const bench_result *r) { return r->ok ? num(r->gflops) : num(NAN); }
static field f_intensity(const bench_result *r)
{
    return pos(r->counts.bytes > 0 ? r->counts.flops / r->counts.bytes : 0);
}
static field f_flop_dtype(const bench_result *r)
{
    return str(r->counts.flops > 0 ? bench_flop_index(r->w, &r->counts) ? "f64" : "f32" : NULL);
}
static field f_frac_bw(const bench_result *r) { return pos(r->frac_bw); }
static field f_frac_fma(const bench_result *r) { return pos(r->frac_fma); }
static field f_fraction(const bench_result *r) { return pos(r->fraction); }
static field f_bound(const bench_result *r) { return str(r->bound); }
static field f_speedup(const bench_result *r) { return pos(r->speedup); }
static field f_ocl_cuda(const bench_result *r) { return pos(r->ocl_cuda); }
static field f_batch(const bench_result *r) { return pos(r->ok ? r->batch_ms : 0); }
static field f_batch_calls(const bench_result *r) { return pos(r->batch_calls); }
static field f_batch_samples(const bench_result *r) { return pos(r->batch_samples); }
static field f_ocl_cuda_batch(const bench_result *r) { return pos(r->ocl_cuda_batch); }

static const struct {
    const char *name;
    field (*get)(const bench_result *);
} row_fields[] = {
    { "algorithm", f_algorithm },
    { "variant", f_variant },
    { "size", f_size },
    { "size_class", f_size_class },
    { "backend", f_backend },
    { "platform", f_platform },
    { "device", f_device },
    { "target", f_target },
    { "end_to_end", f_end_to_end },
    { "status", f_status },
    { "error", f_error },
    { "median_ms", f_median },
    { "min_ms", f_min },
    { "repeats", f_repeats },
    { "bytes", f_bytes },
    { "flops", f_flops },
    { "gb_per_s", f_gbs },
    { "gflop_per_s", f_gflops },
    { "flop_per_byte", f_intensity },
    { "flop_dtype", f_flop_dtype },
    { "fraction_of_copy_bandwidth", f_frac_bw },
    { "fraction_of_fma_peak", f_frac_fma },
    { "fraction_of_ceiling", f_fraction },
    { "bound", f_bound },
    { "speedup_vs_reference", f_speedup },
    { "opencl_over_cuda", f_ocl_cuda },
    { "back_to_back_ms", f_batch },
    { "back_to_back_calls", f_batch_calls },
    { "back_to_back_samples", f_batch_samples },
    { "opencl_over_cuda_back_to_back", f_ocl_cuda_batch },
};
#define NFIELDS (sizeof row_fields / sizeof row_fields[0])

static void put_json_field(FILE *f, field v)
{
    if (v.kind == F_STRING) json_put_string(f, v.s);
    else if (v.kind == F_BOOL) fputs(v.x != 0 ? "true" : "false", f);
    else json_put_number(f, v.x);
}

/* The members of one object, one per line. */
typedef struct {
    FILE *f;
    const char *indent;
    int n;
} obj_writer;

static void key(obj_writer *o, const char *k)
{
    fprintf(o->f, "%s%s", o->n++ ? ",\n" : "", o->indent);
    json_put_string(o->f, k);
    fputs(": ", o->f);
}
static void kv_str(obj_writer *o, const char *k, const char *v) { key(o, k), json_put_string(o->f, v); }
static void kv_num(obj_writer *o, const char *k, double v) { key(o, k), json_put_number(o->f, v); }
static void kv_pos(obj_writer *o, const char *k, double v) { key(o, k), json_put_number(o->f, v > 0 ? v : NAN); }
static void kv_bool(obj_writer *o, const char *k, bool v) { key(o, k), fputs(v ? "true" : "false", o->f); }

static void put_target(FILE *f, const bench_target *t)
{
    obj_writer o = { f, "      ", 0 };
    const gpuws_device_info *d = &t->info;
    kv_str(&o, "label", t->label);
    kv_str(&o, "short_label", t->short_label);
    kv_str(&o, "backend", backend_name(t->backend));
    kv_str(&o, "platform", d->platform);
    kv_str(&o, "device", d->name);
    kv_str(&o, "vendor", d->vendor);
    kv_str(&o, "driver_version", d->driver_version);
    kv_str(&o, "type", d->type == GPUWS_DEVICE_GPU ? "gpu" : d->type == GPUWS_DEVICE_CPU ? "cpu" : "other");
    kv_num(&o, "compute_units", d->compute_units);
    kv_num(&o, "global_mem_bytes", (double)d->global_mem_bytes);
    kv_bool(&o, "fp64", d->fp64);
    kv_pos(&o, "copy_gb_per_s", t->copy_gbs);
    kv_pos(&o, "fma_f32_gflop_per_s", t->fma_gflops[0]);
    kv_pos(&o, "fma_f64_gflop_per_s", t->fma_gflops[1]);
    kv_pos(&o, "ridge_f32_flop_per_byte", t->copy_gbs > 0 ? t->fma_gflops[0] / t->copy_gbs : 0);
    kv_pos(&o, "ridge_f64_flop_per_byte", t->copy_gbs > 0 ? t->fma_gflops[1] / t->copy_gbs : 0);
    kv_pos(&o, "timer_floor_us", t->timer_floor_us);
    kv_str(&o, "ceiling_error", t->ceiling_error[0] ? t->ceiling_error : NULL);
}

static void put_comparison(FILE *f, const bench_comparison *c)
{
    obj_writer o = { f, "      ", 0 };
    kv_str(&o, "algorithm", c->peer->algorithm);
    kv_str(&o, "variant", c->peer->variant);
    kv_str(&o, "size_class", c->peer->size_class);
    kv_str(&o, "peer_backend", c->peer->backend);
    kv_str(&o, "peer_device", c->peer->device);
    kv_str(&o, "peer_size", c->peer->size);
    kv_num(&o, "peer_ms", c->peer->median_ms);
    kv_str(&o, "gpuws_target", c->row->t ? c->row->t->label : NULL);
    kv_str(&o, "gpuws_device", c->row->t ? c->row->t->info.name : NULL);
    kv_str(&o, "gpuws_size", c->row->counts.size_label);
    kv_num(&o, "gpuws_ms", c->row->median_ms);
    kv_num(&o, "peer_over_gpuws", c->ratio);
    kv_bool(&o, "size_differs", c->size_differs);
}

/* "[\n    {...},\n    {...}\n  ]" or "[]" */
static void put_array(FILE *f, size_t n, void (*item)(FILE *, const bench_report *, size_t), const bench_report *r)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n    " : "\n    ", f);
        item(f, r, i);
    }
    fputs(n ? "\n  ]" : "]", f);
}

static void item_target(FILE *f, const bench_report *r, size_t i)
{
    fputs("{\n", f);
    put_target(f, &r->targets[i]);
    fputs("\n    }", f);
}

static void item_row(FILE *f, const bench_report *r, size_t i)
{
    fputc('{', f);
    for (size_t k = 0; k < NFIELDS; k++) {
        fprintf(f, "%s\"%s\": ", k ? ", " : "", row_fields[k].name);
        put_json_field(f, row_fields[k].get(&r->rows[i]));
    }
    fputc('}', f);
}

static void item_comparison(FILE *f, const bench_report *r, size_t i)
{
    fputs("{\n", f);
    put_comparison(f, &r->cmp[i]);
    fputs("\n    }", f);
}

void bench_write_json(const bench_report *r, FILE *f)
{
    obj_writer o = { f, "  ", 0 };
    fputs("{\n", f);
    kv_str(&o, "schema", "gpuws-bench/1");
    kv_str(&o, "date", r->date);
    kv_str(&o, "gpuws_version", r->version);
    kv_str(&o, "host", r->host);
    key(&o, "argv");
    fputc('[', f);
    for (int i = 0; i < r->argc; i++) {
        if (i) fputs(", ", f);
        json_put_string(f, r->argv[i]);
    }
    fputc(']', f);
    kv_str(&o, "mode", r->full ? "full" : "quick");
    kv_str(&o, "size_class", bench_size_name(r->size));
    kv_num(&o, "repeat", r->repeat);
    kv_num(&o, "cpu_repeat", r->cpu_repeat);
    kv_num(&o, "back_to_back", r->batch_calls);
    kv_pos(&o, "budget_s", r->budget_s);
    kv_str(&o, "method",
           "each result checked against the scalar reference before timing; one warm-up run; device "
           "events around each run; median and minimum of the timed runs; on GPU targets also back "
           "to back: back_to_back calls between two events, the median interval per call");
    key(&o, "targets");
    put_array(f, r->ntargets, item_target, r);
    key(&o, "rows");
    put_array(f, r->nrows, item_row, r);
    key(&o, "comparisons");
    put_array(f, r->ncmp, item_comparison, r);
    fputs("\n}\n", f);
}

static void put_csv_field(FILE *f, field v)
{
    if (v.kind == F_BOOL) {
        fputs(v.x != 0 ? "true" : "false", f);
    } else if (v.kind == F_NUMBER) {
        if (isfinite(v.x)) json_put_number(f, v.x); /* the same digits as the JSON */
    } else if (v.s) {
        if (strpbrk(v.s, ",\"\r\n")) { /* RFC 4180 quoting */
            fputc('"', f);
            for (const char *p = v.s; *p; p++) {
                if (*p == '"') fputc('"', f);
                fputc(*p, f);
            }
            fputc('"', f);
        } else {
            fputs(v.s, f);
        }
    }
}

void bench_write_csv(const bench_report *r, FILE *f)
{
    for (size_t k = 0; k < NFIELDS; k++) fprintf(f, "%s%s", k ? "," : "", row_fields[k].name);
    fputc('\n', f);
    for (size_t i = 0; i < r->nrows; i++) {
        for (size_t k = 0; k < NFIELDS; k++) {
            if (k) fputc(',', f);
            put_csv_field(f, row_fields[k].get(&r->rows[i]));
        }
        fputc('\n', f);
    }
}

int bench_write_file(const char *path, void (*writer)(const bench_report *, FILE *), const bench_report *r, char *err,
                     size_t errn)
{
    FILE *f = fopen(path, "wx"); /* a new file only: the remove below removes nothing else */
    if (!f) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        return -1;
    }
    writer(r, f);
    bool bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) bad = true, e = errno;
    if (bad) {
        snprintf(err, errn, "%s: %s", path, strerror(e));
        remove(path);
    }
    return bad ? -1 : 0;
}
