"""Train PPO on a Gymnasium env stepped in Python (Gymnasium's own Acrobot-v1, "gym:Acrobot-v1":
cudarl has a C Acrobot-v1 of its own): the envs step in Python, the policy and the learner run
in cudarl (on the GPU where there is one), and print the curve.

    python3 examples/python/train_gym_env.py [--env gym:Acrobot-v1] [--steps 500000] [--seed 1]"""
import argparse

import cudarl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="gym:Acrobot-v1")
    ap.add_argument("--steps", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs-dir", default="runs")
    a = ap.parse_args()

    def report(m):
        if m["iteration"] % 50 == 0:
            print("step %7d  mean return of the last 100: %7.1f" %
                  (m["global_step"], m["charts/mean_return_100"]))

    run = cudarl.train(env=a.env, seed=a.seed, total_timesteps=a.steps, quiet=True,
                       runs_dir=a.runs_dir, callback=report)
    print("done:", run)
    print("checkpoint:", run.checkpoint)


if __name__ == "__main__":
    main()
