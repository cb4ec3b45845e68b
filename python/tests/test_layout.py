"""The ctypes mirrors of the structs the package fills against the C layout: every numeric field
of PPO_FIELDS and DQN_FIELDS at the offset the library's own flag tables give it
(cudarl_flag_ranges: the offset of each field in the C struct), struct_size first, and the
defaults written with struct_size the mirror's size; a mirror whose struct_size is wrong refused
by the library with its message."""
import ctypes

import pytest

import cudarl
from cudarl import _lib


class FlagRange(ctypes.Structure):
    _fields_ = [("flag", ctypes.c_char_p), ("lo", ctypes.c_double), ("hi", ctypes.c_double),
                ("lo_means", ctypes.c_char_p), ("offset", ctypes.c_size_t),
                ("type", ctypes.c_int)]


flag_ranges = _lib._proto("cudarl_flag_ranges", ctypes.POINTER(FlagRange), ctypes.c_int)


def c_offsets(table):
    """{field name: offset} of the C config, from the library's range table `table`."""
    out, r = {}, flag_ranges(table)
    i = 0
    while r[i].flag:
        out[r[i].flag.decode().replace("-", "_")] = r[i].offset
        i += 1
    return out


@pytest.mark.parametrize("table,mirror,name", [(0, _lib.PPOConfig, "cudarl_ppo_config"),
                                               (1, _lib.DQNConfig, "cudarl_dqn_config")])
def test_config_offsets(table, mirror, name):
    offsets = c_offsets(table)
    assert len(offsets) >= 15
    for field, offset in offsets.items():
        assert getattr(mirror, field).offset == offset, "%s.%s: mirror at %d, C at %d" % (
            name, field, getattr(mirror, field).offset, offset)
    assert mirror.struct_size.offset == 0
    assert ctypes.sizeof(mirror) == _lib.sizeof(name.encode())


@pytest.mark.parametrize("mirror", [_lib.PolicyOptions, _lib.EnvDef])
def test_struct_size_first(mirror):
    assert mirror._fields_[0] == ("struct_size", ctypes.c_size_t)


def test_defaults_set_struct_size():
    p, d, o = _lib.PPOConfig(), _lib.DQNConfig(), _lib.PolicyOptions()
    assert _lib.ppo_config_default(p, None) == 0 and p.struct_size == ctypes.sizeof(p)
    assert _lib.dqn_config_default(d, None) == 0 and d.struct_size == ctypes.sizeof(d)
    assert _lib.policy_options_default(o) == 0 and o.struct_size == ctypes.sizeof(o)
    assert p.env_id == b"CartPole-v1" and p.num_envs == 16 and d.batch_size == 128


def test_bad_struct_size_refused():
    p = _lib.PPOConfig()
    _lib.ppo_config_default(p, None)
    p.struct_size = 0
    assert _lib.ppo_config_validate(p) == 1  # CUDARL_ERR_INVALID_ARG
    assert b"cudarl_ppo_config.struct_size is 0" in _lib.last_error()
    assert _lib._ppo_config_default_sized(p, ctypes.sizeof(p) + 8, None) == 1
    assert b"newer cudarl.h" in _lib.last_error()


def test_versions_agree():
    """The distribution's version (pyproject.toml reads it from cudarl.h) is the library's."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        meta = version("cudarl")
    except PackageNotFoundError:
        pytest.skip("cudarl is not installed as a distribution (found on PYTHONPATH)")
    assert meta == cudarl.__version__ == _lib.version().decode()
