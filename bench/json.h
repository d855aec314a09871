/* Just enough JSON for the bench: writing strings and numbers, and reading a document back (--compare).
 * No dependency; strict RFC 8259 syntax. */
#ifndef GPUWS_BENCH_JSON_H
#define GPUWS_BENCH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* "text" with every character JSON requires escaped (quotes, backslash, control characters); NULL → null. */
void json_put_string(FILE *f, const char *s);
/* An integral value exactly, another finite number with 9 significant digits; NaN and infinities → null (JSON has no such numbers). */
void json_put_number(FILE *f, double x);

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    bool boolean;
    double number;
    char *string; /* JSON_STRING: UTF-8, NUL-terminated (an embedded \u0000 ends it early) */
    size_t n;     /* JSON_ARRAY / JSON_OBJECT: items */
    struct json_value *items;
    char **keys; /* JSON_OBJECT: keys[i] names items[i] */
} json_value;

/* Parses a whole document. 0 on success (free with json_free); -1 with "line L: why" in err. */
int json_parse(const char *text, json_value *out, char *err, size_t errn);
void json_free(json_value *v);
/* Reads and parses the whole file path (free with json_free). 0, or -1 with "path: why" in err ("path: not JSON:
 * line L: ..." for a syntax error). */
int bench_read_json(const char *path, json_value *doc, char *err, size_t errn);
/* The member of an object (the first of that name), or NULL. */
const json_value *json_get(const json_value *obj, const char *key);
/* The member's string / number, or def when absent or of another type. */
const char *json_get_string(const json_value *obj, const char *key, const char *def);
double json_get_number(const json_value *obj, const char *key, double def);

#endif
