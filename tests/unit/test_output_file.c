/* Output files (io/output_file.h and the public cudarl_output_*): a file is written whole or not
 * at all; a target that is not a regular file (a directory, FIFO, socket, device, or a symbolic
 * link to anything) is refused and left as it was; no temp file survives a failure (a write
 * past the file-size limit, the target turned into a FIFO or a link while written, a temp name
 * taken by a directory, an abort); a killed writer's temp files are removed; appended files
 * refuse a FIFO without blocking. CPU only, in a fresh temporary directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "io/output_file.h"

static char tmpdir[256];

/* tmpdir/name into buf (512 bytes). */
static const char *tmp_path(char buf[static 512], const char *name) {
    snprintf(buf, 512, "%s/%s", tmpdir, name);
    return buf;
}

/* Entries of tmpdir (and of its folder `sub`, when given) whose name holds ".tmp.". */
static int temp_count(const char *sub) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s%s%s", tmpdir, sub ? "/" : "", sub ? sub : "");
    DIR *d = opendir(dir);
    CHECK(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n + (sub ? temp_count(NULL) : 0);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* The first 255 bytes of `path` (a regular file) as a string, in buf (256 bytes). */
static const char *read_text(const char *path, char buf[static 256]) {
    FILE *f = fopen(path, "r");
    CHECK_MSG(f, "cannot read %s", path);
    size_t n = fread(buf, 1, 255, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void expect_refused(cudarl_status got, cudarl_status want, const char *what,
                           const char *part1, const char *part2) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(got == want && strstr(msg, part1) && (!part2 || strstr(msg, part2)),
              "%s: expected %s with '%s'%s%s, got %s: %s", what, cudarl_status_name(want), part1,
              part2 ? " and " : "", part2 ? part2 : "", cudarl_status_name(got), msg);
    printf("  refused %-40s %s\n", what, msg);
}

static mode_t type_of(const char *path) {
    struct stat st;
    CHECK_MSG(lstat(path, &st) == 0, "%s is gone", path);
    return st.st_mode & S_IFMT;
}

/* Writes `text` to `path` through the helper: cr_out_write, or stdio on the open file. */
static cudarl_status write_whole(const char *path, const char *text, int stdio) {
    cr_out_file o;
    CHECK_OK(cr_out_open(&o, path, "test file"));
    if (stdio) fputs(text, o.f);
    else cr_out_write(&o, text, strlen(text));
    return cr_out_commit(&o);
}

static void test_write_and_replace(void) {
    char p[512], b[256];
    CHECK_OK(write_whole(tmp_path(p, "a.txt"), "one", 0));
    CHECK(!strcmp(read_text(p, b), "one"));
    CHECK_OK(write_whole(p, "two, longer", 1)); /* replaces a regular file */
    CHECK(!strcmp(read_text(p, b), "two, longer"));
    CHECK_OK(write_whole(p, "", 0)); /* an empty file is a file */
    CHECK(!strcmp(read_text(p, b), ""));

    cudarl_output *out;
    FILE *f;
    CHECK_OK(cudarl_output_open(&out, p, "JSON file", &f));
    CHECK(fprintf(f, "{\"x\": %d}", 3) > 0);
    CHECK_OK(cudarl_output_commit(out));
    CHECK(!strcmp(read_text(p, b), "{\"x\": 3}"));
    CHECK_OK(cudarl_output_check(p, NULL));
    CHECK_OK(cudarl_output_check(tmp_path(p, "not-yet.txt"), "file"));

    /* a temp file of our pid left by a killed process is replaced, not an obstacle */
    char stale[600];
    snprintf(stale, sizeof stale, "%s/a.txt.tmp.%ld", tmpdir, (long)getpid());
    write_text(stale, "junk of a killed writer");
    CHECK_OK(write_whole(tmp_path(p, "a.txt"), "three", 0));
    CHECK(!strcmp(read_text(p, b), "three"));
    CHECK_MSG(temp_count(NULL) == 0, "a temp file was left behind");
    printf("write: new, over a regular file, empty, stdio, public API; no temp file left\n");
}

/* Every way in to a non-regular target is refused, the target left as it was. */
static void refuse_all_ways(const char *path, const char *what, const char *kind) {
    mode_t before = type_of(path);
    char label[128];
    snprintf(label, sizeof label, "%s: check", what);
    expect_refused(cr_out_check(path, "test file"), CUDARL_ERR_IO, label, path, kind);
    cr_out_file o;
    snprintf(label, sizeof label, "%s: open", what);
    expect_refused(cr_out_open(&o, path, "test file"), CUDARL_ERR_IO, label, path, kind);
    CHECK(o.f == NULL);
    static char sentinel;
    cudarl_output *out = (cudarl_output *)&sentinel; /* must come back NULL */
    FILE *f = stdout;
    snprintf(label, sizeof label, "%s: cudarl_output_open", what);
    expect_refused(cudarl_output_open(&out, path, "PNG file", &f), CUDARL_ERR_IO, label,
                   "cannot write PNG file", kind);
    CHECK(out == NULL && f == NULL);
    cudarl_output_abort(out); /* NULL is fine */
    snprintf(label, sizeof label, "%s: cudarl_output_check", what);
    expect_refused(cudarl_output_check(path, "JSON file"), CUDARL_ERR_IO, label, path, kind);
    snprintf(label, sizeof label, "%s: append", what);
    alarm(10); /* a FIFO opened for writing would wait for a reader: fail rather than hang */
    expect_refused(cr_out_open_append(path, "metrics file", 0, &f), CUDARL_ERR_IO, label, path,
                   kind);
    CHECK(f == NULL);
    snprintf(label, sizeof label, "%s: append, truncating", what);
    expect_refused(cr_out_open_append(path, "metrics file", 1, &f), CUDARL_ERR_IO, label, path,
                   kind);
    alarm(0);
    CHECK_MSG(type_of(path) == before, "%s changed type", path);
    CHECK_MSG(temp_count(NULL) == 0, "%s: a temp file was left behind", what);
}

static void test_refusals(void) {
    char dir[512], fifo[512], sock[512], reg[512], link[512], b[512];
    CHECK(mkdir(tmp_path(dir, "a_directory"), 0700) == 0);
    refuse_all_ways(dir, "a directory", "is a directory");
    CHECK(mkfifo(tmp_path(fifo, "fifo"), 0600) == 0);
    refuse_all_ways(fifo, "a FIFO", "FIFO");

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    tmp_path(sock, "sock");
    CHECK(fd >= 0 && strlen(sock) < sizeof a.sun_path);
    memcpy(a.sun_path, sock, strlen(sock) + 1);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    refuse_all_ways(sock, "a socket", "socket");
    close(fd);

    write_text(tmp_path(reg, "regular.txt"), "keep me");
    CHECK(symlink(reg, tmp_path(link, "link_to_regular")) == 0);
    refuse_all_ways(link, "a link to a regular file", "symbolic link");
    CHECK(!strcmp(read_text(reg, b), "keep me"));
    CHECK(symlink(fifo, tmp_path(link, "link_to_fifo")) == 0);
    refuse_all_ways(link, "a link to a FIFO", "symbolic link");
    CHECK(type_of(fifo) == S_IFIFO);
    CHECK(symlink(dir, tmp_path(link, "link_to_dir")) == 0);
    refuse_all_ways(link, "a link to a directory", "symbolic link");
    CHECK(symlink("nowhere", tmp_path(link, "dangling_link")) == 0);
    refuse_all_ways(link, "a dangling link", "symbolic link");
    CHECK_MSG(access(tmp_path(b, "nowhere"), F_OK) != 0, "a write went through a dangling link");

    /* a device: only checked (a broken check must not get the chance to replace /dev/null) */
    expect_refused(cr_out_check("/dev/null", "ONNX model"), CUDARL_ERR_IO, "/dev/null",
                   "'/dev/null'", geteuid() == 0 ? "character device" : NULL);
    CHECK(type_of("/dev/null") == S_IFCHR);
    printf("refusals: directory, FIFO, socket, device, links to a file, a FIFO, a directory and "
           "nothing; each left as it was\n");
}

static void test_bad_directories(void) {
    char p[512];
    cudarl_status io = CUDARL_ERR_IO;
    expect_refused(cr_out_check(tmp_path(p, "no/such/dir/x.onnx"), "ONNX model"), io,
                   "missing directory", "does not exist", "mkdir -p");
    write_text(tmp_path(p, "blocker"), "a file, not a folder");
    expect_refused(cr_out_check(tmp_path(p, "blocker/x.onnx"), "ONNX model"), io,
                   "path under a file", "is not a directory", NULL);
    expect_refused(cr_out_check("", "ONNX model"), CUDARL_ERR_INVALID_ARG, "empty path",
                   "the path is empty", NULL);
    char longp[CR_OUT_PATH_MAX + 8];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    expect_refused(cr_out_check(longp, "ONNX model"), CUDARL_ERR_INVALID_ARG, "overlong path",
                   "longer than", NULL);

    char ro[512];
    CHECK(mkdir(tmp_path(ro, "readonly"), 0500) == 0);
    if (geteuid() == 0) {
        printf("  (a read-only folder: not checked, root may write there anyway)\n");
    } else {
        expect_refused(cr_out_check(tmp_path(p, "readonly/x.onnx"), "ONNX model"), io,
                       "read-only directory", "not writable", "Permission denied");
        cr_out_file o;
        CHECK(cr_out_open(&o, p, "ONNX model") == io);
        /* the directory turns read-only while the file is written: the commit fails, and the
         * temp file, which nothing can remove there now, is named in the message */
        CHECK(chmod(ro, 0700) == 0);
        CHECK_OK(cr_out_open(&o, p, "ONNX model"));
        cr_out_write(&o, "x", 1);
        CHECK(chmod(ro, 0500) == 0);
        expect_refused(cr_out_commit(&o), io, "folder read-only before the commit",
                       "not writable", "remove it by hand");
        CHECK(chmod(ro, 0700) == 0);
        CHECK(unlink(o.tmp) == 0);
        CHECK(access(p, F_OK) != 0);
    }
    CHECK(temp_count("readonly") == 0);
    printf("directories: missing, a file, read-only; empty and overlong paths\n");
}

/* Each failure between open and commit removes the temp file and leaves the target as it was. */
static void test_failure_paths(void) {
    char p[512], b[256], tmp[600];
    cudarl_status io = CUDARL_ERR_IO;
    write_text(tmp_path(p, "target.bin"), "old");

    /* writes past the file-size limit fail as a full disk would (EFBIG, SIGXFSZ ignored) */
    struct rlimit old, small = {4096, 4096};
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    static char big[20000];
    memset(big, 'x', sizeof big);
    big[sizeof big - 1] = 0;
    for (int stdio = 0; stdio < 2; stdio++) {
        cr_out_file o;
        CHECK_OK(cr_out_open(&o, p, "checkpoint"));
        if (stdio) fputs(big, o.f);
        else cr_out_write(&o, big, sizeof big);
        expect_refused(cr_out_commit(&o), io, stdio ? "disk full (stdio)" : "disk full",
                       "writing", stdio ? "check that the disk is not full" : "File too large");
        CHECK(o.f == NULL);
    }
    cudarl_output *out;
    FILE *f;
    CHECK_OK(cudarl_output_open(&out, p, "JSON file", &f));
    fputs(big, f);
    expect_refused(cudarl_output_commit(out), io, "disk full (public API)", "JSON file",
                   "check that the disk is not full");
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    CHECK(!strcmp(read_text(p, b), "old"));
    CHECK_MSG(temp_count(NULL) == 0, "a failed write left its temp file");

    /* the target turns into a FIFO, or a link, while the file is written */
    cr_out_file o;
    CHECK_OK(cr_out_open(&o, p, "checkpoint"));
    cr_out_write(&o, "new", 3);
    CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
    expect_refused(cr_out_commit(&o), io, "became a FIFO", "FIFO", NULL);
    CHECK(type_of(p) == S_IFIFO && temp_count(NULL) == 0);
    CHECK(unlink(p) == 0);
    char other[512];
    write_text(tmp_path(other, "elsewhere.txt"), "elsewhere");
    CHECK_OK(cr_out_open(&o, p, "checkpoint"));
    cr_out_write(&o, "new", 3);
    CHECK(symlink(other, p) == 0);
    expect_refused(cr_out_commit(&o), io, "became a link", "symbolic link", NULL);
    CHECK(type_of(p) == S_IFLNK && temp_count(NULL) == 0);
    CHECK(!strcmp(read_text(other, b), "elsewhere"));
    CHECK(unlink(p) == 0);

    /* the temp file's name is taken by something that is not ours to remove */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());
    CHECK(mkdir(tmp, 0700) == 0);
    expect_refused(cr_out_open(&o, p, "checkpoint"), io, "temp name taken", "cannot create",
                   tmp);
    CHECK(rmdir(tmp) == 0 && access(p, F_OK) != 0);

    /* abort */
    write_text(p, "old");
    CHECK_OK(cr_out_open(&o, p, "checkpoint"));
    cr_out_write(&o, "new", 3);
    cr_out_abort(&o);
    cr_out_abort(&o); /* twice is fine */
    CHECK_OK(cudarl_output_open(&out, p, "JSON file", &f));
    fputs("new", f);
    cudarl_output_abort(out);
    CHECK(!strcmp(read_text(p, b), "old"));
    CHECK_MSG(temp_count(NULL) == 0, "an abort left its temp file");
    printf("failures: full disk (3 ways), target turned FIFO or link, temp name taken, abort: "
           "target as it was, no temp file left\n");
}

static void test_remove_temps(void) {
    char d[512], p[600], target[600];
    CHECK(mkdir(tmp_path(d, "run"), 0700) == 0);
    snprintf(target, sizeof target, "%s/model.safetensors", d);
    static const char *const files[] = {"model.safetensors.tmp.123", "model.safetensors.tmp.9",
                                        "model.safetensors.tmp.45x", "model.safetensors.tmp.",
                                        "metrics.csv.tmp.77", "model.safetensors"};
    for (int i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/%s", d, files[i]);
        write_text(p, "x");
    }
    snprintf(p, sizeof p, "%s/model.safetensors.tmp.88", d);
    CHECK(mkdir(p, 0700) == 0); /* not a regular file: not ours */
    CHECK_MSG(cr_out_remove_temps(target) == 2, "removed the wrong files");
    for (int i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/%s", d, files[i]);
        CHECK_MSG((access(p, F_OK) == 0) == (i >= 2), "%s", files[i]);
    }
    snprintf(p, sizeof p, "%s/model.safetensors.tmp.88", d);
    CHECK(access(p, F_OK) == 0);
    printf("remove_temps: <target>.tmp.<digits> regular files only\n");
}

static void test_append(void) {
    char p[512], b[256];
    FILE *f;
    CHECK_OK(cr_out_open_append(tmp_path(p, "metrics.csv"), "metrics file", 0, &f));
    CHECK(fputs("a", f) >= 0 && fclose(f) == 0);
    CHECK_OK(cr_out_open_append(p, "metrics file", 0, &f));
    CHECK(ftell(f) == 1);
    CHECK(fputs("b", f) >= 0 && fclose(f) == 0);
    CHECK(!strcmp(read_text(p, b), "ab"));
    CHECK_OK(cr_out_open_append(p, "metrics file", 1, &f));
    CHECK(fputs("c", f) >= 0 && fclose(f) == 0);
    CHECK(!strcmp(read_text(p, b), "c"));
    printf("append: creates, appends, truncates\n");
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/cudarl_out_XXXXXX", base && *base ? base : "/tmp");
    CHECK_MSG(mkdtemp(tmpdir) != NULL, "cannot create a temporary directory under %s", tmpdir);
    test_write_and_replace();
    test_refusals();
    test_bad_directories();
    test_failure_paths();
    test_remove_temps();
    test_append();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", tmpdir, tmpdir);
    CHECK(system(cmd) == 0);
    printf("all output-file checks passed\n");
    return 0;
}
