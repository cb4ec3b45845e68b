"""Reads the event file test_tensorboard --write DIR wrote with TensorBoard's own reader and
checks every scalar: python3 tensorboard_check.py DIR."""
import math
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError:
    sys.exit("tensorboard_check: TensorBoard is not installed; pip install tensorboard")

acc = EventAccumulator(sys.argv[1])
acc.Reload()
tags = sorted(acc.Tags()["scalars"])
want_tags = ["charts/SPS", "charts/episodic_return", "losses/value_loss"]
if tags != want_tags:
    sys.exit(f"tags: expected {want_tags}, got {tags}")
for tag, fn, steps in [("charts/episodic_return", lambda s: 10.0 * s, [1, 2, 3, 4, 5]),
                       ("losses/value_loss", lambda s: 1.0 / s, [1, 2, 4, 5]),  # NaN skipped
                       ("charts/SPS", lambda s: 1000.0 * s, [1, 2, 3, 4, 5])]:
    ev = acc.Scalars(tag)
    got = [(e.step, e.value) for e in ev]
    want = [(100 * s, fn(s)) for s in steps]
    if len(got) != len(want) or any(g[0] != w[0] or not math.isclose(g[1], w[1], rel_tol=1e-6)
                                    for g, w in zip(got, want)):
        sys.exit(f"{tag}: expected {want}, got {got}")
print("tensorboard_check: TensorBoard reads every scalar back")
