#!/usr/bin/env python3
"""End-to-end tests of `cudarl export CHECKPOINT --onnx FILE`.

Trains tiny PPO and DQN policies with the built `cudarl` (MLPs, and in group `conv` the
convolutional minatar-cnn and nature-cnn), exports them, and checks each model as a user's tools
would see it: onnx.checker (full check, with shape inference), the IR version, opset, producer,
doc string and metadata, the input and output names, types and shapes, the nodes and their
attributes, the initializers bitwise equal to the checkpoint's tensors, and onnxruntime's
outputs against cudarl's own forward pass of the same checkpoint (`onnx_policy_forward`:
cr_mlp_forward on the CPU backend, or the policy runtime's cr_convnet_forward for a conv net) on
random observations: within a normalised error of 1e-5 (max |ort - cudarl| over max |cudarl| of
the tensor: float32 sums in another order), the argmax action equal. Dynamic batch (run at 1 and
37 rows), fixed batch, uint8 input, and every refusal of bad input with its message and exit
code (0 done, 1 failed, 2 bad usage).

    python3 test_onnx_export.py --cudarl build/cudarl --forward build/tests/onnx_policy_forward \
        --work build/tests/onnx-work [--only ppo|dqn|conv|bad_input]

Needs Python 3 with numpy, safetensors, onnx and onnxruntime (scripts/setup.sh installs them).
Each group works in its own folder <work>/<group>, emptied first.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from safetensors.numpy import load_file, save_file

import test_cli as cli
from test_cli import (FIX_BAD_FILE, check, checkpoint_metadata, expect_error, fail, fresh_dir,
                      run_ok, sha256)

FORWARD = None  # path of onnx_policy_forward, set by main()
NORM_TOL = 1e-5
OPSET, IR_VERSION = 17, 8
OPS = {"Gemm", "Conv", "Flatten", "Tanh", "Relu", "Cast", "Div", "ArgMax"}
THREADS = ["--threads", "1"]


# ---- making checkpoints and models ------------------------------------------------------------

def train_ppo(work, name="ppo"):
    run_ok("train a tiny PPO", ["train", "--total-timesteps", "2048", "--num-envs", "8",
                                "--num-steps", "64", *THREADS, "--runs-dir", "runs",
                                "--run-name", name, "--quiet"], work)
    return os.path.join(work, "runs", name, "model.safetensors")


def train_dqn(work, name="dqn", *extra):
    run_ok(f"train a tiny DQN {' '.join(extra)}",
           ["train", "--algo", "dqn", "--total-timesteps", "2000", "--learning-starts", "500",
            *THREADS, "--runs-dir", "runs", "--run-name", name, "--quiet", *extra], work)
    return os.path.join(work, "runs", name, "model.safetensors")


def train_conv(work, name, algo, env, policy):
    """A convolutional policy trained for a few steps on the CPU (most of the time is the init)."""
    if algo == "dqn":
        sizes = ["--algo", "dqn", "--num-envs", "4", "--total-timesteps", "400",
                 "--learning-starts", "100", "--batch-size", "16"]
    else:
        sizes = ["--num-envs", "2", "--num-steps", "8", "--total-timesteps", "16",
                 "--num-minibatches", "2", "--update-epochs", "1"]
    run_ok(f"train a tiny {algo} {policy} on {env}",
           ["train", *sizes, "--env-id", env, "--policy", policy, "--device", "cpu",
            "--env-threads", "1", *THREADS, "--runs-dir", "runs", "--run-name", name,
            "--quiet"], work)
    return os.path.join(work, "runs", name, "model.safetensors")


def export(work, ckpt, name, *flags):
    """cudarl export CKPT --onnx <work>/out/NAME FLAGS; returns the model's path."""
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    path = os.path.join(work, "out", name)
    r = run_ok(f"export {name} {' '.join(flags)}", ["export", ckpt, "--onnx", path, *flags], work)
    if f"wrote {path}" not in r.out:
        fail(f"export {name} says what it wrote", f"'wrote {path}' on stdout", r.describe())
    return path


def cudarl_forward(work, ckpt, obs):
    """cudarl's outputs for `obs` from onnx_policy_forward: {name: array}."""
    src, dst = os.path.join(work, "fwd_in.safetensors"), os.path.join(work, "fwd_out.safetensors")
    save_file({"obs": obs}, src)
    p = subprocess.run([FORWARD, ckpt, src, dst], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("onnx_policy_forward runs", "exit code 0",
             f"  exit code: {p.returncode}\n  stderr: {p.stderr.strip()}")
    return load_file(dst)


def ort_run(path, obs):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, {"obs": obs})))


# ---- checks ------------------------------------------------------------------------------------

def dims_of(value_info):
    t = value_info.type.tensor_type
    return t.elem_type, [d.dim_param if d.HasField("dim_param") else d.dim_value
                         for d in t.shape.dim]


def conv_spec(ckpt):
    """The network spec a conv checkpoint records (metadata "network"), or None for an MLP."""
    text = checkpoint_metadata(ckpt).get("network")
    return json.loads(text) if text else None


def expected_attrs(node, spec_layers):
    """The attributes `node` must have; spec_layers: the spec's layers by node name (conv)."""
    layer = spec_layers.get(node.name, {})
    if node.op_type == "Gemm":
        return {"transB": 1}
    if node.op_type == "Conv":
        a = {"kernel_shape": layer.get("kernel"), "strides": [layer.get("stride")] * 2}
        return dict(a, pads=[layer["pad"]] * 4) if layer.get("pad") else a
    return {"Flatten": {"axis": 1}, "ArgMax": {"axis": 1, "keepdims": 0},
            "Cast": {"to": onnx.TensorProto.FLOAT}}.get(node.op_type, {})


def check_model(path, ckpt, *, algo, batch, input_dtype, outputs, env="CartPole-v1",
                obs_shape=(4,)):
    """The model's header, signature, nodes and weights. `outputs`: [(name, elem, width)];
    obs_shape: an observation's shape (obs_dim, or C, H, W)."""
    name = os.path.basename(path)
    check(f"{name}: onnx.checker.check_model (full check) passes")
    m = onnx.load(path)
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:  # noqa: BLE001 - any checker failure is the finding
        fail(f"{name} passes the checker", "no error", f"  got: {e}")
    check(f"{name}: IR version {IR_VERSION}, opset {OPSET}, producer cudarl, doc and metadata")
    version = run_ok("cudarl --version", ["--version"], ".").out.split()[-1]
    opsets = [(o.domain, o.version) for o in m.opset_import]
    meta = {p.key: p.value for p in m.metadata_props}
    ck_meta = checkpoint_metadata(ckpt)
    got = (m.ir_version, opsets, m.producer_name, m.producer_version, meta.get("algo"),
           meta.get("env_id"), meta.get("global_step"))
    want = (IR_VERSION, [("", OPSET)], "cudarl", version, algo, env, ck_meta["global_step"])
    if got != want:
        fail(f"{name} header", want, f"  got: {got}")
    for needle in (f"{algo.upper()} policy", env, ck_meta["run_name"]):
        if needle not in m.doc_string:
            fail(f"{name} doc string names {needle}", needle, f"  got: {m.doc_string!r}")
    shape = [batch, *obs_shape]
    check(f"{name}: input obs {input_dtype} {shape}, outputs {[o[0] for o in outputs]}")
    elem = onnx.TensorProto.UINT8 if input_dtype == "uint8" else onnx.TensorProto.FLOAT
    sig = [(i.name, *dims_of(i)) for i in m.graph.input]
    if sig != [("obs", elem, shape)]:
        fail(f"{name} input", [("obs", elem, shape)], f"  got: {sig}")
    sig = [(o.name, *dims_of(o)) for o in m.graph.output]
    want_out = [(n, e, [batch, w] if w else [batch]) for n, e, w in outputs]
    if sig != want_out:
        fail(f"{name} outputs", want_out, f"  got: {sig}")
    spec = conv_spec(ckpt)
    layers = {f"network.{i}": layer for i, layer in enumerate(spec["layers"])} if spec else {}
    check(f"{name}: only {sorted(OPS)}; every Gemm has transB=1, every Conv the spec's kernel, "
          "stride and pad")
    for node in m.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        want_attrs = expected_attrs(node, layers)
        if node.op_type not in OPS or attrs != want_attrs:
            fail(f"{name} node {node.name}", f"one of {sorted(OPS)} with {want_attrs}",
                 f"  got: {node.op_type} {attrs}")
    check(f"{name}: the initializers are the checkpoint's weights, bitwise")
    tensors = load_file(ckpt)
    prefixes = ("network.",) if algo == "dqn" else \
        ("network.", "actor.", "critic.") if spec else ("actor.", "critic.")
    weights = {k: v for k, v in tensors.items() if k.startswith(prefixes)}
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    inits.pop("obs.divisor", None)
    if sorted(inits) != sorted(weights):
        fail(f"{name} initializer names", sorted(weights), f"  got: {sorted(inits)}")
    for k, v in weights.items():
        if inits[k].dtype != np.float32 or inits[k].shape != v.shape or \
                inits[k].tobytes() != v.tobytes():
            fail(f"{name} initializer {k}", f"float32 {v.shape}, the checkpoint's bytes",
                 f"  got: {inits[k].dtype} {inits[k].shape}")
    return m


def compare(what, got, want):
    """got (onnxruntime) against want (cudarl): shape, dtype, normalised error <= NORM_TOL."""
    if got.shape != want.shape or got.dtype != want.dtype:
        fail(what, f"{want.dtype} {want.shape}", f"  got: {got.dtype} {got.shape}")
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    if not err <= NORM_TOL:
        i = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
        fail(what, f"normalised error <= {NORM_TOL}",
             f"  got: {err:.3g} (at {i}: onnxruntime {got[i]!r}, cudarl {want[i]!r})")


def compare_actions(what, got, scores_ort, ref):
    """The argmax action: onnxruntime's equals the argmax of its own scores, and cudarl's
    wherever cudarl's best two scores are further apart than the tolerance allows to swap."""
    scores = ref["q_values"] if "q_values" in ref else ref["logits"]
    if got.dtype != np.int64 or not np.array_equal(got, np.argmax(scores_ort, axis=1)):
        fail(what, "int64 argmax of the model's own scores", f"  got: {got.dtype} {got}")
    top2 = np.sort(scores, axis=1)[:, -2:] if scores.shape[1] > 1 else None
    clear = np.ones(len(got), bool) if top2 is None else \
        (top2[:, 1] - top2[:, 0]) > 4 * NORM_TOL * (float(np.abs(scores).max()) or 1.0)
    if not np.array_equal(got[clear], ref["action"][clear]):
        fail(what, f"cudarl's actions {ref['action']}", f"  got: {got}")


def check_outputs(work, path, ckpt, obs, names):
    """onnxruntime on `obs` against cudarl's forward, for each output name."""
    got, ref = ort_run(path, obs), cudarl_forward(work, ckpt, obs)
    label = f"{os.path.basename(path)}, {obs.dtype} batch {len(obs)}"
    check(f"{label}: onnxruntime's {', '.join(names)} match cudarl's forward")
    for n in names:
        if n == "action" and got[n].dtype == np.float32:  # a Gaussian's: clipped means
            compare(f"{label}: {n}", got[n], ref[n])
        elif n == "action":
            compare_actions(f"{label}: action", got[n], got.get("logits", got.get("q_values")),
                            ref)
        else:
            compare(f"{label}: {n}", got[n], ref[n])


def random_obs(rng, n, dtype="float32"):
    if dtype == "uint8":
        return rng.integers(0, 256, size=(n, 4), dtype=np.uint8)
    return (rng.standard_normal((n, 4)) * np.array([1.0, 2.0, 0.2, 2.0])).astype(np.float32)


def image_obs(rng, shape, dtype, pixels):
    """Random image observations (n, C, H, W) or (n, D) as the env gives them (uint8: pixels
    0..255, or MinAtar's 0/1 channels) or as the network reads them (float32: pixels / 255, the
    channels 0.0/1.0)."""
    u = rng.integers(0, 256 if pixels else 2, size=shape, dtype=np.uint8)
    if dtype == "uint8":
        return u
    return u.astype(np.float32) / np.float32(255.0) if pixels else u.astype(np.float32)


def check_ops(m, name, want):
    check(f"{name}: nodes {' '.join(want)}")
    got = [n.op_type for n in m.graph.node]
    if got != want:
        fail(f"{name} node op types in order", want, f"  got: {got}")


def no_temp_files(folder, expected):
    check(f"only the exported models in {folder}, no temp files")
    left = sorted(set(os.listdir(folder)) - set(expected))
    if left:
        fail(f"no temp files in {folder}", f"only {sorted(expected)}", f"  got also: {left}")


F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


# ---- groups ------------------------------------------------------------------------------------

def test_ppo(work):
    rng = np.random.default_rng(7)
    ckpt = train_ppo(work)
    outs = [("logits", F, 2), ("value", F, 1)]

    dyn = export(work, ckpt, "ppo.onnx")
    check_model(dyn, ckpt, algo="ppo", batch="batch", input_dtype="float32", outputs=outs)
    for n in (1, 37):
        check_outputs(work, dyn, ckpt, random_obs(rng, n), ["logits", "value"])
    check("the same checkpoint exports to the same bytes")
    again = export(work, ckpt, "ppo_again.onnx")
    if sha256(again) != sha256(dyn):
        fail("export is deterministic", "identical files", "  got: different bytes")

    fixed = export(work, ckpt, "ppo_b8.onnx", "--batch", "8", "--action")
    check_model(fixed, ckpt, algo="ppo", batch=8, input_dtype="float32",
                outputs=outs + [("action", I64, 0)])
    check_outputs(work, fixed, ckpt, random_obs(rng, 8), ["logits", "value", "action"])
    check("the fixed-batch model refuses 9 rows")
    try:
        ort_run(fixed, random_obs(rng, 9))
        fail("fixed batch 8 refuses 9 rows", "an onnxruntime error", "  got: it ran")
    except (ort.capi.onnxruntime_pybind11_state.InvalidArgument,
            ort.capi.onnxruntime_pybind11_state.Fail):
        pass

    u8 = export(work, ckpt, "ppo_u8.onnx", "--input", "uint8", "--action")
    m = check_model(u8, ckpt, algo="ppo", batch="batch", input_dtype="uint8",
                    outputs=outs + [("action", I64, 0)])
    check("ppo_u8.onnx scales its input: Cast to float, then Div by 255")
    ops = [n.op_type for n in m.graph.node][:2]
    div = [numpy_helper.to_array(i) for i in m.graph.initializer if i.name == "obs.divisor"]
    if ops != ["Cast", "Div"] or len(div) != 1 or div[0].shape != () or float(div[0]) != 255.0:
        fail("uint8 prefix", "Cast, Div by a float32 scalar 255", f"  got: {ops}, {div}")
    for n in (1, 37):
        check_outputs(work, u8, ckpt, random_obs(rng, n, "uint8"), ["logits", "value", "action"])
    no_temp_files(os.path.join(work, "out"),
                  ["ppo.onnx", "ppo_again.onnx", "ppo_b8.onnx", "ppo_u8.onnx"])


def test_dqn(work):
    rng = np.random.default_rng(11)
    ckpt = train_dqn(work)
    outs = [("q_values", F, 2), ("action", I64, 0)]
    dyn = export(work, ckpt, "dqn.onnx", "--action")
    check_model(dyn, ckpt, algo="dqn", batch="batch", input_dtype="float32", outputs=outs)
    for n in (1, 37):
        check_outputs(work, dyn, ckpt, random_obs(rng, n), ["q_values", "action"])
    fixed = export(work, ckpt, "dqn_b4.onnx", "--batch", "4")
    check_model(fixed, ckpt, algo="dqn", batch=4, input_dtype="float32", outputs=outs[:1])
    check_outputs(work, fixed, ckpt, random_obs(rng, 4), ["q_values"])

    check("DQN's MLP on MinAtar (obs_input: uint8 cast unscaled): --input uint8 casts, no Div")
    env = "MinAtar/Breakout-v1"
    mckpt = train_dqn(work, "dqn_minatar", "--env-id", env, "--policy", "mlp", "--env-threads",
                      "1", "--device", "cpu", "--num-envs", "4", "--total-timesteps", "400",
                      "--learning-starts", "100", "--batch-size", "16")
    u8 = export(work, mckpt, "dqn_minatar_u8.onnx", "--input", "uint8", "--action")
    m = check_model(u8, mckpt, algo="dqn", batch="batch", input_dtype="uint8",
                    outputs=[("q_values", F, 3), ("action", I64, 0)], env=env, obs_shape=(400,))
    check_ops(m, "dqn_minatar_u8.onnx", ["Cast", "Gemm", "Relu", "Gemm", "Relu", "Gemm", "ArgMax"])
    for n in (1, 37):
        check_outputs(work, u8, mckpt, image_obs(rng, (n, 400), "uint8", False),
                      ["q_values", "action"])
    no_temp_files(os.path.join(work, "out"), ["dqn.onnx", "dqn_b4.onnx", "dqn_minatar_u8.onnx"])


# (run name, algo, env, policy, observation shape, pixels: uint8 0..255 scaled by 1/255, else
# MinAtar's 0/1 channels cast unscaled)
CONV_CASES = [("ppo_minatar", "ppo", "MinAtar/Breakout-v1", "minatar-cnn", (4, 10, 10), False),
              ("ppo_nature", "ppo", "CartPolePixels-v1", "nature-cnn", (4, 84, 84), True),
              ("dqn_minatar", "dqn", "MinAtar/SpaceInvaders-v1", "minatar-cnn", (6, 10, 10),
               False)]
CONV_TRUNKS = {"minatar-cnn": ["Conv", "Relu", "Flatten", "Gemm", "Relu"],
               "nature-cnn": ["Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Flatten", "Gemm",
                              "Relu"]}


def test_conv(work):
    rng = np.random.default_rng(13)
    written = []
    for name, algo, env, policy, shape, pixels in CONV_CASES:
        ckpt = train_conv(work, name, algo, env, policy)
        actions = int(checkpoint_metadata(ckpt)["num_actions"])
        scores = ["q_values"] if algo == "dqn" else ["logits", "value"]
        outs = [(scores[0], F, actions)] + ([("value", F, 1)] if algo == "ppo" else [])
        heads = ["Gemm"] if algo == "dqn" else ["Gemm", "Gemm"]
        net = CONV_TRUNKS[policy] + heads
        kw = dict(algo=algo, env=env, obs_shape=shape)

        dyn = export(work, ckpt, f"{name}.onnx", "--input", "uint8", "--action")
        m = check_model(dyn, ckpt, batch="batch", input_dtype="uint8",
                        outputs=outs + [("action", I64, 0)], **kw)
        check_ops(m, f"{name}.onnx", ["Cast"] + ["Div"] * pixels + net + ["ArgMax"])
        if pixels:
            check(f"{name}.onnx divides by a float32 scalar 255")
            div = [numpy_helper.to_array(i) for i in m.graph.initializer if i.name == "obs.divisor"]
            if len(div) != 1 or div[0].shape != () or float(div[0]) != 255.0:
                fail("obs.divisor", "a float32 scalar 255", f"  got: {div}")
        for n in (1, 37):
            check_outputs(work, dyn, ckpt, image_obs(rng, (n, *shape), "uint8", pixels),
                          scores + ["action"])
        check(f"{name}: the same checkpoint exports to the same bytes")
        again = export(work, ckpt, f"{name}_again.onnx", "--input", "uint8", "--action")
        if sha256(again) != sha256(dyn):
            fail("export is deterministic", "identical files", "  got: different bytes")

        fixed = export(work, ckpt, f"{name}_b5.onnx", "--batch", "5")
        m = check_model(fixed, ckpt, batch=5, input_dtype="float32", outputs=outs, **kw)
        check_ops(m, f"{name}_b5.onnx", net)
        check_outputs(work, fixed, ckpt, image_obs(rng, (5, *shape), "float32", pixels), scores)
        written += [f"{name}.onnx", f"{name}_again.onnx", f"{name}_b5.onnx"]
    no_temp_files(os.path.join(work, "out"), written)


def bad_checkpoints(ckpt, folder):
    """Files export must refuse: [(label, path, needles)]."""
    tensors, meta = load_file(ckpt), checkpoint_metadata(ckpt)
    out = []

    def write(name, t, m, needles):
        path = os.path.join(folder, name)
        save_file(t, path, metadata=m)
        out.append((name, path, [path] + needles))

    write("foreign.safetensors", {"x": np.zeros(3, np.float32)}, {"hello": "world"},
          ["not a cudarl checkpoint", "written by cudarl train"])
    write("sac.safetensors", tensors, dict(meta, algo="sac"),
          ["algo 'sac'", "cudarl export does not know", "--algo ppo", "--algo dqn"])
    write("resized.safetensors", dict(tensors, **{"actor.0.weight": np.zeros((32, 4), np.float32)}),
          meta, ["actor.0.weight", "[32, 4]", "[64, 4]", "written by cudarl train"])
    write("obs_input.safetensors", tensors, dict(meta, obs_input="uint8 as bits"),
          ["obs_input 'uint8 as bits'", "does not know", "the cudarl version that wrote it"])
    with open(ckpt, "rb") as f:
        raw = f.read()
    path = os.path.join(folder, "truncated.safetensors")
    with open(path, "wb") as f:
        f.write(raw[:len(raw) // 2])
    out.append(("truncated.safetensors", path, [path, "truncated", FIX_BAD_FILE]))
    return out


def bad_conv_checkpoints(ckpt, folder):
    """Convolutional checkpoints export must refuse (the policy runtime's checks, as cudarl eval
    makes them): [(label, path, needles)]."""
    tensors, meta = load_file(ckpt), checkpoint_metadata(ckpt)
    out = []

    def write(name, t, m, needles):
        path = os.path.join(folder, name)
        save_file(t, path, metadata=m)
        out.append((name, path, [path] + needles))

    write("conv_resized.safetensors",
          dict(tensors, **{"network.0.weight": np.zeros((16, 4, 5, 5), np.float32)}), meta,
          ["network.0.weight", "[16, 4, 5, 5]", "[16, 4, 3, 3]", "written by cudarl train"])
    write("conv_missing.safetensors",
          {k: v for k, v in tensors.items() if k != "critic.bias"}, meta, ["critic.bias"])
    write("conv_spec.safetensors", tensors, dict(meta, network=meta["network"][:40]),
          ["metadata \"network\""])
    write("conv_heads.safetensors", tensors, dict(meta, algo="dqn"),
          ["algo 'dqn'", "ppo heads", "written by cudarl train"])
    return out


def test_bad_input(work):
    U, R = 2, 1  # exit codes: usage error, runtime failure
    ckpt = train_ppo(work)
    rel = os.path.relpath(ckpt, work)
    before = sha256(ckpt)
    usage = "cudarl export runs/<run>/model.safetensors --onnx policy.onnx"
    expect_error("export without --onnx", ["export", rel], work, U,
                 ["--onnx FILE is required", usage])
    expect_error("export without a checkpoint", ["export", "--onnx", "p.onnx"], work, U,
                 ["which checkpoint", usage])
    expect_error("--onnx without a value", ["export", rel, "--onnx"], work, U,
                 ["--onnx", "needs a value"])
    expect_error("an unknown flag suggests the closest one", ["export", rel, "--onxx", "p.onnx"],
                 work, U, ["'--onxx'", "did you mean '--onnx'", "--help"])
    for b in ("0", "-3", "abc", "16777217", "1.5"):
        expect_error(f"--batch {b}", ["export", rel, "--onnx", "p.onnx", "--batch", b], work, U,
                     [f"--batch {b} is not a batch size", "1 to 16777216", "leave --batch out"])
    expect_error("--input int16", ["export", rel, "--onnx", "p.onnx", "--input", "int16"], work,
                 U, ["--input 'int16'", "float32 or uint8"])
    missing = os.path.join(work, "nope", "model.safetensors")
    expect_error("a missing checkpoint", ["export", missing, "--onnx", "p.onnx"], work, R,
                 [missing, "No such file", "check the path"])
    expect_error("--onnx in a folder that does not exist",
                 ["export", rel, "--onnx", "nodir/p.onnx"], work, R,
                 ["cannot write ONNX model 'nodir/p.onnx'", "directory 'nodir' does not exist",
                  "mkdir -p 'nodir'"])
    with open(os.path.join(work, "blocker"), "w") as f:
        f.write("a file, so nothing can be written under it\n")
    expect_error("--onnx under a file", ["export", rel, "--onnx", "blocker/p.onnx"], work, R,
                 ["cannot write ONNX model 'blocker/p.onnx'", "'blocker' is not a directory",
                  "choose a path in a directory that exists"])
    os.makedirs(os.path.join(work, "adir"))
    expect_error("--onnx naming a folder", ["export", rel, "--onnx", "adir"], work, R,
                 ["cannot write ONNX model 'adir'", "it is a directory",
                  "give the path of a file"])
    ro = os.path.join(work, "readonly")
    os.makedirs(ro)
    os.chmod(ro, 0o555)
    if os.access(ro, os.W_OK):
        check("a read-only folder: skipped, this user (root) may write there anyway")
    else:
        expect_error("--onnx in a read-only folder", ["export", rel, "--onnx", "readonly/p.onnx"],
                     work, R, ["cannot write ONNX model 'readonly/p.onnx'", "Permission denied",
                               "choose a directory you can write to"])
    expect_error("--onnx naming the checkpoint itself", ["export", rel, "--onnx", rel], work, U,
                 [f"'{rel}' is the checkpoint itself", "give another path"])
    check("the refused exports left the checkpoint as it was")
    if sha256(ckpt) != before:
        fail("checkpoint untouched", before, f"  got: {sha256(ckpt)}")

    files = fresh_dir(os.path.join(work, "bad_files"))
    conv = train_conv(work, "conv", "ppo", "MinAtar/Breakout-v1", "minatar-cnn")
    bad = bad_checkpoints(ckpt, files) + bad_conv_checkpoints(conv, files)
    for label, path, needles in bad:
        expect_error(f"export refuses {label}", ["export", path, "--onnx", "p.onnx"], work, R,
                     needles)
    check("no refused export wrote a file")
    leftover = sorted(set(os.listdir(work)) - {"runs", "blocker", "adir", "readonly", "bad_files"})
    leftover += [f"adir/{x}" for x in os.listdir(os.path.join(work, "adir"))]
    leftover += sorted(set(os.listdir(files)) - {label for label, _, _ in bad})
    if leftover:
        fail("nothing written by refused exports", "no new files", f"  got: {leftover}")

    check("cudarl export --help lists its flags with their defaults; cudarl --help names export")
    r = run_ok("export --help", ["export", "--help"], work)
    for flag in ("--onnx", "--batch", "--input", "--[no-]action"):
        if not any(ln.strip().startswith(flag) and "(default: " in ln for ln in r.out.splitlines()):
            fail(f"export --help lists {flag}", f"a line '  {flag} ... (default: ...)'",
                 r.describe())
    r = run_ok("cudarl --help", ["--help"], work)
    if "cudarl export" not in r.out:
        fail("cudarl --help names export", "'cudarl export' in stdout", r.describe())


def test_gaussian(work):
    """A Gaussian policy (PPO on Pendulum-v1, observations normalized): action_mean, action (the
    mean clipped into the box) and value against the policy runtime's, the normalization and
    the clip in the graph."""
    check("train a Gaussian PPO policy on Pendulum-v1 (--norm-obs)")
    run_ok("train gaussian", ["train", "--env-id", "Pendulum-v1", "--total-timesteps", "4096",
                              "--device", "cpu", "--runs-dir", "runs", "--run-name", "gauss",
                              "--quiet"], work)
    ckpt = os.path.join(work, "runs", "gauss", "model.safetensors")
    path = export(work, ckpt, "gauss.onnx")
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    check("gauss.onnx: normalization (Sub, Div, Clip) first, Max and Min on the mean last")
    if ops[:3] != ["Sub", "Div", "Clip"] or ops[-2:] != ["Max", "Min"]:
        fail("the Gaussian graph's nodes", "Sub Div Clip ... Max Min", f"  got: {ops}")
    outs = [o.name for o in m.graph.output]
    if outs != ["action", "action_mean", "value"]:
        fail("the Gaussian graph's outputs", "action, action_mean, value", f"  got: {outs}")
    rng = np.random.default_rng(11)
    for n in (1, 37):  # wide observations: some means fall outside the box [-2, 2]
        obs = (rng.standard_normal((n, 3)) * np.array([1.0, 1.0, 8.0])).astype(np.float32)
        check_outputs(work, path, ckpt, obs, ["action_mean", "value", "action"])


GROUPS = {"ppo": test_ppo, "dqn": test_dqn, "conv": test_conv, "bad_input": test_bad_input,
          "gaussian": test_gaussian}


def main():
    global FORWARD
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True, help="path of the cudarl binary")
    ap.add_argument("--forward", required=True, help="path of onnx_policy_forward")
    ap.add_argument("--work", required=True, help="scratch folder (emptied per group)")
    ap.add_argument("--only", choices=sorted(GROUPS), help="run one group of checks")
    args = ap.parse_args()
    cli.CUDARL = os.path.abspath(args.cudarl)
    FORWARD = os.path.abspath(args.forward)
    for exe in (cli.CUDARL, FORWARD):
        if not os.access(exe, os.X_OK):
            fail("the test programs exist", f"an executable at {exe}", "  got: none; build first")
    for name, fn in GROUPS.items():
        if args.only and name != args.only:
            continue
        print(f"== {name}", flush=True)
        fn(fresh_dir(os.path.abspath(os.path.join(args.work, name))))
    print("all checks passed")


if __name__ == "__main__":
    sys.exit(main())
