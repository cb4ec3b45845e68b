/* Convolutional policies: a small sequential network description (a spec), its parameter
 * layout in PyTorch state_dict order, CleanRL's initialisations, and the forward and backward
 * on the CPU ops (ops/cpu/ops_conv.h, ops_cpu.h).
 *
 * A spec is an input (C, H, W) of uint8 or float with its scaling, a trunk of layers (conv,
 * relu, tanh, flatten, linear) and heads on the trunk's flat output:
 *   ppo  CleanRL's ppo_atari.py Agent: the trunk is `network` (nn.Sequential), then `actor`
 *        Linear(F, A) and `critic` Linear(F, 1) on the same features. State dict:
 *        network.<i>.weight/.bias for each conv/linear at position i of the trunk, actor.weight,
 *        actor.bias, critic.weight, critic.bias.
 *   dqn  CleanRL's dqn_atari.py QNetwork: one nn.Sequential `network` whose last entry is the
 *        Q head Linear(F, A), at position num_layers: network.<i>.weight/.bias.
 * Named specs (cr_convnet_spec_named):
 *   nature-cnn   (4, 84, 84) uint8, x / 255: conv 32@8x8/4, relu, conv 64@4x4/2, relu,
 *                conv 64@3x3/1, relu, flatten, linear 512, relu
 *   minatar-cnn  (C, 10, 10) uint8 0/1 channels, not scaled (cast to float, as MinAtar's
 *                observations are fed to PyTorch): conv 16@3x3/1, relu, flatten, linear 128, relu
 *
 * Memory: a planned net (cr_convnet) is plain data, a few KB, on the stack or host. Parameters
 * and gradients are one float buffer each of net->num_params, laid out in state_dict order.
 * The activations a backward needs, the gradient scratch and the conv scratch live in one cache
 * the caller sizes with cr_convnet_cache_bytes before the loop; forward and backward allocate
 * nothing.
 *
 * The spec's text form, stored in a checkpoint's __metadata__ under "network" (one line, keys in
 * this order):
 *   {"format":"cudarl-convnet","version":1,"name":"nature-cnn",
 *    "input":{"shape":[4,84,84],"dtype":"u8","scale":"1/255"},
 *    "layers":[{"type":"conv","out":32,"kernel":[8,8],"stride":4,"pad":0},{"type":"relu"},
 *              ...,{"type":"flatten"},{"type":"linear","out":512},{"type":"relu"}],
 *    "heads":{"type":"ppo","actions":6}}
 * dtype "u8" or "f32"; scale "1/255" (u8 only: torch's obs.float() / 255.0) or "none"; layer
 * types conv (out, kernel [R, S], stride, pad), linear (out), relu, tanh, flatten; heads type
 * "ppo" or "dqn". name is "nature-cnn" or "minatar-cnn" (then the rest must be that spec for
 * the given input channels, size and heads) or "custom". The parser refuses anything else. */
#ifndef CUDARL_CONVNET_H
#define CUDARL_CONVNET_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "ops/cpu/ops_conv.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CR_CONVNET_MAX_LAYERS 16             /* trunk layers of a spec */
/* parameter tensors: 2 per conv/linear (at most 15 in a trunk that has its flatten, plus a DQN
 * head) and 4 of the PPO heads */
#define CR_CONVNET_MAX_TENSORS (2 * CR_CONVNET_MAX_LAYERS + 4)
#define CR_CONVNET_TEXT_MAX 4096             /* bytes of a spec's text form, with the NUL */
/* Largest channel count, spatial size, kernel, stride, pad, width or action count a spec may
 * name: far above any policy's, small enough that products of two stay in 64 bits. */
#define CR_CONVNET_DIM_MAX 65536
#define CR_CONVNET_FORMAT "cudarl-convnet"
#define CR_CONVNET_VERSION 1
#define CR_CONVNET_META_KEY "network"        /* the checkpoint __metadata__ key of the text */

typedef enum cr_convnet_op {
    CR_CONVNET_CONV = 0,
    CR_CONVNET_RELU,
    CR_CONVNET_TANH,
    CR_CONVNET_FLATTEN,
    CR_CONVNET_LINEAR,
    CR_CONVNET_IDENTITY, /* not a layer of a spec: a stage without activation */
} cr_convnet_op;

typedef enum cr_convnet_dtype { CR_CONVNET_U8 = 0, CR_CONVNET_F32 } cr_convnet_dtype;
typedef enum cr_convnet_scale { CR_CONVNET_SCALE_NONE = 0, CR_CONVNET_SCALE_255 } cr_convnet_scale;
/* Which heads, and with them which init (cr_convnet_init_params). */
typedef enum cr_convnet_heads { CR_CONVNET_PPO = 0, CR_CONVNET_DQN } cr_convnet_heads;

/* One trunk layer. conv: out = K channels, kernel R x S, stride, pad (both dimensions);
 * linear: out features; relu, tanh, flatten: no fields. */
typedef struct cr_convnet_layer {
    cr_convnet_op op;
    int out;
    int kernel[2];
    int stride, pad;
} cr_convnet_layer;

typedef struct cr_convnet_spec {
    char name[32];              /* "nature-cnn", "minatar-cnn" or "custom" */
    int in_c, in_h, in_w;       /* observation (C, H, W), channels first */
    cr_convnet_dtype dtype;
    cr_convnet_scale scale;
    int num_layers;
    cr_convnet_layer layers[CR_CONVNET_MAX_LAYERS];
    cr_convnet_heads heads;
    int num_actions;
} cr_convnet_spec;

/* One parameter tensor of the layout. */
typedef struct cr_convnet_tensor {
    char name[32];    /* state_dict name: "network.0.weight", "actor.bias" */
    int ndim;         /* 4: conv weight (K, C, R, S); 2: linear weight (O, I); 1: bias */
    int shape[4];
    size_t offset;    /* in floats, into the parameter (or gradient) buffer */
    size_t count;
    int fan_in;       /* C R S or I of the layer: the default init's bound is 1/sqrt(fan_in) */
    double gain;      /* the orthogonal gain of layer_init (weights; 0 for biases) */
} cr_convnet_tensor;

/* One conv or linear of the planned net with the activation that follows it. */
typedef struct cr_convnet_stage {
    cr_convnet_op op;         /* CR_CONVNET_CONV or CR_CONVNET_LINEAR */
    cr_convnet_op act;        /* CR_CONVNET_RELU, CR_CONVNET_TANH or CR_CONVNET_IDENTITY */
    cr_conv2d_shape conv;     /* conv only; N = 1 here, the batch is set per call */
    int in, out;              /* floats per row in and out (linear: I, O; conv: C H W, K P Q) */
    int weight, bias;         /* indices into cr_convnet.t */
} cr_convnet_stage;

/* A spec checked and laid out (cr_convnet_plan). Plain data, about 5 KB. */
typedef struct cr_convnet {
    cr_convnet_spec spec;
    int ntensors;
    cr_convnet_tensor t[CR_CONVNET_MAX_TENSORS];
    size_t num_params;
    int nstages;              /* conv/linear layers: the trunk's, then (dqn) the Q head */
    int ntrunk;               /* the trunk's: stages [0, ntrunk) */
    cr_convnet_stage stage[CR_CONVNET_MAX_LAYERS + 1];
    int features;             /* F: floats per row of the trunk's output, what the heads read */
    int in_floats;            /* C H W */
    int widest;               /* max of F and the floats per row any trunk stage writes */
    size_t conv_scratch;      /* bytes of the largest conv's scratch (0 without convs) */
    int actor_w, actor_b, critic_w, critic_b; /* ppo heads: indices into t; -1 for dqn */
} cr_convnet;

/* What a backward needs from its forward, for up to max_rows rows (host memory, carved by
 * cr_convnet_cache_carve from cr_convnet_cache_bytes bytes). */
typedef struct cr_convnet_cache {
    int max_rows;
    float *x;                                /* (B, C, H, W) the scaled input */
    float *act[CR_CONVNET_MAX_LAYERS + 1];   /* (B, stage out) after its activation */
    float *d[2];                             /* (B, widest) gradient ping-pong */
    void *scratch;                           /* conv scratch */
} cr_convnet_cache;

/* The type's name in the text form: "conv", "relu", "tanh", "flatten", "linear" ("identity",
 * "?" for values that are no layer type). (static storage) */
const char *cr_convnet_op_name(cr_convnet_op op);

/* ---- specs ------------------------------------------------------------------------------ */

/* The named spec `name` ("nature-cnn", "minatar-cnn") for observations (c, h, w) and
 * num_actions actions with `heads`. An unknown name is CUDARL_ERR_INVALID_ARG listing the
 * known ones. The shape is checked by cr_convnet_plan, not here. */
cudarl_status cr_convnet_spec_named(cr_convnet_spec *spec, const char *name, int c, int h, int w,
                                    cr_convnet_heads heads, int num_actions);
/* The named spec that suits uint8 images of (c, h, w): MinAtar's 10x10 channels "minatar-cnn",
 * anything else (84x84 frames) "nature-cnn". (static storage) */
const char *cr_convnet_name_for(int c, int h, int w);
/* CUDARL_ERR_INVALID_ARG unless spec->name is "custom" or a named spec whose definition (for
 * the spec's input channels, size, heads and actions) the spec equals; cr_convnet_plan calls it. */
cudarl_status cr_convnet_check_name(const cr_convnet_spec *spec);
/* Writes the spec's text form (the format above) to buf (cap bytes, CR_CONVNET_TEXT_MAX is
 * always enough for a spec cr_convnet_plan accepts); CUDARL_ERR_INVALID_ARG if it does not fit. */
cudarl_status cr_convnet_spec_to_text(const cr_convnet_spec *spec, char *buf, size_t cap);
/* Parses a spec's text form into *spec and checks it as cr_convnet_plan does (so a spec that
 * parses also plans). Malformed JSON, a missing, unknown or ill-typed field, an unknown layer,
 * dtype, scale, heads or name, a newer version, or shapes that do not fit are
 * CUDARL_ERR_FORMAT with a message that starts with `source` (e.g. "checkpoint 'm.safetensors'
 * metadata \"network\"") and names the field. */
cudarl_status cr_convnet_spec_parse(cr_convnet_spec *spec, const char *text, const char *source);

/* ---- plan, init, forward, backward -------------------------------------------------------- */

/* Checks `spec` and lays it out: tensors in state_dict order, stage shapes, scratch sizes. A
 * spec that cannot be built (sizes out of range, a kernel larger than its input, a linear
 * before flatten, a conv after it, an activation not right after a conv or linear, no flatten
 * before the heads, ...) is CUDARL_ERR_INVALID_ARG naming the layer. */
cudarl_status cr_convnet_plan(cr_convnet *net, const cr_convnet_spec *spec);
/* Index of tensor `name` in net->t, or -1. */
int cr_convnet_find(const cr_convnet *net, const char *name);
/* Model FLOPs of one row (2 per multiply-add of the convs' and linears' products; biases,
 * activations and the input's scaling left out): *fwd of the forward, trunk and heads (ppo: the
 * actor's A outputs and the critic's 1; dqn: the Q head); *bwd of the backward, every layer's
 * weight gradient (as many as its forward) and every layer's input gradient but the first's
 * (the observation needs none). E.g. nature-cnn with A actions, in multiply-adds:
 * 20*20*32 * 8*8*4 + 9*9*64 * 4*4*32 + 7*7*64 * 3*3*64 + 3136*512 + 512*(A + 1). */
void cr_convnet_flops(const cr_convnet *net, double *fwd, double *bwd);

/* Bytes of cache for up to max_rows rows (>= 1): the float input, every stage's output, two
 * gradient buffers and the conv scratch, each on 64-byte lines. (host) */
size_t cr_convnet_cache_bytes(const cr_convnet *net, int max_rows);
/* Points *c into mem (cr_convnet_cache_bytes(net, max_rows) bytes, 64-byte aligned). */
void cr_convnet_cache_carve(const cr_convnet *net, void *mem, int max_rows, cr_convnet_cache *c);

/* Writes params (net->num_params floats, host) with the heads' init, drawn from rng in tensor
 * order:
 *   ppo  CleanRL's layer_init: orthogonal weights (torch.nn.init.orthogonal_ on the weight
 *        flattened to (out, fan_in), cr_cpu_orthogonal_init) with gain sqrt(2) in the trunk,
 *        0.01 for the actor and 1 for the critic; biases 0 (no draws);
 *   dqn  PyTorch's default nn.Conv2d / nn.Linear init (CleanRL's QNetwork calls no init):
 *        kaiming_uniform_(a = sqrt(5)) weights, which is uniform in +-1/sqrt(fan_in), and
 *        biases uniform in +-1/sqrt(fan_in); each value (2 u - 1) / sqrt(fan_in) with u the
 *        53-bit cr_philox_uniform_f64, weight then bias per layer.
 * Same distributions as PyTorch, not its numbers (torch draws from its own generator). */
void cr_convnet_init_params(const cr_convnet *net, float *params, cr_philox_state *rng);

/* out (B, A): actor logits (ppo) or Q-values (dqn); value (B): the critic (ppo; NULL for dqn)
 * of obs (B, C, H, W), uint8 or float as the spec's dtype, scaled as the spec says. Fills the
 * cache c (1 <= B <= c->max_rows). params (num_params), all host memory. */
void cr_convnet_forward(const cr_convnet *net, const float *params, const void *obs, float *out,
                        float *value, const cr_convnet_cache *c, int B);
/* cr_convnet_forward of rows `obs_stride` elements apart (>= C H W): row b of the input starts
 * at obs + b obs_stride elements. A replay window (B, K + 1, H, W) is two such inputs, obs and
 * next_obs, one frame apart with stride (K + 1) H W (replay.h). */
void cr_convnet_forward_rows(const cr_convnet *net, const float *params, const void *obs,
                             size_t obs_stride, float *out, float *value,
                             const cr_convnet_cache *c, int B);
/* Gradients of a loss w.r.t. every parameter, overwritten into grads (num_params), given
 * dout (B, A) = d loss / d out and dvalue (B) = d loss / d value (ppo; NULL for dqn), from the
 * cache of the forward on the same params and rows. dout and dvalue are not written. */
void cr_convnet_backward(const cr_convnet *net, const float *params, float *grads,
                         const float *dout, const float *dvalue, const cr_convnet_cache *c, int B);

#ifdef __cplusplus
}
#endif

#endif
