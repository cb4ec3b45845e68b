/* libFuzzer: a checkpoint file through the ONNX exporter (cudarl_policy_export_onnx), with a
 * fixed batch, uint8 input where the policy takes it and the argmax output, and with the
 * defaults. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("model.safetensors", data, size);
    char out[512];
    snprintf(out, sizeof out, "%s/policy.onnx", fuzz_dir());
    if (cudarl_policy_export_onnx(path, out, NULL) != CUDARL_OK) return 0;
    cudarl_onnx_options opt;
    cudarl_onnx_options_default(&opt);
    opt.batch = 3, opt.argmax_action = 1, opt.input_dtype = CUDARL_OBS_U8;
    (void)cudarl_policy_export_onnx(path, out, &opt);
    return 0;
}
