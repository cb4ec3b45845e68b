"""JAX peer of cudarl's PPO on MinAtar: PureJaxRL's PPO for gymnax's MinAtar games, ported.

What is ported: PureJaxRL's PPO as published for gymnax MinAtar, read at
https://github.com/luchris429/purejaxrl commit 31756b197773a52db763fdbe6d635e4b46522a73
(2024-09-09): `examples/brax_minatar.ipynb`, section "PPO Gymnax MinAtar" (its make_train is the
one in purejaxrl/ppo.py; the notebook's config is the MinAtar one, "briefly tuned to do well on
Gymnax's MinAtar environments"). PureJaxRL has no ppo_minatar.py; that notebook is its MinAtar
PPO. The code here is written anew with jax.numpy alone (no flax, optax or distrax): the
network, its initialisation, Adam, the gradient clip, GAE and the clipped losses are ours, the
algorithm and numbers are theirs:

  * the whole of training in jit: envs vmapped, the rollout a lax.scan over NUM_STEPS steps,
    GAE a reverse lax.scan, the update a lax.scan over epochs of a lax.scan over minibatches
    (one random permutation of the batch per epoch);
  * network (their ActorCritic, activation "relu"): the observation flattened (10*10*C floats),
    a separate actor (Dense 64, relu, Dense 64, relu, Dense A -> logits of a categorical) and
    critic (Dense 64, relu, Dense 64, relu, Dense 1); orthogonal weights, gain sqrt(2) in the
    hidden layers, 0.01 in the actor's head, 1.0 in the critic's head, zero biases;
  * hyperparameters (the notebook's config): LR 5e-3 annealed linearly to 0 over NUM_UPDATES
    (lr = LR * (1 - (k // (NUM_MINIBATCHES * UPDATE_EPOCHS)) / NUM_UPDATES) at Adam step k),
    NUM_ENVS 64, NUM_STEPS 128 (8,192 steps per update), TOTAL_TIMESTEPS 1e7 (NUM_UPDATES =
    1e7 // 8192 = 1220), UPDATE_EPOCHS 4, NUM_MINIBATCHES 8 (minibatch 1,024), GAMMA 0.99,
    GAE_LAMBDA 0.95, CLIP_EPS 0.2 (ratio and value clip), ENT_COEF 0.01, VF_COEF 0.5,
    MAX_GRAD_NORM 0.5 (clip by global norm), Adam eps 1e-5 (betas 0.9, 0.999);
  * loss: -min(ratio * A, clip(ratio) * A) with A normalised per minibatch ((A - mean) / (std +
    1e-8)), + 0.5 * VF_COEF * max((V - R)^2, (V_clipped - R)^2), - ENT_COEF * entropy, all means
    over the minibatch; R = A + V (GAE targets before normalisation);
  * done = terminated or truncated; GAE masks the bootstrap at done (truncation treated as
    termination, as PureJaxRL does: its gymnax returned one done flag).

What differs from the notebook, to measure it beside cudarl:

  * gymnax 1.0.1's step returns terminated and truncated apart; they are or-ed into PureJaxRL's
    one done.
  * The curve: PureJaxRL returns every step's "returned_episode_returns" (via its LogWrapper) at
    the end of training. Here training runs in chunks of --updates-per-chunk updates, one jitted
    call each (the same scan body; the chunk is a lax.fori_loop over updates with the count as an
    argument, so one compilation serves every chunk), and after each chunk one line is printed:
        t=<s since launch> step=<env steps> return=<mean of the last 100 finished episodes>
    The mean of the last 100 finished episodes (cudarl's charts/mean_return_100) is kept inside
    the jitted loop (a ring of 100 returns, filled in time order, env order within a step). The
    host reads only that scalar, once a chunk; chunk k+1 is dispatched before chunk k's scalar is
    waited for, so the device does not idle on the host. t counts from --launch-time (the unix
    time at which the caller started this process; default: this script's first line), so it
    includes Python's and JAX's import, the initialisation and the compilation (also printed on
    its own: compile=<s>).
  * --seconds stops it after the first chunk that ends past that time from launch.

The envs are gymnax's (Breakout-MinAtar, Asterix-MinAtar, Freeway-MinAtar,
SpaceInvaders-MinAtar, Seaquest-MinAtar; all five exist in gymnax 1.0.1). Unlike MinAtar 1.0.15
(and cudarl's MinAtar/<Game>-v1) they have no sticky actions, and they end episodes at
max_steps_in_episode (1000; Freeway 2500), where MinAtar sets no time limit.

  python3 bench/peers/ppo_minatar_jax.py --env Breakout-MinAtar --seed 1 --seconds 30 --json c.json

gymnax imports flax, gymnasium, matplotlib, seaborn and six (not its algorithms, its own env
classes and registry); only jax, jax.numpy and numpy are used here.
"""

import time

T_START = time.time()  # the default origin of t (unix time)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402

GAMES = ("Breakout", "Asterix", "Freeway", "SpaceInvaders", "Seaquest")

# The notebook's config (see the docstring).
CONFIG = {
    "LR": 5e-3,
    "NUM_ENVS": 64,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 10_000_000,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 8,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ANNEAL_LR": True,
    "ADAM_EPS": 1e-5,
    "HIDDEN": 64,
}
RING = 100  # episodes in the mean


def env_name(s):
    """gymnax's name for --env: 'Breakout-MinAtar', 'Breakout' or cudarl's 'MinAtar/Breakout-v1'."""
    g = s
    if g.startswith("MinAtar/") and g.endswith("-v1"):
        g = g[len("MinAtar/"):-len("-v1")]
    if g.endswith("-MinAtar"):
        g = g[:-len("-MinAtar")]
    if g not in GAMES:
        raise argparse.ArgumentTypeError(
            "no MinAtar game '%s': one of %s (as Breakout, Breakout-MinAtar or MinAtar/Breakout-v1)"
            % (s, ", ".join(GAMES)))
    return g + "-MinAtar"


def positive_int(s):
    try:
        v = int(float(s))
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % s)
    if v < 1 or v != float(s):
        raise argparse.ArgumentTypeError("'%s': give a whole number of 1 or more" % s)
    return v


def nonneg_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % s)
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError("'%s': give a finite number of 0 or more" % s)
    return v


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", type=env_name, default="Breakout-MinAtar",
                    help="game: %s (also X-MinAtar or MinAtar/X-v1)" % ", ".join(GAMES))
    ap.add_argument("--seed", type=int, default=1, help="jax.random.PRNGKey(seed)")
    ap.add_argument("--seconds", type=nonneg_float, default=0,
                    help="stop after the first chunk that ends this long after launch (0: none)")
    ap.add_argument("--total-timesteps", type=positive_int, default=CONFIG["TOTAL_TIMESTEPS"],
                    help="TOTAL_TIMESTEPS (the learning rate anneals over it); default 1e7")
    ap.add_argument("--updates-per-chunk", type=positive_int, default=10,
                    help="updates per jitted call, one line each (default 10: 81,920 steps)")
    ap.add_argument("--num-envs", type=positive_int, default=CONFIG["NUM_ENVS"],
                    help="override NUM_ENVS (default the published 64)")
    ap.add_argument("--num-steps", type=positive_int, default=CONFIG["NUM_STEPS"],
                    help="override NUM_STEPS (default the published 128)")
    ap.add_argument("--launch-time", type=float, default=None,
                    help="unix time at which this process was launched (t's origin); default the "
                         "script's first line")
    ap.add_argument("--json", metavar="OUT", help="write the curve and the config here")
    a = ap.parse_args(argv)
    if a.launch_time is not None and not (0 < a.launch_time <= time.time() + 1):
        ap.error("--launch-time %s is not a unix time at or before now (time.time())"
                 % a.launch_time)
    batch = a.num_envs * a.num_steps
    if batch % CONFIG["NUM_MINIBATCHES"]:
        ap.error("--num-envs x --num-steps = %d does not split into %d minibatches"
                 % (batch, CONFIG["NUM_MINIBATCHES"]))
    if a.total_timesteps < batch:
        ap.error("--total-timesteps %d is less than one update (%d envs x %d steps = %d)"
                 % (a.total_timesteps, a.num_envs, a.num_steps, batch))
    return a


def make_train(cfg, env, env_params):
    """The functions of one training run: init(key) -> state; chunk(state, n) -> (state,
    (mean of the last 100, episodes finished)) after n more updates."""
    import jax
    import jax.numpy as jnp

    N, T = cfg["NUM_ENVS"], cfg["NUM_STEPS"]
    batch = N * T
    n_mb, epochs = cfg["NUM_MINIBATCHES"], cfg["UPDATE_EPOCHS"]
    mb = batch // n_mb
    num_updates = cfg["NUM_UPDATES"]
    n_act = env.action_space(env_params).n
    obs_dim = int(math.prod(env.observation_space(env_params).shape))
    H = cfg["HIDDEN"]
    gamma, lam, clip = cfg["GAMMA"], cfg["GAE_LAMBDA"], cfg["CLIP_EPS"]

    # ---- network -----------------------------------------------------------------------------

    def orthogonal(key, n_in, n_out, gain):
        """A (n_in, n_out) matrix with orthonormal columns (or rows, if wider than tall) times
        gain: QR of a Gaussian matrix, the signs of R's diagonal folded into Q."""
        rows, cols = max(n_in, n_out), min(n_in, n_out)
        q, r = jnp.linalg.qr(jax.random.normal(key, (rows, cols), jnp.float32))
        q = q * jnp.sign(jnp.diagonal(r))[None, :]
        if n_in < n_out:
            q = q.T
        return gain * q

    def dense(key, n_in, n_out, gain):
        return {"w": orthogonal(key, n_in, n_out, gain), "b": jnp.zeros((n_out,), jnp.float32)}

    def init_params(key):
        k = jax.random.split(key, 6)
        s2 = math.sqrt(2.0)
        return {
            "actor": [dense(k[0], obs_dim, H, s2), dense(k[1], H, H, s2),
                      dense(k[2], H, n_act, 0.01)],
            "critic": [dense(k[3], obs_dim, H, s2), dense(k[4], H, H, s2),
                       dense(k[5], H, 1, 1.0)],
        }

    def mlp(layers, x):
        for i, l in enumerate(layers):
            x = x @ l["w"] + l["b"]
            if i + 1 < len(layers):
                x = jax.nn.relu(x)
        return x

    def forward(params, obs):
        """(logits (B, A), value (B,)) of observations (B, ...)."""
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        return mlp(params["actor"], x), mlp(params["critic"], x)[:, 0]

    # ---- Adam with the global-norm clip and the annealed rate ----------------------------------

    def learning_rate(count):
        if not cfg["ANNEAL_LR"]:
            return cfg["LR"]
        frac = 1.0 - (count // (n_mb * epochs)) / num_updates
        return cfg["LR"] * frac

    def adam_step(params, opt, grads):
        leaves = jax.tree_util.tree_leaves(grads)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in leaves))
        scale = jnp.where(norm < cfg["MAX_GRAD_NORM"], 1.0, cfg["MAX_GRAD_NORM"] / norm)
        grads = jax.tree_util.tree_map(lambda g: g * scale, grads)
        count = opt["count"]
        b1, b2, eps = 0.9, 0.999, cfg["ADAM_EPS"]
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
        t = (count + 1).astype(jnp.float32)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        lr = learning_rate(count)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return params, {"m": m, "v": v, "count": count + 1}

    # ---- the loss ------------------------------------------------------------------------------

    def loss_fn(params, b):
        logits, value = forward(params, b["obs"])
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, b["action"][:, None], axis=1)[:, 0]
        entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, axis=1).mean()
        v_clipped = b["value"] + jnp.clip(value - b["value"], -clip, clip)
        v_loss = 0.5 * jnp.maximum(jnp.square(value - b["target"]),
                                   jnp.square(v_clipped - b["target"])).mean()
        adv = b["adv"]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = jnp.exp(logp - b["logp"])
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv).mean()
        return pg + cfg["VF_COEF"] * v_loss - cfg["ENT_COEF"] * entropy

    grad_fn = jax.grad(loss_fn)

    # ---- one update: rollout, GAE, epochs of minibatches ----------------------------------------

    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def env_step(carry, _):
        params, env_state, obs, ep_ret, key = carry
        key, k_act, k_env = jax.random.split(key, 3)
        logits, value = forward(params, obs)
        action = jax.random.categorical(k_act, logits)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=1)[:, 0]
        obs2, env_state, reward, term, trunc, _ = v_step(
            jax.random.split(k_env, N), env_state, action, env_params)
        done = jnp.logical_or(term, trunc)
        reward = reward.astype(jnp.float32)
        ep_ret = ep_ret + reward
        finished = ep_ret
        ep_ret = jnp.where(done, 0.0, ep_ret)
        tr = {"obs": obs, "action": action, "value": value, "logp": logp, "reward": reward,
              "done": done.astype(jnp.float32), "finished": finished}
        return (params, env_state, obs2, ep_ret, key), tr

    def gae(traj, last_val):
        def back(carry, tr):
            adv, next_v = carry
            nd = 1.0 - tr["done"]
            delta = tr["reward"] + gamma * next_v * nd - tr["value"]
            adv = delta + gamma * lam * nd * adv
            return (adv, tr["value"]), adv
        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_val), last_val), traj, reverse=True,
                              unroll=16)
        return adv, adv + traj["value"]

    def record_episodes(ring, pos, count, done, finished):
        """Writes the returns of the episodes that ended this update (time-major order) into the
        ring of the last RING, oldest first overwritten."""
        done = done.reshape(-1) > 0.5
        finished = finished.reshape(-1)
        n_done = jnp.sum(done.astype(jnp.int32))
        rank = jnp.cumsum(done.astype(jnp.int32)) - 1  # 0.. among this update's episodes
        keep = done & (rank >= n_done - RING)  # at most the last RING of them
        idx = jnp.where(keep, (pos + rank) % RING, RING)  # RING: out of range, dropped
        ring = ring.at[idx].set(finished, mode="drop")
        return ring, (pos + n_done) % RING, count + n_done

    def update(state):
        params, opt, env_state, obs, ep_ret, key, ring, pos, count = state
        (params, env_state, obs, ep_ret, key), traj = jax.lax.scan(
            env_step, (params, env_state, obs, ep_ret, key), None, T)
        _, last_val = forward(params, obs)
        adv, target = gae(traj, last_val)
        ring, pos, count = record_episodes(ring, pos, count, traj["done"], traj["finished"])
        data = {k: traj[k] for k in ("obs", "action", "value", "logp")}
        data["adv"], data["target"] = adv, target
        data = jax.tree_util.tree_map(lambda x: x.reshape((batch,) + x.shape[2:]), data)

        def epoch(carry, _):
            params, opt, key = carry
            key, k = jax.random.split(key)
            perm = jax.random.permutation(k, batch)
            mbs = jax.tree_util.tree_map(
                lambda x: jnp.take(x, perm, axis=0).reshape((n_mb, mb) + x.shape[1:]), data)

            def minibatch(carry, b):
                params, opt = carry
                params, opt = adam_step(params, opt, grad_fn(params, b))
                return (params, opt), None

            (params, opt), _ = jax.lax.scan(minibatch, (params, opt), mbs)
            return (params, opt, key), None

        (params, opt, key), _ = jax.lax.scan(epoch, (params, opt, key), None, epochs)
        return (params, opt, env_state, obs, ep_ret, key, ring, pos, count)

    def init(key):
        key, k_net, k_env = jax.random.split(key, 3)
        params = init_params(k_net)
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        opt = {"m": zeros, "v": zeros, "count": jnp.zeros((), jnp.int32)}
        obs, env_state = v_reset(jax.random.split(k_env, N), env_params)
        return (params, opt, env_state, obs, jnp.zeros((N,), jnp.float32), key,
                jnp.zeros((RING,), jnp.float32), jnp.zeros((), jnp.int32),
                jnp.zeros((), jnp.int32))

    def chunk(state, n):
        state = jax.lax.fori_loop(0, n, lambda i, s: update(s), state)
        ring, count = state[6], state[8]
        mean = jnp.where(count > 0, jnp.sum(ring) / jnp.minimum(count, RING).astype(jnp.float32),
                         jnp.nan)
        return state, (mean, count)

    return jax.jit(init), jax.jit(chunk, donate_argnums=(0,))


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = a.launch_time if a.launch_time is not None else T_START
    now = lambda: time.time() - t0  # noqa: E731

    import jax
    import jax.numpy as jnp
    import gymnax

    cfg = dict(CONFIG, NUM_ENVS=a.num_envs, NUM_STEPS=a.num_steps,
               TOTAL_TIMESTEPS=a.total_timesteps, ENV_NAME=a.env)
    batch = cfg["NUM_ENVS"] * cfg["NUM_STEPS"]
    cfg["NUM_UPDATES"] = cfg["TOTAL_TIMESTEPS"] // batch
    overrides = [k for k in ("NUM_ENVS", "NUM_STEPS", "TOTAL_TIMESTEPS") if cfg[k] != CONFIG[k]]
    dev = jax.devices()[0]
    print("ppo_minatar_jax: PureJaxRL PPO (MinAtar config) on %s, seed %d: %d envs x %d steps, "
          "%d updates, %d updates a chunk; jax %s on %s (%s)%s; imports done at t=%.2f"
          % (a.env, a.seed, cfg["NUM_ENVS"], cfg["NUM_STEPS"], cfg["NUM_UPDATES"],
             a.updates_per_chunk, jax.__version__, jax.default_backend(),
             getattr(dev, "device_kind", str(dev)),
             "; overridden: " + ", ".join("%s=%s" % (k, cfg[k]) for k in overrides)
             if overrides else "", now()), flush=True)

    env, env_params = gymnax.make(a.env)
    init, chunk = make_train(cfg, env, env_params)
    state = init(jax.random.PRNGKey(a.seed))
    jax.block_until_ready(state)
    t_init = now()
    tc = time.time()
    chunk_c = chunk.lower(state, jnp.int32(a.updates_per_chunk)).compile()
    compile_s = time.time() - tc
    print("ppo_minatar_jax: init done at t=%.2f, compile=%.2f s (ends at t=%.2f)"
          % (t_init, compile_s, now()), flush=True)

    curve = []
    done_updates = 0
    pending = None  # (updates after it, (mean, count)) of the chunk in flight
    stop = False
    while True:
        nxt = None
        if done_updates < cfg["NUM_UPDATES"]:
            n = min(a.updates_per_chunk, cfg["NUM_UPDATES"] - done_updates)
            state, out = chunk_c(state, jnp.int32(n))
            done_updates += n
            nxt = (done_updates, out)
        if pending is not None:
            updates, (mean, count) = pending
            mean = float(mean)  # waits for that chunk alone
            t = now()
            count = int(count)
            row = {"t": round(t, 4), "step": updates * batch, "return": mean, "episodes": count}
            curve.append(row)
            print("t=%.3f step=%d return=%s episodes=%d"
                  % (t, row["step"], "nan" if math.isnan(mean) else "%.4g" % mean, count),
                  flush=True)
            if a.seconds and t >= a.seconds:
                stop = True  # the chunk in flight is left unread
                break
        if nxt is None:
            break
        pending = nxt
    reason = "after %s s" % a.seconds if stop else "at %d steps" % (done_updates * batch)
    last = curve[-1] if curve else None
    print("ppo_minatar_jax: stopped %s: %d steps, t=%.2f, mean of the last 100: %s"
          % (reason, last["step"] if last else 0, now(),
             "%.4g" % last["return"] if last else "-"), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"peer": "PureJaxRL PPO (MinAtar config), JAX port",
                       "purejaxrl_commit": "31756b197773a52db763fdbe6d635e4b46522a73",
                       "env": a.env, "seed": a.seed, "config": cfg,
                       "updates_per_chunk": a.updates_per_chunk, "backend": jax.default_backend(),
                       "device": getattr(dev, "device_kind", str(dev)),
                       "jax": jax.__version__, "init_done_s": t_init, "compile_s": compile_s,
                       "curve": [dict(r, **{"return": None if math.isnan(r["return"])
                                            else r["return"]}) for r in curve]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
