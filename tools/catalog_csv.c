#include "catalog_csv.h"
#include "number_text.h"
#include "parallel.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    double flux;
    int64_t id;
    size_t index;
} key;

static int by_flux(const void *a, const void *b)
{
    const key *p = a, *q = b;
    if (p->flux != q->flux) return p->flux > q->flux ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

size_t *catalog_order_by_flux(const gpuws_source *sources, size_t n)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!order || !keys) {
        free(order);
        free(keys);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) keys[i] = (key){ sources[i].flux, sources[i].id, i };
    qsort(keys, n, sizeof *keys, by_flux);
    for (size_t i = 0; i < n; i++) order[i] = keys[i].index;
    free(keys);
    return order;
}

/* A growing piece of the CSV's text, formatted by one thread. */
typedef struct {
    char *s;
    size_t len, cap;
    int failed; /* out of memory */
} text;

/* Room for this text of k bytes and more: the rows that follow are about as long. */
static void grow(text *t, size_t k)
{
    const size_t cap = 2 * (t->cap + k) + 4096;
    char *m = realloc(t->s, cap);
    if (!m) t->failed = 1;
    else t->s = m, t->cap = cap;
}

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    for (int round = 0; !t->failed && round < 2; round++) {
        va_list ap;
        va_start(ap, fmt);
        const int k = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) t->failed = 1;
        else if (t->s && t->len + (size_t)k < t->cap) return (void)(t->len += (size_t)k);
        else grow(t, (size_t)k);
    }
}

static void put_char(text *t, char c)
{
    if (t->len + 1 < t->cap) t->s[t->len++] = c;
    else put(t, "%c", c);
}

/* printf's text of v (number_text: printf's, faster), in the column's style. */
static void put_number(text *t, double v, int decimals)
{
    for (int round = 0; !t->failed && round < 2; round++) {
        const size_t room = t->s ? t->cap - t->len : 0;
        const int k = number_text(t->s ? t->s + t->len : NULL, room, v, decimals);
        if (k < 0) t->failed = 1;
        else if ((size_t)k < room) return (void)(t->len += (size_t)k);
        else grow(t, (size_t)k);
    }
}

typedef struct {
    const catalog_table *t;
    text *parts;
} rows_job;

static void format_rows(void *user, size_t part, size_t lo, size_t hi)
{
    const rows_job *j = user;
    const catalog_table *t = j->t;
    text *out = &j->parts[part];
    /* room for about the chunk's text at once (most numbers take fewer than 24 characters): grown from nothing, the
     * chunks' reallocations moved their text to fresh pages again and again, the threads' page faults meanwhile
     * waiting on the address space */
    if (hi > lo && !(out->s = malloc(out->cap = (hi - lo) * t->ncols * 24 + 4096))) out->cap = 0;
    for (size_t r = lo; r < hi && !out->failed; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            if (c) put_char(out, ',');
            put_number(out, t->v[r * t->ncols + c], t->cols[c].decimals);
        }
        put_char(out, '\n');
    }
}

/* Closes f; on a write error anywhere, or bad, removes path and says why. */
static int finish(FILE *f, int bad, const char *path, char *err, size_t errlen)
{
    const int e = errno;
    if (fclose(f) != 0 || bad) {
        snprintf(err, errlen, "%s: writing failed: %s", path, strerror(bad ? e : errno));
        unlink(path);
        return -1;
    }
    return 0;
}

/* The rows are formatted on every core (a large catalogue is millions of numbers), in chunks of rows that the
 * threads take as they come, each into a text of its own, and written in order. Four chunks a core: with one range a
 * thread, the slowest thread's range (on a busy host some threads run at a fraction of the others' speed) held up
 * the whole step. */
int catalog_table_csv(const char *path, const catalog_table *t, int units, char *err, size_t errlen)
{
    const size_t parts = tool_parts(t->nrows, 256), chunks = t->nrows / 256 < 4 * parts ? parts : 4 * parts;
    text *texts = calloc(chunks, sizeof *texts);
    rows_job job = { t, texts };
    if (texts) tool_parallel_chunks(t->nrows, chunks, format_rows, &job);
    int failed = !texts;
    for (size_t k = 0; texts && k < chunks; k++) failed |= texts[k].failed;
    FILE *f = failed ? NULL : fopen(path, "wx"); /* a new file only: the unlink in finish removes nothing else */
    if (!f) {
        for (size_t k = 0; texts && k < chunks; k++) free(texts[k].s);
        free(texts);
        snprintf(err, errlen, "%s: %s%s", path,
                 failed ? "out of memory for the catalogue's text" : "cannot create: ", failed ? "" : strerror(errno));
        return -1;
    }
    for (size_t c = 0; c < t->ncols; c++)
        fprintf(f, "%s%s%s%s%s", c ? "," : "", t->cols[c].name, units && *t->cols[c].unit ? "[" : "",
                units ? t->cols[c].unit : "", units && *t->cols[c].unit ? "]" : "");
    fputc('\n', f);
    for (size_t k = 0; k < chunks; k++) {
        if (texts[k].len) fwrite(texts[k].s, 1, texts[k].len, f);
        free(texts[k].s);
    }
    free(texts);
    return finish(f, ferror(f), path, err, errlen);
}

/* The great-circle distance (degrees) and position angle (degrees from the latitude axis towards increasing
 * longitude) of (l2, b2) seen from (l1, b1), all in degrees. */
static void separation(double l1, double b1, double l2, double b2, double *dist, double *pa)
{
    const double d2r = M_PI / 180, dl = (l2 - l1) * d2r;
    const double c1 = cos(b1 * d2r), s1 = sin(b1 * d2r), c2 = cos(b2 * d2r), s2 = sin(b2 * d2r);
    const double x = c1 * s2 - s1 * c2 * cos(dl), y = c2 * sin(dl), z = s1 * s2 + c1 * c2 * cos(dl);
    *dist = atan2(hypot(x, y), z) / d2r;
    *pa = atan2(y, x) / d2r;
}

int catalog_regions_write(const char *path, const catalog_shape *s, size_t n, catalog_world_fn world, const void *wcs,
                          const char *frame, const char *title, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wx");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    const int sky = world && frame;
    fprintf(f, "# Region file format: DS9 version 4.1\n# %s\n", title);
    if (sky)
        fprintf(f, "# centres in degrees (%s), semi-axes in arcseconds; angles as DS9 measures them in this frame\n",
                frame);
    else
        fprintf(f, "# image coordinates: DS9's pixels are 1-based, so these are the catalogue's 0-based x, y plus 1\n");
    fprintf(f, "global color=green width=1\n%s\n", sky ? frame : "image");
    for (size_t k = 0; k < n; k++) {
        const catalog_shape *e = &s[k];
        const double ca = cos(e->theta), sa = sin(e->theta);
        if (!sky) {
            if (e->a == e->b) fprintf(f, "circle(%.4f,%.4f,%.4f)\n", e->x + 1, e->y + 1, e->a);
            else
                fprintf(f, "ellipse(%.4f,%.4f,%.4f,%.4f,%.4f)\n", e->x + 1, e->y + 1, e->a, e->b,
                        fmod(e->theta * 180 / M_PI + 360, 180));
            continue;
        }
        /* the ellipse's ends on the sky: its axes' lengths and the major axis's position angle */
        double l0, b0, l1, b1, l2, b2, da, db, pa, pb;
        if (world(wcs, e->x, e->y, &l0, &b0) || world(wcs, e->x + e->a * ca, e->y + e->a * sa, &l1, &b1) ||
            world(wcs, e->x - e->b * sa, e->y + e->b * ca, &l2, &b2)) {
            fprintf(f, "# object %zu: no sky position at pixel (%.2f, %.2f)\n", k + 1, e->x, e->y);
            continue;
        }
        separation(l0, b0, l1, b1, &da, &pa);
        separation(l0, b0, l2, b2, &db, &pb);
        /* DS9's sky angle runs from the longitude axis of a north-up, east-left view, counter-clockwise: PA + 90 */
        if (e->a == e->b) fprintf(f, "circle(%.8f,%.8f,%.4f\")\n", l0, b0, da * 3600);
        else
            fprintf(f, "ellipse(%.8f,%.8f,%.4f\",%.4f\",%.4f)\n", l0, b0, da * 3600, db * 3600,
                    fmod(pa + 90 + 720, 180));
    }
    return finish(f, ferror(f), path, err, errlen);
}
