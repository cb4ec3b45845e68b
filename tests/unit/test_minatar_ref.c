/* The five MinAtar games against the minatar package: replays traces written by
 * tests/unit/minatar_trace.py, one per game.
 *
 * The Python games ran unmodified except for their RandomState, replaced by cudarl's Philox
 * stream (seed, stream) with MinAtar's rand()/randint() mapped onto it as minatar_common.h maps
 * them. So the C env seeded with that stream draws the same numbers (sticky actions, spawns,
 * Breakout's start side, Freeway's car speeds) and must reproduce every observation (all
 * C x 10 x 10 cells), reward and termination exactly, for every game, across episodes of one
 * unbroken stream. The first mismatch fails with the game, episode, step, channel and the two
 * planes side by side. Usage: test_minatar_ref DIR [GAME ...] (DIR/minatar_<game>.bin). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_seaquest_step.h"

#define TRACE_MAGIC "CRMINAT\0"
#define TRACE_VERSION 1u
#define TRACE_HEADER_BYTES 112 /* magic[8] version channels actions episodes u32, steps seed
                                  stream u64, game[16], minatar[16], philox words u32[8] */
#define MAX_CHANNELS 10
#define MAX_OBS (MAX_CHANNELS * 100)
#define MAX_STATE_BYTES 4096

typedef struct game {
    const char *name; /* file name part and MinAtar module name */
    const cudarl_env_def *def;
} game;

static const game games[] = {
    {"breakout", &cr_minatar_breakout_def},
    {"asterix", &cr_minatar_asterix_def},
    {"freeway", &cr_minatar_freeway_def},
    {"seaquest", &cr_minatar_seaquest_def},
    {"space_invaders", &cr_minatar_space_invaders_def},
};

/* One game's trace being replayed, and what has been compared so far. */
typedef struct replay {
    FILE *f;
    char path[1024];
    const game *g;
    int channels, obs_len, packed_len;
    _Alignas(64) unsigned char state[MAX_STATE_BYTES];
    const char *unit; /* "episode" or "scenario" */
    long episode, step, steps, terminations;
    double total_reward;
} replay;

static void read_bytes(replay *r, void *buf, size_t n, const char *what) {
    CHECK_MSG(fread(buf, 1, n, r->f) == n, "%s: trace ends inside %s (episode %ld)", r->path,
              what, r->episode);
}

/* Unpacks np.packbits bytes into obs (n) of 0/1. */
static void unpack(const unsigned char *packed, int n, uint8_t *obs) {
    for (int i = 0; i < n; i++) obs[i] = (uint8_t)((packed[i / 8] >> (7 - i % 8)) & 1);
}

/* Prints channel c of both observations (C, 10, 10) side by side, '#' set, '.' clear. */
static void print_planes(const uint8_t *want, const uint8_t *got, int c) {
    fprintf(stderr, "channel %d: minatar | cudarl\n", c);
    for (int y = 0; y < 10; y++) {
        for (int x = 0; x < 10; x++) fputc(want[c * 100 + y * 10 + x] ? '#' : '.', stderr);
        fputs(" | ", stderr);
        for (int x = 0; x < 10; x++) fputc(got[c * 100 + y * 10 + x] ? '#' : '.', stderr);
        fputc('\n', stderr);
    }
}

/* Fails at the first cell where obs differs from the trace's, showing that channel. */
static void compare_obs(replay *r, const char *what, const uint8_t *want, const uint8_t *got) {
    for (int i = 0; i < r->obs_len; i++) {
        if (want[i] == got[i]) continue;
        int c = i / 100, y = i % 100 / 10, x = i % 10;
        fflush(stdout);
        print_planes(want, got, c);
        fprintf(stderr, "FAIL %s: %s %ld step %ld (trace step %ld): %s[%d][%d][%d]: minatar %d, "
                "cudarl %d\n", r->g->name, r->unit, r->episode, r->step, r->steps, what, c, y, x,
                want[i], got[i]);
        exit(1);
    }
}

/* Opens DIR/minatar_<game>.bin, checks its header against the env def and the Philox words
 * against ours, and seeds the env with the trace's stream; returns the episode count. */
static uint32_t trace_open(replay *r, const char *dir, uint64_t *steps) {
    snprintf(r->path, sizeof r->path, "%s/minatar_%s.bin", dir, r->g->name);
    r->f = fopen(r->path, "rb");
    CHECK_MSG(r->f, "cannot open MinAtar trace '%s': %s; it is written by "
              "tests/unit/minatar_trace.py (ctest runs it first as test minatar_trace)", r->path,
              strerror(errno));
    unsigned char h[TRACE_HEADER_BYTES];
    uint32_t version, channels, actions, episodes, words[8];
    uint64_t seed, stream;
    char name[17] = {0}, minatar[17] = {0};
    read_bytes(r, h, sizeof h, "the header");
    CHECK_MSG(!memcmp(h, TRACE_MAGIC, 8), "%s is not a cudarl MinAtar trace", r->path);
    memcpy(&version, h + 8, 4);
    memcpy(&channels, h + 12, 4);
    memcpy(&actions, h + 16, 4);
    memcpy(&episodes, h + 20, 4);
    memcpy(steps, h + 24, 8);
    memcpy(&seed, h + 32, 8);
    memcpy(&stream, h + 40, 8);
    memcpy(name, h + 48, 16);
    memcpy(minatar, h + 64, 16);
    memcpy(words, h + 80, 32);
    CHECK_MSG(version == TRACE_VERSION, "%s: trace version %u, this test reads %u", r->path,
              version, TRACE_VERSION);
    CHECK_MSG(!strcmp(name, r->g->name), "%s holds game '%s'", r->path, name);
    const cudarl_env_def *d = r->g->def;
    CHECK_MSG((int)channels == d->obs_shape[0] && (int)actions == d->num_actions,
              "%s: minatar has %u channels and %u actions, %s has %d and %d", r->path, channels,
              actions, d->id, d->obs_shape[0], d->num_actions);
    CHECK(d->state_bytes <= MAX_STATE_BYTES && channels <= MAX_CHANNELS);
    cr_philox_state rng;
    cr_philox_seed(&rng, seed, stream);
    for (int k = 0; k < 8; k++) {
        uint32_t w = cr_philox_next_u32(&rng);
        CHECK_MSG(w == words[k], "%s: word %d of Philox stream (%llu, %llu): the trace script's "
                  "Python Philox gives %08x, cudarl %08x", r->path, k, (unsigned long long)seed,
                  (unsigned long long)stream, words[k], w);
    }
    r->channels = (int)channels;
    r->obs_len = r->channels * 100;
    r->packed_len = (r->obs_len + 7) / 8;
    d->seed(r->state, seed, stream);
    printf("test_minatar_ref: %s: trace of minatar %s: %u episodes, %llu steps, stream (%llu, "
           "%llu)\n", d->id, minatar, episodes, (unsigned long long)*steps,
           (unsigned long long)seed, (unsigned long long)stream);
    return episodes;
}

/* Replays n trace steps on the env, comparing each observation, reward and flag. */
static void replay_steps(replay *r, uint32_t n) {
    const cudarl_env_def *d = r->g->def;
    unsigned char packed[MAX_OBS / 8 + 1], rec[6];
    uint8_t want[MAX_OBS], got[MAX_OBS];
    for (uint32_t k = 0; k < n; k++) {
        float want_reward, reward;
        uint8_t term;
        r->step = (long)k + 1;
        r->steps++;
        read_bytes(r, rec, sizeof rec, "a step");
        read_bytes(r, packed, (size_t)r->packed_len, "a step observation");
        memcpy(&want_reward, rec + 1, 4);
        CHECK_MSG(rec[0] < d->num_actions, "%s: %s %ld step %ld: action %d out of range",
                  r->g->name, r->unit, r->episode, r->step, rec[0]);
        d->step(r->state, rec[0], got, &reward, &term);
        unpack(packed, r->obs_len, want);
        compare_obs(r, "obs", want, got);
        CHECK_MSG(reward == want_reward, "%s: %s %ld step %ld: reward: minatar %g, cudarl %g",
                  r->g->name, r->unit, r->episode, r->step, (double)want_reward, (double)reward);
        CHECK_MSG(term == rec[5], "%s: %s %ld step %ld: terminated: minatar %d, cudarl %d",
                  r->g->name, r->unit, r->episode, r->step, rec[5], term);
        CHECK_MSG(!term || k + 1 == n, "%s: %s %ld step %ld: the trace goes on after the end",
                  r->g->name, r->unit, r->episode, r->step);
        r->total_reward += reward;
        r->terminations += term;
    }
}

/* Resets the env, compares the first observation, and replays the episode's steps. */
static void replay_episode(replay *r) {
    unsigned char packed[MAX_OBS / 8 + 1];
    uint8_t want[MAX_OBS], got[MAX_OBS];
    uint32_t n;
    long before = r->terminations;
    read_bytes(r, &n, 4, "an episode header");
    read_bytes(r, packed, (size_t)r->packed_len, "a reset observation");
    unpack(packed, r->obs_len, want);
    r->step = 0;
    r->g->def->reset(r->state, got);
    compare_obs(r, "reset obs", want, got);
    replay_steps(r, n);
    CHECK_MSG(r->terminations == before + 1, "%s: episode %ld of %u steps never terminated",
              r->g->name, r->episode, n);
}

/* Replays the whole trace of game g from DIR. */
static void replay_game(const game *g, const char *dir) {
    static replay r; /* the env state is large-ish; one at a time */
    memset(&r, 0, sizeof r);
    r.g = g;
    r.unit = "episode";
    uint64_t steps;
    uint32_t episodes = trace_open(&r, dir, &steps);
    for (r.episode = 0; r.episode < (long)episodes; r.episode++) replay_episode(&r);
    CHECK_MSG(fgetc(r.f) == EOF, "%s: bytes after the last episode", r.path);
    CHECK_MSG((uint64_t)r.steps == steps, "%s: header says %llu steps, episodes hold %ld", r.path,
              (unsigned long long)steps, r.steps);
    fclose(r.f);
    printf("test_minatar_ref: %s: ok: %ld steps in %ld episodes identical (every cell, reward and "
           "flag); return %.0f in all\n", g->def->id, r.steps, r.episode, r.total_reward);
}

/* Seaquest from injected states (minatar_trace.py's record_seaquest_scenarios): each scenario
 * seeds the env with its stream, overwrites the state with the Python game's, compares the
 * observation of that state and replays its steps. Random mid-game states with value-equal
 * list elements and crowds around the sub reach the list-mutation paths of Env.act (a sub shot
 * on its move still firing, equal objects removed by list.remove, ...) that episodes rarely do. */
#define SCENARIO_MAGIC "CRMASQS\0"
#define SCENARIO_HEADER_BYTES 24 /* magic[8] version u32 count u32 seed u64 */
#define SCENARIO_BYTES 65        /* stream u64, scalars i32[13], list lengths u8[5] */

/* Reads one scenario's list of `len` elements into v (capacity cap), count *n. */
static void read_list(replay *r, cr_minatar_seaquest_obj *v, int32_t *n, int len, int cap) {
    CHECK_MSG(len <= cap, "%s: scenario %ld: a list of %d, capacity %d", r->path, r->episode,
              len, cap);
    for (int i = 0; i < len; i++) {
        int8_t f[5];
        read_bytes(r, f, 5, "a list element");
        v[i] = (cr_minatar_seaquest_obj){f[0], f[1], f[2], f[3], f[4]};
    }
    *n = len;
}

static void replay_scenario(replay *r, uint64_t seed) {
    unsigned char h[SCENARIO_BYTES], packed[MAX_OBS / 8 + 1];
    uint8_t want[MAX_OBS], got[MAX_OBS];
    uint64_t stream;
    int32_t v[13];
    uint32_t n;
    read_bytes(r, h, sizeof h, "a scenario header");
    memcpy(&stream, h, 8);
    memcpy(v, h + 8, sizeof v);
    cr_minatar_seaquest_state *s = (cr_minatar_seaquest_state *)r->state;
    cr_minatar_seaquest_seed(s, seed, stream);
    cr_minatar_seaquest_reset(s, got);
    s->oxygen = v[0], s->diver_count = v[1], s->sub_x = v[2], s->sub_y = v[3], s->sub_or = v[4];
    s->e_spawn_speed = v[5], s->e_spawn_timer = v[6], s->d_spawn_timer = v[7];
    s->move_speed = v[8], s->ramp_index = v[9], s->shot_timer = v[10], s->surface = v[11];
    s->last_action = v[12];
    const unsigned char *len = h + 60;
    read_list(r, s->fish, &s->n_fish, len[0], CR_SEAQUEST_MAX_ENEMIES);
    read_list(r, s->subs, &s->n_subs, len[1], CR_SEAQUEST_MAX_ENEMIES);
    read_list(r, s->e_bullets, &s->n_e_bullets, len[2], CR_SEAQUEST_MAX_E_BULLETS);
    read_list(r, s->f_bullets, &s->n_f_bullets, len[3], CR_SEAQUEST_MAX_F_BULLETS);
    read_list(r, s->divers, &s->n_divers, len[4], CR_SEAQUEST_MAX_DIVERS);
    read_bytes(r, &n, 4, "a scenario's step count");
    read_bytes(r, packed, (size_t)r->packed_len, "a scenario's first observation");
    unpack(packed, r->obs_len, want);
    r->step = 0;
    cr_minatar_seaquest_observe(s, got);
    compare_obs(r, "injected obs", want, got);
    replay_steps(r, n);
    CHECK_MSG(!s->overflow, "scenario %ld: a Seaquest list overflowed", r->episode);
}

/* Replays every scenario of DIR/minatar_seaquest_scenarios.bin. */
static void replay_seaquest_scenarios(const char *dir) {
    static replay r;
    memset(&r, 0, sizeof r);
    r.g = &games[3];
    r.unit = "scenario";
    r.channels = CR_SEAQUEST_CHANNELS;
    r.obs_len = r.channels * 100;
    r.packed_len = (r.obs_len + 7) / 8;
    CHECK(sizeof(cr_minatar_seaquest_state) <= MAX_STATE_BYTES);
    snprintf(r.path, sizeof r.path, "%s/minatar_seaquest_scenarios.bin", dir);
    r.f = fopen(r.path, "rb");
    CHECK_MSG(r.f, "cannot open '%s': %s; it is written by tests/unit/minatar_trace.py", r.path,
              strerror(errno));
    unsigned char h[SCENARIO_HEADER_BYTES];
    uint32_t version, count;
    uint64_t seed;
    read_bytes(&r, h, sizeof h, "the header");
    CHECK_MSG(!memcmp(h, SCENARIO_MAGIC, 8), "%s is not a cudarl Seaquest scenario file", r.path);
    memcpy(&version, h + 8, 4);
    memcpy(&count, h + 12, 4);
    memcpy(&seed, h + 16, 8);
    CHECK_MSG(version == TRACE_VERSION, "%s: version %u, this test reads %u", r.path, version,
              TRACE_VERSION);
    for (r.episode = 0; r.episode < (long)count; r.episode++) replay_scenario(&r, seed);
    CHECK_MSG(fgetc(r.f) == EOF, "%s: bytes after the last scenario", r.path);
    fclose(r.f);
    printf("test_minatar_ref: MinAtar/Seaquest-v1: ok: %u injected states, %ld steps identical "
           "(%ld ended); return %.0f in all\n", count, r.steps, r.terminations, r.total_reward);
}

int main(int argc, char **argv) {
    CHECK_MSG(argc >= 2, "usage: test_minatar_ref DIR [GAME ...] (DIR holds minatar_<game>.bin "
              "from tests/unit/minatar_trace.py)");
    int n = (int)(sizeof games / sizeof games[0]);
    for (int i = 0; i < n; i++) {
        int wanted = argc == 2;
        for (int a = 2; a < argc; a++) wanted |= !strcmp(argv[a], games[i].name);
        if (!wanted) continue;
        replay_game(&games[i], argv[1]);
        if (games[i].def == &cr_minatar_seaquest_def) replay_seaquest_scenarios(argv[1]);
    }
    for (int a = 2; a < argc; a++) {
        int known = 0;
        for (int i = 0; i < n; i++) known |= !strcmp(argv[a], games[i].name);
        CHECK_MSG(known, "unknown game '%s'", argv[a]);
    }
    return 0;
}
