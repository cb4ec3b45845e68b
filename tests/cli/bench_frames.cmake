# `cudarl bench frames` (tools/bench_frames.c): its help, every bad flag refused with one line
# naming it and the fix, and short CPU runs (four 4K NV12 cameras for a few ticks, each pixel
# format gray and RGB on small frames, --find-max) checked through their printed figures and
# --json (test_bench_frames.py). On a CUDA build (label gpu) the same runs and a second of four
# 4K cameras from pinned host memory on the GPU, with the bandwidth and copy floor; the
# benchmark itself is the `frames` row of bench/README.md.
if(Python3_EXECUTABLE)
  set(CUDARL_BENCH_FRAMES_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_BENCH_FRAMES_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
add_test(NAME bench_frames_help COMMAND cudarl_cli bench frames --help)
set_tests_properties(bench_frames_help PROPERTIES LABELS "cpu;cli"
                     PASS_REGULAR_EXPRESSION
                     "--cameras.*--format.*--width.*--height.*--rate.*--seconds.*--policy.*--device.*--source.*--find-max.*--json")
foreach(group bad_input runs)
  add_test(NAME bench_frames_${group}
           COMMAND ${CUDARL_BENCH_FRAMES_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_bench_frames.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/bench-frames-work
                   --only ${group})
  set_tests_properties(bench_frames_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
endforeach()
if(CUDARL_HAVE_CUDA)
  add_test(NAME bench_frames_cuda
           COMMAND ${CUDARL_BENCH_FRAMES_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_bench_frames.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/bench-frames-work
                   --only runs --gpu)
  set_tests_properties(bench_frames_cuda PROPERTIES LABELS gpu TIMEOUT 600)
endif()
