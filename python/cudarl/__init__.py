"""cudarl: reinforcement learning in C and CUDA, from Python.

    import cudarl
    policy = cudarl.Policy.load("runs/CartPole-v1__ppo__1__.../model.safetensors")
    actions = policy.act(obs)            # numpy (n, obs_dim) in, int32 actions out

The C library (libcudarl.so, inside this package) does the work; docs/python.md has the rest."""
import ctypes

import numpy as np

from . import _dlpack, _lib
from ._errors import Error, check
from .training import Run, train
from .vec import make_vec

__version__ = _lib.version().decode()

_DEVICE_NAMES = {v: k for k, v in _lib.DEVICES.items()}


_check = check


def info():
    """The build's options and the devices it sees, as `cudarl info` prints them."""
    buf = ctypes.create_string_buffer(8192)
    _lib.info(buf, len(buf))
    return buf.value.decode()


def cuda_device_count():
    """Usable GPUs: 0 without one, or in a build without CUDA."""
    return _lib.cuda_device_count()


class Policy:
    """A trained policy loaded for acting (the C policy runtime: every buffer allocated at load,
    one CUDA graph per batch size on the GPU, nothing allocated per call)."""

    def __init__(self, handle):
        self._h = handle
        inf = _lib.PolicyInfo()
        _lib.policy_get_info(self._h, ctypes.byref(inf))
        self._info = inf
        self._dtype = np.uint8 if inf.obs_dtype == 1 else np.float32
        self._dtype_code = inf.obs_dtype
        self._np_dtype = np.dtype(self._dtype)
        # act()'s outputs, written by the C call and copied out: actions, values, logits
        # a Gaussian policy's actions are float (n, action_dim): its mean in the env's box
        acts = (np.empty((inf.max_batch, inf.action_dim), np.float32) if inf.action_dim
                else np.empty(inf.max_batch, np.int32))
        self._out = (acts, np.empty(inf.max_batch, np.float32),
                     np.empty((inf.max_batch, inf.num_actions), np.float32))
        self._out_p = tuple(ctypes.c_void_p(o.ctypes.data) for o in self._out)

    @classmethod
    def load(cls, path, device="auto", precision="fp32", max_batch=1, deadline_us=0.0):
        """Loads the policy in `path` (a model.safetensors of cudarl train). device: 'auto' (the
        GPU where there is one and it runs this network), 'cpu' or 'cuda' / 'cuda:N';
        precision: fp32, or on the GPU tf32, bf16, fp16 (conv policies); max_batch: most rows one
        act() takes (1 .. 65536); deadline_us: an act() longer than this counts as a miss."""
        opt = _lib.PolicyOptions()
        _lib.policy_options_default(ctypes.byref(opt))
        index = 0
        if isinstance(device, str) and device.startswith("cuda:"):
            try:
                index = int(device[5:])
            except ValueError:
                raise ValueError("device=%r: write cuda:N with N a GPU index" % (device,))
            device = "cuda"
        opt.device, opt.device_index = _lib.device_code(device, "device"), index
        opt.precision = _lib.precision_code(precision, "precision")
        if not isinstance(max_batch, int) or isinstance(max_batch, bool):
            raise ValueError("max_batch=%r must be an int from 1 to 65536" % (max_batch,))
        opt.max_batch = max_batch
        opt.deadline_us = float(deadline_us)
        h = ctypes.c_void_p()
        _check(_lib.policy_load(str(path).encode(), ctypes.byref(opt), ctypes.byref(h)))
        return cls(h)

    @property
    def info(self):
        """What the policy is: algo, env_id, obs_dim, num_actions, device, precision, ..."""
        i = self._info
        return {"algo": i.algo.decode(), "env_id": i.env_id.decode(),
                "obs_dtype": "uint8" if i.obs_dtype == 1 else "float32",
                "obs_dim": i.obs_dim, "num_actions": i.num_actions,
                "has_values": bool(i.has_values), "device": _DEVICE_NAMES[i.device],
                "device_index": i.device_index, "max_batch": i.max_batch,
                "network": i.network.decode(), "precision": _lib.PRECISIONS[i.precision],
                "host_bytes": i.host_bytes, "device_bytes": i.device_bytes,
                "action_dim": i.action_dim,
                "action_low": [i.action_low[k] for k in range(i.action_dim)],
                "action_high": [i.action_high[k] for k in range(i.action_dim)]}

    def act(self, obs, values=False, logits=False):
        """The greedy actions of `obs`: a numpy array (n, obs_dim), or (obs_dim,) for one row,
        of the policy's dtype (float32 features, uint8 pixels). Returns int32 actions (n,) (one
        int32 for one row), and with values=True / logits=True a tuple (actions, values (n,),
        logits (n, actions)). A Gaussian policy (info["action_dim"] > 0) returns its mean action
        clipped into the env's box, float32 (n, action_dim) (one row: (action_dim,)), and its
        logits are the unclipped means."""
        a = obs
        if type(a) is not np.ndarray and hasattr(a, "__dlpack__"):
            with _dlpack.View(a) as v:
                if not v.contiguous:
                    raise ValueError("obs is not contiguous; pass a contiguous array "
                                     "(.contiguous())")
                if v.device != "cpu" and self._info.device != 2:
                    raise ValueError("obs is on %s and this policy runs on the CPU; move it to "
                                     "the host or load the policy with device='cuda'" % v.device)
                one, n = self._rows(v.shape, v.dtype or "another dtype", values)
                return self._act(v.ptr, n, one, values, logits)
        if type(a) is not np.ndarray or not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        one, n = self._rows(a.shape, a.dtype, values)
        # the address of obs: through the buffer protocol where it is writable (a third of the
        # cost of .ctypes.data), else .ctypes.data
        ptr = ctypes.byref(ctypes.c_char.from_buffer(a)) if a.flags.writeable else a.ctypes.data
        return self._act(ptr, n, one, values, logits)

    def _rows(self, shape, dtype, values):
        """(one row?, rows) of an obs of `shape` and `dtype`, or ValueError naming the fix."""
        i = self._info
        if len(shape) not in (1, 2) or shape[-1] != i.obs_dim:
            raise ValueError("obs has shape %s; this policy takes (n, %d) (or (%d,) for one row)"
                             % (tuple(shape), i.obs_dim, i.obs_dim))
        if self._np_dtype != dtype:  # a numpy dtype, or DLPack's name ("float32")
            raise ValueError("obs is %s; this policy takes %s" % (dtype, self._np_dtype))
        one = len(shape) == 1
        n = 1 if one else shape[0]
        if not 1 <= n <= i.max_batch:
            raise ValueError("obs has %d rows; act() takes 1 to max_batch=%d (load with a larger "
                             "max_batch)" % (n, i.max_batch))
        if self._h is None:
            raise ValueError("act() on a closed Policy")
        if values and not i.has_values:
            raise ValueError("values=True: a %s policy has no value head" % i.algo.decode())
        return one, n

    def _act(self, ptr, n, one, values, logits):
        """The C call on n rows at `ptr`, and its outputs copied out of the policy's buffers."""
        _check(_lib.policy_act(self._h, ptr, self._dtype_code, n, self._out_p[0],
                               self._out_p[1] if values else None,
                               self._out_p[2] if logits else None))
        if one:
            act = self._out[0][0]
            if self._info.action_dim:
                act = act.copy()
            if not values and not logits:
                return act
            out = (act,) + ((self._out[1][0],) if values else ())
            return out + ((self._out[2][0].copy(),) if logits else ())
        act = self._out[0][:n].copy()
        if not values and not logits:
            return act
        out = (act,) + ((self._out[1][:n].copy(),) if values else ())
        return out + ((self._out[2][:n].copy(),) if logits else ())

    def latency(self):
        """act()'s latency so far: count, p50_us, p99_us, max_us, deadline_us, deadline_misses."""
        s = _lib.LatencyStats()
        _check(_lib.policy_latency(self._h, ctypes.byref(s)))
        return {f: getattr(s, f) for f, _ in _lib.LatencyStats._fields_}

    def close(self):
        """Frees the policy now (else when it is garbage-collected)."""
        if self._h is not None:
            _lib.policy_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


__all__ = ["Error", "Policy", "Run", "train", "make_vec", "info", "cuda_device_count", "__version__"]
