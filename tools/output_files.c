/* Output files written all or none, never through what is not ours: see output_files.h. */
#include "output_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#define PROC_FS_MAGIC 0x9fa0 /* linux/magic.h's PROC_SUPER_MAGIC */
#endif

/* What a name designates, to tell whether two names are one file. */
typedef enum { ID_NONE, ID_FILE, ID_NAME } id_kind;
typedef struct {
    id_kind kind; /* ID_FILE: an existing file; ID_NAME: a name not yet created in an existing directory */
    dev_t dev;    /* the file's, or (ID_NAME) its directory's */
    ino_t ino;
    char base[NAME_MAX + 1]; /* ID_NAME: the name in that directory */
} identity;

typedef enum {
    OUT_ABSENT,  /* an option not given */
    OUT_NEW,     /* a name that does not exist: a staged file is renamed to it */
    OUT_REPLACE, /* a regular file: a staged file is renamed over it */
    OUT_DIRECT   /* a device, FIFO, socket or /proc link: the staged bytes are written into it */
} out_kind;

typedef struct {
    const char *name, *option; /* as the user gave them */
    out_kind kind;
    identity id;
    char final[PATH_MAX]; /* NEW, REPLACE: the name renamed to (symlinks followed); DIRECT: the name opened */
    char dir[PATH_MAX];   /* where the private directory is made */
    char stage_dir[PATH_MAX], staged[PATH_MAX], backup[PATH_MAX]; /* "" until made */
    dev_t staged_dev;
    ino_t staged_ino;
    int fd;          /* DIRECT, during the commit */
    bool renamed;    /* the staged file is at final */
    bool backed_up;  /* backup holds the file final held before */
    bool moved_away; /* ... by a rename (no hard links here): final is missing until restored */
    bool keep_dir;   /* a backup could not be restored: the private directory holds it and stays */
} output;

struct output_files {
    const char *inputs[OUTPUT_FILES_MAX];
    size_t ninputs, noutputs;
    output outs[OUTPUT_FILES_MAX];
    bool planned;
};

static int say(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static bool join(char *dst, size_t n, const char *dir, const char *name)
{
    return (size_t)snprintf(dst, n, "%s/%s", dir, name) < n;
}

/* path's directory and last component; false when path names a directory (empty, "x/", "x/..", ...) or the
 * component is too long. */
static bool split(const char *path, char *dir, char *base)
{
    const size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    const char *b = slash ? slash + 1 : path;
    if (!len || !*b || !strcmp(b, ".") || !strcmp(b, "..") || strlen(b) > NAME_MAX || len >= PATH_MAX) return false;
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else snprintf(dir, PATH_MAX, "%.*s", (int)(slash - path), path);
    strcpy(base, b);
    return true;
}

/* True when the symlink `link` is one of /proc's: /proc/self/fd/1 (where /dev/stdout leads) names an open file
 * description, which may be a pipe or a file the shell opened; its target is not a name to create or replace. */
static bool in_proc(const char *link)
{
#ifdef __linux__
    char dir[PATH_MAX], base[NAME_MAX + 1];
    struct statfs s;
    return split(link, dir, base) && statfs(dir, &s) == 0 && s.f_type == PROC_FS_MAGIC;
#else
    (void)link;
    return false;
#endif
}

/* Follows `path` through symlinks, by name, to the name that open(2) would open or create (a dangling link leads
 * to the name its target would have). *via_proc: a /proc link was met (then final is that link). 0 or an errno. */
static int follow(const char *path, char *final, bool *via_proc)
{
    char cur[PATH_MAX], target[PATH_MAX];
    *via_proc = false;
    if (strlen(path) >= sizeof cur) return ENAMETOOLONG;
    strcpy(cur, path);
    for (int hops = 0;; hops++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0) {
            if (errno != ENOENT) return errno;
            break;
        }
        if (!S_ISLNK(ls.st_mode)) break;
        if (hops == 40) return ELOOP; /* the kernel's own limit */
        if (in_proc(cur)) {
            *via_proc = true;
            break;
        }
        const ssize_t k = readlink(cur, target, sizeof target);
        if (k < 0) return errno;
        if ((size_t)k >= sizeof target) return ENAMETOOLONG;
        target[k] = 0;
        /* a relative target is relative to the link's directory */
        const char *slash = target[0] == '/' ? NULL : strrchr(cur, '/');
        const size_t keep = slash ? (size_t)(slash - cur) + 1 : 0;
        if (keep + (size_t)k >= sizeof cur) return ENAMETOOLONG;
        memcpy(cur + keep, target, (size_t)k + 1);
    }
    strcpy(final, cur);
    return 0;
}

/* What path designates for comparisons: an existing file, or a name still to be created in an existing
 * directory; ID_NONE when neither (the command's reading reports that). */
static void identify(const char *path, identity *id)
{
    struct stat st;
    char final[PATH_MAX], dir[PATH_MAX];
    bool via_proc;
    memset(id, 0, sizeof *id);
    if (stat(path, &st) == 0) {
        id->kind = ID_FILE, id->dev = st.st_dev, id->ino = st.st_ino;
    } else if (errno == ENOENT && !follow(path, final, &via_proc) && !via_proc && split(final, dir, id->base) &&
               stat(dir, &st) == 0) {
        id->kind = ID_NAME, id->dev = st.st_dev, id->ino = st.st_ino;
    }
}

static bool same(const identity *a, const identity *b)
{
    return a->kind != ID_NONE && a->kind == b->kind && a->dev == b->dev && a->ino == b->ino &&
           (a->kind == ID_FILE || !strcmp(a->base, b->base));
}

static const char *temp_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* Decides how output u is written (see out_kind) and what it designates. 0, or -1 with the reason. */
static int resolve(output *u, char *err, size_t n)
{
    const char *p = u->name;
    struct stat st;
    bool via_proc = false;
    char base[NAME_MAX + 1];
    if (!*p) return say(err, n, "%s: an empty file name", u->option);
    const bool exists = stat(p, &st) == 0;
    if (!exists && errno != ENOENT) return say(err, n, "%s: cannot create: %s", p, strerror(errno));
    if (exists && S_ISDIR(st.st_mode)) return say(err, n, "%s: is a directory", p);
    if (!exists || S_ISREG(st.st_mode)) {
        const int e = follow(p, u->final, &via_proc);
        if (e) return say(err, n, "%s: cannot create: %s", p, strerror(e));
        if (via_proc && !exists) return say(err, n, "%s: cannot create: %s", p, strerror(ENOENT));
    }
    if (exists && (via_proc || !S_ISREG(st.st_mode))) {
        u->kind = OUT_DIRECT;
        u->id = (identity){ ID_FILE, st.st_dev, st.st_ino, "" };
        snprintf(u->final, sizeof u->final, "%s", p); /* opened by the user's name: the kernel follows the links */
        snprintf(u->dir, sizeof u->dir, "%s", temp_dir());
        return 0;
    }
    if (!split(u->final, u->dir, base)) return say(err, n, "%s: is a directory", p);
    if (exists) {
        struct stat ls; /* the name found must be the file stat found, or something moved meanwhile */
        if (lstat(u->final, &ls) != 0 || ls.st_dev != st.st_dev || ls.st_ino != st.st_ino)
            return say(err, n, "%s: changed while its name was being resolved", p);
        u->kind = OUT_REPLACE;
        u->id = (identity){ ID_FILE, st.st_dev, st.st_ino, "" };
        return 0;
    }
    if (stat(u->dir, &st) != 0) return say(err, n, "%s: cannot create files in %s: %s", p, u->dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return say(err, n, "%s: cannot create files in %s: %s", p, u->dir, strerror(ENOTDIR));
    u->kind = OUT_NEW;
    u->id = (identity){ ID_NAME, st.st_dev, st.st_ino, "" };
    strcpy(u->id.base, base);
    return 0;
}

/* Makes output u's private directory: next to the destination (a rename stays in one file system) or, for a
 * direct one, in the temporary directory. */
static int make_stage_dir(output *u, char *err, size_t n)
{
    char tmpl[PATH_MAX];
    const bool direct = u->kind == OUT_DIRECT;
    errno = ENAMETOOLONG;
    if (!join(tmpl, sizeof tmpl, u->dir, direct ? "gpuws-XXXXXX" : ".gpuws-XXXXXX") || !mkdtemp(tmpl))
        return say(err, n, "%s: cannot create files in %s: %s", u->name, u->dir, strerror(errno));
    strcpy(u->stage_dir, tmpl);
    if (!join(u->staged, sizeof u->staged, tmpl, "new") || !join(u->backup, sizeof u->backup, tmpl, "old")) {
        rmdir(tmpl);
        u->stage_dir[0] = 0;
        return say(err, n, "%s: cannot create files in %s: %s", u->name, u->dir, strerror(ENAMETOOLONG));
    }
    return 0;
}

/* Empties and removes output u's private directory (everything in it is this process's). */
static void remove_stage_dir(output *u)
{
    if (!u->stage_dir[0] || u->keep_dir) return;
    DIR *d = opendir(u->stage_dir);
    if (d) {
        char p[PATH_MAX];
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && join(p, sizeof p, u->stage_dir, e->d_name))
                unlink(p);
        closedir(d);
    }
    rmdir(u->stage_dir);
    u->stage_dir[0] = u->staged[0] = u->backup[0] = 0;
}

output_files *output_files_create(void)
{
    output_files *o = calloc(1, sizeof *o);
    for (size_t i = 0; o && i < OUTPUT_FILES_MAX; i++) o->outs[i].fd = -1;
    return o;
}

void output_files_destroy(output_files *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->noutputs; i++) {
        if (o->outs[i].fd >= 0) close(o->outs[i].fd);
        remove_stage_dir(&o->outs[i]);
    }
    free(o);
}

int output_files_input(output_files *o, const char *path)
{
    if (!path) return 0;
    if (o->ninputs == OUTPUT_FILES_MAX) return -1;
    o->inputs[o->ninputs++] = path;
    return 0;
}

int output_files_add(output_files *o, const char *path, const char *option)
{
    if (o->noutputs == OUTPUT_FILES_MAX) return -1;
    output *u = &o->outs[o->noutputs];
    u->name = path, u->option = option, u->kind = path ? OUT_NEW : OUT_ABSENT;
    return (int)o->noutputs++;
}

int output_files_plan(output_files *o, char *err, size_t n)
{
    identity in[OUTPUT_FILES_MAX];
    for (size_t j = 0; j < o->ninputs; j++) identify(o->inputs[j], &in[j]);
    for (size_t i = 0; i < o->noutputs; i++) {
        output *u = &o->outs[i];
        if (u->kind == OUT_ABSENT) continue;
        if (resolve(u, err, n)) return 1;
        for (size_t j = 0; j < o->ninputs; j++)
            if (same(&u->id, &in[j]))
                return say(err, n, "%s %s is the input %s: input and outputs must be different files", u->option,
                           u->name, o->inputs[j]),
                       2;
        for (size_t k = 0; k < i; k++) {
            const output *v = &o->outs[k];
            if (v->kind != OUT_ABSENT && !(u->kind == OUT_DIRECT && v->kind == OUT_DIRECT) && same(&u->id, &v->id))
                return say(err, n, "%s %s and %s %s are the same file: outputs must be different files", v->option,
                           v->name, u->option, u->name),
                       2;
        }
    }
    /* every private directory can be made; they are made again when the writers need them, so that a run
     * interrupted while computing leaves nothing behind */
    for (size_t i = 0; i < o->noutputs; i++) {
        output *u = &o->outs[i];
        if (u->kind == OUT_ABSENT) continue;
        if (make_stage_dir(u, err, n)) return 1;
        remove_stage_dir(u);
    }
    o->planned = true;
    return 0;
}

output_files *output_files_prepare(const char *const *inputs, size_t ninputs, const char *const *paths,
                                   const char *const *options, size_t noutputs, int *code, char *err, size_t n)
{
    output_files *o = output_files_create();
    *code = 1;
    if (!o) return say(err, n, "out of memory"), NULL;
    int bad = ninputs > OUTPUT_FILES_MAX || noutputs > OUTPUT_FILES_MAX;
    for (size_t j = 0; j < ninputs && !bad; j++) bad = output_files_input(o, inputs[j]) < 0;
    for (size_t i = 0; i < noutputs && !bad; i++) bad = output_files_add(o, paths[i], options[i]) < 0;
    if (bad) say(err, n, "more than %d inputs or outputs", OUTPUT_FILES_MAX);
    else if (!(*code = output_files_plan(o, err, n))) return o;
    output_files_destroy(o);
    return NULL;
}

const char *output_files_stage(output_files *o, size_t i, char *err, size_t n)
{
    if (!o->planned || i >= o->noutputs || o->outs[i].kind == OUT_ABSENT)
        return say(err, n, "output %zu was not planned", i), NULL;
    output *u = &o->outs[i];
    if (!u->stage_dir[0] && make_stage_dir(u, err, n)) return NULL;
    return u->staged;
}

const char *output_files_name(const output_files *o, size_t i) { return i < o->noutputs ? o->outs[i].name : NULL; }

void output_files_reword_path(char *msg, size_t n, const char *staged, const char *name)
{
    const size_t sl = staged ? strlen(staged) : 0;
    char *out = sl && n ? malloc(n) : NULL;
    if (!out) return;
    size_t k = 0;
    for (const char *p = msg; *p && k + 1 < n;) {
        if (!strncmp(p, staged, sl)) {
            k += (size_t)snprintf(out + k, n - k, "%s", name);
            p += sl;
        } else {
            out[k++] = *p++;
        }
    }
    out[k < n ? k : n - 1] = 0;
    memcpy(msg, out, n);
    free(out);
}

void output_files_reword(const output_files *o, size_t i, char *msg, size_t n)
{
    if (i < o->noutputs) output_files_reword_path(msg, n, o->outs[i].staged, o->outs[i].name);
}

/* ---- the commit --------------------------------------------------------------------------------------------- */

/* Renames u's staged file to its destination, keeping the file it replaces as the backup. */
static int put_in_place(output *u, char *err, size_t n)
{
    struct stat old;
    if (lstat(u->final, &old) == 0) {
        if (!S_ISREG(old.st_mode))
            return say(err, n, "%s: %s is no longer a regular file: not replaced", u->name, u->final);
        /* The old file's owner where we may set it (as root), then its permission bits (after: chown clears
         * set-id bits), set-id bits only with the owner kept. Best effort: a file system without owners or modes
         * (FAT) refuses both, and the output matters more than its mode. */
        const bool owner =
            (old.st_uid == geteuid() && old.st_gid == getegid()) || chown(u->staged, old.st_uid, old.st_gid) == 0;
        if (chmod(u->staged, old.st_mode & (owner ? 07777 : 0777)) != 0) { /* best effort, as said */
        }
        if (link(u->final, u->backup) == 0) {
            u->backed_up = true;
        } else if (rename(u->final, u->backup) == 0) { /* a file system without hard links */
            u->backed_up = u->moved_away = true;
        } else {
            return say(err, n, "%s: cannot keep the old file until every output is in place: %s", u->name,
                       strerror(errno));
        }
    } else if (errno != ENOENT) {
        return say(err, n, "%s: %s", u->name, strerror(errno));
    }
    if (rename(u->staged, u->final) != 0)
        return say(err, n, "%s: cannot rename into place: %s", u->name, strerror(errno));
    u->renamed = true;
    return 0;
}

/* Copies u's staged bytes into its open destination with write(2). */
static int copy_into(output *u, char *err, size_t n)
{
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    const int in = open(u->staged, O_RDONLY | O_CLOEXEC);
    int rc = !buf     ? say(err, n, "%s: out of memory", u->name)
             : in < 0 ? say(err, n, "%s: cannot read the staged output back: %s", u->name, strerror(errno))
                      : 0;
    while (!rc) {
        const ssize_t got = read(in, buf, CHUNK);
        if (got == 0) break;
        if (got < 0) {
            if (errno != EINTR)
                rc = say(err, n, "%s: cannot read the staged output back: %s", u->name, strerror(errno));
            continue;
        }
        for (ssize_t off = 0; off < got && !rc;) {
            const ssize_t w = write(u->fd, buf + off, (size_t)(got - off));
            if (w > 0) off += w;
            else if (w < 0 && errno == EINTR) continue;
            else rc = say(err, n, "%s: writing failed: %s", u->name, strerror(w < 0 ? errno : EIO));
        }
    }
    if (in >= 0) close(in);
    free(buf);
    return rc;
}

/* Undoes the renames done (newest first): old files back from their backups, new names removed. */
static void roll_back(output_files *o, char *err, size_t n)
{
    for (size_t i = o->noutputs; i-- > 0;) {
        output *u = &o->outs[i];
        if (u->fd >= 0) close(u->fd), u->fd = -1;
        if (u->backed_up && (u->renamed || u->moved_away)) {
            if (rename(u->backup, u->final) != 0) {
                const size_t l = strlen(err);
                snprintf(err + l, n - l, "; the old %s could not be put back and is kept as %s", u->name, u->backup);
                u->keep_dir = true;
            }
        } else if (u->renamed) {
            struct stat s;
            if (lstat(u->final, &s) == 0 && s.st_dev == u->staged_dev && s.st_ino == u->staged_ino) unlink(u->final);
        }
        u->renamed = u->backed_up = u->moved_away = false;
    }
}

int output_files_commit(output_files *o, char *err, size_t n)
{
    /* the staged files on disk before anything is replaced: a full disk may show only now */
    for (size_t i = 0; i < o->noutputs; i++) {
        output *u = &o->outs[i];
        if (u->kind == OUT_ABSENT) continue;
        struct stat s;
        const int fd = u->stage_dir[0] ? open(u->staged, O_RDONLY | O_CLOEXEC) : -1;
        const bool ok =
            fd >= 0 && fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && (u->kind == OUT_DIRECT || fsync(fd) == 0);
        const int e = errno;
        if (fd >= 0) close(fd);
        if (!ok) return say(err, n, "%s: writing failed: %s", u->name, u->stage_dir[0] ? strerror(e) : "not staged"), 1;
        u->staged_dev = s.st_dev, u->staged_ino = s.st_ino;
    }
    /* the direct destinations open before the first rename: one that cannot be opened changes nothing */
    for (size_t i = 0; i < o->noutputs; i++) {
        output *u = &o->outs[i];
        if (u->kind != OUT_DIRECT) continue;
        struct stat s;
        u->fd = open(u->final, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
        if (u->fd < 0) {
            say(err, n, "%s: cannot open for writing: %s", u->name, strerror(errno));
            goto fail;
        }
        if (fstat(u->fd, &s) != 0 || s.st_dev != u->id.dev || s.st_ino != u->id.ino) {
            say(err, n, "%s: replaced by another file while gpuws ran: not written", u->name);
            goto fail;
        }
    }
    for (size_t i = 0; i < o->noutputs; i++) {
        const out_kind k = o->outs[i].kind;
        if ((k == OUT_NEW || k == OUT_REPLACE) && put_in_place(&o->outs[i], err, n)) goto fail;
    }
    /* Last, what cannot be taken back. A reader gone from a FIFO or pipe is an error here, not SIGPIPE's end of
     * the process halfway through the commit. */
    fflush(stdout); /* /dev/stdout may be one of them: what the command printed comes first */
    struct sigaction ignore = { .sa_handler = SIG_IGN }, old;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old);
    int rc = 0;
    for (size_t i = 0; i < o->noutputs && !rc; i++) {
        output *u = &o->outs[i];
        if (u->kind != OUT_DIRECT) continue;
        rc = copy_into(u, err, n);
        if (close(u->fd) != 0 && !rc) rc = say(err, n, "%s: writing failed: %s", u->name, strerror(errno));
        u->fd = -1;
    }
    sigaction(SIGPIPE, &old, NULL);
    if (rc) goto fail;
    for (size_t i = 0; i < o->noutputs; i++) {
        o->outs[i].renamed = o->outs[i].backed_up = false;
        remove_stage_dir(&o->outs[i]);
    }
    return 0;
fail:
    roll_back(o, err, n);
    for (size_t i = 0; i < o->noutputs; i++) remove_stage_dir(&o->outs[i]);
    return 1;
}
