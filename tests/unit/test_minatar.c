/* The five MinAtar env defs on their own: shapes and metadata, the random draws and the sticky
 * action, each action on a fresh episode, reset states, binary observations with one player
 * cell, determinism (same seed and stream -> same trajectory, another stream -> another one),
 * Freeway's fixed episode length and Seaquest's list capacities. The rules themselves are held
 * against the minatar package by test_minatar_ref. */
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_asterix_step.h"
#include "env/minatar/minatar_breakout_step.h"
#include "env/minatar/minatar_freeway_step.h"
#include "env/minatar/minatar_seaquest_step.h"
#include "env/minatar/minatar_space_invaders_step.h"

#define MAX_OBS 1000
#define MAX_STATE_BYTES 4096
#define RUN_STEPS 20000

typedef struct game {
    const cudarl_env_def *def;
    const char *id;
    int channels, num_actions;
    int player_channel; /* holds exactly one cell in every observation */
} game;

static const game games[] = {
    {&cr_minatar_breakout_def, "MinAtar/Breakout-v1", 4, 3, 0},
    {&cr_minatar_asterix_def, "MinAtar/Asterix-v1", 4, 5, 0},
    {&cr_minatar_freeway_def, "MinAtar/Freeway-v1", 7, 3, 0},
    {&cr_minatar_seaquest_def, "MinAtar/Seaquest-v1", 10, 6, 0},
    {&cr_minatar_space_invaders_def, "MinAtar/SpaceInvaders-v1", 6, 4, 0},
};
#define NUM_GAMES ((int)(sizeof games / sizeof games[0]))

/* An env's state, aligned as the batch aligns it. */
typedef struct env_mem {
    _Alignas(64) unsigned char bytes[MAX_STATE_BYTES];
} env_mem;

/* What one run of an env under a random policy saw. */
typedef struct run_stats {
    uint64_t hash;          /* FNV-1a over every observation, reward and flag */
    long episodes;
    double total_reward;
    long min_len, max_len;
} run_stats;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Every cell is 0 or 1 and the player channel holds exactly one cell. */
static void check_obs(const game *g, const uint8_t *obs, long step) {
    int player = 0;
    for (int i = 0; i < g->channels * 100; i++) {
        CHECK_MSG(obs[i] <= 1, "%s step %ld: obs[%d] = %d", g->id, step, i, obs[i]);
        player += i / 100 == g->player_channel && obs[i];
    }
    CHECK_MSG(player == 1, "%s step %ld: %d player cells", g->id, step, player);
}

/* Runs `steps` steps of uniformly random actions (from Philox stream (99, action_stream)) on env
 * (seed, index), resetting at each termination; checks every observation. */
static run_stats run(const game *g, uint64_t seed, uint64_t index, uint64_t action_stream,
                     long steps, env_mem *m) {
    const cudarl_env_def *d = g->def;
    uint8_t obs[MAX_OBS];
    cr_philox_state pick;
    cr_philox_seed(&pick, 99, action_stream);
    run_stats st = {.hash = 14695981039346656037ull, .min_len = -1};
    d->seed(m->bytes, seed, index);
    d->reset(m->bytes, obs);
    check_obs(g, obs, 0);
    st.hash = fnv(st.hash, obs, (size_t)g->channels * 100);
    long len = 0;
    for (long t = 1; t <= steps; t++) {
        int32_t a = (int32_t)(cr_philox_next_u32(&pick) % (uint32_t)d->num_actions);
        float reward;
        uint8_t term;
        d->step(m->bytes, a, obs, &reward, &term);
        check_obs(g, obs, t);
        CHECK_MSG(reward >= 0 && reward <= 10 && reward == (float)(int)reward,
                  "%s step %ld: reward %g", g->id, t, (double)reward);
        CHECK(term <= 1);
        st.hash = fnv(fnv(fnv(st.hash, obs, (size_t)g->channels * 100), &reward, 4), &term, 1);
        st.total_reward += reward;
        len++;
        if (term) {
            st.episodes++;
            if (st.min_len < 0 || len < st.min_len) st.min_len = len;
            if (len > st.max_len) st.max_len = len;
            len = 0;
            d->reset(m->bytes, obs);
            check_obs(g, obs, t);
        }
    }
    return st;
}

static void test_defs(void) {
    for (int i = 0; i < NUM_GAMES; i++) {
        const game *g = &games[i];
        const cudarl_env_def *d = g->def;
        CHECK_MSG(!strcmp(d->id, g->id), "id '%s', expected '%s'", d->id, g->id);
        CHECK(d->obs_rank == 3 && d->obs_dtype == CUDARL_OBS_U8);
        CHECK_MSG(d->obs_shape[0] == g->channels && d->obs_shape[1] == 10 &&
                  d->obs_shape[2] == 10, "%s: obs_shape (%d, %d, %d)", d->id, d->obs_shape[0],
                  d->obs_shape[1], d->obs_shape[2]);
        CHECK_MSG(d->num_actions == g->num_actions, "%s: %d actions", d->id, d->num_actions);
        CHECK_MSG(d->max_episode_steps == 0, "%s: minatar registers no time limit", d->id);
        CHECK(d->solved_return > 0 && d->state_bytes > 0 && d->state_bytes <= MAX_STATE_BYTES);
        CHECK(d->seed && d->reset && d->step);
    }
    CHECK(cr_minatar_breakout_def.solved_return == 10.0);
    CHECK(cr_minatar_breakout_def.state_bytes == sizeof(cr_minatar_breakout_state));
    CHECK(cr_minatar_seaquest_def.state_bytes == sizeof(cr_minatar_seaquest_state));
}

/* rand() in [0, 1) with mean 1/2; randint(1, 9) covers 1..8 evenly; the sticky action repeats
 * the previous action with probability 0.1. */
static void test_draws(void) {
    cr_philox_state rng;
    cr_philox_seed(&rng, 5, 0);
    enum { N = 200000 };
    double sum = 0;
    long counts[10] = {0}, repeats = 0;
    for (int i = 0; i < N; i++) {
        double u = cr_minatar_rand(&rng);
        CHECK(u >= 0 && u < 1);
        sum += u;
        int k = cr_minatar_randint(&rng, 1, 9);
        CHECK_MSG(k >= 1 && k <= 8, "randint(1, 9) gave %d", k);
        counts[k]++;
    }
    CHECK_CLOSE("mean of rand()", sum / N, 0.5, 0.005, 0);
    for (int k = 1; k <= 8; k++) CHECK_CLOSE("randint(1, 9) frequency", counts[k] / (double)N,
                                             1.0 / 8, 0.005, 0);
    int32_t last = CR_MINATAR_NOOP;
    for (int i = 0; i < N; i++) {
        int want = 1 + i % 5; /* never the previous action */
        repeats += cr_minatar_sticky(&rng, &last, want) != want;
    }
    CHECK_CLOSE("sticky action frequency", repeats / (double)N, 0.1, 0.004, 0);
}

/* Every action from a fresh episode gives a valid observation, a reward and a flag. */
static void test_each_action(void) {
    static env_mem m;
    uint8_t obs[MAX_OBS];
    for (int i = 0; i < NUM_GAMES; i++) {
        const game *g = &games[i];
        for (int a = 0; a < g->def->num_actions; a++) {
            float reward = -1;
            uint8_t term = 2;
            g->def->seed(m.bytes, 11, (uint64_t)a);
            g->def->reset(m.bytes, obs);
            for (int t = 0; t < 20; t++) {
                g->def->step(m.bytes, a, obs, &reward, &term);
                check_obs(g, obs, t + 1);
                CHECK_MSG(reward >= 0 && term <= 1, "%s action %d: reward %g terminated %d",
                          g->id, a, (double)reward, term);
                if (term) break;
            }
        }
    }
}

/* Cell (y, x) of channel c of obs (C, 10, 10). */
static int cell(const uint8_t *obs, int c, int y, int x) { return obs[c * 100 + y * 10 + x]; }

static int plane_count(const uint8_t *obs, int c) {
    int n = 0;
    for (int k = 0; k < 100; k++) n += obs[c * 100 + k];
    return n;
}

/* The first observation of each game, as MinAtar's reset() leaves the game. */
static void test_reset_states(void) {
    static env_mem m;
    uint8_t obs[MAX_OBS];
    int starts[2] = {0, 0};
    for (uint64_t k = 0; k < 64; k++) {
        cr_minatar_breakout_def.seed(m.bytes, 3, k);
        cr_minatar_breakout_def.reset(m.bytes, obs);
        CHECK(cell(obs, 0, 9, 4) && plane_count(obs, 0) == 1 && plane_count(obs, 3) == 30);
        for (int x = 0; x < 10; x++) CHECK(cell(obs, 3, 1, x) && cell(obs, 3, 3, x));
        CHECK(cell(obs, 1, 3, 0) != cell(obs, 1, 3, 9) && plane_count(obs, 1) == 1);
        starts[cell(obs, 1, 3, 9)]++;
        CHECK(!memcmp(obs + 100, obs + 200, 100)); /* the trail starts under the ball */
    }
    CHECK_MSG(starts[0] > 16 && starts[1] > 16, "Breakout starts: %d left, %d right", starts[0],
              starts[1]);

    cr_minatar_asterix_def.seed(m.bytes, 3, 0);
    cr_minatar_asterix_def.reset(m.bytes, obs);
    CHECK(cell(obs, 0, 5, 5) && plane_count(obs, 0) == 1);
    for (int c = 1; c < 4; c++) CHECK(plane_count(obs, c) == 0);

    cr_minatar_freeway_def.seed(m.bytes, 3, 0);
    cr_minatar_freeway_def.reset(m.bytes, obs);
    CHECK(cell(obs, 0, 9, 4) && plane_count(obs, 0) == 1 && plane_count(obs, 1) == 8);
    for (int y = 1; y <= 8; y++) {
        CHECK(cell(obs, 1, y, 0));
        int trails = 0;
        for (int c = 2; c < 7; c++) trails += cell(obs, c, y, 1) + cell(obs, c, y, 9);
        CHECK_MSG(trails == 1, "Freeway lane %d: %d trail cells", y, trails);
    }

    cr_minatar_seaquest_def.seed(m.bytes, 3, 0);
    cr_minatar_seaquest_def.reset(m.bytes, obs);
    CHECK(cell(obs, 0, 0, 5) && cell(obs, 1, 0, 6) && plane_count(obs, 7) == 10);
    CHECK(plane_count(obs, 8) == 0 && plane_count(obs, 9) == 0 && plane_count(obs, 5) == 0);

    cr_minatar_space_invaders_def.seed(m.bytes, 3, 0);
    cr_minatar_space_invaders_def.reset(m.bytes, obs);
    CHECK(cell(obs, 0, 9, 5) && plane_count(obs, 1) == 24 && plane_count(obs, 2) == 24);
    CHECK(cell(obs, 1, 0, 2) && cell(obs, 1, 3, 7) && !cell(obs, 1, 4, 2) && !cell(obs, 1, 0, 1));
    CHECK(plane_count(obs, 3) == 0 && plane_count(obs, 4) == 0 && plane_count(obs, 5) == 0);
}

/* Same seed and stream -> the same trajectory; another stream or seed -> another one. */
static void test_determinism(void) {
    static env_mem m;
    for (int i = 0; i < NUM_GAMES; i++) {
        const game *g = &games[i];
        run_stats a = run(g, 42, 7, 0, RUN_STEPS, &m);
        run_stats b = run(g, 42, 7, 0, RUN_STEPS, &m);
        run_stats c = run(g, 42, 8, 0, RUN_STEPS, &m);
        run_stats e = run(g, 43, 7, 0, RUN_STEPS, &m);
        CHECK_MSG(a.hash == b.hash && a.episodes == b.episodes, "%s: same seed, two trajectories",
                  g->id);
        CHECK_MSG(a.hash != c.hash, "%s: streams 7 and 8 gave the same trajectory", g->id);
        CHECK_MSG(a.hash != e.hash, "%s: seeds 42 and 43 gave the same trajectory", g->id);
        CHECK_MSG(a.episodes >= 5, "%s: only %ld episodes in %d random steps", g->id, a.episodes,
                  RUN_STEPS);
        printf("test_minatar: %s: %ld random episodes, mean return %.3f, length %ld..%ld\n",
               g->id, a.episodes, a.total_reward / (double)a.episodes, a.min_len, a.max_len);
    }
}

/* Freeway always ends on its 2501st step, terminated (MinAtar's terminate_timer). */
static void test_freeway_length(void) {
    static env_mem m;
    run_stats st = run(&games[2], 1, 0, 1, 3 * 2501, &m);
    CHECK_MSG(st.episodes == 3 && st.min_len == 2501 && st.max_len == 2501,
              "Freeway: %ld episodes of %ld..%ld steps", st.episodes, st.min_len, st.max_len);
}

/* Seaquest's lists never fill past their proven bounds, random play or fast enemies. */
static void test_seaquest_capacity(void) {
    static cr_minatar_seaquest_state s;
    uint8_t obs[MAX_OBS];
    float reward;
    uint8_t term;
    cr_philox_state pick;
    cr_philox_seed(&pick, 7, 0);
    int max_enemies = 0, max_bullets = 0;
    for (int episode = 0; episode < 40; episode++) {
        cr_minatar_seaquest_seed(&s, 5, (uint64_t)episode);
        cr_minatar_seaquest_reset(&s, obs);
        /* the most crowded sea: the fastest spawns and moves the ramp reaches */
        s.e_spawn_speed = 1;
        s.move_speed = 2;
        for (int t = 0; t < 2000 && !s.terminal; t++) {
            /* noop, left or up: the sub stays on the surface, out of the enemies' rows 1-8 */
            int32_t a = (int32_t)(cr_philox_next_u32(&pick) % 3);
            cr_minatar_seaquest_step(&s, a, obs, &reward, &term);
            if (s.n_fish + s.n_subs > max_enemies) max_enemies = s.n_fish + s.n_subs;
            if (s.n_e_bullets > max_bullets) max_bullets = s.n_e_bullets;
            CHECK_MSG(!s.overflow, "Seaquest list overflow at step %d: %d fish, %d subs, %d "
                      "bullets, %d divers", t, s.n_fish, s.n_subs, s.n_e_bullets, s.n_divers);
        }
    }
    CHECK_MSG(max_enemies > 10, "the crowded sea held only %d enemies", max_enemies);
    printf("test_minatar: Seaquest at full speed: at most %d enemies (capacity %d each list), %d "
           "enemy bullets (capacity %d)\n", max_enemies, CR_SEAQUEST_MAX_ENEMIES, max_bullets,
           CR_SEAQUEST_MAX_E_BULLETS);
}

int main(void) {
    test_defs();
    test_draws();
    test_each_action();
    test_reset_states();
    test_determinism();
    test_freeway_length();
    test_seaquest_capacity();
    printf("test_minatar: ok\n");
    return 0;
}
