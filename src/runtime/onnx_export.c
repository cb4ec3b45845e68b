/* ONNX export: a checkpoint's policy, MLP or convolutional, as an ONNX model (the graphs are in
 * onnx_export.h), built from protobuf-c messages of the vendored ONNX schema, packed once and
 * written atomically. */
#include "runtime/onnx_export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/abi.h"
#include "io/output_file.h"
#include "nn/actor_critic.h"
#include "nn/convnet.h"
#include "nn/qnet.h"
#include "onnx.pb-c.h"
#include "runtime/mlp_check.h"
#include "runtime/policy.h"

/* Opset 17 (ONNX 1.12, IR version 8): every op used here (Gemm-13, Conv-11, Flatten-13,
 * Tanh-13, Relu-14, Cast-13, Div-14, ArgMax-13) has the same meaning in opsets 14 to 18, and 17
 * is the newest that the TensorRT releases of JetPack 5 (8.5) parse, and onnxruntime since 1.13;
 * a fixed opset keeps one checkpoint's model byte-identical whichever onnx release the schema
 * came from. */
_Static_assert(CUDARL_ONNX_OPSET == 17 &&
                   CUDARL_ONNX_IR_VERSION == ONNX__VERSION__IR_VERSION_2021_7_30,
               "opset 17 goes with IR version 8 (onnx/helper.py VERSION_TABLE)");

/* ---- the policy in a checkpoint --------------------------------------------------------- */

/* Which network a checkpoint holds, its shape, what its observations are, and its run metadata
 * for the model's doc. */
typedef struct onnx_policy {
    int is_dqn, is_conv;
    int no_value;     /* PPO conv trained with --separate-critic: no `value` output (its critic
                         is a network the checkpoint's policy does not include) */
    int obs_dim, h1, h2, num_actions; /* obs_dim: C H W of a conv net; h1, h2: MLPs only */
    int takes_u8;     /* the policy was trained on uint8 observations (pixels, MinAtar) */
    int u8_cast;      /* ... which reach its network cast to float unscaled (MinAtar), not / 255 */
    cr_ac_layout ac;  /* PPO MLP: critic.* then actor.*, 6 tensors each */
    cr_qnet_layout q; /* DQN MLP: network.*, 6 tensors */
    cr_convnet cnn;   /* conv: the planned spec, checked against the file as cudarl eval does */
    cr_action_box box; /* a Gaussian policy's (box.K floats per action), K 0 otherwise */
    float *norm;      /* --norm-obs: the statistics as the graph's initializers, mean (obs_dim)
                         then sqrt(var + 1e-8) (obs_dim) (malloc'd); NULL without */
} onnx_policy;

/* A Gaussian policy's box from the checkpoint, as the policy runtime reads it. */
static cudarl_status box_and_norm_read(const char *path, onnx_policy *p) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = CUDARL_DEVICE_CPU;
    cudarl_policy *pol;
    CR_TRY(cudarl_policy_load(path, &o, &pol));
    p->box = pol->net.box;
    cudarl_status s = CUDARL_OK;
    if (pol->net.norm_obs) {
        const size_t D = (size_t)p->obs_dim;
        p->norm = malloc(2 * D * sizeof(float));
        if (!p->norm) s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
        for (size_t d = 0; p->norm && d < D; d++) {
            p->norm[d] = (float)pol->rms_host[d];
            p->norm[D + d] = (float)sqrt(pol->rms_host[D + d] + 1e-8);
        }
    }
    cudarl_policy_free(pol);
    return s;
}

/* The MLP: tensors checked against the metadata (cr_checkpoint_check_format), and its
 * observations as the policy runtime reads them: uint8 where obs_input says they were cast
 * (DQN on MinAtar) or scaled by 1/255, else float32. */
static cudarl_status mlp_read(const cr_st_file *f, const char *path, onnx_policy *p) {
    CR_TRY(cr_checkpoint_check_format(f, path, p->is_dqn ? "dqn" : "ppo"));
    CR_TRY(cr_checkpoint_meta_int(f, path, "obs_dim", &p->obs_dim));
    CR_TRY(cr_checkpoint_meta_int(f, path, "num_actions", &p->num_actions));
    CR_TRY(cr_checkpoint_meta_int(f, path, p->is_dqn ? "hidden1" : "hidden", &p->h1));
    p->h2 = p->h1;
    if (p->is_dqn) CR_TRY(cr_checkpoint_meta_int(f, path, "hidden2", &p->h2));
    const char *in = cr_st_meta(f, "obs_input");
    if (in && strcmp(in, CR_POLICY_U8_CAST) && strcmp(in, CR_POLICY_U8_SCALED))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' records obs_input '%.64s', which "
                       "this cudarl does not know (it knows '%s' and '%s'); export it with the "
                       "cudarl version that wrote it", path, in, CR_POLICY_U8_CAST,
                       CR_POLICY_U8_SCALED);
    p->u8_cast = in && !strcmp(in, CR_POLICY_U8_CAST);
    p->takes_u8 = in != NULL;
    if (p->is_dqn) {
        cr_qnet_layout_init(&p->q, p->obs_dim, p->h1, p->h2, p->num_actions);
        return CUDARL_OK;
    }
    CR_TRY(box_and_norm_read(path, p));
    if (p->box.K > 0) cr_ac_layout_init_gaussian(&p->ac, p->obs_dim, p->h1, p->box.K);
    else cr_ac_layout_init(&p->ac, p->obs_dim, p->h1, p->num_actions);
    return CUDARL_OK;
}

/* The convolutional network of the spec under metadata "network", loaded by the policy runtime
 * on the CPU: the very checks of cudarl eval (spec, heads against the algo, metadata, env,
 * every tensor's dtype and shape). The runtime is freed again; the graph reads the file. */
static cudarl_status conv_read(const char *path, onnx_policy *p) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = CUDARL_DEVICE_CPU;
    cudarl_policy *pol;
    CR_TRY(cudarl_policy_load(path, &o, &pol));
    const cr_policy_net *n = &pol->net;
    p->cnn = n->cnn;
    p->obs_dim = n->obs_dim, p->num_actions = n->num_actions;
    p->takes_u8 = n->obs_dtype == CUDARL_OBS_U8;
    p->u8_cast = p->takes_u8 && !n->u8_scaled;
    cudarl_policy_free(pol);
    return CUDARL_OK;
}

/* Checks the checkpoint as cudarl eval does (format, version, tensors against the shapes its
 * metadata or network spec describes) and reads which network it holds. */
static cudarl_status policy_read(const cr_st_file *f, const char *path, onnx_policy *p) {
    memset(p, 0, sizeof *p);
    const char *fmt = cr_st_meta(f, "format"), *algo = cr_st_meta(f, "algo");
    p->is_dqn = algo && !strcmp(algo, "dqn");
    int is_ppo = algo && !strcmp(algo, "ppo");
    if (fmt && !strcmp(fmt, CR_CHECKPOINT_FORMAT) && !p->is_dqn && !is_ppo)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds a network of algo '%.32s', "
                       "which cudarl export does not know; export a checkpoint of cudarl train "
                       "--algo ppo (actor-critic) or --algo dqn (Q-network)", path,
                       algo ? algo : "(missing)");
    CR_TRY(cr_checkpoint_check_header(f, path, p->is_dqn ? "dqn" : "ppo"));
    p->is_conv = cr_st_meta(f, CR_CONVNET_META_KEY) != NULL;
    p->no_value = p->is_conv && !p->is_dqn && cr_checkpoint_separate_critic(f);
    return p->is_conv ? conv_read(path, p) : mlp_read(f, path, p);
}

/* ---- the graph ---------------------------------------------------------------------------- */

/* Room for the largest graph. Nodes: Cast, Div, one per trunk layer, two heads, ArgMax.
 * Initializers: the divisor and every tensor of a conv net. Attributes: at most 3 per Conv or
 * Gemm, 2 for ArgMax, 1 for Cast and Flatten. Names: 3 inputs and 1 output per node. Values:
 * the input and 3 outputs, of up to 4 dims. Overflow is a bug here. */
enum { G_NODES = CR_CONVNET_MAX_LAYERS + 13, G_ATTRS = 3 * CR_CONVNET_MAX_LAYERS + 16,
       G_NAMES = 4 * G_NODES, G_INITS = CR_CONVNET_MAX_TENSORS + 8, G_VALUES = 5, G_DIMS = 4,
       G_META = 4, G_STRINGS = 8192 };

/* Every message of one model, in one struct (no allocation but the packed bytes). Strings point
 * into `strings`, the layouts' tensor names, literals or the checkpoint's memory; protobuf-c
 * only reads them. */
typedef struct onnx_graph {
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__GraphProto graph;
    Onnx__NodeProto node[G_NODES], *nodes[G_NODES];
    Onnx__AttributeProto attr[G_ATTRS], *attrs[G_ATTRS];
    int64_t attr_ints[G_ATTRS][4]; /* the values of an ints attribute */
    int nattrs;
    char *names[G_NAMES];
    int nnames;
    Onnx__TensorProto init[G_INITS], *inits[G_INITS];
    int64_t init_dims[G_INITS][4];
    float init_float[G_INITS]; /* the value of a scalar initializer */
    Onnx__ValueInfoProto value[G_VALUES], *inputs[G_VALUES], *outputs[G_VALUES];
    Onnx__TypeProto type[G_VALUES];
    Onnx__TypeProto__Tensor tensor_type[G_VALUES];
    Onnx__TensorShapeProto shape[G_VALUES];
    Onnx__TensorShapeProto__Dimension dim[G_VALUES][G_DIMS], *dims[G_VALUES][G_DIMS];
    int nvalues;
    Onnx__StringStringEntryProto meta[G_META], *metas[G_META];
    char strings[G_STRINGS];
    size_t used;
} onnx_graph;

/* A formatted copy in the graph's string pool. Strings from the checkpoint must be passed with
 * a precision (%.64s) so that no file can overflow the pool. */
static char *g_str(onnx_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *g_str(onnx_graph *g, const char *fmt, ...) {
    char *s = g->strings + g->used;
    size_t room = G_STRINGS - g->used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, room, fmt, ap);
    va_end(ap);
    CUDARL_ASSERT(n >= 0 && (size_t)n < room);
    g->used += (size_t)n + 1;
    return s;
}

/* Appends node `op` named `name` reading in[0, nin) and writing `out`. */
static Onnx__NodeProto *g_node(onnx_graph *g, const char *op, const char *name, const char *out,
                               int nin, const char *const *in) {
    CUDARL_ASSERT(g->graph.n_node < G_NODES && g->nnames + nin + 1 <= G_NAMES);
    Onnx__NodeProto *n = &g->node[g->graph.n_node];
    onnx__node_proto__init(n);
    n->name = (char *)name;
    n->op_type = (char *)op;
    n->input = &g->names[g->nnames];
    for (int i = 0; i < nin; i++) g->names[g->nnames++] = (char *)in[i];
    n->n_input = (size_t)nin;
    n->output = &g->names[g->nnames];
    g->names[g->nnames++] = (char *)out;
    n->n_output = 1;
    g->nodes[g->graph.n_node++] = n;
    return n;
}

/* A new attribute `name` of `n`, the node added last (its attributes are contiguous). */
static Onnx__AttributeProto *g_attr(onnx_graph *g, Onnx__NodeProto *n, const char *name) {
    CUDARL_ASSERT(g->nattrs < G_ATTRS && n == g->nodes[g->graph.n_node - 1]);
    Onnx__AttributeProto *a = &g->attr[g->nattrs];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    g->attrs[g->nattrs] = a;
    if (n->n_attribute == 0) n->attribute = &g->attrs[g->nattrs];
    n->n_attribute++;
    g->nattrs++;
    return a;
}

/* Adds integer attribute `name` = v to `n`, the node added last. */
static void g_attr_int(onnx_graph *g, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = g_attr(g, n, name);
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1, a->i = v;
}

/* Adds ints attribute `name` = v[0, count) (count <= 4) to `n`, the node added last. */
static void g_attr_ints(onnx_graph *g, Onnx__NodeProto *n, const char *name, int count,
                        const int64_t *v) {
    CUDARL_ASSERT(count >= 1 && count <= 4);
    int64_t *store = g->attr_ints[g->nattrs];
    Onnx__AttributeProto *a = g_attr(g, n, name);
    memcpy(store, v, (size_t)count * sizeof *v);
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)count, a->ints = store;
}

/* Adds a float32 initializer `name` of `ndim` (1 to 4) dims whose little-endian bytes are
 * data[0, nbytes) (the checkpoint's memory: safetensors and ONNX raw_data are both
 * little-endian, so the bytes go across as they are). */
static void g_init_tensor(onnx_graph *g, const char *name, int ndim, const int *shape,
                          const void *data, size_t nbytes) {
    CUDARL_ASSERT(g->graph.n_initializer < G_INITS && ndim >= 1 && ndim <= 4);
    size_t i = g->graph.n_initializer;
    Onnx__TensorProto *t = &g->init[i];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1, t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    size_t count = 1;
    for (int d = 0; d < ndim; d++) g->init_dims[i][d] = shape[d], count *= (size_t)shape[d];
    CUDARL_ASSERT(nbytes == count * sizeof(float));
    t->n_dims = (size_t)ndim, t->dims = g->init_dims[i];
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = (uint8_t *)data;
    g->inits[g->graph.n_initializer++] = t;
}

/* Adds a float32 scalar initializer (float_data: protobuf writes it little-endian on any host). */
static void g_init_scalar(onnx_graph *g, const char *name, float v) {
    CUDARL_ASSERT(g->graph.n_initializer < G_INITS);
    size_t i = g->graph.n_initializer;
    Onnx__TensorProto *t = &g->init[i];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1, t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    g->init_float[i] = v;
    t->n_float_data = 1, t->float_data = &g->init_float[i];
    g->inits[g->graph.n_initializer++] = t;
}

/* Adds the checkpoint's tensor `name` of shape[0, ndim) as an initializer. The shapes were
 * checked when the policy was read; this holds the file's view to them again, as the file is
 * the user's and a conv net's checks read it through another handle. */
static cudarl_status g_weight(onnx_graph *g, const cr_st_file *f, const char *name, int ndim,
                              const int *shape) {
    cr_st_tensor t;
    CR_TRY(cr_st_find(f, name, &t));
    size_t count = 1;
    for (int d = 0; d < ndim; d++) count *= (size_t)shape[d];
    if (t.dtype != CR_ST_F32 || t.count != count)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint tensor '%s' changed while it was being "
                       "exported (now %s of %zu elements; the network needs F32 of %zu); export "
                       "it again once nothing writes the checkpoint", name,
                       cr_st_dtype_name(t.dtype), t.count, count);
    g_init_tensor(g, name, ndim, shape, t.data, t.nbytes);
    return CUDARL_OK;
}

/* A graph input or output `name` of element type `elem` and shape [batch, rest[0, nrest))
 * (nrest 0 to 3); batch 0 is the symbolic dim "batch". */
static Onnx__ValueInfoProto *g_value(onnx_graph *g, const char *name, int32_t elem,
                                     int64_t batch, int nrest, const int64_t *rest) {
    CUDARL_ASSERT(g->nvalues < G_VALUES && nrest >= 0 && nrest < G_DIMS);
    int k = g->nvalues++;
    Onnx__TensorShapeProto__Dimension *d = g->dim[k];
    for (int j = 0; j <= nrest; j++) {
        onnx__tensor_shape_proto__dimension__init(&d[j]);
        g->dims[k][j] = &d[j];
    }
    if (batch > 0) {
        d[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d[0].dim_value = batch;
    } else {
        d[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d[0].dim_param = (char *)CR_ONNX_BATCH_PARAM;
    }
    for (int j = 0; j < nrest; j++) {
        d[j + 1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d[j + 1].dim_value = rest[j];
    }
    onnx__tensor_shape_proto__init(&g->shape[k]);
    g->shape[k].n_dim = (size_t)nrest + 1;
    g->shape[k].dim = g->dims[k];
    onnx__type_proto__tensor__init(&g->tensor_type[k]);
    g->tensor_type[k].has_elem_type = 1, g->tensor_type[k].elem_type = elem;
    g->tensor_type[k].shape = &g->shape[k];
    onnx__type_proto__init(&g->type[k]);
    g->type[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    g->type[k].tensor_type = &g->tensor_type[k];
    onnx__value_info_proto__init(&g->value[k]);
    g->value[k].name = (char *)name;
    g->value[k].type = &g->type[k];
    return &g->value[k];
}

/* Output `name`: float32 [batch, width], or int64 [batch] for width 0. */
static void g_output(onnx_graph *g, const char *name, int64_t batch, int64_t width) {
    int32_t elem = width ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                         : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    g->outputs[g->graph.n_output++] = g_value(g, name, elem, batch, width ? 1 : 0, &width);
}

/* Appends Gemm `name` (transB=1): out = x W^T + b, with W the checkpoint's `w` of shape
 * wshape (out, in), PyTorch's layout, and b its `bias` (out). */
static cudarl_status g_gemm(onnx_graph *g, const cr_st_file *f, const char *name, const char *x,
                            const char *w, const int *wshape, const char *bias, const char *out) {
    CR_TRY(g_weight(g, f, w, 2, wshape));
    CR_TRY(g_weight(g, f, bias, 1, wshape));
    Onnx__NodeProto *n = g_node(g, "Gemm", name, out, 3, (const char *const[]){x, w, bias});
    g_attr_int(g, n, "transB", 1);
    return CUDARL_OK;
}

/* Appends an MLP of three Linear layers (t: weight and bias of PyTorch's layers 0, 2 and 4 under
 * `prefix`) with activation `act` ("Tanh" or "Relu") after the first two, reading `x`; the last
 * layer writes `out`. Nodes are named as PyTorch's modules: actor.0 (Gemm), actor.1 (Tanh), ... */
static cudarl_status g_mlp(onnx_graph *g, const cr_st_file *f, const cr_param_tensor *t,
                           const char *prefix, const char *act, const char *x, const char *out) {
    for (int k = 0; k < 3; k++) {
        const char *y = k == 2 ? out : g_str(g, "%s.%d.output", prefix, 2 * k);
        CR_TRY(g_gemm(g, f, g_str(g, "%s.%d", prefix, 2 * k), x, t[2 * k].name, t[2 * k].shape,
                      t[2 * k + 1].name, y));
        if (k == 2) break;
        x = g_str(g, "%s.%d.output", prefix, 2 * k + 1);
        g_node(g, act, g_str(g, "%s.%d", prefix, 2 * k + 1), x, 1, (const char *const[]){y});
    }
    return CUDARL_OK;
}

/* The conv net's tensor `<prefix>.<what>` (the plan made it: a missing one is a bug). */
static const cr_convnet_tensor *conv_tensor(const cr_convnet *c, const char *prefix,
                                            const char *what) {
    char name[40];
    snprintf(name, sizeof name, "%s.%s", prefix, what);
    int i = cr_convnet_find(c, name);
    CUDARL_ASSERT(i >= 0);
    return &c->t[i];
}

/* Appends the conv net's linear layer `prefix` (network.7, actor) reading x, writing out. */
static cudarl_status g_conv_linear(onnx_graph *g, const cr_st_file *f, const cr_convnet *c,
                                   const char *prefix, const char *x, const char *out) {
    const cr_convnet_tensor *w = conv_tensor(c, prefix, "weight");
    return g_gemm(g, f, prefix, x, w->name, w->shape, conv_tensor(c, prefix, "bias")->name, out);
}

/* Appends conv layer i (l) named `name` reading x, writing y: weights (K, C, R, S) and bias
 * (K), stride and pad the same in both dims (pads only where the spec pads). */
static cudarl_status g_conv(onnx_graph *g, const cr_st_file *f, const cr_convnet *c,
                            const cr_convnet_layer *l, const char *name, const char *x,
                            const char *y) {
    const cr_convnet_tensor *w = conv_tensor(c, name, "weight"), *b = conv_tensor(c, name, "bias");
    CR_TRY(g_weight(g, f, w->name, 4, w->shape));
    CR_TRY(g_weight(g, f, b->name, 1, b->shape));
    Onnx__NodeProto *n = g_node(g, "Conv", name, y, 3, (const char *const[]){x, w->name, b->name});
    g_attr_ints(g, n, "kernel_shape", 2, (const int64_t[]){l->kernel[0], l->kernel[1]});
    g_attr_ints(g, n, "strides", 2, (const int64_t[]){l->stride, l->stride});
    if (l->pad)
        g_attr_ints(g, n, "pads", 4, (const int64_t[]){l->pad, l->pad, l->pad, l->pad});
    return CUDARL_OK;
}

/* Appends the conv net: its trunk on x, layer i as node network.<i> writing network.<i>.output
 * (PyTorch's Sequential names), then its heads on the trunk's flat features: PPO's actor and
 * critic, or DQN's Q head network.<num_layers>. Flatten(axis 1) keeps the (C, H, W) order,
 * which is cudarl's too (an NCHW tensor is its flattened matrix). */
static cudarl_status g_convnet(onnx_graph *g, const cr_st_file *f, const cr_convnet *c,
                               const char *x, int no_value) {
    const cr_convnet_spec *s = &c->spec;
    for (int i = 0; i < s->num_layers; i++) {
        const cr_convnet_layer *l = &s->layers[i];
        const char *name = g_str(g, "network.%d", i), *y = g_str(g, "network.%d.output", i);
        const char *const in[1] = {x};
        if (l->op == CR_CONVNET_CONV) {
            CR_TRY(g_conv(g, f, c, l, name, x, y));
        } else if (l->op == CR_CONVNET_LINEAR) {
            CR_TRY(g_conv_linear(g, f, c, name, x, y));
        } else if (l->op == CR_CONVNET_FLATTEN) {
            g_attr_int(g, g_node(g, "Flatten", name, y, 1, in), "axis", 1);
        } else {
            CUDARL_ASSERT(l->op == CR_CONVNET_RELU || l->op == CR_CONVNET_TANH);
            g_node(g, l->op == CR_CONVNET_RELU ? "Relu" : "Tanh", name, y, 1, in);
        }
        x = y;
    }
    if (s->heads == CR_CONVNET_DQN)
        return g_conv_linear(g, f, c, g_str(g, "network.%d", s->num_layers), x, CR_ONNX_Q_VALUES);
    CR_TRY(g_conv_linear(g, f, c, "actor", x, CR_ONNX_LOGITS));
    return no_value ? CUDARL_OK : g_conv_linear(g, f, c, "critic", x, CR_ONNX_VALUE);
}

/* The input `obs` ([batch, obs_dim], or [batch, C, H, W] for a conv net) and, for a uint8
 * input, its conversion as cudarl converts it: Cast to float, then Div by 255 unless the policy
 * casts its uint8 observations unscaled (MinAtar; a policy of float observations divides too,
 * warned). Returns the name of the float32 observations the network reads. */
static const char *g_input(onnx_graph *g, const onnx_policy *p, const cudarl_onnx_options *opt) {
    int u8 = opt->input_dtype == CUDARL_OBS_U8;
    int32_t elem = u8 ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    const cr_convnet_spec *s = &p->cnn.spec;
    const int64_t flat[1] = {p->obs_dim}, chw[3] = {s->in_c, s->in_h, s->in_w};
    g->inputs[g->graph.n_input++] = g_value(g, CR_ONNX_INPUT, elem, opt->batch,
                                            p->is_conv ? 3 : 1, p->is_conv ? chw : flat);
    if (!u8) return CR_ONNX_INPUT;
    Onnx__NodeProto *cast = g_node(g, "Cast", "obs.cast", "obs.float", 1,
                                   (const char *const[]){CR_ONNX_INPUT});
    g_attr_int(g, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (p->u8_cast) return "obs.float";
    g_init_scalar(g, "obs.divisor", 255.0f);
    g_node(g, "Div", "obs.scale", "obs.scaled", 2,
           (const char *const[]){"obs.float", "obs.divisor"});
    return "obs.scaled";
}

/* ---- the model around the graph ----------------------------------------------------------- */

/* The checkpoint's metadata value of `key`, or "?" (for the doc string; already checked). */
static const char *meta_or(const cr_st_file *f, const char *key) {
    const char *v = cr_st_meta(f, key);
    return v ? v : "?";
}

/* What the model's input is, for its doc string. */
static const char *input_text(const onnx_policy *p, const cudarl_onnx_options *opt) {
    if (opt->input_dtype == CUDARL_OBS_U8)
        return !p->takes_u8  ? "uint8, divided by 255 in the graph (the policy was trained on "
                               "float32 observations)"
               : p->u8_cast ? "uint8 observations as the env gives them, cast to float in the "
                              "graph (unscaled, as in training)"
                            : "uint8 observations as the env gives them, divided by 255 in the "
                              "graph (as in training)";
    return !p->takes_u8  ? "float32 observations, as the env gives them"
           : p->u8_cast ? "float32, the env's uint8 observations cast to float (a uint8 export "
                          "takes them as they are)"
                        : "float32, the env's uint8 observations divided by 255 (a uint8 export "
                          "takes them as they are)";
}

/* The conv net's layers as text, "conv 32@8x8/4, relu, ..., linear 512, relu", into b. */
static const char *layers_text(const cr_convnet_spec *s, char *b, size_t cap) {
    size_t n = 0;
    b[0] = '\0';
    for (int i = 0; i < s->num_layers && n < cap; i++) {
        const cr_convnet_layer *l = &s->layers[i];
        const char *sep = i ? ", " : "";
        int k;
        if (l->op == CR_CONVNET_CONV && l->pad)
            k = snprintf(b + n, cap - n, "%sconv %d@%dx%d/%d pad %d", sep, l->out, l->kernel[0],
                         l->kernel[1], l->stride, l->pad);
        else if (l->op == CR_CONVNET_CONV)
            k = snprintf(b + n, cap - n, "%sconv %d@%dx%d/%d", sep, l->out, l->kernel[0],
                         l->kernel[1], l->stride);
        else if (l->op == CR_CONVNET_LINEAR)
            k = snprintf(b + n, cap - n, "%slinear %d", sep, l->out);
        else
            k = snprintf(b + n, cap - n, "%s%s", sep, cr_convnet_op_name(l->op));
        n += k > 0 ? (size_t)k : 0;
    }
    return b;
}

/* The doc string: where the model came from, its network, input and outputs. */
static const char *g_doc(onnx_graph *g, const cr_st_file *f, const onnx_policy *p,
                         const cudarl_onnx_options *opt) {
    const char *env = meta_or(f, "env_id"), *run = meta_or(f, "run_name");
    const char *step = meta_or(f, "global_step"), *algo = p->is_dqn ? "DQN" : "PPO";
    char batch[32], obs[64];
    if (opt->batch > 0) snprintf(batch, sizeof batch, "%lld", (long long)opt->batch);
    else snprintf(batch, sizeof batch, "%s", CR_ONNX_BATCH_PARAM);
    const cr_convnet_spec *s = &p->cnn.spec;
    if (p->is_conv) snprintf(obs, sizeof obs, "[%s, %d, %d, %d]", batch, s->in_c, s->in_h, s->in_w);
    else snprintf(obs, sizeof obs, "[%s, %d]", batch, p->obs_dim);
    const char *input = input_text(p, opt), *action = opt->argmax_action ? " (output action)" : "";
    const char *head = g_str(g, "cudarl %s export of a %s policy for %.64s (run '%.128s', %.24s env "
                             "steps)", CUDARL_VERSION_STRING, algo, env, run, step);
    char layers[1024];
    if (p->is_conv) layers_text(s, layers, sizeof layers);
    if (p->is_conv && p->is_dqn)
        return g_str(g, "%s: CleanRL's dqn_atari.py QNetwork, network '%.32s' (%s, linear %d) "
                     "giving q_values [%s, %d]. Input obs %s: %s. The greedy action is "
                     "argmax(q_values)%s.", head, s->name, layers, p->num_actions, batch,
                     p->num_actions, obs, input, action);
    if (p->is_conv && p->no_value)
        return g_str(g, "%s: the actor of a PPO policy trained with a separate critic, network "
                     "'%.32s' (%s) giving %d features and an actor head giving logits [%s, %d] "
                     "(no value output: the critic is a network of its own). Input obs %s: %s. "
                     "The greedy action is argmax(logits)%s; sampling softmax(logits) gives the "
                     "stochastic policy.", head, s->name, layers, p->cnn.features, batch,
                     p->num_actions, obs, input, action);
    if (p->is_conv)
        return g_str(g, "%s: CleanRL's ppo_atari.py Agent, network '%.32s' (%s) giving %d "
                     "features, an actor head giving logits [%s, %d] and a critic head giving "
                     "value [%s, 1]. Input obs %s: %s. The greedy action is argmax(logits)%s; "
                     "sampling softmax(logits) gives the stochastic policy.", head, s->name,
                     layers, p->cnn.features, batch, p->num_actions, batch, obs, input, action);
    if (p->is_dqn)
        return g_str(g, "%s: CleanRL's Q-network, a ReLU MLP %d-%d-%d-%d giving q_values [%s, %d]. "
                     "Input obs %s: %s. The greedy action is argmax(q_values)%s.", head,
                     p->obs_dim, p->h1, p->h2, p->num_actions, batch, p->num_actions, obs, input,
                     action);
    const char *norm = p->norm ? " The observations are normalized first by the training run's "
                                 "statistics ((obs - obs_rms.mean) / obs_rms.std, clipped to "
                                 "+-10)." : "";
    if (p->box.K > 0)
        return g_str(g, "%s: CleanRL's ppo_continuous_action.py Agent, a tanh MLP %d-%d-%d-%d "
                     "actor_mean giving action_mean [%s, %d], the Gaussian's mean (its "
                     "state-independent log-std is not part of the graph), action [%s, %d] that "
                     "mean clipped into the env's box (the deterministic policy), and a tanh MLP "
                     "critic giving value [%s, 1]. Input obs %s: %s.%s", head, p->obs_dim, p->h1,
                     p->h1, p->box.K, batch, p->box.K, batch, p->box.K, batch, obs, input, norm);
    return g_str(g, "%s: CleanRL's actor-critic, a tanh MLP %d-%d-%d-%d actor giving logits [%s, "
                 "%d] and a tanh MLP %d-%d-%d-1 critic giving value [%s, 1]. Input obs %s: %s. "
                 "The greedy action is argmax(logits)%s; sampling softmax(logits) gives the "
                 "stochastic policy.%s", head, p->obs_dim, p->h1, p->h1, p->num_actions, batch,
                 p->num_actions, p->obs_dim, p->h1, p->h1, batch, obs, input, action, norm);
}

/* The model around the graph: IR version, opset, producer, doc string and metadata. */
static void g_model(onnx_graph *g, const cr_st_file *f, const onnx_policy *p,
                    const cudarl_onnx_options *opt) {
    g->model.doc_string = (char *)g_doc(g, f, p, opt);
    static const char *const keys[G_META] = {"algo", "env_id", "run_name", "global_step"};
    const char *values[G_META] = {p->is_dqn ? "dqn" : "ppo", meta_or(f, "env_id"),
                                  meta_or(f, "run_name"), meta_or(f, "global_step")};
    for (int i = 0; i < G_META; i++) {
        onnx__string_string_entry_proto__init(&g->meta[i]);
        g->meta[i].key = (char *)keys[i];
        g->meta[i].value = g_str(g, "%.128s", values[i]);
        g->metas[i] = &g->meta[i];
    }
    g->model.n_metadata_props = G_META, g->model.metadata_props = g->metas;
    g->model.has_ir_version = 1, g->model.ir_version = CUDARL_ONNX_IR_VERSION;
    onnx__operator_set_id_proto__init(&g->opset);
    g->opset.domain = (char *)""; /* the default domain, ai.onnx */
    g->opset.has_version = 1, g->opset.version = CUDARL_ONNX_OPSET;
    g->opsets[0] = &g->opset;
    g->model.n_opset_import = 1, g->model.opset_import = g->opsets;
    g->model.producer_name = (char *)"cudarl";
    g->model.producer_version = (char *)CUDARL_VERSION_STRING;
    g->model.graph = &g->graph;
}

/* --norm-obs baked in: (x - mean) / sqrt(var + 1e-8), clipped to [-10, 10], as the training run
 * and the policy runtime normalize. Returns the normalized observations' name. */
static const char *g_normalize(onnx_graph *g, const onnx_policy *p, const char *x) {
    const int D = p->obs_dim;
    g_init_tensor(g, "obs_rms.mean", 1, &D, p->norm, (size_t)D * sizeof(float));
    g_init_tensor(g, "obs_rms.std", 1, &D, p->norm + D, (size_t)D * sizeof(float));
    g_init_scalar(g, "obs_rms.clip_lo", -10.0f);
    g_init_scalar(g, "obs_rms.clip_hi", 10.0f);
    g_node(g, "Sub", "obs_rms.sub", "obs.centered", 2, (const char *const[]){x, "obs_rms.mean"});
    g_node(g, "Div", "obs_rms.div", "obs.whitened", 2,
           (const char *const[]){"obs.centered", "obs_rms.std"});
    g_node(g, "Clip", "obs_rms.clip", "obs.normalized", 3,
           (const char *const[]){"obs.whitened", "obs_rms.clip_lo", "obs_rms.clip_hi"});
    return "obs.normalized";
}

/* A Gaussian policy (ppo_continuous_action.py's Agent): actor_mean giving action_mean [batch, K],
 * its deterministic action clipped into the env's box (Max then Min against the bounds) as
 * `action`, and the critic's value. */
static cudarl_status gaussian_build(onnx_graph *g, const cr_st_file *f, const onnx_policy *p,
                                    const cudarl_onnx_options *opt, const char *x) {
    const int K = p->box.K;
    CR_TRY(g_mlp(g, f, p->ac.t + 6, "actor_mean", "Tanh", x, CR_ONNX_MEAN));
    CR_TRY(g_mlp(g, f, p->ac.t, "critic", "Tanh", x, CR_ONNX_VALUE));
    g_init_tensor(g, "action.low", 1, &K, p->box.lo, (size_t)K * sizeof(float));
    g_init_tensor(g, "action.high", 1, &K, p->box.hi, (size_t)K * sizeof(float));
    g_node(g, "Max", "action.max", "action.above_low", 2,
           (const char *const[]){CR_ONNX_MEAN, "action.low"});
    g_node(g, "Min", "action.min", CR_ONNX_ACTION, 2,
           (const char *const[]){"action.above_low", "action.high"});
    g_output(g, CR_ONNX_ACTION, opt->batch, K);
    g_output(g, CR_ONNX_MEAN, opt->batch, K);
    g_output(g, CR_ONNX_VALUE, opt->batch, 1);
    g_model(g, f, p, opt);
    return CUDARL_OK;
}

/* Builds every message of the policy's model into *g. */
static cudarl_status graph_build(onnx_graph *g, const cr_st_file *f, const onnx_policy *p,
                                 const cudarl_onnx_options *opt) {
    memset(g, 0, sizeof *g);
    onnx__model_proto__init(&g->model);
    onnx__graph_proto__init(&g->graph);
    g->graph.node = g->nodes, g->graph.initializer = g->inits;
    g->graph.input = g->inputs, g->graph.output = g->outputs;
    g->graph.name = (char *)(p->is_dqn ? "cudarl_dqn_policy" : "cudarl_ppo_policy");
    const char *x = g_input(g, p, opt);
    if (p->norm) x = g_normalize(g, p, x);
    if (p->box.K > 0) return gaussian_build(g, f, p, opt, x);
    if (p->is_conv) CR_TRY(g_convnet(g, f, &p->cnn, x, p->no_value));
    else if (p->is_dqn) CR_TRY(g_mlp(g, f, p->q.t, "network", "Relu", x, CR_ONNX_Q_VALUES));
    else {
        CR_TRY(g_mlp(g, f, p->ac.t + 6, "actor", "Tanh", x, CR_ONNX_LOGITS));
        CR_TRY(g_mlp(g, f, p->ac.t, "critic", "Tanh", x, CR_ONNX_VALUE));
    }
    g_output(g, p->is_dqn ? CR_ONNX_Q_VALUES : CR_ONNX_LOGITS, opt->batch, p->num_actions);
    if (!p->is_dqn && !p->no_value) g_output(g, CR_ONNX_VALUE, opt->batch, 1);
    if (opt->argmax_action) {
        const char *scores = p->is_dqn ? CR_ONNX_Q_VALUES : CR_ONNX_LOGITS;
        Onnx__NodeProto *n = g_node(g, "ArgMax", "action.argmax", CR_ONNX_ACTION, 1,
                                    (const char *const[]){scores});
        g_attr_int(g, n, "axis", 1);
        g_attr_int(g, n, "keepdims", 0);
        g_output(g, CR_ONNX_ACTION, opt->batch, 0);
    }
    g_model(g, f, p, opt);
    return CUDARL_OK;
}

static cudarl_status options_check(const cudarl_onnx_options *opt) {
    if (opt->batch < 0 || opt->batch > CUDARL_ONNX_MAX_BATCH)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "ONNX export: batch %lld is out of range; give 1 to "
                       "%d for a fixed batch, or 0 for a dynamic one", (long long)opt->batch,
                       CUDARL_ONNX_MAX_BATCH);
    if (opt->input_dtype != CUDARL_OBS_F32 && opt->input_dtype != CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "ONNX export: input dtype %d is not "
                       "CUDARL_OBS_F32 or CUDARL_OBS_U8", (int)opt->input_dtype);
    return CUDARL_OK;
}

/* Warns when a uint8 input is asked for a policy of float observations: the model then computes
 * the policy of obs / 255, which is only right for pixel-trained policies. */
static void warn_input_dtype(const cr_st_file *f, const onnx_policy *p,
                             const cudarl_onnx_options *opt) {
    if (opt->input_dtype == CUDARL_OBS_U8 && !p->takes_u8)
        CR_WARN("ONNX export: uint8 input for a policy of %s, whose observations are float32: "
                "the model divides its input by 255 before the policy sees it",
                meta_or(f, "env_id"));
}

cudarl_status cr_onnx_model_pack(const char *checkpoint, const cudarl_onnx_options *opt,
                                 uint8_t **bytes, size_t *len) {
    *bytes = NULL, *len = 0;
    CR_TRY(options_check(opt));
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, checkpoint));
    onnx_policy p;
    onnx_graph g;
    p.norm = NULL;
    cudarl_status s = policy_read(f, checkpoint, &p);
    if (s == CUDARL_OK) s = graph_build(&g, f, &p, opt);
    if (s == CUDARL_OK) {
        warn_input_dtype(f, &p, opt);
        size_t n = onnx__model_proto__get_packed_size(&g.model);
        *bytes = malloc(n ? n : 1);
        if (!*bytes) {
            char b[32];
            s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot allocate %s of host memory for the "
                        "ONNX model of '%s'", cudarl_format_bytes(n, b, sizeof b), checkpoint);
        } else {
            *len = onnx__model_proto__pack(&g.model, *bytes);
            CUDARL_ASSERT(*len == n);
        }
    }
    cr_st_close(f); /* the initializers point into it: only after packing */
    free(p.norm);
    return s;
}

/* ---- the file ----------------------------------------------------------------------------- */

/* Writes bytes[0, len) to `path` as checkpoints are written (io/output_file.h). */
static cudarl_status write_model(const char *path, const uint8_t *bytes, size_t len) {
    cr_out_file o;
    CR_TRY(cr_out_open(&o, path, "ONNX model"));
    cr_out_write(&o, bytes, len);
    return cr_out_commit(&o);
}

/* The defaults into *opt, options of this build's size. */
static void onnx_defaults(cudarl_onnx_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->batch = 0;
    opt->input_dtype = CUDARL_OBS_F32;
    opt->argmax_action = 0;
}

cudarl_status cudarl_onnx_options_default_sized(cudarl_onnx_options *opt, size_t struct_size) {
    CR_REQUIRE(opt, "cudarl_onnx_options_default: the options are NULL");
    CR_TRY(cr_struct_check(&cr_abi_onnx_options, struct_size, "cudarl_onnx_options_default"));
    cudarl_onnx_options full;
    onnx_defaults(&full);
    cr_struct_write(opt, &full, struct_size);
    return CUDARL_OK;
}

cudarl_status cudarl_policy_export_onnx(const char *checkpoint, const char *onnx_path,
                                        const cudarl_onnx_options *opt) {
    if (!checkpoint || !onnx_path || !*onnx_path)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "ONNX export needs a checkpoint and an output "
                       "path, got %s", !checkpoint ? "no checkpoint" : "no output path");
    cudarl_onnx_options o;
    onnx_defaults(&o);
    if (opt) CR_TRY(cr_struct_read(&cr_abi_onnx_options, &o, opt, "cudarl_policy_export_onnx"));
    struct stat a, b;
    if (stat(checkpoint, &a) == 0 && stat(onnx_path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "the ONNX output '%s' is the checkpoint itself, "
                       "which writing would destroy; give another path, e.g. policy.onnx",
                       onnx_path);
    CR_TRY(cr_out_check(onnx_path, "ONNX model")); /* before reading the checkpoint */
    uint8_t *bytes;
    size_t len;
    CR_TRY(cr_onnx_model_pack(checkpoint, &o, &bytes, &len));
    cudarl_status s = write_model(onnx_path, bytes, len);
    free(bytes);
    return s;
}
