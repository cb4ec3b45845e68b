/* The numeric ops of the CPU backend: the plain-C specification every CUDA twin is held to.
 *
 * float32, row-major, contiguous. Shapes are in the comments: B batch rows, I inputs, O outputs,
 * A actions, T steps, N envs. Functions may use OpenMP worksharing internally but every
 * reduction is done in a fixed order, so results are bitwise identical for any thread count. */
#ifndef CUDARL_OPS_CPU_H
#define CUDARL_OPS_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = x w^T + b.  x (B, I), w (O, I), b (O), y (B, O). */
void cr_cpu_linear_forward(const float *x, const float *w, const float *b, float *y, int B, int I,
                           int O);
/* y = tanh(x w^T + b), the fused form of the above. */
void cr_cpu_linear_tanh_forward(const float *x, const float *w, const float *b, float *y, int B,
                                int I, int O);
/* Gradients of y = x w^T + b given dy (B, O): dw (O, I) = dy^T x, db (O) = sum_b dy,
 * dx (B, I) = dy w (skipped when dx is NULL). dw and db are overwritten, not accumulated. */
void cr_cpu_linear_backward(const float *dy, const float *x, const float *w, float *dx, float *dw,
                            float *db, int B, int I, int O);

/* y = tanh(x), n elements; y may alias x. Max abs error vs double tanh <= 5e-7 (tested). */
void cr_cpu_tanh_forward(const float *x, float *y, size_t n);
/* dx = dy * (1 - y^2) where y = tanh(x); dx may alias dy. */
void cr_cpu_tanh_backward(const float *y, const float *dy, float *dx, size_t n);
/* tanh of one float with the same formula as cr_cpu_tanh_forward (the GPU twin uses it too). */
float cr_tanhf(float x);

/* Samples a ~ softmax(logits[b]) by inverse CDF with the uniform u[b] in [0, 1) and writes the
 * action and its log-probability.  logits (B, A), u (B), action (B), logp (B).
 * An action whose float probability underflows to 0 is never drawn. logp is bitwise what
 * cr_cpu_categorical_logp_entropy computes for the same logits and action. */
void cr_cpu_categorical_sample(const float *logits, const float *u, int32_t *action, float *logp,
                               int B, int A);
/* Index of the largest logit per row (first on ties).  logits (B, A), action (B). */
void cr_cpu_categorical_argmax(const float *logits, int32_t *action, int B, int A);
/* log softmax(logits)[action] and entropy of softmax(logits).  logp, entropy (B). */
void cr_cpu_categorical_logp_entropy(const float *logits, const int32_t *action, float *logp,
                                     float *entropy, int B, int A);

/* Generalised advantage estimation with correct truncation.
 * rewards, values, next_values (T, N); terminated, done (T, N) as 0/1 bytes.
 * next_values[t] is V of the observation that followed step t in the same episode: V(final obs)
 * when the episode ended at t, else V(obs[t+1]) (V(next obs) at t = T-1).
 *   delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t
 *   A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
 * where done = terminated | truncated. Writes adv and returns = adv + values (T, N).
 * The masks select, so a terminated step's next_values is ignored even if it is not finite. */
void cr_cpu_gae(const float *rewards, const float *values, const float *next_values,
                const uint8_t *terminated, const uint8_t *done, float gamma, float lambda,
                float *adv, float *returns, int T, int N);

/* What one PPO minibatch loss reports (means over the minibatch). */
typedef struct cr_ppo_loss_stats {
    double loss;          /* pg_loss - ent_coef * entropy + vf_coef * v_loss */
    double pg_loss;
    double v_loss;        /* 0.5 * mean of (clipped) squared error, as CleanRL */
    double entropy;
    double old_approx_kl; /* mean(-logratio) */
    double approx_kl;     /* mean((ratio - 1) - logratio) */
    double clipfrac;      /* mean(|ratio - 1| > clip_coef) */
} cr_ppo_loss_stats;

typedef struct cr_ppo_loss_params {
    float clip_coef, ent_coef, vf_coef;
    int clip_vloss, norm_adv;
} cr_ppo_loss_params;

/* CleanRL's PPO loss on one minibatch and its gradient w.r.t. the logits and the values.
 * logits (B, A), action (B), old_logp (B), adv (B) (normalised inside when norm_adv: mean and
 * unbiased std of the minibatch, + 1e-8; with B = 1 the std is taken as 0, where PyTorch gives
 * NaN), value (B), old_value (B), returns (B). Subgradients at the kinks are PyTorch's: clamp
 * passes the gradient at its bounds, max splits it evenly on a tie.
 * Writes dlogits (B, A), dvalue (B) and the stats. */
void cr_cpu_ppo_loss(const float *logits, const int32_t *action, const float *old_logp,
                     const float *adv, const float *value, const float *old_value,
                     const float *returns, const cr_ppo_loss_params *p, float *dlogits,
                     float *dvalue, cr_ppo_loss_stats *stats, int B, int A);

/* Continuous actions (CleanRL's ppo_continuous_action.py): a Gaussian policy N(mean, exp(logstd))
 * with a state-independent log-std (K), K <= CR_GAUSSIAN_MAX_K. */
#define CR_GAUSSIAN_MAX_K 32

/* A standard normal from two uniforms in [0, 1) (Box-Muller, cosine branch):
 * sqrt(-2 log(1 - u1)) cos(2 pi u2); 1 - u1 is in (0, 1], so the log is finite. One definition
 * for the CPU and the CUDA twin (gaussian.cu): it has no a * b + c for nvcc to fuse, so the two
 * differ only where CUDA's logf and cosf differ from the C library's (an ulp or two). */
CR_HD static inline float cr_box_muller(float u1, float u2) {
    return sqrtf(-2.0f * logf(1.0f - u1)) * cosf(6.2831853071795865f * u2);
}

/* action (B, K) = mean + exp(logstd) z, z (B, K) = cr_box_muller(u[2j], u[2j + 1]) for element
 * j of the (B, K) array (u: 2 B K uniforms); logp (B) = sum over k of the normal log density of
 * the action (torch.distributions.Normal(mean, exp(logstd)).log_prob(action).sum(1)). */
void cr_cpu_gaussian_sample(const float *mean, const float *logstd, const float *u,
                            float *action, float *logp, int B, int K);
/* cr_cpu_ppo_loss for the Gaussian policy: the new log-prob of action (B, K) under
 * N(mean (B, K), exp(logstd (K))), its entropy (the same for every row), and the gradient:
 * dmean (B, K), dlogstd (K) (summed over the rows in row order, in double; the entropy bonus
 * included), dvalue (B). The stats as cr_cpu_ppo_loss reports them. */
void cr_cpu_ppo_loss_gaussian(const float *mean, const float *logstd, const float *action,
                              const float *old_logp, const float *adv, const float *value,
                              const float *old_value, const float *returns,
                              const cr_ppo_loss_params *p, float *dmean, float *dlogstd,
                              float *dvalue, cr_ppo_loss_stats *stats, int B, int K);

/* A continuous action space's box: K floats, the k-th within [lo[k], hi[k]]. */
typedef struct cr_action_box {
    int K;
    float lo[CR_GAUSSIAN_MAX_K], hi[CR_GAUSSIAN_MAX_K];
} cr_action_box;

/* y (B, K) = min(max(x, lo), hi) per column (a NaN stays NaN); y may be x. */
void cr_cpu_clip_box(const float *x, const cr_action_box *box, float *y, int B);

/* Gymnasium's running normalization (RunningMeanStd, NormalizeObservation, NormalizeReward):
 * the statistics in double, mean (D), var (D) and count (1), which start at 0, 1 and 1e-4.
 * update: the batch x (B, D)'s mean and population variance merged into them (Chan et al.'s
 * parallel rule, as RunningMeanStd.update_from_moments); B = 0 changes nothing. */
void cr_cpu_running_stats_update(double *mean, double *var, double *count, const float *x,
                                 int B, int D);
/* y (B, D) = clip((x - mean) / sqrt(var + 1e-8), -clip, clip) (y may be x). */
void cr_cpu_normalize_obs(const double *mean, const double *var, const float *x, float *y, int B,
                          int D, float clip);
/* NormalizeReward, then the clip of CleanRL's TransformReward: per env i,
 * ret[i] = ret[i] gamma (1 - terminated[i]) + reward[i] (the discounted return, double); the
 * statistics (D = 1) updated with ret (N); out[i] = clip(reward[i] / sqrt(var + 1e-8), +-clip).
 * N = 0 changes nothing. */
void cr_cpu_normalize_reward(double *mean, double *var, double *count, double *ret,
                             const float *reward, const uint8_t *terminated, float *out, int N,
                             float gamma, float clip);

/* Sum of squares of g (n), accumulated in double in index order. */
double cr_cpu_sum_squares(const float *g, size_t n);
/* g *= s. */
void cr_cpu_scale(float *g, size_t n, float s);
/* torch.nn.utils.clip_grad_norm_: norm = sqrt(sum g^2); g *= min(1, max_norm / (norm + 1e-6)).
 * Returns the norm before clipping. */
double cr_cpu_clip_grad_norm(float *g, size_t n, double max_norm);

/* One step of torch.optim.Adam (no weight decay, no amsgrad) at step t >= 1:
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * p, g, m, v (n). The hyperparameters arrive as floats, so 1 - b2 is 1 - 0.999f, not PyTorch's
 * double 1 - 0.999 (1.3e-5 apart, relative); the bias corrections are computed in double. */
void cr_cpu_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                      float b2, float eps, int64_t t);

/* torch.nn.init.orthogonal_ semantics for w (O, I) scaled by gain: a (semi-)orthogonal matrix
 * from the QR decomposition of a standard-normal matrix drawn from `rng`, sign-corrected by
 * diag(R). Rows are orthonormal when O <= I, columns when O > I. */
void cr_cpu_orthogonal_init(float *w, int O, int I, double gain, cr_philox_state *rng);

/* out[i] = (float)cr_philox_normal(s) for i = 0 .. n-1, in order, on the CPU threads: each draw
 * takes the stream's next four words, so draw i is computed from words 4 i on; s ends where n
 * draws end. The same bits as the draws one by one, whatever the thread count. */
void cr_cpu_philox_normals(cr_philox_state *s, float *out, size_t n);

/* Sets the OpenMP thread count used by the CPU ops called from this thread (0 = all cores).
 * Results do not depend on it. On a machine shared with other busy processes (or another
 * OpenMP program) more than one thread can be far slower: a preempted team member stalls every
 * parallel region for a scheduler time slice. */
void cr_cpu_set_threads(int threads);
/* The thread count the CPU ops called from this thread use now. */
int cr_cpu_threads(void);


/* next_values[t] = done[t] ? final_values[t] : (t < T-1 ? values[t+1] : last_values[n]).
 * values, final_values, next_values (T, N); done (T, N) 0/1 bytes; last_values (N). */
void cr_cpu_bootstrap_values(const float *values, const float *final_values,
                             const float *last_values, const uint8_t *done, float *next_values,
                             int T, int N);


/* u (n) = the stream's next n words as floats in [0, 1) (24 bits), advancing it by n. */
void cr_cpu_uniform(cr_rng_stream *s, float *u, int n);
/* perm (n) = a pseudo-random permutation of 0..n-1: the Feistel shuffle of core/shuffle.h keyed
 * by the stream's next CR_SHUFFLE_ROUNDS words (the stream advances by that many). */
void cr_cpu_permutation(cr_rng_stream *s, int32_t *perm, int n);


#define CR_RECENT_EPISODES 100

/* Finished-episode statistics, kept where the envs run (backend memory). */
typedef struct cr_episode_log {
    double recent[CR_RECENT_EPISODES]; /* returns of the last 100 episodes, a ring */
    int64_t episodes;      /* finished so far; recent[(episodes - 1) % 100] is the newest */
    int64_t iter_episodes; /* finished since the iter_ fields were last zeroed */
    double iter_return_sum, iter_length_sum;
} cr_episode_log;

/* Adds reward (N) to each env's running return and length; for envs with done set, in index
 * order, pushes the return into the log and restarts that env's sums. ep_return, ep_length (N). */
void cr_cpu_episodes_record(const float *reward, const uint8_t *done, double *ep_return,
                            int64_t *ep_length, cr_episode_log *log, int N);
/* Mean return of the last min(100, episodes) finished episodes of `log` (a host copy); NaN
 * when none has finished. */
double cr_episode_log_recent_mean(const cr_episode_log *log);


/* out[0..5) += n, sum y, sum y^2, sum d, sum d^2 over y = returns, d = returns - values (n each),
 * summed in double in index order. */
void cr_cpu_value_stats(const float *values, const float *returns, int n, double *out);

#ifdef __cplusplus
}
#endif

#endif
