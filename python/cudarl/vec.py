"""cudarl.make_vec: cudarl's own envs as a gymnasium.vector.VectorEnv for a learner of your own
(torch, JAX, numpy). The batch is the C library's (cudarl_vec_*): on a GPU an env with a CUDA twin
(CartPole-v1 and the classic-control envs, and the image envs: CartPolePixels-v1 and MinAtar's
games) steps in device memory, any other env on CPU threads.
Observations, rewards and flags come back as numpy arrays, or, with array="dlpack", as objects any
DLPack consumer takes without a copy (torch.from_dlpack, jax.dlpack.from_dlpack): views of the
batch's own buffers, which the next step overwrites (copy what must be kept).

Streams: the GPU batch steps on a stream of its own and returns once that stream is done. Before
it steps (or resets), reset() and step() wait for torch's current stream on the batch's GPU where
torch has initialised CUDA in this process, so the actions torch wrote, and its reads of the last
observations, are complete; a learner in another framework waits for its own work first (JAX:
block_until_ready).

Autoreset: same-step, as cudarl's trainers see the envs (Gymnasium's AutoresetMode.SAME_STEP):
an env whose episode ended has the next episode's first observation in obs and the last one in
infos["final_obs"] (with the mask infos["_final_obs"])."""
import ctypes
import sys

import numpy as np

from . import _lib
from ._errors import check


class _DLPackArray:
    """A (device or host) buffer as a DLPack producer: shape, dtype, the memory it points to.
    Each __dlpack__ call hands out a new capsule whose deleter does nothing (the memory is the
    batch's; the views must not outlive the VecEnv)."""

    def __init__(self, ptr, shape, dtype, device, owner):
        self.ptr, self.shape, self.dtype, self.device, self._owner = ptr, shape, dtype, device, owner

    def __dlpack_device__(self):
        return (2, self.device) if self.device >= 0 else (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from . import _dlpack
        return _dlpack.capsule(self.ptr, self.shape, self.dtype, self.device, self)


def _wait_for_torch(device):
    """Waits for torch's current stream on CUDA device `device` when torch is loaded and has
    initialised CUDA: its writes into the batch's buffers (the actions) and its reads of them
    (the observations the next step overwrites) are then done. The batch steps on its own
    stream (non-blocking), which does not wait for torch's by itself."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.current_stream(device).synchronize()


def _gym():
    try:
        import gymnasium
    except ImportError:
        raise ImportError("cudarl.make_vec returns a gymnasium.vector.VectorEnv: pip install "
                          "gymnasium")
    return gymnasium


def make_vec(env_id, num_envs, device="cpu", seed=0, threads=0, array="numpy"):
    """A gymnasium.vector.VectorEnv of `num_envs` envs of cudarl's `env_id` ("CartPole-v1",
    "MinAtar/Breakout-v1", ...): device "cpu" (CPU threads; `threads`, 0: all cores) or "cuda"
    (the env's CUDA twin where it has one: CartPole-v1, the classic-control envs,
    CartPolePixels-v1 and MinAtar's games; else CPU threads with pinned buffers); array "numpy" (host copies) or "dlpack" (zero-copy views,
    device memory on the GPU)."""
    gymnasium = _gym()

    class CudarlVecEnv(gymnasium.vector.VectorEnv):
        metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}

        def __init__(self):
            if device not in ("cpu", "cuda"):
                raise ValueError("device=%r: use 'cpu' or 'cuda'" % (device,))
            if array not in ("numpy", "dlpack"):
                raise ValueError("array=%r: use 'numpy' or 'dlpack'" % (array,))
            if not isinstance(num_envs, int) or isinstance(num_envs, bool):
                raise ValueError("num_envs=%r must be an int, 1 .. 1048576" % (num_envs,))
            self._ctx, self._h = ctypes.c_void_p(), ctypes.c_void_p()
            check(_lib.ctx_init(ctypes.byref(self._ctx), _lib.DEVICES[device], 0))
            try:
                check(_lib.vec_create(self._ctx, str(env_id).encode(), num_envs, threads,
                                      ctypes.byref(self._h)))
            except BaseException:
                _lib.ctx_free(self._ctx)
                raise
            d = ctypes.cast(_lib.env_find(str(env_id).encode()), ctypes.POINTER(_lib.EnvDef))
            d = d.contents
            shape = tuple(d.obs_shape[i] for i in range(d.obs_rank))
            u8 = d.obs_dtype == 1
            self.num_envs = num_envs
            self.single_observation_space = gymnasium.spaces.Box(
                0 if u8 else -np.inf, 255 if u8 else np.inf, shape, np.uint8 if u8 else np.float32)
            K = d.action_dim
            self.single_action_space = (
                gymnasium.spaces.Box(np.array(d.action_low[:K], np.float32),
                                     np.array(d.action_high[:K], np.float32), (K,), np.float32)
                if K else gymnasium.spaces.Discrete(d.num_actions))
            act_shape, act_ct, act_dt = (((num_envs, K), ctypes.c_float, "float32") if K
                                         else ((num_envs,), ctypes.c_int32, "int32"))
            self.observation_space = gymnasium.vector.utils.batch_space(
                self.single_observation_space, num_envs)
            self.action_space = gymnasium.vector.utils.batch_space(
                self.single_action_space, num_envs)
            b = _lib.VecBuffers()
            _lib.vec_get_buffers(self._h, ctypes.byref(b))
            self._b = b
            self._dtype = np.uint8 if u8 else np.float32
            self._shape = shape
            self._seed = seed
            n = num_envs
            if b.device < 0:  # host memory: numpy views of the batch's buffers
                def view(ptr, ct, shp):
                    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ct)), shape=shp)
                ct = ctypes.c_uint8 if u8 else ctypes.c_float
                self._host = {"obs": view(b.obs, ct, (n,) + shape),
                              "final_obs": view(b.final_obs, ct, (n,) + shape),
                              "reward": view(b.reward, ctypes.c_float, (n,)),
                              "terminated": view(b.terminated, ctypes.c_uint8, (n,)),
                              "truncated": view(b.truncated, ctypes.c_uint8, (n,)),
                              "actions": view(b.actions, act_ct, act_shape)}
            else:
                self._host = None
            dev = b.device
            dt = "uint8" if u8 else "float32"
            self._dl = {"obs": _DLPackArray(b.obs, (n,) + shape, dt, dev, self),
                        "final_obs": _DLPackArray(b.final_obs, (n,) + shape, dt, dev, self),
                        "reward": _DLPackArray(b.reward, (n,), "float32", dev, self),
                        "terminated": _DLPackArray(b.terminated, (n,), "bool", dev, self),
                        "truncated": _DLPackArray(b.truncated, (n,), "bool", dev, self),
                        "actions": _DLPackArray(b.actions, act_shape, act_dt, dev, self)}

        @property
        def actions_buffer(self):
            """The batch's own actions (N) int32, as a DLPack array: write the next step's
            actions there and pass it to step() (no copy)."""
            return self._dl["actions"]

        def _out(self, name):
            if array == "dlpack":
                return self._dl[name]
            if self._host is not None:
                a = self._host[name]
                return a.astype(bool) if name in ("terminated", "truncated") else a.copy()
            raise ValueError("array='numpy' on device='cuda' with a GPU batch: use "
                             "array='dlpack' (torch.from_dlpack) or device='cpu'")

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self._seed = seed
            if self._host is None:
                _wait_for_torch(self._b.device)
            check(_lib.vec_reset(self._h, int(self._seed or 0)))
            return self._out("obs"), {}

        def step(self, actions):
            if self._host is None:  # the GPU batch: actions go into its device buffer
                if actions is not self.actions_buffer:
                    try:
                        import torch
                    except ImportError:
                        raise ValueError("a GPU batch takes its actions in env.actions_buffer "
                                         "(write them there, e.g. torch.from_dlpack(env."
                                         "actions_buffer).copy_(a)), or a torch tensor")
                    torch.from_dlpack(self._dl["actions"]).copy_(torch.as_tensor(actions))
                _wait_for_torch(self._b.device)
            else:
                a = np.asarray(actions)
                want = self._host["actions"].shape
                if a.shape != want:
                    raise ValueError("actions has shape %s; give %s" % (a.shape, want))
                self._host["actions"][:] = a
            check(_lib.vec_step(self._h))
            info = {}
            if self._host is not None:
                ended = (self._host["terminated"] | self._host["truncated"]).astype(bool)
                if ended.any():
                    info["final_obs"] = self._host["final_obs"].copy()
                    info["_final_obs"] = ended
            else:
                info["final_obs"] = self._dl["final_obs"]  # rows of ended envs (device)
            return (self._out("obs"), self._out("reward"), self._out("terminated"),
                    self._out("truncated"), info)

        def close_extras(self, **kwargs):
            if self._h:
                _lib.vec_free(self._h)
                self._h = ctypes.c_void_p()
            if self._ctx:
                _lib.ctx_free(self._ctx)
                self._ctx = ctypes.c_void_p()

    return CudarlVecEnv()
