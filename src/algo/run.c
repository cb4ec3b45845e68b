/* Run folders (creation, naming, refusing to overwrite, metrics.csv across resumes) and the env a
 * config names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo/run.h"
#include "env/env.h"

#include <signal.h>

static cudarl_status make_dir(const char *path) {
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return CUDARL_OK;
    return cr_fail(CUDARL_ERR_IO, "cannot create directory '%s': %s; check --runs-dir", path,
                   strerror(errno));
}

/* Drops rows of metrics.csv past the checkpoint's iteration (written after the last checkpoint
 * of a run that was killed), so a resumed run appends exactly where its state stands. */
static cudarl_status trim_metrics(const char *path, int64_t iteration) {
    FILE *in = fopen(path, "r");
    if (!in) return CUDARL_OK; /* nothing to trim: a fresh file gets its header */
    char tmp[640], line[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fclose(in);
        return cr_fail(CUDARL_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    }
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        const char *comma = strchr(line, ',');
        long long it = comma ? strtoll(comma + 1, NULL, 10) : 0;
        if (first || it <= iteration) fputs(line, out);
        first = 0;
    }
    fclose(in);
    int bad = fflush(out) != 0 || fsync(fileno(out)) != 0;
    bad |= fclose(out) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return cr_fail(CUDARL_ERR_IO, "cannot rewrite '%s': %s", path, strerror(errno));
    }
    return CUDARL_OK;
}

cudarl_status cr_run_open(const char *runs_dir, char *run_name, size_t cap, const char *env_id,
                          const char *algo, uint64_t seed, int64_t resume_iteration,
                          const char *header, char *run_dir, size_t run_dir_cap, FILE **csv) {
    int resuming = resume_iteration >= 0;
    *csv = NULL;
    CR_TRY(make_dir(runs_dir));
    if (!run_name[0]) {
        snprintf(run_name, cap, "%s__%s__%llu__%lld", env_id, algo, (unsigned long long)seed,
                 (long long)time(NULL));
        /* an env id may hold '/' (MinAtar/Breakout-v1): one folder, not two */
        for (char *c = run_name; *c; c++)
            if (*c == '/') *c = '-';
    }
    snprintf(run_dir, run_dir_cap, "%s/%s", runs_dir, run_name);
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", run_dir);
    if (!resuming && access(path, F_OK) == 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "run '%s' already has a checkpoint (%s); pass a new "
                       "--run-name, or continue it with --resume %s", run_name, path, path);
    CR_TRY(make_dir(run_dir));
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    if (resuming) CR_TRY(trim_metrics(path, resume_iteration));
    *csv = fopen(path, resuming ? "a" : "w");
    if (!*csv)
        return cr_fail(CUDARL_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    if (!resuming || ftell(*csv) == 0) fputs(header, *csv);
    return CUDARL_OK;
}

static volatile sig_atomic_t stop_requested;

void cudarl_request_stop(void) { stop_requested = 1; }
int cr_stop_requested(void) { return stop_requested != 0; }
void cr_stop_clear(void) { stop_requested = 0; }

cudarl_status cr_run_find_env(const char *env_id, const cudarl_env_def **def) {
    *def = cr_env_def_find(env_id);
    if (*def) return CUDARL_OK;
    char list[512] = "";
    for (const char *const *n = cudarl_env_names(); *n; n++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 n == cudarl_env_names() ? "" : ", ", *n);
    return cr_fail(CUDARL_ERR_INVALID_ARG, "--env-id '%s' is not a known environment; choose one "
                   "of: %s", env_id, list);
}
