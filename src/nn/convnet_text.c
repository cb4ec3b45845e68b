/* The named convolutional specs (nature-cnn, minatar-cnn) and a spec's text form: the JSON a
 * checkpoint records under __metadata__ "network" (format in convnet.h), its writer and a strict
 * parser. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nn/convnet.h"

/* ---- named specs ---------------------------------------------------------------------------- */

static cr_convnet_layer conv(int out, int kernel, int stride) {
    return (cr_convnet_layer){.op = CR_CONVNET_CONV, .out = out, .kernel = {kernel, kernel},
                              .stride = stride, .pad = 0};
}
static cr_convnet_layer linear(int out) {
    return (cr_convnet_layer){.op = CR_CONVNET_LINEAR, .out = out};
}
static cr_convnet_layer plain(cr_convnet_op op) { return (cr_convnet_layer){.op = op}; }

static void set_layers(cr_convnet_spec *s, const cr_convnet_layer *l, int n) {
    CUDARL_ASSERT(n <= CR_CONVNET_MAX_LAYERS);
    s->num_layers = n;
    memcpy(s->layers, l, (size_t)n * sizeof *l);
}

/* Nature DQN's trunk (Mnih et al. 2015), as CleanRL's ppo_atari.py / dqn_atari.py: 84x84x4
 * frames give 32x20x20, 64x9x9, 64x7x7 = 3136 features before the 512-wide layer. */
static void nature_cnn(cr_convnet_spec *s) {
    const cr_convnet_layer l[] = {
        conv(32, 8, 4), plain(CR_CONVNET_RELU), conv(64, 4, 2), plain(CR_CONVNET_RELU),
        conv(64, 3, 1), plain(CR_CONVNET_RELU), plain(CR_CONVNET_FLATTEN), linear(512),
        plain(CR_CONVNET_RELU)};
    s->dtype = CR_CONVNET_U8, s->scale = CR_CONVNET_SCALE_255;
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* MinAtar's network (Young & Tian 2019): 10x10xC 0/1 channels give 16x8x8 = 1024 features. */
static void minatar_cnn(cr_convnet_spec *s) {
    const cr_convnet_layer l[] = {conv(16, 3, 1), plain(CR_CONVNET_RELU),
                                  plain(CR_CONVNET_FLATTEN), linear(128), plain(CR_CONVNET_RELU)};
    s->dtype = CR_CONVNET_U8, s->scale = CR_CONVNET_SCALE_NONE;
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

static const struct {
    const char *name;
    void (*build)(cr_convnet_spec *s);
} NAMED[] = {{"nature-cnn", nature_cnn}, {"minatar-cnn", minatar_cnn}};
#define NUM_NAMED ((int)(sizeof NAMED / sizeof NAMED[0]))

static int named_index(const char *name) {
    for (int i = 0; i < NUM_NAMED; i++)
        if (!strcmp(name, NAMED[i].name)) return i;
    return -1;
}

const char *cr_convnet_name_for(int c, int h, int w) {
    (void)c;
    return h == 10 && w == 10 ? "minatar-cnn" : "nature-cnn";
}

cudarl_status cr_convnet_spec_named(cr_convnet_spec *spec, const char *name, int c, int h, int w,
                                    cr_convnet_heads heads, int num_actions) {
    int k = named_index(name);
    if (k < 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "unknown network '%s'; known: nature-cnn, "
                       "minatar-cnn", name);
    memset(spec, 0, sizeof *spec);
    snprintf(spec->name, sizeof spec->name, "%s", name);
    spec->in_c = c, spec->in_h = h, spec->in_w = w;
    spec->heads = heads, spec->num_actions = num_actions;
    NAMED[k].build(spec);
    return CUDARL_OK;
}

/* "conv 32@8x8/4 pad 0", "linear 512", "relu" into b. */
static const char *layer_text(const cr_convnet_layer *l, char *b, size_t cap) {
    if (l->op == CR_CONVNET_CONV)
        snprintf(b, cap, "conv %d@%dx%d/%d pad %d", l->out, l->kernel[0], l->kernel[1], l->stride,
                 l->pad);
    else if (l->op == CR_CONVNET_LINEAR)
        snprintf(b, cap, "linear %d", l->out);
    else
        snprintf(b, cap, "%s", cr_convnet_op_name(l->op));
    return b;
}

static int same_layer(const cr_convnet_layer *a, const cr_convnet_layer *b) {
    if (a->op != b->op) return 0;
    if (a->op == CR_CONVNET_LINEAR) return a->out == b->out;
    if (a->op != CR_CONVNET_CONV) return 1;
    return a->out == b->out && a->kernel[0] == b->kernel[0] && a->kernel[1] == b->kernel[1] &&
           a->stride == b->stride && a->pad == b->pad;
}

cudarl_status cr_convnet_check_name(const cr_convnet_spec *spec) {
    if (!strcmp(spec->name, "custom")) return CUDARL_OK;
    int k = named_index(spec->name);
    if (k < 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: unknown name '%s'; known: "
                       "nature-cnn, minatar-cnn, or custom for a spec of your own", spec->name);
    cr_convnet_spec want;
    cr_convnet_spec_named(&want, spec->name, spec->in_c, spec->in_h, spec->in_w, spec->heads,
                          spec->num_actions);
    if (spec->dtype != want.dtype || spec->scale != want.scale)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: named '%s' but its input dtype or "
                       "scale is not %s's (%s, %s); name it custom or use %s's", spec->name,
                       spec->name, want.dtype == CR_CONVNET_U8 ? "u8" : "f32",
                       want.scale == CR_CONVNET_SCALE_255 ? "1/255" : "none", spec->name);
    int n = spec->num_layers < want.num_layers ? spec->num_layers : want.num_layers;
    for (int i = 0; i <= n; i++) {
        if (i == n && spec->num_layers == want.num_layers) break;
        if (i < n && same_layer(&spec->layers[i], &want.layers[i])) continue;
        char got[64] = "(none)", exp[64] = "(none)";
        if (i < spec->num_layers) layer_text(&spec->layers[i], got, sizeof got);
        if (i < want.num_layers) layer_text(&want.layers[i], exp, sizeof exp);
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: named '%s' but layer %d is %s where "
                       "%s has %s; name it custom or use %s's layers", spec->name, i, got,
                       spec->name, exp, spec->name);
    }
    return CUDARL_OK;
}

/* ---- text ----------------------------------------------------------------------------------- */

/* Appends to b (cap) at *n; returns 0 once it no longer fits. */
__attribute__((format(printf, 4, 5))) static int put(char *b, size_t cap, size_t *n,
                                                     const char *fmt, ...) {
    if (*n >= cap) return 0;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= cap - *n) {
        *n = cap;
        return 0;
    }
    *n += (size_t)k;
    return 1;
}

/* The layer types of the text form: cr_convnet_op values 0 .. NUM_OPS - 1. */
#define NUM_OPS ((int)CR_CONVNET_LINEAR + 1)

cudarl_status cr_convnet_spec_to_text(const cr_convnet_spec *s, char *b, size_t cap) {
    CR_TRY(cr_convnet_check_name(s)); /* also keeps quotes out of the name */
    size_t n = 0;
    put(b, cap, &n, "{\"format\":\"%s\",\"version\":%d,\"name\":\"%s\",\"input\":{\"shape\":"
        "[%d,%d,%d],\"dtype\":\"%s\",\"scale\":\"%s\"},\"layers\":[", CR_CONVNET_FORMAT,
        CR_CONVNET_VERSION, s->name, s->in_c, s->in_h, s->in_w,
        s->dtype == CR_CONVNET_U8 ? "u8" : "f32",
        s->scale == CR_CONVNET_SCALE_255 ? "1/255" : "none");
    for (int i = 0; i < s->num_layers && i < CR_CONVNET_MAX_LAYERS; i++) {
        const cr_convnet_layer *l = &s->layers[i];
        if ((unsigned)l->op >= (unsigned)NUM_OPS)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: layer %d has unknown type %d",
                           i, (int)l->op);
        put(b, cap, &n, "%s{\"type\":\"%s\"", i ? "," : "", cr_convnet_op_name(l->op));
        if (l->op == CR_CONVNET_CONV)
            put(b, cap, &n, ",\"out\":%d,\"kernel\":[%d,%d],\"stride\":%d,\"pad\":%d", l->out,
                l->kernel[0], l->kernel[1], l->stride, l->pad);
        else if (l->op == CR_CONVNET_LINEAR)
            put(b, cap, &n, ",\"out\":%d", l->out);
        put(b, cap, &n, "}");
    }
    if (!put(b, cap, &n, "],\"heads\":{\"type\":\"%s\",\"actions\":%d}}",
             s->heads == CR_CONVNET_PPO ? "ppo" : "dqn", s->num_actions))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec text needs more than %zu bytes", cap);
    return CUDARL_OK;
}

/* ---- parser --------------------------------------------------------------------------------- */

typedef struct parser {
    const char *source;
} parser;

/* CUDARL_ERR_FORMAT with "<source>: network spec: <message>". */
__attribute__((format(printf, 2, 3))) static cudarl_status refuse(const parser *p,
                                                                 const char *fmt, ...) {
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cr_fail(CUDARL_ERR_FORMAT, "%s: network spec: %s", p->source, msg);
}

/* Refuses keys of obj that are not in keys (NULL-terminated) and keys given twice. */
static cudarl_status only_keys(const parser *p, const cJSON *obj, const char *where,
                               const char *const *keys) {
    if (!cJSON_IsObject(obj)) return refuse(p, "%s must be a JSON object", where);
    for (const cJSON *c = obj->child; c; c = c->next) {
        int known = 0;
        for (const char *const *k = keys; *k && !known; k++) known = !strcmp(c->string, *k);
        if (!known)
            return refuse(p, "%s has unknown field \"%s\" (written by a newer cudarl?)", where,
                          c->string);
        for (const cJSON *d = c->next; d; d = d->next)
            if (!strcmp(c->string, d->string))
                return refuse(p, "%s has field \"%s\" twice", where, c->string);
    }
    return CUDARL_OK;
}

static cudarl_status need(const parser *p, const cJSON *obj, const char *key, const char *where,
                          const cJSON **out) {
    *out = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!*out) return refuse(p, "%s lacks field \"%s\"", where, key);
    return CUDARL_OK;
}

/* An integer in [lo, hi] written as a JSON number. */
static cudarl_status as_int(const parser *p, const cJSON *v, const char *where, const char *key,
                            int lo, int hi, int *out) {
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi) || d != floor(d))
        return refuse(p, "%s field \"%s\" must be an integer from %d to %d", where, key, lo, hi);
    *out = (int)d;
    return CUDARL_OK;
}

static cudarl_status get_int(const parser *p, const cJSON *obj, const char *key,
                             const char *where, int lo, int hi, int *out) {
    const cJSON *v;
    CR_TRY(need(p, obj, key, where, &v));
    return as_int(p, v, where, key, lo, hi, out);
}

static cudarl_status get_str(const parser *p, const cJSON *obj, const char *key,
                             const char *where, const char **out) {
    const cJSON *v;
    CR_TRY(need(p, obj, key, where, &v));
    if (!cJSON_IsString(v)) return refuse(p, "%s field \"%s\" must be a string", where, key);
    *out = v->valuestring;
    return CUDARL_OK;
}

/* n integers of array `key` of obj, each in [lo, hi]. */
static cudarl_status get_ints(const parser *p, const cJSON *obj, const char *key,
                              const char *where, int n, int lo, int hi, int *out) {
    const cJSON *v;
    CR_TRY(need(p, obj, key, where, &v));
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
        return refuse(p, "%s field \"%s\" must be an array of %d integers", where, key, n);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++)
        CR_TRY(as_int(p, e, where, key, lo, hi, &out[i]));
    return CUDARL_OK;
}

static cudarl_status parse_input(const parser *p, const cJSON *root, cr_convnet_spec *s) {
    static const char *const keys[] = {"shape", "dtype", "scale", NULL};
    const cJSON *in;
    const char *dtype = NULL, *scale = NULL;
    CR_TRY(need(p, root, "input", "the spec", &in));
    CR_TRY(only_keys(p, in, "\"input\"", keys));
    int shape[3];
    CR_TRY(get_ints(p, in, "shape", "\"input\"", 3, 1, CR_CONVNET_DIM_MAX, shape));
    s->in_c = shape[0], s->in_h = shape[1], s->in_w = shape[2];
    CR_TRY(get_str(p, in, "dtype", "\"input\"", &dtype));
    if (!strcmp(dtype, "u8")) s->dtype = CR_CONVNET_U8;
    else if (!strcmp(dtype, "f32")) s->dtype = CR_CONVNET_F32;
    else return refuse(p, "unknown input dtype \"%s\"; known: u8, f32", dtype);
    CR_TRY(get_str(p, in, "scale", "\"input\"", &scale));
    if (!strcmp(scale, "1/255")) s->scale = CR_CONVNET_SCALE_255;
    else if (!strcmp(scale, "none")) s->scale = CR_CONVNET_SCALE_NONE;
    else return refuse(p, "unknown input scale \"%s\"; known: 1/255, none", scale);
    return CUDARL_OK;
}

static cudarl_status parse_layer(const parser *p, const cJSON *obj, int i, cr_convnet_layer *l) {
    static const char *const conv_keys[] = {"type", "out", "kernel", "stride", "pad", NULL};
    static const char *const linear_keys[] = {"type", "out", NULL};
    static const char *const plain_keys[] = {"type", NULL};
    char where[32];
    snprintf(where, sizeof where, "layer %d", i);
    if (!cJSON_IsObject(obj)) return refuse(p, "%s must be a JSON object", where);
    const char *type = NULL;
    CR_TRY(get_str(p, obj, "type", where, &type));
    int op = 0;
    while (op < NUM_OPS && strcmp(type, cr_convnet_op_name((cr_convnet_op)op))) op++;
    if (op == NUM_OPS)
        return refuse(p, "%s has unknown type \"%s\"; known: conv, relu, tanh, flatten, linear",
                      where, type);
    memset(l, 0, sizeof *l);
    l->op = (cr_convnet_op)op;
    if (l->op == CR_CONVNET_CONV) {
        CR_TRY(only_keys(p, obj, where, conv_keys));
        CR_TRY(get_int(p, obj, "out", where, 1, CR_CONVNET_DIM_MAX, &l->out));
        CR_TRY(get_ints(p, obj, "kernel", where, 2, 1, CR_CONVNET_DIM_MAX, l->kernel));
        CR_TRY(get_int(p, obj, "stride", where, 1, CR_CONVNET_DIM_MAX, &l->stride));
        return get_int(p, obj, "pad", where, 0, CR_CONVNET_DIM_MAX, &l->pad);
    }
    if (l->op == CR_CONVNET_LINEAR) {
        CR_TRY(only_keys(p, obj, where, linear_keys));
        return get_int(p, obj, "out", where, 1, CR_CONVNET_DIM_MAX, &l->out);
    }
    return only_keys(p, obj, where, plain_keys);
}

static cudarl_status parse_root(const parser *p, const cJSON *root, cr_convnet_spec *s) {
    static const char *const keys[] = {"format", "version", "name", "input", "layers", "heads",
                                       NULL};
    static const char *const head_keys[] = {"type", "actions", NULL};
    CR_TRY(only_keys(p, root, "the spec", keys));
    const char *fmt = NULL, *name = NULL, *heads = NULL;
    CR_TRY(get_str(p, root, "format", "the spec", &fmt));
    if (strcmp(fmt, CR_CONVNET_FORMAT))
        return refuse(p, "format is \"%s\", expected \"%s\"", fmt, CR_CONVNET_FORMAT);
    const cJSON *ver;
    CR_TRY(need(p, root, "version", "the spec", &ver));
    if (!cJSON_IsNumber(ver) || ver->valuedouble != floor(ver->valuedouble) ||
        ver->valuedouble < 1 || ver->valuedouble > CR_CONVNET_VERSION)
        return refuse(p, "version %g; this cudarl reads version 1 to %d: use the cudarl that "
                      "wrote the file", cJSON_IsNumber(ver) ? ver->valuedouble : NAN,
                      CR_CONVNET_VERSION);
    CR_TRY(get_str(p, root, "name", "the spec", &name));
    if (strlen(name) >= sizeof s->name) return refuse(p, "name \"%.40s...\" is too long", name);
    snprintf(s->name, sizeof s->name, "%s", name);
    CR_TRY(parse_input(p, root, s));
    const cJSON *layers, *h;
    CR_TRY(need(p, root, "layers", "the spec", &layers));
    if (!cJSON_IsArray(layers)) return refuse(p, "\"layers\" must be an array");
    int n = cJSON_GetArraySize(layers);
    if (n > CR_CONVNET_MAX_LAYERS)
        return refuse(p, "%d layers; at most %d", n, CR_CONVNET_MAX_LAYERS);
    s->num_layers = n;
    int i = 0;
    for (const cJSON *e = layers->child; e; e = e->next, i++)
        CR_TRY(parse_layer(p, e, i, &s->layers[i]));
    CR_TRY(need(p, root, "heads", "the spec", &h));
    CR_TRY(only_keys(p, h, "\"heads\"", head_keys));
    CR_TRY(get_str(p, h, "type", "\"heads\"", &heads));
    if (!strcmp(heads, "ppo")) s->heads = CR_CONVNET_PPO;
    else if (!strcmp(heads, "dqn")) s->heads = CR_CONVNET_DQN;
    else return refuse(p, "unknown heads type \"%s\"; known: ppo, dqn", heads);
    return get_int(p, h, "actions", "\"heads\"", 1, CR_CONVNET_DIM_MAX, &s->num_actions);
}

cudarl_status cr_convnet_spec_parse(cr_convnet_spec *spec, const char *text, const char *source) {
    parser p = {source ? source : "network spec text"};
    if (!text) return refuse(&p, "missing (no text)");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        return refuse(&p, "not valid JSON (near byte %zu: \"%.24s\")", at, text + at);
    }
    cr_convnet_spec s;
    memset(&s, 0, sizeof s);
    cudarl_status st = parse_root(&p, root, &s);
    cJSON_Delete(root);
    CR_TRY(st);
    cr_convnet net;
    if (cr_convnet_plan(&net, &s) != CUDARL_OK) {
        char why[384];
        snprintf(why, sizeof why, "%s", cudarl_last_error());
        return cr_fail(CUDARL_ERR_FORMAT, "%s: %s", p.source, why);
    }
    *spec = s;
    return CUDARL_OK;
}
