"""The C library through ctypes: loading libcudarl.so, the prototypes of the functions the
package calls, and mirrors of the public structs it passes, each checked at import against the
library's own sizeof (cudarl_sizeof), so a mirror that drifts from include/cudarl.h fails here
rather than corrupting memory.

Why ctypes (docs/python.md): the C library stays the one implementation and no second compiled
module exists to build or keep in step; ctypes releases the GIL for the length of every foreign
call, so training and acting leave other Python threads running; a Python callback called from C
takes the GIL back by itself. The price, a microsecond or two per call, is measured for
Policy.act in bench/RESULTS.md."""
import ctypes
import os

c_int, c_int64, c_double, c_size_t, c_char_p, c_void_p = (
    ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_size_t, ctypes.c_char_p,
    ctypes.c_void_p)


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "libcudarl.so")
    if not os.path.exists(path):
        raise ImportError(
            "cudarl: %s is missing: install the package with `pip install .` from the "
            "repository (it builds the library), not by copying python/cudarl" % path)
    return ctypes.CDLL(path)


lib = _load()


class PolicyOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("device", c_int), ("device_index", c_int), ("precision", c_int),
                ("max_batch", c_int), ("deadline_us", c_double)]


class PolicyInfo(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_char * 8), ("env_id", ctypes.c_char * 64),
                ("obs_dtype", c_int), ("obs_dim", c_int), ("num_actions", c_int),
                ("has_values", c_int), ("device", c_int), ("device_index", c_int),
                ("max_batch", c_int), ("graph_batches", c_int), ("host_bytes", c_size_t),
                ("device_bytes", c_size_t), ("pinned_bytes", c_size_t),
                ("network", ctypes.c_char * 32), ("precision", c_int),
                ("context_bytes", c_size_t), ("action_dim", c_int),
                ("action_low", ctypes.c_float * 32), ("action_high", ctypes.c_float * 32)]


class LatencyStats(ctypes.Structure):
    _fields_ = [("count", c_int64), ("window", c_int64), ("p50_us", c_double),
                ("p99_us", c_double), ("max_us", c_double), ("deadline_us", c_double),
                ("deadline_misses", c_int64)]


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


version = _proto("cudarl_version", c_char_p)
abi_version = _proto("cudarl_abi_version", c_int)
sizeof = _proto("cudarl_sizeof", c_size_t, c_char_p)
status_name = _proto("cudarl_status_name", c_char_p, c_int)
last_error = _proto("cudarl_last_error", c_char_p)
info = _proto("cudarl_info", None, ctypes.c_char_p, c_size_t)
cuda_device_count = _proto("cudarl_cuda_device_count", c_int)
precision_parse = _proto("cudarl_precision_parse", c_int, c_char_p, ctypes.POINTER(c_int))
_policy_options_default_sized = _proto("cudarl_policy_options_default_sized", c_int,
                                      ctypes.POINTER(PolicyOptions), c_size_t)


def policy_options_default(opt):
    """cudarl_policy_options_default (a static inline function of cudarl.h): the defaults, with
    struct_size the mirror's size."""
    return _policy_options_default_sized(opt, ctypes.sizeof(PolicyOptions))


policy_load = _proto("cudarl_policy_load", c_int, c_char_p, ctypes.POINTER(PolicyOptions),
                     ctypes.POINTER(c_void_p))
policy_act = _proto("cudarl_policy_act", c_int, c_void_p, c_void_p, c_int, c_int, c_void_p,
                    c_void_p, c_void_p)
policy_get_info = _proto("cudarl_policy_get_info", None, c_void_p, ctypes.POINTER(PolicyInfo))
policy_latency = _proto("cudarl_policy_latency", c_int, c_void_p, ctypes.POINTER(LatencyStats))
policy_free = _proto("cudarl_policy_free", None, c_void_p)

def check_mirror(mirror, name):
    """ImportError unless the ctypes mirror `mirror` has the size of the library's struct."""
    if ctypes.sizeof(mirror) != sizeof(name.encode()):
        raise ImportError("cudarl: the Python mirror of %s is %d bytes and the library's struct "
                          "%d: the package and libcudarl.so come from different versions; "
                          "reinstall the package" % (name, ctypes.sizeof(mirror),
                                                     sizeof(name.encode())))


def device_code(value, what):
    """The cudarl_device_kind of "auto", "cpu" or "cuda"; ValueError naming `what` else."""
    if value not in DEVICES:
        raise ValueError("%s %r is not a device; use 'cpu', 'cuda' or 'auto'" % (what, value))
    return DEVICES[value]


def precision_code(value, what):
    """The cudarl_precision of "fp32", "tf32", "bf16" or "fp16"; ValueError naming `what` else."""
    code = ctypes.c_int()
    if not isinstance(value, str) or precision_parse(value.encode(), ctypes.byref(code)) != 0:
        raise ValueError("%s %r is not a precision; use %s" % (what, value, ", ".join(PRECISIONS)))
    return code.value


DEVICES = {"auto": 0, "cpu": 1, "cuda": 2}  # cudarl_device_kind
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")  # cudarl_precision, in its order

check_mirror(PolicyOptions, "cudarl_policy_options")
check_mirror(PolicyInfo, "cudarl_policy_info")
check_mirror(LatencyStats, "cudarl_latency_stats")


# ---- training ---------------------------------------------------------------------------

class Metrics(ctypes.Structure):
    _fields_ = [("global_step", c_int64), ("iteration", c_int64), ("count", c_int),
                ("names", ctypes.POINTER(c_char_p)), ("values", ctypes.POINTER(c_double))]


MetricsFn = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(Metrics), c_void_p)

# Each config field: (name, ctypes type, kind) where kind is how a keyword value is read:
# "int", "i64", "u64", "float", "bool", "str", "device", "precision", "bytes"; None: not a flag.
PPO_FIELDS = [
    ("struct_size", c_size_t, None), ("env_id", ctypes.c_char * 64, "str"), ("run_name", ctypes.c_char * 128, "str"),
    ("runs_dir", ctypes.c_char * 256, "str"), ("seed", ctypes.c_uint64, "u64"),
    ("total_timesteps", c_int64, "i64"), ("learning_rate", c_double, "float"),
    ("num_envs", c_int, "int"), ("num_steps", c_int, "int"), ("anneal_lr", c_int, "bool"),
    ("gamma", c_double, "float"), ("gae_lambda", c_double, "float"),
    ("num_minibatches", c_int, "int"), ("update_epochs", c_int, "int"),
    ("norm_adv", c_int, "bool"), ("clip_coef", c_double, "float"),
    ("clip_vloss", c_int, "bool"), ("ent_coef", c_double, "float"),
    ("vf_coef", c_double, "float"), ("max_grad_norm", c_double, "float"),
    ("target_kl", c_double, "float"), ("hidden", c_int, "int"),
    ("policy", ctypes.c_char * 16, "str"), ("separate_critic", c_int, "bool"),
    ("threads", c_int, "int"), ("device", c_int, "device"), ("env_device", c_int, "device"),
    ("env_threads", c_int, "int"), ("env_groups", c_int, "int"), ("async", c_int, "bool"),
    ("actor_device", c_int, "int"), ("learner_device", c_int, "int"),
    ("checkpoint_every", c_int, "int"), ("quiet", c_int, "bool"), ("profile", c_int, "bool"),
    ("precision", c_int, "precision"), ("on_metrics", MetricsFn, None),
    ("on_metrics_user", c_void_p, None), ("norm_obs", c_int, "bool"),
    ("norm_reward", c_int, "bool"), ("config_toml", c_char_p, None),
]
DQN_FIELDS = [
    ("struct_size", c_size_t, None), ("env_id", ctypes.c_char * 64, "str"), ("run_name", ctypes.c_char * 128, "str"),
    ("runs_dir", ctypes.c_char * 256, "str"), ("seed", ctypes.c_uint64, "u64"),
    ("total_timesteps", c_int64, "i64"), ("learning_rate", c_double, "float"),
    ("num_envs", c_int, "int"), ("buffer_size", c_int64, "i64"), ("gamma", c_double, "float"),
    ("tau", c_double, "float"), ("target_network_frequency", c_int64, "i64"),
    ("batch_size", c_int, "int"), ("start_e", c_double, "float"), ("end_e", c_double, "float"),
    ("exploration_fraction", c_double, "float"), ("learning_starts", c_int64, "i64"),
    ("train_frequency", c_int64, "i64"), ("double_dqn", c_int, "bool"),
    ("prioritized", c_int, "bool"), ("prioritized_alpha", c_double, "float"),
    ("prioritized_beta", c_double, "float"), ("prioritized_eps", c_double, "float"),
    ("huber", c_int, "bool"), ("max_grad_norm", c_double, "float"), ("hidden1", c_int, "int"),
    ("hidden2", c_int, "int"), ("policy", ctypes.c_char * 16, "str"),
    ("mem_budget", c_int64, "bytes"), ("threads", c_int, "int"), ("device", c_int, "device"),
    ("quiet", c_int, "bool"), ("env_device", c_int, "device"), ("env_threads", c_int, "int"),
    ("replay_frames", c_int, "bool"), ("precision", c_int, "precision"),
    ("on_metrics", MetricsFn, None), ("on_metrics_user", c_void_p, None),
    ("config_toml", c_char_p, None),
]


class PPOConfig(ctypes.Structure):
    _fields_ = [(n, t) for n, t, _ in PPO_FIELDS]


class DQNConfig(ctypes.Structure):
    _fields_ = [(n, t) for n, t, _ in DQN_FIELDS]


class TrainSummary(ctypes.Structure):
    _fields_ = [("global_step", c_int64), ("run_steps", c_int64), ("episodes", c_int64),
                ("mean_return_100", c_double), ("train_seconds", c_double), ("sps", c_double),
                ("solved_step", c_int64), ("solved_seconds", c_double),
                ("run_dir", ctypes.c_char * 512), ("interrupted", c_int),
                ("device_bytes_after_setup", c_int64), ("device_bytes_growth", c_int64),
                ("arena_bytes", c_int64), ("solved_unix_time", c_double),
                ("host_syncs_per_iteration", c_double)]


ctx_init = _proto("cudarl_ctx_init", c_int, ctypes.POINTER(c_void_p), c_int, c_int)
ctx_free = _proto("cudarl_ctx_free", None, c_void_p)
ctx_kind = _proto("cudarl_ctx_kind", c_int, c_void_p)
request_stop = _proto("cudarl_request_stop", None)
_ppo_config_default_sized = _proto("cudarl_ppo_config_default_sized", c_int,
                                   ctypes.POINTER(PPOConfig), c_size_t, c_char_p)
ppo_config_for_device = _proto("cudarl_ppo_config_for_device", None, ctypes.POINTER(PPOConfig),
                               c_int)
ppo_config_for_policy = _proto("cudarl_ppo_config_for_policy", None, ctypes.POINTER(PPOConfig),
                               c_char_p)
ppo_config_for_env_on = _proto("cudarl_ppo_config_for_env_on", None, ctypes.POINTER(PPOConfig),
                               c_char_p, c_int)
ppo_config_validate = _proto("cudarl_ppo_config_validate", c_int, ctypes.POINTER(PPOConfig))
_ppo_config_load_sized = _proto("cudarl_ppo_config_load_sized", c_int, c_char_p,
                                ctypes.POINTER(PPOConfig), c_size_t)
ppo_train = _proto("cudarl_ppo_train", c_int, c_void_p, ctypes.POINTER(PPOConfig), c_char_p,
                   ctypes.POINTER(TrainSummary))
_dqn_config_default_sized = _proto("cudarl_dqn_config_default_sized", c_int,
                                   ctypes.POINTER(DQNConfig), c_size_t, c_char_p)
dqn_config_for_device = _proto("cudarl_dqn_config_for_device", None, ctypes.POINTER(DQNConfig),
                               c_int)
dqn_config_for_env_on = _proto("cudarl_dqn_config_for_env_on", None, ctypes.POINTER(DQNConfig),
                               c_char_p, c_int)
dqn_config_validate = _proto("cudarl_dqn_config_validate", c_int, ctypes.POINTER(DQNConfig))
_dqn_config_load_sized = _proto("cudarl_dqn_config_load_sized", c_int, c_char_p,
                                ctypes.POINTER(DQNConfig), ctypes.c_size_t)


def dqn_config_load(path, cfg):
    return _dqn_config_load_sized(path, cfg, ctypes.sizeof(DQNConfig))
dqn_train_resume = _proto("cudarl_dqn_train_resume", c_int, c_void_p, ctypes.POINTER(DQNConfig),
                          c_char_p, ctypes.POINTER(TrainSummary))
dqn_train = _proto("cudarl_dqn_train", c_int, c_void_p, ctypes.POINTER(DQNConfig),
                   ctypes.POINTER(TrainSummary))



# cudarl.h's static inline functions of these names: the *_sized entry points with the size of
# the mirror, which the library checks (struct_size) as it checks a C caller's sizeof.
def ppo_config_default(cfg, env_id):
    return _ppo_config_default_sized(cfg, ctypes.sizeof(PPOConfig), env_id)


def ppo_config_load(path, cfg):
    return _ppo_config_load_sized(path, cfg, ctypes.sizeof(PPOConfig))


def dqn_config_default(cfg, env_id):
    return _dqn_config_default_sized(cfg, ctypes.sizeof(DQNConfig), env_id)


check_mirror(PPOConfig, "cudarl_ppo_config")
check_mirror(DQNConfig, "cudarl_dqn_config")
check_mirror(TrainSummary, "cudarl_train_summary")


# ---- environments -----------------------------------------------------------------------

VecResetFn = ctypes.CFUNCTYPE(None, c_void_p, c_int, ctypes.c_uint64, c_void_p)
VecStepFn = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_void_p, c_void_p, c_void_p, c_void_p,
                             c_void_p, c_void_p)


ACTION_DIM_MAX = 32  # CUDARL_ACTION_DIM_MAX


class EnvDef(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("id", c_char_p), ("obs_rank", c_int), ("obs_shape", c_int * 3),
                ("obs_dtype", c_int), ("num_actions", c_int), ("max_episode_steps", c_int),
                ("solved_return", c_double), ("state_bytes", c_size_t), ("seed", c_void_p),
                ("reset", c_void_p), ("step", c_void_p), ("frame_stack", c_int),
                ("state_check", c_void_p),
                ("vec_reset", VecResetFn), ("vec_step", VecStepFn), ("vec_user", c_void_p),
                ("vec_num_envs", c_int), ("action_dim", c_int),
                ("action_low", ctypes.c_float * ACTION_DIM_MAX),
                ("action_high", ctypes.c_float * ACTION_DIM_MAX), ("step_box", c_void_p)]


env_register = _proto("cudarl_env_register", c_int, ctypes.POINTER(EnvDef))
env_find = _proto("cudarl_env_find", c_void_p, c_char_p)

check_mirror(EnvDef, "cudarl_env_def")


# ---- env batches (cudarl.make_vec) ---------------------------------------------------------

class VecBuffers(ctypes.Structure):
    _fields_ = [("obs", c_void_p), ("reward", c_void_p), ("terminated", c_void_p),
                ("truncated", c_void_p), ("final_obs", c_void_p), ("actions", c_void_p),
                ("device", c_int)]


vec_create = _proto("cudarl_vec_create", c_int, c_void_p, c_char_p, c_int, c_int,
                    ctypes.POINTER(c_void_p))
vec_get_buffers = _proto("cudarl_vec_get_buffers", None, c_void_p, ctypes.POINTER(VecBuffers))
vec_reset = _proto("cudarl_vec_reset", c_int, c_void_p, ctypes.c_uint64)
vec_step = _proto("cudarl_vec_step", c_int, c_void_p)
vec_free = _proto("cudarl_vec_free", None, c_void_p)

check_mirror(VecBuffers, "cudarl_vec_buffers")
