/* Growable strings and compiler-log reading, for the generated text of user programs (core/text.c). Never
 * installed. */
#ifndef GPUWS_CORE_TEXT_H
#define GPUWS_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* A growable NUL-terminated string (host memory through gpuws__malloc). Appends never fail visibly: an
 * allocation failure sets oom and later appends do nothing; check oom once at the end. */
typedef struct gpuws__strbuf {
    char *s;
    size_t len, cap;
    bool oom;
} gpuws__strbuf;
void gpuws__sb_add(gpuws__strbuf *b, const char *s, size_t n);
void gpuws__sb_puts(gpuws__strbuf *b, const char *s);
void gpuws__sb_printf(gpuws__strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the text over (caller frees with gpuws__free); the buffer is empty afterwards. NULL after oom. */
char *gpuws__sb_take(gpuws__strbuf *b);
void gpuws__sb_free(gpuws__strbuf *b);

/* The first error of a compiler log (else its first diagnostic) that names one of the files the generated source
 * names in its #line directives (the user's file, a header, a generator's part), as "file:line: message"; or the
 * log's first line; into out. */
void gpuws__first_diagnostic(const char *log, const char *source, char *out, size_t n);

#endif
