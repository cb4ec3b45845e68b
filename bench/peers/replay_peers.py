#!/usr/bin/env python3
"""Peers of cudarl's GPU replay buffer (issue 5's benchmark), measured as bench/bench_replay.cu is.

Workload as bench_replay: 1,024 envs, 84x84 frames, stacks of 4. Per peer: device memory of the
buffer, insert of 1,024 transitions, uniform sampling of 32 and of 1,024 stacked transitions
(obs and next_obs, as the learner receives them, plus actions, rewards and flags). Each time is
the GPU time between two CUDA events recorded on the stream around one call (so it includes the
gaps between the call's kernels and its launch overhead, as in bench_replay), median of --reps
calls after --warmup calls, in a buffer filled (and wrapped) beforehand.

  1. "seed's method": numba CUDA kernels and dense float32 device arrays, as the seed wrote its
     DQN buffer: obs and next_obs each (capacity, 84, 84, 4) float32 (default capacity 100,000:
     11.29 GB each), actions int32, rewards and dones float32. Insert = one scatter kernel
     (a thread per float, writing obs and next_obs rows at (ptr + row) % capacity, plus the
     small arrays) of 1,024 float32 stacked observations. Sampling = an index kernel (numba's
     xoroshiro128p on the device, no host round trip) + one gather kernel into (B, 84, 84, 4)
     float32 obs and next_obs batches (+ actions, rewards, dones). If obs and next_obs do not
     both fit in free device memory, only obs is allocated and next_obs aliases it (the kernels
     still read and write both, so the traffic is that of two arrays); the row says so and the
     projected bytes of the full buffer are reported. Memory: the sum of the numba allocations'
     sizes (nbytes); also the projection to 1,000,000 and 1,048,576 transitions.
  2. "PyTorch uint8 frame-once buffer": eager PyTorch as a user would write it. frames is a
     (capacity, 84, 84) uint8 tensor (default capacity 1,048,576) holding each frame once;
     slot n % capacity holds the newest frame of obs_t of the n-th inserted transition, so the
     frames of one env are num_envs slots apart. Per slot: action (int32), reward (float32),
     terminated and truncated (uint8), and ep_pos (uint8: steps since the episode's first frame,
     saturating at 255) as the episode-start information. Insert = torch.arange for the slots +
     index_copy_ of the 1,024 frames, actions, rewards, flags and ep_pos, + the per-env ep_pos
     update. Sampling = torch.randint over the slots whose 3 previous and next frames are in the
     ring, then advanced indexing frames[(idx[:, None] - E * arange(3, -1, -1)) % capacity] for
     obs and the same from idx + E for next_obs, with episode-boundary masking by repeating the
     first frame: the offset is min(k, ep_pos) (Gymnasium's FrameStack "reset" padding). As in
     Dopamine-style frame-once buffers, the next_obs of a transition that ends an episode is the
     next slot's (reset) stack: no final observation is kept (the learner masks it with
     terminated; truncation bootstrapping is not supported; cudarl keeps a FINAL slot instead).
     Memory: torch.cuda.memory_allocated() after building the buffer minus before.

Prints a markdown table and writes --json.

  python3 bench/peers/replay_peers.py --json replay_peers.json
  python3 bench/peers/replay_peers.py --peers seed --capacity 1000000   # one array: projection
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

# numba-cuda 0.30.4 still calls np.row_stack, which NumPy 2.5 removed (deprecated since 2.0; it
# was an alias of np.vstack): without this alias `import numba.cuda` fails on NumPy 2.5. Must run
# before numba.cuda is imported.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
# Grid-size warnings for the 32-sample index kernel would only clutter the output.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

E = 1024              # envs: transitions per insert
H = W = 84
K = 4                 # stack
FE = H * W            # elements per frame
BATCHES = (32, 1024)
MAXB = max(BATCHES)
DEFAULT_CAP = {"seed": 100_000, "torch": 1_048_576}
NAMES = {"seed": "seed's method (numba, float32 (N,84,84,4) obs + next_obs)",
         "torch": "PyTorch uint8 frame-once buffer"}


def done_pattern(t, e):
    """bench_replay's episodes of varied lengths: (terminated, truncated) for step t, envs e."""
    c = (t + e * 7) % (50 + e % 37)
    return c == 0, (c == 1) & (e % 5 == 0)


# ---------------------------------------------------------------------------------------------
# 1. The seed's method: numba kernels, dense float32 stacked observations, obs and next_obs.
# ---------------------------------------------------------------------------------------------
def run_seed(capacity, reps, warmup, seed):
    from numba import cuda
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float64

    F = FE * K  # floats per stacked observation

    @cuda.jit
    def insert_kernel(obs, nxt, act, rew, done, s_obs, s_nxt, s_act, s_rew, s_done, ptr, cap):
        i = cuda.grid(1)
        n = s_obs.shape[0] * s_obs.shape[1]
        if i < n:
            f = s_obs.shape[1]
            r = i // f
            c = i - r * f
            s = (ptr + r) % cap
            obs[s, c] = s_obs[r, c]
            nxt[s, c] = s_nxt[r, c]
            if c == 0:
                act[s] = s_act[r]
                rew[s] = s_rew[r]
                done[s] = s_done[r]

    @cuda.jit
    def index_kernel(states, idx, b, n_valid):
        i = cuda.grid(1)
        if i < b:
            u = xoroshiro128p_uniform_float64(states, i)
            r = int(u * n_valid)
            if r >= n_valid:
                r = n_valid - 1
            idx[i] = r

    @cuda.jit
    def gather_kernel(obs, nxt, act, rew, done, idx, o_obs, o_nxt, o_act, o_rew, o_done, b):
        i = cuda.grid(1)
        f = obs.shape[1]
        if i < b * f:
            r = i // f
            c = i - r * f
            s = idx[r]
            o_obs[r, c] = obs[s, c]
            o_nxt[r, c] = nxt[s, c]
            if c == 0:
                o_act[r] = act[s]
                o_rew[r] = rew[s]
                o_done[r] = done[s]

    ctx = cuda.current_context()
    dev = cuda.get_current_device()
    obs_bytes = capacity * F * 4
    small_bytes = capacity * (4 + 4 + 4)
    full_bytes = 2 * obs_bytes + small_bytes
    per_transition = 2 * F * 4 + 12
    reserve = 4 * MAXB * F * 4 + (1 << 30)  # source and batch arrays, states, slack
    free0, total = ctx.get_memory_info()
    row = {"peer": "seed", "name": NAMES["seed"], "capacity": capacity,
           "bytes_per_transition": per_transition, "full_buffer_bytes": full_bytes,
           "projected_bytes_1000000": 1_000_000 * per_transition,
           "projected_bytes_1048576": 1_048_576 * per_transition,
           "device_free_before": free0, "device_total": total, "note": ""}
    if full_bytes + reserve <= free0:
        two = True
    elif obs_bytes + small_bytes + reserve <= free0:
        two = False
        row["note"] = (f"obs + next_obs need {full_bytes / 1e9:.2f} GB, {free0 / 1e9:.2f} GB free: "
                       f"next_obs not allocated (aliases obs; kernels still move both)")
    else:
        row["note"] = (f"does not fit: one (N,84,84,4) float32 array alone is {obs_bytes / 1e9:.2f} "
                       f"GB, {free0 / 1e9:.2f} GB free; projected full buffer {full_bytes / 1e9:.2f} GB")
        row.update(device_bytes=None, insert_us=None, insert_mps=None,
                   **{f"sample{b}_us": None for b in BATCHES})
        print(f"seed's method: {row['note']}", file=sys.stderr)
        return row
    row["next_obs_stored"] = two

    d_obs = cuda.device_array((capacity, H, W, K), dtype=np.float32)
    d_nxt = cuda.device_array((capacity, H, W, K), dtype=np.float32) if two else d_obs
    d_act = cuda.device_array(capacity, dtype=np.int32)
    d_rew = cuda.device_array(capacity, dtype=np.float32)
    d_done = cuda.device_array(capacity, dtype=np.float32)
    buf = [d_obs, d_act, d_rew, d_done] + ([d_nxt] if two else [])
    row["device_bytes"] = sum(a.nbytes for a in buf)
    row["device_used_delta"] = free0 - ctx.get_memory_info()[0]
    obs2, nxt2 = d_obs.reshape(capacity, F), d_nxt.reshape(capacity, F)

    rng = np.random.default_rng(seed)
    s_obs = cuda.to_device(rng.random((E, H, W, K), dtype=np.float32))
    s_nxt = cuda.to_device(rng.random((E, H, W, K), dtype=np.float32))
    s_act = cuda.to_device(rng.integers(0, 18, E, dtype=np.int32))
    s_rew = cuda.to_device(rng.random(E, dtype=np.float32))
    s_done_host = np.zeros(E, dtype=np.float32)
    s_done = cuda.to_device(s_done_host)
    s_obs2, s_nxt2 = s_obs.reshape(E, F), s_nxt.reshape(E, F)
    o_obs = cuda.device_array((MAXB, H, W, K), dtype=np.float32)
    o_nxt = cuda.device_array((MAXB, H, W, K), dtype=np.float32)
    o_act = cuda.device_array(MAXB, dtype=np.int32)
    o_rew = cuda.device_array(MAXB, dtype=np.float32)
    o_done = cuda.device_array(MAXB, dtype=np.float32)
    o_obs2, o_nxt2 = o_obs.reshape(MAXB, F), o_nxt.reshape(MAXB, F)
    idx = cuda.device_array(MAXB, dtype=np.int64)
    stream = cuda.stream()
    states = create_xoroshiro128p_states(MAXB, seed=seed, stream=stream)
    TPB = 256
    st = {"ptr": 0, "size": 0}

    def insert():
        blocks = (E * F + TPB - 1) // TPB
        insert_kernel[blocks, TPB, stream](obs2, nxt2, d_act, d_rew, d_done, s_obs2, s_nxt2,
                                           s_act, s_rew, s_done, st["ptr"], capacity)
        st["ptr"] = (st["ptr"] + E) % capacity
        st["size"] = min(st["size"] + E, capacity)

    def sample(b):
        index_kernel[(b + TPB - 1) // TPB, TPB, stream](states, idx, b, st["size"])
        blocks = (b * F + TPB - 1) // TPB
        gather_kernel[blocks, TPB, stream](obs2, nxt2, d_act, d_rew, d_done, idx, o_obs2, o_nxt2,
                                           o_act, o_rew, o_done, b)

    e = np.arange(E)
    for t in range(capacity // E + 2):  # fill and wrap the ring (compiles the kernel too)
        term, trunc = done_pattern(t, e)
        s_done_host[:] = term | trunc
        s_done.copy_to_device(s_done_host, stream=stream)
        insert()
    s_done.copy_to_device(np.zeros(E, dtype=np.float32), stream=stream)
    stream.synchronize()

    a, z = cuda.event(timing=True), cuda.event(timing=True)

    def median_us(fn):
        ts = []
        for r in range(warmup + reps):
            a.record(stream)
            fn()
            z.record(stream)
            z.synchronize()
            if r >= warmup:
                ts.append(1000.0 * cuda.event_elapsed_time(a, z))
        return statistics.median(ts)

    row["insert_us"] = median_us(insert)
    row["insert_mps"] = E / row["insert_us"]
    for b in BATCHES:
        sample(b)
        stream.synchronize()
        row[f"sample{b}_us"] = median_us(lambda: sample(b))
    # Check one batch against the buffer (the gather reads what the index kernel drew).
    h_idx = idx.copy_to_host()[:BATCHES[-1]]
    assert (h_idx >= 0).all() and (h_idx < st["size"]).all(), "index kernel out of range"
    j = int(h_idx[0])
    assert np.array_equal(o_obs[0].copy_to_host(), d_obs[j].copy_to_host()), "gather mismatch"
    row["device_name"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    del d_obs, d_nxt, buf, obs2, nxt2, s_obs, s_nxt, o_obs, o_nxt, o_obs2, o_nxt2, s_obs2, s_nxt2
    try:
        ctx.deallocations.clear()  # free now, so a torch peer after this one sees the memory
    except Exception:
        pass
    return row


# ---------------------------------------------------------------------------------------------
# 2. PyTorch uint8 frame-once buffer.
# ---------------------------------------------------------------------------------------------
class TorchFrameReplay:
    def __init__(self, capacity, num_envs, device):
        import torch
        self.torch, self.cap, self.E, self.dev = torch, capacity, num_envs, device
        self.frames = torch.zeros((capacity, H, W), dtype=torch.uint8, device=device)
        self.actions = torch.zeros(capacity, dtype=torch.int32, device=device)
        self.rewards = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.terminated = torch.zeros(capacity, dtype=torch.uint8, device=device)
        self.truncated = torch.zeros(capacity, dtype=torch.uint8, device=device)
        self.ep_pos = torch.zeros(capacity, dtype=torch.uint8, device=device)  # episode start
        self.cur_pos = torch.zeros(num_envs, dtype=torch.uint8, device=device)
        self.back = torch.arange(K - 1, -1, -1, device=device)  # 3, 2, 1, 0
        self.ptr = 0   # next slot
        self.size = 0

    def insert(self, frame, action, reward, terminated, truncated):
        """frame: (E, 84, 84) uint8, the newest frame of obs_t; the rest (E,) of transition t."""
        torch = self.torch
        slots = torch.arange(self.ptr, self.ptr + self.E, device=self.dev) % self.cap
        self.frames.index_copy_(0, slots, frame)
        self.actions.index_copy_(0, slots, action)
        self.rewards.index_copy_(0, slots, reward)
        self.terminated.index_copy_(0, slots, terminated)
        self.truncated.index_copy_(0, slots, truncated)
        self.ep_pos.index_copy_(0, slots, self.cur_pos)
        done = (terminated | truncated).bool()
        self.cur_pos = (self.cur_pos.clamp(max=254) + 1).masked_fill_(done, 0)
        self.ptr = (self.ptr + self.E) % self.cap
        self.size = min(self.size + self.E, self.cap)

    def stack(self, idx):
        off = self.torch.minimum(self.back, self.ep_pos[idx].long()[:, None])  # (B, 4)
        return self.frames[(idx[:, None] - self.E * off) % self.cap]          # (B, 4, 84, 84)

    def sample(self, b):
        torch = self.torch
        # Slots whose 3 previous frames and next frame are in the ring.
        n_valid = self.size - (K - 1) * self.E - self.E
        start = (self.ptr - self.size) % self.cap + (K - 1) * self.E
        idx = (torch.randint(0, n_valid, (b,), device=self.dev) + start) % self.cap
        obs = self.stack(idx)
        next_obs = self.stack((idx + self.E) % self.cap)
        return (obs, self.actions[idx], self.rewards[idx], next_obs, self.terminated[idx],
                self.truncated[idx])


def run_torch(capacity, reps, warmup, seed):
    import torch
    if capacity < (K + 1) * E:
        sys.exit(f"--capacity must be at least {(K + 1) * E} for the torch peer")
    dev = torch.device("cuda")
    torch.manual_seed(seed)
    torch.cuda.synchronize()
    m0 = torch.cuda.memory_allocated()
    rb = TorchFrameReplay(capacity, E, dev)
    torch.cuda.synchronize()
    per_transition = FE + 4 + 4 + 1 + 1 + 1
    row = {"peer": "torch", "name": NAMES["torch"], "capacity": capacity,
           "device_bytes": torch.cuda.memory_allocated() - m0,
           "bytes_per_transition": per_transition,
           "projected_bytes_1000000": 1_000_000 * per_transition,
           "projected_bytes_1048576": 1_048_576 * per_transition,
           "device_name": torch.cuda.get_device_name(), "note": ""}
    frame = torch.randint(0, 256, (E, H, W), dtype=torch.uint8, device=dev)
    act = torch.randint(0, 18, (E,), dtype=torch.int32, device=dev)
    rew = torch.rand(E, device=dev)
    e = torch.arange(E, device=dev)
    for t in range(capacity // E + 64):  # fill and wrap the ring with varied episodes
        term, trunc = done_pattern(t, e)
        rb.insert(frame, act, rew, term.to(torch.uint8), trunc.to(torch.uint8))
    zero = torch.zeros(E, dtype=torch.uint8, device=dev)
    torch.cuda.synchronize()
    a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def median_us(fn):
        ts = []
        for r in range(warmup + reps):
            a.record()
            fn()
            z.record()
            z.synchronize()
            if r >= warmup:
                ts.append(1000.0 * a.elapsed_time(z))
        return statistics.median(ts)

    row["insert_us"] = median_us(lambda: rb.insert(frame, act, rew, zero, zero))
    row["insert_mps"] = E / row["insert_us"]
    for b in BATCHES:
        row[f"sample{b}_us"] = median_us(lambda: rb.sample(b))
    obs, _, _, nxt, _, _ = rb.sample(BATCHES[-1])
    assert obs.shape == (BATCHES[-1], K, H, W) and nxt.shape == obs.shape
    row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    del rb, obs, nxt
    torch.cuda.empty_cache()
    return row


def gb(x):
    return "-" if x is None else f"{x / 1e9:.2f} GB"


def f1(x):
    return "-" if x is None else f"{x:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--peers", default="seed,torch", help="comma-separated: seed, torch (in order)")
    p.add_argument("--capacity", type=int, default=None,
                   help="transitions, for every peer run (default: torch 1,048,576; seed 100,000)")
    p.add_argument("--reps", type=int, default=200, help="timed calls per figure (median)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before each figure")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=str, default=None, help="write the results to this path")
    args = p.parse_args()
    peers = [x.strip() for x in args.peers.split(",") if x.strip()]
    for x in peers:
        if x not in DEFAULT_CAP:
            sys.exit(f"unknown peer {x!r} (seed, torch)")
    t0 = time.time()
    rows = []
    for x in peers:
        cap = args.capacity if args.capacity is not None else DEFAULT_CAP[x]
        fn = run_seed if x == "seed" else run_torch
        r = fn(cap, args.reps, args.warmup, args.seed)
        rows.append(r)
        print(f"{x}: {json.dumps(r)}", file=sys.stderr, flush=True)

    print(f"\nreplay buffer peers: {E} envs, 84x84 frames, stack {K}; GPU time (CUDA events), "
          f"median of {args.reps}\n")
    print("| peer | capacity | device bytes | insert 1,024 (us) | insert (M transitions/s) "
          "| sample 32 (us) | sample 1,024 (us) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['capacity']:,} | {gb(r['device_bytes'])} | {f1(r['insert_us'])} "
              f"| {f1(r['insert_mps'])} | {f1(r['sample32_us'])} | {f1(r['sample1024_us'])} |")
    print()
    for r in rows:
        print(f"{r['peer']}: {r['bytes_per_transition']:,} bytes per transition; projected "
              f"{gb(r['projected_bytes_1000000'])} for 1,000,000 transitions, "
              f"{gb(r['projected_bytes_1048576'])} for 1,048,576"
              + (f"; note: {r['note']}" if r.get("note") else ""))
    print("\ntargets (issue 5, cudarl): 1M transitions <= 7.1 GB; insert >= 50M transitions/s; "
          "sample 32 <= 10 us; 1,024 <= 30 us")

    if args.json:
        versions = {"python": sys.version.split()[0], "numpy": np.__version__}
        for mod in ("torch", "numba", "numba_cuda"):
            if mod in sys.modules:
                versions[mod] = getattr(sys.modules[mod], "__version__", None)
        out = {"bench": "replay_peers", "num_envs": E, "frame": [H, W], "stack": K,
               "batches": list(BATCHES), "reps": args.reps, "warmup": args.warmup,
               "seed": args.seed, "versions": versions, "wall_s": time.time() - t0,
               "results": rows}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
