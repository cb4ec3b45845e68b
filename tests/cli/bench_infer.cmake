# `cudarl bench infer` (tools/cmd_bench.c): its usage on the CPU (help, a bad flag and a bad
# engine exit non-zero with one line), and on a CUDA build (label gpu) a short run of the whole
# table, every row (fp32 per engine, tf32 on gemm, bf16 and fp16 on igemm; the table is printed
# only when every row ran) and the JSON written: the benchmark itself runs in
# scripts/gpu-check.sh infer.
add_test(NAME bench_infer_help COMMAND cudarl_cli bench infer --help)
set_tests_properties(bench_infer_help PROPERTIES LABELS "cpu;cli"
                     PASS_REGULAR_EXPRESSION "--iters.*--warmup.*--device.*--engine.*--json.*--batch")
add_test(NAME bench_infer_bad_flag COMMAND cudarl_cli bench infer --iter 5)
add_test(NAME bench_infer_bad_engine COMMAND cudarl_cli bench infer --engine winograd)
add_test(NAME bench_unknown COMMAND cudarl_cli bench train)
set_tests_properties(bench_infer_bad_flag bench_infer_bad_engine bench_unknown
                     PROPERTIES LABELS "cpu;cli" WILL_FAIL TRUE)
if(CUDARL_HAVE_CUDA)
  add_test(NAME bench_infer_cuda
           COMMAND cudarl_cli bench infer --device cuda --iters 20 --warmup 5
                   --json ${CMAKE_CURRENT_BINARY_DIR}/bench-infer.json)
  set_tests_properties(bench_infer_cuda PROPERTIES LABELS gpu TIMEOUT 600
                       PASS_REGULAR_EXPRESSION
                       "\\| cudarl \\(gemm\\) \\| tf32 \\| 1 \\|(.|\n)*\\| cudarl \\(igemm\\) \\| fp16 \\| 1 \\|")
endif()
