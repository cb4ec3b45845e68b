/* The policy runtime's handle (cudarl_policy in cudarl.h), shared by its CPU side (policy.c:
 * loading, checks, the forward, latency) and its CUDA side (policy_cuda.cu: staging, graphs).
 *
 * The networks: the MLPs (PPO's actor-critic, DQN's Q-network: cr_mlp_forward on the backend's
 * ops) and the convolutional networks of nn/convnet.h (a checkpoint's "network" spec: on the CPU
 * cr_convnet_forward, on CUDA its twin cr_convnet_cuda_forward with a forward-only cache, or at
 * BF16 / FP16 the twin's half-precision forward, cr_convnet_cuda_half_forward).
 *
 * Memory of one policy:
 *   host arena (one allocation):  the handle, the latency ring, the weights as read from the file,
 *                                 and on the CPU also the backend buffers below;
 *   backend buffers (one device arena on CUDA): params, obs_u8, obs, cache, workspace, weights,
 *                                 out (MLP: obs_u8 and obs hold act()'s input and its float
 *                                 conversion; conv: on CUDA the graphs' input, uint8 or float as
 *                                 the spec says, which at BF16 / FP16 also holds the odd stages'
 *                                 outputs once the first stage has read it; none on the CPU,
 *                                 which reads act()'s obs in place, nor on an integrated GPU,
 *                                 whose graphs read the mapped staging; workspace: the CUDA conv
 *                                 net's; weights: at BF16 / FP16
 *                                 the conv net's converted weights, and then no float params
 *                                 on the device);
 *   CUDA only: one pinned block (obs staging, then out staging), the graphs, and for a conv net
 *   the handle of its CUDA twin (host; its cuDNN plans with the cuDNN engine).
 * The out block of a call of `rows` rows is laid out [actions (rows) int32][values (rows)]
 * [logits (rows, A)], so that one copy moves every output of a call. */
#ifndef CUDARL_RUNTIME_POLICY_H
#define CUDARL_RUNTIME_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "nn/actor_critic.h"
#include "nn/convnet.h"
#include "nn/convnet_cuda.h"
#include "nn/qnet.h"
#include "ops/backend.h"
#include "runtime/latency.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The checkpoint metadata `obs_input` of an MLP trained on uint8 observations: cast to float
 * value for value (DQN on MinAtar's 0/1 channels), or pixels scaled by 1/255 as the CNN trainers
 * and ONNX export's uint8 input scale them. Without it an MLP reads float32 features. A
 * convolutional network's spec says its input itself. */
#define CR_POLICY_U8_CAST "uint8 cast to float32, unscaled"
#define CR_POLICY_U8_SCALED "uint8 scaled by 1/255"

/* Graph batch sizes 1, 2, 4, ..., CUDARL_POLICY_MAX_BATCH (2^16). */
#define CR_POLICY_MAX_GRAPHS 17

/* The network a checkpoint holds and what its observations are. */
typedef struct cr_policy_net {
    int is_dqn;
    int is_conv;                      /* a convolutional network (cnn), else an MLP (ac or q) */
    int no_values;                    /* PPO trained with --separate-critic: the network here is
                                         the actor's, its critic head untrained, so act() serves
                                         no values */
    int obs_dim, num_actions, widest; /* widest: the wider hidden layer (MLP cache rows) */
    cudarl_obs_dtype obs_dtype;       /* what act() takes (policy.c: net_read says how) */
    int u8_scaled;                    /* uint8 observations: 1 = x / 255 (pixels), 0 = cast value
                                         for value (checkpoints with obs_input CR_POLICY_U8_CAST,
                                         conv specs with scale none) */
    cr_ac_layout ac;                  /* PPO MLP: critic.* then actor.* (or actor_mean.* and
                                         actor_logstd: a Gaussian policy) */
    cr_action_box box;                /* Gaussian: box.K = action_dim floats per action, the
                                         mean clipped into [lo, hi]; K 0 for discrete actions */
    int norm_obs;                     /* observations normalized by obs_rms (the checkpoint's
                                         --norm-obs statistics) before the network */
    cr_qnet_layout q;                 /* DQN MLP: network.* */
    cr_convnet cnn;                   /* conv: the planned spec (its tensors in cnn.t) */
    const cr_param_tensor *t;         /* MLP: the tensors of whichever layout is in use */
    int ntensors;
    size_t num_params;
    char name[32];                    /* "mlp", "qnet", or the conv spec's name */
    char env_id[CUDARL_ENV_ID_MAX];
} cr_policy_net;

/* The CUDA side's state (policy_cuda.cu); zero on the CPU. Graph handles are cudaGraphExec_t. */
typedef struct cr_policy_cuda {
    int graph_batches;                  /* log2(rows) + 1 */
    void *full[CR_POLICY_MAX_GRAPHS];   /* size 2^k: staging -> device, forward, out -> staging */
    void *compute[CR_POLICY_MAX_GRAPHS]; /* size 2^k: the forward only (device pointers) */
    unsigned char *pinned;              /* (host, pinned) the one cudaHostAlloc */
    size_t pinned_bytes;
    unsigned char *stage_obs;           /* (host, pinned) (rows, obs row bytes) */
    unsigned char *stage_out;           /* (host, pinned) the out block of `rows` rows */
    unsigned char *in;                  /* where the graphs read observations: the device obs
                                           buffer, or the mapped staging on an integrated GPU */
} cr_policy_cuda;

struct cudarl_policy {
    cr_policy_net net;
    cudarl_policy_options opt;
    cudarl_ctx *ctx;          /* the policy's own context */
    int rows;                 /* rows the buffers hold: max_batch (CPU), its power of two (CUDA) */
    size_t obs_row_bytes;     /* bytes of one observation as act() takes it */
    cr_arena host;            /* this handle lives in it */
    cr_arena dev;             /* CUDA: the device arena (base NULL on the CPU) */
    float *params_host;       /* (host) num_params, the checkpoint's weights */
    double *rms_host;         /* (host) norm_obs: obs_rms mean (obs_dim), var (obs_dim) */
    double *rms;              /* backend: the same (the host copy on the CPU) */
    /* backend memory (host on the CPU, device on CUDA) */
    float *params;            /* num_params (NULL on CUDA at BF16 / FP16: converted weights only) */
    uint8_t *obs_u8;          /* (rows, obs_dim) uint8 input; NULL unless the env is uint8 (and
                                 for a conv net where maps_obs); at BF16 / FP16 a conv net's
                                 odd stages' outputs too (conv_half.input) */
    float *obs;               /* (rows, obs_dim) the network's input when it is not act()'s */
    cr_mlp_cache cache;       /* MLP: rows x widest */
    cr_convnet_cache conv_cache; /* conv: the forward's cache for rows rows (CUDA: forward-only) */
    cr_convnet_half_cache conv_half; /* conv on CUDA at BF16 / FP16: the half forward's cache */
    unsigned char *out;       /* the out block */
    cr_convnet_engine conv_engine; /* conv on CUDA: the engine asked for (AUTO: convnet_cuda.h) */
    cr_convnet_cuda *conv_gpu;     /* conv on CUDA: the twin's handle (host), else NULL */
    /* latency */
    cr_latency lat;           /* act()'s durations: the ring in the host arena */
    int check_device_ptrs;    /* CPU policy in a CUDA build with a GPU: refuse device pointers */
    int maps_obs;             /* CUDA: the graphs read host observations in the mapped staging
                                 (an integrated GPU, cr_policy_cuda_maps_obs) */
    cr_policy_cuda cuda;
};

/* Bytes of one action act() writes: an int32, or box.K floats for a Gaussian policy. */
static inline size_t cr_policy_action_bytes(const cudarl_policy *p) {
    return p->net.box.K > 0 ? (size_t)p->net.box.K * sizeof(float) : sizeof(int32_t);
}

/* Points *actions, *values, *logits at the parts of an out block at `base` for `rows` rows. */
void cr_policy_out_layout(const cudarl_policy *p, void *base, int rows, int32_t **actions,
                          float **values, float **logits);
/* Bytes of the out block for `rows` rows. */
size_t cr_policy_out_bytes(const cudarl_policy *p, int rows);
/* The network on `rows` rows of x (rows, obs_dim) (backend memory; float for an MLP, the spec's
 * dtype for a conv net, which converts it itself) into the out block at p->out: logits or
 * Q-values, the argmax actions, and (PPO, when with_values; a conv net always) the values. Ops
 * only, on the policy's context: capturable into a CUDA graph. */
void cr_policy_forward(cudarl_policy *p, const void *x, int rows, int with_values);
/* Loads the planned convolutional network `net` with the weights `params` (host, num_params
 * floats in state_dict order, copied) as cudarl_policy_load loads a checkpoint's, for
 * benchmarks and tests that build a network in memory: algo "ppo" or "dqn" from its heads, env
 * `label` (messages, info), observations as its spec says; `engine` picks the conv engine on
 * CUDA (AUTO: what cudarl_policy_load uses). Same options, refusals and memory. */
cudarl_status cr_policy_load_convnet(const cr_convnet *net, const float *params, const char *label,
                                     cr_convnet_engine engine, const cudarl_policy_options *opt,
                                     cudarl_policy **out);
/* Every argument of cudarl_policy_act that does not depend on where its memory lives (CUDA
 * checks that), with act()'s messages. */
cudarl_status cr_policy_act_check(const cudarl_policy *p, const void *obs, cudarl_obs_dtype dtype,
                                  int n, const void *actions, const float *values,
                                  const float *logits);
/* Checks the finite-ness of n host float observations (rows of obs_dim); CUDARL_ERR_NUMERIC
 * naming the first bad row and element. */
cudarl_status cr_policy_check_finite(const cudarl_policy *p, const float *obs, int n);

#ifdef CUDARL_WITH_CUDA
/* Number of usable CUDA devices (0 without a GPU). */
int cr_policy_cuda_devices(void);
/* The device of `ptr` if it is device or managed memory, else -1 (host memory of any kind). */
int cr_policy_pointer_device(const void *ptr);
/* Whether the graphs of a policy on ctx's device read host observations in place, from mapped
 * pinned staging: an integrated GPU (cudaDevAttrIntegrated, Jetson) that maps host memory. */
int cr_policy_cuda_maps_obs(const cudarl_ctx *ctx);
/* After the device arena holds the weights: the pinned staging, the graphs, and one launch of
 * each. On failure frees what it made. */
cudarl_status cr_policy_cuda_init(cudarl_policy *p);
void cr_policy_cuda_free(cudarl_policy *p);
/* act() on CUDA, arguments already checked but for where the pointers live. */
cudarl_status cr_policy_cuda_act(cudarl_policy *p, const void *obs, int n, void *actions,
                                 float *values, float *logits);
/* GPU time of the forward act() runs for n rows (1 <= n <= max_batch), for benchmarks: `iters`
 * launches of its forward-only graph on what the device input holds (the latest act()'s
 * observations; at half precision a conv net's odd stages write there, so the later launches
 * read what the earlier left: the same kernels, the same work), ms[i] between two CUDA events
 * around launch i on the policy's stream, which it waits for each time. Creates and destroys
 * the two events. */
cudarl_status cr_policy_cuda_time_forward(cudarl_policy *p, int n, int iters, float *ms);
/* Device memory the policy's context holds beside its arena (cuBLAS workspace, scratch). */
size_t cr_policy_cuda_context_bytes(const cudarl_policy *p);
#endif

#ifdef __cplusplus
}
#endif
#endif
