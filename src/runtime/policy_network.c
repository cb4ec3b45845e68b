/* Policies built from a network in memory instead of a checkpoint, for benchmarks and tests
 * (`cudarl bench infer`): the parameter init, the load, and what the benchmark reads back (the
 * conv engine, the forward graph's GPU time). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "nn/convnet.h"
#include "runtime/policy.h"

#define SOURCE "network"

int cudarl_conv_engine_built(cudarl_conv_engine engine) {
#ifdef CUDARL_WITH_CUDNN
    return 1;
#else
    return engine != CUDARL_CONV_ENGINE_CUDNN;
#endif
}

/* The planned network of text form `network`. */
static cudarl_status network_plan(const char *network, cr_convnet *net) {
    CR_REQUIRE(network, "no network: pass its text form (format \"cudarl-convnet\")");
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_parse(&spec, network, SOURCE));
    return cr_convnet_plan(net, &spec);
}

cudarl_status cudarl_network_init_params(const char *network, uint64_t seed, float *params,
                                         size_t cap, size_t *num_params) {
    CR_REQUIRE(num_params, "cudarl_network_init_params: num_params is NULL");
    cr_convnet net;
    CR_TRY(network_plan(network, &net));
    *num_params = net.num_params;
    if (!params) return CUDARL_OK;
    CR_REQUIRE(cap >= net.num_params, "cudarl_network_init_params: params holds %zu floats, the "
               "network has %zu parameters", cap, net.num_params);
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (int i = 0; i < net.ntensors; i++) {
        const cr_convnet_tensor *t = &net.t[i];
        const double bound = 1.0 / sqrt((double)t->fan_in);
        for (size_t e = 0; e < t->count; e++)
            params[t->offset + e] = (float)((2.0 * cr_philox_uniform_f64(&r) - 1.0) * bound);
    }
    return CUDARL_OK;
}

cudarl_status cudarl_policy_load_network(const char *network, const float *params,
                                         size_t num_params, const char *label,
                                         cudarl_conv_engine engine,
                                         const cudarl_policy_options *opt, cudarl_policy **out) {
    CR_REQUIRE(out, "cudarl_policy_load_network: out is NULL");
    *out = NULL;
    CR_REQUIRE(params && label, "cudarl_policy_load_network: params and label must not be NULL");
    CR_REQUIRE(engine == CUDARL_CONV_ENGINE_AUTO || engine == CUDARL_CONV_ENGINE_GEMM ||
                   engine == CUDARL_CONV_ENGINE_CUDNN,
               "cudarl_policy_load_network: engine %d is not a cudarl_conv_engine", (int)engine);
    cr_convnet net;
    CR_TRY(network_plan(network, &net));
    CR_REQUIRE(num_params == net.num_params, "cudarl_policy_load_network: %zu parameters given, "
               "the network has %zu", num_params, net.num_params);
    const cr_convnet_engine e = engine == CUDARL_CONV_ENGINE_GEMM    ? CR_CONVNET_ENGINE_GEMM
                                : engine == CUDARL_CONV_ENGINE_CUDNN ? CR_CONVNET_ENGINE_CUDNN
                                                                     : CR_CONVNET_ENGINE_AUTO;
    return cr_policy_load_convnet(&net, params, label, e, opt, out);
}

const char *cudarl_policy_conv_engine(const cudarl_policy *p) {
    if (!p || !p->net.is_conv) return "";
#ifdef CUDARL_WITH_CUDA
    if (p->conv_gpu) return cr_convnet_cuda_engine_name(cr_convnet_cuda_engine(p->conv_gpu));
#endif
    return "cpu";
}

cudarl_status cudarl_policy_time_forward(cudarl_policy *p, int n, int iters, float *ms) {
    CR_REQUIRE(p && ms, "cudarl_policy_time_forward: policy and ms must not be NULL");
    CR_REQUIRE(n >= 1 && n <= p->opt.max_batch, "cudarl_policy_time_forward: n is %d; time 1 to "
               "max_batch (%d) rows", n, p->opt.max_batch);
    CR_REQUIRE(iters >= 1, "cudarl_policy_time_forward: iters is %d; time at least 1 launch",
               iters);
#ifdef CUDARL_WITH_CUDA
    if (p->ctx->kind == CUDARL_DEVICE_CUDA) return cr_policy_cuda_time_forward(p, n, iters, ms);
#endif
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_time_forward: the policy runs on the "
                   "CPU, which has no forward graph to time; load it with device CUDA");
}
