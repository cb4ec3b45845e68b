# The policy runtime (src/runtime/policy.c, policy_cuda.cu): one program, run once on the CPU
# (label cpu) and once on the GPU against the CPU (label gpu). Two fixture tests train the tiny
# PPO and DQN checkpoints it loads, with the built cudarl, first, into a folder emptied before
# (cudarl train refuses to overwrite a run's checkpoint).
set(CUDARL_POLICY_RUNS ${CMAKE_CURRENT_BINARY_DIR}/policy-runtime-runs)
add_test(NAME policy_runtime_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${CUDARL_POLICY_RUNS})
add_test(NAME policy_runtime_train_ppo
         COMMAND cudarl_cli train --device cpu --total-timesteps 4096 --num-envs 8 --num-steps 64
                 --threads 1 --runs-dir ${CUDARL_POLICY_RUNS} --run-name ppo --quiet)
add_test(NAME policy_runtime_train_dqn
         COMMAND cudarl_cli train --algo dqn --device cpu --total-timesteps 4096
                 --learning-starts 1000 --threads 1 --runs-dir ${CUDARL_POLICY_RUNS}
                 --run-name dqn --quiet)
set_tests_properties(policy_runtime_clean policy_runtime_train_ppo policy_runtime_train_dqn
                     PROPERTIES LABELS cpu FIXTURES_SETUP policy_runtime_checkpoints)
set_tests_properties(policy_runtime_train_ppo policy_runtime_train_dqn PROPERTIES
                     DEPENDS policy_runtime_clean)

set(CUDARL_POLICY_ARGS ${CUDARL_POLICY_RUNS}/ppo/model.safetensors
    ${CUDARL_POLICY_RUNS}/dqn/model.safetensors)
cudarl_test(test_policy_runtime SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_policy_runtime.c LABELS cpu
            ARGS cpu ${CUDARL_POLICY_ARGS} ${CMAKE_CURRENT_BINARY_DIR}/policy-runtime-work-cpu)
set_tests_properties(test_policy_runtime PROPERTIES FIXTURES_REQUIRED policy_runtime_checkpoints)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_policy_runtime_cuda COMMAND test_policy_runtime cuda ${CUDARL_POLICY_ARGS}
           ${CMAKE_CURRENT_BINARY_DIR}/policy-runtime-work-cuda)
  set_tests_properties(test_policy_runtime_cuda PROPERTIES LABELS gpu
                       FIXTURES_REQUIRED policy_runtime_checkpoints)
endif()
