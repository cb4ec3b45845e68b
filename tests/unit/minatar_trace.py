#!/usr/bin/env python3
"""Records MinAtar reference traces for tests/unit/test_minatar_ref.c to replay.

Usage: minatar_trace.py OUTDIR [--games breakout,asterix,...] [--seed 2024] [--stream 3]
                          [--random-steps 3000]

For each game, runs gymnasium.make("MinAtar/<Game>-v1") from the minatar package (1.0.15: sticky
actions 0.1, difficulty ramping, the minimal action set) unmodified, except that the game's
numpy RandomState is replaced by PhiloxRandom: the same rand()/randint() calls answered from
cudarl's Philox4x32-10 stream (seed, stream), converted to numbers exactly as
src/env/minatar/minatar_common.h does. The C env seeded with (seed, stream) then draws the same numbers
in the same order, so the two must produce the same observations, rewards and terminations for
the same actions, step for step, across episodes (one stream, never reseeded; the sticky
action, as in MinAtar, carries over a reset).

Episodes: first uniformly random actions (the regime RL training starts in) until at least
--random-steps steps, then episodes of a per-game scripted policy that plays well enough to
reach what random play never does (Breakout's wall rebuilt, Asterix's and Seaquest's difficulty
ramps, Seaquest's six-diver surfacing, a cleared Space Invaders wave, Freeway crossings). The
scripted policies look one or two steps ahead on a deep copy of the game (which, holding a copy
of the Philox stream, sees the very draws the real step will make) to avoid dying. Each game's
trace must show those events (COVERAGE) or the script fails: a trace that did not exercise a
rule cannot vouch for it. With --games including seaquest, it also writes
OUTDIR/minatar_seaquest_scenarios.bin: 1000 random mid-game Seaquest states injected into the
Python game, with value-equal list elements and crowds around the sub, each followed for up to
30 random steps (format at record_seaquest_scenarios).

Binary format, little-endian, version 1, one file OUTDIR/minatar_<game>.bin per game:
  header:  char magic[8] = "CRMINAT\\0"; u32 version = 1; u32 channels; u32 num_actions;
           u32 num_episodes; u64 num_steps; u64 seed; u64 stream; char game[16];
           char minatar_version[16]; u32 philox_words[8] (the stream's first 8 words)
  then num_episodes episodes, each:
    u32 steps; u8 reset_obs[P]
    then `steps` records: u8 action; f32 reward; u8 terminated; u8 obs[P]
  where an observation is MinAtar's state() transposed to (C, 10, 10) (obs[c][y][x] =
  state[y, x, c]) and bit-packed, np.packbits order (element i is bit 7 - i % 8 of byte i / 8),
  P = ceil(C * 100 / 8). Only the last step of an episode has terminated set.
"""
import argparse
import copy
import struct
import sys
import time

try:
    import gymnasium
    import numpy as np
    import minatar.gym
    from importlib.metadata import version as package_version
except ImportError as e:
    sys.exit(f"minatar_trace.py: cannot import minatar/gymnasium ({e}) with {sys.executable}; "
             f"pip install minatar==1.0.15 gymnasium")

MAGIC = b"CRMINAT\0"
VERSION = 1
HEADER = struct.Struct("<8sIIIIQQQ16s16s8I")
EPISODE = struct.Struct("<I")
STEP = struct.Struct("<BfB")
GAMES = {"breakout": "Breakout", "asterix": "Asterix", "freeway": "Freeway",
         "seaquest": "Seaquest", "space_invaders": "SpaceInvaders"}
MINATAR_VERSION = "1.0.15"
# The minimal action sets of the -v1 ids (indices into MinAtar's n l u r d f).
ACTION_SET = {"breakout": [0, 1, 3], "asterix": [0, 1, 2, 3, 4], "freeway": [0, 2, 4],
              "seaquest": [0, 1, 2, 3, 4, 5], "space_invaders": [0, 1, 3, 5]}

# ---- cudarl's Philox4x32-10 (src/core/philox.h) and MinAtar's draws on it (minatar_common.h) ----

M32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """The four words of counter ctr (4) under key (2): ten rounds, Weyl key schedule."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return [c0, c1, c2, c3]


class PhiloxRandom:
    """The part of numpy.random.RandomState that MinAtar calls (rand, randint), answered from
    stream `stream` of `seed` as cr_philox_state / cr_minatar_rand / cr_minatar_randint do."""

    def __init__(self, seed, stream):
        self.key = [seed & M32, (seed >> 32) & M32]
        self.ctr = [0, 0, stream & M32, (stream >> 32) & M32]
        self.buf, self.used = [0, 0, 0, 0], 4

    def next_u32(self):
        if self.used == 4:
            self.buf = philox4x32_10(self.ctr, self.key)
            self.ctr[0] = (self.ctr[0] + 1) & M32
            if self.ctr[0] == 0:
                self.ctr[1] = (self.ctr[1] + 1) & M32
            self.used = 0
        self.used += 1
        return self.buf[self.used - 1]

    def _uniform(self):
        hi = self.next_u32() >> 5
        lo = self.next_u32() >> 6
        return (hi * 67108864 + lo) / 9007199254740992.0

    def rand(self, *size):
        if not size:
            return self._uniform()
        return np.array([self._uniform() for _ in range(int(np.prod(size)))]).reshape(size)

    def randint(self, low, high=None, size=None):
        if high is None:
            low, high = 0, low

        def one():
            return low + ((self.next_u32() * (high - low)) >> 32)

        if size is None:
            return one()
        return np.array([one() for _ in range(int(np.prod(size)))], dtype=np.int64).reshape(size)


# ---- policies: (env, rng, episode number) -> action index of the minimal set ---------------

def lookahead(game, depth):
    """For each action of the minimal set: (reward, loses) of taking it now, on a deep copy of
    the game (its Philox copy draws what the real step will, sticky action included), where it
    loses if it terminates or, with depth 2, every action after it terminates."""
    out = []
    for a in ACTION_SET[game.env_name]:
        g = copy.deepcopy(game)
        r, done = g.act(a)
        if not done and depth > 1:
            done = all(loses for _, loses in lookahead(g, depth - 1))
        out.append((r, done))
    return out


def guarded(env, rng, preferred, depth=1):
    """`preferred` unless it loses the game within `depth` steps; then a random action that does
    not, preferring ones that pay; `preferred` if all lose."""
    outcome = lookahead(env.unwrapped.game, depth)
    if not outcome[preferred][1]:
        return preferred
    safe = [i for i, (_, done) in enumerate(outcome) if not done]
    if not safe:
        return preferred
    best = max(outcome[i][0] for i in safe)
    return int(rng.choice([i for i in safe if outcome[i][0] == best]))


def toward(dx, dy, minimal):
    """The minimal-set index of the full action moving by (sign dx, sign dy), x first."""
    full = 0
    if dx < 0:
        full = 1
    elif dx > 0:
        full = 3
    elif dy < 0:
        full = 2
    elif dy > 0:
        full = 4
    return minimal.index(full) if full in minimal else 0


def random_policy(env, rng, episode=0):
    return int(rng.integers(env.action_space.n))


def breakout_policy(env, rng, episode=0):
    """Waits where the ball will cross row 8 on its way down (simulated with the paddle still,
    on a deep copy), else follows the ball. In odd episodes, when the ball comes from an odd
    column, meets it with the paddle's corner instead (it reverses): more varied angles."""
    game = env.unwrapped.game
    g = game.env
    target, corner = g.ball_x, episode % 2 == 1 and g.last_x % 2 == 1
    sim = copy.deepcopy(game)
    for _ in range(40):
        if sim.env.ball_y == 8 and sim.env.ball_dir in (2, 3):
            target = sim.env.ball_x
            if corner:  # meet it one cell on, with the paddle's corner: it reverses
                target = min(9, max(0, target + (1 if sim.env.ball_dir == 2 else -1)))
            break
        if sim.env.act(0)[1]:
            break
    if rng.random() < 0.05:
        return random_policy(env, rng)
    return guarded(env, rng, toward(target - g.pos, 0, env.unwrapped.action_set))


def asterix_policy(env, rng, episode=0):
    g = env.unwrapped.game.env
    minimal = env.unwrapped.action_set
    golds = [(abs(e[0] - g.player_x) + abs(e[1] - g.player_y), e) for e in g.entities
             if e is not None and e[3]]
    if golds and rng.random() < 0.7:
        e = min(golds, key=lambda t: t[0])[1]
        preferred = toward(0 if e[1] != g.player_y else e[0] - g.player_x, e[1] - g.player_y,
                           minimal)
    else:
        preferred = random_policy(env, rng)
    return guarded(env, rng, preferred)


def freeway_policy(env, rng, episode=0):
    return 1 if rng.random() < 0.8 else random_policy(env, rng)


def seaquest_policy(env, rng, episode=0):
    g = env.unwrapped.game.env
    minimal = env.unwrapped.action_set
    if episode % 3 == 2 and g.sub_y > 0:
        # every third episode never surfaces again once down: it ends out of oxygen (or hit)
        preferred = guarded(env, rng, random_policy(env, rng), depth=2)
        return preferred if preferred != 2 or g.sub_y > 1 else 0
    if g.diver_count < 0 and g.e_spawn_speed > 1:
        # after a six-diver surfacing the diver count is negative and surfacing is free: bob
        # up and down to ramp the difficulty to its end (an enemy spawn every step)
        preferred = toward(0, 1 if g.sub_y == 0 else -1, minimal)
    elif g.diver_count >= 6 or (g.diver_count > 0 and g.oxygen < 16 * (1 + g.sub_y // 3) + 20):
        preferred = toward(0, -1, minimal)
    elif g.divers and g.diver_count < 6:
        d = min(g.divers, key=lambda d: abs(d[0] - g.sub_x) + abs(d[1] - g.sub_y))
        preferred = toward(d[0] - g.sub_x if d[1] == g.sub_y else 0, d[1] - g.sub_y, minimal)
        if d[1] != g.sub_y and rng.random() < 0.3:
            preferred = toward(d[0] - g.sub_x, 0, minimal)
    elif g.sub_y == 0:
        preferred = toward(0, 1, minimal)
    else:
        preferred = 5 if g.shot_timer == 0 and rng.random() < 0.5 else random_policy(env, rng)
    return guarded(env, rng, preferred)


def pays_within(game, first, then, steps):
    """Whether taking full action `first`, then `then` repeatedly, earns a reward within `steps`
    steps without terminating (on a deep copy)."""
    g = copy.deepcopy(game)
    for k in range(steps):
        r, done = g.act(first if k == 0 else then)
        if done:
            return False
        if r:
            return True
    return False


def space_invaders_policy(env, rng, episode=0):
    g = env.unwrapped.game.env
    minimal = env.unwrapped.action_set
    cols = [x for x in range(10) if g.alien_map[:, x].any()]
    target = min(cols, key=lambda x: (abs(x - g.pos), x))
    if g.shot_timer == 0 and pays_within(env.unwrapped.game, 5, 0, 10):
        preferred = 3
    elif len(cols) == 1 and abs(target - g.pos) <= 1:
        preferred = 0
    else:
        preferred = toward(target - g.pos, 0, minimal)
    lo, hi = max(0, g.pos - 1), min(10, g.pos + 2)
    danger = g.e_bullet_map[6:9, lo:hi].any() or g.alien_map[7:, :].any()
    return guarded(env, rng, preferred, depth=2 if danger else 1)


POLICIES = {"breakout": breakout_policy, "asterix": asterix_policy, "freeway": freeway_policy,
            "seaquest": seaquest_policy, "space_invaders": space_invaders_policy}
# Episodes of the scripted policy after the random ones.
SCRIPTED_EPISODES = {"breakout": 16, "asterix": 3, "freeway": 1, "seaquest": 8,
                     "space_invaders": 5}

# ---- coverage: rule events the trace must contain -------------------------------------------


def snapshot(game, g):
    """The values the coverage counters look at, before a step."""
    e = game.env
    if g == "breakout":
        return int(np.count_nonzero(e.brick_map)), e.strike
    if g == "asterix":
        return e.ramp_index, e.move_speed
    if g == "freeway":
        return e.pos
    if g == "seaquest":
        return e.diver_count, e.ramp_index, e.oxygen
    return e.ramp_index, int(np.count_nonzero(e.alien_map))


def count_events(stats, game, g, before, reward, terminated):
    """Adds the events of one step (before = snapshot() before it) to stats."""
    e = game.env

    def add(name, n=1):
        stats[name] = stats.get(name, 0) + n

    add("reward", int(reward))
    if g == "breakout":
        bricks, strike = before
        if bricks == 0 and np.count_nonzero(e.brick_map) == 30:
            add("wall_rebuilt")
        if strike and e.strike:
            add("ball_in_brick")
    elif g == "asterix":
        if e.ramp_index > before[0]:
            add("ramp")
        if e.move_speed < before[1]:
            add("move_speed_ramp")
        if reward:
            add("gold")
    elif g == "freeway":
        if reward:
            add("crossing")
        elif e.pos == 9 and before not in (9, 8):
            add("hit_by_car")
    elif g == "seaquest":
        divers, ramp, oxygen = before
        surfaced = e.oxygen == 200 and oxygen < 200 and not terminated
        if surfaced:
            add("surface_with_divers" if divers > 0 else "surface_without_divers")
        if e.ramp_index > ramp:
            add("ramp")
        if e.e_spawn_speed == 1 and e.move_speed == 2:
            add("full_speed_step")
        if len(e.e_fish) + len(e.e_subs) >= 8:
            add("crowded_step")
        if divers == 6 and e.diver_count == -1:
            add("surface_with_six")
        if e.diver_count > divers:
            add("diver_picked")
        if terminated and oxygen <= 0:
            add("out_of_oxygen")
    else:
        ramp, aliens = before
        if np.count_nonzero(e.alien_map) > aliens:  # the block was refilled
            add("wave_cleared")
        if e.ramp_index > ramp:
            add("ramp")


COVERAGE = {
    "breakout": {"wall_rebuilt": 1, "ball_in_brick": 1},
    "asterix": {"ramp": 8, "move_speed_ramp": 3, "gold": 20},
    "freeway": {"crossing": 10, "hit_by_car": 5},
    "seaquest": {"surface_with_divers": 4, "surface_with_six": 1, "surface_without_divers": 1,
                 "ramp": 19, "full_speed_step": 50, "crowded_step": 20, "diver_picked": 10,
                 "out_of_oxygen": 1},
    "space_invaders": {"wave_cleared": 2, "ramp": 2},
}

# ---- recording ------------------------------------------------------------------------------


def pack(state):
    """MinAtar's (10, 10, C) bool state as the trace's bit-packed (C, 10, 10)."""
    return np.packbits(np.transpose(state, (2, 0, 1)).astype(np.uint8).ravel()).tobytes()


def run_episode(env, rng, policy, game_name, stats, episode):
    """One episode from reset to termination: (its bytes, its step count)."""
    obs, _ = env.reset()
    game = env.unwrapped.game
    chunks = [pack(obs)]
    steps = 0
    while True:
        action = policy(env, rng, episode)
        before = snapshot(game, game_name)
        obs, reward, terminated, truncated, _ = env.step(action)
        assert not truncated, "minatar never truncates"
        count_events(stats, game, game_name, before, reward, terminated)
        chunks.append(STEP.pack(action, float(reward), bool(terminated)) + pack(obs))
        steps += 1
        if terminated:
            break
    return EPISODE.pack(steps) + b"".join(chunks), steps


def record(game_name, seed, stream, random_steps, out_path):
    """Records one game's trace into out_path; returns a one-line summary."""
    env = gymnasium.make(f"MinAtar/{GAMES[game_name]}-v1")
    game = env.unwrapped.game
    if env.unwrapped.action_set != ACTION_SET[game_name]:
        sys.exit(f"minatar_trace.py: {game_name}: minatar's minimal action set is "
                 f"{env.unwrapped.action_set}, the C env has {ACTION_SET[game_name]}")
    game.random = game.env.random = PhiloxRandom(seed, stream)
    rng = np.random.default_rng(seed + 17 * stream)
    chunks, episodes, steps, stats = [], 0, 0, {}
    random_returns = []
    while steps < random_steps:
        r0 = stats.get("reward", 0)
        data, n = run_episode(env, rng, random_policy, game_name, stats, episodes)
        chunks.append(data)
        episodes, steps = episodes + 1, steps + n
        random_returns.append(stats["reward"] - r0)
    for _ in range(SCRIPTED_EPISODES[game_name]):
        data, n = run_episode(env, rng, POLICIES[game_name], game_name, stats, episodes)
        chunks.append(data)
        episodes, steps = episodes + 1, steps + n
    missing = {k: (stats.get(k, 0), v) for k, v in COVERAGE[game_name].items()
               if stats.get(k, 0) < v}
    if missing:
        sys.exit(f"minatar_trace.py: {game_name}: the trace misses rule events "
                 f"(name: (seen, needed)) {missing}; all events {stats}")
    words = PhiloxRandom(seed, stream)
    header = HEADER.pack(MAGIC, VERSION, env.observation_space.shape[2], env.action_space.n,
                         episodes, steps, seed, stream, game_name.encode(),
                         package_version("minatar").encode()[:16],
                         *[words.next_u32() for _ in range(8)])
    with open(out_path, "wb") as f:
        f.write(header + b"".join(chunks))
    return (f"{game_name}: {episodes} episodes ({len(random_returns)} random, mean return "
            f"{np.mean(random_returns):.2f}), {steps} steps; events {stats}")


# ---- Seaquest from injected states ---------------------------------------------------------

SCENARIO_MAGIC = b"CRMASQS\0"
SCENARIO_HEADER = struct.Struct("<8sIIQ")
SCENARIO_SCALARS = struct.Struct("<Q13i5B")
SEAQUEST_SCALARS = ("oxygen", "diver_count", "sub_x", "sub_y", "sub_or", "e_spawn_speed",
                    "e_spawn_timer", "d_spawn_timer", "move_speed", "ramp_index", "shot_timer",
                    "surface")
SEAQUEST_LISTS = ("e_fish", "e_subs", "e_bullets", "f_bullets", "divers")


def seaquest_scenario(rng):
    """A random mid-game Seaquest state: scalars (dict) and the five lists, with some elements
    duplicated in value and some enemies, bullets and the sub next to each other, to reach the
    list-mutation paths of Env.act that whole episodes rarely do."""
    sub_or = bool(rng.integers(2))
    sc = {"oxygen": int(rng.integers(1, 201)), "diver_count": int(rng.integers(-2, 7)),
          "sub_x": int(rng.integers(1, 10) if sub_or else rng.integers(0, 9)),
          "sub_y": int(rng.integers(0, 9)), "sub_or": sub_or,
          "e_spawn_speed": int(rng.integers(1, 21)), "d_spawn_timer": int(rng.integers(0, 31)),
          "move_speed": int(rng.integers(2, 6)), "ramp_index": int(rng.integers(0, 20)),
          "shot_timer": int(rng.integers(0, 6))}
    sc["e_spawn_timer"] = int(rng.integers(0, sc["e_spawn_speed"] + 1))
    sc["surface"] = bool(sc["sub_y"] == 0 and rng.random() < 0.5)
    sx, sy, ms = sc["sub_x"], sc["sub_y"], sc["move_speed"]

    def near(lo=1):  # a cell near the sub a third of the time
        if rng.random() < 0.33:
            return (int(np.clip(sx + rng.integers(-2, 3), 0, 9)),
                    int(np.clip(sy + rng.integers(-1, 2), lo, 8)))
        return int(rng.integers(0, 10)), int(rng.integers(lo, 9))

    def make(n, build):
        out = []
        for _ in range(n):
            if out and rng.random() < 0.25:
                out.append(list(out[int(rng.integers(len(out)))]))  # an equal-valued copy
            else:
                out.append(build())
        return out

    lists = {
        "e_fish": make(int(rng.integers(0, 10)), lambda: [*near(), bool(rng.integers(2)),
                                                          int(rng.integers(0, ms + 1))]),
        "e_subs": make(int(rng.integers(0, 10)), lambda: [*near(), bool(rng.integers(2)),
                                                          int(rng.integers(0, ms + 1)),
                                                          int(rng.integers(0, 11))]),
        "e_bullets": make(int(rng.integers(0, 10)), lambda: [*near(), bool(rng.integers(2))]),
        "f_bullets": make(int(rng.integers(0, 3)), lambda: [*near(0), bool(rng.integers(2))]),
        "divers": make(int(rng.integers(0, 3)), lambda: [*near(), bool(rng.integers(2)),
                                                         int(rng.integers(0, 6))]),
    }
    return sc, lists


def record_seaquest_scenarios(seed, count, steps, out_path):
    """Runs `count` injected Seaquest states for up to `steps` random steps each (stream
    1000 + i of seed for scenario i) into out_path; returns a one-line summary.

    Format, little-endian, version 1: char magic[8] = "CRMASQS\0"; u32 version = 1;
    u32 count; u64 seed; then per scenario: u64 stream; i32 scalars[13] (SEAQUEST_SCALARS,
    then last_action); u8 lengths[5] (SEAQUEST_LISTS); the lists' elements, 5 x i8 each
    (x, y, dir, timer, shot; absent fields 0); u32 steps; u8 obs[125] (the injected state);
    then `steps` records as in the episode traces."""
    env = gymnasium.make("MinAtar/Seaquest-v1")
    env.reset()
    game = env.unwrapped.game
    e = game.env
    rng = np.random.default_rng(seed)
    chunks, total, ends, reward = [], 0, 0, 0
    for i in range(count):
        sc, lists = seaquest_scenario(rng)
        stream = 1000 + i
        game.random = e.random = PhiloxRandom(seed, stream)
        for k, v in sc.items():
            setattr(e, k, v)
        for k, v in lists.items():
            setattr(e, k, [list(o) for o in v])
        e.terminal = False
        game.last_action = int(rng.integers(6))
        scalars = [int(sc[k]) for k in SEAQUEST_SCALARS] + [game.last_action]
        head = SCENARIO_SCALARS.pack(stream, *scalars, *[len(lists[k]) for k in SEAQUEST_LISTS])
        objs = b"".join(struct.pack("<5b", *[int(f) for f in o], *[0] * (5 - len(o)))
                        for k in SEAQUEST_LISTS for o in lists[k])
        recs = [pack(game.state())]
        n = 0
        while n < steps:
            action = int(rng.integers(6))
            obs, r, terminated, _, _ = env.step(action)
            recs.append(STEP.pack(action, float(r), bool(terminated)) + pack(obs))
            n, reward = n + 1, reward + r
            if terminated:
                ends += 1
                break
        total += n
        chunks.append(head + objs + struct.pack("<I", n) + b"".join(recs))
    with open(out_path, "wb") as f:
        f.write(SCENARIO_HEADER.pack(SCENARIO_MAGIC, VERSION, count, seed) + b"".join(chunks))
    return (f"seaquest scenarios: {count} injected states, {total} steps, {ends} ended, "
            f"return {reward}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--games", default=",".join(GAMES))
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--stream", type=int, default=3)
    ap.add_argument("--random-steps", type=int, default=3000)
    args = ap.parse_args()
    have = package_version("minatar")
    if have != MINATAR_VERSION:
        sys.exit(f"minatar_trace.py: minatar {have} is installed; the C games follow "
                 f"{MINATAR_VERSION}: pip install minatar=={MINATAR_VERSION}")
    minatar.gym.register_envs()
    for g in args.games.split(","):
        t = time.time()
        line = record(g, args.seed, args.stream, args.random_steps,
                      f"{args.outdir}/minatar_{g}.bin")
        print(f"minatar_trace.py: {line} ({time.time() - t:.1f} s)")
    if "seaquest" in args.games.split(","):
        t = time.time()
        line = record_seaquest_scenarios(args.seed, 1000, 30,
                                         f"{args.outdir}/minatar_seaquest_scenarios.bin")
        print(f"minatar_trace.py: {line} ({time.time() - t:.1f} s)")


if __name__ == "__main__":
    main()
