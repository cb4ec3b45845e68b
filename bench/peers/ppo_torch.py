"""PyTorch peer of cudarl's PPO benchmarks: CleanRL's ppo.py on a torch-vectorised CartPole-v1.

The algorithm is CleanRL's ppo.py (https://github.com/vwxyzjn/cleanrl, cleanrl/ppo.py) as written,
with its flag names and cudarl's default preset as the defaults:

  * Agent: separate actor and critic MLPs (obs -> 64 -> 64 -> out, tanh), orthogonal weights with
    gains sqrt(2) for the hidden layers, 1.0 for the value head and 0.01 for the policy head, zero
    biases; Adam with eps 1e-5; linear learning-rate annealing; GAE; per-minibatch advantage
    normalisation; clipped surrogate; clipped value loss; entropy bonus; clip_grad_norm_; optional
    early stop on target_kl after an epoch.
  * It is eager PyTorch, as CleanRL is: no torch.compile, no CUDA graphs (--cuda-graphs accepts
    only false), Categorical with its default argument validation, one Python-level op per tensor
    operation.

Two things differ from CleanRL's script, both to run the same workload as cudarl:

  * The environment is CartPole-v1 written in torch and stepped on the chosen device (no
    gymnasium): Gymnasium's CartPoleEnv dynamics and constants in float64 (euler integrator),
    reset uniform in [-0.05, 0.05), termination at |x| > 2.4 or |theta| > 12 degrees, truncation
    (TimeLimit) at 500 steps, same-step autoreset that keeps the final observation, reward 1 per
    step, float32 observations.
  * GAE bootstraps truncated episodes with the critic's value of the final observation, as
    cudarl does (CleanRL's ppo.py treats truncation as termination):
        next_value[t] = V(final_obs[t])   if done[t]
                      = V(obs[t+1])       else (V(next_obs) after the last step)
        delta[t]      = r[t] + gamma * (1 - terminated[t]) * next_value[t] - V(obs[t])
        A[t]          = delta[t] + gamma * lambda * (1 - done[t]) * A[t+1]
    with done = terminated | truncated.

Metrics are on, as a user of CleanRL would have them: finished episode returns are collected
into a host list (moved from the device once per iteration), the mean of the last 100 is taken
on the host every iteration, and CleanRL's loss statistics (value and policy loss, entropy,
approx KL, clip fraction, explained variance, SPS) are computed every iteration.

Per seed it reports steps/s over the training loop (rollout + update), the global step and time
at which the mean return of the last 100 finished episodes first reached 475 (at least 100
episodes finished; checked after each iteration's update, as cudarl does), the final mean of
the last 100, the import and initialisation times, and the peak GPU memory on cuda.

  python3 bench/peers/ppo_torch.py --device cuda --seeds 5 --json torch_cuda.json
  python3 bench/peers/ppo_torch.py --device cpu --threads 1 --seeds 5
"""

import time

T_PROCESS = time.perf_counter()  # the origin of every "from process start" time

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

_t = time.perf_counter()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.optim as optim  # noqa: E402
from torch.distributions.categorical import Categorical  # noqa: E402

TORCH_IMPORT_S = time.perf_counter() - _t

SOLVED_RETURN = 475.0  # CartPole-v1's reward_threshold
RECENT_EPISODES = 100


def strtobool(x):
    v = str(x).strip().lower()
    if v in ("y", "yes", "t", "true", "on", "1"):
        return True
    if v in ("n", "no", "f", "false", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {x!r}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1, help="seed of the run (with --seeds 1)")
    p.add_argument("--seeds", type=int, default=1,
                   help="run seeds 1..K one after another in this process (K > 1 overrides --seed)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads(N) (0: leave torch's default)")
    p.add_argument("--json", type=str, default=None, help="write the results to this path")
    p.add_argument("--cuda-graphs", type=strtobool, default=False, nargs="?", const=True,
                   help="only false: this is eager PyTorch, as CleanRL is")
    # CleanRL's ppo.py flags, with cudarl's default preset
    p.add_argument("--total-timesteps", type=int, default=300000)
    p.add_argument("--learning-rate", type=float, default=2.5e-3)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=64)
    p.add_argument("--anneal-lr", type=strtobool, default=True, nargs="?", const=True)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--norm-adv", type=strtobool, default=True, nargs="?", const=True)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--clip-vloss", type=strtobool, default=True, nargs="?", const=True)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None)
    p.add_argument("--torch-deterministic", type=strtobool, default=True, nargs="?", const=True)
    args = p.parse_args(argv)
    if args.cuda_graphs:
        p.error("--cuda-graphs true is not supported: this peer is eager PyTorch, like CleanRL")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch.cuda.is_available() is False")
    if args.num_envs < 1 or args.num_steps < 1 or args.num_minibatches < 1:
        p.error("--num-envs, --num-steps and --num-minibatches must be at least 1")
    if args.seeds < 1:
        p.error("--seeds must be at least 1")
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = args.total_timesteps // args.batch_size
    if args.minibatch_size < 1 or args.num_iterations < 1:
        p.error("the batch (num_envs * num_steps) must fit num_minibatches and total_timesteps")
    return args


# ---- CartPole-v1, vectorised in torch ---------------------------------------------------------

class TorchCartPole:
    """N copies of Gymnasium's CartPole-v1 (CartPoleEnv + TimeLimit(500)) stepped together on one
    device, state in float64, with same-step autoreset. step() returns
    (obs, reward, terminated, truncated, final_obs): where an episode ended, final_obs holds its
    last observation and obs the first observation of the next one."""

    # gymnasium/envs/classic_control/cartpole.py, derived constants computed as it does
    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02  # seconds between state updates, euler integrator
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    max_episode_steps = 500
    obs_dim = 4
    num_actions = 2

    def __init__(self, num_envs, device, seed):
        self.num_envs = num_envs
        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)
        self.state = torch.zeros((num_envs, 4), dtype=torch.float64, device=device)
        self.elapsed = torch.zeros(num_envs, dtype=torch.int32, device=device)
        self.reward = torch.ones(num_envs, dtype=torch.float32, device=device)

    def _initial_states(self):
        u = torch.rand((self.num_envs, 4), generator=self.gen, dtype=torch.float64,
                       device=self.device)
        return -0.05 + (0.05 - (-0.05)) * u

    def reset(self):
        self.state = self._initial_states()
        self.elapsed.zero_()
        return self.state.to(torch.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.unbind(1)
        force = (action.to(torch.float64) * 2.0 - 1.0) * self.force_mag  # 0: -10, 1: +10
        costheta = torch.cos(theta)
        sintheta = torch.sin(theta)
        temp = (force + self.polemass_length * torch.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * torch.square(costheta) / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        state = torch.stack((x, x_dot, theta, theta_dot), dim=1)
        self.elapsed += 1
        terminated = ((x < -self.x_threshold) | (x > self.x_threshold)
                      | (theta < -self.theta_threshold_radians)
                      | (theta > self.theta_threshold_radians))
        truncated = self.elapsed >= self.max_episode_steps
        done = terminated | truncated
        final_obs = state.to(torch.float32)
        # same-step autoreset: fresh states are drawn for every env and kept where one ended
        self.state = torch.where(done.unsqueeze(1), self._initial_states(), state)
        self.elapsed = torch.where(done, torch.zeros_like(self.elapsed), self.elapsed)
        obs = self.state.to(torch.float32)
        return obs, self.reward, terminated, truncated, final_obs


# ---- CleanRL's agent ----------------------------------------------------------------------------

def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, num_actions):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, num_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


# ---- one training run --------------------------------------------------------------------------

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(args, seed, device):
    """CleanRL's training loop for one seed; returns this seed's measurements."""
    sync(device)
    t_setup = time.perf_counter()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    envs = TorchCartPole(args.num_envs, device, seed)
    D, A = envs.obs_dim, envs.num_actions
    agent = Agent(D, A).to(device)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T, N = args.num_steps, args.num_envs
    obs = torch.zeros((T, N, D), device=device)
    final_obs = torch.zeros((T, N, D), device=device)
    actions = torch.zeros((T, N), dtype=torch.long, device=device)
    logprobs = torch.zeros((T, N), device=device)
    rewards = torch.zeros((T, N), device=device)
    terminateds = torch.zeros((T, N), device=device)
    dones = torch.zeros((T, N), device=device)
    values = torch.zeros((T, N), device=device)
    ep_return_at_done = torch.zeros((T, N), device=device)
    ep_return = torch.zeros(N, device=device)

    episode_returns = []  # every finished episode's return, on the host
    mean100 = float("nan")
    solved = None
    last_metrics = {}

    global_step = 0
    next_obs = envs.reset()
    sync(device)
    start_time = time.perf_counter()
    setup_s = start_time - t_setup

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            lrnow = frac * args.learning_rate
            optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, T):
            global_step += N
            obs[step] = next_obs
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, terminated, truncated, fin = envs.step(action)
            done = terminated | truncated
            rewards[step] = reward
            terminateds[step] = terminated.float()
            dones[step] = done.float()
            final_obs[step] = fin
            ep_return += reward
            ep_return_at_done[step] = ep_return
            ep_return.mul_(1.0 - dones[step])

        # finished episodes to the host once per iteration, in (step, env) order
        d_host = dones.bool().cpu().numpy()
        r_host = ep_return_at_done.cpu().numpy()
        episode_returns.extend(r_host[d_host].tolist())

        # bootstrap value if not done; V(final obs) where an episode ended (terminated or
        # truncated: the terminated ones are masked in delta)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            final_values = agent.get_value(final_obs.reshape(-1, D)).reshape(T, N)
            following = torch.cat((values[1:], next_value), dim=0)
            next_values = torch.where(dones.bool(), final_values, following)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(T)):
                delta = rewards[t] + args.gamma * next_values[t] * (1.0 - terminateds[t]) - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * (
                    1.0 - dones[t]) * lastgaelam
            returns = advantages + values

        # flatten the batch
        b_obs = obs.reshape((-1, D))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        # optimizing the policy and value network
        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, args.batch_size, args.minibatch_size):
                end = start + args.minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (
                        mb_advantages.std() + 1e-8)

                # policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef,
                                                        1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # value loss
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        # CleanRL's per-iteration statistics (it writes them to TensorBoard)
        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        sync(device)
        now = time.perf_counter()
        if episode_returns:
            mean100 = float(np.mean(episode_returns[-RECENT_EPISODES:]))
        if (solved is None and len(episode_returns) >= RECENT_EPISODES
                and mean100 >= SOLVED_RETURN):
            solved = {"step": global_step, "iteration": iteration,
                      "loop_s": now - start_time, "process_s": now - T_PROCESS}
        last_metrics = {
            "learning_rate": optimizer.param_groups[0]["lr"],
            "value_loss": v_loss.item(),
            "policy_loss": pg_loss.item(),
            "entropy": entropy_loss.item(),
            "old_approx_kl": old_approx_kl.item(),
            "approx_kl": approx_kl.item(),
            "clipfrac": float(np.mean(clipfracs)),
            "explained_variance": float(explained_var),
            "SPS": int(global_step / (now - start_time)),
        }

    sync(device)
    end_time = time.perf_counter()
    loop_s = end_time - start_time
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {
        "seed": seed,
        "global_step": global_step,
        "iterations": args.num_iterations,
        "episodes": len(episode_returns),
        "setup_s": setup_s,
        "loop_start_process_s": start_time - T_PROCESS,
        "loop_end_process_s": end_time - T_PROCESS,
        "loop_s": loop_s,
        "sps": global_step / loop_s,
        "solved": solved is not None,
        "solved_step": solved["step"] if solved else None,
        "solved_iteration": solved["iteration"] if solved else None,
        "solved_loop_s": solved["loop_s"] if solved else None,
        "solved_process_s": solved["process_s"] if solved else None,
        "final_mean_return_100": mean100 if episode_returns else None,
        "peak_gpu_memory_bytes": peak,
        "last_iteration_metrics": last_metrics,
    }


# ---- the benchmark ----------------------------------------------------------------------------

def median_or_none(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main(argv=None):
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "cuda" else "cpu")

    # initialisation: the CUDA context (on cuda) and a first allocation on the device
    t = time.perf_counter()
    if device.type == "cuda":
        torch.cuda.init()
    torch.zeros(1, device=device)
    sync(device)
    init_s = time.perf_counter() - t
    ready_s = time.perf_counter() - T_PROCESS
    if device.type == "cuda":
        device_name = torch.cuda.get_device_name(device)
    else:
        device_name = platform.processor() or platform.machine()

    seeds = list(range(1, args.seeds + 1)) if args.seeds > 1 else [args.seed]
    print(f"torch {torch.__version__} PPO (CleanRL ppo.py, eager), CartPole-v1 on {args.device} "
          f"({device_name}), {torch.get_num_threads()} thread(s): {args.num_envs} envs x "
          f"{args.num_steps} steps, {args.update_epochs} epochs x {args.num_minibatches} "
          f"minibatches, {args.num_iterations * args.batch_size} steps; import {TORCH_IMPORT_S:.3f}"
          f" s, init {init_s:.3f} s", flush=True)
    print(f"{'seed':>6} {'steps/s':>10} {'solved@step':>12} {'solved@s':>9} {'@proc_s':>9} "
          f"{'final100':>9} {'loop_s':>8} {'peak_MiB':>9}", flush=True)
    results = []
    for seed in seeds:
        r = train(args, seed, device)
        results.append(r)
        peak = r["peak_gpu_memory_bytes"]
        print(f"{seed:>6} {r['sps']:>10.0f} {fmt(r['solved_step'], 'd'):>12} "
              f"{fmt(r['solved_loop_s'], '.3f'):>9} {fmt(r['solved_process_s'], '.3f'):>9} "
              f"{fmt(r['final_mean_return_100'], '.1f'):>9} {r['loop_s']:>8.3f} "
              f"{fmt(None if peak is None else peak / 2**20, '.1f'):>9}", flush=True)

    solved = [r for r in results if r["solved"]]
    summary = {
        "seeds": len(results),
        "solved": len(solved),
        "median_sps": median_or_none([r["sps"] for r in results]),
        "median_loop_s": median_or_none([r["loop_s"] for r in results]),
        # over the seeds that reached 475, as bench_ppo_cpu reports them
        "median_solved_step": median_or_none([r["solved_step"] for r in solved]),
        "median_solved_loop_s": median_or_none([r["solved_loop_s"] for r in solved]),
        "median_solved_process_s": median_or_none([r["solved_process_s"] for r in solved]),
        "median_final_mean_return_100": median_or_none(
            [r["final_mean_return_100"] for r in results]),
        "median_peak_gpu_memory_bytes": median_or_none(
            [r["peak_gpu_memory_bytes"] for r in results]),
    }
    line = (f"median: {summary['median_sps']:.0f} steps/s; solved {summary['solved']} of "
            f"{summary['seeds']} seeds")
    if solved:
        line += (f", median {summary['median_solved_step']:.0f} steps, "
                 f"{summary['median_solved_loop_s']:.3f} s of loop time "
                 f"({summary['median_solved_process_s']:.3f} s from process start) to reach 475")
    line += f"; median final mean {fmt(summary['median_final_mean_return_100'], '.1f')}"
    print(line, flush=True)

    if args.json:
        config = {k: v for k, v in vars(args).items() if k != "json"}
        out = {
            "peer": "torch",
            "script": "bench/peers/ppo_torch.py",
            "algorithm": "CleanRL ppo.py (eager PyTorch), truncation bootstrapped with V(final obs)",
            "env": "CartPole-v1 (torch, float64 state, same-step autoreset)",
            "config": config,
            "torch_version": torch.__version__,
            "torch_cuda_version": torch.version.cuda,
            "python_version": platform.python_version(),
            "numpy_version": np.__version__,
            "device": args.device,
            "device_name": device_name,
            "num_threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "torch_import_s": TORCH_IMPORT_S,
            "init_s": init_s,
            "ready_process_s": ready_s,
            "total_process_s": time.perf_counter() - T_PROCESS,
            "results": results,
            "summary": summary,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
