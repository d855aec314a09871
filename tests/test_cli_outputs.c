/* What the gpuws commands write never destroys what is not theirs (issue 22, items 1-3; tools/output_files.h).
 * Every command that writes files (convolve -o, label -o, sources --catalog / --labels / --overlay, bench --json; the
 * built binary GPUWS_CLI on the CPU backend, in a fresh directory, umask 022, TMPDIR inside that directory) onto every
 * kind of destination:
 *  - a character device is written into and stays a device: a null device (exit 0), a full device (exit 1, "No
 *    space left on device"); a FIFO gets the bytes; a symlink stays a link and its target is replaced (keeping its
 *    permission bits), a dangling one creates its target (0666 & ~umask); a regular file is replaced keeping its
 *    permission bits;
 *  - a directory, or an input named another way (./in.fits, a symlink, a hard link), is refused before any work
 *    (exit 1 and 2), nothing written, the input unchanged byte for byte;
 * and with several outputs: two names for one file are refused (exit 2), one device twice is fine, a destination
 * that cannot be written leaves the others as they were (a directory: before any work; a full device: after the
 * other outputs were renamed into place, which are then rolled back: the old file back, a new name removed).
 * No run leaves a staging file or directory behind. The devices are made with mknod inside the test's directory
 * (makedev(1, 3) is the null device, (1, 7) the full one); the tests skip only when mknod is not permitted. */
#include "support.h"
#include "fits_io.h"
#include "png_overlay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a directory per test, and the command run in it -------------------------------------------------------- */

typedef struct {
    char dir[256];
    char *log; /* the command's stdout and stderr */
    int status;
    char *fifo; /* bytes read from the FIFO the command wrote (when one was given) */
    size_t fifo_len;
} fixture;

static const char *at(const fixture *f, const char *name)
{
    static char buf[8][600];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", f->dir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    FILE *fp = fopen(path, "w");
    cr_assert(fp, "cannot write %s", path);
    fputs(text, fp);
    fclose(fp);
    cr_assert_eq(chmod(path, mode), 0);
}

/* The whole file, NUL-terminated after *len bytes (malloc'd); NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    for (size_t r; b && (r = fread(b + n, 1, cap - n, fp)) > 0;)
        if ((n += r) == cap) b = realloc(b, (cap *= 2) + 1);
    fclose(fp);
    cr_assert(b);
    b[n] = 0;
    if (len) *len = n;
    return b;
}

/* The inputs every command reads: an image with one source on faint noise, a 3 x 3 kernel, a peers file. */
static void setup(fixture *f)
{
    const char *cli = getenv("GPUWS_CLI");
    if (!cli || !*cli) cr_skip_test("GPUWS_CLI is not set (run through ctest)");
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    memset(f, 0, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/gpuws-cli-outputs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(f->dir), "mkdtemp failed");
    cr_assert_eq(mkdir(at(f, "tmp"), 0700), 0);
    cr_assert_eq(mkdir(at(f, "sub"), 0755), 0);
    float img[64 * 48], k[9] = { 0.1f, 0.2f, 0.1f, 0.2f, 0.4f, 0.2f, 0.1f, 0.2f, 0.1f };
    test_fill_uniform_f32(img, 64 * 48, 5, -1e-3, 1e-3);
    img[20 * 64 + 30] = img[20 * 64 + 31] = 1.0f;
    char err[600];
    cr_assert_eq(fits_write_image(at(f, "sky.fits"), FITS_F32, img, 64, 48, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fits_write_image(at(f, "k.fits"), FITS_F32, k, 3, 3, err, sizeof err), 0, "%s", err);
    write_text(at(f, "peers.json"), "{\"schema\": \"gpuws-bench/1\", \"rows\": []}\n", 0644);
}

static void teardown(fixture *f)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.log'", f->dir, f->dir);
    cr_assert_eq(system(cmd), 0);
    free(f->log);
    free(f->fifo);
}

/* Runs `gpuws argv...` (NULL-terminated) in f->dir. With `fifo` (a FIFO in f->dir), reads it while the command runs,
 * into f->fifo: the reader is there before the command starts, as a shell's `cat fifo &` would be. */
static void run(fixture *f, const char *fifo, const char *const *argv)
{
    const char *args[32] = { getenv("GPUWS_CLI") };
    int n = 1;
    for (int i = 0; argv[i] && n < 31; i++) args[n++] = argv[i];
    args[n] = NULL;
    char log[300], tmpdir[300];
    snprintf(log, sizeof log, "%s.log", f->dir);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", f->dir);
    const int rd = fifo ? open(at(f, fifo), O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    cr_assert(!fifo || rd >= 0, "cannot open the FIFO for reading: %s", strerror(errno));
    fflush(NULL);
    const pid_t pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        const int o = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 || chdir(f->dir) != 0) _exit(127);
        umask(022);
        setenv("TMPDIR", tmpdir, 1);
        setenv("GPUWS_BACKEND", "cpu", 1);
        unsetenv("GPUWS_DEVICE");
        unsetenv("GPUWS_OPENCL_PLATFORM");
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    size_t cap = 1 << 16;
    free(f->fifo);
    f->fifo = fifo ? malloc(cap + 1) : NULL;
    f->fifo_len = 0;
    int st = 0;
    for (bool done = false;;) { /* until the command has exited and the FIFO is drained */
        if (!done && waitpid(pid, &st, fifo ? WNOHANG : 0) == pid) done = true;
        if (!fifo) break;
        const ssize_t r = read(rd, f->fifo + f->fifo_len, cap - f->fifo_len);
        if (r > 0 && (f->fifo_len += (size_t)r) == cap) f->fifo = realloc(f->fifo, (cap *= 2) + 1);
        if (r <= 0 && done) break; /* no writer left, or nothing more to read */
        if (r <= 0) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    if (fifo) close(rd), f->fifo[f->fifo_len] = 0;
    cr_assert(WIFEXITED(st), "gpuws died (signal %d)", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    f->status = WEXITSTATUS(st);
    free(f->log);
    f->log = slurp(log, NULL);
    cr_assert(f->log);
}

/* Nothing of the commands' staging is left: no ".gpuws-*" next to any output, the temporary directory empty. */
static void assert_no_leftovers(const fixture *f, const char *row)
{
    static const char *const dirs[] = { ".", "sub", "out", "tmp" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        DIR *d = opendir(at(f, dirs[i]));
        if (!d) continue;
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            cr_assert(strcmp(dirs[i], "tmp") && strncmp(e->d_name, ".gpuws-", 7), "%s: left behind: %s/%s\n%s", row,
                      dirs[i], e->d_name, f->log);
        }
        closedir(d);
    }
}

static void assert_status(const fixture *f, const char *row, int code, const char *message)
{
    cr_assert_eq(f->status, code, "%s: exit %d, wanted %d:\n%s", row, f->status, code, f->log);
    cr_assert(!message || strstr(f->log, message), "%s: the output does not say '%s':\n%s", row, message, f->log);
}

/* `path` is a character device (major, minor). */
static void assert_device(const char *path, unsigned major_, unsigned minor_, const char *row)
{
    struct stat s;
    cr_assert_eq(lstat(path, &s), 0, "%s: %s is gone", row, path);
    cr_assert(S_ISCHR(s.st_mode) && s.st_rdev == makedev(major_, minor_), "%s: %s is no longer the device (%d, %d)",
              row, path, major_, minor_);
}

/* `path` holds exactly `text`, with permission bits `mode`. */
static void assert_file(const char *path, const char *text, mode_t mode, const char *row)
{
    struct stat s;
    cr_assert(lstat(path, &s) == 0 && S_ISREG(s.st_mode), "%s: %s is not a regular file", row, path);
    char *got = slurp(path, NULL);
    cr_assert_str_eq(got, text, "%s: %s was changed", row, path);
    free(got);
    cr_assert_eq(s.st_mode & 07777, mode, "%s: %s has mode %o, not %o", row, path, s.st_mode & 07777, mode);
}

static bool make_device(const char *path, unsigned minor_)
{
    if (mknod(path, S_IFCHR | 0666, makedev(1, minor_)) == 0) return true;
    cr_assert_eq(errno, EPERM, "mknod %s: %s", path, strerror(errno));
    return false;
}

/* ---- one output of each command onto each kind of destination --------------------------------------------------- */

typedef struct {
    const char *name;
    const char *argv[20]; /* "@" is the destination */
    const char *input;    /* an input of the command: no output may be it */
    const char *magic;    /* what the output starts with */
    size_t magic_len;
    const char *work; /* printed once the command has begun its work: absent when refused before */
} command;

#define SOURCES "sources", "sky.fits"
#define BENCH                                                                                                          \
    "bench", "--backends", "cpu", "--algorithms", "vector_add", "--size", "small", "--no-ceilings", "--cpu-repeat",    \
        "1", "--back-to-back", "0"

static const command commands[] = {
    { "convolve -o", { "convolve", "sky.fits", "k.fits", "-o", "@" }, "sky.fits", "SIMPLE  =", 9, " -> " },
    { "label -o", { "label", "sky.fits", "-o", "@" }, "sky.fits", "SIMPLE  =", 9, " image, foreground: " },
    { "sources --catalog", { SOURCES, "--catalog", "@" }, "sky.fits", "id,x[pix],y[pix],", 17, "device: " },
    { "sources --labels", { SOURCES, "--labels", "@" }, "sky.fits", "SIMPLE  =", 9, "device: " },
    { "sources --overlay", { SOURCES, "--overlay", "@" }, "sky.fits", "\x89PNG\r\n\x1a\n", 8, "device: " },
    { "sources --background", { SOURCES, "--background", "@" }, "sky.fits", "SIMPLE  =", 9, "device: " },
    { "sources --rms", { SOURCES, "--rms", "@" }, "sky.fits", "SIMPLE  =", 9, "device: " },
    { "sources --fits-catalog", { SOURCES, "--fits-catalog", "@" }, "sky.fits", "SIMPLE  =", 9, "device: " },
    { "sources --regions",
      { SOURCES, "--regions", "@" },
      "sky.fits",
      "# Region file format: DS9 version 4.1\n",
      38,
      "device: " },
    { "bench --json",
      { BENCH, "--compare", "peers.json", "--json", "@" },
      "peers.json",
      "{\n  \"schema\": \"gpuws-bench/1\"",
      28,
      "[1/1]" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

typedef enum {
    NULL_DEVICE,
    FULL_DEVICE,
    FIFO,
    LINK_TO_FILE,
    DANGLING_LINK,
    DIRECTORY,
    INPUT_DOT_SLASH,
    INPUT_SYMLINK,
    INPUT_HARD_LINK,
    REGULAR_FILE,
    N_DESTINATIONS
} destination;
static const char *const destination_names[N_DESTINATIONS] = { "a null device",
                                                               "a full device",
                                                               "a FIFO with a reader",
                                                               "a symlink to a regular file",
                                                               "a dangling symlink",
                                                               "a directory",
                                                               "the input as ./name",
                                                               "the input through a symlink",
                                                               "the input through a hard link",
                                                               "a regular file" };

/* Runs c with its output onto destination d made in f->dir, and checks what must hold. */
static void onto(fixture *f, const command *c, destination d)
{
    char row[200], dest[300] = "dest";
    snprintf(row, sizeof row, "%s onto %s", c->name, destination_names[d]);
    if (strstr(c->name, "overlay") && !png_overlay_available()) cr_skip_test("gpuws was built without libpng");
    size_t in_len = 0;
    char *in_before = slurp(at(f, c->input), &in_len);
    switch (d) {
    case NULL_DEVICE:
    case FULL_DEVICE:
        if (!make_device(at(f, "dest"), d == NULL_DEVICE ? 3 : 7)) cr_skip_test("mknod is not permitted here (EPERM)");
        break;
    case FIFO: cr_assert_eq(mkfifo(at(f, "dest"), 0644), 0); break;
    case LINK_TO_FILE:
        write_text(at(f, "sub/target"), "old\n", 0640);
        cr_assert_eq(symlink("sub/target", at(f, "dest")), 0);
        break;
    case DANGLING_LINK: cr_assert_eq(symlink("sub/new-target", at(f, "dest")), 0); break;
    case DIRECTORY: cr_assert_eq(mkdir(at(f, "dest"), 0755), 0); break;
    case INPUT_DOT_SLASH: snprintf(dest, sizeof dest, "./%s", c->input); break;
    case INPUT_SYMLINK: cr_assert_eq(symlink(c->input, at(f, "dest")), 0); break;
    case INPUT_HARD_LINK: cr_assert_eq(link(at(f, c->input), at(f, "dest")), 0); break;
    case REGULAR_FILE: write_text(at(f, "dest"), "old\n", 0640); break;
    case N_DESTINATIONS: break;
    }
    const char *argv[20] = { NULL };
    for (int i = 0; c->argv[i]; i++) argv[i] = strcmp(c->argv[i], "@") ? c->argv[i] : dest;
    run(f, d == FIFO ? "dest" : NULL, argv);

    const bool refused = d == DIRECTORY || d == INPUT_DOT_SLASH || d == INPUT_SYMLINK || d == INPUT_HARD_LINK;
    const char *written = d == LINK_TO_FILE    ? "sub/target"
                          : d == DANGLING_LINK ? "sub/new-target"
                          : d == REGULAR_FILE  ? "dest"
                                               : NULL;
    switch (d) {
    case NULL_DEVICE: assert_status(f, row, 0, NULL), assert_device(at(f, "dest"), 1, 3, row); break;
    case FULL_DEVICE:
        assert_status(f, row, 1, "No space left on device");
        assert_device(at(f, "dest"), 1, 7, row);
        break;
    case FIFO:
        assert_status(f, row, 0, NULL);
        cr_assert(f->fifo_len > c->magic_len && !memcmp(f->fifo, c->magic, c->magic_len),
                  "%s: the reader got %zu bytes, not the output", row, f->fifo_len);
        break;
    case DIRECTORY: assert_status(f, row, 1, "dest: is a directory"); break;
    case INPUT_DOT_SLASH:
    case INPUT_SYMLINK:
    case INPUT_HARD_LINK: assert_status(f, row, 2, "is the input"); break;
    default: assert_status(f, row, 0, NULL); break;
    }
    if (refused) cr_assert(!strstr(f->log, c->work), "%s: refused only after the work:\n%s", row, f->log);
    if (written) {
        size_t len = 0;
        char *got = slurp(at(f, written), &len);
        struct stat s;
        cr_assert(got && len > c->magic_len && !memcmp(got, c->magic, c->magic_len), "%s: %s does not hold the output",
                  row, written);
        free(got);
        cr_assert_eq(stat(at(f, written), &s), 0);
        const mode_t want = d == DANGLING_LINK ? 0644 : 0640; /* new: 0666 & ~022; else kept */
        cr_assert_eq(s.st_mode & 07777, want, "%s: %s has mode %o, not %o", row, written, s.st_mode & 07777, want);
    }
    struct stat s;
    if (d == LINK_TO_FILE || d == DANGLING_LINK || d == INPUT_SYMLINK)
        cr_assert(lstat(at(f, "dest"), &s) == 0 && S_ISLNK(s.st_mode), "%s: the symlink was replaced", row);
    if (d == DIRECTORY)
        cr_assert(lstat(at(f, "dest"), &s) == 0 && S_ISDIR(s.st_mode), "%s: the directory is gone", row);
    if (d == FIFO) cr_assert(lstat(at(f, "dest"), &s) == 0 && S_ISFIFO(s.st_mode), "%s: the FIFO was replaced", row);
    size_t in_len_after = 0;
    char *in_after = slurp(at(f, c->input), &in_len_after);
    cr_assert(in_after && in_len_after == in_len && !memcmp(in_before, in_after, in_len), "%s: the input %s changed",
              row, c->input);
    free(in_before);
    free(in_after);
    assert_no_leftovers(f, row);
}

ParameterizedTestParameters(cli_outputs, onto)
{
    static int idx[N_COMMANDS * N_DESTINATIONS];
    for (size_t i = 0; i < N_COMMANDS * N_DESTINATIONS; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_COMMANDS *N_DESTINATIONS);
}

ParameterizedTest(int *i, cli_outputs, onto)
{
    fixture f;
    setup(&f);
    onto(&f, &commands[*i / N_DESTINATIONS], (destination)(*i % N_DESTINATIONS));
    teardown(&f);
}

/* ---- several outputs, and convolve's second input ---------------------------------------------------------- */

/* Each row runs in a fresh directory holding, besides the inputs: c.csv and r.json ("old\n", mode 0640), c-link (a
 * symlink to c.csv), c-hard (a hard link to it), out/dir (a directory), null and full (the devices). After every
 * row, whatever its exit: the inputs are unchanged byte for byte; c.csv and r.json are the same files (inode,
 * contents, mode); the devices are devices, c-link a link; nothing of the staging is left. */
typedef struct {
    const char *name;
    const char *argv[24];
    int exit_code;
    const char *message; /* in the output */
    const char *work;    /* not in the output: refused before any work */
    const char *absent;  /* a name that must not exist afterwards */
} several_case;

static const several_case several_cases[] = {
    { "two outputs, ./name",
      { SOURCES, "--catalog", "new.csv", "--labels", "./new.csv" },
      2,
      "are the same file",
      "device: ",
      "new.csv" },
    { "two outputs, dir/../name",
      { SOURCES, "--catalog", "new.csv", "--overlay", "sub/../new.csv" },
      2,
      "are the same file",
      "device: ",
      "new.csv" },
    { "two outputs, a symlink",
      { SOURCES, "--labels", "c-link", "--catalog", "c.csv" },
      2,
      "are the same file",
      "device: ",
      NULL },
    { "two outputs, a hard link",
      { SOURCES, "--catalog", "c.csv", "--labels", "c-hard" },
      2,
      "are the same file",
      "device: ",
      NULL },
    { "two reports, ./name",
      { BENCH, "--json", "new.json", "--csv", "./new.json" },
      2,
      "are the same file",
      "[1/1]",
      "new.json" },
    { "two reports, a symlink",
      { BENCH, "--json", "c.csv", "--svg", "c-link" },
      2,
      "are the same file",
      "[1/1]",
      NULL },
    { "convolve -o the kernel",
      { "convolve", "sky.fits", "k.fits", "-o", "./k.fits" },
      2,
      "-o ./k.fits is the input k.fits",
      " -> ",
      NULL },
    /* one device written twice is fine, however it is spelled */
    { "one device twice", { SOURCES, "--catalog", "null", "--labels", "null" }, 0, NULL, NULL, NULL },
    { "one device twice, two spellings", { SOURCES, "--catalog", "null", "--labels", "./null" }, 0, NULL, NULL, NULL },
    /* a directory among the outputs: refused before any work, the other outputs as they were */
    { "a directory and a new name",
      { SOURCES, "--catalog", "out/new.csv", "--labels", "out/dir" },
      1,
      "out/dir: is a directory",
      "device: ",
      "out/new.csv" },
    { "a directory and an old file",
      { SOURCES, "--catalog", "c.csv", "--labels", "out/dir" },
      1,
      "out/dir: is a directory",
      "device: ",
      NULL },
    { "a report onto a directory",
      { BENCH, "--json", "r.json", "--svg", "out/dir" },
      1,
      "out/dir: is a directory",
      "[1/1]",
      NULL },
    /* a full device: it fails last, after the regular outputs were renamed into place, which are rolled back */
    { "a full device and an old file",
      { SOURCES, "--catalog", "c.csv", "--labels", "full" },
      1,
      "full: writing failed: No space left on device",
      NULL,
      NULL },
    { "a full device and a new name",
      { SOURCES, "--catalog", "sub/new.csv", "--labels", "full" },
      1,
      "No space left on device",
      NULL,
      "sub/new.csv" },
    { "a report onto a full device",
      { BENCH, "--json", "r.json", "--svg", "sub/new.svg", "--csv", "full" },
      1,
      "No space left on device",
      NULL,
      "sub/new.svg" },
};
#define N_SEVERAL (sizeof several_cases / sizeof several_cases[0])

ParameterizedTestParameters(cli_outputs, several)
{
    static int idx[N_SEVERAL];
    for (size_t i = 0; i < N_SEVERAL; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_SEVERAL);
}

ParameterizedTest(int *i, cli_outputs, several)
{
    const several_case *c = &several_cases[*i];
    fixture f;
    setup(&f);
    static const char *const inputs[] = { "sky.fits", "k.fits", "peers.json" }, *const old[] = { "c.csv", "r.json" };
    char *in_before[3];
    size_t in_len[3];
    struct stat old_before[2], s;
    if (!make_device(at(&f, "null"), 3) || !make_device(at(&f, "full"), 7))
        cr_skip_test("mknod is not permitted here (EPERM)");
    for (size_t k = 0; k < 2; k++) {
        write_text(at(&f, old[k]), "old\n", 0640);
        cr_assert_eq(stat(at(&f, old[k]), &old_before[k]), 0);
    }
    cr_assert(symlink("c.csv", at(&f, "c-link")) == 0 && link(at(&f, "c.csv"), at(&f, "c-hard")) == 0);
    cr_assert(mkdir(at(&f, "out"), 0755) == 0 && mkdir(at(&f, "out/dir"), 0755) == 0);
    for (size_t k = 0; k < 3; k++) in_before[k] = slurp(at(&f, inputs[k]), &in_len[k]);

    run(&f, NULL, c->argv);
    assert_status(&f, c->name, c->exit_code, c->message);
    cr_assert(!c->work || !strstr(f.log, c->work), "%s: refused only after the work:\n%s", c->name, f.log);
    cr_assert(!c->absent || lstat(at(&f, c->absent), &s) != 0, "%s: %s was written", c->name, c->absent);
    for (size_t k = 0; k < 3; k++) {
        size_t len = 0;
        char *after = slurp(at(&f, inputs[k]), &len);
        cr_assert(len == in_len[k] && !memcmp(after, in_before[k], len), "%s: the input %s changed", c->name,
                  inputs[k]);
        free(after);
        free(in_before[k]);
    }
    for (size_t k = 0; k < 2; k++) {
        assert_file(at(&f, old[k]), "old\n", 0640, c->name);
        cr_assert(stat(at(&f, old[k]), &s) == 0 && s.st_ino == old_before[k].st_ino, "%s: %s is another file", c->name,
                  old[k]);
    }
    assert_device(at(&f, "null"), 1, 3, c->name);
    assert_device(at(&f, "full"), 1, 7, c->name);
    cr_assert(lstat(at(&f, "c-link"), &s) == 0 && S_ISLNK(s.st_mode), "%s: the symlink was replaced", c->name);
    assert_no_leftovers(&f, c->name);
    teardown(&f);
}

/* A FITS image that the system cuts short (here at a file size limit between the input's pixels, which the reader
 * holds in shared memory, and the output's header and pixels; the limit's signal ignored, as a shell's `trap ''
 * XFSZ` does) is a failure: cfitsio does not see the short write, so the writer checks the file's size. Each command
 * that writes a FITS image from pixels it reads as floats exits 1 and says so, and leaves no file and no staging
 * behind. */
Test(cli_outputs, a_fits_image_the_system_cuts_short_is_a_failure_and_nothing_is_written)
{
    size_t rows = 0;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const command *c = &commands[i];
        /* a FITS image of floats or labels, from pixels read as floats (convolve reads doubles: 8 bytes a pixel) */
        if (strcmp(c->magic, "SIMPLE  =") || strstr(c->name, "catalog") || strstr(c->name, "convolve")) continue;
        fixture f;
        setup(&f);
        const char *argv[20];
        for (size_t k = 0; k < 20; k++) argv[k] = c->argv[k] && !strcmp(c->argv[k], "@") ? "out.fits" : c->argv[k];
        struct rlimit keep, lim;
        cr_assert_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
        lim = keep;
        lim.rlim_cur = 64 * 48 * sizeof(float) + 1024; /* the pixels, less than the 2880-byte header with them */
        void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        run(&f, NULL, argv);
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
        signal(SIGXFSZ, was);
        assert_status(&f, c->name, 1, "writing failed: cut short at");
        struct stat s;
        cr_assert(lstat(at(&f, "out.fits"), &s) != 0, "%s: out.fits was written", c->name);
        assert_no_leftovers(&f, c->name);
        teardown(&f);
        rows++;
    }
    cr_assert_geq(rows, 4, "%zu rows: label -o, sources --labels, --background and --rms at least", rows);
}
