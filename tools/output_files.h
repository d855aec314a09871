/* The files a gpuws command writes (convolve -o, sources --catalog/--labels/--overlay, bench --json/--csv/--svg):
 * all written or none, and never by destroying what is not the command's to replace.
 *
 * A command names its inputs and its outputs, then plans before doing any work, so that a bad destination fails
 * at once with nothing computed and nothing written:
 *  - Each output name is resolved the way open(2) would: symlinks are followed, a dangling one too (the file is
 *    created at the link's target; the link stays). A directory is an error. A regular file, or a name that does
 *    not exist, is replaced by renaming a staged file from a private directory made next to it: an existing file
 *    keeps its permission bits (and its owner and group, when the command runs as root); a new one gets
 *    0666 & ~umask, as fopen gives. Anything else (a character or block device, a FIFO, a socket, a pipe or file
 *    behind a /proc/self/fd link such as /dev/stdout) is written into directly: staged in a private directory
 *    under $TMPDIR (or /tmp), then copied into it with write(2), every error reported (/dev/full: "No space left
 *    on device"). Nothing but a regular file the command replaces is ever renamed over, and nothing is unlinked
 *    but the command's own staging files.
 *  - Every output is compared with every input, and with every other output, as files: device and inode after
 *    following links (for a name that does not exist yet, its directory's device and inode and its own name).
 *    The same file named twice is refused (exit 2), however it is spelled (./in.fits, a symlink, a hard link).
 *    The same device or FIFO written twice (two outputs to /dev/null) is allowed.
 *
 * Then each writer creates the staging path output_files_stage gives it (a new regular file: writers create with
 * O_EXCL, or check the name is free, and never replace anything), and output_files_commit puts them all in place:
 * it opens every direct destination first, renames the staged files into place keeping a hard link of each file
 * it replaces, then copies into the direct destinations. When any step fails, the renames already done are undone
 * (the old files are back, new names removed): nothing is written, as far as the OS allows; bytes already written
 * into a device or FIFO cannot be taken back, which is why those come last. Staged files, backups and the private
 * directories are removed on every path; a process killed while writing leaves its private directory
 * (".gpuws-XXXXXX" next to the output, or "gpuws-XXXXXX" in the temporary directory) behind. */
#ifndef GPUWS_TOOLS_OUTPUT_FILES_H
#define GPUWS_TOOLS_OUTPUT_FILES_H

#include <stddef.h>

typedef struct output_files output_files;

/* An empty set (NULL when out of memory). */
output_files *output_files_create(void);
/* Removes every staging file, backup and private directory; after a failed commit, or none, nothing was written.
 * Accepts NULL. */
void output_files_destroy(output_files *o);

/* An input of the command (`path` is kept, not copied; NULL is skipped): no output may be the same file. 0, or
 * -1 when the set is full (OUTPUT_FILES_MAX). */
int output_files_input(output_files *o, const char *path);
/* An output named `path` on the command line by `option` ("-o", "--catalog", ...; for messages). Both are kept,
 * not copied. Returns its index (0, 1, ... in the order added), or -1 when the set is full. A NULL path (an option
 * not given) takes an index and is skipped, so that a command's table of outputs and the indices agree. */
int output_files_add(output_files *o, const char *path, const char *option);
enum { OUTPUT_FILES_MAX = 8 };

/* Resolves every output, checks it can be written (a private directory can be made where its staged file goes)
 * and compares it with the inputs and the other outputs. Returns 0 (ready), 1 (an output cannot be written: the
 * message in err) or 2 (one file named twice: the message names both); the command's exit code on failure.
 * Leaves nothing behind. */
int output_files_plan(output_files *o, char *err, size_t errlen);

/* The above in one call, for a command's table of inputs and outputs: a planned set, or NULL with the exit code
 * (1 or 2) in *code and the message in err. */
output_files *output_files_prepare(const char *const *inputs, size_t ninputs, const char *const *paths,
                                   const char *const *options, size_t noutputs, int *code, char *err, size_t errlen);

/* The path output i's writer must create, in a private directory made now. NULL with the reason in err when the
 * directory cannot be made. */
const char *output_files_stage(output_files *o, size_t i, char *err, size_t errlen);
/* Rewrites a writer's message about output i's staging path to name the file the user gave instead. */
void output_files_reword(const output_files *o, size_t i, char *msg, size_t n);
/* The same for a process that knows the staging path but not the set (an MPI rank that writes into rank 0's staged
 * file): every `staged` in msg (n bytes) becomes `name`. */
void output_files_reword_path(char *msg, size_t n, const char *staged, const char *name);
/* The name the user gave output i. */
const char *output_files_name(const output_files *o, size_t i);

/* Puts every staged output in place, all or none (see above). 0, or 1 with the reason in err. Every output given
 * must have been staged and written. */
int output_files_commit(output_files *o, char *err, size_t errlen);

#endif
