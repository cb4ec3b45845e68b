# bench/multigpu_scale.py (the multigpu_scale row of bench/README.md: data-parallel PPO's
# scaling over GPUs) at a tiny CPU shape: its 1-GPU row and "needs 2+ GPUs" line, and its
# --num-gpus launch of a second row (test_bench_multigpu.py).
if(Python3_EXECUTABLE)
  set(CUDARL_BENCH_MULTIGPU_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_BENCH_MULTIGPU_PYTHON python3)
endif()
add_test(NAME bench_multigpu_scale
         COMMAND ${CUDARL_BENCH_MULTIGPU_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_bench_multigpu.py
                 --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/bench-multigpu-work)
set_tests_properties(bench_multigpu_scale PROPERTIES LABELS "cpu;cli" TIMEOUT 600)
