#!/usr/bin/env python3
"""PyTorch peer of cudarl's PPO on pixels: CleanRL ppo_atari.py's agent and algorithm in eager
PyTorch (written for this benchmark, not CleanRL's code), its envs cudarl's own CartPolePixels-v1
through the Python package (cudarl.make_vec): on --device cuda the env's CUDA twin, the uint8
frames (N, 4, 84, 84) read and the actions written in device memory through DLPack, no copies;
on --device cpu the same env on CPU threads (host views, for a smoke test).

The algorithm and defaults are CleanRL's ppo_atari.py (github.com/vwxyzjn/cleanrl, commit
fe8d8a03c41a7ef5b523e2e354bd01c363e786bb, cleanrl/ppo_atari.py last changed in 004f8a0):

  * Agent: the Nature-CNN trunk (conv 32@8x8 stride 4, 64@4x4/2, 64@3x3/1, ReLU, Linear(3136,
    512), ReLU) on frames / 255, an actor head Linear(512, actions) and a critic head Linear(512,
    1); orthogonal weights (gain sqrt(2), the actor 0.01, the critic 1), zero biases; Adam (eps
    1e-5), the learning rate annealed linearly to 0 over --total-timesteps.
  * 8 envs x 128 steps, 4 minibatches, 4 epochs, gamma 0.99, GAE lambda 0.95, advantages
    normalised per minibatch, clip 0.1, clipped value loss, entropy 0.01, vf 0.5, grad norm 0.5,
    no target KL, 10M steps.

What differs from CleanRL's script, to run cudarl's workload the same way:
  * No Atari wrappers: the env stacks its own 4 frames and pays CartPole's reward.
  * Truncated episodes (CartPole's 500-step limit) are bootstrapped with the critic's value of
    the final observation, as cudarl does (CleanRL treats them as terminated; --no-bootstrap-
    truncated does that):
        next_value[t] = V(final_obs[t]) where an episode ended at t, else V(obs[t+1])
        delta[t] = r[t] + gamma * (1 - terminated[t]) * next_value[t] - V(obs[t])
        A[t] = delta[t] + gamma * lambda * (1 - done[t]) * A[t+1]
  * The categorical distribution is written out (log-softmax; sampling by Gumbel-max) rather
    than torch.distributions.Categorical, whose argument validation waits for the GPU at every
    call; statistics stay on the device until the end of each iteration (one host wait per
    iteration for them, and the env's one per step: cudarl.make_vec returns once its step is
    done). Minibatch indices are drawn on the device.
  * Options cudarl has: --separate-critic (the critic a Nature-CNN of its own, cudarl's
    --separate-critic), --no-clip-vloss; and PyTorch's: --amp (bf16 autocast for the networks,
    the losses in fp32), --channels-last, --compile (torch.compile of the rollout's and the
    update's functions), --tf32.

Prints a line per iteration; --json writes the curve (seconds since launch, env steps, mean
return of the last 100 episodes, episodes) and a summary. "Launch" is --launch-unix (a unix time:
bench/pixels.py passes the moment it started this process) or else the first line of this file.
--seconds stops the run after the iteration that passes that many seconds from launch;
--stop-at R after the iteration where the mean of the last 100 episodes reached R (at least 100
episodes ended), as cudarl's "solved" check.

  python3 bench/peers/ppo_atari_torch.py --device cuda --num-envs 32 --num-minibatches 16 \\
      --separate-critic --no-clip-vloss --amp --seconds 60 --stop-at 475 --json peer.json
  PYTHONPATH=build/python python3 bench/peers/ppo_atari_torch.py --device cpu --num-envs 2 \\
      --num-steps 16 --num-minibatches 2 --seconds 20        # smoke test
"""
import time

T_START_UNIX = time.time()  # "launch" unless --launch-unix says otherwise

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CLEANRL_COMMIT = "fe8d8a03c41a7ef5b523e2e354bd01c363e786bb"
RECENT_EPISODES = 100


def strtobool(x):
    v = str(x).strip().lower()
    if v in ("y", "yes", "t", "true", "on", "1"):
        return True
    if v in ("n", "no", "f", "false", "off", "0"):
        return False
    raise argparse.ArgumentTypeError("expected true or false, got %r" % (x,))


def add_bool(p, name, default, help):
    """--name [true|false] and --no-name, as cudarl's flags."""
    dest = name.replace("-", "_")
    p.add_argument("--" + name, dest=dest, type=strtobool, nargs="?", const=True,
                   default=default, help=help + " (default %s)" % str(default).lower())
    p.add_argument("--no-" + name, dest=dest, action="store_false", help=argparse.SUPPRESS)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env-id", default="CartPolePixels-v1",
                   help="a cudarl env of uint8 (4, 84, 84) frames and discrete actions")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="where the envs (cudarl.make_vec) and the networks run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=0,
                   help="stop after the iteration that passes this many seconds from launch "
                        "(0: no limit)")
    p.add_argument("--stop-at", type=float, default=None,
                   help="stop once the mean return of the last 100 episodes reaches this")
    p.add_argument("--launch-unix", type=float, default=None,
                   help="the unix time the times are counted from (default: this process's "
                        "start)")
    p.add_argument("--json", default=None, help="write the curve and the summary here")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads and the env's CPU threads (0: defaults)")
    # PyTorch's options
    p.add_argument("--amp", action="store_true", help="bf16 autocast for the networks")
    p.add_argument("--channels-last", action="store_true", help="NHWC activations and weights")
    p.add_argument("--compile", nargs="?", const="default", default=None, metavar="MODE",
                   help="torch.compile the rollout's and the update's functions (MODE: "
                        "default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs)")
    p.add_argument("--tf32", action="store_true",
                   help="TF32 for fp32 matmuls and convolutions (default off: fp32)")
    add_bool(p, "torch-deterministic", True, "torch.backends.cudnn.deterministic (CleanRL's)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark (autotuned convolutions)")
    # CleanRL ppo_atari.py's flags and defaults
    p.add_argument("--total-timesteps", type=int, default=10_000_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=128)
    add_bool(p, "anneal-lr", True, "anneal the learning rate linearly to 0")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    add_bool(p, "norm-adv", True, "normalise advantages per minibatch")
    p.add_argument("--clip-coef", type=float, default=0.1)
    add_bool(p, "clip-vloss", True, "clipped value loss")
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None)
    # cudarl's
    add_bool(p, "separate-critic", False, "the critic a Nature-CNN of its own (cudarl's flag)")
    add_bool(p, "bootstrap-truncated", True,
             "bootstrap truncated episodes with V(final obs), as cudarl does")
    a = p.parse_args(argv)

    def bad(msg):
        p.error(msg)

    for name in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "total_timesteps"):
        if getattr(a, name) < 1:
            bad("--%s is %d; give at least 1" % (name.replace("_", "-"), getattr(a, name)))
    if a.num_envs > 1 << 20:
        bad("--num-envs is %d; cudarl.make_vec takes 1 .. 1048576" % a.num_envs)
    for name in ("learning_rate", "gamma", "gae_lambda", "clip_coef", "ent_coef", "vf_coef",
                 "max_grad_norm", "seconds"):
        v = getattr(a, name)
        if not math.isfinite(v) or v < 0:
            bad("--%s is %r; give a finite number >= 0" % (name.replace("_", "-"), v))
    if a.target_kl is not None and not (a.target_kl > 0):
        bad("--target-kl is %r; give a number > 0, or leave it out" % a.target_kl)
    if a.stop_at is not None and not math.isfinite(a.stop_at):
        bad("--stop-at is %r; give a finite return" % a.stop_at)
    if a.threads < 0:
        bad("--threads is %d; give 0 (defaults) or more" % a.threads)
    if a.compile not in (None, "default", "reduce-overhead", "max-autotune",
                         "max-autotune-no-cudagraphs"):
        bad("--compile %s: use default, reduce-overhead, max-autotune or "
            "max-autotune-no-cudagraphs" % a.compile)
    a.batch_size = a.num_envs * a.num_steps
    if a.batch_size % a.num_minibatches:
        bad("--num-minibatches %d does not divide the batch of %d (num-envs x num-steps); "
            "pick a divisor" % (a.num_minibatches, a.batch_size))
    a.minibatch_size = a.batch_size // a.num_minibatches
    a.num_iterations = a.total_timesteps // a.batch_size
    if a.num_iterations < 1:
        bad("--total-timesteps %d is less than one batch (%d); give at least that"
            % (a.total_timesteps, a.batch_size))
    if a.device == "cuda" and not torch.cuda.is_available():
        bad("--device cuda, but torch sees no GPU (torch.cuda.is_available() is False); use "
            "--device cpu")
    return a


# ---- the agent -------------------------------------------------------------------------------

def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


def nature_cnn(channels):
    return nn.Sequential(
        layer_init(nn.Conv2d(channels, 32, 8, stride=4)), nn.ReLU(),
        layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
        layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
        nn.Flatten(),
        layer_init(nn.Linear(64 * 7 * 7, 512)), nn.ReLU())


class Agent(nn.Module):
    """ppo_atari.py's Agent (network, actor, critic), with --separate-critic a second trunk
    (critic_network) for the critic. forward: uint8 frames -> (logits, value)."""

    def __init__(self, channels, num_actions, separate_critic, channels_last):
        super().__init__()
        self.network = nature_cnn(channels)
        self.critic_network = nature_cnn(channels) if separate_critic else None
        self.actor = layer_init(nn.Linear(512, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1)
        self.channels_last = channels_last

    def _x(self, obs):
        x = obs.float() / 255.0
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def forward(self, obs):
        x = self._x(obs)
        hidden = self.network(x)
        critic_hidden = hidden if self.critic_network is None else self.critic_network(x)
        return self.actor(hidden), self.critic(critic_hidden).squeeze(-1)

    def value(self, obs):
        x = self._x(obs)
        net = self.network if self.critic_network is None else self.critic_network
        return self.critic(net(x)).squeeze(-1)


# ---- the env through cudarl.make_vec ------------------------------------------------------

class PixelEnvs:
    """cudarl.make_vec(env_id) as torch tensors: views of the batch's own buffers (device memory
    on cuda), made once. obs (N, C, H, W) uint8 is live: each step overwrites it."""

    def __init__(self, env_id, n, device, seed, threads):
        import cudarl
        self.env = cudarl.make_vec(env_id, n, device=device, seed=seed, threads=threads,
                                   array="dlpack")
        sp = self.env.single_observation_space
        if sp.dtype != np.uint8 or len(sp.shape) != 3 or tuple(sp.shape[1:]) != (84, 84):
            raise SystemExit("--env-id %s has observations %s %s; this agent is the Nature-CNN "
                             "on uint8 (C, 84, 84) frames: use CartPolePixels-v1"
                             % (env_id, sp.dtype, sp.shape))
        if not hasattr(self.env.single_action_space, "n"):
            raise SystemExit("--env-id %s has continuous actions; this agent's are discrete"
                             % env_id)
        self.num_actions = int(self.env.single_action_space.n)
        self.shape = tuple(sp.shape)
        self.obs = torch.from_dlpack(self.env.reset(seed=seed)[0])
        self.on_gpu = self.obs.is_cuda
        if (device == "cuda") != self.on_gpu:
            raise SystemExit("cudarl.make_vec(%r, device=%r) stepped on %s; this cudarl build "
                             "has no CUDA twin of it (build cudarl with CUDA)"
                             % (env_id, device, "the GPU" if self.on_gpu else "CPU threads"))
        self.actions = torch.from_dlpack(self.env.actions_buffer)
        # the host path's step takes numpy: a view of the same buffer
        self._act_arg = self.env.actions_buffer if self.on_gpu else self.actions.numpy()
        self._views = None
        self.final_obs = None

    def step(self):
        """Steps with self.actions; returns (reward, terminated, truncated, final_obs, ended):
        tensors valid until the next step, final_obs rows only for the envs that ended; ended
        is None on the GPU (use terminated | truncated)."""
        out = self.env.step(self._act_arg)
        if self._views is None:
            self._views = [torch.from_dlpack(x) for x in out[1:4]]
            if self.on_gpu:
                self.final_obs = torch.from_dlpack(out[4]["final_obs"])
            else:
                self.final_obs = torch.zeros((self.obs.shape[0],) + self.shape, dtype=torch.uint8)
        ended = None
        if not self.on_gpu:
            info = out[4]
            ended = torch.from_numpy(info["_final_obs"]) if "_final_obs" in info else None
            if ended is not None:
                self.final_obs[ended] = torch.from_numpy(info["final_obs"][info["_final_obs"]])
        reward, terminated, truncated = self._views
        return reward, terminated, truncated, self.final_obs, ended

    def close(self):
        self.env.close()


# ---- the categorical distribution, written out ---------------------------------------------

def sample_logp(logits):
    """An action per row (Gumbel-max: exactly a categorical draw) and its log-probability."""
    logits = logits.float()
    logp_all = F.log_softmax(logits, dim=-1)
    u = torch.rand_like(logp_all).clamp_(min=torch.finfo(torch.float32).tiny)
    action = (logp_all - torch.log(-torch.log(u))).argmax(dim=-1)
    return action, logp_all.gather(-1, action.unsqueeze(-1)).squeeze(-1)


def logp_entropy(logits, action):
    logp_all = F.log_softmax(logits.float(), dim=-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp_all.gather(-1, action.unsqueeze(-1)).squeeze(-1), entropy


# ---- training -------------------------------------------------------------------------------

class PPO:
    """One run: the agent, its optimizer, the envs and the rollout's storage (T, N) on the device;
    rollout(), advantages() and update() are an iteration."""

    def __init__(self, a):
        self.a = a
        self.device = torch.device(a.device)
        self.envs = PixelEnvs(a.env_id, a.num_envs, a.device, a.seed, a.threads)
        self.N, self.T, self.shape = a.num_envs, a.num_steps, self.envs.shape
        self.agent = Agent(self.shape[0], self.envs.num_actions, a.separate_critic,
                           a.channels_last).to(self.device)
        if a.channels_last:
            self.agent = self.agent.to(memory_format=torch.channels_last)
        self.optimizer = torch.optim.Adam(self.agent.parameters(), lr=a.learning_rate, eps=1e-5)
        self.act, self.value_of, self.minibatch_loss = self._act, self._value_of, self._loss
        if a.compile:
            self.act = torch.compile(self._act, mode=a.compile)
            self.value_of = torch.compile(self._value_of, mode=a.compile)
            self.minibatch_loss = torch.compile(self._loss, mode=a.compile)
        T, N, dev = self.T, self.N, self.device
        self.obs = torch.zeros((T, N) + self.shape, dtype=torch.uint8, device=dev)  # as cudarl
        self.final_obs = torch.zeros((T, N) + self.shape, dtype=torch.uint8, device=dev)
        self.actions = torch.zeros((T, N), dtype=torch.long, device=dev)
        self.logprobs, self.rewards, self.terminateds, self.dones, self.values, \
            self.ret_at_done = (torch.zeros((T, N), device=dev) for _ in range(6))
        self.ep_return = torch.zeros(N, device=dev)  # (N) the running episodes' returns

    def _autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.a.amp)

    def _act(self, obs):
        with self._autocast():
            logits, value = self.agent(obs)
        action, logp = sample_logp(logits)
        return action, logp, value.float()

    def _value_of(self, obs):
        with self._autocast():
            return self.agent.value(obs).float()

    def _loss(self, obs, actions, old_logp, adv, returns, old_values):
        """ppo_atari.py's minibatch loss; and (v_loss, pg_loss, entropy, old_approx_kl,
        approx_kl, clipfrac), on the device."""
        a = self.a
        with self._autocast():
            logits, newvalue = self.agent(obs)
        newlogp, entropy = logp_entropy(logits, actions)
        newvalue = newvalue.float()
        logratio = newlogp - old_logp
        ratio = logratio.exp()
        with torch.no_grad():
            old_approx_kl = (-logratio).mean()
            approx_kl = ((ratio - 1) - logratio).mean()
            clipfrac = ((ratio - 1.0).abs() > a.clip_coef).float().mean()
        if a.norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg_loss = torch.max(-adv * ratio,
                            -adv * torch.clamp(ratio, 1 - a.clip_coef, 1 + a.clip_coef)).mean()
        if a.clip_vloss:
            v_unclipped = (newvalue - returns) ** 2
            v_clipped = old_values + torch.clamp(newvalue - old_values, -a.clip_coef, a.clip_coef)
            v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - returns) ** 2).mean()
        else:
            v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
        entropy_loss = entropy.mean()
        loss = pg_loss - a.ent_coef * entropy_loss + v_loss * a.vf_coef
        return loss, torch.stack((v_loss, pg_loss, entropy_loss, old_approx_kl, approx_kl,
                                  clipfrac)).detach()

    @torch.no_grad()
    def rollout(self):
        """T steps of the N envs into the storage; returns the live observation view."""
        envs = self.envs
        for step in range(self.T):
            self.obs[step].copy_(envs.obs)
            action, logp, value = self.act(envs.obs)
            self.values[step] = value
            self.actions[step] = action
            self.logprobs[step] = logp
            envs.actions.copy_(action)
            # make_vec waits for torch's stream, steps, and returns once the step is done
            reward, terminated, truncated, fin, ended = envs.step()
            done = terminated | truncated
            self.rewards[step] = reward
            self.terminateds[step] = terminated
            self.dones[step] = done
            if envs.on_gpu:
                self.final_obs[step].copy_(fin)
            elif ended is not None:
                self.final_obs[step][ended] = fin[ended]
            self.ep_return += reward
            self.ret_at_done[step] = self.ep_return
            self.ep_return.mul_(1.0 - self.dones[step])

    @torch.no_grad()
    def advantages(self):
        """GAE over the rollout (T, N); truncated episodes bootstrapped with V(final obs) with
        --bootstrap-truncated. Returns (advantages, returns)."""
        a, T, N = self.a, self.T, self.N
        following = torch.cat((self.values[1:], self.value_of(self.envs.obs).unsqueeze(0)))
        if a.bootstrap_truncated:
            done = self.dones.bool()
            idx = done.flatten().nonzero().squeeze(1)  # waits for the device
            final_values = torch.zeros(T * N, device=self.device)
            flat = self.final_obs.view((T * N,) + self.shape)
            for s in range(0, idx.numel(), N):  # chunks of N rows: the rollout's shape
                chunk = idx[s:s + N]
                rows = torch.cat((chunk, chunk.new_zeros(N - chunk.numel())))
                final_values[chunk] = self.value_of(flat[rows])[:chunk.numel()]
            following = torch.where(done, final_values.view(T, N), following)
            not_term = 1.0 - self.terminateds
        else:
            not_term = 1.0 - self.dones
        adv = torch.zeros_like(self.rewards)
        last = torch.zeros(N, device=self.device)
        for t in reversed(range(T)):
            delta = self.rewards[t] + a.gamma * following[t] * not_term[t] - self.values[t]
            last = delta + a.gamma * a.gae_lambda * (1.0 - self.dones[t]) * last
            adv[t] = last
        return adv, adv + self.values

    def update(self, adv, returns):
        """--update-epochs epochs of minibatches; the mean of the loss statistics (device)."""
        a = self.a
        b_obs = self.obs.view((-1,) + self.shape)
        b_logp, b_act, b_val = self.logprobs.view(-1), self.actions.view(-1), self.values.view(-1)
        b_adv, b_ret = adv.view(-1), returns.view(-1)
        total = torch.zeros(6, device=self.device)
        n = 0
        for _ in range(a.update_epochs):
            perm = torch.randperm(a.batch_size, device=self.device)
            for s in range(0, a.batch_size, a.minibatch_size):
                mb = perm[s:s + a.minibatch_size]
                loss, stats = self.minibatch_loss(b_obs[mb], b_act[mb], b_logp[mb], b_adv[mb],
                                                  b_ret[mb], b_val[mb])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.agent.parameters(), a.max_grad_norm)
                self.optimizer.step()
                total += stats
                n += 1
            if a.target_kl is not None and stats[4].item() > a.target_kl:
                break
        return total / n

    def ended_returns(self):
        """The returns of the episodes that ended in the rollout, (step, env) order (host)."""
        return self.ret_at_done[self.dones.bool()].cpu().tolist()


def describe(a, envs, loop_start):
    return ("ppo_atari_torch: torch %s, %s on %s (%s): %d envs x %d steps, %d minibatches x %d "
            "epochs, %s%s%s%s%s; loop starts %.2f s after launch" % (
                torch.__version__, a.env_id, a.device,
                "cudarl.make_vec on the GPU twin" if envs.on_gpu else "cudarl.make_vec on CPU",
                a.num_envs, a.num_steps, a.num_minibatches, a.update_epochs,
                "bf16 autocast" if a.amp else ("tf32" if a.tf32 else "fp32"),
                ", separate critic" if a.separate_critic else "",
                "" if a.clip_vloss else ", no value clipping",
                ", channels_last" if a.channels_last else "",
                ", torch.compile(%s)" % a.compile if a.compile else "", loop_start))


def train(a, since_launch):
    """The run, iteration by iteration, until --total-timesteps, --stop-at or --seconds; the
    curve [seconds since launch, env steps, mean return of the last 100, episodes] and the
    summary."""
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    ppo = PPO(a)
    recent = collections.deque(maxlen=RECENT_EPISODES)
    episodes, curve, reached, best, stop, step = 0, [], None, None, "total-timesteps", 0
    if ppo.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(ppo.device)
        torch.cuda.synchronize(ppo.device)
    loop_start = since_launch()
    print(describe(a, ppo.envs, loop_start), flush=True)
    for iteration in range(1, a.num_iterations + 1):
        if a.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / a.num_iterations
            ppo.optimizer.param_groups[0]["lr"] = frac * a.learning_rate
        ppo.rollout()
        step += a.batch_size
        adv, returns = ppo.advantages()
        stats = ppo.update(adv, returns).tolist()  # the iteration's one wait for statistics
        ended = ppo.ended_returns()
        t = since_launch()
        recent.extend(ended)
        episodes += len(ended)
        mean100 = sum(recent) / len(recent) if recent else None
        if mean100 is not None and episodes >= RECENT_EPISODES:
            best = mean100 if best is None else max(best, mean100)
        curve.append([round(t, 4), step, mean100, episodes])
        print("iter %d step %d t %.2f s sps %.0f mean100 %s episodes %d v_loss %.4g pg_loss "
              "%.4g entropy %.4g approx_kl %.4g clipfrac %.3f" % (
                  iteration, step, t, step / max(t - loop_start, 1e-9),
                  "-" if mean100 is None else "%.2f" % mean100, episodes, *stats[:3], stats[4],
                  stats[5]), flush=True)
        if a.stop_at is not None and episodes >= RECENT_EPISODES and mean100 >= a.stop_at:
            reached, stop = {"step": step, "t": t, "iteration": iteration}, "stop-at"
            break
        if a.seconds and t >= a.seconds:
            stop = "seconds"
            break
    peak = None
    if ppo.device.type == "cuda":
        torch.cuda.synchronize(ppo.device)
        peak = torch.cuda.max_memory_allocated(ppo.device)
    end = since_launch()
    on_gpu = ppo.envs.on_gpu
    ppo.envs.close()
    summary = {
        "steps": step, "iterations": len(curve), "episodes": episodes, "env_on_gpu": on_gpu,
        "loop_start_s": loop_start, "end_s": end, "loop_s": end - loop_start,
        "sps": step / (end - loop_start) if end > loop_start else None,
        # from the end of the first iteration (compilation, warm-up) on
        "sps_after_first_iteration": ((curve[-1][1] - curve[0][1]) / (curve[-1][0] - curve[0][0])
                                      if len(curve) >= 3 else None),
        "stop": stop, "stop_at": a.stop_at,
        "reached_step": reached["step"] if reached else None,
        "reached_s": reached["t"] if reached else None,
        "best_mean100": best, "final_mean100": curve[-1][2] if curve else None,
        "peak_gpu_memory_bytes": peak,
    }
    return curve, summary


def main(argv=None):
    a = parse_args(argv)
    t0 = a.launch_unix if a.launch_unix is not None else T_START_UNIX
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.backends.cudnn.deterministic = a.torch_deterministic
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    curve, s = train(a, lambda: time.time() - t0)
    print("ppo_atari_torch: %d steps in %.2f s of loop (%.0f steps/s), launch to end %.2f s; "
          "%s; mean(100) %s, best %s" % (
              s["steps"], s["loop_s"], s["sps"] or 0, s["end_s"],
              "mean(100) >= %g at step %d, %.2f s from launch" % (a.stop_at, s["reached_step"],
                                                                  s["reached_s"])
              if s["reached_step"] else "stopped by %s" % s["stop"],
              "-" if s["final_mean100"] is None else "%.2f" % s["final_mean100"],
              "-" if s["best_mean100"] is None else "%.2f" % s["best_mean100"]), flush=True)
    if a.json:
        out = {
            "peer": "bench/peers/ppo_atari_torch.py",
            "algorithm": "CleanRL ppo_atari.py (commit %s), eager PyTorch; truncation "
                         "bootstrapped: %s" % (CLEANRL_COMMIT, a.bootstrap_truncated),
            "config": {k: v for k, v in vars(a).items() if k != "json"},
            "torch_version": torch.__version__, "python_version": platform.python_version(),
            "device_name": (torch.cuda.get_device_name(0) if a.device == "cuda"
                            else platform.processor() or platform.machine()),
            "cpu_count": os.cpu_count(),
            "curve_columns": ["s_since_launch", "global_step", "mean_return_100", "episodes"],
            "curve": curve, "summary": s,
        }
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
