"""example_control_loop's --fifo and --mlock: bad values refused as usage (exit 2), and each
refused with its message (exit 1) where the process lacks the permission, which the test takes
away: a real-time priority limit of 0 (or a memlock limit of 0) and, where it runs as root, the
capability dropped from the bounding set before the exec (else it runs as nobody). Where the
system allows it (root here), --fifo runs the loop under SCHED_FIFO and says so. In a sanitizer
build the --mlock refusal is not checked: AddressSanitizer's mlockall does nothing and succeeds.

Usage: test_control_loop.py --loop PROGRAM --checkpoint MODEL [--sanitized]"""
import argparse
import ctypes
import os
import resource
import subprocess
import sys

PR_CAPBSET_DROP = 24
CAP_IPC_LOCK, CAP_SYS_NICE = 14, 23
NOBODY = 65534

LOOP = CKPT = None
FAILS = []


def run(args, drop=None):
    """Runs the loop for 0.05 s with args; drop=(rlimit, capability) takes that permission away
    in the child before the exec. Returns (exit code, stdout, stderr)."""
    def take_away():
        limit, cap = drop
        resource.setrlimit(limit, (0, 0))
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and os.geteuid() == 0:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)  # root that may not drop a capability: a user without any

    cmd = [LOOP, CKPT, "--device", "cpu", "--seconds", "0.05", "--hz", "200"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       preexec_fn=take_away if drop else None)
    return p.returncode, p.stdout, p.stderr


def expect(what, got, code, needle, stream):
    rc, out, err = got
    text = out if stream == "out" else err
    if rc != code or needle not in text:
        FAILS.append(f"{what}: expected exit {code} and {needle!r} in std{stream}; got exit {rc}"
                     f"\n  stdout: {out.strip()}\n  stderr: {err.strip()}")
    else:
        print(f"ok   {what}")


def main():
    global LOOP, CKPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--loop", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--sanitized", action="store_true", help="the loop is built with ASan")
    a = ap.parse_args()
    LOOP, CKPT = a.loop, a.checkpoint

    bad = "--fifo takes a SCHED_FIFO priority, an integer from 1 to 99"
    for v in (["0"], ["100"], ["1.5"], ["high"], ["-3"], []):
        expect(f"--fifo {' '.join(v) or '(no value)'}", run(["--fifo"] + v), 2, bad, "err")
    expect("default scheduler", run([]), 0, "the default scheduler", "out")
    expect("--fifo 10 without CAP_SYS_NICE or rtprio",
           run(["--fifo", "10"], (resource.RLIMIT_RTPRIO, CAP_SYS_NICE)), 1,
           "--fifo 10: SCHED_FIFO refused", "err")
    if a.sanitized:
        print("skip --mlock without CAP_IPC_LOCK or memlock: ASan's mlockall always succeeds")
    else:
        expect("--mlock without CAP_IPC_LOCK or memlock",
               run(["--mlock"], (resource.RLIMIT_MEMLOCK, CAP_IPC_LOCK)), 1,
               "--mlock: mlockall refused", "err")
    got = run(["--fifo", "10"])
    if got[0] == 0:
        expect("--fifo 10 where permitted", got, 0, "SCHED_FIFO priority 10", "out")
    else:
        expect("--fifo 10 here (not permitted)", got, 1, "--fifo 10: SCHED_FIFO refused", "err")
    for f in FAILS:
        print("FAIL " + f)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
