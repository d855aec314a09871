/* Core's side of user programs: reading the user's source (core/program_parse.c) and the programs and
 * generators built from it (core/program.c, core/generators.c). */
#ifndef GPUWS_PROGRAM_INTERNAL_H
#define GPUWS_PROGRAM_INTERNAL_H

#include "alloc.h"
#include "backend.h"
#include "errors.h"
#include "objects.h"
#include "text.h"
#include "util.h"
#include "gpuws/program.h"

/* The source with every #include of an in-memory header replaced by the header's text, between #line
 * directives so that diagnostics name the header and the user's file with their own line numbers. An #include of
 * a name not among the headers is GPUWS_ERR_BUILD ("file:line: ..."), except GPUWS__EDITOR_HEADER, which becomes a
 * comment. *out is gpuws__malloc'd. */
/* include/gpuws/kernel_dialect.h declares the dialect for editors. The backend's own dialect is already in front of
 * the source, so gpuws__program_expand drops an #include of it (unless the caller gave a header of that name). */
#define GPUWS__EDITOR_HEADER "gpuws/kernel_dialect.h"
/* If the line [line, line + len) is an #include directive ("name" or <name>), its name's start and length. */
bool gpuws__include_name(const char *line, size_t len, const char **name, size_t *nlen);
gpuws_status gpuws__program_expand(const char *source, const char *file, const gpuws_program_header *headers,
                                   size_t nheaders, char **out);

/* Reads every GW_KERNEL definition of an expanded source: its name, its parameters and their kinds (scalar types
 * are resolved through object-like macros: the defines given, and the #defines of the source). A parameter the
 * launch API cannot pass is GPUWS_ERR_BUILD naming file:line. */
gpuws_status gpuws__program_parse(const char *text, const char *file, const char *const *defines, size_t ndefines,
                                  gpuws__kernel_decl **decls, size_t *ndecls);
void gpuws__kernel_decls_free(gpuws__kernel_decl *decls, size_t n);

/* A program built from generated source, kept by the context (generators' kernels and reductions). */
gpuws_status gpuws__program_create_internal(gpuws_context *ctx, const char *source, const char *file_name,
                                            gpuws_program **out);
/* Destroys a program whose handle core holds (leftovers at context destroy, generators). */
void gpuws__program_release(gpuws_program *p);
/* Destroys the context's generated kernels and reductions (core/generators.c). */
void gpuws__generators_release(gpuws_context *ctx);
/* Called by gpuws_context_destroy: destroys the context's generators and programs. */
void gpuws__context_release_programs(gpuws_context *ctx);

#endif
