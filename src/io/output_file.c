/* Output files (output_file.h): temp file, fsync, rename, and the checks that keep a write from
 * replacing what is not a regular file. Also the public cudarl_output_* over them. */
#include "io/output_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMP_SUFFIX ".tmp."

/* The directory holding `path` into dir (CR_OUT_PATH_MAX bytes): "." for a bare name. */
static void dir_of(const char *path, char *dir) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, CR_OUT_PATH_MAX, ".");
    else if (slash == path) snprintf(dir, CR_OUT_PATH_MAX, "/");
    else snprintf(dir, CR_OUT_PATH_MAX, "%.*s", (int)(slash - path), path);
}

/* "a FIFO", "a directory", ... for a file type other than a regular file. */
static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* The refusal of an existing target of mode `m` that is not a regular file. */
static cudarl_status refuse_kind(const char *path, const char *what, mode_t m) {
    if (S_ISDIR(m))
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': it is a directory; give the path of "
                       "a file, e.g. '%s/<name>'", what, path, path);
    if (S_ISLNK(m))
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': it is a symbolic link, and cudarl "
                       "does not write through links (the new file would replace the link, not "
                       "what it points to); give the path of the file itself, or remove the link",
                       what, path);
    return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': it is %s, not a regular file, and "
                   "cudarl replaces only regular files; choose another path", what, path,
                   kind_of(m));
}

cudarl_status cr_out_check(const char *path, const char *what) {
    if (!path || !*path)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cannot write %s: the path is empty; give a file "
                       "name", what);
    if (strlen(path) + 32 > CR_OUT_PATH_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cannot write %s '%.80s...': the path is longer "
                       "than %d bytes; use a shorter one", what, path, CR_OUT_PATH_MAX - 32);
    char dir[CR_OUT_PATH_MAX];
    dir_of(path, dir);
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT)
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': its directory '%s' does not exist; "
                       "create it (mkdir -p '%s') or choose a path in one that exists", what,
                       path, dir, dir);
    if (stat(dir, &st) != 0)
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': its directory '%s' cannot be "
                       "reached: %s; choose a path in a directory that exists", what, path, dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': '%s' is not a directory; choose a "
                       "path in a directory that exists", what, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': its directory '%s' is not "
                       "writable: %s; choose a directory you can write to", what, path, dir,
                       strerror(errno));
    if (lstat(path, &st) == 0)
        return S_ISREG(st.st_mode) ? CUDARL_OK : refuse_kind(path, what, st.st_mode);
    if (errno == ENOENT) return CUDARL_OK;
    return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': %s; check the path", what, path,
                   strerror(errno));
}

cudarl_status cr_out_open(cr_out_file *o, const char *path, const char *what) {
    o->f = NULL;
    o->err = 0;
    o->tmp[0] = 0;
    snprintf(o->what, sizeof o->what, "%s", what ? what : "file");
    CR_TRY(cr_out_check(path, o->what));
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s" TEMP_SUFFIX "%ld", path, (long)getpid());
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(o->tmp, flags, 0666);
    if (fd < 0 && errno == EEXIST) { /* left by a killed process that had our pid */
        unlink(o->tmp);
        fd = open(o->tmp, flags, 0666);
    }
    if (fd < 0)
        return cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': cannot create '%s': %s; check that "
                       "its directory is writable and not full", o->what, path, o->tmp,
                       strerror(errno));
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int err = errno;
        close(fd);
        unlink(o->tmp);
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot write %s '%s': %s", o->what, path,
                       strerror(err));
    }
    return CUDARL_OK;
}

void cr_out_write(cr_out_file *o, const void *bytes, size_t n) {
    if (o->err || n == 0) return;
    if (fwrite(bytes, 1, n, o->f) != n) o->err = errno ? errno : EIO;
}

void cr_out_abort(cr_out_file *o) {
    if (!o->f) return;
    fclose(o->f);
    o->f = NULL;
    unlink(o->tmp);
}

/* fsync()s the directory holding `path`, so that a rename into it survives a crash: 0, or an
 * errno (EINVAL, a file system that cannot sync directories, counts as 0). */
static int fsync_parent_dir(const char *path) {
    char dir[CR_OUT_PATH_MAX];
    dir_of(path, dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err == EINVAL ? 0 : err;
}

/* Removes o's temp file after a failure whose message is set (status s): returns s, with a word
 * added to the message when even that fails (a directory that became read-only). */
static cudarl_status drop_temp(cr_out_file *o, cudarl_status s) {
    if (unlink(o->tmp) == 0 || errno == ENOENT) return s;
    int err = errno;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cudarl_last_error());
    return cr_fail(s, "%s (and its temp file '%s' could not be removed: %s; remove it by hand)",
                   msg, o->tmp, strerror(err));
}

cudarl_status cr_out_commit(cr_out_file *o) {
    CUDARL_ASSERT(o->f);
    const char *step = NULL;
    int err = o->err;
    if (err) step = "writing";
    else if (fflush(o->f) != 0) step = "writing", err = errno;
    else if (ferror(o->f)) step = "writing"; /* a stdio write failed; its errno is gone */
    else if (fsync(fileno(o->f)) != 0) step = "syncing", err = errno;
    if (fclose(o->f) != 0 && !step) step = "closing", err = errno;
    o->f = NULL;
    if (step)
        return drop_temp(o, cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': %s '%s' failed%s%s; "
                                    "check that the disk is not full", o->what, o->path, step,
                                    o->tmp, err ? ": " : "", err ? strerror(err) : ""));
    /* again: the target may have become something else while the file was written */
    cudarl_status s = cr_out_check(o->path, o->what);
    if (s != CUDARL_OK) return drop_temp(o, s);
    if (rename(o->tmp, o->path) != 0)
        return drop_temp(o, cr_fail(CUDARL_ERR_IO, "cannot write %s '%s': renaming '%s' over it "
                                    "failed: %s; check that its directory is writable", o->what,
                                    o->path, o->tmp, strerror(errno)));
    err = fsync_parent_dir(o->path);
    if (err)
        return cr_fail(CUDARL_ERR_IO, "%s '%s' was written but syncing its directory failed: %s; "
                       "it may not survive a crash — check the file system", o->what, o->path,
                       strerror(err));
    return CUDARL_OK;
}

cudarl_status cr_out_open_append(const char *path, const char *what, int truncate, FILE **f) {
    *f = NULL;
    CR_TRY(cr_out_check(path, what));
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                        (truncate ? O_TRUNC : O_APPEND), 0666);
    if (fd < 0) {
        struct stat st;
        if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
            return refuse_kind(path, what, st.st_mode);
        return cr_fail(CUDARL_ERR_IO, "cannot open %s '%s' for writing: %s; check that its "
                       "directory is writable", what, path, strerror(errno));
    }
    struct stat st;
    int err = fstat(fd, &st) != 0 ? errno : 0;
    if (err || !S_ISREG(st.st_mode)) {
        close(fd);
        return err ? cr_fail(CUDARL_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(err))
                   : refuse_kind(path, what, st.st_mode);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || lseek(fd, 0, SEEK_END) < 0 ||
        !(*f = fdopen(fd, truncate ? "wb" : "ab"))) {
        err = errno;
        close(fd);
        return cr_fail(CUDARL_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(err));
    }
    return CUDARL_OK;
}

/* Whether `name` is `base` + ".tmp." + digits. */
static int is_temp_of(const char *name, const char *base) {
    size_t n = strlen(base), k = sizeof TEMP_SUFFIX - 1;
    if (strncmp(name, base, n) || strncmp(name + n, TEMP_SUFFIX, k) || !name[n + k]) return 0;
    for (const char *c = name + n + k; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return 1;
}

int cr_out_remove_temps(const char *path) {
    char dir[CR_OUT_PATH_MAX], file[CR_OUT_PATH_MAX + 256];
    dir_of(path, dir);
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    DIR *d = opendir(dir);
    if (!d || !*base) {
        if (d) closedir(d);
        return 0;
    }
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_temp_of(e->d_name, base)) continue;
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode) || unlink(file) != 0) continue;
        CR_INFO("removed '%s', left by a process killed while writing '%s'", file, path);
        removed++;
    }
    closedir(d);
    return removed;
}

/* ---- the public API ----------------------------------------------------------------------- */

struct cudarl_output {
    cr_out_file o;
};

cudarl_status cudarl_output_check(const char *path, const char *what) {
    return cr_out_check(path, what ? what : "file");
}

cudarl_status cudarl_output_open(cudarl_output **out, const char *path, const char *what,
                                 FILE **stream) {
    *out = NULL;
    *stream = NULL;
    cudarl_output *h = malloc(sizeof *h);
    if (!h)
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes to write '%s'",
                       sizeof *h, path ? path : "");
    cudarl_status s = cr_out_open(&h->o, path, what);
    if (s != CUDARL_OK) {
        free(h);
        return s;
    }
    *out = h;
    *stream = h->o.f;
    return CUDARL_OK;
}

cudarl_status cudarl_output_commit(cudarl_output *out) {
    cudarl_status s = cr_out_commit(&out->o);
    free(out);
    return s;
}

void cudarl_output_abort(cudarl_output *out) {
    if (!out) return;
    cr_out_abort(&out->o);
    free(out);
}
