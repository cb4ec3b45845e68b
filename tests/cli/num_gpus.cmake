# `cudarl train --num-gpus N` refused where it cannot run (docs/multigpu.md), each naming the
# problem and the fix: N < 1, with --device cpu, and, in a build without the CUDA backend, any N
# (no GPU to run on). The GPU side (tests/gpu/nccl_cuda.cmake) checks N over the GPU count.
add_test(NAME cli_num_gpus_zero COMMAND ${CUDARL_CLI_RUN} train --num-gpus 0 --quiet)
set_tests_properties(cli_num_gpus_zero PROPERTIES LABELS cpu TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "--num-gpus must be between 1 and")
add_test(NAME cli_num_gpus_cpu COMMAND ${CUDARL_CLI_RUN} train --num-gpus 1 --device cpu --quiet)
set_tests_properties(cli_num_gpus_cpu PROPERTIES LABELS cpu TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "--num-gpus 1 trains on GPUs, and --device cpu")
if(NOT CUDARL_HAVE_CUDA)
  add_test(NAME cli_num_gpus_no_gpu
           COMMAND ${CUDARL_CLI_RUN} train --num-gpus 1 --quiet --total-timesteps 1024)
  set_tests_properties(cli_num_gpus_no_gpu PROPERTIES LABELS cpu TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "--num-gpus 1: this cudarl sees no CUDA GPU")
endif()
