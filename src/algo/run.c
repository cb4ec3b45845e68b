/* Run folders (creation, naming, refusing to overwrite, metrics.csv across resumes) and the env a
 * config names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo/run.h"
#include "env/env.h"
#include "io/output_file.h"

#include <signal.h>

static cudarl_status make_dir(const char *path) {
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return CUDARL_OK;
    return cr_fail(CUDARL_ERR_IO, "cannot create directory '%s': %s; check --runs-dir", path,
                   strerror(errno));
}

/* Drops rows of metrics.csv past the checkpoint's iteration (written after the last checkpoint
 * of a run that was killed), so a resumed run appends exactly where its state stands. */
static cudarl_status trim_metrics(const char *path, int64_t iteration) {
    FILE *in = fopen(path, "r"); /* cr_out_check found a regular file or none */
    if (!in) return CUDARL_OK;   /* nothing to trim: a fresh file gets its header */
    cr_out_file out;
    cudarl_status s = cr_out_open(&out, path, "metrics file");
    if (s != CUDARL_OK) {
        fclose(in);
        return s;
    }
    char line[4096];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        const char *comma = strchr(line, ',');
        long long it = comma ? strtoll(comma + 1, NULL, 10) : 0;
        if (first || it <= iteration) cr_out_write(&out, line, strlen(line));
        first = 0;
    }
    int err = ferror(in) ? errno : 0;
    fclose(in);
    if (err) {
        cr_out_abort(&out);
        return cr_fail(CUDARL_ERR_IO, "cannot read '%s': %s", path, strerror(err));
    }
    return cr_out_commit(&out);
}

cudarl_status cr_run_check_name(const char *name) {
    for (const char *p = name; *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 *p == '_' || *p == '-' || *p == '.';
        CR_REQUIRE(ok, "--run-name '%s' contains '%c'; use letters, digits, '.', '_' and '-' only",
                   name, *p);
    }
    CR_REQUIRE(strcmp(name, ".") && strcmp(name, ".."),
               "--run-name '%s' is not a usable folder name", name);
    return CUDARL_OK;
}

/* Takes the exclusive lock of run_dir/run.lock into *lock and writes who holds it; a lock held
 * by another process is refused with what that process wrote (its pid and start time). */
static cudarl_status claim(const char *run_dir, const char *run_name, int *lock) {
    char path[600];
    snprintf(path, sizeof path, "%s/run.lock", run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return cr_fail(CUDARL_ERR_IO, "cannot open '%s': %s; check --runs-dir", path,
                       strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char who[128] = "";
        ssize_t n = 0;
        for (int tries = 0; tries < 50 && n <= 0; tries++) { /* it writes just after locking */
            if (tries) nanosleep(&(struct timespec){0, 2000000}, NULL);
            n = pread(fd, who, sizeof who - 1, 0);
        }
        who[n > 0 ? n : 0] = 0;
        who[strcspn(who, "\n")] = 0;
        close(fd);
        if (err == EWOULDBLOCK)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "run '%s' is in use by another cudarl process "
                           "(%s); wait for it to end, or pass another --run-name", run_name,
                           who[0] ? who : "it wrote nothing yet");
        return cr_fail(CUDARL_ERR_IO, "cannot lock '%s': %s", path, strerror(err));
    }
    char me[128];
    time_t now = time(NULL);
    struct tm t;
    gmtime_r(&now, &t);
    int len = snprintf(me, sizeof me, "pid %ld, started %04d-%02d-%02d %02d:%02d:%02d UTC\n",
                       (long)getpid(), t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour,
                       t.tm_min, t.tm_sec);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me, (size_t)len, 0) != len) {
        int err = errno;
        close(fd);
        return cr_fail(CUDARL_ERR_IO, "cannot write '%s': %s", path, strerror(err));
    }
    *lock = fd;
    return CUDARL_OK;
}

void cr_run_release(int lock) {
    if (lock >= 0) close(lock); /* closing the descriptor drops the flock */
}

cudarl_status cr_run_open(const char *runs_dir, char *run_name, size_t cap, const char *env_id,
                          const char *algo, uint64_t seed, int64_t resume_iteration,
                          const char *header, char *run_dir, size_t run_dir_cap, FILE **csv,
                          int *lock) {
    int resuming = resume_iteration >= 0;
    *csv = NULL;
    *lock = -1;
    CR_TRY(make_dir(runs_dir));
    if (run_name[0]) {
        CR_TRY(cr_run_check_name(run_name));
    } else {
        snprintf(run_name, cap, "%s__%s__%llu__%lld", env_id, algo, (unsigned long long)seed,
                 (long long)time(NULL));
        /* an env id may hold '/' (MinAtar/Breakout-v1) or other characters a folder name
         * should not: each becomes '-' */
        for (char *c = run_name; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.'))
                *c = '-';
    }
    snprintf(run_dir, run_dir_cap, "%s/%s", runs_dir, run_name);
    CR_TRY(make_dir(run_dir));
    CR_TRY(claim(run_dir, run_name, lock));
    char path[600], metrics[600];
    snprintf(path, sizeof path, "%s/model.safetensors", run_dir);
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", run_dir);
    cr_out_remove_temps(path); /* the claim is ours: their temp files are a killed run's */
    cr_out_remove_temps(metrics);
    char config[600];
    snprintf(config, sizeof config, "%s/config.toml", run_dir);
    cr_out_remove_temps(config);
    /* the files the run will write, checked before it trains */
    cudarl_status s = cr_out_check(path, "checkpoint");
    if (s == CUDARL_OK) s = cr_out_check(metrics, "metrics file");
    if (s == CUDARL_OK) s = cr_out_check(config, "run config");
    if (s == CUDARL_OK && !resuming && access(path, F_OK) == 0) {
        s = cr_fail(CUDARL_ERR_INVALID_ARG, "run '%s' already has a checkpoint (%s); pass a "
                    "new --run-name, or continue it with --resume %s", run_name, path, path);
    }
    if (s == CUDARL_OK && resuming) s = trim_metrics(metrics, resume_iteration);
    if (s == CUDARL_OK) s = cr_out_open_append(metrics, "metrics file", !resuming, csv);
    if (s != CUDARL_OK) {
        cr_run_release(*lock);
        *lock = -1;
        return s;
    }
    if (!resuming || ftell(*csv) == 0) fputs(header, *csv);
    return CUDARL_OK;
}

static volatile sig_atomic_t stop_requested;

void cudarl_request_stop(void) { stop_requested = 1; }
int cr_stop_requested(void) { return stop_requested != 0; }
void cr_stop_clear(void) { stop_requested = 0; }

void cr_run_metrics_callback(cudarl_metrics_fn fn, void *user, int64_t step, int64_t iteration,
                             const char *const *names, const double *values, int n) {
    if (!fn) return;
    const cudarl_metrics m = {step, iteration, n, names, values};
    if (fn(&m, user)) cudarl_request_stop();
}

cudarl_status cr_run_find_env(const char *env_id, const cudarl_env_def **def) {
    *def = cr_env_def_find(env_id);
    if (*def) return CUDARL_OK;
    CR_TRY(cr_env_check_built(env_id, "--env-id "));
    char list[512] = "";
    for (const char *const *n = cudarl_env_names(); *n; n++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 n == cudarl_env_names() ? "" : ", ", *n);
    return cr_fail(CUDARL_ERR_INVALID_ARG, "--env-id '%s' is not a known environment; choose one "
                   "of: %s", env_id, list);
}

cudarl_status cr_run_save_config(const char *run_dir, const char *toml, cr_tb_writer *tb) {
    char path[600];
    snprintf(path, sizeof path, "%s/config.toml", run_dir);
    cr_out_file out;
    CR_TRY(cr_out_open(&out, path, "run config"));
    cr_out_write(&out, toml, strlen(toml));
    CR_TRY(cr_out_commit(&out));
    /* CleanRL's hyperparameters text: a Markdown table of the `key = value` lines */
    static const char head[] = "|param|value|\n|-|-|\n";
    size_t cap = sizeof head + 2 * strlen(toml) + 16, n = 0;
    char *md = malloc(cap);
    if (!md) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    n += (size_t)snprintf(md, cap, "%s", head);
    for (const char *line = toml; *line;) {
        const char *end = strchr(line, '\n'), *eq = strstr(line, " = ");
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len && line[0] != '#' && line[0] != '[' && eq && eq < line + len)
            n += (size_t)snprintf(md + n, cap - n, "|%.*s|%.*s|\n", (int)(eq - line), line,
                                  (int)(line + len - eq - 3), eq + 3);
        line += len + (end != NULL);
    }
    if (n && md[n - 1] == '\n') md[--n] = 0;
    cudarl_status s = cr_tb_text(tb, 0, "hyperparameters", md);
    free(md);
    return s;
}
