"""Gymnasium environments under cudarl's trainers: a vector env stepped in Python, registered
as a cudarl vector env (cudarl_env_def's vec_reset / vec_step) for the run. The policy and the
learner run in cudarl (CPU or GPU); each step hands the actions over and takes the observations,
rewards and flags back through the pool's host buffers (pinned on a GPU), which the adapter
views in place: nothing of cudarl's is allocated per step.

Autoreset: cudarl's envs reset an env in the step that ends its episode and keep the episode's
last observation apart (same-step autoreset; truncation then bootstraps from it). Gymnasium's
vector envs do that with autoreset_mode SAME_STEP, which the adapter asks for when it makes the
vector env; a VectorEnv handed in must have been made so (Gymnasium's default, NEXT_STEP, steps
an ended env once more to reset it, a step that is no transition) and is refused otherwise."""
import ctypes
import math

import numpy as np

from . import _lib


def is_builtin(env):
    """A cudarl env id (not "gym:<id>", which asks for Gymnasium's env of that id)."""
    return isinstance(env, str) and not env.startswith("gym:") and \
        bool(_lib.env_find(env.encode()))


def _gym():
    try:
        import gymnasium
    except ImportError:
        raise ValueError("env: training on a Gymnasium env needs gymnasium (pip install "
                         "gymnasium); cudarl's own envs: cudarl.info()")
    return gymnasium


def _same_step(gymnasium):
    mode = getattr(gymnasium.vector, "AutoresetMode", None)
    if mode is None:
        raise ValueError("env: gymnasium %s has no autoreset modes; install gymnasium >= 1.1 "
                         "(pip install -U gymnasium)" % gymnasium.__version__)
    return mode.SAME_STEP


def make_vec(env, num_envs, vectorization):
    """A Gymnasium VectorEnv in same-step autoreset for `env` (an id, a callable returning a
    gymnasium.Env, or a VectorEnv made with autoreset_mode SAME_STEP), and whether it was made
    here (to be closed after the run)."""
    gymnasium = _gym()
    same = _same_step(gymnasium)
    if isinstance(env, gymnasium.vector.VectorEnv):
        mode = env.metadata.get("autoreset_mode")
        if mode not in (same, "SameStep", "same_step"):
            raise ValueError("env: this VectorEnv resets in %s mode; cudarl needs same-step "
                             "autoreset: make it with autoreset_mode=gymnasium.vector."
                             "AutoresetMode.SAME_STEP" % (mode,))
        return env, False
    if vectorization not in ("sync", "async"):
        raise ValueError("vectorization=%r: use 'sync' (one process) or 'async' (a process "
                         "per env)" % (vectorization,))
    if isinstance(env, str):
        env = env[4:] if env.startswith("gym:") else env
        try:
            gymnasium.spec(env)
        except Exception as e:
            raise ValueError("env=%r is neither a cudarl env (cudarl.info() lists them) nor a "
                             "registered Gymnasium env (%s)" % (env, e))
        return gymnasium.make_vec(env, num_envs=num_envs, vectorization_mode=vectorization,
                                  vector_kwargs={"autoreset_mode": same}), True
    if callable(env):
        cls = (gymnasium.vector.SyncVectorEnv if vectorization == "sync"
               else gymnasium.vector.AsyncVectorEnv)
        return cls([env] * num_envs, autoreset_mode=same), True
    raise ValueError("env=%r: give a cudarl env id, a Gymnasium env id, a callable that makes a "
                     "gymnasium.Env, or a gymnasium.vector.VectorEnv" % (env,))


def has_box_actions(env):
    """Whether env's actions are a Box (continuous): a vector env's single_action_space, or the
    action_space of the env an id or a callable makes (made once here, then closed)."""
    gymnasium = _gym()
    space = getattr(env, "single_action_space", None)
    if space is None:
        try:  # an env that cannot be made is make_vec's to refuse, with its message
            one = gymnasium.make(env[4:] if env.startswith("gym:") else env) \
                if isinstance(env, str) else env()
        except Exception:
            return False
        try:
            space = one.action_space
        finally:
            one.close()
    return isinstance(space, gymnasium.spaces.Box)


class Adapter:
    """The vector env as a cudarl vector env: register() puts it in cudarl's registry under
    `cudarl_id` for the run; failure holds an exception raised by a step (the run is then asked
    to stop, and train raises it)."""

    def __init__(self, vec, label):
        gymnasium = _gym()
        obs_space, act_space = vec.single_observation_space, vec.single_action_space
        box = isinstance(act_space, gymnasium.spaces.Box)
        if box and (len(act_space.shape) != 1 or not 1 <= act_space.shape[0] <= 32 or
                    not np.all(np.isfinite(act_space.low)) or
                    not np.all(np.isfinite(act_space.high))):
            raise ValueError("env %s: its action space is %s; cudarl takes a Box of 1 to 32 "
                             "actions with finite bounds" % (label, act_space))
        if not box and (not isinstance(act_space, gymnasium.spaces.Discrete) or
                        act_space.start != 0):
            raise ValueError("env %s: its action space is %s; cudarl trains Discrete actions "
                             "from 0 or a Box of floats" % (label, act_space))
        if not isinstance(obs_space, gymnasium.spaces.Box):
            raise ValueError("env %s: its observation space is %s; cudarl takes Box "
                             "observations" % (label, obs_space))
        self.vec = vec
        self.n = vec.num_envs
        self.obs_dim = int(np.prod(obs_space.shape))
        self.action_dim = int(act_space.shape[0]) if box else 0
        self.num_actions = 0 if box else int(act_space.n)
        self.low = np.asarray(act_space.low, np.float32).reshape(-1) if box else None
        self.high = np.asarray(act_space.high, np.float32).reshape(-1) if box else None
        spec = getattr(vec, "spec", None)
        threshold = getattr(spec, "reward_threshold", None) if spec is not None else None
        self.solved = float(threshold) if threshold is not None else 1e300
        self.cudarl_id = ("py:" + label)[:63]
        self.failure = []
        self._views = {}
        self._reset_fn = _lib.VecResetFn(self._reset)
        self._step_fn = _lib.VecStepFn(self._step)

    def register(self):
        d = _lib.EnvDef()
        d.struct_size = ctypes.sizeof(d)
        d.id = self.cudarl_id.encode()
        d.obs_rank = 1
        d.obs_shape[0], d.obs_shape[1], d.obs_shape[2] = self.obs_dim, 1, 1
        d.obs_dtype = 0
        d.num_actions = self.num_actions
        d.action_dim = self.action_dim
        for k in range(self.action_dim):
            d.action_low[k], d.action_high[k] = float(self.low[k]), float(self.high[k])
        d.solved_return = self.solved if math.isfinite(self.solved) else 1e300
        d.vec_reset, d.vec_step = self._reset_fn, self._step_fn
        d.vec_num_envs = self.n
        from ._errors import check
        check(_lib.env_register(ctypes.byref(d)))

    def _view(self, ptr, ctype, shape):
        key = (ptr, ctype, shape)
        v = self._views.get(key)
        if v is None:
            v = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)), shape=shape)
            self._views[key] = v
        return v

    def _reset(self, user, n, seed, obs_p):
        try:
            obs, _ = self.vec.reset(seed=int(seed))
            self._view(obs_p, ctypes.c_float, (n, self.obs_dim))[:] = obs.reshape(n, -1)
        except BaseException as e:
            self._fail(e)

    def _step(self, user, n, act_p, obs_p, rew_p, term_p, trunc_p, final_p):
        try:
            if self.action_dim:  # float (n, K), clipped into the box by cudarl
                actions = self._view(act_p, ctypes.c_float, (n, self.action_dim)).copy()
            else:
                actions = self._view(act_p, ctypes.c_int32, (n,)).astype(np.int64)
            obs, rew, term, trunc, info = self.vec.step(actions)
            if not (np.isfinite(obs).all() and np.isfinite(rew).all()):
                bad = "observation" if not np.isfinite(obs).all() else "reward"
                raise ValueError("env %s returned a non-finite %s (NaN or inf) for the actions "
                                 "%s; cudarl learns from finite numbers only: fix the env (or "
                                 "wrap it to clip or replace them)" %
                                 (self.cudarl_id[3:], bad, np.array2string(actions[:4])))
            self._view(obs_p, ctypes.c_float, (n, self.obs_dim))[:] = obs.reshape(n, -1)
            self._view(rew_p, ctypes.c_float, (n,))[:] = rew
            self._view(term_p, ctypes.c_uint8, (n,))[:] = term
            self._view(trunc_p, ctypes.c_uint8, (n,))[:] = trunc
            ended = info.get("_final_obs")
            if ended is not None and ended.any():
                final = self._view(final_p, ctypes.c_float, (n, self.obs_dim))
                for i in np.flatnonzero(ended):
                    final[i] = np.asarray(info["final_obs"][i], np.float32).reshape(-1)
        except BaseException as e:
            self._fail(e)
            self._view(rew_p, ctypes.c_float, (n,))[:] = 0
            self._view(term_p, ctypes.c_uint8, (n,))[:] = 0
            self._view(trunc_p, ctypes.c_uint8, (n,))[:] = 0

    def _fail(self, e):
        if not self.failure:
            self.failure.append(e)
        _lib.request_stop()
