"""cudarl.make_vec("CartPole-v1", N, device="cuda") stepped from torch (actions drawn on the GPU
into the batch's own buffer, observations read through DLPack) beside gymnax's CartPole-v1 in
JAX on the same GPU, random actions both: env steps per second. gymnax runs two ways: a Python
loop over a jitted vmapped step (as make_vec is driven), and jax.lax.scan over all the steps in
one jitted call (no Python per step).

  python3 bench/make_vec_gpu.py [--envs 65536] [--steps 500]"""
import argparse
import time


def bench_cudarl(n, steps):
    import torch

    import cudarl
    env = cudarl.make_vec("CartPole-v1", n, device="cuda", array="dlpack", seed=1)
    obs = torch.from_dlpack(env.reset()[0])
    act = torch.from_dlpack(env.actions_buffer)
    for _ in range(20):
        act.random_(0, 2)
        env.step(env.actions_buffer)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        act.random_(0, 2)
        env.step(env.actions_buffer)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    s = float(obs.abs().sum())  # the view is live
    env.close()
    return n * steps / dt, s


def bench_gymnax(n, steps):
    import gymnax
    import jax
    import jax.numpy as jnp
    env, params = gymnax.make("CartPole-v1")
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))

    def one(carry, key):
        state = carry
        k1, k2 = jax.random.split(key)
        a = jax.random.randint(k1, (n,), 0, 2)
        out = step(jax.random.split(k2, n), state, a, params)  # obs, state, reward, ...
        return out[1], out[2].sum()

    key = jax.random.PRNGKey(1)
    a = jnp.zeros(n, jnp.int32)
    for _ in range(20):
        key, k = jax.random.split(key)
        out = step(jax.random.split(k, n), state, a, params)
        obs, state = out[0], out[1]
    obs.block_until_ready()
    t = time.perf_counter()
    for _ in range(steps):
        key, k1, k2 = jax.random.split(key, 3)
        a = jax.random.randint(k1, (n,), 0, 2)
        out = step(jax.random.split(k2, n), state, a, params)
        obs, state = out[0], out[1]
    obs.block_until_ready()
    loop = n * steps / (time.perf_counter() - t)
    scan = jax.jit(lambda s, k: jax.lax.scan(one, s, jax.random.split(k, steps)))
    out = scan(state, key)
    jax.block_until_ready(out)
    t = time.perf_counter()
    out = scan(state, jax.random.PRNGKey(2))
    jax.block_until_ready(out)
    fused = n * steps / (time.perf_counter() - t)
    return loop, fused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=500)
    a = ap.parse_args()
    c, _ = bench_cudarl(a.envs, a.steps)
    g_loop, g_scan = bench_gymnax(a.envs, a.steps)
    print("CartPole-v1, %d envs, %d steps, random actions, env steps/s:" % (a.envs, a.steps))
    print("| env batch | driven by | env steps/s |")
    print("|---|---|---:|")
    print("| cudarl.make_vec, device cuda | torch, a Python loop | %.3gM |" % (c / 1e6))
    print("| gymnax (JAX) | a Python loop over a jitted step | %.3gM |" % (g_loop / 1e6))
    print("| gymnax (JAX) | jax.lax.scan, one jitted call | %.3gM |" % (g_scan / 1e6))
    print("cudarl / gymnax loop: %.2f; cudarl / gymnax scan: %.2f" % (c / g_loop, c / g_scan))


if __name__ == "__main__":
    main()
