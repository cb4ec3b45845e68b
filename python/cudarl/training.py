"""cudarl.train: a PPO or DQN run of the C library, with the CLI's flags as keyword arguments.

    run = cudarl.train(env="CartPole-v1", total_timesteps=500_000, seed=2)
    run.final["mean_return_100"], run.checkpoint

Keyword names are `cudarl train`'s flags with `_` for `-` (`num_envs` for `--num-envs`; `async`,
a Python keyword, also as `async_`). Defaults are the CLI's, the device's preset included (a GPU
run gets the GPU's batch shape unless the keywords say otherwise), and every value goes through
the library's validation, whose messages name the flag: a bad value raises ValueError with that
message."""
import ctypes
import math
import os
import signal
import threading

from . import _lib, gym_env
from ._errors import check

# Flags a resumed run may change (the CLI's list); the others come from the checkpoint.
_RESUME_OVERRIDABLE = {"total_timesteps", "device", "threads", "quiet", "profile",
                       "checkpoint_every", "env_device", "env_threads", "env_groups",
                       "actor_device", "learner_device", "mem_budget"}

# PPO's defaults on a Gymnasium env: CleanRL ppo.py's (cudarl's own are tuned for its C envs).
_PPO_PYTHON_ENV = {"num_envs": 4, "num_steps": 128, "learning_rate": 2.5e-4,
                   "total_timesteps": 500_000, "ent_coef": 0.01}

_BYTE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class Run:
    """A finished (or stopped) training run: `path` its folder, `checkpoint` its
    model.safetensors, `final` the last metrics row with the run's summary (mean_return_100,
    global_step, episodes, sps, solved_step, train_seconds), `history` every metrics row (dicts
    with global_step, iteration and CleanRL's names), `interrupted` whether it was stopped."""

    def __init__(self, summary, history):
        self.path = summary.run_dir.decode()
        self.checkpoint = os.path.join(self.path, "model.safetensors")
        self.history = history
        self.interrupted = bool(summary.interrupted)
        final = dict(history[-1]) if history else {}
        for f in ("global_step", "episodes", "mean_return_100", "sps", "solved_step",
                  "train_seconds"):
            final[f] = getattr(summary, f)
        self.final = final

    def __repr__(self):
        return "Run(%r, global_step=%d, mean_return_100=%.1f%s)" % (
            self.path, self.final["global_step"], self.final["mean_return_100"],
            ", interrupted" if self.interrupted else "")


def _flag(name):
    return "--" + name.replace("_", "-")


def _set(cfg, name, ctype, kind, value):
    """cfg.name = value read as `kind`; ValueError naming the flag where it cannot be."""
    flag = _flag(name)
    if kind in ("int", "i64", "u64"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("%s takes an integer, got %r" % (flag, value))
        bits = ctypes.sizeof(ctype) * 8
        lo, hi = (0, (1 << bits) - 1) if kind == "u64" else (-(1 << bits - 1), (1 << bits - 1) - 1)
        if not lo <= value <= hi:
            raise ValueError("%s is %d, out of the range of its %d-bit field" % (flag, value, bits))
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("%s takes a number, got %r" % (flag, value))
        value = float(value)
    elif kind == "bool":
        if value not in (True, False, 0, 1):
            raise ValueError("%s takes True or False, got %r" % (flag, value))
        value = int(bool(value))
    elif kind == "str":
        if not isinstance(value, str):
            raise ValueError("%s takes a string, got %r" % (flag, value))
        raw = value.encode()
        if len(raw) >= ctypes.sizeof(ctype):
            raise ValueError("%s is %d bytes; at most %d" % (flag, len(raw),
                                                              ctypes.sizeof(ctype) - 1))
        value = raw
    elif kind == "device":
        value = _lib.device_code(value, flag)
    elif kind == "precision":
        value = _lib.precision_code(value, flag)
    elif kind == "bytes":
        value = _bytes(flag, value)
    setattr(cfg, name, value)


def _bytes(flag, value):
    """A byte count: an int, or a string with a binary unit ("512M", "2G", "1.5GiB")."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        t = value.strip().lower()
        for suffix in ("ib", "b"):
            if t.endswith(suffix) and len(t) > len(suffix):
                t = t[:-len(suffix)]
                break
        unit = t[-1:] if t[-1:] in _BYTE_UNITS and t[-1:] != "" else ""
        try:
            n = float(t[:-1] if unit else t)
        except ValueError:
            n = float("nan")
        if math.isfinite(n) and n >= 0 and (unit or n == int(n)):
            return int(n * _BYTE_UNITS[unit])
    raise ValueError("%s %r is not a byte count; give an int of bytes or a string such as "
                     "'512M' or '2G'" % (flag, value))


def _fields(algo):
    return _lib.PPO_FIELDS if algo == "ppo" else _lib.DQN_FIELDS


def _apply(cfg, algo, flags):
    kinds = {n: (t, k) for n, t, k in _fields(algo) if k}
    for key, value in flags.items():
        name = "async" if key == "async_" else key
        if name not in kinds:
            close = sorted(kinds)
            raise ValueError("%s is not a flag of cudarl train%s; the flags: %s" %
                             (_flag(name), " --algo dqn" if algo == "dqn" else "",
                              ", ".join(close)))
        ctype, kind = kinds[name]
        _set(cfg, name, ctype, kind, value)


class _Stopper:
    """SIGINT (Ctrl-C) during the run asks it to stop and write its checkpoint, as the CLI's
    handler does: Python runs its handler when the run's metrics callback hands it control."""

    def __enter__(self):
        self.old = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, lambda *_: _lib.request_stop())
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)


def train(algo="ppo", env=None, callback=None, resume=None, vectorization="sync", **flags):
    """Trains PPO (algo="ppo") or DQN (algo="dqn") on `env`, a built-in env id ("CartPole-v1",
    "MinAtar/Breakout-v1", ...; `cudarl info` lists them), with `flags` the CLI's flags as
    keywords. callback(metrics) gets each metrics row (a dict: global_step, iteration and
    CleanRL's names such as "charts/episodic_return") and may return True to stop the run, which
    then writes its checkpoint. resume: a checkpoint of `algo` to continue (its run folder and
    hyperparameters; only the flags the CLI lets a resume change may be given). Ctrl-C stops the
    run with its checkpoint. Returns a Run.

    env may also be a Gymnasium env: an id ("LunarLander-v3"; "gym:Acrobot-v1" for Gymnasium's
    own where cudarl has an env of that id), a callable that makes a
    gymnasium.Env, or a gymnasium.vector.VectorEnv made with autoreset_mode SAME_STEP (Box
    observations, Discrete actions). Its envs step in Python (vectorization "sync", or "async":
    a process per env), the policy and the learner in cudarl; PPO's defaults there are CleanRL
    ppo.py's (4 envs x 128 steps, learning rate 2.5e-4, entropy 0.01, 500,000 steps)."""
    if algo not in ("ppo", "dqn"):
        raise ValueError("algo=%r is not available; choose 'ppo' or 'dqn'" % (algo,))
    adapter, made = None, False
    if env is not None and not gym_env.is_builtin(env):
        if resume is not None:
            raise ValueError("resume= with a Gymnasium env: not supported yet; resume runs on "
                             "cudarl's own envs")
        box = gym_env.has_box_actions(env)
        # Discrete: CleanRL ppo.py's 4 envs; Box: ppo_continuous_action.py's one env of 2048
        # steps (its other settings are cudarl's continuous preset, applied in C)
        n = flags.get("num_envs", getattr(env, "num_envs", 1 if box else 4))
        if algo == "ppo" and not box:
            for k, v in _PPO_PYTHON_ENV.items():
                if k != "num_envs" or not hasattr(env, "num_envs"):
                    flags.setdefault(k, v)
        if algo == "ppo" and box and isinstance(n, int) and n >= 1 and 2048 % n == 0:
            flags.setdefault("num_steps", 2048 // n)
        vec, made = gym_env.make_vec(env, n, vectorization)
        label = (env[4:] if isinstance(env, str) and env.startswith("gym:") else
                 env if isinstance(env, str) else
                 getattr(getattr(vec, "spec", None), "id", None) or
                 getattr(env, "__name__", type(env).__name__))
        try:
            adapter = gym_env.Adapter(vec, label)
            adapter.register()
        except BaseException:
            if made:
                vec.close()
            raise
        flags["env_id"] = adapter.cudarl_id
        flags.setdefault("num_envs", adapter.n)
    elif env is not None:
        flags["env_id"] = env
    Config = _lib.PPOConfig if algo == "ppo" else _lib.DQNConfig
    config_load = _lib.ppo_config_load if algo == "ppo" else _lib.dqn_config_load
    cfg = Config()
    # the device first: the context decides the preset
    probe = Config()
    (_lib.ppo_config_default if algo == "ppo" else _lib.dqn_config_default)(probe, None)
    for key in ("device", "actor_device"):
        if key in flags:
            _apply(probe, algo, {key: flags[key]})
    actor = max(getattr(probe, "actor_device", 0), 0)
    device = probe.device
    ctx = ctypes.c_void_p()
    check(_lib.ctx_init(ctypes.byref(ctx), device, actor))
    try:
        if resume is not None:
            bad = sorted(set(flags) - _RESUME_OVERRIDABLE)
            if bad:
                raise ValueError("%s cannot be changed with resume=: a resumed run keeps its "
                                 "checkpoint's hyperparameters; drop it, or start a new run" %
                                 ", ".join(_flag(b) for b in bad))
            check(config_load(os.fsencode(resume), cfg))
            folder = os.path.dirname(os.path.realpath(resume))
            _set(cfg, "runs_dir", ctypes.c_char * 256, "str", os.path.dirname(folder))
            _set(cfg, "run_name", ctypes.c_char * 128, "str", os.path.basename(folder))
        elif algo == "ppo":
            _lib.ppo_config_default(cfg, None)
            _lib.ppo_config_for_device(cfg, _lib.ctx_kind(ctx))
            policy = flags.get("policy", "mlp")
            _lib.ppo_config_for_policy(cfg, policy.encode() if isinstance(policy, str) else b"")
            env_id = flags.get("env_id")
            _lib.ppo_config_for_env_on(cfg, env_id.encode() if isinstance(env_id, str) else None,
                                       _lib.ctx_kind(ctx))
        else:
            _lib.dqn_config_default(cfg, None)
            _lib.dqn_config_for_device(cfg, _lib.ctx_kind(ctx))
            env_id = flags.get("env_id")
            _lib.dqn_config_for_env_on(cfg, env_id.encode() if isinstance(env_id, str) else None,
                                       _lib.ctx_kind(ctx))
        _apply(cfg, algo, flags)
        check((_lib.ppo_config_validate if algo == "ppo" else _lib.dqn_config_validate)(cfg))
        history, failure = [], []

        def on_metrics(m, user):
            row = {"global_step": m.contents.global_step, "iteration": m.contents.iteration}
            for k in range(m.contents.count):
                row[m.contents.names[k].decode()] = m.contents.values[k]
            history.append(row)
            if callback is None:
                return 0
            try:
                return 1 if callback(row) else 0
            except BaseException as e:  # raised again once the run has stopped
                failure.append(e)
                return 1

        cfg.on_metrics = _lib.MetricsFn(on_metrics)
        summary = _lib.TrainSummary()
        with _Stopper():
            if algo == "ppo":
                status = _lib.ppo_train(ctx, cfg, os.fsencode(resume) if resume else None,
                                        summary)
            elif resume:
                status = _lib.dqn_train_resume(ctx, cfg, os.fsencode(resume), summary)
            else:
                status = _lib.dqn_train(ctx, cfg, summary)
        if failure:
            raise failure[0]
        if adapter is not None and adapter.failure:
            raise adapter.failure[0]
        check(status)
        return Run(summary, history)
    finally:
        _lib.ctx_free(ctx)
        if made and adapter is not None:
            adapter.vec.close()
