# Data parallel on GPUs over NCCL (docs/multigpu.md; registered in builds with NCCL): the
# rank-order summing kernel against its CPU twin and --num-gpus 1's NCCL mean, plain and in a
# CUDA graph (test_nccl_cuda); through the CLI, --num-gpus 1 against a plain GPU run bit for bit,
# and the GPU's refusals (nccl_np1, nccl_bad); 2 ranks of mpirun on 2 GPUs (nccl_np2) and
# --num-gpus 2's threads (nccl_ng2), labels gpu;multigpu: skipped (ctest's SKIP_RETURN_CODE 77)
# where fewer than 2 GPUs (or, for nccl_np2, no mpirun). The conv policies on the image envs'
# CUDA twins: --num-gpus 1 against a plain GPU run and resumed (nccl_conv_np1), 2 GPU ranks of
# mpirun (nccl_conv_np2) and --num-gpus 2 (nccl_conv_ng2) against one GPU's first rollout and
# resumed (gpu;multigpu, skipped below 2 GPUs).
if(CUDARL_HAVE_CUDA AND CUDARL_HAVE_NCCL)
  cudarl_test(test_nccl_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nccl_cuda.c LABELS gpu)
  if(Python3_EXECUTABLE)
    set(CUDARL_NCCL_PYTHON ${Python3_EXECUTABLE})
  else()
    set(CUDARL_NCCL_PYTHON python3)
  endif()
  set(CUDARL_NCCL_MPIRUN "")
  if(CUDARL_HAVE_MPI AND MPIEXEC_EXECUTABLE)
    set(CUDARL_NCCL_MPIRUN ${MPIEXEC_EXECUTABLE})
  endif()
  foreach(group np1 bad np2 ng2 conv_np1 conv_np2 conv_ng2)
    add_test(NAME nccl_${group}
             COMMAND ${CUDARL_NCCL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_nccl_cli.py
                     --cudarl ${CUDARL_CLI_RUN} --mpirun "${CUDARL_NCCL_MPIRUN}"
                     --work ${CMAKE_CURRENT_BINARY_DIR}/nccl-work --only ${group})
    set_tests_properties(nccl_${group} PROPERTIES LABELS gpu TIMEOUT 600 RUN_SERIAL TRUE
                         SKIP_RETURN_CODE 77
                         ENVIRONMENT "NCCL_NVLS_ENABLE=0")
  endforeach()
  set_tests_properties(nccl_np2 nccl_ng2 nccl_conv_np2 nccl_conv_ng2 PROPERTIES LABELS "gpu;multigpu")
endif()
