"""examples/python/ run as scripts, with short runs."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "python")


def run(script, *args):
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] + list(args),
                         check=True, capture_output=True, text=True)
    return out.stdout


def test_examples(tmp_path):
    runs = str(tmp_path)
    out = run("train_gym_env.py", "--steps", "20000", "--runs-dir", runs)
    assert "checkpoint:" in out
    ckpt = out.strip().splitlines()[-1].split("checkpoint: ")[1]
    assert "Acrobot-v1" in run("serve.py", ckpt, "--device", "cpu", "--calls", "10")
    assert "reached the end" in run("custom_env.py", "--runs-dir", runs)
