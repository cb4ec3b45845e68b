/* PPO data parallel as a job of threads (cudarl_dist_run_threads, the host side of --num-gpus N;
 * docs/multigpu.md), on CPU contexts so that CI runs it: the trainer's exchanges (the gradient
 * mean, the metrics, the weight check, the checkpoint's gather) go through the threads'
 * communicator. Two threads share CartPole-v1's 8 envs: the first iteration's episodes equal one
 * process's (each rank's rollout is its slice of it), the ranks' weights stay identical (the
 * trainer's check would fail the run), and a second job repeats the first bit for bit (every
 * metrics.csv value but timing, the checkpoint's tensors byte for byte).
 * Usage: test_dist_threads RUNS_DIR */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"

static const char *runs;

static void config(cudarl_ppo_config *cfg, const char *name) {
    cudarl_ppo_config_default(cfg, "CartPole-v1");
    cfg->device = CUDARL_DEVICE_CPU;
    cfg->seed = 1, cfg->threads = 1, cfg->quiet = 1;
    cfg->num_envs = 8, cfg->num_steps = 128, cfg->total_timesteps = 10240; /* 10 iterations */
    snprintf(cfg->runs_dir, sizeof cfg->runs_dir, "%s", runs);
    snprintf(cfg->run_name, sizeof cfg->run_name, "%s", name);
}

static int rank_main(int rank, void *arg) {
    cudarl_ppo_config cfg;
    config(&cfg, arg);
    CHECK(cudarl_dist_rank() == rank && cudarl_dist_size() == 2);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cudarl_train_summary s;
    cudarl_status st = cudarl_ppo_train(ctx, &cfg, NULL, &s);
    if (st != CUDARL_OK) fprintf(stderr, "rank %d: %s\n", rank, cudarl_last_error());
    cudarl_ctx_free(ctx);
    return st == CUDARL_OK ? 0 : 1;
}

/* metrics.csv's rows with the timing columns blanked; *n rows (header included). */
static char **rows(const char *name, int *n) {
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/%s/metrics.csv", runs, name);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    char **out = NULL;
    int sps = -1, elapsed = -1;
    *n = 0;
    while (fgets(line, sizeof line, f)) {
        char kept[4096] = "", *save = NULL;
        int k = 0;
        for (char *t = strtok_r(line, ",\n", &save); t; t = strtok_r(NULL, ",\n", &save), k++) {
            if (*n == 0 && !strcmp(t, "charts/SPS")) sps = k;
            if (*n == 0 && !strcmp(t, "time/elapsed_s")) elapsed = k;
            if (*n > 0 && (k == sps || k == elapsed)) t = "-";
            strncat(kept, t, sizeof kept - strlen(kept) - 2);
            strcat(kept, ",");
        }
        out = realloc(out, (size_t)(*n + 1) * sizeof *out);
        CHECK(out && (out[*n] = strdup(kept)));
        (*n)++;
    }
    fclose(f);
    CHECK_MSG(*n > 1 && sps >= 0 && elapsed >= 0, "%s: a header with SPS and elapsed, and rows",
              path);
    return out;
}

/* Field k of a row of rows(). */
static void field(const char *row, int k, char *buf, size_t cap) {
    for (int i = 0; i < k; i++) row = strchr(row, ',') + 1;
    size_t len = strcspn(row, ",");
    snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), row);
}

static int column(char **r, const char *name) {
    char buf[64];
    for (int k = 0;; k++) {
        field(r[0], k, buf, sizeof buf);
        CHECK_MSG(buf[0], "no column %s", name);
        if (!strcmp(buf, name)) return k;
    }
}

/* The checkpoint's bytes past its header (every tensor). */
static unsigned char *tensors(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", runs, name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    uint64_t head;
    CHECK(fread(&head, 8, 1, f) == 1 && fseek(f, 0, SEEK_END) == 0);
    long end = ftell(f);
    CHECK(end > (long)(8 + head) && fseek(f, (long)(8 + head), SEEK_SET) == 0);
    *len = (size_t)end - 8 - head;
    unsigned char *b = malloc(*len);
    CHECK(b && fread(b, 1, *len, f) == *len);
    fclose(f);
    return b;
}

int main(int argc, char **argv) {
    static char dir[400]; /* a folder of this process's: the run names repeat */
    const char *parent = argc > 1 ? argv[1] : "dist-threads-runs";
    mkdir(parent, 0755); /* or it exists */
    snprintf(dir, sizeof dir, "%s/%d", parent, (int)getpid());
    runs = dir;
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ppo_config cfg;
    config(&cfg, "one");
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &cfg, NULL, &s));
    cudarl_ctx_free(ctx);
    CHECK(cudarl_dist_run_threads(2, rank_main, "two_a") == 0);
    CHECK(cudarl_dist_run_threads(2, rank_main, "two_b") == 0);
    CHECK(cudarl_dist_size() == 1 && cudarl_dist_rank() == 0);

    int n1, na, nb;
    char **one = rows("one", &n1), **a = rows("two_a", &na), **b = rows("two_b", &nb);
    CHECK_MSG(na == nb && na == n1, "rows: one process %d, jobs %d and %d", n1, na, nb);
    for (int i = 0; i < na; i++)
        CHECK_MSG(!strcmp(a[i], b[i]), "two jobs of 2 threads differ at metrics row %d:\n%s\n%s",
                  i, a[i], b[i]);
    static const char *const same[] = {"charts/episodic_return", "charts/episodic_length",
                                       "charts/episodes"};
    for (int k = 0; k < 3; k++) {
        char x[64], y[64];
        field(one[1], column(one, same[k]), x, sizeof x);
        field(a[1], column(a, same[k]), y, sizeof y);
        CHECK_MSG(x[0] && !strcmp(x, y), "the first iteration's %s: one process %s, 2 threads %s",
                  same[k], x, y);
    }
    size_t la, lb;
    unsigned char *ta = tensors("two_a", &la), *tb = tensors("two_b", &lb);
    CHECK_MSG(la == lb && memcmp(ta, tb, la) == 0, "two jobs' checkpoint tensors differ");
    for (int i = 0; i < na; i++) free(one[i]), free(a[i]), free(b[i]);
    free(one), free(a), free(b), free(ta), free(tb);
    printf("dist_threads: 2 threads' job: the first rollout equals one process's, 10 iterations "
           "repeat bit for bit (metrics, %zu bytes of checkpoint tensors)\n", la);
    return 0;
}
