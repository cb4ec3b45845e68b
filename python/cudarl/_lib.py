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
    _fields_ = [("device", c_int), ("device_index", c_int), ("precision", c_int),
                ("max_batch", c_int), ("deadline_us", c_double)]


class PolicyInfo(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_char * 8), ("env_id", ctypes.c_char * 64),
                ("obs_dtype", c_int), ("obs_dim", c_int), ("num_actions", c_int),
                ("has_values", c_int), ("device", c_int), ("device_index", c_int),
                ("max_batch", c_int), ("graph_batches", c_int), ("host_bytes", c_size_t),
                ("device_bytes", c_size_t), ("pinned_bytes", c_size_t),
                ("network", ctypes.c_char * 32), ("precision", c_int),
                ("context_bytes", c_size_t)]


class LatencyStats(ctypes.Structure):
    _fields_ = [("count", c_int64), ("window", c_int64), ("p50_us", c_double),
                ("p99_us", c_double), ("max_us", c_double), ("deadline_us", c_double),
                ("deadline_misses", c_int64)]


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


version = _proto("cudarl_version", c_char_p)
sizeof = _proto("cudarl_sizeof", c_size_t, c_char_p)
status_name = _proto("cudarl_status_name", c_char_p, c_int)
last_error = _proto("cudarl_last_error", c_char_p)
info = _proto("cudarl_info", None, ctypes.c_char_p, c_size_t)
cuda_device_count = _proto("cudarl_cuda_device_count", c_int)
precision_parse = _proto("cudarl_precision_parse", c_int, c_char_p, ctypes.POINTER(c_int))
policy_options_default = _proto("cudarl_policy_options_default", None,
                                ctypes.POINTER(PolicyOptions))
policy_load = _proto("cudarl_policy_load", c_int, c_char_p, ctypes.POINTER(PolicyOptions),
                     ctypes.POINTER(c_void_p))
policy_act = _proto("cudarl_policy_act", c_int, c_void_p, c_void_p, c_int, c_int, c_void_p,
                    c_void_p, c_void_p)
policy_get_info = _proto("cudarl_policy_get_info", None, c_void_p, ctypes.POINTER(PolicyInfo))
policy_latency = _proto("cudarl_policy_latency", c_int, c_void_p, ctypes.POINTER(LatencyStats))
policy_free = _proto("cudarl_policy_free", None, c_void_p)

for _mirror, _name in ((PolicyOptions, b"cudarl_policy_options"),
                       (PolicyInfo, b"cudarl_policy_info"),
                       (LatencyStats, b"cudarl_latency_stats")):
    if ctypes.sizeof(_mirror) != sizeof(_name):
        raise ImportError("cudarl: the Python mirror of %s is %d bytes and the library's struct "
                          "%d: the package and libcudarl.so come from different versions; "
                          "reinstall the package" % (_name.decode(), ctypes.sizeof(_mirror),
                                                     sizeof(_name)))
