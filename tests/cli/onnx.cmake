# ONNX export end to end (tests/cli/test_onnx_export.py): train tiny PPO and DQN policies with the
# built cudarl (MLPs; group conv: minatar-cnn and nature-cnn), export them, check each model with
# onnx.checker and run it in onnxruntime against cudarl's own forward pass (onnx_policy_forward,
# which runs the checkpoint through cr_mlp_forward on the CPU backend, or a conv net through the
# policy runtime's cr_convnet_forward); plus every refusal of `cudarl export`. Needs python3 with
# numpy, safetensors, onnx and onnxruntime (scripts/setup.sh installs them); one ctest entry per
# group, each in its own folder under onnx-work.
add_executable(onnx_policy_forward ${CMAKE_CURRENT_LIST_DIR}/onnx_policy_forward.c)
cudarl_test_target(onnx_policy_forward)
cudarl_test_runner(CUDARL_ONNX_FORWARD_RUN onnx_policy_forward)

if(Python3_EXECUTABLE)
  set(CUDARL_ONNX_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_ONNX_PYTHON python3) # never skip silently: fail, saying so, without python3
endif()
foreach(group ppo dqn conv bad_input gaussian)
  add_test(NAME onnx_export_${group}
           COMMAND ${CUDARL_ONNX_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_onnx_export.py
                   --cudarl ${CUDARL_CLI_RUN} --forward ${CUDARL_ONNX_FORWARD_RUN}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/onnx-work --only ${group})
  set_tests_properties(onnx_export_${group} PROPERTIES LABELS "cpu;python" TIMEOUT 300)
endforeach()
