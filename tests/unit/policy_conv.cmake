# The policy runtime on convolutional networks (tests/unit/test_policy_conv.c): run once on the CPU
# (label cpu) and once on the GPU against the CPU (label gpu). The fixture trains the small
# minatar-cnn DQN checkpoint it loads (MinAtar/Breakout-v1, the CPU, a few thousand steps) into
# a folder emptied first (cudarl train refuses to overwrite a run's checkpoint).
set(CUDARL_POLICY_CONV_RUNS ${CMAKE_CURRENT_BINARY_DIR}/policy-conv-runs)
add_test(NAME policy_conv_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${CUDARL_POLICY_CONV_RUNS})
add_test(NAME policy_conv_train_dqn
         COMMAND cudarl_cli train --algo dqn --device cpu --env-device cpu --env-threads 1
                 --threads 1 --env-id MinAtar/Breakout-v1 --policy minatar-cnn --num-envs 4
                 --total-timesteps 2000 --learning-starts 500 --train-frequency 4
                 --batch-size 32 --buffer-size 2000 --target-network-frequency 400
                 --runs-dir ${CUDARL_POLICY_CONV_RUNS} --run-name dqn_cnn --quiet)
set_tests_properties(policy_conv_clean policy_conv_train_dqn
                     PROPERTIES LABELS cpu FIXTURES_SETUP policy_conv_checkpoint)
set_tests_properties(policy_conv_train_dqn PROPERTIES DEPENDS policy_conv_clean)

set(CUDARL_POLICY_CONV_CKPT ${CUDARL_POLICY_CONV_RUNS}/dqn_cnn/model.safetensors)
cudarl_test(test_policy_conv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_policy_conv.c LABELS cpu
            ARGS cpu ${CUDARL_POLICY_CONV_CKPT} ${CMAKE_CURRENT_BINARY_DIR}/policy-conv-work-cpu)
set_tests_properties(test_policy_conv PROPERTIES FIXTURES_REQUIRED policy_conv_checkpoint)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_policy_conv_cuda COMMAND test_policy_conv cuda ${CUDARL_POLICY_CONV_CKPT}
           ${CMAKE_CURRENT_BINARY_DIR}/policy-conv-work-cuda)
  set_tests_properties(test_policy_conv_cuda PROPERTIES LABELS gpu
                       FIXTURES_REQUIRED policy_conv_checkpoint)
endif()
