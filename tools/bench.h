/* cudarl bench: benchmarks built into the CLI (tools/bench_infer.c). */
#ifndef CUDARL_TOOLS_BENCH_H
#define CUDARL_TOOLS_BENCH_H

/* Runs `cudarl bench` on its arguments (argv[0] is the first after "bench": the benchmark's
 * name, "infer"); an exit code. */
int cudarl_cmd_bench(int argc, char **argv);

#endif
