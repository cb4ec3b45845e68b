/* DQN resumes bit for bit on the CPU: a run stopped half way (its metrics callback asks it to
 * stop, as Ctrl-C does) and resumed from its checkpoint ends with the same tensors (weights,
 * target, Adam, RNG streams, envs, the whole replay buffer with its sum tree), the same metadata
 * but the run name, and the same metrics.csv but the wall-clock columns, as a run that went
 * straight through. For the env batch (CartPole-v1), the pool on CPU threads with prioritized
 * replay, double DQN and Huber, and minatar-cnn on a MinAtar game; the replay wraps around in
 * each. Then what a resume refuses: another env, Q-network, env placement, --num-envs,
 * --buffer-size, --prioritized, a total already reached, a checkpoint without training state.
 * With `cuda` (tests/gpu, label gpu) the same runs on a CUDA context: CartPole's CUDA twin with
 * its captured graph blocks (uniform, and prioritized + double DQN + Huber), the pool, and
 * minatar-cnn on the MinAtar twin; the replay's CUDA twin saves and restores through the same
 * interface. The refusals are the CPU run's.
 *     test_dqn_resume RUNS_DIR [cpu|cuda] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "io/safetensors.h"
#include "metrics_csv.h"

static const char *runs;
static cudarl_ctx *ctx;
static cudarl_device_kind device = CUDARL_DEVICE_CPU;

/* Stops the run at the first report point at or past *(int64_t *)user. */
static int stop_at(const cudarl_metrics *m, void *user) {
    return m->global_step >= *(const int64_t *)user;
}

static void run_path(char *buf, size_t cap, const char *name, const char *file) {
    snprintf(buf, cap, "%s/%s/%s", runs, name, file);
}

/* metrics.csv of run `name` without the wall-clock columns (charts/SPS, time/elapsed_s), as one
 * string (the caller frees it). */
static char *metrics_without_timing(const char *name) {
    char path[700], line[4096];
    run_path(path, sizeof path, name, "metrics.csv");
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    CHECK(out != NULL);
    int sps = -1, elapsed = -1, first = 1;
    while (fgets(line, sizeof line, f)) {
        size_t len;
        const char *fld;
        for (int k = 0; (fld = csv_field(line, k, &len)) != NULL; k++) {
            if (first && !strncmp(fld, "charts/SPS", len)) sps = k;
            if (first && !strncmp(fld, "time/elapsed_s", len)) elapsed = k;
            if (k == sps || k == elapsed) continue;
            CHECK(n + len + 2 < cap);
            memcpy(out + n, fld, len), n += len, out[n++] = ',';
        }
        out[n++] = '\n';
        first = 0;
    }
    fclose(f);
    CHECK_MSG(sps >= 0 && elapsed >= 0, "%s lacks its timing columns", path);
    out[n] = 0;
    return out;
}

/* Every tensor of run a's checkpoint equals run b's bitwise, and every metadata value but the
 * run name; both hold the same tensors. */
static void same_checkpoints(const char *a, const char *b) {
    char pa[700], pb[700];
    run_path(pa, sizeof pa, a, "model.safetensors");
    run_path(pb, sizeof pb, b, "model.safetensors");
    cr_st_file *fa, *fb;
    CHECK_OK(cr_st_open(&fa, pa));
    CHECK_OK(cr_st_open(&fb, pb));
    CHECK_MSG(cr_st_count(fa) == cr_st_count(fb), "%s holds %d tensors, %s %d", pa,
              cr_st_count(fa), pb, cr_st_count(fb));
    int state = 0;
    for (int i = 0; i < cr_st_count(fa); i++) {
        const cr_st_tensor *t = cr_st_at(fa, i);
        cr_st_tensor u;
        CHECK_OK(cr_st_find(fb, t->name, &u));
        CHECK_MSG(t->dtype == u.dtype && t->nbytes == u.nbytes &&
                      !memcmp(t->data, u.data, t->nbytes),
                  "tensor %s differs between the straight run and the resumed one", t->name);
        state += !strncmp(t->name, "state.replay.", 13);
    }
    CHECK_MSG(state >= 7, "%s holds %d state.replay.* tensors, expected 7 or 8", pa, state);
    const char *keys[] = {"global_step", "iteration", "total_timesteps", "buffer_size", "seed",
                          "learning_rate", "env_device", "policy", "precision"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *x = cr_st_meta(fa, keys[k]), *y = cr_st_meta(fb, keys[k]);
        CHECK_MSG(x && y && !strcmp(x, y), "metadata %s: %s vs %s", keys[k], x ? x : "-",
                  y ? y : "-");
    }
    cr_st_close(fa);
    cr_st_close(fb);
    char *ma = metrics_without_timing(a), *mb = metrics_without_timing(b);
    CHECK_MSG(!strcmp(ma, mb), "metrics.csv of %s and %s differ:\n%s\nvs\n%s", a, b, ma, mb);
    free(ma);
    free(mb);
}

/* Runs c straight as run `tag`_a, and as `tag`_b stopped at half the steps and resumed (its cfg
 * read back from the checkpoint); checks that they agree. Returns the resumed checkpoint's path
 * in ckpt. */
static void straight_and_resumed(cudarl_dqn_config c, const char *tag, char *ckpt, size_t cap) {
    cudarl_train_summary s;
    char a[64], b[64];
    snprintf(a, sizeof a, "%s_a", tag);
    snprintf(b, sizeof b, "%s_b", tag);
    snprintf(c.run_name, sizeof c.run_name, "%s", a);
    CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
    CHECK_MSG(!s.interrupted && s.global_step == c.total_timesteps, "%s: straight run ended at "
              "%lld", tag, (long long)s.global_step);
    int64_t half = c.total_timesteps / 2;
    cudarl_dqn_config h = c;
    snprintf(h.run_name, sizeof h.run_name, "%s", b);
    h.on_metrics = stop_at, h.on_metrics_user = &half;
    CHECK_OK(cudarl_dqn_train(ctx, &h, &s));
    CHECK_MSG(s.interrupted && s.global_step >= half && s.global_step < c.total_timesteps,
              "%s: the stopped run ended at step %lld (interrupted %d)", tag,
              (long long)s.global_step, s.interrupted);
    const int64_t stopped = s.global_step;
    run_path(ckpt, cap, b, "model.safetensors");
    cudarl_dqn_config r;
    CHECK_OK(cudarl_dqn_config_load(ckpt, &r));
    CHECK_MSG(r.seed == c.seed && r.total_timesteps == c.total_timesteps &&
                  r.buffer_size == c.buffer_size && r.prioritized == c.prioritized &&
                  r.double_dqn == c.double_dqn && r.huber == c.huber &&
                  r.learning_rate == c.learning_rate && r.num_envs == c.num_envs &&
                  !strcmp(r.policy, c.policy) && !strcmp(r.env_id, c.env_id) &&
                  !strcmp(r.run_name, b),
              "%s: cudarl_dqn_config_load does not give the run's hyperparameters back", tag);
    r.device = c.device, r.threads = c.threads, r.env_threads = c.env_threads, r.quiet = 1;
    r.env_device = c.env_device;
    snprintf(r.runs_dir, sizeof r.runs_dir, "%s", runs);
    CHECK_OK(cudarl_dqn_train_resume(ctx, &r, ckpt, &s));
    CHECK_MSG(!s.interrupted && s.global_step == c.total_timesteps &&
                  s.run_steps == c.total_timesteps - stopped,
              "%s: the resumed run ended at %lld after %lld steps", tag, (long long)s.global_step,
              (long long)s.run_steps);
    same_checkpoints(a, b);
    printf("%s: stopped at step %lld of %lld, resumed: checkpoint and metrics equal the straight "
           "run's\n", tag, (long long)stopped, (long long)c.total_timesteps);
}

static cudarl_dqn_config small(const char *env) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, env);
    c.num_envs = 4, c.total_timesteps = 2400, c.buffer_size = 600, c.learning_starts = 200;
    c.train_frequency = 4, c.batch_size = 16, c.target_network_frequency = 100;
    c.hidden1 = c.hidden2 = 16, c.exploration_fraction = 0.3, c.learning_rate = 1e-3;
    c.threads = 1, c.env_threads = 1, c.device = device, c.quiet = 1;
    snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
    return c;
}

/* A resume of ckpt with cfg `r` is refused with `status` and a message holding each needle. */
static void refused(const char *what, cudarl_dqn_config r, const char *ckpt, cudarl_status status,
                    const char *n1, const char *n2) {
    cudarl_train_summary s;
    snprintf(r.runs_dir, sizeof r.runs_dir, "%s", runs);
    cudarl_status got = cudarl_dqn_train_resume(ctx, &r, ckpt, &s);
    const char *e = cudarl_last_error();
    CHECK_MSG(got == status && strstr(e, n1) && (!n2 || strstr(e, n2)),
              "%s: expected %s naming '%s'%s%s, got %s: %s", what, cudarl_status_name(status), n1,
              n2 ? " and " : "", n2 ? n2 : "", cudarl_status_name(got), e);
    printf("refused: %s (%s)\n", what, e);
}

static void refusals(const char *ckpt, const char *pool_ckpt) {
    cudarl_dqn_config r;
    CHECK_OK(cudarl_dqn_config_load(ckpt, &r));
    r.device = CUDARL_DEVICE_CPU, r.threads = 1, r.env_threads = 1, r.quiet = 1;
    cudarl_dqn_config x = r;
    x.num_envs = 2;
    refused("another --num-envs", x, ckpt, CUDARL_ERR_MISMATCH, "num_envs = 4", "--num-envs");
    x = r, x.buffer_size = 800;
    refused("another --buffer-size", x, ckpt, CUDARL_ERR_MISMATCH, "buffer_size = 600",
            "--buffer-size");
    x = r, x.hidden1 = 32;
    refused("another --hidden1", x, ckpt, CUDARL_ERR_MISMATCH, "hidden1", "--hidden1");
    x = r, x.prioritized = 1;
    refused("--prioritized added", x, ckpt, CUDARL_ERR_MISMATCH, "prioritized", "--prioritized");
    x = r, snprintf(x.env_id, sizeof x.env_id, "Acrobot-v1");
    refused("another env", x, ckpt, CUDARL_ERR_MISMATCH, "CartPole-v1", "--env-id");
    x = r, x.env_device = CUDARL_DEVICE_CPU;
    refused("envs on CPU threads instead of the env batch", x, ckpt, CUDARL_ERR_MISMATCH,
            "on CPU threads", "--env-device");
    CHECK_OK(cudarl_dqn_config_load(pool_ckpt, &x));
    x.device = CUDARL_DEVICE_CPU, x.threads = 1, x.env_threads = 1, x.quiet = 1;
    x.env_device = CUDARL_DEVICE_AUTO;
    refused("the env batch instead of CPU threads", x, pool_ckpt, CUDARL_ERR_MISMATCH,
            "by the env batch", "--env-device");
    x = r, x.total_timesteps = 2400;
    refused("a total already reached", x, ckpt, CUDARL_ERR_INVALID_ARG, "already at step 2400",
            "raise --total-timesteps");
    x = r, x.total_timesteps = 4800;
    refused("no path", x, "", CUDARL_ERR_INVALID_ARG, "no checkpoint path", NULL);
    /* a checkpoint written before DQN resumed: its tensors without state.*, metadata without
     * iteration and env_device */
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, ckpt));
    cr_st_writer *w = malloc(sizeof *w);
    CHECK(w != NULL);
    cr_st_writer_init(w);
    for (int i = 0; i < cr_st_count(f); i++) {
        const cr_st_tensor *t = cr_st_at(f, i);
        if (!strncmp(t->name, "state.", 6)) continue;
        CHECK_OK(cr_st_add_tensor(w, t->name, t->dtype, t->ndim, t->shape, t->data));
    }
    const char *keep[] = {"format", "format_version", "algo", "policy", "env_id", "obs_dim",
                          "num_actions", "hidden1", "hidden2", "seed", "total_timesteps",
                          "learning_rate", "num_envs", "buffer_size", "gamma", "tau",
                          "target_network_frequency", "batch_size", "start_e", "end_e",
                          "exploration_fraction", "learning_starts", "train_frequency",
                          "double_dqn", "prioritized", "huber", "max_grad_norm", "precision",
                          "run_name", "global_step"};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
        if (cr_st_meta(f, keep[k])) CHECK_OK(cr_st_add_meta(w, keep[k], cr_st_meta(f, keep[k])));
    char old_dir[700], old[760];
    snprintf(old_dir, sizeof old_dir, "%s/old_format", runs);
    mkdir(old_dir, 0777);
    snprintf(old, sizeof old, "%s/model.safetensors", old_dir);
    CHECK_OK(cr_st_write_atomic(w, old));
    free(w);
    cr_st_close(f);
    x = r, x.total_timesteps = 4800;
    refused("a checkpoint without training state", x, old, CUDARL_ERR_FORMAT,
            "without its training state", "start a new run");
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 2 || (argc == 3 && (!strcmp(argv[2], "cpu") || !strcmp(argv[2], "cuda"))),
              "usage: test_dqn_resume RUNS_DIR [cpu|cuda]");
    runs = argv[1];
    if (argc == 3 && !strcmp(argv[2], "cuda")) device = CUDARL_DEVICE_CUDA;
    const char *side = device == CUDARL_DEVICE_CUDA ? "cuda" : "cpu";
    mkdir(runs, 0777);
    cudarl_log_set_level(CUDARL_LOG_WARN);
    CHECK_OK(cudarl_ctx_init(&ctx, device, 0));
    char tag[64], batch_ckpt[700], pool_ckpt[700], cnn_ckpt[700];
    snprintf(tag, sizeof tag, "%s_batch_%d", side, (int)getpid());
    straight_and_resumed(small("CartPole-v1"), tag, batch_ckpt, sizeof batch_ckpt);

    cudarl_dqn_config c = small("CartPole-v1");
    c.prioritized = 1, c.double_dqn = 1, c.huber = 1, c.max_grad_norm = 10;
    if (device == CUDARL_DEVICE_CUDA) { /* the CUDA twin's graphs with prioritized replay */
        snprintf(tag, sizeof tag, "%s_batch_prio_%d", side, (int)getpid());
        straight_and_resumed(c, tag, pool_ckpt, sizeof pool_ckpt);
    }
    c.env_device = CUDARL_DEVICE_CPU;
    snprintf(tag, sizeof tag, "%s_pool_prio_%d", side, (int)getpid());
    straight_and_resumed(c, tag, pool_ckpt, sizeof pool_ckpt);

    c = small("MinAtar/Breakout-v1");
    snprintf(c.policy, sizeof c.policy, "minatar-cnn");
    /* the CPU steps MinAtar on threads; CUDA on its image twin */
    c.env_device = device == CUDARL_DEVICE_CUDA ? CUDARL_DEVICE_AUTO : CUDARL_DEVICE_CPU;
    c.total_timesteps = 800, c.learning_starts = 100, c.buffer_size = 200, c.batch_size = 8;
    /* on CUDA the stop comes through the metrics pipe, up to its 4 slots of 100-step blocks
     * behind the host: 800 steps would be queued to the end before the stop arrives */
    if (device == CUDARL_DEVICE_CUDA) c.total_timesteps = 2400;
    snprintf(tag, sizeof tag, "%s_cnn_%d", side, (int)getpid());
    straight_and_resumed(c, tag, cnn_ckpt, sizeof cnn_ckpt);
    if (device == CUDARL_DEVICE_CPU) {
        cudarl_dqn_config r;
        CHECK_OK(cudarl_dqn_config_load(cnn_ckpt, &r));
        r.device = CUDARL_DEVICE_CPU, r.threads = 1, r.env_threads = 1, r.quiet = 1;
        r.total_timesteps = 1600;
        snprintf(r.policy, sizeof r.policy, "mlp");
        refused("the MLP for a minatar-cnn checkpoint", r, cnn_ckpt, CUDARL_ERR_MISMATCH,
                "minatar-cnn", "--policy minatar-cnn");
        refusals(batch_ckpt, pool_ckpt);
    }
    cudarl_ctx_free(ctx);
    printf("test_dqn_resume (%s): ok\n", side);
    return 0;
}
